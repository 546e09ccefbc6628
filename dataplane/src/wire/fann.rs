//! Fast Network Notification (FANN), draft-hzh-fantel-wan-tunnel-03 s.5.
//!
//! The ICMPv6 message (s.5.1.1):
//!
//! ```text
//! |     Type      |     Code      |          Checksum             |
//! |    Version    |   Reserved    |   Hop Limit   |   Event Type  |
//! | Event Sub-Type|        Event Identifier (4 octets) ...
//! |                     Timestamp (8 octets)                      |
//! |              Originating Node IPv6 Address (16 octets)        |
//! |                       Bitmap (32 bits)                        |
//! |                   Metadata Stack (variable)                   |
//! ```
//!
//! Field sizes follow the text of s.5.1.2, which gives every field's length
//! in octets (the figure draws Event Sub-Type and the 4-octet Event
//! Identifier in one 32-bit row, which cannot hold both): Version 1,
//! Reserved 1, Hop Limit 1, Event Type 1, Event Sub-Type 1, Event Identifier
//! 4, Timestamp 8, Originating Node 16, Bitmap 4. The fixed part is thus
//! 37 octets after the 4-octet ICMPv6 header, unpadded.
//!
//! The UDP variant (s.5.2) carries the same fields from Version onwards as
//! the UDP payload (ICMPv6 Type/Code/Checksum replaced by the UDP header),
//! sent to the well-known port `Params::fann_udp_port`. [`Message`] is that
//! common part; [`Packet`] is the ICMPv6 message around it.
//!
//! Bitmap bit numbering: bit 0 is the most significant bit of the 32-bit
//! field, as in every IETF bit diagram (and as IOAM's trace-type bitmap,
//! RFC 9197, spells out); see [`bitmap_bit`]. The metadata stack holds one
//! fixed-size item per set bit, in ascending bit order (s.5.1.3/5.1.4):
//!
//! | bit | item | octets |
//! |---|---|---|
//! | 0 | Ingress Port ID | 4 |
//! | 1 | Egress Port ID | 4 |
//! | 2 | Ingress Timestamp | 8 |
//! | 3 | Egress Timestamp | 8 |
//! | 4 | Egress TX Link Utilization | 4 |
//! | 5 | Packet Loss | 4 |
//! | 6 | Latency / Delay (us) | 4 |
//! | 7 | Jitter (us) | 4 |
//! | 8 | Queue Occupancy (bytes) | 4 |
//! | 9 | Buffer Occupancy | 4 |
//! | 10 | Signal Degradation / Link Errors | 4 |
//! | 11 | Hard Failure / Link Down (flag in the low bit) | 4 |
//! | 12 | Microburst Detected (flag in the low bit) | 4 |
//! | 13 | Flow ID: src IPv6 16, dst IPv6 16, src port 2, dst port 2, protocol 1 | 37 |
//! | 14 | Path ID | 16 |
//! | 15-31 | reserved | (unknown) |
//!
//! Items are stacked in ascending bit order, so the items of the reserved
//! bits (15-31, "Reserved for future use"; their sizes unknown here) come
//! after every defined one: a message with reserved bits set is sized and
//! read by its defined bits, and whatever follows them is taken as the
//! future items (forwarded untouched; the ingress PE uses the items it
//! knows). A message shorter than 41 + the stack size the defined bits
//! imply is `Truncated` and is discarded — the s.6 rule that the lengths
//! must not exceed the payload. Octets after the stack (a sender that pads
//! the message to 4- or 8-octet rows, as the s.5.1.1 figure draws them, or
//! the reserved bits' items) are allowed and ignored: the metadata
//! accessors see only the stack. The view
//! must be given the message (the IPv6 payload / UDP payload), not a padded
//! frame tail, whose octets would be taken for the message's own.

use std::net::Ipv6Addr;

use super::checksum;
use super::{Error, Result};

/// The only version this draft defines.
pub const VERSION: u8 = 1;
/// IPv6 Next Header value of ICMPv6.
pub const IP_PROTO_ICMPV6: u8 = 58;

/// Code: event notification.
pub const CODE_EVENT: u8 = 0;
/// Code: recovery notification.
pub const CODE_RECOVERY: u8 = 1;

/// Event types (s.5.1.2).
pub mod event {
    pub const LINK_FAILURE: u8 = 0x01;
    pub const CONGESTION: u8 = 0x02;
    pub const PERFORMANCE_DEGRADATION: u8 = 0x03;
    pub const MICROBURST: u8 = 0x04;
    pub const SIGNAL_DEGRADATION: u8 = 0x05;
    pub const QUEUE_BUILDUP: u8 = 0x06;
    pub const RECOVERY: u8 = 0x07;
    /// Congestion sub-types.
    pub const CONGESTION_MILD: u8 = 0x01;
    pub const CONGESTION_MODERATE: u8 = 0x02;
    pub const CONGESTION_SEVERE: u8 = 0x03;
}

/// Metadata bit indices (s.5.1.3).
pub mod bit {
    pub const INGRESS_PORT_ID: u8 = 0;
    pub const EGRESS_PORT_ID: u8 = 1;
    pub const INGRESS_TIMESTAMP: u8 = 2;
    pub const EGRESS_TIMESTAMP: u8 = 3;
    pub const EGRESS_TX_UTILIZATION: u8 = 4;
    pub const PACKET_LOSS: u8 = 5;
    pub const LATENCY: u8 = 6;
    pub const JITTER: u8 = 7;
    pub const QUEUE_OCCUPANCY: u8 = 8;
    pub const BUFFER_OCCUPANCY: u8 = 9;
    pub const SIGNAL_DEGRADATION: u8 = 10;
    pub const LINK_DOWN: u8 = 11;
    pub const MICROBURST: u8 = 12;
    pub const FLOW_ID: u8 = 13;
    pub const PATH_ID: u8 = 14;
}

/// Number of defined metadata bits (0..=14).
pub const DEFINED_BITS: u8 = 15;

/// Octets of the metadata item of each defined bit.
pub const ITEM_SIZES: [usize; DEFINED_BITS as usize] =
    [4, 4, 8, 8, 4, 4, 4, 4, 4, 4, 4, 4, 4, 37, 16];

/// The bitmap mask of bit `index` (0 = most significant).
#[inline]
pub const fn bitmap_bit(index: u8) -> u32 {
    0x8000_0000u32 >> (index & 31)
}

