//! AS-STALE-002: the `surfaceVersion` hint of a call is enforced for
//! destructive and external-side-effect calls only; every other effect
//! ignores it.

use std::sync::{Arc, Mutex};

use agent_surface::error::Retry;
use agent_surface::prelude::*;
use agent_surface::procedure::{
    ExecuteFuture, ManifestEntry, ProcedureCall, ProcedureExecutor, ProcedureManifest,
};
use agent_surface::registry::Registry;
use serde_json::{Value, json};

use crate::fixtures::{Probe, call, code};

/// Wipe an archive.
#[agent_procedure(
    id = "domain:test.stale.wipe",
    effect = "destructive",
    confirmation = "optional"
)]
#[derive(Clone, Debug)]
pub(crate) struct Wipe {
    /// A note for the audit trail.
    #[agent_schema(unbounded)]
    pub(crate) note: Option<String>,
}

/// Mail the customer.
#[agent_procedure(
    id = "domain:test.stale.notify",
    effect = "external-side-effect",
    confirmation = "optional"
)]
#[derive(Clone, Debug)]
pub(crate) struct Notify {
    /// A note for the customer.
    #[agent_schema(unbounded)]
    pub(crate) note: Option<String>,
}

/// Rename an archive.
#[agent_procedure(id = "domain:test.stale.rename", effect = "server-mutation")]
#[derive(Clone, Debug)]
pub(crate) struct Rename {
    /// The new name.
    #[agent_schema(unbounded)]
    pub(crate) note: Option<String>,
}

/// Look an archive up.
#[agent_procedure(id = "domain:test.stale.lookup", effect = "server-query")]
#[derive(Clone, Debug)]
pub(crate) struct Lookup {
    /// What to look for.
    #[agent_schema(unbounded)]
    pub(crate) note: Option<String>,
}

/// A backend that answers every call with `null` and remembers its ids.
struct Backend {
    manifest: ProcedureManifest,
    received: Mutex<Vec<Arc<str>>>,
}

impl ProcedureExecutor for Backend {
    fn manifest(&self) -> &ProcedureManifest {
        &self.manifest
    }

    fn execute(&self, call: ProcedureCall) -> ExecuteFuture {
        self.received.lock().unwrap().push(call.procedure_id);
        Box::pin(async { Ok(Value::Null) })
    }
}

/// A page with a navigation action, holding the procedure references.
struct Archive;

/// An archive page.
#[agent_component(type = "test.archive")]
#[reference(Wipe)]
#[reference(Notify)]
#[reference(Rename)]
#[reference(Lookup)]
#[reference(Purge)]
impl Archive {
    /// Leave the page.
    #[action(effect = "navigation")]
    fn leave(&self) {}
}

/// A test registry whose procedure executor is a fresh [`Backend`]
/// declaring `entries`.
fn with_backend(entries: Vec<ManifestEntry>) -> (Registry, Arc<Backend>) {
    let backend = Arc::new(Backend {
        manifest: entries.into_iter().collect(),
        received: Mutex::new(Vec::new()),
    });
    let registry = Registry::builder().environment(Environment::Test).build();
    assert!(
        registry
            .set_procedure_executor(Some(Arc::clone(&backend) as Arc<dyn ProcedureExecutor>))
            .is_empty()
    );
    (registry, backend)
}

const WIPE: &str = "domain:test.stale.wipe";
const NOTIFY: &str = "domain:test.stale.notify";

