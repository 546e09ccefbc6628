//! UDP (RFC 768) with the IPv4 and IPv6 (RFC 8200 s.8.1) pseudo-header
//! checksum.
//!
//! [`UdpPacket::new_checked`] validates the length field against the buffer
//! (a buffer longer than the length field is allowed; `payload()` stops at
//! the length). Checksums take the IP addresses as [`IpAddr`]; a source and
//! destination of different families never verify.
//!
//! Over IPv6 the destination to pass is the final one when a routing header
//! has segments left (RFC 8200 s.8.1): `Ipv6Packet::pseudo_dst_addr`.
//!
//! A zero checksum means "none" over IPv4 and verifies. Over IPv6 it does
//! not verify (RFC 8200); tunnels that use zero checksums (RFC 6935, some
//! RoCEv2 senders) should check `checksum() == 0` themselves or use
//! [`UdpRepr::parse_unverified`].

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::checksum;
use super::ipv4::IpProtocol;
use super::{Error, Result};

mod field {
    use core::ops::Range;
    pub const SRC_PORT: Range<usize> = 0..2;
    pub const DST_PORT: Range<usize> = 2..4;
    pub const LENGTH: Range<usize> = 4..6;
    pub const CHECKSUM: Range<usize> = 6..8;
}

/// The length of the UDP header.
pub const HEADER_LEN: usize = 8;

/// The partial sum of the pseudo-header for `src`/`dst`, or `None` if the
/// families differ.
#[inline]
pub(crate) fn pseudo_sum(src: &IpAddr, dst: &IpAddr, proto: IpProtocol, len: usize) -> Option<u32> {
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => Some(checksum::pseudo_v4(
            &s.octets(),
            &d.octets(),
            proto.0,
            len as u16,
        )),
        (IpAddr::V6(s), IpAddr::V6(d)) => Some(checksum::pseudo_v6(
            &s.octets(),
            &d.octets(),
            proto.0,
            len as u32,
        )),
        _ => None,
    }
}

/// A view over a UDP datagram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UdpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> UdpPacket<T> {
    #[inline]
    pub const fn new_unchecked(buffer: T) -> UdpPacket<T> {
        UdpPacket { buffer }
    }

    /// Wrap a buffer and validate the length field (see [`check_len`](Self::check_len)).
    #[inline]
    pub fn new_checked(buffer: T) -> Result<UdpPacket<T>> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// `Truncated` if the buffer is shorter than 8 bytes or than the length
    /// field; `BadLength` if the length field is less than 8.
    #[inline]
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let l = usize::from(self.len());
        if l < HEADER_LEN {
            return Err(Error::BadLength);
        }
        if len < l {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    #[inline]
    pub fn src_port(&self) -> u16 {
        let d = &self.buffer.as_ref()[field::SRC_PORT];
        u16::from_be_bytes([d[0], d[1]])
    }

    #[inline]
    pub fn dst_port(&self) -> u16 {
        let d = &self.buffer.as_ref()[field::DST_PORT];
        u16::from_be_bytes([d[0], d[1]])
    }

    /// The length field (header + payload).
    #[inline]
    pub fn len(&self) -> u16 {
        let d = &self.buffer.as_ref()[field::LENGTH];
        u16::from_be_bytes([d[0], d[1]])
    }

    /// True if the length field says there is no payload.
    #[inline]
    pub fn is_empty(&self) -> bool {
        usize::from(self.len()) <= HEADER_LEN
    }

    #[inline]
    pub fn checksum(&self) -> u16 {
        let d = &self.buffer.as_ref()[field::CHECKSUM];
        u16::from_be_bytes([d[0], d[1]])
    }

    /// The datagram (header + payload) up to the length field.
    #[inline]
    pub fn datagram(&self) -> &[u8] {
        &self.buffer.as_ref()[..usize::from(self.len())]
    }

    /// The payload, up to the length field.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..usize::from(self.len())]
    }

    /// The checksum the datagram should carry (0 is returned as 0xffff).
    #[inline]
    pub fn compute_checksum(&self, src: &IpAddr, dst: &IpAddr) -> u16 {
        let (s, d) = mapped(src, dst);
        let data = self.datagram();
        let ps = pseudo_sum(&s, &d, IpProtocol::UDP, data.len()).unwrap_or(0);
        // Everything but the checksum field itself.
        let sum = checksum::combine(checksum::sum(&data[..6]), checksum::sum(&data[8..]));
        let sum = checksum::combine(ps, sum);
        match !checksum::fold(sum) {
            0 => 0xffff,
            c => c,
        }
    }

    /// True if the checksum verifies. Over IPv4 a zero checksum ("none")
    /// verifies; over IPv6 it does not. Mixed address families never verify.
    #[inline]
    pub fn verify_checksum(&self, src: &IpAddr, dst: &IpAddr) -> bool {
        let c = self.checksum();
        match (src, dst) {
            (IpAddr::V4(_), IpAddr::V4(_)) if c == 0 => return true,
            (IpAddr::V6(_), IpAddr::V6(_)) if c == 0 => return false,
            _ => {}
        }
        match pseudo_sum(src, dst, IpProtocol::UDP, usize::from(self.len())) {
            Some(ps) => {
                checksum::fold(checksum::combine(ps, checksum::sum(self.datagram()))) == 0xffff
            }
            None => false,
        }
    }
}

