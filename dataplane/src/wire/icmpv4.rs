//! ICMP for IPv4 (RFC 792): echo request/reply, destination unreachable
//! (with the next-hop MTU of RFC 1191), time exceeded; any other type through
//! the generic accessors. The checksum covers the whole message.
//!
//! There is no length field: the message is the whole buffer given to the
//! view (the IPv4 payload).

use core::fmt;

use super::checksum;
use super::{Error, Result};

mod field {
    use core::ops::Range;
    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const CHECKSUM: Range<usize> = 2..4;
    /// "Rest of header": identifier + sequence for echo, unused + MTU for
    /// unreachable, unused for time exceeded.
    pub const REST: Range<usize> = 4..8;
    pub const ECHO_IDENT: Range<usize> = 4..6;
    pub const ECHO_SEQNO: Range<usize> = 6..8;
    pub const MTU: Range<usize> = 6..8;
    pub const DATA: usize = 8;
}

/// The length of the ICMP header (type, code, checksum, rest of header).
pub const HEADER_LEN: usize = 8;

/// An ICMPv4 message type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Icmpv4Message(pub u8);

impl Icmpv4Message {
    pub const ECHO_REPLY: Icmpv4Message = Icmpv4Message(0);
    pub const DST_UNREACHABLE: Icmpv4Message = Icmpv4Message(3);
    pub const REDIRECT: Icmpv4Message = Icmpv4Message(5);
    pub const ECHO_REQUEST: Icmpv4Message = Icmpv4Message(8);
    pub const TIME_EXCEEDED: Icmpv4Message = Icmpv4Message(11);
    pub const PARAM_PROBLEM: Icmpv4Message = Icmpv4Message(12);

    /// True for error messages (which quote the offending datagram).
    #[inline]
    pub const fn is_error(self) -> bool {
        matches!(self.0, 3 | 4 | 5 | 11 | 12)
    }
}

impl fmt::Display for Icmpv4Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Icmpv4Message::ECHO_REPLY => f.write_str("echo reply"),
            Icmpv4Message::DST_UNREACHABLE => f.write_str("destination unreachable"),
            Icmpv4Message::REDIRECT => f.write_str("redirect"),
            Icmpv4Message::ECHO_REQUEST => f.write_str("echo request"),
            Icmpv4Message::TIME_EXCEEDED => f.write_str("time exceeded"),
            Icmpv4Message::PARAM_PROBLEM => f.write_str("parameter problem"),
            Icmpv4Message(v) => write!(f, "type {v}"),
        }
    }
}

/// Destination unreachable codes (RFC 792, RFC 1812).
pub mod unreachable {
    pub const NET: u8 = 0;
    pub const HOST: u8 = 1;
    pub const PROTOCOL: u8 = 2;
    pub const PORT: u8 = 3;
    /// Fragmentation needed and DF set; carries the next-hop MTU.
    pub const FRAG_NEEDED: u8 = 4;
    pub const SOURCE_ROUTE_FAILED: u8 = 5;
    pub const NET_UNKNOWN: u8 = 6;
    pub const HOST_UNKNOWN: u8 = 7;
    pub const NET_PROHIBITED: u8 = 9;
    pub const HOST_PROHIBITED: u8 = 10;
    pub const ADMIN_PROHIBITED: u8 = 13;
}

/// Time exceeded codes.
pub mod time_exceeded {
    /// TTL reached zero in transit.
    pub const TTL: u8 = 0;
    /// Fragment reassembly time exceeded.
    pub const REASSEMBLY: u8 = 1;
}

