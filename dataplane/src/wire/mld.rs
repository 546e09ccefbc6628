//! Multicast Listener Discovery: MLDv1 (RFC 2710) and MLDv2 (RFC 9777,
//! which obsoletes RFC 3810; section numbers below are RFC 9777's, which
//! keeps RFC 3810's).
//!
//! [`parse`] reads an ICMPv6 message (the bytes after the IPv6 header and
//! its extension headers, checksum already verified) into a [`Message`];
//! it never panics and refuses what is too short or inconsistent. The
//! builders emit the whole IPv6 packet a router or a host sends: Hop Limit
//! 1, a Hop-by-Hop header with the Router Alert option (RFC 2711, value 0 =
//! MLD), the ICMPv6 message and its checksum.

use std::net::Ipv6Addr;

use super::checksum;
use super::{Error, Result};

/// Multicast Listener Query (MLDv1 and MLDv2).
pub const QUERY: u8 = 130;
/// MLDv1 Multicast Listener Report.
pub const REPORT_V1: u8 = 131;
/// MLDv1 Multicast Listener Done.
pub const DONE_V1: u8 = 132;
/// Version 2 Multicast Listener Report.
pub const REPORT_V2: u8 = 143;

/// True for the four MLD message types.
pub const fn is_mld(ty: u8) -> bool {
    matches!(ty, QUERY | REPORT_V1 | DONE_V1 | REPORT_V2)
}

/// All-nodes (General Queries go here).
pub const ALL_NODES: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);
/// All-routers (MLDv1 Done goes here).
pub const ALL_ROUTERS: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 2);
/// All MLDv2-capable routers (MLDv2 Reports go here).
pub const ALL_MLDV2_ROUTERS: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 0x16);

/// The length of an MLDv1 message and the shortest query.
pub const V1_LEN: usize = 24;
/// The length of an MLDv2 query without sources.
pub const V2_QUERY_LEN: usize = 28;
/// Length of the Hop-by-Hop header the builders emit (Router Alert + PadN).
pub const HBH_LEN: usize = 8;

/// Record Type of a Multicast Address Record (s.5.2.12).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecordType {
    IsInclude = 1,
    IsExclude = 2,
    ToInclude = 3,
    ToExclude = 4,
    Allow = 5,
    Block = 6,
}

impl RecordType {
    pub fn from_u8(v: u8) -> Option<RecordType> {
        Some(match v {
            1 => RecordType::IsInclude,
            2 => RecordType::IsExclude,
            3 => RecordType::ToInclude,
            4 => RecordType::ToExclude,
            5 => RecordType::Allow,
            6 => RecordType::Block,
            _ => return None,
        })
    }
    pub const fn name(self) -> &'static str {
        match self {
            RecordType::IsInclude => "IS_IN",
            RecordType::IsExclude => "IS_EX",
            RecordType::ToInclude => "TO_IN",
            RecordType::ToExclude => "TO_EX",
            RecordType::Allow => "ALLOW",
            RecordType::Block => "BLOCK",
        }
    }
}

/// A list of IPv6 source addresses inside a message (16 octets each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sources<'a>(&'a [u8]);

impl<'a> Sources<'a> {
    pub fn len(&self) -> usize {
        self.0.len() / 16
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn iter(&self) -> impl Iterator<Item = Ipv6Addr> + 'a {
        self.0.chunks_exact(16).map(|c| Ipv6Addr::from(<[u8; 16]>::try_from(c).unwrap_or([0; 16])))
    }
}

/// One Multicast Address Record of an MLDv2 Report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    /// None: a Record Type this parser does not know (s.5.2.12: silently
    /// ignored by the receiver).
    pub kind: Option<RecordType>,
    pub group: Ipv6Addr,
    pub sources: Sources<'a>,
}

/// The MLDv2 part of a query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryV2<'a> {
    /// S flag: Suppress Router-Side Processing (s.5.1.7).
    pub suppress: bool,
    /// Querier's Robustness Variable (0: none given).
    pub qrv: u8,
    /// Querier's Query Interval in seconds, decoded from QQIC (s.5.1.9).
    pub qqi_s: u32,
    pub sources: Sources<'a>,
}

