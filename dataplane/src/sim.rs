//! A deterministic multi-node simulation harness (DESIGN.md, "Testing"):
//! virtual time in nanoseconds, one binary-heap event queue, no threads, no
//! sleeps, and every loop bounded.
//!
//! * **Nodes** run the real data path: a [`Pipeline`] per node and an
//!   [`EgressPort<VecPacket>`] per port (deep-buffer queue, shaper at
//!   R_port, congestion-aware node when configured), driven exactly as the
//!   DPDK worker drives them (`worker.rs`): every received frame is shown to
//!   every egress port (`observe_roce`, reverse-path source-QP learning), goes
//!   through `Pipeline::process`, and a `Tx` verdict is admitted to the output
//!   port (`admit`, or `admit_priority` for locally generated replies); then
//!   the node services its queues (`dequeue` what the shaper lets go, `sent`
//!   for each data packet), polls its congestion stages (`poll`) and builds
//!   and routes the Long-haul CNPs due (`build_cnp_packet`, admitted to the
//!   priority queue of the port toward the source). A node "runs its loop"
//!   on every frame it receives, when its shaper next lets a packet go
//!   (`next_departure_ns`), and every `tick_ns` (the worker polls
//!   continuously; the tick stands in for the idle loop so that time-based
//!   decisions such as Resume are taken when nothing arrives).
//! * **Links** join two endpoints (a node's port or a host) and are full
//!   duplex: each direction serialises at its rate (a transmitter busy until
//!   the previous frame has left) and then delays every frame by the
//!   propagation delay. A frame occupies the wire for its bytes padded to
//!   [`MIN_FRAME`] plus a per-frame overhead (Ethernet's preamble, SFD,
//!   FCS and inter-frame gap:
//!   [`ETHERNET_FRAME_OVERHEAD`](crate::egress::ETHERNET_FRAME_OVERHEAD)),
//!   the cost the egress shaper charges (`EgressConfig::frame_overhead`): a
//!   link at a node's port carries that port's framing (so a port shaped at
//!   its link's rate fills the link exactly), a link between two hosts the
//!   default one, and [`Sim::link_with_overhead`] sets it. A node port's NIC
//!   holds at most [`SimConfig::tx_ring`] frames waiting for the wire (its
//!   TX descriptors: a frame takes one from the moment it is handed over
//!   until its last bit has left); what the shaper releases beyond that is
//!   put back at the head of the egress queue (`EgressPort::requeue`, as the
//!   worker does with what `tx_burst` refused) and waits there, where queue
//!   depth counts it, until the ring has room. A host's NIC has no ring: its
//!   flows wait for the wire before sending.
//! * **Hosts**: RoCEv2 sources (RC SEND-only packets of a fixed size, ECT(0),
//!   paced at the QP's current rate from [`SourceModel`], which also
//!   validates and applies the Long-haul CNPs that reach the host, parsed
//!   with [`parse_cnp`]), fixed-rate RoCEv2 or plain UDP traffic (cross
//!   traffic), and sinks (count bytes and CE marks; optionally answer every
//!   `ack_every`-th packet of a QP with an RC ACK, from which the nodes learn
//!   the source QP).
//! * **Timeline**: [`Record`]s with their virtual time: queue depth samples
//!   (every `sample_ns` for ports with a congestion stage), the first CE mark
//!   per port, each Long-haul CNP sent (with the QD it was decided at) and
//!   received (with the source's verdict), each deferral / escalation
//!   (s.5.7) and each change of a source QP's rate.
//!
//! Frames are built here (IPv4, RoCEv2 BTH); the data packets' ICRC is left
//! zero (nothing on the path checks it; the CNPs the nodes build carry a
//! real one and the source verifies it). Memory: a [`VecPacket`] holds its
//! frame plus 128 bytes of headroom (at least 2 KiB), so with 4 KiB payloads
//! a queue of 130 MB is ~31 000 packets / ~135 MB of heap: scenarios with
//! deep buffers should use large payloads (or scale rates and buffers down
//! together, keeping the BDP ratios).
//!
//! The topology (nodes, hosts, links) is fixed when the simulation starts
//! ([`Sim::build`], the first [`Sim::run_until`]): the nodes' neighbour
//! tables and the hosts' gateways are made from it. Routes, flows, source
//! models and ACK settings may be added between two `run_until` calls.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use ipnet::Ipv4Net;

use crate::congestion::{parse_cnp, CnpRequest, FlowId, SourceModel, SourceParams, SourceReject};
use crate::counters::{Drop, WorkerCounters};
use crate::egress::{EgressConfig, MIN_FRAME};
use crate::node::{CongestionSpec, EgressPort};
use crate::packet::{PacketBuffer, VecPacket};
use crate::pipeline::{Pipeline, PipelineConfig, Verdict};
use crate::tables::{Fib, Interface, MacAddr, NeighSource, Neighbours, NextHop, Topology};
use crate::wire::checksum;
use crate::wire::lhcnp::CnpInfo;
use crate::wire::params::{Params, ROCEV2_UDP_PORT};

pub const US: u64 = 1_000;
pub const MS: u64 = 1_000_000;

/// Where a link ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Endpoint {
    Node(usize, u16),
    Host(usize),
}

/// Harness settings.
#[derive(Debug, Clone, Copy)]
pub struct SimConfig {
    /// The idle-loop tick of every node, ns.
    pub tick_ns: u64,
    /// Queue depth sampling period, ns (0: no samples).
    pub sample_ns: u64,
    /// Wire parameters (RoCEv2 UDP port, ...) for CNP building and parsing.
    pub wire: Params,
    /// Most events [`Sim::run_until`] processes (a guard against runaway
    /// scenarios).
    pub max_events: u64,
    /// The TX ring of every node port: how many frames its NIC holds
    /// waiting for the wire (at least 1). Default: the router's default
    /// `tx_desc`, [`DEFAULT_TX_RING`].
    pub tx_ring: usize,
}

/// The router's default TX descriptors per port queue (control/src/config.rs
/// `tx_desc`).
pub const DEFAULT_TX_RING: usize = 1024;

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig { tick_ns: 10 * US, sample_ns: 100 * US, wire: Params::DEFAULT, max_events: 200_000_000, tx_ring: DEFAULT_TX_RING }
    }
}

/// The MTU of every node interface in the harnesses.
pub(crate) const NODE_MTU: u16 = 9000;

