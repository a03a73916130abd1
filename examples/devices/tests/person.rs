//! The console as a person uses it, in a real browser: the scripted agent
//! from a fresh console and from any page, the dialog in the person's
//! terms, the activity stream and agent marks, the live Agents panel,
//! keyboard-only answers with focus trapped, consistency after a disable,
//! a narrow screen, and text contrast.
//!
//! Needs Debian's `chromium` and `chromium-driver` (see `browser.rs`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)] // test code

mod browser_support;

use browser_support::{
    DISABLE, agent_asks, answer, answer_ready, click, has, in_browser, payload, sign_in,
    terminal_code, text, until,
};
use devices::Status;
use fantoccini::{Client, Locator};
use serde_json::json;

/// The id of the element that has focus ("" when it has none).
async fn focused(page: &Client) -> String {
    page.execute(
        "return document.activeElement ? document.activeElement.id : ''",
        vec![],
    )
    .await
    .unwrap()
    .as_str()
    .unwrap_or_default()
    .to_owned()
}

/// Whether focus is inside the dialog.
async fn focus_in_dialog(page: &Client) -> bool {
    page.execute(
        "var d = document.getElementById('confirm-dialog'); return !!d && d.contains(document.activeElement);",
        vec![],
    )
    .await
    .unwrap()
    .as_bool()
    .unwrap_or(false)
}

/// Presses `key` (a WebDriver key code) on whatever has focus.
async fn press(page: &Client, key: &str) {
    page.active_element()
        .await
        .unwrap()
        .send_keys(key)
        .await
        .unwrap();
}

