//! The Internet checksum (RFC 1071), pseudo-header sums for UDP/ICMPv6, and
//! the incremental update of RFC 1624 for fields the router rewrites.

/// One's-complement sum of `data` as big-endian 16-bit words, folded to 32
/// bits (not complemented). An odd trailing byte is padded with zero.
#[inline]
pub fn sum(data: &[u8]) -> u32 {
    let mut acc: u64 = 0;
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        // Sum four 16-bit words at a time; u64 cannot overflow for any
        // realistic packet (2^48 words).
        let w = u64::from_be_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        acc += (w >> 48) + ((w >> 32) & 0xffff) + ((w >> 16) & 0xffff) + (w & 0xffff);
    }
    let rest = chunks.remainder();
    let mut pairs = rest.chunks_exact(2);
    for p in &mut pairs {
        acc += u64::from(u16::from_be_bytes([p[0], p[1]]));
    }
    if let [b] = pairs.remainder() {
        acc += u64::from(*b) << 8;
    }
    fold64(acc)
}

#[inline]
fn fold64(mut acc: u64) -> u32 {
    while acc >> 32 != 0 {
        acc = (acc & 0xffff_ffff) + (acc >> 32);
    }
    acc as u32
}

/// Fold a 32-bit partial sum to 16 bits (not complemented).
#[inline]
pub fn fold(mut acc: u32) -> u16 {
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// Add two partial sums.
#[inline]
pub fn combine(a: u32, b: u32) -> u32 {
    fold64(u64::from(a) + u64::from(b))
}

/// The checksum field value for `data` (complement of the folded sum).
#[inline]
pub fn checksum(data: &[u8]) -> u16 {
    !fold(sum(data))
}

/// Whether a 20-octet IPv4 header (no options) has a valid checksum: the
/// same test as `checksum(h) == 0`, in five 32-bit loads and no loop (the
/// forwarding fast path verifies every header, RFC 1812 s.5.2.2).
#[inline(always)]
pub fn ipv4_header20_ok(h: &[u8; 20]) -> bool {
    let w = |i: usize| u64::from(u32::from_be_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]));
    // Five 32-bit words: the sum of their 16-bit halves, end-around carry.
    let s = w(0) + w(4) + w(8) + w(12) + w(16);
    let s = (s & 0xffff_ffff) + (s >> 32);
    let s = (s & 0xffff) + (s >> 16);
    let s = (s & 0xffff) + (s >> 16);
    let s = (s & 0xffff) + (s >> 16);
    s == 0xffff
}

/// Partial sum of the IPv4 pseudo-header (RFC 768 / RFC 793).
#[inline]
pub fn pseudo_v4(src: &[u8; 4], dst: &[u8; 4], proto: u8, len: u16) -> u32 {
    combine(combine(sum(src), sum(dst)), u32::from(proto) + u32::from(len))
}

/// Partial sum of the IPv6 pseudo-header (RFC 8200 section 8.1).
#[inline]
pub fn pseudo_v6(src: &[u8; 16], dst: &[u8; 16], next_header: u8, len: u32) -> u32 {
    let l = (len >> 16) + (len & 0xffff);
    combine(combine(sum(src), sum(dst)), u32::from(next_header) + l)
}

/// RFC 1624 eqn. 3: the new checksum `HC' = ~(~HC + ~m + m')` after a 16-bit
/// word of the covered data changed from `old` to `new`.
#[inline]
pub fn update16(hc: u16, old: u16, new: u16) -> u16 {
    let s = u32::from(!hc) + u32::from(!old) + u32::from(new);
    !fold(s)
}

/// RFC 1624 update for a 32-bit field (two words).
#[inline]
pub fn update32(hc: u16, old: u32, new: u32) -> u16 {
    let hc = update16(hc, (old >> 16) as u16, (new >> 16) as u16);
    update16(hc, old as u16, new as u16)
}

/// RFC 1624 update for an arbitrary even-length region that changed from
/// `old` to `new` (same length).
#[inline]
pub fn update_bytes(hc: u16, old: &[u8], new: &[u8]) -> u16 {
    debug_assert_eq!(old.len(), new.len());
    let s = u32::from(!hc) + u32::from(!fold(sum(old))) + u32::from(fold(sum(new)));
    !fold(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1071_example() {
        // RFC 1071 section 3 example: 00 01 f2 03 f4 f5 f6 f7 -> sum ddf2.
        let d = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(fold(sum(&d)), 0xddf2);
        assert_eq!(checksum(&d), !0xddf2);
    }

    #[test]
    fn ipv4_header_known_answer() {
        // A captured IPv4 header whose checksum is 0xb861 (widely used example).
        let mut h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(checksum(&h), 0xb861);
        h[10] = 0xb8;
        h[11] = 0x61;
        assert_eq!(checksum(&h), 0);
    }

    proptest::proptest! {
        #[test]
        fn header20_check_is_the_full_checksum(h in proptest::array::uniform20(proptest::num::u8::ANY), fix in proptest::bool::ANY) {
            let mut h = h;
            if fix {
                // Make it valid (also the 0x0000 / 0xffff cases of the
                // one's-complement sum).
                h[10] = 0;
                h[11] = 0;
                let c = checksum(&h);
                h[10..12].copy_from_slice(&c.to_be_bytes());
            }
            proptest::prop_assert_eq!(ipv4_header20_ok(&h), checksum(&h) == 0);
        }
    }

    #[test]
    fn header20_edge_cases() {
        // All ones: every word 0xffff, sum 0xffff (negative zero): valid.
        assert!(ipv4_header20_ok(&[0xff; 20]));
        assert_eq!(checksum(&[0xff; 20]), 0);
        // All zeros: sum 0: not valid.
        assert!(!ipv4_header20_ok(&[0; 20]));
        assert_ne!(checksum(&[0; 20]), 0);
    }

    #[test]
    fn odd_length() {
        assert_eq!(fold(sum(&[0xab])), 0xab00);
        assert_eq!(fold(sum(&[0x01, 0x02, 0x03])), 0x0402);
    }

    #[test]
    fn incremental_equals_full() {
        let mut h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        let c = checksum(&h);
        // TTL 64 -> 63 (word 8..10 = ttl|proto).
        let old = u16::from_be_bytes([h[8], h[9]]);
        h[8] -= 1;
        let new = u16::from_be_bytes([h[8], h[9]]);
        let inc = update16(c, old, new);
        assert_eq!(inc, checksum(&h));
        // ECN CE on TOS byte (word 0..2).
        let old = u16::from_be_bytes([h[0], h[1]]);
        h[1] |= 0x03;
        let new = u16::from_be_bytes([h[0], h[1]]);
        assert_eq!(update16(inc, old, new), checksum(&h));
    }
}
