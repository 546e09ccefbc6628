//! IPv6 Segment Routing Header (RFC 8754) with its TLVs.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! | Next Header   |  Hdr Ext Len  | Routing Type  | Segments Left |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  Last Entry   |     Flags     |              Tag              |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |            Segment List[0] (128-bit IPv6 address)             |
//! |                              ...                              |
//! |            Segment List[n] (128-bit IPv6 address)             |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! //         Optional Type Length Value objects (variable)       //
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! TLVs understood here:
//!
//! * Pad1 (type 0, a single byte) and PadN (type 4), RFC 8754 s.2.1.1;
//! * HMAC (type 5), RFC 8754 s.2.1.2, with HMAC-SHA256 [`HmacKey`] /
//!   [`HmacKeyTable`], [`Srh::compute_hmac`], [`Srh::verify_hmac`] and the
//!   in-place [`Srh::fill_hmac`];
//! * End.MT (draft-li-spring-rdma-multicast-over-srv6-00 s.7.2), whose type is
//!   IANA-pending and therefore always passed in by the caller
//!   (`Params::srh_tlv_end_mt`): [`EndMtTlv`], [`Srh::end_mt_tlv_for`];
//! * anything else is skipped by its length ([`RawTlv`]).
//!
//! [`Srh::new_checked`] validates routing type 4, that Hdr Ext Len covers the
//! segment list (Last Entry + 1 segments), that Segments Left <= Last Entry + 1
//! and that every TLV lies inside the header, HMAC TLVs included; afterwards
//! no accessor panics. The End.MT TLV structure is checked when it is looked
//! up (its type is a parameter).
//!
//! The per-packet mutator is [`Srh::decrement_segments_left`], which returns
//! the new active segment (RFC 8754 s.4.3.1.1 / RFC 8986 s.4.1 "Decrement SL,
//! update the IPv6 DA with SRH[SL]").

use core::fmt;
use std::net::Ipv6Addr;

use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::{Error, Result};

/// Routing Type of the SRH (RFC 8754 s.2).
pub const ROUTING_TYPE: u8 = 4;
/// Length of the fixed part of the SRH.
pub const HEADER_LEN: usize = 8;
/// Length of one segment.
pub const SEGMENT_LEN: usize = 16;
/// Largest possible SRH: (255 + 1) * 8 octets.
pub const MAX_LEN: usize = 2048;

/// Pad1 TLV type (a single octet, no length field).
pub const TLV_PAD1: u8 = 0;
/// PadN TLV type.
pub const TLV_PADN: u8 = 4;
/// HMAC TLV type.
pub const TLV_HMAC: u8 = 5;

/// Largest HMAC field (RFC 8754 s.2.1.2: "in multiples of 8 octets, at most 32").
pub const HMAC_MAX_LEN: usize = 32;

mod field {
    pub type Field = core::ops::Range<usize>;

    pub const NEXT_HEADER: usize = 0;
    pub const HDR_EXT_LEN: usize = 1;
    pub const ROUTING_TYPE: usize = 2;
    pub const SEGMENTS_LEFT: usize = 3;
    pub const LAST_ENTRY: usize = 4;
    pub const FLAGS: usize = 5;
    pub const TAG: Field = 6..8;
    pub const SEGMENTS: usize = 8;
}

#[inline]
fn addr_at(data: &[u8], at: usize) -> Option<Ipv6Addr> {
    let b: [u8; 16] = data.get(at..at + 16)?.try_into().ok()?;
    Some(Ipv6Addr::from(b))
}

// ---------------------------------------------------------------------------
// The SRH view
// ---------------------------------------------------------------------------

