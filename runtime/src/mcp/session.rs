//! The handler of one MCP session: identity, the tool list, and
//! `tools/list_changed` delivery on both protocol generations.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CustomRequest, CustomResult, Implementation,
    InitializeRequestParams, InitializeResult, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, SubscriptionFilter, Tool as McpTool,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};

use super::Shared;
use super::convert::to_mcp_tool;
use crate::adapter::{ChangeWatcher, ConsumerView, Mark, served};

/// A handler's lifetime: dropping the last clone of the handler (the
/// session ended, or a stateless request was answered) stops its background
/// tasks and forgets what its own identity left behind.
pub(super) struct Life {
    /// This session's own consumer id: a transport session's from the
    /// start, an HTTP session's from its `initialize`; unset for a
    /// stateless HTTP request.
    pub(super) session: OnceLock<String>,
    /// A stateless request's own anonymous identity and its detached view,
    /// made on first use.
    pub(super) anonymous: OnceLock<Option<(String, Arc<ConsumerView>)>>,
    /// The session's own view, held while the session lives (never evicted
    /// from under it).
    pub(super) held: OnceLock<Arc<ConsumerView>>,
    /// Whether `initialize` was answered (a second one is refused).
    initialized: AtomicBool,
    /// The handshake-era notifier's task, ended with the session.
    notifier: Mutex<Option<tokio::task::AbortHandle>>,
    shared: Arc<Shared>,
    /// The moment the handshake-era notifier covers from: the `initialize`
    /// response (at the latest), taken before it is sent.
    opened: Mutex<Mark>,
    /// `subscriptions/listen` requests acknowledged (or about to be) whose
    /// stream has not started, and the earliest mark among them.
    listens: PendingListens,
}

/// The `subscriptions/listen` requests acknowledged whose stream has not
/// started, and the earliest mark among them.
struct PendingListens(Mutex<(usize, Mark)>);

impl PendingListens {
    /// One more acknowledged listen, whose stream covers from `mark`.
    fn acknowledge(&self, mark: Mark) {
        let mut listens = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if listens.0 == 0 {
            listens.1 = mark;
        }
        listens.0 += 1;
    }

    /// The mark a starting stream covers from: the earliest among the
    /// acknowledged listens not yet started (never later than its own).
    fn take(&self) -> Mark {
        let mut listens = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if listens.0 == 0 {
            return Mark::unknown();
        }
        listens.0 -= 1;
        listens.1
    }
}

impl Drop for Life {
    fn drop(&mut self) {
        if let Some(notifier) = self
            .notifier
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            notifier.abort();
        }
        if let Some(consumer) = self.session.get() {
            // The session ended: its view, settled dedupe records and open
            // confirmations go with it (nobody can present them any more).
            self.shared.views.end_session(consumer);
        }
        if let Some(Some((_, view))) = self.anonymous.get() {
            // Its confirmations stay redeemable by whoever holds their ids
            // (see `identity`); they expire with their time to live.
            view.toolset().dispose();
        }
    }
}

/// The handler of one MCP session (or, for stateless HTTP, one request).
#[derive(Clone)]
pub struct McpSession {
    pub(super) shared: Arc<Shared>,
    pub(super) life: Arc<Life>,
}

impl fmt::Debug for McpSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpSession")
            .field("session", &self.life.session.get())
            .finish_non_exhaustive()
    }
}

impl McpSession {
    /// A handler; `session` is a transport session's own consumer id
    /// (`None` for HTTP, whose sessions get theirs at `initialize`).
    pub(super) fn new(shared: &Arc<Shared>, session: Option<String>) -> McpSession {
        let opened = shared.mark();
        let life = Life {
            session: OnceLock::new(),
            anonymous: OnceLock::new(),
            held: OnceLock::new(),
            initialized: AtomicBool::new(false),
            notifier: Mutex::new(None),
            shared: Arc::clone(shared),
            opened: Mutex::new(opened),
            listens: PendingListens(Mutex::new((0, opened))),
        };
        if let Some(session) = session {
            let _ = life.session.set(session);
        }
        McpSession {
            shared: Arc::clone(shared),
            life: Arc::new(life),
        }
    }

    /// The mark a starting listen stream covers from: the earliest among
    /// the acknowledged listens not yet started (never later than its own).
    fn take_listen_mark(&self) -> Mark {
        self.life.listens.take()
    }

