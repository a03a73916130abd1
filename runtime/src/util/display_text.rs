//! Display text: what reaches a human (a confirmation summary, an MCP
//! elicitation message) with every invisible or reordering character made
//! visible.
//!
//! Agent-written text can carry bidi overrides (U+202E turns `exe.txt` into
//! `txt.exe`), zero-width characters and control characters that make the
//! text a human approves differ from what runs. [`escape`] replaces each with
//! a visible `\u{…}` escape; everything else passes through.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Unicode general category Cf (format), Unicode 15.1, as inclusive ranges.
const FORMAT: &[(u32, u32)] = &[
    (0x00AD, 0x00AD),
    (0x0600, 0x0605),
    (0x061C, 0x061C),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x180E, 0x180E),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x2064),
    (0x2066, 0x206F),
    (0xFEFF, 0xFEFF),
    (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
];

/// Blank characters outside Cf that render as nothing (Hangul fillers) and
/// the line and paragraph separators (Zl, Zp).
const INVISIBLE: &[u32] = &[0x115F, 0x1160, 0x2028, 0x2029, 0x3164, 0xFFA0];

/// The rest of Unicode's default-ignorable code points (characters a
/// renderer shows as nothing, usable to hide data in text that looks
/// plain): the combining grapheme joiner, Khmer inherent vowels, Mongolian
/// free variation selectors, variation selectors and their supplement, and
/// the reserved default-ignorable blocks.
const IGNORABLE: &[(u32, u32)] = &[
    (0x034F, 0x034F),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0xFE00, 0xFE0F),
    (0xFFF0, 0xFFF8),
    (0xE0000, 0xE0FFF),
];

/// Whether `c` must not reach a human as is: control (Cc), format (Cf,
/// which holds the bidi controls and zero-width characters), separators
/// that break lines, invisible fillers and every other default-ignorable
/// code point (variation selectors among them).
pub(crate) fn is_hidden(c: char) -> bool {
    let code = u32::from(c);
    c.is_control()
        || INVISIBLE.contains(&code)
        || FORMAT
            .iter()
            .chain(IGNORABLE)
            .any(|&(first, last)| (first..=last).contains(&code))
}

/// `text` with every hidden character (controls, bidirectional overrides, zero-width marks) written as `\u{XXXX}`.
/// Idempotent: the escapes are plain ASCII.
pub fn escape(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_hidden) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_hidden(c) {
            // Writing to a String cannot fail.
            let _ = write!(out, "\\u{{{:04X}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `text` cut to at most `max` characters, the last one `…` when cut.
pub fn truncate(text: &str, max: usize) -> Cow<'_, str> {
    match text.char_indices().nth(max) {
        None => Cow::Borrowed(text),
        Some(_) => {
            let kept: String = text.chars().take(max.saturating_sub(1)).collect();
            Cow::Owned(kept + "…")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_ignorable_code_points_are_escaped() {
        for c in [
            '\u{FE0F}',
            '\u{E0100}',
            '\u{034F}',
            '\u{180B}',
            '\u{17B4}',
            '\u{E0FFF}',
        ] {
            let text = format!("ok{c}x");
            assert!(!escape(&text).contains(c), "{:04X}", u32::from(c));
        }
    }

    #[test]
    fn hidden_characters_become_visible_escapes() {
        for (hidden, shown) in [
            ('\u{202A}', "\\u{202A}"),
            ('\u{202B}', "\\u{202B}"),
            ('\u{202C}', "\\u{202C}"),
            ('\u{202D}', "\\u{202D}"),
            ('\u{202E}', "\\u{202E}"),
            ('\u{2066}', "\\u{2066}"),
            ('\u{2067}', "\\u{2067}"),
            ('\u{2068}', "\\u{2068}"),
            ('\u{2069}', "\\u{2069}"),
            ('\u{200E}', "\\u{200E}"),
            ('\u{200F}', "\\u{200F}"),
            ('\u{061C}', "\\u{061C}"),
            ('\u{200B}', "\\u{200B}"),
            ('\u{200C}', "\\u{200C}"),
            ('\u{200D}', "\\u{200D}"),
            ('\u{2060}', "\\u{2060}"),
            ('\u{FEFF}', "\\u{FEFF}"),
            ('\u{00AD}', "\\u{00AD}"),
            ('\u{E0041}', "\\u{E0041}"),
            ('\u{2028}', "\\u{2028}"),
            ('\n', "\\u{000A}"),
            ('\u{0007}', "\\u{0007}"),
            ('\u{009B}', "\\u{009B}"),
        ] {
            let text = format!("a{hidden}b");
            assert_eq!(
                escape(&text),
                format!("a{shown}b"),
                "{:04X}",
                u32::from(hidden)
            );
        }
    }

    #[test]
    fn visible_text_passes_unchanged_and_escaping_is_idempotent() {
        let plain = "Delete «report» 📄 — é, ß, 中文, עברית";
        assert!(matches!(escape(plain), Cow::Borrowed(_)));
        let once = escape("evil\u{202E}txt.exe").into_owned();
        assert_eq!(escape(&once), once);
    }

    #[test]
    fn truncation_counts_characters() {
        assert_eq!(truncate("abc", 3), "abc");
        assert_eq!(truncate("abcd", 3), "ab…");
        assert_eq!(truncate("ééééé", 2), "é…");
    }
}
