//! The elementary comparisons of what gates a capability, shared by the
//! declaration diff (`classify`) and the reach diff (`reach_diff`):
//! policies by identity, availability rules, claims, internal metadata and
//! ranked values (effects, confirmation, audit levels).

use agent_surface::canonical::canonical_json;
use serde_json::Value;

use crate::finding::{Class, Finding};
use crate::surface;

/// Internal metadata, seen only through its digest: policies read it
/// (`tenant_boundary` reads `tenant`), and the gate cannot tell which way
/// a change goes, so any change is widening.
pub(crate) fn internal_change(
    subject: &str,
    before: &Value,
    after: &Value,
    out: &mut Vec<Finding>,
) {
    if before.get("internalDigest") != after.get("internalDigest") {
        let change = "internal metadata changed (policies read it; review the source)".to_owned();
        out.push(Finding::new(Class::Widening, subject, change));
    }
}

/// A claim that makes an agent bolder: `idempotent` tells it a failed call
/// may be repeated, `reversible` that it can be undone. Making one is
/// widening; withdrawing it narrowing.
pub(crate) fn claim_change(
    subject: &str,
    what: &str,
    before: &Value,
    after: &Value,
    out: &mut Vec<Finding>,
) {
    match (
        before.get(what).and_then(Value::as_bool),
        after.get(what).and_then(Value::as_bool),
    ) {
        (Some(false), Some(true)) => {
            out.push(Finding::new(
                Class::Widening,
                subject,
                format!("now {what}: false → true"),
            ));
        }
        (Some(true), Some(false)) => {
            out.push(Finding::new(
                Class::Narrowing,
                subject,
                format!("no longer {what}: true → false"),
            ));
        }
        _ => {}
    }
}

/// A rule that gates availability: removing it is widening.
pub(crate) fn rule_change(
    subject: &str,
    what: &str,
    before: &Value,
    after: &Value,
    out: &mut Vec<Finding>,
) {
    let on = |value: &Value| value.get(what) == Some(&Value::Bool(true));
    match (on(before), on(after)) {
        (true, false) => out.push(Finding::new(
            Class::Widening,
            subject,
            format!("{what} rule removed"),
        )),
        (false, true) => out.push(Finding::new(
            Class::Narrowing,
            subject,
            format!("{what} rule added"),
        )),
        _ => {}
    }
}

/// Policies compared by their full identity (never by the label shown):
/// a removed one is widening, an added one narrowing.
pub(crate) fn policy_changes(subject: &str, before: &Value, after: &Value, out: &mut Vec<Finding>) {
    let identities = |value: &Value| -> Vec<(String, String)> {
        value
            .get("policies")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|policy| (canonical_json(policy), surface::policy_label(policy)))
            .collect()
    };
    let (before, after) = (identities(before), identities(after));
    let keys = |list: &[(String, String)]| list.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
    let (before_keys, after_keys) = (keys(&before), keys(&after));
    for (key, label) in &before {
        if !after_keys.contains(key) {
            let change = format!("policy {label} removed");
            out.push(Finding::new(Class::Widening, subject, change));
        }
    }
    for (key, label) in &after {
        if !before_keys.contains(key) {
            let change = format!("policy {label} added");
            out.push(Finding::new(Class::Narrowing, subject, change));
        }
    }
}

/// Compares two ordered values; lower after is widening.
pub(crate) fn ranked(
    subject: &str,
    what: &str,
    (before, after): (&str, &str),
    rank: fn(&str) -> Option<usize>,
    out: &mut Vec<Finding>,
) {
    if before == after {
        return;
    }
    let class = match (rank(before), rank(after)) {
        (Some(b), Some(a)) if a > b => Class::Narrowing,
        _ => Class::Widening,
    };
    let verb = if class == Class::Widening {
        "lowered"
    } else {
        "raised"
    };
    let change = format!("{what} {verb}: {before} → {after}");
    out.push(Finding::new(class, subject, change));
}