#[tokio::test]
async fn as_stale_002_version_hint_is_enforced_only_for_destructive_and_external_calls() {
    let (registry, backend) = with_backend(vec![
        ManifestEntry::declared(Wipe::contract().checked().unwrap()),
        ManifestEntry::declared(Notify::contract().checked().unwrap()),
        ManifestEntry::declared(Rename::contract().checked().unwrap()),
        ManifestEntry::declared(Lookup::contract().checked().unwrap()),
    ]);
    let archive = registry
        .mounting(Arc::new(Archive))
        .procedure(ProcedureRef::<Wipe>::new())
        .procedure(ProcedureRef::<Notify>::new())
        .procedure(ProcedureRef::<Rename>::new())
        .procedure(ProcedureRef::<Lookup>::new())
        .mount()
        .unwrap();
    let _probe = registry.mount(Probe::new()).unwrap();
    let discovered = registry.version().to_string();
    // The surface moves after the agent discovered it.
    drop(registry.mount_instance(Probe::new(), "other").unwrap());
    assert_ne!(registry.version().to_string(), discovered);
    let current = registry.version().to_string();
    let invocation = |id: &str, version: &str| {
        let invocation = Invocation::new(id).surface_version(version);
        if id.starts_with("domain:") {
            invocation.input(json!({}))
        } else if id == "view:test.probe.poke" {
            invocation.input(json!({"ids": ["a"]}))
        } else {
            invocation
        }
    };

    // Destructive and external calls on an old version are refused before
    // anything runs.
    for id in [WIPE, NOTIFY] {
        let result = call(&registry, invocation(id, &discovered)).await;
        let error = result.error().unwrap();
        assert_eq!(error.code(), ErrorCode::StaleCapability, "{id}");
        assert_eq!(error.retry(), Retry::AfterRefresh, "{id}");
        assert_eq!(
            error.detail("reason"),
            Some(&json!("surface-version-mismatch")),
            "{id}"
        );
        assert_eq!(
            error.detail("liveRegistrationId"),
            Some(&json!(archive.registration_id())),
            "{id}"
        );
    }
    assert!(backend.received.lock().unwrap().is_empty(), "nothing ran");

    // A hint naming the current version passes.
    for id in [WIPE, NOTIFY] {
        let result = call(&registry, invocation(id, &current)).await;
        assert!(result.is_ok(), "{id}: {result:?}");
    }

    // Every other effect ignores the hint, however old.
    for id in [
        "domain:test.stale.rename", // server-mutation
        "domain:test.stale.lookup", // server-query
        "view:test.probe.poke",     // local-state
        "view:test.probe.read",     // read
        "view:test.archive.leave",  // navigation
    ] {
        let result = call(&registry, invocation(id, &discovered)).await;
        assert_eq!(code(&result), None, "{id}: {result:?}");
    }
    assert_eq!(
        backend
            .received
            .lock()
            .unwrap()
            .iter()
            .map(|id| &**id)
            .collect::<Vec<_>>(),
        [
            WIPE,
            NOTIFY,
            "domain:test.stale.rename",
            "domain:test.stale.lookup"
        ]
    );
}

/// Purge an archive, with the user's approval.
#[agent_procedure(
    id = "domain:test.stale.purge",
    effect = "destructive",
    confirmation = "required"
)]
#[derive(Clone, Debug)]
pub(crate) struct Purge {
    /// A note for the audit trail.
    #[agent_schema(unbounded)]
    pub(crate) note: Option<String>,
}

#[tokio::test]
async fn as_stale_002_an_approval_of_the_exact_request_outweighs_a_version_move_the_person_could_not_see()
 {
    let (registry, backend) = with_backend(vec![ManifestEntry::declared(
        Purge::contract().checked().unwrap(),
    )]);
    let archive = registry
        .mounting(Arc::new(Archive))
        .procedure(ProcedureRef::<Purge>::new())
        .mount()
        .unwrap();
    let seen = registry.version().to_string();
    let purge = || {
        Invocation::new("domain:test.stale.purge")
            .input(json!({}))
            .registration(archive.registration_id())
            .surface_version(seen.clone())
    };
    let asked = call(&registry, purge()).await;
    let id = asked
        .error()
        .and_then(|e| e.detail("confirmationId"))
        .and_then(Value::as_str)
        .unwrap()
        .to_owned();

    // Something else moves the surface while the person reads the dialog.
    let probe = registry.mount(Probe::new()).unwrap();
    assert_ne!(registry.version().to_string(), seen);
    let stale = |result: &InvocationResult| {
        result.error().and_then(|e| e.detail("reason")) == Some(&json!("surface-version-mismatch"))
    };
    // Before the person answers, the old version is stale as ever.
    let early = call(&registry, purge().confirmation(&id)).await;
    assert!(stale(&early), "{early:?}");
    // Evidence of another capability does not lift it either.
    let asked = call(
        &registry,
        Invocation::new("view:test.probe.guarded").input(json!({"ids": ["x"]})),
    )
    .await;
    let other = asked
        .error()
        .and_then(|e| e.detail("confirmationId"))
        .and_then(Value::as_str)
        .unwrap()
        .to_owned();
    let confirmations = registry.confirmations();
    confirmations
        .approve(&confirmations.find(&other).unwrap().shown())
        .unwrap();
    let crossed = call(&registry, purge().confirmation(&other)).await;
    assert!(stale(&crossed), "{crossed:?}");
    assert!(backend.received.lock().unwrap().is_empty(), "nothing ran");

    // Approved for exactly this request: it runs, once.
    confirmations
        .approve(&confirmations.find(&id).unwrap().shown())
        .unwrap();
    let done = call(&registry, purge().confirmation(&id)).await;
    assert!(done.is_ok(), "{done:?}");
    assert_eq!(backend.received.lock().unwrap().len(), 1);
    drop(probe);
}
