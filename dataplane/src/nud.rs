//! Neighbour unreachability detection, run by the control thread over the
//! neighbour table the workers use (RFC 4861 s.7.3, with the states Linux
//! gives them).
//!
//! - A learned neighbour (ARP / ND) is REACHABLE for a random time between
//!   0.5 and 1.5 times `reachable_ns` after it was learned from an answer
//!   or last confirmed (RFC 4861 s.6.3.2 ReachableTime, s.7.3.3). Then it
//!   is STALE: still used, not probed. An entry learned or changed by
//!   something that was not an answer to the router (an ARP request, an
//!   unsolicited NA) is STALE at once.
//! - A STALE entry the workers forward to (they mark the neighbours they
//!   use in [`UsedBits`]) goes to DELAY, and after DELAY_FIRST_PROBE_TIME
//!   (5 s, or half the reachable time if shorter) to PROBE: unicast ARP
//!   requests / Neighbor Solicitations, one every `retrans_ns`, at most
//!   `probes` of them (MAX_UNICAST_SOLICIT), still forwarding to it
//!   meanwhile, so an active neighbour never loses a packet. An ARP reply
//!   to the router or a solicited Neighbor Advertisement confirms it
//!   (s.7.3.1). Without an answer the entry is deleted: a router's ARP
//!   cache must flush out-of-date entries (RFC 1812 s.3.3.2, RFC 1122
//!   s.2.3.2.1), and the next packet to that address resolves it anew.
//!   So only neighbours in use are probed: a router with a million hosts
//!   behind it does not solicit each of them every half minute.
//! - A STALE entry nobody uses for `stale_ns` is deleted (Linux's
//!   gc_stale_time), unless it is the gateway of a route: a made-up sender
//!   address learned from an ARP request does not stay.
//! - The gateways of ECMP routes are probed whether used or not (a path
//!   no flow hashes to must still be known to work): REACHABLE goes
//!   straight to PROBE, STALE to DELAY. An ECMP gateway without an entry
//!   is solicited (broadcast ARP / multicast NS) `probes` times. One that
//!   does not answer, or whose entry was deleted as above, has *failed*:
//!   ECMP routes leave it out ([`crate::tables::Fib::set_unreachable`], as
//!   Linux does with `fib_multipath_use_neigh`) and it is solicited again
//!   until it answers, first after `retrans_ns`, then with the gap doubled
//!   each time up to `retry_max_ns` (RFC 7048).
//! - Static neighbours are permanent: never probed or deleted.
//!
//! The state machine is pure: [`Nud::tick`] takes the time, the table, the
//! gateways and the workers' use marks and says what to send and what to
//! delete.

use crate::tables::{MacAddr, NeighSource, Neighbours};
use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

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
    /// An unused STALE entry is deleted after this long (Linux
    /// gc_stale_time), ns; 0: kept.
    pub stale_ns: u64,
    /// [MAX_RETRANS_TIMER] of RFC 7048: the longest gap between the
    /// solicitations of a failed gateway, ns.
    pub retry_max_ns: u64,
}

impl Default for NudConfig {
    fn default() -> Self {
        NudConfig { reachable_ns: 30_000_000_000, retrans_ns: 1_000_000_000, probes: 3, stale_ns: 60_000_000_000, retry_max_ns: 60_000_000_000 }
    }
}

/// Where an address is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NudState {
    /// Confirmed recently.
    Reachable,
    /// Not confirmed recently (or learned from something that was not an
    /// answer to the router): used as it is, checked once it is used.
    Stale,
    /// Used while STALE: probed when the delay ends.
    Delay,
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
            NudState::Delay => "DELAY",
            NudState::Probe => "PROBE",
            NudState::Incomplete => "INCOMPLETE",
            NudState::Failed => "FAILED",
        }
    }
}

/// log2 of the bits in [`UsedBits`].
const USED_LOG2: u32 = 20;

/// The neighbours the workers forwarded to since the control thread last
/// looked: one bit per hash of (interface, address), shared by every
/// worker. A worker sets a bit only when it is clear (a read otherwise,
/// so the cache line stays shared); the control thread clears the bits it
/// takes. A collision only makes an unused entry look used, which costs a
/// probe.
#[derive(Debug)]
pub struct UsedBits {
    words: Box<[AtomicU64]>,
}

impl Default for UsedBits {
    fn default() -> Self {
        UsedBits { words: (0..1usize << (USED_LOG2 - 6)).map(|_| AtomicU64::new(0)).collect() }
    }
}

