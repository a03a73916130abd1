//! Runs every case. Set `TRYBUILD=overwrite` to regenerate the `.stderr` files.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    for topic in [
        "ids",
        "descriptions",
        "effects",
        "names",
        "attributes",
        "signatures",
        "schemas",
        "placement",
        "multiple",
        "procedures",
    ] {
        cases.compile_fail(format!("{topic}/*.rs"));
    }
    cases.pass("pass/*.rs");
}

/// AS-EXPLAIN-004: the explain view is unreachable from what adapters and
/// applications import (the crate root, the prelude, the registry handle);
/// only its own `agent_surface::explain` path reaches it.
#[test]
fn as_explain_004_explain_is_unreachable_from_the_crate_root_prelude_and_registry() {
    trybuild::TestCases::new().compile_fail("explain/*.rs");
}
