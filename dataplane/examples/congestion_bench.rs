//! Congestion-aware node benchmark (issue 4).
//!
//! `cargo run --release -p dataplane --example congestion_bench`
//!
//! Pure Rust on byte buffers (no DPDK), one thread, not pinned.
//!
//! **Per-packet cost.** For 1k, 100k and 1M active RoCEv2 flows (distinct
//! (src IP, dst IP, DestQP), IPv4 and IPv6, RC SEND-only with 64 B payload and
//! a valid ICRC), in the same run and interleaved round by round:
//!
//! * (a) plain forwarding: the worker's burst fast path
//!   (`Pipeline::fast_burst`, which takes every packet here) + `EgressPort` without a
//!   congestion spec (`admit`, `dequeue`, `sent`, `poll` per burst);
//! * (b) congestion-aware: the same with a `CongestionSpec` (flow table of
//!   2x the flows): flow lookup, per-flow accounting, monitoring, CE marking;
//! * (c) the harness alone (take a buffer, write the flow's headers and ICRC
//!   into it, give it back), which (a) and (b) both contain.
//!
//! The queue is unshaped and held at a fixed backlog between K_min and K_max
//! (every burst of 32 is admitted, then all but the backlog is dequeued), so
//! every packet is CE-marked and counted while no second-level trigger fires
//! (V_ecn = 1: the EMR trigger is off, QD stays below K_max, QGR ~ 0). Flows
//! are sent round robin (each flow once per pass, the worst case for the
//! caches); the flow table learned them beforehand in a different
//! (pseudo-random) order, so table slots are not visited sequentially.
//! Frames are kept as a compact arena of headers + ICRC per flow and written
//! into a small ring of buffers per packet. Best of 5 rounds per mode.
//!
//! **CNP reaction time.** A shaped port (2 Gbit/s) is driven across K_max
//! repeatedly by a loop that mirrors the worker (per iteration: a burst of 32
//! packets through the pipeline and `admit`, then `dequeue` + `sent`, then
//! `poll` + `build_cnp_packet` + `admit_priority` for each request), with the
//! virtual clock = wall time since start. For each crossing (the `admit`
//! that takes QD above K_max) it records the wall time until the Rate
//! Reduce / Pause CNP is built and routed, and until that CNP is dequeued
//! (leaves the port, one loop iteration later). The traffic stops after the
//! CNP until the queue drains below K_min, then the next cycle starts.
//! Histograms: hdrhistogram, recorded in nanoseconds with 3 significant
//! digits, shown in microseconds.
//!
//! Output: a markdown report on stdout, also written to
//! `bench/congestion-results.md` (or `$CONGESTION_BENCH_OUT`).
//! `CONGESTION_BENCH_FLOWS=1000,100000` limits the cases.

use dataplane::congestion::{CnpRequest, PortParams};
use dataplane::counters::WorkerCounters;
use dataplane::egress::EgressConfig;
use dataplane::fastpath::SLOW;
use dataplane::node::{CongestionSpec, EgressPort};
use dataplane::packet::{PacketBuffer, VecPacket};
use dataplane::pipeline::{Pipeline, PipelineConfig, Verdict};
use dataplane::tables::{Fib, Interface, NeighSource, Neighbours, NextHop, Topology};
use dataplane::wire::lhcnp::Action;
use dataplane::wire::params::{Params, ROCEV2_UDP_PORT};
use dataplane::wire::roce::{self, icrc_check, Bth, BthRepr, IpHeader, IpUdpRepr};
use hdrhistogram::Histogram;
use std::fmt::Write as _;
use std::hint::black_box;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::Arc;
use std::time::{Duration, Instant};
use dataplane::hostinfo::{cpu_model, loadavg, thread_cpu_ns, utc_date};

const ROUNDS: usize = 5;
const BURST: usize = 32;
const PAYLOAD: usize = 64;
/// Goal: congestion-aware / plain at 100k flows.
const GOAL_RATIO: f64 = 1.25;
const GOAL_FLOWS: usize = 100_000;
/// Per-packet bench thresholds: K_max = K_base (the BDP term is tiny).
const K_MAX: u64 = 64_000;
const K_MIN: u64 = 16_000;
/// Backlog held in the per-packet bench (between K_min and K_max, also
/// after a burst of 32 is admitted on top).
const BACKLOG_BYTES: u64 = 40_000;
/// Reaction bench shaper rate.
const SHAPER_BPS: u64 = 2_000_000_000;
/// Large odd stride, coprime with every 2^a 5^b flow count: the learning
/// order.
const LEARN_STRIDE: u64 = 2_654_435_761;
/// Trains longer than one packet are measured where flows x train is at
/// most this (every flow visited at least once per round).
const MAX_TRAIN_PACKETS: usize = 4 << 20;

