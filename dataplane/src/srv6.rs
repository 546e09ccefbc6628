//! SRv6 data plane (RFC 8754, RFC 8986) with the End.MT behaviour of
//! draft-li-spring-rdma-multicast-over-srv6-00: the SID table, the SR
//! policies for H.Encaps / H.Encaps.Red, and the endpoint behaviours the
//! [`Pipeline`] runs when a packet's destination is a local SID.
//!
//! # Behaviours
//!
//! * **End** (RFC 8986 s.4.1): SRH validated (RFC 8754 s.4.3), hop limit
//!   checked (`<= 1`: ICMPv6 Time Exceeded like any expiring packet), SL
//!   decremented, DA := SRH[SL], and the packet is resubmitted to the IPv6
//!   path (FIB lookup; a further local SID runs its behaviour, at most
//!   [`MAX_SID_CHAIN`] in a row). SL = 0 or no SRH: the upper layer is
//!   processed if it is ICMPv6 (echo to the SID works), else dropped
//!   (`srh-sl-zero`, `srv6-no-srh`).
//! * **End.X** (s.4.2): as End, but forwarded to the configured neighbour on
//!   the configured interface whatever the FIB says.
//! * **End.DT6 / End.DT4** (s.4.6 / s.4.5): SL must be 0 (or no SRH); the
//!   outer IPv6 header and its extension headers are removed, the ECN field
//!   is propagated per RFC 6040 s.4.2 ([`rfc6040_decap`]: outer CE makes an
//!   ECT inner CE; CE over a Not-ECT inner is dropped, `decap-ce-not-ect`)
//!   and the inner packet goes through the ordinary IPv6 / IPv4 path of the
//!   default table (FIB lookup, TTL / hop limit decremented).
//! * **END.E** (draft-hu-acn-rocev2 s.4.2): decapsulate the notification
//!   (IPv4 or IPv6) and route it to the sender in the DC.
//! * **END.C** (s.4.1): decapsulate, validate the notification completely
//!   ([`notification_request`]: Long-haul CNP, RoCEv2 CNP, FANN over ICMPv6
//!   or UDP) and answer with PFC PAUSE / RESUME toward the DC gateway
//!   ([`crate::endc`]); anything else is `end-c-not-a-notification`.
//! * **H.Encaps / H.Encaps.Red** (RFC 8986 s.5.1 / s.5.2): a transit IPv4
//!   or IPv6 packet whose destination matches a policy prefix gets an outer
//!   IPv6 header (source from the policy, hop limit 64, traffic class and
//!   ECN copied from the inner packet per RFC 6040 normal mode, flow label
//!   from a hash of the inner flow) and an SRH; `.Red` leaves the first SID
//!   out of the SRH (Last Entry n-2, SL n-1) and omits the SRH entirely for
//!   a one-SID list. A policy holds one or more SID lists with weights; the
//!   flow hash picks one, so a flow stays on one list. The headend is a
//!   routed hop of the inner packet: its TTL / hop limit is decremented
//!   (Time Exceeded when it would reach 0, as on any route; the ICRC masks
//!   it), otherwise it is not modified (CE set by the PE's rate meter
//!   aside).
//!
//! # End.MT
//!
//! Pseudocode of draft s.6.2, S01-S15. A packet to a local End.MT SID `S`:
//!
//! 1. needs an SRH (`endmt-no-srh`) with SL > 0 (`endmt-sl-zero`), Ref4;
//! 2. if the SID is configured `hmac_required`, the HMAC TLV must be present
//!    (`srh-hmac-missing`) and verify (`srh-hmac-bad`, unknown key id:
//!    `srh-hmac-key-unknown`), RFC 8754 s.2.1.2.1 with destination address
//!    verification (sources that reach the SID through a replication tree,
//!    where the DA is not SRH[SL], set the D flag). Note that the RFC 8754
//!    HMAC covers source, Last Entry, flags, key id and the segment list, but
//!    *not* the TLVs: it does not by itself protect the End.MT TLV content
//!    the draft's s.9 wants protected;
//! 3. the End.MT TLV "associated with S" (S04) is the one whose Edge Node
//!    Address equals the SID `S` itself; when there is none and the table has
//!    a node address ([`SidTable::set_node_address`]), the one whose Edge Node
//!    Address equals that; else the first whose Edge Node Address is one of
//!    this node's interface addresses (s.6.1: "the IPv6 unicast address of
//!    the edge node"). Several End.MT TLVs may be present; the others are
//!    skipped (but a malformed one before the match drops the packet,
//!    `endmt-tlv-malformed`, so a corrupted SRH is never half-processed);
//! 4. the receivers are the TLV's, followed by the control-plane provisioned
//!    ones of the SID entry (draft s.8: "learned from the End.MT TLV or from
//!    control-plane provisioning"); no TLV and no provisioned receiver and no
//!    downstream replication: `endmt-no-tlv`.
//!
//! **Ref2, "the copy".** We read "the copy includes all payload beyond the
//! outer IPv6 and SRH headers that are relevant to the inner RDMA frame" with
//! s.5.2 step 4 ("each receiver Ri receives a standard RDMA RC unicast
//! packet"): a copy is the *inner* packet only, the inner IPv6 header, UDP,
//! BTH, extension headers, payload and ICRC, decapsulated from the outer IPv6
//! header and the SRH (which are not copied; therefore S02/S03 leave no trace
//! on the copies, and the received buffer is not modified at all). In each
//! copy the *inner* IPv6 DA (the Proxy Address) becomes the receiver's address
//! and the BTH DestQPN (the Designated QPN) the receiver's QPN; the ICRC and
//! the UDP checksum (when non-zero) are updated incrementally
//! ([`crate::wire::roce::rewrite_v6_dst_qpn`], constant cost whatever the
//! payload length); the ECN field follows RFC 6040 decapsulation like
//! End.DT6; the inner hop limit is decremented (a routed hop; masked out of
//! the ICRC); the copy is forwarded by a FIB lookup of the receiver address
//! (Ref3). The inner packet must be RoCEv2 over IPv6 (next header after the
//! SRH = IPv6, UDP destination port 4791, no inner extension header), else
//! `endmt-inner-not-rocev2`. The ICRC is not verified on input (it is
//! end-to-end: a corrupted packet yields copies with a bad ICRC, which the
//! receivers discard).
//!
//! **Tree-interior (transit) replication** (draft s.4.1 N4-N6, s.5.2 step 2).
//! The draft leaves the transit replication to "IP multicast procedures". We
//! give an End.MT SID entry a list of `downstream` SIDs (the End.MT SIDs of
//! the edge nodes, or of further interior nodes, below it): the node sends
//! one copy of the *whole outer packet* to each, with the outer DA rewritten
//! to the downstream SID, the outer hop limit decremented, and the SRH
//! unchanged (SL not decremented), in the manner of the SRv6 Replication
//! segment of RFC 9524 s.2.2. The edge node then runs End.MT on it (SL > 0
//! still). A node may be both interior and edge: downstream copies first,
//! then the receiver copies.
//!
//! # Replication API
//!
//! The pipeline never allocates: [`Pipeline::process`] answers
//! [`Verdict::Replicate(n)`](crate::pipeline::Verdict::Replicate) after
//! recording the job; the caller (worker, simulator, test) then, for `i` in
//! `0..n`, takes a fresh buffer and calls [`Pipeline::build_replica`] with the
//! unchanged original, which writes copy `i` with its Ethernet header and
//! returns its egress port (or the drop reason of that copy); then frees the
//! original. The job is valid until the next `process` call.

use crate::counters::{Drop, Local};
use crate::packet::PacketBuffer;
use crate::pipeline::{write_l2, Icmp4Error, Icmp6Error, Pipeline, Verdict, L2};
use crate::tables::{NextHop, MAX_MROUTE_OIFS};
use crate::wire::ethernet::EtherType;
use crate::wire::ipv4::{IpProtocol, Ipv4Packet};
use crate::wire::ipv6::{walk_ext_chain, ExtChain, Ipv6Packet};
use crate::wire::params::{Params, ROCEV2_UDP_PORT};
use crate::wire::roce::{self, IcrcLayout};
use crate::wire::srh::{self, HmacKeyTable, Srh, SrhRepr};
use crate::wire::Error as WireError;
use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use rustc_hash::FxHashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// At most this many local SIDs are processed for one packet (End to a
/// further local SID, decapsulation into a packet for a local SID).
pub const MAX_SID_CHAIN: u8 = 4;

/// Outer hop limit of H.Encaps.
pub const ENCAP_HOP_LIMIT: u8 = 64;

/// An endpoint behaviour bound to a local SID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Behaviour {
    End,
    /// Forward to `nexthop` on interface `iface` (an index into the topology).
    EndX { iface: u16, nexthop: IpAddr },
    /// Decapsulate and look the inner IPv4 packet up (default table).
    EndDT4,
    /// Decapsulate and look the inner IPv6 packet up (default table).
    EndDT6,
    EndMT {
        /// Control-plane provisioned receivers (address, 24-bit QPN), added
        /// after the End.MT TLV's.
        receivers_extra: Vec<(Ipv6Addr, u32)>,
        /// Drop packets whose SRH HMAC is missing or does not verify.
        hmac_required: bool,
        /// Tree-interior replication: one copy of the outer packet to each
        /// of these SIDs (DA rewritten, SRH unchanged).
        downstream: Vec<Ipv6Addr>,
    },
    EndC,
    EndE,
}

impl Behaviour {
    /// An End.MT entry for an edge node, without provisioned receivers.
    pub fn end_mt() -> Behaviour {
        Behaviour::EndMT { receivers_extra: Vec::new(), hmac_required: false, downstream: Vec::new() }
    }
}

/// What the packet path needs of a behaviour, copied out of the table so
/// the pipeline can borrow itself mutably.
#[derive(Debug, Clone, Copy)]
enum Kind {
    End,
    EndX(NextHop),
    DT4,
    DT6,
    MT { hmac_required: bool, extra: usize, down: usize },
    EndC,
    EndE,
}

/// H.Encaps or H.Encaps.Red.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncapMode {
    Encaps,
    EncapsRed,
}

/// One SID list of a policy, with its pre-built SRH (next header patched per
/// packet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SidList {
    /// First SID first (the outer DA).
    pub sids: Vec<Ipv6Addr>,
    pub weight: u32,
    srh: Vec<u8>,
}

impl SidList {
    /// The SRH pushed with this list (empty when none is pushed); its Next
    /// Header octet is 0 here and set per packet.
    pub fn srh_template(&self) -> &[u8] {
        &self.srh
    }
}

/// What a policy's SRH carries besides its segments: End.MT TLVs (the
/// headend of an RDMA multicast tree, draft-li s.5.2 step 1: "S1 MUST
/// encode ... End.MT TLVs", done here for unmodified RoCE sources), and an
/// HMAC TLV under `hmac` (RFC 8754 s.2.1.2; draft-li s.9: "SHOULD protect
/// SRH integrity"), computed once per SID list: it covers the policy's
/// source address, Last Entry, Flags, Key ID and segments, all fixed.
#[derive(Debug, Clone, Default)]
pub struct SrhExtras {
    pub end_mt: Vec<srh::EndMtRepr>,
    pub hmac: Option<srh::HmacKey>,
    /// With `hmac`: also set the SRH flag 0x08, the "H" flag of the drafts
    /// before RFC 8754, which defines no flags (unused flags are sent as
    /// 0). Linux still finds the HMAC TLV only when it is set
    /// (`sr_has_hmac`), and covers it in the HMAC like every flag.
    pub h_flag: bool,
}

impl PartialEq for SrhExtras {
    fn eq(&self, o: &Self) -> bool {
        // Keys compare by ID and length (the secret is not kept readable).
        self.end_mt == o.end_mt && self.h_flag == o.h_flag && self.hmac.as_ref().map(|k| (k.key_id(), k.len())) == o.hmac.as_ref().map(|k| (k.key_id(), k.len()))
    }
}
impl Eq for SrhExtras {}

impl SrhExtras {
    pub fn is_empty(&self) -> bool {
        self.end_mt.is_empty() && self.hmac.is_none()
    }
}

/// An SR policy: where H.Encaps sends the packets of a prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SrPolicy {
    pub source: Ipv6Addr,
    pub mode: EncapMode,
    lists: Vec<SidList>,
    extras: SrhExtras,
    total_weight: u64,
    /// Set by the ingress PE (FANN draft s.4.2, [`crate::fann::PolicyState`]):
    /// the share, per mille, of the rate the policy's traffic had when the
    /// limit began that it is held to ([`PolicyMeter`]); None: no limit.
    pub rate_permille: Option<u16>,
}

