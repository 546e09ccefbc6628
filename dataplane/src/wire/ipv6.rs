//! IPv6 fixed header (RFC 8200 s.3) and extension headers (s.4): hop-by-hop
//! and destination options (with their TLV options), routing, fragment, and
//! the authentication header (RFC 4302).
//!
//! [`walk_ext_chain`] / [`Ipv6Packet::ext_chain`] walk the chain of
//! extension headers and report the upper-layer protocol and its offset, and
//! where the routing and fragment headers are. The routing header's type and
//! offset are exposed so the SRH parser (`wire::srh`) can take over.

use core::fmt;
use std::net::Ipv6Addr;

use super::{Error, Result};

pub use super::ipv4::{ecn, IpProtocol};

mod field {
    use core::ops::Range;
    // version(4) | traffic class(8) | flow label(20)
    pub const VER_TC_FLOW: Range<usize> = 0..4;
    pub const LENGTH: Range<usize> = 4..6;
    pub const NXT_HDR: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SRC_ADDR: Range<usize> = 8..24;
    pub const DST_ADDR: Range<usize> = 24..40;
}

/// The length of the fixed IPv6 header.
pub const HEADER_LEN: usize = 40;

/// The most extension headers [`walk_ext_chain`] follows before giving up
/// with [`Error::Malformed`] (bounds per-packet work on hostile input).
pub const MAX_EXT_HEADERS: usize = 16;

/// The solicited-node multicast address of `addr` (RFC 4291 s.2.7.1):
/// ff02::1:ffXX:XXXX with the low 24 bits of `addr`.
#[inline]
pub fn solicited_node(addr: &Ipv6Addr) -> Ipv6Addr {
    let o = addr.octets();
    Ipv6Addr::from([
        0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff, o[13], o[14], o[15],
    ])
}

