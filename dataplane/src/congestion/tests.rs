//! Tests of the congestion-aware node, on a virtual clock.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::*;
use crate::wire::lhcnp::{Action, CnpInfo, MetricType};
use crate::wire::params::Params;
use crate::wire::roce::opcode;

const MB: u64 = 1_000_000;
const US: u64 = 1_000;
const MS: u64 = 1_000_000;
const RTT: u64 = 10 * MS;
const IV: u64 = 100 * US;

fn ip4(d: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(10, 0, 0, d))
}
fn ip6(x: u16) -> IpAddr {
    IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, x))
}
fn data(src: IpAddr, dst: IpAddr, dest_qp: u32, psn: u32) -> RoceInfo {
    RoceInfo {
        src,
        dst,
        dest_qp,
        opcode: opcode::RC | opcode::SEND_ONLY,
        psn,
        sport: 0xc000 | (dest_qp & 0x3fff) as u16,
        ext: false,
        syndrome: 0,
        ud_src_qp: None,
    }
}
fn ack(src: IpAddr, dst: IpAddr, dest_qp: u32, psn: u32) -> RoceInfo {
    RoceInfo {
        opcode: opcode::RC_ACKNOWLEDGE,
        ..data(src, dst, dest_qp, psn)
    }
}
/// A standard RoCEv2 CNP (DCQCN: opcode 0x81, E clear, PSN 0) from `src`
/// (a flow's destination) to `dst` (its source) naming `dest_qp`, a QP at
/// `dst`.
fn std_cnp(src: IpAddr, dst: IpAddr, dest_qp: u32) -> RoceInfo {
    RoceInfo {
        opcode: opcode::CNP,
        ..data(src, dst, dest_qp, 0)
    }
}

/// The draft's section 7 port: 100 Gbit/s, RTT_est 10 ms, 184 MB buffer;
/// EMR and QGR triggers out of the way.
fn sec7() -> PortParams {
    PortParams {
        rate_bps: 100_000_000_000,
        rtt_est_ns: RTT,
        k_base_bytes: 64_000,
        alpha: 1.0,
        k_min_bytes: None,
        v_ecn: 1.0,
        v_growth_kb_per_ms: 1e9,
        interval_ns: IV,
        cnp_port_max_pps: 100_000,
        cnp_port_burst: 64,
        flow_capacity: 64,
        flow_idle_timeout_ns: 1_000 * MS,
        zero_metrics: false,
        suppression: false,
        qd_immediate: false,
        adaptive: None,
        default_format: CnpFormat::Roce,
        policy: Policy {
            buffer_bytes: 184 * MB,
            ..Policy::default()
        },
        ack_rtt: None,
    }
}

fn out() -> Vec<CnpRequest> {
    Vec::with_capacity(32)
}

/// Poll once at `t` and return what came out.
fn poll_at(p: &mut CongestionPort, qd: u64, t: u64) -> Vec<CnpRequest> {
    let mut o = out();
    p.poll(qd, t, &mut o);
    o
}

// ------------------------------------------------------------ thresholds

#[test]
fn thresholds_bdp_base_floor_and_kmin() {
    let p = sec7();
    assert_eq!(p.k_max(), 125 * MB);
    assert_eq!(p.k_min(), 62_500_000);
    let c = CongestionPort::new(p);
    assert_eq!(c.thresholds(), (62_500_000, 125 * MB));
    // alpha scales the BDP.
    let p2 = PortParams { alpha: 2.0, ..p };
    assert_eq!(p2.k_max(), 250 * MB);
    // A short, slow link: BDP 1 Gbit/s * 10 us / 8 = 1250 B < K_base.
    let p3 = PortParams {
        rate_bps: 1_000_000_000,
        rtt_est_ns: 10 * US,
        policy: Policy::default(),
        ..p
    };
    assert_eq!(p3.k_max(), 64_000);
    assert_eq!(p3.k_min(), 32_000);
    // Configured K_min.
    let p4 = PortParams {
        k_min_bytes: Some(70 * MB),
        ..p
    };
    assert_eq!(p4.k_min(), 70 * MB);
    assert!(p4.validate().is_ok());
    // set_params recomputes on an RTT_est change.
    let mut c = CongestionPort::new(p);
    c.set_params(PortParams {
        rtt_est_ns: 20 * MS,
        policy: Policy {
            buffer_bytes: 400 * MB,
            ..p.policy
        },
        ..p
    });
    assert_eq!(c.thresholds(), (125 * MB, 250 * MB));
    assert_eq!(c.stats().k_max, 250 * MB);
}

#[test]
fn validation_names_field_and_reason() {
    assert_eq!(sec7().validate(), Ok(()));
    assert_eq!(PortParams::default().validate(), Ok(()));
    let p = sec7();
    let e = PortParams {
        k_min_bytes: Some(125 * MB),
        ..p
    }
    .validate()
    .unwrap_err();
    assert!(e.starts_with("k_min_bytes = 125000000: must be less than K_max"), "{e}");
    let cases: Vec<(PortParams, &str)> = vec![
        (PortParams { rate_bps: 0, ..p }, "rate_bps = 0"),
        (PortParams { rtt_est_ns: 0, ..p }, "rtt_est_ns = 0"),
        (PortParams { alpha: f64::NAN, ..p }, "alpha = NaN"),
        (PortParams { v_ecn: 1.5, ..p }, "v_ecn = 1.5"),
        (PortParams { v_growth_kb_per_ms: -1.0, ..p }, "v_growth_kb_per_ms = -1"),
        (PortParams { interval_ns: 0, ..p }, "interval_ns = 0"),
        (PortParams { cnp_port_max_pps: 0, ..p }, "cnp_port_max_pps = 0"),
        (PortParams { cnp_port_burst: 0, ..p }, "cnp_port_burst = 0"),
        (PortParams { flow_capacity: 0, ..p }, "flow_capacity = 0"),
        (
            PortParams {
                policy: Policy { buffer_bytes: 100 * MB, ..p.policy },
                ..p
            },
            "policy.buffer_bytes = 100000000",
        ),
        (
            PortParams {
                policy: Policy { top_flows: 0, ..p.policy },
                ..p
            },
            "policy.top_flows = 0",
        ),
        (
            PortParams {
                policy: Policy { resume_pct: 101, ..p.policy },
                ..p
            },
            "policy.resume_pct = 101",
        ),
        (
            PortParams {
                adaptive: Some(AdaptivePolicy { k_min_floor_frac: 0.6, ..AdaptivePolicy::default() }),
                ..p
            },
            "adaptive.k_min_floor_frac = 0.6",
        ),
        // What the management socket could set at run time: bounded here,
        // not only in the configuration file.
        (PortParams { rtt_est_ns: u64::MAX, ..p }, "rtt_est_ns = 18446744073709551615"),
        (PortParams { rtt_est_ns: 10_000_000_001, ..p }, "rtt_est_ns = 10000000001"),
        (PortParams { rate_bps: 1_600_000_000_001, ..p }, "rate_bps = 1600000000001"),
        (PortParams { k_base_bytes: u64::MAX, ..p }, "k_base_bytes = 18446744073709551615"),
        (PortParams { k_base_bytes: 1023, ..p }, "k_base_bytes = 1023"),
        (PortParams { k_base_bytes: 0, ..p }, "k_base_bytes = 0"),
        (PortParams { alpha: 1e30, ..p }, "alpha = 1000000000000000000000000000000"),
        (PortParams { k_min_bytes: Some(u64::MAX), ..p }, "k_min_bytes = 18446744073709551615"),
    ];
    for (pp, want) in cases {
        let e = pp.validate().unwrap_err();
        assert!(e.starts_with(want) && e.contains(": "), "{e} / {want}");
    }
}

// ------------------------------------------------------------ first level

#[test]
fn ecn_marking_only_ect_and_only_above_kmin() {
    let mut c = CongestionPort::new(sec7());
    let f = data(ip4(1), ip4(4), 200, 0);
    let kmin = c.thresholds().0;
    assert!(!c.on_enqueue(Some(&f), 1000, true, kmin, 0).0, "QD == K_min: not above");
    assert!(c.on_enqueue(Some(&f), 1000, true, kmin + 1, 1).0);
    assert!(!c.on_enqueue(Some(&f), 1000, false, kmin + 1, 2).0, "Not-ECT is never marked");
    assert!(c.on_enqueue(None, 1000, true, 70 * MB, 3).0, "non-RoCE ECT is marked too");
    assert!(!c.on_enqueue(None, 1000, true, 10 * MB, 4).0);
    assert_eq!(c.stats().marked, 2);
    // First level only: no CNP at 70 MB.
    assert!(poll_at(&mut c, 70 * MB, 0).is_empty());
    assert!(poll_at(&mut c, 70 * MB, IV).is_empty());
}

// ------------------------------------------------------------ second level

#[test]
fn trigger_queue_depth_only() {
    let mut c = CongestionPort::new(sec7());
    c.on_enqueue(Some(&data(ip4(1), ip4(4), 200, 0)), 1500, false, 125 * MB, 0);
    assert!(poll_at(&mut c, 125 * MB, 0).is_empty());
    // QD == K_max: not exceeded.
    assert!(poll_at(&mut c, 125 * MB, IV).is_empty());
    assert_eq!(c.stats().trigger_qd, 0);
    let o = poll_at(&mut c, 125 * MB + 1, 2 * IV);
    assert_eq!(o.len(), 1);
    assert_eq!(o[0].info.action, Action::RateReduce);
    assert_eq!(o[0].info.metric_type, MetricType::QueueDepthKb);
    let s = c.stats();
    assert_eq!((s.trigger_qd, s.trigger_emr, s.trigger_qgr), (1, 0, 0));
}

#[test]
fn reaction_time_from_the_k_max_crossing_to_the_first_cnp() {
    let mut c = CongestionPort::new(sec7());
    c.on_enqueue(Some(&data(ip4(1), ip4(4), 200, 0)), 1500, true, 100 * MB, 0);
    c.poll(100 * MB, 0, &mut out());
    // The packet that takes QD above K_max (125 MB), 30 us in.
    c.on_enqueue(Some(&data(ip4(1), ip4(4), 200, 1)), 1500, true, 126 * MB, 30 * US);
    assert_eq!(poll_at(&mut c, 126 * MB, IV).len(), 1);
    // Still above K_max: the next CNP (after RTT_est) is no new reaction.
    let t1 = IV + RTT;
    assert_eq!(poll_at(&mut c, 126 * MB, t1).len(), 1);
    c.refresh_reaction(t1, true);
    let r = c.reaction();
    assert_eq!(r.count, 1);
    // 70 us, within the histogram's 2 significant digits.
    assert!(r.p50_ns.abs_diff(70 * US) <= 700 && r.max_ns.abs_diff(70 * US) <= 700, "{r:?}");
    // Below K_max, then above again at t2; the flow may have its next CNP
    // at t1 + RTT_est: that is the reaction.
    assert!(poll_at(&mut c, 100 * MB, t1 + IV).is_empty());
    let t2 = t1 + 2 * IV;
    assert!(poll_at(&mut c, 126 * MB, t2).is_empty(), "rate-limited");
    let mut t = t2 + IV;
    while t < t1 + RTT {
        assert!(poll_at(&mut c, 126 * MB, t).is_empty());
        t += IV;
    }
    assert_eq!(poll_at(&mut c, 126 * MB, t1 + RTT).len(), 1);
    // Not recomputed within 100 ms of the last time, unless forced.
    c.refresh_reaction(t1 + RTT, false);
    assert_eq!(c.reaction().count, 1);
    c.refresh_reaction(t1 + RTT, true);
    let r = c.reaction();
    assert_eq!(r.count, 2);
    let want = t1 + RTT - t2;
    assert!(r.max_ns.abs_diff(want) <= want / 100, "{r:?} want max {want}");
}

#[test]
fn trigger_ecn_marking_rate_only() {
    let mut c = CongestionPort::new(PortParams { v_ecn: 0.5, ..sec7() });
    let f = data(ip4(1), ip4(4), 200, 0);
    c.poll(80 * MB, 0, &mut out());
    // 3 of 4 packets marked (one Not-ECT), QD constant above K_min.
    for (i, ect) in [true, true, false, true].into_iter().enumerate() {
        c.on_enqueue(Some(&f), 1500, ect, 80 * MB, i as u64);
    }
    let o = poll_at(&mut c, 80 * MB, IV);
    assert_eq!(c.stats().emr, 0.75);
    let s = c.stats();
    assert_eq!((s.trigger_qd, s.trigger_emr, s.trigger_qgr), (0, 1, 0));
    assert_eq!(o.len(), 1);
    assert_eq!(o[0].info.action, Action::Notify);
    assert_eq!(o[0].info.parameter, 0);
    assert_eq!(o[0].info.metric_type, MetricType::EcnMarkingPercent);
    assert_eq!(o[0].info.metric_value, 75);
    // EMR at the threshold does not trigger.
    let mut c = CongestionPort::new(PortParams { v_ecn: 0.75, ..sec7() });
    c.poll(80 * MB, 0, &mut out());
    for (i, ect) in [true, true, false, true].into_iter().enumerate() {
        c.on_enqueue(Some(&f), 1500, ect, 80 * MB, i as u64);
    }
    assert!(poll_at(&mut c, 80 * MB, IV).is_empty());
}

#[test]
fn trigger_queue_growth_rate_only() {
    let mut c = CongestionPort::new(PortParams {
        v_growth_kb_per_ms: 10_000.0,
        ..sec7()
    });
    c.on_enqueue(Some(&data(ip4(1), ip4(4), 200, 0)), 1500, true, MB, 0);
    c.poll(MB, 0, &mut out());
    // +2 MB in 100 us = 20000 KB/ms, below K_min: no marking.
    let o = poll_at(&mut c, 3 * MB, IV);
    assert_eq!(c.stats().qgr_kb_per_ms, 20_000.0);
    let s = c.stats();
    assert_eq!((s.trigger_qd, s.trigger_emr, s.trigger_qgr, s.marked), (0, 0, 1, 0));
    assert_eq!(o.len(), 1);
    assert_eq!(o[0].info.action, Action::Notify);
    assert_eq!(o[0].info.metric_type, MetricType::QueueGrowthKbPerMs);
    assert_eq!(o[0].info.metric_value, 20_000);
    // +0.9 MB in 100 us = 9000 KB/ms: below V_growth.
    let mut c = CongestionPort::new(PortParams {
        v_growth_kb_per_ms: 10_000.0,
        ..sec7()
    });
    c.on_enqueue(Some(&data(ip4(1), ip4(4), 200, 0)), 1500, true, MB, 0);
    c.poll(MB, 0, &mut out());
    assert!(poll_at(&mut c, 1_900_000, IV).is_empty());
    assert_eq!(c.stats().trigger_qgr, 0);
}

