//! The draft-tian-ccwg-long-haul-cnp-00 section 7 operational example on the
//! deterministic multi-node harness ([`dataplane::sim`]): real pipelines and
//! egress ports in N1 and N2, a RoCEv2 source driven by the reference source
//! model (s.5.6), virtual time.
//!
//! Topology (every link full duplex; `RTT` is the end-to-end RTT):
//!
//! ```text
//!   S 10.0.0.1 --RTT/4-- N1 ==RTT/4 (WAN, R)== N2 --~0-- D 10.0.0.4
//!   X 10.0.1.1 --~0-----'                      |'--~0-- E 10.0.5.1
//!                                              '---~0-- Y 10.0.6.1
//! ```
//!
//! * S: QP 100 -> D QP 200 at the model's rate (normal rate R, line rate).
//!   D ACKs every 64th packet (N1 and N2 learn SrcQP 100 from the ACKs).
//! * X: a burst of plain UDP (not RoCEv2, not ECN-capable) to E at 0.48 R,
//!   sharing N1's WAN port: N1's queue grows at 0.48 R while S runs at R.
//!   The burst lasts ~1.1 RTT, leaving a standing queue of ~1.06 K_max that
//!   S's line-rate traffic keeps from draining — until the Long-haul CNP
//!   lowers S's rate.
//! * Y: a short UDP burst into N2's port toward D ("N2 also detects mild
//!   congestion", s.7 step 6) while QP 100's arrival rate at N2 has fallen
//!   (its share of N1's output dropped when X's burst entered N1's FIFO).
//!
//! Why S-N1 is RTT/4 and not RTT/2 (the draft's "approximately 5 ms"): the
//! Long-haul CNP's effect reaches N1 one S-N1 round trip after N1 sent it.
//! With N1 at RTT/2 from S that is exactly RTT_est, when N1's per-flow rate
//! limit (one RTT_est, s.5.5) expires, and N1's queue (flat until then:
//! S's line rate equals R_port) is still above K_max, so N1 would send a
//! second Rate Reduce — not the single Rate Reduce of the example. With
//! RTT/4 the queue has drained for RTT/2 at 0.3 R by then (below K_max).
//! (Checked: with S-N1 at RTT/2, N1 sends Rate Reduce 31, level 183, at
//! t_RR + RTT_est.)
//!
//! Port configuration: the draft's K_max / K_min come from R and RTT_est
//! (alpha 1, K_min = K_max / 2), but `PortParams::default()` does not give
//! the example's CNPs: its EMR trigger (V_ecn 0.9) fires whenever the queue
//! holds only ECT traffic above K_min for an interval (marking is
//! deterministic), which adds Notify CNPs every RTT_est while the queue
//! drains from K_max to K_min; and the default severity scale (B =
//! 2 K_max = 250 MB) makes 130 MB level 133 / Rate Reduce 22. So, as the
//! congestion module's own section 7 test: V_ecn off, B = 184 MB, monitoring
//! interval RTT_est / 10. The draft gives no QGR threshold; it is off at N1:
//! the default V_growth (10 000 KB/ms) is below this burst's 12 MB/ms, so
//! by the module's rules it would send a Notify in the burst's first
//! interval, long before K_max.

use std::net::{IpAddr, Ipv4Addr};

use dataplane::congestion::{CnpFormat, Policy, PortParams, SourceParams};
use dataplane::egress::EgressConfig;
use dataplane::node::CongestionSpec;
use dataplane::sim::{Endpoint, FlowKind, FlowSpec, Pace, PortSpec, Record, Sim, SimConfig};
use dataplane::wire::lhcnp::{Action, MetricType};

const S_QP: u32 = 100;
const D_QP: u32 = 200;

fn ip(s: &str) -> Ipv4Addr {
    s.parse().unwrap()
}

