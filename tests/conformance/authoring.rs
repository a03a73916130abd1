//! Programs the macros accept, run: handler errors of every common type,
//! generic inputs, a boolean observation as `when`, context parameters by
//! type, preconditions that fail closed, and the types of other crates.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use agent_surface::prelude::*;
use serde_json::json;

use crate::fixtures::{call, code, registry};

#[agent_schema]
pub(crate) struct Name {
    /// A name.
    #[agent_schema(unbounded)]
    pub name: String,
}

#[agent_schema]
pub(crate) struct Batch<T> {
    /// The items.
    #[agent_schema(unbounded)]
    pub items: Vec<T>,
}

/// A component written the way users write them.
pub(crate) struct Authored {
    playing: AtomicBool,
}

/// Handlers in the shapes users reach for.
#[agent_component(type = "test.authored")]
impl Authored {
    fn short(&self, input: &Name, _: &ReadContext) -> Result<(), PreconditionFailure> {
        if input.name.len() > 3 {
            return Err(PreconditionFailure::new("Use at most three letters"));
        }
        Ok(())
    }

    /// Whether something is playing.
    #[observation]
    fn is_playing(&self) -> bool {
        self.playing.load(Ordering::Relaxed)
    }

    /// Pauses.
    #[action(effect = "local-state", when = is_playing, unavailable_reason = "Nothing is playing")]
    fn pause(&self) {
        self.playing.store(false, Ordering::Relaxed);
    }

    /// Fails with a boxed error.
    #[action(effect = "local-state")]
    fn boxed(&self, input: Name) -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
        Err(format!("no such device: {}", input.name).into())
    }

    /// Fails with an anyhow error.
    #[action(effect = "local-state")]
    async fn with_anyhow(&self, input: Name) -> anyhow::Result<u32> {
        let n: u32 = input.name.parse()?;
        Ok(n)
    }

    /// Counts a generic batch.
    #[action(effect = "local-state")]
    fn count(&self, input: Batch<Name>) -> usize {
        input.items.len()
    }

    /// Greets, after a precondition that takes the context.
    #[action(effect = "local-state", precondition = short)]
    fn greet(&self, ctx: &ActionContext, input: Name) -> String {
        let _ = ctx.invocation_id();
        format!("hi {}", input.name)
    }
}

fn authored() -> Arc<Authored> {
    Arc::new(Authored {
        playing: AtomicBool::new(false),
    })
}

#[tokio::test]
async fn boxed_and_anyhow_handler_errors_become_execution_failed() {
    let registry = registry();
    let _mounted = registry.mount(authored()).unwrap();
    let boxed = call(
        &registry,
        Invocation::new("view:test.authored.boxed").input(json!({"name": "x"})),
    )
    .await;
    assert_eq!(code(&boxed), Some(ErrorCode::ExecutionFailed));
    let text = serde_json::to_string(&boxed).unwrap();
    assert!(
        !text.contains("no such device"),
        "operator text stays off the wire"
    );
    let anyhow = call(
        &registry,
        Invocation::new("view:test.authored.withAnyhow").input(json!({"name": "seven"})),
    )
    .await;
    assert_eq!(code(&anyhow), Some(ErrorCode::ExecutionFailed));
    let parsed = call(
        &registry,
        Invocation::new("view:test.authored.withAnyhow").input(json!({"name": "7"})),
    )
    .await;
    assert_eq!(parsed.output(), Some(&json!(7)));
}

#[tokio::test]
async fn generic_schema_structs_are_inputs() {
    let registry = registry();
    let _mounted = registry.mount(authored()).unwrap();
    let counted = call(
        &registry,
        Invocation::new("view:test.authored.count")
            .input(json!({"items": [{"name": "a"}, {"name": "b"}]})),
    )
    .await;
    assert_eq!(counted.output(), Some(&json!(2)));
    let invalid = call(
        &registry,
        Invocation::new("view:test.authored.count").input(json!({"items": [{"nom": "a"}]})),
    )
    .await;
    assert_eq!(code(&invalid), Some(ErrorCode::InvalidInput));
}

#[tokio::test]
async fn a_bool_observation_serves_as_when() {
    let registry = registry();
    let component = authored();
    let _mounted = registry.mount(component.clone()).unwrap();
    let paused = call(&registry, Invocation::new("view:test.authored.pause")).await;
    assert_eq!(code(&paused), Some(ErrorCode::CapabilityNotAvailable));
    component.playing.store(true, Ordering::Relaxed);
    let paused = call(&registry, Invocation::new("view:test.authored.pause")).await;
    assert!(paused.is_ok(), "{paused:?}");
    let read = call(&registry, Invocation::new("view:test.authored.isPlaying")).await;
    assert_eq!(read.output(), Some(&json!(false)));
}

#[tokio::test]
async fn a_precondition_declaring_the_context_gets_it_and_runs() {
    let registry = registry();
    let _mounted = registry.mount(authored()).unwrap();
    let refused = call(
        &registry,
        Invocation::new("view:test.authored.greet").input(json!({"name": "abcd"})),
    )
    .await;
    assert_eq!(code(&refused), Some(ErrorCode::PreconditionFailed));
    let greeted = call(
        &registry,
        Invocation::new("view:test.authored.greet").input(json!({"name": "ab"})),
    )
    .await;
    assert_eq!(greeted.output(), Some(&json!("hi ab")));
}

