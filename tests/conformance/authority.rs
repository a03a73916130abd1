//! Contract identity and the closed authority: AS-CONTRACT-001..004,
//! AS-AUTHORITY-001..004, AS-EXPOSURE-001.
//!
//! Several tests build contracts by hand through hidden items on purpose:
//! that is the forgery the authority must refuse (and outside the public,
//! documented API).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_surface::canonical::Sha256Digest;
use agent_surface::catalog::Catalog;
use agent_surface::macro_support::{
    ActionContext, ActionError, CapabilityContract, ComponentContract, HandlerFuture, Source,
    TypedInput,
};
use agent_surface::policy::{Decision, Policy, PolicyContext};
use agent_surface::prelude::*;
use agent_surface::registry::{MountError, Registry};
use agent_surface::toolset::{Toolset, Topology};
use serde_json::json;

use crate::fixtures::{Probe, consumer, registry};

static SWITCHED: AtomicUsize = AtomicUsize::new(0);

/// A lamp.
pub(crate) struct Lamp;

/// A lamp.
#[agent_component(type = "authority.lamp")]
impl Lamp {
    /// Turns the lamp on.
    #[action(effect = "local-state")]
    fn switch_on(&self) {
        SWITCHED.fetch_add(1, Ordering::SeqCst);
    }
}

const SOURCE: Source = Source::new("forged", "Forged", "forged.rs", 1);

/// A hand-written component over a hand-built contract (hidden items).
macro_rules! forged {
    ($name:ident, $type:literal, $description:literal, $action:literal, $effect:expr) => {
        pub(crate) struct $name;
        impl $name {
            const CAPABILITIES: [CapabilityContract; 1] = [CapabilityContract::action(
                "switchOn",
                "switch_on",
                $action,
                $effect,
            )];
        }
        static CAPABILITIES: [CapabilityContract; 1] = $name::CAPABILITIES;
        static CONTRACT: ComponentContract =
            ComponentContract::new($type, $description, &CAPABILITIES, SOURCE);
        impl Component for $name {
            fn contract() -> &'static ComponentContract {
                &CONTRACT
            }
            fn __contract(&self) -> &'static ComponentContract {
                &CONTRACT
            }
            fn __invoke(
                self: Arc<Self>,
                _capability: usize,
                _input: Option<TypedInput>,
                _ctx: ActionContext,
            ) -> HandlerFuture {
                SWITCHED.fetch_add(1_000, Ordering::SeqCst);
                agent_surface::macro_support::failed(ActionError::failed("forged"))
            }
        }
    };
}

mod rogue {
    use super::*;
    forged!(
        Rogue,
        "authority.rogue",
        "A rogue.",
        "Does anything.",
        Effect::LocalState
    );
    pub(crate) fn component() -> Arc<Rogue> {
        Arc::new(Rogue)
    }
    pub(crate) fn hash() -> String {
        Rogue::contract().checked().unwrap().declaration_hash()
    }
}

mod copy {
    use super::*;
    // Every public fact of `Lamp`, copied.
    forged!(
        LampCopy,
        "authority.lamp",
        "A lamp.",
        "Turns the lamp on.",
        Effect::LocalState
    );
    pub(crate) fn component() -> Arc<LampCopy> {
        Arc::new(LampCopy)
    }
    pub(crate) fn hash() -> String {
        LampCopy::contract().checked().unwrap().declaration_hash()
    }
}

mod widened {
    use super::*;
    // `Lamp`'s type with a different effect and description.
    forged!(
        LampWidened,
        "authority.lamp",
        "A lamp.",
        "Turns the lamp on, and sends the neighbours an email.",
        Effect::Navigation
    );
    pub(crate) fn component() -> Arc<LampWidened> {
        Arc::new(LampWidened)
    }
}

fn lamp_hash() -> String {
    Lamp::contract().checked().unwrap().declaration_hash()
}