// ------------------------------------------------------------------ frames

/// Flow `i`: 4096 sources x 4096 destinations, then the DestQP.
fn flow_ids(i: usize) -> (u32, u32, u32) {
    let s = (i % 4096) as u32;
    let d = ((i / 4096) % 4096) as u32;
    let qp = 0x100 + (i / (4096 * 4096)) as u32;
    (s, d, qp)
}

fn ip_header(v6: bool, i: usize) -> (IpHeader, u32) {
    let (s, d, qp) = flow_ids(i);
    let h = if v6 {
        let src: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0x1, s as u16, 0, 0, 0, 2);
        let dst: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0x100 + (d % 256) as u16, (d / 256) as u16, 0, 0, 0, 2);
        IpHeader::V6 { src: src.octets(), dst: dst.octets(), traffic_class: 0x02, flow_label: 0x12345, hop_limit: 64 }
    } else {
        IpHeader::V4 {
            src: [10, 1, (s >> 8) as u8, (s & 0xff) as u8],
            dst: [10, 16 + (d >> 8) as u8, (d & 0xff) as u8, 2],
            tos: 0x02, // ECT(0)
            ttl: 64,
            ident: 0x1234,
        }
    };
    (h, qp)
}

/// Ethernet + RoCEv2 RC SEND-only (valid ICRC; UDP checksum over IPv6).
fn frame(v6: bool, i: usize) -> Vec<u8> {
    let (ip, qp) = ip_header(v6, i);
    let r = IpUdpRepr { ip, src_port: 0xc000 | (i as u16 & 0x3fff), dst_port: ROCEV2_UDP_PORT, udp_checksum: v6 };
    let hl = r.header_len();
    let pl = roce::BTH_LEN + PAYLOAD + roce::ICRC_LEN;
    let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2];
    f.extend_from_slice(&(if v6 { 0x86ddu16 } else { 0x0800 }).to_be_bytes());
    let mut d = vec![0u8; hl + pl];
    r.emit_headers(&mut d, pl).unwrap();
    let mut b = BthRepr::new(roce::opcode::RC | roce::opcode::SEND_ONLY, qp, (i as u32) & 0xff_ffff);
    b.migreq = true;
    b.ack_req = true;
    let mut bth = Bth::new_unchecked(&mut d[hl..]);
    b.emit(&mut bth);
    for (k, x) in bth.payload_mut().iter_mut().enumerate() {
        *x = (k as u8).wrapping_mul(7);
    }
    r.finish(&mut d).unwrap();
    f.extend_from_slice(&d);
    f
}

/// Per flow: the headers (Ethernet .. BTH) and the ICRC; the payload is the
/// same for every flow and stays in the buffers.
struct Arena {
    v6: bool,
    hl: usize,
    frame_len: usize,
    stride: usize,
    data: Vec<u8>,
    template: Vec<u8>,
}

impl Arena {
    fn build(v6: bool, n: usize) -> Arena {
        let template = frame(v6, 0);
        icrc_check(&template[14..]).unwrap();
        let frame_len = template.len();
        let hl = 14 + if v6 { 40 } else { 20 } + 8 + roce::BTH_LEN;
        let stride = hl + 4;
        let mut data = Vec::with_capacity(n * stride);
        for i in 0..n {
            let f = frame(v6, i);
            debug_assert_eq!(f[hl..frame_len - 4], template[hl..frame_len - 4]);
            data.extend_from_slice(&f[..hl]);
            data.extend_from_slice(&f[frame_len - 4..]);
        }
        Arena { v6, hl, frame_len, stride, data, template }
    }

    fn len(&self) -> usize {
        self.data.len() / self.stride
    }

    #[inline(always)]
    fn write(&self, i: usize, m: &mut VecPacket) {
        let o = i * self.stride;
        let src = &self.data[o..o + self.stride];
        let d = m.data_mut();
        let fl = self.frame_len;
        d[..self.hl].copy_from_slice(&src[..self.hl]);
        d[fl - 4..fl].copy_from_slice(&src[self.hl..]);
    }

    fn pool(&self, n: usize) -> Vec<VecPacket> {
        (0..n).map(|_| VecPacket::from_bytes(&self.template)).collect()
    }
}

// ------------------------------------------------------------------ router

