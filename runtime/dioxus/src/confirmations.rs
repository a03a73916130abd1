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
//! slides under the person's cursor.

use std::rc::Rc;

use agent_surface::confirmation::{
    Approver, ConfirmationOutcome, Confirmations, PendingConfirmation, PendingSubscription,
    Resolution, ResolveError, ShownRequest,
};
use dioxus_core::{spawn, use_hook};
use dioxus_signals::{ReadableExt, Signal, WritableExt};
use tokio::sync::watch;

use crate::provider::use_registry;

/// The request a dialog presents, and whether it is still live.
#[derive(Clone, Debug, PartialEq)]
pub struct Presented {
    /// The request as it was shown.
    pub request: PendingConfirmation,
    /// `None` while it waits for the person; otherwise how it ended without
    /// this dialog's answer (withdrawn, expired, answered elsewhere). An
    /// ended request cannot be answered: show why, and offer to dismiss.
    pub ended: Option<Resolution>,
}

impl Presented {
    /// Whether the person can still answer it.
    pub fn is_live(&self) -> bool {
        self.ended.is_none()
    }
}

/// The pending confirmations of the provided registry, kept current: a
/// component that reads [`list`](Self::list) or [`presented`](Self::presented)
/// re-renders whenever a request arrives, is answered, expires or is
/// withdrawn.
#[derive(Clone, Copy, PartialEq)]
pub struct PendingConfirmations {
    list: Signal<Vec<PendingConfirmation>>,
    presented: Signal<Option<Presented>>,
    controller: Signal<Option<Confirmations>>,
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
    ) -> Result<Resolution, ResolveError> {
        self.resolve(shown, true, approver)
    }

    /// Denies `shown` through `approver`'s channel.
    pub fn deny(
        &self,
        shown: &ShownRequest,
        approver: &Approver,
    ) -> Result<Resolution, ResolveError> {
        self.resolve(shown, false, approver)
    }

    /// Answers `shown`. On success the dialog moves on to the next request;
    /// on failure the presented request is shown as ended (nothing else is
    /// resolved).
    pub fn resolve(
        &self,
        shown: &ShownRequest,
        approved: bool,
        approver: &Approver,
    ) -> Result<Resolution, ResolveError> {
        let controller = self.controller.peek().clone();
        let Some(confirmations) = controller else {
            return Err(ResolveError::Unknown);
        };
        let answered = confirmations.resolve(shown, approved, approver);
        let mut presented = self.presented;
        match &answered {
            Ok(_) => {
                let next = confirmations.pending().into_iter().next();
                presented.set(next.map(|request| Presented {
                    request,
                    ended: None,
                }));
            }
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
        presented.set(next.map(|request| Presented {
            request,
            ended: None,
        }));
    }
}

/// What the dialog presents after the pending list became `pending`.
fn follow(
    current: Option<Presented>,
    pending: &[PendingConfirmation],
    confirmations: &Confirmations,
) -> Option<Presented> {
    match current {
        None => pending.first().cloned().map(|request| Presented {
            request,
            ended: None,
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
        let mut list = Signal::new(initial.clone());
        let mut presented = Signal::new(initial.first().cloned().map(|request| Presented {
            request,
            ended: None,
        }));
        let controller = Signal::new(confirmations.clone());
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
                    let next = follow(presented.peek().clone(), &pending, &confirmations);
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
        }
    })
}
