//! The per-port state machine; the rules are in the module documentation
//! of [`super`].

use std::net::IpAddr;

use ipnet::IpNet;
use rustc_hash::FxHashMap;

use super::ackrtt::AckRtt;
use super::flows::{FlowTable, PackedKey, NONE, NO_PSN};
use super::{
    CnpFormat, CnpRequest, CongestionStats, FlowId, PortParams, RoceInfo, RoceKey, UnknownSourceQp, MAX_TOP_FLOWS,
};
use crate::pipeline::TokenBucket;
use crate::wire::lhcnp::{Action, CnpInfo, MetricType};
use crate::wire::roce::opcode;

/// Flows examined for aging per `poll`.
const AGE_SWEEP_PER_POLL: usize = 64;
/// Packets whose flow learning [`CongestionPort::on_enqueue_deferred`] may
/// hold back.
pub const MAX_PENDING: usize = 64;
/// At most this many flows between one pair of hosts are examined for a
/// reverse packet (the pair's list: its first flow, then the newest): a
/// response costs a bounded number of entry reads however many QPs the
/// two hosts use (or a sender with spoofed DestQPs made up).
pub const MAX_REVERSE_WALK: usize = 64;
/// How far a response's PSN may be from its flow's last PSN (below it; an
/// RDMA READ response also above it): 2^17 packets, a long-haul path's
/// packets in flight (100 Gb/s over 10 ms at a 1 KiB MTU is about 122 000)
/// with room. A response of another QP of the same two hosts, whose PSNs
/// are unrelated, falls within it by chance once in 128.
pub const RESPONSE_PSN_WINDOW: u32 = 1 << 17;

/// A packet whose flow is not looked up yet.
#[derive(Debug, Clone, Copy)]
struct Pending {
    key: PackedKey,
    hash: u64,
    now: u64,
    psn: u32,
    /// Bytes of the `n` packets.
    len: u32,
    /// The caller's tag of the first packet (its position in its queue).
    tag: u32,
    /// Packets: consecutive packets of one flow with the same timestamp
    /// and consecutive tags share an entry (one lookup, the same updates).
    /// 16 bits, beside `sport`, keep the entry at 80 bytes.
    n: u16,
    /// After the lookup: the flow slot, or NONE (table full).
    flow: u32,
    /// UDP source port (kept when the packet creates its flow's entry).
    sport: u16,
    /// The slot the prefetch found by tag (NONE: not fetched yet or no
    /// match), tried first by the lookup.
    hint: u32,
}

const _: () = assert!(core::mem::size_of::<Pending>() == 80);
const METRIC_MAX: u32 = 0x00ff_ffff;
const PSN_MASK: u32 = 0x00ff_ffff;

/// One egress port's congestion function (single writer).
pub struct CongestionPort {
    p: PortParams,
    k_max: u64,
    /// Configured K_min.
    k_min_cfg: u64,
    /// Effective K_min (adaptive).
    k_min: u64,
    buffer: u64,
    flows: FlowTable,
    cfg_qp: FxHashMap<(IpAddr, IpAddr, u32), u32>,
    /// Configured CNP formats by source prefix.
    formats: Vec<(IpNet, CnpFormat)>,
    bucket: TokenBucket,
    // Monitoring interval.
    iv_started: bool,
    iv_start: u64,
    iv_qd_start: u64,
    iv_pkts: u64,
    iv_marked: u64,
    iv_qd_sum: u128,
    iv_qd_n: u64,
    avg_qd: Option<f64>,
    below_kmin_since: Option<u64>,
    throttled: usize,
    /// No Resume scan before this time (flows still rate-limited, or the
    /// port bucket was empty).
    resume_next: u64,
    age_cursor: usize,
    /// No live flow was last seen before this (so none is idle before
    /// `age_lb + flow_idle_timeout_ns`): the sweep is skipped until then.
    age_lb: u64,
    /// Least last-seen time met in the current sweep pass.
    age_pass_min: u64,
    /// The throttled flows (unordered).
    thr: Vec<u32>,
    /// Deferred flow learning: `pend[..pend_done]` are looked up.
    pend: Vec<Pending>,
    pend_done: usize,
    /// Tunnel tags of not yet looked-up packets: (index in `pend`, tag);
    /// only packets with a tag are listed.
    pend_via: Vec<(u32, u16)>,
    stats: CongestionStats,
    /// QD above K_max since (time + 1; 0: not above; REACTED: a CNP went
    /// out since the crossing).
    cross: u64,
    /// QD was above K_max at the last poll (the trigger has fired for
    /// this excursion).
    qd_acted: bool,
    /// The deepest QD seen above K_max since the last poll and since the
    /// interval began (0: none): an excursion that packets leaving ended
    /// before the poll still triggers (s.5.4 (a)).
    peak_poll: u64,
    peak_iv: u64,
    /// When the observation window last changed length (RTT_est or the
    /// policy at run time; taken at the next poll): a flow's windows that
    /// began before it were counted over the old length and say nothing
    /// about a fall of its rate (s.5.7).
    win_changed_at: u64,
    win_change_pending: bool,
    /// CNP reaction times (ns): from the packet that took QD above K_max
    /// to the first CNP after it.
    /// Off the packet path: boxed, so that the port's hot fields stay
    /// together.
    reaction: Box<Reaction>,
    /// RTT_est from receiver reporting (`[port.congestion.rtt_acks]`;
    /// [`super::ackrtt`]); None: off.
    ack: Option<Box<AckRtt>>,
    /// Reads the time now (the worker's clock); None: the time of the
    /// calls is taken as now (tests, simulation). Used only off the packet
    /// path, to date the ACK that ends a round trip timed for `ack`.
    clock: Option<crate::ReadClock>,
}

struct Reaction {
    hist: hdrhistogram::Histogram<u64>,
    summary: ReactionSummary,
    dirty: bool,
    at: u64,
}

const REACTED: u64 = u64::MAX;

/// Percentiles of the live CNP reaction times of a port (ns).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReactionSummary {
    /// K_max crossings that a CNP answered.
    pub count: u64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
}

/// The port-level decision of one evaluation.
#[derive(Debug, Clone, Copy)]
struct Decision {
    action: Action,
    parameter: u16,
    level: u8,
    metric_type: MetricType,
    metric_value: u32,
}

