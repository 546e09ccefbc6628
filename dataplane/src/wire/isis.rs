//! IS-IS SRv6 encodings used to advertise END.C / END.E
//! (draft-hu-acn-rocev2-00 s.5.1, on top of RFC 9352):
//!
//! * the SRv6 Capabilities sub-TLV (RFC 9352 s.2; type 25 inside the Router
//!   Capability TLV 242) with the O-flag (0x4000) and the draft's new C-flag,
//!   whose bit is IANA-pending (`Params::isis_srv6_cap_c_flag`, a mask of
//!   the 16-bit Flags field):
//!
//!   ```text
//!   |    Type (25)  |    Length     |            Flags              |
//!   |   optional sub-sub-TLVs ...
//!   ```
//!
//! * the SRv6 Locator TLV (RFC 9352 s.7.1; type 27):
//!
//!   ```text
//!   |     Type (27) |     Length    |R|R|R|R|         MT ID         |
//!   then one or more locator entries:
//!   |                            Metric                             |
//!   |     Flags     |   Algorithm   |   Loc Size    |  Locator ...  //
//!   | Sub-TLV-len   |         Sub-TLVs (variable) ...
//!   ```
//!
//!   (Locator is ceil(Loc Size / 8) octets; Loc Size is 1..=128 bits.)
//!
//! * the SRv6 End SID sub-TLV (RFC 9352 s.7.2; type 5 inside a locator
//!   entry), which carries END.C / END.E with their behaviour codepoints
//!   (`Params::behaviour_end_c` / `behaviour_end_e`):
//!
//!   ```text
//!   |     Type (5)  |     Length    |     Flags     | Endpoint Behavior ...
//!   ... Behavior    |          SID (16 octets) ...
//!   | Sub-sub-TLV-len | Sub-sub-TLVs (variable) ...
//!   ```
//!
//!   with the SID Structure sub-sub-TLV (RFC 9352 s.9; type 1, length 4:
//!   LB, LN, Function, Argument lengths in bits).
//!
//! Views check every length (`new_checked`), after which no accessor panics;
//! Reprs parse and emit (encode and decode).

use std::net::Ipv6Addr;

use super::params::Params;
use super::{Error, Result};

/// Router Capability TLV type (RFC 7981), the container of the SRv6
/// Capabilities sub-TLV.
pub const TLV_ROUTER_CAPABILITY: u8 = 242;
/// SRv6 Capabilities sub-TLV type.
pub const SUBTLV_SRV6_CAPABILITIES: u8 = 25;
/// SRv6 Locator TLV type.
pub const TLV_SRV6_LOCATOR: u8 = 27;
/// SRv6 End SID sub-TLV type (in the Locator TLV).
pub const SUBTLV_SRV6_END_SID: u8 = 5;
/// SRv6 SID Structure sub-sub-TLV type.
pub const SUBSUBTLV_SID_STRUCTURE: u8 = 1;

/// O-flag of the SRv6 Capabilities Flags (RFC 9352 s.2: bit 1 of 16).
pub const CAP_FLAG_O: u16 = 0x4000;
/// D-flag of a locator entry (RFC 9352 s.7.1).
pub const LOCATOR_FLAG_D: u8 = 0x80;
/// IPv6 Reachability TLV (RFC 5308 s.2), in which RFC 9352 s.7.1 has an
/// algorithm-0 locator advertised too, so that routers without SRv6
/// forward to it.
pub const TLV_IPV6_REACH: u8 = 236;
/// Its control octet: Up/Down, eXternal, Sub-TLVs present.
pub const IPV6_REACH_U: u8 = 0x80;
pub const IPV6_REACH_X: u8 = 0x40;
pub const IPV6_REACH_S: u8 = 0x20;

#[inline]
fn addr16(d: &[u8]) -> Ipv6Addr {
    let mut b = [0u8; 16];
    b.copy_from_slice(&d[..16]);
    Ipv6Addr::from(b)
}

// ---------------------------------------------------------------------------
// Generic (sub-)TLVs
// ---------------------------------------------------------------------------

/// One (sub-)TLV: type, value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawTlv<'a> {
    pub tlv_type: u8,
    pub value: &'a [u8],
    /// All octets, type and length included.
    pub bytes: &'a [u8],
}

/// Iterator over a sequence of 1-octet-type / 1-octet-length TLVs. Stops at
/// a TLV that does not fit (which the views' checks rule out).
#[derive(Debug, Clone)]
pub struct RawTlvs<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> RawTlvs<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        RawTlvs { data, pos: 0 }
    }

    fn next_checked(&mut self) -> Result<Option<RawTlv<'a>>> {
        if self.pos >= self.data.len() {
            return Ok(None);
        }
        let hdr = self
            .data
            .get(self.pos..self.pos + 2)
            .ok_or(Error::BadLength)?;
        let end = self.pos + 2 + usize::from(hdr[1]);
        let bytes = self.data.get(self.pos..end).ok_or(Error::BadLength)?;
        self.pos = end;
        Ok(Some(RawTlv {
            tlv_type: bytes[0],
            value: &bytes[2..],
            bytes,
        }))
    }

    /// Check that the whole sequence is well formed.
    pub fn check(data: &'a [u8]) -> Result<()> {
        let mut it = RawTlvs::new(data);
        while it.next_checked()?.is_some() {}
        Ok(())
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

/// An uninterpreted (sub-)TLV in a Repr.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RawTlvRepr {
    pub tlv_type: u8,
    pub value: Vec<u8>,
}

impl RawTlvRepr {
    pub fn buffer_len(&self) -> usize {
        2 + self.value.len()
    }

    fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        let len = u8::try_from(self.value.len()).map_err(|_| Error::BadLength)?;
        let b = buf.get_mut(..self.buffer_len()).ok_or(Error::Truncated)?;
        b[0] = self.tlv_type;
        b[1] = len;
        b[2..].copy_from_slice(&self.value);
        Ok(self.buffer_len())
    }
}

fn check_tlv_header(d: &[u8], tlv_type: u8) -> Result<usize> {
    if d.len() < 2 {
        return Err(Error::Truncated);
    }
    if d[0] != tlv_type {
        return Err(Error::Unrecognized);
    }
    let total = 2 + usize::from(d[1]);
    if d.len() < total {
        return Err(Error::Truncated);
    }
    Ok(total)
}

// ---------------------------------------------------------------------------
// IPv6 Reachability TLV (RFC 5308 s.2)
// ---------------------------------------------------------------------------

/// One prefix of an IPv6 Reachability TLV:
///
/// ```text
/// |                          Metric                               |
/// |U|X|S| Reserve |  Prefix Len   |  Prefix (ceil(len / 8) octets) ...
/// | Sub-TLV len   |  Sub-TLVs ...          (only with S)
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Ipv6ReachEntry {
    pub metric: u32,
    /// `IPV6_REACH_U` / `IPV6_REACH_X` (S follows `sub_tlvs`).
    pub flags: u8,
    /// 0..=128.
    pub prefix_len: u8,
    /// Only its first `prefix_len` bits are sent; the rest reads as zero.
    pub prefix: Ipv6Addr,
    pub sub_tlvs: Vec<RawTlvRepr>,
}

