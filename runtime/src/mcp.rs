//! The MCP server adapter (feature `mcp`): serve a registry to any MCP
//! client over stdio or streamable HTTP.
//!
//! - **Tools**: one per *available* capability and procedure reference, as
//!   the embedded toolset names and describes them (wire names, the
//!   authoritative name map, descriptions without live state), with
//!   annotations derived from effects: read-only for observations and
//!   server queries, destructive, idempotent, open-world for external side
//!   effects.
//! - **Live catalog**: `tools/list` reflects the surface at the moment of
//!   the call; `notifications/tools/list_changed` follows every change to
//!   the surface or to availability — pushed to handshake-era sessions, and
//!   streamed to 2026-07-28 clients through `subscriptions/listen`.
//! - **Results**: an ok call is structured content with the output; a
//!   capability error is an `isError` result carrying the exact payload
//!   (`code`, `message`, `retry`, `details`); unknown tool names are the
//!   protocol's invalid-params error. On session transports the JSON-RPC
//!   request id becomes the invocation id, so transport retries are
//!   deduplicated.
//! - **Confirmations**: two-phase by default — the model calls again with
//!   the same arguments once the user approved (or passes
//!   `_meta["agentSurface/confirmationId"]`). When the client declares
//!   elicitation support, the server asks the human through MCP elicitation
//!   (a server request on handshake-era sessions, an input-required round on
//!   2026-07-28), showing the summary and the exact effective input, and
//!   returns the final result in the same call. A denial is never retried.
//! - **Identity**: each session is its own consumer (`mcp:<id>`). The
//!   2026-07-28 HTTP protocol has no sessions: give the server an
//!   [`identify`](McpServerBuilder::identify) hook (e.g. from the
//!   authenticated principal); without one, stateless HTTP callers share the
//!   consumer `mcp:http`, which suits a loopback server for one user.
//!
//! ```no_run
//! use agent_surface::mcp::McpServer;
//! use agent_surface::Registry;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let registry = Registry::default();
//! // … mount components …
//! let server = McpServer::builder(&registry).name("my-app").build();
//! server.serve_stdio().await?; // until the client disconnects
//! # Ok(())
//! # }
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ElicitRequest, ElicitRequestParams,
    ElicitationAction, ElicitationSchema, Implementation, InputRequest, InputRequiredResult,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig,
    SubscriptionFilter, Tool as McpTool, ToolAnnotations,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::context::{Consumer, ConsumerKind};
use crate::error::ErrorCode;
use crate::invoke::{Invocation, InvocationResult, InvokeOptions};
use crate::registry::Registry;
use crate::toolset::{ConfirmationMode, Tool, ToolsSubscription, Toolset, Topology};
use crate::util::lru::Lru;
use crate::{Effect, Kind};

/// The request `_meta` key by which a client passes confirmation evidence.
pub const CONFIRMATION_META: &str = "agentSurface/confirmationId";

/// The input-request key of a confirmation elicitation (2026-07-28).
const CONFIRM_KEY: &str = "agentSurface/confirm";

type Identify = Arc<dyn Fn(&http::request::Parts) -> Option<String> + Send + Sync>;

/// Why serving failed.
#[derive(Debug)]
pub struct McpServeError(String);

impl fmt::Display for McpServeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for McpServeError {}

/// Builds an [`McpServer`].
#[must_use]
pub struct McpServerBuilder {
    registry: Registry,
    name: String,
    version: String,
    instructions: Option<String>,
    elicitation: bool,
    identify: Option<Identify>,
}

impl fmt::Debug for McpServerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServerBuilder")
            .field("name", &self.name)
            .field("elicitation", &self.elicitation)
            .finish_non_exhaustive()
    }
}

