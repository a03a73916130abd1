//! Hidden is nonexistent, on every path (AS-POLICY-002, AS-POLICY-003,
//! AS-META-004, AS-STALE-001): for a consumer that discovery hides a
//! component from, every request shape — plain, per instance, with a forged
//! or tombstoned registration id, with a stale version hint, with the wrong
//! meta verb, ambiguous, after unmount — answers exactly as it does for a
//! component that was never mounted: same code, details and retry hint,
//! through `Registry::invoke` and the toolset's direct and meta modes. None
//! of the hidden component's code (its `when` predicate) runs, so it cannot
//! be told apart by timing either.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use agent_surface::policy::{Decision, Policy, PolicyContext};
use agent_surface::prelude::*;
use agent_surface::registry::Registry;
use agent_surface::toolset::{ACT, Mode, READ, Toolset, Topology};
use serde_json::{Value, json};

use crate::fixtures::consumer;

/// Hides `test.secret` and `test.ghost` from the consumer `outsider`.
struct HideFromOutsiders;

impl Policy for HideFromOutsiders {
    fn name(&self) -> &str {
        "hideFromOutsiders"
    }
    fn on_discovery(&self, ctx: &PolicyContext<'_>) -> Decision {
        let secret = ctx
            .capability_id()
            .as_str()
            .starts_with("view:test.secret.")
            || ctx.capability_id().as_str().starts_with("view:test.ghost.");
        if secret && ctx.consumer().id() == "outsider" {
            Decision::Hide
        } else {
            Decision::Expose
        }
    }
}

/// A component the outsider must not learn exists.
pub(crate) struct Secret {
    predicate_runs: Arc<AtomicUsize>,
}

/// Nothing.
#[agent_schema]
pub(crate) struct Nothing {
    /// Unused.
    #[agent_schema(unbounded)]
    pub(crate) note: Option<String>,
}

/// A vault.
#[agent_component(type = "test.secret")]
impl Secret {
    /// What the vault holds.
    #[observation(when = slow_check)]
    fn contents(&self) -> Nothing {
        Nothing { note: None }
    }

    /// Destroys the vault.
    #[action(effect = "local-state", confirmation = "required", when = slow_check)]
    fn wipe(&self, input: Nothing) {
        let _ = input;
    }

    /// A slow predicate: if it ran for hidden calls they would be slower.
    fn slow_check(&self) -> bool {
        self.predicate_runs.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(30));
        true
    }
}

/// What the outsider sees of a result: the error, without the capability
/// id it asked for (which differs by construction).
fn seen(result: &InvocationResult) -> Value {
    let mut value = serde_json::to_value(result).unwrap();
    let object = value.as_object_mut().unwrap();
    object.remove("capabilityId");
    object.remove("invocationId");
    value
}

struct World {
    registry: Registry,
    predicate_runs: Arc<AtomicUsize>,
    /// A registration id of the secret component that was unmounted.
    tombstoned: String,
    /// The live secret registrations (kept mounted).
    _live: Vec<Mounted>,
}

fn world() -> World {
    let registry = Registry::builder().policy(HideFromOutsiders).build();
    let predicate_runs = Arc::new(AtomicUsize::new(0));
    let mount = |instance: &str| {
        registry
            .mount_instance(
                Arc::new(Secret {
                    predicate_runs: Arc::clone(&predicate_runs),
                }),
                instance,
            )
            .unwrap()
    };
    let gone = mount("c");
    let tombstoned = gone.registration_id().to_owned();
    drop(gone);
    let live = vec![mount("a"), mount("b")];
    // Mounting evaluates predicates once (the baseline `invalidate`
    // compares against); from here on, count only what calls cause.
    predicate_runs.store(0, Ordering::SeqCst);
    World {
        registry,
        predicate_runs,
        tombstoned,
        _live: live,
    }
}

