//! The per-mount reference the registry keeps: bound fields evaluated per
//! call, availability and the contextual note, the agent-facing schema, and
//! the closures dropped at unmount.

use std::borrow::Cow;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, PoisonError, RwLock};

use serde::Serialize;
use serde_json::{Map, Value};

use super::CheckedProcedure;
use crate::component::availability::{Availability, NOT_AVAILABLE_NOW, WHEN_ERROR};
use crate::contract::CheckedCapability;
use crate::error::ErrorPayload;
use crate::policy::chain::Chain;
use crate::primitives::concurrency::ActionQueue;
use crate::schema::Issue;

use super::{BoundField, Reason, TextFn, WhenFn};

/// The agent-facing schema: the full one minus locked fields (and their
/// `required` entries); overridable fields stay, optional.
pub(super) fn surgery(full: &Value, fields: &[BoundField]) -> Result<Value, String> {
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
#[non_exhaustive]
pub struct BoundFieldView {
    /// The field (a JSON pointer into the input).
    pub path: String,
    /// Whether the agent may not supply it.
    pub locked: bool,
    /// Where the value comes from: `"ui-state"`.
    pub source: &'static str,
}

/// A bound field's name and lock: static facts, kept after unmount.
pub(super) struct FieldInfo {
    pub(super) name: &'static str,
    pub(super) locked: bool,
}

/// The closures of a reference: live references into the application,
/// dropped at unmount so no executable reference outlives the mount.
pub(super) struct Live {
    pub(super) fields: Box<[BoundField]>,
    pub(super) when: Option<WhenFn>,
    pub(super) reason: Reason,
    pub(super) describe: Option<TextFn>,
}

/// `Reference::live_kinds`: the reference has a `when` predicate.
pub(super) const LIVE_WHEN: u8 = 1;
/// `Reference::live_kinds`: the reference has a live note (`describe`).
pub(super) const LIVE_DESCRIBE: u8 = 2;

/// A reference as one registration keeps it.
pub(crate) struct Reference {
    pub(crate) procedure: &'static CheckedProcedure,
    /// The reference as a capability: agent-facing schema, effective
    /// confirmation posture, audit level, timeout.
    pub(crate) capability: CheckedCapability,
    pub(super) fields: Box<[FieldInfo]>,
    pub(super) live: RwLock<Option<Arc<Live>>>,
    /// What `live` holds, readable without its lock (snapshots ask of
    /// every registration): bit 0 a `when`, bit 1 a `describe`; zero once
    /// released.
    pub(super) live_kinds: std::sync::atomic::AtomicU8,
    pub(crate) chain: Chain,
    pub(super) queue: OnceLock<Arc<ActionQueue>>,
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
        self.live_kinds
            .store(0, std::sync::atomic::Ordering::Release);
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

    /// Whether the reference has a live note (`describe`, while mounted).
    pub(crate) fn has_describe(&self) -> bool {
        self.live_kinds.load(std::sync::atomic::Ordering::Acquire) & LIVE_DESCRIBE != 0
    }

    /// Whether it has a `when` predicate (availability from live state).
    pub(crate) fn has_when(&self) -> bool {
        self.live_kinds.load(std::sync::atomic::Ordering::Acquire) & LIVE_WHEN != 0
    }

    /// `when()` now; a panic counts as unavailable (`when-error`).
    pub(crate) fn availability(&self) -> Availability {
        let Some(live) = self.live() else {
            return Availability::Unavailable(Cow::Borrowed(NOT_AVAILABLE_NOW));
        };
        let Some(when) = &live.when else {
            return Availability::Available;
        };
        match crate::util::contain::catch(|| when()) {
            Ok(true) => Availability::Available,
            Ok(false) => Availability::Unavailable(live.reason()),
            Err(_) => {
                tracing::warn!(procedure = %self.procedure.id(), "`when` panicked; the procedure counts as unavailable");
                Availability::Unavailable(Cow::Borrowed(WHEN_ERROR))
            }
        }
    }

    /// The live contextual note; a panic or empty text gives none.
    pub(crate) fn contextual_note(&self) -> Option<String> {
        let live = self.live()?;
        let describe = live.describe.as_ref()?;
        let note = crate::util::contain::catch(|| describe()).ok()?;
        let note = note.trim();
        if note.is_empty() {
            return None;
        }
        Some(
            crate::util::display_text::truncate(
                note,
                agent_surface_rules::MAX_CAPABILITY_DESCRIPTION,
            )
            .into_owned(),
        )
    }

    /// The queue of this (procedure, registration) pair.
    pub(crate) fn queue(&self, make: impl FnOnce() -> ActionQueue) -> Arc<ActionQueue> {
        Arc::clone(self.queue.get_or_init(|| Arc::new(make())))
    }

    /// Whether `input` (a pending request's effective input) still holds
    /// what the locked bindings give now: evaluated contained, a binding
    /// that fails or panics counts as changed, and so does a released
    /// reference.
    pub(crate) fn still_bound(&self, input: &Value) -> bool {
        let Some(live) = self.live() else {
            return false;
        };
        live.fields
            .iter()
            .filter(|field| field.locked)
            .all(|field| evaluate(field).is_ok_and(|now| input.get(field.name) == Some(&now)))
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
                crate::error::ErrorCode::InvalidInput,
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
        // Released by an unmount racing this call: the component is gone,
        // as a view action of it would be told.
        let live = self
            .live()
            .ok_or_else(|| ErrorPayload::unmounted(crate::error::UnmountedPhase::MidFlight))?;
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
    match crate::util::contain::catch(|| (field.eval)()) {
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
        let fallback = Cow::Borrowed(NOT_AVAILABLE_NOW);
        match &self.reason {
            Reason::None => fallback,
            Reason::Static(reason) => reason.clone(),
            Reason::Dynamic(reason) => crate::util::contain::catch(|| reason())
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
        .with_retry(crate::error::Retry::AfterRefresh)
        .with_detail("reason", "binding-failed")
        .with_detail("field", field)
}
