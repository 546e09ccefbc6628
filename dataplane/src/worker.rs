//! The run-to-completion poll-mode worker: RX burst on each of its (port,
//! queue) pairs, the pipeline on every packet, TX bursts on its own TX queue
//! of each port, bulk frees. Table updates from the control thread arrive on a
//! lock-free queue and are applied between bursts; the worker never blocks.

use crate::counters::{Drop, WorkerCounters, MAX_PORTS};
use crate::dpdk::mempool::free_bulk;
use crate::dpdk::port::{rx_burst, tx_burst};
use crate::fastpath::SLOW;
use crate::dpdk::{rdtsc, Mbuf, Mempool};
use crate::packet::PacketBuffer;
use crate::pipeline::{Event, Pipeline, Verdict};
use crate::multicast::GroupView;
use crate::tables::{Fib, Neighbours, Topology};
use crate::congestion::{CnpRequest, FlowId, PortParams, TopScan, MAX_SHOW_FLOWS, SCAN_STEP};
use crate::egress::{EgressConfig, MicroburstConfig, MicroburstWatch};
pub use crate::node::CongestionSpec;
use crate::node::EgressPort;
use crate::srv6::ReplicaHead;
use crate::unres::{HeldFrames, HoldConfig, Key, Outcome, Refused, HOLD_MAC};
use crate::wire::params::Params;
use crate::wire::roce;
use crossbeam::channel::{Receiver, Sender, TrySendError};
use crossbeam::queue::ArrayQueue;
use dpdk_sys::rte_mbuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::net::IpAddr;
use std::sync::Arc;

pub const MAX_BURST: usize = 256;

/// A table update pushed by the control thread.
pub enum Update {
    /// New thresholds / RTT_est / policy for a port's congestion stage.
    Congestion(u16, Box<PortParams>),
    /// Configure (Some) or forget (None) a flow's source QP on a port's
    /// congestion stage: port, (source, destination, DestQP), source QP.
    SourceQp(u16, Box<(IpAddr, IpAddr, u32)>, Option<u32>),
    /// A port's CNP formats by source prefix (the complete list).
    SourceFormats(u16, Arc<Vec<(ipnet::IpNet, crate::congestion::CnpFormat)>>),
    /// The node's AH SAs for Long-haul CNPs (the complete table), for every
    /// congestion-aware port; the table replaced goes back.
    CnpAuth(Arc<crate::congestion::CnpAuth>),
    Fib(Arc<Fib>),
    Neighbours(Arc<Neighbours>),
    Topology(Arc<Topology>),
    /// A new local SID table / SR policies.
    Sids(Arc<crate::srv6::SidTable>),
    /// An IP packet the control thread originates (FANN notifications):
    /// the worker routes it and sends it ahead of queued data. The buffer
    /// goes back to the control thread to be freed.
    Inject(Vec<u8>),
    /// An IPv6 packet to a link-scope multicast address the control thread
    /// originates (MLD queries): sent out of this interface to the
    /// address's Ethernet group (RFC 2464 s.7), ahead of queued data. The
    /// buffer goes back to be freed.
    InjectOn(u16, Vec<u8>),
    /// ARP requests / Neighbor Solicitations the control thread wants sent
    /// (neighbour unreachability detection, [`crate::nud`]). The emptied
    /// vector goes back to the control thread to be freed.
    Solicit(Vec<crate::pipeline::Solicit>),
    /// The End.MT reverse-path groups (the complete set; unchanged groups
    /// keep their state). Every worker gets it: the owner aggregates, the
    /// others use it to steer the groups' packets to the owner.
    Groups(Arc<Vec<crate::multicast::GroupConfig>>),
}

/// A raw mbuf for a handoff ring, its priority in the low bit (an
/// `rte_mbuf` is cache-line aligned, so the bit is free).
#[inline(always)]
pub fn handoff_tag(m: *mut rte_mbuf, priority: bool) -> usize {
    m as usize | usize::from(priority)
}

/// The mbuf and priority of a handoff ring entry ([`handoff_tag`]).
#[inline(always)]
pub fn handoff_untag(raw: usize) -> (*mut rte_mbuf, bool) {
    ((raw & !1) as *mut rte_mbuf, raw & 1 != 0)
}

/// What a worker is told to do.
pub struct WorkerSpec {
    pub id: usize,
    /// (port, rx queue) pairs this worker polls.
    pub rx_queues: Vec<(u16, u16)>,
    /// The TX queue this worker owns on every port.
    pub tx_queue: u16,
    pub burst: usize,
    pub pool: Arc<Mempool>,
    /// Small mbufs for zero-copy End.MT replicas (header, payload
    /// reference, ICRC tail); None: from `pool`.
    pub hdr_pool: Option<Arc<Mempool>>,
    /// TSC ticks per second.
    pub tsc_hz: u64,
    /// Egress stage per port (index = port id): None = straight to the NIC.
    pub egress: Vec<Option<EgressConfig>>,
    /// Owner worker of each shaped port (index = port id).
    pub owner: Vec<usize>,
    /// Per port: lock-free ring into the owner's egress queue (raw mbufs,
    /// tagged with [`handoff_tag`]).
    pub handoff: Arc<Vec<ArrayQueue<usize>>>,
    /// Congestion-aware node per port (index = port id), with the CNP
    /// source addresses (None: the egress interface's address).
    pub congestion: Vec<Option<CongestionSpec>>,
    /// Per port: lock-free ring of RoCEv2 responses (ACK, NAK, read
    /// responses) seen by the other workers, for the owner's congestion
    /// stage to learn source QPs from (s.5.2): a response arrives on
    /// whichever worker polls its RX queue.
    pub reverse: Arc<Vec<ArrayQueue<crate::congestion::RoceInfo>>>,
    /// Per port: lock-free ring of the RoCEv2 data packets the other
    /// workers dropped because `handoff` was full (flow key, PSN, length),
    /// for the owner's congestion stage to count in their flows' arrival
    /// rates as it counts its own tail drops (s.5.7).
    pub dropped: Arc<Vec<ArrayQueue<(crate::congestion::RoceKey, u32)>>>,
    /// IANA-pending values (ICMPv6 type of the Long-haul CNP, ...).
    pub wire: Params,
    /// The worker that owns the End.MT reverse-path groups (one writer per
    /// group state). Other workers hand the groups' packets (to a Proxy
    /// Address or a local End.MT SID) to it through `mc_ring`.
    pub mc_owner: usize,
    /// Lock-free ring into the multicast owner (raw mbufs).
    pub mc_ring: Arc<ArrayQueue<usize>>,
    /// FANN microburst watch on the shaped ports this worker owns (the
    /// control thread samples too rarely to see a 100 us window).
    pub microburst: Option<MicroburstConfig>,
    /// Publish the top contributing flow of each owned congestion-aware
    /// port (FANN Flow ID metadata) about once per ms.
    pub publish_top_flow: bool,
    /// End.MT replicas share the received payload (private header segment,
    /// reference to the payload, private ICRC segment) instead of copying
    /// it; only when every port sends chained mbufs.
    pub zero_copy_replicas: bool,
    /// Frames for a neighbour not resolved yet wait for it ([`crate::unres`]).
    pub hold: HoldConfig,
    /// Per port (index = port id): the received PAUSE / PFC state of a
    /// port that honours them (`[port.pfc]`): every worker records the
    /// frames it receives there, the owner of the port's egress queue
    /// holds the paused priorities' data.
    pub pfc_rx: Vec<Option<Arc<crate::pfcrx::PortPause>>>,
    /// Per port (index = port id, [`MAX_PORTS`] entries): its link is
    /// down, as the control thread last saw it. What is queued for the
    /// port is dropped (`link-down`), and what comes for it, until the
    /// link is back.
    pub link_down: Arc<Vec<AtomicBool>>,
}

