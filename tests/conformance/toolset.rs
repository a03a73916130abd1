//! The embedded toolset: AS-TOPO-001..003, AS-ADAPTER-001/002/004/005,
//! AS-META-001..008, AS-CACHE-001..003.

use crate::fixtures::AnswerById;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agent_surface::error::Retry;
use agent_surface::prelude::*;
use agent_surface::registry::AvailabilityOverride;
use agent_surface::snapshot::Budget;
use agent_surface::toolset::{
    ACT, ConfirmationMode, DISCOVER, Mode, READ, Tool, Toolset, ToolsetError, Topology,
    meta_block_size, render,
};
use serde_json::{Value, json};

use crate::fixtures::{Probe, consumer, registry, settle_tasks};
use crate::procedures::{FakeBackend, Screen, mount_screen, registry_with};

fn direct(registry: &Registry) -> Toolset {
    Toolset::builder(registry)
        .consumer(consumer("agent"))
        .topology(Topology::Remote)
        .build()
        .unwrap()
}

fn meta(registry: &Registry) -> Toolset {
    Toolset::builder(registry)
        .consumer(consumer("agent"))
        .mode(Mode::Meta)
        .topology(Topology::Remote)
        .build()
        .unwrap()
}

/// An embedded (wait-mode) toolset over a mounted probe.
/// A registry with one probe mounted, and the toolset `build` makes over it.
fn with_probe(build: fn(&Registry) -> Toolset) -> (Registry, Arc<Probe>, Mounted, Toolset) {
    let registry = registry();
    let probe = Probe::new();
    let mounted = registry.mount(probe.clone()).unwrap();
    let toolset = build(&registry);
    (registry, probe, mounted, toolset)
}

fn embedded() -> (Registry, Arc<Probe>, Mounted, Toolset) {
    with_probe(|registry| {
        Toolset::builder(registry)
            .topology(Topology::Embedded)
            .build()
            .unwrap()
    })
}

/// Calls `guarded` in the background (it waits for the user).
fn spawn_guarded(
    toolset: &Toolset,
    id: &str,
    call_id: Option<&'static str>,
) -> tokio::task::JoinHandle<InvocationResult> {
    let name = name_of(toolset, "view:test.probe.guarded");
    let toolset = toolset.clone();
    let input = json!({"ids": [id]});
    tokio::spawn(async move { toolset.execute(&name, input, call_id).await })
}

fn name_of(toolset: &Toolset, capability_id: &str) -> String {
    toolset
        .tool_for(capability_id, None)
        .map(|tool| tool.name().to_owned())
        .unwrap_or_default()
}

fn definitions(tools: &[Tool]) -> String {
    serde_json::to_string(&render::anthropic_tools(tools)).unwrap()
}

// ---------------------------------------------------------------------------
// Topology

#[test]
fn as_topo_001_a_toolset_without_topology_or_confirmation_mode_is_refused() {
    let registry = registry();
    let err = Toolset::builder(&registry).build().unwrap_err();
    assert_eq!(err, ToolsetError::TopologyRequired);
    assert!(err.to_string().contains("topology"));
}

#[test]
fn as_topo_002_topology_defaults_and_explicit_override() {
    let registry = registry();
    let mode = |builder: agent_surface::toolset::ToolsetBuilder| {
        builder.build().unwrap().confirmation_mode()
    };
    assert_eq!(
        mode(Toolset::builder(&registry).topology(Topology::Embedded)),
        ConfirmationMode::Wait
    );
    assert_eq!(
        mode(Toolset::builder(&registry).topology(Topology::Remote)),
        ConfirmationMode::TwoPhase
    );
    assert_eq!(
        mode(
            Toolset::builder(&registry)
                .topology(Topology::Remote)
                .confirmations(ConfirmationMode::Wait)
        ),
        ConfirmationMode::Wait
    );
    assert_eq!(
        mode(Toolset::builder(&registry).confirmations(ConfirmationMode::TwoPhase)),
        ConfirmationMode::TwoPhase
    );
}

#[tokio::test(start_paused = true)]
async fn as_topo_002_embedded_loops_wait_for_the_user_and_see_one_result() {
    let (registry, probe, _mounted, toolset) = embedded();
    let call = spawn_guarded(&toolset, "d1", Some("toolu_1"));
    settle_tasks().await;
    let pending = registry.confirmations().pending();
    assert_eq!(pending.len(), 1);
    assert_eq!(probe.runs(), 0);
    registry
        .confirmations()
        .approve_id(&pending[0].confirmation_id)
        .unwrap();
    let result = call.await.unwrap();
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(result.invocation_id(), "toolu_1");
    assert_eq!(probe.runs(), 1);

    // A denial comes back as the final result, not retried.
    let call = spawn_guarded(&toolset, "d2", None);
    settle_tasks().await;
    let id = registry.confirmations().pending()[0]
        .confirmation_id
        .clone();
    registry.confirmations().deny_id(&id).unwrap();
    let denied = call.await.unwrap();
    let error = denied.error().unwrap();
    assert_eq!(error.code(), ErrorCode::ConfirmationInvalid);
    assert_eq!(error.detail("reason"), Some(&json!("denied")));
    assert_eq!(probe.runs(), 1);
}

