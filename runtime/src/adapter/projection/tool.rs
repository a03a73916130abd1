//! One tool as a model sees it (name, description, input schema, live
//! state, target) and the catalog of tools built from one snapshot.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use rustc_hash::FxHashMap;
use serde::Serialize;
use serde_json::{Value, json};

use crate::contract::CheckedCapability;
use crate::ids::{CapabilityId, InstanceId};
use crate::snapshot::{ReferenceHandle, RegistrationHandle, Snapshot};
use crate::wire::{MAX_WIRE_NAME, WireNames};
use agent_surface_rules::{Confirmation, Effect, Kind};

/// The live state of a tool: volatile, rendered by hosts outside the cached
/// tool block.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolState {
    /// Whether a call would pass availability now.
    pub available: bool,
    /// Why not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unavailable_reason: Option<String>,
    /// Live contextual text (a procedure reference's `describe`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// What a tool's effect means for a client deciding how to present or
/// gate it: MCP's tool annotations and WebMCP's hints, derived from kind
/// and effect (never from what the author wrote in a description).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct ToolHints {
    /// Reads only: an observation, or a server query.
    pub read_only: bool,
    /// Its effect is destructive.
    pub destructive: bool,
    /// Repeating it changes nothing more (every read-only tool is).
    pub idempotent: bool,
    /// It reaches outside the application (an external side effect).
    pub open_world: bool,
}

/// What a direct-mode tool calls: the target as the catalog saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolTarget<'a> {
    /// The capability (or procedure) id.
    pub capability_id: &'a str,
    /// The instance (of the referencing component, for a procedure).
    pub instance_id: &'a str,
    /// The registration the catalog was built from.
    pub registration_id: &'a str,
    /// The surface version the catalog was built at.
    pub surface_version: u64,
    /// Observation, action or procedure.
    pub kind: Kind,
    /// The effect.
    pub effect: Effect,
    /// The confirmation posture.
    pub confirmation: Confirmation,
    /// Whether repeating the call changes nothing more.
    pub idempotent: bool,
}

/// One meta-mode verb.
pub(in crate::adapter) struct MetaTool {
    pub(in crate::adapter) name: &'static str,
    pub(in crate::adapter) description: &'static str,
    pub(in crate::adapter) schema: Value,
}

/// Where a tool's definition comes from. Definitions are borrowed from the
/// static contracts and the registrations, never copied.
#[derive(Clone)]
pub(in crate::adapter) enum Source {
    View {
        registration: RegistrationHandle,
        capability: &'static CheckedCapability,
        index: usize,
        qualified: bool,
    },
    Domain {
        registration: RegistrationHandle,
        reference: ReferenceHandle,
        name: Box<str>,
    },
    Meta(&'static MetaTool),
}

/// One tool as a model sees it, plus its live state and target.
#[derive(Clone)]
pub struct Tool {
    pub(in crate::adapter) source: Source,
    /// A shortened name, when the canonical one is too long.
    pub(in crate::adapter) renamed: Option<Box<str>>,
    pub(in crate::adapter) state: ToolState,
    pub(in crate::adapter) surface_version: u64,
}

impl fmt::Debug for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.name())
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

impl PartialEq for Tool {
    fn eq(&self, other: &Tool) -> bool {
        self.name() == other.name()
            && self.description() == other.description()
            && self.input_schema() == other.input_schema()
            && self.state == other.state
            && self.target() == other.target()
    }
}

impl Tool {
    /// The wire-safe name (at most 64 characters of `[A-Za-z0-9_-]`).
    pub fn name(&self) -> &str {
        if let Some(name) = &self.renamed {
            return name;
        }
        match &self.source {
            Source::View {
                registration,
                capability,
                index,
                qualified,
            } => match registration.qualified_tool_name(*index) {
                Some(name) if *qualified => name,
                _ => wire_name(capability),
            },
            Source::Domain { name, .. } => name,
            Source::Meta(meta) => meta.name,
        }
    }

    /// Plane, effect and confirmation, then the authored description.
    pub fn description(&self) -> &str {
        match &self.source {
            Source::View { capability, .. } => tool_description(capability),
            Source::Domain { reference, .. } => tool_description(reference.capability()),
            Source::Meta(meta) => meta.description,
        }
    }

    /// The JSON Schema of the tool's input (an object schema).
    pub fn input_schema(&self) -> &Value {
        match &self.source {
            Source::View { capability, .. } => match capability.kind() {
                Kind::Observation => empty_input_schema(),
                _ => capability
                    .input_schema()
                    .map_or(empty_input_schema(), |schema| &**schema.json()),
            },
            Source::Domain { reference, .. } => reference
                .capability()
                .input_schema()
                .map_or(empty_input_schema(), |schema| &**schema.json()),
            Source::Meta(meta) => &meta.schema,
        }
    }

