//! The transport-neutral executor the host installs, and the manifest of
//! procedures its backend exposes.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::context::{ConfirmationEvidence, Consumer, HostContext};
use agent_surface_rules::{Confirmation, Effect};

/// The future an executor returns.
pub type ExecuteFuture = Pin<Box<dyn Future<Output = Result<Value, ProcedureError>> + Send>>;

/// Executes domain procedures on the real backend, through the user's own
/// authenticated transport. Install one with
/// [`Registry::set_procedure_executor`](crate::Registry::set_procedure_executor).
///
/// The registry calls [`execute`](Self::execute) only after every client
/// phase passed (availability, policies, the validated effective input,
/// confirmation); the backend still re-validates everything: the client is
/// never a security boundary.
pub trait ProcedureExecutor: Send + Sync + 'static {
    /// The procedures the backend exposes: the ceiling of what references
    /// may register.
    fn manifest(&self) -> &ProcedureManifest;

    /// Runs one call. Honour `call.cancellation` (fired on timeout, external
    /// cancellation, unmount and disposal); the registry settles the call at
    /// once either way.
    fn execute(&self, call: ProcedureCall) -> ExecuteFuture;
}

/// One forwarded call.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ProcedureCall {
    /// `domain:<path>`.
    pub procedure_id: Arc<str>,
    /// The validated effective input: agent input merged with live bound values.
    pub input: Value,
    /// The invocation id (an idempotency key the backend may honour).
    pub invocation_id: Arc<str>,
    /// Who called.
    pub consumer: Consumer,
    /// The host context at the time of the call.
    pub host: HostContext,
    /// The user's approval, when one was required: information for the
    /// backend, never authorization.
    pub evidence: Option<ConfirmationEvidence>,
    /// Fired when the registry gives up on the call.
    pub cancellation: CancellationToken,
    /// How long the registry waits.
    pub timeout: Duration,
}

/// How a backend call failed.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ProcedureError {
    /// The backend answered with an error (refused, rejected the input, failed).
    Server {
        /// The backend's error code, if it has one (e.g. `"forbidden"`).
        code: Option<String>,
        /// The backend's message (operator-facing; never shown to agents unmapped).
        message: String,
        /// Structured error data.
        data: Option<Value>,
    },
    /// The backend wants the user's approval before it runs the operation.
    ApprovalRequired {
        /// What the user is asked to approve, if the backend says.
        summary: Option<String>,
    },
    /// The call did not reach the backend or its answer was unreadable.
    Transport(String),
    /// The call was cancelled before it completed.
    Cancelled,
}

impl ProcedureError {
    /// A server error with a code.
    pub fn server(code: impl Into<String>, message: impl Into<String>) -> ProcedureError {
        ProcedureError::Server {
            code: Some(code.into()),
            message: message.into(),
            data: None,
        }
    }

    /// The backend's error code, if any.
    pub fn code(&self) -> Option<&str> {
        match self {
            ProcedureError::Server { code, .. } => code.as_deref(),
            _ => None,
        }
    }
}

impl fmt::Display for ProcedureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProcedureError::Server { code, message, .. } => match code {
                Some(code) => write!(f, "the backend refused ({code}): {message}"),
                None => write!(f, "the backend failed: {message}"),
            },
            ProcedureError::ApprovalRequired { .. } => {
                f.write_str("the backend requires the user's approval")
            }
            ProcedureError::Transport(message) => write!(f, "transport failure: {message}"),
            ProcedureError::Cancelled => f.write_str("cancelled"),
        }
    }
}

impl std::error::Error for ProcedureError {}

/// Whether a manifest entry's effect was stated by the backend or inferred
/// from hints (e.g. MCP tool annotations).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EffectSource {
    /// Stated: the declared contract must say the same.
    Stated,
    /// Inferred from hints: the declared contract may say more dangerous,
    /// never less.
    Inferred,
}

/// What the backend says about one procedure.
#[derive(Clone, Debug, PartialEq)]
pub struct ManifestEntry {
    id: String,
    description: Option<String>,
    input_schema: Option<Value>,
    output_schema: Option<Value>,
    effect: Option<(Effect, EffectSource)>,
    confirmation: Option<Confirmation>,
}

