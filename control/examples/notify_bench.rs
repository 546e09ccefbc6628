//! Event-to-notification latency (issue 6), no DPDK.
//!
//! `cargo run --release -p control --example notify_bench`
//!
//! Histograms (hdrhistogram, recorded in ns, shown in us) of the wall-clock
//! time from an event to the notification frame leaving the port, measured
//! in a harness that mirrors the router's two threads and calls the code the
//! router runs:
//!
//! * **worker thread** (mirror of `dataplane::worker::Worker::run`, same order
//!   per iteration): apply updates (`Update::Inject` -> `Pipeline::emit_ip`,
//!   sent ahead of queued data) -> RX burst (`Pipeline::process`, output to the
//!   port: shaped port -> `EgressPort::admit` / `admit_priority`, unshaped port
//!   -> TX buffer) -> END.C timers (`poll_endc` + `build_pfc`) -> flush the
//!   TX buffers -> `service_egress` (`dequeue` under the shaper + `sent`, then
//!   publish the queue depth and TX bytes like the worker counters) ->
//!   `poll_congestion` (`EgressPort::poll` + `build_cnp_packet`). Packets
//!   "leave the port" when the flush / dequeue hands them over (where the
//!   worker calls `rte_eth_tx_burst`); that instant is the end of every
//!   measurement. Clock: `Instant` since start (the worker uses the TSC).
//! * **control thread** (mirror of the loop in `control::router::run`): FANN
//!   agent `FannAgent::poll` over every port (link status, TX bytes, queue
//!   depth read from what the worker published), each notification sent to
//!   the worker as an inject update, then `sleep(1 ms)` as the router does.
//!
//! Ports: 0 = DC side, unshaped (sources, the ingress PE); 1 = WAN side,
//! shaped at 2 Gbit/s, where RoCEv2 data (IPv6, 1 KiB payload, bursts of 32)
//! builds the queue.
//!
//! Scenarios:
//! * (a) queue crossing K_max -> Long-haul CNP: congestion-aware node on port
//!   1 (K_max 64 KB, K_min 16 KB, monitoring interval 100 us = the default,
//!   RTT_est 100 us, suppression off). From the `admit` that takes QD above
//!   K_max to the first Long-haul CNP (ICMPv6, toward the source, port 0)
//!   leaving. Worker thread only.
//! * (b) queue crossing -> FANN queue-buildup notification: FANN on, no
//!   congestion node; `queue_buildup_bytes` 200 KB. From the `admit` that
//!   takes QD above 200 KB to the FANN event (ICMPv6 to the ingress PE, port
//!   0) leaving. Crosses both threads. Microburst detection is configured too
//!   (100 KB within the default 100 us window) and its notifications counted.
//! * (c) link down -> FANN link-failure notification: the main thread flips
//!   the link state of port 1 (what `rte_eth_link_get_nowait` reports) at a
//!   random phase; from the flip to the link-failure event leaving port 0.
//! * (d) END.C notification arrival -> PFC PAUSE leaving: an SRv6-encapsulated
//!   Long-haul CNP (Pause) to the END.C SID arrives in the middle of an RX
//!   burst of data toward the DC port, which is shaped and holds a data
//!   backlog (PFC goes ahead of it); from the RX burst's return to the PFC
//!   frame leaving the DC port. Worker thread only.
//!
//! Between cycles the traffic stops until the queue drains (and the FANN
//! recovery has left), then waits a random 0..2 ms so events fall at random
//! phases of the control loop and the monitoring interval.
//!
//! Output: markdown on stdout and in `bench/notify-results.md` (or
//! `$NOTIFY_BENCH_OUT`). `NOTIFY_BENCH_MS` = duration per scenario (default 2000).

