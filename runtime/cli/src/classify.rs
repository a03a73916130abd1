//! Drift between two artifacts, classified on their structured content
//! (never on a text diff):
//! - **widening**: a new declaration or capability, a removed policy, a
//!   reduced confirmation, a lower effect;
//! - **narrowing**: a removed declaration or capability, an added policy, a
//!   stronger confirmation or effect;
//! - schemas by what they let through (see `schema_diff`); availability
//!   (`enabled`, a `when`, a precondition) — removing a rule is widening;
//!   capabilities under `#[cfg]`, references and what the source shows
//!   beyond the build (see `reach_diff`);
//! - **neutral**: everything else — descriptions, meta, moves
//!   (`rustType`), other fields.

use std::collections::BTreeSet;

use agent_surface::canonical::canonical_json;
use serde_json::{Value, json};

use crate::args::FailOn;
use crate::artifact;
use crate::surface::{self, Row};

/// The class of a change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Class {
    /// The agent can reach more, or with fewer gates.
    Widening,
    /// The agent can reach less, or with more gates.
    Narrowing,
    /// Neither: wording, schemas, metadata, moves.
    Neutral,
}

impl Class {
    /// The class as a word.
    pub(crate) fn word(self) -> &'static str {
        match self {
            Class::Widening => "widening",
            Class::Narrowing => "narrowing",
            Class::Neutral => "neutral",
        }
    }

    /// Whether `--policy` selects this class to fail.
    pub(crate) fn fails(self, fail_on: FailOn) -> bool {
        match fail_on {
            FailOn::All => true,
            FailOn::Widening => self == Class::Widening,
            FailOn::Narrowing => self == Class::Narrowing,
            FailOn::Neutral => self == Class::Neutral,
            FailOn::None => false,
        }
    }
}

/// One classified change.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Finding {
    /// Its class.
    pub(crate) class: Class,
    /// What changed: a capability id or a declaration key.
    pub(crate) subject: String,
    /// How, in words.
    pub(crate) change: String,
}

impl Finding {
    pub(crate) fn new(class: Class, subject: &str, change: String) -> Finding {
        Finding {
            class,
            subject: subject.to_owned(),
            change,
        }
    }

    /// The finding as JSON.
    pub(crate) fn to_json(&self, fail_on: Option<FailOn>) -> Value {
        let mut value = json!({
            "class": self.class.word(),
            "subject": self.subject,
            "change": self.change,
        });
        if let (Some(fail_on), Some(object)) = (fail_on, value.as_object_mut()) {
            object.insert("fails".into(), self.class.fails(fail_on).into());
        }
        value
    }
}

/// Keys compared structurally or derived from others: never a neutral row.
const STRUCTURED: [&str; 19] = [
    "audit",
    "idempotent",
    "reversible",
    "internalDigest",
    "effect",
    "confirmation",
    "policies",
    "observations",
    "actions",
    "capabilityHash",
    "declarationHash",
    "crate",
    "inputSchema",
    "outputSchema",
    "enabled",
    "conditional",
    "precondition",
    "gated",
    "references",
];

/// Internal metadata, seen only through its digest: policies read it
/// (`tenant_boundary` reads `tenant`), and the gate cannot tell which way
/// a change goes, so any change is widening.
fn internal_change(subject: &str, before: &Value, after: &Value, out: &mut Vec<Finding>) {
    if before.get("internalDigest") != after.get("internalDigest") {
        let change = "internal metadata changed (policies read it; review the source)".to_owned();
        out.push(Finding::new(Class::Widening, subject, change));
    }
}