/// A view over an IPv6 packet (fixed header + payload).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ipv6Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv6Packet<T> {
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Ipv6Packet<T> {
        Ipv6Packet { buffer }
    }

    /// Wrap a buffer and check that the fixed header and the payload length
    /// fit. The buffer may be longer (padding); `payload()` stops at the
    /// payload length.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Ipv6Packet<T>> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// `Truncated` if the buffer is shorter than 40 bytes or than
    /// 40 + payload length. (A payload length of 0 is taken literally; jumbo
    /// payloads are not supported.)
    #[inline]
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN || len < HEADER_LEN + usize::from(self.payload_len()) {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    #[inline]
    fn first_word(&self) -> u32 {
        let d = &self.buffer.as_ref()[field::VER_TC_FLOW];
        u32::from_be_bytes([d[0], d[1], d[2], d[3]])
    }

    #[inline]
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[0] >> 4
    }

    /// The traffic class (DSCP << 2 | ECN).
    #[inline]
    pub fn traffic_class(&self) -> u8 {
        (self.first_word() >> 20) as u8
    }

    #[inline]
    pub fn dscp(&self) -> u8 {
        self.traffic_class() >> 2
    }

    #[inline]
    pub fn ecn(&self) -> u8 {
        self.traffic_class() & 0x03
    }

    #[inline]
    pub fn flow_label(&self) -> u32 {
        self.first_word() & 0x000f_ffff
    }

    #[inline]
    pub fn payload_len(&self) -> u16 {
        let d = &self.buffer.as_ref()[field::LENGTH];
        u16::from_be_bytes([d[0], d[1]])
    }

    #[inline]
    pub fn next_header(&self) -> IpProtocol {
        IpProtocol(self.buffer.as_ref()[field::NXT_HDR])
    }

    #[inline]
    pub fn hop_limit(&self) -> u8 {
        self.buffer.as_ref()[field::HOP_LIMIT]
    }

    #[inline]
    pub fn src_addr(&self) -> Ipv6Addr {
        Ipv6Addr::from(self.src_bytes())
    }

    #[inline]
    pub fn dst_addr(&self) -> Ipv6Addr {
        Ipv6Addr::from(self.dst_bytes())
    }

    /// The source address as raw bytes (for pseudo-header sums).
    #[inline]
    pub fn src_bytes(&self) -> [u8; 16] {
        let mut a = [0; 16];
        a.copy_from_slice(&self.buffer.as_ref()[field::SRC_ADDR]);
        a
    }

    /// The destination address as raw bytes.
    #[inline]
    pub fn dst_bytes(&self) -> [u8; 16] {
        let mut a = [0; 16];
        a.copy_from_slice(&self.buffer.as_ref()[field::DST_ADDR]);
        a
    }

    /// The payload (extension headers and upper layer), `payload_len` bytes.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        let end = HEADER_LEN + usize::from(self.payload_len());
        &self.buffer.as_ref()[HEADER_LEN..end]
    }

    /// The fixed header and payload, without any trailing padding.
    #[inline]
    pub fn packet(&self) -> &[u8] {
        let end = HEADER_LEN + usize::from(self.payload_len());
        &self.buffer.as_ref()[..end]
    }

    /// Walk the extension-header chain; offsets in the result are from the
    /// start of the fixed header. See [`walk_ext_chain`].
    #[inline]
    pub fn ext_chain(&self) -> Result<ExtChain> {
        walk_ext_chain(self.next_header(), self.packet(), HEADER_LEN)
    }

    /// The destination address for the upper-layer pseudo-header (UDP,
    /// ICMPv6 checksums): the routing header's final destination while
    /// segments are left, else the IPv6 destination (RFC 8200 s.8.1).
    #[inline]
    pub fn pseudo_dst_addr(&self, chain: &ExtChain) -> Ipv6Addr {
        chain
            .final_destination(self.packet())
            .unwrap_or_else(|| self.dst_addr())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6Packet<T> {
    #[inline]
    fn set_first_word(&mut self, w: u32) {
        self.buffer.as_mut()[field::VER_TC_FLOW].copy_from_slice(&w.to_be_bytes());
    }

    #[inline]
    pub fn set_version(&mut self, v: u8) {
        let w = (self.first_word() & 0x0fff_ffff) | (u32::from(v & 0x0f) << 28);
        self.set_first_word(w);
    }

    /// Set the traffic class byte. IPv6 has no header checksum and the
    /// traffic class is not in any pseudo-header, so nothing else changes.
    #[inline]
    pub fn set_traffic_class(&mut self, tc: u8) {
        let w = (self.first_word() & 0xf00f_ffff) | (u32::from(tc) << 20);
        self.set_first_word(w);
    }

    #[inline]
    pub fn set_dscp(&mut self, dscp: u8) {
        let tc = (self.traffic_class() & 0x03) | (dscp << 2);
        self.set_traffic_class(tc);
    }

    /// Set the ECN codepoint (e.g. `ecn::CE` to mark congestion).
    #[inline]
    pub fn set_ecn(&mut self, e: u8) {
        let tc = (self.traffic_class() & 0xfc) | (e & 0x03);
        self.set_traffic_class(tc);
    }

    #[inline]
    pub fn set_flow_label(&mut self, fl: u32) {
        let w = (self.first_word() & 0xfff0_0000) | (fl & 0x000f_ffff);
        self.set_first_word(w);
    }

    #[inline]
    pub fn set_payload_len(&mut self, len: u16) {
        self.buffer.as_mut()[field::LENGTH].copy_from_slice(&len.to_be_bytes());
    }

    #[inline]
    pub fn set_next_header(&mut self, nh: IpProtocol) {
        self.buffer.as_mut()[field::NXT_HDR] = nh.0;
    }

    #[inline]
    pub fn set_hop_limit(&mut self, hl: u8) {
        self.buffer.as_mut()[field::HOP_LIMIT] = hl;
    }

    /// Decrement the hop limit by one and return the new value. A hop limit
    /// of 0 is left alone (0 is returned); the caller checks
    /// `hop_limit() <= 1` first and sends ICMPv6 Time Exceeded instead.
    #[inline]
    pub fn decrement_hop_limit(&mut self) -> u8 {
        let d = self.buffer.as_mut();
        let h = d[field::HOP_LIMIT].saturating_sub(1);
        d[field::HOP_LIMIT] = h;
        h
    }

    #[inline]
    pub fn set_src_addr(&mut self, a: Ipv6Addr) {
        self.buffer.as_mut()[field::SRC_ADDR].copy_from_slice(&a.octets());
    }

    /// Set the destination address. Upper-layer checksums over the
    /// pseudo-header must be adjusted by the caller (e.g.
    /// `UdpPacket::adjust_checksum(&old, &new)`).
    #[inline]
    pub fn set_dst_addr(&mut self, a: Ipv6Addr) {
        self.buffer.as_mut()[field::DST_ADDR].copy_from_slice(&a.octets());
    }

    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = HEADER_LEN + usize::from(self.payload_len());
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Ipv6Packet<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// A high-level representation of the fixed IPv6 header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv6Repr {
    pub src_addr: Ipv6Addr,
    pub dst_addr: Ipv6Addr,
    /// The first next-header value (an extension header or the upper layer).
    pub next_header: IpProtocol,
    /// Length of everything after the fixed header.
    pub payload_len: usize,
    pub hop_limit: u8,
    pub traffic_class: u8,
    /// 20 bits.
    pub flow_label: u32,
}

impl Ipv6Repr {
    /// Parse the fixed header. `Unrecognized` if the version is not 6.
    pub fn parse<T: AsRef<[u8]>>(packet: &Ipv6Packet<T>) -> Result<Ipv6Repr> {
        packet.check_len()?;
        if packet.version() != 6 {
            return Err(Error::Unrecognized);
        }
        Ok(Ipv6Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            next_header: packet.next_header(),
            payload_len: usize::from(packet.payload_len()),
            hop_limit: packet.hop_limit(),
            traffic_class: packet.traffic_class(),
            flow_label: packet.flow_label(),
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

    /// Write the fixed header. The payload length is saturated at 65535.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Ipv6Packet<T>) {
        packet.set_first_word(0x6000_0000);
        packet.set_traffic_class(self.traffic_class);
        packet.set_flow_label(self.flow_label);
        packet.set_payload_len(u16::try_from(self.payload_len).unwrap_or(u16::MAX));
        packet.set_next_header(self.next_header);
        packet.set_hop_limit(self.hop_limit);
        packet.set_src_addr(self.src_addr);
        packet.set_dst_addr(self.dst_addr);
    }
}

// ---------------------------------------------------------------------------
// Extension headers.

/// True for the next-header values [`walk_ext_chain`] steps over.
#[inline]
pub const fn is_ext_header(nh: IpProtocol) -> bool {
    matches!(nh.0, 0 | 43 | 44 | 51 | 60)
}

/// The generic layout shared by hop-by-hop options, destination options and
/// routing headers: next header, length in 8-octet units not counting the
/// first 8 octets, then data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ipv6ExtHeader<T: AsRef<[u8]>> {
    buffer: T,
}

mod ext_field {
    pub const NXT_HDR: usize = 0;
    pub const LENGTH: usize = 1;
    pub const DATA: usize = 2;
}

impl<T: AsRef<[u8]>> Ipv6ExtHeader<T> {
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Ipv6ExtHeader<T> {
        Ipv6ExtHeader { buffer }
    }

    /// `Truncated` if the buffer is shorter than 8 bytes or than the
    /// header length the length field gives.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Ipv6ExtHeader<T>> {
        let h = Self::new_unchecked(buffer);
        h.check_len()?;
        Ok(h)
    }

    #[inline]
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < 8 || len < self.header_len() {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    #[inline]
    pub fn next_header(&self) -> IpProtocol {
        IpProtocol(self.buffer.as_ref()[ext_field::NXT_HDR])
    }

    /// The raw length field (8-octet units beyond the first 8).
    #[inline]
    pub fn header_len_field(&self) -> u8 {
        self.buffer.as_ref()[ext_field::LENGTH]
    }

    /// The header length in bytes: (field + 1) * 8.
    #[inline]
    pub fn header_len(&self) -> usize {
        (usize::from(self.header_len_field()) + 1) * 8
    }

    /// Bytes 2..header_len (the options, or the routing type-specific part
    /// preceded by routing type and segments left).
    #[inline]
    pub fn data(&self) -> &[u8] {
        &self.buffer.as_ref()[ext_field::DATA..self.header_len()]
    }

    /// For a hop-by-hop or destination options header: its options.
    #[inline]
    pub fn options(&self) -> Ipv6OptionsIter<'_> {
        Ipv6OptionsIter::new(self.data())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6ExtHeader<T> {
    #[inline]
    pub fn set_next_header(&mut self, nh: IpProtocol) {
        self.buffer.as_mut()[ext_field::NXT_HDR] = nh.0;
    }

    #[inline]
    pub fn set_header_len_field(&mut self, v: u8) {
        self.buffer.as_mut()[ext_field::LENGTH] = v;
    }

    #[inline]
    pub fn data_mut(&mut self) -> &mut [u8] {
        let end = self.header_len();
        &mut self.buffer.as_mut()[ext_field::DATA..end]
    }
}

/// One TLV option of a hop-by-hop or destination options header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ipv6Option<'a> {
    /// A single zero byte.
    Pad1,
    /// Type 1; `len` bytes of padding follow the 2-byte header.
    PadN(u8),
    /// Any other option.
    Other { opt_type: u8, data: &'a [u8] },
}

impl Ipv6Option<'_> {
    /// The action when the option is not recognised (RFC 8200 s.4.2): the
    /// two high bits of the type.
    #[inline]
    pub fn unrecognized_action(opt_type: u8) -> u8 {
        opt_type >> 6
    }
}

/// An iterator over TLV options. Yields `Err(Truncated)` once, then stops,
/// if an option overruns the data.
#[derive(Debug, Clone)]
pub struct Ipv6OptionsIter<'a> {
    data: &'a [u8],
    pos: usize,
    failed: bool,
}

impl<'a> Ipv6OptionsIter<'a> {
    #[inline]
    pub fn new(data: &'a [u8]) -> Self {
        Ipv6OptionsIter {
            data,
            pos: 0,
            failed: false,
        }
    }
}