/// An IPv6 Reachability TLV (type 236).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Ipv6ReachRepr {
    pub entries: Vec<Ipv6ReachEntry>,
}

impl Ipv6ReachEntry {
    fn sub_len(&self) -> usize {
        self.sub_tlvs.iter().map(RawTlvRepr::buffer_len).sum()
    }

    pub fn buffer_len(&self) -> usize {
        6 + locator_octets(self.prefix_len) + if self.sub_tlvs.is_empty() { 0 } else { 1 + self.sub_len() }
    }
}

impl Ipv6ReachRepr {
    pub fn buffer_len(&self) -> usize {
        2 + self.entries.iter().map(Ipv6ReachEntry::buffer_len).sum::<usize>()
    }

    /// `Malformed` for a prefix length over 128; `BadLength` when the TLV
    /// or an entry's sub-TLVs pass 255 octets. The prefix's bits past
    /// its length go out as zero (RFC 5308 s.2: the prefix is packed in
    /// the minimal number of octets).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let len = u8::try_from(self.buffer_len() - 2).map_err(|_| Error::BadLength)?;
        let mut v = vec![TLV_IPV6_REACH, len];
        for e in &self.entries {
            if e.prefix_len > 128 {
                return Err(Error::Malformed);
            }
            v.extend_from_slice(&e.metric.to_be_bytes());
            let s = if e.sub_tlvs.is_empty() { 0 } else { IPV6_REACH_S };
            v.push((e.flags & (IPV6_REACH_U | IPV6_REACH_X)) | s);
            v.push(e.prefix_len);
            let n = locator_octets(e.prefix_len);
            v.extend_from_slice(&locator_prefix(e.prefix, e.prefix_len).octets()[..n]);
            if !e.sub_tlvs.is_empty() {
                v.push(u8::try_from(e.sub_len()).map_err(|_| Error::BadLength)?);
                for t in &e.sub_tlvs {
                    let at = v.len();
                    v.resize(at + t.buffer_len(), 0);
                    t.emit(&mut v[at..])?;
                }
            }
        }
        Ok(v)
    }

    /// The TLV at the start of `d`: `Unrecognized` unless type 236,
    /// `Truncated` / `BadLength` when an entry overruns it, `Malformed`
    /// for a prefix length over 128. Prefix bits past the length are
    /// ignored.
    pub fn parse(d: &[u8]) -> Result<Self> {
        let total = check_tlv_header(d, TLV_IPV6_REACH)?;
        let mut rest = &d[2..total];
        let mut entries = Vec::new();
        while !rest.is_empty() {
            let h = rest.get(..6).ok_or(Error::BadLength)?;
            let (flags, prefix_len) = (h[4], h[5]);
            if prefix_len > 128 {
                return Err(Error::Malformed);
            }
            let n = locator_octets(prefix_len);
            let p = rest.get(6..6 + n).ok_or(Error::BadLength)?;
            let mut b = [0u8; 16];
            b[..n].copy_from_slice(p);
            let mut at = 6 + n;
            let mut sub_tlvs = Vec::new();
            if flags & IPV6_REACH_S != 0 {
                let sl = usize::from(*rest.get(at).ok_or(Error::BadLength)?);
                let subs = rest.get(at + 1..at + 1 + sl).ok_or(Error::BadLength)?;
                let mut it = RawTlvs::new(subs);
                while let Some(t) = it.next_checked()? {
                    sub_tlvs.push(RawTlvRepr { tlv_type: t.tlv_type, value: t.value.to_vec() });
                }
                at += 1 + sl;
            }
            entries.push(Ipv6ReachEntry {
                metric: u32::from_be_bytes([h[0], h[1], h[2], h[3]]),
                flags: flags & (IPV6_REACH_U | IPV6_REACH_X),
                prefix_len,
                prefix: locator_prefix(Ipv6Addr::from(b), prefix_len),
                sub_tlvs,
            });
            rest = &rest[at..];
        }
        Ok(Ipv6ReachRepr { entries })
    }
}

// ---------------------------------------------------------------------------
// SRv6 Capabilities sub-TLV
// ---------------------------------------------------------------------------

mod cap_field {
    pub const FLAGS: core::ops::Range<usize> = 2..4;
    pub const SUB: usize = 4;
}

/// View of an SRv6 Capabilities sub-TLV. The buffer may continue past the
/// sub-TLV; [`Srv6CapsTlv::total_len`] is its length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Srv6CapsTlv<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Srv6CapsTlv<T> {
    pub const fn new_unchecked(buffer: T) -> Self {
        Srv6CapsTlv { buffer }
    }

    pub fn new_checked(buffer: T) -> Result<Self> {
        let t = Self::new_unchecked(buffer);
        t.check_len()?;
        Ok(t)
    }

    /// `Unrecognized` unless type 25; `Truncated` if the buffer is shorter
    /// than 2 + Length; `BadLength` if Length < 2 or a sub-sub-TLV overruns.
    pub fn check_len(&self) -> Result<()> {
        let d = self.buffer.as_ref();
        let total = check_tlv_header(d, SUBTLV_SRV6_CAPABILITIES)?;
        if total < cap_field::SUB {
            return Err(Error::BadLength);
        }
        RawTlvs::check(&d[cap_field::SUB..total])
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Octets of the sub-TLV, 2 + Length.
    pub fn total_len(&self) -> usize {
        2 + usize::from(self.buffer.as_ref()[1])
    }

    pub fn flags(&self) -> u16 {
        let d = self.buffer.as_ref();
        u16::from_be_bytes([d[cap_field::FLAGS.start], d[cap_field::FLAGS.start + 1]])
    }

    /// O-flag: the router supports the SRH O-bit (RFC 9259).
    pub fn o_flag(&self) -> bool {
        self.flags() & CAP_FLAG_O != 0
    }

    /// C-flag (draft-hu-acn-rocev2 s.5.1): the router has the congestion
    /// handling capabilities behind END.C / END.E.
    pub fn c_flag(&self, params: &Params) -> bool {
        params.isis_srv6_cap_c_flag != 0 && self.flags() & params.isis_srv6_cap_c_flag != 0
    }

    /// The optional sub-sub-TLVs.
    pub fn sub_tlvs(&self) -> RawTlvs<'_> {
        RawTlvs::new(&self.buffer.as_ref()[cap_field::SUB..self.total_len()])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Srv6CapsTlv<T> {
    pub fn set_flags(&mut self, v: u16) {
        self.buffer.as_mut()[cap_field::FLAGS].copy_from_slice(&v.to_be_bytes());
    }
}

/// Parsed SRv6 Capabilities sub-TLV.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Srv6CapsRepr {
    pub flags: u16,
    pub sub_tlvs: Vec<RawTlvRepr>,
}

