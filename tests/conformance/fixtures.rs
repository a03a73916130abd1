//! Components and helpers for the registry and pipeline tests.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_surface::prelude::*;
use agent_surface::registry::Registry;
use tokio::sync::watch;

/// Ids to act on.
#[agent_schema]
#[derive(Clone, Debug)]
pub(crate) struct Ids {
    /// The ids.
    #[schemars(length(min = 1))]
    #[agent_schema(unbounded)]
    pub(crate) ids: Vec<String>,
}

/// How long to sleep.
#[agent_schema]
#[derive(Clone, Debug)]
pub(crate) struct Delay {
    /// Milliseconds.
    pub(crate) ms: u64,
}

/// How many times handlers ran.
#[agent_schema]
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Counted {
    /// Runs so far.
    pub(crate) runs: usize,
}

/// A component whose handlers the tests control.
pub(crate) struct Probe {
    pub(crate) runs: AtomicUsize,
    pub(crate) gate: watch::Sender<bool>,
    pub(crate) on: AtomicBool,
    pub(crate) seen: Mutex<Vec<String>>,
}

impl Probe {
    pub(crate) fn new() -> Arc<Probe> {
        Arc::new(Probe {
            runs: AtomicUsize::new(0),
            gate: watch::channel(false).0,
            on: AtomicBool::new(true),
            seen: Mutex::new(Vec::new()),
        })
    }

    pub(crate) fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }

    /// Lets every handler waiting on the gate finish.
    pub(crate) fn open(&self) {
        self.gate.send_replace(true);
    }

    fn count(&self) -> Counted {
        Counted {
            runs: self.runs.fetch_add(1, Ordering::SeqCst) + 1,
        }
    }

    async fn wait_gate(&self) {
        let mut gate = self.gate.subscribe();
        let _ = gate.wait_for(|open| *open).await;
    }
}

/// A probe for pipeline tests.
#[agent_component(type = "test.probe")]
impl Probe {
    /// How many times handlers ran.
    #[observation]
    fn read(&self) -> Counted {
        Counted { runs: self.runs() }
    }

    /// Waits for the gate, then reports.
    #[observation]
    async fn read_held(&self) -> Counted {
        self.wait_gate().await;
        Counted { runs: self.runs() }
    }

    /// Counts a poke and remembers the ids.
    #[action(effect = "local-state")]
    fn poke(&self, input: Ids) -> Counted {
        if let Ok(mut seen) = self.seen.lock() {
            seen.extend(input.ids);
        }
        self.count()
    }

    /// Waits for the gate (ignoring cancellation), then counts.
    #[action(effect = "local-state")]
    async fn hold(&self) -> Counted {
        self.wait_gate().await;
        self.count()
    }

    /// Sleeps cooperatively.
    #[action(effect = "local-state", idempotent, timeout = "1s")]
    async fn nap(&self, input: Delay, ctx: &ActionContext) -> Result<Counted, ActionError> {
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(input.ms)) => Ok(self.count()),
            () = ctx.cancellation().cancelled() => Err(ActionError::cancelled()),
        }
    }

    /// Panics.
    #[action(effect = "local-state")]
    fn explode(&self) {
        #[allow(clippy::panic)]
        {
            panic!("the probe exploded");
        }
    }

    /// Fails with an error whose text must stay with operators.
    #[action(effect = "local-state")]
    fn fail(&self) -> Result<(), std::io::Error> {
        Err(std::io::Error::other(
            "password=hunter2 at db-internal.local",
        ))
    }

    /// Returns a value JSON cannot represent.
    #[observation]
    fn nan(&self) -> f64 {
        f64::NAN
    }

    /// Returns more than the output limit.
    #[observation]
    fn huge(&self) -> Vec<String> {
        vec!["x".repeat(1000); 40]
    }

    /// Only available while the probe is on.
    #[action(effect = "local-state", when = is_on, unavailable_reason = "Switch the probe on first")]
    fn gated(&self) -> Counted {
        self.count()
    }

    /// Needs the user's approval.
    #[action(effect = "local-state", confirmation = "required")]
    fn guarded(&self, input: Ids) -> Counted {
        if let Ok(mut seen) = self.seen.lock() {
            seen.extend(input.ids);
        }
        self.count()
    }

    /// Also needs the user's approval.
    #[action(effect = "local-state", confirmation = "required")]
    fn guarded_too(&self, input: Ids) -> Counted {
        let _ = input;
        self.count()
    }

    /// Two at a time, one waiting.
    #[action(effect = "local-state", concurrency = "parallel(2)", queue_depth = 1)]
    async fn wide(&self) -> Counted {
        self.wait_gate().await;
        self.count()
    }

    /// Its own queue, apart from the instance queue.
    #[action(effect = "local-state", concurrency = "capability")]
    async fn solo(&self) -> Counted {
        self.wait_gate().await;
        self.count()
    }

    fn is_on(&self) -> bool {
        self.on.load(Ordering::SeqCst)
    }
}

