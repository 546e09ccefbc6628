//! Long-haul CNP (draft-tian-ccwg-long-haul-cnp-00 section 6).
//!
//! Two encodings of the same 12-octet body ([`CnpInfo`]):
//!
//! * s.6.1, an ICMPv6 informational message ([`Icmpv6LhCnp`] /
//!   [`Icmpv6LhCnpRepr`]): type (IANA TBD1, [`Params::icmpv6_lhcnp_type`]),
//!   code 0, checksum, then the body;
//! * s.6.2, a RoCEv2 CNP (opcode 0x81, BECN=1) with the proposed E bit set in
//!   the BTH and the body right after the BTH, before the ICRC
//!   ([`RoceLhCnpRepr`], over a [`Bth`] view).
//!
//! Both may carry optional extension objects (s.6.1.1) in the RFC 4884
//! extension structure: a 4-octet header (version 2, 12 reserved bits,
//! checksum over the whole structure) then objects of Length / Class-Num /
//! C-Type (Class-Num IANA TBD2, [`Params::lhcnp_ext_class_num`]). As s.6.1.1
//! says, an object's Length is its *unpadded* length including the 4-octet
//! object header, and objects are zero-padded to 4 octets. The message has
//! no "original datagram" field, so RFC 4884's length attribute is not used:
//! whatever follows the fixed body is the extension structure, and when
//! there are no objects the extension header is omitted.
//!
//! Note on s.6.2: the draft places the body *immediately* after the BTH, in
//! the octets where a standard CNP has 16 reserved octets; a Long-haul CNP
//! without objects therefore has 12 octets between BTH and ICRC, 4 fewer
//! than a standard CNP (the draft's s.8 says "at least 12 additional
//! octets", which only holds against a CNP without its reserved block). We
//! follow the packet layout of s.6.2.2 literally.

use super::checksum;
use super::params::Params;
use super::roce::{self, Bth, BthRepr, IpUdpRepr, BTH_LEN, ICRC_LEN};
use super::{Error, Result};

/// Length of the fixed body (s.6.1: "12 octets").
pub const BODY_LEN: usize = 12;
/// Length of the ICMPv6 header (type, code, checksum).
pub const ICMP_HEADER_LEN: usize = 4;
/// Length of an ICMPv6 Long-haul CNP without extensions.
pub const ICMP_FIXED_LEN: usize = ICMP_HEADER_LEN + BODY_LEN;
/// Length of the RFC 4884 extension header.
pub const EXT_HEADER_LEN: usize = 4;
/// Length of an extension object header.
pub const OBJ_HEADER_LEN: usize = 4;
/// RFC 4884 extension structure version.
pub const EXT_VERSION: u8 = 2;
/// ICMPv6 code 0: flow-level Long-haul CNP (s.10.2).
pub const CODE_FLOW_LEVEL: u8 = 0;

/// C-Types of the Long-haul CNP extension class (s.10.3, table 4).
pub mod ctype {
    pub const RESERVED: u8 = 0;
    pub const TIMESTAMP: u8 = 1;
    pub const DEVICE_ID: u8 = 2;
    pub const PATH_ID: u8 = 3;
}

/// The primary action, upper two bits of Action Flags (s.6.1, s.5.5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// 00: congestion exists; apply the default response. Parameter 0.
    Notify,
    /// 01: halt the QP for Parameter microseconds.
    Pause,
    /// 10: reduce the QP's rate by Parameter percent.
    RateReduce,
    /// 11: restore Parameter percent of the last reduction (0: all).
    Resume,
}

impl Action {
    /// Decode from the Action Flags octet (the six reserved low bits are
    /// ignored, as receivers must).
    pub const fn from_flags(flags: u8) -> Action {
        match flags >> 6 {
            0 => Action::Notify,
            1 => Action::Pause,
            2 => Action::RateReduce,
            _ => Action::Resume,
        }
    }
    /// The Action Flags octet (reserved bits zero).
    pub const fn to_flags(self) -> u8 {
        (match self {
            Action::Notify => 0u8,
            Action::Pause => 1,
            Action::RateReduce => 2,
            Action::Resume => 3,
        }) << 6
    }
}

/// The Congestion Metric Type (s.10.4, table 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetricType {
    /// 0: opaque context.
    Unspecified,
    /// 1: queue depth in kilobytes.
    QueueDepthKb,
    /// 2: queue growth rate in kilobytes per millisecond.
    QueueGrowthKbPerMs,
    /// 3: ECN marking rate in percent.
    EcnMarkingPercent,
    /// 4: RTT-based metric in microseconds.
    RttMicros,
    /// 5..=253 unassigned, 254..=255 experimental.
    Other(u8),
}

impl From<u8> for MetricType {
    fn from(v: u8) -> Self {
        match v {
            0 => MetricType::Unspecified,
            1 => MetricType::QueueDepthKb,
            2 => MetricType::QueueGrowthKbPerMs,
            3 => MetricType::EcnMarkingPercent,
            4 => MetricType::RttMicros,
            x => MetricType::Other(x),
        }
    }
}

impl From<MetricType> for u8 {
    fn from(v: MetricType) -> u8 {
        match v {
            MetricType::Unspecified => 0,
            MetricType::QueueDepthKb => 1,
            MetricType::QueueGrowthKbPerMs => 2,
            MetricType::EcnMarkingPercent => 3,
            MetricType::RttMicros => 4,
            MetricType::Other(x) => x,
        }
    }
}

mod field {
    use core::ops::Range;
    // Offsets inside the 12-octet body.
    pub const CONG_LEVEL: usize = 0;
    pub const ACTION_FLAGS: usize = 1;
    pub const PARAMETER: Range<usize> = 2..4;
    pub const SOURCE_QP: Range<usize> = 4..8;
    pub const METRIC_TYPE: usize = 8;
    pub const METRIC_VALUE: Range<usize> = 9..12;

    // ICMPv6 header.
    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const CHECKSUM: Range<usize> = 2..4;

    // Extension header / object header.
    pub const EXT_VERSION: usize = 0;
    pub const EXT_CHECKSUM: Range<usize> = 2..4;
    pub const OBJ_LENGTH: Range<usize> = 0..2;
    pub const OBJ_CLASS: usize = 2;
    pub const OBJ_CTYPE: usize = 3;
}

// ---------------------------------------------------------------- body

