//! The End.MT reverse path (dataplane/src/multicast/) against draft-li
//! s.5.3, from a review: each "Rule" test failed on the code before its
//! fix ("Was"); the "Checks" confirm behaviour the review was unsure of.

mod support;
use support::iface;
use std::net::Ipv6Addr;
use std::sync::Arc;

use dataplane::counters::{Drop, Local, WorkerCounters};
use dataplane::multicast::{
    build_upstream, upstream_len, Group, GroupConfig, GroupId, GroupTable, NakKind, Receiver, Response, Upstream,
};
use dataplane::packet::VecPacket;
use dataplane::pipeline::{Pipeline, PipelineConfig, Verdict};
use dataplane::tables::{Fib, MacAddr, NeighSource, Neighbours, NextHop, Topology};

const US: u64 = 1_000;
const SRC_QPN: u32 = 0x00_1234;
const DQPN: u32 = 0x00_0abc;

fn rx(i: u16) -> Ipv6Addr {
    Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 0x10 + i)
}
fn source() -> Ipv6Addr {
    "2001:db8:2::5".parse().unwrap()
}
fn proxy() -> Ipv6Addr {
    "2001:db8:ff::1".parse().unwrap()
}
fn cfg(n: u16) -> GroupConfig {
    let receivers = (0..n).map(|i| Receiver { addr: rx(i), qpn: 0x500 + u32::from(i) }).collect();
    GroupConfig::new(GroupId { source: source(), source_qpn: SRC_QPN }, proxy(), DQPN, receivers)
}
fn ack(psn: u32) -> Response {
    Response::Ack { psn, msn: psn, credits: 31 }
}
fn nak(psn: u32) -> Response {
    Response::Nak { psn, msn: psn - 1, kind: NakKind::PsnSequenceError }
}
fn rnr(psn: u32) -> Response {
    Response::Nak { psn, msn: psn - 1, kind: NakKind::Rnr { timer: 14 } }
}

// ------------------------------------------------------------------ NAK

/// Rule (s.5.3.2: "The source MUST receive an ePSN ... The NACK forwarded
/// upstream MUST carry the minimum ePSN across all downstream branches"):
/// a branch's NAK that did not go up, whose PSN has not passed down since,
/// goes up once it is the minimum.
///
/// Was:
/// Receiver A loses PSN 5 and NAKs it; the NAK goes up, the source goes
/// back to 5 and retransmits 5..10 (seen passing down). A loses the
/// retransmitted 7 and NAKs ePSN 7 (an RC responder NAKs a sequence error
/// once). At that moment B's effective ePSN is still 5 (= the last upstream
/// NAK), so A's NAK is suppressed (`mc-nak-suppressed`); when B then
/// acknowledges 10 the node sends ACK 6 and nothing else. No upstream
/// message ever carries an ePSN <= 7 after A's loss of the retransmitted 7:
/// the source only recovers by its local ACK timeout (a WAN-scale stall).
#[test]
fn the_nak_of_a_lost_retransmission_goes_up_once_it_is_the_minimum() {
    let mut g = Group::new(cfg(2), 0).unwrap();
    let (a, b) = (0usize, 1usize);
    for p in 1..=10 {
        g.on_data(p, p as u64 * US);
    }
    // B acknowledges 1..4 (coalesced), A got 1..4 and lost 5.
    assert_eq!(g.on_branch(b, ack(4), 20 * US), Ok(None));
    let up = g.on_branch(a, nak(5), 21 * US).unwrap();
    assert_eq!(up, Some(Upstream::Nak { psn: 5, msn: 4, kind: NakKind::PsnSequenceError }));
    // The source goes back to 5: retransmissions 5..10 pass down.
    for p in 5..=10 {
        g.on_data(p, 40 * US + p as u64);
    }
    // A receives 5, 6, loses 7 again, receives 8: NAK ePSN 7.
    let mut told_7 = false;
    let mut note = |u: Option<Upstream>| {
        if let Some(Upstream::Nak { psn, kind: NakKind::PsnSequenceError, .. }) = u {
            if psn <= 7 {
                told_7 = true;
            }
        }
    };
    note(g.on_branch(a, nak(7), 60 * US).unwrap());
    // B got everything and acknowledges it.
    let last = g.on_branch(b, ack(10), 61 * US).unwrap();
    let last_dbg = format!("{last:?}");
    note(last);
    assert_eq!(g.upstream_nak(), Some(7));
    assert!(
        told_7,
        "A's NAK for the lost retransmission of 7 never reached the source (last upstream: {last_dbg}, upstream PSN {}, NAKs suppressed {})",
        g.upstream_psn(),
        g.counters().get(dataplane::multicast::Counter::NakSuppressed)
    );
}

