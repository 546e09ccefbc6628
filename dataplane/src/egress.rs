//! The deep-buffer egress stage of a port (draft-tian-ccwg-long-haul-cnp
//! s.5.3): a software queue sized in bytes, drained by a shaper at the port
//! rate R_port, with NIC backpressure respected (what the NIC refuses goes
//! back to the head of the queue, in order). Notifications (CNP, FANN, PFC)
//! and ARP/ND go into a small priority queue that leaves ahead of the data
//! queue, within a share of the port while data waits
//! ([`EgressConfig::priority_percent`]). Queue depth QD is the bytes the
//! data queue holds.
//!
//! One writer: the worker that owns the port. Generic over the packet type so
//! the same code runs on mbufs in production and on byte buffers in tests and
//! in the simulation harness. Capacity is fixed at creation: nothing on the
//! packet path allocates.

use crate::pfcrx::PortPause;
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Shaper and queue limits of one port.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EgressConfig {
    /// R_port in bits per second; 0 = not shaped (line rate of the NIC).
    pub rate_bps: u64,
    /// Data queue limit in bytes; packets beyond it are tail-dropped.
    pub queue_bytes: u64,
    /// Shaper bucket depth in bytes (how much may leave back to back).
    pub burst_bytes: u64,
    /// Most packets held (data + priority); bounds memory (every packet is
    /// an mbuf): a share of the mempool.
    pub max_packets: usize,
    /// Priority queue length in packets, kept out of `max_packets` for it
    /// alone (at most half), so notifications find room in a queue full of
    /// data.
    pub priority_packets: usize,
    /// What each frame costs the link beyond its own bytes, which the
    /// shaper counts with them so that the wire, not the frames, runs at
    /// `rate_bps`: on Ethernet [`ETHERNET_FRAME_OVERHEAD`] (the frames here
    /// have no FCS yet). A frame shorter than [`MIN_FRAME`] counts as
    /// padded to it.
    pub frame_overhead: u32,
    /// The share (1..=100 %) of the bytes leaving the port that the
    /// priority queue may take while data waits to leave: beyond it, and
    /// once its burst allowance ([`EgressConfig::burst_bytes`]) is spent,
    /// a priority frame waits for data to leave first (the policer of a
    /// low-latency queue, which applies under congestion only: with no
    /// data waiting priority frames leave at once). 100: no bound.
    pub priority_percent: u8,
}

/// Ethernet's cost of a frame beyond its bytes from destination MAC to
/// payload: preamble and SFD (8), FCS (4) and the inter-frame gap (12)
/// (IEEE 802.3; DPDK's rte_sched counts the same 24 by default).
pub const ETHERNET_FRAME_OVERHEAD: u32 = 24;

/// The priority queue's default share of the port while data waits:
/// notifications are rate-limited at their sources far below it, so only
/// a flood (of ARP / ND answers, say) meets the bound.
pub const DEFAULT_PRIORITY_PERCENT: u8 = 10;

/// The shortest Ethernet frame without its FCS (802.3: 64 with it); the
/// NIC pads shorter ones.
pub const MIN_FRAME: u32 = 60;

impl EgressConfig {
    /// The packets kept for the priority queue: `priority_packets`, at most
    /// half of `max_packets`. Data never take this share, so notifications
    /// find room in a queue full of data.
    pub fn priority_share(&self) -> usize {
        self.priority_packets.min(self.max_packets / 2)
    }
}

impl Default for EgressConfig {
    fn default() -> Self {
        EgressConfig { rate_bps: 0, queue_bytes: 64 << 20, burst_bytes: 64 * 1024, max_packets: 16384, priority_packets: 256, frame_overhead: ETHERNET_FRAME_OVERHEAD, priority_percent: DEFAULT_PRIORITY_PERCENT }
    }
}

/// Microburst detection (draft-hzh-fantel-wan-tunnel s.4: queue growth
/// above a threshold within a short window), run by the port's owner worker
/// on every loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MicroburstConfig {
    /// Growth of the queue depth that counts as a microburst.
    pub bytes: u64,
    /// Within this time.
    pub window_ns: u64,
}

/// Minimum queue depth over the last one to two half-windows (two tumbling
/// buckets of `window / 2`): any growth by more than `bytes` that happens
/// within half a window is caught, and growth is never measured over more
/// than a full window. After a detection the watch is quiet for one window
/// (one event per burst; the control thread's detector turns the count into
/// a FANN event and, after a quiet interval, the recovery).
#[derive(Debug, Clone, Copy)]
pub struct MicroburstWatch {
    cfg: MicroburstConfig,
    bucket_start: u64,
    min_prev: u64,
    min_cur: u64,
    quiet_until: u64,
    started: bool,
}

impl MicroburstWatch {
    pub fn new(cfg: MicroburstConfig) -> Self {
        MicroburstWatch { cfg, bucket_start: 0, min_prev: 0, min_cur: 0, quiet_until: 0, started: false }
    }

    /// Observe the depth `qd` at `now`; true when a new microburst starts.
    #[inline]
    pub fn observe(&mut self, now: u64, qd: u64) -> bool {
        let half = (self.cfg.window_ns / 2).max(1);
        if !self.started {
            self.started = true;
            self.bucket_start = now;
            self.min_prev = qd;
            self.min_cur = qd;
            return false;
        }
        let dt = now.saturating_sub(self.bucket_start);
        if dt >= half {
            // A bucket (or more) closed: what came before is the previous
            // bucket, or nothing but the current depth when more passed.
            // The buckets stay on their grid (a bucket opened at the first
            // sample after its time would reach back more than a window).
            self.min_prev = if dt >= 2 * half { qd } else { self.min_cur };
            self.min_cur = qd;
            self.bucket_start += dt - dt % half;
        } else if qd < self.min_cur {
            self.min_cur = qd;
        }
        let base = self.min_prev.min(self.min_cur);
        if qd > base.saturating_add(self.cfg.bytes) && now >= self.quiet_until {
            self.quiet_until = now.saturating_add(self.cfg.window_ns);
            // The next burst is measured from here.
            self.min_prev = qd;
            self.min_cur = qd;
            return true;
        }
        false
    }
}

