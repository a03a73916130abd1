//! The command line of `cargo agent-surface`: subcommands, shared options and
//! their parsing with clap (unknown flags and bad values are usage errors,
//! exit 2).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Arg, ArgAction, ArgMatches, Command};

/// What to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// The inventory as a table.
    Inspect,
    /// Write the committed artifact.
    Snapshot,
    /// Integrity, contributors and drift; fails per `--policy`.
    Check,
    /// Print a durable audit record.
    Audit,
}

/// How output is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    /// Words for people; colour only repeats them, and only on a terminal.
    Human,
    /// Canonical JSON: the same bytes on every machine.
    Json,
    /// Markdown tables (for pull-request comments).
    Md,
    /// GitHub Actions workflow commands (annotations), then the human text.
    Github,
}

/// How much `inspect` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Verbosity {
    /// The headline only.
    Min,
    /// The headline and the table.
    Normal,
    /// Capabilities grouped under their declaration, with descriptions.
    Detail,
}

/// Which drift findings fail `check`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FailOn {
    /// Any change.
    All,
    /// Widening changes (the default).
    Widening,
    /// Narrowing changes.
    Narrowing,
    /// Neutral changes.
    Neutral,
    /// No drift finding fails (integrity and contributors still do).
    None,
}

/// The parsed command line.
#[derive(Clone, Debug)]
pub(crate) struct Options {
    /// The subcommand.
    pub(crate) mode: Mode,
    /// `--manifest-path`.
    pub(crate) manifest_path: Option<PathBuf>,
    /// `-p/--package`.
    pub(crate) package: Option<String>,
    /// `--bin`: read the catalog from this binary (it calls
    /// `agent_surface::catalog::export_if_requested()`).
    pub(crate) bin: Option<String>,
    /// `--features`, passed on to the build.
    pub(crate) features: Vec<String>,
    /// Every feature of the package: the default, unless `--features` or
    /// `--no-default-features` chooses (`--all-features` keeps it).
    pub(crate) all_features: bool,
    /// `--no-default-features`.
    pub(crate) no_default_features: bool,
    /// `--target`: the triple to build for (the build must run here).
    pub(crate) target: Option<String>,
    /// `--profile` (`--release` is `release`).
    pub(crate) profile: Option<String>,
    /// `--artifact`.
    pub(crate) artifact: Option<PathBuf>,
    /// `--format`.
    pub(crate) format: Format,
    /// `--verbosity` (inspect).
    pub(crate) verbosity: Verbosity,
    /// `--base` (inspect, check).
    pub(crate) base: Option<String>,
    /// `--policy` (check).
    pub(crate) fail_on: FailOn,
    /// `--export-timeout`: how long the binary that exports the catalog
    /// may run.
    pub(crate) export_timeout: std::time::Duration,
    /// What `audit` reads (the `audit` subcommand only).
    pub(crate) audit: Option<crate::audit::AuditOptions>,
}

fn shared(command: Command) -> Command {
    command
        .arg(
            Arg::new("manifest-path")
                .long("manifest-path")
                .value_name("PATH")
                .value_parser(clap::value_parser!(PathBuf))
                .help("Path to the package's (or workspace's) Cargo.toml"),
        )
        .arg(
            Arg::new("package")
                .short('p')
                .long("package")
                .value_name("NAME")
                .help("The package whose surface to read"),
        )
        .arg(
            Arg::new("bin")
                .long("bin")
                .value_name("NAME")
                .help("Read the catalog from this binary (its main calls export_if_requested)"),
        )
        .arg(
            Arg::new("features")
                .long("features")
                .short('F')
                .value_name("FEATURES")
                .action(ArgAction::Append)
                .help("Features of the package to enable (comma or space separated)"),
        )
        .arg(
            Arg::new("all-features")
                .long("all-features")
                .action(ArgAction::SetTrue)
                .help("Build with every feature (the default unless --features or --no-default-features is given)"),
        )
        .arg(
            Arg::new("no-default-features")
                .long("no-default-features")
                .action(ArgAction::SetTrue)
                .help("Build without the package's default features"),
        )
        .arg(
            Arg::new("target")
                .long("target")
                .value_name("TRIPLE")
                .help("Build for this target (the catalog is read by running the build, so it must run here)"),
        )
        .arg(
            Arg::new("profile")
                .long("profile")
                .value_name("NAME")
                .conflicts_with("release")
                .help("Build with this profile (cfg(debug_assertions) follows it)"),
        )
        .arg(
            Arg::new("release")
                .long("release")
                .short('r')
                .action(ArgAction::SetTrue)
                .help("Build with the release profile"),
        )
        .arg(
            Arg::new("artifact")
                .long("artifact")
                .value_name("PATH")
                .value_parser(clap::value_parser!(PathBuf))
                .help("The artifact (default: agent-surface.contract.json beside Cargo.toml)"),
        )
        .arg(
            Arg::new("export-timeout")
                .long("export-timeout")
                .value_name("SECONDS")
                .value_parser(clap::value_parser!(u64).range(1..=86_400))
                .default_value("120")
                .help("How long the binary exporting the catalog may run before it is stopped"),
        )
        .arg(
            Arg::new("format")
                .long("format")
                .value_name("FORMAT")
                .value_parser(["human", "json", "md", "github"])
                .default_value("human")
                .help("Output format"),
        )
}

