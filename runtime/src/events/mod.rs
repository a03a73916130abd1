//! Surface events and their ordered dispatcher. Subscribe to them
//! (`Registry::subscribe`) to react when the surface changes: a component
//! mounts, availability moves, a confirmation is requested.
//!
//! Guarantees:
//! - **total mutation order**: every mutation's events are queued while the
//!   registry state is locked, so the queue order is the mutation order;
//! - **dispatch after the mutation completes**: listeners run after the
//!   registry lock is released, one event at a time, never two listeners
//!   at once;
//! - **listener isolation**: a panicking listener is contained and reported;
//!   the other listeners still run;
//! - **no re-entrant dispatch**: a registry call made from a listener takes
//!   effect at once (`mount` must return its `Result`, so the call itself
//!   cannot wait), and its events are queued behind the current ones: every
//!   listener receives the current event before any nested one, and no
//!   listener is ever entered twice;
//! - **no caller pays for others**: a call delivers the events that were
//!   queued when it began delivering (its own, and those of calls racing
//!   it) and the ones its listeners cause; whatever arrives meanwhile is
//!   handed to the registry's delivery thread, so one call's latency never
//!   carries everyone's event delivery behind a slow listener;
//! - **bounded**: at most [`MAX_QUEUED_EVENTS`] events and
//!   [`MAX_QUEUED_BYTES`] bytes wait for delivery. Beyond that new events
//!   are dropped, and at the place of the gap listeners receive
//!   [`SurfaceEvent::EventsDropped`] with how many: the order of what is
//!   delivered is still the mutation order, and a listener that keeps state
//!   resynchronises from the registry (snapshot, version) when told;
//! - per invocation, `invocation-started` strictly before
//!   `invocation-settled`; per confirmation, `confirmation-requested`
//!   strictly before `confirmation-resolved` (when neither was dropped).

use std::sync::Arc;

use serde::Serialize;

use crate::error::ErrorCode;

mod dispatcher;

pub(crate) use dispatcher::Dispatcher;
pub use dispatcher::{MAX_QUEUED_BYTES, MAX_QUEUED_EVENTS};

/// Something that happened to the surface.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(
    tag = "type",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum SurfaceEvent {
    /// The surface version moved.
    SurfaceChanged {
        /// The new version.
        surface_version: String,
    },
    /// A component was mounted.
    ComponentRegistered {
        /// Its registration.
        registration_id: Arc<str>,
        /// Its type.
        component_type: Arc<str>,
        /// Its instance.
        instance_id: Arc<str>,
    },
    /// A component was unmounted.
    ComponentUnregistered {
        /// Its registration.
        registration_id: Arc<str>,
        /// Its type.
        component_type: Arc<str>,
        /// Its instance.
        instance_id: Arc<str>,
    },
    /// A mount was refused (duplicate instance, or the registration guard).
    ComponentRejected {
        /// The refused type.
        component_type: Arc<str>,
        /// The refused instance.
        instance_id: Arc<str>,
        /// `duplicate` or `guard`.
        reason: &'static str,
    },
    /// A pushed availability change.
    AvailabilityChanged {
        /// The registration.
        registration_id: Arc<str>,
        /// The capability.
        capability_id: Arc<str>,
        /// Whether it is now available.
        available: bool,
    },
    /// A view capability shares its suffix with a known domain procedure.
    CollisionSuspected {
        /// The view capability.
        view_capability_id: Arc<str>,
        /// The domain procedure.
        domain_procedure_id: Arc<str>,
    },
    /// An invocation started executing the pipeline.
    InvocationStarted {
        /// The invocation.
        invocation_id: Arc<str>,
        /// The capability.
        capability_id: Arc<str>,
        /// The consumer (`kind:id`).
        consumer_id: Arc<str>,
    },
    /// An invocation settled.
    InvocationSettled {
        /// The invocation.
        invocation_id: Arc<str>,
        /// The capability.
        capability_id: Arc<str>,
        /// The consumer (`kind:id`).
        consumer_id: Arc<str>,
        /// The consumer as a person would name it, if known.
        consumer_label: Option<Arc<str>>,
        /// `ok` or `error`.
        status: &'static str,
        /// The error code, if any.
        #[serde(skip_serializing_if = "Option::is_none")]
        code: Option<ErrorCode>,
        /// Why, for an error that says (its `details.reason`: `denied`,
        /// `consumed`, `expired`, `mismatch`, `withdrawn`, `queue-full`…).
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<Arc<str>>,
        /// Milliseconds from start to settlement.
        duration_ms: u64,
    },
    /// A confirmation is waiting for the user.
    ConfirmationRequested {
        /// The confirmation.
        confirmation_id: Arc<str>,
        /// The capability.
        capability_id: Arc<str>,
        /// When it expires (RFC 3339).
        expires_at: String,
        /// Who asks (`kind:id`).
        consumer_id: Arc<str>,
        /// Who asks, as a person would name them, if known.
        requester: Option<Arc<str>>,
        /// The request in the person's terms (its presentation's title).
        title: String,
    },
    /// A confirmation was resolved.
    ConfirmationResolved {
        /// The confirmation.
        confirmation_id: Arc<str>,
        /// `approved`, `denied`, `expired` or `withdrawn`.
        outcome: &'static str,
        /// The approval channel of an answer (`None` for an expiry or a
        /// withdrawal).
        channel: Option<Arc<str>>,
        /// Who answered through it (`None` for an expiry or a withdrawal).
        approver: Option<Arc<str>>,
        /// Why it was withdrawn (`replaced`, `unmounted`, `agent-left`,
        /// `input-changed`, `cancelled`, `displaced`), for a withdrawal.
        reason: Option<&'static str>,
        /// How the person proved an approval was theirs (`webauthn`,
        /// `out-of-band`); `None` for an approval on the channel's word and
        /// for every other outcome.
        #[serde(skip_serializing_if = "Option::is_none")]
        proof: Option<&'static str>,
    },
    /// Events were dropped here because listeners fell behind by more than
    /// the dispatcher's bound: what follows is still in mutation order,
    /// but `count` events between the previous one and the next were never
    /// delivered. Resynchronise anything kept from events (read the
    /// snapshot, the version, the pending confirmations).
    EventsDropped {
        /// How many events were dropped at this place.
        count: u64,
    },
}

