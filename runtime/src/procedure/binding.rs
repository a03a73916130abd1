//! Procedure references: the typed builder a component mounts with, and the
//! per-mount reference the registry keeps (bindings, availability, the
//! agent-facing schema).

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, PoisonError, RwLock};
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};

use super::{CheckedProcedure, Field, Procedure, ProcedureContract};
use crate::Confirmation;
use crate::contract::{CheckedCapability, CheckedSchema};
use crate::error::{DefinitionError, DefinitionErrorKind as K, ErrorPayload};
use crate::policy::PolicyRef;
use crate::primitives::concurrency::ActionQueue;
use crate::registry::{Availability, Chain};
use crate::schema::Issue;

type Eval = Arc<dyn Fn() -> Result<Value, String> + Send + Sync>;
type WhenFn = Arc<dyn Fn() -> bool + Send + Sync>;
type TextFn = Arc<dyn Fn() -> String + Send + Sync>;

/// One bound field: where its value comes from and whether the agent may
/// override it.
#[derive(Clone)]
pub(crate) struct BoundField {
    pub(crate) name: &'static str,
    pub(crate) locked: bool,
    eval: Eval,
}

/// Why the unavailable reason is what it is.
#[derive(Clone)]
enum Reason {
    None,
    Static(Cow<'static, str>),
    Dynamic(TextFn),
}

/// A reference to backend procedure `P`, configured by the component that
/// mounts it: which input fields come from live UI state, when it is
/// available, its live contextual note, stricter confirmation, policies and
/// queue depth.
///
/// Closures are called at invocation (and discovery) time, so they read
/// live state: keep them cheap and synchronous.
///
/// ```
/// # use agent_surface::prelude::*;
/// # use agent_surface::procedure::{Procedure, ProcedureRef};
/// /// Export a report.
/// #[agent_procedure(id = "domain:reports.export", effect = "server-mutation")]
/// pub struct Export {
///     /// Which report.
///     pub report_id: String,
///     /// The file format.
///     pub format: Option<String>,
/// }
/// let reference = ProcedureRef::<Export>::new()
///     .bind(Export::fields().report_id, || "weekly".to_owned())
///     .bind_overridable(Export::fields().format, || Some("csv".to_owned()))
///     .describe(|| "Exports the weekly report".to_owned())
///     .confirmation(Confirmation::Required);
/// # let _ = reference;
/// ```
#[must_use]
pub struct ProcedureRef<P> {
    fields: Vec<BoundField>,
    when: Option<WhenFn>,
    reason: Reason,
    describe: Option<TextFn>,
    confirmation: Option<Confirmation>,
    policies: Vec<PolicyRef>,
    queue_depth: Option<u32>,
    timeout: Option<Duration>,
    marker: PhantomData<fn() -> P>,
}

impl<P: Procedure> Default for ProcedureRef<P> {
    fn default() -> Self {
        ProcedureRef::new()
    }
}

impl<P> fmt::Debug for ProcedureRef<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProcedureRef")
            .field(
                "bound",
                &self.fields.iter().map(|b| b.name).collect::<Vec<_>>(),
            )
            .field("confirmation", &self.confirmation)
            .finish_non_exhaustive()
    }
}

impl<P: Procedure> ProcedureRef<P> {
    /// A reference with no bindings: the agent supplies the whole input.
    pub fn new() -> Self {
        ProcedureRef {
            fields: Vec::new(),
            when: None,
            reason: Reason::None,
            describe: None,
            confirmation: None,
            policies: Vec::new(),
            queue_depth: None,
            timeout: None,
            marker: PhantomData,
        }
    }

    fn push<T: Serialize, E: fmt::Display>(
        mut self,
        field: Field<P, T>,
        locked: bool,
        value: impl Fn() -> Result<T, E> + Send + Sync + 'static,
    ) -> Self {
        let eval: Eval = Arc::new(move || {
            let value = value().map_err(|err| err.to_string())?;
            serde_json::to_value(value).map_err(|err| err.to_string())
        });
        self.fields.push(BoundField {
            name: field.name(),
            locked,
            eval,
        });
        self
    }

