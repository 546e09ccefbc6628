//! The deterministic simulation harnesses, from a review (`dataplane::sim`,
//! `dataplane::sim6`, `dataplane::sim_wan`) against what DESIGN.md
//! ("Testing") and draft-tian-ccwg-long-haul-cnp-00 s.5.4-5.7 / s.7 need from
//! them: links with a rate and a propagation delay (serialisation
//! bytes * 8 / rate, FIFO, arrival after both), monotonic virtual time, the
//! real node pipelines, notifications over links.
//!
//! Tests marked "Rule / Was" failed on the code before its fix; tests marked
//! "Guards" pass and catch a mutation that the existing tests on the same
//! harness (sim_long_haul, sim_rtt_acks on `dataplane::sim`) let through.

use std::net::{Ipv4Addr, Ipv6Addr};

use dataplane::egress::EgressConfig;
use dataplane::sim::{Endpoint, FlowKind, FlowSpec, Pace, PortSpec, Sim, SimConfig, MS, US};

fn ip(s: &str) -> Ipv4Addr {
    s.parse().unwrap()
}

fn a6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

fn udp(dst: Ipv4Addr, payload: usize, rate: f64, start_ns: u64, stop_ns: u64) -> FlowSpec {
    FlowSpec { dst, kind: FlowKind::Udp { dport: 9 }, payload, start_ns, stop_ns, pace: Pace::Fixed(rate), sport: 0xc000 }
}

/// Two hosts joined by one link (no node): the wire model alone.
fn two_hosts(rate_bps: u64, delay_ns: u64) -> (Sim, usize, usize) {
    let mut sim = Sim::new(SimConfig { tick_ns: 100 * US, sample_ns: 0, ..SimConfig::default() });
    let a = sim.add_host("A", ip("10.0.0.1"));
    let b = sim.add_host("B", ip("10.0.0.2"));
    sim.link(Endpoint::Host(a), Endpoint::Host(b), rate_bps, delay_ns);
    (sim, a, b)
}

/// Frames (UDP over IPv4) `payload` + 42 octets.
const UDP_HDRS: u64 = 42;

// ------------------------------------------------------------------ sim.rs

/// Guards: dataplane/src/sim.rs:562 (`Sim::transmit`), the arrival time
/// `let (t, to) = (wire.busy_until_ps.div_ceil(1000) + wire.delay_ns, wire.to);`
/// replaced by `let (t, to) = (now + wire.delay_ns, wire.to);` (no
/// serialisation: a frame "arrives" one propagation delay after its first
/// bit left, or before the frame still ahead of it on the wire has
/// finished). sim_long_haul (all 3) and sim_rtt_acks pass under it: their
/// timing checks are relative to the configured delays and to the shapers,
/// with >= 1 us of slack. (A per-frame rounding of the serialisation to
/// whole ns, and frames overlapping on the wire, are caught by
/// sim_long_haul too; this test also fails under both.)
///
/// Two flows of one host share a 10 Gb/s, 5 us wire, both offered faster
/// than it: the wire runs back to back, frame k (of 1042 octets, plus the
/// 24 of Ethernet framing a link between two hosts carries: 852.8 ns)
/// arrives exactly at ceil(k * 852.8 ns) + 5 us, in the order sent, with no
/// drift after 500 frames.
#[test]
fn wire_serialises_back_to_back_exactly_in_order_and_without_drift() {
    let (mut sim, a, b) = two_hosts(10_000_000_000, 5 * US);
    let payload = 1000usize;
    // On the wire: the frame and the per-frame overhead (the next test's
    // rule; `Sim::link` gives a link between hosts the default framing).
    let frame_bits = (payload as u64 + UDP_HDRS + u64::from(dataplane::egress::ETHERNET_FRAME_OVERHEAD)) * 8;
    // Stop once 1000 frames in all have gone (the wire is the bottleneck).
    let stop = 1000 * frame_bits * 1_000_000_000 / 10_000_000_000 / 2;
    sim.add_flow(a, udp(ip("10.0.0.2"), payload, 40e9, 0, stop));
    sim.add_flow(a, udp(ip("10.0.0.2"), payload, 40e9, 0, stop));
    // Arrival of the k-th frame on the wire, ps exact, rounded up to the ns.
    let arrival = |k: u64| (k * frame_bits * 1_000_000_000_000 / 10_000_000_000).div_ceil(1000) + 5 * US;
    let check = |sim: &mut Sim, k: u64| {
        sim.run_until(arrival(k) - 1);
        assert_eq!(sim.hosts[b].rx.pkts, k - 1, "frame {k} not before {} ns", arrival(k));
        sim.run_until(arrival(k));
        assert_eq!(sim.hosts[b].rx.pkts, k, "frame {k} at {} ns", arrival(k));
    };
    for k in [1, 2, 3, 4, 250] {
        check(&mut sim, k);
    }
    sim.run_until(stop);
    let sent = sim.hosts[a].flow_sent(0).0 + sim.hosts[a].flow_sent(1).0;
    assert!(sent >= 500, "{sent}");
    for k in [sent - 1, sent] {
        check(&mut sim, k);
    }
    sim.run_until(stop + 10 * US);
    assert_eq!(sim.hosts[b].rx.bytes, sent * (payload as u64 + UDP_HDRS));
}

