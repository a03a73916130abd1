//! The web console in a real browser: headless Chromium driven through
//! WebDriver plays the person while an rmcp client plays the agent over
//! MCP streamable HTTP, against one running console (AS-ADAPTER-003 for
//! the console: the agent's tools follow the page; the approval model
//! holds against a foreign page).
//!
//! Needs Debian's `chromium` and `chromium-driver` (`.ci/run` installs
//! them). Without them the test says it was skipped — unless `CI=true`,
//! where their absence fails it.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)] // test code

mod browser_support;

use browser_support::{
    PATIENCE, Places, Session, answer, checked, click, has, in_browser, payload, text, until,
};
use devices::{App, Status};
use fantoccini::{Client, Locator};
use serde_json::json;

const DISABLE: &str = "domain_devices__disable";

/// A page of another site tries to reach the console while a request
/// waits for the person: its websocket is refused, a rebinding name gets
/// no page, and the person's dialog is untouched.
async fn attack(page: &Client, places: &Places, app: &App) {
    let person = page.window().await.unwrap();
    let evil = page.new_window(true).await.unwrap().handle;
    page.switch_to_window(evil).await.unwrap();
    page.goto(&places.evil).await.unwrap();
    until("the foreign page's websocket is refused", || async {
        text(page, "#ws").await.as_deref() == Some("refused")
    })
    .await;
    // A page on another loopback port: the browser sends it the person's
    // cookie, but the console's websocket still refuses it (another
    // origin, and no socket key: that stays in the console's own origin).
    let other_port = places
        .evil
        .rsplit_once(':')
        .and_then(|(_, port)| port.trim_end_matches('/').parse::<u16>().ok())
        .unwrap();
    page.goto(&format!("http://127.0.0.1:{other_port}/"))
        .await
        .unwrap();
    until("another loopback origin's websocket is refused", || async {
        text(page, "#ws").await.as_deref() == Some("refused")
    })
    .await;
    // DNS rebinding: the console's port under the foreign name.
    page.goto(&format!("http://evil.example:{}/devices", places.port))
        .await
        .unwrap();
    let body = text(page, "body").await.unwrap_or_default();
    assert!(body.contains("Forbidden"), "{body}");
    page.close_window().await.unwrap();
    page.switch_to_window(person).await.unwrap();
    assert_eq!(app.registry().confirmations().pending().len(), 1);
    let state = page
        .find(Locator::Css("#confirm-dialog"))
        .await
        .unwrap()
        .attr("data-state")
        .await
        .unwrap();
    assert_eq!(
        state.as_deref(),
        Some("live"),
        "the person's dialog is untouched"
    );
}

