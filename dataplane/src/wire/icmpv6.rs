//! ICMPv6 (RFC 4443) and the Neighbor Discovery messages the router needs
//! (RFC 4861): router solicitation, neighbor solicitation and advertisement
//! with the source/target link-layer address options.
//!
//! The checksum covers the IPv6 pseudo-header (upper-layer length = the
//! whole buffer given to the view, next header 58) and the message. With a
//! routing header that has segments left, the destination to pass is the
//! final one (`Ipv6Packet::pseudo_dst_addr`, RFC 8200 s.8.1).
//!
//! Other message types (e.g. the Long-haul CNP or FANN types of
//! `wire::params`) are built and read through the generic accessors:
//! `msg_type`/`msg_code`/`rest_of_header`/`body`/`data` and their setters,
//! `fill_checksum`/`verify_checksum`, or [`Icmpv6Repr::Other`].

use core::fmt;
use std::net::Ipv6Addr;

use super::checksum;
use super::ethernet::MacAddr;
use super::ipv4::IpProtocol;
use super::{Error, Result};

mod field {
    use core::ops::Range;
    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const CHECKSUM: Range<usize> = 2..4;
    pub const REST: Range<usize> = 4..8;
    pub const ECHO_IDENT: Range<usize> = 4..6;
    pub const ECHO_SEQNO: Range<usize> = 6..8;
    pub const DATA: usize = 8;
    // Neighbor solicitation / advertisement.
    pub const NA_FLAGS: usize = 4;
    pub const TARGET: Range<usize> = 8..24;
    pub const NS_NA_OPTS: usize = 24;
    // Router solicitation.
    pub const RS_OPTS: usize = 8;
}

/// The length of the ICMPv6 header (type, code, checksum, 4 more bytes).
pub const HEADER_LEN: usize = 8;
/// The length of an NS or NA without options.
pub const ND_NS_NA_LEN: usize = 24;
/// The length of a link-layer address option for Ethernet.
pub const LLADDR_OPT_LEN: usize = 8;
/// The minimum IPv6 MTU (RFC 8200): an ICMPv6 error must not make the
/// invoking packet exceed it.
pub const MIN_MTU: usize = 1280;

/// An ICMPv6 message type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Icmpv6Message(pub u8);

impl Icmpv6Message {
    pub const DST_UNREACHABLE: Icmpv6Message = Icmpv6Message(1);
    pub const PKT_TOO_BIG: Icmpv6Message = Icmpv6Message(2);
    pub const TIME_EXCEEDED: Icmpv6Message = Icmpv6Message(3);
    pub const PARAM_PROBLEM: Icmpv6Message = Icmpv6Message(4);
    pub const ECHO_REQUEST: Icmpv6Message = Icmpv6Message(128);
    pub const ECHO_REPLY: Icmpv6Message = Icmpv6Message(129);
    pub const ROUTER_SOLICIT: Icmpv6Message = Icmpv6Message(133);
    pub const ROUTER_ADVERT: Icmpv6Message = Icmpv6Message(134);
    pub const NEIGHBOR_SOLICIT: Icmpv6Message = Icmpv6Message(135);
    pub const NEIGHBOR_ADVERT: Icmpv6Message = Icmpv6Message(136);
    pub const REDIRECT: Icmpv6Message = Icmpv6Message(137);

    /// Error messages are types 0..=127 (RFC 4443 s.2.1).
    #[inline]
    pub const fn is_error(self) -> bool {
        self.0 < 128
    }

    /// Neighbor Discovery messages (133..=137).
    #[inline]
    pub const fn is_ndisc(self) -> bool {
        matches!(self.0, 133..=137)
    }
}

impl fmt::Display for Icmpv6Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Icmpv6Message::DST_UNREACHABLE => f.write_str("destination unreachable"),
            Icmpv6Message::PKT_TOO_BIG => f.write_str("packet too big"),
            Icmpv6Message::TIME_EXCEEDED => f.write_str("time exceeded"),
            Icmpv6Message::PARAM_PROBLEM => f.write_str("parameter problem"),
            Icmpv6Message::ECHO_REQUEST => f.write_str("echo request"),
            Icmpv6Message::ECHO_REPLY => f.write_str("echo reply"),
            Icmpv6Message::ROUTER_SOLICIT => f.write_str("router solicitation"),
            Icmpv6Message::ROUTER_ADVERT => f.write_str("router advertisement"),
            Icmpv6Message::NEIGHBOR_SOLICIT => f.write_str("neighbor solicitation"),
            Icmpv6Message::NEIGHBOR_ADVERT => f.write_str("neighbor advertisement"),
            Icmpv6Message::REDIRECT => f.write_str("redirect"),
            Icmpv6Message(v) => write!(f, "type {v}"),
        }
    }
}

/// Destination unreachable codes (RFC 4443 s.3.1).
pub mod unreachable {
    pub const NO_ROUTE: u8 = 0;
    pub const ADMIN_PROHIBITED: u8 = 1;
    pub const BEYOND_SCOPE: u8 = 2;
    pub const ADDR_UNREACHABLE: u8 = 3;
    pub const PORT_UNREACHABLE: u8 = 4;
    pub const FAILED_POLICY: u8 = 5;
    pub const REJECT_ROUTE: u8 = 6;
    pub const SRC_ROUTING_HEADER: u8 = 7;
}

/// Time exceeded codes (RFC 4443 s.3.3).
pub mod time_exceeded {
    pub const HOP_LIMIT: u8 = 0;
    pub const REASSEMBLY: u8 = 1;
}

