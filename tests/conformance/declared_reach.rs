//! Reach configured at mount is declared, so review sees it: a component
//! references only the procedures its `#[reference(…)]` attributes declare,
//! every mount gives at least the declared gating, the declared policies
//! are installed on the reference, and policies are identified by type and
//! parameters, never by the name they report.

use std::sync::Arc;

use agent_surface::catalog::Catalog;
use agent_surface::policy::{self, Policy};
use agent_surface::prelude::*;
use agent_surface::procedure::ProcedureRef;
use agent_surface::registry::{MountError, Registry};
use serde_json::json;

use crate::procedures::{
    DisableDevices, ExportReport, FakeBackend, Screen, disable_ref, registry_for_user,
};

/// A table whose reference to `DisableDevices` is declared with gating.
#[derive(Default)]
pub(crate) struct Guarded;

/// A guarded table.
#[agent_component(type = "test.guarded")]
#[reference(
    DisableDevices,
    locked = [device_ids],
    when,
    confirmation = "required",
    policies = [policy::has_permission("devices:write")],
)]
impl Guarded {
    /// Whether the table is shown.
    #[observation]
    fn shown(&self) -> bool {
        true
    }
}

fn message(err: &MountError) -> String {
    err.to_string()
}

#[test]
fn as_contract_003_an_undeclared_reference_is_refused_at_mount() {
    let registry = Registry::builder().build();
    let err = registry
        .mounting(Arc::new(Guarded))
        .procedure(ProcedureRef::<ExportReport>::new())
        .mount()
        .unwrap_err();
    let text = message(&err);
    assert!(
        text.contains("does not declare a reference")
            && text.contains("#[reference(ExportReport)]"),
        "{text}"
    );
}

#[test]
fn as_contract_003_a_mount_giving_less_than_its_declaration_is_refused() {
    let registry = Registry::builder().build();
    let err = registry
        .mounting(Arc::new(Guarded))
        .procedure(ProcedureRef::<DisableDevices>::new())
        .mount()
        .unwrap_err();
    let text = message(&err);
    for part in ["locks `deviceIds`", "no `.when(…)`"] {
        assert!(text.contains(part), "{part}: {text}");
    }
}

#[tokio::test]
async fn as_contract_003_declared_policies_are_installed_on_every_mounted_reference() {
    let backend = FakeBackend::agreeing();
    let as_user = |permissions: serde_json::Value| {
        let registry = registry_for_user(permissions, &backend);
        let screen = Arc::new(Screen::default());
        screen.select(&["d1"]);
        // The mount writes no policy: the declaration's is installed.
        let mounted = registry
            .mounting(Arc::new(Guarded))
            .procedure(disable_ref(&screen).confirmation(Confirmation::Required))
            .mount()
            .unwrap();
        (registry, mounted, screen)
    };
    let sees = |registry: &Registry| {
        registry
            .snapshot(&SnapshotOptions::default())
            .procedures()
            .len()
    };
    let (viewer, _v, _s1) = as_user(json!(["devices:read"]));
    let (admin, _a, _s2) = as_user(json!(["devices:write"]));
    assert_eq!(sees(&viewer), 0);
    assert_eq!(sees(&admin), 1);
}

