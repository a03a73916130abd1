//! Checked contracts: a component contract and its capabilities after
//! every structural check, with defaults applied and schemas compiled.

use std::fmt;
use std::sync::{Arc, OnceLock};

use agent_surface_rules::{Audit, Confirmation, Effect, Kind};
use serde_json::{Map, Value};

use super::reach::{DeclaredReference, GatedCapability};
use super::vocabulary::{Concurrency, ParseFn, PoliciesFn, ReasonSource, Source, TypedInput};
use crate::error::{DefinitionError, DefinitionErrorKind as K};
use crate::ids::{CapabilityId, CapabilityName, ComponentType, InstanceId};
use crate::internal_meta::Internal;
use crate::policy::PolicyRef;
use crate::schema::{self, CompiledSchema, Issue, SchemaLimits};

/// A schema ready for use: the agent-facing JSON, its compiled validator, and
/// its measured size and depth (compared with each registry's limits).
pub struct CheckedSchema {
    pub(super) json: Arc<Value>,
    pub(super) validator: CompiledSchema,
    pub(super) bytes: usize,
    pub(super) depth: usize,
}

impl CheckedSchema {
    pub(crate) fn from_raw(raw: Value, subject: &str) -> Result<CheckedSchema, DefinitionError> {
        let unsupported = |err: schema::SchemaError| {
            DefinitionError::new(K::UnsupportedSchema, subject, err.to_string())
        };
        let json = schema::normalize(raw).map_err(unsupported)?;
        let unlimited = SchemaLimits {
            max_bytes: usize::MAX,
            max_depth: usize::MAX,
        };
        schema::check_subset(&json, &unlimited).map_err(unsupported)?;
        let validator = schema::compile(&json).map_err(unsupported)?;
        let (bytes, depth) = schema::measure(&json);
        let checked = CheckedSchema {
            json: Arc::new(json),
            validator,
            bytes,
            depth,
        };
        checked
            .within(&SchemaLimits::default())
            .map_err(|err| err.within(subject))?;
        Ok(checked)
    }

    /// The input schema of `subject`, which must be an object schema.
    pub(crate) fn object_input(
        raw: Value,
        subject: &str,
    ) -> Result<CheckedSchema, DefinitionError> {
        let at = format!("{subject} input schema");
        let schema = CheckedSchema::from_raw(raw, &at)?;
        if schema.json.get("type") != Some(&Value::from("object")) {
            return Err(DefinitionError::new(
                K::UnsupportedSchema,
                at,
                "inputs must be JSON objects (`type: object` at the root); use a struct with named fields",
            ));
        }
        Ok(schema)
    }

    /// The agent-facing schema.
    pub fn json(&self) -> &Arc<Value> {
        &self.json
    }

    /// The compiled validator.
    pub fn validator(&self) -> &CompiledSchema {
        &self.validator
    }

    /// Checks the schema against a registry's size and depth limits.
    pub fn within(&self, limits: &SchemaLimits) -> Result<(), DefinitionError> {
        if self.bytes > limits.max_bytes {
            return Err(DefinitionError::new(
                K::LimitExceeded,
                "",
                format!(
                    "the schema is {} bytes serialized; the limit is {} bytes",
                    self.bytes, limits.max_bytes
                ),
            ));
        }
        if self.depth > limits.max_depth {
            return Err(DefinitionError::new(
                K::UnsupportedSchema,
                "",
                format!(
                    "the schema nests {} levels deep; the limit is {}",
                    self.depth, limits.max_depth
                ),
            ));
        }
        Ok(())
    }
}

impl fmt::Debug for CheckedSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("CheckedSchema").field(&self.json).finish()
    }
}

