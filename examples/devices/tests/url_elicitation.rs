//! A remote agent's person, reached out of band: the official Python SDK as
//! a client far from the console declares URL-mode elicitation; the server
//! sends it the console's approval page for exactly its request; the
//! person opens it in their signed-in browser, sees the request and
//! approves with their passkey; the server sends
//! `notifications/elicitation/complete` and the held call runs once. The
//! link alone opens nothing in a browser that is not signed in.
//!
//! Runs where Chromium, chromedriver and the Python SDK are installed (CI
//! installs them), one browser test at a time.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)] // test code

mod browser_support;
mod python_support;

use std::process::Stdio;

use browser_support::{click, in_browser, text, until};
use devices::Status;
use fantoccini::Locator;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

/// Runs the URL-mode client in `mode`; the person approves on the page.
async fn approved_out_of_band(mode: &'static str) {
    let Some(python) = python_support::python() else {
        return;
    };
    in_browser(move |page, _agent, app, places| async move {
        // The person signed in and set up a passkey, earlier.
        page.goto(&places.login).await.unwrap();
        page.wait()
            .for_element(Locator::Css("#passkey-offer"))
            .await
            .unwrap();
        let authenticator = browser_support::add_authenticator(&page, true).await;
        browser_support::set_up_passkey(&page, "offer").await;
        until("the passkey is set up", || async {
            page.find(Locator::Css("#passkey-offer")).await.is_err()
        })
        .await;

        let script = format!("{}/tests/mcp_url_client.py", env!("CARGO_MANIFEST_DIR"));
        let mcp = format!("http://localhost:{}/mcp", places.port);
        let mut client = Command::new(&python)
            .arg(script)
            .arg(&mcp)
            .arg(mode)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("the Python client starts");
        let mut lines = BufReader::new(client.stdout.take().unwrap()).lines();
        let mut transcript = Vec::new();
        let link = loop {
            let line = tokio::time::timeout(browser_support::PATIENCE, lines.next_line())
                .await
                .expect("the client is asked within the patience")
                .unwrap()
                .unwrap_or_else(|| panic!("the client ended before it was asked: {transcript:?}"));
            transcript.push(line.clone());
            if let Some(link) = line.strip_prefix("APPROVAL_URL ") {
                break link.to_owned();
            }
        };
        assert!(
            link.starts_with(&format!(
                "http://localhost:{}/approve?request=",
                places.port
            )),
            "{link}"
        );

        // The person opens the link in a new tab (the console stays open in
        // its own): the same request, in their terms. Their platform
        // authenticator answers in every tab (a virtual one is per tab, so
        // the new tab gets one holding the same passkey).
        let passkeys = browser_support::credentials(&page, &authenticator).await;
        assert_eq!(passkeys.len(), 1);
        let tab = page.new_window(true).await.unwrap();
        page.switch_to_window(tab.handle).await.unwrap();
        let here = browser_support::add_authenticator(&page, true).await;
        for passkey in passkeys {
            browser_support::add_credential(&page, &here, passkey).await;
        }
        page.goto(&link).await.unwrap();
        page.wait()
            .for_element(Locator::Css("#approval-page #confirm-title"))
            .await
            .unwrap();
        assert_eq!(
            text(&page, "#confirm-title").await.as_deref(),
            Some("Disable 1 device: Air sensor Navigli")
        );
        if let Some(path) = std::env::var_os("DEVICES_APPROVAL_SCREENSHOT") {
            let png = page.screenshot().await.unwrap();
            std::fs::write(path, png).unwrap();
        }
        assert_ne!(app.backend().get("d2").unwrap().status, Status::Disabled);
        until("the page takes answers", || async {
            page.find(Locator::Css("#approve-passkey:not([disabled])"))
                .await
                .is_ok()
        })
        .await;
        click(&page, "#approve-passkey").await;
        until("the page says it is approved", || async {
            text(&page, "#approval-state")
                .await
                .is_some_and(|t| t.starts_with("Approved"))
        })
        .await;

        // The held call ran, once; the client was told the interaction ended.
        while let Some(line) = tokio::time::timeout(browser_support::PATIENCE, lines.next_line())
            .await
            .expect("the client finishes")
            .unwrap()
        {
            transcript.push(line);
        }
        let status = client.wait().await.unwrap();
        let mut stderr = String::new();
        if let Some(mut err) = client.stderr.take() {
            use tokio::io::AsyncReadExt;
            let _ = err.read_to_string(&mut stderr).await;
        }
        println!("{mode}: {transcript:#?}");
        assert!(status.success(), "{transcript:?}\n{stderr}");
        assert!(
            transcript.iter().any(|l| l == r#"RESULT {"disabled": 1}"#),
            "{transcript:?}"
        );
        assert!(transcript.iter().any(|l| l == "FORM 0"), "{transcript:?}");
        if mode == "legacy" {
            assert!(
                transcript.iter().any(|l| l == "COMPLETED 1"),
                "{transcript:?}"
            );
        }
        assert_eq!(app.backend().get("d2").unwrap().status, Status::Disabled);
        let approved = app
            .registry()
            .audit_log()
            .into_iter()
            .filter(|e| e.kind == agent_surface::audit::AuditKind::ConfirmationApproved)
            .count();
        assert_eq!(approved, 1);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn as_confirm_004_a_url_mode_client_sends_its_person_to_the_approval_page_and_the_call_runs_once()
 {
    approved_out_of_band("legacy").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn as_confirm_004_on_the_current_protocol_the_approval_page_is_the_calls_input_request() {
    approved_out_of_band("current").await;
}