#[test]
fn as_contract_002_the_declaration_is_in_the_catalog_and_its_hash() {
    // The test binary also links deliberately defective fixtures.
    let (catalog, _defects) = Catalog::load_valid();
    let json = catalog.to_json();
    let guarded = json["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "test.guarded")
        .unwrap()
        .clone();
    let reference = &guarded["references"][0];
    assert_eq!(reference["procedureId"], "domain:test.devices.disable");
    assert_eq!(reference["boundFields"][0]["path"], "/deviceIds");
    assert_eq!(reference["conditional"], true);
    assert_eq!(reference["confirmation"], "required");
    assert_eq!(reference["policies"][0]["policy"], "hasPermission");
    assert_eq!(reference["policies"][0]["permission"], "devices:write");
}

/// A look-alike of the built-in rate limit.
struct LookAlike;

impl Policy for LookAlike {
    fn name(&self) -> &str {
        "rateLimit(10/60000ms)"
    }
}

#[test]
fn as_contract_002_policies_are_identified_by_type_and_parameters_never_by_name() {
    let builtin = policy::identity(&policy::rate_limit(10, std::time::Duration::from_secs(60)));
    let fake = policy::identity(&LookAlike);
    assert_eq!(
        policy::rate_limit(10, std::time::Duration::from_secs(60)).name(),
        LookAlike.name()
    );
    assert_ne!(builtin, fake);
    assert!(builtin.is_builtin() && !fake.is_builtin());
    assert!(
        fake.display().contains("custom") && fake.display().contains("LookAlike"),
        "{}",
        fake.display()
    );
    // Parameters a name does not show still tell built-ins apart.
    assert_ne!(
        policy::identity(&policy::authenticated()),
        policy::identity(&policy::authenticated_by("session"))
    );
    assert_ne!(
        policy::identity(&policy::require_confirmation()),
        policy::identity(&policy::require_confirmation().when(|_| true))
    );
}

fn exploding() -> agent_surface::policy::HasPermission {
    panic!("the policy expression panicked")
}

/// A table whose declared policy panics when it is built.
pub(crate) struct Exploding;

/// An exploding table.
#[agent_component(type = "test.exploding")]
#[reference(DisableDevices, policies = [exploding()])]
impl Exploding {
    /// Shown.
    #[observation]
    fn shown(&self) -> bool {
        true
    }
}

#[test]
fn as_contract_003_a_declared_policy_that_panics_fails_the_mount_without_escaping_it() {
    let registry = Registry::builder().build();
    let screen = Arc::new(Screen::default());
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        registry
            .mounting(Arc::new(Exploding))
            .procedure(disable_ref(&screen))
            .mount()
    }));
    let err = result.expect("the panic is contained").unwrap_err();
    assert!(
        message(&err).contains("panicked while it was built"),
        "{}",
        message(&err)
    );
}

/// Only a user holding `devices:write` in `host["user"]["permissions"]`.
fn strict_write() -> agent_surface::policy::HasPermission {
    policy::has_permission_with("devices:write", |host, permission| {
        host.get("user")
            .and_then(|user| user.get("permissions"))
            .and_then(serde_json::Value::as_array)
            .is_some_and(|held| held.iter().any(|p| p == permission))
    })
}

/// A table whose declared reference carries a policy with its own check.
#[derive(Default)]
pub(crate) struct StrictTable;

/// A table guarded by a strict declared check.
#[agent_component(type = "test.strict-table")]
#[reference(DisableDevices, locked = [device_ids], when, policies = [strict_write()])]
impl StrictTable {
    /// Whether the table is shown.
    #[observation]
    fn shown(&self) -> bool {
        true
    }
}

#[tokio::test]
async fn as_contract_003_a_mount_never_replaces_a_declared_policy_with_a_look_alike() {
    let backend = FakeBackend::agreeing();
    // Procedures a viewer (read permission only) is shown, with the mount
    // adding nothing, or a look-alike of the declared policy (the same
    // identity: `hasPermission(devices:write)`, check supplied) whose
    // check lets everyone through.
    let seen_by_viewer = |look_alike: bool| {
        let registry = registry_for_user(json!(["devices:read"]), &backend);
        let screen = Arc::new(Screen::default());
        screen.select(&["d1"]);
        let mut reference = disable_ref(&screen);
        if look_alike {
            reference = reference.policy(policy::has_permission_with("devices:write", |_, _| true));
        }
        let mounted = registry
            .mounting(Arc::new(StrictTable))
            .procedure(reference)
            .mount()
            .unwrap();
        let seen = registry
            .snapshot(&SnapshotOptions::default())
            .procedures()
            .len();
        drop(mounted);
        seen
    };
    assert_eq!(seen_by_viewer(false), 0, "the declared policy hides it");
    assert_eq!(seen_by_viewer(true), 0, "a look-alike only adds");
    // A writer still sees it, with or without the look-alike.
    let registry = registry_for_user(json!(["devices:write"]), &backend);
    let screen = Arc::new(Screen::default());
    screen.select(&["d1"]);
    let _mounted = registry
        .mounting(Arc::new(StrictTable))
        .procedure(
            disable_ref(&screen).policy(policy::has_permission_with("devices:write", |_, _| true)),
        )
        .mount()
        .unwrap();
    assert_eq!(
        registry
            .snapshot(&SnapshotOptions::default())
            .procedures()
            .len(),
        1
    );
}
