//! Drift in reach declared beside the capabilities: capabilities under
//! `#[cfg]`, procedure references and their least gating, and what the
//! source shows beyond the build (declarations under `#[cfg]`, link-level
//! code).

use serde_json::Value;

use crate::finding::{Class, Finding};
use crate::gates_diff::{policy_changes, rule_change};
use crate::surface;

fn list<'a>(value: &'a Value, key: &str) -> &'a [Value] {
    value
        .get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn where_built(gated: &Value) -> &'static str {
    match gated.get("inBuild") {
        Some(Value::Bool(true)) => "in this build",
        Some(Value::Bool(false)) => "not in this build: its contract is not reviewed",
        _ => "which this build may not include: review the source",
    }
}

/// Capabilities under `#[cfg]` of one component.
pub(crate) fn gated(before: &Value, after: &Value, out: &mut Vec<Finding>) {
    let (b, a) = (list(before, "gated"), list(after, "gated"));
    let id = |v: &Value| surface::text(v, "capabilityId").to_owned();
    for entry in a {
        let subject = id(entry);
        let cfg = surface::text(entry, "cfg");
        match b.iter().find(|old| id(old) == subject) {
            None => out.push(Finding::new(
                Class::Widening,
                &subject,
                format!(
                    "new {} under cfg({cfg}), {}",
                    surface::text(entry, "kind"),
                    where_built(entry)
                ),
            )),
            Some(old) if surface::text(old, "cfg") != cfg => out.push(Finding::new(
                Class::Widening,
                &subject,
                format!(
                    "condition changed: cfg({}) → cfg({cfg})",
                    surface::text(old, "cfg")
                ),
            )),
            // Outside the build, only its text shows that it changed.
            Some(old)
                if entry.get("inBuild") != Some(&Value::Bool(true))
                    && surface::text(old, "digest") != surface::text(entry, "digest") =>
            {
                out.push(Finding::new(
                    Class::Widening,
                    &subject,
                    format!(
                        "changed under cfg({cfg}), not in this build: its contract is not \
                         reviewed; review the source"
                    ),
                ));
            }
            Some(_) => {}
        }
    }
    for entry in b
        .iter()
        .filter(|old| !a.iter().any(|new| id(new) == id(old)))
    {
        let change = format!("no longer under cfg({})", surface::text(entry, "cfg"));
        out.push(Finding::new(Class::Neutral, &id(entry), change));
    }
}

fn locked(reference: &Value) -> Vec<String> {
    list(reference, "boundFields")
        .iter()
        .filter(|field| field.get("locked") == Some(&Value::Bool(true)))
        .map(|field| surface::text(field, "path").to_owned())
        .collect()
}

fn describe(reference: &Value) -> String {
    let mut parts = Vec::new();
    let locked = locked(reference);
    if !locked.is_empty() {
        parts.push(format!("locked {}", locked.join(", ")));
    }
    if reference.get("conditional") == Some(&Value::Bool(true)) {
        parts.push("when".to_owned());
    }
    let policies = surface::policies(reference);
    if !policies.is_empty() {
        parts.push(policies.join(", "));
    }
    if parts.is_empty() {
        "no gating of its own".to_owned()
    } else {
        parts.join("; ")
    }
}

/// References declared by one component.
pub(crate) fn references(key: &str, before: &Value, after: &Value, out: &mut Vec<Finding>) {
    let (b, a) = (list(before, "references"), list(after, "references"));
    let id = |v: &Value| surface::text(v, "procedureId").to_owned();
    for entry in a {
        let procedure = id(entry);
        let subject = format!("{key} → {procedure}");
        let Some(old) = b.iter().find(|old| id(old) == procedure) else {
            let change = format!("new reference ({})", describe(entry));
            out.push(Finding::new(Class::Widening, &subject, change));
            continue;
        };
        let (was, now) = (locked(old), locked(entry));
        for field in was.iter().filter(|f| !now.contains(f)) {
            let change = format!("{field} no longer locked: the agent may supply it");
            out.push(Finding::new(Class::Widening, &subject, change));
        }
        for field in now.iter().filter(|f| !was.contains(f)) {
            out.push(Finding::new(
                Class::Narrowing,
                &subject,
                format!("{field} locked"),
            ));
        }
        rule_change(&subject, "conditional", old, entry, out);
        let rank = |v: &Value| surface::confirmation_rank(surface::text(v, "confirmation"));
        match (rank(old), rank(entry)) {
            (Some(x), y) if y.is_none_or(|y| y < x) => out.push(Finding::new(
                Class::Widening,
                &subject,
                "least confirmation lowered".into(),
            )),
            (x, Some(y)) if x.is_none_or(|x| y > x) => out.push(Finding::new(
                Class::Narrowing,
                &subject,
                "least confirmation raised".into(),
            )),
            _ => {}
        }
        policy_changes(&subject, old, entry, out);
    }
    for entry in b
        .iter()
        .filter(|old| !a.iter().any(|new| id(new) == id(old)))
    {
        let subject = format!("{key} → {}", id(entry));
        out.push(Finding::new(
            Class::Narrowing,
            &subject,
            "reference removed".into(),
        ));
    }
}

/// Declarations under `#[cfg]` the source shows, and link-level code.
pub(crate) fn outside_build(before: &Value, after: &Value, out: &mut Vec<Finding>) {
    let (b, a) = (
        list(before, "gatedDeclarations"),
        list(after, "gatedDeclarations"),
    );
    let key = |v: &Value| surface::text(v, "declaration").to_owned();
    let cfg = |v: &Value| surface::text(v, "cfg").to_owned();
    for entry in a {
        let subject = key(entry);
        let condition = cfg(entry);
        // One declaration may be written several times, under exclusive
        // conditions: each (declaration, condition) is its own entry.
        let old = b
            .iter()
            .find(|old| key(old) == subject && cfg(old) == condition);
        let change = match old {
            None => Some(format!(
                "declared under cfg({condition}), {}",
                where_built(entry)
            )),
            Some(old) if old.get("inBuild") != entry.get("inBuild") => Some(format!(
                "under cfg({condition}), now {}",
                where_built(entry)
            )),
            // Outside the build, only its text shows that it changed.
            Some(old)
                if entry.get("inBuild") != Some(&Value::Bool(true))
                    && surface::text(old, "digest") != surface::text(entry, "digest") =>
            {
                Some(format!(
                    "changed under cfg({condition}), not in this build: its contract is not \
                     reviewed; review the source"
                ))
            }
            Some(_) => None,
        };
        if let Some(change) = change {
            out.push(Finding::new(Class::Widening, &subject, change));
        }
    }
    let (b, a) = (list(before, "linkLevel"), list(after, "linkLevel"));
    for entry in a.iter().filter(|line| !b.contains(line)) {
        let line = entry.as_str().unwrap_or_default();
        // What generators run or read: what they generate from it is not
        // in this build's catalog when it declares reach only in others.
        let generated = crate::generated_reach::is_generator_input(line);
        let change = if generated {
            "changed what a generator runs or reads: what it generates may declare reach this \
             build does not show; review the change and what the generator makes of it"
        } else {
            "new code at link level: it runs outside what the gate checks"
        };
        out.push(Finding::new(Class::Widening, line, change.to_owned()));
    }
}
