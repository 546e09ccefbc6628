//! Groups by id, and the O(1) lookup from a received response to
//! (group, branch).

use std::net::Ipv6Addr;

use rustc_hash::FxHashMap;

use super::group::{Counter, Counters, Group, GroupConfig, GroupId, Receiver, Response, SetupError, TlvReceivers, Upstream};
use super::upstream::ResponseKey;

/// Where a response belongs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// `(DA, DestQP)` names no group: ordinary traffic.
    NotMulticast,
    /// `(DA, DestQP)` names `group`, but SA is none of its receivers.
    UnknownReceiver { group: usize },
    Branch { group: usize, branch: usize },
}

/// What became of a response handed to [`GroupTable::on_response`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Not a multicast response: forward it as usual.
    NotMulticast,
    /// Consumed; send `up` (built with [`super::build_upstream`] and the
    /// group's config) upstream ([`GroupConfig::upstream_dst`]).
    Upstream { group: usize, up: Upstream },
    /// Consumed into the group's state, nothing to send.
    Absorbed { group: usize },
    /// Dropped, counted under `reason` in the group's counters.
    Dropped { group: usize, reason: Counter },
}

#[inline]
fn proxy_key(proxy: &Ipv6Addr, dest_qp: u32) -> (u128, u32) {
    (u128::from(*proxy), dest_qp)
}

/// Versions are unique across tables, so a table replaced by another
/// never looks unchanged.
fn next_version() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

#[inline]
fn receiver_key(k: &ResponseKey) -> (u128, u128, u32) {
    (u128::from(k.receiver), u128::from(k.proxy), k.dest_qp)
}

/// All groups of one worker. Setup (`insert`, `remove`) allocates; the
/// per-packet calls (`lookup`, `on_response`, `on_data`, `poll`) only read
/// the preallocated maps.
#[derive(Debug, Default)]
pub struct GroupTable {
    slots: Vec<Option<Group>>,
    max_groups: usize,
    by_id: FxHashMap<GroupId, usize>,
    by_proxy: FxHashMap<(u128, u32), usize>,
    by_receiver: FxHashMap<(u128, u128, u32), (u32, u32)>,
    /// Proxy Address -> number of groups using it (the cheap first test on
    /// the packet path: is this destination a Proxy Address at all?).
    proxies: FxHashMap<u128, u32>,
    /// Bumped whenever a group is installed or removed.
    version: u64,
}

impl GroupTable {
    /// A table for up to `max_groups` groups with `max_receivers` receivers
    /// in all (the maps are sized for that; more receivers still work, the
    /// maps then grow on insert).
    pub fn with_capacity(max_groups: usize, max_receivers: usize) -> Self {
        let mut by_id = FxHashMap::default();
        by_id.reserve(max_groups);
        let mut by_proxy = FxHashMap::default();
        by_proxy.reserve(max_groups);
        let mut by_receiver = FxHashMap::default();
        by_receiver.reserve(max_receivers);
        let mut proxies = FxHashMap::default();
        proxies.reserve(max_groups);
        GroupTable {
            version: next_version(),
            proxies,
            slots: Vec::with_capacity(max_groups),
            max_groups,
            by_id,
            by_proxy,
            by_receiver,
        }
    }

    /// Install a group (its first CNP window starts at `now`); returns its
    /// index, stable until it is removed.
    pub fn insert(&mut self, cfg: GroupConfig, now: u64) -> Result<usize, SetupError> {
        cfg.validate()?;
        if self.by_id.contains_key(&cfg.id) {
            return Err(SetupError::DuplicateGroup);
        }
        let pk = proxy_key(&cfg.proxy, cfg.designated_qpn);
        if self.by_proxy.contains_key(&pk) {
            return Err(SetupError::DuplicateProxy);
        }
        let idx = match self.slots.iter().position(Option::is_none) {
            Some(i) => i,
            None if self.slots.len() < self.max_groups => {
                self.slots.push(None);
                self.slots.len() - 1
            }
            None => return Err(SetupError::TableFull),
        };
        let g = Group::new(cfg, now)?;
        let learning = self.iter().filter(|(_, x)| x.config().tlv_receivers == TlvReceivers::Learn).count() + usize::from(g.config().tlv_receivers == TlvReceivers::Learn);
        if learning > 0 {
            // Learning must never grow the map (no allocation on the packet
            // path): room for every learning group to add a full TLV's
            // receivers, and twice the entries, so that the tombstones of
            // removed receivers are cleared by a rehash in place (which
            // the map does while it is at most half full) rather than by
            // growing it.
            let need = self.by_receiver.len() + g.config().receivers.len() + g.config().children.len() + learning * super::group::MAX_TLV_RECEIVERS;
            self.by_receiver.reserve((2 * need).saturating_sub(self.by_receiver.len()));
        }
        self.version = next_version();
        let c = g.config();
        self.by_id.insert(c.id, idx);
        self.by_proxy.insert(pk, idx);
        *self.proxies.entry(u128::from(c.proxy)).or_insert(0) += 1;
        for (b, a) in c.branch_addrs().enumerate() {
            let k = ResponseKey { receiver: a, proxy: c.proxy, dest_qp: c.designated_qpn };
            self.by_receiver.insert(receiver_key(&k), (idx as u32, b as u32));
        }
        self.slots[idx] = Some(g);
        Ok(idx)
    }