/// Parameter problem codes (RFC 4443 s.3.4).
pub mod param_problem {
    pub const ERRONEOUS_FIELD: u8 = 0;
    pub const UNRECOGNIZED_NEXT_HEADER: u8 = 1;
    pub const UNRECOGNIZED_OPTION: u8 = 2;
}

/// Neighbor Discovery option types (RFC 4861 s.4.6).
pub mod nd_option {
    pub const SOURCE_LLADDR: u8 = 1;
    pub const TARGET_LLADDR: u8 = 2;
    pub const PREFIX_INFO: u8 = 3;
    pub const REDIRECTED_HDR: u8 = 4;
    pub const MTU: u8 = 5;
}

/// Neighbor advertisement flags (byte 4).
pub mod na_flags {
    pub const ROUTER: u8 = 0x80;
    pub const SOLICITED: u8 = 0x40;
    pub const OVERRIDE: u8 = 0x20;
}

/// The partial sum of the ICMPv6 pseudo-header for a message of `len` bytes.
#[inline]
fn pseudo(src: &Ipv6Addr, dst: &Ipv6Addr, len: usize) -> u32 {
    checksum::pseudo_v6(
        &src.octets(),
        &dst.octets(),
        IpProtocol::ICMPV6.0,
        len as u32,
    )
}

/// A view over an ICMPv6 message (the whole buffer is the message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Icmpv6Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Icmpv6Packet<T> {
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Icmpv6Packet<T> {
        Icmpv6Packet { buffer }
    }

    /// `Truncated` if shorter than the 8-byte header, or for NS/NA shorter
    /// than 24 bytes (so that `target_addr()` cannot panic).
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Icmpv6Packet<T>> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    #[inline]
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let t = self.msg_type();
        if (t == Icmpv6Message::NEIGHBOR_SOLICIT || t == Icmpv6Message::NEIGHBOR_ADVERT)
            && len < ND_NS_NA_LEN
        {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    #[inline]
    pub fn msg_type(&self) -> Icmpv6Message {
        Icmpv6Message(self.buffer.as_ref()[field::TYPE])
    }

    #[inline]
    pub fn msg_code(&self) -> u8 {
        self.buffer.as_ref()[field::CODE]
    }

    #[inline]
    pub fn checksum(&self) -> u16 {
        let d = &self.buffer.as_ref()[field::CHECKSUM];
        u16::from_be_bytes([d[0], d[1]])
    }

    /// Bytes 4..8 as a word (MTU of packet too big, pointer of parameter
    /// problem, identifier/sequence of echo, flags of NA).
    #[inline]
    pub fn rest_of_header(&self) -> u32 {
        let d = &self.buffer.as_ref()[field::REST];
        u32::from_be_bytes([d[0], d[1], d[2], d[3]])
    }

    #[inline]
    pub fn echo_ident(&self) -> u16 {
        let d = &self.buffer.as_ref()[field::ECHO_IDENT];
        u16::from_be_bytes([d[0], d[1]])
    }

    #[inline]
    pub fn echo_seq_no(&self) -> u16 {
        let d = &self.buffer.as_ref()[field::ECHO_SEQNO];
        u16::from_be_bytes([d[0], d[1]])
    }

    /// The MTU of a packet too big message.
    #[inline]
    pub fn mtu(&self) -> u32 {
        self.rest_of_header()
    }

    /// The pointer of a parameter problem message.
    #[inline]
    pub fn pointer(&self) -> u32 {
        self.rest_of_header()
    }

    /// The NA flag byte (see [`na_flags`]).
    #[inline]
    pub fn na_flags(&self) -> u8 {
        self.buffer.as_ref()[field::NA_FLAGS]
    }

    /// The target address of an NS or NA. `new_checked` guarantees 24
    /// bytes only for those types; for others this returns `None` when the
    /// buffer is short.
    #[inline]
    pub fn target_addr(&self) -> Option<Ipv6Addr> {
        let d = self.buffer.as_ref().get(field::TARGET)?;
        let mut a = [0u8; 16];
        a.copy_from_slice(d);
        Some(Ipv6Addr::from(a))
    }

    /// Everything after the checksum (bytes 4..): rest of header and data.
    #[inline]
    pub fn body(&self) -> &[u8] {
        &self.buffer.as_ref()[field::REST.start..]
    }

    /// Everything after the 8-byte header.
    #[inline]
    pub fn data(&self) -> &[u8] {
        &self.buffer.as_ref()[field::DATA..]
    }

    /// The ND options of an RS, NS or NA (empty for other types).
    #[inline]
    pub fn nd_options(&self) -> NdOptionsIter<'_> {
        let d = self.buffer.as_ref();
        let start = match self.msg_type() {
            Icmpv6Message::ROUTER_SOLICIT => field::RS_OPTS,
            Icmpv6Message::NEIGHBOR_SOLICIT | Icmpv6Message::NEIGHBOR_ADVERT => field::NS_NA_OPTS,
            _ => d.len(),
        };
        NdOptionsIter::new(d.get(start..).unwrap_or(&[]))
    }

    /// The checksum this message should carry between `src` and `dst`.
    #[inline]
    pub fn compute_checksum(&self, src: &Ipv6Addr, dst: &Ipv6Addr) -> u16 {
        let d = self.buffer.as_ref();
        let s = checksum::combine(checksum::sum(&d[..2]), checksum::sum(&d[4..]));
        !checksum::fold(checksum::combine(pseudo(src, dst, d.len()), s))
    }

    /// True if the checksum verifies for `src` -> `dst`.
    #[inline]
    pub fn verify_checksum(&self, src: &Ipv6Addr, dst: &Ipv6Addr) -> bool {
        let d = self.buffer.as_ref();
        checksum::fold(checksum::combine(
            pseudo(src, dst, d.len()),
            checksum::sum(d),
        )) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Icmpv6Packet<T> {
    #[inline]
    pub fn set_msg_type(&mut self, t: Icmpv6Message) {
        self.buffer.as_mut()[field::TYPE] = t.0;
    }

    #[inline]
    pub fn set_msg_code(&mut self, c: u8) {
        self.buffer.as_mut()[field::CODE] = c;
    }

    #[inline]
    pub fn set_checksum(&mut self, c: u16) {
        self.buffer.as_mut()[field::CHECKSUM].copy_from_slice(&c.to_be_bytes());
    }

    #[inline]
    pub fn set_rest_of_header(&mut self, v: u32) {
        self.buffer.as_mut()[field::REST].copy_from_slice(&v.to_be_bytes());
    }

    #[inline]
    pub fn set_echo_ident(&mut self, v: u16) {
        self.buffer.as_mut()[field::ECHO_IDENT].copy_from_slice(&v.to_be_bytes());
    }

    #[inline]
    pub fn set_echo_seq_no(&mut self, v: u16) {
        self.buffer.as_mut()[field::ECHO_SEQNO].copy_from_slice(&v.to_be_bytes());
    }

    /// Set the NA flags byte and clear the reserved bytes after it.
    #[inline]
    pub fn set_na_flags(&mut self, f: u8) {
        let d = self.buffer.as_mut();
        d[field::NA_FLAGS] = f & 0xe0;
        d[5] = 0;
        d[6] = 0;
        d[7] = 0;
    }

    /// Set the target address of an NS or NA. Returns false if the buffer
    /// is too short.
    #[inline]
    pub fn set_target_addr(&mut self, a: Ipv6Addr) -> bool {
        match self.buffer.as_mut().get_mut(field::TARGET) {
            Some(d) => {
                d.copy_from_slice(&a.octets());
                true
            }
            None => false,
        }
    }

    #[inline]
    pub fn body_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::REST.start..]
    }

    #[inline]
    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::DATA..]
    }

    /// Compute and store the checksum for `src` -> `dst`.
    #[inline]
    pub fn fill_checksum(&mut self, src: &Ipv6Addr, dst: &Ipv6Addr) {
        let c = self.compute_checksum(src, dst);
        self.set_checksum(c);
    }

    /// Turn an echo request into an echo reply in place (type 128 -> 129,
    /// incremental checksum update). The reply goes back with source and
    /// destination swapped, which leaves the pseudo-header sum unchanged; if
    /// the reply's source differs from the request's destination (e.g. the
    /// request was to a multicast group) call `fill_checksum` instead.
    /// Returns false (and changes nothing) if it is not an echo request.
    #[inline]
    pub fn echo_request_to_reply(&mut self) -> bool {
        if self.msg_type() != Icmpv6Message::ECHO_REQUEST {
            return false;
        }
        let code = self.msg_code();
        let old = u16::from_be_bytes([Icmpv6Message::ECHO_REQUEST.0, code]);
        let new = u16::from_be_bytes([Icmpv6Message::ECHO_REPLY.0, code]);
        self.set_msg_type(Icmpv6Message::ECHO_REPLY);
        let c = checksum::update16(self.checksum(), old, new);
        self.set_checksum(c);
        true
    }

    /// Update the checksum incrementally after a covered region (including
    /// a pseudo-header address) changed from `old` to `new` (even length,
    /// even offset).
    #[inline]
    pub fn adjust_checksum(&mut self, old: &[u8], new: &[u8]) {
        let c = checksum::update_bytes(self.checksum(), old, new);
        self.set_checksum(c);
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Icmpv6Packet<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// One Neighbor Discovery option: its type and its bytes after type and
/// length (`8 * length - 2` bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NdOption<'a> {
    pub opt_type: u8,
    pub data: &'a [u8],
}