/// Rule: a host's NIC cannot put more than its line rate on the wire, and
/// Ethernet line rate counts, per frame, the 24 octets of preamble, SFD,
/// FCS and inter-frame gap (frames padded to 60 octets): the cost the egress
/// shaper charges with `EgressConfig::default()` (dataplane/src/egress.rs
/// `wire_cost`, `ETHERNET_FRAME_OVERHEAD`, "so that the wire, not the
/// frames, runs at rate_bps"). So a source at line rate R through a port
/// shaped at the same R with the default EgressConfig builds no queue.
/// Was: `Sim::transmit` serialises `pkt.len() * 8 / rate` (no overhead, no
/// padding), so a 10 Gb/s host puts 10 Gb/s of frame bits on a 10 Gb/s link,
/// 2.3 % more than the shaper lets out with 1042-octet frames: a phantom
/// queue of ~217 KB after 10 ms (and a QGR, ECN marks and CNPs that a real
/// port would not produce). sim_long_haul avoids it only by setting
/// `frame_overhead: 0` everywhere; sim_rtt_acks uses the default.
#[test]
fn a_line_rate_source_through_a_port_shaped_at_line_rate_builds_no_queue() {
    let r = 10_000_000_000u64;
    let mut sim = Sim::new(SimConfig { tick_ns: 10 * US, sample_ns: 0, ..SimConfig::default() });
    let plain = |addr: &str| PortSpec { addr: addr.parse().unwrap(), egress: EgressConfig::default(), congestion: None };
    let n = sim.add_node("N", vec![plain("10.0.0.254/24"), PortSpec { addr: "10.0.4.254/24".parse().unwrap(), egress: EgressConfig { rate_bps: r, ..EgressConfig::default() }, congestion: None }]);
    let s = sim.add_host("S", ip("10.0.0.1"));
    let d = sim.add_host("D", ip("10.0.4.1"));
    sim.link(Endpoint::Host(s), Endpoint::Node(n, 0), r, US);
    sim.link(Endpoint::Node(n, 1), Endpoint::Host(d), r, US);
    sim.route(n, "10.0.0.1/32", 0);
    sim.route(n, "10.0.4.1/32", 1);
    // "Line rate": the host sends as fast as its 10 Gb/s NIC lets it.
    sim.add_flow(s, udp(ip("10.0.4.1"), 1000, r as f64, 0, u64::MAX));
    sim.run_until(10 * MS);
    let q = &sim.nodes[n].ports[1].queue;
    assert_eq!(q.stats.tail_drops, 0);
    let frame = 1000 + UDP_HDRS;
    assert!(q.depth_bytes() <= 2 * frame, "a standing queue of {} octets at line rate in, line rate out", q.depth_bytes());
}

