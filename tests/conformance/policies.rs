//! Policies, availability and the explain view: AS-POLICY-*, AS-AVAIL-002,
//! AS-INVOKE-001/002, AS-EXPLAIN-*, AS-OBSV-002.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_surface::Kind;
use agent_surface::audit::{AuditKind, MemoryAuditSink};
use agent_surface::clock::ManualClock;
use agent_surface::explain::{Outcome, explain_surface};
use agent_surface::policy::{
    self, BoxFuture, Decision, InvokeContext, Next, Policy, PolicyContext, PolicyResult, Scope,
    audit, authenticated, environment, has_permission, rate_limit, require_confirmation,
    tenant_boundary,
};
use agent_surface::prelude::*;
use agent_surface::registry::Registry;
use agent_surface_tests::Table;
use serde_json::{Value, json};

use crate::fixtures::{Probe, call, code};

/// Votes at discovery as `host["votes"][slot]` says: `hide`, `disable:<reason>` or expose.
struct HostVote(&'static str);

impl Policy for HostVote {
    fn name(&self) -> &str {
        self.0
    }
    fn on_discovery(&self, ctx: &PolicyContext<'_>) -> Decision {
        match ctx
            .host()
            .get("votes")
            .and_then(|v| v.get(self.0))
            .and_then(Value::as_str)
        {
            Some("hide") => Decision::Hide,
            Some(vote) => match vote.strip_prefix("disable:") {
                Some(reason) => Decision::Disable(reason.to_owned().into()),
                None => Decision::Expose,
            },
            None => Decision::Expose,
        }
    }
}

/// A component with component- and capability-level votes.
struct Voted;

/// Voted.
#[agent_component(type = "test.voted", policies = [HostVote("component")])]
impl Voted {
    /// Read.
    #[observation(policies = [HostVote("capability")])]
    fn read(&self) -> u8 {
        1
    }

    /// Other.
    #[observation]
    fn other(&self) -> u8 {
        2
    }
}

fn voting(votes: Value) -> (Registry, Arc<Mutex<Value>>) {
    let host = Arc::new(Mutex::new(votes));
    let registry = Registry::builder()
        .policy(HostVote("registry"))
        .host_context({
            let host = Arc::clone(&host);
            move || HostContext::new().with("votes", host.lock().unwrap().clone())
        })
        .build();
    (registry, host)
}

fn state_of(registry: &Registry, capability: &str) -> Option<(bool, Option<String>)> {
    let snapshot = registry.snapshot(&SnapshotOptions::default());
    snapshot
        .capability(capability)
        .map(|(_, c)| (c.available(), c.unavailable_reason().map(str::to_owned)))
}

#[tokio::test]
async fn as_policy_002_discovery_is_most_restrictive_wins_across_chains() {
    let (registry, votes) = voting(json!({}));
    let _mounted = registry.mount(Arc::new(Voted)).unwrap();
    assert_eq!(
        state_of(&registry, "view:test.voted.read"),
        Some((true, None))
    );
    *votes.lock().unwrap() =
        json!({"registry": "disable:registry says", "capability": "disable:capability says"});
    assert_eq!(
        state_of(&registry, "view:test.voted.read"),
        Some((false, Some("registry says".into()))),
        "the first reason"
    );
    *votes.lock().unwrap() = json!({"registry": "disable:registry says", "capability": "hide"});
    assert_eq!(
        state_of(&registry, "view:test.voted.read"),
        None,
        "any hide hides"
    );
    assert!(
        state_of(&registry, "view:test.voted.other").is_some(),
        "other capabilities keep their own chain"
    );
    *votes.lock().unwrap() = json!({"component": "disable:component says"});
    assert_eq!(
        state_of(&registry, "view:test.voted.other"),
        Some((false, Some("component says".into())))
    );
    let result = call(&registry, Invocation::new("view:test.voted.other")).await;
    assert_eq!(
        result.error().unwrap().detail("reason"),
        Some(&json!("component says"))
    );
}

#[tokio::test]
async fn as_policy_003_invocation_reruns_the_filter_that_shaped_the_snapshot() {
    let (registry, votes) = voting(json!({}));
    let _mounted = registry.mount(Arc::new(Voted)).unwrap();
    assert!(state_of(&registry, "view:test.voted.read").is_some());
    *votes.lock().unwrap() = json!({"capability": "hide"}); // rights changed after discovery
    let result = call(&registry, Invocation::new("view:test.voted.read")).await;
    assert_eq!(result.error().unwrap(), &ErrorPayload::not_found());
}

#[tokio::test]
async fn as_avail_002_authority_hides_and_state_discloses() {
    let (registry, votes) = voting(json!({"capability": "hide"}));
    let _mounted = registry.mount(Arc::new(Voted)).unwrap();
    let hidden = call(&registry, Invocation::new("view:test.voted.read")).await;
    let nonexistent = call(&registry, Invocation::new("view:test.voted.nothing")).await;
    assert_eq!(
        serde_json::to_value(hidden.error()).unwrap(),
        serde_json::to_value(nonexistent.error()).unwrap(),
        "hidden is indistinguishable from nonexistent"
    );
    *votes.lock().unwrap() = json!({"capability": "disable:Open a project first"});
    let disabled = call(&registry, Invocation::new("view:test.voted.read")).await;
    assert_eq!(code(&disabled), Some(ErrorCode::CapabilityNotAvailable));
    assert_eq!(
        disabled.error().unwrap().detail("reason"),
        Some(&json!("Open a project first"))
    );
    // A capability both hidden by authority and disabled by state is hidden.
    *votes.lock().unwrap() = json!({"capability": "hide"});
    let probe = Probe::new();
    probe.on.store(false, std::sync::atomic::Ordering::SeqCst);
    let registry = Registry::builder()
        .policy(has_permission("probe:use"))
        .build();
    let _probe = registry.mount(probe).unwrap();
    let result = call(&registry, Invocation::new("view:test.probe.gated")).await;
    assert_eq!(code(&result), Some(ErrorCode::CapabilityNotFound));
}

#[tokio::test]
async fn as_policy_001_policies_read_time_only_from_the_injectable_clock() {
    let clock = Arc::new(ManualClock::at_ms(0));
    let registry = Registry::builder()
        .clock(clock.clone())
        .policy(rate_limit(2, Duration::from_secs(1)))
        .build();
    let _mounted = registry.mount(Probe::new()).unwrap();
    let read = || Invocation::new("view:test.probe.read");
    assert!(call(&registry, read()).await.is_ok());
    assert!(call(&registry, read()).await.is_ok());
    let limited = call(&registry, read()).await;
    let error = limited.error().unwrap();
    assert_eq!(error.code(), ErrorCode::RateLimited);
    assert_eq!(error.detail("reason"), Some(&json!("rate")));
    assert_eq!(error.detail("retryAfterMs"), Some(&json!(500)));
    clock.advance(Duration::from_millis(499));
    assert_eq!(
        code(&call(&registry, read()).await),
        Some(ErrorCode::RateLimited)
    );
    clock.advance(Duration::from_millis(1));
    assert!(
        call(&registry, read()).await.is_ok(),
        "exactly one token refilled"
    );
}

fn ctx_parts() -> (agent_surface::ids::CapabilityId, Consumer, ManualClock) {
    (
        "view:test.probe.read".parse().unwrap(),
        Consumer::new(ConsumerKind::Test, "t"),
        ManualClock::at_ms(0),
    )
}

#[tokio::test]
async fn as_policy_004_built_in_policies_behave_as_documented() {
    // authenticated: hides without a user; NOT_AUTHENTICATED at authorization.
    let (id, consumer, clock) = ctx_parts();
    let anonymous = HostContext::new();
    let ctx = PolicyContext::new(
        &id,
        Kind::Observation,
        Effect::Read,
        &consumer,
        &anonymous,
        &clock,
    );
    let policy = authenticated();
    assert_eq!(policy.on_discovery(&ctx), Decision::Hide);
    let chain: Vec<policy::PolicyRef> = vec![Arc::new(authenticated())];
    assert_eq!(
        policy::run_authorize(&chain, &ctx)
            .await
            .unwrap_err()
            .code(),
        ErrorCode::NotAuthenticated
    );
    let user = HostContext::new().with(
        "user",
        json!({"name": "ada", "permissions": ["devices:write"]}),
    );
    let ctx = PolicyContext::new(
        &id,
        Kind::Observation,
        Effect::Read,
        &consumer,
        &user,
        &clock,
    );
    assert_eq!(policy.on_discovery(&ctx), Decision::Expose);
    assert!(policy::run_authorize(&chain, &ctx).await.is_ok());

    // has_permission: hides without; NOT_AUTHORIZED {origin: client} at authorization.
    let write = has_permission("devices:write");
    assert_eq!(write.name(), "hasPermission(devices:write)");
    assert_eq!(write.on_discovery(&ctx), Decision::Expose);
    let admin = has_permission("admin");
    assert_eq!(admin.on_discovery(&ctx), Decision::Hide);
    let chain: Vec<policy::PolicyRef> = vec![Arc::new(has_permission("admin"))];
    let denied = policy::run_authorize(&chain, &ctx).await.unwrap_err();
    assert_eq!(
        (denied.code(), denied.detail("origin")),
        (ErrorCode::NotAuthorized, Some(&json!("client")))
    );

    // environment: visible only where allowed.
    let production_only = environment([Environment::Production]);
    let test_ctx = PolicyContext::new(
        &id,
        Kind::Observation,
        Effect::Read,
        &consumer,
        &user,
        &clock,
    )
    .with_environment(Environment::Test);
    assert_eq!(production_only.on_discovery(&test_ctx), Decision::Hide);
    let prod_ctx = PolicyContext::new(
        &id,
        Kind::Observation,
        Effect::Read,
        &consumer,
        &user,
        &clock,
    );
    assert_eq!(production_only.on_discovery(&prod_ctx), Decision::Expose);

    // tenant_boundary: the fixture table belongs to tenant `acme` (internal metadata).
    for (tenant, visible) in [("acme", true), ("globex", false)] {
        let registry = Registry::builder()
            .policy(tenant_boundary())
            .host_context(move || HostContext::new().with("tenant", json!(tenant)))
            .build();
        let _table = registry.mount(Arc::new(Table::default())).unwrap();
        let seen = registry
            .snapshot(&SnapshotOptions::default())
            .capability("view:fixtures.table.readState")
            .is_some();
        assert_eq!(seen, visible, "{tenant}");
        let result = call(&registry, Invocation::new("view:fixtures.table.readState")).await;
        assert_eq!(result.is_ok(), visible);
    }

    // require_confirmation: escalates over the effective input, with a summary.
    let registry = Registry::builder()
        .policy(
            require_confirmation()
                .when(|ctx| {
                    ctx.effective_input()["ids"]
                        .as_array()
                        .is_some_and(|ids| ids.len() > 1)
                })
                .summary(|ctx| {
                    format!(
                        "Poke {} devices",
                        ctx.effective_input()["ids"].as_array().map_or(0, Vec::len)
                    )
                }),
        )
        .build();
    let _probe = registry.mount(Probe::new()).unwrap();
    let one = call(
        &registry,
        Invocation::new("view:test.probe.poke").input(json!({"ids": ["a"]})),
    )
    .await;
    assert!(one.is_ok());
    let two = call(
        &registry,
        Invocation::new("view:test.probe.poke").input(json!({"ids": ["a", "b"]})),
    )
    .await;
    assert_eq!(
        two.error().unwrap().detail("summary"),
        Some(&json!("Poke 2 devices"))
    );

    // audit: forwards the capability's records to its own sink.
    let sink = Arc::new(MemoryAuditSink::new(10));
    let registry = Registry::builder().policy(audit(sink.clone())).build();
    let _probe = registry.mount(Probe::new()).unwrap();
    call(
        &registry,
        Invocation::new("view:test.probe.poke").input(json!({"ids": ["a"]})),
    )
    .await;
    assert!(
        sink.events()
            .iter()
            .any(|e| e.kind == AuditKind::InvocationSettled)
    );
}

/// Records what `on_invoke` saw.
struct Witness(Arc<Mutex<Vec<Value>>>);

impl Policy for Witness {
    fn name(&self) -> &str {
        "witness"
    }
    fn on_invoke<'a>(
        &'a self,
        ctx: &'a InvokeContext<'a>,
        next: Next<'a, InvokeContext<'a>>,
    ) -> BoxFuture<'a, PolicyResult> {
        self.0.lock().unwrap().push(ctx.effective_input().clone());
        next.run()
    }
}