#[tokio::test(start_paused = true)]
async fn as_topo_003_dispose_settles_in_flight_confirmation_waits() {
    let (registry, probe, _mounted, toolset) = embedded();
    let call = spawn_guarded(&toolset, "d1", Some("t-9"));
    settle_tasks().await;
    assert_eq!(registry.confirmations().pending().len(), 1);
    toolset.dispose();
    let result = call.await.unwrap();
    assert_eq!(result.error().unwrap().code(), ErrorCode::Cancelled);
    assert_eq!(probe.runs(), 0);
    // Later calls settle at once.
    let late = toolset.execute("anything", json!({}), None).await;
    assert_eq!(late.error().unwrap().code(), ErrorCode::Cancelled);
}

// ---------------------------------------------------------------------------
// Direct mode

#[tokio::test]
async fn as_adapter_001_tool_call_ids_registration_ids_versions_and_unique_names() {
    let (registry, probe, first, toolset) = with_probe(direct);
    let tools = toolset.tools();
    let names: Vec<&str> = tools.iter().map(Tool::name).collect();
    assert!(names.contains(&"view_test__probe__poke"), "{names:?}");
    let mut unique = names.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), names.len());
    let poke = tools
        .iter()
        .find(|tool| tool.name() == "view_test__probe__poke")
        .unwrap();
    let target = poke.target().unwrap();
    assert_eq!(target.registration_id, first.registration_id());
    assert_eq!(target.surface_version, registry.version());
    let wire = toolset.wire_names();
    let entry = wire
        .iter()
        .find(|entry| entry.name == "view_test__probe__poke")
        .unwrap();
    assert_eq!(entry.capability_id, "view:test.probe.poke");
    assert_eq!(entry.instance_id, target.instance_id);
    assert_eq!(wire.len(), tools.len());

    // The tool-call id is the invocation id: a transport retry replays.
    let once = toolset
        .execute(
            "view_test__probe__poke",
            json!({"ids": ["a"]}),
            Some("call_7"),
        )
        .await;
    let again = toolset
        .execute(
            "view_test__probe__poke",
            json!({"ids": ["a"]}),
            Some("call_7"),
        )
        .await;
    assert_eq!(once.invocation_id(), "call_7");
    assert_eq!(once, again);
    assert_eq!(probe.runs(), 1);

    // The registration id travels: after a remount the old catalog is stale.
    drop(first);
    let _second = registry.mount(probe.clone()).unwrap();
    let stale = toolset
        .execute("view_test__probe__poke", json!({"ids": ["b"]}), None)
        .await;
    assert_eq!(
        stale.error().unwrap().detail("reason"),
        Some(&json!("registration-replaced"))
    );
    // Refreshed per version: the new catalog targets the new registration.
    let tools = toolset.tools();
    assert!(tools.iter().any(|t| t.name() == "view_test__probe__poke"));
    let refreshed = toolset
        .execute("view_test__probe__poke", json!({"ids": ["b"]}), None)
        .await;
    assert!(refreshed.is_ok(), "{refreshed:?}");

    // Several instances: `_at_<instance>` names, each targeting its own.
    let _other = registry.mount_instance(Probe::new(), "second").unwrap();
    let tools = toolset.tools();
    let qualified: Vec<&str> = tools
        .iter()
        .map(Tool::name)
        .filter(|n| n.starts_with("view_test__probe__poke"))
        .collect();
    assert_eq!(
        qualified,
        [
            "view_test__probe__poke_at_default",
            "view_test__probe__poke_at_second"
        ]
    );
    assert!(tools.iter().all(|tool| tool.name().len() <= 64));
    assert_eq!(
        toolset
            .execute("view_test__probe__poke", json!({"ids": ["c"]}), None)
            .await
            .error()
            .unwrap()
            .code(),
        ErrorCode::CapabilityNotFound,
        "unqualified names are gone once two instances are live"
    );
}

#[tokio::test]
async fn as_adapter_001_a_call_without_a_tool_call_id_is_remembered_by_nobody() {
    let (registry, probe, _mounted, toolset) = with_probe(direct);
    // Nobody can retry or join a call that came without an id: the
    // pipeline keeps nothing of it, however many there are.
    for n in 0..5 {
        let result = toolset
            .execute(
                "view_test__probe__poke",
                json!({"ids": [n.to_string()]}),
                None,
            )
            .await;
        assert!(result.is_ok(), "{result:?}");
        assert!(!result.invocation_id().is_empty());
    }
    assert_eq!(probe.runs(), 5);
    assert_eq!(registry.dedupe_len(), 0);
    // With an id, the call is kept for its retries.
    let with_id = || {
        toolset.execute(
            "view_test__probe__poke",
            json!({"ids": ["x"]}),
            Some("call_9"),
        )
    };
    let once = with_id().await;
    assert_eq!(registry.dedupe_len(), 1);
    let again = with_id().await;
    assert_eq!(once, again);
    assert_eq!(probe.runs(), 6);

    // An embedded loop's call may wait for the person, and its retry
    // reuses the attempt's id as its key: that id is minted before the
    // first attempt, and kept.
    let (registry, probe, _mounted, toolset) = embedded();
    let name = name_of(&toolset, "view:test.probe.poke");
    let result = toolset.execute(&name, json!({"ids": ["e"]}), None).await;
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(probe.runs(), 1);
    assert_eq!(registry.dedupe_len(), 1);
}