/// A read/write view of a Segment Routing Header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Srh<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Srh<T> {
    /// Wrap a buffer without checking it. Accessors may panic on a short or
    /// inconsistent buffer; use [`Srh::new_checked`] on untrusted input.
    pub const fn new_unchecked(buffer: T) -> Srh<T> {
        Srh { buffer }
    }

    /// Wrap a buffer and validate it ([`Srh::check_len`]).
    pub fn new_checked(buffer: T) -> Result<Srh<T>> {
        let s = Self::new_unchecked(buffer);
        s.check_len()?;
        Ok(s)
    }

    /// Validate the header (RFC 8754 s.2 and s.4.3):
    ///
    /// * shorter than 8 octets or than `(Hdr Ext Len + 1) * 8`: `Truncated`;
    /// * Routing Type other than 4: `Unrecognized`;
    /// * segment list (Last Entry + 1 entries) not inside the header: `BadLength`;
    /// * Segments Left > Last Entry + 1: `Malformed`;
    /// * a TLV running past the end of the header, or an HMAC TLV whose
    ///   length is not 6 + 0/8/16/24/32: `BadLength`.
    ///
    /// The buffer may extend beyond the header (the payload follows).
    pub fn check_len(&self) -> Result<()> {
        let data = self.buffer.as_ref();
        if data.len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        if data[field::ROUTING_TYPE] != ROUTING_TYPE {
            return Err(Error::Unrecognized);
        }
        let total = (usize::from(data[field::HDR_EXT_LEN]) + 1) * 8;
        if data.len() < total {
            return Err(Error::Truncated);
        }
        let n = usize::from(data[field::LAST_ENTRY]) + 1;
        let seg_end = field::SEGMENTS + n * SEGMENT_LEN;
        if seg_end > total {
            return Err(Error::BadLength);
        }
        if usize::from(data[field::SEGMENTS_LEFT]) > n {
            return Err(Error::Malformed);
        }
        let mut it = RawTlvs {
            data: &data[seg_end..total],
            pos: 0,
        };
        while let Some(t) = it.next_checked()? {
            if t.tlv_type == TLV_HMAC {
                HmacTlv::new_checked(t.bytes)?;
            }
        }
        Ok(())
    }

    /// Consume the view, returning the buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    #[inline]
    pub fn next_header(&self) -> u8 {
        self.buffer.as_ref()[field::NEXT_HEADER]
    }

    #[inline]
    pub fn hdr_ext_len(&self) -> u8 {
        self.buffer.as_ref()[field::HDR_EXT_LEN]
    }

    /// Length of the whole SRH in octets, `(Hdr Ext Len + 1) * 8`.
    #[inline]
    pub fn header_len(&self) -> usize {
        (usize::from(self.hdr_ext_len()) + 1) * 8
    }

    #[inline]
    pub fn routing_type(&self) -> u8 {
        self.buffer.as_ref()[field::ROUTING_TYPE]
    }

    #[inline]
    pub fn segments_left(&self) -> u8 {
        self.buffer.as_ref()[field::SEGMENTS_LEFT]
    }

    #[inline]
    pub fn last_entry(&self) -> u8 {
        self.buffer.as_ref()[field::LAST_ENTRY]
    }

    #[inline]
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }

    #[inline]
    pub fn tag(&self) -> u16 {
        let d = self.buffer.as_ref();
        u16::from_be_bytes([d[field::TAG.start], d[field::TAG.start + 1]])
    }

    /// Number of entries in the segment list (Last Entry + 1).
    #[inline]
    pub fn num_segments(&self) -> usize {
        usize::from(self.last_entry()) + 1
    }

    /// `Segment List[index]`, or `None` if `index > Last Entry`.
    #[inline]
    pub fn segment(&self, index: usize) -> Option<Ipv6Addr> {
        if index >= self.num_segments() {
            return None;
        }
        addr_at(self.buffer.as_ref(), field::SEGMENTS + index * SEGMENT_LEN)
    }

    /// The active segment `Segment List[Segments Left]`; `None` when
    /// Segments Left = Last Entry + 1 (a reduced SRH before its first SID is
    /// consumed).
    #[inline]
    pub fn active_segment(&self) -> Option<Ipv6Addr> {
        self.segment(usize::from(self.segments_left()))
    }

    /// The segment list as raw octets (`16 * (Last Entry + 1)`).
    #[inline]
    pub fn segment_list_bytes(&self) -> &[u8] {
        let end = field::SEGMENTS + self.num_segments() * SEGMENT_LEN;
        &self.buffer.as_ref()[field::SEGMENTS..end]
    }

    /// The segment list in index order (`Segment List[0]` first, i.e. the
    /// final segment first).
    pub fn segments(&self) -> Segments<'_> {
        Segments {
            data: self.segment_list_bytes(),
            pos: 0,
        }
    }

    /// The TLV area (after the segment list, up to the end of the header).
    #[inline]
    pub fn tlv_bytes(&self) -> &[u8] {
        let start = field::SEGMENTS + self.num_segments() * SEGMENT_LEN;
        &self.buffer.as_ref()[start..self.header_len()]
    }

    /// All TLVs, padding included, in order, without interpreting them.
    pub fn raw_tlvs(&self) -> RawTlvs<'_> {
        RawTlvs {
            data: self.tlv_bytes(),
            pos: 0,
        }
    }

    /// All TLVs, typed. `end_mt_type` is the End.MT TLV type in force
    /// (`Params::srh_tlv_end_mt`). A malformed End.MT TLV yields `Err`.
    pub fn tlvs(&self, end_mt_type: u8) -> Tlvs<'_> {
        Tlvs {
            raw: self.raw_tlvs(),
            end_mt_type,
        }
    }

    /// The first HMAC TLV, if any.
    pub fn hmac_tlv(&self) -> Option<HmacTlv<&[u8]>> {
        self.raw_tlvs()
            .find(|t| t.tlv_type == TLV_HMAC)
            .and_then(|t| HmacTlv::new_checked(t.bytes).ok())
    }

    /// Every End.MT TLV (type `end_mt_type`), in order; a malformed one
    /// yields `Err`.
    pub fn end_mt_tlvs(&self, end_mt_type: u8) -> EndMtTlvs<'_> {
        EndMtTlvs {
            raw: self.raw_tlvs(),
            end_mt_type,
        }
    }

    /// The End.MT TLV whose Edge Node Address equals `edge` (the End.MT TLV
    /// "associated with S", draft-li s.6.2 S04). Every End.MT TLV is
    /// validated, those after the match too (the SRH is copied into every
    /// replica); a malformed one makes the lookup fail with its error, so
    /// a corrupted SRH is never half-processed nor passed on.
    pub fn end_mt_tlv_for(
        &self,
        end_mt_type: u8,
        edge: &Ipv6Addr,
    ) -> Result<Option<EndMtTlv<&[u8]>>> {
        self.end_mt_tlv_where(end_mt_type, |a| a == edge)
    }

    /// The first End.MT TLV whose Edge Node Address satisfies `is_edge`,
    /// validated as [`end_mt_tlv_for`](Self::end_mt_tlv_for) does.
    pub fn end_mt_tlv_where(
        &self,
        end_mt_type: u8,
        is_edge: impl Fn(&Ipv6Addr) -> bool,
    ) -> Result<Option<EndMtTlv<&[u8]>>> {
        let mut found = None;
        for t in self.end_mt_tlvs(end_mt_type) {
            let t = t?;
            if found.is_none() && is_edge(&t.edge_node_address()) {
                found = Some(t);
            }
        }
        Ok(found)
    }

    /// The HMAC text of RFC 8754 s.2.1.2.1 fed to `mac`: Source Address,
    /// Last Entry, Flags, HMAC Key ID, all segments.
    fn hmac_text(&self, mac: &mut Hmac<Sha256>, src: &Ipv6Addr, key_id: u32) {
        mac.update(&src.octets());
        mac.update(&[self.last_entry(), self.flags()]);
        mac.update(&key_id.to_be_bytes());
        mac.update(self.segment_list_bytes());
    }

    /// The HMAC field value (RFC 8754 s.2.1.2.1) for this SRH sent from
    /// `src` under `key`: HMAC-SHA256 over the text, truncated to
    /// `key.len()` octets. Octets beyond `key.len()` are zero.
    pub fn compute_hmac(&self, src: &Ipv6Addr, key: &HmacKey) -> [u8; HMAC_MAX_LEN] {
        let mut mac = key.mac.clone();
        self.hmac_text(&mut mac, src, key.key_id);
        let digest = mac.finalize().into_bytes();
        let mut out = [0u8; HMAC_MAX_LEN];
        out[..key.len].copy_from_slice(&digest[..key.len]);
        out
    }

    /// Verify the HMAC TLV (RFC 8754 s.2.1.2.1) of a packet from `src` to
    /// `dst`:
    ///
    /// * no HMAC TLV: `Malformed` (whether that is acceptable is local
    ///   policy; the caller decides before calling);
    /// * D flag clear and Segments Left > Last Entry, or `dst` not equal to
    ///   `Segment List[Segments Left]`: `Malformed` (destination address
    ///   verification; skipped when D is set or `dst` is `None`);
    /// * HMAC Key ID not in `keys`: `Unrecognized`;
    /// * HMAC field length differs from the key's length, or the HMAC does
    ///   not match: `Checksum` (compared in constant time).
    pub fn verify_hmac(
        &self,
        src: &Ipv6Addr,
        dst: Option<&Ipv6Addr>,
        keys: &HmacKeyTable,
    ) -> Result<()> {
        let tlv = self.hmac_tlv().ok_or(Error::Malformed)?;
        if !tlv.d_flag() {
            let active = self.active_segment().ok_or(Error::Malformed)?;
            if let Some(dst) = dst {
                if active != *dst {
                    return Err(Error::Malformed);
                }
            }
        }
        let key = keys.lookup(tlv.key_id()).ok_or(Error::Unrecognized)?;
        let field = tlv.hmac();
        if field.len() != key.len {
            return Err(Error::Checksum);
        }
        let mut mac = key.mac.clone();
        self.hmac_text(&mut mac, src, key.key_id);
        mac.verify_truncated_left(field)
            .map_err(|_| Error::Checksum)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Srh<T> {
    #[inline]
    pub fn set_next_header(&mut self, v: u8) {
        self.buffer.as_mut()[field::NEXT_HEADER] = v;
    }

    #[inline]
    pub fn set_hdr_ext_len(&mut self, v: u8) {
        self.buffer.as_mut()[field::HDR_EXT_LEN] = v;
    }

    #[inline]
    pub fn set_routing_type(&mut self, v: u8) {
        self.buffer.as_mut()[field::ROUTING_TYPE] = v;
    }

    #[inline]
    pub fn set_segments_left(&mut self, v: u8) {
        self.buffer.as_mut()[field::SEGMENTS_LEFT] = v;
    }

    #[inline]
    pub fn set_last_entry(&mut self, v: u8) {
        self.buffer.as_mut()[field::LAST_ENTRY] = v;
    }

    #[inline]
    pub fn set_flags(&mut self, v: u8) {
        self.buffer.as_mut()[field::FLAGS] = v;
    }

    #[inline]
    pub fn set_tag(&mut self, v: u16) {
        self.buffer.as_mut()[field::TAG].copy_from_slice(&v.to_be_bytes());
    }

    /// Write `Segment List[index]`; `Err(BadLength)` if `index > Last Entry`
    /// or the buffer is too short.
    pub fn set_segment(&mut self, index: usize, addr: &Ipv6Addr) -> Result<()> {
        if index >= self.num_segments() {
            return Err(Error::BadLength);
        }
        let at = field::SEGMENTS + index * SEGMENT_LEN;
        let dst = self
            .buffer
            .as_mut()
            .get_mut(at..at + SEGMENT_LEN)
            .ok_or(Error::BadLength)?;
        dst.copy_from_slice(&addr.octets());
        Ok(())
    }

    /// RFC 8754 s.4.3.1.1 / RFC 8986 S02-S03: decrement Segments Left and
    /// return the new active segment `Segment List[Segments Left]`, which
    /// the caller writes into the IPv6 Destination Address.
    ///
    /// `Err(Malformed)` (and nothing changed) when Segments Left is 0 or the
    /// decremented value would index past Last Entry.
    #[inline]
    pub fn decrement_segments_left(&mut self) -> Result<Ipv6Addr> {
        let sl = self.segments_left();
        if sl == 0 {
            return Err(Error::Malformed);
        }
        let next = self.segment(usize::from(sl - 1)).ok_or(Error::Malformed)?;
        self.set_segments_left(sl - 1);
        Ok(next)
    }

    /// Mutable access to the TLV area.
    pub fn tlv_bytes_mut(&mut self) -> &mut [u8] {
        let start = field::SEGMENTS + self.num_segments() * SEGMENT_LEN;
        let end = self.header_len();
        &mut self.buffer.as_mut()[start..end]
    }

    /// The first HMAC TLV, writable.
    pub fn hmac_tlv_mut(&mut self) -> Option<HmacTlv<&mut [u8]>> {
        let (off, len) = {
            let base = self.tlv_bytes().as_ptr() as usize;
            let t = self.raw_tlvs().find(|t| t.tlv_type == TLV_HMAC)?;
            (t.bytes.as_ptr() as usize - base, t.bytes.len())
        };
        let area = self.tlv_bytes_mut();
        HmacTlv::new_checked(&mut area[off..off + len]).ok()
    }

    /// Compute the HMAC for a packet from `src` and write it into the HMAC
    /// TLV (H.Encaps with HMAC). The TLV's key id selects the key in `keys`.
    ///
    /// `Malformed` without an HMAC TLV, `Unrecognized` for an unknown key
    /// id, `BadLength` when the TLV's HMAC field length differs from the
    /// key's length.
    pub fn fill_hmac(&mut self, src: &Ipv6Addr, keys: &HmacKeyTable) -> Result<()> {
        let (key_id, field_len) = {
            let t = self.hmac_tlv().ok_or(Error::Malformed)?;
            (t.key_id(), t.hmac().len())
        };
        let key = keys.lookup(key_id).ok_or(Error::Unrecognized)?;
        if field_len != key.len {
            return Err(Error::BadLength);
        }
        let value = self.compute_hmac(src, key);
        let mut t = self.hmac_tlv_mut().ok_or(Error::Malformed)?;
        t.hmac_mut().copy_from_slice(&value[..field_len]);
        Ok(())
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Srh<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Srh<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "SRH nh={} len={} sl={} le={} flags={:#04x} tag={:#06x}",
            self.next_header(),
            self.header_len(),
            self.segments_left(),
            self.last_entry(),
            self.flags(),
            self.tag()
        )
    }
}

