//! A deterministic multi-node IPv6 / SRv6 harness: virtual time, one event
//! queue ordered by (time, sequence), no threads, no sleeps. It complements
//! [`crate::sim`] (IPv4 RoCEv2 hosts, egress queues, congestion) for the
//! SRv6 scenarios: End.MT replication trees and the End.MT reverse path.
//!
//! * **Nodes** run the real [`Pipeline`] exactly as the DPDK worker drives
//!   it (`worker.rs`): `process` on every received frame; `Tx` goes out of
//!   the port, `Replicate(n)` builds the `n` copies with `build_replica`
//!   into fresh buffers, `Drop` is counted under its reason; after every
//!   frame, and every `tick_ns`, the node runs `poll_multicast` and sends
//!   the window CNPs (`build_mc_upstream`). Egress is unshaped (no queue
//!   stage): this harness is about what the behaviours emit, not timing
//!   under load.
//! * **Links** are point-to-point with a propagation delay. Each node port
//!   is its own interface with one IPv6 address; the harness fills the
//!   neighbour tables from the links (static, so nothing is solicited)
//!   and adds the connected route of every port.
//! * **Hosts** have one IPv6 address on one link. They send IP datagrams
//!   (the harness adds Ethernet toward the attached node) at given times and
//!   record every frame they receive with its arrival time.
//!
//! Virtual time never goes backwards: nothing is scheduled before the
//! present (a datagram handed to [`Sim6::send`] for a time already past is
//! sent now) and [`Sim6::run_until`] to a time already past does nothing.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::Arc;

use ipnet::Ipv6Net;

use crate::counters::{Drop, WorkerCounters};
use crate::multicast::GroupConfig;
use crate::packet::VecPacket;
use crate::pipeline::{Pipeline, PipelineConfig, Verdict};
use crate::sim::{frame_buffer, NODE_MTU};
use crate::srv6::SidTable;
use crate::tables::{Fib, Interface, MacAddr, NeighSource, Neighbours, NextHop, Topology};

/// One end of a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End6 {
    /// (node, port)
    Node(usize, u16),
    Host(usize),
}

pub struct Node6 {
    pub name: String,
    pub pipeline: Pipeline,
    pub counters: Arc<WorkerCounters>,
    /// Per port: its network (address/prefix) and MAC.
    ports: Vec<(Ipv6Net, MacAddr)>,
    routes: Vec<(Ipv6Net, u16)>,
    sids: Option<SidTable>,
    groups: Vec<GroupConfig>,
    /// Frames sent per port.
    pub tx: Vec<u64>,
    /// When `Some`, every frame the node sends: (time, port, frame).
    pub capture: Option<Vec<(u64, u16, Vec<u8>)>>,
}

pub struct Host6 {
    pub name: String,
    pub addr: Ipv6Addr,
    pub mac: MacAddr,
    /// Every frame received, with its arrival time.
    pub received: Vec<(u64, Vec<u8>)>,
}

struct Link6 {
    a: End6,
    b: End6,
    delay_ns: u64,
}

enum Ev {
    Frame { to: End6, frame: Vec<u8> },
    Tick { node: usize },
}

/// The simulation.
pub struct Sim6 {
    pub nodes: Vec<Node6>,
    pub hosts: Vec<Host6>,
    links: Vec<Link6>,
    queue: BinaryHeap<Reverse<(u64, u64, usize)>>,
    evs: Vec<Option<Ev>>,
    seq: u64,
    pub now: u64,
    /// Idle-loop period of the nodes (multicast CNP windows are closed at
    /// least this often).
    pub tick_ns: u64,
    built: bool,
}

fn mac_of(kind: u8, i: usize, port: u16) -> MacAddr {
    [0x02, kind, (i >> 8) as u8, i as u8, (port >> 8) as u8, port as u8]
}

impl Sim6 {
    pub fn new(tick_ns: u64) -> Self {
        Sim6 { nodes: Vec::new(), hosts: Vec::new(), links: Vec::new(), queue: BinaryHeap::new(), evs: Vec::new(), seq: 0, now: 0, tick_ns: tick_ns.max(1), built: false }
    }

    /// A node whose port `i` has address/prefix `ports[i]` (e.g.
    /// "2001:db8:16::6/64").
    pub fn add_node(&mut self, name: &str, ports: &[&str]) -> usize {
        let i = self.nodes.len();
        let ports: Vec<(Ipv6Net, MacAddr)> = ports.iter().enumerate().map(|(p, s)| (s.parse().unwrap_or_else(|_| panic!("{name} port {p}: bad prefix {s}")), mac_of(0, i, p as u16))).collect();
        let counters = Arc::new(WorkerCounters::default());
        let pipeline = Pipeline::new(Arc::new(Topology::new(Vec::new())), Arc::new(Fib::default()), Arc::new(Neighbours::default()), counters.clone(), PipelineConfig::default());
        let n = ports.len();
        self.nodes.push(Node6 { name: name.into(), pipeline, counters, ports, routes: Vec::new(), sids: None, groups: Vec::new(), tx: vec![0; n], capture: None });
        i
    }

