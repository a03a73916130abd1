//! The in-page WebMCP mode (`agent_surface::webmcp::serve_in_page`) in
//! headless Chromium: against a stand-in `document.modelContext` (the
//! browser's own needs `--enable-features=WebMCP`), the page registers the
//! in-page agent's tools, a call runs through the pipeline and answers the
//! page, and without the API nothing is registered (AS-ADAPTER-003).

#![cfg(all(target_arch = "wasm32", target_os = "unknown"))]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // test code

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_surface::prelude::*;
use agent_surface::webmcp::{InPage, PageAgent, serve_in_page};
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_browser);

/// How many times it ran.
#[agent_schema]
#[derive(Clone, Debug, PartialEq, Eq)]
struct Counted {
    /// Runs so far.
    runs: usize,
}

/// A switch in a page.
struct Switch(AtomicUsize);

/// A switch the in-page agent may flip.
#[agent_component(type = "page.switch")]
impl Switch {
    /// Flips it.
    #[action(effect = "local-state")]
    fn flip(&self) -> Counted {
        Counted {
            runs: self.0.fetch_add(1, Ordering::SeqCst) + 1,
        }
    }
}

/// Runs `script` in the page.
fn run(script: &str) -> wasm_bindgen::JsValue {
    js_sys::Function::new_no_args(script)
        .call0(&wasm_bindgen::JsValue::NULL)
        .unwrap()
}

async fn wait(ms: u32) {
    gloo_timers::future::TimeoutFuture::new(ms).await;
}

#[wasm_bindgen_test]
async fn the_page_registers_the_agents_tools_and_a_call_runs_through_the_pipeline() {
    run("window.__tools = new Map();
         document.modelContext = {
           registerTool(tool, options) {
             window.__tools.set(tool.name, tool);
             if (options && options.signal) {
               options.signal.addEventListener('abort', () => window.__tools.delete(tool.name));
             }
           },
           addEventListener() {},
         };");
    let registry = Registry::builder().environment(Environment::Test).build();
    let _mounted = registry
        .mount(Arc::new(Switch(AtomicUsize::new(0))))
        .unwrap();
    let agent = PageAgent::new(&registry, "tab-1", "In-page agent").unwrap();
    wasm_bindgen_futures::spawn_local(async move {
        let _ = serve_in_page(agent).await;
    });
    wait(50).await;
    let names = run("return JSON.stringify([...window.__tools.keys()]);")
        .as_string()
        .unwrap();
    assert!(names.contains("view_page__switch__flip"), "{names}");
    let result = wasm_bindgen_futures::JsFuture::from(js_sys::Promise::from(run(
        "return window.__tools.get('view_page__switch__flip').execute({})
           .then(result => JSON.stringify(result));",
    )))
    .await
    .unwrap()
    .as_string()
    .unwrap();
    let result: serde_json::Value = serde_json::from_str(&result).unwrap();
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["structuredContent"]["runs"], 1, "{result}");
    // Arguments nested deeper than JSON text parses to: answered, refused.
    let deep = wasm_bindgen_futures::JsFuture::from(js_sys::Promise::from(run(
        "let deep = {}; for (let i = 0; i < 10000; i++) { deep = [deep]; }
         return window.__tools.get('view_page__switch__flip').execute({deep})
           .then(result => JSON.stringify(result));",
    )))
    .await
    .unwrap()
    .as_string()
    .unwrap();
    let deep: serde_json::Value = serde_json::from_str(&deep).unwrap();
    assert_eq!(deep["structuredContent"]["code"], "INVALID_INPUT", "{deep}");
    // A getter that answers shallow once and deep after, and a value with
    // no JSON form: what is checked is what is sent, and each call is
    // answered; the page lives on.
    let tricky = wasm_bindgen_futures::JsFuture::from(js_sys::Promise::from(run(
        "let deep = {}; for (let i = 0; i < 10000; i++) { deep = [deep]; }
         let n = 0;
         const flip = { get ids() { return n++ ? deep : ['a']; } };
         const cyclic = {}; cyclic.self = cyclic;
         const tool = window.__tools.get('view_page__switch__flip');
         return Promise.all([tool.execute(flip), tool.execute(cyclic), tool.execute({})])
           .then(results => JSON.stringify(results));",
    )))
    .await
    .unwrap()
    .as_string()
    .unwrap();
    let tricky: serde_json::Value = serde_json::from_str(&tricky).unwrap();
    // The getter was read once, shallow: that is what went (refused here
    // only because `flip` takes no input).
    assert!(tricky[0]["isError"].is_boolean(), "{tricky}");
    assert_eq!(
        tricky[1]["structuredContent"]["code"], "INVALID_INPUT",
        "{tricky}"
    );
    assert_eq!(tricky[2]["isError"], false, "{tricky}");
    run("delete document.modelContext;");
}

#[wasm_bindgen_test]
async fn without_the_api_nothing_is_registered_and_the_page_works_as_before() {
    run("delete document.modelContext;");
    let registry = Registry::builder().environment(Environment::Test).build();
    let _mounted = registry
        .mount(Arc::new(Switch(AtomicUsize::new(0))))
        .unwrap();
    let agent = PageAgent::new(&registry, "tab-2", "In-page agent").unwrap();
    assert_eq!(serve_in_page(agent).await, InPage::Absent);
}
