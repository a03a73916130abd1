//! The dialog's proof step: a request that needs proof of presence is
//! approved with the person's passkey, or with the one-time code the
//! console printed in its terminal — never with a click alone. The dialog
//! says which proof it asks for; a person without a passkey is offered to
//! set one up, and the code always works.

use agent_surface::confirmation::{PendingConfirmation, ResolveError};
use agent_surface_dioxus::passkey::get_assertion;
use agent_surface_dioxus::{AnswerError, PendingConfirmations};
use dioxus::prelude::*;
use serde_json::json;

use super::passkey_offer::{SetUpPasskey, use_passkey_count};
use super::presence::refused_text;
use super::proof_words::{ceremony_text, complete_code};
use super::{SessionEnd, Shared};

/// What the person is told when an answer did nothing.
fn answer_text(error: &AnswerError) -> String {
    match error {
        AnswerError::TooSoon => "The request was only just shown: try again.".to_owned(),
        AnswerError::Refused(ResolveError::PresenceRefused(refusal)) => {
            refused_text(*refusal).to_owned()
        }
        AnswerError::Refused(ResolveError::PresenceRequired) => {
            "This request needs your passkey or the code from the terminal.".to_owned()
        }
        AnswerError::Refused(_) => "The request is no longer waiting. Nothing was done.".to_owned(),
        _ => "Nothing was done.".to_owned(),
    }
}

/// The proof step of a live request that needs it, answering through the
/// dialog's own `pending` (so the dialog moves on, rather than showing the
/// request as answered elsewhere).
#[component]
pub(crate) fn ProveAndApprove(
    request: PendingConfirmation,
    armed: bool,
    pending: PendingConfirmations,
) -> Element {
    let shared = use_context::<Shared>();
    let session = use_context::<SessionEnd>();
    let mut message = use_signal(|| None::<String>);
    let mut code = use_signal(String::new);
    let mut busy = use_signal(|| false);
    let registered = use_passkey_count();
    let action = request.presentation.action.clone();
    let shown = request.shown();
    let challenge = request.presence_challenge();

    let with_passkey = {
        let shared = shared.clone();
        let session = session.clone();
        let shown = shown.clone();
        move |_| {
            let shared = shared.clone();
            let session = session.clone();
            let shown = shown.clone();
            let challenge = challenge.clone();
            spawn(async move {
                let (Some(approver), Some(passkeys)) =
                    (shared.approver.clone(), shared.presence.passkeys())
                else {
                    return;
                };
                busy.set(true);
                message.set(None);
                let person = shared.app.user().id.clone();
                let options = match passkeys.start_approval(&person, &challenge) {
                    Ok(options) => options,
                    Err(refusal) => {
                        busy.set(false);
                        message.set(Some(refused_text(refusal).to_owned()));
                        return;
                    }
                };
                let assertion = get_assertion(options).await;
                busy.set(false);
                let credential = match assertion {
                    Ok(credential) => credential,
                    Err(error) => {
                        message.set(Some(ceremony_text(&error)));
                        return;
                    }
                };
                if !session.live() {
                    return;
                }
                let proof = json!({"method": "webauthn", "credential": credential});
                if let Err(error) = pending.approve_with_presence(&shown, &approver, &proof) {
                    message.set(Some(answer_text(&error)));
                }
            });
        }
    };
    let with_code = {
        let shared = shared.clone();
        let session = session.clone();
        let shown = shown.clone();
        move || {
            let Some(approver) = shared.approver.clone() else {
                return;
            };
            if !session.live() {
                return;
            }
            let proof = json!({"method": "out-of-band", "code": code.peek().clone()});
            match pending.approve_with_presence(&shown, &approver, &proof) {
                Ok(_) => code.set(String::new()),
                Err(AnswerError::Refused(ResolveError::PresenceRefused(
                    agent_surface::confirmation::PresenceRefusal::Invalid,
                ))) => {
                    message.set(Some(
                        "That code is wrong. Check it in the terminal; after three wrong tries it stops working."
                            .to_owned(),
                    ));
                }
                Err(error) => message.set(Some(answer_text(&error))),
            }
        }
    };
    let mut submit_key = with_code.clone();
    let mut submit_click = with_code;
    let waiting = busy() || !armed;
    rsx! {
        div { id: "presence", class: "presence",
            p { id: "presence-why",
                strong { "This needs proof that it is you. " }
                "A click could come from a script or an agent in this page, so approving asks for your passkey or for the code printed in the terminal that started the console."
            }
            if registered > 0 {
                button {
                    id: "approve-passkey",
                    class: "danger",
                    r#type: "button",
                    disabled: waiting,
                    onclick: with_passkey,
                    "{action} with your passkey"
                }
            } else {
                p { id: "presence-no-passkey", class: "muted",
                    "You have no passkey on this console yet (Touch ID, Windows Hello, a phone or a security key)."
                }
                SetUpPasskey { place: "dialog", done: "Your passkey is set up: approve with it now." }
            }
            div { id: "presence-code-form", class: "code",
                label { r#for: "presence-code", "Or type the code from the terminal" }
                input {
                    id: "presence-code",
                    r#type: "text",
                    inputmode: "numeric",
                    autocomplete: "off",
                    maxlength: "12",
                    placeholder: "1234 5678",
                    // Not bound back from the server: a round trip per
                    // key would overwrite what the person typed meanwhile.
                    oninput: move |event| code.set(event.value()),
                    onkeydown: move |event: KeyboardEvent| {
                        if event.key() == Key::Enter {
                            submit_key();
                        }
                    },
                }
                button {
                    id: "approve-code",
                    class: "danger",
                    r#type: "button",
                    disabled: waiting || !complete_code(&code()),
                    onclick: move |_| submit_click(),
                    "{action} with code"
                }
            }
            if let Some(text) = message() {
                p { id: "presence-message", role: "status", "{text}" }
            }
        }
    }
}