/// s.5.4: the second level MUST trigger when any condition holds. With
/// `qd_immediate`, QD above K_max is acted on at the first poll that sees
/// it, not at the end of the monitoring interval, so a rise that falls
/// back within one interval is not missed and the reaction does not wait
/// for the interval. Without it (the default, as in the draft's section
/// 7), QD is evaluated when the interval closes, with the deepest QD above
/// K_max seen in the interval (the excursion is acted on, later).
#[test]
fn a_crossing_of_k_max_triggers_at_once_with_qd_immediate() {
    let f = data(ip4(1), ip4(4), 200, 0);
    let mut c = CongestionPort::new(PortParams { qd_immediate: true, ..sec7() });
    c.on_enqueue(Some(&f), 1_000_000, true, 100 * MB, 0);
    assert!(poll_at(&mut c, 100 * MB, 0).is_empty(), "below K_max");
    let o = poll_at(&mut c, 130 * MB, IV / 10);
    assert_eq!(o.len(), 1, "at the crossing, a tenth into the interval");
    assert_eq!((o[0].to, o[0].info.action, o[0].info.parameter), (ip4(1), Action::RateReduce, 30));
    assert_eq!(c.stats().trigger_qd, 1);
    c.refresh_reaction(IV / 10, true);
    // Recorded as ~0 ns (shown with the histogram's resolution).
    assert!(c.reaction().count == 1 && c.reaction().max_ns < 1000, "crossing to CNP at once: {:?}", c.reaction());
    // Still above at the next poll: no second evaluation before the
    // interval closes; then the interval's own (rate-limited per flow).
    assert!(poll_at(&mut c, 131 * MB, IV / 5).is_empty());
    assert_eq!(c.stats().trigger_qd, 1);
    assert!(poll_at(&mut c, 131 * MB, IV).is_empty());
    assert_eq!((c.stats().trigger_qd, c.stats().rate_limited), (2, 1));
    // A rise that falls back within one interval, and a second flow:
    // acted on, where sampling at the interval's end misses it.
    for immediate in [true, false] {
        let mut c = CongestionPort::new(PortParams { qd_immediate: immediate, ..sec7() });
        c.on_enqueue(Some(&f), 1_000_000, true, 100 * MB, 0);
        assert!(poll_at(&mut c, 100 * MB, 0).is_empty());
        assert_eq!(poll_at(&mut c, 126 * MB, IV / 2).len(), usize::from(immediate), "immediate {immediate}");
        // At the interval's close, QD back at 110 MB: the interval mode
        // acts on the excursion it saw; the immediate mode did already.
        assert_eq!(poll_at(&mut c, 110 * MB, IV).len(), usize::from(!immediate), "immediate {immediate}");
        assert_eq!(c.stats().trigger_qd, 1);
        // Back above: a new excursion, a new trigger (immediate).
        let g = data(ip4(2), ip4(4), 201, 0);
        c.on_enqueue(Some(&g), 2_000_000, true, 112 * MB, IV);
        assert_eq!(poll_at(&mut c, 127 * MB, IV + IV / 2).len(), usize::from(immediate));
    }
}

#[test]
fn top_contributors_are_selected() {
    let mut p = sec7();
    let mut c = CongestionPort::new(p);
    let (a, b, d) = (
        data(ip4(1), ip4(9), 1, 0),
        data(ip4(2), ip4(9), 2, 0),
        data(ip4(3), ip4(9), 3, 0),
    );
    let fa = c.on_enqueue(Some(&a), 1_000_000, true, MB, 0).1;
    let fb = c.on_enqueue(Some(&b), 5_000_000, true, 6 * MB, 0).1.unwrap();
    c.on_enqueue(Some(&d), 2_000_000, true, 8 * MB, 0);
    assert_eq!(c.flow_queued(fb), Some(5 * MB));
    c.poll(130 * MB, 0, &mut out());
    let o = poll_at(&mut c, 130 * MB, IV);
    assert_eq!(o.len(), 1);
    assert_eq!(o[0].to, ip4(2));
    assert_eq!(o[0].dest_qp, 2);
    // Dequeue 4.5 MB of b: now d (2 MB) leads, then a (1 MB), b (0.5 MB).
    for _ in 0..9 {
        c.on_dequeue(Some(fb), 500_000, 130 * MB, IV);
    }
    assert_eq!(c.flow_queued(fb), Some(500_000));
    p.policy.top_flows = 2;
    let mut c2 = CongestionPort::new(p);
    c2.on_enqueue(Some(&a), 1_000_000, true, MB, 0);
    let fb2 = c2.on_enqueue(Some(&b), 5_000_000, true, 6 * MB, 0).1;
    c2.on_enqueue(Some(&d), 2_000_000, true, 8 * MB, 0);
    c2.on_dequeue(fb2, 4_500_000, 130 * MB, 0);
    c2.poll(130 * MB, 0, &mut out());
    let o = poll_at(&mut c2, 130 * MB, IV);
    let to: Vec<IpAddr> = o.iter().map(|r| r.to).collect();
    assert_eq!(to, vec![ip4(3), ip4(1)]);
    assert!(fa.is_some());
}

#[test]
fn per_flow_rate_limit_one_per_rtt() {
    let mut c = CongestionPort::new(sec7());
    c.on_enqueue(Some(&data(ip4(1), ip4(4), 200, 0)), 9000, true, 130 * MB, 0);
    c.poll(130 * MB, 0, &mut out());
    let t0 = IV;
    assert_eq!(poll_at(&mut c, 130 * MB, t0).len(), 1);
    let mut n = 0;
    let mut t = t0 + IV;
    while t < t0 + RTT {
        n += poll_at(&mut c, 130 * MB, t).len();
        t += IV;
    }
    assert_eq!(n, 0, "no second CNP within RTT_est");
    assert_eq!(c.stats().rate_limited, 99);
    // Exactly RTT_est later.
    assert_eq!(poll_at(&mut c, 130 * MB, t0 + RTT).len(), 1);
    assert_eq!(c.stats().cnp_rate_reduce, 2);
}

/// A port capped at one CNP a millisecond with a burst of 3, ten flows
/// above K_max (the first poll opens the interval).
fn capped_port() -> (CongestionPort, PortParams) {
    let mut p = sec7();
    p.cnp_port_max_pps = 1000; // one per ms
    p.cnp_port_burst = 3;
    p.policy.top_flows = 8;
    let mut c = CongestionPort::new(p);
    for i in 0..10u8 {
        c.on_enqueue(Some(&data(ip4(10 + i), ip4(4), 100 + u32::from(i), 0)), 1500 + u32::from(i), true, 130 * MB, 0);
    }
    c.poll(130 * MB, 0, &mut out());
    (c, p)
}

#[test]
fn global_port_cap() {
    let (mut c, _) = capped_port();
    let o = poll_at(&mut c, 130 * MB, IV);
    assert_eq!(o.len(), 3, "burst of 3");
    assert_eq!(c.stats().port_capped, 1);
    // 1 ms later one more token: the next flow in line (the first three
    // are rate-limited for RTT_est).
    let o = poll_at(&mut c, 130 * MB, IV + MS);
    assert_eq!(o.len(), 1);
    assert_eq!(c.stats().rate_limited, 3);
}

/// s.9: the port cap bounds what the node sends. A new cap pushed while
/// congested keeps the tokens already spent. Was: the bucket was made
/// anew, full, and let a second burst out at once.
#[test]
fn a_new_port_cap_is_no_new_burst() {
    let (mut c, p) = capped_port();
    assert_eq!(poll_at(&mut c, 130 * MB, IV).len(), 3, "burst of 3");
    c.set_params(PortParams { cnp_port_max_pps: 1000, cnp_port_burst: 6, ..p });
    assert!(poll_at(&mut c, 130 * MB, IV + 1).is_empty(), "the bucket was refilled by the change");
    // Tokens come at the configured rate: one a millisecond.
    assert_eq!(poll_at(&mut c, 130 * MB, IV + 1 + MS).len(), 1);
}

#[test]
fn resume_after_rtt_below_kmin_only_to_throttled() {
    let mut p = sec7();
    p.policy.top_flows = 1;
    let mut c = CongestionPort::new(p);
    let big = data(ip4(1), ip4(4), 200, 0);
    let small = data(ip4(2), ip4(4), 201, 0);
    let fb = c.on_enqueue(Some(&big), 50_000_000, true, 130 * MB, 0).1;
    let fs = c.on_enqueue(Some(&small), 1_000, true, 130 * MB, 0).1;
    c.poll(130 * MB, 0, &mut out());
    let o = poll_at(&mut c, 130 * MB, IV);
    assert_eq!(o.len(), 1);
    assert_eq!(o[0].to, ip4(1));
    // The queue drains below K_min at T.
    let t = 3 * MS;
    c.on_dequeue(fb, 40_000_000, 62_499_999, t);
    c.on_dequeue(fs, 1_000, 62_000_000, t + 1);
    assert!(poll_at(&mut c, 62 * MB, t + RTT - 1).is_empty());
    let o = poll_at(&mut c, 30 * MB, t + RTT);
    assert_eq!(o.len(), 1, "Resume only to the throttled flow");
    assert_eq!(o[0].to, ip4(1));
    assert_eq!(o[0].info.action, Action::Resume);
    assert_eq!(o[0].info.parameter, 50);
    assert_eq!(c.stats().resumes(), 1);
    // Only once.
    assert!(poll_at(&mut c, 30 * MB, t + RTT + IV).is_empty());
    assert!(poll_at(&mut c, 30 * MB, t + 3 * RTT).is_empty());
}

#[test]
fn excursion_above_kmin_restarts_resume_clock() {
    let mut c = CongestionPort::new(sec7());
    let f = c.on_enqueue(Some(&data(ip4(1), ip4(4), 200, 0)), 50_000_000, true, 130 * MB, 0).1;
    c.poll(130 * MB, 0, &mut out());
    assert_eq!(poll_at(&mut c, 130 * MB, IV).len(), 1);
    c.on_dequeue(f, 1_000, 60 * MB, MS);
    // Back at K_min at 5 ms (an enqueue observes it).
    c.on_enqueue(None, 1_000, true, 62_500_000, 5 * MS);
    c.on_dequeue(None, 1_000, 60 * MB, 6 * MS);
    assert!(poll_at(&mut c, 60 * MB, MS + RTT).is_empty());
    assert!(poll_at(&mut c, 60 * MB, 6 * MS + RTT - 1).is_empty());
    assert_eq!(poll_at(&mut c, 60 * MB, 6 * MS + RTT).len(), 1);
}

#[test]
fn severity_policy_rate_reduce_scales_then_pause() {
    // (QD, action, parameter, level) with a 184 MB buffer, K_min 62.5 MB.
    let cases = [
        (130 * MB, Action::RateReduce, 30, 180),
        (150 * MB, Action::RateReduce, 35, 208),
        // 0.9 * 184 MB = 165.6 MB: Pause for (QD - K_min) at 100 Gbit/s.
        (165 * MB, Action::RateReduce, 38, 229),
        (170 * MB, Action::Pause, 8600, 236),
        (184 * MB, Action::Pause, 9720, 255),
        (500 * MB, Action::Pause, 35_000, 255),
    ];
    for (qd, action, param, level) in cases {
        let mut c = CongestionPort::new(sec7());
        c.on_enqueue(Some(&data(ip4(1), ip4(4), 200, 0)), 1500, true, qd, 0);
        c.poll(qd, 0, &mut out());
        let o = poll_at(&mut c, qd, IV);
        assert_eq!(o.len(), 1, "{qd}");
        let i = o[0].info;
        assert_eq!((i.action, i.parameter, i.congestion_level), (action, param, level), "QD {qd}");
        assert_eq!((i.metric_type, i.metric_value), (MetricType::QueueDepthKb, (qd / 1000) as u32));
        assert!(i.validate().is_ok());
    }
    // Percentage bounds and the Pause cap.
    let mut p = sec7();
    p.policy.rate_reduce_max_pct = 33;
    p.policy.max_pause_us = 5000;
    let mut c = CongestionPort::new(p);
    c.on_enqueue(Some(&data(ip4(1), ip4(4), 200, 0)), 1500, true, 150 * MB, 0);
    c.poll(150 * MB, 0, &mut out());
    assert_eq!(poll_at(&mut c, 150 * MB, IV)[0].info.parameter, 33);
    assert_eq!(poll_at(&mut c, 170 * MB, IV + RTT)[0].info.parameter, 5000);
}

#[test]
fn resume_waits_for_the_per_flow_interval() {
    // A Notify (EMR) while QD is still just below K_min... then QD stays
    // low: the Resume must still respect one CNP per RTT_est.
    let mut c = CongestionPort::new(PortParams {
        v_ecn: 0.5,
        ..sec7()
    });
    let f = data(ip4(1), ip4(4), 200, 0);
    c.poll(70 * MB, 0, &mut out());
    c.on_enqueue(Some(&f), 1500, true, 70 * MB, 1);
    // The queue drops below K_min just before the interval closes.
    c.on_dequeue(None, 1, 60 * MB, 2);
    let o = poll_at(&mut c, 60 * MB, IV);
    assert_eq!(o[0].info.action, Action::Notify);
    // Below K_min since t=2: RTT_est later, but the Notify left at IV.
    assert!(poll_at(&mut c, 60 * MB, 2 + RTT).is_empty());
    assert!(poll_at(&mut c, 60 * MB, IV + RTT - 1).is_empty());
    let o = poll_at(&mut c, 60 * MB, IV + RTT);
    assert_eq!(o.len(), 1);
    assert_eq!(o[0].info.action, Action::Resume);
}

// ------------------------------------------------------------ s.5.7

/// A downstream node (N2): the flow's arrival rate fell between the last
/// two observation windows; QD above K_max.
fn n2_with_falling_rate(suppression: bool) -> (CongestionPort, u64) {
    let mut c = CongestionPort::new(PortParams {
        suppression,
        ..sec7()
    });
    let f = data(ip4(1), ip4(4), 200, 0);
    // Window [0, 10 ms): 10 MB; [10 ms, 20 ms): 5 MB.
    for i in 0..10 {
        c.on_enqueue(Some(&f), 1_000_000, true, 100 * MB, i * MS);
    }
    for i in 0..5 {
        c.on_enqueue(Some(&f), 1_000_000, true, 100 * MB, RTT + i * MS);
    }
    let t = 2 * RTT;
    c.poll(126 * MB, t - IV, &mut out());
    (c, t)
}

/// Poll every interval from `t + IV` through `t + RTT` with the queue at
/// `qd`: the CNPs of the window after a deferral at `t`.
fn poll_window_after(c: &mut CongestionPort, t: u64, qd: u64) -> Vec<CnpRequest> {
    let mut o = Vec::with_capacity(4);
    let mut tt = t + IV;
    while tt <= t + RTT {
        c.poll(qd, tt, &mut o);
        tt += IV;
    }
    o
}

#[test]
fn suppression_defers_when_arrival_rate_fell() {
    let (mut c, t) = n2_with_falling_rate(true);
    assert!(poll_at(&mut c, 126 * MB, t).is_empty());
    assert_eq!(c.stats().suppressed, 1);
    // Still deferring within the observation window, not worsening.
    assert!(poll_at(&mut c, 126 * MB, t + IV).is_empty());
    // `show flows` says so while the deferral is in force, not after it
    // (the flow's flag stays until it is evaluated again).
    let deferring = |c: &CongestionPort, now: u64| {
        let mut scan = TopScan::default();
        scan.start(4);
        while !c.scan_top(&mut scan, 16) {}
        let mut v = Vec::with_capacity(MAX_SHOW_FLOWS);
        c.top_flows(&scan, now, &mut v);
        v.iter().any(|f| f.deferring)
    };
    assert!(deferring(&c, t + IV));
    assert!(!deferring(&c, t + 10 * RTT));
    // Without suppression the same node sends.
    let (mut c, t) = n2_with_falling_rate(false);
    assert_eq!(poll_at(&mut c, 126 * MB, t).len(), 1);
    assert_eq!(c.stats().suppressed, 0);
}

