//! The structural checks that turn an authored contract into a checked
//! one: ids, descriptions and metadata within limits, the defaults table
//! and the confirmation floor, schemas; and the capability a procedure
//! reference is seen as.

use std::sync::{Arc, OnceLock};

use agent_surface_rules::{
    self as rules, Audit, Confirmation, Defaults, Effect, Kind, MAX_CAPABILITY_DESCRIPTION,
    MAX_COMPONENT_DESCRIPTION, MAX_META_BYTES,
};
use serde_json::{Map, Value};

use super::{
    CapabilityContract, CheckedCapability, CheckedContract, CheckedSchema, ComponentContract,
    Concurrency, Internal, ParseFn, ReasonSource, TypedInput,
};
use crate::error::{DefinitionError, DefinitionErrorKind as K};
use crate::ids::{CapabilityId, CapabilityName, ComponentType, InstanceId};
use crate::schema::{self, Issue, SchemaLimits};

fn internal_of(
    json: Option<&'static str>,
    subject: &str,
) -> Result<Option<Internal>, DefinitionError> {
    Ok(parse_json_object(json, subject, "internal metadata", None)?.map(Internal))
}

fn parse_json_object(
    json: Option<&'static str>,
    subject: &str,
    what: &str,
    limit: Option<usize>,
) -> Result<Option<Arc<Map<String, Value>>>, DefinitionError> {
    let Some(json) = json else {
        return Ok(None);
    };
    if let Some(limit) = limit.filter(|limit| json.len() > *limit) {
        return Err(DefinitionError::new(
            K::LimitExceeded,
            subject,
            format!(
                "{what} is {} bytes serialized; the limit is {limit}",
                json.len()
            ),
        ));
    }
    match serde_json::from_str::<Value>(json) {
        Ok(Value::Object(map)) => Ok(Some(Arc::new(map))),
        _ => Err(DefinitionError::new(
            K::InvalidDefinition,
            subject,
            format!("{what} must be a JSON object"),
        )),
    }
}

/// The defaults of a kind and effect, or the plane violation the pair is.
pub(crate) fn defaults_for(
    kind: Kind,
    effect: Effect,
    subject: &str,
) -> Result<Defaults, DefinitionError> {
    Defaults::of(kind, effect).ok_or_else(|| {
        let allowed: Vec<&str> = Effect::allowed(kind).map(Effect::as_str).collect();
        let hint = if kind == Kind::Procedure {
            ""
        } else {
            ". Backend operations belong to the domain plane (procedure references)"
        };
        DefinitionError::new(
            K::PlaneViolation,
            subject,
            format!(
                "{}s cannot declare effect `{}`; allowed: {}{hint}",
                kind.as_str(),
                effect.as_str(),
                allowed.join(", ")
            ),
        )
    })
}

/// The confirmation posture after defaults, never below the effect's floor.
pub(crate) fn confirmation_for(
    declared: Option<Confirmation>,
    defaults: &Defaults,
    effect: Effect,
    subject: &str,
) -> Result<Confirmation, DefinitionError> {
    let confirmation = declared.unwrap_or(defaults.confirmation);
    if confirmation < defaults.confirmation_floor {
        return Err(DefinitionError::new(
            K::InvalidDefinition,
            subject,
            format!(
                "confirmation `{}` is below the floor `{}` for effect `{}`",
                confirmation.as_str(),
                defaults.confirmation_floor.as_str(),
                effect.as_str()
            ),
        ));
    }
    Ok(confirmation)
}