    /// Binds `field` to live state, locked: the field disappears from the
    /// agent-facing schema and an agent that supplies it gets
    /// `INVALID_INPUT {lockedFields}`.
    pub fn bind<T: Serialize>(
        self,
        field: Field<P, T>,
        value: impl Fn() -> T + Send + Sync + 'static,
    ) -> Self {
        self.push(field, true, move || {
            Ok::<T, std::convert::Infallible>(value())
        })
    }

    /// Binds `field` to live state that may fail to evaluate; a failure
    /// settles the call `PRECONDITION_FAILED {reason: "binding-failed"}`
    /// before any confirmation is requested.
    pub fn try_bind<T: Serialize, E: fmt::Display>(
        self,
        field: Field<P, T>,
        value: impl Fn() -> Result<T, E> + Send + Sync + 'static,
    ) -> Self {
        self.push(field, true, value)
    }

    /// Binds `field` as a default the agent may override: it stays visible
    /// (and optional) in the agent-facing schema; agent input wins.
    pub fn bind_overridable<T: Serialize>(
        self,
        field: Field<P, T>,
        value: impl Fn() -> T + Send + Sync + 'static,
    ) -> Self {
        self.push(field, false, move || {
            Ok::<T, std::convert::Infallible>(value())
        })
    }

    /// Live availability: while `false`, the procedure is listed as
    /// unavailable and calls fail `CAPABILITY_NOT_AVAILABLE`.
    pub fn when(mut self, when: impl Fn() -> bool + Send + Sync + 'static) -> Self {
        self.when = Some(Arc::new(when));
        self
    }

    /// The reason shown while `when` is false.
    pub fn unavailable_reason(mut self, reason: impl Into<Cow<'static, str>>) -> Self {
        self.reason = Reason::Static(reason.into());
        self
    }

    /// A reason computed from live state while `when` is false.
    pub fn unavailable_reason_with(
        mut self,
        reason: impl Fn() -> String + Send + Sync + 'static,
    ) -> Self {
        self.reason = Reason::Dynamic(Arc::new(reason));
        self
    }

    /// Live contextual text, shown as the descriptor's `contextualNote`
    /// (the `description` stays the procedure's stable one).
    pub fn describe(mut self, note: impl Fn() -> String + Send + Sync + 'static) -> Self {
        self.describe = Some(Arc::new(note));
        self
    }

    /// A stricter confirmation posture than the contract's (never a laxer
    /// one: mounting fails).
    pub fn confirmation(mut self, confirmation: Confirmation) -> Self {
        self.confirmation = Some(confirmation);
        self
    }

    /// A client policy for this reference (innermost layer of its chain).
    pub fn policy(mut self, policy: impl crate::policy::Policy) -> Self {
        self.policies.push(Arc::new(policy));
        self
    }

    /// Calls waiting behind the running one in this reference's queue
    /// (default: the registry's `action_queue_depth`).
    pub fn queue_depth(mut self, depth: u32) -> Self {
        self.queue_depth = Some(depth);
        self
    }

    /// How long the registry waits for the backend (default: the
    /// contract's timeout, else the registry's `procedure_timeout`).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    pub(crate) fn erase(self) -> ErasedRef {
        ErasedRef {
            contract: P::contract(),
            fields: self.fields,
            when: self.when,
            reason: self.reason,
            describe: self.describe,
            confirmation: self.confirmation,
            policies: self.policies,
            queue_depth: self.queue_depth,
            timeout: self.timeout,
        }
    }
}

/// A [`ProcedureRef`] with its type parameter erased, as a mount builder
/// collects it.
pub(crate) struct ErasedRef {
    contract: &'static ProcedureContract,
    fields: Vec<BoundField>,
    when: Option<WhenFn>,
    reason: Reason,
    describe: Option<TextFn>,
    confirmation: Option<Confirmation>,
    pub(crate) policies: Vec<PolicyRef>,
    queue_depth: Option<u32>,
    timeout: Option<Duration>,
}

