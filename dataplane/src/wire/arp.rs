//! ARP (RFC 826). The view reads any hardware / protocol address length;
//! [`ArpRepr`] is Ethernet (htype 1, hlen 6) over IPv4 (ptype 0x0800, plen 4).

use std::net::Ipv4Addr;

use super::ethernet::{EtherType, MacAddr};
use super::{Error, Result};

mod field {
    use core::ops::Range;
    pub const HTYPE: Range<usize> = 0..2;
    pub const PTYPE: Range<usize> = 2..4;
    pub const HLEN: usize = 4;
    pub const PLEN: usize = 5;
    pub const OPER: Range<usize> = 6..8;
    pub const ADDRS: usize = 8;
}

/// The hardware type for Ethernet.
pub const HTYPE_ETHERNET: u16 = 1;

/// The length of an Ethernet/IPv4 ARP packet.
pub const ETHERNET_IPV4_LEN: usize = 28;

/// An ARP operation code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ArpOperation(pub u16);

impl ArpOperation {
    pub const REQUEST: ArpOperation = ArpOperation(1);
    pub const REPLY: ArpOperation = ArpOperation(2);
}

/// A view over an ARP packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> ArpPacket<T> {
    #[inline]
    pub const fn new_unchecked(buffer: T) -> ArpPacket<T> {
        ArpPacket { buffer }
    }

    /// Wrap a buffer and check that the fixed part and the four addresses
    /// (of the lengths the header gives) fit.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<ArpPacket<T>> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// `Truncated` if the buffer is shorter than 8 bytes or than
    /// 8 + 2 * (hlen + plen).
    #[inline]
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < field::ADDRS || len < self.packet_len() {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// 8 + 2 * (hlen + plen).
    #[inline]
    pub fn packet_len(&self) -> usize {
        field::ADDRS + 2 * (usize::from(self.hardware_len()) + usize::from(self.protocol_len()))
    }

    #[inline]
    pub fn hardware_type(&self) -> u16 {
        let d = &self.buffer.as_ref()[field::HTYPE];
        u16::from_be_bytes([d[0], d[1]])
    }

    #[inline]
    pub fn protocol_type(&self) -> EtherType {
        let d = &self.buffer.as_ref()[field::PTYPE];
        EtherType(u16::from_be_bytes([d[0], d[1]]))
    }

    #[inline]
    pub fn hardware_len(&self) -> u8 {
        self.buffer.as_ref()[field::HLEN]
    }

    #[inline]
    pub fn protocol_len(&self) -> u8 {
        self.buffer.as_ref()[field::PLEN]
    }

    #[inline]
    pub fn operation(&self) -> ArpOperation {
        let d = &self.buffer.as_ref()[field::OPER];
        ArpOperation(u16::from_be_bytes([d[0], d[1]]))
    }

    #[inline]
    fn ranges(&self) -> [core::ops::Range<usize>; 4] {
        let h = usize::from(self.hardware_len());
        let p = usize::from(self.protocol_len());
        let a = field::ADDRS;
        [
            a..a + h,
            a + h..a + h + p,
            a + h + p..a + 2 * h + p,
            a + 2 * h + p..a + 2 * h + 2 * p,
        ]
    }

    #[inline]
    pub fn source_hardware_addr(&self) -> &[u8] {
        &self.buffer.as_ref()[self.ranges()[0].clone()]
    }

    #[inline]
    pub fn source_protocol_addr(&self) -> &[u8] {
        &self.buffer.as_ref()[self.ranges()[1].clone()]
    }

    #[inline]
    pub fn target_hardware_addr(&self) -> &[u8] {
        &self.buffer.as_ref()[self.ranges()[2].clone()]
    }

    #[inline]
    pub fn target_protocol_addr(&self) -> &[u8] {
        &self.buffer.as_ref()[self.ranges()[3].clone()]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ArpPacket<T> {
    #[inline]
    pub fn set_hardware_type(&mut self, v: u16) {
        self.buffer.as_mut()[field::HTYPE].copy_from_slice(&v.to_be_bytes());
    }

    #[inline]
    pub fn set_protocol_type(&mut self, v: EtherType) {
        self.buffer.as_mut()[field::PTYPE].copy_from_slice(&v.0.to_be_bytes());
    }

    #[inline]
    pub fn set_hardware_len(&mut self, v: u8) {
        self.buffer.as_mut()[field::HLEN] = v;
    }

    #[inline]
    pub fn set_protocol_len(&mut self, v: u8) {
        self.buffer.as_mut()[field::PLEN] = v;
    }

    #[inline]
    pub fn set_operation(&mut self, v: ArpOperation) {
        self.buffer.as_mut()[field::OPER].copy_from_slice(&v.0.to_be_bytes());
    }

    /// Set the source hardware address; `a` must be `hardware_len()` long.
    #[inline]
    pub fn set_source_hardware_addr(&mut self, a: &[u8]) {
        let r = self.ranges()[0].clone();
        self.buffer.as_mut()[r].copy_from_slice(a);
    }

    #[inline]
    pub fn set_source_protocol_addr(&mut self, a: &[u8]) {
        let r = self.ranges()[1].clone();
        self.buffer.as_mut()[r].copy_from_slice(a);
    }

    #[inline]
    pub fn set_target_hardware_addr(&mut self, a: &[u8]) {
        let r = self.ranges()[2].clone();
        self.buffer.as_mut()[r].copy_from_slice(a);
    }

    #[inline]
    pub fn set_target_protocol_addr(&mut self, a: &[u8]) {
        let r = self.ranges()[3].clone();
        self.buffer.as_mut()[r].copy_from_slice(a);
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for ArpPacket<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// An Ethernet/IPv4 ARP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ArpRepr {
    pub operation: ArpOperation,
    pub source_hardware_addr: MacAddr,
    pub source_protocol_addr: Ipv4Addr,
    pub target_hardware_addr: MacAddr,
    pub target_protocol_addr: Ipv4Addr,
}

impl ArpRepr {
    /// Parse an Ethernet/IPv4 ARP packet. `Unrecognized` for another
    /// hardware or protocol type or address length, or an operation other
    /// than request or reply.
    pub fn parse<T: AsRef<[u8]>>(packet: &ArpPacket<T>) -> Result<ArpRepr> {
        packet.check_len()?;
        if packet.hardware_type() != HTYPE_ETHERNET
            || packet.protocol_type() != EtherType::IPV4
            || packet.hardware_len() != 6
            || packet.protocol_len() != 4
        {
            return Err(Error::Unrecognized);
        }
        let op = packet.operation();
        if op != ArpOperation::REQUEST && op != ArpOperation::REPLY {
            return Err(Error::Unrecognized);
        }
        let mac = |s: &[u8]| {
            let mut m = [0u8; 6];
            m.copy_from_slice(s);
            m
        };
        let ip = |s: &[u8]| Ipv4Addr::new(s[0], s[1], s[2], s[3]);
        Ok(ArpRepr {
            operation: op,
            source_hardware_addr: mac(packet.source_hardware_addr()),
            source_protocol_addr: ip(packet.source_protocol_addr()),
            target_hardware_addr: mac(packet.target_hardware_addr()),
            target_protocol_addr: ip(packet.target_protocol_addr()),
        })
    }

    #[inline]
    pub const fn buffer_len(&self) -> usize {
        ETHERNET_IPV4_LEN
    }

    #[inline]
    pub const fn header_len(&self) -> usize {
        ETHERNET_IPV4_LEN
    }

    /// Write the packet into a buffer of at least 28 bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut ArpPacket<T>) {
        packet.set_hardware_type(HTYPE_ETHERNET);
        packet.set_protocol_type(EtherType::IPV4);
        packet.set_hardware_len(6);
        packet.set_protocol_len(4);
        packet.set_operation(self.operation);
        packet.set_source_hardware_addr(&self.source_hardware_addr);
        packet.set_source_protocol_addr(&self.source_protocol_addr.octets());
        packet.set_target_hardware_addr(&self.target_hardware_addr);
        packet.set_target_protocol_addr(&self.target_protocol_addr.octets());
    }

    /// The reply to this request from `our_mac` (which owns the target
    /// address).
    pub fn reply(&self, our_mac: MacAddr) -> ArpRepr {
        ArpRepr {
            operation: ArpOperation::REPLY,
            source_hardware_addr: our_mac,
            source_protocol_addr: self.target_protocol_addr,
            target_hardware_addr: self.source_hardware_addr,
            target_protocol_addr: self.source_protocol_addr,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // who-has 10.0.0.2 tell 10.0.0.1 (02:00:00:00:00:01).
    const REQ: [u8; 28] = [
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x0a,
        0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x00, 0x00, 0x02,
    ];

    #[test]
    fn known_answer() {
        let p = ArpPacket::new_checked(&REQ[..]).unwrap();
        assert_eq!(p.hardware_type(), 1);
        assert_eq!(p.protocol_type(), EtherType::IPV4);
        assert_eq!(p.operation(), ArpOperation::REQUEST);
        assert_eq!(p.packet_len(), 28);
        let r = ArpRepr::parse(&p).unwrap();
        assert_eq!(r.source_hardware_addr, [2, 0, 0, 0, 0, 1]);
        assert_eq!(r.source_protocol_addr, Ipv4Addr::new(10, 0, 0, 1));
        assert_eq!(r.target_hardware_addr, [0; 6]);
        assert_eq!(r.target_protocol_addr, Ipv4Addr::new(10, 0, 0, 2));
        let mut b = [0u8; 28];
        r.emit(&mut ArpPacket::new_unchecked(&mut b[..]));
        assert_eq!(b, REQ);
        let rep = r.reply([2, 0, 0, 0, 0, 2]);
        assert_eq!(rep.operation, ArpOperation::REPLY);
        assert_eq!(rep.target_hardware_addr, [2, 0, 0, 0, 0, 1]);
        assert_eq!(rep.source_protocol_addr, Ipv4Addr::new(10, 0, 0, 2));
    }

    #[test]
    fn errors() {
        for n in 0..28 {
            assert_eq!(
                ArpPacket::new_checked(&REQ[..n]).unwrap_err(),
                Error::Truncated
            );
        }
        let mut b = REQ;
        b[4] = 8; // hlen 8: needs 32 bytes
        assert_eq!(
            ArpPacket::new_checked(&b[..]).unwrap_err(),
            Error::Truncated
        );
        let mut b = REQ;
        b[4] = 2; // hlen 2: fits, but not Ethernet
        let p = ArpPacket::new_checked(&b[..]).unwrap();
        assert_eq!(p.source_hardware_addr(), &[2, 0]);
        assert_eq!(ArpRepr::parse(&p).unwrap_err(), Error::Unrecognized);
        let mut b = REQ;
        b[1] = 6;
        let p = ArpPacket::new_checked(&b[..]).unwrap();
        assert_eq!(ArpRepr::parse(&p).unwrap_err(), Error::Unrecognized);
        let mut b = REQ;
        b[7] = 3;
        let p = ArpPacket::new_checked(&b[..]).unwrap();
        assert_eq!(ArpRepr::parse(&p).unwrap_err(), Error::Unrecognized);
    }

    prop_compose! {
        fn arb_repr()(op in 1u16..3, sha in any::<[u8; 6]>(), spa in any::<u32>(), tha in any::<[u8; 6]>(), tpa in any::<u32>()) -> ArpRepr {
            ArpRepr { operation: ArpOperation(op), source_hardware_addr: sha, source_protocol_addr: spa.into(),
                      target_hardware_addr: tha, target_protocol_addr: tpa.into() }
        }
    }

    proptest! {
        #[test]
        fn roundtrip(r in arb_repr()) {
            let mut b = [0u8; 28];
            r.emit(&mut ArpPacket::new_unchecked(&mut b[..]));
            prop_assert_eq!(ArpRepr::parse(&ArpPacket::new_checked(&b[..]).unwrap()).unwrap(), r);
            for n in 0..28 {
                prop_assert!(ArpPacket::new_checked(&b[..n]).is_err());
            }
        }

        #[test]
        fn corrupt_lengths(r in arb_repr(), h in any::<u8>(), p in any::<u8>()) {
            let mut b = [0u8; 28];
            r.emit(&mut ArpPacket::new_unchecked(&mut b[..]));
            b[4] = h;
            b[5] = p;
            let res = ArpPacket::new_checked(&b[..]).and_then(|p| ArpRepr::parse(&p));
            if (h, p) != (6, 4) { prop_assert!(res.is_err()); }
        }

        #[test]
        fn never_panics(data in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Ok(p) = ArpPacket::new_checked(&data[..]) {
                let _ = (p.source_hardware_addr(), p.target_protocol_addr());
                let _ = ArpRepr::parse(&p);
            }
        }
    }
}
