//! The reference topology of draft-li-spring-rdma-multicast-over-srv6-00
//! s.4.2 on the deterministic IPv6 harness ([`dataplane::sim6`]), every node
//! running its real [`Pipeline`](dataplane::pipeline::Pipeline):
//!
//! ```text
//!                     S1  2001:db8:5::1, QPN 0x100
//!                      |
//!                     N6 (transit, adjacent to the source: aggregates)
//!                   /    \
//!        (transit) N4     N5 (transit)
//!                 /  \    /  \
//!       (edge)  N1   N2 ·'   N3 (edge)
//!              / \    |     / \  \
//!            R1   R2  R3   R4  R5  X (not a receiver)
//! ```
//!
//! Downstream: S1 sends each RC packet once, to N6's End.MT SID, with an SRH
//! carrying one End.MT TLV per edge node (N1: R1, R2; N2: R3; N3: R4, R5).
//! N6, N4 and N5 are tree-interior End.MT SIDs (`downstream`: N6 -> N4, N5;
//! N4 -> N1, N2; N5 -> N3); N1, N2, N3 run End.MT on the TLV naming their
//! SID and send each receiver a standard RC unicast packet (DA, DestQP and
//! ICRC rewritten). N2 hangs off N4 and N5 in the figure; the tree uses
//! N4 (the N2-N5 link exists, nothing is replicated on it).
//!
//! Upstream: the receivers' ACK / NAK / CNP go to the Proxy Address with
//! DestQP = Designated QPN; N1-N5 route them as ordinary IPv6 (default
//! route toward N6). N6 holds the group (`[[multicast.group]]`: proxy,
//! designated QPN, source + QPN, the five receivers) and sends S1 the
//! aggregated responses: ACK with the minimum acknowledged PSN, NAK with the
//! minimum ePSN, one CNP per window T.
//!
//! Hop by hop (`build_with(true)`): every node holds the group with its own
//! branches (N1: R1, R2; N2: R3; N3: R4, R5; N4: N1, N2; N5: N3; N6: N4,
//! N5) and each but N6 answers the node above from its node address, as a
//! receiver would (to the Proxy Address, DestQP = Designated QPN).

use std::net::Ipv6Addr;

use dataplane::counters::{Drop, Local};
use dataplane::multicast::{build_upstream, upstream_len, GroupConfig, GroupId, NakKind, Receiver, Upstream};
use dataplane::sim6::{End6, Sim6};
use dataplane::srv6::{Behaviour, SidTable};
use dataplane::wire::checksum;
use dataplane::wire::ipv6::Ipv6Packet;
use dataplane::wire::params::Params;
use dataplane::wire::roce::{self, opcode, Aeth, AethRepr, Bth, NakCode, Syndrome};
use dataplane::wire::srh::{EndMtReceiver, EndMtRepr, Srh, SrhRepr, TlvRepr};

const US: u64 = 1_000;
const LINK: u64 = US; // every link: 1 µs
const T: u64 = 50 * US; // CNP window
const SRC_QPN: u32 = 0x000100;
const DQPN: u32 = 0x000001;

fn a6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}
fn s1() -> Ipv6Addr {
    a6("2001:db8:5::1")
}
fn proxy() -> Ipv6Addr {
    a6("2001:db8:ff::1")
}
fn sid(n: u16) -> Ipv6Addr {
    Ipv6Addr::new(0xfc00, 0, n, 0, 0, 0, 0, 0x10)
}
/// R1..R5 (index 0..4): address and QPN.
fn rcv(i: usize) -> (Ipv6Addr, u32) {
    (Ipv6Addr::new(0x2001, 0xdb8, 0xa1 + i as u16, 0, 0, 0, 0, 0x10), 0x00a000 + i as u32 + 1)
}
fn x_host() -> Ipv6Addr {
    a6("2001:db8:a6::10")
}

fn udp_fix(d: &mut [u8]) {
    let src: [u8; 16] = d[8..24].try_into().unwrap();
    let dst: [u8; 16] = d[24..40].try_into().unwrap();
    d[46..48].fill(0);
    let u = &d[40..];
    let s = checksum::combine(checksum::pseudo_v6(&src, &dst, 17, u.len() as u32), checksum::sum(u));
    let mut c = !checksum::fold(s);
    if c == 0 {
        c = 0xffff;
    }
    d[46..48].copy_from_slice(&c.to_be_bytes());
}

