//! A deterministic WAN harness for the ingress-PE scenarios of
//! draft-hzh-fantel-wan-tunnel (Figures 2 and 3): IPv6 / SRv6 nodes running
//! their real [`Pipeline`]s (H.Encaps under SR policies, End, End.DT6, local
//! delivery of notifications), FANN [`Detector`]s on the P nodes' ports
//! (link state and transmitted bytes, as the control thread's FANN agent
//! observes them), and the ingress PE's [`PeControl`] fed from the pipeline's
//! `Event::PeNotification`s exactly as the router's control thread is.
//!
//! Virtual time in nanoseconds (never going backwards: nothing is scheduled
//! before the present), one event heap, no threads. Links are full duplex;
//! each direction serialises frames at its rate, `len * 8 / rate` kept in
//! picoseconds (a transmitter is busy until the previous frame has left, no
//! queue limit: scenarios keep offered load near the link rate) and then
//! delays them by the propagation delay. A link that is down drops what is
//! sent into it, and a link that goes down loses what is on it (being
//! serialised, waiting for its transmitter or propagating): both counted
//! per link. Host flows are paced in picoseconds too.
//! Nodes "tick" every `tick_ns` (the FANN agent's observation round). A
//! `Replicate` verdict (IPv4 fragments at an ingress PE, End.MT copies) is
//! what the worker makes of it: each packet built with `build_replica` in a
//! fresh buffer of the MTU's size, and sent.
//! The control thread's reaction is modelled by `control_delay_ns`: a new
//! SID table snapshot reaches the PE's pipeline that long after the
//! notification was handed over; the controller copy leaves at the same time.
//!
//! This is separate from [`crate::sim`] (IPv4 RoCEv2 congestion scenarios
//! with egress queues) so that each can grow without touching the other.

use crate::sim::EventQueue;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::Arc;

use crate::counters::WorkerCounters;
use crate::fann::{notification_packet, Detector, DetectorConfig, Notification, PeConfig, PeControl};
use crate::packet::VecPacket;
use crate::pipeline::{Event, Pipeline, PipelineConfig, Verdict};
use crate::sim::{frame_buffer, NODE_MTU};
use crate::srv6::SidTable;
use crate::tables::{Fib, Interface, MacAddr, NeighSource, Neighbours, NextHop, Topology};
use crate::wire::checksum;
use crate::wire::params::Params;

pub const US: u64 = 1_000;
pub const MS: u64 = 1_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Endpoint {
    Node(usize, u16),
    Host(usize),
}

#[derive(Debug, Clone, Copy)]
pub struct WanConfig {
    pub tick_ns: u64,
    pub control_delay_ns: u64,
    pub params: Params,
    pub max_events: u64,
}

impl Default for WanConfig {
    fn default() -> Self {
        WanConfig { tick_ns: 10 * US, control_delay_ns: 5 * US, params: Params::DEFAULT, max_events: 50_000_000 }
    }
}

/// A constant-rate IPv6/UDP flow from a host; the UDP source port cycles
/// over `ports` values so that H.Encaps spreads it over weighted SID lists.
#[derive(Debug, Clone, Copy)]
pub struct Flow {
    pub dst: Ipv6Addr,
    pub rate_bps: u64,
    /// IPv6 packet length (40 + 8 + payload).
    pub len: usize,
    pub start: u64,
    pub stop: u64,
    pub ports: u16,
    /// Traffic class of the packets.
    pub tc: u8,
}

/// What a traced node transmitted: time, port, outer destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxRecord {
    pub t: u64,
    pub port: u16,
    pub dst: Ipv6Addr,
    /// IPv6 Next Header of the packet (43: SRH, 58: ICMPv6, ...).
    pub nh: u8,
}

struct Port {
    link: Option<usize>,
    tx_pkts: u64,
    tx_bytes: u64,
    /// (detector, tx bytes at the last round)
    detector: Option<(Detector, u64)>,
}

