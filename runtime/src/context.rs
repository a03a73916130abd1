//! What handlers and policies know about a call: the consumer, the host
//! application's context, the capability and registration, and for actions
//! the invocation id, a cancellation token and the confirmation evidence.
//! Take these as handler arguments; build a [`Consumer`] and a
//! [`HostContext`] for calls and snapshots.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::ids::CapabilityId;

mod source;

pub use source::ContextSource;
pub(crate) use source::Parts as ContextParts;

/// The environment a registry runs in.
///
/// `Development` makes defects loud (console audit sink on stderr, collision
/// diagnostics); `Production` degrades the same conditions to safe
/// rejections plus audit events.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Environment {
    /// Strict diagnostics.
    Development,
    /// Safe rejections (the default).
    #[default]
    Production,
    /// Tests.
    Test,
}

impl Environment {
    /// The environment's name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Environment::Development => "development",
            Environment::Production => "production",
            Environment::Test => "test",
        }
    }
}

/// The kind of consumer addressing the registry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ConsumerKind {
    /// An in-process agent loop (the embedded toolset).
    Embedded,
    /// A session of the MCP server adapter.
    Mcp,
    /// The testing harness.
    Test,
    /// An agent in the browser, served by the page through WebMCP
    /// (`document.modelContext`).
    #[serde(rename = "webmcp")]
    WebMcp,
    /// Anything else.
    Other,
}

impl ConsumerKind {
    /// The kind's wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            ConsumerKind::Embedded => "embedded",
            ConsumerKind::Mcp => "mcp",
            ConsumerKind::Test => "test",
            ConsumerKind::WebMcp => "webmcp",
            ConsumerKind::Other => "other",
        }
    }
}

/// Who is calling: a stable, unique identity per agent connection.
///
/// Identity scopes invocation-id deduplication (`kind:id`), rate limits,
/// observation admission and confirmation evidence.
///
/// Cheap to clone: one shared allocation (a call carries its consumer into
/// every context it builds).
#[derive(Clone)]
pub struct Consumer(Arc<ConsumerData>);

/// What a [`Consumer`] shares between its clones.
#[derive(Clone)]
struct ConsumerData {
    id: Arc<str>,
    kind: ConsumerKind,
    grants: Arc<[String]>,
    /// `kind:id`, computed once.
    key: Arc<str>,
    /// How a person would name it; not part of its identity.
    label: Option<Arc<str>>,
    /// Its own host context (from its credential), if an adapter gave it
    /// one; not part of its identity.
    host: Option<HostContext>,
    /// The party whose share of bounded resources it draws on, if not its
    /// own; not part of its identity.
    principal: Option<Arc<str>>,
}

/// Identity is kind, id and grants; the label is presentation only.
impl PartialEq for Consumer {
    fn eq(&self, other: &Consumer) -> bool {
        self.0.key == other.0.key && self.0.grants == other.0.grants
    }
}

impl Eq for Consumer {}

impl std::hash::Hash for Consumer {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.key.hash(state);
        self.0.grants.hash(state);
    }
}

#[derive(Serialize, Deserialize)]
struct ConsumerWire {
    id: Arc<str>,
    kind: ConsumerKind,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    grants: Vec<String>,
}

impl Serialize for Consumer {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        ConsumerWire {
            id: Arc::clone(&self.0.id),
            kind: self.0.kind,
            grants: self.0.grants.to_vec(),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Consumer {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = ConsumerWire::deserialize(deserializer)?;
        Ok(Consumer::new(wire.kind, wire.id).with_grants(wire.grants))
    }
}

impl Consumer {
    /// A consumer with no grants.
    pub fn new(kind: ConsumerKind, id: impl Into<Arc<str>>) -> Consumer {
        let id = id.into();
        let key = Arc::from(format!("{}:{id}", kind.as_str()));
        Consumer(Arc::new(ConsumerData {
            id,
            kind,
            grants: Arc::from(Vec::new()),
            key,
            label: None,
            host: None,
            principal: None,
        }))
    }

    /// Names the consumer as a person would ("Claude Desktop 1.4, session
    /// 3", "Scripted agent"): shown with its confirmation requests and in
    /// activity views, escaped; not part of its identity.
    #[must_use]
    pub fn with_label(mut self, label: impl Into<Arc<str>>) -> Consumer {
        Arc::make_mut(&mut self.0).label = Some(label.into());
        self
    }

