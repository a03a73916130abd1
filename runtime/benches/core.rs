//! The reference implementation's core benchmark cases, same shapes (the
//! fixture is `fixture/mod.rs`, shared with `per_op`): criterion timings.

#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing
)]

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use agent_surface::canonical::fnv1a64;
use agent_surface::policy::{authenticated, rate_limit};
use agent_surface::prelude::*;
use agent_surface::procedure::{
    ExecuteFuture, ManifestEntry, ProcedureCall, ProcedureExecutor, ProcedureManifest,
};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};

mod fixture;

use fixture::{Export, Poke, Widget, WidgetState, mounted, poke, read_state, rows};
use serde_json::json;

pub struct Selection {
    selected: std::sync::atomic::AtomicUsize,
}

/// A table whose actions depend on the selection.
#[agent_component(type = "bench.selection")]
impl Selection {
    /// The state.
    #[observation]
    fn read_state(&self) -> WidgetState {
        WidgetState { n: 3 }
    }

    /// Disable the selected rows.
    #[action(effect = "local-state", when = has_selection, unavailable_reason = "Select rows first")]
    fn disable(&self, input: Poke) {
        black_box(input);
    }

    /// Export the selected rows.
    #[action(effect = "local-state", when = has_selection, unavailable_reason = "Select rows first")]
    fn export(&self, input: Poke) {
        black_box(input);
    }

    fn has_selection(&self) -> bool {
        self.selected.load(std::sync::atomic::Ordering::Relaxed) > 0
    }
}

