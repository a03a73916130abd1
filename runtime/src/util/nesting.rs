//! JSON nesting without recursion: how deep a value nests, dropping a value
//! of any depth, and cutting text on a character boundary. Agent- and
//! handler-built values may nest deeper than any thread stack allows the
//! compiler's recursive walks to go.

use serde_json::Value;

/// The deepest nesting of arrays and objects serde_json's parser accepts
/// (128): no JSON text an agent sends reaches an adapter deeper than this.
/// An adapter that keeps agent arguments (to run again, to print) refuses
/// deeper ones on arrival, so nothing it keeps can overflow a stack when
/// copied, printed or dropped.
pub const PARSE_DEPTH: usize = 128;

/// What is left to visit of an array or an object.
enum Children<'a> {
    Array(std::slice::Iter<'a, Value>),
    Object(serde_json::map::Values<'a>),
}

/// Whether `value` nests at most `max` arrays and objects (a scalar nests
/// none, `[]` one, `[{}]` two). Iterative: the explicit stack never holds
/// more than `max` entries, and the walk stops at the first value too deep.
pub fn depth_within(value: &Value, max: usize) -> bool {
    depth_up_to(value, max) <= max
}

/// How many arrays and objects `value` nests, counted up to `limit`: a
/// value nesting deeper answers `limit + 1`, found at the first value too
/// deep (the explicit stack never holds more than `limit` entries).
pub(crate) fn depth_up_to(value: &Value, limit: usize) -> usize {
    // Inline for the usual shallow value: walking one allocates nothing.
    let mut stack: smallvec::SmallVec<[Children<'_>; 8]> = smallvec::SmallVec::new();
    let mut deepest = 0;
    let mut next = Some(value);
    loop {
        if let Some(value) = next.take() {
            let children = match value {
                Value::Array(items) => Some(Children::Array(items.iter())),
                Value::Object(map) => Some(Children::Object(map.values())),
                _ => None,
            };
            if let Some(children) = children {
                if stack.len() >= limit {
                    return limit.saturating_add(1);
                }
                stack.push(children);
                deepest = deepest.max(stack.len());
            }
        }
        let Some(top) = stack.last_mut() else {
            return deepest;
        };
        let child = match top {
            Children::Array(items) => items.next(),
            Children::Object(values) => values.next(),
        };
        match child {
            Some(child) => next = Some(child),
            None => {
                stack.pop();
            }
        }
    }
}

/// Drops `value` without recursion: a value nested deeper than the thread
/// stack allows would overflow it in the compiler's recursive drop.
pub fn dispose(value: Value) {
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, child)| child)),
            _ => {}
        }
    }
}

/// `text` cut to at most `max` bytes on a character boundary.
pub fn truncated(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.get(..cut).unwrap_or_default()
}