/// Iterator over the segment list, `Segment List[0]` first.
#[derive(Debug, Clone)]
pub struct Segments<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Iterator for Segments<'_> {
    type Item = Ipv6Addr;
    fn next(&mut self) -> Option<Ipv6Addr> {
        let a = addr_at(self.data, self.pos)?;
        self.pos += SEGMENT_LEN;
        Some(a)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.data.len().saturating_sub(self.pos) / SEGMENT_LEN;
        (n, Some(n))
    }
}

impl ExactSizeIterator for Segments<'_> {}

// ---------------------------------------------------------------------------
// TLVs
// ---------------------------------------------------------------------------

/// One TLV as found in the header: its type, its value (empty for Pad1) and
/// all its octets (type and length included).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawTlv<'a> {
    pub tlv_type: u8,
    pub value: &'a [u8],
    pub bytes: &'a [u8],
}

/// Iterator over the TLV area. Stops at the first TLV that does not fit
/// (which [`Srh::check_len`] rules out).
#[derive(Debug, Clone)]
pub struct RawTlvs<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> RawTlvs<'a> {
    /// Iterate over a bare TLV area.
    pub fn new(data: &'a [u8]) -> Self {
        RawTlvs { data, pos: 0 }
    }

    fn next_checked(&mut self) -> Result<Option<RawTlv<'a>>> {
        let data = self.data;
        let Some(&t) = data.get(self.pos) else {
            return Ok(None);
        };
        if t == TLV_PAD1 {
            let bytes = &data[self.pos..self.pos + 1];
            self.pos += 1;
            return Ok(Some(RawTlv {
                tlv_type: t,
                value: &[],
                bytes,
            }));
        }
        let len = usize::from(*data.get(self.pos + 1).ok_or(Error::BadLength)?);
        let end = self.pos + 2 + len;
        let bytes = data.get(self.pos..end).ok_or(Error::BadLength)?;
        self.pos = end;
        Ok(Some(RawTlv {
            tlv_type: t,
            value: &bytes[2..],
            bytes,
        }))
    }
}

impl<'a> Iterator for RawTlvs<'a> {
    type Item = RawTlv<'a>;
    fn next(&mut self) -> Option<RawTlv<'a>> {
        match self.next_checked() {
            Ok(t) => t,
            Err(_) => {
                self.pos = self.data.len();
                None
            }
        }
    }
}

/// A typed TLV.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tlv<'a> {
    Pad1,
    /// PadN with its padding octets.
    PadN(&'a [u8]),
    Hmac(HmacTlv<&'a [u8]>),
    EndMt(EndMtTlv<&'a [u8]>),
    /// Any other type, skipped by its length.
    Other {
        tlv_type: u8,
        value: &'a [u8],
    },
}

impl<'a> Tlv<'a> {
    /// Interpret a raw TLV.
    pub fn classify(raw: RawTlv<'a>, end_mt_type: u8) -> Result<Tlv<'a>> {
        Ok(match raw.tlv_type {
            TLV_PAD1 => Tlv::Pad1,
            TLV_PADN => Tlv::PadN(raw.value),
            TLV_HMAC => Tlv::Hmac(HmacTlv::new_checked(raw.bytes)?),
            t if t == end_mt_type => Tlv::EndMt(EndMtTlv::new_checked(raw.bytes)?),
            t => Tlv::Other {
                tlv_type: t,
                value: raw.value,
            },
        })
    }
}

/// Iterator of typed TLVs.
#[derive(Debug, Clone)]
pub struct Tlvs<'a> {
    raw: RawTlvs<'a>,
    end_mt_type: u8,
}

impl<'a> Iterator for Tlvs<'a> {
    type Item = Result<Tlv<'a>>;
    fn next(&mut self) -> Option<Self::Item> {
        let raw = self.raw.next()?;
        Some(Tlv::classify(raw, self.end_mt_type))
    }
}

/// Iterator over the End.MT TLVs of an SRH.
#[derive(Debug, Clone)]
pub struct EndMtTlvs<'a> {
    raw: RawTlvs<'a>,
    end_mt_type: u8,
}

impl<'a> Iterator for EndMtTlvs<'a> {
    type Item = Result<EndMtTlv<&'a [u8]>>;
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let raw = self.raw.next()?;
            if raw.tlv_type == self.end_mt_type && raw.tlv_type != TLV_PAD1 {
                return Some(EndMtTlv::new_checked(raw.bytes));
            }
        }
    }
}

// ---------------------------------------------------------------------------
// HMAC TLV
// ---------------------------------------------------------------------------

mod hmac_field {
    use super::field::Field;
    pub const TYPE: usize = 0;
    pub const LENGTH: usize = 1;
    pub const FLAGS: Field = 2..4;
    pub const KEY_ID: Field = 4..8;
    pub const HMAC: usize = 8;
}

/// D flag (bit 0 of the 16-bit D/RESERVED field).
pub const HMAC_FLAG_D: u16 = 0x8000;

/// View of an HMAC TLV (RFC 8754 s.2.1.2):
///
/// ```text
/// |     Type      |    Length     |D|        RESERVED             |
/// |                      HMAC Key ID (4 octets)                   |
/// //                     HMAC (variable)                         //
/// ```
///
/// Length = 6 + HMAC length; the HMAC is 0, 8, 16, 24 or 32 octets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HmacTlv<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> HmacTlv<T> {
    pub const fn new_unchecked(buffer: T) -> Self {
        HmacTlv { buffer }
    }

    pub fn new_checked(buffer: T) -> Result<Self> {
        let t = Self::new_unchecked(buffer);
        t.check_len()?;
        Ok(t)
    }

    /// `Truncated` if the buffer is shorter than the TLV; `BadLength` if the
    /// Length is under 6 or the HMAC is not a multiple of 8 up to 32;
    /// `Unrecognized` if the type is not 5.
    pub fn check_len(&self) -> Result<()> {
        let d = self.buffer.as_ref();
        if d.len() < 2 {
            return Err(Error::Truncated);
        }
        if d[hmac_field::TYPE] != TLV_HMAC {
            return Err(Error::Unrecognized);
        }
        let len = usize::from(d[hmac_field::LENGTH]);
        if d.len() < 2 + len {
            return Err(Error::Truncated);
        }
        if len < 6 || (len - 6) & 7 != 0 || len - 6 > HMAC_MAX_LEN {
            return Err(Error::BadLength);
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    #[inline]
    pub fn length(&self) -> u8 {
        self.buffer.as_ref()[hmac_field::LENGTH]
    }

    #[inline]
    fn d_reserved(&self) -> u16 {
        let d = self.buffer.as_ref();
        u16::from_be_bytes([d[hmac_field::FLAGS.start], d[hmac_field::FLAGS.start + 1]])
    }

    /// D: destination address verification disabled (reduced segment list).
    #[inline]
    pub fn d_flag(&self) -> bool {
        self.d_reserved() & HMAC_FLAG_D != 0
    }

    /// The 15 reserved bits.
    #[inline]
    pub fn reserved(&self) -> u16 {
        self.d_reserved() & !HMAC_FLAG_D
    }

    #[inline]
    pub fn key_id(&self) -> u32 {
        let d = self.buffer.as_ref();
        let mut b = [0u8; 4];
        b.copy_from_slice(&d[hmac_field::KEY_ID]);
        u32::from_be_bytes(b)
    }

    /// The HMAC field (Length - 6 octets).
    #[inline]
    pub fn hmac(&self) -> &[u8] {
        let end = 2 + usize::from(self.length());
        &self.buffer.as_ref()[hmac_field::HMAC..end]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> HmacTlv<T> {
    pub fn set_d_flag(&mut self, d: bool) {
        let v = (self.d_reserved() & !HMAC_FLAG_D) | if d { HMAC_FLAG_D } else { 0 };
        self.buffer.as_mut()[hmac_field::FLAGS].copy_from_slice(&v.to_be_bytes());
    }

    pub fn set_key_id(&mut self, id: u32) {
        self.buffer.as_mut()[hmac_field::KEY_ID].copy_from_slice(&id.to_be_bytes());
    }

    pub fn hmac_mut(&mut self) -> &mut [u8] {
        let end = 2 + usize::from(self.length());
        &mut self.buffer.as_mut()[hmac_field::HMAC..end]
    }
}

/// Parsed HMAC TLV.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HmacTlvRepr {
    pub d_flag: bool,
    pub key_id: u32,
    /// The HMAC field, 0/8/16/24/32 octets.
    pub hmac: Vec<u8>,
}

impl HmacTlvRepr {
    pub fn parse<T: AsRef<[u8]>>(t: &HmacTlv<T>) -> Result<Self> {
        t.check_len()?;
        Ok(HmacTlvRepr {
            d_flag: t.d_flag(),
            key_id: t.key_id(),
            hmac: t.hmac().to_vec(),
        })
    }

    /// A TLV with a zero HMAC field of `key.len()` octets, to be filled by
    /// [`Srh::fill_hmac`] after emission.
    pub fn placeholder(key: &HmacKey, d_flag: bool) -> Self {
        HmacTlvRepr {
            d_flag,
            key_id: key.key_id,
            hmac: vec![0; key.len],
        }
    }

    pub fn buffer_len(&self) -> usize {
        8 + self.hmac.len()
    }

    fn check(&self) -> Result<()> {
        if self.hmac.len() & 7 != 0 || self.hmac.len() > HMAC_MAX_LEN {
            return Err(Error::BadLength);
        }
        Ok(())
    }

    /// Emit into `buf` (at least `buffer_len()` octets).
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        self.check()?;
        let buf = buf.get_mut(..self.buffer_len()).ok_or(Error::Truncated)?;
        buf[0] = TLV_HMAC;
        buf[1] = (6 + self.hmac.len()) as u8;
        let d: u16 = if self.d_flag { HMAC_FLAG_D } else { 0 };
        buf[2..4].copy_from_slice(&d.to_be_bytes());
        buf[4..8].copy_from_slice(&self.key_id.to_be_bytes());
        buf[8..].copy_from_slice(&self.hmac);
        Ok(())
    }
}

/// A pre-shared HMAC-SHA256 key (RFC 8754 s.2.1.2: the HMAC Key ID names
/// the key and the algorithm; this router implements HMAC-SHA256 only) and
/// the length of the HMAC field it produces (8, 16, 24 or 32 octets; the
/// digest is truncated to it).
#[derive(Clone)]
pub struct HmacKey {
    key_id: u32,
    len: usize,
    /// Keyed once at configuration time; cloned per packet (no allocation).
    mac: Hmac<Sha256>,
}

impl fmt::Debug for HmacKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print the secret.
        f.debug_struct("HmacKey")
            .field("key_id", &self.key_id)
            .field("len", &self.len)
            .finish()
    }
}

