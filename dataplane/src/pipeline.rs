//! The forwarding pipeline for one packet: parse once, classify (local address
//! or transit), forward through the FIB with neighbour resolution, or answer
//! locally (ARP, Neighbor Discovery, echo, Time Exceeded).
//!
//! It works on any [`PacketBuffer`], in place: replies reuse the received
//! buffer, so the per-packet path allocates nothing. Packets the router has to
//! originate (ARP requests, Neighbor Solicitations) are queued as
//! [`Solicit`]s and built by the worker into fresh buffers after the burst.

use crate::counters::{Drop, Local, WorkerCounters};
use crate::packet::PacketBuffer;
use crate::nud::UsedBits;
use crate::srv6::{ReplicaJob, SidTable};
use crate::tables::{solicited_node, Fib, Interface, KeyedMap, MacAddr, Neighbours, NextHop, Topology};
use crate::wire::arp::{ArpOperation, ArpPacket, ArpRepr};
use crate::wire::checksum;
use crate::wire::ethernet::{self, EtherType, EthernetFrame};
use crate::wire::icmpv4::{Icmpv4Message, Icmpv4Packet};
use crate::wire::ipv4::{IpProtocol, Ipv4Packet};
use crate::wire::ipv6::{walk_ext_chain, Ipv6Packet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

/// What to do with a packet after [`Pipeline::process`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Transmit on this DPDK port (the buffer has been rewritten).
    Tx(u16),
    /// Drop and count under this reason.
    Drop(Drop),
    /// A local behaviour took it (learned from it); free it without a drop.
    Consumed,
    /// The packet becomes this many new ones, built with
    /// [`Pipeline::build_replica`] into fresh buffers; then free the
    /// original (not counted as a drop). End.MT replication (see
    /// [`crate::srv6`]) and IPv4 fragmentation (see [`crate::frag`]).
    Replicate(u16),
    /// The packet needs state another worker owns (END.C, End.MT or a
    /// Proxy Address reached through another SID of this node, e.g. End
    /// then END.C): hand it, as it is now, to the owner, which processes
    /// it again. Only where [`Pipeline::state_owner`] is false.
    ToOwner,
}

/// Something the control thread needs to know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A neighbour seen in ARP / ND traffic with a MAC the table does not
    /// have; `answer`: in an answer to a solicitation (an ARP reply to us,
    /// a solicited NA), which also confirms that it is reachable; else it
    /// is STALE and checked soon (RFC 4861 s.7.3.3).
    NeighbourLearned { iface: u16, ip: IpAddr, mac: MacAddr, answer: bool },
    /// A known neighbour answered a solicitation (an ARP reply to us, a
    /// solicited Neighbor Advertisement) with the MAC it has: reachable
    /// (neighbour unreachability detection, [`crate::nud`]).
    NeighbourConfirmed { iface: u16, ip: IpAddr },
    /// A Neighbor Advertisement with Override clear named another MAC for
    /// a learned neighbour: not taken, but a REACHABLE entry becomes STALE
    /// (RFC 4861 s.7.2.5 (a)), so it is checked once it is used.
    NeighbourSuspect { iface: u16, ip: IpAddr },
    /// Ingress PE: a FANN message or Long-haul CNP addressed to this node,
    /// validated and from a known originating node, for the control
    /// thread's [`crate::fann::PeControl`] (the single writer of the SR
    /// policies).
    PeNotification(crate::fann::PeNote),
    /// An MLD message (RFC 9777) on an interface MLD runs on, validated
    /// (Hop Limit 1, link-local source, checksum), for the control
    /// thread's listener state ([`crate::mld::Mld`]): the ICMPv6 message.
    /// A control-plane packet, rate-limited per worker
    /// ([`MLD_RATE_PER_S`]), so its copy is allocated.
    Mld { iface: u16, src: Ipv6Addr, msg: Box<[u8]> },
    /// An ICMP / ICMPv6 Echo Reply to one of the RTT probes (its
    /// identifier is [`Topology::echo_probe_id`]), with the time it
    /// arrived (the worker's clock), for the control thread's
    /// [`crate::rttprobe::RttProbe`]: sender, sequence number, the first
    /// [`crate::rttprobe::PROBE_DATA`] bytes of its data.
    EchoReply { from: IpAddr, seq: u16, data: [u8; crate::rttprobe::PROBE_DATA], at_ns: u64 },
}

/// MLD messages each worker hands to the control thread per second at
/// most (and burst); beyond it they are dropped as `mld-rate-limited`.
pub const MLD_RATE_PER_S: u32 = 2000;
pub const MLD_BURST: u32 = 500;
/// Echo Replies to RTT probes each worker hands to the control thread per
/// second at most (and burst); the probes go a few per second, so more
/// are a flood, dropped as `echo-reply-rate-limited`.
pub const ECHO_REPLY_RATE_PER_S: u32 = 1000;
pub const ECHO_REPLY_BURST: u32 = 64;

/// An address to resolve: the worker builds an ARP request or NS for it,
/// broadcast / to the solicited-node group, or unicast to `unicast` (a
/// reachability probe, RFC 4861 s.7.3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Solicit {
    pub iface: u16,
    pub target: IpAddr,
    pub unicast: Option<MacAddr>,
}

/// Tunables of the pipeline.
#[derive(Debug, Clone, Copy)]
pub struct PipelineConfig {
    pub icmp_error_rate_pps: u32,
    pub icmp_error_burst: u32,
    pub solicit_interval_ns: u64,
}

impl Default for PipelineConfig {
    fn default() -> Self {
        PipelineConfig { icmp_error_rate_pps: 100, icmp_error_burst: 10, solicit_interval_ns: 1_000_000_000 }
    }
}

/// A token bucket on injected time.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    rate_per_s: u64,
    burst: u64,
    /// Tokens scaled by 1e9 (token-nanoseconds).
    level: u64,
    last_ns: u64,
}

impl TokenBucket {
    pub fn new(rate_per_s: u32, burst: u32) -> Self {
        TokenBucket {
            rate_per_s: u64::from(rate_per_s),
            burst: u64::from(burst),
            level: u64::from(burst) * 1_000_000_000,
            last_ns: 0,
        }
    }
    /// Take one token at time `now_ns`; false when the bucket is empty.
    pub fn take(&mut self, now_ns: u64) -> bool {
        self.take_n(now_ns, 1)
    }

    /// Take `n` tokens at time `now_ns`, all or none.
    pub fn take_n(&mut self, now_ns: u64, n: u32) -> bool {
        let cap = self.burst * 1_000_000_000;
        let dt = now_ns.saturating_sub(self.last_ns);
        self.last_ns = self.last_ns.max(now_ns);
        self.level = self.level.saturating_add(dt.saturating_mul(self.rate_per_s)).min(cap);
        let need = u64::from(n) * 1_000_000_000;
        if self.level >= need {
            self.level -= need;
            true
        } else {
            false
        }
    }

    /// New rate and burst (a configuration change while running): the
    /// tokens the bucket holds stay, up to the new burst. A change never
    /// hands out a fresh burst.
    pub fn retune(&mut self, rate_per_s: u32, burst: u32) {
        self.rate_per_s = u64::from(rate_per_s);
        self.burst = u64::from(burst);
        self.level = self.level.min(self.burst * 1_000_000_000);
    }

    /// Give back a token taken but not used.
    pub fn refund(&mut self) {
        self.level = self.level.saturating_add(1_000_000_000).min(self.burst * 1_000_000_000);
    }
}

const MAX_SOLICIT_STATE: usize = 4096;

/// One worker's pipeline: snapshots of the tables plus its own state.
pub struct Pipeline {
    pub topo: Arc<Topology>,
    pub fib: Arc<Fib>,
    pub neigh: Arc<Neighbours>,
    pub counters: Arc<WorkerCounters>,
    cfg: PipelineConfig,
    icmp_bucket: TokenBucket,
    /// MLD messages handed to the control thread.
    mld_bucket: TokenBucket,
    /// Echo Replies to RTT probes handed to the control thread.
    echo_bucket: TokenBucket,
    /// The worker's clock, read when an RTT probe's Echo Reply is seen
    /// (None: `now_ns`, plain-buffer tests). The loop's `now` is taken
    /// before the burst is received: a worker descheduled in between would
    /// date the reply before it arrived and shorten the round trip, and
    /// RTT_est is the smallest of them.
    pub reply_clock: Option<crate::ReadClock>,
    /// Events for the control thread, drained by the worker after each burst.
    pub events: Vec<Event>,
    /// Addresses to resolve, drained by the worker after each burst.
    pub solicits: Vec<Solicit>,
    solicit_last: KeyedMap<(u16, IpAddr), u64>,
    /// `solicit_last` is full: no pass over it to free room before this
    /// time (a pass that frees nothing would otherwise be repeated for
    /// every packet to a new unresolved address).
    solicit_prune_at: u64,
    /// (interface, time) of the last defence of an IPv4 address against a
    /// conflicting ARP packet (RFC 5227 s.2.4), at most [`MAX_DEFENDED`].
    arp_defended: Vec<(u16, u64)>,
    /// Neighbours this worker learned that are not yet in a snapshot from
    /// the control thread, so that forwarding to them works at once; with
    /// the snapshot generation they were learned in (an entry the control
    /// thread never takes up, refused or lost, is dropped a few snapshots
    /// later, so that it cannot outlive the table's reachability checks).
    learned: KeyedMap<(u16, IpAddr), (MacAddr, u32)>,
    /// Neighbour snapshots taken so far.
    neigh_gen: u32,
    /// Bumped by every neighbour snapshot and local learning (frames held
    /// for resolution are looked at again when it moves).
    neigh_epoch: u64,
    /// `resolve` builds frames for unresolved neighbours with
    /// [`crate::unres::HOLD_MAC`] (the worker holds them) instead of
    /// dropping them; set by the worker when holding is on.
    pub(crate) hold: bool,
    /// The neighbour the last `resolve` that missed waited for (reset by
    /// every entry point that builds frames).
    pub(crate) held: Option<crate::unres::Key>,
    /// Set while an ICMP error about a held packet that timed out is built
    /// ([`Pipeline::unreachable_for_held`]): its source's address is
    /// resolved (and the error held) like a forwarded packet's, at this
    /// time; 0: an error goes back to the received frame's Ethernet
    /// source when the FIB's next hop is not resolved.
    reply_resolve_at: u64,
    /// Per FIB next hop (by index): egress interface, gateway MAC and the
    /// gateway's [`UsedBits`] bit when the gateway is resolved; None for
    /// connected routes and unresolved gateways.
    pub(crate) adj: Vec<Option<(u16, MacAddr, u32)>>,
    /// Where the neighbours forwarded to are marked for the control
    /// thread's reachability checks ([`crate::nud`]).
    pub(crate) used: Arc<UsedBits>,
    /// The solicitations of every worker ([`crate::nud::SolicitLog`]).
    solicit_log: Arc<crate::nud::SolicitLog>,
    /// Set by `process` when its `Tx` verdict is a locally generated reply
    /// (ARP, ND, echo, ICMP error), which leaves ahead of queued data.
    pub reply: bool,
    /// This pipeline holds the node's END.C state and multicast groups
    /// (its worker owns them; the others steer their packets there, and
    /// hand over those that reach them through another local SID). True
    /// unless the worker says.
    pub state_owner: bool,
    /// Local SIDs and SR policies ([`crate::srv6`]).
    pub sids: Arc<SidTable>,
    /// END.C state: per interface toward a DC gateway, its PFC controller.
    pub endc: Vec<(u16, crate::endc::EndC)>,
    /// PFC frames due from END.C timers, built by the worker.
    pub pfc_pending: Vec<(u16, crate::endc::PfcAction)>,
    /// Per DPDK port: the received-PAUSE / PFC state of a port that
    /// honours them (`[port.pfc]`, [`crate::pfcrx`]); shared with the
    /// worker that owns the port's egress queue.
    pub pfc_rx: Vec<Option<Arc<crate::pfcrx::PortPause>>>,
    /// Per SR policy (index): the ingress PE's rate meter (FANN s.4.2).
    pub(crate) policy_meters: Vec<crate::srv6::PolicyMeter>,
    /// The End.MT replication recorded by the last `process`.
    pub(crate) rep: ReplicaJob,
    /// The IPv4 fragmentation recorded by the last `process`.
    pub(crate) frag: crate::frag::FragJob,
    /// Identification of the router's own IPv6 fragments: from a random
    /// start, so not predictable from outside (RFC 7739).
    pub(crate) frag_ident: u32,
    /// Datagrams to the router's addresses in reassembly.
    pub(crate) reasm: crate::reasm::Reassembly,
    /// Local SIDs processed for the current packet.
    pub(crate) srv6_depth: u8,
    /// `local6` is handed a datagram that arrived in fragments (RFC 6980:
    /// no ND in it).
    pub(crate) in_reassembly: bool,
    /// End.MT reverse-path groups this worker aggregates (one writer: this
    /// pipeline's worker; see [`crate::multicast`]).
    pub(crate) mc: crate::multicast::GroupTable,
    /// Window CNPs due from [`Pipeline::poll_multicast`], built by the
    /// worker with [`Pipeline::build_mc_upstream`].
    pub mc_pending: Vec<(usize, crate::multicast::Upstream)>,
    /// Bumped by every [`Pipeline::rebuild_adjacency`].
    pub(crate) adj_gen: u64,
    /// Bumped whenever the topology or the SID table is replaced: what the
    /// fast path's tables are built for. (Not the snapshots' addresses: a
    /// snapshot freed after it was replaced can leave its address to the
    /// next one, and tables keyed by address would then not be rebuilt.)
    pub(crate) snap_gen: u64,
    /// The burst fast path's tables ([`crate::fastpath`]).
    pub(crate) fast: crate::fastpath::FastState,
}