/// Rule: a NIC holds at most its TX ring (`tx_desc` <= 16384 descriptors,
/// control/src/config.rs) of frames waiting for the wire; beyond it
/// `tx_burst` refuses and the worker puts the packets back at the head of
/// the egress queue (worker.rs `service_egress` "Backpressure",
/// egress.rs `requeue_front`), where QD (s.5.3.1) counts them, the queue
/// limit tail-drops them and the congestion stage marks and notifies. So
/// when the link behind a port is slower than the port's shaper (a link
/// that came up at a lower speed, a WAN rate below R_port), everything but
/// one ring's worth of the excess is in QD or dropped.
/// Was: "The NIC takes whatever the shaper releases" (sim.rs `service` ->
/// `transmit` has no limit: `busy_until_ps` grows without bound), so 10 Gb/s
/// shaped into a 1 Gb/s link for 20 ms leaves ~21 600 frames (22 MB, 180 ms
/// of delay) invisibly on the wire while QD stays at 0 and nothing is
/// dropped, marked or notified; the worker's requeue path is never run.
#[test]
fn frames_the_link_cannot_take_wait_in_the_egress_queue_not_on_the_wire() {
    let mut sim = Sim::new(SimConfig { tick_ns: 10 * US, sample_ns: 0, ..SimConfig::default() });
    let frame = 1000 + UDP_HDRS;
    let eg = EgressConfig { rate_bps: 10_000_000_000, queue_bytes: 64 << 20, burst_bytes: 4 * frame, max_packets: 65536, priority_packets: 256, frame_overhead: 0, ..EgressConfig::default() };
    let n = sim.add_node(
        "N",
        vec![
            PortSpec { addr: "10.0.0.254/24".parse().unwrap(), egress: EgressConfig::default(), congestion: None },
            PortSpec { addr: "10.0.4.254/24".parse().unwrap(), egress: eg, congestion: None },
        ],
    );
    let s = sim.add_host("S", ip("10.0.0.1"));
    let d = sim.add_host("D", ip("10.0.4.1"));
    sim.link(Endpoint::Host(s), Endpoint::Node(n, 0), 10_000_000_000, US);
    sim.link(Endpoint::Node(n, 1), Endpoint::Host(d), 1_000_000_000, US);
    sim.route(n, "10.0.0.1/32", 0);
    sim.route(n, "10.0.4.1/32", 1);
    sim.add_flow(s, udp(ip("10.0.4.1"), 1000, 10e9, 0, 20 * MS));
    sim.run_until(20 * MS);
    let sent = sim.hosts[s].flow_sent(0).0;
    let received = sim.hosts[d].rx.pkts;
    let q = &sim.nodes[n].ports[1].queue;
    let in_queue = q.depth_bytes() / frame + q.stats.tail_drops;
    // In flight on the two links: a frame or two.
    let beyond_queue = sent - received - in_queue;
    assert!(beyond_queue <= 16384 + 2, "sent {sent}, received {received}, in the egress queue or dropped {in_queue}: {beyond_queue} frames wait on the wire beyond any TX ring (QD {})", q.depth_bytes());
}

/// Rule: a flow added to a running simulation (between two `run_until`
/// calls, as sim_rtt_acks steps it) starts at its `start_ns`.
/// Was: `Sim::add_flow` only records it; the first `Ev::Send` and the
/// frame template are made in `Sim::build`, which runs once (sim.rs
/// `build`, `if self.built { return }`), so the flow silently never sends.
#[test]
fn a_flow_added_after_the_start_sends() {
    let (mut sim, a, b) = two_hosts(10_000_000_000, US);
    sim.add_flow(a, udp(ip("10.0.0.2"), 1000, 1e9, 0, MS));
    sim.run_until(2 * MS);
    let before = sim.hosts[b].rx.pkts;
    assert!(before > 100);
    let f = sim.add_flow(a, udp(ip("10.0.0.2"), 1000, 1e9, 3 * MS, 4 * MS));
    sim.run_until(5 * MS);
    // 1 Gb/s of 1042-octet frames for 1 ms: 120.
    assert_eq!(sim.hosts[a].flow_sent(f).0, 120);
    assert_eq!(sim.hosts[b].rx.pkts, before + 120);
}