/// A view of the 12-octet body (Congestion Level .. Congestion Metric Value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Body<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Body<T> {
    pub const fn new_unchecked(buffer: T) -> Body<T> {
        Body { buffer }
    }
    pub fn new_checked(buffer: T) -> Result<Body<T>> {
        let b = Self::new_unchecked(buffer);
        b.check_len()?;
        Ok(b)
    }
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < BODY_LEN {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }
    #[inline]
    pub fn congestion_level(&self) -> u8 {
        self.buffer.as_ref()[field::CONG_LEVEL]
    }
    #[inline]
    pub fn action_flags(&self) -> u8 {
        self.buffer.as_ref()[field::ACTION_FLAGS]
    }
    #[inline]
    pub fn action(&self) -> Action {
        Action::from_flags(self.action_flags())
    }
    #[inline]
    pub fn parameter(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::PARAMETER];
        u16::from_be_bytes([b[0], b[1]])
    }
    #[inline]
    pub fn source_qp(&self) -> u32 {
        let b = &self.buffer.as_ref()[field::SOURCE_QP];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }
    #[inline]
    pub fn metric_type(&self) -> u8 {
        self.buffer.as_ref()[field::METRIC_TYPE]
    }
    #[inline]
    pub fn metric_value(&self) -> u32 {
        let b = &self.buffer.as_ref()[field::METRIC_VALUE];
        (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Body<T> {
    #[inline]
    pub fn set_congestion_level(&mut self, v: u8) {
        self.buffer.as_mut()[field::CONG_LEVEL] = v;
    }
    #[inline]
    pub fn set_action_flags(&mut self, v: u8) {
        self.buffer.as_mut()[field::ACTION_FLAGS] = v;
    }
    #[inline]
    pub fn set_parameter(&mut self, v: u16) {
        self.buffer.as_mut()[field::PARAMETER].copy_from_slice(&v.to_be_bytes());
    }
    #[inline]
    pub fn set_source_qp(&mut self, v: u32) {
        self.buffer.as_mut()[field::SOURCE_QP].copy_from_slice(&v.to_be_bytes());
    }
    #[inline]
    pub fn set_metric_type(&mut self, v: u8) {
        self.buffer.as_mut()[field::METRIC_TYPE] = v;
    }
    /// Set the 24-bit metric value (higher bits are dropped).
    #[inline]
    pub fn set_metric_value(&mut self, v: u32) {
        let b = &mut self.buffer.as_mut()[field::METRIC_VALUE];
        b[0] = (v >> 16) as u8;
        b[1] = (v >> 8) as u8;
        b[2] = v as u8;
    }
}

/// The control instruction both formats carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CnpInfo {
    /// 0 = no congestion .. 255 = maximum.
    pub congestion_level: u8,
    pub action: Action,
    /// Percent (Rate Reduce, Resume), microseconds (Pause), 0 (Notify).
    pub parameter: u16,
    /// The QP at the traffic source that should act (32 bits on the wire).
    pub source_qp: u32,
    pub metric_type: MetricType,
    /// 24-bit value whose unit `metric_type` gives.
    pub metric_value: u32,
}

impl CnpInfo {
    /// Parse the body. The reserved bits of Action Flags are ignored.
    pub fn parse<T: AsRef<[u8]>>(body: &Body<T>) -> Result<CnpInfo> {
        body.check_len()?;
        Ok(CnpInfo {
            congestion_level: body.congestion_level(),
            action: body.action(),
            parameter: body.parameter(),
            source_qp: body.source_qp(),
            metric_type: MetricType::from(body.metric_type()),
            metric_value: body.metric_value(),
        })
    }

    pub const fn buffer_len(&self) -> usize {
        BODY_LEN
    }

    /// Whether a sender may emit this instruction (s.6.1): Notify carries
    /// Parameter 0; Rate Reduce and Resume carry a percentage (0-100); an
    /// ECN marking rate is a percentage; the metric value has 24 bits.
    /// Parsing is liberal and does not apply these rules.
    pub fn validate(&self) -> Result<()> {
        let param_ok = match self.action {
            Action::Notify => self.parameter == 0,
            Action::RateReduce | Action::Resume => self.parameter <= 100,
            Action::Pause => true,
        };
        let metric_ok = self.metric_value <= 0x00ff_ffff
            && (self.metric_type != MetricType::EcnMarkingPercent || self.metric_value <= 100);
        if param_ok && metric_ok {
            Ok(())
        } else {
            Err(Error::Malformed)
        }
    }

    /// Write the body; refuses what [`CnpInfo::validate`] refuses.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, body: &mut Body<T>) -> Result<()> {
        body.check_len()?;
        self.validate()?;
        body.set_congestion_level(self.congestion_level);
        body.set_action_flags(self.action.to_flags());
        body.set_parameter(self.parameter);
        body.set_source_qp(self.source_qp);
        body.set_metric_type(self.metric_type.into());
        body.set_metric_value(self.metric_value);
        Ok(())
    }
}

// ---------------------------------------------------------------- extensions

#[inline]
const fn pad4(n: usize) -> usize {
    (n + 3) & !3
}

