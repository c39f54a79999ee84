//! A fast, non-cryptographic hasher (the "Fx" hash used inside rustc) for small in-process
//! maps keyed by topic names on the put and dispatch paths, where SipHash's DoS resistance
//! buys nothing: keys come from the broker's own topic table, and cost is per message.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

/// The Fx hasher.
#[derive(Default, Clone, Copy)]
pub struct FxHasher {
    hash: u64,
}

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().unwrap_or([0; 8])));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(b));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

/// A `HashMap` with the Fx hasher.
pub type FxHashMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_works_and_hash_depends_on_every_byte() {
        let mut m: FxHashMap<String, i32> = FxHashMap::default();
        m.insert("TopicA".into(), 1);
        m.insert("TopicB".into(), 2);
        assert_eq!(m.get("TopicA"), Some(&1));
        assert_eq!(m.get("TopicB"), Some(&2));
        let h = |s: &str| {
            let mut x = FxHasher::default();
            x.write(s.as_bytes());
            x.finish()
        };
        assert_ne!(h("abcdefghi"), h("abcdefghj"));
    }
}
