//! The shared store's key space: a surface's namespace and the structured
//! keys under it (dedupe records, buckets, the audit log), each part length-prefixed so no two spellings collide.

use std::fmt;
use std::fmt::Write as _;
use std::sync::Arc;

/// The longest namespace, in bytes.
pub const MAX_NAMESPACE_LEN: usize = 64;

/// The prefix every key of one surface carries in the shared store:
/// `as:{namespace}:`. One namespace per surface: the replicas of one
/// surface share it, two surfaces on one store never do.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Namespace(Arc<str>);

/// A namespace outside `[A-Za-z0-9._-]{1,64}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidNamespace;

impl fmt::Display for InvalidNamespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a namespace is 1 to 64 of A-Z, a-z, 0-9, '.', '_' and '-'")
    }
}

impl std::error::Error for InvalidNamespace {}

impl Namespace {
    /// The namespace `name`: 1 to 64 of `A-Z a-z 0-9 . _ -`.
    ///
    /// ```
    /// use agent_surface::store::Namespace;
    /// assert!(Namespace::new("devices").is_ok());
    /// assert!(Namespace::new("devices:admin").is_err());
    /// ```
    pub fn new(name: &str) -> Result<Namespace, InvalidNamespace> {
        let valid = !name.is_empty()
            && name.len() <= MAX_NAMESPACE_LEN
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if valid {
            Ok(Namespace(Arc::from(name)))
        } else {
            Err(InvalidNamespace)
        }
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The key of a dedupe record: `(consumer key, invocation id)`.
    pub fn dedupe(&self, consumer: &str, invocation_id: &str) -> String {
        self.key("dd", &[consumer, invocation_id])
    }

    /// The key of the set of dedupe records one principal holds (its
    /// quota).
    pub fn quota(&self, principal: &str) -> String {
        self.key("dq", &[principal])
    }

    /// The key of a rate-limit bucket: the policy's parameters, the
    /// principal and the capability.
    pub fn bucket(&self, policy: &str, principal: &str, capability_id: &str) -> String {
        self.key("rl", &[policy, principal, capability_id])
    }

    /// The key of a pending confirmation, as its replica offers it.
    pub fn confirmation(&self, confirmation_id: &str) -> String {
        self.key("cf", &[confirmation_id])
    }

    /// The key of the person's answer to a confirmation given on another
    /// replica than the one holding it.
    pub fn answer(&self, confirmation_id: &str) -> String {
        self.key("cfa", &[confirmation_id])
    }

    /// The key of the holding replica's verdict on the answer `nonce`.
    pub fn verdict(&self, confirmation_id: &str, nonce: &str) -> String {
        self.key("cfv", &[confirmation_id, nonce])
    }

    /// The key of one open confirmation's place in its principal's share
    /// (`slot`: a random name, the request's own).
    pub fn confirmation_slot(&self, slot: &str) -> String {
        self.key("cs", &[slot])
    }

    /// The key of the set of places one principal's open confirmations
    /// hold, every replica's (its share of the pending lists).
    pub fn confirmation_share(&self, principal: &str) -> String {
        self.key("cq", &[principal])
    }

    /// The key of an approval, as the replica holding it publishes it for
    /// the others to redeem.
    pub fn approval(&self, confirmation_id: &str) -> String {
        self.key("cfe", &[confirmation_id])
    }

    /// The key of an approval's single use, claimed by the replica that
    /// redeems it (whichever it is).
    pub fn approval_use(&self, confirmation_id: &str) -> String {
        self.key("cfu", &[confirmation_id])
    }

    /// The key of an adapter's round asking about a pending confirmation
    /// (an MCP input-required round): it lives while the request is
    /// pending (the holding replica's relay removes it).
    pub fn round(&self, confirmation_id: &str) -> String {
        self.key("round", &[confirmation_id])
    }

    /// The key by which a replica that used another's approval tells the
    /// holder so.
    pub fn approval_used(&self, confirmation_id: &str) -> String {
        self.key("cfc", &[confirmation_id])
    }

    /// The key of the set of pending confirmations, every replica's.
    pub fn confirmations(&self) -> String {
        self.key("cf-open", &[])
    }

    /// The key of the surface's audit log.
    pub fn audit(&self) -> String {
        self.key("audit", &[])
    }

    /// `as:{namespace}:{kind}` then each part as `:{len}:{part}`.
    fn key(&self, kind: &str, parts: &[&str]) -> String {
        let len = 4 + self.0.len() + kind.len() + parts.iter().map(|p| p.len() + 22).sum::<usize>();
        let mut key = String::with_capacity(len);
        key.push_str("as:");
        key.push_str(&self.0);
        key.push(':');
        key.push_str(kind);
        for part in parts {
            // Writing to a `String` cannot fail.
            let _ = write!(key, ":{}:{part}", part.len());
        }
        key
    }
}

impl fmt::Debug for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Namespace({})", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_length_prefixed_so_no_two_spellings_collide() {
        let ns = Namespace::new("devices").unwrap();
        assert_eq!(ns.dedupe("mcp:a", "1"), "as:devices:dd:5:mcp:a:1:1");
        assert_ne!(ns.dedupe("a:1", "2"), ns.dedupe("a", "1:2"));
        assert_ne!(ns.bucket("p", "a", "b:c"), ns.bucket("p", "a:b", "c"));
        assert_eq!(ns.audit(), "as:devices:audit");
    }

    #[test]
    fn a_namespace_is_short_and_plain() {
        assert!(Namespace::new("").is_err());
        assert!(Namespace::new(&"a".repeat(65)).is_err());
        assert!(Namespace::new("a b").is_err());
        assert!(Namespace::new("prod-eu.devices_1").is_ok());
    }
}