/// A fresh buffer for a frame a node builds from another (an End.MT copy,
/// a fragment): like an mbuf of the router's pool it holds a whole frame of
/// the interface MTU behind the default headroom (control/src/config.rs:
/// `mtu + 18 + 128 <= data_room`).
pub(crate) fn frame_buffer() -> VecPacket {
    VecPacket::with_capacity(usize::from(NODE_MTU) + 18 + VecPacket::DEFAULT_HEADROOM)
}

/// One port of a node.
#[derive(Debug, Clone)]
pub struct PortSpec {
    /// The interface address and prefix, e.g. "10.0.12.1/24".
    pub addr: Ipv4Net,
    pub egress: EgressConfig,
    pub congestion: Option<CongestionSpec>,
}

/// What the timeline records.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    /// Queue depth of a port with a congestion stage (bytes).
    Queue { node: usize, port: u16, depth: u64 },
    /// The first CE mark applied by a port, with the QD that caused it.
    FirstCe { node: usize, port: u16, qd: u64 },
    /// A Long-haul CNP built by `node` for its congested `port` (QD at the
    /// decision), leaving on `out`.
    CnpSent { node: usize, port: u16, out: u16, qd: u64, to: IpAddr, info: CnpInfo },
    /// A CNP the congestion stage requested but the node could not build or
    /// route.
    CnpFailed { node: usize, port: u16, why: Drop },
    /// s.5.7: a congestion stage deferred to an upstream node (cumulative
    /// count) / escalated.
    Deferred { node: usize, port: u16, total: u64, qd: u64 },
    Escalated { node: usize, port: u16, total: u64, qd: u64 },
    /// A Long-haul CNP reached a host: its IP source, the instruction and
    /// the source model's verdict.
    CnpReceived { host: usize, from: IpAddr, info: CnpInfo, result: Result<(), SourceReject> },
    /// A frame addressed to a host that looked like a CNP but did not parse.
    CnpMalformed { host: usize },
    /// A source QP's sending rate changed (bit/s; 0 while paused).
    Rate { host: usize, qp: u32, bps: f64 },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub t: u64,
    pub rec: Record,
}

/// How a host flow is paced (bits of frames; whatever the pace, a host
/// never sends faster than its link takes frames, framing included).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pace {
    /// The host's [`SourceModel`] rate for the flow's source QP.
    Model,
    /// A fixed rate, bit/s (cross traffic, not controlled).
    Fixed(f64),
}

/// What a host flow sends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FlowKind {
    /// RoCEv2 RC SEND-only, ECT(0).
    Roce { src_qp: u32, dst_qp: u32 },
    /// Plain UDP (not RoCEv2, not ECN-capable).
    Udp { dport: u16 },
}

#[derive(Debug, Clone, Copy)]
pub struct FlowSpec {
    pub dst: Ipv4Addr,
    pub kind: FlowKind,
    /// Bytes after the transport header (BTH / UDP).
    pub payload: usize,
    pub start_ns: u64,
    /// Stop sending at this time (u64::MAX: never).
    pub stop_ns: u64,
    pub pace: Pace,
    pub sport: u16,
}

struct Flow {
    spec: FlowSpec,
    template: Vec<u8>,
    psn: u32,
    sent_pkts: u64,
    sent_bytes: u64,
    last_rate: Option<f64>,
    /// Scheduled time of the next send, picoseconds.
    next_ps: u64,
    /// Set the BTH AckReq bit on every this-many-th packet (PSN + 1 a
    /// multiple of it; 0: never), as an RNIC does on a message's last.
    ack_req_every: u32,
}

/// Per-QP receive state of a sink.
#[derive(Debug, Clone, Copy, Default)]
pub struct RxStats {
    pub pkts: u64,
    pub bytes: u64,
    pub ce: u64,
}

pub struct Host {
    pub name: String,
    pub ip: Ipv4Addr,
    pub mac: MacAddr,
    /// The MAC of the node port the host is attached to (its gateway).
    pub gw_mac: MacAddr,
    pub model: Option<SourceModel>,
    flows: Vec<Flow>,
    /// (local QP, peer, peer QP): answer every `ack_every`-th data packet
    /// received on the local QP with an ACK to the peer QP.
    pub ack_peers: Vec<(u32, Ipv4Addr, u32)>,
    pub ack_every: u64,
    /// Everything received.
    pub rx: RxStats,
    /// Per local QP.
    pub rx_qp: Vec<(u32, RxStats)>,
    pub acks_sent: u64,
}

impl Host {
    pub fn flow_sent(&self, i: usize) -> (u64, u64) {
        self.flows.get(i).map(|f| (f.sent_pkts, f.sent_bytes)).unwrap_or((0, 0))
    }
    pub fn rx_for(&self, qp: u32) -> RxStats {
        self.rx_qp.iter().find(|(q, _)| *q == qp).map(|x| x.1).unwrap_or_default()
    }
}

pub struct Node {
    pub name: String,
    pub pipeline: Option<Pipeline>,
    pub ports: Vec<EgressPort<VecPacket>>,
    pub specs: Vec<PortSpec>,
    pub counters: Arc<WorkerCounters>,
    routes: Vec<(Ipv4Net, u16)>,
    reqs: Vec<CnpRequest>,
    /// Earliest wake-up already scheduled (stale ones are harmless).
    wake_at: u64,
    first_ce: Vec<bool>,
    deferred: Vec<u64>,
    escalated: Vec<u64>,
}

struct Wire {
    rate_bps: u64,
    delay_ns: u64,
    /// What each frame costs the wire beyond its bytes (padded to
    /// [`MIN_FRAME`]), octets.
    frame_overhead: u32,
    /// When the transmitter is free, in picoseconds (exact serialisation:
    /// no rounding drift against the shapers).
    busy_until_ps: u64,
    to: Endpoint,
    frames: u64,
    /// The TX ring of a node port's NIC: most frames handed over and not
    /// yet sent (0: no ring, a host's NIC).
    ring: usize,
    /// When each frame handed over finishes leaving, ps, oldest first
    /// (those of the ring only; at most `ring` not yet sent).
    pending_ps: VecDeque<u64>,
}

impl Wire {
    /// Room in the TX ring at `now_ps` (`usize::MAX`: no ring); forgets
    /// the frames that have left.
    fn ring_room(&mut self, now_ps: u64) -> usize {
        if self.ring == 0 {
            return usize::MAX;
        }
        let gone = self.pending_ps.partition_point(|&t| t <= now_ps);
        self.pending_ps.drain(..gone);
        self.ring.saturating_sub(self.pending_ps.len())
    }