impl Srv6CapsRepr {
    /// Capabilities with the given O and C flags and no sub-sub-TLVs.
    pub fn new(o_flag: bool, c_flag: bool, params: &Params) -> Self {
        let mut flags = 0;
        if o_flag {
            flags |= CAP_FLAG_O;
        }
        if c_flag {
            flags |= params.isis_srv6_cap_c_flag;
        }
        Srv6CapsRepr {
            flags,
            sub_tlvs: Vec::new(),
        }
    }

    pub fn o_flag(&self) -> bool {
        self.flags & CAP_FLAG_O != 0
    }

    pub fn c_flag(&self, params: &Params) -> bool {
        params.isis_srv6_cap_c_flag != 0 && self.flags & params.isis_srv6_cap_c_flag != 0
    }

    pub fn parse<T: AsRef<[u8]>>(t: &Srv6CapsTlv<T>) -> Result<Self> {
        t.check_len()?;
        Ok(Srv6CapsRepr {
            flags: t.flags(),
            sub_tlvs: t
                .sub_tlvs()
                .map(|s| RawTlvRepr {
                    tlv_type: s.tlv_type,
                    value: s.value.to_vec(),
                })
                .collect(),
        })
    }

    pub fn buffer_len(&self) -> usize {
        cap_field::SUB
            + self
                .sub_tlvs
                .iter()
                .map(RawTlvRepr::buffer_len)
                .sum::<usize>()
    }

    /// Emit at the start of `buf`; returns the octets written. `BadLength`
    /// if Length would exceed 255, `Truncated` if `buf` is too short.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        let len = self.buffer_len();
        let l = u8::try_from(len - 2).map_err(|_| Error::BadLength)?;
        let b = buf.get_mut(..len).ok_or(Error::Truncated)?;
        b[0] = SUBTLV_SRV6_CAPABILITIES;
        b[1] = l;
        b[cap_field::FLAGS].copy_from_slice(&self.flags.to_be_bytes());
        let mut at = cap_field::SUB;
        for s in &self.sub_tlvs {
            at += s.emit(&mut b[at..])?;
        }
        Ok(len)
    }

    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut v = vec![0; self.buffer_len()];
        self.emit(&mut v)?;
        Ok(v)
    }
}

// ---------------------------------------------------------------------------
// SRv6 End SID sub-TLV
// ---------------------------------------------------------------------------

mod sid_field {
    pub const FLAGS: usize = 2;
    pub const BEHAVIOR: core::ops::Range<usize> = 3..5;
    pub const SID: core::ops::Range<usize> = 5..21;
    pub const SUBSUB_LEN: usize = 21;
    pub const SUBSUB: usize = 22;
}

/// Octets of the End SID value before the sub-sub-TLVs (flags 1 + behavior
/// 2 + SID 16 + sub-sub-TLV-len 1).
pub const END_SID_FIXED_VALUE_LEN: usize = 20;

/// SRv6 SID Structure (RFC 9352 s.9): lengths in bits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct SidStructure {
    pub locator_block_len: u8,
    pub locator_node_len: u8,
    pub function_len: u8,
    pub argument_len: u8,
}

impl SidStructure {
    fn from_value(v: &[u8]) -> Result<Self> {
        if v.len() != 4 {
            return Err(Error::BadLength);
        }
        let s = SidStructure {
            locator_block_len: v[0],
            locator_node_len: v[1],
            function_len: v[2],
            argument_len: v[3],
        };
        if s.total_bits() > 128 {
            return Err(Error::Malformed);
        }
        Ok(s)
    }

    /// LB + LN + Fun + Arg, which RFC 9352 s.9 bounds by 128.
    pub fn total_bits(&self) -> u32 {
        u32::from(self.locator_block_len)
            + u32::from(self.locator_node_len)
            + u32::from(self.function_len)
            + u32::from(self.argument_len)
    }
}

/// View of an SRv6 End SID sub-TLV (the buffer may continue past it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndSidTlv<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> EndSidTlv<T> {
    pub const fn new_unchecked(buffer: T) -> Self {
        EndSidTlv { buffer }
    }

    pub fn new_checked(buffer: T) -> Result<Self> {
        let t = Self::new_unchecked(buffer);
        t.check_len()?;
        Ok(t)
    }

    /// `Unrecognized` unless type 5; `Truncated` if shorter than 2 + Length;
    /// `BadLength` if Length < 20, Length != 20 + Sub-sub-TLV-len, a
    /// sub-sub-TLV overruns or a SID Structure is not 4 octets; `Malformed`
    /// if a SID Structure adds up to more than 128 bits or there are two
    /// (RFC 9352 s.9: "MUST NOT appear more than once"; the receiver
    /// ignores the End SID).
    pub fn check_len(&self) -> Result<()> {
        let d = self.buffer.as_ref();
        let total = check_tlv_header(d, SUBTLV_SRV6_END_SID)?;
        if total < sid_field::SUBSUB {
            return Err(Error::BadLength);
        }
        if total != sid_field::SUBSUB + usize::from(d[sid_field::SUBSUB_LEN]) {
            return Err(Error::BadLength);
        }
        let mut it = RawTlvs::new(&d[sid_field::SUBSUB..total]);
        let mut structures = 0;
        while let Some(s) = it.next_checked()? {
            if s.tlv_type == SUBSUBTLV_SID_STRUCTURE {
                SidStructure::from_value(s.value)?;
                structures += 1;
            }
        }
        if structures > 1 {
            return Err(Error::Malformed);
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn total_len(&self) -> usize {
        2 + usize::from(self.buffer.as_ref()[1])
    }

    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[sid_field::FLAGS]
    }

    /// Endpoint Behavior codepoint (RFC 8986 s.10.2).
    pub fn behavior(&self) -> u16 {
        let d = self.buffer.as_ref();
        u16::from_be_bytes([
            d[sid_field::BEHAVIOR.start],
            d[sid_field::BEHAVIOR.start + 1],
        ])
    }

    pub fn sid(&self) -> Ipv6Addr {
        addr16(&self.buffer.as_ref()[sid_field::SID])
    }

    pub fn sub_sub_tlvs(&self) -> RawTlvs<'_> {
        RawTlvs::new(&self.buffer.as_ref()[sid_field::SUBSUB..self.total_len()])
    }

    /// The SID Structure sub-sub-TLV, if present.
    pub fn sid_structure(&self) -> Option<SidStructure> {
        self.sub_sub_tlvs()
            .find(|s| s.tlv_type == SUBSUBTLV_SID_STRUCTURE)
            .and_then(|s| SidStructure::from_value(s.value).ok())
    }

    /// Does this advertise an END.C SID?
    pub fn is_end_c(&self, params: &Params) -> bool {
        self.behavior() == params.behaviour_end_c
    }

    /// Does this advertise an END.E SID?
    pub fn is_end_e(&self, params: &Params) -> bool {
        self.behavior() == params.behaviour_end_e
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EndSidTlv<T> {
    pub fn set_flags(&mut self, v: u8) {
        self.buffer.as_mut()[sid_field::FLAGS] = v;
    }
    pub fn set_behavior(&mut self, v: u16) {
        self.buffer.as_mut()[sid_field::BEHAVIOR].copy_from_slice(&v.to_be_bytes());
    }
    pub fn set_sid(&mut self, a: &Ipv6Addr) {
        self.buffer.as_mut()[sid_field::SID].copy_from_slice(&a.octets());
    }
}

/// A sub-sub-TLV of an End SID.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum EndSidSubTlv {
    Structure(SidStructure),
    Other(RawTlvRepr),
}

