//! The router side of Multicast Listener Discovery (RFC 9777, MLDv2, with
//! MLDv1 hosts, RFC 2710, as s.8 says): which multicast addresses have
//! listeners on each MLD interface, and from which sources, so the
//! multicast routes (the End.MT underlay, draft-li s.3: "IP multicast
//! forwarding is available in the underlay") reach them without a
//! configured `oifs` list.
//!
//! One writer: the control thread. The workers validate MLD messages
//! (Hop Limit 1, link-local source, checksum) and hand them over
//! (`Event::Mld`); [`Mld::on_message`] applies them, [`Mld::tick`] runs the
//! timers and returns the queries to send (the control thread hands them
//! to a worker as `Update::InjectOn`), and [`merge_routes`] turns the state
//! into the (S,G) / (*,G) routes the workers look up, merged with the
//! static ones. Time is the caller's monotonic clock in ns, so every rule
//! is tested on a virtual clock.
//!
//! What is implemented (section numbers of RFC 9777):
//! * per interface and multicast address: filter mode, filter timer and
//!   source records with their timers, changed by every Current State and
//!   State Change record as the tables of s.7.4.1 and s.7.4.2 say, and by
//!   the timers as s.7.2 / s.7.3 say (an EXCLUDE source whose timer runs
//!   out is blocked; a filter timer that runs out falls back to INCLUDE of
//!   the sources still listened to);
//! * querier: General Queries every Query Interval, after Startup Query
//!   Count ones a quarter of it apart (s.7.6); Multicast Address Specific
//!   and Multicast Address and Source Specific Queries when listeners may
//!   have left (Q(MA), Q(MA,A) of the tables), Last Listener Query Count
//!   times, Last Listener Query Interval apart, with the timers lowered to
//!   LLQT and the S flag set in a retransmission whose timers have been
//!   raised meanwhile (s.7.6.3);
//! * querier election (s.7.6.2): the lowest link-local address queries; a
//!   router that hears a lower one stops for Other Querier Present
//!   Interval and adopts its QRV and QQI (s.5.1.8, s.5.1.9); as a
//!   non-querier it lowers its timers on the querier's specific queries
//!   without the S flag (s.7.6.1);
//! * MLDv1 hosts (s.8.3.2): a v1 Report is IS_EX({}), a v1 Done TO_IN({});
//!   while an MLDv1 host is present on the address (Older Version Host
//!   Present Timeout) BLOCK records are ignored and TO_EX(x) is TO_EX({});
//! * source-specific multicast (RFC 4604 s.2.2.1, RFC 4607 s.1): an
//!   EXCLUDE-mode record for an address in FF3x::/32 is ignored;
//! * bounds: at most `max_groups` (interface, address) records and
//!   `max_sources` sources per record; beyond them new state is refused
//!   and counted (`mld-state-full`).
//!
//! * MLDv1 routers on the link (s.8.3.1): an interface configured for
//!   MLDv1 ([`Mld::with_v1`]) queries in MLDv1 (24-octet General and
//!   Multicast Address Specific Queries, RFC 2710 s.3), ignores MLDv2
//!   Reports as an MLDv1 router does (`mld-v2-report-ignored`; its hosts
//!   answer MLDv1 queries in MLDv1, s.8.2.1) and reports an MLDv2 query
//!   heard there once (`mld-v2-query-heard`, "SHOULD also warn"); an
//!   interface left in MLDv2 reports an MLDv1 query heard there once
//!   (`mld-v1-query-heard`, "SHOULD log a warning").
//!
//! Not implemented: PIM. MLD gives the routes their outgoing interfaces,
//! the incoming side is any interface (or the static route's `iif`).

use std::collections::BTreeMap;
use std::net::Ipv6Addr;

use crate::counters::{Local, WorkerCounters};
use crate::tables::{routable_multicast6, Mroute, MAX_MROUTE_OIFS};
use crate::wire::mld::{self, Message, QueryRepr, RecordType};