/// The worker's ends of its queues to and from the control thread.
pub struct WorkerLinks {
    pub updates: Receiver<Update>,
    pub events: Sender<(usize, Event)>,
    /// Superseded snapshots go back so the control thread frees them.
    pub garbage: Sender<Update>,
    pub stop: Arc<AtomicBool>,
}

// `Worker::tx_dirty` has a bit per port.
const _: () = assert!(MAX_PORTS <= 32);

struct TxBuf {
    pkts: [*mut rte_mbuf; MAX_BURST],
    lens: [u32; MAX_BURST],
    n: usize,
}

impl TxBuf {
    fn new() -> Self {
        TxBuf { pkts: [std::ptr::null_mut(); MAX_BURST], lens: [0; MAX_BURST], n: 0 }
    }
}

/// Prefetch the first cache line of a received mbuf's data.
#[inline(always)]
fn prefetch_data(m: *mut rte_mbuf) {
    // SAFETY: m is a valid mbuf from rx_burst; only its header is read.
    if let Some(m) = unsafe { Mbuf::from_raw(m) } {
        m.prefetch();
        std::mem::forget(m);
    }
}

/// Converts TSC ticks to nanoseconds with a 32.32 fixed-point multiplier.
#[derive(Clone, Copy)]
pub struct TscClock {
    mult: u128,
}

impl TscClock {
    pub fn new(hz: u64) -> Self {
        TscClock { mult: ((1_000_000_000u128) << 32) / u128::from(hz.max(1)) }
    }
    #[inline(always)]
    pub fn ns(&self, tsc: u64) -> u64 {
        ((u128::from(tsc) * self.mult) >> 32) as u64
    }
    #[inline(always)]
    pub fn now(&self) -> u64 {
        self.ns(rdtsc())
    }
}

pub struct Worker {
    /// Egress stages (queue, shaper, congestion) of the shaped ports this
    /// worker owns (index = port).
    egress: Vec<Option<EgressPort<Mbuf>>>,
    /// Microburst watch per owned port (index = port id).
    mb: Vec<Option<MicroburstWatch>>,
    /// Next publication of the ports' top flows.
    top_due: u64,
    /// Next publication of the congestion-aware ports' state (`show`).
    show_due: u64,
    /// When the multicast groups' state is next published.
    mc_show_due: u64,
    /// `show flows`: the scan per port and the request it answers, and
    /// the last request answered (index = port id).
    scans: Vec<(TopScan, u64)>,
    flows_served: [u64; MAX_PORTS],
    cnp_reqs: Vec<CnpRequest>,
    now: u64,
    has_cong: bool,
    /// Congestion-aware ports another worker owns: responses seen here go
    /// to it through `spec.reverse`.
    reverse_to: Vec<u16>,
    /// Look at responses at all (own or others' congestion-aware ports).
    observe_reverse: bool,
    spec: WorkerSpec,
    links: WorkerLinks,
    pipeline: Pipeline,
    counters: Arc<WorkerCounters>,
    tx: Vec<TxBuf>,
    /// Bit p set: `tx[p]` holds packets (so an idle poll loop flushes nothing).
    tx_dirty: u32,
    free: Vec<*mut rte_mbuf>,
    clock: TscClock,
    /// Packets for the multicast groups go to another worker.
    mc_steer: bool,
    /// Packets to the END.C SID go to another worker (the multicast
    /// owner): one END.C state per node, so one worker's RESUME never ends
    /// a PAUSE another still holds.
    endc_steer: bool,
    /// This worker owns the multicast groups.
    mc_owner: bool,
    /// Ports with an egress stage (index = port id).
    shaped: [bool; MAX_PORTS],
    /// This worker owns an egress stage.
    owns_egress: bool,
    eg_scratch: Box<EgressScratch>,
    /// Frames waiting for their neighbour's address, and the scratch of a
    /// walk over them (capacity from the start).
    held: HeldFrames<Mbuf>,
    held_out: Vec<Outcome<Mbuf>>,
    held_asks: Vec<Key>,
}

/// What `service_egress` takes from a queue for one `tx_burst`.
struct EgressScratch {
    pkts: [*mut rte_mbuf; MAX_BURST],
    lens: [u32; MAX_BURST],
    prio: [bool; MAX_BURST],
    flows: [Option<FlowId>; MAX_BURST],
}

// SAFETY: the raw mbuf pointers in the buffers are owned by the worker and
// only touched on its thread; the worker is moved into its thread once.
unsafe impl Send for Worker {}

impl Worker {
    pub fn new(spec: WorkerSpec, links: WorkerLinks, mut pipeline: Pipeline) -> Self {
        let counters = pipeline.counters.clone();
        let held = HeldFrames::new(spec.hold);
        pipeline.set_hold(held.enabled());
        // The END.C state lives in the multicast owner's pipeline.
        pipeline.state_owner = spec.mc_owner == spec.id;
        pipeline.pfc_rx = spec.pfc_rx.clone();
        let held_cap = if held.enabled() { spec.hold.total } else { 0 };
        // Room for every neighbour frames can wait for: publishing them
        // never allocates.
        counters.waiting.lock().reserve(held_cap);
        let clock = TscClock::new(spec.tsc_hz);
        let read: crate::ReadClock = Arc::new(move || clock.now());
        pipeline.reply_clock = Some(read.clone());
        let egress: Vec<Option<EgressPort<Mbuf>>> = (0..MAX_PORTS)
            .map(|p| match spec.egress.get(p).copied().flatten() {
                Some(cfg) if spec.owner.get(p) == Some(&spec.id) => {
                    let e = EgressPort::new(cfg, spec.congestion.get(p).cloned().flatten()).with_clock(read.clone());
                    Some(match spec.pfc_rx.get(p).cloned().flatten() {
                        Some(pp) => e.with_pfc(pp),
                        None => e,
                    })
                }
                _ => None,
            })
            .collect();
        let mb = (0..MAX_PORTS).map(|_| spec.microburst.map(MicroburstWatch::new)).collect();
        let scans = (0..MAX_PORTS).map(|p| {
            let cong = egress[p].as_ref().is_some_and(|e| e.cong.is_some());
            if cong {
                // Room for the largest answer, so the worker never
                // allocates to give it.
                pipeline.counters.flows[p].lock().1.reserve(MAX_SHOW_FLOWS);
            }
            (if cong { TopScan::default() } else { TopScan::empty() }, 0)
        });
        let scans = scans.collect();
        Worker {
            egress,
            mb,
            top_due: 0,
            show_due: 0,
            mc_show_due: 0,
            scans,
            flows_served: [0; MAX_PORTS],
            cnp_reqs: Vec::with_capacity(256),
            now: 0,
            has_cong: false,
            reverse_to: Vec::new(),
            observe_reverse: false,
            tx: (0..MAX_PORTS).map(|_| TxBuf::new()).collect(),
            tx_dirty: 0,
            // Room for a loop iteration's frees without growing: every
            // received mbuf (twice: a packet and what it makes), every
            // port's egress drops and hand-off drain, and a walk over the
            // held frames that frees all of them at once. Past half of it,
            // the worker frees right after an RX burst.
            free: Vec::with_capacity(2 * spec.rx_queues.len().max(1) * MAX_BURST + MAX_PORTS * MAX_BURST + held_cap),
            // Groups installed before start-up steer from the first burst.
            mc_steer: spec.mc_owner != spec.id && !pipeline.groups().is_empty(),
            endc_steer: spec.mc_owner != spec.id && pipeline.has_endc(),
            mc_owner: spec.mc_owner == spec.id,
            shaped: std::array::from_fn(|p| spec.egress.get(p).copied().flatten().is_some()),
            owns_egress: false,
            eg_scratch: Box::new(EgressScratch {
                pkts: [std::ptr::null_mut(); MAX_BURST],
                lens: [0; MAX_BURST],
                prio: [false; MAX_BURST],
                flows: [None; MAX_BURST],
            }),
            held,
            held_out: Vec::with_capacity(held_cap),
            held_asks: Vec::with_capacity(held_cap),
            spec,
            links,
            pipeline,
            counters,
            clock,
        }
    }

