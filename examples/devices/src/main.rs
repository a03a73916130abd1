//! `cargo run -p devices`: the devices console as a live web application
//! (it prints the URL), serving its agent surface over MCP streamable HTTP
//! from the same process at `/mcp`.
//!
//! Options:
//! - `--listen addr` — where the web console listens (default
//!   `127.0.0.1:8080`; port 0 picks a free one);
//! - `--user admin|viewer` — who is signed in (default `admin`; the viewer
//!   is not offered `domain:devices.disable`);
//! - `--script` — instead of the web console, the console operated by a
//!   scripted agent through the embedded toolset, printed as a transcript
//!   (no model needed);
//! - `--catalog` — print every authored contract as JSON;
//! - `--snapshot` — print the current snapshot for the user as JSON;
//! - `--explain` — print the developer explain view for the user;
//! - `--mcp stdio` — serve the surface to an MCP client over stdin/stdout;
//! - `--mcp http [addr]` — serve it over streamable HTTP (default
//!   `127.0.0.1:8765`, path `/mcp`) until interrupted;
//! - `--help`.

use std::io::Write;
use std::process::ExitCode;

use agent_surface::catalog::Catalog;
use agent_surface::explain::explain_surface;
use agent_surface::mcp::McpServer;
use agent_surface::snapshot::SnapshotOptions;
use devices::{App, User, scenario};

const USAGE: &str = "usage: devices [--user admin|viewer] [--listen addr | --script | --catalog | --snapshot | --explain | --mcp stdio | --mcp http [addr]]";

enum Show {
    Web(std::net::SocketAddr),
    Scenario,
    Catalog,
    Snapshot,
    Explain,
    McpStdio,
    McpHttp(std::net::SocketAddr),
}

fn parse() -> Result<(User, Show), String> {
    let mut user = User::admin();
    let mut show = Show::Web(std::net::SocketAddr::from(([127, 0, 0, 1], 8080)));
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--user" => {
                user = match args.next().as_deref() {
                    Some("admin") => User::admin(),
                    Some("viewer") => User::viewer(),
                    other => {
                        return Err(format!(
                            "unknown user {}; the demo users are admin and viewer",
                            other.unwrap_or("(none)")
                        ));
                    }
                }
            }
            "--listen" => {
                let address = args.next().unwrap_or_default();
                show = Show::Web(address.parse().map_err(|_| {
                    format!("`--listen {address}`: write an address like 127.0.0.1:8080")
                })?);
            }
            "--script" => show = Show::Scenario,
            "--catalog" => show = Show::Catalog,
            "--snapshot" => show = Show::Snapshot,
            "--explain" => show = Show::Explain,
            "--mcp" => {
                show = match args.next().as_deref() {
                    Some("stdio") => Show::McpStdio,
                    Some("http") => {
                        let mut rest: Vec<String> = args.by_ref().collect();
                        let address = match rest.first().filter(|a| !a.starts_with("--")) {
                            Some(address) => address.parse().map_err(|_| {
                                format!("`{address}` is not an address like 127.0.0.1:8765")
                            })?,
                            None => std::net::SocketAddr::from(([127, 0, 0, 1], 8765)),
                        };
                        if !rest.is_empty() {
                            rest.remove(0);
                        }
                        Show::McpHttp(address)
                    }
                    other => {
                        return Err(format!(
                            "`--mcp {}`: write `--mcp stdio` or `--mcp http [addr]`",
                            other.unwrap_or("")
                        ));
                    }
                }
            }
            "--help" | "-h" => return Err(String::new()),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok((user, show))
}

/// The devices surface as an MCP server.
fn mcp_server(app: &App) -> McpServer {
    McpServer::builder(app.registry())
        .name("devices")
        .instructions(
            "A device-fleet console. Filter the table, read its state, select rows, and disable \
             the selection with domain_devices__disable (the user confirms). Follow each error's \
             retry hint.",
        )
        .build()
}

/// Serves the web console (and MCP at `/mcp`) until interrupted.
async fn web_console(user: User, address: std::net::SocketAddr) -> ExitCode {
    let app = match App::connect(devices::web::registry(&user), user).await {
        Ok(app) => app,
        Err(err) => {
            eprintln!("error: {err}");
            return ExitCode::FAILURE;
        }
    };
    let server = mcp_server(&app);
    let console = match devices::web::serve(app.clone(), &server, address).await {
        Ok(console) => console,
        Err(err) => {
            eprintln!("error: cannot listen on {address}: {err}");
            app.stop().await;
            return ExitCode::FAILURE;
        }
    };
    // Stdout carries the addresses so a person (or a launcher) can connect.
    println!("devices console: {}", console.url());
    println!("MCP (streamable HTTP): {}", console.mcp_url());
    let _ = std::io::stdout().flush();
    let _ = tokio::signal::ctrl_c().await;
    console.shutdown().await;
    app.stop().await;
    ExitCode::SUCCESS
}

fn print_json(value: &impl serde::Serialize) {
    println!(
        "{}",
        serde_json::to_string_pretty(value).unwrap_or_default()
    );
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let (user, show) = match parse() {
        Ok(parsed) => parsed,
        Err(message) => {
            if !message.is_empty() {
                eprintln!("error: {message}");
            }
            eprintln!("{USAGE}");
            return if message.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            };
        }
    };
    if let Show::Catalog = show {
        return match Catalog::load() {
            Ok(catalog) => {
                println!("{}", catalog.to_json_pretty());
                ExitCode::SUCCESS
            }
            Err(err) => {
                eprintln!("error: {err}");
                ExitCode::FAILURE
            }
        };
    }
    if let Show::Web(address) = show {
        return web_console(user, address).await;
    }
    let app = match App::start(user).await {
        Ok(app) => app,
        Err(err) => {
            eprintln!("error: {err}");
            return ExitCode::FAILURE;
        }
    };
    match show {
        Show::McpStdio => {
            let server = mcp_server(&app);
            if let Err(err) = server.serve_stdio().await {
                eprintln!("error: {err}");
            }
        }
        Show::McpHttp(address) => {
            let server = mcp_server(&app);
            match server.serve_http(address).await {
                Ok(http) => {
                    // Stdout carries the address so a launcher can connect.
                    println!("listening on {}", http.url());
                    let _ = std::io::stdout().flush();
                    let _ = tokio::signal::ctrl_c().await;
                    http.shutdown().await;
                }
                Err(err) => eprintln!("error: {err}"),
            }
        }
        Show::Snapshot => print_json(&app.registry().snapshot(&SnapshotOptions::default())),
        Show::Explain => print_json(&explain_surface(
            app.registry(),
            &SnapshotOptions::default(),
        )),
        Show::Catalog | Show::Web(_) | Show::Scenario => {
            let mut out = std::io::stdout().lock();
            let outcome = scenario::run(&app, &mut out).await;
            let _ = if outcome.disable_offered {
                writeln!(
                    out,
                    "\nDone: {} devices disabled; the replayed evidence was {}.",
                    outcome.disabled,
                    if outcome.replay_refused {
                        "refused"
                    } else {
                        "accepted (unexpected)"
                    }
                )
            } else {
                writeln!(
                    out,
                    "\nDone: domain:devices.disable is hidden for {}; nothing was disabled.",
                    app.user().id
                )
            };
        }
    }
    app.stop().await;
    ExitCode::SUCCESS
}