impl CongestionPort {
    /// Build with the flow table preallocated. `p` should have passed
    /// [`PortParams::validate`]; out-of-range values are clamped, never a
    /// panic.
    pub fn new(p: PortParams) -> Self {
        let mut cfg_qp = FxHashMap::default();
        cfg_qp.reserve(16);
        let cap = p.flow_capacity.clamp(1, super::MAX_FLOW_CAPACITY);
        let mut s = CongestionPort {
            p,
            k_max: 0,
            k_min_cfg: 0,
            k_min: 0,
            buffer: 0,
            flows: FlowTable::new(cap),
            cfg_qp,
            formats: Vec::new(),
            bucket: TokenBucket::new(p.cnp_port_max_pps, p.cnp_port_burst),
            iv_started: false,
            iv_start: 0,
            iv_qd_start: 0,
            iv_pkts: 0,
            iv_marked: 0,
            iv_qd_sum: 0,
            iv_qd_n: 0,
            avg_qd: None,
            below_kmin_since: None,
            throttled: 0,
            resume_next: 0,
            age_cursor: 0,
            age_lb: 0,
            age_pass_min: u64::MAX,
            thr: Vec::with_capacity(cap),
            pend: Vec::with_capacity(MAX_PENDING),
            pend_done: 0,
            pend_via: Vec::with_capacity(MAX_PENDING),
            stats: CongestionStats::default(),
            cross: 0,
            qd_acted: false,
            peak_poll: 0,
            peak_iv: 0,
            win_changed_at: 0,
            win_change_pending: false,
            // 1 us to 60 s at 2 significant digits: about 2300 counters,
            // allocated here, never on the packet path.
            ack: p.ack_rtt.map(|a| Box::new(AckRtt::new(a))),
            clock: None,
            reaction: Box::new(Reaction {
                hist: hdrhistogram::Histogram::new_with_bounds(1_000, 60_000_000_000, 2).expect("valid histogram bounds"),
                summary: ReactionSummary::default(),
                dirty: false,
                at: 0,
            }),
        };
        s.recompute();
        s
    }

    fn recompute(&mut self) {
        self.k_max = self.p.k_max();
        self.k_min_cfg = self.p.k_min().min(self.k_max.saturating_sub(1));
        self.k_min = self.k_min_cfg;
        self.buffer = self.p.buffer_bytes().max(1);
        self.avg_qd = None;
        self.stats.k_min = self.k_min;
        self.stats.k_max = self.k_max;
    }

    /// Runtime change (thresholds, RTT_est, rate, policy, caps): K_min and
    /// K_max are recomputed, the adaptive state restarts. The flow table
    /// keeps its size (`flow_capacity` takes effect only in `new`).
    pub fn set_params(&mut self, p: PortParams) {
        self.resolve();
        let bucket_changed =
            p.cnp_port_max_pps != self.p.cnp_port_max_pps || p.cnp_port_burst != self.p.cnp_port_burst;
        let cap = self.p.flow_capacity;
        if p.observation_window_ns() != self.p.observation_window_ns() {
            self.win_change_pending = true;
        }
        self.p = p;
        self.p.flow_capacity = cap;
        if bucket_changed {
            // Tokens taken stay taken: a new cap is no new burst.
            self.bucket.retune(p.cnp_port_max_pps, p.cnp_port_burst);
        }
        match (p.ack_rtt, self.ack.as_mut()) {
            (Some(a), Some(m)) => m.set_params(a),
            (Some(a), None) => self.ack = Some(Box::new(AckRtt::new(a))),
            (None, _) => self.ack = None,
        }
        // The Resume's time follows the RTT_est now in force.
        self.resume_next = 0;
        self.recompute();
    }

    pub fn params(&self) -> &PortParams {
        &self.p
    }

    /// Effective (K_min, K_max), bytes.
    pub fn thresholds(&self) -> (u64, u64) {
        (self.k_min, self.k_max)
    }

    pub fn stats(&self) -> &CongestionStats {
        &self.stats
    }

    /// The worker's clock, read to date the ACK that ends a timed round
    /// trip (`rtt_acks`; see [`AckRtt::on_response_at`]).
    pub fn set_clock(&mut self, clock: crate::ReadClock) {
        self.clock = Some(clock);
    }

    /// What the receivers' ACKs measured (None: `rtt_acks` off).
    pub fn ack_rtt(&self) -> Option<super::AckRttStats> {
        self.ack.as_ref().map(|a| a.stats)
    }

    /// K_min as configured (the adaptive policy moves the effective one).
    pub fn k_min_configured(&self) -> u64 {
        self.k_min_cfg
    }

    /// Flows sent a Notify, Rate Reduce or Pause and not yet a Resume.
    pub fn throttled_flows(&self) -> usize {
        self.throttled
    }

    pub(crate) fn flow_table(&self) -> &FlowTable {
        &self.flows
    }

    /// Bytes of a flow in the queue (tests, `show`).
    pub fn flow_queued(&self, f: FlowId) -> Option<u64> {
        self.flows.get(f.0).map(|_| self.flows.queued(f.0))
    }

    /// The UDP source port a flow's entry keeps (tests).
    pub fn flow_sport(&self, f: FlowId) -> Option<u16> {
        self.flows.get(f.0).map(|e| e.sport)
    }

    /// A flow's tunnel tag ([`CnpRequest::via`]; tests).
    pub fn flow_via(&self, f: FlowId) -> Option<u16> {
        self.flows.get(f.0).map(|e| e.via)
    }

    /// The CNP of `r`, which [`CongestionPort::poll`] decided, could not be
    /// built or sent: it is counted as not built instead of by its action.
    /// (The flow keeps the CNP's time, so the next one waits RTT_est as
    /// after any CNP.)
    pub fn cnp_not_built(&mut self, r: &CnpRequest) {
        let n = match r.info.action {
            Action::Notify => &mut self.stats.cnp_notify,
            Action::Pause => &mut self.stats.cnp_pause,
            Action::RateReduce => &mut self.stats.cnp_rate_reduce,
            Action::Resume => &mut self.stats.cnp_resume,
        };
        *n = n.saturating_sub(1);
        self.stats.cnp_not_built += 1;
    }

    /// The learned source QP of a flow.
    pub fn flow_source_qp(&self, src: IpAddr, dst: IpAddr, dest_qp: u32) -> Option<u32> {
        let s = self.flows.lookup(&PackedKey::new(src, dst, dest_qp))?;
        self.flows.get(s)?.src_qp()
    }

    /// The slot of a flow, if learned.
    pub fn flow_id(&self, src: IpAddr, dst: IpAddr, dest_qp: u32) -> Option<FlowId> {
        self.flow_id_of(&PackedKey::new(src, dst, dest_qp))
    }

    /// The slot of the flow of `key` (a UD flow's has its source QP), if
    /// learned.
    pub fn flow_id_of(&self, key: &PackedKey) -> Option<FlowId> {
        self.flows.lookup(key).map(FlowId)
    }

    /// A flow's source QP (learned, configured, or a UD flow's own).
    pub fn flow_src_qp(&self, f: FlowId) -> Option<u32> {
        self.flows.get(f.0)?.src_qp()
    }

    #[inline(always)]
    fn observe_qd(&mut self, qd: u64, now: u64) {
        self.stats.qd = qd;
        if qd < self.k_min {
            if self.below_kmin_since.is_none() {
                self.below_kmin_since = Some(now);
            }
        } else {
            self.below_kmin_since = None;
        }
    }

    /// QD above K_max: the crossing time, for the reaction time (set on
    /// enqueue and at `poll`, cleared at `poll` once QD is back at or below
    /// K_max).
    #[inline(always)]
    fn watch_crossing(&mut self, qd: u64, now: u64) {
        if qd > self.k_max {
            if self.cross == 0 {
                self.cross = now.saturating_add(1).min(REACTED - 1);
            }
            self.peak_poll = self.peak_poll.max(qd);
            self.peak_iv = self.peak_iv.max(qd);
        }
    }