    /// Poll until the stop flag is raised, then drain.
    pub fn run(&mut self) {
        self.has_cong = self.egress.iter().flatten().any(|e| e.cong.is_some());
        self.reverse_to = (0..MAX_PORTS)
            .filter(|&p| self.spec.congestion.get(p).is_some_and(|c| c.is_some()) && self.spec.owner.get(p).is_some_and(|&o| o != self.spec.id) && self.spec.egress.get(p).is_some_and(|e| e.is_some()))
            .map(|p| p as u16)
            .collect();
        self.observe_reverse = self.has_cong || !self.reverse_to.is_empty();
        self.owns_egress = self.egress.iter().any(|e| e.is_some());
        let burst = self.spec.burst.clamp(1, MAX_BURST);
        let mut rx = [std::ptr::null_mut::<rte_mbuf>(); MAX_BURST];
        let cpu0 = crate::counters::thread_cpu_ns();
        while !self.links.stop.load(Ordering::Relaxed) {
            self.apply_updates();
            let now = self.clock.now();
            self.now = now;
            // A table update may have resolved a neighbour frames wait for:
            // they leave before newer packets to it.
            self.release_held(now);
            let mut busy = false;
            for qi in 0..self.spec.rx_queues.len() {
                let (port, queue) = self.spec.rx_queues[qi];
                let n = rx_burst(port, queue, &mut rx[..burst]);
                if n == 0 {
                    continue;
                }
                busy = true;
                if let Some(c) = self.counters.rx_queue_pkts.get(qi) {
                    c.add(n as u64);
                }
                self.handle_burst(port, &rx[..n], now);
                if self.free.len() > self.free.capacity() / 2 {
                    free_bulk(&mut self.free);
                    self.free.clear();
                }
            }
            self.release_held(now);
            self.send_solicits();
            if self.pipeline.reassembly_due(now) {
                self.reassembly_timeouts(now);
            }
            self.send_pfc(now);
            if self.mc_owner {
                self.drain_mc_ring(now);
                self.poll_multicast(now);
            }
            self.flush_all();
            self.service_egress(now);
            self.poll_congestion(now);
            free_bulk(&mut self.free);
            self.free.clear();
            self.post_events();
            self.counters.bursts.add(1);
            if busy {
                self.counters.busy_bursts.add(1);
            }
        }
        self.counters.cpu_ns.set(crate::counters::thread_cpu_ns().saturating_sub(cpu0));
        self.drain();
    }

    #[inline]
    fn handle_burst(&mut self, port: u16, rx: &[*mut rte_mbuf], now: u64) {
        // The burst fast path works on up to FAST packets at a time.
        const FAST: usize = 32;
        for chunk in rx.chunks(FAST) {
            self.handle_chunk::<FAST>(port, chunk, now);
        }
    }

    #[inline]
    fn handle_chunk<const FAST: usize>(&mut self, port: u16, rx: &[*mut rte_mbuf], now: u64) {
        // An answer in an earlier chunk: the frames waiting for it go first.
        self.release_held(now);
        let pi = usize::from(port) % MAX_PORTS;
        self.counters.ports[pi].rx_pkts.add(rx.len() as u64);
        let mut bytes = 0u64;
        for &raw in rx {
            prefetch_data(raw);
        }
        // Plain transit packets: the whole chunk at once (crate::fastpath).
        let mut out = [SLOW; FAST];
        let fast = {
            let mut views: [&mut [u8]; FAST] = std::array::from_fn(|_| <&mut [u8]>::default());
            for (v, &raw) in views.iter_mut().zip(rx) {
                // SAFETY: rx_burst handed us ownership of each mbuf; the
                // views end with this block, before any mbuf moves on.
                // Chained mbufs are left to the slow path (empty view).
                unsafe {
                    if (*raw).nb_segs == 1 {
                        *v = Mbuf::raw_data_mut(raw);
                    }
                }
            }
            let n = rx.len();
            let fast = self.pipeline.fast_burst(port, &mut views[..n], &mut out[..n]);
            if fast > 0 {
                self.counters.local[crate::counters::Local::FastPath as usize].add(fast as u64);
            }
            fast
        };
        if fast == rx.len() && !self.observe_reverse {
            if let Some(bytes) = self.tx_chunk(rx, &out[..rx.len()]) {
                self.counters.ports[pi].rx_bytes.add(bytes);
                return;
            }
        }
        for (i, &raw) in rx.iter().enumerate() {
            // SAFETY: rx_burst handed us ownership of each mbuf.
            let Some(m) = (unsafe { Mbuf::from_raw(raw) }) else { continue };
            // The whole frame, as the TX counters count it (a chained frame
            // is dropped as multi-seg further on, but it was received).
            bytes += m.pkt_len() as u64;
            if self.observe_reverse && crate::classify::maybe_response(m.data()) {
                // Responses (ACK, read responses) and standard CNPs carry
                // the requester's QP as DestQP: the congestion stages learn
                // source QPs from them, this worker's own and, through their
                // rings, the others'. One parse for all ports.
                if let Some(meta) = crate::classify::roce_meta(m.data()) {
                    if meta.info.teaches_source_qp() {
                        for e in self.egress.iter_mut().flatten() {
                            e.observe_roce(&meta, now);
                        }
                        for &p in &self.reverse_to {
                            if self.spec.reverse.get(usize::from(p)).is_some_and(|q| q.push(meta.info).is_err()) {
                                self.counters.local(crate::counters::Local::ResponseNotObserved);
                            }
                        }
                    }
                }
            }
            if out[i] != SLOW {
                self.output(out[i], m, false);
                continue;
            }
            if m.nb_segs() != 1 {
                self.counters.dropped(Drop::MultiSeg);
                self.free.push(m.into_raw());
                continue;
            }
            if (self.mc_steer && self.pipeline.mc_steer(m.data())) || (self.endc_steer && self.pipeline.endc_steer(m.data())) {
                // Another worker owns the multicast groups and the END.C
                // state: hand it over.
                if let Err(raw) = self.spec.mc_ring.push(m.into_raw() as usize) {
                    self.counters.dropped(Drop::HandoffFull);
                    self.free.push(raw as *mut rte_mbuf);
                }
                continue;
            }
            self.process_one(m, port, now);
        }
        self.counters.ports[pi].rx_bytes.add(bytes);
    }