/// Timers and bounds (RFC 9777 s.9 defaults).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MldConfig {
    /// Robustness Variable (s.9.1), 1..=7.
    pub robustness: u8,
    /// Query Interval (s.9.2).
    pub query_interval_ns: u64,
    /// Query Response Interval (s.9.3): the Maximum Response Delay of
    /// General Queries; less than the Query Interval.
    pub query_response_ns: u64,
    /// Last Listener Query Interval (s.9.8).
    pub last_listener_ns: u64,
    /// (interface, multicast address) records at most, for the router.
    pub max_groups: usize,
    /// Sources per record at most.
    pub max_sources: usize,
}

impl Default for MldConfig {
    fn default() -> Self {
        MldConfig { robustness: 2, query_interval_ns: 125_000_000_000, query_response_ns: 10_000_000_000, last_listener_ns: 1_000_000_000, max_groups: 4096, max_sources: 64 }
    }
}

/// Sources per query at most: a query with them fits the IPv6 minimum MTU
/// (40 + 8 Hop-by-Hop + 28 + 16 n <= 1280).
pub const MAX_QUERY_SOURCES: usize = 75;

/// Source timer value of a blocked source (EXCLUDE mode's "requested not
/// to forward" list, Y).
const BLOCKED: u64 = 0;

#[derive(Debug, Clone, Default)]
struct Group {
    exclude: bool,
    /// Filter timer deadline (EXCLUDE mode).
    filter: u64,
    /// Source -> timer deadline; [`BLOCKED`] in EXCLUDE mode = the Y list.
    sources: BTreeMap<Ipv6Addr, u64>,
    /// Older Version Host Present until (s.8.3.2); 0: none.
    v1_until: u64,
    /// Multicast Address Specific Query transmissions left.
    group_q_left: u8,
    /// Multicast Address and Source Specific Query transmissions left, per
    /// source.
    src_q_left: BTreeMap<Ipv6Addr, u8>,
    /// Next specific query transmission.
    next_q: u64,
}

#[derive(Debug, Clone)]
struct Iface {
    iface: u16,
    /// Our link-local address on it: queries come from it, the lowest
    /// address on the link is the querier.
    addr: Ipv6Addr,
    /// Another router that queries (lower address), and until when.
    other: Option<(Ipv6Addr, u64)>,
    next_general: u64,
    startup_left: u8,
    /// Robustness Variable and Query Interval in use (adopted from the
    /// querier's queries).
    rv: u8,
    qi_ns: u64,
    groups: BTreeMap<Ipv6Addr, Group>,
    /// A query of the other version was heard here (and reported once).
    version_warned: bool,
    /// MLDv1 compatibility mode (s.8.3.1): MLDv1 queries, MLDv2 Reports
    /// ignored.
    v1: bool,
}

/// One interface's listeners for one multicast address, as forwarding
/// needs them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listeners {
    pub iface: u16,
    pub group: Ipv6Addr,
    /// EXCLUDE: every source but `sources`; INCLUDE: only `sources`.
    pub exclude: bool,
    pub sources: Vec<Ipv6Addr>,
}

/// A query to send: the IPv6 packet (Hop-by-Hop Router Alert, Hop Limit 1,
/// from the interface's link-local address) and the interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    pub iface: u16,
    pub packet: Vec<u8>,
}

/// Why an MLD message was refused (counted by the caller).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Not an interface MLD runs on.
    NotEnabled,
    /// The message does not parse.
    Malformed,
    /// A report from ::, a query from a non-link-local address (s.5.1.14,
    /// s.5.2.13): not used for listener state.
    BadSource,
}

pub struct Mld {
    cfg: MldConfig,
    ifaces: Vec<Iface>,
    records: usize,
    changed: bool,
    /// (interface, router, its MLD version) where a querier of the other
    /// version was first heard, for the caller to log (RFC 9777 s.8.3.1),
    /// drained by [`Mld::take_warnings`].
    warnings: Vec<(u16, Ipv6Addr, u8)>,
}

/// The SSM range (RFC 4607 s.1: FF3x::/32).
pub fn is_ssm(g: &Ipv6Addr) -> bool {
    let o = g.octets();
    o[0] == 0xff && o[1] >> 4 == 3 && o[2..4] == [0, 0]
}

