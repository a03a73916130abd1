//! The vocabulary authored and checked contracts share: the functions
//! generated code supplies (schema generators, the input parser, the policy
//! chain), how actions share execution slots, where an unavailable reason
//! comes from, and where a component was authored.

use std::any::Any;

use serde_json::Value;

use crate::policy::PolicyRef;
use crate::schema::Issue;

/// A typed input after validation, ready for the handler (the concrete type
/// is the action's input type).
pub type TypedInput = Box<dyn Any + Send>;

/// Generates a raw schema (schemars output).
pub type SchemaFn = fn() -> Value;
/// Generates the raw output schema of a handler; `None` when it returns `()`.
pub type OutputSchemaFn = fn() -> Option<Value>;
/// Deserializes a validated input into its Rust type.
pub type ParseFn = fn(&Value) -> Result<TypedInput, Issue>;
/// Builds a fresh policy chain (one per registration).
pub type PoliciesFn = fn() -> Vec<PolicyRef>;

/// How invocations of an action share execution slots within one mounted
/// instance. Not visible to agents.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Concurrency {
    /// One FIFO queue per component instance, shared by its actions (default).
    #[default]
    Instance,
    /// One FIFO queue per capability.
    Capability,
    /// One FIFO queue shared by the instance's actions naming the same key.
    Key(&'static str),
    /// Up to `n` concurrent executions of this capability, then a FIFO queue.
    Parallel(u32),
}

/// How a capability explains that it is unavailable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReasonSource {
    /// No author-supplied reason (a generic one is used).
    None,
    /// A fixed sentence.
    Static(&'static str),
    /// A method of the component computes it from live state.
    Dynamic,
}

/// Where an authored item comes from, for diagnostics: [`Source::new`]
/// (generated code passes `module_path!()`, the type, `file!()` and
/// `line!()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Source {
    /// `module_path!()` of the impl block.
    pub module: &'static str,
    /// The Rust type the component is implemented on.
    pub rust_type: &'static str,
    /// `file!()`.
    pub file: &'static str,
    /// `line!()`.
    pub line: u32,
}

impl Source {
    /// The source at `file`:`line` of `rust_type` in `module`.
    pub const fn new(
        module: &'static str,
        rust_type: &'static str,
        file: &'static str,
        line: u32,
    ) -> Source {
        Source {
            module,
            rust_type,
            file,
            line,
        }
    }
}
