//! Procedure references: the typed builder a component mounts with, and the
//! per-mount reference the registry keeps (bindings, availability, the
//! agent-facing schema).

mod declared;
mod reference;

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use super::{CheckedProcedure, Field, Procedure, ProcedureContract};
use crate::contract::{CheckedCapability, CheckedSchema};
use crate::error::{DefinitionError, DefinitionErrorKind as K};
use crate::policy::PolicyRef;
use crate::policy::chain::Chain;
use agent_surface_rules::Confirmation;

pub use reference::BoundFieldView;
pub(crate) use reference::Reference;
use reference::{FieldInfo, Live, surgery};

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
///     #[schemars(length(max = 64))]
///     pub report_id: String,
///     /// The file format.
///     #[schemars(length(max = 16))]
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
            .map(crate::util::millis::millis)
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
            live_kinds: std::sync::atomic::AtomicU8::new(
                if self.when.is_some() {
                    reference::LIVE_WHEN
                } else {
                    0
                } | if self.describe.is_some() {
                    reference::LIVE_DESCRIBE
                } else {
                    0
                },
            ),
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
