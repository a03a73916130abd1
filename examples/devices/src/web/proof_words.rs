//! What the person reads and types around a proof: the browser's passkey
//! prompt explained when it gave nothing, and whether a typed one-time code
//! is whole (shared by the proof step and the passkey offer).

use agent_surface_dioxus::passkey::CeremonyError;

/// Whether `typed` holds a whole code: eight digits (spaces and dashes
/// between them allowed).
pub(crate) fn complete_code(typed: &str) -> bool {
    let digits = typed.chars().filter(char::is_ascii_digit).count();
    digits == 8
        && typed
            .chars()
            .all(|c| c.is_ascii_digit() || c == ' ' || c == '-')
}

/// What the person is told when the browser's passkey prompt gave nothing.
pub(crate) fn ceremony_text(error: &CeremonyError) -> String {
    match error {
        CeremonyError::Unsupported => "This browser cannot use passkeys on this page. Use the \
                                       code from the terminal."
            .to_owned(),
        CeremonyError::NotAllowed => {
            "The passkey prompt was cancelled or timed out. Nothing was done.".to_owned()
        }
        CeremonyError::Failed(why) => format!("The browser refused the passkey: {why}"),
        _ => "The page went away.".to_owned(),
    }
}