impl NdOption<'_> {
    /// The Ethernet address of a source/target link-layer address option
    /// (`None` if the option is not 8 bytes long).
    #[inline]
    pub fn lladdr(&self) -> Option<MacAddr> {
        if self.data.len() != LLADDR_OPT_LEN - 2 {
            return None;
        }
        let mut m = [0u8; 6];
        m.copy_from_slice(self.data);
        Some(m)
    }
}

/// An iterator over ND options. Yields one `Err` and stops if an option
/// has length 0 (`Malformed`) or overruns (`Truncated`).
#[derive(Debug, Clone)]
pub struct NdOptionsIter<'a> {
    data: &'a [u8],
    failed: bool,
}

impl<'a> NdOptionsIter<'a> {
    #[inline]
    pub fn new(data: &'a [u8]) -> Self {
        NdOptionsIter {
            data,
            failed: false,
        }
    }
}

impl<'a> Iterator for NdOptionsIter<'a> {
    type Item = Result<NdOption<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.data.is_empty() {
            return None;
        }
        let d = self.data;
        let err = if d.len() < 2 {
            Some(Error::Truncated)
        } else if d[1] == 0 {
            Some(Error::Malformed)
        } else if d.len() < usize::from(d[1]) * 8 {
            Some(Error::Truncated)
        } else {
            None
        };
        if let Some(e) = err {
            self.failed = true;
            return Some(Err(e));
        }
        let len = usize::from(d[1]) * 8;
        self.data = &d[len..];
        Some(Ok(NdOption {
            opt_type: d[0],
            data: &d[2..len],
        }))
    }
}

/// Write a link-layer address option into `buf[..8]`.
#[inline]
pub fn emit_lladdr_option(buf: &mut [u8], opt_type: u8, mac: &MacAddr) {
    buf[0] = opt_type;
    buf[1] = 1;
    buf[2..8].copy_from_slice(mac);
}