type Commit = Box<dyn FnOnce() + Send>;

/// A navigation component whose `go` commits through a test-supplied hook.
pub(crate) struct Nav {
    pub(crate) gate: watch::Sender<Option<bool>>,
    pub(crate) on_commit: Mutex<Option<Commit>>,
}

impl Nav {
    pub(crate) fn new() -> Arc<Nav> {
        Arc::new(Nav {
            gate: watch::channel(None).0,
            on_commit: Mutex::new(None),
        })
    }

    /// The router accepts (`true`) or refuses (`false`) the transition.
    pub(crate) fn decide(&self, accept: bool) {
        self.gate.send_replace(Some(accept));
    }
}

/// Application navigation.
#[agent_component(type = "test.nav")]
impl Nav {
    /// Navigate; resolves when the router commits the transition.
    #[action(effect = "navigation", timeout = "2s")]
    async fn go(&self, ctx: &ActionContext) -> Result<Counted, ActionError> {
        let mut gate = self.gate.subscribe();
        let decision = tokio::select! {
            decision = gate.wait_for(Option::is_some) => decision.ok().and_then(|d| *d),
            () = ctx.cancellation().cancelled() => return Err(ActionError::cancelled()),
        };
        match decision {
            Some(true) => {
                let commit = self.on_commit.lock().ok().and_then(|mut hook| hook.take());
                if let Some(commit) = commit {
                    commit();
                }
                Ok(Counted { runs: 1 })
            }
            _ => Err(ActionError::failed("the router refused the transition")),
        }
    }
}

/// A registry for tests.
pub(crate) fn registry() -> Registry {
    Registry::builder().environment(Environment::Test).build()
}

/// A test consumer.
pub(crate) fn consumer(id: &str) -> Consumer {
    Consumer::new(ConsumerKind::Test, id)
}

/// Invokes as consumer `tester`.
pub(crate) async fn call(registry: &Registry, invocation: Invocation) -> InvocationResult {
    registry
        .invoke(invocation, InvokeOptions::consumer(consumer("tester")))
        .await
}

/// The error code of a result (`None` when ok).
pub(crate) fn code(result: &InvocationResult) -> Option<ErrorCode> {
    result.error().map(ErrorPayload::code)
}

/// Lets spawned tasks and timers run (paused-time tests).
pub(crate) async fn settle_tasks() {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
}

/// The confirmation id of a `CONFIRMATION_REQUIRED` result (asserting it is one,
/// with retry `with-confirmation`).
pub(crate) fn confirmation_id(result: &InvocationResult) -> String {
    let error = result.error().expect("an error");
    assert_eq!(error.code(), ErrorCode::ConfirmationRequired, "{error:?}");
    assert_eq!(error.retry(), agent_surface::error::Retry::WithConfirmation);
    error
        .detail("confirmationId")
        .and_then(serde_json::Value::as_str)
        .unwrap()
        .to_owned()
}

/// The host answering a pending request by id, as a test's person would:
/// it shows the pending record and answers what it showed.
pub(crate) trait AnswerById {
    /// Approves the pending request `id` through the host channel.
    fn approve_id(&self, id: &str) -> Result<Resolution, ResolveError>;
    /// Denies the pending request `id` through the host channel.
    fn deny_id(&self, id: &str) -> Result<Resolution, ResolveError>;
}

impl AnswerById for agent_surface::confirmation::Confirmations {
    fn approve_id(&self, id: &str) -> Result<Resolution, ResolveError> {
        let shown = self.find(id).ok_or(ResolveError::NotPending)?.shown();
        self.approve(&shown)
    }