impl Mld {
    /// MLD on `ifaces` (interface index, its link-local address), started
    /// at `now`: the first General Query goes at once.
    pub fn new(cfg: MldConfig, ifaces: &[(u16, Ipv6Addr)], now: u64) -> Mld {
        let ifaces = ifaces
            .iter()
            .map(|&(iface, addr)| Iface { iface, addr, other: None, next_general: now, startup_left: cfg.robustness, rv: cfg.robustness, qi_ns: cfg.query_interval_ns, groups: BTreeMap::new(), version_warned: false, v1: false })
            .collect();
        Mld { cfg, ifaces, records: 0, changed: false, warnings: Vec::new() }
    }

    /// MLDv1 compatibility mode (s.8.3.1) on these interfaces: "routers
    /// that desire to be compatible with MLDv1 MUST have a configuration
    /// option to act in MLDv1 mode".
    pub fn with_v1(mut self, ifaces: &[u16]) -> Mld {
        for f in self.ifaces.iter_mut() {
            f.v1 = ifaces.contains(&f.iface);
        }
        self
    }

    pub fn config(&self) -> &MldConfig {
        &self.cfg
    }

    /// True once after the forwarding state (who listens where, to which
    /// sources) changed.
    pub fn take_changed(&mut self) -> bool {
        std::mem::take(&mut self.changed)
    }

    /// Where a querier of the other MLD version was heard since the last
    /// call, once per interface: (interface, router, its version). An
    /// MLDv1 router does not understand MLDv2 queries (RFC 9777 s.8.3.1
    /// wants MLDv1 configured on the link); an MLDv2 router on an MLDv1
    /// link should be configured for MLDv1 too.
    pub fn take_warnings(&mut self) -> Vec<(u16, Ipv6Addr, u8)> {
        std::mem::take(&mut self.warnings)
    }

    pub fn is_enabled(&self, iface: u16) -> bool {
        self.ifaces.iter().any(|i| i.iface == iface)
    }

    /// The querier of `iface`: None when this router is.
    pub fn other_querier(&self, iface: u16) -> Option<Ipv6Addr> {
        self.ifaces.iter().find(|i| i.iface == iface).and_then(|i| i.other.map(|o| o.0))
    }

    fn mali(&self, i: usize) -> u64 {
        let f = &self.ifaces[i];
        u64::from(f.rv) * f.qi_ns + self.cfg.query_response_ns
    }

    fn llqt(&self, i: usize) -> u64 {
        u64::from(self.ifaces[i].rv) * self.cfg.last_listener_ns
    }

    /// Every (interface, address) with listeners, sorted by address then
    /// interface.
    pub fn listeners(&self) -> Vec<Listeners> {
        let mut v: Vec<Listeners> = Vec::new();
        for f in &self.ifaces {
            for (g, st) in &f.groups {
                let (exclude, sources) = forwarding_view(st);
                v.push(Listeners { iface: f.iface, group: *g, exclude, sources });
            }
        }
        v.sort_by_key(|l| (l.group, l.iface));
        v
    }

    /// A human-readable state: per interface the querier, per address its
    /// mode, sources and the time left on its timers.
    pub fn show(&self, now: u64, name: impl Fn(u16) -> String) -> String {
        use std::fmt::Write;
        let secs = |t: u64| format!("{:.1}s", t.saturating_sub(now) as f64 / 1e9);
        let mut o = String::new();
        for f in &self.ifaces {
            let q = match f.other {
                Some((a, until)) => format!("querier {a} (present {})", secs(until)),
                None => format!("querier {} (this router; next general query in {})", f.addr, secs(f.next_general)),
            };
            let _ = writeln!(o, "{}: {}{q}, robustness {}, query interval {}s, {} address(es)", name(f.iface), if f.v1 { "MLDv1 mode, " } else { "" }, f.rv, f.qi_ns / 1_000_000_000, f.groups.len());
            for (g, st) in &f.groups {
                let srcs: Vec<String> = st.sources.iter().map(|(s, &t)| if t == BLOCKED { format!("{s} blocked") } else { format!("{s} {}", secs(t)) }).collect();
                let mode = if st.exclude { format!("EXCLUDE filter {}", secs(st.filter)) } else { "INCLUDE".to_string() };
                let v1 = if st.v1_until > now { " mldv1-host" } else { "" };
                let _ = writeln!(o, "  {g} {mode}{v1} sources [{}]", srcs.join(", "));
            }
        }
        o
    }

