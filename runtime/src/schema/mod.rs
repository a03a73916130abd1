//! JSON Schemas at the agent boundary. Use it for the supported subset
//! `#[agent_schema]` checks against, for schemas of types you implement by
//! hand, and to check values against a schema.
//!
//! Everything that crosses the boundary is described by a JSON Schema in a
//! small subset of draft 2020-12 that model tool-calling handles reliably:
//!
//! | group | keywords |
//! |---|---|
//! | any | `type` (a name or an array of names), `enum`, `const` |
//! | objects | `properties`, `required`, `additionalProperties` (boolean only) |
//! | arrays | `items` (one schema), `minItems`, `maxItems`, `uniqueItems` |
//! | strings | `minLength`, `maxLength`, `pattern`, `format` ∈ {`date-time`, `date`, `uuid`, `email`, `uri`} |
//! | numbers | `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`, `multipleOf` |
//! | unions | `anyOf` |
//! | annotations | `description`, `default`, `examples`, `title`, `deprecated` |
//! | references | `$defs` (at the root) and internal `$ref: "#/$defs/…"` |
//!
//! plus a nesting depth of at most 8 and at most 16 kB serialized.
//!
//! Schemas come from Rust types through `schemars` ([`generate`]), are
//! [`normalize`]d into the subset where that keeps their meaning, checked by
//! [`check_subset`], and [`compile`]d once per contract into a validator that
//! reports every issue of an input with its JSON pointer, never echoing values.
//!
//! # Example
//! ```
//! use agent_surface::schema;
//! use serde_json::json;
//!
//! let raw = json!({
//!     "type": "object",
//!     "properties": {"ids": {"type": "array", "items": {"type": "string"}, "minItems": 1},
//!                    "n": {"type": "integer", "format": "uint8", "minimum": 0, "maximum": 255}},
//!     "required": ["ids"],
//!     "additionalProperties": false
//! });
//! let schema = schema::normalize(raw)?;            // `format: uint8` becomes bounds only
//! schema::check_subset(&schema, &schema::SchemaLimits::default())?;
//! let validator = schema::compile(&schema)?;
//! let issues = validator.validate(&json!({"ids": [], "n": 300, "extra": true}));
//! let paths: Vec<_> = issues.iter().map(|i| i.path()).collect();
//! assert_eq!(paths, ["/extra", "/ids", "/n"]);
//! # Ok::<(), schema::SchemaError>(())
//! ```

pub(crate) mod bounded;
mod compile;
mod ecosystem;
pub(crate) mod extent;
mod external;
mod format;
mod normalize;
mod one_of;
mod read;
mod subset;
mod types;
mod validate;
mod wire_names;

use std::borrow::Cow;
use std::fmt;

use schemars::generate::SchemaSettings;
use serde_json::Value;

pub use bounded::Bounded;
pub use compile::{CompiledSchema, compile};
pub use ecosystem::formats;
pub use external::{Supplied, SuppliedSchema, check_supplied};
pub use normalize::{normalize, shape};
pub use subset::{check_subset, measure};
pub use types::{AgentInput, AgentOutput, AgentSchema, MapValue, SameElement, SameField};
pub use validate::{Issues, key_pointer};
pub use validate::{MAX_ISSUES, MAX_VALUE_DEPTH};
#[doc(hidden)]
pub use wire_names::WireNames;

/// Size and depth caps of a schema: [`SchemaLimits::default`] and a
/// chainable setter per cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SchemaLimits {
    /// Maximum serialized size in bytes (default 16 384).
    pub max_bytes: usize,
    /// Maximum nesting depth of subschemas (default 8).
    pub max_depth: usize,
}

impl Default for SchemaLimits {
    fn default() -> Self {
        SchemaLimits {
            max_bytes: 16_384,
            max_depth: 8,
        }
    }
}

impl SchemaLimits {
    /// Sets the maximum serialized size in bytes.
    #[must_use]
    pub const fn max_bytes(mut self, max: usize) -> SchemaLimits {
        self.max_bytes = max;
        self
    }

    /// Sets the maximum nesting depth of subschemas.
    #[must_use]
    pub const fn max_depth(mut self, max: usize) -> SchemaLimits {
        self.max_depth = max;
        self
    }
}

/// A schema outside the supported subset: the keyword at fault, where it is
/// (a JSON pointer into the schema), and what to do instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaError {
    keyword: String,
    pointer: String,
    message: String,
}

impl SchemaError {
    pub(crate) fn new(
        keyword: impl Into<String>,
        pointer: impl Into<String>,
        message: impl Into<String>,
    ) -> SchemaError {
        SchemaError {
            keyword: keyword.into(),
            pointer: pointer.into(),
            message: message.into(),
        }
    }

    /// The offending keyword (empty for whole-schema limits).
    pub fn keyword(&self) -> &str {
        &self.keyword
    }

    /// JSON pointer to the schema object holding the keyword (`""` is the root).
    pub fn pointer(&self) -> &str {
        &self.pointer
    }

    /// What is wrong and how to fix it.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.pointer.is_empty() {
            "the root"
        } else {
            &self.pointer
        };
        if self.keyword.is_empty() {
            write!(f, "at {at}: {}", self.message)
        } else {
            write!(f, "keyword `{}` at {at}: {}", self.keyword, self.message)
        }
    }
}

impl std::error::Error for SchemaError {}

/// One problem with an input value: where (JSON pointer) and what.
///
/// Messages describe the expectation and never repeat the offending value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issue {
    path: String,
    message: Cow<'static, str>,
}

impl Issue {
    /// An issue at `path`.
    pub fn new(path: impl Into<String>, message: impl Into<Cow<'static, str>>) -> Issue {
        Issue {
            path: path.into(),
            message: message.into(),
        }
    }

    /// JSON pointer to the offending value (`""` is the whole input).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// What is expected there.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// `{"path": …, "message": …}`, as in `INVALID_INPUT` details.
    pub fn to_json(&self) -> Value {
        let mut map = serde_json::Map::with_capacity(2);
        map.insert("path".to_owned(), Value::String(self.path.clone()));
        map.insert(
            "message".to_owned(),
            Value::String(self.message.to_string()),
        );
        Value::Object(map)
    }
}

impl fmt::Display for Issue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = if self.path.is_empty() {
            "(input)"
        } else {
            &self.path
        };
        write!(f, "{path}: {}", self.message)
    }
}

/// The raw schemars output for `T` (draft 2020-12, no `$schema`), before
/// normalization.
pub fn generate<T: schemars::JsonSchema + ?Sized>() -> Value {
    let mut settings = SchemaSettings::draft2020_12();
    settings.meta_schema = None;
    settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}

/// The agent-facing schema of `T`: generated, normalized and checked.
pub fn schema_for<T: schemars::JsonSchema + ?Sized>(
    limits: &SchemaLimits,
) -> Result<Value, SchemaError> {
    let schema = normalize(generate::<T>())?;
    check_subset(&schema, limits)?;
    Ok(schema)
}

/// The schema of an input with no fields: an object that accepts only `{}`.
pub fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object", "properties": {}, "additionalProperties": false})
}

/// Appends a JSON-pointer segment (`~` → `~0`, `/` → `~1`).
pub(crate) fn push_pointer(pointer: &str, segment: &str) -> String {
    let mut out = String::with_capacity(pointer.len() + segment.len() + 1);
    out.push_str(pointer);
    out.push('/');
    for c in segment.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => out.push(c),
        }
    }
    out
}
