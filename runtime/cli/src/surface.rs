//! The surface as rows: every capability of an artifact with its kind,
//! effect, reach, confirmation and effective policies, and the orders that
//! make effects and confirmations comparable.

use serde_json::Value;

use crate::artifact;

/// The effects, weakest first.
const EFFECTS: [&str; 7] = [
    "read",
    "local-state",
    "navigation",
    "server-query",
    "server-mutation",
    "external-side-effect",
    "destructive",
];

/// The audit levels, least recorded first.
const AUDITS: [&str; 3] = ["none", "metadata", "full"];

/// The rank of an audit level (`None` when unknown).
pub(crate) fn audit_rank(audit: &str) -> Option<usize> {
    AUDITS.iter().position(|a| *a == audit)
}

/// The confirmation postures, weakest first.
const CONFIRMATIONS: [&str; 3] = ["never", "optional", "required"];

/// The rank of an effect (`None` when unknown).
pub(crate) fn effect_rank(effect: &str) -> Option<usize> {
    EFFECTS.iter().position(|e| *e == effect)
}

/// The rank of a confirmation posture (`None` when unknown).
pub(crate) fn confirmation_rank(confirmation: &str) -> Option<usize> {
    CONFIRMATIONS.iter().position(|c| *c == confirmation)
}

/// How far an effect reaches, as a word: read and local state are `low`;
/// navigation and server queries `medium`; server mutations, external side
/// effects and destructive effects `high`.
pub(crate) fn reach(effect: &str) -> &'static str {
    match effect {
        "read" | "local-state" => "low",
        "navigation" | "server-query" => "medium",
        _ => "high",
    }
}

/// One capability as a row.
#[derive(Clone, Debug)]
pub(crate) struct Row<'a> {
    /// The declaration key (`component <type>`, `procedure <id>`).
    pub(crate) declaration: String,
    /// The capability id.
    pub(crate) id: String,
    /// `observation`, `action` or `procedure`.
    pub(crate) kind: &'static str,
    /// The declared effect (`read` for observations).
    pub(crate) effect: String,
    /// The confirmation posture (`never` for observations).
    pub(crate) confirmation: String,
    /// The component's policies, then the capability's own.
    pub(crate) policies: Vec<String>,
    /// The description.
    pub(crate) description: String,
    /// The serialized capability.
    pub(crate) value: &'a Value,
}

impl Row<'_> {
    /// Whether calling it is gated: a confirmation is asked or a policy
    /// decides.
    pub(crate) fn gated(&self) -> bool {
        self.confirmation != "never" || !self.policies.is_empty()
    }
}

/// A string field.
pub(crate) fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// A policy identity as a reviewer reads it: a built-in by its name, with
/// every parameter its name does not show and that is not the default
/// (`authenticated [key=session]`); a custom policy by its name and Rust
/// type, so a look-alike never reads as the built-in it imitates. Labels
/// are for reading: policies are compared by their full identity.
pub(crate) fn policy_label(policy: &Value) -> String {
    let Some(object) = policy.as_object() else {
        return policy
            .as_str()
            .map_or_else(|| policy.to_string(), str::to_owned);
    };
    let name = text(policy, "name");
    let kind = text(policy, "policy");
    if kind == "custom" {
        let declared = declared_of(object);
        let declared = if declared.is_empty() {
            String::new()
        } else {
            format!(" [{}]", declared.join(", "))
        };
        return format!("{name} (custom {}){declared}", text(policy, "type"));
    }
    // The parameters a built-in's name is made of.
    let in_name: &[&str] = match kind {
        "rateLimit" => &["limit", "windowMs"],
        "hasPermission" => &["permission"],
        "environment" => &["allowed"],
        _ => &[],
    };
    let default = |key: &str, value: &Value| {
        matches!(
            (kind, key, value.as_str()),
            ("authenticated", "key", Some("user"))
                | (_, "check" | "tenant" | "summary", Some("default"))
                | (_, "when", Some("always"))
                | ("audit", "level", Some("metadata"))
        )
    };
    let mut hidden: Vec<String> = object
        .iter()
        .filter(|(key, value)| {
            !matches!(key.as_str(), "policy" | "name" | "declared")
                && !in_name.contains(&key.as_str())
                && !default(key, value)
        })
        .map(|(key, value)| {
            let value = value
                .as_str()
                .map_or_else(|| value.to_string(), str::to_owned);
            format!("{key}={value}")
        })
        .collect();
    hidden.extend(declared_of(object));
    if hidden.is_empty() {
        name.to_owned()
    } else {
        format!("{name} [{}]", hidden.join(", "))
    }
}