#[test]
fn escalation_when_congestion_keeps_worsening() {
    let (mut c, t) = n2_with_falling_rate(true);
    assert!(poll_at(&mut c, 126 * MB, t).is_empty());
    // Unsuppressed decision at this QD for comparison: Rate Reduce.
    let (mut plain, tp) = n2_with_falling_rate(false);
    let base = poll_at(&mut plain, 140 * MB, tp)[0].info;
    assert_eq!(base.action, Action::RateReduce);
    // One window later the queue is deeper: stricter action, higher level.
    let mut o = Vec::with_capacity(4);
    let mut tt = t + IV;
    while tt < t + RTT {
        c.poll(140 * MB, tt, &mut o);
        tt += IV;
    }
    assert!(o.is_empty());
    c.poll(140 * MB, t + RTT, &mut o);
    assert_eq!(o.len(), 1);
    assert_eq!(o[0].info.action, Action::Pause);
    assert!(o[0].info.parameter > 0);
    assert_eq!(o[0].info.congestion_level, base.congestion_level + 32);
    assert_eq!(c.stats().escalated, 1);
}

/// With a monitoring interval longer than two observation windows the
/// next evaluation after a deferral comes more than two windows later: the
/// deferral must still be there for it, or a downstream node whose
/// congestion keeps worsening would never escalate (s.5.7 MUST).
#[test]
fn escalation_with_an_interval_longer_than_two_windows() {
    let iv = 25 * MS;
    let mut c = CongestionPort::new(PortParams { suppression: true, interval_ns: iv, ..sec7() });
    let f = data(ip4(1), ip4(4), 200, 0);
    // Window [0, 10 ms): 10 MB; [10 ms, 20 ms): 5 MB: the rate fell.
    for i in 0..10 {
        c.on_enqueue(Some(&f), 1_000_000, true, 100 * MB, i * MS);
    }
    for i in 0..5 {
        c.on_enqueue(Some(&f), 1_000_000, true, 100 * MB, RTT + i * MS);
    }
    c.poll(126 * MB, 0, &mut out());
    let t = iv;
    assert!(poll_at(&mut c, 126 * MB, t).is_empty());
    assert_eq!(c.stats().suppressed, 1);
    // The next evaluation, one interval (2.5 windows) later, with the
    // queue deeper: escalated.
    let o = poll_at(&mut c, 140 * MB, t + iv);
    assert_eq!(o.len(), 1, "{:?}", c.stats());
    assert_eq!(o[0].info.action, Action::Pause);
    assert_eq!(c.stats().escalated, 1);
}

/// Escalating a Pause (s.5.7: "a stricter action") asks for a longer one.
#[test]
fn escalation_of_a_pause_is_a_longer_pause() {
    let (mut c, t) = n2_with_falling_rate(true);
    assert!(poll_at(&mut c, 126 * MB, t).is_empty());
    // At 170 MB (above pause_at * B = 165.6 MB) the plain decision is a
    // Pause of (170 - 62.5) MB * 8 / 100 Gb/s = 8600 us.
    let (mut plain, tp) = n2_with_falling_rate(false);
    let base = poll_at(&mut plain, 170 * MB, tp)[0].info;
    assert_eq!((base.action, base.parameter), (Action::Pause, 8600));
    let o = poll_window_after(&mut c, t, 170 * MB);
    assert_eq!(o.len(), 1);
    assert_eq!((o[0].info.action, o[0].info.parameter), (Action::Pause, 2 * 8600), "twice as long");
    assert!(o[0].info.congestion_level > base.congestion_level);
    assert_eq!(c.stats().escalated, 1);
}

/// At the ceiling (a pause already as long as `max_pause_us`) an
/// escalation cannot be stricter in action: it is sent all the same, with
/// the higher level, and counted (`cnp-escalation-saturated`).
#[test]
fn escalation_at_the_ceiling_is_sent_and_counted() {
    let (mut c, t) = n2_with_falling_rate(true);
    let mut p = *c.params();
    p.policy.max_pause_us = 8600;
    c.set_params(p);
    assert!(poll_at(&mut c, 126 * MB, t).is_empty());
    let o = poll_window_after(&mut c, t, 170 * MB);
    assert_eq!(o.len(), 1);
    assert_eq!((o[0].info.action, o[0].info.parameter), (Action::Pause, 8600), "no longer than the longest pause");
    assert_eq!((c.stats().escalated, c.stats().escalation_saturated), (1, 1));
    // Below the ceiling the same escalation is not counted as saturated.
    let (mut c, t) = n2_with_falling_rate(true);
    assert!(poll_at(&mut c, 126 * MB, t).is_empty());
    assert_eq!(poll_window_after(&mut c, t, 170 * MB).len(), 1);
    assert_eq!((c.stats().escalated, c.stats().escalation_saturated), (1, 0));
}

#[test]
fn escalation_from_notify_to_rate_reduce() {
    // QD below K_max (EMR trigger: Notify) at deferral; worse later.
    let mut c = CongestionPort::new(PortParams {
        suppression: true,
        v_ecn: 0.5,
        ..sec7()
    });
    let f = data(ip4(1), ip4(4), 200, 0);
    for i in 0..10 {
        c.on_enqueue(Some(&f), 1_000_000, true, 80 * MB, i * MS);
    }
    for i in 0..5 {
        c.on_enqueue(Some(&f), 1_000_000, true, 80 * MB, RTT + i * MS);
    }
    let t = 2 * RTT;
    c.poll(80 * MB, t - IV, &mut out());
    c.on_enqueue(None, 1, true, 80 * MB, t - 1);
    assert!(poll_at(&mut c, 80 * MB, t).is_empty());
    assert_eq!(c.stats().suppressed, 1);
    c.on_enqueue(None, 1, true, 100 * MB, t + RTT - 1);
    let o = poll_at(&mut c, 100 * MB, t + RTT);
    assert_eq!(o.len(), 1);
    assert_eq!(o[0].info.action, Action::RateReduce);
    // Level of 100 MB (139) + 32.
    assert_eq!(o[0].info.congestion_level, 139 + 32);
    assert_eq!(c.stats().escalated, 1);
}

#[test]
fn no_escalation_when_congestion_eases_and_rate_recovered() {
    let (mut c, t) = n2_with_falling_rate(true);
    assert!(poll_at(&mut c, 130 * MB, t).is_empty());
    // Next window: the flow's rate recovers (no further fall) and QD is
    // lower than at the deferral: a normal Rate Reduce, no escalation.
    let f = data(ip4(1), ip4(4), 200, 0);
    for i in 0..6 {
        c.on_enqueue(Some(&f), 1_000_000, true, 127 * MB, t + i * MS);
    }
    let o = poll_at(&mut c, 127 * MB, t + RTT);
    assert_eq!(o.len(), 1);
    assert_eq!(o[0].info.action, Action::RateReduce);
    assert_eq!(c.stats().escalated, 0);
}

/// s.5.7's observation window is configurable: with windows of half an
/// RTT the same traffic shows a falling rate (and the node defers) that
/// one RTT-long window does not.
#[test]
fn the_observation_window_is_configurable() {
    let run = |window_ns: u64| {
        let mut p = PortParams { suppression: true, ..sec7() };
        p.policy.observation_window_ns = window_ns;
        assert_eq!(p.observation_window_ns(), if window_ns == 0 { RTT } else { window_ns });
        let mut c = CongestionPort::new(p);
        let f = data(ip4(1), ip4(4), 200, 0);
        // 10 MB in [0, 5 ms), 5 MB in [5 ms, 10 ms), 1 MB in [10 ms, 15 ms).
        for i in 0..10 {
            c.on_enqueue(Some(&f), 1_000_000, true, 100 * MB, i * MS / 2);
        }
        for i in 0..5 {
            c.on_enqueue(Some(&f), 1_000_000, true, 100 * MB, RTT / 2 + i * MS);
        }
        c.on_enqueue(Some(&f), 1_000_000, true, 100 * MB, RTT + MS);
        c.poll(126 * MB, 3 * RTT / 2 - IV, &mut out());
        let o = poll_at(&mut c, 126 * MB, 3 * RTT / 2);
        (o.len(), c.stats().suppressed)
    };
    assert_eq!(run(0), (1, 0), "RTT-long windows: [0, 10 ms) then [10, 20): no fall seen yet");
    assert_eq!(run(RTT / 2), (0, 1), "5 ms windows: 10 MB then 5 MB, deferred");
    let bad = PortParams { policy: Policy { observation_window_ns: 10_000_000_001, ..Policy::default() }, ..sec7() };
    assert!(bad.validate().unwrap_err().starts_with("policy.observation_window_ns = 10000000001"));
}

/// A deferral belongs to its episode: congestion that comes back much
/// later is judged afresh, not escalated against the old queue depth.
#[test]
fn a_stale_deferral_does_not_escalate_a_later_episode() {
    let (mut c, t) = n2_with_falling_rate(true);
    assert!(poll_at(&mut c, 126 * MB, t).is_empty());
    assert_eq!(c.stats().suppressed, 1);
    // The queue drains, the flow keeps sending at a steady rate; ten
    // RTTs later congestion is back, deeper than at the deferral.
    let f = data(ip4(1), ip4(4), 200, 0);
    let later = t + 10 * RTT;
    for w in 1..=10u64 {
        for i in 0..5 {
            c.on_enqueue(Some(&f), 1_000_000, true, 10 * MB, t + (w - 1) * RTT + i * MS);
        }
        c.poll(10 * MB, t + w * RTT - IV, &mut out());
    }
    let o = poll_at(&mut c, 140 * MB, later);
    assert_eq!(o.len(), 1, "a fresh decision");
    assert_eq!(o[0].info.action, Action::RateReduce, "not escalated to Pause");
    assert_eq!(c.stats().escalated, 0);
}

/// EMR is the fraction of *data* packets marked (s.5.3.1): RoCEv2 ACKs
/// and CNPs in the queue count neither way.
#[test]
fn emr_counts_data_packets_only() {
    let mut c = CongestionPort::new(PortParams { v_ecn: 0.9, ..sec7() });
    let (a, b) = (ip4(1), ip4(4));
    // Between K_min and K_max: 10 data packets marked, and 30 ACKs
    // (ECN-capable, marked too, but not data).
    for i in 0..10 {
        c.on_enqueue(Some(&data(a, b, 200, i)), 1000, true, 100 * MB, 0);
    }
    for i in 0..30 {
        c.on_enqueue(Some(&ack(b, a, 100, i)), 60, true, 100 * MB, 0);
    }
    // And 10 data packets that are not ECN-capable.
    for i in 10..20 {
        c.on_enqueue(Some(&data(a, b, 200, i)), 1000, false, 100 * MB, 0);
    }
    c.poll(100 * MB, 0, &mut out());
    poll_at(&mut c, 100 * MB, IV);
    assert_eq!(c.stats().marked, 40);
    assert!((c.stats().emr - 0.5).abs() < 1e-9, "10 of 20 data packets: {}", c.stats().emr);
}

#[test]
fn own_cnp_does_not_cause_deferral() {
    // Rate falls after *our* CNP: no deferral, the next CNP goes out after
    // RTT_est.
    let mut c = CongestionPort::new(PortParams {
        suppression: true,
        ..sec7()
    });
    let f = data(ip4(1), ip4(4), 200, 0);
    for i in 0..10 {
        c.on_enqueue(Some(&f), 1_000_000, true, 130 * MB, i * MS);
    }
    c.poll(130 * MB, 0, &mut out());
    assert_eq!(poll_at(&mut c, 130 * MB, IV).len(), 1);
    for i in 0..3 {
        c.on_enqueue(Some(&f), 1_000_000, true, 130 * MB, RTT + i * MS);
    }
    assert_eq!(poll_at(&mut c, 130 * MB, 2 * RTT + IV).len(), 1);
    assert_eq!(c.stats().suppressed, 0);
}

// ------------------------------------------------------------ s.5.8

#[test]
fn adaptive_policy_moves_kmin_within_bounds() {
    let a = AdaptivePolicy::default();
    let p = PortParams {
        adaptive: Some(a),
        ..sec7()
    };
    assert_eq!(p.validate(), Ok(()));
    let mut c = CongestionPort::new(p);
    let mut fixed = CongestionPort::new(sec7());
    // A standing queue of 100 MB (above K_min, below K_max).
    let mut t = 0;
    for _ in 0..200 {
        c.poll(100 * MB, t, &mut out());
        fixed.poll(100 * MB, t, &mut out());
        t += IV;
    }
    let floor = (0.25 * 125e6) as u64;
    assert_eq!(c.thresholds().0, floor, "lowered to the floor");
    assert_eq!(fixed.thresholds().0, 62_500_000, "off by default");
    // Marking follows the effective K_min.
    assert!(c.on_enqueue(None, 100, true, 40 * MB, t).0);
    assert!(!fixed.on_enqueue(None, 100, true, 40 * MB, t).0);
    // An empty queue brings it back to the configured value, not beyond.
    for _ in 0..400 {
        c.poll(0, t, &mut out());
        t += IV;
    }
    assert_eq!(c.thresholds(), (62_500_000, 125 * MB));
}

// ------------------------------------------------------------ metrics, format, QPs

#[test]
fn zero_metrics_hides_queue_state() {
    let mut c = CongestionPort::new(PortParams {
        zero_metrics: true,
        ..sec7()
    });
    c.on_enqueue(Some(&data(ip4(1), ip4(4), 200, 0)), 1500, true, 130 * MB, 0);
    c.poll(130 * MB, 0, &mut out());
    let o = poll_at(&mut c, 130 * MB, IV);
    assert_eq!(o[0].info.action, Action::RateReduce);
    assert_eq!(o[0].info.parameter, 30);
    assert_eq!((o[0].info.metric_type, o[0].info.metric_value), (MetricType::Unspecified, 0));
    // build_cnp enforces it too on a request that carries metrics.
    let mut req = o[0];
    req.src_qp = Some(100);
    req.info.metric_type = MetricType::QueueDepthKb;
    req.info.metric_value = 130_000;
    let mut buf = [0u8; 256];
    let n = build_cnp(&req, ip4(2), &Params::DEFAULT, true, &mut buf).unwrap();
    let (_, info) = parse_cnp(&buf[..n], &Params::DEFAULT).unwrap();
    assert_eq!((info.metric_type, info.metric_value), (MetricType::Unspecified, 0));
    assert_eq!((info.action, info.parameter), (Action::RateReduce, 30));
    // The source model takes the ICMPv6 format's Code 0 (flow-level) only
    // (s.6.1): another Code, checksum patched (RFC 1624), is refused.
    let mut req6 = req;
    req6.to = "2001:db8:1::2".parse().unwrap();
    req6.format = CnpFormat::Icmpv6;
    let n = build_cnp(&req6, "2001:db8:9::1".parse().unwrap(), &Params::DEFAULT, true, &mut buf).unwrap();
    assert!(parse_cnp(&buf[..n], &Params::DEFAULT).is_some());
    let mut other = buf[..n].to_vec();
    assert_eq!((other[40], other[41]), (Params::DEFAULT.icmpv6_lhcnp_type, 0));
    other[41] = 254;
    let sum = u16::from_be_bytes([other[42], other[43]]);
    let sum = !crate::wire::checksum::fold(crate::wire::checksum::combine(u32::from(!sum), 254));
    other[42..44].copy_from_slice(&sum.to_be_bytes());
    assert_eq!(parse_cnp(&other, &Params::DEFAULT), None);
}