    /// An MLD message received on `iface` from `src` (`msg` = the ICMPv6
    /// message, checksum verified by the worker).
    pub fn on_message(&mut self, iface: u16, src: Ipv6Addr, msg: &[u8], now: u64, counters: &WorkerCounters) -> Result<(), Refused> {
        let i = self.ifaces.iter().position(|f| f.iface == iface).ok_or(Refused::NotEnabled)?;
        let m = mld::parse(msg).map_err(|_| Refused::Malformed)?;
        match m {
            Message::Query { group, v2, max_resp_ms } => {
                if !crate::tables::is_link_local(&src) {
                    return Err(Refused::BadSource);
                }
                counters.local(Local::MldQueryReceived);
                let f = &mut self.ifaces[i];
                if v2.is_some() == f.v1 && src != f.addr {
                    // s.8.3.1: a router of the other version on the link.
                    // In MLDv2 mode, an MLDv1 router: "SHOULD log a
                    // warning"; in MLDv1 mode, an MLDv2 router: "SHOULD
                    // also warn". Rate-limited: once per interface.
                    counters.local(if f.v1 { Local::MldV2QueryHeard } else { Local::MldV1QueryHeard });
                    if !f.version_warned {
                        f.version_warned = true;
                        self.warnings.push((f.iface, src, if v2.is_some() { 2 } else { 1 }));
                    }
                }
                self.on_query(i, src, group, v2, max_resp_ms, now);
            }
            // RFC 3810 s.5.2.13: a Report from :: is of no use (RFC 3590:
            // ignored), and one from beyond the link (not link-local) is
            // discarded.
            _ if !crate::tables::is_link_local(&src) => return Err(Refused::BadSource),
            Message::ReportV1 { group } => {
                counters.local(Local::MldReportReceived);
                self.record(i, RecordType::IsExclude, group, &[], true, now, counters);
            }
            Message::DoneV1 { group } => {
                counters.local(Local::MldReportReceived);
                // RFC 9777 s.7.4 (RFC 4604 s.2.2.1): "SSM-aware routers
                // SHOULD ignore MLDv1 Report and Done messages" for an SSM
                // address (the Report is, as EXCLUDE, in `record`).
                if is_ssm(&group) {
                    counters.local(Local::MldRecordIgnored);
                    return Ok(());
                }
                self.record(i, RecordType::ToInclude, group, &[], false, now, counters);
            }
            Message::ReportV2 { .. } if self.ifaces[i].v1 => {
                // MLDv1 mode: as an MLDv1 router, which does not know the
                // message; the hosts answer the MLDv1 queries in MLDv1.
                counters.local(Local::MldV2ReportIgnored);
            }
            Message::ReportV2 { records } => {
                counters.local(Local::MldReportReceived);
                for r in records.iter() {
                    let Some(kind) = r.kind else {
                        counters.local(Local::MldRecordIgnored);
                        continue;
                    };
                    let srcs: Vec<Ipv6Addr> = r.sources.iter().collect();
                    self.record(i, kind, r.group, &srcs, false, now, counters);
                }
            }
        }
        Ok(())
    }

