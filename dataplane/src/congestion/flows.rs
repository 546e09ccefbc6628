//! The flow table (s.5.2): a fixed-capacity slab of flow entries whose
//! indices are stable (a [`super::FlowId`] handed out on enqueue stays valid
//! while the packet is queued), plus two open-addressing indices with linear
//! probing and backward-shift deletion (no tombstones):
//!
//! * by (src IP, dst IP, DestQP): the flow key;
//! * by (src IP, dst IP): the head of an intrusive list of the flows between
//!   the two hosts, used to learn the source QP from reverse traffic (whose
//!   BTH names only the forward source QP, not the forward DestQP).
//!
//! Everything is allocated in [`FlowTable::new`]; lookups, inserts and
//! removals never allocate.

use core::hash::{Hash, Hasher};
use std::net::IpAddr;

use crate::wire::lhcnp::Action;

pub(crate) const NONE: u32 = u32::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct FlowKey {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub dest_qp: u32,
}

/// One learned RoCEv2 flow.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Flow {
    pub live: bool,
    pub key: FlowKey,
    hash: u64,
    pair_hash: u64,
    /// Intrusive list of the flows with the same (src, dst).
    pair_next: u32,
    pair_prev: u32,
    /// Position in the live list.
    live_pos: u32,
    pub src_qp: Option<u32>,
    /// `src_qp` came from configuration: reverse learning does not touch it.
    pub src_qp_configured: bool,
    pub last_psn: u32,
    pub last_seen: u64,
    /// Bytes of this flow in the egress queue (queue contribution).
    pub queued: u64,
    /// Arrival-rate estimate: bytes in the current observation window and
    /// in the two completed windows before it.
    pub win_start: u64,
    pub win_bytes: u64,
    pub prev_bytes: u64,
    pub prev2_bytes: u64,
    /// Long-haul CNP state.
    pub last_cnp: Option<u64>,
    pub last_action: Option<Action>,
    pub last_level: u8,
    /// A Notify / Rate Reduce / Pause was sent and no Resume since.
    pub throttled: bool,
    /// Deferring (s.5.7): since when, and the queue depth then.
    pub deferred: Option<(u64, u64)>,
}

impl Flow {
    const EMPTY: Flow = Flow {
        live: false,
        key: FlowKey {
            src: IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
            dst: IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
            dest_qp: 0,
        },
        hash: 0,
        pair_hash: 0,
        pair_next: NONE,
        pair_prev: NONE,
        live_pos: NONE,
        src_qp: None,
        src_qp_configured: false,
        last_psn: 0,
        last_seen: 0,
        queued: 0,
        win_start: 0,
        win_bytes: 0,
        prev_bytes: 0,
        prev2_bytes: 0,
        last_cnp: None,
        last_action: None,
        last_level: 0,
        throttled: false,
        deferred: None,
    };

    /// Close the observation windows that have ended by `now` (window
    /// length `win` ns).
    pub fn roll(&mut self, now: u64, win: u64) {
        if win == 0 {
            return;
        }
        let el = now.saturating_sub(self.win_start);
        if el < win {
            return;
        }
        let n = el / win;
        match n {
            1 => {
                self.prev2_bytes = self.prev_bytes;
                self.prev_bytes = self.win_bytes;
            }
            2 => {
                self.prev2_bytes = self.win_bytes;
                self.prev_bytes = 0;
            }
            _ => {
                self.prev2_bytes = 0;
                self.prev_bytes = 0;
            }
        }
        self.win_bytes = 0;
        self.win_start = self.win_start.saturating_add(n.saturating_mul(win));
    }

    /// Whether the arrival rate fell by at least `frac` from the window
    /// before the last completed one to the last completed one.
    pub fn rate_fell(&self, frac: f64) -> bool {
        self.prev2_bytes > 0 && (self.prev_bytes as f64) <= (self.prev2_bytes as f64) * (1.0 - frac)
    }
}

fn hash_of<T: Hash>(v: &T) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    v.hash(&mut h);
    // FxHash mixes poorly into the low bits: finish with a multiply and
    // take the high half.
    (h.finish() ^ 0x5bd1_e995).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 16
}

