//! Runs every case. Set `TRYBUILD=overwrite` to regenerate the `.stderr` files,
//! and `UI_CASES=<glob>` (e.g. `UI_CASES=schemas/*.rs`) to run only the
//! matching cases (several globs separated by spaces) while iterating.

const TOPICS: &[&str] = &[
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
    "bounds",
];

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    if let Ok(globs) = std::env::var("UI_CASES") {
        for glob in globs.split_whitespace() {
            if glob.starts_with("pass/") {
                cases.pass(glob);
            } else {
                cases.compile_fail(glob);
            }
        }
        return;
    }
    for topic in TOPICS {
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