/// An agent that claims, under its own tool-call id, the id an embedded
/// loop will mint for its next call makes that call conflict before the
/// person is asked: nothing waits for an approval that could not run.
#[tokio::test(start_paused = true)]
async fn as_adapter_001_a_claimed_minted_id_conflicts_before_the_person_is_asked() {
    let (registry, _probe, _mounted, toolset) = embedded();
    let poke = name_of(&toolset, "view:test.probe.poke");
    // Minted ids count up: the next one follows this one.
    let seen = registry.mint_invocation_id();
    let next = next_minted(&seen);
    let claimed = toolset
        .execute(&poke, json!({"ids": ["claim"]}), Some(next.as_str()))
        .await;
    assert!(claimed.is_ok(), "{claimed:?}");
    // Had it asked the person, it would still be waiting.
    let guarded = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        spawn_guarded(&toolset, "a", None),
    )
    .await
    .expect("settled without waiting for the person")
    .unwrap();
    assert_eq!(
        guarded.error().map(|error| error.code()),
        Some(ErrorCode::InvocationConflict),
        "{guarded:?}"
    );
    assert!(registry.confirmations().pending().is_empty());
}

/// The id minted after `seen` (`inv_<prefix>_<counter>`, the counter in
/// decimal).
fn next_minted(seen: &str) -> String {
    let (prefix, counter) = seen.rsplit_once('_').unwrap();
    format!("{prefix}_{}", counter.parse::<u64>().unwrap() + 1)
}

#[tokio::test]
async fn as_adapter_002_results_are_relayed_losslessly() {
    let registry = registry();
    let _mounted = registry.mount(Probe::new()).unwrap();
    let toolset = direct(&registry);
    let name = name_of(&toolset, "view:test.probe.poke");
    let through_toolset = toolset
        .execute(&name, json!({"ids": [], "extra": 1}), Some("x1"))
        .await;
    let direct_call = registry
        .invoke(
            Invocation::new("view:test.probe.poke")
                .input(json!({"ids": [], "extra": 1}))
                .invocation_id("x2"),
            InvokeOptions::consumer(consumer("agent")),
        )
        .await;
    assert_eq!(through_toolset.error(), direct_call.error());
    let error = through_toolset.error().unwrap();
    assert_eq!(error.code(), ErrorCode::InvalidInput);
    assert_eq!(error.retry(), Retry::WithChanges);
    // Rendered for providers: flagged as an error, the envelope intact.
    let block = render::anthropic_tool_result("toolu_x1", &through_toolset);
    assert_eq!(block["is_error"], true);
    let text = block["content"][0]["text"].as_str().unwrap();
    let envelope: Value = serde_json::from_str(text).unwrap();
    assert_eq!(envelope["error"], serde_json::to_value(error).unwrap());
    let openai = render::openai_tool_result("call_x1", &through_toolset);
    let envelope: Value = serde_json::from_str(openai["content"].as_str().unwrap()).unwrap();
    assert_eq!(envelope["status"], "error");
    assert_eq!(
        envelope["error"]["details"]["issues"],
        error.detail("issues").unwrap().clone()
    );
    // A success carries its output, without the error flag.
    let ok = toolset
        .execute(&name, json!({"ids": ["a"]}), Some("x3"))
        .await;
    let block = render::anthropic_tool_result("toolu_x3", &ok);
    assert!(block.get("is_error").is_none());
    // Unknown tools are results too, never panics or errors.
    let unknown = toolset.execute("nope", json!({}), None).await;
    assert_eq!(
        unknown.error().unwrap().code(),
        ErrorCode::CapabilityNotFound
    );
}

#[tokio::test]
async fn provider_renderers_produce_the_api_shapes() {
    let registry = registry();
    let _mounted = registry.mount(Probe::new()).unwrap();
    let tools = direct(&registry).tools();
    let anthropic = render::anthropic_tools(&tools);
    let openai = render::openai_tools(&tools);
    let responses = render::openai_responses_tools(&tools);
    for (index, tool) in tools.iter().enumerate() {
        assert_eq!(anthropic[index]["name"], tool.name());
        assert_eq!(anthropic[index]["input_schema"]["type"], "object");
        assert_eq!(openai[index]["type"], "function");
        assert_eq!(openai[index]["function"]["name"], tool.name());
        assert_eq!(
            openai[index]["function"]["parameters"],
            *tool.input_schema()
        );
        assert_eq!(responses[index]["name"], tool.name());
    }
}