fn command() -> Command {
    let base = Arg::new("base")
        .long("base")
        .value_name("GIT_REF")
        .help("Compare with the artifact committed at this git ref");
    Command::new("cargo-agent-surface")
        .bin_name("cargo agent-surface")
        .about("Inspect, snapshot and check the agent surface a crate declares")
        .subcommand_required(true)
        .subcommand(
            shared(Command::new("inspect").about("The inventory as a table"))
                .arg(
                    Arg::new("verbosity")
                        .long("verbosity")
                        .value_name("LEVEL")
                        .value_parser(["min", "normal", "detail"])
                        .default_value("normal")
                        .help("How much to print"),
                )
                .arg(base.clone()),
        )
        .subcommand(shared(
            Command::new("snapshot").about("Write the committed artifact from a fresh build"),
        ))
        .subcommand(
            shared(Command::new("check").about(
                "Fail when the artifact is stale, a contributor is unapproved, or drift \
                 selected by --policy is found",
            ))
            .arg(base)
            .arg(
                Arg::new("policy")
                    .long("policy")
                    .value_name("WHICH")
                    .value_parser(["all", "widening", "narrowing", "neutral", "none"])
                    .default_value("widening")
                    .help("Which drift findings fail the check"),
            ),
        )
        .subcommand(
            Command::new("audit")
                .about(
                    "Print an application's durable audit record: who asked, who approved \
                     through which channel, what ran",
                )
                .arg(
                    Arg::new("dir")
                        .long("dir")
                        .value_name("DIR")
                        .required(true)
                        .value_parser(clap::value_parser!(PathBuf))
                        .help("The audit log's directory (the application's AuditLog)"),
                )
                .arg(
                    Arg::new("since")
                        .long("since")
                        .value_name("WHEN")
                        .help("Only records since: 30m, 24h, 7d, or milliseconds since the epoch"),
                )
                .arg(Arg::new("consumer").long("consumer").value_name("ID").help("Only this consumer's records"))
                .arg(
                    Arg::new("capability")
                        .long("capability")
                        .value_name("ID")
                        .help("Only this capability's records"),
                )
                .arg(
                    Arg::new("kind")
                        .long("kind")
                        .value_name("KIND")
                        .action(ArgAction::Append)
                        .help("Only records of this kind (confirmation-approved, invocation-settled, …); repeatable"),
                )
                .arg(
                    Arg::new("status")
                        .long("status")
                        .value_name("STATUS")
                        .value_parser(["ok", "error"])
                        .help("Only settled calls with this outcome"),
                )
                .arg(
                    Arg::new("limit")
                        .long("limit")
                        .value_name("N")
                        .value_parser(clap::value_parser!(usize))
                        .default_value("100")
                        .help("At most the newest N records"),
                )
                .arg(
                    Arg::new("format")
                        .long("format")
                        .value_name("FORMAT")
                        .value_parser(["human", "json"])
                        .default_value("human")
                        .help("Words, or one JSON object per line"),
                ),
        )
}