fn ipv6(src: Ipv6Addr, dst: Ipv6Addr, nh: u8, payload: &[u8]) -> Vec<u8> {
    let mut h = vec![0u8; 40];
    h[0] = 0x60;
    h[4..6].copy_from_slice(&(payload.len() as u16).to_be_bytes());
    h[6] = nh;
    h[7] = 64;
    h[8..24].copy_from_slice(&src.octets());
    h[24..40].copy_from_slice(&dst.octets());
    h.extend_from_slice(payload);
    h
}

/// S1's RC SEND ONLY to the Proxy Address / Designated QPN, valid ICRC.
fn data(psn: u32) -> Vec<u8> {
    let mut u = vec![0u8; 8];
    u[0..2].copy_from_slice(&0xc100u16.to_be_bytes());
    u[2..4].copy_from_slice(&4791u16.to_be_bytes());
    let mut bth = [0u8; 12];
    bth[0] = opcode::SEND_ONLY;
    bth[2..4].copy_from_slice(&0xffffu16.to_be_bytes());
    bth[5..8].copy_from_slice(&DQPN.to_be_bytes()[1..]);
    bth[8] = 0x80;
    bth[9..12].copy_from_slice(&psn.to_be_bytes()[1..]);
    u.extend_from_slice(&bth);
    u.extend((0..256).map(|i| (i as u8).wrapping_mul(13).wrapping_add(psn as u8)));
    u.extend_from_slice(&[0; 4]);
    let len = u.len() as u16;
    u[4..6].copy_from_slice(&len.to_be_bytes());
    let mut d = ipv6(s1(), proxy(), 17, &u);
    roce::icrc_fill(&mut d).unwrap();
    udp_fix(&mut d);
    roce::icrc_check(&d).unwrap();
    d
}

fn mt_tlv(edge: Ipv6Addr, rs: &[usize]) -> TlvRepr {
    TlvRepr::EndMt(EndMtRepr {
        tlv_type: Params::DEFAULT.srh_tlv_end_mt,
        edge_node_address: edge,
        receivers: rs.iter().map(|&i| EndMtReceiver { address: rcv(i).0, qpn: rcv(i).1 }).collect(),
    })
}

/// The data packet as S1 sends it: outer IPv6 to N6's End.MT SID, SRH
/// [N6 SID, Proxy Address] SL 1 with the End.MT TLVs of the three edges.
fn srv6_data(psn: u32) -> Vec<u8> {
    let tlvs = vec![mt_tlv(sid(1), &[0, 1]), mt_tlv(sid(2), &[2]), mt_tlv(sid(3), &[3, 4])];
    let mut r = SrhRepr::for_path(41, &[sid(6), proxy()], tlvs);
    r.segments_left = 1;
    let mut srh = vec![0u8; r.buffer_len()];
    r.emit(&mut Srh::new_unchecked(&mut srh[..])).unwrap();
    srh.extend_from_slice(&data(psn));
    ipv6(s1(), sid(6), 43, &srh)
}

/// A receiver's response as its RC stack sends it: SA = its address, DA =
/// Proxy Address, DestQP = Designated QPN (built with the crate's response
/// writer and a mirrored configuration).
fn response(from: Ipv6Addr, r: Upstream) -> Vec<u8> {
    let mirror = GroupConfig::new(GroupId { source: proxy(), source_qpn: DQPN }, from, 0, vec![Receiver { addr: s1(), qpn: 0 }]);
    let mut b = vec![0u8; upstream_len(&r)];
    let n = build_upstream(&r, &mirror, &mut b).unwrap();
    b.truncate(n);
    b
}
fn ack(psn: u32) -> Upstream {
    Upstream::Ack { psn, msn: psn, credits: 31 }
}
fn nak(epsn: u32) -> Upstream {
    Upstream::Nak { psn: epsn, msn: epsn - 1, kind: NakKind::PsnSequenceError }
}
fn cnp() -> Upstream {
    Upstream::Cnp { branch: 0, ccount: 0 }
}

