//! Canonical JSON, request fingerprints and confirmation digests. Use it to
//! reproduce a digest or fingerprint the registry computed: in tests, audits,
//! or another implementation of the specification.
//!
//! Canonical JSON is the byte form two equal JSON values always share: object
//! keys sorted (by UTF-16 code units, as the reference implementation sorts),
//! arrays in order, no insignificant whitespace, strings escaped exactly as
//! `JSON.stringify` escapes them, and numbers written the way JavaScript writes
//! them (`-0` becomes `0`, `1.0` becomes `1`, `1e21` becomes `1e+21`).
//! [`serde_json::Value`] cannot hold NaN or infinities, so every number is finite
//! by construction. Absent fields are simply not in the value.
//!
//! The writer streams into a [`Sink`], so a fingerprint or a digest never
//! materializes the canonical text.
//!
//! # Example
//! ```
//! use agent_surface::canonical::{canonical_json, fnv1a64, Canonical};
//! use serde_json::json;
//!
//! let a = json!({"b": [1, 2.0], "a": -0.0});
//! let b = json!({"a": 0, "b": [1.0, 2]});
//! assert_eq!(canonical_json(&a), r#"{"a":0,"b":[1,2]}"#);
//! assert_eq!(Canonical::of(&a), Canonical::of(&b));
//! assert_eq!(fnv1a64(&a), fnv1a64(&b));
//! assert_eq!(Canonical::of(&a).sha256(), Canonical::of(&b).sha256());
//! ```

mod blocks;
mod write;

pub(crate) use blocks::Blocked;
pub(crate) use write::{Measure, measure, measure_into};
pub use write::{write_canonical, write_string};

use std::cmp::Ordering;
use std::fmt;

use serde_json::Value;
use sha2::{Digest as _, Sha256};

/// Receives canonical JSON bytes as they are produced.
pub trait Sink {
    /// Appends bytes.
    fn write(&mut self, bytes: &[u8]);

    /// Appends one byte (the punctuation of the JSON text: quotes, brackets,
    /// commas, colons). The same as `write(&[byte])`, which it calls by
    /// default; a sink may take it faster.
    fn write_byte(&mut self, byte: u8) {
        self.write(&[byte]);
    }

    /// Whether the sink wants no more bytes: the writer then stops early,
    /// leaving the output incomplete. Never, by default.
    fn full(&self) -> bool {
        false
    }

    /// Appends the bytes of a JSON string's contents when none of them
    /// needs escaping (a control character, `"` or `\\`), and says whether
    /// it did; appends nothing otherwise. By default a scan, then
    /// [`write`](Self::write); a sink may do both in one pass.
    fn write_unescaped(&mut self, bytes: &[u8]) -> bool {
        if write::needs_escape(bytes) {
            return false;
        }
        self.write(bytes);
        true
    }
}

impl Sink for Vec<u8> {
    fn write(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }

    fn write_byte(&mut self, byte: u8) {
        self.push(byte);
    }
}

impl Sink for Sha256 {
    fn write(&mut self, bytes: &[u8]) {
        self.update(bytes);
    }
}

/// SipHash under the keys of the [`RandomState`](std::hash::RandomState)
/// it was built from: a fingerprint nobody without the keys can steer
/// (FNV-1a's can be: two inputs with one FNV-1a hash are found in seconds).
impl Sink for std::hash::DefaultHasher {
    fn write(&mut self, bytes: &[u8]) {
        std::hash::Hasher::write(self, bytes);
    }
}

/// The 64-bit FNV-1a hash, usable as a [`Sink`].
#[derive(Clone, Copy, Debug)]
pub struct Fnv1a64(u64);

impl Fnv1a64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;

    /// A hasher in its initial state.
    pub const fn new() -> Self {
        Fnv1a64(Self::OFFSET)
    }

    /// The hash of everything written so far.
    pub const fn finish(self) -> u64 {
        self.0
    }

    /// Hashes a byte string in one call.
    pub fn hash(bytes: &[u8]) -> u64 {
        let mut hasher = Fnv1a64::new();
        hasher.write(bytes);
        hasher.finish()
    }
}

impl Default for Fnv1a64 {
    fn default() -> Self {
        Self::new()
    }
}

impl Fnv1a64 {
    /// One step of FNV-1a: the byte in, then the multiplication.
    const fn step(hash: u64, byte: u8) -> u64 {
        (hash ^ byte as u64).wrapping_mul(Self::PRIME)
    }
}

impl Sink for Fnv1a64 {
    fn write_byte(&mut self, byte: u8) {
        self.0 = Self::step(self.0, byte);
    }

    // Always inlined: each writer's loop then hashes in registers, whatever
    // code unit the writer lands in.
    #[inline(always)]
    fn write(&mut self, bytes: &[u8]) {
        // Byte by byte, as FNV-1a is defined; four bytes per loop turn.
        let step = Self::step;
        let mut hash = self.0;
        let mut chunks = bytes.chunks_exact(4);
        for chunk in &mut chunks {
            if let [a, b, c, d] = *chunk {
                hash = step(step(step(step(hash, a), b), c), d);
            }
        }
        for &byte in chunks.remainder() {
            hash = step(hash, byte);
        }
        self.0 = hash;
    }

