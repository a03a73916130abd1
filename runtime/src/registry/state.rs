//! The registry's mutable state behind its one lock: live registrations
//! indexed by id, type and procedure, and the tombstones of recent unmounts.

use rustc_hash::FxHashMap;
use std::sync::Arc;

use super::registration::Registration;

use crate::ids::InstanceId;
use crate::util::lru::Lru;

/// What is kept after an unmount: the released registration — its
/// identity, contract and policy chains, so a tombstone answers each
/// consumer exactly as the live registration did (hidden stays hidden).
/// Its handlers and closures are gone (taken out at unmount).
#[derive(Clone, Debug)]
pub(crate) struct Tombstone {
    pub(super) registration: Arc<Registration>,
}

impl Tombstone {
    /// The registration it stands for.
    pub(crate) fn registration(&self) -> &Arc<Registration> {
        &self.registration
    }

    /// The instance it had.
    pub(crate) fn instance(&self) -> &InstanceId {
        &self.registration.instance
    }

    /// Whether it exposed procedure `id` when it was unmounted.
    pub(crate) fn exposed(&self, id: &str) -> bool {
        self.registration.reference(id).is_some()
    }
}

/// The tombstones of recent unmounts and how to find them by type.
pub(crate) struct Recent {
    pub(super) tombstones: Lru<Arc<str>, Tombstone>,
    /// Component types of recent unmounts (→ registration id), for calls
    /// without a registration id (as many and as long as tombstones).
    pub(super) unmounted_types: Lru<Arc<str>, Arc<str>>,
    /// The table of the last component type whose instances all went,
    /// kept for the next type mounted (a route's components come back):
    /// one table at most, so what it keeps is bounded by the largest
    /// number of instances of one type ever live together.
    spare: Option<Instances>,
}

/// Live registrations of one component type, by instance.
type Instances = FxHashMap<InstanceId, Arc<Registration>>;

/// Snapshot order: priority descending, then type, then instance.
fn snapshot_order(a: &Registration, b: &Registration) -> std::cmp::Ordering {
    b.contract
        .priority()
        .cmp(&a.contract.priority())
        .then_with(|| a.contract.component_type().cmp(b.contract.component_type()))
        .then_with(|| a.instance.cmp(&b.instance))
}

pub(crate) struct State {
    pub(super) version: u64,
    pub(super) live: FxHashMap<Arc<str>, Arc<Registration>>,
    /// Live registrations per component type, by instance (unordered: a
    /// reader that needs an order sorts by instance).
    pub(super) by_type: FxHashMap<Arc<str>, Instances>,
    /// Live registrations in snapshot order, rebuilt lazily after mutations.
    pub(super) ordered: Option<Arc<Vec<Arc<Registration>>>>,
    /// What recent unmounts left, made by the first unmount: a registry
    /// that never unmounts (most are dropped whole) is created and dropped
    /// without it.
    pub(super) recent: Option<Box<Recent>>,
    /// The bounds of [`Recent`] (its capacity and time to live, ms), a copy
    /// of the configuration's. Derivable, but kept: without it the
    /// registry's shared state is 608 bytes, and `per_op`'s registry
    /// creation measured 1,076 instructions against 842 at this size, the
    /// allocator taking its slow path for the smaller block.
    pub(super) tombstone_bounds: (usize, u64),
    pub(super) known_procedures: Vec<Arc<str>>,
    /// Live registrations exposing each procedure, in mount order.
    pub(super) by_procedure: FxHashMap<Arc<str>, Vec<Arc<Registration>>>,
}

impl State {
    /// The surface version.
    pub(crate) fn version(&self) -> u64 {
        self.version
    }

    /// The live registrations of `component_type`, by instance.
    pub(crate) fn of_type(&self, component_type: &str) -> Option<&Instances> {
        self.by_type.get(component_type)
    }

    /// The live registrations exposing procedure `id`, in mount order.
    pub(crate) fn exposing(&self, id: &str) -> Option<&[Arc<Registration>]> {
        self.by_procedure.get(id).map(Vec::as_slice)
    }
}

impl State {
    /// Whether any unmount left a tombstone that is still remembered.
    pub(crate) fn has_tombstones(&self) -> bool {
        self.recent
            .as_ref()
            .is_some_and(|recent| !recent.tombstones.is_empty())
    }

    /// The tombstone of registration `id`, if it was unmounted lately.
    pub(crate) fn tombstone(&self, id: &str, now_ms: impl FnOnce() -> u64) -> Option<&Tombstone> {
        self.recent.as_ref()?.tombstones.peek(id, now_ms())
    }