    pub fn add_host(&mut self, name: &str, addr: &str) -> usize {
        let i = self.hosts.len();
        self.hosts.push(Host6 { name: name.into(), addr: addr.parse().unwrap_or_else(|_| panic!("{name}: bad address {addr}")), mac: mac_of(1, i, 0), received: Vec::new() });
        i
    }

    pub fn link(&mut self, a: End6, b: End6, delay_ns: u64) {
        self.links.push(Link6 { a, b, delay_ns });
    }

    /// A route on `node`: `prefix` via the node at the other end of `port`.
    pub fn route(&mut self, node: usize, prefix: &str, port: u16) {
        let p: Ipv6Net = prefix.parse().unwrap_or_else(|_| panic!("bad prefix {prefix}"));
        self.nodes[node].routes.push((p, port));
    }

    pub fn set_sids(&mut self, node: usize, t: SidTable) {
        self.nodes[node].sids = Some(t);
    }

    pub fn set_groups(&mut self, node: usize, g: Vec<GroupConfig>) {
        self.nodes[node].groups = g;
    }

    fn peer(&self, e: End6) -> Option<(End6, u64)> {
        self.links.iter().find_map(|l| {
            if l.a == e {
                Some((l.b, l.delay_ns))
            } else if l.b == e {
                Some((l.a, l.delay_ns))
            } else {
                None
            }
        })
    }

    /// (address, MAC) of an endpoint.
    fn addr_mac(&self, e: End6) -> (Ipv6Addr, MacAddr) {
        match e {
            End6::Node(n, p) => {
                let (net, mac) = self.nodes[n].ports[usize::from(p)];
                (net.addr(), mac)
            }
            End6::Host(h) => (self.hosts[h].addr, self.hosts[h].mac),
        }
    }

    /// Install topology, FIB (connected + configured routes), neighbours
    /// (from the links), SIDs and groups in every node.
    pub fn build(&mut self) {
        for n in 0..self.nodes.len() {
            let mut ifs = Vec::new();
            let mut fib = Fib::default();
            let mut neigh = Neighbours::default();
            for (p, (net, mac)) in self.nodes[n].ports.iter().enumerate() {
                let mut ifc = Interface::new(&format!("{}-p{p}", self.nodes[n].name), p as u16, None, *mac, NODE_MTU);
                ifc.v6.push(*net);
                ifs.push(ifc);
                fib.insert6(net.trunc(), NextHop { iface: p as u16, gateway: None });
            }
            for p in 0..self.nodes[n].ports.len() {
                if let Some((peer, _)) = self.peer(End6::Node(n, p as u16)) {
                    let (a, m) = self.addr_mac(peer);
                    neigh.learn(p as u16, IpAddr::V6(a), m, NeighSource::Static);
                }
            }
            for (pfx, port) in self.nodes[n].routes.clone() {
                let (gw, _) = self.peer(End6::Node(n, port)).map(|(e, _)| self.addr_mac(e)).unwrap_or_else(|| panic!("{}: port {port} has no link", self.nodes[n].name));
                fib.insert6(pfx, NextHop { iface: port, gateway: Some(IpAddr::V6(gw)) });
            }
            fib.compile();
            let node = &mut self.nodes[n];
            node.pipeline.set_topology(Arc::new(Topology::new(ifs)));
            node.pipeline.set_fib(Arc::new(fib));
            node.pipeline.set_neighbours(Arc::new(neigh));
            if let Some(t) = node.sids.take() {
                node.pipeline.set_sids(Arc::new(t));
            }
            let groups = std::mem::take(&mut node.groups);
            if let Err((i, e)) = node.pipeline.set_groups(&groups, 0) {
                panic!("{}: group {i}: {e}", node.name);
            }
            if !groups.is_empty() {
                self.schedule(self.tick_ns, Ev::Tick { node: n });
            }
        }
        self.built = true;
    }

    /// Schedule `ev` at `at`, or now if that is past.
    fn schedule(&mut self, at: u64, ev: Ev) {
        let at = at.max(self.now);
        let idx = self.evs.len();
        self.evs.push(Some(ev));
        self.queue.push(Reverse((at, self.seq, idx)));
        self.seq += 1;
    }

