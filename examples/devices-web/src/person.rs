//! Whether an answer in the dialog came from the person's own input: in a
//! browser, the event's `isTrusted` (the browser's input, never a script's
//! `click()` or `dispatchEvent`). It is no proof of a person — a browser
//! agent driving real input produces trusted events too — but it keeps the
//! page's own scripts from answering for them. Natively (a headless
//! `VirtualDom`) there is no browser input, and every event counts.

use dioxus::prelude::{KeyboardEvent, MouseEvent};

/// Whether a click (by pointer, or Enter or Space on a focused button) came
/// from the browser's input rather than a script.
pub fn from_pointer(event: &MouseEvent) -> bool {
    #[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
    {
        use dioxus_web::WebEventExt as _;
        event
            .data()
            .try_as_web_event()
            .is_some_and(|event| event.is_trusted())
    }
    #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
    {
        let _ = event;
        true
    }
}

/// Whether a key came from the browser's input rather than a script.
pub fn from_keys(event: &KeyboardEvent) -> bool {
    #[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
    {
        use dioxus_web::WebEventExt as _;
        event
            .data()
            .try_as_web_event()
            .is_some_and(|event| event.is_trusted())
    }
    #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
    {
        let _ = event;
        true
    }
}