/// A worker's meter of one SR policy's traffic (FANN draft s.4.2, "Ingress
/// PE should reduce the transmission rate of corresponding traffic"): it
/// measures the rate the worker steers into the policy (an average over
/// windows of [`SidTable::pe_rate_window_ns`], 1 ms by default, weight
/// 1/8), and while the ingress PE holds the policy to
/// a share of its rate ([`SrPolicy::rate_permille`]) it compares the
/// traffic with that share of the rate it had when the limit began: what
/// is over the share is marked Congestion Experienced if ECN-capable (an
/// excess-traffic meter as in RFC 5670 s.2.3, marking instead of dropping,
/// so RoCEv2 traffic stays lossless and its senders slow down on the CE
/// marks, as DCQCN does), and counted but sent unmarked otherwise. A
/// policy's meter is per worker, for the traffic that worker sees.
#[derive(Debug, Clone, Copy, Default)]
pub struct PolicyMeter {
    win_start: u64,
    win_bytes: u64,
    /// Average rate, bits per second (0 until a window closed).
    rate_bps: u64,
    /// While limited: the rate when the limit began, the share, the token
    /// bucket (bits, scaled by 1e9: bit-nanoseconds) and its last refill.
    limit: Option<(u64, u16, u128, u64)>,
}

/// The meter's default window.
pub const METER_WINDOW_NS: u64 = 1_000_000;

impl PolicyMeter {
    /// Account `bytes` sent at `now` under `permille` (None: no limit);
    /// true when they are over the limit.
    pub fn over(&mut self, permille: Option<u16>, bytes: u32, now: u64, window_ns: u64) -> bool {
        let window_ns = window_ns.max(1);
        let el = now.saturating_sub(self.win_start);
        if el >= window_ns {
            if self.win_start != 0 {
                // The rate over the time since the window began; a window
                // that ran long (idle) weighs as the windows it spans, so
                // that an idle spell brings the average down as that many
                // empty windows would ((7/8)^n; after 256 the old average
                // is gone).
                let r = (u128::from(self.win_bytes) * 8 * 1_000_000_000 / u128::from(el)) as u64;
                if self.rate_bps == 0 {
                    self.rate_bps = r;
                } else {
                    for _ in 0..(el / window_ns).min(256) {
                        let next = self.rate_bps - self.rate_bps / 8 + r / 8;
                        if next == self.rate_bps {
                            break;
                        }
                        self.rate_bps = next;
                    }
                }
            }
            self.win_start = now;
            self.win_bytes = 0;
        }
        self.win_bytes += u64::from(bytes);
        let Some(pm) = permille else {
            self.limit = None;
            return false;
        };
        let (base, tokens, last) = match self.limit {
            // The rate it had: none measured yet, no limit yet.
            None if self.rate_bps == 0 => return false,
            None => (self.rate_bps, u128::MAX, now),
            Some((base, _, t, last)) => (base, t, last),
        };
        let rate = u128::from(base) * u128::from(pm) / 1000;
        // A burst of one window at the limited rate, at least two 9 KB
        // frames.
        let burst = (rate * u128::from(window_ns)).max(2 * 9216 * 8 * 1_000_000_000);
        let tokens = tokens.min(burst).saturating_add(rate * u128::from(now.saturating_sub(last))).min(burst);
        let need = u128::from(bytes) * 8 * 1_000_000_000;
        let (over, left) = if tokens >= need { (false, tokens - need) } else { (true, tokens) };
        self.limit = Some((base, pm, left, now));
        over
    }

    /// The average rate measured, bits per second.
    pub fn rate_bps(&self) -> u64 {
        self.rate_bps
    }
}

impl SrPolicy {
    /// A policy with one or more (SID list, weight) pairs. Errors: no list,
    /// an empty list, more than 255 SIDs... as a message naming the problem.
    pub fn new(source: Ipv6Addr, mode: EncapMode, lists: Vec<(Vec<Ipv6Addr>, u32)>) -> Result<SrPolicy, String> {
        if lists.is_empty() {
            return Err("an SR policy needs at least one SID list".into());
        }
        let mut out = Vec::with_capacity(lists.len());
        let mut total = 0u64;
        for (i, (sids, weight)) in lists.into_iter().enumerate() {
            if sids.is_empty() {
                return Err(format!("SID list {i} is empty"));
            }
            if sids.len() > 128 {
                return Err(format!("SID list {i} has {} SIDs (at most 128)", sids.len()));
            }
            if weight == 0 {
                return Err(format!("SID list {i} has weight 0"));
            }
            let srh = build_srh(&sids, mode, source, &SrhExtras::default()).map_err(|e| format!("SID list {i}: cannot build its SRH: {e}"))?;
            total += u64::from(weight);
            out.push(SidList { sids, weight, srh });
        }
        Ok(SrPolicy { source, mode, lists: out, total_weight: total, rate_permille: None, extras: SrhExtras::default() })
    }

    /// The same policy with `extras` in every SID list's SRH. H.Encaps.Red
    /// of a single SID pushes no SRH, so it cannot carry them.
    pub fn with_extras(mut self, extras: SrhExtras) -> Result<SrPolicy, String> {
        for (i, l) in self.lists.iter_mut().enumerate() {
            if !extras.is_empty() && self.mode == EncapMode::EncapsRed && l.sids.len() == 1 {
                return Err(format!("SID list {i}: H.Encaps.Red of one SID pushes no SRH, which End.MT TLVs and an HMAC need (mode = \"encaps\")"));
            }
            l.srh = build_srh(&l.sids, self.mode, self.source, &extras).map_err(|e| format!("SID list {i}: cannot build its SRH: {e}"))?;
        }
        self.extras = extras;
        Ok(self)
    }

    pub fn extras(&self) -> &SrhExtras {
        &self.extras
    }

    pub fn lists(&self) -> &[SidList] {
        &self.lists
    }

    /// The list a flow with hash `h` takes (weighted).
    pub fn select(&self, h: u64) -> &SidList {
        if self.lists.len() == 1 {
            return &self.lists[0];
        }
        let mut x = (h >> 20) % self.total_weight;
        for l in &self.lists {
            if x < u64::from(l.weight) {
                return l;
            }
            x -= u64::from(l.weight);
        }
        &self.lists[0]
    }
}

fn build_srh(sids: &[Ipv6Addr], mode: EncapMode, source: Ipv6Addr, extras: &SrhExtras) -> Result<Vec<u8>, WireError> {
    // End.MT TLVs, padding to 8 octets, then the HMAC TLV last (a multiple
    // of 8 itself: where RFC 8754 receivers such as Linux look for it).
    let path: &[Ipv6Addr] = match mode {
        EncapMode::Encaps => sids,
        EncapMode::EncapsRed if sids.len() == 1 => return Ok(Vec::new()),
        EncapMode::EncapsRed => &sids[1..],
    };
    // Header and segments: a multiple of 8 already.
    let mut repr = SrhRepr::for_path(0, path, Vec::new());
    repr.tlvs.extend(extras.end_mt.iter().cloned().map(srh::TlvRepr::EndMt));
    repr.tlvs.extend(srh::TlvRepr::padding_for(repr.buffer_len()));
    if let Some(k) = &extras.hmac {
        // RFC 8754 s.2.1.2: D set "due to use of a reduced segment list":
        // the first SID is in the DA only, so the Destination Address
        // verification of s.2.1.2.1 cannot pass at it.
        let d_flag = mode == EncapMode::EncapsRed;
        repr.tlvs.push(srh::TlvRepr::Hmac(srh::HmacTlvRepr { d_flag, key_id: k.key_id(), hmac: vec![0; k.len()] }));
        if extras.h_flag {
            repr.flags = 0x08;
        }
    }
    if mode == EncapMode::EncapsRed {
        // RFC 8986 s.5.2: Last Entry n-2, SL n-1 (points past the list,
        // at the SID carried only in the DA).
        repr.segments_left = (sids.len() - 1) as u8;
    }
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut Srh::new_unchecked(&mut buf[..]))?;
    if let Some(k) = &extras.hmac {
        let value = Srh::new_unchecked(&buf[..]).compute_hmac(&source, k);
        let mut h = Srh::new_unchecked(&mut buf[..]);
        let mut t = h.hmac_tlv_mut().ok_or(WireError::Malformed)?;
        t.hmac_mut().copy_from_slice(&value[..k.len()]);
    }
    Ok(buf)
}

/// The SIDs of this node and its SR policies: an immutable snapshot pushed by
/// the control thread ([`Pipeline::set_sids`]).
#[derive(Debug, Clone)]
pub struct SidTable {
    sids: FxHashMap<u128, Behaviour>,
    node_addr: Option<Ipv6Addr>,
    hmac_keys: HmacKeyTable,
    end_mt_tlv_type: u8,
    policies: Vec<SrPolicy>,
    /// Longest prefix first.
    match4: Vec<(Ipv4Net, u32)>,
    match6: Vec<(Ipv6Net, u32)>,
    max_replicas: usize,
    /// END.C: the interfaces toward the DC gateways (at most
    /// [`crate::endc::MAX_ENDC_IFACES`]), each with its PFC settings.
    pub endc: Vec<(u16, crate::endc::EndCConfig)>,
    /// IANA-pending values in force (notification types for END.C).
    pub params: Params,
    /// Ingress PE ([`crate::fann::PeControl`]): when set, FANN messages
    /// (ICMPv6 / UDP) and ICMPv6 Long-haul CNPs addressed to this node are
    /// handed to the control thread if their originating node is one of
    /// these; others are dropped as `fann-unknown-source`.
    pub pe_known: Option<Vec<Ipv6Addr>>,
    /// The interfaces (indices) the ingress PE takes notifications from;
    /// None: any.
    pub pe_ifaces: Option<Vec<u16>>,
    /// The window of the policies' rate meters ([`PolicyMeter`]).
    pub pe_rate_window_ns: u64,
    /// Outer source prefixes END.C and END.E take notifications from;
    /// None: any.
    pub notification_sources: Option<Vec<ipnet::Ipv6Net>>,
}

impl Default for SidTable {
    fn default() -> Self {
        SidTable::new(&Params::DEFAULT)
    }
}

impl SidTable {
    pub fn new(params: &Params) -> Self {
        SidTable {
            sids: FxHashMap::default(),
            node_addr: None,
            hmac_keys: HmacKeyTable::new(),
            end_mt_tlv_type: params.srh_tlv_end_mt,
            policies: Vec::new(),
            match4: Vec::new(),
            match6: Vec::new(),
            max_replicas: 0,
            endc: Vec::new(),
            params: *params,
            pe_known: None,
            pe_ifaces: None,
            pe_rate_window_ns: METER_WINDOW_NS,
            notification_sources: None,
        }
    }

    /// Bind `sid` to `b` (replacing any previous binding).
    pub fn insert(&mut self, sid: Ipv6Addr, b: Behaviour) -> Option<Behaviour> {
        let old = self.sids.insert(u128::from(sid), b);
        self.recompute_max();
        old
    }

    pub fn remove(&mut self, sid: &Ipv6Addr) -> Option<Behaviour> {
        let old = self.sids.remove(&u128::from(*sid));
        self.recompute_max();
        old
    }

    fn recompute_max(&mut self) {
        self.max_replicas = self
            .sids
            .values()
            .map(|b| match b {
                Behaviour::EndMT { receivers_extra, downstream, .. } => receivers_extra.len() + downstream.len(),
                _ => 0,
            })
            .max()
            .unwrap_or(0);
    }