impl McpServerBuilder {
    /// The server name clients show (default `agent-surface`).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The server version (default: this crate's).
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = version.into();
        self
    }

    /// Instructions for the model, sent at connection.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Whether to ask the human through MCP elicitation when the client
    /// supports it (default `true`); otherwise confirmations are two-phase.
    pub fn elicitation(mut self, enabled: bool) -> Self {
        self.elicitation = enabled;
        self
    }

    /// Derives a stable consumer id from an HTTP request (the authenticated
    /// principal, a client certificate…). `None` falls back to the session.
    pub fn identify(
        mut self,
        identify: impl Fn(&http::request::Parts) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.identify = Some(Arc::new(identify));
        self
    }

    /// Builds the server. Each consumer's toolset follows the registry's
    /// surface; calls re-evaluate availability read from live state.
    pub fn build(self) -> McpServer {
        let shared = Arc::new(Shared {
            registry: self.registry,
            name: self.name,
            version: self.version,
            instructions: self.instructions,
            elicitation: self.elicitation,
            identify: self.identify,
            consumers: Mutex::new(BTreeMap::new()),
            elicitations: Mutex::new(Lru::new(256, 600_000)),
            next_session: AtomicU64::new(1),
        });
        McpServer { shared }
    }
}

/// One consumer's view: its toolset and a change counter its sessions watch.
struct View {
    toolset: Toolset,
    changed: watch::Sender<u64>,
    _subscription: ToolsSubscription,
    /// Creation order, for eviction.
    created: u64,
}

/// Consumer views kept at once.
const MAX_VIEWS: usize = 1024;

/// What an input-required round remembers (the request state a client
/// echoes is untrusted: it only names this record).
#[derive(Clone)]
struct PendingElicitation {
    consumer: String,
    tool: String,
    arguments: Value,
}

struct Shared {
    registry: Registry,
    name: String,
    version: String,
    instructions: Option<String>,
    elicitation: bool,
    identify: Option<Identify>,
    consumers: Mutex<BTreeMap<String, Arc<View>>>,
    elicitations: Mutex<Lru<String, PendingElicitation>>,
    next_session: AtomicU64,
}

impl Shared {
    /// The view of `consumer_id`, created on first use (`None` once the
    /// registry is disposed).
    fn view(&self, consumer_id: &str) -> Option<Arc<View>> {
        let mut consumers = self
            .consumers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(view) = consumers.get(consumer_id) {
            return Some(Arc::clone(view));
        }
        let toolset = Toolset::builder(&self.registry)
            .consumer(Consumer::new(ConsumerKind::Mcp, consumer_id))
            .topology(Topology::Remote)
            .confirmations(ConfirmationMode::TwoPhase)
            .build()
            .ok()?;
        let (changed, _) = watch::channel(0u64);
        let notify = changed.clone();
        let subscription = toolset.subscribe(move |_| {
            notify.send_modify(|n| *n += 1);
        });
        let view = Arc::new(View {
            toolset,
            changed,
            _subscription: subscription,
            created: self.next_session.fetch_add(1, Ordering::Relaxed),
        });
        // Bounded: HTTP session identities are not told when a session
        // ends; the oldest view goes first (a returning client gets a fresh one).
        if consumers.len() >= MAX_VIEWS
            && let Some(oldest) = consumers
                .iter()
                .min_by_key(|(_, view)| view.created)
                .map(|(id, _)| id.clone())
            && let Some(evicted) = consumers.remove(&oldest)
        {
            evicted.toolset.dispose();
        }
        consumers.insert(consumer_id.to_owned(), Arc::clone(&view));
        Some(view)
    }

    /// Re-evaluates every consumer's tools (availability read from live
    /// state can change with any call), notifying sessions of changes.
    fn refresh_all(&self) {
        let views: Vec<Arc<View>> = self
            .consumers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .cloned()
            .collect();
        for view in views {
            view.toolset.refresh();
        }
    }

    fn forget(&self, consumer_id: &str) {
        let removed = self
            .consumers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(consumer_id);
        if let Some(view) = removed {
            view.toolset.dispose();
        }
    }
}

/// The MCP server of one registry. Cheap to clone.
#[derive(Clone)]
pub struct McpServer {
    shared: Arc<Shared>,
}

impl fmt::Debug for McpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.shared.name)
            .finish_non_exhaustive()
    }
}

/// A running HTTP server.
#[derive(Debug)]
pub struct HttpServer {
    address: SocketAddr,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl HttpServer {
    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.address
    }