/// What S1 received: (time, opcode, PSN, AETH syndrome) of RC responses
/// from the Proxy Address to its QPN; every one checked (ICRC, addresses,
/// UDP checksum).
fn at_source(sim: &Sim6, s: usize, since: u64) -> Vec<(u64, u8, u32, Option<Syndrome>)> {
    let mut v = Vec::new();
    for (t, f) in &sim.hosts[s].received {
        if *t < since {
            continue;
        }
        let d = &f[14..];
        roce::icrc_check(d).unwrap_or_else(|e| panic!("ICRC of the response at {t}: {e:?}"));
        let ip = Ipv6Packet::new_checked(d).unwrap();
        assert_eq!(ip.src_addr(), proxy());
        assert_eq!(ip.dst_addr(), s1());
        let u = &d[40..];
        let sum = checksum::combine(checksum::pseudo_v6(&proxy().octets(), &s1().octets(), 17, u.len() as u32), checksum::sum(u));
        assert_eq!(checksum::fold(sum), 0xffff, "UDP checksum");
        let bth = Bth::new_checked(&d[48..]).unwrap();
        assert_eq!(bth.dest_qp(), SRC_QPN);
        let syn = if bth.opcode() == opcode::RC_ACKNOWLEDGE {
            Some(AethRepr::parse(&Aeth::new_checked(bth.payload()).unwrap()).unwrap().syndrome)
        } else {
            assert_eq!(bth.opcode(), opcode::CNP);
            assert_eq!(d[48 + 4] & 0x40, 0x40, "BECN set");
            None
        };
        v.push((*t, bth.opcode(), bth.psn(), syn));
    }
    v
}

struct Net {
    sim: Sim6,
    s1: usize,
    r: Vec<usize>,
    x: usize,
    n6: usize,
    /// N1..N6 (index 0..5).
    n: [usize; 6],
}

/// Each node's own address on its link toward N6 (hop-by-hop: the address
/// it sends its aggregated responses from).
fn node_addr(k: usize) -> Ipv6Addr {
    a6(["2001:db8:41::1", "2001:db8:42::2", "2001:db8:53::3", "2001:db8:64::4", "2001:db8:65::5", "2001:db8:5::6"][k - 1])
}

fn build() -> Net {
    build_with(false)
}

/// `hop_by_hop`: every node holds the group and aggregates its own
/// branches (N1: R1, R2; N2: R3; N3: R4, R5; N4: N1, N2; N5: N3; N6: N4,
/// N5), each but N6 sending upstream from its node address; else only N6
/// holds it, with the five receivers as branches.
fn build_with(hop_by_hop: bool) -> Net {
    let mut sim = Sim6::new(US);
    let n6 = sim.add_node("N6", &["2001:db8:5::6/64", "2001:db8:64::6/64", "2001:db8:65::6/64"]);
    let n4 = sim.add_node("N4", &["2001:db8:64::4/64", "2001:db8:41::4/64", "2001:db8:42::4/64"]);
    let n5 = sim.add_node("N5", &["2001:db8:65::5/64", "2001:db8:52::5/64", "2001:db8:53::5/64"]);
    let n1 = sim.add_node("N1", &["2001:db8:41::1/64", "2001:db8:a1::1/64", "2001:db8:a2::1/64"]);
    let n2 = sim.add_node("N2", &["2001:db8:42::2/64", "2001:db8:52::2/64", "2001:db8:a3::1/64"]);
    let n3 = sim.add_node("N3", &["2001:db8:53::3/64", "2001:db8:a4::1/64", "2001:db8:a5::1/64", "2001:db8:a6::1/64"]);
    let s1h = sim.add_host("S1", "2001:db8:5::1");
    let r: Vec<usize> = (0..5).map(|i| sim.add_host(&format!("R{}", i + 1), &rcv(i).0.to_string())).collect();
    let x = sim.add_host("X", &x_host().to_string());
    let l = |sim: &mut Sim6, a: End6, b: End6| sim.link(a, b, LINK);
    l(&mut sim, End6::Host(s1h), End6::Node(n6, 0));
    l(&mut sim, End6::Node(n6, 1), End6::Node(n4, 0));
    l(&mut sim, End6::Node(n6, 2), End6::Node(n5, 0));
    l(&mut sim, End6::Node(n4, 1), End6::Node(n1, 0));
    l(&mut sim, End6::Node(n4, 2), End6::Node(n2, 0));
    l(&mut sim, End6::Node(n5, 1), End6::Node(n2, 1));
    l(&mut sim, End6::Node(n5, 2), End6::Node(n3, 0));
    l(&mut sim, End6::Node(n1, 1), End6::Host(r[0]));
    l(&mut sim, End6::Node(n1, 2), End6::Host(r[1]));
    l(&mut sim, End6::Node(n2, 2), End6::Host(r[2]));
    l(&mut sim, End6::Node(n3, 1), End6::Host(r[3]));
    l(&mut sim, End6::Node(n3, 2), End6::Host(r[4]));
    l(&mut sim, End6::Node(n3, 3), End6::Host(x));
    // Routes: SIDs down the tree, everything else up.
    sim.route(n6, "fc00:0:4::/48", 1);
    sim.route(n6, "fc00:0:5::/48", 2);
    sim.route(n4, "fc00:0:1::/48", 1);
    sim.route(n4, "fc00:0:2::/48", 2);
    sim.route(n5, "fc00:0:3::/48", 2);
    for n in [n4, n5, n1, n2, n3] {
        sim.route(n, "::/0", 0);
    }
    let mt = |down: Vec<Ipv6Addr>| Behaviour::EndMT { receivers_extra: vec![], hmac_required: false, downstream: down };
    for (n, s, down) in [(n6, 6, vec![sid(4), sid(5)]), (n4, 4, vec![sid(1), sid(2)]), (n5, 5, vec![sid(3)]), (n1, 1, vec![]), (n2, 2, vec![]), (n3, 3, vec![])] {
        let mut t = SidTable::new(&Params::DEFAULT);
        t.insert(sid(s), mt(down));
        sim.set_sids(n, t);
    }
    let group = |rs: &[usize], children: &[usize], node: Option<usize>| {
        let receivers = rs.iter().map(|&i| Receiver { addr: rcv(i).0, qpn: rcv(i).1 }).collect();
        let mut g = GroupConfig::new(GroupId { source: s1(), source_qpn: SRC_QPN }, proxy(), DQPN, receivers);
        g.cnp_window_ns = T;
        g.children = children.iter().map(|&k| node_addr(k)).collect();
        g.node_address = node.map(node_addr);
        vec![g]
    };
    if hop_by_hop {
        sim.set_groups(n1, group(&[0, 1], &[], Some(1)));
        sim.set_groups(n2, group(&[2], &[], Some(2)));
        sim.set_groups(n3, group(&[3, 4], &[], Some(3)));
        sim.set_groups(n4, group(&[], &[1, 2], Some(4)));
        sim.set_groups(n5, group(&[], &[3], Some(5)));
        sim.set_groups(n6, group(&[], &[4, 5], None));
    } else {
        sim.set_groups(n6, group(&[0, 1, 2, 3, 4], &[], None));
    }
    sim.build();
    Net { sim, s1: s1h, r, x, n6, n: [n1, n2, n3, n4, n5, n6] }
}