impl ErasedRef {
    pub(crate) fn contract(&self) -> &'static ProcedureContract {
        self.contract
    }

    /// Checks the configuration against the contract and builds the
    /// reference a registration keeps.
    pub(crate) fn build(self, chain: Chain) -> Result<Reference, DefinitionError> {
        let procedure = self.contract.checked()?;
        let subject = procedure.id().as_str();
        for (i, field) in self.fields.iter().enumerate() {
            if self.fields.iter().take(i).any(|f| f.name == field.name) {
                return Err(DefinitionError::new(
                    K::InvalidDefinition,
                    subject,
                    format!("the field `{}` is bound twice", field.name),
                ));
            }
        }
        let confirmation = match self.confirmation {
            Some(stricter) if stricter < procedure.confirmation() => {
                return Err(DefinitionError::new(
                    K::InvalidDefinition,
                    subject,
                    format!(
                        "a reference may escalate confirmation, never lower it: the contract says `{}`, the reference `{}`",
                        procedure.confirmation().as_str(),
                        stricter.as_str()
                    ),
                ));
            }
            Some(stricter) => stricter,
            None => procedure.confirmation(),
        };
        let agent_schema = surgery(procedure.input_schema().json(), &self.fields)
            .map_err(|message| DefinitionError::new(K::InvalidDefinition, subject, message))?;
        let input = CheckedSchema::from_raw(agent_schema, &format!("{subject} input schema"))?;
        let timeout_ms = self
            .timeout
            .map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX))
            .or(procedure.timeout_ms());
        let capability = CheckedCapability::procedure_reference(
            crate::contract::ProcedureIdentity {
                id: procedure.id(),
                description: procedure.description(),
                effect: procedure.effect(),
                idempotent: procedure.idempotent(),
                audit: procedure.audit(),
            },
            input,
            confirmation,
            timeout_ms,
            self.queue_depth,
        );
        Ok(Reference {
            procedure,
            capability,
            fields: self
                .fields
                .iter()
                .map(|field| FieldInfo {
                    name: field.name,
                    locked: field.locked,
                })
                .collect(),
            live: RwLock::new(Some(Arc::new(Live {
                fields: self.fields.into_boxed_slice(),
                when: self.when,
                reason: self.reason,
                describe: self.describe,
            }))),
            chain,
            queue: OnceLock::new(),
            exposed: AtomicBool::new(false),
        })
    }
}

/// The agent-facing schema: the full one minus locked fields (and their
/// `required` entries); overridable fields stay, optional.
fn surgery(full: &Value, fields: &[BoundField]) -> Result<Value, String> {
    let mut schema = full.clone();
    let Some(object) = schema.as_object_mut() else {
        return Err("the input schema is not an object schema".to_owned());
    };
    let properties = object.get_mut("properties").and_then(Value::as_object_mut);
    let Some(properties) = properties else {
        if let Some(field) = fields.first() {
            return Err(format!(
                "the input schema has no properties; `{}` cannot be bound",
                field.name
            ));
        }
        return Ok(schema);
    };
    for field in fields {
        if !properties.contains_key(field.name) {
            return Err(format!(
                "the input schema has no property `{}` to bind",
                field.name
            ));
        }
        if field.locked {
            properties.remove(field.name);
        }
    }
    if let Some(required) = object.get_mut("required").and_then(Value::as_array_mut) {
        required.retain(|name| !fields.iter().any(|field| name.as_str() == Some(field.name)));
        if required.is_empty() {
            object.remove("required");
        }
    }
    Ok(schema)
}

/// The descriptor's `boundFields` entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BoundFieldView {
    /// The field (a JSON pointer into the input).
    pub path: String,
    /// Whether the agent may not supply it.
    pub locked: bool,
    /// Where the value comes from: `"ui-state"`.
    pub source: &'static str,
}

/// A bound field's name and lock: static facts, kept after unmount.
struct FieldInfo {
    name: &'static str,
    locked: bool,
}

/// The closures of a reference: live references into the application,
/// dropped at unmount so no executable reference outlives the mount.
struct Live {
    fields: Box<[BoundField]>,
    when: Option<WhenFn>,
    reason: Reason,
    describe: Option<TextFn>,
}