    fn deny_id(&self, id: &str) -> Result<Resolution, ResolveError> {
        let shown = self.find(id).ok_or(ResolveError::NotPending)?.shown();
        self.deny(&shown)
    }
}

use agent_surface::confirmation::{Resolution, ResolveError};

// ---------------------------------------------------------------------------
// Shared by the reliability tests and their attacks.

/// A component whose handler says when it started and then waits.
pub(crate) struct Worker {
    pub(crate) started: AtomicUsize,
    pub(crate) began: tokio::sync::Notify,
    pub(crate) gate: watch::Sender<bool>,
}

impl Worker {
    pub(crate) fn new() -> Arc<Worker> {
        Arc::new(Worker {
            started: AtomicUsize::new(0),
            began: tokio::sync::Notify::new(),
            gate: watch::channel(false).0,
        })
    }

    pub(crate) fn started(&self) -> usize {
        self.started.load(Ordering::SeqCst)
    }
}

/// Work that waits for the test.
#[agent_component(type = "test.worker")]
impl Worker {
    /// Starts, then waits for the gate (ignoring cancellation).
    #[action(effect = "local-state")]
    async fn work(&self, input: Ids) -> Counted {
        let runs = self.started.fetch_add(1, Ordering::SeqCst) + 1;
        self.began.notify_one();
        let mut gate = self.gate.subscribe();
        let _ = gate.wait_for(|open| *open).await;
        let _ = input;
        Counted { runs }
    }
}

/// `work` with invocation id `id`.
pub(crate) fn work(id: &str) -> Invocation {
    Invocation::new("view:test.worker.work")
        .input(serde_json::json!({"ids": ["a"]}))
        .invocation_id(id)
}

/// Holds `on_invoke` until the test opens the gate.
pub(crate) struct Held {
    pub(crate) entered: Arc<tokio::sync::Notify>,
    pub(crate) gate: watch::Receiver<bool>,
}

impl agent_surface::policy::Policy for Held {
    fn name(&self) -> &str {
        "held"
    }
    fn on_invoke<'a>(
        &'a self,
        _ctx: &'a agent_surface::policy::InvokeContext<'a>,
        next: agent_surface::policy::Next<'a, agent_surface::policy::InvokeContext<'a>>,
    ) -> agent_surface::policy::BoxFuture<'a, agent_surface::policy::PolicyResult> {
        Box::pin(async move {
            self.entered.notify_one();
            let mut gate = self.gate.clone();
            let _ = gate.wait_for(|open| *open).await;
            next.run().await
        })
    }
}

/// An embedded (wait-mode) toolset for consumer `agent`.
pub(crate) fn embedded_toolset(registry: &Registry) -> agent_surface::toolset::Toolset {
    agent_surface::toolset::Toolset::builder(registry)
        .consumer(consumer("agent"))
        .topology(agent_surface::toolset::Topology::Embedded)
        .build()
        .expect("an embedded toolset")
}

/// The tool name of the probe's `guarded`.
pub(crate) fn guarded_name(toolset: &agent_surface::toolset::Toolset) -> String {
    toolset
        .tool_for("view:test.probe.guarded", None)
        .map(|tool| tool.name().to_owned())
        .unwrap_or_default()
}

/// Calls `guarded` through `toolset` in the background with tool-call id
/// `call_id` (in wait mode it waits for the person).
pub(crate) fn spawn_wait(
    toolset: &agent_surface::toolset::Toolset,
    call_id: &'static str,
    token: Option<tokio_util::sync::CancellationToken>,
) -> tokio::task::JoinHandle<InvocationResult> {
    let toolset = toolset.clone();
    let name = guarded_name(&toolset);
    tokio::spawn(async move {
        toolset
            .execute_with_options(
                &name,
                serde_json::json!({"ids": ["w"]}),
                agent_surface::toolset::ExecuteOptions::new()
                    .tool_call_id(Some(call_id))
                    .cancellation(token),
            )
            .await
    })
}

/// The codes the audit trail settled invocation `id` with, in order.
pub(crate) fn settled_codes(registry: &Registry, id: &str) -> Vec<Option<ErrorCode>> {
    registry
        .audit_log()
        .into_iter()
        .filter(|e| e.kind == agent_surface::audit::AuditKind::InvocationSettled)
        .filter(|e| e.invocation_id.as_deref() == Some(id))
        .map(|e| e.code)
        .collect()
}