    /// The local SIDs (as integers).
    pub fn sid_addrs(&self) -> impl Iterator<Item = u128> + '_ {
        self.sids.keys().copied()
    }

    #[inline]
    pub fn get(&self, sid: &Ipv6Addr) -> Option<&Behaviour> {
        if self.sids.is_empty() {
            return None;
        }
        self.sids.get(&u128::from(*sid))
    }

    pub fn len(&self) -> usize {
        self.sids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sids.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (Ipv6Addr, &Behaviour)> {
        self.sids.iter().map(|(k, v)| (Ipv6Addr::from(*k), v))
    }

    /// The configured neighbours of the End.X SIDs (interface, next hop),
    /// sorted, each once: kept by neighbour reachability detection while
    /// unused, as route gateways are.
    pub fn end_x_next_hops(&self) -> Vec<(u16, IpAddr)> {
        let mut v: Vec<(u16, IpAddr)> = self.sids.values().filter_map(|b| if let Behaviour::EndX { iface, nexthop } = b { Some((*iface, *nexthop)) } else { None }).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The address that names this node in End.MT TLVs when no TLV names
    /// the SID itself.
    pub fn set_node_address(&mut self, a: Option<Ipv6Addr>) {
        self.node_addr = a;
    }

    pub fn node_address(&self) -> Option<Ipv6Addr> {
        self.node_addr
    }

    /// The keys for SRH HMAC verification, and for the HMAC TLV of the
    /// policies that sign with one: a policy whose key ID is in `k` signs
    /// with `k`'s secret from now on (a re-keyed ID takes effect at the
    /// headend too); one whose key ID is not keeps its key (refuse removing
    /// a key a policy uses, [`SidTable::policies_signing_with`]). All or
    /// nothing: when a policy's SRH cannot be built with its new key (a
    /// longer HMAC past the SRH's 2048 octets), nothing changes and the
    /// error lists each such policy (by index) with the reason.
    pub fn set_hmac_keys(&mut self, k: HmacKeyTable) -> Result<(), Vec<(u32, String)>> {
        let mut rebuilt = Vec::new();
        let mut failed = Vec::new();
        for (i, p) in self.policies.iter().enumerate() {
            if let Some(new) = p.extras.hmac.as_ref().and_then(|old| k.lookup(old.key_id())) {
                // The SRHs carry the HMAC computed with the key: built anew.
                let extras = SrhExtras { hmac: Some(new.clone()), ..p.extras.clone() };
                match p.clone().with_extras(extras) {
                    Ok(q) => rebuilt.push((i, q)),
                    Err(e) => failed.push((i as u32, e)),
                }
            }
        }
        if !failed.is_empty() {
            return Err(failed);
        }
        for (i, q) in rebuilt {
            self.policies[i] = q;
        }
        self.hmac_keys = k;
        Ok(())
    }

    /// The SR policies (by index) whose SRH carries an HMAC under `key_id`.
    pub fn policies_signing_with(&self, key_id: u32) -> Vec<u32> {
        (0..self.policies.len() as u32).filter(|&i| self.policies[i as usize].extras.hmac.as_ref().is_some_and(|k| k.key_id() == key_id)).collect()
    }

    pub fn hmac_keys(&self) -> &HmacKeyTable {
        &self.hmac_keys
    }

    pub fn end_mt_tlv_type(&self) -> u8 {
        self.end_mt_tlv_type
    }

    /// Steer transit packets to `prefix` into `policy` (replacing a policy
    /// on the same prefix).
    /// Every steered prefix with its policy index, IPv4 then IPv6.
    pub fn policy_prefixes(&self) -> Vec<(IpNet, u32)> {
        self.match4.iter().map(|(p, i)| (IpNet::V4(*p), *i)).chain(self.match6.iter().map(|(p, i)| (IpNet::V6(*p), *i))).collect()
    }

    pub fn add_policy(&mut self, prefix: IpNet, policy: SrPolicy) {
        let idx = self.policies.len() as u32;
        self.policies.push(policy);
        match prefix.trunc() {
            IpNet::V4(p) => {
                self.match4.retain(|(q, _)| *q != p);
                self.match4.push((p, idx));
                self.match4.sort_by_key(|e| std::cmp::Reverse(e.0.prefix_len()));
            }
            IpNet::V6(p) => {
                self.match6.retain(|(q, _)| *q != p);
                self.match6.push((p, idx));
                self.match6.sort_by_key(|e| std::cmp::Reverse(e.0.prefix_len()));
            }
        }
    }

    /// Replace policy `i` (its prefixes stay); false if there is none.
    pub fn set_policy(&mut self, i: u32, policy: SrPolicy) -> bool {
        match self.policies.get_mut(i as usize) {
            Some(p) => {
                *p = policy;
                true
            }
            None => false,
        }
    }

    /// The number of policies (indices `0..n`, in `add_policy` order).
    pub fn policy_count(&self) -> usize {
        self.policies.len()
    }

    pub fn has_policies(&self) -> bool {
        !self.policies.is_empty()
    }

    /// The policy (index) for an IPv4 destination.
    #[inline]
    pub fn policy4(&self, a: Ipv4Addr) -> Option<u32> {
        self.match4.iter().find(|(p, _)| p.contains(&a)).map(|(_, i)| *i)
    }

    /// The policy (index) for an IPv6 destination.
    #[inline]
    pub fn policy6(&self, a: Ipv6Addr) -> Option<u32> {
        self.match6.iter().find(|(p, _)| p.contains(&a)).map(|(_, i)| *i)
    }

    pub fn policy(&self, i: u32) -> Option<&SrPolicy> {
        self.policies.get(i as usize)
    }

    /// The most downstream + provisioned copies any End.MT SID makes (the
    /// pipeline sizes nothing with it today; exported for the worker's burst
    /// budgeting).
    pub fn max_provisioned_replicas(&self) -> usize {
        self.max_replicas
    }

    fn kind(&self, sid: &Ipv6Addr) -> Option<Kind> {
        Some(match self.get(sid)? {
            Behaviour::End => Kind::End,
            Behaviour::EndX { iface, nexthop } => Kind::EndX(NextHop { iface: *iface, gateway: Some(*nexthop) }),
            Behaviour::EndDT4 => Kind::DT4,
            Behaviour::EndDT6 => Kind::DT6,
            Behaviour::EndMT { receivers_extra, hmac_required, downstream } => {
                Kind::MT { hmac_required: *hmac_required, extra: receivers_extra.len(), down: downstream.len() }
            }
            Behaviour::EndC => Kind::EndC,
            Behaviour::EndE => Kind::EndE,
        })
    }
}

/// RFC 6040 s.4.2 decapsulation: the inner ECN field to forward given the
/// outer and inner ECN fields, or `None` when the packet must be dropped
/// (outer CE over a Not-ECT inner).
///
/// | inner \ outer | Not-ECT | ECT(0) | ECT(1) | CE |
/// |---|---|---|---|---|
/// | Not-ECT | Not-ECT | Not-ECT | Not-ECT | drop |
/// | ECT(0) | ECT(0) | ECT(0) | ECT(1) | CE |
/// | ECT(1) | ECT(1) | ECT(1) | ECT(1) | CE |
/// | CE | CE | CE | CE | CE |
#[inline]
pub fn rfc6040_decap(outer: u8, inner: u8) -> Option<u8> {
    const NOT_ECT: u8 = 0;
    const ECT1: u8 = 1;
    const ECT0: u8 = 2;
    const CE: u8 = 3;
    let (outer, inner) = (outer & 3, inner & 3);
    match (inner, outer) {
        (NOT_ECT, CE) => None,
        (NOT_ECT, _) => Some(NOT_ECT),
        (CE, _) => Some(CE),
        (_, CE) => Some(CE),
        (ECT0, ECT1) => Some(ECT1),
        (i, _) => Some(i),
    }
}

/// Where the SRH is in an IPv6 packet (offsets from the IPv6 header).
#[derive(Debug, Clone, Copy)]
struct SrhAt {
    off: usize,
    len: usize,
    sl: u8,
}

/// Walk the extension headers of `pkt` (IPv6 header first) and validate the
/// SRH per RFC 8754 s.4.3.1. A routing header of another type with SL > 0
/// is refused (RFC 8200 s.4.4); with SL = 0 it is ignored (no SRH). An
/// error carries the offset of the field a Parameter Problem (code 0)
/// points at, where the RFCs ask for one: the Routing Type (RFC 8200
/// s.4.4) or the Segments Left (RFC 8754 s.4.3.1.1).
fn srh_of(pkt: &[u8]) -> Result<(ExtChain, Option<SrhAt>), (Drop, Option<u32>)> {
    let nh = Ipv6Packet::new_unchecked(pkt).next_header();
    let chain = walk_ext_chain(nh, pkt, 40).map_err(|_| (Drop::MalformedIpv6, None))?;
    let Some(rh) = chain.routing else { return Ok((chain, None)) };
    let at = |field: usize| u32::try_from(rh.offset + field).ok();
    if rh.routing_type != srh::ROUTING_TYPE {
        return if rh.segments_left > 0 { Err((Drop::SrhRoutingType, at(2))) } else { Ok((chain, None)) };
    }
    let bytes = pkt.get(rh.offset..rh.offset + rh.len).ok_or((Drop::SrhMalformed, None))?;
    // RFC 8754 s.4.3.1.1 S01-S02: with Segments Left 0 the SRH's other
    // fields are not processed; the next header is. An SRH that would not
    // pass the checks below is then no SRH to the SID (End.MT, the only
    // behaviour that reads one, wants Segments Left > 0 anyway).
    if rh.segments_left == 0 {
        let le_ok = bytes.len() >= srh::HEADER_LEN && usize::from(bytes[4]) < usize::from(bytes[1]) / 2; // max_LE = Hdr Ext Len / 2 - 1
        return Ok((chain, (le_ok && Srh::new_checked(bytes).is_ok()).then_some(SrhAt { off: rh.offset, len: rh.len, sl: 0 })));
    }
    if bytes.len() >= srh::HEADER_LEN && usize::from(bytes[3]) > usize::from(bytes[4]) + 1 {
        return Err((Drop::SrhSlExceeds, at(3)));
    }
    // RFC 8754 s.4.3.1.1 S06-S08 (RFC 8986 s.4.1): Last Entry beyond
    // max_LE = (Hdr Ext Len / 2) - 1 is a Parameter Problem at the Segments
    // Left too.
    if bytes.len() >= srh::HEADER_LEN && i32::from(bytes[4]) > i32::from(bytes[1]) / 2 - 1 {
        return Err((Drop::SrhMalformed, at(3)));
    }
    match Srh::new_checked(bytes) {
        Ok(_) => {}
        Err(WireError::Malformed) => return Err((Drop::SrhSlExceeds, at(3))),
        Err(_) => return Err((Drop::SrhMalformed, None)),
    }
    Ok((chain, Some(SrhAt { off: rh.offset, len: rh.len, sl: rh.segments_left })))
}

/// The End.MT work recorded by `process` for `build_replica`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ReplicaJob {
    /// Number of copies.
    n: usize,
    /// Multicast route copies (the first `mr`, before the End.MT ones):
    /// the whole packet, Hop Limit - 1, out of these interfaces.
    mr: usize,
    mr_oifs: [u16; MAX_MROUTE_OIFS],
    /// The interface the packet arrived on (a Packet Too Big for a route
    /// copy goes back from there).
    in_iface: u16,
    /// The End.MT SID (for the provisioned receivers and downstream SIDs).
    sid: u128,
    /// IPv6 header offset in the original frame, and its total length.
    l3: usize,
    total: usize,
    pcp: u8,
    /// Copies to downstream SIDs (the first `down`).
    down: usize,
    /// The End.MT TLV (offset in the frame) and its receiver count.
    tlv_off: usize,
    tlv_n: usize,
    /// The inner packet (offset in the frame, length).
    inner_off: usize,
    inner_len: usize,
    /// The inner ECN after RFC 6040 decapsulation.
    inner_ecn: u8,
    /// The group of the inner packet wants copies only for its branches
    /// (`TlvReceivers::Strict`).
    tlv_strict: bool,
    /// The Packet Too Big this packet got already, one per kind of copy
    /// ([`TOO_BIG_DOWNSTREAM`], [`TOO_BIG_RECEIVER`]).
    too_big_sent: u8,
}

/// A copy to a downstream SID (the whole outer packet) did not fit.
const TOO_BIG_DOWNSTREAM: u8 = 1;
/// A receiver copy (the inner RoCEv2 packet) did not fit.
const TOO_BIG_RECEIVER: u8 = 2;

/// Octets of the inner datagram in a zero-copy replica's private header
/// segment: IPv6 (40), UDP (8) and BTH (12), the fields End.MT rewrites.
pub const REPLICA_HEAD: usize = 40 + 8 + roce::BTH_LEN;

/// A zero-copy replica's header was built: send it to `port`, followed by
/// `payload_len` octets of the original frame from `payload_off` and then
/// `icrc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplicaHead {
    pub port: u16,
    pub payload_off: usize,
    pub payload_len: usize,
    pub icrc: [u8; 4],
}

/// Receivers in one End.MT TLV start here (Type, Length, Reserved, Edge
/// Node Address, Num Receivers, Reserved).
const END_MT_RECEIVERS_AT: usize = 24;

/// Receiver `r` (address, QPN) of the End.MT TLV at `tlv_off` in `d`.
#[inline]
fn tlv_receiver_at(d: &[u8], tlv_off: usize, r: usize) -> Option<(Ipv6Addr, u32)> {
    let at = tlv_off + END_MT_RECEIVERS_AT + r * srh::END_MT_RECEIVER_LEN;
    let e = d.get(at..at + srh::END_MT_RECEIVER_LEN)?;
    let a: [u8; 16] = e[..16].try_into().ok()?;
    Some((Ipv6Addr::from(a), u32::from_be_bytes([0, e[16], e[17], e[18]])))
}

impl Pipeline {
    /// Install a new SID table / policy snapshot.
    pub fn set_sids(&mut self, s: std::sync::Arc<SidTable>) -> std::sync::Arc<SidTable> {
        // END.C state follows the configuration, per interface: a change
        // of an interface's settings restarts its state (after resuming
        // whatever it had paused), the others keep theirs.
        // The same settings (every table the ingress PE pushes when it
        // reroutes): nothing to do.
        // Another link speed alone (the NIC reported the link to the DC
        // gateway at another rate) is no other setting: the state stays,
        // its pauses sent again in quanta of the new speed.
        let same_but_speed = |e: &crate::endc::EndC, c: &crate::endc::EndCConfig| crate::endc::EndCConfig { link_bps: c.link_bps, ..e.config().clone() } == *c;
        let same = self.endc.len() == s.endc.len() && self.endc.iter().zip(&s.endc).all(|((i, e), (j, c))| i == j && e.config() == c);
        if !same {
            let mut old: Vec<Option<(u16, crate::endc::EndC)>> = std::mem::take(&mut self.endc).into_iter().map(Some).collect();
            for (i, c) in &s.endc {
                let kept = old.iter_mut().find(|o| o.as_ref().is_some_and(|(j, e)| j == i && same_but_speed(e, c))).and_then(Option::take);
                let kept = kept.map(|(j, mut e)| {
                    e.set_link_bps(c.link_bps);
                    (j, e)
                });
                self.endc.push(kept.unwrap_or_else(|| (*i, crate::endc::EndC::new(c.clone()))));
            }
            for (iface, e) in old.into_iter().flatten() {
                for prio in 0..8u8 {
                    if e.is_paused(prio) {
                        self.pfc_pending.push((iface, crate::endc::PfcAction::resume(1 << prio)));
                    }
                }
            }
            // Room for a notification's frames to every interface and the
            // timers' (refresh and resume of each priority), so that the
            // packet path does not grow it.
            self.pfc_pending.reserve(self.endc.len() * 16);
        }
        if s.policy_count() != self.sids.policy_count() {
            // Other policies (added or removed at run time): measure anew.
            self.policy_meters.clear();
        }
        self.snap_gen += 1;
        std::mem::replace(&mut self.sids, s)
    }

