//! The specification's JSON shape of a snapshot and of its views.

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

use super::{CapabilityView, ComponentView, ProcedureView, Snapshot};
use crate::clock::rfc3339;
use agent_surface_rules::Kind;

impl Serialize for ProcedureView {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("procedureId", self.procedure_id())?;
        map.serialize_entry("description", self.description())?;
        if let Some(note) = &self.note {
            map.serialize_entry("contextualNote", note)?;
        }
        map.serialize_entry("inputSchema", self.input_schema())?;
        if let Some(output) = self.output_schema() {
            map.serialize_entry("outputSchema", output)?;
        }
        map.serialize_entry("effect", &self.effect())?;
        map.serialize_entry("confirmation", &self.confirmation())?;
        map.serialize_entry("available", &self.available())?;
        if let Some(reason) = &self.reason {
            map.serialize_entry("unavailableReason", &**reason)?;
        }
        map.serialize_entry("boundFields", &self.bound_fields())?;
        map.serialize_entry("registrationId", &**self.registration.id())?;
        map.serialize_entry(
            "context",
            &serde_json::json!({"type": self.component_type(), "instanceId": self.instance_id()}),
        )?;
        map.end()
    }
}

impl Serialize for Snapshot {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("surfaceId", &*self.surface_id)?;
        map.serialize_entry(
            "surfaceVersion",
            &crate::util::decimal::DecimalString(self.surface_version),
        )?;
        map.serialize_entry("capturedAt", &rfc3339(self.captured_at_ms))?;
        if let Some(route) = &self.route {
            map.serialize_entry("route", route)?;
        }
        map.serialize_entry("components", &self.components)?;
        map.serialize_entry("procedures", &self.procedures)?;
        if let Some(dropped) = self.dropped {
            map.serialize_entry(
                "truncated",
                &serde_json::json!({"droppedComponents": dropped}),
            )?;
        }
        map.end()
    }
}

struct Capabilities<'a>(&'a ComponentView, Kind);

impl Serialize for Capabilities<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        for capability in self.0.capabilities().filter(|c| c.kind() == self.1) {
            seq.serialize_element(&capability)?;
        }
        seq.end()
    }
}

impl Serialize for ComponentView {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let contract = self.registration.contract();
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("type", contract.component_type())?;
        map.serialize_entry("instanceId", &self.registration.instance())?;
        map.serialize_entry("registrationId", &**self.registration.id())?;
        map.serialize_entry("description", &**contract.description())?;
        if let Some((parent_type, instance)) = contract.parent() {
            map.serialize_entry(
                "parent",
                &serde_json::json!({"type": parent_type.as_str(), "instanceId": instance.as_str()}),
            )?;
        }
        if let Some(meta) = contract.meta() {
            map.serialize_entry("meta", &**meta)?;
        }
        map.serialize_entry("observations", &Capabilities(self, Kind::Observation))?;
        map.serialize_entry("actions", &Capabilities(self, Kind::Action))?;
        map.end()
    }
}

impl Serialize for CapabilityView<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let capability = self.capability;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("capabilityId", capability.id())?;
        map.serialize_entry("name", capability.name())?;
        map.serialize_entry("description", &**capability.description())?;
        if let Some(input) = self.input_schema() {
            map.serialize_entry("inputSchema", input)?;
        }
        if let Some(output) = self.output_schema() {
            map.serialize_entry("outputSchema", output)?;
        }
        if capability.kind() != Kind::Observation {
            map.serialize_entry("effect", &capability.effect())?;
            map.serialize_entry("idempotent", &capability.idempotent())?;
            map.serialize_entry("reversible", &capability.reversible().unwrap_or(true))?;
            map.serialize_entry("confirmation", &capability.confirmation())?;
        }
        map.serialize_entry("available", &self.available())?;
        if let Some(reason) = self.unavailable_reason() {
            map.serialize_entry("unavailableReason", reason)?;
        }
        if let Some(meta) = capability.meta() {
            map.serialize_entry("meta", &**meta)?;
        }
        map.end()
    }
}