/// Scenario parameters; everything else is derived from them (all times and
/// byte counts scale with RTT and R, so the small scenario is section 7 with
/// time and rate divided by 10, bytes by 100).
#[derive(Clone, Copy)]
struct Sc {
    /// R_port of N1's WAN port and of every link, bit/s.
    rate: u64,
    /// End-to-end RTT = RTT_est of the nodes and of the source, ns.
    rtt: u64,
    /// Payload bytes per packet (RoCEv2 frame = payload + 58, UDP + 42).
    payload: usize,
    /// Simulated time, ns.
    until: u64,
    /// s.5.7 deferral at N2 (off: the control experiment).
    n2_suppression: bool,
}

/// X's burst: 0.96 R until 0.2 interval after the evaluation that sees QD
/// above K_max (the queue grows at 0.96 R / 8 because S keeps sending at R,
/// the rate N1 drains at).
const CROSS_FRAC: f64 = 0.96;
/// The evaluation (monitoring intervals of RTT/10 from t = 0) that first sees
/// QD > K_max, and the QD it should see: 1.0392 K_max = 129.9 MB in
/// section 7, the middle of the QD range that is Congestion Level 180 with a
/// 184 MB buffer ([129.52, 130.24] MB). The evaluation before sees 12 MB
/// (one interval of growth) less: below K_max.
const K_EVAL: u64 = 23;
const QD_TARGET: f64 = 1.0392;
/// Y's burst into N2's port toward D: 0.8 R from 0.3 RTT after N1's CNP,
/// for 0.2 RTT.
const Y_FRAC: f64 = 0.8;

impl Sc {
    fn k_max(&self) -> u64 {
        (self.rate as f64 * self.rtt as f64 / 8e9).round() as u64
    }
    fn k_min(&self) -> u64 {
        self.k_max() / 2
    }
    fn interval(&self) -> u64 {
        self.rtt / 10
    }
    /// Queue size B: 1.472 K_max (184 MB at 100 Gbit/s, 10 ms: the size at
    /// which 130 MB is Congestion Level 180 under the linear level scale).
    fn buffer(&self) -> u64 {
        self.k_max() * 1472 / 1000
    }
    fn d_src(&self) -> u64 {
        self.rtt / 4
    }
    fn d_wan(&self) -> u64 {
        self.rtt / 4
    }
    fn d_local(&self) -> u64 {
        self.rtt / 1000
    }
    /// Shaper bucket of every port: 4 frames (a bucket lets its depth leave
    /// back to back, which delays the queue's growth by that much).
    fn burst_bytes(&self) -> u64 {
        4 * self.frame()
    }
    fn cross_rate(&self) -> f64 {
        CROSS_FRAC * self.rate as f64
    }
    /// Queue growth while X bursts, bytes/ns.
    fn growth(&self) -> f64 {
        self.cross_rate() / 8e9
    }
    fn t_eval(&self) -> u64 {
        K_EVAL * self.interval()
    }
    /// When X's burst starts reaching N1: QD(t) = growth * (t - t_cross) -
    /// the shaper's full bucket (which lets that much leave back to back).
    fn t_cross(&self) -> u64 {
        self.t_eval() - ((QD_TARGET * self.k_max() as f64 + self.burst_bytes() as f64) / self.growth()) as u64
    }
    fn frame(&self) -> u64 {
        self.payload as u64 + 58
    }
    fn y_start(&self) -> u64 {
        self.t_eval() + 3 * self.rtt / 10
    }
    fn y_stop(&self) -> u64 {
        self.y_start() + 2 * self.rtt / 10
    }
    fn port_params(&self) -> PortParams {
        PortParams {
            rate_bps: self.rate,
            rtt_est_ns: self.rtt,
            k_base_bytes: 64_000,
            alpha: 1.0,
            k_min_bytes: None,
            // Deterministic marking makes EMR 1.0 after one interval above
            // K_min; s.7 marks at 70 MB without a CNP, so V_ecn is off (as in
            // the congestion module's own section 7 test).
            v_ecn: 1.0,
            v_growth_kb_per_ms: 1e9,
            // RTT_est / 10, as the congestion module's section 7 test.
            interval_ns: self.interval(),
            cnp_port_max_pps: 10_000,
            cnp_port_burst: 64,
            flow_capacity: 64,
            flow_idle_timeout_ns: 1_000_000_000,
            zero_metrics: false,
            suppression: true,
            // QD sampled when an interval closes, as in the draft's example.
            qd_immediate: false,
            adaptive: None,
            default_format: CnpFormat::Roce,
            policy: Policy { buffer_bytes: self.buffer(), ..Policy::default() },
            ack_rtt: None,
        }
    }
    /// N2's port toward D: the same, plus a growth trigger at 0.1 R / 8
    /// ("mild congestion": Y's burst, far below K_min, trips it).
    fn n2_params(&self) -> PortParams {
        PortParams { v_growth_kb_per_ms: self.rate as f64 / 8e9 * 1e6 / 1000.0 * 0.1, suppression: self.n2_suppression, ..self.port_params() }
    }
    fn source_params(&self) -> SourceParams {
        SourceParams {
            rtt_est_ns: self.rtt,
            normal_rate_bps: self.rate as f64,
            recovery_factor: 2,
            ai_step_bps: 0.05 * self.rate as f64,
            notify_cut_pct: 25.0,
            resume_cap_frac: 0.5,
        }
    }
}