impl SurfaceEvent {
    /// About what the event occupies in memory, in bytes (its strings and
    /// a fixed part), for the dispatcher's byte bound.
    pub(crate) fn weight(&self) -> usize {
        let strings = match self {
            SurfaceEvent::SurfaceChanged { surface_version } => surface_version.len(),
            SurfaceEvent::ComponentRegistered {
                registration_id,
                component_type,
                instance_id,
            }
            | SurfaceEvent::ComponentUnregistered {
                registration_id,
                component_type,
                instance_id,
            } => registration_id.len() + component_type.len() + instance_id.len(),
            SurfaceEvent::ComponentRejected {
                component_type,
                instance_id,
                ..
            } => component_type.len() + instance_id.len(),
            SurfaceEvent::AvailabilityChanged {
                registration_id,
                capability_id,
                ..
            } => registration_id.len() + capability_id.len(),
            SurfaceEvent::CollisionSuspected {
                view_capability_id,
                domain_procedure_id,
            } => view_capability_id.len() + domain_procedure_id.len(),
            SurfaceEvent::InvocationStarted {
                invocation_id,
                capability_id,
                consumer_id,
            } => invocation_id.len() + capability_id.len() + consumer_id.len(),
            SurfaceEvent::InvocationSettled {
                invocation_id,
                capability_id,
                consumer_id,
                consumer_label,
                reason,
                ..
            } => {
                invocation_id.len()
                    + capability_id.len()
                    + consumer_id.len()
                    + consumer_label.as_ref().map_or(0, |label| label.len())
                    + reason.as_ref().map_or(0, |reason| reason.len())
            }
            SurfaceEvent::ConfirmationRequested {
                confirmation_id,
                capability_id,
                expires_at,
                consumer_id,
                requester,
                title,
            } => {
                confirmation_id.len()
                    + capability_id.len()
                    + expires_at.len()
                    + consumer_id.len()
                    + requester.as_ref().map_or(0, |r| r.len())
                    + title.len()
            }
            SurfaceEvent::ConfirmationResolved {
                confirmation_id,
                channel,
                approver,
                ..
            } => {
                confirmation_id.len()
                    + channel.as_ref().map_or(0, |c| c.len())
                    + approver.as_ref().map_or(0, |a| a.len())
            }
            SurfaceEvent::EventsDropped { .. } => 0,
        };
        std::mem::size_of::<SurfaceEvent>() + strings
    }
}

/// A registered listener.
pub type Listener = Arc<dyn Fn(&SurfaceEvent) + Send + Sync>;

/// Removes a listener when called (or dropped via [`Subscription`]).
#[derive(Debug)]
#[must_use = "dropping a Subscription unsubscribes the listener"]
pub struct Subscription {
    id: u64,
    dispatcher: std::sync::Weak<Dispatcher>,
}

impl Subscription {
    /// Stops delivering events to the listener.
    pub fn unsubscribe(self) {}
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some(dispatcher) = self.dispatcher.upgrade() {
            dispatcher.remove(self.id);
        }
    }
}
