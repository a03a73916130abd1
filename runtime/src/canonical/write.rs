//! Canonical JSON writing: the iterative walk, object keys in UTF-16
//! order, strings escaped as `JSON.stringify` escapes them and numbers
//! written as JavaScript writes them; and [`measure`], the walk that checks
//! a value's depth and canonical size at once.

use std::cmp::Ordering;

use serde_json::{Map, Number, Value};
use smallvec::SmallVec;

use super::{Sink, utf16_cmp};

/// Writes the canonical form of `value` into `sink`.
///
/// The walk keeps its own stack (inline for the first levels, then on the
/// heap), so any nesting depth is safe on any thread stack; it stops early
/// once the sink reports [`Sink::full`].
pub fn write_canonical<S: Sink + ?Sized>(value: &Value, sink: &mut S) {
    let _complete = walk::<_, true>(value, sink, usize::MAX);
}

/// What [`measure`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Measure {
    /// The canonical length in bytes.
    Len(usize),
    /// It nests deeper than allowed (the walk stopped there).
    TooDeep,
    /// Its canonical form is longer than allowed (the walk stopped there).
    TooLarge,
}

/// One walk for the entry and exit bounds: whether `value` nests at most
/// `max_depth` arrays and objects, and the length of its canonical JSON if
/// it is at most `max_bytes`. Stops at the first bound crossed; a value
/// that crosses both may answer either.
pub(crate) fn measure(value: &Value, max_depth: usize, max_bytes: usize) -> Measure {
    struct Nowhere;
    impl Sink for Nowhere {
        fn write(&mut self, _: &[u8]) {}
    }
    // Nothing is written, so key order does not matter: the walk skips it.
    measure_walk::<_, false>(value, &mut Nowhere, max_depth, max_bytes)
}

/// [`measure`], also writing the canonical form into `sink` as it walks
/// (all of it when the answer is [`Measure::Len`]; otherwise a prefix of at
/// most `max_bytes` bytes).
pub(crate) fn measure_into<S: Sink + ?Sized>(
    value: &Value,
    sink: &mut S,
    max_depth: usize,
    max_bytes: usize,
) -> Measure {
    measure_walk::<S, true>(value, sink, max_depth, max_bytes)
}

/// [`measure_into`], with object keys in canonical order when `ORDERED`
/// (a length is the same in any order).
fn measure_walk<S: Sink + ?Sized, const ORDERED: bool>(
    value: &Value,
    sink: &mut S,
    max_depth: usize,
    max_bytes: usize,
) -> Measure {
    struct Budget<'s, S: ?Sized> {
        sink: &'s mut S,
        written: usize,
        max: usize,
    }
    impl<S: Sink + ?Sized> Sink for Budget<'_, S> {
        fn write_byte(&mut self, byte: u8) {
            if self.written < self.max {
                self.sink.write_byte(byte);
            }
            self.written = self.written.saturating_add(1);
        }
        fn write(&mut self, bytes: &[u8]) {
            // Only what fits reaches the sink: one long string crossing the
            // bound is never passed on whole.
            let room = self.max.saturating_sub(self.written);
            self.written = self.written.saturating_add(bytes.len());
            self.sink
                .write(bytes.get(..room.min(bytes.len())).unwrap_or_default());
        }
        fn full(&self) -> bool {
            self.written > self.max
        }
    }
    let mut budget = Budget {
        sink,
        written: 0,
        max: max_bytes,
    };
    if !walk::<_, ORDERED>(value, &mut budget, max_depth) {
        Measure::TooDeep
    } else if budget.written > max_bytes {
        Measure::TooLarge
    } else {
        Measure::Len(budget.written)
    }
}

/// Frames held inline before the stack spills to the heap.
const INLINE_FRAMES: usize = 8;