async fn journey(page: Client, mut agent: Session, app: App, places: Places) {
    let url = places.url.clone();
    // Not signed in: no console.
    page.goto(&url).await.unwrap();
    let body = text(&page, "body").await.unwrap_or_default();
    assert!(body.contains("sign-in link"), "{body}");
    // The person opens the one-time link the console printed.
    page.goto(&places.login).await.unwrap();
    // The page is empty until the websocket draws it: wait for elements.
    page.wait()
        .at_most(PATIENCE)
        .for_element(Locator::Css("#row-d1"))
        .await
        .expect("the console draws its table");
    let tools = agent.tools().await;
    assert!(has(&tools, "view_devices__table__selectRows"), "{tools:?}");
    assert!(!has(&tools, DISABLE), "nothing selected yet: {tools:?}");

    // The person ticks rows: the agent hears it without calling anything.
    click(&page, "#select-d2").await;
    click(&page, "#select-d3").await;
    agent
        .list_changes("ticking rows offers disable", |t| has(t, DISABLE))
        .await;
    until("two rows selected", || async {
        text(&page, "#selection").await.as_deref()
            == Some("2 selected: Air sensor Navigli, Camera Duomo")
    })
    .await;

    // The agent asks; the dialog shows the exact bound ids; the person approves.
    let asked = agent.call(DISABLE, json!({})).await;
    assert_eq!(
        payload(&asked)["code"],
        "CONFIRMATION_REQUIRED",
        "{asked:?}"
    );
    page.wait()
        .at_most(PATIENCE)
        .for_element(Locator::Css("#confirm-dialog"))
        .await
        .expect("the dialog opens");
    assert_eq!(
        text(&page, "#confirm-input").await.as_deref(),
        Some(r#"{"deviceIds":["d2","d3"]}"#)
    );
    assert_eq!(
        text(&page, "#confirm-effect").await.as_deref(),
        Some("destructive")
    );
    if let Some(path) = std::env::var_os("DEVICES_SCREENSHOT") {
        let png = page.screenshot().await.unwrap();
        std::fs::write(path, png).unwrap();
    }
    attack(&page, &places, &app).await;
    answer(&page, "#approve").await;
    until("the dialog closes", || async {
        page.find(Locator::Css("#confirm-dialog")).await.is_err()
    })
    .await;
    let done = agent.call(DISABLE, json!({})).await;
    assert_ne!(done.is_error, Some(true), "{done:?}");
    assert_eq!(payload(&done)["disabled"], 2);
    until("d2 and d3 disabled", || async {
        text(&page, "#status-d2").await.as_deref() == Some("disabled")
            && text(&page, "#status-d3").await.as_deref() == Some("disabled")
    })
    .await;
    assert_eq!(app.backend().get("d2").unwrap().status, Status::Disabled);
    assert_eq!(app.backend().get("d3").unwrap().status, Status::Disabled);

    // Deny: nothing reaches the backend.
    click(&page, "#select-d2").await;
    click(&page, "#select-d3").await;
    click(&page, "#select-d4").await;
    until("d4 alone selected", || async {
        text(&page, "#selection").await.as_deref() == Some("1 selected: Thermostat Brera")
    })
    .await;
    let asked = agent.call(DISABLE, json!({})).await;
    assert_eq!(
        payload(&asked)["code"],
        "CONFIRMATION_REQUIRED",
        "{asked:?}"
    );
    until("the dialog asks about d4", || async {
        text(&page, "#confirm-input").await.as_deref() == Some(r#"{"deviceIds":["d4"]}"#)
    })
    .await;
    answer(&page, "#deny").await;
    until("the dialog closes", || async {
        page.find(Locator::Css("#confirm-dialog")).await.is_err()
    })
    .await;
    let denied = agent.call(DISABLE, json!({})).await;
    assert_eq!(
        payload(&denied)["code"],
        "CONFIRMATION_INVALID",
        "{denied:?}"
    );
    assert_eq!(payload(&denied)["details"]["reason"], "denied");
    assert_eq!(app.backend().get("d4").unwrap().status, Status::Offline);
    assert_eq!(app.server().received().len(), 1, "one backend call in all");

    // A reload withdraws a waiting request visibly: no dialog offers it,
    // and the agent is told, then may ask anew.
    let asked = agent.call(DISABLE, json!({})).await;
    assert_eq!(
        payload(&asked)["code"],
        "CONFIRMATION_REQUIRED",
        "{asked:?}"
    );
    until("the dialog asks about d4 again", || async {
        text(&page, "#confirm-input").await.as_deref() == Some(r#"{"deviceIds":["d4"]}"#)
    })
    .await;
    agent.changed.borrow_and_update();
    page.refresh().await.unwrap();
    page.wait()
        .at_most(PATIENCE)
        .for_element(Locator::Css("#row-d4"))
        .await
        .expect("the reloaded page draws the console");
    agent
        .list_changes("the reload remounts the page", |t| has(t, DISABLE))
        .await;
    assert!(app.registry().confirmations().pending().is_empty());
    assert!(
        page.find(Locator::Css("#confirm-dialog[data-state=live]"))
            .await
            .is_err(),
        "no dialog offers a request that can no longer run"
    );
    let told = agent.call(DISABLE, json!({})).await;
    assert_eq!(payload(&told)["code"], "CONFIRMATION_INVALID", "{told:?}");
    assert_eq!(payload(&told)["details"]["reason"], "withdrawn");
    assert_eq!(payload(&told)["retry"], "with-confirmation");
    let anew = agent.call(DISABLE, json!({})).await;
    assert_eq!(payload(&anew)["code"], "CONFIRMATION_REQUIRED", "{anew:?}");
    until("the reloaded page's dialog asks about d4", || async {
        text(&page, "#confirm-input").await.as_deref() == Some(r#"{"deviceIds":["d4"]}"#)
    })
    .await;
    answer(&page, "#deny").await;
    until("the dialog closes", || async {
        page.find(Locator::Css("#confirm-dialog")).await.is_err()
    })
    .await;
    assert_eq!(app.server().received().len(), 1, "still one backend call");

    // Leaving the devices page removes its tools; coming back restores them.
    agent.changed.borrow_and_update();
    click(&page, "#nav-settings").await;
    page.wait()
        .at_most(PATIENCE)
        .for_element(Locator::Css("#settings"))
        .await
        .expect("the settings page");
    agent
        .list_changes("leaving /devices removes its tools", |t| {
            !t.iter().any(|n| n.starts_with("view_devices__")) && !has(t, DISABLE)
        })
        .await;
    assert!(page.current_url().await.unwrap().path() == "/settings");
    click(&page, "#nav-devices").await;
    agent
        .list_changes("coming back restores them", |t| {
            has(t, "view_devices__table__selectRows") && has(t, "view_devices__filters__set")
        })
        .await;

    // What the agent does shows in the page, without a reload.
    let filtered = agent
        .call(
            "view_devices__filters__set",
            json!({"status": "offline", "city": "Milan"}),
        )
        .await;
    assert_ne!(filtered.is_error, Some(true), "{filtered:?}");
    until("only offline devices in Milan", || async {
        page.find(Locator::Css("#row-d5")).await.is_err()
            && page.find(Locator::Css("#row-d4")).await.is_ok()
    })
    .await;
    let selected = agent
        .call("view_devices__table__selectRows", json!({"ids": ["d4"]}))
        .await;
    assert_ne!(selected.is_error, Some(true), "{selected:?}");
    until("the agent's selection is ticked", || async {
        checked(&page, "#select-d4").await
            && text(&page, "#selection").await.as_deref() == Some("1 selected: Thermostat Brera")
    })
    .await;

    // The scripted agent, run from the page, waits for the person's answer.
    click(&page, "#run-agent").await;
    until("the scripted agent asks about d4", || async {
        text(&page, "#confirm-input").await.as_deref() == Some(r#"{"deviceIds":["d4"]}"#)
    })
    .await;
    assert_eq!(app.backend().get("d4").unwrap().status, Status::Offline);
    answer(&page, "#approve").await;
    until("the scripted agent is done", || async {
        text(&page, "#transcript")
            .await
            .is_some_and(|t| t.contains("Done: 1 device disabled."))
    })
    .await;
    assert_eq!(app.backend().get("d4").unwrap().status, Status::Disabled);
    // Consistent after the disable: nothing disabled stays ticked, and
    // disable is no longer offered (the agent then shows every status).
    until("d4 shows disabled, unticked", || async {
        text(&page, "#status-d4").await.as_deref() == Some("disabled")
            && text(&page, "#selection").await.as_deref() == Some("Nothing selected")
    })
    .await;
    agent
        .list_changes("disable is no longer offered", |t| !has(t, DISABLE))
        .await;

    // One surface per application: a second tab does not take the console
    // over by itself (nothing waiting is withdrawn); taken over, the first
    // says so; closing the second moves the first back to the front.
    let first = page.window().await.unwrap();
    let second = page.new_window(true).await.unwrap().handle;
    page.switch_to_window(second.clone()).await.unwrap();
    page.goto(&url).await.unwrap();
    page.wait()
        .at_most(PATIENCE)
        .for_element(Locator::Css("#take-over"))
        .await
        .expect("the second tab offers to take the console over");
    assert!(has(&agent.tools().await, "view_devices__table__selectRows"));
    click(&page, "#take-over").await;
    page.wait()
        .at_most(PATIENCE)
        .for_element(Locator::Css("#selection"))
        .await
        .expect("the second tab draws the console");
    page.switch_to_window(first.clone()).await.unwrap();
    page.wait()
        .at_most(PATIENCE)
        .for_element(Locator::Css("#take-over"))
        .await
        .expect("the first tab says the console is open elsewhere");
    page.switch_to_window(second).await.unwrap();
    agent.changed.borrow_and_update();
    page.close_window().await.unwrap();
    page.switch_to_window(first).await.unwrap();
    page.wait()
        .at_most(PATIENCE)
        .for_element(Locator::Css("#selection"))
        .await
        .expect("closing the tab in front moves the first back");
    // The same tools leave with the second tab and come back with the
    // first: the server may see no change at all, so none is awaited.
    agent
        .list_holds("the first tab's components mount again", |t| {
            has(t, "view_devices__table__selectRows")
        })
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn as_adapter_003_the_person_in_the_browser_and_the_agent_over_mcp_share_the_console() {
    in_browser(journey).await;
}