/// Where the layers of a received frame are.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct L2 {
    pub(crate) iface: u16,
    /// Length of the Ethernet header including the VLAN tag.
    pub(crate) l3: usize,
    /// PCP of the received tag (0 when untagged).
    pub(crate) pcp: u8,
    /// Received as a link-layer broadcast / multicast: never forwarded
    /// (RFC 1812 s.5.3.4), never answered with an ICMP error (s.4.3.2.7).
    pub(crate) mcast: bool,
}

/// How a packet the router answers leaves: the egress interface, its port,
/// MAC and VLAN, and the next hop's MAC.
#[derive(Debug, Clone, Copy)]
struct ReplyPath {
    iface: u16,
    port: u16,
    src_mac: MacAddr,
    vlan: Option<u16>,
    mac: MacAddr,
}

impl ReplyPath {
    /// Write the egress L2 header over the received one.
    fn write<P: PacketBuffer>(&self, p: &mut P, l2: L2, et: EtherType) -> Result<Verdict, Drop> {
        write_l2(p, l2, self.mac, self.src_mac, self.vlan, et)?;
        Ok(Verdict::Tx(self.port))
    }
}

const EVENTS_CAP: usize = 256;
/// Window CNPs one `poll_multicast` can queue (one per group at most).
const MC_PENDING_CAP: usize = 1024;
const MAX_LEARNED: usize = 1024;
/// Interfaces whose last ARP defence a worker remembers.
const MAX_DEFENDED: usize = 64;
/// RFC 5227 s.1.1: DEFEND_INTERVAL, 10 seconds.
const DEFEND_INTERVAL_NS: u64 = 10_000_000_000;
/// Neighbour snapshots an overlay entry (`Pipeline::learned`) waits for
/// the control thread to take it up before it is dropped.
const OVERLAY_SNAPSHOTS: u32 = 4;

impl Pipeline {
    pub fn new(topo: Arc<Topology>, fib: Arc<Fib>, neigh: Arc<Neighbours>, counters: Arc<WorkerCounters>, cfg: PipelineConfig) -> Self {
        let mut solicit_last = KeyedMap::default();
        solicit_last.reserve(MAX_SOLICIT_STATE);
        let mut p = Pipeline {
            topo,
            fib,
            neigh,
            counters,
            cfg,
            icmp_bucket: TokenBucket::new(cfg.icmp_error_rate_pps, cfg.icmp_error_burst),
            mld_bucket: TokenBucket::new(MLD_RATE_PER_S, MLD_BURST),
            echo_bucket: TokenBucket::new(ECHO_REPLY_RATE_PER_S, ECHO_REPLY_BURST),
            reply_clock: None,
            events: Vec::with_capacity(EVENTS_CAP),
            solicits: Vec::with_capacity(EVENTS_CAP),
            solicit_last,
            solicit_prune_at: 0,
            arp_defended: Vec::with_capacity(MAX_DEFENDED),
            learned: {
                let mut m = KeyedMap::default();
                m.reserve(MAX_LEARNED);
                m
            },
            neigh_gen: 0,
            neigh_epoch: 0,
            hold: false,
            held: None,
            reply_resolve_at: 0,
            adj: Vec::new(),
            used: Arc::default(),
            solicit_log: Arc::default(),
            reply: false,
            state_owner: true,
            sids: Arc::new(SidTable::default()),
            endc: Vec::new(),
            pfc_pending: Vec::with_capacity(16),
            pfc_rx: Vec::new(),
            policy_meters: Vec::new(),
            rep: ReplicaJob::default(),
            frag: Default::default(),
            frag_ident: {
                use std::hash::{BuildHasher, Hasher};
                std::collections::hash_map::RandomState::new().build_hasher().finish() as u32
            },
            reasm: Default::default(),
            srv6_depth: 0,
            in_reassembly: false,
            mc: crate::multicast::GroupTable::default(),
            mc_pending: Vec::with_capacity(MC_PENDING_CAP),
            adj_gen: 0,
            snap_gen: 0,
            fast: Default::default(),
        };
        p.rebuild_adjacency();
        p
    }

    /// Install a new neighbour snapshot; keep local learnings it lacks.
    pub fn set_neighbours(&mut self, n: Arc<Neighbours>) -> Arc<Neighbours> {
        self.neigh_gen = self.neigh_gen.wrapping_add(1);
        self.neigh_epoch = self.neigh_epoch.wrapping_add(1);
        let gen = self.neigh_gen;
        self.learned.retain(|(i, ip), (mac, at)| n.get(*i, *ip).map(|e| e.mac) != Some(*mac) && gen.wrapping_sub(*at) <= OVERLAY_SNAPSHOTS);
        let old = std::mem::replace(&mut self.neigh, n);
        self.rebuild_adjacency();
        old
    }

    /// Process one received packet in place.
    #[inline]
    pub fn process<P: PacketBuffer>(&mut self, p: &mut P, port: u16, now_ns: u64) -> Verdict {
        // `resolve` takes 0 as "do not solicit"; a virtual clock may start at 0.
        let now_ns = now_ns.max(1);
        self.reply = false;
        self.held = None;
        self.srv6_depth = 0;
        self.frag.n = 0;
        match self.process_inner(p, port, now_ns) {
            Ok(v) => v,
            Err(r) => Verdict::Drop(r),
        }
    }

    fn process_inner<P: PacketBuffer>(&mut self, p: &mut P, port: u16, now_ns: u64) -> Result<Verdict, Drop> {
        let (l2, ethertype) = {
            let eth = EthernetFrame::new_checked(p.data()).map_err(|_| Drop::Runt)?;
            let vlan = match eth.vlan_count() {
                0 => None,
                // VID 0: a priority tag only (802.1Q Table 9-2), the
                // frame belongs to the untagged interface.
                1 => eth.outer_vid().filter(|&v| v != 0),
                _ => return Err(Drop::VlanUnknown),
            };
            let pcp = eth.vlan_tag(0).map(|t| (t.tci() >> 13) as u8).unwrap_or(0);
            let iface = self.topo.iface_of(port, vlan).ok_or(Drop::VlanUnknown)?;
            let ifc = self.topo.iface(iface).ok_or(Drop::VlanUnknown)?;
            let dst = eth.dst_addr();
            if dst != ifc.mac && !ethernet::is_multicast(&dst) {
                return Err(Drop::NotForUs);
            }
            (L2 { iface, l3: eth.header_len(), pcp, mcast: dst != ifc.mac }, eth.payload_ethertype())
        };
        match ethertype {
            EtherType::IPV4 => self.ipv4(p, l2, now_ns),
            EtherType::IPV6 => self.ipv6(p, l2, now_ns),
            EtherType::ARP => self.arp(p, l2, now_ns),
            EtherType::MAC_CONTROL => self.mac_control(p, port, l2, now_ns),
            _ => Err(Drop::UnknownEthertype),
        }
    }

    // ---------------------------------------------------------- PAUSE / PFC

    /// A received MAC Control frame (802.3 Annex 31B PAUSE, 802.1Qbb PFC):
    /// consumed, never forwarded. On a port that honours them the paused
    /// priorities' data waits in its egress queue ([`crate::pfcrx`]).
    fn mac_control<P: PacketBuffer>(&mut self, p: &P, port: u16, l2: L2, now_ns: u64) -> Result<Verdict, Drop> {
        use crate::wire::pfc::{MacControl, MacControlRepr, DST_MAC};
        let d = p.data();
        // Untagged (802.1Qbb: MAC Control frames carry no tag), to the
        // reserved address or (PAUSE only, 802.3 31B.3.3) the port's own
        // MAC.
        let to_reserved = d[0..6] == DST_MAC;
        if l2.l3 != 14 || (l2.mcast && !to_reserved) {
            return Err(Drop::MalformedMacControl);
        }
        let c = MacControl::new_checked(&d[14..]).map_err(|_| Drop::MalformedMacControl)?;
        let repr = match MacControlRepr::parse(&c) {
            Ok(r) => r,
            Err(crate::wire::Error::Unrecognized) => return Err(Drop::MacControlUnsupported),
            Err(_) => return Err(Drop::MalformedMacControl),
        };
        // 802.1Qbb: PFC goes to the reserved address only.
        if matches!(repr, MacControlRepr::Pfc(_)) && !to_reserved {
            return Err(Drop::MalformedMacControl);
        }
        let Some(Some(state)) = self.pfc_rx.get(usize::from(port)) else { return Err(Drop::PfcNotHonoured) };
        self.counters.local(match state.receive(&repr, now_ns) {
            crate::pfcrx::Received::Pfc => Local::PfcReceived,
            crate::pfcrx::Received::Pause => Local::PauseReceived,
            crate::pfcrx::Received::Ignored => Local::PfcReceivedIgnored,
        });
        Ok(Verdict::Consumed)
    }

    // ------------------------------------------------------------------ ARP

    fn arp<P: PacketBuffer>(&mut self, p: &mut P, l2: L2, now_ns: u64) -> Result<Verdict, Drop> {
        let req = {
            let a = ArpPacket::new_checked(&p.data()[l2.l3..]).map_err(|_| Drop::MalformedArp)?;
            ArpRepr::parse(&a).map_err(|_| Drop::MalformedArp)?
        };
        let sender = req.source_protocol_addr;
        let (mac, port, ours, valid_sender, claimed) = {
            let ifc = self.topo.iface(l2.iface).ok_or(Drop::VlanUnknown)?;
            (
                ifc.mac,
                ifc.port,
                ifc.v4.iter().any(|n| n.addr() == req.target_protocol_addr),
                // In one of the interface's subnets, and not its broadcast
                // address (RFC 1122 s.3.2.1.3: never a source).
                !sender.is_unspecified() && ifc.v4.iter().any(|n| n.contains(&sender) && (n.prefix_len() >= 31 || n.broadcast() != sender)),
                ifc.v4.iter().any(|n| n.addr() == sender),
            )
        };
        if claimed && req.source_hardware_addr != mac {
            return self.arp_conflict(p, l2, sender, mac, port, now_ns);
        }
        let known = self.neigh.get(l2.iface, IpAddr::V4(sender)).is_some();
        if valid_sender && (ours || known) && ethernet::is_unicast(&req.source_hardware_addr) {
            // A reply to one of our addresses answers our request.
            let answer = ours && req.operation == ArpOperation::REPLY;
            self.learn(l2.iface, IpAddr::V4(sender), req.source_hardware_addr, answer);
        }
        if !ours {
            return if known { Ok(Verdict::Consumed) } else { Err(Drop::ArpNotForUs) };
        }
        if req.operation != ArpOperation::REQUEST {
            // `learn` above counted arp-learned if the sender was new.
            return Ok(Verdict::Consumed);
        }
        let reply = req.reply(mac);
        {
            let d = p.data_mut();
            let mut a = ArpPacket::new_unchecked(&mut d[l2.l3..]);
            reply.emit(&mut a);
            let mut eth = EthernetFrame::new_unchecked(&mut d[..]);
            eth.set_dst_addr(req.source_hardware_addr);
            eth.set_src_addr(mac);
        }
        self.counters.local(Local::ArpReply);
        self.reply = true;
        Ok(Verdict::Tx(port))
    }

    /// Another station claims `own`, one of the interface's addresses, in
    /// an ARP packet (RFC 5227 s.2.4): a router does not give up its
    /// address, nor learn it as a neighbour; it defends it (c) with one
    /// broadcast ARP Announcement, at most once per DEFEND_INTERVAL on the
    /// interface (a pair of stations defending the same address must not
    /// loop), built in the received frame.
    fn arp_conflict<P: PacketBuffer>(&mut self, p: &mut P, l2: L2, own: Ipv4Addr, mac: MacAddr, port: u16, now_ns: u64) -> Result<Verdict, Drop> {
        let now = now_ns.max(1);
        match self.arp_defended.iter().position(|e| e.0 == l2.iface) {
            Some(i) if now.saturating_sub(self.arp_defended[i].1) < DEFEND_INTERVAL_NS => return Err(Drop::ArpAddressConflict),
            Some(i) => self.arp_defended[i].1 = now,
            None if self.arp_defended.len() < MAX_DEFENDED => self.arp_defended.push((l2.iface, now)),
            None => return Err(Drop::ArpAddressConflict),
        }
        // An ARP Announcement: a request with our address as sender and
        // target, target hardware address zero (RFC 5227 s.2.3), to the
        // broadcast address.
        let ann = ArpRepr {
            operation: ArpOperation::REQUEST,
            source_hardware_addr: mac,
            source_protocol_addr: own,
            target_hardware_addr: [0; 6],
            target_protocol_addr: own,
        };
        {
            let d = p.data_mut();
            let mut a = ArpPacket::new_unchecked(&mut d[l2.l3..]);
            ann.emit(&mut a);
            let mut eth = EthernetFrame::new_unchecked(&mut d[..]);
            eth.set_dst_addr([0xff; 6]);
            eth.set_src_addr(mac);
        }
        self.counters.local(Local::ArpAddressDefended);
        self.reply = true;
        Ok(Verdict::Tx(port))
    }

    /// A neighbour seen with `mac`; `answer`: in an answer to a
    /// solicitation, which confirms that it is reachable.
    /// Queue `ev` for the control thread once (a repeat still queued is
    /// not queued again), or count `event-queue-full`.
    fn post_event(&mut self, ev: Event) {
        if self.events.contains(&ev) {
            return;
        }
        if self.events.len() < EVENTS_CAP {
            self.events.push(ev);
        } else {
            self.counters.dropped(Drop::EventQueueFull);
        }
    }

