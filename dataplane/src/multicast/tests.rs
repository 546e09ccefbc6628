//! Unit tests of the reverse-path aggregation on a virtual clock.

use std::net::Ipv6Addr;

use proptest::prelude::*;

use super::*;
use crate::wire::roce::{self, opcode, Aeth, AethRepr, Bth, BthRepr, CnpRepr, NakCode, Syndrome};

const US: u64 = 1_000;

fn rx(i: u16) -> Ipv6Addr {
    Ipv6Addr::new(0x2001, 0xdb8, 0xaa, 0, 0, 0, 0, i)
}
fn source() -> Ipv6Addr {
    Ipv6Addr::new(0x2001, 0xdb8, 0x5, 0, 0, 0, 0, 1)
}
fn proxy() -> Ipv6Addr {
    Ipv6Addr::new(0x2001, 0xdb8, 0xff, 0, 0, 0, 0, 0x100)
}
const SRC_QPN: u32 = 0x00_1234;
const DQPN: u32 = 0x00_0abc;

fn cfg(n: u16) -> GroupConfig {
    let receivers = (1..=n).map(|i| Receiver { addr: rx(i), qpn: 0x100 + u32::from(i) }).collect();
    GroupConfig::new(GroupId { source: source(), source_qpn: SRC_QPN }, proxy(), DQPN, receivers)
}

fn cfg_at(n: u16, initial_psn: u32) -> GroupConfig {
    GroupConfig { initial_psn, ..cfg(n) }
}

fn ack(psn: u32) -> Response {
    Response::Ack { psn, msn: psn & 0xfff, credits: 31 }
}
fn nak(psn: u32) -> Response {
    Response::Nak { psn, msn: 7, kind: NakKind::PsnSequenceError }
}
fn up_ack_psn(u: Option<Upstream>) -> Option<u32> {
    match u {
        Some(Upstream::Ack { psn, .. }) => Some(psn),
        _ => None,
    }
}

// ---------------------------------------------------------------- ACK

#[test]
fn ack_waits_for_every_branch() {
    let mut g = Group::new(cfg(3), 0).unwrap();
    assert_eq!(g.upstream_psn(), 0, "draft s.8: initial AckPSN 0");
    assert_eq!(g.on_response(&rx(1), ack(10), 0), Ok(None));
    assert_eq!(g.on_response(&rx(2), ack(5), 0), Ok(None));
    // branch 3 has not acked yet: nothing upstream
    assert_eq!(g.counters().get(Counter::AckUp), 0);
    let u = g.on_response(&rx(3), ack(7), 0).unwrap();
    assert_eq!(u, Some(Upstream::Ack { psn: 5, msn: 5, credits: 31 }));
    assert_eq!(g.upstream_psn(), 5);
}

/// A receiver that is gone stalls the group until the operator removes
/// it; the changed group takes over where the old one stood (here far
/// past the initial PSN, more than half the PSN space), so the next ACK
/// of the others advances, and a new receiver joins from there.
#[test]
fn a_changed_group_goes_on_from_where_it_stood() {
    let far = (1 << 23) + 100;
    let mut t = GroupTable::with_capacity(4, 64);
    let g = t.insert(cfg(3), 0).unwrap();
    let k = |i: u16| ResponseKey { receiver: rx(i), proxy: proxy(), dest_qp: DQPN };
    let step = |t: &mut GroupTable, psn: u32| {
        for i in [1, 2, 3] {
            t.on_response(&k(i), ack(psn), 0);
        }
    };
    // Walk the stream forward in steps within the window.
    for psn in (1..=far).step_by(1 << 20).chain([far]) {
        step(&mut t, psn);
    }
    assert_eq!(t.get(g).unwrap().upstream_psn(), far);
    // Receiver 3 goes silent: 1 and 2 acknowledge more, nothing moves.
    t.on_response(&k(1), ack(far + 50), 0);
    t.on_response(&k(2), ack(far + 60), 0);
    assert_eq!(t.get(g).unwrap().upstream_psn(), far);
    // The operator removes it and adds receiver 4.
    let mut c = cfg(2);
    c.receivers.push(Receiver { addr: rx(4), qpn: 0x104 });
    t.replace_all(&[c], 1).unwrap();
    let g = t.group_of_data(&proxy(), DQPN).unwrap();
    let grp = t.get(g).unwrap();
    assert_eq!(grp.upstream_psn(), far, "where it stood, not the initial PSN");
    assert_eq!(grp.branches()[0].acked(), far + 50, "a kept branch keeps its state");
    assert_eq!(grp.branches()[2].acked(), far, "the new branch joins at what the source was told");
    match t.on_response(&k(4), ack(far + 40), 0) {
        Verdict::Upstream { up: Upstream::Ack { psn, .. }, .. } => assert_eq!(psn, far + 40),
        v => panic!("{v:?}"),
    }
    // A new initial PSN is a new stream: nothing taken over.
    t.replace_all(&[cfg_at(2, 7)], 2).unwrap();
    let g = t.group_of_data(&proxy(), DQPN).unwrap();
    assert_eq!(t.get(g).unwrap().upstream_psn(), 6);
}

#[test]
fn ack_min_and_monotonic() {
    let mut g = Group::new(cfg(2), 0).unwrap();
    g.on_response(&rx(1), ack(10), 0).unwrap();
    assert_eq!(up_ack_psn(g.on_response(&rx(2), ack(8), 0).unwrap()), Some(8));
    // branch 2 moves ahead of branch 1: min is now 10
    assert_eq!(up_ack_psn(g.on_response(&rx(2), ack(20), 0).unwrap()), Some(10));
    // the min does not move: nothing
    assert_eq!(g.on_response(&rx(2), ack(25), 0), Ok(None));
    // branch 1 acknowledges 10 again (it saw a retransmission of what the
    // source was told: the upstream ACK may be lost): the ACK is repeated
    assert_eq!(up_ack_psn(g.on_response(&rx(1), ack(10), 0).unwrap()), Some(10));
    assert_eq!(g.counters().get(Counter::AckRepeated), 1);
    // a reordered ACK behind the branch's state cannot move anything back
    assert_eq!(g.on_response(&rx(2), ack(22), 0), Err(Counter::StalePsn));
    assert_eq!(g.branches()[1].acked(), 25);
    assert_eq!(g.counters().get(Counter::StalePsn), 1);
    // behind the upstream PSN: outside [up, up + 2^23) (mod 2^24 the same
    // as more than half the space ahead)
    assert_eq!(g.on_response(&rx(1), ack(9), 0), Err(Counter::PsnOutOfWindow));
    assert_eq!(g.branches()[0].acked(), 10);
    assert_eq!(up_ack_psn(g.on_response(&rx(1), ack(30), 0).unwrap()), Some(25));
    assert_eq!(g.upstream_psn(), 25);
    assert_eq!(g.counters().get(Counter::AckUp), 3);
}