    /// When a TX ring full at `now_ps` next has room (its oldest frame has
    /// left), ns; `None` when it has room now.
    fn ring_free_ns(&self, now_ps: u64) -> Option<u64> {
        if self.ring == 0 {
            return None;
        }
        let gone = self.pending_ps.partition_point(|&t| t <= now_ps);
        (self.pending_ps.len() - gone >= self.ring).then(|| self.pending_ps[gone].div_ceil(1000))
    }
}

enum Ev {
    Arrive(Endpoint, VecPacket),
    Wake(usize),
    Tick(usize),
    Sample,
    Send(usize, usize),
}

/// A min-heap of timed events: earliest first, then insertion order (so
/// runs are deterministic). Shared by the simulators.
pub struct EventQueue<E> {
    heap: BinaryHeap<Item<E>>,
    seq: u64,
}

struct Item<E> {
    t: u64,
    seq: u64,
    ev: E,
}
impl<E> PartialEq for Item<E> {
    fn eq(&self, o: &Self) -> bool {
        (self.t, self.seq) == (o.t, o.seq)
    }
}
impl<E> Eq for Item<E> {}
impl<E> PartialOrd for Item<E> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Item<E> {
    fn cmp(&self, o: &Self) -> Ordering {
        (o.t, o.seq).cmp(&(self.t, self.seq))
    }
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue { heap: BinaryHeap::new(), seq: 0 }
    }
}

impl<E> EventQueue<E> {
    pub fn push(&mut self, t: u64, ev: E) {
        self.seq += 1;
        self.heap.push(Item { t, seq: self.seq, ev });
    }

    /// The earliest event if it is due at or before `t_end`.
    pub fn pop_until(&mut self, t_end: u64) -> Option<(u64, E)> {
        if self.heap.peek()?.t > t_end {
            return None;
        }
        self.heap.pop().map(|it| (it.t, it.ev))
    }
}

/// The simulation.
pub struct Sim {
    pub cfg: SimConfig,
    pub now: u64,
    pub nodes: Vec<Node>,
    pub hosts: Vec<Host>,
    wires: Vec<Wire>,
    /// Outgoing wire of each endpoint.
    wire_of: Vec<(Endpoint, usize)>,
    queue: EventQueue<Ev>,
    pub events: u64,
    pub timeline: Vec<Entry>,
    built: bool,
    /// What a port's shaper released, reused by every `service`.
    released: Vec<(VecPacket, u32, Option<FlowId>, bool)>,
}

fn node_mac(n: usize, p: u16) -> MacAddr {
    [0x02, 0, 0, n as u8, (n >> 8) as u8, p as u8]
}
fn host_mac(h: usize) -> MacAddr {
    [0x02, 0x10, 0, h as u8, (h >> 8) as u8, 1]
}

impl Sim {
    pub fn new(cfg: SimConfig) -> Self {
        Sim {
            cfg,
            now: 0,
            nodes: Vec::new(),
            hosts: Vec::new(),
            wires: Vec::new(),
            wire_of: Vec::new(),
            queue: EventQueue::default(),
            events: 0,
            timeline: Vec::new(),
            built: false,
            released: Vec::new(),
        }
    }

    /// A node with the given ports (port `i` is interface `i`, untagged,
    /// MTU 9000). Before the simulation starts.
    pub fn add_node(&mut self, name: &str, ports: Vec<PortSpec>) -> usize {
        assert!(!self.built, "Sim::add_node({name}) after the simulation started: the topology is fixed by Sim::build");
        let id = self.nodes.len();
        let n = ports.len();
        self.nodes.push(Node {
            name: name.to_owned(),
            pipeline: None,
            ports: ports.iter().map(|p| EgressPort::new(p.egress, p.congestion.clone())).collect(),
            specs: ports,
            counters: Arc::new(WorkerCounters::default()),
            routes: Vec::new(),
            reqs: Vec::with_capacity(256),
            wake_at: u64::MAX,
            first_ce: vec![false; n],
            deferred: vec![0; n],
            escalated: vec![0; n],
        });
        id
    }

    /// A host. Before the simulation starts.
    pub fn add_host(&mut self, name: &str, ip: Ipv4Addr) -> usize {
        assert!(!self.built, "Sim::add_host({name}) after the simulation started: the topology is fixed by Sim::build");
        let id = self.hosts.len();
        self.hosts.push(Host {
            name: name.to_owned(),
            ip,
            mac: host_mac(id),
            gw_mac: [0; 6],
            model: None,
            flows: Vec::new(),
            ack_peers: Vec::new(),
            ack_every: 0,
            rx: RxStats::default(),
            rx_qp: Vec::new(),
            acks_sent: 0,
        });
        id
    }

    /// A full-duplex link, `rate_bps` and `delay_ns` in each direction,
    /// between endpoints that exist (before the simulation starts). Each
    /// direction's per-frame overhead is the `frame_overhead` of the
    /// transmitting node port's egress configuration (a host transmits with
    /// the framing of the node port it is linked to; between two hosts:
    /// `EgressConfig::default()`'s), so that a shaper and its wire count the
    /// same octets.
    pub fn link(&mut self, a: Endpoint, b: Endpoint, rate_bps: u64, delay_ns: u64) {
        for (from, to) in [(a, b), (b, a)] {
            let overhead = self.port_framing(from).or_else(|| self.port_framing(to)).unwrap_or(EgressConfig::default().frame_overhead);
            self.add_wire(from, to, rate_bps, delay_ns, overhead);
        }
    }

    /// [`Sim::link`] with `frame_overhead` octets per frame (frames padded
    /// to [`MIN_FRAME`]) in both directions, whatever the ports' egress
    /// configurations say.
    pub fn link_with_overhead(&mut self, a: Endpoint, b: Endpoint, rate_bps: u64, delay_ns: u64, frame_overhead: u32) {
        for (from, to) in [(a, b), (b, a)] {
            self.add_wire(from, to, rate_bps, delay_ns, frame_overhead);
        }
    }

    /// The framing of a node port's egress configuration (`None`: a host).
    fn port_framing(&self, e: Endpoint) -> Option<u32> {
        match e {
            Endpoint::Node(n, p) => {
                let spec = self.nodes.get(n).and_then(|x| x.specs.get(usize::from(p)));
                Some(spec.unwrap_or_else(|| panic!("Sim::link: node {n} has no port {p} (add the node before linking it)")).egress.frame_overhead)
            }
            Endpoint::Host(_) => None,
        }
    }