const N1: usize = 0;
const N2: usize = 1;
const S: usize = 0;
const D: usize = 1;
/// N1's WAN port, N1's port toward S, N2's port toward D.
const WAN: u16 = 1;
const TO_S: u16 = 0;
const TO_D: u16 = 1;

fn build(sc: &Sc) -> Sim {
    let mut sim = Sim::new(SimConfig { tick_ns: sc.interval() / 100, sample_ns: sc.interval() / 10, ..SimConfig::default() });
    let r = sc.rate;
    let burst = sc.burst_bytes();
    // The links carry frame bytes at their rate (no Ethernet overhead): the
    // models below (growth, drain times) count in those bytes, as the
    // draft's section 7 example does.
    let plain = |addr: &str| PortSpec {
        addr: addr.parse().unwrap(),
        egress: EgressConfig { rate_bps: r, queue_bytes: 64 << 20, burst_bytes: burst, max_packets: 16384, priority_packets: 256, frame_overhead: 0, ..EgressConfig::default() },
        congestion: None,
    };
    let cong = |addr: &str, p: PortParams, buffer: u64| PortSpec {
        addr: addr.parse().unwrap(),
        egress: EgressConfig {
            rate_bps: r,
            queue_bytes: buffer,
            burst_bytes: burst,
            max_packets: (buffer / 1000) as usize + 4096,
            priority_packets: 256,
            frame_overhead: 0,
            ..EgressConfig::default()
        },
        congestion: Some(CongestionSpec { params: p, source_v4: None, source_v6: None, end_e_sid: None, notify_sids: Vec::new(), tunnel_pes: Vec::new(), source_qps: Vec::new(), source_formats: Vec::new(), auth: Default::default() }),
    };
    let n1 = sim.add_node("N1", vec![plain("10.0.0.254/24"), cong("10.12.0.1/30", sc.port_params(), sc.buffer()), plain("10.0.1.254/24")]);
    let n2 = sim.add_node(
        "N2",
        vec![plain("10.12.0.2/30"), cong("10.0.4.254/24", sc.n2_params(), sc.buffer()), plain("10.0.5.254/24"), plain("10.0.6.254/24")],
    );
    assert_eq!((n1, n2), (N1, N2));
    let s = sim.add_host("S", ip("10.0.0.1"));
    let d = sim.add_host("D", ip("10.0.0.4"));
    let x = sim.add_host("X", ip("10.0.1.1"));
    let e = sim.add_host("E", ip("10.0.5.1"));
    let y = sim.add_host("Y", ip("10.0.6.1"));
    assert_eq!((s, d), (S, D));
    sim.link(Endpoint::Host(s), Endpoint::Node(n1, TO_S), r, sc.d_src());
    sim.link(Endpoint::Host(x), Endpoint::Node(n1, 2), r, sc.d_local());
    sim.link(Endpoint::Node(n1, WAN), Endpoint::Node(n2, 0), r, sc.d_wan());
    sim.link(Endpoint::Node(n2, TO_D), Endpoint::Host(d), r, sc.d_local());
    sim.link(Endpoint::Node(n2, 2), Endpoint::Host(e), r, sc.d_local());
    sim.link(Endpoint::Node(n2, 3), Endpoint::Host(y), r, sc.d_local());
    for (pfx, p) in [("10.0.0.1/32", TO_S), ("10.0.1.0/24", 2), ("10.0.0.4/32", WAN), ("10.0.5.0/24", WAN), ("10.0.6.0/24", WAN)] {
        sim.route(n1, pfx, p);
    }
    for (pfx, p) in [("10.0.0.4/32", TO_D), ("10.0.5.0/24", 2), ("10.0.6.0/24", 3), ("10.0.0.1/32", 0), ("10.0.1.0/24", 0)] {
        sim.route(n2, pfx, p);
    }
    sim.set_source_model(s, sc.source_params(), &[ip("10.0.0.254"), ip("10.12.0.2")], &[S_QP]);
    sim.set_acks(d, 64, D_QP, ip("10.0.0.1"), S_QP);
    sim.add_flow(
        s,
        FlowSpec {
            dst: ip("10.0.0.4"),
            kind: FlowKind::Roce { src_qp: S_QP, dst_qp: D_QP },
            payload: sc.payload,
            start_ns: 0,
            stop_ns: u64::MAX,
            pace: Pace::Model,
            sport: 0xc100,
        },
    );
    // X's burst: its first frame reaches N1 at t_cross.
    let ser = ((sc.payload as u64 + 42) * 8 * 1_000_000_000).div_ceil(r);
    let x_start = sc.t_cross() - sc.d_local() - ser;
    sim.add_flow(
        x,
        FlowSpec {
            dst: ip("10.0.5.1"),
            kind: FlowKind::Udp { dport: 9 },
            payload: sc.payload,
            start_ns: x_start,
            // Until 0.2 interval after the evaluation that sees it above K_max.
            stop_ns: sc.t_eval() + sc.interval() / 5,
            pace: Pace::Fixed(sc.cross_rate()),
            sport: 0xc200,
        },
    );
    sim.add_flow(
        y,
        FlowSpec {
            dst: ip("10.0.0.4"),
            kind: FlowKind::Udp { dport: 9 },
            payload: sc.payload,
            start_ns: sc.y_start(),
            stop_ns: sc.y_stop(),
            pace: Pace::Fixed(Y_FRAC * r as f64),
            sport: 0xc300,
        },
    );
    sim
}