/// `invalidate()` after a render that changed nothing the surface shows.
fn invalidate(c: &mut Criterion) {
    let registry = Registry::builder().build();
    let _widgets = mounted(&registry, 10);
    let table = registry
        .mount(Arc::new(Selection {
            selected: std::sync::atomic::AtomicUsize::new(1),
        }))
        .unwrap();
    let events = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let _subscription = registry.subscribe({
        let events = Arc::clone(&events);
        move |_event| {
            events.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    });
    c.bench_function("invalidate (availability unchanged)", |b| {
        b.iter(|| black_box(table.invalidate()))
    });
    assert_eq!(
        events.load(std::sync::atomic::Ordering::Relaxed),
        0,
        "it emitted nothing"
    );
}

pub struct Vault;

/// A component hidden from everybody, whose predicate is slow.
#[agent_component(type = "bench.vault")]
impl Vault {
    /// The state.
    #[observation(when = busy)]
    fn read_state(&self) -> WidgetState {
        WidgetState { n: 2 }
    }

    /// Spins ~50 µs: were it run for a hidden call, the timing would show it.
    fn busy(&self) -> bool {
        let started = std::time::Instant::now();
        while started.elapsed() < Duration::from_micros(50) {
            std::hint::spin_loop();
        }
        true
    }
}

/// Hides `bench.vault`.
struct HideVault;

impl agent_surface::policy::Policy for HideVault {
    fn name(&self) -> &str {
        "hideVault"
    }
    fn on_discovery(
        &self,
        ctx: &agent_surface::policy::PolicyContext<'_>,
    ) -> agent_surface::policy::Decision {
        if ctx
            .capability_id()
            .as_str()
            .starts_with("view:bench.vault.")
        {
            agent_surface::policy::Decision::Hide
        } else {
            agent_surface::policy::Decision::Expose
        }
    }
}

/// Hidden must cost what nonexistent costs: no predicate runs for it.
fn hidden(c: &mut Criterion) {
    let runtime = runtime();
    // Registries are built where they run, as an application builds them
    // in its async main: their clock follows that runtime's.
    let _in_runtime = runtime.enter();
    let registry = Registry::builder().policy(HideVault).build();
    let _vault = registry.mount(Arc::new(Vault)).unwrap();
    let _widgets = mounted(&registry, 10);
    let mut group = c.benchmark_group("invoke not found");
    for (name, id) in [
        ("hidden (slow when)", "view:bench.vault.readState"),
        ("nonexistent", "view:bench.ghost.readState"),
    ] {
        group.bench_function(name, |b| {
            b.to_async(&runtime).iter(|| {
                let registry = &registry;
                async move {
                    black_box(
                        registry
                            .invoke(Invocation::new(id), InvokeOptions::default())
                            .await,
                    )
                }
            });
        });
    }
    group.finish();
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
}

fn create_registry(c: &mut Criterion) {
    c.bench_function("create registry", |b| {
        b.iter(|| black_box(Registry::builder().build()))
    });
}

fn register_unregister(c: &mut Criterion) {
    let mut group = c.benchmark_group("register + unregister");
    for count in [10usize, 100, 1000] {
        let instances: Vec<String> = (0..count).map(|n| format!("w{n}")).collect();
        group.bench_with_input(BenchmarkId::from_parameter(count), &count, |b, _| {
            // As the reference's case: a registry of its own each round.
            b.iter(|| fixture::register_unregister(&instances));
        });
    }
    group.finish();
}

fn snapshot(c: &mut Criterion) {
    let registry = Registry::builder().build();
    let _handles = mounted(&registry, 100);
    let options = SnapshotOptions::default();
    c.bench_function("snapshot at 100 components", |b| {
        b.iter(|| black_box(registry.snapshot(&options)))
    });
}

fn invoke(c: &mut Criterion) {
    let runtime = runtime();
    // Registries are built where they run, as an application builds them
    // in its async main: their clock follows that runtime's.
    let _in_runtime = runtime.enter();
    let registry = Registry::builder().build();
    let _handles = mounted(&registry, 10);
    c.bench_function("action invoke (no-op, 10 instances)", |b| {
        b.to_async(&runtime).iter(|| {
            let request = poke();
            let registry = &registry;
            async move { black_box(registry.invoke(request, InvokeOptions::default()).await) }
        });
    });
    let mut n = 0u64;
    c.bench_function("action invoke with a tool-call id (deduplicated)", |b| {
        b.to_async(&runtime).iter(|| {
            n += 1;
            let request = poke().invocation_id(fixture::tool_call_id(n));
            let registry = &registry;
            async move { black_box(registry.invoke(request, InvokeOptions::default()).await) }
        });
    });
    // As the reference calls it: with an invocation id of its own.
    c.bench_function("observation invoke", |b| {
        b.to_async(&runtime).iter(|| {
            n += 1;
            let request = read_state().invocation_id(fixture::tool_call_id(n));
            let registry = &registry;
            async move { black_box(registry.invoke(request, InvokeOptions::default()).await) }
        });
    });

    let guarded = Registry::builder()
        .policy(authenticated())
        .policy(rate_limit(u32::MAX, Duration::from_secs(1)))
        .host_context(|| HostContext::new().with("user", json!({"name": "bench"})))
        .build();
    let _guarded = mounted(&guarded, 10);
    // With an invocation id, as the reference's case.
    c.bench_function("action invoke + authenticated + rate_limit", |b| {
        b.to_async(&runtime).iter(|| {
            n += 1;
            let request = poke().invocation_id(fixture::tool_call_id(n));
            let registry = &guarded;
            async move { black_box(registry.invoke(request, InvokeOptions::default()).await) }
        });
    });
}

/// A backend that answers at once.
struct Echo(ProcedureManifest);

impl ProcedureExecutor for Echo {
    fn manifest(&self) -> &ProcedureManifest {
        &self.0
    }
    fn execute(&self, call: ProcedureCall) -> ExecuteFuture {
        Box::pin(async move { Ok(json!({"rows": call.input.as_object().map_or(0, |o| o.len())})) })
    }
}

fn procedure(c: &mut Criterion) {
    let runtime = runtime();
    // Registries are built where they run, as an application builds them
    // in its async main: their clock follows that runtime's.
    let _in_runtime = runtime.enter();
    let registry = Registry::builder().build();
    let manifest: ProcedureManifest = [ManifestEntry::declared(
        Export::contract().checked().unwrap(),
    )]
    .into_iter()
    .collect();
    registry.set_procedure_executor(Some(Arc::new(Echo(manifest))));
    let _handles: Vec<Mounted> = (0..10)
        .map(|i| {
            registry
                .mounting(Arc::new(Widget))
                .instance(format!("w{i}"))
                .procedure(
                    ProcedureRef::<Export>::new()
                        .bind(Export::fields().report_id, move || format!("report-{i}")),
                )
                .mount()
                .unwrap()
        })
        .collect();
    let target = _handles[3].registration_id().to_owned();
    c.bench_function("procedure invoke (one binding, in-process executor)", |b| {
        b.to_async(&runtime).iter(|| {
            let request = Invocation::new("domain:bench.export")
                .registration(&target)
                .input(json!({"format": "csv"}));
            let registry = &registry;
            async move { black_box(registry.invoke(request, InvokeOptions::default()).await) }
        });
    });
}

fn toolset(c: &mut Criterion) {
    let mut group = c.benchmark_group("build direct tools");
    for count in [40usize, 300] {
        let registry = Registry::builder().build();
        let _handles = mounted(&registry, count);
        group.bench_with_input(BenchmarkId::from_parameter(count), &count, |b, _| {
            b.iter(|| fixture::direct_tools(&registry));
        });
    }
    group.finish();
}

fn canonical(c: &mut Criterion) {
    let value = rows();
    let size = agent_surface::canonical::canonical_json(&value).len();
    c.bench_function(&format!("canonical JSON + fnv1a64 ({size} bytes)"), |b| {
        b.iter(|| black_box(fnv1a64(black_box(&value))));
    });
}

criterion_group!(
    benches,
    create_registry,
    register_unregister,
    snapshot,
    invoke,
    hidden,
    invalidate,
    procedure,
    toolset,
    canonical
);
criterion_main!(benches);