    fn add_wire(&mut self, from: Endpoint, to: Endpoint, rate_bps: u64, delay_ns: u64, frame_overhead: u32) {
        assert!(!self.built, "Sim::link({from:?}, {to:?}) after the simulation started: the nodes' neighbours and the hosts' gateways are made from the links by Sim::build");
        assert!(!self.wire_of.iter().any(|(e, _)| *e == from), "{from:?} already linked");
        // A node port's NIC has its TX ring (allocated once, here).
        let ring = if matches!(from, Endpoint::Node(..)) { self.cfg.tx_ring.max(1) } else { 0 };
        self.wire_of.push((from, self.wires.len()));
        self.wires.push(Wire { rate_bps: rate_bps.max(1), delay_ns, frame_overhead, busy_until_ps: 0, to, frames: 0, ring, pending_ps: VecDeque::with_capacity(ring) });
    }

    /// The wire `e` transmits on.
    fn wire_from(&self, e: Endpoint) -> Option<usize> {
        self.wire_of.iter().find(|(x, _)| *x == e).map(|&(_, w)| w)
    }

    /// A route on a node: `prefix` via `port` (gateway: the peer node's
    /// port address; connected when the peer is a host). Once the
    /// simulation runs, the node's FIB is rebuilt with it.
    pub fn route(&mut self, node: usize, prefix: &str, port: u16) {
        self.nodes[node].routes.push((prefix.parse().expect("prefix"), port));
        if self.built {
            let fib = Arc::new(self.fib_of(node));
            if let Some(pl) = self.nodes[node].pipeline.as_mut() {
                pl.set_fib(fib);
            }
        }
    }

    /// Give a host the reference source model (s.5.6), accepting CNPs from
    /// `known_nodes` (s.9), with `qps` active.
    pub fn set_source_model(&mut self, host: usize, p: SourceParams, known_nodes: &[Ipv4Addr], qps: &[u32]) {
        let mut m = SourceModel::new(p);
        for a in known_nodes {
            m.add_known_node(IpAddr::V4(*a));
        }
        for &q in qps {
            m.add_qp(q);
        }
        self.hosts[host].model = Some(m);
    }

    /// Answer every `every`-th packet received on `local_qp` with an RC ACK
    /// to `peer_qp` at `peer`.
    pub fn set_acks(&mut self, host: usize, every: u64, local_qp: u32, peer: Ipv4Addr, peer_qp: u32) {
        let h = &mut self.hosts[host];
        h.ack_every = every;
        h.ack_peers.push((local_qp, peer, peer_qp));
    }

    /// A traffic flow from `host`; returns its index on the host. It
    /// starts at `start_ns`, or at once when added to a running simulation
    /// after that.
    pub fn add_flow(&mut self, host: usize, spec: FlowSpec) -> usize {
        let h = &mut self.hosts[host];
        let i = h.flows.len();
        h.flows.push(Flow { spec, template: Vec::new(), psn: 0, sent_pkts: 0, sent_bytes: 0, last_rate: None, next_ps: spec.start_ns * 1000, ack_req_every: 0 });
        if self.built {
            self.start_flow(host, i);
        }
        i
    }

    /// Build a flow's frame template and schedule its first send (at its
    /// start, never before now).
    fn start_flow(&mut self, h: usize, f: usize) {
        let (src, mac, gw) = (self.hosts[h].ip, self.hosts[h].mac, self.hosts[h].gw_mac);
        let fl = &mut self.hosts[h].flows[f];
        fl.template = data_frame(mac, gw, src, fl.spec.dst, fl.spec.sport, &fl.spec.kind, fl.spec.payload);
        let t = fl.spec.start_ns.max(self.now);
        fl.next_ps = t * 1000;
        self.push(t, Ev::Send(h, f));
    }

    /// RoCEv2 flow `flow` of `host` asks for an ACK (BTH AckReq) on every
    /// `every`-th packet: PSN `every - 1`, `2 every - 1`, ... (a sink with
    /// [`Sim::set_acks`] of the same `every` answers exactly those while
    /// nothing is lost).
    pub fn set_ack_requests(&mut self, host: usize, flow: usize, every: u32) {
        self.hosts[host].flows[flow].ack_req_every = every;
    }

    fn peer_of(&self, e: Endpoint) -> Option<Endpoint> {
        Some(self.wires[self.wire_from(e)?].to)
    }

    fn endpoint_ip_mac(&self, e: Endpoint) -> (Ipv4Addr, MacAddr) {
        match e {
            Endpoint::Node(n, p) => (self.nodes[n].specs[usize::from(p)].addr.addr(), node_mac(n, p)),
            Endpoint::Host(h) => (self.hosts[h].ip, self.hosts[h].mac),
        }
    }

    /// Build the pipelines (topology, FIB, static neighbours) and schedule
    /// the first events. Called by `run_until` when needed.
    pub fn build(&mut self) {
        if self.built {
            return;
        }
        self.built = true;
        for n in 0..self.nodes.len() {
            let mut ifs = Vec::new();
            let mut neigh = Neighbours::default();
            for (p, s) in self.nodes[n].specs.iter().enumerate() {
                let mut i = Interface::new(&format!("p{p}"), p as u16, None, node_mac(n, p as u16), NODE_MTU);
                i.v4.push(s.addr);
                ifs.push(i);
            }
            for p in 0..self.nodes[n].specs.len() {
                if let Some(peer) = self.peer_of(Endpoint::Node(n, p as u16)) {
                    let (ip, mac) = self.endpoint_ip_mac(peer);
                    neigh.learn(p as u16, IpAddr::V4(ip), mac, NeighSource::Static);
                }
            }
            let fib = self.fib_of(n);
            let node = &mut self.nodes[n];
            node.pipeline = Some(Pipeline::new(
                Arc::new(Topology::new(ifs)),
                Arc::new(fib),
                Arc::new(neigh),
                node.counters.clone(),
                PipelineConfig::default(),
            ));
        }
        for h in 0..self.hosts.len() {
            if let Some(Endpoint::Node(n, p)) = self.peer_of(Endpoint::Host(h)) {
                self.hosts[h].gw_mac = node_mac(n, p);
            }
            for f in 0..self.hosts[h].flows.len() {
                self.start_flow(h, f);
            }
        }
        for n in 0..self.nodes.len() {
            self.push(0, Ev::Tick(n));
        }
        if self.cfg.sample_ns > 0 {
            self.push(0, Ev::Sample);
        }
    }

