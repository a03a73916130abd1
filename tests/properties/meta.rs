//! AS-META-007: meta-mode envelopes never panic, and whatever the model
//! sends (unknown keys by the dozen, control characters, long names, deep
//! or mistyped fields), the issues come back capped, truncated and clean.

use agent_surface::error::ErrorCode;
use agent_surface::toolset::{ACT, DISCOVER, Mode, READ, Toolset, Topology};
use agent_surface::{Environment, Registry};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

use crate::{QUICK, bounded, check, full, json_value, key};

/// A field name: a verb's own, a short odd one, or a long one with controls.
fn field() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop_oneof![
            Just("capabilityId"), Just("instanceId"), Just("registrationId"),
            Just("invocationId"), Just("confirmationId"), Just("surfaceVersion"),
            Just("input"), Just("scope"),
        ].prop_map(str::to_owned),
        2 => key(),
        1 => "[\u{0}-\u{7f}\u{e9}~/]{60,90}",
    ]
}

/// A field value: any JSON, or a capability id of the devices console.
fn field_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => json_value(),
        1 => prop_oneof![
            Just("view:devices.table.readState"),
            Just("view:devices.table.selectRows"),
            Just("view:devices.filters.set"),
            Just("view:app.navigation.navigate"),
            Just("domain:devices.disable"),
        ].prop_map(|id| json!(id)),
    ]
}

/// One meta call: the verb, its arguments, a tool-call id.
fn call() -> impl Strategy<Value = (&'static str, Value, Option<String>)> {
    let arguments = prop_oneof![
        8 => prop::collection::vec((field(), field_value()), 0..48)
            .prop_map(|fields| Value::Object(fields.into_iter().collect::<Map<_, _>>())),
        1 => json_value(),
    ];
    (
        prop_oneof![Just(DISCOVER), Just(READ), Just(ACT), Just("surface_other")],
        arguments,
        proptest::option::of("[ -~]{1,12}"),
    )
}

struct Harness {
    runtime: tokio::runtime::Runtime,
    toolset: Toolset,
    _mounted: Vec<agent_surface::Mounted>,
}

fn harness() -> Harness {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let registry = Registry::builder().environment(Environment::Test).build();
    let mounted = crate::mount_console(&registry);
    let toolset = Toolset::builder(&registry)
        .mode(Mode::Meta)
        .topology(Topology::Remote)
        .build()
        .unwrap();
    Harness {
        runtime,
        toolset,
        _mounted: mounted,
    }
}

fn envelope_is_answered_with_bounded_issues(
    harness: &Harness,
    (verb, arguments, call_id): (&'static str, Value, Option<String>),
) -> Result<(), TestCaseError> {
    let result =
        harness
            .runtime
            .block_on(harness.toolset.execute(verb, arguments, call_id.as_deref()));
    if let Some(error) = result.error() {
        if error.code() == ErrorCode::InvalidInput {
            let issues: Vec<agent_surface::schema::Issue> = error
                .detail("issues")
                .and_then(Value::as_array)
                .unwrap()
                .iter()
                .map(|issue| {
                    agent_surface::schema::Issue::new(
                        issue["path"].as_str().unwrap().to_owned(),
                        issue["message"].as_str().unwrap().to_owned(),
                    )
                })
                .collect();
            prop_assert!(!issues.is_empty());
            bounded(&issues)?;
        }
        let size = serde_json::to_string(&result).unwrap().len();
        prop_assert!(size < 32 * 1024, "an error of {} bytes", size);
    }
    Ok(())
}

#[test]
fn as_meta_007_envelopes_never_panic_and_bound_their_issues() {
    let harness = harness();
    check(QUICK, call(), |case| {
        envelope_is_answered_with_bounded_issues(&harness, case)
    });
}

#[test]
#[ignore = "100 000 cases: run with --release -- --ignored"]
fn as_meta_007_envelopes_never_panic_and_bound_their_issues_full() {
    let harness = harness();
    check(full(), call(), |case| {
        envelope_is_answered_with_bounded_issues(&harness, case)
    });
}
