//! The pipeline's spans reach a `tracing` subscriber that wants them, and
//! cost nothing without one: a call made with no subscriber set makes no
//! span, the same call under a subscriber makes `agent_surface.invoke` and
//! its phases (one test: the level filter it reads is the process's).

#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use agent_surface::prelude::*;
use serde_json::json;
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Event, Metadata, Subscriber};

/// A counter to read.
pub struct Counter;

/// A counter.
#[agent_component(type = "spans.counter")]
impl Counter {
    /// The count.
    #[observation]
    fn read(&self) -> u32 {
        1
    }
}

/// Keeps the name of every span made.
#[derive(Default)]
struct Names {
    spans: Mutex<Vec<String>>,
    next: AtomicU64,
}

/// The subscriber, sharing its names with the test.
struct Collect(Arc<Names>);

impl Subscriber for Collect {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
        Interest::always()
    }
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        Some(tracing::level_filters::LevelFilter::TRACE)
    }
    fn new_span(&self, span: &Attributes<'_>) -> Id {
        self.0
            .spans
            .lock()
            .unwrap()
            .push(span.metadata().name().to_owned());
        Id::from_u64(self.0.next.fetch_add(1, Ordering::Relaxed) + 1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

#[test]
fn spans_are_made_only_for_a_subscriber_that_wants_them() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let registry = Registry::builder().build();
    let _mounted = registry.mount(Arc::new(Counter)).unwrap();
    let call = || {
        let result = runtime.block_on(registry.invoke(
            Invocation::new("view:spans.counter.read"),
            InvokeOptions::default(),
        ));
        assert_eq!(result.output(), Some(&json!(1)));
    };

    // No subscriber: the call runs and no span is made (nothing to see,
    // but nothing panics and the level filter reads off).
    assert_eq!(
        tracing::level_filters::LevelFilter::current(),
        tracing::level_filters::LevelFilter::OFF
    );
    call();

    let names = Arc::new(Names::default());
    tracing::subscriber::with_default(Collect(Arc::clone(&names)), call);
    let spans = names.spans.lock().unwrap().clone();
    assert!(
        spans.iter().any(|name| name == "agent_surface.invoke"),
        "{spans:?}"
    );
    assert!(spans.iter().any(|name| name == "phase"), "{spans:?}");
}