fn pipeline(counters: Arc<WorkerCounters>) -> Pipeline {
    let mut a = Interface::new("a", 0, None, [2, 0, 0, 0, 0, 1], 1500);
    a.v4.push("10.0.1.1/24".parse().unwrap());
    a.v6.push("2001:db8:ff01::1/64".parse().unwrap());
    let mut b = Interface::new("b", 1, None, [2, 0, 0, 0, 0, 2], 1500);
    b.v4.push("10.0.2.1/24".parse().unwrap());
    b.v6.push("2001:db8:ff02::1/64".parse().unwrap());
    let topo = Arc::new(Topology::new(vec![a, b]));
    let mut fib = Fib::default();
    let gw_a4: IpAddr = "10.0.1.2".parse().unwrap();
    let gw_a6: IpAddr = "2001:db8:ff01::2".parse().unwrap();
    let gw4: IpAddr = "10.0.2.2".parse().unwrap();
    let gw6: IpAddr = "2001:db8:ff02::2".parse().unwrap();
    fib.insert4("10.0.1.0/24".parse().unwrap(), NextHop { iface: 0, gateway: None });
    fib.insert4("10.0.2.0/24".parse().unwrap(), NextHop { iface: 1, gateway: None });
    fib.insert6("2001:db8:ff01::/64".parse().unwrap(), NextHop { iface: 0, gateway: None });
    fib.insert6("2001:db8:ff02::/64".parse().unwrap(), NextHop { iface: 1, gateway: None });
    // Sources (CNPs go back there) behind port 0.
    fib.insert4("10.1.0.0/16".parse().unwrap(), NextHop { iface: 0, gateway: Some(gw_a4) });
    fib.insert6("2001:db8:1::/48".parse().unwrap(), NextHop { iface: 0, gateway: Some(gw_a6) });
    // Destinations behind port 1: 256 more-specifics + covering + default.
    for i in 0..256u32 {
        fib.insert4(format!("10.{}.{}.0/24", 16 + i / 16, (i % 16) * 16).parse().unwrap(), NextHop { iface: 1, gateway: Some(gw4) });
        fib.insert6(format!("2001:db8:{:x}::/48", 0x100 + i).parse().unwrap(), NextHop { iface: 1, gateway: Some(gw6) });
    }
    fib.insert4("10.16.0.0/12".parse().unwrap(), NextHop { iface: 1, gateway: Some(gw4) });
    fib.insert4("0.0.0.0/0".parse().unwrap(), NextHop { iface: 1, gateway: Some(gw4) });
    fib.insert6("::/0".parse().unwrap(), NextHop { iface: 1, gateway: Some(gw6) });
    let mut n = Neighbours::default();
    n.learn(0, gw_a4, [2, 0, 0, 0, 1, 2], NeighSource::Static);
    n.learn(0, gw_a6, [2, 0, 0, 0, 1, 2], NeighSource::Static);
    n.learn(1, gw4, [2, 0, 0, 0, 2, 2], NeighSource::Static);
    n.learn(1, gw6, [2, 0, 0, 0, 2, 2], NeighSource::Static);
    Pipeline::new(topo, Arc::new(fib), Arc::new(n), counters, PipelineConfig::default())
}

fn bench_params(flows: usize) -> PortParams {
    let p = PortParams {
        rate_bps: 100_000_000_000,
        rtt_est_ns: 10_000_000,
        alpha: 1e-4, // alpha * BDP = 12.5 KB < K_base: K_max = K_base
        k_base_bytes: K_MAX,
        k_min_bytes: Some(K_MIN),
        v_ecn: 1.0, // EMR trigger off (the backlog sits above K_min)
        flow_capacity: (2 * flows).max(1024),
        flow_idle_timeout_ns: 3_600_000_000_000, // no aging during the bench
        ..PortParams::default()
    };
    p.validate().unwrap();
    assert_eq!(p.k_max(), K_MAX);
    p
}

fn spec(params: PortParams) -> CongestionSpec {
    CongestionSpec { params, source_v4: None, source_v6: None, end_e_sid: None, notify_sids: Vec::new(), tunnel_pes: Vec::new(), source_qps: Vec::new(), source_formats: Vec::new(), auth: Default::default() }
}

/// Everything one forwarding loop needs.
struct Env<'a> {
    pl: &'a mut Pipeline,
    counters: &'a WorkerCounters,
    arena: &'a Arena,
    pool: Vec<VecPacket>,
    reqs: Vec<CnpRequest>,
    t0: Instant,
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Harness,
    Forward,
}


/// Where a packet sequence is: the flow of the next packet and how many
/// packets of it were already sent in the current train.
#[derive(Clone, Copy, Default)]
struct Pos {
    flow: usize,
    sub: usize,
}

