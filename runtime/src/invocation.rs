//! The call as data: what an agent (or adapter) issues — [`Invocation`] —,
//! how to run it — [`InvokeOptions`] — and its settled outcome —
//! [`InvocationResult`]. Re-exported from [`crate::invoke`], where the
//! pipeline that runs them lives.

use std::sync::Arc;
use std::time::Duration;

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::canonical::{Fnv1a64, Sink, measure_into, write_string};
use crate::context::Consumer;
use crate::error::ErrorPayload;

/// One call, as an agent (or adapter) issues it: [`Invocation::new`] and
/// a chainable setter per field.
///
/// ```
/// use agent_surface::prelude::*;
///
/// let call = Invocation::new("view:devices.table.selectRows")
///     .input(serde_json::json!({ "ids": ["d1"] }))
///     .instance("main");
/// assert_eq!(call.instance_id.as_deref(), Some("main"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[non_exhaustive]
pub struct Invocation {
    /// Idempotency key; adapters pass their tool-call id. Minted when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invocation_id: Option<String>,
    /// `view:…` or `domain:…`.
    pub capability_id: String,
    /// Required when more than one live instance offers the capability.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<String>,
    /// The staleness token from discovery.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration_id: Option<String>,
    /// Version hint, enforced for destructive and external effects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub surface_version: Option<String>,
    /// The agent's input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    /// Evidence from a resolved confirmation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation_id: Option<String>,
}

impl Invocation {
    /// A call of `capability_id` with no input.
    pub fn new(capability_id: impl Into<String>) -> Invocation {
        Invocation {
            capability_id: capability_id.into(),
            ..Invocation::default()
        }
    }

    /// Sets the input.
    #[must_use]
    pub fn input(mut self, input: Value) -> Self {
        self.input = Some(input);
        self
    }

    /// Sets the invocation id.
    #[must_use]
    pub fn invocation_id(mut self, id: impl Into<String>) -> Self {
        self.invocation_id = Some(id.into());
        self
    }

    /// Names the instance.
    #[must_use]
    pub fn instance(mut self, instance: impl Into<String>) -> Self {
        self.instance_id = Some(instance.into());
        self
    }

    /// Sends the registration id from discovery.
    #[must_use]
    pub fn registration(mut self, registration_id: impl Into<String>) -> Self {
        self.registration_id = Some(registration_id.into());
        self
    }

    /// Sends the surface version from discovery.
    #[must_use]
    pub fn surface_version(mut self, version: impl Into<String>) -> Self {
        self.surface_version = Some(version.into());
        self
    }

    /// Sends confirmation evidence.
    #[must_use]
    pub fn confirmation(mut self, confirmation_id: impl Into<String>) -> Self {
        self.confirmation_id = Some(confirmation_id.into());
        self
    }

    /// The request fingerprint: FNV-1a 64 over the canonical JSON of
    /// `{capabilityId, registrationId, instanceId, surfaceVersion, input}`
    /// as issued (absent fields omitted).
    ///
    /// The confirmation evidence is not part of it: the same request with
    /// or without evidence is the same request, so a retry under the same
    /// invocation id joins or replays the call whether or not it carries
    /// the confirmation (a call cancelled while the person read answers its
    /// retry `CANCELLED` either way), and evidence alone never makes an
    /// `INVOCATION_CONFLICT`. (The specification's fingerprint includes
    /// it; that turns a retry differing only in evidence into a conflict.)
    ///
    /// Deduplication compares the same canonical JSON under a keyed hash
    /// instead: whoever writes the input can choose two requests with one
    /// FNV-1a fingerprint, and a reused id must never return another
    /// request's result.
    pub fn fingerprint(&self) -> u64 {
        let mut hasher = Fnv1a64::new();
        self.fingerprint_into(&mut hasher, usize::MAX, usize::MAX, false);
        hasher.finish()
    }

