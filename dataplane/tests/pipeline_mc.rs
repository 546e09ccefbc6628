//! The End.MT reverse path in one [`Pipeline`] (multicast::path): responses
//! to a group's Proxy Address on byte buffers with a virtual clock. What is
//! aggregated, what goes upstream (bytes), what is dropped under which
//! counter, what is left to ordinary forwarding, and how a group update
//! keeps or resets the state.

mod support;
use support::iface;
use std::net::Ipv6Addr;
use std::sync::Arc;

use dataplane::counters::{Drop, Local, WorkerCounters};
use dataplane::multicast::{build_upstream, upstream_len, GroupConfig, GroupId, NakKind, Receiver, Upstream};
use dataplane::packet::VecPacket;
use dataplane::pipeline::{Pipeline, PipelineConfig, Verdict};
use dataplane::tables::{Fib, MacAddr, NeighSource, Neighbours, NextHop, Topology};
use dataplane::wire::roce::{self, Aeth, AethRepr, Bth, Syndrome};

const R0: MacAddr = [0x02, 0, 0, 0, 0, 0x10];
const R1: MacAddr = [0x02, 0, 0, 0, 0, 0x11];
const SRC_MAC: MacAddr = [0x02, 0, 0, 0, 0x2, 0x05];
const RX_MAC: MacAddr = [0x02, 0, 0, 0, 0x1, 0x10];
const US: u64 = 1_000;
const T0: u64 = 1_000_000;
const DQPN: u32 = 0x000777;
const SRC_QPN: u32 = 0x000900;

fn a6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}
fn proxy() -> Ipv6Addr {
    a6("2001:db8:ff::1")
}
fn source() -> Ipv6Addr {
    a6("2001:db8:2::5")
}
fn rx(i: u16) -> Ipv6Addr {
    Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 0x10 + i)
}

fn group(n: u16) -> GroupConfig {
    let receivers = (0..n).map(|i| Receiver { addr: rx(i), qpn: 0x500 + u32::from(i) }).collect();
    let mut g = GroupConfig::new(GroupId { source: source(), source_qpn: SRC_QPN }, proxy(), DQPN, receivers);
    g.cnp_window_ns = 50 * US;
    g
}

fn pipeline() -> Pipeline {
    let p0 = iface("p0", 0, None, R0, 1500, &["2001:db8:1::1/64"]);
    let p0v = iface("p0.10", 0, Some(10), R0, 1500, &["2001:db8:10::1/64"]);
    let p1 = iface("p1", 1, None, R1, 1500, &["2001:db8:2::1/64"]);
    let mut f = Fib::default();
    f.insert6("2001:db8:1::/64".parse().unwrap(), NextHop { iface: 0, gateway: None });
    f.insert6("2001:db8:10::/64".parse().unwrap(), NextHop { iface: 1, gateway: None });
    f.insert6("2001:db8:2::/64".parse().unwrap(), NextHop { iface: 2, gateway: None });
    // The Proxy Address is routed too (toward the DC): ordinary traffic to
    // it is forwarded.
    f.insert6("2001:db8:ff::/64".parse().unwrap(), NextHop { iface: 0, gateway: Some("2001:db8:1::fe".parse().unwrap()) });
    let mut n = Neighbours::default();
    n.learn(2, source().into(), SRC_MAC, NeighSource::Static);
    n.learn(0, "2001:db8:1::fe".parse().unwrap(), RX_MAC, NeighSource::Static);
    let mut pl = Pipeline::new(Arc::new(Topology::new(vec![p0, p0v, p1])), Arc::new(f), Arc::new(n), Arc::new(WorkerCounters::default()), PipelineConfig::default());
    pl.set_groups(&[group(2)], T0).unwrap();
    pl
}

/// A receiver's response datagram (SA = `from`, DA = Proxy, DestQP =
/// Designated QPN, valid ICRC).
fn response(from: Ipv6Addr, r: Upstream) -> Vec<u8> {
    let mirror = GroupConfig::new(GroupId { source: proxy(), source_qpn: DQPN }, from, 0, vec![Receiver { addr: source(), qpn: 0 }]);
    let mut b = vec![0u8; upstream_len(&r)];
    let n = build_upstream(&r, &mirror, &mut b).unwrap();
    b.truncate(n);
    b
}
fn frame(vlan: Option<u16>, ip: &[u8]) -> Vec<u8> {
    let mut f = R0.to_vec();
    f.extend_from_slice(&RX_MAC);
    if let Some(v) = vlan {
        f.extend_from_slice(&[0x81, 0x00]);
        f.extend_from_slice(&v.to_be_bytes());
    }
    f.extend_from_slice(&[0x86, 0xdd]);
    f.extend_from_slice(ip);
    f
}
fn ack(psn: u32) -> Upstream {
    Upstream::Ack { psn, msn: psn, credits: 31 }
}
fn cnp() -> Upstream {
    Upstream::Cnp { branch: 0, ccount: 0 }
}