    /// The tombstone of the latest unmounted instance of `component_type`.
    pub(crate) fn tombstone_of_type(
        &self,
        component_type: &str,
        now_ms: impl FnOnce() -> u64,
    ) -> Option<&Tombstone> {
        let recent = self.recent.as_ref()?;
        let now = now_ms();
        let id = recent.unmounted_types.peek(component_type, now)?;
        recent.tombstones.peek(&**id, now)
    }

    /// Live registrations sorted by (priority desc, type, instance).
    pub(crate) fn ordered(&mut self) -> Arc<Vec<Arc<Registration>>> {
        if let Some(ordered) = &self.ordered {
            return Arc::clone(ordered);
        }
        let mut all: Vec<Arc<Registration>> = self.live.values().cloned().collect();
        all.sort_by(|a, b| snapshot_order(a, b));
        let all = Arc::new(all);
        self.ordered = Some(Arc::clone(&all));
        all
    }

    pub(super) fn insert(&mut self, registration: &Arc<Registration>) {
        self.live
            .insert(Arc::clone(&registration.id), Arc::clone(registration));
        let component_type = registration.contract.component_type();
        // The type's name is copied only for a type with no table yet.
        let instances = match self.by_type.get_mut(component_type.as_str()) {
            Some(instances) => instances,
            None => {
                let recent = &mut self.recent;
                self.by_type
                    .entry(Arc::clone(component_type.as_arc()))
                    .or_insert_with(|| {
                        recent
                            .as_mut()
                            .and_then(|recent| recent.spare.take())
                            .unwrap_or_default()
                    })
            }
        };
        instances.insert(registration.instance.clone(), Arc::clone(registration));
        for reference in registration.references.iter() {
            if reference.is_exposed() {
                let holders = self
                    .by_procedure
                    .entry(Arc::clone(reference.id()))
                    .or_default();
                holders.push(Arc::clone(registration));
                holders.sort_by(|a, b| snapshot_order(a, b));
            }
        }
        self.ordered = None;
    }

    /// Rebuilds the procedure index (after the manifest changed).
    pub(super) fn index_procedures(&mut self) {
        self.ordered = None;
        self.by_procedure.clear();
        let mut live: Vec<&Arc<Registration>> = self.live.values().collect();
        live.sort_by(|a, b| snapshot_order(a, b));
        for registration in live {
            for reference in registration.references.iter() {
                if reference.is_exposed() {
                    self.by_procedure
                        .entry(Arc::clone(reference.id()))
                        .or_default()
                        .push(Arc::clone(registration));
                }
            }
        }
    }

    /// Removes a live registration and remembers it as a tombstone. Returns
    /// the tombstones that made room: the caller drops them once the state
    /// lock is released (they hold policy chains, whose destructors are
    /// host code).
    #[must_use = "drop the evicted tombstones after releasing the state lock"]
    pub(super) fn remove(
        &mut self,
        registration: &Arc<Registration>,
        now_ms: u64,
    ) -> Option<(Arc<str>, Tombstone)> {
        self.live.remove(&registration.id);
        let (capacity, ttl_ms) = self.tombstone_bounds;
        let recent = self.recent.get_or_insert_with(|| {
            Box::new(Recent {
                tombstones: Lru::new(capacity, ttl_ms),
                unmounted_types: Lru::new(capacity, ttl_ms),
                spare: None,
            })
        });
        let component_type = registration.contract.component_type().as_str();
        if let Some(instances) = self.by_type.get_mut(component_type) {
            if instances
                .get(&registration.instance)
                .is_some_and(|live| Arc::ptr_eq(live, registration))
            {
                instances.remove(&registration.instance);
            }
            if instances.is_empty()
                && let Some(mut emptied) = self.by_type.remove(component_type)
                && recent
                    .spare
                    .as_ref()
                    .is_none_or(|spare| spare.capacity() < emptied.capacity())
            {
                // Every slot marked free again: removals leave markers that
                // would make the next inserts rehash, and `clear` skips a
                // table already empty; a drain resets them all.
                drop(emptied.drain());
                recent.spare = Some(emptied);
            }
        }
        for reference in registration.references.iter() {
            if let Some(holders) = self.by_procedure.get_mut(&**reference.id()) {
                holders.retain(|holder| !Arc::ptr_eq(holder, registration));
                if holders.is_empty() {
                    self.by_procedure.remove(&**reference.id());
                }
            }
        }
        let _evicted = recent.unmounted_types.insert(
            Arc::clone(registration.contract.component_type().as_arc()),
            Arc::clone(&registration.id),
            now_ms,
        );
        let evicted = recent.tombstones.insert(
            Arc::clone(&registration.id),
            Tombstone {
                registration: Arc::clone(registration),
            },
            now_ms,
        );
        self.ordered = None;
        evicted
    }
}