/// Bits 0..=14.
pub const DEFINED_MASK: u32 = !(u32::MAX >> DEFINED_BITS);

/// Size of the metadata stack the bitmap's defined bits (0-14) imply; the
/// items of reserved bits (15-31), of unknown size, follow it.
pub fn stack_len(bitmap: u32) -> usize {
    (0..DEFINED_BITS)
        .filter(|&b| bitmap & bitmap_bit(b) != 0)
        .map(|b| ITEM_SIZES[usize::from(b)])
        .sum()
}

/// Offset of bit `index`'s item within the stack (sum of lower set items).
fn item_offset(bitmap: u32, index: u8) -> usize {
    (0..index.min(DEFINED_BITS))
        .filter(|&b| bitmap & bitmap_bit(b) != 0)
        .map(|b| ITEM_SIZES[usize::from(b)])
        .sum()
}

mod field {
    pub type Field = core::ops::Range<usize>;
    // Relative to the start of the FANN fields (Version).
    pub const VERSION: usize = 0;
    pub const RESERVED: usize = 1;
    pub const HOP_LIMIT: usize = 2;
    pub const EVENT_TYPE: usize = 3;
    pub const EVENT_SUBTYPE: usize = 4;
    pub const EVENT_ID: Field = 5..9;
    pub const TIMESTAMP: Field = 9..17;
    pub const ORIGIN: Field = 17..33;
    pub const BITMAP: Field = 33..37;
    pub const METADATA: usize = 37;

    // The ICMPv6 header in front of them.
    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const CHECKSUM: Field = 2..4;
    pub const BODY: usize = 4;
}

/// Fixed FANN fields from Version to Bitmap (the UDP payload minimum).
pub const MESSAGE_FIXED_LEN: usize = field::METADATA;
/// ICMPv6 header length in front of them.
pub const ICMP_HEADER_LEN: usize = field::BODY;
/// Fixed length of the ICMPv6 FANN message.
pub const PACKET_FIXED_LEN: usize = ICMP_HEADER_LEN + MESSAGE_FIXED_LEN;

#[inline]
fn be_u32(d: &[u8]) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&d[..4]);
    u32::from_be_bytes(b)
}

#[inline]
fn be_u64(d: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    u64::from_be_bytes(b)
}

// ---------------------------------------------------------------------------
// The FANN message (fields from Version on; the UDP payload)
// ---------------------------------------------------------------------------