/// A view of an RFC 4884 extension structure: header, then objects to the
/// end of the buffer. `new_checked` walks every object, after which
/// [`ExtStructure::objects`] cannot fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtStructure<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> ExtStructure<T> {
    pub const fn new_unchecked(buffer: T) -> ExtStructure<T> {
        ExtStructure { buffer }
    }

    /// Check the header length and every object's length: Length ≥ 4 and
    /// the padded object fits; nothing may follow the last object.
    pub fn new_checked(buffer: T) -> Result<ExtStructure<T>> {
        let s = Self::new_unchecked(buffer);
        s.check_len()?;
        Ok(s)
    }

    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        if b.len() < EXT_HEADER_LEN {
            return Err(Error::Truncated);
        }
        let mut rest = &b[EXT_HEADER_LEN..];
        while !rest.is_empty() {
            if rest.len() < OBJ_HEADER_LEN {
                return Err(Error::Truncated);
            }
            let len = usize::from(u16::from_be_bytes([rest[0], rest[1]]));
            if len < OBJ_HEADER_LEN {
                return Err(Error::BadLength);
            }
            let plen = pad4(len);
            if plen > rest.len() {
                return Err(Error::Truncated);
            }
            rest = &rest[plen..];
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The 4-bit version (2).
    #[inline]
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::EXT_VERSION] >> 4
    }
    /// The 12 reserved bits.
    #[inline]
    pub fn reserved(&self) -> u16 {
        let b = self.buffer.as_ref();
        (u16::from(b[0] & 0x0f) << 8) | u16::from(b[1])
    }
    #[inline]
    pub fn checksum(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::EXT_CHECKSUM];
        u16::from_be_bytes([b[0], b[1]])
    }
    /// Whether the checksum over the whole structure verifies; an
    /// all-zero checksum means none was sent (RFC 4884 s.7), which is
    /// accepted.
    pub fn verify_checksum(&self) -> bool {
        self.checksum() == 0 || checksum::fold(checksum::sum(self.buffer.as_ref())) == 0xffff
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> ExtStructure<&'a T> {
    /// The objects as raw `(class_num, c_type, data)` (data unpadded).
    pub fn objects(&self) -> RawObjects<'a> {
        let b = self.buffer.as_ref();
        RawObjects {
            rest: b.get(EXT_HEADER_LEN..).unwrap_or(&[]),
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ExtStructure<T> {
    /// Write version 2 and zero reserved bits.
    pub fn set_version(&mut self, v: u8) {
        let b = self.buffer.as_mut();
        b[0] = (v << 4) | (b[0] & 0x0f);
    }
    pub fn set_reserved(&mut self, v: u16) {
        let b = self.buffer.as_mut();
        b[0] = (b[0] & 0xf0) | ((v >> 8) as u8 & 0x0f);
        b[1] = v as u8;
    }
    pub fn set_checksum(&mut self, v: u16) {
        self.buffer.as_mut()[field::EXT_CHECKSUM].copy_from_slice(&v.to_be_bytes());
    }
    /// Compute and write the structure checksum.
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        // A sum that comes out 0 is sent as 0xffff (the same in one's
        // complement): 0 says no checksum was sent (RFC 4884 s.7).
        let c = match checksum::checksum(self.buffer.as_ref()) {
            0 => 0xffff,
            c => c,
        };
        self.set_checksum(c);
    }
}

/// Iterator over the raw objects of a checked [`ExtStructure`]. On an
/// unchecked structure it stops at the first malformed object.
#[derive(Debug, Clone)]
pub struct RawObjects<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for RawObjects<'a> {
    type Item = (u8, u8, &'a [u8]);
    fn next(&mut self) -> Option<Self::Item> {
        let r = self.rest;
        if r.len() < OBJ_HEADER_LEN {
            return None;
        }
        let len = usize::from(u16::from_be_bytes([r[0], r[1]]));
        if len < OBJ_HEADER_LEN || pad4(len) > r.len() {
            self.rest = &[];
            return None;
        }
        let item = (
            r[field::OBJ_CLASS],
            r[field::OBJ_CTYPE],
            &r[OBJ_HEADER_LEN..len],
        );
        self.rest = &r[pad4(len)..];
        Some(item)
    }
}

/// The content of an extension object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ObjectData<'a> {
    /// C-Type 1 of the Long-haul CNP class: 64-bit NTP timestamp.
    Timestamp(u64),
    /// C-Type 2: device identifier (UTF-8).
    DeviceId(&'a str),
    /// C-Type 3: path identifier (opaque).
    PathId(&'a [u8]),
    /// Any other class or C-Type, kept as is.
    Raw { c_type: u8, data: &'a [u8] },
}

/// One extension object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ExtObject<'a> {
    /// The Class-Num; typed [`ObjectData`] variants are only produced and
    /// only meaningful with the Long-haul CNP class.
    pub class_num: u8,
    pub data: ObjectData<'a>,
}

impl<'a> ExtObject<'a> {
    /// Type a raw object: in the Long-haul CNP class (`lhcnp_class`),
    /// C-Types 1..=3 must be well formed (8 octets; valid UTF-8).
    pub fn from_raw(
        lhcnp_class: u8,
        class_num: u8,
        c_type: u8,
        data: &'a [u8],
    ) -> Result<ExtObject<'a>> {
        let data = if class_num != lhcnp_class {
            ObjectData::Raw { c_type, data }
        } else {
            match c_type {
                ctype::TIMESTAMP => {
                    let b: [u8; 8] = data.try_into().map_err(|_| Error::Malformed)?;
                    ObjectData::Timestamp(u64::from_be_bytes(b))
                }
                ctype::DEVICE_ID => {
                    ObjectData::DeviceId(core::str::from_utf8(data).map_err(|_| Error::Malformed)?)
                }
                ctype::PATH_ID => ObjectData::PathId(data),
                _ => ObjectData::Raw { c_type, data },
            }
        };
        Ok(ExtObject { class_num, data })
    }

    /// The C-Type.
    pub fn c_type(&self) -> u8 {
        match self.data {
            ObjectData::Timestamp(_) => ctype::TIMESTAMP,
            ObjectData::DeviceId(_) => ctype::DEVICE_ID,
            ObjectData::PathId(_) => ctype::PATH_ID,
            ObjectData::Raw { c_type, .. } => c_type,
        }
    }

    /// Payload length without padding.
    pub fn data_len(&self) -> usize {
        match self.data {
            ObjectData::Timestamp(_) => 8,
            ObjectData::DeviceId(s) => s.len(),
            ObjectData::PathId(d) | ObjectData::Raw { data: d, .. } => d.len(),
        }
    }

    /// The Length field: object header plus unpadded payload.
    pub fn length(&self) -> usize {
        OBJ_HEADER_LEN + self.data_len()
    }

    /// Octets the object occupies (padded to 4).
    pub fn buffer_len(&self) -> usize {
        pad4(self.length())
    }

    /// Write the object (with zero padding) into the start of `buf`.
    fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        let len = self.length();
        if len > usize::from(u16::MAX) {
            return Err(Error::BadLength);
        }
        let n = self.buffer_len();
        let b = buf.get_mut(..n).ok_or(Error::Truncated)?;
        b[field::OBJ_LENGTH].copy_from_slice(&(len as u16).to_be_bytes());
        b[field::OBJ_CLASS] = self.class_num;
        b[field::OBJ_CTYPE] = self.c_type();
        let d = &mut b[OBJ_HEADER_LEN..len];
        match self.data {
            ObjectData::Timestamp(t) => d.copy_from_slice(&t.to_be_bytes()),
            ObjectData::DeviceId(s) => d.copy_from_slice(s.as_bytes()),
            ObjectData::PathId(x) | ObjectData::Raw { data: x, .. } => d.copy_from_slice(x),
        }
        b[len..].fill(0);
        Ok(n)
    }
}

/// The optional extension objects of a Long-haul CNP: either parsed from a
/// validated structure, or a caller's list to emit. Two values are equal
/// when they yield the same objects.
#[derive(Debug, Clone, Copy)]
pub enum Objects<'a> {
    /// Objects of a validated structure (octets after the extension header).
    Parsed { lhcnp_class: u8, objects: &'a [u8] },
    /// A list to emit.
    List(&'a [ExtObject<'a>]),
}

impl<'a> Objects<'a> {
    /// No objects (no extension structure).
    pub const NONE: Objects<'static> = Objects::List(&[]);