struct Node {
    name: String,
    addr: Ipv6Addr,
    ports: Vec<Port>,
    routes: Vec<(ipnet::Ipv6Net, u16)>,
    sids: Option<SidTable>,
    pe_cfg: Option<PeConfig>,
    fann_to: Vec<Ipv6Addr>,
    fann_udp: bool,
    trace: bool,
    pipeline: Option<Pipeline>,
    pe: Option<PeControl>,
    counters: Arc<WorkerCounters>,
}

struct Link {
    ends: [Endpoint; 2],
    rate_bps: u64,
    delay_ns: u64,
    up: bool,
    /// When each direction's transmitter is free, ps (exact serialisation:
    /// no rounding drift).
    busy_ps: [u64; 2],
    /// Frames handed to the link (both directions) and not yet arrived.
    in_flight: u64,
    /// Bumped when the link goes down: frames that were on it when it did
    /// (an older generation) never arrive.
    generation: u64,
    /// Frames lost on the link: sent into it while it was down, or on it
    /// when it went down.
    lost: u64,
    /// The /64 of the link: end 0 is ::1, end 1 is ::2.
    net: Ipv6Addr,
}

struct Host {
    name: String,
    addr: Ipv6Addr,
    link: Option<usize>,
    flows: Vec<Flow>,
    sent: Vec<u64>,
    /// Per flow: when its next packet is due, ps.
    next_ps: Vec<u64>,
    /// (arrival time, source address, UDP destination port) per UDP packet.
    rx: Vec<(u64, Ipv6Addr, u16)>,
    /// Other IPv6 frames received (e.g. ICMPv6 FANN copies), whole.
    other: Vec<(u64, Vec<u8>)>,
}

enum Ev {
    /// A frame reaches `to` over `link`, sent in its `generation`.
    Arrive { to: Endpoint, frame: Vec<u8>, link: usize, generation: u64 },
    HostSend(usize, usize),
    Tick(usize),
    Apply(usize, Arc<SidTable>),
    Inject(usize, Vec<u8>),
    Link(usize, bool),
}

pub struct WanSim {
    pub cfg: WanConfig,
    pub now: u64,
    nodes: Vec<Node>,
    links: Vec<Link>,
    hosts: Vec<Host>,
    queue: EventQueue<Ev>,
    events: u64,
    built: bool,
    /// Traced nodes' transmissions.
    pub tx_log: Vec<(usize, TxRecord)>,
    /// When each new SID table reached a PE's pipeline.
    pub applied: Vec<(u64, usize)>,
    /// FANN notifications sent by the detectors: (time, node, event type, code).
    pub fann_sent: Vec<(u64, usize, u8, u8)>,
}

fn node_mac(n: usize, p: u16) -> MacAddr {
    [0x02, 0x00, 0x00, (n >> 8) as u8, n as u8, p as u8]
}

fn host_mac(h: usize) -> MacAddr {
    [0x02, 0x00, 0x01, (h >> 8) as u8, h as u8, 0x00]
}

fn link_addr(net: Ipv6Addr, end: usize) -> Ipv6Addr {
    let mut o = net.octets();
    o[15] = end as u8 + 1;
    Ipv6Addr::from(o)
}

impl WanSim {
    pub fn new(cfg: WanConfig) -> Self {
        WanSim { cfg, now: 0, nodes: Vec::new(), links: Vec::new(), hosts: Vec::new(), queue: EventQueue::default(), events: 0, built: false, tx_log: Vec::new(), applied: Vec::new(), fann_sent: Vec::new() }
    }

    /// A node with `ports` ports and a control-plane address `addr`.
    pub fn add_node(&mut self, name: &str, addr: &str, ports: u16) -> usize {
        self.nodes.push(Node {
            name: name.into(),
            addr: addr.parse().expect("node address"),
            ports: (0..ports).map(|_| Port { link: None, tx_pkts: 0, tx_bytes: 0, detector: None }).collect(),
            routes: Vec::new(),
            sids: None,
            pe_cfg: None,
            fann_to: Vec::new(),
            fann_udp: false,
            trace: false,
            pipeline: None,
            pe: None,
            counters: Arc::new(WorkerCounters::default()),
        });
        self.nodes.len() - 1
    }

