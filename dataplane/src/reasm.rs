//! Reassembly of fragmented datagrams addressed to the router itself
//! (RFC 791 s.3.2, RFC 8200 s.4.5; RFC 1812 s.4.2.2.7 asks a router to
//! reassemble what is sent to it like a host, RFC 1122 s.3.3.2). What an
//! operator sees: `ping -s 3000` to a router address behind a 1500-byte
//! link is answered, and the answer comes back fragmented (see
//! [`crate::frag`]).
//!
//! Transit fragments are never reassembled: only datagrams to one of the
//! router's own addresses, and SRv6 tunnel packets at the SID that ends
//! their tunnel (End.DT4 / End.DT6 / END.C / END.E at Segments Left 0: a
//! headend fragments the tunnel packet, RFC 2473 s.7.1, the exit
//! reassembles), the Fragment header after the IPv6 header or after the
//! extension headers of the unfragmentable part (an SRH). A datagram keeps
//! its fragments' congestion indication (RFC 3168 s.5.3): one of them CE
//! makes it CE, CE mixed with Not-ECT drops it (`reassembly-ecn-mixed`).
//!
//! Bounded, and with no allocation on the packet path: each worker has
//! [`REASM_SLOTS`] datagrams in progress at most, each in a buffer
//! allocated with the pipeline that holds the largest datagram (65535
//! octets of fragmentable part). A new datagram when all slots are busy
//! evicts the oldest (`reassembly-evicted`); a datagram not complete within
//! [`REASM_TIMEOUT_NS`] is discarded (`reassembly-timeout`). Overlapping
//! fragments discard the whole datagram (`reassembly-overlap`; RFC 5722 for
//! IPv6, and the same for IPv4 as RFC 8900 recommends); a non-last
//! fragment whose length is not a multiple of 8, one beyond 65535 octets or
//! beyond the end a last fragment set is dropped (`reassembly-malformed`;
//! for IPv6 the first two draw a Parameter Problem code 0 at the Payload
//! Length / the Fragment Offset, RFC 8200 s.4.5). An IPv6 first fragment
//! without the whole header chain through the upper-layer header is
//! discarded with Parameter Problem code 3 (RFC 7112 s.5,
//! `reassembly-first-fragment-incomplete`). A datagram that timed out is
//! left to the worker's timeout step, which owes its source the Time
//! Exceeded, even when a fragment arrives first.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::counters::{Drop, Local, WorkerCounters};
use crate::packet::{PacketBuffer, VecPacket};
use crate::pipeline::{Verdict, L2};
use crate::wire::ipv4::Ipv4Packet;
use crate::wire::ipv6::{FragmentInfo, Ipv6FragmentHeader, Ipv6Packet};

/// Datagrams in reassembly at once, per worker.
pub const REASM_SLOTS: usize = 4;
/// The largest fragmentable part reassembled (the IPv4 / IPv6 maximum).
pub const REASM_MAX_PAYLOAD: usize = 65535;
/// How long a datagram may take to complete (Linux's `ipfrag_time`).
pub const REASM_TIMEOUT_NS: u64 = 30_000_000_000;

/// The largest unfragmentable part kept: an IPv6 header followed by a
/// routing header of the largest size (2048 octets) and room for the
/// options headers before it (an IPv4 header with options is at most 60).
pub const REASM_MAX_UNFRAG: usize = 2560;
/// Room before the payload in a slot's buffer: headroom for the L2 header
/// (and a VLAN tag the reply may gain) and the largest unfragmentable part.
const PAY: usize = 128 + REASM_MAX_UNFRAG;
const BLOCKS: usize = REASM_MAX_PAYLOAD.div_ceil(8);
const WORDS: usize = BLOCKS.div_ceil(64);

/// What identifies a datagram's fragments (RFC 791: source, destination,
/// protocol, Identification; RFC 8200: source, destination,
/// Identification).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Key {
    pub(crate) v6: bool,
    pub(crate) src: [u8; 16],
    pub(crate) dst: [u8; 16],
    pub(crate) id: u32,
    /// The protocol (IPv4); 0 for IPv6, whose fragments' Next Headers may
    /// differ (RFC 8200 s.4.5: only the first fragment's counts).
    pub(crate) proto: u8,
}

