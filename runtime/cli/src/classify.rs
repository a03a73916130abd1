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

use serde_json::Value;

use crate::artifact;
use crate::finding::{Class, Finding};
use crate::gates_diff::{claim_change, internal_change, policy_changes, ranked, rule_change};
use crate::surface::{self, Row};

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
    use serde_json::json;

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
