//! IPv4 header (RFC 791), with DSCP/ECN (RFC 2474, RFC 3168) and the
//! incremental checksum updates (RFC 1624) the forwarding path uses.
//!
//! Also home of [`IpProtocol`] and the [`ecn`] codepoints, shared with IPv6.
//!
//! [`Ipv4Packet::new_checked`] validates IHL and total length against the
//! buffer; after it no accessor can panic. The buffer may be longer than the
//! total length (Ethernet padding): `payload()` stops at the total length.

use core::fmt;
use std::net::Ipv4Addr;

use super::checksum;
use super::{Error, Result};

/// An IP protocol number / IPv6 next-header value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IpProtocol(pub u8);

impl IpProtocol {
    pub const HOP_BY_HOP: IpProtocol = IpProtocol(0);
    pub const ICMP: IpProtocol = IpProtocol(1);
    pub const TCP: IpProtocol = IpProtocol(6);
    pub const UDP: IpProtocol = IpProtocol(17);
    /// IPv6 encapsulation (used by SRv6 H.Encaps of IPv6).
    pub const IPV6: IpProtocol = IpProtocol(41);
    /// IPv4 encapsulation (used by SRv6 H.Encaps of IPv4).
    pub const IPV4: IpProtocol = IpProtocol(4);
    pub const IPV6_ROUTE: IpProtocol = IpProtocol(43);
    pub const IPV6_FRAG: IpProtocol = IpProtocol(44);
    pub const ESP: IpProtocol = IpProtocol(50);
    pub const AH: IpProtocol = IpProtocol(51);
    pub const ICMPV6: IpProtocol = IpProtocol(58);
    pub const IPV6_NO_NXT: IpProtocol = IpProtocol(59);
    pub const IPV6_OPTS: IpProtocol = IpProtocol(60);
    /// RFC 8200 / RFC 4303 treat 253 and 254 as experimental.
    pub const EXPERIMENT1: IpProtocol = IpProtocol(253);
    pub const EXPERIMENT2: IpProtocol = IpProtocol(254);
}

impl From<u8> for IpProtocol {
    fn from(v: u8) -> Self {
        IpProtocol(v)
    }
}

impl From<IpProtocol> for u8 {
    fn from(v: IpProtocol) -> Self {
        v.0
    }
}

impl fmt::Display for IpProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            IpProtocol::HOP_BY_HOP => f.write_str("HOPOPT"),
            IpProtocol::ICMP => f.write_str("ICMP"),
            IpProtocol::TCP => f.write_str("TCP"),
            IpProtocol::UDP => f.write_str("UDP"),
            IpProtocol::IPV4 => f.write_str("IPv4"),
            IpProtocol::IPV6 => f.write_str("IPv6"),
            IpProtocol::IPV6_ROUTE => f.write_str("IPv6-Route"),
            IpProtocol::IPV6_FRAG => f.write_str("IPv6-Frag"),
            IpProtocol::ESP => f.write_str("ESP"),
            IpProtocol::AH => f.write_str("AH"),
            IpProtocol::ICMPV6 => f.write_str("IPv6-ICMP"),
            IpProtocol::IPV6_NO_NXT => f.write_str("IPv6-NoNxt"),
            IpProtocol::IPV6_OPTS => f.write_str("IPv6-Opts"),
            IpProtocol(v) => write!(f, "{v}"),
        }
    }
}

/// ECN codepoints (RFC 3168 s.5), the two low bits of the TOS / traffic class.
pub mod ecn {
    pub const NOT_ECT: u8 = 0b00;
    pub const ECT1: u8 = 0b01;
    pub const ECT0: u8 = 0b10;
    /// Congestion experienced.
    pub const CE: u8 = 0b11;

    /// True if the codepoint says the transport is ECN-capable (ECT(0),
    /// ECT(1) or already CE), i.e. a router may mark CE instead of dropping.
    #[inline]
    pub const fn is_capable(ecn: u8) -> bool {
        ecn & 0b11 != NOT_ECT
    }
}

mod field {
    use core::ops::Range;
    pub const VER_IHL: usize = 0;
    pub const TOS: usize = 1;
    pub const LENGTH: Range<usize> = 2..4;
    pub const IDENT: Range<usize> = 4..6;
    pub const FLG_OFF: Range<usize> = 6..8;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: Range<usize> = 10..12;
    pub const SRC_ADDR: Range<usize> = 12..16;
    pub const DST_ADDR: Range<usize> = 16..20;
}

