//! Snapshots: what one consumer can see right now.
//!
//! A snapshot is synchronous and side-effect free: it never runs an
//! observation, never awaits, and evaluates only `when()` predicates and
//! discovery policies. Components are ordered by (priority desc, type,
//! instance); hidden capabilities are absent (indistinguishable from
//! nonexistent); unavailable ones carry the reason. Static descriptor parts
//! are shared with the contract; a snapshot of an unchanged, fully available
//! surface allocates one vector.

use std::borrow::Cow;
use std::sync::Arc;

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::clock::rfc3339;
use crate::context::{Consumer, HostContext};
use crate::contract::CheckedCapability;
use crate::policy::Decision;
use crate::procedure::{BoundFieldView, Reference};
use crate::registry::{Availability, Registration, Registry, RouteInfo};
use crate::{Confirmation, Effect, Kind};

/// What to include in a snapshot.
#[derive(Clone, Debug)]
pub struct SnapshotOptions {
    /// Whose view (default: `embedded:anonymous`).
    pub consumer: Consumer,
    /// Component-type prefixes to include (`devices` matches `devices` and
    /// `devices.table`); empty includes everything.
    pub scope: Vec<String>,
    /// Include visible-but-unavailable capabilities (default `true`).
    pub include_unavailable: bool,
    /// Experimental: drop lowest-priority components beyond a budget.
    pub budget: Option<Budget>,
}

impl Default for SnapshotOptions {
    fn default() -> Self {
        SnapshotOptions {
            consumer: Consumer::anonymous(),
            scope: Vec::new(),
            include_unavailable: true,
            budget: None,
        }
    }
}

impl SnapshotOptions {
    /// Options for `consumer`.
    pub fn for_consumer(consumer: Consumer) -> SnapshotOptions {
        SnapshotOptions {
            consumer,
            ..SnapshotOptions::default()
        }
    }

    /// Restricts to component-type prefixes.
    #[must_use]
    pub fn scope(mut self, prefixes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scope = prefixes.into_iter().map(Into::into).collect();
        self
    }

    /// Includes or omits unavailable capabilities.
    #[must_use]
    pub fn include_unavailable(mut self, include: bool) -> Self {
        self.include_unavailable = include;
        self
    }

    /// Sets a budget.
    #[must_use]
    pub fn budget(mut self, budget: Budget) -> Self {
        self.budget = Some(budget);
        self
    }
}

/// Experimental truncation budget.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Budget {
    /// At most this many components.
    pub max_components: Option<usize>,
    /// At most this many bytes of serialized components.
    pub max_bytes: Option<usize>,
}

pub use crate::ids::in_scope;

/// One capability's state for one consumer.
#[derive(Clone, Debug, PartialEq, Eq)]
enum State {
    Available,
    Unavailable(Cow<'static, str>),
    Hidden,
}

/// One component in a snapshot.
#[derive(Clone)]
pub struct ComponentView {
    registration: Arc<Registration>,
    /// `None`: every capability available.
    states: Option<Box<[State]>>,
}

impl std::fmt::Debug for ComponentView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ComponentView")
            .field("registration", &self.registration.id)
            .finish_non_exhaustive()
    }
}