/// The upstream ACK is lost: the source retransmits, every receiver
/// acknowledges the PSN again, and the node answers once per
/// retransmission (a source that never hears the ACK retries until its QP
/// fails).
#[test]
fn a_lost_upstream_ack_is_repeated_once_per_retransmission() {
    let mut g = Group::new(cfg(3), 0).unwrap();
    // Before anything went upstream, nothing is repeated.
    assert_eq!(g.on_response(&rx(1), ack(0), 0), Ok(None));
    assert_eq!(g.on_response(&rx(2), ack(10), 0), Ok(None));
    assert_eq!(g.on_response(&rx(3), ack(10), 0), Ok(None));
    assert_eq!(up_ack_psn(g.on_response(&rx(1), ack(10), 0).unwrap()), Some(10));
    // ... that ACK is lost; the source retransmits PSN 10.
    assert_eq!(up_ack_psn(g.on_response(&rx(2), ack(10), 0).unwrap()), Some(10), "repeated");
    assert_eq!(g.on_response(&rx(1), ack(10), 0), Ok(None), "same retransmission");
    assert_eq!(g.on_response(&rx(3), ack(10), 0), Ok(None));
    // A second retransmission: a branch repeats again, a new round.
    assert_eq!(up_ack_psn(g.on_response(&rx(2), ack(10), 0).unwrap()), Some(10));
    assert_eq!(g.counters().get(Counter::AckRepeated), 2);
    assert_eq!(g.counters().get(Counter::AckUp), 1);
    // Progress ends the rounds.
    g.on_response(&rx(1), ack(12), 0).unwrap();
    g.on_response(&rx(2), ack(12), 0).unwrap();
    assert_eq!(up_ack_psn(g.on_response(&rx(3), ack(12), 0).unwrap()), Some(12));
    // A branch ahead of the minimum acknowledging itself again is not a
    // sign the source missed anything: absorbed.
    g.on_response(&rx(1), ack(14), 0).unwrap();
    assert_eq!(g.on_response(&rx(1), ack(14), 0), Ok(None));
    assert_eq!(g.counters().get(Counter::AckRepeated), 2);
}

#[test]
fn ack_carries_msn_of_min_branch_and_min_credits() {
    let mut g = Group::new(cfg(2), 0).unwrap();
    g.on_response(&rx(1), Response::Ack { psn: 9, msn: 3, credits: 4 }, 0).unwrap();
    let u = g.on_response(&rx(2), Response::Ack { psn: 12, msn: 4, credits: 9 }, 0).unwrap();
    assert_eq!(u, Some(Upstream::Ack { psn: 9, msn: 3, credits: 4 }));
}

#[test]
fn ack_window_and_inflation_checks() {
    let mut g = Group::new(cfg(2), 0).unwrap();
    // more than half the PSN space ahead of the upstream PSN: refused
    assert_eq!(g.on_response(&rx(1), ack(PSN_HALF + 5), 0), Err(Counter::PsnOutOfWindow));
    // with the data path reporting PSNs, nothing beyond the highest sent
    g.on_data(1, 0);
    g.on_data(50, 0);
    g.on_data(40, 0); // retransmission: highest stays 50
    assert_eq!(g.highest_sent(), Some(50));
    assert_eq!(g.on_response(&rx(1), ack(51), 0), Err(Counter::PsnBeyondSent));
    assert_eq!(g.on_response(&rx(1), ack(50), 0), Ok(None));
    // NAK ePSN may be highest + 1 (everything received), not more
    assert_eq!(g.on_response(&rx(2), nak(52), 0), Err(Counter::PsnBeyondSent));
    assert!(g.on_response(&rx(2), nak(51), 0).unwrap().is_some());
    assert_eq!(g.counters().get(Counter::PsnBeyondSent), 2);
    assert_eq!(g.counters().get(Counter::PsnOutOfWindow), 1);
}

// ---------------------------------------------------------------- NACK

#[test]
fn nak_min_epsn_rule() {
    let mut g = Group::new(cfg(3), 0).unwrap();
    g.on_response(&rx(1), ack(20), 0).unwrap();
    g.on_response(&rx(2), ack(15), 0).unwrap();
    g.on_response(&rx(3), ack(30), 0).unwrap(); // upstream ACK 15
    assert_eq!(g.upstream_psn(), 15);
    // branch 1 NAKs ePSN 25; branch 2 (no NAK) counts as 15 + 1 = 16
    let u = g.on_response(&rx(1), nak(25), 0).unwrap();
    assert_eq!(u, Some(Upstream::Nak { psn: 16, msn: 15, kind: NakKind::PsnSequenceError }));
    assert_eq!(g.branches()[0].epsn(), 25);
    assert_eq!(g.branches()[0].acked(), 24, "a NAK acknowledges ePSN - 1");
    assert_eq!(g.branches()[1].epsn(), 16);
    assert_eq!(g.branches()[1].nak_epsn(), None);
    // branch 2 catches up; branch 1 is now the minimum with its ePSN 25
    assert_eq!(up_ack_psn(g.on_response(&rx(2), ack(40), 0).unwrap()), Some(24));
    // a NAK from branch 3 with a later ePSN: min ePSN stays 25 -> one NAK
    // was already sent for 16, this is a new retransmission point 25
    let u = g.on_response(&rx(3), nak(35), 0).unwrap();
    assert_eq!(u, Some(Upstream::Nak { psn: 25, msn: 7, kind: NakKind::PsnSequenceError }));
    // the same minimum again (branch 2 NAKs beyond it): suppressed
    assert_eq!(g.on_response(&rx(2), nak(45), 0), Ok(None));
    assert_eq!(g.counters().get(Counter::NakSuppressed), 1);
    // a NAK at or below what the branch acknowledged is stale
    assert_eq!(g.on_response(&rx(2), nak(30), 0), Err(Counter::StalePsn));
    // an ACK covering the ePSN clears the branch's NAK
    g.on_response(&rx(1), ack(26), 0).unwrap();
    assert_eq!(g.branches()[0].nak_epsn(), None);
    assert_eq!(g.branches()[0].epsn(), 27);
}

#[test]
fn nak_with_silent_branch_goes_back_to_start() {
    // A branch that never acked has effective ePSN = initial PSN.
    let mut g = Group::new(cfg_at(2, 100), 0).unwrap();
    let u = g.on_response(&rx(1), nak(150), 0).unwrap();
    assert_eq!(u, Some(Upstream::Nak { psn: 100, msn: 0, kind: NakKind::PsnSequenceError }));
}

#[test]
fn rnr_and_fatal_naks() {
    let mut g = Group::new(cfg(2), 0).unwrap();
    g.on_response(&rx(1), ack(10), 0).unwrap();
    g.on_response(&rx(2), ack(10), 0).unwrap();
    let rnr = Response::Nak { psn: 12, msn: 2, kind: NakKind::Rnr { timer: 14 } };
    assert_eq!(
        g.on_response(&rx(1), rnr, 0).unwrap(),
        Some(Upstream::Nak { psn: 11, msn: 10, kind: NakKind::Rnr { timer: 14 } })
    );
    // RNR NAKs are forwarded every time (each refuses a new retry)
    assert_eq!(
        g.on_response(&rx(1), rnr, 0).unwrap(),
        Some(Upstream::Nak { psn: 11, msn: 10, kind: NakKind::Rnr { timer: 14 } })
    );
    let fatal = Response::Nak { psn: 11, msn: 2, kind: NakKind::Fatal(NakCode::RemoteAccessError) };
    assert_eq!(
        g.on_response(&rx(2), fatal, 0).unwrap(),
        Some(Upstream::Nak { psn: 11, msn: 2, kind: NakKind::Fatal(NakCode::RemoteAccessError) })
    );
    // A fatal NAK beyond the minimum ePSN (11: branch 1 has acknowledged
    // only 10) goes up at the minimum: it must not acknowledge 11..12 for
    // branch 1.
    let fatal13 = Response::Nak { psn: 13, msn: 3, kind: NakKind::Fatal(NakCode::InvalidRequest) };
    assert_eq!(g.on_response(&rx(2), fatal13, 0).unwrap(), Some(Upstream::Nak { psn: 11, msn: 3, kind: NakKind::Fatal(NakCode::InvalidRequest) }));
    assert_eq!(g.branches()[1].acked(), 10, "fatal NAK leaves the state alone");
    assert_eq!(g.counters().get(Counter::FatalNakUp), 2);
    assert_eq!(g.counters().get(Counter::RnrUp), 2);
}