    /// The pipeline on one packet and what follows from its verdict.
    #[inline]
    fn process_one(&mut self, m: Mbuf, port: u16, now: u64) {
        self.process_verdict(m, port, now);
        // It may have been the answer frames wait for: they leave before
        // the next packet to that neighbour.
        self.release_held(now);
    }

    #[inline]
    fn process_verdict(&mut self, mut m: Mbuf, port: u16, now: u64) {
        let verdict = self.pipeline.process(&mut m, port, now);
        match verdict {
            Verdict::Tx(out) => {
                let reply = self.pipeline.reply;
                self.output(out, m, reply)
            }
            Verdict::Drop(r) => {
                self.counters.dropped(r);
                self.free.push(m.into_raw());
            }
            Verdict::Consumed => self.free.push(m.into_raw()),
            Verdict::ToOwner => {
                if let Err(raw) = self.spec.mc_ring.push(m.into_raw() as usize) {
                    self.counters.dropped(Drop::HandoffFull);
                    self.free.push(raw as *mut rte_mbuf);
                }
            }
            Verdict::Replicate(k) => {
                // End.MT copies or IPv4 fragments, each built from the
                // unchanged original, which is freed afterwards. End.MT
                // receiver copies are zero-copy where configured (the
                // payload segment references the original's buffer, which
                // stays alive until the last replica is sent), the others
                // go into a fresh mbuf.
                for i in 0..usize::from(k) {
                    if self.spec.zero_copy_replicas && self.pipeline.frag.n == 0 {
                        let Some(mut c) = self.small_alloc() else {
                            self.counters.dropped(Drop::NoMbuf);
                            continue;
                        };
                        c.reset_len(0);
                        match self.pipeline.build_replica_head(i, m.data(), &mut c, now) {
                            Ok(Some(h)) => {
                                match self.chain_replica(c, &m, &h) {
                                    Some(c) => {
                                        self.counters.local(crate::counters::Local::EndMtZeroCopy);
                                        self.output(h.port, c, false)
                                    }
                                    None => self.counters.dropped(Drop::NoMbuf),
                                }
                                continue;
                            }
                            // This copy needs a full copy (below).
                            Ok(None) => self.free.push(c.into_raw()),
                            Err(r) => {
                                self.counters.dropped(r);
                                self.free.push(c.into_raw());
                                continue;
                            }
                        }
                    }
                    let Some(mut c) = self.spec.pool.alloc() else {
                        self.counters.dropped(Drop::NoMbuf);
                        continue;
                    };
                    c.reset_len(0);
                    match self.pipeline.build_replica(i, &m, &mut c, now) {
                        // Fragments of the router's own reply leave ahead
                        // of queued data, like the reply would.
                        Ok(out) => {
                            let reply = self.pipeline.reply;
                            self.output(out, c, reply)
                        }
                        Err(r) => {
                            self.counters.dropped(r);
                            self.free.push(c.into_raw());
                        }
                    }
                }
                self.free.push(m.into_raw());
            }
        }
    }

    /// The multicast owner: packets other workers handed over, processed
    /// as if received here.
    fn drain_mc_ring(&mut self, now: u64) {
        for _ in 0..MAX_BURST {
            let Some(raw) = self.spec.mc_ring.pop() else { break };
            // SAFETY: the handing worker gave up ownership of this mbuf.
            let Some(m) = (unsafe { Mbuf::from_raw(raw as *mut rte_mbuf) }) else { continue };
            let port = m.port();
            self.process_one(m, port, now);
        }
    }

    /// End.MT reverse path: close the CNP windows that ended, send the
    /// window CNPs toward the sources ahead of queued data.
    fn poll_multicast(&mut self, now: u64) {
        self.pipeline.poll_multicast(now);
        if now >= self.mc_show_due {
            self.mc_show_due = now + 10_000_000;
            self.publish_groups(false);
        }
        if self.pipeline.mc_pending.is_empty() {
            return;
        }
        let pending = std::mem::take(&mut self.pipeline.mc_pending);
        for (g, up) in &pending {
            let Some(mut m) = self.spec.pool.alloc() else {
                self.counters.dropped(Drop::NoMbuf);
                continue;
            };
            m.reset_len(0);
            match self.pipeline.build_mc_upstream(*g, up, &mut m, now) {
                Ok(port) => self.output(port, m, true),
                Err(why) => {
                    self.counters.dropped(why);
                    self.free.push(m.into_raw());
                }
            }
        }
        self.pipeline.mc_pending = pending;
        self.pipeline.mc_pending.clear();
    }

    /// `show multicast`: the groups' state into the shared view, reusing
    /// its allocations; skipped when the control thread holds it, unless
    /// `wait` (at stop, for the exit report).
    fn publish_groups(&mut self, wait: bool) {
        let mut v = if wait {
            self.counters.groups.lock()
        } else {
            let Some(v) = self.counters.groups.try_lock() else { return };
            v
        };
        let groups = self.pipeline.groups();
        v.truncate(groups.len());
        for (k, (_, g)) in groups.iter().enumerate() {
            match v.get_mut(k) {
                Some(slot) => g.view_into(slot),
                None => {
                    let mut slot = GroupView { id: g.id(), upstream_psn: 0, upstream_nak: None, highest_sent: None, window_ns: 0, srtt_ns: None, branches: Vec::new() };
                    g.view_into(&mut slot);
                    v.push(slot);
                }
            }
        }
    }

    /// A zero-copy End.MT replica: `head` (Ethernet + rewritten IPv6, UDP,
    /// BTH), then an indirect segment over the original's payload, then the
    /// new ICRC. None (everything freed) when the pool is empty.
    fn chain_replica(&mut self, mut head: Mbuf, orig: &Mbuf, h: &ReplicaHead) -> Option<Mbuf> {
        let pool = self.spec.hdr_pool.as_deref().unwrap_or(&self.spec.pool);
        let payload = Mbuf::attach_range(pool, orig, h.payload_off, h.payload_len).or_else(|| Mbuf::attach_range(&self.spec.pool, orig, h.payload_off, h.payload_len))?;
        let mut tail = self.small_alloc()?;
        if !tail.reset_len(roce::ICRC_LEN) {
            return None;
        }
        tail.data_mut().copy_from_slice(&h.icrc);
        head.chain(payload).ok()?;
        head.chain(tail).ok()?;
        Some(head)
    }