fn run(pl: &mut Pipeline, f: &[u8], now: u64) -> (Verdict, Vec<u8>) {
    let mut p = VecPacket::from_bytes(f);
    let v = pl.process(&mut p, 0, now);
    if let Verdict::Drop(r) = v {
        pl.counters.dropped(r);
    }
    (v, p.to_vec())
}
fn drops(pl: &Pipeline, r: Drop) -> u64 {
    pl.counters.drops[r as usize].get()
}
fn local(pl: &Pipeline, l: Local) -> u64 {
    pl.counters.local[l as usize].get()
}

/// Check an upstream frame leaving port 1 for the source; (opcode, PSN,
/// syndrome).
fn upstream(f: &[u8]) -> (u8, u32, Option<Syndrome>) {
    assert_eq!(&f[0..6], &SRC_MAC);
    assert_eq!(&f[6..12], &R1);
    assert_eq!(&f[12..14], &[0x86, 0xdd], "untagged toward the source");
    let d = &f[14..];
    roce::icrc_check(d).unwrap();
    assert_eq!(&d[8..24], &proxy().octets());
    assert_eq!(&d[24..40], &source().octets());
    let bth = Bth::new_checked(&d[48..]).unwrap();
    assert_eq!(bth.dest_qp(), SRC_QPN);
    let syn = (bth.opcode() == 0x11).then(|| AethRepr::parse(&Aeth::new_checked(bth.payload()).unwrap()).unwrap().syndrome);
    (bth.opcode(), bth.psn(), syn)
}

#[test]
fn acks_aggregate_and_the_upstream_replaces_the_last_response_in_place() {
    let mut pl = pipeline();
    let (v, _) = run(&mut pl, &frame(None, &response(rx(0), ack(3))), T0);
    assert_eq!(v, Verdict::Consumed, "absorbed: R2 has not acked yet");
    // R2's ACK arrives VLAN-tagged; the upstream leaves untagged on p1.
    let (v, out) = run(&mut pl, &frame(Some(10), &response(rx(1), ack(2))), T0 + US);
    assert_eq!(v, Verdict::Tx(1));
    assert!(pl.reply, "a locally generated response");
    assert_eq!(out.len(), 14 + 68);
    assert_eq!(upstream(&out), (0x11, 2, Some(Syndrome::Ack { credits: 31 })));
    assert_eq!(local(&pl, Local::McAckIn), 2);
    assert_eq!(local(&pl, Local::McAckUp), 1);
}

#[test]
fn bad_responses_are_dropped_under_their_counter() {
    let mut pl = pipeline();
    // Not a receiver.
    let (v, _) = run(&mut pl, &frame(None, &response(a6("2001:db8:1::99"), ack(1))), T0);
    assert_eq!(v, Verdict::Drop(Drop::McUnknownReceiver));
    // Corrupted ICRC.
    let mut r = response(rx(0), ack(1));
    let n = r.len();
    r[n - 1] ^= 1;
    assert_eq!(run(&mut pl, &frame(None, &r), T0).0, Verdict::Drop(Drop::McBadIcrc));
    // An Acknowledge without its AETH (payload length cut to BTH + ICRC).
    let mut r = response(rx(0), ack(1));
    let cut = r.len() - 4 - 4;
    r.drain(cut..cut + 4);
    let plen = (r.len() - 40) as u16;
    r[4..6].copy_from_slice(&plen.to_be_bytes());
    r[44..46].copy_from_slice(&(plen).to_be_bytes());
    roce::icrc_fill(&mut r).unwrap();
    assert_eq!(run(&mut pl, &frame(None, &r), T0).0, Verdict::Drop(Drop::McMalformed));
    // A Long-haul CNP (E bit) is not a receiver's response.
    let mut r = response(rx(0), cnp());
    r[48 + 4] |= 0x20;
    roce::icrc_fill(&mut r).unwrap();
    assert_eq!(run(&mut pl, &frame(None, &r), T0).0, Verdict::Drop(Drop::McUnsupportedOpcode));
    // Truncated frames never panic and are counted somewhere.
    let full = frame(None, &response(rx(0), ack(1)));
    for l in 14..full.len() {
        let (v, _) = run(&mut pl, &full[..l], T0);
        assert!(matches!(v, Verdict::Drop(_)), "{l}: {v:?}");
    }
    // Each drop is in the worker counters and in the group's own.
    assert_eq!(drops(&pl, Drop::McUnknownReceiver), 1);
    assert_eq!(drops(&pl, Drop::McUnsupportedOpcode), 1);
    let g = pl.groups().get(0).unwrap();
    assert_eq!(g.counters().get(dataplane::multicast::Counter::UnknownReceiver), 1);
    assert_eq!(g.counters().get(dataplane::multicast::Counter::BadIcrc), drops(&pl, Drop::McBadIcrc));
    // Nothing reached the aggregation.
    assert_eq!(g.upstream_psn(), 0);
}