/// A parsed MLD message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Message<'a> {
    /// `group` is :: for a General Query; `v2` None for an MLDv1 query
    /// (exactly 24 octets).
    Query { max_resp_ms: u32, group: Ipv6Addr, v2: Option<QueryV2<'a>> },
    ReportV1 { group: Ipv6Addr },
    DoneV1 { group: Ipv6Addr },
    /// The records, in order.
    ReportV2 { records: Records<'a> },
}

/// The Multicast Address Records of a Version 2 Report, validated by
/// [`parse`] (every record fits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Records<'a> {
    buf: &'a [u8],
    n: usize,
}

impl<'a> Records<'a> {
    pub fn len(&self) -> usize {
        self.n
    }
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
    pub fn iter(&self) -> RecordIter<'a> {
        RecordIter { buf: self.buf, left: self.n }
    }
}

pub struct RecordIter<'a> {
    buf: &'a [u8],
    left: usize,
}

impl<'a> Iterator for RecordIter<'a> {
    type Item = Record<'a>;
    fn next(&mut self) -> Option<Record<'a>> {
        if self.left == 0 {
            return None;
        }
        let (r, len) = record_at(self.buf).ok()?;
        self.buf = &self.buf[len..];
        self.left -= 1;
        Some(r)
    }
}

/// The record at the start of `b` and its length.
fn record_at(b: &[u8]) -> Result<(Record<'_>, usize)> {
    if b.len() < 20 {
        return Err(Error::Truncated);
    }
    let aux = usize::from(b[1]) * 4;
    let ns = usize::from(u16::from_be_bytes([b[2], b[3]]));
    let len = 20 + ns * 16 + aux;
    if b.len() < len {
        return Err(Error::Truncated);
    }
    let group = Ipv6Addr::from(<[u8; 16]>::try_from(&b[4..20]).map_err(|_| Error::Truncated)?);
    Ok((Record { kind: RecordType::from_u8(b[0]), group, sources: Sources(&b[20..20 + ns * 16]) }, len))
}

/// Maximum Response Code -> Maximum Response Delay in ms (s.5.1.3).
pub fn decode_max_resp(code: u16) -> u32 {
    if code < 0x8000 {
        u32::from(code)
    } else {
        let exp = u32::from((code >> 12) & 7);
        let mant = u32::from(code & 0x0fff);
        (mant | 0x1000) << (exp + 3)
    }
}

/// The largest Maximum Response Delay a code can carry, in ms.
pub const MAX_RESP_MS: u32 = (0x0fff | 0x1000) << (7 + 3);

/// Maximum Response Delay in ms -> code (s.5.1.3), rounded down to what
/// the exponential form can say; at most [`MAX_RESP_MS`].
pub fn encode_max_resp(ms: u32) -> u16 {
    if ms < 0x8000 {
        return ms as u16;
    }
    let ms = ms.min(MAX_RESP_MS);
    for exp in 0..8u32 {
        let m = ms >> (exp + 3);
        if m < 0x2000 {
            return 0x8000 | ((exp as u16) << 12) | ((m & 0x0fff) as u16);
        }
    }
    0xffff
}

/// QQIC -> Querier's Query Interval in seconds (s.5.1.9).
pub fn decode_qqic(c: u8) -> u32 {
    if c < 0x80 {
        u32::from(c)
    } else {
        let exp = u32::from((c >> 4) & 7);
        let mant = u32::from(c & 0x0f);
        (mant | 0x10) << (exp + 3)
    }
}

/// The largest Query Interval QQIC can carry, in seconds.
pub const MAX_QQI_S: u32 = (0x0f | 0x10) << (7 + 3);

/// Query Interval in seconds -> QQIC (rounded down; at most [`MAX_QQI_S`]).
pub fn encode_qqic(s: u32) -> u8 {
    if s < 0x80 {
        return s as u8;
    }
    let s = s.min(MAX_QQI_S);
    for exp in 0..8u32 {
        let m = s >> (exp + 3);
        if m < 0x20 {
            return 0x80 | ((exp as u8) << 4) | ((m & 0x0f) as u8);
        }
    }
    0xff
}

