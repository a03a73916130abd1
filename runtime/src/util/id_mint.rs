//! Id minting: `srf_…`, `reg_…`, `cnf_…`, `inv_…`.
//!
//! Every random part comes from the operating system's CSPRNG, drawn 256
//! bytes at a time into a per-thread pool so minting an id costs a copy,
//! not a system call. Nothing is derived from a seed and a counter: seeing
//! any number of ids tells nothing about the next one (a confirmation id of
//! another consumer cannot be guessed).

use std::hash::{BuildHasher, RandomState};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Bytes drawn from the operating system per refill.
const POOL_BYTES: usize = 256;

/// Base62 characters of a registry's prefix in its registration ids.
const PREFIX_CHARS: usize = 6;
/// Base62 characters of the random part of a registration id.
const REGISTRATION_RANDOM_CHARS: usize = 10;
/// Base62 characters of the keyed check closing a registration id.
const TAG_CHARS: usize = 4;

/// The length of a registration id.
const REGISTRATION_ID_LEN: usize = 4 + PREFIX_CHARS + REGISTRATION_RANDOM_CHARS + TAG_CHARS;

/// Fills `out` with base62 digits of `value`, least significant first (as
/// `push_base62` writes them).
fn fill_base62(out: &mut [u8], mut value: u64) {
    for slot in out {
        let index = usize::try_from(value % 62).unwrap_or(0);
        *slot = BASE62.get(index).copied().unwrap_or(b'0');
        value /= 62;
    }
}

/// The value of base62 digits written by [`fill_base62`] (least
/// significant first); `None` if a byte is not a base62 digit or the value
/// overflows.
fn read_base62(digits: &[u8]) -> Option<u64> {
    digits.iter().rev().try_fold(0u64, |value, &digit| {
        let index = BASE62.iter().position(|&candidate| candidate == digit)?;
        value
            .checked_mul(62)?
            .checked_add(u64::try_from(index).ok()?)
    })
}

/// 62 to the power of the random part's length: the random part encodes a
/// draw reduced below it, so reading the part back gives the value the
/// check was computed over.
const REGISTRATION_RANDOM_SPAN: u64 = 62u64.pow(REGISTRATION_RANDOM_CHARS as u32);

/// Appends `digits` (at most 11, a u64's worth) base62 digits of `value`.
fn push_base62(out: &mut String, value: u64, digits: usize) {
    let mut buffer = [b'0'; 11];
    let written = buffer.get_mut(..digits.min(11)).unwrap_or_default();
    fill_base62(written, value);
    out.extend(written.iter().map(|&digit| char::from(digit)));
}

/// What precedes the counter in a minted invocation id: `inv_`, the
/// registry's prefix and `_`.
const INVOCATION_HEAD: usize = 4 + PREFIX_CHARS + 1;
/// The longest minted invocation id: the head and 20 digits.
const INVOCATION_ID_MAX: usize = INVOCATION_HEAD + 20;

/// Random bytes from the operating system, handed out eight at a time.
struct Pool {
    bytes: [u8; POOL_BYTES],
    next: usize,
}

thread_local! {
    /// One pool per thread: minting takes no lock (registrations minted on
    /// many threads at once do not queue for one), and a refill is one
    /// system call per 32 draws of that thread.
    static POOL: std::cell::RefCell<Pool> = const {
        std::cell::RefCell::new(Pool {
            bytes: [0; POOL_BYTES],
            next: POOL_BYTES,
        })
    };
}

impl Pool {
    fn refill(&mut self) {
        if getrandom::fill(&mut self.bytes).is_err() {
            // No OS randomness (a sandbox without getrandom): SipHash under
            // the standard library's per-process random keys still gives
            // values an observer cannot predict from earlier ones.
            static FALLBACK: AtomicU64 = AtomicU64::new(0);
            tracing::warn!("the operating system's random source failed; ids use a keyed fallback");
            let keys = RandomState::new();
            for chunk in self.bytes.chunks_mut(8) {
                let n = FALLBACK.fetch_add(1, Ordering::Relaxed);
                let word = keys.hash_one((n, crate::util::time::SystemTime::now()));
                for (byte, value) in chunk.iter_mut().zip(word.to_le_bytes()) {
                    *byte = value;
                }
            }
        }
        self.next = 0;
    }