// ---------------------------------------------------------------------------
// Caching: definitions stable, state apart

#[tokio::test]
async fn as_cache_001_descriptions_carry_no_live_state() {
    let (_registry, probe, _mounted, toolset) = with_probe(direct);
    let gated = toolset.tool_for("view:test.probe.gated", None).unwrap();
    assert_eq!(
        gated.description(),
        "[view, local-state, confirmation never] Only available while the probe is on."
    );
    probe.on.store(false, Ordering::SeqCst);
    let off = toolset.tool_for("view:test.probe.gated", None);
    let tools = toolset.tools();
    let off_now = tools.iter().find(|t| t.name() == gated.name()).unwrap();
    assert_eq!(off_now.description(), gated.description());
    assert!(!off_now.description().contains("Switch the probe on"));
    assert_eq!(
        off_now.state().unavailable_reason.as_deref(),
        Some("Switch the probe on first")
    );
    drop(off);
}

#[tokio::test]
async fn as_cache_002_definitions_are_byte_identical_when_only_state_changes() {
    let backend = FakeBackend::agreeing();
    let registry = registry_with(&backend);
    let probe = Probe::new();
    let _probe = registry.mount(probe.clone()).unwrap();
    let screen = Arc::new(Screen::default());
    let _screen = mount_screen(&registry, &screen);
    let toolset = direct(&registry);
    let before = toolset.tools();
    probe.on.store(false, Ordering::SeqCst);
    screen.select(&["d1", "d2"]);
    let after = toolset.tools();
    assert_eq!(definitions(&before), definitions(&after));
    assert_ne!(
        before.iter().map(|t| t.state().clone()).collect::<Vec<_>>(),
        after.iter().map(|t| t.state().clone()).collect::<Vec<_>>()
    );
    // The summary hosts render outside the cached block carries the state.
    let summary = render::state_summary(&after);
    assert!(summary.contains("Switch the probe on first"), "{summary}");
    assert!(
        summary.contains("Disables the 2 selected devices"),
        "{summary}"
    );
}

#[tokio::test]
async fn as_cache_003_state_note_carries_the_binding_describe_text() {
    let backend = FakeBackend::agreeing();
    let registry = registry_with(&backend);
    let screen = Arc::new(Screen::default());
    let _screen = mount_screen(&registry, &screen);
    screen.select(&["d1", "d2", "d3"]);
    let toolset = direct(&registry);
    let tool = toolset
        .tool_for("domain:test.devices.disable", None)
        .unwrap();
    assert_eq!(tool.name(), "domain_test__devices__disable");
    assert_eq!(
        tool.state().note.as_deref(),
        Some("Disables the 3 selected devices")
    );
    assert!(!tool.description().contains("selected"));
    assert!(
        tool.description()
            .starts_with("[domain, destructive, confirmation required] ")
    );
    // The agent-facing schema: locked fields removed.
    assert!(tool.input_schema()["properties"].get("deviceIds").is_none());
}

#[tokio::test]
async fn subscribers_hear_every_change_including_state_only_ones() {
    let (registry, probe, mounted, toolset) = with_probe(direct);
    let heard = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let _subscription = toolset.subscribe({
        let heard = Arc::clone(&heard);
        let seen = Arc::clone(&seen);
        move |tools: &[Tool]| {
            heard.fetch_add(1, Ordering::SeqCst);
            seen.lock().unwrap().push(tools.len());
        }
    });
    // A pushed availability change (state only).
    mounted.set_availability("poke", AvailabilityOverride::unavailable("Busy"));
    assert_eq!(heard.load(Ordering::SeqCst), 1);
    // `when` flips without a surface mutation: refresh notices.
    probe.on.store(false, Ordering::SeqCst);
    toolset.refresh();
    assert_eq!(heard.load(Ordering::SeqCst), 2);
    // Nothing changed: nothing heard.
    toolset.refresh();
    mounted.bump_version();
    assert_eq!(heard.load(Ordering::SeqCst), 2);
    // A structural change.
    let _other = registry.mount_instance(Probe::new(), "second").unwrap();
    assert_eq!(heard.load(Ordering::SeqCst), 3);
    toolset.dispose();
    drop(mounted);
    assert_eq!(
        heard.load(Ordering::SeqCst),
        3,
        "disposed toolsets are silent"
    );
}

// ---------------------------------------------------------------------------
// Meta mode

#[tokio::test]
async fn as_meta_005_the_meta_tool_block_does_not_grow_with_the_catalog() {
    let registry = registry();
    let toolset = meta(&registry);
    let empty = definitions(&toolset.tools());
    let size = meta_block_size();
    let _many: Vec<Mounted> = (0..50)
        .map(|i| {
            registry
                .mount_instance(Probe::new(), &format!("p{i}"))
                .unwrap()
        })
        .collect();
    assert_eq!(definitions(&toolset.tools()), empty);
    assert_eq!(meta_block_size(), size);
    let names: Vec<String> = toolset
        .tools()
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    assert_eq!(names, [DISCOVER, READ, ACT]);
}