impl HmacKey {
    /// `len` must be 8, 16, 24 or 32 (`BadLength` otherwise).
    pub fn new(key_id: u32, secret: &[u8], len: usize) -> Result<Self> {
        if len == 0 || len & 7 != 0 || len > HMAC_MAX_LEN {
            return Err(Error::BadLength);
        }
        let mac = <Hmac<Sha256> as Mac>::new_from_slice(secret).map_err(|_| Error::BadLength)?;
        Ok(HmacKey { key_id, len, mac })
    }

    pub fn key_id(&self) -> u32 {
        self.key_id
    }

    /// Length of the HMAC field this key produces.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// HMAC-SHA256 of the concatenation of `parts` under this key (full
    /// 32-octet digest).
    pub fn digest(&self, parts: &[&[u8]]) -> [u8; 32] {
        let mut mac = self.mac.clone();
        for p in parts {
            mac.update(p);
        }
        mac.finalize().into_bytes().into()
    }
}

/// The configured keys, looked up by HMAC Key ID (binary search; built at
/// configuration time, read-only on the per-packet path).
#[derive(Debug, Clone, Default)]
pub struct HmacKeyTable {
    keys: Vec<HmacKey>,
}

impl HmacKeyTable {
    pub fn new() -> Self {
        Self::default()
    }

    /// Insert or replace the key with `key.key_id()`.
    pub fn insert(&mut self, key: HmacKey) {
        match self.keys.binary_search_by_key(&key.key_id, |k| k.key_id) {
            Ok(i) => self.keys[i] = key,
            Err(i) => self.keys.insert(i, key),
        }
    }

    pub fn remove(&mut self, key_id: u32) -> Option<HmacKey> {
        let i = self.keys.binary_search_by_key(&key_id, |k| k.key_id).ok()?;
        Some(self.keys.remove(i))
    }

    /// The configured key IDs, ascending (never the secrets).
    pub fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.keys.iter().map(|k| k.key_id)
    }

    pub fn lookup(&self, key_id: u32) -> Option<&HmacKey> {
        let i = self.keys.binary_search_by_key(&key_id, |k| k.key_id).ok()?;
        self.keys.get(i)
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

impl FromIterator<HmacKey> for HmacKeyTable {
    fn from_iter<I: IntoIterator<Item = HmacKey>>(iter: I) -> Self {
        let mut t = HmacKeyTable::new();
        for k in iter {
            t.insert(k);
        }
        t
    }
}

// ---------------------------------------------------------------------------
// End.MT TLV
// ---------------------------------------------------------------------------

#[allow(dead_code)]
mod mt_field {
    use super::field::Field;
    pub const TYPE: usize = 0;
    pub const LENGTH: usize = 1;
    pub const RESERVED: Field = 2..4;
    pub const EDGE: Field = 4..20;
    pub const NUM_RECEIVERS: usize = 20;
    pub const RESERVED2: Field = 21..24;
    pub const RECEIVERS: usize = 24;
    /// Within a receiver entry.
    pub const R_ADDR: Field = 0..16;
    pub const R_QPN: Field = 16..19;
    pub const R_RESERVED: usize = 19;
}

/// Octets of one receiver entry (address 16 + QPN 3 + reserved 1).
pub const END_MT_RECEIVER_LEN: usize = 20;
/// Value octets before the receiver list (reserved 2 + edge 16 + num 1 + reserved 3).
pub const END_MT_FIXED_VALUE_LEN: usize = 22;
/// Receivers that fit in one End.MT TLV (8-bit Length: 22 + 20 * 11 = 242).
pub const END_MT_MAX_RECEIVERS: usize = (255 - END_MT_FIXED_VALUE_LEN) / END_MT_RECEIVER_LEN;

/// View of an End.MT TLV (draft-li-spring-rdma-multicast-over-srv6-00 s.7.2):
///
/// ```text
/// |      Type     |     Length    |           Reserved            |
/// |          Edge Node Address (128 bits IPv6)                    |
/// | Num Receivers |                  Reserved                     |
/// |         Receiver i Address (128 bits IPv6)                    |
/// |            Receiver i QPN (24 bits)            |   Reserved   |
/// ```
///
/// Length is the length of the value (everything after Type and Length), so
/// it must equal 22 + 20 * Num Receivers; anything else is `BadLength`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndMtTlv<T: AsRef<[u8]>> {
    buffer: T,
}

/// One receiver of an End.MT TLV.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EndMtReceiver {
    pub address: Ipv6Addr,
    /// 24-bit Queue Pair Number.
    pub qpn: u32,
}

impl<T: AsRef<[u8]>> EndMtTlv<T> {
    pub const fn new_unchecked(buffer: T) -> Self {
        EndMtTlv { buffer }
    }

    pub fn new_checked(buffer: T) -> Result<Self> {
        let t = Self::new_unchecked(buffer);
        t.check_len()?;
        Ok(t)
    }