    /// Handshake-era sessions: pushes `list_changed` from a task that ends
    /// with the session, covering every change since the `initialize`
    /// response.
    fn spawn_notifier(&self, peer: rmcp::Peer<RoleServer>, view: Arc<ConsumerView>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let since = *self
            .life
            .opened
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let (mut watcher, due) =
            ChangeWatcher::attach(&self.shared.registry, &self.shared.activity, view, since);
        // Ended by the session's end (aborted where it waits), not by a
        // second wait polled beside every change: a session's change costs
        // one wake-up.
        let task = runtime.spawn(async move {
            if due && peer.notify_tool_list_changed().await.is_err() {
                return;
            }
            while watcher.changed().await.is_some() {
                if peer.notify_tool_list_changed().await.is_err() {
                    return;
                }
            }
        });
        let previous = self
            .life
            .notifier
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .replace(task.abort_handle());
        if let Some(previous) = previous {
            previous.abort();
        }
    }
}

impl ServerHandler for McpSession {
    fn get_info(&self) -> ServerConfig {
        let mut config = ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new(
            self.shared.name.clone(),
            self.shared.version.clone(),
        ));
        if let Some(instructions) = &self.shared.instructions {
            config = config.with_instructions(instructions.clone());
        }
        config
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        if self.life.initialized.swap(true, Ordering::SeqCst) {
            // A live session keeps what it negotiated: a second handshake
            // would downgrade its protocol and replace its capabilities.
            return Err(ErrorData::invalid_request(
                "this session is already initialized",
                None,
            ));
        }
        // An HTTP session's own identity, issued here with its session id.
        let _ = self.life.session.get_or_init(|| self.shared.session_id());
        // Before the response: the client acts only after it.
        *self
            .life
            .opened
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = self.shared.mark();
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let Some(acting) = self.acting(&context.extensions, &context.peer) else {
            return Ok(ListToolsResult::with_all_items(Vec::new()));
        };
        let view = acting.view;
        let tools: Vec<McpTool> = served(&view.current()).map(to_mcp_tool).collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // The call's future is kilobytes (the pipeline's phases, the
        // confirmation paths); rmcp moves its request task several times as
        // it spawns it: boxed, the task stays as small as a bare server's.
        Box::pin(self.call(request, context)).await
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        // A known method lands here only when its params did not parse
        // (`tools/call` with array, string or number arguments…).
        if is_known_method(&request.method) {
            return Err(ErrorData::invalid_params(
                format!(
                    "invalid params for `{}`",
                    super::echo::echoed(&request.method)
                ),
                None,
            ));
        }
        Err(ErrorData::new(
            rmcp::model::ErrorCode::METHOD_NOT_FOUND,
            super::echo::echoed(&request.method),
            None,
        ))
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        if let Some(acting) = self.acting(&context.extensions, &context.peer) {
            self.spawn_notifier(context.peer, acting.view);
        }
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // Runs before the acknowledgment is sent: the stream covers from here.
        let mark = self.shared.mark();
        self.life.listens.acknowledge(mark);
        Some(requested.supported_by(&self.get_info().capabilities))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        // Boxed like `call_tool`: every request task rmcp spawns is sized for
        // its largest handler, and a listen stream is the rare request.
        Box::pin(self.listen_for_changes(context)).await
    }
}

impl McpSession {
    /// A `subscriptions/listen` stream: `tools/list_changed` whenever this
    /// consumer's tools move, until the client cancels it.
    async fn listen_for_changes(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let since = self.take_listen_mark();
        if context.accepted().tools_list_changed != Some(true) {
            context.cancelled().await;
            return Ok(());
        }
        let Some(acting) = self.acting(
            &context.request_context().extensions,
            &context.request_context().peer,
        ) else {
            return Ok(());
        };
        let view = acting.view;
        let (mut watcher, due) =
            ChangeWatcher::attach(&self.shared.registry, &self.shared.activity, view, since);
        if due && context.sink().notify_tool_list_changed().await.is_err() {
            return Ok(());
        }
        // One wait for the end across changes (see `spawn_notifier`).
        let cancelled = context.cancelled();
        tokio::pin!(cancelled);
        loop {
            tokio::select! {
                () = &mut cancelled => return Ok(()),
                moved = watcher.changed() => {
                    if moved.is_none() || context.sink().notify_tool_list_changed().await.is_err() {
                        return Ok(());
                    }
                }
            }
        }
    }
}

/// Client request methods of the protocol (whose malformed params are
/// invalid params, not an unknown method).
fn is_known_method(method: &str) -> bool {
    matches!(
        method,
        "initialize"
            | "ping"
            | "tools/call"
            | "tools/list"
            | "prompts/get"
            | "prompts/list"
            | "resources/list"
            | "resources/read"
            | "resources/templates/list"
            | "resources/subscribe"
            | "resources/unsubscribe"
            | "completion/complete"
            | "logging/setLevel"
            | "subscriptions/listen"
            | "server/discover"
    )
}