/// `packets` packets of flows `cursor, cursor + step, ...` (mod `flows`),
/// `train` back-to-back packets per flow, in bursts of 32, holding
/// `backlog` packets in the queue. Returns ns per packet (thread CPU time)
/// and the new position.
#[allow(clippy::too_many_arguments)]
fn run(env: &mut Env, port: &mut EgressPort<VecPacket>, mode: Mode, flows: usize, mut pos: Pos, step: usize, train: usize, packets: usize, backlog: usize) -> (f64, Pos) {
    let step = step % flows;
    let train = train.max(1);
    let mut done = 0;
    let mut sent = [(None, 0u32); 2 * BURST];
    let start = thread_cpu_ns();
    while done < packets {
        let now = env.t0.elapsed().as_nanos() as u64;
        let n = BURST.min(packets - done);
        let mut burst: [Option<VecPacket>; BURST] = std::array::from_fn(|_| None);
        for slot in burst.iter_mut().take(n) {
            let mut m = env.pool.pop().expect("buffer ring empty");
            env.arena.write(pos.flow, &mut m);
            pos.sub += 1;
            if pos.sub == train {
                pos.sub = 0;
                pos.flow += step;
                if pos.flow >= flows {
                    pos.flow -= flows;
                }
            }
            if mode == Mode::Harness {
                env.pool.push(black_box(m));
                continue;
            }
            *slot = Some(m);
        }
        if mode == Mode::Forward {
            // As the worker: the burst fast path (which takes all of these
            // plain transit packets), then the egress stage.
            let mut out = [SLOW; BURST];
            {
                let mut views: [&mut [u8]; BURST] = std::array::from_fn(|_| <&mut [u8]>::default());
                for (v, m) in views.iter_mut().zip(burst[..n].iter_mut()) {
                    if let Some(m) = m {
                        *v = m.data_mut();
                    }
                }
                env.pl.fast_burst(0, &mut views[..n], &mut out[..n]);
            }
            for (slot, o) in burst[..n].iter_mut().zip(&out) {
                let Some(mut m) = slot.take() else { continue };
                // What it leaves (a source whose hash meets one of the
                // router's own addresses in its filter) takes the full
                // pipeline, as in the worker.
                let o = if *o == SLOW { if let Verdict::Tx(p) = env.pl.process(&mut m, 0, now) { p } else { SLOW } } else { *o };
                assert_eq!(o, 1, "every packet of the bench is forwarded to port 1");
                if let Err((_, why)) = port.admit(m, now, env.counters) {
                    panic!("admit: {why:?}");
                }
            }
        }
        done += n;
        if mode == Mode::Harness {
            continue;
        }
        let max = port.queue.len().saturating_sub(backlog);
        let mut k = 0;
        let pool = &mut env.pool;
        port.dequeue(now, max, |m, len, flow, _prio| {
            pool.push(m);
            sent[k] = (flow, len);
            k += 1;
        });
        for &(flow, len) in &sent[..k] {
            port.sent(flow, len, now);
        }
        port.poll(now, &mut env.reqs);
        assert!(env.reqs.is_empty(), "no CNP expected in the per-packet bench");
    }
    ((thread_cpu_ns() - start) as f64 / packets as f64, pos)
}

struct Row {
    flows: usize,
    train: usize,
    v6: bool,
    harness: f64,
    plain: f64,
    cong: f64,
    learned: u64,
    marked_share: f64,
    qd: u64,
}

impl Row {
    fn ratio(&self) -> f64 {
        self.cong / self.plain
    }
    fn ratio_net(&self) -> f64 {
        (self.cong - self.harness) / (self.plain - self.harness)
    }
}