// ---------------------------------------------------------------- wrap

#[test]
fn psn_wraps_at_24_bits() {
    let mut g = Group::new(cfg_at(2, 0xff_fff0), 0).unwrap();
    assert_eq!(g.upstream_psn(), 0xff_ffef);
    g.on_response(&rx(1), ack(0xff_fffe), 0).unwrap();
    assert_eq!(up_ack_psn(g.on_response(&rx(2), ack(0xff_ffff), 0).unwrap()), Some(0xff_fffe));
    // branch 1 wraps to 3: min is branch 2 at 0xffffff
    assert_eq!(up_ack_psn(g.on_response(&rx(1), ack(3), 0).unwrap()), Some(0xff_ffff));
    // branch 2 wraps to 0 -> 0 is after 0xffffff
    assert_eq!(up_ack_psn(g.on_response(&rx(2), ack(0), 0).unwrap()), Some(0));
    assert_eq!(g.on_response(&rx(2), ack(0xff_fffd), 0), Err(Counter::PsnOutOfWindow));
    // NAK across the wrap: branch 2 NAKs ePSN 2 (so it has 1), branch 1 is
    // at 3: min(acked) = 1, upstream ePSN 2
    let u = g.on_response(&rx(2), nak(2), 0).unwrap();
    assert_eq!(u, Some(Upstream::Nak { psn: 2, msn: 7, kind: NakKind::PsnSequenceError }));
    assert_eq!(g.upstream_psn(), 1);
    // ePSN 0xffffff would be behind: stale / out of window, never backwards
    assert!(g.on_response(&rx(1), nak(0xff_ffff), 0).is_err());
    assert_eq!(g.upstream_psn(), 1);
}

// ---------------------------------------------------------------- CNP

fn cnp_cfg(n: u16) -> GroupConfig {
    GroupConfig { cnp_window_ns: 100 * US, cnp_rate_per_s: 1_000_000, cnp_burst: 100, ..cfg(n) }
}

#[test]
fn cnp_one_per_window_for_max_ccount() {
    let mut g = Group::new(cnp_cfg(3), 0).unwrap();
    for t in 0..3 {
        assert_eq!(g.on_response(&rx(1), Response::Cnp, t * US), Ok(None));
    }
    for t in 0..5 {
        assert_eq!(g.on_response(&rx(2), Response::Cnp, 10 * US + t * US), Ok(None));
    }
    g.on_response(&rx(3), Response::Cnp, 20 * US).unwrap();
    assert_eq!(g.poll(99 * US), None, "window not over");
    assert_eq!(g.branches()[1].ccount(), 5);
    assert_eq!(g.poll(100 * US), Some(Upstream::Cnp { branch: 1, ccount: 5 }));
    assert!(g.branches().iter().all(|b| b.ccount() == 0), "counts reset");
    assert_eq!(g.poll(150 * US), None);
    // an empty window sends nothing
    assert_eq!(g.poll(200 * US), None);
    // a CNP after the window end closes the window it was not part of
    g.on_response(&rx(3), Response::Cnp, 210 * US).unwrap();
    g.on_response(&rx(3), Response::Cnp, 220 * US).unwrap();
    let u = g.on_response(&rx(1), Response::Cnp, 305 * US).unwrap();
    assert_eq!(u, Some(Upstream::Cnp { branch: 2, ccount: 2 }));
    assert_eq!(g.branches()[0].ccount(), 1, "the late CNP counts in the new window");
    assert_eq!(g.window_end(), 400 * US);
    // a late poll skips empty windows and aligns to T
    assert_eq!(g.poll(1_050 * US), Some(Upstream::Cnp { branch: 0, ccount: 1 }));
    assert_eq!(g.window_end(), 1_100 * US);
    assert_eq!(g.counters().get(Counter::CnpUp), 3);
    assert_eq!(g.counters().get(Counter::CnpIn), 12);
}

/// s.5.3.1 with AETH credits: an ACK that does not move the minimum is
/// absorbed, unless the most constrained branch's credit count changed;
/// then the unchanged minimum goes up with the new credits, once.
#[test]
fn a_credit_change_at_the_minimum_goes_upstream() {
    let mut g = Group::new(cfg(2), 0).unwrap();
    let ack_c = |psn: u32, credits: u8| Response::Ack { psn, msn: psn, credits };
    assert_eq!(g.on_response(&rx(1), ack_c(5, 3), 0), Ok(None));
    assert_eq!(g.on_response(&rx(2), ack_c(4, 7), 0), Ok(Some(Upstream::Ack { psn: 4, msn: 4, credits: 3 })));
    // Branch 1 runs low on credits at the same PSN: the minimum (4) again,
    // with the new code.
    assert_eq!(g.on_response(&rx(1), ack_c(5, 1), 0), Ok(Some(Upstream::Ack { psn: 4, msn: 4, credits: 1 })));
    assert_eq!(g.counters().get(Counter::AckCreditUpdate), 1);
    // The same credits again: nothing new for the source.
    assert_eq!(g.on_response(&rx(1), ack_c(5, 1), 0), Ok(None));
    assert_eq!(g.counters().get(Counter::AckUp), 1);
    assert_eq!(g.counters().get(Counter::AckCreditUpdate), 1);
    // Before the source was told anything, credits alone send nothing.
    let mut g = Group::new(cfg(2), 0).unwrap();
    assert_eq!(g.on_response(&rx(1), ack_c(5, 3), 0), Ok(None));
    assert_eq!(g.on_response(&rx(1), ack_c(5, 2), 0), Ok(None));
}

// ---------------------------------------------------------------- adaptive T

fn adaptive_cfg(n: u16, floor: u64, max: u64) -> GroupConfig {
    GroupConfig { cnp_window_ns: floor, cnp_window_max_ns: Some(max), cnp_rate_per_s: 1_000_000, cnp_burst: 100, ..cfg(n) }
}

/// Data PSN `psn` passes down at `t`; every branch acknowledges it, the
/// slowest (branch `n`) `rtt` later.
fn round(g: &mut Group, n: u16, psn: u32, t: u64, rtt: u64) -> Option<u32> {
    g.on_data(psn, t);
    for i in 1..n {
        g.on_response(&rx(i), ack(psn), t + rtt / 2).unwrap();
    }
    up_ack_psn(g.on_response(&rx(n), ack(psn), t + rtt).unwrap())
}