/// A reference as one registration keeps it.
pub(crate) struct Reference {
    pub(crate) procedure: &'static CheckedProcedure,
    /// The reference as a capability: agent-facing schema, effective
    /// confirmation posture, audit level, timeout.
    pub(crate) capability: CheckedCapability,
    fields: Box<[FieldInfo]>,
    live: RwLock<Option<Arc<Live>>>,
    pub(crate) chain: Chain,
    queue: OnceLock<Arc<ActionQueue>>,
    /// Whether the installed manifest lists (and agrees with) the procedure.
    pub(crate) exposed: AtomicBool,
}

impl fmt::Debug for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reference")
            .field("procedure", self.procedure.id())
            .field("exposed", &self.is_exposed())
            .finish_non_exhaustive()
    }
}

/// Why a binding failed to evaluate.
#[derive(Debug)]
pub(crate) struct BindingFailure {
    pub(crate) field: &'static str,
    pub(crate) cause: String,
}

impl Reference {
    pub(crate) fn id(&self) -> &Arc<str> {
        self.procedure.id().as_arc()
    }

    pub(crate) fn is_exposed(&self) -> bool {
        self.exposed.load(Ordering::Acquire)
    }

    /// The closures, unless the mount is gone.
    fn live(&self) -> Option<Arc<Live>> {
        self.live
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Takes the closures out (unmount); the caller drops them unlocked.
    pub(crate) fn release(&self) -> Option<Box<dyn std::any::Any + Send + Sync>> {
        let live = self
            .live
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        live.map(|live| Box::new(live) as Box<dyn std::any::Any + Send + Sync>)
    }

    /// The `boundFields` of the descriptor.
    pub(crate) fn bound_fields(&self) -> Vec<BoundFieldView> {
        self.fields
            .iter()
            .map(|field| BoundFieldView {
                path: format!("/{}", field.name),
                locked: field.locked,
                source: "ui-state",
            })
            .collect()
    }

    /// Whether the reference has a `when` predicate (while mounted).
    pub(crate) fn has_when(&self) -> bool {
        self.live().is_some_and(|live| live.when.is_some())
    }

    /// `when()` now; a panic counts as unavailable (`when-error`).
    pub(crate) fn availability(&self) -> Availability {
        let Some(live) = self.live() else {
            return Availability::Unavailable(Cow::Borrowed(crate::registry::NOT_AVAILABLE_NOW));
        };
        let Some(when) = &live.when else {
            return Availability::Available;
        };
        match catch_unwind(AssertUnwindSafe(|| when())) {
            Ok(true) => Availability::Available,
            Ok(false) => Availability::Unavailable(live.reason()),
            Err(_) => {
                tracing::warn!(procedure = %self.procedure.id(), "`when` panicked; the procedure counts as unavailable");
                Availability::Unavailable(Cow::Borrowed(crate::registry::WHEN_ERROR))
            }
        }
    }

    /// The live contextual note; a panic or empty text gives none.
    pub(crate) fn contextual_note(&self) -> Option<String> {
        let live = self.live()?;
        let describe = live.describe.as_ref()?;
        let note = catch_unwind(AssertUnwindSafe(|| describe())).ok()?;
        let note = note.trim();
        if note.is_empty() {
            return None;
        }
        let max = agent_surface_rules::MAX_CAPABILITY_DESCRIPTION;
        Some(if note.chars().count() > max {
            note.chars().take(max - 1).collect::<String>() + "…"
        } else {
            note.to_owned()
        })
    }

    /// The queue of this (procedure, registration) pair.
    pub(crate) fn queue(&self, make: impl FnOnce() -> ActionQueue) -> Arc<ActionQueue> {
        Arc::clone(self.queue.get_or_init(|| Arc::new(make())))
    }

    /// Phase 5 for a procedure: reject supplied locked fields, validate the
    /// agent's part against the agent-facing schema, evaluate the bindings,
    /// merge (agent input wins for overridable fields) and validate the
    /// result against the full schema.
    pub(crate) fn effective_input(&self, input: Value) -> Result<Value, ErrorPayload> {
        let mut agent = match input {
            Value::Null => Map::new(),
            Value::Object(map) => map,
            _ => {
                return Err(ErrorPayload::invalid_input(&[Issue::new(
                    "",
                    "the input must be a JSON object",
                )]));
            }
        };
        let locked: Vec<Value> = self
            .fields
            .iter()
            .filter(|field| field.locked && agent.contains_key(field.name))
            .map(|field| Value::from(field.name))
            .collect();
        if !locked.is_empty() {
            return Err(ErrorPayload::new(
                crate::ErrorCode::InvalidInput,
                "Some fields are bound from the application and cannot be supplied. Remove them and retry.",
            )
            .with_detail("lockedFields", locked));
        }
        let agent_value = Value::Object(std::mem::take(&mut agent));
        let issues = self
            .capability
            .input_schema()
            .map(|schema| schema.validator().validate(&agent_value))
            .unwrap_or_default();
        if !issues.is_empty() {
            return Err(ErrorPayload::invalid_input(&issues));
        }
        let Value::Object(mut merged) = agent_value else {
            return Err(ErrorPayload::invalid_input(&[]));
        };
        let live = self.live().ok_or_else(|| {
            binding_failed(BindingFailure {
                field: "",
                cause: "the component was unmounted".to_owned(),
            })
        })?;
        for field in live.fields.iter() {
            if !field.locked && merged.contains_key(field.name) {
                continue;
            }
            let value = evaluate(field).map_err(binding_failed)?;
            // An overridable binding that yields nothing leaves the field absent.
            if value.is_null() && !field.locked {
                continue;
            }
            merged.insert(field.name.to_owned(), value);
        }
        let mut effective = Value::Object(merged);
        let full = self.procedure.input_schema().validator();
        full.fill_defaults(&mut effective);
        let issues = full.validate(&effective);
        if issues.is_empty() {
            return Ok(effective);
        }
        // Issues under a locked field come from the application's state, not
        // from the agent: the agent cannot fix them by changing its input.
        let locked = issues.iter().find_map(|issue| {
            let top = issue.path().strip_prefix('/')?.split('/').next()?;
            let field = self.fields.iter().find(|f| f.locked && f.name == top)?;
            Some((field.name, issue))
        });
        if let Some((field, issue)) = locked {
            tracing::warn!(procedure = %self.procedure.id(), %issue, "a bound value does not match the procedure's input schema");
            return Err(binding_failed_payload(
                field,
                "The application state this operation is bound to is not valid right now. Refresh and retry.",
            ));
        }
        Err(ErrorPayload::invalid_input(&issues))
    }
}

/// One binding's value now; errors and panics are failures.
fn evaluate(field: &BoundField) -> Result<Value, BindingFailure> {
    match catch_unwind(AssertUnwindSafe(|| (field.eval)())) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(cause)) => Err(BindingFailure {
            field: field.name,
            cause,
        }),
        Err(_) => Err(BindingFailure {
            field: field.name,
            cause: "the binding panicked".to_owned(),
        }),
    }
}

impl Live {
    fn reason(&self) -> Cow<'static, str> {
        let fallback = Cow::Borrowed(crate::registry::NOT_AVAILABLE_NOW);
        match &self.reason {
            Reason::None => fallback,
            Reason::Static(reason) => reason.clone(),
            Reason::Dynamic(reason) => catch_unwind(AssertUnwindSafe(|| reason()))
                .ok()
                .filter(|r| !r.trim().is_empty())
                .map_or(fallback, Cow::Owned),
        }
    }
}

fn binding_failed(failure: BindingFailure) -> ErrorPayload {
    tracing::warn!(field = failure.field, cause = %failure.cause, "a procedure binding failed to evaluate");
    binding_failed_payload(
        failure.field,
        "The application could not supply part of this operation's input right now. Refresh and retry.",
    )
}

/// `PRECONDITION_FAILED {reason: "binding-failed", field}`, retry after refresh:
/// the agent cannot fix the application's state by changing its input.
fn binding_failed_payload(field: &str, message: &'static str) -> ErrorPayload {
    ErrorPayload::precondition_failed(message)
        .with_retry(crate::Retry::AfterRefresh)
        .with_detail("reason", "binding-failed")
        .with_detail("field", field)
}
