//! A call's reach in its dedupe record: what decides which capabilities a
//! call may address besides its request — the scope floor, the verb's
//! kinds and the consumer's grants — folded into the fingerprint a dedupe
//! record compares.
//!
//! The dedupe key is (consumer key, invocation id) and the request
//! fingerprint covers the request's fields: the canonical JSON of the
//! specification's `fnv1a64(canonicalJson({…}))` (which
//! [`Invocation::fingerprint`] returns), hashed with SipHash under this
//! process's random key instead of FNV-1a, which whoever writes the input
//! can steer (two inputs with one FNV-1a hash are found in seconds: the
//! second would take the first's result). Phase 1 answers a repeated id before phase 2 resolves the
//! target, so without this a call narrowed by a scope floor or a read-only
//! verb, or made with fewer grants, could take the cached result — or join
//! the running twin — of the same request made through a wider reach:
//! a capability outside its floor answered instead of being not found.
//! With it, the same id and request under another reach is a conflict
//! (`INVOCATION_CONFLICT`, fail closed, the stored record untouched), as
//! any other reuse of an id is — whether or not the target exists, so a
//! hidden capability still answers as a nonexistent one. A call with the
//! full reach (no floor, every kind, no grants) compares the request
//! fingerprint unchanged.
//!
//! The host context is not part of it: the host sets it, not the caller,
//! and it does not name what the call addresses.
//!
//! [`Invocation::fingerprint`]: crate::invocation::Invocation::fingerprint

use std::hash::BuildHasher;
use std::sync::OnceLock;

use crate::invocation::Kinds;

/// The process's key for folding reaches: random, so no caller can choose
/// a request whose fingerprint, folded with a narrow reach, lands on the
/// fingerprint of a call made with another reach (FNV-1a alone can be
/// steered by whoever writes the input).
fn key() -> &'static std::hash::RandomState {
    static KEY: OnceLock<std::hash::RandomState> = OnceLock::new();
    KEY.get_or_init(std::hash::RandomState::new)
}

/// A hasher under the process's key: what the request fingerprint a
/// dedupe record compares is hashed with.
pub(crate) fn hasher() -> std::hash::DefaultHasher {
    key().build_hasher()
}

/// The fingerprint a dedupe record of this call compares: `request`'s
/// when the call has the full reach, otherwise a keyed hash (SipHash under
/// a random key) of `request` and the reach. The scope and the grants are
/// sets: their order and repeats do not matter (a host that rebuilds a
/// consumer with the same grants in another order is the same reach).
pub(crate) fn of_call(request: u64, scope: &[String], kinds: Kinds, grants: &[String]) -> u64 {
    if scope.is_empty() && kinds == Kinds::All && grants.is_empty() {
        return request;
    }
    // A slice of `String`s and one of `&str`s hash alike (each element as
    // its text): a list already in set form (sorted, no repeats, as hosts
    // usually build it) is hashed as it is, without a copy.
    fn set(parts: &[String]) -> std::borrow::Cow<'_, [String]> {
        if parts.is_sorted_by(|a, b| a < b) {
            return std::borrow::Cow::Borrowed(parts);
        }
        let mut set = parts.to_vec();
        set.sort_unstable();
        set.dedup();
        std::borrow::Cow::Owned(set)
    }
    let kinds = match kinds {
        Kinds::All => 0u8,
        Kinds::Observations => 1,
        Kinds::Operations => 2,
    };
    // Slices hash their length and strings a terminator: no two reaches
    // feed the same sequence.
    key().hash_one((request, kinds, &*set(scope), &*set(grants)))
}

/// The fingerprint a shared store's record of this call compares: the
/// request's SHA-256 digest and the reach, hashed with SHA-256 (no key, so
/// every replica computes the same; the request and the reach are fed
/// whole, so no request can be chosen to stand for another).
pub(crate) fn shared(
    request: &[u8; 32],
    scope: &[String],
    kinds: Kinds,
    grants: &[String],
) -> crate::store::Fingerprint {
    use sha2::Digest;
    fn set(parts: &[String]) -> Vec<&str> {
        let mut set: Vec<&str> = parts.iter().map(String::as_str).collect();
        set.sort_unstable();
        set.dedup();
        set
    }
    let mut digest = sha2::Sha256::new();
    digest.update(request);
    digest.update([match kinds {
        Kinds::All => 0u8,
        Kinds::Observations => 1,
        Kinds::Operations => 2,
    }]);
    for parts in [set(scope), set(grants)] {
        digest.update((parts.len() as u64).to_be_bytes());
        for part in parts {
            // Length-prefixed: no two sequences of parts hash alike.
            digest.update((part.len() as u64).to_be_bytes());
            digest.update(part.as_bytes());
        }
    }
    let digest = digest.finalize();
    let mut head = [0u8; 16];
    for (slot, byte) in head.iter_mut().zip(digest.iter()) {
        *slot = *byte;
    }
    crate::store::Fingerprint::from_bytes(head)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(parts: &[&str]) -> Vec<String> {
        parts.iter().map(|part| (*part).to_owned()).collect()
    }

    #[test]
    fn the_full_reach_keeps_the_request_fingerprint() {
        assert_eq!(of_call(42, &[], Kinds::All, &[]), 42);
    }

    #[test]
    fn every_narrowing_changes_it_and_none_collide() {
        let reaches = [
            (strings(&["devices"]), Kinds::All, strings(&[])),
            (strings(&["device", "s"]), Kinds::All, strings(&[])),
            (strings(&["devices"]), Kinds::Observations, strings(&[])),
            (strings(&[]), Kinds::Observations, strings(&[])),
            (strings(&[]), Kinds::Operations, strings(&[])),
            (strings(&[]), Kinds::All, strings(&["devices"])),
            (strings(&[]), Kinds::All, strings(&["admin"])),
            (strings(&["devices"]), Kinds::All, strings(&["admin"])),
            (strings(&["admin"]), Kinds::All, strings(&["devices"])),
        ];
        let mut seen = std::collections::HashSet::new();
        assert!(seen.insert(42));
        for (scope, kinds, grants) in &reaches {
            assert!(
                seen.insert(of_call(42, scope, *kinds, grants)),
                "{scope:?} {kinds:?} {grants:?}"
            );
        }
        assert_ne!(
            of_call(42, &strings(&["devices"]), Kinds::All, &[]),
            of_call(43, &strings(&["devices"]), Kinds::All, &[]),
        );
    }

    #[test]
    fn a_list_in_set_form_hashes_as_its_sorted_copy() {
        assert_eq!(
            of_call(7, &strings(&["a", "b"]), Kinds::All, &strings(&["x"])),
            of_call(
                7,
                &strings(&["b", "a", "b"]),
                Kinds::All,
                &strings(&["x", "x"])
            ),
        );
    }

    #[test]
    fn scope_and_grants_are_sets() {
        assert_eq!(
            of_call(
                7,
                &strings(&["a", "b", "a"]),
                Kinds::All,
                &strings(&["x", "y"])
            ),
            of_call(
                7,
                &strings(&["b", "a"]),
                Kinds::All,
                &strings(&["y", "x", "y"])
            ),
        );
    }
}