#[test]
fn adaptive_window_follows_the_round_trip_below() {
    let mut g = Group::new(adaptive_cfg(3, 50 * US, 10_000 * US), 0).unwrap();
    assert_eq!(g.window_ns(), 50 * US, "the floor until a round trip is measured");
    assert_eq!(g.srtt_ns(), None);
    // The first sample is taken as it is (RFC 6298 s.2.2).
    assert_eq!(round(&mut g, 3, 1, 0, 2_000 * US), Some(1));
    assert_eq!(g.srtt_ns(), Some(2_000 * US));
    assert_eq!(g.window_ns(), 2_000 * US);
    assert_eq!(g.counters().get(Counter::RttSample), 1);
    // Then smoothed with a gain of 1/8: 2000 -> 1875 -> 1765.625 ...
    round(&mut g, 3, 2, 3_000 * US, 1_000 * US);
    assert_eq!(g.srtt_ns(), Some(1_875 * US));
    assert_eq!(g.window_ns(), 1_875 * US);
    // Many rounds of 400 µs bring it there.
    for k in 0..60u32 {
        round(&mut g, 3, 3 + k, 10_000 * US + u64::from(k) * 1_000 * US, 400 * US);
    }
    let s = g.srtt_ns().unwrap();
    assert!((400 * US..401 * US).contains(&s), "{s}");
    assert_eq!(g.window_ns(), s);
    assert_eq!(g.counters().get(Counter::RttSample), 62);
    // The CNP windows now last T: counts from two branches, one CNP at the
    // end of the window that holds them (windows aligned to the start).
    assert_eq!(g.poll(100_000 * US), None, "no CNP counted");
    let end = g.window_end();
    assert!(end > 100_000 * US && end <= 100_000 * US + s, "{end}");
    g.on_response(&rx(1), Response::Cnp, end - s / 2).unwrap();
    assert_eq!(g.poll(end - 1), None);
    assert_eq!(g.poll(end), Some(Upstream::Cnp { branch: 0, ccount: 1 }));
    assert_eq!(g.window_end(), end + g.window_ns());
}

#[test]
fn adaptive_window_stays_within_its_bounds() {
    let mut g = Group::new(adaptive_cfg(2, 100 * US, 1_000 * US), 0).unwrap();
    round(&mut g, 2, 1, 0, 20 * US);
    assert_eq!(g.srtt_ns(), Some(20 * US));
    assert_eq!(g.window_ns(), 100 * US, "the floor: never below cnp_window_ns");
    let mut g = Group::new(adaptive_cfg(2, 100 * US, 1_000 * US), 0).unwrap();
    round(&mut g, 2, 1, 0, 60_000 * US);
    assert_eq!(g.srtt_ns(), Some(60_000 * US));
    assert_eq!(g.window_ns(), 1_000 * US, "the ceiling");
    // A fixed window never moves, whatever the round trips.
    let mut g = Group::new(cnp_cfg(2), 0).unwrap();
    round(&mut g, 2, 1, 0, 3_000 * US);
    assert_eq!((g.srtt_ns(), g.window_ns()), (None, 100 * US));
    assert_eq!(g.counters().get(Counter::RttSample), 0);
    // The ceiling may not be below the floor.
    let bad = GroupConfig { cnp_window_max_ns: Some(99 * US), ..adaptive_cfg(2, 100 * US, 0) };
    assert_eq!(Group::new(bad, 0).err(), Some(SetupError::WindowRange));
}

#[test]
fn adaptive_window_times_one_psn_and_skips_retransmissions() {
    let mut g = Group::new(adaptive_cfg(2, 10 * US, 10_000 * US), 0).unwrap();
    // PSN 1 is timed; 2 and 3 pass while it is.
    g.on_data(1, 0);
    g.on_data(2, 100 * US);
    g.on_data(3, 200 * US);
    g.on_response(&rx(1), ack(3), 500 * US).unwrap();
    // One branch acknowledged: no sample yet.
    assert_eq!(g.srtt_ns(), None);
    g.on_response(&rx(2), ack(2), 700 * US).unwrap();
    // Everyone has PSN 1 (and 2): one sample, for PSN 1, 700 µs.
    assert_eq!(g.srtt_ns(), Some(700 * US));
    // The next new PSN is timed: 4 at 1000 µs; then 4 is sent again (the
    // source retransmits): its acknowledgement could answer either copy.
    g.on_data(4, 1_000 * US);
    g.on_data(4, 1_800 * US);
    g.on_response(&rx(1), ack(4), 1_900 * US).unwrap();
    g.on_response(&rx(2), ack(4), 1_900 * US).unwrap();
    assert_eq!(g.srtt_ns(), Some(700 * US), "Karn: no sample of a retransmitted PSN");
    assert_eq!(g.counters().get(Counter::RttSample), 1);
    // A retransmission above the timed PSN does not disturb it.
    g.on_data(5, 2_000 * US);
    g.on_data(6, 2_000 * US);
    g.on_data(6, 2_100 * US);
    g.on_response(&rx(1), ack(5), 2_300 * US).unwrap();
    g.on_response(&rx(2), ack(5), 2_300 * US).unwrap();
    assert_eq!(g.srtt_ns(), Some(700 * US - 700 * US / 8 + 300 * US / 8));
    // A NAK that covers the timed PSN drops the timing: a loss in flight.
    g.on_response(&rx(1), ack(6), 2_400 * US).unwrap();
    g.on_response(&rx(2), ack(6), 2_400 * US).unwrap();
    let before = g.srtt_ns();
    g.on_data(7, 3_000 * US);
    g.on_data(8, 3_000 * US);
    g.on_response(&rx(1), ack(8), 3_100 * US).unwrap();
    assert!(matches!(g.on_response(&rx(2), nak(8), 3_200 * US), Ok(Some(Upstream::Nak { psn: 8, .. }))));
    g.on_response(&rx(2), ack(8), 3_900 * US).unwrap();
    assert_eq!(g.srtt_ns(), before);
    assert_eq!(g.counters().get(Counter::RttSample), 2);
}

#[test]
fn adaptive_window_carries_over_a_group_change() {
    let mut old = Group::new(adaptive_cfg(2, 10 * US, 10_000 * US), 0).unwrap();
    round(&mut old, 2, 1, 0, 800 * US);
    assert_eq!(old.window_ns(), 800 * US);
    // A receiver added at run time: the measured round trip stays.
    let mut new = Group::new(adaptive_cfg(3, 10 * US, 10_000 * US), 5_000 * US).unwrap();
    new.carry_over(&old);
    assert_eq!((new.srtt_ns(), new.window_ns()), (Some(800 * US), 800 * US));
    // A lower ceiling applies at once.
    let mut lower = Group::new(adaptive_cfg(2, 10 * US, 500 * US), 5_000 * US).unwrap();
    lower.carry_over(&old);
    assert_eq!(lower.window_ns(), 500 * US);
    // Back to a fixed window: T is the configured one.
    let mut fixed = Group::new(cnp_cfg(2), 5_000 * US).unwrap();
    fixed.carry_over(&old);
    assert_eq!((fixed.srtt_ns(), fixed.window_ns()), (None, 100 * US));
}

#[test]
fn cnp_tie_goes_to_lowest_branch() {
    let mut g = Group::new(cnp_cfg(3), 0).unwrap();
    g.on_response(&rx(3), Response::Cnp, 0).unwrap();
    g.on_response(&rx(2), Response::Cnp, 0).unwrap();
    assert_eq!(g.poll(100 * US), Some(Upstream::Cnp { branch: 1, ccount: 1 }));
}