    /// Live CNP reaction times, as of the last [`CongestionPort::refresh_reaction`].
    pub fn reaction(&self) -> ReactionSummary {
        self.reaction.summary
    }

    /// Recompute the reaction percentiles if new times came in, at most
    /// every 100 ms unless `force` (a pass over the histogram's ~2300
    /// counters).
    pub fn refresh_reaction(&mut self, now: u64, force: bool) {
        let r = &mut *self.reaction;
        if !r.dirty || (!force && now.saturating_sub(r.at) < 100_000_000) {
            return;
        }
        let h = &r.hist;
        r.summary = ReactionSummary {
            count: h.len(),
            p50_ns: h.value_at_quantile(0.5),
            p90_ns: h.value_at_quantile(0.9),
            p99_ns: h.value_at_quantile(0.99),
            max_ns: h.max(),
        };
        r.dirty = false;
        r.at = now;
    }

    /// Monitoring and first-level marking of a packet entering the queue.
    /// EMR counts data packets only (s.5.3.1: "the fraction of data
    /// packets marked"): not RoCEv2 acknowledgements and CNPs.
    #[inline(always)]
    fn enqueue_mark(&mut self, ecn_capable: bool, data: bool, qd_after: u64, now: u64) -> bool {
        self.observe_qd(qd_after, now);
        self.watch_crossing(qd_after, now);
        let mark = ecn_capable && qd_after > self.k_min;
        self.stats.marked += u64::from(mark);
        self.iv_pkts += u64::from(data);
        self.iv_marked += u64::from(data && mark);
        mark
    }

    /// A packet entered the queue (`qd_after` includes it). Returns whether
    /// to set CE, and the flow slot to hand back to `on_dequeue`.
    pub fn on_enqueue(
        &mut self,
        info: Option<&RoceInfo>,
        len: u32,
        ecn_capable: bool,
        qd_after: u64,
        now: u64,
    ) -> (bool, Option<FlowId>) {
        self.resolve();
        let mark = self.enqueue_mark(ecn_capable, info.is_none_or(|i| is_data(i.opcode)), qd_after, now);
        let flow = match info {
            Some(i) if is_data(i.opcode) => {
                let key = i.key();
                self.learn(&key, self.flows.hash(&key), i.psn, i.sport, len, now)
            }
            _ => None,
        };
        (mark, flow)
    }

    /// Whether [`CongestionPort::on_enqueue_deferred`] has room.
    #[inline(always)]
    pub fn pending_full(&self) -> bool {
        self.pend.len() >= MAX_PENDING
    }

    /// Whether packets wait for their flow lookup.
    #[inline(always)]
    pub fn has_pending(&self) -> bool {
        !self.pend.is_empty()
    }

    /// [`CongestionPort::on_enqueue`] for the packet path: the marking
    /// decision and the monitoring counters now, the flow learning deferred
    /// to the next [`CongestionPort::take_resolved`] (or any other call
    /// that reads or changes flow state), which does the lookups of the
    /// whole batch with their memory accesses overlapped. `tag` comes back
    /// from `take_resolved` with the packet's flow slot. The caller must
    /// check [`CongestionPort::pending_full`] first (when full, the packet
    /// is learned at once and `tag` is not returned: nothing is lost but
    /// its flow slot). A packet of the same flow as the previous one, at
    /// the same time and with the next tag (a packet train, as an RDMA
    /// message's packets are) joins its entry: one lookup, the entry
    /// updated with the train's bytes and last PSN, each tag handed back.
    #[inline(always)]
    pub fn on_enqueue_deferred(
        &mut self,
        roce: Option<&RoceKey>,
        len: u32,
        ecn_capable: bool,
        qd_after: u64,
        now: u64,
        tag: u32,
    ) -> bool {
        let mark = self.enqueue_mark(ecn_capable, roce.is_none_or(|r| is_data(r.opcode)), qd_after, now);
        if let Some(r) = roce.filter(|r| is_data(r.opcode)) {
            // A packet train: the same flow as the previous packet, not
            // looked up yet, same time, the next tag.
            let hash = self.flows.hash(&r.key);
            let open = self.pend_done < self.pend.len();
            if let Some(last) = self.pend.last_mut().filter(|_| open) {
                if last.hash == hash && last.key == r.key && last.now == now && last.tag.wrapping_add(u32::from(last.n)) == tag && last.n < u16::MAX && last.len.checked_add(len).is_some() {
                    last.n += 1;
                    last.len += len;
                    last.psn = r.psn;
                    return mark;
                }
            }
            if self.pend.len() < MAX_PENDING {
                self.flows.prefetch_bucket(hash);
                self.pend.push(Pending { key: r.key, hash, now, psn: r.psn, len, tag, n: 1, flow: NONE, sport: r.sport, hint: NONE });
            } else {
                self.resolve();
                self.learn(&r.key, hash, r.psn, r.sport, len, now);
            }
        }
        mark
    }

    /// The packet [`CongestionPort::on_enqueue_deferred`] just took came in
    /// the tunnel the caller tags `via` (not 0): its flow takes the tag
    /// ([`CnpRequest::via`]) when its lookup is done (at once if it was).
    /// Called for tunnelled packets only, so plain ones pay nothing.
    #[cold]
    #[inline(never)]
    pub fn tag_last(&mut self, roce: &RoceKey, via: u16) {
        if !is_data(roce.opcode) || via == 0 {
            return;
        }
        let open = self.pend_done < self.pend.len();
        match self.pend.last() {
            // Pushed, or joined a train: tagged when looked up.
            // One entry per pending lookup (at most MAX_PENDING): a
            // train's later packet replaces its tag.
            Some(p) if open && p.key == roce.key => {
                let i = (self.pend.len() - 1) as u32;
                match self.pend_via.last_mut() {
                    Some(l) if l.0 == i => l.1 = via,
                    _ => self.pend_via.push((i, via)),
                }
                debug_assert!(self.pend_via.len() <= self.pend.len());
            }
            // Learned at once (the batch was full).
            _ => {
                if let Some(s) = self.flows.lookup(&roce.key) {
                    self.set_via(s, via);
                }
            }
        }
    }

    /// The flow in slot `s` now comes in the tunnel tagged `via`.
    #[cold]
    fn set_via(&mut self, s: u32, via: u16) {
        if let Some(f) = self.flows.get_mut(s) {
            f.via = via;
        }
    }

