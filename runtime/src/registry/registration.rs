//! One mount of a component: its frozen identity and policy chains, its live
//! handler reference, and the availability it computes.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use tokio_util::sync::CancellationToken;

use crate::component::Component;
use crate::contract::{CheckedCapability, CheckedContract, ReasonSource};
use crate::ids::InstanceId;
pub(crate) use crate::policy::chain::{Chain, vote};
use crate::primitives::concurrency::{ActionQueue, QueueKey};
use crate::procedure::Reference;
use crate::util::contain::Contained;

pub(crate) use crate::component::availability::{
    Availability, COMPONENT_DISABLED, NOT_AVAILABLE_NOW, WHEN_ERROR,
};

/// The chains of a registration: one shared chain (the registry's) when
/// the component adds no policies, else one per capability.
pub(crate) enum Chains {
    Shared(Arc<Chain>),
    Each(Box<[Chain]>),
}

/// An availability override pushed by the host.
#[derive(Clone, Debug)]
pub(crate) struct Override {
    pub(crate) available: bool,
    pub(crate) reason: Option<Arc<str>>,
}

/// What an unmount took out of a registration: dropped by
/// [`Released::drop_unlocked`] once no lock is held, panics contained.
#[must_use = "drop it with `drop_unlocked` after releasing the state lock"]
pub(crate) struct Released {
    // Held only to be dropped (unlocked, contained).
    _component: Option<Arc<dyn Component>>,
    _references: Vec<Option<Box<dyn std::any::Any + Send + Sync>>>,
}

impl Released {
    /// Drops the handlers and closures; a panicking destructor is logged.
    pub(crate) fn drop_unlocked(self) {
        crate::util::contain::drop_contained("component destructor", self);
    }
}

/// A nonzero fingerprint of an availability (reason included).
fn mark(availability: &Availability) -> u64 {
    match availability {
        Availability::Available => 1,
        Availability::Unavailable(reason) => crate::canonical::Fnv1a64::hash(reason.as_bytes()) | 2,
    }
}

/// A live (or just unmounted) registration.
pub(crate) struct Registration {
    pub(super) id: Arc<str>,
    pub(super) contract: &'static CheckedContract,
    pub(super) instance: InstanceId,
    /// The handlers; emptied at unmount so no executable reference remains.
    pub(super) component: RwLock<Option<Arc<dyn Component>>>,
    pub(super) enabled: AtomicBool,
    overrides: RwLock<Option<Box<[Option<Override>]>>>,
    /// Whether any override was ever pushed (skips the lock otherwise).
    overridden: AtomicBool,
    pub(super) chains: Chains,
    /// Fired at unmount: in-flight non-navigation invocations settle
    /// COMPONENT_UNMOUNTED.
    /// Created on first use (most registrations are never mid-flight when
    /// they unmount).
    cancel: std::sync::OnceLock<CancellationToken>,
    pub(super) active: AtomicBool,
    /// The instance queue (the default group), created on first use.
    instance_queue: std::sync::OnceLock<Arc<ActionQueue>>,
    /// Queues of other groups.
    queues: Mutex<Vec<(QueueKey, Arc<ActionQueue>)>>,
    /// Procedure references made by this mount (exposed or not).
    pub(super) references: Box<[Arc<Reference>]>,
    /// Instance-qualified tool names, built on first use.
    tool_names: std::sync::OnceLock<Box<[Box<str>]>>,
    /// The state-derived availability last published (see [`Registration::reevaluate`]).
    published: Mutex<Published>,
    /// Evaluations started, so a slower, older one never overwrites a newer one.
    evaluations: AtomicU64,
    /// Whether what it shows can change without a surface version bump
    /// (a `when` of a capability or a reference, a reference's live note):
    /// fixed at mount, asked by every snapshot.
    live_source: bool,
}

/// The `when`-derived availability last published: one mark per capability,
/// then one per procedure reference (0 when nothing state-derived applies).
#[derive(Default)]
struct Published {
    evaluation: u64,
    marks: Option<Box<[u64]>>,
}

