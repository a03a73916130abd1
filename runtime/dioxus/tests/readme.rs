//! The crate docs show `examples/live_app.rs`, which `cargo test` compiles,
//! by including the file itself in a code block: the two cannot drift apart
//! as long as the include stays.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code

#[test]
fn the_crate_docs_show_the_compiled_live_app_example() {
    let lib = include_str!("../src/lib.rs");
    assert!(
        lib.contains(
            "#![doc = \"```rust,no_run\"]\n\
             #![doc = include_str!(\"../examples/live_app.rs\")]\n\
             #![doc = \"```\"]\n"
        ),
        "src/lib.rs no longer shows examples/live_app.rs in its crate docs"
    );
    let docs = include_str!("../docs/binding.md");
    assert!(
        docs.contains("examples/live_app.rs"),
        "docs/binding.md no longer introduces the example"
    );
}

#[test]
fn the_readme_points_at_the_crate_docs() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    assert!(
        readme.contains("runtime/dioxus/examples/live_app.rs"),
        "README.md no longer names the Dioxus example"
    );
}
