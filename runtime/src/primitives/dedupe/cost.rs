//! What keeping a settled result costs the window's byte budget, and which
//! results are kept at all: a terminal result whose code is cacheable, not
//! a refusal of the evidence presented (`CONFIRMATION_INVALID` with reason
//! `mismatch`: the confirmation id is not part of the fingerprint, so the
//! retry with the right evidence must not be told `mismatch` again), and
//! not larger than the whole window.

use super::{KeyRef, WindowLimits};
use crate::invocation::InvocationResult;

/// Fixed cost of a settled record beyond its serialized result: the key,
/// the map entries and the bookkeeping.
const RECORD_OVERHEAD: usize = 160;

/// What keeping `result` under `key` costs the byte budget; `None` when it
/// is not kept (not cacheable, or larger than the whole window).
pub(super) fn cost(
    key: KeyRef<'_>,
    result: &InvocationResult,
    output_bytes: Option<usize>,
    budget: WindowLimits,
) -> Option<usize> {
    if !kept(result) {
        return None;
    }
    // A successful result costs its output, which phase 10 already
    // measured; anything else (an error payload, small) is counted here.
    let payload = match (result.is_ok(), output_bytes) {
        (true, Some(bytes)) => bytes,
        (true, None) if result.output().is_none() => 0,
        _ => serialized_len(result),
    };
    let bytes = RECORD_OVERHEAD + key.1.len() + result.capability_id().len() + payload;
    // Larger than the whole window: kept by nobody.
    (bytes <= budget.bytes).then_some(bytes)
}

/// Whether `result` is kept for its invocation id at all (in this window
/// and in a shared store's).
pub(crate) fn kept(result: &InvocationResult) -> bool {
    !result.error().is_some_and(|error| {
        !error.code().cacheable()
            // Evidence that did not match the request says nothing of the
            // request's fate (it is not part of its fingerprint): the retry
            // with the right evidence must not be told `mismatch` again.
            || (error.code() == crate::error::ErrorCode::ConfirmationInvalid
                && error.detail("reason").and_then(serde_json::Value::as_str) == Some("mismatch"))
            // The shared store failed: the call did not run, and its retry
            // with the same id must run once the store is back.
            || (error.code() == crate::error::ErrorCode::ExecutionFailed
                && error.detail("reason").and_then(serde_json::Value::as_str)
                    == Some("store-unavailable"))
    })
}

/// The serialized size of a result, counted without building the text.
fn serialized_len(result: &InvocationResult) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, result) {
        Ok(()) => count.0,
        // Unserializable: costs the whole window, so it is never kept.
        Err(_) => usize::MAX / 2,
    }
}