    fn on_query(&mut self, i: usize, src: Ipv6Addr, group: Ipv6Addr, v2: Option<mld::QueryV2<'_>>, max_resp_ms: u32, now: u64) {
        let f = &self.ifaces[i];
        if src == f.addr {
            return;
        }
        let lower = u128::from(src) < u128::from(f.addr);
        if !lower {
            // A router with a higher address: it will hear us and stop.
            return;
        }
        // The querier (s.7.6.2): adopt its variables (s.5.1.8, s.5.1.9);
        // a QRV or QQIC of 0 means "use the default" (the configured
        // value), not "keep the last one adopted".
        let (rv_cfg, qi_cfg) = (self.cfg.robustness, self.cfg.query_interval_ns);
        let f = &mut self.ifaces[i];
        if let Some(q) = v2 {
            f.rv = if q.qrv != 0 { q.qrv } else { rv_cfg };
            f.qi_ns = if q.qqi_s != 0 { u64::from(q.qqi_s) * 1_000_000_000 } else { qi_cfg };
        }
        let oqpi = u64::from(f.rv) * f.qi_ns + self.cfg.query_response_ns / 2;
        f.other = Some((src, now + oqpi));
        // Its specific queries lower our timers too (s.7.6.1), unless it
        // says it has done so already (S flag).
        if group.is_unspecified() || v2.is_some_and(|q| q.suppress) {
            return;
        }
        // MLDv2: [Last Listener Query Time]. MLDv1 (RFC 2710 s.4): "[Last
        // Listener Query Count] times the Maximum Response Delay specified
        // in the message".
        let llqt = match v2 {
            Some(_) => self.llqt(i),
            None => u64::from(self.ifaces[i].rv) * u64::from(max_resp_ms) * 1_000_000,
        };
        let f = &mut self.ifaces[i];
        let Some(st) = f.groups.get_mut(&group) else { return };
        match v2.map(|q| q.sources) {
            Some(s) if !s.is_empty() => {
                for a in s.iter() {
                    if let Some(t) = st.sources.get_mut(&a) {
                        if *t != BLOCKED && *t > now + llqt {
                            *t = now + llqt;
                        }
                    }
                }
            }
            _ => {
                if st.exclude && st.filter > now + llqt {
                    st.filter = now + llqt;
                }
            }
        }
    }

