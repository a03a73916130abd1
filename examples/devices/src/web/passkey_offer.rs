//! The offer to set up a passkey: shown at the top of the console while the
//! signed-in person has none, saying plainly why (approvals that disable
//! devices need proof that it is the person) and what works without one
//! (the code the console prints in its terminal).

use dioxus::prelude::*;

use super::Shared;
use super::prove::set_up_passkey;

/// Bumped when a passkey is registered: whatever shows the person's
/// passkeys reads it, and shows them anew.
#[derive(Clone, Copy)]
pub(crate) struct PasskeysChanged(pub(crate) Signal<u64>);

/// How many passkeys the signed-in person has, re-read when one is added.
pub(crate) fn use_passkey_count() -> usize {
    let shared = use_context::<Shared>();
    let changed = use_context::<PasskeysChanged>();
    let _ = (changed.0)();
    let person = &shared.app.user().id;
    shared
        .presence
        .passkeys()
        .map_or(0, |p| p.registered(person))
}

#[component]
pub(crate) fn PasskeyOffer() -> Element {
    let shared = use_context::<Shared>();
    let mut changed = use_context::<PasskeysChanged>();
    let count = use_passkey_count();
    let mut hidden = use_signal(|| false);
    let mut busy = use_signal(|| false);
    let mut message = use_signal(|| None::<String>);
    if count > 0 || hidden() {
        return rsx! {};
    }
    let set_up = move |_| {
        let shared = shared.clone();
        spawn(async move {
            busy.set(true);
            message.set(None);
            let done = set_up_passkey(&shared).await;
            busy.set(false);
            match done {
                Ok(()) => changed.0 += 1,
                Err(why) => message.set(Some(why)),
            }
        });
    };
    rsx! {
        section { id: "passkey-offer", class: "offer", "aria-labelledby": "passkey-offer-title",
            h2 { id: "passkey-offer-title", "Set up a passkey for your approvals" }
            p {
                "Before an agent may disable devices, you approve it here — and the console must know it is you, not a script or an agent working in this page. A passkey (Touch ID, Windows Hello, your phone or a security key) proves it in one step."
            }
            p { class: "muted",
                "Without a passkey, each request shows a one-time code in the terminal that started the console; you type it in the request."
            }
            div { class: "offer-actions",
                button {
                    id: "offer-setup-passkey",
                    class: "primary",
                    disabled: busy(),
                    onclick: set_up,
                    "Set up a passkey"
                }
                button { id: "offer-later", onclick: move |_| hidden.set(true), "Not now" }
            }
            if let Some(text) = message() {
                p { id: "offer-message", role: "status", "{text}" }
            }
        }
    }
}
