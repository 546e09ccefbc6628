//! The control thread's neighbour table and the snapshots the workers read.
//!
//! The workers read an immutable `Arc<Neighbours>` snapshot and hand the
//! one they replace back to the control thread, which drops it. Copying the
//! whole table for every change costs the control thread tens of
//! milliseconds at a million neighbours, and a learning or a deletion can
//! come every step. So the snapshots are published left-right: the control
//! thread keeps the snapshot before the current one (the *spare*); once
//! every worker has let go of it (it is the only owner), the changes made
//! since it was taken are replayed into it and it becomes the new snapshot.
//! A publication then costs the changes, not the table. When a worker
//! still holds the spare (it has not taken the previous update yet), or
//! when more changes piled up than a copy would cost, the table is copied
//! as before.

use crate::tables::{Learned, MacAddr, NeighSource, Neighbour, Neighbours};
use std::net::IpAddr;
use std::ops::Deref;
use std::sync::Arc;

#[derive(Debug, Clone, Copy)]
enum Op {
    Set(u16, IpAddr, Neighbour),
    Remove(u16, IpAddr),
}

/// How publications went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PublishStats {
    /// Snapshots made by copying the table.
    pub copies: u64,
    /// Snapshots made by replaying changes into the spare.
    pub replays: u64,
    /// Changes replayed.
    pub replayed: u64,
}

pub struct NeighbourMaster {
    table: Neighbours,
    published: Arc<Neighbours>,
    spare: Option<Arc<Neighbours>>,
    /// The changes the spare lacks, oldest first; the published snapshot
    /// lacks `ops[mark..]`.
    ops: Vec<Op>,
    mark: usize,
    pub stats: PublishStats,
}

impl Deref for NeighbourMaster {
    type Target = Neighbours;
    fn deref(&self) -> &Neighbours {
        &self.table
    }
}

impl NeighbourMaster {
    pub fn new(table: Neighbours) -> Self {
        let published = Arc::new(table.clone());
        NeighbourMaster { table, published, spare: None, ops: Vec::new(), mark: 0, stats: PublishStats::default() }
    }

    /// The current snapshot (what the workers start with).
    pub fn published(&self) -> Arc<Neighbours> {
        self.published.clone()
    }

    /// [`Neighbours::learn`], recorded.
    pub fn learn(&mut self, iface: u16, ip: IpAddr, mac: MacAddr, source: NeighSource) -> bool {
        self.learn_bounded(iface, ip, mac, source, usize::MAX) == Learned::Changed
    }

    /// [`Neighbours::learn_bounded`], recorded.
    pub fn learn_bounded(&mut self, iface: u16, ip: IpAddr, mac: MacAddr, source: NeighSource, limit: usize) -> Learned {
        let r = self.table.learn_bounded(iface, ip, mac, source, limit);
        if r == Learned::Changed {
            self.ops.push(Op::Set(iface, ip, Neighbour { mac, source }));
        }
        r
    }

    /// [`Neighbours::remove`], recorded.
    pub fn remove(&mut self, iface: u16, ip: IpAddr) -> Option<Neighbour> {
        let r = self.table.remove(iface, ip);
        if r.is_some() {
            self.ops.push(Op::Remove(iface, ip));
        }
        r
    }

    /// Changes not published yet.
    pub fn unpublished(&self) -> usize {
        self.ops.len() - self.mark
    }