/// Parse an MLD message (`m` = the ICMPv6 message, its checksum already
/// checked). Queries of 24 octets are MLDv1, of 28 or more MLDv2 (s.8.1);
/// other lengths, and MLDv1 messages shorter than 24 octets, are refused.
/// A Version 2 Report whose records do not fit its length is refused as a
/// whole.
pub fn parse(m: &[u8]) -> Result<Message<'_>> {
    if m.len() < 8 {
        return Err(Error::Truncated);
    }
    let addr = |at: usize| -> Result<Ipv6Addr> { Ok(Ipv6Addr::from(<[u8; 16]>::try_from(m.get(at..at + 16).ok_or(Error::Truncated)?).map_err(|_| Error::Truncated)?)) };
    match m[0] {
        QUERY => {
            let max_resp = u16::from_be_bytes([m[4], m[5]]);
            let group = addr(8)?;
            if m.len() == V1_LEN {
                return Ok(Message::Query { max_resp_ms: u32::from(max_resp), group, v2: None });
            }
            if m.len() < V2_QUERY_LEN {
                return Err(Error::BadLength);
            }
            let ns = usize::from(u16::from_be_bytes([m[26], m[27]]));
            let end = V2_QUERY_LEN + ns * 16;
            let src = m.get(V2_QUERY_LEN..end).ok_or(Error::Truncated)?;
            Ok(Message::Query {
                max_resp_ms: decode_max_resp(max_resp),
                group,
                v2: Some(QueryV2 { suppress: m[24] & 0x08 != 0, qrv: m[24] & 0x07, qqi_s: decode_qqic(m[25]), sources: Sources(src) }),
            })
        }
        REPORT_V1 => Ok(Message::ReportV1 { group: addr(8)? }),
        DONE_V1 => Ok(Message::DoneV1 { group: addr(8)? }),
        REPORT_V2 => {
            let n = usize::from(u16::from_be_bytes([m[6], m[7]]));
            let mut rest = &m[8..];
            for _ in 0..n {
                let (_, len) = record_at(rest)?;
                rest = &rest[len..];
            }
            Ok(Message::ReportV2 { records: Records { buf: &m[8..], n } })
        }
        _ => Err(Error::Unrecognized),
    }
}

/// An MLDv2 query to emit (s.5.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryRepr {
    /// :: for a General Query.
    pub group: Ipv6Addr,
    pub max_resp_ms: u32,
    pub suppress: bool,
    /// Robustness Variable (QRV; 0..=7, 0 when above 7, s.5.1.8).
    pub qrv: u8,
    pub qqi_s: u32,
    pub sources: Vec<Ipv6Addr>,
}

impl QueryRepr {
    /// Where the query goes: all-nodes for a General Query, else the group
    /// (s.5.1.15).
    pub fn destination(&self) -> Ipv6Addr {
        if self.group.is_unspecified() {
            ALL_NODES
        } else {
            self.group
        }
    }
    /// The ICMPv6 message (checksum 0).
    pub fn message(&self) -> Vec<u8> {
        let mut m = vec![0u8; V2_QUERY_LEN + 16 * self.sources.len()];
        m[0] = QUERY;
        m[4..6].copy_from_slice(&encode_max_resp(self.max_resp_ms).to_be_bytes());
        m[8..24].copy_from_slice(&self.group.octets());
        m[24] = (u8::from(self.suppress) << 3) | if self.qrv <= 7 { self.qrv } else { 0 };
        m[25] = encode_qqic(self.qqi_s);
        m[26..28].copy_from_slice(&(self.sources.len() as u16).to_be_bytes());
        for (i, s) in self.sources.iter().enumerate() {
            m[V2_QUERY_LEN + 16 * i..V2_QUERY_LEN + 16 * (i + 1)].copy_from_slice(&s.octets());
        }
        m
    }
}

/// An MLDv2 Multicast Address Record to emit (hosts; tests and the demo).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordRepr {
    pub kind: RecordType,
    pub group: Ipv6Addr,
    pub sources: Vec<Ipv6Addr>,
}

/// A Version 2 Report's ICMPv6 message (checksum 0).
pub fn report_v2_message(records: &[RecordRepr]) -> Vec<u8> {
    let mut m = vec![0u8; 8];
    m[0] = REPORT_V2;
    m[6..8].copy_from_slice(&(records.len() as u16).to_be_bytes());
    for r in records {
        m.push(r.kind as u8);
        m.push(0);
        m.extend_from_slice(&(r.sources.len() as u16).to_be_bytes());
        m.extend_from_slice(&r.group.octets());
        for s in &r.sources {
            m.extend_from_slice(&s.octets());
        }
    }
    m
}