/// The CNP format per source (s.4, s.10.5): the longest configured prefix,
/// else the port's default; an IPv4 source only ever gets the RoCEv2
/// format, and only when configured for it.
#[test]
fn cnp_format_per_source_and_ipv4_only_where_configured() {
    let params = PortParams {
        default_format: CnpFormat::Icmpv6,
        policy: Policy {
            top_flows: 4,
            ..sec7().policy
        },
        ..sec7()
    };
    let run = |formats: &[(ipnet::IpNet, CnpFormat)]| {
        let mut c = CongestionPort::new(params);
        c.set_source_formats(formats);
        // Bytes queued in this order of size: IPv4 .1, IPv6 .1, IPv4 .2,
        // IPv6 .2 (all above K_max).
        c.on_enqueue(Some(&data(ip4(1), ip4(4), 200, 0)), 4000, true, 130 * MB, 0);
        c.on_enqueue(Some(&data(ip6(1), ip6(4), 300, 0)), 3000, true, 130 * MB, 0);
        c.on_enqueue(Some(&data(ip4(2), ip4(4), 201, 0)), 2000, true, 130 * MB, 0);
        c.on_enqueue(Some(&data(ip6(2), ip6(4), 301, 0)), 1000, true, 130 * MB, 0);
        c.poll(130 * MB, 0, &mut out());
        let o = poll_at(&mut c, 130 * MB, IV);
        (o.iter().map(|r| (r.to, r.format)).collect::<Vec<_>>(), c.stats().format_unconfigured)
    };
    let net = |s: &str| s.parse::<ipnet::IpNet>().unwrap();
    // Nothing configured: IPv6 sources get the port's ICMPv6 format, IPv4
    // sources nothing (not sent, counted; the next flows are served).
    assert_eq!(run(&[]), (vec![(ip6(1), CnpFormat::Icmpv6), (ip6(2), CnpFormat::Icmpv6)], 2));
    // 10.0.0.1/32 configured for RoCEv2; 2001:db8::2 in a RoCEv2 /127
    // inside an ICMPv6 /64 (the longest prefix wins).
    let f = [
        (net("10.0.0.1/32"), CnpFormat::Roce),
        (net("2001:db8::/64"), CnpFormat::Icmpv6),
        (net("2001:db8::2/127"), CnpFormat::Roce),
    ];
    assert_eq!(
        run(&f),
        (vec![(ip4(1), CnpFormat::Roce), (ip6(1), CnpFormat::Icmpv6), (ip6(2), CnpFormat::Roce)], 1)
    );
    // An ICMPv6 entry for IPv4 sources is ignored.
    assert_eq!(run(&[(net("10.0.0.0/24"), CnpFormat::Icmpv6)]).1, 2);
    // A port whose default is RoCEv2: every source is configured for it.
    let mut c = CongestionPort::new(PortParams { default_format: CnpFormat::Roce, ..params });
    c.on_enqueue(Some(&data(ip4(1), ip4(4), 200, 0)), 4000, true, 130 * MB, 0);
    c.poll(130 * MB, 0, &mut out());
    let o = poll_at(&mut c, 130 * MB, IV);
    assert_eq!((o[0].to, o[0].format), (ip4(1), CnpFormat::Roce));
    assert_eq!(c.stats().format_unconfigured, 0);
    // And build_cnp refuses ICMPv6 towards IPv4.
    let mut r = o[0];
    r.format = CnpFormat::Icmpv6;
    let mut buf = [0u8; 256];
    assert!(build_cnp(&r, ip4(2), &Params::DEFAULT, false, &mut buf).is_err());
}

#[test]
fn source_qp_from_reverse_traffic() {
    let mut c = CongestionPort::new(sec7());
    let (a, b) = (ip4(1), ip4(4));
    let f1 = c.on_enqueue(Some(&data(a, b, 200, 1000)), 1500, true, 130 * MB, 0).1;
    let f2 = c.on_enqueue(Some(&data(a, b, 201, 5000)), 1500, true, 130 * MB, 0).1;
    assert!(f1.is_some() && f2.is_some());
    assert_eq!(c.flow_source_qp(a, b, 200), None);
    // An ACK from b to a naming QP 101, acknowledging PSN 4990: the flow
    // at PSN 5000 (QP 201).
    c.on_reverse(&ack(b, a, 101, 4990), 1);
    assert_eq!(c.flow_source_qp(a, b, 201), Some(101));
    assert_eq!(c.flow_source_qp(a, b, 200), None);
    c.on_reverse(&ack(b, a, 100, 995), 2);
    assert_eq!(c.flow_source_qp(a, b, 200), Some(100));
    assert_eq!(c.stats().reverse_learned, 2);
    // A reverse packet for unknown hosts.
    c.on_reverse(&ack(ip4(7), ip4(8), 5, 0), 3);
    assert_eq!(c.stats().reverse_unmatched, 1);
    // ACKs do not create flows.
    c.on_enqueue(Some(&ack(b, a, 100, 995)), 60, true, 0, 4);
    assert_eq!(c.stats().flows_active, 2);
}

#[test]
fn source_qp_single_flow_and_ambiguity() {
    let mut c = CongestionPort::new(sec7());
    let (a, b) = (ip6(1), ip6(4));
    c.on_enqueue(Some(&data(a, b, 200, 10)), 1500, true, 0, 0);
    // One flow between the hosts: an ACK of a PSN it did not send (9e6,
    // the flow is at 10: another QP of the two hosts) teaches nothing...
    c.on_reverse(&ack(b, a, 76, 9_000_000), 1);
    assert_eq!(c.flow_source_qp(a, b, 200), None);
    assert_eq!(c.stats().reverse_unmatched, 1);
    // ... one of a PSN it sent does.
    c.on_reverse(&ack(b, a, 77, 8), 1);
    assert_eq!(c.flow_source_qp(a, b, 200), Some(77));
    // A later ACK of the flow with another QP (the QP was created anew)
    // replaces it: the pair has one flow and the PSN is the flow's.
    c.on_reverse(&ack(b, a, 79, 10), 1);
    assert_eq!(c.flow_source_qp(a, b, 200), Some(79));
    // Two flows at the same PSN: ambiguous.
    let mut c = CongestionPort::new(sec7());
    c.on_enqueue(Some(&data(a, b, 200, 10)), 1500, true, 0, 0);
    c.on_enqueue(Some(&data(a, b, 201, 10)), 1500, true, 0, 0);
    c.on_reverse(&ack(b, a, 77, 5), 1);
    assert_eq!(c.stats().reverse_ambiguous, 1);
    assert_eq!(c.flow_source_qp(a, b, 200), None);
    assert_eq!(c.flow_source_qp(a, b, 201), None);
}

/// A standard RoCEv2 CNP from the destination names the forward flow's
/// source QP: with one flow between the hosts (without a source QP yet)
/// it is learned, whatever its PSN, also for a UC flow (no responses at all), counted apart from
/// responses; the Long-haul CNPs that follow name it.
#[test]
fn source_qp_from_cnp_single_flow() {
    let mut c = CongestionPort::new(sec7());
    let (a, b) = (ip4(1), ip4(4));
    let uc = RoceInfo { opcode: opcode::UC | opcode::SEND_ONLY, ..data(a, b, 200, 0) };
    assert!(c.on_enqueue(Some(&uc), 4000, true, 130 * MB, 0).1.is_some());
    assert!(std_cnp(b, a, 77).teaches_source_qp());
    c.on_reverse(&RoceInfo { psn: 12345, ..std_cnp(b, a, 77) }, 1);
    assert_eq!(c.flow_source_qp(a, b, 200), Some(77));
    let st = c.stats();
    assert_eq!((st.reverse_learned_from_cnp, st.reverse_learned, st.reverse_unmatched, st.reverse_ambiguous), (1, 0, 0, 0));
    // Again: already known, nothing counted.
    c.on_reverse(&std_cnp(b, a, 77), 2);
    assert_eq!(c.stats().reverse_learned_from_cnp, 1);
    // The Long-haul CNP names the learned QP.
    c.poll(130 * MB, 0, &mut out());
    let o = poll_at(&mut c, 130 * MB, IV);
    assert_eq!((o[0].src_qp, o[0].info.source_qp), (Some(77), 77));
    assert_eq!(c.stats().source_qp_unknown, 0);
    // CNPs do not create flows, and one for hosts without flows is
    // unmatched.
    c.on_enqueue(Some(&std_cnp(b, a, 77)), 60, true, 130 * MB, IV + 1);
    assert_eq!(c.stats().flows_active, 1);
    c.on_reverse(&std_cnp(ip4(7), ip4(8), 5), IV + 2);
    assert_eq!(c.stats().reverse_unmatched, 1);
    // A CNP naming another QP does not replace a learned one (its PSN
    // cannot tell this flow from another QP of the two hosts on another
    // path): the QP is none of the pair's flows', unmatched.
    c.on_reverse(&std_cnp(b, a, 78), 5);
    assert_eq!(c.flow_source_qp(a, b, 200), Some(77));
    assert_eq!((c.stats().reverse_learned_from_cnp, c.stats().reverse_unmatched), (1, 2));
}

/// Two flows between the hosts, one of which knows its source QP: a CNP
/// naming another QP is for the other one.
#[test]
fn source_qp_from_cnp_the_only_unknown_flow_of_the_pair() {
    let mut c = CongestionPort::new(sec7());
    let (a, b) = (ip6(1), ip6(4));
    c.on_enqueue(Some(&data(a, b, 200, 1000)), 1500, true, 0, 0);
    c.on_enqueue(Some(&data(a, b, 201, 5000)), 1500, true, 0, 0);
    // QP 100 learned for the flow to 200 from an ACK.
    c.on_reverse(&ack(b, a, 100, 995), 1);
    assert_eq!((c.flow_source_qp(a, b, 200), c.flow_source_qp(a, b, 201)), (Some(100), None));
    // A CNP for QP 100: already known, nothing changes.
    c.on_reverse(&std_cnp(b, a, 100), 2);
    assert_eq!((c.flow_source_qp(a, b, 200), c.flow_source_qp(a, b, 201)), (Some(100), None));
    assert_eq!(c.stats().reverse_learned_from_cnp, 0);
    // A CNP for QP 101: the flow to 201, the only one without a QP.
    c.on_reverse(&std_cnp(b, a, 101), 3);
    assert_eq!((c.flow_source_qp(a, b, 200), c.flow_source_qp(a, b, 201)), (Some(100), Some(101)));
    let st = c.stats();
    assert_eq!((st.reverse_learned, st.reverse_learned_from_cnp, st.reverse_ambiguous, st.reverse_unmatched), (1, 1, 0, 0));
    // Every flow of the pair knows its QP: a CNP naming yet another one
    // belongs to none of them (unmatched), and changes nothing.
    c.on_reverse(&std_cnp(b, a, 102), 4);
    assert_eq!((c.flow_source_qp(a, b, 200), c.flow_source_qp(a, b, 201)), (Some(100), Some(101)));
    assert_eq!((c.stats().reverse_learned_from_cnp, c.stats().reverse_unmatched), (1, 1));
}

/// Two flows of the pair without a source QP: the CNP's PSN cannot tell
/// them apart, so nothing is learned (`reverse_ambiguous`); once a
/// response teaches one, the next CNP goes to the other.
#[test]
fn source_qp_from_cnp_ambiguous() {
    let mut c = CongestionPort::new(sec7());
    let (a, b) = (ip4(1), ip4(4));
    c.on_enqueue(Some(&data(a, b, 200, 1000)), 1500, true, 0, 0);
    c.on_enqueue(Some(&data(a, b, 201, 5000)), 1500, true, 0, 0);
    // PSN 995 would point at the flow to 200 for an ACK: not for a CNP.
    c.on_reverse(&RoceInfo { psn: 995, ..std_cnp(b, a, 100) }, 1);
    assert_eq!((c.flow_source_qp(a, b, 200), c.flow_source_qp(a, b, 201)), (None, None));
    let st = c.stats();
    assert_eq!((st.reverse_ambiguous, st.reverse_learned_from_cnp, st.reverse_unmatched), (1, 0, 0));
    c.on_reverse(&ack(b, a, 101, 4990), 2);
    c.on_reverse(&std_cnp(b, a, 100), 3);
    assert_eq!((c.flow_source_qp(a, b, 200), c.flow_source_qp(a, b, 201)), (Some(100), Some(101)));
    assert_eq!((c.stats().reverse_learned, c.stats().reverse_learned_from_cnp, c.stats().reverse_ambiguous), (1, 1, 1));
}

/// A Long-haul CNP in RoCEv2 format (opcode 0x81 with the E bit) comes
/// from a congestion point, not from the destination: never learned from,
/// not even for the pair's only flow, and not counted.
#[test]
fn source_qp_not_from_long_haul_cnps() {
    let mut c = CongestionPort::new(sec7());
    let (a, b) = (ip4(1), ip4(4));
    c.on_enqueue(Some(&data(a, b, 200, 0)), 1500, true, 0, 0);
    let lh = RoceInfo { ext: true, ..std_cnp(b, a, 77) };
    assert!(!lh.teaches_source_qp());
    c.on_reverse(&lh, 1);
    assert_eq!(c.flow_source_qp(a, b, 200), None);
    let st = c.stats();
    assert_eq!((st.reverse_learned, st.reverse_learned_from_cnp, st.reverse_unmatched, st.reverse_ambiguous, st.reverse_walk_limited), (0, 0, 0, 0, 0));
    // The same CNP without the E bit is.
    c.on_reverse(&RoceInfo { ext: false, ..lh }, 2);
    assert_eq!(c.flow_source_qp(a, b, 200), Some(77));
}

/// A configured source QP is never overwritten by a CNP, and it counts as
/// known: the pair's other flow, the only one without a QP, takes the
/// CNP's.
#[test]
fn source_qp_from_cnp_keeps_configured_ones() {
    let mut c = CongestionPort::new(sec7());
    let (a, b) = (ip4(1), ip4(4));
    c.set_source_qp(a, b, 200, 55);
    c.on_enqueue(Some(&data(a, b, 200, 0)), 1500, true, 0, 0);
    // The pair's only flow, configured: not overwritten.
    c.on_reverse(&std_cnp(b, a, 77), 1);
    assert_eq!(c.flow_source_qp(a, b, 200), Some(55));
    assert_eq!((c.stats().reverse_learned_from_cnp, c.stats().reverse_unmatched), (0, 1));
    // A second flow without a QP: it takes the CNP's.
    c.on_enqueue(Some(&data(a, b, 201, 0)), 1500, true, 0, 2);
    c.on_reverse(&std_cnp(b, a, 77), 3);
    assert_eq!((c.flow_source_qp(a, b, 200), c.flow_source_qp(a, b, 201)), (Some(55), Some(77)));
    assert_eq!(c.stats().reverse_learned_from_cnp, 1);
    // Configuration then wins over what the CNP taught.
    c.set_source_qp(a, b, 201, 66);
    c.on_reverse(&std_cnp(b, a, 88), 4);
    assert_eq!((c.flow_source_qp(a, b, 200), c.flow_source_qp(a, b, 201)), (Some(55), Some(66)));
    assert_eq!((c.stats().reverse_learned_from_cnp, c.stats().reverse_unmatched), (1, 2));
}

