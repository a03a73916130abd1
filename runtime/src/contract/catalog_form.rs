//! The catalog form of checked contracts: everything an agent could be
//! shown plus authoring facts for reviewers, never internal metadata.

use serde::ser::{SerializeMap, SerializeStruct};
use serde::{Serialize, Serializer};

use agent_surface_rules::Kind;

use super::{CheckedCapability, CheckedContract, ReasonSource};
use crate::ids::{ComponentType, InstanceId};
use crate::policy::PolicyRef;

fn policy_names(chain: &[PolicyRef]) -> Vec<serde_json::Value> {
    chain
        .iter()
        .map(|policy| crate::policy::identity(policy.as_ref()).into_json())
        .collect()
}

/// The catalog form: everything an agent could be shown plus authoring facts
/// for reviewers. Internal metadata is never written.
impl Serialize for CheckedContract {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        struct Parent<'a>(&'a ComponentType, &'a InstanceId);
        impl Serialize for Parent<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut map = serializer.serialize_map(Some(2))?;
                map.serialize_entry("type", self.0)?;
                map.serialize_entry("instanceId", self.1)?;
                map.end()
            }
        }
        struct Capabilities<'a>(&'a [CheckedCapability], Kind);
        impl Serialize for Capabilities<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_seq(self.0.iter().filter(|c| c.kind == self.1))
            }
        }
        let mut out = serializer.serialize_struct("Component", 15)?;
        out.serialize_field("type", &self.component_type)?;
        out.serialize_field("description", &*self.description)?;
        out.serialize_field("defaultInstanceId", &self.default_instance)?;
        out.serialize_field("priority", &self.priority)?;
        out.serialize_field("origin", &*self.origin)?;
        out.serialize_field("enabled", &self.enabled)?;
        if let Some((parent_type, instance)) = &self.parent {
            out.serialize_field("parent", &Parent(parent_type, instance))?;
        }
        if let Some(meta) = &self.meta {
            out.serialize_field("meta", &**meta)?;
        }
        if self.policies.is_some() {
            out.serialize_field("policies", &policy_names(&self.policies()))?;
        }
        if let Some(internal) = &self.internal {
            out.serialize_field("internalDigest", &internal.digest())?;
        }
        out.serialize_field(
            "rustType",
            &format!("{}::{}", self.source.module, self.source.rust_type),
        )?;
        out.serialize_field(
            "observations",
            &Capabilities(&self.capabilities, Kind::Observation),
        )?;
        out.serialize_field("actions", &Capabilities(&self.capabilities, Kind::Action))?;
        if !self.gated.is_empty() {
            let gated: Vec<serde_json::Value> = self
                .gated
                .iter()
                .map(|gated| gated.to_json(self.component_type.as_str()))
                .collect();
            out.serialize_field("gated", &gated)?;
        }
        if !self.references.is_empty() {
            let references: Vec<serde_json::Value> =
                self.references.iter().map(|r| r.to_json()).collect();
            out.serialize_field("references", &references)?;
        }
        out.end()
    }
}

impl Serialize for CheckedCapability {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let observation = self.kind == Kind::Observation;
        let mut out = serializer.serialize_map(None)?;
        out.serialize_entry("capabilityId", &self.id)?;
        out.serialize_entry("name", &self.name)?;
        out.serialize_entry("description", &*self.description)?;
        if let Some(input) = self.input_schema().filter(|_| !observation) {
            out.serialize_entry("inputSchema", &**input.json())?;
        }
        if let Some(output) = self.output_schema() {
            out.serialize_entry("outputSchema", &**output.json())?;
        }
        if !observation {
            out.serialize_entry("effect", &self.effect)?;
            out.serialize_entry("idempotent", &self.idempotent)?;
            out.serialize_entry("reversible", &self.reversible.unwrap_or(true))?;
            out.serialize_entry("confirmation", &self.confirmation)?;
        }
        out.serialize_entry("audit", &self.audit)?;
        if let Some(meta) = &self.meta {
            out.serialize_entry("meta", &**meta)?;
        }
        if self.policies.is_some() {
            out.serialize_entry("policies", &policy_names(&self.policies()))?;
        }
        if let Some(internal) = &self.internal {
            out.serialize_entry("internalDigest", &internal.digest())?;
        }
        match self.reason {
            ReasonSource::Static(reason) => out.serialize_entry("unavailableReason", reason)?,
            ReasonSource::Dynamic => {
                out.serialize_entry("unavailableReason", "(computed from live state)")?
            }
            ReasonSource::None => {}
        }
        if self.has_when {
            out.serialize_entry("conditional", &true)?;
        }
        if self.has_precondition {
            out.serialize_entry("precondition", &true)?;
        }
        if let Some(ms) = self.timeout_ms {
            out.serialize_entry("timeoutMs", &ms)?;
        }
        out.serialize_entry("method", self.method)?;
        out.end()
    }
}