    pub fn add_host(&mut self, name: &str, addr: &str) -> usize {
        self.hosts.push(Host { name: name.into(), addr: addr.parse().expect("host address"), link: None, flows: Vec::new(), sent: Vec::new(), next_ps: Vec::new(), rx: Vec::new(), other: Vec::new() });
        self.hosts.len() - 1
    }

    /// Join two endpoints; the link gets the /64 `2001:db8:ff<i>::/64`
    /// (end a = ::1, end b = ::2; a host takes its own address).
    pub fn link(&mut self, a: Endpoint, b: Endpoint, rate_bps: u64, delay_ns: u64) -> usize {
        let i = self.links.len();
        let net = Ipv6Addr::new(0x2001, 0xdb8, 0xff00 + i as u16, 0, 0, 0, 0, 0);
        for e in [a, b] {
            match e {
                Endpoint::Node(n, p) => self.nodes[n].ports[usize::from(p)].link = Some(i),
                Endpoint::Host(h) => self.hosts[h].link = Some(i),
            }
        }
        self.links.push(Link { ends: [a, b], rate_bps, delay_ns, up: true, busy_ps: [0, 0], in_flight: 0, generation: 0, lost: 0, net });
        i
    }

    /// `node` sends `prefix` out of `port` (to the peer's link address).
    pub fn route(&mut self, node: usize, prefix: &str, port: u16) {
        self.nodes[node].routes.push((prefix.parse().expect("prefix"), port));
    }

    pub fn set_sids(&mut self, node: usize, t: SidTable) {
        self.nodes[node].sids = Some(t);
    }

    /// Make `node` an ingress PE (its SID table must hold the policies).
    pub fn set_ingress_pe(&mut self, node: usize, cfg: PeConfig) {
        self.nodes[node].pe_cfg = Some(cfg);
    }

    /// Run a FANN detector on `port` of `node`, notifying `pes`.
    pub fn add_detector(&mut self, node: usize, port: u16, cfg: DetectorConfig, pes: &[&str], udp: bool) {
        let n = &mut self.nodes[node];
        let cfg = DetectorConfig { node: n.addr, ..cfg };
        n.ports[usize::from(port)].detector = Some((Detector::new(cfg, u32::from(port), u32::from(port) << 24), 0));
        n.fann_to = pes.iter().map(|p| p.parse().expect("PE address")).collect();
        n.fann_udp = udp;
    }

    /// Record every transmission of `node` in `tx_log`.
    pub fn trace(&mut self, node: usize) {
        self.nodes[node].trace = true;
    }

    /// A flow from `host`, starting at `f.start` (now, if that is past).
    pub fn add_flow(&mut self, host: usize, f: Flow) {
        let start = f.start.max(self.now);
        let h = &mut self.hosts[host];
        h.flows.push(f);
        h.sent.push(0);
        h.next_ps.push(start * 1000);
        let i = h.flows.len() - 1;
        self.push(start, Ev::HostSend(host, i));
    }

    /// Take link `link` down (`up == false`) or up at time `t`.
    pub fn set_link(&mut self, link: usize, up: bool, t: u64) {
        self.push(t, Ev::Link(link, up));
    }

    /// Schedule `ev` at `t`, or now if that is past.
    fn push(&mut self, t: u64, ev: Ev) {
        self.queue.push(t.max(self.now), ev);
    }

