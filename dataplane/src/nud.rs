//! Neighbour unreachability detection, run by the control thread over the
//! neighbour table the workers use.
//!
//! - A learned neighbour (ARP / ND) is reachable for a random time between
//!   0.5 and 1.5 times `reachable_ns` after it was learned or last
//!   confirmed (RFC 4861 s.6.3.2 ReachableTime, s.7.3.3). Then the router
//!   probes it with unicast ARP requests / Neighbor Solicitations, one
//!   every `retrans_ns`, at most `probes` of them (MAX_UNICAST_SOLICIT),
//!   still forwarding to it meanwhile (the STALE / PROBE states, so an
//!   active neighbour never loses a packet). An ARP reply to the router or
//!   a solicited Neighbor Advertisement confirms it (s.7.3.1). Without an
//!   answer the entry is deleted: a router's ARP cache must flush
//!   out-of-date entries (RFC 1812 s.3.3.2, RFC 1122 s.2.3.2.1), and the
//!   next packet to that address resolves it anew.
//! - The gateways of ECMP routes are watched even without an entry: an
//!   unresolved one is solicited (broadcast ARP / multicast NS) `probes`
//!   times. One that does not answer, or whose entry was deleted as above,
//!   has *failed*: ECMP routes leave it out ([`crate::tables::Fib::set_unreachable`],
//!   as Linux does with `fib_multipath_use_neigh`) and it is solicited again
//!   every `retrans_ns` until it answers.
//! - Static neighbours are permanent: never probed or deleted.
//!
//! The state machine is pure: [`Nud::tick`] takes the time, the table and
//! the gateways and says what to send and what to delete.

use crate::tables::{MacAddr, NeighSource, Neighbours};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::net::IpAddr;

/// The timers and counts (RFC 4861 s.10 names in brackets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NudConfig {
    /// [BaseReachableTime], ns.
    pub reachable_ns: u64,
    /// [RetransTimer]: between probes, and between solicitations of a
    /// failed gateway, ns.
    pub retrans_ns: u64,
    /// [MAX_UNICAST_SOLICIT] for a known neighbour, [MAX_MULTICAST_SOLICIT]
    /// for an unresolved gateway.
    pub probes: u32,
}

impl Default for NudConfig {
    fn default() -> Self {
        NudConfig { reachable_ns: 30_000_000_000, retrans_ns: 1_000_000_000, probes: 3 }
    }
}

/// Where an address is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NudState {
    /// Confirmed recently; probed after the deadline.
    Reachable,
    /// Learned or changed by something that was not an answer to us (an
    /// ARP request, an unsolicited NA): probed soon.
    Stale,
    /// Being probed (unicast), still used.
    Probe,
    /// An ECMP gateway without an entry, being solicited.
    Incomplete,
    /// An ECMP gateway that did not answer: left out of ECMP routes.
    Failed,
}

impl NudState {
    pub fn name(self) -> &'static str {
        match self {
            NudState::Reachable => "REACHABLE",
            NudState::Stale => "STALE",
            NudState::Probe => "PROBE",
            NudState::Incomplete => "INCOMPLETE",
            NudState::Failed => "FAILED",
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    state: NudState,
    /// When the next step is due (ns).
    due: u64,
    /// Probes / solicitations sent in this state.
    sent: u32,
}

/// A solicitation to send: unicast to `mac` (a probe) or broadcast /
/// multicast (`None`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    pub iface: u16,
    pub target: IpAddr,
    pub mac: Option<MacAddr>,
}

/// What a [`Nud::tick`] decided.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct NudOut {
    pub probes: Vec<Probe>,
    /// Learned entries to delete (no answer to the probes).
    pub delete: Vec<(u16, IpAddr)>,
    /// The failed gateways, sorted, when they changed in this tick.
    pub failed: Option<Vec<(u16, IpAddr)>>,
}

/// The detector: one entry per learned neighbour and per ECMP gateway
/// without an entry. A tick costs the entries that are due (a heap of
/// deadlines) and the ECMP gateways, so a table of a million learned
/// neighbours stays cheap (`examples/nud_bench.rs`).
#[derive(Debug)]
pub struct Nud {
    cfg: NudConfig,
    map: HashMap<(u16, IpAddr), Entry>,
    /// (due, key); an item whose due differs from its entry's is stale.
    heap: BinaryHeap<Reverse<(u64, (u16, IpAddr))>>,
    failed: Vec<(u16, IpAddr)>,
    next_sweep: u64,
    rng: u64,
}