    /// How a person would name it, if the adapter said.
    pub fn label(&self) -> Option<&str> {
        self.0.label.as_deref()
    }

    /// The label, shared (events carry it without copying).
    pub(crate) fn label_arc(&self) -> Option<&Arc<str>> {
        self.0.label.as_ref()
    }

    /// Gives the consumer its own host context — what an adapter that
    /// authenticated it derived from its credential (its user, tenant,
    /// permissions). Every evaluation for it reads this context instead of
    /// the registry's provider: discovery, authorization, handlers, the
    /// procedure executor, from the transport to settlement, including a
    /// retry after the person answered. Nothing is kept on the registry's
    /// side, so nothing can be evicted and lend another context.
    ///
    /// Not part of its identity: an adapter makes the consumer id of an
    /// authenticated caller determine its context (the MCP server's ids
    /// carry a fingerprint of it), so one id never evaluates with two.
    ///
    /// ```
    /// use agent_surface::context::{Consumer, ConsumerKind, HostContext};
    /// use agent_surface::Registry;
    /// use serde_json::json;
    ///
    /// let registry = Registry::default();
    /// let ada = Consumer::new(ConsumerKind::Mcp, "ada")
    ///     .with_host_context(HostContext::new().with("user", json!({"id": "ada"})));
    /// assert!(registry.host_context_for(&ada).get("user").is_some());
    /// assert!(registry.host_context().get("user").is_none());
    /// ```
    #[must_use]
    pub fn with_host_context(mut self, host: HostContext) -> Consumer {
        Arc::make_mut(&mut self.0).host = Some(host);
        self
    }

    /// Its own host context, if an adapter gave it one
    /// ([`with_host_context`](Self::with_host_context)).
    pub fn host_context(&self) -> Option<&HostContext> {
        self.0.host.as_ref()
    }

    /// Names the party this identity acts for — the principal the host
    /// authenticated behind it, or the group an adapter puts identities it
    /// minted itself in (all unauthenticated callers of one server) — so
    /// fairness counts parties, not identities: the pending-confirmation
    /// share (`max_pending_confirmations_per_consumer`), the built-in rate
    /// limit's buckets and the observation admission share are the
    /// principal's, whatever number of identities it acts through. Without
    /// it a consumer is its own principal (its [`key`](Self::key)).
    ///
    /// Choose names that cannot be another consumer's key (`kind:id`): the
    /// MCP server uses `mcp-principal:<subject>` and
    /// `mcp-unauthenticated`. Not part of its identity: dedupe, evidence and
    /// ownership stay the consumer's own.
    ///
    /// ```
    /// use agent_surface::context::{Consumer, ConsumerKind};
    ///
    /// let tab = Consumer::new(ConsumerKind::Mcp, "session-7").with_principal("mcp-principal:ada");
    /// assert_eq!(&**tab.principal(), "mcp-principal:ada");
    /// assert_eq!(&**Consumer::anonymous().principal(), "embedded:anonymous");
    /// ```
    #[must_use]
    pub fn with_principal(mut self, principal: impl Into<Arc<str>>) -> Consumer {
        Arc::make_mut(&mut self.0).principal = Some(principal.into());
        self
    }

    /// The party whose fair share it draws on: its principal
    /// ([`with_principal`](Self::with_principal)), else its own key.
    pub fn principal(&self) -> &Arc<str> {
        self.0.principal.as_ref().unwrap_or(&self.0.key)
    }

    /// The anonymous embedded consumer (`embedded:anonymous`).
    pub fn anonymous() -> Consumer {
        Consumer::new(ConsumerKind::Embedded, "anonymous")
    }

    /// Adds free-form grant strings that host policies may interpret.
    #[must_use]
    pub fn with_grants(mut self, grants: impl IntoIterator<Item = impl Into<String>>) -> Consumer {
        Arc::make_mut(&mut self.0).grants = grants.into_iter().map(Into::into).collect();
        self
    }

    /// The consumer id.
    pub fn id(&self) -> &str {
        &self.0.id
    }

    /// The consumer kind.
    pub fn kind(&self) -> ConsumerKind {
        self.0.kind
    }

    /// The grants.
    pub fn grants(&self) -> &[String] {
        &self.0.grants
    }