    fn learn(&mut self, iface: u16, ip: IpAddr, mac: MacAddr, answer: bool) {
        // A neighbour is a station: never a broadcast, multicast or zero
        // address (the last is `unres::HOLD_MAC`), whatever a packet says.
        if !ethernet::is_unicast(&mac) || mac == [0; 6] {
            return;
        }
        if self.neigh.get(iface, ip).map(|n| n.mac) == Some(mac) {
            if answer && self.neigh.get(iface, ip).is_some_and(|n| n.source == crate::tables::NeighSource::Learned) {
                let ev = Event::NeighbourConfirmed { iface, ip };
                if self.events.contains(&ev) {
                    return;
                }
                if self.events.len() < EVENTS_CAP {
                    self.events.push(ev);
                    self.counters.local(Local::NeighbourConfirmed);
                } else {
                    self.counters.dropped(Drop::EventQueueFull);
                }
            }
            return;
        }
        if self.learned.get(&(iface, ip)).map(|e| e.0) == Some(mac) {
            return;
        }
        // Suppress repeats within one snapshot period.
        if self.events.iter().any(|e| matches!(*e, Event::NeighbourLearned { iface: i, ip: a, mac: m, .. } if (i, a, m) == (iface, ip, mac))) {
            return;
        }
        // Used at once only when the control thread will hear of it.
        if self.events.len() >= EVENTS_CAP {
            self.counters.dropped(Drop::EventQueueFull);
            return;
        }
        self.events.push(Event::NeighbourLearned { iface, ip, mac, answer });
        self.counters.local(if ip.is_ipv4() { Local::ArpLearned } else { Local::NdLearned });
        if self.learned.len() < MAX_LEARNED || self.learned.contains_key(&(iface, ip)) {
            self.learned.insert((iface, ip), (mac, self.neigh_gen));
            self.neigh_epoch = self.neigh_epoch.wrapping_add(1);
            if self.fib.hops().iter().any(|h| h.gateway == Some(ip) && h.iface == iface) {
                self.rebuild_adjacency();
            }
        }
    }

    // ----------------------------------------------------------------- IPv4

