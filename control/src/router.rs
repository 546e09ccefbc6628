//! Start-up, the control thread, and shutdown.
//!
//! Start-up order: validated configuration -> EAL -> mempool(s) -> ports ->
//! workers (pinned, registered with DPDK). The control thread (the main
//! thread) then owns the configuration: it folds learned neighbours and
//! management commands into new table snapshots and pushes them to every
//! worker over lock-free queues; it prints the status line; on SIGINT/SIGTERM
//! it stops the workers, closes the ports and prints the final counters.

use crate::config::RouterConfig;
use crate::ctl::{self, CtlServer};
use crate::display;
use std::fmt::Write as _;
use crossbeam::channel::{bounded, Receiver, Sender};
use dataplane::counters::{Local, Snapshot, WorkerCounters};
use dataplane::dpdk::{self, Eal, Mempool, Port, PortConfig};
use dataplane::pipeline::{Event, Pipeline, PipelineConfig};
use dataplane::tables::{Fib, Learned, NeighSource, Neighbours, Topology};
use dataplane::worker::{Update, Worker, WorkerLinks, WorkerSpec};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Run-time options that are not part of the router's configuration.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Stop once no packet has arrived for this long (after the first one, or
    /// from start if none arrives): for pcap replays, tests and the demo.
    pub exit_when_idle: Option<Duration>,
    /// Stop after this long in any case.
    pub duration: Option<Duration>,
    /// Management socket path.
    pub ctl_socket: Option<String>,
    /// Print the status line (false in the demo's quiet mode).
    pub quiet: bool,
}

/// What a run left behind, for the demo and tests.
pub struct RunReport {
    pub counters: Snapshot,
    pub port_names: Vec<(u16, String)>,
    pub mempool_in_use_after: u32,
    pub mempool_size: u32,
    pub elapsed: Duration,
    pub fib: Fib,
    pub neighbours: Neighbours,
    /// The congestion-aware ports' last state (DPDK port id, state).
    pub congestion: Vec<(u16, dataplane::congestion::CongestionView)>,
    /// The End.MT reverse-path groups' last state.
    pub groups: Vec<dataplane::multicast::GroupView>,
    /// The ports that honour received PAUSE / PFC (DPDK port id, state).
    pub pfc: Vec<(u16, Arc<dataplane::pfcrx::PortPause>)>,
}

struct WorkerHandle {
    counters: Arc<WorkerCounters>,
    /// The (DPDK port, queue) pairs it polls, and its core (None: any).
    queues: Vec<(u16, u16)>,
    core: Option<usize>,
    updates: Sender<Update>,
    join: Option<std::thread::JoinHandle<()>>,
}

/// The control thread's view of the router.
pub struct Control {
    pub cfg: RouterConfig,
    pub topo: Arc<Topology>,
    pub fib: Fib,
    /// The neighbour table and the snapshots the workers read
    /// (left-right: a change costs the change, not a copy of the table).
    pub neighbours: dataplane::neighpub::NeighbourMaster,
    /// The local SID table the workers run (None: no `[srv6]`); management
    /// commands change a copy and push it.
    pub sids: Option<dataplane::srv6::SidTable>,
    workers: Vec<WorkerHandle>,
    /// The control thread's own counters (one writer: this thread), summed
    /// with the workers' in every snapshot (ingress PE outcomes).
    pub own: Arc<WorkerCounters>,
    /// The ingress PE (single writer of the SR policies); it keeps its
    /// copy of the SID table in step with `sids`.
    pub pe: Option<dataplane::fann::PeControl>,
    /// Neighbour unreachability detection (None: `neighbour_reachable_ms = 0`).
    pub nud: Option<dataplane::nud::Nud>,
    /// Requests for `show flows` so far.
    flows_seq: u64,
    /// Replaced snapshots coming back from the workers, freed here.
    garbage: Receiver<Update>,
    /// Neighbours expired since the table last went to the workers, and
    /// when that was (see `run_nud`).
    expired_pending: bool,
    expired_pushed: Instant,
    /// The multicast routes of the configuration and of `mroute add`;
    /// the workers' are these merged with the MLD listeners.
    pub static_mroutes: Vec<dataplane::tables::Mroute>,
    /// MLD's listener state (None: no `[multicast.mld]`).
    pub mld: Option<dataplane::mld::Mld>,
    /// When MLD's timers are next due (ns since `mld_started`).
    mld_next: u64,
    mld_started: Instant,
    /// MLD queries waiting for room in worker 0's update channel.
    mld_out: std::collections::VecDeque<dataplane::mld::Outgoing>,
    /// Per port that honours received PAUSE / PFC (DPDK port id): the
    /// state the workers share (`show pfc`; the link speed it follows).
    pub pfc_rx: Vec<(u16, Arc<dataplane::pfcrx::PortPause>)>,
    /// The workers' clock (their `now`).
    pub clock: dataplane::worker::TscClock,
    /// RTT_est by active probing, per port that has
    /// `[port.congestion.rtt_probe]`.
    pub rtt_probes: Vec<RttProbeSlot>,
    /// RTT_est by receiver reporting, per port that has
    /// `[port.congestion.rtt_acks]`.
    pub rtt_acks: Vec<AckRttSlot>,
}

/// One port's RTT_est from its receivers' ACKs
/// (`dataplane::congestion::ackrtt`): the owner worker measures, the
/// control thread follows the estimate it publishes.
pub struct AckRttSlot {
    /// The port's index in the configuration, its DPDK port id.
    pub pi: usize,
    pub port: u16,
    /// Following the measurement (`ctl congestion PORT rtt_acks off`
    /// stops it; the worker goes on measuring).
    pub on: bool,
    /// Times the estimate moved RTT_est.
    pub changes: u64,
    refused_said: bool,
}

impl AckRttSlot {
    pub fn new(pi: usize, port: u16) -> Self {
        AckRttSlot { pi, port, on: true, changes: 0, refused_said: false }
    }
}

/// The congestion parameters `params` of port `name` (a queue of `queue`
/// bytes) with RTT_est at the measurement `est`: None while it stays (no
/// estimate, or within 1/16 and 50 us of RTT_est,
/// [`dataplane::rttprobe::proposal`]); Err (the reason, in configuration
/// terms) when the port cannot take it, as `ctl congestion PORT
/// rtt_est_us` would refuse it.
pub fn follow_estimate(est: Option<u64>, params: &dataplane::congestion::PortParams, name: &str, queue: u64) -> Option<Result<dataplane::congestion::PortParams, String>> {
    let rtt = dataplane::rttprobe::proposal(est?, params.rtt_est_ns)?;
    let p = dataplane::congestion::PortParams { rtt_est_ns: rtt, ..*params };
    Some(match p.validate() {
        Err(why) => Err(format!("measured RTT {} us not taken: {} (RTT_est stays {} us)", rtt / 1000, crate::config::congestion_error_in_config_terms(&why, name, queue), params.rtt_est_ns / 1000)),
        Ok(()) => Ok(p),
    })
}

/// One port's RTT probe ([`dataplane::rttprobe`]) as the control thread
/// runs it.
pub struct RttProbeSlot {
    /// The port's index in the configuration.
    pub pi: usize,
    pub probe: dataplane::rttprobe::RttProbe,
    /// Probing and following the measurement (`ctl congestion PORT
    /// rtt_probe off` stops both); switched with [`RttProbeSlot::set_on`].
    pub on: bool,
    /// A refused measurement was said on stderr (again only after RTT_est
    /// moved).
    refused_said: bool,
}

impl RttProbeSlot {
    pub fn new(pi: usize, probe: dataplane::rttprobe::RttProbe) -> Self {
        RttProbeSlot { pi, probe, on: true, refused_said: false }
    }

    /// Probing on or off at `now`. Back on after off, the probe starts a
    /// new window ([`dataplane::rttprobe::RttProbe::restart`]): round
    /// trips from before the pause, however old, are not followed. The
    /// probes still waiting then, given up: their number.
    pub fn set_on(&mut self, on: bool, now: u64) -> u64 {
        let lost = self.probe.stats.lost;
        if on && !self.on {
            self.probe.restart(now);
        }
        self.on = on;
        self.probe.stats.lost - lost
    }

    /// The congestion parameters `params` of port `name` (a queue of
    /// `queue` bytes) with RTT_est at the probe's estimate: None while it
    /// stays; Err (the reason, in configuration terms) when the port
    /// cannot take it, as `ctl congestion PORT rtt_est_us` would refuse it.
    pub fn follow(&mut self, params: &dataplane::congestion::PortParams, name: &str, queue: u64) -> Option<Result<dataplane::congestion::PortParams, String>> {
        let r = follow_estimate(self.probe.estimate(), params, name, queue);
        if let Some(Ok(_)) = r {
            self.probe.stats.changes += 1;
        }
        r
    }
}

impl Control {
    /// The RTT probes' Echo Requests due now; probes given up counted.
    pub fn poll_rtt_probes(&mut self) -> Vec<Vec<u8>> {
        let now = self.clock.now();
        let mut out = Vec::new();
        let neigh = self.neighbours.published();
        for slot in self.rtt_probes.iter_mut().filter(|s| s.on) {
            let lost = slot.probe.stats.lost;
            let t = slot.probe.cfg.target;
            let resolved = self.fib.lookup(t).is_some_and(|h| neigh.get(h.iface, h.gateway.unwrap_or(t)).is_some());
            if let Some(ip) = slot.probe.poll(now, resolved) {
                self.own.local(Local::RttProbeSent);
                out.push(ip);
            }
            self.own.local_n(Local::RttProbeLost, slot.probe.stats.lost - lost);
        }
        out
    }

    /// An Echo Reply a worker handed over: a round trip for the probe of
    /// the port its data names, and RTT_est moved if the estimate did.
    pub fn on_echo_reply(&mut self, from: std::net::IpAddr, seq: u16, data: &[u8], at: u64) {
        use dataplane::rttprobe::{Reply, RttProbe};
        let port = RttProbe::port_of(data);
        let Some(k) = self.rtt_probes.iter().position(|s| Some(s.probe.port) == port) else {
            self.own.local(Local::RttProbeForged);
            return;
        };
        if !self.rtt_probes[k].on {
            // Switched off since: not followed.
            return self.own.local(Local::RttProbeLate);
        }
        let lost = self.rtt_probes[k].probe.stats.lost;
        let r = self.rtt_probes[k].probe.on_reply(from, seq, data, at);
        // A reply past the timeout, or dated before its probe, loses it.
        self.own.local_n(Local::RttProbeLost, self.rtt_probes[k].probe.stats.lost - lost);
        match r {
            Reply::Sample(_) => self.own.local(Local::RttProbeAnswered),
            Reply::Late => return self.own.local(Local::RttProbeLate),
            Reply::Forged => return self.own.local(Local::RttProbeForged),
            Reply::Held => return self.own.local(Local::RttProbeHeld),
            Reply::ClockSkew => return self.own.local(Local::RttProbeClockSkew),
        }
        self.follow_rtt_probe(k);
    }

