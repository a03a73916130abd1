//! Conformance tests, named by requirement id (`cargo test as_id` runs the
//! identity requirements, and so on).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]
// test code
// `generated` declares a component inside a test function: rustc reports
// its generated test as an inner item at the crate level only.
#![allow(unnameable_test_items)]

mod approval_channels;
mod attacks;
mod attacks_two;
mod audit_trail;
mod authoring;
mod authority;
mod canonical;
mod concurrency;
mod confirmation_integrity;
mod confirmations;
mod containment;
mod contracts;
mod declared_reach;
mod errors;
mod fairness;
mod fixtures;
mod generated;
mod harness;
mod hidden;
mod identity;
mod ids;
mod invalidate;
mod lifecycle;
mod nesting;
mod omitted;
mod outputs;
mod pipeline;
mod policies;
mod presence;
mod procedures;
mod rate_limits;
mod recursive;
mod reentrancy;
mod regressions;
mod reliability;
mod replicas;
mod replicas_races;
mod schema;
mod settlement;
mod signals;
mod staleness;
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
