//! The MLDv2 router / querier (dataplane/src/mld.rs) against RFC 3810 (=
//! RFC 9777, which keeps its section numbers) and RFC 2710. Each test
//! failed on the code before its fix; the comment quotes the RFC and says
//! what the code did ("Was"). Virtual clock, no DPDK.

use std::net::Ipv6Addr;

use dataplane::counters::WorkerCounters;
use dataplane::mld::{Mld, MldConfig, Outgoing};
use dataplane::wire::mld::{self, report_v2_message, Message, QueryRepr, RecordRepr, RecordType};

const S: u64 = 1_000_000_000;
/// The interface under test; this router's link-local address on it is
/// fe80::2, the other router (the querier) is fe80::1.
const DC2: u16 = 2;

fn a(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

fn me() -> Ipv6Addr {
    a("fe80::2")
}

fn other() -> Ipv6Addr {
    a("fe80::1")
}

fn host() -> Ipv6Addr {
    a("fe80::10")
}

/// Defaults: robustness 2, QI 125 s, QRI 10 s, LLQI 1 s (MALI 260 s,
/// OQPI 255 s).
fn router() -> (Mld, WorkerCounters) {
    (Mld::new(MldConfig::default(), &[(DC2, me())], 0), WorkerCounters::default())
}

fn general_query(qrv: u8, qqi_s: u32) -> Vec<u8> {
    QueryRepr { group: Ipv6Addr::UNSPECIFIED, max_resp_ms: 10_000, suppress: false, qrv, qqi_s, sources: vec![] }.message()
}

/// A General Query with a raw QQIC octet (QQIC 0 = "no QQI given").
fn general_query_raw_qqic(qrv: u8, qqic: u8) -> Vec<u8> {
    let mut m = general_query(qrv, 125);
    m[25] = qqic;
    m
}

fn join(m: &mut Mld, c: &WorkerCounters, group: &str, now: u64) {
    let msg = report_v2_message(&[RecordRepr { kind: RecordType::IsExclude, group: a(group), sources: vec![] }]);
    m.on_message(DC2, host(), &msg, now, c).unwrap();
}

fn listened(m: &Mld, group: &str) -> bool {
    m.listeners().iter().any(|l| l.iface == DC2 && l.group == a(group))
}

/// The General Queries in `out` as (QRV, QQI seconds).
fn general_queries(out: &[Outgoing]) -> Vec<(u8, u32)> {
    out.iter()
        .filter_map(|o| match mld::parse(&o.packet[48..]).unwrap() {
            Message::Query { group, v2: Some(q), .. } if group.is_unspecified() => Some((q.qrv, q.qqi_s)),
            _ => None,
        })
        .collect()
}

#[test]
fn qrv_zero_from_the_querier_reverts_to_the_default_robustness() {
    // RFC 3810 s.5.1.8 (QRV): "If the Querier's [Robustness Variable]
    // exceeds 7 (the maximum value of the QRV field), the QRV field is set
    // to zero. Routers adopt the QRV value from the most recently received
    // Query as their own [Robustness Variable] value, unless that most
    // recently received QRV was zero, in which case they use the default
    // [Robustness Variable] value specified in Section 9.1, or a
    // statically configured value."
    //
    // Was: the code (on_query, `if q.qrv != 0 { f.rv = q.qrv }`) keeps the QRV
    // adopted from an earlier query instead: after QRV 5 then QRV 0 it
    // still runs with robustness 5 (MALI 635 s, OQPI 630 s) instead of the
    // configured/default 2 (MALI 260 s, OQPI 255 s).
    let (mut m, c) = router();
    m.tick(0, &mut Vec::new(), &c);
    m.on_message(DC2, other(), &general_query(5, 125), S, &c).unwrap();
    // The querier's robustness is now above 7 (or it simply gives none).
    m.on_message(DC2, other(), &general_query(0, 125), 2 * S, &c).unwrap();
    assert_eq!(m.other_querier(DC2), Some(other()));
    join(&mut m, &c, "ff0e::100", 3 * S);
    // Keep the querier present (its queries every 125 s, QRV still 0).
    m.on_message(DC2, other(), &general_query(0, 125), 127 * S, &c).unwrap();
    m.on_message(DC2, other(), &general_query(0, 125), 252 * S, &c).unwrap();
    m.tick(262 * S, &mut Vec::new(), &c);
    assert!(listened(&m, "ff0e::100"), "MALI = 2 x 125 + 10 = 260 s after 3 s");
    m.tick(263 * S, &mut Vec::new(), &c);
    assert!(!listened(&m, "ff0e::100"), "robustness must be the default 2 after QRV 0: MALI 260 s, so gone at 263 s; the code used the QRV 5 adopted before (MALI 635 s)");
    // And Other Querier Present Interval (s.9.5) = 2 x 125 + 5 = 255 s
    // after the last query (252 s).
    m.tick(506 * S, &mut Vec::new(), &c);
    assert_eq!(m.other_querier(DC2), Some(other()));
    m.tick(507 * S, &mut Vec::new(), &c);
    assert_eq!(m.other_querier(DC2), None, "OQPI with robustness 2 is 255 s: the querier is gone at 507 s");
}

#[test]
fn qqic_zero_from_the_querier_reverts_to_the_default_query_interval() {
    // RFC 3810 s.5.1.9 (QQIC): "Multicast routers that are not the
    // current Querier adopt the QQI value from the most recently received
    // Query as their own [Query Interval] value, unless that most recently
    // received QQI was zero, in which case the receiving routers use the
    // default [Query Interval] value specified in Section 9.2."
    //
    // Was: the code (on_query, `if q.qqi_s != 0 { f.qi_ns = ... }`) keeps the
    // QQI adopted from an earlier query: after QQI 30 s then QQI 0 it runs
    // with QI 30 s (OQPI 2 x 30 + 5 = 65 s, MALI 70 s) instead of the
    // default 125 s (OQPI 255 s, MALI 260 s).
    let (mut m, c) = router();
    m.tick(0, &mut Vec::new(), &c);
    m.on_message(DC2, other(), &general_query(2, 30), S, &c).unwrap();
    m.on_message(DC2, other(), &general_query_raw_qqic(2, 0), 2 * S, &c).unwrap();
    join(&mut m, &c, "ff0e::100", 3 * S);
    m.tick(100 * S, &mut Vec::new(), &c);
    assert_eq!(m.other_querier(DC2), Some(other()), "OQPI with QI 125 s is 255 s after 2 s; the code used QI 30 s (65 s)");
    assert!(listened(&m, "ff0e::100"), "MALI with QI 125 s is 260 s after 3 s; the code used QI 30 s (70 s)");
    m.tick(257 * S, &mut Vec::new(), &c);
    assert_eq!(m.other_querier(DC2), None);
}

#[test]
fn first_general_query_after_taking_over_advertises_the_variables_it_uses() {
    // RFC 3810 s.5.1.9: "The Querier's Query Interval Code field specifies
    // the [Query Interval] used by the Querier"; s.5.1.8: "If non-zero, the
    // QRV field contains the [Robustness Variable] value used by the
    // Querier". Other routers adopt them (MALI, OQPI), so they must be what
    // this querier actually uses.
    //
    // Was: the code (tick) reads QRV / QQI / LLQT before the "other querier
    // went quiet" branch resets rv / qi_ns to the configured values, so the
    // first General Query after a takeover advertises the adopted QRV 3 /
    // QQI 60 s while the router then runs with robustness 2 / QI 125 s
    // (next General Query 125 s later, carrying QRV 2 / QQIC 125).
    let (mut m, c) = router();
    m.tick(0, &mut Vec::new(), &c);
    m.tick(125 * S / 4, &mut Vec::new(), &c); // startup done
    m.on_message(DC2, other(), &general_query(3, 60), 40 * S, &c).unwrap();
    // OQPI = 3 x 60 + 5 = 185 s: the querier is gone at 225 s.
    let mut sent: Vec<(u64, (u8, u32))> = Vec::new();
    for t in 220..=500u64 {
        let mut out = Vec::new();
        m.tick(t * S, &mut out, &c);
        sent.extend(general_queries(&out).into_iter().map(|q| (t, q)));
    }
    assert!(sent.len() >= 2, "{sent:?}");
    let ((t0, (qrv0, qqi0)), (t1, (qrv1, qqi1))) = (sent[0], sent[1]);
    assert_eq!(t0, 225, "{sent:?}");
    assert_eq!((qrv0, qqi0), (qrv1, qqi1), "the takeover query advertises other variables than the ones the router then uses: {sent:?}");
    assert_eq!(u64::from(qqi0), t1 - t0, "advertised QQI {qqi0} s but the next General Query went {} s later: {sent:?}", t1 - t0);
}

#[test]
fn mldv1_non_querier_lowers_its_timer_to_llqc_times_the_queriers_max_response_delay() {
    // RFC 2710 s.4 (MLDv1 routers, which an interface in MLDv1 mode acts
    // as, RFC 3810 s.8.3.1): "When a router in Non-Querier state receives
    // a Multicast-Address-Specific Query, if its timer value for the
    // identified multicast address is greater than [Last Listener Query
    // Count] times the Maximum Response Delay specified in the message, it
    // sets the address's timer to that latter value."
    //
    // Was: the code (on_query) ignores the query's Maximum Response Delay and
    // lowers the timer to its own LLQT (2 x its LLQI 1 s = 2 s): with a
    // querier whose LLQI is 3 s the listener is dropped at +2 s, while the
    // hosts may still answer until +3 s and the querier keeps it until
    // +6 s.
    let c = WorkerCounters::default();
    let mut m = Mld::new(MldConfig::default(), &[(DC2, me())], 0).with_v1(&[DC2]);
    m.tick(0, &mut Vec::new(), &c);
    let gq = mld::v1_query_message(Ipv6Addr::UNSPECIFIED, 10_000);
    m.on_message(DC2, other(), &gq, S, &c).unwrap();
    assert_eq!(m.other_querier(DC2), Some(other()));
    m.on_message(DC2, host(), &mld::v1_message(mld::REPORT_V1, a("ff0e::100")), 2 * S, &c).unwrap();
    assert!(listened(&m, "ff0e::100"));
    // The querier's Multicast Address Specific Query, MRD 3000 ms.
    let masq = mld::v1_query_message(a("ff0e::100"), 3_000);
    m.on_message(DC2, other(), &masq, 10 * S, &c).unwrap();
    m.tick(15 * S, &mut Vec::new(), &c);
    assert!(listened(&m, "ff0e::100"), "timer = LLQC (2) x MRD (3 s) = 6 s after 10 s; the code used its own LLQT (2 s)");
    m.tick(16 * S, &mut Vec::new(), &c);
    assert!(!listened(&m, "ff0e::100"));
}

#[test]
fn mldv1_done_for_an_ssm_address_is_ignored() {
    // RFC 9777 s.7.4 (RFC 4604 s.2.2.1 for RFC 3810): "SSM-aware routers
    // SHOULD ignore MLDv1 Report and DONE messages that contain multicast
    // addresses in the SSM address range, SHOULD NOT use such Reports to
    // establish IP forwarding state".
    //
    // Was: the code ignores the MLDv1 Report (IS_EX({}) is an EXCLUDE record)
    // but not the Done: it becomes TO_IN({}) on the INCLUDE(A) state the
    // MLDv2 listeners made, so the querier sends Q(MA, A) and lowers A's
    // timers to LLQT; the sources are pruned 2 s later unless the MLDv2
    // hosts answer in time.
    let (mut m, c) = router();
    m.tick(0, &mut Vec::new(), &c);
    let allow = report_v2_message(&[RecordRepr { kind: RecordType::Allow, group: a("ff3e::1"), sources: vec![a("2001:db8::1")] }]);
    m.on_message(DC2, host(), &allow, S, &c).unwrap();
    assert!(listened(&m, "ff3e::1"));
    m.on_message(DC2, a("fe80::20"), &mld::v1_message(mld::DONE_V1, a("ff3e::1")), 2 * S, &c).unwrap();
    let mut out = Vec::new();
    m.tick(2 * S, &mut out, &c);
    assert!(out.is_empty(), "an MLDv1 Done for an SSM address triggers queries: {out:?}");
    m.tick(5 * S, &mut Vec::new(), &c);
    assert!(listened(&m, "ff3e::1"), "the MLDv1 Done for an SSM address pruned the MLDv2 listener's source");
}

/// RFC 3810 s.5.2.13: a Report is taken only from a link-local source
/// (and RFC 3590: not from ::); one with a global source address may come
/// from beyond the link. The router's receive path checks this before it
/// hands the message over; the querier itself refuses it too, so no other
/// caller can install a listener from it. Was: `on_message` refused only
/// ::, so a Report from 2001:db8::10 made a listener.
#[test]
fn reports_from_beyond_the_link_make_no_listener() {
    let (mut m, c) = router();
    let msg = report_v2_message(&[RecordRepr { kind: RecordType::IsExclude, group: a("ff0e::99"), sources: vec![] }]);
    for src in ["2001:db8::10", "::"] {
        assert!(m.on_message(DC2, a(src), &msg, S, &c).is_err(), "a Report from {src}");
        assert!(!listened(&m, "ff0e::99"), "a Report from {src} made a listener");
    }
    m.on_message(DC2, host(), &msg, S, &c).unwrap();
    assert!(listened(&m, "ff0e::99"));
}