    // One pass: each byte is hashed and looked up at once, and the hash is
    // kept only when no byte needs escaping. The lookups do not wait on
    // the hash, so they run beside its chain of multiplications, which
    // alone bounds FNV-1a's speed.
    #[inline(always)]
    fn write_unescaped(&mut self, bytes: &[u8]) -> bool {
        let mut hash = self.0;
        let mut escapes = 0u8;
        for &byte in bytes {
            escapes |= write::ESCAPES.get(usize::from(byte)).copied().unwrap_or(1);
            hash = Self::step(hash, byte);
        }
        if escapes != 0 {
            return false;
        }
        self.0 = hash;
        true
    }
}

/// The length in bytes of the canonical JSON of `value`, or `None` as soon
/// as it exceeds `max` (the walk stops there: a huge value costs no more
/// than `max` bytes of counting).
pub fn canonical_len_within(value: &Value, max: usize) -> Option<usize> {
    match measure(value, usize::MAX, max) {
        Measure::Len(len) => Some(len),
        Measure::TooDeep | Measure::TooLarge => None,
    }
}

/// Compares two strings by their UTF-16 code units, as JavaScript sorts keys.
///
/// Byte order and UTF-16 order differ only when one string has a character in
/// U+E000..=U+FFFF (UTF-8 lead byte `0xEE`/`0xEF`) where the other has an
/// astral character (lead byte `0xF0`..): UTF-16 encodes the latter with a
/// surrogate (`0xD800`..) that sorts first.
pub fn utf16_cmp(a: &str, b: &str) -> Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let Some((x, y)) = a.iter().zip(b).find(|(x, y)| x != y) else {
        return a.len().cmp(&b.len());
    };
    let high_bmp = |byte: u8| (0xEE..=0xEF).contains(&byte);
    let astral = |byte: u8| byte >= 0xF0;
    if high_bmp(*x) && astral(*y) {
        Ordering::Greater
    } else if astral(*x) && high_bmp(*y) {
        Ordering::Less
    } else {
        x.cmp(y)
    }
}

/// The canonical JSON text of `value`.
pub fn canonical_json(value: &Value) -> String {
    let mut bytes = Vec::with_capacity(128);
    write_canonical(value, &mut bytes);
    // The writer only emits valid UTF-8: ASCII punctuation and whole strings.
    String::from_utf8(bytes).unwrap_or_default()
}

/// The FNV-1a 64-bit hash of the canonical JSON of `value` (the request
/// fingerprint of the invocation pipeline's phase 1).
pub fn fnv1a64(value: &Value) -> u64 {
    let mut hasher = Fnv1a64::new();
    write_canonical(value, &mut hasher);
    hasher.finish()
}

/// A value in canonical form: equality is exact JSON-value equality (key order
/// irrelevant, `-0` equals `0`), and [`sha256`](Canonical::sha256) digests it.
///
/// Confirmation evidence keeps the whole canonical text and compares it in full;
/// the digest is never the only thing compared.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Canonical(Box<str>);

impl Canonical {
    /// Canonicalizes a value.
    pub fn of(value: &Value) -> Canonical {
        Canonical(canonical_json(value).into_boxed_str())
    }

    /// The canonical JSON text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The SHA-256 digest of the canonical text.
    pub fn sha256(&self) -> Sha256Digest {
        Sha256Digest(Sha256::digest(self.0.as_bytes()).into())
    }
}

impl fmt::Debug for Canonical {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Canonical").field(&self.0).finish()
    }
}

impl fmt::Display for Canonical {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A SHA-256 digest; displays as 64 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Sha256Digest(pub [u8; 32]);

impl Sha256Digest {
    /// The digest of the canonical JSON of `value`, streamed.
    pub fn of(value: &Value) -> Sha256Digest {
        let mut hasher = Sha256::new();
        write_canonical(value, &mut hasher);
        Sha256Digest(hasher.finalize().into())
    }
}

impl fmt::Display for Sha256Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|byte| write!(f, "{byte:02x}"))
    }
}