// ------------------------------------------------------------------ sim6.rs

/// Rule: virtual time never goes backwards (DESIGN.md invariant 3, a
/// deterministic clock): a frame handed to `Sim6::send` for a time already
/// past is refused or sent now, never delivered before the present.
/// Was: `Sim6::send` schedules `at + delay` unchecked and `Sim6::run_until`
/// sets `now = t` for every event popped (sim6.rs `run_until`), so after
/// running to 100 us a frame sent "at 0" is forwarded by the node at 1 us
/// and reaches the other host at 2 us: the nodes' pipelines see their
/// clock jump back 99 us.
#[test]
fn sim6_time_does_not_go_backwards() {
    use dataplane::sim6::{End6, Sim6};
    let mut sim = Sim6::new(10 * US);
    let n = sim.add_node("N", &["2001:db8:1::1/64", "2001:db8:2::1/64"]);
    let h1 = sim.add_host("H1", "2001:db8:1::10");
    let h2 = sim.add_host("H2", "2001:db8:2::10");
    sim.link(End6::Host(h1), End6::Node(n, 0), US);
    sim.link(End6::Node(n, 1), End6::Host(h2), US);
    sim.build();
    let f = dataplane::sim_wan::udp6_frame([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2], a6("2001:db8:1::10"), a6("2001:db8:2::10"), 0, 1, 2, 100);
    sim.send(h1, 0, &f[14..]);
    sim.run_until(100 * US);
    assert_eq!(sim.hosts[h2].received.len(), 1);
    assert_eq!(sim.hosts[h2].received[0].0, 2 * US);
    // A second datagram, "at 0" again, handed over at 100 us.
    sim.send(h1, 0, &f[14..]);
    sim.run_until(200 * US);
    assert_eq!(sim.hosts[h2].received.len(), 2);
    let t = sim.hosts[h2].received[1].0;
    assert!(t >= 100 * US, "delivered at {t} ns, after the harness had reached 100 us");
}

