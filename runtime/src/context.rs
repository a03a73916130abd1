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
#[derive(Clone)]
pub struct Consumer {
    id: Arc<str>,
    kind: ConsumerKind,
    grants: Arc<[String]>,
    /// `kind:id`, computed once.
    key: Arc<str>,
    /// How a person would name it; not part of its identity.
    label: Option<Arc<str>>,
}

/// Identity is kind, id and grants; the label is presentation only.
impl PartialEq for Consumer {
    fn eq(&self, other: &Consumer) -> bool {
        self.key == other.key && self.grants == other.grants
    }
}

impl Eq for Consumer {}

impl std::hash::Hash for Consumer {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key.hash(state);
        self.grants.hash(state);
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
            id: Arc::clone(&self.id),
            kind: self.kind,
            grants: self.grants.to_vec(),
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
        Consumer {
            id,
            kind,
            grants: Arc::from(Vec::new()),
            key,
            label: None,
        }
    }

    /// Names the consumer as a person would ("Claude Desktop 1.4, session
    /// 3", "Scripted agent"): shown with its confirmation requests and in
    /// activity views, escaped; not part of its identity.
    #[must_use]
    pub fn with_label(mut self, label: impl Into<Arc<str>>) -> Consumer {
        self.label = Some(label.into());
        self
    }

    /// How a person would name it, if the adapter said.
    pub fn label(&self) -> Option<&str> {
        self.label.as_deref()
    }

    /// The label, shared (events carry it without copying).
    pub(crate) fn label_arc(&self) -> Option<&Arc<str>> {
        self.label.as_ref()
    }

    /// The anonymous embedded consumer (`embedded:anonymous`).
    pub fn anonymous() -> Consumer {
        Consumer::new(ConsumerKind::Embedded, "anonymous")
    }

    /// Adds free-form grant strings that host policies may interpret.
    #[must_use]
    pub fn with_grants(mut self, grants: impl IntoIterator<Item = impl Into<String>>) -> Consumer {
        self.grants = grants.into_iter().map(Into::into).collect();
        self
    }

    /// The consumer id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The consumer kind.
    pub fn kind(&self) -> ConsumerKind {
        self.kind
    }

    /// The grants.
    pub fn grants(&self) -> &[String] {
        &self.grants
    }

    /// `kind:id`, the normalized identity used in dedupe keys and evidence.
    pub fn key(&self) -> &Arc<str> {
        &self.key
    }
}

impl Default for Consumer {
    fn default() -> Self {
        Consumer::anonymous()
    }
}

impl fmt::Debug for Consumer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Consumer({}:{})", self.kind.as_str(), self.id)
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
pub struct HostContext {
    values: Arc<Map<String, Value>>,
    extensions: Arc<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

impl HostContext {
    /// An empty context.
    pub fn new() -> HostContext {
        HostContext::default()
    }

    /// Adds a JSON value under `key`.
    #[must_use]
    pub fn with(mut self, key: impl Into<String>, value: Value) -> HostContext {
        Arc::make_mut(&mut self.values).insert(key.into(), value);
        self
    }

    /// Adds a typed value (one per type).
    #[must_use]
    pub fn with_extension<T: Any + Send + Sync>(mut self, value: T) -> HostContext {
        Arc::make_mut(&mut self.extensions).insert(TypeId::of::<T>(), Arc::new(value));
        self
    }

    /// The JSON value under `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.values.get(key)
    }

    /// All JSON values.
    pub fn values(&self) -> &Map<String, Value> {
        &self.values
    }

    /// The typed value of type `T`.
    pub fn extension<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.extensions
            .get(&TypeId::of::<T>())
            .and_then(|value| value.downcast_ref::<T>())
    }
}

impl From<Map<String, Value>> for HostContext {
    fn from(values: Map<String, Value>) -> Self {
        HostContext {
            values: Arc::new(values),
            extensions: Arc::default(),
        }
    }
}

impl fmt::Debug for HostContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostContext")
            .field("values", &self.values)
            .field("extensions", &self.extensions.len())
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
#[derive(Clone, Debug)]
pub struct ActionContext {
    read: ReadContext,
    invocation_id: Arc<str>,
    /// `None` for observations: they are reads, settled (and dropped) by the
    /// registry on timeout without a signal.
    cancellation: Option<CancellationToken>,
    confirmation: Option<ConfirmationEvidence>,
}

/// A token that never fires, for contexts without one.
fn never_cancelled() -> &'static CancellationToken {
    static NEVER: std::sync::OnceLock<CancellationToken> = std::sync::OnceLock::new();
    NEVER.get_or_init(CancellationToken::new)
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
            cancellation: Some(cancellation),
            confirmation,
        }
    }

    /// The context of an observation: no cancellation signal.
    pub(crate) fn for_observation(read: ReadContext, invocation_id: Arc<str>) -> ActionContext {
        ActionContext {
            read,
            invocation_id,
            cancellation: None,
            confirmation: None,
        }
    }

    /// The invocation id (the agent's tool-call id when an adapter supplied one).
    pub fn invocation_id(&self) -> &str {
        &self.invocation_id
    }

    /// Fires on timeout, external cancellation or unmount. Cooperative: a
    /// long handler should check it or `select!` on
    /// [`cancelled`](CancellationToken::cancelled).
    pub fn cancellation(&self) -> &CancellationToken {
        self.cancellation
            .as_ref()
            .unwrap_or_else(|| never_cancelled())
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