    pub(crate) fn ipv4<P: PacketBuffer>(&mut self, p: &mut P, l2: L2, now_ns: u64) -> Result<Verdict, Drop> {
        let (dst, src, ttl, proto, hl, total) = {
            let ip = Ipv4Packet::new_checked(&p.data()[l2.l3..]).map_err(|_| Drop::MalformedIpv4)?;
            if ip.version() != 4 {
                return Err(Drop::MalformedIpv4);
            }
            if !ip.verify_checksum() {
                return Err(Drop::Ipv4Checksum);
            }
            (ip.dst_addr(), ip.src_addr(), ip.ttl(), ip.protocol(), ip.header_len(), usize::from(ip.total_len()))
        };
        // A source that is one of our own addresses is spoofed (or a loop):
        // a martian, never forwarded or answered (as Linux does unless
        // accept_local is set: "martian source").
        // RFC 1812 s.5.3.7: nor a source on network 0, of Class E, or an
        // attached subnet's broadcast address (no single host's).
        let o = src.octets()[0];
        if src.is_multicast() || src.is_broadcast() || src.is_loopback() || o == 0 || o >= 240 || self.topo.is_local4(&src) || self.topo.is_subnet_broadcast4(&src) {
            return Err(Drop::Ipv4Martian);
        }
        self.urpf(l2.iface, |f, i| f.urpf_iface4(src, i))?;
        if self.topo.is_local4(&dst) {
            if Ipv4Packet::new_unchecked(&p.data()[l2.l3..]).is_fragment() {
                return self.reassemble4(p, l2, hl, total, now_ns);
            }
            let v = self.local4(p, l2, src, dst, proto, hl, total, now_ns)?;
            return self.fit_reply(p.data(), v, None);
        }
        // A directed broadcast to any attached subnet is not forwarded
        // (RFC 2644), nor answered with an ICMP error (RFC 1812 s.4.3.2.7).
        if dst.is_multicast() || dst.is_broadcast() || l2.mcast || self.topo.is_subnet_broadcast4(&dst) {
            return Err(Drop::MulticastNotRouted);
        }
        // RFC 1812 s.5.3.7: nor a destination on network 0 or of Class E.
        let o = dst.octets()[0];
        if dst.is_loopback() || o == 0 || o >= 240 {
            return Err(Drop::Ipv4Martian);
        }
        if ttl <= 1 {
            return self.time_exceeded4(p, l2, src, total, now_ns);
        }
        if self.sids.has_policies() {
            if let Some(pi) = self.sids.policy4(dst) {
                return self.srv6_encap(p, l2, pi, total, false, now_ns);
            }
        }
        let Some(hop) = self.fib.route_ip(IpAddr::V4(dst), ip_at(p.data(), l2.l3)) else {
            return self.icmp_error4(p, l2, src, total, now_ns, Icmp4Error::NoRoute);
        };
        let (ifc, mac) = self.resolve_hop(hop, IpAddr::V4(dst), now_ns)?;
        if total > usize::from(ifc.mtu) {
            let mtu = ifc.mtu;
            if Ipv4Packet::new_unchecked(&p.data()[l2.l3..]).dont_frag() {
                return self.icmp_error4(p, l2, src, total, now_ns, Icmp4Error::FragNeeded(mtu));
            }
            // The fragments hash without ports, so on an ECMP route they
            // may take another next hop: cut them to fit both.
            let frag_hop = self.fib.route4(dst, || crate::tables::fragments_hash(ip_at(p.data(), l2.l3), self.fib.seed()));
            let frag_mtu = frag_hop.and_then(|h| self.fib.hop(h)).and_then(|nh| self.topo.iface(nh.iface)).map_or(mtu, |i| i.mtu);
            return self.fragment4(p.data(), l2, total, usize::from(mtu.min(frag_mtu)));
        }
        let (port, out_mac, vlan) = (ifc.port, ifc.mac, ifc.vlan);
        {
            let mut ip = Ipv4Packet::new_unchecked(&mut p.data_mut()[l2.l3..]);
            ip.decrement_ttl_incremental();
        }
        trim_to_datagram(p, l2, total);
        write_l2(p, l2, mac, out_mac, vlan, EtherType::IPV4)?;
        Ok(Verdict::Tx(port))
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn local4<P: PacketBuffer>(&mut self, p: &mut P, l2: L2, src: Ipv4Addr, dst: Ipv4Addr, proto: IpProtocol, hl: usize, total: usize, now_ns: u64) -> Result<Verdict, Drop> {
        if proto != IpProtocol::ICMP {
            return Err(Drop::LocalUnsupported);
        }
        // Octets after the datagram (Ethernet padding, or anything else) are
        // no part of the reply built in place.
        trim_to_datagram(p, l2, total);
        {
            let d = p.data_mut();
            let end = l2.l3 + total;
            let icmp_buf = d.get_mut(l2.l3 + hl..end).ok_or(Drop::MalformedIpv4)?;
            let mut icmp = Icmpv4Packet::new_checked(icmp_buf).map_err(|_| Drop::MalformedIcmp)?;
            if !icmp.verify_checksum() {
                return Err(Drop::MalformedIcmp);
            }
            if icmp.msg_type() == Icmpv4Message::ECHO_REPLY && icmp.msg_code() == 0 {
                let (seq, ident) = (icmp.echo_seq_no(), icmp.echo_ident());
                let data = icmp.data().get(..crate::rttprobe::PROBE_DATA).and_then(|d| d.try_into().ok());
                return self.echo_reply(IpAddr::V4(src), ident, seq, data, now_ns);
            }
            if icmp.msg_type() != Icmpv4Message::ECHO_REQUEST || icmp.msg_code() != 0 {
                return Err(Drop::LocalUnsupported);
            }
            icmp.echo_request_to_reply();
            let mut ip = Ipv4Packet::new_unchecked(&mut d[l2.l3..]);
            ip.set_src_addr(dst);
            ip.set_dst_addr(src);
            ip.set_ttl(64);
            ip.fill_checksum();
        }
        let v = self.output4(p, l2, src)?;
        self.counters.local(Local::EchoReply4);
        self.reply = true;
        Ok(v)
    }

    /// Send a locally answered IPv4 packet (already at `l2.l3`) to `dst`.
    fn output4<P: PacketBuffer>(&mut self, p: &mut P, l2: L2, dst: Ipv4Addr) -> Result<Verdict, Drop> {
        let path = self.reply_path4(p, l2, dst)?;
        path.write(p, l2, EtherType::IPV4)
    }

    /// Where a packet the router answers to `dst` leaves: the FIB's
    /// interface and neighbour. Replies never wait for resolution: they
    /// fall back to the frame's sender on the arrival interface.
    fn reply_path4<P: PacketBuffer>(&mut self, p: &P, l2: L2, dst: Ipv4Addr) -> Result<ReplyPath, Drop> {
        let hop = self.fib.route_ip(IpAddr::V4(dst), ip_at(p.data(), l2.l3)).ok_or(Drop::NoRoute)?;
        let nh = *self.fib.hop(hop).ok_or(Drop::NoRoute)?;
        match self.resolve(&nh, IpAddr::V4(dst), self.reply_resolve_at) {
            Ok((ifc, mac)) => Ok(ReplyPath { iface: nh.iface, port: ifc.port, src_mac: ifc.mac, vlan: ifc.vlan, mac }),
            Err(_) => self.back_to_sender(p, l2),
        }
    }

    fn back_to_sender<P: PacketBuffer>(&self, p: &P, l2: L2) -> Result<ReplyPath, Drop> {
        let ifc = self.topo.iface(l2.iface).ok_or(Drop::VlanUnknown)?;
        let src = EthernetFrame::new_unchecked(p.data()).src_addr();
        if src == crate::unres::HOLD_MAC || src == ifc.mac {
            // Not a station address (and the mark of a frame to hold), or
            // our own (a frame the router built itself).
            return Err(Drop::NeighbourMiss);
        }
        Ok(ReplyPath { iface: l2.iface, port: ifc.port, src_mac: ifc.mac, vlan: ifc.vlan, mac: src })
    }

    /// Turn an expired packet into ICMP Time Exceeded (RFC 792, RFC 1812
    /// s.4.3.2.3: as much of the original as fits in 576 bytes).
    fn time_exceeded4<P: PacketBuffer>(&mut self, p: &mut P, l2: L2, src: Ipv4Addr, total: usize, now_ns: u64) -> Result<Verdict, Drop> {
        self.icmp_error4(p, l2, src, total, now_ns, Icmp4Error::TimeExceeded)
    }

    /// Turn a packet the router cannot forward into an ICMP error to its
    /// source (RFC 792, RFC 1191, RFC 1812 s.4.3.2.3: as much of the
    /// original as fits in 576 bytes; s.4.3.2.7: not about non-initial
    /// fragments or ICMP errors; s.4.3.2.8: rate-limited). When none is
    /// sent, the packet is dropped under the error's reason.
    pub(crate) fn icmp_error4<P: PacketBuffer>(&mut self, p: &mut P, l2: L2, src: Ipv4Addr, total: usize, now_ns: u64, e: Icmp4Error) -> Result<Verdict, Drop> {
        let (ty, code, rest, sent, why) = match e {
            Icmp4Error::TimeExceeded => (Icmpv4Message::TIME_EXCEEDED, 0, 0, Local::TimeExceeded4, Drop::TtlExpired),
            Icmp4Error::ReasmTimeExceeded => (Icmpv4Message::TIME_EXCEEDED, 1, 0, Local::TimeExceeded4, Drop::ReasmTimeout),
            // Code 0, network unreachable (RFC 1812 s.5.2.7.1).
            Icmp4Error::NoRoute => (Icmpv4Message::DST_UNREACHABLE, 0, 0, Local::Unreachable4, Drop::NoRoute),
            // Code 4, fragmentation needed and DF set, with the next-hop
            // MTU in the low 16 bits (RFC 1191 s.4).
            Icmp4Error::FragNeeded(mtu) => (Icmpv4Message::DST_UNREACHABLE, 4, u32::from(mtu), Local::FragNeeded4, Drop::MtuExceeded),
            // Code 1, host unreachable: address resolution failed (RFC
            // 1812 s.5.2.7.1).
            Icmp4Error::HostUnreachable => (Icmpv4Message::DST_UNREACHABLE, 1, 0, Local::HostUnreachable4, Drop::NeighbourTimeout),
        };
        // RFC 1812 s.4.3.2.7: nor about a datagram sent as a link-layer
        // broadcast / multicast, or to an IP multicast or the limited
        // broadcast address, or from an address that is not one host's.
        let ip = &p.data()[l2.l3..l2.l3 + total];
        let not_one_host = |a: &[u8]| a[0] == 0 || a[0] == 127 || a[0] >= 224 || self.topo.is_subnet_broadcast4(&Ipv4Addr::new(a[0], a[1], a[2], a[3]));
        if l2.mcast || ip.len() < 20 || ip[16] >= 224 || not_one_host(&ip[12..16]) || self.topo.is_subnet_broadcast4(&Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19])) {
            return Err(why);
        }
        if !icmp4_error_allowed(ip) {
            return Err(why);
        }
        // RFC 1812 s.4.3.2.4: from an address of the interface the error
        // leaves by (the arrival interface's when that one has none).
        let path = self.reply_path4(p, l2, src)?;
        let our = self.topo.iface(path.iface).and_then(|i| i.v4_for(src)).or_else(|| self.topo.iface(l2.iface).and_then(|i| i.v4_for(src))).ok_or(why)?;
        // The token last: an error that cannot be sent does not spend it.
        if !self.icmp_bucket.take(now_ns) {
            return Err(why);
        }
        let quote = total.min(576 - 28).min(p.len() - l2.l3);
        if !p.set_len(l2.l3 + 28 + quote) {
            return Err(Drop::NoHeadroom);
        }
        {
            let d = p.data_mut();
            d.copy_within(l2.l3..l2.l3 + quote, l2.l3 + 28);
            let icmp_len = 8 + quote;
            {
                let mut icmp = Icmpv4Packet::new_unchecked(&mut d[l2.l3 + 20..l2.l3 + 20 + icmp_len]);
                icmp.set_msg_type(ty);
                icmp.set_msg_code(code);
                icmp.set_rest_of_header(rest);
                icmp.fill_checksum();
            }
            write_ipv4_header(&mut d[l2.l3..], our, src, IpProtocol::ICMP, (20 + icmp_len) as u16);
        }
        let v = path.write(p, l2, EtherType::IPV4)?;
        self.counters.local(sent);
        self.reply = true;
        Ok(v)
    }

    // ----------------------------------------------------------------- IPv6

    pub(crate) fn ipv6<P: PacketBuffer>(&mut self, p: &mut P, l2: L2, now_ns: u64) -> Result<Verdict, Drop> {
        let (dst, src, hop, total) = {
            let ip = Ipv6Packet::new_checked(&p.data()[l2.l3..]).map_err(|_| Drop::MalformedIpv6)?;
            if ip.version() != 6 {
                return Err(Drop::MalformedIpv6);
            }
            (ip.dst_addr(), ip.src_addr(), ip.hop_limit(), 40 + usize::from(ip.payload_len()))
        };
        // RFC 6890 / RFC 4291 s.2.5.5.2: an IPv4-mapped address is not a
        // source (nor a destination, below) on the wire.
        if src.is_multicast() || src.is_loopback() || is_v4_mapped(&src) || self.topo.is_local6(&src) {
            return Err(Drop::Ipv6Martian);
        }
        // Link-local and unspecified sources (ND, DAD) have no route: they
        // are never forwarded, and always on the link.
        if !src.is_unspecified() && !crate::tables::is_link_local(&src) {
            self.urpf(l2.iface, |f, i| f.urpf_iface6(src, i))?;
        }
        if dst.is_multicast() && p.data().get(l2.l3 + 6) == Some(&0) {
            if let Some(v) = self.mld_rx(p, l2, src, dst, hop, total, now_ns)? {
                return Ok(v);
            }
        }
        if self.mc.is_proxy(&dst) {
            // End.MT reverse path: a receiver's response to a group's Proxy
            // Address is aggregated here; the group's data is observed.
            // Reached after a decapsulation on another worker: the owner's.
            if !self.state_owner {
                return Ok(Verdict::ToOwner);
            }
            if let Some(v) = self.mc_rx(p, l2, dst, total, now_ns)? {
                return Ok(v);
            }
        }
        if dst.is_multicast() && crate::tables::routable_multicast6(&dst) {
            return self.multicast6(p, l2, src, dst, hop, total, now_ns);
        }
        if self.sids.get(&dst).is_some() {
            return self.srv6_local(p, l2, src, dst, hop, total, now_ns);
        }
        if self.topo.accepts6(&dst) {
            let v = self.local6(p, l2, src, dst, hop, total, now_ns)?;
            return self.fit_reply(p.data(), v, None);
        }
        if dst.is_multicast() || l2.mcast {
            return Err(Drop::MulticastNotRouted);
        }
        // RFC 4291 s.2.5.2: a packet from :: is never forwarded.
        if dst.is_loopback() || dst.is_unspecified() || src.is_unspecified() || is_v4_mapped(&dst) || crate::tables::is_link_local(&dst) || crate::tables::is_link_local(&src) {
            return Err(Drop::Ipv6Martian);
        }
        if hop <= 1 {
            return self.time_exceeded6(p, l2, src, total, now_ns);
        }
        // Before an SR policy takes it: a FANN message steered into a
        // tunnel is forwarded by this node all the same.
        self.fann_scope(&mut p.data_mut()[l2.l3..], total)?;
        if self.sids.has_policies() {
            if let Some(pi) = self.sids.policy6(dst) {
                return self.srv6_encap(p, l2, pi, total, true, now_ns);
            }
        }
        let Some(hop) = self.fib.route_ip(IpAddr::V6(dst), ip_at(p.data(), l2.l3)) else {
            return self.icmp_error6(p, l2, src, total, now_ns, Icmp6Error::NoRoute);
        };
        let (ifc, mac) = self.resolve_hop(hop, IpAddr::V6(dst), now_ns)?;
        if total > usize::from(ifc.mtu) {
            let mtu = u32::from(ifc.mtu);
            return self.icmp_error6(p, l2, src, total, now_ns, Icmp6Error::TooBig(mtu));
        }
        let (port, out_mac, vlan) = (ifc.port, ifc.mac, ifc.vlan);
        {
            let d = &mut p.data_mut()[l2.l3..];
            Ipv6Packet::new_unchecked(&mut d[..]).decrement_hop_limit();
        }
        trim_to_datagram(p, l2, total);
        write_l2(p, l2, mac, out_mac, vlan, EtherType::IPV6)?;
        Ok(Verdict::Tx(port))
    }

    /// FANN scoping (draft-hzh-fantel-wan-tunnel s.5.1.2) for an IPv6
    /// packet this node forwards (`d` from its IPv6 header, `total` its
    /// length): a FANN message directly in IPv6 has its own Hop Limit,
    /// decremented by every forwarding node and discarded at zero. Only a
    /// well-formed FANN message (Version 1, Code 0 or 1, exactly as long as
    /// its bitmap says) is one; an ICMPv6 message of the FANN type, or a
    /// UDP datagram to the FANN port, that says Version 1 but whose lengths
    /// do not add up is discarded (s.6: MUST be silently discarded; counted
    /// as `fann-malformed`). Other
    /// ICMPv6 messages of the experimental type (another version, RFC 4443
    /// s.2.1) and other UDP traffic to the port (an ephemeral port to most
    /// hosts) are forwarded untouched.
    fn fann_scope(&self, d: &mut [u8], total: usize) -> Result<(), Drop> {
        use crate::wire::fann;
        if d.get(6) == Some(&58) && d.get(40) == Some(&self.sids.params.icmpv6_fann_type) {
            let end = total.min(d.len());
            let says_fann = d.get(41).is_some_and(|&c| c <= 1) && d.get(44) == Some(&fann::VERSION);
            match fann::Packet::new_checked(&mut d[40..end]) {
                Ok(mut f) => {
                    if f.msg_code() <= 1 && f.message().version() == fann::VERSION {
                        match f.decrement_hop_limit() {
                            Ok(h) if h > 0 => {}
                            _ => return Err(Drop::FannHopLimit),
                        }
                    }
                }
                Err(_) if says_fann => return Err(Drop::FannMalformed),
                Err(_) => {}
            }
        } else if d.get(6) == Some(&17) && d.get(42..44) == Some(&self.sids.params.fann_udp_port.to_be_bytes()[..]) {
            // The UDP variant (s.5.2) the same way ("processed identically
            // to the ICMPv6 variant"), the UDP checksum patched: a datagram
            // to the FANN port whose message says Version 1 but whose
            // lengths do not add up is discarded too.
            let end = total.min(d.len());
            if let Some(u) = d.get_mut(40..end) {
                let says_fann = u.len() > 8 && usize::from(u16::from_be_bytes([u[4], u[5]])) == u.len() && u[8] == fann::VERSION;
                match fann::decrement_udp_hop_limit(u) {
                    Ok(Some(h)) if h > 0 => {}
                    Ok(_) => return Err(Drop::FannHopLimit),
                    Err(_) if says_fann => return Err(Drop::FannMalformed),
                    Err(_) => {}
                }
            }
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn local6<P: PacketBuffer>(&mut self, p: &mut P, l2: L2, src: Ipv6Addr, dst: Ipv6Addr, hop: u8, total: usize, now_ns: u64) -> Result<Verdict, Drop> {
        let (proto, off) = {
            let d = p.data();
            let pkt = d.get(l2.l3..l2.l3 + total).ok_or(Drop::MalformedIpv6)?;
            let nh = Ipv6Packet::new_unchecked(pkt).next_header();
            // RFC 8200 s.4.5, RFC 7112 s.5: a first fragment must hold the
            // whole header chain through the upper-layer header; one that
            // does not is discarded with Parameter Problem code 3, pointer
            // 0 (only for a Fragment header right after the IPv6 header:
            // no other is reassembled).
            let first_fragment = nh == IpProtocol::IPV6_FRAG && pkt.get(42..44).is_some_and(|o| u16::from_be_bytes([o[0], o[1]]) & 0xfff8 == 0);
            let incomplete = Icmp6Error::ParamProblem { code: 3, pointer: 0, why: Drop::ReasmChainIncomplete };
            let chain = match walk_ext_chain(nh, pkt, 40) {
                Ok(c) => c,
                Err(crate::wire::Error::Truncated) if first_fragment && pkt.len() >= 48 => return self.icmp_error6(p, l2, src, total, now_ns, incomplete),
                Err(_) => return Err(Drop::MalformedIpv6),
            };
            if first_fragment && chain.fragment.is_some_and(|f| f.offset == 40) && pkt.len() < chain.upper_offset + upper_header_len(chain.upper_protocol) {
                return self.icmp_error6(p, l2, src, total, now_ns, incomplete);
            }
            // A routing header with segments left, at an address that is no
            // SID: RFC 8754 s.4.3.2 (an SRH: Parameter Problem code 0 at
            // the Segments Left), RFC 8200 s.4.4 (another type: at the
            // Routing Type).
            if let Some(rh) = chain.routing.filter(|r| r.segments_left > 0) {
                let (field, why) = if rh.routing_type == crate::wire::srh::ROUTING_TYPE { (3, Drop::SrhNotASid) } else { (2, Drop::SrhRoutingType) };
                let pointer = u32::try_from(rh.offset + field).unwrap_or(u32::MAX);
                return self.icmp_error6(p, l2, src, total, now_ns, Icmp6Error::ParamProblem { code: 0, pointer, why });
            }
            if let Some(f) = chain.fragment {
                // Right after the IPv6 header (what hosts send) or after
                // the extension headers of the unfragmentable part (an SRH
                // at its last segment, options).
                return self.reassemble6(p, l2, total, f, crate::reasm::ReasmFor::Local, now_ns);
            }
            (chain.upper_protocol, chain.upper_offset)
        };
        if proto == IpProtocol::UDP && self.sids.pe_known.is_some() {
            return self.pe_udp(p, l2, src, dst, off, total);
        }
        if proto != IpProtocol::ICMPV6 {
            return Err(Drop::LocalUnsupported);
        }
        let icmp_len = total - off;
        let (ty, code) = {
            let d = p.data();
            let m = &d[l2.l3 + off..l2.l3 + total];
            if m.len() < 8 {
                return Err(Drop::MalformedIcmp);
            }
            let sum = checksum::combine(checksum::pseudo_v6(&src.octets(), &dst.octets(), 58, icmp_len as u32), checksum::sum(m));
            if checksum::fold(sum) != 0xffff {
                return Err(Drop::MalformedIcmp);
            }
            (m[0], m[1])
        };
        match ty {
            128 if code == 0 => self.echo6(p, l2, src, dst, off, total),
            129 if code == 0 => {
                let (ident, seq, data) = {
                    let m = &p.data()[l2.l3 + off..l2.l3 + total];
                    (u16::from_be_bytes([m[4], m[5]]), u16::from_be_bytes([m[6], m[7]]), m.get(8..8 + crate::rttprobe::PROBE_DATA).and_then(|d| d.try_into().ok()))
                };
                self.echo_reply(IpAddr::V6(src), ident, seq, data, now_ns)
            }
            // RFC 6980 s.5: ND in a fragmented packet is ignored.
            133..=137 if self.in_reassembly => Err(Drop::NdFragmented),
            135 => self.neighbour_solicit(p, l2, src, dst, hop, off, total),
            136 => self.neighbour_advert(p, l2, dst, hop, off, total, now_ns),
            t if self.sids.pe_known.is_some() && (t == self.sids.params.icmpv6_fann_type || t == self.sids.params.icmpv6_lhcnp_type) => {
                let note = {
                    let m = &p.data()[l2.l3 + off..l2.l3 + total];
                    crate::fann::PeNote::from_icmpv6(m, src, &self.sids.params).ok_or(Drop::FannMalformed)?
                };
                self.pe_note(l2.iface, src, note)
            }
            // Router Solicitation / Advertisement, redirects: not a host, not
            // an RA sender.
            _ => Err(Drop::LocalUnsupported),
        }
    }

    /// An MLD message (ICMPv6 type 130, 131, 132 or 143 after a Hop-by-Hop
    /// header, to a multicast address): checked as RFC 9777 s.5.1.14 and
    /// s.5.2.13 say (Hop Limit 1, a link-local source; a report from ::
    /// is of no use to a router) and handed to the control thread, or
    /// dropped by name. None: not MLD.
    #[allow(clippy::too_many_arguments)]
    fn mld_rx<P: PacketBuffer>(&mut self, p: &mut P, l2: L2, src: Ipv6Addr, dst: Ipv6Addr, hop: u8, total: usize, now_ns: u64) -> Result<Option<Verdict>, Drop> {
        let msg = {
            let d = p.data();
            let pkt = d.get(l2.l3..l2.l3 + total).ok_or(Drop::MalformedIpv6)?;
            let chain = walk_ext_chain(IpProtocol::HOP_BY_HOP, pkt, 40).map_err(|_| Drop::MalformedIpv6)?;
            if chain.upper_protocol != IpProtocol::ICMPV6 || chain.fragment.is_some() {
                return Ok(None);
            }
            let m = &pkt[chain.upper_offset..];
            if !m.first().is_some_and(|&t| crate::wire::mld::is_mld(t)) {
                return Ok(None);
            }
            // RFC 9777 s.6.2 / s.7.4 (as RFC 3810): a link-local source,
            // Hop Limit 1 and the Router Alert option, or dropped.
            if hop != 1 || !crate::tables::is_link_local(&src) || !crate::wire::mld::has_router_alert(&pkt[40..]) {
                return Err(Drop::MldInvalid);
            }
            if !self.topo.mld.contains(&l2.iface) {
                return Err(Drop::MldNotEnabled);
            }
            let sum = checksum::combine(checksum::pseudo_v6(&src.octets(), &dst.octets(), 58, m.len() as u32), checksum::sum(m));
            if m.len() < 8 || checksum::fold(sum) != 0xffff {
                return Err(Drop::MalformedIcmp);
            }
            if !self.mld_bucket.take(now_ns) {
                return Err(Drop::MldRateLimited);
            }
            if self.events.len() >= EVENTS_CAP {
                return Err(Drop::EventQueueFull);
            }
            Box::<[u8]>::from(m)
        };
        self.events.push(Event::Mld { iface: l2.iface, src, msg });
        Ok(Some(Verdict::Consumed))
    }

    /// A UDP datagram to this node: a FANN message on the configured port
    /// (draft-hzh-fantel-wan-tunnel s.5.2) for the ingress PE.
    fn pe_udp<P: PacketBuffer>(&mut self, p: &mut P, l2: L2, src: Ipv6Addr, dst: Ipv6Addr, off: usize, total: usize) -> Result<Verdict, Drop> {
        let note = {
            let u = p.data().get(l2.l3 + off..l2.l3 + total).ok_or(Drop::MalformedIpv6)?;
            if u.len() < 8 || u16::from_be_bytes([u[2], u[3]]) != self.sids.params.fann_udp_port {
                return Err(Drop::LocalUnsupported);
            }
            let ulen = usize::from(u16::from_be_bytes([u[4], u[5]]));
            // RFC 8200 s.8.1: the checksum is mandatory over IPv6.
            if ulen < 8 || ulen > u.len() || u[6..8] == [0, 0] {
                return Err(Drop::FannMalformed);
            }
            let u = &u[..ulen];
            let sum = checksum::combine(checksum::pseudo_v6(&src.octets(), &dst.octets(), 17, ulen as u32), checksum::sum(u));
            if checksum::fold(sum) != 0xffff {
                return Err(Drop::FannMalformed);
            }
            crate::fann::PeNote::from_udp_payload(&u[8..], src).ok_or(Drop::FannMalformed)?
        };
        self.pe_note(l2.iface, src, note)
    }

    /// A parsed notification for the control thread, if its originating
    /// node is known and sent it (s.6: from its own control-plane address).
    pub(crate) fn pe_note(&mut self, iface: u16, src: Ipv6Addr, note: crate::fann::PeNote) -> Result<Verdict, Drop> {
        let node = note.originating_node();
        let known = self.sids.pe_known.as_deref().unwrap_or(&[]);
        if node != src || !known.contains(&node) {
            return Err(Drop::FannUnknownSource);
        }
        if self.sids.pe_ifaces.as_ref().is_some_and(|i| !i.contains(&iface)) {
            return Err(Drop::FannWrongInterface);
        }
        if self.events.len() >= EVENTS_CAP {
            return Err(Drop::EventQueueFull);
        }
        self.events.push(Event::PeNotification(note));
        Ok(Verdict::Consumed)
    }

    /// An Echo Reply (checksum verified) to this node: handed to the
    /// control thread when it answers an RTT probe, else dropped by name.
    fn echo_reply(&mut self, from: IpAddr, ident: u16, seq: u16, data: Option<[u8; crate::rttprobe::PROBE_DATA]>, now_ns: u64) -> Result<Verdict, Drop> {
        let (Some(id), Some(data)) = (self.topo.echo_probe_id, data) else {
            return Err(Drop::EchoReplyUnexpected);
        };
        if ident != id {
            return Err(Drop::EchoReplyUnexpected);
        }
        if !self.echo_bucket.take(now_ns) {
            return Err(Drop::EchoReplyRateLimited);
        }
        if self.events.len() >= EVENTS_CAP {
            return Err(Drop::EventQueueFull);
        }
        let at_ns = self.reply_clock.as_ref().map_or(now_ns, |c| c().max(now_ns));
        self.events.push(Event::EchoReply { from, seq, data, at_ns });
        Ok(Verdict::Consumed)
    }

    fn echo6<P: PacketBuffer>(&mut self, p: &mut P, l2: L2, src: Ipv6Addr, dst: Ipv6Addr, off: usize, total: usize) -> Result<Verdict, Drop> {
        let ifc = self.topo.iface(l2.iface).ok_or(Drop::VlanUnknown)?;
        // To a group or to a Subnet-Router anycast address: from a unicast
        // address of the interface (RFC 4443 s.4.2).
        let our = if dst.is_multicast() || (!self.topo.is_local6(&dst) && self.topo.is_subnet_anycast6(&dst)) { ifc.v6_for(src) } else { dst };
        let body_len = total - off;
        {
            // Rebuild as a plain IPv6 + ICMPv6 packet (extension headers of
            // the request are not echoed).
            let d = p.data_mut();
            d.copy_within(l2.l3 + off..l2.l3 + total, l2.l3 + 40);
            let m = &mut d[l2.l3 + 40..l2.l3 + 40 + body_len];
            m[0] = 129;
            m[2] = 0;
            m[3] = 0;
            write_ipv6_header(&mut d[l2.l3..], our, src, 58, body_len as u16, 64);
            fill_icmpv6_checksum(&mut d[l2.l3..l2.l3 + 40 + body_len]);
        }
        if !p.set_len(l2.l3 + 40 + body_len) {
            return Err(Drop::NoHeadroom);
        }
        let v = self.output6(p, l2, src)?;
        self.counters.local(Local::EchoReply6);
        self.reply = true;
        Ok(v)
    }

    #[allow(clippy::too_many_arguments)]
    fn neighbour_solicit<P: PacketBuffer>(&mut self, p: &mut P, l2: L2, src: Ipv6Addr, dst: Ipv6Addr, hop: u8, off: usize, total: usize) -> Result<Verdict, Drop> {
        // RFC 4861 s.7.1.1 validation.
        if hop != 255 || total - off < 24 {
            return Err(Drop::MalformedNd);
        }
        let (target, sllao) = {
            let m = &p.data()[l2.l3 + off..l2.l3 + total];
            if m[1] != 0 {
                return Err(Drop::MalformedNd);
            }
            let target = Ipv6Addr::from(<[u8; 16]>::try_from(&m[8..24]).unwrap_or([0; 16]));
            (target, nd_lladdr(&m[24..], 1)?)
        };
        if target.is_multicast() || (src.is_unspecified() && (dst != solicited_node(&target) || sllao.is_some())) {
            return Err(Drop::MalformedNd);
        }
        // A link-layer address that is no station's (broadcast, multicast,
        // zero): nothing to learn, nobody to answer.
        if sllao.is_some_and(|m| !ethernet::is_unicast(&m) || m == [0; 6]) {
            return Err(Drop::MalformedNd);
        }
        let ifc = self.topo.iface(l2.iface).ok_or(Drop::VlanUnknown)?;
        // Our unicast addresses, and the Subnet-Router anycast addresses of
        // the interface's prefixes (RFC 4291 s.2.6.1), answered with
        // Override clear (RFC 4861 s.7.2.4) from a unicast address of the
        // interface. (Without the random delay of up to
        // MAX_ANYCAST_DELAY_TIME s.7.2.7 suggests: only this router answers
        // for it on this link.)
        let unicast = target == ifc.link_local || ifc.v6.iter().any(|n| n.addr() == target);
        if !unicast && !ifc.v6.iter().any(|n| n.prefix_len() < 127 && n.network() == target) {
            return Err(Drop::LocalUnsupported);
        }
        let na_src = if unicast { target } else { ifc.v6_for(src) };
        let our_mac = ifc.mac;
        let port = ifc.port;
        let vlan = ifc.vlan;
        let src_on_link = on_link6(ifc, &src);
        if let Some(mac) = sllao {
            // RFC 4861 s.7.2.3 has the sender cached; only when it is on
            // the link (link-local or in one of the interface's
            // prefixes): an off-link source would only fill the table.
            if src_on_link {
                self.learn(l2.iface, IpAddr::V6(src), mac, false);
            } else {
                self.counters.local(Local::NdSourceOffLink);
            }
        }
        let frame_src = EthernetFrame::new_unchecked(p.data()).src_addr();
        let (to, to_mac, solicited) = if src.is_unspecified() {
            let all = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);
            (all, ethernet::ipv6_multicast_mac(&all), false)
        } else {
            (src, sllao.unwrap_or(frame_src), true)
        };
        // NA: R (router), S (solicited), O (override); target; TLLAO.
        let body_len = 32usize;
        if !p.set_len(l2.l3 + 40 + body_len) {
            return Err(Drop::NoHeadroom);
        }
        {
            let d = p.data_mut();
            let m = &mut d[l2.l3 + 40..l2.l3 + 40 + body_len];
            m[0] = 136;
            m[1] = 0;
            m[2] = 0;
            m[3] = 0;
            m[4] = 0x80 | if solicited { 0x40 } else { 0 } | if unicast { 0x20 } else { 0 };
            m[5..8].fill(0);
            m[8..24].copy_from_slice(&target.octets());
            m[24] = 2;
            m[25] = 1;
            m[26..32].copy_from_slice(&our_mac);
            write_ipv6_header(&mut d[l2.l3..], na_src, to, 58, body_len as u16, 255);
            fill_icmpv6_checksum(&mut d[l2.l3..l2.l3 + 40 + body_len]);
        }
        write_l2(p, l2, to_mac, our_mac, vlan, EtherType::IPV6)?;
        self.counters.local(Local::NdAdvert);
        self.reply = true;
        Ok(Verdict::Tx(port))
    }

    /// A Neighbor Advertisement (RFC 4861 s.7.1.2 validation, s.7.2.5
    /// cache update). The REACHABLE / STALE states are the control
    /// thread's (NUD, [`crate::nud`]): an advertisement that must not
    /// change a known entry's address is not learned, and tells the
    /// control thread to make a REACHABLE entry STALE.
    #[allow(clippy::too_many_arguments)]
    fn neighbour_advert<P: PacketBuffer>(&mut self, p: &mut P, l2: L2, dst: Ipv6Addr, hop: u8, off: usize, total: usize, now_ns: u64) -> Result<Verdict, Drop> {
        if hop != 255 || total - off < 24 {
            return Err(Drop::MalformedNd);
        }
        let (target, tllao) = {
            let m = &p.data()[l2.l3 + off..l2.l3 + total];
            if m[1] != 0 {
                return Err(Drop::MalformedNd);
            }
            let target = Ipv6Addr::from(<[u8; 16]>::try_from(&m[8..24]).unwrap_or([0; 16]));
            (target, nd_lladdr(&m[24..], 2)?)
        };
        let flags = p.data()[l2.l3 + off + 4];
        let (solicited, over) = (flags & 0x40 != 0, flags & 0x20 != 0);
        // s.7.1.2: "If the IP Destination Address is a multicast address
        // the Solicited flag is zero."
        if target.is_multicast() || (solicited && dst.is_multicast()) {
            return Err(Drop::MalformedNd);
        }
        let ifc = self.topo.iface(l2.iface).ok_or(Drop::VlanUnknown)?;
        if !on_link6(ifc, &target) {
            return Err(Drop::NdAdvertOffLink);
        }
        // Another station advertises one of our addresses: a duplicate
        // the router's own DAD did not see (RFC 4862 s.5.4.4), not a
        // neighbour.
        if target == ifc.link_local || ifc.v6.iter().any(|n| n.addr() == target) {
            return Err(Drop::NdAddressConflict);
        }
        // RFC 4861 s.7.2.5: an advertisement for an address with no entry
        // is discarded unless it answers a solicitation (this worker's or
        // another's: the reply may arrive on any RX queue), sent within
        // the time an INCOMPLETE entry waits; then it creates the entry.
        let key = (l2.iface, IpAddr::V6(target));
        let cached = self.neigh.get(key.0, key.1).map(|n| n.mac).or_else(|| self.learned.get(&key).map(|e| e.0));
        if cached.is_none() && !(solicited && self.solicit_log.recent(key.0, key.1, now_ns)) {
            return Err(Drop::NdAdvertUnsolicited);
        }
        let mac = match (tllao, cached) {
            // s.7.2.5: no Target Link-Layer Address option changes no
            // address; a solicited one confirms the entry it has.
            (None, Some(m)) => m,
            // An entry being resolved "SHOULD silently discard" it.
            (None, None) => return Err(Drop::NdAdvertNoTargetLladdr),
            // Override clear and another address: "MUST NOT update the
            // cache" (nor confirm it).
            (Some(m), Some(c)) if !over && m != c => {
                self.counters.local(Local::NdAdvertNoOverride);
                if self.neigh.get(key.0, key.1).is_some_and(|n| n.source == crate::tables::NeighSource::Learned) {
                    self.post_event(Event::NeighbourSuspect { iface: key.0, ip: key.1 });
                }
                return Ok(Verdict::Consumed);
            }
            (Some(m), _) => m,
        };
        self.learn(l2.iface, IpAddr::V6(target), mac, solicited);
        Ok(Verdict::Consumed)
    }

    fn output6<P: PacketBuffer>(&mut self, p: &mut P, l2: L2, dst: Ipv6Addr) -> Result<Verdict, Drop> {
        let path = self.reply_path6(p, l2, dst)?;
        path.write(p, l2, EtherType::IPV6)
    }

    /// [`Self::reply_path4`] for IPv6: a link-local destination is on the
    /// arrival interface; without a route, back to the frame's sender.
    fn reply_path6<P: PacketBuffer>(&mut self, p: &P, l2: L2, dst: Ipv6Addr) -> Result<ReplyPath, Drop> {
        let nh = if crate::tables::is_link_local(&dst) {
            Some(NextHop { iface: l2.iface, gateway: None })
        } else {
            self.fib.route_ip(IpAddr::V6(dst), ip_at(p.data(), l2.l3)).and_then(|h| self.fib.hop(h)).copied()
        };
        if let Some(nh) = nh {
            if let Ok((ifc, mac)) = self.resolve(&nh, IpAddr::V6(dst), self.reply_resolve_at) {
                return Ok(ReplyPath { iface: nh.iface, port: ifc.port, src_mac: ifc.mac, vlan: ifc.vlan, mac });
            }
        }
        self.back_to_sender(p, l2)
    }

    /// ICMPv6 Time Exceeded (RFC 4443 s.3.3): as much of the original as fits
    /// in the minimum MTU of 1280.
    pub(crate) fn time_exceeded6<P: PacketBuffer>(&mut self, p: &mut P, l2: L2, src: Ipv6Addr, total: usize, now_ns: u64) -> Result<Verdict, Drop> {
        self.icmp_error6(p, l2, src, total, now_ns, Icmp6Error::TimeExceeded)
    }

    /// Turn a packet the router cannot forward into an ICMPv6 error to its
    /// source (RFC 4443: as much of the original as fits in the minimum
    /// MTU of 1280, s.2.4 (e): not about ICMPv6 errors, s.2.4 (f):
    /// rate-limited). When none is sent, the packet is dropped under the
    /// error's reason.
    pub(crate) fn icmp_error6<P: PacketBuffer>(&mut self, p: &mut P, l2: L2, src: Ipv6Addr, total: usize, now_ns: u64, e: Icmp6Error) -> Result<Verdict, Drop> {
        // RFC 4443 s.2.4 (e): no error message for a packet to an IPv6
        // multicast address or sent as a link-layer multicast, except
        // Packet Too Big and Parameter Problem code 2.
        let exempt = matches!(e, Icmp6Error::TooBig(_) | Icmp6Error::ParamProblem { code: 2, .. });
        let to_multicast = l2.mcast || p.data().get(l2.l3 + 24) == Some(&0xff);
        let (head, sent, why) = match e {
            Icmp6Error::TimeExceeded => ([3, 0, 0, 0, 0, 0, 0, 0], Local::TimeExceeded6, Drop::TtlExpired),
            Icmp6Error::ReasmTimeExceeded => ([3, 1, 0, 0, 0, 0, 0, 0], Local::TimeExceeded6, Drop::ReasmTimeout),
            // s.3.1: Destination Unreachable, code 0 (no route to destination).
            Icmp6Error::NoRoute => ([1, 0, 0, 0, 0, 0, 0, 0], Local::Unreachable6, Drop::NoRoute),
            // s.3.2: Packet Too Big with the MTU of the next-hop link.
            Icmp6Error::TooBig(mtu) => {
                let m = mtu.to_be_bytes();
                ([2, 0, 0, 0, m[0], m[1], m[2], m[3]], Local::TooBig6, Drop::MtuExceeded)
            }
            // s.3.1: code 3, address unreachable (RFC 4861 s.7.2.2: MUST,
            // for every packet that waited for a failed resolution).
            Icmp6Error::AddressUnreachable => ([1, 3, 0, 0, 0, 0, 0, 0], Local::AddrUnreachable6, Drop::NeighbourTimeout),
            Icmp6Error::ParamProblem { code, pointer, why } => {
                let m = pointer.to_be_bytes();
                ([4, code, 0, 0, m[0], m[1], m[2], m[3]], Local::ParamProblem6, why)
            }
        };
        if src.is_unspecified() || (to_multicast && !exempt) || !icmp6_error_allowed(p.data().get(l2.l3..l2.l3 + total).unwrap_or(&[])) {
            return Err(why);
        }
        // From an address of the interface the error leaves by (RFC 4443
        // s.2.2 (c): chosen as for any packet the node sends to that
        // destination, RFC 6724 rule 5: the outgoing interface's).
        let path = self.reply_path6(p, l2, src)?;
        let our = self.topo.iface(path.iface).ok_or(Drop::VlanUnknown)?.v6_for(src);
        // The token last: an error that cannot be sent does not spend it.
        if !self.icmp_bucket.take(now_ns) {
            return Err(why);
        }
        let quote = total.min(1280 - 48).min(p.len() - l2.l3);
        if !p.set_len(l2.l3 + 48 + quote) {
            return Err(Drop::NoHeadroom);
        }
        {
            let d = p.data_mut();
            d.copy_within(l2.l3..l2.l3 + quote, l2.l3 + 48);
            let body = 8 + quote;
            d[l2.l3 + 40..l2.l3 + 48].copy_from_slice(&head);
            write_ipv6_header(&mut d[l2.l3..], our, src, 58, body as u16, 64);
            fill_icmpv6_checksum(&mut d[l2.l3..l2.l3 + 40 + body]);
        }
        let v = path.write(p, l2, EtherType::IPV6)?;
        self.counters.local(sent);
        self.reply = true;
        Ok(v)
    }

    // ------------------------------------------------------- neighbours

    /// Packet path: a FIB next-hop index to (egress interface, neighbour MAC).
    /// Gateways are pre-resolved per snapshot ([`Pipeline::rebuild_adjacency`]);
    /// connected destinations take one neighbour-table lookup.
    #[inline]
    pub(crate) fn resolve_hop(&mut self, hop: u32, dst: IpAddr, now_ns: u64) -> Result<(&Interface, MacAddr), Drop> {
        if let Some(&Some((iface, mac, bit))) = self.adj.get(hop as usize) {
            let ifc = self.topo.iface(iface).ok_or(Drop::NoRoute)?;
            self.used.mark(bit);
            return Ok((ifc, mac));
        }
        let nh = *self.fib.hop(hop).ok_or(Drop::NoRoute)?;
        self.resolve(&nh, dst, now_ns)
    }

    /// Recompute the gateway MACs of the FIB's next hops (after a FIB or
    /// neighbour snapshot, or a local learning).
    pub fn rebuild_adjacency(&mut self) {
        self.adj_gen += 1;
        self.adj.clear();
        for nh in self.fib.hops() {
            let e = nh.gateway.and_then(|g| {
                self.neigh.mac(nh.iface, g).or_else(|| self.learned.get(&(nh.iface, g)).map(|e| e.0)).map(|m| (nh.iface, m, UsedBits::bit(nh.iface, g)))
            });
            self.adj.push(e);
        }
    }

    /// Mark the neighbours forwarded to in `used` (shared with the
    /// control thread's [`crate::nud::Nud`]).
    pub fn set_used(&mut self, used: Arc<UsedBits>) {
        self.used = used;
    }

    /// Share the record of solicitations with the other workers.
    pub fn set_solicit_log(&mut self, log: Arc<crate::nud::SolicitLog>) {
        self.solicit_log = log;
    }

    /// The marks of the neighbours forwarded to.
    pub fn used(&self) -> &Arc<UsedBits> {
        &self.used
    }

    /// Install a new FIB snapshot.
    /// Replace the topology; the old one is returned (for the control
    /// thread to free).
    pub fn set_topology(&mut self, t: Arc<Topology>) -> Arc<Topology> {
        self.snap_gen += 1;
        std::mem::replace(&mut self.topo, t)
    }

    pub fn set_fib(&mut self, f: Arc<Fib>) -> Arc<Fib> {
        let old = std::mem::replace(&mut self.fib, f);
        self.rebuild_adjacency();
        old
    }

    /// BCP 38 on the arrival interface (RFC 3704): `route` gives the
    /// interface of the FIB's route to the packet's source, if any (the
    /// arrival interface when one of an ECMP route's next hops uses it:
    /// [`Fib::group_iface`]).
    #[inline]
    fn urpf(&self, iface: u16, route: impl FnOnce(&Fib, u16) -> Option<u16>) -> Result<(), Drop> {
        let mode = self.topo.iface(iface).map_or(crate::tables::Urpf::Off, |i| i.urpf);
        if mode == crate::tables::Urpf::Off || mode.passes(route(&self.fib, iface), iface) {
            Ok(())
        } else {
            Err(Drop::UrpfFailed)
        }
    }

    /// The egress interface and neighbour MAC for a next hop, or a drop
    /// (queuing a resolution when the neighbour is unknown).
    pub(crate) fn resolve(&mut self, nh: &NextHop, dst: IpAddr, now_ns: u64) -> Result<(&Interface, MacAddr), Drop> {
        let target = nh.gateway.unwrap_or(dst);
        let mac = match self.neigh.mac(nh.iface, target) {
            Some(m) => Some(m),
            None if !self.learned.is_empty() => self.learned.get(&(nh.iface, target)).map(|e| e.0),
            None => None,
        };
        if let Some(mac) = mac {
            let ifc = self.topo.iface(nh.iface).ok_or(Drop::NoRoute)?;
            self.used.mark(UsedBits::bit(nh.iface, target));
            return Ok((ifc, mac));
        }
        // A directed broadcast to an attached subnet is not forwarded
        // (RFC 2644: off by default), and never resolved as a station.
        if let IpAddr::V4(t) = target {
            if self.topo.is_subnet_broadcast4(&t) {
                return Err(Drop::MulticastNotRouted);
            }
        }
        if now_ns != 0 {
            self.want_solicit(nh.iface, target, now_ns);
            if self.hold {
                // Built in full for the worker to hold until the address
                // is known (crate::unres).
                let ifc = self.topo.iface(nh.iface).ok_or(Drop::NoRoute)?;
                self.held = Some((nh.iface, target));
                return Ok((ifc, crate::unres::HOLD_MAC));
            }
        }
        Err(Drop::NeighbourMiss)
    }

    /// The MAC of a neighbour as this worker knows it (the table, or a
    /// learning the control thread has not taken up yet); marks it used.
    pub fn neighbour_mac(&self, iface: u16, ip: IpAddr) -> Option<MacAddr> {
        let mac = self.neigh.mac(iface, ip).or_else(|| self.learned.get(&(iface, ip)).map(|e| e.0))?;
        self.used.mark(UsedBits::bit(iface, ip));
        Some(mac)
    }

    /// Build frames for unresolved neighbours for the worker to hold
    /// ([`crate::unres`]) instead of dropping them (`neighbour-miss`).
    pub fn set_hold(&mut self, on: bool) {
        self.hold = on;
    }

    /// The neighbour the last frame built with [`crate::unres::HOLD_MAC`]
    /// waits for.
    pub fn held(&self) -> Option<crate::unres::Key> {
        self.held
    }

    /// Moves with every change of the neighbours this worker knows.
    #[inline]
    pub fn neighbour_epoch(&self) -> u64 {
        self.neigh_epoch
    }

    /// Ask again for a neighbour frames wait for (at most once per
    /// solicit interval).
    pub fn solicit_again(&mut self, iface: u16, target: IpAddr, now_ns: u64) {
        self.want_solicit(iface, target, now_ns.max(1));
    }

    fn want_solicit(&mut self, iface: u16, target: IpAddr, now_ns: u64) {
        let key = (iface, target);
        if let Some(last) = self.solicit_last.get(&key) {
            if now_ns.saturating_sub(*last) < self.cfg.solicit_interval_ns {
                return;
            }
        }
        if self.solicit_last.len() >= MAX_SOLICIT_STATE && !self.solicit_last.contains_key(&key) {
            // Full (a sender walking a connected prefix, RFC 6583 s.4):
            // drop the entries older than the solicit interval, at most
            // once per interval; until then new addresses wait.
            let horizon = self.cfg.solicit_interval_ns;
            if now_ns >= self.solicit_prune_at {
                self.solicit_last.retain(|_, t| now_ns.saturating_sub(*t) < horizon);
                let oldest = self.solicit_last.values().min().copied().unwrap_or(now_ns);
                self.solicit_prune_at = oldest.saturating_add(horizon).max(now_ns.saturating_add(horizon / 8)).max(now_ns.saturating_add(1));
            }
            if self.solicit_last.len() >= MAX_SOLICIT_STATE {
                self.counters.local(Local::SolicitStateFull);
                return;
            }
        }
        if self.solicits.len() < EVENTS_CAP {
            self.solicit_last.insert(key, now_ns);
            self.solicits.push(Solicit { iface, target, unicast: None });
        }
    }

    /// Send a packet the router originates (a notification): `p` holds a
    /// 14-byte placeholder followed by the IP packet to `dst`. Looks up the
    /// FIB and neighbour (queuing a resolution on a miss), writes the
    /// Ethernet header (802.1Q when the egress interface is a VLAN, PCP
    /// `pcp`) and returns the port, or the drop reason.
    pub fn emit_ip<P: PacketBuffer>(&mut self, p: &mut P, dst: IpAddr, pcp: u8, now_ns: u64) -> Result<u16, Drop> {
        self.held = None;
        let hop = self.fib.route_ip(dst, ip_at(p.data(), 14));
        let et = if dst.is_ipv6() { EtherType::IPV6 } else { EtherType::IPV4 };
        let hop = hop.ok_or(Drop::NoRoute)?;
        let iface = self.fib.hop(hop).map(|h| h.iface).ok_or(Drop::NoRoute)?;
        let (ifc, mac) = self.resolve_hop(hop, dst, now_ns.max(1))?;
        let (port, out_mac, vlan) = (ifc.port, ifc.mac, ifc.vlan);
        let l2 = L2 { iface, l3: 14, pcp, mcast: false };
        write_l2(p, l2, mac, out_mac, vlan, et)?;
        Ok(port)
    }

    /// Send an IPv6 packet the router originates to a multicast address
    /// out of interface `iface` (MLD queries): `p` holds a 14-byte
    /// placeholder followed by the packet. Writes the Ethernet header to
    /// the address's group MAC (RFC 2464 s.7; 802.1Q on a VLAN interface)
    /// and returns the port.
    pub fn emit_on<P: PacketBuffer>(&mut self, p: &mut P, iface: u16) -> Result<u16, Drop> {
        let dst = p.data().get(14 + 24..14 + 40).and_then(|d| <[u8; 16]>::try_from(d).ok()).map(Ipv6Addr::from).ok_or(Drop::MalformedIpv6)?;
        if !dst.is_multicast() {
            return Err(Drop::MalformedIpv6);
        }
        let ifc = self.topo.iface(iface).ok_or(Drop::NoRoute)?;
        let (port, mac, vlan) = (ifc.port, ifc.mac, ifc.vlan);
        let l2 = L2 { iface, l3: 14, pcp: 6, mcast: true };
        write_l2(p, l2, ethernet::ipv6_multicast_mac(&dst), mac, vlan, EtherType::IPV6)?;
        Ok(port)
    }

    /// A frame that waited for its neighbour in vain ([`crate::unres`]):
    /// turn it into ICMP Destination Unreachable, host unreachable (IPv4)
    /// / address unreachable (IPv6), to its source, from the router's
    /// address on the interface toward the source. Returns the port; an
    /// error when none is due (the source is the router itself, the
    /// packet an ICMP error, rate limit). A source not resolved is asked
    /// for and the error built for the worker to hold (`held` set, the
    /// frame to [`crate::unres::HOLD_MAC`]), as a forwarded packet's.
    pub fn unreachable_for_held<P: PacketBuffer>(&mut self, p: &mut P, now_ns: u64) -> Result<u16, Drop> {
        let now_ns = now_ns.max(1);
        self.reply = false;
        self.held = None;
        // RFC 4861 s.7.2.2 wants the error "for each packet queued": a
        // source not resolved (a host that never asked for the router's
        // address) is asked for, and the error waits for it as a
        // forwarded packet would.
        self.reply_resolve_at = now_ns;
        let r = self.unreachable_for_held_at(p, now_ns);
        self.reply_resolve_at = 0;
        r
    }

    fn unreachable_for_held_at<P: PacketBuffer>(&mut self, p: &mut P, now_ns: u64) -> Result<u16, Drop> {
        // The held frame was already rewritten for its egress port: its
        // Ethernet source is the router's own MAC there, no address of the
        // packet's source to fall back to (the zero MAC is refused), so the
        // error goes where the FIB and neighbour table say.
        if let Some(h) = p.data_mut().get_mut(..12) {
            h.fill(0);
        }
        let d = p.data();
        let (l3, et) = match d.get(12..14) {
            Some([0x81, 0x00]) => (18, d.get(16..18)),
            _ => (14, d.get(12..14)),
        };
        let v = match et {
            Some([0x08, 0x00]) => {
                let (src, total) = {
                    let ip = Ipv4Packet::new_checked(d.get(l3..).unwrap_or(&[])).map_err(|_| Drop::MalformedIpv4)?;
                    (ip.src_addr(), usize::from(ip.total_len()))
                };
                if self.topo.is_local4(&src) || total > p.len() - l3 {
                    return Err(Drop::NeighbourTimeout);
                }
                let iface = self.route_iface(IpAddr::V4(src)).ok_or(Drop::NoRoute)?;
                self.icmp_error4(p, L2 { iface, l3, pcp: 0, mcast: false }, src, total, now_ns, Icmp4Error::HostUnreachable)?
            }
            Some([0x86, 0xdd]) => {
                let (src, total) = {
                    let ip = Ipv6Packet::new_checked(d.get(l3..).unwrap_or(&[])).map_err(|_| Drop::MalformedIpv6)?;
                    (ip.src_addr(), 40 + usize::from(ip.payload_len()))
                };
                if self.topo.is_local6(&src) || total > p.len() - l3 {
                    return Err(Drop::NeighbourTimeout);
                }
                let iface = self.route_iface(IpAddr::V6(src)).ok_or(Drop::NoRoute)?;
                self.icmp_error6(p, L2 { iface, l3, pcp: 0, mcast: false }, src, total, now_ns, Icmp6Error::AddressUnreachable)?
            }
            _ => return Err(Drop::NeighbourTimeout),
        };
        match v {
            Verdict::Tx(port) => Ok(port),
            _ => Err(Drop::NeighbourTimeout),
        }
    }

    /// The index of the interface a packet to `dst` would leave by.
    pub(crate) fn route_iface(&self, dst: IpAddr) -> Option<u16> {
        let hop = match dst {
            IpAddr::V4(a) => self.fib.route4(a, || 0),
            IpAddr::V6(a) => self.fib.route6(a, || 0),
        }?;
        Some(self.fib.hop(hop)?.iface)
    }

    /// The interface a packet to `dst` would leave by (for choosing a
    /// source address; of an ECMP route, the first next hop's).
    pub fn egress_iface(&self, dst: IpAddr) -> Option<&Interface> {
        self.topo.iface(self.route_iface(dst)?)
    }

    /// Build the ARP request or Neighbor Solicitation for `s` into `p` (a
    /// fresh buffer). Returns the port to send it on.
    pub fn build_solicit<P: PacketBuffer>(&self, p: &mut P, s: &Solicit, now_ns: u64) -> Option<u16> {
        let ifc = self.topo.iface(s.iface)?;
        self.solicit_log.record(s.iface, s.target, now_ns);
        let l2len = if ifc.vlan.is_some() { 18 } else { 14 };
        match s.target {
            IpAddr::V4(t) => {
                let our = ifc.v4_for(t)?;
                if !p.set_len(l2len + 28) {
                    return None;
                }
                let d = p.data_mut();
                write_l2_header(d, s.unicast.unwrap_or(ethernet::BROADCAST), ifc.mac, ifc.vlan, 0, EtherType::ARP);
                let req = ArpRepr {
                    operation: ArpOperation::REQUEST,
                    source_hardware_addr: ifc.mac,
                    source_protocol_addr: our,
                    target_hardware_addr: [0; 6],
                    target_protocol_addr: t,
                };
                req.emit(&mut ArpPacket::new_unchecked(&mut d[l2len..]));
                self.counters.local(Local::ArpRequestSent);
            }
            IpAddr::V6(t) => {
                let our = ifc.v6_for(t);
                // A probe goes to the address itself (RFC 4861 s.7.2.2).
                let (to, to_mac) = match s.unicast {
                    Some(mac) => (t, mac),
                    None => (solicited_node(&t), ethernet::ipv6_multicast_mac(&solicited_node(&t))),
                };
                if !p.set_len(l2len + 40 + 32) {
                    return None;
                }
                let d = p.data_mut();
                write_l2_header(d, to_mac, ifc.mac, ifc.vlan, 0, EtherType::IPV6);
                let m = &mut d[l2len + 40..l2len + 72];
                m.fill(0);
                m[0] = 135;
                m[8..24].copy_from_slice(&t.octets());
                m[24] = 1;
                m[25] = 1;
                m[26..32].copy_from_slice(&ifc.mac);
                write_ipv6_header(&mut d[l2len..], our, to, 58, 32, 255);
                fill_icmpv6_checksum(&mut d[l2len..l2len + 72]);
                self.counters.local(Local::NsSent);
            }
        }
        Some(ifc.port)
    }
}