#[tokio::test]
async fn as_meta_007_each_verb_checks_its_own_envelope_first() {
    let (registry, probe, _mounted, toolset) = with_probe(meta);
    let audit_before = registry.audit_log().len();
    let issues = |result: &InvocationResult| -> Vec<String> {
        let error = result.error().unwrap();
        assert_eq!(error.code(), ErrorCode::InvalidInput);
        error
            .detail("issues")
            .unwrap()
            .as_array()
            .unwrap()
            .iter()
            .map(|issue| issue["path"].as_str().unwrap().to_owned())
            .collect()
    };
    let missing = toolset.execute(ACT, json!({"input": {}}), None).await;
    assert_eq!(issues(&missing), ["/capabilityId"]);
    let unknown = toolset
        .execute(
            ACT,
            json!({"capabilityId": "view:test.probe.poke", "inputs": {}}),
            None,
        )
        .await;
    assert_eq!(issues(&unknown), ["/inputs"]);
    let mistyped = toolset
        .execute(READ, json!({"capabilityId": 7}), None)
        .await;
    assert_eq!(issues(&mistyped), ["/capabilityId"]);
    let bad_scope = toolset
        .execute(DISCOVER, json!({"scope": "test"}), None)
        .await;
    assert_eq!(issues(&bad_scope), ["/scope"]);
    let not_object = toolset.execute(DISCOVER, json!([1]), None).await;
    assert_eq!(issues(&not_object), [""]);
    // None of it reached the pipeline.
    assert_eq!(registry.audit_log().len(), audit_before);
    assert_eq!(probe.runs(), 0);
    // Verbs check what they address: read reads, act acts.
    let read_action = toolset
        .execute(READ, json!({"capabilityId": "view:test.probe.poke"}), None)
        .await;
    assert_eq!(issues(&read_action), ["/capabilityId"]);
    let act_observation = toolset
        .execute(
            ACT,
            json!({"capabilityId": "view:test.probe.read", "input": {}}),
            None,
        )
        .await;
    assert_eq!(issues(&act_observation), ["/capabilityId"]);
    assert_eq!(probe.runs(), 0);
}

#[tokio::test]
async fn as_adapter_004_meta_mode_resolves_exactly_as_direct_mode() {
    let registry = registry();
    let probe = Probe::new();
    let first = registry.mount(probe.clone()).unwrap();
    let second = registry.mount_instance(Probe::new(), "second").unwrap();
    let toolset = meta(&registry);
    let direct = direct(&registry);
    let act = |capability: &str, input: Value| json!({"capabilityId": capability, "input": input});

    // Ambiguity without an instance.
    let ambiguous = toolset
        .execute(
            ACT,
            act("view:test.probe.poke", json!({"ids": ["a"]})),
            None,
        )
        .await;
    assert_eq!(
        ambiguous.error().unwrap().code(),
        ErrorCode::AmbiguousInstance
    );
    // Not found.
    let missing = toolset
        .execute(ACT, act("view:test.nothing.here", json!({})), None)
        .await;
    assert_eq!(
        missing.error().unwrap().code(),
        ErrorCode::CapabilityNotFound
    );
    // Validation, identical to the direct tool's.
    let meta_invalid = toolset
        .execute(ACT, json!({"capabilityId": "view:test.probe.poke", "instanceId": "default", "input": {"ids": []}}), None)
        .await;
    let direct_invalid = direct
        .execute(
            "view_test__probe__poke_at_default",
            json!({"ids": []}),
            None,
        )
        .await;
    assert_eq!(meta_invalid.error(), direct_invalid.error());
    // Confirmation, two-phase.
    let asked = toolset
        .execute(ACT, json!({"capabilityId": "view:test.probe.guarded", "instanceId": "default", "input": {"ids": ["a"]}}), None)
        .await;
    assert_eq!(
        asked.error().unwrap().code(),
        ErrorCode::ConfirmationRequired
    );
    // Reading works and returns the value.
    let read = toolset
        .execute(
            READ,
            json!({"capabilityId": "view:test.probe.read", "instanceId": "second"}),
            None,
        )
        .await;
    assert_eq!(read.output(), Some(&json!({"runs": 0})));
    // Unmounted since discovery: the registration id carried makes it precise.
    let _ = toolset.execute(DISCOVER, json!({}), None).await;
    drop(second);
    let gone = toolset
        .execute(
            READ,
            json!({"capabilityId": "view:test.probe.read", "instanceId": "second"}),
            None,
        )
        .await;
    assert_eq!(gone.error().unwrap().code(), ErrorCode::ComponentUnmounted);
    drop(first);
}

