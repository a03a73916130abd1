//! Setting up a passkey: the offer at the top of the console while the
//! signed-in person has none (saying plainly why: approvals that disable
//! devices need proof that it is the person; and what works without one:
//! the code the console prints in its terminal), and the setup itself,
//! which the dialog offers too.
//!
//! Registering a passkey is itself an approval: a script in the page could
//! otherwise enroll a key of its own and approve with it. So the setup asks
//! for a code the console prints in its terminal first, and only then asks
//! the browser for the passkey.

use agent_surface::confirmation::PresenceChallenge;
use agent_surface_dioxus::passkey::create_passkey;
use dioxus::prelude::*;

use super::Shared;
use super::proof_words::{ceremony_text, complete_code};

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

/// Registers the passkey of `person` whose setup code was `typed`.
async fn register(shared: &Shared, setup: &PresenceChallenge, typed: &str) -> Result<(), String> {
    let person = shared.app.user().id.clone();
    let now = shared.app.registry().now_ms();
    let options = shared
        .presence
        .registration_options(setup, &person, typed, now)?;
    let credential = create_passkey(options)
        .await
        .map_err(|e| ceremony_text(&e))?;
    let Some(passkeys) = shared.presence.passkeys() else {
        return Err("Passkeys are not available on this console.".to_owned());
    };
    passkeys
        .finish_registration(&person, &credential)
        .map(|_| ())
        .map_err(|e| format!("The passkey was not set up: {e}"))
}

/// The setup, in two steps: a code from the terminal, then the browser's
/// passkey prompt. `place` names where it is shown (`offer`, `dialog`: its
/// elements' ids start with it); `done` is what the person is told once it
/// is set up.
#[component]
pub(crate) fn SetUpPasskey(place: &'static str, done: &'static str) -> Element {
    let shared = use_context::<Shared>();
    let mut changed = use_context::<PasskeysChanged>();
    let mut setup = use_signal(|| None::<PresenceChallenge>);
    let mut typed = use_signal(String::new);
    let mut busy = use_signal(|| false);
    let mut message = use_signal(|| None::<String>);
    let begin = {
        let shared = shared.clone();
        move |_| {
            let person = shared.app.user().id.clone();
            let now = shared.app.registry().now_ms();
            match shared.presence.begin_setup(&person, now) {
                Ok(challenge) => {
                    setup.set(Some(challenge));
                    typed.set(String::new());
                    message.set(None);
                }
                Err(e) => message.set(Some(format!("The setup cannot start: {e}"))),
            }
        }
    };
    let finish = move |_| {
        let shared = shared.clone();
        let Some(challenge) = setup.peek().clone() else {
            return;
        };
        let code = typed.peek().clone();
        spawn(async move {
            busy.set(true);
            message.set(None);
            let registered = register(&shared, &challenge, &code).await;
            busy.set(false);
            match registered {
                Ok(()) => {
                    setup.set(None);
                    message.set(Some(done.to_owned()));
                    changed.0 += 1;
                }
                Err(why) => message.set(Some(why)),
            }
        });
    };
    rsx! {
        if setup.read().is_none() {
            button {
                id: "{place}-setup-passkey",
                class: "primary",
                r#type: "button",
                onclick: begin,
                "Set up a passkey"
            }
        } else {
            div { id: "{place}-setup-step", class: "code",
                label { r#for: "{place}-setup-code",
                    "To set it up, type the setup code the console just printed in its terminal"
                }
                input {
                    id: "{place}-setup-code",
                    r#type: "text",
                    inputmode: "numeric",
                    autocomplete: "off",
                    maxlength: "12",
                    placeholder: "1234 5678",
                    // Not bound back from the server (see the code field).
                    oninput: move |event| typed.set(event.value()),
                }
                button {
                    id: "{place}-setup-continue",
                    class: "primary",
                    r#type: "button",
                    disabled: busy() || !complete_code(&typed()),
                    onclick: finish,
                    "Continue"
                }
            }
        }
        if let Some(text) = message() {
            p { id: "{place}-setup-message", role: "status", "{text}" }
        }
    }
}

#[component]
pub(crate) fn PasskeyOffer() -> Element {
    let count = use_passkey_count();
    let mut hidden = use_signal(|| false);
    // Set up from here (the person had none when the page opened): say so
    // until they put the note away.
    let had_none = use_hook(|| count == 0);
    if hidden() || (count > 0 && !had_none) {
        return rsx! {};
    }
    if count > 0 {
        return rsx! {
            section { id: "passkey-offer-done", class: "offer", role: "status",
                p {
                    strong { "Your passkey is set up. " }
                    "From now on, approving a request that disables devices asks for it (the terminal's code still works)."
                }
                div { class: "offer-actions",
                    button { id: "offer-done", onclick: move |_| hidden.set(true), "OK" }
                }
            }
        };
    }
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
                SetUpPasskey { place: "offer", done: "Your passkey is set up." }
                button { id: "offer-later", onclick: move |_| hidden.set(true), "Not now" }
            }
        }
    }
}