    /// Move port `k`'s RTT_est (and with it K_max and K_min) to its
    /// probe's estimate when that differs by more than 1/16 and 50 us
    /// ([`dataplane::rttprobe::RttProbe::proposal`]); a value the port's
    /// configuration cannot take is refused and said once.
    fn follow_rtt_probe(&mut self, k: usize) {
        let slot = &mut self.rtt_probes[k];
        let port = &self.cfg.ports[slot.pi];
        let Some(plan) = port.congestion.as_ref() else { return };
        let r = slot.follow(&plan.params, &port.name, port.egress.map_or(0, |e| e.queue_bytes));
        let (pi, id, by) = (slot.pi, slot.probe.port, format!("probes to {}", slot.probe.cfg.target));
        let mut said = slot.refused_said;
        self.take_rtt_est(pi, id, r, &by, &mut said);
        self.rtt_probes[k].refused_said = said;
    }

    /// Follow each `[port.congestion.rtt_acks]` port's estimate (as its
    /// owner worker last published it) as [`Control::follow_rtt_probe`]
    /// follows a probe's.
    pub fn follow_rtt_acks(&mut self) {
        for k in 0..self.rtt_acks.len() {
            let slot = &self.rtt_acks[k];
            if !slot.on {
                continue;
            }
            let (pi, id) = (slot.pi, slot.port);
            let est = self.congestion_view(id).and_then(|v| v.ack_rtt).map(|a| a.estimate_ns).filter(|&e| e > 0);
            let port = &self.cfg.ports[pi];
            let Some(plan) = port.congestion.as_ref() else { continue };
            let r = follow_estimate(est, &plan.params, &port.name, port.egress.map_or(0, |e| e.queue_bytes));
            let mut said = self.rtt_acks[k].refused_said;
            if self.take_rtt_est(pi, id, r, "the receivers' ACKs", &mut said) {
                self.rtt_acks[k].changes += 1;
            }
            self.rtt_acks[k].refused_said = said;
        }
    }

    /// The RTT_est of port `pi` (DPDK port `id`) that a measurement (`by`)
    /// proposes: pushed to the workers (true), or refused and said once
    /// (`said`: already said since RTT_est last moved).
    fn take_rtt_est(&mut self, pi: usize, id: u16, r: Option<Result<dataplane::congestion::PortParams, String>>, by: &str, said: &mut bool) -> bool {
        let port = &mut self.cfg.ports[pi];
        let name = &port.name;
        let Some(plan) = port.congestion.as_mut() else { return false };
        match r {
            None => false,
            Some(Err(why)) => {
                self.own.local(Local::RttEstRefused);
                if !*said {
                    *said = true;
                    eprintln!("port {name}: {why}");
                }
                false
            }
            Some(Ok(p)) => {
                *said = false;
                eprintln!("port {name}: RTT_est {} -> {} us ({by}), K_min {} bytes, K_max {} bytes", plan.params.rtt_est_ns / 1000, p.rtt_est_ns / 1000, p.k_min(), p.k_max());
                plan.params = p;
                self.own.local(Local::RttEstChanged);
                for w in self.workers.iter() {
                    let _ = w.updates.send(Update::Congestion(id, Box::new(p)));
                }
                true
            }
        }
    }

    /// Port `port`'s round trip as its RTT measurement has it (estimate,
    /// jitter; the estimate None while there is none), for FANN latency
    /// events; None when the port measures none (not configured, or
    /// switched off with `ctl`).
    pub fn rtt_measured(&self, port: u16) -> Option<(Option<u64>, u64)> {
        if let Some(s) = self.rtt_probes.iter().find(|s| s.probe.port == port) {
            return s.on.then(|| (s.probe.estimate(), s.probe.jitter_ns));
        }
        self.rtt_acks.iter().find(|s| s.port == port && s.on)?;
        let a = self.congestion_view(port).and_then(|v| v.ack_rtt)?;
        Some(((a.estimate_ns > 0).then_some(a.estimate_ns), a.jitter_ns))
    }

    /// Each congestion-aware port's state as its owner worker last
    /// published it (about once per ms, and when it stopped): DPDK port
    /// id, state.
    pub fn congestion_views(&self) -> Vec<(u16, dataplane::congestion::CongestionView)> {
        (0..dataplane::counters::MAX_PORTS as u16).filter_map(|p| self.congestion_view(p).map(|v| (p, v))).collect()
    }

    /// Congestion-aware port `port`'s state as its owner last published it.
    pub fn congestion_view(&self, port: u16) -> Option<dataplane::congestion::CongestionView> {
        self.workers.iter().find_map(|w| *w.counters.congestion[usize::from(port) % dataplane::counters::MAX_PORTS].lock())
    }

    /// The End.MT reverse-path groups' state as their owner worker last
    /// published it (about every 10 ms).
    pub fn group_views(&self) -> Vec<dataplane::multicast::GroupView> {
        self.workers.iter().map(|w| w.counters.groups.lock().clone()).find(|v| !v.is_empty()).unwrap_or_default()
    }