#[tokio::test]
async fn as_invoke_002_on_invoke_sees_only_the_validated_effective_input() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let registry = Registry::builder()
        .policy(Witness(Arc::clone(&seen)))
        .build();
    let _table = registry
        .mount(Arc::new(Table {
            rows: vec![agent_surface_tests::Row {
                id: "d1".into(),
                name: "one".into(),
            }],
            ..Table::default()
        }))
        .unwrap();
    let invalid = call(
        &registry,
        Invocation::new("view:fixtures.table.selectRows").input(json!({"ids": "d1"})),
    )
    .await;
    assert_eq!(code(&invalid), Some(ErrorCode::InvalidInput));
    assert!(
        seen.lock().unwrap().is_empty(),
        "never called with unvalidated input"
    );
    let ok = call(
        &registry,
        Invocation::new("view:fixtures.table.selectRows").input(json!({"ids": ["d1"]})),
    )
    .await;
    assert!(ok.is_ok(), "{ok:?}");
    assert_eq!(
        *seen.lock().unwrap(),
        [json!({"ids": ["d1"], "mode": "replace"})],
        "validated, defaults applied"
    );
}

#[tokio::test]
async fn as_explain_001_explain_reports_what_the_snapshot_hides_and_who_hid_it() {
    let (registry, _votes) = voting(json!({"capability": "hide"}));
    let _mounted = registry.mount(Arc::new(Voted)).unwrap();
    let options = SnapshotOptions::default();
    assert!(
        registry
            .snapshot(&options)
            .capability("view:test.voted.read")
            .is_none()
    );
    let explanation = explain_surface(&registry, &options);
    let read = explanation.components[0]
        .capabilities
        .iter()
        .find(|c| c.capability_id == "view:test.voted.read")
        .unwrap();
    assert_eq!(read.outcome, Outcome::Hide);
    let hider = read
        .votes
        .iter()
        .find(|v| v.decision == Outcome::Hide)
        .unwrap();
    assert_eq!(
        (hider.policy.as_str(), hider.scope),
        ("capability", Scope::Capability)
    );
}

