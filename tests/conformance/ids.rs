//! AS-ID-001, AS-ID-003: the identity grammar.

use agent_surface::ids::{CapabilityId, CapabilityName, ComponentType, InstanceId, Plane};
use proptest::prelude::*;

#[test]
fn as_id_001_component_types_accept_reject_table() {
    for ok in [
        "devices",
        "devices.table",
        "a1.b-2.c",
        "x.y.z.w",
        "app.navigation",
    ] {
        assert!(ComponentType::new(ok).is_ok(), "{ok} should be accepted");
    }
    for bad in [
        "",
        "Devices",
        "devices.Table",
        "devices..table",
        ".devices",
        "devices.",
        "1devices",
        "devices.-x",
        "devices_table",
        "devices table",
        "devices:table",
        "dévices",
    ] {
        let err = ComponentType::new(bad).expect_err(bad);
        assert_eq!(err.kind(), "component type");
        assert!(!err.message().is_empty());
    }
    assert!(ComponentType::new(&"a".repeat(128)).is_ok());
    assert!(ComponentType::new(&"a".repeat(129)).is_err());
}

#[test]
fn as_id_001_capability_names_accept_reject_table() {
    for ok in ["selectRows", "read", "goTo", "v2", "aBC9"] {
        assert!(CapabilityName::new(ok).is_ok(), "{ok}");
    }
    for bad in [
        "",
        "SelectRows",
        "select_rows",
        "select-rows",
        "select.rows",
        "2fa",
        "sélection",
    ] {
        assert!(CapabilityName::new(bad).is_err(), "{bad}");
    }
}

#[test]
fn as_id_001_instance_ids_accept_reject_table() {
    for ok in ["default", "main", "device_456", "Row-7", "a", "_"] {
        assert!(InstanceId::new(ok).is_ok(), "{ok}");
    }
    for bad in ["", "main room", "a.b", "a:b", "a/b", "ä"] {
        assert!(InstanceId::new(bad).is_err(), "{bad}");
    }
    assert_eq!(InstanceId::default().as_str(), "default");
}

#[test]
fn as_id_001_capability_ids_parse_unambiguously() {
    let id = CapabilityId::new("view:devices.table.selectRows").unwrap();
    assert_eq!(id.plane(), Plane::View);
    assert_eq!(id.component_type_str(), Some("devices.table"));
    assert_eq!(id.name(), Some("selectRows"));

    let domain = CapabilityId::new("domain:devices.disable").unwrap();
    assert_eq!(domain.plane(), Plane::Domain);
    assert_eq!(domain.path(), "devices.disable");

    for bad in [
        "devices.table.selectRows",
        "view:devices",
        "view:devices.table.select_rows",
        "view:Devices.table.x",
        "ui:devices.table.x",
        "view:devices.table.",
        "domain:",
        "domain:devices..disable",
        "domain:devices_disable",
    ] {
        assert!(CapabilityId::new(bad).is_err(), "{bad}");
    }
    let long = format!("view:{}.x", "a".repeat(121));
    assert_eq!(long.len(), 128);
    assert!(CapabilityId::new(&long).is_ok());
    assert!(CapabilityId::new(&format!("view:{}.x", "a".repeat(122))).is_err());
}

/// A grammar-valid component type.
pub(crate) fn component_type() -> impl Strategy<Value = String> {
    prop::collection::vec("[a-z][a-z0-9-]{0,8}", 1..4).prop_map(|segments| segments.join("."))
}

/// A grammar-valid capability name.
pub(crate) fn capability_name() -> impl Strategy<Value = String> {
    "[a-z][a-zA-Z0-9]{0,12}"
}

/// A grammar-valid view capability id.
pub(crate) fn view_id() -> impl Strategy<Value = String> {
    (component_type(), capability_name()).prop_map(|(t, n)| format!("view:{t}.{n}"))
}

/// A grammar-valid instance id.
pub(crate) fn instance_id() -> impl Strategy<Value = String> {
    "[A-Za-z0-9_-]{1,16}"
}

proptest! {
    #[test]
    fn as_id_003_capability_ids_round_trip(component in component_type(), name in capability_name()) {
        let text = format!("view:{component}.{name}");
        let id = CapabilityId::new(&text).unwrap();
        prop_assert_eq!(id.to_string(), text.clone());
        prop_assert_eq!(id.component_type_str(), Some(component.as_str()));
        prop_assert_eq!(id.name(), Some(name.as_str()));
        let built = CapabilityId::view(
            &ComponentType::new(&component).unwrap(),
            &CapabilityName::new(&name).unwrap(),
        );
        prop_assert_eq!(&built, &id);
        let json = serde_json::to_string(&id).unwrap();
        let back: CapabilityId = serde_json::from_str(&json).unwrap();
        prop_assert_eq!(back, id);
    }

    #[test]
    fn as_id_003_types_and_instances_round_trip(component in component_type(), instance in instance_id()) {
        prop_assert_eq!(ComponentType::new(&component).unwrap().to_string(), component);
        prop_assert_eq!(InstanceId::new(&instance).unwrap().to_string(), instance);
    }

    #[test]
    fn as_id_003_arbitrary_text_never_panics(text in ".{0,140}") {
        // Parsing untrusted text returns a value or an error, never a panic,
        // and anything accepted formats back to itself.
        if let Ok(id) = CapabilityId::new(&text) {
            prop_assert_eq!(id.as_str(), text.as_str());
        }
        let _ = ComponentType::new(&text);
        let _ = InstanceId::new(&text);
    }
}
