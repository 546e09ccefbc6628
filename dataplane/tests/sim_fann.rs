//! draft-hzh-fantel-wan-tunnel Figures 2 and 3 in the deterministic WAN
//! harness ([`dataplane::sim_wan`]): ingress PE -> R1 -> R2 -> egress PE
//! (primary) and ingress PE -> R3 -> R4 -> egress PE (backup / second ECMP
//! member), real pipelines at every node (H.Encaps with an SRH, End, End.DT6),
//! FANN detectors on the P nodes' ports, and the ingress PE's PeControl fed
//! from its pipeline's events as the router's control thread is.
//!
//! * Figure 2: link R1-R2 fails; R1 notifies the ingress PE, which moves the
//!   policy to its backup SID list within one notification latency (R1 -> PE
//!   one-way delay + one detector round + the control thread's delay), and
//!   back on recovery. Run with the ICMPv6 and the UDP FANN formats.
//! * Figure 3: the R2 -> egress PE link is congested by cross traffic; R2's
//!   FANN congestion event scales the weight of the ECMP member through R2
//!   down (severe: 1/8); the split measured at R1 and R3 follows, and comes
//!   back when the congestion clears.
//! * Bad input at the PE: unknown source, malformed UDP FANN, duplicates.

use dataplane::counters::{Drop, Local};
use dataplane::fann::{DetectorConfig, Element, Failover, PathSpec, PeConfig, PolicySpec};
use dataplane::sim_wan::{udp6_frame, Endpoint, Flow, WanConfig, WanSim, MS, US};
use dataplane::srv6::{Behaviour, EncapMode, SidTable, SrPolicy};
use dataplane::wire::fann::{event, Metadata, MessageRepr, Packet, PacketRepr, CODE_EVENT};
use dataplane::wire::params::Params;
use std::net::Ipv6Addr;

const GBPS: u64 = 1_000_000_000;
/// One-way delay of the WAN links (R1 -> PE is the notification path).
const WAN_DELAY: u64 = 100 * US;