    /// The top `n` flows of congestion-aware port `port` (the most bytes
    /// queued first), asked of its owner worker, which scans its flow table
    /// in bounded steps between bursts; waits at most `timeout`.
    pub fn flows(&mut self, port: u16, n: usize, timeout: Duration) -> Result<Vec<dataplane::congestion::FlowView>, String> {
        let p = usize::from(port) % dataplane::counters::MAX_PORTS;
        let w = self.workers.iter().find(|w| w.counters.congestion[p].lock().is_some()).ok_or("not a congestion-aware port, or its worker has not started")?;
        self.flows_seq += 1;
        let req = (self.flows_seq << 16) | n.min(dataplane::congestion::MAX_SHOW_FLOWS) as u64;
        w.counters.flows_request[p].set(req);
        let t0 = Instant::now();
        loop {
            {
                let g = w.counters.flows[p].lock();
                if g.0 == req {
                    return Ok(g.1.clone());
                }
            }
            if t0.elapsed() >= timeout {
                return Err(format!("the port's worker did not answer within {} ms", timeout.as_millis()));
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// One line per worker: its core, the packets received on each RX
    /// queue it polls (how RSS spread the traffic), its poll loops and, once
    /// it stopped, its CPU time. `names`: DPDK port id -> port name.
    pub fn workers_table(&self, names: &[(u16, String)]) -> String {
        let mut o = String::new();
        for (w, h) in self.workers.iter().enumerate() {
            let c = &h.counters;
            let rx: Vec<String> = h
                .queues
                .iter()
                .enumerate()
                .map(|(i, &(p, q))| {
                    format!("{}/{q} {}", display::port_name(names, p), c.rx_queue_pkts.get(i).map_or(0, |x| x.get()))
                })
                .collect();
            let _ = write!(
                o,
                "worker {w}: core {} rx {} polls {} busy {}",
                h.core.map_or_else(|| "any".to_string(), |c| c.to_string()),
                rx.join(", "),
                c.bursts.get(),
                c.busy_bursts.get()
            );
            let cpu = c.cpu_ns.get();
            if cpu > 0 {
                let _ = write!(o, " cpu {:.3} s", cpu as f64 / 1e9);
            }
            o.push('\n');
        }
        o
    }

    fn push(&self, make: impl Fn() -> Update) {
        // Room for the snapshots this change replaces: many changes in one
        // loop (a storm of FANN notifications) must not leave the workers
        // to free them on their packet path.
        while self.garbage.try_recv().is_ok() {}
        for w in &self.workers {
            // Bounded queue; the worker drains it every loop. If it were full,
            // waiting is right here: the control thread may block, a worker never.
            let _ = w.updates.send(make());
        }
    }
    /// A new topology snapshot (multicast routes changed) to every worker.
    pub fn push_topology(&mut self, t: Topology) {
        let t = Arc::new(t);
        self.topo = t.clone();
        self.push(|| Update::Topology(t.clone()));
    }
    pub fn push_fib(&self) {
        let f = Arc::new(self.fib.clone());
        self.push(|| Update::Fib(f.clone()));
    }
    /// A learned neighbour was learned anew or answered a solicitation.
    fn confirm_neighbour(&mut self, iface: u16, ip: std::net::IpAddr, started: Instant) {
        if let Some(nud) = self.nud.as_mut() {
            if self.neighbours.get(iface, ip).is_some_and(|n| n.source == NeighSource::Learned) {
                nud.confirm(iface, ip, started.elapsed().as_nanos() as u64);
            }
        }
    }
    fn suspect_neighbour(&mut self, iface: u16, ip: std::net::IpAddr, started: Instant) {
        if let Some(nud) = self.nud.as_mut() {
            if self.neighbours.get(iface, ip).is_some_and(|n| n.source == NeighSource::Learned) {
                nud.suspect(iface, ip, started.elapsed().as_nanos() as u64);
            }
        }
    }
    /// One step of neighbour unreachability detection: send its probes
    /// (through worker 0), delete the neighbours that did not answer, and
    /// leave the failed gateways out of the ECMP routes.
    fn run_nud(&mut self, now_ns: u64) {
        use dataplane::counters::Local;
        let Some(nud) = self.nud.as_mut() else { return };
        // Kept while unused: route gateways and End.X next hops.
        let endx = self.sids.as_ref().map(|t| t.end_x_next_hops()).unwrap_or_default();
        let merged: Vec<(u16, std::net::IpAddr)>;
        let all = if endx.is_empty() {
            self.fib.gateways()
        } else {
            let mut v: Vec<(u16, std::net::IpAddr)> = self.fib.gateways().iter().copied().chain(endx).collect();
            v.sort_unstable();
            v.dedup();
            merged = v;
            &merged
        };
        let out = nud.tick(now_ns, &self.neighbours, dataplane::nud::Gateways { ecmp: self.fib.ecmp_gateways(), all });
        let topo = self.topo.clone();
        let name = |i: u16| topo.iface(i).map(|x| x.name.clone()).unwrap_or_else(|| i.to_string());
        if !out.probes.is_empty() {
            let unicast = out.probes.iter().filter(|p| p.mac.is_some()).count() as u64;
            let sol: Vec<dataplane::pipeline::Solicit> = out.probes.iter().map(|p| dataplane::pipeline::Solicit { iface: p.iface, target: p.target, unicast: p.mac }).collect();
            match self.workers.first().map(|w| w.updates.try_send(Update::Solicit(sol))) {
                Some(Ok(())) => self.own.local_n(Local::NeighbourProbe, unicast),
                _ => {
                    // Worker 0 is behind: not sent, due again next step.
                    nud.unsent(&out.probes, now_ns);
                    self.own.dropped(dataplane::counters::Drop::EventQueueFull);
                }
            }
        }
        for &(i, ip) in &out.delete {
            if self.neighbours.remove(i, ip).is_some() {
                eprintln!("neighbour {ip} dev {}: no answer to {} probes; deleted", name(i), nud.config().probes);
                self.own.local(Local::NeighbourUnreachable);
            }
        }
        for &(i, ip) in &out.expire {
            if self.neighbours.remove(i, ip).is_some() {
                self.own.local(Local::NeighbourExpired);
            }
        }
        // Deletions after unanswered probes reach the workers at once;
        // expiries (unused entries) at most once a second, so a wave of
        // them does not copy a large table every step.
        self.expired_pending |= !out.expire.is_empty();
        if !out.delete.is_empty() || (self.expired_pending && self.expired_pushed.elapsed() >= Duration::from_secs(1)) {
            self.push_neighbours();
            self.expired_pending = false;
            self.expired_pushed = Instant::now();
        }
        if let Some(failed) = out.failed {
            // Recovered: still a gateway, and answering (not one whose
            // route went away).
            let before = self.fib.unreachable().to_vec();
            let gws = self.fib.ecmp_gateways();
            let newly = failed.iter().filter(|k| !before.contains(k)).count() as u64;
            let back = before.iter().filter(|k| !failed.contains(k) && gws.binary_search(k).is_ok()).count() as u64;
            let list: Vec<String> = failed.iter().map(|&(i, g)| format!("{g} dev {}", name(i))).collect();
            if self.fib.set_unreachable(failed) {
                if list.is_empty() {
                    eprintln!("neighbour reachability: no ECMP gateway is unreachable");
                } else {
                    eprintln!("neighbour reachability: ECMP gateways not answering: {list:?}; ECMP routes use the other next hops");
                }
                self.own.local_n(Local::GatewayFailed, newly);
                self.own.local_n(Local::GatewayRecovered, back);
                self.push_fib();
            }
        }
    }
    pub fn push_neighbours(&mut self) {
        let n = self.neighbours.publish();
        self.push(|| Update::Neighbours(n.clone()));
    }
    /// The addresses the workers hold packets for, with the packets
    /// (summed over the workers).
    pub fn waiting(&self) -> Vec<(u16, std::net::IpAddr, u32)> {
        let mut all: std::collections::BTreeMap<(u16, std::net::IpAddr), u32> = Default::default();
        for w in &self.workers {
            for &(i, ip, n) in w.counters.waiting.lock().iter() {
                *all.entry((i, ip)).or_default() += n;
            }
        }
        all.into_iter().map(|((i, ip), n)| (i, ip, n)).collect()
    }
    /// Egress queue depth of a port (bytes), from its owner's gauge.
    pub fn queue_depth(&self, port: u16) -> u64 {
        self.workers.iter().map(|w| w.counters.queue_depth[usize::from(port) % dataplane::counters::MAX_PORTS].get()).sum()
    }
    /// The top contributing flow of a port's queue, as its owner published it.
    pub fn top_flow(&self, port: u16) -> Option<dataplane::wire::fann::FlowId> {
        self.workers.iter().find_map(|w| *w.counters.top_flow[usize::from(port) % dataplane::counters::MAX_PORTS].lock())
    }
    /// Microbursts the port's owner has seen (cumulative).
    pub fn microbursts(&self, port: u16) -> u64 {
        self.workers.iter().map(|w| w.counters.microbursts[usize::from(port) % dataplane::counters::MAX_PORTS].get()).sum()
    }
    /// Replace the multicast groups at run time (unchanged groups keep
    /// their state in the owner worker).
    pub fn push_groups(&self, g: Arc<Vec<dataplane::multicast::GroupConfig>>) {
        self.push(|| Update::Groups(g.clone()));
    }
    /// Install a new SID table: the control thread's copy, the ingress
    /// PE's copy (so a policy rebuild never undoes a management change)
    /// and every worker.
    pub fn push_sids(&mut self, t: Arc<dataplane::srv6::SidTable>) {
        if let Some(pe) = self.pe.as_mut() {
            pe.sync(&t);
        }
        self.sids = Some((*t).clone());
        self.push(|| Update::Sids(t.clone()));
    }
    /// MLD's clock: ns since it started.
    pub fn mld_now(&self) -> u64 {
        self.mld_started.elapsed().as_nanos() as u64
    }
    /// Replace the static multicast routes (`mroute add` / `del`).
    pub fn set_static_mroutes(&mut self, v: Vec<dataplane::tables::Mroute>) {
        self.static_mroutes = v;
        self.refresh_mroutes();
    }
    /// The workers' multicast routes: the static ones with the MLD
    /// listeners merged in; pushed when they changed.
    fn refresh_mroutes(&mut self) {
        let mut merged = match &self.mld {
            Some(m) => dataplane::mld::merge_routes(&self.static_mroutes, &m.listeners()),
            None => self.static_mroutes.clone(),
        };
        if merged != self.topo.mroutes {
            dataplane::tables::Mroute::keep_stats_of(&mut merged, &self.topo.mroutes);
            let mut t = (*self.topo).clone();
            t.mroutes = merged;
            self.push_topology(t);
        }
    }
    /// An MLD message a worker handed over.
    fn on_mld(&mut self, iface: u16, src: std::net::Ipv6Addr, msg: &[u8], now_ns: u64) {
        use dataplane::counters::Drop;
        use dataplane::mld::Refused;
        let Some(m) = self.mld.as_mut() else {
            self.own.dropped(Drop::MldNotEnabled);
            return;
        };
        if let Err(r) = m.on_message(iface, src, msg, now_ns, &self.own) {
            self.own.dropped(match r {
                Refused::NotEnabled => Drop::MldNotEnabled,
                Refused::Malformed => Drop::MalformedIcmp,
                Refused::BadSource => Drop::MldInvalid,
            });
        }
        // Queries it asks for go at once.
        self.mld_next = now_ns;
    }
    /// MLD's timers: queries due go to worker 0, changed listeners to the
    /// workers' multicast routes.
    fn run_mld(&mut self, now_ns: u64) {
        let Some(m) = self.mld.as_mut() else { return };
        if now_ns >= self.mld_next {
            let mut out = Vec::new();
            self.mld_next = m.tick(now_ns, &mut out, &self.own);
            for o in out {
                if self.mld_out.len() >= INJECT_BACKLOG {
                    self.own.dropped(dataplane::counters::Drop::EventQueueFull);
                } else {
                    self.mld_out.push_back(o);
                }
            }
        }
        for (iface, from, version) in m.take_warnings() {
            let name = self.topo.iface(iface).map_or_else(|| iface.to_string(), |x| x.name.clone());
            if version == 1 {
                eprintln!("mld: an MLDv1 querier ({from}) on {name}: this router queries in MLDv2 there, which MLDv1 routers do not understand (RFC 9777 s.8.3.1: list {name} in [multicast.mld] v1_interfaces, or configure every router on the link for MLDv2)");
            } else {
                eprintln!("mld: an MLDv2 querier ({from}) on {name}, which this router runs in MLDv1 mode (RFC 9777 s.8.3.1: every router on the link must use the lowest version present; configure that router for MLDv1, or take {name} out of v1_interfaces if no MLDv1 router is left)");
            }
        }
        if m.take_changed() {
            self.refresh_mroutes();
        }
        if let Some(w) = self.workers.first() {
            while let Some(o) = self.mld_out.pop_front() {
                match w.updates.try_send(Update::InjectOn(o.iface, o.packet)) {
                    Ok(()) => {}
                    Err(crossbeam::channel::TrySendError::Full(Update::InjectOn(iface, packet))) => {
                        self.mld_out.push_front(dataplane::mld::Outgoing { iface, packet });
                        break;
                    }
                    Err(_) => self.own.dropped(dataplane::counters::Drop::EventQueueFull),
                }
            }
        }
    }
    pub fn worker_updates(&self) -> impl Iterator<Item = &Sender<Update>> {
        self.workers.iter().map(|w| &w.updates)
    }
    /// Wait, at most `limit`, until every running worker has taken what
    /// was pushed to it before this call; the workers that had not by
    /// then (by index). A management command that changes something
    /// replies after this, so its `OK` means the change is in force.
    pub fn wait_applied(&self, limit: Duration) -> Vec<usize> {
        let running: Vec<(usize, &WorkerCounters)> = self.workers.iter().enumerate().filter(|(_, w)| w.join.as_ref().is_some_and(|j| !j.is_finished())).map(|(i, w)| (i, &*w.counters)).collect();
        loops_after(&running, limit)
    }
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::sum(self.workers.iter().map(|w| &*w.counters).chain(std::iter::once(&*self.own)))
    }
}

/// Wait, at most `limit`, until each of `workers` (index, counters) has
/// begun a poll loop after this call; the indices of those that had not.
/// A worker applies its updates at the top of every loop and counts the
/// loop (`bursts`) at its end: the loop that ends after the count seen
/// here may have begun before, the one after it cannot.
pub fn loops_after(workers: &[(usize, &WorkerCounters)], limit: Duration) -> Vec<usize> {
    // The updates just sent are visible before the counts are read.
    std::sync::atomic::fence(Ordering::SeqCst);
    let start: Vec<u64> = workers.iter().map(|(_, c)| c.bursts.get()).collect();
    let until = Instant::now() + limit;
    loop {
        let late: Vec<usize> = workers.iter().zip(&start).filter(|((_, c), &s)| c.bursts.get().wrapping_sub(s) < 2).map(|((i, _), _)| *i).collect();
        if late.is_empty() || Instant::now() >= until {
            return late;
        }
        std::thread::sleep(Duration::from_micros(20));
    }
}

pub fn eal_args_for(cfg: &RouterConfig, cli_eal: &[String]) -> Vec<String> {
    let mut args = vec!["dcirouter".to_string()];
    if cli_eal.is_empty() {
        args.extend(cfg.eal_args.iter().cloned());
    } else {
        args.extend(cli_eal.iter().cloned());
    }
    for p in &cfg.ports {
        if p.is_vdev {
            if !args.iter().any(|a| a.starts_with(&p.device_name) && a.len() >= p.device_name.len()) {
                args.push("--vdev".into());
                args.push(p.device.clone());
            }
        } else if !args.iter().any(|a| a == &p.device || a.starts_with(&format!("{},", p.device))) && !args.iter().any(|a| a == "--no-pci") {
            args.push("-a".into());
            args.push(p.device.clone());
        }
    }
    args
}

/// Stop and join the workers already running, before a failed start-up
/// drops the ports and EAL under them.
fn stop_workers(stop: &AtomicBool, workers: &mut [WorkerHandle]) {
    stop.store(true, Ordering::Relaxed);
    for h in workers.iter_mut() {
        if let Some(j) = h.join.take() {
            let _ = j.join();
        }
    }
}

/// Run the router until a signal (or an exit condition in `opts`).
pub fn run(mut cfg: RouterConfig, cli_eal: &[String], opts: &RunOptions) -> Result<RunReport, String> {
    // A signal stops the control thread; the control thread stops the
    // workers (`workers_stop`) once it has handed over the packets it
    // originated, so none counted as sent is lost between the two.
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone()).map_err(|e| format!("signal handler: {e}"))?;
    }
    let workers_stop = Arc::new(AtomicBool::new(false));
    // The CPUs we may pin workers to, read before rte_eal_init pins this
    // thread to the main lcore (worker threads inherit that mask).
    let core_ids = core_affinity::get_core_ids().unwrap_or_default();
    // Everything that can refuse to start is checked before EAL starts and
    // before any worker runs: a worker must never see its ports closed
    // under it by a failed start-up.
    for (w, &c) in cfg.dataplane.worker_cores.iter().enumerate() {
        if !core_ids.is_empty() && !core_ids.iter().any(|id| id.id == c) {
            return Err(format!("dataplane.worker_cores[{w}] = {c}: not a CPU this process may run on (allowed: {:?})", core_ids.iter().map(|id| id.id).collect::<Vec<_>>()));
        }
    }
    if !cfg.dataplane.worker_cores.is_empty() && core_ids.is_empty() {
        return Err(format!("dataplane.worker_cores = {:?}: cannot read the CPUs this process may run on", cfg.dataplane.worker_cores));
    }
    let eal_args = eal_args_for(&cfg, cli_eal);
    eprintln!("EAL: {}", eal_args[1..].join(" "));
    let eal = Eal::init(&eal_args)?;
    let socket = eal.socket_id().max(0);