    /// The fingerprint phase 1 compares, and in the same walk the
    /// input's depth and canonical size against the request bounds (`None`:
    /// no input): the fields of [`fingerprint`](Self::fingerprint), hashed
    /// with `hasher` (keyed SipHash: FNV-1a can be steered, so two requests
    /// the agent chose with one FNV-1a fingerprint would be one request to
    /// deduplication). When the input crosses a bound the walk stops there
    /// and the fingerprint is meaningless (the request is refused).
    ///
    /// What is hashed is an injective encoding rather than JSON: no
    /// replica compares it (each process has its own key), so the
    /// identifiers go in as they are — present or not, their length, their
    /// bytes — without JSON's quoting and escaping, and the input's
    /// canonical JSON (key order settled, self-delimiting) comes last.
    pub(crate) fn keyed_fingerprint_measuring(
        &self,
        hasher: std::hash::DefaultHasher,
        max_depth: usize,
        max_bytes: usize,
    ) -> (u64, Option<crate::canonical::Measure>) {
        let mut blocks = crate::canonical::Blocked::new(hasher);
        let ids = [
            Some(self.capability_id.as_str()),
            self.instance_id.as_deref(),
            self.registration_id.as_deref(),
            self.surface_version.as_deref(),
        ];
        for id in ids {
            match id {
                None => blocks.write_byte(0),
                Some(id) => {
                    blocks.write_byte(1);
                    blocks.write(&(id.len() as u64).to_le_bytes());
                    blocks.write(id.as_bytes());
                }
            }
        }
        let measured = self.input.as_ref().map(|input| {
            blocks.write_byte(1);
            measure_into(input, &mut blocks, max_depth, max_bytes)
        });
        (blocks.finish(), measured)
    }

    /// The digest of what the request asks, apart from this process's
    /// staleness tokens (the registration id and surface version are each
    /// replica's own): what replicas sharing a store compare, so the same
    /// request retried on another replica is the same request. SHA-256, so
    /// every replica computes it alike and no request can be chosen to
    /// share another's.
    pub(crate) fn portable_digest(&self) -> [u8; 32] {
        use sha2::Digest as _;
        let mut digest = sha2::Sha256::new();
        self.fingerprint_into(&mut digest, usize::MAX, usize::MAX, true);
        digest.finalize().into()
    }