    /// A node's FIB: its routes, each via the peer of its port (a gateway
    /// when the peer is a node, connected when it is a host).
    fn fib_of(&self, n: usize) -> Fib {
        let mut fib = Fib::default();
        for &(pfx, port) in &self.nodes[n].routes {
            let gw = match self.peer_of(Endpoint::Node(n, port)) {
                Some(e @ Endpoint::Node(..)) => Some(IpAddr::V4(self.endpoint_ip_mac(e).0)),
                _ => None,
            };
            fib.insert4(pfx, NextHop { iface: port, gateway: gw });
        }
        fib
    }

    fn push(&mut self, t: u64, ev: Ev) {
        self.queue.push(t, ev);
    }

    fn log(&mut self, rec: Record) {
        self.timeline.push(Entry { t: self.now, rec });
    }

    /// Run every event up to and including `t_end`; `now` ends at `t_end`.
    pub fn run_until(&mut self, t_end: u64) {
        self.build();
        while let Some((t, ev)) = self.queue.pop_until(t_end) {
            assert!(self.events < self.cfg.max_events, "event budget exhausted at t = {} ns", self.now);
            debug_assert!(t >= self.now);
            self.now = t;
            self.events += 1;
            match ev {
                Ev::Arrive(Endpoint::Node(n, p), pkt) => self.node_rx(n, p, pkt),
                Ev::Arrive(Endpoint::Host(h), pkt) => self.host_rx(h, pkt),
                Ev::Wake(n) => {
                    if self.nodes[n].wake_at <= self.now {
                        self.nodes[n].wake_at = u64::MAX;
                    }
                    self.node_loop(n);
                }
                Ev::Tick(n) => {
                    self.node_loop(n);
                    let t = self.now + self.cfg.tick_ns.max(1);
                    self.push(t, Ev::Tick(n));
                }
                Ev::Sample => {
                    self.sample();
                    let t = self.now + self.cfg.sample_ns;
                    self.push(t, Ev::Sample);
                }
                Ev::Send(h, f) => self.host_send(h, f),
            }
        }
        self.now = self.now.max(t_end);
    }

    fn sample(&mut self) {
        for n in 0..self.nodes.len() {
            for p in 0..self.nodes[n].ports.len() {
                if self.nodes[n].ports[p].cong.is_some() {
                    let depth = self.nodes[n].ports[p].queue.depth_bytes();
                    self.log(Record::Queue { node: n, port: p as u16, depth });
                }
            }
        }
    }

    /// Hand a frame to the wire of `from` (a node port's only when its TX
    /// ring has room: `service` sees to it).
    fn transmit(&mut self, from: Endpoint, pkt: VecPacket) {
        let Some(w) = self.wire_from(from) else {
            return; // unlinked: the frame is lost
        };
        let now = self.now;
        let wire = &mut self.wires[w];
        // The frame's time on the wire: its bytes padded to the minimum
        // frame, plus the per-frame overhead.
        let octets = (pkt.len() as u64).max(u64::from(MIN_FRAME)) + u64::from(wire.frame_overhead);
        let ser_ps = (u128::from(octets) * 8 * 1_000_000_000_000 / u128::from(wire.rate_bps)) as u64;
        // Back-to-back frames stay back to back: event times are whole
        // nanoseconds, so a frame handed over less than 1 ns after the wire
        // became free starts when it became free (no rounding drift).
        let start = if wire.busy_until_ps + 1000 > now * 1000 { wire.busy_until_ps } else { now * 1000 };
        wire.busy_until_ps = start + ser_ps.max(1);
        wire.frames += 1;
        if wire.ring > 0 {
            debug_assert!(wire.ring_free_ns(now * 1000).is_none(), "{from:?}: TX ring full");
            wire.pending_ps.push_back(wire.busy_until_ps);
        }
        let (t, to) = (wire.busy_until_ps.div_ceil(1000) + wire.delay_ns, wire.to);
        self.push(t, Ev::Arrive(to, pkt));
    }

    // ------------------------------------------------------------ nodes

    /// `handle_burst` for a burst of one frame, then the rest of the loop.
    fn node_rx(&mut self, n: usize, port: u16, mut pkt: VecPacket) {
        let now = self.now;
        let node = &mut self.nodes[n];
        let pc = &node.counters.ports[usize::from(port) % crate::counters::MAX_PORTS];
        pc.rx_pkts.add(1);
        pc.rx_bytes.add(pkt.len() as u64);
        // As the worker: one parse for all ports.
        if node.ports.iter().any(|e| e.cong.is_some()) && crate::classify::maybe_response(pkt.data()) {
            if let Some(meta) = crate::classify::roce_meta(pkt.data()) {
                for e in node.ports.iter_mut() {
                    e.observe_roce(&meta, now);
                }
            }
        }
        let Some(pl) = node.pipeline.as_mut() else { return };
        match pl.process(&mut pkt, port, now) {
            Verdict::Tx(out) => {
                let reply = pl.reply;
                self.output(n, out, pkt, reply);
            }
            Verdict::Drop(r) => node.counters.dropped(r),
            // One pipeline per node: it owns everything.
            Verdict::Consumed | Verdict::ToOwner => {}
            Verdict::Replicate(k) => {
                // End.MT copies or IPv4 fragments, as the worker builds
                // them: one fresh buffer per copy (room for a frame of the
                // MTU), then the original goes. Fragments of the node's
                // own reply leave ahead of queued data, like the reply.
                for i in 0..usize::from(k) {
                    let mut c = frame_buffer();
                    let node = &mut self.nodes[n];
                    let Some(pl) = node.pipeline.as_mut() else { break };
                    match pl.build_replica(i, &pkt, &mut c, now) {
                        Ok(out) => {
                            let reply = pl.reply;
                            self.output(n, out, c, reply);
                        }
                        Err(r) => node.counters.dropped(r),
                    }
                }
            }
        }
        // Static neighbours: no solicitation is expected; count any.
        if let Some(pl) = self.nodes[n].pipeline.as_mut() {
            pl.solicits.clear();
            pl.events.clear();
        }
        self.node_loop(n);
    }