    let nworkers = cfg.dataplane.worker_cores.len().max(1);
    // One mempool per NUMA socket in use: each port's RX queues take mbufs
    // from the pool on the port's socket (virtual devices: the main one).
    let mut pools: Vec<(i32, Arc<Mempool>)> = Vec::new();
    let mut port_socket = Vec::new();
    for (i, p) in cfg.ports.iter().enumerate() {
        let (_, s) = Port::socket_of(&p.device_name).map_err(|e| format!("port[{i}] ({}): {e}", p.name))?;
        let s = if s < 0 { socket } else { s };
        port_socket.push(s);
        if !pools.iter().any(|(ps, _)| *ps == s) {
            pools.push((s, Arc::new(Mempool::new(&format!("mbuf_s{s}"), cfg.mempool.mbufs_per_socket, cfg.mempool.cache_size, cfg.mempool.data_room, s)?)));
        }
    }
    let pool_on = |s: i32| pools.iter().find(|(ps, _)| *ps == s).map(|(_, p)| p.clone()).unwrap_or_else(|| pools[0].1.clone());
    // Ports; fix up interface port numbers to DPDK's ids.
    let mut ports: Vec<Port> = Vec::new();
    for (i, p) in cfg.ports.iter().enumerate() {
        let pc = PortConfig {
            device_name: p.device_name.clone(),
            rx_queues: p.rx_queues,
            tx_queues: nworkers as u16,
            rx_desc: p.rx_desc,
            tx_desc: p.tx_desc,
            mtu: p.mtu,
            mac: p.mac,
            promiscuous: p.promiscuous,
        };
        let port = Port::open(&pc, &pool_on(port_socket[i])).map_err(|e| format!("port[{i}] ({}): {e}", p.name))?;
        if usize::from(port.id) >= dataplane::counters::MAX_PORTS {
            return Err(format!("port[{i}] ({}): DPDK port id {} >= {}", p.name, port.id, dataplane::counters::MAX_PORTS));
        }
        eprintln!(
            "port {} = {} (dpdk port {}, driver {}, mac {}, {} rx queue(s){})",
            p.name,
            p.device_name,
            port.id,
            port.driver,
            dataplane::wire::ethernet::Mac(port.mac),
            p.rx_queues,
            if port.rss { ", RSS" } else { "" }
        );
        for ifc in cfg.interfaces.iter_mut().filter(|f| f.port == i as u16) {
            ifc.mac = port.mac;
            ifc.link_local = dataplane::tables::eui64_link_local(&port.mac);
        }
        ports.push(port);
    }
    for (plan, port) in cfg.ports.iter_mut().zip(ports.iter()) {
        plan.link_bps = port.link_bps();
    }
    // Second pass: interface.port was the config position.
    for ifc in cfg.interfaces.iter_mut() {
        ifc.port = ports[usize::from(ifc.port)].id;
    }

    let topo = Arc::new(cfg.topology());
    let (ev_tx, ev_rx) = bounded::<(usize, Event)>(4096);
    let (garbage_tx, garbage_rx) = bounded::<Update>(1024);
    let fib0 = Arc::new(cfg.fib.clone());
    let neighbours = dataplane::neighpub::NeighbourMaster::new(cfg.neighbours.clone());
    let neigh0 = neighbours.published();
    // The neighbours the workers forward to, for reachability detection.
    let used = Arc::new(dataplane::nud::UsedBits::default());
    let solicit_log = Arc::new(dataplane::nud::SolicitLog::default());
    let pcfg = PipelineConfig {
        icmp_error_rate_pps: cfg.dataplane.icmp_error_rate_pps,
        icmp_error_burst: cfg.dataplane.icmp_error_burst,
        solicit_interval_ns: cfg.dataplane.neighbour_solicit_interval_ms * 1_000_000,
    };

