//! Sessions end for real: a browser whose session ended (evicted by newer
//! sign-ins) keeps its tab open, but its page task stopped with the
//! session, so nothing it sends reaches a handler — not the person's
//! proof, not a click.
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

use agent_surface::confirmation::ConfirmationOutcome;
use browser_support::{
    DISABLE, agent_asks, in_browser, payload, script_fills_and_clicks, sign_in, terminal_code,
};
use devices::{App, Status};
use fantoccini::Client;
use fantoccini::Locator;
use serde_json::json;

/// The person types the right `code` into a tab whose session ended: the
/// page task stopped with the session, so its components left the surface
/// and their request `id` was withdrawn, never approved; d2 stays.
async fn types_into_a_dead_tab(page: &Client, app: &App, code: &str, id: &str) {
    let typed = script_fills_and_clicks(page, "presence-code", code, "approve-code").await;
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert_ne!(
        app.backend().get("d2").unwrap().status,
        Status::Disabled,
        "typed: {typed}"
    );
    let resolution = app.registry().confirmations().resolution(id).unwrap();
    assert_eq!(
        resolution.outcome,
        ConfirmationOutcome::Withdrawn,
        "{resolution:?}"
    );
    assert!(resolution.person_verified.is_none());
}

/// Browsers signed in at once (the console's `MAX_SESSIONS`).
const MAX_SESSIONS: usize = 16;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_evicted_sessions_open_tab_approves_nothing() {
    in_browser(|page, agent, app, mut places| async move {
        sign_in(&page, &places).await;
        agent_asks(&page, &agent, &["d2"]).await;
        // The person reads the code before the session ends.
        let code = terminal_code(&page).await;
        let id = app.registry().confirmations().pending()[0]
            .confirmation_id
            .clone();

        // Newer sign-ins (other browsers, the link used again and again)
        // evict the oldest session: this tab's.
        places.logins.borrow_and_update();
        for _ in 0..MAX_SESSIONS {
            let token = places.logins.borrow_and_update().clone();
            let link = format!("http://localhost:{}/login?token={token}", places.port);
            let answer = reqwest::get(&link).await.unwrap();
            assert!(answer.status().is_success(), "{link}: {}", answer.status());
            places.logins.changed().await.unwrap();
        }

        // The tab is still open; what it sends goes nowhere.
        types_into_a_dead_tab(&page, &app, &code, &id).await;
        // With no signed-in tab, the page's tools are gone for the agent.
        let retried = agent.call(DISABLE, json!({})).await;
        assert_eq!(
            payload(&retried)["code"],
            "CAPABILITY_NOT_FOUND",
            "{retried:?}"
        );
        // A reload shows the sign-in page: the cookie is no longer a session.
        page.refresh().await.unwrap();
        assert!(page.find(Locator::Css("#row-d1")).await.is_err());
        let body = page.source().await.unwrap();
        assert!(body.contains("sign-in link"), "{body}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signing_out_stops_the_sessions_other_open_tabs_and_they_approve_nothing() {
    in_browser(|page, agent, app, places| async move {
        sign_in(&page, &places).await;
        let first = page.window().await.unwrap();
        // A second tab of the same browser, in front: the agent asks there.
        let second = page.new_window(true).await.unwrap();
        page.switch_to_window(second.handle.clone()).await.unwrap();
        page.goto(&places.url).await.unwrap();
        page.wait()
            .for_element(Locator::Css("#take-over, #row-d1"))
            .await
            .unwrap();
        if page.find(Locator::Css("#take-over")).await.is_ok() {
            page.find(Locator::Css("#take-over"))
                .await
                .unwrap()
                .click()
                .await
                .unwrap();
        }
        page.wait()
            .for_element(Locator::Css("#row-d1"))
            .await
            .unwrap();
        agent_asks(&page, &agent, &["d2"]).await;
        let code = terminal_code(&page).await;
        let id = app.registry().confirmations().pending()[0]
            .confirmation_id
            .clone();

        // The person signs out in the first tab.
        page.switch_to_window(first).await.unwrap();
        page.find(Locator::Css("#sign-out"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        page.wait()
            .for_element(Locator::Css("#signed-out"))
            .await
            .unwrap();

        // The second tab is still open; its code goes nowhere.
        page.switch_to_window(second.handle).await.unwrap();
        types_into_a_dead_tab(&page, &app, &code, &id).await;
        // Signed out, the browser opens no page.
        page.refresh().await.unwrap();
        assert!(page.find(Locator::Css("#row-d1")).await.is_err());
    })
    .await;
}