/// CNPs walk the pair's flows within the same bound as responses.
#[test]
fn source_qp_from_cnp_walk_is_bounded() {
    use crate::congestion::MAX_REVERSE_WALK;
    let (a, b) = (ip6(1), ip6(4));
    let pair = |n: u32, known: u32| {
        let mut c = CongestionPort::new(PortParams { flow_capacity: 1024, ..sec7() });
        for k in 0..n {
            c.on_enqueue(Some(&data(a, b, 300 + k, k * 1000)), 1000, true, 0, 0);
        }
        // All but the flow to 300 + known have a configured source QP.
        for k in (0..n).filter(|&k| k != known) {
            c.set_source_qp(a, b, 300 + k, 1000 + k);
        }
        c
    };
    let n = MAX_REVERSE_WALK as u32;
    // The flow without a QP is the pair's second (the walk's last: the
    // pair's first flow, then the newest).
    let mut c = pair(n, 1);
    c.on_reverse(&std_cnp(b, a, 77), 1);
    assert_eq!(c.flow_source_qp(a, b, 301), Some(77));
    assert_eq!((c.stats().reverse_learned_from_cnp, c.stats().reverse_walk_limited), (1, 0));
    // One flow more than a packet may examine: nothing learned, counted.
    let mut c = pair(n + 1, 1);
    c.on_reverse(&std_cnp(b, a, 77), 1);
    assert_eq!(c.flow_source_qp(a, b, 301), None);
    assert_eq!((c.stats().reverse_learned_from_cnp, c.stats().reverse_walk_limited), (0, 1));
}

#[test]
fn reverse_learning_walks_a_bounded_number_of_flows() {
    use crate::congestion::MAX_REVERSE_WALK;
    let (a, b) = (ip6(1), ip6(4));
    // MAX_REVERSE_WALK flows between a and b, PSNs 1000 apart: an ACK at
    // PSN k*1000 - 5 picks the flow of QP 300 + k.
    let pair = |n: u32| {
        let mut c = CongestionPort::new(PortParams { flow_capacity: 1024, ..sec7() });
        for k in 0..n {
            c.on_enqueue(Some(&data(a, b, 300 + k, k * 1000)), 1000, true, 0, 0);
        }
        assert_eq!(c.stats().flows_active, u64::from(n));
        c
    };
    let n = MAX_REVERSE_WALK as u32;
    let mut c = pair(n);
    // The oldest flows are at the end of the pair's list: still reached.
    c.on_reverse(&ack(b, a, 77, 1000 - 5), 1);
    assert_eq!(c.flow_source_qp(a, b, 301), Some(77));
    assert_eq!((c.stats().reverse_learned, c.stats().reverse_walk_limited), (1, 0));
    // Already known: nothing more.
    c.on_reverse(&ack(b, a, 77, 1000), 2);
    assert_eq!((c.stats().reverse_learned, c.stats().reverse_walk_limited), (1, 0));

    // One flow more than a packet may examine: nothing learned, counted,
    // whichever flow the PSN points at.
    let mut c = pair(n + 1);
    c.on_reverse(&ack(b, a, 77, 1000 - 5), 1);
    c.on_reverse(&ack(b, a, 78, n * 1000 - 5), 2);
    assert_eq!(c.stats().reverse_walk_limited, 2);
    assert_eq!(c.stats().reverse_learned, 0);
    assert!((0..=n).all(|k| c.flow_source_qp(a, b, 300 + k).is_none()));
    // A configured source QP still works for such a pair.
    c.set_source_qp(a, b, 301, 55);
    assert_eq!(c.flow_source_qp(a, b, 301), Some(55));
    // Other pairs are unaffected.
    c.on_enqueue(Some(&data(ip6(2), b, 900, 10)), 1000, true, 0, 3);
    c.on_reverse(&ack(b, ip6(2), 66, 9), 4);
    assert_eq!(c.flow_source_qp(ip6(2), b, 900), Some(66));
}

#[test]
fn source_qp_from_configuration_and_unknown_counter() {
    let mut c = CongestionPort::new(PortParams {
        policy: Policy {
            top_flows: 2,
            ..sec7().policy
        },
        ..sec7()
    });
    let (a, b) = (ip4(1), ip4(4));
    // Configured before the flow is seen.
    c.set_source_qp(a, b, 200, 100);
    c.on_enqueue(Some(&data(a, b, 200, 0)), 2000, true, 130 * MB, 0);
    assert_eq!(c.flow_source_qp(a, b, 200), Some(100));
    // Reverse learning does not override configuration.
    c.on_reverse(&ack(b, a, 555, 0), 1);
    assert_eq!(c.flow_source_qp(a, b, 200), Some(100));
    // Another flow with unknown source QP.
    c.on_enqueue(Some(&data(ip4(3), b, 300, 0)), 1000, true, 130 * MB, 0);
    c.poll(130 * MB, 0, &mut out());
    let o = poll_at(&mut c, 130 * MB, IV);
    assert_eq!(o.len(), 2);
    assert_eq!((o[0].src_qp, o[0].info.source_qp), (Some(100), 100));
    assert_eq!((o[1].src_qp, o[1].info.source_qp), (None, 0));
    assert_eq!(c.stats().source_qp_unknown, 1);
    // Configuration after the flow is known applies at once.
    c.set_source_qp(ip4(3), b, 300, 301);
    assert_eq!(c.flow_source_qp(ip4(3), b, 300), Some(301));
    // Forgetting it: unknown again, then learned from a response (the
    // only flow of its pair).
    c.clear_source_qp(ip4(3), b, 300);
    assert_eq!(c.flow_source_qp(ip4(3), b, 300), None);
    c.on_reverse(&ack(b, ip4(3), 302, 0), 2);
    assert_eq!(c.flow_source_qp(ip4(3), b, 300), Some(302));
    // Forgetting one that was never configured changes nothing.
    c.clear_source_qp(ip4(3), b, 300);
    assert_eq!(c.flow_source_qp(ip4(3), b, 300), Some(302));
    // Nor does a new learning override the configured one of flow 1.
    c.clear_source_qp(a, b, 999);
    assert_eq!(c.flow_source_qp(a, b, 200), Some(100));
}

/// `unknown_source_qp`: a CNP for a flow whose source QP is unknown is
/// sent by default (QP 0); with "icmpv6-only" only in the ICMPv6 format
/// (a RoCEv2 CNP naming QP 0 gives a NIC nothing to act on); with "skip"
/// not at all. A skipped CNP is counted and leaves the flow untouched (no
/// per-flow limit consumed, not throttled, so no Resume later), and the
/// other flows of the same evaluation are still served.
#[test]
fn cnps_for_unknown_source_qps_follow_the_policy() {
    use super::UnknownSourceQp as U;
    // Three flows with bytes queued: IPv4 known QP, IPv4 unknown (RoCEv2
    // format, the only one IPv4 takes), IPv6 unknown (ICMPv6, the port's
    // default for IPv6 here).
    let (k4, u4, u6, d4, d6) = (ip4(1), ip4(3), ip6(3), ip4(4), ip6(4));
    for (mode, want) in [
        (U::Send, vec![(k4, Some(100)), (u4, None), (u6, None)]),
        (U::Icmpv6Only, vec![(k4, Some(100)), (u6, None)]),
        (U::Skip, vec![(k4, Some(100))]),
    ] {
        let mut c = CongestionPort::new(PortParams {
            default_format: CnpFormat::Icmpv6,
            policy: Policy { top_flows: 3, unknown_source_qp: mode, ..sec7().policy },
            ..sec7()
        });
        c.set_source_formats(&[("10.0.0.0/8".parse().unwrap(), CnpFormat::Roce)]);
        c.set_source_qp(k4, d4, 200, 100);
        c.on_enqueue(Some(&data(k4, d4, 200, 0)), 3000, true, 130 * MB, 0);
        c.on_enqueue(Some(&data(u4, d4, 300, 0)), 2000, true, 130 * MB, 0);
        c.on_enqueue(Some(&data(u6, d6, 400, 0)), 1000, true, 130 * MB, 0);
        c.poll(130 * MB, 0, &mut out());
        let o = poll_at(&mut c, 130 * MB, IV);
        let got: Vec<(IpAddr, Option<u32>)> = o.iter().map(|r| (r.to, r.src_qp)).collect();
        assert_eq!(got, want, "{mode:?}");
        let skipped = 3 - want.len() as u64;
        assert_eq!(c.stats().source_qp_unknown_skipped, skipped, "{mode:?}");
        assert_eq!(c.stats().source_qp_unknown, want.iter().filter(|w| w.1.is_none()).count() as u64, "{mode:?}");
        // A skipped flow was not throttled: the queue draining sends no
        // Resume to it.
        let mut t = IV;
        let mut resumes = Vec::new();
        for _ in 0..400 {
            t += IV;
            resumes.extend(poll_at(&mut c, 0, t).into_iter().filter(|r| r.info.action == Action::Resume).map(|r| r.to));
        }
        assert_eq!(resumes, want.iter().map(|w| w.0).collect::<Vec<_>>(), "{mode:?}: Resume for the CNPs sent only");
    }
}

/// A throttled flow whose Resume the configuration no longer lets out
/// (its source's format removed at run time, or its unknown source QP now
/// held back) leaves the throttled flows once: the Resume was tried, and
/// counted, at every poll until the flow aged out.
#[test]
fn a_resume_the_configuration_holds_back_is_tried_once() {
    use super::UnknownSourceQp as U;
    for case in ["format removed", "qp policy skip"] {
        let mut c = CongestionPort::new(PortParams { default_format: CnpFormat::Icmpv6, ..sec7() });
        c.set_source_formats(&[("10.0.0.0/8".parse().unwrap(), CnpFormat::Roce)]);
        // IPv4 source, unknown source QP: a Rate Reduce in the RoCEv2 format.
        c.on_enqueue(Some(&data(ip4(3), ip4(4), 300, 0)), 2000, true, 130 * MB, 0);
        c.poll(130 * MB, 0, &mut out());
        let o = poll_at(&mut c, 130 * MB, IV);
        assert_eq!(o.len(), 1, "{case}");
        assert_eq!(c.throttled_flows(), 1);
        match case {
            "format removed" => c.set_source_formats(&[]),
            _ => c.set_params(PortParams { default_format: CnpFormat::Icmpv6, policy: Policy { unknown_source_qp: U::Skip, ..sec7().policy }, ..sec7() }),
        }
        let mut t = IV;
        for _ in 0..400 {
            t += IV;
            assert!(poll_at(&mut c, 0, t).is_empty(), "{case}: no Resume can go out");
        }
        assert_eq!(c.throttled_flows(), 0, "{case}");
        let tried = c.stats().format_unconfigured + c.stats().source_qp_unknown_skipped;
        assert_eq!(tried, 1, "{case}: tried once, not at every poll");
    }
}

#[test]
fn flow_table_full_and_aging() {
    let mut c = CongestionPort::new(PortParams {
        flow_capacity: 2,
        flow_idle_timeout_ns: 50 * MS,
        ..sec7()
    });
    let f1 = c.on_enqueue(Some(&data(ip4(1), ip4(4), 1, 0)), 1000, true, 1000, 0).1;
    let f2 = c.on_enqueue(Some(&data(ip4(2), ip4(4), 2, 0)), 1000, true, 2000, 0).1;
    assert!(f1.is_some() && f2.is_some());
    let (mark, f3) = c.on_enqueue(Some(&data(ip4(3), ip4(4), 3, 0)), 1000, true, 70 * MB, 0);
    assert!(mark, "still marked");
    assert_eq!(f3, None);
    assert_eq!(c.stats().flow_table_full, 1);
    assert_eq!(c.stats().flows_active, 2);
    // f1 drains; f2 keeps a byte queued.
    c.on_dequeue(f1, 1000, 1000, 1);
    assert!(poll_at(&mut c, 1000, 50 * MS - 1).is_empty());
    assert_eq!(c.stats().flows_aged, 0);
    c.poll(1000, 50 * MS, &mut out());
    assert_eq!(c.stats().flows_aged, 1, "only the idle flow with nothing queued");
    assert_eq!(c.stats().flows_active, 1);
    assert_eq!(c.flow_queued(f2.unwrap()), Some(1000));
    // Room again.
    assert!(c.on_enqueue(Some(&data(ip4(3), ip4(4), 3, 0)), 1000, true, 2000, 50 * MS).1.is_some());
    // An empty queue clears stale contributions, then f2 ages.
    c.poll(0, 99 * MS, &mut out());
    assert_eq!(c.stats().flows_aged, 2);
    assert_eq!(c.stats().flows_active, 1);
}

/// A throttled flow whose source went silent (a paused source sends
/// nothing) is not aged while its CNP can be in force (the longest pause
/// and an RTT_est), so its Resume (s.5.5.1) still goes.
#[test]
fn a_throttled_flow_is_not_aged_before_its_resume() {
    let mut p = PortParams { flow_idle_timeout_ns: 50 * MS, ..sec7() };
    p.policy.max_pause_us = 65_000;
    let mut c = CongestionPort::new(p);
    let (_, f) = c.on_enqueue(Some(&data(ip4(1), ip4(4), 7, 0)), 1000, true, 130 * MB, 0);
    c.poll(130 * MB, 0, &mut out());
    let o = poll_at(&mut c, 130 * MB, IV);
    assert_eq!(o.len(), 1);
    assert_eq!(o[0].info.action, Action::RateReduce);
    c.on_dequeue(f, 1000, 100 * MB, IV + 1);
    // Silent past the idle timeout while other traffic keeps the queue
    // above K_min: within 65 ms + RTT_est of its CNP it stays.
    for t in [60 * MS, 70 * MS] {
        assert!(poll_at(&mut c, 100 * MB, t).is_empty());
    }
    assert_eq!(c.stats().flows_aged, 0);
    assert_eq!(c.throttled_flows(), 1);
    // Below K_min for RTT_est: the Resume, then the flow may go.
    c.on_dequeue(None, 1, 0, 71 * MS);
    let o = poll_at(&mut c, 0, 71 * MS + RTT);
    assert_eq!(o.len(), 1);
    assert_eq!(o[0].info.action, Action::Resume);
    c.poll(0, 150 * MS, &mut out());
    assert_eq!(c.stats().flows_aged, 1);
    assert_eq!(c.throttled_flows(), 0);
}