    /// Streams the canonical JSON of the request's fields into `sink`;
    /// returns what the walk measured of the input.
    fn fingerprint_into<S: Sink>(
        &self,
        sink: &mut S,
        max_depth: usize,
        max_bytes: usize,
        portable: bool,
    ) -> Option<crate::canonical::Measure> {
        enum Part<'a> {
            Text(&'a str),
            Json(&'a Value),
        }
        // Keys in canonical (sorted) order, streamed without building a
        // Value; each key written with its quotes and colon (none needs
        // escaping).
        let fields: [(&[u8], Option<Part<'_>>); 5] = [
            (b"\"capabilityId\":", Some(Part::Text(&self.capability_id))),
            (b"\"input\":", self.input.as_ref().map(Part::Json)),
            (
                b"\"instanceId\":",
                self.instance_id.as_deref().map(Part::Text),
            ),
            (
                b"\"registrationId\":",
                self.registration_id
                    .as_deref()
                    .filter(|_| !portable)
                    .map(Part::Text),
            ),
            (
                b"\"surfaceVersion\":",
                self.surface_version
                    .as_deref()
                    .filter(|_| !portable)
                    .map(Part::Text),
            ),
        ];
        let mut measured = None;
        let mut open = b'{';
        for (key, field) in fields {
            let Some(field) = field else { continue };
            sink.write_byte(open);
            open = b',';
            sink.write(key);
            match field {
                Part::Text(text) => write_string(text, sink),
                Part::Json(value) => {
                    measured = Some(measure_into(value, sink, max_depth, max_bytes));
                }
            }
        }
        sink.write_byte(b'}');
        measured
    }
}

/// How to run one call: [`InvokeOptions::default`] (the anonymous
/// embedded consumer) or [`InvokeOptions::consumer`], and a chainable setter
/// per field.
///
/// ```
/// use std::time::Duration;
/// use agent_surface::prelude::*;
///
/// let options = InvokeOptions::consumer(Consumer::new(ConsumerKind::Mcp, "planner"))
///     .timeout(Duration::from_secs(2))
///     .scope(["devices"]);
/// assert_eq!(options.scope, ["devices"]);
/// ```
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct InvokeOptions {
    /// Who calls (default: `embedded:anonymous`).
    pub consumer: Option<Consumer>,
    /// External cancellation: firing it settles `CANCELLED`.
    pub cancellation: Option<CancellationToken>,
    /// Overrides the capability's and the registry's timeout.
    pub timeout: Option<Duration>,
    /// Component-type prefixes the call may reach (a toolset's scope
    /// floor); outside them a capability is not found. Empty: everything.
    pub scope: Vec<String>,
    /// The kinds the caller's verb admits (a read-only verb: observations).
    /// A target of another kind settles `INVALID_INPUT` at `/capabilityId`
    /// after resolution — so a hidden capability stays not found — and
    /// before anything runs.
    pub kinds: Kinds,
}

/// Which kinds of capability a call may address; see [`InvokeOptions::kinds`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Kinds {
    /// Every kind (the default).
    #[default]
    All,
    /// Observations only.
    Observations,
    /// Actions and procedures only.
    Operations,
}

/// The issue message of a target outside [`Kinds::Operations`].
pub const IS_AN_OBSERVATION: &str = "is an observation";
/// The issue message of a target outside [`Kinds::Observations`].
pub const IS_NOT_AN_OBSERVATION: &str = "is not an observation";

impl InvokeOptions {
    /// Options for `consumer`.
    pub fn consumer(consumer: Consumer) -> InvokeOptions {
        InvokeOptions {
            consumer: Some(consumer),
            ..InvokeOptions::default()
        }
    }

    /// Sets the external cancellation.
    #[must_use]
    pub fn cancellation(mut self, cancellation: CancellationToken) -> Self {
        self.cancellation = Some(cancellation);
        self
    }

    /// Sets the timeout, over the capability's and the registry's.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Restricts the call to component-type prefixes.
    #[must_use]
    pub fn scope(mut self, prefixes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scope = prefixes.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the kinds the caller's verb admits.
    #[must_use]
    pub fn kinds(mut self, kinds: Kinds) -> Self {
        self.kinds = kinds;
        self
    }
}

/// A result's capability id (the contract's own string, with no shared
/// count to touch however many calls to one capability settle at once, or
/// a shared copy) and whether the surface changed while the call ran, kept
/// in the id's tag so a result (and the dedupe record holding one) stays
/// as small as with a shared id alone.
#[derive(Clone)]
enum Called {
    Contract(&'static str),
    ContractChanged(&'static str),
    Shared(Arc<str>),
    SharedChanged(Arc<str>),
}

impl Called {
    fn contract(id: &'static str, changed: bool) -> Called {
        if changed {
            Called::ContractChanged(id)
        } else {
            Called::Contract(id)
        }
    }

    fn shared(id: Arc<str>, changed: bool) -> Called {
        if changed {
            Called::SharedChanged(id)
        } else {
            Called::Shared(id)
        }
    }

    fn id(&self) -> &str {
        match self {
            Called::Contract(id) | Called::ContractChanged(id) => id,
            Called::Shared(id) | Called::SharedChanged(id) => id,
        }
    }

    fn changed(&self) -> bool {
        matches!(self, Called::ContractChanged(_) | Called::SharedChanged(_))
    }
}

/// The settled outcome of a call.
#[derive(Clone)]
pub struct InvocationResult {
    invocation_id: Arc<str>,
    called: Called,
    outcome: Result<Option<Arc<Value>>, ErrorPayload>,
    surface_version: u64,
}

impl PartialEq for InvocationResult {
    fn eq(&self, other: &InvocationResult) -> bool {
        self.invocation_id == other.invocation_id
            && self.called.id() == other.called.id()
            && self.outcome == other.outcome
            && self.surface_version == other.surface_version
            && self.called.changed() == other.called.changed()
    }
}

impl std::fmt::Debug for InvocationResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InvocationResult")
            .field("invocation_id", &self.invocation_id)
            .field("capability_id", &self.called.id())
            .field("outcome", &self.outcome)
            .field("surface_version", &self.surface_version)
            .field("surface_changed", &self.called.changed())
            .finish()
    }
}

impl InvocationResult {
    /// A settled result, for an adapter that settles a call itself
    /// (discovery in meta mode, a refusal before the pipeline: see
    /// [`adapter::refused`](crate::adapter::refused)) or rewords one the
    /// pipeline settled. The pipeline's own results are made the same way.
    pub fn new(
        invocation_id: Arc<str>,
        capability_id: Arc<str>,
        outcome: Result<Option<Arc<Value>>, ErrorPayload>,
        surface_version: u64,
        surface_changed: bool,
    ) -> InvocationResult {
        InvocationResult {
            invocation_id,
            called: Called::shared(capability_id, surface_changed),
            outcome,
            surface_version,
        }
    }

