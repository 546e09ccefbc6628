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
use std::collections::HashMap;
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
/// without an entry.
#[derive(Debug)]
pub struct Nud {
    cfg: NudConfig,
    map: HashMap<(u16, IpAddr), Entry>,
    failed: Vec<(u16, IpAddr)>,
    rng: u64,
}

impl Nud {
    pub fn new(cfg: NudConfig, seed: u64) -> Nud {
        Nud { cfg, map: HashMap::new(), failed: Vec::new(), rng: seed | 1 }
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

    /// A learned entry was created, changed, or confirmed (an ARP reply to
    /// the router, a solicited Neighbor Advertisement): reachable again.
    pub fn confirm(&mut self, iface: u16, ip: IpAddr, now: u64) {
        let due = now.saturating_add(self.reachable_for());
        self.map.insert((iface, ip), Entry { state: NudState::Reachable, due, sent: 0 });
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
        // Forget what is neither a learned entry nor an unresolved gateway
        // (deleted by an operator, replaced by a static entry, no longer a
        // gateway).
        self.map.retain(|k, _| match n.get(k.0, k.1) {
            Some(e) => e.source == NeighSource::Learned,
            None => is_gw(k),
        });
        // Learned entries not watched yet (learned before the detector
        // started): reachable from now.
        let fresh: Vec<(u16, IpAddr)> = n.iter().filter(|(k, e)| e.source == NeighSource::Learned && !self.map.contains_key(k)).map(|(k, _)| *k).collect();
        for (i, ip) in fresh {
            self.confirm(i, ip, now);
        }
        // Unresolved gateways.
        for k in gws {
            if n.get(k.0, k.1).is_none() {
                let e = self.map.entry(*k).or_insert(Entry { state: NudState::Incomplete, due: now, sent: 0 });
                if matches!(e.state, NudState::Reachable | NudState::Probe) {
                    // Its entry went away (deleted by an operator).
                    *e = Entry { state: NudState::Incomplete, due: now, sent: 0 };
                }
            }
        }
        let (retrans, probes) = (self.cfg.retrans_ns, self.cfg.probes);
        let mut reach: Vec<(u16, IpAddr)> = Vec::new();
        let mut dropped: Vec<(u16, IpAddr)> = Vec::new();
        for (k, e) in self.map.iter_mut() {
            let entry = n.get(k.0, k.1);
            if entry.is_some() && matches!(e.state, NudState::Incomplete | NudState::Failed) {
                // Resolved (learned from an answer).
                reach.push(*k);
                continue;
            }
            if now < e.due {
                continue;
            }
            match e.state {
                NudState::Reachable => {
                    *e = Entry { state: NudState::Probe, due: now, sent: 0 };
                    out.probes.push(Probe { iface: k.0, target: k.1, mac: entry.map(|x| x.mac) });
                    e.sent = 1;
                    e.due = now.saturating_add(retrans);
                }
                NudState::Probe | NudState::Incomplete if e.sent < probes => {
                    out.probes.push(Probe { iface: k.0, target: k.1, mac: if e.state == NudState::Probe { entry.map(|x| x.mac) } else { None } });
                    e.sent += 1;
                    e.due = now.saturating_add(retrans);
                }
                NudState::Probe => {
                    // No answer to the unicast probes.
                    out.delete.push(*k);
                    if is_gw(k) {
                        *e = Entry { state: NudState::Failed, due: now.saturating_add(retrans), sent: 0 };
                    } else {
                        dropped.push(*k);
                    }
                }
                NudState::Incomplete => *e = Entry { state: NudState::Failed, due: now.saturating_add(retrans), sent: 0 },
                NudState::Failed => {
                    out.probes.push(Probe { iface: k.0, target: k.1, mac: None });
                    e.sent = e.sent.saturating_add(1);
                    e.due = now.saturating_add(retrans);
                }
            }
        }
        for k in dropped {
            self.map.remove(&k);
        }
        for (i, ip) in reach {
            self.confirm(i, ip, now);
        }
        let mut failed: Vec<(u16, IpAddr)> = self.map.iter().filter(|(_, e)| e.state == NudState::Failed).map(|(k, _)| *k).collect();
        failed.sort_unstable();
        if failed != self.failed {
            self.failed = failed.clone();
            out.failed = Some(failed);
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
        n.tick(102 * S, &t, &[gw]);
        assert_eq!(n.state(gw.0, gw.1), None);
    }
}
