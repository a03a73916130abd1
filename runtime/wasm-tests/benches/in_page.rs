//! The core's benchmark in a browser page: the reference's cases (the
//! shared fixture of `runtime/benches`), timed by `wasm-bindgen-test`'s
//! criterion in headless Chromium, plus the in-page agent's whole call —
//! `execute` of the tool the page registered with `document.modelContext`
//! (a stand-in object here: the browser's own runs only with
//! `--enable-features=WebMCP` and offers no way to time one call), through
//! the glue and the pipeline, to the result the page resolves with.
//!
//! ```text
//! CHROMEDRIVER=$(command -v chromedriver) \
//! CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner \
//!   cargo bench -p agent-surface-wasm-tests --target wasm32-unknown-unknown
//! ```
//!
//! Natively this file is empty.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)] // benchmark code

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
#[path = "../../benches/fixture/mod.rs"]
mod fixture;

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
mod page {
    use std::hint::black_box;
    use std::time::Duration;

    use agent_surface::prelude::*;
    use agent_surface::webmcp::{PageAgent, serve_in_page};
    use wasm_bindgen::JsValue;
    use wasm_bindgen_futures::JsFuture;
    use wasm_bindgen_test::{Criterion, wasm_bindgen_bench, wasm_bindgen_test_configure};

    use super::fixture::{self, mounted, poke, read_state, tool_call_id};

    wasm_bindgen_test_configure!(run_in_browser);

    /// A page's timing loop holds its one thread: the test runner's driver
    /// gives up on a page busy for 20 s, so each case is measured for 2 s
    /// after 0.5 s of warm-up, and its statistics resampled 10,000 times.
    fn brief(c: &mut Criterion) {
        *c = std::mem::take(c)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(2))
            .nresamples(10_000);
    }

    #[wasm_bindgen_bench]
    fn create_registry(c: &mut Criterion) {
        brief(c);
        c.bench_function("create registry", |b| {
            b.iter(|| black_box(Registry::builder().build()))
        });
    }

    fn register_unregister(c: &mut Criterion, count: usize) {
        brief(c);
        let instances: Vec<String> = (0..count).map(|n| format!("w{n}")).collect();
        // As the reference's case: a registry of its own each round.
        c.bench_function(&format!("register + unregister {count}"), |b| {
            b.iter(|| fixture::register_unregister(&instances));
        });
    }

    #[wasm_bindgen_bench]
    fn register_unregister_10(c: &mut Criterion) {
        register_unregister(c, 10);
    }

    #[wasm_bindgen_bench]
    fn register_unregister_100(c: &mut Criterion) {
        register_unregister(c, 100);
    }

    #[wasm_bindgen_bench]
    fn snapshot(c: &mut Criterion) {
        brief(c);
        let registry = Registry::builder().build();
        let _handles = mounted(&registry, 100);
        let options = SnapshotOptions::default();
        c.bench_function("snapshot at 100 components", |b| {
            b.iter(|| black_box(registry.snapshot(&options)))
        });
    }

    #[wasm_bindgen_bench]
    async fn observation_invoke(c: &mut Criterion) {
        brief(c);
        let registry = Registry::builder().build();
        let _handles = mounted(&registry, 10);
        let observed = registry.clone();
        let mut n = 0u64;
        // With an invocation id, as the reference calls it.
        c.bench_async_function("observation invoke", move |b| {
            let registry = observed.clone();
            n += 1_000_000;
            let mut k = n;
            Box::pin(b.iter_future(move || {
                k += 1;
                let registry = registry.clone();
                let request = read_state().invocation_id(tool_call_id(k));
                async move { black_box(registry.invoke(request, InvokeOptions::default()).await) }
            }))
        })
        .await;
    }

    #[wasm_bindgen_bench]
    async fn action_invoke(c: &mut Criterion) {
        brief(c);
        let registry = Registry::builder().build();
        let _handles = mounted(&registry, 10);
        let acted = registry.clone();
        let mut n = 0u64;
        c.bench_async_function(
            "action invoke with a tool-call id (deduplicated)",
            move |b| {
                let registry = acted.clone();
                n += 1_000_000;
                let mut k = n;
                Box::pin(
                    b.iter_future(move || {
                        k += 1;
                        let registry = registry.clone();
                        let request = poke().invocation_id(tool_call_id(k));
                        async move {
                            black_box(registry.invoke(request, InvokeOptions::default()).await)
                        }
                    }),
                )
            },
        )
        .await;
    }

    /// Runs `script` in the page.
    fn run(script: &str) -> JsValue {
        js_sys::Function::new_no_args(script)
            .call0(&JsValue::NULL)
            .unwrap_or_else(|error| panic!("{script}: {error:?}"))
    }

    #[wasm_bindgen_bench]
    async fn in_page_agent_call(c: &mut Criterion) {
        brief(c);
        run("window.__tools = new Map();
             document.modelContext = {
               registerTool(tool) { window.__tools.set(tool.name, tool); },
               addEventListener() {},
             };");
        let registry = Registry::builder().build();
        let handles = mounted(&registry, 10);
        let agent = PageAgent::new(&registry, "bench", "In-page agent").unwrap();
        wasm_bindgen_futures::spawn_local(async move {
            let _ = serve_in_page(agent).await;
            drop(handles);
        });
        gloo_timers::future::TimeoutFuture::new(50).await;
        let names = run("return [...window.__tools.keys()].join(' ');")
            .as_string()
            .unwrap();
        assert!(names.contains("view_bench__widget__poke_at_w3"), "{names}");
        c.bench_async_function(
            "in-page agent: execute -> glue -> pipeline -> result",
            |b| {
                Box::pin(b.iter_future(|| async {
                    let call = run("return window.__tools.get('view_bench__widget__poke_at_w3')
                                  .execute({ids: ['d1', 'd2']}, {});");
                    black_box(JsFuture::from(js_sys::Promise::from(call)).await.unwrap())
                }))
            },
        )
        .await;
        run("delete document.modelContext;");
    }
}