    /// `Worker::output` for a port with an egress stage.
    fn output(&mut self, n: usize, port: u16, pkt: VecPacket, priority: bool) {
        let now = self.now;
        let node = &mut self.nodes[n];
        let p = usize::from(port);
        let Some(e) = node.ports.get_mut(p) else {
            node.counters.dropped(Drop::BadPort);
            return;
        };
        let before = e.cong.as_ref().map(|c| c.stats().marked).unwrap_or(0);
        let r = if priority { e.admit_priority(pkt) } else { e.admit(pkt, now, &node.counters) };
        if let Err((_, why)) = r {
            node.counters.dropped(why);
        }
        if !node.first_ce[p] && before == 0 {
            if let Some(c) = e.cong.as_ref() {
                if c.stats().marked > 0 {
                    node.first_ce[p] = true;
                    let qd = e.queue.depth_bytes();
                    self.log(Record::FirstCe { node: n, port, qd });
                }
            }
        }
    }

    /// `service_egress` + `poll_congestion` (+ `service_egress` again for the
    /// CNPs just built: the worker sends them on its next loop, immediately).
    fn node_loop(&mut self, n: usize) {
        let now = self.now;
        self.service(n);
        let mut any = false;
        for p in 0..self.nodes[n].ports.len() {
            let node = &mut self.nodes[n];
            if node.ports[p].cong.is_none() {
                continue;
            }
            let mut reqs = std::mem::take(&mut node.reqs);
            node.ports[p].poll(now, &mut reqs);
            let qd = node.ports[p].queue.depth_bytes();
            if let Some(s) = node.ports[p].cong.as_ref().map(|c| *c.stats()) {
                if s.suppressed != node.deferred[p] {
                    node.deferred[p] = s.suppressed;
                    self.log(Record::Deferred { node: n, port: p as u16, total: s.suppressed, qd });
                }
                let node = &mut self.nodes[n];
                if s.escalated != node.escalated[p] {
                    node.escalated[p] = s.escalated;
                    self.log(Record::Escalated { node: n, port: p as u16, total: s.escalated, qd });
                }
            }
            for r in &reqs {
                let node = &mut self.nodes[n];
                let mut m = VecPacket::from_bytes(&[]);
                let Some(pl) = node.pipeline.as_mut() else { break };
                match node.ports[p].build_cnp_packet(pl, &self.cfg.wire, r, &mut m, now) {
                    Ok(out) => {
                        self.log(Record::CnpSent { node: n, port: p as u16, out, qd, to: r.to, info: r.info });
                        self.output(n, out, m, true);
                        any = true;
                    }
                    Err(why) => {
                        self.nodes[n].counters.dropped(why);
                        self.log(Record::CnpFailed { node: n, port: p as u16, why });
                    }
                }
            }
            reqs.clear();
            self.nodes[n].reqs = reqs;
        }
        if any {
            self.service(n);
        }
        // Next shaper release; from a port whose TX ring is full, not
        // before the ring has room.
        let mut next: Option<u64> = None;
        for p in 0..self.nodes[n].ports.len() {
            let Some(t) = self.nodes[n].ports[p].queue.next_departure_ns(now) else { continue };
            let ring = self.wire_from(Endpoint::Node(n, p as u16)).and_then(|w| self.wires[w].ring_free_ns(now * 1000));
            let t = ring.map_or(t, |r| t.max(r));
            next = Some(next.map_or(t, |x| x.min(t)));
        }
        if let Some(t) = next {
            let t = t.max(now + 1);
            if t < self.nodes[n].wake_at {
                self.nodes[n].wake_at = t;
                self.push(t, Ev::Wake(n));
            }
        }
    }

    /// `service_egress`: each port hands what its shaper releases to its
    /// NIC, which takes as many as its TX ring has room for (`tx_burst`);
    /// the rest goes back to the head of the queue (`requeue`, last first)
    /// and waits for the ring to drain.
    fn service(&mut self, n: usize) {
        let now = self.now;
        let mut out = std::mem::take(&mut self.released);
        for p in 0..self.nodes[n].ports.len() {
            let from = Endpoint::Node(n, p as u16);
            let wire = self.wire_from(from);
            // Bounded: a dequeue call hands out at most 256 packets and the
            // shaper's bucket bounds how many calls release anything.
            for _ in 0..1024 {
                let room = wire.map_or(usize::MAX, |w| self.wires[w].ring_room(now * 1000));
                if room == 0 {
                    break;
                }
                let k = self.nodes[n].ports[p].dequeue(now, 256, |m, len, flow, prio| out.push((m, len, flow, prio)));
                if k == 0 {
                    break;
                }
                let taken = room.min(out.len());
                for (m, len, flow, prio) in out.drain(..taken) {
                    let node = &mut self.nodes[n];
                    node.counters.ports[p].tx_pkts.add(1);
                    node.counters.ports[p].tx_bytes.add(u64::from(len));
                    if !prio {
                        node.ports[p].sent(flow, len, now);
                    }
                    self.transmit(from, m);
                }
                // Backpressure: what the ring refused, back in order.
                let e = &mut self.nodes[n].ports[p];
                for (m, len, flow, prio) in out.drain(..).rev() {
                    e.requeue(m, len, flow, prio);
                }
            }
            let node = &self.nodes[n];
            node.counters.queue_depth[p].set(node.ports[p].queue.depth_bytes());
        }
        self.released = out;
    }

    // ------------------------------------------------------------ hosts