/// A view over an ICMPv4 message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Icmpv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Icmpv4Packet<T> {
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Icmpv4Packet<T> {
        Icmpv4Packet { buffer }
    }

    /// `Truncated` if the buffer is shorter than the 8-byte header.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Icmpv4Packet<T>> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    #[inline]
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    #[inline]
    pub fn msg_type(&self) -> Icmpv4Message {
        Icmpv4Message(self.buffer.as_ref()[field::TYPE])
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

    /// The four "rest of header" bytes as a word.
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

    /// Next-hop MTU of "fragmentation needed" (RFC 1191).
    #[inline]
    pub fn next_hop_mtu(&self) -> u16 {
        let d = &self.buffer.as_ref()[field::MTU];
        u16::from_be_bytes([d[0], d[1]])
    }

    /// Everything after the 8-byte header (echo data, or the quoted
    /// datagram of an error message).
    #[inline]
    pub fn data(&self) -> &[u8] {
        &self.buffer.as_ref()[field::DATA..]
    }

    /// Everything after the checksum (rest of header + data), for callers
    /// handling other message types.
    #[inline]
    pub fn body(&self) -> &[u8] {
        &self.buffer.as_ref()[field::REST.start..]
    }

    /// True if the checksum over the whole message verifies.
    #[inline]
    pub fn verify_checksum(&self) -> bool {
        checksum::fold(checksum::sum(self.buffer.as_ref())) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Icmpv4Packet<T> {
    #[inline]
    pub fn set_msg_type(&mut self, t: Icmpv4Message) {
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

    #[inline]
    pub fn set_next_hop_mtu(&mut self, v: u16) {
        self.buffer.as_mut()[field::MTU].copy_from_slice(&v.to_be_bytes());
    }

    #[inline]
    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::DATA..]
    }

    #[inline]
    pub fn body_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::REST.start..]
    }

    /// Compute and store the checksum over the whole buffer.
    #[inline]
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let c = checksum::checksum(self.buffer.as_ref());
        self.set_checksum(c);
    }

    /// Turn an echo request into an echo reply in place: type 8 -> 0 and an
    /// incremental checksum update (identifier, sequence and data stay).
    /// Returns false (and changes nothing) if it is not an echo request.
    #[inline]
    pub fn echo_request_to_reply(&mut self) -> bool {
        if self.msg_type() != Icmpv4Message::ECHO_REQUEST {
            return false;
        }
        let code = self.msg_code();
        let old = u16::from_be_bytes([Icmpv4Message::ECHO_REQUEST.0, code]);
        let new = u16::from_be_bytes([Icmpv4Message::ECHO_REPLY.0, code]);
        self.set_msg_type(Icmpv4Message::ECHO_REPLY);
        let c = checksum::update16(self.checksum(), old, new);
        self.set_checksum(c);
        if c == 0 && checksum::sum(self.buffer.as_ref()) == 0 {
            // RFC 1624 s.3: eqn. 3 gives 0x0000 where a full computation
            // gives 0xffff if everything else sums to zero (an all-zero
            // reply). Only a valid request can lead here, so this does not
            // turn a corrupt message into a valid one.
            self.set_checksum(0xffff);
        }
        true
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Icmpv4Packet<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// A high-level representation of an ICMPv4 message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Icmpv4Repr<'a> {
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
    /// `next_hop_mtu` is meaningful for code 4 (frag needed) and 0 otherwise.
    /// `data` is the quoted datagram (IP header + at least 8 bytes).
    DstUnreachable {
        code: u8,
        next_hop_mtu: u16,
        data: &'a [u8],
    },
    TimeExceeded {
        code: u8,
        data: &'a [u8],
    },
    /// Any other type: rest of header as a word, and the data after it.
    Other {
        msg_type: Icmpv4Message,
        code: u8,
        rest_of_header: u32,
        data: &'a [u8],
    },
}

impl<'a> Icmpv4Repr<'a> {
    /// Parse and verify the checksum.
    pub fn parse<T: AsRef<[u8]>>(packet: &'a Icmpv4Packet<T>) -> Result<Icmpv4Repr<'a>> {
        packet.check_len()?;
        if !packet.verify_checksum() {
            return Err(Error::Checksum);
        }
        Self::parse_unverified(packet)
    }

    /// Parse without verifying the checksum. `Malformed` for an echo with
    /// a non-zero code, or an unreachable/time exceeded with an unused
    /// code (> 15 / > 1).
    pub fn parse_unverified<T: AsRef<[u8]>>(packet: &'a Icmpv4Packet<T>) -> Result<Icmpv4Repr<'a>> {
        packet.check_len()?;
        let code = packet.msg_code();
        Ok(match packet.msg_type() {
            Icmpv4Message::ECHO_REQUEST | Icmpv4Message::ECHO_REPLY if code != 0 => {
                return Err(Error::Malformed)
            }
            Icmpv4Message::ECHO_REQUEST => Icmpv4Repr::EchoRequest {
                ident: packet.echo_ident(),
                seq_no: packet.echo_seq_no(),
                data: packet.data(),
            },
            Icmpv4Message::ECHO_REPLY => Icmpv4Repr::EchoReply {
                ident: packet.echo_ident(),
                seq_no: packet.echo_seq_no(),
                data: packet.data(),
            },
            Icmpv4Message::DST_UNREACHABLE => {
                if code > 15 {
                    return Err(Error::Malformed);
                }
                Icmpv4Repr::DstUnreachable {
                    code,
                    next_hop_mtu: if code == unreachable::FRAG_NEEDED {
                        packet.next_hop_mtu()
                    } else {
                        0
                    },
                    data: packet.data(),
                }
            }
            Icmpv4Message::TIME_EXCEEDED => {
                if code > 1 {
                    return Err(Error::Malformed);
                }
                Icmpv4Repr::TimeExceeded {
                    code,
                    data: packet.data(),
                }
            }
            t => Icmpv4Repr::Other {
                msg_type: t,
                code,
                rest_of_header: packet.rest_of_header(),
                data: packet.data(),
            },
        })
    }

    fn data(&self) -> &'a [u8] {
        match *self {
            Icmpv4Repr::EchoRequest { data, .. }
            | Icmpv4Repr::EchoReply { data, .. }
            | Icmpv4Repr::DstUnreachable { data, .. }
            | Icmpv4Repr::TimeExceeded { data, .. }
            | Icmpv4Repr::Other { data, .. } => data,
        }
    }

    #[inline]
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Header plus data.
    #[inline]
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.data().len()
    }

