//! Time on every platform the runtime runs on: instants, sleeps, timeouts
//! and detached tasks. Natively they are tokio's (so a paused test runtime
//! controls them exactly); in a browser page (`wasm32-unknown-unknown`),
//! where tokio's timer and `std::time` panic, they are the page's:
//! `performance.now()` through `web-time`, `setTimeout` through
//! `gloo-timers`, and tasks on the page's event loop through
//! `wasm-bindgen-futures`.

#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
pub use native::*;

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
pub use browser::*;

#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
mod native {
    use std::future::Future;

    pub(crate) use std::time::Instant as SteadyInstant;
    pub(crate) use std::time::{SystemTime, UNIX_EPOCH};
    pub(crate) use tokio::time::timeout;
    pub use tokio::time::{Instant, sleep, sleep_until};

    /// Whether detached tasks can run here (inside a tokio runtime).
    pub(crate) fn can_spawn() -> bool {
        tokio::runtime::Handle::try_current().is_ok()
    }

    /// Runs `task` detached, when a runtime is here to run it; `false`
    /// (nothing runs) otherwise.
    pub(crate) fn spawn(task: impl Future<Output = ()> + Send + 'static) -> bool {
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                drop(runtime.spawn(task));
                true
            }
            Err(_) => false,
        }
    }
}

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
mod browser {
    use std::future::Future;
    use std::pin::pin;
    use std::time::Duration;

    pub use web_time::Instant;
    pub(crate) use web_time::{Instant as SteadyInstant, SystemTime, UNIX_EPOCH};

    /// A timeout elapsed (as `tokio::time::error::Elapsed`).
    #[derive(Debug)]
    pub(crate) struct Elapsed;

    /// Waits `duration` on the page's timer (`setTimeout`). The timer is
    /// the page's alone: a page runs one thread, so it never crosses one.
    pub async fn sleep(duration: Duration) {
        send_wrapper::SendWrapper::new(gloo_timers::future::sleep(duration)).await;
    }

    /// Waits until `at`.
    pub async fn sleep_until(at: Instant) {
        sleep(at.saturating_duration_since(Instant::now())).await;
    }

    /// `future`, unless `duration` passes first.
    pub(crate) async fn timeout<F: Future>(
        duration: Duration,
        future: F,
    ) -> Result<F::Output, Elapsed> {
        let mut future = pin!(future);
        let mut timer = pin!(sleep(duration));
        std::future::poll_fn(|cx| {
            if let std::task::Poll::Ready(output) = future.as_mut().poll(cx) {
                return std::task::Poll::Ready(Ok(output));
            }
            timer.as_mut().poll(cx).map(|()| Err(Elapsed))
        })
        .await
    }

    /// Detached tasks run on the page's event loop.
    pub(crate) fn can_spawn() -> bool {
        true
    }

    /// Runs `task` on the page's event loop.
    pub(crate) fn spawn(task: impl Future<Output = ()> + Send + 'static) -> bool {
        wasm_bindgen_futures::spawn_local(task);
        true
    }
}