/// Rule: one upstream RNR NAK per retry of the source, however many
/// branches refuse it (a retry is the PSN passing down again).
///
/// Was: one per refusing branch. With two receivers that both refuse the one transmission of
/// PSN 11, the node sends two RNR NAKs for it: the source sees a duplicate
/// RNR NAK per receiver and retry (each one is an RNR retry it counts), which
/// a unicast peer never sends (s.5.3: responses "MUST be aggregated ... so
/// that the source's retransmission ... logic operates correctly without
/// multicast-specific modifications").
#[test]
fn an_rnr_nak_goes_up_once_per_retry_not_once_per_branch() {
    let mut g = Group::new(cfg(2), 0).unwrap();
    for p in 1..=11 {
        g.on_data(p, p as u64);
    }
    g.on_branch(0, ack(10), 100).unwrap();
    assert!(matches!(g.on_branch(1, ack(10), 101).unwrap(), Some(Upstream::Ack { psn: 10, .. })));
    // PSN 11 is sent once; both receivers refuse it (RNR).
    let mut ups = Vec::new();
    ups.extend(g.on_branch(0, rnr(11), 200).unwrap());
    ups.extend(g.on_branch(1, rnr(11), 201).unwrap());
    assert_eq!(ups.len(), 1, "one transmission of PSN 11, upstream RNR NAKs: {ups:?}");
    // The retry passes down and is refused again: one more RNR NAK.
    g.on_data(11, 300);
    assert!(matches!(g.on_branch(1, rnr(11), 400).unwrap(), Some(Upstream::Nak { psn: 11, kind: NakKind::Rnr { .. }, .. })));
    assert_eq!(g.on_branch(0, rnr(11), 401), Ok(None));
}

// ------------------------------------------------------------------ counters (pipeline)

const R0: MacAddr = [0x02, 0, 0, 0, 0, 0x10];
const R1: MacAddr = [0x02, 0, 0, 0, 0, 0x11];
const SRC_MAC: MacAddr = [0x02, 0, 0, 0, 0x2, 0x05];
const RX_MAC: MacAddr = [0x02, 0, 0, 0, 0x1, 0x10];
const T0: u64 = 1_000_000;

fn pipeline(g: GroupConfig) -> Pipeline {
    let p0 = iface("p0", 0, None, R0, 1500, &["2001:db8:1::1/64"]);
    let p1 = iface("p1", 1, None, R1, 1500, &["2001:db8:2::1/64"]);
    let mut f = Fib::default();
    f.insert6("2001:db8:1::/64".parse().unwrap(), NextHop { iface: 0, gateway: None });
    f.insert6("2001:db8:2::/64".parse().unwrap(), NextHop { iface: 1, gateway: None });
    let mut n = Neighbours::default();
    n.learn(1, source().into(), SRC_MAC, NeighSource::Static);
    let mut pl = Pipeline::new(Arc::new(Topology::new(vec![p0, p1])), Arc::new(f), Arc::new(n), Arc::new(WorkerCounters::default()), PipelineConfig::default());
    pl.set_groups(&[g], T0).unwrap();
    pl
}
fn response_frame(from: Ipv6Addr, r: Upstream) -> Vec<u8> {
    let mirror = GroupConfig::new(GroupId { source: proxy(), source_qpn: DQPN }, from, 0, vec![Receiver { addr: source(), qpn: 0 }]);
    let mut b = vec![0u8; upstream_len(&r)];
    let n = build_upstream(&r, &mirror, &mut b).unwrap();
    b.truncate(n);
    let mut f = R0.to_vec();
    f.extend_from_slice(&RX_MAC);
    f.extend_from_slice(&[0x86, 0xdd]);
    f.extend_from_slice(&b);
    f
}
fn run(pl: &mut Pipeline, f: &[u8], now: u64) -> Verdict {
    let mut p = VecPacket::from_bytes(f);
    let v = pl.process(&mut p, 0, now);
    if let Verdict::Drop(r) = v {
        pl.counters.dropped(r);
    }
    v
}