const TAB: &str = "\u{e004}";
const ENTER: &str = "\u{e007}";
const ESCAPE: &str = "\u{e00c}";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scripted_agent_disables_three_devices_from_a_fresh_console_and_from_settings() {
    in_browser(|page, _agent, app, places| async move {
        sign_in(&page, &places).await;
        // From Settings: the agent goes to the devices page itself, and
        // what it says is true.
        click(&page, "#nav-settings").await;
        page.wait()
            .for_element(Locator::Css("#settings"))
            .await
            .unwrap();
        click(&page, "#run-agent").await;
        until("the dialog asks about d2, d3 and d4", || async {
            text(&page, "#confirm-input")
                .await
                .is_some_and(|t| t.contains(r#"["d2","d3","d4"]"#))
        })
        .await;
        answer(&page, "#approve").await;
        until("the scripted agent is done", || async {
            text(&page, "#transcript")
                .await
                .is_some_and(|t| t.contains("Done: 3 devices disabled."))
        })
        .await;
        let transcript = text(&page, "#transcript").await.unwrap();
        // A story for the person watching: no protocol codes or wire names.
        assert!(!transcript.contains("does not offer it"), "{transcript}");
        assert!(
            transcript.contains("The devices are on another page: I go there."),
            "{transcript}"
        );
        assert!(
            transcript.contains("You approved it, so I go ahead."),
            "{transcript}"
        );
        for raw in ["STALE", "CONFIRMATION", "__", "cnf_", "{"] {
            assert!(!transcript.contains(raw), "{raw} in {transcript}");
        }
        for id in ["d2", "d3", "d4"] {
            assert_eq!(app.backend().get(id).unwrap().status, Status::Disabled);
        }
        // The activity says what the approved action did.
        until("the activity shows the approved action", || async {
            text(&page, "#activity").await.is_some_and(|t| {
                t.contains("Scripted agent did, with your approval: “Disable 3 devices")
            })
        })
        .await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dialog_names_the_devices_the_action_who_asks_and_the_time_left() {
    in_browser(|page, agent, _app, places| async move {
        sign_in(&page, &places).await;
        agent_asks(&page, &agent, &["d2", "d3", "d4"]).await;
        let title = text(&page, "#confirm-title").await.unwrap();
        assert_eq!(
            title,
            "Disable 3 devices: Air sensor Navigli, Camera Duomo and Thermostat Brera"
        );
        assert!(!title.contains("d2"), "names, not ids: {title}");
        // Disabling needs proof that it is the person: no plain approve
        // button, the action named on the proof's buttons, and a way to
        // set up a passkey for a person who has none.
        assert!(page.find(Locator::Css("#approve")).await.is_err());
        assert!(
            text(&page, "#presence-why")
                .await
                .is_some_and(|t| t.contains("proof that it is you")),
        );
        assert_eq!(
            text(&page, "#approve-code").await.as_deref(),
            Some("Disable 3 devices with code")
        );
        let class = page
            .find(Locator::Css("#approve-code"))
            .await
            .unwrap()
            .attr("class")
            .await
            .unwrap();
        assert_eq!(class.as_deref(), Some("danger"));
        assert!(page.find(Locator::Css("#dialog-setup-passkey")).await.is_ok());
        let asker = text(&page, "#confirm-asker").await.unwrap();
        // As a person names it: the client's name, no version or session.
        assert_eq!(asker, "rmcp");
        let countdown = text(&page, "#confirm-countdown").await.unwrap();
        assert!(
            countdown.split_once(':').is_some_and(|(m, s)| {
                m.parse::<u32>().is_ok() && s.len() == 2 && s.parse::<u32>().is_ok()
            }),
            "{countdown}"
        );
        until("the countdown moves", || async {
            text(&page, "#confirm-countdown").await.as_deref() != Some(countdown.as_str())
        })
        .await;
        // The exact request stays available, behind a disclosure.
        assert_eq!(
            text(&page, "#confirm-input").await.as_deref(),
            Some(r#"{"deviceIds":["d2","d3","d4"]}"#)
        );
        let open = page
            .execute("return document.getElementById('confirm-details').open", vec![])
            .await
            .unwrap();
        assert_eq!(open, json!(false), "collapsed until asked for");
        // The dialog is a labelled modal over a dimmed page.
        let labelled = page
            .execute(
                "var d = document.getElementById('confirm-dialog'); \
                 var l = document.getElementById(d.getAttribute('aria-labelledby')); \
                 return [d.getAttribute('role'), d.getAttribute('aria-modal'), l ? l.textContent : null, \
                         getComputedStyle(d.parentElement).backgroundColor];",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(labelled[0], "alertdialog");
        assert_eq!(labelled[1], "true");
        assert_eq!(labelled[2].as_str(), Some(title.as_str()));
        assert_ne!(labelled[3], "rgba(0, 0, 0, 0)", "{labelled}");

        // The agent moves the selection while its request is on screen: the
        // request no longer applies and is withdrawn at once, not when the
        // agent happens to retry.
        let moved = agent
            .call("view_devices__table__selectRows", json!({"ids": ["d5"]}))
            .await;
        assert_ne!(moved.is_error, Some(true), "{moved:?}");
        until("the dialog says the request no longer applies", || async {
            text(&page, "#confirm-ended")
                .await
                .is_some_and(|t| t.contains("no longer matches the page"))
        })
        .await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyboard_alone_denies_and_approves_with_focus_kept_in_the_dialog() {
    in_browser(|page, agent, app, places| async move {
        sign_in(&page, &places).await;
        // The person was on the Status filter when the agent asked.
        page.execute("document.getElementById('status-filter').focus()", vec![])
            .await
            .unwrap();
        agent_asks(&page, &agent, &["d2"]).await;
        until("focus moves into the dialog, on Deny", || async {
            focused(&page).await == "deny"
        })
        .await;
        for _ in 0..12 {
            press(&page, TAB).await;
            assert!(focus_in_dialog(&page).await, "Tab left the dialog");
        }
        // Escape denies.
        press(&page, ESCAPE).await;
        until("the dialog closes", || async {
            page.find(Locator::Css("#confirm-dialog")).await.is_err()
        })
        .await;
        until("focus returns to the filter", || async {
            focused(&page).await == "status-filter"
        })
        .await;
        let denied = agent.call(DISABLE, json!({})).await;
        assert_eq!(
            payload(&denied)["details"]["reason"],
            "denied",
            "{denied:?}"
        );

        // Tab to the code field, type the terminal's code, press Enter:
        // approved.
        agent_asks(&page, &agent, &["d3"]).await;
        until("focus on Deny", || async { focused(&page).await == "deny" }).await;
        let mut guard = 0;
        while focused(&page).await != "presence-code" {
            press(&page, TAB).await;
            guard += 1;
            assert!(guard < 10, "Tab never reached the code field");
        }
        let code = terminal_code(&page).await;
        page.active_element()
            .await
            .unwrap()
            .send_keys(&code)
            .await
            .unwrap();
        until("the code is taken", || async {
            page.find(Locator::Css("#approve-code:not([disabled])"))
                .await
                .is_ok()
        })
        .await;
        press(&page, ENTER).await;
        until("the dialog closes", || async {
            page.find(Locator::Css("#confirm-dialog")).await.is_err()
        })
        .await;
        let done = agent.call(DISABLE, json!({})).await;
        assert_eq!(payload(&done)["disabled"], 1, "{done:?}");
        assert_eq!(app.backend().get("d3").unwrap().status, Status::Disabled);
        assert_eq!(app.backend().get("d2").unwrap().status, Status::Offline);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_activity_and_the_agents_panel_show_what_the_agent_does_and_may_do() {
    in_browser(|page, mut agent, _app, places| async move {
        sign_in(&page, &places).await;
        until("the panel lists the connected agent", || async {
            text(&page, "#agents")
                .await
                .is_some_and(|t| t.contains("rmcp") && t.contains("tools now"))
        })
        .await;
        let before = text(&page, "#agents").await.unwrap();
        assert!(!before.contains("disable devices"), "{before}");

        // The agent changes the filters: the page marks it and says so.
        let filtered = agent
            .call(
                "view_devices__filters__set",
                json!({"status": "offline", "city": "Milan"}),
            )
            .await;
        assert_ne!(filtered.is_error, Some(true), "{filtered:?}");
        until("the filters are marked as the agent's", || async {
            text(&page, "#filters-mark")
                .await
                .is_some_and(|t| t.starts_with("Set by rmcp"))
        })
        .await;
        until("the activity lists the filter change", || async {
            text(&page, "#activity")
                .await
                .is_some_and(|t| t.contains("changed the filters"))
        })
        .await;
        // The person changing them removes the mark.
        page.find(Locator::Css("#status-filter"))
            .await
            .unwrap()
            .select_by_value("all")
            .await
            .unwrap();
        until("the mark goes when the person acts", || async {
            page.find(Locator::Css("#filters-mark")).await.is_err()
        })
        .await;

        // What it may do follows the page; what waits shows; answers show
        // with their channel.
        agent_asks(&page, &agent, &["d2", "d3"]).await;
        agent
            .list_changes("selection offers disable", |t| has(t, DISABLE))
            .await;
        until("the panel shows the agent may disable", || async {
            text(&page, "#agents")
                .await
                .is_some_and(|t| t.contains("disable devices"))
        })
        .await;
        assert!(
            text(&page, "#waiting")
                .await
                .is_some_and(|t| t.contains("Disable 2 devices")),
        );
        answer(&page, "#approve").await;
        until(
            "the activity shows the approval and its channel",
            || async {
                text(&page, "#activity").await.is_some_and(|t| {
                    t.contains("admin approved with the terminal's code (through console): “Disable 2 devices")
                })
            },
        )
        .await;
        let done = agent.call(DISABLE, json!({})).await;
        assert_eq!(payload(&done)["disabled"], 2, "{done:?}");
        until(
            "the activity shows what the approved action did",
            || async {
                text(&page, "#activity")
                    .await
                    .is_some_and(|t| t.contains("did, with your approval: “Disable 2 devices"))
            },
        )
        .await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_disable_under_the_offline_filter_nothing_disabled_stays_listed_or_ticked() {
    in_browser(|page, mut agent, app, places| async move {
        sign_in(&page, &places).await;
        page.find(Locator::Css("#status-filter"))
            .await
            .unwrap()
            .select_by_value("offline")
            .await
            .unwrap();
        until("only offline devices", || async {
            page.find(Locator::Css("#row-d1")).await.is_err()
        })
        .await;
        click(&page, "#select-d2").await;
        click(&page, "#select-d3").await;
        agent
            .list_changes("ticking offers disable", |t| has(t, DISABLE))
            .await;
        agent.call(DISABLE, json!({})).await;
        answer(&page, "#approve").await;
        let done = agent.call(DISABLE, json!({})).await;
        assert_eq!(payload(&done)["disabled"], 2, "{done:?}");
        until(
            "the disabled devices leave the offline view, unticked",
            || async {
                page.find(Locator::Css("#row-d2")).await.is_err()
                    && page.find(Locator::Css("#row-d3")).await.is_err()
                    && text(&page, "#selection").await.as_deref() == Some("Nothing selected")
            },
        )
        .await;
        agent
            .list_changes("disable is no longer offered", |t| !has(t, DISABLE))
            .await;
        let state = agent
            .call("view_devices__table__readState", json!({}))
            .await;
        assert_eq!(payload(&state)["selectedIds"], json!([]));
        assert_eq!(app.backend().get("d2").unwrap().status, Status::Disabled);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_400_pixels_the_table_keeps_its_width_and_text_keeps_its_contrast() {
    in_browser(|page, agent, _app, places| async move {
        sign_in(&page, &places).await;
        // Contrast of every text on the page, and in the open dialog.
        let check = include_str!("browser_support/contrast.js");
        let worst = page.execute(check, vec![]).await.unwrap();
        assert!(worst["ratio"].as_f64().unwrap() >= 4.5, "{worst}");
        agent_asks(&page, &agent, &["d2"]).await;
        let worst = page.execute(check, vec![]).await.unwrap();
        assert!(worst["ratio"].as_f64().unwrap() >= 4.5, "{worst}");
        answer(&page, "#deny").await;

        page.set_window_size(400, 860).await.unwrap();
        until("the table is at least 300 px wide", || async {
            let width = page
                .execute(
                    "return document.querySelector('section.table table').getBoundingClientRect().width",
                    vec![],
                )
                .await
                .unwrap();
            width.as_f64().is_some_and(|w| w >= 300.0)
        })
        .await;
        let overflow = page
            .execute(
                "return document.documentElement.scrollWidth - document.documentElement.clientWidth",
                vec![],
            )
            .await
            .unwrap();
        assert!(overflow.as_f64().unwrap() <= 1.0, "the page scrolls sideways: {overflow}");
        // To look at it: DEVICES_SCREENSHOT_NARROW=path.png takes the narrow
        // page with a request open.
        if let Some(path) = std::env::var_os("DEVICES_SCREENSHOT_NARROW") {
            agent
                .call("view_devices__table__selectRows", json!({"ids": ["d3", "d4"]}))
                .await;
            agent.tools().await;
            agent.call(DISABLE, json!({"reason": "they look idle"})).await;
            answer_ready(&page).await;
            std::fs::write(path, page.screenshot().await.unwrap()).unwrap();
        }
    })
    .await;
}