    /// A small mbuf (replica header / ICRC tail): from the header pool,
    /// else (not configured, or empty) from the main pool.
    #[inline]
    fn small_alloc(&self) -> Option<Mbuf> {
        self.spec.hdr_pool.as_ref().and_then(|p| p.alloc()).or_else(|| self.spec.pool.alloc())
    }

    /// Send a packet toward `port`: into its egress stage when the port is
    /// shaped (our own queue, or the owner's handoff ring), else straight
    /// into the TX buffer. `priority` packets (replies, notifications) go
    /// ahead of queued data.
    #[inline(always)]
    fn output(&mut self, port: u16, m: Mbuf, priority: bool) {
        if self.pipeline.held.is_some() && m.data().get(..6) == Some(&HOLD_MAC[..]) {
            // Taken: a later frame is held only when its own build missed.
            if let Some(key) = self.pipeline.held.take() {
                return self.hold(key, port, m, priority);
            }
        }
        let p = usize::from(port);
        if p >= MAX_PORTS || !self.shaped[p] {
            return self.enqueue_tx(port, m);
        }
        if let Some(e) = self.egress[p].as_mut() {
            let r = if priority { e.admit_priority(m) } else { e.admit(m, self.now, &self.counters) };
            if let Err((m, why)) = r {
                self.counters.dropped(why);
                self.free.push(m.into_raw());
            }
            return;
        }
        // Another worker owns this port's queue: hand the packet over, with
        // its priority (a PFC PAUSE or a CNP must not wait behind the data).
        if let Err(raw) = self.spec.handoff[p].push(handoff_tag(m.into_raw(), priority)) {
            self.counters.dropped(Drop::HandoffFull);
            let raw = handoff_untag(raw).0;
            if !priority && self.spec.congestion.get(p).is_some_and(|c| c.is_some()) {
                self.handoff_drop_seen(p, raw);
            }
            self.free.push(raw);
        }
    }

    /// A packet for congestion-aware port `p` dropped because the hand-off
    /// ring was full: a RoCEv2 data packet goes to the owner's congestion
    /// stage through `spec.dropped` (its flow did send it); counted as
    /// `handoff-drop-unseen` when that ring is full too.
    #[cold]
    fn handoff_drop_seen(&mut self, p: usize, raw: *mut rte_mbuf) {
        // SAFETY: `raw` is still ours (the ring refused it); the view ends
        // before it is freed.
        // (A chained mbuf, a zero-copy End.MT replica: its headers are in
        // the first segment.)
        let (len, roce) = unsafe {
            let d: &[u8] = Mbuf::raw_data_mut(raw);
            ((*raw).pkt_len, crate::classify::roce_fast(d))
        };
        // Responses and CNPs are left out by the owner (not data).
        let Some(r) = roce else { return };
        if self.spec.dropped.get(p).is_none_or(|q| q.push((r.roce, len)).is_err()) {
            self.counters.local(crate::counters::Local::HandoffDropUnseen);
        }
    }

    /// Owner side of the egress stage: take handed-over packets, then send
    /// what the shaper allows; what the NIC refuses goes back to the head.
    fn service_egress(&mut self, now: u64) {
        if !self.owns_egress {
            return;
        }
        let publish_top = now >= self.top_due;
        // Scratch arrays kept in the worker: zeroing 5 KiB of locals on
        // every loop costs more than a burst's forwarding.
        let EgressScratch { pkts, lens, prio, flows } = &mut *self.eg_scratch;
        for p in 0..MAX_PORTS {
            let Some(e) = self.egress[p].as_mut() else { continue };
            if self.spec.link_down.get(p).is_some_and(|d| d.load(Ordering::Relaxed)) {
                // Nothing can leave: drop what was handed over and what
                // the queue holds instead of sending it late.
                let mut n = 0;
                for _ in 0..MAX_BURST {
                    let Some(raw) = self.spec.handoff[p].pop() else { break };
                    // SAFETY: the handing worker gave up ownership of this
                    // mbuf; dropping the Mbuf frees it.
                    drop(unsafe { Mbuf::from_raw(handoff_untag(raw).0) });
                    n += 1;
                }
                if !e.queue.is_empty() {
                    n += e.discard(now, drop);
                }
                if n > 0 {
                    self.counters.drop_n(Drop::LinkDown, n);
                }
                self.counters.queue_depth[p].set(0);
                continue;
            }
            // At most MAX_BURST handed-over packets per loop, as many as it
            // may send: under overload the ring fills and the handing
            // workers drop (handoff-full) instead of the owner spending its
            // loop on tail drops while its output waits.
            for _ in 0..MAX_BURST {
                let Some(raw) = self.spec.handoff[p].pop() else { break };
                let (raw, priority) = handoff_untag(raw);
                // SAFETY: the handing worker gave up ownership of this mbuf.
                let Some(m) = (unsafe { Mbuf::from_raw(raw) }) else { continue };
                let r = if priority { e.admit_priority(m) } else { e.admit(m, now, &self.counters) };
                if let Err((m, why)) = r {
                    self.counters.dropped(why);
                    self.free.push(m.into_raw());
                }
            }
            // Up to MAX_BURST per loop as the shaper allows (one RX burst
            // per loop would cap the port at a burst per loop, below its
            // rate when the loop also serves the hand-off ring).
            let mut n = 0;
            e.dequeue(now, MAX_BURST, |m, len, flow, is_prio| {
                pkts[n] = m.into_raw();
                lens[n] = len;
                prio[n] = is_prio;
                flows[n] = flow;
                n += 1;
            });
            if n > 0 {
                let sent = tx_burst(p as u16, self.spec.tx_queue, &mut pkts[..n]);
                let bytes: u64 = lens[..sent].iter().map(|&l| u64::from(l)).sum();
                self.counters.ports[p].tx_pkts.add(sent as u64);
                self.counters.ports[p].tx_bytes.add(bytes);
                for i in 0..sent {
                    if !prio[i] {
                        e.sent(flows[i], lens[i], now);
                    }
                }
                // Backpressure: put the rest back in order (last first).
                for i in (sent..n).rev() {
                    // SAFETY: the NIC did not take these; they are still ours.
                    if let Some(m) = unsafe { Mbuf::from_raw(pkts[i]) } {
                        e.requeue(m, lens[i], flows[i], prio[i]);
                    }
                }
            }
            let qd = e.queue.depth_bytes();
            self.counters.queue_depth[p].set(qd);
            // FANN Flow ID: the top contributor, about once per ms.
            if self.spec.publish_top_flow && publish_top {
                if let Some(c) = e.cong.as_ref() {
                    let top = if qd > 0 { c.top_flow().map(|(s, d, _, sport)| crate::fann::roce_flow_id(s, d, sport)) } else { None };
                    if let Some(mut g) = self.counters.top_flow[p].try_lock() {
                        *g = top;
                    }
                }
            }
            if let Some(w) = self.mb[p].as_mut() {
                if w.observe(now, qd) {
                    self.counters.microbursts[p].add(1);
                }
            }
        }
        if publish_top {
            self.top_due = now + 1_000_000;
        }
    }