    /// Build the nodes' tables and pipelines (called by `run_until`).
    pub fn build(&mut self) {
        if self.built {
            return;
        }
        self.built = true;
        for n in 0..self.nodes.len() {
            let mut ifs = Vec::new();
            let mut neigh = Neighbours::default();
            let mut fib = Fib::default();
            let mut peer_of = Vec::new();
            for p in 0..self.nodes[n].ports.len() {
                let mut ifc = Interface::new(&format!("{}-p{p}", self.nodes[n].name), p as u16, None, node_mac(n, p as u16), NODE_MTU);
                if p == 0 {
                    ifc.v6.push(ipnet::Ipv6Net::new(self.nodes[n].addr, 128).expect("/128"));
                }
                let mut peer = None;
                if let Some(l) = self.nodes[n].ports[p].link {
                    let link = &self.links[l];
                    let me = if link.ends[0] == Endpoint::Node(n, p as u16) { 0 } else { 1 };
                    let other = link.ends[1 - me];
                    let (peer_ip, peer_mac, mine) = match other {
                        Endpoint::Host(h) => (self.hosts[h].addr, host_mac(h), link_addr(self.hosts[h].addr, 0xfe)),
                        Endpoint::Node(m, q) => (link_addr(link.net, 1 - me), node_mac(m, q), link_addr(link.net, me)),
                    };
                    ifc.v6.push(ipnet::Ipv6Net::new(mine, 64).expect("/64"));
                    neigh.learn(p as u16, IpAddr::V6(peer_ip), peer_mac, NeighSource::Static);
                    if let Endpoint::Host(_) = other {
                        fib.insert6(ipnet::Ipv6Net::new(peer_ip, 128).expect("/128"), NextHop { iface: p as u16, gateway: None });
                    }
                    peer = Some(peer_ip);
                }
                peer_of.push(peer);
                ifs.push(ifc);
            }
            for (prefix, port) in self.nodes[n].routes.clone() {
                let gw = peer_of.get(usize::from(port)).copied().flatten();
                fib.insert6(prefix, NextHop { iface: port, gateway: gw.map(IpAddr::V6) });
            }
            let counters = self.nodes[n].counters.clone();
            let mut pl = Pipeline::new(Arc::new(Topology::new(ifs)), Arc::new(fib), Arc::new(neigh), counters, PipelineConfig::default());
            let mut table = self.nodes[n].sids.take();
            if let Some(cfg) = self.nodes[n].pe_cfg.clone() {
                let t = table.take().unwrap_or_else(|| SidTable::new(&self.cfg.params));
                let pe = PeControl::new(t, cfg).expect("ingress PE configuration");
                pl.set_sids(pe.table());
                self.nodes[n].pe = Some(pe);
            } else if let Some(t) = table {
                pl.set_sids(Arc::new(t));
            }
            self.nodes[n].pipeline = Some(pl);
            self.push(self.cfg.tick_ns, Ev::Tick(n));
        }
    }

    pub fn run_until(&mut self, t_end: u64) {
        self.build();
        while let Some((t, ev)) = self.queue.pop_until(t_end) {
            // (Nothing is scheduled in the past: `push`.)
            debug_assert!(t >= self.now);
            self.now = self.now.max(t);
            self.events += 1;
            assert!(self.events < self.cfg.max_events, "event budget exhausted at t = {} ns", self.now);
            match ev {
                Ev::Arrive { to, frame, link, generation } => {
                    let l = &mut self.links[link];
                    if l.generation != generation {
                        continue; // lost when the link went down (counted then)
                    }
                    l.in_flight -= 1;
                    match to {
                        Endpoint::Node(n, p) => self.node_rx(n, p, frame),
                        Endpoint::Host(h) => self.host_rx(h, frame),
                    }
                }
                Ev::HostSend(h, f) => self.host_send(h, f),
                Ev::Tick(n) => self.tick(n),
                Ev::Apply(n, t) => {
                    if let Some(pl) = self.nodes[n].pipeline.as_mut() {
                        pl.set_sids(t);
                    }
                    self.applied.push((self.now, n));
                }
                Ev::Inject(n, ip) => self.inject(n, &ip),
                Ev::Link(l, up) => self.set_link_state(l, up),
            }
        }
        self.now = self.now.max(t_end);
    }

