//! The console as a person uses it, in a real browser: the scripted agent
//! from a fresh console and from any page, the dialog in the person's
//! terms, the activity stream, the live Agents panel, keyboard-only
//! answers, consistency after a disable, and a narrow screen.
//!
//! Needs Debian's `chromium` and `chromium-driver` (see `browser.rs`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)] // test code

mod browser_support;

use browser_support::{click, in_browser, sign_in, text, until};
use devices::Status;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scripted_agent_disables_three_devices_from_a_fresh_console() {
    in_browser(|page, _agent, app, places| async move {
        sign_in(&page, &places).await;
        click(&page, "#run-agent").await;
        until("the dialog asks about d2, d3 and d4", || async {
            text(&page, "#confirm-input")
                .await
                .is_some_and(|t| t.contains(r#"["d2","d3","d4"]"#))
        })
        .await;
        click(&page, "#approve").await;
        until("the scripted agent is done", || async {
            text(&page, "#transcript")
                .await
                .is_some_and(|t| t.contains("Done: 3 devices disabled."))
        })
        .await;
        for id in ["d2", "d3", "d4"] {
            assert_eq!(app.backend().get(id).unwrap().status, Status::Disabled);
        }
    })
    .await;
}
