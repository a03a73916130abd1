//! Conformance tests, named by requirement id (`cargo test as_id` runs the
//! identity requirements, and so on).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)] // test code

mod authoring;
mod canonical;
mod concurrency;
mod confirmations;
mod containment;
mod contracts;
mod errors;
mod fixtures;
mod harness;
mod hidden;
mod identity;
mod ids;
mod lifecycle;
mod nesting;
mod pipeline;
mod policies;
mod procedures;
mod schema;
mod supplied_schema;
mod toolset;
mod wire;

/// The specification folder beside the checkout, when present.
pub(crate) fn shared_spec_file(name: &str) -> Option<std::path::PathBuf> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/spec")
        .join(name);
    path.exists().then_some(path)
}