    /// Remove a group by id.
    pub fn remove(&mut self, id: &GroupId) -> Option<Group> {
        let idx = self.by_id.remove(id)?;
        let g = self.slots[idx].take()?;
        self.version = next_version();
        let c = g.config();
        self.by_proxy.remove(&proxy_key(&c.proxy, c.designated_qpn));
        let pa = u128::from(c.proxy);
        if let Some(n) = self.proxies.get_mut(&pa) {
            *n -= 1;
            if *n == 0 {
                self.proxies.remove(&pa);
            }
        }
        for a in c.branch_addrs() {
            let k = ResponseKey { receiver: a, proxy: c.proxy, dest_qp: c.designated_qpn };
            self.by_receiver.remove(&receiver_key(&k));
        }
        Some(g)
    }

    pub fn index_of(&self, id: &GroupId) -> Option<usize> {
        self.by_id.get(id).copied()
    }
    pub fn get(&self, idx: usize) -> Option<&Group> {
        self.slots.get(idx)?.as_ref()
    }
    pub fn get_mut(&mut self, idx: usize) -> Option<&mut Group> {
        self.slots.get_mut(idx)?.as_mut()
    }
    /// Installed groups with their indices.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &Group)> {
        self.slots.iter().enumerate().filter_map(|(i, g)| g.as_ref().map(|g| (i, g)))
    }
    pub fn len(&self) -> usize {
        self.by_id.len()
    }
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// Changes whenever the set of groups (and so of Proxy Addresses) does.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The Proxy Addresses in use (as integers).
    pub fn proxy_addrs(&self) -> impl Iterator<Item = u128> + '_ {
        self.proxies.keys().copied()
    }

    /// Whether `a` is the Proxy Address of an installed group.
    #[inline]
    pub fn is_proxy(&self, a: &Ipv6Addr) -> bool {
        !self.proxies.is_empty() && self.proxies.contains_key(&u128::from(*a))
    }

    /// Make the table hold exactly the groups of `cfgs` (control-plane
    /// update, between bursts; allocates). A group whose configuration is
    /// unchanged keeps its state (per-branch PSNs, CNP window, counters);
    /// a changed one is set up afresh at `now`; groups not in `cfgs` are
    /// removed. Returns the index of the first configuration refused and
    /// why (the groups before it are installed).
    pub fn replace_all(&mut self, cfgs: &[GroupConfig], now: u64) -> Result<(), (usize, SetupError)> {
        let stale: Vec<GroupId> = self
            .iter()
            .filter(|(_, g)| !cfgs.iter().any(|c| learned_eq(c, g)))
            .map(|(_, g)| g.id())
            .collect();
        // Changed groups (same id) take over their old state.
        let old: Vec<Group> = stale.iter().filter_map(|id| self.remove(id)).collect();
        if self.max_groups < cfgs.len() {
            self.max_groups = cfgs.len();
        }
        for (i, c) in cfgs.iter().enumerate() {
            // Kept from before (unchanged); a second configuration with
            // the same id is refused by `insert` (DuplicateGroup).
            if self.index_of(&c.id).and_then(|i| self.get(i)).is_some_and(|g| learned_eq(c, g)) && !cfgs[..i].iter().any(|o| o.id == c.id) {
                continue;
            }
            let g = self.insert(learned(c, &old), now).map_err(|e| (i, e))?;
            if let (Some(o), Some(new)) = (old.iter().find(|o| o.id() == c.id), self.get_mut(g)) {
                new.carry_over(o);
            }
        }
        Ok(())
    }

    /// Group `idx` takes the `n` receivers `get(r)` of an End.MT TLV as its
    /// receivers ([`TlvReceivers::Learn`], `Group::relearn`): kept
    /// receivers keep their state, new ones join at the PSN the source was
    /// told, the CNP window and the upstream state go on, and the response
    /// lookup follows. No allocation (the group keeps room for
    /// [`super::MAX_TLV_RECEIVERS`] receivers, the lookup map for twice
    /// that per learning group). Refused, the group unchanged, when the set
    /// is not a valid one or the group does not learn.
    pub fn learn_receivers(&mut self, idx: usize, n: usize, get: impl Fn(usize) -> Option<Receiver>) -> Result<(), SetupError> {
        let grp = self.slots.get_mut(idx).and_then(Option::as_mut).ok_or(SetupError::NotLearning)?;
        let (proxy, dest_qp) = (grp.config().proxy, grp.config().designated_qpn);
        let by_receiver = &mut self.by_receiver;
        let key = |a: Ipv6Addr| receiver_key(&ResponseKey { receiver: a, proxy, dest_qp });
        grp.relearn(n, get, |a| by_receiver.get(&key(*a)).filter(|(g, _)| *g as usize == idx).map(|&(_, b)| b as usize))?;
        for b in grp.previous_branches().iter().filter(|b| !b.node) {
            by_receiver.remove(&key(b.receiver.addr));
        }
        for (i, b) in grp.branches().iter().enumerate() {
            by_receiver.insert(key(b.receiver.addr), (idx as u32, i as u32));
        }
        // `version` stays: the Proxy Addresses, which the fast path's
        // tables depend on, are unchanged (a new version would make the
        // next burst rebuild them).
        Ok(())
    }

    /// The group a data packet (DA = Proxy Address, DestQP = Designated QPN)
    /// belongs to.
    pub fn group_of_data(&self, proxy: &Ipv6Addr, dest_qp: u32) -> Option<usize> {
        self.by_proxy.get(&proxy_key(proxy, dest_qp)).copied()
    }

    /// Record a downstream data packet's PSN (see [`Group::on_data`]);
    /// returns the group index, or None when the packet is no group's.
    pub fn on_data(&mut self, proxy: &Ipv6Addr, dest_qp: u32, psn: u32, src: &Ipv6Addr, now: u64) -> Option<usize> {
        let g = self.group_of_data(proxy, dest_qp)?;
        let grp = self.slots[g].as_mut()?;
        // Only the group's source sends its data (s.9: a forged PSN would
        // let inflated AckPSNs through as "sent").
        if grp.config().id.source != *src {
            return None;
        }
        grp.on_data(psn, now);
        Some(g)
    }

    /// Match a response: O(1), two hash probes at most.
    pub fn lookup(&self, key: &ResponseKey) -> Lookup {
        if let Some(&(g, b)) = self.by_receiver.get(&receiver_key(key)) {
            return Lookup::Branch { group: g as usize, branch: b as usize };
        }
        match self.by_proxy.get(&proxy_key(&key.proxy, key.dest_qp)) {
            Some(&g) => Lookup::UnknownReceiver { group: g },
            None => Lookup::NotMulticast,
        }
    }

    /// Match and process a response.
    pub fn on_response(&mut self, key: &ResponseKey, resp: Response, now: u64) -> Verdict {
        match self.lookup(key) {
            Lookup::NotMulticast => Verdict::NotMulticast,
            Lookup::UnknownReceiver { group } => {
                // Below the top, a response from no branch of ours may be
                // on its way to another node of the tree (its route to the
                // Proxy Address passes here): forwarded up, where the node
                // that has it as a branch, or the top, decides (s.9).
                let below = match self.get_mut(group) {
                    Some(g) => {
                        let below = g.config().node_address.is_some();
                        g.count(if below { Counter::PassedUp } else { Counter::UnknownReceiver });
                        below
                    }
                    None => false,
                };
                if below {
                    Verdict::NotMulticast
                } else {
                    Verdict::Dropped { group, reason: Counter::UnknownReceiver }
                }
            }
            Lookup::Branch { group, branch } => {
                let Some(g) = self.get_mut(group) else {
                    return Verdict::NotMulticast;
                };
                match g.on_branch(branch, resp, now) {
                    Ok(Some(up)) => Verdict::Upstream { group, up },
                    Ok(None) => Verdict::Absorbed { group },
                    Err(reason) => Verdict::Dropped { group, reason },
                }
            }
        }
    }

    /// Close the CNP windows that ended by `now`; `emit(group, &group,
    /// upstream)` for every window CNP.
    pub fn poll(&mut self, now: u64, mut emit: impl FnMut(usize, &Group, Upstream)) {
        for (i, slot) in self.slots.iter_mut().enumerate() {
            if let Some(g) = slot {
                if let Some(up) = g.poll(now) {
                    emit(i, g, up);
                }
            }
        }
    }

    /// The sum of every group's counters.
    pub fn counters(&self) -> Counters {
        let mut total = Counters::default();
        for (_, g) in self.iter() {
            for (c, v) in g.counters().iter() {
                total.add(c, v);
            }
        }
        total
    }
}

/// A configuration pushed by the control plane, with the receivers the
/// old group of its id learned from End.MT TLVs when both learn: the
/// control plane does not know them, and a configuration change must not
/// forget them. When they no longer fit the new configuration (a new
/// child node or node address is one of them), the group starts without
/// them and learns again from the next TLV, rather than being refused.
fn learned(c: &GroupConfig, old: &[Group]) -> GroupConfig {
    let mut l = c.clone();
    if l.tlv_receivers == TlvReceivers::Learn {
        if let Some(o) = old.iter().find(|o| o.id() == l.id && o.config().tlv_receivers == TlvReceivers::Learn) {
            l.receivers.clone_from(&o.config().receivers);
            if l.validate().is_err() {
                return c.clone();
            }
        }
    }
    l
}

/// Whether the installed group `g` has configuration `c` (a learning
/// group's receivers are its own, not the configuration's).
fn learned_eq(c: &GroupConfig, g: &Group) -> bool {
    let gc = g.config();
    if c.tlv_receivers == TlvReceivers::Learn && gc.tlv_receivers == TlvReceivers::Learn && c.id == gc.id {
        let mut x = c.clone();
        x.receivers.clone_from(&gc.receivers);
        return x == *gc;
    }
    c == gc
}
