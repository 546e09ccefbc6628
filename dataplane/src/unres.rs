//! Packets waiting for their next hop's link-layer address.
//!
//! A packet whose neighbour is not resolved yet is held, not dropped, while
//! the worker asks for the address (ARP request / Neighbor Solicitation),
//! as a host's or Linux's neighbour layer does (its per-neighbour
//! `unres_qlen_bytes` queue; RFC 4861 s.7.2.2 "SHOULD retain a small queue
//! of packets waiting for address resolution"). For RoCEv2 this matters:
//! a dropped first packet costs the sender a retransmission timeout or a
//! go-back-N round trip.
//!
//! The pipeline builds the frame completely, with a zero destination MAC
//! in place of the neighbour's ([`HOLD_MAC`]), and names the neighbour it
//! waits for; the worker parks it here. When the address is known (an
//! answer this worker saw, or a table from the control thread) the held
//! frames get their destination MAC and leave in arrival order. A frame
//! that waited `timeout_ns` is dropped (`neighbour-timeout`). When a
//! neighbour already has `per_neighbour` frames waiting, the new one takes
//! the place of its oldest, which is dropped (RFC 4861 s.7.2.2: "the new
//! arrival SHOULD replace the oldest entry"; RFC 1122 s.2.3.2.2 keeps the
//! latest: a retransmission is worth more than what it repeats); when
//! `total` mbufs wait, the new frame is dropped at once. Either drop is
//! `neighbour-queue-full`, so a scan of unresolvable addresses cannot take
//! the mempool.
//!
//! No allocation on the packet path: the queue and the per-neighbour counts
//! have their capacity from the start.

use crate::tables::{KeyedMap, MacAddr};
use std::collections::VecDeque;
use std::net::IpAddr;

/// The destination MAC of a frame built for a neighbour not resolved yet
/// (never a valid destination: IEEE 802 has no all-zeros station address).
pub const HOLD_MAC: MacAddr = [0; 6];

/// How often the held frames are checked for timeouts and asked for
/// again (a table change or a learning is acted on at once).
pub const WALK_NS: u64 = 50_000_000;

/// (interface, neighbour address).
pub type Key = (u16, IpAddr);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HoldConfig {
    /// Most frames waiting for one neighbour; 0: no holding (a miss drops).
    pub per_neighbour: u32,
    /// Most mbufs waiting in one worker (a frame is one, a chained one,
    /// such as a zero-copy End.MT replica, its segments).
    pub total: usize,
    /// How long a frame waits for its neighbour.
    pub timeout_ns: u64,
}

impl HoldConfig {
    /// Linux's time for an address that does not answer (3 solicitations
    /// 1 s apart), 64 frames a neighbour, 1024 a worker.
    pub const DEFAULT: HoldConfig = HoldConfig { per_neighbour: 64, total: 1024, timeout_ns: 3_000_000_000 };
    pub const OFF: HoldConfig = HoldConfig { per_neighbour: 0, total: 0, timeout_ns: 0 };
}

/// One waiting frame.
#[derive(Debug)]
pub struct Held<T> {
    pub key: Key,
    pub port: u16,
    /// Leaves ahead of queued data (a reply or notification).
    pub priority: bool,
    pub since: u64,
    /// Mbufs it takes.
    pub weight: u16,
    pub item: T,
}

/// What a walk decided for a frame.
#[derive(Debug)]
pub enum Outcome<T> {
    /// The neighbour is known: this MAC.
    Release(Held<T>, MacAddr),
    /// It waited `timeout_ns`.
    Expire(Held<T>),
}

/// Why a frame could not be held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Holding is off.
    Off,
    /// Its neighbour has `per_neighbour` frames waiting, or the worker `total`.
    Full,
}