/// What a re-evaluation found changed.
#[derive(Debug, Default)]
pub(crate) struct Changed {
    /// Capabilities (by index) whose availability changed.
    pub(crate) capabilities: Vec<usize>,
    /// Whether any procedure reference's availability changed.
    pub(crate) references: bool,
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration")
            .field("id", &self.id)
            .field("component_type", self.contract.component_type())
            .field("instance", &self.instance)
            .finish_non_exhaustive()
    }
}

impl Registration {
    pub(crate) fn new(
        id: Arc<str>,
        contract: &'static CheckedContract,
        instance: InstanceId,
        component: Arc<dyn Component>,
        enabled: bool,
        chains: Chains,
        references: Box<[Arc<Reference>]>,
    ) -> Registration {
        let live_source = contract.capabilities().iter().any(|c| c.has_when())
            || references.iter().any(|r| r.has_when() || r.has_describe());
        Registration {
            live_source,
            id,
            contract,
            instance,
            component: RwLock::new(Some(component)),
            enabled: AtomicBool::new(enabled),
            overrides: RwLock::new(None),
            overridden: AtomicBool::new(false),
            chains,
            cancel: std::sync::OnceLock::new(),
            active: AtomicBool::new(true),
            instance_queue: std::sync::OnceLock::new(),
            queues: Mutex::new(Vec::new()),
            references,
            tool_names: std::sync::OnceLock::new(),
            published: Mutex::new(Published::default()),
            evaluations: AtomicU64::new(0),
        }
    }

    /// Whether what a snapshot shows of it may change without a surface
    /// version bump: a `when` predicate (of a capability or a reference) or
    /// a reference's live note. Fixed at mount: one read.
    pub(crate) fn is_live_source(&self) -> bool {
        self.live_source
    }

    /// Whether anything about this registration's availability derives from
    /// application state (`when` predicates of capabilities or references).
    pub(crate) fn has_state_derived_availability(&self) -> bool {
        self.contract.capabilities().iter().any(|c| c.has_when())
            || self.references.iter().any(|r| r.has_when())
    }

    /// Re-evaluates the state-derived availability (every `when`, with its
    /// reason) against what was last published. Returns what changed, or
    /// `None` when nothing did. The first evaluation sets the baseline.
    /// Call without any registry lock held: predicates are host code.
    pub(crate) fn reevaluate(&self, component: &dyn Component) -> Option<Changed> {
        let evaluation = self.evaluations.fetch_add(1, Ordering::AcqRel) + 1;
        let capabilities = self.contract.capabilities();
        let marks: Box<[u64]> = (0..capabilities.len())
            .map(|index| match capabilities.get(index) {
                Some(capability) if capability.has_when() => {
                    mark(&self.when_availability(index, capability, component))
                }
                _ => 0,
            })
            .chain(self.references.iter().map(|reference| {
                if reference.has_when() {
                    mark(&reference.availability())
                } else {
                    0
                }
            }))
            .collect();
        let mut published = self
            .published
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if published.evaluation > evaluation {
            // A newer evaluation already published what is current.
            return None;
        }
        published.evaluation = evaluation;
        // The first evaluation only sets the baseline.
        let before = published.marks.replace(marks)?;
        let after = published.marks.as_deref().unwrap_or_default();
        let mut changed = Changed::default();
        for (index, (was, is)) in before.iter().zip(after).enumerate() {
            if was == is {
                continue;
            }
            if index < capabilities.len() {
                changed.capabilities.push(index);
            } else {
                changed.references = true;
            }
        }
        (!changed.capabilities.is_empty() || changed.references).then_some(changed)
    }