/// The iterative walk; `false` when a value nests deeper than `max_depth`
/// (nothing is written past it). Object keys come in canonical order when
/// `ORDERED`, in the map's own order otherwise.
fn walk<S: Sink + ?Sized, const ORDERED: bool>(
    value: &Value,
    sink: &mut S,
    max_depth: usize,
) -> bool {
    let mut stack: SmallVec<[Frame<'_>; INLINE_FRAMES]> = SmallVec::new();
    let mut next = Some(value);
    loop {
        if let Some(value) = next.take() {
            match value {
                Value::Null => sink.write(b"null"),
                Value::Bool(true) => sink.write(b"true"),
                Value::Bool(false) => sink.write(b"false"),
                Value::Number(number) => write_number(number, sink),
                Value::String(text) => write_string(text, sink),
                Value::Array(items) => {
                    if stack.len() >= max_depth {
                        return false;
                    }
                    sink.write_byte(b'[');
                    stack.push(Frame::Array(items.iter(), true));
                }
                Value::Object(map) => {
                    if stack.len() >= max_depth {
                        return false;
                    }
                    sink.write_byte(b'{');
                    let entries = if ORDERED {
                        Entries::of(map)
                    } else {
                        Entries::InOrder(map.iter())
                    };
                    stack.push(Frame::Object(entries, true));
                }
            }
        }
        if sink.full() {
            return true;
        }
        let Some(frame) = stack.last_mut() else {
            return true;
        };
        match frame {
            Frame::Array(items, first) => match items.next() {
                Some(item) => {
                    if !std::mem::replace(first, false) {
                        sink.write_byte(b',');
                    }
                    next = Some(item);
                }
                None => {
                    sink.write_byte(b']');
                    stack.pop();
                }
            },
            Frame::Object(entries, first) => match entries.next() {
                Some((key, item)) => {
                    if !std::mem::replace(first, false) {
                        sink.write_byte(b',');
                    }
                    write_string(key, sink);
                    sink.write_byte(b':');
                    next = Some(item);
                }
                None => {
                    sink.write_byte(b'}');
                    stack.pop();
                }
            },
        }
    }
}

/// An array or object being written: what is left of it, and whether
/// nothing of it was written yet.
enum Frame<'a> {
    Array(std::slice::Iter<'a, Value>, bool),
    Object(Entries<'a>, bool),
}

/// An object's entries in canonical key order.
enum Entries<'a> {
    /// The map's own order, already canonical.
    InOrder(serde_json::map::Iter<'a>),
    /// Re-sorted by UTF-16 code units.
    Sorted(std::vec::IntoIter<(&'a String, &'a Value)>),
}

impl<'a> Entries<'a> {
    fn of(map: &'a Map<String, Value>) -> Entries<'a> {
        // serde_json's default map iterates in byte order, which equals UTF-16
        // order unless keys mix U+E000..U+FFFF with astral characters (or another
        // crate enabled `preserve_order`); only then do we sort. One pass.
        let mut keys = map.keys();
        let mut sorted = true;
        if let Some(mut previous) = keys.next() {
            for key in keys {
                if utf16_cmp(previous, key) != Ordering::Less {
                    sorted = false;
                    break;
                }
                previous = key;
            }
        }
        if sorted {
            Entries::InOrder(map.iter())
        } else {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| utf16_cmp(a.0, b.0));
            Entries::Sorted(entries.into_iter())
        }
    }
}

impl<'a> Iterator for Entries<'a> {
    type Item = (&'a String, &'a Value);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Entries::InOrder(entries) => entries.next(),
            Entries::Sorted(entries) => entries.next(),
        }
    }
}

/// Writes a JSON string literal exactly as `JSON.stringify` would.
///
/// Never inlined: one body per sink, with the sink's `write` and the
/// escape scan inlined into it, whichever code unit its callers land in
/// (inlined, its callers' instruction counts moved by 3 % between builds
/// of unrelated changes).
#[inline(never)]
pub fn write_string<S: Sink + ?Sized>(text: &str, sink: &mut S) {
    sink.write_byte(b'"');
    let bytes = text.as_bytes();
    // Most strings need no escaping: one scan, one write.
    if sink.write_unescaped(bytes) {
        sink.write_byte(b'"');
        return;
    }
    let mut start = 0;
    for (index, &byte) in bytes.iter().enumerate() {
        let mut control = *b"\\u0000";
        let escape: &[u8] = match byte {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0C => b"\\f",
            0x00..=0x1F => {
                control[4] = b'0' + (byte >> 4);
                control[5] = hex_digit(byte & 0xF);
                &control
            }
            _ => continue,
        };
        sink.write(bytes.get(start..index).unwrap_or_default());
        sink.write(escape);
        start = index + 1;
    }
    sink.write(bytes.get(start..).unwrap_or_default());
    sink.write_byte(b'"');
}