/// A claim that makes an agent bolder: `idempotent` tells it a failed call
/// may be repeated, `reversible` that it can be undone. Making one is
/// widening; withdrawing it narrowing.
fn claim_change(subject: &str, what: &str, before: &Value, after: &Value, out: &mut Vec<Finding>) {
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

fn schema_changes(subject: &str, key: &str, before: &Value, after: &Value, out: &mut Vec<Finding>) {
    let null = Value::Null;
    let (b, a) = (
        before.get(key).unwrap_or(&null),
        after.get(key).unwrap_or(&null),
    );
    if b == a {
        return;
    }
    let output = key == "outputSchema";
    for (class, line) in crate::schema_diff::changes(b, a) {
        // What the agent may send is reach; what it is sent back is not.
        let class = if output { Class::Neutral } else { class };
        out.push(Finding::new(class, subject, format!("{key} {line}")));
    }
}

fn neutral_fields(subject: &str, before: &Value, after: &Value, out: &mut Vec<Finding>) {
    let empty = serde_json::Map::new();
    let before = before.as_object().unwrap_or(&empty);
    let after = after.as_object().unwrap_or(&empty);
    let keys: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    for key in keys {
        if STRUCTURED.contains(&key.as_str()) || before.get(key) == after.get(key) {
            continue;
        }
        let change = match (key.as_str(), before.get(key), after.get(key)) {
            ("rustType", Some(from), Some(to)) => format!(
                "moved from {} to {}",
                from.as_str().unwrap_or_default(),
                to.as_str().unwrap_or_default()
            ),
            (_, None, Some(_)) => format!("{key} added"),
            (_, Some(_), None) => format!("{key} removed"),
            _ => format!("{key} changed"),
        };
        out.push(Finding::new(Class::Neutral, subject, change));
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
fn ranked(
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

fn capability_changes(before: &Row<'_>, after: &Row<'_>, out: &mut Vec<Finding>) {
    let start = out.len();
    let subject = after.id.as_str();
    ranked(
        subject,
        "effect",
        (&before.effect, &after.effect),
        surface::effect_rank,
        out,
    );
    ranked(
        subject,
        "confirmation",
        (&before.confirmation, &after.confirmation),
        surface::confirmation_rank,
        out,
    );
    ranked(
        subject,
        "audit",
        (
            surface::text(before.value, "audit"),
            surface::text(after.value, "audit"),
        ),
        surface::audit_rank,
        out,
    );
    policy_changes(subject, before.value, after.value, out);
    schema_changes(subject, "inputSchema", before.value, after.value, out);
    schema_changes(subject, "outputSchema", before.value, after.value, out);
    rule_change(subject, "conditional", before.value, after.value, out);
    internal_change(subject, before.value, after.value, out);
    claim_change(subject, "idempotent", before.value, after.value, out);
    claim_change(subject, "reversible", before.value, after.value, out);
    rule_change(subject, "precondition", before.value, after.value, out);
    neutral_fields(subject, before.value, after.value, out);
    let hash = |row: &Row<'_>| {
        surface::text(row.value, "capabilityHash").to_owned()
            + surface::text(row.value, "declarationHash")
    };
    if out.len() == start && hash(before) != hash(after) {
        let change = "contract changed outside the catalog view (e.g. concurrency)".to_owned();
        out.push(Finding::new(Class::Neutral, subject, change));
    }
}

fn declaration_changes(key: &str, before: &Value, after: &Value, out: &mut Vec<Finding>) {
    let before_rows = surface::rows_of(key, before);
    let after_rows = surface::rows_of(key, after);
    if after.get("procedureId").is_none() {
        policy_changes(key, before, after, out);
        internal_change(key, before, after, out);
        neutral_fields(key, before, after, out);
        let enabled = |value: &Value| value.get("enabled") != Some(&Value::Bool(false));
        match (enabled(before), enabled(after)) {
            (false, true) => out.push(Finding::new(
                Class::Widening,
                key,
                "enabled at mount: false → true".into(),
            )),
            (true, false) => out.push(Finding::new(
                Class::Narrowing,
                key,
                "enabled at mount: true → false".into(),
            )),
            _ => {}
        }
        crate::reach_diff::gated(before, after, out);
        crate::reach_diff::references(key, before, after, out);
    }
    for row in &after_rows {
        match before_rows
            .iter()
            .find(|b| b.id == row.id && b.kind == row.kind)
        {
            Some(old) => capability_changes(old, row, out),
            None => {
                let change = format!("new {} ({}, {})", row.kind, row.effect, row.confirmation);
                out.push(Finding::new(Class::Widening, &row.id, change));
            }
        }
    }
    for row in &before_rows {
        if !after_rows
            .iter()
            .any(|a| a.id == row.id && a.kind == row.kind)
        {
            let change = format!("{} removed", row.kind);
            out.push(Finding::new(Class::Narrowing, &row.id, change));
        }
    }
}

/// Every change from `before` to `after`, widening first, then narrowing,
/// then neutral, each sorted by subject.
pub(crate) fn diff(before: &Value, after: &Value) -> Vec<Finding> {
    let old = artifact::keyed(before);
    let new = artifact::keyed(after);
    let mut out = Vec::new();
    for (key, declaration) in &new {
        match old.iter().find(|(k, _)| k == key) {
            Some((_, previous)) => declaration_changes(key, previous, declaration, &mut out),
            None => {
                out.push(Finding::new(Class::Widening, key, "new declaration".into()));
                for row in surface::rows_of(key, declaration) {
                    let change = format!("new {} ({}, {})", row.kind, row.effect, row.confirmation);
                    out.push(Finding::new(Class::Widening, &row.id, change));
                }
            }
        }
    }
    for (key, declaration) in &old {
        if !new.iter().any(|(k, _)| k == key) {
            out.push(Finding::new(
                Class::Narrowing,
                key,
                "declaration removed".into(),
            ));
            for row in surface::rows_of(key, declaration) {
                let change = format!("{} removed", row.kind);
                out.push(Finding::new(Class::Narrowing, &row.id, change));
            }
        }
    }
    crate::reach_diff::outside_build(before, after, &mut out);
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::indexing_slicing, clippy::unwrap_used)] // test code

    use super::*;

    fn artifact(effect: &str, confirmation: &str, policies: &[&str]) -> Value {
        json!({
            "format": artifact::FORMAT,
            "components": [],
            "procedures": [{
                "procedureId": "domain:fleet.wipe",
                "description": "Wipe devices.",
                "effect": effect,
                "confirmation": confirmation,
                "policies": policies,
                "rustType": "fleet::Wipe",
            }],
        })
    }

    fn classes(before: &Value, after: &Value) -> Vec<(Class, String)> {
        diff(before, after)
            .into_iter()
            .map(|f| (f.class, f.change))
            .collect()
    }

    #[test]
    fn effect_confirmation_and_policy_changes_are_classified_structurally() {
        let base = artifact("destructive", "required", &["audited"]);
        let lower = artifact("server-mutation", "required", &["audited"]);
        assert_eq!(
            classes(&base, &lower),
            [(
                Class::Widening,
                "effect lowered: destructive → server-mutation".to_owned()
            )]
        );
        assert_eq!(classes(&lower, &base)[0].0, Class::Narrowing);
        let unconfirmed = artifact("destructive", "optional", &[]);
        let found = classes(&base, &unconfirmed);
        assert!(found.contains(&(
            Class::Widening,
            "confirmation lowered: required → optional".to_owned()
        )));
        assert!(found.contains(&(Class::Widening, "policy audited removed".to_owned())));
        assert!(classes(&base, &base).is_empty());
    }

    #[test]
    fn a_move_is_neutral_and_unknown_values_count_as_widening() {
        let base = artifact("destructive", "required", &[]);
        let mut moved = base.clone();
        moved["procedures"][0]["rustType"] = json!("fleet::ops::Wipe");
        assert_eq!(
            classes(&base, &moved),
            [(
                Class::Neutral,
                "moved from fleet::Wipe to fleet::ops::Wipe".to_owned()
            )]
        );
        let odd = artifact("teleport", "required", &[]);
        assert_eq!(classes(&base, &odd)[0].0, Class::Widening);
    }
}