    /// Look up the flows of the deferred packets, in arrival order.
    #[inline]
    fn resolve(&mut self) {
        let (from, to) = (self.pend_done, self.pend.len());
        if from == to {
            return;
        }
        // The buckets were prefetched on enqueue: find the entries and
        // start fetching them all, then learn.
        for p in &mut self.pend[from..to] {
            p.hint = self.flows.prefetch_entry_of(p.hash);
        }
        for i in from..to {
            let p = self.pend[i];
            let f = self.learn_hint(&p.key, p.hash, p.hint, p.psn, i as u32, p.sport, p.len, p.now);
            if f.is_none() {
                // A train's other packets found the table full too.
                self.stats.flow_table_full += u64::from(p.n - 1);
            }
            self.pend[i].flow = f.map_or(NONE, |f| f.0);
        }
        self.pend_done = to;
        if !self.pend_via.is_empty() {
            self.resolve_via();
        }
    }

    /// Tag the flows of the packets that came in a tunnel, in arrival order
    /// (the last packet's tunnel wins).
    #[cold]
    #[inline(never)]
    fn resolve_via(&mut self) {
        for k in 0..self.pend_via.len() {
            let (i, via) = self.pend_via[k];
            let f = self.pend[i as usize].flow;
            if f != NONE {
                self.set_via(f, via);
            }
        }
        self.pend_via.clear();
    }

    /// A RoCEv2 packet the full queue tail-dropped: its flow's entry is
    /// updated all the same (s.5.2: "upon each matching packet
    /// observation"), so the flow's arrival rate (s.5.7) is what the
    /// source sends, not what the queue took; nothing is queued for it.
    /// The same for a packet another worker dropped on its way to this
    /// port (its hand-off ring was full).
    pub fn on_tail_drop(&mut self, roce: &RoceKey, len: u32, now: u64) {
        if !is_data(roce.opcode) {
            return;
        }
        self.resolve();
        let hash = self.flows.hash(&roce.key);
        if let Some(s) = self.flows.lookup_hint(&roce.key, hash, NONE).or_else(|| self.learn_new(&roce.key, hash, roce.sport, now)) {
            let prev = self.touch(s, roce.psn, len, now);
            self.stats.drops_counted += 1;
            // Karn's rule across the drop: a go-back whose first packet is
            // dropped is still one.
            if let Some(a) = self.ack.as_mut() {
                a.on_drop(s, roce.psn, (prev != NO_PSN).then_some(prev), now);
            }
        }
    }

    /// Learn the deferred packets' flows and hand each `(tag, flow)` over.
    pub fn take_resolved(&mut self, mut f: impl FnMut(u32, Option<FlowId>)) {
        self.resolve();
        for p in &self.pend {
            let flow = (p.flow != NONE).then_some(FlowId(p.flow));
            for k in 0..u32::from(p.n) {
                f(p.tag.wrapping_add(k), flow);
            }
        }
        self.pend.clear();
        self.pend_done = 0;
    }

    /// Start fetching a flow's entry (before its `on_dequeue`).
    #[inline(always)]
    pub fn prefetch_flow(&self, f: FlowId) {
        self.flows.prefetch_slot(f.0);
    }

    #[inline(always)]
    fn learn(&mut self, key: &PackedKey, hash: u64, psn: u32, sport: u16, len: u32, now: u64) -> Option<FlowId> {
        self.learn_hint(key, hash, NONE, psn, NONE, sport, len, now)
    }

    /// [`CongestionPort::learn`] trying the slot `hint` first; `train`: the
    /// packets' entry in `pend` (NONE: one packet, not deferred).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)] // the packet path's fields, unpacked
    fn learn_hint(&mut self, key: &PackedKey, hash: u64, hint: u32, psn: u32, train: u32, sport: u16, len: u32, now: u64) -> Option<FlowId> {
        let s = match self.flows.lookup_hint(key, hash, hint) {
            Some(s) => s,
            None => self.learn_new(key, hash, sport, now)?,
        };
        let prev = self.touch(s, psn, len, now);
        self.flows.add_queued(s, u64::from(len));
        if self.ack.is_some() {
            self.ack_data(s, psn, train, prev, now);
        }
        Some(FlowId(s))
    }

    /// A packet of flow `s` arrived: its window bytes, last PSN, last
    /// seen. Returns the flow's last PSN before it.
    #[inline(always)]
    fn touch(&mut self, s: u32, psn: u32, len: u32, now: u64) -> u32 {
        let win = self.p.observation_window_ns();
        let Some(f) = self.flows.get_mut(s) else { return NO_PSN };
        f.roll(now, win);
        f.last_seen = f.last_seen.max(now);
        let prev = f.last_psn;
        f.last_psn = psn & PSN_MASK;
        f.add_win_bytes(len);
        prev
    }

    #[cold]
    #[inline(never)]
    fn learn_new(&mut self, key: &PackedKey, hash: u64, sport: u16, now: u64) -> Option<u32> {
        let Some(s) = self.flows.insert_h(*key, hash, now) else {
            self.stats.flow_table_full += 1;
            return None;
        };
        // The entropy port a sender uses for a QP does not change while
        // the QP lives: kept from the first packet (the packet path never
        // touches the entry's second line for it).
        if let Some(f) = self.flows.get_mut(s) {
            f.sport = sport;
        }
        self.age_lb = self.age_lb.min(now);
        self.age_pass_min = self.age_pass_min.min(now);
        self.stats.flows_active = self.flows.len() as u64;
        // A UD flow's source QP is its DETH's (in its key), whatever is
        // configured.
        if !self.cfg_qp.is_empty() && key.ud_source().is_none() {
            if let Some(&q) = self.cfg_qp.get(&(key.src(), key.dst(), key.dest_qp())) {
                if let Some(f) = self.flows.get_mut(s) {
                    f.set_src_qp(q, true);
                }
            }
        }
        Some(s)
    }

    /// [`AckRtt::on_data`] for the packets of flow `s` (one, or the train
    /// of `pend[train]`, ending in `psn`) just queued; `prev`: the flow's
    /// PSN before them ([`NO_PSN`]: they are its first) (out of line: the
    /// packet path of a port without `rtt_acks` pays one test; the train's
    /// length is read here, not carried through the packet path).
    #[inline(never)]
    fn ack_data(&mut self, s: u32, psn: u32, train: u32, prev: u32, now: u64) {
        let queued = self.flows.queued(s);
        let n = self.pend.get(train as usize).map_or(1, |p| u32::from(p.n));
        if let Some(a) = self.ack.as_mut() {
            a.on_data(s, psn, n, (prev != NO_PSN).then_some(prev), queued, now);
        }
    }

    /// [`AckRtt::on_dequeue`], out of line as [`Self::ack_data`].
    #[inline(never)]
    fn ack_dequeued(&mut self, s: u32, len: u32, now: u64) {
        if let Some(a) = self.ack.as_mut() {
            a.on_dequeue(s, len, now);
        }
    }

    /// The packet left the queue (transmitted or dropped).
    #[inline]
    pub fn on_dequeue(&mut self, flow: Option<FlowId>, len: u32, qd_after: u64, now: u64) {
        self.resolve();
        self.observe_qd(qd_after, now);
        if let Some(f) = flow {
            if self.flows.get(f.0).is_some() {
                self.flows.sub_queued(f.0, u64::from(len));
                if self.ack.is_some() {
                    self.ack_dequeued(f.0, len, now);
                }
            }
        }
    }