    /// Write the message and its checksum. The buffer must be exactly
    /// `buffer_len()` bytes (the checksum covers the whole buffer).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Icmpv4Packet<T>) {
        let (t, code, rest) = match *self {
            Icmpv4Repr::EchoRequest { ident, seq_no, .. } => (
                Icmpv4Message::ECHO_REQUEST,
                0,
                (u32::from(ident) << 16) | u32::from(seq_no),
            ),
            Icmpv4Repr::EchoReply { ident, seq_no, .. } => (
                Icmpv4Message::ECHO_REPLY,
                0,
                (u32::from(ident) << 16) | u32::from(seq_no),
            ),
            Icmpv4Repr::DstUnreachable {
                code, next_hop_mtu, ..
            } => (
                Icmpv4Message::DST_UNREACHABLE,
                code,
                u32::from(next_hop_mtu),
            ),
            Icmpv4Repr::TimeExceeded { code, .. } => (Icmpv4Message::TIME_EXCEEDED, code, 0),
            Icmpv4Repr::Other {
                msg_type,
                code,
                rest_of_header,
                ..
            } => (msg_type, code, rest_of_header),
        };
        packet.set_msg_type(t);
        packet.set_msg_code(code);
        packet.set_rest_of_header(rest);
        let data = self.data();
        let dst = packet.data_mut();
        let n = data.len().min(dst.len());
        dst[..n].copy_from_slice(&data[..n]);
        packet.fill_checksum();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // Echo request id 0x1234 seq 1, data "abcd".
    // 0800 + 1234 + 0001 + 6162 + 6364 = 0x0800+0x1234=0x1a34, +1=0x1a35,
    // +0x6162=0x7b97, +0x6364=0xdefb -> ~ = 0x2104.
    const ECHO: [u8; 12] = [
        0x08, 0x00, 0x21, 0x04, 0x12, 0x34, 0x00, 0x01, b'a', b'b', b'c', b'd',
    ];

    #[test]
    fn echo_known_answer() {
        let p = Icmpv4Packet::new_checked(&ECHO[..]).unwrap();
        assert!(p.verify_checksum());
        assert_eq!(p.msg_type(), Icmpv4Message::ECHO_REQUEST);
        let r = Icmpv4Repr::parse(&p).unwrap();
        assert_eq!(
            r,
            Icmpv4Repr::EchoRequest {
                ident: 0x1234,
                seq_no: 1,
                data: b"abcd"
            }
        );
        let mut b = [0u8; 12];
        r.emit(&mut Icmpv4Packet::new_unchecked(&mut b[..]));
        assert_eq!(b, ECHO);
    }

    #[test]
    fn request_to_reply() {
        let mut b = ECHO;
        let mut p = Icmpv4Packet::new_unchecked(&mut b[..]);
        assert!(p.echo_request_to_reply());
        assert!(p.verify_checksum());
        let inc = p.checksum();
        p.fill_checksum();
        assert_eq!(inc, p.checksum());
        assert!(!p.echo_request_to_reply());
        assert_eq!(
            Icmpv4Repr::parse(&Icmpv4Packet::new_checked(&b[..]).unwrap()).unwrap(),
            Icmpv4Repr::EchoReply {
                ident: 0x1234,
                seq_no: 1,
                data: b"abcd"
            }
        );
    }

    #[test]
    fn all_zero_reply_checksum() {
        // Found by fuzzing: request 08 00 f7 ff 00 00 00 00 becomes an
        // all-zero reply whose checksum must be 0xffff, not 0x0000.
        let mut b = [0x08, 0x00, 0xf7, 0xff, 0, 0, 0, 0];
        assert!(Icmpv4Packet::new_checked(&b[..]).unwrap().verify_checksum());
        let mut p = Icmpv4Packet::new_unchecked(&mut b[..]);
        assert!(p.echo_request_to_reply());
        assert_eq!(p.checksum(), 0xffff);
        assert!(p.verify_checksum());
    }