/// An ICMP error the IPv4 path sends.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Icmp4Error {
    TimeExceeded,
    /// Time Exceeded, code 1: fragment reassembly time exceeded.
    ReasmTimeExceeded,
    NoRoute,
    HostUnreachable,
    /// Fragmentation needed and DF set, with the next-hop MTU.
    FragNeeded(u16),
}

/// An ICMPv6 error the IPv6 path sends.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Icmp6Error {
    TimeExceeded,
    /// Time Exceeded, code 1: fragment reassembly time exceeded.
    ReasmTimeExceeded,
    NoRoute,
    AddressUnreachable,
    /// Packet Too Big, with the MTU of the next-hop link.
    TooBig(u32),
    /// Parameter Problem (RFC 4443 s.3.4) with its code and pointer (the
    /// offset of the field in the invoking packet), for the drop `why`.
    ParamProblem { code: u8, pointer: u32, why: Drop },
}

/// ::ffff:0:0/96, the IPv4-mapped addresses (RFC 4291 s.2.5.5.2): RFC 6890
/// lists them as neither source nor destination, not forwardable.
pub(crate) fn is_v4_mapped(a: &Ipv6Addr) -> bool {
    let s = a.segments();
    s[..5] == [0; 5] && s[5] == 0xffff
}

/// RFC 1812 s.4.3.2.7: no ICMP error about a non-initial fragment or about
/// an ICMP message that is not a query (echo, timestamp, ...). `ip` is the
/// IPv4 packet up to its total length.
fn icmp4_error_allowed(ip: &[u8]) -> bool {
    if ip.len() < 20 || u16::from_be_bytes([ip[6], ip[7]]) & 0x1fff != 0 {
        return false;
    }
    if ip[9] != IpProtocol::ICMP.0 {
        return true;
    }
    matches!(ip.get(usize::from(ip[0] & 0x0f) * 4), Some(0 | 8 | 9 | 10 | 13..=18))
}