    /// `kind:id`, the normalized identity used in dedupe keys and evidence.
    pub fn key(&self) -> &Arc<str> {
        &self.0.key
    }
}

impl Default for Consumer {
    fn default() -> Self {
        Consumer::anonymous()
    }
}

impl fmt::Debug for Consumer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Consumer({}:{})", self.0.kind.as_str(), self.0.id)
    }
}

/// The host application's context (user, tenant, permissions…), read by
/// policies and handlers. Cheap to clone.
///
/// It holds JSON values by key (what built-in policies read) and typed
/// extensions by type (what Rust code prefers).
///
/// ```
/// use agent_surface::context::HostContext;
/// use serde_json::json;
///
/// #[derive(Debug, PartialEq)]
/// struct User { name: &'static str }
///
/// let host = HostContext::new()
///     .with("user", json!({"name": "ada", "permissions": ["devices:write"]}))
///     .with_extension(User { name: "ada" });
/// assert_eq!(host.get("user").and_then(|u| u.get("name")), Some(&json!("ada")));
/// assert_eq!(host.extension::<User>(), Some(&User { name: "ada" }));
/// ```
#[derive(Clone, Default)]
pub struct HostContext(Option<Arc<HostData>>);

/// What a non-empty [`HostContext`] shares between its clones (an empty one
/// shares nothing: cloning it touches no counter).
#[derive(Clone, Default)]
struct HostData {
    values: Map<String, Value>,
    extensions: HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
}

impl HostContext {
    /// An empty context.
    pub fn new() -> HostContext {
        HostContext::default()
    }

    fn data_mut(&mut self) -> &mut HostData {
        Arc::make_mut(self.0.get_or_insert_with(Arc::default))
    }

    /// Adds a JSON value under `key`.
    #[must_use]
    pub fn with(mut self, key: impl Into<String>, value: Value) -> HostContext {
        self.data_mut().values.insert(key.into(), value);
        self
    }

    /// Adds a typed value (one per type).
    #[must_use]
    pub fn with_extension<T: Any + Send + Sync>(mut self, value: T) -> HostContext {
        self.data_mut()
            .extensions
            .insert(TypeId::of::<T>(), Arc::new(value));
        self
    }

    /// The JSON value under `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.as_ref().and_then(|data| data.values.get(key))
    }

    /// All JSON values.
    pub fn values(&self) -> &Map<String, Value> {
        static EMPTY: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);
        match &self.0 {
            Some(data) => &data.values,
            None => &EMPTY,
        }
    }

    /// Whether it holds any typed extension (values no fingerprint of its
    /// JSON can tell apart).
    pub fn has_extensions(&self) -> bool {
        self.0
            .as_ref()
            .is_some_and(|data| !data.extensions.is_empty())
    }

    /// The typed value of type `T`.
    pub fn extension<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.0
            .as_ref()?
            .extensions
            .get(&TypeId::of::<T>())
            .and_then(|value| value.downcast_ref::<T>())
    }
}

impl From<Map<String, Value>> for HostContext {
    fn from(values: Map<String, Value>) -> Self {
        HostContext(Some(Arc::new(HostData {
            values,
            extensions: HashMap::new(),
        })))
    }
}

impl fmt::Debug for HostContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostContext")
            .field("values", self.values())
            .field(
                "extensions",
                &self.0.as_ref().map_or(0, |data| data.extensions.len()),
            )
            .finish()
    }
}

/// The context of any handler: what is being called, by whom, for which host.
#[derive(Clone, Debug)]
pub struct ReadContext {
    capability_id: CapabilityId,
    registration_id: Arc<str>,
    consumer: Consumer,
    host: HostContext,
}

impl ReadContext {
    /// A context. The registry builds one per call; build your own to unit
    /// test a handler by calling the component's method directly.
    pub fn new(
        capability_id: CapabilityId,
        registration_id: Arc<str>,
        consumer: Consumer,
        host: HostContext,
    ) -> ReadContext {
        ReadContext {
            capability_id,
            registration_id,
            consumer,
            host,
        }
    }

    /// The capability being called.
    pub fn capability_id(&self) -> &CapabilityId {
        &self.capability_id
    }

    /// The registration serving the call (`reg_…`).
    pub fn registration_id(&self) -> &str {
        &self.registration_id
    }

    /// Who is calling.
    pub fn consumer(&self) -> &Consumer {
        &self.consumer
    }

