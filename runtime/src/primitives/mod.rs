//! Primitives the registry and the pipeline are built from, each usable and
//! testable alone: the deduplication window, observation admission and
//! action queues.

pub(crate) mod concurrency;
pub(crate) mod dedupe;