#[test]
fn cnp_rate_limit_per_branch() {
    let c = GroupConfig { cnp_window_ns: 1_000 * US, cnp_rate_per_s: 10_000, cnp_burst: 2, ..cfg(2) };
    let mut g = Group::new(c, 0).unwrap();
    // branch 1 floods: burst 2, then one per 100 µs
    let mut limited = 0;
    for t in 0..100 {
        if g.on_response(&rx(1), Response::Cnp, t * US) == Err(Counter::CnpRateLimited) {
            limited += 1;
        }
    }
    // 0..99 µs: 2 burst tokens + 0 refills (first refill at 100 µs)
    assert_eq!(limited, 98);
    assert_eq!(g.branches()[0].ccount(), 2);
    // branch 2 is not affected by branch 1's flood
    for t in 0..2 {
        assert_eq!(g.on_response(&rx(2), Response::Cnp, 100 + t), Ok(None));
    }
    assert_eq!(g.branches()[1].ccount(), 2);
    // refill
    assert_eq!(g.on_response(&rx(1), Response::Cnp, 200 * US), Ok(None));
    assert_eq!(g.branches()[0].ccount(), 3);
    assert_eq!(g.counters().get(Counter::CnpRateLimited), 98);
}

// ---------------------------------------------------------------- table

#[test]
fn table_lookup_and_unknown_receiver() {
    let mut t = GroupTable::with_capacity(4, 64);
    let g0 = t.insert(cfg(3), 0).unwrap();
    let other_proxy = Ipv6Addr::new(0x2001, 0xdb8, 0xff, 0, 0, 0, 0, 0x200);
    let c1 = GroupConfig {
        id: GroupId { source: source(), source_qpn: 0x77 },
        proxy: other_proxy,
        ..cfg(2)
    };
    let g1 = t.insert(c1, 0).unwrap();
    assert_ne!(g0, g1);
    let k = |r: Ipv6Addr, p: Ipv6Addr, q: u32| ResponseKey { receiver: r, proxy: p, dest_qp: q };
    assert_eq!(t.lookup(&k(rx(2), proxy(), DQPN)), Lookup::Branch { group: g0, branch: 1 });
    // same receiver, the other group
    assert_eq!(t.lookup(&k(rx(2), other_proxy, DQPN)), Lookup::Branch { group: g1, branch: 1 });
    assert_eq!(t.lookup(&k(rx(3), other_proxy, DQPN)), Lookup::UnknownReceiver { group: g1 });
    assert_eq!(t.lookup(&k(rx(1), proxy(), DQPN + 1)), Lookup::NotMulticast);

    // unknown receiver: dropped and counted, state untouched
    let v = t.on_response(&k(rx(9), proxy(), DQPN), ack(100), 0);
    assert_eq!(v, Verdict::Dropped { group: g0, reason: Counter::UnknownReceiver });
    assert_eq!(t.get(g0).unwrap().counters().get(Counter::UnknownReceiver), 1);
    assert!(t.get(g0).unwrap().branches().iter().all(|b| b.acked() == 0));
    assert_eq!(t.on_response(&k(rx(1), proxy(), 5), ack(1), 0), Verdict::NotMulticast);

    for i in 1..=2 {
        assert_eq!(t.on_response(&k(rx(i), proxy(), DQPN), ack(4), 0), Verdict::Absorbed { group: g0 });
    }
    assert_eq!(
        t.on_response(&k(rx(3), proxy(), DQPN), ack(4), 0),
        Verdict::Upstream { group: g0, up: Upstream::Ack { psn: 4, msn: 4, credits: 31 } }
    );
    assert_eq!(t.counters().get(Counter::AckIn), 3);

    // setup errors
    assert_eq!(t.insert(cfg(1), 0), Err(SetupError::DuplicateGroup));
    let dup_proxy = GroupConfig { id: GroupId { source: source(), source_qpn: 0x99 }, ..cfg(1) };
    assert_eq!(t.insert(dup_proxy, 0), Err(SetupError::DuplicateProxy));
    let mut dup_rx = cfg(2);
    dup_rx.id.source_qpn = 0x55;
    dup_rx.proxy = Ipv6Addr::LOCALHOST;
    dup_rx.receivers[1].addr = rx(1);
    assert_eq!(t.insert(dup_rx, 0), Err(SetupError::DuplicateReceiver(rx(1))));

    // remove frees the keys and the slot
    let id0 = t.get(g0).unwrap().id();
    assert!(t.remove(&id0).is_some());
    assert_eq!(t.lookup(&k(rx(2), proxy(), DQPN)), Lookup::NotMulticast);
    assert_eq!(t.insert(cfg(1), 0), Ok(g0));
    assert_eq!(t.len(), 2);

    // data path: highest PSN per group, from the group's source only
    // (s.9: a forged PSN must not make inflated AckPSNs look sent)
    let g1_source = t.get(g1).unwrap().id().source;
    assert_eq!(t.on_data(&other_proxy, DQPN, 33, &g1_source, 0), Some(g1));
    assert_eq!(t.get(g1).unwrap().highest_sent(), Some(33));
    assert_eq!(t.on_data(&other_proxy, DQPN, 1000, &rx(1), 0), None, "not from the group's source");
    assert_eq!(t.get(g1).unwrap().highest_sent(), Some(33));

    // poll reaches every group
    t.on_response(&k(rx(1), other_proxy, DQPN), Response::Cnp, 1);
    let mut out = Vec::new();
    t.poll(1_000 * US, |i, g, u| out.push((i, g.id().source_qpn, u)));
    assert_eq!(out, vec![(g1, 0x77, Upstream::Cnp { branch: 0, ccount: 1 })]);
}

#[test]
fn table_full_and_validation() {
    let mut t = GroupTable::with_capacity(1, 4);
    t.insert(cfg(1), 0).unwrap();
    let c = GroupConfig {
        id: GroupId { source: source(), source_qpn: 9 },
        proxy: Ipv6Addr::LOCALHOST,
        ..cfg(1)
    };
    assert_eq!(t.insert(c.clone(), 0), Err(SetupError::TableFull));
    assert_eq!(Group::new(GroupConfig { receivers: vec![], ..c.clone() }, 0).err(), Some(SetupError::NoReceivers));
    assert_eq!(
        Group::new(GroupConfig { designated_qpn: 1 << 24, ..c.clone() }, 0).err(),
        Some(SetupError::QpnRange("designated_qpn"))
    );
    assert_eq!(Group::new(GroupConfig { cnp_window_ns: 0, ..c.clone() }, 0).err(), Some(SetupError::ZeroWindow));
    assert_eq!(Group::new(GroupConfig { cnp_burst: 0, ..c.clone() }, 0).err(), Some(SetupError::ZeroCnpRate));
    // Hop-by-hop: child nodes alone are branches enough; a child may not
    // also be a receiver or appear twice; the node address is neither the
    // Proxy Address nor a branch.
    let node = |i: u16| Ipv6Addr::new(0x2001, 0xdb8, 0x99, 0, 0, 0, 0, i);
    let transit = GroupConfig { receivers: vec![], children: vec![node(1), node(2)], node_address: Some(node(9)), ..c.clone() };
    let g = Group::new(transit.clone(), 0).unwrap();
    assert_eq!(g.branches().iter().map(|b| (b.receiver.addr, b.node)).collect::<Vec<_>>(), vec![(node(1), true), (node(2), true)]);
    assert_eq!(Group::new(GroupConfig { children: vec![node(1), node(1)], ..transit.clone() }, 0).err(), Some(SetupError::DuplicateReceiver(node(1))));
    assert_eq!(Group::new(GroupConfig { children: vec![rx(1)], ..c.clone() }, 0).err(), Some(SetupError::DuplicateReceiver(rx(1))));
    assert_eq!(Group::new(GroupConfig { node_address: Some(node(2)), ..transit.clone() }, 0).err(), Some(SetupError::NodeAddress(node(2))));
    assert_eq!(Group::new(GroupConfig { node_address: Some(c.proxy), ..transit.clone() }, 0).err(), Some(SetupError::NodeAddress(c.proxy)));
    assert_eq!(Group::new(GroupConfig { node_address: Some(source()), ..transit.clone() }, 0).err(), Some(SetupError::NodeAddress(source())));
    assert_eq!(Group::new(GroupConfig { children: vec![source()], ..transit.clone() }, 0).err(), Some(SetupError::NodeAddress(source())));
    assert_eq!(Group::new(GroupConfig { children: vec![c.proxy], ..transit.clone() }, 0).err(), Some(SetupError::NodeAddress(c.proxy)));
    assert_eq!(Group::new(GroupConfig { children: vec![], ..transit }, 0).err(), Some(SetupError::NoReceivers));
}