#[tokio::test]
async fn as_meta_004_surface_act_keeps_confirmation_and_staleness_semantics() {
    let (registry, probe, mounted, toolset) = with_probe(meta);
    let guarded = json!({"capabilityId": "view:test.probe.guarded", "input": {"ids": ["a"]}});
    let asked = toolset.execute(ACT, guarded.clone(), Some("m-1")).await;
    let id = asked
        .error()
        .unwrap()
        .detail("confirmationId")
        .unwrap()
        .as_str()
        .unwrap()
        .to_owned();
    // Evidence for another input is a mismatch.
    registry.confirmations().approve_id(&id).unwrap();
    let switched = toolset
        .execute(ACT, json!({"capabilityId": "view:test.probe.guarded", "input": {"ids": ["b"]}, "confirmationId": id}), Some("m-2"))
        .await;
    assert_eq!(
        switched.error().unwrap().detail("reason"),
        Some(&json!("mismatch"))
    );
    assert_eq!(probe.runs(), 0);
    // The same call with the evidence runs once; a replay is consumed.
    let mut approved = guarded.clone();
    approved["confirmationId"] = json!(id);
    assert!(
        toolset
            .execute(ACT, approved.clone(), Some("m-1"))
            .await
            .is_ok()
    );
    let replay = toolset.execute(ACT, approved, Some("m-3")).await;
    assert_eq!(
        replay.error().unwrap().detail("reason"),
        Some(&json!("consumed"))
    );
    assert_eq!(probe.runs(), 1);
    // Staleness: a registration id from before a remount.
    let old = mounted.registration_id().to_owned();
    drop(mounted);
    let _again = registry.mount(probe.clone()).unwrap();
    let stale = toolset
        .execute(ACT, json!({"capabilityId": "view:test.probe.poke", "registrationId": old, "input": {"ids": ["a"]}}), None)
        .await;
    assert_eq!(stale.error().unwrap().code(), ErrorCode::StaleCapability);
}

#[tokio::test]
async fn as_meta_008_json_encoded_inputs_are_repaired_only_into_objects() {
    let (_registry, probe, _mounted, toolset) = with_probe(meta);
    let repaired = toolset
        .execute(
            ACT,
            json!({"capabilityId": "view:test.probe.poke", "input": "{\"ids\": [\"a\"]}"}),
            None,
        )
        .await;
    assert!(repaired.is_ok(), "{repaired:?}");
    assert_eq!(probe.seen.lock().unwrap().clone(), ["a"]);
    // A string that is not an encoded object arrives as it is, and the
    // target's schema rejects it.
    let unparsed = toolset
        .execute(
            ACT,
            json!({"capabilityId": "view:test.probe.poke", "input": "\"a\""}),
            None,
        )
        .await;
    assert_eq!(unparsed.error().unwrap().code(), ErrorCode::InvalidInput);
    let plain = toolset
        .execute(
            ACT,
            json!({"capabilityId": "view:test.probe.poke", "input": "ids=a"}),
            None,
        )
        .await;
    assert_eq!(plain.error().unwrap().code(), ErrorCode::InvalidInput);
    assert_eq!(probe.runs(), 1);
}

fn scoped(registry: &Registry, floor: &[&str]) -> Toolset {
    Toolset::builder(registry)
        .mode(Mode::Meta)
        .topology(Topology::Remote)
        .scope(floor.iter().copied())
        .build()
        .unwrap()
}