    /// `Truncated` if the buffer is shorter than 2 + Length; `BadLength` if
    /// Length is under 22 or differs from 22 + 20 * Num Receivers.
    /// (The type is not checked: it is a parameter.)
    pub fn check_len(&self) -> Result<()> {
        let d = self.buffer.as_ref();
        if d.len() < 2 {
            return Err(Error::Truncated);
        }
        let len = usize::from(d[mt_field::LENGTH]);
        if d.len() < 2 + len {
            return Err(Error::Truncated);
        }
        if len < END_MT_FIXED_VALUE_LEN {
            return Err(Error::BadLength);
        }
        let n = usize::from(d[mt_field::NUM_RECEIVERS]);
        if len != END_MT_FIXED_VALUE_LEN + n * END_MT_RECEIVER_LEN {
            return Err(Error::BadLength);
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    #[inline]
    pub fn tlv_type(&self) -> u8 {
        self.buffer.as_ref()[mt_field::TYPE]
    }

    #[inline]
    pub fn length(&self) -> u8 {
        self.buffer.as_ref()[mt_field::LENGTH]
    }

    /// The first Reserved field (16 bits).
    #[inline]
    pub fn reserved(&self) -> u16 {
        let d = self.buffer.as_ref();
        u16::from_be_bytes([d[mt_field::RESERVED.start], d[mt_field::RESERVED.start + 1]])
    }

    #[inline]
    pub fn edge_node_address(&self) -> Ipv6Addr {
        let mut b = [0u8; 16];
        b.copy_from_slice(&self.buffer.as_ref()[mt_field::EDGE]);
        Ipv6Addr::from(b)
    }

    #[inline]
    pub fn num_receivers(&self) -> u8 {
        self.buffer.as_ref()[mt_field::NUM_RECEIVERS]
    }

    fn receiver_area(&self) -> &[u8] {
        let d = self.buffer.as_ref();
        let end = mt_field::RECEIVERS + usize::from(self.num_receivers()) * END_MT_RECEIVER_LEN;
        d.get(mt_field::RECEIVERS..end).unwrap_or(&[])
    }

    /// Receiver `index`, or `None` past Num Receivers.
    pub fn receiver(&self, index: usize) -> Option<EndMtReceiver> {
        let at = index.checked_mul(END_MT_RECEIVER_LEN)?;
        let e = self.receiver_area().get(at..at + END_MT_RECEIVER_LEN)?;
        Some(decode_receiver(e))
    }

    /// The receivers in order (allocation-free).
    pub fn receivers(&self) -> EndMtReceivers<'_> {
        EndMtReceivers {
            data: self.receiver_area(),
            pos: 0,
        }
    }
}

fn decode_receiver(e: &[u8]) -> EndMtReceiver {
    let mut a = [0u8; 16];
    a.copy_from_slice(&e[mt_field::R_ADDR]);
    let q = &e[mt_field::R_QPN];
    EndMtReceiver {
        address: Ipv6Addr::from(a),
        qpn: u32::from_be_bytes([0, q[0], q[1], q[2]]),
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EndMtTlv<T> {
    pub fn set_tlv_type(&mut self, v: u8) {
        self.buffer.as_mut()[mt_field::TYPE] = v;
    }

    pub fn set_edge_node_address(&mut self, a: &Ipv6Addr) {
        self.buffer.as_mut()[mt_field::EDGE].copy_from_slice(&a.octets());
    }

    /// Overwrite receiver `index` (`Err(BadLength)` past Num Receivers).
    /// The QPN is truncated to 24 bits.
    pub fn set_receiver(&mut self, index: usize, r: &EndMtReceiver) -> Result<()> {
        if index >= usize::from(self.num_receivers()) {
            return Err(Error::BadLength);
        }
        let at = mt_field::RECEIVERS + index * END_MT_RECEIVER_LEN;
        let e = self
            .buffer
            .as_mut()
            .get_mut(at..at + END_MT_RECEIVER_LEN)
            .ok_or(Error::BadLength)?;
        e[mt_field::R_ADDR].copy_from_slice(&r.address.octets());
        e[mt_field::R_QPN].copy_from_slice(&r.qpn.to_be_bytes()[1..]);
        Ok(())
    }
}

/// Iterator over the receivers of an End.MT TLV.
#[derive(Debug, Clone)]
pub struct EndMtReceivers<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Iterator for EndMtReceivers<'_> {
    type Item = EndMtReceiver;
    fn next(&mut self) -> Option<EndMtReceiver> {
        let e = self.data.get(self.pos..self.pos + END_MT_RECEIVER_LEN)?;
        self.pos += END_MT_RECEIVER_LEN;
        Some(decode_receiver(e))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.data.len().saturating_sub(self.pos) / END_MT_RECEIVER_LEN;
        (n, Some(n))
    }
}

impl ExactSizeIterator for EndMtReceivers<'_> {}

/// Parsed End.MT TLV.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndMtRepr {
    /// The TLV type in force (`Params::srh_tlv_end_mt`).
    pub tlv_type: u8,
    pub edge_node_address: Ipv6Addr,
    /// At most [`END_MT_MAX_RECEIVERS`]; QPNs are 24-bit.
    pub receivers: Vec<EndMtReceiver>,
}

impl EndMtRepr {
    pub fn parse<T: AsRef<[u8]>>(t: &EndMtTlv<T>) -> Result<Self> {
        t.check_len()?;
        Ok(EndMtRepr {
            tlv_type: t.tlv_type(),
            edge_node_address: t.edge_node_address(),
            receivers: t.receivers().collect(),
        })
    }

    pub fn buffer_len(&self) -> usize {
        2 + END_MT_FIXED_VALUE_LEN + self.receivers.len() * END_MT_RECEIVER_LEN
    }

    fn check(&self) -> Result<()> {
        if self.receivers.len() > END_MT_MAX_RECEIVERS {
            return Err(Error::BadLength);
        }
        if self.tlv_type == TLV_PAD1 || self.receivers.iter().any(|r| r.qpn > 0x00ff_ffff) {
            return Err(Error::Malformed);
        }
        Ok(())
    }

    /// Emit into `buf` (at least `buffer_len()` octets); reserved fields zero.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        self.check()?;
        let buf = buf.get_mut(..self.buffer_len()).ok_or(Error::Truncated)?;
        buf.fill(0);
        buf[mt_field::TYPE] = self.tlv_type;
        buf[mt_field::LENGTH] = (self.buffer_len() - 2) as u8;
        buf[mt_field::EDGE].copy_from_slice(&self.edge_node_address.octets());
        buf[mt_field::NUM_RECEIVERS] = self.receivers.len() as u8;
        let mut t = EndMtTlv::new_unchecked(buf);
        for (i, r) in self.receivers.iter().enumerate() {
            t.set_receiver(i, r)?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// SRH Repr
// ---------------------------------------------------------------------------

/// A TLV of an [`SrhRepr`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TlvRepr {
    Pad1,
    /// PadN with this many (zero) padding octets.
    PadN(u8),
    Hmac(HmacTlvRepr),
    EndMt(EndMtRepr),
    /// Any other TLV, kept verbatim. `tlv_type` must not be 0, 4, 5 nor the
    /// End.MT type in force.
    Other {
        tlv_type: u8,
        value: Vec<u8>,
    },
}

impl TlvRepr {
    pub fn buffer_len(&self) -> usize {
        match self {
            TlvRepr::Pad1 => 1,
            TlvRepr::PadN(n) => 2 + usize::from(*n),
            TlvRepr::Hmac(h) => h.buffer_len(),
            TlvRepr::EndMt(m) => m.buffer_len(),
            TlvRepr::Other { value, .. } => 2 + value.len(),
        }
    }

    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        let buf = buf.get_mut(..self.buffer_len()).ok_or(Error::Truncated)?;
        match self {
            TlvRepr::Pad1 => buf[0] = TLV_PAD1,
            TlvRepr::PadN(n) => {
                buf.fill(0);
                buf[0] = TLV_PADN;
                buf[1] = *n;
            }
            TlvRepr::Hmac(h) => h.emit(buf)?,
            TlvRepr::EndMt(m) => m.emit(buf)?,
            TlvRepr::Other { tlv_type, value } => {
                if value.len() > 255 || matches!(*tlv_type, TLV_PAD1 | TLV_PADN | TLV_HMAC) {
                    return Err(Error::Malformed);
                }
                buf[0] = *tlv_type;
                buf[1] = value.len() as u8;
                buf[2..].copy_from_slice(value);
            }
        }
        Ok(())
    }

    /// The padding TLV(s) that bring `len` to a multiple of 8 (none, Pad1, or
    /// one PadN), as RFC 8754 s.2.1.1 prescribes.
    pub fn padding_for(len: usize) -> Option<TlvRepr> {
        match (8 - len % 8) % 8 {
            0 => None,
            1 => Some(TlvRepr::Pad1),
            k => Some(TlvRepr::PadN((k - 2) as u8)),
        }
    }
}

/// A Segment Routing Header, for building H.Encaps headers and for tests.
///
/// `segments[0]` is `Segment List[0]`, the *last* segment of the path
/// (RFC 8754 encodes the list in reverse order). Last Entry is
/// `segments.len() - 1` and Hdr Ext Len is computed by `emit`; the TLVs are
/// emitted exactly as given, so their total with the segment list must be a
/// multiple of 8 (use [`SrhRepr::pad`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SrhRepr {
    pub next_header: u8,
    pub segments_left: u8,
    pub flags: u8,
    pub tag: u16,
    pub segments: Vec<Ipv6Addr>,
    pub tlvs: Vec<TlvRepr>,
}

impl SrhRepr {
    /// An SRH for the path `path` (first segment first, as an operator
    /// writes it): the list is stored reversed and Segments Left points at
    /// the first segment (Last Entry).
    pub fn for_path(next_header: u8, path: &[Ipv6Addr], tlvs: Vec<TlvRepr>) -> SrhRepr {
        let mut r = SrhRepr {
            next_header,
            segments_left: path.len().saturating_sub(1) as u8,
            flags: 0,
            tag: 0,
            segments: path.iter().rev().copied().collect(),
            tlvs,
        };
        r.pad();
        r
    }

    /// Parse a checked SRH. `end_mt_type` is the End.MT TLV type in force.
    pub fn parse<T: AsRef<[u8]>>(srh: &Srh<T>, end_mt_type: u8) -> Result<SrhRepr> {
        srh.check_len()?;
        let mut tlvs = Vec::new();
        for t in srh.tlvs(end_mt_type) {
            tlvs.push(match t? {
                Tlv::Pad1 => TlvRepr::Pad1,
                Tlv::PadN(p) => TlvRepr::PadN(p.len() as u8),
                Tlv::Hmac(h) => TlvRepr::Hmac(HmacTlvRepr::parse(&h)?),
                Tlv::EndMt(m) => TlvRepr::EndMt(EndMtRepr::parse(&m)?),
                Tlv::Other { tlv_type, value } => TlvRepr::Other {
                    tlv_type,
                    value: value.to_vec(),
                },
            });
        }
        Ok(SrhRepr {
            next_header: srh.next_header(),
            segments_left: srh.segments_left(),
            flags: srh.flags(),
            tag: srh.tag(),
            segments: srh.segments().collect(),
            tlvs,
        })
    }