    fn u64(&mut self) -> u64 {
        let end = self.next.saturating_add(8);
        let word = match self.bytes.get(self.next..end) {
            Some(word) => word,
            None => {
                self.refill();
                self.bytes.get(0..8).unwrap_or(&[0; 8])
            }
        };
        let mut value = [0; 8];
        value.copy_from_slice(word);
        self.next = if end > POOL_BYTES { 8 } else { end };
        // Spent bytes are not kept around in memory.
        if let Some(spent) = self.bytes.get_mut(self.next - 8..self.next) {
            spent.fill(0);
        }
        u64::from_le_bytes(value)
    }
}

/// `N` random words from this thread's pool (from a pool of their own
/// while the thread is being torn down and its pool is gone).
fn random<const N: usize>() -> [u64; N] {
    let draw = |pool: &mut Pool| std::array::from_fn(|_| pool.u64());
    POOL.try_with(|pool| pool.try_borrow_mut().ok().map(|mut pool| draw(&mut pool)))
        .ok()
        .flatten()
        .unwrap_or_else(|| {
            draw(&mut Pool {
                bytes: [0; POOL_BYTES],
                next: POOL_BYTES,
            })
        })
}

/// Mints the ids of one registry. Its keys are drawn on first use, so
/// creating a registry costs no random draw.
#[derive(Debug, Default)]
pub(crate) struct IdMint {
    keys: OnceLock<Keys>,
    counter: AtomicU64,
}

/// The random keys of one registry.
#[derive(Debug)]
struct Keys {
    /// This registry's random prefix in its registration ids (base62).
    prefix: [u8; PREFIX_CHARS],
    /// The key of the check that closes each registration id: an id
    /// carrying the prefix but not a valid check was not minted here.
    tag_key: RandomState,
    tag_secret: u64,
    /// `inv_<prefix>_`, the head of minted invocation ids.
    invocation_head: [u8; INVOCATION_HEAD],
}

impl Keys {
    fn new() -> Keys {
        let [prefix_bits, tag_secret] = random::<2>();
        let mut prefix = [b'0'; PREFIX_CHARS];
        fill_base62(&mut prefix, prefix_bits);
        let mut invocation_head = [b'_'; INVOCATION_HEAD];
        for (slot, &byte) in invocation_head
            .iter_mut()
            .zip(b"inv_".iter().chain(prefix.iter()))
        {
            *slot = byte;
        }
        Keys {
            prefix,
            tag_key: RandomState::new(),
            tag_secret,
            invocation_head,
        }
    }

    fn prefix(&self) -> &str {
        // Base62 digits are ASCII.
        std::str::from_utf8(&self.prefix).unwrap_or("")
    }
}

/// `srf_` + 22 base62 characters (128 random bits): a registry's surface id.
pub(crate) fn surface_id() -> String {
    let [high, low] = random::<2>();
    let mut id = String::with_capacity(26);
    id.push_str("srf_");
    push_base62(&mut id, high, 11);
    push_base62(&mut id, low, 11);
    id
}

impl IdMint {
    pub(crate) fn new() -> IdMint {
        IdMint::default()
    }

    fn keys(&self) -> &Keys {
        self.keys.get_or_init(Keys::new)
    }

    /// The keyed check over a registration id's random value: SipHash
    /// under this registry's random keys, over two words (the random value
    /// read back as a number, not its text: two compressions instead of
    /// four).
    fn tag(&self, random: u64) -> u64 {
        let keys = self.keys();
        keys.tag_key.hash_one((keys.tag_secret, random))
    }

    /// A registration id as the tests read it.
    #[cfg(test)]
    pub(crate) fn registration_id(&self) -> String {
        self.with_registration_id(|id| id.to_owned())
    }

    /// `reg_<registry prefix><random><check>`: recognizably from this
    /// registry (another registry has another prefix and check key). One
    /// allocation.
    pub(crate) fn registration_id_arc(&self) -> std::sync::Arc<str> {
        self.with_registration_id(|id| std::sync::Arc::from(id))
    }