fn small() -> Sc {
    Sc { rate: 10_000_000_000, rtt: 1_000_000, payload: 1024, until: 12_000_000, n2_suppression: true }
}

fn section7() -> Sc {
    Sc { rate: 100_000_000_000, rtt: 10_000_000, payload: 4096, until: 100_000_000, n2_suppression: true }
}

fn run(sc: &Sc) -> Sim {
    let mut sim = build(sc);
    sim.run_until(sc.until);
    println!("{}", sim.describe());
    println!("events: {}", sim.events);
    sim
}

/// The Congestion Level and Rate Reduce percentage of the severity policy
/// (congestion module documentation) for a QD.
fn policy_for(sc: &Sc, qd: u64) -> (u8, u16) {
    let level = (255.0 * qd.min(sc.buffer()) as f64 / sc.buffer() as f64).round() as u8;
    let pct = (f64::from(level) / 6.0).round().clamp(10.0, 50.0) as u16;
    (level, pct)
}

/// The section 7 timeline, with bounds derived from the model; returns the
/// first CNP's (level, parameter, metric) for the exact checks.
fn check_timeline(sc: &Sc, sim: &Sim) -> (u8, u16, u32, u32) {
    let rtt = sc.rtt;
    let (kmin, kmax) = (sc.k_min(), sc.k_max());
    let n1 = sim.nodes[N1].ports[usize::from(WAN)].cong.as_ref().unwrap();
    // Step 2.
    assert_eq!(n1.thresholds(), (kmin, kmax));
    // Step 1: N1 learned the flow and, from D's ACKs, SrcQP 100.
    let (s_ip, d_ip) = (IpAddr::V4(ip("10.0.0.1")), IpAddr::V4(ip("10.0.0.4")));
    assert_eq!(n1.flow_source_qp(s_ip, d_ip, D_QP), Some(S_QP));
    // Nothing dropped anywhere, and no CNP failed.
    for n in &sim.nodes {
        for p in &n.ports {
            assert_eq!(p.queue.stats.tail_drops, 0, "{}", n.name);
        }
    }
    assert!(!sim.timeline.iter().any(|e| matches!(e.rec, Record::CnpFailed { .. } | Record::CnpMalformed { .. })));

    // Step 3: first CE mark as soon as QD exceeds K_min (the QD recorded
    // is after the marked packet: above K_min by at most that packet and
    // the unmarkable X frames admitted between two S frames: < 3 frames).
    let (t_ce, qd_ce) = sim.first_ce(N1, WAN).expect("CE marks");
    assert!(qd_ce > kmin && qd_ce <= kmin + 3 * sc.frame(), "first CE at QD {qd_ce}");
    // It happens when the growth has brought QD to K_min: t_cross +
    // (K_min + shaper bucket) / growth, within 3 frames' worth of growth.
    let t_ce_model = sc.t_cross() as f64 + (kmin + sc.burst_bytes()) as f64 / sc.growth();
    assert!((t_ce as f64 - t_ce_model).abs() <= 3.0 * sc.frame() as f64 / sc.growth(), "first CE at {t_ce}, model {t_ce_model}");
    // At 70 MB (0.56 K_max): marking, no Long-haul CNP yet.
    let t70 = sim.queue_samples(N1, WAN).into_iter().find(|&(_, q)| q >= kmax * 56 / 100).expect("QD reached 0.56 K_max").0;
    let sent = sim.cnps_sent(N1);
    assert!(sent.iter().all(|c| c.0 > t70));

    // Step 4: one Rate Reduce, at the first evaluation that sees QD above
    // K_max. Evaluations close at the first poll at least one interval after
    // the previous one; polls come with every frame (< 1 us apart here), so
    // evaluation K_EVAL is at most K_EVAL us late.
    let actions: Vec<Action> = sent.iter().map(|c| c.3.action).collect();
    assert_eq!(actions, vec![Action::RateReduce, Action::Resume], "{}", sim.describe());
    let (t_rr, port, qd_rr, rr) = sent[0];
    assert_eq!(port, WAN);
    assert!(t_rr >= sc.t_eval() && t_rr <= sc.t_eval() + K_EVAL * 1000, "RR at {t_rr}");
    // QD above K_max and at most one interval of growth above it.
    assert!(qd_rr > kmax && (qd_rr as f64) <= kmax as f64 + sc.growth() * sc.interval() as f64);
    // Severity policy applied to that QD.
    assert_eq!((rr.congestion_level, rr.parameter), policy_for(sc, qd_rr));
    assert_eq!((rr.metric_type, rr.metric_value), (MetricType::QueueDepthKb, (qd_rr / 1000) as u32));
    assert_eq!(rr.source_qp, S_QP);

    // Step 5: S gets it one S-N1 propagation delay (+ < 1 us of
    // serialisation of a 70-byte frame) later and cuts the rate by that
    // percentage.
    let rx = sim.cnps_received(S);
    assert_eq!(rx.len(), 2, "{rx:?}");
    let (t_rx, from, info, ok) = rx[0];
    assert_eq!((from, info, ok), (IpAddr::V4(ip("10.0.0.254")), rr, Ok(())));
    assert!(t_rx >= t_rr + sc.d_src() && t_rx <= t_rr + sc.d_src() + 1000, "RR received at {t_rx}");
    let r0 = sc.rate as f64;
    let cut = r0 * f64::from(rr.parameter) / 100.0;
    let rates = sim.rates(S, S_QP);
    assert_eq!(rates[0], (0, r0));
    let at = |t: u64| rates.iter().rev().find(|x| x.0 <= t).unwrap().1;
    assert_eq!(at(t_rx), r0 - cut);
    assert_eq!(at(t_rx - 1), r0);

    // Step 6: N2 deferred (s.5.7): Y's burst tripped its growth trigger
    // while QP 100's arrival rate at N2 had fallen (its share of N1's
    // output dropped from 1 to 1 / 1.96 when X's burst entered N1's FIFO);
    // within one interval of the burst's start (+ the link), and it sent
    // no CNP.
    let defers = sim.deferrals(N2);
    assert_eq!(defers.len(), 1, "{}", sim.describe());
    assert_eq!(defers[0].1, TO_D);
    assert!(defers[0].0 > sc.y_start() && defers[0].0 <= sc.y_start() + 2 * sc.interval(), "deferral at {}", defers[0].0);
    assert!(sim.cnps_sent(N2).is_empty());
    let n2 = sim.nodes[N2].ports[usize::from(TO_D)].cong.as_ref().unwrap().stats();
    assert_eq!((n2.suppressed, n2.escalated, n2.trigger_qd), (1, 0, 0));
    assert!(n2.trigger_qgr > 0);

    // Step 7: additive recovery 2 * RTT_est after the CNP (no other CNP in
    // between), then every RTT_est. The rate is sampled at S's next frame
    // (< 1 us later).
    let ai = 0.05 * r0;
    let t_ai = t_rx + 2 * rtt;
    assert_eq!(at(t_ai - 1), r0 - cut);
    let first_up = rates.iter().find(|x| x.0 > t_rx).unwrap();
    assert!(first_up.0 >= t_ai && first_up.0 <= t_ai + 1000, "recovery at {}", first_up.0);
    assert_eq!(first_up.1, r0 - cut + ai);

    // Step 8: Resume once QD has stayed below K_min for RTT_est. From the
    // QD samples (every interval / 10): the last sample at or above K_min
    // and the first below bracket the crossing.
    let (t_res, _, qd_res, res) = sent[1];
    let qs = sim.queue_samples(N1, WAN);
    let last_above = qs.iter().rfind(|&&(t, q)| t < t_res && q >= kmin).unwrap().0;
    let first_below = qs.iter().find(|&&(t, q)| t > last_above && q < kmin).unwrap().0;
    assert!(t_res >= last_above + rtt && t_res <= first_below + rtt, "Resume at {t_res}, K_min crossing in [{last_above}, {first_below}]");
    assert_eq!((res.action, res.parameter, res.source_qp), (Action::Resume, 50, S_QP));
    assert_eq!(res.congestion_level, policy_for(sc, qd_res).0);
    assert_eq!((res.metric_type, res.metric_value), (MetricType::QueueDepthKb, (qd_res / 1000) as u32));
    // The source restores 50 % of the reduction on top of the rate it had
    // recovered to.
    let (t_rx2, _, info2, ok2) = rx[1];
    assert_eq!((info2, ok2), (res, Ok(())));
    assert!(t_rx2 >= t_res + sc.d_src() && t_rx2 <= t_res + sc.d_src() + 1000);
    let before = at(t_rx2 - 1);
    assert_eq!(at(t_rx2), (before + 0.5 * cut).min(r0));
    // It is the queue that S's reduced rate drained: the rate had recovered
    // by whole AI steps only.
    let steps = (before - (r0 - cut)) / ai;
    assert!((steps - steps.round()).abs() < 1e-9 && steps >= 1.0, "{before}");
    // Never a Pause, never a second Rate Reduce; the queue never reached
    // the Pause threshold.
    let max = qs.iter().map(|x| x.1).max().unwrap();
    assert!((max as f64) < 0.9 * sc.buffer() as f64);
    (rr.congestion_level, rr.parameter, rr.metric_value, res.metric_value)
}