/// A queued data packet with what the congestion stage needs at dequeue.
pub struct Queued<P, F = u32> {
    pub pkt: P,
    pub len: u32,
    /// Flow-table slot, for the per-flow queue contribution.
    pub flow: Option<F>,
    /// 802.1p priority (0..=7) for received PFC ([`crate::pfcrx`]); 0 on a
    /// port that honours none.
    pub class: u8,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EgressStats {
    pub enqueued: u64,
    pub tail_drops: u64,
    pub tail_drop_bytes: u64,
    pub priority_drops: u64,
    pub dequeued: u64,
    pub max_depth_bytes: u64,
}

pub struct EgressQueue<P, F = u32> {
    cfg: EgressConfig,
    data: VecDeque<Queued<P, F>>,
    /// (packet, length, priority for received PFC or [`NEVER_HELD`]).
    prio: VecDeque<(P, u32, u8)>,
    /// Received PAUSE / PFC honoured: the data of paused priorities, set
    /// aside in order ([`EgressQueue::with_pfc`]).
    pfc: Option<Box<Hold<P, F>>>,
    /// Packets in `pfc`'s side queues (kept here, next to the data queue's
    /// length, so the room check of every packet reads no more memory).
    held: usize,
    /// The priorities paused as of the last dequeue (for the room check of
    /// the priority queue, which has no clock).
    paused_seen: u8,
    bytes: u64,
    /// Shaper tokens in byte-nanoseconds * rate (scaled: bytes * 8e9);
    /// negative: a debt that newer data waits out (a priority frame sent
    /// on an empty bucket, a frame longer than the bucket).
    tokens: i128,
    last_ns: u64,
    /// What the priority queue may still send while data waits
    /// ([`EgressConfig::priority_percent`]), in bytes * 100: a data frame
    /// adds its wire bytes * `priority_percent`, a priority frame takes its
    /// wire bytes * (100 - `priority_percent`), so over a backlog the
    /// priority frames get that share of the bytes. A priority frame may
    /// leave while it is not negative. Bounded at the start of each dequeue
    /// ([`EgressQueue::bound_share`]), so that what the NIC refuses can be
    /// given back exactly.
    share: i64,
    pub stats: EgressStats,
}

/// Data packets of paused priorities, per priority in arrival order. A
/// packet moves here from the head of the data queue when its priority is
/// paused, and leaves from here (before newer packets of its priority in
/// the data queue) once the pause ends: each priority keeps its order and
/// the others pass it. Held packets stay in the queue depth.
struct Hold<P, F> {
    port: Arc<PortPause>,
    held: [VecDeque<Queued<P, F>>; 8],
}

const SCALE: i128 = 8_000_000_000; // bits per byte * ns per s

/// The class of a priority-queue frame no pause holds: a MAC Control frame
/// (END.C's own PAUSE / RESUME; 802.3 exempts them), or any frame on a
/// port that honours no received PFC.
pub const NEVER_HELD: u8 = 0xff;

/// The shaper tokens a frame of `len` bytes costs: its time on the wire.
#[inline(always)]
fn wire_cost(len: u32, cfg: &EgressConfig) -> i128 {
    (i128::from(len.max(MIN_FRAME)) + i128::from(cfg.frame_overhead)) * SCALE
}

/// The wire bytes of a frame of `len` bytes (what the share counts).
#[inline(always)]
fn wire_bytes(len: u32, cfg: &EgressConfig) -> i64 {
    i64::from(len.max(MIN_FRAME)) + i64::from(cfg.frame_overhead)
}

/// The priority queue's burst allowance while data waits: one shaper
/// bucket of priority frames back to back (`share` units).
#[inline(always)]
fn share_cap(cfg: &EgressConfig) -> i64 {
    i64::try_from(cfg.burst_bytes).unwrap_or(i64::MAX / 200).min(i64::MAX / 200) * 100
}

/// May a priority frame leave now, with data waiting to leave or not
/// (`data_waits`)? While data waits, only within the share.
#[inline(always)]
fn share_allows(share: i64, cfg: &EgressConfig, data_waits: bool) -> bool {
    !data_waits || cfg.priority_percent >= 100 || share >= 0
}

/// Count a priority frame of `len` bytes sent against the share. Exactly
/// undone by [`EgressQueue::requeue_priority_front`] (the limits apply at
/// the start of the next dequeue, [`EgressQueue::bound_share`]).
#[inline(always)]
fn charge_share(share: &mut i64, cfg: &EgressConfig, len: u32) {
    if cfg.priority_percent < 100 {
        *share -= wire_bytes(len, cfg) * i64::from(100 - cfg.priority_percent);
    }
}

/// Count a data frame of `len` bytes sent: it earns the priority queue
/// its share of those bytes. Exactly undone by
/// [`EgressQueue::requeue_front`].
#[inline(always)]
fn credit_share(share: &mut i64, cfg: &EgressConfig, len: u32) {
    if cfg.priority_percent < 100 {
        *share += wire_bytes(len, cfg) * i64::from(cfg.priority_percent);
    }
}

/// The earlier of two departure times, either of which may be absent.
#[inline]
fn earliest(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// May a priority frame take the shaper's tokens? It does not wait for
/// them, but runs the shaper at most one bucket into debt: a flood of
/// priority frames leaves at the port rate, not beyond it.
#[inline(always)]
fn priority_tokens_ok(tokens: i128, cfg: &EgressConfig) -> bool {
    cfg.rate_bps == 0 || tokens >= -i128::from(cfg.burst_bytes) * SCALE
}

/// Does data wait to leave (in the data queue, or set aside under a
/// priority that is no longer paused)?
#[inline]
fn data_waits<P, F>(data: &VecDeque<Queued<P, F>>, hold: Option<&Hold<P, F>>, paused: u8) -> bool {
    !data.is_empty() || hold.is_some_and(|h| (0..8).any(|c| paused & (1 << c) == 0 && !h.held[c].is_empty()))
}

/// Hand a priority packet to `out`: it never waits for tokens but does
/// consume them, into debt if need be, so the data queue yields to it and
/// the port keeps its rate.
#[inline(always)]
fn send_priority<P, F>(p: P, len: u32, tokens: &mut i128, cfg: &EgressConfig, out: &mut impl FnMut(P, u32, Option<F>, bool)) {
    if cfg.rate_bps != 0 {
        *tokens -= wire_cost(len, cfg);
    }
    out(p, len, None, true);
}

/// Hand a data packet leaving the queue to `out`, counted out of the
/// queue's bytes.
#[inline(always)]
fn send_data<P, F>(q: Queued<P, F>, bytes: &mut u64, stats: &mut EgressStats, out: &mut impl FnMut(P, u32, Option<F>, bool)) {
    *bytes -= u64::from(q.len);
    stats.dequeued += 1;
    out(q.pkt, q.len, q.flow, false);
}

/// The tokens a frame that costs `cost` waits for under a bucket of
/// `cap`: its cost, or a full bucket when it costs more (it leaves then,
/// into debt, instead of never).
#[inline(always)]
fn tokens_needed(cost: i128, cap: i128) -> i128 {
    cost.min(cap)
}

/// Take the shaper tokens for a frame of `len` bytes (always, when not
/// shaped).
#[inline]
fn take_tokens(tokens: &mut i128, cfg: &EgressConfig, len: u32) -> bool {
    if cfg.rate_bps == 0 {
        return true;
    }
    let cost = wire_cost(len, cfg);
    if *tokens >= tokens_needed(cost, i128::from(cfg.burst_bytes) * SCALE) {
        *tokens -= cost;
        true
    } else {
        false
    }
}

impl<P, F: Copy> EgressQueue<P, F> {
    pub fn new(mut cfg: EgressConfig) -> Self {
        cfg.priority_packets = cfg.priority_share();
        cfg.priority_percent = cfg.priority_percent.clamp(1, 100);
        EgressQueue {
            data: VecDeque::with_capacity(cfg.max_packets),
            prio: VecDeque::with_capacity(cfg.priority_packets),
            pfc: None,
            held: 0,
            paused_seen: 0,
            tokens: i128::from(cfg.burst_bytes) * SCALE,
            bytes: 0,
            last_ns: 0,
            share: share_cap(&cfg),
            stats: EgressStats::default(),
            cfg,
        }
    }

    pub fn config(&self) -> &EgressConfig {
        &self.cfg
    }

    /// Honour the received PAUSE / PFC frames that `port` records: room to
    /// set aside the whole queue is reserved for each honoured priority
    /// here, so nothing allocates on the packet path.
    pub fn with_pfc(mut self, port: Arc<PortPause>) -> Self {
        let c = *port.config();
        let held = std::array::from_fn(|p| if c.pause || c.priorities & (1 << p) != 0 { VecDeque::with_capacity(self.cfg.max_packets) } else { VecDeque::new() });
        self.pfc = Some(Box::new(Hold { port, held }));
        self
    }

    /// Does this queue honour received PAUSE / PFC?
    #[inline(always)]
    pub fn has_pfc(&self) -> bool {
        self.pfc.is_some()
    }

    /// The priority a data frame queues under (0 without PFC).
    #[inline]
    pub fn class_of(&self, frame: &[u8]) -> u8 {
        match &self.pfc {
            None => 0,
            Some(h) => h.port.config().priority_of(frame),
        }
    }

    /// The class of a frame for the priority queue: [`NEVER_HELD`] for a
    /// MAC Control frame or without PFC, else its priority.
    #[inline]
    pub fn control_class_of(&self, frame: &[u8]) -> u8 {
        match &self.pfc {
            Some(h) if frame.get(12..14) != Some(&[0x88, 0x08][..]) => h.port.config().priority_of(frame),
            _ => NEVER_HELD,
        }
    }

    /// Data packets held back by a pause.
    pub fn held_len(&self) -> usize {
        self.held
    }

    /// Change the rate or limits at runtime (packets already queued stay).
    pub fn set_config(&mut self, cfg: EgressConfig) {
        if self.cfg.rate_bps == 0 && cfg.rate_bps != 0 {
            // Shaped from now on: a full bucket, as a new queue's.
            self.tokens = i128::from(cfg.burst_bytes) * SCALE;
        }
        self.cfg.rate_bps = cfg.rate_bps;
        self.cfg.queue_bytes = cfg.queue_bytes;
        self.cfg.burst_bytes = cfg.burst_bytes;
        self.cfg.frame_overhead = cfg.frame_overhead;
        self.cfg.priority_percent = cfg.priority_percent.clamp(1, 100);
        // max_packets / priority_packets fix the preallocated capacity.
    }

    /// QD: bytes held by the data queue.
    #[inline]
    pub fn depth_bytes(&self) -> u64 {
        self.bytes
    }
    #[inline]
    pub fn len(&self) -> usize {
        self.data.len() + self.prio.len() + self.held_len()
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Data packets in the data queue proper (not those a pause set
    /// aside): positions for [`EgressQueue::set_flow`].
    #[inline]
    pub fn data_len(&self) -> usize {
        self.data.len()
    }

    /// Set the flow of the data packet at position `pos` from the head
    /// (positions hold until the next dequeue or requeue).
    #[inline]
    pub fn set_flow(&mut self, pos: usize, flow: Option<F>) {
        if let Some(q) = self.data.get_mut(pos) {
            q.flow = flow;
        }
    }

    /// Would a packet of `len` bytes be accepted?
    #[inline]
    pub fn has_room(&self, len: u32) -> bool {
        self.bytes + u64::from(len) <= self.cfg.queue_bytes && self.data.len() + self.held_len() < self.cfg.max_packets - self.cfg.priority_packets
    }

    /// Append a data packet; a full queue hands it back (tail drop, counted).
    #[inline]
    pub fn enqueue(&mut self, q: Queued<P, F>) -> Result<(), Queued<P, F>> {
        if !self.has_room(q.len) {
            self.stats.tail_drops += 1;
            self.stats.tail_drop_bytes += u64::from(q.len);
            return Err(q);
        }
        self.enqueue_admitted(q);
        Ok(())
    }

    /// Append a data packet [`EgressQueue::has_room`] said yes to (the
    /// room is not looked at again).
    #[inline]
    pub fn enqueue_admitted(&mut self, q: Queued<P, F>) {
        debug_assert!(self.has_room(q.len));
        self.bytes += u64::from(q.len);
        self.stats.enqueued += 1;
        self.stats.max_depth_bytes = self.stats.max_depth_bytes.max(self.bytes);
        self.data.push_back(q);
    }

    /// Append a notification / ARP / ND packet to the priority queue.
    #[inline]
    pub fn enqueue_priority(&mut self, p: P, len: u32) -> Result<(), P> {
        self.enqueue_priority_as(p, len, NEVER_HELD)
    }

    /// [`EgressQueue::enqueue_priority`] of a frame of priority `class`
    /// ([`EgressQueue::control_class_of`]): a received pause of that
    /// priority holds it too. `Err` hands back the frame dropped: `p` when
    /// the queue is full, or, when `p` can leave and the queue is full of
    /// frames a pause holds, the newest of those (`p` is queued).
    #[inline]
    pub fn enqueue_priority_as(&mut self, p: P, len: u32, class: u8) -> Result<(), P> {
        if self.prio.len() >= self.cfg.priority_packets {
            self.stats.priority_drops += 1;
            // 802.1Qbb: a pause stops its own priority only. A frame that
            // can leave (a MAC Control frame, an unpaused priority) takes
            // the place of the newest frame a pause holds, which is
            // dropped (returned) instead.
            let held = self.paused_seen;
            if held != 0 && (class == NEVER_HELD || held & (1 << (class & 7)) == 0) {
                if let Some(i) = self.prio.iter().rposition(|f| f.2 != NEVER_HELD && held & (1 << (f.2 & 7)) != 0) {
                    if let Some((old, _, _)) = self.prio.remove(i) {
                        self.prio.push_back((p, len, class));
                        return Err(old);
                    }
                }
            }
            return Err(p);
        }
        self.prio.push_back((p, len, class));
        Ok(())
    }

    /// Bound the share at the start of a dequeue: at most one burst
    /// allowance ([`share_cap`]); and, when no data waits, not negative:
    /// the bound applies under congestion only, so what priority frames
    /// sent while the data queue was empty is forgiven (but for the frames
    /// of the dequeue that found data arriving since).
    #[inline(always)]
    fn bound_share(&mut self, data_waits: bool) {
        if self.cfg.priority_percent < 100 {
            let floor = if data_waits { i64::MIN } else { 0 };
            self.share = self.share.clamp(floor, share_cap(&self.cfg));
        }
    }

    fn refill(&mut self, now_ns: u64) {
        if self.cfg.rate_bps == 0 {
            return;
        }
        let dt = now_ns.saturating_sub(self.last_ns);
        self.last_ns = self.last_ns.max(now_ns);
        let cap = i128::from(self.cfg.burst_bytes) * SCALE;
        self.tokens = (self.tokens + i128::from(dt) * i128::from(self.cfg.rate_bps)).min(cap);
    }

    #[inline]
    fn take(&mut self, len: u32) -> bool {
        take_tokens(&mut self.tokens, &self.cfg, len)
    }

    /// Hand up to `max` packets that the shaper lets go at `now_ns` to
    /// `out(pkt, len, flow, is_priority)`; priority packets first. The rate
    /// applies to both (notifications share the link).
    pub fn dequeue_ready(&mut self, now_ns: u64, max: usize, mut out: impl FnMut(P, u32, Option<F>, bool)) -> usize {
        self.refill(now_ns);
        if let Some(h) = self.pfc.as_ref() {
            let mut paused = h.port.paused(now_ns);
            if paused != 0 && h.port.has_watchdog() {
                paused = h.port.watchdog(now_ns, paused);
            }
            self.paused_seen = paused;
            if paused != 0 || self.held != 0 {
                self.bound_share(data_waits(&self.data, self.pfc.as_deref(), paused));
                return self.dequeue_paused(paused, max, out);
            }
        }
        self.bound_share(!self.data.is_empty());
        let mut n = 0;
        while n < max {
            if !self.prio.is_empty() {
                let waits = !self.data.is_empty();
                if share_allows(self.share, &self.cfg, waits) && priority_tokens_ok(self.tokens, &self.cfg) {
                    if let Some((p, len, _)) = self.prio.pop_front() {
                        charge_share(&mut self.share, &self.cfg, len);
                        send_priority(p, len, &mut self.tokens, &self.cfg, &mut out);
                        n += 1;
                        continue;
                    }
                }
            }
            let Some(front) = self.data.front() else { break };
            let len = front.len;
            if !self.take(len) {
                break;
            }
            let Some(q) = self.data.pop_front() else { break };
            credit_share(&mut self.share, &self.cfg, len);
            send_data(q, &mut self.bytes, &mut self.stats, &mut out);
            n += 1;
        }
        n
    }

    /// [`EgressQueue::dequeue_ready`] while a pause is in force or packets
    /// are held: priority packets first (the first one whose priority is
    /// not paused: those before it wait, in order), then the held packets of
    /// priorities no longer paused (older than any of theirs in the data
    /// queue), then the data queue, whose head moves aside when its
    /// priority is paused (taking no tokens and not counted in `max`).
    #[cold]
    #[inline(never)]
    fn dequeue_paused(&mut self, paused: u8, max: usize, mut out: impl FnMut(P, u32, Option<F>, bool)) -> usize {
        let Some(h) = self.pfc.as_mut() else { return 0 };
        let (mut n, mut set_aside) = (0, 0u64);
        // Once a scan of the priority queue found only paused frames, it
        // stays so for this call (nothing is added to it meanwhile).
        let mut prio_held = false;
        while n < max {
            let sendable = |c: u8| c == NEVER_HELD || paused & (1 << (c & 7)) == 0;
            let next = match self.prio.front() {
                Some(f) if sendable(f.2) => Some(0),
                Some(_) if !prio_held => {
                    let i = self.prio.iter().position(|f| sendable(f.2));
                    prio_held = i.is_none();
                    i
                }
                _ => None,
            };
            let waits = next.is_some() && data_waits(&self.data, Some(&**h), paused);
            if let Some((p, len, _)) = next.filter(|_| share_allows(self.share, &self.cfg, waits) && priority_tokens_ok(self.tokens, &self.cfg)).and_then(|i| self.prio.remove(i)) {
                charge_share(&mut self.share, &self.cfg, len);
                send_priority(p, len, &mut self.tokens, &self.cfg, &mut out);
                n += 1;
                continue;
            }
            if self.held != 0 {
                if let Some(c) = (0..8).find(|&c| paused & (1 << c) == 0 && !h.held[c].is_empty()) {
                    let len = h.held[c].front().map_or(0, |q| q.len);
                    if !take_tokens(&mut self.tokens, &self.cfg, len) {
                        break;
                    }
                    let Some(q) = h.held[c].pop_front() else { break };
                    self.held -= 1;
                    credit_share(&mut self.share, &self.cfg, len);
                    send_data(q, &mut self.bytes, &mut self.stats, &mut out);
                    n += 1;
                    continue;
                }
            }
            let Some(front) = self.data.front() else { break };
            let (len, class) = (front.len, usize::from(front.class & 7));
            if paused & (1 << class) != 0 {
                let Some(q) = self.data.pop_front() else { break };
                h.held[class].push_back(q);
                self.held += 1;
                set_aside += 1;
                continue;
            }
            if !take_tokens(&mut self.tokens, &self.cfg, len) {
                break;
            }
            let Some(q) = self.data.pop_front() else { break };
            credit_share(&mut self.share, &self.cfg, len);
            send_data(q, &mut self.bytes, &mut self.stats, &mut out);
            n += 1;
        }
        if set_aside != 0 {
            h.port.held_packets.fetch_add(set_aside, Ordering::Relaxed);
        }
        h.port.held_now.store(self.held as u64, Ordering::Relaxed);
        n
    }

    /// Put back a data packet the NIC did not take (head of the queue, so
    /// order is kept); its shaper tokens are returned. A packet whose
    /// priority still has packets set aside by a pause goes back to the
    /// head of those (it left from there: they are all newer).
    pub fn requeue_front(&mut self, q: Queued<P, F>) {
        if self.cfg.rate_bps != 0 {
            self.tokens += wire_cost(q.len, &self.cfg);
        }
        // Not sent: the share it earned back.
        if self.cfg.priority_percent < 100 {
            self.share -= wire_bytes(q.len, &self.cfg) * i64::from(self.cfg.priority_percent);
        }
        self.bytes += u64::from(q.len);
        self.stats.dequeued -= 1;
        if let Some(h) = self.pfc.as_mut() {
            let c = usize::from(q.class & 7);
            if !h.held[c].is_empty() {
                h.held[c].push_front(q);
                self.held += 1;
                return;
            }
        }
        self.data.push_front(q);
    }

    /// Put back a priority packet the NIC did not take (`class` as it was
    /// queued with).
    pub fn requeue_priority_front(&mut self, p: P, len: u32, class: u8) {
        // Not sent: its tokens back, as a data packet's.
        if self.cfg.rate_bps != 0 {
            self.tokens += wire_cost(len, &self.cfg);
        }
        // And its share back.
        if self.cfg.priority_percent < 100 {
            self.share += wire_bytes(len, &self.cfg) * i64::from(100 - self.cfg.priority_percent);
        }
        self.prio.push_front((p, len, class));
    }

    /// Empty the queue (shutdown): every packet is handed to `f`.
    pub fn drain(&mut self, mut f: impl FnMut(P)) {
        self.drain_with(|p, _, _, _| f(p));
    }

    /// Empty the queue: every packet is handed to `f(pkt, len, flow,
    /// is_priority)`, the priority ones first, then the data in the order
    /// they would have left (a priority's held data before its newer data
    /// in the queue).
    pub fn drain_with(&mut self, mut f: impl FnMut(P, u32, Option<F>, bool)) {
        while let Some((p, len, _)) = self.prio.pop_front() {
            f(p, len, None, true);
        }
        if let Some(h) = self.pfc.as_mut() {
            for c in h.held.iter_mut() {
                while let Some(q) = c.pop_front() {
                    f(q.pkt, q.len, q.flow, false);
                }
            }
            self.held = 0;
            h.port.held_now.store(0, Ordering::Relaxed);
        }
        while let Some(q) = self.data.pop_front() {
            f(q.pkt, q.len, q.flow, false);
        }
        self.bytes = 0;
    }

    /// When the next data packet may leave (for a simulation's event clock).
    pub fn next_departure_ns(&self, now_ns: u64) -> Option<u64> {
        let Some(h) = self.pfc.as_ref() else {
            // A priority frame beyond its share waits for data to leave.
            let prio = (!self.prio.is_empty() && share_allows(self.share, &self.cfg, !self.data.is_empty())).then(|| self.priority_at(now_ns));
            return earliest(prio, self.next_data_departure(now_ns));
        };
        let paused = h.port.paused(now_ns);
        let free = |c: u8| c == NEVER_HELD || paused & (1 << (c & 7)) == 0;
        let head_moves = self.data.front().is_some_and(|q| !free(q.class));
        if head_moves {
            return Some(now_ns);
        }
        let prio = (self.prio.iter().any(|f| free(f.2)) && share_allows(self.share, &self.cfg, data_waits(&self.data, Some(&**h), paused))).then(|| self.priority_at(now_ns));
        earliest(prio, self.next_held_or_data(h, paused, now_ns))
    }

    /// [`EgressQueue::next_departure_ns`] of the data (held or queued)
    /// and of the priority frames a pause holds.
    fn next_held_or_data(&self, h: &Hold<P, F>, paused: u8, now_ns: u64) -> Option<u64> {
        // Held data of a priority no longer paused leaves when the shaper
        // has the tokens for its head.
        let ready = (0..8).filter(|&c| paused & (1 << c) == 0).filter_map(|c| h.held[c].front()).map(|q| self.tokens_at(q.len, now_ns)).min();
        if ready.is_some() {
            return earliest(ready, self.next_data_departure(now_ns));
        }
        if self.data.is_empty() {
            // Everything waits for a pause to end.
            let waiting = (0..8u8).filter(|&c| !h.held[usize::from(c)].is_empty()).fold(0u8, |m, c| m | 1 << c) | self.prio.iter().fold(0u8, |m, f| m | 1 << (f.2 & 7));
            return h.port.next_end(waiting, now_ns);
        }
        // Held priority frames may be free before the data's tokens are.
        let prio_waiting = self.prio.iter().fold(0u8, |m, f| m | 1 << (f.2 & 7));
        earliest(self.next_data_departure(now_ns), h.port.next_end(prio_waiting, now_ns))
    }

    /// When the head of the data queue may leave (the shaper's tokens).
    fn next_data_departure(&self, now_ns: u64) -> Option<u64> {
        let front = self.data.front()?;
        Some(self.tokens_at(front.len, now_ns))
    }

    /// When the shaper has the tokens for a data frame of `len` bytes,
    /// asked at `now_ns`.
    fn tokens_at(&self, len: u32, now_ns: u64) -> u64 {
        let cap = i128::from(self.cfg.burst_bytes) * SCALE;
        self.tokens_reach(tokens_needed(wire_cost(len, &self.cfg), cap), now_ns)
    }

    /// When a priority frame may leave ([`priority_tokens_ok`]).
    fn priority_at(&self, now_ns: u64) -> u64 {
        self.tokens_reach(-i128::from(self.cfg.burst_bytes) * SCALE, now_ns)
    }

    /// When the shaper holds `need` tokens, asked at `now_ns`.
    fn tokens_reach(&self, need: i128, now_ns: u64) -> u64 {
        if self.cfg.rate_bps == 0 {
            return now_ns;
        }
        let cap = i128::from(self.cfg.burst_bytes) * SCALE;
        // The tokens as of `now_ns`, as `refill` would make them (the last
        // refill may be older).
        let dt = now_ns.saturating_sub(self.last_ns);
        let tokens = (self.tokens + i128::from(dt) * i128::from(self.cfg.rate_bps)).min(cap);
        if tokens >= need {
            return now_ns;
        }
        let rate = i128::from(self.cfg.rate_bps);
        let wait = (need - tokens + rate - 1) / rate;
        now_ns + wait as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(len: u32) -> Queued<u32, u32> {
        Queued { pkt: len, len, flow: None, class: 0 }
    }

    #[test]
    fn tail_drop_by_bytes() {
        let mut e: EgressQueue<u32> = EgressQueue::new(EgressConfig { queue_bytes: 3000, ..Default::default() });
        assert!(e.enqueue(q(1000)).is_ok());
        assert!(e.enqueue(q(1500)).is_ok());
        assert!(e.enqueue(q(1000)).is_err());
        assert!(e.enqueue(q(500)).is_ok());
        assert_eq!(e.depth_bytes(), 3000);
        assert_eq!(e.stats.tail_drops, 1);
        assert_eq!(e.stats.tail_drop_bytes, 1000);
    }

    #[test]
    fn shaper_paces_at_rate() {
        // 8 Mbit/s = 1 byte per microsecond; bucket 1000 bytes; the frames'
        // bytes only (no Ethernet overhead: egress_shaper.rs has it).
        let mut e: EgressQueue<u32> = EgressQueue::new(EgressConfig { rate_bps: 8_000_000, burst_bytes: 1000, queue_bytes: 1 << 20, frame_overhead: 0, ..Default::default() });
        for _ in 0..10 {
            e.enqueue(q(1000)).ok().unwrap();
        }
        let mut sent = Vec::new();
        // t=0: the full bucket lets one packet go.
        e.dequeue_ready(0, 32, |p, _, _, _| sent.push(p));
        assert_eq!(sent.len(), 1);
        // 999 us later: not yet a full packet's worth.
        e.dequeue_ready(999_000, 32, |p, _, _, _| sent.push(p));
        assert_eq!(sent.len(), 1);
        assert_eq!(e.next_departure_ns(999_000), Some(1_000_000));
        e.dequeue_ready(1_000_000, 32, |p, _, _, _| sent.push(p));
        assert_eq!(sent.len(), 2);
        // Asked later without a dequeue in between: counted from the
        // tokens as of then (was from the last dequeue's: 1 ms late).
        assert_eq!(e.next_departure_ns(1_400_000), Some(2_000_000));
        assert_eq!(e.next_departure_ns(2_500_000), Some(2_500_000));
        // 5 ms later: bucket caps at 1000 bytes, so only one more.
        e.dequeue_ready(6_000_000, 32, |p, _, _, _| sent.push(p));
        assert_eq!(sent.len(), 3);
        assert_eq!(e.depth_bytes(), 7000);
    }

    #[test]
    fn priority_leaves_first_and_requeue_keeps_order() {
        let mut e: EgressQueue<u32> = EgressQueue::new(EgressConfig::default());
        e.enqueue(q(100)).ok().unwrap();
        e.enqueue(q(200)).ok().unwrap();
        e.enqueue_priority(7, 64).unwrap();
        let mut out = Vec::new();
        e.dequeue_ready(0, 2, |p, _, _, prio| out.push((p, prio)));
        assert_eq!(out, vec![(7, true), (100, false)]);
        // The NIC refused 100: it goes back to the head.
        e.requeue_front(q(100));
        out.clear();
        e.dequeue_ready(0, 8, |p, _, _, prio| out.push((p, prio)));
        assert_eq!(out, vec![(100, false), (200, false)]);
        assert_eq!(e.depth_bytes(), 0);
    }

    #[test]
    fn unshaped_releases_everything_and_drain_returns_all() {
        let mut e: EgressQueue<u32> = EgressQueue::new(EgressConfig::default());
        for i in 1..=5 {
            e.enqueue(q(i * 10)).ok().unwrap();
        }
        let n = e.dequeue_ready(0, 3, |_, _, _, _| {});
        assert_eq!(n, 3);
        let mut left = Vec::new();
        e.enqueue_priority(1, 64).unwrap();
        e.drain(|p| left.push(p));
        assert_eq!(left, vec![1, 40, 50]);
        assert!(e.is_empty());
        assert_eq!(e.depth_bytes(), 0);
    }

    #[test]
    fn max_packets_bounds_memory_and_keeps_room_for_notifications() {
        // 4 packets: 2 for data, 2 kept for the priority queue.
        let mut e: EgressQueue<u32> = EgressQueue::new(EgressConfig { max_packets: 4, ..Default::default() });
        e.enqueue(q(1)).ok().unwrap();
        e.enqueue(q(1)).ok().unwrap();
        assert!(e.enqueue(q(1)).is_err());
        assert_eq!(e.stats.tail_drops, 1);
        // A queue full of data still takes notifications...
        e.enqueue_priority(8, 64).unwrap();
        e.enqueue_priority(9, 64).unwrap();
        // ...up to their share.
        assert!(e.enqueue_priority(10, 64).is_err());
        assert_eq!(e.stats.priority_drops, 1);
        assert_eq!(e.len(), 4);
        // The configured share applies when it is below half.
        let mut e: EgressQueue<u32> = EgressQueue::new(EgressConfig { max_packets: 100, priority_packets: 10, ..Default::default() });
        for _ in 0..90 {
            e.enqueue(q(1)).ok().unwrap();
        }
        assert!(e.enqueue(q(1)).is_err());
        for i in 0..10 {
            e.enqueue_priority(i, 64).unwrap();
        }
        assert!(e.enqueue_priority(10, 64).is_err());
    }

    #[test]
    fn microburst_within_half_a_window_fires_once() {
        let mut w = MicroburstWatch::new(MicroburstConfig { bytes: 100_000, window_ns: 100_000 });
        assert!(!w.observe(0, 10_000));
        // +95 KB in 20 us: not yet.
        assert!(!w.observe(10_000, 50_000));
        assert!(!w.observe(20_000, 105_000));
        // +110 KB over the bucket minimum (10 KB) at 30 us: fires.
        assert!(w.observe(30_000, 120_000));
        // Still growing within the quiet window: no second event.
        assert!(!w.observe(60_000, 300_000));
        assert!(!w.observe(120_000, 300_000));
        // A new burst after the quiet window, measured from the depth then.
        assert!(!w.observe(140_000, 350_000));
        assert!(w.observe(170_000, 460_000));
    }

    #[test]
    fn slow_growth_is_not_a_microburst() {
        // 1 MB over 1 ms (100 KB per 100 us, 25 KB per sample): never
        // 100 KB within one window.
        let mut w = MicroburstWatch::new(MicroburstConfig { bytes: 100_000, window_ns: 100_000 });
        for i in 0..=40u64 {
            assert!(!w.observe(i * 25_000, i * 24_000), "sample {i}");
        }
    }

    #[test]
    fn growth_after_a_drain_within_the_window_counts_from_the_minimum() {
        let mut w = MicroburstWatch::new(MicroburstConfig { bytes: 100_000, window_ns: 100_000 });
        assert!(!w.observe(0, 500_000));
        assert!(!w.observe(10_000, 100_000)); // drained
        assert!(w.observe(40_000, 210_000)); // +110 KB from the minimum
    }

    #[test]
    fn sparse_samples_do_not_measure_growth_over_more_than_a_window() {
        let mut w = MicroburstWatch::new(MicroburstConfig { bytes: 100_000, window_ns: 100_000 });
        assert!(!w.observe(0, 0));
        // 1 ms later the queue holds 1 MB: nothing says it grew within 100 us.
        assert!(!w.observe(1_000_000, 1_000_000));
        assert!(!w.observe(1_010_000, 1_050_000));
        assert!(w.observe(1_020_000, 1_150_000));
    }

    // ---------------------------------------------- received PAUSE / PFC

    use crate::pfcrx::{PfcRxConfig, PortPause};
    use crate::wire::pfc::{MacControlRepr, PfcRepr};

    /// An unshaped queue honouring PFC for `prios`, 1 Gb/s quanta (one
    /// quantum = 512 ns), and its shared pause state.
    fn pfc_queue(prios: u8, max_packets: usize) -> (EgressQueue<u32>, Arc<PortPause>) {
        let pp = Arc::new(PortPause::new(PfcRxConfig { link_bps: 1_000_000_000, ..PfcRxConfig::with_default_priority(prios, false, 0) }));
        let e = EgressQueue::new(EgressConfig { max_packets, priority_packets: 4, ..Default::default() }).with_pfc(pp.clone());
        (e, pp)
    }

    /// Packet `id` of priority `class`, 100 bytes.
    fn qc(id: u32, class: u8) -> Queued<u32, u32> {
        Queued { pkt: id, len: 100, flow: Some(id), class }
    }

    fn out(e: &mut EgressQueue<u32>, now: u64) -> Vec<u32> {
        let mut v = Vec::new();
        e.dequeue_ready(now, 64, |p, _, _, _| v.push(p));
        v
    }

    #[test]
    fn a_paused_priority_waits_while_the_others_pass_and_then_leaves_first() {
        let (mut e, pp) = pfc_queue(1 << 3, 1024);
        // 1000 quanta at 1 Gb/s: paused until 10_000 + 512_000.
        pp.receive(&MacControlRepr::Pfc(PfcRepr::pause(1 << 3, 1000)), 10_000);
        for (id, class) in [(1, 3), (2, 0), (3, 3), (4, 5), (5, 3)] {
            e.enqueue(qc(id, class)).ok().unwrap();
        }
        assert_eq!(out(&mut e, 20_000), vec![2, 4], "priority 3 waits, 0 and 5 pass it");
        assert_eq!((e.held_len(), e.depth_bytes(), e.len()), (3, 300, 3), "held packets stay in the queue depth");
        assert_eq!(pp.held_packets.load(Ordering::Relaxed), 3);
        e.enqueue(qc(6, 3)).ok().unwrap();
        e.enqueue(qc(7, 0)).ok().unwrap();
        assert_eq!(out(&mut e, 521_999), vec![7]);
        assert_eq!(e.next_departure_ns(521_999), Some(522_000), "the next departure is the end of the pause");
        assert_eq!(out(&mut e, 522_000), vec![1, 3, 5, 6], "the held ones first, in order, then the newer one");
        assert_eq!((e.held_len(), e.depth_bytes(), e.stats.dequeued), (0, 0, 7));
        assert_eq!(pp.held_now.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_zero_time_frame_resumes_at_once_and_other_priorities_are_not_honoured() {
        let (mut e, pp) = pfc_queue(1 << 3, 1024);
        // Priority 5 is not honoured: its pause is ignored.
        pp.receive(&MacControlRepr::Pfc(PfcRepr::pause(1 << 3 | 1 << 5, 0xffff)), 0);
        e.enqueue(qc(1, 3)).ok().unwrap();
        e.enqueue(qc(2, 5)).ok().unwrap();
        assert_eq!(out(&mut e, 1_000), vec![2]);
        pp.receive(&MacControlRepr::Pfc(PfcRepr::resume(1 << 3)), 2_000);
        assert_eq!(out(&mut e, 2_000), vec![1], "XON: 33 ms early");
    }

    #[test]
    fn refused_packets_go_back_in_order_while_paused_again() {
        let (mut e, pp) = pfc_queue(1 << 3, 1024);
        pp.receive(&MacControlRepr::Pfc(PfcRepr::pause(1 << 3, 10)), 0);
        for id in 1..=4 {
            e.enqueue(qc(id, 3)).ok().unwrap();
        }
        assert!(out(&mut e, 1).is_empty());
        assert_eq!(e.held_len(), 4);
        // The pause ends; the NIC takes none of the two that leave.
        let mut got = Vec::new();
        e.dequeue_ready(10 * 512 + 1, 2, |p, len, flow, prio| got.push((p, len, flow, prio)));
        assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), vec![1, 2]);
        pp.receive(&MacControlRepr::Pfc(PfcRepr::pause(1 << 3, 10)), 10 * 512 + 2);
        for &(p, len, flow, _) in got.iter().rev() {
            e.requeue_front(Queued { pkt: p, len, flow, class: 3 });
        }
        e.enqueue(qc(5, 3)).ok().unwrap();
        assert!(out(&mut e, 10 * 512 + 3).is_empty());
        assert_eq!(out(&mut e, 30 * 512), vec![1, 2, 3, 4, 5], "order kept through the refusal and the second pause");
    }

    #[test]
    fn held_packets_count_against_the_queue_limits_and_drain_at_shutdown() {
        let (mut e, pp) = pfc_queue(1 << 3, 12);
        pp.receive(&MacControlRepr::Pfc(PfcRepr::pause(1 << 3, 0xffff)), 0);
        // 12 packets, 4 of them kept for notifications: room for 8.
        for id in 0..8 {
            e.enqueue(qc(id, 3)).ok().unwrap();
        }
        assert!(out(&mut e, 1).is_empty());
        assert_eq!(e.held_len(), 8);
        assert!(e.enqueue(qc(8, 0)).is_err(), "held packets fill the queue");
        assert_eq!(e.stats.tail_drops, 1);
        let mut freed = Vec::new();
        e.drain(|p| freed.push(p));
        assert_eq!(freed, (0..8).collect::<Vec<_>>());
        assert_eq!((e.len(), e.depth_bytes(), pp.held_now.load(Ordering::Relaxed)), (0, 0, 0));
    }

    #[test]
    fn a_shaped_queue_spends_no_tokens_on_the_packets_it_sets_aside() {
        let pp = Arc::new(PortPause::new(PfcRxConfig { link_bps: 1_000_000_000, ..PfcRxConfig::with_default_priority(1 << 3, false, 0) }));
        // 8 Mb/s: a 100-byte packet every 100 us (frame bytes only); a
        // bucket of one packet.
        let mut e: EgressQueue<u32> = EgressQueue::new(EgressConfig { rate_bps: 8_000_000, burst_bytes: 100, max_packets: 64, priority_packets: 4, frame_overhead: 0, ..Default::default() }).with_pfc(pp.clone());
        pp.receive(&MacControlRepr::Pfc(PfcRepr::pause(1 << 3, 0xffff)), 0);
        for (id, class) in [(1, 3), (2, 3), (3, 0), (4, 0)] {
            e.enqueue(qc(id, class)).ok().unwrap();
        }
        assert_eq!(out(&mut e, 1), vec![3], "the two held ones took no tokens");
        assert_eq!(out(&mut e, 100_001), vec![4]);
    }

    #[test]
    fn the_watchdog_lets_the_held_data_go_after_a_pause_without_a_break() {
        let pp = Arc::new(PortPause::new(PfcRxConfig { link_bps: 1_000_000_000, watchdog_ns: 1_000_000, restore_ns: 1_000_000, ..PfcRxConfig::with_default_priority(1 << 3, false, 0) }));
        let mut e: EgressQueue<u32> = EgressQueue::new(EgressConfig { max_packets: 64, priority_packets: 4, ..Default::default() }).with_pfc(pp.clone());
        pp.receive(&MacControlRepr::Pfc(PfcRepr::pause(1 << 3, 0xffff)), 1);
        for id in 0..4 {
            e.enqueue(qc(id, 3)).ok().unwrap();
        }
        assert!(out(&mut e, 999_999).is_empty(), "held");
        assert_eq!(out(&mut e, 1_000_001), vec![0, 1, 2, 3], "1 ms paused without a break: released, in order");
        pp.receive(&MacControlRepr::Pfc(PfcRepr::pause(1 << 3, 0xffff)), 1_500_000);
        e.enqueue(qc(4, 3)).ok().unwrap();
        assert_eq!(out(&mut e, 1_500_001), vec![4], "restoring: the storm is ignored");
        assert_eq!(pp.snapshot(1_500_001)[3].watchdog_fired, 1);
    }

    #[test]
    fn priority_frames_of_a_paused_priority_wait_but_mac_control_never() {
        let pp = Arc::new(PortPause::new(PfcRxConfig { link_bps: 1_000_000_000, ..PfcRxConfig::with_default_priority(1 << 3, true, 0) }));
        let mut e: EgressQueue<u32> = EgressQueue::new(EgressConfig { max_packets: 64, priority_packets: 8, ..Default::default() }).with_pfc(pp.clone());
        pp.receive(&MacControlRepr::Pfc(PfcRepr::pause(1 << 3, 100)), 0);
        // A CNP on priority 3, END.C's own PFC frame, an ND answer on 0,
        // another CNP on 3.
        for (id, class) in [(1, 3), (2, NEVER_HELD), (3, 0), (4, 3)] {
            e.enqueue_priority_as(id, 64, class).unwrap();
        }
        let mut got = Vec::new();
        e.dequeue_ready(1, 8, |p, _, _, prio| got.push((p, prio)));
        assert_eq!(got, vec![(2, true), (3, true)], "priority 3 waits, in order, ahead of nothing else");
        assert_eq!(e.next_departure_ns(1), Some(51_200), "the end of the pause");
        // The NIC refuses nothing; an 802.3x PAUSE then stops every
        // priority, MAC Control frames apart.
        pp.receive(&MacControlRepr::Pause { quanta: 100 }, 2);
        e.enqueue_priority_as(5, 64, 0).unwrap();
        e.enqueue_priority_as(6, 64, NEVER_HELD).unwrap();
        got.clear();
        e.dequeue_ready(3, 8, |p, _, _, prio| got.push((p, prio)));
        assert_eq!(got, vec![(6, true)]);
        got.clear();
        e.dequeue_ready(2 + 51_200, 8, |p, _, _, prio| got.push((p, prio)));
        assert_eq!(got, vec![(1, true), (4, true), (5, true)]);
    }

    proptest::proptest! {
        /// Whatever the frames, arrivals (data and priority queue), bursts
        /// and NIC refusals: no packet leaves while its priority is paused
        /// (MAC Control frames always may), each priority leaves each queue
        /// in arrival order, and every packet is either out or still counted
        /// in the queue (bytes and packets).
        #[test]
        fn pfc_hold_keeps_order_and_accounting(ops in proptest::collection::vec((0u8..7, 0u8..9, 1u16..40, 0usize..6), 1..200)) {
            let (mut e, pp) = pfc_queue(0b1010_1010, 256);
            let (mut now, mut next_id, mut sent) = (0u64, 0u32, Vec::<(u32, u8, bool)>::new());
            // Per packet id: its class (8: a MAC Control frame) and whether
            // it went to the priority queue.
            let mut class_of = std::collections::HashMap::new();
            let mut data_bytes = 0u64;
            for (op, class, t, k) in ops {
                now += u64::from(t) * 100;
                match op {
                    0 | 1 => {
                        let class = class & 7;
                        if e.enqueue(qc(next_id, class)).is_ok() {
                            class_of.insert(next_id, (class, false));
                            data_bytes += 100;
                        }
                        next_id += 1;
                    }
                    6 => {
                        let c = if class == 8 { NEVER_HELD } else { class };
                        match e.enqueue_priority_as(next_id, 64, c) {
                            Ok(()) => {
                                class_of.insert(next_id, (class, true));
                            }
                            // Queued in the place of a held frame, dropped.
                            Err(x) if x != next_id => {
                                class_of.insert(next_id, (class, true));
                                class_of.remove(&x);
                            }
                            Err(_) => {}
                        }
                        next_id += 1;
                    }
                    2 => { pp.receive(&MacControlRepr::Pfc(PfcRepr::pause(1 << (class & 7), t)), now); }
                    3 => { pp.receive(&MacControlRepr::Pfc(PfcRepr::resume(1 << (class & 7))), now); }
                    _ => {
                        let paused = pp.paused(now);
                        let mut got = Vec::new();
                        e.dequeue_ready(now, k + 1, |p, len, flow, prio| got.push((p, len, flow, prio)));
                        for &(p, _, _, prio) in &got {
                            let (c, is_prio) = class_of[&p];
                            proptest::prop_assert_eq!(prio, is_prio);
                            proptest::prop_assert!(c == 8 || paused & (1 << c) == 0 || c % 2 == 0, "packet {} of paused priority {} left", p, c);
                        }
                        // The NIC takes the first `k` and refuses the rest.
                        let take = k.min(got.len());
                        for &(p, len, flow, prio) in got[take..].iter().rev() {
                            let (c, _) = class_of[&p];
                            if prio {
                                e.requeue_priority_front(p, len, if c == 8 { NEVER_HELD } else { c });
                            } else {
                                e.requeue_front(Queued { pkt: p, len, flow, class: c });
                            }
                        }
                        for g in &got[..take] {
                            let (c, is_prio) = class_of[&g.0];
                            if !is_prio {
                                data_bytes -= 100;
                            }
                            sent.push((g.0, c, is_prio));
                        }
                    }
                }
            }
            for c in 0..9u8 {
                for q in [false, true] {
                    let ids: Vec<u32> = sent.iter().filter(|s| s.1 == c && s.2 == q).map(|s| s.0).collect();
                    proptest::prop_assert!(ids.windows(2).all(|w| w[0] < w[1]), "priority {} (priority queue {}) out of order: {:?}", c, q, ids);
                }
            }
            proptest::prop_assert_eq!(e.len() + sent.len(), class_of.len());
            proptest::prop_assert_eq!(e.depth_bytes(), data_bytes, "the data queue's depth counts held data, never priority frames");
            let mut rest = Vec::new();
            e.drain(|p| rest.push(p));
            proptest::prop_assert_eq!(rest.len() + sent.len(), class_of.len());
        }
    }
}
