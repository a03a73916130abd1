//! At most once across replicas (AS-IDENT-001, -002, -004, -006 on a
//! shared store): registries sharing one store behave as one registry for
//! invocation ids — a retry on another replica replays or joins, never runs
//! twice; the same id with another request conflicts; the store's failure
//! fails the call closed. The store here is the in-process `MemoryStore`;
//! the same cases run against a real Redis server in the runtime's
//! `shared_store_redis` test.

use std::sync::Arc;
use std::time::Duration;

use agent_surface::confirmation::ConfirmationOutcome;
use agent_surface::prelude::*;
use agent_surface::registry::Registry;
use agent_surface::store::{
    BoxFuture, Claim, Fingerprint, Lease, MemoryStore, Namespace, SharedStore, StoreError, Taken,
};
use serde_json::json;

use crate::fixtures::{Probe, code, consumer, settle_tasks};

fn replicas(store: Arc<dyn SharedStore>, n: usize) -> Vec<(Registry, Arc<Probe>, Mounted)> {
    (0..n)
        .map(|_| {
            let registry = Registry::builder()
                .shared_store(Arc::clone(&store), Namespace::new("probe").unwrap())
                .build();
            let probe = Probe::new();
            let mounted = registry.mount(probe.clone()).unwrap();
            (registry, probe, mounted)
        })
        .collect()
}

async fn call_as(registry: &Registry, who: &str, invocation: Invocation) -> InvocationResult {
    registry
        .invoke(invocation, InvokeOptions::consumer(consumer(who)))
        .await
}

fn poke(id: &str, ids: &[&str]) -> Invocation {
    Invocation::new("view:test.probe.poke")
        .input(json!({ "ids": ids }))
        .invocation_id(id)
}

#[tokio::test]
async fn as_ident_001_a_retry_on_another_replica_replays_the_settled_result() {
    let replicas = replicas(Arc::new(MemoryStore::new()), 3);
    let first = call_as(&replicas[0].0, "alice", poke("call-1", &["a"])).await;
    assert!(first.is_ok(), "{first:?}");
    for (registry, _, _) in &replicas[1..] {
        let retry = call_as(registry, "alice", poke("call-1", &["a"])).await;
        assert_eq!(retry.output(), first.output());
        assert_eq!(retry.invocation_id(), "call-1");
    }
    let runs: Vec<usize> = replicas.iter().map(|(_, probe, _)| probe.runs()).collect();
    assert_eq!(
        runs,
        [1, 0, 0],
        "the call ran more than once across replicas"
    );
}

#[tokio::test]
async fn as_ident_001_each_replicas_own_staleness_tokens_do_not_make_a_retry_another_request() {
    let replicas = replicas(Arc::new(MemoryStore::new()), 2);
    // As a toolset sends it: the registration id and surface version the
    // caller discovered — each replica's own.
    let on = |(registry, _, mounted): &(Registry, Arc<Probe>, Mounted)| {
        poke("tok-1", &["a"])
            .registration(mounted.registration_id())
            .surface_version(registry.version().to_string())
    };
    let first = call_as(&replicas[0].0, "alice", on(&replicas[0])).await;
    assert!(first.is_ok(), "{first:?}");
    let retry = call_as(&replicas[1].0, "alice", on(&replicas[1])).await;
    assert_eq!(retry.output(), first.output(), "{retry:?}");
    assert_eq!((replicas[0].1.runs(), replicas[1].1.runs()), (1, 0));
}

#[tokio::test]
async fn as_ident_001_a_retry_while_the_twin_runs_on_another_replica_joins_it() {
    let replicas = replicas(Arc::new(MemoryStore::new()), 2);
    let hold = || Invocation::new("view:test.probe.hold").invocation_id("held-1");
    let leader = tokio::spawn({
        let registry = replicas[0].0.clone();
        async move { call_as(&registry, "alice", hold()).await }
    });
    settle_tasks().await;
    let joiner = tokio::spawn({
        let registry = replicas[1].0.clone();
        async move { call_as(&registry, "alice", hold()).await }
    });
    settle_tasks().await;
    // Both gates open: a second run would count on the second probe.
    replicas[1].1.open();
    settle_tasks().await;
    assert!(
        !joiner.is_finished(),
        "the joiner did not wait for its twin"
    );
    replicas[0].1.open();
    let leader = leader.await.unwrap();
    let joiner = joiner.await.unwrap();
    assert!(leader.is_ok(), "{leader:?}");
    assert_eq!(joiner.output(), leader.output());
    assert_eq!((replicas[0].1.runs(), replicas[1].1.runs()), (1, 0));
}

#[tokio::test]
async fn as_ident_002_the_same_id_with_another_input_on_another_replica_conflicts() {
    let replicas = replicas(Arc::new(MemoryStore::new()), 2);
    assert!(
        call_as(&replicas[0].0, "alice", poke("c-1", &["a"]))
            .await
            .is_ok()
    );
    let other = call_as(&replicas[1].0, "alice", poke("c-1", &["b"])).await;
    assert_eq!(code(&other), Some(ErrorCode::InvocationConflict));
    assert_eq!(replicas[1].1.runs(), 0);
}

