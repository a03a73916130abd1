//! Digests of generated text: SHA-256 where review compares digests for
//! texts, FNV-1a where a hash only tells generated items apart.

/// The SHA-256 of `text`, in lowercase hex: a digest that stands for the
/// text where review compares digests, not texts (gated capabilities).
pub(crate) fn sha256_hex(text: &str) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(text.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// The FNV-1a 64 hash of `text`: what tells generated items apart (test
/// names); never a digest review relies on.
pub(crate) fn fnv64(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}