fn per_packet(pl: &mut Pipeline, counters: &WorkerCounters, arena: &Arena, flows: usize, train: usize) -> Row {
    let backlog = (BACKLOG_BYTES / arena.frame_len as u64) as usize;
    let mut env = Env { pl, counters, arena, pool: arena.pool(2 * backlog + 4 * BURST), reqs: Vec::with_capacity(64), t0: Instant::now() };
    let params = bench_params(flows);
    let mut plain: EgressPort<VecPacket> = EgressPort::new(EgressConfig::default(), None);
    let mut cong: EgressPort<VecPacket> = EgressPort::new(EgressConfig::default(), Some(spec(params)));
    // Learn every flow in another order than the timed one, then fill both
    // queues to the backlog.
    let p0 = Pos::default();
    let (_, _) = run(&mut env, &mut cong, Mode::Forward, flows, p0, LEARN_STRIDE as usize % flows, 1, flows, backlog);
    let (_, _) = run(&mut env, &mut plain, Mode::Forward, flows, p0, 1, 1, backlog + BURST, backlog);
    let (_, _) = run(&mut env, &mut cong, Mode::Forward, flows, p0, 1, 1, backlog + BURST, backlog);
    let learned = cong.cong.as_ref().unwrap().stats().flows_active;
    assert_eq!(learned, flows as u64, "every flow learned");
    let packets = (flows * train).max(1 << 19);
    debug_assert!(train == 1 || flows * train <= MAX_TRAIN_PACKETS);
    let (mut bh, mut bp, mut bc) = (f64::INFINITY, f64::INFINITY, f64::INFINITY);
    let (mut ch, mut cp, mut cc) = (p0, p0, p0);
    let marked0 = cong.cong.as_ref().unwrap().stats().marked;
    let mut timed_cong = 0u64;
    for r in 0..ROUNDS {
        // Alternate the order within a round.
        let order: [Mode; 3] = if r % 2 == 0 { [Mode::Harness, Mode::Forward, Mode::Forward] } else { [Mode::Forward, Mode::Forward, Mode::Harness] };
        let mut fwd_seen = 0;
        for m in order {
            match m {
                Mode::Harness => {
                    let (ns, c) = run(&mut env, &mut plain, Mode::Harness, flows, ch, 1, train, packets, backlog);
                    ch = c;
                    bh = bh.min(ns);
                }
                Mode::Forward => {
                    let first_plain = r % 2 == 0;
                    if (fwd_seen == 0) == first_plain {
                        let (ns, c) = run(&mut env, &mut plain, Mode::Forward, flows, cp, 1, train, packets, backlog);
                        cp = c;
                        bp = bp.min(ns);
                    } else {
                        let (ns, c) = run(&mut env, &mut cong, Mode::Forward, flows, cc, 1, train, packets, backlog);
                        cc = c;
                        bc = bc.min(ns);
                        timed_cong += packets as u64;
                    }
                    fwd_seen += 1;
                }
            }
        }
    }
    let st = cong.cong.as_ref().unwrap().stats();
    assert_eq!(st.flow_table_full, 0);
    let qd = cong.queue.depth_bytes();
    assert!(qd > K_MIN && qd < K_MAX, "backlog between K_min and K_max");
    Row {
        flows,
        train,
        v6: arena.v6,
        harness: bh,
        plain: bp,
        cong: bc,
        learned,
        marked_share: (st.marked - marked0) as f64 / timed_cong as f64,
        qd,
    }
}

// ------------------------------------------------------------------ reaction

struct Reaction {
    flows: usize,
    interval_ns: u64,
    immediate: bool,
    built: Histogram<u64>,
    left: Histogram<u64>,
    compute: Histogram<u64>,
    crossings: u64,
    missed: u64,
    resumes: u64,
    secs: f64,
}