/// Non-zero for each byte a JSON string escapes: the control characters,
/// `"` and `\\`.
pub(super) static ESCAPES: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut rest: &mut [u8] = &mut table;
    let mut byte = 0u8;
    while let [slot, tail @ ..] = rest {
        *slot = (byte < 0x20 || byte == b'"' || byte == b'\\') as u8;
        byte = byte.wrapping_add(1);
        rest = tail;
    }
    table
};

/// Whether any byte is a control character, `"` or `\\`: eight bytes at a
/// time (the classic "has a byte less than n" and "has a zero byte" word
/// tests, exact as booleans), the tail one by one.
#[inline(always)]
pub(super) fn needs_escape(bytes: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let has_zero = |word: u64| word.wrapping_sub(ONES) & !word & HIGHS != 0;
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let word = u64::from_le_bytes(word);
        let control = word.wrapping_sub(ONES * 0x20) & !word & HIGHS != 0;
        if control
            || has_zero(word ^ (ONES * u64::from(b'"')))
            || has_zero(word ^ (ONES * u64::from(b'\\')))
        {
            return true;
        }
    }
    chunks
        .remainder()
        .iter()
        .any(|&b| b < 0x20 || b == b'"' || b == b'\\')
}

fn hex_digit(nibble: u8) -> u8 {
    if nibble < 10 {
        b'0' + nibble
    } else {
        b'a' + nibble - 10
    }
}

fn write_number<S: Sink + ?Sized>(number: &Number, sink: &mut S) {
    if let Some(n) = number.as_u64() {
        write_integer(u128::from(n), false, sink);
    } else if let Some(n) = number.as_i64() {
        write_integer(u128::from(n.unsigned_abs()), n < 0, sink);
    } else if let Some(f) = number.as_f64() {
        if f.fract() == 0.0 && f.abs() < 1e21 {
            // Exact: integral doubles below 1e21 fit an i128 (`-0` is `0`).
            #[allow(clippy::cast_possible_truncation)]
            let integral = f as i128;
            write_integer(integral.unsigned_abs(), integral < 0, sink);
        } else {
            sink.write(js_number(f).as_bytes());
        }
    }
}

/// Writes an integer's decimal digits, formatted on the stack.
fn write_integer<S: Sink + ?Sized>(magnitude: u128, negative: bool, sink: &mut S) {
    // u128::MAX has 39 digits; one more for the sign.
    let mut buffer = [0u8; 40];
    let mut start = buffer.len();
    let mut rest = magnitude;
    loop {
        start -= 1;
        if let Some(slot) = buffer.get_mut(start) {
            *slot = b'0' + u8::try_from(rest % 10).unwrap_or(0);
        }
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    if negative {
        start -= 1;
        if let Some(slot) = buffer.get_mut(start) {
            *slot = b'-';
        }
    }
    sink.write(buffer.get(start..).unwrap_or_default());
}

/// Formats a finite `f64` exactly as JavaScript's `Number.prototype.toString`.
pub(super) fn js_number(f: f64) -> String {
    if f == 0.0 || !f.is_finite() {
        return "0".to_owned();
    }
    if f.fract() == 0.0 && f.abs() < 1e21 {
        // Exact: integral doubles below 1e21 fit an i128.
        #[allow(clippy::cast_possible_truncation)]
        let integral = f as i128;
        return integral.to_string();
    }
    // Rust's `{:e}` prints the shortest round-trip digits: "d.ddde-7".
    let scientific = format!("{:e}", f.abs());
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let k = i32::try_from(digits.len()).unwrap_or(i32::MAX);
    let n = exponent + 1; // position of the decimal point relative to the digits
    let mut out = String::with_capacity(digits.len() + 8);
    if f < 0.0 {
        out.push('-');
    }
    if k <= n && n <= 21 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n(
            '0',
            usize::try_from(n - k).unwrap_or(0),
        ));
    } else if 0 < n && n <= 21 {
        let split = usize::try_from(n).unwrap_or(0);
        out.push_str(digits.get(..split).unwrap_or_default());
        out.push('.');
        out.push_str(digits.get(split..).unwrap_or_default());
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', usize::try_from(-n).unwrap_or(0)));
        out.push_str(&digits);
    } else {
        let (first, rest) = digits.split_at(1.min(digits.len()));
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        out.push('e');
        out.push(if n - 1 < 0 { '-' } else { '+' });
        out.push_str(&(n - 1).abs().to_string());
    }
    out
}
