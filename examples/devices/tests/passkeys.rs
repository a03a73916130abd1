//! A person, proven, in a real browser: Chromium with a virtual
//! authenticator (WebDriver's WebAuthn extension) stands for the person's
//! passkey. The person registers a passkey from the dialog and approves
//! with it; an authenticator that does not verify the person, an assertion
//! replayed by a page script, and an authenticator without the registered
//! credential approve nothing (AS-CONFIRM-001, -003).
//!
//! Runs only where Chromium and chromedriver are installed (CI installs
//! them), one browser test at a time.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)] // test code

mod browser_support;

use std::sync::Arc;

use agent_surface::confirmation::{ConfirmationOutcome, PresenceMethod};
use browser_support::{
    DISABLE, add_authenticator, agent_asks, click, in_browser, payload, remove_authenticator,
    script_fills_and_clicks, set_up_passkey, sign_in, text, until, verifies,
};
use devices::Status;
use fantoccini::Client;
use serde_json::json;

/// Waits until the dialog tells the person something containing `what`.
async fn told(page: &Client, what: &str) {
    until(what, || async {
        text(page, "#presence-message")
            .await
            .is_some_and(|t| t.contains(what))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn as_confirm_001_the_person_registers_a_passkey_and_approves_with_it_and_nothing_else_approves()
 {
    in_browser(|page, agent, app, places| async move {
        sign_in(&page, &places).await;
        let authenticator = add_authenticator(&page, true).await;
        // Signed in without a passkey: the console offers one, saying why.
        assert!(
            text(&page, "#passkey-offer")
                .await
                .is_some_and(|t| t.contains("not a script or an agent")),
        );
        if let Some(path) = std::env::var_os("DEVICES_OFFER_SCREENSHOT") {
            let png = page.screenshot().await.unwrap();
            std::fs::write(path, png).unwrap();
        }

        // A script in the page tries to enroll a key of its own: it starts
        // the setup and guesses the code it cannot read. Refused; no passkey.
        page.execute("document.getElementById('offer-setup-passkey').click();", vec![])
            .await
            .unwrap();
        until("the setup asks for the terminal's code", || async {
            page.find(fantoccini::Locator::Css("#offer-setup-code"))
                .await
                .is_ok()
        })
        .await;
        script_fills_and_clicks(&page, "offer-setup-code", "1234 5678", "offer-setup-continue")
            .await;
        until("the guess is refused", || async {
            text(&page, "#offer-setup-message")
                .await
                .is_some_and(|t| t.contains("not the setup code"))
        })
        .await;
        assert!(
            page.find(fantoccini::Locator::Css("#passkey-offer"))
                .await
                .is_ok(),
            "no passkey was registered"
        );

        // The first request: the person has no passkey, and sets one up
        // from the dialog.
        agent_asks(&page, &agent, &["d2"]).await;
        assert!(
            text(&page, "#presence-no-passkey")
                .await
                .is_some_and(|t| t.contains("no passkey")),
        );
        // Registering is itself an approval: the setup asks for a code the
        // terminal printed before the browser's prompt.
        set_up_passkey(&page, "dialog").await;
        until("the offer leaves once a passkey is set up", || async {
            page.find(fantoccini::Locator::Css("#passkey-offer"))
                .await
                .is_err()
        })
        .await;
        if let Some(path) = std::env::var_os("DEVICES_PASSKEY_SCREENSHOT") {
            let png = page.screenshot().await.unwrap();
            std::fs::write(path, png).unwrap();
        }

        // An authenticator that does not verify the person: a trusted click
        // (WebDriver's own) on the passkey button approves nothing.
        verifies(&page, &authenticator, false).await;
        click(&page, "#approve-passkey").await;
        until("the passkey attempt is refused", || async {
            text(&page, "#presence-message")
                .await
                .is_some_and(|t| !t.contains("set up"))
        })
        .await;
        assert_ne!(app.backend().get("d2").unwrap().status, Status::Disabled);
        let id = app.registry().confirmations().pending()[0]
            .confirmation_id
            .clone();

        // A page script keeps the next assertion the browser makes, to
        // replay it later.
        page.execute(
            "var real = navigator.credentials.get.bind(navigator.credentials); \
             navigator.credentials.get = function (options) { \
               return real(options).then(function (c) { window.kept = c; return c; }); };",
            vec![],
        )
        .await
        .unwrap();

        // The person, verified, approves with the passkey: the call runs once.
        verifies(&page, &authenticator, true).await;
        click(&page, "#approve-passkey").await;
        until("the dialog closes", || async {
            page.find(fantoccini::Locator::Css("#confirm-dialog"))
                .await
                .is_err()
        })
        .await;
        let resolution = app.registry().confirmations().resolution(&id).unwrap();
        assert_eq!(resolution.outcome, ConfirmationOutcome::Approved);
        let proven = resolution.person_verified.expect("proven by the person");
        assert_eq!(proven.method, PresenceMethod::Webauthn);
        let done = agent.call(DISABLE, json!({})).await;
        assert_eq!(payload(&done)["disabled"], 1, "{done:?}");

        // The next request: the script answers the passkey prompt with the
        // kept assertion (a replay, for another request). Refused.
        agent_asks(&page, &agent, &["d3"]).await;
        page.execute(
            "navigator.credentials.get = function () { return Promise.resolve(window.kept); };",
            vec![],
        )
        .await
        .unwrap();
        click(&page, "#approve-passkey").await;
        told(&page, "another request").await;
        assert_ne!(app.backend().get("d3").unwrap().status, Status::Disabled);
        // A reload withdraws it (and drops the script); the agent is told.
        page.execute("location.reload()", vec![]).await.unwrap();
        until("the reloaded console", || async {
            page.find(fantoccini::Locator::Css("#row-d1")).await.is_ok()
                && app.registry().confirmations().pending().is_empty()
        })
        .await;
        let withdrawn = agent.call(DISABLE, json!({})).await;
        assert_eq!(payload(&withdrawn)["details"]["reason"], "withdrawn");
        // The person's record outlived the tab: the reloaded page shows the
        // approval made before it, how it was proven, and the request the
        // reload withdrew.
        until("the record shows what happened before the reload", || async {
            text(&page, "#activity").await.is_some_and(|t| {
                t.contains("admin approved with a passkey (through console): “Disable 1 device: Air sensor Navigli”")
                    && t.contains("Withdrawn, the page it applied to was left or closed; nothing was done: “Disable 1 device: Camera Duomo”")
            })
        })
        .await;
        if let Some(path) = std::env::var_os("DEVICES_RECORD_SCREENSHOT") {
            let png = page.screenshot().await.unwrap();
            std::fs::write(path, png).unwrap();
        }

        // An authenticator without the registered credential: nothing.
        remove_authenticator(&page, &authenticator).await;
        let _stranger = add_authenticator(&page, true).await;
        agent_asks(&page, &agent, &["d3"]).await;
        click(&page, "#approve-passkey").await;
        until("the stranger's attempt is refused", || async {
            text(&page, "#presence-message").await.is_some()
        })
        .await;
        assert_ne!(app.backend().get("d3").unwrap().status, Status::Disabled);
        let pending = app.registry().confirmations().pending();
        assert_eq!(pending.len(), 1, "still the person's to answer");
        let _ = Arc::clone(&pending[0].confirmation_id);
    })
    .await;
}