struct Slot {
    key: Option<Key>,
    started: u64,
    /// The unfragmentable part (IPv4 header with options / IPv6 header and
    /// the extension headers before the Fragment header), copied from the
    /// first fragment; `hl` 0 until it arrived.
    hdr: Box<[u8; REASM_MAX_UNFRAG]>,
    hl: usize,
    /// IPv6: where in `hdr` the Next Header naming the Fragment header is.
    nh_at: usize,
    /// IPv6: the first fragment's Fragment header Next Header.
    next: u8,
    /// The ECN codepoints the fragments carried, one bit each (1 << ECN).
    ecn_seen: u8,
    /// Octets of data the first fragment carried.
    first: usize,
    /// Fragmentable part's length, once the last fragment arrived.
    end: Option<usize>,
    /// Highest octet received so far, and how many in all.
    max_seen: usize,
    got: usize,
    /// One bit per 8-octet block received.
    blocks: Box<[u64; WORDS]>,
    /// `PAY` octets of room, then the fragmentable part. Taken out while
    /// the complete datagram is processed.
    pkt: Option<VecPacket>,
}

impl Slot {
    fn new() -> Slot {
        Slot {
            key: None,
            started: 0,
            hdr: Box::new([0; REASM_MAX_UNFRAG]),
            hl: 0,
            nh_at: 6,
            next: 0,
            ecn_seen: 0,
            first: 0,
            end: None,
            max_seen: 0,
            got: 0,
            blocks: Box::new([0; WORDS]),
            pkt: Some(VecPacket::with_capacity(PAY + REASM_MAX_PAYLOAD)),
        }
    }

    fn start(&mut self, key: Key, now: u64) {
        self.key = Some(key);
        self.started = now;
        self.hl = 0;
        self.ecn_seen = 0;
        self.end = None;
        self.max_seen = 0;
        self.got = 0;
        self.blocks.fill(0);
    }

    /// Mark blocks `a..b` received; false (nothing marked) when one of
    /// them already was.
    fn claim(&mut self, a: usize, b: usize) -> bool {
        if (a..b).any(|k| self.blocks[k / 64] & (1 << (k % 64)) != 0) {
            return false;
        }
        for k in a..b {
            self.blocks[k / 64] |= 1 << (k % 64);
        }
        true
    }
}

/// One worker's datagrams in reassembly.
pub(crate) struct Reassembly {
    slots: Vec<Slot>,
}

impl Default for Reassembly {
    fn default() -> Self {
        Reassembly { slots: (0..REASM_SLOTS).map(|_| Slot::new()).collect() }
    }
}

/// A fragment: where its data goes and what it says about the datagram.
pub(crate) struct Fragment<'a> {
    pub(crate) key: Key,
    /// Offset of `data` in the fragmentable part, in octets.
    pub(crate) offset: usize,
    pub(crate) more: bool,
    /// The unfragmentable part, when this is the first fragment.
    pub(crate) header: Option<&'a [u8]>,
    /// IPv6: the offset in `header` of the Next Header octet that names the
    /// Fragment header (6 when it follows the IPv6 header; 0 for IPv4).
    pub(crate) nh_at: usize,
    /// IPv6: the Fragment header's Next Header (0 for IPv4).
    pub(crate) next: u8,
    /// The fragment's ECN field.
    pub(crate) ecn: u8,
    pub(crate) data: &'a [u8],
}