    /// END.C timers (refresh, expiry, watchdog): PFC frames to send, queued
    /// in `pfc_pending` for the worker to build.
    pub fn poll_endc(&mut self, now_ns: u64) {
        for (iface, e) in &mut self.endc {
            if let Some((a, b)) = e.poll(now_ns) {
                self.pfc_pending.push((*iface, a));
                if let Some(b) = b {
                    self.pfc_pending.push((*iface, b));
                }
            }
        }
    }

    /// Build a queued PFC frame into the empty buffer `p`; returns its port.
    pub fn build_pfc<P: PacketBuffer>(&self, iface: u16, a: &crate::endc::PfcAction, p: &mut P) -> Option<u16> {
        let ifc = self.topo.iface(iface)?;
        if !p.set_len(60) {
            return None;
        }
        crate::endc::build_frame(a, ifc.mac, p.data_mut()).ok()?;
        self.counters.local(if a.is_resume() { Local::PfcResume } else { Local::PfcPause });
        Some(ifc.port)
    }

    /// A packet whose DA `dst` is a local SID (`ipv6` found it in the table).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn srv6_local<P: PacketBuffer>(&mut self, p: &mut P, l2: L2, src: Ipv6Addr, dst: Ipv6Addr, hop: u8, total: usize, now_ns: u64) -> Result<Verdict, Drop> {
        let Some(kind) = self.sids.kind(&dst) else { return Err(Drop::NoRoute) };
        if self.srv6_depth >= MAX_SID_CHAIN {
            return Err(Drop::Srv6ChainTooLong);
        }
        self.srv6_depth += 1;
        let checked = {
            let pkt = p.data().get(l2.l3..l2.l3 + total).ok_or(Drop::MalformedIpv6)?;
            srh_of(pkt)
        };
        let (chain, srh) = match checked {
            Ok(c) => c,
            // The source is told (rate-limited; counted as the drop when
            // the limit refuses).
            Err((why, Some(pointer))) => return self.icmp_error6(p, l2, src, total, now_ns, Icmp6Error::ParamProblem { code: 0, pointer, why }),
            Err((why, None)) => return Err(why),
        };
        // A tunnel packet its headend fragmented (RFC 2473 s.7.1, the
        // Fragment header after the SRH) is reassembled at the SID that
        // ends the tunnel, then decapsulated whole.
        if let Some(f) = chain.fragment {
            if matches!(kind, Kind::DT4 | Kind::DT6 | Kind::EndC | Kind::EndE) && srh.is_none_or(|s| s.sl == 0) {
                return self.reassemble6(p, l2, total, f, crate::reasm::ReasmFor::Sid, now_ns);
            }
        }
        match kind {
            Kind::End | Kind::EndX(_) => {
                let s = match srh {
                    Some(s) if s.sl > 0 => s,
                    other => {
                        // RFC 8986 s.4.1.1: upper-layer header processing.
                        if chain.upper_protocol == IpProtocol::ICMPV6 {
                            let v = self.local6(p, l2, src, dst, hop, total, now_ns)?;
                            return self.fit_reply(p.data(), v, None);
                        }
                        // Any other upper layer: Parameter Problem, code 4
                        // (SR Upper-layer Header Error), pointing at it.
                        let why = if other.is_some() { Drop::SrhSlZero } else { Drop::Srv6NoSrh };
                        let pointer = u32::try_from(chain.upper_offset).unwrap_or(u32::MAX);
                        return self.icmp_error6(p, l2, src, total, now_ns, Icmp6Error::ParamProblem { code: 4, pointer, why });
                    }
                };
                if hop <= 1 {
                    return self.time_exceeded6(p, l2, src, total, now_ns);
                }
                let next = {
                    let d = p.data_mut();
                    let a = l2.l3 + s.off;
                    let next = Srh::new_unchecked(&mut d[a..a + s.len]).decrement_segments_left().map_err(|_| Drop::SrhMalformed)?;
                    Ipv6Packet::new_unchecked(&mut d[l2.l3..]).set_dst_addr(next);
                    next
                };
                self.counters.local(Local::Srv6End);
                match kind {
                    Kind::EndX(nh) => {
                        let (ifc, mac) = self.resolve(&nh, IpAddr::V6(next), now_ns)?;
                        if total > usize::from(ifc.mtu) {
                            let mtu = u32::from(ifc.mtu);
                            return self.icmp_error6(p, l2, src, total, now_ns, Icmp6Error::TooBig(mtu));
                        }
                        let (port, out_mac, vlan) = (ifc.port, ifc.mac, ifc.vlan);
                        Ipv6Packet::new_unchecked(&mut p.data_mut()[l2.l3..]).decrement_hop_limit();
                        write_l2(p, l2, mac, out_mac, vlan, EtherType::IPV6)?;
                        Ok(Verdict::Tx(port))
                    }
                    // Resubmit to the IPv6 module (FIB lookup, hop limit).
                    _ => self.ipv6(p, l2, now_ns),
                }
            }
            Kind::DT4 | Kind::DT6 => {
                let want = if matches!(kind, Kind::DT6) { IpProtocol::IPV6 } else { IpProtocol::IPV4 };
                // RFC 8986 s.4.6 / s.4.8 (S01-S06 of End.DX6): an SRH not at
                // its last segment is a Parameter Problem, code 0, at its
                // Segments Left.
                if let Some(s) = srh.filter(|s| s.sl > 0) {
                    let pointer = u32::try_from(s.off + 3).unwrap_or(u32::MAX);
                    return self.icmp_error6(p, l2, src, total, now_ns, Icmp6Error::ParamProblem { code: 0, pointer, why: Drop::DecapSlNonZero });
                }
                // Another upper layer than the SID's family: s.4.1.1, an
                // ICMPv6 message is processed locally (ping the SID), the
                // rest is a Parameter Problem, code 4 (SR Upper-layer Header
                // Error), at the upper-layer header. A fragment is dropped.
                if chain.upper_protocol != want && chain.fragment.is_none() {
                    if chain.upper_protocol == IpProtocol::ICMPV6 {
                        let v = self.local6(p, l2, src, dst, hop, total, now_ns)?;
                        return self.fit_reply(p.data(), v, None);
                    }
                    let pointer = u32::try_from(chain.upper_offset).unwrap_or(u32::MAX);
                    return self.icmp_error6(p, l2, src, total, now_ns, Icmp6Error::ParamProblem { code: 4, pointer, why: Drop::DecapNextHeader });
                }
                if self.srv6_decap(p, l2, total, chain, srh, Some(want))? == IpProtocol::IPV6 {
                    self.ipv6(p, l2, now_ns)
                } else {
                    self.ipv4(p, l2, now_ns)
                }
            }
            Kind::EndE => {
                // draft-hu-acn-rocev2 s.4.2: decapsulate and route the inner
                // notification (IPv4 or IPv6) to the sender in the DC.
                self.notification_source_ok(&src)?;
                let inner = self.srv6_decap(p, l2, total, chain, srh, None)?;
                // Only a notification goes on to the DC: END.E is not a
                // way to tunnel other traffic into it.
                {
                    let ip = &p.data()[l2.l3..];
                    let Some(n) = notification(ip, inner, &self.sids.params) else {
                        return Err(Drop::EndENotNotification);
                    };
                    // A CNP is news for this node's ingress PE too (a FANN
                    // message to this node reaches it by being routed here).
                    self.sid_note_for_pe(ip, inner, n, l2.iface, false);
                }
                let v = if inner == IpProtocol::IPV6 { self.ipv6(p, l2, now_ns) } else { self.ipv4(p, l2, now_ns) };
                // Forwarded: what leaves toward the sender (not what the
                // inner packet's routing drops or answers itself).
                if matches!(v, Ok(Verdict::Tx(_))) && !self.reply {
                    self.counters.local(Local::EndEForwarded);
                }
                v
            }
            Kind::EndC => {
                // draft-hu-acn-rocev2 s.4.1: decapsulate, read the
                // notification, and answer with PFC toward the DC gateway.
                self.notification_source_ok(&src)?;
                if !self.state_owner {
                    // Reached through another local SID: the owner worker
                    // holds the pause state.
                    return Ok(Verdict::ToOwner);
                }
                let inner = self.srv6_decap(p, l2, total, chain, srh, None)?;
                // What the ingress PE of this node learns from it, before
                // the buffer becomes a PFC frame.
                let to_pe = self.sids.pe_known.is_some() && {
                    let ip = &p.data()[l2.l3..];
                    match notification(ip, inner, &self.sids.params) {
                        Some(n) => self.sid_note_for_pe(ip, inner, n, l2.iface, true),
                        None => false,
                    }
                };
                let Some((req, cause)) = notification_request(&p.data()[l2.l3..], inner, &self.sids.params) else {
                    // A FANN event with no PFC meaning (a link failure, ...)
                    // is still the PE's.
                    return if to_pe { Ok(Verdict::Consumed) } else { Err(Drop::EndCNotNotification) };
                };
                if self.endc.is_empty() {
                    return Err(Drop::EndCUnconfigured);
                }
                let class = notification_class(&p.data()[l2.l3..], inner, &self.sids.params);
                // The link toward the affected sender when END.C serves
                // several DC gateways: the interface of the sender's route.
                // Without a sender (a FANN message without Flow ID) or
                // with a route elsewhere, every END.C interface.
                let toward = if self.endc.len() == 1 {
                    Some(0)
                } else {
                    let to = notification_sender(&p.data()[l2.l3..], inner, &self.sids.params).and_then(|a| self.route_iface(a));
                    let k = to.and_then(|i| self.endc.iter().position(|(j, _)| *j == i));
                    if k.is_none() {
                        self.counters.local(Local::PfcEveryInterface);
                    }
                    k
                };
                let range = toward.map_or(0..self.endc.len(), |k| k..k + 1);
                let mut first = None;
                for (iface, e) in &mut self.endc[range] {
                    let prio = e.priority_for(&class);
                    // A Resume goes to the priorities its cause paused.
                    let coalesced = e.stats.resumes_coalesced;
                    let done = if req == crate::endc::Request::Resume {
                        let (a, held) = e.on_resume(u128::from(src), cause, prio, now_ns);
                        if held && a.is_some() {
                            self.counters.local(Local::PfcResumeHeld);
                        }
                        a
                    } else {
                        e.on_notification_about(u128::from(src), cause, prio, req, now_ns)
                    };
                    match done {
                        // A PAUSE in force already covers this request, a
                        // RESUME went for this priority a moment ago, or
                        // another node's pause goes on past this Resume.
                        None if req != crate::endc::Request::Resume => self.counters.local(Local::PfcCoalesced),
                        None if e.stats.resumes_coalesced != coalesced => self.counters.local(Local::PfcResumeCoalesced),
                        None => self.counters.local(Local::PfcResumeHeld),
                        Some(a) if first.is_none() => first = Some((*iface, a)),
                        // The other links' frames go out from the worker's
                        // next poll (room reserved in `set_sids`).
                        Some(a) => self.pfc_pending.push((*iface, a)),
                    }
                }
                let Some((iface, a)) = first else {
                    return Ok(Verdict::Consumed);
                };
                let ifc = self.topo.iface(iface).ok_or(Drop::EndCUnconfigured)?;
                let (port, mac) = (ifc.port, ifc.mac);
                // Reuse the buffer for the 60-byte MAC Control frame.
                if !p.adj(0) || !p.set_len(60) {
                    return Err(Drop::NoHeadroom);
                }
                crate::endc::build_frame(&a, mac, p.data_mut()).map_err(|_| Drop::NoHeadroom)?;
                self.counters.local(if a.is_resume() { Local::PfcResume } else { Local::PfcPause });
                self.reply = true;
                Ok(Verdict::Tx(port))
            }
            // Group state lives in the owner: reached through another SID
            // on another worker, End.MT is done there.
            Kind::MT { .. } if !self.state_owner && !self.mc.is_empty() => Ok(Verdict::ToOwner),
            Kind::MT { hmac_required, extra, down } => self.end_mt(p, l2, src, dst, hop, total, chain, srh, hmac_required, extra, down, now_ns),
        }
    }

    /// END.C / END.E (draft-hu s.4): the notification `n` just
    /// decapsulated (`ip`, its packet, from the IP header) is also news for this node's ingress PE (FANN
    /// draft s.4.1, s.4.2: the PE reroutes), when one is configured: a
    /// Long-haul CNP, whose source is the congested node, and at END.C a
    /// FANN message addressed to this node (END.E routes those here, where
    /// they are taken as received directly). Handed over as if received
    /// directly (`pe_note`: a known node, sent from its own address, on an
    /// allowed interface), without changing what END.C / END.E do with the
    /// packet; counted as `pe-notification-via-sid`, or
    /// `pe-notification-via-sid-refused` with the reason the PE would have
    /// dropped it for. True when handed over.
    fn sid_note_for_pe(&mut self, ip: &[u8], inner: IpProtocol, n: Notification<'_>, iface: u16, endc: bool) -> bool {
        use crate::fann::PeNote;
        use crate::wire::lhcnp::{Body, CnpInfo};
        if self.sids.pe_known.is_none() || inner != IpProtocol::IPV6 {
            return false;
        }
        let (Some(src), Some(dst)) = (ip.get(8..24), ip.get(24..40)) else { return false };
        let src = Ipv6Addr::from(<[u8; 16]>::try_from(src).unwrap_or([0; 16]));
        let dst = Ipv6Addr::from(<[u8; 16]>::try_from(dst).unwrap_or([0; 16]));
        // END.E routes a notification to one of this node's addresses
        // here, where it is handed over as received: not twice.
        if !endc && self.topo.accepts6(&dst) {
            return false;
        }
        let local = || endc && self.topo.accepts6(&dst);
        let note = match n {
            // Code 0, flow-level, is the only one defined.
            Notification::LhCnpIcmp(0, b) => Body::new_checked(b).ok().and_then(|b| CnpInfo::parse(&b).ok()).map(|info| PeNote::Cnp { from: src, info }),
            // The RoCEv2 format (E set) carries the same fields (s.6.2.4).
            Notification::RoceCnp(bth) if bth.get(4).is_some_and(|b| b & 0x20 != 0) => {
                bth.get(12..).and_then(|b| Body::new_checked(b).ok()).and_then(|b| CnpInfo::parse(&b).ok()).map(|info| PeNote::Cnp { from: src, info })
            }
            Notification::FannIcmp(s, _, m) if local() => PeNote::from_icmpv6(m, s, &self.sids.params),
            Notification::FannUdp(m) if local() => PeNote::from_udp_payload(m, src),
            _ => None,
        };
        let Some(note) = note else { return false };
        match self.pe_note(iface, src, note) {
            Ok(_) => {
                self.counters.local(Local::PeViaSid);
                true
            }
            Err(_) => {
                self.counters.local(Local::PeViaSidRefused);
                false
            }
        }
    }

    /// END.C / END.E: the outer source must be one of the configured
    /// notification sources (when configured).
    #[inline]
    fn notification_source_ok(&self, src: &Ipv6Addr) -> Result<(), Drop> {
        match &self.sids.notification_sources {
            Some(v) if !v.iter().any(|n| n.contains(src)) => Err(Drop::NotificationSourceRefused),
            _ => Ok(()),
        }
    }

    /// Strip the outer IPv6 header (and SRH, SL must be 0) of a packet whose
    /// inner packet is IPv4 or IPv6 (`only` that one when given: End.DT4,
    /// End.DT6), with RFC 6040 ECN propagation; the frame then starts with
    /// the L2 header followed by the inner packet. Returns its protocol.
    fn srv6_decap<P: PacketBuffer>(&mut self, p: &mut P, l2: L2, total: usize, chain: ExtChain, srh: Option<SrhAt>, only: Option<IpProtocol>) -> Result<IpProtocol, Drop> {
        if srh.is_some_and(|s| s.sl > 0) {
            return Err(Drop::DecapSlNonZero);
        }
        let proto = chain.upper_protocol;
        if (proto != IpProtocol::IPV6 && proto != IpProtocol::IPV4) || only.is_some_and(|o| o != proto) || chain.fragment.is_some() {
            return Err(Drop::DecapNextHeader);
        }
        let off = chain.upper_offset;
        {
            let d = p.data_mut();
            let outer_ecn = Ipv6Packet::new_unchecked(&d[l2.l3..]).ecn();
            let inner = &mut d[l2.l3 + off..l2.l3 + total];
            if proto == IpProtocol::IPV6 {
                let mut ip = Ipv6Packet::new_checked(inner).map_err(|_| Drop::MalformedIpv6)?;
                let e = rfc6040_decap(outer_ecn, ip.ecn()).ok_or(Drop::DecapCeNotEct)?;
                ip.set_ecn(e);
            } else {
                let mut ip = Ipv4Packet::new_checked(inner).map_err(|_| Drop::MalformedIpv4)?;
                let e = rfc6040_decap(outer_ecn, ip.ecn()).ok_or(Drop::DecapCeNotEct)?;
                if e != ip.ecn() {
                    ip.set_ecn_incremental(e);
                }
            }
            d.copy_within(0..l2.l3, off);
        }
        if !p.adj(off) {
            return Err(Drop::NoHeadroom);
        }
        // Drop trailing bytes beyond the inner packet (Ethernet padding).
        let inner_len = total - off;
        if p.len() > l2.l3 + inner_len && !p.set_len(l2.l3 + inner_len) {
            return Err(Drop::NoHeadroom);
        }
        self.counters.local(Local::Srv6Decap);
        Ok(proto)
    }

    #[allow(clippy::too_many_arguments)]
    fn end_mt<P: PacketBuffer>(
        &mut self,
        p: &mut P,
        l2: L2,
        src: Ipv6Addr,
        dst: Ipv6Addr,
        hop: u8,
        total: usize,
        chain: ExtChain,
        srh: Option<SrhAt>,
        hmac_required: bool,
        extra: usize,
        down: usize,
        now_ns: u64,
    ) -> Result<Verdict, Drop> {
        // S01 / Ref4.
        let s = srh.ok_or(Drop::EndMtNoSrh)?;
        if s.sl == 0 {
            return Err(Drop::EndMtSlZero);
        }
        // A fragment holds part of the inner packet at best (Ref2 wants
        // the whole RDMA packet; RFC 8754 nodes do not reassemble).
        if chain.fragment.is_some() {
            return Err(Drop::EndMtFragment);
        }
        if hop <= 1 {
            // Ref1: RFC 8754 s.4.3.1.1, as End (rate-limited).
            return self.time_exceeded6(p, l2, src, total, now_ns);
        }
        let d = p.data();
        let pkt = &d[l2.l3..l2.l3 + total];
        let view = Srh::new_unchecked(&pkt[s.off..s.off + s.len]);
        if hmac_required {
            if view.hmac_tlv().is_none() {
                return Err(Drop::SrhHmacMissing);
            }
            match view.verify_hmac(&src, Some(&dst), &self.sids.hmac_keys) {
                Ok(()) => {}
                Err(WireError::Unrecognized) => return Err(Drop::SrhHmacKeyUnknown),
                Err(_) => return Err(Drop::SrhHmacBad),
            }
        }
        // S04: the End.MT TLV associated with S (see the module doc).
        let ty = self.sids.end_mt_tlv_type;
        let mut tlv = view.end_mt_tlv_for(ty, &dst).map_err(|_| Drop::EndMtTlvMalformed)?;
        if tlv.is_none() {
            if let Some(node) = self.sids.node_addr {
                tlv = view.end_mt_tlv_for(ty, &node).map_err(|_| Drop::EndMtTlvMalformed)?;
            }
        }
        if tlv.is_none() {
            // The Edge Node Address is "the IPv6 unicast address of the
            // edge node" (s.6.1): any of this node's interface addresses.
            let topo = &self.topo;
            tlv = view.end_mt_tlv_where(ty, |a| topo.is_local6(a)).map_err(|_| Drop::EndMtTlvMalformed)?;
        }
        let (tlv_off, tlv_n) = match &tlv {
            Some(t) => {
                let b = t.clone().into_inner();
                (b.as_ptr() as usize - d.as_ptr() as usize, usize::from(t.num_receivers()))
            }
            None => (0, 0),
        };
        let n_recv = tlv_n + extra;
        let n = down + n_recv;
        if n == 0 {
            return Err(Drop::EndMtNoTlv);
        }
        let mut job = ReplicaJob {
            n,
            sid: u128::from(dst),
            l3: l2.l3,
            total,
            pcp: l2.pcp,
            down,
            tlv_off,
            tlv_n,
            ..Default::default()
        };
        if n_recv > 0 {
            // The inner packet: RoCEv2 over IPv6 right after the SRH chain.
            if chain.upper_protocol != IpProtocol::IPV6 {
                return Err(Drop::EndMtNotRoce);
            }
            let inner = &pkt[chain.upper_offset..];
            let lay = IcrcLayout::of(inner).map_err(|_| Drop::EndMtNotRoce)?;
            if lay.ip_version != 6 || lay.datagram_len > inner.len() || lay.datagram_len < lay.bth_offset() + roce::BTH_LEN + roce::ICRC_LEN {
                return Err(Drop::EndMtNotRoce);
            }
            let u = lay.udp_offset();
            if u16::from_be_bytes([inner[u + 2], inner[u + 3]]) != ROCEV2_UDP_PORT {
                return Err(Drop::EndMtNotRoce);
            }
            let outer_ecn = Ipv6Packet::new_unchecked(pkt).ecn();
            job.inner_ecn = rfc6040_decap(outer_ecn, Ipv6Packet::new_unchecked(inner).ecn()).ok_or(Drop::DecapCeNotEct)?;
            job.inner_off = l2.l3 + chain.upper_offset;
            job.inner_len = lay.datagram_len;
        }
        if chain.upper_protocol == IpProtocol::IPV6 {
            // The group's data on its way down: "beyond sent" protection of
            // the reverse path (multicast::Group::on_data), and a check
            // that the group here knows every receiver the TLV names.
            let inner = pkt.get(chain.upper_offset..).unwrap_or(&[]);
            self.mc_observe_inner(inner, now_ns);
            if tlv_n > 0 {
                job.tlv_strict = self.mc_tlv_receivers(inner, tlv_n, |r| tlv_receiver_at(d, tlv_off, r));
            }
        }
        self.rep = job;
        Ok(Verdict::Replicate(n as u16))
    }

    /// A packet to an IPv6 multicast group of wider than link-local scope
    /// (the End.MT underlay, draft-li s.3 / s.5.1): replicated by its
    /// multicast route ([`crate::tables::Mroute`]; RPF: it must arrive on
    /// the route's `iif`) out of every outgoing interface but the one it
    /// came in on, and handed to the local End.MT SID when the group is one
    /// ("Each edge node MUST be configured to receive IP multicast traffic
    /// addressed to the Proxy Address", s.5.1). No ICMPv6 error answers a
    /// packet to a multicast address (RFC 4443 s.2.4 (e)).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn multicast6<P: PacketBuffer>(&mut self, p: &mut P, l2: L2, src: Ipv6Addr, dst: Ipv6Addr, hop: u8, total: usize, now_ns: u64) -> Result<Verdict, Drop> {
        let local = matches!(self.sids.get(&dst), Some(Behaviour::EndMT { .. }));
        let mut oifs = [0u16; MAX_MROUTE_OIFS];
        let mut mr = 0;
        // RFC 4291 s.2.5.2 / s.2.5.6: a packet from :: or a link-local
        // source never leaves its link (local End.MT delivery aside).
        let martian = src.is_unspecified() || crate::tables::is_link_local(&src);
        match self.topo.mroute(&src, &dst).filter(|_| !martian) {
            _ if martian && !local => return Err(Drop::Ipv6Martian),
            Some(m) => {
                use std::sync::atomic::Ordering::Relaxed;
                if m.iif.is_some_and(|i| i != l2.iface) {
                    m.stats.rpf_failed.fetch_add(1, Relaxed);
                    return Err(Drop::MrouteRpfFailed);
                }
                for &o in m.oifs.iter().filter(|&&o| o != l2.iface).take(MAX_MROUTE_OIFS) {
                    oifs[mr] = o;
                    mr += 1;
                }
                if hop > 1 && mr > 0 {
                    m.stats.packets.fetch_add(1, Relaxed);
                    m.stats.bytes.fetch_add(total as u64, Relaxed);
                }
            }
            None if !local => return Err(Drop::MulticastNotRouted),
            None => {}
        }
        if hop <= 1 {
            return Err(Drop::TtlExpired);
        }
        let mut k = 0;
        if !local && !self.mc.is_empty() {
            // A tree-interior node that replicates the group's data by IP
            // multicast (draft-li s.4.2: "IP multicast procedures") sees it
            // here, SRv6-encapsulated to the edge nodes' End.MT SID: the
            // highest PSN sent (s.9) and the round trip of an adaptive
            // window need it as much as on the End.MT path.
            if let Some(pkt) = p.data().get(l2.l3..l2.l3 + total) {
                if let Ok(chain) = Ipv6Packet::new_unchecked(pkt).ext_chain() {
                    if chain.upper_protocol == IpProtocol::IPV6 {
                        let inner = pkt.get(chain.upper_offset..).unwrap_or(&[]);
                        self.mc_observe_inner(inner, now_ns);
                    }
                }
            }
        }
        if local {
            match self.srv6_local(p, l2, src, dst, hop, total, now_ns) {
                Ok(Verdict::Replicate(n)) => k = usize::from(n),
                // The End.MT part failed: the copies for the tree below
                // still go (the reason counted here), or the packet is
                // dropped for it.
                Err(why) if mr > 0 => self.counters.dropped(why),
                other => return other,
            }
        } else {
            self.rep = ReplicaJob::default();
        }
        if mr == 0 {
            return if k > 0 { Ok(Verdict::Replicate(k as u16)) } else { Err(Drop::MulticastNotRouted) };
        }
        let job = &mut self.rep;
        if k == 0 {
            *job = ReplicaJob { l3: l2.l3, total, pcp: l2.pcp, ..ReplicaJob::default() };
        }
        job.n = k + mr;
        job.mr = mr;
        job.mr_oifs = oifs;
        job.in_iface = l2.iface;
        Ok(Verdict::Replicate(job.n as u16))
    }

    /// Multicast route copy `i` of `job`: the whole packet of `src` (the
    /// received frame), Hop Limit - 1, to the group's Ethernet address
    /// 33:33 + its low 32 bits (RFC 2464 s.7) out of `job.mr_oifs[i]`.
    fn build_mroute_copy<Q: PacketBuffer>(&mut self, job: &ReplicaJob, i: usize, src: &[u8], copy: &mut Q, now_ns: u64) -> Result<u16, Drop> {
        // Data, not a reply (a Packet Too Big built for an earlier copy
        // of this packet is one).
        self.reply = false;
        let iface = job.mr_oifs[i];
        let ifc = self.topo.iface(iface).ok_or(Drop::ReplicaInvalid)?;
        if job.total > usize::from(ifc.mtu) {
            return self.mroute_too_big(job, i, src, copy, now_ns);
        }
        let (port, out_mac, vlan) = (ifc.port, ifc.mac, ifc.vlan);
        let body = src.get(job.l3..job.l3 + job.total).ok_or(Drop::ReplicaInvalid)?;
        if !copy.set_len(14 + job.total) {
            return Err(Drop::NoHeadroom);
        }
        let d = copy.data_mut();
        d[14..].copy_from_slice(body);
        Ipv6Packet::new_unchecked(&mut d[14..]).decrement_hop_limit();
        // The group is the packet's destination (bytes 24..40).
        let mac = [0x33, 0x33, body[36], body[37], body[38], body[39]];
        write_l2(copy, L2 { iface, l3: 14, pcp: job.pcp, mcast: false }, mac, out_mac, vlan, EtherType::IPV6)?;
        self.counters.local(Local::MrouteReplica);
        Ok(port)
    }

    /// Copy `i` of a multicast route does not fit its interface's MTU: the
    /// first such copy of the packet becomes an ICMPv6 Packet Too Big to
    /// the source with the smallest MTU among the interfaces the packet
    /// does not fit (RFC 4443 s.2.4 (e) lets a Packet Too Big answer a
    /// packet to a multicast address, so that its source finds the path
    /// MTU of the tree; under the ICMP error rate limit), the others are
    /// dropped as `mtu-exceeded`.
    fn mroute_too_big<Q: PacketBuffer>(&mut self, job: &ReplicaJob, i: usize, src: &[u8], copy: &mut Q, now_ns: u64) -> Result<u16, Drop> {
        let mtu_of = |o: &u16| self.topo.iface(*o).map(|x| usize::from(x.mtu));
        let over = |o: &u16| mtu_of(o).is_some_and(|m| job.total > m);
        if job.mr_oifs[..i].iter().any(over) {
            return Err(Drop::MtuExceeded);
        }
        let mtu = job.mr_oifs[..job.mr].iter().filter(|o| over(o)).filter_map(mtu_of).min().ok_or(Drop::MtuExceeded)?;
        let body = src.get(job.l3..job.l3 + job.total).ok_or(Drop::ReplicaInvalid)?;
        if !copy.set_len(14 + job.total) {
            return Err(Drop::NoHeadroom);
        }
        copy.data_mut()[14..].copy_from_slice(body);
        // The received frame's addresses: an on-link source not in the
        // neighbour table is answered at its Ethernet source, as a unicast
        // error is (the copy's own header is not written yet).
        let macs = src.get(..12).ok_or(Drop::ReplicaInvalid)?;
        copy.data_mut()[..12].copy_from_slice(macs);
        let source = Ipv6Packet::new_unchecked(body).src_addr();
        let l2 = L2 { iface: job.in_iface, l3: 14, pcp: 0, mcast: true };
        match self.icmp_error6(copy, l2, source, job.total, now_ns, Icmp6Error::TooBig(mtu as u32))? {
            Verdict::Tx(port) => Ok(port),
            _ => Err(Drop::MtuExceeded),
        }
    }

    /// Write copy `i` of the last [`Verdict::Replicate`] into `copy` (a
    /// fresh, empty buffer with headroom), from `original` (the unchanged
    /// received frame): Ethernet header, rewritten packet, routed. Returns
    /// the egress port, or why this copy is dropped (the caller counts it).
    /// After an IPv4 fragmentation the copies are the fragments
    /// ([`crate::frag`]).
    pub fn build_replica<P: PacketBuffer, Q: PacketBuffer>(&mut self, i: usize, original: &P, copy: &mut Q, now_ns: u64) -> Result<u16, Drop> {
        self.held = None;
        // (The fragments of the router's own reply keep its reply flag:
        // they leave ahead of queued data, as the reply would.)
        if self.frag.n > 0 {
            return self.build_fragment(i, original.data(), copy, now_ns);
        }
        // A copy is data unless this call makes it an error message (a
        // previous copy's Packet Too Big must not make the next one a
        // priority reply).
        self.reply = false;
        let job = self.rep;
        if i >= job.n {
            return Err(Drop::ReplicaInvalid);
        }
        let now_ns = now_ns.max(1);
        let src = original.data();
        if i < job.mr {
            return self.build_mroute_copy(&job, i, src, copy, now_ns);
        }
        let i = i - job.mr;
        if i < job.down {
            // Tree-interior copy: the whole outer packet to a downstream SID.
            let to = match self.sids.sids.get(&job.sid) {
                Some(Behaviour::EndMT { downstream, .. }) => *downstream.get(i).ok_or(Drop::ReplicaInvalid)?,
                _ => return Err(Drop::ReplicaInvalid),
            };
            let body = src.get(job.l3..job.l3 + job.total).ok_or(Drop::ReplicaInvalid)?;
            if !copy.set_len(14 + job.total) {
                return Err(Drop::NoHeadroom);
            }
            let d = copy.data_mut();
            d[14..].copy_from_slice(body);
            let mut ip = Ipv6Packet::new_unchecked(&mut d[14..]);
            ip.set_dst_addr(to);
            ip.decrement_hop_limit();
            return match self.route_copy_or_mtu(copy, to, job.total, job.pcp, now_ns)? {
                Ok(port) => Ok(port),
                Err(mtu) => self.replica_too_big(&job, src, job.l3..job.l3 + job.total, TOO_BIG_DOWNSTREAM, mtu, copy, now_ns),
            };
        }
        let (addr, qpn) = self.replica_receiver(&job, i - job.down, src)?;
        let inner = src.get(job.inner_off..job.inner_off + job.inner_len).ok_or(Drop::ReplicaInvalid)?;
        if inner[7] <= 1 {
            // The inner packet's hop limit runs out here, a routed hop of
            // it (RFC 4443 s.3.3): one Time Exceeded to its source per
            // packet, in the first receiver copy's place.
            if i > job.down {
                return Err(Drop::TtlExpired);
            }
            return self.replica_time_exceeded(&job, src, inner, copy, now_ns);
        }
        if !copy.set_len(14 + job.inner_len) {
            return Err(Drop::NoHeadroom);
        }
        {
            let d = copy.data_mut();
            let dg = &mut d[14..];
            dg.copy_from_slice(inner);
            let mut ip = Ipv6Packet::new_unchecked(&mut dg[..]);
            ip.set_ecn(job.inner_ecn);
            ip.decrement_hop_limit();
            roce::rewrite_v6_dst_qpn(dg, &addr.octets(), qpn & 0x00ff_ffff).map_err(|_| Drop::EndMtNotRoce)?;
        }
        self.counters.local(Local::EndMtReplica);
        match self.route_copy_or_mtu(copy, addr, job.inner_len, job.pcp, now_ns)? {
            Ok(port) => Ok(port),
            Err(mtu) => self.replica_too_big(&job, src, job.inner_off..job.inner_off + job.inner_len, TOO_BIG_RECEIVER, mtu, copy, now_ns),
        }
    }

    /// A copy does not fit the MTU `mtu` of the link it leaves by (RFC
    /// 4443 s.3.2: a router MUST answer a packet it cannot forward for
    /// that with a Packet Too Big, to the packet's source). The packet
    /// forwarded is `src[quoted]`: for a receiver copy the inner RoCEv2
    /// packet, to its sender; for a copy to a downstream SID the outer
    /// packet, to the node that encapsulated it. One Packet Too Big per
    /// received packet and kind of copy (with the MTU of the first copy
    /// that did not fit; under the ICMP error rate limit), in that copy's
    /// place, built in `copy`; the other copies that do not fit are
    /// dropped as `mtu-exceeded`.
    #[allow(clippy::too_many_arguments)]
    fn replica_too_big<Q: PacketBuffer>(&mut self, job: &ReplicaJob, src: &[u8], quoted: std::ops::Range<usize>, kind: u8, mtu: u16, copy: &mut Q, now_ns: u64) -> Result<u16, Drop> {
        if job.too_big_sent & kind != 0 || self.rep.too_big_sent & kind != 0 {
            return Err(Drop::MtuExceeded);
        }
        self.rep.too_big_sent |= kind;
        let body = src.get(quoted).ok_or(Drop::ReplicaInvalid)?;
        if !copy.set_len(14 + body.len()) {
            return Err(Drop::NoHeadroom);
        }
        {
            let d = copy.data_mut();
            d[14..].copy_from_slice(body);
            // The received frame's addresses: the fallback of an on-link
            // source not in the neighbour table, as for any error.
            d[..12].copy_from_slice(src.get(..12).ok_or(Drop::ReplicaInvalid)?);
            d[12..14].copy_from_slice(&[0x86, 0xdd]);
        }
        let source = Ipv6Packet::new_unchecked(body).src_addr();
        let l2 = L2 { iface: job.in_iface, l3: 14, pcp: 0, mcast: false };
        match self.icmp_error6(copy, l2, source, body.len(), now_ns, Icmp6Error::TooBig(u32::from(mtu)))? {
            Verdict::Tx(port) => Ok(port),
            _ => Err(Drop::MtuExceeded),
        }
    }

    /// Receiver `r` (address, QPN) of the job: the End.MT TLV's, then the
    /// provisioned ones.
    /// The Time Exceeded for an End.MT packet whose inner hop limit runs
    /// out, to the inner source, quoting the inner packet as received.
    fn replica_time_exceeded<Q: PacketBuffer>(&mut self, job: &ReplicaJob, src: &[u8], inner: &[u8], copy: &mut Q, now_ns: u64) -> Result<u16, Drop> {
        if !copy.set_len(14 + job.inner_len) {
            return Err(Drop::NoHeadroom);
        }
        {
            let d = copy.data_mut();
            d[14..].copy_from_slice(inner);
            // The received frame's addresses (the error's own header is
            // written where the FIB says; this is the fallback of an
            // on-link source), IPv6.
            d[..12].copy_from_slice(src.get(..12).ok_or(Drop::ReplicaInvalid)?);
            d[12..14].copy_from_slice(&[0x86, 0xdd]);
        }
        let source = Ipv6Packet::new_unchecked(inner).src_addr();
        let l2 = L2 { iface: job.in_iface, l3: 14, pcp: 0, mcast: false };
        match self.icmp_error6(copy, l2, source, job.inner_len, now_ns, Icmp6Error::TimeExceeded)? {
            Verdict::Tx(port) => Ok(port),
            _ => Err(Drop::TtlExpired),
        }
    }

    fn replica_receiver(&self, job: &ReplicaJob, r: usize, src: &[u8]) -> Result<(Ipv6Addr, u32), Drop> {
        let (addr, qpn) = self.replica_receiver_any(job, r, src)?;
        // A receiver is a unicast address (draft-li s.7.2) a router may
        // forward to (RFC 4291 s.2.5.2, s.2.5.3): no copy to loopback, ::,
        // multicast, IPv4-mapped or link-local, as for any packet.
        if addr.is_loopback() || addr.is_unspecified() || addr.is_multicast() || crate::pipeline::is_v4_mapped(&addr) || crate::tables::is_link_local(&addr) {
            return Err(Drop::Ipv6Martian);
        }
        Ok((addr, qpn))
    }

    fn replica_receiver_any(&self, job: &ReplicaJob, r: usize, src: &[u8]) -> Result<(Ipv6Addr, u32), Drop> {
        if r < job.tlv_n {
            let (addr, qpn) = tlv_receiver_at(src, job.tlv_off, r).ok_or(Drop::ReplicaInvalid)?;
            // Only the group's own receiver QPs (draft-li s.9: a TLV changed
            // in transit must not deliver to other QPs).
            if job.tlv_strict && !self.mc_is_receiver(src.get(job.inner_off..).unwrap_or(&[]), addr, qpn) {
                return Err(Drop::EndMtReceiverNotBranch);
            }
            Ok((addr, qpn))
        } else {
            let (addr, qpn) = match self.sids.sids.get(&job.sid) {
                Some(Behaviour::EndMT { receivers_extra, .. }) => receivers_extra.get(r - job.tlv_n).copied().ok_or(Drop::ReplicaInvalid)?,
                _ => return Err(Drop::ReplicaInvalid),
            };
            // A provisioned receiver QP the packet's TLV lists too gets the
            // TLV's copy only, not a second one (another QPN at the same
            // address is another QP: its own copy).
            let listed = (0..job.tlv_n).any(|t| tlv_receiver_at(src, job.tlv_off, t) == Some((addr, qpn & 0x00ff_ffff)));
            if listed {
                return Err(Drop::EndMtReceiverInTlv);
            }
            Ok((addr, qpn))
        }
    }

    /// Zero-copy variant of [`build_replica`](Self::build_replica) for a
    /// receiver copy: writes only the replica's private header into `head`
    /// (Ethernet, then the first [`REPLICA_HEAD`] octets of the rewritten
    /// inner datagram: IPv6, UDP, BTH) and returns the egress port, where the
    /// unchanged payload lies in `original` and the replica's new ICRC. The
    /// caller chains head + a reference to that payload + the ICRC.
    /// `Ok(None)`: this copy needs a full copy (a downstream SID copy, a
    /// datagram with no payload beyond the BTH, or an ICRC at an odd offset).
    pub fn build_replica_head<Q: PacketBuffer>(&mut self, i: usize, original: &[u8], head: &mut Q, now_ns: u64) -> Result<Option<ReplicaHead>, Drop> {
        self.held = None;
        if self.frag.n > 0 {
            return Ok(None);
        }
        let job = self.rep;
        if i >= job.n {
            return Err(Drop::ReplicaInvalid);
        }
        if i < job.mr {
            return Ok(None);
        }
        let i = i - job.mr;
        if i < job.down || job.inner_len <= REPLICA_HEAD + roce::ICRC_LEN {
            return Ok(None);
        }
        let now_ns = now_ns.max(1);
        let (addr, qpn) = self.replica_receiver(&job, i - job.down, original)?;
        let inner = original.get(job.inner_off..job.inner_off + job.inner_len).ok_or(Drop::ReplicaInvalid)?;
        if inner[7] <= 1 {
            // The first receiver's place becomes the Time Exceeded, built
            // in a full buffer (`build_replica`).
            return if i == job.down { Ok(None) } else { Err(Drop::TtlExpired) };
        }
        let ic = job.inner_len - roce::ICRC_LEN;
        let mut icrc = [inner[ic], inner[ic + 1], inner[ic + 2], inner[ic + 3]];
        if !head.set_len(14 + REPLICA_HEAD) {
            return Err(Drop::NoHeadroom);
        }
        {
            let dg = &mut head.data_mut()[14..];
            dg.copy_from_slice(&inner[..REPLICA_HEAD]);
            let mut ip = Ipv6Packet::new_unchecked(&mut dg[..]);
            ip.set_ecn(job.inner_ecn);
            ip.decrement_hop_limit();
            match roce::rewrite_v6_dst_qpn_parts(dg, &mut icrc, &addr.octets(), qpn & 0x00ff_ffff) {
                Ok(()) => {}
                Err(WireError::Unrecognized) => return Ok(None),
                Err(_) => return Err(Drop::EndMtNotRoce),
            }
        }
        let routed = self.route_copy_or_mtu(head, addr, job.inner_len, job.pcp, now_ns);
        if let Ok(Err(_)) = routed {
            // Too big for its link: the full copy's place answers it
            // (`build_replica`, a Packet Too Big).
            return Ok(None);
        }
        self.counters.local(Local::EndMtReplica);
        let port = routed?.map_err(|_| Drop::MtuExceeded)?;
        Ok(Some(ReplicaHead { port, payload_off: job.inner_off + REPLICA_HEAD, payload_len: ic - REPLICA_HEAD, icrc }))
    }

    /// Route a built copy (IPv6 packet at offset 14, `len` octets) to
    /// `dst`: its port, or `Ok(Err(mtu))` when it is longer than the MTU
    /// of the link it would leave by.
    fn route_copy_or_mtu<Q: PacketBuffer>(&mut self, copy: &mut Q, dst: Ipv6Addr, len: usize, pcp: u8, now_ns: u64) -> Result<Result<u16, u16>, Drop> {
        let hop = self.fib.route_ip(IpAddr::V6(dst), crate::pipeline::ip_at(copy.data(), 14)).ok_or(Drop::NoRoute)?;
        // Before the neighbour is looked up (or asked for).
        let iface = self.fib.hop(hop).map(|h| h.iface).ok_or(Drop::NoRoute)?;
        if let Some(mtu) = self.topo.iface(iface).map(|i| i.mtu).filter(|m| len > usize::from(*m)) {
            return Ok(Err(mtu));
        }
        let (ifc, mac) = self.resolve_hop(hop, IpAddr::V6(dst), now_ns)?;
        let (port, out_mac, vlan) = (ifc.port, ifc.mac, ifc.vlan);
        let l2 = L2 { iface: 0, l3: 14, pcp, mcast: false };
        write_l2(copy, l2, mac, out_mac, vlan, EtherType::IPV6)?;
        Ok(Ok(port))
    }

    /// The tunnel MTU the fragments of IPv4 packet `inner` meet under
    /// policy `pi`: they hash on the addresses only, so their SID list and
    /// ECMP next hop may differ from the whole packet's.
    fn fragments_tunnel_mtu(&self, pi: u32, inner: &[u8]) -> Option<usize> {
        let list = self.sids.policy(pi)?.select(crate::tables::fragments_hash(inner, 0));
        let seed = self.fib.seed();
        let hop = self.fib.route6(list.sids[0], || crate::tables::fragments_hash(inner, seed))?;
        let mtu = self.topo.iface(self.fib.hop(hop)?.iface)?.mtu;
        Some(usize::from(mtu).saturating_sub(40 + list.srh.len()))
    }

    /// H.Encaps / H.Encaps.Red of a transit packet (the IP packet at
    /// `l2.l3`, `total` octets, IPv4 or IPv6) under policy `pi`.
    pub(crate) fn srv6_encap<P: PacketBuffer>(&mut self, p: &mut P, l2: L2, pi: u32, total: usize, v6: bool, now_ns: u64) -> Result<Verdict, Drop> {
        let h = crate::tables::flow_hash(p.data().get(l2.l3..l2.l3 + total).ok_or(Drop::MalformedIpv6)?, v6, 0);
        let (source, da, srh_len, li) = {
            let pol = self.sids.policy(pi).ok_or(Drop::NoRoute)?;
            let list = pol.select(h);
            let li = pol.lists.iter().position(|l| std::ptr::eq(l, list)).unwrap_or(0);
            (pol.source, list.sids[0], list.srh.len(), li)
        };
        let add = 40 + srh_len;
        let out_total = add + total;
        if out_total - 40 > usize::from(u16::MAX) {
            return Err(Drop::MtuExceeded);
        }
        // ECMP toward the first SID: the inner flow's hash (the outer Flow
        // Label is made from it too), with this router's seed.
        let hop = self.fib.route_ip(IpAddr::V6(da), &p.data()[l2.l3..l2.l3 + total]).ok_or(Drop::NoRoute)?;
        let (ifc, mac) = self.resolve_hop(hop, IpAddr::V6(da), now_ns)?;
        // The egress MTU the tunnel packet is fragmented to (IPv6 only).
        let mut frag_mtu = None;
        if out_total > usize::from(ifc.mtu) {
            // The tunnel's MTU is the egress MTU less the outer headers
            // (RFC 2473 s.7.1): tell the inner packet's source.
            let tunnel_mtu = usize::from(ifc.mtu).saturating_sub(add);
            let egress_mtu = usize::from(ifc.mtu);
            // The callers checked the inner header.
            let inner = &p.data()[l2.l3..];
            if v6 {
                let src = Ipv6Packet::new_unchecked(inner).src_addr();
                // Below the IPv6 minimum (a long SRH: an End.MT TLV, an
                // HMAC), RFC 2473 s.7.1: a packet over 1280 is told 1280;
                // one of at most 1280 is encapsulated and the tunnel
                // packet fragmented (below).
                if tunnel_mtu >= 1280 || total > 1280 {
                    return self.icmp_error6(p, l2, src, total, now_ns, Icmp6Error::TooBig(tunnel_mtu.max(1280) as u32));
                }
                frag_mtu = Some(egress_mtu);
            } else {
                let ip = Ipv4Packet::new_unchecked(inner);
                if tunnel_mtu >= 68 {
                    if !ip.dont_frag() {
                        // Fragment the inner packet, one tunnel packet per
                        // fragment (RFC 4459 s.3.4; see crate::frag), to
                        // fit the path the fragments take too.
                        let mtu = tunnel_mtu.min(self.fragments_tunnel_mtu(pi, inner).ok_or(Drop::NoRoute)?);
                        if mtu < 68 {
                            return Err(Drop::MtuExceeded);
                        }
                        return self.fragment4(p.data(), l2, total, mtu);
                    }
                    let src = ip.src_addr();
                    return self.icmp_error4(p, l2, src, total, now_ns, Icmp4Error::FragNeeded(tunnel_mtu as u16));
                }
                return Err(Drop::MtuExceeded);
            }
        }
        let (port, out_mac, vlan) = (ifc.port, ifc.mac, ifc.vlan);
        // Fragments are sent as built: one waiting for its neighbour
        // cannot be held (the next packet finds it resolved).
        if frag_mtu.is_some() && self.held.is_some() {
            self.held = None;
            return Err(Drop::NeighbourMiss);
        }
        // The headend forwards the inner packet, a routed hop: its TTL /
        // hop limit is decremented as on any route (RFC 1812 s.5.3.1, RFC
        // 8200 s.3; what Linux's seg6 encapsulation does after forwarding).
        // The callers sent Time Exceeded for 1 or 0. The ICRC masks both.
        {
            let inner = p.data_mut().get_mut(l2.l3..l2.l3 + total).ok_or(Drop::MalformedIpv6)?;
            if v6 {
                Ipv6Packet::new_unchecked(inner).decrement_hop_limit();
            } else {
                Ipv4Packet::new_unchecked(inner).decrement_ttl_incremental();
            }
        }
        // The ingress PE's rate reduction (FANN draft s.4.2): traffic over
        // the policy's share is marked CE (before the outer header copies
        // the ECN field, RFC 6040 s.4.1). Metered here, once it is sure to
        // leave whole: a packet fragmented to fit the tunnel is metered as
        // its fragments, which come through here each.
        let permille = self.sids.policy(pi).and_then(|x| x.rate_permille);
        let i = pi as usize;
        if self.policy_meters.len() <= i {
            self.policy_meters.resize(i + 1, PolicyMeter::default());
        }
        if self.policy_meters[i].over(permille, total as u32, now_ns, self.sids.pe_rate_window_ns) {
            let inner = p.data_mut().get_mut(l2.l3..l2.l3 + total).ok_or(Drop::MalformedIpv6)?;
            if crate::classify::set_ce_ip(inner, v6) {
                self.counters.local(Local::PeRateCeMarked);
            } else {
                self.counters.local(Local::PeRateOverNotEct);
            }
        }
        let tc = {
            let inner = &p.data()[l2.l3..l2.l3 + total];
            if v6 { (inner[0] << 4) | (inner[1] >> 4) } else { inner[1] }
        };
        // Drop any Ethernet padding, then make room for the outer headers
        // (moving the packet back when they are longer than the headroom).
        if !p.set_len(l2.l3 + total) || !p.prepend_shift(add) {
            return Err(Drop::NoHeadroom);
        }
        {
            let d = p.data_mut();
            let inner_proto = if v6 { 41 } else { 4 };
            let o = &mut d[l2.l3..l2.l3 + add];
            let fl = (h as u32 & 0x000f_ffff).max(1);
            o[0] = 0x60 | (tc >> 4);
            o[1] = (tc << 4) | ((fl >> 16) as u8 & 0x0f);
            o[2] = (fl >> 8) as u8;
            o[3] = fl as u8;
            o[4..6].copy_from_slice(&((out_total - 40) as u16).to_be_bytes());
            o[6] = if srh_len > 0 { IpProtocol::IPV6_ROUTE.0 } else { inner_proto };
            o[7] = ENCAP_HOP_LIMIT;
            o[8..24].copy_from_slice(&source.octets());
            o[24..40].copy_from_slice(&da.octets());
            if srh_len > 0 {
                let pol = self.sids.policy(pi).ok_or(Drop::NoRoute)?;
                o[40..].copy_from_slice(&pol.lists[li].srh);
                o[40] = inner_proto;
            }
        }
        write_l2(p, l2, mac, out_mac, vlan, EtherType::IPV6)?;
        self.counters.local(Local::Srv6Encap);
        if let Some(mtu) = frag_mtu {
            let l3 = p.len() - out_total;
            return self.fragment_tunnel6(p.data(), l3, add, port, mtu);
        }
        Ok(Verdict::Tx(port))
    }
}

