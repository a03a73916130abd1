//! Handler outputs against their schemas: an output type whose schema
//! bounds every valid value is checked by validation alone (no walk to size
//! it first) unless the call is remembered by the dedupe window; both
//! routes must settle exactly as the full check does.

use std::sync::Arc;

use agent_surface::prelude::*;
use agent_surface::registry::{Limits, Registry};
use serde_json::json;

use crate::containment::nested;
use crate::fixtures::{call, code};

/// A bounded output: a closed object with one short string.
#[agent_schema]
#[derive(Clone, Debug)]
pub(crate) struct Label {
    /// At most three characters.
    #[schemars(length(max = 3))]
    pub(crate) name: String,
}

/// A component returning labels that keep or break their schema.
pub(crate) struct Labels;

/// Labels.
#[agent_component(type = "test.labels")]
impl Labels {
    /// A label within its schema.
    #[observation]
    fn fits(&self) -> Label {
        Label {
            name: "abc".to_owned(),
        }
    }

    /// A label longer than its schema allows.
    #[observation]
    fn too_long(&self) -> Label {
        Label {
            name: "abcdef".to_owned(),
        }
    }

    /// The same broken label from an action (called with a tool-call id,
    /// so its result is remembered and its size measured).
    #[action(effect = "local-state")]
    fn stamp(&self) -> Label {
        Label {
            name: "abcdef".to_owned(),
        }
    }
}

fn reason(result: &InvocationResult) -> Option<serde_json::Value> {
    result
        .error()
        .and_then(|error| error.detail("reason"))
        .cloned()
}

#[tokio::test]
async fn as_ser_001_an_output_breaking_a_bounded_schema_settles_output_invalid_on_every_route() {
    let registry = Registry::builder().build();
    let _mounted = registry.mount(Arc::new(Labels)).unwrap();
    let fits = call(&registry, Invocation::new("view:test.labels.fits")).await;
    assert_eq!(fits.output(), Some(&json!({"name": "abc"})));
    let too_long = call(&registry, Invocation::new("view:test.labels.tooLong")).await;
    assert_eq!(code(&too_long), Some(ErrorCode::ExecutionFailed));
    assert_eq!(reason(&too_long), Some(json!("output-invalid")));
    let stamped = call(
        &registry,
        Invocation::new("view:test.labels.stamp").invocation_id("toolu_1"),
    )
    .await;
    assert_eq!(code(&stamped), Some(ErrorCode::ExecutionFailed));
    assert_eq!(reason(&stamped), Some(json!("output-invalid")));
    let unnamed = call(&registry, Invocation::new("view:test.labels.stamp")).await;
    assert_eq!(reason(&unnamed), Some(json!("output-invalid")));
}

#[tokio::test]
async fn as_ser_001_a_bounded_schema_beyond_the_output_limit_is_still_sized() {
    // `{"name":"abc"}` is 14 bytes; the schema allows up to 27.
    let registry = Registry::builder()
        .limits(Limits::default().max_output_bytes(13))
        .build();
    let _mounted = registry.mount(Arc::new(Labels)).unwrap();
    let fits = call(&registry, Invocation::new("view:test.labels.fits")).await;
    assert_eq!(code(&fits), Some(ErrorCode::ExecutionFailed));
    assert_eq!(reason(&fits), Some(json!("output-too-large")));
    let registry = Registry::builder()
        .limits(Limits::default().max_output_bytes(14))
        .build();
    let _mounted = registry.mount(Arc::new(Labels)).unwrap();
    let fits = call(&registry, Invocation::new("view:test.labels.fits")).await;
    assert_eq!(fits.output(), Some(&json!({"name": "abc"})));
}

/// A component implemented by hand, with the labels' contract, whose
/// handlers all return what `output` makes: a value nested a million arrays
/// deep (a handler built by `#[agent_component]` cannot: its output is
/// refused past 128 levels when it is serialized; a procedure's executor
/// or a hand-written component can), or no output at all.
struct ByHand {
    output: fn() -> Option<serde_json::Value>,
}

impl Component for ByHand {
    fn contract() -> &'static agent_surface::macro_support::ComponentContract {
        <Labels as Component>::contract()
    }

    fn __contract(&self) -> &'static agent_surface::macro_support::ComponentContract {
        <Labels as Component>::contract()
    }

    fn __invoke(
        self: Arc<Self>,
        _capability: usize,
        _input: Option<agent_surface::macro_support::TypedInput>,
        _ctx: ActionContext,
    ) -> agent_surface::macro_support::HandlerFuture {
        agent_surface::macro_support::ready(Ok((self.output)()))
    }
}