/// The RC packets host `h` received since `since`: (DA, DestQP, PSN), each
/// with a verified ICRC and UDP checksum and the payload S1 sent.
fn rc_at(sim: &Sim6, h: usize, since: u64) -> Vec<(Ipv6Addr, u32, u32)> {
    let mut v = Vec::new();
    for (t, f) in &sim.hosts[h].received {
        if *t < since {
            continue;
        }
        let d = &f[14..];
        roce::icrc_check(d).unwrap_or_else(|e| panic!("{}: ICRC at {t}: {e:?}", sim.hosts[h].name));
        let ip = Ipv6Packet::new_checked(d).unwrap();
        assert_eq!(ip.src_addr(), s1());
        assert_eq!(ip.next_header().0, 17, "no SRv6 left on a receiver's copy");
        let u = &d[40..];
        let sum = checksum::combine(checksum::pseudo_v6(&s1().octets(), &ip.dst_addr().octets(), 17, u.len() as u32), checksum::sum(u));
        assert_eq!(checksum::fold(sum), 0xffff, "UDP checksum");
        let bth = Bth::new_checked(&d[48..]).unwrap();
        assert_eq!(bth.opcode(), opcode::SEND_ONLY);
        let orig = data(bth.psn());
        assert_eq!(d.len(), orig.len());
        assert_eq!(&d[60..d.len() - 4], &orig[60..orig.len() - 4], "payload unchanged");
        v.push((ip.dst_addr(), bth.dest_qp(), bth.psn()));
    }
    v
}

/// The ACK phase of both reference tests: R1..R5 acknowledge PSNs 1..4
/// (the minimum advances 2, 3, 4), R3 steps back to 3, R1 repeats 4 (a
/// retransmission seen) and claims 9 (beyond the highest PSN sent), X (not
/// a receiver) sends an ACK.
fn ack_script(net: &mut Net) {
    let mut t = 200 * US;
    for (who, psn) in [(0, 4), (1, 3), (2, 4), (3, 2), (4, 4), (3, 4), (2, 3), (1, 4), (0, 4), (0, 9)] {
        net.sim.send(net.r[who], t, &response(rcv(who).0, ack(psn)));
        t += 10 * US;
    }
    net.sim.send(net.x, t, &response(x_host(), ack(4)));
    net.sim.run_until(t + 20 * US);
}

