//! Internal metadata: the host-only facts a component or capability
//! declares for policies and audit sinks, never shown to agents.

use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

/// Internal metadata: readable by policies and audit sinks, never serialized
/// and redacted from `Debug` output.
#[derive(Clone)]
pub struct Internal(pub(crate) Arc<Map<String, Value>>);

impl Internal {
    /// A digest of the internal metadata (`sha256:` and 64 hex digits):
    /// policies read it, so review sees that it changed without seeing it.
    pub fn digest(&self) -> String {
        format!(
            "sha256:{}",
            crate::canonical::Sha256Digest::of(&Value::Object((*self.0).clone()))
        )
    }

    /// The metadata.
    pub fn map(&self) -> &Map<String, Value> {
        &self.0
    }
}

impl std::ops::Deref for Internal {
    type Target = Map<String, Value>;
    fn deref(&self) -> &Map<String, Value> {
        &self.0
    }
}

impl fmt::Debug for Internal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Internal(<{} keys redacted>)", self.0.len())
    }
}