/// One capability of a checked contract, with every default applied.
#[derive(Debug)]
pub struct CheckedCapability {
    pub(super) index: usize,
    pub(super) kind: Kind,
    pub(super) id: CapabilityId,
    pub(super) name: CapabilityName,
    pub(super) method: &'static str,
    pub(super) description: Arc<str>,
    pub(super) effect: Effect,
    pub(super) idempotent: bool,
    pub(super) reversible: Option<bool>,
    pub(super) confirmation: Confirmation,
    pub(super) audit: Audit,
    pub(super) input: Option<(CheckedSchema, ParseFn)>,
    pub(super) output: Option<CheckedSchema>,
    pub(super) has_when: bool,
    pub(super) reason: ReasonSource,
    pub(super) has_precondition: bool,
    pub(super) timeout_ms: Option<u64>,
    pub(super) meta: Option<Arc<Map<String, Value>>>,
    pub(super) internal: Option<Internal>,
    pub(super) policies: Option<PoliciesFn>,
    pub(super) concurrency: Concurrency,
    pub(super) queue_depth: Option<u32>,
    /// An adapter's rendered description, built on first use.
    pub(super) tool_description: OnceLock<Arc<str>>,
    /// The canonical wire name, built on first use.
    pub(super) wire_name: OnceLock<Box<str>>,
}

impl CheckedCapability {
    /// The canonical wire name (`view_devices__table__selectRows`), the
    /// id's encoding, built on first use (tool names start from it).
    pub(crate) fn wire_name(&self) -> &str {
        self.wire_name
            .get_or_init(|| crate::wire::encode(&self.id).into_boxed_str())
    }

    /// Where an adapter keeps the description it renders for this
    /// capability (built on first use, borrowed by every tool list).
    pub(crate) fn rendered_description(&self) -> &OnceLock<Arc<str>> {
        &self.tool_description
    }

    /// Position in the component's capability list (the dispatch index).
    pub fn index(&self) -> usize {
        self.index
    }
    /// Observation or action.
    pub fn kind(&self) -> Kind {
        self.kind
    }
    /// `view:<type>.<name>`.
    pub fn id(&self) -> &CapabilityId {
        &self.id
    }
    /// The capability name.
    pub fn name(&self) -> &CapabilityName {
        &self.name
    }
    /// The Rust method that handles it.
    pub fn method(&self) -> &'static str {
        self.method
    }
    /// The agent-facing description.
    pub fn description(&self) -> &Arc<str> {
        &self.description
    }
    /// The declared effect (`read` for observations).
    pub fn effect(&self) -> Effect {
        self.effect
    }
    /// Declared or defaulted idempotency (always `true` for observations).
    pub fn idempotent(&self) -> bool {
        self.idempotent
    }
    /// Declared or defaulted reversibility (`None` for observations).
    pub fn reversible(&self) -> Option<bool> {
        self.reversible
    }
    /// Declared or defaulted confirmation posture.
    pub fn confirmation(&self) -> Confirmation {
        self.confirmation
    }
    /// Declared or defaulted audit level.
    pub fn audit(&self) -> Audit {
        self.audit
    }
    /// The input schema (actions always have one; `{}` inputs use an empty object schema).
    pub fn input_schema(&self) -> Option<&CheckedSchema> {
        self.input.as_ref().map(|(schema, _)| schema)
    }
    /// Deserializes a validated input into the handler's type.
    pub fn parse_input(&self, value: &Value) -> Option<Result<TypedInput, Issue>> {
        self.input.as_ref().map(|(_, parse)| parse(value))
    }
    /// The output schema (observations always have one; actions returning `()` do not).
    pub fn output_schema(&self) -> Option<&CheckedSchema> {
        self.output.as_ref()
    }
    /// Whether a `when` method gates availability.
    pub fn has_when(&self) -> bool {
        self.has_when
    }
    /// How the unavailable reason is produced.
    pub fn reason(&self) -> ReasonSource {
        self.reason
    }
    /// Whether a precondition method runs before execution.
    pub fn has_precondition(&self) -> bool {
        self.has_precondition
    }
    /// The declared timeout, if any (else the registry's default for the kind).
    pub fn timeout_ms(&self) -> Option<u64> {
        self.timeout_ms
    }
    /// Agent-visible metadata.
    pub fn meta(&self) -> Option<&Arc<Map<String, Value>>> {
        self.meta.as_ref()
    }
    /// Internal metadata for policies and audit sinks; never serialized.
    pub fn internal(&self) -> Option<&Internal> {
        self.internal.as_ref()
    }
    /// A fresh instance of the capability's own policy chain.
    pub fn policies(&self) -> Vec<PolicyRef> {
        self.policies
            .map(crate::policy::build_declared)
            .unwrap_or_default()
    }
    /// The concurrency group (actions).
    pub fn concurrency(&self) -> Concurrency {
        self.concurrency
    }
    /// The declared queue depth, if any (else the registry's `action_queue_depth`).
    pub fn queue_depth(&self) -> Option<u32> {
        self.queue_depth
    }
}