/// The NAK phase of both reference tests: S1 sends PSN 5..=8 (every
/// receiver gets them), then R3 acks 5, R5 NAKs 7, R3 NAKs 6, S1 goes
/// back to 6 and sends 6..=8 again, R3 recovers, R5 recovers. Returns when the
/// responses started (for `at_source`).
fn nak_script(net: &mut Net) -> u64 {
    let t0 = net.sim.now;
    for psn in 5..=8u32 {
        let p = srv6_data(psn);
        net.sim.send(net.s1, t0 + u64::from(psn) * US, &p);
    }
    net.sim.run_until(t0 + 50 * US);
    for (i, &h) in net.r.iter().enumerate() {
        assert_eq!(rc_at(&net.sim, h, t0).len(), 4, "R{}", i + 1);
    }
    let mut t = t0 + 100 * US;
    let since = t;
    for (who, r) in [(0, ack(8)), (1, ack(8)), (3, ack(8)), (2, ack(5)), (4, nak(7)), (2, nak(6))] {
        net.sim.send(net.r[who], t, &response(rcv(who).0, r));
        t += 10 * US;
    }
    // S1 answers the NAK of 6 going back to it: 6..=8 pass down again (so
    // R5's NAK of 7, which did not go up, is answered too).
    net.sim.run_until(t);
    for psn in 6..=8u32 {
        net.sim.send(net.s1, t, &srv6_data(psn));
        t += US;
    }
    net.sim.run_until(t + 50 * US);
    t += 50 * US;
    for (who, r) in [(2, ack(8)), (4, ack(8))] {
        net.sim.send(net.r[who], t, &response(rcv(who).0, r));
        t += 10 * US;
    }
    net.sim.run_until(t + 20 * US);
    since
}

/// What S1 must see after `nak_script`: the NAK with the minimum ePSN (6,
/// R3's), then the ACKs as the minimum advances.
fn assert_nak_sequence(net: &Net, since: u64) {
    let ups = at_source(&net.sim, net.s1, since);
    let got: Vec<(u32, Option<Syndrome>)> = ups.iter().map(|u| (u.2, u.3)).collect();
    assert_eq!(
        got,
        vec![(6, Some(Syndrome::Nak(NakCode::PsnSequenceError))), (6, Some(Syndrome::Ack { credits: 31 })), (8, Some(Syndrome::Ack { credits: 31 }))],
        "NAK with the minimum ePSN, then ACKs"
    );
}