/// The length of an IPv4 header without options.
pub const HEADER_LEN: usize = 20;
/// The longest IPv4 header (IHL 15).
pub const MAX_HEADER_LEN: usize = 60;

/// A view over an IPv4 packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// Wrap a buffer without checking it.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Ipv4Packet<T> {
        Ipv4Packet { buffer }
    }

    /// Wrap a buffer and validate IHL and total length (see [`check_len`](Self::check_len)).
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Ipv4Packet<T>> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// * `Truncated` if the buffer is shorter than 20 bytes, than IHL*4, or
    ///   than the total length;
    /// * `BadLength` if IHL < 5 or the total length is less than IHL*4.
    ///
    /// The version is not checked here (see [`Ipv4Repr::parse`]).
    #[inline]
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let hl = self.header_len();
        if hl < HEADER_LEN {
            return Err(Error::BadLength);
        }
        if len < hl {
            return Err(Error::Truncated);
        }
        let tl = usize::from(self.total_len());
        if tl < hl {
            return Err(Error::BadLength);
        }
        if len < tl {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    #[inline]
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] >> 4
    }

    /// The header length in bytes (IHL * 4).
    #[inline]
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[field::VER_IHL] & 0x0f) * 4
    }

    /// The whole TOS byte (DSCP << 2 | ECN).
    #[inline]
    pub fn tos(&self) -> u8 {
        self.buffer.as_ref()[field::TOS]
    }

    #[inline]
    pub fn dscp(&self) -> u8 {
        self.tos() >> 2
    }

    #[inline]
    pub fn ecn(&self) -> u8 {
        self.tos() & 0x03
    }

    #[inline]
    pub fn total_len(&self) -> u16 {
        let d = &self.buffer.as_ref()[field::LENGTH];
        u16::from_be_bytes([d[0], d[1]])
    }

    #[inline]
    pub fn ident(&self) -> u16 {
        let d = &self.buffer.as_ref()[field::IDENT];
        u16::from_be_bytes([d[0], d[1]])
    }

    #[inline]
    fn flg_off(&self) -> u16 {
        let d = &self.buffer.as_ref()[field::FLG_OFF];
        u16::from_be_bytes([d[0], d[1]])
    }

    /// The reserved ("evil") flag bit.
    #[inline]
    pub fn reserved_flag(&self) -> bool {
        self.flg_off() & 0x8000 != 0
    }

    #[inline]
    pub fn dont_frag(&self) -> bool {
        self.flg_off() & 0x4000 != 0
    }

    #[inline]
    pub fn more_frags(&self) -> bool {
        self.flg_off() & 0x2000 != 0
    }

    /// The fragment offset in bytes (field * 8).
    #[inline]
    pub fn frag_offset(&self) -> u16 {
        (self.flg_off() & 0x1fff) << 3
    }

    /// True if this is a fragment (MF set or non-zero offset).
    #[inline]
    pub fn is_fragment(&self) -> bool {
        self.flg_off() & 0x3fff != 0
    }

    #[inline]
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }

    #[inline]
    pub fn protocol(&self) -> IpProtocol {
        IpProtocol(self.buffer.as_ref()[field::PROTOCOL])
    }

    #[inline]
    pub fn checksum(&self) -> u16 {
        let d = &self.buffer.as_ref()[field::CHECKSUM];
        u16::from_be_bytes([d[0], d[1]])
    }

    #[inline]
    pub fn src_addr(&self) -> Ipv4Addr {
        let d = &self.buffer.as_ref()[field::SRC_ADDR];
        Ipv4Addr::new(d[0], d[1], d[2], d[3])
    }

    #[inline]
    pub fn dst_addr(&self) -> Ipv4Addr {
        let d = &self.buffer.as_ref()[field::DST_ADDR];
        Ipv4Addr::new(d[0], d[1], d[2], d[3])
    }

    /// The source address as raw bytes (for pseudo-header sums).
    #[inline]
    pub fn src_bytes(&self) -> [u8; 4] {
        let d = &self.buffer.as_ref()[field::SRC_ADDR];
        [d[0], d[1], d[2], d[3]]
    }

    /// The destination address as raw bytes.
    #[inline]
    pub fn dst_bytes(&self) -> [u8; 4] {
        let d = &self.buffer.as_ref()[field::DST_ADDR];
        [d[0], d[1], d[2], d[3]]
    }

    /// The options (bytes 20..IHL*4).
    #[inline]
    pub fn options(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..self.header_len()]
    }

    /// The whole header (bytes 0..IHL*4).
    #[inline]
    pub fn header(&self) -> &[u8] {
        &self.buffer.as_ref()[..self.header_len()]
    }

    /// True if the header checksum verifies.
    #[inline]
    pub fn verify_checksum(&self) -> bool {
        checksum::fold(checksum::sum(self.header())) == 0xffff
    }

    /// The payload, up to the total length.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        let d = self.buffer.as_ref();
        &d[self.header_len()..usize::from(self.total_len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    #[inline]
    pub fn set_version(&mut self, v: u8) {
        let d = self.buffer.as_mut();
        d[field::VER_IHL] = (d[field::VER_IHL] & 0x0f) | (v << 4);
    }

    /// Set the header length in bytes (rounded down to a multiple of 4).
    #[inline]
    pub fn set_header_len(&mut self, len: usize) {
        let d = self.buffer.as_mut();
        d[field::VER_IHL] = (d[field::VER_IHL] & 0xf0) | ((len / 4) as u8 & 0x0f);
    }

    #[inline]
    pub fn set_tos(&mut self, tos: u8) {
        self.buffer.as_mut()[field::TOS] = tos;
    }

    #[inline]
    pub fn set_dscp(&mut self, dscp: u8) {
        let d = self.buffer.as_mut();
        d[field::TOS] = (d[field::TOS] & 0x03) | (dscp << 2);
    }

    #[inline]
    pub fn set_ecn(&mut self, ecn: u8) {
        let d = self.buffer.as_mut();
        d[field::TOS] = (d[field::TOS] & 0xfc) | (ecn & 0x03);
    }

    #[inline]
    pub fn set_total_len(&mut self, len: u16) {
        self.buffer.as_mut()[field::LENGTH].copy_from_slice(&len.to_be_bytes());
    }

    #[inline]
    pub fn set_ident(&mut self, v: u16) {
        self.buffer.as_mut()[field::IDENT].copy_from_slice(&v.to_be_bytes());
    }

    #[inline]
    fn set_flg_off(&mut self, v: u16) {
        self.buffer.as_mut()[field::FLG_OFF].copy_from_slice(&v.to_be_bytes());
    }

    /// Clear all flags and the fragment offset.
    #[inline]
    pub fn clear_flags(&mut self) {
        let v = self.flg_off() & 0x1fff;
        self.set_flg_off(v);
    }

    #[inline]
    pub fn set_dont_frag(&mut self, v: bool) {
        let f = (self.flg_off() & !0x4000) | if v { 0x4000 } else { 0 };
        self.set_flg_off(f);
    }

    #[inline]
    pub fn set_more_frags(&mut self, v: bool) {
        let f = (self.flg_off() & !0x2000) | if v { 0x2000 } else { 0 };
        self.set_flg_off(f);
    }

    /// Set the fragment offset in bytes (must be a multiple of 8).
    #[inline]
    pub fn set_frag_offset(&mut self, off: u16) {
        let f = (self.flg_off() & 0xe000) | ((off >> 3) & 0x1fff);
        self.set_flg_off(f);
    }

    #[inline]
    pub fn set_ttl(&mut self, ttl: u8) {
        self.buffer.as_mut()[field::TTL] = ttl;
    }

    #[inline]
    pub fn set_protocol(&mut self, p: IpProtocol) {
        self.buffer.as_mut()[field::PROTOCOL] = p.0;
    }

    #[inline]
    pub fn set_checksum(&mut self, c: u16) {
        self.buffer.as_mut()[field::CHECKSUM].copy_from_slice(&c.to_be_bytes());
    }

    #[inline]
    pub fn set_src_addr(&mut self, a: Ipv4Addr) {
        self.buffer.as_mut()[field::SRC_ADDR].copy_from_slice(&a.octets());
    }

    #[inline]
    pub fn set_dst_addr(&mut self, a: Ipv4Addr) {
        self.buffer.as_mut()[field::DST_ADDR].copy_from_slice(&a.octets());
    }

    /// Compute and store the header checksum (over IHL*4 bytes).
    #[inline]
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let c = checksum::checksum(self.header());
        self.set_checksum(c);
    }

    /// Decrement the TTL by one and update the header checksum incrementally
    /// (RFC 1624 eqn. 3). Returns the new TTL. A TTL of 0 is left alone (and
    /// 0 is returned); the caller checks `ttl() <= 1` first and sends ICMP
    /// Time Exceeded instead of forwarding.
    #[inline(always)]
    pub fn decrement_ttl_incremental(&mut self) -> u8 {
        let d = self.buffer.as_mut();
        let ttl = d[field::TTL];
        if ttl == 0 {
            return 0;
        }
        let old = u16::from_be_bytes([ttl, d[field::PROTOCOL]]);
        let new = old - 0x0100;
        d[field::TTL] = ttl - 1;
        let hc = u16::from_be_bytes([d[field::CHECKSUM.start], d[field::CHECKSUM.start + 1]]);
        let c = checksum::update16(hc, old, new);
        d[field::CHECKSUM].copy_from_slice(&c.to_be_bytes());
        ttl - 1
    }

    /// Set the TOS byte and update the checksum incrementally.
    #[inline]
    pub fn set_tos_incremental(&mut self, tos: u8) {
        let d = self.buffer.as_mut();
        let old = u16::from_be_bytes([d[field::VER_IHL], d[field::TOS]]);
        d[field::TOS] = tos;
        let new = u16::from_be_bytes([d[field::VER_IHL], d[field::TOS]]);
        if old != new {
            let hc = u16::from_be_bytes([d[field::CHECKSUM.start], d[field::CHECKSUM.start + 1]]);
            let c = checksum::update16(hc, old, new);
            d[field::CHECKSUM].copy_from_slice(&c.to_be_bytes());
        }
    }

    /// Set the ECN codepoint (two bits) and update the checksum incrementally.
    /// Use `set_ecn_incremental(ecn::CE)` to mark congestion.
    #[inline]
    pub fn set_ecn_incremental(&mut self, ecn: u8) {
        let tos = (self.tos() & 0xfc) | (ecn & 0x03);
        self.set_tos_incremental(tos);
    }

    /// Set the DSCP (six bits) and update the checksum incrementally.
    #[inline]
    pub fn set_dscp_incremental(&mut self, dscp: u8) {
        let tos = (self.tos() & 0x03) | (dscp << 2);
        self.set_tos_incremental(tos);
    }

    /// Rewrite the destination address and update the header checksum
    /// incrementally. Upper-layer checksums that cover the pseudo-header are
    /// not touched.
    #[inline]
    pub fn set_dst_addr_incremental(&mut self, a: Ipv4Addr) {
        let old = u32::from(self.dst_addr());
        self.set_dst_addr(a);
        let c = checksum::update32(self.checksum(), old, u32::from(a));
        self.set_checksum(c);
    }

    /// Rewrite the source address and update the header checksum incrementally.
    #[inline]
    pub fn set_src_addr_incremental(&mut self, a: Ipv4Addr) {
        let old = u32::from(self.src_addr());
        self.set_src_addr(a);
        let c = checksum::update32(self.checksum(), old, u32::from(a));
        self.set_checksum(c);
    }

    /// The options, mutable.
    #[inline]
    pub fn options_mut(&mut self) -> &mut [u8] {
        let hl = self.header_len();
        &mut self.buffer.as_mut()[HEADER_LEN..hl]
    }

    /// The payload up to the total length, mutable.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let hl = self.header_len();
        let tl = usize::from(self.total_len());
        &mut self.buffer.as_mut()[hl..tl]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Ipv4Packet<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// A high-level representation of an IPv4 header. Options are not
/// represented: `parse` skips them and `emit` writes a 20-byte header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv4Repr {
    pub src_addr: Ipv4Addr,
    pub dst_addr: Ipv4Addr,
    pub protocol: IpProtocol,
    /// The payload length (total length minus header length).
    pub payload_len: usize,
    pub ttl: u8,
    pub dscp: u8,
    pub ecn: u8,
    pub ident: u16,
    pub dont_frag: bool,
    pub more_frags: bool,
    /// Fragment offset in bytes (a multiple of 8).
    pub frag_offset: u16,
}