/// A group with receivers and child nodes: the table keys both; a child's
/// response is one branch's; with a node address the upstream response
/// is addressed as a receiver's (node -> Proxy Address, Designated QPN).
#[test]
fn children_are_branches_and_node_address_turns_the_upstream_response() {
    let child = Ipv6Addr::new(0x2001, 0xdb8, 0x99, 0, 0, 0, 0, 1);
    let me = Ipv6Addr::new(0x2001, 0xdb8, 0x99, 0, 0, 0, 0, 9);
    let k = |r: Ipv6Addr, p: Ipv6Addr, q: u32| ResponseKey { receiver: r, proxy: p, dest_qp: q };
    let mut t = GroupTable::with_capacity(1, 4);
    let g = t.insert(GroupConfig { children: vec![child], node_address: Some(me), ..cfg(1) }, 0).unwrap();
    assert_eq!(t.lookup(&k(child, proxy(), DQPN)), Lookup::Branch { group: g, branch: 1 });
    assert_eq!(t.on_response(&k(rx(1), proxy(), DQPN), ack(5), 0), Verdict::Absorbed { group: g });
    let v = t.on_response(&k(child, proxy(), DQPN), ack(3), 0);
    assert_eq!(v, Verdict::Upstream { group: g, up: Upstream::Ack { psn: 3, msn: 3, credits: 31 } });
    let cfg = t.get(g).unwrap().config().clone();
    assert_eq!(cfg.upstream_dst(), proxy());
    let up = Upstream::Ack { psn: 3, msn: 3, credits: 31 };
    let mut b = vec![0u8; upstream_len(&up)];
    let n = build_upstream(&up, &cfg, &mut b).unwrap();
    let (bth, aeth) = parse_up(&b[..n]);
    assert_eq!((bth.dest_qp, bth.psn), (DQPN, 3));
    assert!(aeth.is_some());
    assert_eq!(&b[8..24], &me.octets());
    assert_eq!(&b[24..40], &proxy().octets());
    // Below the top, a response from no branch is forwarded up (the next
    // node decides), not dropped; at the top it is dropped.
    let stranger = Ipv6Addr::new(0x2001, 0xdb8, 0x99, 0, 0, 0, 0, 0x77);
    assert_eq!(t.on_response(&k(stranger, proxy(), DQPN), ack(3), 0), Verdict::NotMulticast);
    assert_eq!(t.get(g).unwrap().counters().get(Counter::PassedUp), 1);
    assert_eq!(t.get(g).unwrap().counters().get(Counter::UnknownReceiver), 0);
    // The removal frees the child's key too.
    let id = t.get(g).unwrap().id();
    t.remove(&id);
    assert_eq!(t.lookup(&k(child, proxy(), DQPN)), Lookup::NotMulticast);
}

// ---------------------------------------------------------------- wire

/// Parse an upstream datagram with the wire module.
fn parse_up(d: &[u8]) -> (BthRepr, Option<AethRepr>) {
    roce::icrc_check(d).expect("ICRC verifies");
    let l = roce::IcrcLayout::of(d).unwrap();
    assert_eq!(l.ip_version, 6);
    assert_eq!(l.datagram_len, d.len());
    let bth = Bth::new_checked(&d[l.bth_offset()..l.datagram_len]).unwrap();
    let b = BthRepr::parse(&bth).unwrap();
    let a = if b.opcode == opcode::RC_ACKNOWLEDGE {
        Some(AethRepr::parse(&Aeth::new_checked(bth.payload()).unwrap()).unwrap())
    } else {
        None
    };
    (b, a)
}

fn check_ip_udp(d: &[u8], c: &GroupConfig, tc: u8) {
    assert_eq!(d[0] >> 4, 6);
    assert_eq!(((u16::from(d[0]) << 4 | u16::from(d[1]) >> 4) & 0xff) as u8, tc);
    assert_eq!(d[6], 17);
    assert_eq!(d[7], c.hop_limit);
    assert_eq!(&d[8..24], &proxy().octets(), "SA = Proxy Address");
    assert_eq!(&d[24..40], &source().octets(), "DA = source");
    assert_eq!(u16::from_be_bytes([d[40], d[41]]), c.udp_src_port);
    assert_eq!(u16::from_be_bytes([d[42], d[43]]), 4791);
    assert_eq!(usize::from(u16::from_be_bytes([d[44], d[45]])), d.len() - 40);
    // UDP checksum verifies (pseudo-header sum over the segment is 0xffff)
    let mut s: u32 = 0;
    let mut add = |b: &[u8]| {
        for ch in b.chunks(2) {
            s += u32::from(u16::from_be_bytes([ch[0], *ch.get(1).unwrap_or(&0)]));
        }
    };
    add(&d[8..40]);
    add(&((d.len() - 40) as u32).to_be_bytes());
    add(&[0, 0, 0, 17]);
    add(&d[40..]);
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    assert_eq!(s, 0xffff, "UDP checksum");
}

#[test]
fn build_upstream_ack() {
    let c = cfg(2);
    let up = Upstream::Ack { psn: 0xff_fffe, msn: 0x12_3456, credits: 9 };
    let mut buf = [0u8; 256];
    let n = build_upstream(&up, &c, &mut buf).unwrap();
    assert_eq!(n, 68);
    assert_eq!(n, upstream_len(&up));
    let d = &buf[..n];
    check_ip_udp(d, &c, c.traffic_class);
    let (b, a) = parse_up(d);
    assert_eq!(b.opcode, 0x11);
    assert_eq!(b.dest_qp, SRC_QPN, "DestQP = the source's QP");
    assert_eq!(b.psn, 0xff_fffe);
    assert_eq!(b.pkey, 0xffff);
    assert!(!b.becn && !b.fecn && !b.ack_req);
    assert_eq!(a, Some(AethRepr { syndrome: Syndrome::Ack { credits: 9 }, msn: 0x12_3456 }));
    // raw bytes: BTH at 48, AETH at 60
    assert_eq!(&d[48..60], &[0x11, 0, 0xff, 0xff, 0, 0x00, 0x12, 0x34, 0, 0xff, 0xff, 0xfe]);
    assert_eq!(&d[60..64], &[0x09, 0x12, 0x34, 0x56]);
    // a corrupted byte fails the ICRC
    let mut bad = d.to_vec();
    bad[62] ^= 1;
    assert!(roce::icrc_check(&bad).is_err());
}

