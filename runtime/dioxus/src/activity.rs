//! `use_agent_activity`: what agents did on the surface, for the person to
//! read — every call (who, what, outcome, when), every request for
//! approval, and every answer (who, through which channel), newest first,
//! bounded in count and in bytes.

use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;

use agent_surface::ErrorCode;
use agent_surface::events::{Subscription, SurfaceEvent};
use dioxus_core::{spawn, use_hook};
use dioxus_signals::{ReadableExt, Signal, WritableExt};
use tokio::sync::mpsc;

use crate::provider::use_registry;

/// Most entries an activity list keeps, whatever capacity is asked.
pub const MAX_ACTIVITY: usize = 500;

/// Longest text kept in an entry field, in characters (labels and titles
/// are already bounded by the registry; this bounds whatever else).
const MAX_FIELD_CHARS: usize = 200;

/// Events waiting for the component's task; beyond this the oldest are
/// dropped (and counted) rather than grow without bound.
const MAX_BACKLOG: usize = 1024;

/// One thing an agent did, or that happened to its request.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ActivityEntry {
    /// When it was seen, in epoch milliseconds of the registry's clock.
    pub at_ms: u64,
    /// Who: the consumer's label (a person's name for it) or its key.
    pub who: Arc<str>,
    /// What happened.
    pub what: Activity,
}

/// What happened.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Activity {
    /// An agent's call settled.
    Call {
        /// The capability called.
        capability_id: Arc<str>,
        /// `None`: it succeeded; otherwise the error code.
        error: Option<ErrorCode>,
        /// When it ran an approved request: that request's title.
        approved: Option<String>,
        /// Why it was refused, where the error says (`denied`, `consumed`,
        /// `expired`, `mismatch`, `withdrawn`…).
        reason: Option<Arc<str>>,
    },
    /// An agent asked the person to approve.
    Asked {
        /// The confirmation.
        confirmation_id: Arc<str>,
        /// The request in the person's terms.
        title: String,
    },
    /// A request was answered, expired or withdrawn.
    Answered {
        /// The confirmation.
        confirmation_id: Arc<str>,
        /// `approved`, `denied`, `expired` or `withdrawn`.
        outcome: &'static str,
        /// The approval channel of an answer.
        channel: Option<Arc<str>>,
        /// Why it was withdrawn, for a withdrawal.
        reason: Option<&'static str>,
        /// The request's title, when it was seen asked.
        title: Option<String>,
        /// How the person proved an approval was theirs (`webauthn`,
        /// `out-of-band`), if they did.
        proof: Option<&'static str>,
    },
}

impl ActivityEntry {
    /// The bytes of text it holds (names, ids, titles), for bounds.
    pub(crate) fn text_bytes(&self) -> usize {
        let what = match &self.what {
            Activity::Call {
                capability_id,
                approved,
                reason,
                ..
            } => {
                capability_id.len()
                    + approved.as_ref().map_or(0, String::len)
                    + reason.as_ref().map_or(0, |r| r.len())
            }
            Activity::Asked {
                confirmation_id,
                title,
            } => confirmation_id.len() + title.len(),
            Activity::Answered {
                confirmation_id,
                channel,
                title,
                ..
            } => {
                confirmation_id.len()
                    + channel.as_ref().map_or(0, |c| c.len())
                    + title.as_ref().map_or(0, String::len)
            }
        };
        64 + self.who.len() + what
    }
}

/// The activity of the provided registry's agents, newest first.
#[derive(Clone, Copy, PartialEq)]
pub struct AgentActivity {
    entries: Signal<VecDeque<ActivityEntry>>,
    dropped: Signal<u64>,
}

impl std::fmt::Debug for AgentActivity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentActivity")
            .field("entries", &self.entries.peek().len())
            .finish()
    }
}

impl AgentActivity {
    /// An activity over these signals (the log's hook fills them).
    pub(crate) fn from_signals(
        entries: Signal<VecDeque<ActivityEntry>>,
        dropped: Signal<u64>,
    ) -> AgentActivity {
        AgentActivity { entries, dropped }
    }

    /// The entries, newest first.
    pub fn entries(&self) -> Vec<ActivityEntry> {
        self.entries.read().iter().cloned().collect()
    }

    /// How many events were dropped because they arrived faster than the
    /// page could take them (shown as a gap, never silently).
    pub fn dropped(&self) -> u64 {
        *self.dropped.read()
    }
}

fn cut(text: &str) -> String {
    text.chars().take(MAX_FIELD_CHARS).collect()
}

/// A recent request for approval.
#[derive(Clone)]
struct Asked {
    confirmation_id: Arc<str>,
    consumer_id: Arc<str>,
    capability_id: Arc<str>,
    title: String,
}

/// What the list remembers between events: asked titles and approvals
/// awaiting their call, bounded like the list.
#[derive(Default)]
pub(crate) struct Memory {
    /// Recent requests.
    asked: VecDeque<Asked>,
    /// Requests approved and not yet run.
    approved: VecDeque<Asked>,
}

