//! Contract identity: the stable content hashes of declarations,
//! capabilities and the catalog.
//!
//! A hash is the SHA-256 of the canonical JSON (see [`crate::canonical`]) of
//! an item's static form: ids, descriptions, schemas, effect, confirmation,
//! audit, idempotency, reversibility, concurrency, timeout, policies by
//! identity (see [`crate::policy::PolicyIdentity`]), availability rules
//! (`enabled`, a `when`, a precondition) and meta. Handlers, Rust paths, source files, instance ids, registration
//! ids, availability and bound values never enter it, so the same source
//! gives the same hash on any machine and from any checkout path.

use serde_json::{Map, Value, json};

use crate::canonical::Sha256Digest;
use crate::contract::{CheckedCapability, CheckedContract, Concurrency};
use crate::policy::PolicyRef;
use crate::procedure::CheckedProcedure;

fn hex(value: &Value) -> String {
    Sha256Digest::of(value).to_string()
}

fn policy_names(chain: &[PolicyRef]) -> Value {
    chain
        .iter()
        .map(|policy| crate::policy::identity(policy.as_ref()).into_json())
        .collect()
}

fn concurrency(concurrency: Concurrency) -> Value {
    match concurrency {
        Concurrency::Instance => json!("instance"),
        Concurrency::Capability => json!("capability"),
        Concurrency::Key(key) => json!({ "key": key }),
        Concurrency::Parallel(n) => json!({ "parallel": n }),
    }
}

fn meta(meta: Option<&std::sync::Arc<Map<String, Value>>>) -> Value {
    meta.map_or(Value::Null, |meta| Value::Object((**meta).clone()))
}

/// The hashed form of one capability.
fn capability_form(capability: &CheckedCapability) -> Value {
    json!({
        "capabilityId": capability.id().as_str(),
        "kind": capability.kind().as_str(),
        "description": &**capability.description(),
        "inputSchema": capability.input_schema().map(|s| (**s.json()).clone()),
        "outputSchema": capability.output_schema().map(|s| (**s.json()).clone()),
        "effect": capability.effect().as_str(),
        "confirmation": capability.confirmation().as_str(),
        "audit": capability.audit().as_str(),
        "idempotent": capability.idempotent(),
        "reversible": capability.reversible(),
        "concurrency": concurrency(capability.concurrency()),
        "queueDepth": capability.queue_depth(),
        "timeoutMs": capability.timeout_ms(),
        "policies": policy_names(&capability.policies()),
        "conditional": capability.has_when(),
        "internal": capability.internal().map(crate::internal_meta::Internal::digest),
        "precondition": capability.has_precondition(),
        "meta": meta(capability.meta()),
    })
}

/// The hashed form of one component declaration: its own static facts and
/// the hashes of its capabilities in authoring (dispatch) order.
fn declaration_form(contract: &CheckedContract) -> Value {
    let capabilities: Vec<Value> = contract
        .capabilities()
        .iter()
        .map(|capability| Value::from(capability.capability_hash()))
        .collect();
    json!({
        "declaration": "component",
        "componentType": contract.component_type().as_str(),
        "description": &**contract.description(),
        "origin": &**contract.origin(),
        "policies": policy_names(&contract.policies()),
        "enabled": contract.enabled(),
        "internal": contract.internal().map(crate::internal_meta::Internal::digest),
        "meta": meta(contract.meta()),
        "capabilities": capabilities,
        "gated": contract
            .gated()
            .iter()
            .map(|gated| gated.to_json(contract.component_type().as_str()))
            .collect::<Vec<Value>>(),
        "references": contract
            .references()
            .iter()
            .map(|reference| reference.to_json())
            .collect::<Vec<Value>>(),
    })
}

/// The hashed form of one procedure declaration.
fn procedure_form(procedure: &CheckedProcedure) -> Value {
    json!({
        "declaration": "procedure",
        "procedureId": procedure.id().as_str(),
        "description": &**procedure.description(),
        "inputSchema": (**procedure.input_schema().json()).clone(),
        "outputSchema": procedure.output_schema().map(|s| (**s.json()).clone()),
        "effect": procedure.effect().as_str(),
        "confirmation": procedure.confirmation().as_str(),
        "audit": procedure.audit().as_str(),
        "idempotent": procedure.idempotent(),
        "timeoutMs": procedure.timeout_ms(),
    })
}

impl CheckedCapability {
    /// The capability's content hash: 64 lowercase hex digits of the SHA-256
    /// of its canonical static form (never its handler, availability or
    /// bound values).
    pub fn capability_hash(&self) -> String {
        hex(&capability_form(self))
    }
}

impl CheckedContract {
    /// The declaration's content hash: 64 lowercase hex digits, the same for
    /// the same source on any machine and checkout path. Instance ids,
    /// registration ids, Rust paths and handlers never enter it.
    pub fn declaration_hash(&self) -> String {
        hex(&declaration_form(self))
    }
}

impl CheckedProcedure {
    /// The procedure declaration's content hash (64 lowercase hex digits).
    pub fn declaration_hash(&self) -> String {
        hex(&procedure_form(self))
    }
}

/// The manifest hash of a set of declaration hashes: the SHA-256 of the
/// canonical JSON array of the hashes, sorted.
pub(crate) fn manifest_of(mut hashes: Vec<String>) -> String {
    hashes.sort_unstable();
    hex(&Value::from(hashes))
}
