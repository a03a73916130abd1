//! Allocations and instructions per operation, for each core case.
//!
//! `cargo bench -p agent-surface --bench per_op` prints, for each case, the
//! heap allocations and bytes allocated per operation, counted by a global
//! allocator that wraps the system's (steady state: after a warm-up, over
//! 1,000 operations). Timings are `core`'s job; counts do not move with the
//! machine's load.
//!
//! `per_op --only CASE N` runs N operations of one case and nothing else,
//! inside `measured`, for an instruction count:
//!
//! ```text
//! valgrind --tool=callgrind --toggle-collect='per_op::measured*' \
//!     target/release/deps/per_op-… --only observation 1000
//! ```
//!
//! Instructions per operation = the `Ir` total / N. `per_op --trace CASE`
//! prints where each allocation of one operation comes from.
//!
//! `per_op --time CASE N ROUNDS` times ROUNDS batches of N operations (the
//! allocator not counting) and prints the fastest batch and the median, in
//! nanoseconds per operation. On a shared machine the fastest of many short
//! batches is the figure least disturbed by other load: run two builds'
//! binaries alternately and compare their fastest batches.

// The counting allocator below is the only unsafe code: it forwards each
// call to `System` unchanged. It lives in this benchmark, never in the crate.
#![allow(unsafe_code)]
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::print_stdout,
    clippy::panic
)]

mod fixture;

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use agent_surface::canonical::fnv1a64;
use agent_surface::policy::{authenticated, rate_limit};
use agent_surface::prelude::*;
use serde_json::json;

use fixture::{Widget, mounted, poke, read_state, rows};

/// The system allocator, counting.
struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
/// Cleared by `--time`: allocations then cost only the system's.
static COUNTING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);
/// Set by `--trace CASE`: each allocation of one operation prints where
/// it came from (the crate's frames of its backtrace).
static TRACING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

thread_local! {
    static IN_TRACE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn trace_allocation(size: usize) {
    if !TRACING.load(Ordering::Relaxed) || IN_TRACE.with(std::cell::Cell::get) {
        return;
    }
    IN_TRACE.with(|t| t.set(true));
    let trace = std::backtrace::Backtrace::force_capture().to_string();
    let frames: Vec<&str> = trace
        .lines()
        .map(str::trim)
        .filter(|line| {
            (line.contains("agent_surface")
                || line.contains("per_op")
                || line.contains("serde_json"))
                && !line.starts_with("at ")
                && !line.contains("per_op::Counting")
                && !line.contains("trace_allocation")
        })
        .take(4)
        .collect();
    println!("alloc {size:>5} B  {}", frames.join("  <  "));
    IN_TRACE.with(|t| t.set(false));
}
static BYTES: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards every call to `System` unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            trace_allocation(layout.size());
            BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        }
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        }
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            BYTES.fetch_add(new_size as u64, Ordering::Relaxed);
        }
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The cases, by name: each runs one operation per call.
const CASES: [&str; 16] = [
    "create-registry",
    "register-unregister-1000",
    "snapshot-100",
    "action",
    "action-deduplicated",
    "observation",
    "observation-deduplicated",
    "action-two-policies",
    "action-two-policies-deduplicated",
    "invoke-hidden",
    "procedure",
    "direct-tools-40",
    "direct-tools-300",
    "canonical-32k",
    "watchers-1000",
    "watchers-1000-bare",
];

/// What a case needs, built once before it is measured.
struct Fixture {
    runtime: tokio::runtime::Runtime,
    plain: Registry,
    guarded: Registry,
    big: Registry,
    instances: Vec<String>,
    rows: serde_json::Value,
    calls: u64,
    watchers: Option<Watchers>,
    _handles: Vec<Mounted>,
}

/// 1,000 consumers following the surface, as a server's sessions do
/// (`watchers-1000`: an adapter's [`ChangeWatcher`] per consumer view in a
/// task of its own, as an MCP session's notifier, the
/// registry changed by a mount or an unmount; `watchers-1000-bare`: a task
/// per consumer on a plain `watch` channel, the least a server does to
/// learn of a change). One operation is one change seen by all of them:
/// their difference per consumer is the adapter's own share of a
/// `list_changed` fan-out (the transport's is neither's).
///
/// [`ChangeWatcher`]: agent_surface::adapter::ChangeWatcher
struct Watchers {
    registry: Registry,
    changed: tokio::sync::watch::Sender<u64>,
    seen: Arc<AtomicU64>,
    extra: Option<Mounted>,
    bare: bool,
}

const WATCHERS: u64 = 1000;

