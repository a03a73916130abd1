//! Request bounds: the identifier lengths, input size and input depth every
//! invocation is checked against at its very start, before deduplication,
//! audit, confirmation or any recursive walk sees it.
//!
//! - Every agent-supplied identifier (invocation, capability, instance,
//!   registration and confirmation ids, and the surface-version hint) is at
//!   most `Limits::max_id_bytes` bytes.
//! - The input nests at most `Limits::max_input_depth` arrays and objects,
//!   measured with an explicit stack (no recursion, stops at the limit).
//! - The input's canonical JSON is at most `Limits::max_input_bytes` bytes,
//!   counted while streaming and abandoned as soon as it is over.
//!
//! A request over any bound settles `INVALID_INPUT` whose issues name the
//! field (`/invocationId`, …; `""` for the input, as schema issues do) and
//! the limit, never the value. The matrix allows no `reason` detail for
//! `INVALID_INPUT`, so the issue messages are the stable part.
//!
//! The refused result never echoes an oversized value: an invocation id over
//! the limit is replaced by a freshly minted one (a prefix could collide with
//! a real id of the same consumer), and a capability id over the limit is
//! cut to the limit on a character boundary. Nothing of a refused request is
//! remembered (no dedupe record, no audit event): it never ran.

use std::sync::Arc;

use serde_json::Value;

pub(crate) use crate::util::nesting::{depth_within, dispose, truncated};

use super::{Invocation, InvocationResult};
use crate::canonical::{Measure, measure};
use crate::error::ErrorPayload;
use crate::registry::{Limits, Services};
use crate::schema::Issue;

/// Checks every bound of `request`; the error is the agent-facing refusal.
#[cfg(test)]
pub(crate) fn check_request(request: &Invocation, limits: &Limits) -> Result<(), ErrorPayload> {
    check_request_fingerprinting(request, limits, false).map(|_| ())
}

/// Checks every bound of `request` (the error is the agent-facing
/// refusal); with `fingerprint`, also the request's fingerprint,
/// computed in the same walk of the input as its bounds (only once every
/// identifier is within its bound, so nothing oversized is hashed).
pub(crate) fn check_request_fingerprinting(
    request: &Invocation,
    limits: &Limits,
    fingerprint: bool,
) -> Result<Option<u64>, ErrorPayload> {
    let ids = [
        ("/invocationId", request.invocation_id.as_deref()),
        ("/capabilityId", Some(request.capability_id.as_str())),
        ("/instanceId", request.instance_id.as_deref()),
        ("/registrationId", request.registration_id.as_deref()),
        ("/confirmationId", request.confirmation_id.as_deref()),
        ("/surfaceVersion", request.surface_version.as_deref()),
    ];
    let mut issues: Vec<Issue> = ids
        .into_iter()
        .filter(|(_, id)| id.is_some_and(|id| id.len() > limits.max_id_bytes))
        .map(|(pointer, _)| id_too_long(pointer, limits.max_id_bytes))
        .collect();
    let mut hash = None;
    if fingerprint && issues.is_empty() {
        let (fingerprint, measured) = request.keyed_fingerprint_measuring(
            super::dedupe_fingerprint::hasher(),
            limits.max_input_depth,
            limits.max_input_bytes,
        );
        hash = Some(fingerprint);
        if let (Some(input), Some(measured)) = (&request.input, measured)
            && let Err(issue) = verdict(measured, input, limits)
        {
            issues.push(issue);
        }
    } else if let Some(input) = &request.input
        && let Err(issue) = check_input(input, limits)
    {
        issues.push(issue);
    }
    if issues.is_empty() {
        Ok(hash)
    } else {
        Err(ErrorPayload::invalid_input(&issues))
    }
}

/// The issue for an identifier over `max` bytes at `pointer`.
pub fn id_too_long(pointer: &str, max: usize) -> Issue {
    Issue::new(pointer, format!("must be at most {max} bytes long"))
}

/// Checks an input's depth, then its size; the issue is at `""` (the whole
/// input).
pub(crate) fn check_input(input: &Value, limits: &Limits) -> Result<(), Issue> {
    // One walk for both bounds.
    verdict(
        measure(input, limits.max_input_depth, limits.max_input_bytes),
        input,
        limits,
    )
}