impl<'a> Iterator for Ipv6OptionsIter<'a> {
    type Item = Result<Ipv6Option<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.data.len() {
            return None;
        }
        let rest = &self.data[self.pos..];
        let t = rest[0];
        if t == 0 {
            self.pos += 1;
            return Some(Ok(Ipv6Option::Pad1));
        }
        if rest.len() < 2 || rest.len() < 2 + usize::from(rest[1]) {
            self.failed = true;
            return Some(Err(Error::Truncated));
        }
        let len = usize::from(rest[1]);
        self.pos += 2 + len;
        Some(Ok(if t == 1 {
            Ipv6Option::PadN(rest[1])
        } else {
            Ipv6Option::Other {
                opt_type: t,
                data: &rest[2..2 + len],
            }
        }))
    }
}

/// A hop-by-hop or destination options header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv6OptionsRepr<'a> {
    pub next_header: IpProtocol,
    /// The option bytes (after next header and length), padding included;
    /// `2 + options.len()` must be a multiple of 8.
    pub options: &'a [u8],
}

impl<'a> Ipv6OptionsRepr<'a> {
    /// Parse and validate every option TLV (`Truncated` if one overruns).
    pub fn parse<T: AsRef<[u8]>>(header: &'a Ipv6ExtHeader<T>) -> Result<Ipv6OptionsRepr<'a>> {
        header.check_len()?;
        for o in header.options() {
            o?;
        }
        Ok(Ipv6OptionsRepr {
            next_header: header.next_header(),
            options: header.data(),
        })
    }

    /// `BadLength` unless `2 + options.len()` is a non-zero multiple of 8
    /// no larger than 2048.
    pub fn header_len(&self) -> usize {
        2 + self.options.len()
    }

    pub fn buffer_len(&self) -> usize {
        self.header_len()
    }

    /// Write the header; the buffer must hold `header_len()` bytes and
    /// `header_len()` must be a multiple of 8 (otherwise the length field is
    /// rounded down).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, header: &mut Ipv6ExtHeader<T>) {
        let units = (self.header_len() / 8).saturating_sub(1);
        header.set_next_header(self.next_header);
        header.set_header_len_field(units.min(255) as u8);
        let n = self
            .options
            .len()
            .min(header.buffer.as_ref().len().saturating_sub(2));
        header.buffer.as_mut()[2..2 + n].copy_from_slice(&self.options[..n]);
    }
}

/// A routing header: the generic part (RFC 8200 s.4.4). The SRH (type 4)
/// is parsed further by `wire::srh`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ipv6RoutingHeader<T: AsRef<[u8]>> {
    buffer: T,
}

/// Routing types.
pub mod routing_type {
    /// Deprecated (RFC 5095).
    pub const TYPE0: u8 = 0;
    /// Mobile IPv6 (RFC 6275).
    pub const TYPE2: u8 = 2;
    /// RPL source route (RFC 6554).
    pub const RPL: u8 = 3;
    /// Segment Routing Header (RFC 8754).
    pub const SRH: u8 = 4;
}

impl<T: AsRef<[u8]>> Ipv6RoutingHeader<T> {
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Ipv6RoutingHeader<T> {
        Ipv6RoutingHeader { buffer }
    }

    /// `Truncated` if shorter than 8 bytes or than the length field says.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Ipv6RoutingHeader<T>> {
        let h = Self::new_unchecked(buffer);
        h.check_len()?;
        Ok(h)
    }

    #[inline]
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < 8 || len < self.header_len() {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    #[inline]
    pub fn next_header(&self) -> IpProtocol {
        IpProtocol(self.buffer.as_ref()[0])
    }

    #[inline]
    pub fn header_len_field(&self) -> u8 {
        self.buffer.as_ref()[1]
    }

    #[inline]
    pub fn header_len(&self) -> usize {
        (usize::from(self.header_len_field()) + 1) * 8
    }

    #[inline]
    pub fn routing_type(&self) -> u8 {
        self.buffer.as_ref()[2]
    }

    #[inline]
    pub fn segments_left(&self) -> u8 {
        self.buffer.as_ref()[3]
    }

    /// Bytes 4..header_len.
    #[inline]
    pub fn type_data(&self) -> &[u8] {
        &self.buffer.as_ref()[4..self.header_len()]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6RoutingHeader<T> {
    #[inline]
    pub fn set_next_header(&mut self, nh: IpProtocol) {
        self.buffer.as_mut()[0] = nh.0;
    }

    #[inline]
    pub fn set_header_len_field(&mut self, v: u8) {
        self.buffer.as_mut()[1] = v;
    }

    #[inline]
    pub fn set_routing_type(&mut self, v: u8) {
        self.buffer.as_mut()[2] = v;
    }

    #[inline]
    pub fn set_segments_left(&mut self, v: u8) {
        self.buffer.as_mut()[3] = v;
    }

    #[inline]
    pub fn type_data_mut(&mut self) -> &mut [u8] {
        let end = self.header_len();
        &mut self.buffer.as_mut()[4..end]
    }
}

/// A routing header, generically.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv6RoutingRepr<'a> {
    pub next_header: IpProtocol,
    pub routing_type: u8,
    pub segments_left: u8,
    /// Bytes 4..; `4 + data.len()` must be a multiple of 8.
    pub data: &'a [u8],
}

impl<'a> Ipv6RoutingRepr<'a> {
    pub fn parse<T: AsRef<[u8]>>(h: &'a Ipv6RoutingHeader<T>) -> Result<Ipv6RoutingRepr<'a>> {
        h.check_len()?;
        Ok(Ipv6RoutingRepr {
            next_header: h.next_header(),
            routing_type: h.routing_type(),
            segments_left: h.segments_left(),
            data: h.type_data(),
        })
    }

    pub fn header_len(&self) -> usize {
        4 + self.data.len()
    }

    pub fn buffer_len(&self) -> usize {
        self.header_len()
    }

    /// Write the header into a buffer of at least `header_len()` bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, h: &mut Ipv6RoutingHeader<T>) {
        let units = (self.header_len() / 8).saturating_sub(1);
        h.set_next_header(self.next_header);
        h.set_header_len_field(units.min(255) as u8);
        h.set_routing_type(self.routing_type);
        h.set_segments_left(self.segments_left);
        let n = self
            .data
            .len()
            .min(h.buffer.as_ref().len().saturating_sub(4));
        h.buffer.as_mut()[4..4 + n].copy_from_slice(&self.data[..n]);
    }
}

/// The fragment header (RFC 8200 s.4.5), always 8 bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ipv6FragmentHeader<T: AsRef<[u8]>> {
    buffer: T,
}

/// The length of the fragment header.
pub const FRAGMENT_HEADER_LEN: usize = 8;

impl<T: AsRef<[u8]>> Ipv6FragmentHeader<T> {
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Ipv6FragmentHeader<T> {
        Ipv6FragmentHeader { buffer }
    }

    #[inline]
    pub fn new_checked(buffer: T) -> Result<Ipv6FragmentHeader<T>> {
        let h = Self::new_unchecked(buffer);
        h.check_len()?;
        Ok(h)
    }