    fn host_send(&mut self, h: usize, f: usize) {
        let now = self.now;
        let host = &mut self.hosts[h];
        let fl = &mut host.flows[f];
        if now >= fl.spec.stop_ns {
            return;
        }
        let rate = match (fl.spec.pace, fl.spec.kind) {
            (Pace::Fixed(r), _) => r,
            (Pace::Model, FlowKind::Roce { src_qp, .. }) => host.model.as_ref().and_then(|m| m.rate(src_qp, now)).unwrap_or(0.0),
            (Pace::Model, FlowKind::Udp { .. }) => 0.0,
        };
        if fl.last_rate != Some(rate) {
            fl.last_rate = Some(rate);
            if let FlowKind::Roce { src_qp, .. } = fl.spec.kind {
                if fl.spec.pace == Pace::Model {
                    self.timeline.push(Entry { t: now, rec: Record::Rate { host: h, qp: src_qp, bps: rate } });
                }
            }
        }
        let fl = &mut self.hosts[h].flows[f];
        if rate <= 0.0 {
            // Paused: look again shortly.
            self.push(now + 10 * US, Ev::Send(h, f));
            return;
        }
        let mut pkt = VecPacket::from_bytes(&fl.template);
        if let FlowKind::Roce { .. } = fl.spec.kind {
            let psn = fl.psn & 0x00ff_ffff;
            let ack_req = fl.ack_req_every > 0 && (psn + 1).is_multiple_of(fl.ack_req_every);
            let d = pkt.data_mut();
            d[14 + 20 + 8 + 8] = if ack_req { 0x80 } else { 0 };
            d[14 + 20 + 8 + 9..14 + 20 + 8 + 12].copy_from_slice(&psn.to_be_bytes()[1..]);
            fl.psn = fl.psn.wrapping_add(1);
        }
        let len = pkt.len() as u64;
        fl.sent_pkts += 1;
        fl.sent_bytes += len;
        let gap_ps = ((len * 8) as f64 * 1e12 / rate).round() as u64;
        self.transmit(Endpoint::Host(h), pkt);
        // Never queue at the host beyond its NIC: the next packet waits for
        // the wire too.
        let wire_free = self.wire_from(Endpoint::Host(h)).map_or(0, |w| self.wires[w].busy_until_ps);
        let fl = &mut self.hosts[h].flows[f];
        // Pacing in picoseconds from the previous send time (not from the
        // rounded event time) so the rate is exact on average; a late start
        // (after a Pause, or the wire) restarts from now.
        let base = if fl.next_ps + 1000 >= now * 1000 { fl.next_ps } else { now * 1000 };
        fl.next_ps = (base + gap_ps.max(1)).max(wire_free);
        let next = fl.next_ps.div_ceil(1000).max(now + 1);
        self.push(next, Ev::Send(h, f));
    }

    fn host_rx(&mut self, h: usize, pkt: VecPacket) {
        let now = self.now;
        let d = pkt.data();
        if d.len() < 14 + 20 || d[12..14] != [0x08, 0x00] {
            return;
        }
        let ip = &d[14..];
        let ihl = usize::from(ip[0] & 0x0f) * 4;
        let ecn = ip[1] & 3;
        let proto = ip[9];
        let host = &mut self.hosts[h];
        host.rx.pkts += 1;
        host.rx.bytes += d.len() as u64;
        host.rx.ce += u64::from(ecn == 3);
        if proto != 17 || ip.len() < ihl + 8 + 12 {
            return;
        }
        let udp = &ip[ihl..];
        let dport = u16::from_be_bytes([udp[2], udp[3]]);
        if dport != ROCEV2_UDP_PORT {
            return;
        }
        let bth = &udp[8..];
        let opcode = bth[0];
        let dest_qp = u32::from_be_bytes([0, bth[5], bth[6], bth[7]]);
        let psn = u32::from_be_bytes([0, bth[9], bth[10], bth[11]]);
        if opcode == 0x81 {
            // CNP: the source model parses (ICRC verified) and applies it.
            let wire = self.cfg.wire;
            let r = match host.model.as_mut() {
                None => return,
                Some(m) => match parse_cnp(ip, &wire) {
                    None => Err(()),
                    Some((from, info)) => Ok((from, info, m.receive(from, &info, now))),
                },
            };
            match r {
                Ok((from, info, result)) => self.log(Record::CnpReceived { host: h, from, info, result }),
                Err(()) => self.log(Record::CnpMalformed { host: h }),
            }
            self.note_rates(h);
            return;
        }
        if opcode == 0x11 {
            return; // an ACK
        }
        match host.rx_qp.iter_mut().find(|(q, _)| *q == dest_qp) {
            Some((_, s)) => {
                s.pkts += 1;
                s.bytes += d.len() as u64;
                s.ce += u64::from(ecn == 3);
            }
            None => host.rx_qp.push((dest_qp, RxStats { pkts: 1, bytes: d.len() as u64, ce: u64::from(ecn == 3) })),
        }
        let n = host.rx_for(dest_qp).pkts;
        if host.ack_every > 0 && n.is_multiple_of(host.ack_every) {
            if let Some(&(_, peer, peer_qp)) = host.ack_peers.iter().find(|(q, _, _)| *q == dest_qp) {
                let f = ack_frame(host.mac, host.gw_mac, host.ip, peer, peer_qp, psn);
                host.acks_sent += 1;
                self.transmit(Endpoint::Host(h), VecPacket::from_bytes(&f));
            }
        }
    }

    /// Record the current model rate of every model-paced flow of a host.
    fn note_rates(&mut self, h: usize) {
        let now = self.now;
        let host = &mut self.hosts[h];
        let Some(m) = host.model.as_ref() else { return };
        for fl in host.flows.iter_mut() {
            if let (Pace::Model, FlowKind::Roce { src_qp, .. }) = (fl.spec.pace, fl.spec.kind) {
                let r = m.rate(src_qp, now).unwrap_or(0.0);
                if fl.last_rate != Some(r) {
                    fl.last_rate = Some(r);
                    self.timeline.push(Entry { t: now, rec: Record::Rate { host: h, qp: src_qp, bps: r } });
                }
            }
        }
    }

    // ------------------------------------------------------------ queries

    /// Queue samples of a port: (t, bytes).
    pub fn queue_samples(&self, node: usize, port: u16) -> Vec<(u64, u64)> {
        self.timeline
            .iter()
            .filter_map(|e| match e.rec {
                Record::Queue { node: n, port: p, depth } if n == node && p == port => Some((e.t, depth)),
                _ => None,
            })
            .collect()
    }

    /// (t, QD) of the first CE mark of a port.
    pub fn first_ce(&self, node: usize, port: u16) -> Option<(u64, u64)> {
        self.timeline.iter().find_map(|e| match e.rec {
            Record::FirstCe { node: n, port: p, qd } if n == node && p == port => Some((e.t, qd)),
            _ => None,
        })
    }

    /// CNPs a node sent: (t, congested port, QD, info).
    pub fn cnps_sent(&self, node: usize) -> Vec<(u64, u16, u64, CnpInfo)> {
        self.timeline
            .iter()
            .filter_map(|e| match e.rec {
                Record::CnpSent { node: n, port, qd, info, .. } if n == node => Some((e.t, port, qd, info)),
                _ => None,
            })
            .collect()
    }

