//! Id minting: `srf_…`, `reg_…`, `cnf_…`, `inv_…`.
//!
//! One random seed per registry (from the operating system) feeds a
//! splitmix64 sequence, so ids are unpredictable without costing a system
//! call each.

use std::sync::atomic::{AtomicU64, Ordering};

const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

fn splitmix64(state: u64) -> u64 {
    let mut z = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn push_base62(out: &mut String, mut value: u64, digits: usize) {
    for _ in 0..digits {
        let index = usize::try_from(value % 62).unwrap_or(0);
        out.push(char::from(BASE62.get(index).copied().unwrap_or(b'0')));
        value /= 62;
    }
}

fn push_decimal(out: &mut String, value: u64) {
    let mut digits = [0u8; 20];
    let mut n = value;
    let mut len = 0;
    loop {
        if let Some(slot) = digits.get_mut(len) {
            *slot = b'0' + u8::try_from(n % 10).unwrap_or(0);
        }
        len += 1;
        n /= 10;
        if n == 0 || len == digits.len() {
            break;
        }
    }
    for digit in digits.iter().take(len).rev() {
        out.push(char::from(*digit));
    }
}

/// Mints the ids of one registry.
#[derive(Debug)]
pub(crate) struct IdMint {
    seed: u64,
    nonce: String,
    counter: AtomicU64,
}

impl IdMint {
    pub(crate) fn new() -> IdMint {
        // One operating-system seed per process; each registry derives its
        // own from it and a counter.
        static PROCESS_SEED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
        static REGISTRIES: AtomicU64 = AtomicU64::new(0);
        let process = *PROCESS_SEED.get_or_init(|| {
            getrandom::u64().unwrap_or_else(|_| {
                // No OS randomness: fall back to a per-process hash seed.
                use std::hash::{BuildHasher, RandomState};
                RandomState::new().hash_one(std::time::SystemTime::now())
            })
        });
        let nth = REGISTRIES.fetch_add(1, Ordering::Relaxed);
        let seed = splitmix64(process ^ splitmix64(nth));
        let mut nonce = String::with_capacity(6);
        push_base62(&mut nonce, splitmix64(seed ^ 0x5EED), 6);
        IdMint {
            seed,
            nonce,
            counter: AtomicU64::new(0),
        }
    }

    fn next(&self) -> (u64, u64) {
        let n = self.counter.fetch_add(1, Ordering::Relaxed) + 1;
        (
            n,
            splitmix64(
                self.seed
                    .wrapping_add(n.wrapping_mul(0xA24B_AED4_963E_E407)),
            ),
        )
    }

    /// `srf_` + 22 base62 characters.
    pub(crate) fn surface_id(&self) -> String {
        let mut id = String::with_capacity(26);
        id.push_str("srf_");
        push_base62(&mut id, splitmix64(self.seed), 11);
        push_base62(&mut id, splitmix64(self.seed.rotate_left(17) ^ 0xA5A5), 11);
        id
    }

    /// `reg_<counter>_<registry nonce><random>`: monotonic, and recognizably
    /// from this registry (another registry's ids carry another nonce).
    pub(crate) fn registration_id(&self) -> String {
        let (n, random) = self.next();
        let mut id = String::with_capacity(40);
        id.push_str("reg_");
        push_decimal(&mut id, n);
        id.push('_');
        id.push_str(&self.nonce);
        push_base62(&mut id, random, 4);
        id
    }

    /// Whether `registration_id` was minted by this registry.
    pub(crate) fn minted_here(&self, registration_id: &str) -> bool {
        registration_id
            .strip_prefix("reg_")
            .and_then(|rest| rest.split_once('_'))
            .is_some_and(|(_, tail)| tail.starts_with(&self.nonce))
    }

    /// `cnf_` + 16 base62 characters.
    pub(crate) fn confirmation_id(&self) -> String {
        let (_, random) = self.next();
        let mut id = String::with_capacity(20);
        id.push_str("cnf_");
        push_base62(&mut id, random, 11);
        push_base62(&mut id, splitmix64(random), 5);
        id
    }

    /// `inv_<counter>_<random>` for invocations that came without an id.
    pub(crate) fn invocation_id(&self) -> String {
        let (n, random) = self.next();
        let mut id = String::with_capacity(32);
        id.push_str("inv_");
        push_decimal(&mut id, n);
        id.push('_');
        push_base62(&mut id, random, 6);
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_have_their_shapes() {
        let mint = IdMint::new();
        let surface = mint.surface_id();
        assert_eq!(surface.len(), 26);
        assert!(surface.starts_with("srf_"));
        assert!(surface[4..].bytes().all(|b| b.is_ascii_alphanumeric()));
        let first = mint.registration_id();
        let second = mint.registration_id();
        assert!(first.starts_with("reg_1_") && second.starts_with("reg_2_"));
        assert!(mint.minted_here(&first));
        assert!(!IdMint::new().minted_here(&first));
        assert!(!mint.minted_here("reg_x"));
        assert_ne!(mint.confirmation_id(), mint.confirmation_id());
    }
}