/// The octets of an upper-layer header a first fragment must hold (RFC
/// 7112 s.5; the headers Linux checks: TCP, UDP, ICMPv6); 0 for others.
fn upper_header_len(proto: IpProtocol) -> usize {
    match proto {
        IpProtocol::TCP => 20,
        IpProtocol::UDP | IpProtocol::ICMPV6 => 8,
        _ => 0,
    }
}

/// RFC 4443 s.2.4 (e.1): no ICMPv6 error about an ICMPv6 error message.
/// `pkt` is the IPv6 packet up to its payload length.
fn icmp6_error_allowed(pkt: &[u8]) -> bool {
    if pkt.len() < 40 {
        return false;
    }
    match walk_ext_chain(Ipv6Packet::new_unchecked(pkt).next_header(), pkt, 40) {
        // A first fragment shows its ICMPv6 type as well as a whole packet;
        // one cut before the type is no known error message.
        Ok(c) if c.upper_protocol == IpProtocol::ICMPV6 && c.fragment.is_none_or(|f| f.frag_offset == 0) => pkt.get(c.upper_offset).is_none_or(|t| *t >= 128),
        _ => true,
    }
}

/// The link-layer address option of type `want` (1 source, 2 target) in ND
/// options; malformed options are an error (RFC 4861 s.4.6: length 0 is invalid).
/// A neighbour address on the link of `ifc`: link-local, or inside one of
/// its IPv6 prefixes (not the unspecified address).
fn on_link6(ifc: &Interface, a: &Ipv6Addr) -> bool {
    !a.is_unspecified() && (crate::tables::is_link_local(a) || ifc.v6.iter().any(|n| n.contains(a)))
}

