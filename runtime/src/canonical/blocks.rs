//! Blocked hashing: a [`Sink`] that gathers the canonical writer's many
//! short writes (a quote, a key, a comma) into blocks before a hasher takes
//! them, for hashers whose every call costs more than a byte copy (SipHash).

use std::hash::Hasher;

use super::Sink;

/// Bytes gathered before they go to the hasher.
const BLOCK: usize = 128;

/// A hasher behind a block buffer: the hash reads one stream, so where the
/// stream is cut into calls does not change it.
pub(crate) struct Blocked<H> {
    hasher: H,
    block: [u8; BLOCK],
    len: usize,
}

impl<H: Hasher> Blocked<H> {
    /// `hasher` with nothing written yet.
    pub(crate) fn new(hasher: H) -> Self {
        Blocked {
            hasher,
            block: [0; BLOCK],
            len: 0,
        }
    }

    /// Hands what the block holds to the hasher.
    fn flush(&mut self) {
        self.hasher
            .write(self.block.get(..self.len).unwrap_or_default());
        self.len = 0;
    }

    /// The hash of everything written.
    pub(crate) fn finish(mut self) -> u64 {
        self.flush();
        self.hasher.finish()
    }
}

impl<H: Hasher> Sink for Blocked<H> {
    fn write_byte(&mut self, byte: u8) {
        if self.len == BLOCK {
            self.flush();
        }
        if let Some(slot) = self.block.get_mut(self.len) {
            *slot = byte;
            self.len += 1;
        }
    }

    fn write(&mut self, bytes: &[u8]) {
        if let Some(room) = self.block.get_mut(self.len..self.len + bytes.len()) {
            room.copy_from_slice(bytes);
            self.len += bytes.len();
        } else {
            self.flush();
            self.hasher.write(bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::hash::{BuildHasher, Hasher};

    use super::*;

    #[test]
    fn the_same_stream_cut_anywhere_hashes_alike() {
        let key = std::hash::RandomState::new();
        let stream: Vec<u8> = (0..1000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut whole = key.build_hasher();
        Hasher::write(&mut whole, &stream);
        let whole = whole.finish();
        for cut in [1, 3, 64, 127, 128, 129, 300] {
            let mut blocked = Blocked::new(key.build_hasher());
            for (i, chunk) in stream.chunks(cut).enumerate() {
                if let (0, [byte]) = (i % 2, chunk) {
                    blocked.write_byte(*byte);
                } else {
                    blocked.write(chunk);
                }
            }
            assert_eq!(blocked.finish(), whole, "cut every {cut} bytes");
        }
    }
}