    /// END.C timers: PFC refreshes, resumes and watchdog resumes.
    fn send_pfc(&mut self, now: u64) {
        if self.pipeline.endc.is_empty() && self.pipeline.pfc_pending.is_empty() {
            return;
        }
        self.pipeline.poll_endc(now);
        // In the order queued (a refresh's PAUSE before a RESUME of the
        // same poll); the vector goes back, keeping its capacity.
        let mut pending = std::mem::take(&mut self.pipeline.pfc_pending);
        for (iface, a) in pending.drain(..) {
            let Some(mut m) = self.spec.pool.alloc() else {
                self.counters.dropped(Drop::NoMbuf);
                continue;
            };
            m.reset_len(0);
            match self.pipeline.build_pfc(iface, &a, &mut m) {
                Some(port) => self.output(port, m, true),
                None => {
                    // No such interface any more, or no room: count it.
                    self.counters.dropped(Drop::NoHeadroom);
                    self.free.push(m.into_raw());
                }
            }
        }
        self.pipeline.pfc_pending = pending;
    }

    /// Send an IP packet the control thread built: route it like a locally
    /// originated notification.
    fn inject(&mut self, ip: &[u8]) {
        let dst: Option<IpAddr> = match ip.first().map(|b| b >> 4) {
            Some(4) if ip.len() >= 20 => Some(IpAddr::from(<[u8; 4]>::try_from(&ip[16..20]).unwrap_or([0; 4]))),
            Some(6) if ip.len() >= 40 => Some(IpAddr::from(<[u8; 16]>::try_from(&ip[24..40]).unwrap_or([0; 16]))),
            _ => None,
        };
        let Some(dst) = dst else {
            self.counters.dropped(Drop::MalformedIpv6);
            return;
        };
        self.originate(ip, |pl, m, now| pl.emit_ip(m, dst, 6, now));
    }

    /// Send `ip` (an IPv6 packet to a multicast address) out of interface
    /// `iface` ([`Update::InjectOn`]).
    fn inject_on(&mut self, iface: u16, ip: &[u8]) {
        self.originate(ip, |pl, m, _| pl.emit_on(m, iface));
    }

    /// An IP packet this router originates into a fresh mbuf behind a
    /// 14-byte placeholder, given its Ethernet header by `emit` (which
    /// returns the port), sent ahead of queued data.
    fn originate(&mut self, ip: &[u8], emit: impl FnOnce(&mut Pipeline, &mut Mbuf, u64) -> Result<u16, Drop>) {
        let Some(mut m) = self.spec.pool.alloc() else {
            self.counters.dropped(Drop::NoMbuf);
            return;
        };
        m.reset_len(0);
        if !m.append(14 + ip.len()) {
            self.counters.dropped(Drop::NoHeadroom);
            self.free.push(m.into_raw());
            return;
        }
        m.data_mut()[14..].copy_from_slice(ip);
        let now = self.clock.now();
        match emit(&mut self.pipeline, &mut m, now) {
            Ok(port) => {
                self.counters.local(crate::counters::Local::Injected);
                self.output(port, m, true)
            }
            Err(why) => {
                self.counters.dropped(why);
                self.free.push(m.into_raw());
            }
        }
    }

    /// Second-level triggers: ask every congestion stage for the
    /// notifications due now, build them and send them toward the sources,
    /// ahead of queued data.
    fn poll_congestion(&mut self, now: u64) {
        if !self.has_cong {
            return;
        }
        // Responses other workers saw, after this loop's handed-over data
        // (service_egress), so a new flow's entry exists before its first
        // response is matched.
        for p in 0..MAX_PORTS {
            let Some(e) = self.egress[p].as_mut() else { continue };
            let Some(q) = self.spec.reverse.get(p) else { continue };
            for _ in 0..q.capacity() {
                let Some(info) = q.pop() else { break };
                e.observe_response(&info, now);
            }
            // Data the others dropped on the way here (hand-off ring full).
            if let Some(q) = self.spec.dropped.get(p) {
                for _ in 0..q.capacity() {
                    let Some((roce, len)) = q.pop() else { break };
                    e.handoff_dropped(&roce, len, now);
                }
            }
        }
        let publish = now >= self.show_due;
        if publish {
            self.show_due = now + 1_000_000;
        }
        for p in 0..MAX_PORTS {
            let Some(e) = self.egress[p].as_mut() else { continue };
            if e.cong.is_none() {
                continue;
            }
            e.poll(now, &mut self.cnp_reqs);
            if !self.cnp_reqs.is_empty() {
                let reqs = std::mem::take(&mut self.cnp_reqs);
                for r in &reqs {
                    let built = match self.spec.pool.alloc() {
                        None => Err(Drop::NoMbuf),
                        Some(mut m) => {
                            m.reset_len(0);
                            let Some(e) = self.egress[p].as_ref() else { break };
                            match e.build_cnp_packet(&mut self.pipeline, &self.spec.wire, r, &mut m, now) {
                                Ok(out) => {
                                    self.output(out, m, true);
                                    Ok(())
                                }
                                Err(why) => {
                                    self.free.push(m.into_raw());
                                    Err(why)
                                }
                            }
                        }
                    };
                    if let Err(why) = built {
                        // Not sent: counted as such by the port, not by
                        // its action.
                        self.counters.dropped(why);
                        if let Some(c) = self.egress[p].as_mut().and_then(|e| e.cong.as_mut()) {
                            c.cnp_not_built(r);
                        }
                    }
                }
                self.cnp_reqs = reqs;
                self.cnp_reqs.clear();
            }
            // Published after the CNPs were built: the counts by action
            // are of CNPs that left.
            self.show(p, now, publish);
        }
    }

    /// `show congestion` / `show flows` for congestion-aware port `p`:
    /// publish its state when `publish` (about once per ms), take a new
    /// flow request then, and advance a flow scan by one bounded step.
    fn show(&mut self, p: usize, now: u64, publish: bool) {
        let Some(e) = self.egress[p].as_mut() else { return };
        let (limit, qstats) = (e.queue.config().queue_bytes, e.queue.stats);
        let Some(c) = e.cong.as_mut() else { return };
        let (scan, req) = &mut self.scans[p];
        if publish {
            c.refresh_reaction(now, false);
            if let Some(mut g) = self.counters.congestion[p].try_lock() {
                *g = Some(c.view(limit, qstats, now));
            }
            let r = self.counters.flows_request[p].get();
            if r != self.flows_served[p] && !scan.active() {
                scan.start((r & 0xffff) as usize);
                *req = r;
            }
        }
        if scan.active() && c.scan_top(scan, SCAN_STEP) {
            // Complete. Should the control thread hold the answer just
            // now, the next publication starts over.
            if let Some(mut g) = self.counters.flows[p].try_lock() {
                c.top_flows(scan, now, &mut g.1);
                g.0 = *req;
                self.flows_served[p] = *req;
            }
        }
    }