/// Find the first link-layer address option of `opt_type`, validating every
/// option on the way. `Malformed` if that option is not 8 bytes long.
fn find_lladdr(opts: NdOptionsIter<'_>, opt_type: u8) -> Result<Option<MacAddr>> {
    let mut found = None;
    for o in opts {
        let o = o?;
        if o.opt_type == opt_type && found.is_none() {
            found = Some(o.lladdr().ok_or(Error::Malformed)?);
        }
    }
    Ok(found)
}

/// A high-level representation of an ICMPv6 message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Icmpv6Repr<'a> {
    EchoRequest {
        ident: u16,
        seq_no: u16,
        data: &'a [u8],
    },
    EchoReply {
        ident: u16,
        seq_no: u16,
        data: &'a [u8],
    },
    /// `data`: as much of the invoking packet as fits in the minimum MTU.
    DstUnreachable {
        code: u8,
        data: &'a [u8],
    },
    PacketTooBig {
        mtu: u32,
        data: &'a [u8],
    },
    TimeExceeded {
        code: u8,
        data: &'a [u8],
    },
    ParamProblem {
        code: u8,
        pointer: u32,
        data: &'a [u8],
    },
    RouterSolicit {
        source_lladdr: Option<MacAddr>,
    },
    NeighborSolicit {
        target_addr: Ipv6Addr,
        source_lladdr: Option<MacAddr>,
    },
    NeighborAdvert {
        /// [`na_flags`] bits (R, S, O).
        flags: u8,
        target_addr: Ipv6Addr,
        target_lladdr: Option<MacAddr>,
    },
    /// Any other type: `body` is everything after the checksum (the 4
    /// "rest of header" bytes included; a shorter body is emitted
    /// zero-padded to 4 bytes).
    Other {
        msg_type: Icmpv6Message,
        code: u8,
        body: &'a [u8],
    },
}

