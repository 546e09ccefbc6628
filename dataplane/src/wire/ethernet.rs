//! Ethernet II frames with up to two 802.1Q / 802.1ad VLAN tags.
//!
//! [`EthernetFrame`] is a view over the bytes of a frame. Its header is the
//! 14-byte Ethernet II header followed by every VLAN tag it carries (at most
//! [`MAX_VLAN_TAGS`]): `header_len()` and `payload()` account for the tags,
//! and `payload_ethertype()` is the EtherType after the last tag. The raw
//! outer EtherType field (bytes 12..14) is `ethertype()`.
//!
//! A frame with more than [`MAX_VLAN_TAGS`] tags is accepted by the view (its
//! `payload_ethertype()` is then itself a VLAN TPID) and refused by
//! [`EthernetRepr::parse`] with [`Error::Unrecognized`].

use core::fmt;

use super::{Error, Result};

/// A MAC address.
pub type MacAddr = [u8; 6];

/// The broadcast MAC address.
pub const BROADCAST: MacAddr = [0xff; 6];

/// How many VLAN tags a frame may carry (802.1ad S-tag + 802.1Q C-tag).
pub const MAX_VLAN_TAGS: usize = 2;

/// The length of an untagged Ethernet II header.
pub const HEADER_LEN: usize = 14;

/// The length of one VLAN tag (TPID + TCI).
pub const VLAN_TAG_LEN: usize = 4;

/// True for a group (multicast or broadcast) address.
#[inline]
pub fn is_multicast(mac: &MacAddr) -> bool {
    mac[0] & 0x01 != 0
}

/// True for ff:ff:ff:ff:ff:ff.
#[inline]
pub fn is_broadcast(mac: &MacAddr) -> bool {
    *mac == BROADCAST
}

/// True for a unicast address other than all-zero.
#[inline]
pub fn is_unicast(mac: &MacAddr) -> bool {
    !is_multicast(mac) && *mac != [0; 6]
}

/// The Ethernet multicast address for an IPv6 multicast group (RFC 2464 s.7):
/// 33:33 followed by the low 32 bits of the group.
#[inline]
pub fn ipv6_multicast_mac(group: &std::net::Ipv6Addr) -> MacAddr {
    let o = group.octets();
    [0x33, 0x33, o[12], o[13], o[14], o[15]]
}

/// The Ethernet multicast address for an IPv4 multicast group (RFC 1112 s.6.4).
#[inline]
pub fn ipv4_multicast_mac(group: &std::net::Ipv4Addr) -> MacAddr {
    let o = group.octets();
    [0x01, 0x00, 0x5e, o[1] & 0x7f, o[2], o[3]]
}

/// `Display` for a MAC address (`aa:bb:cc:dd:ee:ff`), without allocation.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Mac(pub MacAddr);

impl fmt::Display for Mac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            m[0], m[1], m[2], m[3], m[4], m[5]
        )
    }
}

impl fmt::Debug for Mac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// An EtherType value. Unknown values are kept as they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EtherType(pub u16);

impl EtherType {
    pub const IPV4: EtherType = EtherType(0x0800);
    pub const ARP: EtherType = EtherType(0x0806);
    /// 802.1Q customer VLAN tag (C-tag).
    pub const VLAN: EtherType = EtherType(0x8100);
    /// 802.1ad service VLAN tag (S-tag, "QinQ").
    pub const QINQ: EtherType = EtherType(0x88a8);
    pub const IPV6: EtherType = EtherType(0x86dd);
    /// MAC control (802.3 annex 31B PAUSE, 802.1Qbb PFC).
    pub const MAC_CONTROL: EtherType = EtherType(0x8808);

    /// True for a TPID that introduces a VLAN tag (0x8100 or 0x88a8).
    #[inline]
    pub const fn is_vlan(self) -> bool {
        self.0 == 0x8100 || self.0 == 0x88a8
    }
}

impl From<u16> for EtherType {
    fn from(v: u16) -> Self {
        EtherType(v)
    }
}