fn a(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

struct Fig {
    sim: WanSim,
    pe: usize,
    r: [usize; 4],
    dc1: usize,
    dc2: usize,
    dc2b: usize,
    ctl: usize,
    cross: usize,
    r1_r2: usize,
}

fn primary() -> Vec<Ipv6Addr> {
    vec![a("fc00:0:1::1"), a("fc00:0:2::1"), a("fc00:0:e::d6")]
}
fn backup() -> Vec<Ipv6Addr> {
    vec![a("fc00:0:3::1"), a("fc00:0:4::1"), a("fc00:0:e::d6")]
}

/// Figures 2/3. Ports: PE p0 dc1, p1 R1, p2 R3, p3 controller; R1 p0 PE,
/// p1 R2; R2 p0 R1, p1 egress PE, p2 cross-traffic host; R3 p0 PE, p1 R4;
/// R4 p0 R3, p1 egress PE; egress PE p0 dc2, p1 R2, p2 R4, p3 dc2b.
fn figure(udp: bool) -> Fig {
    let mut s = WanSim::new(WanConfig::default());
    let pe = s.add_node("ingress-pe", "fc00::a", 4);
    let r1 = s.add_node("R1", "fc00::1", 2);
    let r2 = s.add_node("R2", "fc00::2", 3);
    let r3 = s.add_node("R3", "fc00::3", 2);
    let r4 = s.add_node("R4", "fc00::4", 2);
    let epe = s.add_node("egress-pe", "fc00::e", 4);
    let dc1 = s.add_host("dc1", "2001:db8:d1::10");
    let dc2 = s.add_host("dc2", "2001:db8:d2::10");
    let dc2b = s.add_host("dc2b", "2001:db8:d3::10");
    let ctl = s.add_host("controller", "2001:db8:c::1");
    let cross = s.add_host("cross", "2001:db8:cc::1");
    let n = Endpoint::Node;
    s.link(Endpoint::Host(dc1), n(pe, 0), 10 * GBPS, US);
    s.link(n(pe, 1), n(r1, 0), GBPS, WAN_DELAY);
    s.link(n(pe, 2), n(r3, 0), GBPS, WAN_DELAY);
    s.link(n(pe, 3), Endpoint::Host(ctl), GBPS, US);
    let r1_r2 = s.link(n(r1, 1), n(r2, 0), GBPS, WAN_DELAY);
    s.link(n(r3, 1), n(r4, 0), GBPS, WAN_DELAY);
    s.link(n(r2, 1), n(epe, 1), GBPS, WAN_DELAY);
    s.link(n(r4, 1), n(epe, 2), GBPS, WAN_DELAY);
    s.link(Endpoint::Host(cross), n(r2, 2), 10 * GBPS, US);
    s.link(n(epe, 0), Endpoint::Host(dc2), 10 * GBPS, US);
    s.link(n(epe, 3), Endpoint::Host(dc2b), 10 * GBPS, US);
    for (p, port) in [("fc00:0:1::/48", 1), ("fc00:0:2::/48", 1), ("fc00:0:3::/48", 2), ("fc00:0:4::/48", 2)] {
        s.route(pe, p, port);
    }
    for (node, via_e, back) in [(r1, 1, 0), (r2, 1, 0), (r3, 1, 0), (r4, 1, 0)] {
        s.route(node, "fc00:0:e::/48", via_e);
        s.route(node, "fc00::a/128", back);
    }
    s.route(r1, "fc00:0:2::/48", 1);
    s.route(r3, "fc00:0:4::/48", 1);
    s.route(r2, "2001:db8:d3::/64", 1);
    s.route(epe, "2001:db8:d3::/64", 3);
    for (node, sid) in [(r1, "fc00:0:1::1"), (r2, "fc00:0:2::1"), (r3, "fc00:0:3::1"), (r4, "fc00:0:4::1")] {
        let mut t = SidTable::new(&Params::DEFAULT);
        t.insert(a(sid), Behaviour::End);
        s.set_sids(node, t);
    }
    let mut t = SidTable::new(&Params::DEFAULT);
    t.insert(a("fc00:0:e::d6"), Behaviour::EndDT6);
    s.set_sids(epe, t);
    // The ingress PE: policy 0 (dc2) primary R1-R2 with backup R3-R4;
    // policy 1 (dc2b) ECMP over both.
    let src = a("fc00:0:a::");
    let mut t = SidTable::new(&Params::DEFAULT);
    t.add_policy("2001:db8:d2::/64".parse().unwrap(), SrPolicy::new(src, EncapMode::Encaps, vec![(primary(), 1)]).unwrap());
    t.add_policy("2001:db8:d3::/64".parse().unwrap(), SrPolicy::new(src, EncapMode::Encaps, vec![(primary(), 1), (backup(), 1)]).unwrap());
    let el = |node: &str, port: Option<u32>| Element { node: a(node), port };
    let p1 = PathSpec { segments: primary(), weight: 1, elements: vec![el("fc00::1", Some(1)), el("fc00::2", None)] };
    let p2 = PathSpec { segments: backup(), weight: 1, elements: vec![el("fc00::3", None), el("fc00::4", None)] };
    s.set_sids(pe, t);
    s.set_ingress_pe(
        pe,
        PeConfig {
            policies: vec![(0, PolicySpec { name: "dc2".into(), primary: vec![p1.clone()], backup: Some(vec![p2.clone()]) }), (1, PolicySpec { name: "dc2b".into(), primary: vec![p1, p2], backup: None })],
            known_nodes: vec![a("fc00::1"), a("fc00::2"), a("fc00::3"), a("fc00::4")],
            interfaces: None,
            controller: Some(a("2001:db8:c::1")),
            source: a("fc00::a"),
            source_v4: None,
            hop_limit: 8,
            copy_max_pps: 100_000,
            copy_burst: 100,
            node_max_pps: 1000,
            node_burst: 100,
            notify_senders: false,
            failover: Failover::default(),
        },
    );
    let det = DetectorConfig { link_bps: GBPS, ..DetectorConfig::default() };
    s.add_detector(r1, 1, det.clone(), &["fc00::a"], udp);
    s.add_detector(r2, 1, det, &["fc00::a"], udp);
    s.trace(pe);
    Fig { sim: s, pe, r: [r1, r2, r3, r4], dc1, dc2, dc2b, ctl, cross, r1_r2 }
}

/// Data packets the PE sent on `port` in [from, to) (SRH-encapsulated).
fn pe_data(f: &Fig, port: u16, from: u64, to: u64) -> usize {
    f.sim.tx_log.iter().filter(|(n, r)| *n == f.pe && r.port == port && r.nh == 43 && r.t >= from && r.t < to).count()
}

fn failure_and_recovery(udp: bool) {
    let mut f = figure(udp);
    let flow = Flow { dst: a("2001:db8:d2::10"), rate_bps: 200_000_000, len: 1000, start: 0, stop: 30 * MS, ports: 16, tc: 26 << 2 };
    f.sim.add_flow(f.dc1, flow);
    let t_fail = 10 * MS;
    let t_up = 20 * MS;
    f.sim.set_link(f.r1_r2, false, t_fail);
    f.sim.set_link(f.r1_r2, true, t_up);
    f.sim.run_until(30 * MS);

    // Before the failure: everything on the primary (toward R1), delivered.
    let before = pe_data(&f, 1, MS, t_fail);
    assert!(before > 200, "primary carried the flow: {before}");
    assert_eq!(pe_data(&f, 2, 0, t_fail), 0, "nothing on the backup before the failure");

    // The switch: one SID table snapshot per change (failure, recovery).
    let applied: Vec<u64> = f.sim.applied.iter().filter(|(_, n)| *n == f.pe).map(|(t, _)| *t).collect();
    assert_eq!(applied.len(), 2, "switch and restore: {applied:?}");
    let t_sw = applied[0];
    // One notification latency: a detector round (10 us) + R1 -> PE
    // (serialisation of one notification at 1 Gb/s + 100 us), with the
    // control thread's 5 us; data queued ahead of the notification on the
    // R1 -> PE direction: none (that direction carries no data).
    let latency = 10 * US + WAN_DELAY + 2 * US + 5 * US;
    eprintln!("udp={udp}: switched {} ns after the failure (bound {latency}); lost {} packets on R1-R2", t_sw - t_fail, f.sim.lost_on_link(f.r1_r2));
    assert!(t_sw > t_fail && t_sw <= t_fail + latency, "switched at +{} ns (bound {latency})", t_sw - t_fail);
    let sent_on_primary_after = pe_data(&f, 1, t_sw, t_up);
    assert_eq!(sent_on_primary_after, 0, "no data toward R1 after the switch");
    let on_backup = pe_data(&f, 2, t_sw, t_up);
    assert!(on_backup > 200, "the backup carries the flow: {on_backup}");
    for (_, r) in f.sim.tx_log.iter().filter(|(n, r)| *n == f.pe && r.port == 2 && r.nh == 43 && r.t >= t_sw && r.t < t_up) {
        assert_eq!(r.dst, backup()[0], "H.Encaps toward the backup list's first SID");
    }
    // What was lost is what was in flight toward the failed link during the
    // notification latency (200 Mb/s of 1000-byte packets: 25 per 1 ms).
    let lost = f.sim.lost_on_link(f.r1_r2);
    let bound = ((latency + 2 * WAN_DELAY) * 25).div_ceil(MS) + 2;
    assert!(lost > 0 && lost <= bound, "lost {lost} (bound {bound})");
    // The egress side keeps receiving through the backup.
    assert!(f.sim.host_rx_between(f.dc2, t_sw + 3 * WAN_DELAY + 100 * US, t_up) > 200);

    // Recovery: R1's recovery notification restores the primary.
    let t_back = applied[1];
    assert!(t_back > t_up && t_back <= t_up + latency, "restored at +{} ns", t_back - t_up);
    assert_eq!(pe_data(&f, 2, t_back, 30 * MS), 0, "nothing on the backup after recovery");
    assert!(pe_data(&f, 1, t_back, 30 * MS) > 200);
    let st = f.sim.pe(f.pe).unwrap().pe.stats;
    assert_eq!((st.switched_to_backup, st.restored), (1, 1));
    let c = f.sim.counters(f.pe);
    assert_eq!(c.local[Local::PeSwitchedToBackup as usize].get(), 1);
    assert_eq!(c.local[Local::PeRestored as usize].get(), 1);
    assert_eq!(c.local[Local::PeNotification as usize].get(), 2);

    // The controller received a copy of each, re-originated by the PE.
    let copies = f.sim.host_other(f.ctl);
    assert_eq!(copies.len(), 2);
    let ip = &copies[0].1[14..];
    assert_eq!(&ip[8..24], &a("fc00::a").octets());
    let r = PacketRepr::parse(&Packet::new_checked(&ip[40..]).unwrap(), &a("fc00::a"), &a("2001:db8:c::1"), Params::DEFAULT.icmpv6_fann_type).unwrap();
    assert_eq!((r.code, r.message.event_type, r.message.originating_node), (CODE_EVENT, event::LINK_FAILURE, a("fc00::1")));
    assert_eq!(r.message.metadata.egress_port_id, Some(1), "R1's port toward R2");
    assert_eq!(r.message.metadata.link_down, Some(true));
    let r2 = PacketRepr::parse(&Packet::new_checked(&copies[1].1[54..]).unwrap(), &a("fc00::a"), &a("2001:db8:c::1"), Params::DEFAULT.icmpv6_fann_type).unwrap();
    assert_eq!((r2.code, r2.message.event_id), (1, r.message.event_id), "recovery repeats the event id");
    // Nothing dropped at the PE for a bad reason.
    assert_eq!(c.drops.iter().map(|x| x.get()).sum::<u64>(), 0);
}

#[test]
fn figure2_link_failure_moves_to_backup_and_back_icmpv6() {
    failure_and_recovery(false);
}

#[test]
fn figure2_link_failure_moves_to_backup_and_back_udp() {
    failure_and_recovery(true);
}

#[test]
fn figure3_congestion_shifts_the_ecmp_weights() {
    let mut f = figure(false);
    // 400 Mb/s from DC1 to dc2b, ECMP over R1-R2 and R3-R4.
    f.sim.add_flow(f.dc1, Flow { dst: a("2001:db8:d3::10"), rate_bps: 400_000_000, len: 1000, start: 0, stop: 40 * MS, ports: 256, tc: 0 });
    // 800 Mb/s of cross traffic into R2 -> egress PE from 10 to 25 ms.
    f.sim.add_flow(f.cross, Flow { dst: a("2001:db8:d3::10"), rate_bps: 800_000_000, len: 1000, start: 10 * MS, stop: 25 * MS, ports: 1, tc: 0 });
    let [r1, r2, r3, _] = f.r;
    let mut marks = Vec::new();
    let mut weights = Vec::new();
    for t in [2, 10, 14, 25, 30, 40] {
        f.sim.run_until(t * MS);
        marks.push((f.sim.tx_pkts(r1, 1), f.sim.tx_pkts(r3, 1)));
        weights.push(f.sim.sids(f.pe).unwrap().policy(1).unwrap().lists().iter().map(|l| l.weight).collect::<Vec<_>>());
    }
    let share = |i: usize| {
        let (a1, a3) = (marks[i + 1].0 - marks[i].0, marks[i + 1].1 - marks[i].1);
        (a1 as f64 / (a1 + a3) as f64, a1 + a3)
    };
    // 2-10 ms: equal weights.
    let (s, n) = share(0);
    assert!(n > 300 && (0.38..0.62).contains(&s), "equal split before: {s:.3} of {n}");
    // The congestion event (severe: R2 -> egress PE over 90 %) and the
    // reweighting: R2's first 1 ms window after 10 ms, then the notification.
    let t_sw = f.sim.applied.iter().find(|(_, n)| *n == f.pe).map(|(t, _)| *t).expect("reweighted");
    assert!(t_sw > 10 * MS && t_sw <= 12 * MS + WAN_DELAY * 2 + 20 * US, "reweighted at {t_sw}");
    assert!(f.sim.fann_sent.iter().any(|(_, n, ty, c)| *n == r2 && *ty == event::CONGESTION && *c == CODE_EVENT));
    assert_eq!(weights[1], vec![1, 1], "as configured before the congestion");
    assert_eq!(weights[2], vec![8, 64], "severe: the R1-R2 member at 1/8 (weights scaled by 64)");
    assert_eq!(weights[5], vec![64, 64], "restored");
    // 14-25 ms: 8/72 = 11 % through R1.
    let (s, n) = share(2);
    eprintln!("R1 share: before {:.3}, congested {s:.3} (reweighted at {t_sw} ns), after {:.3}", share(0).0, share(4).0);
    assert!(n > 450 && (0.04..0.20).contains(&s), "shifted split: {s:.3} of {n}");
    // After the cross traffic stops, R2 recovers and the split comes back.
    let (s, n) = share(4);
    assert!(n > 400 && (0.38..0.62).contains(&s), "split after recovery: {s:.3} of {n}");
    let st = f.sim.pe(f.pe).unwrap().pe.stats;
    assert!(st.reweighted >= 2, "reweighted and restored: {st:?}");
    // Policy dc2 (R1-R2 its only primary list, R3-R4 its backup) moves to
    // the backup while R2 is congested (s.4.2: "If backup path is
    // available, ingress PE should switch the service traffic to the
    // backup path"); dc2b, with both lists, reweights. dc2 goes back only
    // once R2 has been healthy for the hold-down (1 s by default), so that
    // a policy whose own traffic congests its primary cannot flap.
    assert_eq!((st.switched_to_backup, st.restored, st.congestion_switches), (1, 0, 1), "{st:?}");
    let first_sid = |f: &Fig| f.sim.sids(f.pe).unwrap().policy(0).unwrap().lists()[0].sids[0];
    assert_eq!(first_sid(&f), backup()[0], "dc2 on its backup (R3-R4)");
    let back = f.sim.pe(f.pe).unwrap().pe.next_deadline().expect("a hold-down runs");
    assert!(back > 25 * MS + 1_000 * MS && back < 30 * MS + 1_000 * MS, "back at {back}");
    f.sim.run_until(back - MS);
    assert_eq!(first_sid(&f), backup()[0], "still on the backup 1 ms before");
    f.sim.run_until(back + 2 * MS);
    assert_eq!(first_sid(&f), primary()[0], "dc2 back on its primary (R1-R2)");
    assert_eq!(f.sim.pe(f.pe).unwrap().pe.stats.restored, 1);
    assert!(f.sim.host_rx_count(f.dc2b) > 3000);
    let _ = f.dc2;
}

fn fann_frame(sim: &WanSim, pe: usize, src: &str, node: &str, id: u32) -> Vec<u8> {
    let m = MessageRepr { hop_limit: 8, event_type: event::LINK_FAILURE, event_subtype: 0, event_id: id, timestamp: 1, originating_node: a(node), metadata: Metadata { egress_port_id: Some(1), link_down: Some(true), ..Default::default() } };
    let ip = dataplane::fann::notification_packet(CODE_EVENT, &m, &a(src), &a("fc00::a"), &Params::DEFAULT, false);
    let mut f = vec![0u8; 14];
    f[..6].copy_from_slice(&sim.mac(pe, 1));
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 9, 9]);
    f[12..14].copy_from_slice(&[0x86, 0xdd]);
    f.extend_from_slice(&ip);
    f
}