#[test]
fn reference_topology_end_mt_forward_and_reverse_path() {
    let mut net = build();
    let n6 = net.n6;
    // ---- downstream: PSN 1..=4, one packet from S1 each
    for psn in 1..=4u32 {
        let p = srv6_data(psn);
        net.sim.send(net.s1, u64::from(psn) * US, &p);
    }
    net.sim.run_until(100 * US);
    for (i, &h) in net.r.iter().enumerate() {
        let got = rc_at(&net.sim, h, 0);
        let (a, q) = rcv(i);
        assert_eq!(got, (1..=4).map(|p| (a, q, p)).collect::<Vec<_>>(), "R{}", i + 1);
    }
    assert!(net.sim.hosts[net.x].received.is_empty());
    assert!(net.sim.hosts[net.s1].received.is_empty(), "nothing back yet");
    // N6 saw the group's data inside End.MT (beyond-sent protection).
    assert_eq!(net.sim.local(n6, Local::McDataSeen), 4);
    assert_eq!(net.sim.nodes[n6].pipeline.groups().get(0).unwrap().highest_sent(), Some(4));

    // ---- ACK aggregation: the source sees min(AckPSN) when it advances
    ack_script(&mut net);
    let ups = at_source(&net.sim, net.s1, 0);
    let acks: Vec<u32> = ups.iter().map(|u| u.2).collect();
    assert_eq!(acks, vec![2, 3, 4, 4], "{ups:?}");
    assert!(ups.iter().all(|u| u.1 == opcode::RC_ACKNOWLEDGE && matches!(u.3, Some(Syndrome::Ack { .. }))));
    assert_eq!(net.sim.drops(n6, Drop::McPsnBeyondSent), 1);
    assert_eq!(net.sim.drops(n6, Drop::McStalePsn), 1);
    assert_eq!(net.sim.drops(n6, Drop::McUnknownReceiver), 1);
    assert_eq!(net.sim.local(n6, Local::McAckIn), 10);
    assert_eq!(net.sim.local(n6, Local::McAckUp), 3);
    assert_eq!(net.sim.local(n6, Local::McAckRepeated), 1);

    // ---- NACK aggregation: PSN 5..=8; R5 misses 7, R3 misses 6
    let since = nak_script(&mut net);
    assert_nak_sequence(&net, since);
    assert_eq!(net.sim.local(n6, Local::McNakIn), 2);
    assert_eq!(net.sim.local(n6, Local::McNakUp), 1);
    assert_eq!(net.sim.local(n6, Local::McNakSuppressed), 1);

    // ---- CNP aggregation: one CNP per window T, for the busiest branch
    // Windows are aligned to the group's start (time 0): pick a window.
    let w0 = (net.sim.now / T + 2) * T;
    let arrive = 3 * LINK; // R1/R2/R4/R5 are three hops from N6
    for (k, who) in [0usize, 0, 3, 0].into_iter().enumerate() {
        let (a, _) = rcv(who);
        net.sim.send(net.r[who], w0 + 5 * US + k as u64 * US - arrive, &response(a, cnp()));
    }
    // Next window: one CNP from R2; the one after: none.
    let (a2, _) = rcv(1);
    net.sim.send(net.r[1], w0 + T + 10 * US - arrive, &response(a2, cnp()));
    net.sim.run_until(w0 + 4 * T);
    let ups = at_source(&net.sim, net.s1, w0);
    let cnps: Vec<u64> = ups.iter().filter(|u| u.1 == opcode::CNP).map(|u| u.0).collect();
    assert_eq!(cnps.len(), 2, "one CNP per window with CNPs: {ups:?}");
    // Each leaves N6 when its window closes (the node polls every µs) and
    // reaches S1 one link later.
    assert!(cnps[0] >= w0 + T + LINK && cnps[0] <= w0 + T + 2 * US + LINK, "{cnps:?}");
    assert!(cnps[1] >= w0 + 2 * T + LINK && cnps[1] <= w0 + 2 * T + 2 * US + LINK, "{cnps:?}");
    assert_eq!(net.sim.local(n6, Local::McCnpIn), 5);
    assert_eq!(net.sim.local(n6, Local::McCnpUp), 2);
    // The transit and edge nodes forwarded the responses as plain IPv6.
    for n in 1..6 {
        assert_eq!(net.sim.local(n, Local::McAckIn), 0, "{}", net.sim.nodes[n].name);
    }
    // Nothing was dropped anywhere except the three refused responses.
    let total: u64 = (0..6).map(|n| Drop::ALL.iter().map(|r| net.sim.drops(n, *r)).sum::<u64>()).sum();
    assert_eq!(total, 3);
}

