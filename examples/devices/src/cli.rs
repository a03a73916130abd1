//! The devices example's command line: who is signed in and what to run.
//! Parsed with clap: unknown flags, stray arguments, a second mode or an
//! address where none belongs are usage errors, never silently ignored.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;

use clap::error::ErrorKind;
use clap::{Arg, ArgAction, ArgGroup, Command};
use devices::User;

/// What the process does.
pub(crate) enum Show {
    /// The live web console at this address (the default), serving MCP at
    /// `/mcp` from the same process.
    Web(SocketAddr),
    /// The scripted agent scenario, printed as a transcript.
    Scenario,
    /// Every authored contract as JSON.
    Catalog,
    /// The current snapshot for the user as JSON.
    Snapshot,
    /// The developer explain view for the user.
    Explain,
    /// Serve MCP over stdin/stdout.
    McpStdio,
    /// Serve MCP over streamable HTTP at this address.
    McpHttp(SocketAddr),
}

/// How `--mcp http` authenticates its callers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Auth {
    /// Static bearer tokens from a JSON file.
    Tokens(PathBuf),
    /// JWTs of `issuer`, verified with a PEM public key or a JWKS document
    /// (a `.json` file).
    Jwt { issuer: String, key: PathBuf },
}

/// The parsed command line.
pub(crate) struct Options {
    pub(crate) user: User,
    pub(crate) show: Show,
    /// Bearer authentication of `--mcp http` (none: loopback, unauthenticated).
    pub(crate) auth: Option<Auth>,
    /// The endpoint's public URI (the tokens' audience), for `--auth`.
    pub(crate) resource: Option<String>,
    /// The authorization server advertised in the metadata, for `--auth`.
    pub(crate) authorization_server: Option<String>,
    /// `--elicitation`: `--mcp http` callers' MCP elicitation approves
    /// (the host's declaration that every client reaching it asks its
    /// person; off by default: any local process could connect).
    pub(crate) elicitation: bool,
    /// `--audit-dir`: where the web console keeps its audit record.
    pub(crate) audit_dir: Option<std::path::PathBuf>,
    /// `--store`: the Redis or Valkey server this replica shares with the
    /// others (`--mcp http` only).
    pub(crate) store: Option<String>,
}

/// Where `--mcp http` listens when no address is given.
const DEFAULT_HTTP: &str = "127.0.0.1:8765";

/// Where the web console listens when no address is given.
const DEFAULT_WEB: &str = "127.0.0.1:0";

fn command() -> Command {
    Command::new("devices")
        .about(
            "The devices console: a live web application (the default), a scripted agent's \
             transcript, or the surface served to an MCP client",
        )
        .arg(
            Arg::new("user")
                .long("user")
                .value_name("USER")
                .value_parser(["admin", "viewer"])
                .default_value("admin")
                .help("Who is signed in (the viewer is not offered domain:devices.disable)"),
        )
        .arg(Arg::new("listen").long("listen").value_name("ADDR").help(
            "Where the web console listens (default 127.0.0.1 on a fresh free port each run)",
        ))
        .arg(
            Arg::new("script")
                .long("script")
                .action(ArgAction::SetTrue)
                .help(
                    "Run the scripted agent through the embedded toolset and print the transcript",
                ),
        )
        .arg(
            Arg::new("catalog")
                .long("catalog")
                .action(ArgAction::SetTrue)
                .help("Print every authored contract as JSON"),
        )
        .arg(
            Arg::new("snapshot")
                .long("snapshot")
                .action(ArgAction::SetTrue)
                .help("Print the current snapshot for the user as JSON"),
        )
        .arg(
            Arg::new("explain")
                .long("explain")
                .action(ArgAction::SetTrue)
                .help("Print the developer explain view for the user"),
        )
        .arg(
            Arg::new("mcp")
                .long("mcp")
                .value_names(["TRANSPORT", "ADDR"])
                .num_args(1..=2)
                .help(
                    "Serve the surface to an MCP client: `stdio`, or `http [ADDR]` \
                     (default 127.0.0.1:8765, path /mcp) until interrupted",
                ),
        )
        .arg(
            Arg::new("auth")
                .long("auth")
                .value_names(["KIND", "ARGS"])
                .num_args(2..=3)
                .help(
                    "Require bearer tokens on `--mcp http`: `tokens FILE` (a JSON token table) \
                     or `jwt ISSUER KEY` (KEY: a PEM public key, or a JWKS `.json` file); \
                     identity comes from each token, not from --user",
                ),
        )
        .arg(
            Arg::new("resource")
                .long("resource")
                .value_name("URL")
                .requires("auth")
                .help(
                    "The endpoint's public URI, the audience tokens must name (default \
                     http://ADDR/mcp); its host is also allowed as `Host`",
                ),
        )
        .arg(
            Arg::new("authorization-server")
                .long("authorization-server")
                .value_name("URL")
                .requires("auth")
                .help(
                    "The authorization server advertised in the protected resource metadata \
                     (default for `--auth jwt`: the issuer)",
                ),
        )
        .arg(
            Arg::new("elicitation")
                .long("elicitation")
                .action(clap::ArgAction::SetTrue)
                .help(
                    "With `--mcp http`: let each client's MCP elicitation approve its own \
                     confirmations. Only for clients with a person at them: any process that \
                     reaches the endpoint could otherwise approve for you (without it, no \
                     confirmation can be approved over HTTP)",
                ),
        )
        .arg(
            Arg::new("audit-dir")
                .long("audit-dir")
                .value_name("DIR")
                .value_parser(clap::value_parser!(std::path::PathBuf))
                .help(
                    "Where the web console keeps its audit record, across restarts (default: \
                     $XDG_STATE_HOME/agent-surface-devices/audit, or \
                     ~/.local/state/agent-surface-devices/audit); read it with \
                     `cargo agent-surface audit --dir DIR`",
                ),
        )
        .arg(Arg::new("store").long("store").value_name("URL").help(
            "With `--mcp http`: run as one replica of several behind a load balancer, \
                     sharing at-most-once calls, confirmations, rate limits and the audit \
                     through the Redis or Valkey server at URL (redis://HOST:PORT/DB)",
        ))
        .group(
            ArgGroup::new("mode")
                .args(["listen", "script", "catalog", "snapshot", "explain", "mcp"])
                .multiple(false),
        )
}