/// An S1 -> edge node -> R1, R2 End.MT setup (draft-li-spring-rdma-
/// multicast-over-srv6 s.4.2, as sim_end_mt.rs builds it): S1's RC SEND
/// ONLY of `payload` octets to the Proxy Address in an SRH [SID, Proxy]
/// SL 1 whose End.MT TLV names the edge and R1, R2. Returns the copies
/// R1 and R2 received and the node's replica-build drops.
fn end_mt_copies(payload: usize) -> (usize, usize, u64) {
    use dataplane::counters::Drop;
    use dataplane::sim6::{End6, Sim6};
    use dataplane::srv6::{Behaviour, SidTable};
    use dataplane::wire::params::Params;
    use dataplane::wire::roce;
    use dataplane::wire::srh::{EndMtReceiver, EndMtRepr, Srh, SrhRepr, TlvRepr};
    let (s1, proxy, sid) = (a6("2001:db8:5::1"), a6("2001:db8:ff::1"), a6("fc00:0:1::10"));
    let rcv = [(a6("2001:db8:a1::10"), 0xa001u32), (a6("2001:db8:a2::10"), 0xa002u32)];
    let mut sim = Sim6::new(10 * US);
    let n = sim.add_node("N1", &["2001:db8:5::6/64", "2001:db8:a1::1/64", "2001:db8:a2::1/64"]);
    let s = sim.add_host("S1", "2001:db8:5::1");
    let r: Vec<usize> = rcv.iter().enumerate().map(|(i, (a, _))| sim.add_host(&format!("R{}", i + 1), &a.to_string())).collect();
    sim.link(End6::Host(s), End6::Node(n, 0), US);
    sim.link(End6::Node(n, 1), End6::Host(r[0]), US);
    sim.link(End6::Node(n, 2), End6::Host(r[1]), US);
    let mut t = SidTable::new(&Params::DEFAULT);
    t.insert(sid, Behaviour::EndMT { receivers_extra: vec![], hmac_required: false, downstream: vec![] });
    sim.set_sids(n, t);
    sim.build();
    let ip6 = |src: Ipv6Addr, dst: Ipv6Addr, nh: u8, body: &[u8]| {
        let mut h = vec![0u8; 40];
        h[0] = 0x60;
        h[4..6].copy_from_slice(&(body.len() as u16).to_be_bytes());
        h[6] = nh;
        h[7] = 64;
        h[8..24].copy_from_slice(&src.octets());
        h[24..40].copy_from_slice(&dst.octets());
        h.extend_from_slice(body);
        h
    };
    // Inner: RoCEv2 RC SEND ONLY to the Proxy Address, PSN 1, valid ICRC.
    let mut u = vec![0u8; 8];
    u[0..2].copy_from_slice(&0xc100u16.to_be_bytes());
    u[2..4].copy_from_slice(&4791u16.to_be_bytes());
    let mut bth = [0u8; 12];
    bth[0] = 0x04;
    bth[2..4].copy_from_slice(&0xffffu16.to_be_bytes());
    bth[7] = 1;
    bth[8] = 0x80;
    bth[11] = 1;
    u.extend_from_slice(&bth);
    u.extend((0..payload).map(|i| i as u8));
    u.extend_from_slice(&[0; 4]);
    let ulen = u.len() as u16;
    u[4..6].copy_from_slice(&ulen.to_be_bytes());
    let mut inner = ip6(s1, proxy, 17, &u);
    roce::icrc_fill(&mut inner).unwrap();
    {
        use dataplane::wire::checksum;
        let sum = checksum::combine(checksum::pseudo_v6(&s1.octets(), &proxy.octets(), 17, u32::from(ulen)), checksum::sum(&inner[40..]));
        let c = !checksum::fold(sum);
        inner[46..48].copy_from_slice(&(if c == 0 { 0xffff } else { c }).to_be_bytes());
    }
    let tlv = TlvRepr::EndMt(EndMtRepr { tlv_type: Params::DEFAULT.srh_tlv_end_mt, edge_node_address: sid, receivers: rcv.iter().map(|&(address, qpn)| EndMtReceiver { address, qpn }).collect() });
    let mut srh_r = SrhRepr::for_path(41, &[sid, proxy], vec![tlv]);
    srh_r.segments_left = 1;
    let mut srh = vec![0u8; srh_r.buffer_len()];
    srh_r.emit(&mut Srh::new_unchecked(&mut srh[..])).unwrap();
    srh.extend_from_slice(&inner);
    sim.send(s, 0, &ip6(s1, sid, 43, &srh));
    sim.run_until(100 * US);
    let drops = sim.drops(n, Drop::NoHeadroom) + sim.drops(n, Drop::ReplicaInvalid);
    (sim.hosts[r[0]].received.len(), sim.hosts[r[1]].received.len(), drops)
}

/// Rule: the harness's nodes take every frame their interfaces' MTU (9000,
/// sim6.rs `build`) allows and build End.MT copies of it, as the router
/// does: its configuration guarantees that an mbuf holds a whole frame of
/// the port's MTU (control/src/config.rs: `mtu + 18 + 128 <= data_room`),
/// and RoCEv2 runs with a 4096-octet path MTU. So a 4000-octet RC SEND is
/// replicated to R1 and R2 like a 256-octet one.
/// Was: sim6.rs `Sim6::node_rx` builds each copy into
/// `VecPacket::from_bytes(&[])`, whose capacity is 2048 + 128 octets
/// (packet.rs `VecPacket::CAPACITY`): `build_replica` fails with
/// `no-headroom` and neither receiver gets anything. (sim.rs `node_rx`
/// builds its copies the same way; sim_end_mt only ever sends 256-octet
/// payloads.)
#[test]
fn sim6_end_mt_replicates_a_4k_rocev2_payload() {
    assert_eq!(end_mt_copies(256), (1, 1, 0), "the setup replicates a small packet");
    assert_eq!(end_mt_copies(4000), (1, 1, 0), "(copies at R1, copies at R2, no-headroom + replica-invalid drops)");
}

// ------------------------------------------------------------------ sim_wan.rs

mod wan {
    use super::*;
    use dataplane::sim_wan::{Endpoint as E, Flow, WanConfig, WanSim};

