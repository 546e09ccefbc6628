//! `dataplane::rttprobe` (RTT_est by ICMP Echo probes,
//! draft-tian-ccwg-long-haul-cnp s.5.3.1 / s.5.3.2), from a review: each
//! "Rule" test failed on the code before its fix ("Was"); the "Checks"
//! pin behaviour the review checked and found right.

use dataplane::congestion::PortParams;
use dataplane::rttprobe::{ProbeConfig, Reply, RttProbe, MIN_RTT_NS, PROBE_DATA};
use std::net::IpAddr;

const MS: u64 = 1_000_000;

fn cfg(window: usize) -> ProbeConfig {
    ProbeConfig {
        target: "2001:db8::2".parse().unwrap(),
        source: "2001:db8::1".parse().unwrap(),
        interval_ns: 100 * MS,
        timeout_ns: 500 * MS,
        window,
        degraded_ns: 0,
    }
}

fn target() -> IpAddr {
    "2001:db8::2".parse().unwrap()
}

/// (sequence number, data) of the Echo Request `req` (an IPv6 packet from
/// `poll`), as the target echoes them back.
fn answer(req: &[u8]) -> (u16, Vec<u8>) {
    assert_eq!(req[0] >> 4, 6);
    (u16::from_be_bytes([req[46], req[47]]), req[48..].to_vec())
}

/// Rule: a reply later than the timeout is late and its probe lost, also
/// when it reaches the control thread before its next `poll` gives the
/// probe up. Was: taken as a round trip.
#[test]
fn a_reply_later_than_the_timeout_is_late_not_a_sample() {
    let mut p = RttProbe::new(cfg(4), 1, 0x4242, 0);
    let req = p.poll(0, true).expect("a probe is due");
    let (seq, data) = answer(&req);
    // Arrives 700 ms after it was sent; timeout 500 ms. The control thread
    // handles the worker's event before its next poll (router.rs: events
    // are drained before poll_rtt_probes in each iteration).
    let r = p.on_reply(target(), seq, &data, 700 * MS);
    assert_eq!(r, Reply::Late, "a reply 700 ms after a probe with a 500 ms timeout; estimate now {:?}", p.estimate());
    assert_eq!((p.stats.late, p.stats.lost, p.estimate(), p.window_fill()), (1, 1, None, (1, 1)), "one lost probe in the window");
    // The next poll does not give it up a second time.
    p.poll(701 * MS, true);
    assert_eq!(p.stats.lost, 1);
}

/// Rule: a reply dated at or before its probe's send time (the worker's
/// and the control thread's clocks out of step) is no sample:
/// `clock_skew`, the probe lost. Was: clamped up to MIN_RTT_NS (1 us) and
/// taken; as the window's minimum it became RTT_est for `window` probes and
/// drove K_max = max(K_base, alpha * R * RTT_est / 8) (s.5.3.2) to K_base.
#[test]
fn a_reply_dated_before_its_probe_is_no_sample() {
    let mut p = RttProbe::new(cfg(8), 1, 0x4242, 0);
    let mut now = 1_000 * MS;
    // Three honest 20 ms round trips.
    for _ in 0..3 {
        let (seq, data) = answer(&p.poll(now, true).unwrap());
        assert_eq!(p.on_reply(target(), seq, &data, now + 20 * MS), Reply::Sample(20 * MS));
        now += 100 * MS;
    }
    assert_eq!(p.estimate(), Some(20 * MS));
    // The next reply carries an arrival time 1 us before the send time.
    let (seq, data) = answer(&p.poll(now, true).unwrap());
    let r = p.on_reply(target(), seq, &data, now - 1_000);
    let est = p.estimate();
    // What RTT_est (and K_max) would follow.
    let base = PortParams { rate_bps: 100_000_000_000, rtt_est_ns: 20 * MS, ..PortParams::default() };
    let k_max_now = est.map(|e| PortParams { rtt_est_ns: e, ..base }.k_max());
    assert!(
        r == Reply::ClockSkew && est == Some(20 * MS) && p.stats.clock_skew == 1 && p.stats.lost == 1,
        "a round trip of -1 us was accepted as {r:?}: estimate {est:?} (MIN_RTT_NS = {MIN_RTT_NS}), proposal from 20 ms {:?}, K_max {} -> {:?} bytes",
        p.proposal(20 * MS),
        base.k_max(),
        k_max_now
    );
}

/// Checks: 16-bit sequence wrap. A genuine reply to a probe of
/// the previous cycle that carries the same sequence number as a probe now
/// outstanding is not matched to it (the tag and the outstanding entry both
/// include the send time) and is counted late, not taken as a sample.
#[test]
fn sequence_wrap_does_not_match_an_old_reply_to_a_new_probe() {
    let mut p = RttProbe::new(ProbeConfig { interval_ns: 10 * MS, ..cfg(4) }, 1, 7, 0);
    let mut now = 0;
    let (seq0, data0) = answer(&p.poll(now, true).unwrap());
    assert_eq!(seq0, 0);
    for _ in 1..65536u32 {
        now += 10 * MS;
        p.poll(now, true).unwrap();
    }
    now += 10 * MS;
    let (seq, data) = answer(&p.poll(now, true).unwrap());
    assert_eq!(seq, 0, "wrapped");
    assert_ne!(data, data0);
    assert_eq!(p.on_reply(target(), seq0, &data0, now + MS), Reply::Late, "the first cycle's reply");
    assert_eq!(p.on_reply(target(), seq, &data, now + 2 * MS), Reply::Sample(2 * MS));
    assert_eq!(p.on_reply(target(), seq, &data, now + 3 * MS), Reply::Late, "a duplicate");
}

/// Checks: hostile replies of any length never panic and never
/// become samples.
#[test]
fn short_or_garbage_replies_are_forged_not_panics() {
    let mut p = RttProbe::new(cfg(4), 1, 7, 0);
    p.poll(0, true).unwrap();
    for len in 0..=PROBE_DATA + 4 {
        let d = vec![0xffu8; len];
        assert!(!matches!(p.on_reply(target(), 0, &d, MS), Reply::Sample(_)));
    }
    assert_eq!(p.estimate(), None);
}