/// Rule (DESIGN invariant 4: "Every packet ends in exactly one of:
/// transmitted, consumed by a local behaviour, or dropped under a named
/// reason counter"). Was: a CNP that is over its branch's rate but arrives after
/// the window end closes the window: its buffer is rewritten into the
/// window's CNP and transmitted (`Verdict::Tx`), and it is also counted as
/// the drop `mc-cnp-rate-limited` -- one frame counted transmitted and
/// dropped.
#[test]
fn a_rate_limited_cnp_that_closes_a_window_is_transmitted_not_dropped() {
    let c = GroupConfig { cnp_window_ns: 50 * US, cnp_rate_per_s: 1, cnp_burst: 1, ..cfg(2) };
    let mut pl = pipeline(c);
    let cnp = Upstream::Cnp { branch: 0, ccount: 0 };
    // Branch 0 uses its one token in the first window.
    assert_eq!(run(&mut pl, &response_frame(rx(0), cnp), T0 + US), Verdict::Consumed);
    // Its next CNP (no token) arrives after the window end.
    let v = run(&mut pl, &response_frame(rx(0), cnp), T0 + 60 * US);
    let dropped = pl.counters.drops[Drop::McCnpRateLimited as usize].get();
    assert_eq!(pl.counters.local[Local::McCnpUp as usize].get(), 1);
    assert!(matches!(v, Verdict::Tx(_)), "the window's CNP leaves: {v:?}");
    assert_eq!(dropped, 0, "one frame: verdict {v:?} and mc-cnp-rate-limited = {dropped}");
    // A rate-limited CNP inside a window is a drop.
    let v = run(&mut pl, &response_frame(rx(0), cnp), T0 + 61 * US);
    assert_eq!(v, Verdict::Drop(Drop::McCnpRateLimited));
    assert_eq!(pl.counters.drops[Drop::McCnpRateLimited as usize].get(), 1);
}

// ------------------------------------------------------------------ checks

/// Checks: a receiver removed at run time (control-plane update) does not
/// leave the group waiting for it: the next ACK of a remaining receiver (the
/// re-ACK of the source's timeout retransmission) moves the source on.
#[test]
fn a_removed_receiver_does_not_stall_the_group() {
    let mut t = GroupTable::with_capacity(4, 16);
    t.replace_all(&[cfg(3)], 0).unwrap();
    let g = t.index_of(&cfg(3).id).unwrap();
    let key = |i: u16| dataplane::multicast::ResponseKey { receiver: rx(i), proxy: proxy(), dest_qp: DQPN };
    t.on_response(&key(0), ack(10), 1);
    t.on_response(&key(1), ack(10), 2);
    assert_eq!(t.get(g).unwrap().upstream_psn(), 0, "receiver 2 is silent");
    // Receiver 2 is removed.
    t.replace_all(&[cfg(2)], 3).unwrap();
    let v = t.on_response(&key(0), ack(10), 4);
    assert!(matches!(v, dataplane::multicast::Verdict::Upstream { up: Upstream::Ack { psn: 10, .. }, .. }), "{v:?}");
    // The removed receiver's responses are no longer accepted.
    assert!(matches!(t.on_response(&key(2), ack(10), 5), dataplane::multicast::Verdict::Dropped { .. }));
}

/// Checks: PSN order across 2^24 with the inflated-AckPSN check: data sent
/// up to PSN 2 after the wrap, an ACK of 3 is refused, ACKs of 0xffffff and 2
/// are accepted and the minimum is taken modulo 2^24.
#[test]
fn psn_order_across_the_wrap_with_the_sent_check() {
    let mut g = Group::new(GroupConfig { initial_psn: 0xff_fffe, ..cfg(2) }, 0).unwrap();
    for p in [0xff_fffe, 0xff_ffff, 0, 1, 2] {
        g.on_data(p, 1);
    }
    assert_eq!(g.on_branch(0, ack(3), 2), Err(dataplane::multicast::Counter::PsnBeyondSent));
    assert_eq!(g.on_branch(0, ack(2), 3), Ok(None));
    assert!(matches!(g.on_branch(1, ack(0xff_ffff), 4).unwrap(), Some(Upstream::Ack { psn: 0xff_ffff, .. })));
    assert!(matches!(g.on_branch(1, ack(1), 5).unwrap(), Some(Upstream::Ack { psn: 1, .. })));
}
