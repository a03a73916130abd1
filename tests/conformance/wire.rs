//! AS-ID-002, AS-ID-004, AS-WIRE-004..007: wire names.

use agent_surface::ids::{CapabilityId, InstanceId};
use agent_surface::wire::{self, MAX_WIRE_NAME, SHORTENED_PREFIX, WireNames};
use proptest::prelude::*;

use crate::ids::{instance_id, view_id};

fn id(text: &str) -> CapabilityId {
    CapabilityId::new(text).unwrap()
}

fn long_id(tag: &str) -> CapabilityId {
    id(&format!("view:{}.{tag}", ["segment"; 9].join(".")))
}

#[test]
fn as_id_002_encoding_is_reversible_and_provider_safe() {
    let select = id("view:devices.table.selectRows");
    assert_eq!(wire::encode(&select), "view_devices__table__selectRows");
    assert_eq!(
        wire::decode("view_devices__table__selectRows"),
        Some(select.clone())
    );
    let disable = id("domain:devices.disable");
    assert_eq!(wire::encode(&disable), "domain_devices__disable");
    assert_eq!(wire::decode("domain_devices__disable"), Some(disable));
    assert!(wire::is_wire_safe(&wire::encode(&id("view:a-b.c-d.eF9"))));
}

#[test]
fn as_id_002_long_names_keep_56_characters_and_a_hash() {
    let long = long_id("selectEverythingVisible");
    let full = wire::encode(&long);
    assert!(full.len() > MAX_WIRE_NAME);
    let names = WireNames::assign([(long.clone(), None)]);
    let short = names.name_of(&long, None).unwrap();
    assert_eq!(short.len(), MAX_WIRE_NAME);
    assert_eq!(&short[..SHORTENED_PREFIX], &full[..SHORTENED_PREFIX]);
    assert!(
        short[SHORTENED_PREFIX..]
            .bytes()
            .all(|b| b.is_ascii_hexdigit())
    );
    assert!(wire::is_wire_safe(short));
    // Same input, same name: the hash is deterministic.
    let again = WireNames::assign([(long.clone(), None)]);
    assert_eq!(again.name_of(&long, None), Some(short));
}

#[test]
fn as_id_002_instances_are_disambiguated_with_at_suffix() {
    let select = id("view:devices.table.selectRows");
    let main = InstanceId::new("main").unwrap();
    let side = InstanceId::new("side_panel").unwrap();
    let names = WireNames::assign([
        (select.clone(), Some(main.clone())),
        (select.clone(), Some(side.clone())),
    ]);
    assert_eq!(
        names.name_of(&select, Some(&main)),
        Some("view_devices__table__selectRows_at_main")
    );
    assert_eq!(
        names.name_of(&select, Some(&side)),
        Some("view_devices__table__selectRows_at_side_panel")
    );
    assert_eq!(
        names.resolve("view_devices__table__selectRows_at_side_panel"),
        Some((&select, Some(&side)))
    );
}

#[test]
fn as_wire_004_emitted_names_never_exceed_64_characters() {
    let instance = InstanceId::new(&"i".repeat(60)).unwrap();
    let entries = vec![
        (long_id("a"), None),
        (long_id("b"), Some(instance.clone())),
        (id("view:x.y"), Some(instance)),
        (id("view:devices.table.selectRows"), None),
    ];
    let names = WireNames::assign(entries);
    assert_eq!(names.len(), 4);
    for (name, _, _) in names.iter() {
        assert!(name.len() <= MAX_WIRE_NAME, "{name}");
        assert!(wire::is_wire_safe(name), "{name}");
    }
}

#[test]
fn as_wire_005_assignment_is_deterministic_and_order_independent() {
    let entries: Vec<(CapabilityId, Option<InstanceId>)> = (0..20)
        .map(|n| (long_id(&format!("capability{n}")), None))
        .chain([(id("view:devices.table.selectRows"), None)])
        .collect();
    let forward = WireNames::assign(entries.clone());
    let mut reversed = entries.clone();
    reversed.reverse();
    let backward = WireNames::assign(reversed);
    let collect = |names: &WireNames| -> Vec<(String, String)> {
        names
            .iter()
            .map(|(n, id, _)| (n.to_owned(), id.to_string()))
            .collect()
    };
    assert_eq!(collect(&forward), collect(&backward));
    // A later snapshot with the same entries gives the same names.
    assert_eq!(collect(&WireNames::assign(entries)), collect(&forward));
}

