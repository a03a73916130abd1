//! AS-ERR-001: the agent-facing error set, cross-checked against the
//! specification's error matrix (vendored in `tests/data/error-matrix.json`).

use agent_surface::error::{DefinitionErrorKind, ErrorCode, ErrorPayload, Retry};
use serde_json::{Value, json};

fn retry_names(code: ErrorCode) -> Vec<String> {
    code.spec()
        .retry
        .iter()
        .map(|retry| {
            serde_json::to_value(retry)
                .unwrap()
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

/// The specification's error matrix, vendored so the cross-check always runs.
const MATRIX: &str = include_str!("../data/error-matrix.json");

#[test]
fn as_err_001_error_set_matches_the_specification_matrix() {
    let matrix: Value = serde_json::from_str(MATRIX).unwrap();
    let codes = matrix["codes"].as_object().expect("codes");
    assert_eq!(
        codes.len(),
        ErrorCode::ALL.len(),
        "the set is closed: same number of codes"
    );
    for (name, row) in codes {
        let code: ErrorCode =
            serde_json::from_value(json!(name)).unwrap_or_else(|_| panic!("unknown code {name}"));
        assert_eq!(code.as_str(), name);
        let spec = code.spec();
        let phases: Vec<u64> = row["phases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_u64().unwrap())
            .collect();
        assert_eq!(
            spec.phases
                .iter()
                .map(|&p| u64::from(p))
                .collect::<Vec<_>>(),
            phases,
            "{name} phases"
        );
        let retry: Vec<String> = row["retry"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap().to_owned())
            .collect();
        assert_eq!(retry_names(code), retry, "{name} retry hints");
        assert_eq!(
            spec.cacheable,
            row["cacheable"].as_bool().unwrap(),
            "{name} cacheable"
        );
        let details: Vec<&str> = row["details"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_str().unwrap())
            .collect();
        assert_eq!(spec.details, details.as_slice(), "{name} details");
    }
}

#[test]
fn as_err_001_closed_set_invariants() {
    let names: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(names.len(), 16);
    for code in ErrorCode::ALL {
        // SCREAMING_SNAKE on the wire, identical to as_str.
        assert_eq!(serde_json::to_value(code).unwrap(), json!(code.as_str()));
        assert!(code.spec().retry.contains(&code.default_retry()));
        assert!(
            !code.spec().phases.is_empty()
                && code.spec().phases.iter().all(|p| (1..=10).contains(p))
        );
    }
    let never_cached: Vec<ErrorCode> = ErrorCode::ALL
        .into_iter()
        .filter(|c| !c.cacheable())
        .collect();
    assert_eq!(
        never_cached,
        [
            ErrorCode::InvocationConflict,
            ErrorCode::ConfirmationRequired,
            ErrorCode::RateLimited
        ]
    );
    for (retry, name) in [
        (Retry::No, "no"),
        (Retry::Yes, "yes"),
        (Retry::AfterRefresh, "after-refresh"),
        (Retry::AfterDelay, "after-delay"),
        (Retry::WithConfirmation, "with-confirmation"),
        (Retry::WithChanges, "with-changes"),
    ] {
        assert_eq!(serde_json::to_value(retry).unwrap(), json!(name));
        assert_eq!(retry.as_str(), name);
    }
}

#[test]
fn as_err_001_payload_shape_is_exact() {
    let payload =
        ErrorPayload::rate_limited(agent_surface::error::RateLimitReason::QueueFull, Some(250));
    let value = serde_json::to_value(&payload).unwrap();
    let keys: Vec<&String> = value.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["code", "details", "message", "retry"]);
    assert_eq!(value["code"], "RATE_LIMITED");
    assert_eq!(value["retry"], "after-delay");
    assert_eq!(
        value["details"],
        json!({"reason": "queue-full", "retryAfterMs": 250})
    );
    // Without details the key is absent, not null.
    let bare = serde_json::to_value(ErrorPayload::cancelled()).unwrap();
    assert!(bare.get("details").is_none());
    assert!(bare["message"].as_str().unwrap().chars().count() <= 300);
}

#[test]
fn as_err_001_definition_error_kinds() {
    let kinds = [
        (DefinitionErrorKind::InvalidId, "INVALID_ID"),
        (DefinitionErrorKind::InvalidDefinition, "INVALID_DEFINITION"),
        (DefinitionErrorKind::UnsupportedSchema, "UNSUPPORTED_SCHEMA"),
        (DefinitionErrorKind::PlaneViolation, "PLANE_VIOLATION"),
        (
            DefinitionErrorKind::DuplicateCapability,
            "DUPLICATE_CAPABILITY",
        ),
        (DefinitionErrorKind::LimitExceeded, "LIMIT_EXCEEDED"),
    ];
    for (kind, name) in kinds {
        assert_eq!(kind.as_str(), name);
        assert_eq!(serde_json::to_value(kind).unwrap(), json!(name));
    }
}

#[test]
fn as_err_001_vendored_matrix_equals_the_specification_copy() {
    let Some(path) = crate::shared_spec_file("error-matrix.json") else {
        eprintln!(
            "as_err_001: skipped comparing the vendored matrix: ../shared/spec/error-matrix.json \
             is absent beside this checkout (the vendored matrix was still checked)"
        );
        return;
    };
    let upstream: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let vendored: Value = serde_json::from_str(MATRIX).unwrap();
    assert_eq!(
        vendored, upstream,
        "tests/data/error-matrix.json differs from the specification's; copy it again"
    );
}