impl From<EtherType> for u16 {
    fn from(v: EtherType) -> Self {
        v.0
    }
}

impl fmt::Display for EtherType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            EtherType::IPV4 => f.write_str("IPv4"),
            EtherType::ARP => f.write_str("ARP"),
            EtherType::VLAN => f.write_str("802.1Q"),
            EtherType::QINQ => f.write_str("802.1ad"),
            EtherType::IPV6 => f.write_str("IPv6"),
            EtherType::MAC_CONTROL => f.write_str("MAC-control"),
            EtherType(v) => write!(f, "0x{v:04x}"),
        }
    }
}

mod field {
    use core::ops::Range;
    pub const DST: Range<usize> = 0..6;
    pub const SRC: Range<usize> = 6..12;
    pub const ETHERTYPE: Range<usize> = 12..14;
    pub const TAGS: usize = 14;
    // Within a tag, relative to its start (the tag's TPID is the preceding
    // EtherType field, so a "tag" here is TCI + next EtherType).
    pub const TCI: Range<usize> = 0..2;
    pub const NEXT_TYPE: Range<usize> = 2..4;
}

/// One VLAN tag: the TPID that introduced it and its TCI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VlanTag {
    /// The TPID ([`EtherType::VLAN`] or [`EtherType::QINQ`]).
    pub tpid: EtherType,
    /// Priority code point (3 bits).
    pub pcp: u8,
    /// Drop eligible indicator.
    pub dei: bool,
    /// VLAN identifier (12 bits).
    pub vid: u16,
}

impl VlanTag {
    /// The tag control information word.
    #[inline]
    pub const fn tci(&self) -> u16 {
        ((self.pcp as u16 & 0x7) << 13) | ((self.dei as u16) << 12) | (self.vid & 0x0fff)
    }

    /// Split a TCI word.
    #[inline]
    pub const fn from_tci(tpid: EtherType, tci: u16) -> VlanTag {
        VlanTag {
            tpid,
            pcp: (tci >> 13) as u8,
            dei: tci & 0x1000 != 0,
            vid: tci & 0x0fff,
        }
    }
}