/// What a policy's declaring expression says that its parameters cannot:
/// the build conditions it reads, the digest of its tokens (a closure's
/// body) and of the source items it reads.
fn declared_of(object: &serde_json::Map<String, Value>) -> Vec<String> {
    let mut hidden = Vec::new();
    let Some(declared) = object.get("declared") else {
        return hidden;
    };
    // Its own `cfg!`s and those of the items it reads.
    let mut conditions: Vec<String> = [
        declared.get("conditions"),
        declared
            .get("readsSource")
            .and_then(|r| r.get("conditions")),
    ]
    .into_iter()
    .flatten()
    .filter_map(Value::as_array)
    .flatten()
    .filter_map(Value::as_str)
    .map(|condition| format!("cfg!({condition})"))
    .collect();
    conditions.sort();
    conditions.dedup();
    if !conditions.is_empty() {
        hidden.push(format!("depends on {}", conditions.join(" and ")));
    }
    hidden.push(format!("declared as {}", text(declared, "source")));
    // The items of the source it reads (a predicate's body, a const,
    // a custom policy's impls), as one digest.
    if let Some(read) = declared.get("readsSource") {
        let names: Vec<&str> = read
            .get("names")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let shown = if names.is_empty() {
            "what it reads".to_owned()
        } else {
            names.join(", ")
        };
        // Shortened for reading: policies are compared by the whole digest.
        let digest = text(read, "digest");
        let digest = digest.get(..16).unwrap_or(digest);
        let partial = if read.get("partial") == Some(&Value::Bool(true)) {
            " (partially: too much to follow whole)"
        } else {
            ""
        };
        hidden.push(format!("reading {shown} as {digest}{partial}"));
    }
    hidden
}

/// A list of policies, as labels (see [`policy_label`]).
pub(crate) fn policies(value: &Value) -> Vec<String> {
    value
        .get("policies")
        .and_then(Value::as_array)
        .map(|items| items.iter().map(policy_label).collect())
        .unwrap_or_default()
}

/// The capabilities of one declaration, in authoring order (observations,
/// then actions; a procedure is its own single capability).
pub(crate) fn rows_of<'a>(key: &str, declaration: &'a Value) -> Vec<Row<'a>> {
    if declaration.get("procedureId").is_some() {
        let own = policies(declaration);
        return vec![Row {
            declaration: key.to_owned(),
            id: text(declaration, "procedureId").to_owned(),
            kind: "procedure",
            effect: text(declaration, "effect").to_owned(),
            confirmation: text(declaration, "confirmation").to_owned(),
            policies: own,
            description: text(declaration, "description").to_owned(),
            value: declaration,
        }];
    }
    let component_policies = policies(declaration);
    let mut rows = Vec::new();
    for (list, kind) in [("observations", "observation"), ("actions", "action")] {
        let items = declaration.get(list).and_then(Value::as_array);
        for item in items.into_iter().flatten() {
            let own = policies(item);
            let effect = match text(item, "effect") {
                "" => "read",
                effect => effect,
            };
            let confirmation = match text(item, "confirmation") {
                "" => "never",
                confirmation => confirmation,
            };
            rows.push(Row {
                declaration: key.to_owned(),
                id: text(item, "capabilityId").to_owned(),
                kind,
                effect: effect.to_owned(),
                confirmation: confirmation.to_owned(),
                policies: component_policies.iter().chain(&own).cloned().collect(),
                description: text(item, "description").to_owned(),
                value: item,
            });
        }
    }
    rows
}

/// Every capability of an artifact, declaration by declaration.
pub(crate) fn rows(artifact: &Value) -> Vec<Row<'_>> {
    artifact::keyed(artifact)
        .into_iter()
        .flat_map(|(key, declaration)| rows_of(&key, declaration))
        .collect()
}