/// Parses `args` (the program name first).
pub(crate) fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Options, clap::Error> {
    let mut command = command();
    let matches = command.try_get_matches_from_mut(args)?;
    let user = match matches.get_one::<String>("user").map(String::as_str) {
        Some("viewer") => User::viewer(),
        _ => User::admin(),
    };
    let show = if matches.get_flag("script") {
        Show::Scenario
    } else if matches.get_flag("catalog") {
        Show::Catalog
    } else if matches.get_flag("snapshot") {
        Show::Snapshot
    } else if matches.get_flag("explain") {
        Show::Explain
    } else if let Some(values) = matches.get_many::<String>("mcp") {
        let values: Vec<&str> = values.map(String::as_str).collect();
        match values.as_slice() {
            ["stdio"] => Show::McpStdio,
            ["http"] => Show::McpHttp(address(&mut command, DEFAULT_HTTP)?),
            ["http", address_text] => Show::McpHttp(address(&mut command, address_text)?),
            ["stdio", extra] => {
                return Err(command.error(
                    ErrorKind::TooManyValues,
                    format!("`--mcp stdio` takes no address (got `{extra}`)"),
                ));
            }
            [other, ..] => {
                return Err(command.error(
                    ErrorKind::InvalidValue,
                    format!("`--mcp {other}`: write `--mcp stdio` or `--mcp http [ADDR]`"),
                ));
            }
            [] => Show::Web(address(&mut command, DEFAULT_WEB)?),
        }
    } else {
        let listen = matches
            .get_one::<String>("listen")
            .map_or(DEFAULT_WEB, String::as_str);
        Show::Web(address(&mut command, listen)?)
    };
    let auth = match matches.get_many::<String>("auth") {
        None => None,
        Some(values) => {
            if !matches!(show, Show::McpHttp(_)) {
                return Err(command.error(
                    ErrorKind::ArgumentConflict,
                    "`--auth` applies to `--mcp http` only",
                ));
            }
            let values: Vec<&str> = values.map(String::as_str).collect();
            Some(match values.as_slice() {
                ["tokens", file] => Auth::Tokens(PathBuf::from(file)),
                ["jwt", issuer, key] => Auth::Jwt {
                    issuer: (*issuer).to_owned(),
                    key: PathBuf::from(key),
                },
                _ => {
                    return Err(command.error(
                        ErrorKind::InvalidValue,
                        "write `--auth tokens FILE` or `--auth jwt ISSUER KEY`",
                    ));
                }
            })
        }
    };
    let elicitation = matches.get_flag("elicitation");
    if elicitation && !matches!(show, Show::McpHttp(_)) {
        return Err(command.error(
            ErrorKind::ArgumentConflict,
            "`--elicitation` applies to `--mcp http` only (`--mcp stdio` asks through its \
             client always; the web console asks in its own dialog)",
        ));
    }
    let store = matches.get_one::<String>("store").cloned();
    if store.is_some() && !matches!(show, Show::McpHttp(_)) {
        return Err(command.error(
            ErrorKind::ArgumentConflict,
            "`--store` applies to `--mcp http` only",
        ));
    }
    Ok(Options {
        store,
        elicitation,
        user,
        show,
        auth,
        resource: matches.get_one::<String>("resource").cloned(),
        authorization_server: matches.get_one::<String>("authorization-server").cloned(),
        audit_dir: matches.get_one::<std::path::PathBuf>("audit-dir").cloned(),
    })
}