impl ManifestEntry {
    /// An entry for `domain:<path>` with nothing else known.
    pub fn new(id: impl Into<String>) -> ManifestEntry {
        ManifestEntry {
            id: id.into(),
            description: None,
            input_schema: None,
            output_schema: None,
            effect: None,
            confirmation: None,
        }
    }

    /// The entry that agrees with a declared contract: for backends that
    /// are built from the same contracts (an in-process service, a test
    /// double).
    pub fn declared(procedure: &super::CheckedProcedure) -> ManifestEntry {
        let entry = ManifestEntry::new(procedure.id().as_str())
            .description(&**procedure.description())
            .input_schema((**procedure.input_schema().json()).clone())
            .effect(procedure.effect(), EffectSource::Stated)
            .confirmation(procedure.confirmation());
        match procedure.output_schema() {
            Some(output) => entry.output_schema((**output.json()).clone()),
            None => entry,
        }
    }

    /// The backend's description.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The backend's input schema.
    #[must_use]
    pub fn input_schema(mut self, schema: Value) -> Self {
        self.input_schema = Some(schema);
        self
    }

    /// The backend's output schema.
    #[must_use]
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// The effect and where it came from.
    #[must_use]
    pub fn effect(mut self, effect: Effect, source: EffectSource) -> Self {
        self.effect = Some((effect, source));
        self
    }

    /// The confirmation posture the backend demands at least.
    #[must_use]
    pub fn confirmation(mut self, confirmation: Confirmation) -> Self {
        self.confirmation = Some(confirmation);
        self
    }

    /// `domain:<path>`.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The backend's description.
    pub fn get_description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// The backend's input schema.
    pub fn get_input_schema(&self) -> Option<&Value> {
        self.input_schema.as_ref()
    }

    /// The backend's output schema.
    pub fn get_output_schema(&self) -> Option<&Value> {
        self.output_schema.as_ref()
    }

    /// The backend's effect and its source.
    pub fn get_effect(&self) -> Option<(Effect, EffectSource)> {
        self.effect
    }

    /// The backend's confirmation posture.
    pub fn get_confirmation(&self) -> Option<Confirmation> {
        self.confirmation
    }
}

/// The procedures a backend exposes, by id.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProcedureManifest {
    entries: BTreeMap<String, ManifestEntry>,
}

impl ProcedureManifest {
    /// An empty manifest (no reference registers anything).
    pub fn new() -> ProcedureManifest {
        ProcedureManifest::default()
    }

    /// Adds (or replaces) an entry.
    #[must_use]
    pub fn with(mut self, entry: ManifestEntry) -> Self {
        self.insert(entry);
        self
    }

    /// Adds (or replaces) an entry.
    pub fn insert(&mut self, entry: ManifestEntry) {
        self.entries.insert(entry.id.clone(), entry);
    }

    /// The entry of `id`.
    pub fn get(&self, id: &str) -> Option<&ManifestEntry> {
        self.entries.get(id)
    }

    /// Every entry, sorted by id.
    pub fn entries(&self) -> impl Iterator<Item = &ManifestEntry> {
        self.entries.values()
    }

    /// How many procedures the backend exposes.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it exposes none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl FromIterator<ManifestEntry> for ProcedureManifest {
    fn from_iter<I: IntoIterator<Item = ManifestEntry>>(iter: I) -> Self {
        let mut manifest = ProcedureManifest::new();
        for entry in iter {
            manifest.insert(entry);
        }
        manifest
    }
}

/// How dangerous an effect is, for "never less dangerous" comparisons.
pub(crate) fn danger(effect: Effect) -> u8 {
    match effect {
        Effect::Read => 0,
        Effect::LocalState | Effect::Navigation => 1,
        Effect::ServerQuery => 2,
        Effect::ServerMutation => 3,
        Effect::ExternalSideEffect => 4,
        Effect::Destructive => 5,
    }
}