    /// The MCP endpoint URL.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.address)
    }

    /// Stops accepting requests and ends the sessions.
    pub async fn shutdown(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }
}

impl McpServer {
    /// A builder over `registry`.
    pub fn builder(registry: &Registry) -> McpServerBuilder {
        McpServerBuilder {
            registry: registry.clone(),
            name: "agent-surface".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            instructions: None,
            elicitation: true,
            identify: None,
        }
    }

    /// Re-evaluates availability and notifies clients whose tools changed.
    /// Call it after application state that `when` reads changed outside
    /// an MCP call.
    pub fn refresh(&self) {
        self.shared.refresh_all();
    }

    /// A handler for one session with its own consumer identity
    /// (`mcp:session-<n>-…`).
    pub fn session(&self) -> McpSession {
        let n = self.shared.next_session.fetch_add(1, Ordering::Relaxed);
        let id = format!(
            "session-{n}-{}",
            self.shared.registry.inner.ids.invocation_id()
        );
        McpSession::new(&self.shared, Some(id))
    }

    /// Serves one session over any rmcp transport (a duplex stream in
    /// tests, a socket…). Returns when the session is established.
    pub async fn serve<T, E, A>(
        &self,
        transport: T,
    ) -> Result<RunningService<RoleServer, McpSession>, McpServeError>
    where
        T: rmcp::transport::IntoTransport<RoleServer, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        self.session()
            .serve(transport)
            .await
            .map_err(|err| McpServeError(err.to_string()))
    }

    /// Serves one session over this process's stdin/stdout until the client
    /// disconnects. Log to stderr only: stdout is the protocol.
    pub async fn serve_stdio(&self) -> Result<(), McpServeError> {
        let running = self.serve(rmcp::transport::stdio()).await?;
        running
            .waiting()
            .await
            .map(|_| ())
            .map_err(|err| McpServeError(err.to_string()))
    }

    /// The streamable HTTP service (a tower service) for your own router;
    /// mount it at `/mcp`.
    pub fn http_service(
        &self,
        stop: CancellationToken,
    ) -> rmcp::transport::streamable_http_server::StreamableHttpService<
        McpSession,
        rmcp::transport::streamable_http_server::session::local::LocalSessionManager,
    > {
        let shared = Arc::clone(&self.shared);
        rmcp::transport::streamable_http_server::StreamableHttpService::new(
            move || Ok(McpSession::new(&shared, None)),
            Arc::default(),
            rmcp::transport::streamable_http_server::StreamableHttpServerConfig::default()
                .with_cancellation_token(stop),
        )
    }

    /// Serves streamable HTTP at `address` (use a loopback address unless
    /// you put authentication in front) on `/mcp`.
    pub async fn serve_http(&self, address: SocketAddr) -> Result<HttpServer, McpServeError> {
        let stop = CancellationToken::new();
        let router =
            axum::Router::new().nest_service("/mcp", self.http_service(stop.child_token()));
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .map_err(|err| McpServeError(format!("cannot listen on {address}: {err}")))?;
        let address = listener
            .local_addr()
            .map_err(|err| McpServeError(err.to_string()))?;
        let shutdown = stop.clone();
        let task = tokio::spawn(async move {
            let served = axum::serve(listener, router)
                .with_graceful_shutdown(async move { shutdown.cancelled_owned().await })
                .await;
            if let Err(err) = served {
                tracing::error!(%err, "the MCP HTTP server stopped");
            }
        });
        Ok(HttpServer {
            address,
            stop,
            task,
        })
    }
}

/// A handler's lifetime: dropping the last clone of the handler (the
/// session ended) stops its background tasks and, for a session identity,
/// forgets the consumer's view.
struct Life {
    /// A session transport's own identity; `None` for HTTP, where the
    /// identity comes from each request.
    consumer: Option<String>,
    stop: CancellationToken,
    shared: Arc<Shared>,
}

impl Drop for Life {
    fn drop(&mut self) {
        self.stop.cancel();
        if let Some(consumer) = &self.consumer {
            self.shared.forget(consumer);
        }
    }
}

/// The handler of one MCP session (or, for stateless HTTP, one request).
#[derive(Clone)]
pub struct McpSession {
    shared: Arc<Shared>,
    life: Arc<Life>,
}