#[test]
fn other_traffic_to_the_proxy_is_forwarded() {
    let mut pl = pipeline();
    // A response to another QPN of the Proxy Address: ordinary traffic.
    let mut r = response(rx(0), ack(1));
    r[48 + 7] ^= 0x01;
    roce::icrc_fill(&mut r).unwrap();
    let (v, out) = run(&mut pl, &frame(None, &r), T0);
    assert_eq!(v, Verdict::Tx(0));
    assert_eq!(&out[0..6], &RX_MAC);
    assert_eq!(out[14 + 7], 63, "routed: hop limit decremented");
    // Data of the group on its way down (plain, not in End.MT): its PSN is
    // recorded and it is forwarded.
    let mut d = response(source(), ack(7));
    d[24..40].copy_from_slice(&proxy().octets());
    d[48] = 0x04; // SEND ONLY
    roce::icrc_fill(&mut d).unwrap();
    let (v, _) = run(&mut pl, &frame(None, &d), T0);
    assert_eq!(v, Verdict::Tx(0));
    assert_eq!(local(&pl, Local::McDataSeen), 1);
    assert_eq!(pl.groups().get(0).unwrap().highest_sent(), Some(7));
    // ...so an ACK beyond PSN 7 is refused.
    assert_eq!(run(&mut pl, &frame(None, &response(rx(0), ack(8))), T0).0, Verdict::Drop(Drop::McPsnBeyondSent));
}

#[test]
fn nak_goes_up_with_the_minimum_epsn() {
    let mut pl = pipeline();
    run(&mut pl, &frame(None, &response(rx(0), ack(5))), T0);
    let nak = Upstream::Nak { psn: 4, msn: 3, kind: NakKind::PsnSequenceError };
    let (v, out) = run(&mut pl, &frame(None, &response(rx(1), nak)), T0);
    assert_eq!(v, Verdict::Tx(1));
    assert_eq!(upstream(&out).1, 4);
    assert_eq!(upstream(&out).2, Some(Syndrome::Nak(roce::NakCode::PsnSequenceError)));
    // The same NAK again: suppressed (absorbed).
    assert_eq!(run(&mut pl, &frame(None, &response(rx(1), nak)), T0).0, Verdict::Consumed);
    assert_eq!(local(&pl, Local::McNakSuppressed), 1);
}

/// A worker that does not hold the groups (it reached the Proxy Address
/// after a decapsulation; packets to it directly are steered at RX) hands
/// the packet to the owner and keeps no state of its own.
#[test]
fn a_response_on_a_worker_without_the_groups_goes_to_the_owner() {
    let mut pl = pipeline();
    pl.state_owner = false;
    assert_eq!(run(&mut pl, &frame(None, &response(rx(0), ack(3))), T0).0, Verdict::ToOwner);
    assert_eq!(local(&pl, Local::McAckIn), 0, "nothing counted here");
    pl.state_owner = true;
    assert_eq!(run(&mut pl, &frame(None, &response(rx(0), ack(3))), T0).0, Verdict::Consumed);
    assert_eq!(local(&pl, Local::McAckIn), 1);
}

