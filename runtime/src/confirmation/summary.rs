//! The default confirmation summary: what the human reads before approving.
//!
//! `<description> Input: {<bound fields>,<agent fields>}`. Values the
//! application bound (locked fields of a procedure reference) come first and
//! are kept whole; the agent's own fields follow and are the first to be cut
//! at the 300-character limit, so an agent cannot push the values that
//! matter out of sight with a long note that sorts before them. Every part
//! is escaped ([`display_text::escape`]) before it is measured.

use std::borrow::Cow;

use serde_json::Value;

use crate::canonical::canonical_json;
use crate::util::display_text::{escape, truncate};

/// The longest summary, in characters.
pub(crate) const MAX_SUMMARY_CHARS: usize = 300;

/// Between the description and the input.
const SEPARATOR: &str = " Input: ";

/// The least of the description kept when bound values need its room.
const MIN_DESCRIPTION_CHARS: usize = 60;

/// The summary of a call of a capability described by `description` with
/// `effective` input, where the top-level fields named in `bound` hold
/// values the application bound.
pub(crate) fn summary(description: &str, effective: &Value, bound: &[&str]) -> String {
    let (head, tail) = render(effective, bound);
    // The bound part and the marker of a cut must fit; the description
    // yields down to a floor, the agent's fields yield first and entirely.
    let needed = SEPARATOR.len() + head.chars().count() + usize::from(!tail.is_empty());
    let room = MAX_SUMMARY_CHARS
        .saturating_sub(needed)
        .max(MIN_DESCRIPTION_CHARS);
    let description = escape(description);
    let description = truncate(&description, room);
    let text = format!("{description}{SEPARATOR}{head}{tail}");
    truncate(&text, MAX_SUMMARY_CHARS).into_owned()
}

/// The input as JSON text split in two, both escaped: the opening brace
/// and the bound fields, then the agent's fields and the closing brace.
/// Input that is not an object is all tail.
fn render(effective: &Value, bound: &[&str]) -> (String, String) {
    let Value::Object(fields) = effective else {
        return (
            String::new(),
            escape(&canonical_json(effective)).into_owned(),
        );
    };
    let entry = |key: &str, value: &Value| -> String {
        let text = format!(
            "{}:{}",
            canonical_json(&Value::from(key)),
            canonical_json(value)
        );
        match escape(&text) {
            Cow::Borrowed(_) => text,
            Cow::Owned(escaped) => escaped,
        }
    };
    let mut keys: Vec<&String> = fields.keys().collect();
    keys.sort();
    let (locked, free): (Vec<&String>, Vec<&String>) = keys
        .into_iter()
        .partition(|key| bound.contains(&key.as_str()));
    let locked: Vec<String> = locked
        .into_iter()
        .filter_map(|key| fields.get(key).map(|value| entry(key, value)))
        .collect();
    let free: Vec<String> = free
        .into_iter()
        .filter_map(|key| fields.get(key).map(|value| entry(key, value)))
        .collect();
    let head = format!("{{{}", locked.join(","));
    let comma = if locked.is_empty() || free.is_empty() {
        ""
    } else {
        ","
    };
    let tail = format!("{comma}{}}}", free.join(","));
    (head, tail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn without_bound_fields_it_is_the_canonical_input() {
        let text = summary("Poke devices.", &json!({"ids": ["a"], "at": 1}), &[]);
        assert_eq!(text, r#"Poke devices. Input: {"at":1,"ids":["a"]}"#);
        assert_eq!(
            summary("Read.", &json!(null), &[]),
            "Read. Input: null".to_owned()
        );
    }

    #[test]
    fn bound_fields_come_first_and_survive_a_long_agent_field() {
        let input = json!({"aNote": "x".repeat(400), "deviceIds": ["d7", "d8"]});
        let text = summary("Disable devices.", &input, &["deviceIds"]);
        assert_eq!(text.chars().count(), MAX_SUMMARY_CHARS);
        assert!(
            text.starts_with(r#"Disable devices. Input: {"deviceIds":["d7","d8"],"aNote":"xxx"#),
            "{text}"
        );
        assert!(text.ends_with('…'));
    }

    #[test]
    fn a_long_description_yields_to_bound_values() {
        let ids: Vec<String> = (0..12).map(|n| format!("device-{n:02}")).collect();
        let input = json!({"deviceIds": ids, "note": "n"});
        let text = summary(&"D".repeat(280), &input, &["deviceIds"]);
        assert_eq!(text.chars().count(), MAX_SUMMARY_CHARS);
        assert!(text.contains(r#""device-11"]"#), "{text}");
    }

    #[test]
    fn hidden_characters_are_escaped_before_measuring() {
        let input = json!({"name": "report\u{202E}fdp.exe"});
        let text = summary("Open\u{200B} a file.", &input, &[]);
        assert_eq!(
            text,
            r#"Open\u{200B} a file. Input: {"name":"report\u{202E}fdp.exe"}"#
        );
    }
}
