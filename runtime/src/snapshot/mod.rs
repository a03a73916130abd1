//! Snapshots: what one consumer can see right now. Take one with
//! `Registry::snapshot` to render the surface for an agent or to assert on it
//! in tests.
//!
//! A snapshot is synchronous and side-effect free: it never runs an
//! observation, never awaits, and evaluates only `when()` predicates and
//! discovery policies. Components are ordered by (priority desc, type,
//! instance); hidden capabilities are absent (indistinguishable from
//! nonexistent); unavailable ones carry the reason. Static descriptor parts
//! are shared with the contract; a snapshot of an unchanged, fully available
//! surface allocates one vector.

mod handles;
mod json_shape;
mod take;
mod views;

use std::sync::Arc;

use serde_json::Value;

use crate::context::Consumer;
use crate::registry::RouteInfo;

/// What to include in a snapshot: [`SnapshotOptions::default`] (the
/// anonymous embedded consumer) or [`SnapshotOptions::for_consumer`], and a
/// chainable setter per field.
///
/// ```
/// use agent_surface::prelude::*;
/// use agent_surface::snapshot::Budget;
///
/// let options = SnapshotOptions::for_consumer(Consumer::new(ConsumerKind::Mcp, "planner"))
///     .scope(["devices"])
///     .budget(Budget::default().max_components(10));
/// assert!(options.include_unavailable);
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
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

/// Experimental truncation budget: [`Budget::default`] (no bound) and a
/// chainable setter per bound.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Budget {
    /// At most this many components.
    pub max_components: Option<usize>,
    /// At most this many bytes of serialized components.
    pub max_bytes: Option<usize>,
}

impl Budget {
    /// Keeps at most `max` components.
    #[must_use]
    pub const fn max_components(mut self, max: usize) -> Budget {
        self.max_components = Some(max);
        self
    }

    /// Keeps at most `max` bytes of serialized components.
    #[must_use]
    pub const fn max_bytes(mut self, max: usize) -> Budget {
        self.max_bytes = Some(max);
        self
    }
}

pub use crate::ids::in_scope;

pub use handles::{ReferenceHandle, RegistrationHandle};
pub(crate) use take::take;
pub use views::{CapabilityView, ComponentView, ProcedureView};

/// What one consumer can see right now.
#[derive(Clone, Debug)]
pub struct Snapshot {
    pub(super) surface_id: Arc<str>,
    pub(super) surface_version: u64,
    pub(super) captured_at_ms: u64,
    pub(super) route: Option<RouteInfo>,
    pub(super) components: Vec<ComponentView>,
    pub(super) procedures: Vec<ProcedureView>,
    pub(super) dropped: Option<usize>,
    /// A discovery policy decided part of it (for its consumer).
    pub(super) consumer_dependent: bool,
    /// A registration it considered has a `when` predicate or a live note.
    pub(super) live: bool,
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
    /// Whether what it shows was decided for its consumer: a discovery
    /// policy ran (policies read the consumer and its host context). One
    /// that is not is what every consumer with the same options would see
    /// at that moment (`when` and notes read components, not consumers).
    pub fn depends_on_consumer(&self) -> bool {
        self.consumer_dependent
    }
    /// Whether the components and procedures it shows may change without a
    /// surface version bump: one of the registrations it considered (in
    /// scope, shown or not) has a `when` predicate (of a capability or a
    /// procedure reference) or a live note (`describe`), or a byte budget
    /// cut it (it measures the serialized views). One that is not, and does
    /// not
    /// [depend on its consumer](Self::depends_on_consumer), is what a
    /// snapshot with the same options shows for as long as the surface
    /// version stays.
    pub fn is_live(&self) -> bool {
        self.live
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
