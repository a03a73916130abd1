//! The domain plane: AS-BIND-001..004, AS-INVOKE-003..005, AS-CACHE-004,
//! the bait-and-switch recipe, executor errors, concurrency and lifecycle
//! of procedure references.

use crate::fixtures::AnswerById;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_surface::error::Retry;
use agent_surface::events::SurfaceEvent;
use agent_surface::policy;
use agent_surface::prelude::*;
use agent_surface::procedure::{
    EffectSource, ExecuteFuture, ManifestEntry, ProcedureCall, ProcedureError, ProcedureExecutor,
    ProcedureManifest,
};
use agent_surface::registry::{MountError, Registry};
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::fixtures::{call, code, confirmation_id, settle_tasks};

/// The result of disabling devices.
#[agent_schema]
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Disabled {
    /// How many devices changed.
    pub(crate) disabled: u32,
}

/// Disable devices; they stop reporting until re-enabled.
#[agent_procedure(id = "domain:test.devices.disable", effect = "destructive", output = Disabled)]
#[derive(Clone, Debug)]
pub(crate) struct DisableDevices {
    /// The devices to disable.
    #[schemars(length(min = 1))]
    #[agent_schema(unbounded)]
    pub(crate) device_ids: Vec<String>,
    /// Why, for the audit trail.
    #[agent_schema(unbounded)]
    pub(crate) reason: Option<String>,
}

/// Export a report in a format.
#[agent_procedure(id = "domain:test.reports.export", effect = "server-mutation")]
#[derive(Clone, Debug)]
pub(crate) struct ExportReport {
    /// Which report.
    #[agent_schema(unbounded)]
    pub(crate) report_id: String,
    /// The file format.
    #[schemars(length(min = 1))]
    #[agent_schema(unbounded)]
    pub(crate) format: String,
    /// A note for the recipients.
    #[agent_schema(unbounded)]
    pub(crate) note: Option<String>,
}

/// The live UI state bindings read.
#[derive(Default)]
pub(crate) struct Screen {
    pub(crate) selection: Mutex<Vec<String>>,
    pub(crate) runs: std::sync::atomic::AtomicUsize,
}

impl Screen {
    pub(crate) fn select(&self, ids: &[&str]) {
        *self.selection.lock().unwrap() = ids.iter().map(|s| (*s).to_owned()).collect();
    }

    fn selected(&self) -> Vec<String> {
        self.selection.lock().unwrap().clone()
    }
}

/// A screen listing devices.
#[agent_component(type = "test.screen")]
#[reference(DisableDevices)]
#[reference(ExportReport)]
impl Screen {
    /// The selected device ids.
    #[observation]
    fn selection(&self) -> Vec<String> {
        self.selected()
    }

    /// Clears the selection.
    #[action(effect = "local-state")]
    fn clear(&self) {
        self.runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.selection.lock().unwrap().clear();
    }
}

/// A second screen referencing the same procedure.
#[derive(Default)]
pub(crate) struct Drawer;

/// A device drawer.
#[agent_component(type = "test.drawer")]
#[reference(DisableDevices)]
impl Drawer {
    /// Whether the drawer is open.
    #[observation]
    fn open(&self) -> bool {
        true
    }
}

type Reply = Arc<dyn Fn(&ProcedureCall) -> Result<Value, ProcedureError> + Send + Sync>;

/// An executor whose backend the test controls: records every call and
/// answers with `reply`, after the gate opens when one is set.
pub(crate) struct FakeBackend {
    manifest: ProcedureManifest,
    pub(crate) calls: Mutex<Vec<ProcedureCall>>,
    reply: Mutex<Reply>,
    gate: watch::Sender<bool>,
    gated: std::sync::atomic::AtomicBool,
}

