//! Handles on what a snapshot saw: a mounted registration and a procedure
//! reference, each one reference count to clone. An adapter that builds
//! tools from a snapshot keeps these instead of copying definitions: the
//! names, descriptions and schemas it serves are borrowed from the live
//! surface for as long as it holds them.

use std::fmt;
use std::sync::Arc;

use crate::contract::CheckedCapability;
use crate::procedure::Reference;
use crate::registry::Registration;

/// A mounted component's registration, as a snapshot saw it.
///
/// Holding one keeps the registration's definitions readable after an
/// unmount (its handlers are released at unmount all the same: a handle
/// never keeps a component callable). A call addressed with its
/// [`registration_id`](Self::registration_id) after the component went
/// away settles `STALE_CAPABILITY`.
#[derive(Clone)]
pub struct RegistrationHandle(pub(crate) Arc<Registration>);

impl RegistrationHandle {
    /// The registration id (the staleness token).
    pub fn registration_id(&self) -> &str {
        self.0.id()
    }

    /// The instance id.
    pub fn instance_id(&self) -> &str {
        self.0.instance().as_str()
    }

    /// The component type.
    pub fn component_type(&self) -> &str {
        self.0.contract().component_type().as_str()
    }

    /// The wire name of the contract's capability number `index`, qualified
    /// with this instance (`…_at_<instance>`), as tools are named when
    /// several instances of a type are live. Built once per registration;
    /// `None` for an index the contract does not have.
    pub fn qualified_tool_name(&self, index: usize) -> Option<&str> {
        self.0.qualified_tool_name(index)
    }

    /// Whether `a` and `b` are handles on the same registration.
    pub fn same(a: &RegistrationHandle, b: &RegistrationHandle) -> bool {
        Arc::ptr_eq(&a.0, &b.0)
    }
}

impl fmt::Debug for RegistrationHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("RegistrationHandle")
            .field(&self.registration_id())
            .finish()
    }
}

/// A procedure reference made by one registration, as a snapshot saw it.
#[derive(Clone)]
pub struct ReferenceHandle(pub(crate) Arc<Reference>);

impl ReferenceHandle {
    /// The reference seen as a capability: the agent-facing input schema,
    /// the effective confirmation posture, the description.
    pub fn capability(&self) -> &CheckedCapability {
        &self.0.capability
    }
}

impl fmt::Debug for ReferenceHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ReferenceHandle")
            .field(&self.0.procedure.id().as_str())
            .finish()
    }
}
