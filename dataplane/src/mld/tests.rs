//! The MLD router rules on a virtual clock (RFC 9777; section numbers in
//! the test names' comments).

use super::*;
use crate::counters::Snapshot;
use crate::wire::mld::{report_v2_message, v1_message, RecordRepr, DONE_V1, REPORT_V1};

const S: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;
const DC: u16 = 1;
const DC2: u16 = 2;
const WAN: u16 = 0;

fn a(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

fn host() -> Ipv6Addr {
    a("fe80::10")
}

/// MLD on DC (fe80::1) and DC2 (fe80::2), defaults (robustness 2, QI 125 s,
/// QRI 10 s, LLQI 1 s: MALI 260 s, LLQT 2 s).
fn mld() -> (Mld, WorkerCounters) {
    (Mld::new(MldConfig::default(), &[(DC, a("fe80::1")), (DC2, a("fe80::2"))], 0), WorkerCounters::default())
}

fn local(c: &WorkerCounters, l: Local) -> u64 {
    Snapshot::sum([c]).local_count(l)
}

fn rec(kind: RecordType, group: &str, sources: &[&str]) -> RecordRepr {
    RecordRepr { kind, group: a(group), sources: sources.iter().map(|s| a(s)).collect() }
}

fn report(m: &mut Mld, c: &WorkerCounters, iface: u16, now: u64, recs: &[RecordRepr]) {
    m.on_message(iface, host(), &report_v2_message(recs), now, c).unwrap();
}

/// The queries in `out` as (iface, destination, group, S flag, sources,
/// max resp ms), checking every one is a well-formed MLD packet.
fn queries(out: &[Outgoing]) -> Vec<(u16, Ipv6Addr, Ipv6Addr, bool, Vec<Ipv6Addr>, u32)> {
    out.iter()
        .map(|o| {
            let p = &o.packet;
            assert_eq!(p[7], 1, "Hop Limit 1");
            assert!(crate::wire::mld::has_router_alert(&p[40..]), "Router Alert");
            let src = Ipv6Addr::from(<[u8; 16]>::try_from(&p[8..24]).unwrap());
            let dst = Ipv6Addr::from(<[u8; 16]>::try_from(&p[24..40]).unwrap());
            assert!(crate::tables::is_link_local(&src), "from a link-local address");
            let m = &p[48..];
            let sum = crate::wire::checksum::combine(crate::wire::checksum::pseudo_v6(&src.octets(), &dst.octets(), 58, m.len() as u32), crate::wire::checksum::sum(m));
            assert_eq!(crate::wire::checksum::fold(sum), 0xffff, "checksum");
            match mld::parse(m).unwrap() {
                Message::Query { max_resp_ms, group, v2: Some(v2) } => (o.iface, dst, group, v2.suppress, v2.sources.iter().collect(), max_resp_ms),
                other => panic!("not an MLDv2 query: {other:?}"),
            }
        })
        .collect()
}

fn tick(m: &mut Mld, c: &WorkerCounters, now: u64) -> Vec<(u16, Ipv6Addr, Ipv6Addr, bool, Vec<Ipv6Addr>, u32)> {
    let mut out = Vec::new();
    m.tick(now, &mut out, c);
    queries(&out)
}

/// The listeners of `group` (one interface).
fn of(m: &Mld, group: &str) -> Listeners {
    m.listeners().into_iter().find(|l| l.group == a(group)).expect("listeners")
}

fn routes(m: &Mld, statics: &[Mroute]) -> Vec<Mroute> {
    merge_routes(statics, &m.listeners())
}

fn route(group: &str, source: Option<&str>, iif: Option<u16>, oifs: &[u16]) -> Mroute {
    Mroute::new(a(group), source.map(a), iif, oifs.to_vec())
}

#[test]
fn startup_and_periodic_general_queries() {
    // s.7.6: Startup Query Count (= robustness) General Queries a quarter
    // of the Query Interval apart, then one per Query Interval; to
    // all-nodes, Maximum Response Delay = Query Response Interval, QRV and
    // QQIC carry the router's variables.
    let (mut m, c) = mld();
    let q = tick(&mut m, &c, 0);
    assert_eq!(q.len(), 2, "one per interface");
    assert_eq!(q[0], (DC, mld::ALL_NODES, Ipv6Addr::UNSPECIFIED, false, vec![], 10_000));
    assert_eq!(q[1].0, DC2);
    let p = &{
        let mut out = Vec::new();
        let mut m2 = Mld::new(MldConfig::default(), &[(DC, a("fe80::1"))], 0);
        m2.tick(0, &mut out, &c);
        out
    }[0]
    .packet;
    assert_eq!(&p[8..24], &a("fe80::1").octets());
    assert_eq!((p[48 + 24] & 7, p[48 + 25]), (2, 125), "QRV 2, QQIC 125");
    assert!(tick(&mut m, &c, 31 * S).is_empty());
    assert_eq!(tick(&mut m, &c, 125 * S / 4).len(), 2, "second startup query at QI/4");
    assert!(tick(&mut m, &c, 125 * S / 4 + 124 * S).is_empty());
    assert_eq!(tick(&mut m, &c, 125 * S / 4 + 125 * S).len(), 2, "then every QI");
    assert_eq!(local(&c, Local::MldQuerySent), 7);
}

#[test]
fn asm_join_forwards_from_any_source_and_expires_after_mali() {
    // s.7.4.2: INCLUDE({}) + TO_EX({}) -> EXCLUDE({}, {}), filter timer =
    // MALI (2 x 125 + 10 = 260 s); s.7.3: without a report it falls back
    // to INCLUDE({}) and the address is forgotten.
    let (mut m, c) = mld();
    tick(&mut m, &c, 0);
    report(&mut m, &c, DC, S, &[rec(RecordType::ToExclude, "ff0e::100", &[])]);
    assert!(m.take_changed());
    assert_eq!(m.listeners(), vec![Listeners { iface: DC, group: a("ff0e::100"), exclude: true, sources: vec![] }]);
    assert_eq!(routes(&m, &[]), vec![route("ff0e::100", None, None, &[DC])]);
    // A current-state report (the answer to a General Query) refreshes.
    report(&mut m, &c, DC, 200 * S, &[rec(RecordType::IsExclude, "ff0e::100", &[])]);
    assert!(!m.take_changed(), "a refresh changes no forwarding");
    tick(&mut m, &c, 261 * S);
    assert_eq!(m.listeners().len(), 1, "refreshed at 200 s: lives until 460 s");
    tick(&mut m, &c, 459 * S);
    assert_eq!(m.listeners().len(), 1);
    tick(&mut m, &c, 460 * S);
    assert!(m.listeners().is_empty());
    assert!(m.take_changed());
    assert!(routes(&m, &[]).is_empty());
    assert_eq!(local(&c, Local::MldReportReceived), 2);
}

#[test]
fn last_listener_leaving_is_queried_then_forgotten_after_llqt() {
    // s.7.4.2: EXCLUDE + TO_IN({}) -> Q(MA): the filter timer is lowered
    // to LLQT (2 x 1 s) and Last Listener Query Count (2) Multicast Address
    // Specific Queries go 1 s apart, to the address, Maximum Response
    // Delay = LLQI.
    let (mut m, c) = mld();
    tick(&mut m, &c, 0);
    report(&mut m, &c, DC, S, &[rec(RecordType::ToExclude, "ff0e::100", &[])]);
    m.take_changed();
    report(&mut m, &c, DC, 10 * S, &[rec(RecordType::ToInclude, "ff0e::100", &[])]);
    let q = tick(&mut m, &c, 10 * S);
    assert_eq!(q, vec![(DC, a("ff0e::100"), a("ff0e::100"), false, vec![], 1000)]);
    assert!(tick(&mut m, &c, 10 * S + 999 * MS).is_empty());
    assert_eq!(tick(&mut m, &c, 11 * S), vec![(DC, a("ff0e::100"), a("ff0e::100"), false, vec![], 1000)]);
    assert!(tick(&mut m, &c, 11 * S + 999 * MS).is_empty(), "two transmissions only");
    assert_eq!(m.listeners().len(), 1, "still listened to until LLQT");
    tick(&mut m, &c, 12 * S);
    assert!(m.listeners().is_empty(), "nobody answered: gone at 10 s + LLQT");
    assert!(m.take_changed());
}

#[test]
fn another_listener_answering_keeps_the_address_and_sets_the_s_flag() {
    // s.7.6.3.1: a retransmitted Multicast Address Specific Query has the S
    // flag set when the filter timer has been raised above LLQT meanwhile.
    let (mut m, c) = mld();
    tick(&mut m, &c, 0);
    report(&mut m, &c, DC, S, &[rec(RecordType::ToExclude, "ff0e::100", &[])]);
    report(&mut m, &c, DC, 10 * S, &[rec(RecordType::ToInclude, "ff0e::100", &[])]);
    assert!(!tick(&mut m, &c, 10 * S)[0].3);
    // The other listener answers.
    report(&mut m, &c, DC, 10 * S + 300 * MS, &[rec(RecordType::IsExclude, "ff0e::100", &[])]);
    let q = tick(&mut m, &c, 11 * S);
    assert_eq!(q.len(), 1);
    assert!(q[0].3, "S flag: the timer is above LLQT again");
    tick(&mut m, &c, 20 * S);
    assert_eq!(m.listeners().len(), 1, "kept");
    assert_eq!(routes(&m, &[]), vec![route("ff0e::100", None, None, &[DC])]);
}

#[test]
fn include_sources_make_source_routes_and_block_queries_them() {
    // s.7.4.1 / s.7.4.2 in INCLUDE mode: ALLOW(B) -> A+B, (B) = MALI;
    // BLOCK(B) -> Q(MA, A*B) with those sources' timers lowered to LLQT.
    let (mut m, c) = mld();
    tick(&mut m, &c, 0);
    report(&mut m, &c, DC, S, &[rec(RecordType::Allow, "ff3e::1", &["2001:db8::1", "2001:db8::2"])]);
    assert_eq!(m.listeners(), vec![Listeners { iface: DC, group: a("ff3e::1"), exclude: false, sources: vec![a("2001:db8::1"), a("2001:db8::2")] }]);
    assert_eq!(routes(&m, &[]), vec![route("ff3e::1", Some("2001:db8::1"), None, &[DC]), route("ff3e::1", Some("2001:db8::2"), None, &[DC])]);
    report(&mut m, &c, DC, 5 * S, &[rec(RecordType::Block, "ff3e::1", &["2001:db8::1", "2001:db8::9"])]);
    let q = tick(&mut m, &c, 5 * S);
    assert_eq!(q, vec![(DC, a("ff3e::1"), a("ff3e::1"), false, vec![a("2001:db8::1")], 1000)], "only the source the router has (A*B)");
    assert_eq!(tick(&mut m, &c, 6 * S).len(), 1);
    tick(&mut m, &c, 7 * S);
    assert_eq!(routes(&m, &[]), vec![route("ff3e::1", Some("2001:db8::2"), None, &[DC])], "2001:db8::1 expired at LLQT");
    // The last source goes with its MALI: the address is forgotten.
    tick(&mut m, &c, 261 * S);
    assert!(m.listeners().is_empty());
    assert!(routes(&m, &[]).is_empty());
}

#[test]
fn exclude_with_blocked_sources_and_static_routes_merge() {
    // DC listens to every source but S1 (IS_EX({S1}): EXCLUDE({}, {S1}));
    // the static (*,G) sends to WAN. S1 still goes to WAN, not to DC; every
    // other source goes to both; DC2 adds S2 only (INCLUDE).
    let (mut m, c) = mld();
    tick(&mut m, &c, 0);
    report(&mut m, &c, DC, S, &[rec(RecordType::IsExclude, "ff0e::7", &["2001:db8::1"])]);
    report(&mut m, &c, DC2, S, &[rec(RecordType::IsInclude, "ff0e::7", &["2001:db8::2"])]);
    let st = [route("ff0e::7", None, Some(3), &[WAN])];
    assert_eq!(
        routes(&m, &st),
        vec![route("ff0e::7", None, Some(3), &[WAN, DC]), route("ff0e::7", Some("2001:db8::1"), Some(3), &[WAN]), route("ff0e::7", Some("2001:db8::2"), Some(3), &[WAN, DC, DC2])]
    );
    // Without the static route S1 has an (S,G) entry with no interface, so
    // that (*,G) does not take it to DC.
    assert_eq!(routes(&m, &[]), vec![route("ff0e::7", None, None, &[DC]), route("ff0e::7", Some("2001:db8::1"), None, &[]), route("ff0e::7", Some("2001:db8::2"), None, &[DC, DC2])]);
    // Static routes of other groups pass through unchanged; a static (S,G)
    // of this group is its source's base.
    let st = [route("ff0e::8", None, None, &[WAN]), route("ff0e::7", Some("2001:db8::3"), Some(0), &[DC2])];
    let r = routes(&m, &st);
    assert!(r.contains(&route("ff0e::8", None, None, &[WAN])));
    assert!(r.contains(&route("ff0e::7", Some("2001:db8::3"), Some(0), &[DC2, DC])));
}

#[test]
fn exclude_source_timer_blocks_and_filter_timer_falls_back_to_include() {
    // s.7.2: in EXCLUDE mode a source whose timer runs out is blocked
    // (moves to the exclude list); s.7.3: when the filter timer runs out,
    // the record becomes INCLUDE of the sources with running timers.
    let (mut m, c) = mld();
    tick(&mut m, &c, 0);
    // EXCLUDE({}, {}) at 1 s, then IS_IN({S1}) at 100 s: X = {S1} (timer 360 s).
    report(&mut m, &c, DC, S, &[rec(RecordType::IsExclude, "ff0e::9", &[])]);
    report(&mut m, &c, DC, 100 * S, &[rec(RecordType::IsInclude, "ff0e::9", &["2001:db8::1"])]);
    tick(&mut m, &c, 261 * S);
    // Filter timer (261 s) ran out: INCLUDE({S1}).
    assert_eq!(m.listeners(), vec![Listeners { iface: DC, group: a("ff0e::9"), exclude: false, sources: vec![a("2001:db8::1")] }]);
    assert_eq!(routes(&m, &[]), vec![route("ff0e::9", Some("2001:db8::1"), None, &[DC])]);
    // And the other way: EXCLUDE with X = {S2} whose timer runs out first.
    report(&mut m, &c, DC2, 300 * S, &[rec(RecordType::IsExclude, "ff0e::a", &["2001:db8::2"])]);
    // IS_EX({S2}) in INCLUDE({}) -> EXCLUDE({}, {S2}): blocked at once.
    assert_eq!(of(&m, "ff0e::a"), Listeners { iface: DC2, group: a("ff0e::a"), exclude: true, sources: vec![a("2001:db8::2")] });
    // ALLOW({S2}) moves it to X (forwarded) with MALI ...
    report(&mut m, &c, DC2, 310 * S, &[rec(RecordType::Allow, "ff0e::a", &["2001:db8::2"])]);
    assert!(of(&m, "ff0e::a").sources.is_empty(), "nothing blocked");
    // ... a new IS_EX({S2}) keeps its X timer (570 s) and raises the filter
    // timer to 820 s; at 570 s S2 is blocked again.
    report(&mut m, &c, DC2, 560 * S, &[rec(RecordType::IsExclude, "ff0e::a", &["2001:db8::2"])]);
    tick(&mut m, &c, 569 * S);
    assert!(of(&m, "ff0e::a").sources.is_empty());
    m.take_changed();
    tick(&mut m, &c, 570 * S);
    assert_eq!(of(&m, "ff0e::a").sources, vec![a("2001:db8::2")]);
    assert!(m.take_changed());
}

#[test]
fn querier_election_adopts_the_lower_address_and_takes_over_when_it_goes() {
    // s.7.6.2: a query from a lower address makes this router a
    // non-querier for Other Querier Present Interval (robustness x QI +
    // QRI / 2); it adopts that querier's QRV and QQI (s.5.1.8, s.5.1.9).
    let (mut m, c) = mld();
    tick(&mut m, &c, 0);
    let q = QueryRepr { group: Ipv6Addr::UNSPECIFIED, max_resp_ms: 10_000, suppress: false, qrv: 3, qqi_s: 60, sources: vec![] }.message();
    // A higher address: ignored.
    m.on_message(DC, a("fe80::9"), &q, S, &c).unwrap();
    assert_eq!(m.other_querier(DC), None);
    // On DC2 (fe80::2), fe80::1 is lower.
    m.on_message(DC2, a("fe80::1"), &q, S, &c).unwrap();
    assert_eq!(m.other_querier(DC2), Some(a("fe80::1")));
    assert_eq!(local(&c, Local::MldQueryReceived), 2);
    // DC keeps querying, DC2 does not.
    let q1 = tick(&mut m, &c, 125 * S / 4);
    assert_eq!(q1.iter().map(|q| q.0).collect::<Vec<_>>(), vec![DC]);
    // OQPI with the adopted variables: 3 x 60 s + 5 s = 185 s after 1 s.
    assert!(tick(&mut m, &c, 185 * S).iter().all(|q| q.0 == DC));
    let q2 = tick(&mut m, &c, 186 * S);
    assert!(q2.iter().any(|q| q.0 == DC2 && q.2.is_unspecified()), "DC2 queries again at 186 s: {q2:?}");
    assert_eq!(m.other_querier(DC2), None);
    // An MLDv1 query (24 octets) from a lower address: counted, reported
    // once per interface (s.8.3.1), and obeyed as a querier.
    let mut v1 = v1_message(mld::QUERY, Ipv6Addr::UNSPECIFIED);
    v1[4..6].copy_from_slice(&10_000u16.to_be_bytes());
    m.on_message(DC, a("fe80::"), &v1, 200 * S, &c).unwrap();
    m.on_message(DC2, a("fe80::1"), &v1, 200 * S, &c).unwrap();
    m.on_message(DC2, a("fe80::1"), &v1, 201 * S, &c).unwrap();
    assert_eq!(m.take_warnings(), vec![(DC, a("fe80::"), 1), (DC2, a("fe80::1"), 1)]);
    assert!(m.take_warnings().is_empty());
    assert_eq!(local(&c, Local::MldV1QueryHeard), 3);
    assert_eq!(m.other_querier(DC2), Some(a("fe80::1")));
}

#[test]
fn a_non_querier_sends_no_specific_queries_and_lowers_timers_on_the_queriers() {
    // s.7.6.1: a non-querier lowers its timers to LLQT on the querier's
    // Multicast Address Specific Query without the S flag, and does not
    // on one with it.
    let (mut m, c) = mld();
    tick(&mut m, &c, 0);
    let mk = |suppress: bool| QueryRepr { group: a("ff0e::100"), max_resp_ms: 1000, suppress, qrv: 2, qqi_s: 125, sources: vec![] }.message();
    m.on_message(DC2, a("fe80::1"), &QueryRepr { group: Ipv6Addr::UNSPECIFIED, max_resp_ms: 10_000, suppress: false, qrv: 2, qqi_s: 125, sources: vec![] }.message(), S, &c).unwrap();
    report(&mut m, &c, DC2, 2 * S, &[rec(RecordType::ToExclude, "ff0e::100", &[])]);
    report(&mut m, &c, DC2, 3 * S, &[rec(RecordType::ToInclude, "ff0e::100", &[])]);
    assert!(tick(&mut m, &c, 3 * S).iter().all(|q| q.0 != DC2), "no Q(MA) from the non-querier");
    m.on_message(DC2, a("fe80::1"), &mk(true), 3 * S, &c).unwrap();
    tick(&mut m, &c, 6 * S);
    assert_eq!(m.listeners().len(), 1, "S flag: timer not lowered");
    m.on_message(DC2, a("fe80::1"), &mk(false), 6 * S, &c).unwrap();
    tick(&mut m, &c, 8 * S - 1);
    assert_eq!(m.listeners().len(), 1);
    tick(&mut m, &c, 8 * S);
    assert!(m.listeners().is_empty(), "lowered to LLQT by the querier's query");
}

#[test]
fn mldv1_hosts_report_and_leave() {
    // s.8.3.2: a v1 Report is IS_EX({}), a v1 Done TO_IN({}); while an
    // MLDv1 host is present, BLOCK is ignored and TO_EX(x) is TO_EX({}).
    let (mut m, c) = mld();
    tick(&mut m, &c, 0);
    m.on_message(DC, host(), &v1_message(REPORT_V1, a("ff0e::100")), S, &c).unwrap();
    assert_eq!(routes(&m, &[]), vec![route("ff0e::100", None, None, &[DC])]);
    report(&mut m, &c, DC, 2 * S, &[rec(RecordType::ToExclude, "ff0e::100", &["2001:db8::1"])]);
    assert_eq!(m.listeners()[0].sources, Vec::<Ipv6Addr>::new(), "TO_EX(x) taken as TO_EX({{}})");
    report(&mut m, &c, DC, 3 * S, &[rec(RecordType::Block, "ff0e::100", &["2001:db8::1"])]);
    assert!(tick(&mut m, &c, 3 * S).is_empty(), "BLOCK ignored");
    m.on_message(DC, host(), &v1_message(DONE_V1, a("ff0e::100")), 4 * S, &c).unwrap();
    let q = tick(&mut m, &c, 4 * S);
    assert_eq!(q.len(), 1);
    assert_eq!(q[0].2, a("ff0e::100"));
    tick(&mut m, &c, 6 * S);
    assert!(m.listeners().is_empty());
}

#[test]
fn ssm_range_ignores_exclude_records() {
    // RFC 4604 s.2.2.1: EXCLUDE-mode records for FF3x::/32 are ignored;
    // INCLUDE ones work.
    let (mut m, c) = mld();
    tick(&mut m, &c, 0);
    assert!(is_ssm(&a("ff3e::1234")));
    assert!(!is_ssm(&a("ff3e:40:2001:db8::1")));
    assert!(!is_ssm(&a("ff0e::1")));
    report(&mut m, &c, DC, S, &[rec(RecordType::ToExclude, "ff3e::1234", &[]), rec(RecordType::IsInclude, "ff3e::1234", &["2001:db8::1"])]);
    assert_eq!(local(&c, Local::MldSsmExcludeIgnored), 1);
    assert_eq!(routes(&m, &[]), vec![route("ff3e::1234", Some("2001:db8::1"), None, &[DC])]);
}

#[test]
fn state_is_bounded_and_refusals_are_named() {
    let (_, c) = mld();
    let cfg = MldConfig { max_groups: 2, max_sources: 2, ..MldConfig::default() };
    let mut m = Mld::new(cfg, &[(DC, a("fe80::1"))], 0);
    for g in ["ff0e::1", "ff0e::2", "ff0e::3"] {
        report(&mut m, &c, DC, S, &[rec(RecordType::ToExclude, g, &[])]);
    }
    assert_eq!(m.listeners().len(), 2);
    assert_eq!(local(&c, Local::MldStateFull), 1);
    report(&mut m, &c, DC, S, &[rec(RecordType::Allow, "ff0e::1", &["2001:db8::1", "2001:db8::2", "2001:db8::3"])]);
    assert_eq!(local(&c, Local::MldStateFull), 2);
    // The address leaves; a new one fits again.
    report(&mut m, &c, DC, 2 * S, &[rec(RecordType::ToInclude, "ff0e::2", &[])]);
    tick(&mut m, &c, 2 * S);
    tick(&mut m, &c, 3 * S);
    tick(&mut m, &c, 4 * S);
    report(&mut m, &c, DC, 5 * S, &[rec(RecordType::ToExclude, "ff0e::3", &[])]);
    assert!(m.listeners().iter().any(|l| l.group == a("ff0e::3")));
    // Link-scope addresses, unknown record types, and refusals.
    let mut msg = report_v2_message(&[rec(RecordType::ToExclude, "ff02::1:ff00:10", &[])]);
    m.on_message(DC, host(), &msg, 6 * S, &c).unwrap();
    msg[8] = 9;
    m.on_message(DC, host(), &msg, 6 * S, &c).unwrap();
    assert_eq!(local(&c, Local::MldRecordIgnored), 2);
    assert_eq!(m.on_message(DC, Ipv6Addr::UNSPECIFIED, &msg, 6 * S, &c), Err(Refused::BadSource));
    let q = QueryRepr { group: Ipv6Addr::UNSPECIFIED, max_resp_ms: 1, suppress: false, qrv: 2, qqi_s: 1, sources: vec![] }.message();
    assert_eq!(m.on_message(DC, a("2001:db8::1"), &q, 6 * S, &c), Err(Refused::BadSource));
    assert_eq!(m.on_message(DC2, host(), &msg, 6 * S, &c), Err(Refused::NotEnabled));
    assert_eq!(m.on_message(DC, host(), &msg[..20], 6 * S, &c), Err(Refused::Malformed));
}

#[test]
fn source_specific_queries_split_by_s_flag_and_fit_the_minimum_mtu() {
    let c = WorkerCounters::default();
    let many: Vec<String> = (1..=80).map(|i| format!("2001:db8::{i:x}")).collect();
    let refs: Vec<&str> = many.iter().map(|s| s.as_str()).collect();
    let cfg = MldConfig { max_sources: 100, ..MldConfig::default() };
    let mut m2 = Mld::new(cfg, &[(DC, a("fe80::1"))], 0);
    tick(&mut m2, &c, 0);
    report(&mut m2, &c, DC, S, &[rec(RecordType::Allow, "ff0e::5", &refs)]);
    report(&mut m2, &c, DC, 2 * S, &[rec(RecordType::Block, "ff0e::5", &refs)]);
    let mut out = Vec::new();
    m2.tick(2 * S, &mut out, &c);
    assert_eq!(out.len(), 2, "80 sources: 75 + 5");
    assert!(out.iter().all(|o| o.packet.len() <= 1280));
    let q = queries(&out);
    assert_eq!(q[0].4.len() + q[1].4.len(), 80);
    // One source refreshed: the retransmission splits it into an S query.
    report(&mut m2, &c, DC, 2 * S + 500 * MS, &[rec(RecordType::IsInclude, "ff0e::5", &["2001:db8::1"])]);
    let q = tick(&mut m2, &c, 3 * S);
    let s_flag: Vec<_> = q.iter().filter(|q| q.3).collect();
    assert_eq!(s_flag.len(), 1);
    assert_eq!(s_flag[0].4, vec![a("2001:db8::1")]);
    tick(&mut m2, &c, 4 * S);
    assert_eq!(routes(&m2, &[]), vec![route("ff0e::5", Some("2001:db8::1"), None, &[DC])]);
}

/// The MLDv1 queries in `out` as (iface, destination, group, Maximum
/// Response Delay ms), checking each is a well-formed 24-octet MLDv1 query
/// (RFC 2710 s.3) with Hop Limit 1, Router Alert and a valid checksum.
fn v1_queries(out: &[Outgoing]) -> Vec<(u16, Ipv6Addr, Ipv6Addr, u16)> {
    out.iter()
        .map(|o| {
            let p = &o.packet;
            assert_eq!((p[7], p.len()), (1, 40 + 8 + 24), "Hop Limit 1, 24-octet message");
            assert!(crate::wire::mld::has_router_alert(&p[40..]), "Router Alert");
            let src = Ipv6Addr::from(<[u8; 16]>::try_from(&p[8..24]).unwrap());
            let dst = Ipv6Addr::from(<[u8; 16]>::try_from(&p[24..40]).unwrap());
            let m = &p[48..];
            let sum = crate::wire::checksum::combine(crate::wire::checksum::pseudo_v6(&src.octets(), &dst.octets(), 58, m.len() as u32), crate::wire::checksum::sum(m));
            assert_eq!(crate::wire::checksum::fold(sum), 0xffff, "checksum");
            assert_eq!((m[0], m[1], &m[6..8]), (mld::QUERY, 0, &[0u8, 0][..]), "type 130, code 0, reserved 0");
            (o.iface, dst, Ipv6Addr::from(<[u8; 16]>::try_from(&m[8..24]).unwrap()), u16::from_be_bytes([m[4], m[5]]))
        })
        .collect()
}

#[test]
fn an_mldv1_interface_queries_in_mldv1_and_ignores_mldv2_reports() {
    // s.8.3.1: on a link with MLDv1 routers the querier uses MLDv1: 24-octet
    // queries; an MLDv1 router does not know MLDv2 Reports, and the hosts
    // answer MLDv1 queries in MLDv1 (s.8.2.1). DC is in MLDv1 mode, DC2 not.
    let c = WorkerCounters::default();
    let mut m = Mld::new(MldConfig::default(), &[(DC, a("fe80::1")), (DC2, a("fe80::2"))], 0).with_v1(&[DC]);
    let mut out = Vec::new();
    m.tick(0, &mut out, &c);
    let (v1, v2): (Vec<Outgoing>, Vec<Outgoing>) = out.into_iter().partition(|o| o.iface == DC);
    assert_eq!(v1_queries(&v1), vec![(DC, mld::ALL_NODES, Ipv6Addr::UNSPECIFIED, 10_000)], "an MLDv1 General Query, MRD = Query Response Interval");
    assert_eq!(queries(&v2).len(), 1, "DC2 stays MLDv2");
    // MLDv2 Reports on DC: ignored, counted; on DC2 as usual.
    report(&mut m, &c, DC, S, &[rec(RecordType::ToExclude, "ff0e::100", &[])]);
    report(&mut m, &c, DC2, S, &[rec(RecordType::ToExclude, "ff0e::100", &[])]);
    assert_eq!(local(&c, Local::MldV2ReportIgnored), 1);
    assert_eq!(m.listeners().iter().map(|l| l.iface).collect::<Vec<_>>(), vec![DC2]);
    // An MLDv1 Report on DC makes the listener; its Done is followed by
    // Last Listener Query Count MLDv1 Multicast Address Specific Queries,
    // LLQI apart, MRD = LLQI; unanswered, the listener goes after LLQT.
    m.on_message(DC, host(), &v1_message(REPORT_V1, a("ff0e::300")), 2 * S, &c).unwrap();
    assert!(m.listeners().iter().any(|l| l.iface == DC && l.group == a("ff0e::300") && l.exclude));
    m.on_message(DC, host(), &v1_message(DONE_V1, a("ff0e::300")), 3 * S, &c).unwrap();
    let mut out = Vec::new();
    m.tick(3 * S, &mut out, &c);
    assert_eq!(v1_queries(&out), vec![(DC, a("ff0e::300"), a("ff0e::300"), 1000)]);
    let mut out = Vec::new();
    m.tick(3 * S + 999 * MS, &mut out, &c);
    assert!(out.is_empty(), "{out:?}");
    m.tick(4 * S, &mut out, &c);
    assert_eq!(v1_queries(&out), vec![(DC, a("ff0e::300"), a("ff0e::300"), 1000)]);
    assert!(m.listeners().iter().any(|l| l.iface == DC && l.group == a("ff0e::300")), "until LLQT (2 s)");
    m.tick(5 * S, &mut Vec::new(), &c);
    assert!(!m.listeners().iter().any(|l| l.iface == DC), "{:?}", m.listeners());
    // The next General Query on DC, a quarter of QI later (startup), is
    // MLDv1 again.
    let mut out = Vec::new();
    m.tick(125 * S / 4, &mut out, &c);
    let dc: Vec<Outgoing> = out.into_iter().filter(|o| o.iface == DC).collect();
    assert_eq!(v1_queries(&dc), vec![(DC, mld::ALL_NODES, Ipv6Addr::UNSPECIFIED, 10_000)]);
    assert!(m.show(5 * S, |i| i.to_string()).starts_with("1: MLDv1 mode, querier fe80::1"));
}

#[test]
fn an_mldv1_interface_warns_of_mldv2_queriers_and_obeys_mldv1_ones() {
    // s.8.3.1: in MLDv1 mode, "SHOULD also warn about receiving an MLDv2
    // Query" (rate-limited: once per interface); an MLDv1 query there is
    // what the link runs, no warning; either elects by address.
    let c = WorkerCounters::default();
    let mut m = Mld::new(MldConfig::default(), &[(DC, a("fe80::1"))], 0).with_v1(&[DC]);
    m.tick(0, &mut Vec::new(), &c);
    let mut v1 = v1_message(mld::QUERY, Ipv6Addr::UNSPECIFIED);
    v1[4..6].copy_from_slice(&10_000u16.to_be_bytes());
    m.on_message(DC, a("fe80::"), &v1, S, &c).unwrap();
    assert_eq!(m.other_querier(DC), Some(a("fe80::")), "the lower MLDv1 router queries");
    assert!(m.take_warnings().is_empty());
    assert_eq!(local(&c, Local::MldV1QueryHeard), 0);
    let v2 = QueryRepr { group: Ipv6Addr::UNSPECIFIED, max_resp_ms: 10_000, suppress: false, qrv: 2, qqi_s: 125, sources: vec![] }.message();
    m.on_message(DC, a("fe80::9"), &v2, 2 * S, &c).unwrap();
    m.on_message(DC, a("fe80::9"), &v2, 3 * S, &c).unwrap();
    assert_eq!(m.take_warnings(), vec![(DC, a("fe80::9"), 2)]);
    assert_eq!(local(&c, Local::MldV2QueryHeard), 2);
    // As a non-querier it sends nothing, in either version.
    let mut out = Vec::new();
    m.tick(125 * S / 4, &mut out, &c);
    assert!(out.is_empty(), "{out:?}");
}