    /// Link `l` goes up or down now. Going down, it loses every frame on
    /// it (a cut fibre delivers no more bits): those being serialised or
    /// waiting for the transmitter, and those propagating.
    fn set_link_state(&mut self, l: usize, up: bool) {
        let now_ps = self.now * 1000;
        let link = &mut self.links[l];
        if link.up && !up {
            link.lost += link.in_flight;
            link.in_flight = 0;
            link.generation += 1;
            for b in link.busy_ps.iter_mut() {
                *b = (*b).min(now_ps);
            }
        }
        link.up = up;
    }

    fn transmit(&mut self, from: Endpoint, frame: Vec<u8>) {
        let l = match from {
            Endpoint::Node(n, p) => self.nodes[n].ports.get(usize::from(p)).and_then(|x| x.link),
            Endpoint::Host(h) => self.hosts[h].link,
        };
        let Some(l) = l else { return };
        if let Endpoint::Node(n, p) = from {
            let port = &mut self.nodes[n].ports[usize::from(p)];
            port.tx_pkts += 1;
            port.tx_bytes += frame.len() as u64;
            if self.nodes[n].trace && frame.len() >= 54 {
                let mut d = [0u8; 16];
                d.copy_from_slice(&frame[38..54]);
                self.tx_log.push((n, TxRecord { t: self.now, port: p, dst: Ipv6Addr::from(d), nh: frame[20] }));
            }
        }
        let link = &mut self.links[l];
        if !link.up {
            link.lost += 1;
            return;
        }
        let dir = if link.ends[0] == from { 0 } else { 1 };
        let now_ps = self.now * 1000;
        let ser_ps = (u128::from(frame.len() as u64) * 8 * 1_000_000_000_000 / u128::from(link.rate_bps.max(1))) as u64;
        // Back-to-back frames stay back to back (as in `crate::sim`): a
        // frame handed over less than 1 ns after the transmitter became
        // free starts when it became free.
        let start = if link.busy_ps[dir] + 1000 > now_ps { link.busy_ps[dir] } else { now_ps };
        link.busy_ps[dir] = start + ser_ps.max(1);
        link.in_flight += 1;
        let (to, generation) = (link.ends[1 - dir], link.generation);
        let at = link.busy_ps[dir].div_ceil(1000) + link.delay_ns;
        self.push(at, Ev::Arrive { to, frame, link: l, generation });
    }

    fn node_rx(&mut self, n: usize, port: u16, frame: Vec<u8>) {
        let now = self.now;
        let Some(pl) = self.nodes[n].pipeline.as_mut() else { return };
        let mut pkt = VecPacket::with_headroom(&frame, 256);
        let v = pl.process(&mut pkt, port, now);
        let counters = self.nodes[n].counters.clone();
        match v {
            Verdict::Tx(out) => self.transmit(Endpoint::Node(n, out), pkt.to_vec()),
            Verdict::Drop(r) => counters.dropped(r),
            // One pipeline per node: it owns everything.
            Verdict::Consumed | Verdict::ToOwner => {}
            Verdict::Replicate(k) => {
                // As the worker: each packet (an IPv4 fragment, an End.MT
                // copy) built from the unchanged original in a fresh buffer
                // with room for a frame of the MTU, and sent.
                for i in 0..usize::from(k) {
                    let mut c = frame_buffer();
                    let Some(pl) = self.nodes[n].pipeline.as_mut() else { break };
                    match pl.build_replica(i, &pkt, &mut c, now) {
                        Ok(out) => self.transmit(Endpoint::Node(n, out), c.to_vec()),
                        Err(r) => counters.dropped(r),
                    }
                }
            }
        }
        self.control(n);
    }

    /// The control thread of node `n`: the pipeline's events.
    fn control(&mut self, n: usize) {
        let Some(pl) = self.nodes[n].pipeline.as_mut() else { return };
        pl.solicits.clear();
        if pl.events.is_empty() {
            return;
        }
        let evs: Vec<Event> = pl.events.drain(..).collect();
        let counters = self.nodes[n].counters.clone();
        for e in evs {
            let Event::PeNotification(note) = e else { continue };
            let Some(pe) = self.nodes[n].pe.as_mut() else { continue };
            let out = pe.on_note_at(&note, self.now, &counters);
            let at = self.now + self.cfg.control_delay_ns;
            if let Some(t) = out.table {
                self.push(at, Ev::Apply(n, t));
            }
            if let Some(ip) = out.copy {
                self.push(at, Ev::Inject(n, ip));
            }
        }
    }