    /// A snapshot equal to the table now, for the workers.
    pub fn publish(&mut self) -> Arc<Neighbours> {
        // Replaying is two scattered hash updates a change (0.4-1 us with
        // the table out of cache); copying streams the table (5 ns an entry
        // at 100k, 50 ns at 1M with its page faults): `nud_bench`.
        let worth = self.ops.len().saturating_mul(64) <= self.table.len();
        let next = match self.spare.take() {
            // Nobody else holds it (a worker that held it has handed it back).
            Some(mut s) if worth && Arc::strong_count(&s) == 1 && Arc::weak_count(&s) == 0 => {
                if let Some(t) = Arc::get_mut(&mut s) {
                    for op in &self.ops {
                        match *op {
                            Op::Set(i, ip, n) => t.set(i, ip, n),
                            Op::Remove(i, ip) => {
                                t.remove(i, ip);
                            }
                        }
                    }
                }
                self.stats.replays += 1;
                self.stats.replayed += self.ops.len() as u64;
                s
            }
            _ => {
                self.stats.copies += 1;
                Arc::new(self.table.clone())
            }
        };
        let old = std::mem::replace(&mut self.published, next.clone());
        // The old snapshot is the next spare: it lacks what came after it.
        self.spare = Some(old);
        self.ops.drain(..self.mark);
        self.mark = self.ops.len();
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::net::Ipv4Addr;

    fn content(n: &Neighbours) -> BTreeMap<(u16, IpAddr), (MacAddr, bool)> {
        n.iter().map(|(k, v)| (*k, (v.mac, v.source == NeighSource::Static))).collect()
    }

    fn same(a: &Neighbours, b: &Neighbours) {
        assert_eq!(content(a), content(b));
        assert_eq!(a.learned_len(), b.learned_len());
        for (&(i, ip), n) in a.iter() {
            assert_eq!(b.mac(i, ip), Some(n.mac), "packet-path index of {ip}");
        }
        assert_eq!(a.len(), b.len());
    }

    fn ip(n: u32) -> IpAddr {
        IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + n))
    }

    /// Random changes and publications, the workers letting go of old
    /// snapshots at random times: every published snapshot equals the
    /// table, and the spare is reused whenever it is free.
    #[test]
    fn every_snapshot_equals_the_table() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = move |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % m
        };
        let mut base = Neighbours::default();
        for k in 0..5000 {
            base.learn(1, ip(k), [2, 0, 0, 0, 0, k as u8], NeighSource::Learned);
        }
        let mut m = NeighbourMaster::new(base);
        // What the workers hold.
        let mut held: Vec<Arc<Neighbours>> = vec![m.published()];
        for round in 0..3000 {
            for _ in 0..rnd(6) {
                let k = rnd(6000) as u32;
                match rnd(4) {
                    0 => {
                        m.remove(1, ip(k));
                    }
                    1 => {
                        m.learn(1, ip(k), [2, 0, 0, 0, 1, round as u8], NeighSource::Static);
                    }
                    _ => {
                        m.learn_bounded(1, ip(k), [2, 0, 0, 0, 2, round as u8], NeighSource::Learned, 5500);
                    }
                }
            }
            if rnd(3) == 0 {
                let p = m.publish();
                same(&m, &p);
                held.push(p);
            }
            // Workers take updates and return the old snapshots, sometimes late.
            if held.len() > 1 && rnd(4) != 0 {
                held.drain(..held.len() - 1);
            }
        }
        let p = m.publish();
        same(&m, &p);
        assert!(m.stats.replays > m.stats.copies, "{:?}", m.stats);
        assert!(m.stats.copies > 1, "a held spare forces a copy: {:?}", m.stats);
    }

    #[test]
    fn a_replay_costs_the_changes_and_a_held_spare_a_copy() {
        let mut base = Neighbours::default();
        for k in 0..1000 {
            base.learn(0, ip(k), [2, 0, 0, 0, 0, 1], NeighSource::Learned);
        }
        let mut m = NeighbourMaster::new(base);
        let first = m.published();
        m.learn(0, ip(5000), [2, 0, 0, 0, 0, 2], NeighSource::Learned);
        // No spare yet: a copy.
        let p1 = m.publish();
        assert_eq!(m.stats, PublishStats { copies: 1, replays: 0, replayed: 0 });
        // The workers still hold the first snapshot: a copy again.
        m.remove(0, ip(1));
        let p2 = m.publish();
        assert_eq!(m.stats.copies, 2);
        same(&m, &p2);
        drop((first, p1));
        // The spare (p1) is free now: the changes since it (remove, learn)
        // are replayed into it.
        m.learn(0, ip(7), [2, 0, 0, 0, 0, 9], NeighSource::Static);
        let p3 = m.publish();
        assert_eq!(m.stats, PublishStats { copies: 2, replays: 1, replayed: 2 });
        same(&m, &p3);
        assert_eq!(p3.mac(0, ip(7)), Some([2, 0, 0, 0, 0, 9]));
        assert_eq!(p3.mac(0, ip(1)), None);
        assert_eq!(m.unpublished(), 0);
        drop(p2);
        m.remove(0, ip(7));
        assert_eq!(m.unpublished(), 1);
        let p4 = m.publish();
        assert_eq!(m.stats.replays, 2);
        same(&m, &p4);
        assert_eq!(p4.mac(0, ip(7)), None);
    }
}