/// One capability in a snapshot.
#[derive(Clone, Copy, Debug)]
pub struct CapabilityView<'a> {
    capability: &'static CheckedCapability,
    state: Option<&'a State>,
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
        !matches!(self.state, Some(State::Unavailable(_)))
    }
    /// Why it cannot be called now.
    pub fn unavailable_reason(&self) -> Option<&'a str> {
        match self.state {
            Some(State::Unavailable(reason)) => Some(reason),
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
        self.registration.contract.component_type().as_str()
    }
    /// The instance id.
    pub fn instance_id(&self) -> &str {
        self.registration.instance.as_str()
    }
    /// The registration id (the staleness token).
    pub fn registration_id(&self) -> &str {
        &self.registration.id
    }

    pub(crate) fn registration(&self) -> &Arc<Registration> {
        &self.registration
    }

    /// Visible capabilities with their index in the contract.
    pub(crate) fn capabilities_indexed(&self) -> impl Iterator<Item = (usize, CapabilityView<'_>)> {
        self.registration
            .contract
            .capabilities()
            .iter()
            .enumerate()
            .filter_map(|(index, capability)| {
                let state = self.states.as_ref().and_then(|states| states.get(index));
                (state != Some(&State::Hidden))
                    .then_some((index, CapabilityView { capability, state }))
            })
    }
    /// The description.
    pub fn description(&self) -> &str {
        self.registration.contract.description()
    }
    /// The snapshot priority.
    pub fn priority(&self) -> i32 {
        self.registration.contract.priority()
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

/// What one consumer can see right now.
#[derive(Clone, Debug)]
pub struct Snapshot {
    surface_id: Arc<str>,
    surface_version: u64,
    captured_at_ms: u64,
    route: Option<RouteInfo>,
    components: Vec<ComponentView>,
    procedures: Vec<ProcedureView>,
    dropped: Option<usize>,
}

/// One procedure reference as a consumer sees it (`snapshot.procedures`):
/// the procedure's stable identity and the live facts of the component that
/// references it.
#[derive(Clone)]
pub struct ProcedureView {
    registration: Arc<Registration>,
    reference: Arc<Reference>,
    reason: Option<Cow<'static, str>>,
    note: Option<String>,
}

impl std::fmt::Debug for ProcedureView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcedureView")
            .field("procedure", &self.procedure_id())
            .field("registration", &self.registration.id)
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
        &self.registration.id
    }

    pub(crate) fn registration(&self) -> &Arc<Registration> {
        &self.registration
    }

    pub(crate) fn reference(&self) -> &Arc<Reference> {
        &self.reference
    }

    /// The referencing component's type.
    pub fn component_type(&self) -> &str {
        self.registration.contract.component_type().as_str()
    }

    /// The referencing component's instance.
    pub fn instance_id(&self) -> &str {
        self.registration.instance.as_str()
    }

    /// The reference seen as a capability (tool description, schema).
    pub(crate) fn capability(&self) -> &crate::contract::CheckedCapability {
        &self.reference.capability
    }
}

impl Serialize for ProcedureView {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("procedureId", self.procedure_id())?;
        map.serialize_entry("description", self.description())?;
        if let Some(note) = &self.note {
            map.serialize_entry("contextualNote", note)?;
        }
        map.serialize_entry("inputSchema", self.input_schema())?;
        if let Some(output) = self.output_schema() {
            map.serialize_entry("outputSchema", output)?;
        }
        map.serialize_entry("effect", &self.effect())?;
        map.serialize_entry("confirmation", &self.confirmation())?;
        map.serialize_entry("available", &self.available())?;
        if let Some(reason) = &self.reason {
            map.serialize_entry("unavailableReason", &**reason)?;
        }
        map.serialize_entry("boundFields", &self.bound_fields())?;
        map.serialize_entry("registrationId", &*self.registration.id)?;
        map.serialize_entry(
            "context",
            &serde_json::json!({"type": self.component_type(), "instanceId": self.instance_id()}),
        )?;
        map.end()
    }
}

impl Snapshot {
    /// The registry's surface id.
    pub fn surface_id(&self) -> &str {
        &self.surface_id
    }
    /// The surface version the snapshot reflects.
    pub fn surface_version(&self) -> u64 {
        self.surface_version
    }
    /// When it was taken (epoch milliseconds).
    pub fn captured_at_ms(&self) -> u64 {
        self.captured_at_ms
    }
    /// The route, if the host provides one.
    pub fn route(&self) -> Option<&RouteInfo> {
        self.route.as_ref()
    }
    /// Components, in snapshot order.
    pub fn components(&self) -> &[ComponentView] {
        &self.components
    }

    /// The visible procedure references (top level, not nested in components).
    pub fn procedures(&self) -> &[ProcedureView] {
        &self.procedures
    }