impl EndSidSubTlv {
    fn buffer_len(&self) -> usize {
        match self {
            EndSidSubTlv::Structure(_) => 6,
            EndSidSubTlv::Other(r) => r.buffer_len(),
        }
    }

    fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        match self {
            EndSidSubTlv::Structure(s) => {
                if s.total_bits() > 128 {
                    return Err(Error::Malformed);
                }
                let b = buf.get_mut(..6).ok_or(Error::Truncated)?;
                b.copy_from_slice(&[
                    SUBSUBTLV_SID_STRUCTURE,
                    4,
                    s.locator_block_len,
                    s.locator_node_len,
                    s.function_len,
                    s.argument_len,
                ]);
                Ok(6)
            }
            EndSidSubTlv::Other(r) => {
                if r.tlv_type == SUBSUBTLV_SID_STRUCTURE {
                    return Err(Error::Malformed);
                }
                r.emit(buf)
            }
        }
    }
}

/// Parsed SRv6 End SID sub-TLV.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EndSidRepr {
    pub flags: u8,
    pub behavior: u16,
    pub sid: Ipv6Addr,
    pub sub_tlvs: Vec<EndSidSubTlv>,
}

impl EndSidRepr {
    /// An END.C SID (codepoint `params.behaviour_end_c`).
    pub fn end_c(sid: Ipv6Addr, structure: Option<SidStructure>, params: &Params) -> Self {
        Self::with_behavior(params.behaviour_end_c, sid, structure)
    }

    /// An END.E SID (codepoint `params.behaviour_end_e`).
    pub fn end_e(sid: Ipv6Addr, structure: Option<SidStructure>, params: &Params) -> Self {
        Self::with_behavior(params.behaviour_end_e, sid, structure)
    }

    pub fn with_behavior(behavior: u16, sid: Ipv6Addr, structure: Option<SidStructure>) -> Self {
        EndSidRepr {
            flags: 0,
            behavior,
            sid,
            sub_tlvs: structure.into_iter().map(EndSidSubTlv::Structure).collect(),
        }
    }

    pub fn is_end_c(&self, params: &Params) -> bool {
        self.behavior == params.behaviour_end_c
    }

    pub fn is_end_e(&self, params: &Params) -> bool {
        self.behavior == params.behaviour_end_e
    }

    pub fn sid_structure(&self) -> Option<SidStructure> {
        self.sub_tlvs.iter().find_map(|s| match s {
            EndSidSubTlv::Structure(s) => Some(*s),
            EndSidSubTlv::Other(_) => None,
        })
    }

    pub fn parse<T: AsRef<[u8]>>(t: &EndSidTlv<T>) -> Result<Self> {
        t.check_len()?;
        let mut sub_tlvs = Vec::new();
        for s in t.sub_sub_tlvs() {
            sub_tlvs.push(if s.tlv_type == SUBSUBTLV_SID_STRUCTURE {
                EndSidSubTlv::Structure(SidStructure::from_value(s.value)?)
            } else {
                EndSidSubTlv::Other(RawTlvRepr {
                    tlv_type: s.tlv_type,
                    value: s.value.to_vec(),
                })
            });
        }
        Ok(EndSidRepr {
            flags: t.flags(),
            behavior: t.behavior(),
            sid: t.sid(),
            sub_tlvs,
        })
    }

    pub fn buffer_len(&self) -> usize {
        sid_field::SUBSUB
            + self
                .sub_tlvs
                .iter()
                .map(EndSidSubTlv::buffer_len)
                .sum::<usize>()
    }

    /// Emit at the start of `buf`; returns the octets written. `Malformed`
    /// for two SID Structures (RFC 9352 s.9).
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        if self.sub_tlvs.iter().filter(|s| matches!(s, EndSidSubTlv::Structure(_))).count() > 1 {
            return Err(Error::Malformed);
        }
        let len = self.buffer_len();
        let l = u8::try_from(len - 2).map_err(|_| Error::BadLength)?;
        let b = buf.get_mut(..len).ok_or(Error::Truncated)?;
        b[0] = SUBTLV_SRV6_END_SID;
        b[1] = l;
        b[sid_field::FLAGS] = self.flags;
        b[sid_field::BEHAVIOR].copy_from_slice(&self.behavior.to_be_bytes());
        b[sid_field::SID].copy_from_slice(&self.sid.octets());
        b[sid_field::SUBSUB_LEN] = (len - sid_field::SUBSUB) as u8;
        let mut at = sid_field::SUBSUB;
        for s in &self.sub_tlvs {
            at += s.emit(&mut b[at..])?;
        }
        Ok(len)
    }

    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut v = vec![0; self.buffer_len()];
        self.emit(&mut v)?;
        Ok(v)
    }
}

// ---------------------------------------------------------------------------
// SRv6 Locator TLV
// ---------------------------------------------------------------------------

mod loc_field {
    pub const MTID: core::ops::Range<usize> = 2..4;
    pub const ENTRIES: usize = 4;
    // Within an entry.
    pub const METRIC: core::ops::Range<usize> = 0..4;
    pub const FLAGS: usize = 4;
    pub const ALGORITHM: usize = 5;
    pub const LOC_SIZE: usize = 6;
    pub const LOCATOR: usize = 7;
}

/// Octets of a locator of `bits` bits.
#[inline]
pub const fn locator_octets(bits: u8) -> usize {
    (bits as usize).div_ceil(8)
}

/// The first `bits` bits of `a`, the rest zero (RFC 9352 s.7.1: a
/// Locator's trailing bits are zero on the wire and ignored when
/// received).
pub fn locator_prefix(a: Ipv6Addr, bits: u8) -> Ipv6Addr {
    let bits = u32::from(bits.min(128));
    let mask = if bits == 0 { 0 } else { u128::MAX << (128 - bits) };
    Ipv6Addr::from(u128::from(a) & mask)
}

/// Whether `sid` lies inside the locator `loc` / `bits` (RFC 9352 s.7.2:
/// an End SID is a subnet of its locator).
pub fn sid_in_locator(sid: Ipv6Addr, loc: Ipv6Addr, bits: u8) -> bool {
    locator_prefix(sid, bits) == locator_prefix(loc, bits)
}

/// View of an SRv6 Locator TLV (the buffer may continue past it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocatorTlv<T: AsRef<[u8]>> {
    buffer: T,
}

