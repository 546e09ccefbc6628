//! IP Authentication Header (RFC 4302) over IPv6, integrity only, with
//! manually keyed security associations: what draft-tian-ccwg-long-haul-cnp
//! s.9 offers against forged ICMPv6 Long-haul CNPs ("IPsec Authentication
//! Header (AH) MAY be used to provide packet authentication").
//!
//! ```text
//!  0               1               2               3
//! | Next Header   | Payload Len   |          RESERVED             |
//! |                Security Parameters Index (SPI)                |
//! |                    Sequence Number Field                      |
//! |                Integrity Check Value (ICV), padding           |
//! ```
//!
//! * Algorithms (RFC 4868, RFC 8221 s.6: HMAC-SHA2-256-128 is the MUST of
//!   AH): HMAC-SHA-256-128 (256-bit key, 16-octet ICV) and
//!   HMAC-SHA-512-256 (512-bit key, 32-octet ICV).
//! * Over IPv6 the header is a multiple of 8 octets (RFC 4302 s.2.2,
//!   s.3.3.3.2.1): 12 + 16 = 28 becomes 32, 12 + 32 = 44 becomes 48. The
//!   padding is covered by the ICV as sent: zeros in what we send, what the
//!   sender chose in what we verify (s.3.3.3.2.1).
//! * The ICV covers (RFC 4302 s.3.3.3.1.1) the IPv6 header with its mutable
//!   fields (Traffic Class, Flow Label, Hop Limit) zeroed, the AH with the
//!   ICV field zeroed, and everything after the AH. No extended sequence
//!   numbers: a sender stops at 2^32 - 1 (s.3.3.2).
//! * Only the plain layout is handled: the AH directly after the fixed IPv6
//!   header (no extension header before it), which is how the router builds
//!   its CNPs.

use hmac::{Hmac, Mac};
use sha2::{Sha256, Sha512};
use std::fmt;

use super::ipv4::IpProtocol;
use super::ipv6::Ipv6AuthHeader;
use super::{Error, Result};

/// IP protocol number of AH.
pub const NEXT_HEADER_AH: u8 = IpProtocol::AH.0;
/// Fixed part of the header: Next Header, Payload Len, Reserved, SPI,
/// Sequence Number.
pub const FIXED_LEN: usize = 12;
const IPV6_LEN: usize = 40;

/// An AH integrity algorithm (RFC 4868).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    HmacSha256_128,
    HmacSha512_256,
}

impl Algorithm {
    pub const ALL: [Algorithm; 2] = [Algorithm::HmacSha256_128, Algorithm::HmacSha512_256];

    /// The configuration name (and the one `ip xfrm` / scapy users know:
    /// `hmac(sha256)` truncated to 128 bits, SHA2-256-128).
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::HmacSha256_128 => "hmac-sha256-128",
            Algorithm::HmacSha512_256 => "hmac-sha512-256",
        }
    }

    pub fn from_name(s: &str) -> Option<Algorithm> {
        Algorithm::ALL
            .into_iter()
            .find(|a| a.name().eq_ignore_ascii_case(s))
    }

    /// Octets of the truncated ICV.
    pub fn icv_len(self) -> usize {
        match self {
            Algorithm::HmacSha256_128 => 16,
            Algorithm::HmacSha512_256 => 32,
        }
    }

    /// The key size RFC 4868 s.2.1 requires (the hash's output size).
    pub fn key_len(self) -> usize {
        match self {
            Algorithm::HmacSha256_128 => 32,
            Algorithm::HmacSha512_256 => 64,
        }
    }

    /// The whole header over IPv6, padded to 8 octets: 32 or 48.
    pub fn header_len(self) -> usize {
        (FIXED_LEN + self.icv_len()).next_multiple_of(8)
    }
}

#[derive(Clone)]
enum Keyed {
    S256(Hmac<Sha256>),
    S512(Hmac<Sha512>),
}