    /// The host application's context at the time of the call.
    pub fn host(&self) -> &HostContext {
        &self.host
    }
}

/// Approved confirmation evidence carried by an invocation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ConfirmationEvidence {
    /// The confirmation id (`cnf_…`).
    pub id: String,
    /// When the user approved it (RFC 3339).
    pub approved_at: String,
}

/// The context of an action handler. Dereferences to [`ReadContext`], so a
/// handler may take either.
#[derive(Debug)]
pub struct ActionContext {
    read: ReadContext,
    invocation_id: Arc<str>,
    /// The call's cancellation signal, made when first asked for. The
    /// dispatch of an `async` handler asks and hands a clone back with its
    /// future: the registry fires it when an action times out, is cancelled
    /// or its component is unmounted. A navigation's is made by the
    /// registry (its handler may fire it to abort). Nothing interrupts a
    /// synchronous handler while it runs, and observations are settled
    /// without a signal: theirs never fires unless the handler fires it.
    cancellation: std::sync::OnceLock<CancellationToken>,
    confirmation: Option<ConfirmationEvidence>,
}

/// Clones share one cancellation signal (made now if it was not yet).
impl Clone for ActionContext {
    fn clone(&self) -> ActionContext {
        ActionContext {
            read: self.read.clone(),
            invocation_id: Arc::clone(&self.invocation_id),
            cancellation: std::sync::OnceLock::from(self.cancellation().clone()),
            confirmation: self.confirmation.clone(),
        }
    }
}

impl ActionContext {
    /// A context. The registry builds one per call; build your own to unit
    /// test a handler by calling the component's method directly.
    pub fn new(
        read: ReadContext,
        invocation_id: Arc<str>,
        cancellation: CancellationToken,
        confirmation: Option<ConfirmationEvidence>,
    ) -> ActionContext {
        ActionContext {
            read,
            invocation_id,
            cancellation: std::sync::OnceLock::from(cancellation),
            confirmation,
        }
    }

    /// A context whose cancellation signal is made when first asked for:
    /// by the dispatch of an `async` handler (which hands it to the
    /// registry with the handler's future), else only by a handler that
    /// reads it.
    pub(crate) fn lazy(
        read: ReadContext,
        invocation_id: Arc<str>,
        confirmation: Option<ConfirmationEvidence>,
    ) -> ActionContext {
        ActionContext {
            read,
            invocation_id,
            cancellation: std::sync::OnceLock::new(),
            confirmation,
        }
    }

    /// The invocation id (the agent's tool-call id when an adapter supplied one).
    pub fn invocation_id(&self) -> &str {
        &self.invocation_id
    }

    /// Fires when an `async` action times out, is cancelled or its
    /// component is unmounted (an observation is settled without a signal;
    /// a synchronous handler cannot be interrupted). Cooperative: a long
    /// handler should check it or `select!` on
    /// [`cancelled`](CancellationToken::cancelled). Each call has its own.
    pub fn cancellation(&self) -> &CancellationToken {
        self.cancellation.get_or_init(CancellationToken::new)
    }

    /// Whether the call has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancellation().is_cancelled()
    }

    /// The approved confirmation evidence, when the call carries one.
    pub fn confirmation(&self) -> Option<&ConfirmationEvidence> {
        self.confirmation.as_ref()
    }
}

impl Deref for ActionContext {
    type Target = ReadContext;
    fn deref(&self) -> &ReadContext {
        &self.read
    }
}

/// The context parameters a handler may declare, lent from the call's
/// [`ActionContext`]: `&ActionContext` or `&ReadContext`. Implemented
/// by the framework only; handlers name one of the two.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is borrowed, so it is taken as the handler's context, and it is not one",
    label = "a handler borrows only its context: `&ActionContext` or `&ReadContext` from `agent_surface`, or an alias of one",
    note = "an input is taken by value: an action's input is written without `&` and its type annotated with `#[agent_schema]`; an observation takes no input"
)]
pub trait HandlerContext<'a>: Sized {
    /// Borrows the context as this parameter type.
    fn lend(ctx: &'a ActionContext) -> Self;
}

impl<'a> HandlerContext<'a> for &'a ActionContext {
    fn lend(ctx: &'a ActionContext) -> Self {
        ctx
    }
}

impl<'a> HandlerContext<'a> for &'a ReadContext {
    fn lend(ctx: &'a ActionContext) -> Self {
        ctx
    }
}