#[tokio::test]
async fn as_ident_004_other_consumers_reuse_an_id_across_replicas_safely() {
    let replicas = replicas(Arc::new(MemoryStore::new()), 2);
    assert!(
        call_as(&replicas[0].0, "alice", poke("t-1", &["a"]))
            .await
            .is_ok()
    );
    let bob = call_as(&replicas[1].0, "bob", poke("t-1", &["b"])).await;
    assert!(bob.is_ok(), "{bob:?}");
    assert_eq!((replicas[0].1.runs(), replicas[1].1.runs()), (1, 1));
}

#[tokio::test]
async fn as_ident_006_confirmation_required_is_never_kept_across_replicas() {
    let replicas = replicas(Arc::new(MemoryStore::new()), 2);
    let guarded = || {
        Invocation::new("view:test.probe.guarded")
            .input(json!({ "ids": ["a"] }))
            .invocation_id("g-1")
    };
    let asked = call_as(&replicas[0].0, "alice", guarded()).await;
    assert_eq!(code(&asked), Some(ErrorCode::ConfirmationRequired));
    // The retry on the other replica is not answered with the first
    // replica's `CONFIRMATION_REQUIRED`: it asks its own.
    let again = call_as(&replicas[1].0, "alice", guarded()).await;
    assert_eq!(code(&again), Some(ErrorCode::ConfirmationRequired));
    assert_eq!(replicas[1].0.confirmations().pending().len(), 1);
}