    /// The live state.
    pub fn state(&self) -> &ToolState {
        &self.state
    }

    /// What the tool calls (`None` for meta-mode tools).
    pub fn target(&self) -> Option<ToolTarget<'_>> {
        let (registration, capability) = match &self.source {
            Source::View {
                registration,
                capability,
                ..
            } => (registration, *capability),
            Source::Domain {
                registration,
                reference,
                ..
            } => (registration, reference.capability()),
            Source::Meta(_) => return None,
        };
        Some(ToolTarget {
            capability_id: capability.id().as_str(),
            instance_id: registration.instance_id(),
            registration_id: registration.registration_id(),
            surface_version: self.surface_version,
            kind: capability.kind(),
            effect: capability.effect(),
            confirmation: capability.confirmation(),
            idempotent: capability.idempotent(),
        })
    }

    /// The hints a client is given about the tool (`None` for meta-mode
    /// tools, whose targets vary).
    pub fn hints(&self) -> Option<ToolHints> {
        let target = self.target()?;
        let read_only = target.kind == Kind::Observation || target.effect == Effect::ServerQuery;
        Some(ToolHints {
            read_only,
            destructive: target.effect == Effect::Destructive,
            idempotent: read_only || target.idempotent,
            open_world: target.effect == Effect::ExternalSideEffect,
        })
    }

    /// The definition a provider sees: `{name, description, inputSchema}`.
    pub fn definition(&self) -> Value {
        json!({
            "name": self.name(),
            "description": self.description(),
            "inputSchema": self.input_schema(),
        })
    }
}

/// The description a tool shows: plane, effect and confirmation posture,
/// then the authored text. Never live state. Rendered once per capability.
pub fn tool_description(capability: &CheckedCapability) -> &Arc<str> {
    capability.rendered_description().get_or_init(|| {
        let plane = capability.id().plane().as_str();
        let text = match capability.kind() {
            Kind::Observation => format!("[{plane}, read] {}", capability.description()),
            _ => format!(
                "[{plane}, {}, confirmation {}] {}",
                capability.effect().as_str(),
                capability.confirmation().as_str(),
                capability.description()
            ),
        };
        Arc::from(text)
    })
}

/// The canonical wire name of a capability's tool
/// (`view_devices__table__selectRows`), before any instance qualifier.
pub fn wire_name(capability: &CheckedCapability) -> &str {
    capability.wire_name()
}

/// One built catalog: the tools and a lazily built name index.
pub(in crate::adapter) struct Catalog {
    pub(in crate::adapter) tools: Arc<Vec<Tool>>,
    by_name: std::sync::OnceLock<FxHashMap<u64, usize>>,
    /// Built from a snapshot a discovery policy decided part of (see
    /// [`Snapshot::depends_on_consumer`]): it is its consumer's alone.
    pub(in crate::adapter) consumer_dependent: bool,
    /// Built from a snapshot neither live nor consumer-dependent: every
    /// build at the same surface version serves the same tools (see
    /// [`Snapshot::is_live`]).
    pub(in crate::adapter) fixed: bool,
}

fn name_hash(name: &str) -> u64 {
    let mut hasher = rustc_hash::FxHasher::default();
    name.hash(&mut hasher);
    hasher.finish()
}

impl Catalog {
    fn new(tools: Vec<Tool>, consumer_dependent: bool, live: bool) -> Catalog {
        Catalog {
            tools: Arc::new(tools),
            by_name: std::sync::OnceLock::new(),
            consumer_dependent,
            fixed: !consumer_dependent && !live,
        }
    }

    /// The tool named `name` (names are unique within a catalog).
    pub(in crate::adapter) fn find(&self, name: &str) -> Option<&Tool> {
        let index = self.by_name.get_or_init(|| {
            let mut map = FxHashMap::default();
            map.reserve(self.tools.len());
            for (index, tool) in self.tools.iter().enumerate() {
                map.insert(name_hash(tool.name()), index);
            }
            map
        });
        index
            .get(&name_hash(name))
            .and_then(|&i| self.tools.get(i))
            .filter(|tool| tool.name() == name)
            .or_else(|| self.tools.iter().find(|tool| tool.name() == name))
    }