/// A contract that passed every structural check, with its schemas compiled.
#[derive(Debug)]
pub struct CheckedContract {
    pub(super) component_type: ComponentType,
    pub(super) description: Arc<str>,
    pub(super) default_instance: InstanceId,
    pub(super) priority: i32,
    pub(super) origin: Arc<str>,
    pub(super) enabled: bool,
    pub(super) parent: Option<(ComponentType, InstanceId)>,
    pub(super) meta: Option<Arc<Map<String, Value>>>,
    pub(super) internal: Option<Internal>,
    pub(super) policies: Option<PoliciesFn>,
    pub(super) capabilities: Vec<CheckedCapability>,
    pub(super) gated: &'static [GatedCapability],
    pub(super) references: &'static [DeclaredReference],
    pub(super) source: Source,
}

impl CheckedContract {
    /// The component type.
    pub fn component_type(&self) -> &ComponentType {
        &self.component_type
    }
    /// The agent-facing description.
    pub fn description(&self) -> &Arc<str> {
        &self.description
    }
    /// The instance id used when a mount names none.
    pub fn default_instance(&self) -> &InstanceId {
        &self.default_instance
    }
    /// Snapshot ordering and budget priority (higher first).
    pub fn priority(&self) -> i32 {
        self.priority
    }
    /// The registrant trust label (`first-party` by default).
    pub fn origin(&self) -> &Arc<str> {
        &self.origin
    }
    /// Whether the component starts enabled.
    pub fn enabled(&self) -> bool {
        self.enabled
    }
    /// The containment link, if declared.
    pub fn parent(&self) -> Option<(&ComponentType, &InstanceId)> {
        self.parent.as_ref().map(|(t, i)| (t, i))
    }
    /// Agent-visible metadata.
    pub fn meta(&self) -> Option<&Arc<Map<String, Value>>> {
        self.meta.as_ref()
    }
    /// Internal metadata for policies and audit sinks; never serialized.
    pub fn internal(&self) -> Option<&Internal> {
        self.internal.as_ref()
    }
    /// Whether the component or any capability declares policies.
    pub fn has_own_policies(&self) -> bool {
        self.policies.is_some() || self.capabilities.iter().any(|c| c.policies.is_some())
    }
    /// A fresh instance of the component-level policy chain.
    pub fn policies(&self) -> Vec<PolicyRef> {
        self.policies
            .map(crate::policy::build_declared)
            .unwrap_or_default()
    }
    /// Every capability, in authoring order (the dispatch order).
    pub fn capabilities(&self) -> &[CheckedCapability] {
        &self.capabilities
    }
    /// The observations.
    pub fn observations(&self) -> impl Iterator<Item = &CheckedCapability> {
        self.capabilities
            .iter()
            .filter(|c| c.kind == Kind::Observation)
    }
    /// The actions.
    pub fn actions(&self) -> impl Iterator<Item = &CheckedCapability> {
        self.capabilities.iter().filter(|c| c.kind == Kind::Action)
    }
    /// The capabilities declared under `#[cfg]`, whether or not this build
    /// includes them.
    pub fn gated(&self) -> &'static [GatedCapability] {
        self.gated
    }
    /// The procedures this component may reference, with the least gating
    /// each mount gives them.
    pub fn references(&self) -> &'static [DeclaredReference] {
        self.references
    }
    /// The declared reference to `procedure_id`.
    pub fn reference(&self, procedure_id: &str) -> Option<&'static DeclaredReference> {
        self.references
            .iter()
            .find(|reference| reference.procedure_id() == procedure_id)
    }
    /// A capability by name.
    pub fn capability(&self, name: &str) -> Option<&CheckedCapability> {
        self.capabilities.iter().find(|c| c.name.as_str() == name)
    }
    /// Where the component was authored.
    pub fn source(&self) -> &Source {
        &self.source
    }
}
