//! Byte and depth bounds, proven from the outside: identifiers, input size
//! and input depth are refused before anything stores or walks them, deep
//! values never overflow a small thread stack, handler output is depth
//! checked, and meta-mode envelopes report a bounded list of issues.
//!
//! The memory tests read the resident set size from `/proc/self/statm`
//! (Linux only; elsewhere they say so and pass). All tests of this binary
//! take one lock so no other test's allocations blur a measurement.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)] // test code

mod fixtures;

use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::{Mutex, MutexGuard, PoisonError};

use agent_surface::prelude::*;
use agent_surface::schema::MAX_ISSUES;
use agent_surface::toolset::{ACT, Mode, READ, Toolset, Topology};
use serde_json::{Map, Value, json};

use fixtures::{Deep, dispose, nested_arrays, nested_objects, registry};

/// One test at a time in this binary.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs `test` on a fresh thread with a 2 MiB stack, in a current-thread
/// runtime on that thread (every future is polled on the small stack).
fn on_small_stack<F, T>(test: impl FnOnce() -> F + Send + 'static) -> T
where
    F: Future<Output = T>,
    T: Send + 'static,
{
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(test())
        })
        .unwrap()
        .join()
        .expect("the test thread overflowed or panicked")
}

/// The issues of an `INVALID_INPUT` result as `(path, message)` pairs.
fn issues(result: &InvocationResult) -> Vec<(String, String)> {
    let error = result.error().expect("an error");
    assert_eq!(error.code(), ErrorCode::InvalidInput, "{error}");
    error
        .detail("issues")
        .and_then(Value::as_array)
        .expect("issues")
        .iter()
        .map(|issue| {
            (
                issue["path"].as_str().unwrap().to_owned(),
                issue["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn too_deep(result: &InvocationResult, path: &str) -> bool {
    issues(result)
        == [(
            path.to_owned(),
            "nests deeper than 64 levels of arrays and objects".to_owned(),
        )]
}

/// Whether the audit log holds no invocation (refused requests never ran).
fn no_invocation_audited(registry: &Registry) -> bool {
    registry
        .audit_log()
        .iter()
        .all(|event| event.invocation_id.is_none())
}

/// The resident set size in bytes, where `/proc/self/statm` exists.
fn rss() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

const MIB: u64 = 1 << 20;

#[test]
fn deep_inputs_are_refused_through_every_entry_on_a_small_stack() {
    let _serial = serial();
    let refused = on_small_stack(|| async {
        let registry = registry();
        let _mounted = registry.mount(Deep::new(3)).unwrap();
        let direct = Toolset::builder(&registry)
            .topology(Topology::Remote)
            .build()
            .unwrap();
        let meta = Toolset::builder(&registry)
            .mode(Mode::Meta)
            .topology(Topology::Remote)
            .build()
            .unwrap();
        let store = direct
            .tool_for("view:test.deep.store", None)
            .unwrap()
            .name()
            .to_owned();
        let mut refused = Vec::new();
        for (round, build) in [nested_arrays, nested_objects].into_iter().enumerate() {
            for capability in ["view:test.deep.store", "view:test.deep.nested"] {
                // Without and with an invocation id (the dedupe path).
                let plain = registry
                    .invoke(
                        Invocation::new(capability).input(build(100_000)),
                        InvokeOptions::default(),
                    )
                    .await;
                refused.push(too_deep(&plain, ""));
                let keyed = registry
                    .invoke(
                        Invocation::new(capability)
                            .invocation_id(format!("deep-{round}-{capability}"))
                            .input(build(100_000)),
                        InvokeOptions::default(),
                    )
                    .await;
                refused.push(too_deep(&keyed, ""));
            }
            let tool = direct
                .execute(&store, build(100_000), Some("call-direct"))
                .await;
            refused.push(too_deep(&tool, ""));
            let mut envelope = Map::new();
            envelope.insert("capabilityId".to_owned(), json!("view:test.deep.store"));
            envelope.insert("input".to_owned(), build(100_000));
            let act = meta.execute(ACT, Value::Object(envelope), None).await;
            refused.push(too_deep(&act, "/input"));
            let mut envelope = Map::new();
            envelope.insert("capabilityId".to_owned(), json!("view:test.deep.nested"));
            envelope.insert("stray\u{7}".to_owned(), build(100_000));
            let read = meta.execute(READ, Value::Object(envelope), None).await;
            refused.push(too_deep(&read, "/stray?"));
        }
        // Nothing was remembered, and the registry still serves calls.
        refused.push(registry.dedupe_len() == 0);
        let fine = registry
            .invoke(
                Invocation::new("view:test.deep.store").input(json!({"payload": [[1]]})),
                InvokeOptions::default(),
            )
            .await;
        refused.push(fine.is_ok());
        refused
    });
    assert!(refused.iter().all(|ok| *ok), "{refused:?}");
}

#[test]
fn input_depth_and_size_limits_are_exact() {
    let _serial = serial();
    let outcomes = on_small_stack(|| async {
        let registry = registry();
        let _mounted = registry.mount(Deep::new(3)).unwrap();
        let limits = *registry.limits();
        let call = |input: Value| {
            registry.invoke(
                Invocation::new("view:test.deep.store").input(input),
                InvokeOptions::default(),
            )
        };
        // `{"payload": …}` is one level: 63 more fit, 64 more do not.
        let fits = call(json!({"payload": nested_arrays(limits.max_input_depth - 1)})).await;
        let deep = call(json!({"payload": nested_arrays(limits.max_input_depth)})).await;
        let wrapper = r#"{"payload":""}"#.len();
        let exact = "x".repeat(limits.max_input_bytes - wrapper);
        let sized = call(json!({ "payload": exact })).await;
        let over = "x".repeat(limits.max_input_bytes - wrapper + 1);
        let large = call(json!({ "payload": over })).await;
        (
            fits.is_ok(),
            too_deep(&deep, ""),
            sized.is_ok(),
            issues(&large),
        )
    });
    assert!(outcomes.0 && outcomes.1 && outcomes.2, "{outcomes:?}");
    assert_eq!(
        outcomes.3,
        [(
            String::new(),
            "is larger than 262144 bytes as JSON; send less".to_owned()
        )]
    );
}

#[test]
fn as_ser_001_deep_handler_output_settles_execution_failed_on_a_small_stack() {
    let _serial = serial();
    let outcomes = on_small_stack(|| async {
        let registry = registry();
        let deep = Deep::new(5_000);
        let _mounted = registry.mount(deep.clone()).unwrap();
        let mut outcomes = Vec::new();
        // Deeper than the conversion probe, deeper than the output bound,
        // within it.
        for depth in [5_000, 100, 64] {
            deep.depth.store(depth, Ordering::SeqCst);
            let result = registry
                .invoke(
                    Invocation::new("view:test.deep.nested"),
                    InvokeOptions::default(),
                )
                .await;
            outcomes.push(match result.error() {
                None => "ok".to_owned(),
                Some(error) => format!(
                    "{}/{}",
                    error.code(),
                    error.detail("reason").and_then(Value::as_str).unwrap_or("")
                ),
            });
            if let Ok(Some(output)) = result.into_outcome() {
                dispose(output);
            }
        }
        outcomes
    });
    assert_eq!(
        outcomes,
        [
            "EXECUTION_FAILED/output-invalid",
            "EXECUTION_FAILED/output-invalid",
            "ok"
        ]
    );
}

#[test]
fn oversized_ids_are_refused_never_echoed_nor_remembered() {
    let _serial = serial();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let registry = registry();
        let _mounted = registry.mount(Deep::new(3)).unwrap();
        let limit = registry.limits().max_id_bytes;
        let long = "é".repeat(limit);
        let requests = [
            (
                "/invocationId",
                Invocation::new("view:test.deep.nested").invocation_id(&long),
            ),
            (
                "/capabilityId",
                Invocation::new(format!("view:{long}")).invocation_id("c"),
            ),
            (
                "/instanceId",
                Invocation::new("view:test.deep.nested").instance(&long),
            ),
            (
                "/registrationId",
                Invocation::new("view:test.deep.nested").registration(&long),
            ),
            (
                "/confirmationId",
                Invocation::new("view:test.deep.store").confirmation(&long),
            ),
            (
                "/surfaceVersion",
                Invocation::new("view:test.deep.store").surface_version(&long),
            ),
        ];
        for (pointer, request) in requests {
            let result = registry.invoke(request, InvokeOptions::default()).await;
            assert_eq!(
                issues(&result),
                [(
                    pointer.to_owned(),
                    format!("must be at most {limit} bytes long")
                )]
            );
            let text = serde_json::to_string(&result).unwrap();
            assert!(text.len() < 4 * limit, "{pointer}: {} bytes", text.len());
            assert!(!text.contains(&long), "{pointer} was echoed");
            // A fresh id for an oversized one; an id within the bound stays.
            match pointer {
                "/invocationId" => assert!(result.invocation_id().len() <= limit),
                "/capabilityId" => {
                    assert_eq!(result.invocation_id(), "c");
                    assert!(result.capability_id().len() <= limit);
                    assert!(result.capability_id().starts_with("view:éé"));
                }
                _ => {}
            }
        }
        assert_eq!(registry.dedupe_len(), 0);
        assert!(no_invocation_audited(&registry));
        // The toolset neither echoes an oversized tool-call id nor tool name.
        let toolset = Toolset::builder(&registry)
            .topology(Topology::Remote)
            .build()
            .unwrap();
        let unknown = toolset.execute(&long, json!({}), Some(&long)).await;
        assert_eq!(
            unknown.error().unwrap().code(),
            ErrorCode::CapabilityNotFound
        );
        assert!(unknown.invocation_id().len() <= limit);
        assert!(unknown.capability_id().len() <= limit);
    });
}

#[test]
fn rss_stays_flat_over_1200_calls_with_256_kib_invocation_ids() {
    let _serial = serial();
    let Some(_) = rss() else {
        eprintln!("skipped: /proc/self/statm is not available on this platform");
        return;
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let registry = registry();
    let _mounted = registry.mount(Deep::new(3)).unwrap();
    let call = |index: usize| {
        let mut id = format!("{index:08}-");
        id.push_str(&"i".repeat(256 * 1024));
        rt.block_on(
            registry.invoke(
                Invocation::new("view:test.deep.store")
                    .invocation_id(id)
                    .input(json!({"payload": index})),
                InvokeOptions::default(),
            ),
        )
    };
    let refused = |result: InvocationResult| {
        result.error().map(ErrorPayload::code) == Some(ErrorCode::InvalidInput)
    };
    // Warm the allocator up first.
    let warm = (0..50).filter(|index| refused(call(*index))).count();
    let before = rss().unwrap_or(0);
    let all = (0..1_200).filter(|index| refused(call(*index))).count();
    let grown = rss().unwrap_or(0).saturating_sub(before);
    assert!(grown < 16 * MIB, "RSS grew by {} MiB", grown / MIB);
    assert_eq!((warm, all), (50, 1_200));
    assert_eq!(registry.dedupe_len(), 0);
    assert!(no_invocation_audited(&registry));
}

#[test]
fn pending_confirmations_cannot_hold_4_mib_inputs() {
    let _serial = serial();
    let Some(_) = rss() else {
        eprintln!("skipped: /proc/self/statm is not available on this platform");
        return;
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let registry = registry();
    let _mounted = registry.mount(Deep::new(3)).unwrap();
    let call = |index: usize| {
        let payload = format!("{index:08}{}", "p".repeat(4 * 1024 * 1024));
        rt.block_on(
            registry.invoke(
                Invocation::new("view:test.deep.guarded")
                    .invocation_id(format!("guarded-{index}"))
                    .input(json!({ "payload": payload })),
                InvokeOptions::default(),
            ),
        )
    };
    // A small input is asked for confirmation: the gate is real.
    let small = rt.block_on(registry.invoke(
        Invocation::new("view:test.deep.guarded").input(json!({"payload": 1})),
        InvokeOptions::default(),
    ));
    assert_eq!(
        small.error().unwrap().code(),
        ErrorCode::ConfirmationRequired
    );
    let pending_before = registry.confirmations().pending().len();
    let before = rss().unwrap_or(0);
    let codes: Vec<Option<ErrorCode>> = (0..32)
        .map(|index| call(index).error().map(ErrorPayload::code))
        .collect();
    let grown = rss().unwrap_or(0).saturating_sub(before);
    assert!(grown < 16 * MIB, "RSS grew by {} MiB", grown / MIB);
    assert_eq!(registry.confirmations().pending().len(), pending_before);
    assert!(
        codes
            .iter()
            .all(|code| *code == Some(ErrorCode::InvalidInput))
    );
}

#[test]
fn as_meta_007_ten_thousand_unknown_keys_yield_a_capped_cleaned_issue_list() {
    let _serial = serial();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let registry = registry();
        let _mounted = registry.mount(Deep::new(3)).unwrap();
        let meta = Toolset::builder(&registry)
            .mode(Mode::Meta)
            .topology(Topology::Remote)
            .build()
            .unwrap();
        let mut envelope = Map::new();
        for index in 0..10_000 {
            let key = format!("\u{1}{index:05}{}\n", "k".repeat(1_000));
            envelope.insert(key, json!(index));
        }
        // Without a target, the missing key is listed first.
        let untargeted = meta
            .execute(ACT, Value::Object(envelope.clone()), None)
            .await;
        let first = issues(&untargeted).into_iter().next().unwrap();
        assert_eq!(
            first,
            ("/capabilityId".to_owned(), "is required".to_owned())
        );
        envelope.insert("capabilityId".to_owned(), json!("view:test.deep.store"));
        let result = meta.execute(ACT, Value::Object(envelope), None).await;
        let listed = issues(&result);
        assert_eq!(listed.len(), MAX_ISSUES + 1);
        let (last_path, last_message) = listed.last().unwrap();
        assert_eq!(last_path, "");
        assert_eq!(
            last_message,
            &format!("and {} more issues", 10_000 - MAX_ISSUES)
        );
        for (path, message) in &listed[..MAX_ISSUES] {
            assert!(path.starts_with("/?0"), "{path}");
            assert_eq!(path.chars().count(), 1 + 64, "{path}");
            assert!(!path.chars().any(char::is_control), "{path}");
            assert!(
                message.starts_with("unknown key; the keys are: "),
                "{message}"
            );
        }
        let size = serde_json::to_string(&result).unwrap().len();
        assert!(size < 16 * 1024, "the result is {size} bytes");
    });
}