    /// One Multicast Address Record (the tables of s.7.4.1 / s.7.4.2).
    #[allow(clippy::too_many_arguments)]
    fn record(&mut self, i: usize, kind: RecordType, group: Ipv6Addr, b: &[Ipv6Addr], v1_report: bool, now: u64, counters: &WorkerCounters) {
        if !routable_multicast6(&group) {
            // Link-scope addresses (solicited-node, ...) are not routed.
            counters.local(Local::MldRecordIgnored);
            return;
        }
        let exclude_kind = matches!(kind, RecordType::IsExclude | RecordType::ToExclude);
        if exclude_kind && is_ssm(&group) {
            counters.local(Local::MldSsmExcludeIgnored);
            return;
        }
        let mali = self.mali(i);
        let llqt = self.llqt(i);
        let querier = self.ifaces[i].other.is_none();
        let max_sources = self.cfg.max_sources;
        let new_group = !self.ifaces[i].groups.contains_key(&group);
        if new_group {
            // Nothing to forward: an INCLUDE record with no sources, or a
            // BLOCK, for an address without state changes nothing.
            if (b.is_empty() && !exclude_kind) || kind == RecordType::Block {
                return;
            }
            if self.records >= self.cfg.max_groups {
                counters.local(Local::MldStateFull);
                return;
            }
            self.records += 1;
            self.ifaces[i].groups.insert(group, Group::default());
        }
        let st = self.ifaces[i].groups.get_mut(&group).expect("inserted above");
        if v1_report {
            st.v1_until = now + mali;
        }
        let v1 = st.v1_until > now;
        // s.8.3.2: with an MLDv1 host present, BLOCK is ignored and TO_EX(x)
        // is TO_EX({}).
        if v1 && kind == RecordType::Block {
            return;
        }
        let b: &[Ipv6Addr] = if v1 && kind == RecordType::ToExclude { &[] } else { b };
        let before = forwarding_view(st);
        let mut full = false;
        let mut add = |st: &mut Group, s: Ipv6Addr, t: u64| {
            if st.sources.len() >= max_sources && !st.sources.contains_key(&s) {
                full = true;
            } else {
                st.sources.insert(s, t);
            }
        };
        let mut q_group = false;
        let mut q_sources: Vec<Ipv6Addr> = Vec::new();
        if !st.exclude {
            // INCLUDE (A).
            match kind {
                RecordType::IsInclude | RecordType::Allow | RecordType::ToInclude => {
                    // A+B; (B) = MALI; TO_IN: Q(MA, A-B).
                    if kind == RecordType::ToInclude {
                        q_sources = st.sources.keys().filter(|a| !b.contains(a)).copied().collect();
                    }
                    for &s in b {
                        add(st, s, now + mali);
                    }
                }
                RecordType::Block => {
                    // Q(MA, A*B).
                    q_sources = b.iter().filter(|s| st.sources.contains_key(s)).copied().collect();
                }
                RecordType::IsExclude | RecordType::ToExclude => {
                    // EXCLUDE (A*B, B-A); (B-A) = 0; delete (A-B);
                    // TO_EX: Q(MA, A*B); filter timer = MALI.
                    if kind == RecordType::ToExclude {
                        q_sources = b.iter().filter(|s| st.sources.contains_key(s)).copied().collect();
                    }
                    st.sources.retain(|a, _| b.contains(a));
                    for &s in b {
                        if !st.sources.contains_key(&s) {
                            add(st, s, BLOCKED);
                        }
                    }
                    st.exclude = true;
                    st.filter = now + mali;
                }
            }
        } else {
            // EXCLUDE (X, Y): X = running timers, Y = blocked.
            let in_y = |st: &Group, s: &Ipv6Addr| st.sources.get(s) == Some(&BLOCKED);
            let in_x = |st: &Group, s: &Ipv6Addr| st.sources.get(s).is_some_and(|&t| t != BLOCKED);
            match kind {
                RecordType::IsInclude | RecordType::Allow | RecordType::ToInclude => {
                    // (X+B, Y-B); (B) = MALI; TO_IN: Q(MA, X-B), Q(MA).
                    if kind == RecordType::ToInclude {
                        q_sources = st.sources.iter().filter(|(a, &t)| t != BLOCKED && !b.contains(a)).map(|(a, _)| *a).collect();
                        q_group = true;
                    }
                    for &s in b {
                        add(st, s, now + mali);
                    }
                }
                RecordType::Block => {
                    // (X+(B-Y), Y); (B-X-Y) = filter timer; Q(MA, B-Y).
                    let filter = st.filter;
                    for &s in b {
                        if !in_y(st, &s) {
                            q_sources.push(s);
                            if !in_x(st, &s) {
                                add(st, s, filter);
                            }
                        }
                    }
                }
                RecordType::IsExclude | RecordType::ToExclude => {
                    // (B-Y, Y*B); (B-X-Y) = MALI (IS_EX) or the filter
                    // timer (TO_EX); delete (X-B), (Y-B); TO_EX: Q(MA, B-Y);
                    // filter timer = MALI.
                    let t_new = if kind == RecordType::IsExclude { now + mali } else { st.filter };
                    st.sources.retain(|a, _| b.contains(a));
                    for &s in b {
                        if !st.sources.contains_key(&s) {
                            add(st, s, t_new);
                        }
                        if kind == RecordType::ToExclude && !in_y(st, &s) {
                            q_sources.push(s);
                        }
                    }
                    st.filter = now + mali;
                }
            }
        }
        if full {
            counters.local(Local::MldStateFull);
        }
        if querier {
            // Q(MA): the filter timer to LLQT; Q(MA, S): those sources'
            // timers to LLQT; then Last Listener Query Count transmissions.
            let rv = self.ifaces[i].rv;
            let st = self.ifaces[i].groups.get_mut(&group).expect("present");
            if q_group && st.exclude {
                st.filter = st.filter.min(now + llqt);
                st.group_q_left = rv;
                st.next_q = now;
            }
            for s in q_sources {
                if let Some(t) = st.sources.get_mut(&s) {
                    if *t != BLOCKED {
                        *t = (*t).min(now + llqt);
                        st.src_q_left.insert(s, rv);
                        st.next_q = now;
                    }
                }
            }
        }
        let st = self.ifaces[i].groups.get(&group).expect("present");
        if forwarding_view(st) != before {
            self.changed = true;
        }
        self.prune(i, group);
    }

    /// Drop the record of `group` on interface `i` when it has no listener
    /// left (INCLUDE with no sources).
    fn prune(&mut self, i: usize, group: Ipv6Addr) {
        let f = &mut self.ifaces[i];
        if f.groups.get(&group).is_some_and(|st| !st.exclude && st.sources.is_empty()) {
            f.groups.remove(&group);
            self.records -= 1;
            self.changed = true;
        }
    }