impl fmt::Debug for McpSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpSession")
            .field("consumer", &self.life.consumer)
            .finish_non_exhaustive()
    }
}

impl McpSession {
    fn new(shared: &Arc<Shared>, consumer: Option<String>) -> McpSession {
        McpSession {
            shared: Arc::clone(shared),
            life: Arc::new(Life {
                consumer,
                stop: CancellationToken::new(),
                shared: Arc::clone(shared),
            }),
        }
    }
}

/// Tool annotations from effect and kind.
fn annotations(tool: &Tool) -> Option<ToolAnnotations> {
    let target = tool.target()?;
    let read_only = target.kind == Kind::Observation || target.effect == Effect::ServerQuery;
    let idempotent = read_only || target.idempotent;
    Some(
        ToolAnnotations::new()
            .read_only(read_only)
            .destructive(target.effect == Effect::Destructive)
            .idempotent(idempotent)
            .open_world(target.effect == Effect::ExternalSideEffect),
    )
}

fn to_mcp_tool(tool: &Tool) -> McpTool {
    let schema = match tool.input_schema() {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    let mut mcp = McpTool::new(
        tool.name().to_owned(),
        tool.description().to_owned(),
        Arc::new(schema),
    );
    if let Some(annotations) = annotations(tool) {
        mcp = mcp.with_annotations(annotations);
    }
    mcp
}

/// A pipeline result as an MCP tool result: structured output, or an
/// `isError` result with the exact payload.
fn to_call_result(result: &InvocationResult) -> CallToolResult {
    match result.error() {
        Some(error) => {
            CallToolResult::structured_error(serde_json::to_value(error).unwrap_or(Value::Null))
        }
        None => match result.output() {
            Some(Value::Object(output)) => {
                CallToolResult::structured(Value::Object(output.clone()))
            }
            Some(other) => {
                CallToolResult::success(vec![rmcp::model::ContentBlock::text(other.to_string())])
            }
            None => CallToolResult::success(vec![rmcp::model::ContentBlock::text("ok")]),
        },
    }
}

/// The confirmation id of a `CONFIRMATION_REQUIRED` result.
fn confirmation_of(result: &InvocationResult) -> Option<String> {
    result
        .error()
        .filter(|error| error.code() == ErrorCode::ConfirmationRequired)
        .and_then(|error| error.detail("confirmationId"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// The elicitation form: approve or not.
fn approval_schema() -> Option<ElicitationSchema> {
    ElicitationSchema::builder()
        .required_bool("approve")
        .build()
        .ok()
}

/// Whether an elicitation answer approves.
fn approves(action: ElicitationAction, content: Option<&Value>) -> bool {
    action == ElicitationAction::Accept
        && content
            .and_then(|c| c.get("approve"))
            .and_then(Value::as_bool)
            .unwrap_or(false)
}

fn is_modern(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28)
}

impl McpSession {
    /// The consumer id of a request (or notification), from the session,
    /// the `identify` hook, the HTTP session header, or the shared
    /// stateless-HTTP identity.
    fn consumer_of(&self, extensions: &rmcp::model::Extensions) -> String {
        if let Some(consumer) = &self.life.consumer {
            return consumer.clone();
        }
        let parts = extensions.get::<http::request::Parts>();
        if let (Some(identify), Some(parts)) = (&self.shared.identify, parts)
            && let Some(id) = identify(parts)
        {
            return id;
        }
        parts
            .and_then(|parts| parts.headers.get("mcp-session-id"))
            .and_then(|value| value.to_str().ok())
            .map_or_else(|| "http".to_owned(), |session| format!("http-{session}"))
    }

    /// Whether request ids identify attempts of this consumer only.
    fn session_scoped(&self, extensions: &rmcp::model::Extensions) -> bool {
        self.life.consumer.is_some()
            || extensions
                .get::<http::request::Parts>()
                .is_some_and(|parts| parts.headers.contains_key("mcp-session-id"))
    }

    /// The message shown to the human for a pending confirmation.
    fn ask_text(&self, confirmation_id: &str) -> String {
        let pending = self
            .shared
            .registry
            .confirmations()
            .pending()
            .into_iter()
            .find(|p| *p.confirmation_id == *confirmation_id);
        match pending {
            // Both parts escaped: no bidi, zero-width or control character
            // of the agent's reaches the human as is.
            Some(p) => format!(
                "Approve this {} operation?\n{}\nExact input: {}",
                p.effect.as_str(),
                crate::util::display_text::escape(&p.summary),
                p.display_input()
            ),
            None => "Approve this operation?".to_owned(),
        }
    }

    /// Resolves a confirmation with the human's answer and retries the call.
    async fn answer_and_retry(
        &self,
        view: &View,
        name: &str,
        arguments: Value,
        invocation_id: Option<&str>,
        confirmation_id: &str,
        approved: bool,
    ) -> InvocationResult {
        let _ = self
            .shared
            .registry
            .confirmations()
            .resolve(confirmation_id, approved);
        // Denied: the retry reports CONFIRMATION_INVALID {denied}; never retried further.
        view.toolset
            .execute_with(name, arguments, invocation_id, Some(confirmation_id))
            .await
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

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let Some(view) = self.shared.view(&self.consumer_of(&context.extensions)) else {
            return Ok(ListToolsResult::with_all_items(Vec::new()));
        };
        let tools: Vec<McpTool> = view
            .toolset
            .tools()
            .iter()
            .filter(|tool| tool.state().available)
            .map(to_mcp_tool)
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let consumer = self.consumer_of(&context.extensions);
        let Some(view) = self.shared.view(&consumer) else {
            return Err(ErrorData::internal_error(
                "the application is shutting down",
                None,
            ));
        };
        let name = request.name.to_string();
        let arguments = Value::Object(request.arguments.clone().unwrap_or_default());
        let invocation_id = self
            .session_scoped(&context.extensions)
            .then(|| format!("mcp-{}", context.id));
        let explicit = request
            .meta
            .as_ref()
            .and_then(|meta| meta.0.0.get(CONFIRMATION_META))
            .and_then(Value::as_str)
            .map(str::to_owned);

        // A 2026-07-28 retry answering our input request.
        if let Some(state) = request.request_state.as_deref() {
            let pending = self
                .shared
                .elicitations
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .peek(state, self.shared.registry.now_ms())
                .cloned();
            let Some(pending) = pending
                .filter(|p| p.consumer == consumer && p.tool == name && p.arguments == arguments)
            else {
                return Err(ErrorData::invalid_params(
                    "unknown or mismatched requestState",
                    None,
                ));
            };
            let answer = request
                .input_responses
                .as_ref()
                .and_then(|responses| responses.get(CONFIRM_KEY));
            let action = answer
                .and_then(|a| a.get("action"))
                .and_then(|a| serde_json::from_value::<ElicitationAction>(a.clone()).ok())
                .unwrap_or(ElicitationAction::Cancel);
            let approved = approves(action, answer.and_then(|a| a.get("content")));
            self.shared
                .elicitations
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(state);
            let result = self
                .answer_and_retry(&view, &name, pending.arguments, None, state, approved)
                .await;
            self.shared.refresh_all();
            return Ok(to_call_result(&result).into());
        }

        if view.toolset.tool(&name).is_none() {
            // Not in this consumer's tools: a stale name (a capability that
            // went away) still gets the pipeline's precise error; anything
            // else is not a tool at all.
            let Some((id, instance)) = decode_name(&name) else {
                return Err(ErrorData::invalid_params(
                    format!("unknown tool `{name}`"),
                    None,
                ));
            };
            let mut invocation = Invocation::new(id).input(arguments);
            invocation.instance_id = instance;
            invocation.invocation_id = invocation_id;
            let result = self
                .shared
                .registry
                .invoke(
                    invocation,
                    InvokeOptions::consumer(view.toolset.consumer().clone()),
                )
                .await;
            return Ok(to_call_result(&result).into());
        }

        let result = view
            .toolset
            .execute_with(
                &name,
                arguments.clone(),
                invocation_id.as_deref(),
                explicit.as_deref(),
            )
            .await;
        let confirmation = confirmation_of(&result);
        let supports_elicitation = self.shared.elicitation
            && context
                .client_capabilities()
                .is_some_and(|capabilities| capabilities.elicitation.is_some());
        let outcome = match confirmation {
            Some(confirmation_id) if supports_elicitation && explicit.is_none() => {
                let message = self.ask_text(&confirmation_id);
                if is_modern(&context) {
                    // Ask in an input-required round; the state names a
                    // record kept here.
                    self.shared
                        .elicitations
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(
                            confirmation_id.clone(),
                            PendingElicitation {
                                consumer,
                                tool: name,
                                arguments,
                            },
                            self.shared.registry.now_ms(),
                        );
                    let Some(schema) = approval_schema() else {
                        return Ok(to_call_result(&result).into());
                    };
                    let ask = ElicitRequest::new(ElicitRequestParams::FormElicitationParams {
                        meta: None,
                        message,
                        requested_schema: schema,
                    });
                    let requests =
                        BTreeMap::from([(CONFIRM_KEY.to_owned(), InputRequest::Elicitation(ask))]);
                    return Ok(
                        InputRequiredResult::new(Some(requests), Some(confirmation_id)).into(),
                    );
                }
                let answer = match approval_schema() {
                    Some(schema) => context
                        .peer
                        .create_elicitation(ElicitRequestParams::FormElicitationParams {
                            meta: None,
                            message,
                            requested_schema: schema,
                        })
                        .await
                        .ok(),
                    None => None,
                };
                let approved = answer.is_some_and(|a| approves(a.action, a.content.as_ref()));
                self.answer_and_retry(
                    &view,
                    &name,
                    arguments,
                    invocation_id.as_deref(),
                    &confirmation_id,
                    approved,
                )
                .await
            }
            _ => result,
        };
        // Any call may change what is available (selection, navigation).
        self.shared.refresh_all();
        Ok(to_call_result(&outcome).into())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // Handshake-era sessions: push list_changed from a task that ends
        // with the session.
        let consumer = self.consumer_of(&context.extensions);
        self.spawn_notifier(context.peer, &consumer);
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.supported_by(&self.get_info().capabilities))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        if context.accepted().tools_list_changed != Some(true) {
            context.cancelled().await;
            return Ok(());
        }
        let consumer = self.consumer_of(&context.request_context().extensions);
        let Some(view) = self.shared.view(&consumer) else {
            return Ok(());
        };
        let mut changed = view.changed.subscribe();
        changed.mark_unchanged();
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                moved = changed.changed() => {
                    if moved.is_err() {
                        return Ok(());
                    }
                    tokio::task::yield_now().await;
                    changed.mark_unchanged();
                    if context.sink().notify_tool_list_changed().await.is_err() {
                        return Ok(());
                    }
                }
            }
        }
    }
}