/// Split one locator entry off the front of `d`.
fn split_entry(d: &[u8]) -> Result<(LocatorEntry<'_>, usize)> {
    let loc_size = *d.get(loc_field::LOC_SIZE).ok_or(Error::BadLength)?;
    if loc_size == 0 || loc_size > 128 {
        return Err(Error::Malformed);
    }
    let sub_len_at = loc_field::LOCATOR + locator_octets(loc_size);
    let sub_len = usize::from(*d.get(sub_len_at).ok_or(Error::BadLength)?);
    let end = sub_len_at + 1 + sub_len;
    let bytes = d.get(..end).ok_or(Error::BadLength)?;
    Ok((
        LocatorEntry {
            bytes,
            sub_at: sub_len_at + 1,
        },
        end,
    ))
}

impl<T: AsRef<[u8]>> LocatorTlv<T> {
    pub const fn new_unchecked(buffer: T) -> Self {
        LocatorTlv { buffer }
    }

    pub fn new_checked(buffer: T) -> Result<Self> {
        let t = Self::new_unchecked(buffer);
        t.check_len()?;
        Ok(t)
    }

    /// `Unrecognized` unless type 27; `Truncated` if shorter than 2 +
    /// Length; `BadLength` if Length < 2 or an entry / sub-TLV overruns;
    /// `Malformed` for a Loc Size of 0 or over 128 (RFC 9352 s.7.1, the
    /// only rule that discards the whole TLV). An End SID sub-TLV that
    /// [`EndSidTlv::check_len`] refuses, or whose SID lies outside its
    /// locator, is ignored on its own ([`LocatorEntry::end_sids`]; s.7.2,
    /// s.9).
    pub fn check_len(&self) -> Result<()> {
        let d = self.buffer.as_ref();
        let total = check_tlv_header(d, TLV_SRV6_LOCATOR)?;
        if total < loc_field::ENTRIES {
            return Err(Error::BadLength);
        }
        let mut rest = &d[loc_field::ENTRIES..total];
        while !rest.is_empty() {
            let (e, n) = split_entry(rest)?;
            let mut it = RawTlvs::new(e.sub_tlv_bytes());
            while it.next_checked()?.is_some() {}
            rest = &rest[n..];
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn total_len(&self) -> usize {
        2 + usize::from(self.buffer.as_ref()[1])
    }

    /// The 12-bit MT ID (the 4 reserved bits masked off).
    pub fn mt_id(&self) -> u16 {
        let d = self.buffer.as_ref();
        u16::from_be_bytes([d[loc_field::MTID.start], d[loc_field::MTID.start + 1]]) & 0x0fff
    }

    /// The locator entries.
    pub fn entries(&self) -> LocatorEntries<'_> {
        LocatorEntries {
            rest: &self.buffer.as_ref()[loc_field::ENTRIES..self.total_len()],
        }
    }
}

/// One locator entry of a checked [`LocatorTlv`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocatorEntry<'a> {
    bytes: &'a [u8],
    sub_at: usize,
}

impl<'a> LocatorEntry<'a> {
    pub fn metric(&self) -> u32 {
        let mut b = [0u8; 4];
        b.copy_from_slice(&self.bytes[loc_field::METRIC]);
        u32::from_be_bytes(b)
    }
    pub fn flags(&self) -> u8 {
        self.bytes[loc_field::FLAGS]
    }
    pub fn algorithm(&self) -> u8 {
        self.bytes[loc_field::ALGORITHM]
    }
    /// Locator length in bits.
    pub fn loc_size(&self) -> u8 {
        self.bytes[loc_field::LOC_SIZE]
    }
    /// The locator's Loc Size bits, zero-extended to 128 bits (trailing
    /// bits ignored, RFC 9352 s.7.1).
    pub fn locator(&self) -> Ipv6Addr {
        let mut b = [0u8; 16];
        let n = locator_octets(self.loc_size());
        b[..n].copy_from_slice(&self.bytes[loc_field::LOCATOR..loc_field::LOCATOR + n]);
        locator_prefix(Ipv6Addr::from(b), self.loc_size())
    }
    fn sub_tlv_bytes(&self) -> &'a [u8] {
        &self.bytes[self.sub_at..]
    }
    pub fn sub_tlvs(&self) -> RawTlvs<'a> {
        RawTlvs::new(self.sub_tlv_bytes())
    }
    /// The End SID sub-TLVs of this locator that a receiver takes: well
    /// formed (RFC 9352 s.9: one SID Structure at most, of at most 128
    /// bits) and inside the locator (s.7.2: "SRv6 End SIDs that are NOT a
    /// subnet of the associated Locator MUST be ignored").
    pub fn end_sids(&self) -> impl Iterator<Item = EndSidTlv<&'a [u8]>> + 'a {
        let (loc, bits) = (self.locator(), self.loc_size());
        self.sub_tlvs()
            .filter(|s| s.tlv_type == SUBTLV_SRV6_END_SID)
            .filter_map(|s| EndSidTlv::new_checked(s.bytes).ok())
            .filter(move |s| sid_in_locator(s.sid(), loc, bits))
    }
}

/// Iterator over locator entries.
#[derive(Debug, Clone)]
pub struct LocatorEntries<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for LocatorEntries<'a> {
    type Item = LocatorEntry<'a>;
    fn next(&mut self) -> Option<LocatorEntry<'a>> {
        if self.rest.is_empty() {
            return None;
        }
        match split_entry(self.rest) {
            Ok((e, n)) => {
                self.rest = &self.rest[n..];
                Some(e)
            }
            Err(_) => {
                self.rest = &[];
                None
            }
        }
    }
}

/// A sub-TLV of a locator entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum LocatorSubTlv {
    EndSid(EndSidRepr),
    Other(RawTlvRepr),
}

impl LocatorSubTlv {
    fn buffer_len(&self) -> usize {
        match self {
            LocatorSubTlv::EndSid(s) => s.buffer_len(),
            LocatorSubTlv::Other(r) => r.buffer_len(),
        }
    }

    fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        match self {
            LocatorSubTlv::EndSid(s) => s.emit(buf),
            LocatorSubTlv::Other(r) => {
                if r.tlv_type == SUBTLV_SRV6_END_SID {
                    return Err(Error::Malformed);
                }
                r.emit(buf)
            }
        }
    }
}

/// Parsed locator entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LocatorEntryRepr {
    pub metric: u32,
    pub flags: u8,
    pub algorithm: u8,
    /// 1..=128 bits.
    pub loc_size: u8,
    /// Only the first ceil(loc_size / 8) octets are encoded.
    pub locator: Ipv6Addr,
    pub sub_tlvs: Vec<LocatorSubTlv>,
}

impl LocatorEntryRepr {
    /// The entry as a receiver takes it: the End SIDs that
    /// [`LocatorEntry::end_sids`] ignores are left out.
    fn parse(e: &LocatorEntry<'_>) -> Result<Self> {
        let (loc, bits) = (e.locator(), e.loc_size());
        let mut sub_tlvs = Vec::new();
        for s in e.sub_tlvs() {
            sub_tlvs.push(if s.tlv_type == SUBTLV_SRV6_END_SID {
                match EndSidTlv::new_checked(s.bytes) {
                    Ok(t) if sid_in_locator(t.sid(), loc, bits) => LocatorSubTlv::EndSid(EndSidRepr::parse(&t)?),
                    _ => continue,
                }
            } else {
                LocatorSubTlv::Other(RawTlvRepr {
                    tlv_type: s.tlv_type,
                    value: s.value.to_vec(),
                })
            });
        }
        Ok(LocatorEntryRepr {
            metric: e.metric(),
            flags: e.flags(),
            algorithm: e.algorithm(),
            loc_size: e.loc_size(),
            locator: e.locator(),
            sub_tlvs,
        })
    }

