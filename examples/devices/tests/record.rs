//! The console keeps its record across restarts: yesterday, a registry of
//! the application recorded an agent's request, the person's approval
//! through the console and the call it released, in its durable audit log;
//! today a new console starts on that log and the person, signed in, reads
//! yesterday's approval in the activity list, in the same words as a live
//! one — and today's calls go to the same log.
//!
//! Runs only where Chromium and chromedriver are installed (CI installs
//! them).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)] // test code

mod browser_support;

use std::sync::Arc;
use std::time::Duration;

use agent_surface::audit::{AuditKind, AuditLog, AuditQuery};
use agent_surface::clock::ManualClock;
use agent_surface::context::{Consumer, ConsumerKind};
use agent_surface::mcp::McpServer;
use agent_surface::prelude::*;
use browser_support::{
    Places, browser_or_skip, journey_ended, open_browser, sign_in, start_driver, text, until,
};
use devices::{App, User, web};
use serde_json::json;

/// A panel of yesterday's application whose action the person approves.
struct Lamps;

/// Which lamp.
#[agent_schema]
struct Lamp {
    /// Its name.
    #[schemars(length(max = 40))]
    name: String,
}

/// The lamps of the hall.
#[agent_component(type = "hall.lamps")]
impl Lamps {
    /// Switches a lamp off, once the person approves.
    #[action(effect = "local-state", confirmation = "required")]
    fn switch_off(&self, input: Lamp) {
        let _ = input;
    }
}

/// Yesterday: an agent asks, the person approves in the console, the call
/// runs — all recorded in `record`, 26 hours ago by the registry's clock.
async fn yesterday(record: &AuditLog) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let clock = Arc::new(ManualClock::at_ms(now - 26 * 3_600_000));
    let registry = Registry::builder()
        .clock(clock)
        .approval_channel(web::CONSOLE_CHANNEL)
        .audit_sink(Arc::new(record.clone()))
        .build();
    let _lamps = registry.mount(Arc::new(Lamps)).unwrap();
    let agent = InvokeOptions::consumer(Consumer::new(ConsumerKind::Mcp, "claude"));
    let call = Invocation::new("view:hall.lamps.switchOff").input(json!({"name": "porch"}));
    let asked = registry.invoke(call.clone(), agent.clone()).await;
    assert_eq!(
        asked.error().unwrap().code(),
        agent_surface::error::ErrorCode::ConfirmationRequired
    );
    let confirmations = registry.confirmations();
    let pending = confirmations.pending();
    let admin = confirmations
        .approver(web::CONSOLE_CHANNEL, &User::admin().id)
        .unwrap();
    confirmations
        .resolve(&pending[0].shown(), true, &admin)
        .unwrap();
    let id = pending[0].confirmation_id.to_string();
    assert!(registry.invoke(call.confirmation(id), agent).await.is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_shows_yesterdays_approval_after_a_restart() {
    let Some((chromium, driver)) = browser_or_skip() else {
        return;
    };
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("devices-record");
    let _ = std::fs::remove_dir_all(&dir);
    // Yesterday's process: its own runtime, gone (with every task that held
    // its registry) before today's starts.
    let yesterdays = dir.clone();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let record = AuditLog::builder(&yesterdays).open().unwrap();
        runtime.block_on(yesterday(&record));
    })
    .join()
    .unwrap();

    // Today: a new process's console, on the same record.
    let record = AuditLog::builder(&dir).open().unwrap();
    let user = User::admin();
    let approvals = web::Approvals::new().unwrap();
    let sink = Arc::new(record.clone());
    let registry = web::registry_with(&user, &approvals, |builder| builder.audit_sink(sink));
    let app = App::connect(registry, user).await.unwrap();
    let server = McpServer::builder(app.registry()).name("devices").build();
    let console = web::serve_with_record(
        app.clone(),
        &approvals,
        &server,
        "127.0.0.1:0".parse().unwrap(),
        Some(&record),
    )
    .await
    .unwrap();
    let places = Places {
        login: console.login_url(),
        url: console.url(),
        port: console.local_addr().port(),
        evil: String::new(),
        logins: console.login_urls(),
    };
    let driver = start_driver(&driver).await;
    let page = open_browser(&driver, &chromium, &[]).await;
    let journey = {
        let page = page.clone();
        tokio::spawn(async move {
            sign_in(&page, &places).await;
            until("yesterday's approval in the activity list", || async {
                text(&page, "#activity").await.is_some_and(|t| {
                    t.contains("admin approved (through console): “Switches a lamp off")
                        && t.contains("yesterday")
                })
            })
            .await;
            if let Some(path) = std::env::var_os("DEVICES_RESTART_SCREENSHOT") {
                let png = page.screenshot().await.unwrap();
                std::fs::write(path, png).unwrap();
            }
        })
    };
    let outcome = tokio::time::timeout(Duration::from_secs(120), journey).await;
    let _ = page.close().await;
    drop(driver);
    console.shutdown().await;
    app.stop().await;
    journey_ended(outcome);
    // Today's mounts went to the same record, after yesterday's.
    let read = record
        .read(&AuditQuery::new().kind(AuditKind::Registration))
        .unwrap();
    assert!(read.records.len() >= 2, "{:?}", read.records);
}