/// A view over an Ethernet II frame, with its VLAN tags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EthernetFrame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    /// Wrap a buffer without checking it. Accessors may panic on a short
    /// buffer; use [`new_checked`](Self::new_checked) for untrusted input.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> EthernetFrame<T> {
        EthernetFrame { buffer }
    }

    /// Wrap a buffer and check that the header and every VLAN tag (up to
    /// [`MAX_VLAN_TAGS`]) fit.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<EthernetFrame<T>> {
        let f = Self::new_unchecked(buffer);
        f.check_len()?;
        Ok(f)
    }

    /// `Err(Truncated)` if the buffer is shorter than the header with its tags.
    #[inline]
    pub fn check_len(&self) -> Result<()> {
        let data = self.buffer.as_ref();
        if data.len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let mut ty = EtherType(u16::from_be_bytes([data[12], data[13]]));
        let mut off = field::TAGS;
        let mut n = 0;
        while ty.is_vlan() && n < MAX_VLAN_TAGS {
            if data.len() < off + VLAN_TAG_LEN {
                return Err(Error::Truncated);
            }
            ty = EtherType(u16::from_be_bytes([data[off + 2], data[off + 3]]));
            off += VLAN_TAG_LEN;
            n += 1;
        }
        Ok(())
    }

    /// Give back the buffer.
    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The destination address.
    #[inline]
    pub fn dst_addr(&self) -> MacAddr {
        let mut a = [0; 6];
        a.copy_from_slice(&self.buffer.as_ref()[field::DST]);
        a
    }

    /// The source address.
    #[inline]
    pub fn src_addr(&self) -> MacAddr {
        let mut a = [0; 6];
        a.copy_from_slice(&self.buffer.as_ref()[field::SRC]);
        a
    }

    /// The raw EtherType field at bytes 12..14 (a TPID if the frame is tagged).
    #[inline]
    pub fn ethertype(&self) -> EtherType {
        let d = &self.buffer.as_ref()[field::ETHERTYPE];
        EtherType(u16::from_be_bytes([d[0], d[1]]))
    }

    /// How many VLAN tags the header holds (0..=[`MAX_VLAN_TAGS`]).
    #[inline]
    pub fn vlan_count(&self) -> usize {
        let data = self.buffer.as_ref();
        let mut ty = self.ethertype();
        let mut n = 0;
        while ty.is_vlan() && n < MAX_VLAN_TAGS {
            let off = field::TAGS + n * VLAN_TAG_LEN;
            ty = EtherType(u16::from_be_bytes([data[off + 2], data[off + 3]]));
            n += 1;
        }
        n
    }

    /// The header length including VLAN tags.
    #[inline]
    pub fn header_len(&self) -> usize {
        HEADER_LEN + self.vlan_count() * VLAN_TAG_LEN
    }

    /// Tag `i` (0 = outermost), if present.
    #[inline]
    pub fn vlan_tag(&self, i: usize) -> Option<VlanTag> {
        if i >= self.vlan_count() {
            return None;
        }
        let data = self.buffer.as_ref();
        let tpid_off = if i == 0 {
            field::ETHERTYPE.start
        } else {
            field::TAGS + (i - 1) * 4 + 2
        };
        let tpid = EtherType(u16::from_be_bytes([data[tpid_off], data[tpid_off + 1]]));
        let off = field::TAGS + i * VLAN_TAG_LEN;
        let tci = u16::from_be_bytes([
            data[off + field::TCI.start],
            data[off + field::TCI.start + 1],
        ]);
        Some(VlanTag::from_tci(tpid, tci))
    }

    /// The outermost VLAN identifier, if the frame is tagged.
    #[inline]
    pub fn outer_vid(&self) -> Option<u16> {
        self.vlan_tag(0).map(|t| t.vid)
    }

    /// The EtherType of the payload, after the last VLAN tag.
    #[inline]
    pub fn payload_ethertype(&self) -> EtherType {
        let n = self.vlan_count();
        if n == 0 {
            return self.ethertype();
        }
        let off = field::TAGS + (n - 1) * VLAN_TAG_LEN + field::NEXT_TYPE.start;
        let d = self.buffer.as_ref();
        EtherType(u16::from_be_bytes([d[off], d[off + 1]]))
    }

    /// The bytes after the header and its tags.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        let h = self.header_len();
        &self.buffer.as_ref()[h..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EthernetFrame<T> {
    #[inline]
    pub fn set_dst_addr(&mut self, a: MacAddr) {
        self.buffer.as_mut()[field::DST].copy_from_slice(&a);
    }

    #[inline]
    pub fn set_src_addr(&mut self, a: MacAddr) {
        self.buffer.as_mut()[field::SRC].copy_from_slice(&a);
    }

    /// Set the raw EtherType field at bytes 12..14. Changing it to or from a
    /// VLAN TPID changes what `header_len()` reports.
    #[inline]
    pub fn set_ethertype(&mut self, t: EtherType) {
        self.buffer.as_mut()[field::ETHERTYPE].copy_from_slice(&t.0.to_be_bytes());
    }

    /// Set the EtherType after the last VLAN tag (the raw field if untagged).
    #[inline]
    pub fn set_payload_ethertype(&mut self, t: EtherType) {
        let n = self.vlan_count();
        let off = if n == 0 {
            field::ETHERTYPE.start
        } else {
            field::TAGS + (n - 1) * VLAN_TAG_LEN + field::NEXT_TYPE.start
        };
        self.buffer.as_mut()[off..off + 2].copy_from_slice(&t.0.to_be_bytes());
    }

    /// Rewrite the PCP/DEI/VID of tag `i` (its TPID is kept). Returns false
    /// if the frame has no such tag.
    #[inline]
    pub fn set_vlan_tci(&mut self, i: usize, tag: &VlanTag) -> bool {
        if i >= self.vlan_count() {
            return false;
        }
        let off = field::TAGS + i * VLAN_TAG_LEN;
        self.buffer.as_mut()[off..off + 2].copy_from_slice(&tag.tci().to_be_bytes());
        true
    }

    /// Swap source and destination addresses (for replies).
    #[inline]
    pub fn swap_addrs(&mut self) {
        let d = self.buffer.as_mut();
        for i in 0..6 {
            d.swap(i, i + 6);
        }
    }

    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let h = self.header_len();
        &mut self.buffer.as_mut()[h..]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for EthernetFrame<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// A high-level representation of an Ethernet II header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EthernetRepr {
    pub dst_addr: MacAddr,
    pub src_addr: MacAddr,
    /// Outermost tag (S-tag for QinQ, or the only C-tag).
    pub outer_vlan: Option<VlanTag>,
    /// Inner tag; only meaningful when `outer_vlan` is present.
    pub inner_vlan: Option<VlanTag>,
    /// The EtherType of the payload.
    pub ethertype: EtherType,
}

impl EthernetRepr {
    /// Parse a checked frame. Refuses a payload EtherType that is still a
    /// VLAN TPID (more than two tags) with [`Error::Unrecognized`].
    pub fn parse<T: AsRef<[u8]>>(frame: &EthernetFrame<T>) -> Result<EthernetRepr> {
        frame.check_len()?;
        let ethertype = frame.payload_ethertype();
        if ethertype.is_vlan() {
            return Err(Error::Unrecognized);
        }
        Ok(EthernetRepr {
            dst_addr: frame.dst_addr(),
            src_addr: frame.src_addr(),
            outer_vlan: frame.vlan_tag(0),
            inner_vlan: frame.vlan_tag(1),
            ethertype,
        })
    }

    /// The number of tags this header emits.
    #[inline]
    pub fn vlan_count(&self) -> usize {
        match (self.outer_vlan, self.inner_vlan) {
            (None, _) => 0,
            (Some(_), None) => 1,
            (Some(_), Some(_)) => 2,
        }
    }

    /// The header length, tags included.
    #[inline]
    pub fn header_len(&self) -> usize {
        HEADER_LEN + self.vlan_count() * VLAN_TAG_LEN
    }

    /// Same as `header_len()` (an Ethernet header has no length field).
    #[inline]
    pub fn buffer_len(&self) -> usize {
        self.header_len()
    }

    /// Write the header and tags into the start of `frame`'s buffer, which
    /// must hold at least `header_len()` bytes. A tag whose TPID is not a
    /// VLAN TPID is written as 802.1Q.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut EthernetFrame<T>) {
        let d = frame.buffer.as_mut();
        d[field::DST].copy_from_slice(&self.dst_addr);
        d[field::SRC].copy_from_slice(&self.src_addr);
        let mut type_off = field::ETHERTYPE.start;
        let tags = [
            self.outer_vlan,
            if self.outer_vlan.is_some() {
                self.inner_vlan
            } else {
                None
            },
        ];
        for tag in tags.iter().flatten() {
            let tpid = if tag.tpid.is_vlan() {
                tag.tpid
            } else {
                EtherType::VLAN
            };
            d[type_off..type_off + 2].copy_from_slice(&tpid.0.to_be_bytes());
            d[type_off + 2..type_off + 4].copy_from_slice(&tag.tci().to_be_bytes());
            type_off += VLAN_TAG_LEN;
        }
        d[type_off..type_off + 2].copy_from_slice(&self.ethertype.0.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // dst 01:02:03:04:05:06 src 11:12:13:14:15:16, IPv4, payload aa bb.
    const PLAIN: [u8; 16] = [
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x08, 0x00, 0xaa,
        0xbb,
    ];

    // QinQ: S-tag pcp 5 dei 1 vid 100, C-tag pcp 0 vid 4094, IPv6.
    const QINQ: [u8; 24] = [
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x88, 0xa8, 0xb0,
        0x64, 0x81, 0x00, 0x0f, 0xfe, 0x86, 0xdd, 0x60, 0x00,
    ];

    #[test]
    fn parse_plain() {
        let f = EthernetFrame::new_checked(&PLAIN[..]).unwrap();
        assert_eq!(f.dst_addr(), [1, 2, 3, 4, 5, 6]);
        assert_eq!(f.src_addr(), [0x11, 0x12, 0x13, 0x14, 0x15, 0x16]);
        assert_eq!(f.ethertype(), EtherType::IPV4);
        assert_eq!(f.payload_ethertype(), EtherType::IPV4);
        assert_eq!(f.vlan_count(), 0);
        assert_eq!(f.header_len(), 14);
        assert_eq!(f.payload(), &[0xaa, 0xbb]);
        assert_eq!(f.vlan_tag(0), None);
        let r = EthernetRepr::parse(&f).unwrap();
        assert_eq!(r.ethertype, EtherType::IPV4);
        let mut buf = [0u8; 16];
        buf[14..].copy_from_slice(&[0xaa, 0xbb]);
        r.emit(&mut EthernetFrame::new_unchecked(&mut buf[..]));
        assert_eq!(buf, PLAIN);
    }

    #[test]
    fn parse_qinq() {
        let f = EthernetFrame::new_checked(&QINQ[..]).unwrap();
        assert_eq!(f.vlan_count(), 2);
        assert_eq!(f.header_len(), 22);
        assert!(is_broadcast(&f.dst_addr()));
        assert_eq!(f.ethertype(), EtherType::QINQ);
        assert_eq!(f.payload_ethertype(), EtherType::IPV6);
        assert_eq!(
            f.vlan_tag(0),
            Some(VlanTag {
                tpid: EtherType::QINQ,
                pcp: 5,
                dei: true,
                vid: 100
            })
        );
        assert_eq!(
            f.vlan_tag(1),
            Some(VlanTag {
                tpid: EtherType::VLAN,
                pcp: 0,
                dei: false,
                vid: 4094
            })
        );
        assert_eq!(f.outer_vid(), Some(100));
        assert_eq!(f.payload(), &[0x60, 0x00]);
        let r = EthernetRepr::parse(&f).unwrap();
        let mut buf = [0u8; 24];
        buf[22] = 0x60;
        r.emit(&mut EthernetFrame::new_unchecked(&mut buf[..]));
        assert_eq!(buf, QINQ);
    }

    #[test]
    fn truncated() {
        for n in 0..14 {
            assert_eq!(
                EthernetFrame::new_checked(&PLAIN[..n]).unwrap_err(),
                Error::Truncated
            );
        }
        for n in 0..22 {
            assert_eq!(
                EthernetFrame::new_checked(&QINQ[..n]).unwrap_err(),
                Error::Truncated
            );
        }
        assert!(EthernetFrame::new_checked(&QINQ[..22]).is_ok());
    }

    #[test]
    fn three_tags_refused() {
        let mut b = [0u8; 30];
        b[12..14].copy_from_slice(&[0x81, 0x00]);
        b[16..18].copy_from_slice(&[0x81, 0x00]);
        b[20..22].copy_from_slice(&[0x81, 0x00]);
        b[24..26].copy_from_slice(&[0x08, 0x00]);
        let f = EthernetFrame::new_checked(&b[..]).unwrap();
        assert_eq!(f.vlan_count(), 2);
        assert_eq!(f.payload_ethertype(), EtherType::VLAN);
        assert_eq!(EthernetRepr::parse(&f).unwrap_err(), Error::Unrecognized);
    }

    #[test]
    fn setters() {
        let mut b = QINQ;
        let mut f = EthernetFrame::new_unchecked(&mut b[..]);
        f.swap_addrs();
        assert_eq!(f.src_addr(), BROADCAST);
        assert_eq!(f.dst_addr(), [2, 0, 0, 0, 0, 1]);
        f.set_payload_ethertype(EtherType::IPV4);
        assert_eq!(f.payload_ethertype(), EtherType::IPV4);
        assert_eq!(f.ethertype(), EtherType::QINQ);
        assert!(f.set_vlan_tci(
            1,
            &VlanTag {
                tpid: EtherType::VLAN,
                pcp: 7,
                dei: false,
                vid: 5
            }
        ));
        assert!(!f.set_vlan_tci(
            2,
            &VlanTag {
                tpid: EtherType::VLAN,
                pcp: 7,
                dei: false,
                vid: 5
            }
        ));
        assert_eq!(f.vlan_tag(1).unwrap().vid, 5);
        assert_eq!(f.vlan_tag(1).unwrap().pcp, 7);
        f.payload_mut()[0] = 0x45;
        assert_eq!(b[22], 0x45);
    }

    #[test]
    fn multicast_macs() {
        let g: std::net::Ipv6Addr = "ff02::1:ff00:1234".parse().unwrap();
        assert_eq!(ipv6_multicast_mac(&g), [0x33, 0x33, 0xff, 0x00, 0x12, 0x34]);
        let g4: std::net::Ipv4Addr = "239.129.2.3".parse().unwrap();
        assert_eq!(
            ipv4_multicast_mac(&g4),
            [0x01, 0x00, 0x5e, 0x01, 0x02, 0x03]
        );
        assert!(is_multicast(&[0x33, 0x33, 0, 0, 0, 1]));
        assert!(!is_unicast(&[0; 6]));
        assert_eq!(
            Mac([0xaa, 0xbb, 0xcc, 0, 1, 0xff]).to_string(),
            "aa:bb:cc:00:01:ff"
        );
        assert_eq!(EtherType(0x1234).to_string(), "0x1234");
    }

    fn arb_tag() -> impl Strategy<Value = VlanTag> {
        (
            prop_oneof![Just(EtherType::VLAN), Just(EtherType::QINQ)],
            0u8..8,
            any::<bool>(),
            0u16..4096,
        )
            .prop_map(|(tpid, pcp, dei, vid)| VlanTag {
                tpid,
                pcp,
                dei,
                vid,
            })
    }

    prop_compose! {
        pub(crate) fn arb_repr()(
            dst in any::<[u8; 6]>(), src in any::<[u8; 6]>(),
            outer in proptest::option::of(arb_tag()), inner in proptest::option::of(arb_tag()),
            ty in any::<u16>().prop_filter("not a TPID", |t| !EtherType(*t).is_vlan()),
        ) -> EthernetRepr {
            EthernetRepr {
                dst_addr: dst, src_addr: src, outer_vlan: outer,
                inner_vlan: if outer.is_some() { inner } else { None },
                ethertype: EtherType(ty),
            }
        }
    }

    proptest! {
        #[test]
        fn roundtrip(r in arb_repr(), payload in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut buf = vec![0u8; r.buffer_len() + payload.len()];
            let mut f = EthernetFrame::new_unchecked(&mut buf[..]);
            r.emit(&mut f);
            f.payload_mut().copy_from_slice(&payload);
            let f = EthernetFrame::new_checked(&buf[..]).unwrap();
            prop_assert_eq!(f.header_len(), r.header_len());
            prop_assert_eq!(f.payload(), &payload[..]);
            prop_assert_eq!(EthernetRepr::parse(&f).unwrap(), r);
        }

        #[test]
        fn truncation_is_error(r in arb_repr()) {
            let mut buf = vec![0u8; r.buffer_len()];
            r.emit(&mut EthernetFrame::new_unchecked(&mut buf[..]));
            for n in 0..buf.len() {
                prop_assert!(EthernetFrame::new_checked(&buf[..n]).is_err());
            }
        }

        #[test]
        fn never_panics(data in proptest::collection::vec(any::<u8>(), 0..40)) {
            if let Ok(f) = EthernetFrame::new_checked(&data[..]) {
                let _ = (f.vlan_tag(0), f.vlan_tag(1), f.vlan_tag(2), f.payload().len());
                let _ = EthernetRepr::parse(&f);
            }
        }
    }
}