#[test]
fn as_wire_006_no_two_entries_share_a_name_even_when_prefixes_collide() {
    // 200 ids sharing the same first 56 characters.
    let entries: Vec<(CapabilityId, Option<InstanceId>)> = (0..200)
        .map(|n| (long_id(&format!("x{n}")), None))
        .collect();
    let names = WireNames::assign(entries.clone());
    assert_eq!(names.len(), 200);
    let mut seen = std::collections::HashSet::new();
    for (name, _, _) in names.iter() {
        assert!(seen.insert(name.to_owned()), "duplicate {name}");
    }
    // A canonical 64-character name that equals another entry's shortened
    // form would collide; assignment re-encodes the shortened one.
    let victim = long_id("victim");
    let shortened = WireNames::assign([(victim.clone(), None)])
        .name_of(&victim, None)
        .unwrap()
        .to_owned();
    assert_eq!(shortened.len(), 64);
    let twin_text = shortened.replacen('_', ":", 1).replace("__", ".");
    let twin = CapabilityId::new(&twin_text).expect("the shortened name reads as a valid id");
    assert_eq!(
        wire::encode(&twin),
        shortened,
        "the twin's canonical name is the victim's short name"
    );
    for entries in [
        vec![(victim.clone(), None), (twin.clone(), None)],
        vec![(twin.clone(), None), (victim.clone(), None)],
    ] {
        let names = WireNames::assign(entries);
        let twin_name = names.name_of(&twin, None).unwrap();
        let victim_name = names.name_of(&victim, None).unwrap();
        assert_eq!(twin_name, shortened, "canonical names are never re-encoded");
        assert_ne!(victim_name, twin_name);
        assert_eq!(victim_name.len(), 64);
        assert_eq!(
            &victim_name[..48],
            &shortened[..48],
            "re-encoded with a longer hash"
        );
    }
}

#[test]
fn as_wire_007_name_map_round_trips_and_decode_never_guesses() {
    let main = InstanceId::new("main").unwrap();
    let entries = vec![
        (id("view:devices.table.selectRows"), None),
        (id("view:devices.table.readState"), Some(main.clone())),
        (long_id("deep"), None),
        (id("domain:devices.disable"), None),
    ];
    let names = WireNames::assign(entries.clone());
    for (capability, instance) in &entries {
        let name = names.name_of(capability, instance.as_ref()).unwrap();
        assert_eq!(names.resolve(name), Some((capability, instance.as_ref())));
        // Decoding without the map: only canonical, unshortened, unqualified
        // names decode, and then to exactly the right id.
        match wire::decode(name) {
            Some(decoded) => {
                assert_eq!(&decoded, capability);
                assert!(instance.is_none() && name.len() < MAX_WIRE_NAME);
            }
            None => assert!(instance.is_some() || name.len() == MAX_WIRE_NAME),
        }
    }
    for garbage in [
        "",
        "view",
        "view_",
        "view_devices",
        "view_devices___table__x",
        "view_devices__table__x_at_main",
        "ui_devices__x",
        "view_devices__Table__x",
        "view__devices__x",
        "VIEW_devices__x",
    ] {
        assert_eq!(wire::decode(garbage), None, "{garbage}");
    }
    assert_eq!(names.resolve("view_devices__table__unknown"), None);
}

proptest! {
    #[test]
    fn as_id_004_codec_round_trips_within_limits(text in view_id(), instance in proptest::option::of(instance_id())) {
        let capability = CapabilityId::new(&text).unwrap();
        let encoded = wire::encode(&capability);
        if encoded.len() < MAX_WIRE_NAME {
            prop_assert_eq!(wire::decode(&encoded), Some(capability.clone()));
        }
        let instance = instance.map(|i| InstanceId::new(&i).unwrap());
        let names = WireNames::assign([(capability.clone(), instance.clone())]);
        let name = names.name_of(&capability, instance.as_ref()).unwrap();
        prop_assert!(name.len() <= MAX_WIRE_NAME);
        prop_assert!(name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'));
        prop_assert_eq!(names.resolve(name), Some((&capability, instance.as_ref())));
        if let Some(decoded) = wire::decode(name) {
            prop_assert_eq!(decoded, capability);
        }
    }

    #[test]
    fn as_id_004_decode_of_arbitrary_text_is_none_or_exact(text in "[a-z_A-Z0-9-]{0,70}") {
        if let Some(id) = wire::decode(&text) {
            prop_assert_eq!(wire::encode(&id), text);
        }
    }
}