    /// [`new`](Self::new) for a call resolved to a contract's capability:
    /// the result borrows the contract's own id.
    pub(crate) fn of_contract(
        invocation_id: Arc<str>,
        capability_id: &'static str,
        outcome: Result<Option<Arc<Value>>, ErrorPayload>,
        surface_version: u64,
        surface_changed: bool,
    ) -> InvocationResult {
        InvocationResult {
            invocation_id,
            called: Called::contract(capability_id, surface_changed),
            outcome,
            surface_version,
        }
    }

    /// Whether the call succeeded.
    pub fn is_ok(&self) -> bool {
        self.outcome.is_ok()
    }

    /// The output of a successful call (`None` for actions returning `()`).
    pub fn output(&self) -> Option<&Value> {
        self.outcome
            .as_ref()
            .ok()
            .and_then(|output| output.as_deref())
    }

    /// The error of a failed call.
    pub fn error(&self) -> Option<&ErrorPayload> {
        self.outcome.as_ref().err()
    }

    /// The invocation id (the caller's, or a minted one).
    pub fn invocation_id(&self) -> &str {
        &self.invocation_id
    }

    /// The capability called.
    pub fn capability_id(&self) -> &str {
        self.called.id()
    }

    /// The surface version at settlement.
    pub fn surface_version(&self) -> u64 {
        self.surface_version
    }

    /// Whether the surface changed while the call ran (re-discover).
    pub fn surface_changed(&self) -> bool {
        self.called.changed()
    }

    /// The output or the error, consuming the result.
    pub fn into_outcome(self) -> Result<Option<Value>, ErrorPayload> {
        self.outcome.map(|output| {
            output.map(|value| Arc::try_unwrap(value).unwrap_or_else(|shared| (*shared).clone()))
        })
    }
}

/// `{status, invocationId, capabilityId, output? | error, surfaceVersion, surfaceChanged?}`.
impl Serialize for InvocationResult {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("status", if self.is_ok() { "ok" } else { "error" })?;
        map.serialize_entry("invocationId", &*self.invocation_id)?;
        map.serialize_entry("capabilityId", self.called.id())?;
        match &self.outcome {
            Ok(Some(output)) => map.serialize_entry("output", &**output)?,
            Ok(None) => {}
            Err(error) => map.serialize_entry("error", error)?,
        }
        map.serialize_entry(
            "surfaceVersion",
            &crate::util::decimal::DecimalString(self.surface_version),
        )?;
        if self.called.changed() {
            map.serialize_entry("surfaceChanged", &true)?;
        }
        map.end()
    }
}
