//! `use_surface_revision`: re-render when the agent acted.

use agent_surface::events::SurfaceEvent;
use dioxus_core::{spawn, use_hook};
use dioxus_signals::{ReadSignal, Signal, WritableExt};
use tokio::sync::watch;

use crate::provider::use_registry;

/// A counter that moves whenever the provided registry's surface changed or
/// an invocation settled (an agent's call changed application state) or a
/// confirmation was requested or resolved. A component that reads it
/// re-renders then, so what an agent did shows without a reload. Bursts
/// coalesce into one re-render with the latest count.
pub fn use_surface_revision() -> ReadSignal<u64> {
    let registry = use_registry();
    use_hook(move || {
        let mut revision = Signal::new(0_u64);
        if let Some(registry) = registry {
            let (sender, mut receiver) = watch::channel(0_u64);
            let subscription = registry.subscribe(move |event| {
                if matches!(
                    event,
                    SurfaceEvent::SurfaceChanged { .. }
                        | SurfaceEvent::InvocationSettled { .. }
                        | SurfaceEvent::ConfirmationRequested { .. }
                        | SurfaceEvent::ConfirmationResolved { .. }
                        | SurfaceEvent::EventsDropped { .. }
                ) {
                    sender.send_modify(|count| *count = count.wrapping_add(1));
                }
            });
            spawn(async move {
                let _subscription = subscription;
                while receiver.changed().await.is_ok() {
                    let count = *receiver.borrow_and_update();
                    revision.set(count);
                }
            });
        }
        ReadSignal::from(revision)
    })
}
