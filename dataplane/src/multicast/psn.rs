//! 24-bit packet sequence numbers (IBTA vol. 1 s.9.7.1): arithmetic modulo
//! 2^24, ordering within a half window of 2^23.
//!
//! `psn_lt(a, b)` holds when `b` is 1 ..= 2^23 - 1 steps ahead of `a`. Two
//! PSNs exactly 2^23 apart are unordered (neither is less); callers keep
//! their PSNs within one half window, as an RC requester does with its
//! outstanding packets.

/// Mask of a 24-bit PSN.
pub const PSN_MASK: u32 = 0x00ff_ffff;
/// Half of the PSN space: the largest forward distance that still counts
/// as "ahead" is `PSN_HALF - 1`.
pub const PSN_HALF: u32 = 1 << 23;

/// `a + n` modulo 2^24.
#[inline]
pub const fn psn_add(a: u32, n: u32) -> u32 {
    a.wrapping_add(n) & PSN_MASK
}

/// `a - n` modulo 2^24.
#[inline]
pub const fn psn_sub(a: u32, n: u32) -> u32 {
    a.wrapping_sub(n) & PSN_MASK
}

/// Forward distance from `b` to `a`: `(a - b)` modulo 2^24, in 0 ..= 2^24 - 1.
#[inline]
pub const fn psn_diff(a: u32, b: u32) -> u32 {
    a.wrapping_sub(b) & PSN_MASK
}

/// `a < b` in serial-number order: `b` is 1 ..= 2^23 - 1 ahead of `a`.
#[inline]
pub const fn psn_lt(a: u32, b: u32) -> bool {
    let d = psn_diff(b, a);
    d != 0 && d < PSN_HALF
}

/// `a <= b` in serial-number order.
#[inline]
pub const fn psn_le(a: u32, b: u32) -> bool {
    psn_diff(b, a) < PSN_HALF
}

/// The earlier of two PSNs (`a` when they are equal or unordered).
#[inline]
pub const fn psn_min(a: u32, b: u32) -> u32 {
    if psn_lt(b, a) {
        b & PSN_MASK
    } else {
        a & PSN_MASK
    }
}

/// The later of two PSNs (`a` when they are equal or unordered).
#[inline]
pub const fn psn_max(a: u32, b: u32) -> u32 {
    if psn_lt(a, b) {
        b & PSN_MASK
    } else {
        a & PSN_MASK
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_plain() {
        assert!(psn_lt(1, 2));
        assert!(!psn_lt(2, 1));
        assert!(!psn_lt(5, 5));
        assert!(psn_le(5, 5));
        assert!(psn_le(4, 5));
        assert!(!psn_le(6, 5));
        assert_eq!(psn_min(7, 3), 3);
        assert_eq!(psn_max(7, 3), 7);
    }

    #[test]
    fn order_at_wrap() {
        assert!(psn_lt(0xff_ffff, 0));
        assert!(!psn_lt(0, 0xff_ffff));
        assert!(psn_lt(0xff_fff0, 0x10));
        assert!(psn_le(0xff_ffff, 0));
        assert_eq!(psn_min(0xff_ffff, 0), 0xff_ffff);
        assert_eq!(psn_min(0, 0xff_ffff), 0xff_ffff);
        assert_eq!(psn_max(0xff_ffff, 0), 0);
        assert_eq!(psn_max(0xff_fffe, 3), 3);
        assert_eq!(psn_add(0xff_ffff, 1), 0);
        assert_eq!(psn_add(0xff_fffe, 5), 3);
        assert_eq!(psn_sub(0, 1), 0xff_ffff);
        assert_eq!(psn_diff(2, 0xff_ffff), 3);
        assert_eq!(psn_diff(0xff_ffff, 2), 0xff_fffd);
    }

    #[test]
    fn half_window() {
        // b just inside the half window ahead of a
        assert!(psn_lt(0, PSN_HALF - 1));
        // exactly half: unordered
        assert!(!psn_lt(0, PSN_HALF));
        assert!(!psn_lt(PSN_HALF, 0));
        // beyond half: the other way round
        assert!(psn_lt(PSN_HALF + 1, 0));
        assert!(psn_lt(0xff_ffff - 10, PSN_HALF - 12));
        assert!(!psn_lt(0xff_ffff - 10, PSN_HALF - 10));
    }

    #[test]
    fn upper_bits_ignored() {
        assert!(psn_lt(0x0100_0001, 2));
        assert_eq!(psn_min(0xff00_0005, 6), 5);
    }
}