    /// A RoCEv2 packet of the reverse direction, a response or a standard
    /// CNP ([`RoceInfo::teaches_source_qp`]): learn the forward flow's
    /// source QP (module documentation, "Flows and source QPs"). A
    /// Long-haul CNP (E set) is ignored.
    pub fn on_reverse(&mut self, info: &RoceInfo, now: u64) {
        self.resolve();
        let cnp = info.opcode == opcode::CNP;
        if cnp && info.ext {
            return;
        }
        // Forward flows go from info.dst to info.src.
        let (fsrc, fdst) = (info.dst, info.src);
        let qp = info.dest_qp & PSN_MASK;
        let mut s = self.flows.pair_head(fsrc, fdst);
        if s == NONE {
            self.stats.reverse_unmatched += 1;
            return;
        }
        let mut n = 0usize;
        // A response names the flow whose last PSN its own is closest
        // to: at most RESPONSE_PSN_WINDOW below it (an ACK acknowledges
        // what the flow sent), or, for an RDMA READ response, at most that
        // far above it (the responses of a READ request carry the PSNs
        // after the request's, IBA 9.7). A tie is ambiguous; a response
        // no flow's PSN admits names none of them, not even the pair's
        // only flow (the response of another QP of the two hosts whose
        // packets leave by another port). A standard CNP's PSN says
        // nothing (usually 0): it names the pair's one flow without a
        // source QP yet (neither learned nor configured).
        let read = (opcode::RC | opcode::RDMA_READ_RESPONSE_FIRST..=opcode::RC | opcode::RDMA_READ_RESPONSE_ONLY).contains(&info.opcode);
        let (mut best, mut best_d, mut tie) = (NONE, u32::MAX, false);
        let (mut unknown, mut unknowns) = (NONE, 0usize);
        while s != NONE {
            let Some(f) = self.flows.get(s) else { break };
            if f.src_qp() == Some(qp) {
                // Already known: an ACK may end the round trip timed.
                if let Some(a) = self.ack.as_mut() {
                    a.on_response_at(s, info.opcode, info.psn, info.syndrome, now, || self.clock.as_ref().map_or(now, |c| c()));
                }
                return;
            }
            n += 1;
            if cnp {
                if f.src_qp().is_none() {
                    unknowns += 1;
                    unknown = s;
                }
            } else if !f.src_qp_fixed() {
                let below = f.last_psn.wrapping_sub(info.psn) & PSN_MASK;
                let above = info.psn.wrapping_sub(f.last_psn) & PSN_MASK;
                let d = if below < RESPONSE_PSN_WINDOW {
                    Some(below)
                } else if read && above < RESPONSE_PSN_WINDOW {
                    Some(above)
                } else {
                    None
                };
                if let Some(d) = d {
                    if d < best_d {
                        best_d = d;
                        best = s;
                        tie = false;
                    } else if d == best_d {
                        tie = true;
                    }
                }
            }
            s = self.flows.pair_next(s);
            if n >= MAX_REVERSE_WALK && s != NONE {
                // More flows between the two hosts than one packet may
                // cost: learn nothing rather than guess among some.
                self.stats.reverse_walk_limited += 1;
                return;
            }
        }
        let pick = match cnp {
            // The one flow of the pair without a source QP (when every
            // one has one, the CNP's QP is none of theirs: unmatched).
            true if unknowns <= 1 => unknown,
            false if !tie => best,
            _ => {
                self.stats.reverse_ambiguous += 1;
                return;
            }
        };
        match self.flows.get_mut(pick) {
            // A source QP a response proved is not replaced by a guess
            // among several flows (n > 1: its PSN may be near another
            // flow's by chance).
            Some(f) if n > 1 && f.src_qp().is_some() => self.stats.reverse_ambiguous += 1,
            Some(f) if !f.src_qp_fixed() => {
                f.set_src_qp(qp, false);
                if cnp {
                    self.stats.reverse_learned_from_cnp += 1;
                } else {
                    self.stats.reverse_learned += 1;
                    // Only the pair's one flow is surely this ACK's: one
                    // chosen by its PSN may be another's, whose timing it
                    // would end early (the estimate is a minimum).
                    if n == 1 {
                        if let Some(a) = self.ack.as_mut() {
                            a.on_response_at(pick, info.opcode, info.psn, info.syndrome, now, || self.clock.as_ref().map_or(now, |c| c()));
                        }
                    }
                }
            }
            _ => self.stats.reverse_unmatched += 1,
        }
    }

    /// Configured source QP (control plane, between bursts): applies to the
    /// flow now and whenever it is learned again; wins over reverse
    /// learning.
    pub fn set_source_qp(&mut self, src: IpAddr, dst: IpAddr, dest_qp: u32, src_qp: u32) {
        self.resolve();
        let dest_qp = dest_qp & PSN_MASK;
        self.cfg_qp.insert((src, dst, dest_qp), src_qp);
        if let Some(s) = self.flows.lookup(&PackedKey::new(src, dst, dest_qp)) {
            if let Some(f) = self.flows.get_mut(s) {
                f.set_src_qp(src_qp, true);
            }
        }
    }

    /// Forget a configured source QP: the flow learns from responses
    /// again.
    pub fn clear_source_qp(&mut self, src: IpAddr, dst: IpAddr, dest_qp: u32) {
        self.resolve();
        let dest_qp = dest_qp & PSN_MASK;
        if self.cfg_qp.remove(&(src, dst, dest_qp)).is_none() {
            return;
        }
        if let Some(s) = self.flows.lookup(&PackedKey::new(src, dst, dest_qp)) {
            if let Some(f) = self.flows.get_mut(s) {
                f.clear_src_qp();
            }
        }
    }

    /// Room for `n` configured source QPs (so that adding them between
    /// bursts does not allocate).
    pub fn reserve_source_qps(&mut self, n: usize) {
        self.cfg_qp.reserve(n.saturating_sub(self.cfg_qp.len()));
    }

    /// The Congestion Level of a CNP for congestion at `qd`: at least 1
    /// (s.6.1: 0 is "no congestion", what only a Resume says).
    fn level_for(&self, qd: u64) -> u8 {
        self.level_at(qd).max(1)
    }

    /// QD as a share of the buffer, 0..=255 (a Resume's level: 0 when the
    /// queue is about empty).
    fn level_at(&self, qd: u64) -> u8 {
        let b = self.buffer as f64;
        (255.0 * qd.min(self.buffer) as f64 / b).round().clamp(0.0, 255.0) as u8
    }

    fn pause_threshold(&self) -> u64 {
        (self.p.policy.pause_at * self.buffer as f64) as u64
    }

    fn pause_us(&self, qd: u64) -> u16 {
        let excess = qd.saturating_sub(self.k_min) as f64;
        let us = (excess * 8e6 / self.p.rate_bps.max(1) as f64).ceil();
        us.clamp(1.0, f64::from(self.p.policy.max_pause_us.max(1))) as u16
    }