    /// The visible references to procedure `id` (one per referencing component).
    pub fn procedure(&self, id: &str) -> impl Iterator<Item = &ProcedureView> {
        self.procedures
            .iter()
            .filter(move |p| p.procedure_id() == id)
    }
    /// Components dropped by a budget, if any.
    pub fn truncated(&self) -> Option<usize> {
        self.dropped
    }
    /// A visible capability by id (the first instance that offers it).
    pub fn capability(&self, id: &str) -> Option<(&ComponentView, CapabilityView<'_>)> {
        self.components.iter().find_map(|component| {
            component
                .capabilities()
                .find(|capability| capability.id() == id)
                .map(|capability| (component, capability))
        })
    }
    /// Every visible capability with its component.
    pub fn capabilities(&self) -> impl Iterator<Item = (&ComponentView, CapabilityView<'_>)> {
        self.components.iter().flat_map(|component| {
            component
                .capabilities()
                .map(move |capability| (component, capability))
        })
    }
    /// The snapshot as JSON (the specification's shape).
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

impl Registry {
    /// What `options.consumer` can see right now. Synchronous; never runs an
    /// observation.
    pub fn snapshot(&self, options: &SnapshotOptions) -> Snapshot {
        let inner = &self.inner;
        let (ordered, version) = {
            let mut state = inner.state();
            (state.ordered(), state.version)
        };
        let mut host: Option<HostContext> = None;
        let mut components = Vec::with_capacity(ordered.len());
        let mut procedures = Vec::new();
        for registration in ordered.iter() {
            if !in_scope(
                registration.contract.component_type().as_str(),
                &options.scope,
            ) {
                continue;
            }
            if let Some(view) = self.view(registration, options, &mut host) {
                components.push(view);
            }
            if !registration.references.is_empty() {
                self.procedure_views(registration, options, &mut host, &mut procedures);
            }
        }
        let mut dropped = None;
        let shown = components.len();
        if let Some(budget) = options.budget {
            let before = components.len();
            if let Some(max) = budget.max_components {
                components.truncate(max);
            }
            if let Some(max_bytes) = budget.max_bytes {
                let mut total = 0;
                let keep = components
                    .iter()
                    .take_while(|component| {
                        total +=
                            serde_json::to_vec(component).map_or(usize::MAX, |bytes| bytes.len());
                        total <= max_bytes
                    })
                    .count();
                components.truncate(keep);
            }
            if components.len() < before {
                dropped = Some(before - components.len());
            }
        }
        if components.len() < shown {
            // References of components the budget dropped go with them.
            procedures.retain(|procedure| {
                components
                    .iter()
                    .any(|c| Arc::ptr_eq(&c.registration, &procedure.registration))
                    || !ordered
                        .iter()
                        .any(|r| Arc::ptr_eq(r, &procedure.registration))
            });
        }
        Snapshot {
            surface_id: Arc::clone(&inner.surface_id),
            surface_version: version,
            captured_at_ms: inner.now_ms(),
            route: inner.config.route.as_ref().and_then(|route| {
                crate::util::contain::contained("route provider", || route()).flatten()
            }),
            components,
            procedures,
            dropped,
        }
    }

    /// The exposed references of one registration this consumer may see.
    fn procedure_views(
        &self,
        registration: &Arc<Registration>,
        options: &SnapshotOptions,
        host: &mut Option<HostContext>,
        out: &mut Vec<ProcedureView>,
    ) {
        let inner = &self.inner;
        for reference in registration.references.iter() {
            if !reference.is_exposed() {
                continue;
            }
            let decision = if reference.chain.discovery {
                let host = host.get_or_insert_with(|| inner.host());
                reference.chain.discover(&inner.policy_context(
                    registration,
                    &reference.capability,
                    &options.consumer,
                    host,
                ))
            } else {
                Decision::Expose
            };
            // Hidden: nothing of the reference (its `when`) runs for this consumer.
            if decision == Decision::Hide {
                continue;
            }
            let availability = registration.procedure_availability(reference);
            let reason = match (decision, availability) {
                (Decision::Hide, _) => continue,
                (_, Availability::Unavailable(reason))
                | (Decision::Disable(reason), Availability::Available) => Some(reason),
                (Decision::Expose, Availability::Available) => None,
            };
            if reason.is_some() && !options.include_unavailable {
                continue;
            }
            out.push(ProcedureView {
                registration: Arc::clone(registration),
                reference: Arc::clone(reference),
                reason,
                note: reference.contextual_note(),
            });
        }
    }

