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
        #[cfg(target_arch = "x86_64")]
        if n >= 16 && avx512::usable(self.chunks.len()) {
            let (pairs, whole) = (n / 32 * 32, n / 16 * 16);
            // SAFETY: `usable` checked the CPU has AVX-512F and that every
            // chunk index fits the gathers' 32-bit offsets; the slices hold
            // 32 and 16 keys.
            for (k, o) in keys[..pairs].chunks_exact(32).zip(out[..pairs].chunks_exact_mut(32)) {
                unsafe { avx512::lookup::<2>(self, k, o) };
            }
            if whole > pairs {
                unsafe { avx512::lookup::<1>(self, &keys[pairs..whole], &mut out[pairs..whole]) };
            }
            self.lookup_batch_scalar(&keys[whole..n], &mut out[whole..n]);
            return;
        }
        self.lookup_batch_scalar(&keys[..n], &mut out[..n]);
    }

    /// [`Lpm::lookup_batch`] without vector instructions.
    #[inline]
    pub fn lookup_batch_scalar(&self, keys: &[[u8; 16]], out: &mut [u32]) {
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

    /// Continue a walk at entry `e` with the key's byte `byte` (an entry of
    /// a chunk reached through bytes 2..byte).
    #[inline]
    fn walk_from(&self, mut e: u32, key: &[u8; 16], mut byte: usize) -> u32 {
        let last = (self.width / 8) as usize;
        while e & CHUNK != 0 && byte < last {
            e = self.chunks[(e & !CHUNK) as usize][usize::from(key[byte])];
            byte += 1;
        }
        e
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

/// The trie walked for 16 keys at once with AVX-512 gathers (as DPDK's
/// rte_fib6 does with its own trie): the key bytes of the first two
/// levels' 8 bytes are gathered once, then each level is one masked gather
/// of the entries of the keys still in a chunk. Keys deeper than byte 7
/// (IPv6 prefixes longer than /64) finish one by one.
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{Lpm, CHUNK};
    use std::arch::x86_64::*;
    use std::sync::OnceLock;

    static AVX512F: OnceLock<bool> = OnceLock::new();

    /// Whether the vector walk may run: the CPU has AVX-512F, and every
    /// entry offset (chunk x 256 + byte) fits a signed 32-bit gather index.
    #[inline]
    pub fn usable(chunks: usize) -> bool {
        chunks < (1 << 23) && *AVX512F.get_or_init(|| std::arch::is_x86_feature_detected!("avx512f"))
    }

    /// # Safety
    /// The CPU must have AVX-512F, `keys` and `out` hold `16 * G` entries,
    /// and `lpm` has fewer than 2^23 chunks ([`usable`]).
    ///
    /// `G` groups of 16 keys go level by level together: a level's gathers
    /// wait for the previous level's, so independent groups overlap them.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn lookup<const G: usize>(lpm: &Lpm, keys: &[[u8; 16]], out: &mut [u32]) {
        debug_assert!(keys.len() == 16 * G && out.len() == 16 * G);
        // Byte offsets of 16 keys.
        let offs = _mm512_setr_epi32(0, 16, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240);
        let ff = _mm512_set1_epi32(0xff);
        let chunk_bit = _mm512_set1_epi32(CHUNK as i32);
        let base = lpm.chunks.as_ptr() as *const i32;
        let last = (lpm.width / 8) as usize;
        let mut w0 = [_mm512_setzero_si512(); G];
        let mut w1 = [_mm512_setzero_si512(); G];
        let mut e = [_mm512_setzero_si512(); G];
        let mut m = [0u16; G];
        // SAFETY (all gathers and stores): each group's 16 keys are 256
        // readable bytes, offsets 0..=244 read 4 of them; root indices are
        // < 2^16 (the root's length); chunk offsets are < chunks.len() x 256
        // (an entry with CHUNK names an existing chunk), within i32
        // (`usable`); `out` holds 16 u32 per group.
        for g in 0..G {
            let kp = keys[16 * g..].as_ptr() as *const i32;
            // Bytes 0-3 and 4-7 of every key, little-endian in each lane.
            w0[g] = unsafe { _mm512_i32gather_epi32::<1>(offs, kp) };
            if last > 4 {
                w1[g] = unsafe { _mm512_i32gather_epi32::<1>(_mm512_add_epi32(offs, _mm512_set1_epi32(4)), kp) };
            }
            let root_idx = _mm512_or_si512(_mm512_slli_epi32::<8>(_mm512_and_si512(w0[g], ff)), _mm512_and_si512(_mm512_srli_epi32::<8>(w0[g]), ff));
            e[g] = unsafe { _mm512_i32gather_epi32::<4>(root_idx, lpm.root.as_ptr() as *const i32) };
        }
        let mut byte = 2;
        while byte < last.min(8) {
            let mut any = 0u16;
            for g in 0..G {
                m[g] = _mm512_test_epi32_mask(e[g], chunk_bit);
                any |= m[g];
            }
            if any == 0 {
                break;
            }
            let shift = _mm512_set1_epi32(((byte % 4) * 8) as i32);
            for g in 0..G {
                if m[g] == 0 {
                    continue;
                }
                let w = if byte < 4 { w0[g] } else { w1[g] };
                let b = _mm512_and_si512(_mm512_srlv_epi32(w, shift), ff);
                let idx = _mm512_add_epi32(_mm512_slli_epi32::<8>(_mm512_andnot_si512(chunk_bit, e[g])), b);
                e[g] = unsafe { _mm512_mask_i32gather_epi32::<4>(e[g], m[g], idx, base) };
            }
            byte += 1;
        }
        for g in 0..G {
            let o = &mut out[16 * g..16 * g + 16];
            unsafe { _mm512_storeu_si512(o.as_mut_ptr() as *mut _, e[g]) };
            let m = _mm512_test_epi32_mask(e[g], chunk_bit);
            if m != 0 {
                for (i, x) in o.iter_mut().enumerate() {
                    if m & (1 << i) != 0 {
                        *x = lpm.walk_from(*x, &keys[16 * g + i], byte);
                    }
                }
            }
        }
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

    /// The AVX-512 walk (when the CPU has it) against the scalar one, on
    /// prefixes of every length, so that keys stop at every level, in the
    /// first 8 bytes (vector gathers) and past them (finished one by one).
    #[test]
    fn vector_walk_agrees_at_every_depth() {
        #[cfg(target_arch = "x86_64")]
        if !avx512::usable(0) {
            eprintln!("vector_walk_agrees_at_every_depth: this CPU has no AVX-512F; checking the scalar fallback of lookup_batch only");
        }
        let base: u128 = 0x2001_0db8_00aa_bbcc_ddee_ff00_1122_3344;
        let mut p: Vec<(u128, u8, u32)> = (0..=128u8).map(|l| (norm(base, l), l, u32::from(l))).collect();
        let t = Lpm::build(128, &mut p);
        // For each length l, a key that matches the /l but not the /(l+1).
        let keys: Vec<[u8; 16]> = (0..=128u32).map(|l| if l == 128 { base } else { base ^ (1u128 << (127 - l)) }).map(|k| k.to_be_bytes()).collect();
        for chunk in keys.chunks(16) {
            let mut v = vec![0u32; chunk.len()];
            let mut s = vec![0u32; chunk.len()];
            t.lookup_batch(chunk, &mut v);
            t.lookup_batch_scalar(chunk, &mut s);
            assert_eq!(v, s);
        }
        let mut v = vec![0u32; keys.len()];
        t.lookup_batch(&keys, &mut v);
        assert_eq!(v, (0..=128u32).map(|l| l + 1).collect::<Vec<_>>(), "key l stops at the /l");
        // IPv4: every length too.
        let b4: u32 = 0x0a0a_c8f1;
        let mut p4: Vec<(u128, u8, u32)> = (0..=32u8).map(|l| (norm(u128::from(b4) << 96, l), l, u32::from(l))).collect();
        let t4 = Lpm::build(32, &mut p4);
        let keys4: Vec<[u8; 16]> = (0..=32u32).map(|l| if l == 32 { b4 } else { b4 ^ (1u32 << (31 - l)) }).map(|k| { let mut a = [0u8; 16]; a[..4].copy_from_slice(&k.to_be_bytes()); a }).collect();
        let mut v4 = vec![0u32; keys4.len()];
        t4.lookup_batch(&keys4, &mut v4);
        assert_eq!(v4, (0..=32u32).map(|l| l + 1).collect::<Vec<_>>());
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
                    let mut scalar = vec![u32::MAX; chunk.len()];
                    t.lookup_batch_scalar(chunk, &mut scalar);
                    prop_assert_eq!(&scalar, &out);
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