/// Every request shape, built for a capability name of component `ty`.
fn shapes(ty: &str, tombstoned: &str) -> Vec<(&'static str, Invocation)> {
    let wipe = format!("view:{ty}.wipe");
    let read = format!("view:{ty}.contents");
    let input = json!({});
    vec![
        ("plain", Invocation::new(&wipe).input(input.clone())),
        ("observation", Invocation::new(&read)),
        (
            "instance",
            Invocation::new(&wipe).instance("a").input(input.clone()),
        ),
        (
            "forged registration",
            Invocation::new(&wipe)
                .registration("reg_forged_0000000000")
                .input(input.clone()),
        ),
        (
            "forged registration + instance",
            Invocation::new(&wipe)
                .instance("a")
                .registration("reg_forged_0000000000")
                .input(input.clone()),
        ),
        (
            "tombstoned registration",
            Invocation::new(&wipe)
                .registration(tombstoned)
                .input(input.clone()),
        ),
        (
            "stale version hint",
            Invocation::new(&wipe)
                .instance("a")
                .surface_version("0")
                .input(input.clone()),
        ),
        (
            "with an invocation id",
            Invocation::new(&wipe)
                .instance("b")
                .invocation_id(format!("probe-{ty}"))
                .input(input.clone()),
        ),
        (
            "confirmation evidence",
            Invocation::new(&wipe)
                .instance("a")
                .confirmation("cnf_0000000000000000")
                .input(input),
        ),
    ]
}

#[tokio::test]
async fn as_policy_003_hidden_answers_as_nonexistent_through_invoke() {
    let world = world();
    let outsider = || InvokeOptions::consumer(consumer("outsider"));
    for ((name, hidden), (_, ghost)) in shapes("test.secret", &world.tombstoned)
        .into_iter()
        .zip(shapes("test.ghost", &world.tombstoned))
    {
        let hidden = world.registry.invoke(hidden, outsider()).await;
        let ghost = world.registry.invoke(ghost, outsider()).await;
        assert_eq!(seen(&hidden), seen(&ghost), "{name}");
        assert!(!hidden.is_ok(), "{name}");
    }
    // The insider sees the component (and the ambiguity it has).
    let insider = world
        .registry
        .invoke(
            Invocation::new("view:test.secret.wipe").input(json!({})),
            InvokeOptions::consumer(consumer("insider")),
        )
        .await;
    assert_eq!(
        insider.error().map(ErrorPayload::code),
        Some(ErrorCode::AmbiguousInstance)
    );
    assert_eq!(
        world.predicate_runs.load(Ordering::SeqCst),
        0,
        "no predicate of a hidden component ran"
    );
}