    /// Parse and validate the extension structure `ext` (everything after
    /// the fixed body; empty means none): version 2, checksum, object
    /// lengths, typed objects of the Long-haul CNP class. A header without
    /// objects is malformed (s.6.1.1: the header MUST then be omitted).
    pub fn parse(ext: &'a [u8], lhcnp_class: u8) -> Result<Objects<'a>> {
        if ext.is_empty() {
            return Ok(Objects::NONE);
        }
        let s = ExtStructure::new_checked(ext)?;
        if s.version() != EXT_VERSION {
            return Err(Error::Unrecognized);
        }
        if !s.verify_checksum() {
            return Err(Error::Checksum);
        }
        if ext.len() == EXT_HEADER_LEN {
            return Err(Error::Malformed);
        }
        for (class_num, c_type, data) in s.objects() {
            ExtObject::from_raw(lhcnp_class, class_num, c_type, data)?;
        }
        Ok(Objects::Parsed {
            lhcnp_class,
            objects: &ext[EXT_HEADER_LEN..],
        })
    }

    /// Iterate over the objects.
    pub fn iter(&self) -> ObjectIter<'a> {
        match *self {
            Objects::Parsed {
                lhcnp_class,
                objects,
            } => ObjectIter::Parsed {
                lhcnp_class,
                raw: RawObjects { rest: objects },
            },
            Objects::List(l) => ObjectIter::List(l.iter()),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.iter().next().is_none()
    }

    /// Octets of the extension structure (0 without objects).
    pub fn buffer_len(&self) -> usize {
        if self.is_empty() {
            0
        } else {
            EXT_HEADER_LEN + self.iter().map(|o| o.buffer_len()).sum::<usize>()
        }
    }

    /// Write the extension structure (header with checksum, objects) into
    /// `buf`, which must be exactly `buffer_len()` octets.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        if buf.len() != self.buffer_len() {
            return Err(Error::BadLength);
        }
        if buf.is_empty() {
            return Ok(());
        }
        buf[..EXT_HEADER_LEN].fill(0);
        let mut at = EXT_HEADER_LEN;
        for o in self.iter() {
            at += o.emit(&mut buf[at..])?;
        }
        let mut s = ExtStructure::new_unchecked(buf);
        s.set_version(EXT_VERSION);
        s.fill_checksum();
        Ok(())
    }
}

impl PartialEq for Objects<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for Objects<'_> {}

/// Iterator over [`Objects`].
#[derive(Debug, Clone)]
pub enum ObjectIter<'a> {
    Parsed {
        lhcnp_class: u8,
        raw: RawObjects<'a>,
    },
    List(core::slice::Iter<'a, ExtObject<'a>>),
}

impl<'a> Iterator for ObjectIter<'a> {
    type Item = ExtObject<'a>;
    fn next(&mut self) -> Option<ExtObject<'a>> {
        match self {
            ObjectIter::Parsed { lhcnp_class, raw } => {
                let (c, t, d) = raw.next()?;
                // Validated by `Objects::parse`; a failure here cannot happen
                // but must not panic either.
                ExtObject::from_raw(*lhcnp_class, c, t, d).ok()
            }
            ObjectIter::List(i) => i.next().copied(),
        }
    }
}

// ---------------------------------------------------------------- ICMPv6

/// A view of an ICMPv6 Long-haul CNP message (type, code, checksum, body,
/// optional extension structure), over exactly the ICMPv6 message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Icmpv6LhCnp<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Icmpv6LhCnp<T> {
    pub const fn new_unchecked(buffer: T) -> Icmpv6LhCnp<T> {
        Icmpv6LhCnp { buffer }
    }

    /// Check that the fixed part is present and that whatever follows it is
    /// a well-formed extension structure (lengths only).
    pub fn new_checked(buffer: T) -> Result<Icmpv6LhCnp<T>> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        if b.len() < ICMP_FIXED_LEN {
            return Err(Error::Truncated);
        }
        if b.len() > ICMP_FIXED_LEN {
            ExtStructure::new_unchecked(&b[ICMP_FIXED_LEN..]).check_len()?;
        }
        Ok(())
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
        let b = &self.buffer.as_ref()[field::CHECKSUM];
        u16::from_be_bytes([b[0], b[1]])
    }
    /// The fixed body.
    #[inline]
    pub fn body(&self) -> Body<&[u8]> {
        Body::new_unchecked(&self.buffer.as_ref()[ICMP_HEADER_LEN..ICMP_FIXED_LEN])
    }
    /// Whether extension objects follow the body.
    #[inline]
    pub fn has_extension(&self) -> bool {
        self.buffer.as_ref().len() > ICMP_FIXED_LEN
    }

    /// Verify the ICMPv6 checksum (RFC 4443 s.2.3) for the given addresses.
    pub fn verify_checksum(&self, src: &[u8; 16], dst: &[u8; 16]) -> bool {
        let b = self.buffer.as_ref();
        let ps = checksum::pseudo_v6(src, dst, 58, b.len() as u32);
        checksum::fold(checksum::combine(ps, checksum::sum(b))) == 0xffff
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Icmpv6LhCnp<&'a T> {
    /// The extension structure (empty if none).
    #[inline]
    pub fn extension(&self) -> &'a [u8] {
        &self.buffer.as_ref()[ICMP_FIXED_LEN..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Icmpv6LhCnp<T> {
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
    #[inline]
    pub fn body_mut(&mut self) -> Body<&mut [u8]> {
        Body::new_unchecked(&mut self.buffer.as_mut()[ICMP_HEADER_LEN..ICMP_FIXED_LEN])
    }
    #[inline]
    pub fn extension_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[ICMP_FIXED_LEN..]
    }
    /// Compute and write the ICMPv6 checksum.
    pub fn fill_checksum(&mut self, src: &[u8; 16], dst: &[u8; 16]) {
        self.set_checksum(0);
        let b = self.buffer.as_ref();
        let ps = checksum::pseudo_v6(src, dst, 58, b.len() as u32);
        let c = !checksum::fold(checksum::combine(ps, checksum::sum(b)));
        self.set_checksum(c);
    }
}

/// A high-level representation of an ICMPv6 Long-haul CNP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Icmpv6LhCnpRepr<'a> {
    /// 0 = flow-level (s.10.2); other codes are kept as received.
    pub code: u8,
    pub info: CnpInfo,
    pub objects: Objects<'a>,
}

impl<'a> Icmpv6LhCnpRepr<'a> {
    /// Parse and validate: the type must be `params.icmpv6_lhcnp_type`, the
    /// ICMPv6 checksum must verify for `src`/`dst`, the extension structure
    /// (if any) must be version 2 with a good checksum.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(
        packet: &Icmpv6LhCnp<&'a T>,
        src: &[u8; 16],
        dst: &[u8; 16],
        params: &Params,
    ) -> Result<Icmpv6LhCnpRepr<'a>> {
        packet.check_len()?;
        if packet.msg_type() != params.icmpv6_lhcnp_type {
            return Err(Error::Unrecognized);
        }
        if !packet.verify_checksum(src, dst) {
            return Err(Error::Checksum);
        }
        let info = CnpInfo::parse(&packet.body())?;
        let objects = Objects::parse(packet.extension(), params.lhcnp_ext_class_num)?;
        Ok(Icmpv6LhCnpRepr {
            code: packet.msg_code(),
            info,
            objects,
        })
    }

    /// Length of the ICMPv6 message.
    pub fn buffer_len(&self) -> usize {
        ICMP_FIXED_LEN + self.objects.buffer_len()
    }

    /// Write the message, including both checksums, into `packet` whose
    /// buffer must be exactly `buffer_len()` octets.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        packet: &mut Icmpv6LhCnp<T>,
        src: &[u8; 16],
        dst: &[u8; 16],
        params: &Params,
    ) -> Result<()> {
        if packet.buffer.as_ref().len() != self.buffer_len() {
            return Err(Error::BadLength);
        }
        packet.set_msg_type(params.icmpv6_lhcnp_type);
        packet.set_msg_code(self.code);
        self.info.emit(&mut packet.body_mut())?;
        self.objects.emit(packet.extension_mut())?;
        packet.fill_checksum(src, dst);
        Ok(())
    }
}