/// A flow keeps its entry (and with it its last CNP time) for an RTT_est
/// after that CNP even when the idle timeout is shorter: ageing it out
/// and learning it again must not reset the per-flow limit of one CNP per
/// RTT_est (s.5.5, s.9). After its Resume a flow is no longer throttled,
/// so only this keeps it.
#[test]
fn a_flow_keeps_its_cnp_limit_past_a_short_idle_timeout() {
    let mut p = PortParams { flow_idle_timeout_ns: MS, ..sec7() };
    p.policy.max_pause_us = 1000;
    let mut c = CongestionPort::new(p);
    let fl = data(ip4(1), ip4(4), 7, 0);
    let (_, f) = c.on_enqueue(Some(&fl), 1000, true, 130 * MB, 0);
    c.poll(100 * MB, 0, &mut out());
    assert_eq!(poll_at(&mut c, 130 * MB, IV)[0].info.action, Action::RateReduce);
    c.on_dequeue(f, 1000, 0, IV + 1);
    c.poll(0, IV + 2, &mut out());
    let t = IV + 2 + RTT;
    let o = poll_at(&mut c, 0, t);
    assert_eq!(o.len(), 1);
    assert_eq!(o[0].info.action, Action::Resume);
    assert_eq!(c.throttled_flows(), 0);
    // Silent 2 ms after its Resume, past the 1 ms idle timeout: kept.
    assert!(poll_at(&mut c, 0, t + 2 * MS).is_empty());
    assert_eq!(c.stats().flows_aged, 0);
    // It sends again into a queue above K_max: no second CNP within
    // RTT_est of the Resume.
    let (_, f) = c.on_enqueue(Some(&fl), 1000, true, 130 * MB, t + 3 * MS);
    assert!(poll_at(&mut c, 130 * MB, t + 3 * MS + IV).is_empty());
    assert_eq!(c.stats().rate_limited, 1);
    // After that it ages like any idle flow.
    c.on_dequeue(f, 1000, 0, t + 3 * MS + IV + 1);
    c.poll(0, t + RTT + 5 * MS, &mut out());
    assert_eq!(c.stats().flows_aged, 1);
}

/// A throttled flow whose source stopped for good ages once its CNP can
/// no longer be in force, even while the queue stays above K_min (no
/// Resume): dead flows do not fill the table.
#[test]
fn a_dead_throttled_flow_ages_while_the_queue_stays_congested() {
    let mut p = PortParams { flow_idle_timeout_ns: 50 * MS, ..sec7() };
    p.policy.max_pause_us = 65_000;
    let mut c = CongestionPort::new(p);
    let (_, f) = c.on_enqueue(Some(&data(ip4(1), ip4(4), 7, 0)), 1000, true, 130 * MB, 0);
    c.poll(130 * MB, 0, &mut out());
    assert_eq!(poll_at(&mut c, 130 * MB, IV).len(), 1);
    c.on_dequeue(f, 1000, 100 * MB, IV + 1);
    poll_at(&mut c, 100 * MB, 70 * MS);
    assert_eq!(c.stats().flows_aged, 0);
    // 65 ms + 10 ms after the CNP (at IV): gone, without a Resume.
    poll_at(&mut c, 100 * MB, IV + 75 * MS);
    assert_eq!(c.stats().flows_aged, 1);
    assert_eq!(c.throttled_flows(), 0);
}

/// Packets the full queue tail-drops still count for their flow's
/// arrival rate: a flow whose packets start being dropped did not slow
/// down, so a downstream node does not defer (s.5.7) on that account.
#[test]
fn tail_dropped_packets_count_for_the_arrival_rate() {
    let run = |drop_half: bool| {
        let mut c = CongestionPort::new(PortParams { suppression: true, ..sec7() });
        let f = data(ip4(1), ip4(4), 200, 0);
        for i in 0..10 {
            c.on_enqueue(Some(&f), 1_000_000, true, 100 * MB, i * MS);
        }
        for i in 0..5 {
            c.on_enqueue(Some(&f), 1_000_000, true, 100 * MB, RTT + i * MS);
            if drop_half {
                c.on_tail_drop(&RoceKey::from_info(&f), 1_000_000, RTT + i * MS + 1);
            }
        }
        let t = 2 * RTT;
        c.poll(126 * MB, t - IV, &mut out());
        let o = poll_at(&mut c, 126 * MB, t);
        (o.len(), c.stats().suppressed, c.flow_queued(c.flow_id(f.src, f.dst, f.dest_qp).unwrap()))
    };
    // Half the packets admitted, none dropped: the rate fell, deferral.
    assert_eq!(run(false), (0, 1, Some(15_000_000)));
    // As many admitted, as many again dropped: the source did not slow
    // down; a CNP, and the dropped bytes are not counted as queued.
    assert_eq!(run(true), (1, 0, Some(15_000_000)));
}

// ------------------------------------------------------------ section 7

#[test]
fn section7_operational_example() {
    // Monitoring interval 1 ms (RTT_est / 10); the queue grows by 1 MB
    // every 200 us (5 MB/ms) and the worker polls every 200 us.
    let p = PortParams {
        interval_ns: MS,
        ..sec7()
    };
    assert_eq!(p.validate(), Ok(()));
    let mut n1 = CongestionPort::new(p);
    // Step 2.
    assert_eq!(n1.thresholds(), (62_500_000, 125_000_000));
    let (src, dst) = (ip4(1), ip4(4));
    let step = 200 * US;
    let chunk = 1_000_000u32;
    let fwd = data(src, dst, 200, 42);
    let mut o = out();
    n1.poll(0, 0, &mut o);
    // Step 1: N1 learns {10.0.0.1 -> 10.0.0.4, DstQP 200}, and SrcQP 100
    // from the reverse direction.
    let mut q: Vec<Option<FlowId>> = Vec::new();
    let mut t = 0;
    let mut qd = 0u64;
    let mut grow = |n1: &mut CongestionPort, t: &mut u64, qd: &mut u64, o: &mut Vec<CnpRequest>| {
        *t += step;
        *qd += u64::from(chunk);
        let (mark, f) = n1.on_enqueue(Some(&fwd), chunk, true, *qd, *t);
        assert_eq!(mark, *qd > 62_500_000, "CE exactly above K_min");
        q.push(f);
        n1.poll(*qd, *t, o);
    };
    grow(&mut n1, &mut t, &mut qd, &mut o);
    n1.on_reverse(&ack(dst, src, 100, 42), t);
    assert_eq!(n1.flow_source_qp(src, dst, 200), Some(100));
    // Step 3: past 70 MB: CE marking, no CNP.
    while qd < 70 * MB {
        grow(&mut n1, &mut t, &mut qd, &mut o);
    }
    assert!(n1.stats().marked > 0);
    assert!(o.is_empty(), "first level only at 70 MB: {o:?}");
    // At K_max exactly (t = 25 ms, an interval boundary): not exceeded.
    while qd < 125 * MB {
        grow(&mut n1, &mut t, &mut qd, &mut o);
    }
    assert_eq!(t, 25 * MS);
    assert!(o.is_empty(), "{o:?}");
    // Step 4: 130 MB at the next interval boundary.
    while qd < 130 * MB {
        grow(&mut n1, &mut t, &mut qd, &mut o);
    }
    assert_eq!(t, 26 * MS);
    assert_eq!(o.len(), 1);
    let r = o[0];
    assert_eq!(r.to, src);
    assert_eq!(r.format, CnpFormat::Roce);
    assert_eq!(
        r.info,
        CnpInfo {
            congestion_level: 180,
            action: Action::RateReduce,
            parameter: 30,
            source_qp: 100,
            metric_type: MetricType::QueueDepthKb,
            metric_value: 130_000,
        }
    );
    // The RoCEv2 packet: opcode 0x81, BECN, E, DestQP 100, ICRC valid.
    let mut buf = [0u8; 128];
    let n = build_cnp(&r, ip4(2), &Params::DEFAULT, false, &mut buf).unwrap();
    let bth = crate::wire::roce::Bth::new_checked(&buf[28..n]).unwrap();
    assert_eq!((bth.opcode(), bth.becn(), bth.ext(), bth.dest_qp(), bth.psn()), (0x81, true, true, 100, 0));
    crate::wire::roce::icrc_check(&buf[..n]).unwrap();
    // Step 8: the queue drains (1 MB per 200 us) to 30 MB and stays there;
    // Resume 50 once it has been below K_min for 10 ms.
    o.clear();
    let mut t_below = None;
    let mut fl = q.into_iter();
    while qd > 30 * MB {
        t += step;
        qd -= u64::from(chunk);
        n1.on_dequeue(fl.next().unwrap(), chunk, qd, t);
        if qd < 62_500_000 && t_below.is_none() {
            t_below = Some(t);
        }
        n1.poll(qd, t, &mut o);
    }
    assert!(o.is_empty(), "{o:?}");
    let tb = t_below.unwrap();
    while t + step < tb + RTT {
        t += step;
        n1.poll(qd, t, &mut o);
    }
    n1.poll(qd, tb + RTT - 1, &mut o);
    assert!(o.is_empty());
    n1.poll(qd, tb + RTT, &mut o);
    assert_eq!(o.len(), 1);
    let r = o[0].info;
    assert_eq!((r.action, r.parameter, r.source_qp), (Action::Resume, 50, 100));
    assert_eq!((r.metric_type, r.metric_value), (MetricType::QueueDepthKb, 30_000));
    assert_eq!(r.congestion_level, 42);
    assert_eq!(n1.stats().cnp_rate_reduce + n1.stats().cnp_resume, 2);
}

// ------------------------------------------------------------ build_cnp

fn req(to: IpAddr, flow_dst: IpAddr, src_qp: Option<u32>, format: CnpFormat) -> CnpRequest {
    CnpRequest {
        to,
        flow_dst,
        dest_qp: 200,
        src_qp,
        info: CnpInfo {
            congestion_level: 180,
            action: Action::RateReduce,
            parameter: 30,
            source_qp: src_qp.unwrap_or(0),
            metric_type: MetricType::QueueDepthKb,
            metric_value: 130_000,
        },
        format,
        via: 0,
    }
}