/// A hash of a neighbour (interface and address), good in its top bits.
#[inline]
fn neighbour_hash(iface: u16, ip: IpAddr) -> u64 {
    let a = match ip {
        IpAddr::V4(v) => u64::from(u32::from(v)) | 1 << 40,
        IpAddr::V6(v) => {
            let x = v.to_bits();
            ((x >> 64) as u64).rotate_left(23) ^ x as u64
        }
    };
    (a ^ u64::from(iface) << 48).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// The neighbour solicitations every worker sent lately (shared by all,
/// like [`UsedBits`]): RFC 4861 s.7.2.5 has a solicited Neighbor
/// Advertisement for an address with no cache entry create one only when
/// it answers a solicitation (the entry is INCOMPLETE then); another one
/// "SHOULD be silently discarded". The answer may reach any worker (RSS),
/// so the record is shared: one slot per (interface, address) hash, the
/// time of the last solicitation and a tag of the hash. A collision at
/// most takes an advertisement for an answer.
#[derive(Debug)]
pub struct SolicitLog {
    slots: Box<[AtomicU64]>,
}

const SOLICIT_LOG_LOG2: u32 = 12;

/// How long after a solicitation an advertisement answers it: RFC 4861
/// s.10's MAX_MULTICAST_SOLICIT (3) x RETRANS_TIMER (1 s), the time an
/// INCOMPLETE entry waits.
pub const SOLICIT_ANSWER_WINDOW_NS: u64 = 3_000_000_000;

impl Default for SolicitLog {
    fn default() -> Self {
        SolicitLog { slots: (0..1usize << SOLICIT_LOG_LOG2).map(|_| AtomicU64::new(0)).collect() }
    }
}

impl SolicitLog {
    fn slot(iface: u16, ip: IpAddr) -> (usize, u64) {
        let h = neighbour_hash(iface, ip);
        ((h >> (64 - SOLICIT_LOG_LOG2)) as usize, (h >> 24) & 0xffff)
    }

    /// A solicitation for `ip` on `iface` went out at `now_ns`.
    pub fn record(&self, iface: u16, ip: IpAddr, now_ns: u64) {
        let (i, tag) = Self::slot(iface, ip);
        // Milliseconds, + 1 so that a slot in use is never 0.
        self.slots[i].store(((now_ns / 1_000_000 + 1) << 16) | tag, Ordering::Relaxed);
    }

    /// Was `ip` on `iface` solicited within [`SOLICIT_ANSWER_WINDOW_NS`]
    /// before `now_ns`?
    pub fn recent(&self, iface: u16, ip: IpAddr, now_ns: u64) -> bool {
        let (i, tag) = Self::slot(iface, ip);
        let v = self.slots[i].load(Ordering::Relaxed);
        if v == 0 || v & 0xffff != tag {
            return false;
        }
        let at_ms = (v >> 16) - 1;
        (now_ns / 1_000_000).saturating_sub(at_ms) <= SOLICIT_ANSWER_WINDOW_NS / 1_000_000
    }
}

impl UsedBits {
    /// The bit of a neighbour.
    #[inline]
    pub fn bit(iface: u16, ip: IpAddr) -> u32 {
        (neighbour_hash(iface, ip) >> (64 - USED_LOG2)) as u32
    }

    /// A worker forwarded to the neighbour of `bit`.
    #[inline(always)]
    pub fn mark(&self, bit: u32) {
        let w = &self.words[(bit >> 6) as usize & (self.words.len() - 1)];
        let m = 1u64 << (bit & 63);
        if w.load(Ordering::Relaxed) & m == 0 {
            w.fetch_or(m, Ordering::Relaxed);
        }
    }

    /// Clear the bits that are set, calling `f` with each.
    pub fn take(&self, f: impl FnMut(u32)) {
        self.take_masked(None, f)
    }

    /// Clear the bits that are set, calling `f` with each that is also set
    /// in `mask` (as many words as `self`), if given.
    fn take_masked(&self, mask: Option<&[u64]>, mut f: impl FnMut(u32)) {
        for (i, w) in self.words.iter().enumerate() {
            if w.load(Ordering::Relaxed) == 0 {
                continue;
            }
            let mut v = w.swap(0, Ordering::Relaxed) & mask.map_or(u64::MAX, |m| m[i]);
            while v != 0 {
                f((i as u32) << 6 | v.trailing_zeros());
                v &= v - 1;
            }
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
    /// Learned entries to delete: no answer to the probes.
    pub delete: Vec<(u16, IpAddr)>,
    /// Learned entries to delete: STALE and unused for `stale_ns`.
    pub expire: Vec<(u16, IpAddr)>,
    /// The failed gateways, sorted, when they changed in this tick.
    pub failed: Option<Vec<(u16, IpAddr)>>,
}

/// The gateways a tick needs to know (each sorted, as
/// [`crate::tables::Fib::ecmp_gateways`] and
/// [`crate::tables::Fib::gateways`] give them).
#[derive(Debug, Clone, Copy, Default)]
pub struct Gateways<'a> {
    /// Of ECMP routes: watched whether used or not.
    pub ecmp: &'a [(u16, IpAddr)],
    /// Of any route, and the End.X next hops of the SID table: never
    /// deleted for being unused.
    pub all: &'a [(u16, IpAddr)],
}

/// The detector: one entry per learned neighbour and per ECMP gateway
/// without an entry. A tick costs the entries that are due (a timing
/// wheel of deadlines), the neighbours used since the last tick and the
/// ECMP gateways, so a table of a million learned neighbours stays cheap
/// (`examples/nud_bench.rs`).
#[derive(Debug)]
pub struct Nud {
    cfg: NudConfig,
    map: HashMap<(u16, IpAddr), Entry>,
    /// (due, key); an item whose due differs from its entry's is stale.
    wheel: Wheel,
    /// The deadlines of STALE entries, in order (all `stale_ns` after the
    /// time they were set), kept apart from the wheel, which they would
    /// fill: a neighbour in use leaves STALE long before this deadline.
    gc: VecDeque<(u64, (u16, IpAddr))>,
    /// The STALE entries by their [`UsedBits`] bit.
    stale_by_bit: HashMap<u32, Vec<(u16, IpAddr)>>,
    /// The bits of `stale_by_bit`, so that a tick looks up only the used
    /// bits of STALE entries.
    stale_mask: Box<[u64]>,
    /// A tick's due items (kept for its allocation).
    due_now: Vec<(u64, (u16, IpAddr))>,
    used: Arc<UsedBits>,
    failed: Vec<(u16, IpAddr)>,
    next_sweep: u64,
    rng: u64,
}

/// log2 of a [`Wheel`] slot's width in ns (~67 ms, about the control
/// thread's step).
const WHEEL_SHIFT: u32 = 26;
/// Slots of a [`Wheel`]: one turn is ~69 s, longer than the deadlines of
/// the default timers.
const WHEEL_SLOTS: u64 = 1024;

/// Deadlines in a hashed timing wheel (Varghese and Lauck, 1987): an item
/// goes into the slot of its deadline modulo the turn, so adding one and
/// taking the due ones cost no ordering; an item a turn or more ahead
/// stays in its slot until its turn comes.
#[derive(Debug)]
struct Wheel {
    slots: Vec<Vec<(u64, (u16, IpAddr))>>,
    /// The slot (absolute: time >> WHEEL_SHIFT) of the last scan.
    cur: u64,
    len: usize,
}

impl Default for Wheel {
    fn default() -> Self {
        Wheel { slots: (0..WHEEL_SLOTS).map(|_| Vec::new()).collect(), cur: 0, len: 0 }
    }
}

impl Wheel {
    fn push(&mut self, due: u64, k: (u16, IpAddr)) {
        // A deadline already past goes into the slot scanned next.
        let s = (due >> WHEEL_SHIFT).max(self.cur);
        self.slots[(s % WHEEL_SLOTS) as usize].push((due, k));
        self.len += 1;
    }

    /// Move the items due by `now` to `out`.
    fn due(&mut self, now: u64, out: &mut Vec<(u64, (u16, IpAddr))>) {
        let end = now >> WHEEL_SHIFT;
        // Each slot once at most, however long since the last scan.
        let start = self.cur.max(end.saturating_sub(WHEEL_SLOTS - 1));
        for s in start..=end {
            let v = &mut self.slots[(s % WHEEL_SLOTS) as usize];
            let before = v.len();
            v.retain(|&(d, k)| {
                if d <= now {
                    out.push((d, k));
                    false
                } else {
                    true
                }
            });
            self.len -= before - v.len();
        }
        self.cur = self.cur.max(end);
    }
}

/// STALE deadlines a tick takes at most.
const GC_BATCH: usize = 8192;

/// With `stale_ns` = 0, how often an unused STALE entry is looked at.
const STALE_RECHECK_NS: u64 = 60_000_000_000;

/// How often [`Nud::tick`] may look for learned entries it does not watch.
const SWEEP_NS: u64 = 1_000_000_000;

impl Nud {
    /// A detector that learns which neighbours are used from `used`, the
    /// bits the workers set.
    pub fn new(mut cfg: NudConfig, seed: u64, used: Arc<UsedBits>) -> Nud {
        cfg.retrans_ns = cfg.retrans_ns.max(1);
        cfg.probes = cfg.probes.max(1);
        Nud { cfg, map: HashMap::new(), wheel: Wheel::default(), gc: VecDeque::new(), stale_by_bit: HashMap::new(), stale_mask: vec![0; 1 << (USED_LOG2 - 6)].into_boxed_slice(), due_now: Vec::new(), used, failed: Vec::new(), next_sweep: 0, rng: seed | 1 }
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

    /// DELAY_FIRST_PROBE_TIME: 5 s, or half the reachable time if shorter.
    fn delay(&self) -> u64 {
        5_000_000_000u64.min(self.cfg.reachable_ns / 2)
    }

    /// The gap after the `sent`th solicitation of a failed gateway: the
    /// retrans interval doubled per solicitation, at most `retry_max_ns`
    /// (RFC 7048 s.3, with a backoff multiple of 2), so a gateway that
    /// stays silent is asked less and less often.
    fn backoff(&self, sent: u32) -> u64 {
        let r = self.cfg.retrans_ns;
        r.saturating_mul(1 << sent.min(30)).min(self.cfg.retry_max_ns.max(r))
    }

    /// When an unused STALE entry entered now is looked at again: deleted
    /// then, or (`stale_ns` = 0, a route's gateway) looked at again later,
    /// which also lets go of one deleted or made static meanwhile.
    fn stale_due(&self, now: u64) -> u64 {
        now.saturating_add(if self.cfg.stale_ns == 0 { STALE_RECHECK_NS } else { self.cfg.stale_ns })
    }

    fn set(&mut self, k: (u16, IpAddr), state: NudState, due: u64, sent: u32) {
        let was = self.map.insert(k, Entry { state, due, sent }).map(|e| e.state);
        if was == Some(NudState::Stale) && state != NudState::Stale {
            self.unindex(k);
        } else if was != Some(NudState::Stale) && state == NudState::Stale {
            let b = UsedBits::bit(k.0, k.1);
            self.stale_by_bit.entry(b).or_default().push(k);
            self.stale_mask[(b >> 6) as usize] |= 1 << (b & 63);
        }
        if state == NudState::Stale {
            self.gc.push_back((due, k));
        } else {
            self.wheel.push(due, k);
        }
    }

    fn forget(&mut self, k: (u16, IpAddr)) {
        if self.map.remove(&k).is_some_and(|e| e.state == NudState::Stale) {
            self.unindex(k);
        }
    }

    fn unindex(&mut self, k: (u16, IpAddr)) {
        let b = UsedBits::bit(k.0, k.1);
        if let Some(v) = self.stale_by_bit.get_mut(&b) {
            v.retain(|x| *x != k);
            if v.is_empty() {
                self.stale_by_bit.remove(&b);
                self.stale_mask[(b >> 6) as usize] &= !(1 << (b & 63));
            }
        }
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

    /// A learned entry was created, or its MAC changed, by a packet that
    /// was not an answer to the router (an ARP request, an unsolicited
    /// NA): STALE whatever it was (RFC 4861 s.7.2.3, s.7.2.5; a probe of
    /// the old MAC stops), checked once it is used. Not for a packet that
    /// repeats the MAC the entry has: that changes nothing.
    pub fn stale(&mut self, iface: u16, ip: IpAddr, now: u64) {
        let due = self.stale_due(now);
        self.set((iface, ip), NudState::Stale, due, 0);
    }

    /// A Neighbor Advertisement with Override clear named another
    /// link-layer address (RFC 4861 s.7.2.5): a REACHABLE entry becomes
    /// STALE, "but do not update the entry in any other way"; in any other
    /// state the advertisement changes nothing.
    pub fn suspect(&mut self, iface: u16, ip: IpAddr, now: u64) {
        if self.state(iface, ip) == Some(NudState::Reachable) {
            self.stale(iface, ip, now);
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

    /// Advance to `now` over the table `n` and the route gateways `gws`.
    pub fn tick(&mut self, now: u64, n: &Neighbours, gws: Gateways) -> NudOut {
        let mut out = NudOut::default();
        let is_ecmp = |k: &(u16, IpAddr)| gws.ecmp.binary_search(k).is_ok();
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
        // STALE entries the workers used since the last tick: DELAY.
        let mut used = Vec::new();
        self.used.take_masked(Some(&self.stale_mask), |b| {
            if let Some(v) = self.stale_by_bit.get(&b) {
                used.extend_from_slice(v);
            }
        });
        let delay = now.saturating_add(self.delay());
        for k in used {
            self.set(k, NudState::Delay, delay, 0);
        }
        // The ECMP gateways: resolved ones are watched as used; ones
        // without an entry are solicited.
        for &k in gws.ecmp {
            let state = self.map.get(&k).map(|e| e.state);
            match (n.get(k.0, k.1), state) {
                (Some(e), Some(NudState::Incomplete | NudState::Failed)) if e.source == NeighSource::Learned => self.confirm(k.0, k.1, now),
                (Some(_), Some(NudState::Incomplete | NudState::Failed)) => self.forget(k),
                (Some(e), Some(NudState::Stale)) if e.source == NeighSource::Learned => self.set(k, NudState::Delay, delay, 0),
                (None, None | Some(NudState::Reachable | NudState::Stale | NudState::Delay | NudState::Probe)) => self.set(k, NudState::Incomplete, now, 0),
                _ => {}
            }
        }
        let (retrans, probes) = (self.cfg.retrans_ns, self.cfg.probes);
        let mut due_now = std::mem::take(&mut self.due_now);
        self.wheel.due(now, &mut due_now);
        // STALE deadlines: at most GC_BATCH a tick, the rest in the next
        // ones (a wave of expiries does not stall the control thread).
        for _ in 0..GC_BATCH {
            match self.gc.front() {
                Some(&(d, k)) if d <= now => {
                    self.gc.pop_front();
                    due_now.push((d, k));
                }
                _ => break,
            }
        }
        for (due, k) in due_now.drain(..) {
            let Some(e) = self.map.get(&k).copied() else { continue };
            if e.due != due {
                continue;
            }
            let entry = n.get(k.0, k.1);
            match e.state {
                NudState::Reachable | NudState::Stale | NudState::Delay | NudState::Probe if entry.is_none_or(|x| x.source != NeighSource::Learned) => {
                    // Deleted or made static since.
                    self.forget(k);
                }
                NudState::Incomplete | NudState::Failed if !is_ecmp(&k) => {
                    // No longer an ECMP gateway: a learned entry is
                    // watched as any other, else forgotten.
                    if entry.is_some_and(|x| x.source == NeighSource::Learned) {
                        self.confirm(k.0, k.1, now);
                    } else {
                        self.forget(k);
                    }
                }
                NudState::Reachable if !is_ecmp(&k) => {
                    let due = self.stale_due(now);
                    self.set(k, NudState::Stale, due, 0);
                }
                NudState::Stale if is_ecmp(&k) => self.set(k, NudState::Delay, delay, 0),
                NudState::Stale if self.cfg.stale_ns == 0 || gws.all.binary_search(&k).is_ok() => {
                    // Kept while unused: the gateway of a route (or
                    // every entry, stale_ns = 0).
                    let due = self.stale_due(now);
                    self.set(k, NudState::Stale, due, 0);
                }
                NudState::Stale => {
                    out.expire.push(k);
                    self.forget(k);
                }
                NudState::Reachable | NudState::Delay => {
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
                    if is_ecmp(&k) {
                        self.set(k, NudState::Failed, now.saturating_add(retrans), 0);
                    } else {
                        self.forget(k);
                    }
                }
                NudState::Incomplete => self.set(k, NudState::Failed, now.saturating_add(retrans), 0),
                NudState::Failed => {
                    out.probes.push(Probe { iface: k.0, target: k.1, mac: None });
                    let sent = e.sent.saturating_add(1);
                    self.set(k, NudState::Failed, now.saturating_add(self.backoff(sent)), sent);
                }
            }
        }
        // Failed gateways that are gateways no longer are forgotten.
        let gone: Vec<(u16, IpAddr)> = self.failed.iter().filter(|k| !is_ecmp(k)).copied().collect();
        for k in gone {
            if self.map.get(&k).is_some_and(|e| e.state == NudState::Failed) {
                self.forget(k);
            }
        }
        let mut failed: Vec<(u16, IpAddr)> = gws.ecmp.iter().filter(|k| self.map.get(k).is_some_and(|e| e.state == NudState::Failed)).copied().collect();
        failed.sort_unstable();
        if failed != self.failed {
            self.failed = failed.clone();
            out.failed = Some(failed);
        }
        self.due_now = due_now;
        // Stale items (entries set again before their deadline): rebuilt
        // when they outnumber the entries.
        if self.wheel.len > 2 * self.map.len() + 1024 {
            self.wheel = Wheel::default();
            self.wheel.cur = now >> WHEEL_SHIFT;
            for (k, e) in &self.map {
                if e.state != NudState::Stale {
                    self.wheel.push(e.due, *k);
                }
            }
        }
        if self.gc.len() > 2 * self.map.len() + 1024 {
            let mut v: Vec<(u64, (u16, IpAddr))> = self.map.iter().filter(|(_, e)| e.state == NudState::Stale).map(|(k, e)| (e.due, *k)).collect();
            v.sort_unstable();
            self.gc = v.into();
        }
        out.probes.sort_unstable_by_key(|p| (p.iface, p.target));
        out.delete.sort_unstable();
        out.expire.sort_unstable();
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

    fn ecmp(g: &[(u16, IpAddr)]) -> Gateways<'_> {
        Gateways { ecmp: g, all: g }
    }

    fn cfg() -> NudConfig {
        NudConfig { reachable_ns: 10 * S, retrans_ns: S, probes: 3, stale_ns: 60 * S, retry_max_ns: 8 * S }
    }

    #[test]
    fn reachable_time_is_randomised_between_half_and_one_and_a_half() {
        let mut n = Nud::new(cfg(), 7, Arc::default());
        let v: Vec<u64> = (0..10_000).map(|_| n.reachable_for()).collect();
        assert!(v.iter().all(|&t| (5 * S..=15 * S).contains(&t)));
        let mean = v.iter().sum::<u64>() / v.len() as u64;
        assert!((9 * S..11 * S).contains(&mean), "{mean}");
        assert!(v.iter().filter(|&&t| t < 6 * S).count() > 500 && v.iter().filter(|&&t| t > 14 * S).count() > 500, "spread over the range");
    }

    #[test]
    fn a_neighbour_in_use_is_probed_unicast_and_deleted_without_an_answer() {
        let mut t = Neighbours::default();
        let mac = [2, 0, 0, 0, 0, 9];
        let k = (1, ip("10.1.0.9"));
        t.learn(k.0, k.1, mac, NeighSource::Learned);
        t.learn(1, ip("10.1.0.8"), [2, 0, 0, 0, 0, 8], NeighSource::Static);
        let used = Arc::new(UsedBits::default());
        let mut n = Nud::new(cfg(), 1, used.clone());
        let o = n.tick(0, &t, Gateways::default());
        assert_eq!(o, NudOut::default(), "reachable at first");
        assert_eq!(n.state(k.0, k.1), Some(NudState::Reachable));
        assert_eq!(n.state(1, ip("10.1.0.8")), None, "static entries are not watched");
        // Nothing before 5 s (the least ReachableTime); STALE by 15 s,
        // unprobed.
        assert_eq!(n.tick(5 * S - 1, &t, Gateways::default()), NudOut::default());
        let mut now = 5 * S;
        while n.state(k.0, k.1) == Some(NudState::Reachable) {
            assert!(now <= 15 * S);
            assert_eq!(n.tick(now, &t, Gateways::default()), NudOut::default());
            now += S / 10;
        }
        assert_eq!(n.state(k.0, k.1), Some(NudState::Stale));
        // Unused: never probed.
        for _ in 0..200 {
            assert_eq!(n.tick(now, &t, Gateways::default()), NudOut::default());
            now += S / 10;
        }
        assert_eq!(n.state(k.0, k.1), Some(NudState::Stale));
        // A worker forwards to it: DELAY, the first probe 5 s later,
        // unicast to the MAC it has.
        used.mark(UsedBits::bit(k.0, k.1));
        assert_eq!(n.tick(now, &t, Gateways::default()), NudOut::default());
        assert_eq!(n.state(k.0, k.1), Some(NudState::Delay));
        assert!(n.tick(now + 5 * S - 1, &t, Gateways::default()).probes.is_empty());
        now += 5 * S;
        assert_eq!(n.tick(now, &t, Gateways::default()).probes, [Probe { iface: 1, target: k.1, mac: Some(mac) }]);
        assert_eq!(n.state(k.0, k.1), Some(NudState::Probe));
        // Two more a second apart, then the entry is deleted.
        assert!(n.tick(now, &t, Gateways::default()).probes.is_empty(), "one per retrans interval");
        assert_eq!(n.tick(now + S, &t, Gateways::default()).probes.len(), 1);
        assert_eq!(n.tick(now + 2 * S, &t, Gateways::default()).probes.len(), 1);
        let o = n.tick(now + 3 * S, &t, Gateways::default());
        assert_eq!(o.delete, [k]);
        assert!(o.probes.is_empty() && o.expire.is_empty() && o.failed.is_none(), "not a gateway: not failed");
        t.remove(k.0, k.1);
        assert_eq!(n.state(k.0, k.1), None);
        assert_eq!(n.tick(now + 4 * S, &t, Gateways::default()), NudOut::default());
    }

    /// RFC 4861 s.7.2.5 (a): an NA with Override clear and another
    /// link-layer address makes a REACHABLE entry STALE (so it is probed
    /// once used); (b) in any other state it changes nothing.
    #[test]
    fn a_suspect_advertisement_makes_only_a_reachable_entry_stale() {
        let mut t = Neighbours::default();
        let k = (0, ip("2001:db8::9"));
        t.learn(k.0, k.1, [2, 0, 0, 0, 0, 9], NeighSource::Learned);
        let used = Arc::new(UsedBits::default());
        let mut n = Nud::new(cfg(), 3, used.clone());
        n.confirm(k.0, k.1, 0);
        n.suspect(k.0, k.1, S);
        assert_eq!(n.state(k.0, k.1), Some(NudState::Stale));
        // Used now: DELAY, then PROBE, as any STALE entry.
        used.mark(UsedBits::bit(k.0, k.1));
        n.tick(2 * S, &t, Gateways::default());
        assert_eq!(n.state(k.0, k.1), Some(NudState::Delay));
        n.suspect(k.0, k.1, 3 * S);
        assert_eq!(n.state(k.0, k.1), Some(NudState::Delay), "(b): not REACHABLE, unchanged");
        n.suspect(1, ip("2001:db8::10"), 3 * S);
        assert_eq!(n.state(1, ip("2001:db8::10")), None, "an address not watched stays so");
    }

    #[test]
    fn a_confirmation_keeps_the_entry() {
        let mut t = Neighbours::default();
        let k = (0, ip("2001:db8::9"));
        t.learn(k.0, k.1, [2, 0, 0, 0, 0, 9], NeighSource::Learned);
        let used = Arc::new(UsedBits::default());
        let mut n = Nud::new(cfg(), 3, used.clone());
        n.tick(0, &t, Gateways::default());
        let mut now = 0;
        let mut probed = 0;
        // 100 s in use, with an answer to the second probe of every round:
        // never deleted; a round is ReachableTime (5..15 s), the delay
        // (5 s) and a probe interval (1 s).
        while now < 100 * S {
            used.mark(UsedBits::bit(k.0, k.1));
            let o = n.tick(now, &t, Gateways::default());
            assert!(o.delete.is_empty() && o.expire.is_empty());
            for _ in &o.probes {
                probed += 1;
                if n.state(k.0, k.1) == Some(NudState::Probe) && probed % 2 == 0 {
                    n.confirm(k.0, k.1, now);
                }
            }
            now += S / 10;
        }
        assert!((8..=20).contains(&probed), "{probed}");
        assert!(n.state(k.0, k.1).is_some());
    }

    #[test]
    fn an_ecmp_gateway_fails_without_an_answer_and_comes_back() {
        let gw = (2, ip("10.2.0.2"));
        let mut t = Neighbours::default();
        let mut n = Nud::new(cfg(), 5, Arc::default());
        // Unresolved: three broadcast solicitations a second apart.
        for k in 0..3 {
            let o = n.tick(k * S, &t, ecmp(&[gw]));
            assert_eq!(o.probes, [Probe { iface: 2, target: gw.1, mac: None }], "{k}");
            assert!(o.failed.is_none());
            assert_eq!(n.state(gw.0, gw.1), Some(NudState::Incomplete));
        }
        let o = n.tick(3 * S, &t, ecmp(&[gw]));
        assert_eq!(o.failed, Some(vec![gw]));
        assert_eq!(n.failed(), &[gw]);
        // Failed: solicited again after 1 s, then the gap doubles up to
        // retry_max (8 s here; RFC 7048).
        let mut asked = Vec::new();
        for k in 31..=400 {
            let o = n.tick(k * S / 10, &t, ecmp(&[gw]));
            assert!(o.failed.is_none() && o.probes.iter().all(|p| p.mac.is_none()));
            asked.extend(o.probes.iter().map(|_| k / 10));
        }
        assert_eq!(asked, [4, 6, 10, 18, 26, 34]);
        // It answers: learned, reachable, no longer failed.
        t.learn(2, gw.1, [2, 0, 0, 0, 2, 2], NeighSource::Learned);
        let o = n.tick(40 * S, &t, ecmp(&[gw]));
        assert_eq!(o.failed, Some(vec![]));
        assert_eq!(n.state(gw.0, gw.1), Some(NudState::Reachable));
        // Later its unicast probes go unanswered: deleted and failed at once.
        let mut now = 40 * S;
        let fail = loop {
            now += S / 10;
            assert!(now < 80 * S);
            let o = n.tick(now, &t, ecmp(&[gw]));
            if !o.delete.is_empty() {
                break o;
            }
        };
        assert_eq!(fail.delete, [gw]);
        assert_eq!(fail.failed, Some(vec![gw]));
        t.remove(gw.0, gw.1);
        assert_eq!(n.state(gw.0, gw.1), Some(NudState::Failed));
        // No longer a gateway (route removed): forgotten.
        let o = n.tick(now + 1, &t, Gateways::default());
        assert_eq!(o.failed, Some(vec![]));
        assert_eq!(n.state(gw.0, gw.1), None);
    }

    #[test]
    fn stale_deadlines_do_not_pile_up() {
        let mut t = Neighbours::default();
        for k in 0..100u32 {
            t.learn(0, IpAddr::V4(k.into()), [2, 0, 0, 0, 0, 1], NeighSource::Learned);
        }
        let mut n = Nud::new(cfg(), 11, Arc::default());
        n.tick(0, &t, Gateways::default());
        // Every entry confirmed 100 times (each pushes a deadline).
        for r in 0..100 {
            for k in 0..100u32 {
                n.confirm(0, IpAddr::V4(k.into()), r);
            }
        }
        assert!(n.wheel.len >= 10_000);
        n.tick(100, &t, Gateways::default());
        assert!(n.wheel.len <= 2 * 100 + 1024, "{}", n.wheel.len);
        assert_eq!(n.map.len(), 100);
        // In use, probed after the latest deadline only (STALE at 5 s at
        // the earliest, then the 5 s delay), and never two of one entry
        // less than the retrans interval apart.
        let mut at: HashMap<IpAddr, Vec<u64>> = HashMap::new();
        for s in 1..=260 {
            for k in 0..100u32 {
                n.used.mark(UsedBits::bit(0, IpAddr::V4(k.into())));
            }
            for p in n.tick(s * S / 10, &t, Gateways::default()).probes {
                at.entry(p.target).or_default().push(s * S / 10);
            }
        }
        assert_eq!(at.len(), 100, "each probed by 26 s");
        for (ip, v) in &at {
            assert!(v[0] >= 10 * S && v.windows(2).all(|w| w[1] - w[0] >= S), "{ip}: {v:?}");
        }
    }

    #[test]
    fn a_gateway_that_stops_being_one_while_resolving_is_watched_as_a_neighbour() {
        let gw = (2, ip("10.2.0.2"));
        let mut t = Neighbours::default();
        let mut n = Nud::new(cfg(), 13, Arc::default());
        assert_eq!(n.tick(0, &t, ecmp(&[gw])).probes.len(), 1);
        // Its route goes; traffic over another route resolves it.
        t.learn(2, gw.1, [2, 0, 0, 0, 2, 2], NeighSource::Learned);
        let o = n.tick(S, &t, Gateways::default());
        assert!(o.probes.is_empty() && o.failed.is_none(), "{o:?}");
        assert_eq!(n.state(gw.0, gw.1), Some(NudState::Reachable));
        assert_eq!(n.unresolved().count(), 0);
        // Without an entry it is simply forgotten.
        let mut n = Nud::new(cfg(), 13, Arc::default());
        n.tick(0, &Neighbours::default(), ecmp(&[gw]));
        assert!(n.tick(S, &Neighbours::default(), Gateways::default()).probes.is_empty());
        assert_eq!(n.state(gw.0, gw.1), None);
    }

    #[test]
    fn probes_a_worker_could_not_take_are_sent_again() {
        let gw = (2, ip("10.2.0.2"));
        let t = Neighbours::default();
        let mut n = Nud::new(cfg(), 17, Arc::default());
        for k in 0..10 {
            let o = n.tick(k * S, &t, ecmp(&[gw]));
            assert_eq!(o.probes.len(), 1);
            n.unsent(&o.probes, k * S);
            assert!(o.failed.is_none(), "never failed while its solicitations are not sent");
        }
        // Once sent: three, then failed.
        for k in 10..13 {
            assert_eq!(n.tick(k * S, &t, ecmp(&[gw])).probes.len(), 1);
        }
        assert_eq!(n.tick(13 * S, &t, ecmp(&[gw])).failed, Some(vec![gw]));
    }

    #[test]
    fn an_entry_learned_from_a_request_is_stale_checked_once_used_and_expires_unused() {
        let mut t = Neighbours::default();
        let k = (1, ip("10.1.0.50"));
        let used = Arc::new(UsedBits::default());
        let mut n = Nud::new(cfg(), 19, used.clone());
        n.tick(0, &t, Gateways::default());
        // Learned from its ARP request at 1 s: STALE, and while unused
        // nothing is sent to it.
        t.learn(k.0, k.1, [2, 0, 0, 0, 0, 5], NeighSource::Learned);
        n.stale(k.0, k.1, S);
        assert_eq!(n.state(k.0, k.1), Some(NudState::Stale));
        for s in 1..30 {
            assert_eq!(n.tick(s * S, &t, Gateways::default()), NudOut::default());
        }
        // Used at 30 s: probed at 35 s.
        used.mark(UsedBits::bit(k.0, k.1));
        assert!(n.tick(30 * S, &t, Gateways::default()).probes.is_empty());
        assert!(n.tick(35 * S - 1, &t, Gateways::default()).probes.is_empty());
        assert_eq!(n.tick(35 * S, &t, Gateways::default()).probes, [Probe { iface: 1, target: k.1, mac: Some([2, 0, 0, 0, 0, 5]) }]);
        // A new MAC while probed (an ARP request, an unsolicited NA):
        // STALE, the probes of the old MAC stop.
        n.stale(k.0, k.1, 35 * S);
        assert_eq!(n.state(k.0, k.1), Some(NudState::Stale));
        assert!(n.tick(36 * S, &t, Gateways::default()).probes.is_empty());
        // An answer makes it reachable.
        n.confirm(k.0, k.1, 36 * S);
        assert_eq!(n.state(k.0, k.1), Some(NudState::Reachable));
        // A new MAC at 36 s: STALE again; not used for 60 s (`stale_ns`),
        // it is deleted, unprobed.
        n.stale(k.0, k.1, 36 * S);
        assert_eq!(n.state(k.0, k.1), Some(NudState::Stale));
        let mut gone = None;
        for s in 37..=110 {
            let o = n.tick(s * S, &t, Gateways::default());
            assert!(o.delete.is_empty() && o.probes.is_empty() && o.failed.is_none(), "{s}: {o:?}");
            if !o.expire.is_empty() {
                assert_eq!((o.expire, gone), (vec![k], None), "{s}");
                gone = Some(s);
                t.remove(k.0, k.1);
            }
        }
        assert_eq!(gone, Some(96));
        assert_eq!(n.state(k.0, k.1), None);
        assert!(n.stale_by_bit.is_empty() && n.stale_mask.iter().all(|&w| w == 0));
        // The delay is half the reachable time when that is shorter than 5 s.
        let mut n = Nud::new(NudConfig { reachable_ns: 2 * S, ..cfg() }, 19, used.clone());
        t.learn(k.0, k.1, [2, 0, 0, 0, 0, 5], NeighSource::Learned);
        n.stale(k.0, k.1, 0);
        used.mark(UsedBits::bit(k.0, k.1));
        assert!(n.tick(0, &t, Gateways::default()).probes.is_empty());
        assert!(n.tick(S - 1, &t, Gateways::default()).probes.is_empty());
        assert_eq!(n.tick(S, &t, Gateways::default()).probes.len(), 1);
    }

    #[test]
    fn unused_route_gateways_stay_and_ecmp_gateways_are_probed_unused() {
        let gw = (1, ip("10.1.0.1"));
        let host = (1, ip("10.1.0.7"));
        let egw = (1, ip("10.1.0.2"));
        let mut t = Neighbours::default();
        for (k, m) in [(gw, 1), (host, 7), (egw, 2)] {
            t.learn(k.0, k.1, [2, 0, 0, 0, 0, m], NeighSource::Learned);
        }
        let all = [gw, egw];
        let g = Gateways { ecmp: &[egw], all: &all };
        let mut n = Nud::new(cfg(), 23, Arc::default());
        for k in [gw, host, egw] {
            n.stale(k.0, k.1, 0);
        }
        // The ECMP gateway, answering: probed after the delay, then every
        // 5..15 s (REACHABLE straight to PROBE), though nobody uses it.
        let mut egw_probed = Vec::new();
        let mut expired = Vec::new();
        for s in 0..=200 {
            let o = n.tick(s * S, &t, g);
            assert!(o.delete.is_empty() && o.failed.is_none(), "{s}: {o:?}");
            for p in &o.probes {
                assert_eq!(p.target, egw.1, "only the ECMP gateway is probed");
                egw_probed.push(s);
                n.confirm(egw.0, egw.1, s * S);
            }
            expired.extend(o.expire.iter().map(|k| (s, *k)));
            for k in &o.expire {
                t.remove(k.0, k.1);
            }
        }
        assert_eq!(egw_probed[0], 5, "after the delay");
        assert!(egw_probed.windows(2).all(|w| (5..=16).contains(&(w[1] - w[0]))), "{egw_probed:?}");
        assert!(egw_probed.len() >= 13, "{egw_probed:?}");
        // The host goes after 60 s unused; a single route's gateway stays.
        assert_eq!(expired, [(60, host)]);
        assert_eq!(n.state(gw.0, gw.1), Some(NudState::Stale));
        // stale_ns = 0: unused entries are kept; one the operator deletes
        // is let go when next looked at (every 60 s).
        let mut n = Nud::new(NudConfig { stale_ns: 0, ..cfg() }, 23, Arc::default());
        t.learn(host.0, host.1, [2, 0, 0, 0, 0, 7], NeighSource::Learned);
        n.stale(host.0, host.1, 0);
        for s in 0..=200 {
            assert_eq!(n.tick(s * S, &t, Gateways::default()), NudOut::default());
        }
        assert_eq!(n.state(host.0, host.1), Some(NudState::Stale));
        t.remove(host.0, host.1);
        for s in 201..=270 {
            assert_eq!(n.tick(s * S, &t, Gateways::default()), NudOut::default());
        }
        assert_eq!(n.state(host.0, host.1), None);
        assert!(!n.stale_by_bit.values().flatten().any(|x| *x == host));
    }

    #[test]
    fn static_gateways_and_operator_changes() {
        let gw = (1, ip("10.1.0.2"));
        let mut t = Neighbours::default();
        t.learn(1, gw.1, [2, 0, 0, 0, 1, 2], NeighSource::Static);
        let mut n = Nud::new(cfg(), 9, Arc::default());
        for k in 0..100 {
            assert_eq!(n.tick(k * S, &t, ecmp(&[gw])), NudOut::default(), "a static gateway is never probed");
        }
        // The operator deletes it: unresolved, solicited.
        t.remove(gw.0, gw.1);
        assert_eq!(n.tick(100 * S, &t, ecmp(&[gw])).probes.len(), 1);
        // A learned entry replaced by a static one is no longer watched.
        t.learn(1, gw.1, [2, 0, 0, 0, 1, 3], NeighSource::Learned);
        n.tick(101 * S, &t, ecmp(&[gw]));
        assert_eq!(n.state(gw.0, gw.1), Some(NudState::Reachable));
        t.learn(1, gw.1, [2, 0, 0, 0, 1, 4], NeighSource::Static);
        // Let go when its deadline comes (at most 1.5 x 10 s), unprobed.
        for k in 102..120 {
            assert!(n.tick(k * S, &t, ecmp(&[gw])).probes.is_empty());
        }
        assert_eq!(n.state(gw.0, gw.1), None);
    }
}