/// Mixed families are summed as IPv4-mapped IPv6 (the result will not verify
/// anywhere; it only avoids a panic).
fn mapped(src: &IpAddr, dst: &IpAddr) -> (IpAddr, IpAddr) {
    match (src, dst) {
        (IpAddr::V4(_), IpAddr::V6(_)) | (IpAddr::V6(_), IpAddr::V4(_)) => {
            (IpAddr::V6(to_v6(src)), IpAddr::V6(to_v6(dst)))
        }
        _ => (*src, *dst),
    }
}

fn to_v6(a: &IpAddr) -> Ipv6Addr {
    match a {
        IpAddr::V4(a) => a.to_ipv6_mapped(),
        IpAddr::V6(a) => *a,
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpPacket<T> {
    #[inline]
    pub fn set_src_port(&mut self, v: u16) {
        self.buffer.as_mut()[field::SRC_PORT].copy_from_slice(&v.to_be_bytes());
    }

    #[inline]
    pub fn set_dst_port(&mut self, v: u16) {
        self.buffer.as_mut()[field::DST_PORT].copy_from_slice(&v.to_be_bytes());
    }

    #[inline]
    pub fn set_len(&mut self, v: u16) {
        self.buffer.as_mut()[field::LENGTH].copy_from_slice(&v.to_be_bytes());
    }

    #[inline]
    pub fn set_checksum(&mut self, v: u16) {
        self.buffer.as_mut()[field::CHECKSUM].copy_from_slice(&v.to_be_bytes());
    }

    /// Compute and store the checksum over the pseudo-header and the
    /// datagram up to the length field (0 is sent as 0xffff).
    #[inline]
    pub fn fill_checksum(&mut self, src: &IpAddr, dst: &IpAddr) {
        self.set_checksum(0);
        let c = self.compute_checksum(src, dst);
        self.set_checksum(c);
    }

    /// Update the checksum incrementally (RFC 1624) after a covered region
    /// changed from `old` to `new`: part of the datagram, or a pseudo-header
    /// field such as an IPv6 address the router rewrote. Both slices must be
    /// the same even length and start at an even offset of the covered data.
    /// A zero checksum ("none") is left at zero.
    #[inline]
    pub fn adjust_checksum(&mut self, old: &[u8], new: &[u8]) {
        let c = self.checksum();
        if c == 0 {
            return;
        }
        let n = match checksum::update_bytes(c, old, new) {
            0 => 0xffff,
            n => n,
        };
        self.set_checksum(n);
    }

    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let l = usize::from(self.len());
        &mut self.buffer.as_mut()[HEADER_LEN..l]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for UdpPacket<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// A high-level representation of a UDP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UdpRepr {
    pub src_port: u16,
    pub dst_port: u16,
    /// Payload length (length field minus 8).
    pub payload_len: usize,
}

impl UdpRepr {
    /// Parse and verify the checksum (see [`UdpPacket::verify_checksum`]).
    /// `Malformed` for a zero destination port.
    pub fn parse<T: AsRef<[u8]>>(
        packet: &UdpPacket<T>,
        src: &IpAddr,
        dst: &IpAddr,
    ) -> Result<UdpRepr> {
        packet.check_len()?;
        if !packet.verify_checksum(src, dst) {
            return Err(Error::Checksum);
        }
        Self::parse_unverified(packet)
    }

    /// Parse without verifying the checksum.
    pub fn parse_unverified<T: AsRef<[u8]>>(packet: &UdpPacket<T>) -> Result<UdpRepr> {
        packet.check_len()?;
        if packet.dst_port() == 0 {
            return Err(Error::Malformed);
        }
        Ok(UdpRepr {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
            payload_len: usize::from(packet.len()) - HEADER_LEN,
        })
    }

    #[inline]
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    #[inline]
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN + self.payload_len
    }

    /// Write the header without a checksum (field 0); fill the payload, then
    /// call [`UdpPacket::fill_checksum`].
    pub fn emit_header<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut UdpPacket<T>) {
        packet.set_src_port(self.src_port);
        packet.set_dst_port(self.dst_port);
        packet.set_len(u16::try_from(self.buffer_len()).unwrap_or(u16::MAX));
        packet.set_checksum(0);
    }

    /// Write the header and the checksum over the payload bytes already in
    /// the buffer. The buffer must hold `buffer_len()` bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        packet: &mut UdpPacket<T>,
        src: &IpAddr,
        dst: &IpAddr,
    ) {
        self.emit_header(packet);
        if packet.buffer.as_ref().len() >= usize::from(packet.len()) {
            packet.fill_checksum(src, dst);
        }
    }
}