    // (port, queue) pairs spread round-robin over the worker cores.
    let mut assign: Vec<Vec<(u16, u16)>> = vec![Vec::new(); nworkers];
    let mut k = 0;
    for (pi, p) in cfg.ports.iter().enumerate() {
        for q in 0..p.rx_queues {
            assign[k % nworkers].push((ports[pi].id, q));
            k += 1;
        }
    }
    let hz = dpdk::tsc_hz();
    let mut sids0 = sid_table(&cfg).map(Arc::new);
    // The END.C interfaces whose PAUSE quanta follow the link's speed (no
    // speed configured for them).
    let endc_following: Vec<u16> = cfg.srv6.as_ref().map(|s| s.sids.iter().filter(|x| x.behaviour == "end.c").flat_map(|x| x.endc_ifaces.iter().copied().filter(|&i| endc_configured_bps(&cfg, x, i).is_none())).collect()).unwrap_or_default();
    let endc_follows_link = !endc_following.is_empty();
    // Ingress PE: the control thread owns the SR policies from here on.
    let mut pe = match (&cfg.ingress_pe, &sids0) {
        (Some(pc), Some(t)) => {
            let c = dataplane::fann::PeControl::new((**t).clone(), pc.clone()).map_err(|e| format!("ingress_pe: {e}"))?;
            sids0 = Some(c.table());
            eprintln!(
                "ingress PE: {} polic(ies), {} known node(s), controller {}",
                pc.policies.len(),
                pc.known_nodes.len(),
                pc.controller.map(|c| c.to_string()).unwrap_or_else(|| "none".into())
            );
            Some(c)
        }
        _ => None,
    };
    if let Some(t) = &sids0 {
        eprintln!("srv6: {} local SID(s)", t.len());
    }
    // Egress stages: each shaped port's queue is owned by one worker; the
    // others hand packets to it through a lock-free ring.
    let maxp = dataplane::counters::MAX_PORTS;
    let mut egress_cfg = vec![None; maxp];
    let mut owner = vec![0usize; maxp];
    let mut cong_cfg: Vec<Option<dataplane::worker::CongestionSpec>> = vec![None; maxp];
    let mut pfc_rx: Vec<Option<Arc<dataplane::pfcrx::PortPause>>> = vec![None; maxp];
    // R_port: rate_mbps, else the link speed the NIC reports now; kept in
    // the plan, which run-time changes (`ctl congestion`) start from.
    for (pi, port) in ports.iter().enumerate().take(cfg.ports.len()) {
        let p = &cfg.ports[pi];
        let Some(c) = &p.congestion else { continue };
        let params = crate::config::congestion_params_at_link(c, p, pi, p.egress.map_or(0, |e| e.queue_bytes), port.link_bps())?;
        if let Some(c) = cfg.ports[pi].congestion.as_mut() {
            c.params = params;
        }
    }
    for (pi, p) in cfg.ports.iter().enumerate() {
        let id = usize::from(ports[pi].id);
        egress_cfg[id] = p.egress;
        if let Some(c) = &p.congestion {
            let params = c.params;
            cong_cfg[id] = Some(dataplane::worker::CongestionSpec { params, source_v4: c.source_v4, source_v6: c.source_v6, end_e_sid: c.end_e_sid, notify_sids: cfg.notify_sids(), tunnel_pes: cfg.tunnel_pes(), source_qps: c.source_qps.clone(), source_formats: c.source_formats.clone(), auth: cfg.cnp_auth.clone() });
            eprintln!(
                "port {}: congestion-aware (Long-haul CNP): R_port {} Mb/s{}, RTT_est {} us, K_min {} bytes, K_max {} bytes",
                p.name,
                params.rate_bps / 1_000_000,
                if c.rate_from_link { " (the link speed)" } else { "" },
                params.rtt_est_ns / 1000,
                params.k_min(),
                params.k_max()
            );
        }
        owner[id] = pi % nworkers;
        if let Some(e) = p.egress {
            eprintln!(
                "port {}: egress {}, queue {} bytes / {} packets ({} kept for notifications, which take at most {} % of the port while data waits), owned by worker {}",
                p.name,
                if e.rate_bps == 0 { "not shaped (drained as fast as the NIC takes packets)".to_string() } else { format!("shaped at {} Mb/s", e.rate_bps / 1_000_000) },
                e.queue_bytes,
                e.max_packets,
                e.priority_share(),
                e.priority_percent,
                pi % nworkers
            );
        }
        if let Some(c) = p.pfc {
            // The frames must reach the router: a NIC that acts on PAUSE
            // itself (and hides it) is told to forward them instead.
            match ports[pi].forward_mac_control() {
                Ok(()) => eprintln!("port {}: NIC flow control off, MAC Control frames forwarded to the router", p.name),
                Err(e) => eprintln!(
                    "port {}: the driver cannot change its flow control ({}); PAUSE / PFC frames are honoured as it delivers them",
                    p.name,
                    if e == -95 { "not supported".to_string() } else { format!("error {e}") }
                ),
            }
            let pp = Arc::new(dataplane::pfcrx::PortPause::new(c));
            pp.set_link_speed(ports[pi].link_bps());
            let prios: Vec<String> = (0..8).filter(|b| c.priorities & (1 << b) != 0).map(|b| b.to_string()).collect();
            eprintln!(
                "port {}: honours received {}; pause quanta at {} Mb/s{}",
                p.name,
                if c.pause { "802.3x PAUSE (every priority)".to_string() } else { format!("PFC for priorities [{}]", prios.join(", ")) },
                pp.link_bps() / 1_000_000,
                if c.link_bps == 0 { " (the link speed, followed)" } else { "" }
            );
            pfc_rx[id] = Some(pp);
        }
    }
    for sa in cfg.cnp_auth.sas() {
        eprintln!("cnp_auth: ICMPv6 Long-haul CNPs to {} carry an IPsec AH ({}, SPI {:#x}, draft-tian s.9)", sa.prefix, sa.key.algorithm().name(), sa.key.spi());
    }
    // End.MT replicas share the payload only when every port can send
    // chained mbufs (a replica may leave through any of them).
    let zero_copy_replicas = cfg.dataplane.zero_copy_replication && ports.iter().all(|p| p.multi_seg_tx);
    if sids0.as_ref().is_some_and(|t| t.iter().any(|(_, b)| matches!(b, dataplane::srv6::Behaviour::EndMT { .. }))) {
        let why = if !cfg.dataplane.zero_copy_replication {
            "off in the configuration".to_string()
        } else if let Some(p) = ports.iter().find(|p| !p.multi_seg_tx) {
            format!("port {} ({}) cannot send chained mbufs", p.name, p.driver)
        } else {
            String::new()
        };
        if zero_copy_replicas {
            eprintln!(
                "end.mt: zero-copy replicas (private header + shared payload + private ICRC){}",
                if cfg.mempool.header_mbufs > 0 { format!(", {} header mbufs per socket", cfg.mempool.header_mbufs) } else { ", header mbufs from the main pool".into() }
            );
        } else {
            eprintln!("end.mt: replicas are full copies ({why})");
        }
    }
    // Small mbufs for the replicas' headers, payload references and ICRC
    // tails, one pool per socket of the main pools.
    let mut hdr_pools: Vec<(i32, Arc<Mempool>)> = Vec::new();
    if zero_copy_replicas && cfg.mempool.header_mbufs > 0 {
        for (s, _) in &pools {
            // 128 B headroom + Ethernet/802.1Q + 60 B of IPv6/UDP/BTH.
            // The largest per-lcore cache DPDK allows: one received packet
            // takes three of these per copy, so a burst of 32 to 16
            // receivers cycles ~100 through the cache between TX bursts; a
            // small cache spills to the pool's ring and its objects go cold
            // (End.MT 16 receivers: 0.13-0.18 Mpps with 256, 0.19-0.27 with
            // 512 on the bench machine).
            let cache = 512.min(cfg.mempool.header_mbufs * 2 / 3);
            hdr_pools.push((*s, Arc::new(Mempool::new(&format!("hdr_s{s}"), cfg.mempool.header_mbufs, cache, 256, *s)?)));
        }
    }
    let hdr_on = |s: i32| hdr_pools.iter().find(|(ps, _)| *ps == s).map(|(_, p)| p.clone());
    // Hand-off rings hold mbufs while their owner is away. The shaped
    // ports' rings together hold at most an eighth of the pool, the
    // multicast ring another eighth (each 64 ..= 4096), so with the shaped
    // queues (at most half) a quarter of the pool is always left to receive
    // into; a full ring drops as handoff-full.
    let mbufs = cfg.mempool.mbufs_per_socket as usize;
    let shaped = cfg.ports.iter().filter(|p| p.egress.is_some()).count().max(1);
    let ring_cap = (mbufs / 8 / shaped).clamp(64, 4096);
    // For the test of what follows a full ring
    // (DCIROUTER_FAULT_INJECT=handoff-ring:N, N >= 1 slots).
    let ring_cap = fault_inject("handoff-ring:").and_then(|n| n.parse::<usize>().ok()).filter(|&n| n >= 1).unwrap_or(ring_cap);
    let handoff: Arc<Vec<crossbeam::queue::ArrayQueue<usize>>> = Arc::new((0..maxp).map(|_| crossbeam::queue::ArrayQueue::new(ring_cap)).collect());
    // Which ports' links are down (the link-state poll below sets them).
    let link_down: Arc<Vec<AtomicBool>> = Arc::new((0..dataplane::counters::MAX_PORTS).map(|_| AtomicBool::new(false)).collect());
    // Responses seen by a worker that does not own the congestion-aware
    // port they belong to go to the owner (source QP learning); ports
    // without a congestion stage get an empty ring.
    let to_owner_cap = |p: usize| if cong_cfg[p].is_some() && nworkers > 1 { 4096 } else { 1 };
    let reverse: Arc<Vec<crossbeam::queue::ArrayQueue<dataplane::congestion::RoceInfo>>> = Arc::new((0..maxp).map(|p| crossbeam::queue::ArrayQueue::new(to_owner_cap(p))).collect());
    // RoCEv2 data those workers dropped on the way to such a port (its
    // hand-off ring full), for the owner's flow table (arrival rates).
    let dropped: Arc<Vec<crossbeam::queue::ArrayQueue<(dataplane::congestion::RoceKey, u32)>>> = Arc::new((0..maxp).map(|p| crossbeam::queue::ArrayQueue::new(to_owner_cap(p))).collect());
    // End.MT reverse path: worker 0 owns every group's state (one writer);
    // the others steer the groups' packets to it through this ring.
    let mc_ring = Arc::new(crossbeam::queue::ArrayQueue::new((mbufs / 8).clamp(64, 4096)));
    let groups0: Arc<Vec<dataplane::multicast::GroupConfig>> = Arc::new(cfg.multicast.iter().map(|g| g.cfg.clone()).collect());
    for g in &cfg.multicast {
        eprintln!(
            "multicast group {}: proxy {} designated QPN {:#x}, source {} QPN {:#x}, {} receiver(s), {} child node(s), {}, CNP window {}{}",
            g.name,
            g.cfg.proxy,
            g.cfg.designated_qpn,
            g.cfg.id.source,
            g.cfg.id.source_qpn,
            g.cfg.receivers.len(),
            g.cfg.children.len(),
            g.cfg.node_address.map_or_else(|| "responses up to the source".to_string(), |a| format!("responses up from {a} to the proxy (next aggregation node)")),
            match g.cfg.cnp_window_max_ns {
                None => format!("{} us", g.cfg.cnp_window_ns / 1000),
                Some(m) => format!("{}..{} us after the round trip below", g.cfg.cnp_window_ns / 1000, m / 1000),
            },
            g.end_mt_sid.map(|s| format!(", provisioned on End.MT SID {s}")).unwrap_or_default()
        );
    }
    let clock0 = dataplane::worker::TscClock::new(hz);
    let mut workers = Vec::new();
    for (w, queues) in assign.into_iter().enumerate() {
        let counters = Arc::new(WorkerCounters::with_rx_queues(queues.len()));
        let (up_tx, up_rx) = bounded::<Update>(64);
        let mut pipeline = Pipeline::new(topo.clone(), fib0.clone(), neigh0.clone(), counters.clone(), pcfg);
        pipeline.set_used(used.clone());
        pipeline.set_solicit_log(solicit_log.clone());
        // Local SIDs are in place before the first packet.
        if let Some(t) = &sids0 {
            pipeline.set_sids(t.clone());
        }
        // So are the multicast groups.
        if let Err((i, e)) = pipeline.set_groups(&groups0, clock0.now()) {
            return Err(format!("multicast.group[{i}]: {e}"));
        }
        let spec = WorkerSpec {
            id: w,
            rx_queues: queues.clone(),
            tx_queue: w as u16,
            burst: cfg.dataplane.burst_size,
            // NUMA-local to the worker's first RX port.
            pool: queues.first().and_then(|(pid, _)| ports.iter().position(|p| p.id == *pid)).map(|i| pool_on(port_socket[i])).unwrap_or_else(|| pools[0].1.clone()),
            hdr_pool: queues.first().and_then(|(pid, _)| ports.iter().position(|p| p.id == *pid)).and_then(|i| hdr_on(port_socket[i])).or_else(|| hdr_pools.first().map(|(_, p)| p.clone())),
            tsc_hz: hz,
            egress: egress_cfg.clone(),
            owner: owner.clone(),
            handoff: handoff.clone(),
            reverse: reverse.clone(),
            dropped: dropped.clone(),
            congestion: cong_cfg.clone(),
            pfc_rx: pfc_rx.clone(),
            link_down: link_down.clone(),
            wire: cfg.params,
            zero_copy_replicas,
            publish_top_flow: cfg.fann.is_some(),
            microburst: cfg.fann.as_ref().filter(|f| f.detector.microburst_bytes > 0).map(|f| dataplane::egress::MicroburstConfig { bytes: f.detector.microburst_bytes, window_ns: f.detector.microburst_window_ns }),
            mc_owner: 0,
            mc_ring: mc_ring.clone(),
            hold: dataplane::unres::HoldConfig {
                per_neighbour: cfg.dataplane.neighbour_queue_packets,
                total: cfg.dataplane.neighbour_queue_total(cfg.mempool.mbufs_per_socket),
                timeout_ns: cfg.dataplane.neighbour_queue_ms * 1_000_000,
            },
        };
        let links = WorkerLinks { updates: up_rx, events: ev_tx.clone(), garbage: garbage_tx.clone(), stop: workers_stop.clone() };
        let mut worker = Worker::new(spec, links, pipeline);
        let core = cfg.dataplane.worker_cores.get(w).copied();
        let core_id = core.and_then(|c| core_ids.iter().find(|id| id.id == c).copied());
        if core.is_some() && core_id.is_none() {
            return Err(format!("dataplane.worker_cores[{w}] = {}: not a CPU this process may run on", core.unwrap_or(0)));
        }
        let desc = queues.iter().map(|(p, q)| format!("{p}/{q}")).collect::<Vec<_>>().join(" ");
        let started_workers = &mut workers;
        eprintln!("worker {w}: core {} rx queues (port/queue) [{desc}] tx queue {w}", core.map(|c| c.to_string()).unwrap_or("any".into()));
        let join = std::thread::Builder::new()
            .name(format!("dcir-w{w}"))
            .spawn(move || {
                if let Some(c) = core_id {
                    core_affinity::set_for_current(c);
                }
                if let Err(e) = dpdk::register_thread() {
                    eprintln!("worker {w}: {e}; mempool cache disabled");
                }
                // Fault injection for the test of what follows a worker's
                // death (DCIROUTER_FAULT_INJECT=worker-panic:W).
                if fault_inject("worker-panic:").as_deref() == Some(&w.to_string()) {
                    panic!("fault injection: worker {w} panics");
                }
                worker.run();
                drop(worker);
                dpdk::unregister_thread();
            })
            .map_err(|e| {
                stop_workers(&workers_stop, started_workers);
                format!("spawn worker {w}: {e}")
            })?;
        workers.push(WorkerHandle { counters, queues, core, updates: up_tx, join: Some(join) });
    }
    drop(ev_tx);