impl<'a> Icmpv6Repr<'a> {
    /// Parse a message sent `src` -> `dst` and verify its checksum.
    ///
    /// `Malformed` for: echo, RS, NS or NA with a non-zero code; an NS or NA whose
    /// target is multicast; an NA to a multicast destination with the S
    /// flag; an NS from the unspecified address carrying a source
    /// link-layer option; a link-layer option that is not 8 bytes. ND
    /// options of length 0 are `Malformed`, overrunning ones `Truncated`.
    /// (The hop-limit-255 rule of RFC 4861 is the caller's: it is in the
    /// IPv6 header.)
    pub fn parse<T: AsRef<[u8]>>(
        packet: &'a Icmpv6Packet<T>,
        src: &Ipv6Addr,
        dst: &Ipv6Addr,
    ) -> Result<Icmpv6Repr<'a>> {
        packet.check_len()?;
        if !packet.verify_checksum(src, dst) {
            return Err(Error::Checksum);
        }
        Self::parse_unverified(packet, src, dst)
    }

    /// As [`parse`](Self::parse), without verifying the checksum (the
    /// addresses are still used for the ND rules).
    pub fn parse_unverified<T: AsRef<[u8]>>(
        packet: &'a Icmpv6Packet<T>,
        src: &Ipv6Addr,
        dst: &Ipv6Addr,
    ) -> Result<Icmpv6Repr<'a>> {
        packet.check_len()?;
        let code = packet.msg_code();
        let t = packet.msg_type();
        let strict = matches!(
            t,
            Icmpv6Message::ECHO_REQUEST
                | Icmpv6Message::ECHO_REPLY
                | Icmpv6Message::ROUTER_SOLICIT
                | Icmpv6Message::NEIGHBOR_SOLICIT
                | Icmpv6Message::NEIGHBOR_ADVERT
        );
        if strict && code != 0 {
            return Err(Error::Malformed);
        }
        Ok(match t {
            Icmpv6Message::ECHO_REQUEST => Icmpv6Repr::EchoRequest {
                ident: packet.echo_ident(),
                seq_no: packet.echo_seq_no(),
                data: packet.data(),
            },
            Icmpv6Message::ECHO_REPLY => Icmpv6Repr::EchoReply {
                ident: packet.echo_ident(),
                seq_no: packet.echo_seq_no(),
                data: packet.data(),
            },
            Icmpv6Message::DST_UNREACHABLE => Icmpv6Repr::DstUnreachable {
                code,
                data: packet.data(),
            },
            Icmpv6Message::PKT_TOO_BIG => {
                if code != 0 {
                    return Err(Error::Malformed);
                }
                Icmpv6Repr::PacketTooBig {
                    mtu: packet.mtu(),
                    data: packet.data(),
                }
            }
            Icmpv6Message::TIME_EXCEEDED => {
                if code > 1 {
                    return Err(Error::Malformed);
                }
                Icmpv6Repr::TimeExceeded {
                    code,
                    data: packet.data(),
                }
            }
            Icmpv6Message::PARAM_PROBLEM => Icmpv6Repr::ParamProblem {
                code,
                pointer: packet.pointer(),
                data: packet.data(),
            },
            Icmpv6Message::ROUTER_SOLICIT => Icmpv6Repr::RouterSolicit {
                source_lladdr: {
                    let l = find_lladdr(packet.nd_options(), nd_option::SOURCE_LLADDR)?;
                    if src.is_unspecified() && l.is_some() {
                        return Err(Error::Malformed);
                    }
                    l
                },
            },
            Icmpv6Message::NEIGHBOR_SOLICIT => {
                let target_addr = packet.target_addr().ok_or(Error::Truncated)?;
                if target_addr.is_multicast() {
                    return Err(Error::Malformed);
                }
                let l = find_lladdr(packet.nd_options(), nd_option::SOURCE_LLADDR)?;
                if src.is_unspecified() && l.is_some() {
                    return Err(Error::Malformed);
                }
                Icmpv6Repr::NeighborSolicit {
                    target_addr,
                    source_lladdr: l,
                }
            }
            Icmpv6Message::NEIGHBOR_ADVERT => {
                let target_addr = packet.target_addr().ok_or(Error::Truncated)?;
                let flags = packet.na_flags() & 0xe0;
                if target_addr.is_multicast()
                    || (dst.is_multicast() && flags & na_flags::SOLICITED != 0)
                {
                    return Err(Error::Malformed);
                }
                let l = find_lladdr(packet.nd_options(), nd_option::TARGET_LLADDR)?;
                Icmpv6Repr::NeighborAdvert {
                    flags,
                    target_addr,
                    target_lladdr: l,
                }
            }
            t => Icmpv6Repr::Other {
                msg_type: t,
                code,
                body: packet.body(),
            },
        })
    }

    /// The message length.
    pub fn buffer_len(&self) -> usize {
        let ll = |o: &Option<MacAddr>| if o.is_some() { LLADDR_OPT_LEN } else { 0 };
        match self {
            Icmpv6Repr::EchoRequest { data, .. }
            | Icmpv6Repr::EchoReply { data, .. }
            | Icmpv6Repr::DstUnreachable { data, .. }
            | Icmpv6Repr::PacketTooBig { data, .. }
            | Icmpv6Repr::TimeExceeded { data, .. }
            | Icmpv6Repr::ParamProblem { data, .. } => HEADER_LEN + data.len(),
            Icmpv6Repr::RouterSolicit { source_lladdr } => HEADER_LEN + ll(source_lladdr),
            Icmpv6Repr::NeighborSolicit { source_lladdr, .. } => ND_NS_NA_LEN + ll(source_lladdr),
            Icmpv6Repr::NeighborAdvert { target_lladdr, .. } => ND_NS_NA_LEN + ll(target_lladdr),
            Icmpv6Repr::Other { body, .. } => 4 + body.len().max(4),
        }
    }

    /// The fixed part: 8, or 24 for NS/NA, or 4 + body for `Other`.
    pub fn header_len(&self) -> usize {
        match self {
            Icmpv6Repr::NeighborSolicit { .. } | Icmpv6Repr::NeighborAdvert { .. } => ND_NS_NA_LEN,
            Icmpv6Repr::Other { body, .. } => 4 + body.len().max(4),
            _ => HEADER_LEN,
        }
    }

    /// Write the message with its checksum for `src` -> `dst`. The buffer
    /// must be exactly `buffer_len()` bytes (the checksum covers all of it).
    /// `Other` with a body shorter than 4 bytes is zero-padded to 4.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        packet: &mut Icmpv6Packet<T>,
        src: &Ipv6Addr,
        dst: &Ipv6Addr,
    ) {
        fn copy(dst: &mut [u8], src: &[u8]) {
            let n = src.len().min(dst.len());
            dst[..n].copy_from_slice(&src[..n]);
        }
        let echo = |ident: u16, seq: u16| (u32::from(ident) << 16) | u32::from(seq);
        match *self {
            Icmpv6Repr::EchoRequest {
                ident,
                seq_no,
                data,
            } => {
                packet.set_msg_type(Icmpv6Message::ECHO_REQUEST);
                packet.set_msg_code(0);
                packet.set_rest_of_header(echo(ident, seq_no));
                copy(packet.data_mut(), data);
            }
            Icmpv6Repr::EchoReply {
                ident,
                seq_no,
                data,
            } => {
                packet.set_msg_type(Icmpv6Message::ECHO_REPLY);
                packet.set_msg_code(0);
                packet.set_rest_of_header(echo(ident, seq_no));
                copy(packet.data_mut(), data);
            }
            Icmpv6Repr::DstUnreachable { code, data } => {
                packet.set_msg_type(Icmpv6Message::DST_UNREACHABLE);
                packet.set_msg_code(code);
                packet.set_rest_of_header(0);
                copy(packet.data_mut(), data);
            }
            Icmpv6Repr::PacketTooBig { mtu, data } => {
                packet.set_msg_type(Icmpv6Message::PKT_TOO_BIG);
                packet.set_msg_code(0);
                packet.set_rest_of_header(mtu);
                copy(packet.data_mut(), data);
            }
            Icmpv6Repr::TimeExceeded { code, data } => {
                packet.set_msg_type(Icmpv6Message::TIME_EXCEEDED);
                packet.set_msg_code(code);
                packet.set_rest_of_header(0);
                copy(packet.data_mut(), data);
            }
            Icmpv6Repr::ParamProblem {
                code,
                pointer,
                data,
            } => {
                packet.set_msg_type(Icmpv6Message::PARAM_PROBLEM);
                packet.set_msg_code(code);
                packet.set_rest_of_header(pointer);
                copy(packet.data_mut(), data);
            }
            Icmpv6Repr::RouterSolicit { source_lladdr } => {
                packet.set_msg_type(Icmpv6Message::ROUTER_SOLICIT);
                packet.set_msg_code(0);
                packet.set_rest_of_header(0);
                if let Some(m) = source_lladdr {
                    emit_lladdr_option(
                        &mut packet.buffer.as_mut()[field::RS_OPTS..],
                        nd_option::SOURCE_LLADDR,
                        &m,
                    );
                }
            }
            Icmpv6Repr::NeighborSolicit {
                target_addr,
                source_lladdr,
            } => {
                packet.set_msg_type(Icmpv6Message::NEIGHBOR_SOLICIT);
                packet.set_msg_code(0);
                packet.set_rest_of_header(0);
                packet.set_target_addr(target_addr);
                if let Some(m) = source_lladdr {
                    emit_lladdr_option(
                        &mut packet.buffer.as_mut()[field::NS_NA_OPTS..],
                        nd_option::SOURCE_LLADDR,
                        &m,
                    );
                }
            }
            Icmpv6Repr::NeighborAdvert {
                flags,
                target_addr,
                target_lladdr,
            } => {
                packet.set_msg_type(Icmpv6Message::NEIGHBOR_ADVERT);
                packet.set_msg_code(0);
                packet.set_na_flags(flags);
                packet.set_target_addr(target_addr);
                if let Some(m) = target_lladdr {
                    emit_lladdr_option(
                        &mut packet.buffer.as_mut()[field::NS_NA_OPTS..],
                        nd_option::TARGET_LLADDR,
                        &m,
                    );
                }
            }
            Icmpv6Repr::Other {
                msg_type,
                code,
                body,
            } => {
                packet.set_msg_type(msg_type);
                packet.set_msg_code(code);
                packet.set_rest_of_header(0);
                copy(packet.body_mut(), body);
            }
        }
        packet.fill_checksum(src, dst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn a(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    #[test]
    fn echo_known_answer() {
        // fe80::1 -> fe80::2 echo request id 1 seq 2, no data.
        // Pseudo: fe80+0001 + fe80+0002 + len 0008 + nh 003a = 0x1fd45
        // -> fold 0xfd46. Message: 8000 + 0001 + 0002 = 0x8003.
        // Total 0xfd46 + 0x8003 = 0x17d49 -> 0x7d4a -> ~ = 0x82b5.
        let (s, d) = (a("fe80::1"), a("fe80::2"));
        let b = [0x80, 0x00, 0x82, 0xb5, 0x00, 0x01, 0x00, 0x02];
        let p = Icmpv6Packet::new_checked(&b[..]).unwrap();
        assert!(p.verify_checksum(&s, &d));
        assert_eq!(p.compute_checksum(&s, &d), 0x82b5);
        let r = Icmpv6Repr::parse(&p, &s, &d).unwrap();
        assert_eq!(
            r,
            Icmpv6Repr::EchoRequest {
                ident: 1,
                seq_no: 2,
                data: &[]
            }
        );
        let mut out = [0u8; 8];
        r.emit(&mut Icmpv6Packet::new_unchecked(&mut out[..]), &s, &d);
        assert_eq!(out, b);
        assert_eq!(
            Icmpv6Repr::parse(&p, &d, &a("fe80::3")).unwrap_err(),
            Error::Checksum
        );
    }

    #[test]
    fn echo_to_reply() {
        let (s, d) = (a("2001:db8::1"), a("2001:db8::2"));
        let r = Icmpv6Repr::EchoRequest {
            ident: 7,
            seq_no: 9,
            data: b"ping",
        };
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut Icmpv6Packet::new_unchecked(&mut b[..]), &s, &d);
        let mut p = Icmpv6Packet::new_unchecked(&mut b[..]);
        assert!(p.echo_request_to_reply());
        assert!(p.verify_checksum(&d, &s));
        assert!(!p.echo_request_to_reply());
        let p = Icmpv6Packet::new_checked(&b[..]).unwrap();
        assert_eq!(
            Icmpv6Repr::parse(&p, &d, &s).unwrap(),
            Icmpv6Repr::EchoReply {
                ident: 7,
                seq_no: 9,
                data: b"ping"
            }
        );
    }

    #[test]
    fn neighbor_solicit_bytes() {
        let (s, t) = (a("fe80::1"), a("2001:db8::2"));
        let d = crate::wire::ipv6::solicited_node(&t);
        let r = Icmpv6Repr::NeighborSolicit {
            target_addr: t,
            source_lladdr: Some([2, 0, 0, 0, 0, 1]),
        };
        assert_eq!(r.buffer_len(), 32);
        let mut b = vec![0u8; 32];
        r.emit(&mut Icmpv6Packet::new_unchecked(&mut b[..]), &s, &d);
        assert_eq!(&b[..2], &[135, 0]);
        assert_eq!(&b[4..8], &[0; 4]);
        assert_eq!(&b[8..24], &t.octets());
        assert_eq!(&b[24..32], &[1, 1, 2, 0, 0, 0, 0, 1]);
        let p = Icmpv6Packet::new_checked(&b[..]).unwrap();
        assert_eq!(Icmpv6Repr::parse(&p, &s, &d).unwrap(), r);
        let opts: Vec<_> = p.nd_options().collect();
        assert_eq!(opts.len(), 1);
        assert_eq!(opts[0].unwrap().lladdr(), Some([2, 0, 0, 0, 0, 1]));
        // From the unspecified address (DAD) an SLLA is forbidden.
        let u = Ipv6Addr::UNSPECIFIED;
        let mut b2 = b.clone();
        Icmpv6Packet::new_unchecked(&mut b2[..]).fill_checksum(&u, &d);
        let p = Icmpv6Packet::new_checked(&b2[..]).unwrap();
        assert_eq!(Icmpv6Repr::parse(&p, &u, &d).unwrap_err(), Error::Malformed);
    }

    #[test]
    fn neighbor_advert() {
        let (s, d) = (a("fe80::2"), a("fe80::1"));
        let r = Icmpv6Repr::NeighborAdvert {
            flags: na_flags::ROUTER | na_flags::SOLICITED | na_flags::OVERRIDE,
            target_addr: a("2001:db8::2"),
            target_lladdr: Some([2, 0, 0, 0, 0, 2]),
        };
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut Icmpv6Packet::new_unchecked(&mut b[..]), &s, &d);
        assert_eq!(b[4], 0xe0);
        assert_eq!(&b[24..26], &[2, 1]);
        let p = Icmpv6Packet::new_checked(&b[..]).unwrap();
        assert_eq!(Icmpv6Repr::parse(&p, &s, &d).unwrap(), r);
        // Solicited NA to a multicast group is invalid.
        let all = a("ff02::1");
        let mut b2 = b.clone();
        Icmpv6Packet::new_unchecked(&mut b2[..]).fill_checksum(&s, &all);
        let p = Icmpv6Packet::new_checked(&b2[..]).unwrap();
        assert_eq!(
            Icmpv6Repr::parse(&p, &s, &all).unwrap_err(),
            Error::Malformed
        );
    }

    #[test]
    fn nd_option_errors() {
        let (s, d) = (a("fe80::1"), a("ff02::1:ff00:2"));
        let r = Icmpv6Repr::NeighborSolicit {
            target_addr: a("2001:db8::2"),
            source_lladdr: Some([2, 0, 0, 0, 0, 1]),
        };
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut Icmpv6Packet::new_unchecked(&mut b[..]), &s, &d);
        let mut z = b.clone();
        z[25] = 0; // option length 0
        Icmpv6Packet::new_unchecked(&mut z[..]).fill_checksum(&s, &d);
        assert_eq!(
            Icmpv6Repr::parse(&Icmpv6Packet::new_checked(&z[..]).unwrap(), &s, &d).unwrap_err(),
            Error::Malformed
        );
        let mut z = b.clone();
        z[25] = 2; // overruns
        Icmpv6Packet::new_unchecked(&mut z[..]).fill_checksum(&s, &d);
        assert_eq!(
            Icmpv6Repr::parse(&Icmpv6Packet::new_checked(&z[..]).unwrap(), &s, &d).unwrap_err(),
            Error::Truncated
        );
        let mut z = b.clone();
        z.extend_from_slice(&[0; 8]);
        z[25] = 2; // 16-byte SLLA: not Ethernet
        Icmpv6Packet::new_unchecked(&mut z[..]).fill_checksum(&s, &d);
        assert_eq!(
            Icmpv6Repr::parse(&Icmpv6Packet::new_checked(&z[..]).unwrap(), &s, &d).unwrap_err(),
            Error::Malformed
        );
        let mut z = b.clone();
        z.push(5); // a dangling byte
        Icmpv6Packet::new_unchecked(&mut z[..]).fill_checksum(&s, &d);
        assert_eq!(
            Icmpv6Repr::parse(&Icmpv6Packet::new_checked(&z[..]).unwrap(), &s, &d).unwrap_err(),
            Error::Truncated
        );
        // Unknown options are skipped.
        let mut z = b.clone();
        z.extend_from_slice(&[99, 1, 0, 0, 0, 0, 0, 0]);
        Icmpv6Packet::new_unchecked(&mut z[..]).fill_checksum(&s, &d);
        assert_eq!(
            Icmpv6Repr::parse(&Icmpv6Packet::new_checked(&z[..]).unwrap(), &s, &d).unwrap(),
            r
        );
        // NS shorter than 24 bytes.
        assert_eq!(
            Icmpv6Packet::new_checked(&b[..23]).unwrap_err(),
            Error::Truncated
        );
        // Multicast target.
        let mut z = b.clone();
        z[8] = 0xff;
        Icmpv6Packet::new_unchecked(&mut z[..]).fill_checksum(&s, &d);
        assert_eq!(
            Icmpv6Repr::parse(&Icmpv6Packet::new_checked(&z[..]).unwrap(), &s, &d).unwrap_err(),
            Error::Malformed
        );
        // Code must be 0.
        let mut z = b.clone();
        z[1] = 1;
        Icmpv6Packet::new_unchecked(&mut z[..]).fill_checksum(&s, &d);
        assert_eq!(
            Icmpv6Repr::parse(&Icmpv6Packet::new_checked(&z[..]).unwrap(), &s, &d).unwrap_err(),
            Error::Malformed
        );
    }

    #[test]
    fn errors_and_generic() {
        let (s, d) = (a("2001:db8::1"), a("2001:db8::2"));
        for n in 0..8 {
            assert_eq!(
                Icmpv6Packet::new_checked(&[0u8; 8][..n]).unwrap_err(),
                Error::Truncated
            );
        }
        let quoted = [0x60u8, 0, 0, 0, 0, 8, 17, 1];
        let r = Icmpv6Repr::TimeExceeded {
            code: time_exceeded::HOP_LIMIT,
            data: &quoted,
        };
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut Icmpv6Packet::new_unchecked(&mut b[..]), &s, &d);
        assert_eq!(&b[..2], &[3, 0]);
        assert_eq!(
            Icmpv6Repr::parse(&Icmpv6Packet::new_checked(&b[..]).unwrap(), &s, &d).unwrap(),
            r
        );
        // A message of an experimental type built through the generic view.
        let mut g = [0u8; 16];
        let mut p = Icmpv6Packet::new_unchecked(&mut g[..]);
        p.set_msg_type(Icmpv6Message(200));
        p.set_msg_code(3);
        p.body_mut()
            .copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
        p.fill_checksum(&s, &d);
        let p = Icmpv6Packet::new_checked(&g[..]).unwrap();
        assert!(p.verify_checksum(&s, &d));
        assert_eq!(p.rest_of_header(), 0x01020304);
        let r = Icmpv6Repr::parse(&p, &s, &d).unwrap();
        assert_eq!(
            r,
            Icmpv6Repr::Other {
                msg_type: Icmpv6Message(200),
                code: 3,
                body: &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
            }
        );
        let mut g2 = [0u8; 16];
        r.emit(&mut Icmpv6Packet::new_unchecked(&mut g2[..]), &s, &d);
        assert_eq!(g, g2);
        // Incremental adjust after a destination rewrite.
        let nd = a("fc00::5");
        let mut p = Icmpv6Packet::new_unchecked(&mut g2[..]);
        p.adjust_checksum(&d.octets(), &nd.octets());
        assert!(p.verify_checksum(&s, &nd));
    }

    /// (kind, a: u16, b: u16, code, word, mac, flags, target, other type, data)
    type Seed = (
        u8,
        u16,
        u16,
        u8,
        u32,
        Option<[u8; 6]>,
        u8,
        [u8; 16],
        u8,
        Vec<u8>,
    );

    fn arb_seed() -> impl Strategy<Value = Seed> {
        (
            0u8..10,
            any::<u16>(),
            any::<u16>(),
            any::<u8>(),
            any::<u32>(),
            proptest::option::of(any::<[u8; 6]>()),
            any::<u8>(),
            any::<[u8; 16]>().prop_filter("unicast", |t| t[0] != 0xff),
            any::<u8>().prop_filter("other", |t| {
                !matches!(t, 1..=4 | 128 | 129 | 133 | 135 | 136)
            }),
            proptest::collection::vec(any::<u8>(), 0..64),
        )
    }

    fn build(s: &Seed) -> Icmpv6Repr<'_> {
        let (kind, x, y, code, w, mac, flags, target, t, ref data) = *s;
        let target_addr = Ipv6Addr::from(target);
        match kind {
            0 => Icmpv6Repr::EchoRequest {
                ident: x,
                seq_no: y,
                data,
            },
            1 => Icmpv6Repr::EchoReply {
                ident: x,
                seq_no: y,
                data,
            },
            2 => Icmpv6Repr::DstUnreachable { code, data },
            3 => Icmpv6Repr::PacketTooBig { mtu: w, data },
            4 => Icmpv6Repr::TimeExceeded {
                code: code & 1,
                data,
            },
            5 => Icmpv6Repr::ParamProblem {
                code,
                pointer: w,
                data,
            },
            6 => Icmpv6Repr::RouterSolicit { source_lladdr: mac },
            7 => Icmpv6Repr::NeighborSolicit {
                target_addr,
                source_lladdr: mac,
            },
            8 => Icmpv6Repr::NeighborAdvert {
                flags: flags & 0xa0,
                target_addr,
                target_lladdr: mac,
            },
            _ => Icmpv6Repr::Other {
                msg_type: Icmpv6Message(t),
                code,
                body: data,
            },
        }
    }

    fn arb_addr() -> impl Strategy<Value = Ipv6Addr> {
        any::<[u8; 16]>()
            .prop_filter("specified", |a| a.iter().any(|&b| b != 0))
            .prop_map(Ipv6Addr::from)
    }

    proptest! {
        #[test]
        fn roundtrip(seed in arb_seed(), s in arb_addr(), d in arb_addr()) {
            let r = build(&seed);
            // `Other` needs at least 4 body bytes to round-trip.
            prop_assume!(!matches!(r, Icmpv6Repr::Other { body, .. } if body.len() < 4));
            let mut b = vec![0u8; r.buffer_len()];
            r.emit(&mut Icmpv6Packet::new_unchecked(&mut b[..]), &s, &d);
            let p = Icmpv6Packet::new_checked(&b[..]).unwrap();
            prop_assert!(p.verify_checksum(&s, &d));
            prop_assert_eq!(Icmpv6Repr::parse(&p, &s, &d).unwrap(), r);
            for n in 0..HEADER_LEN {
                prop_assert!(Icmpv6Packet::new_checked(&b[..n]).is_err());
            }
            // ND messages: any truncation breaks the fixed part or an option.
            if matches!(r, Icmpv6Repr::RouterSolicit { .. } | Icmpv6Repr::NeighborSolicit { .. } | Icmpv6Repr::NeighborAdvert { .. }) {
                for n in 0..b.len() {
                    let res = Icmpv6Packet::new_checked(&b[..n]).and_then(|p| Icmpv6Repr::parse_unverified(&p, &s, &d).map(|x| x.buffer_len()));
                    prop_assert!(res.is_err() || res == Ok(n), "n={} res={:?}", n, res);
                }
                // Corrupting the option length field is an error.
                if b.len() > ND_NS_NA_LEN || matches!(r, Icmpv6Repr::RouterSolicit { source_lladdr: Some(_) }) {
                    let at = if matches!(r, Icmpv6Repr::RouterSolicit { .. }) { 9 } else { 25 };
                    for l in [0u8, 2, 3, 255] {
                        let mut c = b.clone();
                        c[at] = l;
                        let res = Icmpv6Packet::new_checked(&c[..]).and_then(|p| Icmpv6Repr::parse_unverified(&p, &s, &d).map(|_| ()));
                        prop_assert!(res.is_err());
                    }
                }
            }
        }

        #[test]
        fn never_panics(data in proptest::collection::vec(any::<u8>(), 0..64), s in arb_addr(), d in arb_addr(), t in any::<u8>()) {
            let mut data = data;
            if let Some(x) = data.first_mut() { *x = t; }
            if let Ok(p) = Icmpv6Packet::new_checked(&data[..]) {
                let _ = (p.target_addr(), p.body().len(), p.data().len(), p.verify_checksum(&s, &d));
                for o in p.nd_options() { let _ = o.map(|o| o.lladdr()); }
                let _ = Icmpv6Repr::parse(&p, &s, &d);
                let _ = Icmpv6Repr::parse_unverified(&p, &s, &d);
                let _ = Icmpv6Repr::parse_unverified(&p, &Ipv6Addr::UNSPECIFIED, &d);
            }
        }
    }
}