#[test]
fn window_cnp_is_polled_and_built_into_a_fresh_buffer() {
    let mut pl = pipeline();
    for k in 0..3 {
        let who = if k == 1 { 1 } else { 0 };
        assert_eq!(run(&mut pl, &frame(None, &response(rx(who), cnp())), T0 + k * US).0, Verdict::Consumed);
    }
    pl.poll_multicast(T0 + 49 * US);
    assert!(pl.mc_pending.is_empty(), "window still open");
    pl.poll_multicast(T0 + 50 * US);
    assert_eq!(pl.mc_pending.len(), 1);
    let (g, up) = pl.mc_pending[0];
    assert_eq!(up, Upstream::Cnp { branch: 0, ccount: 2 });
    let mut p = VecPacket::from_bytes(&[]);
    assert_eq!(pl.build_mc_upstream(g, &up, &mut p, T0 + 50 * US), Ok(1));
    let f = p.to_vec();
    assert_eq!(f.len(), 14 + 80);
    assert_eq!(upstream(&f), (0x81, 0, None));
    assert_eq!(f[14 + 48 + 4] & 0x40, 0x40, "BECN");
    assert_eq!(local(&pl, Local::McCnpIn), 3);
    assert_eq!(local(&pl, Local::McCnpUp), 1);
    pl.mc_pending.clear();
    pl.poll_multicast(T0 + 200 * US);
    assert!(pl.mc_pending.is_empty(), "no CNP in the later windows");
}

#[test]
fn group_updates_keep_state_and_a_new_receiver_joins_where_the_group_stands() {
    let mut pl = pipeline();
    run(&mut pl, &frame(None, &response(rx(0), ack(3))), T0);
    run(&mut pl, &frame(None, &response(rx(1), ack(3))), T0);
    assert_eq!(pl.groups().get(0).unwrap().upstream_psn(), 3);
    // The same set again: state kept.
    pl.set_groups(&[group(2)], T0 + US).unwrap();
    assert_eq!(pl.groups().get(0).unwrap().upstream_psn(), 3);
    // A third receiver: the group goes on from PSN 3, R3 is known and
    // joins as having acknowledged 3.
    pl.set_groups(&[group(3)], T0 + 2 * US).unwrap();
    let g = pl.groups().get(pl.groups().iter().next().unwrap().0).unwrap();
    assert_eq!(g.upstream_psn(), 3);
    assert_eq!(g.branches().len(), 3);
    assert_eq!(g.branches()[2].acked(), 3);
    assert_eq!(run(&mut pl, &frame(None, &response(rx(2), ack(4))), T0).0, Verdict::Consumed);
    // No group: the responses are ordinary traffic again.
    pl.set_groups(&[], T0 + 3 * US).unwrap();
    assert!(pl.groups().is_empty());
    assert_eq!(run(&mut pl, &frame(None, &response(rx(0), ack(4))), T0).0, Verdict::Tx(0));
    // A refused set reports the index and the reason.
    let mut bad = group(2);
    bad.cnp_window_ns = 0;
    let e = pl.set_groups(&[group(2), bad], T0).unwrap_err();
    assert_eq!(e.0, 1);
}

/// draft-li s.9: "Nodes SHOULD validate that reverse-path response
/// messages originate from addresses within the expected downstream
/// receiver set. BCP 38 ingress filtering SHOULD be applied at network
/// boundaries." The receiver set is checked by address
/// (`mc-unknown-receiver`); that a receiver's address arrives from the
/// receiver's side is strict uRPF on the port: a response claiming R1's
/// address that arrives from the source's side (port 1) is dropped as
/// `urpf-failed` before the group sees it, and the same response from the
/// receivers' side is aggregated.
#[test]
fn strict_urpf_keeps_a_receivers_responses_to_the_receivers_side() {
    use dataplane::tables::Urpf;
    let mut pl = pipeline();
    let mut t = (*pl.topo).clone();
    t.interfaces[2].urpf = Urpf::Strict;
    t.interfaces[0].urpf = Urpf::Strict;
    pl.topo = Arc::new(t);
    let mut f = frame(None, &response(rx(0), ack(3)));
    f[0..6].copy_from_slice(&R1);
    let mut p = VecPacket::from_bytes(&f);
    let v = pl.process(&mut p, 1, T0);
    assert_eq!(v, Verdict::Drop(Drop::UrpfFailed), "R1's address from the source's side");
    assert_eq!(local(&pl, Local::McAckIn), 0, "the group never saw it");
    let (v, _) = run(&mut pl, &frame(None, &response(rx(0), ack(3))), T0);
    assert_eq!(v, Verdict::Consumed, "from the receivers' side");
    assert_eq!(local(&pl, Local::McAckIn), 1);
}
