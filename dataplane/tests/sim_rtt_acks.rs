//! RTT_est by receiver reporting (draft-tian-ccwg-long-haul-cnp s.5.3.1,
//! `[port.congestion.rtt_acks]`) on the deterministic multi-node harness
//! ([`dataplane::sim`]): the real pipeline and egress port of a node whose
//! WAN queue fills, virtual time.
//!
//! ```text
//!   S 10.0.0.1 --10 us-- N1 ==2 ms (WAN port shaped to 1 Gb/s)== D 10.0.4.1
//! ```
//!
//! S sends RoCEv2 RC SENDs to D at 2 Gb/s, asking for an ACK on every 16th
//! packet; D acknowledges exactly those. N1's WAN queue grows at 1 Gb/s for
//! the whole run, so a packet that asks for an ACK waits ever longer in it
//! (about 75 ms by the end). The round trip N1 measures must stay the
//! WAN's: 2 x 2 ms plus serialisation, whatever the queue holds.

use std::net::Ipv4Addr;

use dataplane::congestion::{AckRttParams, Policy, PortParams};
use dataplane::egress::EgressConfig;
use dataplane::node::CongestionSpec;
use dataplane::sim::{Endpoint, FlowKind, FlowSpec, Pace, PortSpec, Sim, SimConfig};

const MS: u64 = 1_000_000;
const US: u64 = 1_000;
const WAN_RATE: u64 = 1_000_000_000;

fn ip(s: &str) -> Ipv4Addr {
    s.parse().unwrap()
}

#[test]
fn the_round_trip_from_acks_leaves_the_nodes_own_queue_out() {
    let mut sim = Sim::new(SimConfig { tick_ns: 10 * US, sample_ns: 0, ..SimConfig::default() });
    let queue = 128u64 << 20;
    let egress = |rate: u64, bytes: u64| EgressConfig { rate_bps: rate, queue_bytes: bytes, burst_bytes: 4096, max_packets: 200_000, priority_packets: 256, ..EgressConfig::default() };
    // K_base above anything the queue reaches: no marks, no CNPs, only the
    // measurement.
    let params = PortParams {
        rate_bps: WAN_RATE,
        rtt_est_ns: 100 * US,
        k_base_bytes: 48 << 20,
        v_ecn: 1.0,
        v_growth_kb_per_ms: 1e9,
        policy: Policy { buffer_bytes: queue, ..Policy::default() },
        ack_rtt: Some(AckRttParams { window_ns: 1_000 * MS, timeout_ns: 100 * MS }),
        ..PortParams::default()
    };
    params.validate().unwrap();
    let spec = CongestionSpec { params, source_v4: None, source_v6: None, end_e_sid: None, notify_sids: Vec::new(), tunnel_pes: Vec::new(), source_qps: Vec::new(), source_formats: Vec::new(), auth: Default::default() };
    let n1 = sim.add_node(
        "N1",
        vec![
            PortSpec { addr: "10.0.0.254/24".parse().unwrap(), egress: egress(10_000_000_000, 64 << 20), congestion: None },
            PortSpec { addr: "10.0.4.254/24".parse().unwrap(), egress: egress(WAN_RATE, queue), congestion: Some(spec) },
        ],
    );
    let s = sim.add_host("S", ip("10.0.0.1"));
    let d = sim.add_host("D", ip("10.0.4.1"));
    sim.link(Endpoint::Host(s), Endpoint::Node(n1, 0), 10_000_000_000, 10 * US);
    sim.link(Endpoint::Node(n1, 1), Endpoint::Host(d), 10_000_000_000, 2 * MS);
    sim.route(n1, "10.0.0.1/32", 0);
    sim.route(n1, "10.0.4.1/32", 1);
    sim.set_acks(d, 16, 200, ip("10.0.0.1"), 100);
    let f = sim.add_flow(
        s,
        FlowSpec { dst: ip("10.0.4.1"), kind: FlowKind::Roce { src_qp: 100, dst_qp: 200 }, payload: 1024, start_ns: 0, stop_ns: u64::MAX, pace: Pace::Fixed(2e9), sport: 0xc100 },
    );
    sim.set_ack_requests(s, f, 16);

    // The serialisation of a data frame and of an ACK at 10 Gb/s, and the
    // node's tick, on top of the 4 ms of propagation.
    let wan = 4 * MS;
    let slack = 30 * US;
    let mut seen = Vec::new();
    for t in (10..=150).step_by(10) {
        sim.run_until(t * MS);
        let a = sim.nodes[n1].ports[1].cong.as_ref().unwrap().ack_rtt().unwrap();
        let qd = sim.nodes[n1].ports[1].queue.depth_bytes();
        seen.push((t, a.samples, a.last_ns, a.estimate_ns, qd));
        if a.samples > 0 {
            assert!((wan..wan + slack).contains(&a.last_ns), "at {t} ms the last round trip is the WAN's, not the queue's {} ms: {seen:?}", qd * 8 * 1000 / WAN_RATE);
            assert!((wan..wan + slack).contains(&a.estimate_ns), "{seen:?}");
        }
    }
    let a = sim.nodes[n1].ports[1].cong.as_ref().unwrap().ack_rtt().unwrap();
    eprintln!("(ms, samples, last ns, estimate ns, queue bytes): {seen:?}\n{a:?}");
    assert!(a.timeouts == 0 && a.discarded == 0 && a.timed >= a.samples, "{a:?}");
    // The queue grows at 1 Gb/s throughout, so a packet enqueued at t
    // leaves at about 2t: one timing at a time, the timed packets wait
    // ever longer, and the samples come about one per own queueing delay
    // plus round trip. Those taken after 90 ms timed packets that had
    // waited 40 ms and more in N1's queue, and still read 4 ms.
    let at = |t: u64| seen.iter().find(|x| x.0 == t).unwrap().1;
    assert!(at(10) >= 1 && at(150) > at(90), "{seen:?}");
    let qd = sim.nodes[n1].ports[1].queue.depth_bytes();
    assert!(qd * 8 * 1000 / WAN_RATE >= 140, "queue {qd} bytes: {seen:?}");
    assert!(sim.hosts[d].acks_sent > 1000, "D acknowledged every 16th packet");
}