impl Reassembly {
    /// Add a fragment at time `now`. `Ok(Some(slot))` when it completed a
    /// datagram: [`take`](Self::take) it. Datagrams that time out or are
    /// evicted on the way are counted in `counters`.
    pub(crate) fn add(&mut self, f: &Fragment, now: u64, counters: &WorkerCounters) -> Result<Option<usize>, Drop> {
        // A datagram that ran out of time is left for `expire` (the worker
        // calls it after the burst), which owes its source a Time
        // Exceeded: a fragment of it now starts a new datagram.
        let due = |s: &Slot| now.saturating_sub(s.started) > REASM_TIMEOUT_NS;
        let len = f.data.len();
        let stop = f.offset + len;
        if (f.more && (len == 0 || !len.is_multiple_of(8))) || stop > REASM_MAX_PAYLOAD || !f.offset.is_multiple_of(8) || f.header.is_some_and(|h| h.len() > REASM_MAX_UNFRAG || (f.key.v6 && (h.len() < 40 || f.nh_at >= h.len()))) {
            return Err(Drop::ReasmMalformed);
        }
        let i = match self.slots.iter().position(|s| s.key == Some(f.key) && !due(s)) {
            Some(i) => i,
            None => {
                let i = match self.slots.iter().position(|s| s.key.is_none()) {
                    Some(i) => i,
                    None => {
                        // The oldest goes; if it ran out of time already, it
                        // goes as timed out, without its Time Exceeded.
                        let (i, _) = self.slots.iter().enumerate().min_by_key(|(_, s)| s.started).unwrap_or((0, &self.slots[0]));
                        counters.dropped(if due(&self.slots[i]) { Drop::ReasmTimeout } else { Drop::ReasmEvicted });
                        i
                    }
                };
                self.slots[i].start(f.key, now);
                i
            }
        };
        let s = &mut self.slots[i];
        let bad_end = match s.end {
            Some(e) => stop > e || (!f.more && stop != e),
            None => !f.more && stop < s.max_seen,
        };
        if bad_end {
            s.key = None;
            return Err(Drop::ReasmMalformed);
        }
        if !s.claim(f.offset / 8, stop.div_ceil(8)) {
            // RFC 5722: the whole datagram goes.
            s.key = None;
            return Err(Drop::ReasmOverlap);
        }
        if let Some(pkt) = s.pkt.as_mut() {
            pkt.raw_mut()[PAY + f.offset..PAY + stop].copy_from_slice(f.data);
        }
        if !f.more {
            s.end = Some(stop);
        }
        if let Some(h) = f.header {
            s.hdr[..h.len()].copy_from_slice(h);
            s.hl = h.len();
            s.nh_at = f.nh_at;
            s.next = f.next;
            s.first = len;
        }
        s.max_seen = s.max_seen.max(stop);
        s.got += len;
        s.ecn_seen |= 1 << (f.ecn & 3);
        Ok((s.hl > 0 && s.end == Some(s.got)).then_some(i))
    }

    /// Whether a datagram has run out of time at `now`.
    pub(crate) fn due(&self, now: u64) -> bool {
        self.slots.iter().any(|s| s.key.is_some() && now.saturating_sub(s.started) > REASM_TIMEOUT_NS)
    }

    /// Discard one datagram that ran out of time at `now` (counted as
    /// `reassembly-timeout`). When its first fragment had arrived, that
    /// fragment is rebuilt into `out` (the IP packet as received, without
    /// its data past `max` octets) for the Time Exceeded its source is
    /// owed, and its source address is returned. `None` when no datagram
    /// was due.
    pub(crate) fn expire(&mut self, now: u64, out: &mut [u8], counters: &WorkerCounters) -> Option<Option<(IpAddr, usize)>> {
        let s = self.slots.iter_mut().find(|s| s.key.is_some() && now.saturating_sub(s.started) > REASM_TIMEOUT_NS)?;
        let key = s.key.take()?;
        counters.dropped(Drop::ReasmTimeout);
        if s.hl == 0 {
            return Some(None);
        }
        let Some(pkt) = s.pkt.as_mut() else { return Some(None) };
        let data = pkt.raw_mut().get(PAY..PAY + s.first).unwrap_or(&[]);
        // The first fragment: its header as received (lengths, MF and all),
        // for IPv6 with its Fragment header, then its data.
        let mut fh = [0u8; 8];
        let fhl = if key.v6 {
            fh[0] = s.next;
            fh[3] = 1; // offset 0, M
            fh[4..8].copy_from_slice(&key.id.to_be_bytes());
            8
        } else {
            0
        };
        let mut n = 0;
        for part in [&s.hdr[..s.hl], &fh[..fhl], data] {
            let k = part.len().min(out.len() - n);
            out[n..n + k].copy_from_slice(&part[..k]);
            n += k;
        }
        let src = if key.v6 {
            IpAddr::V6(Ipv6Addr::from(key.src))
        } else {
            IpAddr::V4(Ipv4Addr::new(key.src[0], key.src[1], key.src[2], key.src[3]))
        };
        Some(Some((src, n)))
    }