    /// S -- N -- D, both links `rate` / `delay`; returns (sim, S, D, link N-D).
    fn line(rate: u64, d1: u64, d2: u64) -> (WanSim, usize, usize, usize) {
        let mut sim = WanSim::new(WanConfig::default());
        let n = sim.add_node("N", "fc00::1", 2);
        let s = sim.add_host("S", "2001:db8:1::10");
        let d = sim.add_host("D", "2001:db8:2::10");
        sim.link(E::Host(s), E::Node(n, 0), rate, d1);
        let l = sim.link(E::Node(n, 1), E::Host(d), rate, d2);
        (sim, s, d, l)
    }

    /// Rule: a link serialises a frame in `len * 8 / rate`; back-to-back
    /// frames do not drift from that (DESIGN.md "links with rate and
    /// delay"; sim.rs keeps picoseconds for exactly this reason: "exact
    /// serialisation: no rounding drift").
    /// Was: sim_wan.rs `WanSim::transmit` rounds each frame's time up to a
    /// whole ns (`div_ceil(rate)`): a 1014-octet frame at 100 Gb/s takes
    /// 82 ns instead of 81.12, the link runs at 98.9 Gb/s, and after 1000
    /// back-to-back frames the last arrives 880 ns late. (Host pacing,
    /// `host_send`'s `gap`, rounds up the same way.)
    #[test]
    fn wan_links_serialise_without_rounding_drift() {
        let (mut sim, s, d, _) = line(100_000_000_000, US, US);
        // 1000-octet IPv6 packets (1014-octet frames) offered at 100 Gb/s of
        // IPv6 (80 ns apart): the first link is the bottleneck, back to back.
        sim.add_flow(s, Flow { dst: a6("2001:db8:2::10"), rate_bps: 100_000_000_000, len: 1000, start: 0, stop: 80_000, ports: 1, tc: 0 });
        sim.run_until(200 * US);
        assert_eq!(sim.host_sent(s), 1000);
        assert_eq!(sim.host_rx_count(d), 1000);
        // Frame k leaves the first link at k * 81.12 ns, is forwarded at
        // once (the second link is free just then) and reaches D at
        // (k + 1) * 81.12 ns + 2 us: the last at 83 201.12 ns.
        let last = (1001 * 1014 * 8 * 1000u64 / 100).div_ceil(1000) + 2 * US;
        assert_eq!(last, 83_202);
        assert_eq!(sim.host_rx_between(d, 0, last + 2), 1000, "all 1000 frames by {} ns", last + 2);
    }

    /// Rule: virtual time never goes backwards (DESIGN.md invariant 3);
    /// `run_until` to a time already past leaves the clock where it is (as
    /// `Sim::run_until` and `Sim6::run_until` do: `now.max(t_end)`).
    /// Was: sim_wan.rs `WanSim::run_until` ends with `self.now = t_end`, so
    /// running to 1 ms after 2 ms puts the clock back to 1 ms; what is done
    /// next (`deliver`, the events pushed from `now`) happens in the past.
    #[test]
    fn wan_time_does_not_go_backwards() {
        let (mut sim, _, _, _) = line(1_000_000_000, US, US);
        sim.run_until(2 * MS);
        assert_eq!(sim.now, 2 * MS);
        sim.run_until(MS);
        assert_eq!(sim.now, 2 * MS, "the clock went back");
    }

    /// Rule: a link that fails loses what is on it: frames still being
    /// serialised or propagating when it goes down do not arrive (a cut
    /// fibre delivers no more bits), and are counted with the link's lost
    /// frames. The Figure 2 test's "what was lost is what was in flight"
    /// relies on this accounting.
    /// Was: sim_wan.rs `Ev::Link` only flips `up`; `transmit` checks it
    /// when a frame is handed over, so a frame sent just before the failure
    /// is delivered 1 ms later over the dead link and `lost_on_link` is 0.
    #[test]
    fn wan_frames_in_flight_are_lost_when_the_link_fails() {
        let (mut sim, s, d, l) = line(1_000_000_000, US, MS);
        // One 1000-octet packet at t = 0: on the N-D link from ~9 us to
        // ~1.017 ms.
        sim.add_flow(s, Flow { dst: a6("2001:db8:2::10"), rate_bps: 1_000_000_000, len: 1000, start: 0, stop: 1, ports: 1, tc: 0 });
        sim.set_link(l, false, 500 * US);
        sim.run_until(3 * MS);
        assert_eq!(sim.host_sent(s), 1);
        assert_eq!((sim.host_rx_count(d), sim.lost_on_link(l)), (0, 1), "delivered over a link that was down");
    }