    // Bound only now (a test or script that sees the socket may rely on
    // the ports existing); a failure stops the running workers first.
    let mut ctl_server = match &opts.ctl_socket {
        Some(p) => match CtlServer::bind(p) {
            Ok(s) => Some(s),
            Err(e) => {
                stop_workers(&workers_stop, &mut workers);
                return Err(e);
            }
        },
        None => None,
    };
    let mut metrics = match cfg.metrics_listen {
        Some(a) => match crate::metrics::MetricsServer::bind(a) {
            Ok(m) => {
                eprintln!("metrics: Prometheus text format at http://{}/metrics", m.local_addr().unwrap_or(a));
                Some(m)
            }
            Err(e) => {
                stop_workers(&workers_stop, &mut workers);
                // The socket exists only while the router listens on it.
                if let Some(p) = &opts.ctl_socket {
                    drop(ctl_server.take());
                    ctl::remove_socket(p);
                }
                return Err(e);
            }
        },
        None => None,
    };
    let sids = sids0.as_deref().cloned();
    let mut control = Control { topo, fib: cfg.fib.clone(), neighbours, sids, cfg, workers, own: Arc::new(WorkerCounters::default()), pe: pe.take(), nud: None, flows_seq: 0, garbage: garbage_rx.clone(), expired_pending: false, expired_pushed: Instant::now(), static_mroutes: Vec::new(), mld: None, mld_next: 0, mld_started: Instant::now(), mld_out: std::collections::VecDeque::new(), pfc_rx: pfc_rx.iter().enumerate().filter_map(|(id, p)| p.clone().map(|p| (id as u16, p))).collect(), clock: clock0, rtt_probes: Vec::new(), rtt_acks: Vec::new() };
    if let Some(ident) = control.cfg.echo_probe_id {
        let now = control.clock.now();
        for (pi, p) in control.cfg.ports.iter().enumerate() {
            if let Some(r) = p.congestion.as_ref().and_then(|c| c.rtt_probe) {
                eprintln!("port {}: RTT_est from Echo Requests to {} every {} ms (the smallest round trip of the last {})", p.name, r.target, r.interval_ns / 1_000_000, r.window);
                control.rtt_probes.push(RttProbeSlot::new(pi, dataplane::rttprobe::RttProbe::new(r, ports[pi].id, ident, now)));
            }
        }
    }
    for (pi, p) in control.cfg.ports.iter().enumerate() {
        if let Some(a) = p.congestion.as_ref().and_then(|c| c.params.ack_rtt) {
            eprintln!("port {}: RTT_est from the receivers' ACKs (the smallest round trip of the last {} ms)", p.name, a.window_ns / 1_000_000);
            control.rtt_acks.push(AckRttSlot::new(pi, ports[pi].id));
        }
    }
    control.static_mroutes = control.cfg.mroutes.clone();
    let dp = &control.cfg.dataplane;
    if dp.neighbour_reachable_ms != 0 {
        let c = dataplane::nud::NudConfig { reachable_ns: dp.neighbour_reachable_ms * 1_000_000, retrans_ns: dp.neighbour_solicit_interval_ms * 1_000_000, probes: dp.neighbour_probes, stale_ns: dp.neighbour_stale_ms * 1_000_000, retry_max_ns: dp.neighbour_retry_max_ms * 1_000_000 };
        control.nud = Some(dataplane::nud::Nud::new(c, dataplane::fann::unix_ns(), used));
    }
    let port_names: Vec<(u16, String)> = ports.iter().zip(control.cfg.ports.iter()).map(|(p, c)| (p.id, c.name.clone())).collect();

    // FANN: the agent observes the ports from the control thread, on a
    // clock of ns since `started`; its messages carry Unix time (s.5.1.2),
    // `epoch_ns` apart.
    let started = Instant::now();
    // MLD from the interfaces' link-local addresses (their MACs are known
    // by now); its clock is ns since `started`.
    if let Some(plan) = control.cfg.mld.clone() {
        let ifs: Vec<(u16, std::net::Ipv6Addr)> = plan.ifaces.iter().filter_map(|&i| control.topo.iface(i).map(|x| (i, x.link_local))).collect();
        control.mld = Some(dataplane::mld::Mld::new(plan.cfg, &ifs, 0).with_v1(&plan.v1_ifaces));
        control.mld_started = started;
    }
    let epoch_ns = dataplane::fann::unix_ns();
    let mut fann = control.cfg.fann.clone().map(|mut plan| {
        plan.detector.epoch_ns = epoch_ns;
        // Utilisation is relative to R_port on shaped ports, else to the link.
        let ps: Vec<(u16, u64)> = ports.iter().zip(control.cfg.ports.iter()).map(|(p, c)| (p.id, c.egress.map(|e| e.rate_bps).filter(|r| *r > 0).unwrap_or_else(|| p.link_bps()))).collect();
        eprintln!("fann: notifications from {} to {} ingress PE(s) over {}", plan.node, plan.ingress_pes.len(), if plan.udp { "UDP" } else { "ICMPv6" });
        let mut a = crate::fann_agent::FannAgent::new(plan.clone(), control.cfg.params, &ps);
        for (p, c) in ports.iter().zip(control.cfg.ports.iter()) {
            if let Some((_, id)) = plan.path_ids.iter().find(|(n, _)| *n == c.name) {
                a.set_path_id(p.id, Some(*id));
            }
            if let Some(r) = c.congestion.as_ref().and_then(|c| c.rtt_probe) {
                a.set_latency_degraded(p.id, r.degraded_ns);
            }
            if let Some(d) = c.congestion.as_ref().and_then(|c| c.rtt_acks_degraded_ns) {
                a.set_latency_degraded(p.id, d);
            }
        }
        a
    });
    let neigh_limit = control.cfg.dataplane.neighbour_learn_limit;
    let status_every = Duration::from_millis(control.cfg.dataplane.status_interval_ms);
    let mut last_status = Instant::now();
    let mut last_link = Instant::now();
    let mut pfc_watchdog_seen = vec![0u64; control.pfc_rx.len()];
    let mut last_fann_errors = Instant::now();
    // Originated packets waiting for room in worker 0's update channel.
    let mut injects: std::collections::VecDeque<Vec<u8>> = std::collections::VecDeque::new();
    // The first step at once: ECMP gateways are asked from the start.
    let mut last_nud = Instant::now() - Duration::from_millis(50);
    let mut last_snap = control.snapshot();
    let mut last_rx_total = 0u64;
    let mut last_rx_change = Instant::now();
    eprintln!("dcirouter running: {} worker(s), {} port(s); Ctrl-C to stop", control.workers.len(), ports.len());

