//! The mount handle: status, the master switch, availability pushes and
//! state-driven re-evaluation; dropping it unmounts.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde::Serialize;

use super::Registry;

use super::registration::{Override, Registration};

use crate::context::Environment;
use crate::events::SurfaceEvent;

/// An availability the host pushes for one capability with
/// [`Mounted::set_availability`], over what the component's `when` and
/// master switch say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AvailabilityOverride<'a> {
    /// No pushed unavailability: available when the master switch and the
    /// capability's `when` allow (a push never overrides `when` to
    /// available, as the specification's availability rule says).
    Available,
    /// Unavailable, with the reason agents read (`None`: the default
    /// "not available now").
    Unavailable {
        /// The reason shown to agents.
        reason: Option<&'a str>,
    },
    /// No override: the capability's own `when` decides again.
    Clear,
}

impl<'a> AvailabilityOverride<'a> {
    /// Unavailable with `reason`.
    pub fn unavailable(reason: &'a str) -> AvailabilityOverride<'a> {
        AvailabilityOverride::Unavailable {
            reason: Some(reason),
        }
    }
}

/// The handle of one mount. Dropping it (or calling
/// [`unmount`](Mounted::unmount)) unmounts the component.
#[must_use = "dropping the handle unmounts the component at once"]
pub struct Mounted {
    pub(super) registry: Registry,
    pub(super) registration_id: Arc<str>,
    pub(super) registration: Option<Arc<Registration>>,
}

impl fmt::Debug for Mounted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mounted")
            .field("registration_id", &self.registration_id)
            .field("status", &self.status())
            .finish()
    }
}

impl Mounted {
    /// The registration id (`reg_…`), the staleness token agents send back.
    pub fn registration_id(&self) -> &str {
        &self.registration_id
    }

    /// Active, rejected or unregistered.
    pub fn status(&self) -> RegistrationStatus {
        match &self.registration {
            None => RegistrationStatus::Rejected,
            Some(registration) if registration.is_active() => RegistrationStatus::Active,
            Some(_) => RegistrationStatus::Unregistered,
        }
    }

    fn live(&self) -> Option<&Arc<Registration>> {
        let live = self.registration.as_ref().filter(|r| r.is_active());
        if live.is_none() && self.registry.inner.config.environment == Environment::Development {
            tracing::warn!(registration = %self.registration_id, "update on a handle that is not active is ignored");
        }
        live
    }

    /// The master switch: `false` shows every capability as unavailable
    /// (reason `component-disabled`). Bumps the version when it changes.
    pub fn set_enabled(&self, enabled: bool) {
        let Some(registration) = self.live() else {
            return;
        };
        let inner = &self.registry.inner;
        // Host code (`when`) runs before the lock, and is published in
        // evaluation order, so what the events say is the newest reading.
        let changed = self.publish_when(registration);
        let mut state = inner.state();
        if !registration.is_active() {
            return;
        }
        let indices: Vec<usize> = if registration.enabled.swap(enabled, Ordering::AcqRel) == enabled
        {
            // Only what the evaluation found changed (it is published).
            changed
        } else {
            (0..registration.contract.capabilities().len()).collect()
        };
        if indices.is_empty() {
            return;
        }
        let events = self.announcements(registration, indices);
        inner.bump(&mut state, events);
        drop(state);
        inner.dispatcher.drain();
    }

    /// Evaluates and publishes every `when` of the registration now (no
    /// lock held: host code), when anyone listens for the events it feeds.
    /// Returns the capabilities whose `when` changed since last published.
    fn publish_when(&self, registration: &Registration) -> Vec<usize> {
        if !self.registry.inner.dispatcher.active() {
            return Vec::new();
        }
        let Some(component) = registration.component() else {
            return Vec::new();
        };
        let changed = registration.reevaluate(&**component);
        drop(component);
        changed
            .map(|changed| changed.capabilities)
            .unwrap_or_default()
    }

    /// `availability-changed` for `indices`, each carrying the availability
    /// as announced (read under the state lock, so the last event queued
    /// for a capability is what the newest evaluation found).
    fn announcements(
        &self,
        registration: &Registration,
        indices: impl IntoIterator<Item = usize>,
    ) -> Vec<SurfaceEvent> {
        if !self.registry.inner.dispatcher.active() {
            return Vec::new();
        }
        indices
            .into_iter()
            .filter_map(|index| {
                let capability = registration.capability(index)?;
                Some(SurfaceEvent::AvailabilityChanged {
                    registration_id: Arc::clone(&registration.id),
                    capability_id: Arc::clone(capability.id().as_arc()),
                    available: registration.announced(index),
                })
            })
            .collect()
    }