fn nd_lladdr(mut opts: &[u8], want: u8) -> Result<Option<MacAddr>, Drop> {
    let mut found = None;
    while !opts.is_empty() {
        if opts.len() < 2 {
            return Err(Drop::MalformedNd);
        }
        let len = usize::from(opts[1]) * 8;
        if len == 0 || len > opts.len() {
            return Err(Drop::MalformedNd);
        }
        if opts[0] == want && len >= 8 {
            let mut m = [0u8; 6];
            m.copy_from_slice(&opts[2..8]);
            found = Some(m);
        }
        opts = &opts[len..];
    }
    Ok(found)
}

/// Write an Ethernet header (with an 802.1Q tag when `vlan` is set).
/// The IP packet at `l3` of frame `d` without link-layer padding (its
/// length from its header, IPv4 or IPv6, within the frame), for hashing.
pub(crate) fn ip_at(d: &[u8], l3: usize) -> &[u8] {
    let ip = d.get(l3..).unwrap_or_default();
    let len = match ip.first().map(|b| b >> 4) {
        Some(6) if ip.len() >= 40 => 40 + usize::from(u16::from_be_bytes([ip[4], ip[5]])),
        Some(4) if ip.len() >= 20 => usize::from(u16::from_be_bytes([ip[2], ip[3]])),
        _ => ip.len(),
    };
    &ip[..len.min(ip.len())]
}

/// Cut a forwarded frame to its datagram (`total` octets from `l2.l3`):
/// octets a sender put after it are not the datagram's (RFC 894), and
/// would be carried past the egress MTU the datagram was checked against.
/// A frame of the minimum size keeps its padding.
#[inline]
fn trim_to_datagram<P: PacketBuffer>(p: &mut P, l2: L2, total: usize) {
    let keep = (l2.l3 + total).max(60);
    if p.len() > keep {
        p.set_len(keep);
    }
}

fn write_l2_header(d: &mut [u8], dst: MacAddr, src: MacAddr, vlan: Option<u16>, pcp: u8, et: EtherType) {
    d[0..6].copy_from_slice(&dst);
    d[6..12].copy_from_slice(&src);
    match vlan {
        Some(v) => {
            d[12..14].copy_from_slice(&0x8100u16.to_be_bytes());
            d[14..16].copy_from_slice(&((u16::from(pcp) << 13) | v).to_be_bytes());
            d[16..18].copy_from_slice(&et.0.to_be_bytes());
        }
        None => d[12..14].copy_from_slice(&et.0.to_be_bytes()),
    }
}

/// Replace the received L2 header with the egress one (adding, removing or
/// rewriting the VLAN tag as needed).
#[inline]
pub(crate) fn write_l2<P: PacketBuffer>(p: &mut P, l2: L2, dst: MacAddr, src: MacAddr, vlan: Option<u16>, et: EtherType) -> Result<(), Drop> {
    let new = if vlan.is_some() { 18 } else { 14 };
    if new > l2.l3 {
        if !p.prepend(new - l2.l3) {
            return Err(Drop::NoHeadroom);
        }
    } else if new < l2.l3 && !p.adj(l2.l3 - new) {
        return Err(Drop::NoHeadroom);
    }
    write_l2_header(p.data_mut(), dst, src, vlan, l2.pcp, et);
    Ok(())
}