#[tokio::test]
async fn as_policy_004_a_rate_limit_holds_for_the_sum_of_the_replicas() {
    let store: Arc<dyn SharedStore> = Arc::new(MemoryStore::new());
    let replicas: Vec<(Registry, Arc<Probe>, Mounted)> = (0..3)
        .map(|_| {
            let registry = Registry::builder()
                .shared_store(Arc::clone(&store), Namespace::new("probe").unwrap())
                .policy(agent_surface::policy::rate_limit(
                    3,
                    Duration::from_secs(60),
                ))
                .build();
            let probe = Probe::new();
            let mounted = registry.mount(probe.clone()).unwrap();
            (registry, probe, mounted)
        })
        .collect();
    let mut codes = Vec::new();
    for n in 0..9 {
        let result = call_as(&replicas[n % 3].0, "alice", poke(&format!("r-{n}"), &["a"])).await;
        codes.push(code(&result));
    }
    let allowed = codes.iter().filter(|code| code.is_none()).count();
    assert_eq!(allowed, 3, "{codes:?}");
    assert!(
        codes[3..]
            .iter()
            .all(|code| *code == Some(ErrorCode::RateLimited))
    );
    // Another principal has its own bucket.
    assert!(
        call_as(&replicas[0].0, "bob", poke("b-1", &["b"]))
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn as_confirm_003_an_approval_through_one_replica_releases_the_call_held_on_another_once() {
    let store: Arc<dyn SharedStore> = Arc::new(MemoryStore::new());
    let replicas: Vec<(Registry, Arc<Probe>, Mounted)> = (0..2)
        .map(|_| {
            let registry = Registry::builder()
                .shared_store(Arc::clone(&store), Namespace::new("probe").unwrap())
                .approval_channel("console")
                .build();
            let probe = Probe::new();
            let mounted = registry.mount(probe.clone()).unwrap();
            (registry, probe, mounted)
        })
        .collect();
    let (a, b) = (&replicas[0].0, &replicas[1].0);
    let guarded = |confirmation: Option<&str>| {
        let call = Invocation::new("view:test.probe.guarded")
            .input(json!({ "ids": ["a"] }))
            .invocation_id("held-1");
        match confirmation {
            Some(id) => call.confirmation(id),
            None => call,
        }
    };
    let asked = call_as(b, "alice", guarded(None)).await;
    let id = crate::fixtures::confirmation_id(&asked);
    // The call waits on replica B for the person.
    let held = tokio::spawn({
        let b = b.clone();
        let id = id.clone();
        async move { b.confirmations().wait_for(&id).await }
    });
    settle_tasks().await;
    // The console on replica A lists B's request…
    let mut listed = Vec::new();
    for _ in 0..100 {
        listed = a.confirmations().pending_everywhere().await;
        if !listed.is_empty() {
            break;
        }
        settle_tasks().await;
    }
    assert_eq!(listed.len(), 1, "replica A does not list B's request");
    assert_eq!(*listed[0].confirmation_id, *id);
    assert!(
        a.confirmations().find(&id).is_none(),
        "the request moved replicas"
    );
    // …and the person's answer there releases the call held on B.
    let approver = a.confirmations().approver("console", "ada").unwrap();
    let resolution = a
        .confirmations()
        .answer_anywhere(&listed[0].shown(), true, &approver, None)
        .await
        .unwrap();
    assert_eq!(resolution.outcome, ConfirmationOutcome::Approved);
    assert_eq!(resolution.approver.as_deref(), Some("ada"));
    assert_eq!(held.await.unwrap(), Some(ConfirmationOutcome::Approved));
    // Recorded on B as the person's answer through the console.
    let recorded = b.confirmations().resolution(&id).unwrap();
    assert_eq!(recorded.channel.as_deref(), Some("console"));
    // A second answer is refused: the first one won.
    let again = a
        .confirmations()
        .answer_anywhere(&listed[0].shown(), false, &approver, None)
        .await;
    assert!(again.is_err(), "{again:?}");
    // The retry with the approval runs once, on B.
    let ran = call_as(b, "alice", guarded(Some(&id))).await;
    assert!(ran.is_ok(), "{ran:?}");
    assert_eq!((replicas[0].1.runs(), replicas[1].1.runs()), (0, 1));
}

async fn guarded_as(registry: &Registry, who: Consumer, id: &str) -> InvocationResult {
    registry
        .invoke(
            Invocation::new("view:test.probe.guarded").input(json!({ "ids": [id] })),
            InvokeOptions::consumer(who),
        )
        .await
}

#[tokio::test]
async fn as_confirm_005_a_principals_share_of_pending_requests_holds_for_the_sum_of_the_replicas() {
    let replicas = replicas(Arc::new(MemoryStore::new()), 3);
    let quota = replicas[0]
        .0
        .limits()
        .max_pending_confirmations_per_consumer;
    let mut held = Vec::new();
    for n in 0..quota {
        let on = n % 3;
        let asked = guarded_as(&replicas[on].0, consumer("mallory"), &format!("d{n}")).await;
        held.push((on, crate::fixtures::confirmation_id(&asked)));
    }
    // Over the share on every replica, though none holds it alone.
    for (registry, _, _) in &replicas {
        let over = guarded_as(registry, consumer("mallory"), "d99").await;
        let error = over.error().expect("refused");
        assert_eq!(error.code(), ErrorCode::RateLimited, "{error:?}");
        assert_eq!(error.detail("reason"), Some(&json!("queue-full")));
    }
    let open: usize = replicas
        .iter()
        .map(|(registry, _, _)| registry.confirmations().pending().len())
        .sum();
    assert_eq!(open, quota);
    // Another principal still gets its confirmation.
    crate::fixtures::confirmation_id(&guarded_as(&replicas[2].0, consumer("alice"), "a1").await);
    // An answer on one replica frees a place in the share on every one.
    let (on, id) = &held[0];
    let shown = replicas[*on].0.confirmations().find(id).unwrap().shown();
    let approver = replicas[*on]
        .0
        .confirmations()
        .approver(agent_surface::confirmation::HOST_CHANNEL, "ada")
        .unwrap();
    replicas[*on]
        .0
        .confirmations()
        .resolve(&shown, false, &approver)
        .unwrap();
    settle_tasks().await;
    let other = (on + 1) % 3;
    crate::fixtures::confirmation_id(
        &guarded_as(&replicas[other].0, consumer("mallory"), "d99").await,
    );
    assert_eq!(
        code(&guarded_as(&replicas[*on].0, consumer("mallory"), "d100").await),
        Some(ErrorCode::RateLimited)
    );
}

#[tokio::test]
async fn as_confirm_005_identities_of_one_principal_take_turns_across_replicas_within_its_share() {
    let replicas = replicas(Arc::new(MemoryStore::new()), 2);
    let quota = replicas[0]
        .0
        .limits()
        .max_pending_confirmations_per_consumer;
    let session = |n: u32| consumer(&format!("session-{n}")).with_principal("client-x");
    for n in 0..quota {
        crate::fixtures::confirmation_id(
            &guarded_as(&replicas[0].0, session(1), &format!("d{n}")).await,
        );
    }
    // Another identity of the principal, on the replica holding the share:
    // the heaviest identity's oldest request gives way, and its place.
    crate::fixtures::confirmation_id(&guarded_as(&replicas[0].0, session(2), "e0").await);
    assert_eq!(replicas[0].0.confirmations().pending().len(), quota);
    // On a replica holding none of the share, nobody there can give way.
    let over = guarded_as(&replicas[1].0, session(3), "f0").await;
    assert_eq!(code(&over), Some(ErrorCode::RateLimited), "{over:?}");
    // The share is still counted once: a withdrawal frees exactly one place.
    settle_tasks().await;
    let over = guarded_as(&replicas[1].0, session(3), "f0").await;
    assert_eq!(code(&over), Some(ErrorCode::RateLimited), "{over:?}");
}

#[tokio::test(start_paused = true)]
async fn as_confirm_005_an_expired_request_gives_its_place_in_the_share_back() {
    let store: Arc<dyn SharedStore> = Arc::new(MemoryStore::new());
    let build = || {
        let registry = Registry::builder()
            .shared_store(Arc::clone(&store), Namespace::new("probe").unwrap())
            .build();
        let mounted = registry.mount(Probe::new()).unwrap();
        (registry, mounted)
    };
    let (a, _a) = build();
    let (b, _b) = build();
    let quota = a.limits().max_pending_confirmations_per_consumer;
    for n in 0..quota {
        crate::fixtures::confirmation_id(
            &guarded_as(&a, consumer("mallory"), &format!("d{n}")).await,
        );
    }
    assert_eq!(
        code(&guarded_as(&b, consumer("mallory"), "x").await),
        Some(ErrorCode::RateLimited)
    );
    // No task ran since the requests were made: their expiry is still
    // due at their own deadline.
    tokio::time::advance(a.limits().confirmation_ttl + Duration::from_secs(1)).await;
    settle_tasks().await;
    assert!(a.confirmations().pending().is_empty());
    crate::fixtures::confirmation_id(&guarded_as(&b, consumer("mallory"), "x").await);
}

#[tokio::test]
async fn as_confirm_005_a_store_that_cannot_be_reached_asks_nobody() {
    let replicas = replicas(Arc::new(Down), 1);
    let (registry, probe, _) = &replicas[0];
    let refused = guarded_as(registry, consumer("alice"), "a").await;
    let error = refused.error().expect("refused");
    assert_eq!(error.code(), ErrorCode::ExecutionFailed);
    assert_eq!(error.detail("reason"), Some(&json!("store-unavailable")));
    assert!(registry.confirmations().pending().is_empty());
    assert_eq!(probe.runs(), 0);
}

/// Lets the replicas' relays publish what their registries resolved.
async fn relayed() {
    for _ in 0..10 {
        settle_tasks().await;
    }
}

fn reason(result: &InvocationResult) -> Option<serde_json::Value> {
    result
        .error()
        .and_then(|error| error.detail("reason"))
        .cloned()
}

#[tokio::test]
async fn as_confirm_003_an_approval_is_redeemed_once_on_whichever_replica_the_retry_lands() {
    let replicas = replicas(Arc::new(MemoryStore::new()), 3);
    let guarded =
        |ids: &[&str]| Invocation::new("view:test.probe.guarded").input(json!({ "ids": ids }));
    let asked = call_as(&replicas[1].0, "alice", guarded(&["a"])).await;
    let id = crate::fixtures::confirmation_id(&asked);
    use crate::fixtures::AnswerById;
    replicas[1].0.confirmations().approve_id(&id).unwrap();
    relayed().await;
    // The retry lands on another replica: it runs there, once.
    let ran = call_as(&replicas[0].0, "alice", guarded(&["a"]).confirmation(&id)).await;
    assert!(ran.is_ok(), "{ran:?}");
    // Single use everywhere, the holder included.
    for on in [2, 1, 0] {
        let again = call_as(&replicas[on].0, "alice", guarded(&["a"]).confirmation(&id)).await;
        assert_eq!(
            code(&again),
            Some(ErrorCode::ConfirmationInvalid),
            "{again:?}"
        );
        assert_eq!(reason(&again), Some(json!("consumed")), "on replica {on}");
    }
    let runs: Vec<usize> = replicas.iter().map(|(_, probe, _)| probe.runs()).collect();
    assert_eq!(runs, [1, 0, 0]);
}

#[tokio::test]
async fn as_confirm_004_an_approval_redeemed_on_another_replica_binds_consumer_and_input() {
    let replicas = replicas(Arc::new(MemoryStore::new()), 2);
    let guarded =
        |ids: &[&str]| Invocation::new("view:test.probe.guarded").input(json!({ "ids": ids }));
    let asked = call_as(&replicas[0].0, "alice", guarded(&["a"])).await;
    let id = crate::fixtures::confirmation_id(&asked);
    use crate::fixtures::AnswerById;
    replicas[0].0.confirmations().approve_id(&id).unwrap();
    relayed().await;
    let other_input = call_as(&replicas[1].0, "alice", guarded(&["b"]).confirmation(&id)).await;
    assert_eq!(
        reason(&other_input),
        Some(json!("mismatch")),
        "{other_input:?}"
    );
    let other_consumer =
        call_as(&replicas[1].0, "mallory", guarded(&["a"]).confirmation(&id)).await;
    assert_eq!(
        reason(&other_consumer),
        Some(json!("mismatch")),
        "{other_consumer:?}"
    );
    let other_capability = call_as(
        &replicas[1].0,
        "alice",
        Invocation::new("view:test.probe.guardedToo")
            .input(json!({ "ids": ["a"] }))
            .confirmation(&id),
    )
    .await;
    assert_eq!(
        code(&other_capability),
        Some(ErrorCode::ConfirmationInvalid),
        "{other_capability:?}"
    );
    assert_eq!(replicas[1].1.runs(), 0);
    // Never approved (pending, or denied) is redeemable nowhere else.
    let pending =
        crate::fixtures::confirmation_id(&call_as(&replicas[0].0, "alice", guarded(&["c"])).await);
    relayed().await;
    let early = call_as(
        &replicas[1].0,
        "alice",
        guarded(&["c"]).confirmation(&pending),
    )
    .await;
    assert_eq!(
        code(&early),
        Some(ErrorCode::ConfirmationInvalid),
        "{early:?}"
    );
    replicas[0].0.confirmations().deny_id(&pending).unwrap();
    relayed().await;
    let denied = call_as(
        &replicas[1].0,
        "alice",
        guarded(&["c"]).confirmation(&pending),
    )
    .await;
    assert_eq!(
        code(&denied),
        Some(ErrorCode::ConfirmationInvalid),
        "{denied:?}"
    );
    // The approval itself still works, once.
    let ran = call_as(&replicas[1].0, "alice", guarded(&["a"]).confirmation(&id)).await;
    assert!(ran.is_ok(), "{ran:?}");
    assert_eq!((replicas[0].1.runs(), replicas[1].1.runs()), (0, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn as_confirm_003_retries_racing_on_every_replica_run_the_approved_call_once() {
    for round in 0..20 {
        let replicas = replicas(Arc::new(MemoryStore::new()), 3);
        let guarded = || Invocation::new("view:test.probe.guarded").input(json!({ "ids": ["a"] }));
        let asked = call_as(&replicas[round % 3].0, "alice", guarded()).await;
        let id = crate::fixtures::confirmation_id(&asked);
        use crate::fixtures::AnswerById;
        replicas[round % 3]
            .0
            .confirmations()
            .approve_id(&id)
            .unwrap();
        // Published by the holder's relay.
        tokio::time::sleep(Duration::from_millis(20)).await;
        let calls: Vec<_> = replicas
            .iter()
            .map(|(registry, _, _)| {
                let registry = registry.clone();
                let call = guarded().confirmation(&id);
                tokio::spawn(async move { call_as(&registry, "alice", call).await })
            })
            .collect();
        let mut ok = 0;
        for call in calls {
            let result = call.await.unwrap();
            if result.is_ok() {
                ok += 1;
            } else {
                assert_eq!(reason(&result), Some(json!("consumed")), "{result:?}");
            }
        }
        let runs: usize = replicas.iter().map(|(_, probe, _)| probe.runs()).sum();
        assert_eq!((ok, runs), (1, 1), "round {round}");
    }
}

#[tokio::test]
async fn as_confirm_003_a_denial_through_one_replica_is_told_as_denied_on_any_replica() {
    let store: Arc<dyn SharedStore> = Arc::new(MemoryStore::new());
    let replicas: Vec<(Registry, Arc<Probe>, Mounted)> = (0..2)
        .map(|_| {
            let registry = Registry::builder()
                .shared_store(Arc::clone(&store), Namespace::new("probe").unwrap())
                .approval_channel("console")
                .build();
            let probe = Probe::new();
            let mounted = registry.mount(probe.clone()).unwrap();
            (registry, probe, mounted)
        })
        .collect();
    let (a, b) = (&replicas[0].0, &replicas[1].0);
    let guarded = || Invocation::new("view:test.probe.guarded").input(json!({ "ids": ["a"] }));
    let id = crate::fixtures::confirmation_id(&call_as(b, "alice", guarded()).await);
    relayed().await;
    let shown = a.confirmations().find_anywhere(&id).await.unwrap().shown();
    let approver = a.confirmations().approver("console", "ada").unwrap();
    let denied = a
        .confirmations()
        .answer_anywhere(&shown, false, &approver, None)
        .await
        .unwrap();
    assert_eq!(denied.outcome, ConfirmationOutcome::Denied);
    for registry in [a, b] {
        let retry = call_as(registry, "alice", guarded().confirmation(&id)).await;
        assert_eq!(reason(&retry), Some(json!("denied")), "{retry:?}");
    }
    assert_eq!((replicas[0].1.runs(), replicas[1].1.runs()), (0, 0));
}

/// Two replicas on one store, each declaring the console channel.
fn pair(limits: agent_surface::registry::Limits) -> Vec<(Registry, Arc<Probe>, Mounted)> {
    let store: Arc<dyn SharedStore> = Arc::new(MemoryStore::new());
    (0..2)
        .map(|_| {
            let registry = Registry::builder()
                .shared_store(Arc::clone(&store), Namespace::new("probe").unwrap())
                .approval_channel("console")
                .limits(limits)
                .build();
            let probe = Probe::new();
            let mounted = registry.mount(probe.clone()).unwrap();
            (registry, probe, mounted)
        })
        .collect()
}

#[tokio::test]
async fn as_confirm_003_an_approval_withdrawn_or_expired_on_its_holder_is_redeemed_nowhere() {
    use crate::fixtures::AnswerById;
    let guarded = || Invocation::new("view:test.probe.guarded").input(json!({ "ids": ["x"] }));
    // The agent left, the component was unmounted, the registry disposed.
    for case in ["agent-left", "unmounted", "disposed"] {
        let mut replicas = pair(agent_surface::registry::Limits::default());
        let (b, probe_b, _mounted_b) = replicas.pop().unwrap();
        let (a, _, mounted_a) = replicas.pop().unwrap();
        let id = crate::fixtures::confirmation_id(&call_as(&a, "alice", guarded()).await);
        a.confirmations().approve_id(&id).unwrap();
        relayed().await;
        match case {
            "agent-left" => a.forget_consumer(&consumer("alice")),
            "unmounted" => mounted_a.unmount(),
            _ => a.dispose(),
        }
        relayed().await;
        let on_b = call_as(&b, "alice", guarded().confirmation(&id)).await;
        assert_eq!(
            code(&on_b),
            Some(ErrorCode::ConfirmationInvalid),
            "{case}: {on_b:?}"
        );
        // A disposed registry withdraws what its components asked.
        assert_eq!(reason(&on_b), Some(json!("withdrawn")), "{case}");
        assert_eq!(probe_b.runs(), 0, "{case}");
    }
}

#[tokio::test]
async fn as_confirm_003_the_holder_never_redeems_its_own_withdrawn_approval_once_it_forgot_it() {
    use crate::fixtures::AnswerById;
    let limits = agent_surface::registry::Limits::default().max_pending_confirmations(4);
    let replicas = pair(limits);
    let (a, probe_a, _) = &replicas[0];
    let guarded =
        |ids: &[&str]| Invocation::new("view:test.probe.guarded").input(json!({ "ids": ids }));
    let id = crate::fixtures::confirmation_id(&call_as(a, "alice", guarded(&["x"])).await);
    a.confirmations().approve_id(&id).unwrap();
    relayed().await;
    a.forget_consumer(&consumer("alice"));
    relayed().await;
    // Its ended list is bounded: an agent churns it (asks, then presents
    // the request with another input, which withdraws it).
    for n in 0..200 {
        let who = format!("m{}", n % 3);
        let asked = call_as(a, &who, guarded(&[&format!("c{n}")])).await;
        if let Some(churned) = asked
            .error()
            .and_then(|error| error.detail("confirmationId"))
            .and_then(serde_json::Value::as_str)
        {
            let churned = churned.to_owned();
            let _ = call_as(a, &who, guarded(&["other"]).confirmation(&churned)).await;
        }
        settle_tasks().await;
    }
    let again = call_as(a, "alice", guarded(&["x"]).confirmation(&id)).await;
    assert_eq!(
        code(&again),
        Some(ErrorCode::ConfirmationInvalid),
        "{again:?}"
    );
    assert_eq!(probe_a.runs(), 0);
}

#[tokio::test]
async fn as_confirm_005_an_approval_used_on_another_replica_ends_on_its_holder_and_frees_its_place()
{
    use crate::fixtures::AnswerById;
    use agent_surface::audit::AuditKind;
    let limits =
        agent_surface::registry::Limits::default().max_pending_confirmations_per_consumer(2);
    let replicas = pair(limits);
    let (a, b) = (&replicas[0].0, &replicas[1].0);
    let guarded =
        |input: &str| Invocation::new("view:test.probe.guarded").input(json!({ "ids": [input] }));
    for n in 0..5 {
        let input = format!("i{n}");
        let asked = call_as(a, "alice", guarded(&input)).await;
        let id = crate::fixtures::confirmation_id(&asked);
        a.confirmations().approve_id(&id).unwrap();
        relayed().await;
        let ran = call_as(b, "alice", guarded(&input).confirmation(&id)).await;
        assert!(ran.is_ok(), "round {n}: {ran:?}");
        relayed().await;
        // Ended on the holder as used, and audited there.
        assert_eq!(
            a.confirmations().resolution(&id).map(|r| r.outcome),
            Some(ConfirmationOutcome::Approved)
        );
        let consumed = a
            .audit_log()
            .into_iter()
            .filter(|event| event.kind == AuditKind::ConfirmationConsumed)
            .count();
        assert_eq!(consumed, n + 1, "round {n}");
    }
    assert_eq!(replicas[1].1.runs(), 5);
}

#[tokio::test]
async fn as_confirm_003_a_retry_right_after_an_attempt_refused_before_it_ran_runs() {
    use crate::fixtures::AnswerById;
    let replicas = pair(agent_surface::registry::Limits::default());
    let (a, probe, _) = &replicas[0];
    let guarded = || Invocation::new("view:test.probe.guarded").input(json!({ "ids": ["x"] }));
    let id = crate::fixtures::confirmation_id(&call_as(a, "alice", guarded()).await);
    a.confirmations().approve_id(&id).unwrap();
    relayed().await;
    // The probe's queue is full: the approved call is refused before it
    // runs, and gives its approval back.
    let holds: Vec<_> = (0..3)
        .map(|n| {
            let a = a.clone();
            tokio::spawn(async move {
                call_as(
                    &a,
                    "bob",
                    Invocation::new("view:test.probe.hold").invocation_id(format!("h{n}")),
                )
                .await
            })
        })
        .collect();
    settle_tasks().await;
    let refused = call_as(a, "alice", guarded().confirmation(&id)).await;
    assert_eq!(code(&refused), Some(ErrorCode::RateLimited), "{refused:?}");
    probe.open();
    for hold in holds {
        let _ = hold.await;
    }
    // At once, with no time for the store to hear the approval was given
    // back: the retry waits for it, then runs.
    let retry = call_as(a, "alice", guarded().confirmation(&id)).await;
    assert!(retry.is_ok(), "{retry:?}");
}

#[test]
fn as_confirm_005_places_are_given_back_after_the_runtime_that_claimed_them_ended() {
    use crate::fixtures::AnswerById;
    let limits =
        agent_surface::registry::Limits::default().max_pending_confirmations_per_consumer(2);
    let first = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (replicas, ids) = first.block_on(async {
        let replicas = pair(limits);
        let mut ids = Vec::new();
        for n in 0..2 {
            let asked = guarded_as(&replicas[0].0, consumer("mallory"), &format!("d{n}")).await;
            ids.push(crate::fixtures::confirmation_id(&asked));
        }
        (replicas, ids)
    });
    drop(first);
    let second = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    second.block_on(async {
        let a = &replicas[0].0;
        for id in &ids {
            a.confirmations().deny_id(id).unwrap();
        }
        relayed().await;
        let again = guarded_as(a, consumer("mallory"), "e").await;
        assert_eq!(
            code(&again),
            Some(ErrorCode::ConfirmationRequired),
            "{again:?}"
        );
    });
}

#[tokio::test]
async fn as_confirm_001_an_answer_naming_another_request_is_refused_across_replicas() {
    let store: Arc<dyn SharedStore> = Arc::new(MemoryStore::new());
    let build = || {
        Registry::builder()
            .shared_store(Arc::clone(&store), Namespace::new("probe").unwrap())
            .approval_channel("console")
            .build()
    };
    let (a, b) = (build(), build());
    let probe = Probe::new();
    let _mounted = b.mount(probe.clone()).unwrap();
    let asked = call_as(
        &b,
        "alice",
        Invocation::new("view:test.probe.guarded").input(json!({ "ids": ["a"] })),
    )
    .await;
    let id = crate::fixtures::confirmation_id(&asked);
    for _ in 0..100 {
        if !a.confirmations().pending_everywhere().await.is_empty() {
            break;
        }
        settle_tasks().await;
    }
    let forged = agent_surface::confirmation::ShownRequest {
        confirmation_id: id.as_str().into(),
        digest: "0".repeat(64).into(),
    };
    let approver = a.confirmations().approver("console", "ada").unwrap();
    let refused = a
        .confirmations()
        .answer_anywhere(&forged, true, &approver, None)
        .await;
    assert_eq!(
        refused,
        Err(agent_surface::confirmation::ResolveError::NotShown)
    );
    assert!(b.confirmations().find(&id).is_some(), "still pending on B");
    // An undeclared channel on the holding replica is refused there.
    let c = Registry::builder()
        .shared_store(Arc::clone(&store), Namespace::new("probe").unwrap())
        .approval_channel("kiosk")
        .build();
    let kiosk = c.confirmations().approver("kiosk", "eve").unwrap();
    let shown = b.confirmations().find(&id).unwrap().shown();
    let refused = c
        .confirmations()
        .answer_anywhere(&shown, true, &kiosk, None)
        .await;
    assert_eq!(
        refused,
        Err(agent_surface::confirmation::ResolveError::NotPermitted)
    );
    assert!(b.confirmations().find(&id).is_some(), "still pending on B");
    // The refused answer does not block the person's own, which follows.
    let resolved = a
        .confirmations()
        .answer_anywhere(&shown, true, &approver, None)
        .await;
    assert!(resolved.is_ok(), "{resolved:?}");
    assert!(b.confirmations().find(&id).is_none(), "approved on B");
}

#[tokio::test(start_paused = true)]
async fn as_ident_001_a_stuck_claim_first_in_line_does_not_block_its_principal() {
    let store = MemoryStore::new();
    let fingerprint = Fingerprint::from_bytes([7; 16]);
    let lease = |key: &str| {
        let _ = key;
        Lease::new(fingerprint).within("quota", 3)
    };
    // A claim whose replica died: first to expire, never settled.
    let stuck = lease("k-0");
    assert_eq!(
        store.claim("k-0", &stuck, Duration::from_secs(60)).await,
        Ok(Claim::Leader)
    );
    tokio::time::advance(Duration::from_secs(1)).await;
    for key in ["k-1", "k-2"] {
        let own = lease(key);
        assert_eq!(
            store.claim(key, &own, Duration::from_secs(600)).await,
            Ok(Claim::Leader)
        );
        assert_eq!(
            store
                .settle(key, &own, "{}", Duration::from_secs(600))
                .await,
            Ok(true)
        );
    }
    // Full, the stuck claim first in line: a settled record gives way.
    let next = lease("k-3");
    assert_eq!(
        store.claim("k-3", &next, Duration::from_secs(600)).await,
        Ok(Claim::Leader)
    );
    assert_eq!(
        store
            .claim("k-0", &lease("k-0"), Duration::from_secs(60))
            .await,
        Ok(Claim::Running),
        "the running claim was evicted"
    );
}

/// A store that cannot be reached.
struct Down;

/// Every operation of [`Down`]: the connection is refused.
fn down<'a, T: Send + 'a>() -> BoxFuture<'a, Result<T, StoreError>> {
    Box::pin(async { Err(StoreError::Unavailable("connection refused".to_owned())) })
}

impl SharedStore for Down {
    fn put<'a>(
        &'a self,
        _: &'a str,
        _: &'a str,
        _: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        down()
    }
    fn put_new<'a>(
        &'a self,
        _: &'a str,
        _: &'a str,
        _: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        down()
    }
    fn get<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        down()
    }
    fn remove<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        down()
    }
    fn watch<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<String, StoreError>> {
        down()
    }
    fn enroll<'a>(
        &'a self,
        _: &'a str,
        _: &'a str,
        _: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        down()
    }
    fn unenroll<'a>(&'a self, _: &'a str, _: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        down()
    }
    fn members<'a>(
        &'a self,
        _: &'a str,
        _: usize,
    ) -> BoxFuture<'a, Result<Vec<String>, StoreError>> {
        down()
    }
    fn name(&self) -> &str {
        "down"
    }
    fn claim<'a>(
        &'a self,
        _: &'a str,
        _: &'a Lease,
        _: Duration,
    ) -> BoxFuture<'a, Result<Claim, StoreError>> {
        down()
    }
    fn wait<'a>(
        &'a self,
        _: &'a str,
        _: &'a Lease,
        _: Duration,
    ) -> BoxFuture<'a, Result<Claim, StoreError>> {
        down()
    }
    fn settle<'a>(
        &'a self,
        _: &'a str,
        _: &'a Lease,
        _: &'a str,
        _: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        down()
    }
    fn release<'a>(&'a self, _: &'a str, _: &'a Lease) -> BoxFuture<'a, Result<(), StoreError>> {
        down()
    }
    fn take<'a>(
        &'a self,
        _: &'a str,
        _: u32,
        _: Duration,
    ) -> BoxFuture<'a, Result<Taken, StoreError>> {
        down()
    }
    fn append<'a>(
        &'a self,
        _: &'a str,
        _: &'a str,
        _: usize,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        down()
    }
    fn records<'a>(
        &'a self,
        _: &'a str,
        _: usize,
    ) -> BoxFuture<'a, Result<Vec<String>, StoreError>> {
        down()
    }
}

