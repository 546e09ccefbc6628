//! A compiled longest-prefix-match table for the packet path: a multibit
//! trie with a 16-bit first stride and 8-bit strides below (the layout of
//! DPDK's rte_fib6 "trie", with a smaller first level). IPv4 lookups take at
//! most 3 memory reads, IPv6 at most 15; a /48 takes 5.
//!
//! It is built from scratch by the control thread from the prefix list (the
//! RIB) and never changed afterwards: workers get it inside an immutable
//! snapshot. Building paints prefixes in ascending length order, so a longer
//! prefix always overwrites a shorter one and a chunk, once created, is
//! never painted over by a shorter prefix.

/// An entry: 0 = no route; CHUNK | i = child chunk i; otherwise value + 1.
const CHUNK: u32 = 1 << 31;
const ROOT_BITS: u32 = 16;
const STRIDE: u32 = 8;

#[derive(Debug, Clone)]
pub struct Lpm {
    root: Vec<u32>,
    chunks: Vec<[u32; 256]>,
    /// Key width in bits (32 or 128).
    width: u32,
}

impl Lpm {
    /// Build from `(key, prefix length, value)` with keys left-aligned in a
    /// u128 (an IPv4 address is `(a as u128) << 96`). Values must be < 2^31 - 1.
    pub fn build(width: u32, prefixes: &mut [(u128, u8, u32)]) -> Lpm {
        assert!(width == 32 || width == 128);
        prefixes.sort_by_key(|p| p.1);
        let mut t = Lpm { root: vec![0; 1 << ROOT_BITS], chunks: Vec::new(), width };
        for &(key, len, value) in prefixes.iter() {
            let len = u32::from(len).min(width);
            debug_assert!(value < CHUNK - 1);
            t.paint(key, len, value + 1);
        }
        t
    }

    fn paint(&mut self, key: u128, len: u32, v: u32) {
        let top = (key >> (128 - ROOT_BITS)) as usize;
        if len <= ROOT_BITS {
            let span = 1usize << (ROOT_BITS - len);
            let start = top & !(span - 1);
            for e in &mut self.root[start..start + span] {
                debug_assert!(*e & CHUNK == 0);
                *e = v;
            }
            return;
        }
        // Descend, creating chunks that inherit their parent's value.
        let mut slot: (Option<usize>, usize) = (None, top);
        let mut depth_bits = ROOT_BITS;
        loop {
            let e = match slot.0 {
                None => self.root[slot.1],
                Some(c) => self.chunks[c][slot.1],
            };
            let child = if e & CHUNK != 0 {
                (e & !CHUNK) as usize
            } else {
                let c = self.chunks.len();
                self.chunks.push([e; 256]);
                let ptr = CHUNK | c as u32;
                match slot.0 {
                    None => self.root[slot.1] = ptr,
                    Some(p) => self.chunks[p][slot.1] = ptr,
                }
                c
            };
            let shift = 128 - depth_bits - STRIDE;
            let byte = ((key >> shift) & 0xff) as usize;
            depth_bits += STRIDE;
            if len <= depth_bits {
                let span = 1usize << (depth_bits - len);
                let start = byte & !(span - 1);
                for e in &mut self.chunks[child][start..start + span] {
                    debug_assert!(*e & CHUNK == 0);
                    *e = v;
                }
                return;
            }
            slot = (Some(child), byte);
        }
    }

    /// The value of the longest prefix covering `key` (left-aligned).
    #[inline(always)]
    pub fn lookup(&self, key: u128) -> Option<u32> {
        let mut e = self.root[(key >> (128 - ROOT_BITS)) as usize];
        let mut shift = 128 - ROOT_BITS;
        while e & CHUNK != 0 {
            shift -= STRIDE;
            let c = &self.chunks[(e & !CHUNK) as usize];
            e = c[((key >> shift) & 0xff) as usize];
        }
        e.checked_sub(1)
    }

    /// Look up a burst of keys given as big-endian bytes (an IPv4 address in
    /// the first 4): `out[i]` = the value + 1 for `keys[i]`, 0 for no route.
    /// The trie is walked one level at a time across all keys, so the memory
    /// reads of different keys overlap instead of each waiting for the
    /// previous one.
    #[inline]
    pub fn lookup_batch(&self, keys: &[[u8; 16]], out: &mut [u32]) {
        let n = keys.len().min(out.len());
        let (keys, out) = (&keys[..n], &mut out[..n]);
        for (o, k) in out.iter_mut().zip(keys) {
            *o = self.root[usize::from(u16::from_be_bytes([k[0], k[1]]))];
        }
        let levels = ((self.width - ROOT_BITS) / STRIDE) as usize;
        for level in 0..levels {
            let byte = 2 + level;
            let mut more = false;
            for (o, k) in out.iter_mut().zip(keys) {
                if *o & CHUNK != 0 {
                    *o = self.chunks[(*o & !CHUNK) as usize][usize::from(k[byte])];
                    more = true;
                }
            }
            if !more {
                break;
            }
        }
    }

    #[inline(always)]
    pub fn lookup4(&self, a: u32) -> Option<u32> {
        self.lookup(u128::from(a) << 96)
    }

    /// Memory used, in bytes.
    pub fn memory(&self) -> usize {
        self.root.len() * 4 + self.chunks.len() * 1024
    }