/// How often [`Nud::tick`] may look for learned entries it does not watch.
const SWEEP_NS: u64 = 1_000_000_000;

impl Nud {
    pub fn new(mut cfg: NudConfig, seed: u64) -> Nud {
        cfg.retrans_ns = cfg.retrans_ns.max(1);
        cfg.probes = cfg.probes.max(1);
        Nud { cfg, map: HashMap::new(), heap: BinaryHeap::new(), failed: Vec::new(), next_sweep: 0, rng: seed | 1 }
    }

    pub fn config(&self) -> NudConfig {
        self.cfg
    }

    /// ReachableTime: uniform in [0.5, 1.5] x BaseReachableTime.
    fn reachable_for(&mut self) -> u64 {
        // xorshift64*
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let r = self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d);
        let base = self.cfg.reachable_ns;
        base / 2 + ((u128::from(r >> 11) * u128::from(base)) >> 53) as u64
    }

    fn set(&mut self, k: (u16, IpAddr), state: NudState, due: u64, sent: u32) {
        self.map.insert(k, Entry { state, due, sent });
        self.heap.push(Reverse((due, k)));
    }

    /// A learned entry was created, changed, or confirmed (an ARP reply to
    /// the router, a solicited Neighbor Advertisement): reachable again.
    pub fn confirm(&mut self, iface: u16, ip: IpAddr, now: u64) {
        let due = now.saturating_add(self.reachable_for());
        self.set((iface, ip), NudState::Reachable, due, 0);
    }

    /// The probes of the last [`Nud::tick`] could not be handed to a
    /// worker: they count as not sent, and are due again at once.
    pub fn unsent(&mut self, probes: &[Probe], now: u64) {
        for p in probes {
            let k = (p.iface, p.target);
            if let Some(e) = self.map.get(&k).copied() {
                if e.sent > 0 && matches!(e.state, NudState::Probe | NudState::Incomplete | NudState::Failed) {
                    self.set(k, e.state, now, e.sent - 1);
                }
            }
        }
    }

    /// A learned entry was created or changed by a packet that was not an
    /// answer to the router (an ARP request, an unsolicited NA): STALE,
    /// probed after DELAY_FIRST_PROBE_TIME (5 s, RFC 4861 s.10; half the
    /// reachable time if that is shorter) unless confirmed first.
    pub fn stale(&mut self, iface: u16, ip: IpAddr, now: u64) {
        let due = now.saturating_add(5_000_000_000u64.min(self.cfg.reachable_ns / 2));
        let k = (iface, ip);
        match self.map.get(&k) {
            // Already due sooner, or being probed: as it is.
            Some(e) if matches!(e.state, NudState::Reachable | NudState::Stale) && e.due <= due => {}
            Some(e) if e.state == NudState::Probe => {}
            _ => self.set(k, NudState::Stale, due, 0),
        }
    }

    /// The state of an address, if it is watched.
    pub fn state(&self, iface: u16, ip: IpAddr) -> Option<NudState> {
        self.map.get(&(iface, ip)).map(|e| e.state)
    }

    /// The watched addresses without an entry: ECMP gateways being
    /// resolved or failed.
    pub fn unresolved(&self) -> impl Iterator<Item = ((u16, IpAddr), NudState)> + '_ {
        self.map.iter().filter(|(_, e)| matches!(e.state, NudState::Incomplete | NudState::Failed)).map(|(k, e)| (*k, e.state))
    }

    /// The gateways that failed (sorted).
    pub fn failed(&self) -> &[(u16, IpAddr)] {
        &self.failed
    }

    /// Advance to `now` over the table `n` and the ECMP gateways `gws`
    /// (sorted, as [`crate::tables::Fib::ecmp_gateways`] gives them).
    pub fn tick(&mut self, now: u64, n: &Neighbours, gws: &[(u16, IpAddr)]) -> NudOut {
        let mut out = NudOut::default();
        let is_gw = |k: &(u16, IpAddr)| gws.binary_search(k).is_ok();
        // Learned entries not watched yet (their event missed, which the
        // control thread's handling should not allow): picked up by a
        // pass over the table, at most once a second, and only while the
        // table has more learned entries than the detector watches. An
        // entry deleted from the table, or made static, is let go lazily,
        // when its deadline comes.
        if n.learned_len() > self.map.len() && now >= self.next_sweep {
            self.next_sweep = now.saturating_add(SWEEP_NS);
            let fresh: Vec<(u16, IpAddr)> = n.iter().filter(|(k, e)| e.source == NeighSource::Learned && !self.map.contains_key(k)).map(|(k, _)| *k).collect();
            for (i, ip) in fresh {
                self.confirm(i, ip, now);
            }
        }
        // The ECMP gateways: resolved ones are reachable; ones without an
        // entry are solicited.
        for &k in gws {
            let state = self.map.get(&k).map(|e| e.state);
            match (n.get(k.0, k.1), state) {
                (Some(e), Some(NudState::Incomplete | NudState::Failed)) if e.source == NeighSource::Learned => self.confirm(k.0, k.1, now),
                (Some(_), Some(NudState::Incomplete | NudState::Failed)) => {
                    self.map.remove(&k);
                }
                (None, None | Some(NudState::Reachable | NudState::Stale | NudState::Probe)) => self.set(k, NudState::Incomplete, now, 0),
                _ => {}
            }
        }
        let (retrans, probes) = (self.cfg.retrans_ns, self.cfg.probes);
        while let Some(&Reverse((due, k))) = self.heap.peek() {
            if due > now {
                break;
            }
            self.heap.pop();
            let Some(e) = self.map.get(&k).copied() else { continue };
            if e.due != due {
                continue;
            }
            let entry = n.get(k.0, k.1);
            match e.state {
                NudState::Reachable | NudState::Stale | NudState::Probe if entry.is_none_or(|x| x.source != NeighSource::Learned) => {
                    // Deleted or made static since.
                    self.map.remove(&k);
                }
                NudState::Incomplete | NudState::Failed if !is_gw(&k) => {
                    // No longer an ECMP gateway: a learned entry is
                    // watched as any other, else forgotten.
                    if entry.is_some_and(|x| x.source == NeighSource::Learned) {
                        self.confirm(k.0, k.1, now);
                    } else {
                        self.map.remove(&k);
                    }
                }
                NudState::Reachable | NudState::Stale => {
                    out.probes.push(Probe { iface: k.0, target: k.1, mac: entry.map(|x| x.mac) });
                    self.set(k, NudState::Probe, now.saturating_add(retrans), 1);
                }
                NudState::Probe | NudState::Incomplete if e.sent < probes => {
                    out.probes.push(Probe { iface: k.0, target: k.1, mac: if e.state == NudState::Probe { entry.map(|x| x.mac) } else { None } });
                    self.set(k, e.state, now.saturating_add(retrans), e.sent + 1);
                }
                NudState::Probe => {
                    // No answer to the unicast probes.
                    out.delete.push(k);
                    if is_gw(&k) {
                        self.set(k, NudState::Failed, now.saturating_add(retrans), 0);
                    } else {
                        self.map.remove(&k);
                    }
                }
                NudState::Incomplete => self.set(k, NudState::Failed, now.saturating_add(retrans), 0),
                NudState::Failed => {
                    out.probes.push(Probe { iface: k.0, target: k.1, mac: None });
                    self.set(k, NudState::Failed, now.saturating_add(retrans), e.sent.saturating_add(1));
                }
            }
        }
        // Failed gateways that are gateways no longer are forgotten.
        let stale: Vec<(u16, IpAddr)> = self.failed.iter().filter(|k| !is_gw(k)).copied().collect();
        for k in stale {
            if self.map.get(&k).is_some_and(|e| e.state == NudState::Failed) {
                self.map.remove(&k);
            }
        }
        let mut failed: Vec<(u16, IpAddr)> = gws.iter().filter(|k| self.map.get(k).is_some_and(|e| e.state == NudState::Failed)).copied().collect();
        failed.sort_unstable();
        if failed != self.failed {
            self.failed = failed.clone();
            out.failed = Some(failed);
        }
        // Stale heap items: rebuild when they outnumber the entries.
        if self.heap.len() > 2 * self.map.len() + 1024 {
            self.heap = self.map.iter().map(|(k, e)| Reverse((e.due, *k))).collect();
        }
        out.probes.sort_unstable_by_key(|p| (p.iface, p.target));
        out.delete.sort_unstable();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn cfg() -> NudConfig {
        NudConfig { reachable_ns: 10 * S, retrans_ns: S, probes: 3 }
    }

    #[test]
    fn reachable_time_is_randomised_between_half_and_one_and_a_half() {
        let mut n = Nud::new(cfg(), 7);
        let v: Vec<u64> = (0..10_000).map(|_| n.reachable_for()).collect();
        assert!(v.iter().all(|&t| (5 * S..=15 * S).contains(&t)));
        let mean = v.iter().sum::<u64>() / v.len() as u64;
        assert!((9 * S..11 * S).contains(&mean), "{mean}");
        assert!(v.iter().filter(|&&t| t < 6 * S).count() > 500 && v.iter().filter(|&&t| t > 14 * S).count() > 500, "spread over the range");
    }

    #[test]
    fn a_learned_neighbour_is_probed_unicast_and_deleted_without_an_answer() {
        let mut t = Neighbours::default();
        let mac = [2, 0, 0, 0, 0, 9];
        t.learn(1, ip("10.1.0.9"), mac, NeighSource::Learned);
        t.learn(1, ip("10.1.0.8"), [2, 0, 0, 0, 0, 8], NeighSource::Static);
        let mut n = Nud::new(cfg(), 1);
        let o = n.tick(0, &t, &[]);
        assert_eq!(o, NudOut::default(), "reachable at first");
        assert_eq!(n.state(1, ip("10.1.0.9")), Some(NudState::Reachable));
        assert_eq!(n.state(1, ip("10.1.0.8")), None, "static entries are not watched");
        // Nothing before 5 s (the least ReachableTime).
        assert_eq!(n.tick(5 * S - 1, &t, &[]), NudOut::default());
        // By 15 s it is probed, unicast to the MAC it has.
        let mut probes = Vec::new();
        let mut now = 5 * S;
        while probes.is_empty() {
            assert!(now <= 15 * S);
            probes = n.tick(now, &t, &[]).probes;
            now += S / 10;
        }
        assert_eq!(probes, [Probe { iface: 1, target: ip("10.1.0.9"), mac: Some(mac) }]);
        assert_eq!(n.state(1, ip("10.1.0.9")), Some(NudState::Probe));
        // Two more a second apart, then the entry is deleted.
        assert!(n.tick(now, &t, &[]).probes.is_empty(), "one per retrans interval");
        assert_eq!(n.tick(now + S, &t, &[]).probes.len(), 1);
        assert_eq!(n.tick(now + 2 * S, &t, &[]).probes.len(), 1);
        let o = n.tick(now + 3 * S, &t, &[]);
        assert_eq!(o.delete, [(1, ip("10.1.0.9"))]);
        assert!(o.probes.is_empty() && o.failed.is_none(), "not a gateway: not failed");
        t.remove(1, ip("10.1.0.9"));
        assert_eq!(n.state(1, ip("10.1.0.9")), None);
        assert_eq!(n.tick(now + 4 * S, &t, &[]), NudOut::default());
    }

    #[test]
    fn a_confirmation_keeps_the_entry() {
        let mut t = Neighbours::default();
        t.learn(0, ip("2001:db8::9"), [2, 0, 0, 0, 0, 9], NeighSource::Learned);
        let mut n = Nud::new(cfg(), 3);
        n.tick(0, &t, &[]);
        let mut now = 0;
        let mut probed = 0;
        // 100 s with an answer to the second probe of every round: never
        // deleted, probed about every 10 s.
        while now < 100 * S {
            let o = n.tick(now, &t, &[]);
            assert!(o.delete.is_empty());
            for _ in &o.probes {
                probed += 1;
                if n.state(0, ip("2001:db8::9")) == Some(NudState::Probe) && probed % 2 == 0 {
                    n.confirm(0, ip("2001:db8::9"), now);
                }
            }
            now += S / 10;
        }
        assert!((12..=40).contains(&probed), "{probed}");
    }

    #[test]
    fn an_ecmp_gateway_fails_without_an_answer_and_comes_back() {
        let gw = (2, ip("10.2.0.2"));
        let mut t = Neighbours::default();
        let mut n = Nud::new(cfg(), 5);
        // Unresolved: three broadcast solicitations a second apart.
        for k in 0..3 {
            let o = n.tick(k * S, &t, &[gw]);
            assert_eq!(o.probes, [Probe { iface: 2, target: gw.1, mac: None }], "{k}");
            assert!(o.failed.is_none());
            assert_eq!(n.state(gw.0, gw.1), Some(NudState::Incomplete));
        }
        let o = n.tick(3 * S, &t, &[gw]);
        assert_eq!(o.failed, Some(vec![gw]));
        assert_eq!(n.failed(), &[gw]);
        // Failed: solicited again every second.
        assert_eq!(n.tick(4 * S, &t, &[gw]).probes.len(), 1);
        assert_eq!(n.tick(4 * S + 1, &t, &[gw]).probes.len(), 0);
        // It answers: learned, reachable, no longer failed.
        t.learn(2, gw.1, [2, 0, 0, 0, 2, 2], NeighSource::Learned);
        let o = n.tick(5 * S, &t, &[gw]);
        assert_eq!(o.failed, Some(vec![]));
        assert_eq!(n.state(gw.0, gw.1), Some(NudState::Reachable));
        // Later its unicast probes go unanswered: deleted and failed at once.
        let mut now = 5 * S;
        let fail = loop {
            now += S / 10;
            assert!(now < 40 * S);
            let o = n.tick(now, &t, &[gw]);
            if !o.delete.is_empty() {
                break o;
            }
        };
        assert_eq!(fail.delete, [gw]);
        assert_eq!(fail.failed, Some(vec![gw]));
        t.remove(gw.0, gw.1);
        assert_eq!(n.state(gw.0, gw.1), Some(NudState::Failed));
        // No longer a gateway (route removed): forgotten.
        let o = n.tick(now + 1, &t, &[]);
        assert_eq!(o.failed, Some(vec![]));
        assert_eq!(n.state(gw.0, gw.1), None);
    }

    #[test]
    fn stale_deadlines_do_not_pile_up() {
        let mut t = Neighbours::default();
        for k in 0..100u32 {
            t.learn(0, IpAddr::V4(k.into()), [2, 0, 0, 0, 0, 1], NeighSource::Learned);
        }
        let mut n = Nud::new(cfg(), 11);
        n.tick(0, &t, &[]);
        // Every entry confirmed 100 times (each pushes a deadline).
        for r in 0..100 {
            for k in 0..100u32 {
                n.confirm(0, IpAddr::V4(k.into()), r);
            }
        }
        assert!(n.heap.len() >= 10_000);
        n.tick(100, &t, &[]);
        assert!(n.heap.len() <= 2 * 100 + 1024, "{}", n.heap.len());
        assert_eq!(n.map.len(), 100);
        // Probed at the latest deadline only: no probe before 5 s, and
        // never two of one entry less than the retrans interval apart.
        let mut at: HashMap<IpAddr, Vec<u64>> = HashMap::new();
        for s in 1..=160 {
            for p in n.tick(s * S / 10, &t, &[]).probes {
                at.entry(p.target).or_default().push(s * S / 10);
            }
        }
        assert_eq!(at.len(), 100, "each probed by 16 s");
        for (ip, v) in &at {
            assert!(v[0] >= 5 * S && v.windows(2).all(|w| w[1] - w[0] >= S), "{ip}: {v:?}");
        }
    }

    #[test]
    fn a_gateway_that_stops_being_one_while_resolving_is_watched_as_a_neighbour() {
        let gw = (2, ip("10.2.0.2"));
        let mut t = Neighbours::default();
        let mut n = Nud::new(cfg(), 13);
        assert_eq!(n.tick(0, &t, &[gw]).probes.len(), 1);
        // Its route goes; traffic over another route resolves it.
        t.learn(2, gw.1, [2, 0, 0, 0, 2, 2], NeighSource::Learned);
        let o = n.tick(S, &t, &[]);
        assert!(o.probes.is_empty() && o.failed.is_none(), "{o:?}");
        assert_eq!(n.state(gw.0, gw.1), Some(NudState::Reachable));
        assert_eq!(n.unresolved().count(), 0);
        // Without an entry it is simply forgotten.
        let mut n = Nud::new(cfg(), 13);
        n.tick(0, &Neighbours::default(), &[gw]);
        assert!(n.tick(S, &Neighbours::default(), &[]).probes.is_empty());
        assert_eq!(n.state(gw.0, gw.1), None);
    }

    #[test]
    fn probes_a_worker_could_not_take_are_sent_again() {
        let gw = (2, ip("10.2.0.2"));
        let t = Neighbours::default();
        let mut n = Nud::new(cfg(), 17);
        for k in 0..10 {
            let o = n.tick(k * S, &t, &[gw]);
            assert_eq!(o.probes.len(), 1);
            n.unsent(&o.probes, k * S);
            assert!(o.failed.is_none(), "never failed while its solicitations are not sent");
        }
        // Once sent: three, then failed.
        for k in 10..13 {
            assert_eq!(n.tick(k * S, &t, &[gw]).probes.len(), 1);
        }
        assert_eq!(n.tick(13 * S, &t, &[gw]).failed, Some(vec![gw]));
    }

    #[test]
    fn an_entry_learned_from_a_request_is_probed_soon() {
        let mut t = Neighbours::default();
        let k = (1, ip("10.1.0.50"));
        let mut n = Nud::new(cfg(), 19);
        n.tick(0, &t, &[]);
        // Learned from its ARP request at 1 s: STALE, probed at 6 s.
        t.learn(k.0, k.1, [2, 0, 0, 0, 0, 5], NeighSource::Learned);
        n.stale(k.0, k.1, S);
        assert_eq!(n.state(k.0, k.1), Some(NudState::Stale));
        assert!(n.tick(6 * S - 1, &t, &[]).probes.is_empty());
        assert_eq!(n.tick(6 * S, &t, &[]).probes, [Probe { iface: 1, target: k.1, mac: Some([2, 0, 0, 0, 0, 5]) }]);
        // Its answer makes it reachable for the full time.
        n.confirm(k.0, k.1, 6 * S);
        assert_eq!(n.state(k.0, k.1), Some(NudState::Reachable));
        // A new MAC from an unsolicited NA / ARP: probed within 5 s, not
        // after the 5..15 s the confirmation gave.
        n.stale(k.0, k.1, 7 * S);
        assert_eq!(n.state(k.0, k.1), Some(NudState::Stale));
        assert_eq!(n.tick(12 * S, &t, &[]).probes.len(), 1);
        // While probed, a stale report changes nothing.
        n.stale(k.0, k.1, 12 * S);
        assert_eq!(n.state(k.0, k.1), Some(NudState::Probe));
        // Half the reachable time when that is shorter than 5 s.
        let mut n = Nud::new(NudConfig { reachable_ns: 2 * S, ..cfg() }, 19);
        n.stale(k.0, k.1, 0);
        assert!(n.tick(S - 1, &t, &[]).probes.is_empty());
        assert_eq!(n.tick(S, &t, &[]).probes.len(), 1);
    }

    #[test]
    fn static_gateways_and_operator_changes() {
        let gw = (1, ip("10.1.0.2"));
        let mut t = Neighbours::default();
        t.learn(1, gw.1, [2, 0, 0, 0, 1, 2], NeighSource::Static);
        let mut n = Nud::new(cfg(), 9);
        for k in 0..100 {
            assert_eq!(n.tick(k * S, &t, &[gw]), NudOut::default(), "a static gateway is never probed");
        }
        // The operator deletes it: unresolved, solicited.
        t.remove(gw.0, gw.1);
        assert_eq!(n.tick(100 * S, &t, &[gw]).probes.len(), 1);
        // A learned entry replaced by a static one is no longer watched.
        t.learn(1, gw.1, [2, 0, 0, 0, 1, 3], NeighSource::Learned);
        n.tick(101 * S, &t, &[gw]);
        assert_eq!(n.state(gw.0, gw.1), Some(NudState::Reachable));
        t.learn(1, gw.1, [2, 0, 0, 0, 1, 4], NeighSource::Static);
        // Let go when its deadline comes (at most 1.5 x 10 s), unprobed.
        for k in 102..120 {
            assert!(n.tick(k * S, &t, &[gw]).probes.is_empty());
        }
        assert_eq!(n.state(gw.0, gw.1), None);
    }
}