#[test]
fn build_upstream_naks() {
    let c = cfg(2);
    let mut buf = [0u8; 128];
    for (kind, syn, octet) in [
        (NakKind::PsnSequenceError, Syndrome::Nak(NakCode::PsnSequenceError), 0x60u8),
        (NakKind::Rnr { timer: 14 }, Syndrome::RnrNak { timer: 14 }, 0x2e),
        (NakKind::Fatal(NakCode::RemoteAccessError), Syndrome::Nak(NakCode::RemoteAccessError), 0x62),
    ] {
        let up = Upstream::Nak { psn: 77, msn: 5, kind };
        let n = build_upstream(&up, &c, &mut buf).unwrap();
        let d = &buf[..n];
        check_ip_udp(d, &c, c.traffic_class);
        let (b, a) = parse_up(d);
        assert_eq!((b.opcode, b.dest_qp, b.psn), (0x11, SRC_QPN, 77));
        assert_eq!(a, Some(AethRepr { syndrome: syn, msn: 5 }));
        assert_eq!(d[60], octet);
    }
}

#[test]
fn build_upstream_cnp() {
    let c = cfg(2);
    let up = Upstream::Cnp { branch: 1, ccount: 3 };
    let mut buf = [0u8; 128];
    let n = build_upstream(&up, &c, &mut buf).unwrap();
    assert_eq!(n, 80);
    assert_eq!(n, upstream_len(&up));
    let d = &buf[..n];
    check_ip_udp(d, &c, c.cnp_traffic_class);
    let (b, a) = parse_up(d);
    assert_eq!(a, None);
    assert_eq!(b.opcode, 0x81);
    assert!(b.becn);
    assert_eq!(b.dest_qp, SRC_QPN);
    let cnp = CnpRepr::parse(&Bth::new_checked(&d[48..]).unwrap()).unwrap();
    assert_eq!(cnp, CnpRepr { pkey: 0xffff, dest_qp: SRC_QPN, fecn: false });
    assert!(d[60..76].iter().all(|&x| x == 0));
    // too small a buffer is an error, not a panic
    assert!(build_upstream(&up, &c, &mut buf[..79]).is_err());
    assert!(build_upstream(&Upstream::Ack { psn: 1, msn: 1, credits: 1 }, &c, &mut buf[..60]).is_err());
}

/// A receiver's response as its RNIC would send it: SA = receiver,
/// DA = Proxy Address, DestQP = Designated QPN.
fn receiver_response(from: Ipv6Addr, psn: u32, syndrome: Option<Syndrome>, msn: u32) -> Vec<u8> {
    let c = GroupConfig {
        id: GroupId { source: proxy(), source_qpn: DQPN },
        proxy: from,
        ..cfg(1)
    };
    // build_upstream writes "from proxy to source on source QP": reuse it
    // with the roles swapped.
    let up = match syndrome {
        Some(Syndrome::Ack { credits }) => Upstream::Ack { psn, msn, credits },
        Some(Syndrome::RnrNak { timer }) => Upstream::Nak { psn, msn, kind: NakKind::Rnr { timer } },
        Some(Syndrome::Nak(NakCode::PsnSequenceError)) => {
            Upstream::Nak { psn, msn, kind: NakKind::PsnSequenceError }
        }
        Some(Syndrome::Nak(code)) => Upstream::Nak { psn, msn, kind: NakKind::Fatal(code) },
        None => Upstream::Cnp { branch: 0, ccount: 1 },
    };
    let mut buf = vec![0u8; 128];
    let n = build_upstream(&up, &c, &mut buf).unwrap();
    buf.truncate(n);
    buf
}

#[test]
fn parse_response_round_trip_into_table() {
    let mut t = GroupTable::with_capacity(2, 8);
    let g = t.insert(cfg(2), 0).unwrap();
    let a1 = receiver_response(rx(1), 40, Some(Syndrome::Ack { credits: 31 }), 3);
    let (k, r) = parse_response(&a1).unwrap();
    assert_eq!(k, ResponseKey { receiver: rx(1), proxy: proxy(), dest_qp: DQPN });
    assert_eq!(r, Response::Ack { psn: 40, msn: 3, credits: 31 });
    assert_eq!(t.on_response(&k, r, 0), Verdict::Absorbed { group: g });
    let n2 = receiver_response(rx(2), 30, Some(Syndrome::Nak(NakCode::PsnSequenceError)), 2);
    let (k, r) = parse_response(&n2).unwrap();
    assert_eq!(r, Response::Nak { psn: 30, msn: 2, kind: NakKind::PsnSequenceError });
    let v = t.on_response(&k, r, 0);
    let Verdict::Upstream { group, up } = v else { panic!("{v:?}") };
    assert_eq!(up, Upstream::Nak { psn: 30, msn: 2, kind: NakKind::PsnSequenceError });
    // and the upstream datagram for it
    let mut buf = [0u8; 128];
    let n = build_upstream(&up, t.get(group).unwrap().config(), &mut buf).unwrap();
    let (b, a) = parse_up(&buf[..n]);
    assert_eq!((b.dest_qp, b.psn), (SRC_QPN, 30));
    assert_eq!(a.unwrap().syndrome, Syndrome::Nak(NakCode::PsnSequenceError));

    let cnp = receiver_response(rx(2), 0, None, 0);
    assert_eq!(parse_response(&cnp).unwrap().1, Response::Cnp);

    // corrupted ICRC, truncated, wrong opcode
    let mut bad = a1.clone();
    bad[63] ^= 0x80;
    assert_eq!(parse_response(&bad), Err(Counter::BadIcrc));
    assert_eq!(parse_response(&a1[..30]), Err(Counter::Malformed));
    let mut send = a1.clone();
    send[48] = opcode::SEND_ONLY;
    assert_eq!(parse_response(&send), Err(Counter::UnsupportedOpcode));
}

// ---------------------------------------------------------------- property

#[derive(Debug, Clone)]
enum Ev {
    Resp { branch: usize, kind: u8, off: u32, dt: u64 },
    Data { off: u32 },
    Poll { dt: u64 },
    Unknown,
}