#[tokio::test]
async fn as_explain_002_every_policy_is_attributed_by_name_and_scope() {
    let (registry, _votes) = voting(json!({"registry": "disable:maintenance"}));
    let _mounted = registry.mount(Arc::new(Voted)).unwrap();
    let explanation = explain_surface(&registry, &SnapshotOptions::default());
    let read = &explanation.components[0].capabilities[0];
    let votes: Vec<(&str, Scope, Outcome)> = read
        .votes
        .iter()
        .map(|v| (v.policy.as_str(), v.scope, v.decision))
        .collect();
    assert_eq!(
        votes,
        [
            ("registry", Scope::Registry, Outcome::Disable),
            ("component", Scope::Component, Outcome::Expose),
            ("capability", Scope::Capability, Outcome::Expose),
        ]
    );
    assert_eq!(read.reason.as_deref(), Some("maintenance"));
    assert!(
        read.availability.available,
        "state is reported apart from votes"
    );
    let json = serde_json::to_value(&explanation).unwrap();
    assert_eq!(
        json["components"][0]["capabilities"][0]["votes"][0]["scope"],
        json!("registry")
    );
}

#[tokio::test]
async fn as_explain_003_the_composed_outcome_always_agrees_with_the_snapshot() {
    let scenarios = [
        json!({}),
        json!({"registry": "hide"}),
        json!({"component": "disable:c"}),
        json!({"capability": "disable:x", "registry": "disable:r"}),
        json!({"capability": "hide", "component": "disable:c"}),
    ];
    for votes in scenarios {
        for include_unavailable in [true, false] {
            let (registry, _votes) = voting(votes.clone());
            let probe = Probe::new();
            probe.on.store(false, std::sync::atomic::Ordering::SeqCst);
            let _probe = registry.mount(probe).unwrap();
            let _voted = registry.mount(Arc::new(Voted)).unwrap();
            let options = SnapshotOptions::default().include_unavailable(include_unavailable);
            let snapshot = registry.snapshot(&options);
            let explanation = explain_surface(&registry, &options);
            for component in &explanation.components {
                for capability in &component.capabilities {
                    let seen = snapshot.capability(&capability.capability_id);
                    let expected = match seen {
                        None => Outcome::Hide,
                        Some((_, view)) if view.available() => Outcome::Expose,
                        Some(_) => Outcome::Disable,
                    };
                    assert_eq!(
                        capability.outcome, expected,
                        "{votes} {}",
                        capability.capability_id
                    );
                    if let Some((_, view)) = seen {
                        assert_eq!(view.unavailable_reason(), capability.reason.as_deref());
                    }
                }
            }
        }
    }
}

#[test]
fn as_obsv_002_the_development_console_sink_writes_to_stderr_never_stdout() {
    if std::env::var_os("AS_OBSV_002_CHILD").is_some() {
        // The child: a development registry audits to the console sink.
        let registry = Registry::builder()
            .environment(Environment::Development)
            .build();
        let mounted = registry.mount(Probe::new()).unwrap();
        drop(mounted);
        return;
    }
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "policies::as_obsv_002_the_development_console_sink_writes_to_stderr_never_stdout",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("AS_OBSV_002_CHILD", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("agent-surface audit") && stderr.contains("\"type\":\"registration\""),
        "{stderr}"
    );
    assert!(!stdout.contains("agent-surface audit"), "{stdout}");
}