    /// The tool name of capability `index` qualified with this instance
    /// (`…_at_<instance>`), for when several instances are live (`None`
    /// for an index the contract does not have).
    pub(crate) fn qualified_tool_name(&self, index: usize) -> Option<&str> {
        let names = self.tool_names.get_or_init(|| {
            self.contract
                .capabilities()
                .iter()
                .map(|capability| {
                    let base = capability.wire_name();
                    let instance = self.instance.as_str();
                    let mut name = String::with_capacity(base.len() + 4 + instance.len());
                    name.push_str(base);
                    name.push_str("_at_");
                    name.push_str(instance);
                    name.into_boxed_str()
                })
                .collect()
        });
        names.get(index).map(|name| &**name)
    }

    /// The exposed reference to procedure `id`, if this mount makes one.
    pub(crate) fn reference(&self, id: &str) -> Option<&Arc<Reference>> {
        self.references
            .iter()
            .find(|reference| reference.is_exposed() && &**reference.id() == id)
    }

    /// Whether the component is switched on.
    pub(crate) fn is_enabled(&self) -> bool {
        self.enabled.load(Ordering::Acquire)
    }

    /// A reference's availability: the component's master switch, then the
    /// reference's own `when`.
    pub(crate) fn procedure_availability(&self, reference: &Reference) -> Availability {
        if self.is_enabled() {
            reference.availability()
        } else {
            Availability::Unavailable(Cow::Borrowed(COMPONENT_DISABLED))
        }
    }

    /// Fires when the registration unmounts. After taking it, check
    /// [`is_active`](Self::is_active): an unmount that happened before the
    /// token existed did not fire it.
    pub(crate) fn unmounted(&self) -> &CancellationToken {
        self.cancel.get_or_init(CancellationToken::new)
    }

    /// Aborts in-flight invocations (unmount).
    pub(crate) fn abort(&self) {
        if let Some(token) = self.cancel.get() {
            token.cancel();
        }
    }

    /// Its registration id.
    pub(crate) fn id(&self) -> &Arc<str> {
        &self.id
    }