    // A worker that stopped while the router runs (a panic: its message is
    // on stderr) leaves its queues unpolled; the router stops rather than
    // run on without them, and exits with an error.
    let mut worker_died: Option<usize> = None;
    while !stop.load(Ordering::Relaxed) {
        if let Some(w) = control.workers.iter().position(|h| h.join.as_ref().is_some_and(|j| j.is_finished())) {
            eprintln!("dcirouter: worker {w} stopped unexpectedly (its panic message is above); stopping the router");
            worker_died = Some(w);
            break;
        }
        // Learned neighbours -> new snapshot for every worker.
        let mut changed = false;
        while let Ok((_w, ev)) = ev_rx.try_recv() {
            match ev {
                Event::NeighbourLearned { iface, ip, mac, answer } => {
                    let learned = control.neighbours.learn_bounded(iface, ip, mac, NeighSource::Learned, neigh_limit);
                    match learned {
                        Learned::Changed => changed = true,
                        Learned::Unchanged => {}
                        Learned::Full => control.own.local(dataplane::counters::Local::NeighbourLearnRefused),
                    }
                    if answer {
                        control.confirm_neighbour(iface, ip, started);
                    } else if let (Some(nud), Learned::Changed) = (control.nud.as_mut(), learned) {
                        // A learned entry, new or with a new MAC, and not
                        // an answer to us: STALE, checked once used. (The
                        // MAC it has again changes nothing, RFC 4861
                        // s.7.2.3; learning never replaces a static entry.)
                        nud.stale(iface, ip, started.elapsed().as_nanos() as u64);
                    }
                }
                Event::NeighbourConfirmed { iface, ip } => control.confirm_neighbour(iface, ip, started),
                Event::NeighbourSuspect { iface, ip } => control.suspect_neighbour(iface, ip, started),
                Event::Mld { iface, src, msg } => control.on_mld(iface, src, &msg, started.elapsed().as_nanos() as u64),
                Event::EchoReply { from, seq, data, at_ns } => control.on_echo_reply(from, seq, &data, at_ns),
                Event::PeNotification(note) => {
                    let Some(pe) = control.pe.as_mut() else {
                        // The workers only hand these over with a PE configured.
                        control.own.dropped(dataplane::counters::Drop::LocalUnsupported);
                        continue;
                    };
                    let out = pe.on_note(&note, &control.own);
                    if let Some(t) = out.table {
                        control.push_sids(t);
                    }
                    for ip in out.copy.into_iter().chain(out.senders) {
                        inject_later(&mut injects, ip, &control.own);
                    }
                }
            }
        }
        if changed {
            control.push_neighbours();
        }
        // Recoveries for senders the rate limit held back; policies whose
        // congestion hold-down ran out go back to their primaries.
        if let Some(pe) = control.pe.as_mut() {
            for ip in pe.poll_senders(&control.own) {
                inject_later(&mut injects, ip, &control.own);
            }
            if let Some(t) = pe.poll_failover(&control.own) {
                control.push_sids(t);
            }
        }
        while garbage_rx.try_recv().is_ok() {}
        for ip in control.poll_rtt_probes() {
            inject_later(&mut injects, ip, &control.own);
        }
        control.follow_rtt_acks();
        if let Some(agent) = fann.as_mut() {
            let snap = control.snapshot();
            let now_ns = started.elapsed().as_nanos() as u64;
            let held = agent.rate_limited;
            // Utilisation counts what the wire carries (the link's and the
            // shaper's rates do): each frame with its FCS, preamble and
            // inter-frame gap (24 octets).
            let wire = |p: u16| {
                let i = usize::from(p) % dataplane::counters::MAX_PORTS;
                snap.tx_bytes[i].saturating_add(24 * snap.tx_pkts[i])
            };
            let pkts = agent.poll_with_flows(now_ns, wire, |p| control.queue_depth(p), |p| control.microbursts(p), |p| ports.iter().find(|x| x.id == p).map(|x| x.link_up()).unwrap_or(false), |p| control.top_flow(p));
            control.own.local_n(dataplane::counters::Local::FannRateLimited, agent.rate_limited - held);
            for ip in pkts {
                control.own.local(dataplane::counters::Local::FannSent);
                inject_later(&mut injects, ip, &control.own);
            }
            // The links' round trips as the RTT probes measure them.
            let held = agent.rate_limited;
            let pkts = agent.poll_latency(now_ns, |p| control.rtt_measured(p));
            control.own.local_n(dataplane::counters::Local::FannRateLimited, agent.rate_limited - held);
            for ip in pkts {
                control.own.local(dataplane::counters::Local::FannSent);
                inject_later(&mut injects, ip, &control.own);
            }
            // The NICs' error and loss counters every 10 ms (a stats read
            // may cost the driver microseconds): Signal degradation and
            // Performance degradation events.
            if last_fann_errors.elapsed() >= Duration::from_millis(10) {
                last_fann_errors = Instant::now();
                // An unshaped port's utilisation follows the speed its link
                // runs at (not known before it is up; another after a
                // renegotiation).
                for (p, c) in ports.iter().zip(control.cfg.ports.iter()) {
                    if c.egress.map(|e| e.rate_bps).filter(|r| *r > 0).is_none() {
                        agent.set_link_bps(p.id, p.link_bps(), now_ns);
                    }
                }
                let held = agent.rate_limited;
                let pkts = agent.poll_errors(now_ns, |p| {
                    let s = ports.iter().find(|x| x.id == p)?.try_stats()?;
                    Some((s.ierrors.saturating_add(s.oerrors), s.imissed.saturating_add(s.rx_nombuf)))
                });
                control.own.local_n(dataplane::counters::Local::FannRateLimited, agent.rate_limited - held);
                for ip in pkts {
                    control.own.local(dataplane::counters::Local::FannSent);
                    inject_later(&mut injects, ip, &control.own);
                }
            }
        }
        // Packets this thread originates go to worker 0 as its update
        // channel has room; the rest wait here, in order (a burst of
        // notifications is delayed, not lost).
        if let Some(w) = control.worker_updates().next() {
            while let Some(ip) = injects.pop_front() {
                match w.try_send(Update::Inject(ip)) {
                    Ok(()) => {}
                    Err(crossbeam::channel::TrySendError::Full(Update::Inject(ip))) => {
                        injects.push_front(ip);
                        break;
                    }
                    Err(_) => {
                        control.own.dropped(dataplane::counters::Drop::EventQueueFull);
                    }
                }
            }
        }
        if let Some(s) = ctl_server.as_mut() {
            s.poll(&mut control, &ports, &port_names);
        }
        if let Some(m) = metrics.as_mut() {
            m.poll(&mut || crate::metrics::render(&control, &ports, &port_names));
        }
        // Link state every 10 ms: ECMP routes leave out the next hops
        // behind a port whose link is down.
        if last_link.elapsed() >= Duration::from_millis(10) {
            last_link = Instant::now();
            let down_ports: Vec<u16> = ports.iter().filter(|p| !p.link_up()).map(|p| p.id).collect();
            // The workers drop what is queued for a port whose link is
            // down, and what comes for it, until it is back.
            for p in &ports {
                if let Some(d) = link_down.get(usize::from(p.id)) {
                    d.store(down_ports.contains(&p.id), Ordering::Relaxed);
                }
            }
            let down: Vec<u16> = control.topo.interfaces.iter().enumerate().filter(|(_, i)| down_ports.contains(&i.port)).map(|(k, _)| k as u16).collect();
            if control.fib.set_down(down) {
                let names: Vec<&str> = port_names.iter().filter(|(id, _)| down_ports.contains(id)).map(|(_, n)| n.as_str()).collect();
                eprintln!("link state: down {names:?}; ECMP routes use the other next hops");
                control.own.local(dataplane::counters::Local::LinkChange);
                control.push_fib();
            }
            // Received pause quanta count in the link's speed (unless
            // configured); a PFC watchdog that fired is said.
            for (k, (id, pp)) in control.pfc_rx.iter().enumerate() {
                if let Some(p) = ports.iter().find(|p| p.id == *id) {
                    pp.set_link_speed(p.link_bps());
                }
                let fired = pp.watchdog_fired();
                if fired > pfc_watchdog_seen[k] {
                    pfc_watchdog_seen[k] = fired;
                    let name = port_names.iter().find(|(i, _)| i == id).map_or("?", |(_, n)| n.as_str());
                    let c = pp.config();
                    eprintln!("port {name}: PFC watchdog: a priority stayed paused for {} ms without a break (a PFC storm or deadlock downstream); its held data goes on and its pauses are ignored for {} ms ({fired} time(s) so far)", c.watchdog_ns / 1_000_000, c.restore_ns / 1_000_000);
                }
            }
            // END.C's PAUSE quanta follow the speed the link to the DC
            // gateway came up at (unless configured).
            if endc_follows_link {
                let speed = |iface: u16| {
                    let port = control.topo.interfaces.get(usize::from(iface)).map(|i| i.port);
                    ports.iter().find(|p| Some(p.id) == port).map(|p| p.link_bps()).unwrap_or(0)
                };
                let changed: Vec<(u16, u64)> = control.sids.as_ref().map(|t| t.endc.iter().filter(|(i, _)| endc_following.contains(i)).map(|(i, c)| (*i, c.link_bps, speed(*i))).filter(|(_, was, now)| *now > 0 && now != was).map(|(i, _, now)| (i, now)).collect()).unwrap_or_default();
                if !changed.is_empty() {
                    if let Some(mut t) = control.sids.clone() {
                        for (iface, now_bps) in changed {
                            if let Some((_, c)) = t.endc.iter_mut().find(|(i, _)| *i == iface) {
                                c.link_bps = now_bps;
                            }
                            let name = control.topo.interfaces.get(usize::from(iface)).map_or("?", |i| i.name.as_str());
                            eprintln!("END.C: the link to the DC gateway on '{name}' runs at {} Mb/s; PAUSE quanta follow", now_bps / 1_000_000);
                        }
                        control.push_sids(Arc::new(t));
                    }
                }
            }
        }
        control.run_mld(started.elapsed().as_nanos() as u64);
        // Neighbour unreachability detection every 50 ms.
        if last_nud.elapsed() >= Duration::from_millis(50) {
            last_nud = Instant::now();
            control.run_nud(started.elapsed().as_nanos() as u64);
        }
        let now = Instant::now();
        if !status_every.is_zero() && now.duration_since(last_status) >= status_every && !opts.quiet {
            let snap = control.snapshot();
            eprintln!("{}", display::status_line(&last_snap, &snap, now.duration_since(last_status)));
            last_snap = snap;
            last_status = now;
        }
        if let Some(idle) = opts.exit_when_idle {
            let rx = control.snapshot().total_rx();
            if rx != last_rx_total {
                last_rx_total = rx;
                last_rx_change = now;
            } else if now.duration_since(last_rx_change) >= idle
                && control.nud.as_ref().is_none_or(|n| n.unresolved().all(|(_, st)| st == dataplane::nud::NudState::Failed))
                && control.pfc_rx.iter().all(|(_, p)| p.paused(control.clock.now()) == 0 && p.held_now.load(Ordering::Relaxed) == 0)
            {
                // Idle, every ECMP gateway resolved or found silent, and no
                // data held by a received pause (a replay's outcome does
                // not depend on when it stops).
                break;
            }
        }
        if let Some(d) = opts.duration {
            if now.duration_since(started) >= d {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }

    // Shutdown. The packets this thread originated and counted (RTT
    // probes, FANN notifications, the PE's copies) still waiting for room
    // go to worker 0 as far as its channel takes them, the rest counted as
    // discarded; then the workers stop (they apply what they were handed
    // and drain), the ports close, and the counters are read.
    let w = control.worker_updates().next().filter(|_| worker_died != Some(0));
    while let Some(ip) = injects.pop_front() {
        if w.is_none_or(|w| w.try_send(Update::Inject(ip)).is_err()) {
            control.own.dropped(dataplane::counters::Drop::ShutdownDiscard);
        }
    }
    workers_stop.store(true, Ordering::Relaxed);
    for w in control.workers.iter_mut() {
        if let Some(j) = w.join.take() {
            let _ = j.join();
        }
    }
    while garbage_rx.try_recv().is_ok() {}
    // Packets still in handoff rings (their owner stopped first) are freed.
    for ring in handoff.iter() {
        while let Some(raw) = ring.pop() {
            // SAFETY: a worker gave up ownership when it pushed the mbuf.
            drop(unsafe { dataplane::dpdk::Mbuf::from_raw(dataplane::worker::handoff_untag(raw).0) });
            control.own.dropped(dataplane::counters::Drop::ShutdownDiscard);
        }
    }
    while let Some(raw) = mc_ring.pop() {
        // SAFETY: a worker gave up ownership when it pushed the mbuf.
        drop(unsafe { dataplane::dpdk::Mbuf::from_raw(raw as *mut dpdk_sys::rte_mbuf) });
        control.own.dropped(dataplane::counters::Drop::ShutdownDiscard);
    }
    let elapsed = started.elapsed();
    let counters = control.snapshot();
    let port_stats: Vec<_> = ports.iter().map(|p| (p.id, p.stats())).collect();
    for p in ports.iter_mut() {
        p.close();
    }
    drop(ctl_server);
    let in_use: u32 = pools.iter().chain(hdr_pools.iter()).map(|(_, p)| p.in_use()).sum();
    let size: u32 = pools.iter().chain(hdr_pools.iter()).map(|(_, p)| p.size()).sum();
    if !opts.quiet {
        println!("{}", display::counter_table(&counters, &port_names, &port_stats));
        print!("{}", display::congestion(&control.congestion_views(), &port_names, &control.rtt_probes, &control.rtt_acks));
        print!("{}", display::pfc(&control.pfc_rx, &port_names, control.clock.now()));
        for (_, pool) in pools.iter().chain(hdr_pools.iter()) {
            println!("mempool {}: {} of {} mbufs in use after shutdown", pool.name(), pool.in_use(), pool.size());
        }
        print!("{}", control.workers_table(&port_names));
        let cpu_ns: u64 = control.workers.iter().map(|w| w.counters.cpu_ns.get()).sum();
        // Poll loops of all workers, and those that received something:
        // rx / busy polls is the mean burst, polls / worker-cpu the loop rate.
        let polls: u64 = control.workers.iter().map(|w| w.counters.bursts.get()).sum();
        let busy: u64 = control.workers.iter().map(|w| w.counters.busy_bursts.get()).sum();
        println!(
            "ran {:.3} s: rx {} tx {} drops {} worker-cpu {:.3} s polls {} busy {}",
            elapsed.as_secs_f64(),
            counters.total_rx(),
            counters.total_tx(),
            counters.total_drops(),
            cpu_ns as f64 / 1e9,
            polls,
            busy
        );
    }
    if let Some(p) = &opts.ctl_socket {
        ctl::remove_socket(p);
    }
    let report = RunReport {
        counters,
        port_names,
        mempool_in_use_after: in_use,
        mempool_size: size,
        elapsed,
        fib: control.fib.clone(),
        neighbours: (*control.neighbours).clone(),
        congestion: control.congestion_views(),
        groups: control.group_views(),
        pfc: control.pfc_rx.clone(),
    };
    drop(control);
    drop(ports);
    drop(pools);
    drop(hdr_pools);
    drop(eal);
    if let Some(w) = worker_died {
        return Err(format!("worker {w} stopped unexpectedly; the counters above are what the router did until then"));
    }
    Ok(report)
}

/// The local SID table of the `[srv6]` section.
/// Packets the control thread originates (FANN notifications, the ingress
/// PE's copies) wait here for room in worker 0's update channel; at most
/// this many, beyond which they are dropped as `event-queue-full`.
const INJECT_BACKLOG: usize = 4096;

fn inject_later(q: &mut std::collections::VecDeque<Vec<u8>>, ip: Vec<u8>, own: &dataplane::counters::WorkerCounters) {
    if q.len() >= INJECT_BACKLOG {
        own.dropped(dataplane::counters::Drop::EventQueueFull);
    } else {
        q.push_back(ip);
    }
}

/// The link speed END.C SID `s` counts its PAUSE quanta at on interface
/// `iface` when one is configured: the SID's `pfc_link_mbps`, else the
/// port's `[port.pfc] link_mbps` (the speed the router reads the quanta
/// of the PFC frames it receives on that link at: one link, one speed).
fn endc_configured_bps(cfg: &RouterConfig, s: &crate::config::SidPlan, iface: u16) -> Option<u64> {
    s.pfc_link_bps.or_else(|| endc_port(cfg, iface).and_then(|p| p.pfc.as_ref()).map(|p| p.link_bps).filter(|b| *b > 0))
}

/// The port of interface `iface`.
fn endc_port(cfg: &RouterConfig, iface: u16) -> Option<&crate::config::PortPlan> {
    let port = cfg.interfaces.get(usize::from(iface)).map(|i| i.port);
    cfg.ports.iter().zip(cfg.interfaces.iter().filter(|i| i.vlan.is_none())).find(|(_, i)| Some(i.port) == port).map(|(p, _)| p)
}

pub fn sid_table(cfg: &RouterConfig) -> Option<dataplane::srv6::SidTable> {
    use dataplane::srv6::{Behaviour, SidTable};
    let s6 = cfg.srv6.as_ref()?;
    let mut t = SidTable::new(&cfg.params);
    t.set_node_address(Some(s6.source));
    // No policy yet: nothing to re-sign, nothing can fail.
    t.set_hmac_keys(s6.hmac_keys.clone()).expect("a table without policies takes any keys");
    t.notification_sources = s6.notification_sources.clone();
    for s in &s6.sids {
        let b = match s.behaviour.as_str() {
            "end" => Behaviour::End,
            "end.x" => Behaviour::EndX { iface: s.iface.unwrap_or(0), nexthop: s.via.unwrap_or(std::net::IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED)) },
            "end.dt4" => Behaviour::EndDT4,
            "end.dt6" => Behaviour::EndDT6,
            "end.mt" => Behaviour::EndMT {
                // Control-plane provisioning: the SID's own receivers, then
                // the receivers of the groups that name this SID.
                // A receiver QP in both lists gets one copy.
                receivers_extra: s.receivers.iter().copied().chain(cfg.multicast.iter().filter(|g| g.end_mt_sid == Some(s.sid)).flat_map(|g| g.cfg.receivers.iter().map(|r| (r.addr, r.qpn)))).fold(Vec::new(), |mut v, r| {
                    if !v.contains(&r) {
                        v.push(r);
                    }
                    v
                }),
                hmac_required: s.hmac_required,
                downstream: s.downstream.clone(),
            },
            "end.c" => {
                for &iface in &s.endc_ifaces {
                    // A pause quantum is 512 bit times at the link's speed
                    // (802.3 Annex 31D), the physical link's, not a shaped
                    // rate: configured, else as the NIC reports it, else
                    // 100 Gb/s.
                    let bps = endc_configured_bps(cfg, s, iface).or_else(|| endc_port(cfg, iface).map(|p| p.link_bps).filter(|b| *b > 0)).unwrap_or(100_000_000_000);
                    let mut c = dataplane::endc::EndCConfig {
                        link_bps: bps,
                        default_priority: s.pfc_priority,
                        default_pause_us: s.pause_us,
                        max_pause_ns: s.max_pause_ms * 1_000_000,
                        rocev2_priority: s.rocev2_priority,
                        ..Default::default()
                    };
                    for &(d, p) in &s.dscp_priority {
                        c.dscp_to_priority[usize::from(d)] = p;
                        c.dscp_mapped |= 1u64 << d;
                    }
                    t.endc.push((iface, c));
                }
                Behaviour::EndC
            }
            "end.e" => Behaviour::EndE,
            _ => continue,
        };
        t.insert(s.sid, b);
    }
    for (prefix, pol) in &s6.policies {
        t.add_policy(*prefix, pol.clone());
    }
    Some(t)
}

/// Keep the receiver type nameable for other modules.
pub type EventRx = Receiver<(usize, Event)>;

/// The value of a fault injection for tests: `DCIROUTER_FAULT_INJECT` is a
/// comma-separated list of `name:value` items (`worker-panic:0`,
/// `handoff-ring:1`); the value after `prefix` (which ends with ':').
fn fault_inject(prefix: &str) -> Option<String> {
    let v = std::env::var("DCIROUTER_FAULT_INJECT").ok()?;
    v.split(',').find_map(|i| i.trim().strip_prefix(prefix).map(str::to_string))
}

#[cfg(test)]
mod tests {
    use super::RttProbeSlot;
    use dataplane::counters::WorkerCounters;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::time::{Duration, Instant};