/// A description as written, or, when it is doc-comment text computed at
/// compile time, normalized like a doc comment.
fn doc_normalized(text: &'static str, doc_text: bool) -> std::borrow::Cow<'static, str> {
    if doc_text {
        std::borrow::Cow::Owned(rules::description_from_doc_lines(text.lines()))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

pub(crate) fn check_description(
    text: &str,
    limit: usize,
    subject: &str,
) -> Result<Arc<str>, DefinitionError> {
    if text.trim().is_empty() {
        return Err(DefinitionError::new(
            K::InvalidDefinition,
            subject,
            "the description is missing or empty; agents choose capabilities by their descriptions",
        ));
    }
    let len = rules::char_len(text);
    if len > limit {
        return Err(DefinitionError::new(
            K::LimitExceeded,
            subject,
            format!("the description is {len} characters; the limit is {limit}"),
        ));
    }
    Ok(Arc::from(text))
}

impl CheckedContract {
    pub(super) fn build(contract: &ComponentContract) -> Result<CheckedContract, DefinitionError> {
        let subject = contract.component_type;
        let invalid_id =
            |err: crate::ids::IdError| DefinitionError::new(K::InvalidId, subject, err.to_string());
        let component_type = ComponentType::new(contract.component_type).map_err(invalid_id)?;
        let description = check_description(
            &doc_normalized(contract.description, contract.doc_text),
            MAX_COMPONENT_DESCRIPTION,
            subject,
        )?;
        let default_instance = match contract.instance {
            Some(instance) => InstanceId::new(instance).map_err(invalid_id)?,
            None => InstanceId::default_instance(),
        };
        let parent = match contract.parent {
            Some((parent_type, instance)) => Some((
                ComponentType::new(parent_type).map_err(invalid_id)?,
                match instance {
                    Some(instance) => InstanceId::new(instance).map_err(invalid_id)?,
                    None => InstanceId::default_instance(),
                },
            )),
            None => None,
        };
        let origin = contract.origin.unwrap_or("first-party");
        if origin.trim().is_empty() {
            return Err(DefinitionError::new(
                K::InvalidDefinition,
                subject,
                "the origin label is empty",
            ));
        }
        let meta = parse_json_object(contract.meta, subject, "meta", Some(MAX_META_BYTES))?;
        let internal = internal_of(contract.internal, subject)?;

        let mut capabilities: Vec<CheckedCapability> =
            Vec::with_capacity(contract.capabilities.len());
        for (index, capability) in contract.capabilities.iter().enumerate() {
            let checked = CheckedCapability::build(index, capability, &component_type)?;
            if let Some(earlier) = capabilities.iter().find(|c| c.name == checked.name) {
                return Err(DefinitionError::new(
                    K::DuplicateCapability,
                    checked.id.as_str(),
                    format!(
                        "methods `{}` and `{}` both declare capability `{}`; rename one with `name = \"…\"`",
                        earlier.method, checked.method, checked.name
                    ),
                ));
            }
            capabilities.push(checked);
        }
        Ok(CheckedContract {
            component_type,
            description,
            default_instance,
            priority: contract.priority,
            origin: Arc::from(origin),
            enabled: contract.enabled,
            parent,
            meta,
            internal,
            policies: contract.policies,
            capabilities,
            gated: contract.gated,
            references: contract.references,
            source: contract.source,
        })
    }

    /// Checks descriptions and metadata against limits stricter than the
    /// specification's defaults.
    pub fn check_text_limits(
        &self,
        component_description: usize,
        capability_description: usize,
        meta_bytes: usize,
    ) -> Result<(), DefinitionError> {
        let over = |text: &str, limit: usize| rules::char_len(text) > limit;
        if over(&self.description, component_description) {
            return Err(DefinitionError::new(
                K::LimitExceeded,
                self.component_type.as_str(),
                format!(
                    "the description is longer than this registry's limit of {component_description} characters"
                ),
            ));
        }
        let meta_len = |meta: Option<&Arc<Map<String, Value>>>| {
            meta.and_then(|m| serde_json::to_string(&**m).ok())
                .map_or(0, |text| text.len())
        };
        if meta_len(self.meta.as_ref()) > meta_bytes {
            return Err(DefinitionError::new(
                K::LimitExceeded,
                self.component_type.as_str(),
                format!("meta is larger than this registry's limit of {meta_bytes} bytes"),
            ));
        }
        for capability in &self.capabilities {
            if over(&capability.description, capability_description) {
                return Err(DefinitionError::new(
                    K::LimitExceeded,
                    capability.id.as_str(),
                    format!(
                        "the description is longer than this registry's limit of {capability_description} characters"
                    ),
                ));
            }
            if meta_len(capability.meta.as_ref()) > meta_bytes {
                return Err(DefinitionError::new(
                    K::LimitExceeded,
                    capability.id.as_str(),
                    format!("meta is larger than this registry's limit of {meta_bytes} bytes"),
                ));
            }
        }
        Ok(())
    }

    /// Checks every schema against a registry's size and depth limits.
    pub fn check_limits(&self, limits: &SchemaLimits) -> Result<(), DefinitionError> {
        for capability in &self.capabilities {
            let schemas = capability
                .input_schema()
                .map(|s| (s, "input schema"))
                .into_iter()
                .chain(capability.output_schema().map(|s| (s, "output schema")));
            for (schema, which) in schemas {
                schema
                    .within(limits)
                    .map_err(|err| err.within(&format!("{} {which}", capability.id)))?;
            }
        }
        Ok(())
    }
}

impl CheckedCapability {
    pub(super) fn build(
        index: usize,
        contract: &CapabilityContract,
        component_type: &ComponentType,
    ) -> Result<CheckedCapability, DefinitionError> {
        let fallback_subject = format!("view:{component_type}.{}", contract.name);
        let name = CapabilityName::new(contract.name).map_err(|err| {
            DefinitionError::new(K::InvalidId, &fallback_subject, err.to_string())
        })?;
        let id = CapabilityId::view(component_type, &name);
        if id.as_str().len() > rules::ids::MAX_ID_LEN {
            return Err(DefinitionError::new(
                K::InvalidId,
                id.as_str(),
                format!(
                    "the capability id is {} characters; ids are at most {}",
                    id.as_str().len(),
                    rules::ids::MAX_ID_LEN
                ),
            ));
        }
        let subject = id.as_str();
        let description = check_description(
            &doc_normalized(contract.description, contract.doc_text),
            MAX_CAPABILITY_DESCRIPTION,
            subject,
        )?;
        let defaults = defaults_for(contract.kind, contract.effect, subject)?;
        let observation = contract.kind == Kind::Observation;
        let confirmation =
            confirmation_for(contract.confirmation, &defaults, contract.effect, subject)?;
        let input = match contract.input {
            Some((schema_fn, parse)) => {
                Some((CheckedSchema::object_input(schema_fn(), subject)?, parse))
            }
            None if observation => None,
            None => Some((
                CheckedSchema::from_raw(
                    schema::empty_object_schema(),
                    &format!("{subject} input schema"),
                )?,
                parse_empty_input as ParseFn,
            )),
        };
        let output = match contract.output.and_then(|schema_fn| schema_fn()) {
            Some(raw) => Some(CheckedSchema::from_raw(
                raw,
                &format!("{subject} output schema"),
            )?),
            None => None,
        };
        if observation && output.is_none() {
            return Err(DefinitionError::new(
                K::InvalidDefinition,
                subject,
                "an observation must return a value",
            ));
        }
        Ok(CheckedCapability {
            index,
            kind: contract.kind,
            name,
            method: contract.method,
            description,
            effect: contract.effect,
            idempotent: if observation {
                true
            } else {
                contract.idempotent.unwrap_or(defaults.idempotent)
            },
            reversible: contract.reversible.or(defaults.reversible),
            confirmation: if observation {
                Confirmation::Never
            } else {
                confirmation
            },
            audit: contract.audit.unwrap_or(defaults.audit),
            input,
            output,
            has_when: contract.has_when,
            reason: contract.reason,
            has_precondition: contract.has_precondition,
            timeout_ms: contract.timeout_ms,
            meta: parse_json_object(contract.meta, subject, "meta", Some(MAX_META_BYTES))?,
            internal: internal_of(contract.internal, subject)?,
            policies: contract.policies,
            concurrency: contract.concurrency,
            queue_depth: contract.queue_depth,
            tool_description: OnceLock::new(),
            wire_name: OnceLock::new(),
            id,
        })
    }
}

/// What a procedure contributes to the capability a reference is seen as.
pub(crate) struct ProcedureIdentity<'a> {
    pub(crate) id: &'a CapabilityId,
    pub(crate) description: &'a Arc<str>,
    pub(crate) effect: Effect,
    pub(crate) idempotent: bool,
    pub(crate) audit: Audit,
}

impl CheckedCapability {
    /// A procedure reference seen as a capability: the procedure's identity,
    /// effect and audit level with the reference's agent-facing input
    /// schema, effective confirmation posture, timeout and queue depth. Its
    /// output schema is the procedure's.
    pub(crate) fn procedure_reference(
        procedure: ProcedureIdentity<'_>,
        input: CheckedSchema,
        confirmation: Confirmation,
        timeout_ms: Option<u64>,
        queue_depth: Option<u32>,
    ) -> CheckedCapability {
        let reversible = Defaults::of(Kind::Procedure, procedure.effect).and_then(|d| d.reversible);
        CheckedCapability {
            index: 0,
            kind: Kind::Procedure,
            id: procedure.id.clone(),
            name: CapabilityName::of_procedure(procedure.id.path()),
            method: "",
            description: Arc::clone(procedure.description),
            effect: procedure.effect,
            idempotent: procedure.idempotent,
            reversible,
            confirmation,
            audit: procedure.audit,
            input: Some((input, parse_empty_input as ParseFn)),
            output: None,
            has_when: false,
            reason: ReasonSource::None,
            has_precondition: false,
            timeout_ms,
            meta: None,
            internal: None,
            policies: None,
            concurrency: Concurrency::Instance,
            queue_depth,
            tool_description: OnceLock::new(),
            wire_name: OnceLock::new(),
        }
    }
}

/// The input of an action that takes none: `{}` validated by its schema.
pub(crate) fn parse_empty_input(_value: &Value) -> Result<TypedInput, Issue> {
    Ok(Box::new(()))
}