#[test]
fn small_scenario_timeline() {
    // 10 Gbit/s, 1 ms: section 7 scaled down (K_max 1.25 MB).
    let sc = small();
    let sim = run(&sc);
    let (level, pct, _, _) = check_timeline(&sc, &sim);
    // The target QD (129.9 / 125 K_max) is within one interval's growth of
    // K_max, as in section 7; with 1 KB frames and 1 us evaluation jitter at
    // this scale the level lands within a few points of 180.
    assert!((176..=183).contains(&level) && (29..=31).contains(&pct), "{level} {pct}");
}

#[test]
fn section7_timeline() {
    let sc = section7();
    let sim = run(&sc);
    let (level, pct, metric, resume_metric) = check_timeline(&sc, &sim);
    // The draft's numbers: Rate Reduce 30, Congestion Level 180, Metric
    // Type 1 at ~130000 KB. The metric is QD / 1000 at the evaluation; the
    // draft's 130000 exactly would need the evaluation to see QD within a
    // 1 KB window with 4 KB frames, so the bound is the QD range of level
    // 180 ([129 520, 130 240] KB with B = 184 MB).
    assert_eq!((level, pct), (180, 30));
    assert!((129_520..=130_240).contains(&metric), "{metric}");
    // Resume: the draft's MetricValue 30000; here the QD at that moment,
    // which the drain (0.3 R for the first 2 RTT, then 0.25 R) puts near it.
    assert!((25_000..=35_000).contains(&resume_metric), "{resume_metric}");
}