    fn rate_reduce_pct(&self, level: u8) -> u16 {
        let pol = &self.p.policy;
        let pct = (f64::from(level) * pol.rate_reduce_pct_per_level).round();
        let lo = f64::from(pol.rate_reduce_min_pct.min(100));
        let hi = f64::from(pol.rate_reduce_max_pct.min(100)).max(lo);
        pct.clamp(lo, hi) as u16
    }

    fn qd_metric(&self, qd: u64) -> (MetricType, u32) {
        if self.p.zero_metrics {
            (MetricType::Unspecified, 0)
        } else {
            (MetricType::QueueDepthKb, (qd / 1000).min(u64::from(METRIC_MAX)) as u32)
        }
    }

    fn decide(&self, qd: u64, t_qd: bool, t_qgr: bool) -> Decision {
        let level = self.level_for(qd);
        let (action, parameter) = if qd >= self.pause_threshold() {
            (Action::Pause, self.pause_us(qd))
        } else if t_qd {
            (Action::RateReduce, self.rate_reduce_pct(level))
        } else {
            (Action::Notify, 0)
        };
        let (metric_type, metric_value) = if self.p.zero_metrics {
            (MetricType::Unspecified, 0)
        } else if t_qd || action == Action::Pause {
            self.qd_metric(qd)
        } else if t_qgr {
            (
                MetricType::QueueGrowthKbPerMs,
                self.stats.qgr_kb_per_ms.round().clamp(0.0, f64::from(METRIC_MAX)) as u32,
            )
        } else {
            (
                MetricType::EcnMarkingPercent,
                (self.stats.emr * 100.0).round().clamp(0.0, 100.0) as u32,
            )
        };
        Decision {
            action,
            parameter,
            level,
            metric_type,
            metric_value,
        }
    }

    /// The stricter instruction of an escalation (s.5.7).
    fn escalate(&self, d: Decision, qd: u64) -> Decision {
        let level = d.level.saturating_add(self.p.policy.escalation_step.max(1));
        let (action, parameter) = match d.action {
            Action::Notify => (Action::RateReduce, self.rate_reduce_pct(level)),
            Action::RateReduce => (Action::Pause, self.pause_us(qd)),
            // Already a pause: a longer one (twice, up to the policy's
            // longest), the stricter instruction s.5.7 asks for.
            Action::Pause => {
                let max = self.p.policy.max_pause_us.max(1);
                (Action::Pause, d.parameter.max(self.pause_us(qd)).saturating_mul(2).clamp(1, max))
            }
            Action::Resume => (d.action, d.parameter),
        };
        let (metric_type, metric_value) = if action == Action::Pause && d.action != Action::Pause {
            self.qd_metric(qd)
        } else {
            (d.metric_type, d.metric_value)
        };
        Decision {
            action,
            parameter,
            level,
            metric_type,
            metric_value,
        }
    }

    /// The CNP format for a flow from `src`: the longest configured prefix
    /// containing it, else the port's default; None for an IPv4 source
    /// whose format would be ICMPv6 (s.4: IPv4 only takes the RoCEv2
    /// format; s.10.5: which goes only where configured).
    fn format_for(&self, src: IpAddr) -> Option<CnpFormat> {
        let f = self.formats.iter().filter(|(p, _)| p.contains(&src)).max_by_key(|(p, _)| p.prefix_len()).map_or(self.p.default_format, |&(_, f)| f);
        (src.is_ipv6() || f == CnpFormat::Roce).then_some(f)
    }

    /// Configure the CNP format by source prefix (the complete list; an
    /// ICMPv6 entry for an IPv4 prefix is ignored: IPv4 sources only take
    /// the RoCEv2 format).
    pub fn set_source_formats(&mut self, f: &[(IpNet, CnpFormat)]) {
        self.formats.clear();
        self.formats.extend(f.iter().filter(|(p, f)| matches!(p, IpNet::V6(_)) || *f == CnpFormat::Roce).copied());
    }

    /// The configured CNP formats by source prefix.
    pub fn source_formats(&self) -> &[(IpNet, CnpFormat)] {
        &self.formats
    }

    /// Queue a request for flow slot `s`; false when `out` is full or the
    /// port cap refused (the caller stops then).
    fn emit(&mut self, s: u32, d: Decision, now: u64, out: &mut Vec<CnpRequest>) -> bool {
        let Some(f) = self.flows.get(s).copied() else {
            return true;
        };
        let key = f.key();
        let src = key.src();
        let Some(format) = self.format_for(src) else {
            // Nothing this source is configured to take: the next flow.
            self.stats.format_unconfigured += 1;
            self.unreachable(s, d.action);
            return true;
        };
        let src_qp = f.src_qp();
        let skip = src_qp.is_none()
            && match self.p.policy.unknown_source_qp {
                UnknownSourceQp::Send => false,
                UnknownSourceQp::Icmpv6Only => format == CnpFormat::Roce,
                UnknownSourceQp::Skip => true,
            };
        if skip {
            // Not sent, and not recorded as sent for the flow: its
            // per-flow limit and Resume are untouched.
            self.stats.source_qp_unknown_skipped += 1;
            self.unreachable(s, d.action);
            return true;
        }
        if out.len() >= out.capacity() {
            self.stats.out_full += 1;
            return false;
        }
        if !self.bucket.take(now) {
            self.stats.port_capped += 1;
            return false;
        }
        if src_qp.is_none() {
            self.stats.source_qp_unknown += 1;
        }
        out.push(CnpRequest {
            to: src,
            flow_dst: key.dst(),
            dest_qp: key.dest_qp(),
            src_qp,
            info: CnpInfo {
                congestion_level: d.level,
                action: d.action,
                parameter: d.parameter,
                source_qp: src_qp.unwrap_or(0),
                metric_type: d.metric_type,
                metric_value: d.metric_value,
            },
            format,
            via: f.via,
        });
        if d.action != Action::Resume && self.cross != 0 && self.cross != REACTED {
            // The first CNP since QD went above K_max.
            self.reaction.hist.saturating_record((now + 1).saturating_sub(self.cross).max(1));
            self.reaction.dirty = true;
            self.cross = REACTED;
        }
        match d.action {
            Action::Notify => self.stats.cnp_notify += 1,
            Action::Pause => self.stats.cnp_pause += 1,
            Action::RateReduce => self.stats.cnp_rate_reduce += 1,
            Action::Resume => self.stats.cnp_resume += 1,
        }
        let was = f.throttled();
        let now_throttled = d.action != Action::Resume;
        if let Some(f) = self.flows.get_mut(s) {
            f.record_cnp(now, d.action);
        }
        match (was, now_throttled) {
            (false, true) => {
                self.throttled += 1;
                // At most one entry per live flow: within capacity.
                self.thr.push(s);
            }
            (true, false) => self.throttled = self.throttled.saturating_sub(1),
            _ => {}
        }
        true
    }

