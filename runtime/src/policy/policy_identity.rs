//! A policy's identity: what it is and how it is configured, as reviewers
//! compare it. Never the name a policy reports: a custom policy may call
//! itself anything, but its identity names its Rust type, so it can never
//! pass for a built-in.

use serde_json::{Map, Value, json};

/// The stable identity of one policy: a JSON object with `"policy"` (the
/// built-in's name, or `"custom"`), `"name"` (what it reports) and its
/// parameters; a custom policy's carries its Rust `"type"`.
///
/// Catalogs, contract hashes and the review gate compare policies by
/// identity, so swapping a built-in for a look-alike, or changing a
/// built-in's parameters, is a change the gate classifies.
///
/// ```
/// use agent_surface::policy::{identity, rate_limit, Policy};
/// use std::time::Duration;
///
/// let limit = rate_limit(10, Duration::from_secs(60));
/// let id = identity(&limit);
/// assert_eq!(id.as_json()["policy"], "rateLimit");
/// assert_eq!(id.as_json()["windowMs"], 60_000);
/// assert!(id.is_builtin());
///
/// /// A look-alike.
/// struct Fake;
/// impl Policy for Fake {
///     fn name(&self) -> &str { "rateLimit(10/60000ms)" }
/// }
/// let fake = identity(&Fake);
/// assert_eq!(fake.as_json()["policy"], "custom");
/// assert_ne!(fake, id);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyIdentity(Value);

impl PolicyIdentity {
    /// A built-in's identity: its name, the name it reports and its
    /// parameters (an object).
    pub(crate) fn builtin(policy: &str, name: &str, parameters: Value) -> PolicyIdentity {
        let mut object = Map::new();
        object.insert("policy".into(), policy.into());
        object.insert("name".into(), name.into());
        if let Value::Object(parameters) = parameters {
            object.extend(parameters);
        }
        PolicyIdentity(Value::Object(object))
    }

    /// A custom policy's identity: its Rust type and the name it reports.
    pub(crate) fn custom(rust_type: &str, name: &str) -> PolicyIdentity {
        PolicyIdentity(json!({ "policy": "custom", "type": rust_type, "name": name }))
    }

    /// The identity as JSON.
    pub fn as_json(&self) -> &Value {
        &self.0
    }

    /// Whether it is one of `agent_surface::policy`'s built-ins.
    pub fn is_builtin(&self) -> bool {
        self.0.get("policy").and_then(Value::as_str) != Some("custom")
    }

    /// How a reviewer reads it: a built-in by its name
    /// (`hasPermission(devices:write)`), a custom policy by its name and
    /// type (`betaOnly (custom app::BetaOnly)`).
    pub fn display(&self) -> String {
        let text = |key: &str| self.0.get(key).and_then(Value::as_str).unwrap_or_default();
        if self.is_builtin() {
            text("name").to_owned()
        } else {
            format!("{} (custom {})", text("name"), text("type"))
        }
    }

    /// The identity with `key` set to `value` (what a declaration adds).
    pub(crate) fn with(mut self, key: &str, value: Value) -> PolicyIdentity {
        if let Value::Object(object) = &mut self.0 {
            object.insert(key.to_owned(), value);
        }
        self
    }

    /// The identity as JSON, owned.
    pub fn into_json(self) -> Value {
        self.0
    }
}

/// Where a built-in took a host closure instead of its default behaviour.
pub(crate) fn supplied(custom: bool) -> &'static str {
    if custom { "custom" } else { "default" }
}

/// The token only this crate can name: it seals
/// [`Policy::__identity`](super::Policy), so no policy outside the crate
/// can claim another's identity.
pub(super) mod seal {
    /// Unnameable outside `agent_surface::policy` (this module is private).
    #[derive(Debug)]
    pub struct Token(pub(crate) ());
}
