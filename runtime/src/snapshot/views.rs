//! The views a snapshot is made of: one component, one capability and one
//! procedure reference as a consumer sees them.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::Value;

use crate::contract::CheckedCapability;
use crate::procedure::{BoundFieldView, Reference};
use crate::registry::Registration;

use super::handles::{ReferenceHandle, RegistrationHandle};
use agent_surface_rules::{Confirmation, Effect, Kind};

/// One capability's state for one consumer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum CapabilityState {
    Available,
    Unavailable(Cow<'static, str>),
    Hidden,
}

/// One component in a snapshot.
#[derive(Clone)]
pub struct ComponentView {
    pub(super) registration: Arc<Registration>,
    /// `None`: every capability available.
    pub(super) states: Option<Box<[CapabilityState]>>,
}

impl std::fmt::Debug for ComponentView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ComponentView")
            .field("registration", &self.registration.id())
            .finish_non_exhaustive()
    }
}

/// One capability in a snapshot.
#[derive(Clone, Copy, Debug)]
pub struct CapabilityView<'a> {
    pub(super) capability: &'static CheckedCapability,
    pub(super) state: Option<&'a CapabilityState>,
}

impl<'a> CapabilityView<'a> {
    /// The capability id.
    pub fn id(&self) -> &str {
        self.capability.id().as_str()
    }
    /// The capability name.
    pub fn name(&self) -> &str {
        self.capability.name().as_str()
    }
    /// Observation or action.
    pub fn kind(&self) -> Kind {
        self.capability.kind()
    }
    /// The description.
    pub fn description(&self) -> &str {
        self.capability.description()
    }
    /// Whether it can be called now.
    pub fn available(&self) -> bool {
        !matches!(self.state, Some(CapabilityState::Unavailable(_)))
    }
    /// Why it cannot be called now.
    pub fn unavailable_reason(&self) -> Option<&'a str> {
        match self.state {
            Some(CapabilityState::Unavailable(reason)) => Some(reason),
            _ => None,
        }
    }
    /// The input schema (actions).
    pub fn input_schema(&self) -> Option<&'static Value> {
        match self.capability.kind() {
            Kind::Observation => None,
            _ => self
                .capability
                .input_schema()
                .map(|schema| &**schema.json()),
        }
    }
    /// The output schema.
    pub fn output_schema(&self) -> Option<&'static Value> {
        self.capability
            .output_schema()
            .map(|schema| &**schema.json())
    }
    /// The effect.
    pub fn effect(&self) -> Effect {
        self.capability.effect()
    }
    /// The confirmation posture.
    pub fn confirmation(&self) -> Confirmation {
        self.capability.confirmation()
    }
    /// The full checked capability.
    pub fn contract(&self) -> &'static CheckedCapability {
        self.capability
    }
}

impl ComponentView {
    /// The component type.
    pub fn component_type(&self) -> &str {
        self.registration.contract().component_type().as_str()
    }
    /// The instance id.
    pub fn instance_id(&self) -> &str {
        self.registration.instance().as_str()
    }
    /// The registration id (the staleness token).
    pub fn registration_id(&self) -> &str {
        self.registration.id()
    }

    /// A handle on the registration, for an adapter that keeps definitions
    /// borrowed from it (one reference count).
    pub fn handle(&self) -> RegistrationHandle {
        RegistrationHandle(Arc::clone(&self.registration))
    }

    /// Visible capabilities with their index in the contract (the index
    /// [`RegistrationHandle::qualified_tool_name`] takes).
    pub fn capabilities_indexed(&self) -> impl Iterator<Item = (usize, CapabilityView<'_>)> {
        self.registration
            .contract()
            .capabilities()
            .iter()
            .enumerate()
            .filter_map(|(index, capability)| {
                let state = self.states.as_ref().and_then(|states| states.get(index));
                (state != Some(&CapabilityState::Hidden))
                    .then_some((index, CapabilityView { capability, state }))
            })
    }
    /// The description.
    pub fn description(&self) -> &str {
        self.registration.contract().description()
    }
    /// The snapshot priority.
    pub fn priority(&self) -> i32 {
        self.registration.contract().priority()
    }

