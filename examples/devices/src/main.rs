//! `cargo run -p devices`: the devices console as a live web application
//! (it prints the URL and a one-time sign-in link for the person's
//! browser), serving its agent surface over MCP streamable HTTP from the
//! same process at `/mcp`.
//!
//! Options:
//! - `--listen addr` — where the web console listens (default
//!   `127.0.0.1` on a fresh free port each run, so nothing a previous
//!   server on a fixed port left in the browser for that origin can wait
//!   for the console there);
//! - `--user admin|viewer` — who is signed in (default `admin`; the viewer
//!   is not offered `domain:devices.disable`);
//! - `--script` — instead of the web console, the console operated by a
//!   scripted agent through the embedded toolset, printed as a transcript
//!   (no model needed);
//! - `--catalog` — print every authored contract as JSON;
//! - `--snapshot` — print the current snapshot for the user as JSON;
//! - `--explain` — print the developer explain view for the user;
//! - `--mcp stdio` — serve the surface to an MCP client over stdin/stdout
//!   (without the console, confirmations are asked through the client's
//!   MCP elicitation: the person answers in the client's dialog);
//! - `--mcp http [addr] [--elicitation]` — serve it over streamable HTTP
//!   (confirmations are asked through each client's MCP elicitation only
//!   with `--elicitation`, for clients with a person at them; default
//!   `127.0.0.1:8765`, path `/mcp`) until interrupted; unauthenticated on
//!   loopback, acting as `--user` (it says so at start-up), unless
//! - `--auth tokens FILE` or `--auth jwt ISSUER KEY` — require bearer
//!   tokens (a JSON token table; or JWTs of ISSUER verified with a PEM
//!   public key or a JWKS `.json` file), each token's identity deciding what
//!   its caller sees; `--resource URL` is the public URI tokens must name
//!   (default `http://ADDR/mcp`), `--authorization-server URL` the one the
//!   metadata advertises;
//! - `--audit-dir DIR` — where the web console keeps its audit record
//!   across restarts (default `$XDG_STATE_HOME/agent-surface-devices/audit`,
//!   or under `~/.local/state`): the activity list starts with what it
//!   kept, and `cargo agent-surface audit --dir DIR` prints it;
//! - `--help`.

mod auth;
mod cli;

use std::io::Write;
use std::process::ExitCode;

use agent_surface::catalog::Catalog;
use agent_surface::explain::explain_surface;
use agent_surface::mcp::{McpServer, McpServerBuilder};
use agent_surface::snapshot::SnapshotOptions;
use cli::Show;
use devices::{App, User, scenario};

/// The devices surface as an MCP server.
/// The devices surface's MCP server builder.
fn mcp_builder(app: &App) -> McpServerBuilder {
    McpServer::builder(app.registry())
        .name("devices")
        .instructions(
            "A device-fleet console. Filter the table, read its state, select rows, and disable \
             the selection with domain_devices__disable (the user confirms). Follow each error's \
             retry hint.",
        )
}

/// Where the web console keeps its audit record unless told:
/// `$XDG_STATE_HOME/agent-surface-devices/audit`, or under
/// `~/.local/state`, or (no home) `./devices-audit`.
fn default_audit_dir() -> std::path::PathBuf {
    let state = std::env::var_os("XDG_STATE_HOME")
        .filter(|dir| !dir.is_empty())
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|home| !home.is_empty())
                .map(|home| std::path::PathBuf::from(home).join(".local/state"))
        });
    match state {
        Some(state) => state.join("agent-surface-devices/audit"),
        None => std::path::PathBuf::from("devices-audit"),
    }
}