/// One direction of a manually keyed SA: SPI, algorithm and key (keyed
/// once; cloned per packet, no allocation).
#[derive(Clone)]
pub struct AhKey {
    spi: u32,
    alg: Algorithm,
    mac: Keyed,
}

impl fmt::Debug for AhKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print the key.
        f.debug_struct("AhKey")
            .field("spi", &self.spi)
            .field("alg", &self.alg.name())
            .finish()
    }
}

impl AhKey {
    /// `BadLength` unless the key has the algorithm's size; `Malformed` for
    /// SPIs 0..=255 (reserved, RFC 4302 s.2.4).
    pub fn new(spi: u32, alg: Algorithm, key: &[u8]) -> Result<Self> {
        if spi < 256 {
            return Err(Error::Malformed);
        }
        if key.len() != alg.key_len() {
            return Err(Error::BadLength);
        }
        let mac = match alg {
            Algorithm::HmacSha256_128 => Keyed::S256(
                <Hmac<Sha256> as Mac>::new_from_slice(key).map_err(|_| Error::BadLength)?,
            ),
            Algorithm::HmacSha512_256 => Keyed::S512(
                <Hmac<Sha512> as Mac>::new_from_slice(key).map_err(|_| Error::BadLength)?,
            ),
        };
        Ok(AhKey { spi, alg, mac })
    }

    pub fn spi(&self) -> u32 {
        self.spi
    }

    pub fn algorithm(&self) -> Algorithm {
        self.alg
    }

    /// The truncated ICV of `pkt` (an IPv6 packet whose AH starts at byte
    /// 40), computed as RFC 4302 s.3.3.3.1 says, into `out[..icv_len]`.
    fn icv(&self, pkt: &[u8], out: &mut [u8]) {
        let hl = self.alg.header_len();
        let mut ip = [0u8; IPV6_LEN];
        ip.copy_from_slice(&pkt[..IPV6_LEN]);
        // Version stays; Traffic Class, Flow Label, Hop Limit are mutable.
        ip[0] &= 0xf0;
        ip[1] = 0;
        ip[2] = 0;
        ip[3] = 0;
        ip[7] = 0;
        let n = self.alg.icv_len();
        // The ICV field zeroed; the padding after the ICV as sent (RFC
        // 4302 s.3.3.3.2.1: the sender chooses it, and it is covered).
        let mut ah = [0u8; 48];
        ah[..FIXED_LEN].copy_from_slice(&pkt[IPV6_LEN..IPV6_LEN + FIXED_LEN]);
        ah[FIXED_LEN + n..hl].copy_from_slice(&pkt[IPV6_LEN + FIXED_LEN + n..IPV6_LEN + hl]);
        let parts: [&[u8]; 3] = [&ip, &ah[..hl], &pkt[IPV6_LEN + hl..]];
        match &self.mac {
            Keyed::S256(m) => {
                let mut m = m.clone();
                parts.iter().for_each(|p| m.update(p));
                out[..n].copy_from_slice(&m.finalize().into_bytes()[..n]);
            }
            Keyed::S512(m) => {
                let mut m = m.clone();
                parts.iter().for_each(|p| m.update(p));
                out[..n].copy_from_slice(&m.finalize().into_bytes()[..n]);
            }
        }
    }
}