    fn with_registration_id<T>(&self, make: impl FnOnce(&str) -> T) -> T {
        let [bits] = random::<1>();
        // Below 62^10 (about 2^59.5): exactly what ten digits hold.
        let value = bits % REGISTRATION_RANDOM_SPAN;
        let keys = self.keys();
        let mut buffer = [b'0'; REGISTRATION_ID_LEN];
        let (head, rest) = buffer.split_at_mut(4 + PREFIX_CHARS);
        let (random_part, tag_part) = rest.split_at_mut(REGISTRATION_RANDOM_CHARS);
        for (slot, &byte) in head
            .iter_mut()
            .zip(b"reg_".iter().chain(keys.prefix.iter()))
        {
            *slot = byte;
        }
        fill_base62(random_part, value);
        fill_base62(tag_part, self.tag(value));
        make(std::str::from_utf8(&buffer).unwrap_or("reg_"))
    }

    /// Whether `registration_id` was minted by this registry: its prefix
    /// and a valid check over its random part.
    pub(crate) fn minted_here(&self, registration_id: &str) -> bool {
        let Some(rest) = registration_id
            .strip_prefix("reg_")
            .and_then(|rest| rest.strip_prefix(self.keys().prefix()))
        else {
            return false;
        };
        if rest.len() != REGISTRATION_RANDOM_CHARS + TAG_CHARS || !rest.is_ascii() {
            return false;
        }
        let (random, tag) = rest.as_bytes().split_at(REGISTRATION_RANDOM_CHARS);
        // Ten digits hold less than 62^10 < 2^64: no overflow.
        let Some(value) = read_base62(random) else {
            return false;
        };
        let mut expected = [b'0'; TAG_CHARS];
        fill_base62(&mut expected, self.tag(value));
        expected == tag
    }

    /// `cnf_` + 22 base62 characters (128 random bits).
    pub(crate) fn confirmation_id(&self) -> String {
        let [high, low] = random::<2>();
        let mut id = String::with_capacity(26);
        id.push_str("cnf_");
        push_base62(&mut id, high, 11);
        push_base62(&mut id, low, 11);
        id
    }

    /// `inv_<registry prefix>_<counter>` for invocations that came without
    /// an id.
    pub(crate) fn invocation_id(&self) -> String {
        self.with_invocation_id(|id| id.to_owned())
    }

    /// [`invocation_id`](Self::invocation_id) as the pipeline keeps it:
    /// one allocation.
    pub(crate) fn invocation_id_arc(&self) -> std::sync::Arc<str> {
        self.with_invocation_id(|id| std::sync::Arc::from(id))
    }

