//! One component type declared by two Rust types: the catalog refuses it,
//! naming both (a binary of its own: every contract linked into a test
//! binary is in its catalog).

use agent_surface::catalog::Catalog;
use agent_surface::error::DefinitionErrorKind;
use agent_surface::prelude::*;

/// The first declaration.
struct First;

/// A dial.
#[agent_component(type = "twice.dial")]
impl First {
    /// Its value.
    #[observation]
    fn value(&self) -> u32 {
        1
    }
}

/// The second declaration.
struct Second;

/// Another dial.
#[agent_component(type = "twice.dial")]
impl Second {
    /// Its value, as text.
    #[observation]
    fn value(&self) -> String {
        "one".to_owned()
    }
}

/// An unrelated component, kept.
struct Lamp;

/// A lamp.
#[agent_component(type = "twice.lamp")]
impl Lamp {
    /// Whether it is on.
    #[observation]
    fn on(&self) -> bool {
        true
    }
}

#[test]
fn a_component_type_declared_by_two_rust_types_is_refused_naming_both() {
    let error = Catalog::load().unwrap_err();
    assert_eq!(error.kind(), DefinitionErrorKind::InvalidDefinition);
    let text = error.to_string();
    assert!(text.contains("twice.dial"), "{text}");
    assert!(text.contains("First") && text.contains("Second"), "{text}");

    let (catalog, errors) = Catalog::load_valid();
    assert_eq!(errors.len(), 1, "{errors:?}");
    let types: Vec<&str> = catalog
        .components()
        .iter()
        .map(|contract| contract.component_type().as_str())
        .collect();
    assert_eq!(types, ["twice.dial", "twice.lamp"]);
}