    /// Run the timers at `now`: expire listeners, send the queries due
    /// into `out`. Returns the next time something is due.
    pub fn tick(&mut self, now: u64, out: &mut Vec<Outgoing>, counters: &WorkerCounters) -> u64 {
        let mut next = u64::MAX;
        for i in 0..self.ifaces.len() {
            // The other querier went quiet: query again (s.7.6.2), with
            // our own variables, which the queries then advertise.
            if self.ifaces[i].other.is_some_and(|(_, until)| until <= now) {
                let f = &mut self.ifaces[i];
                f.other = None;
                f.next_general = now;
                f.rv = self.cfg.robustness;
                f.qi_ns = self.cfg.query_interval_ns;
            }
            let llqt = self.llqt(i);
            let qrv = self.ifaces[i].rv;
            let qqi_s = (self.ifaces[i].qi_ns / 1_000_000_000) as u32;
            let (iface, addr) = (self.ifaces[i].iface, self.ifaces[i].addr);
            let f = &mut self.ifaces[i];
            let v1 = f.v1;
            if f.other.is_none() && f.next_general <= now {
                let q = QueryRepr { group: Ipv6Addr::UNSPECIFIED, max_resp_ms: (self.cfg.query_response_ns / 1_000_000) as u32, suppress: false, qrv, qqi_s, sources: Vec::new() };
                out.push(Outgoing { iface, packet: query_packet(addr, &q, v1) });
                counters.local(Local::MldQuerySent);
                if f.startup_left > 1 {
                    f.startup_left -= 1;
                    f.next_general = now + f.qi_ns / 4;
                } else {
                    f.startup_left = 0;
                    f.next_general = now + f.qi_ns;
                }
            }
            if f.other.is_none() {
                next = next.min(f.next_general);
            }
            if let Some((_, until)) = f.other {
                next = next.min(until);
            }
            // Specific queries due, and timers that ran out.
            let querier = f.other.is_none();
            let llqi_ms = (self.cfg.last_listener_ns / 1_000_000) as u32;
            let mut gone: Vec<Ipv6Addr> = Vec::new();
            for (g, st) in f.groups.iter_mut() {
                let before = forwarding_view(st);
                if querier && (st.group_q_left > 0 || !st.src_q_left.is_empty()) && st.next_q <= now {
                    if st.group_q_left > 0 {
                        let q = QueryRepr { group: *g, max_resp_ms: llqi_ms, suppress: st.filter > now + llqt, qrv, qqi_s, sources: Vec::new() };
                        out.push(Outgoing { iface, packet: query_packet(addr, &q, v1) });
                        counters.local(Local::MldQuerySent);
                        st.group_q_left -= 1;
                    }
                    // Sources whose timers were raised since go in a query
                    // with the S flag, the others in one without.
                    for suppress in [false, true] {
                        let srcs: Vec<Ipv6Addr> = st.src_q_left.keys().filter(|s| st.sources.get(s).is_some_and(|&t| t != BLOCKED && (t > now + llqt) == suppress)).copied().collect();
                        for chunk in srcs.chunks(MAX_QUERY_SOURCES) {
                            let q = QueryRepr { group: *g, max_resp_ms: llqi_ms, suppress, qrv, qqi_s, sources: chunk.to_vec() };
                            out.push(Outgoing { iface, packet: mld::packet(addr, q.destination(), &q.message()) });
                            counters.local(Local::MldQuerySent);
                        }
                    }
                    st.src_q_left.retain(|s, left| {
                        *left = left.saturating_sub(1);
                        *left > 0 && st.sources.contains_key(s)
                    });
                    st.next_q = now + self.cfg.last_listener_ns;
                }
                if !querier {
                    st.group_q_left = 0;
                    st.src_q_left.clear();
                }
                // Source timers (s.7.2): INCLUDE drops the source, EXCLUDE
                // blocks it.
                if st.exclude {
                    for t in st.sources.values_mut() {
                        if *t != BLOCKED && *t <= now {
                            *t = BLOCKED;
                        }
                    }
                    // Filter timer (s.7.3): back to INCLUDE of the sources
                    // still listened to.
                    if st.filter <= now {
                        st.exclude = false;
                        st.sources.retain(|_, t| *t != BLOCKED);
                    }
                } else {
                    st.sources.retain(|_, t| *t > now);
                }
                if !st.exclude && st.sources.is_empty() {
                    gone.push(*g);
                } else {
                    if forwarding_view(st) != before {
                        self.changed = true;
                    }
                    if st.exclude {
                        next = next.min(st.filter);
                    }
                    for &t in st.sources.values() {
                        if t != BLOCKED {
                            next = next.min(t);
                        }
                    }
                    if st.group_q_left > 0 || !st.src_q_left.is_empty() {
                        next = next.min(st.next_q);
                    }
                }
            }
            for g in gone {
                f.groups.remove(&g);
                self.records -= 1;
                self.changed = true;
            }
        }
        next
    }
}