fn is_hex64(hash: &str) -> bool {
    hash.len() == 64 && hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn toolset(registry: &Registry) -> Toolset {
    Toolset::builder(registry)
        .consumer(consumer("agent"))
        .topology(Topology::Remote)
        .build()
        .unwrap()
}

#[test]
fn as_contract_001_only_macro_contracts_linked_into_the_catalog_mount() {
    let registry = registry();
    // A macro contract mounts.
    let _mounted1 = registry.mount(Arc::new(Lamp)).unwrap();
    // A hand-written `Component` over a hand-built contract does not.
    let err = registry.mount(rogue::component()).unwrap_err();
    assert_eq!(
        err,
        MountError::NotInCatalog {
            component_type: "authority.rogue".to_owned(),
            declaration_hash: rogue::hash(),
        }
    );
    assert!(
        err.to_string().contains("not in the binary's catalog"),
        "{err}"
    );
    assert_eq!(
        registry
            .snapshot(&SnapshotOptions::default())
            .components()
            .len(),
        1
    );
}

#[test]
fn as_contract_002_declaration_capability_and_manifest_hashes_are_stable_content_hashes() {
    let catalog = Catalog::load_valid().0;
    let lamp = catalog.get("authority.lamp").unwrap();
    let hash = lamp.declaration_hash();
    assert!(is_hex64(&hash), "{hash}");
    // Stable: the same value every time, from the same static form.
    assert_eq!(hash, lamp_hash());
    assert_eq!(hash, lamp.declaration_hash());
    let capability = lamp.capability("switchOn").unwrap();
    assert!(is_hex64(&capability.capability_hash()));
    // The hashed form names no Rust path, file or line: a hand-built copy
    // with another module, type name and file has the same declaration hash.
    assert_eq!(copy::hash(), hash);
    // Different content, different hash.
    assert_ne!(rogue::hash(), hash);
    assert_ne!(
        capability.capability_hash(),
        catalog
            .get("test.probe")
            .unwrap()
            .capabilities()
            .first()
            .unwrap()
            .capability_hash()
    );
    // The manifest hash is the SHA-256 of the sorted declaration hashes.
    let mut hashes: Vec<String> = catalog
        .components()
        .iter()
        .map(|c| c.declaration_hash())
        .chain(catalog.procedures().iter().map(|p| p.declaration_hash()))
        .collect();
    hashes.sort_unstable();
    let manifest = catalog.manifest_hash();
    assert!(is_hex64(&manifest));
    assert_eq!(manifest, Sha256Digest::of(&json!(hashes)).to_string());
    // …and the registry mounts against exactly this manifest.
    assert_eq!(registry().manifest_hash(), manifest);
    // Instances are runtime facts, not identity: two instances mount the
    // same declaration.
    let registry = registry();
    let _mounted2 = registry
        .mounting(Arc::new(Lamp))
        .instance("a")
        .mount()
        .unwrap();
    let _mounted3 = registry
        .mounting(Arc::new(Lamp))
        .instance("b")
        .mount()
        .unwrap();
    assert_eq!(lamp_hash(), hash);
}

#[test]
fn as_contract_003_unknown_capabilities_cannot_widen_a_built_registry() {
    let registry = registry();
    let _mounted4 = registry.mount(Arc::new(Lamp)).unwrap();
    let tools = toolset(&registry);
    let before: Vec<String> = tools.tools().iter().map(|t| t.name().to_owned()).collect();
    let version = registry.version();
    for err in [
        registry.mount(rogue::component()).unwrap_err(),
        registry
            .mounting(rogue::component())
            .instance("other")
            .mount()
            .unwrap_err(),
    ] {
        assert!(matches!(err, MountError::NotInCatalog { .. }), "{err:?}");
    }
    assert_eq!(registry.version(), version);
    tools.refresh();
    let after: Vec<String> = tools.tools().iter().map(|t| t.name().to_owned()).collect();
    assert_eq!(before, after);
    assert!(
        tools
            .tool_for("view:authority.rogue.switchOn", None)
            .is_none()
    );
}

#[test]
fn as_contract_004_stale_manifest_and_mismatched_contract_hashes_fail_closed() {
    let manifest = registry().manifest_hash();
    let stale = "0".repeat(64);
    let pinned = Registry::builder()
        .environment(Environment::Test)
        .expect_manifest(stale.clone())
        .build();
    assert_eq!(
        pinned.mount(Arc::new(Lamp)).unwrap_err(),
        MountError::StaleManifest {
            expected: stale,
            actual: manifest.to_owned(),
        }
    );
    assert_eq!(pinned.version(), 0);
    let current = Registry::builder()
        .environment(Environment::Test)
        .expect_manifest(manifest)
        .build();
    let _mounted5 = current.mount(Arc::new(Lamp)).unwrap();
    // A contract for a catalogued type whose hash differs fails too.
    let err = current.mount(widened::component()).unwrap_err();
    assert!(
        matches!(&err, MountError::ContractMismatch { catalog_hash, .. } if *catalog_hash == lamp_hash()),
        "{err:?}"
    );
}

#[test]
fn as_authority_001_every_registry_mounts_against_the_one_immutable_catalog_authority() {
    let manifest = Catalog::load_valid().0.manifest_hash();
    let default = Registry::default();
    let built = registry();
    assert_eq!(default.manifest_hash(), manifest);
    assert_eq!(built.manifest_hash(), manifest);
    // Mounting and unmounting change the surface, never the authority.
    let mounted = built.mount(Arc::new(Lamp)).unwrap();
    assert_eq!(built.manifest_hash(), manifest);
    drop(mounted);
    let _mounted6 = built.mount(rogue::component());
    assert_eq!(built.manifest_hash(), manifest);
    assert_eq!(Catalog::load_valid().0.manifest_hash(), manifest);
}

#[test]
fn as_authority_002_copying_every_public_fact_of_a_contract_does_not_forge_its_proof() {
    // The copy has `Lamp`'s type, descriptions, effect — and so its hash.
    assert_eq!(copy::hash(), lamp_hash());
    let registry = registry();
    let err = registry.mount(copy::component()).unwrap_err();
    assert_eq!(
        err,
        MountError::NotInCatalog {
            component_type: "authority.lamp".to_owned(),
            declaration_hash: lamp_hash(),
        }
    );
    assert_eq!(registry.version(), 0);
}

#[test]
fn as_authority_003_the_authority_checks_semantics_against_the_catalog_declaration() {
    let registry = registry();
    let err = registry.mount(widened::component()).unwrap_err();
    let MountError::ContractMismatch {
        component_type,
        declaration_hash,
        catalog_hash,
    } = err
    else {
        panic!("{err:?}");
    };
    assert_eq!(component_type, "authority.lamp");
    assert_eq!(catalog_hash, lamp_hash());
    assert_ne!(declaration_hash, catalog_hash);
    assert_eq!(registry.version(), 0);
    // The genuine declaration of the same type mounts.
    let _mounted7 = registry.mount(Arc::new(Lamp)).unwrap();
}

/// Disables every capability at discovery.
struct Maintenance;

impl Policy for Maintenance {
    fn name(&self) -> &str {
        "maintenance"
    }
    fn on_discovery(&self, _ctx: &PolicyContext<'_>) -> Decision {
        Decision::Disable("Maintenance is under way".into())
    }
}

#[tokio::test]
async fn as_authority_004_adapters_execute_only_through_the_registry_pipeline() {
    let registry = Registry::builder()
        .environment(Environment::Test)
        .policy(Maintenance)
        .build();
    let _mounted8 = registry.mount(Arc::new(Lamp)).unwrap();
    let tools = toolset(&registry);
    let name = tools
        .tool_for("view:authority.lamp.switchOn", None)
        .map(|tool| tool.name().to_owned())
        .unwrap();
    let before = SWITCHED.load(Ordering::SeqCst);
    // The toolset's call runs the registry's policy chain: refused.
    let result = tools.execute(&name, json!({}), None).await;
    assert!(!result.is_ok());
    assert_eq!(SWITCHED.load(Ordering::SeqCst), before);
    // A forged component never reaches any adapter: it cannot mount.
    assert!(registry.mount(rogue::component()).is_err());
    assert!(
        tools
            .tool_for("view:authority.rogue.switchOn", None)
            .is_none()
    );
}

#[test]
fn as_exposure_001_every_exposed_tool_has_catalog_provenance() {
    let catalog = Catalog::load_valid().0;
    let provenance: BTreeSet<(String, String)> = catalog
        .components()
        .iter()
        .flat_map(|c| c.capabilities())
        .map(|c| (c.id().as_str().to_owned(), c.capability_hash()))
        .collect();
    let registry = registry();
    let _mounted9 = registry.mount(Arc::new(Lamp)).unwrap();
    let _mounted10 = registry.mount(Probe::new()).unwrap();
    let _mounted11 = registry.mount(rogue::component());
    let _mounted12 = registry.mount(copy::component());
    let tools = toolset(&registry);
    let listed = tools.tools();
    assert!(!listed.is_empty());
    let mounted: Vec<_> = registry
        .snapshot(&SnapshotOptions::default())
        .components()
        .iter()
        .map(|c| c.component_type().to_owned())
        .collect();
    for tool in listed.iter() {
        let target = tool.target().unwrap();
        let capability = catalog
            .components()
            .iter()
            .flat_map(|c| c.capabilities())
            .find(|c| c.id().as_str() == target.capability_id)
            .unwrap_or_else(|| panic!("{} has no catalog provenance", tool.name()));
        assert!(provenance.contains(&(
            target.capability_id.to_owned(),
            capability.capability_hash()
        )));
        assert_ne!(target.capability_id, "view:authority.rogue.switchOn");
    }
    assert!(!mounted.iter().any(|t| t == "authority.rogue"));
}

/// The input of a hand-built procedure.
#[agent_schema]
pub(crate) struct ForgedProcedure {
    /// A device.
    pub(crate) device_id: String,
}

static FORGED_PROCEDURE: agent_surface::macro_support::ProcedureContract =
    agent_surface::macro_support::ProcedureContract::new(
        "domain:authority.forged",
        "Does anything on the backend.",
        Effect::ServerMutation,
        agent_surface::macro_support::procedure_input_schema::<ForgedProcedure>,
        SOURCE,
    );

impl agent_surface::procedure::Procedure for ForgedProcedure {
    type Fields = ();
    fn contract() -> &'static agent_surface::macro_support::ProcedureContract {
        &FORGED_PROCEDURE
    }
    fn fields() {}
    // Deliberate use of a hidden item (outside the guarantee) to get past
    // the seal; the registry still refuses it.
    fn __sealed(_: agent_surface::macro_support::Sealed) {}
}

#[test]
fn as_contract_003_a_hand_built_procedure_reference_is_refused() {
    let registry = registry();
    let err = registry
        .mounting(Arc::new(Lamp))
        .procedure(agent_surface::procedure::ProcedureRef::<ForgedProcedure>::new())
        .mount()
        .unwrap_err();
    assert!(
        matches!(&err, MountError::NotInCatalog { component_type, declaration_hash }
            if component_type == "domain:authority.forged" && declaration_hash.len() == 64),
        "{err:?}"
    );
    assert_eq!(registry.version(), 0);
}