#[test]
fn build_icmpv6_verified_by_wire_parser() {
    use crate::wire::lhcnp::{Icmpv6LhCnp, Icmpv6LhCnpRepr, ObjectData};
    let params = Params::DEFAULT;
    let ours = ip6(2);
    let r = req(ip6(1), ip6(4), Some(100), CnpFormat::Icmpv6);
    let mut buf = [0u8; 256];
    let n = build_cnp(&r, ours, &params, false, &mut buf).unwrap();
    assert_eq!(n, 40 + 16);
    assert_eq!(buf[6], 58);
    assert_eq!(&buf[8..24], &[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
    let (s, d): ([u8; 16], [u8; 16]) = (buf[8..24].try_into().unwrap(), buf[24..40].try_into().unwrap());
    let m = Icmpv6LhCnp::new_checked(&buf[40..n]).unwrap();
    assert!(m.verify_checksum(&s, &d));
    let rep = Icmpv6LhCnpRepr::parse(&m, &s, &d, &params).unwrap();
    assert_eq!(rep.info, r.info);
    assert!(rep.objects.is_empty());
    // A flipped bit breaks the ICMPv6 checksum.
    buf[45] ^= 1;
    let m = Icmpv6LhCnp::new_checked(&buf[40..n]).unwrap();
    assert!(!m.verify_checksum(&s, &d));
    // Unknown source QP: QP 0 and the flow-id object.
    let r = req(ip6(1), ip6(4), None, CnpFormat::Icmpv6);
    let n = build_cnp(&r, ours, &params, false, &mut buf).unwrap();
    let m = Icmpv6LhCnp::new_checked(&buf[40..n]).unwrap();
    let rep = Icmpv6LhCnpRepr::parse(&m, &s, &d, &params).unwrap();
    assert_eq!(rep.info.source_qp, 0);
    let objs: Vec<_> = rep.objects.iter().collect();
    assert_eq!(objs.len(), 1);
    assert_eq!(objs[0].class_num, params.lhcnp_ext_class_num);
    match objs[0].data {
        ObjectData::Raw { c_type, data } => {
            assert_eq!(c_type, CTYPE_FLOW_ID);
            assert_eq!(data.len(), FLOW_ID_LEN);
            assert_eq!(&data[..16], &[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4]);
            assert_eq!(&data[16..], &200u32.to_be_bytes());
        }
        o => panic!("{o:?}"),
    }
    // Family mismatch.
    assert!(build_cnp(&req(ip6(1), ip6(4), Some(1), CnpFormat::Icmpv6), ip4(2), &params, false, &mut buf).is_err());
    assert!(build_cnp(&req(ip6(1), ip6(4), Some(1), CnpFormat::Roce), ip4(2), &params, false, &mut buf).is_err());
    // Too small a buffer: an error, no panic.
    assert!(build_cnp(&req(ip6(1), ip6(4), Some(1), CnpFormat::Icmpv6), ours, &params, false, &mut buf[..50]).is_err());
}

#[test]
fn build_roce_v4_and_v6_verified_with_icrc() {
    use crate::wire::ipv4::Ipv4Packet;
    use crate::wire::lhcnp::RoceLhCnpRepr;
    use crate::wire::roce::{icrc_check, Bth};
    use crate::wire::udp::UdpPacket;
    let params = Params::DEFAULT;
    let mut buf = [0u8; 256];
    // IPv4.
    let r = req(ip4(1), ip4(4), Some(100), CnpFormat::Roce);
    let n = build_cnp(&r, ip4(2), &params, false, &mut buf).unwrap();
    assert_eq!(n, 20 + 8 + 12 + 12 + 4);
    let ip = Ipv4Packet::new_checked(&buf[..n]).unwrap();
    assert!(ip.verify_checksum());
    assert_eq!(ip.src_addr(), Ipv4Addr::new(10, 0, 0, 2));
    assert_eq!(ip.dst_addr(), Ipv4Addr::new(10, 0, 0, 1));
    assert_eq!(buf[1] & 3, 0, "Not-ECT");
    let u = UdpPacket::new_checked(ip.payload()).unwrap();
    assert_eq!(u.dst_port(), 4791);
    icrc_check(&buf[..n]).unwrap();
    let bth = Bth::new_checked(&buf[28..n]).unwrap();
    assert_eq!(bth.opcode(), 0x81);
    assert!(bth.becn() && bth.ext() && !bth.fecn() && !bth.ack_req());
    assert_eq!((bth.dest_qp(), bth.psn(), bth.pkey(), bth.resv5()), (100, 0, 0xffff, 0));
    let rep = RoceLhCnpRepr::parse(&bth, &params).unwrap();
    assert_eq!(rep.info, r.info);
    // Corrupt one body octet: the ICRC no longer verifies.
    let mut bad = buf;
    bad[28 + 12 + 3] ^= 0x10;
    assert!(icrc_check(&bad[..n]).is_err());
    // IPv6, unknown source QP: DestQP 0 and the flow-id object.
    let r = req(ip6(1), ip6(4), None, CnpFormat::Roce);
    let n = build_cnp(&r, ip6(2), &params, false, &mut buf).unwrap();
    assert_eq!(n, 40 + 8 + 12 + 12 + 4 + 4 + FLOW_ID_LEN + 4);
    icrc_check(&buf[..n]).unwrap();
    let u = UdpPacket::new_checked(&buf[40..n]).unwrap();
    assert!(u.verify_checksum(&ip6(2), &ip6(1)));
    let bth = Bth::new_checked(&buf[48..n]).unwrap();
    assert_eq!(bth.dest_qp(), 0);
    let rep = RoceLhCnpRepr::parse(&bth, &params).unwrap();
    assert_eq!(rep.info.source_qp, 0);
    assert_eq!(rep.objects.iter().count(), 1);
    // End to end through the reference source's parser.
    let (from, info) = parse_cnp(&buf[..n], &params).unwrap();
    assert_eq!(from, ip6(2));
    assert_eq!(info.action, Action::RateReduce);
}

// ------------------------------------------------------------ source model

#[test]
fn source_model_validates_and_applies() {
    let sp = SourceParams::default();
    let mut s = SourceModel::new(sp);
    let node = ip4(2);
    s.add_known_node(node);
    s.add_qp(100);
    let rr = CnpInfo {
        congestion_level: 180,
        action: Action::RateReduce,
        parameter: 30,
        source_qp: 100,
        metric_type: MetricType::QueueDepthKb,
        metric_value: 130_000,
    };
    // s.9 / s.5.6 validation.
    assert_eq!(s.receive(ip4(66), &rr, 0), Err(SourceReject::UnknownNode));
    assert_eq!(s.receive(node, &CnpInfo { source_qp: 7, ..rr }, 0), Err(SourceReject::UnknownQp));
    assert_eq!(
        s.receive(node, &CnpInfo { action: Action::Notify, parameter: 5, ..rr }, 0),
        Err(SourceReject::Inconsistent)
    );
    assert_eq!(s.rate(100, 0), Some(100e9));
    // Rate Reduce 30 at t=5 ms (section 7 step 5).
    let t = 5 * MS;
    s.receive(node, &rr, t).unwrap();
    assert_eq!(s.rate(100, t), Some(70e9));
    // Step 7: no new CNP for 2 * RTT_est: additive increase starts.
    assert_eq!(s.rate(100, t + 2 * RTT - 1), Some(70e9));
    assert_eq!(s.rate(100, t + 2 * RTT), Some(75e9));
    assert_eq!(s.rate(100, t + 3 * RTT), Some(80e9));
    assert_eq!(s.rate(100, t + 100 * RTT), Some(100e9), "up to normal, no further");
    // Resume 50 right after the reduction: half of the 30 G back.
    let mut s2 = SourceModel::new(sp);
    s2.add_known_node(node);
    s2.add_qp(100);
    s2.receive(node, &rr, 0).unwrap();
    s2.receive(node, &CnpInfo { action: Action::Resume, parameter: 50, ..rr }, 1).unwrap();
    assert_eq!(s2.rate(100, 1), Some(85e9));
    // Resume 0 restores the whole reduction, within the per-Resume cap.
    let mut s3 = SourceModel::new(SourceParams {
        resume_cap_frac: 0.2,
        ..sp
    });
    s3.add_known_node(node);
    s3.add_qp(100);
    s3.receive(node, &CnpInfo { parameter: 60, ..rr }, 0).unwrap();
    assert_eq!(s3.rate(100, 0), Some(40e9));
    s3.receive(node, &CnpInfo { action: Action::Resume, parameter: 0, ..rr }, 1).unwrap();
    assert_eq!(s3.rate(100, 1), Some(60e9), "capped at 20 % of the normal rate");
    // Resume 0 is "to the original rate" (s.5.5), not only the last cut:
    // 100 -> 70 -> 49, then Resume 0 -> 100 (with no cap per Resume).
    let mut s6 = SourceModel::new(SourceParams { resume_cap_frac: 1.0, ..sp });
    s6.add_known_node(node);
    s6.add_qp(100);
    s6.receive(node, &rr, 0).unwrap();
    s6.receive(node, &rr, 1).unwrap();
    assert!((s6.rate(100, 1).unwrap() - 49e9).abs() < 1.0);
    s6.receive(node, &CnpInfo { action: Action::Resume, parameter: 0, ..rr }, 2).unwrap();
    assert_eq!(s6.rate(100, 2), Some(100e9));
    // Pause: silent for the duration.
    let mut s4 = SourceModel::new(sp);
    s4.add_known_node(node);
    s4.add_qp(100);
    s4.receive(node, &CnpInfo { action: Action::Pause, parameter: 800, ..rr }, 0).unwrap();
    assert_eq!(s4.rate(100, 799_999), Some(0.0));
    assert_eq!(s4.rate(100, 800_000), Some(100e9));
    // Notify: the default cut.
    let mut s5 = SourceModel::new(sp);
    s5.add_known_node(node);
    s5.add_qp(100);
    s5.receive(node, &CnpInfo { action: Action::Notify, parameter: 0, ..rr }, 0).unwrap();
    assert_eq!(s5.rate(100, 0), Some(75e9));
    assert_eq!(s.rejected, 3);
}

/// The section 7 port's Rate Reduce 30 CNP (ICMPv6, to ip6(1)'s QP 100
/// from `ours` = ip6(2)) as `build_cnp` writes it: (buffer, length, ours).
fn sec7_icmpv6_cnp() -> ([u8; 256], usize, IpAddr) {
    let mut c = CongestionPort::new(PortParams { default_format: CnpFormat::Icmpv6, ..sec7() });
    let (src, dst, ours) = (ip6(1), ip6(4), ip6(2));
    c.set_source_qp(src, dst, 200, 100);
    c.on_enqueue(Some(&data(src, dst, 200, 0)), 9000, true, 130 * MB, 0);
    c.poll(130 * MB, 0, &mut out());
    let o = poll_at(&mut c, 130 * MB, IV);
    let mut buf = [0u8; 256];
    let n = build_cnp(&o[0], ours, &Params::DEFAULT, false, &mut buf).unwrap();
    (buf, n, ours)
}

#[test]
fn source_model_end_to_end_from_built_packets() {
    let params = Params::DEFAULT;
    let (buf, n, ours) = sec7_icmpv6_cnp();
    let mut s = SourceModel::new(SourceParams::default());
    s.add_known_node(ours);
    s.add_qp(100);
    let info = s.receive_packet(&buf[..n], &params, IV).unwrap();
    assert_eq!(info.parameter, 30);
    assert_eq!(s.rate(100, IV), Some(70e9));
    // A forged copy from another address is refused.
    let mut forged = buf;
    forged[23] = 9;
    assert_eq!(s.receive_packet(&forged[..n], &params, IV), Err(SourceReject::Malformed), "checksum");
    let mut other = SourceModel::new(SourceParams::default());
    other.add_known_node(ip6(3));
    other.add_qp(100);
    assert_eq!(other.receive_packet(&buf[..n], &params, IV), Err(SourceReject::UnknownNode));
}

/// A flow keeps the UDP source port (RoCEv2's per-QP entropy) of the
/// packet that created its entry, on every learning path (direct,
/// deferred in a batch, a tail-dropped packet); the top flow reports it,
/// and that is what a FANN Flow ID names (draft-hzh s.5.1.3).
#[test]
fn flows_keep_their_entropy_port_for_the_fann_flow_id() {
    let mut c = CongestionPort::new(sec7());
    let (a, b, d) = (ip6(1), ip6(2), ip6(9));
    let with = |info: RoceInfo, sport: u16| RoceInfo { sport, ..info };
    c.on_enqueue(Some(&with(data(a, d, 0x10, 0), 0xc001)), 1000, true, 1000, 0);
    // A later packet with another port does not move it (set at creation).
    c.on_enqueue(Some(&with(data(a, d, 0x10, 1), 0xd00d)), 1000, true, 2000, 1);
    let key = RoceKey::from_info(&with(data(b, d, 0x20, 0), 0xc002));
    for t in 0..3u32 {
        assert!(!c.pending_full());
        c.on_enqueue_deferred(Some(&RoceKey { psn: t, ..key }), 4000, true, 2000 + 4000 * u64::from(t + 1), 2, t);
    }
    let mut got = Vec::new();
    c.take_resolved(|_, f| got.push(f));
    assert!(got.iter().all(|f| f.is_some()));
    assert_eq!(c.top_flow(), Some((b, d, 0x20, 0xc002)), "the flow with the most bytes queued, with its port");
    c.on_tail_drop(&RoceKey::from_info(&with(data(ip6(3), d, 0x30, 0), 0xc003)), 100, 3);
    let f = c.flow_id(ip6(3), d, 0x30).expect("learned from the dropped packet");
    assert_eq!(c.flow_sport(f), Some(0xc003));
    let f = c.flow_id(a, d, 0x10).unwrap();
    assert_eq!(c.flow_sport(f), Some(0xc001));
}

/// A flow's tunnel tag (the ingress PE whose tunnel its packets come in,
/// as the port's owner tags them) is that of its last tagged packet: in a
/// train, across batches, and on the path that learns at once when the
/// batch is full; an untagged packet leaves it; the CNP carries it.
#[test]
fn flows_take_the_tunnel_tag_of_their_last_tagged_packet() {
    let mut p = sec7();
    p.qd_immediate = true;
    let mut c = CongestionPort::new(p);
    let (a, d) = (ip6(1), ip6(9));
    let key = RoceKey::from_info(&data(a, d, 0x10, 0));
    // One train (same time, consecutive tags): 5, 5, 7.
    let enq = |c: &mut CongestionPort, psn: u32, len: u32, now: u64, tag: u32, via: u16| {
        let k = RoceKey { psn, ..key };
        c.on_enqueue_deferred(Some(&k), len, true, 5000, now, tag);
        c.tag_last(&k, via);
    };
    for (t, via) in [(0u32, 5u16), (1, 5), (2, 7)] {
        enq(&mut c, t, 1000, 2, t, via);
    }
    let mut n = 0;
    c.take_resolved(|_, f| n += usize::from(f.is_some()));
    assert_eq!(n, 3, "one entry, three packets");
    let f = c.flow_id(a, d, 0x10).unwrap();
    assert_eq!(c.flow_via(f), Some(7));
    enq(&mut c, 3, 1000, 3, 3, 0);
    c.take_resolved(|_, _| {});
    assert_eq!(c.flow_via(f), Some(7), "untagged: unchanged");
    // A full batch (no trains: each packet at its own time), tagged 8;
    // the next packet, tagged 9, is learned at once after the batch.
    let mut t = 4u32;
    while !c.pending_full() {
        enq(&mut c, t, 100, 10 + u64::from(t), t, 8);
        t += 1;
    }
    enq(&mut c, t, 100, 10 + u64::from(t), t, 9);
    assert_eq!(c.flow_via(f), Some(9), "the batch's tags first, then this one's");
    c.take_resolved(|_, _| {});
    assert_eq!(c.flow_via(f), Some(9));
    // Above K_max: the CNP carries the tag.
    let mut o = Vec::with_capacity(8);
    c.poll(200_000_000, 1_000, &mut o);
    assert_eq!(o.iter().map(|r| (r.to, r.via)).collect::<Vec<_>>(), vec![(a, 9)]);
}

/// s.9 with AH: a source that holds the SA takes only CNPs whose AH
/// verifies, each sequence number once, and refuses an unprotected one.
#[test]
fn source_model_takes_only_authenticated_cnps_when_keyed() {
    use crate::wire::ah::{protect_ipv6, AhKey, Algorithm};
    let params = Params::DEFAULT;
    let (buf, n, ours) = sec7_icmpv6_cnp();
    let key = AhKey::new(0x700, Algorithm::HmacSha512_256, &[9; 64]).unwrap();
    let signed = |seq: u32| {
        let mut b = buf;
        let m = protect_ipv6(&mut b, n, &key, seq).unwrap();
        b[..m].to_vec()
    };
    let mut s = SourceModel::new(SourceParams::default());
    s.add_known_node(ours);
    s.add_qp(100);
    s.add_ah_key(key.clone());
    assert_eq!(s.receive_packet(&buf[..n], &params, IV), Err(SourceReject::Unauthenticated), "no AH");
    assert_eq!(s.receive_packet(&signed(5), &params, IV).map(|i| i.parameter), Ok(30));
    assert_eq!(s.rate(100, IV), Some(70e9));
    assert_eq!(s.receive_packet(&signed(5), &params, IV), Err(SourceReject::Replayed), "the same number again");
    assert!(s.receive_packet(&signed(4), &params, IV).is_ok(), "late, inside the window");
    let mut tampered = signed(6);
    let last = tampered.len() - 1;
    tampered[last] ^= 1;
    assert_eq!(s.receive_packet(&tampered, &params, IV), Err(SourceReject::Unauthenticated));
    let wrong = AhKey::new(0x700, Algorithm::HmacSha512_256, &[8; 64]).unwrap();
    let mut b = buf;
    let m = protect_ipv6(&mut b, n, &wrong, 7).unwrap();
    assert_eq!(s.receive_packet(&b[..m], &params, IV), Err(SourceReject::Unauthenticated), "another key");
    assert_eq!((s.applied, s.rejected), (2, 4));
    // A source without keys still reads an authenticated CNP.
    let mut plain = SourceModel::new(SourceParams::default());
    plain.add_known_node(ours);
    plain.add_qp(100);
    assert!(plain.receive_packet(&b[..m], &params, IV).is_err(), "an AH it cannot check");
    assert!(plain.receive_packet(&buf[..n], &params, IV).is_ok());
}

// ------------------------------------------------------------ robustness

mod prop {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    enum Op {
        Enq { host: u8, qp: u8, len: u32, ect: bool, roce: bool },
        Deq { pick: u8, len: u32 },
        Rev { host: u8, qp: u8, psn: u32 },
        Poll { qd: u64 },
        Tick { dt: u64 },
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u8..6, 0u8..4, 0u32..2_000_000, any::<bool>(), any::<bool>())
                .prop_map(|(host, qp, len, ect, roce)| Op::Enq { host, qp, len, ect, roce }),
            3 => (any::<u8>(), 0u32..3_000_000).prop_map(|(pick, len)| Op::Deq { pick, len }),
            1 => (0u8..6, 0u8..4, any::<u32>()).prop_map(|(host, qp, psn)| Op::Rev { host, qp, psn }),
            2 => prop_oneof![Just(0u64), 0u64..300_000_000, Just(u64::MAX)].prop_map(|qd| Op::Poll { qd }),
            2 => prop_oneof![0u64..200_000, 0u64..50_000_000].prop_map(|dt| Op::Tick { dt }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn never_panics_counters_never_underflow(
            ops in proptest::collection::vec(op(), 1..300),
            cap in 1usize..6,
            top in 1u8..4,
            suppression: bool,
            adaptive: bool,
            v6: bool,
        ) {
            let mut p = sec7();
            p.flow_capacity = cap;
            p.flow_idle_timeout_ns = 20 * MS;
            p.suppression = suppression;
            p.policy.top_flows = top;
            p.v_ecn = 0.3;
            p.v_growth_kb_per_ms = 5_000.0;
            p.adaptive = adaptive.then(AdaptivePolicy::default);
            prop_assert_eq!(p.validate(), Ok(()));
            let mut c = CongestionPort::new(p);
            let host = |h: u8| if v6 { ip6(u16::from(h)) } else { ip4(h) };
            let mut now = 0u64;
            let mut qd = 0u64;
            // What the test queued per flow slot, to compare.
            let mut held: Vec<(FlowId, u64)> = Vec::new();
            let mut o = Vec::with_capacity(8);
            let mut buf = [0u8; 256];
            for op in ops {
                match op {
                    Op::Enq { host: h, qp, len, ect, roce } => {
                        qd = qd.saturating_add(u64::from(len));
                        let info = data(host(h), host(100), u32::from(qp), now as u32);
                        let (mark, f) = c.on_enqueue(roce.then_some(&info), len, ect, qd, now);
                        prop_assert!(!mark || (ect && qd > c.thresholds().0));
                        if let Some(f) = f {
                            match held.iter_mut().find(|x| x.0 == f) {
                                Some(x) => x.1 += u64::from(len),
                                None => held.push((f, u64::from(len))),
                            }
                        }
                    }
                    Op::Deq { pick, len } => {
                        qd = qd.saturating_sub(u64::from(len));
                        let f = if held.is_empty() { None } else { Some(held[usize::from(pick) % held.len()].0) };
                        c.on_dequeue(f, len, qd, now);
                        if let Some(f) = f {
                            let x = held.iter_mut().find(|x| x.0 == f).unwrap();
                            x.1 = x.1.saturating_sub(u64::from(len));
                        }
                    }
                    Op::Rev { host: h, qp, psn } => {
                        c.on_reverse(&ack(host(100), host(h), u32::from(qp), psn), now);
                    }
                    Op::Poll { qd: q } => {
                        o.clear();
                        c.poll(q, now, &mut o);
                        prop_assert!(o.len() <= o.capacity());
                        if q == 0 {
                            for x in held.iter_mut() { x.1 = 0; }
                        }
                        for r in &o {
                            prop_assert!(r.info.validate().is_ok());
                            prop_assert_eq!(r.format, CnpFormat::Roce);
                            let ours = if v6 { ip6(999) } else { ip4(250) };
                            let n = build_cnp(r, ours, &Params::DEFAULT, p.zero_metrics, &mut buf);
                            prop_assert!(n.is_ok());
                            prop_assert!(parse_cnp(&buf[..n.unwrap()], &Params::DEFAULT).is_some());
                        }
                    }
                    Op::Tick { dt } => now += dt,
                }
                // Per-flow contributions equal the test's own accounting
                // (saturating), for every flow still in the table.
                for &(f, b) in &held {
                    if let Some(q) = c.flow_queued(f) {
                        prop_assert_eq!(q, b);
                    }
                }
                // Aged flows' slots may be reused: forget them.
                held.retain(|&(f, _)| c.flow_queued(f).is_some());
                prop_assert!(c.stats().flows_active <= cap as u64);
            }
        }
    }

    /// The packet path's deferred learning (`on_enqueue_deferred` +
    /// `take_resolved`, trains of one flow sharing a lookup) ends in the
    /// same state as learning each packet at once (`on_enqueue`): the same
    /// flow per packet, bytes queued per flow, counters and CNPs.
    #[derive(Debug, Clone)]
    enum DOp {
        /// `train` back-to-back packets of one flow at the same time.
        Enq { host: u8, qp: u8, len: u32, train: u8, ect: bool, psn: u32 },
        /// A packet of another flow in between at another time.
        Tick { dt: u64 },
        Deq { pick: u8 },
        Poll,
        /// Resolve the deferred lookups now (else at the next call that
        /// needs them).
        Flush,
    }

    fn dop() -> impl Strategy<Value = DOp> {
        prop_oneof![
            6 => (0u8..5, 0u8..3, 1u32..200_000, 1u8..40, any::<bool>(), any::<u32>())
                .prop_map(|(host, qp, len, train, ect, psn)| DOp::Enq { host, qp, len, train, ect, psn }),
            2 => (0u64..3 * MS).prop_map(|dt| DOp::Tick { dt }),
            2 => any::<u8>().prop_map(|pick| DOp::Deq { pick }),
            1 => Just(DOp::Poll),
            2 => Just(DOp::Flush),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn deferred_trains_learn_as_packet_by_packet(
            ops in proptest::collection::vec(dop(), 1..120),
            cap in 1usize..5,
            v6: bool,
        ) {
            let mut p = sec7();
            p.flow_capacity = cap;
            p.flow_idle_timeout_ns = 5 * MS;
            p.v_ecn = 0.3;
            prop_assert_eq!(p.validate(), Ok(()));
            let (mut a, mut b) = (CongestionPort::new(p), CongestionPort::new(p));
            let host = |h: u8| if v6 { ip6(u16::from(h)) } else { ip4(h) };
            let (mut now, mut qd) = (0u64, 0u64);
            // Per packet (tag): its length and flow, learned at once (a) and
            // as handed back by take_resolved (b).
            let mut pk: Vec<(u32, Option<FlowId>, Option<FlowId>)> = Vec::new();
            let mut resolved = 0usize;
            let (mut oa, mut ob) = (Vec::new(), Vec::new());
            for op in ops {
                match op {
                    DOp::Enq { host: h, qp, len, train, ect, psn } => {
                        let info = data(host(h), host(100), u32::from(qp), psn);
                        let key = RoceKey::from_info(&info);
                        for k in 0..u32::from(train) {
                            let info = RoceInfo { psn: psn.wrapping_add(k), ..info };
                            let key = RoceKey { psn: info.psn, ..key };
                            qd += u64::from(len);
                            let (ma, fa) = a.on_enqueue(Some(&info), len, ect, qd, now);
                            if b.pending_full() {
                                b.take_resolved(|t, f| pk[t as usize].2 = f);
                                resolved = pk.len();
                            }
                            let mb = b.on_enqueue_deferred(Some(&key), len, ect, qd, now, pk.len() as u32);
                            prop_assert_eq!(ma, mb);
                            pk.push((len, fa, None));
                        }
                    }
                    DOp::Tick { dt } => now += dt,
                    DOp::Deq { pick } => {
                        b.take_resolved(|t, f| pk[t as usize].2 = f);
                        resolved = pk.len();
                        if !pk.is_empty() {
                            let (len, fa, fb) = pk.swap_remove(usize::from(pick) % pk.len());
                            // swap_remove moved the last tag: keep tags = positions.
                            qd -= u64::from(len);
                            a.on_dequeue(fa, len, qd, now);
                            b.on_dequeue(fb, len, qd, now);
                            resolved = pk.len();
                        }
                    }
                    DOp::Poll => {
                        b.take_resolved(|t, f| pk[t as usize].2 = f);
                        resolved = pk.len();
                        oa.clear();
                        ob.clear();
                        a.poll(qd, now, &mut oa);
                        b.poll(qd, now, &mut ob);
                        prop_assert_eq!(&oa, &ob);
                    }
                    DOp::Flush => {
                        b.take_resolved(|t, f| pk[t as usize].2 = f);
                        resolved = pk.len();
                    }
                }
                if resolved == pk.len() {
                    for (i, &(_, fa, fb)) in pk.iter().enumerate() {
                        prop_assert_eq!(fa, fb, "packet {}", i);
                        if let Some(f) = fa {
                            prop_assert_eq!(a.flow_queued(f), b.flow_queued(f));
                        }
                    }
                    prop_assert_eq!(a.stats(), b.stats());
                }
            }
        }
    }
}

/// Go-back-N as the port sees it: a train of one flow that goes back
/// inside it (one batched lookup for its five packets: 11, 12, 13, then 11,
/// 12 again, the last asking for an ACK) is fenced up to where five packets
/// after PSN 10 could have reached (14), so neither its AckReq nor those of
/// 13 and 14 sent after it are timed; 15, new data, is.
#[test]
fn a_train_that_goes_back_is_not_timed_by_the_port() {
    let mut c = CongestionPort::new(PortParams { ack_rtt: Some(AckRttParams { window_ns: 10_000 * MS, timeout_ns: 1_000 * MS }), ..sec7() });
    let (a, b) = (ip6(1), ip6(2));
    let send = |c: &mut CongestionPort, psn: u32, t: u64| {
        c.on_enqueue(Some(&data(a, b, 200, psn)), 1000, true, 1000, t);
        c.on_dequeue(c.flow_id(a, b, 200), 1000, 0, t);
    };
    send(&mut c, 10, 0);
    for (i, psn) in [11u32, 12, 13, 11, 12 | ACK_REQ].into_iter().enumerate() {
        c.on_enqueue_deferred(Some(&RoceKey::from_info(&data(a, b, 200, psn))), 1000, true, 1000 * (i as u64 + 1), MS, i as u32);
    }
    let mut flows = vec![];
    c.take_resolved(|_, f| flows.push(f.unwrap()));
    assert_eq!(flows.len(), 5);
    for f in flows {
        c.on_dequeue(Some(f), 1000, 0, MS);
    }
    let m = c.ack_rtt().unwrap();
    assert_eq!((m.timed, m.retransmissions_skipped), (0, 1));
    send(&mut c, 13 | ACK_REQ, 2 * MS);
    send(&mut c, 14 | ACK_REQ, 2 * MS);
    assert_eq!((c.ack_rtt().unwrap().timed, c.ack_rtt().unwrap().retransmissions_skipped), (0, 3), "14 is within the train's reach");
    send(&mut c, 15 | ACK_REQ, 3 * MS);
    c.on_reverse(&ack(b, a, 77, 15), 9 * MS);
    let m = c.ack_rtt().unwrap();
    assert_eq!((m.timed, m.samples, m.last_ns), (1, 1, 6 * MS));
}

/// RTT_est by receiver reporting (`ack_rtt`): the port times a data packet
/// with AckReq from the moment it leaves the queue (the time it waited
/// here does not count) to its flow's ACK covering it, through the same
/// calls the worker makes: deferred learning, dequeue, the reverse path.
/// The first ACK also teaches the source QP; a change of RTT_est (the
/// control thread following the estimate) keeps the measurement.
#[test]
fn receivers_acks_time_the_round_trip_beyond_the_queue() {
    let params = PortParams { ack_rtt: Some(AckRttParams { window_ns: 10_000 * MS, timeout_ns: 1_000 * MS }), ..sec7() };
    let mut c = CongestionPort::new(params);
    assert_eq!(CongestionPort::new(sec7()).ack_rtt(), None, "off unless configured");
    let (a, b) = (ip6(1), ip6(2));
    let key = |psn: u32| RoceKey::from_info(&data(a, b, 200, psn));
    // PSN 1..=3 queued at t=0; only PSN 3 asks for an ACK.
    for (i, psn) in [1u32, 2, 3 | ACK_REQ].into_iter().enumerate() {
        c.on_enqueue_deferred(Some(&key(psn)), 1000, true, 1000 * (i as u64 + 1), 0, i as u32);
    }
    let mut flows = vec![];
    c.take_resolved(|_, f| flows.push(f.unwrap()));
    // They leave 2 ms, 3 ms and 5 ms later (the queue drains).
    for (f, t) in flows.iter().zip([2, 3, 5]) {
        c.on_dequeue(Some(*f), 1000, 0, t * MS);
    }
    assert_eq!(c.ack_rtt().unwrap().timed, 1);
    // The receiver's ACK for PSN 3 (src QP 77, unknown so far) 20 ms later.
    c.on_reverse(&ack(b, a, 77, 3), 25 * MS);
    assert_eq!(c.flow_source_qp(a, b, 200), Some(77));
    let m = c.ack_rtt().unwrap();
    assert_eq!((m.samples, m.last_ns, m.estimate_ns), (1, 20 * MS, 20 * MS));
    // RTT_est follows (the control thread): the measurement stays.
    c.set_params(PortParams { rtt_est_ns: 20 * MS, ..params });
    assert_eq!(c.ack_rtt().unwrap().estimate_ns, 20 * MS);
    // A NAK for the next timed packet abandons it; the one after it is
    // measured (18 ms, now the smallest).
    c.on_enqueue(Some(&data(a, b, 200, 4 | ACK_REQ)), 1000, true, 1000, 30 * MS);
    c.on_dequeue(c.flow_id(a, b, 200), 1000, 0, 30 * MS);
    c.on_reverse(&RoceInfo { syndrome: 0x60, ..ack(b, a, 77, 3) }, 31 * MS);
    c.on_enqueue(Some(&data(a, b, 200, 5 | ACK_REQ)), 1000, true, 1000, 40 * MS);
    c.on_dequeue(c.flow_id(a, b, 200), 1000, 0, 40 * MS);
    c.on_reverse(&ack(b, a, 77, 5), 58 * MS);
    let m = c.ack_rtt().unwrap();
    assert_eq!((m.timed, m.samples, m.discarded, m.estimate_ns), (3, 2, 1, 18 * MS));
    // The published view carries it.
    assert_eq!(c.view(0, Default::default(), 60 * MS).ack_rtt, Some(m));
    // Switched off at run time: gone.
    c.set_params(sec7());
    assert_eq!(c.ack_rtt(), None);
}

/// RTT_est from ACKs in the worker: the ACK that ends a timed round trip is
/// dated by the worker's clock when the port handles it (never before the
/// loop's time, which was taken before the ACK was received), so a worker
/// descheduled between the two cannot shorten the round trip. The clock is
/// read for that ACK only, not for the other responses.
#[test]
fn the_ack_that_ends_a_round_trip_is_dated_when_it_is_handled() {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let params = PortParams { ack_rtt: Some(AckRttParams { window_ns: 10_000 * MS, timeout_ns: 1_000 * MS }), ..sec7() };
    let mut c = CongestionPort::new(params);
    let clock = Arc::new(AtomicU64::new(0));
    let reads = Arc::new(AtomicU64::new(0));
    {
        let (clock, reads) = (clock.clone(), reads.clone());
        c.set_clock(Arc::new(move || {
            reads.fetch_add(1, Ordering::Relaxed);
            clock.load(Ordering::Relaxed)
        }));
    }
    let (a, b) = (ip6(1), ip6(2));
    let send = |c: &mut CongestionPort, psn: u32, t: u64| {
        c.on_enqueue(Some(&data(a, b, 200, psn)), 1000, true, 1000, t);
        c.on_dequeue(c.flow_id(a, b, 200), 1000, 0, t);
    };
    send(&mut c, 1, 0);
    // A response that ends no timing (none is running): no clock read.
    c.on_reverse(&ack(b, a, 77, 1), MS);
    assert_eq!(reads.load(Ordering::Relaxed), 0);
    // Timed from 10 ms; the loop that receives the ACK began at 39 ms, and
    // the ACK is handled at 41 ms (the worker was descheduled in between,
    // while the ACK arrived): 31 ms, not 29.
    send(&mut c, 2 | ACK_REQ, 10 * MS);
    clock.store(41 * MS, Ordering::Relaxed);
    c.on_reverse(&ack(b, a, 77, 2), 39 * MS);
    assert_eq!(reads.load(Ordering::Relaxed), 1);
    let m = c.ack_rtt().unwrap();
    assert_eq!((m.samples, m.last_ns, m.estimate_ns), (1, 31 * MS, 31 * MS));
    // A clock behind the loop's time (another core's reading) never dates
    // the ACK earlier than the loop.
    send(&mut c, 3 | ACK_REQ, 50 * MS);
    clock.store(70 * MS, Ordering::Relaxed);
    c.on_reverse(&ack(b, a, 77, 3), 80 * MS);
    let m = c.ack_rtt().unwrap();
    assert_eq!((m.samples, m.last_ns, m.estimate_ns), (2, 30 * MS, 30 * MS));
    assert_eq!(reads.load(Ordering::Relaxed), 2);
}