impl Memory {
    fn bounded<T>(queue: &mut VecDeque<T>, item: T, max: usize) {
        if queue.len() >= max {
            queue.pop_front();
        }
        queue.push_back(item);
    }

    /// The entry an event makes, if it is one a person reads.
    pub(crate) fn entry(
        &mut self,
        event: &SurfaceEvent,
        at_ms: u64,
        max: usize,
    ) -> Option<ActivityEntry> {
        match event {
            SurfaceEvent::InvocationSettled {
                capability_id,
                consumer_id,
                consumer_label,
                code,
                reason,
                ..
            } => {
                let approved = if code.is_none() {
                    let found = self.approved.iter().position(|asked| {
                        asked.consumer_id == *consumer_id && asked.capability_id == *capability_id
                    });
                    found
                        .and_then(|index| self.approved.remove(index))
                        .map(|asked| asked.title)
                } else {
                    None
                };
                Some(ActivityEntry {
                    at_ms,
                    who: Arc::from(cut(consumer_label.as_deref().unwrap_or(consumer_id))),
                    what: Activity::Call {
                        capability_id: Arc::clone(capability_id),
                        error: *code,
                        approved,
                        reason: reason.as_ref().map(|r| Arc::from(cut(r))),
                    },
                })
            }
            SurfaceEvent::ConfirmationRequested {
                confirmation_id,
                capability_id,
                consumer_id,
                requester,
                title,
                ..
            } => {
                let title = cut(title);
                Self::bounded(
                    &mut self.asked,
                    Asked {
                        confirmation_id: Arc::clone(confirmation_id),
                        consumer_id: Arc::clone(consumer_id),
                        capability_id: Arc::clone(capability_id),
                        title: title.clone(),
                    },
                    max,
                );
                Some(ActivityEntry {
                    at_ms,
                    who: Arc::from(cut(requester.as_deref().unwrap_or(consumer_id))),
                    what: Activity::Asked {
                        confirmation_id: Arc::clone(confirmation_id),
                        title,
                    },
                })
            }
            SurfaceEvent::ConfirmationResolved {
                confirmation_id,
                outcome,
                channel,
                approver,
                reason,
                proof,
            } => {
                let asked = self
                    .asked
                    .iter()
                    .find(|asked| asked.confirmation_id == *confirmation_id)
                    .cloned();
                if *outcome == "approved"
                    && let Some(asked) = &asked
                {
                    Self::bounded(&mut self.approved, asked.clone(), max);
                }
                Some(ActivityEntry {
                    at_ms,
                    who: Arc::from(cut(approver.as_deref().unwrap_or("nobody"))),
                    what: Activity::Answered {
                        confirmation_id: Arc::clone(confirmation_id),
                        outcome,
                        channel: channel.clone(),
                        reason: *reason,
                        title: asked.map(|asked| asked.title),
                        proof: *proof,
                    },
                })
            }
            _ => None,
        }
    }
}

/// The provided registry's agent activity, at most `capacity` entries
/// (at most [`MAX_ACTIVITY`]), newest first; a component that reads
/// [`entries`](AgentActivity::entries) re-renders as agents act. Empty
/// without a registry. The registry's listener only queues the event (a
/// bounded queue); the component's task turns it into an entry.
pub fn use_agent_activity(capacity: usize) -> AgentActivity {
    let registry = use_registry();
    use_hook(move || {
        let capacity = capacity.clamp(1, MAX_ACTIVITY);
        let mut entries = Signal::new(VecDeque::with_capacity(capacity));
        let mut dropped = Signal::new(0_u64);
        if let Some(registry) = registry {
            let (sender, mut receiver) = mpsc::channel::<SurfaceEvent>(MAX_BACKLOG);
            let lost = Arc::new(std::sync::atomic::AtomicU64::new(0));
            let counted = Arc::clone(&lost);
            let subscription: Subscription = registry.subscribe(move |event| {
                // Events the registry could not deliver are part of the gap.
                if let SurfaceEvent::EventsDropped { count } = event {
                    counted.fetch_add(*count, std::sync::atomic::Ordering::Relaxed);
                    return;
                }
                let interesting = matches!(
                    event,
                    SurfaceEvent::InvocationSettled { .. }
                        | SurfaceEvent::ConfirmationRequested { .. }
                        | SurfaceEvent::ConfirmationResolved { .. }
                );
                if interesting && sender.try_send(event.clone()).is_err() {
                    counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            });
            let keep = Rc::new(subscription);
            spawn(async move {
                let _subscription = keep;
                let mut memory = Memory::default();
                while let Some(event) = receiver.recv().await {
                    let at_ms = registry.now_ms();
                    if let Some(entry) = memory.entry(&event, at_ms, capacity) {
                        let mut list = entries.write();
                        if list.len() >= capacity {
                            list.pop_back();
                        }
                        list.push_front(entry);
                    }
                    let gap = lost.swap(0, std::sync::atomic::Ordering::Relaxed);
                    if gap > 0 {
                        let total = *dropped.peek() + gap;
                        dropped.set(total);
                    }
                }
            });
        }
        AgentActivity { entries, dropped }
    })
}