    /// Send an IP packet the node's control plane built.
    fn inject(&mut self, n: usize, ip: &[u8]) {
        let now = self.now;
        let Some(pl) = self.nodes[n].pipeline.as_mut() else { return };
        let mut f = vec![0u8; 14];
        f.extend_from_slice(ip);
        let mut pkt = VecPacket::with_headroom(&f, 64);
        let mut d = [0u8; 16];
        d.copy_from_slice(&ip[24..40]);
        match pl.emit_ip(&mut pkt, IpAddr::V6(Ipv6Addr::from(d)), 6, now) {
            Ok(port) => self.transmit(Endpoint::Node(n, port), pkt.to_vec()),
            Err(r) => self.nodes[n].counters.dropped(r),
        }
    }

    fn tick(&mut self, n: usize) {
        let now = self.now;
        let mut notes: Vec<Notification> = Vec::new();
        for p in 0..self.nodes[n].ports.len() {
            let up = self.nodes[n].ports[p].link.map(|l| self.links[l].up).unwrap_or(false);
            let tx = self.nodes[n].ports[p].tx_bytes;
            if let Some((d, last)) = self.nodes[n].ports[p].detector.as_mut() {
                d.on_link(up, now, &mut notes);
                d.on_tx(tx - *last, 0, None, now, &mut notes);
                *last = tx;
            }
        }
        let (src, udp) = (self.nodes[n].addr, self.nodes[n].fann_udp);
        for note in &notes {
            self.fann_sent.push((now, n, note.message.event_type, note.code));
            for pe in self.nodes[n].fann_to.clone() {
                let ip = notification_packet(note.code, &note.message, &src, &pe, &self.cfg.params, udp);
                self.inject(n, &ip);
            }
        }
        // Congestion fail-over hold-downs that ran out (as the control
        // thread's loop does).
        let counters = self.nodes[n].counters.clone();
        if let Some(t) = self.nodes[n].pe.as_mut().and_then(|pe| pe.poll_failover_at(now, &counters)) {
            self.push(now + self.cfg.control_delay_ns, Ev::Apply(n, t));
        }
        self.push(now + self.cfg.tick_ns, Ev::Tick(n));
    }

    fn host_send(&mut self, h: usize, fi: usize) {
        let f = self.hosts[h].flows[fi];
        if self.now >= f.stop {
            return;
        }
        let Some(l) = self.hosts[h].link else { return };
        let seq = self.hosts[h].sent[fi];
        self.hosts[h].sent[fi] += 1;
        let link = &self.links[l];
        let (node_mac_, _) = match link.ends.iter().find(|e| **e != Endpoint::Host(h)) {
            Some(Endpoint::Node(n, p)) => (node_mac(*n, *p), ()),
            _ => return,
        };
        let sport = 10_000 + (seq % u64::from(f.ports.max(1))) as u16;
        let frame = udp6_frame(host_mac(h), node_mac_, self.hosts[h].addr, f.dst, f.tc, sport, 5000 + fi as u16, f.len.max(48) - 48);
        self.transmit(Endpoint::Host(h), frame);
        // Paced in picoseconds from the previous send time (not the rounded
        // event time), so the rate is exact on average; a late start
        // restarts from now.
        let now = self.now;
        let gap_ps = (u128::from(f.len as u64) * 8 * 1_000_000_000_000 / u128::from(f.rate_bps.max(1))) as u64;
        let next = &mut self.hosts[h].next_ps[fi];
        let base = if *next + 1000 >= now * 1000 { *next } else { now * 1000 };
        *next = base + gap_ps.max(1);
        let t = next.div_ceil(1000).max(now + 1);
        self.push(t, Ev::HostSend(h, fi));
    }