/// A query from `src` in MLDv2, or with `v1` in MLDv1 (RFC 2710 s.3: no
/// S flag, QRV, QQIC or sources; `v1` queries never have sources, since
/// only MLDv1 records, which name none, make state on such a link).
fn query_packet(src: Ipv6Addr, q: &QueryRepr, v1: bool) -> Vec<u8> {
    let msg = if v1 { mld::v1_query_message(q.group, q.max_resp_ms) } else { q.message() };
    mld::packet(src, q.destination(), &msg)
}

/// What forwarding sees of a record: the mode and the sources it forwards
/// (INCLUDE) or blocks (EXCLUDE).
fn forwarding_view(st: &Group) -> (bool, Vec<Ipv6Addr>) {
    (st.exclude, st.sources.iter().filter(|(_, &t)| (t == BLOCKED) == st.exclude).map(|(s, _)| *s).collect())
}

/// The multicast routes the workers use: the static ones, with the MLD
/// listeners' interfaces added. For an address with listeners:
/// * (*,G): the static (*,G) route's interfaces plus every interface in
///   EXCLUDE mode (listeners to any source);
/// * (S,G) for every source some record names (and every static (S,G)):
///   the static (S,G) route's interfaces (else the static (*,G)'s), plus
///   the interfaces in INCLUDE mode that list S and those in EXCLUDE mode
///   that do not block it. It may be empty: S is then not forwarded at all
///   although (*,G) has interfaces.
///
/// The RPF interface is the static route's (any when there is none).
pub fn merge_routes(statics: &[Mroute], listeners: &[Listeners]) -> Vec<Mroute> {
    let mut by_group: BTreeMap<Ipv6Addr, Vec<&Listeners>> = BTreeMap::new();
    for l in listeners {
        by_group.entry(l.group).or_default().push(l);
    }
    let mut out: Vec<Mroute> = statics.iter().filter(|m| !by_group.contains_key(&m.group)).cloned().collect();
    let push_oif = |oifs: &mut Vec<u16>, i: u16| {
        if !oifs.contains(&i) && oifs.len() < MAX_MROUTE_OIFS {
            oifs.push(i);
        }
    };
    for (g, ls) in by_group {
        let star = statics.iter().find(|m| m.group == g && m.source.is_none());
        let mut oifs = star.map(|m| m.oifs.clone()).unwrap_or_default();
        for l in ls.iter().filter(|l| l.exclude) {
            push_oif(&mut oifs, l.iface);
        }
        let star_oifs = oifs.clone();
        if !oifs.is_empty() || star.is_some() {
            out.push(Mroute::new(g, None, star.and_then(|m| m.iif), oifs));
        }
        let mut sources: Vec<Ipv6Addr> = ls.iter().flat_map(|l| l.sources.iter().copied()).chain(statics.iter().filter(|m| m.group == g).filter_map(|m| m.source)).collect();
        sources.sort_unstable();
        sources.dedup();
        for s in sources {
            let st = statics.iter().find(|m| m.group == g && m.source == Some(s));
            let base = st.or(star);
            let mut oifs = base.map(|m| m.oifs.clone()).unwrap_or_default();
            for l in &ls {
                if l.exclude != l.sources.contains(&s) {
                    push_oif(&mut oifs, l.iface);
                }
            }
            if st.is_none() && oifs == star_oifs {
                // (*,G) says the same.
                continue;
            }
            out.push(Mroute::new(g, Some(s), base.and_then(|m| m.iif), oifs));
        }
    }
    out
}

#[cfg(test)]
mod tests;