/// Emit a complete IPv6 packet carrying an ICMPv6 Long-haul CNP into `buf`;
/// returns its length.
pub fn emit_icmpv6_packet(
    src: &[u8; 16],
    dst: &[u8; 16],
    hop_limit: u8,
    repr: &Icmpv6LhCnpRepr<'_>,
    params: &Params,
    buf: &mut [u8],
) -> Result<usize> {
    let m = repr.buffer_len();
    let n = 40 + m;
    if m > 0xffff {
        return Err(Error::BadLength);
    }
    let b = buf.get_mut(..n).ok_or(Error::Truncated)?;
    b[0..4].copy_from_slice(&(6u32 << 28).to_be_bytes());
    b[4..6].copy_from_slice(&(m as u16).to_be_bytes());
    b[6] = 58;
    b[7] = hop_limit;
    b[8..24].copy_from_slice(src);
    b[24..40].copy_from_slice(dst);
    repr.emit(
        &mut Icmpv6LhCnp::new_unchecked(&mut b[40..]),
        src,
        dst,
        params,
    )?;
    Ok(n)
}

// ---------------------------------------------------------------- RoCEv2

/// Whether a RoCEv2 UDP payload is a Long-haul CNP (opcode 0x81, E=1).
pub fn is_roce_lhcnp<T: AsRef<[u8]> + ?Sized>(bth: &Bth<&T>) -> bool {
    bth.check_len().is_ok() && bth.opcode() == roce::opcode::CNP && bth.ext()
}

/// A high-level representation of a RoCEv2-format Long-haul CNP (s.6.2):
/// BTH (opcode 0x81, BECN=1, E=1, PSN 0), body, objects, ICRC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoceLhCnpRepr<'a> {
    /// 0xFFFF or the target flow's partition key.
    pub pkey: u16,
    /// DestQP of the BTH (24 bits): the QP at the source to control.
    pub dest_qp: u32,
    pub info: CnpInfo,
    pub objects: Objects<'a>,
}

impl<'a> RoceLhCnpRepr<'a> {
    /// Parse from a RoCEv2 UDP payload (BTH .. ICRC). Requires opcode 0x81
    /// and E=1 (else `Unrecognized`), BECN=1, TVer 0 and PadCnt 0 (else
    /// `Malformed`); FECN, SE, M, A and the PSN are ignored. The ICRC is
    /// not checked here (it needs the IP header: see `roce::icrc_check`).
    pub fn parse<T: AsRef<[u8]> + ?Sized>(
        bth: &Bth<&'a T>,
        params: &Params,
    ) -> Result<RoceLhCnpRepr<'a>> {
        bth.check_len()?;
        if !is_roce_lhcnp(bth) || bth.tver() != 0 {
            return Err(Error::Unrecognized);
        }
        if !bth.becn() || bth.pad_count() != 0 {
            return Err(Error::Malformed);
        }
        let p = bth.payload();
        if p.len() < BODY_LEN {
            return Err(Error::Truncated);
        }
        let info = CnpInfo::parse(&Body::new_unchecked(&p[..BODY_LEN]))?;
        let objects = Objects::parse(&p[BODY_LEN..], params.lhcnp_ext_class_num)?;
        Ok(RoceLhCnpRepr {
            pkey: bth.pkey(),
            dest_qp: bth.dest_qp(),
            info,
            objects,
        })
    }

    /// BTH + body + extension structure + ICRC.
    pub fn buffer_len(&self) -> usize {
        BTH_LEN + BODY_LEN + self.objects.buffer_len() + ICRC_LEN
    }

    /// The BTH this packet carries.
    pub const fn bth(&self) -> BthRepr {
        let mut b = BthRepr::new(roce::opcode::CNP, self.dest_qp, 0);
        b.pkey = self.pkey;
        b.becn = true;
        b.ext = true;
        b
    }

    /// Write BTH, body and objects into `bth`, whose buffer must be exactly
    /// `buffer_len()` octets. The ICRC is left to `roce::icrc_fill`.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, bth: &mut Bth<T>) -> Result<()> {
        if bth.as_ref().len() != self.buffer_len() {
            return Err(Error::BadLength);
        }
        self.bth().emit(bth);
        let p = bth.payload_mut();
        let (body, ext) = p.split_at_mut(BODY_LEN);
        self.info.emit(&mut Body::new_unchecked(body))?;
        self.objects.emit(ext)
    }
}