fn address(command: &mut Command, text: &str) -> Result<SocketAddr, clap::Error> {
    text.parse().map_err(|_| {
        command.error(
            ErrorKind::ValueValidation,
            format!("`{text}` is not an address like 127.0.0.1:8765"),
        )
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)] // test code

    use super::*;

    fn parse_line(line: &str) -> Result<Options, clap::Error> {
        parse(
            std::iter::once("devices")
                .chain(line.split_whitespace())
                .map(OsString::from),
        )
    }

    #[test]
    fn the_user_is_read_wherever_it_stands() {
        for line in [
            "--mcp http 127.0.0.1:0 --user viewer",
            "--mcp http --user viewer",
            "--user viewer --mcp http 127.0.0.1:0",
            "--mcp stdio --user viewer",
        ] {
            let options = parse_line(line).unwrap();
            assert_eq!(options.user.id, User::viewer().id, "{line}");
            assert!(
                matches!(options.show, Show::McpHttp(_) | Show::McpStdio),
                "{line}"
            );
        }
        let options = parse_line("--mcp http --user viewer").unwrap();
        let Show::McpHttp(address) = options.show else {
            panic!("http expected");
        };
        assert_eq!(address.to_string(), DEFAULT_HTTP);
    }

    #[test]
    fn a_shared_store_is_for_mcp_http_only() {
        let options = parse_line("--mcp http 127.0.0.1:0 --store redis://127.0.0.1:6379/").unwrap();
        assert_eq!(options.store.as_deref(), Some("redis://127.0.0.1:6379/"));
        for line in ["--store redis://x/", "--mcp stdio --store redis://x/"] {
            assert!(parse_line(line).is_err(), "{line}");
        }
    }

    #[test]
    fn elicitation_is_an_explicit_choice_for_mcp_http_only() {
        assert!(!parse_line("--mcp http").unwrap().elicitation);
        assert!(
            parse_line("--mcp http 127.0.0.1:0 --elicitation")
                .unwrap()
                .elicitation
        );
        for line in [
            "--mcp stdio --elicitation",
            "--elicitation",
            "--script --elicitation",
        ] {
            assert!(parse_line(line).is_err(), "{line}");
        }
    }

    #[test]
    fn auth_is_read_for_mcp_http() {
        let options = parse_line("--mcp http 127.0.0.1:0 --auth tokens t.json").unwrap();
        assert_eq!(options.auth, Some(Auth::Tokens(PathBuf::from("t.json"))));
        let options = parse_line(
            "--mcp http --auth jwt https://auth.test k.json --resource https://d.test/mcp",
        )
        .unwrap();
        assert_eq!(
            options.auth,
            Some(Auth::Jwt {
                issuer: "https://auth.test".to_owned(),
                key: PathBuf::from("k.json")
            })
        );
        assert_eq!(options.resource.as_deref(), Some("https://d.test/mcp"));
        assert!(parse_line("--mcp http").unwrap().auth.is_none());
    }

    #[test]
    fn unknown_or_misplaced_flags_are_usage_errors() {
        for line in [
            "--bogus",
            "--mcp http 127.0.0.1:0 --verbose",
            "--mcp stdio 127.0.0.1:0",
            "--mcp ftp",
            "--mcp http not-an-address",
            "--mcp http 127.0.0.1:0 extra",
            "127.0.0.1:0",
            "--catalog --mcp stdio",
            "--user root",
            "--user viewer --user admin",
            "--user",
            "--auth tokens t.json",
            "--mcp stdio --auth tokens t.json",
            "--mcp http --auth tokens",
            "--mcp http --auth oauth x y",
            "--mcp http --auth jwt issuer",
            "--mcp http --resource https://x/mcp",
        ] {
            assert!(parse_line(line).is_err(), "`{line}` must be refused");
        }
    }
}
