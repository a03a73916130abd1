//! Taking a snapshot: the registry's components and procedure references
//! filtered by scope, `when()` and discovery policies, ordered, and cut to
//! a budget.

use std::sync::Arc;

use super::views::CapabilityState;
use super::{ComponentView, ProcedureView, Snapshot, SnapshotOptions, in_scope};
use crate::context::HostContext;
use crate::contract::CheckedCapability;
use crate::policy::Decision;
use crate::registry::{Availability, Registration, Services};

/// What `options.consumer` can see right now on `services`. Synchronous;
/// never runs an observation.
pub(crate) fn take(services: &Services, options: &SnapshotOptions) -> Snapshot {
    Taking { services }.snapshot(options)
}

/// A snapshot being taken, over the registry's services.
struct Taking<'a> {
    services: &'a Services,
}

impl Taking<'_> {
    fn snapshot(&self, options: &SnapshotOptions) -> Snapshot {
        let inner = self.services;
        let (ordered, version) = inner.ordered();
        let mut host: Option<HostContext> = None;
        let mut components = Vec::with_capacity(ordered.len());
        let mut procedures = Vec::new();
        let mut live = false;
        for registration in ordered.iter() {
            if !in_scope(
                registration.contract().component_type().as_str(),
                &options.scope,
            ) {
                continue;
            }
            live = live || registration.is_live_source();
            if let Some(view) = self.view(registration, options, &mut host) {
                components.push(view);
            }
            if !registration.references().is_empty() {
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
            surface_id: Arc::clone(inner.surface_id()),
            surface_version: version,
            captured_at_ms: inner.now_ms(),
            route: inner.config().route.as_ref().and_then(|route| {
                crate::util::contain::contained("route provider", || route()).flatten()
            }),
            components,
            procedures,
            dropped,
            // The host context is read exactly when a discovery policy runs.
            consumer_dependent: host.is_some(),
            live: live
                || options
                    .budget
                    .is_some_and(|budget| budget.max_bytes.is_some()),
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
        let inner = self.services;
        for reference in registration.references().iter() {
            if !reference.is_exposed() {
                continue;
            }
            let decision = if reference.chain.discovery {
                let host = host.get_or_insert_with(|| inner.host_for(&options.consumer));
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
        let inner = self.services;
        let capabilities = registration.contract().capabilities();
        let needs_component = capabilities.iter().any(CheckedCapability::has_when);
        let component = if needs_component {
            registration.component()
        } else {
            None
        };
        let mut states: Option<Box<[CapabilityState]>> = None;
        let mut hidden = 0;
        for (index, capability) in capabilities.iter().enumerate() {
            let decision = match registration.chain(index) {
                Some(chain) if chain.discovery => {
                    let host = host.get_or_insert_with(|| inner.host_for(&options.consumer));
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
                Decision::Hide => CapabilityState::Hidden,
                decision => match (
                    registration.availability(index, component.as_deref().map(|c| &**c)),
                    decision,
                ) {
                    (Availability::Unavailable(reason), _)
                    | (Availability::Available, Decision::Disable(reason)) => {
                        if options.include_unavailable {
                            CapabilityState::Unavailable(reason)
                        } else {
                            CapabilityState::Hidden
                        }
                    }
                    (Availability::Available, _) => CapabilityState::Available,
                },
            };
            if state == CapabilityState::Available {
                continue;
            }
            if state == CapabilityState::Hidden {
                hidden += 1;
            }
            let table = states.get_or_insert_with(|| {
                vec![CapabilityState::Available; capabilities.len()].into_boxed_slice()
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