impl Ipv4Repr {
    /// Parse a packet and verify its header checksum.
    ///
    /// `Unrecognized` if the version is not 4, `Checksum` if the header
    /// checksum fails, `Malformed` if the reserved flag is set; plus the
    /// length errors of [`Ipv4Packet::check_len`].
    pub fn parse<T: AsRef<[u8]>>(packet: &Ipv4Packet<T>) -> Result<Ipv4Repr> {
        packet.check_len()?;
        if packet.version() != 4 {
            return Err(Error::Unrecognized);
        }
        if !packet.verify_checksum() {
            return Err(Error::Checksum);
        }
        Self::parse_fields(packet)
    }

    /// As [`parse`](Self::parse) but without verifying the checksum (for
    /// offloaded or already-verified headers).
    pub fn parse_unverified<T: AsRef<[u8]>>(packet: &Ipv4Packet<T>) -> Result<Ipv4Repr> {
        packet.check_len()?;
        if packet.version() != 4 {
            return Err(Error::Unrecognized);
        }
        Self::parse_fields(packet)
    }

    fn parse_fields<T: AsRef<[u8]>>(packet: &Ipv4Packet<T>) -> Result<Ipv4Repr> {
        if packet.reserved_flag() {
            return Err(Error::Malformed);
        }
        Ok(Ipv4Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            protocol: packet.protocol(),
            payload_len: usize::from(packet.total_len()) - packet.header_len(),
            ttl: packet.ttl(),
            dscp: packet.dscp(),
            ecn: packet.ecn(),
            ident: packet.ident(),
            dont_frag: packet.dont_frag(),
            more_frags: packet.more_frags(),
            frag_offset: packet.frag_offset(),
        })
    }

    /// The emitted header length (always 20).
    #[inline]
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Header plus payload.
    #[inline]
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN + self.payload_len
    }

    /// Write a 20-byte header with a correct checksum. The buffer must hold
    /// at least `header_len()` bytes; `payload_len + 20` must fit in a u16
    /// (the total length is saturated otherwise).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Ipv4Packet<T>) {
        packet.set_version(4);
        packet.set_header_len(HEADER_LEN);
        packet.set_tos((self.dscp << 2) | (self.ecn & 0x03));
        let tl = u16::try_from(self.buffer_len()).unwrap_or(u16::MAX);
        packet.set_total_len(tl);
        packet.set_ident(self.ident);
        packet.set_flg_off(0);
        packet.set_dont_frag(self.dont_frag);
        packet.set_more_frags(self.more_frags);
        packet.set_frag_offset(self.frag_offset);
        packet.set_ttl(self.ttl);
        packet.set_protocol(self.protocol);
        packet.set_src_addr(self.src_addr);
        packet.set_dst_addr(self.dst_addr);
        packet.fill_checksum();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // 192.168.0.1 -> 192.168.0.199, UDP, TTL 64, DF, total 0x73; the
    // well-known example with checksum 0xb861.
    const HDR: [u8; 20] = [
        0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8, 0x00,
        0x01, 0xc0, 0xa8, 0x00, 0xc7,
    ];

    fn packet() -> Vec<u8> {
        let mut v = HDR.to_vec();
        v.resize(0x73, 0xab);
        v
    }

    #[test]
    fn known_answer() {
        let b = packet();
        let p = Ipv4Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.version(), 4);
        assert_eq!(p.header_len(), 20);
        assert_eq!(p.total_len(), 0x73);
        assert!(p.dont_frag());
        assert!(!p.more_frags());
        assert!(!p.is_fragment());
        assert_eq!(p.ttl(), 64);
        assert_eq!(p.protocol(), IpProtocol::UDP);
        assert_eq!(p.checksum(), 0xb861);
        assert!(p.verify_checksum());
        assert_eq!(p.src_addr(), Ipv4Addr::new(192, 168, 0, 1));
        assert_eq!(p.dst_addr(), Ipv4Addr::new(192, 168, 0, 199));
        assert_eq!(p.payload().len(), 0x73 - 20);
        let r = Ipv4Repr::parse(&p).unwrap();
        assert_eq!(r.payload_len, 0x73 - 20);
        let mut out = vec![0u8; 20];
        r.emit(&mut Ipv4Packet::new_unchecked(&mut out[..]));
        assert_eq!(out, HDR);
    }

    #[test]
    fn second_known_answer() {
        // Wikipedia's IPv4 header checksum example: 0xb1e6.
        let h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        let mut b = h.to_vec();
        b.resize(0x73, 0);
        let mut p = Ipv4Packet::new_unchecked(&mut b[..]);
        p.fill_checksum();
        assert_eq!(p.checksum(), 0xb861);
        // 10.0.0.1 -> 10.0.0.2 TTL 1 ICMP total 28, ident 1: hand-computed
        // words 4500+001c+0001+0000+0101+0a00+0001+0a00+0002 = 0x5a21 -> ~ = 0xa5de.
        let mut h2 = [
            0x45, 0x00, 0x00, 0x1c, 0x00, 0x01, 0x00, 0x00, 0x01, 0x01, 0x00, 0x00, 0x0a, 0x00,
            0x00, 0x01, 0x0a, 0x00, 0x00, 0x02, 0, 0, 0, 0, 0, 0, 0, 0,
        ];
        let mut p = Ipv4Packet::new_unchecked(&mut h2[..]);
        p.fill_checksum();
        assert_eq!(p.checksum(), 0xa5de);
    }

    #[test]
    fn errors() {
        let b = packet();
        for n in 0..b.len() {
            assert_eq!(
                Ipv4Packet::new_checked(&b[..n]).unwrap_err(),
                Error::Truncated,
                "n={n}"
            );
        }
        // Buffer longer than total length is fine (padding).
        let mut long = b.clone();
        long.extend_from_slice(&[0; 10]);
        let p = Ipv4Packet::new_checked(&long[..]).unwrap();
        assert_eq!(p.payload().len(), 0x73 - 20);

        let mut bad = b.clone();
        bad[0] = 0x44; // IHL 4
        assert_eq!(
            Ipv4Packet::new_checked(&bad[..]).unwrap_err(),
            Error::BadLength
        );
        let mut bad = b.clone();
        bad[0] = 0x4f; // IHL 15 = 60 bytes, fits; total 0x73 fine
        assert!(Ipv4Packet::new_checked(&bad[..]).is_ok());
        bad[2] = 0;
        bad[3] = 40; // total < header
        assert_eq!(
            Ipv4Packet::new_checked(&bad[..]).unwrap_err(),
            Error::BadLength
        );
        let mut bad = b.clone();
        bad[0] = 0x65;
        let p = Ipv4Packet::new_checked(&bad[..]).unwrap();
        assert_eq!(Ipv4Repr::parse(&p).unwrap_err(), Error::Unrecognized);
        let mut bad = b.clone();
        bad[11] ^= 1;
        let p = Ipv4Packet::new_checked(&bad[..]).unwrap();
        assert_eq!(Ipv4Repr::parse(&p).unwrap_err(), Error::Checksum);
        assert!(Ipv4Repr::parse_unverified(&p).is_ok());
        let mut bad = b.clone();
        bad[6] |= 0x80;
        let mut p = Ipv4Packet::new_unchecked(&mut bad[..]);
        p.fill_checksum();
        assert_eq!(Ipv4Repr::parse(&p).unwrap_err(), Error::Malformed);
    }

    #[test]
    fn options() {
        let mut b = [0u8; 32];
        b[0] = 0x46;
        b[3] = 32;
        b[20..24].copy_from_slice(&[0x01, 0x01, 0x01, 0x00]); // NOP NOP NOP EOL
        let mut p = Ipv4Packet::new_unchecked(&mut b[..]);
        p.fill_checksum();
        let p = Ipv4Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.header_len(), 24);
        assert_eq!(p.options(), &[1, 1, 1, 0]);
        assert_eq!(p.payload().len(), 8);
        assert!(p.verify_checksum());
        assert_eq!(Ipv4Repr::parse(&p).unwrap().payload_len, 8);
    }

    #[test]
    fn ttl_and_ecn_incremental() {
        let mut b = packet();
        let mut p = Ipv4Packet::new_unchecked(&mut b[..]);
        assert_eq!(p.decrement_ttl_incremental(), 63);
        assert_eq!(p.ttl(), 63);
        assert!(p.verify_checksum());
        let inc = p.checksum();
        p.fill_checksum();
        assert_eq!(inc, p.checksum());
        p.set_ecn_incremental(ecn::CE);
        assert_eq!(p.ecn(), ecn::CE);
        assert_eq!(p.dscp(), 0);
        assert!(p.verify_checksum());
        p.set_dscp_incremental(46);
        assert_eq!(p.dscp(), 46);
        assert_eq!(p.ecn(), ecn::CE);
        assert!(p.verify_checksum());
        p.set_ttl(0);
        p.fill_checksum();
        assert_eq!(p.decrement_ttl_incremental(), 0);
        assert!(p.verify_checksum());
        p.set_dst_addr_incremental(Ipv4Addr::new(10, 1, 2, 3));
        assert!(p.verify_checksum());
        p.set_src_addr_incremental(Ipv4Addr::new(255, 255, 0, 0));
        assert!(p.verify_checksum());
    }

    #[test]
    fn flags() {
        let mut b = packet();
        let mut p = Ipv4Packet::new_unchecked(&mut b[..]);
        p.set_more_frags(true);
        p.set_frag_offset(1480);
        assert!(p.dont_frag() && p.more_frags());
        assert_eq!(p.frag_offset(), 1480);
        assert!(p.is_fragment());
        p.set_dont_frag(false);
        assert!(!p.dont_frag());
        assert_eq!(p.frag_offset(), 1480);
        p.clear_flags();
        assert!(!p.more_frags());
        assert_eq!(p.frag_offset(), 1480);
    }

    prop_compose! {
        pub(crate) fn arb_repr()(
            src in any::<u32>(), dst in any::<u32>(), proto in any::<u8>(),
            payload_len in 0usize..200, ttl in any::<u8>(), dscp in 0u8..64, ecn in 0u8..4,
            ident in any::<u16>(), df in any::<bool>(), mf in any::<bool>(), off in 0u16..0x2000,
        ) -> Ipv4Repr {
            Ipv4Repr {
                src_addr: src.into(), dst_addr: dst.into(), protocol: IpProtocol(proto),
                payload_len, ttl, dscp, ecn, ident, dont_frag: df, more_frags: mf,
                frag_offset: off << 3,
            }
        }
    }

    fn emit(r: &Ipv4Repr) -> Vec<u8> {
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut Ipv4Packet::new_unchecked(&mut b[..]));
        b
    }

    proptest! {
        #[test]
        fn roundtrip(r in arb_repr()) {
            let b = emit(&r);
            let p = Ipv4Packet::new_checked(&b[..]).unwrap();
            prop_assert!(p.verify_checksum());
            prop_assert_eq!(Ipv4Repr::parse(&p).unwrap(), r);
        }

        #[test]
        fn truncation_is_error(r in arb_repr()) {
            let b = emit(&r);
            for n in 0..b.len() {
                prop_assert!(Ipv4Packet::new_checked(&b[..n]).is_err());
            }
        }

        #[test]
        fn corrupt_length_fields(r in arb_repr(), ihl in 0u8..16, tl in any::<u16>()) {
            let mut b = emit(&r);
            b[0] = 0x40 | ihl;
            let res = Ipv4Packet::new_checked(&b[..]).and_then(|p| Ipv4Repr::parse(&p));
            if ihl != 5 { prop_assert!(res.is_err()); }
            let mut b = emit(&r);
            let old = u16::from_be_bytes([b[2], b[3]]);
            b[2..4].copy_from_slice(&tl.to_be_bytes());
            let res = Ipv4Packet::new_checked(&b[..]).and_then(|p| Ipv4Repr::parse(&p));
            // 0x0000 and 0xffff are the same one's-complement number.
            if tl != old && tl ^ old != 0xffff { prop_assert!(res.is_err()); }
        }

        #[test]
        fn incremental_equals_full(r in arb_repr(), tos in any::<u8>(), e in 0u8..4, a in any::<u32>()) {
            let mut b = emit(&r);
            let mut p = Ipv4Packet::new_unchecked(&mut b[..]);
            p.decrement_ttl_incremental();
            let inc = p.checksum();
            p.fill_checksum();
            prop_assert_eq!(inc, p.checksum());
            p.set_tos_incremental(tos);
            let inc = p.checksum();
            p.fill_checksum();
            prop_assert_eq!(inc, p.checksum());
            p.set_ecn_incremental(e);
            prop_assert_eq!(p.ecn(), e);
            let inc = p.checksum();
            p.fill_checksum();
            prop_assert_eq!(inc, p.checksum());
            p.set_dst_addr_incremental(a.into());
            let inc = p.checksum();
            p.fill_checksum();
            prop_assert_eq!(inc, p.checksum());
        }

        #[test]
        fn never_panics(data in proptest::collection::vec(any::<u8>(), 0..80)) {
            if let Ok(p) = Ipv4Packet::new_checked(&data[..]) {
                let _ = (p.options().len(), p.payload().len(), p.verify_checksum());
                let _ = Ipv4Repr::parse(&p);
                let _ = Ipv4Repr::parse_unverified(&p);
            }
        }
    }
}
