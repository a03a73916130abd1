//! A handler's cancellation signal: an `async` handler's fires when its call
//! times out, is cancelled or its component is unmounted; a synchronous
//! handler's (which nothing interrupts while it runs) is its own, never
//! fired by the registry and never shared with another call.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use agent_surface::prelude::*;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::fixtures::{Counted, call, code, consumer, registry, settle_tasks};

/// Records what its handlers saw of their signal.
struct Listener {
    /// An async handler saw its signal fire.
    signalled: AtomicBool,
    /// An async handler started waiting.
    waiting: Notify,
    /// Synchronous runs that found their signal already fired.
    fired_on_entry: AtomicUsize,
    /// Tokens the synchronous handler handed out.
    tokens: std::sync::Mutex<Vec<CancellationToken>>,
}

/// Handlers that watch their cancellation signal.
#[agent_component(type = "test.listener")]
impl Listener {
    /// Waits until its call is interrupted.
    #[action(effect = "local-state", timeout = "1s")]
    async fn wait(&self, ctx: &ActionContext) -> Result<(), ActionError> {
        self.waiting.notify_one();
        ctx.cancellation().cancelled().await;
        self.signalled.store(true, Ordering::SeqCst);
        Err(ActionError::cancelled())
    }

    /// Aborts a navigation: fires its own signal, then fails.
    #[action(effect = "navigation")]
    fn abort_navigation(&self, ctx: &ActionContext) -> Result<(), ActionError> {
        ctx.cancellation().cancel();
        Err(ActionError::failed("the router refused"))
    }

    /// A slow read that notes whether it was ever signalled.
    #[observation(timeout = "1s")]
    async fn slow_read(&self, ctx: &ActionContext) -> Result<Counted, ActionError> {
        self.waiting.notify_one();
        tokio::select! {
            () = ctx.cancellation().cancelled() => self.signalled.store(true, Ordering::SeqCst),
            () = tokio::time::sleep(Duration::from_secs(5)) => {}
        }
        Ok(Counted { runs: 0 })
    }

    /// Reads its signal, checks a clone shares it, then fires it.
    #[action(effect = "local-state")]
    fn fire_own(&self, ctx: &ActionContext) {
        if ctx.is_cancelled() {
            self.fired_on_entry.fetch_add(1, Ordering::SeqCst);
        }
        let copy = ctx.clone();
        copy.cancellation().cancel();
        assert!(ctx.is_cancelled(), "a clone shares the signal");
        self.tokens.lock().unwrap().push(ctx.cancellation().clone());
    }
}

fn listener() -> Arc<Listener> {
    Arc::new(Listener {
        signalled: AtomicBool::new(false),
        waiting: Notify::new(),
        fired_on_entry: AtomicUsize::new(0),
        tokens: std::sync::Mutex::new(Vec::new()),
    })
}

/// What interrupts a running `async` handler.
enum Interruption {
    Timeout,
    Cancel,
    Unmount,
    Dispose,
}

/// Runs the waiting handler until `interruption` ends its call: the code it
/// settled with, and whether the handler saw its signal fire.
async fn interrupted(interruption: Interruption) -> (Option<ErrorCode>, bool) {
    let registry = registry();
    let listener = listener();
    let mounted = registry.mount(listener.clone()).unwrap();
    let cancel = CancellationToken::new();
    let options = InvokeOptions::consumer(consumer("tester")).cancellation(cancel.clone());
    let running = registry.invoke(Invocation::new("view:test.listener.wait"), options);
    // The block owns the mount: it is dropped only to unmount, else kept
    // until the call settled.
    let (result, _kept) = tokio::join!(running, async {
        listener.waiting.notified().await;
        match interruption {
            // The handler's own timeout (1 s) passes with paused time.
            Interruption::Timeout => Some(mounted),
            Interruption::Cancel => {
                cancel.cancel();
                Some(mounted)
            }
            Interruption::Unmount => None,
            Interruption::Dispose => {
                registry.dispose();
                Some(mounted)
            }
        }
    });
    settle_tasks().await;
    (code(&result), listener.signalled.load(Ordering::SeqCst))
}

#[tokio::test(start_paused = true)]
async fn as_conc_011_a_timed_out_async_handler_is_signalled() {
    let (code, signalled) = interrupted(Interruption::Timeout).await;
    assert_eq!(code, Some(ErrorCode::Timeout));
    assert!(signalled);
}

#[tokio::test(start_paused = true)]
async fn as_conc_012_an_externally_cancelled_async_handler_is_signalled() {
    let (code, signalled) = interrupted(Interruption::Cancel).await;
    assert_eq!(code, Some(ErrorCode::Cancelled));
    assert!(signalled);
}

#[tokio::test(start_paused = true)]
async fn as_conc_010_an_async_handler_unmounted_mid_flight_is_signalled() {
    let (code, signalled) = interrupted(Interruption::Unmount).await;
    assert_eq!(code, Some(ErrorCode::ComponentUnmounted));
    assert!(signalled);
}

#[tokio::test(start_paused = true)]
async fn as_conc_010_an_async_handler_of_a_disposed_registry_is_signalled() {
    let (code, signalled) = interrupted(Interruption::Dispose).await;
    assert_eq!(code, Some(ErrorCode::Cancelled));
    assert!(signalled);
}

#[tokio::test]
async fn as_conc_011_a_synchronous_handler_owns_a_signal_no_other_call_shares() {
    let registry = registry();
    let listener = listener();
    let _mounted = registry.mount(listener.clone()).unwrap();
    for _ in 0..3 {
        let result = call(&registry, Invocation::new("view:test.listener.fireOwn")).await;
        assert!(result.is_ok(), "{result:?}");
    }
    // Each run found its signal unfired although every earlier run fired
    // its own: no signal is shared between calls.
    assert_eq!(listener.fired_on_entry.load(Ordering::SeqCst), 0);
    {
        let tokens = listener.tokens.lock().unwrap();
        assert_eq!(tokens.len(), 3);
        assert!(tokens.iter().all(CancellationToken::is_cancelled));
    }
    // The registry is unaffected: an async handler still waits for its own.
    let timed = tokio::time::timeout(
        Duration::from_millis(50),
        call(&registry, Invocation::new("view:test.listener.wait")),
    )
    .await;
    assert!(timed.is_err(), "the async handler was not signalled early");
}

#[tokio::test]
async fn as_nav_002_a_synchronous_navigation_that_fires_its_signal_settles_cancelled() {
    let registry = registry();
    let _mounted = registry.mount(listener()).unwrap();
    let result = call(
        &registry,
        Invocation::new("view:test.listener.abortNavigation"),
    )
    .await;
    assert_eq!(code(&result), Some(ErrorCode::Cancelled));
}

#[tokio::test(start_paused = true)]
async fn as_obs_003_a_timed_out_observation_is_settled_without_a_signal() {
    let registry = registry();
    let listener = listener();
    let _mounted = registry.mount(listener.clone()).unwrap();
    let result = call(&registry, Invocation::new("view:test.listener.slowRead")).await;
    assert_eq!(code(&result), Some(ErrorCode::Timeout));
    settle_tasks().await;
    assert!(
        !listener.signalled.load(Ordering::SeqCst),
        "reads are settled by the registry, never signalled"
    );
}