#[tokio::test]
async fn as_ser_001_an_output_of_any_depth_breaking_a_bounded_schema_is_refused_without_recursion()
{
    let registry = Registry::builder().build();
    let _mounted = registry
        .mount(Arc::new(ByHand {
            output: || Some(nested(1_000_000)),
        }))
        .unwrap();
    // Without an id the output is checked by validation alone; with one,
    // sized first. Both settle, and neither drops the value recursively.
    for request in [
        Invocation::new("view:test.labels.fits"),
        Invocation::new("view:test.labels.fits").invocation_id("toolu_deep"),
    ] {
        let result = call(&registry, request).await;
        assert_eq!(code(&result), Some(ErrorCode::ExecutionFailed));
        assert_eq!(reason(&result), Some(json!("output-invalid")));
    }
}

/// A count: the output of the procedure below.
#[agent_schema]
#[derive(Clone, Debug)]
pub(crate) struct Tally {
    /// How many.
    pub(crate) n: u32,
}

/// Count things.
#[agent_procedure(id = "domain:test.things.count", effect = "server-query", output = Tally)]
#[derive(Clone, Debug)]
pub(crate) struct CountThings {
    /// Which things.
    #[agent_schema(unbounded)]
    pub(crate) filter: Option<String>,
}

/// Touch things (no output).
#[agent_procedure(id = "domain:test.things.touch", effect = "server-query")]
#[derive(Clone, Debug)]
pub(crate) struct TouchThings {
    /// Which things.
    #[agent_schema(unbounded)]
    pub(crate) filter: Option<String>,
}

/// An executor answering every call with one value.
struct Answering {
    manifest: agent_surface::procedure::ProcedureManifest,
    reply: serde_json::Value,
}

impl agent_surface::procedure::ProcedureExecutor for Answering {
    fn manifest(&self) -> &agent_surface::procedure::ProcedureManifest {
        &self.manifest
    }

    fn execute(
        &self,
        _call: agent_surface::procedure::ProcedureCall,
    ) -> agent_surface::procedure::ExecuteFuture {
        let reply = self.reply.clone();
        Box::pin(async move { Ok(reply) })
    }
}

/// A page referencing both procedures.
struct Things;

/// Things.
#[agent_component(type = "test.things")]
#[reference(CountThings)]
#[reference(TouchThings)]
impl Things {
    /// Always.
    #[observation]
    fn here(&self) -> bool {
        true
    }
}

#[tokio::test]
async fn as_ser_001_no_output_is_null_to_an_output_schema() {
    use agent_surface::procedure::{ManifestEntry, ProcedureExecutor};
    // A procedure's executor answering `null`: refused by an output schema
    // that refuses null, accepted where there is none.
    for (reply, count, touch) in [
        (
            serde_json::Value::Null,
            Some(ErrorCode::ExecutionFailed),
            None,
        ),
        (json!({"n": 3}), None, None),
    ] {
        let registry = Registry::builder().build();
        let executor = Arc::new(Answering {
            manifest: [
                ManifestEntry::declared(CountThings::contract().checked().unwrap()),
                ManifestEntry::declared(TouchThings::contract().checked().unwrap()),
            ]
            .into_iter()
            .collect(),
            reply: reply.clone(),
        });
        registry.set_procedure_executor(Some(executor as Arc<dyn ProcedureExecutor>));
        let _mounted = registry
            .mounting(Arc::new(Things))
            .procedure(ProcedureRef::<CountThings>::new())
            .procedure(ProcedureRef::<TouchThings>::new())
            .mount()
            .unwrap();
        for id in [None, Some("toolu_null")] {
            let mut counted = Invocation::new("domain:test.things.count").input(json!({}));
            let mut touched = Invocation::new("domain:test.things.touch").input(json!({}));
            if let Some(id) = id {
                counted = counted.invocation_id(id);
                touched = touched.invocation_id(format!("{id}_touch"));
            }
            let counted = call(&registry, counted).await;
            assert_eq!(code(&counted), count, "{reply} → {counted:?}");
            if count.is_some() {
                assert_eq!(reason(&counted), Some(json!("output-invalid")));
            }
            let touched = call(&registry, touched).await;
            assert_eq!(code(&touched), touch, "{reply} → {touched:?}");
        }
    }
    // A component implemented by hand returning nothing where its contract
    // promises a label.
    let registry = Registry::builder().build();
    let _mounted = registry
        .mount(Arc::new(ByHand { output: || None }))
        .unwrap();
    for request in [
        Invocation::new("view:test.labels.fits"),
        Invocation::new("view:test.labels.fits").invocation_id("toolu_silent"),
    ] {
        let result = call(&registry, request).await;
        assert_eq!(code(&result), Some(ErrorCode::ExecutionFailed));
        assert_eq!(reason(&result), Some(json!("output-invalid")));
    }
}
