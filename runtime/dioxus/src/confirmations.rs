//! `use_pending_confirmations`: the requests waiting for the person, and
//! the one the application's confirmation dialog presents.
//!
//! The dialog shows one request at a time ([`presented`](PendingConfirmations::presented))
//! and answers *that* request: an answer names what was shown
//! ([`ShownRequest`]), through an [`Approver`] of an approval channel the
//! registry declares. A presented request that leaves the pending list
//! without this dialog answering it (withdrawn because its component went
//! away, expired, answered in another tab) stays presented as ended, with
//! how it ended, until the person dismisses it: the next request never
//! slides under the person's cursor. A newly presented request takes no
//! answer for its first [`ANSWER_DELAY_MS`] (render its buttons disabled
//! until [`Presented::answerable_at_ms`]): a double-click, or a click
//! already on its way, never answers a request the person has not seen.

use std::rc::Rc;

use agent_surface::confirmation::{
    Approver, ConfirmationOutcome, Confirmations, PendingConfirmation, PendingSubscription,
    Resolution, ResolveError, ShownRequest,
};
use dioxus_core::{spawn, use_hook};
use dioxus_signals::{ReadableExt, Signal, WritableExt};
use tokio::sync::watch;

use crate::provider::use_registry;

/// How long a newly presented request refuses answers, in milliseconds of
/// the registry's clock.
pub const ANSWER_DELAY_MS: u64 = 800;

/// The request a dialog presents, and whether it is still live.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Presented {
    /// The request as it was shown.
    pub request: PendingConfirmation,
    /// `None` while it waits for the person; otherwise how it ended without
    /// this dialog's answer (withdrawn, expired, answered elsewhere). An
    /// ended request cannot be answered: show why, and offer to dismiss.
    pub ended: Option<Resolution>,
    /// When it was first presented (registry clock, epoch milliseconds).
    pub since_ms: u64,
}

impl Presented {
    /// Whether the person can still answer it.
    pub fn is_live(&self) -> bool {
        self.ended.is_none()
    }

    /// From when it takes an answer: [`ANSWER_DELAY_MS`] after it was
    /// presented.
    pub fn answerable_at_ms(&self) -> u64 {
        self.since_ms.saturating_add(ANSWER_DELAY_MS)
    }
}

/// Why the dialog's answer did nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AnswerError {
    /// The request was presented less than [`ANSWER_DELAY_MS`] ago: the
    /// click was not meant for it.
    TooSoon,
    /// The registry refused the answer.
    Refused(ResolveError),
}

impl std::fmt::Display for AnswerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AnswerError::TooSoon => f.write_str("the request was only just shown"),
            AnswerError::Refused(err) => err.fmt(f),
        }
    }
}

impl std::error::Error for AnswerError {}

/// The pending confirmations of the provided registry, kept current: a
/// component that reads [`list`](Self::list) or [`presented`](Self::presented)
/// re-renders whenever a request arrives, is answered, expires or is
/// withdrawn.
#[derive(Clone, Copy, PartialEq)]
pub struct PendingConfirmations {
    list: Signal<Vec<PendingConfirmation>>,
    presented: Signal<Option<Presented>>,
    controller: Signal<Option<Confirmations>>,
    /// The registry, for its clock.
    now: Signal<Option<agent_surface::Registry>>,
}

impl std::fmt::Debug for PendingConfirmations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingConfirmations")
            .field("pending", &self.list.peek().len())
            .finish()
    }
}

/// How a presented request ended when no resolution is on record.
fn gone(request: &PendingConfirmation) -> Resolution {
    Resolution {
        confirmation_id: request.confirmation_id.clone(),
        outcome: ConfirmationOutcome::Withdrawn,
        channel: None,
        channel_kind: None,
        approver: None,
        reason: Some("gone"),
        person_verified: None,
        at: String::new(),
    }
}

impl PendingConfirmations {
    /// The requests waiting for the person, oldest first.
    pub fn list(&self) -> Vec<PendingConfirmation> {
        self.list.cloned()
    }

    /// The oldest pending request.
    pub fn first(&self) -> Option<PendingConfirmation> {
        self.list.read().first().cloned()
    }

    /// The request the dialog presents: the oldest pending one, kept on
    /// screen until the person answers or dismisses it, even after it
    /// ended elsewhere.
    pub fn presented(&self) -> Option<Presented> {
        self.presented.cloned()
    }

    /// Approves `shown` (the person clicked Approve on it) through
    /// `approver`'s channel.
    pub fn approve(
        &self,
        shown: &ShownRequest,
        approver: &Approver,
    ) -> Result<Resolution, AnswerError> {
        self.resolve(shown, true, approver)
    }

    /// Denies `shown` through `approver`'s channel.
    pub fn deny(
        &self,
        shown: &ShownRequest,
        approver: &Approver,
    ) -> Result<Resolution, AnswerError> {
        self.resolve(shown, false, approver)
    }

    /// Approves `shown` with `proof` that the person gave the approval (a
    /// passkey assertion from [`get_assertion`](crate::passkey::get_assertion)
    /// as `{"method": "webauthn", "credential": …}`, an out-of-band code as
    /// `{"method": "out-of-band", "code": …}`): the registry's verifier
    /// checks it for exactly this request. Required for a request whose
    /// [`presence_required`](PendingConfirmation::presence_required) is set,
    /// which a plain [`approve`](Self::approve) cannot answer. A refused
    /// proof leaves the request live, to try again.
    pub fn approve_with_presence(
        &self,
        shown: &ShownRequest,
        approver: &Approver,
        proof: &serde_json::Value,
    ) -> Result<Resolution, AnswerError> {
        self.answer(shown, |confirmations| {
            confirmations.approve_with_presence(shown, approver, proof)
        })
    }