/// Insert an AH under `key` with sequence number `seq` between the IPv6
/// header of the packet in `buf[..len]` and its payload (the header's Next
/// Header goes into the AH, Payload Length grows), and compute the ICV.
/// `buf` must have room for the header. Returns the new length.
pub fn protect_ipv6(buf: &mut [u8], len: usize, key: &AhKey, seq: u32) -> Result<usize> {
    let hl = key.alg.header_len();
    if len < IPV6_LEN || buf.len() < len || buf[0] >> 4 != 6 {
        return Err(Error::Malformed);
    }
    let payload = u16::from_be_bytes([buf[4], buf[5]]) as usize;
    if IPV6_LEN + payload != len {
        return Err(Error::BadLength);
    }
    if buf.len() < len + hl || payload + hl > usize::from(u16::MAX) {
        return Err(Error::Truncated);
    }
    buf.copy_within(IPV6_LEN..len, IPV6_LEN + hl);
    let next = buf[6];
    buf[6] = NEXT_HEADER_AH;
    buf[4..6].copy_from_slice(&((payload + hl) as u16).to_be_bytes());
    buf[IPV6_LEN..IPV6_LEN + hl].fill(0);
    let mut ah = Ipv6AuthHeader::new_unchecked(&mut buf[IPV6_LEN..IPV6_LEN + hl]);
    ah.set_next_header(IpProtocol(next));
    ah.set_header_len(hl);
    ah.set_spi(key.spi);
    ah.set_seq_no(seq);
    let mut icv = [0u8; 32];
    key.icv(&buf[..len + hl], &mut icv);
    let n = key.alg.icv_len();
    buf[IPV6_LEN + FIXED_LEN..IPV6_LEN + FIXED_LEN + n].copy_from_slice(&icv[..n]);
    Ok(len + hl)
}

/// What a verified AH said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verified {
    pub spi: u32,
    pub seq: u32,
    /// The protocol after the AH.
    pub next_header: u8,
    /// Offset of the upper-layer packet in the IPv6 packet.
    pub payload_at: usize,
}

/// The AH of an IPv6 packet (at byte 40), checked as far as the layout
/// goes (not the ICV).
fn auth_header(pkt: &[u8]) -> Result<Ipv6AuthHeader<&[u8]>> {
    if pkt.len() < IPV6_LEN || pkt[0] >> 4 != 6 {
        return Err(Error::Truncated);
    }
    if pkt[6] != NEXT_HEADER_AH {
        return Err(Error::Unrecognized);
    }
    if IPV6_LEN + usize::from(u16::from_be_bytes([pkt[4], pkt[5]])) != pkt.len() {
        return Err(Error::BadLength);
    }
    Ipv6AuthHeader::new_checked(&pkt[IPV6_LEN..])
}

/// Verify the AH of an IPv6 packet (exactly the packet) with the key
/// `lookup` gives for its SPI: `Unrecognized` without an AH or a key,
/// `BadLength` when the header's length is not the algorithm's,
/// `Checksum` when the ICV does not verify (compared in constant time).
pub fn verify_ipv6<'k>(pkt: &[u8], lookup: impl Fn(u32) -> Option<&'k AhKey>) -> Result<Verified> {
    let h = auth_header(pkt)?;
    let (spi, hl) = (h.spi(), h.header_len());
    let key = lookup(spi).ok_or(Error::Unrecognized)?;
    if hl != key.alg.header_len() {
        return Err(Error::BadLength);
    }
    let n = key.alg.icv_len();
    let got = &pkt[IPV6_LEN + FIXED_LEN..IPV6_LEN + hl];
    let mut want = [0u8; 32];
    key.icv(pkt, &mut want);
    // The ICV (the padding after it, whatever the sender chose, is
    // covered by it).
    let diff = got[..n].iter().zip(&want[..n]).fold(0u8, |d, (a, b)| d | (a ^ b));
    if diff != 0 {
        return Err(Error::Checksum);
    }
    Ok(Verified {
        spi,
        seq: h.seq_no(),
        next_header: h.next_header().0,
        payload_at: IPV6_LEN + hl,
    })
}

/// The receiver's anti-replay window of RFC 4302 s.3.4.3 (64 packets).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReplayWindow {
    /// The highest sequence number accepted (0: none yet).
    top: u32,
    /// Bit i: `top - i` was accepted.
    seen: u64,
}