    fn with_invocation_id<T>(&self, make: impl FnOnce(&str) -> T) -> T {
        // Unique, not secret: a minted id is never a dedupe key (calls
        // without an id are not deduplicated) and dedupe is per consumer,
        // so the registry's random prefix and a counter suffice — no
        // random draw on the hot path. Written on the stack, digits by hand.
        let n = self.counter.fetch_add(1, Ordering::Relaxed) + 1;
        let mut buffer = [0u8; INVOCATION_ID_MAX];
        let (head, digits) = buffer.split_at_mut(INVOCATION_HEAD);
        head.copy_from_slice(&self.keys().invocation_head);
        let mut len = 0;
        let mut rest = n;
        // Least significant first, then reversed in place.
        for slot in digits.iter_mut() {
            *slot = b'0' + u8::try_from(rest % 10).unwrap_or(0);
            len += 1;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        if let Some(written) = digits.get_mut(..len) {
            written.reverse();
        }
        // ASCII throughout.
        let id = buffer
            .get(..INVOCATION_HEAD + len)
            .and_then(|id| std::str::from_utf8(id).ok())
            .unwrap_or("inv_");
        make(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_have_their_shapes() {
        let mint = IdMint::new();
        let surface = surface_id();
        assert_eq!(surface.len(), 26);
        assert!(surface.starts_with("srf_"));
        assert!(surface[4..].bytes().all(|b| b.is_ascii_alphanumeric()));
        let registration = mint.registration_id();
        assert_eq!(registration.len(), 24);
        assert!(registration.starts_with("reg_"));
        assert!(mint.minted_here(&registration));
        assert!(!IdMint::new().minted_here(&registration));
        assert!(!mint.minted_here("reg_x"));
        let confirmation = mint.confirmation_id();
        assert_eq!(confirmation.len(), 26);
        assert!(confirmation.starts_with("cnf_"));
        let invocation = mint.invocation_id();
        assert!(
            invocation.starts_with("inv_") && invocation.ends_with("_1"),
            "{invocation}"
        );
        assert_ne!(
            IdMint::new().invocation_id(),
            invocation,
            "registries never share one"
        );
        let head = &invocation[..invocation.len() - 1];
        assert_eq!(head.len(), 4 + PREFIX_CHARS + 1);
        for n in 2..=1234 {
            assert_eq!(mint.invocation_id(), format!("{head}{n}"));
        }
        assert_eq!(&*mint.invocation_id_arc(), format!("{head}1235"));
    }

    #[test]
    fn a_forged_registration_id_with_the_prefix_is_not_minted_here() {
        let mint = IdMint::new();
        let real = mint.registration_id();
        // Same prefix and random part, another check.
        let mut forged = real[..real.len() - 1].to_owned();
        forged.push(if real.ends_with('0') { '1' } else { '0' });
        assert!(!mint.minted_here(&forged));
        // Same prefix, another random part, the real check.
        let mut swapped = real.clone();
        swapped.replace_range(10..11, if &real[10..11] == "a" { "b" } else { "a" });
        assert!(!mint.minted_here(&swapped));
        assert!(!mint.minted_here(&format!("{real}0")));
        assert!(!mint.minted_here("reg_ééééééééééééé"));
        // The prefix, ten characters outside base62, four more.
        let prefix = &real[..4 + PREFIX_CHARS];
        assert!(!mint.minted_here(&format!("{prefix}----------0000")));
        assert!(!mint.minted_here(&format!(
            "{prefix}{}",
            &real[4 + PREFIX_CHARS..real.len() - 1]
        )));
    }

    #[test]
    fn base62_reads_back_what_it_wrote() {
        for value in [
            0,
            1,
            61,
            62,
            3_843,
            REGISTRATION_RANDOM_SPAN - 1,
            123_456_789_012_345,
        ] {
            let mut digits = [b'0'; REGISTRATION_RANDOM_CHARS];
            fill_base62(&mut digits, value);
            assert_eq!(read_base62(&digits), Some(value));
        }
        assert_eq!(read_base62(b"zzzzzzzzzzzz"), None, "beyond a u64");
        assert_eq!(read_base62(b"0a!"), None);
        let mint = IdMint::new();
        for _ in 0..1_000 {
            assert!(mint.minted_here(&mint.registration_id()));
        }
    }

    #[test]
    fn registries_never_share_a_prefix() {
        let prefixes: HashSet<String> = (0..2_000)
            .map(|_| IdMint::new().keys().prefix().to_owned())
            .collect();
        assert_eq!(prefixes.len(), 2_000);
    }

    /// Bits that differ between two base62 ids, position by position.
    fn differing_bits(a: &str, b: &str) -> u32 {
        a.bytes()
            .zip(b.bytes())
            .map(|(x, y)| (x ^ y).count_ones())
            .sum()
    }

    #[test]
    fn consecutive_ids_are_distinct_and_share_no_structure() {
        let mint = IdMint::new();
        let ids: Vec<String> = (0..5_000).map(|_| mint.confirmation_id()).collect();
        let distinct: HashSet<&String> = ids.iter().collect();
        assert_eq!(distinct.len(), ids.len());
        // Neighbours differ in most of their characters: no counter shows through.
        for pair in ids.windows(2) {
            let same = pair[0]
                .bytes()
                .zip(pair[1].bytes())
                .skip(4)
                .filter(|(a, b)| a == b)
                .count();
            assert!(same <= 8, "{} then {}", pair[0], pair[1]);
            assert!(differing_bits(&pair[0][4..], &pair[1][4..]) >= 20);
        }
        // Every position takes many values (a counter would pin most); the
        // last digit of each 64-bit half spans only 22 values.
        for position in 4..26 {
            let values: HashSet<u8> = ids.iter().map(|id| id.as_bytes()[position]).collect();
            let floor = if position == 14 || position == 25 {
                20
            } else {
                60
            };
            assert!(
                values.len() >= floor,
                "position {position}: {}",
                values.len()
            );
        }
    }
}