use control::fann_agent::{FannAgent, FannPlan};
use control::gen::{self, L2};
use crossbeam::channel::{unbounded, Receiver, Sender};
use dataplane::congestion::{CnpRequest, PortParams};
use dataplane::counters::WorkerCounters;
use dataplane::egress::EgressConfig;
use dataplane::endc::EndCConfig;
use dataplane::fann::DetectorConfig;
use dataplane::node::{CongestionSpec, EgressPort};
use dataplane::packet::{PacketBuffer, VecPacket};
use dataplane::pipeline::{Pipeline, PipelineConfig, Verdict};
use dataplane::srv6::{Behaviour, SidTable};
use dataplane::tables::{Fib, Interface, NeighSource, Neighbours, NextHop, Topology};
use dataplane::wire::fann::event;
use dataplane::wire::lhcnp::{emit_icmpv6_packet, Action, CnpInfo, Icmpv6LhCnpRepr, MetricType, Objects};
use dataplane::wire::params::Params;
use hdrhistogram::Histogram;
use std::fmt::Write as _;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use dataplane::hostinfo::{loadavg, utc_now};

const BURST: usize = 32;
const SHAPER_BPS: u64 = 2_000_000_000;
const K_MAX: u64 = 64_000;
const K_MIN: u64 = 16_000;
const BUILDUP: u64 = 200_000;
const MICROBURST: u64 = 100_000;
const PE: &str = "2001:db8:1::99";
const NODE: &str = "2001:db8:2::1";
const ENDC_SID: &str = "fc00:0:1::c";

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Scenario {
    Cnp,
    FannQueue,
    FannLink,
    EndC,
}

/// What left a port.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Left {
    LhCnp,
    Fann { recovery: bool, ev: u8 },
    Pfc { pause: bool },
    Data,
}

fn classify(f: &[u8], p: &Params) -> Left {
    if f.len() >= 16 && f[12..14] == [0x88, 0x08] {
        // MAC Control PFC: opcode, class enable vector, 8 x quanta.
        let q = f.get(18..34).map(|q| q.chunks(2).any(|c| c != [0, 0])).unwrap_or(false);
        return Left::Pfc { pause: q };
    }
    if f.len() >= 62 && f[12..14] == [0x86, 0xdd] && f[20] == 58 {
        if f[54] == p.icmpv6_lhcnp_type {
            return Left::LhCnp;
        }
        if f[54] == p.icmpv6_fann_type {
            // A recovery carries event type RECOVERY and the cleared
            // event's type as its sub-type.
            let recovery = f[55] == 1;
            return Left::Fann { recovery, ev: if recovery { f[62] } else { f[61] } };
        }
    }
    Left::Data
}

fn v6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

fn pipeline(counters: Arc<WorkerCounters>, endc: bool) -> Pipeline {
    let mut a = Interface::new("dc", 0, None, [2, 0xdc, 0, 0, 0, 1], 1500);
    a.v6.push("2001:db8:1::1/64".parse().unwrap());
    let mut b = Interface::new("wan", 1, None, [2, 0xdc, 0, 0, 0, 2], 1500);
    b.v6.push("2001:db8:2::1/64".parse().unwrap());
    let topo = Arc::new(Topology::new(vec![a, b]));
    let mut fib = Fib::default();
    fib.insert6("2001:db8:1::/64".parse().unwrap(), NextHop { iface: 0, gateway: None });
    fib.insert6("2001:db8:2::/64".parse().unwrap(), NextHop { iface: 1, gateway: None });
    let gw: IpAddr = "2001:db8:2::2".parse().unwrap();
    fib.insert6("2001:db8:a::/48".parse().unwrap(), NextHop { iface: 1, gateway: Some(gw) });
    let mut n = Neighbours::default();
    n.learn(1, gw, [2, 0, 0, 0, 2, 2], NeighSource::Static);
    n.learn(0, "2001:db8:1::2".parse().unwrap(), [2, 0, 0, 0, 1, 2], NeighSource::Static);
    n.learn(0, PE.parse().unwrap(), [2, 0, 0, 0, 1, 0x99], NeighSource::Static);
    let mut p = Pipeline::new(topo, Arc::new(fib), Arc::new(n), counters, PipelineConfig::default());
    if endc {
        let mut t = SidTable::new(&Params::DEFAULT);
        t.insert(v6(ENDC_SID), Behaviour::EndC);
        // PFC toward the DC gateway out of port 1 (here the shaped,
        // backlogged port), quanta at its rate.
        t.endc = vec![(1, EndCConfig { link_bps: SHAPER_BPS, ..EndCConfig::default() })];
        p.set_sids(Arc::new(t));
    }
    p
}