    /// The Resume for throttled flow `s` cannot be sent (the configuration
    /// changed since it was throttled: its source takes no format now, or
    /// its source QP is unknown and the policy holds such CNPs back): it
    /// leaves the throttled flows, so the Resume is not tried (and counted)
    /// again at every poll until the flow ages out.
    fn unreachable(&mut self, s: u32, action: Action) {
        if action != Action::Resume {
            return;
        }
        if let Some(f) = self.flows.get_mut(s).filter(|f| f.throttled()) {
            f.clear_throttled();
            self.throttled = self.throttled.saturating_sub(1);
        }
    }

    /// A deferral made at `since` is over at `now`: it lasts until at
    /// least one evaluation after its window has seen it, so that the
    /// escalation check (s.5.7 MUST) happens also with a monitoring
    /// interval longer than the window.
    pub(crate) fn deferral_over(p: &PortParams, since: u64, now: u64) -> bool {
        let win = p.observation_window_ns();
        now.saturating_sub(since) >= win.saturating_add(win.max(p.interval_ns))
    }

    /// Once per burst: interval logic when due, triggers, Resume, aging.
    pub fn poll(&mut self, qd: u64, now: u64, out: &mut Vec<CnpRequest>) {
        self.resolve();
        if self.win_change_pending {
            self.win_change_pending = false;
            self.win_changed_at = now;
        }
        self.observe_qd(qd, now);
        self.watch_crossing(qd, now);
        // With `qd_immediate`, the first poll (every loop of the worker)
        // that finds QD above K_max since it was last at or below it: the
        // QD trigger fires now (s.5.4: "when any of the following
        // conditions is satisfied"), not at the end of the monitoring
        // interval, so an excursion that ends within one interval is not
        // missed; EMR and QGR are rates over the interval and wait for it.
        // An excursion above K_max since the last poll that packets leaving
        // ended before it (the worker sends between admitting and
        // polling) counts as one that stands: acted on with its deepest
        // QD.
        let missed = qd <= self.k_max && self.peak_poll > 0 && self.cross != REACTED;
        let crossed = self.p.qd_immediate && ((qd > self.k_max && !self.qd_acted) || missed);
        if !self.iv_started {
            self.iv_started = true;
            self.iv_start = now;
            self.iv_qd_start = qd;
        }
        self.iv_qd_sum = self.iv_qd_sum.saturating_add(u128::from(qd));
        self.iv_qd_n += 1;

        if self.throttled > 0 && now >= self.resume_next {
            if let Some(since) = self.below_kmin_since {
                if now.saturating_sub(since) >= self.p.rtt_est_ns {
                    self.send_resumes(qd, now, out);
                }
            }
        }

        let el = now.saturating_sub(self.iv_start);
        if el >= self.p.interval_ns.max(1) {
            // QD above K_max now, or (interval mode) at some time in the
            // interval; the immediate mode acted on those at once.
            let peak = if qd > self.k_max {
                qd
            } else if self.p.qd_immediate {
                0
            } else {
                self.peak_iv
            };
            self.close_interval(qd, now, el);
            self.evaluate(qd.max(peak), now, out, peak > self.k_max, true);
            self.peak_iv = 0;
        } else if crossed {
            self.evaluate(qd.max(self.peak_poll), now, out, true, false);
        }
        self.peak_poll = 0;
        self.qd_acted = qd > self.k_max;
        if qd <= self.k_max {
            self.cross = 0;
        }
        if let Some(a) = self.ack.as_mut() {
            a.poll(now);
        }
        self.age(qd, now);
    }

    fn close_interval(&mut self, qd: u64, now: u64, el: u64) {
        self.stats.emr = if self.iv_pkts == 0 {
            0.0
        } else {
            self.iv_marked as f64 / self.iv_pkts as f64
        };
        // bytes * 1000 / ns = KB/ms.
        self.stats.qgr_kb_per_ms = (qd as f64 - self.iv_qd_start as f64) * 1000.0 / el as f64;
        if let Some(a) = self.p.adaptive {
            let mean = if self.iv_qd_n == 0 {
                qd as f64
            } else {
                self.iv_qd_sum as f64 / self.iv_qd_n as f64
            };
            let avg = match self.avg_qd {
                None => mean,
                Some(v) => v + a.ewma_weight * (mean - v),
            };
            self.avg_qd = Some(avg);
            let step = ((a.step_frac * self.k_max as f64) as u64).max(1);
            // At least one octet: a K_min of 0 could never be raised
            // again (nothing is below low_frac * 0).
            let floor = ((a.k_min_floor_frac * self.k_max as f64) as u64).min(self.k_min_cfg).max(1);
            if avg > self.k_min as f64 {
                self.k_min = self.k_min.saturating_sub(step).max(floor);
            } else if avg < a.low_frac * self.k_min as f64 {
                self.k_min = self.k_min.saturating_add(step).min(self.k_min_cfg);
            }
            self.stats.k_min = self.k_min;
        }
        self.iv_start = now;
        self.iv_qd_start = qd;
        self.iv_pkts = 0;
        self.iv_marked = 0;
        self.iv_qd_sum = 0;
        self.iv_qd_n = 0;
    }

    /// The flow with the most bytes in the queue: (source, destination,
    /// DestQP, UDP source port). A scan of the flows that have bytes
    /// queued.
    pub fn top_flow(&self) -> Option<(IpAddr, IpAddr, u32, u16)> {
        let nz = self.flows.nz.iter().filter(|n| n.queued > 0).max_by_key(|n| (n.queued, std::cmp::Reverse(n.slot)))?;
        let f = self.flows.get(nz.slot)?;
        let k = f.key();
        Some((k.src(), k.dst(), k.dest_qp(), f.sport))
    }

