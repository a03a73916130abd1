//! Whether an answer in the dialog came from the person's own input: in a
//! browser, the event's `isTrusted` (the browser's input, never a script's
//! `click()` or `dispatchEvent`). It is no proof of a person — a browser
//! agent driving real input produces trusted events too — but it keeps the
//! page's own scripts from answering for them. Natively (a headless
//! `VirtualDom`) there is no browser input, and every event counts.

use dioxus::prelude::Event;

/// Whether `event` (a click — by pointer, or Enter or Space on a focused
/// button — or a key) came from the browser's input rather than a script.
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
pub fn from_input<T>(event: &Event<T>) -> bool
where
    T: dioxus_web::WebEventExt,
    T::WebEvent: AsRef<web_sys::Event>,
{
    event
        .data()
        .try_as_web_event()
        .is_some_and(|event| event.as_ref().is_trusted())
}

/// Whether `event` came from the browser's input rather than a script.
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
pub fn from_input<T>(event: &Event<T>) -> bool {
    let _ = event;
    true
}