impl Watchers {
    fn start(runtime: &tokio::runtime::Runtime, bare: bool) -> Watchers {
        use agent_surface::adapter::{CallActivity, ChangeWatcher, ConsumerViews, Mark, Topology};
        use agent_surface::context::ConsumerKind;
        let _in_runtime = runtime.enter();
        let registry = Registry::builder().build();
        let views = ConsumerViews::new(&registry, ConsumerKind::Mcp, Topology::Remote);
        let activity = Arc::new(CallActivity::default());
        let (changed, _) = tokio::sync::watch::channel(0u64);
        let seen = Arc::new(AtomicU64::new(0));
        for n in 0..WATCHERS {
            let seen = Arc::clone(&seen);
            if bare {
                let mut changes = changed.subscribe();
                runtime.spawn(async move {
                    while changes.changed().await.is_ok() {
                        seen.fetch_add(1, Ordering::Relaxed);
                    }
                });
            } else {
                let view = views.get(&format!("consumer-{n}"), None).unwrap();
                let since = Mark::now(&registry, &activity);
                let (mut watcher, _) = ChangeWatcher::attach(&registry, &activity, view, since);
                runtime.spawn(async move {
                    while watcher.changed().await.is_some() {
                        seen.fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
        }
        // Every task waiting.
        runtime.block_on(tokio::task::yield_now());
        Watchers {
            registry,
            changed,
            seen,
            extra: None,
            bare,
        }
    }

    /// One change, until every consumer has seen it.
    fn change(&mut self, runtime: &tokio::runtime::Runtime) {
        let target = self.seen.load(Ordering::Relaxed) + WATCHERS;
        if self.bare {
            self.changed.send_modify(|n| *n += 1);
        } else {
            self.extra = match self.extra.take() {
                None => Some(self.registry.mount(Arc::new(Widget)).unwrap()),
                Some(mounted) => {
                    drop(mounted);
                    None
                }
            };
        }
        runtime.block_on(async {
            while self.seen.load(Ordering::Relaxed) < target {
                tokio::task::yield_now().await;
            }
        });
    }
}

impl Fixture {
    fn new() -> Fixture {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        // Registries are built where they run, as an application builds them
        // in its async main: their clock follows that runtime's.
        let in_runtime = runtime.enter();
        let plain = Registry::builder().build();
        let mut handles = mounted(&plain, 10);
        let guarded = Registry::builder()
            .policy(authenticated())
            .policy(rate_limit(u32::MAX, Duration::from_secs(1)))
            .host_context(|| HostContext::new().with("user", json!({"name": "bench"})))
            .build();
        handles.extend(mounted(&guarded, 10));
        let big = Registry::builder().build();
        handles.extend(mounted(&big, 100));
        drop(in_runtime);
        Fixture {
            runtime,
            plain,
            guarded,
            big,
            instances: (0..1000).map(|n| format!("w{n}")).collect(),
            rows: rows(),
            calls: 0,
            watchers: None,
            _handles: handles,
        }
    }

    /// Runs `n` operations of `case`.
    fn run(&mut self, case: &str, n: u64) {
        match case {
            "create-registry" => (0..n).for_each(|_| drop(black_box(Registry::builder().build()))),
            "register-unregister-1000" => {
                // As `core` and the reference: a registry of its own each
                // round, created and dropped with its mounts.
                (0..n).for_each(|_| fixture::register_unregister(&self.instances));
            }
            "snapshot-100" => {
                let options = SnapshotOptions::default();
                for _ in 0..n {
                    black_box(self.big.snapshot(&options));
                }
            }
            "action"
            | "action-deduplicated"
            | "observation"
            | "observation-deduplicated"
            | "action-two-policies"
            | "action-two-policies-deduplicated"
            | "invoke-hidden" => {
                let registry = if case.starts_with("action-two-policies") {
                    &self.guarded
                } else {
                    &self.plain
                };
                let calls = &mut self.calls;
                self.runtime.block_on(async {
                    for _ in 0..n {
                        let request = match case {
                            "observation" => read_state(),
                            "observation-deduplicated" => {
                                *calls += 1;
                                read_state().invocation_id(fixture::tool_call_id(*calls))
                            }
                            "action-two-policies-deduplicated" => {
                                *calls += 1;
                                poke().invocation_id(fixture::tool_call_id(*calls))
                            }
                            "invoke-hidden" => Invocation::new("view:bench.ghost.readState"),
                            "action-deduplicated" => {
                                *calls += 1;
                                poke().invocation_id(fixture::tool_call_id(*calls))
                            }
                            _ => poke(),
                        };
                        black_box(registry.invoke(request, InvokeOptions::default()).await);
                    }
                });
            }
            "procedure" => self.procedure(n),
            "direct-tools-40" | "direct-tools-300" => {
                let registry = Registry::builder().build();
                let _mounted = mounted(&registry, if case == "direct-tools-40" { 40 } else { 300 });
                (0..n).for_each(|_| fixture::direct_tools(&registry));
            }
            "canonical-32k" => (0..n).for_each(|_| {
                black_box(fnv1a64(black_box(&self.rows)));
            }),
            "watchers-1000" | "watchers-1000-bare" => {
                let bare = case.ends_with("bare");
                if self.watchers.as_ref().is_none_or(|w| w.bare != bare) {
                    self.watchers = Some(Watchers::start(&self.runtime, bare));
                }
                let watchers = self.watchers.as_mut().unwrap();
                (0..n).for_each(|_| watchers.change(&self.runtime));
            }
            other => panic!("no case {other}; the cases are {CASES:?}"),
        }
    }

    fn procedure(&mut self, n: u64) {
        use agent_surface::procedure::{
            ExecuteFuture, ManifestEntry, ProcedureCall, ProcedureExecutor, ProcedureManifest,
        };
        use fixture::Export;
        struct Echo(ProcedureManifest);
        impl ProcedureExecutor for Echo {
            fn manifest(&self) -> &ProcedureManifest {
                &self.0
            }
            fn execute(&self, call: ProcedureCall) -> ExecuteFuture {
                Box::pin(async move {
                    Ok(json!({"rows": call.input.as_object().map_or(0, |o| o.len())}))
                })
            }
        }
        let in_runtime = self.runtime.enter();
        let registry = Registry::builder().build();
        drop(in_runtime);
        let manifest: ProcedureManifest = [ManifestEntry::declared(
            Export::contract().checked().unwrap(),
        )]
        .into_iter()
        .collect();
        registry.set_procedure_executor(Some(Arc::new(Echo(manifest))));
        let handle = registry
            .mounting(Arc::new(Widget))
            .instance("w0")
            .procedure(
                ProcedureRef::<Export>::new().bind(Export::fields().report_id, || "r".to_owned()),
            )
            .mount()
            .unwrap();
        let target = handle.registration_id().to_owned();
        self.runtime.block_on(async {
            for _ in 0..n {
                let request = Invocation::new("domain:bench.export")
                    .registration(&target)
                    .input(json!({"format": "csv"}));
                black_box(registry.invoke(request, InvokeOptions::default()).await);
            }
        });
    }
}

/// Whether one operation of `case` works on a whole surface (1,000
/// mounts, a catalog, 1,000 watchers): few are needed to count it.
fn whole_surface(case: &str) -> bool {
    ["register", "direct", "watchers"]
        .iter()
        .any(|prefix| case.starts_with(prefix))
}

/// Operations before counting: enough to reach the steady state (the
/// in-memory audit buffer and the dedupe window full, evicting as they
/// take), as criterion's warm-up does.
fn warm_up(case: &str) -> u64 {
    if whole_surface(case) {
        2
    } else if case.contains("registry") || case.contains("canonical") {
        100
    } else {
        20_000
    }
}

/// The operations whose instructions are counted (see the module docs).
#[inline(never)]
fn measured(fixture: &mut Fixture, case: &str, n: u64) {
    fixture.run(case, n);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mut fixture = Fixture::new();
    if let Some(at) = args.iter().position(|a| a == "--trace") {
        let case = args.get(at + 1).map_or("observation", String::as_str);
        fixture.run(case, 20);
        TRACING.store(true, Ordering::Relaxed);
        fixture.run(case, 1);
        TRACING.store(false, Ordering::Relaxed);
        return;
    }
    if let Some(at) = args.iter().position(|a| a == "--only") {
        let case = args.get(at + 1).map_or("observation", String::as_str);
        let n = args
            .get(at + 2)
            .and_then(|n| n.parse().ok())
            .unwrap_or(1000);
        fixture.run(case, warm_up(case));
        measured(&mut fixture, case, n);
        return;
    }
    if let Some(at) = args.iter().position(|a| a == "--time") {
        let number = |offset: usize, default: u64| {
            args.get(at + offset)
                .and_then(|n| n.parse().ok())
                .unwrap_or(default)
        };
        let case = args.get(at + 1).map_or("observation", String::as_str);
        let (n, rounds) = (number(2, 1000).max(1), number(3, 50).max(1));
        COUNTING.store(false, Ordering::Relaxed);
        fixture.run(case, warm_up(case));
        let mut batches: Vec<f64> = (0..rounds)
            .map(|_| {
                let start = std::time::Instant::now();
                measured(&mut fixture, case, n);
                #[allow(clippy::cast_precision_loss)]
                let per_op = start.elapsed().as_secs_f64() * 1e9 / n as f64;
                per_op
            })
            .collect();
        batches.sort_by(f64::total_cmp);
        let median = batches[batches.len() / 2];
        println!("{case} fastest {:.1} ns median {median:.1} ns", batches[0]);
        return;
    }
    let filter = args.iter().skip(1).find(|a| !a.starts_with("--"));
    println!("| case | allocations / op | bytes allocated / op |");
    println!("|---|---|---|");
    for case in CASES {
        if filter.is_some_and(|f| !case.contains(f.as_str())) {
            continue;
        }
        let n: u64 = if whole_surface(case) { 20 } else { 1000 };
        fixture.run(case, warm_up(case));
        let (count, bytes) = (
            ALLOCATIONS.load(Ordering::Relaxed),
            BYTES.load(Ordering::Relaxed),
        );
        fixture.run(case, n);
        let count = ALLOCATIONS.load(Ordering::Relaxed) - count;
        let bytes = BYTES.load(Ordering::Relaxed) - bytes;
        #[allow(clippy::cast_precision_loss)]
        let (count, bytes) = (count as f64 / n as f64, bytes as f64 / n as f64);
        println!("| {case} | {count:.1} | {bytes:.0} |");
    }
}