    fn sub_len(&self) -> usize {
        self.sub_tlvs.iter().map(LocatorSubTlv::buffer_len).sum()
    }

    pub fn buffer_len(&self) -> usize {
        loc_field::LOCATOR + locator_octets(self.loc_size) + 1 + self.sub_len()
    }

    /// `Malformed` for a Loc Size outside 1..=128 or an End SID outside
    /// the locator (RFC 9352 s.7.2); the locator's trailing bits go out as
    /// zero (s.7.1).
    fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        if self.loc_size == 0 || self.loc_size > 128 {
            return Err(Error::Malformed);
        }
        let locator = locator_prefix(self.locator, self.loc_size);
        if self.sub_tlvs.iter().any(|s| matches!(s, LocatorSubTlv::EndSid(e) if !sid_in_locator(e.sid, locator, self.loc_size))) {
            return Err(Error::Malformed);
        }
        let sub_len = u8::try_from(self.sub_len()).map_err(|_| Error::BadLength)?;
        let len = self.buffer_len();
        let b = buf.get_mut(..len).ok_or(Error::Truncated)?;
        b[loc_field::METRIC].copy_from_slice(&self.metric.to_be_bytes());
        b[loc_field::FLAGS] = self.flags;
        b[loc_field::ALGORITHM] = self.algorithm;
        b[loc_field::LOC_SIZE] = self.loc_size;
        let n = locator_octets(self.loc_size);
        b[loc_field::LOCATOR..loc_field::LOCATOR + n].copy_from_slice(&locator.octets()[..n]);
        let mut at = loc_field::LOCATOR + n;
        b[at] = sub_len;
        at += 1;
        for s in &self.sub_tlvs {
            at += s.emit(&mut b[at..])?;
        }
        Ok(len)
    }
}

/// Parsed SRv6 Locator TLV.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LocatorTlvRepr {
    /// 12-bit MT ID.
    pub mt_id: u16,
    pub entries: Vec<LocatorEntryRepr>,
}

impl LocatorTlvRepr {
    pub fn parse<T: AsRef<[u8]>>(t: &LocatorTlv<T>) -> Result<Self> {
        t.check_len()?;
        let mut entries = Vec::new();
        for e in t.entries() {
            entries.push(LocatorEntryRepr::parse(&e)?);
        }
        Ok(LocatorTlvRepr {
            mt_id: t.mt_id(),
            entries,
        })
    }

    pub fn buffer_len(&self) -> usize {
        loc_field::ENTRIES
            + self
                .entries
                .iter()
                .map(LocatorEntryRepr::buffer_len)
                .sum::<usize>()
    }