// One parameter per knob of the measurement.
#[allow(clippy::too_many_arguments)]
fn reaction(pl: &mut Pipeline, counters: &WorkerCounters, arena: &Arena, flows: usize, interval_ns: u64, immediate: bool, dur: Duration) -> Reaction {
    let params = PortParams {
        interval_ns,
        qd_immediate: immediate,
        rtt_est_ns: 1_000,           // no per-flow CNP rate limit between cycles
        cnp_port_max_pps: 1_000_000, // the port cap never refuses here
        suppression: false,          // every crossing gets its CNP
        ..bench_params(flows)
    };
    params.validate().unwrap();
    let shaped = EgressConfig { rate_bps: SHAPER_BPS, burst_bytes: 4096, ..EgressConfig::default() };
    let mut port: EgressPort<VecPacket> = EgressPort::new(EgressConfig::default(), Some(spec(params)));
    let mut env = Env { pl, counters, arena, pool: arena.pool(8192), reqs: Vec::with_capacity(64), t0: Instant::now() };
    // Learn the flows (unshaped, nothing held), then shape.
    let (_, p) = run(&mut env, &mut port, Mode::Forward, flows, Pos::default(), LEARN_STRIDE as usize % flows, 1, flows, 0);
    let (_, p) = run(&mut env, &mut port, Mode::Forward, flows, p, 1, 1, BURST, 0);
    let mut cursor = p.flow;
    assert_eq!(port.queue.depth_bytes(), 0);
    port.queue.set_config(shaped);
    let new_hist = || Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).unwrap();
    let (mut built, mut left, mut compute) = (new_hist(), new_hist(), new_hist());
    let mut cnp_pool: Vec<VecPacket> = (0..256).map(|_| VecPacket::from_bytes(&[])).collect();
    let mut sent = [(None, 0u32, false); BURST];
    let (mut crossings, mut missed, mut resumes) = (0u64, 0u64, 0u64);
    let mut filling = true;
    // Crossing time; the CNP's build time while it waits in the queue.
    let mut crossed: Option<Instant> = None;
    let mut waiting: Option<Instant> = None;
    let start = Instant::now();
    loop {
        let now = env.t0.elapsed().as_nanos() as u64;
        // RX burst.
        if filling {
            for _ in 0..BURST {
                let Some(mut m) = env.pool.pop() else {
                    panic!("buffer ring empty: QD {} crossed {crossed:?} crossings {crossings} {:?}", port.queue.depth_bytes(), port.cong.as_ref().unwrap().stats());
                };
                env.arena.write(cursor, &mut m);
                cursor += 1;
                if cursor >= flows {
                    cursor = 0;
                }
                if !matches!(env.pl.process(&mut m, 0, now), Verdict::Tx(1)) {
                    panic!("not forwarded");
                }
                let before = port.queue.depth_bytes();
                match port.admit(m, now, env.counters) {
                    Ok(()) => {
                        if before <= K_MAX && port.queue.depth_bytes() > K_MAX && crossed.is_none() {
                            crossed = Some(Instant::now());
                        }
                    }
                    Err((m, _)) => env.pool.push(m),
                }
            }
        }
        // Service the egress queue.
        let mut k = 0;
        let (pool, cpool) = (&mut env.pool, &mut cnp_pool);
        let mut cnp_left = false;
        port.dequeue(now, BURST, |m, len, flow, prio| {
            if prio {
                cpool.push(m);
                cnp_left = true;
            } else {
                pool.push(m);
            }
            sent[k] = (flow, len, prio);
            k += 1;
        });
        for &(flow, len, prio) in &sent[..k] {
            if !prio {
                port.sent(flow, len, now);
            }
        }
        if cnp_left {
            if let Some(t) = waiting.take() {
                left.record(t.elapsed().as_nanos() as u64).unwrap();
            }
        }
        // Second-level triggers.
        let t_poll = Instant::now();
        port.poll(now, &mut env.reqs);
        let reqs = std::mem::take(&mut env.reqs);
        for r in &reqs {
            let mut m = cnp_pool.pop().expect("CNP buffers");
            m.set_len(0);
            let out = port.build_cnp_packet(env.pl, &Params::DEFAULT, r, &mut m, now).expect("CNP routed");
            assert_eq!(out, 0, "CNP toward the sources' port");
            let t_built = Instant::now();
            if let Err((_, why)) = port.admit_priority(m) {
                panic!("priority queue: {why:?}");
            }
            match r.info.action {
                Action::Resume => resumes += 1,
                Action::RateReduce | Action::Pause => {
                    if let Some(t) = crossed.take() {
                        built.record((t_built - t).as_nanos() as u64).unwrap();
                        compute.record((t_built - t_poll).as_nanos() as u64).unwrap();
                        waiting = Some(t);
                        crossings += 1;
                        filling = false;
                    }
                }
                Action::Notify => {}
            }
        }
        env.reqs = reqs;
        env.reqs.clear();
        if filling && crossed.is_none() && port.queue.depth_bytes() > 4 * K_MAX {
            // Should not happen: a crossing without a CNP.
            missed += 1;
            filling = false;
        }
        if !filling && port.queue.depth_bytes() < K_MIN && waiting.is_none() {
            filling = true;
        }
        if start.elapsed() >= dur && waiting.is_none() && crossed.is_none() {
            break;
        }
    }
    Reaction { flows, interval_ns, immediate, built, left, compute, crossings, missed, resumes, secs: start.elapsed().as_secs_f64() }
}

// ------------------------------------------------------------------ report




fn us(h: &Histogram<u64>, q: f64) -> f64 {
    h.value_at_quantile(q) as f64 / 1000.0
}