/// The issue for an input `measured` so; depth is reported first, so a
/// value the walk left early for its size has its depth checked to the end.
fn verdict(measured: Measure, input: &Value, limits: &Limits) -> Result<(), Issue> {
    match measured {
        Measure::Len(_) => Ok(()),
        Measure::TooLarge if depth_within(input, limits.max_input_depth) => {
            Err(too_large("", limits.max_input_bytes))
        }
        Measure::TooDeep | Measure::TooLarge => Err(too_deep("", limits.max_input_depth)),
    }
}

/// The issue for a value at `pointer` larger than `max` bytes as JSON.
pub fn too_large(pointer: &str, max: usize) -> Issue {
    Issue::new(
        pointer,
        format!("is larger than {max} bytes as JSON; send less"),
    )
}

/// The issue for a value at `pointer` nested deeper than `max`.
pub fn too_deep(pointer: &str, max: usize) -> Issue {
    Issue::new(
        pointer,
        format!("nests deeper than {max} levels of arrays and objects"),
    )
}

/// The settled result of a request [`check_request_fingerprinting`] refused: nothing of it
/// ran or is remembered, and no oversized value is echoed.
pub(crate) fn refuse(
    services: &Services,
    mut request: Invocation,
    error: ErrorPayload,
) -> InvocationResult {
    let inner = services;
    let max = inner.limits().max_id_bytes;
    let invocation_id: Arc<str> = match request.invocation_id.take() {
        Some(id) if id.len() <= max => Arc::from(id),
        _ => inner.ids().invocation_id_arc(),
    };
    let capability_id: Arc<str> = Arc::from(truncated(&request.capability_id, max));
    if let Some(input) = request.input.take() {
        dispose(input);
    }
    InvocationResult::new(
        invocation_id,
        capability_id,
        Err(error),
        inner.version(),
        false,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// An array nesting `depth` arrays, built without recursion.
    fn nested(depth: usize) -> Value {
        let mut value = Value::Null;
        for _ in 0..depth {
            value = Value::Array(vec![value]);
        }
        value
    }

    #[test]
    fn an_input_too_large_and_too_deep_is_refused_for_its_depth() {
        let limits = Limits::default();
        // The walk passes the size bound (a long string first) before it
        // reaches the depth bound (later in the same array): depth is
        // still what is reported, as when the two were separate walks.
        let big = "x".repeat(limits.max_input_bytes + 1);
        let value = Value::Array(vec![Value::String(big), nested(limits.max_input_depth + 5)]);
        let issue = check_input(&value, &limits).unwrap_err();
        assert_eq!(issue, too_deep("", limits.max_input_depth));
        dispose(value);
        let large = Value::String("x".repeat(limits.max_input_bytes + 1));
        assert_eq!(
            check_input(&large, &limits).unwrap_err(),
            too_large("", limits.max_input_bytes)
        );
        assert_eq!(check_input(&nested(3), &limits), Ok(()));
    }

    #[test]
    fn depth_counts_arrays_and_objects() {
        assert!(depth_within(&json!(1), 0));
        assert!(!depth_within(&json!([]), 0));
        assert!(depth_within(&json!([{}]), 2));
        assert!(!depth_within(&json!([{"a": [1]}]), 2));
        assert!(depth_within(&json!([[1], {"a": [1]}]), 3));
        let depth_up_to = crate::util::nesting::depth_up_to;
        assert_eq!(depth_up_to(&json!(1), 5), 0);
        assert_eq!(depth_up_to(&json!([[1], {"a": [1]}]), 5), 3);
        assert_eq!(depth_up_to(&json!([[1], {"a": [1]}]), 2), 3);
        assert_eq!(depth_up_to(&nested(64), usize::MAX), 64);
        assert!(depth_within(&nested(64), 64));
        let deep = nested(65);
        assert!(!depth_within(&deep, 64));
        dispose(deep);
    }

    #[test]
    fn truncation_keeps_whole_characters() {
        assert_eq!(truncated("abc", 5), "abc");
        assert_eq!(truncated("aéb", 2), "a");
        assert_eq!(truncated("aéb", 3), "aé");
    }

    #[test]
    fn every_identifier_is_bounded_and_named_without_its_value() {
        let limits = Limits::default();
        let long = "x".repeat(limits.max_id_bytes + 1);
        let request = Invocation::new(long.clone())
            .invocation_id(long.clone())
            .instance(long.clone())
            .registration(long.clone())
            .surface_version(long.clone())
            .confirmation(long.clone());
        let error = check_request(&request, &limits).unwrap_err();
        let issues = error.detail("issues").unwrap().as_array().unwrap();
        let paths: Vec<&str> = issues.iter().map(|i| i["path"].as_str().unwrap()).collect();
        assert_eq!(
            paths,
            [
                "/invocationId",
                "/capabilityId",
                "/instanceId",
                "/registrationId",
                "/confirmationId",
                "/surfaceVersion"
            ]
        );
        assert!(!serde_json::to_string(&error).unwrap().contains("xxx"));
        let exact = Invocation::new("x".repeat(limits.max_id_bytes));
        assert!(check_request(&exact, &limits).is_ok());
    }

    #[test]
    fn the_input_is_bounded_by_depth_then_size() {
        let limits = Limits::default();
        let deep = Invocation::new("view:a.b.c").input(nested(limits.max_input_depth + 1));
        let error = check_request(&deep, &limits).unwrap_err();
        if let Some(input) = deep.input {
            dispose(input);
        }
        let text = serde_json::to_string(&error).unwrap();
        assert!(text.contains("nests deeper than 64"), "{text}");
        let big =
            Invocation::new("view:a.b.c").input(json!({"s": "x".repeat(limits.max_input_bytes)}));
        let error = check_request(&big, &limits).unwrap_err();
        let text = serde_json::to_string(&error).unwrap();
        assert!(text.contains("larger than 262144 bytes"), "{text}");
        let fits = Invocation::new("view:a.b.c")
            .input(json!({"s": "x".repeat(limits.max_input_bytes - 8)}));
        assert!(check_request(&fits, &limits).is_ok());
    }

    #[test]
    fn the_keyed_fingerprint_tells_apart_bytes_moved_between_fields() {
        let keyed = |request: &Invocation| {
            request
                .keyed_fingerprint_measuring(
                    crate::invoke::dedupe_fingerprint::hasher(),
                    usize::MAX,
                    usize::MAX,
                )
                .0
        };
        let requests = [
            Invocation::new("view:a.b.c")
                .instance("ab")
                .registration("c"),
            Invocation::new("view:a.b.c")
                .instance("a")
                .registration("bc"),
            Invocation::new("view:a.b.c")
                .registration("ab")
                .surface_version("c"),
            Invocation::new("view:a.b.c").instance("ab"),
            Invocation::new("view:a.b.c").registration("ab"),
            Invocation::new("view:a.b.c"),
            Invocation::new("view:a.b.c").input(json!({})),
            Invocation::new("view:a.b.c").input(json!("")),
            Invocation::new("view:a.b.c").instance("").input(json!({})),
            Invocation::new("view:a.b.cab"),
        ];
        let mut seen: Vec<u64> = requests.iter().map(keyed).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), requests.len());
        // Key order in the input is not part of the request.
        let one = Invocation::new("view:a.b.c").input(json!({"a": 1, "b": [true, null]}));
        let two = Invocation::new("view:a.b.c").input(json!({"b": [true, null], "a": 1}));
        assert_eq!(keyed(&one), keyed(&two));
    }

    #[test]
    fn the_fingerprinting_walk_bounds_the_input_alike_and_hashes_the_same() {
        let limits = Limits::default();
        let fits = Invocation::new("view:a.b.c")
            .instance("i")
            .confirmation("cf")
            .input(json!({"ids": ["d1", "d\"2"], "n": 1.5, "z": {"é": null}}));
        let keyed = fits
            .keyed_fingerprint_measuring(
                crate::invoke::dedupe_fingerprint::hasher(),
                usize::MAX,
                usize::MAX,
            )
            .0;
        assert_eq!(
            check_request_fingerprinting(&fits, &limits, true).unwrap(),
            Some(keyed)
        );
        assert_eq!(
            check_request_fingerprinting(&fits, &limits, false).unwrap(),
            None
        );
        let deep = Invocation::new("view:a.b.c").input(nested(limits.max_input_depth + 1));
        let big =
            Invocation::new("view:a.b.c").input(json!({"s": "x".repeat(limits.max_input_bytes)}));
        for request in [deep, big] {
            assert_eq!(
                check_request_fingerprinting(&request, &limits, true).unwrap_err(),
                check_request(&request, &limits).unwrap_err()
            );
            if let Some(input) = request.input {
                dispose(input);
            }
        }
        // An oversized identifier is refused before anything is hashed.
        let long = Invocation::new("x".repeat(limits.max_id_bytes + 1)).input(json!(1));
        assert!(check_request_fingerprinting(&long, &limits, true).is_err());
    }
}