/// The same traffic with every node aggregating its own branches (s.5.3:
/// "aggregated hop-by-hop at intermediate nodes"; s.8: state per
/// downstream branch at "each intermediate node (edge or transit)"). The
/// source sees the same ACK / NAK sequence as with the single level; each
/// node's state is its own branches only; every hop's response is a valid
/// RoCEv2 packet; CNPs climb one window per level.
#[test]
fn reference_topology_hop_by_hop_aggregation() {
    let mut net = build_with(true);
    let [n1, n2, n3, n4, n5, n6] = net.n;
    let branches = |net: &Net, n: usize| -> Vec<(Ipv6Addr, bool)> {
        net.sim.nodes[n].pipeline.groups().get(0).unwrap().branches().iter().map(|b| (b.receiver.addr, b.node)).collect()
    };
    assert_eq!(branches(&net, n1), vec![(rcv(0).0, false), (rcv(1).0, false)]);
    assert_eq!(branches(&net, n4), vec![(node_addr(1), true), (node_addr(2), true)]);
    assert_eq!(branches(&net, n6), vec![(node_addr(4), true), (node_addr(5), true)]);
    for psn in 1..=4u32 {
        let p = srv6_data(psn);
        net.sim.send(net.s1, u64::from(psn) * US, &p);
    }
    net.sim.run_until(100 * US);
    for (i, &h) in net.r.iter().enumerate() {
        assert_eq!(rc_at(&net.sim, h, 0).len(), 4, "R{}", i + 1);
    }
    // Every End.MT node saw the data go down (beyond-sent protection at
    // every level).
    for n in net.n {
        assert_eq!(net.sim.nodes[n].pipeline.groups().get(0).unwrap().highest_sent(), Some(4), "{}", net.sim.nodes[n].name);
    }

    // ---- ACKs: the same script and sequence as the single level (R3's
    // step back is refused at N2, the ACK beyond sent at N1, X at N6, the
    // top; R1's repeat is repeated at every level)
    ack_script(&mut net);
    let ups = at_source(&net.sim, net.s1, 0);
    assert_eq!(ups.iter().map(|u| u.2).collect::<Vec<_>>(), vec![2, 3, 4, 4], "{ups:?}");
    assert!(ups.iter().all(|u| u.1 == opcode::RC_ACKNOWLEDGE && matches!(u.3, Some(Syndrome::Ack { .. }))));
    assert_eq!(net.sim.drops(n1, Drop::McPsnBeyondSent), 1);
    // R3 is N2's only branch, so N2 already told N4 about PSN 4: R3's 3
    // lies behind N2's upstream PSN (out of window, where the single
    // level's N6, still at 3, found it stale).
    assert_eq!(net.sim.drops(n2, Drop::McPsnOutOfWindow), 1);
    // X is no branch of N3, which is below the top: passed up (N5, also
    // below, passes it on), dropped by N6, the top.
    assert_eq!([net.sim.local(n3, Local::McPassedUp), net.sim.local(n5, Local::McPassedUp)], [1, 1]);
    assert_eq!(net.sim.drops(n6, Drop::McUnknownReceiver), 1);
    // Each node counts what its own branches sent: N1 five ACKs from R1 /
    // R2, N4 what N1 and N2 sent up, N6 what N4 and N5 sent up.
    let ack_in = |net: &Net, n| net.sim.local(n, Local::McAckIn);
    let ack_up = |net: &Net, n| net.sim.local(n, Local::McAckUp) + net.sim.local(n, Local::McAckRepeated);
    assert_eq!([ack_in(&net, n1), ack_in(&net, n2), ack_in(&net, n3)], [5, 2, 3]);
    assert_eq!(ack_in(&net, n4), ack_up(&net, n1) + ack_up(&net, n2));
    assert_eq!(ack_in(&net, n5), ack_up(&net, n3));
    assert_eq!(ack_in(&net, n6), ack_up(&net, n4) + ack_up(&net, n5));
    assert_eq!(ack_up(&net, n6), 4);
    assert_eq!(net.sim.local(n6, Local::McAckRepeated), 1);
    // (What climbs between levels: hop_by_hop_response_is_a_receiver_style_rc_ack.)
    // ---- NAK: the same as the single level
    let since = nak_script(&mut net);
    assert_nak_sequence(&net, since);
    assert_eq!(net.sim.local(n6, Local::McNakUp), 1);
    assert_eq!(net.sim.local(n6, Local::McNakSuppressed), 1, "N4's NAK for R3 does not lower N6's minimum");

    // ---- CNPs: one per window at each level, so three windows up
    let w0 = (net.sim.now / T + 2) * T;
    for (k, who) in [0usize, 0, 3, 0].into_iter().enumerate() {
        let (a, _) = rcv(who);
        net.sim.send(net.r[who], w0 + 5 * US + k as u64 * US - LINK, &response(a, cnp()));
    }
    net.sim.run_until(w0 + 6 * T);
    let ups = at_source(&net.sim, net.s1, w0);
    let cnps: Vec<u64> = ups.iter().filter(|u| u.1 == opcode::CNP).map(|u| u.0).collect();
    assert_eq!(cnps.len(), 1, "the edge nodes' CNPs meet in N6's window: {ups:?}");
    // N1 and N3 close window w0 at w0 + T; N4 / N5 theirs at w0 + 2T;
    // N6 at w0 + 3T; one link to S1.
    assert!(cnps[0] >= w0 + 3 * T + LINK && cnps[0] <= w0 + 3 * T + 2 * US + LINK, "{cnps:?}");
    let cnp = |n| (net.sim.local(n, Local::McCnpIn), net.sim.local(n, Local::McCnpUp));
    assert_eq!([cnp(n1), cnp(n3), cnp(n4), cnp(n5), cnp(n6)], [(3, 1), (1, 1), (1, 1), (1, 1), (2, 1)]);
    let total: u64 = net.n.iter().map(|&n| Drop::ALL.iter().map(|r| net.sim.drops(n, *r)).sum::<u64>()).sum();
    assert_eq!(total, 3, "only the three refused responses");
}

