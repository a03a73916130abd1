//! Attribute names and keys, in one place, and how a helper attribute is
//! recognised by its name.

/// The capability helper attributes.
pub(crate) const OBSERVATION: &str = "observation";
pub(crate) const ACTION: &str = "action";

/// The helper attribute declaring a reference.
pub(crate) const REFERENCE: &str = "reference";

// Keys of `#[agent_component(...)]`.
pub(crate) const TYPE: &str = "type";
pub(crate) const DESCRIPTION: &str = "description";
pub(crate) const INSTANCE: &str = "instance";
pub(crate) const PRIORITY: &str = "priority";
pub(crate) const ORIGIN: &str = "origin";
pub(crate) const ENABLED: &str = "enabled";
pub(crate) const PARENT: &str = "parent";
pub(crate) const META: &str = "meta";
pub(crate) const INTERNAL: &str = "internal";
pub(crate) const POLICIES: &str = "policies";

pub(crate) const COMPONENT_KEYS: &[&str] = &[
    TYPE,
    DESCRIPTION,
    INSTANCE,
    PRIORITY,
    ORIGIN,
    ENABLED,
    PARENT,
    META,
    INTERNAL,
    POLICIES,
];

// Keys shared by `#[observation(...)]` and `#[action(...)]`.
pub(crate) const NAME: &str = "name";
pub(crate) const WHEN: &str = "when";
pub(crate) const UNAVAILABLE_REASON: &str = "unavailable_reason";
pub(crate) const TIMEOUT: &str = "timeout";

// Keys of `#[action(...)]` only.
pub(crate) const EFFECT: &str = "effect";
pub(crate) const IDEMPOTENT: &str = "idempotent";
pub(crate) const REVERSIBLE: &str = "reversible";
pub(crate) const CONFIRMATION: &str = "confirmation";
pub(crate) const AUDIT: &str = "audit";
pub(crate) const PRECONDITION: &str = "precondition";
pub(crate) const CONCURRENCY: &str = "concurrency";
pub(crate) const QUEUE_DEPTH: &str = "queue_depth";

pub(crate) const OBSERVATION_KEYS: &[&str] = &[
    NAME,
    DESCRIPTION,
    WHEN,
    UNAVAILABLE_REASON,
    TIMEOUT,
    META,
    INTERNAL,
    POLICIES,
];

pub(crate) const ACTION_KEYS: &[&str] = &[
    NAME,
    DESCRIPTION,
    EFFECT,
    IDEMPOTENT,
    REVERSIBLE,
    CONFIRMATION,
    AUDIT,
    WHEN,
    UNAVAILABLE_REASON,
    PRECONDITION,
    CONCURRENCY,
    QUEUE_DEPTH,
    TIMEOUT,
    META,
    INTERNAL,
    POLICIES,
];

// Keys of `#[agent_procedure(...)]` (with DESCRIPTION, EFFECT, CONFIRMATION,
// AUDIT, IDEMPOTENT and TIMEOUT).
pub(crate) const ID: &str = "id";
pub(crate) const OUTPUT: &str = "output";

pub(crate) const PROCEDURE_KEYS: &[&str] = &[
    ID,
    DESCRIPTION,
    EFFECT,
    CONFIRMATION,
    AUDIT,
    IDEMPOTENT,
    OUTPUT,
    TIMEOUT,
];

// Keys of `parent(...)`.
pub(crate) const PARENT_KEYS: &[&str] = &[TYPE, INSTANCE];

// Keys of `#[agent_schema(...)]`.
pub(crate) const SCHEMA_INPUT: &str = "input";
pub(crate) const SCHEMA_OUTPUT: &str = "output";
pub(crate) const ALLOW_UNKNOWN_FIELDS: &str = "allow_unknown_fields";
/// `#[agent_schema(unbounded)]`: the author leaves the type's strings and
/// lists to the registry's input limit.
pub(crate) const SCHEMA_UNBOUNDED: &str = "unbounded";
pub(crate) const SCHEMA_KEYS: &[&str] = &[
    SCHEMA_INPUT,
    SCHEMA_OUTPUT,
    ALLOW_UNKNOWN_FIELDS,
    SCHEMA_UNBOUNDED,
];

/// Whether `attr` is the helper attribute `name` (`#[name]` or `#[agent_surface::name]`).
pub(crate) fn is_helper(attr: &syn::Attribute, name: &str) -> bool {
    let path = attr.path();
    path.segments
        .last()
        .is_some_and(|segment| segment.ident == name)
        && (path.segments.len() == 1
            || path
                .segments
                .first()
                .is_some_and(|first| first.ident == "agent_surface"))
}