    /// Pushes an availability override for one capability (by name), or
    /// [`AvailabilityOverride::Clear`]s it. Returns whether this mount has
    /// that capability; bumps the version only when the pushed override
    /// changed, and its `availability-changed` event carries the
    /// availability that results (a cleared or `Available` push leaves the
    /// capability's `when` in charge).
    ///
    /// ```
    /// use agent_surface::prelude::*;
    /// use agent_surface::registry::{AvailabilityOverride, Registry};
    /// use std::sync::Arc;
    ///
    /// /// A player.
    /// #[agent_component(type = "demo.player")]
    /// impl Player {
    ///     /// Starts playback.
    ///     #[action(effect = "local-state")]
    ///     fn play(&self) {}
    /// }
    /// struct Player;
    ///
    /// let registry = Registry::builder().build();
    /// let mounted = registry.mount(Arc::new(Player))?;
    /// assert!(mounted.set_availability("play", AvailabilityOverride::unavailable("Buffering")));
    /// assert!(mounted.set_availability("play", AvailabilityOverride::Clear));
    /// assert!(!mounted.set_availability("stop", AvailabilityOverride::Available));
    /// # Ok::<(), agent_surface::registry::MountError>(())
    /// ```
    pub fn set_availability(
        &self,
        capability: &str,
        availability: AvailabilityOverride<'_>,
    ) -> bool {
        let Some(registration) = self.live() else {
            return false;
        };
        let Some(index) = registration
            .contract
            .capabilities()
            .iter()
            .position(|c| c.name().as_str() == capability)
        else {
            return false;
        };
        let value = match availability {
            AvailabilityOverride::Available => Some(Override {
                available: true,
                reason: None,
            }),
            AvailabilityOverride::Unavailable { reason } => Some(Override {
                available: false,
                reason: reason.map(Arc::from),
            }),
            AvailabilityOverride::Clear => None,
        };
        let inner = &self.registry.inner;
        let mut changed = self.publish_when(registration);
        let mut state = inner.state();
        if !registration.is_active() {
            return true;
        }
        let pushed = registration.set_override(index, value);
        if !pushed && changed.is_empty() {
            return true;
        }
        // The event tells the availability that results: a pushed
        // unavailability decides alone; otherwise the master switch and
        // `when` do (as the newest evaluation published; read under the
        // lock). A `when` that changed meanwhile is announced too.
        if pushed {
            changed.retain(|&other| other != index);
            changed.insert(0, index);
        }
        let events = self.announcements(registration, changed);
        inner.bump(&mut state, events);
        drop(state);
        inner.dispatcher.drain();
        true
    }

    /// Tells the registry that the application state this component's
    /// availability reads has changed (a selection, a route, a loaded
    /// list). The registry re-evaluates every `when` of this registration
    /// and of its procedure references; only when an availability (or its
    /// reason) actually changed does it bump the surface version and emit
    /// `availability-changed` and `surface-changed`, which every consumer
    /// hears (toolset subscriptions, MCP `tools/list_changed`, the testing
    /// harness). Returns whether the surface changed.
    ///
    /// Cheap enough to call after every render: with nothing changed it
    /// runs the predicates, compares and returns, emitting nothing. (The
    /// specification's `invalidate` bumps unconditionally; that is
    /// [`bump_version`](Self::bump_version).)
    pub fn invalidate(&self) -> bool {
        let Some(registration) = self.live() else {
            return false;
        };
        let Some(component) = registration.component() else {
            return false;
        };
        self.withdraw_unbound(registration);
        // Predicates are host code: evaluated with no registry lock held.
        let Some(changed) = registration.reevaluate(&**component) else {
            return false;
        };
        drop(component);
        let inner = &self.registry.inner;
        let mut state = inner.state();
        if !registration.is_active() {
            return false;
        }
        // Read under the lock from what the newest evaluation published.
        let events = self.announcements(registration, changed.capabilities);
        inner.bump(&mut state, events);
        drop(state);
        inner.dispatcher.drain();
        true
    }

    /// Withdraws the requests of `registration` waiting for the person
    /// whose bound input no longer holds what the page shows (the
    /// selection moved): the person is never left looking at a request that
    /// no longer applies until the agent happens to retry. Bindings are
    /// host code: evaluated with no registry lock held.
    fn withdraw_unbound(&self, registration: &super::Registration) {
        if registration.references.is_empty() {
            return;
        }
        let inner = &self.registry.inner;
        let waiting = inner.confirmations.waiting_of(&registration.id);
        let stale: Vec<Arc<str>> = waiting
            .into_iter()
            .filter(|(_, capability_id, input)| {
                registration
                    .reference(capability_id)
                    .is_some_and(|reference| !reference.still_bound(input))
            })
            .map(|(id, _, _)| id)
            .collect();
        if !stale.is_empty() {
            inner.confirmations.withdraw_where(
                &**inner,
                crate::confirmation::INPUT_CHANGED,
                |pending| stale.contains(&pending.confirmation_id),
            );
        }
    }

    /// Bumps the surface version without changing anything (the
    /// specification's handle `invalidate`): every consumer re-reads the
    /// surface. Prefer [`invalidate`](Self::invalidate), which bumps only
    /// when availability changed.
    pub fn bump_version(&self) {
        if self.live().is_none() {
            return;
        }
        let inner = &self.registry.inner;
        let mut state = inner.state();
        inner.bump(&mut state, Vec::new());
        drop(state);
        inner.dispatcher.drain();
    }

    /// Unmounts now (the same as dropping the handle).
    pub fn unmount(self) {}
}

impl Drop for Mounted {
    fn drop(&mut self) {
        if let Some(registration) = self.registration.take() {
            self.registry.unregister(&registration);
            // Possibly the last owner: its policy chains are host code.
            crate::util::contain::drop_contained("registration", registration);
        }
    }
}

/// The state of a registration handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RegistrationStatus {
    /// Mounted and visible.
    Active,
    /// Refused (duplicate instance or registration guard).
    Rejected,
    /// Unmounted.
    Unregistered,
}