#[tokio::test]
async fn as_policy_003_ambiguity_counts_only_what_the_consumer_sees() {
    let registry = Registry::builder().policy(HideFromOutsiders).build();
    let runs = Arc::new(AtomicUsize::new(0));
    let _a = registry
        .mount_instance(
            Arc::new(Secret {
                predicate_runs: Arc::clone(&runs),
            }),
            "a",
        )
        .unwrap();
    let _b = registry
        .mount_instance(
            Arc::new(Secret {
                predicate_runs: Arc::clone(&runs),
            }),
            "b",
        )
        .unwrap();
    runs.store(0, Ordering::SeqCst);
    let hidden = registry
        .invoke(
            Invocation::new("view:test.secret.wipe").input(json!({})),
            InvokeOptions::consumer(consumer("outsider")),
        )
        .await;
    assert_eq!(
        hidden.error().map(ErrorPayload::code),
        Some(ErrorCode::CapabilityNotFound)
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

fn meta(registry: &Registry) -> Toolset {
    Toolset::builder(registry)
        .consumer(consumer("outsider"))
        .mode(Mode::Meta)
        .topology(Topology::Remote)
        .build()
        .unwrap()
}

fn direct(registry: &Registry) -> Toolset {
    Toolset::builder(registry)
        .consumer(consumer("outsider"))
        .topology(Topology::Remote)
        .build()
        .unwrap()
}

#[tokio::test]
async fn as_meta_004_hidden_answers_as_nonexistent_through_the_toolset() {
    let world = world();
    let meta = meta(&world.registry);
    let envelopes = |ty: &str| {
        vec![
            (
                ACT,
                json!({"capabilityId": format!("view:{ty}.wipe"), "input": {}}),
            ),
            // The wrong verb: an action read with surface_read.
            (READ, json!({"capabilityId": format!("view:{ty}.wipe")})),
            (
                READ,
                json!({"capabilityId": format!("view:{ty}.contents"), "instanceId": "a"}),
            ),
            (
                ACT,
                json!({"capabilityId": format!("view:{ty}.wipe"), "instanceId": "a",
                       "registrationId": "reg_forged_0000000000", "input": {}}),
            ),
            (
                ACT,
                json!({"capabilityId": format!("view:{ty}.wipe"), "instanceId": "a",
                       "surfaceVersion": "0", "input": {}}),
            ),
            (
                ACT,
                json!({"capabilityId": format!("view:{ty}.wipe"),
                       "registrationId": world.tombstoned, "input": {}}),
            ),
        ]
    };
    for ((verb, hidden), (_, ghost)) in envelopes("test.secret")
        .into_iter()
        .zip(envelopes("test.ghost"))
    {
        let label = hidden.to_string();
        let hidden = meta.execute(verb, hidden, None).await;
        let ghost = meta.execute(verb, ghost, None).await;
        assert_eq!(seen(&hidden), seen(&ghost), "{verb} {label}");
    }
    // Direct mode lists no tool for the hidden component; its would-be
    // names answer like any unknown name.
    let direct = direct(&world.registry);
    assert!(direct.tools().iter().all(|t| !t.name().contains("secret")));
    let hidden = direct
        .execute("view_test_secret__wipe_at_a", json!({}), None)
        .await;
    let ghost = direct
        .execute("view_test_ghost__wipe_at_a", json!({}), None)
        .await;
    assert_eq!(seen(&hidden), seen(&ghost));
    assert_eq!(world.predicate_runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn as_policy_003_hidden_calls_take_no_longer_than_nonexistent_ones() {
    // The hidden component's predicate sleeps 30 ms; if it ran, hidden
    // calls would be at least that much slower.
    let world = world();
    let outsider = || InvokeOptions::consumer(consumer("outsider"));
    let mut hidden = Vec::new();
    let mut ghost = Vec::new();
    for _ in 0..15 {
        let started = Instant::now();
        let _ = world
            .registry
            .invoke(
                Invocation::new("view:test.secret.contents").instance("a"),
                outsider(),
            )
            .await;
        hidden.push(started.elapsed());
        let started = Instant::now();
        let _ = world
            .registry
            .invoke(
                Invocation::new("view:test.ghost.contents").instance("a"),
                outsider(),
            )
            .await;
        ghost.push(started.elapsed());
    }
    hidden.sort();
    ghost.sort();
    let (hidden, ghost) = (hidden[hidden.len() / 2], ghost[ghost.len() / 2]);
    assert!(
        hidden < ghost + Duration::from_millis(15),
        "hidden median {hidden:?} vs nonexistent median {ghost:?}"
    );
    assert_eq!(world.predicate_runs.load(Ordering::SeqCst), 0);
}

/// A registry whose only user may read devices but not write them, with a
/// screen referencing `domain:test.devices.disable` behind
/// `has_permission("devices:write")` (so the reference is hidden), and a
/// tombstoned screen.
fn domain_world() -> (Registry, Vec<Mounted>, String) {
    use crate::procedures::{FakeBackend, Screen, disable_ref};
    let backend = FakeBackend::agreeing();
    let registry = Registry::builder()
        .host_context(|| {
            HostContext::new().with("user", json!({"id": "u", "permissions": ["devices:read"]}))
        })
        .build();
    registry.set_procedure_executor(Some(
        Arc::clone(&backend) as Arc<dyn agent_surface::procedure::ProcedureExecutor>
    ));
    let mount = |instance: &str| {
        let screen = Arc::new(Screen::default());
        screen.select(&["d1"]);
        registry
            .mounting(Arc::clone(&screen))
            .instance(instance)
            .procedure(
                disable_ref(&screen).policy(agent_surface::policy::has_permission("devices:write")),
            )
            .mount()
            .unwrap()
    };
    let gone = mount("old");
    let tombstoned = gone.registration_id().to_owned();
    drop(gone);
    let live = vec![mount("main")];
    (registry, live, tombstoned)
}

fn domain_shapes(id: &str, tombstoned: &str) -> Vec<(&'static str, Invocation)> {
    let call = || Invocation::new(id).input(json!({}));
    vec![
        ("plain", call()),
        ("instance", call().instance("main")),
        (
            "forged registration",
            call().registration("reg_forged_0000000000"),
        ),
        ("tombstoned registration", call().registration(tombstoned)),
        ("stale version hint", call().surface_version("0")),
        (
            "confirmation evidence",
            call().confirmation("cnf_0000000000000000"),
        ),
    ]
}

#[tokio::test]
async fn as_policy_003_hidden_procedures_answer_as_nonexistent_ones() {
    let (registry, _live, tombstoned) = domain_world();
    for ((name, hidden), (_, ghost)) in domain_shapes("domain:test.devices.disable", &tombstoned)
        .into_iter()
        .zip(domain_shapes("domain:test.ghost.run", &tombstoned))
    {
        let hidden = registry.invoke(hidden, InvokeOptions::default()).await;
        let ghost = registry.invoke(ghost, InvokeOptions::default()).await;
        assert_eq!(seen(&hidden), seen(&ghost), "{name}");
    }
}

#[tokio::test]
async fn as_meta_001_the_scope_floor_filters_procedures_before_any_error() {
    use crate::procedures::{Drawer, FakeBackend, Screen, disable_ref, registry_with};
    let backend = FakeBackend::agreeing();
    let registry = registry_with(&backend);
    let screen = Arc::new(Screen::default());
    screen.select(&["d1"]);
    let _screen = registry
        .mounting(Arc::clone(&screen))
        .procedure(disable_ref(&screen))
        .mount()
        .unwrap();
    let _drawer = registry
        .mounting(Arc::new(Drawer))
        .procedure(disable_ref(&screen))
        .mount()
        .unwrap();
    // A toolset floored to another part of the app: both references are
    // out of scope, so no shape of the call learns anything about them.
    let floored = Toolset::builder(&registry)
        .consumer(consumer("agent"))
        .mode(Mode::Meta)
        .topology(Topology::Remote)
        .scope(["test.elsewhere"])
        .build()
        .unwrap();
    for envelope in [
        json!({"capabilityId": "domain:test.devices.disable", "input": {}}),
        json!({"capabilityId": "domain:test.devices.disable", "input": {},
               "registrationId": "reg_forged_0000000000"}),
        json!({"capabilityId": "domain:test.devices.disable", "input": {}, "surfaceVersion": "0"}),
    ] {
        let ghost = {
            let mut ghost = envelope.clone();
            ghost["capabilityId"] = json!("domain:test.ghost.run");
            ghost
        };
        let label = envelope.to_string();
        let hidden = floored.execute(ACT, envelope, None).await;
        let ghost = floored.execute(ACT, ghost, None).await;
        assert_eq!(seen(&hidden), seen(&ghost), "{label}");
        assert!(
            hidden
                .error()
                .is_some_and(|e| e.detail("liveRegistrationId").is_none()),
            "{label}"
        );
    }
}

#[test]
fn as_policy_003_a_hidden_reference_when_never_runs_in_snapshots_or_tools() {
    use crate::procedures::{DisableDevices, FakeBackend, Screen};
    let registry = Registry::builder()
        .host_context(|| {
            HostContext::new().with("user", json!({"id": "u", "permissions": ["devices:read"]}))
        })
        .build();
    registry.set_procedure_executor(Some(
        FakeBackend::agreeing() as Arc<dyn agent_surface::procedure::ProcedureExecutor>
    ));
    let runs = Arc::new(AtomicUsize::new(0));
    let _mounted = registry
        .mounting(Arc::new(Screen::default()))
        .procedure(
            agent_surface::procedure::ProcedureRef::<DisableDevices>::new()
                .bind(DisableDevices::fields().device_ids, || {
                    vec!["d1".to_owned()]
                })
                .when({
                    let runs = Arc::clone(&runs);
                    move || {
                        runs.fetch_add(1, Ordering::SeqCst);
                        true
                    }
                })
                .policy(agent_surface::policy::has_permission("devices:write")),
        )
        .mount()
        .unwrap();
    let before = runs.load(Ordering::SeqCst);
    let snapshot = registry.snapshot(&SnapshotOptions::default());
    assert!(snapshot.procedures().is_empty());
    let _ = direct(&registry).tools();
    assert_eq!(runs.load(Ordering::SeqCst), before);
}