/// What a node below the top sends upstream is a receiver-style RoCEv2
/// response: from its node address to the Proxy Address, DestQP = the
/// Designated QPN, UDP checksum and ICRC valid, the aggregated PSN. The
/// frame is the one N1 actually sent toward N4 (captured), and N4 counts it
/// against its branch N1.
/// An End.MT node holding the group counts the receivers its TLV names
/// that the group does not know (their ACKs would be dropped and the
/// source told of PSNs they never confirmed); when they match, nothing.
#[test]
fn tlv_receivers_unknown_to_the_group_are_counted() {
    let mut net = build_with(true);
    let [n1, n2, n3, ..] = net.n;
    for psn in 1..=2u32 {
        net.sim.send(net.s1, u64::from(psn) * US, &srv6_data(psn));
    }
    // N1's TLV names R3 as well, which is N2's branch, not N1's.
    let tlvs = vec![mt_tlv(sid(1), &[0, 1, 2]), mt_tlv(sid(2), &[2]), mt_tlv(sid(3), &[3, 4])];
    let mut r = SrhRepr::for_path(41, &[sid(6), proxy()], tlvs);
    r.segments_left = 1;
    let mut srh = vec![0u8; r.buffer_len()];
    r.emit(&mut Srh::new_unchecked(&mut srh[..])).unwrap();
    srh.extend_from_slice(&data(3));
    net.sim.send(net.s1, 3 * US, &ipv6(s1(), sid(6), 43, &srh));
    net.sim.run_until(100 * US);
    assert_eq!(net.sim.local(n1, Local::McTlvReceiverUnknown), 1, "R3 in N1's TLV, once");
    assert_eq!(net.sim.local(n2, Local::McTlvReceiverUnknown), 0);
    assert_eq!(net.sim.local(n3, Local::McTlvReceiverUnknown), 0);
}

#[test]
fn hop_by_hop_response_is_a_receiver_style_rc_ack() {
    let mut net = build_with(true);
    let (n1, n4) = (net.n[0], net.n[3]);
    for psn in 1..=3u32 {
        net.sim.send(net.s1, u64::from(psn) * US, &srv6_data(psn));
    }
    net.sim.run_until(100 * US);
    net.sim.nodes[n1].capture = Some(Vec::new());
    net.sim.send(net.r[0], 200 * US, &response(rcv(0).0, ack(3)));
    net.sim.send(net.r[1], 210 * US, &response(rcv(1).0, ack(2)));
    net.sim.run_until(300 * US);
    assert_eq!(net.sim.local(n1, Local::McAckUp), 1);
    let sent = net.sim.nodes[n1].capture.take().unwrap();
    assert_eq!(sent.len(), 1, "one aggregated ACK, nothing else: {sent:?}");
    let (_, port, f) = &sent[0];
    assert_eq!(*port, 0, "toward N4");
    let d = &f[14..];
    roce::icrc_check(d).unwrap();
    let ip = Ipv6Packet::new_checked(d).unwrap();
    assert_eq!((ip.src_addr(), ip.dst_addr()), (node_addr(1), proxy()));
    let u = &d[40..];
    let sum = checksum::combine(checksum::pseudo_v6(&node_addr(1).octets(), &proxy().octets(), 17, u.len() as u32), checksum::sum(u));
    assert_eq!(checksum::fold(sum), 0xffff);
    let bth = Bth::new_checked(&d[48..]).unwrap();
    assert_eq!((bth.opcode(), bth.dest_qp(), bth.psn()), (opcode::RC_ACKNOWLEDGE, DQPN, 2));
    assert_eq!(AethRepr::parse(&Aeth::new_checked(bth.payload()).unwrap()).unwrap().syndrome, Syndrome::Ack { credits: 31 });
    let g4 = net.sim.nodes[n4].pipeline.groups().get(0).unwrap();
    assert_eq!(g4.branches()[0].acked(), 2, "N4's branch N1 acknowledged min(3, 2)");
    assert_eq!(g4.branches()[1].acked(), 0, "N2 has said nothing");
    assert_eq!(net.sim.local(n4, Local::McAckIn), 1);
}