impl fmt::Debug for Sha256Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sha256Digest({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::write::js_number;
    use super::*;
    use serde_json::Map;
    use serde_json::json;

    #[test]
    fn numbers_are_written_as_javascript_writes_them() {
        let cases: [(f64, &str); 12] = [
            (-0.0, "0"),
            (1.0, "1"),
            (-2.5, "-2.5"),
            (0.1, "0.1"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (1.5e-7, "1.5e-7"),
            (0.000001, "0.000001"),
            (123456.789, "123456.789"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
            (-1e-7, "-1e-7"),
        ];
        for (f, expected) in cases {
            assert_eq!(js_number(f), expected, "{f:e}");
        }
    }

    #[test]
    fn strings_are_escaped_as_json_stringify_escapes_them() {
        let value = json!("a\"b\\c\n\u{1}\u{7f}\u{2028}é");
        assert_eq!(
            canonical_json(&value),
            "\"a\\\"b\\\\c\\n\\u0001\u{7f}\u{2028}é\""
        );
    }

    #[test]
    fn keys_sort_by_utf16_code_units() {
        // U+FF21 sorts after U+1F600 in UTF-16 (0xFF21 > 0xD83D) but before it in UTF-8.
        let value = json!({"\u{ff21}": 1, "\u{1f600}": 2, "a": 3});
        assert_eq!(
            canonical_json(&value),
            "{\"a\":3,\"\u{1f600}\":2,\"\u{ff21}\":1}"
        );
        assert_eq!(utf16_cmp("\u{ff21}", "\u{1f600}"), Ordering::Greater);
        assert_eq!(utf16_cmp("ab", "abc"), Ordering::Less);
    }

    /// Runs `test` on a thread with a 2 MiB stack.
    fn on_small_stack(test: impl FnOnce() + Send + 'static) {
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(test)
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn deep_values_are_written_without_recursion() {
        const DEPTH: usize = 100_000;
        on_small_stack(|| {
            let mut arrays = Value::Null;
            let mut objects = json!(1);
            for _ in 0..DEPTH {
                arrays = Value::Array(vec![arrays]);
                let mut map = Map::new();
                map.insert("k".to_owned(), objects);
                objects = Value::Object(map);
            }
            let text = canonical_json(&arrays);
            let hashed = fnv1a64(&objects) == Fnv1a64::hash(canonical_json(&objects).as_bytes());
            let _ = Sha256Digest::of(&objects);
            let budget = canonical_len_within(&arrays, 10);
            // Dropped iteratively before asserting: unwinding would drop recursively.
            crate::util::nesting::dispose(arrays);
            crate::util::nesting::dispose(objects);
            assert_eq!(text, "[".repeat(DEPTH) + "null" + &"]".repeat(DEPTH));
            assert!(hashed);
            assert_eq!(budget, None);
        });
    }

    #[test]
    fn the_size_budget_stops_early_and_counts_exactly() {
        let value = json!({"b": [1, 2.5, "x\n"], "a": null});
        let exact = canonical_json(&value).len();
        assert_eq!(canonical_len_within(&value, exact), Some(exact));
        assert_eq!(canonical_len_within(&value, exact - 1), None);
        struct Counting(usize);
        impl Sink for Counting {
            fn write(&mut self, bytes: &[u8]) {
                self.0 += bytes.len();
            }
            fn full(&self) -> bool {
                self.0 > 4
            }
        }
        let mut counting = Counting(0);
        write_canonical(&json!(vec![12345; 10_000]), &mut counting);
        assert!(counting.0 < 16, "stopped after {} bytes", counting.0);
    }

    #[test]
    fn fnv_matches_the_published_test_vectors() {
        assert_eq!(Fnv1a64::hash(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(Fnv1a64::hash(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(Fnv1a64::hash(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn the_one_pass_string_hash_equals_hashing_the_text() {
        // Every byte value, alone and inside longer strings, at every
        // position: the one-pass path must take exactly the strings that
        // need no escaping, and hash them as the text is hashed.
        let mut strings: Vec<String> = (0u8..=0x7F).map(|b| char::from(b).to_string()).collect();
        strings.extend((0u8..=0x7F).map(|b| format!("ab{}cdefghij", char::from(b))));
        strings.extend(["é ü", "\u{1F600}x", "\u{E000}", "", "plain"].map(str::to_owned));
        for text in strings {
            let value = serde_json::json!({ "k": text, "a": [text.clone(), 1] });
            assert_eq!(
                fnv1a64(&value),
                Fnv1a64::hash(canonical_json(&value).as_bytes()),
                "{text:?}"
            );
            let mut byte_wise = Fnv1a64::new();
            assert_eq!(
                byte_wise.write_unescaped(text.as_bytes()),
                !write::needs_escape(text.as_bytes())
            );
        }
    }

    #[test]
    fn sha256_matches_the_published_test_vector() {
        let digest = Canonical::of(&json!("abc")).sha256().to_string();
        // sha256("\"abc\"")
        assert_eq!(digest.len(), 64);
        assert_eq!(
            Sha256Digest(Sha256::digest(b"abc").into()).to_string(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(Sha256Digest::of(&json!("abc")).to_string(), digest);
    }

    #[test]
    fn measuring_into_a_sink_passes_on_nothing_past_the_bound() {
        let mut seen: Vec<u8> = Vec::new();
        let big = serde_json::json!({"s": "x".repeat(1_000_000)});
        assert_eq!(
            write::measure_into(&big, &mut seen, 64, 1_000),
            Measure::TooLarge
        );
        assert_eq!(seen.len(), 1_000);
        let small = serde_json::json!({"a": [1, "b", null]});
        let mut all: Vec<u8> = Vec::new();
        assert_eq!(
            write::measure_into(&small, &mut all, 64, 1_000),
            Measure::Len(all.len())
        );
        assert_eq!(all, canonical_json(&small).into_bytes());
    }
}