/// SRv6-encapsulated ICMPv6 Long-haul CNP (Pause 100 us) to the END.C SID,
/// arriving on port 0.
fn endc_frame() -> Vec<u8> {
    let repr = Icmpv6LhCnpRepr { code: 0, info: CnpInfo { congestion_level: 200, action: Action::Pause, parameter: 100, source_qp: 0x100, metric_type: MetricType::QueueDepthKb, metric_value: 1000 }, objects: Objects::NONE };
    let mut inner = vec![0u8; 256];
    let n = emit_icmpv6_packet(&v6("fc00:0:9::1").octets(), &v6("2001:db8:1::2").octets(), 64, &repr, &Params::DEFAULT, &mut inner).unwrap();
    inner.truncate(n);
    let mut f = vec![2, 0xdc, 0, 0, 0, 1, 2, 0, 0, 0, 1, 2, 0x86, 0xdd, 0x60, 0, 0, 0];
    f.extend_from_slice(&(inner.len() as u16).to_be_bytes());
    f.push(41);
    f.push(64);
    f.extend_from_slice(&v6("fc00:0:9::1").octets());
    f.extend_from_slice(&v6(ENDC_SID).octets());
    f.extend_from_slice(&inner);
    f
}

struct Shared {
    stop: AtomicBool,
    /// Port 1 as the control thread sees it.
    qd: AtomicU64,
    tx_bytes: AtomicU64,
    /// Microbursts the worker's watch counted on port 1.
    microbursts: AtomicU64,
    link_up: AtomicBool,
}

struct Hists {
    lat: Histogram<u64>,
    /// (b): microburst notifications that left.
    microbursts: u64,
    /// Events without a notification (should be 0).
    missed: u64,
    cycles: u64,
}

fn hist() -> Histogram<u64> {
    Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).unwrap()
}

