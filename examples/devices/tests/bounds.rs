//! Every input the agent sends is bounded: one oversized value is refused
//! at phase 5 and can never wedge a component's state.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)] // test code

use agent_surface::prelude::*;
use agent_surface::testing::TestSurface;
use devices::components::{Filters, StatusFilter};
use devices::{App, User, host_for, registry_builder};
use serde_json::{Value, json};

async fn harness(user: User) -> (TestSurface, App) {
    let surface = TestSurface::with(registry_builder());
    surface.as_host(host_for(&user));
    let app = App::attach(surface.registry().clone(), user).await.unwrap();
    (surface, app)
}

/// The JSON pointers of every unbounded string, array or number in `schema`.
fn unbounded(schema: &Value, at: &str, found: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            let types: Vec<&str> = match map.get("type") {
                Some(Value::String(t)) => vec![t.as_str()],
                Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            let closed = map.contains_key("enum") || map.contains_key("const");
            let has = |key: &str| map.contains_key(key);
            if !closed {
                if types.contains(&"string") && !has("maxLength") {
                    found.push(format!("{at}: string without maxLength"));
                }
                if types.contains(&"array") && !has("maxItems") {
                    found.push(format!("{at}: array without maxItems"));
                }
                if (types.contains(&"integer") || types.contains(&"number")) && !has("maximum") {
                    found.push(format!("{at}: number without maximum"));
                }
            }
            for (key, value) in map {
                unbounded(value, &format!("{at}/{key}"), found);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                unbounded(item, &format!("{at}/{i}"), found);
            }
        }
        _ => {}
    }
}

/// Every `inputSchema` in a snapshot, with where it sits.
fn input_schemas<'a>(value: &'a Value, at: &str, found: &mut Vec<(String, &'a Value)>) {
    match value {
        Value::Object(map) => {
            for (key, value) in map {
                let here = format!("{at}/{key}");
                if key == "inputSchema" {
                    found.push((here, value));
                } else {
                    input_schemas(value, &here, found);
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                input_schemas(item, &format!("{at}/{i}"), found);
            }
        }
        _ => {}
    }
}

#[tokio::test]
async fn every_agent_facing_input_is_bounded() {
    let (surface, app) = harness(User::admin()).await;
    let snapshot = surface.snapshot().to_json();
    let mut schemas = Vec::new();
    input_schemas(&snapshot, "", &mut schemas);
    let ids: Vec<&str> = schemas.iter().map(|(at, _)| at.as_str()).collect();
    assert!(
        ids.len() >= 5,
        "the admin sees every input (filters, table, drawer, navigation, disable): {ids:?}"
    );
    let mut found = Vec::new();
    for (at, schema) in &schemas {
        unbounded(schema, at, &mut found);
    }
    assert!(found.is_empty(), "unbounded inputs: {found:#?}");
    app.stop().await;
}

#[tokio::test]
async fn an_oversized_city_is_refused_and_the_filters_keep_working() {
    let (surface, app) = harness(User::admin()).await;
    let set = surface
        .invoke(
            "view:devices.filters.set",
            json!({"status": "online", "city": "Milan"}),
        )
        .await;
    assert!(set.is_ok(), "{set:?}");

    let huge = "x".repeat(100 * 1024);
    let refused = surface
        .invoke(
            "view:devices.filters.set",
            json!({"status": "offline", "city": huge}),
        )
        .await;
    let error = refused.error().expect("refused");
    assert_eq!(error.code(), ErrorCode::InvalidInput, "{error:?}");
    assert_eq!(
        error.detail("issues").unwrap()[0]["path"],
        json!("/city"),
        "{error:?}"
    );
    assert!(
        !serde_json::to_string(&refused).unwrap().contains("xxxx"),
        "the value is never echoed"
    );

    // Nothing was applied, and reading the filters still works.
    let filters: Filters = surface.observe("view:devices.filters.read").await.unwrap();
    assert_eq!(
        (filters.status, filters.city.as_deref()),
        (StatusFilter::Online, Some("Milan"))
    );
    // The longest accepted city round-trips.
    let longest = "y".repeat(64);
    assert!(
        surface
            .invoke("view:devices.filters.set", json!({"city": longest}))
            .await
            .is_ok()
    );
    let filters: Filters = surface.observe("view:devices.filters.read").await.unwrap();
    assert_eq!(filters.city.as_deref(), Some(longest.as_str()));
    app.stop().await;
}

#[tokio::test]
async fn oversized_ids_and_selections_are_refused() {
    let (surface, app) = harness(User::admin()).await;
    let long_id = "d".repeat(65);
    for (capability, input) in [
        ("view:devices.drawer.open", json!({"deviceId": long_id})),
        ("view:devices.table.selectRows", json!({"ids": [long_id]})),
        (
            "view:devices.table.selectRows",
            json!({"ids": vec!["d1"; 101]}),
        ),
    ] {
        let result = surface.invoke(capability, input).await;
        assert_eq!(
            result.error().map(ErrorPayload::code),
            Some(ErrorCode::InvalidInput),
            "{capability}: {result:?}"
        );
    }
    app.stop().await;
}