    /// The completed datagram of `slot` as a frame: `l2` (the last
    /// fragment's L2 header), the unfragmentable part with its length,
    /// fragment fields and checksum fixed, then the data. The slot is free
    /// again; give the buffer back with [`put_back`](Self::put_back).
    ///
    /// RFC 3168 s.5.3: reassembly must not lose a congestion indication. A
    /// datagram of which some fragment was CE is CE (the first fragment's
    /// header carries it; the others' ECT is the same news); if another
    /// fragment was Not-ECT it cannot be, and the datagram is dropped
    /// (`reassembly-ecn-mixed`, as Linux's ip_frag_ecn_table).
    pub(crate) fn take(&mut self, slot: usize, l2: &[u8]) -> Result<VecPacket, Drop> {
        let s = self.slots.get_mut(slot).ok_or(Drop::ReasmMalformed)?;
        let key = s.key.take().ok_or(Drop::ReasmMalformed)?;
        let (hl, end) = (s.hl, s.end.ok_or(Drop::ReasmMalformed)?);
        // The length fields: IPv6 payload (the extension headers of the
        // unfragmentable part and the data) or IPv4 total length.
        if (key.v6 && hl - 40 + end > usize::from(u16::MAX)) || (!key.v6 && hl + end > usize::from(u16::MAX)) || l2.len() > PAY - hl {
            return Err(Drop::ReasmMalformed);
        }
        let (ce, not_ect) = (s.ecn_seen & (1 << 3) != 0, s.ecn_seen & 1 != 0);
        if ce && not_ect {
            return Err(Drop::ReasmEcnMixed);
        }
        let mut pkt = s.pkt.take().ok_or(Drop::ReasmMalformed)?;
        let at = PAY - hl - l2.len();
        {
            let b = pkt.raw_mut();
            b[at..at + l2.len()].copy_from_slice(l2);
            let h = &mut b[PAY - hl..PAY];
            h.copy_from_slice(&s.hdr[..hl]);
            if key.v6 {
                // The unfragmentable part + data: the Fragment header is
                // gone, the header before it names what it named.
                h[s.nh_at] = s.next;
                if ce {
                    // The Traffic Class's ECN bits (octet 1, bits 4-5).
                    h[1] |= 0x30;
                }
                Ipv6Packet::new_unchecked(h).set_payload_len((hl - 40 + end) as u16);
            } else {
                // No longer a fragment (DF as received), checksum again.
                if ce {
                    h[1] |= 3;
                }
                let mut ip = Ipv4Packet::new_unchecked(h);
                ip.set_total_len((hl + end) as u16);
                ip.set_more_frags(false);
                ip.set_frag_offset(0);
                ip.fill_checksum();
            }
        }
        pkt.set_window(at, PAY + end);
        Ok(pkt)
    }

    /// Return a slot's buffer after [`take`](Self::take).
    pub(crate) fn put_back(&mut self, slot: usize, pkt: VecPacket) {
        if let Some(s) = self.slots.get_mut(slot) {
            s.pkt = Some(pkt);
        }
    }

    /// A slot's buffer contents (the last datagram taken from it, as
    /// processed), for building its fragments.
    pub(crate) fn data(&self, slot: usize) -> &[u8] {
        self.slots.get(slot).and_then(|s| s.pkt.as_ref()).map_or(&[], |p| p.data())
    }
}

/// What a reassembled IPv6 datagram was sent to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReasmFor {
    /// One of the router's addresses.
    Local,
    /// A SID that decapsulates (End.DT4, End.DT6, END.C, END.E): a tunnel
    /// packet fragmented by its headend (RFC 2473 s.7.1), reassembled at
    /// the tunnel's exit.
    Sid,
}

/// The offset (from the IPv6 header) of the Next Header octet that names
/// the header at `at`: 6 when it follows the IPv6 header, else the first
/// octet of the extension header before it. None when no header of the
/// chain in `ip` ends at `at`.
fn next_header_before(ip: &[u8], at: usize) -> Option<usize> {
    let (mut nh_at, mut off) = (6, 40);
    while off < at {
        let len = match *ip.get(nh_at)? {
            // Authentication Header: (Payload Len + 2) 4-octet units.
            51 => (usize::from(*ip.get(off + 1)?) + 2) * 4,
            _ => (usize::from(*ip.get(off + 1)?) + 1) * 8,
        };
        nh_at = off;
        off += len;
    }
    (off == at).then_some(nh_at)
}

impl crate::pipeline::Pipeline {
    /// Whether a datagram in reassembly ran out of time at `now_ns` (for
    /// the worker to call [`Self::reassembly_timeout`]).
    pub fn reassembly_due(&self, now_ns: u64) -> bool {
        self.reasm.due(now_ns)
    }