    /// The contract it was mounted with.
    pub(crate) fn contract(&self) -> &'static CheckedContract {
        self.contract
    }

    /// Its instance id.
    pub(crate) fn instance(&self) -> &InstanceId {
        &self.instance
    }

    /// The procedure references this mount made (exposed or not).
    pub(crate) fn references(&self) -> &[Arc<Reference>] {
        &self.references
    }

    pub(crate) fn is_active(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }

    /// The live handlers, if still mounted. The holder may end up the last
    /// owner (an unmount meanwhile): its drop is contained.
    pub(crate) fn component(&self) -> Option<Contained<Arc<dyn Component>>> {
        self.component
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .map(|component| Contained::new("component destructor", component))
    }

    /// Takes the handlers and the references' closures out (unmount): no
    /// executable reference outlives the mount. The caller drops what is
    /// returned after releasing every lock: a component's destructor may
    /// unmount other components (a page owning its children's mounts).
    pub(crate) fn release(&self) -> Released {
        self.active.store(false, Ordering::Release);
        let component = self
            .component
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        Released {
            _component: component,
            _references: self.references.iter().map(|r| r.release()).collect(),
        }
    }

    pub(crate) fn capability(&self, index: usize) -> Option<&'static CheckedCapability> {
        self.contract.capabilities().get(index)
    }

    pub(crate) fn chain(&self, index: usize) -> Option<&Chain> {
        match &self.chains {
            Chains::Shared(chain) => {
                (index < self.contract.capabilities().len()).then_some(&**chain)
            }
            Chains::Each(chains) => chains.get(index),
        }
    }

    /// Sets an override; returns whether the effective value changed.
    pub(crate) fn set_override(&self, index: usize, value: Option<Override>) -> bool {
        let mut overrides = self
            .overrides
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let count = self.contract.capabilities().len();
        let table = overrides.get_or_insert_with(|| vec![None; count].into_boxed_slice());
        self.overridden.store(true, Ordering::Release);
        let Some(slot) = table.get_mut(index) else {
            return false;
        };
        let before = slot.as_ref().map(|o| (o.available, o.reason.clone()));
        let after = value.as_ref().map(|o| (o.available, o.reason.clone()));
        *slot = value;
        before != after
    }

    fn override_of(&self, index: usize) -> Option<Override> {
        if !self.overridden.load(Ordering::Acquire) {
            return None;
        }
        self.overrides
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .and_then(|table| table.get(index).cloned().flatten())
    }

    /// Whether capability `index` is available as announced: the master
    /// switch, a pushed override, then the `when` part as the newest
    /// evaluation published it. Runs no host code, so it is read under the
    /// state lock when an event is queued: the last event queued for a
    /// capability always carries what the newest evaluation found.
    pub(crate) fn announced(&self, index: usize) -> bool {
        if !self.is_enabled() {
            return false;
        }
        if self.override_of(index).is_some_and(|over| !over.available) {
            return false;
        }
        let published = self
            .published
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match published
            .marks
            .as_deref()
            .and_then(|marks| marks.get(index))
        {
            Some(&mark) => mark <= 1,
            None => !self
                .capability(index)
                .is_some_and(CheckedCapability::has_when),
        }
    }

    /// `enabled`, pushed overrides and `when()`, evaluated now. A panicking
    /// `when` counts as false (reason `when-error`).
    pub(crate) fn availability(
        &self,
        index: usize,
        component: Option<&dyn Component>,
    ) -> Availability {
        if !self.is_enabled() {
            return Availability::Unavailable(Cow::Borrowed(COMPONENT_DISABLED));
        }
        if let Some(over) = self.override_of(index)
            && !over.available
        {
            let reason = over.reason.map_or(Cow::Borrowed(NOT_AVAILABLE_NOW), |r| {
                Cow::Owned(r.to_string())
            });
            return Availability::Unavailable(reason);
        }
        let Some(capability) = self.capability(index) else {
            return Availability::Unavailable(Cow::Borrowed(NOT_AVAILABLE_NOW));
        };
        if !capability.has_when() {
            return Availability::Available;
        }
        let Some(component) = component else {
            return Availability::Unavailable(Cow::Borrowed(NOT_AVAILABLE_NOW));
        };
        self.when_availability(index, capability, component)
    }

    /// The `when` part of a capability's availability, evaluated now.
    fn when_availability(
        &self,
        index: usize,
        capability: &CheckedCapability,
        component: &dyn Component,
    ) -> Availability {
        if !capability.has_when() {
            return Availability::Available;
        }
        match crate::util::contain::catch(|| component.__when(index)) {
            Ok(true) => Availability::Available,
            Ok(false) => Availability::Unavailable(self.reason(index, capability, component)),
            Err(_) => {
                tracing::warn!(capability = %capability.id(), "`when` panicked; the capability counts as unavailable");
                Availability::Unavailable(Cow::Borrowed(WHEN_ERROR))
            }
        }
    }

    fn reason(
        &self,
        index: usize,
        capability: &CheckedCapability,
        component: &dyn Component,
    ) -> Cow<'static, str> {
        match capability.reason() {
            ReasonSource::Static(reason) => Cow::Borrowed(reason),
            ReasonSource::Dynamic => {
                crate::util::contain::catch(|| component.__unavailable_reason(index))
                    .ok()
                    .flatten()
                    .map_or(Cow::Borrowed(NOT_AVAILABLE_NOW), Cow::Owned)
            }
            ReasonSource::None => Cow::Borrowed(NOT_AVAILABLE_NOW),
        }
    }

    /// The action queue of a concurrency group, created on first use.
    pub(crate) fn queue(
        &self,
        key: QueueKey,
        make: impl FnOnce() -> ActionQueue,
    ) -> Arc<ActionQueue> {
        if key == QueueKey::Instance {
            return Arc::clone(self.instance_queue.get_or_init(|| Arc::new(make())));
        }
        let mut queues = self.queues.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, queue)) = queues.iter().find(|(k, _)| *k == key) {
            return Arc::clone(queue);
        }
        let queue = Arc::new(make());
        queues.push((key, Arc::clone(&queue)));
        queue
    }
}