/// Serves the web console (and MCP at `/mcp`) until interrupted, keeping
/// its audit record in `audit_dir` across restarts.
async fn web_console(
    user: User,
    address: std::net::SocketAddr,
    audit_dir: std::path::PathBuf,
) -> ExitCode {
    // A page that sends what the page library cannot read ends its own
    // connection: said in one line, never with what it sent or a backtrace.
    agent_surface_dioxus::contain_page_panics();
    let approvals = match devices::web::Approvals::new() {
        Ok(approvals) => approvals,
        Err(err) => {
            eprintln!("error: {err}");
            return ExitCode::FAILURE;
        }
    };
    let record = match agent_surface::audit::AuditLog::builder(&audit_dir).open() {
        Ok(record) => record,
        Err(err) => {
            eprintln!(
                "error: cannot open the audit record in {}: {err}",
                audit_dir.display()
            );
            if err.kind() == std::io::ErrorKind::WouldBlock {
                eprintln!(
                    "(is another console running on it? give this one its own with --audit-dir DIR)"
                );
            }
            return ExitCode::FAILURE;
        }
    };
    let sink = std::sync::Arc::new(record.clone());
    let registry = devices::web::registry_with(&user, &approvals, |builder| {
        devices::pinned(builder).audit_sink(sink)
    });
    let app = match App::connect(registry, user).await {
        Ok(app) => app,
        Err(err) => {
            eprintln!("error: {err}");
            return ExitCode::FAILURE;
        }
    };
    // A remote agent's client is sent the console's approval page for each
    // request (URL-mode elicitation, or the link in the details).
    let server = mcp_builder(&app)
        .approval_page(approvals.pages().hook())
        .build();
    let console = match devices::web::serve_with_record(
        app.clone(),
        &approvals,
        &server,
        address,
        Some(&record),
    )
    .await
    {
        Ok(console) => console,
        Err(err) => {
            eprintln!("error: cannot listen on {address}: {err}");
            app.stop().await;
            return ExitCode::FAILURE;
        }
    };
    // Stdout carries the addresses so a person (or a launcher) can connect.
    // The sign-in link is the person's secret: the agent gets only /mcp.
    println!("devices console: {}", console.url());
    println!("MCP (streamable HTTP): {}", console.mcp_url());
    println!("audit record: {}", audit_dir.display());
    // The pages need the sign-in; `/mcp` beside them authenticates nobody.
    if !address.ip().is_loopback() {
        eprintln!(
            "WARNING: not a loopback address: the console's pages need the sign-in, but its \
             /mcp authenticates nobody, and every caller that reaches it acts as `{}`; listen on \
             loopback, or serve MCP alone with --mcp http ADDR --auth",
            app.user().id
        );
    }
    let mut logins = console.login_urls();
    let base = format!("{}/login?token=", console.origin());
    println!(
        "sign in (one-time link): {base}{}",
        *logins.borrow_and_update()
    );
    let _ = std::io::stdout().flush();
    // Its own task: the next link is printed as soon as a link is used,
    // whatever else the terminal is printing or waiting for.
    let mut announce = tokio::spawn(async move {
        while logins.changed().await.is_ok() {
            let token = logins.borrow_and_update().clone();
            let mut out = std::io::stdout().lock();
            let _ = writeln!(
                out,
                "signed in a browser; next one-time sign-in link: {base}{token}"
            );
            let _ = out.flush();
        }
    });
    // A request that needs proof of presence gets a one-time code here,
    // where the person reads it and the page cannot.
    let mut codes = console.approval_codes();
    let codes = async {
        loop {
            match codes.recv().await {
                Ok(code) => {
                    // The terminal's own account of the request: a script
                    // in the page can change what the page shows, not this.
                    println!("code for \"{}\": {}", code.title, code.code);
                    for item in &code.items {
                        println!("    {item}");
                    }
                    let _ = std::io::stdout().flush();
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
            }
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = &mut announce => {}
        () = codes => {}
    }
    announce.abort();
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

/// The store a replica shares (`--store URL`), under the namespace
/// `devices`, and the audit sink that writes to it.
async fn shared_store(
    url: &str,
) -> Result<
    (
        std::sync::Arc<dyn agent_surface::store::SharedStore>,
        agent_surface::store::Namespace,
        std::sync::Arc<dyn agent_surface::audit::AuditSink>,
    ),
    Box<dyn std::error::Error>,
> {
    use agent_surface::store::{Namespace, RedisStore, SharedStore};
    let store: std::sync::Arc<dyn SharedStore> =
        std::sync::Arc::new(RedisStore::connect(url).await?);
    let namespace = Namespace::new("devices")?;
    let audit = agent_surface::audit::SharedAuditSink::spawn(
        std::sync::Arc::clone(&store),
        &namespace,
        100_000,
    )?;
    Ok((store, namespace, std::sync::Arc::new(audit)))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let options = match cli::parse(std::env::args_os()) {
        Ok(options) => options,
        Err(error) => {
            // Help goes to stdout (success); a usage error to stderr.
            let _ = error.print();
            return ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(2));
        }
    };
    let (user, show) = (options.user.clone(), options.show);
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
        let audit_dir = options.audit_dir.clone().unwrap_or_else(default_audit_dir);
        return web_console(user, address, audit_dir).await;
    }
    // The binary runs only the reviewed surface (the committed artifact).
    // Authenticated callers bring their own identity; nobody else has one.
    // One replica of several: the shared store, its audit log with it.
    let shared = match &options.store {
        None => None,
        Some(url) => match shared_store(url).await {
            Ok(shared) => Some(shared),
            Err(err) => {
                eprintln!("error: {err}");
                return ExitCode::FAILURE;
            }
        },
    };
    let configure = move |builder: agent_surface::registry::RegistryBuilder| {
        let builder = devices::pinned(builder);
        match shared {
            Some((store, namespace, audit)) => {
                builder.shared_store(store, namespace).audit_sink(audit)
            }
            None => builder,
        }
    };
    let registry = if options.auth.is_some() {
        devices::registry_for_authenticated(configure)
    } else {
        devices::registry_for(&user, configure)
    };
    let app = match App::attach(registry, user).await {
        Ok(app) => app,
        Err(err) => {
            eprintln!("error: {err}");
            eprintln!(
                "(if the surface changed: `cargo agent-surface snapshot --manifest-path \
                 examples/devices/Cargo.toml`, then review the artifact's diff)"
            );
            return ExitCode::FAILURE;
        }
    };
    match show {
        Show::McpStdio => {
            // Without the console the person is at the MCP client: its
            // elicitation dialog is where they approve (opted in: the
            // client must show it to them and never answer for them).
            let server = mcp_builder(&app).elicitation(true).build();
            if let Err(err) = server.serve_stdio().await {
                eprintln!("error: {err}");
            }
        }
        Show::McpHttp(address) => {
            // Bound first: the default resource URI names the actual port.
            let listener = match tokio::net::TcpListener::bind(address).await {
                Ok(listener) => listener,
                Err(err) => {
                    eprintln!("error: cannot listen on {address}: {err}");
                    app.stop().await;
                    return ExitCode::FAILURE;
                }
            };
            let address = listener.local_addr().unwrap_or(address);
            // Only when the host says so (`--elicitation`): any process
            // that reaches the endpoint could otherwise approve its own
            // requests.
            let builder = mcp_builder(&app).elicitation(options.elicitation);
            let (builder, notice) = match &options.auth {
                None => (
                    builder,
                    auth::unauthenticated_notice(address, &app.user().id),
                ),
                Some(how) => match auth::configure(
                    builder,
                    how,
                    address,
                    options.resource.as_deref(),
                    options.authorization_server.as_deref(),
                ) {
                    Ok(configured) => configured,
                    Err(err) => {
                        eprintln!("error: {err}");
                        app.stop().await;
                        return ExitCode::FAILURE;
                    }
                },
            };
            eprintln!("{notice}");
            if !options.elicitation {
                eprintln!(
                    "confirmations: no client can approve them (pass --elicitation to let \
                     clients with a person at them ask through MCP elicitation)"
                );
            }
            let server = builder.build();
            match server.serve_on(listener, axum::Router::new()) {
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