impl FakeBackend {
    pub(crate) fn new(manifest: ProcedureManifest) -> Arc<FakeBackend> {
        Arc::new(FakeBackend {
            manifest,
            calls: Mutex::new(Vec::new()),
            reply: Mutex::new(Arc::new(|call: &ProcedureCall| {
                let n = call.input["deviceIds"].as_array().map_or(0, Vec::len);
                Ok(json!({"disabled": n}))
            })),
            gate: watch::channel(false).0,
            gated: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// The manifest agreeing with every test procedure.
    pub(crate) fn agreeing() -> Arc<FakeBackend> {
        FakeBackend::new(
            [
                ManifestEntry::declared(DisableDevices::contract().checked().unwrap()),
                ManifestEntry::declared(ExportReport::contract().checked().unwrap()),
            ]
            .into_iter()
            .collect(),
        )
    }

    fn reply(
        &self,
        reply: impl Fn(&ProcedureCall) -> Result<Value, ProcedureError> + Send + Sync + 'static,
    ) {
        *self.reply.lock().unwrap() = Arc::new(reply);
    }

    fn hold(&self) {
        self.gated.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    fn release(&self) {
        self.gate.send_replace(true);
    }

    pub(crate) fn inputs(&self) -> Vec<Value> {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .map(|c| c.input.clone())
            .collect()
    }
}

impl ProcedureExecutor for FakeBackend {
    fn manifest(&self) -> &ProcedureManifest {
        &self.manifest
    }

    fn execute(&self, call: ProcedureCall) -> ExecuteFuture {
        let reply = self.reply.lock().unwrap().clone();
        let outcome = reply(&call);
        self.calls.lock().unwrap().push(call);
        let mut gate = self
            .gated
            .load(std::sync::atomic::Ordering::SeqCst)
            .then(|| self.gate.subscribe());
        Box::pin(async move {
            if let Some(gate) = &mut gate {
                let _ = gate.wait_for(|open| *open).await;
            }
            outcome
        })
    }
}

pub(crate) fn registry_with(backend: &Arc<FakeBackend>) -> Registry {
    let registry = Registry::builder()
        .procedure_errors(|_, error| match error.code() {
            Some("forbidden") => Some(ErrorPayload::not_authorized(
                agent_surface::error::Origin::Server,
            )),
            _ => None,
        })
        .build();
    assert!(
        registry
            .set_procedure_executor(Some(Arc::clone(backend) as Arc<dyn ProcedureExecutor>))
            .is_empty()
    );
    registry
}

/// The standard reference: `deviceIds` bound (locked) to the selection,
/// available while something is selected.
pub(crate) fn disable_ref(screen: &Arc<Screen>) -> ProcedureRef<DisableDevices> {
    let bound = Arc::clone(screen);
    let when = Arc::clone(screen);
    let note = Arc::clone(screen);
    ProcedureRef::<DisableDevices>::new()
        .bind(DisableDevices::fields().device_ids, move || {
            bound.selected()
        })
        .when(move || !when.selected().is_empty())
        .unavailable_reason("Select at least one device first")
        .describe(move || format!("Disables the {} selected devices", note.selected().len()))
}

/// A registry whose signed-in user holds `permissions`, over `backend`.
pub(crate) fn registry_for_user(permissions: Value, backend: &Arc<FakeBackend>) -> Registry {
    let registry = Registry::builder()
        .host_context(move || {
            HostContext::new().with(
                "user",
                json!({"id": "u", "permissions": permissions.clone()}),
            )
        })
        .build();
    registry.set_procedure_executor(Some(Arc::clone(backend) as Arc<dyn ProcedureExecutor>));
    registry
}

pub(crate) fn mount_screen(registry: &Registry, screen: &Arc<Screen>) -> Mounted {
    registry
        .mounting(Arc::clone(screen))
        .procedure(disable_ref(screen))
        .mount()
        .unwrap()
}

const DISABLE: &str = "domain:test.devices.disable";
const EXPORT: &str = "domain:test.reports.export";

fn disable() -> Invocation {
    Invocation::new(DISABLE).input(json!({}))
}

fn descriptor(registry: &Registry, id: &str) -> Value {
    let snapshot = registry.snapshot(&SnapshotOptions::default()).to_json();
    snapshot["procedures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["procedureId"] == id)
        .cloned()
        .unwrap_or(Value::Null)
}

// ---------------------------------------------------------------------------
// AS-BIND-001: schema surgery

#[tokio::test]
async fn as_bind_001_schema_surgery_removes_locked_fields_and_their_required_entries() {
    let backend = FakeBackend::agreeing();
    let registry = registry_with(&backend);
    let screen = Arc::new(Screen::default());
    let _mounted = mount_screen(&registry, &screen);
    let full = DisableDevices::contract()
        .checked()
        .unwrap()
        .input_schema()
        .json()
        .clone();
    assert_eq!(full["required"], json!(["deviceIds"]));

    // Partly bound: `deviceIds` is gone from properties and from required.
    let schema = &descriptor(&registry, DISABLE)["inputSchema"];
    assert_eq!(schema["type"], "object");
    assert!(schema["properties"].get("deviceIds").is_none(), "{schema}");
    assert!(schema["properties"].get("reason").is_some());
    assert!(schema.get("required").is_none(), "{schema}");
    assert_eq!(schema["additionalProperties"], false);
}

#[tokio::test]
async fn as_bind_001_all_none_and_overridable_bindings() {
    let backend = FakeBackend::agreeing();
    let registry = registry_with(&backend);
    let fields = ExportReport::fields();

    // Nothing bound: the agent-facing schema is the full one.
    let none = registry
        .mounting(Arc::new(Screen::default()))
        .instance("none")
        .procedure(ProcedureRef::<ExportReport>::new())
        .mount()
        .unwrap();
    // Everything bound and locked: no properties, nothing required.
    let all = registry
        .mounting(Arc::new(Screen::default()))
        .instance("all")
        .procedure(
            ProcedureRef::<ExportReport>::new()
                .bind(fields.report_id, || "weekly".to_owned())
                .bind(fields.format, || "csv".to_owned())
                .bind(fields.note, || None),
        )
        .mount()
        .unwrap();
    // Overridable: visible, optional.
    let overridable = registry
        .mounting(Arc::new(Screen::default()))
        .instance("over")
        .procedure(
            ProcedureRef::<ExportReport>::new()
                .bind(fields.report_id, || "weekly".to_owned())
                .bind_overridable(fields.format, || "csv".to_owned()),
        )
        .mount()
        .unwrap();
    let snapshot = registry.snapshot(&SnapshotOptions::default()).to_json();
    let schema_of = |mounted: &Mounted| {
        snapshot["procedures"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["registrationId"] == mounted.registration_id())
            .map(|p| p["inputSchema"].clone())
            .unwrap()
    };
    let full = ExportReport::contract()
        .checked()
        .unwrap()
        .input_schema()
        .json()
        .clone();
    assert_eq!(schema_of(&none), *full);
    let all_schema = schema_of(&all);
    assert_eq!(all_schema["properties"], json!({}));
    assert!(all_schema.get("required").is_none());
    let over = schema_of(&overridable);
    assert!(over["properties"].get("reportId").is_none());
    assert!(over["properties"].get("format").is_some());
    assert!(over["properties"].get("note").is_some());
    assert!(over.get("required").is_none(), "{over}");

    // The descriptor lists each bound field with its lock.
    let bound: Vec<Value> = snapshot["procedures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["registrationId"] == overridable.registration_id())
        .map(|p| p["boundFields"].as_array().unwrap().clone())
        .unwrap();
    assert_eq!(
        bound,
        vec![
            json!({"path": "/reportId", "locked": true, "source": "ui-state"}),
            json!({"path": "/format", "locked": false, "source": "ui-state"}),
        ]
    );
}

// ---------------------------------------------------------------------------
// AS-BIND-002: locked by default; overridable fields are defaults; merged
// input revalidated against the full schema

#[tokio::test]
async fn as_bind_002_supplied_locked_field_is_invalid_input_with_locked_fields() {
    let backend = FakeBackend::agreeing();
    let registry = registry_with(&backend);
    let screen = Arc::new(Screen::default());
    screen.select(&["d1"]);
    let _mounted = mount_screen(&registry, &screen);
    let result = call(
        &registry,
        Invocation::new(DISABLE).input(json!({"deviceIds": ["d9"], "reason": "x"})),
    )
    .await;
    let error = result.error().unwrap();
    assert_eq!(error.code(), ErrorCode::InvalidInput);
    assert_eq!(error.retry(), Retry::WithChanges);
    assert_eq!(error.detail("lockedFields"), Some(&json!(["deviceIds"])));
    assert!(backend.inputs().is_empty());
}

#[tokio::test]
async fn as_bind_002_overridable_fields_default_and_agent_input_wins() {
    let backend = FakeBackend::agreeing();
    backend.reply(|_| Ok(json!({"ok": true})));
    let registry = registry_with(&backend);
    let fields = ExportReport::fields();
    let _mounted = registry
        .mounting(Arc::new(Screen::default()))
        .procedure(
            ProcedureRef::<ExportReport>::new()
                .bind(fields.report_id, || "weekly".to_owned())
                .bind_overridable(fields.format, || "csv".to_owned()),
        )
        .mount()
        .unwrap();
    let export = |input: Value| Invocation::new(EXPORT).input(input);
    assert!(call(&registry, export(json!({}))).await.is_ok());
    assert!(
        call(&registry, export(json!({"format": "pdf", "note": "hi"})))
            .await
            .is_ok()
    );
    // The agent part is checked against the agent-facing schema…
    let bad = call(&registry, export(json!({"format": ""}))).await;
    assert_eq!(code(&bad), Some(ErrorCode::InvalidInput));
    let unknown = call(&registry, export(json!({"colour": "red"}))).await;
    assert_eq!(code(&unknown), Some(ErrorCode::InvalidInput));
    assert_eq!(
        backend.inputs(),
        vec![
            json!({"reportId": "weekly", "format": "csv"}),
            json!({"reportId": "weekly", "format": "pdf", "note": "hi"}),
        ]
    );
}

#[tokio::test]
async fn as_bind_002_merged_input_is_validated_against_the_full_schema() {
    let backend = FakeBackend::agreeing();
    let registry = registry_with(&backend);
    let fields = ExportReport::fields();
    // The bound value breaks the full schema (`minLength: 1`).
    let _mounted = registry
        .mounting(Arc::new(Screen::default()))
        .procedure(
            ProcedureRef::<ExportReport>::new()
                .bind(fields.report_id, || "weekly".to_owned())
                .bind(fields.format, String::new),
        )
        .mount()
        .unwrap();
    let result = call(&registry, Invocation::new(EXPORT).input(json!({}))).await;
    let error = result.error().unwrap();
    assert_eq!(error.code(), ErrorCode::PreconditionFailed, "{error:?}");
    assert_eq!(error.detail("reason"), Some(&json!("binding-failed")));
    assert_eq!(error.retry(), Retry::AfterRefresh);
    assert!(backend.inputs().is_empty());
}

// ---------------------------------------------------------------------------
// AS-BIND-003: the manifest is the ceiling

#[tokio::test]
async fn as_bind_003_references_absent_from_the_manifest_register_nothing() {
    // No executor: nothing is exposed.
    let registry = Registry::default();
    let screen = Arc::new(Screen::default());
    screen.select(&["d1"]);
    let _mounted = mount_screen(&registry, &screen);
    assert_eq!(descriptor(&registry, DISABLE), Value::Null);
    assert_eq!(
        code(&call(&registry, disable()).await),
        Some(ErrorCode::CapabilityNotFound)
    );

    // An executor whose manifest lacks the procedure: still nothing.
    let only_export = FakeBackend::new(
        [ManifestEntry::declared(
            ExportReport::contract().checked().unwrap(),
        )]
        .into_iter()
        .collect(),
    );
    let before = registry.version();
    registry.set_procedure_executor(Some(only_export as Arc<dyn ProcedureExecutor>));
    assert_eq!(registry.version(), before, "nothing changed");
    assert_eq!(descriptor(&registry, DISABLE), Value::Null);
    assert_eq!(
        code(&call(&registry, disable()).await),
        Some(ErrorCode::CapabilityNotFound)
    );

    // A manifest listing it exposes the live reference (a surface change).
    let backend = FakeBackend::agreeing();
    registry.set_procedure_executor(Some(Arc::clone(&backend) as Arc<dyn ProcedureExecutor>));
    assert_eq!(registry.version(), before + 1);
    assert_eq!(descriptor(&registry, DISABLE)["procedureId"], DISABLE);

    // Removing the executor withdraws it again.
    registry.set_procedure_executor(None);
    assert_eq!(descriptor(&registry, DISABLE), Value::Null);
    assert_eq!(registry.version(), before + 2);
}

#[tokio::test]
async fn as_bind_003_a_disagreeing_manifest_fails_the_mount_with_every_disagreement() {
    let declared = DisableDevices::contract().checked().unwrap();
    let entry = ManifestEntry::new(DISABLE)
        .description("Disable some devices.")
        .input_schema(json!({"type": "object", "properties": {"ids": {"type": "array", "items": {"type": "string"}}}}))
        .effect(agent_surface::Effect::ServerMutation, EffectSource::Stated)
        .confirmation(agent_surface::Confirmation::Required);
    let backend = FakeBackend::new([entry].into_iter().collect());
    let registry = Registry::default();
    registry.set_procedure_executor(Some(backend as Arc<dyn ProcedureExecutor>));
    let screen = Arc::new(Screen::default());
    let err = registry
        .mounting(Arc::clone(&screen))
        .procedure(disable_ref(&screen))
        .mount()
        .unwrap_err();
    let MountError::Manifest(mismatch) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(mismatch.procedure_id(), DISABLE);
    let all = mismatch.disagreements().join("\n");
    assert!(all.contains("descriptions differ"), "{all}");
    assert!(all.contains("input schemas differ"), "{all}");
    assert!(all.contains("effects differ"), "{all}");
    assert!(err.to_string().contains(DISABLE));
    assert!(
        registry
            .snapshot(&SnapshotOptions::default())
            .components()
            .is_empty()
    );

    // Inferred effects (hints) may be made more dangerous, never less.
    let hinted = |effect| ManifestEntry::declared(declared).effect(effect, EffectSource::Inferred);
    for (hint, agrees) in [
        (agent_surface::Effect::ServerMutation, true),
        (agent_surface::Effect::Destructive, true),
    ] {
        let registry = Registry::default();
        registry
            .set_procedure_executor(Some(FakeBackend::new([hinted(hint)].into_iter().collect())
                as Arc<dyn ProcedureExecutor>));
        assert_eq!(
            registry
                .mounting(Arc::clone(&screen))
                .procedure(disable_ref(&screen))
                .mount()
                .is_ok(),
            agrees
        );
    }
    let export = ExportReport::contract().checked().unwrap();
    let registry = Registry::default();
    registry.set_procedure_executor(Some(FakeBackend::new(
        [ManifestEntry::declared(export)
            .effect(agent_surface::Effect::Destructive, EffectSource::Inferred)]
        .into_iter()
        .collect(),
    ) as Arc<dyn ProcedureExecutor>));
    let err = registry
        .mounting(Arc::clone(&screen))
        .procedure(ProcedureRef::<ExportReport>::new())
        .mount()
        .unwrap_err();
    assert!(err.to_string().contains("less dangerous"), "{err}");
}

#[tokio::test]
async fn as_bind_003_a_new_disagreeing_manifest_withdraws_live_references() {
    let backend = FakeBackend::agreeing();
    let registry = registry_with(&backend);
    let screen = Arc::new(Screen::default());
    let _mounted = mount_screen(&registry, &screen);
    assert_ne!(descriptor(&registry, DISABLE), Value::Null);
    let changed = FakeBackend::new(
        [
            ManifestEntry::declared(DisableDevices::contract().checked().unwrap())
                .description("Something else entirely."),
        ]
        .into_iter()
        .collect(),
    );
    let mismatches = registry.set_procedure_executor(Some(changed as Arc<dyn ProcedureExecutor>));
    assert_eq!(mismatches.len(), 1);
    assert_eq!(descriptor(&registry, DISABLE), Value::Null);
}

#[tokio::test]
async fn as_bind_003_mount_time_configuration_errors_are_reported() {
    let backend = FakeBackend::agreeing();
    let registry = registry_with(&backend);
    let screen = Arc::new(Screen::default());
    let fields = DisableDevices::fields();
    // A field bound twice.
    let twice = registry
        .mounting(Arc::clone(&screen))
        .procedure(
            ProcedureRef::<DisableDevices>::new()
                .bind(fields.device_ids, Vec::new)
                .bind(fields.device_ids, Vec::new),
        )
        .mount()
        .unwrap_err();
    assert!(twice.to_string().contains("bound twice"), "{twice}");
    // A laxer confirmation than the contract's.
    let laxer = registry
        .mounting(Arc::clone(&screen))
        .procedure(
            ProcedureRef::<DisableDevices>::new()
                .confirmation(agent_surface::Confirmation::Optional),
        )
        .mount()
        .unwrap_err();
    assert!(laxer.to_string().contains("never lower"), "{laxer}");
    // The same procedure referenced twice by one mount.
    let dup = registry
        .mounting(Arc::clone(&screen))
        .procedure(ProcedureRef::<DisableDevices>::new())
        .procedure(ProcedureRef::<DisableDevices>::new())
        .mount()
        .unwrap_err();
    assert!(dup.to_string().contains("twice"), "{dup}");
}

// ---------------------------------------------------------------------------
// AS-BIND-004: lifecycle mirrors components; bind/when/describe are live

#[tokio::test]
async fn as_bind_004_bind_when_and_describe_read_live_state() {
    let backend = FakeBackend::agreeing();
    let registry = registry_with(&backend);
    let screen = Arc::new(Screen::default());
    let _mounted = mount_screen(&registry, &screen);

    let idle = descriptor(&registry, DISABLE);
    assert_eq!(idle["available"], false);
    assert_eq!(
        idle["unavailableReason"],
        "Select at least one device first"
    );
    assert_eq!(idle["contextualNote"], "Disables the 0 selected devices");
    let refused = call(&registry, disable()).await;
    assert_eq!(code(&refused), Some(ErrorCode::CapabilityNotAvailable));
    assert_eq!(
        refused.error().unwrap().detail("reason"),
        Some(&json!("Select at least one device first"))
    );

    // No remount, no version change: the closures see the new state.
    let version = registry.version();
    screen.select(&["d1", "d2"]);
    let live = descriptor(&registry, DISABLE);
    assert_eq!(live["available"], true);
    assert_eq!(live["contextualNote"], "Disables the 2 selected devices");
    assert_eq!(registry.version(), version);
    let asked = call(&registry, disable()).await;
    let id = confirmation_id(&asked);
    registry.confirmations().approve_id(&id).unwrap();
    let done = call(&registry, disable().confirmation(&id)).await;
    assert_eq!(done.output(), Some(&json!({"disabled": 2})));
    assert_eq!(backend.inputs(), vec![json!({"deviceIds": ["d1", "d2"]})]);
}

#[tokio::test]
async fn as_bind_004_references_live_and_die_with_their_mount() {
    let backend = FakeBackend::agreeing();
    let registry = registry_with(&backend);
    let screen = Arc::new(Screen::default());
    screen.select(&["d1"]);
    let mounted = mount_screen(&registry, &screen);
    let first = mounted.registration_id().to_owned();
    assert_eq!(descriptor(&registry, DISABLE)["registrationId"], first);
    assert_eq!(
        descriptor(&registry, DISABLE)["context"],
        json!({"type": "test.screen", "instanceId": "default"})
    );

    // Unmount: gone from snapshots; the old token → COMPONENT_UNMOUNTED.
    drop(mounted);
    assert_eq!(descriptor(&registry, DISABLE), Value::Null);
    let late = call(&registry, disable().registration(&first)).await;
    assert_eq!(code(&late), Some(ErrorCode::ComponentUnmounted));

    // Remount: a new registration; the old token is stale.
    let again = mount_screen(&registry, &screen);
    let stale = call(&registry, disable().registration(&first)).await;
    let error = stale.error().unwrap();
    assert_eq!(error.code(), ErrorCode::StaleCapability);
    assert_eq!(
        error.detail("reason"),
        Some(&json!("registration-replaced"))
    );
    assert_eq!(
        error.detail("liveRegistrationId"),
        Some(&json!(again.registration_id()))
    );

    // A disabled component disables its references too.
    again.set_enabled(false);
    assert_eq!(
        descriptor(&registry, DISABLE)["unavailableReason"],
        "component-disabled"
    );
    assert_eq!(
        code(&call(&registry, disable()).await),
        Some(ErrorCode::CapabilityNotAvailable)
    );
}

#[tokio::test(start_paused = true)]
async fn as_bind_004_unmount_mid_flight_settles_unmounted_and_cancels_the_backend_call() {
    let backend = FakeBackend::agreeing();
    backend.hold();
    let registry = registry_with(&backend);
    let screen = Arc::new(Screen::default());
    screen.select(&["d1"]);
    let mounted = mount_screen(&registry, &screen);
    let asked = call(&registry, disable()).await;
    let id = confirmation_id(&asked);
    registry.confirmations().approve_id(&id).unwrap();
    let running = tokio::spawn({
        let registry = registry.clone();
        async move { call(&registry, disable().confirmation(&id)).await }
    });
    settle_tasks().await;
    assert_eq!(backend.inputs().len(), 1);
    drop(mounted);
    let result = running.await.unwrap();
    let error = result.error().unwrap();
    assert_eq!(error.code(), ErrorCode::ComponentUnmounted);
    assert_eq!(error.detail("phase"), Some(&json!("mid-flight")));
    assert!(backend.calls.lock().unwrap()[0].cancellation.is_cancelled());
}

// ---------------------------------------------------------------------------
// AS-INVOKE-003..005: effective input before confirmation

#[tokio::test]
async fn as_invoke_003_a_failing_binding_fails_before_any_confirmation_record() {
    let backend = FakeBackend::agreeing();
    let registry = registry_with(&backend);
    let screen = Arc::new(Screen::default());
    let _mounted = registry
        .mounting(Arc::clone(&screen))
        .procedure(
            ProcedureRef::<DisableDevices>::new()
                .try_bind(DisableDevices::fields().device_ids, || {
                    Err::<Vec<String>, _>("the table is still loading")
                }),
        )
        .mount()
        .unwrap();
    let result = call(&registry, disable()).await;
    let error = result.error().unwrap();
    assert_eq!(error.code(), ErrorCode::PreconditionFailed);
    assert_eq!(error.detail("reason"), Some(&json!("binding-failed")));
    assert_eq!(error.retry(), Retry::AfterRefresh);
    // Never echoes the cause (it may hold application internals).
    assert!(!serde_json::to_string(error).unwrap().contains("loading"));
    assert!(registry.confirmations().pending().is_empty());
    assert!(backend.inputs().is_empty());
}

#[tokio::test]
async fn as_invoke_003_a_malformed_or_panicking_binding_fails_before_any_confirmation_record() {
    let backend = FakeBackend::agreeing();
    let registry = registry_with(&backend);
    // An empty selection violates `minItems: 1` of the full schema.
    let screen = Arc::new(Screen::default());
    let _first = registry
        .mounting(Arc::clone(&screen))
        .procedure(
            ProcedureRef::<DisableDevices>::new()
                .bind(DisableDevices::fields().device_ids, Vec::new),
        )
        .mount()
        .unwrap();
    let malformed = call(&registry, disable()).await;
    assert_eq!(
        malformed.error().unwrap().detail("reason"),
        Some(&json!("binding-failed"))
    );
    let _second = registry
        .mounting(Arc::new(Drawer))
        .procedure(
            ProcedureRef::<DisableDevices>::new()
                .bind(DisableDevices::fields().device_ids, || -> Vec<String> {
                    panic!("boom")
                }),
        )
        .mount()
        .unwrap();
    let drawer = descriptor_of(&registry, "test.drawer");
    let panicked = call(&registry, disable().registration(drawer)).await;
    assert_eq!(
        panicked.error().unwrap().detail("reason"),
        Some(&json!("binding-failed"))
    );
    assert!(registry.confirmations().pending().is_empty());
    assert!(backend.inputs().is_empty());
}

fn descriptor_of(registry: &Registry, component_type: &str) -> String {
    let snapshot = registry.snapshot(&SnapshotOptions::default()).to_json();
    snapshot["procedures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["context"]["type"] == component_type)
        .and_then(|p| p["registrationId"].as_str())
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn as_invoke_004_a_supplied_locked_field_fails_before_any_confirmation_record() {
    let backend = FakeBackend::agreeing();
    let registry = registry_with(&backend);
    let screen = Arc::new(Screen::default());
    screen.select(&["d1"]);
    let _mounted = mount_screen(&registry, &screen);
    let result = call(
        &registry,
        Invocation::new(DISABLE).input(json!({"deviceIds": ["d1"]})),
    )
    .await;
    assert_eq!(code(&result), Some(ErrorCode::InvalidInput));
    assert!(registry.confirmations().pending().is_empty());
}

#[tokio::test]
async fn as_invoke_005_confirmation_shows_bound_values_changed_after_discovery() {
    let backend = FakeBackend::agreeing();
    let registry = registry_with(&backend);
    let screen = Arc::new(Screen::default());
    screen.select(&["d1"]);
    let _mounted = mount_screen(&registry, &screen);
    let discovered = registry.snapshot(&SnapshotOptions::default());
    assert_eq!(discovered.procedures().len(), 1);
    // The selection changes after discovery.
    screen.select(&["d7", "d8"]);
    let asked = call(
        &registry,
        Invocation::new(DISABLE).input(json!({"reason": "broken"})),
    )
    .await;
    let error = asked.error().unwrap();
    assert_eq!(error.detail("origin"), Some(&json!("client")));
    assert_eq!(error.detail("effect"), Some(&json!("destructive")));
    let summary = error.detail("summary").and_then(Value::as_str).unwrap();
    assert!(
        summary.contains("d7") && summary.contains("d8"),
        "{summary}"
    );
    let pending = registry.confirmations().pending();
    assert_eq!(pending.len(), 1);
    assert_eq!(
        pending[0].input,
        json!({"deviceIds": ["d7", "d8"], "reason": "broken"})
    );
    assert_eq!(pending[0].capability_id.as_ref(), DISABLE);
}

// ---------------------------------------------------------------------------
// The bait-and-switch recipe (AS-CONFIRM-001 over a binding)

#[tokio::test]
async fn as_confirm_001_bait_and_switch_binding_changed_after_approval_is_a_mismatch() {
    let backend = FakeBackend::agreeing();
    let registry = registry_with(&backend);
    let screen = Arc::new(Screen::default());
    screen.select(&["d1"]);
    let _mounted = mount_screen(&registry, &screen);
    let asked = call(&registry, disable().invocation_id("inv-1")).await;
    let id = confirmation_id(&asked);
    assert_eq!(
        registry.confirmations().pending()[0].input,
        json!({"deviceIds": ["d1"]})
    );
    registry.confirmations().approve_id(&id).unwrap();
    // The user approved d1; the selection now says otherwise.
    screen.select(&["d1", "d2", "d3"]);
    let retried = call(
        &registry,
        disable().invocation_id("inv-1").confirmation(&id),
    )
    .await;
    let error = retried.error().unwrap();
    assert_eq!(error.code(), ErrorCode::ConfirmationInvalid);
    assert_eq!(error.detail("reason"), Some(&json!("mismatch")));
    assert_eq!(error.retry(), Retry::No);
    assert!(backend.inputs().is_empty(), "the backend was never called");
}

#[tokio::test]
async fn as_confirm_001_a_request_whose_binding_moved_is_withdrawn_when_the_page_changes() {
    let backend = FakeBackend::agreeing();
    let registry = registry_with(&backend);
    let screen = Arc::new(Screen::default());
    screen.select(&["d1"]);
    let mounted = mount_screen(&registry, &screen);
    let id = confirmation_id(&call(&registry, disable()).await);
    // A render with nothing moved withdraws nothing.
    mounted.invalidate();
    assert_eq!(registry.confirmations().pending().len(), 1);
    // The selection moves: at the next render the request is withdrawn,
    // before any retry of the agent's.
    screen.select(&["d2"]);
    mounted.invalidate();
    assert!(registry.confirmations().pending().is_empty());
    let resolution = registry.confirmations().resolution(&id).unwrap();
    assert_eq!(
        resolution.outcome,
        agent_surface::confirmation::ConfirmationOutcome::Withdrawn
    );
    assert_eq!(resolution.reason, Some("input-changed"));
    // The agent's retry is told so; nothing reached the backend.
    let retried = call(&registry, disable().confirmation(&id)).await;
    assert_eq!(
        retried.error().and_then(|e| e.detail("reason")),
        Some(&json!("withdrawn"))
    );
    assert!(backend.inputs().is_empty(), "the backend was never called");
}

// ---------------------------------------------------------------------------
// AS-CACHE-004: stable description, live note

#[tokio::test]
async fn as_cache_004_descriptor_description_is_stable_and_contextual_note_carries_live_text() {
    let backend = FakeBackend::agreeing();
    let registry = registry_with(&backend);
    let screen = Arc::new(Screen::default());
    let _mounted = mount_screen(&registry, &screen);
    let stable = "Disable devices; they stop reporting until re-enabled.";
    let mut notes = Vec::new();
    for selection in [&["d1"][..], &["d1", "d2", "d3"][..], &[][..]] {
        screen.select(selection);
        let descriptor = descriptor(&registry, DISABLE);
        assert_eq!(descriptor["description"], stable);
        notes.push(descriptor["contextualNote"].as_str().unwrap().to_owned());
    }
    assert_eq!(
        notes,
        [
            "Disables the 1 selected devices",
            "Disables the 3 selected devices",
            "Disables the 0 selected devices"
        ]
    );
    // Without `describe`, there is no note at all.
    let registry = registry_with(&backend);
    let _plain = registry
        .mounting(Arc::new(Screen::default()))
        .procedure(ProcedureRef::<DisableDevices>::new())
        .mount()
        .unwrap();
    let plain = descriptor(&registry, DISABLE);
    assert!(plain.get("contextualNote").is_none());
    assert_eq!(plain["description"], stable);
}

// ---------------------------------------------------------------------------
// Snapshot shape, ambiguity, policies

#[tokio::test]
async fn procedures_live_at_the_top_level_with_the_descriptor_shape() {
    let backend = FakeBackend::agreeing();
    let registry = registry_with(&backend);
    let screen = Arc::new(Screen::default());
    screen.select(&["d1"]);
    let mounted = mount_screen(&registry, &screen);
    let snapshot = registry.snapshot(&SnapshotOptions::default()).to_json();
    let component = &snapshot["components"][0];
    assert!(
        component.get("procedures").is_none(),
        "planes are not nested"
    );
    let descriptor = &snapshot["procedures"][0];
    let mut keys: Vec<&str> = descriptor
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "available",
            "boundFields",
            "confirmation",
            "context",
            "contextualNote",
            "description",
            "effect",
            "inputSchema",
            "outputSchema",
            "procedureId",
            "registrationId"
        ]
    );
    assert_eq!(descriptor["effect"], "destructive");
    assert_eq!(descriptor["confirmation"], "required");
    assert_eq!(descriptor["registrationId"], mounted.registration_id());
    assert_eq!(
        descriptor["outputSchema"]["properties"]["disabled"]["type"],
        "integer"
    );
}

#[tokio::test]
async fn two_references_without_a_registration_id_are_ambiguous() {
    let backend = FakeBackend::agreeing();
    let registry = registry_with(&backend);
    let screen = Arc::new(Screen::default());
    screen.select(&["d1"]);
    let _table = mount_screen(&registry, &screen);
    let _drawer = registry
        .mounting(Arc::new(Drawer))
        .procedure(
            ProcedureRef::<DisableDevices>::new()
                .bind(DisableDevices::fields().device_ids, || {
                    vec!["d5".to_owned()]
                })
                .describe(|| "Disables the device shown in the drawer".to_owned()),
        )
        .mount()
        .unwrap();
    let result = call(&registry, disable()).await;
    let error = result.error().unwrap();
    assert_eq!(error.code(), ErrorCode::AmbiguousInstance);
    let instances = error.detail("instances").unwrap().as_array().unwrap();
    assert_eq!(instances.len(), 2);
    // With the registration id, each reference runs with its own binding.
    let drawer = descriptor_of(&registry, "test.drawer");
    let asked = call(&registry, disable().registration(&drawer)).await;
    assert_eq!(
        registry.confirmations().pending()[0].input,
        json!({"deviceIds": ["d5"]})
    );
    let id = confirmation_id(&asked);
    registry.confirmations().approve_id(&id).unwrap();
    let done = call(&registry, disable().registration(&drawer).confirmation(&id)).await;
    assert!(done.is_ok(), "{done:?}");
    assert_eq!(backend.inputs(), vec![json!({"deviceIds": ["d5"]})]);
}

#[tokio::test]
async fn reference_policies_hide_and_gate_like_capability_policies() {
    let backend = FakeBackend::agreeing();
    let as_user = |permissions: Value| {
        let registry = registry_for_user(permissions, &backend);
        let screen = Arc::new(Screen::default());
        screen.select(&["d1"]);
        let mounted = registry
            .mounting(Arc::clone(&screen))
            .procedure(disable_ref(&screen).policy(policy::has_permission("devices:write")))
            .mount()
            .unwrap();
        (registry, mounted)
    };
    let (viewer, _v) = as_user(json!(["devices:read"]));
    let (admin, _a) = as_user(json!(["devices:read", "devices:write"]));
    let sees = |registry: &Registry| {
        registry
            .snapshot(&SnapshotOptions::default())
            .procedures()
            .len()
    };
    assert_eq!(sees(&viewer), 0);
    assert_eq!(sees(&admin), 1);
    assert_eq!(
        code(&call(&viewer, disable()).await),
        Some(ErrorCode::CapabilityNotFound)
    );
    assert_eq!(
        code(&call(&admin, disable()).await),
        Some(ErrorCode::ConfirmationRequired)
    );
    // The component's own capabilities are not affected by the reference's policy.
    assert_eq!(
        viewer
            .snapshot(&SnapshotOptions::default())
            .components()
            .len(),
        1
    );
}

#[tokio::test]
async fn a_view_capability_sharing_a_manifest_suffix_is_flagged() {
    let backend = FakeBackend::new(
        [ManifestEntry::new("domain:test.screen.clear")]
            .into_iter()
            .collect(),
    );
    let registry = Registry::default();
    registry.set_procedure_executor(Some(backend as Arc<dyn ProcedureExecutor>));
    let events = Arc::new(Mutex::new(Vec::new()));
    let _subscription = registry.subscribe({
        let events = Arc::clone(&events);
        move |event| events.lock().unwrap().push(event.clone())
    });
    let _mounted = registry.mount(Arc::new(Screen::default())).unwrap();
    assert!(events.lock().unwrap().iter().any(|event| matches!(
        event,
        SurfaceEvent::CollisionSuspected { domain_procedure_id, .. } if &**domain_procedure_id == "domain:test.screen.clear"
    )));
}

// ---------------------------------------------------------------------------
// Executor errors and server approval

#[tokio::test]
async fn backend_errors_map_through_the_host_hook_or_become_transport_failures() {
    let backend = FakeBackend::agreeing();
    let registry = registry_with(&backend);
    let fields = ExportReport::fields();
    let _mounted = registry
        .mounting(Arc::new(Screen::default()))
        .procedure(
            ProcedureRef::<ExportReport>::new()
                .bind(fields.report_id, || "weekly".to_owned())
                .bind(fields.format, || "csv".to_owned()),
        )
        .mount()
        .unwrap();
    let export = || Invocation::new(EXPORT).input(json!({}));

    backend.reply(|_| {
        Err(ProcedureError::server(
            "forbidden",
            "user u-7 lacks reports:export on tenant 9",
        ))
    });
    let refused = call(&registry, export()).await;
    let error = refused.error().unwrap();
    assert_eq!(error.code(), ErrorCode::NotAuthorized);
    assert_eq!(error.detail("origin"), Some(&json!("server")));

    backend.reply(|_| {
        Err(ProcedureError::Transport(
            "connect ECONNREFUSED 10.0.0.7:5432".into(),
        ))
    });
    let failed = call(&registry, export()).await;
    let error = failed.error().unwrap();
    assert_eq!(error.code(), ErrorCode::ExecutionFailed);
    assert_eq!(error.detail("reason"), Some(&json!("transport")));
    let text = serde_json::to_string(error).unwrap();
    assert!(
        !text.contains("10.0.0.7") && !text.contains("ECONNREFUSED"),
        "{text}"
    );
    // The operator channel keeps the cause.
    let audit = registry.audit_log();
    let settled = audit
        .iter()
        .rev()
        .find(|e| e.code == Some(ErrorCode::ExecutionFailed))
        .unwrap();
    assert!(
        settled.detail.as_ref().unwrap()["operator"]
            .as_str()
            .unwrap()
            .contains("ECONNREFUSED")
    );

    backend.reply(|_| Err(ProcedureError::server("teapot", "I am a teapot")));
    let unmapped = call(&registry, export()).await;
    assert_eq!(
        unmapped.error().unwrap().detail("reason"),
        Some(&json!("transport"))
    );

    backend.reply(|_| Ok(json!("not the declared output")));
    assert!(
        call(&registry, export()).await.is_ok(),
        "no output schema declared"
    );
}

#[tokio::test]
async fn a_server_approval_demand_becomes_a_confirmation_of_origin_server() {
    let backend = FakeBackend::agreeing();
    // The backend demands approval unless the call carries evidence.
    backend.reply(|call| match &call.evidence {
        Some(_) => Ok(json!({"exported": true})),
        None => Err(ProcedureError::ApprovalRequired {
            summary: Some("Export the weekly report to all customers".into()),
        }),
    });
    let registry = registry_with(&backend);
    let fields = ExportReport::fields();
    let _mounted = registry
        .mounting(Arc::new(Screen::default()))
        .procedure(
            ProcedureRef::<ExportReport>::new()
                .bind(fields.report_id, || "weekly".to_owned())
                .bind(fields.format, || "csv".to_owned()),
        )
        .mount()
        .unwrap();
    let export = || {
        Invocation::new(EXPORT)
            .input(json!({}))
            .invocation_id("exp-1")
    };
    let asked = call(&registry, export()).await;
    let error = asked.error().unwrap();
    assert_eq!(error.code(), ErrorCode::ConfirmationRequired);
    assert_eq!(error.detail("origin"), Some(&json!("server")));
    assert_eq!(
        error.detail("summary"),
        Some(&json!("Export the weekly report to all customers"))
    );
    let id = confirmation_id(&asked);
    assert_eq!(registry.confirmations().pending()[0].origin, "server");
    registry.confirmations().approve_id(&id).unwrap();
    let done = call(&registry, export().confirmation(&id)).await;
    assert_eq!(done.output(), Some(&json!({"exported": true})));
    let evidence: Vec<Option<String>> = backend
        .calls
        .lock()
        .unwrap()
        .iter()
        .map(|call| call.evidence.as_ref().map(|e| e.id.clone()))
        .collect();
    assert_eq!(evidence, [None, Some(id.clone())]);
    // Single use, as any evidence.
    let replay = call(
        &registry,
        Invocation::new(EXPORT).input(json!({})).confirmation(&id),
    )
    .await;
    assert_eq!(
        replay.error().unwrap().detail("reason"),
        Some(&json!("consumed"))
    );
}

#[tokio::test]
async fn client_confirmation_evidence_is_forwarded_to_the_backend() {
    let backend = FakeBackend::agreeing();
    let registry = registry_with(&backend);
    let screen = Arc::new(Screen::default());
    screen.select(&["d1"]);
    let _mounted = mount_screen(&registry, &screen);
    let id = confirmation_id(&call(&registry, disable()).await);
    registry.confirmations().approve_id(&id).unwrap();
    assert!(call(&registry, disable().confirmation(&id)).await.is_ok());
    let calls = backend.calls.lock().unwrap();
    let evidence = calls[0].evidence.as_ref().unwrap();
    assert_eq!(evidence.id, id);
    assert!(!evidence.approved_at.is_empty());
}

// ---------------------------------------------------------------------------
// Concurrency and timeouts

#[tokio::test(start_paused = true)]
async fn a_view_action_is_never_blocked_by_an_in_flight_domain_call() {
    let backend = FakeBackend::agreeing();
    backend.reply(|_| Ok(json!({"ok": true})));
    backend.hold();
    let registry = registry_with(&backend);
    let screen = Arc::new(Screen::default());
    let fields = ExportReport::fields();
    let _mounted = registry
        .mounting(Arc::clone(&screen))
        .procedure(
            ProcedureRef::<ExportReport>::new()
                .bind(fields.report_id, || "weekly".to_owned())
                .bind(fields.format, || "csv".to_owned())
                .queue_depth(1),
        )
        .mount()
        .unwrap();
    let export = || Invocation::new(EXPORT).input(json!({}));
    let spawn = |registry: &Registry| {
        let registry = registry.clone();
        tokio::spawn(async move { call(&registry, export()).await })
    };
    let first = spawn(&registry);
    settle_tasks().await;
    assert_eq!(backend.inputs().len(), 1);
    // The component's own action runs at once.
    let view = call(&registry, Invocation::new("view:test.screen.clear")).await;
    assert!(view.is_ok(), "{view:?}");
    // The reference has its own queue: one waits, the next overflows.
    let second = spawn(&registry);
    settle_tasks().await;
    let third = call(&registry, export()).await;
    assert_eq!(
        third.error().unwrap().detail("reason"),
        Some(&json!("queue-full"))
    );
    assert_eq!(backend.inputs().len(), 1, "the second call waits its turn");
    backend.release();
    assert!(first.await.unwrap().is_ok());
    assert!(second.await.unwrap().is_ok());
    assert_eq!(backend.inputs().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn procedures_time_out_after_thirty_seconds_by_default_and_cancel_the_backend_call() {
    let backend = FakeBackend::agreeing();
    backend.reply(|_| Ok(json!({"ok": true})));
    backend.hold();
    let registry = registry_with(&backend);
    let fields = ExportReport::fields();
    let _mounted = registry
        .mounting(Arc::new(Screen::default()))
        .procedure(
            ProcedureRef::<ExportReport>::new()
                .bind(fields.report_id, || "weekly".to_owned())
                .bind(fields.format, || "csv".to_owned()),
        )
        .mount()
        .unwrap();
    let started = tokio::time::Instant::now();
    let result = call(&registry, Invocation::new(EXPORT).input(json!({}))).await;
    let error = result.error().unwrap();
    assert_eq!(error.code(), ErrorCode::Timeout);
    assert_eq!(error.detail("timeoutMs"), Some(&json!(30_000)));
    assert_eq!(
        error.retry(),
        Retry::No,
        "server-mutation is not idempotent"
    );
    assert_eq!(started.elapsed(), Duration::from_secs(30));
    assert!(backend.calls.lock().unwrap()[0].cancellation.is_cancelled());
    assert_eq!(
        backend.calls.lock().unwrap()[0].timeout,
        Duration::from_secs(30)
    );
}

#[tokio::test]
async fn explain_attributes_reference_votes_like_the_snapshot_composes_them() {
    use agent_surface::explain::{Outcome, explain_surface};
    let backend = FakeBackend::agreeing();
    let registry = Registry::builder()
        .host_context(|| HostContext::new().with("user", json!({"id": "v", "permissions": []})))
        .build();
    registry.set_procedure_executor(Some(Arc::clone(&backend) as Arc<dyn ProcedureExecutor>));
    let screen = Arc::new(Screen::default());
    let _mounted = registry
        .mounting(Arc::clone(&screen))
        .procedure(disable_ref(&screen).policy(policy::has_permission("devices:write")))
        .mount()
        .unwrap();
    let explanation = explain_surface(&registry, &SnapshotOptions::default());
    let reference = &explanation.components[0].procedures[0];
    assert_eq!(reference.capability_id, DISABLE);
    assert_eq!(reference.outcome, Outcome::Hide);
    assert_eq!(reference.votes[0].policy, "hasPermission(devices:write)");
    assert!(!reference.availability.available, "nothing is selected");
    assert!(
        registry
            .snapshot(&SnapshotOptions::default())
            .procedures()
            .is_empty()
    );
}

#[tokio::test]
async fn unmount_drops_the_references_closures() {
    let backend = FakeBackend::agreeing();
    let registry = registry_with(&backend);
    let screen = Arc::new(Screen::default());
    let mounted = mount_screen(&registry, &screen);
    // The component, the binding, `when` and `describe` each hold the screen.
    assert_eq!(Arc::strong_count(&screen), 5);
    let snapshot = registry.snapshot(&SnapshotOptions::default());
    drop(mounted);
    // Even with a snapshot still holding the registration.
    assert_eq!(Arc::strong_count(&screen), 1);
    drop(snapshot);
}

/// Mounts `screen` with a reference whose `when` unmounts it (a route
/// change landing during the availability check) and then answers
/// `available`.
fn mounted_unmounting_in_when(
    registry: &Registry,
    screen: &Arc<Screen>,
    available: bool,
) -> Arc<Mutex<Option<agent_surface::Mounted>>> {
    let handle: Arc<Mutex<Option<agent_surface::Mounted>>> = Arc::default();
    let slot = Arc::clone(&handle);
    let bound = Arc::clone(screen);
    let mounted = registry
        .mounting(Arc::clone(screen))
        .procedure(
            ProcedureRef::<DisableDevices>::new()
                .bind(DisableDevices::fields().device_ids, move || {
                    bound.selected()
                })
                .when(move || {
                    drop(slot.lock().unwrap().take());
                    available
                }),
        )
        .mount()
        .unwrap();
    *handle.lock().unwrap() = Some(mounted);
    handle
}

#[tokio::test]
async fn as_life_001_a_procedure_call_whose_mount_goes_during_its_checks_settles_unmounted() {
    for available in [true, false] {
        let backend = FakeBackend::agreeing();
        let registry = registry_with(&backend);
        let screen = Arc::new(Screen::default());
        screen.select(&["d1"]);
        let _handle = mounted_unmounting_in_when(&registry, &screen, available);
        let result = call(
            &registry,
            Invocation::new("domain:test.devices.disable").input(json!({})),
        )
        .await;
        assert_eq!(
            code(&result),
            Some(ErrorCode::ComponentUnmounted),
            "when → {available}: {result:?}"
        );
        assert!(backend.calls.lock().unwrap().is_empty());
        assert!(registry.confirmations().pending().is_empty());
    }
}
