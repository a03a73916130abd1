//! Every attribute key, on the component and on capabilities.
#![forbid(unsafe_code)]

use agent_surface::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};

#[agent_schema]
pub struct Open {
    /// Device to open.
    #[agent_schema(unbounded)] pub device_id: String,
}

pub struct Drawer {
    open: AtomicBool,
}

#[agent_component(
    type = "devices.drawer",
    description = "The device detail drawer.",
    instance = "main",
    priority = -3,
    origin = "first-party",
    enabled = false,
    parent(type = "devices.page", instance = "main"),
    meta(team = "fleet", "x-version" = 2, beta = true, ratio = -0.5),
    internal(owner = "ops")
)]
impl Drawer {
    /// Whether the drawer is open.
    #[observation(name = "state", timeout = "250ms", meta(volatile = true), internal(k = 1))]
    fn read(&self) -> bool {
        self.open.load(Ordering::Relaxed)
    }

    #[action(
        description = "Open the drawer on a device.",
        effect = "local-state",
        idempotent = true,
        reversible = false,
        confirmation = "optional",
        audit = "full",
        precondition = "known_device",
        timeout = "2s"
    )]
    fn open(&self, input: Open) {
        let _ = input;
        self.open.store(true, Ordering::Relaxed);
    }

    /// Close the drawer.
    #[action(effect = "local-state", when = "is_open", unavailable_reason = "The drawer is already closed")]
    fn close(&self) {
        self.open.store(false, Ordering::Relaxed);
    }

    /// Close and forget.
    #[action(effect = "local-state", when = is_open, unavailable_reason = closed_reason)]
    fn reset(&self) {}

    fn is_open(&self) -> bool {
        self.open.load(Ordering::Relaxed)
    }

    fn closed_reason(&self) -> &'static str {
        "Open the drawer first"
    }

    fn known_device(&self, input: &Open, _ctx: &ReadContext) -> Result<(), PreconditionFailure> {
        if input.device_id.starts_with('d') {
            Ok(())
        } else {
            Err(PreconditionFailure::new("Unknown device"))
        }
    }
}

fn main() {
    let contract = Drawer::contract().checked().expect("valid contract");
    assert_eq!(contract.priority(), -3);
    assert!(!contract.enabled());
    assert_eq!(contract.default_instance().as_str(), "main");
    assert_eq!(contract.meta().unwrap()["x-version"], 2);
    let state = contract.capability("state").unwrap();
    assert_eq!(state.timeout_ms(), Some(250));
    let open = contract.capability("open").unwrap();
    assert_eq!(open.confirmation(), Confirmation::Optional);
    assert_eq!(open.audit(), Audit::Full);
    assert_eq!(open.reversible(), Some(false));
    assert!(open.idempotent());
    assert_eq!(&**open.description(), "Open the drawer on a device.");
    let _ = Drawer { open: AtomicBool::new(false) };
}
