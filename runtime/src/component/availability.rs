//! Availability: whether a capability (or a procedure reference) can be
//! called right now, and the reason shown when it cannot.

use std::borrow::Cow;

/// The reason shown when a component is disabled.
pub(crate) const COMPONENT_DISABLED: &str = "component-disabled";
/// The reason shown when `when()` panicked.
pub(crate) const WHEN_ERROR: &str = "when-error";
/// The reason shown when `when()` is false and the author gave none.
pub(crate) const NOT_AVAILABLE_NOW: &str = "This capability is not available right now.";

/// Whether a capability is available right now, and why not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Availability {
    Available,
    Unavailable(Cow<'static, str>),
}