    /// The steady state of transit traffic: every packet of a chunk took
    /// the fast path (single-segment mbufs) to the same unshaped port whose
    /// TX buffer has room. They go in with one copy, and the port's RX
    /// bytes are counted here; per packet, `output` would make the TX
    /// buffer's count a store-to-load chain from packet to packet. Returns
    /// the chunk's bytes, or None, having done nothing, when the chunk is
    /// not such a case.
    #[inline]
    fn tx_chunk(&mut self, rx: &[*mut rte_mbuf], out: &[u16]) -> Option<u64> {
        let &port = out.first()?;
        let p = usize::from(port);
        if p >= MAX_PORTS || self.shaped[p] || out.iter().any(|&o| o != port) {
            return None;
        }
        let t = &mut self.tx[p];
        let (from, n) = (t.n, rx.len());
        if from + n > MAX_BURST {
            return None;
        }
        t.pkts[from..from + n].copy_from_slice(rx);
        let mut bytes = 0u64;
        for (l, &raw) in t.lens[from..from + n].iter_mut().zip(rx) {
            // SAFETY: rx_burst handed us these mbufs; they are read here,
            // before the TX burst hands them on.
            let len = unsafe { (*raw).pkt_len };
            *l = len;
            bytes += u64::from(len);
        }
        t.n = from + n;
        self.tx_dirty |= 1 << p;
        if t.n == MAX_BURST {
            self.flush(p);
        }
        Some(bytes)
    }

    #[inline]
    fn enqueue_tx(&mut self, port: u16, m: Mbuf) {
        let p = usize::from(port);
        if p >= MAX_PORTS {
            self.counters.dropped(Drop::BadPort);
            return; // m dropped here, freed
        }
        let len = m.pkt_len() as u32;
        let t = &mut self.tx[p];
        t.pkts[t.n] = m.into_raw();
        t.lens[t.n] = len;
        t.n += 1;
        self.tx_dirty |= 1 << p;
        if t.n == MAX_BURST {
            self.flush(p);
        }
    }

    fn flush(&mut self, p: usize) {
        self.tx_dirty &= !(1 << p);
        let down = self.spec.link_down.get(p).is_some_and(|d| d.load(Ordering::Relaxed));
        let t = &mut self.tx[p];
        if t.n == 0 {
            return;
        }
        if down {
            self.counters.drop_n(Drop::LinkDown, t.n as u64);
            free_bulk(&mut t.pkts[..t.n]);
            t.n = 0;
            return;
        }
        let sent = tx_burst(p as u16, self.spec.tx_queue, &mut t.pkts[..t.n]);
        let bytes: u64 = t.lens[..sent].iter().map(|&l| u64::from(l)).sum();
        let pc = &self.counters.ports[p];
        pc.tx_pkts.add(sent as u64);
        pc.tx_bytes.add(bytes);
        if sent < t.n {
            // The NIC queue is full: free what it did not take, and count it.
            self.counters.drop_n(Drop::TxFull, (t.n - sent) as u64);
            free_bulk(&mut t.pkts[sent..t.n]);
        }
        t.n = 0;
    }

    #[inline]
    fn flush_all(&mut self) {
        while self.tx_dirty != 0 {
            self.flush(self.tx_dirty.trailing_zeros() as usize);
        }
    }

    fn send_solicits(&mut self) {
        if self.pipeline.solicits.is_empty() {
            return;
        }
        let solicits = std::mem::take(&mut self.pipeline.solicits);
        for s in &solicits {
            let Some(mut m) = self.spec.pool.alloc() else {
                self.counters.dropped(Drop::NoMbuf);
                continue;
            };
            m.reset_len(0);
            match self.pipeline.build_solicit(&mut m, s, self.now) {
                Some(port) => self.output(port, m, true),
                None => {
                    // The interface has no address of that family to ask from.
                    self.counters.dropped(Drop::NeighbourMiss);
                    drop(m);
                }
            }
        }
        self.pipeline.solicits = solicits;
        self.pipeline.solicits.clear();
    }

    /// Datagrams whose reassembly ran out of time: discarded, and their
    /// sources told when the first fragment had arrived.
    fn reassembly_timeouts(&mut self, now: u64) {
        for _ in 0..crate::reasm::REASM_SLOTS {
            if !self.pipeline.reassembly_due(now) {
                return;
            }
            let Some(mut m) = self.spec.pool.alloc() else {
                // No buffer for the Time Exceeded: the datagram is
                // discarded all the same (not tried again at every poll,
                // which counted one no-mbuf per poll), and the error it
                // may have been owed counted once.
                if self.pipeline.reassembly_discard(now) {
                    self.counters.dropped(Drop::NoMbuf);
                }
                continue;
            };
            m.reset_len(0);
            match self.pipeline.reassembly_timeout(&mut m, now) {
                Some(Ok(port)) => self.output(port, m, true),
                _ => self.free.push(m.into_raw()),
            }
        }
    }