    /// `loops_after` returns only once a worker has run the top of a loop
    /// after the call, so what was sent before it has been applied; a
    /// worker that makes no progress is named once the limit has passed.
    #[test]
    fn a_change_is_applied_before_the_wait_returns() {
        let counters = WorkerCounters::default();
        let stalled = WorkerCounters::default();
        let applied = AtomicU64::new(0);
        let stop = AtomicBool::new(false);
        let (tx, rx) = crossbeam::channel::bounded::<u64>(4);
        // The worker stops however the test ends (a failed assertion too).
        struct Stop<'a>(&'a AtomicBool);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Relaxed);
            }
        }
        std::thread::scope(|s| {
            let _stop = Stop(&stop);
            s.spawn(|| {
                // The worker's loop: updates at the top, the count at the end.
                while !stop.load(Ordering::Relaxed) {
                    while let Ok(v) = rx.try_recv() {
                        applied.store(v, Ordering::Relaxed);
                    }
                    std::thread::yield_now();
                    counters.bursts.add(1);
                }
            });
            for v in 1..=500u64 {
                tx.send(v).unwrap();
                let late = super::loops_after(&[(0, &counters)], Duration::from_secs(10));
                assert!(late.is_empty());
                assert_eq!(applied.load(Ordering::Relaxed), v, "change {v} not applied when the wait returned");
            }
            let t = Instant::now();
            assert_eq!(super::loops_after(&[(0, &counters), (1, &stalled)], Duration::from_millis(30)), vec![1]);
            assert!(t.elapsed() >= Duration::from_millis(30) && t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
        });
    }
    use dataplane::rttprobe::{ProbeConfig, RttProbe};

    /// RTT_est follows a probe's round trip only as far as the port's
    /// configuration allows: K_max must stay below the Pause threshold
    /// (90 % of the queue), as for a value set with `ctl`.
    #[test]
    fn a_measured_rtt_the_queue_cannot_hold_is_refused() {
        let cfg = ProbeConfig { target: "2001:db8::2".parse().unwrap(), source: "2001:db8::1".parse().unwrap(), interval_ns: 1_000_000, timeout_ns: 100_000_000, window: 1, degraded_ns: 0 };
        let mut slot = RttProbeSlot::new(1, RttProbe::new(cfg, 1, 7, 0));
        let queue = 64u64 << 20;
        let params = dataplane::congestion::PortParams {
            rate_bps: 100_000_000_000,
            rtt_est_ns: 1_000_000,
            policy: dataplane::congestion::Policy { buffer_bytes: queue, ..Default::default() },
            ..Default::default()
        };
        params.validate().unwrap();
        let mut answer = |at_ms: u64, rtt_ms: u64| {
            let now = at_ms * 1_000_000;
            let req = slot.probe.poll(now, true).unwrap();
            let (seq, data) = (u16::from_be_bytes([req[46], req[47]]), req[48..].to_vec());
            slot.probe.on_reply(cfg.target, seq, &data, now + rtt_ms * 1_000_000);
            slot.follow(&params, "wan", queue)
        };
        assert!(answer(0, 1).is_none(), "1 ms: as configured");
        // 30 ms at 100 Gb/s: K_max 375 MB in a 64 MiB queue.
        let e = answer(10, 30).unwrap().unwrap_err();
        assert!(e.starts_with("measured RTT 30000 us not taken: queue_bytes = 67108864 (port wan)") && e.ends_with("(RTT_est stays 1000 us)"), "{e}");
        // 4 ms: K_max 50 MB fits.
        let p = answer(20, 4).unwrap().unwrap();
        assert_eq!((p.rtt_est_ns, p.k_max(), p.k_min()), (4_000_000, 50_000_000, 25_000_000));
        assert_eq!(slot.probe.stats.changes, 1);
    }
}