    /// CNPs a host received: (t, from, info, verdict).
    pub fn cnps_received(&self, host: usize) -> Vec<(u64, IpAddr, CnpInfo, Result<(), SourceReject>)> {
        self.timeline
            .iter()
            .filter_map(|e| match e.rec {
                Record::CnpReceived { host: h, from, info, result } if h == host => Some((e.t, from, info, result)),
                _ => None,
            })
            .collect()
    }

    /// Rate changes of a source QP: (t, bit/s).
    pub fn rates(&self, host: usize, qp: u32) -> Vec<(u64, f64)> {
        self.timeline
            .iter()
            .filter_map(|e| match e.rec {
                Record::Rate { host: h, qp: q, bps } if h == host && q == qp => Some((e.t, bps)),
                _ => None,
            })
            .collect()
    }

    /// Deferral records of a node: (t, port, cumulative count, QD).
    pub fn deferrals(&self, node: usize) -> Vec<(u64, u16, u64, u64)> {
        self.timeline
            .iter()
            .filter_map(|e| match e.rec {
                Record::Deferred { node: n, port, total, qd } if n == node => Some((e.t, port, total, qd)),
                _ => None,
            })
            .collect()
    }

    /// A readable timeline without the queue samples (for test output).
    pub fn describe(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        for e in &self.timeline {
            if matches!(e.rec, Record::Queue { .. }) {
                continue;
            }
            let t = e.t as f64 / 1e6;
            let _ = match &e.rec {
                Record::FirstCe { node, port, qd } => writeln!(s, "{t:10.4} ms {} p{port}: first CE mark at QD {qd}", self.nodes[*node].name),
                Record::CnpSent { node, port, out, qd, to, info } => writeln!(
                    s,
                    "{t:10.4} ms {} p{port}: CNP {:?} {} level {} metric {:?} {} to {to} qp {} (QD {qd}, out p{out})",
                    self.nodes[*node].name, info.action, info.parameter, info.congestion_level, info.metric_type, info.metric_value, info.source_qp
                ),
                Record::CnpFailed { node, port, why } => writeln!(s, "{t:10.4} ms {} p{port}: CNP failed {why:?}", self.nodes[*node].name),
                Record::Deferred { node, port, total, qd } => writeln!(s, "{t:10.4} ms {} p{port}: deferred (#{total}, QD {qd})", self.nodes[*node].name),
                Record::Escalated { node, port, total, qd } => writeln!(s, "{t:10.4} ms {} p{port}: escalated (#{total}, QD {qd})", self.nodes[*node].name),
                Record::CnpReceived { host, from, info, result } => writeln!(
                    s,
                    "{t:10.4} ms {}: CNP from {from} {:?} {} level {} -> {result:?}",
                    self.hosts[*host].name, info.action, info.parameter, info.congestion_level
                ),
                Record::CnpMalformed { host } => writeln!(s, "{t:10.4} ms {}: malformed CNP", self.hosts[*host].name),
                Record::Rate { host, qp, bps } => writeln!(s, "{t:10.4} ms {} qp {qp}: rate {:.3} Gb/s", self.hosts[*host].name, bps / 1e9),
                Record::Queue { .. } => Ok(()),
            };
        }
        s
    }
}

// ------------------------------------------------------------ frames

// Every argument is a header field of the frame.
#[allow(clippy::too_many_arguments)]
fn ipv4_udp(out: &mut Vec<u8>, src_mac: MacAddr, dst_mac: MacAddr, src: Ipv4Addr, dst: Ipv4Addr, tos: u8, sport: u16, dport: u16, body_len: usize) {
    out.extend_from_slice(&dst_mac);
    out.extend_from_slice(&src_mac);
    out.extend_from_slice(&[0x08, 0x00]);
    let total = (20 + 8 + body_len) as u16;
    let mut h = [0x45, tos, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    h[2..4].copy_from_slice(&total.to_be_bytes());
    h[12..16].copy_from_slice(&src.octets());
    h[16..20].copy_from_slice(&dst.octets());
    let c = checksum::checksum(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    out.extend_from_slice(&h);
    out.extend_from_slice(&sport.to_be_bytes());
    out.extend_from_slice(&dport.to_be_bytes());
    out.extend_from_slice(&((8 + body_len) as u16).to_be_bytes());
    out.extend_from_slice(&[0, 0]); // UDP checksum 0 (IPv4, RoCEv2)
}

fn bth(opcode: u8, dest_qp: u32, psn: u32) -> [u8; 12] {
    let mut b = [0u8; 12];
    b[0] = opcode;
    b[2..4].copy_from_slice(&0xffffu16.to_be_bytes());
    b[5..8].copy_from_slice(&dest_qp.to_be_bytes()[1..]);
    b[9..12].copy_from_slice(&psn.to_be_bytes()[1..]);
    b
}

/// A data frame template (PSN 0): RoCEv2 RC SEND-only (ECT(0), ICRC left
/// zero) or plain UDP (not ECT).
pub fn data_frame(src_mac: MacAddr, dst_mac: MacAddr, src: Ipv4Addr, dst: Ipv4Addr, sport: u16, kind: &FlowKind, payload: usize) -> Vec<u8> {
    let mut f = Vec::with_capacity(14 + 20 + 8 + 12 + payload + 4);
    match *kind {
        FlowKind::Roce { dst_qp, .. } => {
            ipv4_udp(&mut f, src_mac, dst_mac, src, dst, 0x02, sport, 4791, 12 + payload + 4);
            f.extend_from_slice(&bth(0x04, dst_qp, 0));
            f.resize(f.len() + payload + 4, 0);
        }
        FlowKind::Udp { dport } => {
            ipv4_udp(&mut f, src_mac, dst_mac, src, dst, 0, sport, dport, payload);
            f.resize(f.len() + payload, 0);
        }
    }
    f
}

/// An RC ACK (BTH + AETH) to `dest_qp`, acknowledging `psn`.
pub fn ack_frame(src_mac: MacAddr, dst_mac: MacAddr, src: Ipv4Addr, dst: Ipv4Addr, dest_qp: u32, psn: u32) -> Vec<u8> {
    let mut f = Vec::with_capacity(14 + 20 + 8 + 12 + 4 + 4);
    ipv4_udp(&mut f, src_mac, dst_mac, src, dst, 0x02, 0xc000, 4791, 12 + 4 + 4);
    f.extend_from_slice(&bth(0x11, dest_qp, psn));
    f.extend_from_slice(&[0x1f, 0, 0, 0]); // AETH: ACK, credits invalid, MSN 0
    f.extend_from_slice(&[0; 4]);
    f
}