    /// Answers `shown`. Refused while the presented request is younger
    /// than [`ANSWER_DELAY_MS`]. On success the dialog moves on to the next
    /// request (which then waits its own delay); on failure the presented
    /// request is shown as ended (nothing else is resolved), unless it is
    /// still pending (a plain approval of a request that needs proof of
    /// presence, a refused proof): then it stays live.
    pub fn resolve(
        &self,
        shown: &ShownRequest,
        approved: bool,
        approver: &Approver,
    ) -> Result<Resolution, AnswerError> {
        self.answer(shown, |confirmations| {
            confirmations.resolve(shown, approved, approver)
        })
    }

    fn answer(
        &self,
        shown: &ShownRequest,
        give: impl FnOnce(&Confirmations) -> Result<Resolution, ResolveError>,
    ) -> Result<Resolution, AnswerError> {
        let controller = self.controller.peek().clone();
        let Some(confirmations) = controller else {
            return Err(AnswerError::Refused(ResolveError::Unknown));
        };
        let now = self.now.peek().as_ref().map(|r| r.now_ms()).unwrap_or(0);
        let too_soon = self
            .presented
            .peek()
            .as_ref()
            .is_some_and(|p| p.request.shown() == *shown && now < p.answerable_at_ms());
        if too_soon {
            return Err(AnswerError::TooSoon);
        }
        let answered = give(&confirmations).map_err(AnswerError::Refused);
        let mut presented = self.presented;
        match &answered {
            Ok(_) => {
                let next = confirmations.pending().into_iter().next();
                presented.set(next.map(|request| Presented {
                    request,
                    ended: None,
                    since_ms: now,
                }));
            }
            Err(_) if confirmations.find(&shown.confirmation_id).is_some() => {}
            Err(_) => {
                let current = presented.peek().clone();
                if let Some(current) = current
                    && current.request.shown() == *shown
                {
                    let ended = confirmations
                        .resolution(&shown.confirmation_id)
                        .unwrap_or_else(|| gone(&current.request));
                    presented.set(Some(Presented {
                        request: current.request,
                        ended: Some(ended),
                        since_ms: current.since_ms,
                    }));
                }
            }
        }
        answered
    }

    /// Puts an ended presented request away: the next pending one is
    /// presented. A live one stays (answer it instead).
    pub fn dismiss(&self) {
        let mut presented = self.presented;
        if presented.peek().as_ref().is_some_and(Presented::is_live) {
            return;
        }
        let next = self.list.peek().first().cloned();
        let now = self.now.peek().as_ref().map(|r| r.now_ms()).unwrap_or(0);
        presented.set(next.map(|request| Presented {
            request,
            ended: None,
            since_ms: now,
        }));
    }
}

/// What the dialog presents after the pending list became `pending`.
fn follow(
    current: Option<Presented>,
    pending: &[PendingConfirmation],
    confirmations: &Confirmations,
    now_ms: u64,
) -> Option<Presented> {
    match current {
        None => pending.first().cloned().map(|request| Presented {
            request,
            ended: None,
            since_ms: now_ms,
        }),
        Some(current) if current.ended.is_some() => Some(current),
        Some(current) => {
            let id = &current.request.confirmation_id;
            if pending.iter().any(|p| p.confirmation_id == *id) {
                return Some(current);
            }
            let ended = confirmations
                .resolution(id)
                .unwrap_or_else(|| gone(&current.request));
            Some(Presented {
                request: current.request,
                ended: Some(ended),
                since_ms: current.since_ms,
            })
        }
    }
}

/// The pending confirmations of the provided registry (empty, and every
/// answer `Unknown`, without one). The registry's listener hands each new
/// list to a task of this component's scope, which stores it in a signal:
/// the listener never touches the `VirtualDom` from another thread.
pub fn use_pending_confirmations() -> PendingConfirmations {
    let registry = use_registry();
    use_hook(move || {
        let confirmations = registry
            .as_ref()
            .map(agent_surface::Registry::confirmations);
        let initial = confirmations
            .as_ref()
            .map(Confirmations::pending)
            .unwrap_or_default();
        let clock = registry.clone();
        let now_ms = move || {
            clock
                .as_ref()
                .map(agent_surface::Registry::now_ms)
                .unwrap_or(0)
        };
        let mut list = Signal::new(initial.clone());
        let mut presented = Signal::new(initial.first().cloned().map(|request| Presented {
            request,
            ended: None,
            since_ms: now_ms(),
        }));
        let controller = Signal::new(confirmations.clone());
        let now = Signal::new(registry.clone());
        if let Some(confirmations) = confirmations {
            let (sender, mut receiver) = watch::channel(initial);
            let subscription: PendingSubscription = confirmations.subscribe(move |pending| {
                sender.send_replace(pending.to_vec());
            });
            // The subscription lives as long as the task, which the scope owns.
            let keep = Rc::new(subscription);
            spawn(async move {
                let _subscription = keep;
                while receiver.changed().await.is_ok() {
                    let pending = receiver.borrow_and_update().clone();
                    let next = follow(presented.peek().clone(), &pending, &confirmations, now_ms());
                    if *presented.peek() != next {
                        presented.set(next);
                    }
                    list.set(pending);
                }
            });
        }
        PendingConfirmations {
            list,
            presented,
            controller,
            now,
        }
    })
}