    /// Definitions and live state, for change notifications.
    pub(in crate::adapter) fn fingerprint(&self) -> u64 {
        let mut hasher = rustc_hash::FxHasher::default();
        for tool in self.tools.iter() {
            tool.name().hash(&mut hasher);
            tool.description().hash(&mut hasher);
            tool.state.hash(&mut hasher);
            if let Some(target) = tool.target() {
                target.registration_id.hash(&mut hasher);
            }
        }
        hasher.finish()
    }
}

/// Builds the tools of one snapshot.
pub(in crate::adapter) fn build_catalog(snapshot: &Snapshot) -> Catalog {
    let components = snapshot.components();
    let procedures = snapshot.procedures();
    let version = snapshot.surface_version();
    let mut tools: Vec<Tool> = Vec::with_capacity(components.len() * 2 + procedures.len());
    // Several live instances of a type are qualified with `_at_<instance>`.
    // Components come sorted by (priority, type, instance), so instances of
    // a type form runs: count per run, not per component.
    let mut instances: FxHashMap<&str, usize> = FxHashMap::default();
    let mut run: Option<(&str, usize)> = None;
    for component in components {
        let own = component.component_type();
        match &mut run {
            Some((current, length)) if *current == own => *length += 1,
            _ => {
                if let Some((current, length)) = run.take() {
                    *instances.entry(current).or_default() += length;
                }
                run = Some((own, 1));
            }
        }
    }
    if let Some((current, length)) = run {
        *instances.entry(current).or_default() += length;
    }
    for component in components {
        let qualified = instances
            .get(component.component_type())
            .is_some_and(|count| *count > 1);
        let registration = component.handle();
        for (index, capability) in component.capabilities_indexed() {
            tools.push(Tool {
                source: Source::View {
                    registration: registration.clone(),
                    capability: capability.contract(),
                    index,
                    qualified,
                },
                renamed: None,
                state: ToolState {
                    available: capability.available(),
                    unavailable_reason: capability.unavailable_reason().map(str::to_owned),
                    note: None,
                },
                surface_version: version,
            });
        }
    }
    for procedure in procedures {
        let siblings: Vec<&crate::snapshot::ProcedureView> = procedures
            .iter()
            .filter(|other| other.procedure_id() == procedure.procedure_id())
            .collect();
        let base = wire_name(procedure.capability());
        let name = if siblings.len() < 2 {
            base.to_owned()
        } else if siblings
            .iter()
            .filter(|other| other.instance_id() == procedure.instance_id())
            .nth(1)
            .is_some()
        {
            // Two referencing components share the instance id: add the type.
            format!(
                "{base}_at_{}-{}",
                procedure.component_type().replace('.', "-"),
                procedure.instance_id()
            )
        } else {
            format!("{base}_at_{}", procedure.instance_id())
        };
        tools.push(Tool {
            source: Source::Domain {
                registration: procedure.registration_handle(),
                reference: procedure.reference_handle(),
                name: name.into_boxed_str(),
            },
            renamed: None,
            state: ToolState {
                available: procedure.available(),
                unavailable_reason: procedure.unavailable_reason().map(str::to_owned),
                note: procedure.contextual_note().map(str::to_owned),
            },
            surface_version: version,
        });
    }
    shorten_long_names(&mut tools);
    Catalog::new(tools, snapshot.depends_on_consumer(), snapshot.is_live())
}

/// Canonical names are unique by construction (the encoding is injective
/// and instances of one type are distinct). A name over 64 characters is
/// shortened with a deterministic hash; when any is, the whole catalog is
/// named by [`WireNames`] so shortened names cannot collide.
fn shorten_long_names(tools: &mut [Tool]) {
    if tools.iter().all(|tool| tool.name().len() <= MAX_WIRE_NAME) {
        return;
    }
    let entry = |tool: &Tool| -> Option<(CapabilityId, Option<InstanceId>)> {
        let target = tool.target()?;
        let id = CapabilityId::new(target.capability_id).ok()?;
        let qualifier = tool
            .name()
            .rsplit_once("_at_")
            .and_then(|(_, q)| InstanceId::new(q).ok());
        Some((id, qualifier))
    };
    let entries: Vec<(CapabilityId, Option<InstanceId>)> = tools.iter().filter_map(entry).collect();
    let names = WireNames::assign(entries);
    for tool in tools.iter_mut() {
        let Some((id, qualifier)) = entry(tool) else {
            continue;
        };
        if let Some(name) = names.name_of(&id, qualifier.as_ref())
            && name != tool.name()
        {
            tool.renamed = Some(Box::from(name));
        }
    }
}

/// The input schema of tools that take no input.
fn empty_input_schema() -> &'static Value {
    static EMPTY: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    EMPTY.get_or_init(crate::schema::empty_object_schema)
}