    /// Visible capabilities (hidden ones are absent).
    pub fn capabilities(&self) -> impl Iterator<Item = CapabilityView<'_>> {
        self.capabilities_indexed()
            .map(|(_, capability)| capability)
    }

    /// Visible observations.
    pub fn observations(&self) -> impl Iterator<Item = CapabilityView<'_>> {
        self.capabilities()
            .filter(|c| c.kind() == Kind::Observation)
    }

    /// Visible actions.
    pub fn actions(&self) -> impl Iterator<Item = CapabilityView<'_>> {
        self.capabilities().filter(|c| c.kind() == Kind::Action)
    }
}

/// One procedure reference as a consumer sees it (`snapshot.procedures`):
/// the procedure's stable identity and the live facts of the component that
/// references it.
#[derive(Clone)]
pub struct ProcedureView {
    pub(super) registration: Arc<Registration>,
    pub(super) reference: Arc<Reference>,
    pub(super) reason: Option<Cow<'static, str>>,
    pub(super) note: Option<String>,
}

impl std::fmt::Debug for ProcedureView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcedureView")
            .field("procedure", &self.procedure_id())
            .field("registration", &self.registration.id())
            .finish_non_exhaustive()
    }
}

impl ProcedureView {
    /// `domain:<path>`.
    pub fn procedure_id(&self) -> &str {
        self.reference.procedure.id().as_str()
    }

    /// The procedure's stable description (never contextual text).
    pub fn description(&self) -> &str {
        self.reference.procedure.description()
    }

    /// The live contextual note from the reference's `describe`.
    pub fn contextual_note(&self) -> Option<&str> {
        self.note.as_deref()
    }

    /// The agent-facing input schema: locked bound fields removed.
    pub fn input_schema(&self) -> &Value {
        self.reference
            .capability
            .input_schema()
            .map_or(&Value::Null, |schema| &**schema.json())
    }

    /// The procedure's output schema, if declared.
    pub fn output_schema(&self) -> Option<&Value> {
        self.reference
            .procedure
            .output_schema()
            .map(|schema| &**schema.json())
    }

    /// The server effect.
    pub fn effect(&self) -> Effect {
        self.reference.capability.effect()
    }

    /// The effective confirmation posture (the contract's, or the
    /// reference's stricter one).
    pub fn confirmation(&self) -> Confirmation {
        self.reference.capability.confirmation()
    }

    /// Whether a call would pass availability now.
    pub fn available(&self) -> bool {
        self.reason.is_none()
    }

    /// Why not, when unavailable.
    pub fn unavailable_reason(&self) -> Option<&str> {
        self.reason.as_deref()
    }

    /// The fields bound from UI state.
    pub fn bound_fields(&self) -> Vec<BoundFieldView> {
        self.reference.bound_fields()
    }

    /// The referencing registration (send it back to address this reference).
    pub fn registration_id(&self) -> &str {
        self.registration.id()
    }

    /// A handle on the referencing registration (one reference count).
    pub fn registration_handle(&self) -> RegistrationHandle {
        RegistrationHandle(Arc::clone(&self.registration))
    }

    /// A handle on the reference itself (one reference count).
    pub fn reference_handle(&self) -> ReferenceHandle {
        ReferenceHandle(Arc::clone(&self.reference))
    }

    /// The referencing component's type.
    pub fn component_type(&self) -> &str {
        self.registration.contract().component_type().as_str()
    }

    /// The referencing component's instance.
    pub fn instance_id(&self) -> &str {
        self.registration.instance().as_str()
    }

    /// The reference seen as a capability (tool description, schema).
    pub fn capability(&self) -> &crate::contract::CheckedCapability {
        &self.reference.capability
    }
}
