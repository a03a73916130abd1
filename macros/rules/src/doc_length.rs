//! The length of a description built from doc text, as a `const fn`: a doc
//! comment the compiler computes (`#[doc = include_str!("…")]`,
//! `#[doc = concat!(…)]`) is checked against its limit at compile time by
//! the code the macros generate, counting exactly as
//! [`description_from_doc_lines`](crate::description_from_doc_lines) builds
//! the description from the text's lines.

/// The character starting at byte `at` of `bytes` (valid UTF-8) and its
/// width in bytes.
#[allow(clippy::indexing_slicing)] // every index is checked against the length first
const fn char_at(bytes: &[u8], at: usize) -> (char, usize) {
    let first = bytes[at] as u32;
    let (width, mut value) = if first < 0x80 {
        (1, first)
    } else if first >> 5 == 0b110 {
        (2, first & 0x1f)
    } else if first >> 4 == 0b1110 {
        (3, first & 0x0f)
    } else {
        (4, first & 0x07)
    };
    let mut next = 1;
    while next < width && at + next < bytes.len() {
        value = (value << 6) | (bytes[at + next] as u32 & 0x3f);
        next += 1;
    }
    match char::from_u32(value) {
        Some(c) => (c, width),
        None => ('\u{fffd}', width),
    }
}

/// The characters of `bytes[start..end]` once trimmed of whitespace.
const fn trimmed_chars(bytes: &[u8], start: usize, end: usize) -> usize {
    let mut count = 0;
    let mut pending_space = 0;
    let mut at = start;
    while at < end {
        let (c, width) = char_at(bytes, at);
        if c.is_whitespace() {
            // Counted only if something follows it on the line.
            if count > 0 {
                pending_space += 1;
            }
        } else {
            count += pending_space + 1;
            pending_space = 0;
        }
        at += width;
    }
    count
}

/// How many characters (Unicode scalar values) the description built from
/// `text` has: its lines trimmed, joined by one character within a
/// paragraph and by two across a blank line, blank lines at either end
/// dropped.
///
/// ```
/// use agent_surface_rules::{description_from_doc_lines, doc_description_chars};
///
/// let text = "  Disable devices.\n  They stop reporting.\n\n  - by id\n";
/// assert_eq!(
///     doc_description_chars(text),
///     description_from_doc_lines(text.lines()).chars().count()
/// );
/// ```
#[allow(clippy::indexing_slicing)] // every index is checked against the length first
pub const fn doc_description_chars(text: &str) -> usize {
    let bytes = text.as_bytes();
    let mut total = 0;
    let mut pending_break = false;
    let mut start = 0;
    while start <= bytes.len() {
        let mut end = start;
        while end < bytes.len() && bytes[end] != b'\n' {
            end += 1;
        }
        let chars = trimmed_chars(bytes, start, end);
        if chars == 0 {
            pending_break = total > 0;
        } else {
            if pending_break {
                total += 2;
                pending_break = false;
            } else if total > 0 {
                total += 1;
            }
            total += chars;
        }
        start = end + 1;
    }
    total
}

#[cfg(test)]
mod tests {
    use super::doc_description_chars;
    use crate::description_from_doc_lines;

    #[test]
    fn counts_as_the_description_is_built() {
        for text in [
            "",
            "\n\n",
            "One line.",
            " Two\n lines.\n",
            "\u{a0}Ünïcödé —\u{3000}wide\u{2003}\n\n\n  * item\n1. first\n",
            "a\r\nb\r\n",
            "trailing   \t\n   leading",
        ] {
            assert_eq!(
                doc_description_chars(text),
                description_from_doc_lines(text.lines()).chars().count(),
                "{text:?}"
            );
        }
    }
}