/// View of the FANN fields from Version to the end of the metadata stack:
/// the whole UDP payload of the UDP variant, or the ICMPv6 body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Message<T> {
    pub const fn new_unchecked(buffer: T) -> Self {
        Message { buffer }
    }

    pub fn new_checked(buffer: T) -> Result<Self> {
        let m = Self::new_unchecked(buffer);
        m.check_len()?;
        Ok(m)
    }

    /// `Truncated` below 37 octets or below 37 + the defined bits' stack.
    /// Octets after the stack are padding or reserved bits' items (s.6
    /// asks only that the lengths not exceed the payload).
    pub fn check_len(&self) -> Result<()> {
        let d = self.buffer.as_ref();
        if d.len() < MESSAGE_FIXED_LEN {
            return Err(Error::Truncated);
        }
        let need = MESSAGE_FIXED_LEN + stack_len(be_u32(&d[field::BITMAP]));
        if d.len() < need {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    /// Reserved bitmap bits (15-31) set: items this node does not know,
    /// after the stack.
    pub fn reserved_bits(&self) -> u32 {
        self.buffer.as_ref().get(field::BITMAP).map_or(0, |b| be_u32(b) & !DEFINED_MASK)
    }

    /// Octets after the metadata stack (padding, or reserved bits' items;
    /// ignored).
    pub fn padding_len(&self) -> usize {
        let d = self.buffer.as_ref();
        let stack = d.get(field::BITMAP).map_or(0, |b| stack_len(be_u32(b)));
        d.len().saturating_sub(MESSAGE_FIXED_LEN + stack)
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    #[inline]
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VERSION]
    }
    #[inline]
    pub fn reserved(&self) -> u8 {
        self.buffer.as_ref()[field::RESERVED]
    }
    #[inline]
    pub fn hop_limit(&self) -> u8 {
        self.buffer.as_ref()[field::HOP_LIMIT]
    }
    #[inline]
    pub fn event_type(&self) -> u8 {
        self.buffer.as_ref()[field::EVENT_TYPE]
    }
    #[inline]
    pub fn event_subtype(&self) -> u8 {
        self.buffer.as_ref()[field::EVENT_SUBTYPE]
    }
    #[inline]
    pub fn event_id(&self) -> u32 {
        be_u32(&self.buffer.as_ref()[field::EVENT_ID])
    }
    /// Microseconds since the Unix epoch.
    #[inline]
    pub fn timestamp(&self) -> u64 {
        be_u64(&self.buffer.as_ref()[field::TIMESTAMP])
    }
    #[inline]
    pub fn originating_node(&self) -> Ipv6Addr {
        let mut b = [0u8; 16];
        b.copy_from_slice(&self.buffer.as_ref()[field::ORIGIN]);
        Ipv6Addr::from(b)
    }
    #[inline]
    pub fn bitmap(&self) -> u32 {
        be_u32(&self.buffer.as_ref()[field::BITMAP])
    }

    /// Is metadata bit `index` present?
    #[inline]
    pub fn has(&self, index: u8) -> bool {
        index < DEFINED_BITS && self.bitmap() & bitmap_bit(index) != 0
    }

    /// The metadata stack.
    #[inline]
    pub fn metadata_bytes(&self) -> &[u8] {
        let d = self.buffer.as_ref();
        let end = d.len() - self.padding_len();
        d.get(field::METADATA..end).unwrap_or(&[])
    }

    /// The item of bit `index`, if present and inside the buffer.
    pub fn item(&self, index: u8) -> Option<&[u8]> {
        if !self.has(index) {
            return None;
        }
        let off = item_offset(self.bitmap(), index);
        self.metadata_bytes()
            .get(off..off + ITEM_SIZES[usize::from(index)])
    }

    /// A 4-octet item as a number.
    pub fn item_u32(&self, index: u8) -> Option<u32> {
        self.item(index).filter(|i| i.len() == 4).map(be_u32)
    }

    /// An 8-octet item as a number.
    pub fn item_u64(&self, index: u8) -> Option<u64> {
        self.item(index).filter(|i| i.len() == 8).map(be_u64)
    }

    /// The Flow ID item (bit 13).
    pub fn flow_id(&self) -> Option<FlowId> {
        self.item(bit::FLOW_ID).map(FlowId::from_bytes)
    }

    /// The Path ID item (bit 14).
    pub fn path_id(&self) -> Option<[u8; 16]> {
        self.item(bit::PATH_ID).and_then(|i| i.try_into().ok())
    }

    /// Every present item in ascending bit order (allocation-free).
    pub fn items(&self) -> Items<'_> {
        Items {
            bitmap: self.bitmap(),
            data: self.metadata_bytes(),
            next_bit: 0,
            pos: 0,
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Message<T> {
    #[inline]
    pub fn set_version(&mut self, v: u8) {
        self.buffer.as_mut()[field::VERSION] = v;
    }
    #[inline]
    pub fn set_reserved(&mut self, v: u8) {
        self.buffer.as_mut()[field::RESERVED] = v;
    }
    #[inline]
    pub fn set_hop_limit(&mut self, v: u8) {
        self.buffer.as_mut()[field::HOP_LIMIT] = v;
    }
    #[inline]
    pub fn set_event_type(&mut self, v: u8) {
        self.buffer.as_mut()[field::EVENT_TYPE] = v;
    }
    #[inline]
    pub fn set_event_subtype(&mut self, v: u8) {
        self.buffer.as_mut()[field::EVENT_SUBTYPE] = v;
    }
    #[inline]
    pub fn set_event_id(&mut self, v: u32) {
        self.buffer.as_mut()[field::EVENT_ID].copy_from_slice(&v.to_be_bytes());
    }
    #[inline]
    pub fn set_timestamp(&mut self, v: u64) {
        self.buffer.as_mut()[field::TIMESTAMP].copy_from_slice(&v.to_be_bytes());
    }
    #[inline]
    pub fn set_originating_node(&mut self, a: &Ipv6Addr) {
        self.buffer.as_mut()[field::ORIGIN].copy_from_slice(&a.octets());
    }
    #[inline]
    pub fn set_bitmap(&mut self, v: u32) {
        self.buffer.as_mut()[field::BITMAP].copy_from_slice(&v.to_be_bytes());
    }

    /// The item of bit `index`, writable.
    pub fn item_mut(&mut self, index: u8) -> Option<&mut [u8]> {
        if !self.has(index) {
            return None;
        }
        let off = item_offset(self.bitmap(), index);
        let len = ITEM_SIZES[usize::from(index)];
        self.buffer
            .as_mut()
            .get_mut(field::METADATA + off..field::METADATA + off + len)
    }

    /// Decrement the Hop Limit (s.5.1.2: "decremented by each forwarding
    /// node; discarded when reaching zero"). Returns the new value;
    /// `Err(Malformed)` (unchanged) if it is already 0.
    pub fn decrement_hop_limit(&mut self) -> Result<u8> {
        let h = self.hop_limit();
        if h == 0 {
            return Err(Error::Malformed);
        }
        self.set_hop_limit(h - 1);
        Ok(h - 1)
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Message<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// Iterator over `(bit, item octets)` in ascending bit order.
#[derive(Debug, Clone)]
pub struct Items<'a> {
    bitmap: u32,
    data: &'a [u8],
    next_bit: u8,
    pos: usize,
}

impl<'a> Iterator for Items<'a> {
    type Item = (u8, &'a [u8]);
    fn next(&mut self) -> Option<(u8, &'a [u8])> {
        while self.next_bit < DEFINED_BITS {
            let b = self.next_bit;
            self.next_bit += 1;
            if self.bitmap & bitmap_bit(b) != 0 {
                let len = ITEM_SIZES[usize::from(b)];
                let item = self.data.get(self.pos..self.pos + len)?;
                self.pos += len;
                return Some((b, item));
            }
        }
        None
    }
}

/// The Flow ID item (bit 13): the 5-tuple.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FlowId {
    pub src: Ipv6Addr,
    pub dst: Ipv6Addr,
    pub src_port: u16,
    pub dst_port: u16,
    pub protocol: u8,
}

impl FlowId {
    pub const LEN: usize = 37;

    /// Decode from at least 37 octets (callers pass exactly the item).
    fn from_bytes(b: &[u8]) -> FlowId {
        let mut s = [0u8; 16];
        let mut d = [0u8; 16];
        s.copy_from_slice(&b[0..16]);
        d.copy_from_slice(&b[16..32]);
        FlowId {
            src: Ipv6Addr::from(s),
            dst: Ipv6Addr::from(d),
            src_port: u16::from_be_bytes([b[32], b[33]]),
            dst_port: u16::from_be_bytes([b[34], b[35]]),
            protocol: b[36],
        }
    }

    fn write(&self, b: &mut [u8]) {
        b[0..16].copy_from_slice(&self.src.octets());
        b[16..32].copy_from_slice(&self.dst.octets());
        b[32..34].copy_from_slice(&self.src_port.to_be_bytes());
        b[34..36].copy_from_slice(&self.dst_port.to_be_bytes());
        b[36] = self.protocol;
    }
}

// ---------------------------------------------------------------------------
// The ICMPv6 message
// ---------------------------------------------------------------------------

/// View of the ICMPv6 FANN message (Type, Code, Checksum, then [`Message`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    pub const fn new_unchecked(buffer: T) -> Self {
        Packet { buffer }
    }

    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// As [`Message::check_len`] for the part after the 4-octet ICMPv6
    /// header. The type is not checked here (it is a parameter; see
    /// [`PacketRepr::parse`]).
    pub fn check_len(&self) -> Result<()> {
        let d = self.buffer.as_ref();
        if d.len() < PACKET_FIXED_LEN {
            return Err(Error::Truncated);
        }
        Message::new_unchecked(&d[field::BODY..]).check_len()
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    #[inline]
    pub fn msg_type(&self) -> u8 {
        self.buffer.as_ref()[field::TYPE]
    }
    #[inline]
    pub fn msg_code(&self) -> u8 {
        self.buffer.as_ref()[field::CODE]
    }
    #[inline]
    pub fn checksum(&self) -> u16 {
        let d = self.buffer.as_ref();
        u16::from_be_bytes([d[field::CHECKSUM.start], d[field::CHECKSUM.start + 1]])
    }

    /// The FANN fields after the ICMPv6 header.
    #[inline]
    pub fn message(&self) -> Message<&[u8]> {
        Message::new_unchecked(&self.buffer.as_ref()[field::BODY..])
    }

    /// Does the ICMPv6 checksum (RFC 4443 s.2.3, IPv6 pseudo-header) verify
    /// for a packet from `src` to `dst`?
    pub fn verify_checksum(&self, src: &Ipv6Addr, dst: &Ipv6Addr) -> bool {
        let d = self.buffer.as_ref();
        let Ok(len) = u32::try_from(d.len()) else {
            return false;
        };
        let ph = checksum::pseudo_v6(&src.octets(), &dst.octets(), IP_PROTO_ICMPV6, len);
        checksum::fold(checksum::combine(ph, checksum::sum(d))) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    #[inline]
    pub fn set_msg_type(&mut self, v: u8) {
        self.buffer.as_mut()[field::TYPE] = v;
    }
    #[inline]
    pub fn set_msg_code(&mut self, v: u8) {
        self.buffer.as_mut()[field::CODE] = v;
    }
    #[inline]
    pub fn set_checksum(&mut self, v: u16) {
        self.buffer.as_mut()[field::CHECKSUM].copy_from_slice(&v.to_be_bytes());
    }

    /// The FANN fields, writable. Changing them invalidates the checksum.
    #[inline]
    pub fn message_mut(&mut self) -> Message<&mut [u8]> {
        Message::new_unchecked(&mut self.buffer.as_mut()[field::BODY..])
    }

    /// Compute and store the ICMPv6 checksum.
    pub fn fill_checksum(&mut self, src: &Ipv6Addr, dst: &Ipv6Addr) {
        self.set_checksum(0);
        let d = self.buffer.as_ref();
        let len = u32::try_from(d.len()).unwrap_or(u32::MAX);
        let ph = checksum::pseudo_v6(&src.octets(), &dst.octets(), IP_PROTO_ICMPV6, len);
        let c = !checksum::fold(checksum::combine(ph, checksum::sum(d)));
        self.set_checksum(c);
    }

    /// Decrement the Hop Limit and patch the checksum incrementally
    /// (RFC 1624). `Err(Malformed)` (unchanged) if it is already 0.
    pub fn decrement_hop_limit(&mut self) -> Result<u8> {
        // Hop Limit is the high byte of the 16-bit word at message offset 2
        // (packet offset 6, even): word = hop_limit << 8 | event_type.
        let (h, et) = {
            let m = self.message();
            (m.hop_limit(), m.event_type())
        };
        if h == 0 {
            return Err(Error::Malformed);
        }
        let old = u16::from_be_bytes([h, et]);
        let new = u16::from_be_bytes([h - 1, et]);
        self.message_mut().set_hop_limit(h - 1);
        let c = checksum::update16(self.checksum(), old, new);
        self.set_checksum(c);
        Ok(h - 1)
    }
}

/// FANN over UDP (s.5.2): decrement the Hop Limit of the Message in the
/// UDP segment `udp` (UDP header first) and patch the UDP checksum (RFC
/// 1624; a sum of 0 is sent as 0xffff, RFC 768). Returns the new value, or
/// `Ok(None)` (unchanged) when it is already 0; `Err` (nothing changed)
/// when the segment holds no well-formed Version 1 Message or its UDP
/// Length is not the segment's.
pub fn decrement_udp_hop_limit(udp: &mut [u8]) -> Result<Option<u8>> {
    if udp.len() < 8 || usize::from(u16::from_be_bytes([udp[4], udp[5]])) != udp.len() {
        return Err(Error::BadLength);
    }
    let (h, et) = {
        let mut m = Message::new_checked(udp.get_mut(8..).ok_or(Error::Truncated)?)?;
        if m.version() != VERSION {
            return Err(Error::Unrecognized);
        }
        let (h, et) = (m.hop_limit(), m.event_type());
        if h == 0 {
            return Ok(None);
        }
        m.set_hop_limit(h - 1);
        (h, et)
    };
    let c = checksum::update16(u16::from_be_bytes([udp[6], udp[7]]), u16::from_be_bytes([h, et]), u16::from_be_bytes([h - 1, et]));
    udp[6..8].copy_from_slice(&(if c == 0 { 0xffff } else { c }).to_be_bytes());
    Ok(Some(h - 1))
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Packet<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

// ---------------------------------------------------------------------------
// Reprs
// ---------------------------------------------------------------------------

/// The metadata stack, one optional item per defined bit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Metadata {
    pub ingress_port_id: Option<u32>,
    pub egress_port_id: Option<u32>,
    /// The draft gives no unit for the two timestamps; dcirouter writes
    /// microseconds since the Unix epoch, as in the header's Timestamp.
    pub ingress_timestamp: Option<u64>,
    pub egress_timestamp: Option<u64>,
    /// Percent (e.g. 95 = 0x5F).
    pub egress_tx_utilization: Option<u32>,
    pub packet_loss: Option<u32>,
    /// Microseconds.
    pub latency: Option<u32>,
    /// Microseconds.
    pub jitter: Option<u32>,
    /// Bytes.
    pub queue_occupancy: Option<u32>,
    pub buffer_occupancy: Option<u32>,
    pub signal_degradation: Option<u32>,
    /// Bit 11: the low bit of the 4-octet item (other bits zero on emit,
    /// ignored on parse).
    pub link_down: Option<bool>,
    /// Bit 12: as `link_down`.
    pub microburst: Option<bool>,
    pub flow_id: Option<FlowId>,
    pub path_id: Option<[u8; 16]>,
}

impl Metadata {
    /// The bitmap these items imply.
    pub fn bitmap(&self) -> u32 {
        let present = [
            self.ingress_port_id.is_some(),
            self.egress_port_id.is_some(),
            self.ingress_timestamp.is_some(),
            self.egress_timestamp.is_some(),
            self.egress_tx_utilization.is_some(),
            self.packet_loss.is_some(),
            self.latency.is_some(),
            self.jitter.is_some(),
            self.queue_occupancy.is_some(),
            self.buffer_occupancy.is_some(),
            self.signal_degradation.is_some(),
            self.link_down.is_some(),
            self.microburst.is_some(),
            self.flow_id.is_some(),
            self.path_id.is_some(),
        ];
        present
            .iter()
            .enumerate()
            .filter(|(_, p)| **p)
            .fold(0, |acc, (i, _)| acc | bitmap_bit(i as u8))
    }

    /// Octets of the stack.
    pub fn len(&self) -> usize {
        stack_len(self.bitmap())
    }

    pub fn is_empty(&self) -> bool {
        self.bitmap() == 0
    }

    fn parse<T: AsRef<[u8]>>(m: &Message<T>) -> Metadata {
        let u32_ = |b| m.item_u32(b);
        let flag = |b| m.item_u32(b).map(|v| v & 1 != 0);
        Metadata {
            ingress_port_id: u32_(bit::INGRESS_PORT_ID),
            egress_port_id: u32_(bit::EGRESS_PORT_ID),
            ingress_timestamp: m.item_u64(bit::INGRESS_TIMESTAMP),
            egress_timestamp: m.item_u64(bit::EGRESS_TIMESTAMP),
            egress_tx_utilization: u32_(bit::EGRESS_TX_UTILIZATION),
            packet_loss: u32_(bit::PACKET_LOSS),
            latency: u32_(bit::LATENCY),
            jitter: u32_(bit::JITTER),
            queue_occupancy: u32_(bit::QUEUE_OCCUPANCY),
            buffer_occupancy: u32_(bit::BUFFER_OCCUPANCY),
            signal_degradation: u32_(bit::SIGNAL_DEGRADATION),
            link_down: flag(bit::LINK_DOWN),
            microburst: flag(bit::MICROBURST),
            flow_id: m.flow_id(),
            path_id: m.path_id(),
        }
    }

    /// Write the items into a message whose bitmap is already set.
    fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, m: &mut Message<T>) {
        fn put(m: &mut Message<impl AsRef<[u8]> + AsMut<[u8]>>, b: u8, v: &[u8]) {
            if let Some(i) = m.item_mut(b) {
                i.copy_from_slice(v);
            }
        }
        let u32s = [
            (bit::INGRESS_PORT_ID, self.ingress_port_id),
            (bit::EGRESS_PORT_ID, self.egress_port_id),
            (bit::EGRESS_TX_UTILIZATION, self.egress_tx_utilization),
            (bit::PACKET_LOSS, self.packet_loss),
            (bit::LATENCY, self.latency),
            (bit::JITTER, self.jitter),
            (bit::QUEUE_OCCUPANCY, self.queue_occupancy),
            (bit::BUFFER_OCCUPANCY, self.buffer_occupancy),
            (bit::SIGNAL_DEGRADATION, self.signal_degradation),
            (bit::LINK_DOWN, self.link_down.map(u32::from)),
            (bit::MICROBURST, self.microburst.map(u32::from)),
        ];
        for (b, v) in u32s {
            if let Some(v) = v {
                put(m, b, &v.to_be_bytes());
            }
        }
        for (b, v) in [
            (bit::INGRESS_TIMESTAMP, self.ingress_timestamp),
            (bit::EGRESS_TIMESTAMP, self.egress_timestamp),
        ] {
            if let Some(v) = v {
                put(m, b, &v.to_be_bytes());
            }
        }
        if let Some(f) = &self.flow_id {
            if let Some(i) = m.item_mut(bit::FLOW_ID) {
                f.write(i);
            }
        }
        if let Some(p) = &self.path_id {
            put(m, bit::PATH_ID, p);
        }
    }
}

/// The FANN fields (common to the ICMPv6 and UDP variants). Version is
/// always 1 and Reserved 0 on emission.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MessageRepr {
    pub hop_limit: u8,
    pub event_type: u8,
    pub event_subtype: u8,
    pub event_id: u32,
    /// Microseconds since the Unix epoch.
    pub timestamp: u64,
    pub originating_node: Ipv6Addr,
    pub metadata: Metadata,
}

impl MessageRepr {
    /// Parse a message; `Unrecognized` if Version is not 1.
    pub fn parse<T: AsRef<[u8]>>(m: &Message<T>) -> Result<MessageRepr> {
        m.check_len()?;
        if m.version() != VERSION {
            return Err(Error::Unrecognized);
        }
        Ok(MessageRepr {
            hop_limit: m.hop_limit(),
            event_type: m.event_type(),
            event_subtype: m.event_subtype(),
            event_id: m.event_id(),
            timestamp: m.timestamp(),
            originating_node: m.originating_node(),
            metadata: Metadata::parse(m),
        })
    }

    pub fn buffer_len(&self) -> usize {
        MESSAGE_FIXED_LEN + self.metadata.len()
    }

    /// Emit into `m`, whose buffer must be exactly `buffer_len()` octets
    /// (`BadLength` otherwise).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, m: &mut Message<T>) -> Result<()> {
        if m.buffer.as_ref().len() != self.buffer_len() {
            return Err(Error::BadLength);
        }
        m.set_version(VERSION);
        m.set_reserved(0);
        m.set_hop_limit(self.hop_limit);
        m.set_event_type(self.event_type);
        m.set_event_subtype(self.event_subtype);
        m.set_event_id(self.event_id);
        m.set_timestamp(self.timestamp);
        m.set_originating_node(&self.originating_node);
        m.set_bitmap(self.metadata.bitmap());
        self.metadata.emit(m);
        Ok(())
    }

    /// Emit into a new vector (UDP payload).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = vec![0u8; self.buffer_len()];
        // Length matches by construction.
        let _ = self.emit(&mut Message::new_unchecked(&mut v[..]));
        v
    }
}

