//! The registry's clock as a signal that moves once a second while the
//! component lives: countdowns and "2 minutes ago" stay true on screen.

use std::time::Duration;

use agent_surface::Registry;
use dioxus::prelude::*;

/// Now, in epoch milliseconds of the registry's clock, re-read every second.
pub(crate) fn use_now_ms() -> ReadSignal<u64> {
    let registry = use_context::<Registry>();
    let mut now = use_signal(|| registry.now_ms());
    use_hook(move || {
        spawn(async move {
            let mut ticks = tokio::time::interval(Duration::from_secs(1));
            loop {
                ticks.tick().await;
                now.set(registry.now_ms());
            }
        });
    });
    now.into()
}