#[tokio::test]
async fn as_ident_001_a_store_that_cannot_be_reached_fails_the_call_closed() {
    let replicas = replicas(Arc::new(Down), 1);
    let (registry, probe, _) = &replicas[0];
    let refused = call_as(registry, "alice", poke("d-1", &["a"])).await;
    assert_eq!(code(&refused), Some(ErrorCode::ExecutionFailed));
    let error = refused.error().unwrap();
    assert_eq!(error.detail("reason"), Some(&json!("store-unavailable")));
    assert_eq!(error.retry(), Retry::AfterDelay);
    assert_eq!(probe.runs(), 0, "the call ran without its claim");
    // Not remembered here either: once the store is back, the retry runs.
    let again = call_as(registry, "alice", poke("d-1", &["a"])).await;
    assert_eq!(code(&again), Some(ErrorCode::ExecutionFailed));
    // A call without an invocation id needs no claim.
    let plain = call_as(registry, "alice", Invocation::new("view:test.probe.read")).await;
    assert!(plain.is_ok(), "{plain:?}");
}

#[tokio::test]
async fn as_ident_001_a_principal_holds_a_bounded_number_of_records_in_the_store() {
    let store: Arc<dyn SharedStore> = Arc::new(MemoryStore::new());
    let registry = Registry::builder()
        .shared_store(Arc::clone(&store), Namespace::new("probe").unwrap())
        .limits(agent_surface::registry::Limits::default().shared_records_per_principal(3))
        .build();
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    // Three running calls fill the principal's share: a fourth is refused.
    let read = |id: String| Invocation::new("view:test.probe.read").invocation_id(id);
    let held: Vec<_> = (0..3)
        .map(|n| {
            let registry = registry.clone();
            tokio::spawn(async move {
                call_as(
                    &registry,
                    "flood",
                    Invocation::new("view:test.probe.readHeld").invocation_id(format!("h-{n}")),
                )
                .await
            })
        })
        .collect();
    settle_tasks().await;
    let refused = call_as(&registry, "flood", read("f-0".to_owned())).await;
    assert_eq!(code(&refused), Some(ErrorCode::RateLimited), "{refused:?}");
    assert_eq!(
        refused.error().unwrap().detail("reason"),
        Some(&json!("queue-full"))
    );
    // Another principal is not refused.
    let alice = call_as(&registry, "alice", read("a-0".to_owned())).await;
    assert!(alice.is_ok(), "{alice:?}");
    probe.open();
    for call in held {
        assert!(call.await.unwrap().is_ok());
    }
    // Settled, the oldest give way to new calls of their own principal.
    for n in 1..=3 {
        let result = call_as(&registry, "flood", read(format!("f-{n}"))).await;
        assert!(result.is_ok(), "{result:?}");
    }
}