fn main() {
    let started = Instant::now();
    let load_before = loadavg();
    let cases: Vec<usize> = std::env::var("CONGESTION_BENCH_FLOWS")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1_000, 100_000, 1_000_000]);
    let max_flows = cases.iter().copied().max().unwrap_or(1000);
    let counters = Arc::new(WorkerCounters::default());
    let mut pl = pipeline(counters.clone());

    let mut rows = Vec::new();
    let mut arenas = Vec::new();
    for v6 in [false, true] {
        let t = Instant::now();
        let a = Arena::build(v6, max_flows);
        eprintln!("congestion_bench: {} frames {} built in {:.2} s", a.len(), if v6 { "IPv6" } else { "IPv4" }, t.elapsed().as_secs_f64());
        arenas.push(a);
    }
    let trains: Vec<usize> = std::env::var("CONGESTION_BENCH_TRAINS")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).filter(|&t| t >= 1).collect())
        .unwrap_or_else(|| vec![1, 16]);
    for &flows in &cases {
        // Trains need flows x train packets to visit every flow: longer
        // trains only where that stays within MAX_TRAIN_PACKETS.
        for &train in trains.iter().filter(|&&t| t == 1 || flows * t <= MAX_TRAIN_PACKETS) {
        for a in &arenas {
            let t = Instant::now();
            let r = per_packet(&mut pl, &counters, a, flows, train);
            eprintln!(
                "congestion_bench: {flows} flows, trains of {train} {}: harness {:.1}, plain {:.1}, congestion-aware {:.1} ns/pkt, ratio {:.2} ({:.1} s)",
                if a.v6 { "IPv6" } else { "IPv4" },
                r.harness,
                r.plain,
                r.cong,
                r.ratio(),
                t.elapsed().as_secs_f64()
            );
            rows.push(r);
        }
        }
    }

    let mut reactions = Vec::new();
    let v6 = &arenas[1];
    let reaction_on = std::env::var("CONGESTION_BENCH_REACTION").map_or(true, |v| v != "0");
    for &flows in cases.iter().filter(|&&f| f <= 100_000 && reaction_on) {
        for (interval, immediate) in [(10_000u64, false), (PortParams::default().interval_ns, false), (PortParams::default().interval_ns, true)] {
            let r = reaction(&mut pl, &counters, v6, flows, interval, immediate, Duration::from_millis(400));
            eprintln!(
                "congestion_bench: reaction {flows} flows, interval {} us, QD trigger {}: {} crossings, p50 {:.1} us, p99 {:.1} us, max {:.1} us",
                interval / 1000,
                if immediate { "immediate" } else { "interval" },
                r.crossings,
                us(&r.built, 0.5),
                us(&r.built, 0.99),
                r.built.max() as f64 / 1000.0
            );
            reactions.push(r);
        }
    }

    // ------------------------------------------------------------- markdown
    let mut o = String::new();
    let _ = writeln!(o, "# Congestion-aware node benchmark\n");
    let _ = writeln!(
        o,
        "`cargo run --release -p dataplane --example congestion_bench` on {}, {} (one thread, not pinned; \
         `target-cpu=x86-64-v2`; load average {} at start). The machine is a shared, noisy 2-core VM: \
         each number is the best of {ROUNDS} rounds, the modes interleaved within each round.\n",
        utc_date(),
        cpu_model(),
        load_before
    );
    let _ = writeln!(o, "## Per-packet cost\n");
    let _ = writeln!(
        o,
        "RoCEv2 RC SEND-only frames ({} B over IPv4, {} B over IPv6, {PAYLOAD} B payload, valid ICRC, ECT(0)), \
         each flow a distinct (src IP, dst IP, DestQP), sent round robin in trains (**train** = packets of a flow \
         back to back; 1 = every flow once per pass, the worst case for the caches; 16 = a 64 KiB RDMA message at \
         4 KiB MTU; the flow table learned them beforehand in a pseudo-random order); {} packets per round or one \
         pass (flows x train). \
         **plain** = the burst fast path (`Pipeline::fast_burst`, as the worker) + `EgressPort` without a congestion spec (`admit`, `dequeue`, `sent`, \
         `poll` per burst of {BURST}); **congestion-aware** = the same with a `CongestionSpec` \
         (flow table capacity 2x the flows): flow lookup and accounting, monitoring, CE marking. \
         The unshaped queue holds a fixed backlog of {} B, between K_min = {K_MIN} and K_max = {K_MAX}: every \
         packet is CE-marked and counted, no second-level trigger fires (V_ecn = 1, QD < K_max, QGR ~ 0). \
         **harness** = taking a buffer from the ring and writing the flow's headers and ICRC into it, \
         contained in both; *net* ratio = (congestion-aware - harness) / (plain - harness).\n",
        arenas[0].frame_len,
        arenas[1].frame_len,
        1 << 19,
        BACKLOG_BYTES
    );
    let _ = writeln!(o, "| flows | train | IP | plain ns/pkt | congestion-aware ns/pkt | ratio | harness ns/pkt | net ratio | flows learned | CE-marked |");
    let _ = writeln!(o, "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|");
    for r in &rows {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {:.1} | {:.1} | {:.2} | {:.1} | {:.2} | {} | {:.0}% |",
            r.flows,
            r.train,
            if r.v6 { "IPv6" } else { "IPv4" },
            r.plain,
            r.cong,
            r.ratio(),
            r.harness,
            r.ratio_net(),
            r.learned,
            100.0 * r.marked_share
        );
        let _ = r.qd;
    }
    let _ = writeln!(o);

    let _ = writeln!(o, "## CNP reaction time\n");
    let _ = writeln!(
        o,
        "A port shaped to {} Gbit/s (K_max = {K_MAX} B, K_min = {K_MIN} B) driven across K_max over and over by a loop \
         that mirrors the worker: per iteration a burst of {BURST} IPv6 RoCEv2 packets (`process` + `admit`), then \
         `dequeue` + `sent`, then `poll` and, per request, `build_cnp_packet` (ICMPv6 Long-haul CNP, FIB + \
         neighbour + Ethernet) + `admit_priority`; virtual clock = wall time. Traffic stops after the CNP until \
         QD < K_min, then the next cycle starts. Time from the `admit` that took QD above K_max to: **built** = the \
         Rate Reduce / Pause CNP built and routed; **left** = that CNP dequeued (leaves the port, next iteration); \
         **poll+build** = the part spent in the iteration that emitted it (from `poll` to built). RTT_est = 1 us \
         (no per-flow rate limit between cycles), suppression off, port cap 1M CNP/s, V_ecn = 1 (only the QD \
         trigger). hdrhistogram, 3 significant digits, recorded in ns, shown in us. **QD trigger** `interval` (the \
         default): triggers are evaluated when a monitoring interval closes, at the first `poll` at least \
         `interval_ns` after the previous close, so the reaction is about uniform over one interval plus the loop \
         iteration; `immediate` (`qd_trigger = \"immediate\"`): QD > K_max is acted on at the first `poll` that \
         sees it, the loop iteration of the crossing.\n",
        SHAPER_BPS / 1_000_000_000
    );
    let _ = writeln!(o, "| flows | interval_ns | QD trigger | crossings | built p50 us | p90 | p99 | max | left p50 us | p99 | max | poll+build p50 us | p99 | max |");
    let _ = writeln!(o, "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in &reactions {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
            r.flows,
            r.interval_ns,
            if r.immediate { "immediate" } else { "interval" },
            r.crossings,
            us(&r.built, 0.5),
            us(&r.built, 0.9),
            us(&r.built, 0.99),
            r.built.max() as f64 / 1000.0,
            us(&r.left, 0.5),
            us(&r.left, 0.99),
            r.left.max() as f64 / 1000.0,
            us(&r.compute, 0.5),
            us(&r.compute, 0.99),
            r.compute.max() as f64 / 1000.0
        );
        if r.missed > 0 {
            let _ = writeln!(o, "\n(!) {} crossings without a CNP\n", r.missed);
        }
        let _ = (r.resumes, r.secs);
    }
    let _ = writeln!(o);

    let _ = writeln!(o, "## Goal\n");
    let mut measured_trains: Vec<usize> = rows.iter().filter(|r| r.flows == GOAL_FLOWS).map(|r| r.train).collect();
    measured_trains.dedup();
    if measured_trains.is_empty() {
        let _ = writeln!(o, "* Congestion-aware path <= {GOAL_RATIO}x plain forwarding at {GOAL_FLOWS} flows: not measured in this run.");
    }
    for train in measured_trains {
        let goal: Vec<&Row> = rows.iter().filter(|r| r.flows == GOAL_FLOWS && r.train == train).collect();
        let worst = goal.iter().map(|r| r.ratio()).fold(0f64, f64::max);
        let worst_net = goal.iter().map(|r| r.ratio_net()).fold(0f64, f64::max);
        let _ = writeln!(
            o,
            "* Congestion-aware path <= {GOAL_RATIO}x plain forwarding at {GOAL_FLOWS} flows, {}: worst ratio {worst:.2} \
             (net of the harness {worst_net:.2}) -> **{}**.",
            if train == 1 { "round robin (the goal's worst case)".to_string() } else { format!("trains of {train}") },
            if worst_net <= GOAL_RATIO { "met" } else { "NOT met" }
        );
    }
    let _ = writeln!(o, "\n(total bench time {:.0} s)", started.elapsed().as_secs_f64());

    print!("{o}");
    let path = std::env::var("CONGESTION_BENCH_OUT").unwrap_or_else(|_| format!("{}/../bench/congestion-results.md", env!("CARGO_MANIFEST_DIR")));
    match std::fs::write(&path, &o) {
        Ok(()) => eprintln!("congestion_bench: written to {path}"),
        Err(e) => eprintln!("congestion_bench: cannot write {path}: {e}"),
    }
}