    /// Discard a datagram that ran out of time without building the Time
    /// Exceeded its source may be owed (no buffer to build it in): counted
    /// as `reassembly-timeout`. False when no datagram was due.
    pub fn reassembly_discard(&mut self, now_ns: u64) -> bool {
        self.reasm.expire(now_ns, &mut [], &self.counters).is_some()
    }

    /// Discard a datagram that ran out of time. When its first fragment
    /// had arrived, build in `p` the ICMP Time Exceeded, code 1 (fragment
    /// reassembly time exceeded) to its source (RFC 792, RFC 1122 s.3.3.2;
    /// ICMPv6 RFC 4443 s.3.3, RFC 8200 s.4.5), quoting that fragment, and
    /// return its port. `None` when no datagram was due; an error when no
    /// ICMP message is sent (no first fragment, no route, rate limit).
    pub fn reassembly_timeout<P: PacketBuffer>(&mut self, p: &mut P, now_ns: u64) -> Option<Result<u16, Drop>> {
        // Room for the largest quote (IPv6: 1280 - 48) after a 14-octet
        // L2 placeholder.
        if !p.set_len(14 + 1232) {
            // Still take the datagram out of reassembly.
            return self.reasm.expire(now_ns, &mut [], &self.counters).map(|_| Err(Drop::NoHeadroom));
        }
        let (src, n) = match self.reasm.expire(now_ns, &mut p.data_mut()[14..], &self.counters)? {
            Some(x) => x,
            None => return Some(Err(Drop::ReasmTimeout)),
        };
        p.set_len(14 + n);
        // No Ethernet source to fall back to (the zero MAC is refused): the
        // error goes where the FIB and neighbour table say.
        let et: u16 = if src.is_ipv6() { 0x86dd } else { 0x0800 };
        let d = p.data_mut();
        d[..12].fill(0);
        d[12..14].copy_from_slice(&et.to_be_bytes());
        let Some(iface) = self.route_iface(src) else { return Some(Err(Drop::NoRoute)) };
        self.reply = false;
        let l2 = L2 { iface, l3: 14, pcp: 0, mcast: false };
        let v = match src {
            IpAddr::V4(a) => self.icmp_error4(p, l2, a, n, now_ns.max(1), crate::pipeline::Icmp4Error::ReasmTimeExceeded),
            IpAddr::V6(a) => self.icmp_error6(p, l2, a, n, now_ns.max(1), crate::pipeline::Icmp6Error::ReasmTimeExceeded),
        };
        Some(match v {
            Ok(Verdict::Tx(port)) => Ok(port),
            Ok(_) => Err(Drop::ReasmTimeout),
            Err(e) => Err(e),
        })
    }

    /// Add fragment `f` (received in `frame`); the completed datagram as a
    /// frame with the received L2 header, and its slot.
    fn reassembly_step(&mut self, frame: &[u8], l2: L2, f: &Fragment, now_ns: u64) -> Result<Option<(usize, VecPacket)>, Drop> {
        let done = self.reasm.add(f, now_ns, &self.counters)?;
        self.counters.local(Local::ReasmFragment);
        let Some(slot) = done else { return Ok(None) };
        let q = self.reasm.take(slot, &frame[..l2.l3])?;
        self.counters.local(Local::Reassembled);
        Ok(Some((slot, q)))
    }

    /// An IPv4 fragment to one of the router's addresses (`hl`, `total`
    /// from its checked header).
    pub(crate) fn reassemble4<P: PacketBuffer>(&mut self, p: &mut P, l2: L2, hl: usize, total: usize, now_ns: u64) -> Result<Verdict, Drop> {
        let done = {
            let d = p.data().get(l2.l3..l2.l3 + total).ok_or(Drop::MalformedIpv4)?;
            let ip = Ipv4Packet::new_unchecked(d);
            let mut key = Key { v6: false, src: [0; 16], dst: [0; 16], id: u32::from(ip.ident()), proto: ip.protocol().0 };
            key.src[..4].copy_from_slice(&d[12..16]);
            key.dst[..4].copy_from_slice(&d[16..20]);
            let offset = usize::from(ip.frag_offset());
            let f = Fragment { key, offset, more: ip.more_frags(), header: (offset == 0).then(|| &d[..hl]), nh_at: 0, next: 0, ecn: d[1] & 3, data: &d[hl..] };
            self.reassembly_step(p.data(), l2, &f, now_ns)?
        };
        let Some((slot, mut q)) = done else { return Ok(Verdict::Consumed) };
        let r = {
            let d = &q.data()[l2.l3..];
            let ip = Ipv4Packet::new_unchecked(d);
            let (src, dst, proto, hl, total) = (ip.src_addr(), ip.dst_addr(), ip.protocol(), ip.header_len(), d.len());
            self.local4(&mut q, l2, src, dst, proto, hl, total, now_ns)
        };
        self.send_reassembled(p, q, slot, r)
    }