/// What a decapsulated notification (`ip` starts at the inner IP header)
/// tells END.C about the affected traffic: its IP header's DSCP, and whether
/// it names a RoCEv2 flow (Long-haul CNP, RoCEv2 CNP, FANN Flow ID of UDP to
/// 4791). See [`crate::endc::EndC::priority_for`].
pub fn notification_class(ip: &[u8], proto: IpProtocol, params: &Params) -> crate::endc::Affected {
    use crate::endc::Affected;
    let (dscp, upper, l4) = match proto {
        // Past extension headers, an AH among them (an authenticated
        // Long-haul CNP, draft-tian s.9).
        IpProtocol::IPV6 => match (ip.get(..40), crate::wire::ipv6::upper_layer(ip)) {
            (Some(h), Some((upper, l4))) => ((((h[0] & 0x0f) << 4) | (h[1] >> 4)) >> 2, upper.0, l4),
            _ => return Affected::default(),
        },
        _ => match ip.get(..20) {
            Some(h) => (h[1] >> 2, h[9], usize::from(h[0] & 0xf) * 4),
            None => return Affected::default(),
        },
    };
    let body = ip.get(l4..).unwrap_or(&[]);
    let rocev2 = match upper {
        58 => match body.first() {
            Some(&t) if t == params.icmpv6_lhcnp_type => true,
            Some(&t) if t == params.icmpv6_fann_type => body
                .get(4..)
                .and_then(|m| crate::wire::fann::Message::new_checked(m).ok())
                .and_then(|m| m.flow_id())
                .is_some_and(|f| f.protocol == 17 && f.dst_port == crate::wire::params::ROCEV2_UDP_PORT),
            _ => false,
        },
        17 => match body.get(2..4).map(|p| u16::from_be_bytes([p[0], p[1]])) {
            Some(ROCEV2_UDP_PORT) => true,
            // FANN over UDP: its Flow ID names the affected flow.
            Some(port) if port == params.fann_udp_port => body
                .get(8..)
                .and_then(|m| crate::wire::fann::Message::new_checked(m).ok())
                .and_then(|m| m.flow_id())
                .is_some_and(|f| f.protocol == 17 && f.dst_port == ROCEV2_UDP_PORT),
            _ => false,
        },
        _ => false,
    };
    Affected { dscp: Some(dscp), rocev2 }
}