/// Emit a complete RoCEv2 Long-haul CNP datagram (IPv4 or IPv6, UDP, BTH,
/// body, objects, ICRC, and UDP checksum if enabled) into `buf`; returns its
/// length.
pub fn emit_roce_datagram(
    ipudp: &IpUdpRepr,
    repr: &RoceLhCnpRepr<'_>,
    buf: &mut [u8],
) -> Result<usize> {
    let hl = ipudp.header_len();
    let pl = repr.buffer_len();
    let n = hl + pl;
    ipudp.emit_headers(buf, pl)?;
    repr.emit(&mut Bth::new_unchecked(&mut buf[hl..n]))?;
    ipudp.finish(&mut buf[..n])?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::roce::{icrc_check, IpHeader};
    use proptest::prelude::*;

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    const P: Params = Params::DEFAULT;
    const N1: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];
    const SRC: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];

    /// Section 7 step 4: Rate Reduce 30, Source QP 100, Congestion Level
    /// 180, Metric Type 1 (queue depth KB), value 130000.
    const STEP4: CnpInfo = CnpInfo {
        congestion_level: 180,
        action: Action::RateReduce,
        parameter: 30,
        source_qp: 100,
        metric_type: MetricType::QueueDepthKb,
        metric_value: 130_000,
    };
    /// The body, by hand: b4 | 10 000000 | 001e | 00000064 | 01 | 01fbd0.
    const STEP4_BODY: [u8; 12] = [
        0xb4, 0x80, 0x00, 0x1e, 0x00, 0x00, 0x00, 0x64, 0x01, 0x01, 0xfb, 0xd0,
    ];

    /// scapy: IP(src=10.0.0.2, dst=10.0.0.1, id=0, DF, ttl=64)/UDP(4791,
    /// 4791, chksum=0)/BTH(opcode=0x81, becn=1, resv6=0x20, dqpn=100)/body.
    const STEP4_ROCE4: &str = "4500003800004000401126b30a0000020a00000112b712b7002400008100ffff6000006400000000b480001e000000640101fbd0c4f2c8fe";
    /// scapy: IPv6(2001:db8::2 -> ::1, hlim 64)/ICMPv6Unknown(type=200)/body.
    const STEP4_ICMP6: &str = "6000000000103a4020010db800000000000000000000000220010db8000000000000000000000001c8002a6bb480001e000000640101fbd0";
    /// As above with objects Timestamp 0xe8f0a1b2c3d4e5f6, DeviceId "N1",
    /// PathId 01..05 in class 247 (checksums by scapy.utils.checksum).
    const STEP4_ICMP6_EXT: &str = "6000000000343a4020010db800000000000000000000000220010db8000000000000000000000001c8002a47b480001e000000640101fbd020006f35000cf701e8f0a1b2c3d4e5f60006f7024e3100000009f7030102030405000000";
    /// The RoCEv2 format over IPv6 with the same objects (UDP checksum on).
    const STEP4_ROCE6_EXT: &str = "600000000048114020010db800000000000000000000000220010db800000000000000000000000112b712b70048a7508100ffff6000006400000000b480001e000000640101fbd020006f35000cf701e8f0a1b2c3d4e5f60006f7024e3100000009f70301020304050000001a6c2985";

    const OBJS: [ExtObject<'static>; 3] = [
        ExtObject {
            class_num: 247,
            data: ObjectData::Timestamp(0xe8f0_a1b2_c3d4_e5f6),
        },
        ExtObject {
            class_num: 247,
            data: ObjectData::DeviceId("N1"),
        },
        ExtObject {
            class_num: 247,
            data: ObjectData::PathId(&[1, 2, 3, 4, 5]),
        },
    ];

    #[test]
    fn step4_body_by_hand() {
        let mut b = [0u8; 12];
        STEP4.emit(&mut Body::new_unchecked(&mut b[..])).unwrap();
        assert_eq!(b, STEP4_BODY);
        assert_eq!(
            CnpInfo::parse(&Body::new_checked(&b[..]).unwrap()).unwrap(),
            STEP4
        );
    }

    #[test]
    fn step4_roce_ipv4() {
        let want = unhex(STEP4_ROCE4);
        let r = RoceLhCnpRepr {
            pkey: 0xffff,
            dest_qp: 100,
            info: STEP4,
            objects: Objects::NONE,
        };
        let ipudp = IpUdpRepr {
            ip: IpHeader::V4 {
                src: [10, 0, 0, 2],
                dst: [10, 0, 0, 1],
                tos: 0,
                ttl: 64,
                ident: 0,
            },
            src_port: 4791,
            dst_port: 4791,
            udp_checksum: false,
        };
        let mut buf = [0u8; 256];
        let n = emit_roce_datagram(&ipudp, &r, &mut buf).unwrap();
        assert_eq!(&buf[..n], &want[..]);
        // BTH octet 4: BECN | E.
        assert_eq!(buf[28 + 4], 0x60);
        icrc_check(&want).unwrap();
        let bth = Bth::new_checked(&want[28..]).unwrap();
        assert!(is_roce_lhcnp(&bth));
        assert_eq!(RoceLhCnpRepr::parse(&bth, &P).unwrap(), r);
        // A legacy parser sees a CNP with a reserved bit set: refused by the
        // standard CNP parser, which leaves it to this one.
        assert_eq!(roce::CnpRepr::parse(&bth), Err(Error::Unrecognized));
    }

    #[test]
    fn step4_icmpv6() {
        let want = unhex(STEP4_ICMP6);
        let r = Icmpv6LhCnpRepr {
            code: CODE_FLOW_LEVEL,
            info: STEP4,
            objects: Objects::NONE,
        };
        let mut buf = [0u8; 256];
        let n = emit_icmpv6_packet(&N1, &SRC, 64, &r, &P, &mut buf).unwrap();
        assert_eq!(&buf[..n], &want[..]);
        let m = Icmpv6LhCnp::new_checked(&want[40..]).unwrap();
        assert!(!m.has_extension());
        assert_eq!(Icmpv6LhCnpRepr::parse(&m, &N1, &SRC, &P).unwrap(), r);
        // Wrong address: checksum; other type: unrecognized.
        let mut other = SRC;
        other[15] = 9;
        assert_eq!(
            Icmpv6LhCnpRepr::parse(&m, &N1, &other, &P),
            Err(Error::Checksum)
        );
        let p2 = Params {
            icmpv6_lhcnp_type: 201,
            ..P
        };
        assert_eq!(
            Icmpv6LhCnpRepr::parse(&m, &N1, &SRC, &p2),
            Err(Error::Unrecognized)
        );
    }

    #[test]
    fn step4_icmpv6_with_objects() {
        let want = unhex(STEP4_ICMP6_EXT);
        let r = Icmpv6LhCnpRepr {
            code: 0,
            info: STEP4,
            objects: Objects::List(&OBJS),
        };
        assert_eq!(r.buffer_len(), want.len() - 40);
        let mut buf = [0u8; 256];
        let n = emit_icmpv6_packet(&N1, &SRC, 64, &r, &P, &mut buf).unwrap();
        assert_eq!(&buf[..n], &want[..]);
        let m = Icmpv6LhCnp::new_checked(&want[40..]).unwrap();
        let back = Icmpv6LhCnpRepr::parse(&m, &N1, &SRC, &P).unwrap();
        assert_eq!(back, r);
        let objs: Vec<_> = back.objects.iter().collect();
        assert_eq!(objs, OBJS.to_vec());
        // With another class number configured the objects stay raw.
        let p2 = Params {
            lhcnp_ext_class_num: 248,
            ..P
        };
        let other = Icmpv6LhCnpRepr::parse(&m, &N1, &SRC, &p2).unwrap();
        assert_eq!(
            other.objects.iter().next().unwrap().data,
            ObjectData::Raw {
                c_type: 1,
                data: &[0xe8, 0xf0, 0xa1, 0xb2, 0xc3, 0xd4, 0xe5, 0xf6]
            }
        );
    }

    #[test]
    fn step4_roce_ipv6_with_objects() {
        let want = unhex(STEP4_ROCE6_EXT);
        let r = RoceLhCnpRepr {
            pkey: 0xffff,
            dest_qp: 100,
            info: STEP4,
            objects: Objects::List(&OBJS),
        };
        let ipudp = IpUdpRepr {
            ip: IpHeader::V6 {
                src: N1,
                dst: SRC,
                traffic_class: 0,
                flow_label: 0,
                hop_limit: 64,
            },
            src_port: 4791,
            dst_port: 4791,
            udp_checksum: true,
        };
        let mut buf = [0u8; 256];
        let n = emit_roce_datagram(&ipudp, &r, &mut buf).unwrap();
        assert_eq!(&buf[..n], &want[..]);
        icrc_check(&want).unwrap();
        let back = RoceLhCnpRepr::parse(&Bth::new_checked(&want[48..]).unwrap(), &P).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn extension_errors() {
        let good = unhex(STEP4_ICMP6_EXT);
        let m = &good[40..];
        let ext_at = ICMP_FIXED_LEN;
        // Version 1: unrecognized (fix checksums so that only the version differs).
        let mut e = m.to_vec();
        e[ext_at] = 0x10;
        let mut s = ExtStructure::new_unchecked(&mut e[ext_at..]);
        s.fill_checksum();
        Icmpv6LhCnp::new_unchecked(&mut e[..]).fill_checksum(&N1, &SRC);
        assert_eq!(
            Icmpv6LhCnpRepr::parse(&Icmpv6LhCnp::new_checked(&e[..]).unwrap(), &N1, &SRC, &P),
            Err(Error::Unrecognized)
        );
        // Bad extension checksum (ICMPv6 checksum refreshed).
        let mut e = m.to_vec();
        e[ext_at + 3] ^= 1;
        Icmpv6LhCnp::new_unchecked(&mut e[..]).fill_checksum(&N1, &SRC);
        assert_eq!(
            Icmpv6LhCnpRepr::parse(&Icmpv6LhCnp::new_checked(&e[..]).unwrap(), &N1, &SRC, &P),
            Err(Error::Checksum)
        );
        // Object Length < 4.
        let mut e = m.to_vec();
        e[ext_at + 5] = 3;
        assert_eq!(Icmpv6LhCnp::new_checked(&e[..]), Err(Error::BadLength));
        // Object Length overruns.
        let mut e = m.to_vec();
        e[ext_at + 5] = 200;
        assert_eq!(Icmpv6LhCnp::new_checked(&e[..]), Err(Error::Truncated));
        // Trailing junk shorter than an object header.
        let mut e = m.to_vec();
        e.push(0);
        assert_eq!(Icmpv6LhCnp::new_checked(&e[..]), Err(Error::Truncated));
        // Fixed part truncated; extension header truncated.
        assert_eq!(Icmpv6LhCnp::new_checked(&m[..15]), Err(Error::Truncated));
        assert_eq!(Icmpv6LhCnp::new_checked(&m[..18]), Err(Error::Truncated));
        // Header without objects.
        let mut e = m[..ext_at + 4].to_vec();
        ExtStructure::new_unchecked(&mut e[ext_at..]).fill_checksum();
        Icmpv6LhCnp::new_unchecked(&mut e[..]).fill_checksum(&N1, &SRC);
        assert_eq!(
            Icmpv6LhCnpRepr::parse(&Icmpv6LhCnp::new_checked(&e[..]).unwrap(), &N1, &SRC, &P),
            Err(Error::Malformed)
        );
        // Timestamp of the wrong size; invalid UTF-8 device id.
        let mut tmp = [0u8; 64];
        let bad = [ExtObject {
            class_num: 247,
            data: ObjectData::Raw {
                c_type: 1,
                data: &[1, 2, 3],
            },
        }];
        let o = Objects::List(&bad);
        let n = o.buffer_len();
        o.emit(&mut tmp[..n]).unwrap();
        assert_eq!(Objects::parse(&tmp[..n], 247), Err(Error::Malformed));
        let bad = [ExtObject {
            class_num: 247,
            data: ObjectData::Raw {
                c_type: 2,
                data: &[0xff, 0xfe],
            },
        }];
        let o = Objects::List(&bad);
        let n = o.buffer_len();
        o.emit(&mut tmp[..n]).unwrap();
        assert_eq!(Objects::parse(&tmp[..n], 247), Err(Error::Malformed));
    }

    #[test]
    fn sender_rules() {
        let mut b = [0u8; 12];
        let mut body = Body::new_unchecked(&mut b[..]);
        let bad = [
            CnpInfo {
                action: Action::Notify,
                parameter: 1,
                ..STEP4
            },
            CnpInfo {
                parameter: 101,
                ..STEP4
            },
            CnpInfo {
                action: Action::Resume,
                parameter: 200,
                ..STEP4
            },
            CnpInfo {
                metric_value: 0x100_0000,
                ..STEP4
            },
            CnpInfo {
                metric_type: MetricType::EcnMarkingPercent,
                metric_value: 101,
                ..STEP4
            },
        ];
        for i in bad {
            assert_eq!(i.emit(&mut body), Err(Error::Malformed), "{i:?}");
        }
        CnpInfo {
            action: Action::Pause,
            parameter: 65535,
            ..STEP4
        }
        .emit(&mut body)
        .unwrap();
        // The parser is liberal: a Notify with a parameter is read as is.
        body.set_action_flags(0x3f);
        body.set_parameter(7);
        let i = CnpInfo::parse(&body).unwrap();
        assert_eq!((i.action, i.parameter), (Action::Notify, 7));
    }

    #[test]
    fn action_flags() {
        assert_eq!(Action::Notify.to_flags(), 0x00);
        assert_eq!(Action::Pause.to_flags(), 0x40);
        assert_eq!(Action::RateReduce.to_flags(), 0x80);
        assert_eq!(Action::Resume.to_flags(), 0xc0);
        // Reserved bits are ignored.
        assert_eq!(Action::from_flags(0x7f), Action::Pause);
        assert_eq!(u8::from(MetricType::RttMicros), 4);
        assert_eq!(MetricType::from(254), MetricType::Other(254));
    }

    #[test]
    fn roce_errors() {
        let d = unhex(STEP4_ROCE4);
        let b = &d[28..];
        let mut e = b.to_vec();
        e[4] = 0x40; // E clear: a standard CNP
        assert_eq!(
            RoceLhCnpRepr::parse(&Bth::new_checked(&e[..]).unwrap(), &P),
            Err(Error::Unrecognized)
        );
        let mut e = b.to_vec();
        e[0] = 0x11;
        assert_eq!(
            RoceLhCnpRepr::parse(&Bth::new_checked(&e[..]).unwrap(), &P),
            Err(Error::Unrecognized)
        );
        let mut e = b.to_vec();
        e[4] = 0x20; // BECN clear
        assert_eq!(
            RoceLhCnpRepr::parse(&Bth::new_checked(&e[..]).unwrap(), &P),
            Err(Error::Malformed)
        );
        // Body cut short (ICRC kept).
        let mut e = b[..20].to_vec();
        e.extend_from_slice(&[0; 4]);
        assert_eq!(
            RoceLhCnpRepr::parse(&Bth::new_checked(&e[..]).unwrap(), &P),
            Err(Error::Truncated)
        );
    }

    fn arb_info() -> impl Strategy<Value = CnpInfo> {
        (
            any::<u8>(),
            0u8..4,
            any::<u16>(),
            any::<u32>(),
            any::<u8>(),
            0u32..0x100_0000,
        )
            .prop_map(
                |(congestion_level, a, parameter, source_qp, mt, metric_value)| {
                    // Only what a sender may emit (CnpInfo::validate).
                    let action = Action::from_flags(a << 6);
                    let metric_type = MetricType::from(mt);
                    CnpInfo {
                        congestion_level,
                        action,
                        parameter: match action {
                            Action::Notify => 0,
                            Action::Pause => parameter,
                            _ => parameter % 101,
                        },
                        source_qp,
                        metric_type,
                        metric_value: if metric_type == MetricType::EcnMarkingPercent {
                            metric_value % 101
                        } else {
                            metric_value
                        },
                    }
                },
            )
    }

    #[derive(Debug, Clone)]
    enum Obj {
        Ts(u64),
        Dev(String),
        Path(Vec<u8>),
        Raw(u8, u8, Vec<u8>),
    }

    fn arb_objs() -> impl Strategy<Value = Vec<Obj>> {
        proptest::collection::vec(
            prop_oneof![
                any::<u64>().prop_map(Obj::Ts),
                "\\PC{0,12}".prop_map(Obj::Dev),
                proptest::collection::vec(any::<u8>(), 0..20).prop_map(Obj::Path),
                // Canonical raw objects: foreign class, or our class with an
                // untyped C-Type.
                (
                    0u8..247,
                    any::<u8>(),
                    proptest::collection::vec(any::<u8>(), 0..20)
                )
                    .prop_map(|(c, t, d)| Obj::Raw(c, t, d)),
                (
                    prop_oneof![Just(0u8), 4u8..=255],
                    proptest::collection::vec(any::<u8>(), 0..20)
                )
                    .prop_map(|(t, d)| Obj::Raw(247, t, d)),
            ],
            0..5,
        )
    }

    fn to_ext(v: &[Obj]) -> Vec<ExtObject<'_>> {
        v.iter()
            .map(|o| match o {
                Obj::Ts(t) => ExtObject {
                    class_num: 247,
                    data: ObjectData::Timestamp(*t),
                },
                Obj::Dev(s) => ExtObject {
                    class_num: 247,
                    data: ObjectData::DeviceId(s),
                },
                Obj::Path(p) => ExtObject {
                    class_num: 247,
                    data: ObjectData::PathId(p),
                },
                Obj::Raw(c, t, d) => ExtObject {
                    class_num: *c,
                    data: ObjectData::Raw {
                        c_type: *t,
                        data: d,
                    },
                },
            })
            .collect()
    }

    proptest! {
        #[test]
        fn icmpv6_roundtrip(info in arb_info(), code in any::<u8>(), objs in arb_objs(), src in any::<[u8; 16]>(), dst in any::<[u8; 16]>()) {
            let list = to_ext(&objs);
            let r = Icmpv6LhCnpRepr { code, info, objects: Objects::List(&list) };
            let mut buf = vec![0u8; r.buffer_len()];
            r.emit(&mut Icmpv6LhCnp::new_unchecked(&mut buf[..]), &src, &dst, &P).unwrap();
            let m = Icmpv6LhCnp::new_checked(&buf[..]).unwrap();
            prop_assert_eq!(m.has_extension(), !list.is_empty());
            prop_assert_eq!(Icmpv6LhCnpRepr::parse(&m, &src, &dst, &P).unwrap(), r);
        }

        #[test]
        fn roce_roundtrip(info in arb_info(), objs in arb_objs(), pkey in any::<u16>(), dest_qp in 0u32..0x100_0000, v6 in any::<bool>()) {
            let list = to_ext(&objs);
            let r = RoceLhCnpRepr { pkey, dest_qp, info, objects: Objects::List(&list) };
            let ip = if v6 {
                IpHeader::V6 { src: N1, dst: SRC, traffic_class: 0, flow_label: 0, hop_limit: 64 }
            } else {
                IpHeader::V4 { src: [10, 0, 0, 2], dst: [10, 0, 0, 1], tos: 0, ttl: 64, ident: 0 }
            };
            let ipudp = IpUdpRepr { ip, src_port: 4791, dst_port: 4791, udp_checksum: v6 };
            let mut buf = vec![0u8; 2048];
            let n = emit_roce_datagram(&ipudp, &r, &mut buf).unwrap();
            icrc_check(&buf[..n]).unwrap();
            let hl = ipudp.header_len();
            prop_assert_eq!(RoceLhCnpRepr::parse(&Bth::new_checked(&buf[hl..n]).unwrap(), &P).unwrap(), r);
        }

        /// Arbitrary octets never make a parser panic.
        #[test]
        fn never_panics(data in proptest::collection::vec(any::<u8>(), 0..128), class in any::<u8>()) {
            if let Ok(m) = Icmpv6LhCnp::new_checked(&data[..]) {
                let _ = m.body().action();
                let _ = m.extension();
                if let Ok(r) = Icmpv6LhCnpRepr::parse(&m, &N1, &SRC, &P) {
                    for o in r.objects.iter() { let _ = o.length(); }
                }
            }
            if let Ok(b) = Bth::new_checked(&data[..]) {
                if let Ok(r) = RoceLhCnpRepr::parse(&b, &P) {
                    let _ = r.objects.iter().count();
                }
            }
            if let Ok(o) = Objects::parse(&data, class) {
                let _ = o.buffer_len();
            }
            let s = ExtStructure::new_unchecked(&data[..]);
            let _ = s.objects().count();
        }

        /// Truncating a message with objects, or corrupting an object
        /// Length, yields an error.
        #[test]
        fn truncation_and_length_corruption(info in arb_info(), objs in arb_objs(), cut in 1usize..64, which in any::<prop::sample::Index>(), delta in 1u16..300) {
            let list = to_ext(&objs);
            prop_assume!(!list.is_empty());
            let r = Icmpv6LhCnpRepr { code: 0, info, objects: Objects::List(&list) };
            let mut buf = vec![0u8; r.buffer_len()];
            r.emit(&mut Icmpv6LhCnp::new_unchecked(&mut buf[..]), &N1, &SRC, &P).unwrap();
            let cut = cut.min(buf.len());
            let t = &buf[..buf.len() - cut];
            let res = Icmpv6LhCnp::new_checked(t).and_then(|m| Icmpv6LhCnpRepr::parse(&m, &N1, &SRC, &P));
            prop_assert!(res.is_err());
            // Corrupt an object Length, keeping both checksums valid so that
            // only the length is wrong: any object's Length below 4, or the
            // last object's Length beyond its padded size. (Other changes may
            // re-frame the chain into another valid one.)
            let mut offs = vec![];
            let mut at = ICMP_FIXED_LEN + EXT_HEADER_LEN;
            for o in &list { offs.push(at); at += o.buffer_len(); }
            let k = which.index(offs.len());
            let off = offs[k];
            let mut e = buf.clone();
            let old = u16::from_be_bytes([e[off], e[off + 1]]);
            let new = if delta % 2 == 0 {
                delta % 4
            } else {
                let off = offs[offs.len() - 1];
                let last = u16::from_be_bytes([e[off], e[off + 1]]);
                e[off..off + 2].copy_from_slice(&(((last + 3) & !3) + delta).to_be_bytes());
                old
            };
            if delta % 2 == 0 {
                e[off..off + 2].copy_from_slice(&new.to_be_bytes());
            }
            ExtStructure::new_unchecked(&mut e[ICMP_FIXED_LEN..]).fill_checksum();
            Icmpv6LhCnp::new_unchecked(&mut e[..]).fill_checksum(&N1, &SRC);
            let res = Icmpv6LhCnp::new_checked(&e[..]).and_then(|m| Icmpv6LhCnpRepr::parse(&m, &N1, &SRC, &P));
            prop_assert!(res.is_err(), "{:?}", res);
        }
    }
}