impl McpSession {
    fn spawn_notifier(&self, peer: rmcp::Peer<RoleServer>, consumer: &str) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let Some(view) = self.shared.view(consumer) else {
            return;
        };
        let mut changed = view.changed.subscribe();
        changed.mark_unchanged();
        drop(view);
        let stop = self.life.stop.clone();
        runtime.spawn(async move {
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    moved = changed.changed() => {
                        if moved.is_err() {
                            return;
                        }
                        // A mutation often comes in a burst (a page unmounts
                        // several components): let it finish, send once.
                        tokio::task::yield_now().await;
                        changed.mark_unchanged();
                        if peer.notify_tool_list_changed().await.is_err() {
                            return;
                        }
                    }
                }
            }
        });
    }
}

/// `view_devices__table__selectRows` (optionally `_at_<instance>`) back to
/// a capability id and instance, for names no longer in the catalog.
fn decode_name(name: &str) -> Option<(String, Option<String>)> {
    if let Some(id) = crate::wire::decode(name) {
        return Some((id.as_str().to_owned(), None));
    }
    let (base, instance) = name.rsplit_once("_at_")?;
    let id = crate::wire::decode(base)?;
    crate::ids::InstanceId::new(instance).ok()?;
    Some((id.as_str().to_owned(), Some(instance.to_owned())))
}