/// Set the IPv6 payload length and the UDP length of the IPv6 / UDP
/// packet `ip` to what it holds, and its UDP checksum.
fn fix_udp6(ip: &mut [u8]) {
    use dataplane::wire::checksum::{combine, fold, pseudo_v6, sum};
    let ulen = (ip.len() - 40) as u16;
    ip[4..6].copy_from_slice(&ulen.to_be_bytes());
    ip[44..46].copy_from_slice(&ulen.to_be_bytes());
    ip[46..48].copy_from_slice(&[0, 0]);
    let s = combine(pseudo_v6(ip[8..24].try_into().unwrap(), ip[24..40].try_into().unwrap(), 17, u32::from(ulen)), sum(&ip[40..]));
    ip[46..48].copy_from_slice(&(!fold(s)).to_be_bytes());
}

#[test]
fn bad_notifications_at_the_pe_are_dropped_and_counted() {
    let mut f = figure(false);
    f.sim.build();
    let pe = f.pe;
    // Unknown originating node.
    let fr = fann_frame(&f.sim, pe, "fc00::99", "fc00::99", 1);
    f.sim.deliver(pe, 1, fr);
    // A known originating node but sent from another address (s.6).
    let fr = fann_frame(&f.sim, pe, "fc00::99", "fc00::1", 2);
    f.sim.deliver(pe, 1, fr);
    assert_eq!(f.sim.counters(pe).drops[Drop::FannUnknownSource as usize].get(), 2);
    // UDP FANN with a bad checksum, and one with a truncated message.
    let m = MessageRepr { hop_limit: 8, event_type: event::CONGESTION, event_subtype: 1, event_id: 3, timestamp: 1, originating_node: a("fc00::2"), metadata: Metadata::default() };
    let ip = dataplane::fann::notification_packet(CODE_EVENT, &m, &a("fc00::2"), &a("fc00::a"), &Params::DEFAULT, true);
    let mut fr = fann_frame(&f.sim, pe, "fc00::2", "fc00::2", 0)[..14].to_vec();
    fr.extend_from_slice(&ip);
    let mut bad = fr.clone();
    let last = bad.len() - 1;
    bad[last] ^= 0xff;
    f.sim.deliver(pe, 1, bad);
    let mut short = fr.clone();
    short.truncate(fr.len() - 2);
    // Fix the IPv6 and UDP lengths and the checksum so only the FANN
    // message is short.
    fix_udp6(&mut short[14..]);
    f.sim.deliver(pe, 1, short);
    assert_eq!(f.sim.counters(pe).drops[Drop::FannMalformed as usize].get(), 2);
    // A good one, twice: accepted once, then a duplicate.
    f.sim.deliver(pe, 1, fr.clone());
    f.sim.deliver(pe, 1, fr);
    let c = f.sim.counters(pe);
    assert_eq!(c.local[Local::PeNotification as usize].get(), 1);
    assert_eq!(c.drops[Drop::FannDuplicate as usize].get(), 1);
    // Nothing reached the control side from the bad ones.
    assert_eq!(f.sim.pe(pe).unwrap().pe.stats.accepted, 1);
    // Another event padded after its stack to an 8-octet row (s.6 asks
    // only that the lengths not exceed the payload): accepted.
    let m2 = MessageRepr { event_id: 4, ..m };
    let mut ip2 = dataplane::fann::notification_packet(CODE_EVENT, &m2, &a("fc00::2"), &a("fc00::a"), &Params::DEFAULT, true);
    ip2.extend_from_slice(&[0; 3]);
    fix_udp6(&mut ip2);
    let mut padded = fann_frame(&f.sim, pe, "fc00::2", "fc00::2", 0)[..14].to_vec();
    padded.extend_from_slice(&ip2);
    f.sim.deliver(pe, 1, padded);
    assert_eq!(f.sim.pe(pe).unwrap().pe.stats.accepted, 2, "the padded notification is accepted");
    // One whose bitmap sets a reserved bit (15, "Reserved for future use",
    // s.5.1.3), its item after the stack: accepted for the items it knows.
    let m3 = MessageRepr { event_id: 5, ..m };
    let mut ip3 = dataplane::fann::notification_packet(CODE_EVENT, &m3, &a("fc00::2"), &a("fc00::a"), &Params::DEFAULT, true);
    let bitmap_at = 40 + 8 + 33;
    ip3[bitmap_at + 1] |= 0x01;
    ip3.extend_from_slice(&[0x5a; 12]);
    fix_udp6(&mut ip3);
    let mut future = fann_frame(&f.sim, pe, "fc00::2", "fc00::2", 0)[..14].to_vec();
    future.extend_from_slice(&ip3);
    f.sim.deliver(pe, 1, future);
    assert_eq!(f.sim.pe(pe).unwrap().pe.stats.accepted, 3, "a notification with a future metadata item is accepted");
    assert_eq!(f.sim.counters(pe).drops[Drop::FannMalformed as usize].get(), 2);
    // A plain UDP datagram to the PE on another port is still unsupported.
    let other = udp6_frame([2, 0, 0, 0, 9, 9], f.sim.mac(pe, 1), a("fc00::2"), a("fc00::a"), 0, 1, 2, 4);
    f.sim.deliver(pe, 1, other);
    assert_eq!(f.sim.counters(pe).drops[Drop::LocalUnsupported as usize].get(), 1);
}
