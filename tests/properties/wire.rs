//! AS-ID-004: the wire-name codec round-trips within provider limits and
//! stays in the safe alphabet.

use agent_surface::ids::{CapabilityId, InstanceId};
use agent_surface::wire::{self, MAX_WIRE_NAME, WireNames};
use proptest::prelude::*;

use crate::{QUICK, check, full};

/// A grammar-valid capability id of either plane.
fn capability_id() -> impl Strategy<Value = String> {
    let component =
        prop::collection::vec("[a-z][a-z0-9-]{0,12}", 1..5).prop_map(|segments| segments.join("."));
    let name = "[a-z][a-zA-Z0-9]{0,20}";
    (prop_oneof![Just("view"), Just("domain")], component, name)
        .prop_map(|(plane, component, name)| format!("{plane}:{component}.{name}"))
}

fn round_trip((text, instance): (String, Option<String>)) -> Result<(), TestCaseError> {
    let capability = CapabilityId::new(&text).unwrap();
    let encoded = wire::encode(&capability);
    if encoded.len() < MAX_WIRE_NAME {
        prop_assert_eq!(wire::decode(&encoded), Some(capability.clone()));
    }
    let instance = instance.map(|i| InstanceId::new(&i).unwrap());
    let names = WireNames::assign([(capability.clone(), instance.clone())]);
    let name = names.name_of(&capability, instance.as_ref()).unwrap();
    prop_assert!(wire::is_wire_safe(name), "{}", name);
    prop_assert_eq!(names.resolve(name), Some((&capability, instance.as_ref())));
    if let Some(decoded) = wire::decode(name) {
        prop_assert_eq!(decoded, capability);
        prop_assert!(instance.is_none());
    }
    Ok(())
}

fn ids() -> impl Strategy<Value = (String, Option<String>)> {
    (capability_id(), proptest::option::of("[A-Za-z0-9_-]{1,24}"))
}

fn decode_never_guesses(text: String) -> Result<(), TestCaseError> {
    if let Some(id) = wire::decode(&text) {
        prop_assert_eq!(wire::encode(&id), text);
    }
    Ok(())
}

#[test]
fn as_id_004_wire_names_round_trip() {
    check(QUICK, ids(), round_trip);
    check(QUICK, "[a-z_A-Z0-9:.-]{0,70}", decode_never_guesses);
}

#[test]
#[ignore = "100 000 cases: run with --release -- --ignored"]
fn as_id_004_wire_names_round_trip_full() {
    check(full(), ids(), round_trip);
    check(full(), "[a-z_A-Z0-9:.-]{0,70}", decode_never_guesses);
}