    /// An IPv6 fragment to one of the router's addresses or to one of its
    /// decapsulating SIDs (`then`), its Fragment header at `frag.offset`
    /// (right after the IPv6 header, or after the extension headers of
    /// the unfragmentable part: a tunnel packet's SRH, RFC 2473 s.7.1).
    pub(crate) fn reassemble6<P: PacketBuffer>(&mut self, p: &mut P, l2: L2, total: usize, frag: FragmentInfo, then: ReasmFor, now_ns: u64) -> Result<Verdict, Drop> {
        let at = frag.offset;
        let offset = usize::from(frag.frag_offset);
        // RFC 8200 s.4.5: a fragment whose length is not a multiple of 8
        // with M set, or whose datagram's Payload Length would pass 65535
        // octets, is discarded with Parameter Problem code 0 pointing at
        // the Payload Length / the Fragment Offset.
        let len = total.saturating_sub(at + 8);
        let pointer = if frag.more_frags && !len.is_multiple_of(8) {
            Some(4)
        } else if at - 40 + offset + len > REASM_MAX_PAYLOAD {
            u32::try_from(at + 2).ok()
        } else {
            None
        };
        if let Some(pointer) = pointer {
            let src = p.data().get(l2.l3 + 8..l2.l3 + 24).and_then(|a| <[u8; 16]>::try_from(a).ok()).ok_or(Drop::MalformedIpv6)?;
            let e = crate::pipeline::Icmp6Error::ParamProblem { code: 0, pointer, why: Drop::ReasmMalformed };
            return self.icmp_error6(p, l2, Ipv6Addr::from(src), total, now_ns, e);
        }
        let (next, nh_at, done) = {
            let d = p.data().get(l2.l3..l2.l3 + total).ok_or(Drop::MalformedIpv6)?;
            let fh = Ipv6FragmentHeader::new_checked(d.get(at..).ok_or(Drop::MalformedIpv6)?).map_err(|_| Drop::MalformedIpv6)?;
            let next = fh.next_header().0;
            // A fragment of a fragment: the reassembled datagram would need
            // a second reassembly from inside this one, whose buffer is
            // taken out while it is processed. No host sends that.
            if next == 44 {
                return Err(Drop::ReasmMalformed);
            }
            let nh_at = next_header_before(d, at).ok_or(Drop::MalformedIpv6)?;
            if offset == 0 && !frag.more_frags {
                (next, nh_at, None)
            } else {
                // Keyed by source, destination and Identification; the
                // Next Header of the first fragment is the datagram's
                // (RFC 8200 s.4.5: those of the others may differ).
                let mut key = Key { v6: true, src: [0; 16], dst: [0; 16], id: frag.ident, proto: 0 };
                key.src.copy_from_slice(&d[8..24]);
                key.dst.copy_from_slice(&d[24..40]);
                let f = Fragment { key, offset, more: frag.more_frags, header: (offset == 0).then(|| &d[..at]), nh_at, next, ecn: (d[1] >> 4) & 3, data: &d[at + 8..] };
                (next, nh_at, Some(self.reassembly_step(p.data(), l2, &f, now_ns)?))
            }
        };
        match done {
            // An atomic fragment (offset 0, M clear) is a whole datagram,
            // processed on its own and never matched with other fragments
            // (RFC 8200 s.4.5, RFC 6946 s.4): its Fragment header removed
            // in place.
            None => {
                // Counted as a fragment that completed a datagram.
                self.counters.local(Local::ReasmFragment);
                self.counters.local(Local::Reassembled);
                p.data_mut().copy_within(0..l2.l3 + at, 8);
                if !p.adj(8) {
                    return Err(Drop::NoHeadroom);
                }
                {
                    let d = &mut p.data_mut()[l2.l3..];
                    d[nh_at] = next;
                    Ipv6Packet::new_unchecked(d).set_payload_len((total - 48) as u16);
                }
                let v = self.reassembled6(p, l2, then, now_ns)?;
                match then {
                    ReasmFor::Local => self.fit_reply(p.data(), v, None),
                    ReasmFor::Sid => Ok(v),
                }
            }
            Some(None) => Ok(Verdict::Consumed),
            Some(Some((slot, q))) if then == ReasmFor::Sid => {
                // The tunnel packet goes on whole in the received buffer
                // (decapsulated, its inner packet is forwarded like any
                // other): what a buffer cannot hold is dropped.
                let fits = p.set_len(q.len());
                if fits {
                    p.data_mut().copy_from_slice(q.data());
                }
                self.reasm.put_back(slot, q);
                if !fits {
                    return Err(Drop::ReasmTooLarge);
                }
                self.counters.local(Local::Srv6Reassembled);
                self.reassembled6(p, l2, then, now_ns)
            }
            Some(Some((slot, mut q))) => {
                let r = self.reassembled6(&mut q, l2, then, now_ns);
                self.send_reassembled(p, q, slot, r)
            }
        }
    }