/// Convenience for IPv4 callers.
#[inline]
pub fn v4(src: Ipv4Addr, dst: Ipv4Addr) -> (IpAddr, IpAddr) {
    (IpAddr::V4(src), IpAddr::V4(dst))
}

/// Convenience for IPv6 callers.
#[inline]
pub fn v6(src: Ipv6Addr, dst: Ipv6Addr) -> (IpAddr, IpAddr) {
    (IpAddr::V6(src), IpAddr::V6(dst))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // 10.0.0.1:1234 -> 10.0.0.2:5678 payload "hi!" (3 bytes, odd).
    // Pseudo: 0a00+0001+0a00+0002 + proto 0011 + len 000b = 0x141f.
    // UDP: 04d2+162e+000b+6869+2100 = 0xa474. Total 0xb893 -> ~ = 0x476c
    // (scapy agrees).
    const V4_DGRAM: [u8; 11] = [
        0x04, 0xd2, 0x16, 0x2e, 0x00, 0x0b, 0x47, 0x6c, b'h', b'i', b'!',
    ];

    fn v4addrs() -> (IpAddr, IpAddr) {
        v4(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2))
    }

    fn v6addrs() -> (IpAddr, IpAddr) {
        v6(
            "2001:db8::1".parse().unwrap(),
            "2001:db8::2".parse().unwrap(),
        )
    }

    #[test]
    fn known_answer_v4() {
        let (s, d) = v4addrs();
        let p = UdpPacket::new_checked(&V4_DGRAM[..]).unwrap();
        assert_eq!(p.src_port(), 1234);
        assert_eq!(p.dst_port(), 5678);
        assert_eq!(p.len(), 11);
        assert_eq!(p.payload(), b"hi!");
        assert!(p.verify_checksum(&s, &d));
        assert_eq!(p.compute_checksum(&s, &d), 0x476c);
        let r = UdpRepr::parse(&p, &s, &d).unwrap();
        assert_eq!(
            r,
            UdpRepr {
                src_port: 1234,
                dst_port: 5678,
                payload_len: 3
            }
        );
        let mut b = [0u8; 11];
        b[8..].copy_from_slice(b"hi!");
        r.emit(&mut UdpPacket::new_unchecked(&mut b[..]), &s, &d);
        assert_eq!(b, V4_DGRAM);
        // Wrong addresses / families.
        let (s6, d6) = v6addrs();
        assert!(!p.verify_checksum(&s6, &d6));
        assert!(!p.verify_checksum(&s, &d6));
        assert_eq!(UdpRepr::parse(&p, &s6, &d6).unwrap_err(), Error::Checksum);
    }

    #[test]
    fn known_answer_v6() {
        // 2001:db8::1 -> 2001:db8::2, 4791 -> 4791, payload 00 01 02 03.
        // Pseudo: 2001+0db8+0001 twice + 0002-0001 = 2*(2001+0db8+1)+1 = 0x5b75,
        // + len 000c + nh 0011 = 0x5b92. UDP: 12b7+12b7+000c+0001+0203 = 0x277e.
        // Sum 0x8310 -> ~ = 0x7cef.
        let (s, d) = v6addrs();
        let b = [0x12, 0xb7, 0x12, 0xb7, 0x00, 0x0c, 0x7c, 0xef, 0, 1, 2, 3];
        let p = UdpPacket::new_checked(&b[..]).unwrap();
        assert!(p.verify_checksum(&s, &d));
        assert_eq!(p.compute_checksum(&s, &d), 0x7cef);
    }

    #[test]
    fn zero_checksum() {
        let (s, d) = v4addrs();
        let mut b = V4_DGRAM;
        b[6] = 0;
        b[7] = 0;
        let p = UdpPacket::new_checked(&b[..]).unwrap();
        assert!(p.verify_checksum(&s, &d));
        let (s6, d6) = v6addrs();
        assert!(!p.verify_checksum(&s6, &d6));
        assert!(UdpRepr::parse_unverified(&p).is_ok());
        let mut p = UdpPacket::new_unchecked(&mut b[..]);
        p.adjust_checksum(&[0, 0], &[1, 1]);
        assert_eq!(p.checksum(), 0);
    }

    #[test]
    fn computed_zero_sent_as_ffff() {
        // Choose a payload word so that the sum is 0xffff.
        let (s, d) = v4addrs();
        let mut b = [0x04, 0xd2, 0x16, 0x2e, 0x00, 0x0a, 0, 0, 0, 0];
        let mut p = UdpPacket::new_unchecked(&mut b[..]);
        p.fill_checksum(&s, &d);
        let c = p.checksum();
        // Put !sum-so-far into the payload: the new sum becomes 0xffff.
        let w = c; // checksum == ~sum, adding it makes the sum 0xffff
        p.payload_mut().copy_from_slice(&w.to_be_bytes());
        p.fill_checksum(&s, &d);
        assert_eq!(p.checksum(), 0xffff);
        assert!(p.verify_checksum(&s, &d));
    }

    #[test]
    fn errors() {
        for n in 0..V4_DGRAM.len() {
            assert_eq!(
                UdpPacket::new_checked(&V4_DGRAM[..n]).unwrap_err(),
                Error::Truncated
            );
        }
        let mut b = V4_DGRAM;
        b[5] = 7;
        assert_eq!(
            UdpPacket::new_checked(&b[..]).unwrap_err(),
            Error::BadLength
        );
        b[5] = 12;
        assert_eq!(
            UdpPacket::new_checked(&b[..]).unwrap_err(),
            Error::Truncated
        );
        b[5] = 10;
        let (s, d) = v4addrs();
        let p = UdpPacket::new_checked(&b[..]).unwrap();
        assert_eq!(p.payload(), b"hi");
        assert_eq!(UdpRepr::parse(&p, &s, &d).unwrap_err(), Error::Checksum);
        let mut b = V4_DGRAM;
        b[2] = 0;
        b[3] = 0;
        let p = UdpPacket::new_checked(&b[..]).unwrap();
        assert_eq!(UdpRepr::parse_unverified(&p).unwrap_err(), Error::Malformed);
    }

    #[test]
    fn adjust_for_ipv6_dst_rewrite() {
        let (s, d) = v6addrs();
        let mut b = [0x12, 0xb7, 0x12, 0xb7, 0x00, 0x0c, 0x7c, 0xef, 0, 1, 2, 3];
        let new_d: Ipv6Addr = "fc00:1:2::77".parse().unwrap();
        let old = match d {
            IpAddr::V6(a) => a.octets(),
            _ => unreachable!(),
        };
        let mut p = UdpPacket::new_unchecked(&mut b[..]);
        p.adjust_checksum(&old, &new_d.octets());
        assert!(p.verify_checksum(&s, &IpAddr::V6(new_d)));
        // Payload rewrite.
        let old_pl = [0u8, 1];
        p.payload_mut()[..2].copy_from_slice(&[0xff, 0xfe]);
        p.adjust_checksum(&old_pl, &[0xff, 0xfe]);
        assert!(p.verify_checksum(&s, &IpAddr::V6(new_d)));
    }

    fn arb_addrs() -> impl Strategy<Value = (IpAddr, IpAddr)> {
        prop_oneof![
            (any::<u32>(), any::<u32>()).prop_map(|(a, b)| v4(a.into(), b.into())),
            (any::<[u8; 16]>(), any::<[u8; 16]>()).prop_map(|(a, b)| v6(a.into(), b.into())),
        ]
    }

    prop_compose! {
        fn arb_dgram()(sp in any::<u16>(), dp in 1u16.., payload in proptest::collection::vec(any::<u8>(), 0..100))
            -> (UdpRepr, Vec<u8>) {
            (UdpRepr { src_port: sp, dst_port: dp, payload_len: payload.len() }, payload)
        }
    }

    fn emit(r: &UdpRepr, payload: &[u8], s: &IpAddr, d: &IpAddr) -> Vec<u8> {
        let mut b = vec![0u8; r.buffer_len()];
        b[8..].copy_from_slice(payload);
        r.emit(&mut UdpPacket::new_unchecked(&mut b[..]), s, d);
        b
    }

    proptest! {
        #[test]
        fn roundtrip((r, payload) in arb_dgram(), (s, d) in arb_addrs()) {
            let b = emit(&r, &payload, &s, &d);
            let p = UdpPacket::new_checked(&b[..]).unwrap();
            prop_assert!(p.checksum() != 0);
            prop_assert!(p.verify_checksum(&s, &d));
            prop_assert_eq!(UdpRepr::parse(&p, &s, &d).unwrap(), r);
            prop_assert_eq!(p.payload(), &payload[..]);
        }

        #[test]
        fn truncation_is_error((r, payload) in arb_dgram(), (s, d) in arb_addrs()) {
            let b = emit(&r, &payload, &s, &d);
            for n in 0..b.len() {
                prop_assert!(UdpPacket::new_checked(&b[..n]).is_err());
            }
        }

        #[test]
        fn corrupt_length((r, payload) in arb_dgram(), (s, d) in arb_addrs(), l in any::<u16>()) {
            let mut b = emit(&r, &payload, &s, &d);
            let old = u16::from_be_bytes([b[4], b[5]]);
            b[4..6].copy_from_slice(&l.to_be_bytes());
            let res = UdpPacket::new_checked(&b[..]).and_then(|p| UdpRepr::parse(&p, &s, &d));
            if l < 8 || usize::from(l) > b.len() { prop_assert!(res.is_err()); }
            if l != old { prop_assert_ne!(res, Ok(r)); }
        }

        #[test]
        fn adjust_equals_full((r, payload) in arb_dgram(), (s, d) in arb_addrs(), w in any::<[u8; 2]>(), i in any::<prop::sample::Index>()) {
            let mut b = emit(&r, &payload, &s, &d);
            let n = b.len() / 2;
            let at = 2 * i.index(n);
            prop_assume!(at != 6 && at != 4);
            let old = [b[at], b[at + 1]];
            b[at..at + 2].copy_from_slice(&w);
            let mut p = UdpPacket::new_unchecked(&mut b[..]);
            p.adjust_checksum(&old, &w);
            let inc = p.checksum();
            if p.len() >= 8 && usize::from(p.len()) <= p.as_ref().len() {
                p.fill_checksum(&s, &d);
                prop_assert_eq!(inc, p.checksum());
            }
        }

        #[test]
        fn never_panics(data in proptest::collection::vec(any::<u8>(), 0..40), (s, d) in arb_addrs()) {
            if let Ok(p) = UdpPacket::new_checked(&data[..]) {
                let _ = (p.payload().len(), p.verify_checksum(&s, &d), p.compute_checksum(&s, &d));
                let _ = UdpRepr::parse(&p, &s, &d);
            }
        }
    }
}
