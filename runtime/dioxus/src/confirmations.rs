//! `use_pending_confirmations`: the requests waiting for the person, for
//! the application's confirmation dialog.

use std::rc::Rc;

use agent_surface::confirmation::{
    Confirmations, PendingConfirmation, PendingSubscription, ResolveError,
};
use dioxus_core::{spawn, use_hook};
use dioxus_signals::{ReadableExt, Signal, WritableExt};
use tokio::sync::watch;

use crate::provider::use_registry;

/// The pending confirmations of the provided registry, kept current: a
/// component that reads [`list`](Self::list) re-renders whenever a request
/// arrives, is answered or expires.
#[derive(Clone, Copy, PartialEq)]
pub struct PendingConfirmations {
    list: Signal<Vec<PendingConfirmation>>,
    controller: Signal<Option<Confirmations>>,
}

impl std::fmt::Debug for PendingConfirmations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingConfirmations")
            .field("pending", &self.list.peek().len())
            .finish()
    }
}

impl PendingConfirmations {
    /// The requests waiting for the person, oldest first. Show each one's
    /// summary, effect and exact input
    /// ([`display_input`](PendingConfirmation::display_input)).
    pub fn list(&self) -> Vec<PendingConfirmation> {
        self.list.cloned()
    }

    /// The oldest request, the one a modal dialog shows.
    pub fn first(&self) -> Option<PendingConfirmation> {
        self.list.read().first().cloned()
    }

    /// Approves a request (the person clicked Approve).
    pub fn approve(&self, confirmation_id: &str) -> Result<(), ResolveError> {
        self.resolve(confirmation_id, true)
    }

    /// Denies a request (the person clicked Deny).
    pub fn deny(&self, confirmation_id: &str) -> Result<(), ResolveError> {
        self.resolve(confirmation_id, false)
    }

    /// Approves or denies a request.
    pub fn resolve(&self, confirmation_id: &str, approved: bool) -> Result<(), ResolveError> {
        match &*self.controller.peek() {
            Some(confirmations) => confirmations.resolve(confirmation_id, approved),
            None => Err(ResolveError::Unknown),
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
                    list.set(pending);
                }
            });
        }
        PendingConfirmations { list, controller }
    })
}