/// An MLDv1 Query (RFC 2710 s.3, checksum 0): General (`group` ::) or
/// Multicast Address Specific, with the Maximum Response Delay in ms (a
/// 16-bit field: capped at 65535).
pub fn v1_query_message(group: Ipv6Addr, max_resp_ms: u32) -> Vec<u8> {
    let mut m = v1_message(QUERY, group);
    m[4..6].copy_from_slice(&(max_resp_ms.min(u32::from(u16::MAX)) as u16).to_be_bytes());
    m
}

/// An MLDv1 Report or Done message (checksum 0).
pub fn v1_message(ty: u8, group: Ipv6Addr) -> Vec<u8> {
    let mut m = vec![0u8; V1_LEN];
    m[0] = ty;
    m[8..24].copy_from_slice(&group.octets());
    m
}

/// The IPv6 packet carrying MLD message `msg` from `src` to `dst`: Hop
/// Limit 1, a Hop-by-Hop header with Router Alert (value 0, MLD) and PadN,
/// the message with its checksum filled in.
pub fn packet(src: Ipv6Addr, dst: Ipv6Addr, msg: &[u8]) -> Vec<u8> {
    let payload = HBH_LEN + msg.len();
    let mut p = vec![0u8; 40 + payload];
    p[0] = 0x60;
    p[4..6].copy_from_slice(&(payload as u16).to_be_bytes());
    p[6] = 0; // Hop-by-Hop
    p[7] = 1;
    p[8..24].copy_from_slice(&src.octets());
    p[24..40].copy_from_slice(&dst.octets());
    // Next Header ICMPv6, length 0 (8 octets), Router Alert = 0, PadN of 2.
    p[40..48].copy_from_slice(&[58, 0, 5, 2, 0, 0, 1, 0]);
    p[48..].copy_from_slice(msg);
    let sum = checksum::combine(checksum::pseudo_v6(&src.octets(), &dst.octets(), 58, msg.len() as u32), checksum::sum(msg));
    let c = !checksum::fold(sum);
    p[48 + 2..48 + 4].copy_from_slice(&c.to_be_bytes());
    p
}