pub struct HeldFrames<T> {
    cfg: HoldConfig,
    q: VecDeque<Held<T>>,
    per_key: KeyedMap<Key, u32>,
    /// Mbufs held (the weights of the frames in `q`).
    mbufs: usize,
    /// The neighbour epoch ([`crate::pipeline::Pipeline::neighbour_epoch`])
    /// of the last walk, and when the next one is due regardless.
    seen_epoch: u64,
    next_walk: u64,
}

impl<T> HeldFrames<T> {
    pub fn new(cfg: HoldConfig) -> Self {
        let total = if cfg.per_neighbour == 0 { 0 } else { cfg.total };
        let mut per_key = KeyedMap::default();
        // Room to spare: removals leave tombstones, and a table that is
        // full of them may grow instead of rehashing in place.
        per_key.reserve(2 * total);
        HeldFrames { cfg, q: VecDeque::with_capacity(total), per_key, mbufs: 0, seen_epoch: 0, next_walk: 0 }
    }

    pub fn enabled(&self) -> bool {
        self.cfg.per_neighbour > 0 && self.cfg.total > 0
    }

    pub fn len(&self) -> usize {
        self.q.len()
    }

    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }

    /// The neighbours frames wait for, and how many each.
    pub fn neighbours(&self) -> impl Iterator<Item = (Key, u32)> + '_ {
        self.per_key.iter().map(|(k, n)| (*k, *n))
    }

    /// Frames waiting for `key`.
    pub fn waiting(&self, key: &Key) -> u32 {
        self.per_key.get(key).copied().unwrap_or(0)
    }

    /// Mbufs held.
    pub fn mbufs(&self) -> usize {
        self.mbufs
    }

    /// Park `item` (`weight` mbufs, at least 1) until `key` is resolved;
    /// gives it back when refused. With `per_neighbour` frames waiting
    /// for `key` already, it replaces the oldest of them, which is
    /// returned (`Ok(Some(..))`) to be dropped.
    pub fn hold(&mut self, key: Key, port: u16, priority: bool, now: u64, weight: u16, item: T) -> Result<Option<T>, (T, Refused)> {
        if !self.enabled() {
            return Err((item, Refused::Off));
        }
        let weight = weight.max(1);
        let n = self.waiting(&key);
        if n >= self.cfg.per_neighbour {
            // The oldest of the neighbour's frames: walks keep arrival
            // order, so the first in the queue.
            let Some(i) = self.q.iter().position(|h| h.key == key) else { return Err((item, Refused::Full)) };
            if self.mbufs - usize::from(self.q[i].weight) + usize::from(weight) > self.cfg.total {
                return Err((item, Refused::Full));
            }
            let Some(old) = self.q.remove(i) else { return Err((item, Refused::Full)) };
            self.mbufs = self.mbufs - usize::from(old.weight) + usize::from(weight);
            self.q.push_back(Held { key, port, priority, since: now, weight, item });
            return Ok(Some(old.item));
        }
        if self.mbufs + usize::from(weight) > self.cfg.total {
            return Err((item, Refused::Full));
        }
        self.per_key.insert(key, n + 1);
        if self.q.is_empty() {
            self.next_walk = now.saturating_add(WALK_NS);
        }
        self.mbufs += usize::from(weight);
        self.q.push_back(Held { key, port, priority, since: now, weight, item });
        Ok(None)
    }

    /// A walk is due: the neighbours changed since the last one, or
    /// [`WALK_NS`] passed.
    #[inline]
    pub fn due(&self, epoch: u64, now: u64) -> bool {
        !self.q.is_empty() && (epoch != self.seen_epoch || now >= self.next_walk)
    }

    /// Every held frame in arrival order: released when `lookup` knows its
    /// neighbour, expired when it waited the timeout, else kept (and
    /// `still` is called with its key, for another solicitation).
    pub fn walk(&mut self, epoch: u64, now: u64, mut lookup: impl FnMut(Key) -> Option<MacAddr>, mut still: impl FnMut(Key), mut out: impl FnMut(Outcome<T>)) {
        self.seen_epoch = epoch;
        self.next_walk = now.saturating_add(WALK_NS);
        for _ in 0..self.q.len() {
            let Some(h) = self.q.pop_front() else { break };
            let outcome = if let Some(mac) = lookup(h.key) {
                Outcome::Release(h, mac)
            } else if now.saturating_sub(h.since) >= self.cfg.timeout_ns {
                Outcome::Expire(h)
            } else {
                still(h.key);
                self.q.push_back(h);
                continue;
            };
            let (key, weight) = match &outcome {
                Outcome::Release(h, _) | Outcome::Expire(h) => (h.key, h.weight),
            };
            self.mbufs -= usize::from(weight);
            match self.per_key.get(&key).copied() {
                Some(n) if n > 1 => {
                    self.per_key.insert(key, n - 1);
                }
                _ => {
                    self.per_key.remove(&key);
                }
            }
            out(outcome);
        }
    }

    /// Everything still held (shutdown).
    pub fn drain(&mut self) -> impl Iterator<Item = T> + '_ {
        self.per_key.clear();
        self.mbufs = 0;
        self.q.drain(..).map(|h| h.item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    const MS: u64 = 1_000_000;

    fn k(last: u8) -> Key {
        (1, IpAddr::V4(Ipv4Addr::new(10, 0, 2, last)))
    }

    #[test]
    fn released_in_arrival_order_when_the_neighbour_is_known() {
        let mut h = HeldFrames::new(HoldConfig { per_neighbour: 4, total: 16, timeout_ns: 3000 * MS });
        for i in 0..3u32 {
            h.hold(k(7), 2, false, i as u64 * MS, 1, i).unwrap();
        }
        h.hold(k(8), 2, true, 5 * MS, 1, 100).unwrap();
        assert_eq!((h.waiting(&k(7)), h.waiting(&k(8)), h.len()), (3, 1, 4));
        // Nothing changed, no time passed: no walk due.
        assert!(!h.due(0, 10 * MS));
        // 10.0.2.7 learned: its frames go, in order, with its MAC; .8 stays.
        assert!(h.due(1, 10 * MS));
        let mut out = Vec::new();
        let mut asked = Vec::new();
        h.walk(1, 10 * MS, |key| (key == k(7)).then_some([2, 0, 0, 0, 2, 7]), |key| asked.push(key), |o| out.push(o));
        let got: Vec<(u32, MacAddr)> = out
            .iter()
            .map(|o| match o {
                Outcome::Release(h, m) => (h.item, *m),
                Outcome::Expire(_) => panic!("expired"),
            })
            .collect();
        assert_eq!(got, vec![(0, [2, 0, 0, 0, 2, 7]), (1, [2, 0, 0, 0, 2, 7]), (2, [2, 0, 0, 0, 2, 7])]);
        assert_eq!(asked, vec![k(8)]);
        assert_eq!((h.waiting(&k(7)), h.waiting(&k(8)), h.len()), (0, 1, 1));
        assert!(!h.due(1, 10 * MS));
        assert!(h.due(1, 10 * MS + WALK_NS));
    }

    #[test]
    fn limits_per_neighbour_and_per_worker() {
        let mut h = HeldFrames::new(HoldConfig { per_neighbour: 2, total: 3, timeout_ns: 3000 * MS });
        assert_eq!(h.hold(k(1), 0, false, 0, 1, 1).unwrap(), None);
        assert_eq!(h.hold(k(1), 0, false, 0, 1, 2).unwrap(), None);
        assert_eq!(h.hold(k(2), 0, false, 0, 1, 4).unwrap(), None);
        // k(1)'s queue is full: the new frame replaces its oldest (RFC 4861
        // s.7.2.2), which comes back to be dropped; the others stay.
        assert_eq!(h.hold(k(1), 0, false, 0, 1, 3).unwrap(), Some(1));
        assert_eq!((h.len(), h.waiting(&k(1)), h.mbufs()), (3, 2, 3));
        // The worker's total is reached: a new neighbour's frame is refused.
        assert_eq!(h.hold(k(3), 0, false, 0, 1, 5).unwrap_err(), (5, Refused::Full));
        let off: HeldFrames<u32> = HeldFrames::new(HoldConfig::OFF);
        let mut off = off;
        assert_eq!(off.hold(k(1), 0, false, 0, 1, 9).unwrap_err(), (9, Refused::Off));
        assert_eq!(h.drain().collect::<Vec<_>>(), vec![2, 4, 3]);
        assert_eq!((h.len(), h.waiting(&k(1)), h.mbufs()), (0, 0, 0));
    }

    /// The worker's limit is in mbufs: a chained frame (a zero-copy End.MT
    /// replica: header, payload reference, ICRC) counts its segments.
    #[test]
    fn the_worker_limit_counts_mbufs() {
        let mut h = HeldFrames::new(HoldConfig { per_neighbour: 8, total: 8, timeout_ns: 3000 * MS });
        assert!(h.hold(k(1), 0, false, 0, 3, 1).is_ok());
        assert!(h.hold(k(2), 0, false, 0, 3, 2).is_ok());
        assert!(h.hold(k(3), 0, false, 0, 1, 3).is_ok());
        assert_eq!(h.hold(k(3), 0, false, 0, 3, 4).unwrap_err(), (4, Refused::Full));
        assert!(h.hold(k(3), 0, false, 0, 1, 5).is_ok());
        assert_eq!((h.len(), h.mbufs()), (4, 8));
        assert_eq!(h.hold(k(4), 0, false, 0, 1, 6).unwrap_err(), (6, Refused::Full));
        let mut gone = Vec::new();
        h.walk(1, MS, |key| (key == k(2)).then_some([2, 0, 0, 0, 0, 2]), |_| {}, |o| {
            if let Outcome::Release(x, _) = o {
                gone.push(x.item)
            }
        });
        assert_eq!((gone, h.mbufs()), (vec![2], 5));
        assert!(h.hold(k(4), 0, false, MS, 3, 7).is_ok());
        // A replacement that would take the worker past its total is
        // refused, and the oldest stays.
        let mut h = HeldFrames::new(HoldConfig { per_neighbour: 1, total: 2, timeout_ns: 3000 * MS });
        assert_eq!(h.hold(k(1), 0, false, 0, 1, 1).unwrap(), None);
        assert_eq!(h.hold(k(1), 0, false, 0, 3, 2).unwrap_err(), (2, Refused::Full));
        assert_eq!(h.hold(k(1), 0, false, 0, 2, 3).unwrap(), Some(1));
        assert_eq!((h.len(), h.mbufs()), (1, 2));
    }

    #[test]
    fn expire_after_the_timeout_and_free_room() {
        let mut h = HeldFrames::new(HoldConfig { per_neighbour: 2, total: 8, timeout_ns: 3000 * MS });
        h.hold(k(1), 0, false, 0, 1, 1).unwrap();
        h.hold(k(1), 0, false, 1000 * MS, 1, 2).unwrap();
        let mut expired = Vec::new();
        let mut walk = |h: &mut HeldFrames<u32>, now: u64| {
            h.walk(0, now, |_| None, |_| {}, |o| match o {
                Outcome::Expire(x) => expired.push((x.item, now)),
                Outcome::Release(..) => panic!("released"),
            })
        };
        walk(&mut h, 2999 * MS);
        walk(&mut h, 3000 * MS);
        walk(&mut h, 3999 * MS);
        walk(&mut h, 4000 * MS);
        assert_eq!(expired, vec![(1, 3000 * MS), (2, 4000 * MS)]);
        assert!(h.is_empty());
        assert!(!h.due(0, u64::MAX));
        // Room again for that neighbour.
        assert!(h.hold(k(1), 0, false, 5000 * MS, 1, 3).is_ok());
        assert!(h.hold(k(1), 0, false, 5000 * MS, 1, 4).is_ok());
    }
}
