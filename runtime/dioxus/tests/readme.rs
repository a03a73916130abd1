//! The README's Dioxus example is `examples/live_app.rs`, which `cargo test`
//! compiles: the two must not drift apart.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code

#[test]
fn the_readme_shows_the_compiled_live_app_example() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    let example = include_str!("../examples/live_app.rs");
    let body: Vec<&str> = example
        .lines()
        .filter(|line| !line.starts_with("//!"))
        .collect();
    let body = body.join("\n");
    let body = body.trim_matches('\n');
    assert!(
        readme.contains(&format!("```rust,ignore\n{body}\n```")),
        "README.md's Dioxus example differs from runtime/dioxus/examples/live_app.rs"
    );
}