fn types(discovered: &InvocationResult) -> Vec<String> {
    discovered.output().unwrap()["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn as_meta_001_and_as_adapter_005_a_requested_scope_narrows_the_floor_never_widens_it() {
    let registry = registry();
    let _probe = registry.mount(Probe::new()).unwrap();
    let _nav = registry.mount(crate::fixtures::Nav::new()).unwrap();
    let toolset = scoped(&registry, &["test.probe"]);
    // No scope: the floor.
    let floor = toolset.execute(DISCOVER, json!({}), None).await;
    assert_eq!(types(&floor), ["test.probe"]);
    // A wider request stays within the floor.
    let wider = toolset
        .execute(DISCOVER, json!({"scope": ["test"]}), None)
        .await;
    assert_eq!(types(&wider), ["test.probe"]);
    assert!(wider.output().unwrap().get("scopeRejected").is_none());
    // Acting outside the floor: the target is not in this surface.
    let outside = toolset
        .execute(
            ACT,
            json!({"capabilityId": "view:test.nav.go", "input": {}}),
            None,
        )
        .await;
    assert_eq!(
        outside.error().unwrap().code(),
        ErrorCode::CapabilityNotFound
    );
    // Without a floor, a requested scope narrows.
    let open = scoped(&registry, &[]);
    let narrowed = open
        .execute(DISCOVER, json!({"scope": ["test.nav"]}), None)
        .await;
    assert_eq!(types(&narrowed), ["test.nav"]);
}

#[tokio::test]
async fn as_meta_002_and_as_meta_006_disjoint_scopes_are_empty_and_marked() {
    let registry = registry();
    let _probe = registry.mount(Probe::new()).unwrap();
    let _nav = registry.mount(crate::fixtures::Nav::new()).unwrap();
    let toolset = scoped(&registry, &["test.probe"]);
    let disjoint = toolset
        .execute(DISCOVER, json!({"scope": ["test.nav"]}), None)
        .await;
    let output = disjoint.output().unwrap();
    assert_eq!(output["components"], json!([]));
    assert_eq!(output["procedures"], json!([]));
    assert_eq!(output["scopeRejected"], json!({"prefixes": ["test.nav"]}));
    // Partly refused: the accepted part is listed, the refused part marked.
    let partly = toolset
        .execute(DISCOVER, json!({"scope": ["test.probe", "test.nav"]}), None)
        .await;
    assert_eq!(types(&partly), ["test.probe"]);
    assert_eq!(
        partly.output().unwrap()["scopeRejected"]["prefixes"],
        json!(["test.nav"])
    );
}

#[tokio::test]
async fn as_meta_003_budget_truncation_is_marked_in_what_the_model_reads() {
    let registry = registry();
    let _many: Vec<Mounted> = (0..5)
        .map(|i| {
            registry
                .mount_instance(Probe::new(), &format!("p{i}"))
                .unwrap()
        })
        .collect();
    let toolset = Toolset::builder(&registry)
        .mode(Mode::Meta)
        .topology(Topology::Remote)
        .budget(Budget::default().max_components(2))
        .build()
        .unwrap();
    let discovered = toolset.execute(DISCOVER, json!({}), None).await;
    let output = discovered.output().unwrap();
    assert_eq!(output["truncated"], json!({"droppedComponents": 3}));
    assert_eq!(output["components"].as_array().unwrap().len(), 2);
    for key in [
        "surfaceId",
        "surfaceVersion",
        "capturedAt",
        "components",
        "procedures",
    ] {
        assert!(output.get(key).is_some(), "{key}");
    }
}

#[tokio::test]
async fn two_phase_direct_tools_retry_by_calling_again_after_approval() {
    let (registry, probe, _mounted, toolset) = with_probe(direct);
    let name = name_of(&toolset, "view:test.probe.guarded");
    let input = json!({"ids": ["a"]});
    let asked = toolset.execute(&name, input.clone(), Some("c1")).await;
    let id = asked
        .error()
        .unwrap()
        .detail("confirmationId")
        .unwrap()
        .clone();
    // Still pending: the same request, the same confirmation.
    let again = toolset.execute(&name, input.clone(), Some("c2")).await;
    assert_eq!(again.error().unwrap().detail("confirmationId"), Some(&id));
    registry
        .confirmations()
        .approve_id(id.as_str().unwrap())
        .unwrap();
    // The model calls the tool again once the user approved.
    let done = toolset.execute(&name, input.clone(), Some("c3")).await;
    assert!(done.is_ok(), "{done:?}");
    assert_eq!(probe.runs(), 1);
    // Other input: a new request, never the approved evidence.
    let other = toolset
        .execute(&name, json!({"ids": ["b"]}), Some("c4"))
        .await;
    assert_ne!(other.error().unwrap().detail("confirmationId"), Some(&id));
    // Done: the next identical call asks again.
    let fresh = toolset.execute(&name, input, Some("c5")).await;
    assert_eq!(
        fresh.error().unwrap().code(),
        ErrorCode::ConfirmationRequired
    );
    assert_ne!(fresh.error().unwrap().detail("confirmationId"), Some(&id));
}

#[tokio::test]
async fn as_meta_006_a_requested_scope_is_bounded_before_it_is_echoed() {
    let registry = registry();
    let _mounted = registry.mount(Probe::new()).unwrap();
    let toolset = Toolset::builder(&registry)
        .consumer(consumer("agent"))
        .mode(Mode::Meta)
        .topology(Topology::Remote)
        .scope(["test.probe"])
        .build()
        .unwrap();
    let many: Vec<String> = (0..2_000).map(|n| format!("{n:0>1000}")).collect();
    let result = toolset
        .execute(DISCOVER, json!({"scope": many}), None)
        .await;
    assert_eq!(
        result.error().map(ErrorPayload::code),
        Some(ErrorCode::InvalidInput)
    );
    assert!(serde_json::to_string(&result).unwrap().len() < 1_024);
    let long = toolset
        .execute(DISCOVER, json!({"scope": ["x".repeat(300)]}), None)
        .await;
    assert_eq!(
        long.error().map(ErrorPayload::code),
        Some(ErrorCode::InvalidInput)
    );
    // Within bounds, rejected prefixes are still echoed.
    let fine = toolset
        .execute(DISCOVER, json!({"scope": ["elsewhere"]}), None)
        .await;
    assert_eq!(
        fine.output().unwrap()["scopeRejected"]["prefixes"],
        json!(["elsewhere"])
    );
}

#[tokio::test]
async fn as_meta_007_a_verb_of_the_wrong_kind_gets_the_toolsets_hint_and_the_core_stays_neutral() {
    let registry = registry();
    let _mounted = registry.mount(Probe::new()).unwrap();
    let meta = meta(&registry);
    let read_an_action = meta
        .execute(READ, json!({"capabilityId": "view:test.probe.poke"}), None)
        .await;
    let text = serde_json::to_string(&read_an_action).unwrap();
    assert!(text.contains("call it with surface_act"), "{text}");
    let act_an_observation = meta
        .execute(
            ACT,
            json!({"capabilityId": "view:test.probe.read", "input": {}}),
            None,
        )
        .await;
    let text = serde_json::to_string(&act_an_observation).unwrap();
    assert!(text.contains("read it with surface_read"), "{text}");
    // The core knows kinds, not verbs.
    let options = InvokeOptions::default().kinds(agent_surface::invoke::Kinds::Observations);
    let core = registry
        .invoke(
            Invocation::new("view:test.probe.poke").input(json!({"ids": ["a"]})),
            options,
        )
        .await;
    let text = serde_json::to_string(&core).unwrap();
    assert_eq!(
        core.error().map(ErrorPayload::code),
        Some(ErrorCode::InvalidInput)
    );
    assert!(
        text.contains("is not an observation") && !text.contains("surface_"),
        "{text}"
    );
}

#[tokio::test]
async fn as_adapter_005_a_stale_name_run_by_an_adapter_keeps_the_toolsets_reach() {
    use agent_surface::adapter::ToolCall;
    use tokio_util::sync::CancellationToken;
    let registry = registry();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let toolset = |mode: Mode, scope: &[&str]| {
        Toolset::builder(&registry)
            .consumer(consumer("stale"))
            .mode(mode)
            .topology(Topology::Remote)
            .scope(scope.iter().map(|s| (*s).to_owned()))
            .build()
            .unwrap()
    };
    let poke = ToolCall::new("view_test__probe__poke", json!({"ids": ["d1"]}));
    // Outside the floor: not found, as through `execute`; nothing runs.
    let floored = toolset(Mode::Direct, &["devices"]);
    let through_execute = floored
        .execute("view_test__probe__poke", json!({"ids": ["d1"]}), None)
        .await;
    let stale = poke
        .run_stale(&floored, None, CancellationToken::new())
        .await
        .unwrap();
    for result in [&through_execute, &stale] {
        assert_eq!(
            result.error().map(ErrorPayload::code),
            Some(ErrorCode::CapabilityNotFound),
            "{result:?}"
        );
    }
    // A meta toolset's tools are its verbs: no wire name ever was one.
    assert!(
        poke.run_stale(&toolset(Mode::Meta, &[]), None, CancellationToken::new())
            .await
            .is_none()
    );
    // Disposed: nothing runs.
    let disposed = toolset(Mode::Direct, &[]);
    disposed.dispose();
    let cancelled = poke
        .run_stale(&disposed, None, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        cancelled.error().map(ErrorPayload::code),
        Some(ErrorCode::Cancelled)
    );
    assert_eq!(probe.runs.load(Ordering::SeqCst), 0);
    // Within the reach it runs, once.
    let open = toolset(Mode::Direct, &[]);
    let ran = poke
        .run_stale(&open, None, CancellationToken::new())
        .await
        .unwrap();
    assert!(ran.is_ok(), "{ran:?}");
    assert_eq!(probe.runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn as_confirm_006_a_stale_name_keeps_its_confirmation_round_trip() {
    use agent_surface::adapter::ToolCall;
    use tokio_util::sync::CancellationToken;
    let backend = FakeBackend::agreeing();
    let registry = registry_with(&backend);
    let screen = Arc::new(Screen::default());
    let _screen = mount_screen(&registry, &screen);
    screen.select(&["d1"]);
    let instance = registry.snapshot(&SnapshotOptions::default()).procedures()[0]
        .instance_id()
        .to_owned();
    // Qualified by its instance: a name the agent may know, not the tool's.
    let name = format!("domain_test__devices__disable_at_{instance}");
    let remote = |who: &str| {
        Toolset::builder(&registry)
            .consumer(consumer(who))
            .mode(Mode::Direct)
            .topology(Topology::Remote)
            .build()
            .unwrap()
    };
    let toolset = remote("stale-2p");
    assert!(toolset.tool(&name).is_none());
    let call = ToolCall::new(name.clone(), json!({}));
    let run = |toolset: &Toolset, evidence: Option<String>| {
        let call = call.clone();
        let toolset = toolset.clone();
        async move {
            call.run_stale(&toolset, evidence.as_deref(), CancellationToken::new())
                .await
                .unwrap()
        }
    };
    let id = crate::fixtures::confirmation_id(&run(&toolset, None).await);
    let confirmations = registry.confirmations();
    confirmations.approve_id(&id).unwrap();
    // Two-phase: the same name and arguments again carry the evidence.
    let done = run(&toolset, None).await;
    assert!(done.is_ok(), "{done:?}");
    assert_eq!(backend.inputs().len(), 1);
    // A caller with no memory of it (a fresh toolset of another consumer,
    // as a stateless caller is) presents its own evidence explicitly.
    let other = remote("stale-explicit");
    let id = crate::fixtures::confirmation_id(&run(&other, None).await);
    confirmations.approve_id(&id).unwrap();
    let fresh = remote("stale-explicit");
    let done = run(&fresh, Some(id)).await;
    assert!(done.is_ok(), "{done:?}");
    assert_eq!(backend.inputs().len(), 2);
}