/// True when the Hop-by-Hop header at the start of `hbh` carries a Router
/// Alert option with value 0 (MLD, RFC 2711).
pub fn has_router_alert(hbh: &[u8]) -> bool {
    let Some(&l) = hbh.get(1) else { return false };
    let end = (usize::from(l) + 1) * 8;
    let Some(opts) = hbh.get(2..end) else { return false };
    let mut i = 0;
    while i < opts.len() {
        match opts[i] {
            0 => i += 1,
            t => {
                let Some(&len) = opts.get(i + 1) else { return false };
                let len = usize::from(len);
                if t == 5 && len == 2 {
                    return opts.get(i + 2..i + 4) == Some(&[0, 0][..]);
                }
                i += 2 + len;
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    #[test]
    fn max_resp_and_qqic_codes_round_trip_and_follow_the_formulas() {
        // s.5.1.3: below 32768 the code is the delay; above, the floating
        // point form. 0x8000 = mant 0, exp 0 -> 0x1000 << 3 = 32768.
        assert_eq!(decode_max_resp(10_000), 10_000);
        assert_eq!(decode_max_resp(0x8000), 32_768);
        assert_eq!(decode_max_resp(0xffff), MAX_RESP_MS);
        assert_eq!(MAX_RESP_MS, 8_387_584);
        for ms in [0u32, 1, 999, 32_767, 32_768, 40_000, 100_000, 1_000_000, MAX_RESP_MS] {
            let c = encode_max_resp(ms);
            let back = decode_max_resp(c);
            assert!(back <= ms && ms - back < (ms >> 11).max(1), "{ms} -> {c:#x} -> {back}");
        }
        assert_eq!(decode_qqic(125), 125);
        assert_eq!(decode_qqic(0x80), 128);
        assert_eq!(decode_qqic(0xff), MAX_QQI_S);
        assert_eq!(MAX_QQI_S, 31_744);
        for s in [0u32, 1, 125, 127, 128, 200, 1000, MAX_QQI_S] {
            let back = decode_qqic(encode_qqic(s));
            assert!(back <= s && s - back < (s >> 4).max(1), "{s} -> {back}");
        }
    }

    #[test]
    fn query_emits_and_parses() {
        let q = QueryRepr { group: a("ff3e::10"), max_resp_ms: 1000, suppress: true, qrv: 2, qqi_s: 125, sources: vec![a("2001:db8::1"), a("2001:db8::2")] };
        let m = q.message();
        assert_eq!(m.len(), 28 + 32);
        match parse(&m).unwrap() {
            Message::Query { max_resp_ms, group, v2: Some(v2) } => {
                assert_eq!((max_resp_ms, group), (1000, a("ff3e::10")));
                assert!(v2.suppress);
                assert_eq!((v2.qrv, v2.qqi_s), (2, 125));
                assert_eq!(v2.sources.iter().collect::<Vec<_>>(), q.sources);
            }
            other => panic!("{other:?}"),
        }
        // A general query goes to all-nodes.
        let g = QueryRepr { group: Ipv6Addr::UNSPECIFIED, ..q };
        assert_eq!(g.destination(), ALL_NODES);
        // An MLDv1 query is exactly 24 octets; 25..27 is neither.
        let mut v1 = v1_message(QUERY, Ipv6Addr::UNSPECIFIED);
        v1[4..6].copy_from_slice(&10_000u16.to_be_bytes());
        assert_eq!(parse(&v1).unwrap(), Message::Query { max_resp_ms: 10_000, group: Ipv6Addr::UNSPECIFIED, v2: None });
        v1.push(0);
        assert_eq!(parse(&v1), Err(Error::BadLength));
        // Sources beyond the message.
        let mut m = QueryRepr { group: a("ff3e::10"), max_resp_ms: 1, suppress: false, qrv: 2, qqi_s: 1, sources: vec![a("::1")] }.message();
        m.truncate(40);
        assert_eq!(parse(&m), Err(Error::Truncated));
    }

    #[test]
    fn report_v2_records_parse_in_order_and_unknown_types_are_kept_as_none() {
        let recs = vec![
            RecordRepr { kind: RecordType::ToExclude, group: a("ff3e::1"), sources: vec![] },
            RecordRepr { kind: RecordType::Allow, group: a("ff3e::2"), sources: vec![a("2001:db8::9"), a("2001:db8::a")] },
        ];
        let mut m = report_v2_message(&recs);
        // A third record of type 9 with one word of auxiliary data.
        m[7] = 3;
        m.extend_from_slice(&[9, 1, 0, 0]);
        m.extend_from_slice(&a("ff3e::3").octets());
        m.extend_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
        let Message::ReportV2 { records } = parse(&m).unwrap() else { panic!() };
        let got: Vec<_> = records.iter().collect();
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].kind, Some(RecordType::ToExclude));
        assert_eq!(got[0].group, a("ff3e::1"));
        assert!(got[0].sources.is_empty());
        assert_eq!(got[1].sources.iter().collect::<Vec<_>>(), recs[1].sources);
        assert_eq!(got[2].kind, None);
        assert_eq!(got[2].group, a("ff3e::3"));
        // One octet short: the whole report is refused.
        m.pop();
        assert_eq!(parse(&m), Err(Error::Truncated));
        // A record count beyond the records.
        let mut m = report_v2_message(&recs);
        m[7] = 3;
        assert_eq!(parse(&m), Err(Error::Truncated));
    }

    #[test]
    fn packet_has_hop_limit_one_router_alert_and_a_valid_checksum() {
        let src = a("fe80::1");
        let p = packet(src, ALL_MLDV2_ROUTERS, &v1_message(REPORT_V1, a("ff3e::5")));
        assert_eq!(p[7], 1);
        assert_eq!(p[6], 0);
        assert!(has_router_alert(&p[40..]));
        let m = &p[48..];
        let sum = checksum::combine(checksum::pseudo_v6(&src.octets(), &ALL_MLDV2_ROUTERS.octets(), 58, m.len() as u32), checksum::sum(m));
        assert_eq!(checksum::fold(sum), 0xffff);
        assert_eq!(parse(m).unwrap(), Message::ReportV1 { group: a("ff3e::5") });
        // Router Alert with another value, or none at all.
        assert!(!has_router_alert(&[58, 0, 5, 2, 0, 1, 1, 0]));
        assert!(!has_router_alert(&[58, 0, 1, 4, 0, 0, 0, 0]));
        assert!(!has_router_alert(&[58, 0, 5]));
    }

    #[test]
    fn parse_never_panics_on_short_or_garbage_input() {
        for len in 0..64 {
            for ty in [QUERY, REPORT_V1, DONE_V1, REPORT_V2, 0] {
                let mut m = vec![0xffu8; len];
                if let Some(b) = m.first_mut() {
                    *b = ty;
                }
                let _ = parse(&m);
            }
        }
    }
}
