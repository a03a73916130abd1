//! A refusal settled by the adapter itself, before a call reaches the
//! pipeline (an agent-chosen id over its bound, a wait the client gave up
//! on while another call still waits): the same result shape as the
//! pipeline's, with an invocation id, never deduplicated and never audited
//! (nothing ran).

use std::sync::Arc;

use crate::error::ErrorPayload;
use crate::invoke::InvocationResult;
use crate::registry::Registry;

/// The result of a call the adapter refused with `error`: named `name` (the
/// tool or capability the agent addressed), with `invocation_id` or a fresh
/// one, at the registry's current version.
///
/// ```
/// use agent_surface::error::{ErrorCode, ErrorPayload};
///
/// let registry = agent_surface::Registry::default();
/// let result = agent_surface::adapter::refused(&registry, "some_tool", None, ErrorPayload::cancelled());
/// assert_eq!(result.error().map(|e| e.code()), Some(ErrorCode::Cancelled));
/// assert!(result.invocation_id().starts_with("inv_"));
/// ```
pub fn refused(
    registry: &Registry,
    name: &str,
    invocation_id: Option<String>,
    error: ErrorPayload,
) -> InvocationResult {
    let invocation_id = invocation_id.unwrap_or_else(|| registry.mint_invocation_id());
    InvocationResult::new(
        Arc::from(invocation_id),
        Arc::from(name),
        Err(error),
        registry.version(),
        false,
    )
}