#[test]
fn without_deferral_n2_sends_a_duplicate() {
    // The control experiment for step 6: the same run with N2's s.5.7
    // deferral off. Y's burst trips N2's growth trigger (QD far below
    // K_max: Notify), so N2 sends its own Long-haul CNP for QP 100 at the
    // same evaluation at which it deferred above — a second instruction for
    // the congestion N1 already handled — and S applies it (a 25 % cut).
    let sc = Sc { n2_suppression: false, ..small() };
    let sim = run(&sc);
    let n2 = sim.cnps_sent(N2);
    // Notify, then Resume one RTT_est later (its queue emptied at once).
    let actions: Vec<Action> = n2.iter().map(|c| c.3.action).collect();
    assert_eq!(actions, vec![Action::Notify, Action::Resume], "{}", sim.describe());
    assert_eq!(n2[1].0, n2[0].0 + sc.rtt);
    let (t, port, _, info) = n2[0];
    assert_eq!((port, info.action, info.parameter, info.source_qp), (TO_D, Action::Notify, 0, S_QP));
    assert_eq!(info.metric_type, MetricType::QueueGrowthKbPerMs);
    assert!(t > sc.y_start() && t <= sc.y_start() + 2 * sc.interval());
    assert!(sim.deferrals(N2).is_empty());
    let rx = sim.cnps_received(S);
    let (t_rx, ..) = *rx.iter().find(|&&(_, from, i, ok)| from == IpAddr::V4(ip("10.12.0.2")) && i == info && ok.is_ok()).expect("N2's Notify applied");
    // On top of N1's Rate Reduce 30: 0.7 R * 0.75.
    let rates = sim.rates(S, S_QP);
    let at = |t: u64| rates.iter().rev().find(|x| x.0 <= t).unwrap().1;
    assert_eq!(at(t_rx), sc.rate as f64 * 0.7 * 0.75);
}
