//! Contracts and the catalog: defaults, limits, internal metadata (AS-SNAP-002),
//! and schema defects only the generated schemas show.

use agent_surface::Kind;
use agent_surface::catalog::{self, Catalog};
use agent_surface::contract::ReasonSource;
use agent_surface::error::DefinitionErrorKind;
use agent_surface::prelude::*;
use agent_surface_tests::{Defective, INTERNAL_MARKER, Table};
use serde_json::json;

#[test]
fn contract_applies_the_defaults_table() {
    let contract = Table::contract().checked().unwrap();
    assert_eq!(contract.component_type().as_str(), "fixtures.table");
    assert_eq!(contract.default_instance().as_str(), "main");
    assert_eq!(contract.priority(), 5);
    assert_eq!(&**contract.origin(), "first-party");
    assert!(contract.enabled());

    let read = contract.capability("readState").unwrap();
    assert_eq!(read.kind(), Kind::Observation);
    assert_eq!(read.effect(), Effect::Read);
    assert!(read.idempotent());
    assert_eq!(read.confirmation(), Confirmation::Never);
    assert_eq!(read.audit(), Audit::None);
    assert!(read.input_schema().is_none());

    let select = contract.capability("selectRows").unwrap();
    assert_eq!(select.id(), "view:fixtures.table.selectRows");
    assert_eq!(
        (select.idempotent(), select.reversible()),
        (false, Some(true))
    );
    assert_eq!(
        (select.confirmation(), select.audit()),
        (Confirmation::Never, Audit::Metadata)
    );
    assert!(select.has_when() && select.has_precondition());
    assert_eq!(select.reason(), ReasonSource::Static("No rows are loaded"));
    assert!(
        select.output_schema().is_none(),
        "Result<(), _> has no output"
    );
    let input = select.input_schema().unwrap().json();
    assert_eq!(input["required"], json!(["ids"]));
    assert_eq!(input["properties"]["mode"]["default"], json!("replace"));

    let clear = contract.capability("clearSelection").unwrap();
    assert_eq!(clear.method(), "clear");
    assert!(clear.idempotent());
    assert_eq!(
        **clear.input_schema().unwrap().json(),
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    );
}

#[test]
fn as_snap_002_internal_metadata_is_never_serialized_from_a_contract() {
    let contract = Table::contract().checked().unwrap();
    // It is there for policies and audit sinks…
    assert_eq!(
        contract.internal().unwrap()["secret"],
        json!(INTERNAL_MARKER)
    );
    let select = contract.capability("selectRows").unwrap();
    assert_eq!(select.internal().unwrap()["owner"], json!(INTERNAL_MARKER));
    // …and nowhere in what is written out.
    let catalog = Catalog::load_valid().0;
    let outputs = [
        serde_json::to_string(contract).unwrap(),
        serde_json::to_string(select).unwrap(),
        catalog.to_json_pretty(),
        format!("{contract:?}"),
        format!("{select:?}"),
    ];
    for output in outputs {
        assert!(
            !output.contains(INTERNAL_MARKER),
            "internal metadata leaked: {output}"
        );
        assert!(!output.contains("acme"));
    }
    // Agent-visible metadata is serialized.
    assert_eq!(
        serde_json::to_value(contract).unwrap()["meta"],
        json!({"team": "fleet", "columns": 2})
    );
}

#[test]
fn schema_defects_only_schemars_shows_fail_the_contract_check() {
    let err = Defective::contract().checked().unwrap_err();
    assert_eq!(err.kind(), DefinitionErrorKind::UnsupportedSchema);
    assert_eq!(
        err.subject(),
        "view:fixtures.defective.address output schema"
    );
    let text = err.to_string();
    assert!(
        text.contains("keyword `format` at /properties/ip"),
        "{text}"
    );
    assert!(text.contains("ipv4"), "{text}");
    // The test #[agent_component] generates beside each component runs exactly
    // this check; under `cargo test` it fails with the keyword and pointer.
    let panic = std::panic::catch_unwind(|| {
        agent_surface::macro_support::check_contract(Defective::contract());
    })
    .unwrap_err();
    let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(message.contains("`Defective`"), "{message}");
    assert!(
        message.contains("keyword `format` at /properties/ip"),
        "{message}"
    );
}

#[test]
fn catalog_enumerates_every_authored_contract_deterministically() {
    let contracts = catalog::contracts();
    let types: Vec<&str> = contracts.iter().map(|c| c.component_type()).collect();
    assert!(types.contains(&"fixtures.table") && types.contains(&"fixtures.defective"));
    let mut sorted = types.clone();
    sorted.sort_unstable();
    assert_eq!(types, sorted);
    // The checked catalog fails on the defective contract…
    assert_eq!(
        Catalog::load().unwrap_err().kind(),
        DefinitionErrorKind::UnsupportedSchema
    );
    // …and the valid part serializes to the same bytes every time.
    let first = Catalog::load_valid().0.to_json_pretty();
    assert_eq!(first, Catalog::load_valid().0.to_json_pretty());
    let json: serde_json::Value = serde_json::from_str(&first).unwrap();
    let table = json["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "fixtures.table")
        .unwrap();
    assert_eq!(
        table["actions"][0]["capabilityId"],
        "view:fixtures.table.selectRows"
    );
    assert_eq!(table["actions"][0]["effect"], "local-state");
    assert_eq!(
        table["observations"][0]["outputSchema"]["properties"]["pageSize"]["maximum"],
        255
    );
}