impl ReplayWindow {
    /// Accept `seq` (of a packet whose ICV verified) unless it is 0, older
    /// than the window or seen before.
    pub fn accept(&mut self, seq: u32) -> bool {
        if seq == 0 {
            return false;
        }
        if seq > self.top {
            let shift = seq - self.top;
            self.seen = if shift >= 64 { 0 } else { self.seen << shift };
            self.seen |= 1;
            self.top = seq;
            return true;
        }
        let back = self.top - seq;
        if back >= 64 || self.seen & (1 << back) != 0 {
            return false;
        }
        self.seen |= 1 << back;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn icmp6(payload: &[u8]) -> Vec<u8> {
        let mut p = vec![0x6a, 0xbc, 0xde, 0xf1, 0, 0, 58, 64];
        p[4..6].copy_from_slice(&(payload.len() as u16).to_be_bytes());
        p.extend_from_slice(
            &"2001:db8:1::1"
                .parse::<std::net::Ipv6Addr>()
                .unwrap()
                .octets(),
        );
        p.extend_from_slice(
            &"2001:db8:1::2"
                .parse::<std::net::Ipv6Addr>()
                .unwrap()
                .octets(),
        );
        p.extend_from_slice(payload);
        p
    }

    fn protect(alg: Algorithm, seq: u32) -> (AhKey, Vec<u8>) {
        let key = AhKey::new(0x1000, alg, &vec![0x5a; alg.key_len()]).unwrap();
        let mut b = icmp6(&[200, 0, 0, 0, 1, 2, 3, 4, 5]);
        let n = b.len();
        b.resize(n + 64, 0);
        let m = protect_ipv6(&mut b, n, &key, seq).unwrap();
        b.truncate(m);
        (key, b)
    }

    #[test]
    fn the_header_sits_between_ipv6_and_the_payload_padded_to_eight_octets() {
        for (alg, hl) in [
            (Algorithm::HmacSha256_128, 32),
            (Algorithm::HmacSha512_256, 48),
        ] {
            let (key, b) = protect(alg, 7);
            assert_eq!(b.len(), 40 + hl + 9);
            assert_eq!(b[6], NEXT_HEADER_AH);
            assert_eq!(u16::from_be_bytes([b[4], b[5]]) as usize, hl + 9);
            assert_eq!(b[40], 58, "Next Header: what the IPv6 header said");
            assert_eq!(
                (usize::from(b[41]) + 2) * 4,
                hl,
                "Payload Len in 32-bit words minus 2"
            );
            assert_eq!(&b[42..44], &[0, 0]);
            assert_eq!(&b[44..48], &0x1000u32.to_be_bytes());
            assert_eq!(&b[48..52], &7u32.to_be_bytes());
            assert!(
                b[52 + alg.icv_len()..40 + hl].iter().all(|x| *x == 0),
                "zero padding"
            );
            assert_eq!(&b[40 + hl..], &[200, 0, 0, 0, 1, 2, 3, 4, 5]);
            let v = verify_ipv6(&b, |s| (s == 0x1000).then_some(&key)).unwrap();
            assert_eq!(
                v,
                Verified {
                    spi: 0x1000,
                    seq: 7,
                    next_header: 58,
                    payload_at: 40 + hl
                }
            );
        }
    }

    #[test]
    fn mutable_fields_do_not_count_and_everything_else_does() {
        let (key, b) = protect(Algorithm::HmacSha256_128, 1);
        let look = |s: u32| (s == 0x1000).then_some(&key);
        // A router on the way may change Traffic Class, Flow Label and Hop Limit.
        let mut m = b.clone();
        m[0] = 0x6f;
        m[1] = 0xff;
        m[3] ^= 1;
        m[7] = 3;
        assert!(verify_ipv6(&m, look).is_ok());
        // Any other octet, and the key, matter.
        for i in (4..7).chain(8..b.len()) {
            let mut m = b.clone();
            m[i] ^= 0x10;
            assert!(verify_ipv6(&m, look).is_err(), "octet {i}");
        }
        let other = AhKey::new(0x1000, Algorithm::HmacSha256_128, &[0x5b; 32]).unwrap();
        assert_eq!(verify_ipv6(&b, |_| Some(&other)), Err(Error::Checksum));
        assert_eq!(verify_ipv6(&b, |_| None), Err(Error::Unrecognized));
        let wrong_alg = AhKey::new(0x1000, Algorithm::HmacSha512_256, &[0x5a; 64]).unwrap();
        assert_eq!(verify_ipv6(&b, |_| Some(&wrong_alg)), Err(Error::BadLength));
    }

    #[test]
    fn the_icv_is_the_truncated_hmac_of_the_normalised_packet() {
        // Computed here from the rule (mutable fields and ICV zeroed), not
        // through `icv`; scapy checks the same in the integration tests.
        let (_, b) = protect(Algorithm::HmacSha256_128, 9);
        let mut norm = b.clone();
        norm[0] = 0x60;
        norm[1..4].fill(0);
        norm[7] = 0;
        norm[52..72].fill(0);
        let mut m = <Hmac<Sha256> as Mac>::new_from_slice(&[0x5a; 32]).unwrap();
        m.update(&norm);
        assert_eq!(&m.finalize().into_bytes()[..16], &b[52..68]);
    }

    #[test]
    fn bad_keys_spis_and_packets_are_refused() {
        assert_eq!(
            AhKey::new(255, Algorithm::HmacSha256_128, &[0; 32]).err(),
            Some(Error::Malformed)
        );
        assert_eq!(
            AhKey::new(256, Algorithm::HmacSha256_128, &[0; 16]).err(),
            Some(Error::BadLength)
        );
        assert_eq!(
            AhKey::new(256, Algorithm::HmacSha512_256, &[0; 32]).err(),
            Some(Error::BadLength)
        );
        let key = AhKey::new(256, Algorithm::HmacSha256_128, &[0; 32]).unwrap();
        let mut b = icmp6(&[1, 2, 3, 4]);
        let n = b.len();
        assert_eq!(
            protect_ipv6(&mut b, n, &key, 1),
            Err(Error::Truncated),
            "no room for the header"
        );
        b.resize(n + 32, 0);
        assert_eq!(protect_ipv6(&mut b, n - 1, &key, 1), Err(Error::BadLength));
        b[0] = 0x45;
        assert_eq!(protect_ipv6(&mut b, n, &key, 1), Err(Error::Malformed));
        // Truncated and inconsistent AHs never panic.
        let (k, p) = protect(Algorithm::HmacSha256_128, 1);
        for cut in 0..p.len() {
            let mut q = p[..cut].to_vec();
            if q.len() >= 6 {
                let pl = q.len().saturating_sub(40) as u16;
                q[4..6].copy_from_slice(&pl.to_be_bytes());
            }
            assert!(verify_ipv6(&q, |_| Some(&k)).is_err(), "cut at {cut}");
        }
        let mut q = p.clone();
        q[41] = 200;
        assert_eq!(verify_ipv6(&q, |_| Some(&k)), Err(Error::Truncated), "an AH longer than the packet");
        q[41] = 1;
        assert_eq!(verify_ipv6(&q, |_| Some(&k)), Err(Error::BadLength), "12 octets: not a multiple of 8 over IPv6");
        q[41] = 8;
        assert_eq!(verify_ipv6(&q, |_| Some(&k)), Err(Error::BadLength), "40 octets: not the algorithm's 32");
    }

    #[test]
    fn the_replay_window_takes_each_number_once_and_nothing_too_old() {
        let mut w = ReplayWindow::default();
        assert!(!w.accept(0));
        assert!(w.accept(5));
        assert!(!w.accept(5));
        assert!(w.accept(3), "late but inside the window");
        assert!(!w.accept(3));
        assert!(w.accept(100));
        assert!(!w.accept(36), "64 behind the top");
        assert!(w.accept(37));
        assert!(w.accept(1000));
        assert!(!w.accept(100));
    }
}