    fn unpadded_len(&self) -> usize {
        HEADER_LEN
            + self.segments.len() * SEGMENT_LEN
            + self.tlvs.iter().map(TlvRepr::buffer_len).sum::<usize>()
    }

    /// Append the padding TLV that aligns the header to 8 octets.
    pub fn pad(&mut self) {
        if let Some(p) = TlvRepr::padding_for(self.unpadded_len()) {
            self.tlvs.push(p);
        }
    }

    /// Length of the emitted header.
    pub fn buffer_len(&self) -> usize {
        self.unpadded_len()
    }

    /// Emit into the start of `srh`'s buffer. `BadLength` if the header is
    /// not a multiple of 8, exceeds 2048 octets, or has no / more than 256
    /// segments; `Malformed` if Segments Left > Last Entry + 1 or a TLV is
    /// not encodable; `Truncated` if the buffer is too short.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, srh: &mut Srh<T>) -> Result<()> {
        let len = self.buffer_len();
        let n = self.segments.len();
        if len & 7 != 0 || len > MAX_LEN || n == 0 || n > 256 {
            return Err(Error::BadLength);
        }
        if usize::from(self.segments_left) > n {
            return Err(Error::Malformed);
        }
        let buf = srh.buffer.as_mut().get_mut(..len).ok_or(Error::Truncated)?;
        buf[field::NEXT_HEADER] = self.next_header;
        buf[field::HDR_EXT_LEN] = (len / 8 - 1) as u8;
        buf[field::ROUTING_TYPE] = ROUTING_TYPE;
        buf[field::SEGMENTS_LEFT] = self.segments_left;
        buf[field::LAST_ENTRY] = (n - 1) as u8;
        buf[field::FLAGS] = self.flags;
        buf[field::TAG].copy_from_slice(&self.tag.to_be_bytes());
        let mut at = field::SEGMENTS;
        for s in &self.segments {
            buf[at..at + SEGMENT_LEN].copy_from_slice(&s.octets());
            at += SEGMENT_LEN;
        }
        for t in &self.tlvs {
            let l = t.buffer_len();
            t.emit(&mut buf[at..at + l])?;
            at += l;
        }
        Ok(())
    }

    /// Emit into a new vector (control path / tests).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut v = vec![0u8; self.buffer_len()];
        self.emit(&mut Srh::new_unchecked(&mut v[..]))?;
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MT: u8 = 124;

    fn a(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.chars().filter(|c| c.is_ascii_hexdigit()).collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    // --- RFC 4231 HMAC-SHA-256 test vectors (the primitive) ---

    fn rfc4231(key: &[u8], data: &[u8]) -> [u8; 32] {
        HmacKey::new(0, key, 32).unwrap().digest(&[data])
    }

    #[test]
    fn rfc4231_case1() {
        let d = rfc4231(&[0x0b; 20], b"Hi There");
        assert_eq!(
            d.to_vec(),
            hex("b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        );
    }

    #[test]
    fn rfc4231_case2() {
        let d = rfc4231(b"Jefe", b"what do ya want for nothing?");
        assert_eq!(
            d.to_vec(),
            hex("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        );
    }

    #[test]
    fn rfc4231_case3() {
        let d = rfc4231(&[0xaa; 20], &[0xdd; 50]);
        assert_eq!(
            d.to_vec(),
            hex("773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe")
        );
    }

    #[test]
    fn rfc4231_case4() {
        let key = hex("0102030405060708090a0b0c0d0e0f10111213141516171819");
        let d = rfc4231(&key, &[0xcd; 50]);
        assert_eq!(
            d.to_vec(),
            hex("82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b")
        );
    }

    #[test]
    fn rfc4231_case5_truncated() {
        // Truncation to 128 bits, as a 16-octet key length does.
        let d = rfc4231(&[0x0c; 20], b"Test With Truncation");
        assert_eq!(d[..16].to_vec(), hex("a3b6167473100ee06e0c796c2955552b"));
    }

    #[test]
    fn rfc4231_case6_7_long_key() {
        let d = rfc4231(
            &[0xaa; 131],
            b"Test Using Larger Than Block-Size Key - Hash Key First",
        );
        assert_eq!(
            d.to_vec(),
            hex("60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
        );
        let d = rfc4231(
            &[0xaa; 131],
            b"This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm.",
        );
        assert_eq!(
            d.to_vec(),
            hex("9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2")
        );
    }

    // --- byte-exact example built from RFC 8754 / draft-li s.7.2 ---

    /// Three segments, an End.MT TLV with two receivers, an HMAC TLV,
    /// padding. Every octet written out by hand from the field layouts.
    fn example_bytes() -> Vec<u8> {
        let mut v = vec![
            41,   // next header: IPv6
            0,    // hdr ext len: patched below
            4,    // routing type
            2,    // segments left
            2,    // last entry
            0x00, // flags
            0x12, 0x34, // tag
        ];
        v.extend(a("2001:db8::3").octets()); // Segment List[0]
        v.extend(a("2001:db8::2").octets()); // Segment List[1]
        v.extend(a("2001:db8::1").octets()); // Segment List[2]
                                             // End.MT TLV: type 124, length 22 + 2*20 = 62.
        v.extend([124, 62, 0, 0]);
        v.extend(a("fc00::e1").octets());
        v.extend([2, 0, 0, 0]);
        v.extend(a("2001:db8:1::10").octets());
        v.extend([0x00, 0x01, 0x02, 0x00]); // QPN 0x000102
        v.extend(a("2001:db8:1::11").octets());
        v.extend([0xab, 0xcd, 0xef, 0x00]); // QPN 0xabcdef
                                            // HMAC TLV: type 5, length 38, D=0, key id 7, 32 octets of HMAC.
        v.extend([5, 38, 0x00, 0x00, 0, 0, 0, 7]);
        v.extend([0u8; 32]);
        // 8 + 48 + 64 + 40 = 160 -> aligned, no padding needed; add a PadN
        // of 6 (2 + 6 = 8) to exercise it.
        v.extend([4, 6, 0, 0, 0, 0, 0, 0]);
        v[1] = (v.len() / 8 - 1) as u8;
        v
    }

    fn example_repr() -> SrhRepr {
        SrhRepr {
            next_header: 41,
            segments_left: 2,
            flags: 0,
            tag: 0x1234,
            segments: vec![a("2001:db8::3"), a("2001:db8::2"), a("2001:db8::1")],
            tlvs: vec![
                TlvRepr::EndMt(EndMtRepr {
                    tlv_type: MT,
                    edge_node_address: a("fc00::e1"),
                    receivers: vec![
                        EndMtReceiver {
                            address: a("2001:db8:1::10"),
                            qpn: 0x000102,
                        },
                        EndMtReceiver {
                            address: a("2001:db8:1::11"),
                            qpn: 0xabcdef,
                        },
                    ],
                }),
                TlvRepr::Hmac(HmacTlvRepr {
                    d_flag: false,
                    key_id: 7,
                    hmac: vec![0; 32],
                }),
                TlvRepr::PadN(6),
            ],
        }
    }

    #[test]
    fn byte_exact_emit_and_parse() {
        let bytes = example_bytes();
        assert_eq!(bytes.len(), 168);
        assert_eq!(bytes[1], 20);
        assert_eq!(example_repr().to_bytes().unwrap(), bytes);
        let srh = Srh::new_checked(&bytes[..]).unwrap();
        assert_eq!(SrhRepr::parse(&srh, MT).unwrap(), example_repr());
        assert_eq!(srh.header_len(), 168);
        assert_eq!(srh.active_segment(), Some(a("2001:db8::1")));
        assert_eq!(srh.segments().count(), 3);
        let kinds: Vec<u8> = srh.raw_tlvs().map(|t| t.tlv_type).collect();
        assert_eq!(kinds, vec![124, 5, 4]);
    }

    #[test]
    fn end_mt_lookup_and_receivers() {
        let mut r = example_repr();
        // A second End.MT TLV for another edge node, before the first.
        r.tlvs.insert(
            0,
            TlvRepr::EndMt(EndMtRepr {
                tlv_type: MT,
                edge_node_address: a("fc00::e2"),
                receivers: vec![EndMtReceiver {
                    address: a("2001:db8:2::1"),
                    qpn: 0xffffff,
                }],
            }),
        );
        r.tlvs.pop();
        r.pad();
        let bytes = r.to_bytes().unwrap();
        let srh = Srh::new_checked(&bytes[..]).unwrap();
        assert_eq!(srh.end_mt_tlvs(MT).count(), 2);
        let t = srh.end_mt_tlv_for(MT, &a("fc00::e1")).unwrap().unwrap();
        let got: Vec<_> = t.receivers().collect();
        assert_eq!(
            got,
            vec![
                EndMtReceiver {
                    address: a("2001:db8:1::10"),
                    qpn: 0x000102
                },
                EndMtReceiver {
                    address: a("2001:db8:1::11"),
                    qpn: 0xabcdef
                },
            ]
        );
        assert_eq!(t.receivers().len(), 2);
        assert_eq!(t.receiver(1).unwrap().qpn, 0xabcdef);
        assert_eq!(t.receiver(2), None);
        let t2 = srh.end_mt_tlv_for(MT, &a("fc00::e2")).unwrap().unwrap();
        assert_eq!(t2.receivers().next().unwrap().qpn, 0xffffff);
        assert!(srh.end_mt_tlv_for(MT, &a("fc00::e3")).unwrap().is_none());
        // With another End.MT type configured there is no End.MT TLV.
        assert!(srh.end_mt_tlv_for(125, &a("fc00::e1")).unwrap().is_none());
    }

    #[test]
    fn end_mt_bad_length_is_error() {
        let mut bytes = example_bytes();
        // Num Receivers 2 -> 3 while Length stays 62.
        let nr = 8 + 48 + 20;
        assert_eq!(bytes[nr], 2);
        bytes[nr] = 3;
        let srh = Srh::new_checked(&bytes[..]).unwrap(); // generic structure is fine
        assert_eq!(
            srh.end_mt_tlv_for(MT, &a("fc00::e1")),
            Err(Error::BadLength)
        );
        assert_eq!(SrhRepr::parse(&srh, MT), Err(Error::BadLength));
        assert!(srh.tlvs(MT).any(|t| t.is_err()));
    }

    /// A malformed End.MT TLV after the one that matches fails the lookup:
    /// the SRH goes into every replica. Was: only the TLVs before the match
    /// were checked.
    #[test]
    fn end_mt_lookup_checks_the_tlvs_after_the_match() {
        let mut r = SrhRepr::parse(&Srh::new_checked(&example_bytes()[..]).unwrap(), MT).unwrap();
        r.tlvs.push(TlvRepr::EndMt(EndMtRepr {
            tlv_type: MT,
            edge_node_address: a("fc00::e2"),
            receivers: vec![EndMtReceiver { address: a("2001:db8:2::1"), qpn: 7 }],
        }));
        r.pad();
        let mut bytes = r.to_bytes().unwrap();
        let srh = Srh::new_checked(&bytes[..]).unwrap();
        assert!(srh.end_mt_tlv_for(MT, &a("fc00::e1")).unwrap().is_some());
        // The second TLV claims two receivers in the room of one.
        let second = {
            let tlvs = srh.tlv_bytes();
            let base = tlvs.as_ptr() as usize - bytes.as_ptr() as usize;
            let t = srh.end_mt_tlvs(MT).nth(1).unwrap().unwrap().into_inner();
            base + (t.as_ptr() as usize - tlvs.as_ptr() as usize)
        };
        assert_eq!(bytes[second + 20], 1, "Num Receivers of the second TLV");
        bytes[second + 20] = 2;
        let srh = Srh::new_checked(&bytes[..]).unwrap();
        assert_eq!(srh.end_mt_tlv_for(MT, &a("fc00::e1")), Err(Error::BadLength));
    }

    #[test]
    fn validation_errors() {
        let good = example_bytes();
        assert_eq!(Srh::new_checked(&good[..7]).unwrap_err(), Error::Truncated);
        assert_eq!(
            Srh::new_checked(&good[..167]).unwrap_err(),
            Error::Truncated
        );
        let mut b = good.clone();
        b[2] = 3;
        assert_eq!(Srh::new_checked(&b[..]).unwrap_err(), Error::Unrecognized);
        let mut b = good.clone();
        b[3] = 4; // SL > LE + 1
        assert_eq!(Srh::new_checked(&b[..]).unwrap_err(), Error::Malformed);
        let mut b = good.clone();
        b[3] = 3; // SL = LE + 1 is allowed (reduced SRH)
        assert!(Srh::new_checked(&b[..]).is_ok());
        let mut b = good.clone();
        b[4] = 20; // 21 segments do not fit in 168 octets
        assert_eq!(Srh::new_checked(&b[..]).unwrap_err(), Error::BadLength);
        let mut b = good.clone();
        b[1] = 5; // 48 octets: segment list does not fit
        assert_eq!(Srh::new_checked(&b[..]).unwrap_err(), Error::BadLength);
        let mut b = good.clone();
        b[161] = 7; // PadN length runs past the end
        assert_eq!(Srh::new_checked(&b[..]).unwrap_err(), Error::BadLength);
        let mut b = good.clone();
        b[121] = 37; // HMAC TLV length not 6 + 8k
                     // (the following TLV then starts mid-HMAC; either error is a length error)
        assert_eq!(Srh::new_checked(&b[..]).unwrap_err(), Error::BadLength);
        let mut b = good.clone();
        b[121] = 30; // 6 + 24: valid HMAC, but then garbage TLVs: zeros = Pad1s, fine
        assert!(Srh::new_checked(&b[..]).is_ok());
    }

    #[test]
    fn decrement_segments_left() {
        let mut bytes = example_bytes();
        let mut srh = Srh::new_checked(&mut bytes[..]).unwrap();
        assert_eq!(srh.decrement_segments_left(), Ok(a("2001:db8::2")));
        assert_eq!(srh.segments_left(), 1);
        assert_eq!(srh.decrement_segments_left(), Ok(a("2001:db8::3")));
        assert_eq!(srh.segments_left(), 0);
        assert_eq!(srh.decrement_segments_left(), Err(Error::Malformed));
        assert_eq!(srh.segments_left(), 0);
        srh.set_segment(0, &a("2001:db8::99")).unwrap();
        assert_eq!(srh.segment(0), Some(a("2001:db8::99")));
        assert_eq!(srh.set_segment(3, &a("::1")), Err(Error::BadLength));
    }

    #[test]
    fn reduced_srh_sl_past_last_entry() {
        let r = SrhRepr {
            next_header: 59,
            segments_left: 1,
            flags: 0,
            tag: 0,
            segments: vec![a("2001:db8::9")],
            tlvs: vec![],
        };
        let mut b = r.to_bytes().unwrap();
        let mut srh = Srh::new_checked(&mut b[..]).unwrap();
        assert_eq!(srh.active_segment(), None);
        assert_eq!(srh.decrement_segments_left(), Ok(a("2001:db8::9")));
    }

    // --- HMAC over the RFC 8754 text ---

    fn keys() -> HmacKeyTable {
        [
            HmacKey::new(7, b"dcirouter-test-key", 32).unwrap(),
            HmacKey::new(9, b"short", 16).unwrap(),
        ]
        .into_iter()
        .collect()
    }

    #[test]
    fn hmac_text_matches_manual_concatenation() {
        let mut bytes = example_bytes();
        let src = a("2001:db8:ffff::1");
        let keys = keys();
        let key = keys.lookup(7).unwrap();
        let mut text = Vec::new();
        text.extend(src.octets());
        text.push(2); // last entry
        text.push(0); // flags
        text.extend(7u32.to_be_bytes());
        text.extend(&bytes[8..56]);
        let expect = key.digest(&[&text]);
        let mut srh = Srh::new_checked(&mut bytes[..]).unwrap();
        assert_eq!(srh.compute_hmac(&src, key), expect);
        srh.fill_hmac(&src, &keys).unwrap();
        assert_eq!(srh.hmac_tlv().unwrap().hmac(), &expect[..]);
        assert_eq!(
            srh.verify_hmac(&src, Some(&a("2001:db8::1")), &keys),
            Ok(())
        );
        assert_eq!(srh.verify_hmac(&src, None, &keys), Ok(()));
        // Wrong source.
        assert_eq!(
            srh.verify_hmac(&a("::1"), None, &keys),
            Err(Error::Checksum)
        );
        // DA not the active segment.
        assert_eq!(
            srh.verify_hmac(&src, Some(&a("2001:db8::2")), &keys),
            Err(Error::Malformed)
        );
        // Segments Left is not covered; decrementing keeps it valid.
        srh.decrement_segments_left().unwrap();
        assert_eq!(
            srh.verify_hmac(&src, Some(&a("2001:db8::2")), &keys),
            Ok(())
        );
        // Tampering with a segment breaks it.
        srh.set_segment(0, &a("2001:db8::66")).unwrap();
        assert_eq!(srh.verify_hmac(&src, None, &keys), Err(Error::Checksum));
        // Unknown key id.
        let t: HmacKeyTable = [HmacKey::new(8, b"x", 32).unwrap()].into_iter().collect();
        assert_eq!(srh.verify_hmac(&src, None, &t), Err(Error::Unrecognized));
    }

    #[test]
    fn hmac_truncated_key_length() {
        let key16 = HmacKey::new(9, b"short", 16).unwrap();
        let mut r = SrhRepr::for_path(
            59,
            &[a("2001:db8::1"), a("2001:db8::2")],
            vec![TlvRepr::Hmac(HmacTlvRepr::placeholder(&key16, true))],
        );
        r.flags = 0;
        let mut b = r.to_bytes().unwrap();
        assert_eq!(b.len() % 8, 0);
        let keys = keys();
        let src = a("2001:db8::100");
        let mut srh = Srh::new_checked(&mut b[..]).unwrap();
        srh.fill_hmac(&src, &keys).unwrap();
        let full = keys.lookup(9).unwrap().digest(&[
            &src.octets(),
            &[1, 0],
            &9u32.to_be_bytes(),
            srh.segment_list_bytes(),
        ]);
        assert_eq!(srh.hmac_tlv().unwrap().hmac(), &full[..16]);
        assert!(srh.hmac_tlv().unwrap().d_flag());
        // D set: DA not checked.
        assert_eq!(srh.verify_hmac(&src, Some(&a("::5")), &keys), Ok(()));
        // A 32-octet field under a 16-octet key fails to fill.
        let key32 = HmacKey::new(9, b"short", 32).unwrap();
        let r2 = SrhRepr::for_path(
            59,
            &[a("2001:db8::1")],
            vec![TlvRepr::Hmac(HmacTlvRepr::placeholder(&key32, false))],
        );
        let mut b2 = r2.to_bytes().unwrap();
        let mut srh2 = Srh::new_checked(&mut b2[..]).unwrap();
        assert_eq!(srh2.fill_hmac(&src, &keys), Err(Error::BadLength));
        assert!(HmacKey::new(1, b"k", 12).is_err());
        assert!(HmacKey::new(1, b"k", 0).is_err());
        assert!(HmacKey::new(1, b"k", 40).is_err());
    }

    #[test]
    fn key_table() {
        let mut t = keys();
        assert_eq!(t.len(), 2);
        t.insert(HmacKey::new(7, b"other", 8).unwrap());
        assert_eq!(t.len(), 2);
        assert_eq!(t.lookup(7).unwrap().len(), 8);
        assert!(t.remove(9).is_some());
        assert!(t.lookup(9).is_none());
        assert!(format!("{:?}", t).contains("key_id: 7"));
    }

    #[test]
    fn for_path_reverses_and_pads() {
        let r = SrhRepr::for_path(
            41,
            &[a("2001:db8::1"), a("2001:db8::2")],
            vec![TlvRepr::Other {
                tlv_type: 200,
                value: vec![1, 2, 3],
            }],
        );
        assert_eq!(r.segments, vec![a("2001:db8::2"), a("2001:db8::1")]);
        assert_eq!(r.segments_left, 1);
        assert_eq!(r.tlvs.last(), Some(&TlvRepr::PadN(1))); // 40 + 5 + 3 = 48
        let b = r.to_bytes().unwrap();
        let srh = Srh::new_checked(&b[..]).unwrap();
        assert_eq!(srh.active_segment(), Some(a("2001:db8::1")));
        assert_eq!(SrhRepr::parse(&srh, MT).unwrap(), r);
        let unaligned = SrhRepr {
            tlvs: vec![TlvRepr::Pad1],
            ..r.clone()
        };
        assert_eq!(unaligned.to_bytes(), Err(Error::BadLength));
    }

    // --- proptest ---

    fn arb_addr() -> impl Strategy<Value = Ipv6Addr> {
        any::<[u8; 16]>().prop_map(Ipv6Addr::from)
    }

    fn arb_tlv() -> impl Strategy<Value = TlvRepr> {
        prop_oneof![
            Just(TlvRepr::Pad1),
            (0u8..=20).prop_map(TlvRepr::PadN),
            (any::<bool>(), any::<u32>(), 0usize..=4, any::<[u8; 32]>()).prop_map(
                |(d, k, n, h)| TlvRepr::Hmac(HmacTlvRepr {
                    d_flag: d,
                    key_id: k,
                    hmac: h[..n * 8].to_vec()
                })
            ),
            (
                arb_addr(),
                prop::collection::vec((arb_addr(), 0u32..=0xffffff), 0..=END_MT_MAX_RECEIVERS)
            )
                .prop_map(|(e, rs)| TlvRepr::EndMt(EndMtRepr {
                    tlv_type: MT,
                    edge_node_address: e,
                    receivers: rs
                        .into_iter()
                        .map(|(address, qpn)| EndMtReceiver { address, qpn })
                        .collect(),
                })),
            (
                any::<u8>().prop_filter("reserved", |t| ![0, 4, 5, MT].contains(t)),
                prop::collection::vec(any::<u8>(), 0..40)
            )
                .prop_map(|(tlv_type, value)| TlvRepr::Other { tlv_type, value }),
        ]
    }

    fn arb_srh() -> impl Strategy<Value = SrhRepr> {
        (
            any::<u8>(),
            any::<u8>(),
            any::<u16>(),
            prop::collection::vec(arb_addr(), 1..8),
            prop::collection::vec(arb_tlv(), 0..5),
            any::<u8>(),
        )
            .prop_map(|(nh, flags, tag, segments, tlvs, sl)| {
                let mut r = SrhRepr {
                    next_header: nh,
                    segments_left: sl % (segments.len() as u8 + 1),
                    flags,
                    tag,
                    segments,
                    tlvs,
                };
                r.pad();
                r
            })
    }

    proptest! {
        #[test]
        fn roundtrip(r in arb_srh()) {
            let b = r.to_bytes().unwrap();
            prop_assert_eq!(b.len() % 8, 0);
            let srh = Srh::new_checked(&b[..]).unwrap();
            prop_assert_eq!(srh.header_len(), b.len());
            prop_assert_eq!(SrhRepr::parse(&srh, MT).unwrap(), r);
        }

        #[test]
        fn truncation_is_error(r in arb_srh(), cut in any::<prop::sample::Index>()) {
            let b = r.to_bytes().unwrap();
            let n = cut.index(b.len());
            prop_assert!(Srh::new_checked(&b[..n]).is_err());
        }

        #[test]
        fn hdr_ext_len_growth_is_error(r in arb_srh(), k in 1u8..=255) {
            let mut b = r.to_bytes().unwrap();
            let hel = b[1];
            prop_assume!(hel.checked_add(k).is_some());
            b[1] = hel + k;
            prop_assert_eq!(Srh::new_checked(&b[..]).unwrap_err(), Error::Truncated);
        }

        #[test]
        fn corrupt_any_byte_never_panics(r in arb_srh(), at in any::<prop::sample::Index>(), v in any::<u8>()) {
            let mut b = r.to_bytes().unwrap();
            let i = at.index(b.len());
            b[i] = v;
            if let Ok(srh) = Srh::new_checked(&b[..]) {
                // Everything reachable from a checked view must not panic.
                let _ = SrhRepr::parse(&srh, MT);
                let _ = srh.segments().count();
                let _ = srh.active_segment();
                for t in srh.tlvs(MT) { let _ = t; }
                for t in srh.end_mt_tlvs(MT).flatten() {
                    let _ = t.receivers().count();
                }
                let _ = srh.end_mt_tlv_for(MT, &Ipv6Addr::UNSPECIFIED);
                let _ = srh.verify_hmac(&Ipv6Addr::UNSPECIFIED, None, &keys());
                let mut b2 = b.clone();
                let mut s2 = Srh::new_unchecked(&mut b2[..]);
                let _ = s2.decrement_segments_left();
                let _ = s2.fill_hmac(&Ipv6Addr::UNSPECIFIED, &keys());
            }
        }

        #[test]
        fn corrupt_tlv_length_is_error_or_reparses_differently(r in arb_srh(), which in any::<prop::sample::Index>(), delta in 1u8..=255) {
            // Change the Length octet of one non-Pad1 TLV.
            let b = r.to_bytes().unwrap();
            let srh = Srh::new_checked(&b[..]).unwrap();
            let base = b.len() - srh.tlv_bytes().len();
            let offs: Vec<usize> = {
                let mut v = Vec::new();
                let mut pos = 0;
                for t in srh.raw_tlvs() {
                    if t.tlv_type != TLV_PAD1 { v.push(base + pos + 1); }
                    pos += t.bytes.len();
                }
                v
            };
            prop_assume!(!offs.is_empty());
            let off = offs[which.index(offs.len())];
            let mut c = b.clone();
            c[off] = c[off].wrapping_add(delta);
            match Srh::new_checked(&c[..]) {
                Err(_) => {}
                Ok(s) => prop_assert_ne!(SrhRepr::parse(&s, MT), Ok(r)),
            }
        }

        #[test]
        fn random_bytes_never_panic(b in prop::collection::vec(any::<u8>(), 0..300)) {
            if let Ok(srh) = Srh::new_checked(&b[..]) {
                let _ = SrhRepr::parse(&srh, MT);
                let _ = srh.end_mt_tlv_for(MT, &Ipv6Addr::UNSPECIFIED);
                let _ = srh.verify_hmac(&Ipv6Addr::UNSPECIFIED, None, &keys());
            }
        }
    }
}