    fn host_rx(&mut self, h: usize, f: Vec<u8>) {
        if f.len() >= 58 && f[12..14] == [0x86, 0xdd] && f[20] == 17 {
            let mut s = [0u8; 16];
            s.copy_from_slice(&f[22..38]);
            let dport = u16::from_be_bytes([f[56], f[57]]);
            let now = self.now;
            self.hosts[h].rx.push((now, Ipv6Addr::from(s), dport));
        } else if f.len() >= 54 && f[12..14] == [0x86, 0xdd] {
            let now = self.now;
            self.hosts[h].other.push((now, f));
        }
    }

    /// Non-UDP IPv6 frames `host` received, with their arrival times.
    pub fn host_other(&self, h: usize) -> &[(u64, Vec<u8>)] {
        &self.hosts[h].other
    }

    // ------------------------------------------------------------ results

    pub fn counters(&self, n: usize) -> &WorkerCounters {
        &self.nodes[n].counters
    }

    pub fn tx_pkts(&self, n: usize, port: u16) -> u64 {
        self.nodes[n].ports[usize::from(port)].tx_pkts
    }

    pub fn lost_on_link(&self, l: usize) -> u64 {
        self.links[l].lost
    }

    pub fn host_rx_count(&self, h: usize) -> usize {
        self.hosts[h].rx.len()
    }

    /// Packets `host` received in [from, to).
    pub fn host_rx_between(&self, h: usize, from: u64, to: u64) -> usize {
        self.hosts[h].rx.iter().filter(|(t, _, _)| *t >= from && *t < to).count()
    }

    pub fn host_sent(&self, h: usize) -> u64 {
        self.hosts[h].sent.iter().sum()
    }

    pub fn pe(&self, n: usize) -> Option<&PeControl> {
        self.nodes[n].pe.as_ref()
    }

    /// The current SID table of a node's pipeline.
    pub fn sids(&self, n: usize) -> Option<&SidTable> {
        self.nodes[n].pipeline.as_ref().map(|p| &*p.sids)
    }

    pub fn name(&self, n: usize) -> &str {
        &self.nodes[n].name
    }

    pub fn host_name(&self, h: usize) -> &str {
        &self.hosts[h].name
    }

    /// Hand a frame to `port` of `node` now (for tests of bad input).
    pub fn deliver(&mut self, node: usize, port: u16, frame: Vec<u8>) {
        self.build();
        self.node_rx(node, port, frame);
    }

    /// The MAC of a node's port (to address frames to it).
    pub fn mac(&self, node: usize, port: u16) -> MacAddr {
        node_mac(node, port)
    }
}

/// Ethernet + IPv6 + UDP with `payload` zero octets, checksum filled.
#[allow(clippy::too_many_arguments)]
pub fn udp6_frame(src_mac: MacAddr, dst_mac: MacAddr, src: Ipv6Addr, dst: Ipv6Addr, tc: u8, sport: u16, dport: u16, payload: usize) -> Vec<u8> {
    let ulen = 8 + payload;
    let mut f = Vec::with_capacity(14 + 40 + ulen);
    f.extend_from_slice(&dst_mac);
    f.extend_from_slice(&src_mac);
    f.extend_from_slice(&[0x86, 0xdd]);
    f.extend_from_slice(&[0x60 | (tc >> 4), tc << 4, 0, 0]);
    f.extend_from_slice(&(ulen as u16).to_be_bytes());
    f.push(17);
    f.push(64);
    f.extend_from_slice(&src.octets());
    f.extend_from_slice(&dst.octets());
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&(ulen as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.resize(14 + 40 + ulen, 0);
    let s = checksum::combine(checksum::pseudo_v6(&src.octets(), &dst.octets(), 17, ulen as u32), checksum::sum(&f[54..]));
    let c = !checksum::fold(s);
    f[60..62].copy_from_slice(&(if c == 0 { 0xffff } else { c }).to_be_bytes());
    f
}