    fn post_events(&mut self) {
        if self.pipeline.events.is_empty() {
            return;
        }
        for e in self.pipeline.events.drain(..) {
            if let Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) = self.links.events.try_send((self.spec.id, e)) {
                self.counters.dropped(Drop::EventQueueFull);
            }
        }
    }

    fn apply_updates(&mut self) {
        while let Ok(u) = self.links.updates.try_recv() {
            let old = match u {
                Update::Congestion(port, params) => {
                    if let Some(e) = self.egress.get_mut(usize::from(port)).and_then(|e| e.as_mut()) {
                        e.set_params(*params);
                    }
                    continue;
                }
                Update::SourceQp(port, flow, qp) => {
                    if let Some(e) = self.egress.get_mut(usize::from(port)).and_then(|e| e.as_mut()) {
                        e.set_source_qp(flow.0, flow.1, flow.2, qp);
                    }
                    continue;
                }
                Update::CnpAuth(a) => {
                    let mut old = None;
                    for s in self.egress.iter_mut().flatten().filter_map(|e| e.spec.as_mut()) {
                        old = Some(std::mem::replace(&mut s.auth, a.clone()));
                    }
                    Update::CnpAuth(old.unwrap_or(a))
                }
                Update::SourceFormats(port, f) => {
                    if let Some(e) = self.egress.get_mut(usize::from(port)).and_then(|e| e.as_mut()) {
                        e.set_source_formats(&f);
                    }
                    Update::SourceFormats(port, f)
                }
                Update::Fib(f) => Update::Fib(self.pipeline.set_fib(f)),
                Update::Neighbours(n) => Update::Neighbours(self.pipeline.set_neighbours(n)),
                Update::Topology(t) => Update::Topology(self.pipeline.set_topology(t)),
                Update::Sids(t) => {
                    let old = self.pipeline.set_sids(t);
                    self.endc_steer = !self.mc_owner && self.pipeline.has_endc();
                    Update::Sids(old)
                }
                Update::Inject(ip) => {
                    self.inject(&ip);
                    Update::Inject(ip)
                }
                Update::InjectOn(iface, ip) => {
                    self.inject_on(iface, &ip);
                    Update::InjectOn(iface, ip)
                }
                Update::Solicit(mut sol) => {
                    // Sent with the pipeline's own, after this burst.
                    self.pipeline.solicits.append(&mut sol);
                    Update::Solicit(sol)
                }
                Update::Groups(g) => {
                    if let Err((i, e)) = self.pipeline.set_groups(&g, self.clock.now()) {
                        // The control thread validated the set; a refusal
                        // here is a bug there. Nothing of that group is
                        // installed; its packets are forwarded as ordinary
                        // traffic.
                        eprintln!("worker {}: multicast group {i} refused: {e}", self.spec.id);
                    }
                    self.mc_steer = !self.mc_owner && !self.pipeline.groups().is_empty();
                    Update::Groups(g)
                }
            };
            // Hand the old snapshot back. If there is no room (the control
            // thread empties the channel before every change it pushes),
            // it is freed here, between bursts, and counted; if the control
            // thread is gone, we are shutting down.
            if let Err(TrySendError::Full(_)) = self.links.garbage.try_send(old) {
                self.counters.local(crate::counters::Local::SnapshotFreedByWorker);
            }
        }
    }

    /// Frames wait and the neighbours changed (or it is time to look).
    #[inline(always)]
    fn release_held(&mut self, now: u64) {
        if self.held.due(self.pipeline.neighbour_epoch(), now) {
            self.walk_held(now);
        }
    }

    /// A frame the pipeline built for a neighbour not resolved yet: wait
    /// for it ([`crate::unres`]).
    #[cold]
    #[inline(never)]
    fn hold(&mut self, key: Key, port: u16, m: Mbuf, priority: bool) {
        let segs = m.nb_segs();
        match self.held.hold(key, port, priority, self.now, segs, m) {
            Ok(None) => self.counters.local(crate::counters::Local::NeighbourHeld),
            Ok(Some(oldest)) => {
                // It gave way to the new frame.
                self.counters.local(crate::counters::Local::NeighbourHeld);
                self.counters.dropped(Drop::NeighbourQueueFull);
                self.free.push(oldest.into_raw());
            }
            Err((m, why)) => {
                self.counters.dropped(if why == Refused::Full { Drop::NeighbourQueueFull } else { Drop::NeighbourMiss });
                self.free.push(m.into_raw());
            }
        }
    }

    /// Send the held frames whose neighbour is known now, drop those that
    /// waited too long, ask again for the others.
    #[cold]
    #[inline(never)]
    fn walk_held(&mut self, now: u64) {
        let epoch = self.pipeline.neighbour_epoch();
        {
            let (pipeline, asks, outs) = (&self.pipeline, &mut self.held_asks, &mut self.held_out);
            self.held.walk(
                epoch,
                now,
                |(iface, ip)| pipeline.neighbour_mac(iface, ip).filter(|m| *m != HOLD_MAC),
                |k| {
                    if asks.last() != Some(&k) && asks.len() < asks.capacity() {
                        asks.push(k)
                    }
                },
                |o| outs.push(o),
            );
        }
        for i in 0..self.held_asks.len() {
            let (iface, ip) = self.held_asks[i];
            self.pipeline.solicit_again(iface, ip, now);
        }
        self.held_asks.clear();
        let mut outs = std::mem::take(&mut self.held_out);
        for o in outs.drain(..) {
            match o {
                Outcome::Release(h, mac) => {
                    let mut m = h.item;
                    m.data_mut()[..6].copy_from_slice(&mac);
                    self.counters.local(crate::counters::Local::NeighbourReleased);
                    self.output(h.port, m, h.priority);
                }
                Outcome::Expire(h) => {
                    // Not delivered; its source is told (RFC 4861 s.7.2.2,
                    // RFC 1812 s.5.2.7.1), rate-limited like every ICMP error.
                    self.counters.dropped(Drop::NeighbourTimeout);
                    let mut m = h.item;
                    match self.pipeline.unreachable_for_held(&mut m, now) {
                        Ok(port) => self.output(port, m, true),
                        Err(_) => self.free.push(m.into_raw()),
                    }
                }
            }
        }
        self.held_out = outs;
        // For `show neighbours` (INCOMPLETE, with the frames waiting).
        if let Some(mut w) = self.counters.waiting.try_lock() {
            w.clear();
            let room = w.capacity();
            w.extend(self.held.neighbours().take(room).map(|((i, ip), n)| (i, ip, n)));
        }
    }

    /// After stop: transmit what is buffered, free the rest.
    fn drain(&mut self) {
        // What the control thread handed over before it stopped the
        // workers (packets it originated and counted as sent: RTT probes,
        // FANN notifications, MLD queries) still leaves.
        self.now = self.clock.now();
        self.apply_updates();
        self.send_solicits();
        // Frames still waiting for a neighbour never got one.
        self.counters.drops[Drop::NeighbourMiss as usize].add(self.held.len() as u64);
        for m in self.held.drain() {
            self.free.push(m.into_raw());
        }
        self.flush_all();
        // The last state of each congestion-aware port, for the exit table.
        for (p, e) in self.egress.iter_mut().enumerate() {
            let Some(e) = e.as_mut() else { continue };
            let (limit, qstats) = (e.queue.config().queue_bytes, e.queue.stats);
            if let Some(c) = e.cong.as_mut() {
                c.refresh_reaction(self.now, true);
                *self.counters.congestion[p].lock() = Some(c.view(limit, qstats, self.now));
            }
        }
        // A shaped port's priority queue holds the router's own frames
        // (replies, CNPs, PFC frames, probes), each counted as sent when it
        // was built: they leave now, past the shaper, so what the counters
        // say was sent is on the wire. The data still queued is discarded.
        let before = self.free.len();
        let mut own: Vec<(*mut rte_mbuf, u32)> = Vec::new();
        for p in 0..MAX_PORTS {
            let Some(q) = self.egress[p].as_mut() else { continue };
            let up = !self.spec.link_down.get(p).is_some_and(|d| d.load(Ordering::Relaxed));
            let free = &mut self.free;
            own.clear();
            q.drain_split(|m, len, prio| if prio && up { own.push((m.into_raw(), len)) } else { free.push(m.into_raw()) });
            for chunk in own.chunks(MAX_BURST) {
                let mut pkts: Vec<*mut rte_mbuf> = chunk.iter().map(|(m, _)| *m).collect();
                // A few tries for a TX ring that is full; what it still
                // refuses is discarded.
                let mut sent = 0;
                for _ in 0..4 {
                    sent += tx_burst(p as u16, self.spec.tx_queue, &mut pkts[sent..]);
                    if sent == pkts.len() {
                        break;
                    }
                }
                self.counters.ports[p].tx_pkts.add(sent as u64);
                self.counters.ports[p].tx_bytes.add(chunk[..sent].iter().map(|(_, l)| u64::from(*l)).sum());
                self.free.extend_from_slice(&pkts[sent..]);
            }
        }
        self.counters.drops[Drop::ShutdownDiscard as usize].add((self.free.len() - before) as u64);
        if self.mc_owner {
            self.publish_groups(true);
        }
        free_bulk(&mut self.free);
        self.free.clear();
        self.post_events();
    }
}