    /// The second-level triggers at queue depth `qd`: `t_qd` whether QD
    /// is (or went) above K_max; `rates`: EMR and QGR too (when their
    /// interval has closed).
    fn evaluate(&mut self, qd: u64, now: u64, out: &mut Vec<CnpRequest>, t_qd: bool, rates: bool) {
        let t_emr = rates && self.stats.emr > self.p.v_ecn;
        let t_qgr = rates && self.stats.qgr_kb_per_ms > self.p.v_growth_kb_per_ms;
        self.stats.trigger_qd += u64::from(t_qd);
        self.stats.trigger_emr += u64::from(t_emr);
        self.stats.trigger_qgr += u64::from(t_qgr);
        if !(t_qd || t_emr || t_qgr) {
            return;
        }
        // Top contributors by bytes queued.
        let n = usize::from(self.p.policy.top_flows).clamp(1, MAX_TOP_FLOWS);
        let mut top = [(0u64, NONE); MAX_TOP_FLOWS];
        let mut k = 0usize;
        // Only the flows with bytes queued, from their dense set: the
        // order is irrelevant (a strict total order decides).
        for nz in self.flows.nz.iter().filter(|n| n.queued > 0) {
            let (q, s) = (nz.queued, nz.slot);
            // Insertion into the sorted top-n (ties: lower slot first).
            let better = |a: (u64, u32), b: (u64, u32)| a.0 > b.0 || (a.0 == b.0 && a.1 < b.1);
            if k < n {
                top[k] = (q, s);
                k += 1;
            } else if better((q, s), top[n - 1]) {
                top[n - 1] = (q, s);
            } else {
                continue;
            }
            let mut j = k - 1;
            while j > 0 && better(top[j], top[j - 1]) {
                top.swap(j, j - 1);
                j -= 1;
            }
        }
        if k == 0 {
            self.stats.no_flow += 1;
            return;
        }
        let base = self.decide(qd, t_qd, t_qgr);
        let rtt = self.p.rtt_est_ns;
        let win = self.p.observation_window_ns();
        for &(_, s) in &top[..k] {
            let Some(f) = self.flows.get_mut(s) else { continue };
            f.roll(now, win);
            // A deferral of an earlier episode says nothing about this one.
            if f.deferred().is_some_and(|(since, _)| Self::deferral_over(&self.p, since, now)) {
                f.set_deferred(None);
            }
            let f = *f;
            if f.last_cnp().is_some_and(|t| now.saturating_sub(t) < rtt) {
                self.stats.rate_limited += 1;
                continue;
            }
            let mut d = base;
            if self.p.suppression {
                // Our own CNP's effect: the two windows compared plus the
                // feedback delay. Only a CNP that throttled the flow slows
                // it: a Resume lets it speed up, so a fall after one is
                // someone else's doing.
                let ours = f.last_throttle().is_some_and(|t| now.saturating_sub(t) < 2 * win + rtt);
                // Both windows compared counted at the window's length now.
                let same_length = f.win_start.saturating_sub(2 * win) >= self.win_changed_at;
                let fell = !ours && same_length && f.rate_fell(self.p.policy.rate_drop_frac);
                match f.deferred() {
                    Some((since, _)) if now.saturating_sub(since) < win => continue,
                    Some((_, qd_then)) if qd > qd_then => {
                        d = self.escalate(base, qd);
                        self.stats.escalated += 1;
                        // s.5.7 wants a higher level and a stricter action;
                        // at the ceiling (level 255, the longest pause)
                        // this is as strict as the node can say it: sent,
                        // and counted so that the operator sees it.
                        if d.level <= base.level || (d.action == base.action && d.parameter <= base.parameter) {
                            self.stats.escalation_saturated += 1;
                        }
                    }
                    _ if fell => {
                        self.stats.suppressed += 1;
                        if let Some(f) = self.flows.get_mut(s) {
                            f.set_deferred(Some((now, qd)));
                        }
                        continue;
                    }
                    _ => {}
                }
            }
            if !self.emit(s, d, now, out) {
                break;
            }
        }
    }

    fn send_resumes(&mut self, qd: u64, now: u64, out: &mut Vec<CnpRequest>) {
        let level = self.level_at(qd);
        let (metric_type, metric_value) = self.qd_metric(qd);
        let d = Decision {
            action: Action::Resume,
            parameter: u16::from(self.p.policy.resume_pct.min(100)),
            level,
            metric_type,
            metric_value,
        };
        let rtt = self.p.rtt_est_ns;
        let mut next = u64::MAX;
        // The throttled flows in the order of the live list.
        {
            let flows = &self.flows;
            self.thr.sort_unstable_by_key(|&s| flows.live_pos(s));
        }
        let mut i = 0;
        while i < self.thr.len() && self.throttled > 0 {
            let s = self.thr[i];
            i += 1;
            let Some(f) = self.flows.get(s).copied() else { continue };
            if !f.throttled() {
                continue;
            }
            if let Some(t) = f.last_cnp().filter(|&t| now.saturating_sub(t) < rtt) {
                next = next.min(t.saturating_add(rtt));
                continue;
            }
            if !self.emit(s, d, now, out) {
                // Out of tokens (or room): retry after one token's time.
                let gap = 1_000_000_000 / u64::from(self.p.cnp_port_max_pps.max(1));
                next = next.min(now.saturating_add(gap));
                break;
            }
        }
        let flows = &self.flows;
        self.thr.retain(|&s| flows.get(s).is_some_and(|f| f.throttled()));
        self.resume_next = if next == u64::MAX { 0 } else { next };
    }

    fn age(&mut self, qd: u64, now: u64) {
        if qd == 0 && !self.flows.nz.is_empty() {
            // Empty queue: nothing of any flow can be queued.
            self.flows.clear_queued();
        }
        let idle = self.p.flow_idle_timeout_ns;
        if now.saturating_sub(self.age_lb) < idle {
            // No flow can be idle yet.
            return;
        }
        let hold = u64::from(self.p.policy.max_pause_us) * 1000 + self.p.rtt_est_ns;
        let mut budget = AGE_SWEEP_PER_POLL;
        while budget > 0 && !self.flows.live.is_empty() {
            budget -= 1;
            if self.age_cursor >= self.flows.live.len() {
                // A pass is complete: every live flow was seen at or after
                // the least last-seen time met (or was inserted since,
                // which lowers the bound itself).
                self.age_cursor = 0;
                self.age_lb = self.age_pass_min;
                self.age_pass_min = u64::MAX;
                if now.saturating_sub(self.age_lb) < idle {
                    return;
                }
            }
            let s = self.flows.live[self.age_cursor];
            let last_seen = self.flows.entries[s as usize].last_seen;
            // A throttled flow whose source went silent, as a paused one
            // does, is kept while its CNP can still be in force (the
            // longest pause and an RTT_est since it): its Resume (s.5.5.1)
            // and its per-flow CNP limit (s.9) are not forgotten. After
            // that it ages like any other, so dead flows cannot fill the
            // table while the queue stays above K_min.
            // Any flow keeps its entry for an RTT_est after its last CNP, so
            // that a short idle timeout cannot reset the per-flow limit
            // (s.5.5, s.9: one CNP per flow per RTT_est).
            let e = &self.flows.entries[s as usize];
            let rtt = self.p.rtt_est_ns;
            let in_force = e.last_cnp().is_some_and(|t| now.saturating_sub(t) < if e.throttled() { hold } else { rtt });
            if self.flows.idle_in_queue(s) && now.saturating_sub(last_seen) >= idle && !in_force {
                if e.throttled() {
                    self.throttled = self.throttled.saturating_sub(1);
                    if let Some(i) = self.thr.iter().position(|&x| x == s) {
                        self.thr.swap_remove(i);
                    }
                }
                self.flows.remove(s);
                if let Some(a) = self.ack.as_mut() {
                    a.on_removed(s);
                }
                self.stats.flows_aged += 1;
                self.stats.flows_active = self.flows.len() as u64;
                // The last live flow moved into the cursor position.
            } else {
                self.age_pass_min = self.age_pass_min.min(last_seen);
                self.age_cursor += 1;
            }
        }
    }
}

/// Opcodes that make a flow: not ACKs, atomic ACKs or CNPs.
fn is_data(op: u8) -> bool {
    if op == opcode::CNP {
        return false;
    }
    !matches!(
        (opcode::transport(op), opcode::operation(op)),
        (opcode::RC | opcode::RD | opcode::XRC, opcode::ACKNOWLEDGE | opcode::ATOMIC_ACKNOWLEDGE)
    )
}
