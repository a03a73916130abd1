//! Pushing outside changes into a tab: a `tokio::sync::watch` receiver
//! copied into a signal by a task of the component's scope, and the
//! revision every view reads to follow what the agent did.

use dioxus::prelude::*;

/// Moves when the agent acted (surface changed, a call settled).
#[derive(Clone, Copy)]
pub(crate) struct Revision(pub(crate) ReadSignal<u64>);

/// The latest value of the receiver `subscribe` makes (once, on the first
/// render), as a signal: reading it re-renders the component when the
/// value changes.
pub(crate) fn use_watch<T: Clone + 'static>(
    subscribe: impl FnOnce() -> tokio::sync::watch::Receiver<T>,
) -> ReadSignal<T> {
    use_hook(move || {
        let mut receiver = subscribe();
        let mut value = Signal::new(receiver.borrow_and_update().clone());
        spawn(async move {
            while receiver.changed().await.is_ok() {
                let latest = receiver.borrow_and_update().clone();
                value.set(latest);
            }
        });
        ReadSignal::from(value)
    })
}