fn ev() -> impl Strategy<Value = Ev> {
    prop_oneof![
        6 => (0usize..4, 0u8..6, prop_oneof![0u32..64, any::<u32>()], 0u64..200_000)
            .prop_map(|(branch, kind, off, dt)| Ev::Resp { branch, kind, off, dt }),
        1 => prop_oneof![0u32..128, any::<u32>()].prop_map(|off| Ev::Data { off }),
        1 => (0u64..500_000).prop_map(|dt| Ev::Poll { dt }),
        1 => Just(Ev::Unknown),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Random response sequences never panic; the upstream ACK PSN only
    /// moves forward (mod 2^24), never beyond any branch's acknowledged PSN,
    /// and a NAK's ePSN never exceeds any branch's ePSN.
    #[test]
    fn upstream_ack_never_goes_back(
        start in prop_oneof![Just(0xff_ff00u32), Just(1u32), 0u32..=PSN_MASK],
        n in 1u16..5,
        evs in proptest::collection::vec(ev(), 1..200),
    ) {
        let c = GroupConfig { initial_psn: start, cnp_window_ns: 100_000, ..cfg(n) };
        let mut g = Group::new(c.clone(), 0).unwrap();
        let mut now = 0u64;
        let mut last_up: u32 = g.upstream_psn();
        let mut last_repeats = 0u64;
        let mut buf = [0u8; 128];
        for e in evs {
            let up = match e {
                Ev::Resp { branch, kind, off, dt } => {
                    now += dt;
                    let b = branch % usize::from(n);
                    // PSNs mostly near the current state, sometimes anywhere
                    let base = g.branches()[b].acked();
                    let psn = psn_add(base, off) ;
                    let psn = if off > 1 << 20 { off & PSN_MASK } else { psn };
                    let resp = match kind {
                        0 | 1 => Response::Ack { psn, msn: off & PSN_MASK, credits: (off & 31) as u8 },
                        2 => Response::Nak { psn, msn: 1, kind: NakKind::PsnSequenceError },
                        3 => Response::Nak { psn, msn: 1, kind: NakKind::Rnr { timer: 3 } },
                        4 => Response::Nak { psn, msn: 1, kind: NakKind::Fatal(NakCode::InvalidRequest) },
                        _ => Response::Cnp,
                    };
                    g.on_branch(b, resp, now).ok().flatten()
                }
                Ev::Data { off } => {
                    let p = if off > 1 << 20 { off } else { psn_add(g.upstream_psn(), off) };
                    g.on_data(p, 0);
                    None
                }
                Ev::Poll { dt } => {
                    now += dt;
                    g.poll(now)
                }
                Ev::Unknown => {
                    prop_assert_eq!(g.on_response(&rx(999), Response::Cnp, now), Err(Counter::UnknownReceiver));
                    None
                }
            };
            if let Some(u) = up {
                match u {
                    Upstream::Ack { psn, .. } => {
                        // Forward, or the same PSN repeated (a branch
                        // re-acknowledged it: a retransmission was seen).
                        // Or the same PSN with new credits.
                        let repeats = g.counters().get(Counter::AckRepeated) + g.counters().get(Counter::AckCreditUpdate);
                        prop_assert!(psn_lt(last_up, psn) || (psn == last_up && repeats > last_repeats), "ACK went back: {:#x} -> {:#x}", last_up, psn);
                        last_repeats = repeats;
                        for b in g.branches() {
                            prop_assert!(psn_le(psn, b.acked()));
                        }
                        last_up = psn;
                    }
                    Upstream::Nak { psn, kind: NakKind::PsnSequenceError | NakKind::Rnr { .. }, .. } => {
                        let acked = psn_sub(psn, 1);
                        prop_assert!(psn_le(last_up, acked), "NAK went back");
                        for b in g.branches() {
                            prop_assert!(psn_le(psn, b.epsn()));
                        }
                        last_up = acked;
                    }
                    Upstream::Nak { psn, .. } => {
                        // Fatal: never acknowledges what a branch lacks.
                        for b in g.branches() {
                            prop_assert!(psn_le(psn, b.epsn()), "fatal NAK {:#x} beyond a branch's ePSN {:#x}", psn, b.epsn());
                        }
                    }
                    Upstream::Cnp { branch, ccount } => {
                        prop_assert!(branch < usize::from(n));
                        prop_assert!(ccount > 0);
                    }
                }
                let m = build_upstream(&u, &c, &mut buf).unwrap();
                prop_assert!(roce::icrc_check(&buf[..m]).is_ok());
            }
            prop_assert_eq!(g.upstream_psn(), last_up);
            // every branch stays within the half window above the upstream PSN
            for b in g.branches() {
                prop_assert!(psn_le(g.upstream_psn(), b.acked()));
            }
        }
    }

    /// A learning group's receiver set changing at random between ACKs
    /// (`GroupTable::set_receivers`): the response lookup always matches
    /// exactly the current receivers (a receiver that left is unknown, one
    /// that joined is found at its branch), invalid sets change nothing,
    /// and the upstream ACK never goes back nor beyond a branch.
    #[test]
    fn learned_receiver_sets_keep_the_lookup_and_the_upstream_psn_consistent(
        sets in proptest::collection::vec(proptest::collection::vec(1u16..8, 0..6), 1..30),
        acks in proptest::collection::vec((1u16..8, 0u32..4), 0..120),
    ) {
        let mut t = GroupTable::with_capacity(1, 8);
        let c = GroupConfig { tlv_receivers: TlvReceivers::Learn, ..cfg(0) };
        let g = t.insert(c, 0).unwrap();
        let key = |i: u16| ResponseKey { receiver: rx(i), proxy: proxy(), dest_qp: DQPN };
        let mut current: Vec<u16> = vec![];
        let mut last_up = t.get(g).unwrap().upstream_psn();
        let mut acks = acks.into_iter();
        for set in sets {
            let v: Vec<Receiver> = set.iter().map(|&i| Receiver { addr: rx(i), qpn: 0x100 + u32::from(i) }).collect();
            let dup = set.iter().enumerate().any(|(k, a)| set[..k].contains(a));
            let r = t.learn_receivers(g, v.len(), |k| v.get(k).copied());
            prop_assert_eq!(r.is_ok(), !dup, "{:?}", set);
            if r.is_ok() {
                current = set.clone();
            }
            let grp = t.get(g).unwrap();
            prop_assert_eq!(grp.branches().len(), current.len());
            for i in 1u16..8 {
                match (t.lookup(&key(i)), current.iter().position(|&x| x == i)) {
                    (Lookup::Branch { group, branch }, Some(b)) => {
                        prop_assert_eq!((group, branch), (g, b));
                        prop_assert_eq!(grp.branches()[b].receiver.addr, rx(i));
                    }
                    (Lookup::UnknownReceiver { group }, None) => prop_assert_eq!(group, g),
                    (l, want) => prop_assert!(false, "receiver {}: lookup {:?}, branch {:?}", i, l, want),
                }
            }
            for (i, off) in acks.by_ref().take(4) {
                let psn = psn_add(last_up, off);
                let _ = t.on_data(&proxy(), DQPN, psn, &source(), 0);
                if let Verdict::Upstream { up: Upstream::Ack { psn, .. }, .. } = t.on_response(&key(i), ack(psn), 0) {
                    prop_assert!(psn_le(last_up, psn), "ACK went back");
                    for b in t.get(g).unwrap().branches() {
                        prop_assert!(psn_le(psn, b.acked()));
                    }
                    last_up = psn;
                }
            }
            prop_assert!(psn_le(last_up, t.get(g).unwrap().upstream_psn()));
        }
        // A group that does not learn refuses learned receivers.
        let mut t2 = GroupTable::with_capacity(1, 8);
        let g2 = t2.insert(cfg(2), 0).unwrap();
        prop_assert_eq!(t2.learn_receivers(g2, 0, |_| None), Err(SetupError::NotLearning));
    }

    /// psn_min / psn_lt agree with plain integer order after shifting both
    /// operands by the same amount (including across the wrap).
    #[test]
    fn psn_order_is_shift_invariant(a in 0u32..PSN_HALF - 1, b in 0u32..PSN_HALF - 1, shift in 0u32..=PSN_MASK) {
        let (sa, sb) = (psn_add(a, shift), psn_add(b, shift));
        prop_assert_eq!(psn_lt(sa, sb), a < b);
        prop_assert_eq!(psn_le(sa, sb), a <= b);
        prop_assert_eq!(psn_min(sa, sb), psn_add(a.min(b), shift));
        prop_assert_eq!(psn_max(sa, sb), psn_add(a.max(b), shift));
        prop_assert_eq!(psn_diff(sb, sa), psn_sub(b, a));
    }
}