    /// Process a reassembled IPv6 datagram (in `p`) as what it was sent
    /// to: the router (`local6`) or a SID.
    fn reassembled6<P: PacketBuffer>(&mut self, p: &mut P, l2: L2, then: ReasmFor, now_ns: u64) -> Result<Verdict, Drop> {
        let ip = Ipv6Packet::new_unchecked(&p.data()[l2.l3..]);
        let (src, dst, hop, total) = (ip.src_addr(), ip.dst_addr(), ip.hop_limit(), 40 + usize::from(ip.payload_len()));
        self.in_reassembly = true;
        let r = match then {
            ReasmFor::Local => self.local6(p, l2, src, dst, hop, total, now_ns),
            ReasmFor::Sid => self.srv6_local(p, l2, src, dst, hop, total, now_ns),
        };
        self.in_reassembly = false;
        r
    }

    /// What the router did with a reassembled datagram (`q`, from `slot`):
    /// a reply that fits goes out in the received buffer `p`, a larger one
    /// as fragments built from the slot's buffer.
    fn send_reassembled<P: PacketBuffer>(&mut self, p: &mut P, q: VecPacket, slot: usize, r: Result<Verdict, Drop>) -> Result<Verdict, Drop> {
        let v = match r {
            Ok(v) => self.fit_reply(q.data(), v, Some(slot)),
            Err(e) => Err(e),
        };
        let out = match v {
            Ok(Verdict::Tx(port)) => {
                if p.set_len(q.len()) {
                    p.data_mut().copy_from_slice(q.data());
                    Ok(Verdict::Tx(port))
                } else {
                    Err(Drop::NoHeadroom)
                }
            }
            other => other,
        };
        self.reasm.put_back(slot, q);
        out
    }

    /// A local reply (`v` for `frame`): when it is larger than the MTU of
    /// the interface it was routed to, send it as fragments
    /// ([`crate::frag`]). Anything else passes unchanged.
    pub(crate) fn fit_reply(&mut self, frame: &[u8], v: Verdict, src_slot: Option<usize>) -> Result<Verdict, Drop> {
        let Verdict::Tx(port) = v else { return Ok(v) };
        if !self.reply || frame.len() < 18 {
            return Ok(v);
        }
        let (l3, vlan) = if frame[12..14] == [0x81, 0x00] { (18, Some(u16::from_be_bytes([frame[14], frame[15]]) & 0x0fff)) } else { (14, None) };
        let Some(mtu) = self.topo.iface_of(port, vlan).and_then(|i| self.topo.iface(i)).map(|i| usize::from(i.mtu)) else { return Ok(v) };
        // The datagram's length, not the frame's (which may have padding).
        let datagram = match (frame[l3 - 2..l3] == [0x86, 0xdd], frame.get(l3 + 2..l3 + 6)) {
            (true, Some(h)) => 40 + usize::from(u16::from_be_bytes([h[2], h[3]])),
            (false, Some(h)) => usize::from(u16::from_be_bytes([h[0], h[1]])),
            (_, None) => frame.len() - l3,
        };
        if datagram.min(frame.len() - l3) <= mtu {
            return Ok(v);
        }
        self.fragment_local(frame, l3, port, mtu, src_slot)
    }
}