    fn view(
        &self,
        registration: &Arc<Registration>,
        options: &SnapshotOptions,
        host: &mut Option<HostContext>,
    ) -> Option<ComponentView> {
        let inner = &self.inner;
        let capabilities = registration.contract.capabilities();
        let needs_component = capabilities.iter().any(CheckedCapability::has_when);
        let component = if needs_component {
            registration.component()
        } else {
            None
        };
        let mut states: Option<Box<[State]>> = None;
        let mut hidden = 0;
        for (index, capability) in capabilities.iter().enumerate() {
            let decision = match registration.chain(index) {
                Some(chain) if chain.discovery => {
                    let host = host.get_or_insert_with(|| inner.host());
                    chain.discover(&inner.policy_context(
                        registration,
                        capability,
                        &options.consumer,
                        host,
                    ))
                }
                _ => Decision::Expose,
            };
            let state = match decision {
                Decision::Hide => State::Hidden,
                decision => match (
                    registration.availability(index, component.as_deref().map(|c| &**c)),
                    decision,
                ) {
                    (Availability::Unavailable(reason), _)
                    | (Availability::Available, Decision::Disable(reason)) => {
                        if options.include_unavailable {
                            State::Unavailable(reason)
                        } else {
                            State::Hidden
                        }
                    }
                    (Availability::Available, _) => State::Available,
                },
            };
            if state == State::Available {
                continue;
            }
            if state == State::Hidden {
                hidden += 1;
            }
            let table = states.get_or_insert_with(|| {
                vec![State::Available; capabilities.len()].into_boxed_slice()
            });
            if let Some(slot) = table.get_mut(index) {
                *slot = state;
            }
        }
        // A component whose every capability is hidden is not shown at all.
        if hidden > 0 && hidden == capabilities.len() {
            return None;
        }
        Some(ComponentView {
            registration: Arc::clone(registration),
            states,
        })
    }
}

impl Serialize for Snapshot {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("surfaceId", &*self.surface_id)?;
        map.serialize_entry("surfaceVersion", &self.surface_version.to_string())?;
        map.serialize_entry("capturedAt", &rfc3339(self.captured_at_ms))?;
        if let Some(route) = &self.route {
            map.serialize_entry("route", route)?;
        }
        map.serialize_entry("components", &self.components)?;
        map.serialize_entry("procedures", &self.procedures)?;
        if let Some(dropped) = self.dropped {
            map.serialize_entry(
                "truncated",
                &serde_json::json!({"droppedComponents": dropped}),
            )?;
        }
        map.end()
    }
}

struct Capabilities<'a>(&'a ComponentView, Kind);

impl Serialize for Capabilities<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        for capability in self.0.capabilities().filter(|c| c.kind() == self.1) {
            seq.serialize_element(&capability)?;
        }
        seq.end()
    }
}

impl Serialize for ComponentView {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let contract = self.registration.contract;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("type", contract.component_type())?;
        map.serialize_entry("instanceId", &self.registration.instance)?;
        map.serialize_entry("registrationId", &*self.registration.id)?;
        map.serialize_entry("description", &**contract.description())?;
        if let Some((parent_type, instance)) = contract.parent() {
            map.serialize_entry(
                "parent",
                &serde_json::json!({"type": parent_type.as_str(), "instanceId": instance.as_str()}),
            )?;
        }
        if let Some(meta) = contract.meta() {
            map.serialize_entry("meta", &**meta)?;
        }
        map.serialize_entry("observations", &Capabilities(self, Kind::Observation))?;
        map.serialize_entry("actions", &Capabilities(self, Kind::Action))?;
        map.end()
    }
}

impl Serialize for CapabilityView<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let capability = self.capability;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("capabilityId", capability.id())?;
        map.serialize_entry("name", capability.name())?;
        map.serialize_entry("description", &**capability.description())?;
        if let Some(input) = self.input_schema() {
            map.serialize_entry("inputSchema", input)?;
        }
        if let Some(output) = self.output_schema() {
            map.serialize_entry("outputSchema", output)?;
        }
        if capability.kind() != Kind::Observation {
            map.serialize_entry("effect", &capability.effect())?;
            map.serialize_entry("idempotent", &capability.idempotent())?;
            map.serialize_entry("reversible", &capability.reversible().unwrap_or(true))?;
            map.serialize_entry("confirmation", &capability.confirmation())?;
        }
        map.serialize_entry("available", &self.available())?;
        if let Some(reason) = self.unavailable_reason() {
            map.serialize_entry("unavailableReason", reason)?;
        }
        if let Some(meta) = capability.meta() {
            map.serialize_entry("meta", &**meta)?;
        }
        map.end()
    }
}