fn write_ipv4_header(d: &mut [u8], src: Ipv4Addr, dst: Ipv4Addr, proto: IpProtocol, total: u16) {
    let h = &mut d[..20];
    h.fill(0);
    h[0] = 0x45;
    h[2..4].copy_from_slice(&total.to_be_bytes());
    h[6] = 0x40; // DF
    h[8] = 64;
    h[9] = proto.0;
    h[12..16].copy_from_slice(&src.octets());
    h[16..20].copy_from_slice(&dst.octets());
    let c = checksum::checksum(h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
}

fn write_ipv6_header(d: &mut [u8], src: Ipv6Addr, dst: Ipv6Addr, nh: u8, payload: u16, hop: u8) {
    let h = &mut d[..40];
    h[0..4].copy_from_slice(&[0x60, 0, 0, 0]);
    h[4..6].copy_from_slice(&payload.to_be_bytes());
    h[6] = nh;
    h[7] = hop;
    h[8..24].copy_from_slice(&src.octets());
    h[24..40].copy_from_slice(&dst.octets());
}

/// Fill the ICMPv6 checksum of a packet that is an IPv6 header followed
/// directly by the ICMPv6 message.
fn fill_icmpv6_checksum(pkt: &mut [u8]) {
    let (h, m) = pkt.split_at_mut(40);
    let src: [u8; 16] = h[8..24].try_into().unwrap_or([0; 16]);
    let dst: [u8; 16] = h[24..40].try_into().unwrap_or([0; 16]);
    m[2] = 0;
    m[3] = 0;
    let s = checksum::combine(checksum::pseudo_v6(&src, &dst, 58, m.len() as u32), checksum::sum(m));
    let c = !checksum::fold(s);
    m[2..4].copy_from_slice(&c.to_be_bytes());
}

#[cfg(test)]
mod icmp4_tests {
    use super::*;
    use crate::packet::VecPacket;
    use crate::tables::{Fib, Interface, NeighSource, Neighbours, NextHop, Topology};
    use std::sync::Arc;

    /// An Ethernet + IPv4 (TTL 1) + 8-byte UDP frame from `src` to `dst`.
    fn frame(src: [u8; 4], dst: [u8; 4]) -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 8, 0];
        let mut h = [0u8; 20];
        h[0] = 0x45;
        h[2..4].copy_from_slice(&28u16.to_be_bytes());
        h[8] = 1;
        h[9] = 17;
        h[12..16].copy_from_slice(&src);
        h[16..20].copy_from_slice(&dst);
        let c = checksum::checksum(&h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        f.extend_from_slice(&h);
        f.extend_from_slice(&[0, 1, 0, 2, 0, 8, 0, 0]);
        f
    }

    /// RFC 1812 s.4.3.2.7, checked where every ICMP error is built (the
    /// forwarding path drops most such packets before): no error about a
    /// datagram in a link-layer broadcast / multicast frame, to an IP
    /// multicast or the limited broadcast address, or from an address that
    /// is not one host's; the same datagram otherwise gets its error.
    #[test]
    fn no_icmp_error_about_broadcast_multicast_or_non_host_sources() {
        let mut ifc = Interface::new("a", 0, None, [2, 0, 0, 0, 0, 1], 1500);
        ifc.v4.push("10.0.0.1/24".parse().unwrap());
        let mut fib = Fib::default();
        fib.insert4("10.0.0.0/24".parse().unwrap(), NextHop { iface: 0, gateway: None });
        fib.insert4("127.0.0.0/8".parse().unwrap(), NextHop { iface: 0, gateway: None });
        let mut n = Neighbours::default();
        n.learn(0, "10.0.0.2".parse().unwrap(), [2, 0, 0, 0, 0, 2], NeighSource::Static);
        n.learn(0, "127.0.0.1".parse().unwrap(), [2, 0, 0, 0, 0, 2], NeighSource::Static);
        let mut pl = Pipeline::new(Arc::new(Topology::new(vec![ifc])), Arc::new(fib), Arc::new(n), Arc::new(WorkerCounters::default()), PipelineConfig::default());
        let l2 = L2 { iface: 0, l3: 14, pcp: 0, mcast: false };
        let mut err = |src: [u8; 4], dst: [u8; 4], mcast: bool| {
            let mut p = VecPacket::from_bytes(&frame(src, dst));
            pl.icmp_error4(&mut p, L2 { mcast, ..l2 }, Ipv4Addr::from(src), 28, 1_000_000_000, Icmp4Error::TimeExceeded)
        };
        assert_eq!(err([10, 0, 0, 2], [192, 0, 2, 5], true), Err(Drop::TtlExpired), "link-layer broadcast / multicast");
        assert_eq!(err([10, 0, 0, 2], [224, 0, 0, 5], false), Err(Drop::TtlExpired), "IP multicast");
        assert_eq!(err([10, 0, 0, 2], [255, 255, 255, 255], false), Err(Drop::TtlExpired), "limited broadcast");
        assert_eq!(err([127, 0, 0, 1], [192, 0, 2, 5], false), Err(Drop::TtlExpired), "a loopback source");
        assert_eq!(err([0, 0, 0, 7], [192, 0, 2, 5], false), Err(Drop::TtlExpired), "a source in 0.0.0.0/8");
        assert_eq!(pl.counters.local[Local::TimeExceeded4 as usize].get(), 0);
        let mut p = VecPacket::from_bytes(&frame([10, 0, 0, 2], [192, 0, 2, 5]));
        assert_eq!(pl.icmp_error4(&mut p, l2, Ipv4Addr::new(10, 0, 0, 2), 28, 1_000_000_000, Icmp4Error::TimeExceeded), Ok(Verdict::Tx(0)));
        assert_eq!(pl.counters.local[Local::TimeExceeded4 as usize].get(), 1);
    }

    /// An Echo Reply to one of the RTT probes (its identifier, the probe
    /// data) goes to the control thread with its arrival time, over IPv4
    /// and IPv6; other Echo Replies are dropped by name, a bad checksum as
    /// malformed, and a flood beyond the per-worker rate as rate-limited.
    #[test]
    fn echo_replies_to_rtt_probes_go_to_the_control_thread() {
        use crate::rttprobe::{echo_reply, PROBE_DATA};
        let mut ifc = Interface::new("a", 0, None, [2, 0, 0, 0, 0, 1], 1500);
        ifc.v4.push("10.0.0.1/24".parse().unwrap());
        ifc.v6.push("2001:db8::1/64".parse().unwrap());
        let mut topo = Topology::new(vec![ifc]);
        topo.echo_probe_id = Some(0x4242);
        let topo = Arc::new(topo);
        let new = |t: Arc<Topology>| Pipeline::new(t, Arc::new(Fib::default()), Arc::new(Neighbours::default()), Arc::new(WorkerCounters::default()), PipelineConfig::default());
        let mut pl = new(topo.clone());
        let data: Vec<u8> = (0..PROBE_DATA as u8).collect();
        // The peer's reply, in an Ethernet frame to the router.
        let reply = |from: &str, ident: u16, data: &[u8]| {
            let src: IpAddr = from.parse().unwrap();
            let dst: IpAddr = if src.is_ipv4() { "10.0.0.1".parse().unwrap() } else { "2001:db8::1".parse().unwrap() };
            let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2];
            f.extend_from_slice(if src.is_ipv4() { &[8, 0] } else { &[0x86, 0xdd] });
            f.extend_from_slice(&echo_reply(src, dst, ident, 7, data));
            f
        };
        let run = |pl: &mut Pipeline, f: Vec<u8>, now: u64| pl.process(&mut VecPacket::from_bytes(&f), 0, now);
        for (from, now) in [("2001:db8::2", 5_000u64), ("10.0.0.2", 6_000)] {
            assert_eq!(run(&mut pl, reply(from, 0x4242, &data), now), Verdict::Consumed, "{from}");
            match pl.events.pop() {
                Some(Event::EchoReply { from: f, seq, data: d, at_ns }) => assert_eq!((f, seq, d.to_vec(), at_ns), (from.parse().unwrap(), 7, data.clone(), now)),
                _ => panic!("no EchoReply event for {from}"),
            }
            assert_eq!(run(&mut pl, reply(from, 0x4243, &data), now), Verdict::Drop(Drop::EchoReplyUnexpected), "another identifier");
            assert_eq!(run(&mut pl, reply(from, 0x4242, &data[..PROBE_DATA - 1]), now), Verdict::Drop(Drop::EchoReplyUnexpected), "too short for probe data");
            let mut bad = reply(from, 0x4242, &data);
            *bad.last_mut().unwrap() ^= 1;
            assert_eq!(run(&mut pl, bad, now), Verdict::Drop(Drop::MalformedIcmp));
            assert_eq!(run(&mut new(Arc::new(Topology::new(topo.interfaces.clone()))), reply(from, 0x4242, &data), now), Verdict::Drop(Drop::EchoReplyUnexpected), "a router that sends no probes");
        }
        // With the worker's clock the reply is dated when it is seen, not
        // at the loop's start (never earlier than that).
        for (clock, want) in [(9_000_000u64, 9_000_000u64), (1_000, 7_000_000)] {
            pl.reply_clock = Some(Arc::new(move || clock));
            assert_eq!(run(&mut pl, reply("2001:db8::2", 0x4242, &data), 7_000_000), Verdict::Consumed);
            assert!(matches!(pl.events.pop(), Some(Event::EchoReply { at_ns, .. }) if at_ns == want), "clock {clock}");
        }
        assert!(pl.events.is_empty());
        // The burst, then the rate: a flood at one instant stops at the burst.
        let handed = (0..200).filter(|_| run(&mut pl, reply("2001:db8::2", 0x4242, &data), 1_000_000_000) == Verdict::Consumed).count();
        assert_eq!(handed as u32, ECHO_REPLY_BURST, "the bucket full again a second after the two replies above");
        assert_eq!(run(&mut pl, reply("2001:db8::2", 0x4242, &data), 1_000_000_000), Verdict::Drop(Drop::EchoReplyRateLimited));
    }

    /// Received PAUSE / PFC frames are consumed, never forwarded: on a port
    /// with `[port.pfc]` they move its pause state, elsewhere they are
    /// dropped as `pfc-not-enabled`; a frame the router cannot read is
    /// dropped under its own reason.
    #[test]
    fn received_mac_control_frames_pause_the_port_or_are_dropped_by_name() {
        use crate::pfcrx::{PfcRxConfig, PortPause};
        use crate::wire::pfc::{FrameRepr, MacControlRepr, PfcRepr, DST_MAC};
        let a = Interface::new("a", 0, None, [2, 0, 0, 0, 0, 1], 1500);
        let b = Interface::new("b", 1, None, [2, 0, 0, 0, 0, 0xb], 1500);
        let mut pl = Pipeline::new(Arc::new(Topology::new(vec![a, b])), Arc::new(Fib::default()), Arc::new(Neighbours::default()), Arc::new(WorkerCounters::default()), PipelineConfig::default());
        let pp = Arc::new(PortPause::new(PfcRxConfig { link_bps: 1_000_000_000, ..PfcRxConfig::with_default_priority(1 << 3, true, 0) }));
        pl.pfc_rx = vec![Some(pp.clone()), None];
        let frame = |dst: [u8; 6], control: MacControlRepr| {
            let mut f = vec![0u8; 60];
            FrameRepr { dst, src: [2, 0, 0, 0, 0, 9], control }.emit(&mut f).unwrap();
            f
        };
        let mut run = |f: Vec<u8>, port: u16| pl.process(&mut VecPacket::from_bytes(&f), port, 1_000);
        assert_eq!(run(frame(DST_MAC, MacControlRepr::Pfc(PfcRepr::pause(1 << 3 | 1 << 4, 100))), 0), Verdict::Consumed);
        assert_eq!(pp.paused(1_000), 1 << 3, "priority 3 for 100 quanta; 4 is not honoured");
        assert_eq!(pp.next_end(0xff, 1_000), Some(1_000 + 51_200));
        assert_eq!(run(frame(DST_MAC, MacControlRepr::Pfc(PfcRepr::pause(1 << 5, 100))), 0), Verdict::Consumed);
        // 802.3x PAUSE may also go to the port's own address.
        assert_eq!(run(frame([2, 0, 0, 0, 0, 1], MacControlRepr::Pause { quanta: 7 }), 0), Verdict::Consumed);
        assert_eq!(pp.paused(1_000), 0xff);
        assert_eq!(run(frame(DST_MAC, MacControlRepr::Pfc(PfcRepr::pause(1 << 3, 100))), 1), Verdict::Drop(Drop::PfcNotHonoured));
        assert_eq!(run(frame([2, 0, 0, 0, 0, 1], MacControlRepr::Pfc(PfcRepr::pause(1 << 3, 100))), 0), Verdict::Drop(Drop::MalformedMacControl), "PFC to the reserved address only");
        let mut other = frame(DST_MAC, MacControlRepr::Pause { quanta: 7 });
        other[15] = 0x02; // GATE (802.3 Annex 31A)
        assert_eq!(run(other, 0), Verdict::Drop(Drop::MacControlUnsupported));
        let mut short = frame(DST_MAC, MacControlRepr::Pfc(PfcRepr::pause(1 << 3, 100)));
        short.truncate(14 + 10);
        assert_eq!(run(short, 0), Verdict::Drop(Drop::MalformedMacControl));
        assert_eq!(run(frame([0x01, 0, 0x5e, 0, 0, 1], MacControlRepr::Pause { quanta: 7 }), 0), Verdict::Drop(Drop::MalformedMacControl), "another multicast address");
        let l = |x: Local| pl.counters.local[x as usize].get();
        assert_eq!((l(Local::PfcReceived), l(Local::PfcReceivedIgnored), l(Local::PauseReceived)), (1, 1, 1));
    }
}