/// The ICMPv6 FANN message.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PacketRepr {
    /// ICMPv6 type in force (`Params::icmpv6_fann_type`).
    pub msg_type: u8,
    /// [`CODE_EVENT`] or [`CODE_RECOVERY`].
    pub code: u8,
    pub message: MessageRepr,
}

impl PacketRepr {
    /// Parse a message from `src` to `dst`. `Unrecognized` if the type is
    /// not `fann_type` or the version is not 1; `Checksum` if the ICMPv6
    /// checksum does not verify.
    pub fn parse<T: AsRef<[u8]>>(
        p: &Packet<T>,
        src: &Ipv6Addr,
        dst: &Ipv6Addr,
        fann_type: u8,
    ) -> Result<PacketRepr> {
        p.check_len()?;
        if p.msg_type() != fann_type {
            return Err(Error::Unrecognized);
        }
        if !p.verify_checksum(src, dst) {
            return Err(Error::Checksum);
        }
        Ok(PacketRepr {
            msg_type: p.msg_type(),
            code: p.msg_code(),
            message: MessageRepr::parse(&p.message())?,
        })
    }

    pub fn buffer_len(&self) -> usize {
        ICMP_HEADER_LEN + self.message.buffer_len()
    }

    /// Emit into `p` (exactly `buffer_len()` octets) and fill the checksum.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        p: &mut Packet<T>,
        src: &Ipv6Addr,
        dst: &Ipv6Addr,
    ) -> Result<()> {
        if p.buffer.as_ref().len() != self.buffer_len() {
            return Err(Error::BadLength);
        }
        p.set_msg_type(self.msg_type);
        p.set_msg_code(self.code);
        self.message.emit(&mut p.message_mut())?;
        p.fill_checksum(src, dst);
        Ok(())
    }

    pub fn to_bytes(&self, src: &Ipv6Addr, dst: &Ipv6Addr) -> Vec<u8> {
        let mut v = vec![0u8; self.buffer_len()];
        let _ = self.emit(&mut Packet::new_unchecked(&mut v[..]), src, dst);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const T: u8 = 201;

    fn a(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    /// The draft's s.5.1.4 example: bits 1, 4, 6, 10 with the values given
    /// there, in a congestion event.
    fn example_repr() -> PacketRepr {
        PacketRepr {
            msg_type: T,
            code: CODE_EVENT,
            message: MessageRepr {
                hop_limit: 8,
                event_type: event::CONGESTION,
                event_subtype: event::CONGESTION_SEVERE,
                event_id: 0xdead_beef,
                timestamp: 1_700_000_000_000_000,
                originating_node: a("2001:db8::11"),
                metadata: Metadata {
                    egress_port_id: Some(8),
                    egress_tx_utilization: Some(0x5a),
                    latency: Some(0x3e8),
                    signal_degradation: Some(0x0a),
                    ..Metadata::default()
                },
            },
        }
    }

    fn example_bytes() -> Vec<u8> {
        let mut v = vec![
            201, 0, 0x00, 0x00, // type, code, checksum (patched)
            1, 0, 8, 0x02, // version, reserved, hop limit, event type
            0x03, // event sub-type
            0xde, 0xad, 0xbe, 0xef, // event identifier
        ];
        v.extend(1_700_000_000_000_000u64.to_be_bytes());
        v.extend(a("2001:db8::11").octets());
        // Bitmap: bits 1, 4, 6, 10 (bit 0 = MSB):
        // 0100 1010 0010 0000 ... = 0x4a20_0000
        v.extend([0x4a, 0x20, 0x00, 0x00]);
        v.extend([0, 0, 0, 8]);
        v.extend([0, 0, 0, 0x5a]);
        v.extend([0, 0, 0x03, 0xe8]);
        v.extend([0, 0, 0, 0x0a]);
        v
    }

    const SRC: &str = "2001:db8::11";
    const DST: &str = "2001:db8::1";

    /// The checksum of `example_bytes()` from SRC to DST, by a plain
    /// word-by-word one's-complement sum written out here (independent of
    /// `wire::checksum`), and the value scapy's `in6_chksum` gives for the
    /// same octets (0xaa89).
    ///
    /// Pseudo-header: src 2001:0db8::0011 and dst 2001:0db8::0001 contribute
    /// 0x2001 + 0x0db8 + 0x0011 and 0x2001 + 0x0db8 + 0x0001; upper-layer
    /// length 57; next header 58.
    #[test]
    fn checksum_by_hand() {
        let b = example_bytes();
        assert_eq!(b.len(), 57);
        let mut s: u64 = 0;
        for c in b.chunks(2) {
            let w = if c.len() == 2 {
                u16::from_be_bytes([c[0], c[1]])
            } else {
                u16::from(c[0]) << 8
            };
            s += u64::from(w);
        }
        s += 0x2001 + 0x0db8 + 0x0011 + 0x2001 + 0x0db8 + 0x0001 + 57 + 58;
        while s > 0xffff {
            s = (s & 0xffff) + (s >> 16);
        }
        let by_hand = !(s as u16);
        assert_eq!(by_hand, 0xaa89);
        let emitted = example_repr().to_bytes(&a(SRC), &a(DST));
        assert_eq!(u16::from_be_bytes([emitted[2], emitted[3]]), 0xaa89);
    }

    #[test]
    fn byte_exact_example() {
        let r = example_repr();
        let emitted = r.to_bytes(&a(SRC), &a(DST));
        let mut expect = example_bytes();
        expect[2..4].copy_from_slice(&emitted[2..4]);
        assert_eq!(emitted, expect);
        let p = Packet::new_checked(&emitted[..]).unwrap();
        assert!(p.verify_checksum(&a(SRC), &a(DST)));
        assert_eq!(PacketRepr::parse(&p, &a(SRC), &a(DST), T).unwrap(), r);
        let m = p.message();
        assert_eq!(m.bitmap(), 0x4a20_0000);
        let items: Vec<(u8, Vec<u8>)> = m.items().map(|(b, i)| (b, i.to_vec())).collect();
        assert_eq!(
            items,
            vec![
                (1, vec![0, 0, 0, 8]),
                (4, vec![0, 0, 0, 0x5a]),
                (6, vec![0, 0, 0x03, 0xe8]),
                (10, vec![0, 0, 0, 0x0a])
            ]
        );
        assert_eq!(m.item_u32(bit::LATENCY), Some(1000));
        assert_eq!(m.item_u32(bit::JITTER), None);
        assert_eq!(
            PacketRepr::parse(&p, &a(SRC), &a(DST), 200),
            Err(Error::Unrecognized)
        );
        assert!(PacketRepr::parse(&p, &a(DST), &a(SRC), T).is_ok()); // symmetric sum
        assert_eq!(
            PacketRepr::parse(&p, &a("::1"), &a(DST), T),
            Err(Error::Checksum)
        );
    }

    #[test]
    fn flow_and_path_id_sizes() {
        let mut r = example_repr();
        r.message.metadata = Metadata {
            ingress_timestamp: Some(1),
            link_down: Some(true),
            microburst: Some(false),
            flow_id: Some(FlowId {
                src: a("2001:db8::a"),
                dst: a("2001:db8::b"),
                src_port: 49152,
                dst_port: 4791,
                protocol: 17,
            }),
            path_id: Some([0x5a; 16]),
            ..Metadata::default()
        };
        let b = r.to_bytes(&a(SRC), &a(DST));
        assert_eq!(b.len(), 41 + 8 + 4 + 4 + 37 + 16);
        let p = Packet::new_checked(&b[..]).unwrap();
        let m = p.message();
        assert_eq!(
            m.bitmap(),
            bitmap_bit(2) | bitmap_bit(11) | bitmap_bit(12) | bitmap_bit(13) | bitmap_bit(14)
        );
        assert_eq!(m.bitmap(), 0x201e_0000);
        // Flow ID right after ts(8) + link down(4) + microburst(4).
        assert_eq!(&m.metadata_bytes()[16..32], &a("2001:db8::a").octets());
        assert_eq!(&m.metadata_bytes()[48..50], &49152u16.to_be_bytes());
        assert_eq!(m.metadata_bytes()[52], 17);
        assert_eq!(&m.metadata_bytes()[53..69], &[0x5a; 16]);
        assert_eq!(&m.metadata_bytes()[8..16], &[0, 0, 0, 1, 0, 0, 0, 0]);
        assert_eq!(PacketRepr::parse(&p, &a(SRC), &a(DST), T).unwrap(), r);
    }

    #[test]
    fn length_mismatch_and_reserved_bits() {
        let r = example_repr();
        let b = r.to_bytes(&a(SRC), &a(DST));
        // Padded to the next 8-octet row (s.6: the lengths must not exceed
        // the payload; octets after the stack are ignored).
        let mut longer = b.clone();
        let pad = 8 - (b.len() - 4) % 8;
        longer.extend(vec![0u8; pad]);
        let mut p = Packet::new_checked(&mut longer[..]).unwrap();
        p.fill_checksum(&a(SRC), &a(DST));
        let p = Packet::new_checked(&longer[..]).unwrap();
        let m = Message::new_checked(&longer[4..]).unwrap();
        assert_eq!(m.padding_len(), pad);
        assert_eq!(m.metadata_bytes(), &b[4 + MESSAGE_FIXED_LEN..]);
        assert_eq!(PacketRepr::parse(&p, &a(SRC), &a(DST), T).unwrap(), r);
        assert_eq!(
            Packet::new_checked(&b[..b.len() - 1]).unwrap_err(),
            Error::Truncated
        );
        assert_eq!(Packet::new_checked(&b[..10]).unwrap_err(), Error::Truncated);
        // Reserved bits (15-31): their items, of unknown size, follow the
        // defined ones; the message is read by the bits it knows.
        for (at, bit) in [(40usize, 0x01u8), (38, 0x01)] {
            let mut rb = b.clone();
            rb[at] |= bit; // bit 31, bit 15
            rb.extend_from_slice(&[0xab; 4]); // the future item
            let p = Packet::new_checked(&rb[..]).unwrap();
            assert_ne!(p.message().reserved_bits(), 0);
            assert_eq!(p.message().padding_len(), 4);
            let mut want = r.clone();
            want.message.metadata = Metadata::parse(&p.message());
            assert_eq!(want.message.metadata, r.message.metadata, "the defined items as sent");
        }
        let mut bb = b.clone();
        bb[37] |= 0x80; // bit 0 added: 4 more octets claimed
        assert_eq!(Packet::new_checked(&bb[..]).unwrap_err(), Error::Truncated);
        let mut v = b.clone();
        v[4] = 2;
        let p = Packet::new_checked(&v[..]).unwrap();
        assert_eq!(MessageRepr::parse(&p.message()), Err(Error::Unrecognized));
    }

    #[test]
    fn udp_variant_is_the_message() {
        let r = example_repr();
        let icmp = r.to_bytes(&a(SRC), &a(DST));
        let udp = r.message.to_bytes();
        assert_eq!(&icmp[4..], &udp[..]);
        let m = Message::new_checked(&udp[..]).unwrap();
        assert_eq!(MessageRepr::parse(&m).unwrap(), r.message);
    }

    #[test]
    fn hop_limit_decrement_keeps_checksum() {
        let mut b = example_repr().to_bytes(&a(SRC), &a(DST));
        let mut p = Packet::new_checked(&mut b[..]).unwrap();
        for expect in (0..8).rev() {
            assert_eq!(p.decrement_hop_limit(), Ok(expect));
            assert!(p.verify_checksum(&a(SRC), &a(DST)));
        }
        assert_eq!(p.decrement_hop_limit(), Err(Error::Malformed));
        let mut m = example_repr().message.to_bytes();
        let mut mm = Message::new_checked(&mut m[..]).unwrap();
        assert_eq!(mm.decrement_hop_limit(), Ok(7));
        // Over UDP: the UDP checksum stays right down to 0, then no change.
        let msg = example_repr().message.to_bytes();
        let mut udp = [&[0xc1, 0x2e, 0xc2, 0x7e][..], &((8 + msg.len()) as u16).to_be_bytes(), &[0, 0], &msg].concat();
        let (s, d) = (a(SRC).octets(), a(DST).octets());
        let sum = |u: &[u8]| checksum::fold(checksum::combine(checksum::pseudo_v6(&s, &d, 17, u.len() as u32), checksum::sum(u)));
        let c = !sum(&udp);
        udp[6..8].copy_from_slice(&c.to_be_bytes());
        for expect in (0..8).rev() {
            assert_eq!(decrement_udp_hop_limit(&mut udp), Ok(Some(expect)));
            assert_eq!(udp[10], expect);
            assert_eq!(sum(&udp), 0xffff, "UDP checksum at Hop Limit {expect}");
        }
        let before = udp.clone();
        assert_eq!(decrement_udp_hop_limit(&mut udp), Ok(None));
        assert_eq!(udp, before);
        assert!(decrement_udp_hop_limit(&mut udp[..12]).is_err());
        assert!(decrement_udp_hop_limit(&mut udp[..4]).is_err());
        // Not FANN: another Version, or a UDP Length other than the
        // segment's; nothing changes.
        let mut other = before.clone();
        other[10] = 5;
        other[8] = 2;
        let copy = other.clone();
        assert_eq!(decrement_udp_hop_limit(&mut other), Err(Error::Unrecognized));
        assert_eq!(other, copy);
        let mut other = before.clone();
        other[10] = 5;
        let short = (other.len() - 1) as u16;
        other[4..6].copy_from_slice(&short.to_be_bytes());
        let copy = other.clone();
        assert_eq!(decrement_udp_hop_limit(&mut other), Err(Error::BadLength));
        assert_eq!(other, copy);
    }

    // --- proptest ---

    fn arb_addr() -> impl Strategy<Value = Ipv6Addr> {
        any::<[u8; 16]>().prop_map(Ipv6Addr::from)
    }

    fn arb_metadata() -> impl Strategy<Value = Metadata> {
        (
            (
                any::<Option<u32>>(),
                any::<Option<u32>>(),
                any::<Option<u64>>(),
                any::<Option<u64>>(),
                any::<Option<u32>>(),
                any::<Option<u32>>(),
                any::<Option<u32>>(),
                any::<Option<u32>>(),
            ),
            (
                any::<Option<u32>>(),
                any::<Option<u32>>(),
                any::<Option<u32>>(),
                any::<Option<bool>>(),
                any::<Option<bool>>(),
                proptest::option::of((
                    arb_addr(),
                    arb_addr(),
                    any::<u16>(),
                    any::<u16>(),
                    any::<u8>(),
                )),
                any::<Option<[u8; 16]>>(),
            ),
        )
            .prop_map(
                |((a0, a1, a2, a3, a4, a5, a6, a7), (a8, a9, a10, a11, a12, f, p))| Metadata {
                    ingress_port_id: a0,
                    egress_port_id: a1,
                    ingress_timestamp: a2,
                    egress_timestamp: a3,
                    egress_tx_utilization: a4,
                    packet_loss: a5,
                    latency: a6,
                    jitter: a7,
                    queue_occupancy: a8,
                    buffer_occupancy: a9,
                    signal_degradation: a10,
                    link_down: a11,
                    microburst: a12,
                    flow_id: f.map(|(src, dst, src_port, dst_port, protocol)| FlowId {
                        src,
                        dst,
                        src_port,
                        dst_port,
                        protocol,
                    }),
                    path_id: p,
                },
            )
    }

    prop_compose! {
        fn arb_packet()(code in 0u8..2, hl in any::<u8>(), et in any::<u8>(), es in any::<u8>(),
                        id in any::<u32>(), ts in any::<u64>(), o in arb_addr(), md in arb_metadata()) -> PacketRepr {
            PacketRepr { msg_type: T, code, message: MessageRepr {
                hop_limit: hl, event_type: et, event_subtype: es, event_id: id, timestamp: ts,
                originating_node: o, metadata: md } }
        }
    }

    proptest! {
        #[test]
        fn roundtrip(r in arb_packet(), s in arb_addr(), d in arb_addr()) {
            let b = r.to_bytes(&s, &d);
            prop_assert_eq!(b.len(), r.buffer_len());
            let p = Packet::new_checked(&b[..]).unwrap();
            prop_assert_eq!(PacketRepr::parse(&p, &s, &d, T).unwrap(), r.clone());
            let m = r.message.to_bytes();
            prop_assert_eq!(MessageRepr::parse(&Message::new_checked(&m[..]).unwrap()).unwrap(), r.message);
        }

        #[test]
        fn truncation_is_an_error_and_extension_padding(r in arb_packet(), cut in any::<prop::sample::Index>(), extra in 1usize..50) {
            let b = r.to_bytes(&Ipv6Addr::LOCALHOST, &Ipv6Addr::LOCALHOST);
            let n = cut.index(b.len());
            prop_assert!(Packet::new_checked(&b[..n]).is_err());
            prop_assert!(Message::new_checked(&b[4..n.max(4)]).is_err());
            // Octets after the stack are padding: the same message.
            let mut l = b.clone();
            l.extend(vec![0xa5u8; extra]);
            prop_assert!(Packet::new_checked(&l[..]).is_ok());
            let m = Message::new_checked(&l[4..]).unwrap();
            prop_assert_eq!(m.padding_len(), extra);
            prop_assert_eq!(MessageRepr::parse(&m).unwrap(), r.message);
        }

        #[test]
        fn bitmap_change_refused_or_padding(r in arb_packet(), flip in 0u8..32) {
            let mut b = r.to_bytes(&Ipv6Addr::LOCALHOST, &Ipv6Addr::LOCALHOST);
            let old = u32::from_be_bytes([b[37], b[38], b[39], b[40]]);
            let new = old ^ bitmap_bit(flip);
            b[37..41].copy_from_slice(&new.to_be_bytes());
            // Setting a defined bit asks for an item the message does not
            // hold: refused. Setting a reserved one announces an item after
            // the stack, of a size unknown here: read by the defined bits.
            // Clearing one leaves its octets after the shorter stack, as
            // padding.
            if flip >= DEFINED_BITS {
                let m = Message::new_checked(&b[4..]).unwrap();
                prop_assert_eq!(m.reserved_bits(), new & !DEFINED_MASK);
                prop_assert_eq!(Metadata::parse(&m), r.message.metadata);
            } else if new & bitmap_bit(flip) != 0 {
                prop_assert!(Packet::new_checked(&b[..]).is_err());
            } else {
                let m = Message::new_checked(&b[4..]).unwrap();
                prop_assert_eq!(m.padding_len(), ITEM_SIZES[usize::from(flip)]);
            }
        }

        #[test]
        fn random_bytes_never_panic(b in prop::collection::vec(any::<u8>(), 0..200)) {
            if let Ok(p) = Packet::new_checked(&b[..]) {
                let _ = PacketRepr::parse(&p, &Ipv6Addr::LOCALHOST, &Ipv6Addr::LOCALHOST, T);
                let _ = p.message().items().count();
                for i in 0..40 { let _ = p.message().item(i); }
            }
            if let Ok(m) = Message::new_checked(&b[..]) {
                let _ = MessageRepr::parse(&m);
            }
        }
    }
}