/// Tiny xorshift for the random phases.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// The worker mirror. `left_tx` reports (what, when) for notifications.
fn worker(sc: Scenario, sh: Arc<Shared>, updates: Receiver<Vec<u8>>, left_tx: Sender<(Left, Instant)>, t0: Instant, dur: Duration) -> Hists {
    let params = Params::DEFAULT;
    let counters = Arc::new(WorkerCounters::default());
    let mut pl = pipeline(counters.clone(), sc == Scenario::EndC);
    let shaped = EgressConfig { rate_bps: SHAPER_BPS, burst_bytes: 16 * 1024, queue_bytes: 8 << 20, ..EgressConfig::default() };
    let cong = (sc == Scenario::Cnp).then(|| {
        let p = PortParams {
            rate_bps: SHAPER_BPS,
            rtt_est_ns: 100_000, // R * RTT / 8 = 25 KB < K_base: K_max = K_base
            k_base_bytes: K_MAX,
            k_min_bytes: Some(K_MIN),
            suppression: false,
            cnp_port_max_pps: 1_000_000,
            ..PortParams::default()
        };
        p.validate().unwrap();
        assert_eq!(p.k_max(), K_MAX);
        CongestionSpec { params: p, source_v4: None, source_v6: None, end_e_sid: None, notify_sids: Vec::new(), tunnel_pes: Vec::new(), source_qps: Vec::new(), source_formats: Vec::new(), auth: Default::default() }
    });
    let mut port1: EgressPort<VecPacket> = EgressPort::new(shaped, cong);
    let mut mbw = dataplane::egress::MicroburstWatch::new(dataplane::egress::MicroburstConfig { bytes: MICROBURST, window_ns: 100_000 });
    let data = gen::roce6(&L2 { src: [2, 0, 0, 0, 1, 2], dst: [2, 0xdc, 0, 0, 0, 1] }, v6("2001:db8:1::2"), v6("2001:db8:a::2"), 49152, 0x100, 0, 1024, 64);
    let endc = endc_frame();
    let mut pool: Vec<VecPacket> = (0..12_000).map(|_| VecPacket::from_bytes(&data)).collect();
    let mut tx0: Vec<VecPacket> = Vec::with_capacity(256);
    let mut reqs: Vec<CnpRequest> = Vec::with_capacity(256); // like the worker: poll never allocates
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut h = Hists { lat: hist(), microbursts: 0, missed: 0, cycles: 0 };
    // Cycle state.
    let mut filling = matches!(sc, Scenario::Cnp | Scenario::FannQueue | Scenario::EndC);
    let mut event_at: Option<Instant> = None;
    let mut wait_recovery = false;
    let mut resume_at = Instant::now();
    let mut endc_due = Instant::now() + Duration::from_micros(500);
    let start = Instant::now();
    let threshold = if sc == Scenario::Cnp { K_MAX } else { BUILDUP };
    // END.C: keep a backlog of about 150 KB on the DC port.
    let endc_backlog = 150_000;
    let left = |what: Left, at: Instant, event_at: &mut Option<Instant>, filling: &mut bool, wait_recovery: &mut bool, h: &mut Hists| {
        match (sc, what) {
            (Scenario::Cnp, Left::LhCnp) | (Scenario::FannQueue, Left::Fann { recovery: false, ev: event::QUEUE_BUILDUP }) => {
                if let Some(t) = event_at.take() {
                    h.lat.record((at - t).as_nanos() as u64).unwrap();
                    h.cycles += 1;
                    *filling = false;
                    *wait_recovery = sc == Scenario::FannQueue;
                }
            }
            (Scenario::FannQueue, Left::Fann { recovery: true, ev: event::QUEUE_BUILDUP }) => *wait_recovery = false,
            (Scenario::FannQueue, Left::Fann { recovery: false, ev: event::MICROBURST }) => h.microbursts += 1,
            (Scenario::EndC, Left::Pfc { pause: true }) => {
                if let Some(t) = event_at.take() {
                    h.lat.record((at - t).as_nanos() as u64).unwrap();
                    h.cycles += 1;
                }
            }
            _ => {}
        }
        if what != Left::Data {
            let _ = left_tx.send((what, at));
        }
    };
    let mut dbg = Instant::now();
    loop {
        if std::env::var_os("NOTIFY_BENCH_DEBUG").is_some() && dbg.elapsed() > Duration::from_millis(500) {
            dbg = Instant::now();
            eprintln!("debug {sc:?}: qd {} filling {filling} event {:?} wait_rec {wait_recovery} cycles {} pool {} stats {:?}", port1.queue.depth_bytes(), event_at.map(|t| t.elapsed()), h.cycles, pool.len(), port1.cong.as_ref().map(|c| c.stats()));
        }
        if sh.stop.load(Ordering::Relaxed) || (sc != Scenario::FannLink && start.elapsed() >= dur && event_at.is_none()) {
            break;
        }
        // apply_updates: injected notifications, routed, ahead of data.
        while let Ok(ip) = updates.try_recv() {
            let Some(mut m) = pool.pop() else { break };
            // A recycled buffer may have been decapsulated (END.C): reset it.
            m.reset(&[0u8; 14]);
            m.set_len(14 + ip.len());
            m.data_mut()[14..].copy_from_slice(&ip);
            let now = t0.elapsed().as_nanos() as u64;
            match pl.emit_ip(&mut m, IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(&ip[24..40]).unwrap())), 6, now) {
                Ok(0) => tx0.push(m),
                Ok(_) => {
                    let _ = port1.admit_priority(m).map_err(|(m, _)| pool.push(m));
                }
                Err(_) => pool.push(m),
            }
        }
        let now_i = Instant::now();
        let now = (now_i - t0).as_nanos() as u64;
        // RX burst.
        let rx_data = match sc {
            Scenario::Cnp | Scenario::FannQueue => filling,
            Scenario::EndC => port1.queue.depth_bytes() < endc_backlog,
            Scenario::FannLink => false,
        };
        let with_endc = sc == Scenario::EndC && event_at.is_none() && now_i >= endc_due;
        if rx_data || with_endc {
            let t_rx = Instant::now();
            for i in 0..BURST {
                let is_endc = with_endc && i == BURST / 2;
                if !is_endc && !rx_data {
                    continue;
                }
                let Some(mut m) = pool.pop() else { break };
                let f = if is_endc { &endc } else { &data };
                m.reset(f);
                if is_endc {
                    event_at = Some(t_rx);
                }
                match pl.process(&mut m, 0, now) {
                    Verdict::Tx(0) => tx0.push(m),
                    Verdict::Tx(_) => {
                        if pl.reply {
                            let _ = port1.admit_priority(m).map_err(|(m, _)| pool.push(m));
                        } else {
                            let before = port1.queue.depth_bytes();
                            match port1.admit(m, now, &counters) {
                                Ok(()) => {
                                    if before <= threshold && port1.queue.depth_bytes() > threshold && event_at.is_none() && sc != Scenario::EndC {
                                        event_at = Some(Instant::now());
                                    }
                                }
                                Err((m, _)) => pool.push(m),
                            }
                        }
                    }
                    v => panic!("unexpected verdict {v:?}"),
                }
            }
            if with_endc {
                endc_due = Instant::now() + Duration::from_micros(200 + rng.below(1800));
            }
        }
        // send_pfc: END.C timers.
        if !pl.endc.is_empty() {
            pl.poll_endc(now);
            while let Some((iface, a)) = pl.pfc_pending.pop() {
                let Some(mut m) = pool.pop() else { break };
                m.reset(&[]);
                match pl.build_pfc(iface, &a, &mut m) {
                    Some(0) => tx0.push(m),
                    Some(_) => {
                        let _ = port1.admit_priority(m).map_err(|(m, _)| pool.push(m));
                    }
                    None => pool.push(m),
                }
            }
        }
        // flush_all: port 0 (unshaped) leaves now.
        if !tx0.is_empty() {
            let at = Instant::now();
            for m in tx0.drain(..) {
                let w = classify(m.data(), &params);
                left(w, at, &mut event_at, &mut filling, &mut wait_recovery, &mut h);
                pool.push(m);
            }
        }
        // service_egress on port 1.
        let mut out: [(Option<VecPacket>, u32, Option<dataplane::congestion::FlowId>, bool); BURST] = std::array::from_fn(|_| (None, 0, None, false));
        let mut k = 0;
        port1.dequeue(now, BURST, |m, len, flow, prio| {
            out[k] = (Some(m), len, flow, prio);
            k += 1;
        });
        if k > 0 {
            let at = Instant::now();
            let mut bytes = 0u64;
            for o in out.iter_mut().take(k) {
                let (m, len, flow, prio) = (o.0.take().unwrap(), o.1, o.2, o.3);
                bytes += u64::from(len);
                if !prio {
                    port1.sent(flow, len, now);
                } else {
                    let w = classify(m.data(), &params);
                    left(w, at, &mut event_at, &mut filling, &mut wait_recovery, &mut h);
                }
                pool.push(m);
            }
            sh.tx_bytes.fetch_add(bytes, Ordering::Relaxed);
        }
        sh.qd.store(port1.queue.depth_bytes(), Ordering::Relaxed);
        // The worker's microburst watch on the owned port.
        if mbw.observe(now, port1.queue.depth_bytes()) {
            sh.microbursts.fetch_add(1, Ordering::Relaxed);
        }
        // poll_congestion.
        if port1.cong.is_some() {
            port1.poll(now, &mut reqs);
            for r in reqs.drain(..) {
                let Some(mut m) = pool.pop() else { break };
                m.reset(&[]);
                match port1.build_cnp_packet(&mut pl, &params, &r, &mut m, now) {
                    Ok(0) => tx0.push(m),
                    Ok(_) => {
                        let _ = port1.admit_priority(m).map_err(|(m, _)| pool.push(m));
                    }
                    Err(_) => pool.push(m),
                }
            }
        }
        // Cycle control: restart the traffic once drained, at a random phase.
        if matches!(sc, Scenario::Cnp | Scenario::FannQueue) && !filling && event_at.is_none() {
            let drained = port1.queue.depth_bytes() == 0 && !wait_recovery;
            if drained && resume_at <= now_i {
                // Arm a random delay the first time we see it drained.
                resume_at = now_i + Duration::from_micros(rng.below(2000));
                filling = true;
                // (filling starts after the delay: spin until then)
                while Instant::now() < resume_at {
                    std::hint::spin_loop();
                }
            }
        }
        if filling && event_at.is_none() && port1.queue.depth_bytes() > 4 * threshold.max(BUILDUP) {
            h.missed += 1;
            filling = false;
        }
    }
    h
}