/// Open-addressing index of slab positions.
struct Index {
    slots: Vec<u32>,
    mask: usize,
}

impl Index {
    fn new(capacity: usize) -> Index {
        let n = (capacity.max(1) * 2).next_power_of_two();
        Index {
            slots: vec![NONE; n],
            mask: n - 1,
        }
    }

    fn home(&self, h: u64) -> usize {
        (h as usize) & self.mask
    }

    /// Position of the entry for which `is(slab index)` holds.
    fn find(&self, h: u64, mut is: impl FnMut(u32) -> bool) -> Option<usize> {
        let mut i = self.home(h);
        for _ in 0..=self.mask {
            let s = self.slots[i];
            if s == NONE {
                return None;
            }
            if is(s) {
                return Some(i);
            }
            i = (i + 1) & self.mask;
        }
        None
    }

    fn insert(&mut self, h: u64, v: u32) {
        let mut i = self.home(h);
        for _ in 0..=self.mask {
            if self.slots[i] == NONE {
                self.slots[i] = v;
                return;
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Remove position `i`; `home_of(v)` gives an entry's home position.
    fn remove_at(&mut self, mut i: usize, home_of: impl Fn(u32) -> usize) {
        let mut j = i;
        loop {
            j = (j + 1) & self.mask;
            let v = self.slots[j];
            if v == NONE || j == i {
                self.slots[i] = NONE;
                return;
            }
            let k = home_of(v);
            // Can the entry at j move to the hole at i? Not if its home k
            // lies cyclically in (i, j].
            let stays = if i <= j { i < k && k <= j } else { i < k || k <= j };
            if !stays {
                self.slots[i] = v;
                i = j;
            }
        }
    }
}

pub(crate) struct FlowTable {
    pub entries: Vec<Flow>,
    by_key: Index,
    by_pair: Index,
    free: Vec<u32>,
    /// Slab indices of the live flows (for scans).
    pub live: Vec<u32>,
}

impl FlowTable {
    pub fn new(capacity: usize) -> FlowTable {
        let capacity = capacity.max(1);
        FlowTable {
            entries: vec![Flow::EMPTY; capacity],
            by_key: Index::new(capacity),
            by_pair: Index::new(capacity),
            free: (0..capacity as u32).rev().collect(),
            live: Vec::with_capacity(capacity),
        }
    }

    pub fn capacity(&self) -> usize {
        self.entries.len()
    }

    pub fn len(&self) -> usize {
        self.live.len()
    }

    pub fn lookup(&self, key: &FlowKey) -> Option<u32> {
        let h = hash_of(key);
        let e = &self.entries;
        self.by_key
            .find(h, |s| e[s as usize].key == *key)
            .map(|i| self.by_key.slots[i])
    }

    /// Insert a new flow (the caller checked it is absent); None when full.
    pub fn insert(&mut self, key: FlowKey, now: u64) -> Option<u32> {
        let s = self.free.pop()?;
        let h = hash_of(&key);
        let ph = hash_of(&(key.src, key.dst));
        let head = {
            let e = &self.entries;
            self.by_pair
                .find(ph, |x| e[x as usize].key.src == key.src && e[x as usize].key.dst == key.dst)
        };
        let mut f = Flow::EMPTY;
        f.live = true;
        f.key = key;
        f.hash = h;
        f.pair_hash = ph;
        f.live_pos = self.live.len() as u32;
        f.last_seen = now;
        f.win_start = now;
        match head {
            Some(pos) => {
                // Insert after the head: the index keeps pointing at it.
                let hd = self.by_pair.slots[pos];
                let nx = self.entries[hd as usize].pair_next;
                f.pair_prev = hd;
                f.pair_next = nx;
                self.entries[hd as usize].pair_next = s;
                if nx != NONE {
                    self.entries[nx as usize].pair_prev = s;
                }
            }
            None => self.by_pair.insert(ph, s),
        }
        self.entries[s as usize] = f;
        self.by_key.insert(h, s);
        self.live.push(s);
        Some(s)
    }

    /// Remove a live flow.
    pub fn remove(&mut self, s: u32) {
        let Some(f) = self.entries.get(s as usize).copied() else {
            return;
        };
        if !f.live {
            return;
        }
        // Key index.
        {
            let e = &self.entries;
            if let Some(i) = self.by_key.find(f.hash, |x| x == s) {
                let mask = self.by_key.mask;
                self.by_key.remove_at(i, |v| (e[v as usize].hash as usize) & mask);
            }
        }
        // Pair list and index.
        if f.pair_prev != NONE {
            self.entries[f.pair_prev as usize].pair_next = f.pair_next;
            if f.pair_next != NONE {
                self.entries[f.pair_next as usize].pair_prev = f.pair_prev;
            }
        } else {
            let e = &self.entries;
            let pos = self.by_pair.find(f.pair_hash, |x| x == s);
            if let Some(pos) = pos {
                if f.pair_next != NONE {
                    self.by_pair.slots[pos] = f.pair_next;
                    self.entries[f.pair_next as usize].pair_prev = NONE;
                } else {
                    let mask = self.by_pair.mask;
                    self.by_pair
                        .remove_at(pos, |v| (e[v as usize].pair_hash as usize) & mask);
                }
            }
        }
        // Live list (swap remove).
        let lp = f.live_pos as usize;
        if lp < self.live.len() {
            self.live.swap_remove(lp);
            if let Some(&moved) = self.live.get(lp) {
                self.entries[moved as usize].live_pos = lp as u32;
            }
        }
        self.entries[s as usize] = Flow::EMPTY;
        self.free.push(s);
    }

    /// First flow of the list of flows from `src` to `dst`.
    pub fn pair_head(&self, src: IpAddr, dst: IpAddr) -> u32 {
        let e = &self.entries;
        self.by_pair
            .find(hash_of(&(src, dst)), |x| {
                e[x as usize].key.src == src && e[x as usize].key.dst == dst
            })
            .map_or(NONE, |i| self.by_pair.slots[i])
    }

    pub fn pair_next(&self, s: u32) -> u32 {
        self.entries.get(s as usize).map_or(NONE, |f| f.pair_next)
    }

    pub fn get_mut(&mut self, s: u32) -> Option<&mut Flow> {
        self.entries.get_mut(s as usize).filter(|f| f.live)
    }

    pub fn get(&self, s: u32) -> Option<&Flow> {
        self.entries.get(s as usize).filter(|f| f.live)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn key(a: u8, b: u8, qp: u32) -> FlowKey {
        FlowKey {
            src: IpAddr::V4(Ipv4Addr::new(10, 0, 0, a)),
            dst: IpAddr::V4(Ipv4Addr::new(10, 0, 1, b)),
            dest_qp: qp,
        }
    }

    #[test]
    fn insert_lookup_remove_keeps_other_slots() {
        let mut t = FlowTable::new(64);
        let mut slots = Vec::new();
        for i in 0..64u32 {
            let k = key((i % 7) as u8, (i % 3) as u8, i);
            slots.push(t.insert(k, 0).unwrap());
        }
        assert!(t.insert(key(99, 99, 99), 0).is_none(), "full");
        // Remove every other one; the rest keep their slot and are found.
        for i in (0..64u32).step_by(2) {
            t.remove(slots[i as usize]);
        }
        for i in 0..64u32 {
            let k = key((i % 7) as u8, (i % 3) as u8, i);
            if i % 2 == 0 {
                assert_eq!(t.lookup(&k), None);
            } else {
                assert_eq!(t.lookup(&k), Some(slots[i as usize]));
            }
        }
        assert_eq!(t.len(), 32);
        // Pair lists hold exactly the live flows of each pair.
        for a in 0..7u8 {
            for b in 0..3u8 {
                let mut n = 0;
                let mut s = t.pair_head(key(a, b, 0).src, key(a, b, 0).dst);
                while s != NONE {
                    let f = t.get(s).unwrap();
                    assert_eq!((f.key.src, f.key.dst), (key(a, b, 0).src, key(a, b, 0).dst));
                    assert_eq!(f.key.dest_qp % 2, 1);
                    n += 1;
                    s = t.pair_next(s);
                }
                let want = (0..64u32).filter(|i| i % 2 == 1 && i % 7 == a as u32 && i % 3 == b as u32).count();
                assert_eq!(n, want);
            }
        }
    }
}