    /// Host `h` sends the IP datagram `ip` at time `at` (now, if that is
    /// past: it reaches the peer one link delay later).
    pub fn send(&mut self, h: usize, at: u64, ip: &[u8]) {
        let (peer, delay) = self.peer(End6::Host(h)).unwrap_or_else(|| panic!("host {} has no link", self.hosts[h].name));
        let (_, pmac) = self.addr_mac(peer);
        let mut f = Vec::with_capacity(14 + ip.len());
        f.extend_from_slice(&pmac);
        f.extend_from_slice(&self.hosts[h].mac);
        f.extend_from_slice(&0x86ddu16.to_be_bytes());
        f.extend_from_slice(ip);
        self.schedule(at.max(self.now) + delay, Ev::Frame { to: peer, frame: f });
    }

    fn transmit(&mut self, node: usize, port: u16, frame: Vec<u8>) {
        if let Some(c) = self.nodes[node].tx.get_mut(usize::from(port)) {
            *c += 1;
        }
        let now = self.now;
        if let Some(cap) = self.nodes[node].capture.as_mut() {
            cap.push((now, port, frame.clone()));
        }
        match self.peer(End6::Node(node, port)) {
            Some((to, d)) => self.schedule(self.now + d, Ev::Frame { to, frame }),
            None => self.nodes[node].counters.dropped(Drop::BadPort),
        }
    }

    fn node_rx(&mut self, n: usize, port: u16, frame: Vec<u8>) {
        let now = self.now;
        let mut p = VecPacket::from_bytes(&frame);
        let v = self.nodes[n].pipeline.process(&mut p, port, now);
        match v {
            Verdict::Tx(out) => self.transmit(n, out, p.to_vec()),
            Verdict::Drop(r) => self.nodes[n].counters.dropped(r),
            // One pipeline per node: it owns everything.
            Verdict::Consumed | Verdict::ToOwner => {}
            Verdict::Replicate(k) => {
                // Each copy in a fresh buffer with room for a frame of the
                // MTU (an mbuf of the router's pool).
                for i in 0..usize::from(k) {
                    let mut c = frame_buffer();
                    match self.nodes[n].pipeline.build_replica(i, &p, &mut c, now) {
                        Ok(out) => self.transmit(n, out, c.to_vec()),
                        Err(r) => self.nodes[n].counters.dropped(r),
                    }
                }
            }
        }
        self.node_loop(n);
    }

    /// What the worker does after a burst: solicits (none: static
    /// neighbours) and events are discarded; window CNPs are sent.
    fn node_loop(&mut self, n: usize) {
        let now = self.now;
        let node = &mut self.nodes[n];
        node.pipeline.solicits.clear();
        node.pipeline.events.clear();
        node.pipeline.poll_multicast(now);
        let pending = std::mem::take(&mut node.pipeline.mc_pending);
        for (g, up) in &pending {
            let mut c = VecPacket::from_bytes(&[]);
            match self.nodes[n].pipeline.build_mc_upstream(*g, up, &mut c, now) {
                Ok(out) => self.transmit(n, out, c.to_vec()),
                Err(r) => self.nodes[n].counters.dropped(r),
            }
        }
        self.nodes[n].pipeline.mc_pending = pending;
        self.nodes[n].pipeline.mc_pending.clear();
    }

    /// Run every event up to `t_end` (inclusive).
    pub fn run_until(&mut self, t_end: u64) {
        assert!(self.built, "Sim6::build first");
        while let Some(Reverse((t, _, idx))) = self.queue.peek().copied() {
            if t > t_end {
                break;
            }
            self.queue.pop();
            // (Nothing is scheduled in the past: `schedule`.)
            debug_assert!(t >= self.now);
            self.now = self.now.max(t);
            let Some(ev) = self.evs[idx].take() else { continue };
            match ev {
                Ev::Frame { to: End6::Host(h), frame } => self.hosts[h].received.push((self.now, frame)),
                Ev::Frame { to: End6::Node(n, p), frame } => self.node_rx(n, p, frame),
                Ev::Tick { node } => {
                    self.node_loop(node);
                    self.schedule(self.now + self.tick_ns, Ev::Tick { node });
                }
            }
        }
        self.now = self.now.max(t_end);
        // Forget consumed event slots once the queue is empty.
        if self.queue.is_empty() {
            self.evs.clear();
        }
    }

    /// A node's drop count for `r`.
    pub fn drops(&self, node: usize, r: Drop) -> u64 {
        self.nodes[node].counters.drops[r as usize].get()
    }

    /// A node's local counter.
    pub fn local(&self, node: usize, l: crate::counters::Local) -> u64 {
        self.nodes[node].counters.local[l as usize].get()
    }
}