    #[test]
    fn time_exceeded_and_unreachable() {
        let quoted = [
            0x45u8, 0, 0, 28, 0, 0, 0, 0, 1, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, 1, 2, 3, 4, 0, 8,
            0, 0,
        ];
        let r = Icmpv4Repr::TimeExceeded {
            code: time_exceeded::TTL,
            data: &quoted,
        };
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut Icmpv4Packet::new_unchecked(&mut b[..]));
        assert_eq!(&b[..2], &[11, 0]);
        assert_eq!(&b[4..8], &[0, 0, 0, 0]);
        let p = Icmpv4Packet::new_checked(&b[..]).unwrap();
        assert_eq!(Icmpv4Repr::parse(&p).unwrap(), r);

        let r = Icmpv4Repr::DstUnreachable {
            code: unreachable::FRAG_NEEDED,
            next_hop_mtu: 1400,
            data: &quoted,
        };
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut Icmpv4Packet::new_unchecked(&mut b[..]));
        assert_eq!(&b[4..8], &[0, 0, 0x05, 0x78]);
        let p = Icmpv4Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.next_hop_mtu(), 1400);
        assert_eq!(Icmpv4Repr::parse(&p).unwrap(), r);
    }

    #[test]
    fn errors() {
        for n in 0..8 {
            assert_eq!(
                Icmpv4Packet::new_checked(&ECHO[..n]).unwrap_err(),
                Error::Truncated
            );
        }
        let mut b = ECHO;
        b[11] ^= 0x40;
        let p = Icmpv4Packet::new_checked(&b[..]).unwrap();
        assert_eq!(Icmpv4Repr::parse(&p).unwrap_err(), Error::Checksum);
        let mut b = ECHO;
        b[1] = 1;
        let mut p = Icmpv4Packet::new_unchecked(&mut b[..]);
        p.fill_checksum();
        assert_eq!(Icmpv4Repr::parse(&p).unwrap_err(), Error::Malformed);
        // Truncating the data breaks the checksum (no length field).
        let p = Icmpv4Packet::new_checked(&ECHO[..10]).unwrap();
        assert_eq!(Icmpv4Repr::parse(&p).unwrap_err(), Error::Checksum);
    }

    /// (kind, ident/mtu, seq, code, other type, rest, data): enough to build any repr.
    type Seed = (u8, u16, u16, u8, u8, u32, Vec<u8>);

    fn arb_seed() -> impl Strategy<Value = Seed> {
        (
            0u8..5,
            any::<u16>(),
            any::<u16>(),
            any::<u8>(),
            any::<u8>().prop_filter("other", |t| !matches!(t, 0 | 3 | 8 | 11)),
            any::<u32>(),
            proptest::collection::vec(any::<u8>(), 0..64),
        )
    }

    fn build(s: &Seed) -> Icmpv4Repr<'_> {
        let (kind, a, b, code, t, rest, ref data) = *s;
        match kind {
            0 => Icmpv4Repr::EchoRequest {
                ident: a,
                seq_no: b,
                data,
            },
            1 => Icmpv4Repr::EchoReply {
                ident: a,
                seq_no: b,
                data,
            },
            2 => {
                let code = code % 16;
                Icmpv4Repr::DstUnreachable {
                    code,
                    next_hop_mtu: if code == 4 { a } else { 0 },
                    data,
                }
            }
            3 => Icmpv4Repr::TimeExceeded {
                code: code % 2,
                data,
            },
            _ => Icmpv4Repr::Other {
                msg_type: Icmpv4Message(t),
                code,
                rest_of_header: rest,
                data,
            },
        }
    }

    proptest! {
        #[test]
        fn roundtrip(seed in arb_seed()) {
            let r = build(&seed);
            let mut b = vec![0u8; r.buffer_len()];
            r.emit(&mut Icmpv4Packet::new_unchecked(&mut b[..]));
            let p = Icmpv4Packet::new_checked(&b[..]).unwrap();
            prop_assert!(p.verify_checksum());
            prop_assert_eq!(Icmpv4Repr::parse(&p).unwrap(), r);
            for n in 0..HEADER_LEN {
                prop_assert!(Icmpv4Packet::new_checked(&b[..n]).is_err());
            }
            // Without a length field a truncated message is only caught by
            // the checksum, which cannot see removed words summing to 0 or
            // 0xffff; so: never a panic, and an Ok describes the short data.
            for n in HEADER_LEN..b.len() {
                let p = Icmpv4Packet::new_checked(&b[..n]).unwrap();
                if let Ok(r2) = Icmpv4Repr::parse(&p) {
                    prop_assert_eq!(r2.buffer_len(), n);
                }
            }
        }

        #[test]
        fn never_panics(data in proptest::collection::vec(any::<u8>(), 0..40)) {
            if let Ok(p) = Icmpv4Packet::new_checked(&data[..]) {
                let _ = (p.data().len(), p.body().len(), p.verify_checksum());
                let _ = Icmpv4Repr::parse(&p);
                let _ = Icmpv4Repr::parse_unverified(&p);
            }
        }
    }
}