    pub fn width(&self) -> u32 {
        self.width
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn naive(width: u32, prefixes: &[(u128, u8, u32)], key: u128) -> Option<u32> {
        prefixes
            .iter()
            .filter(|(k, l, _)| {
                let l = u32::from(*l).min(width);
                l == 0 || (k ^ key) >> (128 - l) == 0
            })
            .max_by_key(|p| p.1)
            .map(|p| p.2)
    }

    fn norm(k: u128, l: u8) -> u128 {
        if l == 0 {
            0
        } else {
            k & (!0u128 << (128 - u32::from(l)))
        }
    }

    #[test]
    fn ipv4_basics() {
        let k = |a: [u8; 4]| u128::from(u32::from_be_bytes(a)) << 96;
        let mut p = vec![(k([0, 0, 0, 0]), 0, 1), (k([10, 0, 0, 0]), 8, 2), (k([10, 1, 2, 0]), 24, 3), (k([10, 1, 2, 128]), 25, 4), (k([10, 1, 2, 7]), 32, 5)];
        let t = Lpm::build(32, &mut p);
        assert_eq!(t.lookup(k([192, 0, 2, 1])), Some(1));
        assert_eq!(t.lookup(k([10, 9, 9, 9])), Some(2));
        assert_eq!(t.lookup(k([10, 1, 2, 1])), Some(3));
        assert_eq!(t.lookup(k([10, 1, 2, 200])), Some(4));
        assert_eq!(t.lookup(k([10, 1, 2, 7])), Some(5));
        assert_eq!(t.lookup(k([10, 1, 2, 8])), Some(3));
        let t = Lpm::build(32, &mut [(k([10, 0, 0, 0]), 8, 0)]);
        assert_eq!(t.lookup(k([11, 0, 0, 0])), None);
        assert_eq!(t.lookup(k([10, 255, 0, 0])), Some(0));
    }

    #[test]
    fn ipv6_deep() {
        let a = |s: &str| u128::from(s.parse::<std::net::Ipv6Addr>().unwrap());
        let mut p = vec![(0, 0, 9), (a("2001:db8::"), 32, 1), (a("2001:db8:1::"), 48, 2), (a("2001:db8:1::1"), 128, 3), (a("2001:db8:1:0:8000::"), 65, 4)];
        let t = Lpm::build(128, &mut p);
        assert_eq!(t.lookup(a("2001:db8:1::1")), Some(3));
        assert_eq!(t.lookup(a("2001:db8:1::2")), Some(2));
        assert_eq!(t.lookup(a("2001:db8:1:0:8000::5")), Some(4));
        assert_eq!(t.lookup(a("2001:db8:2::")), Some(1));
        assert_eq!(t.lookup(a("3000::")), Some(9));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn matches_naive_v6(raw in proptest::collection::vec((any::<u128>(), 0u8..=128), 0..40), probes in proptest::collection::vec(any::<u128>(), 50)) {
            // Distinct normalised prefixes, values = index.
            let mut seen = std::collections::HashSet::new();
            let mut p: Vec<(u128, u8, u32)> = Vec::new();
            for (k, l) in raw {
                let k = norm(k, l);
                if seen.insert((k, l)) { p.push((k, l, p.len() as u32)); }
            }
            let orig = p.clone();
            let t = Lpm::build(128, &mut p);
            // Probe random keys and keys next to every prefix.
            let mut keys = probes;
            for (k, l, _) in &orig { keys.push(*k); keys.push(k | (1u128 << (128 - u32::from((*l).max(1))))); keys.push(k.wrapping_sub(1)); }
            for key in &keys {
                prop_assert_eq!(t.lookup(*key), naive(128, &orig, *key));
            }
            // The burst lookup agrees, in bursts of every size up to past 64.
            let bytes: Vec<[u8; 16]> = keys.iter().map(|k| k.to_be_bytes()).collect();
            for size in [1usize, 7, 32, 64, 100] {
                for chunk in bytes.chunks(size) {
                    let mut out = vec![u32::MAX; chunk.len()];
                    t.lookup_batch(chunk, &mut out);
                    for (k, o) in chunk.iter().zip(&out) {
                        prop_assert_eq!(o.checked_sub(1), naive(128, &orig, u128::from_be_bytes(*k)));
                    }
                }
            }
        }

        #[test]
        fn matches_naive_v4(raw in proptest::collection::vec((any::<u32>(), 0u8..=32), 0..60), probes in proptest::collection::vec(any::<u32>(), 50)) {
            let mut seen = std::collections::HashSet::new();
            let mut p: Vec<(u128, u8, u32)> = Vec::new();
            for (k, l) in raw {
                let k = norm(u128::from(k) << 96, l);
                if seen.insert((k, l)) { p.push((k, l, p.len() as u32)); }
            }
            let orig = p.clone();
            let t = Lpm::build(32, &mut p);
            let mut keys: Vec<u128> = probes.into_iter().map(|k| u128::from(k) << 96).collect();
            for (k, _, _) in &orig { keys.push(*k); keys.push(k.wrapping_sub(1u128 << 96)); }
            for key in &keys {
                prop_assert_eq!(t.lookup(*key), naive(32, &orig, *key));
            }
            let bytes: Vec<[u8; 16]> = keys.iter().map(|k| { let mut b = [0xee; 16]; b[..4].copy_from_slice(&((*k >> 96) as u32).to_be_bytes()); b }).collect();
            for size in [1usize, 32, 100] {
                for chunk in bytes.chunks(size) {
                    let mut out = vec![u32::MAX; chunk.len()];
                    t.lookup_batch(chunk, &mut out);
                    for (k, o) in chunk.iter().zip(&out) {
                        let key = u128::from(u32::from_be_bytes([k[0], k[1], k[2], k[3]])) << 96;
                        prop_assert_eq!(o.checked_sub(1), naive(32, &orig, key));
                    }
                }
            }
        }
    }
}