    /// Emit at the start of `buf`; returns the octets written. `BadLength`
    /// if a length exceeds 255, `Malformed` for an MT ID over 12 bits or a
    /// bad Loc Size.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        if self.mt_id > 0x0fff {
            return Err(Error::Malformed);
        }
        let len = self.buffer_len();
        let l = u8::try_from(len - 2).map_err(|_| Error::BadLength)?;
        let b = buf.get_mut(..len).ok_or(Error::Truncated)?;
        b[0] = TLV_SRV6_LOCATOR;
        b[1] = l;
        b[loc_field::MTID].copy_from_slice(&self.mt_id.to_be_bytes());
        let mut at = loc_field::ENTRIES;
        for e in &self.entries {
            at += e.emit(&mut b[at..])?;
        }
        Ok(len)
    }

    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut v = vec![0; self.buffer_len()];
        self.emit(&mut v)?;
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn a(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    const P: Params = Params::DEFAULT;

    #[test]
    fn caps_byte_exact() {
        let r = Srv6CapsRepr::new(true, true, &P);
        // Type 25, Length 2, Flags O (0x4000) | C (default mask 0x2000, the
        // bit after O as draft-hu-acn-rocev2 s.5.1 draws it).
        assert_eq!(r.to_bytes().unwrap(), vec![25, 2, 0x60, 0x00]);
        let b = [25, 2, 0x60, 0x00];
        let t = Srv6CapsTlv::new_checked(&b[..]).unwrap();
        assert!(t.o_flag());
        assert!(t.c_flag(&P));
        let b = [25, 2, 0x40, 0x00];
        let t = Srv6CapsTlv::new_checked(&b[..]).unwrap();
        assert!(!t.c_flag(&P));
        // A configured C bit of 0x2000 (right after O, as the draft's figure draws it).
        let p2 = Params {
            isis_srv6_cap_c_flag: 0x2000,
            ..P
        };
        assert_eq!(
            Srv6CapsRepr::new(false, true, &p2).to_bytes().unwrap(),
            vec![25, 2, 0x20, 0x00]
        );
        // With a sub-sub-TLV.
        let b = [25, 5, 0x00, 0x00, 9, 1, 0xaa];
        let t = Srv6CapsTlv::new_checked(&b[..]).unwrap();
        let r = Srv6CapsRepr::parse(&t).unwrap();
        assert_eq!(
            r.sub_tlvs,
            vec![RawTlvRepr {
                tlv_type: 9,
                value: vec![0xaa]
            }]
        );
        assert_eq!(r.to_bytes().unwrap(), b.to_vec());
    }

    #[test]
    fn caps_errors() {
        assert_eq!(
            Srv6CapsTlv::new_checked(&[25][..]).unwrap_err(),
            Error::Truncated
        );
        assert_eq!(
            Srv6CapsTlv::new_checked(&[26, 2, 0, 0][..]).unwrap_err(),
            Error::Unrecognized
        );
        assert_eq!(
            Srv6CapsTlv::new_checked(&[25, 1, 0][..]).unwrap_err(),
            Error::BadLength
        );
        assert_eq!(
            Srv6CapsTlv::new_checked(&[25, 3, 0, 0][..]).unwrap_err(),
            Error::Truncated
        );
        assert_eq!(
            Srv6CapsTlv::new_checked(&[25, 5, 0, 0, 9, 2, 0][..]).unwrap_err(),
            Error::BadLength
        );
    }

    fn end_c_bytes() -> Vec<u8> {
        let mut v = vec![5, 26, 0x00, 0xff, 0x01]; // type, len 20 + 6, flags, behavior 65281
        v.extend(a("fc00:0:1:e00c::").octets());
        v.extend([6, 1, 4, 32, 16, 16, 0]); // sub-sub-len 6; SID structure 32/16/16/0
        v
    }

    #[test]
    fn end_sid_byte_exact() {
        let s = SidStructure {
            locator_block_len: 32,
            locator_node_len: 16,
            function_len: 16,
            argument_len: 0,
        };
        let r = EndSidRepr::end_c(a("fc00:0:1:e00c::"), Some(s), &P);
        assert_eq!(r.to_bytes().unwrap(), end_c_bytes());
        let b = end_c_bytes();
        let t = EndSidTlv::new_checked(&b[..]).unwrap();
        assert!(t.is_end_c(&P));
        assert!(!t.is_end_e(&P));
        assert_eq!(t.behavior(), 65281);
        assert_eq!(t.sid(), a("fc00:0:1:e00c::"));
        assert_eq!(t.sid_structure(), Some(s));
        assert_eq!(EndSidRepr::parse(&t).unwrap(), r);
        let e = EndSidRepr::end_e(a("fc00:0:1:e00e::"), None, &P);
        let eb = e.to_bytes().unwrap();
        assert_eq!(eb.len(), 22);
        assert_eq!(&eb[..5], &[5, 20, 0, 0xff, 0x02]);
        assert_eq!(eb[21], 0);
        assert!(EndSidTlv::new_checked(&eb[..]).unwrap().is_end_e(&P));
    }

    #[test]
    fn end_sid_errors() {
        let b = end_c_bytes();
        let mut x = b.clone();
        x[21] = 5; // sub-sub-len disagrees with Length
        assert_eq!(
            EndSidTlv::new_checked(&x[..]).unwrap_err(),
            Error::BadLength
        );
        let mut x = b.clone();
        x[23] = 3; // SID structure length 3 -> also overruns
        assert_eq!(
            EndSidTlv::new_checked(&x[..]).unwrap_err(),
            Error::BadLength
        );
        let mut x = b.clone();
        x[24] = 100; // 100 + 16 + 16 > 128
        assert_eq!(
            EndSidTlv::new_checked(&x[..]).unwrap_err(),
            Error::Malformed
        );
        let mut x = b.clone();
        x[1] = 19;
        assert_eq!(
            EndSidTlv::new_checked(&x[..]).unwrap_err(),
            Error::BadLength
        );
        assert_eq!(
            EndSidTlv::new_checked(&b[..27]).unwrap_err(),
            Error::Truncated
        );
    }

    fn locator_repr() -> LocatorTlvRepr {
        LocatorTlvRepr {
            mt_id: 2,
            entries: vec![LocatorEntryRepr {
                metric: 10,
                flags: 0,
                algorithm: 0,
                loc_size: 48,
                locator: a("fc00:0:1::"),
                sub_tlvs: vec![
                    LocatorSubTlv::EndSid(EndSidRepr::end_c(
                        a("fc00:0:1:e00c::"),
                        Some(SidStructure {
                            locator_block_len: 32,
                            locator_node_len: 16,
                            function_len: 16,
                            argument_len: 0,
                        }),
                        &P,
                    )),
                    LocatorSubTlv::EndSid(EndSidRepr::end_e(a("fc00:0:1:e00e::"), None, &P)),
                ],
            }],
        }
    }

    #[test]
    fn locator_byte_exact() {
        let mut v = vec![27, 0, 0x00, 0x02]; // type, len (patched), MT ID 2
        v.extend([0, 0, 0, 10, 0, 0, 48]); // metric, flags, algorithm, loc size
        v.extend([0xfc, 0, 0, 0, 0, 1]); // 6 octets of locator
        v.push((end_c_bytes().len() + 22) as u8);
        v.extend(end_c_bytes());
        v.extend([5, 20, 0, 0xff, 0x02]);
        v.extend(a("fc00:0:1:e00e::").octets());
        v.push(0);
        v[1] = (v.len() - 2) as u8;
        assert_eq!(locator_repr().to_bytes().unwrap(), v);
        let t = LocatorTlv::new_checked(&v[..]).unwrap();
        assert_eq!(t.mt_id(), 2);
        let e = t.entries().next().unwrap();
        assert_eq!(e.locator(), a("fc00:0:1::"));
        assert_eq!(e.metric(), 10);
        let sids: Vec<u16> = e.end_sids().map(|s| s.behavior()).collect();
        assert_eq!(sids, vec![65281, 65282]);
        assert_eq!(LocatorTlvRepr::parse(&t).unwrap(), locator_repr());
    }

    #[test]
    fn locator_errors() {
        let v = locator_repr().to_bytes().unwrap();
        let mut x = v.clone();
        x[10] = 0; // loc size 0
        assert_eq!(
            LocatorTlv::new_checked(&x[..]).unwrap_err(),
            Error::Malformed
        );
        let mut x = v.clone();
        x[10] = 129;
        assert_eq!(
            LocatorTlv::new_checked(&x[..]).unwrap_err(),
            Error::Malformed
        );
        let mut x = v.clone();
        x[17] += 1; // sub-TLV len overruns the TLV
        assert_eq!(
            LocatorTlv::new_checked(&x[..]).unwrap_err(),
            Error::BadLength
        );
        let mut x = v.clone();
        x[0] = 135;
        assert_eq!(
            LocatorTlv::new_checked(&x[..]).unwrap_err(),
            Error::Unrecognized
        );
    }

    /// RFC 5308 s.2: metric, control octet, prefix length, the prefix in
    /// ceil(len / 8) octets with the bits past the length zero; a prefix
    /// length over 128 is refused both ways.
    #[test]
    fn ipv6_reach_byte_exact() {
        let r = Ipv6ReachRepr { entries: vec![Ipv6ReachEntry { metric: 10, flags: 0, prefix_len: 36, prefix: a("fc00:0:ffff::"), sub_tlvs: vec![] }] };
        let b = r.to_bytes().unwrap();
        assert_eq!(b, [236, 11, 0, 0, 0, 10, 0, 36, 0xfc, 0, 0, 0, 0xf0]);
        let back = Ipv6ReachRepr::parse(&b).unwrap();
        assert_eq!(back.entries[0].prefix, a("fc00:0:f000::"));
        let mut bad = b.clone();
        bad[7] = 129;
        assert_eq!(Ipv6ReachRepr::parse(&bad), Err(Error::Malformed));
        assert_eq!(Ipv6ReachRepr { entries: vec![Ipv6ReachEntry { prefix_len: 129, ..r.entries[0].clone() }] }.to_bytes(), Err(Error::Malformed));
        // S set: the sub-TLVs follow their length.
        let s = Ipv6ReachRepr { entries: vec![Ipv6ReachEntry { flags: IPV6_REACH_U, sub_tlvs: vec![RawTlvRepr { tlv_type: 4, value: vec![0x40] }], ..r.entries[0].clone() }] };
        let b = s.to_bytes().unwrap();
        assert_eq!(&b[6..8], &[IPV6_REACH_U | IPV6_REACH_S, 36]);
        assert_eq!(&b[13..], &[3, 4, 1, 0x40]);
        assert_eq!(Ipv6ReachRepr::parse(&b).unwrap().entries[0].sub_tlvs, s.entries[0].sub_tlvs);
        assert!(Ipv6ReachRepr::parse(&b[..b.len() - 1]).is_err());
    }

    // --- proptest ---

    fn arb_raw(excl: u8) -> impl Strategy<Value = RawTlvRepr> {
        (
            any::<u8>().prop_filter("reserved type", move |t| *t != excl),
            prop::collection::vec(any::<u8>(), 0..12),
        )
            .prop_map(|(tlv_type, value)| RawTlvRepr { tlv_type, value })
    }

    /// Valid End SIDs: at most one SID Structure (RFC 9352 s.9).
    fn arb_end_sid() -> impl Strategy<Value = EndSidRepr> {
        (
            any::<u8>(),
            any::<u16>(),
            any::<[u8; 16]>(),
            prop::collection::vec(
                prop_oneof![
                    (0u8..=64, 0u8..=32, 0u8..=16, 0u8..=16).prop_map(|(b, n, f, a)| {
                        EndSidSubTlv::Structure(SidStructure {
                            locator_block_len: b,
                            locator_node_len: n,
                            function_len: f,
                            argument_len: a,
                        })
                    }),
                    arb_raw(SUBSUBTLV_SID_STRUCTURE).prop_map(EndSidSubTlv::Other),
                ],
                0..3,
            ),
        )
            .prop_map(|(flags, behavior, sid, sub_tlvs)| EndSidRepr {
                flags,
                behavior,
                sid: Ipv6Addr::from(sid),
                sub_tlvs,
            })
            .prop_filter("one SID Structure at most", |r| r.sub_tlvs.iter().filter(|s| matches!(s, EndSidSubTlv::Structure(_))).count() <= 1)
    }

    fn arb_locator() -> impl Strategy<Value = LocatorTlvRepr> {
        let entry = (
            any::<u32>(),
            any::<u8>(),
            any::<u8>(),
            1u8..=128,
            any::<[u8; 16]>(),
            prop::collection::vec(
                prop_oneof![
                    arb_end_sid().prop_map(LocatorSubTlv::EndSid),
                    arb_raw(SUBTLV_SRV6_END_SID).prop_map(LocatorSubTlv::Other),
                ],
                0..3,
            ),
        )
            .prop_map(|(metric, flags, algorithm, loc_size, l, mut sub_tlvs)| {
                // Valid entries: trailing bits zero, End SIDs inside the
                // locator (their bits past it as generated).
                let l = locator_prefix(Ipv6Addr::from(l), loc_size);
                let host = if loc_size == 128 { 0 } else { u128::MAX >> loc_size };
                for s in &mut sub_tlvs {
                    if let LocatorSubTlv::EndSid(e) = s {
                        e.sid = Ipv6Addr::from(u128::from(l) | (u128::from(e.sid) & host));
                    }
                }
                LocatorEntryRepr {
                    metric,
                    flags,
                    algorithm,
                    loc_size,
                    locator: l,
                    sub_tlvs,
                }
            });
        (0u16..4096, prop::collection::vec(entry, 0..3))
            .prop_map(|(mt_id, entries)| LocatorTlvRepr { mt_id, entries })
            .prop_filter("fits in 255", |r| r.to_bytes().is_ok())
    }

    proptest! {
        #[test]
        fn caps_roundtrip(flags in any::<u16>(), subs in prop::collection::vec(arb_raw(0), 0..4), cut in any::<prop::sample::Index>()) {
            let r = Srv6CapsRepr { flags, sub_tlvs: subs };
            let b = r.to_bytes().unwrap();
            let t = Srv6CapsTlv::new_checked(&b[..]).unwrap();
            prop_assert_eq!(Srv6CapsRepr::parse(&t).unwrap(), r);
            prop_assert!(Srv6CapsTlv::new_checked(&b[..cut.index(b.len())]).is_err());
        }

        #[test]
        fn end_sid_roundtrip(r in arb_end_sid(), cut in any::<prop::sample::Index>(), d in 1u8..=255) {
            let b = r.to_bytes().unwrap();
            let t = EndSidTlv::new_checked(&b[..]).unwrap();
            prop_assert_eq!(EndSidRepr::parse(&t).unwrap(), r);
            prop_assert!(EndSidTlv::new_checked(&b[..cut.index(b.len())]).is_err());
            // Corrupt Length or Sub-sub-TLV-len: always an error (they must agree).
            let mut x = b.clone();
            x[1] = x[1].wrapping_add(d);
            let mut y = x.clone();
            y.extend([0u8; 300]);
            prop_assert!(EndSidTlv::new_checked(&y[..]).is_err());
            let mut x = b.clone();
            x[21] = x[21].wrapping_add(d);
            prop_assert!(EndSidTlv::new_checked(&x[..]).is_err());
        }

        #[test]
        fn locator_roundtrip(r in arb_locator(), cut in any::<prop::sample::Index>()) {
            let b = r.to_bytes().unwrap();
            let t = LocatorTlv::new_checked(&b[..]).unwrap();
            prop_assert_eq!(LocatorTlvRepr::parse(&t).unwrap(), r);
            prop_assert!(LocatorTlv::new_checked(&b[..cut.index(b.len())]).is_err());
        }

        #[test]
        fn locator_corruption_never_panics(r in arb_locator(), at in any::<prop::sample::Index>(), v in any::<u8>()) {
            let mut b = r.to_bytes().unwrap();
            let i = at.index(b.len());
            b[i] = v;
            if let Ok(t) = LocatorTlv::new_checked(&b[..]) {
                let _ = LocatorTlvRepr::parse(&t);
                for e in t.entries() {
                    let _ = e.locator();
                    for s in e.end_sids() { let _ = (s.sid(), s.sid_structure()); }
                }
            }
        }

        #[test]
        fn ipv6_reach_roundtrip(metric in any::<u32>(), flags in 0u8..4, len in 0u8..=128, p in any::<[u8; 16]>(), cut in any::<prop::sample::Index>()) {
            let r = Ipv6ReachRepr { entries: vec![Ipv6ReachEntry { metric, flags: flags << 6, prefix_len: len, prefix: locator_prefix(Ipv6Addr::from(p), len), sub_tlvs: vec![] }] };
            let b = r.to_bytes().unwrap();
            prop_assert_eq!(Ipv6ReachRepr::parse(&b).unwrap(), r);
            // Cut short: an error, never a panic; with Length cut to
            // match, an entry overruns it.
            let c = cut.index(b.len());
            prop_assert!(Ipv6ReachRepr::parse(&b[..c]).is_err());
            if c > 2 {
                let mut t = b[..c].to_vec();
                t[1] = (c - 2) as u8;
                prop_assert!(Ipv6ReachRepr::parse(&t).is_err());
            }
        }

        #[test]
        fn random_bytes_never_panic(b in prop::collection::vec(any::<u8>(), 0..120)) {
            let _ = Ipv6ReachRepr::parse(&b);
            if let Ok(t) = LocatorTlv::new_checked(&b[..]) { let _ = LocatorTlvRepr::parse(&t); }
            if let Ok(t) = EndSidTlv::new_checked(&b[..]) { let _ = EndSidRepr::parse(&t); }
            if let Ok(t) = Srv6CapsTlv::new_checked(&b[..]) { let _ = Srv6CapsRepr::parse(&t); }
        }
    }
}