/// The `audit` subcommand's options.
fn audit_options(sub: &ArgMatches) -> Result<crate::audit::AuditOptions, clap::Error> {
    let invalid = |message: String| command().error(clap::error::ErrorKind::InvalidValue, message);
    let since_ms = match string(sub, "since") {
        None => None,
        Some(text) => Some(
            crate::audit::since_ms(&text, crate::audit::now_ms()).ok_or_else(|| {
                invalid(format!(
                    "`--since {text}`: write 30m, 24h, 7d or milliseconds since the epoch"
                ))
            })?,
        ),
    };
    let mut kinds = Vec::new();
    for name in sub
        .try_get_many::<String>("kind")
        .ok()
        .flatten()
        .into_iter()
        .flatten()
    {
        kinds.push(crate::audit::kind(name).ok_or_else(|| {
            invalid(format!(
                "`--kind {name}`: a record kind such as confirmation-approved or invocation-settled"
            ))
        })?);
    }
    Ok(crate::audit::AuditOptions {
        dir: path(sub, "dir").unwrap_or_default(),
        since_ms,
        consumer: string(sub, "consumer"),
        capability: string(sub, "capability"),
        kinds,
        status: string(sub, "status"),
        limit: sub
            .try_get_one::<usize>("limit")
            .ok()
            .flatten()
            .copied()
            .unwrap_or(100),
        json: string(sub, "format").as_deref() == Some("json"),
    })
}

fn string(matches: &ArgMatches, id: &str) -> Option<String> {
    matches.try_get_one::<String>(id).ok().flatten().cloned()
}

fn path(matches: &ArgMatches, id: &str) -> Option<PathBuf> {
    matches.try_get_one::<PathBuf>(id).ok().flatten().cloned()
}

/// Parses the arguments after the program name; cargo's `agent-surface`
/// (argv\[1\] when run as `cargo agent-surface`) is accepted and skipped.
pub(crate) fn parse(args: Vec<OsString>) -> Result<Options, clap::Error> {
    let mut args = args.into_iter();
    let program = args.next().unwrap_or_else(|| "cargo-agent-surface".into());
    let mut rest: Vec<OsString> = args.collect();
    if rest.first().is_some_and(|first| first == "agent-surface") {
        rest.remove(0);
    }
    let matches = command().try_get_matches_from(std::iter::once(program).chain(rest))?;
    let (mode, sub) = match matches.subcommand() {
        Some(("inspect", sub)) => (Mode::Inspect, sub),
        Some(("snapshot", sub)) => (Mode::Snapshot, sub),
        Some(("audit", sub)) => (Mode::Audit, sub),
        Some((_, sub)) => (Mode::Check, sub),
        None => {
            return Err(command().error(
                clap::error::ErrorKind::MissingSubcommand,
                "a subcommand is required",
            ));
        }
    };
    let format = match string(sub, "format").as_deref() {
        Some("json") => Format::Json,
        Some("md") => Format::Md,
        Some("github") => Format::Github,
        _ => Format::Human,
    };
    let verbosity = match string(sub, "verbosity").as_deref() {
        Some("min") => Verbosity::Min,
        Some("detail") => Verbosity::Detail,
        _ => Verbosity::Normal,
    };
    let fail_on = match string(sub, "policy").as_deref() {
        Some("all") => FailOn::All,
        Some("narrowing") => FailOn::Narrowing,
        Some("neutral") => FailOn::Neutral,
        Some("none") => FailOn::None,
        _ => FailOn::Widening,
    };
    let features = sub
        .try_get_many::<String>("features")
        .ok()
        .flatten()
        .into_iter()
        .flatten()
        .flat_map(|list| {
            list.split([',', ' '])
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .filter(|feature| !feature.is_empty())
        .collect::<Vec<String>>();
    let flag = |id: &str| sub.try_get_one::<bool>(id).ok().flatten().copied() == Some(true);
    let no_default_features = flag("no-default-features");
    let all_features = flag("all-features") || (features.is_empty() && !no_default_features);
    let profile = string(sub, "profile").or_else(|| flag("release").then(|| "release".to_owned()));
    let audit = match mode {
        Mode::Audit => Some(audit_options(sub)?),
        _ => None,
    };
    Ok(Options {
        audit,
        mode,
        manifest_path: path(sub, "manifest-path"),
        package: string(sub, "package"),
        bin: string(sub, "bin"),
        features,
        all_features,
        no_default_features,
        target: string(sub, "target"),
        profile,
        artifact: path(sub, "artifact"),
        format,
        verbosity,
        base: string(sub, "base"),
        fail_on,
        export_timeout: std::time::Duration::from_secs(
            sub.try_get_one::<u64>("export-timeout")
                .ok()
                .flatten()
                .copied()
                .unwrap_or(120),
        ),
    })
}