#[test]
fn a_precondition_without_its_typed_input_refuses() {
    let component = authored();
    let contract = Authored::contract().checked().unwrap();
    let index = contract
        .capabilities()
        .iter()
        .position(|capability| *capability.name() == "greet")
        .unwrap();
    // Not the declared input type: the check cannot run, so the call stops.
    let wrong: agent_surface::contract::TypedInput = Box::new(42_u8);
    let ctx = ReadContext::new(
        agent_surface::ids::CapabilityId::new("view:test.authored.greet").unwrap(),
        "reg_test".into(),
        Consumer::new(ConsumerKind::Test, "tester"),
        HostContext::new(),
    );
    assert!(component.__precondition(index, &wrong, &ctx).is_err());
}

#[agent_schema]
pub(crate) struct Stamped {
    /// When.
    pub at: chrono::DateTime<chrono::Utc>,
    /// Which day.
    pub day: chrono::NaiveDate,
    /// Which record.
    pub id: uuid::Uuid,
    /// Where.
    #[agent_schema(unbounded)]
    pub link: url::Url,
}

/// Types of other crates.
pub(crate) struct Ledger;

/// A ledger.
#[agent_component(type = "test.ledger")]
impl Ledger {
    /// Records an entry.
    #[action(effect = "local-state")]
    fn record(&self, input: Stamped) -> Stamped {
        input
    }
}

#[tokio::test]
async fn chrono_uuid_and_url_types_have_subset_formats() {
    let contract = Ledger::contract().checked().unwrap();
    let schema = contract
        .capability("record")
        .unwrap()
        .input_schema()
        .unwrap()
        .json();
    let properties = &schema["properties"];
    assert_eq!(properties["at"]["format"], "date-time");
    assert_eq!(properties["day"]["format"], "date");
    assert_eq!(properties["id"]["format"], "uuid");
    assert_eq!(properties["link"]["format"], "uri");
    let registry = registry();
    let _mounted = registry.mount(Arc::new(Ledger)).unwrap();
    let input = json!({
        "at": "2026-01-31T09:30:00Z",
        "day": "2026-01-31",
        "id": "123e4567-e89b-12d3-a456-426614174000",
        "link": "https://example.com/x"
    });
    let recorded = call(
        &registry,
        Invocation::new("view:test.ledger.record").input(input.clone()),
    )
    .await;
    assert_eq!(recorded.output(), Some(&input));
    let invalid = call(
        &registry,
        Invocation::new("view:test.ledger.record").input(json!({
            "at": "yesterday", "day": "2026-01-31",
            "id": "123e4567-e89b-12d3-a456-426614174000", "link": "https://example.com/x"
        })),
    )
    .await;
    assert_eq!(code(&invalid), Some(ErrorCode::InvalidInput));
}

/// A component whose own type is its schema, with capabilities compiled
/// out by `#[cfg]` between the ones that remain.
#[agent_schema]
#[derive(Clone)]
pub(crate) struct Tuning {
    /// The level.
    pub level: u32,
}

/// Tuning, written with `Self` and `#[cfg]`.
#[agent_component(type = "test.tuning")]
impl Tuning {
    /// Compiled out.
    #[cfg(not(test))]
    #[observation]
    fn hidden(&self) -> u32 {
        0
    }

    /// The tuning.
    #[observation]
    #[allow(clippy::needless_arbitrary_self_type)] // the written-out receiver is what is tested
    fn read(self: &Self) -> Self {
        self.clone()
    }

    /// Compiled out, with a `when`.
    #[cfg(not(test))]
    #[action(effect = "local-state", when = never)]
    fn gone(&self) {}

    /// Echoes a tuning, doubled.
    #[cfg(test)]
    #[action(effect = "local-state", when = always)]
    fn double(&self, input: Self) -> Result<Option<Self>, ActionError> {
        Ok(Some(Self {
            level: input.level * 2,
        }))
    }

    fn always(&self) -> bool {
        true
    }

    #[cfg(not(test))]
    fn never(&self) -> bool {
        false
    }
}

#[tokio::test]
async fn self_in_signatures_and_cfg_capabilities_dispatch_to_their_handlers() {
    let contract = Tuning::contract().checked().unwrap();
    let names: Vec<String> = contract
        .capabilities()
        .iter()
        .map(|capability| capability.name().to_string())
        .collect();
    assert_eq!(names, ["read", "double"]);
    let registry = registry();
    let _mounted = registry.mount(Arc::new(Tuning { level: 3 })).unwrap();
    let read = call(&registry, Invocation::new("view:test.tuning.read")).await;
    assert_eq!(read.output(), Some(&json!({"level": 3})));
    let doubled = call(
        &registry,
        Invocation::new("view:test.tuning.double").input(json!({"level": 4})),
    )
    .await;
    assert_eq!(doubled.output(), Some(&json!({"level": 8})));
    let hidden = call(&registry, Invocation::new("view:test.tuning.hidden")).await;
    assert!(hidden.error().is_some(), "{hidden:?}");
}