    #[inline]
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < FRAGMENT_HEADER_LEN {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    #[inline]
    pub fn next_header(&self) -> IpProtocol {
        IpProtocol(self.buffer.as_ref()[0])
    }

    /// Fragment offset in bytes.
    #[inline]
    pub fn frag_offset(&self) -> u16 {
        let d = self.buffer.as_ref();
        u16::from_be_bytes([d[2], d[3]]) & 0xfff8
    }

    #[inline]
    pub fn more_frags(&self) -> bool {
        self.buffer.as_ref()[3] & 0x01 != 0
    }

    #[inline]
    pub fn ident(&self) -> u32 {
        let d = self.buffer.as_ref();
        u32::from_be_bytes([d[4], d[5], d[6], d[7]])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6FragmentHeader<T> {
    #[inline]
    pub fn set_next_header(&mut self, nh: IpProtocol) {
        self.buffer.as_mut()[0] = nh.0;
    }

    /// Set offset (bytes, multiple of 8) and M flag; clears reserved bits.
    #[inline]
    pub fn set_frag(&mut self, offset: u16, more: bool) {
        let v = (offset & 0xfff8) | u16::from(more);
        let d = self.buffer.as_mut();
        d[1] = 0;
        d[2..4].copy_from_slice(&v.to_be_bytes());
    }

    #[inline]
    pub fn set_ident(&mut self, id: u32) {
        self.buffer.as_mut()[4..8].copy_from_slice(&id.to_be_bytes());
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv6FragmentRepr {
    pub next_header: IpProtocol,
    /// Offset in bytes (multiple of 8).
    pub frag_offset: u16,
    pub more_frags: bool,
    pub ident: u32,
}

impl Ipv6FragmentRepr {
    pub fn parse<T: AsRef<[u8]>>(h: &Ipv6FragmentHeader<T>) -> Result<Ipv6FragmentRepr> {
        h.check_len()?;
        Ok(Ipv6FragmentRepr {
            next_header: h.next_header(),
            frag_offset: h.frag_offset(),
            more_frags: h.more_frags(),
            ident: h.ident(),
        })
    }

    pub const fn header_len(&self) -> usize {
        FRAGMENT_HEADER_LEN
    }

    pub const fn buffer_len(&self) -> usize {
        FRAGMENT_HEADER_LEN
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, h: &mut Ipv6FragmentHeader<T>) {
        h.set_next_header(self.next_header);
        h.set_frag(self.frag_offset, self.more_frags);
        h.set_ident(self.ident);
    }
}

/// The authentication header (RFC 4302): length in 4-octet units minus 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ipv6AuthHeader<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv6AuthHeader<T> {
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Ipv6AuthHeader<T> {
        Ipv6AuthHeader { buffer }
    }

    /// `Truncated` if shorter than 12 bytes or than the length field says;
    /// `BadLength` if the length is not a multiple of 8 (IPv6) or < 12.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Ipv6AuthHeader<T>> {
        let h = Self::new_unchecked(buffer);
        h.check_len()?;
        Ok(h)
    }

    #[inline]
    pub fn check_len(&self) -> Result<()> {
        let d = self.buffer.as_ref();
        if d.len() < 2 {
            return Err(Error::Truncated);
        }
        let hl = self.header_len();
        if hl < 12 || hl & 7 != 0 {
            return Err(Error::BadLength);
        }
        if d.len() < hl {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    #[inline]
    pub fn next_header(&self) -> IpProtocol {
        IpProtocol(self.buffer.as_ref()[0])
    }

    /// Header length in bytes: (field + 2) * 4.
    #[inline]
    pub fn header_len(&self) -> usize {
        (usize::from(self.buffer.as_ref()[1]) + 2) * 4
    }

    #[inline]
    pub fn spi(&self) -> u32 {
        let d = self.buffer.as_ref();
        u32::from_be_bytes([d[4], d[5], d[6], d[7]])
    }

    #[inline]
    pub fn seq_no(&self) -> u32 {
        let d = self.buffer.as_ref();
        u32::from_be_bytes([d[8], d[9], d[10], d[11]])
    }

    /// Integrity check value (bytes 12..header_len).
    #[inline]
    pub fn icv(&self) -> &[u8] {
        &self.buffer.as_ref()[12..self.header_len()]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6AuthHeader<T> {
    #[inline]
    pub fn set_next_header(&mut self, nh: IpProtocol) {
        self.buffer.as_mut()[0] = nh.0;
    }

    /// Set the header length in bytes (multiple of 4, >= 8).
    #[inline]
    pub fn set_header_len(&mut self, len: usize) {
        let d = self.buffer.as_mut();
        d[1] = (len / 4).saturating_sub(2).min(255) as u8;
        d[2] = 0;
        d[3] = 0;
    }

    #[inline]
    pub fn set_spi(&mut self, v: u32) {
        self.buffer.as_mut()[4..8].copy_from_slice(&v.to_be_bytes());
    }

    #[inline]
    pub fn set_seq_no(&mut self, v: u32) {
        self.buffer.as_mut()[8..12].copy_from_slice(&v.to_be_bytes());
    }

    #[inline]
    pub fn icv_mut(&mut self) -> &mut [u8] {
        let end = self.header_len();
        &mut self.buffer.as_mut()[12..end]
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv6AuthRepr<'a> {
    pub next_header: IpProtocol,
    pub spi: u32,
    pub seq_no: u32,
    /// `12 + icv.len()` must be a multiple of 8.
    pub icv: &'a [u8],
}

impl<'a> Ipv6AuthRepr<'a> {
    pub fn parse<T: AsRef<[u8]>>(h: &'a Ipv6AuthHeader<T>) -> Result<Ipv6AuthRepr<'a>> {
        h.check_len()?;
        Ok(Ipv6AuthRepr {
            next_header: h.next_header(),
            spi: h.spi(),
            seq_no: h.seq_no(),
            icv: h.icv(),
        })
    }

    pub fn header_len(&self) -> usize {
        12 + self.icv.len()
    }

    pub fn buffer_len(&self) -> usize {
        self.header_len()
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, h: &mut Ipv6AuthHeader<T>) {
        h.set_next_header(self.next_header);
        h.set_header_len(self.header_len());
        h.set_spi(self.spi);
        h.set_seq_no(self.seq_no);
        let n = self
            .icv
            .len()
            .min(h.buffer.as_ref().len().saturating_sub(12));
        h.buffer.as_mut()[12..12 + n].copy_from_slice(&self.icv[..n]);
    }
}

// ---------------------------------------------------------------------------
// Chain walking.

/// Where the (first) routing header is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RoutingInfo {
    /// Offset of the routing header (same base as [`ExtChain`]).
    pub offset: usize,
    /// Its length in bytes.
    pub len: usize,
    pub routing_type: u8,
    pub segments_left: u8,
}

/// Where the fragment header is and what it says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FragmentInfo {
    pub offset: usize,
    /// Fragment offset in bytes.
    pub frag_offset: u16,
    pub more_frags: bool,
    pub ident: u32,
}

/// The result of walking an extension-header chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ExtChain {
    /// The upper-layer protocol: the first next-header value that is not an
    /// extension header walked over (e.g. UDP, ICMPv6, IPv6/IPv4 for
    /// encapsulation, ESP, No Next Header). For a non-first fragment it is
    /// the fragment header's next header, and no upper-layer header is there.
    pub upper_protocol: IpProtocol,
    /// Offset of the upper-layer header (or of the fragment data).
    pub upper_offset: usize,
    /// The hop-by-hop options header, if any (it is always the first).
    pub hop_by_hop: Option<usize>,
    /// The first routing header, if any.
    pub routing: Option<RoutingInfo>,
    /// The fragment header, if any.
    pub fragment: Option<FragmentInfo>,
    /// Offset of the first destination-options header, if any.
    pub dst_opts: Option<usize>,
    /// Offset of the authentication header, if any.
    pub auth: Option<usize>,
    /// The number of extension headers walked over.
    pub count: usize,
}

impl ExtChain {
    /// True if the packet is a fragment other than the first: the upper-layer
    /// header is not in it.
    #[inline]
    pub fn is_later_fragment(&self) -> bool {
        matches!(self.fragment, Some(f) if f.frag_offset != 0)
    }

    /// The final destination named by the routing header, which upper-layer
    /// checksums use instead of the IPv6 destination (RFC 8200 s.8.1) while
    /// segments are left: the last address of a type 0 header, the home
    /// address of type 2, Segment List[0] of an SRH (type 4). `None` if there
    /// is no routing header, no segment left, another type, or the address
    /// is not in `packet` (the buffer the chain was walked over).
    pub fn final_destination(&self, packet: &[u8]) -> Option<Ipv6Addr> {
        let rh = self.routing?;
        if rh.segments_left == 0 {
            return None;
        }
        let at = match rh.routing_type {
            routing_type::TYPE0 => {
                let n = rh.len.checked_sub(8)? / 16;
                rh.offset + 8 + 16 * n.checked_sub(1)?
            }
            routing_type::TYPE2 | routing_type::SRH => rh.offset + 8,
            _ => return None,
        };
        if at + 16 > rh.offset + rh.len {
            return None;
        }
        let b = packet.get(at..at + 16)?;
        let mut a = [0u8; 16];
        a.copy_from_slice(b);
        Some(Ipv6Addr::from(a))
    }
}

/// The upper-layer protocol of the IPv6 packet `pkt` and where it starts,
/// past its extension headers (an AH among them, not verified: for nodes
/// that only read what a packet says, such as END.C reading a notification
/// through the AH of an authenticated Long-haul CNP). None when the chain
/// does not parse.
pub fn upper_layer(pkt: &[u8]) -> Option<(IpProtocol, usize)> {
    let c = walk_ext_chain(IpProtocol(*pkt.get(6)?), pkt, 40).ok()?;
    Some((c.upper_protocol, c.upper_offset))
}

/// Walk the chain of extension headers in `buf` starting at `start`, where
/// `first` is the next-header value that points at it (the fixed header's).
/// Typically `buf` is the IPv6 packet (fixed header first, without trailing
/// padding) and `start` is 40; every offset returned is an index into `buf`.
///
/// Hop-by-hop, routing, fragment, destination options and AH are walked over;
/// any other value ends the walk. The walk also ends at a non-first fragment.
///
/// * `Truncated` if a header overruns `buf` (or `start > buf.len()`);
/// * `BadLength` for a bad AH length;
/// * `Malformed` if a hop-by-hop header is not the first, if there is more
///   than one fragment header, if an options header's TLVs overrun it, or
///   if there are more than [`MAX_EXT_HEADERS`] headers.
pub fn walk_ext_chain(first: IpProtocol, buf: &[u8], start: usize) -> Result<ExtChain> {
    let mut chain = ExtChain {
        upper_protocol: first,
        upper_offset: start,
        hop_by_hop: None,
        routing: None,
        fragment: None,
        dst_opts: None,
        auth: None,
        count: 0,
    };
    if start > buf.len() {
        return Err(Error::Truncated);
    }
    let mut nh = first;
    let mut off = start;
    while is_ext_header(nh) {
        if chain.count >= MAX_EXT_HEADERS {
            return Err(Error::Malformed);
        }
        let rest = &buf[off..];
        let (next, len) = match nh {
            IpProtocol::HOP_BY_HOP | IpProtocol::IPV6_OPTS => {
                let h = Ipv6ExtHeader::new_checked(rest)?;
                for o in h.options() {
                    if o.is_err() {
                        return Err(Error::Malformed);
                    }
                }
                if nh == IpProtocol::HOP_BY_HOP {
                    if chain.count != 0 {
                        return Err(Error::Malformed);
                    }
                    chain.hop_by_hop = Some(off);
                } else if chain.dst_opts.is_none() {
                    chain.dst_opts = Some(off);
                }
                (h.next_header(), h.header_len())
            }
            IpProtocol::IPV6_ROUTE => {
                let h = Ipv6RoutingHeader::new_checked(rest)?;
                if chain.routing.is_none() {
                    chain.routing = Some(RoutingInfo {
                        offset: off,
                        len: h.header_len(),
                        routing_type: h.routing_type(),
                        segments_left: h.segments_left(),
                    });
                }
                (h.next_header(), h.header_len())
            }
            IpProtocol::IPV6_FRAG => {
                let h = Ipv6FragmentHeader::new_checked(rest)?;
                if chain.fragment.is_some() {
                    return Err(Error::Malformed);
                }
                chain.fragment = Some(FragmentInfo {
                    offset: off,
                    frag_offset: h.frag_offset(),
                    more_frags: h.more_frags(),
                    ident: h.ident(),
                });
                (h.next_header(), FRAGMENT_HEADER_LEN)
            }
            _ => {
                // AH
                let h = Ipv6AuthHeader::new_checked(rest)?;
                if chain.auth.is_none() {
                    chain.auth = Some(off);
                }
                (h.next_header(), h.header_len())
            }
        };
        chain.count += 1;
        off += len;
        nh = next;
        if chain.is_later_fragment() {
            break;
        }
    }
    chain.upper_protocol = nh;
    chain.upper_offset = off;
    Ok(chain)
}

impl fmt::Display for Ipv6Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "IPv6 src={} dst={} nxt={} len={} hl={}",
            self.src_addr, self.dst_addr, self.next_header, self.payload_len, self.hop_limit
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // 2001:db8::1 -> 2001:db8::2, TC 0xb8 (EF), flow 0x12345, HBH(PadN 4)
    // -> Routing type 4 (SL 1, 1 segment) -> Frag(off 0, M, id 0xdeadbeef)
    // -> DstOpts(Pad1 x6) -> UDP(8 bytes).
    fn sample() -> Vec<u8> {
        let mut v = vec![
            0x6b, 0x81, 0x23, 0x45, 0x00, 0x00, 0x00, 0x40, // ver/tc/flow, plen, HBH, hl 64
        ];
        v.extend_from_slice(&"2001:db8::1".parse::<Ipv6Addr>().unwrap().octets());
        v.extend_from_slice(&"2001:db8::2".parse::<Ipv6Addr>().unwrap().octets());
        // HBH: next = routing (43), len 0, PadN(4)
        v.extend_from_slice(&[43, 0, 1, 4, 0, 0, 0, 0]);
        // Routing: next = frag (44), len 2 (24 bytes), type 4, SL 1, then 4 bytes + 16
        v.extend_from_slice(&[44, 2, 4, 1, 0, 0, 0, 0]);
        v.extend_from_slice(&"fc00::9".parse::<Ipv6Addr>().unwrap().octets());
        // Frag: next = dst opts (60), off 0, M=1, id
        v.extend_from_slice(&[60, 0, 0x00, 0x01, 0xde, 0xad, 0xbe, 0xef]);
        // DstOpts: next UDP, len 0, 6 x Pad1
        v.extend_from_slice(&[17, 0, 0, 0, 0, 0, 0, 0]);
        // UDP
        v.extend_from_slice(&[0x12, 0xb7, 0x12, 0xb7, 0x00, 0x08, 0x00, 0x00]);
        let plen = (v.len() - 40) as u16;
        v[4..6].copy_from_slice(&plen.to_be_bytes());
        v
    }

    #[test]
    fn fixed_header() {
        let b = sample();
        let p = Ipv6Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.version(), 6);
        assert_eq!(p.traffic_class(), 0xb8);
        assert_eq!(p.dscp(), 46);
        assert_eq!(p.ecn(), 0);
        assert_eq!(p.flow_label(), 0x12345);
        assert_eq!(usize::from(p.payload_len()), b.len() - 40);
        assert_eq!(p.next_header(), IpProtocol::HOP_BY_HOP);
        assert_eq!(p.hop_limit(), 64);
        assert_eq!(p.src_addr(), "2001:db8::1".parse::<Ipv6Addr>().unwrap());
        assert_eq!(p.dst_addr(), "2001:db8::2".parse::<Ipv6Addr>().unwrap());
        let r = Ipv6Repr::parse(&p).unwrap();
        let mut out = [0u8; 40];
        r.emit(&mut Ipv6Packet::new_unchecked(&mut out[..]));
        assert_eq!(out[..], b[..40]);
    }

    #[test]
    fn chain() {
        let b = sample();
        let p = Ipv6Packet::new_checked(&b[..]).unwrap();
        let c = p.ext_chain().unwrap();
        assert_eq!(c.upper_protocol, IpProtocol::UDP);
        assert_eq!(c.upper_offset, 40 + 8 + 24 + 8 + 8);
        assert_eq!(c.hop_by_hop, Some(40));
        assert_eq!(
            c.routing,
            Some(RoutingInfo {
                offset: 48,
                len: 24,
                routing_type: routing_type::SRH,
                segments_left: 1
            })
        );
        assert_eq!(
            c.fragment,
            Some(FragmentInfo {
                offset: 72,
                frag_offset: 0,
                more_frags: true,
                ident: 0xdeadbeef
            })
        );
        assert_eq!(c.dst_opts, Some(80));
        assert_eq!(c.count, 4);
        assert!(!c.is_later_fragment());

        let rh = Ipv6RoutingHeader::new_checked(&b[48..]).unwrap();
        assert_eq!(rh.header_len(), 24);
        assert_eq!(rh.type_data().len(), 20);
        let hbh = Ipv6ExtHeader::new_checked(&b[40..]).unwrap();
        let opts: Vec<_> = hbh.options().collect();
        assert_eq!(opts, vec![Ok(Ipv6Option::PadN(4))]);
        let d = Ipv6ExtHeader::new_checked(&b[80..]).unwrap();
        assert_eq!(d.options().count(), 6);
    }

    #[test]
    fn chain_errors() {
        let b = sample();
        // Truncate the IPv6 payload at every point inside the chain.
        for n in 40..88 {
            let mut t = b[..n].to_vec();
            let plen = (n - 40) as u16;
            t[4..6].copy_from_slice(&plen.to_be_bytes());
            let p = Ipv6Packet::new_checked(&t[..]).unwrap();
            assert_eq!(p.ext_chain().unwrap_err(), Error::Truncated, "n={n}");
        }
        // Routing length overrunning.
        let mut t = b.clone();
        t[49] = 200;
        let p = Ipv6Packet::new_checked(&t[..]).unwrap();
        assert_eq!(p.ext_chain().unwrap_err(), Error::Truncated);
        // HBH not first: make dst opts' next header HBH.
        let mut t = b.clone();
        t[80] = 0;
        t.truncate(88);
        t.extend_from_slice(&[17, 0, 1, 4, 0, 0, 0, 0]);
        let plen = (t.len() - 40) as u16;
        t[4..6].copy_from_slice(&plen.to_be_bytes());
        let p = Ipv6Packet::new_checked(&t[..]).unwrap();
        assert_eq!(p.ext_chain().unwrap_err(), Error::Malformed);
        // Option overrunning its header.
        let mut t = b.clone();
        t[43] = 5;
        let p = Ipv6Packet::new_checked(&t[..]).unwrap();
        assert_eq!(p.ext_chain().unwrap_err(), Error::Malformed);
        // Loop of dst opts headers beyond the limit.
        let mut t = b[..40].to_vec();
        t[6] = 60;
        for _ in 0..MAX_EXT_HEADERS + 1 {
            t.extend_from_slice(&[60, 0, 1, 4, 0, 0, 0, 0]);
        }
        let plen = (t.len() - 40) as u16;
        t[4..6].copy_from_slice(&plen.to_be_bytes());
        let p = Ipv6Packet::new_checked(&t[..]).unwrap();
        assert_eq!(p.ext_chain().unwrap_err(), Error::Malformed);
        // Two fragment headers.
        let mut t = b[..40].to_vec();
        t[6] = 44;
        t.extend_from_slice(&[44, 0, 0, 1, 0, 0, 0, 1]);
        t.extend_from_slice(&[17, 0, 0, 1, 0, 0, 0, 1]);
        let plen = (t.len() - 40) as u16;
        t[4..6].copy_from_slice(&plen.to_be_bytes());
        let p = Ipv6Packet::new_checked(&t[..]).unwrap();
        assert_eq!(p.ext_chain().unwrap_err(), Error::Malformed);
        assert_eq!(
            walk_ext_chain(IpProtocol::UDP, &t, t.len() + 1).unwrap_err(),
            Error::Truncated
        );
    }

    #[test]
    fn final_destination() {
        let b = sample();
        let p = Ipv6Packet::new_checked(&b[..]).unwrap();
        let c = p.ext_chain().unwrap();
        // SRH with SL 1: Segment List[0].
        assert_eq!(
            c.final_destination(p.packet()),
            Some("fc00::9".parse().unwrap())
        );
        assert_eq!(
            p.pseudo_dst_addr(&c),
            "fc00::9".parse::<Ipv6Addr>().unwrap()
        );
        let mut t = b.clone();
        t[51] = 0; // SL 0: the IPv6 destination is final
        let p = Ipv6Packet::new_checked(&t[..]).unwrap();
        let c = p.ext_chain().unwrap();
        assert_eq!(c.final_destination(p.packet()), None);
        assert_eq!(p.pseudo_dst_addr(&c), p.dst_addr());
        // Type 0 with two addresses: the last one.
        let mut t = b[..40].to_vec();
        t[6] = 43;
        t.extend_from_slice(&[17, 4, 0, 2, 0, 0, 0, 0]);
        t.extend_from_slice(&"2001:db8::a".parse::<Ipv6Addr>().unwrap().octets());
        t.extend_from_slice(&"2001:db8::b".parse::<Ipv6Addr>().unwrap().octets());
        let plen = (t.len() - 40) as u16;
        t[4..6].copy_from_slice(&plen.to_be_bytes());
        let p = Ipv6Packet::new_checked(&t[..]).unwrap();
        let c = p.ext_chain().unwrap();
        assert_eq!(
            c.final_destination(p.packet()),
            Some("2001:db8::b".parse().unwrap())
        );
        // Type 0 with no address, and an unknown type: none.
        t[41] = 0;
        t.truncate(48);
        t[4..6].copy_from_slice(&8u16.to_be_bytes());
        let p = Ipv6Packet::new_checked(&t[..]).unwrap();
        assert_eq!(p.ext_chain().unwrap().final_destination(p.packet()), None);
        t[42] = 3;
        let p = Ipv6Packet::new_checked(&t[..]).unwrap();
        assert_eq!(p.ext_chain().unwrap().final_destination(p.packet()), None);
    }

    #[test]
    fn later_fragment_stops() {
        let mut t = sample()[..40].to_vec();
        t[6] = 44;
        // Frag offset 1480, next = routing (would be garbage), then junk.
        t.extend_from_slice(&[43, 0, 0x05, 0xc8, 0, 0, 0, 7]);
        t.extend_from_slice(&[0xff; 3]);
        let plen = (t.len() - 40) as u16;
        t[4..6].copy_from_slice(&plen.to_be_bytes());
        let c = Ipv6Packet::new_checked(&t[..])
            .unwrap()
            .ext_chain()
            .unwrap();
        assert!(c.is_later_fragment());
        assert_eq!(c.upper_protocol, IpProtocol::IPV6_ROUTE);
        assert_eq!(c.upper_offset, 48);
        assert_eq!(c.fragment.unwrap().frag_offset, 1480);
    }

    #[test]
    fn auth_header() {
        let mut t = sample()[..40].to_vec();
        t[6] = 51;
        // AH: next UDP, len 4 -> (4+2)*4 = 24 bytes, SPI 0x100, seq 5, ICV 12 bytes.
        t.extend_from_slice(&[17, 4, 0, 0, 0, 0, 1, 0, 0, 0, 0, 5]);
        t.extend_from_slice(&[0xaa; 12]);
        t.extend_from_slice(&[0; 8]);
        let plen = (t.len() - 40) as u16;
        t[4..6].copy_from_slice(&plen.to_be_bytes());
        let c = Ipv6Packet::new_checked(&t[..])
            .unwrap()
            .ext_chain()
            .unwrap();
        assert_eq!(c.upper_protocol, IpProtocol::UDP);
        assert_eq!(c.upper_offset, 64);
        assert_eq!(c.auth, Some(40));
        let ah = Ipv6AuthHeader::new_checked(&t[40..]).unwrap();
        assert_eq!(ah.spi(), 0x100);
        assert_eq!(ah.seq_no(), 5);
        assert_eq!(ah.icv(), &[0xaa; 12]);
        // AH length of 4-octet but not 8-octet multiple is refused in IPv6.
        t[41] = 3;
        assert_eq!(
            Ipv6AuthHeader::new_checked(&t[40..]).unwrap_err(),
            Error::BadLength
        );
        assert_eq!(
            Ipv6Packet::new_checked(&t[..])
                .unwrap()
                .ext_chain()
                .unwrap_err(),
            Error::BadLength
        );
    }

    #[test]
    fn errors() {
        let b = sample();
        for n in 0..b.len() {
            assert_eq!(
                Ipv6Packet::new_checked(&b[..n]).unwrap_err(),
                Error::Truncated
            );
        }
        let mut t = b.clone();
        t[0] = 0x4b;
        let p = Ipv6Packet::new_checked(&t[..]).unwrap();
        assert_eq!(Ipv6Repr::parse(&p).unwrap_err(), Error::Unrecognized);
    }

    #[test]
    fn setters() {
        let mut b = sample();
        let mut p = Ipv6Packet::new_unchecked(&mut b[..]);
        p.set_ecn(ecn::CE);
        assert_eq!(p.ecn(), ecn::CE);
        assert_eq!(p.dscp(), 46);
        assert_eq!(p.flow_label(), 0x12345);
        assert_eq!(p.version(), 6);
        p.set_dscp(10);
        assert_eq!(p.traffic_class(), (10 << 2) | 3);
        assert_eq!(p.flow_label(), 0x12345);
        p.set_flow_label(0xfffff);
        assert_eq!(p.traffic_class(), (10 << 2) | 3);
        assert_eq!(p.decrement_hop_limit(), 63);
        p.set_hop_limit(0);
        assert_eq!(p.decrement_hop_limit(), 0);
        assert_eq!(b[0..4], [0x62, 0xbf, 0xff, 0xff]);
    }

    #[test]
    fn solicited_node_addr() {
        let a: Ipv6Addr = "2001:db8::abcd:1234:5678".parse().unwrap();
        assert_eq!(
            solicited_node(&a),
            "ff02::1:ff34:5678".parse::<Ipv6Addr>().unwrap()
        );
    }

    #[test]
    fn ext_reprs() {
        let opts = [1u8, 4, 0, 0, 0, 0];
        let r = Ipv6OptionsRepr {
            next_header: IpProtocol::UDP,
            options: &opts,
        };
        let mut b = [0u8; 8];
        r.emit(&mut Ipv6ExtHeader::new_unchecked(&mut b[..]));
        assert_eq!(b, [17, 0, 1, 4, 0, 0, 0, 0]);
        let h = Ipv6ExtHeader::new_checked(&b[..]).unwrap();
        assert_eq!(Ipv6OptionsRepr::parse(&h).unwrap(), r);
        // An option overrunning the header is refused.
        let bad = [17u8, 0, 1, 5, 0, 0, 0, 0];
        let h = Ipv6ExtHeader::new_checked(&bad[..]).unwrap();
        assert_eq!(Ipv6OptionsRepr::parse(&h).unwrap_err(), Error::Truncated);

        let fr = Ipv6FragmentRepr {
            next_header: IpProtocol::UDP,
            frag_offset: 8,
            more_frags: false,
            ident: 9,
        };
        let mut b = [0xffu8; 8];
        fr.emit(&mut Ipv6FragmentHeader::new_unchecked(&mut b[..]));
        assert_eq!(b, [17, 0, 0, 8, 0, 0, 0, 9]);
    }

    fn arb_addr() -> impl Strategy<Value = Ipv6Addr> {
        any::<[u8; 16]>().prop_map(Ipv6Addr::from)
    }

    prop_compose! {
        pub(crate) fn arb_repr()(
            src in arb_addr(), dst in arb_addr(), nh in any::<u8>(), payload_len in 0usize..200,
            hop_limit in any::<u8>(), tc in any::<u8>(), fl in 0u32..0x10_0000,
        ) -> Ipv6Repr {
            Ipv6Repr { src_addr: src, dst_addr: dst, next_header: IpProtocol(nh), payload_len,
                       hop_limit, traffic_class: tc, flow_label: fl }
        }
    }

    /// One extension header for building chains: (kind, bytes without next header).
    fn arb_ext() -> impl Strategy<Value = (u8, Vec<u8>)> {
        prop_oneof![
            (0u8..4).prop_map(|units| (60u8, {
                let mut v = vec![units];
                let n = usize::from(units) * 8 + 6;
                v.push(1);
                v.push((n - 2) as u8);
                v.resize(n + 1, 0);
                v
            })),
            (0u8..3, any::<u8>(), any::<u8>()).prop_map(|(units, t, sl)| (43u8, {
                let mut v = vec![units, t, sl];
                v.resize(usize::from(units) * 8 + 7, 0x5a);
                v
            })),
            (1u8..4).prop_map(|u| (51u8, {
                let l = (u as usize) * 8 + 8; // AH length multiple of 8, >= 16
                let mut v = vec![(l / 4 - 2) as u8, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2];
                v.resize(l - 1, 0x77);
                v
            })),
        ]
    }

    fn build_chain(exts: &[(u8, Vec<u8>)], hbh: bool, upper: u8, tail: usize) -> (Vec<u8>, u8) {
        let mut kinds: Vec<u8> = Vec::new();
        let mut bodies: Vec<Vec<u8>> = Vec::new();
        if hbh {
            kinds.push(0);
            bodies.push(vec![0, 1, 4, 0, 0, 0, 0]);
        }
        for (k, b) in exts {
            kinds.push(*k);
            bodies.push(b.clone());
        }
        let mut out = Vec::new();
        for (i, b) in bodies.iter().enumerate() {
            let next = kinds.get(i + 1).copied().unwrap_or(upper);
            out.push(next);
            out.extend_from_slice(b);
        }
        out.resize(out.len() + tail, 0xee);
        (out, kinds.first().copied().unwrap_or(upper))
    }

    proptest! {
        #[test]
        fn roundtrip(r in arb_repr()) {
            let mut b = vec![0u8; r.buffer_len()];
            r.emit(&mut Ipv6Packet::new_unchecked(&mut b[..]));
            let p = Ipv6Packet::new_checked(&b[..]).unwrap();
            prop_assert_eq!(Ipv6Repr::parse(&p).unwrap(), r);
        }

        #[test]
        fn truncation_is_error(r in arb_repr()) {
            let mut b = vec![0u8; r.buffer_len()];
            r.emit(&mut Ipv6Packet::new_unchecked(&mut b[..]));
            for n in 0..b.len() {
                prop_assert_eq!(Ipv6Packet::new_checked(&b[..n]).unwrap_err(), Error::Truncated);
            }
        }

        #[test]
        fn corrupt_payload_len(r in arb_repr(), len in any::<u16>()) {
            let mut b = vec![0u8; r.buffer_len()];
            r.emit(&mut Ipv6Packet::new_unchecked(&mut b[..]));
            b[4..6].copy_from_slice(&len.to_be_bytes());
            let res = Ipv6Packet::new_checked(&b[..]);
            prop_assert_eq!(res.is_err(), usize::from(len) > r.payload_len);
        }

        #[test]
        fn chain_walk(exts in proptest::collection::vec(arb_ext(), 0..6), hbh in any::<bool>(),
                      upper in prop_oneof![Just(17u8), Just(58u8), Just(6u8), Just(59u8), Just(41u8)],
                      tail in 0usize..16) {
            let (chain, first) = build_chain(&exts, hbh, upper, tail);
            let expected_off = chain.len() - tail;
            let c = walk_ext_chain(IpProtocol(first), &chain, 0).unwrap();
            prop_assert_eq!(c.upper_protocol, IpProtocol(upper));
            prop_assert_eq!(c.upper_offset, expected_off);
            prop_assert_eq!(c.count, exts.len() + usize::from(hbh));
            prop_assert_eq!(c.hop_by_hop.is_some(), hbh);
            prop_assert_eq!(c.routing.is_some(), exts.iter().any(|e| e.0 == 43));
            // Truncating inside the chain is always an error.
            for n in 0..expected_off {
                prop_assert!(walk_ext_chain(IpProtocol(first), &chain[..n], 0).is_err());
            }
        }

        #[test]
        fn chain_corrupt_length(exts in proptest::collection::vec(arb_ext(), 1..5), which in any::<prop::sample::Index>(), v in any::<u8>()) {
            let (mut chain, first) = build_chain(&exts, false, 17, 0);
            // Find header boundaries and corrupt one length byte.
            let mut off = 0;
            let mut starts = Vec::new();
            for (k, b) in &exts {
                starts.push((off, *k));
                off += b.len() + 1;
            }
            let (s, _k) = starts[which.index(starts.len())];
            let mut c1 = chain.clone();
            c1[s + 1] = v;
            if let Ok(c) = walk_ext_chain(IpProtocol(first), &c1, 0) {
                prop_assert!(c.upper_offset <= c1.len());
            }
            // Growing the last header's length makes it overrun: always an error.
            let (s, _k) = *starts.last().unwrap();
            let old = chain[s + 1];
            chain[s + 1] = v;
            let res = walk_ext_chain(IpProtocol(first), &chain, 0);
            if v > old {
                prop_assert!(res.is_err());
            }
        }

        #[test]
        fn never_panics(data in proptest::collection::vec(any::<u8>(), 0..120), nh in any::<u8>()) {
            let _ = walk_ext_chain(IpProtocol(nh), &data, 0);
            let _ = walk_ext_chain(IpProtocol(nh), &data, data.len());
            if let Ok(c) = walk_ext_chain(IpProtocol(nh), &data, 0) {
                let _ = c.final_destination(&data);
            }
            if let Ok(p) = Ipv6Packet::new_checked(&data[..]) {
                let _ = (p.payload().len(), Ipv6Repr::parse(&p));
                if let Ok(c) = p.ext_chain() {
                    let _ = p.pseudo_dst_addr(&c);
                }
            }
            if let Ok(h) = Ipv6ExtHeader::new_checked(&data[..]) {
                let _ = Ipv6OptionsRepr::parse(&h);
            }
            if let Ok(h) = Ipv6RoutingHeader::new_checked(&data[..]) {
                let _ = Ipv6RoutingRepr::parse(&h);
            }
            if let Ok(h) = Ipv6AuthHeader::new_checked(&data[..]) {
                let _ = Ipv6AuthRepr::parse(&h);
            }
        }
    }
}