/// The control-thread mirror: FANN agent poll, inject, sleep 1 ms.
fn control(sh: Arc<Shared>, updates: Sender<Vec<u8>>, t0: Instant) {
    let plan = FannPlan {
        node: v6(NODE),
        ingress_pes: vec![v6(PE)],
        encap: Vec::new(),
        path_ids: Vec::new(),
        udp: false,
        detector: DetectorConfig {
            node: v6(NODE),
            link_bps: SHAPER_BPS,
            interval_ns: 1_000_000,
            queue_buildup_bytes: BUILDUP,
            microburst_bytes: MICROBURST,
            microburst_window_ns: 100_000,
            rate_pps: 100_000, // no rate limiting between cycles
            burst: 1000,
            ..DetectorConfig::default()
        },
    };
    let mut agent = FannAgent::new(plan, Params::DEFAULT, &[(0, 100_000_000_000), (1, SHAPER_BPS)]);
    while !sh.stop.load(Ordering::Relaxed) {
        let now_ns = t0.elapsed().as_nanos() as u64;
        let pkts = agent.poll(
            now_ns,
            |p| if p == 1 { sh.tx_bytes.load(Ordering::Relaxed) } else { 0 },
            |p| if p == 1 { sh.qd.load(Ordering::Relaxed) } else { 0 },
            |p| if p == 1 { sh.microbursts.load(Ordering::Relaxed) } else { 0 },
            |p| p != 1 || sh.link_up.load(Ordering::Relaxed),
        );
        for ip in pkts {
            let _ = updates.send(ip);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

struct Report {
    sc: Scenario,
    h: Hists,
    secs: f64,
    period: Histogram<u64>,
}

fn run(sc: Scenario, dur: Duration) -> Report {
    let sh = Arc::new(Shared { stop: AtomicBool::new(false), qd: AtomicU64::new(0), tx_bytes: AtomicU64::new(0), microbursts: AtomicU64::new(0), link_up: AtomicBool::new(true) });
    let (up_tx, up_rx) = unbounded::<Vec<u8>>();
    let (left_tx, left_rx) = unbounded::<(Left, Instant)>();
    let t0 = Instant::now();
    let start = Instant::now();
    let ctl = {
        let sh = sh.clone();
        let up_tx = up_tx.clone();
        std::thread::spawn(move || control(sh, up_tx, t0))
    };
    let w = {
        let sh = sh.clone();
        std::thread::spawn(move || worker(sc, sh, up_rx, left_tx, t0, dur))
    };
    let mut lat = hist();
    let mut missed = 0;
    let mut cycles = 0;
    if sc == Scenario::FannLink {
        let mut rng = Rng(0x1234_5678_9abc_def1);
        std::thread::sleep(Duration::from_millis(5));
        while start.elapsed() < dur {
            std::thread::sleep(Duration::from_micros(500 + rng.below(2000)));
            while left_rx.try_recv().is_ok() {}
            let t = Instant::now();
            sh.link_up.store(false, Ordering::Relaxed);
            let got = loop {
                match left_rx.recv_timeout(Duration::from_millis(200)) {
                    Ok((Left::Fann { recovery: false, ev: event::LINK_FAILURE }, at)) => break Some(at),
                    Ok(_) => continue,
                    Err(_) => break None,
                }
            };
            match got {
                Some(at) => {
                    lat.record((at - t).as_nanos() as u64).unwrap();
                    cycles += 1;
                }
                None => missed += 1,
            }
            sh.link_up.store(true, Ordering::Relaxed);
            // Wait for the recovery notification before the next cycle.
            loop {
                match left_rx.recv_timeout(Duration::from_millis(200)) {
                    Ok((Left::Fann { recovery: true, ev: event::LINK_FAILURE }, _)) | Err(_) => break,
                    Ok(_) => continue,
                }
            }
        }
        sh.stop.store(true, Ordering::Relaxed);
    }
    let mut h = w.join().unwrap();
    sh.stop.store(true, Ordering::Relaxed);
    ctl.join().unwrap();
    if sc == Scenario::FannLink {
        h.lat = lat;
        h.missed = missed;
        h.cycles = cycles;
    }
    Report { sc, h, secs: start.elapsed().as_secs_f64(), period: control_period() }
}

/// How long the control loop's `sleep(1 ms)` really takes here (its poll
/// period), measured over 200 iterations.
fn control_period() -> Histogram<u64> {
    let mut h = hist();
    let mut last = Instant::now();
    for _ in 0..200 {
        std::thread::sleep(Duration::from_millis(1));
        let n = Instant::now();
        h.record((n - last).as_nanos() as u64).unwrap();
        last = n;
    }
    h
}

fn us(h: &Histogram<u64>, q: f64) -> f64 {
    h.value_at_quantile(q) as f64 / 1000.0
}



fn main() {
    let ms: u64 = std::env::var("NOTIFY_BENCH_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(2000);
    let dur = Duration::from_millis(ms);
    let load0 = loadavg();
    let mut reports = Vec::new();
    for sc in [Scenario::Cnp, Scenario::FannQueue, Scenario::FannLink, Scenario::EndC] {
        // (b) waits for the deep queue to drain between events: run longer.
        let r = run(sc, if sc == Scenario::FannQueue { 2 * dur } else { dur });
        eprintln!(
            "notify_bench: {:?}: {} events, p50 {:.1} us, p99 {:.1} us, max {:.1} us, missed {}, microbursts {}",
            sc,
            r.h.cycles,
            us(&r.h.lat, 0.5),
            us(&r.h.lat, 0.99),
            r.h.lat.max() as f64 / 1000.0,
            r.h.missed,
            r.h.microbursts
        );
        reports.push(r);
    }
    let mut o = String::new();
    let _ = writeln!(o, "# Event-to-notification latency\n");
    let _ = writeln!(
        o,
        "`cargo run --release -p control --example notify_bench` on {} (2 shared cores; load average {} at start, {} at end; \
         threads not pinned). Wall-clock time from the event to the notification frame being handed to the port \
         (where the worker calls `rte_eth_tx_burst`), in a harness that mirrors the router's worker loop and control \
         thread and calls the router's own code (`Pipeline::process` / `emit_ip` / `build_pfc` / `poll_endc`, \
         `EgressPort` admit / dequeue / poll / `build_cnp_packet`, `FannAgent::poll` with its `Detector`s, the \
         inject queue, the control loop's `sleep(1 ms)`); see the header of control/examples/notify_bench.rs. \
         Port 1 shaped at 2 Gbit/s filled by RoCEv2 data (1 KiB payload, bursts of 32). Between events the \
         traffic stops until the queue drained, then restarts after a random 0..2 ms. hdrhistogram, recorded in ns.\n",
        utc_now(),
        load0,
        loadavg()
    );
    let _ = writeln!(o, "| event -> notification | events | p50 us | p90 us | p99 us | max us | mean us |");
    let _ = writeln!(o, "|---|---:|---:|---:|---:|---:|---:|");
    for r in &reports {
        let name = match r.sc {
            Scenario::Cnp => "(a) QD crosses K_max (64 KB) -> Long-haul CNP leaves (worker only)",
            Scenario::FannQueue => "(b) QD crosses 200 KB -> FANN queue-buildup event leaves (worker -> control -> worker)",
            Scenario::FannLink => "(c) link down -> FANN link-failure event leaves (control -> worker)",
            Scenario::EndC => "(d) END.C notification received -> PFC PAUSE leaves (worker only)",
        };
        let _ = writeln!(
            o,
            "| {name} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
            r.h.cycles,
            us(&r.h.lat, 0.5),
            us(&r.h.lat, 0.9),
            us(&r.h.lat, 0.99),
            r.h.lat.max() as f64 / 1000.0,
            r.h.lat.mean() / 1000.0
        );
    }
    let _ = writeln!(o);
    for r in &reports {
        if r.h.missed > 0 {
            let _ = writeln!(o, "- {:?}: {} events without a notification", r.sc, r.h.missed);
        }
    }
    let fq = reports.iter().find(|r| r.sc == Scenario::FannQueue).unwrap();
    let _ = writeln!(
        o,
        "- (b) also configures microburst detection ({} KB growth within 100 us, the default window): {} microburst \
         notifications in {} fills of the queue at 2 Gbit/s that each grew by far more than that within 100 us. The worker \
         that owns the port watches the depth every loop (`egress::MicroburstWatch`) and counts microbursts; the control \
         thread (loop period p50 {:.0} us) turns a new count into the Microburst event.",
        MICROBURST / 1000,
        fq.h.microbursts,
        fq.h.cycles,
        us(&fq.period, 0.5)
    );
    let _ = writeln!(o, "\n### Histograms (us: count per bucket)\n");
    for r in &reports {
        let _ = writeln!(o, "{:?} ({} events, {:.1} s):\n", r.sc, r.h.cycles, r.secs);
        let _ = writeln!(o, "```");
        let max = r.h.lat.max().max(1);
        // Log-spaced buckets from 0.5 us.
        let mut lo = 0u64;
        let mut hi = 500u64;
        while lo <= max {
            let c = r.h.lat.count_between(lo, hi.saturating_sub(1));
            if c > 0 {
                let bar = "#".repeat(((c as f64 / r.h.cycles.max(1) as f64) * 60.0).ceil() as usize);
                let _ = writeln!(o, "{:>9.1} .. {:>9.1} us {:>6} {bar}", lo as f64 / 1000.0, hi as f64 / 1000.0, c);
            }
            lo = hi;
            hi *= 2;
        }
        let _ = writeln!(o, "```\n");
    }
    print!("{o}");
    let path = std::env::var("NOTIFY_BENCH_OUT").unwrap_or_else(|_| format!("{}/../bench/notify-results.md", env!("CARGO_MANIFEST_DIR")));
    match std::fs::write(&path, &o) {
        Ok(()) => eprintln!("notify_bench: written to {path}"),
        Err(e) => eprintln!("notify_bench: cannot write {path}: {e}"),
    }
}
