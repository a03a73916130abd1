//! Person-proven approvals: a request the host marks needs a proof of
//! presence its verifier accepts for exactly that request; a click, the
//! host's own word or an agent's connection never suffices
//! (AS-CONFIRM-001, -003, -004).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_surface::audit::AuditKind;
use agent_surface::confirmation::{
    PresenceChallenge, PresenceMethod, PresenceRefusal, PresenceRule, PresenceVerifier,
    ResolveError, VerifiedPresence,
};
use agent_surface::prelude::*;
use agent_surface::registry::Registry;
use agent_surface_passkeys::{OneTimeCodes, PresenceMethods};
use serde_json::{Value, json};

use crate::fixtures::{Probe, call, confirmation_id};

fn guarded(ids: &[&str]) -> Invocation {
    Invocation::new("view:test.probe.guarded").input(json!({"ids": ids}))
}

/// A verifier that answers as told by the proof (`{"for": …, "uv": …}`),
/// counting its calls: what a host's verifier says, the registry checks.
#[derive(Default)]
struct Told {
    calls: AtomicUsize,
}

impl PresenceVerifier for Told {
    fn verify(
        &self,
        challenge: &PresenceChallenge,
        person: &str,
        proof: &Value,
    ) -> Result<VerifiedPresence, PresenceRefusal> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if proof["panic"] == json!(true) {
            panic!("a verifier that panics");
        }
        if person != "alice" {
            return Err(PresenceRefusal::NotRegistered);
        }
        let id = proof["for"].as_str().unwrap_or(&challenge.confirmation_id);
        let digest = proof["digest"].as_str().unwrap_or(&challenge.digest);
        Ok(VerifiedPresence {
            method: PresenceMethod::Webauthn,
            credential_id: Arc::from("cred-1"),
            user_verified: proof["uv"] != json!(false),
            confirmation_id: Arc::from(id),
            digest: Arc::from(digest),
        })
    }
}

fn registry_with(verifier: impl PresenceVerifier) -> Registry {
    Registry::builder()
        .environment(Environment::Test)
        .approval_channel("console")
        .require_presence(
            PresenceRule::none().capability("view:test.probe.guarded"),
            verifier,
        )
        .build()
}

#[tokio::test]
async fn as_confirm_001_a_request_that_needs_presence_refuses_every_plain_approval() {
    let told = Arc::new(Told::default());
    let registry = registry_with(Arc::clone(&told));
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let id = confirmation_id(&call(&registry, guarded(&["a"])).await);
    let confirmations = registry.confirmations();
    let pending = confirmations.find(&id).unwrap();
    assert!(pending.presence_required);
    let shown = pending.shown();
    let console = confirmations.approver("console", "alice").unwrap();

    // The dialog's click, the host's own word, the agent's own connection:
    // none approves it.
    assert_eq!(
        confirmations.resolve(&shown, true, &console),
        Err(ResolveError::PresenceRequired)
    );
    assert_eq!(
        confirmations.approve(&shown),
        Err(ResolveError::PresenceRequired)
    );
    let consumer = agent_surface::context::Consumer::new(ConsumerKind::Mcp, "s1");
    let connection = confirmations.connection_approver("mcp-elicitation", &consumer, "client");
    assert!(confirmations.resolve(&shown, true, &connection).is_err());
    assert_eq!(
        confirmations.approve_with_presence(&shown, &connection, &json!({})),
        Err(ResolveError::NotPermitted),
        "only an in-app channel carries the person's proof"
    );
    assert_eq!(told.calls.load(Ordering::SeqCst), 0);
    let still = call(&registry, guarded(&["a"]).confirmation(&id)).await;
    assert_eq!(
        still.error().map(ErrorPayload::code),
        Some(ErrorCode::ConfirmationRequired)
    );
    assert_eq!(probe.runs(), 0);

    // A request the rule does not cover is approved as before; denying
    // needs no proof.
    let other = confirmation_id(
        &call(
            &registry,
            Invocation::new("view:test.probe.guardedToo").input(json!({"ids": ["b"]})),
        )
        .await,
    );
    let other = confirmations.find(&other).unwrap();
    assert!(!other.presence_required);
    assert!(
        confirmations
            .resolve(&other.shown(), true, &console)
            .is_ok()
    );
    assert!(confirmations.resolve(&shown, false, &console).is_ok());
}