#[tokio::test]
async fn as_ident_001_a_call_dropped_while_it_runs_is_settled_cancelled_for_every_replica() {
    let replicas = replicas(Arc::new(MemoryStore::new()), 2);
    let hold = || Invocation::new("view:test.probe.hold").invocation_id("dropped-1");
    let leader = tokio::spawn({
        let registry = replicas[0].0.clone();
        async move { call_as(&registry, "alice", hold()).await }
    });
    settle_tasks().await;
    leader.abort();
    let _ = leader.await;
    settle_tasks().await;
    replicas[1].1.open();
    // Not a wait for the whole lease, and never a second run.
    let retry = call_as(&replicas[1].0, "alice", hold()).await;
    assert_eq!(code(&retry), Some(ErrorCode::Cancelled), "{retry:?}");
    assert_eq!(replicas[1].1.runs(), 0);
}

#[tokio::test]
async fn as_ident_001_a_retry_dropped_while_it_waits_for_its_twin_keeps_no_answer_of_its_own() {
    let replicas = replicas(Arc::new(MemoryStore::new()), 2);
    let hold = || Invocation::new("view:test.probe.hold").invocation_id("w-1");
    let leader = tokio::spawn({
        let registry = replicas[1].0.clone();
        async move { call_as(&registry, "alice", hold()).await }
    });
    settle_tasks().await;
    let waiter = tokio::spawn({
        let registry = replicas[0].0.clone();
        async move { call_as(&registry, "alice", hold()).await }
    });
    settle_tasks().await;
    // The agent gave up on replica A while the call ran on B.
    waiter.abort();
    let _ = waiter.await;
    replicas[1].1.open();
    let ran = leader.await.unwrap();
    assert!(ran.is_ok(), "{ran:?}");
    // A's retry gets B's result, not a `CANCELLED` of its own.
    let retry = call_as(&replicas[0].0, "alice", hold()).await;
    assert_eq!(retry.output(), ran.output(), "{retry:?}");
    assert_eq!((replicas[0].1.runs(), replicas[1].1.runs()), (0, 1));
}

#[tokio::test(start_paused = true)]
async fn as_ident_001_a_twin_that_never_settles_times_the_retry_out_and_never_runs_it() {
    let replicas = replicas(Arc::new(MemoryStore::new()), 2);
    let hold = || Invocation::new("view:test.probe.hold").invocation_id("stuck-1");
    let leader = tokio::spawn({
        let registry = replicas[0].0.clone();
        async move { call_as(&registry, "alice", hold()).await }
    });
    settle_tasks().await;
    replicas[1].1.open();
    let retry = call_as(&replicas[1].0, "alice", hold()).await;
    assert_eq!(code(&retry), Some(ErrorCode::Timeout), "{retry:?}");
    assert_eq!(replicas[1].1.runs(), 0);
    leader.abort();
}
