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