    /// Rule: a node in the harness does what the worker does with a
    /// verdict (sim_wan.rs doc: "IPv6 / SRv6 nodes running their real
    /// Pipelines"): `Verdict::Replicate(n)` is `n` packets built with
    /// `build_replica` and sent (worker.rs `process_verdict`). At an
    /// ingress PE that is how an IPv4 packet without DF over the tunnel MTU
    /// leaves: fragmented, one tunnel packet per fragment (frag.rs, RFC
    /// 4459 s.3.4; srv6.rs H.Encaps `fragment4`).
    /// Was: sim_wan.rs `WanSim::node_rx` maps every `Replicate(_)` to a
    /// `replica-invalid` drop, so a 9000-octet IPv4 datagram to an SR policy
    /// over 9000-octet links vanishes at the PE (0 frames sent, one
    /// replica-invalid), where the router sends two encapsulated fragments.
    #[test]
    fn wan_ingress_pe_sends_the_fragments_of_an_ipv4_packet_over_the_tunnel_mtu() {
        use dataplane::counters::Drop;
        use dataplane::srv6::{Behaviour, EncapMode, SidTable, SrPolicy};
        use dataplane::wire::params::Params;
        let mut sim = WanSim::new(WanConfig::default());
        let pe = sim.add_node("PE", "fc00::a", 2);
        let r1 = sim.add_node("R1", "fc00::1", 1);
        let dc = sim.add_host("dc1", "2001:db8:d1::10");
        sim.link(E::Host(dc), E::Node(pe, 0), 10_000_000_000, US);
        sim.link(E::Node(pe, 1), E::Node(r1, 0), 10_000_000_000, US);
        sim.route(pe, "fc00:0:1::/48", 1);
        let mut t = SidTable::new(&Params::DEFAULT);
        t.add_policy("10.9.0.0/16".parse().unwrap(), SrPolicy::new(a6("fc00:0:a::"), EncapMode::Encaps, vec![(vec![a6("fc00:0:1::1"), a6("fc00:0:1::d4")], 1)]).unwrap());
        sim.set_sids(pe, t);
        let mut t1 = SidTable::new(&Params::DEFAULT);
        t1.insert(a6("fc00:0:1::1"), Behaviour::End);
        sim.set_sids(r1, t1);
        sim.build();
        // IPv4 / UDP, 9000 octets (the PE's MTU), DF clear.
        let total = 9000usize;
        let mut f = Vec::with_capacity(14 + total);
        f.extend_from_slice(&sim.mac(pe, 0));
        f.extend_from_slice(&[2, 0, 0, 1, 0, 0]);
        f.extend_from_slice(&[0x08, 0x00]);
        let mut h = [0x45, 0, 0, 0, 0x12, 0x34, 0, 0, 64, 17, 0, 0, 10, 1, 0, 1, 10, 9, 0, 1];
        h[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        let c = dataplane::wire::checksum::checksum(&h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        f.extend_from_slice(&h);
        f.extend_from_slice(&[0x30, 0x39, 0x00, 0x09]);
        f.extend_from_slice(&((total - 20) as u16).to_be_bytes());
        f.extend_from_slice(&[0, 0]);
        f.resize(14 + total, 0x5a);
        sim.deliver(pe, 0, f);
        assert_eq!(sim.counters(pe).drops[Drop::ReplicaInvalid as usize].get(), 0, "the fragments were dropped as replica-invalid");
        assert_eq!(sim.tx_pkts(pe, 1), 2, "two tunnel packets, one per fragment");
    }
}
