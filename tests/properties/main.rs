//! Property tests over the agent boundary's pure parts: the wire-name
//! codec, canonical JSON, the validator and meta-mode envelopes.
//!
//! Every property runs twice: a quick variant (256 cases) in the normal
//! `cargo test`, and an ignored variant of 100 000 cases (or
//! `PROPTEST_CASES`) for `cargo test --release -p agent-surface-tests
//! --test properties -- --ignored`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)] // test code

mod canonical;
mod meta;
mod strict;
mod validator;
mod wire;

use std::sync::Arc;

use agent_surface::registry::{Mounted, Registry};
use agent_surface::schema::{Issue, MAX_ISSUES};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Map, Value};

/// Cases of the quick variants.
pub(crate) const QUICK: u32 = 256;

/// Cases of the ignored variants: `PROPTEST_CASES`, else 100 000.
pub(crate) fn full() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(100_000)
}

/// Mounts the devices example's console on `registry` over a fresh demo
/// backend: the filter bar, the table with its reference to
/// `domain:devices.disable`, the drawer and the navigation — every kind of
/// schema an application's surface has (enums, optional and nullable
/// fields, nested lists, bounds). Dropping the handles unmounts.
pub(crate) fn mount_console(registry: &Registry) -> Vec<Mounted> {
    let console = devices::Console::new(Arc::new(devices::Backend::demo()));
    devices::mount_console(registry, &console).unwrap()
}

/// Runs `test` over `cases` values of `strategy`; a failure panics with the
/// shrunk counterexample.
pub(crate) fn check<S: Strategy>(
    cases: u32,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) {
    let mut runner = TestRunner::new(Config {
        cases,
        ..Config::default()
    });
    if let Err(failure) = runner.run(&strategy, test) {
        panic!("{failure}");
    }
}

/// Any JSON value: every kind of number, strings with escapes, control
/// characters, astral and high-BMP characters, nested arrays and objects.
pub(crate) fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
        "[ -~é\u{0}-\u{1f}\u{7f}\u{2028}\u{1f600}\u{ff21}\u{e000}]{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// An object key: short, sometimes with characters whose UTF-8 and UTF-16
/// orders differ, sometimes with controls, `~` and `/`.
pub(crate) fn key() -> impl Strategy<Value = String> {
    "[a-c\u{ff21}\u{1f600}\u{e000}~/\u{1}\n]{0,4}"
}

/// Issues are bounded and their paths are clean JSON pointers.
pub(crate) fn bounded(issues: &[Issue]) -> Result<(), TestCaseError> {
    prop_assert!(issues.len() <= MAX_ISSUES + 1, "{} issues", issues.len());
    for issue in issues {
        let path = issue.path();
        prop_assert!(path.is_empty() || path.starts_with('/'), "{}", path);
        prop_assert!(!path.chars().any(char::is_control), "{:?}", path);
        for segment in path.split('/').skip(1) {
            // 64 characters at most, each escape two.
            prop_assert!(segment.chars().count() <= 128, "{:?}", segment);
        }
        prop_assert!(!issue.message().is_empty());
    }
    Ok(())
}