/// A notification an END.C / END.E SID takes, checked as far as its
/// headers go: the IP lengths hold it, the ICMPv6 / UDP checksum or the
/// ICRC verifies. It borrows what the body parsers need.
pub enum Notification<'a> {
    /// ICMPv6 Long-haul CNP: its Code and the body after type, code and
    /// checksum.
    LhCnpIcmp(u8, &'a [u8]),
    /// ICMPv6 FANN: source, destination, the ICMPv6 message.
    FannIcmp(Ipv6Addr, Ipv6Addr, &'a [u8]),
    /// RoCEv2 CNP (BTH opcode 0x81): the UDP payload (BTH onward).
    RoceCnp(&'a [u8]),
    /// FANN over UDP (s.5.2): the UDP payload.
    FannUdp(&'a [u8]),
}

/// The notification a decapsulated packet carries (`ip` starts at the
/// inner IP header): Long-haul CNP (ICMPv6 or RoCEv2), a standard RoCEv2
/// CNP, or a FANN message (ICMPv6 or UDP, s.5.1 / s.5.2 of
/// draft-hzh-fantel-wan-tunnel). None for anything else, or when a length,
/// checksum or ICRC does not verify.
pub fn notification<'a>(ip: &'a [u8], proto: IpProtocol, params: &Params) -> Option<Notification<'a>> {
    use crate::wire::checksum;
    // The datagram without link-layer padding, and where its payload starts.
    let (upper, l4, ip) = match proto {
        IpProtocol::IPV6 => {
            let h = ip.get(..40)?;
            let ip = ip.get(..40 + usize::from(u16::from_be_bytes([h[4], h[5]])))?;
            // Past extension headers, an AH among them (an authenticated
            // Long-haul CNP, draft-tian s.9): END.C is not the SA's end and
            // does not verify it.
            let (upper, l4) = crate::wire::ipv6::upper_layer(ip)?;
            (upper.0, l4, ip)
        }
        _ => {
            let h = ip.get(..20)?;
            let (ihl, total) = (usize::from(h[0] & 0xf) * 4, usize::from(u16::from_be_bytes([h[2], h[3]])));
            if ihl < 20 || total < ihl {
                return None;
            }
            (h[9], ihl, ip.get(..total)?)
        }
    };
    let body = ip.get(l4..)?;
    // The checksum of an IPv6 upper-layer packet (ICMPv6, FANN over UDP).
    let sum_ok = |proto: u8| -> bool {
        let pseudo = || -> Option<u32> { Some(checksum::pseudo_v6(ip.get(8..24)?.try_into().ok()?, ip.get(24..40)?.try_into().ok()?, proto, u32::try_from(body.len()).ok()?)) };
        pseudo().is_some_and(|p| checksum::fold(checksum::combine(p, checksum::sum(body))) == 0xffff)
    };
    match upper {
        58 => {
            // ICMPv6 only over IPv6, with its checksum (RFC 4443 s.2.3).
            if proto != IpProtocol::IPV6 || !sum_ok(58) {
                return None;
            }
            // The message's fixed part at least (draft-tian s.6.1: the
            // 12-octet body; draft-hzh s.5.1: Version to Bitmap and the
            // items its bits name): a header alone is no notification.
            let t = *body.first()?;
            if t == params.icmpv6_lhcnp_type {
                crate::wire::lhcnp::Icmpv6LhCnp::new_checked(body).ok()?;
                Some(Notification::LhCnpIcmp(*body.get(1)?, body.get(4..)?))
            } else if t == params.icmpv6_fann_type {
                crate::wire::fann::Packet::new_checked(body).ok()?;
                let src = Ipv6Addr::from(<[u8; 16]>::try_from(&ip[8..24]).ok()?);
                let dst = Ipv6Addr::from(<[u8; 16]>::try_from(&ip[24..40]).ok()?);
                Some(Notification::FannIcmp(src, dst, body))
            } else {
                None
            }
        }
        17 => {
            let ulen = usize::from(u16::from_be_bytes([*body.get(4)?, *body.get(5)?]));
            if ulen < 8 || ulen != body.len() {
                return None;
            }
            let dport = u16::from_be_bytes([body[2], body[3]]);
            if dport == ROCEV2_UDP_PORT {
                let u = body.get(..8 + 12)?;
                // BTH, then the Long-haul CNP body (E set, draft-tian
                // s.6.2) or a CNP's 16 reserved octets, then the ICRC.
                let rest = if u[12] & 0x20 != 0 { crate::wire::lhcnp::BODY_LEN } else { 16 };
                if u[8] != 0x81 || body.len() < 8 + 12 + rest + 4 || roce::icrc_check(ip).is_err() {
                    return None;
                }
                Some(Notification::RoceCnp(&body[8..]))
            } else if dport == params.fann_udp_port {
                // FANN over UDP (s.5.2), IPv6 only; the checksum is
                // mandatory over IPv6 (RFC 8200 s.8.1).
                if proto != IpProtocol::IPV6 || body[6..8] == [0, 0] || !sum_ok(17) || crate::wire::fann::Message::new_checked(&body[8..]).is_err() {
                    return None;
                }
                Some(Notification::FannUdp(&body[8..]))
            } else {
                None
            }
        }
        _ => None,
    }
}

/// The sender a decapsulated [`notification`] is about: the destination of
/// a Long-haul CNP or a RoCEv2 CNP (it goes to the flow's source), the
/// source of a FANN message's Flow ID (IPv4-mapped: the IPv4 address).
/// None for a FANN message without Flow ID, or for no notification.
pub fn notification_sender(ip: &[u8], proto: IpProtocol, params: &Params) -> Option<IpAddr> {
    let dst = || -> Option<IpAddr> {
        Some(match proto {
            IpProtocol::IPV6 => IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(ip.get(24..40)?).ok()?)),
            _ => IpAddr::V4(Ipv4Addr::from(<[u8; 4]>::try_from(ip.get(16..20)?).ok()?)),
        })
    };
    let flow_src = |m: &[u8]| -> Option<IpAddr> {
        let a = crate::wire::fann::Message::new_checked(m).ok()?.flow_id()?.src;
        Some(a.to_ipv4_mapped().map_or(IpAddr::V6(a), IpAddr::V4))
    };
    match notification(ip, proto, params)? {
        Notification::LhCnpIcmp(..) | Notification::RoceCnp(_) => dst(),
        Notification::FannIcmp(_, _, m) => flow_src(m.get(4..)?),
        Notification::FannUdp(m) => flow_src(m),
    }
}

