//! The in-page mode: a registry running in the page itself (a wasm32 app:
//! Dioxus web, Leptos, Yew or none) serves its in-page agent's tools to
//! `document.modelContext` directly. The same [`GLUE`](super::GLUE) the
//! server-side mode sends to a page runs here, wired to the
//! [`PageAgent`](super::PageAgent) with `wasm-bindgen` closures instead of
//! a websocket: the page keeps `document.modelContext` equal to what the
//! agent may use now, every call runs through the pipeline, and a call
//! that needs the person waits for their answer in the page.

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::Value;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::{Closure, JsValue};

use super::{GLUE, PageAgent};

/// How serving the page ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum InPage {
    /// The browser has no `document.modelContext`: nothing was registered,
    /// and the page works as before.
    Absent,
    /// The registry went away (disposed): every tool was taken back.
    Ended,
}

/// The page's side of the channel: the glue's handler, once it listens.
type Handler = Rc<RefCell<Option<js_sys::Function>>>;

/// Sends `message` to the glue.
fn post(handler: &Handler, message: &Value) {
    let Some(handler) = handler.borrow().clone() else {
        return;
    };
    if let Ok(value) = js_sys::JSON::parse(&message.to_string()) {
        let _ = handler.call1(&JsValue::NULL, &value);
    }
}

/// The call `message` names, as a call refused for arguments too deep to
/// read (`None` when it names no call).
fn too_deep(message: &JsValue) -> Option<Value> {
    let field = |name: &str| js_sys::Reflect::get(message, &name.into()).ok();
    if field("type")?.as_string()? != "call" {
        return None;
    }
    // A call number is a non-negative integer the glue counted.
    let call = field("call")?.as_f64()?;
    if !(call >= 0.0 && call.fract() == 0.0 && call < 9_007_199_254_740_992.0) {
        return None;
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // checked above
    let call = call as u64;
    let name = field("name")?.as_string()?;
    Some(serde_json::json!({"type": "call", "call": call, "name": name, "tooDeep": true}))
}

/// Takes the tools back (and settles the calls the page still waits on),
/// and ends the calls still running (each settles `CANCELLED`), however
/// serving ends — the future dropped included.
struct EndOnDrop(Handler, Value, tokio_util::sync::CancellationToken);

impl Drop for EndOnDrop {
    fn drop(&mut self) {
        self.2.cancel();
        post(&self.0, &self.1);
    }
}

/// Serves `agent`'s tools to `document.modelContext` until the registry
/// goes away, or until this future is dropped (the tools are taken back,
/// and calls still waiting settle `CANCELLED`). Run it on the page's event
/// loop (`wasm_bindgen_futures::spawn_local`, a framework's `spawn`).
/// Feature-detects the API: without it, returns [`InPage::Absent`] at once.
pub async fn serve_in_page(agent: PageAgent) -> InPage {
    let handler: Handler = Rc::new(RefCell::new(None));
    let (to_rust, mut from_page) = tokio::sync::mpsc::unbounded_channel::<Value>();
    let send = Closure::<dyn FnMut(JsValue)>::new(move |message: JsValue| {
        let text = js_sys::JSON::stringify(&message)
            .ok()
            .and_then(|text| text.as_string());
        match text.and_then(|text| serde_json::from_str(&text).ok()) {
            Some(message) => {
                let _ = to_rust.send(message);
            }
            // Arguments nested deeper than JSON text parses to (or that
            // cannot be said as JSON): the call still gets its answer,
            // refused as too deep, so the page never waits for ever.
            None => {
                if let Some(refused) = too_deep(&message) {
                    let _ = to_rust.send(refused);
                }
            }
        }
    });
    let listen = {
        let handler = Rc::clone(&handler);
        Closure::<dyn FnMut(JsValue)>::new(move |listener: JsValue| {
            *handler.borrow_mut() = listener.dyn_into::<js_sys::Function>().ok();
        })
    };
    let channel = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&channel, &"send".into(), send.as_ref());
    let _ = js_sys::Reflect::set(&channel, &"listen".into(), listen.as_ref());
    let start = js_sys::Function::new_with_args(
        "channel",
        &format!("{GLUE}\nagentSurfaceWebMcp(channel);"),
    );
    if start.call1(&JsValue::NULL, &channel).is_err() {
        return InPage::Absent;
    }
    // The glue's first word says whether the browser has WebMCP.
    match from_page.recv().await {
        Some(hello) if hello.get("type").and_then(Value::as_str) == Some("ready") => {}
        _ => return InPage::Absent,
    }
    let stop = tokio_util::sync::CancellationToken::new();
    let _end = EndOnDrop(Rc::clone(&handler), agent.end_message(), stop.clone());
    let (mut watcher, due) = agent.watch(agent.mark());
    post(&handler, &agent.tools_message());
    if due {
        post(&handler, &agent.tools_message());
    }
    loop {
        tokio::select! {
            message = from_page.recv() => {
                let Some(message) = message else { break };
                if let Some(call) = agent.receive(&message) {
                    // Calls run side by side (one may wait for the person).
                    let (handler, stop) = (Rc::clone(&handler), stop.clone());
                    wasm_bindgen_futures::spawn_local(async move {
                        tokio::select! {
                            result = call => post(&handler, &result),
                            () = stop.cancelled() => {}
                        }
                    });
                }
            }
            moved = watcher.changed() => {
                if moved.is_none() {
                    break;
                }
                post(&handler, &agent.tools_message());
            }
        }
    }
    drop((send, listen));
    InPage::Ended
}
