//! Echoed names: what an error message repeats of a name the client sent
//! (a tool's, a method's) — at most [`MAX_ECHOED_CHARS`] characters, hidden
//! characters escaped, so a reply never grows with what the client sent.

use crate::adapter::text::{escape, truncate};

/// The most characters of a client-sent name an error message repeats.
pub(super) const MAX_ECHOED_CHARS: usize = 128;

/// `name` as an error message shows it: cut, escaped, and cut again (an
/// escape is longer than what it shows).
pub(super) fn echoed(name: &str) -> String {
    truncate(&escape(&truncate(name, MAX_ECHOED_CHARS)), MAX_ECHOED_CHARS).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_name_is_cut_and_a_hidden_character_shown() {
        let long = "v".repeat(100_000);
        let shown = echoed(&long);
        assert_eq!(shown.chars().count(), MAX_ECHOED_CHARS);
        assert!(shown.ends_with('…'));
        assert_eq!(echoed("tool\u{202E}x"), "tool\\u{202E}x");
        assert_eq!(echoed("plain_name"), "plain_name");
        let hidden = "\u{202E}".repeat(500);
        assert_eq!(echoed(&hidden).chars().count(), MAX_ECHOED_CHARS);
    }
}