/// What END.C should do for a decapsulated [`notification`]. Only one
/// that validates completely asks for a PAUSE or RESUME: besides the
/// headers, the Long-haul CNP body parses, and a FANN message is Version 1
/// with the length its metadata bitmap says (s.6: a message whose lengths
/// do not add up is discarded), sent from its Originating Node's own
/// address (s.6), and a congestion, queue buildup, microburst or recovery
/// event. None otherwise. With the request, its cause
/// ([`crate::endc::flow_cause`] of the CNP's destination and the QP it
/// names, or [`crate::endc::event_cause`] of the FANN Event Identifier).
pub fn notification_request(ip: &[u8], proto: IpProtocol, params: &Params) -> Option<(crate::endc::Request, u64)> {
    use crate::endc::{event_cause, flow_cause, Request};
    use crate::wire::fann::{self, event};
    use crate::wire::lhcnp::{Action, Body, CnpInfo};
    let from_action = |a: Action, param: u32| match a {
        Action::Pause => Some(Request::Pause { micros: Some(param) }),
        Action::Resume => Some(Request::Resume),
        Action::RateReduce | Action::Notify => Some(Request::Pause { micros: None }),
    };
    // The events END.C pauses for, and their recoveries (a recovery's
    // Event Sub-type names the event type it clears; a recovery of an
    // unknown type is taken as a Resume, which is always safe). A link
    // failure, performance or signal degradation is the PE's to reroute,
    // not a reason to pause: nor is its recovery one to resume.
    let pauses = |t: u8| matches!(t, event::CONGESTION | event::QUEUE_BUILDUP | event::MICROBURST);
    let no_pfc = |t: u8| matches!(t, event::LINK_FAILURE | event::PERFORMANCE_DEGRADATION | event::SIGNAL_DEGRADATION);
    let from_fann = |code: u8, m: &fann::MessageRepr| match (code, m.event_type) {
        (_, event::RECOVERY) => (!no_pfc(m.event_subtype)).then_some(Request::Resume),
        (fann::CODE_RECOVERY, t) => (!no_pfc(t)).then_some(Request::Resume),
        (fann::CODE_EVENT, t) if pauses(t) => Some(Request::Pause { micros: None }),
        _ => None,
    };
    // The CNP's destination: the flow's sender.
    let sender = if proto == IpProtocol::IPV4 { ip.get(16..20)? } else { ip.get(24..40)? };
    match notification(ip, proto, params)? {
        // Code 0, flow-level, is the only one defined (s.6.1, s.10.2).
        Notification::LhCnpIcmp(code, b) => {
            if code != 0 {
                return None;
            }
            let info = CnpInfo::parse(&Body::new_checked(b).ok()?).ok()?;
            Some((from_action(info.action, u32::from(info.parameter))?, flow_cause(sender, info.source_qp)))
        }
        Notification::FannIcmp(src, dst, m) => {
            let r = fann::PacketRepr::parse(&fann::Packet::new_checked(m).ok()?, &src, &dst, params.icmpv6_fann_type).ok()?;
            // s.5.1.2: Code 0 (event) or 1 (recovery), no other; s.6: sent
            // from the originating node's own address.
            if r.code > fann::CODE_RECOVERY || r.message.originating_node != src {
                return None;
            }
            Some((from_fann(r.code, &r.message)?, event_cause(r.message.event_id)))
        }
        Notification::RoceCnp(bth) => {
            // The BTH's DestQP is the flow's source QP, in both forms.
            let qp = u32::from_be_bytes([0, *bth.get(5)?, *bth.get(6)?, *bth.get(7)?]);
            let req = if bth[4] & 0x20 != 0 {
                let info = CnpInfo::parse(&Body::new_checked(bth.get(12..)?).ok()?).ok()?;
                from_action(info.action, u32::from(info.parameter))?
            } else {
                Request::Pause { micros: None }
            };
            Some((req, flow_cause(sender, qp)))
        }
        Notification::FannUdp(m) => {
            let m = fann::MessageRepr::parse(&fann::Message::new_checked(m).ok()?).ok()?;
            if m.originating_node.octets()[..] != *ip.get(8..24)? {
                return None;
            }
            Some((from_fann(fann::CODE_EVENT, &m)?, event_cause(m.event_id)))
        }
    }
}
