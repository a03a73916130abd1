//! The registry's calls: what an adapter or a test asks of it — run a
//! call through the pipeline, take a snapshot — as methods of [`Registry`]
//! over the registry's services. The pipeline and the snapshot are
//! functions of those services (`invoke`, `snapshot`); this is the one
//! place `Registry` reaches them, above them in the layers.

use std::future::Future;

use super::Registry;
use crate::invoke::{Invocation, InvocationResult, InvokeOptions};
use crate::snapshot::{Snapshot, SnapshotOptions};

impl Registry {
    /// Runs one call through the ten-phase pipeline: dedupe, resolve,
    /// availability, authorize, effective input, invoke policies and
    /// confirmation, precondition, concurrency, execute, settle.
    ///
    /// Never panics; a handler's panic settles `EXECUTION_FAILED`. Every
    /// refusal is an [`InvocationResult`] with a code, a retry hint and
    /// structured details, never an `Err` of this function.
    pub fn invoke(
        &self,
        request: Invocation,
        options: InvokeOptions,
    ) -> impl Future<Output = InvocationResult> + Send + '_ {
        crate::invoke::invoke(self.services(), request, options)
    }

    /// Dedupe entries currently remembered (bounded by `dedupe_cache_size`).
    pub fn dedupe_len(&self) -> usize {
        self.services()
            .dedupe_if_made()
            .map_or(0, |dedupe| dedupe.len())
    }

    /// What `options.consumer` can see right now. Synchronous; never runs an
    /// observation.
    pub fn snapshot(&self, options: &SnapshotOptions) -> Snapshot {
        crate::snapshot::take(self.services(), options)
    }
}