#[tokio::test]
async fn as_confirm_001_a_proof_counts_only_for_its_request_and_a_verified_person() {
    let told = Arc::new(Told::default());
    let registry = registry_with(Arc::clone(&told));
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let a = confirmation_id(&call(&registry, guarded(&["a"])).await);
    let b = confirmation_id(&call(&registry, guarded(&["b"])).await);
    let confirmations = registry.confirmations();
    let shown_a = confirmations.find(&a).unwrap().shown();
    let shown_b = confirmations.find(&b).unwrap().shown();
    let alice = confirmations.approver("console", "alice").unwrap();
    let bob = confirmations.approver("console", "bob").unwrap();

    let refused = |shown, approver, proof: Value| {
        confirmations.approve_with_presence(shown, approver, &proof)
    };
    // A proof the verifier says is for B does not approve A.
    assert_eq!(
        refused(&shown_a, &alice, json!({"for": &*b})),
        Err(ResolveError::PresenceRefused(PresenceRefusal::OtherRequest))
    );
    assert_eq!(
        refused(&shown_a, &alice, json!({"digest": &*shown_b.digest})),
        Err(ResolveError::PresenceRefused(PresenceRefusal::OtherRequest))
    );
    // No user verification, another person, a panicking verifier.
    assert_eq!(
        refused(&shown_a, &alice, json!({"uv": false})),
        Err(ResolveError::PresenceRefused(PresenceRefusal::NotVerified))
    );
    assert_eq!(
        refused(&shown_a, &bob, json!({})),
        Err(ResolveError::PresenceRefused(
            PresenceRefusal::NotRegistered
        ))
    );
    assert_eq!(
        refused(&shown_a, &alice, json!({"panic": true})),
        Err(ResolveError::PresenceRefused(PresenceRefusal::Unavailable))
    );
    assert_eq!(confirmations.pending().len(), 2, "nothing was resolved");

    let resolution = refused(&shown_a, &alice, json!({})).unwrap();
    let verified = resolution.person_verified.clone().unwrap();
    assert_eq!(verified.method, PresenceMethod::Webauthn);
    assert_eq!(&*verified.credential_id, "cred-1");
    assert_eq!(confirmations.resolution(&a), Some(resolution));
    let run = call(&registry, guarded(&["a"]).confirmation(&a)).await;
    assert!(run.is_ok(), "{run:?}");
    assert_eq!(probe.runs(), 1);
    let approved = registry
        .audit_log()
        .into_iter()
        .find(|event| event.kind == AuditKind::ConfirmationApproved)
        .unwrap();
    let detail = approved.detail.unwrap();
    assert_eq!(detail["personVerified"], json!("webauthn"));
    assert_eq!(detail["credentialId"], json!("cred-1"));
    assert_eq!(detail["approver"], json!("alice"));
}

#[tokio::test]
async fn as_confirm_003_a_proof_of_presence_is_single_use() {
    let codes = OneTimeCodes::new("terminal").unwrap();
    let registry = registry_with(PresenceMethods::new().codes(codes.clone()));
    let probe = Probe::new();
    let _mounted = registry.mount(probe.clone()).unwrap();
    let confirmations = registry.confirmations();
    let alice = confirmations.approver("console", "alice").unwrap();

    let a = confirmation_id(&call(&registry, guarded(&["a"])).await);
    let pending = confirmations.find(&a).unwrap();
    let code = codes.issue(&pending.presence_challenge());
    let proof = json!({"method": "out-of-band", "code": code});
    let resolution = confirmations
        .approve_with_presence(&pending.shown(), &alice, &proof)
        .unwrap();
    assert_eq!(
        resolution.person_verified.map(|p| p.method),
        Some(PresenceMethod::OutOfBand)
    );
    assert_eq!(
        confirmations.approve_with_presence(&pending.shown(), &alice, &proof),
        Err(ResolveError::NotPending)
    );
    assert!(
        call(&registry, guarded(&["a"]).confirmation(&a))
            .await
            .is_ok()
    );

    // The same code, typed for the next request, approves nothing.
    let b = confirmation_id(&call(&registry, guarded(&["b"])).await);
    let next = confirmations.find(&b).unwrap();
    codes.issue(&next.presence_challenge());
    assert!(matches!(
        confirmations.approve_with_presence(&next.shown(), &alice, &proof),
        Err(ResolveError::PresenceRefused(_))
    ));
    assert_eq!(probe.runs(), 1);
}

#[tokio::test]
async fn as_confirm_004_a_proof_is_checked_against_the_request_as_it_is_now() {
    // A verifier that keeps the first challenge it saw and answers with it:
    // what it says is compared with the request, never trusted.
    struct Stale(std::sync::Mutex<Option<PresenceChallenge>>);
    impl PresenceVerifier for Stale {
        fn verify(
            &self,
            challenge: &PresenceChallenge,
            _: &str,
            _: &Value,
        ) -> Result<VerifiedPresence, PresenceRefusal> {
            let mut kept = self.0.lock().unwrap();
            let first = kept.get_or_insert_with(|| challenge.clone()).clone();
            Ok(VerifiedPresence {
                method: PresenceMethod::Webauthn,
                credential_id: Arc::from("cred"),
                user_verified: true,
                confirmation_id: first.confirmation_id,
                digest: first.digest,
            })
        }
    }
    let stale = Arc::new(Stale(std::sync::Mutex::new(None)));
    let registry = registry_with(Arc::clone(&stale));
    let _mounted = registry.mount(Probe::new()).unwrap();
    let confirmations = registry.confirmations();
    let alice = confirmations.approver("console", "alice").unwrap();
    let a = confirmation_id(&call(&registry, guarded(&["a"])).await);
    let b = confirmation_id(&call(&registry, guarded(&["b"])).await);
    let shown_a = confirmations.find(&a).unwrap().shown();
    let shown_b = confirmations.find(&b).unwrap().shown();
    assert!(
        confirmations
            .approve_with_presence(&shown_a, &alice, &json!({}))
            .is_ok()
    );
    assert_eq!(
        confirmations.approve_with_presence(&shown_b, &alice, &json!({})),
        Err(ResolveError::PresenceRefused(PresenceRefusal::OtherRequest))
    );
}

#[tokio::test]
async fn a_registry_without_a_verifier_refuses_every_proof() {
    let registry = Registry::builder()
        .environment(Environment::Test)
        .approval_channel("console")
        .build();
    let _mounted = registry.mount(Probe::new()).unwrap();
    let confirmations = registry.confirmations();
    let id = confirmation_id(&call(&registry, guarded(&["a"])).await);
    let pending = confirmations.find(&id).unwrap();
    assert!(!pending.presence_required);
    let alice = confirmations.approver("console", "alice").unwrap();
    assert_eq!(
        confirmations.approve_with_presence(&pending.shown(), &alice, &json!({})),
        Err(ResolveError::PresenceRefused(PresenceRefusal::Unavailable))
    );
}
