//! FANN behaviour (draft-hzh-fantel-wan-tunnel s.4, s.5): a WAN node turns
//! what it observes into Fast Network Notifications for the ingress PEs, and
//! an ingress PE reacts to them by moving its SR policies.
//!
//! Generation ([`Detector`]), per observed port:
//! * link down -> Event Type 0x01 Link failure (metadata: egress port ID,
//!   egress timestamp, link-down flag); link up -> recovery.
//! * egress utilisation over an interval: Event Type 0x02 Congestion with
//!   sub-type 1 / 2 / 3 above 50 / 70 / 90 % (metadata: port, utilisation,
//!   queue occupancy, the top flow's Flow ID when known, the Path ID when
//!   configured); a change of sub-type is a new event (upward at once,
//!   downward only 10 points below the current threshold); under 40 % ->
//!   recovery.
//! * queue depth above `queue_buildup_bytes` -> Event Type 0x06 Queue
//!   buildup; below half of it -> recovery.
//! * queue growth of more than `microburst_bytes` within `microburst_window_ns`
//!   -> Event Type 0x04 Microburst (with the microburst flag); it clears by
//!   itself after a quiet window (recovery).
//! * Recovery notifications use Code 1 with Event Type 0x07 "Recovery" and
//!   the cleared condition's Event Type as the sub-type, and repeat the
//!   cleared event's Event Identifier so receivers can correlate them.
//! * Every new condition gets a fresh Event Identifier (deduplication key
//!   together with the originating node). Output is rate-limited by a token
//!   bucket (RFC 4443 s.2.4); what the bucket refuses is counted.
//!
//! Reaction ([`IngressPe`]): SR policies with a primary and an optional
//! backup SID list, each with a weight, and the (node, port) links and nodes
//! they traverse. A notification from a node outside the configured set is
//! dropped and counted; a repeat of (originating node, event identifier) is
//! ignored; link failure moves every policy that uses the link or node to
//! its backup; congestion scales the weight of the paths through it down by
//! sub-type (to 1/2, 1/4, 1/8); recovery restores. Each accepted
//! notification is also handed on for the configured controller.
//! A Long-haul CNP (draft-tian) from a known node counts as congestion of
//! that node ([`IngressPe::on_cnp`]): its IPv6 source is the congestion-aware
//! node that sent it, and every path through that node is scaled down by its
//! Congestion Level (1/2 below 128, 1/4 below 192, else 1/8); Resume (or
//! level 0) clears it.
//!
//! Wiring ([`PeControl`]): the worker validates notifications addressed to
//! the node (checksums, lengths, known originating node sent from its own
//! address) and hands a [`PeNote`] to the control thread in its event queue
//! (`Event::PeNotification`, lock-free, never blocking the worker). The
//! control thread is the single writer of the policy state: it runs
//! [`IngressPe`], rebuilds the changed [`SrPolicy`]s (backup list active,
//! or the new weights; lists at weight 0 are left out) into a new
//! [`SidTable`] snapshot for the workers, and re-originates a copy of every
//! accepted notification to the controller: an ICMPv6 FANN message from the
//! PE's address carrying the same fields (Originating Node, Event
//! Identifier, metadata) and Code; a Long-haul CNP is re-originated as a
//! FANN Congestion event (sub-type from its level; Resume -> recovery). A
//! CNP has no Event Identifier: the PE numbers the congestion a node's CNPs
//! report, a new identifier when it begins or changes severity, and its
//! Resume repeats the identifier of the event it ends.

use crate::counters::{Drop, Local, WorkerCounters};
use crate::pipeline::TokenBucket;
use crate::srv6::{SidTable, SrPolicy};
use crate::wire::checksum;
use crate::wire::fann::{event, FlowId as FannFlowId, Message, Metadata, MessageRepr, Packet, PacketRepr, CODE_EVENT, CODE_RECOVERY};
use crate::wire::lhcnp::{Action, CnpInfo, Icmpv6LhCnp};
use crate::wire::params::Params;
use std::net::Ipv6Addr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// Event type of a recovery notification (s.5.1.2).
pub const RECOVERY: u8 = 0x07;

#[derive(Debug, Clone, PartialEq)]
pub struct DetectorConfig {
    /// The node's control-plane (loopback) address: Originating Node and
    /// the only source of its notifications.
    pub node: Ipv6Addr,
    pub hop_limit: u8,
    /// The rate utilisation is measured against (bit/s); 0: not known
    /// (no utilisation events until [`Detector::set_link_bps`]).
    pub link_bps: u64,
    /// Utilisation measurement interval.
    pub interval_ns: u64,
    pub queue_buildup_bytes: u64,
    pub microburst_bytes: u64,
    pub microburst_window_ns: u64,
    /// Microbursts are detected elsewhere (the port owner's
    /// [`crate::egress::MicroburstWatch`]) and reported through
    /// [`Detector::on_microbursts`]; `on_tx` then leaves them alone (its
    /// caller samples too rarely to see a window of ~100 us).
    pub microburst_external: bool,
    /// Identifier of the path this port carries (e.g. a SID list hash).
    pub path_id: Option<[u8; 16]>,
    /// Link errors (the NIC's receive and transmit errors: CRC, length,
    /// ...) per second over an interval at or above which the port has a
    /// Signal degradation / link errors event (0x05); 0: never.
    pub link_errors_per_s: u64,
    /// Packets the port lost on receive (the NIC missed them or had no
    /// buffer) per second over an interval at or above which it has a
    /// Performance degradation event (0x03); 0: never.
    pub packet_loss_per_s: u64,
    /// The round trip over the port's link (measured by its RTT probe,
    /// [`crate::rttprobe`]) at or above which it has a Performance
    /// degradation event (0x03) with Latency and Jitter metadata; it ends
    /// below 9/10 of it. 0: never.
    pub latency_degraded_ns: u64,
    pub rate_pps: u32,
    pub burst: u32,
    /// Unix time (ns) at which the caller's clock `now` read 0: the
    /// Timestamp of every message (s.5.1.2: "microseconds since Unix
    /// epoch") and the Egress Timestamp item (same unit; the draft gives
    /// none) are `(now + epoch_ns) / 1000`. 0 in tests and simulations,
    /// whose clocks are virtual.
    pub epoch_ns: u64,
}

impl Default for DetectorConfig {
    fn default() -> Self {
        DetectorConfig {
            node: Ipv6Addr::UNSPECIFIED,
            hop_limit: 64,
            link_bps: 100_000_000_000,
            interval_ns: 1_000_000,
            queue_buildup_bytes: 16 << 20,
            microburst_bytes: 1 << 20,
            microburst_window_ns: 100_000,
            microburst_external: false,
            path_id: None,
            link_errors_per_s: 10,
            packet_loss_per_s: 100,
            latency_degraded_ns: 0,
            rate_pps: 1000,
            burst: 50,
            epoch_ns: 0,
        }
    }
}

/// A notification to send: Code and message (addresses are filled by the
/// caller for each configured ingress PE).
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    pub code: u8,
    pub message: MessageRepr,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DetectorStats {
    pub events: u64,
    pub recoveries: u64,
    pub rate_limited: u64,
}

#[derive(Debug, Clone, Copy, Default)]
struct Active {
    id: u32,
    subtype: u8,
}

/// The FANN Flow ID of a RoCEv2 flow (UDP from `sport` to 4791). IPv4
/// addresses are carried IPv4-mapped (::ffff:a.b.c.d). The flow table keys
/// RoCEv2 flows on (source, destination, DestQP) and keeps the entropy
/// port of the packet that created the entry.
pub fn roce_flow_id(src: std::net::IpAddr, dst: std::net::IpAddr, sport: u16) -> FannFlowId {
    let v6 = |a: std::net::IpAddr| match a {
        std::net::IpAddr::V6(a) => a,
        std::net::IpAddr::V4(a) => a.to_ipv6_mapped(),
    };
    FannFlowId { src: v6(src), dst: v6(dst), src_port: sport, dst_port: crate::wire::params::ROCEV2_UDP_PORT, protocol: 17 }
}

/// The system clock in ns since the Unix epoch, the time base of FANN
/// Timestamps (0 for a clock set before 1970).
pub fn unix_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// A random first Event Identifier for a node's detectors: std's
/// `RandomState` draws its keys from the operating system's random source.
/// Identifiers are used for deduplication (s.5.1.2); a node that started
/// again from a fixed value would repeat the ones an ingress PE still
/// remembers, and its events would be taken for duplicates.
pub fn random_event_id() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(unix_ns());
    h.finish() as u32
}

/// Event types a detector reports, one [`Slot`] each.
const SLOTS: usize = 6;

fn slot_of(event_type: u8) -> usize {
    match event_type {
        event::LINK_FAILURE => 0,
        event::CONGESTION => 1,
        event::QUEUE_BUILDUP => 2,
        event::PERFORMANCE_DEGRADATION => 4,
        event::SIGNAL_DEGRADATION => 5,
        _ => 3,
    }
}

/// The shortest window over which error and loss rates are measured: at
/// the default 10 errors/s one error in it starts an event; shorter windows
/// would make every stray error one.
pub const RATE_WINDOW_NS: u64 = 100_000_000;

/// A count (errors, losses) watched per window (the longer of
/// [`RATE_WINDOW_NS`] and the detector's interval) against a rate: the
/// event starts in a window at or above the rate and ends after a window
/// under half of it.
#[derive(Debug, Clone, Copy, Default)]
struct RateWatch {
    win_start: u64,
    win_count: u64,
}

/// What the ingress PEs were told of one event type, and what to tell
/// them next.
#[derive(Debug, Clone, Default)]
struct Slot {
    /// The identifier of the event they know to stand.
    told: Option<u32>,
    /// Held back by the rate limits.
    next: Option<Notification>,
    /// `next` was counted as rate-limited.
    held: bool,
    /// Since when `next` waits (its first refusal; a newer state that
    /// replaces it keeps the place).
    held_at: u64,
}

/// FANN generation for one port.
pub struct Detector {
    cfg: DetectorConfig,
    port_id: u32,
    /// Where Event Identifiers come from: shared by every port of a node,
    /// so they are unique per node (s.5.1.2).
    ids: Arc<AtomicU32>,
    bucket: TokenBucket,
    /// The node's limit shared with its other ports, and the tokens a
    /// notification takes from it.
    gate: Option<(Arc<parking_lot::Mutex<TokenBucket>>, u32)>,
    slots: [Slot; SLOTS],
    /// Batched (a node's agent, [`Detector::set_batched`]): observations
    /// only change state and queue what to tell; [`Detector::flush`]
    /// sends.
    batched: bool,
    link_down: Option<Active>,
    congestion: Option<Active>,
    buildup: Option<Active>,
    microburst: Option<(Active, u64 /*last growth seen*/)>,
    /// Utilisation window.
    win_start: u64,
    win_bytes: u64,
    /// Microburst window: queue depth at its start.
    mb_start: u64,
    mb_qd: u64,
    /// Link errors (Signal degradation) and receive losses (Performance
    /// degradation).
    errors: RateWatch,
    losses: RateWatch,
    /// The Signal degradation / link errors event.
    signal: Option<Active>,
    /// The Performance degradation event: it stands while the port loses
    /// packets on receive (`losses`' condition) or its link's round trip
    /// is degraded (one event per type, as the ingress PE keeps them),
    /// with the causes' metadata: (losses in the window; round trip and
    /// jitter in us).
    perf: Option<Active>,
    perf_loss: Option<u64>,
    perf_latency: Option<(u32, u32)>,
    pub stats: DetectorStats,
}

impl Detector {
    /// A detector numbering its events from `first_event_id` on its own.
    pub fn new(cfg: DetectorConfig, port_id: u32, first_event_id: u32) -> Self {
        Self::with_ids(cfg, port_id, Arc::new(AtomicU32::new(first_event_id)))
    }

    /// A detector taking its Event Identifiers from `ids`, which the
    /// node's other ports share (start it at [`random_event_id`], so that
    /// a restarted node does not repeat the identifiers an ingress PE saw).
    pub fn with_ids(cfg: DetectorConfig, port_id: u32, ids: Arc<AtomicU32>) -> Self {
        Detector {
            bucket: TokenBucket::new(cfg.rate_pps, cfg.burst),
            cfg,
            port_id,
            ids,
            gate: None,
            slots: Default::default(),
            batched: false,
            link_down: None,
            congestion: None,
            buildup: None,
            microburst: None,
            win_start: 0,
            win_bytes: 0,
            mb_start: 0,
            mb_qd: 0,
            errors: RateWatch::default(),
            losses: RateWatch::default(),
            signal: None,
            perf: None,
            perf_loss: None,
            perf_latency: None,
            stats: DetectorStats::default(),
        }
    }

    fn fresh_id(&mut self) -> u32 {
        self.ids.fetch_add(1, Ordering::Relaxed)
    }

    /// `now` (the caller's clock, ns) in microseconds since the Unix epoch.
    fn unix_us(&self, now: u64) -> u64 {
        now.saturating_add(self.cfg.epoch_ns) / 1000
    }

    fn message(&self, event_type: u8, subtype: u8, id: u32, now: u64, md: Metadata) -> MessageRepr {
        MessageRepr { hop_limit: self.cfg.hop_limit, event_type, event_subtype: subtype, event_id: id, timestamp: self.unix_us(now), originating_node: self.cfg.node, metadata: md }
    }

    /// Tell the ingress PEs of an event or recovery, now if the rate
    /// limits allow, else as soon as they do. The PEs only ever learn the
    /// latest state of each event type: a newer event replaces one held
    /// back, an event that cleared before it could be sent is never sent,
    /// and a recovery names the event they were told of. So a refused
    /// notification (a recovery above all) is delayed, never lost.
    fn emit(&mut self, out: &mut Vec<Notification>, now: u64, code: u8, mut m: MessageRepr) {
        let k = slot_of(if code == CODE_RECOVERY { m.event_subtype } else { m.event_type });
        let slot = &mut self.slots[k];
        if code == CODE_RECOVERY {
            match slot.told {
                None => {
                    // They never heard of it.
                    slot.next = None;
                    slot.held = false;
                    return;
                }
                Some(id) => m.event_id = id,
            }
        }
        if slot.next.is_none() {
            // Waiting from now (a newer state that replaces a waiting one
            // keeps its place).
            slot.held_at = now;
        }
        slot.next = Some(Notification { code, message: m });
        if !self.batched {
            self.send(k, now, out);
        }
    }

    /// Send slot `k`'s notification if the limits allow.
    fn send(&mut self, k: usize, now: u64, out: &mut Vec<Notification>) {
        if self.slots[k].next.is_none() {
            return;
        }
        if !self.take(now) {
            if !self.slots[k].held {
                self.slots[k].held = true;
                self.slots[k].held_at = now;
                self.stats.rate_limited += 1;
            }
            return;
        }
        let slot = &mut self.slots[k];
        let Some(n) = slot.next.take() else { return };
        slot.held = false;
        if n.code == CODE_RECOVERY {
            slot.told = None;
            self.stats.recoveries += 1;
        } else {
            slot.told = Some(n.message.event_id);
            self.stats.events += 1;
        }
        out.push(n);
    }

    /// One token from the port's bucket and, with a node-wide gate, one
    /// per ingress PE from the node's (all or none).
    fn take(&mut self, now: u64) -> bool {
        if !self.bucket.take(now) {
            return false;
        }
        if let Some((g, n)) = &self.gate {
            if !g.lock().take_n(now, *n) {
                self.bucket.refund();
                return false;
            }
        }
        true
    }

    /// Send what the rate limits held back, as far as they now allow
    /// (batched: nothing, the agent flushes once all is observed).
    pub fn retry(&mut self, now: u64, out: &mut Vec<Notification>) {
        if !self.batched {
            self.flush(now, out);
        }
    }

    /// Send what waits, as far as the rate limits allow.
    pub fn flush(&mut self, now: u64, out: &mut Vec<Notification>) {
        for k in 0..SLOTS {
            self.send(k, now, out);
        }
    }

    /// Batched: the observation calls (`on_link`, `on_tx`, ...) change
    /// state and queue the latest of each event type without sending;
    /// [`Detector::flush`] sends. A node's agent observes all its ports
    /// first, so an event that cleared in the same round is never sent,
    /// and then flushes them oldest first ([`Detector::waiting_since`]),
    /// so that the node-wide limit goes to what waited longest.
    pub fn set_batched(&mut self, on: bool) {
        self.batched = on;
    }

    /// Since when the notification waiting longest waits (held back by
    /// the limits, or queued in batched mode; None: nothing waits).
    pub fn waiting_since(&self) -> Option<u64> {
        self.slots.iter().filter(|s| s.next.is_some()).map(|s| s.held_at).min()
    }

    /// Share the node's limit on what it originates (RFC 4443 s.2.4 (f),
    /// FANN draft s.6) with its other ports: each notification takes
    /// `per_notification` tokens (one per ingress PE) from `gate`.
    pub fn set_gate(&mut self, gate: Arc<parking_lot::Mutex<TokenBucket>>, per_notification: u32) {
        self.gate = Some((gate, per_notification));
    }

    /// Notifications the rate limits hold back (at most one per event
    /// type: the latest).
    pub fn held_back(&self) -> usize {
        self.slots.iter().filter(|s| s.next.is_some()).count()
    }

    fn base_md(&self, now: u64) -> Metadata {
        Metadata { egress_port_id: Some(self.port_id), egress_timestamp: Some(self.unix_us(now)), path_id: self.cfg.path_id, ..Default::default() }
    }

    fn recover(&mut self, cleared: u8, a: Active, now: u64, out: &mut Vec<Notification>) {
        let md = self.base_md(now);
        let m = self.message(RECOVERY, cleared, a.id, now, md);
        self.emit(out, now, CODE_RECOVERY, m);
    }

    /// Microbursts counted by the port's owner since the last call (`new`),
    /// with the queue depth now: the first starts a Microburst event; the
    /// recovery follows once no new one was seen for a window (and at least
    /// one call later).
    pub fn on_microbursts(&mut self, new: u64, qd: u64, now: u64, out: &mut Vec<Notification>) {
        if new > 0 {
            self.microburst_seen(qd, now, out);
        } else {
            self.microburst_quiet(now, out);
        }
        // What the limits held back before, as far as they allow now
        // (after this call's changes: a state that cleared is not sent).
        self.retry(now, out);
    }

    /// A microburst was seen: starts the event, or keeps it going.
    fn microburst_seen(&mut self, qd: u64, now: u64, out: &mut Vec<Notification>) {
        match self.microburst.as_mut() {
            Some((_, last)) => *last = now,
            None => {
                let id = self.fresh_id();
                self.microburst = Some((Active { id, subtype: 0 }, now));
                let md = Metadata { microburst: Some(true), queue_occupancy: Some(sat32(qd)), ..self.base_md(now) };
                let m = self.message(event::MICROBURST, 0, id, now, md);
                self.emit(out, now, CODE_EVENT, m);
            }
        }
    }

    /// No microburst for a whole window since the last: the recovery.
    fn microburst_quiet(&mut self, now: u64, out: &mut Vec<Notification>) {
        if let Some((a, last)) = self.microburst {
            if now.saturating_sub(last) >= self.cfg.microburst_window_ns {
                self.microburst = None;
                self.recover(event::MICROBURST, a, now, out);
            }
        }
    }

    /// Link errors (`errors`: the NIC's receive and transmit errors) and
    /// receive losses (`lost`: packets the NIC missed or had no buffer
    /// for) on the port since the last call. A window (at least
    /// [`RATE_WINDOW_NS`]) whose errors reach `link_errors_per_s` starts a
    /// Signal degradation / link errors event (0x05, metadata: the
    /// window's error count, s.5.1.3 bit 10); one whose losses reach
    /// `packet_loss_per_s` a Performance degradation event (0x03,
    /// metadata: the window's loss count, bit 5). Each recovers after a
    /// window under half its rate.
    pub fn on_errors(&mut self, errors: u64, lost: u64, now: u64, out: &mut Vec<Notification>) {
        let standing = self.signal.is_some();
        if let Some((ev, count)) = Self::watch(&mut self.errors, standing, errors, self.cfg.link_errors_per_s, self.cfg.interval_ns, now) {
            self.signal_event(ev, count, now, out);
        }
        let standing = self.perf_loss.is_some();
        if let Some((ev, count)) = Self::watch(&mut self.losses, standing, lost, self.cfg.packet_loss_per_s, self.cfg.interval_ns, now) {
            self.perf_loss = ev.then_some(count);
            self.perf_update(now, out);
        }
        self.retry(now, out);
    }

    /// The round trip over the port's link as its RTT probe measures it
    /// (`rtt_ns`, the smallest of its window; None: no answer lately, which
    /// changes nothing) and its jitter: at or above `latency_degraded_ns`
    /// a Performance degradation event (0x03) with Latency and Jitter
    /// metadata (s.5.1.3 bits 6 and 7, in us; the latency is the round
    /// trip); it recovers below 9/10 of it, unless losses hold it.
    pub fn on_latency(&mut self, rtt_ns: Option<u64>, jitter_ns: u64, now: u64, out: &mut Vec<Notification>) {
        let thr = self.cfg.latency_degraded_ns;
        if let (Some(rtt), true) = (rtt_ns, thr > 0) {
            let us = |ns: u64| sat32(ns / 1000);
            let change = match self.perf_latency {
                None if rtt >= thr => Some(Some((us(rtt), us(jitter_ns)))),
                Some(_) if rtt < thr - thr / 10 => Some(None),
                _ => None,
            };
            if let Some(c) = change {
                self.perf_latency = c;
                self.perf_update(now, out);
            }
        }
        self.retry(now, out);
    }

    /// The port's round trip is no longer measured (its RTT measurement
    /// was switched off): a latency cause of the Performance degradation
    /// event is withdrawn, as a recovery would (nobody is left to see the
    /// round trip come down).
    pub fn latency_unmeasured(&mut self, now: u64, out: &mut Vec<Notification>) {
        if self.perf_latency.take().is_some() {
            self.perf_update(now, out);
        }
    }

    /// Start the Performance degradation event when a cause appeared, end
    /// it when none is left.
    fn perf_update(&mut self, now: u64, out: &mut Vec<Notification>) {
        let want = self.perf_loss.is_some() || self.perf_latency.is_some();
        match (self.perf, want) {
            (None, true) => {
                let id = self.fresh_id();
                self.perf = Some(Active { id, subtype: 0 });
                let mut md = self.base_md(now);
                if self.perf_loss.is_some() {
                    // Receive losses are seen on the ingress side (s.5.1.3
                    // bits 0 and 2); a round trip over the link, on the
                    // egress side (bits 1 and 3).
                    md.ingress_port_id = md.egress_port_id;
                    md.ingress_timestamp = md.egress_timestamp;
                    if self.perf_latency.is_none() {
                        md.egress_port_id = None;
                        md.egress_timestamp = None;
                    }
                }
                md.packet_loss = self.perf_loss.map(sat32);
                md.latency = self.perf_latency.map(|l| l.0);
                md.jitter = self.perf_latency.map(|l| l.1);
                let m = self.message(event::PERFORMANCE_DEGRADATION, 0, id, now, md);
                self.emit(out, now, CODE_EVENT, m);
            }
            (Some(a), false) => {
                self.perf = None;
                self.recover(event::PERFORMANCE_DEGRADATION, a, now, out);
            }
            _ => {}
        }
    }

    /// Count `n` into `w`; at the end of an interval, Some((true, count))
    /// when its rate reached `per_s` and its condition is not `standing`,
    /// Some((false, count)) when it fell under half of it and it is.
    fn watch(w: &mut RateWatch, standing: bool, n: u64, per_s: u64, interval_ns: u64, now: u64) -> Option<(bool, u64)> {
        w.win_count = w.win_count.saturating_add(n);
        let dt = now.saturating_sub(w.win_start);
        if dt < interval_ns.max(RATE_WINDOW_NS) {
            return None;
        }
        let count = std::mem::take(&mut w.win_count);
        w.win_start = now;
        if per_s == 0 {
            return None;
        }
        // count / dt >= per_s / 1e9, in integers.
        let reach = u128::from(count) * 1_000_000_000 >= u128::from(per_s) * u128::from(dt);
        let under_half = u128::from(count) * 2_000_000_000 < u128::from(per_s) * u128::from(dt);
        match (standing, reach, under_half) {
            (false, true, _) => Some((true, count)),
            (true, _, true) => Some((false, count)),
            _ => None,
        }
    }

    /// Start the Signal degradation event (metadata: the window's error
    /// count), or end it.
    fn signal_event(&mut self, start: bool, count: u64, now: u64, out: &mut Vec<Notification>) {
        if start {
            let id = self.fresh_id();
            self.signal = Some(Active { id, subtype: 0 });
            let md = Metadata { signal_degradation: Some(sat32(count)), ..self.base_md(now) };
            let m = self.message(event::SIGNAL_DEGRADATION, 0, id, now, md);
            self.emit(out, now, CODE_EVENT, m);
        } else if let Some(a) = self.signal.take() {
            self.recover(event::SIGNAL_DEGRADATION, a, now, out);
        }
    }

    /// The Path ID this port's notifications carry (s.5.1.3).
    pub fn set_path_id(&mut self, id: Option<[u8; 16]>) {
        self.cfg.path_id = id;
    }

    /// The round trip at or above which the port's link is degraded
    /// ([`Detector::on_latency`]; 0: never).
    pub fn set_latency_degraded(&mut self, ns: u64) {
        self.cfg.latency_degraded_ns = ns;
    }

    /// The port's link went down (`up == false`) or came back.
    pub fn on_link(&mut self, up: bool, now: u64, out: &mut Vec<Notification>) {
        self.on_link_with_flow(up, None, now, out);
    }

    /// [`Detector::on_link`] with the flow that had the most bytes queued
    /// for the port: a link failure names it as the affected traffic
    /// (s.4.1: "the notification must also include information about the
    /// affected traffic"), as well as the port's Path ID when it has one.
    pub fn on_link_with_flow(&mut self, up: bool, top_flow: Option<FannFlowId>, now: u64, out: &mut Vec<Notification>) {
        match (up, self.link_down) {
            (false, None) => {
                let id = self.fresh_id();
                self.link_down = Some(Active { id, subtype: 0 });
                let md = Metadata { link_down: Some(true), flow_id: top_flow, ..self.base_md(now) };
                let m = self.message(event::LINK_FAILURE, 0, id, now, md);
                self.emit(out, now, CODE_EVENT, m);
            }
            (true, Some(a)) => {
                self.link_down = None;
                self.recover(event::LINK_FAILURE, a, now, out);
            }
            _ => {}
        }
        // What the limits held back before, as far as they allow now
        // (after this call's changes: a state that cleared is not sent).
        self.retry(now, out);
    }

    /// The rate utilisation is measured against (bit/s; 0: not known,
    /// no utilisation measured), from the next interval on.
    pub fn set_link_bps(&mut self, bps: u64, now: u64) {
        if bps != self.cfg.link_bps {
            self.cfg.link_bps = bps;
            self.win_start = now;
            self.win_bytes = 0;
        }
    }

    /// Bytes transmitted on the port (call per burst) and its queue depth.
    /// `top_flow`: the flow contributing most, if known.
    pub fn on_tx(&mut self, bytes: u64, qd: u64, top_flow: Option<FannFlowId>, now: u64, out: &mut Vec<Notification>) {
        // Microburst: growth within a short window.
        if self.cfg.microburst_external {
            // Reported by on_microbursts.
        } else if now.saturating_sub(self.mb_start) >= self.cfg.microburst_window_ns {
            self.microburst_quiet(now, out);
            self.mb_start = now;
            self.mb_qd = qd;
        } else if qd.saturating_sub(self.mb_qd) > self.cfg.microburst_bytes {
            self.microburst_seen(qd, now, out);
            self.mb_qd = qd;
        }
        // Queue buildup with hysteresis.
        match self.buildup {
            None if qd > self.cfg.queue_buildup_bytes => {
                let id = self.fresh_id();
                self.buildup = Some(Active { id, subtype: 0 });
                let md = Metadata { queue_occupancy: Some(sat32(qd)), flow_id: top_flow, ..self.base_md(now) };
                let m = self.message(event::QUEUE_BUILDUP, 0, id, now, md);
                self.emit(out, now, CODE_EVENT, m);
            }
            Some(a) if qd < self.cfg.queue_buildup_bytes / 2 => {
                self.buildup = None;
                self.recover(event::QUEUE_BUILDUP, a, now, out);
            }
            _ => {}
        }
        // Utilisation per interval, against the link's (or the shaper's)
        // rate; nothing while that rate is not known (0: a link not up
        // yet), which is no measure of congestion.
        self.win_bytes += bytes;
        let dt = now.saturating_sub(self.win_start);
        if dt >= self.cfg.interval_ns.max(1) {
            // Bits sent x 100 against the bits the link could send: the
            // thresholds compared exactly (s.5.1.2: severe is "> 90%",
            // 90.9 % is severe), the item in whole percent.
            let sent = u128::from(self.win_bytes) * 8 * 1_000_000_000 * 100;
            let cap = u128::from(dt) * u128::from(self.cfg.link_bps);
            self.win_start = now;
            self.win_bytes = 0;
            if cap == 0 {
                self.retry(now, out);
                return;
            }
            let util = (sent / cap).min(100) as u32;
            let over = |pct: u128| sent > pct * cap;
            let at_least = |pct: u128| sent >= pct * cap;
            let raw = if over(90) {
                3
            } else if over(70) {
                2
            } else if over(50) {
                1
            } else {
                0
            };
            // Hysteresis: a higher sub-type is announced at once; a lower
            // one only once utilisation is 10 points under the current
            // sub-type's threshold (no flapping around 70 / 90 %).
            let cur = self.congestion.map(|a| a.subtype).unwrap_or(0);
            let floor = |st: u8| match st {
                3 => 80,
                2 => 60,
                1 => 40,
                _ => 0,
            };
            // Stepping down, the sub-type whose hold range the utilisation
            // is in: severe at 55 % becomes mild (it holds down to 40 %),
            // not a recovery.
            let sub = if raw >= cur {
                raw
            } else if at_least(floor(cur)) {
                cur
            } else {
                (1..cur).rev().find(|&s| at_least(floor(s))).unwrap_or(0)
            };
            match (sub, self.congestion) {
                (0, Some(a)) => {
                    self.congestion = None;
                    self.recover(event::CONGESTION, a, now, out);
                }
                (s, prev) if s > 0 && prev.map(|a| a.subtype) != Some(s) => {
                    let id = self.fresh_id();
                    self.congestion = Some(Active { id, subtype: s });
                    let md = Metadata { egress_tx_utilization: Some(util), queue_occupancy: Some(sat32(qd)), flow_id: top_flow, ..self.base_md(now) };
                    let m = self.message(event::CONGESTION, s, id, now, md);
                    self.emit(out, now, CODE_EVENT, m);
                }
                _ => {}
            }
        }
        // What the limits held back before, as far as they allow now
        // (after this call's changes: a state that cleared is not sent).
        self.retry(now, out);
    }
}

fn sat32(v: u64) -> u32 {
    v.min(u64::from(u32::MAX)) as u32
}

// ---------------------------------------------------------------- ingress PE

/// A network element a path uses: a node, or one of its ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Element {
    pub node: Ipv6Addr,
    /// None: the whole node.
    pub port: Option<u32>,
}

/// Where an event is: the element it names (originating node and port),
/// and the Path ID it carries (s.5.1.3 bit 14, "identifier of the affected
/// path": 16 octets, a SID of the path, as `[fann] path_ids` sends it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Place {
    element: Element,
    path: Option<Ipv6Addr>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PathSpec {
    pub segments: Vec<Ipv6Addr>,
    pub weight: u32,
    pub elements: Vec<Element>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PolicySpec {
    pub name: String,
    pub primary: Vec<PathSpec>,
    pub backup: Option<Vec<PathSpec>>,
}

/// The state of one policy the headend should use.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyState {
    pub on_backup: bool,
    /// Effective weight of each active path (primary or backup list).
    pub weights: Vec<u32>,
    /// The share (per mille) of its rate the policy's traffic is held to:
    /// Some when every active path that is up is congested, so neither a
    /// backup nor load balancing takes the traffic off the congestion
    /// (s.4.2); by the mildest congestion among them, since the weights
    /// already favour it: 750 below moderate (divisor 2), 500 moderate
    /// (4), 250 severe (8).
    pub rate_permille: Option<u16>,
}

/// [`PolicyState::rate_permille`] for the mildest weight divisor of a
/// policy's congested paths.
pub fn rate_permille_for(divisor: u32) -> u16 {
    match divisor {
        0..=2 => 750,
        3..=4 => 500,
        _ => 250,
    }
}

/// Moving a policy to its backup lists on congestion (s.4.2: "If backup
/// path is available, ingress PE should switch the service traffic to the
/// backup path"), damped so that it cannot flap: a policy whose own traffic
/// congests its primary would otherwise move away, see the congestion
/// clear, move back and congest it again every few detector intervals,
/// reordering its RoCEv2 flows each time.
///
/// * It moves at once when no primary list is healthy (each failed or
///   congested) and a backup list is.
/// * It moves back only when the primary has been healthy for the
///   hold-down and the hold-down has passed since it moved.
/// * A move within twice the hold-down of the last move back doubles the
///   hold-down (up to `holddown_max_ns`); a move after a longer quiet
///   spell starts again from `holddown_ns`. So a flap settles to one
///   round trip per `holddown_max_ns` at worst.
///
/// Failures are not damped: a policy whose primary lists all failed moves
/// at once and returns as soon as one is up and healthy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failover {
    /// Move on congestion at all (false: congestion only reweights).
    pub on_congestion: bool,
    pub holddown_ns: u64,
    pub holddown_max_ns: u64,
    /// s.4.2 "Ingress PE should reduce the transmission rate of
    /// corresponding traffic": when congestion leaves a policy no healthy
    /// path to move its traffic to, its traffic is held to a share of its
    /// rate ([`PolicyState::rate_permille`], [`crate::srv6::PolicyMeter`]).
    pub reduce_rate: bool,
    /// The window of the workers' policy rate meters.
    pub rate_window_ns: u64,
}

impl Default for Failover {
    fn default() -> Self {
        Failover { on_congestion: true, holddown_ns: 1_000_000_000, holddown_max_ns: 60_000_000_000, reduce_rate: true, rate_window_ns: crate::srv6::METER_WINDOW_NS }
    }
}

/// A policy's congestion fail-over state ([`Failover`]).
#[derive(Debug, Clone, Copy, Default)]
struct Damp {
    /// On the backup because of congestion, since then.
    since: Option<u64>,
    /// The primary has been healthy since then.
    healthy_since: Option<u64>,
    /// The hold-down in force.
    hold: u64,
    /// The last move back to the primary.
    last_back: Option<u64>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PeStats {
    pub accepted: u64,
    pub duplicates: u64,
    pub unknown_source: u64,
    pub switched_to_backup: u64,
    pub restored: u64,
    pub reweighted: u64,
    /// New events refused because [`MAX_PE_EVENTS`] stood.
    pub state_full: u64,
    /// Standing events on no policy's path dropped to make room for a
    /// new one in a full table (`pe-event-evicted-off-path`).
    pub evicted_off_path: u64,
    /// Events of a type the draft does not define (or not yet):
    /// ignored.
    pub unknown_event: u64,
    /// Events over their node's rate limit.
    pub rate_limited: u64,
    /// Events detected before the event of their element and type that
    /// stands, arriving late: ignored (also in `duplicates`).
    pub stale: u64,
    /// Moves to the backup on congestion (part of `switched_to_backup`),
    /// and those that found the hold-down doubled (a flap damped).
    pub congestion_switches: u64,
    pub holddown_raised: u64,
    /// Policies held to a share of their rate (s.4.2), and released.
    pub rate_reduced: u64,
    pub rate_restored: u64,
}

/// What the ingress PE did with a notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reaction {
    /// From a node not in `known_nodes`.
    Dropped,
    Duplicate,
    /// A new event while [`MAX_PE_EVENTS`] failures or congestions stand:
    /// dropped (`fann-state-full`).
    Full,
    /// An event of a type this PE does not know: ignored
    /// (`fann-unknown-event`), neither applied nor copied to the
    /// controller.
    UnknownEvent,
    /// Over the node's rate limit ([`PeConfig::node_max_pps`]): dropped
    /// (`fann-rx-rate-limited`).
    RateLimited,
    /// Accepted: these policies changed; forward a copy to the controller.
    Applied { changed: Vec<usize> },
}

const DEDUP: usize = 1024;

/// The failures and the congestions an ingress PE keeps (each), so that
/// what known nodes send cannot grow its state without bound. One entry
/// per element (and event type), so this is a limit on elements.
pub const MAX_PE_EVENTS: usize = 4096;

pub struct IngressPe {
    policies: Vec<PolicySpec>,
    state: Vec<PolicyState>,
    known: Vec<Ipv6Addr>,
    /// Failed elements and congested elements (with divisor), by event:
    /// (element, node, Event ID, Timestamp).
    failed: Vec<(Place, Ipv6Addr, u32, u64)>,
    /// (element, Event Type, divisor, node, Event ID, Timestamp): one entry
    /// per element and type; the element's divisor is the largest.
    congested: Vec<(Place, u8, u32, Ipv6Addr, u32, u64)>,
    /// Nodes congested according to Long-haul CNPs, with the divisor and
    /// the Event Identifier this PE gave that congestion (a CNP carries
    /// none; see [`IngressPe::last_cnp_event`]).
    cnp: Vec<(Ipv6Addr, u32, u32)>,
    /// The next Event Identifier for a CNP-reported congestion.
    next_cnp_event: u32,
    /// The Event Identifier of the congestion the last accepted CNP began,
    /// changed or ended.
    cnp_event: u32,
    /// The last [`DEDUP`] notifications accepted: (node, Code, Event ID,
    /// Timestamp). A message repeated is the same in all four; an
    /// identifier a restarted node numbers again comes with a new
    /// detection time.
    seen: std::collections::VecDeque<(Ipv6Addr, u8, u32, u64)>,
    pub stats: PeStats,
    failover: Failover,
    damp: Vec<Damp>,
    /// The time (ns, any epoch) of the notification being handled or of
    /// the last [`IngressPe::advance`].
    now: u64,
}

impl IngressPe {
    pub fn new(policies: Vec<PolicySpec>, known_nodes: Vec<Ipv6Addr>) -> Self {
        Self::with_failover(policies, known_nodes, Failover::default())
    }

    pub fn with_failover(policies: Vec<PolicySpec>, known_nodes: Vec<Ipv6Addr>, failover: Failover) -> Self {
        let state = policies.iter().map(|p| PolicyState { on_backup: false, weights: p.primary.iter().map(|x| x.weight).collect(), rate_permille: None }).collect();
        let damp = vec![Damp { hold: failover.holddown_ns, ..Damp::default() }; policies.len()];
        IngressPe { policies, state, known: known_nodes, failed: Vec::new(), congested: Vec::new(), cnp: Vec::new(), next_cnp_event: random_event_id(), cnp_event: 0, seen: std::collections::VecDeque::with_capacity(DEDUP), stats: PeStats::default(), failover, damp, now: 0 }
    }

    /// Set the clock (ns, monotonic) for what follows: notifications are
    /// handled at this time. Returns the policies that changed now that
    /// it is this late (a hold-down ran out: back to the primary).
    pub fn advance(&mut self, now: u64) -> Vec<usize> {
        self.now = self.now.max(now);
        if self.damp.iter().any(|d| d.since.is_some()) {
            self.recompute()
        } else {
            Vec::new()
        }
    }

    /// What stands at this PE, for `show fann`: one line per failed or
    /// congested element and per node a Long-haul CNP reported congested.
    pub fn standing(&self) -> Vec<String> {
        let at = |p: &Place| {
            let port = p.element.port.map(|x| format!(" port {x}")).unwrap_or_default();
            let path = p.path.map(|x| format!(" path {x}")).unwrap_or_default();
            format!("{}{port}{path}", p.element.node)
        };
        let name = |t: u8| match t {
            event::CONGESTION => "congestion",
            event::QUEUE_BUILDUP => "queue-buildup",
            event::MICROBURST => "microburst",
            event::PERFORMANCE_DEGRADATION => "performance-degradation",
            event::SIGNAL_DEGRADATION => "signal-degradation",
            _ => "event",
        };
        let mut v: Vec<String> = self.failed.iter().map(|(p, _, id, _)| format!("{} link-failure event {id:#010x}", at(p))).collect();
        v.extend(self.congested.iter().map(|(p, t, d, _, id, _)| format!("{} {} divisor {d} event {id:#010x}", at(p), name(*t))));
        v.extend(self.cnp.iter().map(|(n, d, id)| format!("{n} long-haul-cnp divisor {d} event {id:#010x}")));
        v
    }

    /// The operator clears what `node` reported (every node: `None`): its
    /// failures, congestions and CNP congestion stand no more, as if each
    /// had been recovered (for a node that restarted after its link came
    /// back and so has no recovery to send). Returns how many were cleared
    /// and the policies that changed.
    pub fn clear(&mut self, node: Option<Ipv6Addr>) -> (usize, Vec<usize>) {
        let keep = |n: &Ipv6Addr| node.is_some_and(|x| x != *n);
        let before = self.failed.len() + self.congested.len() + self.cnp.len();
        self.failed.retain(|(_, n, _, _)| keep(n));
        self.congested.retain(|(_, _, _, n, _, _)| keep(n));
        self.cnp.retain(|(n, _, _)| keep(n));
        let cleared = before - (self.failed.len() + self.congested.len() + self.cnp.len());
        (cleared, self.recompute())
    }

    /// When a policy on its backup because of congestion may move back at
    /// the earliest (its primary healthy that long), if any.
    pub fn next_deadline(&self) -> Option<u64> {
        self.damp.iter().filter_map(|d| Some(d.since?.max(d.healthy_since?) + d.hold)).min()
    }

    /// The hold-down in force for policy `i` (ns).
    pub fn holddown(&self, i: usize) -> Option<u64> {
        self.damp.get(i).map(|d| d.hold)
    }

    pub fn state(&self, i: usize) -> Option<&PolicyState> {
        self.state.get(i)
    }

    fn place_of(m: &MessageRepr) -> Place {
        Place { element: Element { node: m.originating_node, port: m.metadata.egress_port_id.or(m.metadata.ingress_port_id) }, path: m.metadata.path_id.map(Ipv6Addr::from) }
    }

    /// Whether an event at `at` is on `path`: one of the path's elements
    /// (configured), or the Path ID it names is a SID of the path's list
    /// ("reroutes the traffic based on its content", s.4.1; works without
    /// `elements` configured).
    fn hits(path: &PathSpec, at: &Place) -> bool {
        let e = &at.element;
        at.path.is_some_and(|p| path.segments.contains(&p)) || path.elements.iter().any(|x| x.node == e.node && (x.port.is_none() || e.port.is_none() || x.port == e.port))
    }

    /// An Event Type the PE acts on.
    fn known_type(t: u8) -> bool {
        matches!(t, event::LINK_FAILURE | event::CONGESTION | event::QUEUE_BUILDUP | event::MICROBURST | event::PERFORMANCE_DEGRADATION | event::SIGNAL_DEGRADATION)
    }

    /// An event detected before the one of its element and type that
    /// stands, arriving late (reordered on the way): it changes nothing,
    /// and is remembered so that a copy of it is a duplicate too.
    fn stale(&mut self, key: (Ipv6Addr, u8, u32, u64)) -> Reaction {
        if self.seen.len() == DEDUP {
            self.seen.pop_front();
        }
        self.seen.push_back(key);
        self.stats.duplicates += 1;
        self.stats.stale += 1;
        Reaction::Duplicate
    }

    /// A full table of events makes room for a new one by dropping an
    /// event that is on no path of any policy (it changes nothing), so
    /// that one node's events off every path cannot lock out a failure on
    /// one. False when every event stands on some path.
    fn make_room<T>(policies: &[PolicySpec], v: &mut Vec<T>, place: impl Fn(&T) -> &Place) -> bool {
        let on_a_path = |at: &Place| policies.iter().any(|p| p.primary.iter().chain(p.backup.iter().flatten()).any(|l| Self::hits(l, at)));
        match v.iter().position(|x| !on_a_path(place(x))) {
            Some(i) => {
                v.swap_remove(i);
                true
            }
            None => false,
        }
    }

    /// React to a notification (already parsed and checksum-verified).
    pub fn on_notification(&mut self, code: u8, m: &MessageRepr) -> Reaction {
        if !self.known.contains(&m.originating_node) {
            self.stats.unknown_source += 1;
            return Reaction::Dropped;
        }
        let key = (m.originating_node, code, m.event_id, m.timestamp);
        if self.seen.contains(&key) {
            self.stats.duplicates += 1;
            return Reaction::Duplicate;
        }
        let (node, id) = (m.originating_node, m.event_id);
        // An event whose recovery came first (reordered on the way: a
        // short flap) is over: it must not stand with no recovery left to
        // end it. Its recovery was detected after it.
        if code != CODE_RECOVERY && self.seen.iter().any(|&(n, c, i, t)| (n, c, i) == (node, CODE_RECOVERY, id) && t >= m.timestamp) {
            self.stats.duplicates += 1;
            return Reaction::Duplicate;
        }
        if code != CODE_RECOVERY && !Self::known_type(m.event_type) {
            self.stats.unknown_event += 1;
            return Reaction::UnknownEvent;
        }
        let e = Self::place_of(m);
        if code == CODE_RECOVERY {
            // By the event's identifier (s.5.1.2); a recovery whose event
            // was never seen (sent before the node restarted, or before
            // this PE started) clears that type of event for the element.
            // One whose event was seen and has been replaced since (the
            // link failed again: a newer event stands) ends nothing.
            // The recovery names the type of event it clears (its
            // Sub-Type): it ends only an event of that type, so that
            // another event the node happened to give the same
            // identifier stands (a Sub-Type the draft does not define:
            // any type).
            let sub = m.event_subtype;
            let names = |t: u8| sub == t || !Self::known_type(sub);
            let (nf, nc) = (self.failed.len(), self.congested.len());
            self.failed.retain(|(_, n, i, _)| !(*n == node && *i == id && names(event::LINK_FAILURE)));
            self.congested.retain(|(_, t, _, n, i, _)| !(*n == node && *i == id && names(*t)));
            let known = self.seen.iter().any(|&(n, c, i, _)| (n, c, i) == (node, CODE_EVENT, id));
            if (nf, nc) == (self.failed.len(), self.congested.len()) && !known {
                // Only what was detected before the recovery: a newer
                // event of the element stands (the link failed again).
                let ts = m.timestamp;
                match sub {
                    event::LINK_FAILURE => self.failed.retain(|(x, _, _, t)| !(*x == e && *t <= ts)),
                    ty => self.congested.retain(|(x, y, _, _, _, t)| !(*x == e && *y == ty && *t <= ts)),
                }
            }
        } else {
            match m.event_type {
                event::LINK_FAILURE => {
                    // One failure per element: a new one (the node
                    // restarted and lost the old one's recovery) replaces;
                    // an older one arriving late (detected before the one
                    // that stands) does not.
                    if self.failed.iter().any(|(x, _, _, t)| *x == e && *t > m.timestamp) {
                        return self.stale(key);
                    }
                    self.failed.retain(|(x, _, _, _)| *x != e);
                    if self.failed.len() >= MAX_PE_EVENTS {
                        if !Self::make_room(&self.policies, &mut self.failed, |f| &f.0) {
                            self.stats.state_full += 1;
                            return Reaction::Full;
                        }
                        self.stats.evicted_off_path += 1;
                    }
                    self.failed.push((e, m.originating_node, m.event_id, m.timestamp));
                }
                event::CONGESTION | event::QUEUE_BUILDUP | event::MICROBURST | event::PERFORMANCE_DEGRADATION | event::SIGNAL_DEGRADATION => {
                    // A link with errors loses RoCEv2 packets (a
                    // go-back-N retransmission each): as severe
                    // congestion. Performance degradation (loss on the
                    // port): as mild.
                    let div = match (m.event_type, m.event_subtype) {
                        (event::CONGESTION, 3) | (event::SIGNAL_DEGRADATION, _) => 8,
                        (event::CONGESTION, 2) => 4,
                        _ => 2,
                    };
                    // A newer event of the same type for the same element
                    // (a congestion sub-type change) replaces the older;
                    // events of other types stand until their own
                    // recovery (a microburst does not end a congestion).
                    if self.congested.iter().any(|(x, ty, _, _, _, t)| *x == e && *ty == m.event_type && *t > m.timestamp) {
                        return self.stale(key);
                    }
                    self.congested.retain(|(x, t, _, _, _, _)| !(*x == e && *t == m.event_type));
                    if self.congested.len() >= MAX_PE_EVENTS {
                        if !Self::make_room(&self.policies, &mut self.congested, |c| &c.0) {
                            self.stats.state_full += 1;
                            return Reaction::Full;
                        }
                        self.stats.evicted_off_path += 1;
                    }
                    self.congested.push((e, m.event_type, div, m.originating_node, m.event_id, m.timestamp));
                }
                // Unknown types were turned away above.
                _ => {}
            }
        }
        if self.seen.len() == DEDUP {
            self.seen.pop_front();
        }
        self.seen.push_back(key);
        self.stats.accepted += 1;
        Reaction::Applied { changed: self.recompute() }
    }

    /// React to a Long-haul CNP sent by `node` (its IPv6 source): congestion
    /// of that node, scaled by the Congestion Level; Resume or level 0 clear
    /// it. A CNP that changes nothing (same divisor again, Resume when not
    /// congested) is a duplicate.
    pub fn on_cnp(&mut self, node: Ipv6Addr, info: &CnpInfo) -> Reaction {
        if !self.known.contains(&node) {
            self.stats.unknown_source += 1;
            return Reaction::Dropped;
        }
        let clear = info.action == Action::Resume || info.congestion_level == 0;
        let cur = self.cnp.iter().position(|(n, _, _)| *n == node);
        if clear {
            match cur {
                Some(i) => {
                    self.cnp_event = self.cnp.swap_remove(i).2;
                }
                None => {
                    self.stats.duplicates += 1;
                    return Reaction::Duplicate;
                }
            }
        } else {
            let div = cnp_divisor(info.congestion_level);
            // A new congestion, or a change of its severity, is a new
            // event (as a FANN node numbers a sub-type change); its end
            // repeats the identifier of the event it ends.
            let id = self.next_cnp_event;
            match cur {
                Some(i) if self.cnp[i].1 == div => {
                    self.stats.duplicates += 1;
                    return Reaction::Duplicate;
                }
                Some(i) => self.cnp[i] = (node, div, id),
                None => self.cnp.push((node, div, id)),
            }
            self.next_cnp_event = id.wrapping_add(1);
            self.cnp_event = id;
        }
        self.stats.accepted += 1;
        Reaction::Applied { changed: self.recompute() }
    }

    /// The Event Identifier of the congestion the last accepted Long-haul
    /// CNP began, made more or less severe (a new identifier each time), or
    /// ended (the identifier of the event it ends): what its copy to the
    /// controller carries, so that a receiver deduplicating by (node,
    /// Code, identifier) takes every change and can pair each end with
    /// its event.
    pub fn last_cnp_event(&self) -> u32 {
        self.cnp_event
    }

    /// The policies (in configuration order).
    pub fn policies(&self) -> &[PolicySpec] {
        &self.policies
    }

    fn recompute(&mut self) -> Vec<usize> {
        let mut changed = Vec::new();
        let now = self.now;
        let f = self.failover;
        let failed = |x: &PathSpec| self.failed.iter().any(|(e, _, _, _)| Self::hits(x, e));
        // The largest divisor of the congestion standing on a path (1: none).
        let divisor = |x: &PathSpec| {
            let div = self.congested.iter().filter(|(e, _, _, _, _, _)| Self::hits(x, e)).map(|(_, _, d, _, _, _)| *d).max().unwrap_or(1);
            let by_cnp = self.cnp.iter().filter(|(n, _, _)| Self::hits(x, &Place { element: Element { node: *n, port: None }, path: None })).map(|(_, d, _)| *d).max().unwrap_or(1);
            div.max(by_cnp)
        };
        let broken = |paths: &[PathSpec]| paths.iter().all(failed);
        // Some list neither failed nor congested.
        let healthy = |paths: &[PathSpec]| paths.iter().any(|x| !failed(x) && divisor(x) == 1);
        for (i, p) in self.policies.iter().enumerate() {
            let d = &mut self.damp[i];
            let primary_ok = healthy(&p.primary);
            if primary_ok {
                d.healthy_since.get_or_insert(now);
            } else {
                d.healthy_since = None;
            }
            // s.4.1: every primary list failed, a backup list up: at once.
            let by_failure = broken(&p.primary) && p.backup.as_ref().is_some_and(|b| !broken(b));
            // s.4.2: no primary list healthy, a backup list is.
            let by_congestion = f.on_congestion && p.backup.as_ref().is_some_and(|b| !primary_ok && healthy(b));
            let use_backup = if by_failure {
                true
            } else if by_congestion {
                if d.since.is_none() {
                    if !self.state[i].on_backup {
                        // A move soon after the last move back: a flap,
                        // damped.
                        d.hold = match d.last_back {
                            Some(b) if now.saturating_sub(b) < d.hold.saturating_mul(2) => {
                                self.stats.holddown_raised += 1;
                                d.hold.saturating_mul(2).min(f.holddown_max_ns.max(f.holddown_ns))
                            }
                            _ => f.holddown_ns,
                        };
                        self.stats.congestion_switches += 1;
                    }
                    // (Already on the backup for a failure that is gone:
                    // it stays for congestion, no move, the hold-down
                    // unchanged.)
                    d.since = Some(now);
                }
                true
            } else if let Some(since) = d.since.filter(|_| self.state[i].on_backup) {
                // On the backup because of congestion: back once the
                // primary has been healthy for the hold-down, and the
                // hold-down has passed since the move; at once when every
                // backup list has failed meanwhile (the primary is up).
                let backup_broken = p.backup.as_ref().is_some_and(|b| broken(b));
                let back = backup_broken || d.healthy_since.is_some_and(|h| now >= since.max(h).saturating_add(d.hold));
                if back {
                    d.since = None;
                    d.last_back = Some(now);
                }
                !back
            } else {
                d.since = None;
                false
            };
            let paths = if use_backup { p.backup.as_deref().unwrap_or(&p.primary) } else { &p.primary };
            let weights: Vec<u32> = paths.iter().map(|x| if failed(x) { 0 } else { (x.weight / divisor(x)).max(1) }).collect();
            // s.4.2: no path that is up is free of congestion: hold the
            // traffic to a share of its rate.
            let mildest = paths.iter().filter(|x| !failed(x)).map(divisor).min();
            let rate_permille = match mildest {
                Some(d) if d > 1 && f.reduce_rate => Some(rate_permille_for(d)),
                _ => None,
            };
            let new = PolicyState { on_backup: use_backup, weights, rate_permille };
            let old = &self.state[i];
            if *old != new {
                if new.on_backup && !old.on_backup {
                    self.stats.switched_to_backup += 1;
                } else if !new.on_backup && old.on_backup {
                    self.stats.restored += 1;
                } else if new.weights != old.weights {
                    self.stats.reweighted += 1;
                }
                match (old.rate_permille, new.rate_permille) {
                    (None, Some(_)) => self.stats.rate_reduced += 1,
                    (Some(_), None) => self.stats.rate_restored += 1,
                    _ => {}
                }
                changed.push(i);
            }
            self.state[i] = new;
        }
        changed
    }
}

/// Weight divisor for a Long-haul CNP's Congestion Level (0..255).
fn cnp_divisor(level: u8) -> u32 {
    match level {
        0..=127 => 2,
        128..=191 => 4,
        _ => 8,
    }
}

// ------------------------------------------------------- wiring (control)

/// A notification addressed to the ingress PE, validated by the worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeNote {
    /// FANN (ICMPv6 with its Code, or UDP where a Recovery event type means
    /// Code 1).
    Fann { code: u8, msg: MessageRepr },
    /// Long-haul CNP from `from` (ICMPv6; or the RoCEv2 format, E set,
    /// decapsulated by END.C / END.E).
    Cnp { from: Ipv6Addr, info: CnpInfo },
}

impl PeNote {
    /// The node the notification is about / from.
    pub fn originating_node(&self) -> Ipv6Addr {
        match self {
            PeNote::Fann { msg, .. } => msg.originating_node,
            PeNote::Cnp { from, .. } => *from,
        }
    }

    /// An ICMPv6 message (exactly the message, checksum already verified)
    /// from `src`: FANN or Long-haul CNP; None when malformed or neither.
    pub fn from_icmpv6(m: &[u8], src: Ipv6Addr, params: &Params) -> Option<PeNote> {
        let t = *m.first()?;
        if t == params.icmpv6_fann_type {
            let pk = Packet::new_checked(m).ok()?;
            let code = pk.msg_code();
            if code != CODE_EVENT && code != CODE_RECOVERY {
                return None;
            }
            let msg = MessageRepr::parse(&pk.message()).ok()?;
            Some(Self::recovery_form(code, msg))
        } else if t == params.icmpv6_lhcnp_type {
            // Code 0, flow-level, is the only one defined (s.6.1, s.10.2).
            if m.get(1) != Some(&0) {
                return None;
            }
            let c = Icmpv6LhCnp::new_checked(m).ok()?;
            let info = CnpInfo::parse(&c.body()).ok()?;
            Some(PeNote::Cnp { from: src, info })
        } else {
            None
        }
    }

    /// A recovery in one form (s.5.1.2 says it twice: Code 1, and Event
    /// Type 0x07 "Recovery (condition cleared)"): Code 1, Event Type 0x07,
    /// the cleared condition's type as the sub-type, as this node sends
    /// it. A peer's Code 1 with the cleared condition's own Event Type, or
    /// Event Type 0x07 with Code 0, is read as that recovery, so it never
    /// clears the wrong kind of event.
    fn recovery_form(code: u8, msg: MessageRepr) -> PeNote {
        match (code, msg.event_type) {
            (CODE_RECOVERY, RECOVERY) => PeNote::Fann { code, msg },
            (CODE_RECOVERY, t) => PeNote::Fann { code, msg: MessageRepr { event_type: RECOVERY, event_subtype: t, ..msg } },
            (_, RECOVERY) => PeNote::Fann { code: CODE_RECOVERY, msg },
            _ => PeNote::Fann { code, msg },
        }
    }

    /// The payload of a FANN UDP datagram (s.5.2; exactly the message).
    pub fn from_udp_payload(b: &[u8], _src: Ipv6Addr) -> Option<PeNote> {
        let msg = MessageRepr::parse(&Message::new_checked(b).ok()?).ok()?;
        let code = if msg.event_type == RECOVERY { CODE_RECOVERY } else { CODE_EVENT };
        Some(PeNote::Fann { code, msg })
    }

    /// The FANN message re-originated for the controller (see the module
    /// documentation): (Code, message). A Long-haul CNP carries no time
    /// and no event identifier: its message gets `detected_us`
    /// (microseconds since the Unix epoch, when the PE received it) and
    /// `cnp_event` ([`IngressPe::last_cnp_event`]); a FANN message keeps
    /// its own.
    pub fn as_fann(&self, hop_limit: u8, detected_us: u64, cnp_event: u32) -> (u8, MessageRepr) {
        match self {
            // Re-originated: a fresh Hop Limit, not what is left of the
            // received one.
            PeNote::Fann { code, msg } => (*code, MessageRepr { hop_limit, ..*msg }),
            PeNote::Cnp { from, info } => {
                let resume = info.action == Action::Resume || info.congestion_level == 0;
                let sub = match info.congestion_level {
                    0..=127 => event::CONGESTION_MILD,
                    128..=191 => event::CONGESTION_MODERATE,
                    _ => event::CONGESTION_SEVERE,
                };
                let (code, ty, st) = if resume { (CODE_RECOVERY, RECOVERY, event::CONGESTION) } else { (CODE_EVENT, event::CONGESTION, sub) };
                let md = Metadata { queue_occupancy: (info.metric_type == crate::wire::lhcnp::MetricType::QueueDepthKb).then_some(info.metric_value.saturating_mul(1000)), ..Default::default() };
                (code, MessageRepr { hop_limit, event_type: ty, event_subtype: st, event_id: cnp_event, timestamp: detected_us, originating_node: *from, metadata: md })
            }
        }
    }
}

/// Ingress PE configuration for [`PeControl`]: which policy of the SID
/// table (index, in configuration order) each [`PolicySpec`] describes.
#[derive(Debug, Clone, PartialEq)]
pub struct PeConfig {
    pub policies: Vec<(u32, PolicySpec)>,
    pub known_nodes: Vec<Ipv6Addr>,
    /// Interfaces (indices) notifications may arrive on; None: any.
    pub interfaces: Option<Vec<u16>>,
    /// Where copies of accepted notifications go.
    pub controller: Option<Ipv6Addr>,
    /// Source address of the copies (this node).
    pub source: Ipv6Addr,
    /// This node's IPv4 address: the source of the notifications to IPv4
    /// senders (FANN over UDP, s.5.2). None: IPv4 senders are not told.
    pub source_v4: Option<std::net::Ipv4Addr>,
    /// FANN Hop Limit of the copies (re-originated here).
    pub hop_limit: u8,
    /// Copies to the controller: at most this many per second, bursts of
    /// `copy_burst` (RFC 4443 s.2.4 (f), as FANN draft s.6 wants for every
    /// ICMPv6 message carrying FANN information).
    pub copy_max_pps: u32,
    pub copy_burst: u32,
    /// s.4.1 / s.4.2: "Ingress PE should send a corresponding notification
    /// to the sender": a FANN event that names a flow (Flow ID) is also
    /// re-originated to the flow's source, and its recovery after it (same
    /// rate limit as the controller copies): ICMPv6 to an IPv6 sender, UDP
    /// over IPv4 (s.5.2) from `source_v4` to an IPv4 one.
    pub notify_senders: bool,
    /// Events taken from each known node: at most this many per second,
    /// in bursts of `node_burst`; beyond, dropped (`fann-rx-rate-limited`),
    /// so that one node (misbehaving, or its address forged) cannot keep
    /// the PE rebuilding and pushing its policies. Recoveries and CNP
    /// Resumes always pass: dropping one would leave its event standing.
    pub node_max_pps: u32,
    pub node_burst: u32,
    /// Moving policies to their backups on congestion, damped.
    pub failover: Failover,
}

/// Events whose senders were told, remembered for their recoveries.
const SENDER_MEMORY: usize = 1024;

/// An event a sender was told of: its originating node, Event Identifier,
/// element port and type, and the sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ToldSender {
    node: Ipv6Addr,
    id: u32,
    port: Option<u32>,
    event_type: u8,
    sender: Ipv6Addr,
}

/// What the control thread must do after a notification.
#[derive(Debug, Clone)]
pub struct PeOutcome {
    pub reaction: Reaction,
    /// A new snapshot for every worker, when a policy changed.
    pub table: Option<Arc<SidTable>>,
    /// The IPv6 packet to the controller (inject it).
    pub copy: Option<Vec<u8>>,
    /// The IPv6 packets to the senders of the flows the event names, or
    /// of the events a recovery ends (inject them).
    pub senders: Vec<Vec<u8>>,
}

/// Factor applied to configured path weights inside [`PeControl`].
pub const WEIGHT_SCALE: u32 = 64;

/// The control thread's ingress PE: [`IngressPe`] plus the SID table it
/// rewrites. Single writer of the SR policies.
pub struct PeControl {
    pub pe: IngressPe,
    cfg: PeConfig,
    table: SidTable,
    params: Params,
    copy_bucket: TokenBucket,
    sender_bucket: TokenBucket,
    /// Per known node: the rate limit of its events (`node_max_pps`).
    node_buckets: Vec<(Ipv6Addr, TokenBucket)>,
    /// Events a sender was told of, oldest first.
    told_senders: std::collections::VecDeque<ToldSender>,
    /// Recoveries for senders the rate limit holds back (s.6: every ICMPv6
    /// FANN message is rate-limited, RFC 4443 s.2.4 (f)): delayed, sent
    /// oldest first ahead of new events as tokens come.
    pending_recoveries: std::collections::VecDeque<Vec<u8>>,
    epoch: std::time::Instant,
    /// `pe.stats` (congestion switches, hold-downs raised) already counted.
    counted: (u64, u64),
}

impl PeControl {
    /// `table`: the node's SID table with the policies as configured (the
    /// primaries). Errors name the policy that does not fit.
    pub fn new(mut table: SidTable, cfg: PeConfig) -> Result<PeControl, String> {
        for (i, spec) in &cfg.policies {
            let pol = table.policy(*i).ok_or_else(|| format!("ingress PE policy {:?}: no SR policy {i}", spec.name))?;
            if pol.lists().len() != spec.primary.len() {
                return Err(format!("ingress PE policy {:?}: {} SID lists but {} path descriptions", spec.name, pol.lists().len(), spec.primary.len()));
            }
            // The backup lists must build as a policy of the same mode.
            if let Some(b) = &spec.backup {
                SrPolicy::new(pol.source, pol.mode, b.iter().map(|p| (p.segments.clone(), p.weight.max(1))).collect())
                    .and_then(|p| p.with_extras(pol.extras().clone()))
                    .map_err(|e| format!("ingress PE policy {:?} backup: {e}", spec.name))?;
            }
        }
        table.pe_known = Some(cfg.known_nodes.clone());
        table.pe_ifaces = cfg.interfaces.clone();
        table.pe_rate_window_ns = cfg.failover.rate_window_ns;
        let params = table.params;
        // Weights are relative: scale them so that dividing by 2 / 4 / 8
        // still means something for small configured weights (1 = equal).
        let scaled = cfg
            .policies
            .iter()
            .map(|(_, p)| {
                let sc = |v: &[PathSpec]| v.iter().map(|x| PathSpec { weight: x.weight.max(1).saturating_mul(WEIGHT_SCALE), ..x.clone() }).collect::<Vec<_>>();
                PolicySpec { name: p.name.clone(), primary: sc(&p.primary), backup: p.backup.as_deref().map(sc) }
            })
            .collect();
        let pe = IngressPe::with_failover(scaled, cfg.known_nodes.clone(), cfg.failover);
        let copy_bucket = TokenBucket::new(cfg.copy_max_pps, cfg.copy_burst);
        let sender_bucket = TokenBucket::new(cfg.copy_max_pps, cfg.copy_burst);
        let node_buckets = cfg.known_nodes.iter().map(|&n| (n, TokenBucket::new(cfg.node_max_pps, cfg.node_burst))).collect();
        Ok(PeControl { pe, cfg, table, params, copy_bucket, sender_bucket, node_buckets, told_senders: std::collections::VecDeque::new(), pending_recoveries: std::collections::VecDeque::new(), epoch: std::time::Instant::now(), counted: (0, 0) })
    }

    /// The snapshot to install in the workers at start.
    pub fn table(&self) -> Arc<SidTable> {
        Arc::new(self.table.clone())
    }

    /// Take over a SID table changed elsewhere (management commands), so
    /// the next policy rebuild starts from it; the PE's known-node set
    /// stays.
    pub fn sync(&mut self, t: &SidTable) {
        let known = self.table.pe_known.take();
        let ifaces = self.table.pe_ifaces.take();
        self.table = t.clone();
        self.table.pe_known = known;
        self.table.pe_ifaces = ifaces;
    }

    /// React to a notification; counts into `counters` (the control
    /// thread's own counters: accepted, duplicates, switches, copies).
    pub fn on_note(&mut self, note: &PeNote, counters: &WorkerCounters) -> PeOutcome {
        let now = self.epoch.elapsed().as_nanos() as u64;
        self.on_note_at(note, now, counters)
    }

    /// [`on_note`](Self::on_note) at `now` (ns since the PE started).
    pub fn on_note_at(&mut self, note: &PeNote, now: u64, counters: &WorkerCounters) -> PeOutcome {
        // A hold-down that ran out by now takes effect first.
        let due_table = self.poll_failover_at(now, counters);
        // An event (not a recovery, not a Resume) from a known node takes
        // a token of that node's rate limit.
        let (node, event) = match note {
            PeNote::Fann { code, msg } => (msg.originating_node, *code != CODE_RECOVERY),
            // A CNP of Congestion Level 0 ("no congestion", draft-tian
            // s.6.1) ends a congestion as a Resume does.
            PeNote::Cnp { from, info } => (*from, info.action != Action::Resume && info.congestion_level != 0),
        };
        let limited = event && self.node_buckets.iter_mut().find(|(n, _)| *n == node).is_some_and(|(_, b)| !b.take(now));
        let prev = self.states();
        let evicted = self.pe.stats.evicted_off_path;
        let reaction = match note {
            _ if limited => {
                self.pe.stats.rate_limited += 1;
                Reaction::RateLimited
            }
            PeNote::Fann { code, msg } => self.pe.on_notification(*code, msg),
            PeNote::Cnp { from, info } => self.pe.on_cnp(*from, info),
        };
        if self.pe.stats.evicted_off_path > evicted {
            counters.local(Local::PeEventEvicted);
        }
        let taken = match &reaction {
            Reaction::Applied { changed } => Ok(changed.clone()),
            Reaction::Dropped => Err(Drop::FannUnknownSource),
            Reaction::Duplicate => Err(Drop::FannDuplicate),
            Reaction::Full => Err(Drop::FannStateFull),
            Reaction::UnknownEvent => Err(Drop::FannUnknownEvent),
            Reaction::RateLimited => Err(Drop::FannRxRateLimited),
        };
        let changed = match taken {
            Ok(changed) => changed,
            Err(why) => {
                counters.dropped(why);
                return PeOutcome { reaction, table: due_table, copy: None, senders: Vec::new() };
            }
        };
        counters.local(Local::PeNotification);
        self.apply_changed(&changed, &prev, counters);
        let table = (!changed.is_empty()).then(|| Arc::new(self.table.clone())).or(due_table);
        let copy = match self.cfg.controller {
            Some(c) if self.copy_bucket.take(now) => {
                counters.local(Local::PeControllerCopy);
                Some(self.controller_packet(note, c))
            }
            Some(_) => {
                counters.local(Local::PeControllerCopyRateLimited);
                None
            }
            None => None,
        };
        let senders = self.sender_packets(note, now, counters);
        PeOutcome { reaction, table, copy, senders }
    }

    /// The notifications for the sender of the flow an accepted FANN event
    /// names (its Flow ID's source), or for the senders told of the events
    /// a recovery ends: the event it names, and the events of the same type
    /// and element it replaced (a congestion whose sub-type changed may
    /// have named another flow). Events are rate-limited with the
    /// controller copies (a token each, refused ones counted); a recovery
    /// to a sender that was told waits for its token instead (at most one
    /// per event told), so it is never lost to the limit, and goes before
    /// newer events.
    fn sender_packets(&mut self, note: &PeNote, now: u64, counters: &WorkerCounters) -> Vec<Vec<u8>> {
        let PeNote::Fann { code, msg } = note else { return Vec::new() };
        if !self.cfg.notify_senders {
            return Vec::new();
        }
        let mut out = self.due_recoveries(now, counters);
        let port = IngressPe::place_of(msg).element.port;
        if *code == CODE_RECOVERY {
            // Each sender gets the recovery of the event it was told of
            // (its identifier), as a sender matches recoveries by it.
            let ends = |t: &ToldSender| t.node == msg.originating_node && (t.id == msg.event_id || (t.port == port && t.event_type == msg.event_subtype));
            let mut to: Vec<(Ipv6Addr, u32)> = self.told_senders.iter().filter(|t| ends(t)).map(|t| (t.sender, t.id)).collect();
            self.told_senders.retain(|t| !ends(t));
            to.sort();
            to.dedup();
            let (code, m) = note.as_fann(self.cfg.hop_limit, unix_ns() / 1000, 0);
            for (s, id) in to {
                if self.pending_recoveries.len() == SENDER_MEMORY {
                    // Not reachable while each waiting recovery stands for
                    // one event told (at most SENDER_MEMORY); a bound all
                    // the same.
                    self.pending_recoveries.pop_front();
                    counters.local(Local::PeSenderCopyRateLimited);
                }
                self.pending_recoveries.push_back(self.sender_packet(code, &MessageRepr { event_id: id, ..m }, s));
            }
            out.extend(self.due_recoveries(now, counters));
            return out;
        }
        let Some(src) = msg.metadata.flow_id.map(|f| f.src) else { return out };
        if src.is_unspecified() || src.is_multicast() {
            return out;
        }
        // An IPv4 sender (its Flow ID IPv4-mapped) is told over UDP from
        // this node's IPv4 address, when it has one.
        if let Some(v4) = src.to_ipv4_mapped() {
            if self.cfg.source_v4.is_none() || v4.is_unspecified() || v4.is_multicast() || v4.is_broadcast() {
                counters.local(Local::PeSenderNoIpv4Source);
                return out;
            }
        }
        if !self.pending_recoveries.is_empty() || !self.sender_bucket.take(now) {
            counters.local(Local::PeSenderCopyRateLimited);
            return out;
        }
        if self.told_senders.len() == SENDER_MEMORY {
            self.told_senders.pop_front();
        }
        self.told_senders.push_back(ToldSender { node: msg.originating_node, id: msg.event_id, port, event_type: msg.event_type, sender: src });
        counters.local(Local::PeSenderCopy);
        let (code, m) = self.fann_of(note);
        out.push(self.sender_packet(code, &m, src));
        out
    }

    /// A FANN message to a sender: ICMPv6 from `source`, or to an IPv4
    /// sender (IPv4-mapped `to`) UDP over IPv4 from `source_v4` (the UDP
    /// variant has no Code: a recovery says so by its Event Type).
    fn sender_packet(&self, code: u8, m: &MessageRepr, to: Ipv6Addr) -> Vec<u8> {
        match (to.to_ipv4_mapped(), self.cfg.source_v4) {
            (Some(dst), Some(src)) => {
                // Code 1 with the cleared condition's own Event Type (a
                // form a PE reads) would read as an event over UDP.
                let m = if code == CODE_RECOVERY && m.event_type != event::RECOVERY { MessageRepr { event_type: event::RECOVERY, event_subtype: m.event_type, ..*m } } else { *m };
                notification_packet_v4(&m, src, dst, &self.params)
            }
            _ => notification_packet(code, m, &self.cfg.source, &to, &self.params, false),
        }
    }

    /// The waiting recoveries the rate limit lets go at `now` (ns since the
    /// PE started), oldest first.
    fn due_recoveries(&mut self, now: u64, counters: &WorkerCounters) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        while !self.pending_recoveries.is_empty() && self.sender_bucket.take(now) {
            out.extend(self.pending_recoveries.pop_front());
            counters.local(Local::PeSenderCopy);
        }
        out
    }

    /// Which policies are on their backup lists now.
    fn states(&self) -> Vec<Option<PolicyState>> {
        (0..self.cfg.policies.len()).map(|i| self.pe.state(i).cloned()).collect()
    }

    /// Rebuild the `changed` policies and count how each changed (`prev`:
    /// which were on their backup before).
    fn apply_changed(&mut self, changed: &[usize], prev: &[Option<PolicyState>], counters: &WorkerCounters) {
        // The PE's own tallies of congestion moves, as counters.
        let st = self.pe.stats;
        counters.local_n(Local::PeCongestionFailover, st.congestion_switches - self.counted.0);
        counters.local_n(Local::PeHolddownRaised, st.holddown_raised - self.counted.1);
        self.counted = (st.congestion_switches, st.holddown_raised);
        for &i in changed {
            self.rebuild(i);
            let (Some(Some(old)), Some(new)) = (prev.get(i), self.pe.state(i)) else { continue };
            match (old.on_backup, new.on_backup) {
                (false, true) => counters.local(Local::PeSwitchedToBackup),
                (true, false) => counters.local(Local::PeRestored),
                _ if old.weights != new.weights => counters.local(Local::PeReweighted),
                _ => {}
            }
            match (old.rate_permille, new.rate_permille) {
                (None, Some(_)) => counters.local(Local::PeRateReduced),
                (Some(_), None) => counters.local(Local::PeRateRestored),
                _ => {}
            }
        }
    }

    /// Policies on their backup because of congestion whose hold-down ran
    /// out go back to their primaries ([`Failover`]): the new snapshot for
    /// the workers, if any moved. The control thread calls this every
    /// loop (cheap while no hold-down runs).
    pub fn poll_failover(&mut self, counters: &WorkerCounters) -> Option<Arc<SidTable>> {
        self.pe.next_deadline()?;
        let now = self.epoch.elapsed().as_nanos() as u64;
        self.poll_failover_at(now, counters)
    }

    /// [`poll_failover`](Self::poll_failover) at `now` (ns since the PE
    /// started).
    pub fn poll_failover_at(&mut self, now: u64, counters: &WorkerCounters) -> Option<Arc<SidTable>> {
        let prev = self.states();
        let changed = self.pe.advance(now);
        if changed.is_empty() {
            return None;
        }
        self.apply_changed(&changed, &prev, counters);
        Some(Arc::new(self.table.clone()))
    }

    /// The operator's `fann clear` at `now` (ns since the PE started):
    /// see [`IngressPe::clear`]. How many were cleared, and the new
    /// snapshot for the workers when a policy moved.
    pub fn clear_at(&mut self, node: Option<Ipv6Addr>, now: u64, counters: &WorkerCounters) -> (usize, Option<Arc<SidTable>>) {
        let due = self.poll_failover_at(now, counters);
        let prev = self.states();
        let (n, changed) = self.pe.clear(node);
        if changed.is_empty() {
            return (n, due);
        }
        self.apply_changed(&changed, &prev, counters);
        (n, Some(Arc::new(self.table.clone())))
    }

    /// [`clear_at`](Self::clear_at) now.
    pub fn clear(&mut self, node: Option<Ipv6Addr>, counters: &WorkerCounters) -> (usize, Option<Arc<SidTable>>) {
        let now = self.epoch.elapsed().as_nanos() as u64;
        self.clear_at(node, now, counters)
    }

    /// Recoveries for senders that waited for the rate limit and may go
    /// now; the control thread calls this every loop.
    pub fn poll_senders(&mut self, counters: &WorkerCounters) -> Vec<Vec<u8>> {
        if self.pending_recoveries.is_empty() {
            return Vec::new();
        }
        let now = self.epoch.elapsed().as_nanos() as u64;
        self.due_recoveries(now, counters)
    }

    /// [`poll_senders`](Self::poll_senders) at a given time (tests).
    pub fn poll_senders_at(&mut self, now: u64, counters: &WorkerCounters) -> Vec<Vec<u8>> {
        self.due_recoveries(now, counters)
    }

    /// Recoveries waiting for the rate limit.
    pub fn recoveries_waiting(&self) -> usize {
        self.pending_recoveries.len()
    }

    /// Rebuild policy `i` from its state: the active paths with their
    /// effective weights; paths at weight 0 are left out (all at 0: the
    /// active paths at their configured weights, nothing better exists).
    fn rebuild(&mut self, i: usize) {
        let idx = &self.cfg.policies[i].0;
        let Some(spec) = self.pe.policies().get(i) else { return };
        let Some(st) = self.pe.state(i) else { return };
        let Some(old) = self.table.policy(*idx) else { return };
        let paths: &[PathSpec] = if st.on_backup { spec.backup.as_deref().unwrap_or(&spec.primary) } else { &spec.primary };
        let mut lists: Vec<(Vec<Ipv6Addr>, u32)> = paths.iter().zip(&st.weights).filter(|(_, w)| **w > 0).map(|(p, w)| (p.segments.clone(), *w)).collect();
        if lists.is_empty() {
            lists = paths.iter().map(|p| (p.segments.clone(), p.weight.max(1))).collect();
        }
        if let Ok(mut p) = SrPolicy::new(old.source, old.mode, lists).and_then(|p| p.with_extras(old.extras().clone())) {
            p.rate_permille = st.rate_permille;
            self.table.set_policy(*idx, p);
        }
    }

    /// The copy for the controller: an IPv6 packet carrying an ICMPv6 FANN
    /// (a CNP's copy timestamped now, by the system clock).
    pub fn controller_packet(&self, note: &PeNote, to: Ipv6Addr) -> Vec<u8> {
        let (code, message) = self.fann_of(note);
        notification_packet(code, &message, &self.cfg.source, &to, &self.params, false)
    }

    /// The FANN message (and Code) this node re-originates for `note`.
    fn fann_of(&self, note: &PeNote) -> (u8, MessageRepr) {
        note.as_fann(self.cfg.hop_limit, unix_ns() / 1000, self.pe.last_cnp_event())
    }
}

/// An IPv4 packet (TOS CS6, network control; TTL 64; DF) from `src` to
/// `dst` carrying a FANN message over UDP from and to
/// `params.fann_udp_port` (s.5.2), checksums filled.
pub fn notification_packet_v4(m: &MessageRepr, src: std::net::Ipv4Addr, dst: std::net::Ipv4Addr, params: &Params) -> Vec<u8> {
    let msg = m.to_bytes();
    let ulen = 8 + msg.len();
    let mut v = Vec::with_capacity(20 + ulen);
    v.extend_from_slice(&[0x45, 0xc0]);
    v.extend_from_slice(&((20 + ulen) as u16).to_be_bytes());
    v.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0]);
    v.extend_from_slice(&src.octets());
    v.extend_from_slice(&dst.octets());
    let c = !checksum::fold(checksum::sum(&v[..20]));
    v[10..12].copy_from_slice(&c.to_be_bytes());
    v.extend_from_slice(&params.fann_udp_port.to_be_bytes());
    v.extend_from_slice(&params.fann_udp_port.to_be_bytes());
    v.extend_from_slice(&(ulen as u16).to_be_bytes());
    v.extend_from_slice(&[0, 0]);
    v.extend_from_slice(&msg);
    let s = checksum::combine(checksum::pseudo_v4(&src.octets(), &dst.octets(), 17, ulen as u16), checksum::sum(&v[20..]));
    let c = !checksum::fold(s);
    v[26..28].copy_from_slice(&(if c == 0 { 0xffff } else { c }).to_be_bytes());
    v
}

/// An IPv6 packet (traffic class CS6, network control; Hop Limit 64) from
/// `src` to `dst` carrying a FANN message: ICMPv6 with `code` (s.5.1), or
/// UDP from and to `params.fann_udp_port` (s.5.2), checksums filled.
pub fn notification_packet(code: u8, m: &MessageRepr, src: &Ipv6Addr, dst: &Ipv6Addr, params: &Params, udp: bool) -> Vec<u8> {
    let (nh, body) = if udp {
        let msg = m.to_bytes();
        let mut u = Vec::with_capacity(8 + msg.len());
        u.extend_from_slice(&params.fann_udp_port.to_be_bytes());
        u.extend_from_slice(&params.fann_udp_port.to_be_bytes());
        u.extend_from_slice(&((8 + msg.len()) as u16).to_be_bytes());
        u.extend_from_slice(&[0, 0]);
        u.extend_from_slice(&msg);
        let s = checksum::combine(checksum::pseudo_v6(&src.octets(), &dst.octets(), 17, u.len() as u32), checksum::sum(&u));
        let c = !checksum::fold(s);
        u[6..8].copy_from_slice(&(if c == 0 { 0xffff } else { c }).to_be_bytes());
        (17u8, u)
    } else {
        let p = PacketRepr { msg_type: params.icmpv6_fann_type, code, message: *m };
        (58u8, p.to_bytes(src, dst))
    };
    let mut v = Vec::with_capacity(40 + body.len());
    // Version 6, traffic class 0xc0 (CS6: DSCP 48), flow label 0.
    v.extend_from_slice(&[0x6c, 0x00, 0, 0]);
    v.extend_from_slice(&(body.len() as u16).to_be_bytes());
    v.push(nh);
    v.push(64);
    v.extend_from_slice(&src.octets());
    v.extend_from_slice(&dst.octets());
    v.extend_from_slice(&body);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn det() -> Detector {
        Detector::new(DetectorConfig { node: "fc00::1".parse().unwrap(), link_bps: 8_000_000_000, queue_buildup_bytes: 1_000_000, microburst_bytes: 100_000, ..Default::default() }, 8, 100)
    }

    #[test]
    fn link_down_and_up() {
        let mut d = det();
        let mut out = Vec::new();
        d.on_link(false, 5 * MS, &mut out);
        d.on_link(false, 6 * MS, &mut out);
        assert_eq!(out.len(), 1, "one event per condition");
        let m = &out[0].message;
        assert_eq!((out[0].code, m.event_type, m.event_id), (CODE_EVENT, event::LINK_FAILURE, 100));
        assert_eq!(m.metadata.link_down, Some(true));
        assert_eq!(m.metadata.egress_port_id, Some(8));
        assert_eq!(m.originating_node, "fc00::1".parse::<Ipv6Addr>().unwrap());
        d.on_link(true, 7 * MS, &mut out);
        let r = &out[1];
        assert_eq!((r.code, r.message.event_type, r.message.event_subtype, r.message.event_id), (CODE_RECOVERY, RECOVERY, event::LINK_FAILURE, 100));
    }

    #[test]
    fn timestamps_are_unix_microseconds() {
        // The caller's clock read 0 at 2026-01-01T00:00:00Z.
        let epoch_ns = 1_767_225_600_000_000_000;
        let mut d = Detector::new(DetectorConfig { node: "fc00::1".parse().unwrap(), epoch_ns, ..Default::default() }, 3, 1);
        let mut out = Vec::new();
        d.on_link(false, 5 * MS + 999, &mut out);
        let m = &out[0].message;
        assert_eq!(m.timestamp, 1_767_225_600_005_000, "s.5.1.2: microseconds since the Unix epoch");
        assert_eq!(m.metadata.egress_timestamp, Some(1_767_225_600_005_000));
        d.on_link(true, 9 * MS, &mut out);
        assert_eq!(out[1].message.timestamp, 1_767_225_600_009_000);
    }

    #[test]
    fn utilisation_subtypes_and_recovery() {
        let mut d = det();
        let mut out = Vec::new();
        // 8 Gb/s link: 1 ms = 1 MB at 100 %.
        d.on_tx(0, 0, None, 0, &mut out);
        d.on_tx(600_000, 0, None, MS, &mut out); // 60 %
        assert_eq!(out.last().map(|n| (n.message.event_type, n.message.event_subtype)), Some((event::CONGESTION, 1)));
        assert_eq!(out.last().unwrap().message.metadata.egress_tx_utilization, Some(60));
        d.on_tx(650_000, 0, None, 2 * MS, &mut out); // still mild: no new event
        assert_eq!(out.len(), 1);
        d.on_tx(950_000, 0, None, 3 * MS, &mut out); // 95 %: severe, new id
        assert_eq!(out[1].message.event_subtype, 3);
        assert_ne!(out[1].message.event_id, out[0].message.event_id);
        d.on_tx(850_000, 0, None, 4 * MS, &mut out); // 85 %: no flapping down to moderate
        assert_eq!(out.len(), 2);
        d.on_tx(100_000, 0, None, 5 * MS, &mut out); // 10 %: recovery
        assert_eq!(out[2].code, CODE_RECOVERY);
        assert_eq!(out[2].message.event_id, out[1].message.event_id);
        // Stepping down goes to the sub-type whose hold range the
        // utilisation is in: severe at 65 % is moderate (held to 60 %), at
        // 45 % mild (held to 40 %); it clears under 40 % (it was a recovery
        // from anywhere under the current sub-type's hold).
        let mut steps = Vec::new();
        for (i, pct) in [95u64, 65, 95, 45, 45, 39].into_iter().enumerate() {
            out.clear();
            d.on_tx(pct * 10_000, 0, None, (6 + i as u64) * MS, &mut out);
            steps.push(out.iter().map(|n| (n.code, n.message.event_subtype)).collect::<Vec<_>>());
        }
        assert_eq!(steps, vec![vec![(CODE_EVENT, 3)], vec![(CODE_EVENT, 2)], vec![(CODE_EVENT, 3)], vec![(CODE_EVENT, 1)], vec![], vec![(CODE_RECOVERY, event::CONGESTION)]]);
    }

    #[test]
    fn queue_buildup_hysteresis_and_microburst() {
        let mut d = det();
        let mut out = Vec::new();
        d.on_tx(0, 0, None, 0, &mut out);
        d.on_tx(0, 150_000, None, 10_000, &mut out); // +150 KB in 10 us: microburst
        assert_eq!(out[0].message.event_type, event::MICROBURST);
        assert_eq!(out[0].message.metadata.microburst, Some(true));
        d.on_tx(0, 1_200_000, None, 50_000, &mut out);
        assert!(out.iter().any(|n| n.message.event_type == event::QUEUE_BUILDUP));
        let before = out.len();
        d.on_tx(0, 700_000, None, 2 * MS, &mut out); // above half: still built up
        assert!(!out[before..].iter().any(|n| n.message.event_subtype == event::QUEUE_BUILDUP));
        d.on_tx(0, 400_000, None, 3 * MS, &mut out);
        assert!(out.iter().any(|n| n.code == CODE_RECOVERY && n.message.event_subtype == event::QUEUE_BUILDUP));
        assert!(out.iter().any(|n| n.code == CODE_RECOVERY && n.message.event_subtype == event::MICROBURST));
    }

    /// Event types 0x05 (Signal degradation / link errors) and 0x03
    /// (Performance degradation) from the NIC's error and loss counters,
    /// per window of at least 100 ms, with their counts as metadata
    /// (s.5.1.3 bits 10 and 5), and their recoveries.
    #[test]
    fn link_errors_and_losses_make_degradation_events() {
        let cfg = DetectorConfig { node: "fc00::1".parse().unwrap(), ..DetectorConfig::default() };
        assert_eq!((cfg.link_errors_per_s, cfg.packet_loss_per_s), (10, 100));
        let mut d = Detector::new(cfg, 7, 100);
        let mut out = Vec::new();
        const W: u64 = RATE_WINDOW_NS;
        d.on_errors(5, 0, W / 2, &mut out);
        assert!(out.is_empty(), "the window is not over");
        d.on_errors(0, 0, W, &mut out);
        assert_eq!(out.len(), 1, "5 errors in 100 ms: 50/s >= 10/s");
        let m = out[0].message;
        assert_eq!((out[0].code, m.event_type, m.event_subtype, m.event_id), (CODE_EVENT, event::SIGNAL_DEGRADATION, 0, 100));
        assert_eq!((m.metadata.signal_degradation, m.metadata.egress_port_id, m.metadata.packet_loss), (Some(5), Some(7), None));
        out.clear();
        // Errors go on: no second event; a clean window: the recovery.
        d.on_errors(3, 0, 2 * W, &mut out);
        assert!(out.is_empty());
        d.on_errors(0, 0, 3 * W, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].code, out[0].message.event_type, out[0].message.event_subtype, out[0].message.event_id), (CODE_RECOVERY, RECOVERY, event::SIGNAL_DEGRADATION, 100));
        out.clear();
        // Losses: 9 in a window is 90/s, under 100/s; 20 is 200/s.
        d.on_errors(0, 9, 4 * W, &mut out);
        assert!(out.is_empty());
        d.on_errors(0, 20, 5 * W, &mut out);
        assert_eq!(out.len(), 1);
        let m = out[0].message;
        assert_eq!((m.event_type, m.metadata.packet_loss, m.metadata.signal_degradation), (event::PERFORMANCE_DEGRADATION, Some(20), None));
        out.clear();
        // 6 in a window (60/s) is not under half the rate: it stands; 4 is.
        d.on_errors(0, 6, 6 * W, &mut out);
        assert!(out.is_empty());
        d.on_errors(0, 4, 7 * W, &mut out);
        assert_eq!((out[0].code, out[0].message.event_subtype), (CODE_RECOVERY, event::PERFORMANCE_DEGRADATION));
        // Off at 0.
        let mut off = Detector::new(DetectorConfig { link_errors_per_s: 0, packet_loss_per_s: 0, ..DetectorConfig::default() }, 7, 1);
        let mut out = Vec::new();
        off.on_errors(1_000_000, 1_000_000, W, &mut out);
        off.on_errors(1_000_000, 1_000_000, 2 * W, &mut out);
        assert!(out.is_empty());
    }

    /// A Performance degradation event (0x03) from the link's round trip
    /// (the RTT probe's), with Latency and Jitter metadata in us (s.5.1.3
    /// bits 6, 7); it stands while either cause holds (one event per type,
    /// as the ingress PE keeps them) and recovers below 9/10 of the
    /// threshold.
    #[test]
    fn a_degraded_round_trip_is_a_performance_degradation_event() {
        let cfg = DetectorConfig { node: "fc00::1".parse().unwrap(), latency_degraded_ns: 20 * MS, ..DetectorConfig::default() };
        let mut d = Detector::new(cfg, 7, 300);
        let mut out = Vec::new();
        d.on_latency(Some(19 * MS), 0, MS, &mut out);
        d.on_latency(None, 0, 2 * MS, &mut out);
        assert!(out.is_empty(), "under the threshold, or nothing measured");
        d.on_latency(Some(30_500_000), 1_200_000, 3 * MS, &mut out);
        assert_eq!(out.len(), 1);
        let m = out[0].message;
        assert_eq!((out[0].code, m.event_type, m.event_subtype, m.event_id), (CODE_EVENT, event::PERFORMANCE_DEGRADATION, 0, 300));
        assert_eq!((m.metadata.latency, m.metadata.jitter, m.metadata.packet_loss, m.metadata.egress_port_id), (Some(30_500), Some(1_200), None, Some(7)));
        out.clear();
        // 19 ms is above 9/10 of 20: it stands. Losses join: no second event.
        d.on_latency(Some(19 * MS), 0, 4 * MS, &mut out);
        const W: u64 = RATE_WINDOW_NS;
        d.on_errors(0, 0, W, &mut out);
        d.on_errors(0, 50, 2 * W, &mut out);
        assert!(out.is_empty(), "{out:?}");
        // The round trip is back; the losses still hold the event.
        d.on_latency(Some(17 * MS), 0, 2 * W + MS, &mut out);
        assert!(out.is_empty(), "{out:?}");
        // Losses end: the recovery, naming the event.
        d.on_errors(0, 0, 3 * W, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].code, out[0].message.event_type, out[0].message.event_subtype, out[0].message.event_id), (CODE_RECOVERY, RECOVERY, event::PERFORMANCE_DEGRADATION, 300));
        out.clear();
        // Losses alone start one as before (bit 5 only); latency 0 is off.
        d.on_errors(0, 50, 4 * W, &mut out);
        assert_eq!((out[0].message.metadata.packet_loss, out[0].message.metadata.latency, out[0].message.event_id), (Some(50), None, 301));
        let mut off = Detector::new(DetectorConfig::default(), 7, 1);
        let mut out = Vec::new();
        off.on_latency(Some(10_000 * MS), 0, MS, &mut out);
        assert!(out.is_empty());
    }

    /// The ingress PE takes a Signal degradation event as severe
    /// congestion of the element (1/8) and a Performance degradation as
    /// mild (1/2); their recoveries undo.
    #[test]
    fn degradation_events_reweight_at_the_pe() {
        let mut p = pe();
        p.on_notification(CODE_EVENT, &msg("fc00::2", event::SIGNAL_DEGRADATION, 0, 1, None));
        assert_eq!(p.state(1).unwrap().weights, vec![12, 100]);
        p.on_notification(CODE_RECOVERY, &msg("fc00::2", RECOVERY, event::SIGNAL_DEGRADATION, 1, None));
        assert_eq!(p.state(1).unwrap().weights, vec![100, 100]);
        p.on_notification(CODE_EVENT, &msg("fc00::2", event::PERFORMANCE_DEGRADATION, 0, 2, None));
        assert_eq!(p.state(1).unwrap().weights, vec![50, 100]);
        p.on_notification(CODE_RECOVERY, &msg("fc00::2", RECOVERY, event::PERFORMANCE_DEGRADATION, 2, None));
        assert_eq!(p.state(1).unwrap().weights, vec![100, 100]);
    }

    #[test]
    fn external_microbursts_event_and_recovery() {
        let mut d = Detector::new(DetectorConfig { microburst_external: true, microburst_bytes: 100_000, ..DetectorConfig::default() }, 4, 0);
        let mut out = Vec::new();
        // on_tx alone never reports one in this mode, however fast it samples.
        d.on_tx(0, 0, None, 0, &mut out);
        d.on_tx(0, 150_000, None, 10_000, &mut out);
        assert!(out.is_empty(), "{out:?}");
        d.on_microbursts(2, 150_000, MS, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].code, out[0].message.event_type), (CODE_EVENT, event::MICROBURST));
        assert_eq!(out[0].message.metadata.microburst, Some(true));
        assert_eq!(out[0].message.metadata.queue_occupancy, Some(150_000));
        assert_eq!(out[0].message.metadata.egress_port_id, Some(4));
        // Another during the event: no new notification.
        d.on_microbursts(1, 200_000, 2 * MS, &mut out);
        assert_eq!(out.len(), 1);
        // A quiet sample a window later: recovery with the event's identifier.
        d.on_microbursts(0, 0, 3 * MS, &mut out);
        assert_eq!(out.len(), 2);
        assert_eq!((out[1].code, out[1].message.event_subtype, out[1].message.event_id), (CODE_RECOVERY, event::MICROBURST, out[0].message.event_id));
    }

    #[test]
    fn rate_limited() {
        let mut d = Detector::new(DetectorConfig { rate_pps: 1, burst: 1, ..DetectorConfig::default() }, 1, 0);
        let mut out = Vec::new();
        d.on_link(false, 0, &mut out);
        d.on_link(true, 1, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(d.stats.rate_limited, 1);
        assert_eq!(d.held_back(), 1);
        // Held back, not lost: the recovery leaves once there is a token,
        // with the identifier of the event the PEs were told of.
        d.on_link(true, 500_000_000, &mut out);
        assert_eq!((out.len(), d.stats.rate_limited), (1, 1), "counted once however long it waits");
        d.on_link(true, 1_000_000_001, &mut out);
        assert_eq!(out.len(), 2);
        assert_eq!((out[1].code, out[1].message.event_subtype, out[1].message.event_id), (CODE_RECOVERY, event::LINK_FAILURE, out[0].message.event_id));
        assert_eq!(d.held_back(), 0);
        // An event that clears before it could be sent is never sent (the
        // PEs never knew of it); one that stands is sent when it can.
        d.on_link(false, 1_000_000_002, &mut out);
        d.on_link(true, 1_000_000_003, &mut out);
        d.on_link(false, 1_000_000_004, &mut out);
        assert_eq!(out.len(), 2);
        d.on_link(false, 2_000_000_010, &mut out);
        assert_eq!(out.len(), 3);
        assert_eq!((out[2].code, out[2].message.event_type), (CODE_EVENT, event::LINK_FAILURE));
        assert_ne!(out[2].message.event_id, out[0].message.event_id);
        assert_eq!((d.stats.events, d.stats.recoveries), (2, 1));
    }

    fn a(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    /// Figures 2 and 3: ingress PE -> R1 -> R2 -> egress PE (primary) or
    /// R3 -> R4 (backup).
    fn pe() -> IngressPe {
        let el = |n: &str, p: Option<u32>| Element { node: a(n), port: p };
        let primary = PathSpec { segments: vec![a("fc00:1::"), a("fc00:2::")], weight: 100, elements: vec![el("fc00::1", Some(2)), el("fc00::2", None)] };
        let backup = PathSpec { segments: vec![a("fc00:3::"), a("fc00:4::")], weight: 100, elements: vec![el("fc00::3", None), el("fc00::4", None)] };
        IngressPe::new(
            vec![PolicySpec { name: "to-egress".into(), primary: vec![primary.clone()], backup: Some(vec![backup.clone()]) }, PolicySpec { name: "ecmp".into(), primary: vec![primary, backup], backup: None }],
            vec![a("fc00::1"), a("fc00::2"), a("fc00::3"), a("fc00::4")],
        )
    }

    fn msg(node: &str, ty: u8, sub: u8, id: u32, port: Option<u32>) -> MessageRepr {
        MessageRepr { hop_limit: 64, event_type: ty, event_subtype: sub, event_id: id, timestamp: 0, originating_node: a(node), metadata: Metadata { egress_port_id: port, ..Default::default() } }
    }

    #[test]
    fn failure_moves_to_backup_and_back() {
        let mut p = pe();
        let r = p.on_notification(CODE_EVENT, &msg("fc00::1", event::LINK_FAILURE, 0, 7, Some(2)));
        assert_eq!(r, Reaction::Applied { changed: vec![0, 1] });
        assert!(p.state(0).unwrap().on_backup);
        assert_eq!(p.state(1).unwrap().weights, vec![0, 100], "ECMP: the failed path gets no traffic");
        assert_eq!(p.on_notification(CODE_EVENT, &msg("fc00::1", event::LINK_FAILURE, 0, 7, Some(2))), Reaction::Duplicate);
        // Another port of R1 failing does not touch the path.
        assert_eq!(p.on_notification(CODE_EVENT, &msg("fc00::1", event::LINK_FAILURE, 0, 8, Some(5))), Reaction::Applied { changed: vec![] });
        let r = p.on_notification(CODE_RECOVERY, &msg("fc00::1", RECOVERY, event::LINK_FAILURE, 7, Some(2)));
        assert_eq!(r, Reaction::Applied { changed: vec![0, 1] });
        assert!(!p.state(0).unwrap().on_backup);
        assert_eq!(p.stats.switched_to_backup, 1);
        assert_eq!(p.stats.restored, 1);
    }

    /// The Path ID of a notification (s.5.1.3 bit 14) puts the event on
    /// every path whose SID list holds it, also where no `elements` are
    /// configured: a link failure naming a SID of the primary list moves
    /// the policy to its backup; one naming a SID of no list (and a node on
    /// no path) changes nothing; the recovery restores.
    #[test]
    fn the_path_id_names_the_paths_an_event_is_on() {
        let bare = |segs: [&str; 2]| PathSpec { segments: segs.iter().map(|x| a(x)).collect(), weight: 1, elements: vec![] };
        let mut p = IngressPe::new(vec![PolicySpec { name: "bare".into(), primary: vec![bare(["fc00:1::", "fc00:2::"])], backup: Some(vec![bare(["fc00:3::", "fc00:4::"])]) }], vec![a("fc00::9")]);
        let with_path = |id: u32, code_ty: u8, sub: u8, path: &str| MessageRepr { metadata: Metadata { path_id: Some(a(path).octets()), ..Default::default() }, ..msg("fc00::9", code_ty, sub, id, Some(1)) };
        assert_eq!(p.on_notification(CODE_EVENT, &with_path(1, event::LINK_FAILURE, 0, "fc00:7::")), Reaction::Applied { changed: vec![] });
        assert_eq!(p.on_notification(CODE_EVENT, &msg("fc00::9", event::LINK_FAILURE, 0, 2, Some(1))), Reaction::Applied { changed: vec![] }, "no Path ID, no element: on no path");
        assert_eq!(p.on_notification(CODE_EVENT, &with_path(3, event::LINK_FAILURE, 0, "fc00:2::")), Reaction::Applied { changed: vec![0] });
        assert!(p.state(0).unwrap().on_backup);
        assert_eq!(p.on_notification(CODE_RECOVERY, &with_path(3, RECOVERY, event::LINK_FAILURE, "fc00:2::")), Reaction::Applied { changed: vec![0] });
        assert!(!p.state(0).unwrap().on_backup);
    }

    const SEC: u64 = 1_000_000_000;

    #[test]
    fn congestion_shifts_weights_and_unknown_is_dropped() {
        let mut p = pe();
        p.on_notification(CODE_EVENT, &msg("fc00::2", event::CONGESTION, 3, 1, None));
        assert_eq!(p.state(1).unwrap().weights, vec![12, 100], "severe: 1/8");
        // s.4.2: congestion of the only primary list, and a backup free of
        // it: the policy moves to the backup at once.
        assert!(p.state(0).unwrap().on_backup, "no healthy primary left, a healthy backup");
        p.on_notification(CODE_EVENT, &msg("fc00::2", event::CONGESTION, 1, 2, None));
        assert_eq!(p.state(1).unwrap().weights, vec![50, 100], "the newer, milder event replaces it");
        assert!(p.state(0).unwrap().on_backup);
        p.advance(100 * MS);
        p.on_notification(CODE_RECOVERY, &msg("fc00::2", RECOVERY, event::CONGESTION, 2, None));
        assert_eq!(p.state(1).unwrap().weights, vec![100, 100]);
        // Back to the primary once it has been healthy for the hold-down.
        assert!(p.state(0).unwrap().on_backup, "hold-down: still on the backup");
        assert_eq!(p.next_deadline(), Some(100 * MS + SEC));
        assert_eq!(p.advance(100 * MS + SEC - 1), Vec::<usize>::new());
        assert_eq!(p.advance(100 * MS + SEC), vec![0]);
        assert!(!p.state(0).unwrap().on_backup);
        assert_eq!((p.stats.switched_to_backup, p.stats.restored, p.stats.congestion_switches), (1, 1, 1));
        // Congestion on the backup's elements too: nothing better there,
        // the primary stays, its weight reduced.
        p.advance(10 * SEC);
        p.on_notification(CODE_EVENT, &msg("fc00::3", event::CONGESTION, 1, 3, None));
        p.on_notification(CODE_EVENT, &msg("fc00::2", event::CONGESTION, 2, 4, None));
        assert!(!p.state(0).unwrap().on_backup);
        assert_eq!(p.state(0).unwrap().weights, vec![25]);
        assert_eq!(p.on_notification(CODE_EVENT, &msg("fc00::99", event::LINK_FAILURE, 0, 1, None)), Reaction::Dropped);
        assert_eq!(p.stats.unknown_source, 1);
    }

    /// s.4.2 "Ingress PE should reduce the transmission rate of
    /// corresponding traffic": only when congestion leaves a policy no
    /// healthy path to shift its traffic to (a backup, or another list of
    /// its own), by the mildest congestion among its paths.
    #[test]
    fn congestion_with_no_healthy_path_holds_the_rate() {
        let mut p = pe();
        // Mild congestion at R3: to-egress's backup, ecmp's second path.
        p.on_notification(CODE_EVENT, &msg("fc00::3", event::CONGESTION, 1, 3, None));
        assert_eq!(p.state(0).unwrap().rate_permille, None, "to-egress: its primary is healthy");
        assert_eq!(p.state(1).unwrap().rate_permille, None, "ecmp: its first path is healthy, the weights shift to it");
        assert_eq!(p.stats.rate_reduced, 0);
        // Severe congestion at R2 too: nowhere healthy left.
        p.on_notification(CODE_EVENT, &msg("fc00::2", event::CONGESTION, 3, 4, None));
        assert!(!p.state(0).unwrap().on_backup, "its backup is congested too");
        assert_eq!(p.state(0).unwrap().rate_permille, Some(250), "severe on its only path");
        assert_eq!(p.state(1).unwrap().rate_permille, Some(750), "the mildest of its two congested paths");
        assert_eq!(p.stats.rate_reduced, 2);
        // R2 moderate instead: to-egress to 1/2.
        p.on_notification(CODE_EVENT, &msg("fc00::2", event::CONGESTION, 2, 5, None));
        assert_eq!(p.state(0).unwrap().rate_permille, Some(500));
        assert_eq!(p.stats.rate_reduced, 2, "a change of share is not a new reduction");
        // R2 recovers: a healthy path again, no limit.
        p.on_notification(CODE_RECOVERY, &msg("fc00::2", RECOVERY, event::CONGESTION, 5, None));
        assert_eq!((p.state(0).unwrap().rate_permille, p.state(1).unwrap().rate_permille), (None, None));
        assert_eq!(p.stats.rate_restored, 2);
        // A failed path is no path: a policy whose only path failed (and
        // whose backup is congested) has nothing to hold.
        p.on_notification(CODE_EVENT, &msg("fc00::1", event::LINK_FAILURE, 0, 6, Some(2)));
        assert!(p.state(0).unwrap().on_backup);
        assert_eq!(p.state(0).unwrap().rate_permille, Some(750), "on the backup, mildly congested");
        assert_eq!(p.state(1).unwrap().rate_permille, Some(750), "ecmp: its only live path is mildly congested");
        // Switched off: reweighting and moves only.
        let mut q = IngressPe::with_failover(pe().policies.clone(), vec![a("fc00::2"), a("fc00::3")], Failover { reduce_rate: false, ..Failover::default() });
        q.on_notification(CODE_EVENT, &msg("fc00::3", event::CONGESTION, 1, 3, None));
        q.on_notification(CODE_EVENT, &msg("fc00::2", event::CONGESTION, 3, 4, None));
        assert_eq!((q.state(0).unwrap().rate_permille, q.state(1).unwrap().rate_permille), (None, None));
    }

    /// A one-list policy whose own traffic congests its primary: it moves
    /// to the backup, the congestion clears, it moves back, congests the
    /// primary again... Each move soon after a move back doubles the
    /// hold-down (1, 2, 4 s ... up to the maximum), so the flap slows
    /// down; after a quiet spell the hold-down starts again from 1 s.
    #[test]
    fn congestion_failover_is_damped() {
        let mut p = IngressPe::with_failover(pe().policies.clone(), vec![a("fc00::1"), a("fc00::2"), a("fc00::3"), a("fc00::4")], Failover { on_congestion: true, holddown_ns: SEC, holddown_max_ns: 4 * SEC, ..Failover::default() });
        let mut t = 0;
        let mut id = 0;
        let mut cycle = |p: &mut IngressPe, t: &mut u64, hold: u64| {
            id += 2;
            p.advance(*t);
            p.on_notification(CODE_EVENT, &msg("fc00::2", event::CONGESTION, 3, id, None));
            assert!(p.state(0).unwrap().on_backup, "moved at {t}");
            assert_eq!(p.holddown(0), Some(hold), "hold-down at {t}");
            // The congestion clears 10 ms later (the traffic left).
            *t += 10 * MS;
            p.advance(*t);
            p.on_notification(CODE_RECOVERY, &msg("fc00::2", RECOVERY, event::CONGESTION, id, None));
            assert!(p.state(0).unwrap().on_backup);
            assert!(p.advance(*t + hold - 1).is_empty(), "not before the hold-down");
            *t += hold;
            assert_eq!(p.advance(*t), vec![0], "back at {t}");
            assert!(!p.state(0).unwrap().on_backup);
            // The traffic is back on the primary and congests it again.
            *t += 10 * MS;
        };
        for hold in [SEC, 2 * SEC, 4 * SEC, 4 * SEC] {
            cycle(&mut p, &mut t, hold);
        }
        assert_eq!((p.stats.congestion_switches, p.stats.restored, p.stats.holddown_raised), (4, 4, 3));
        // A quiet spell longer than twice the hold-down: from 1 s again.
        t += 9 * SEC;
        cycle(&mut p, &mut t, SEC);
        // Switched off: congestion only reweights.
        let mut q = IngressPe::with_failover(pe().policies.clone(), vec![a("fc00::2")], Failover { on_congestion: false, ..Failover::default() });
        q.on_notification(CODE_EVENT, &msg("fc00::2", event::CONGESTION, 3, 1, None));
        assert!(!q.state(0).unwrap().on_backup);
        assert_eq!(q.state(0).unwrap().weights, vec![12]);
    }

    /// A failure is not damped: once a primary list is up and healthy the
    /// policy returns at once; but a primary that is up and congested
    /// keeps it on the backup, as a congestion move.
    #[test]
    fn failures_are_not_damped() {
        let mut p = pe();
        p.on_notification(CODE_EVENT, &msg("fc00::1", event::LINK_FAILURE, 0, 7, Some(2)));
        assert!(p.state(0).unwrap().on_backup);
        p.advance(5 * MS);
        p.on_notification(CODE_RECOVERY, &msg("fc00::1", RECOVERY, event::LINK_FAILURE, 7, Some(2)));
        assert!(!p.state(0).unwrap().on_backup, "at once");
        assert_eq!(p.next_deadline(), None);
        p.on_notification(CODE_EVENT, &msg("fc00::1", event::LINK_FAILURE, 0, 8, Some(2)));
        p.on_notification(CODE_EVENT, &msg("fc00::2", event::CONGESTION, 2, 9, None));
        p.advance(20 * MS);
        p.on_notification(CODE_RECOVERY, &msg("fc00::1", RECOVERY, event::LINK_FAILURE, 8, Some(2)));
        assert!(p.state(0).unwrap().on_backup, "up but congested");
        p.on_notification(CODE_RECOVERY, &msg("fc00::2", RECOVERY, event::CONGESTION, 9, None));
        assert!(p.state(0).unwrap().on_backup, "healthy: after the hold-down");
        assert_eq!(p.advance(20 * MS + SEC), vec![0]);
        // On the backup for congestion, then every backup list fails: back
        // to the primary at once (up, if congested), not into the failure
        // until the hold-down ends.
        let mut p = pe();
        p.on_notification(CODE_EVENT, &msg("fc00::2", event::CONGESTION, 3, 1, None));
        assert!(p.state(0).unwrap().on_backup);
        p.advance(30 * MS);
        p.on_notification(CODE_EVENT, &msg("fc00::3", event::LINK_FAILURE, 0, 2, None));
        assert!(!p.state(0).unwrap().on_backup, "the backup failed: back to the congested primary");
        assert_eq!(p.state(0).unwrap().weights, vec![12]);
        assert_eq!(p.next_deadline(), None);
        // A failure gone while the primary is congested: the policy stays
        // on the backup for congestion, which is no move: no flap counted.
        let mut p = pe();
        p.on_notification(CODE_EVENT, &msg("fc00::2", event::CONGESTION, 3, 1, None));
        p.advance(SEC);
        p.on_notification(CODE_RECOVERY, &msg("fc00::2", RECOVERY, event::CONGESTION, 1, None));
        p.advance(2 * SEC);
        assert!(!p.state(0).unwrap().on_backup);
        p.on_notification(CODE_EVENT, &msg("fc00::1", event::LINK_FAILURE, 0, 3, Some(2)));
        p.on_notification(CODE_EVENT, &msg("fc00::2", event::CONGESTION, 3, 4, None));
        p.on_notification(CODE_RECOVERY, &msg("fc00::1", RECOVERY, event::LINK_FAILURE, 3, Some(2)));
        assert!(p.state(0).unwrap().on_backup);
        assert_eq!((p.stats.congestion_switches, p.stats.holddown_raised, p.holddown(0)), (1, 0, Some(SEC)));
    }

    /// A node that restarts numbers its events afresh and has forgotten
    /// the events it had announced: its new failure of the same element
    /// replaces the old, and a recovery the PE cannot match by identifier
    /// clears that type of event for the element.
    #[test]
    fn a_restarted_node_cannot_leave_a_failure_standing() {
        let mut p = pe();
        p.on_notification(CODE_EVENT, &msg("fc00::1", event::LINK_FAILURE, 0, 7, Some(2)));
        p.on_notification(CODE_EVENT, &msg("fc00::1", event::LINK_FAILURE, 0, 0x5000_0001, Some(2)));
        assert!(p.state(0).unwrap().on_backup);
        p.on_notification(CODE_RECOVERY, &msg("fc00::1", RECOVERY, event::LINK_FAILURE, 0x5000_0001, Some(2)));
        assert!(!p.state(0).unwrap().on_backup, "the old failure (7) was replaced, not left behind");
        // A recovery with an identifier the PE never saw.
        p.on_notification(CODE_EVENT, &msg("fc00::1", event::LINK_FAILURE, 0, 8, Some(2)));
        p.on_notification(CODE_EVENT, &msg("fc00::2", event::CONGESTION, 2, 9, None));
        assert!(p.state(0).unwrap().on_backup);
        p.on_notification(CODE_RECOVERY, &msg("fc00::1", RECOVERY, event::LINK_FAILURE, 0x6000_0000, Some(2)));
        assert_eq!(p.state(1).unwrap().weights, vec![25, 100], "only that type of event of that element is cleared");
        // The failure is gone, but the primary is still congested (fc00::2)
        // and the backup is not: policy 0 stays on its backup (s.4.2).
        assert!(p.state(0).unwrap().on_backup);
        p.on_notification(CODE_RECOVERY, &msg("fc00::2", RECOVERY, event::CONGESTION, 9, None));
        p.advance(SEC);
        assert!(!p.state(0).unwrap().on_backup);
        // Of another element (port 5): nothing changes.
        p.on_notification(CODE_EVENT, &msg("fc00::1", event::LINK_FAILURE, 0, 10, Some(2)));
        assert_eq!(p.on_notification(CODE_RECOVERY, &msg("fc00::1", RECOVERY, event::LINK_FAILURE, 0x6000_0001, Some(5))), Reaction::Applied { changed: vec![] });
        assert!(p.state(0).unwrap().on_backup);
    }

    /// What known nodes send cannot grow the PE's state without bound.
    #[test]
    fn pe_state_is_bounded() {
        let mut p = pe();
        for port in 0..MAX_PE_EVENTS as u32 {
            assert!(matches!(p.on_notification(CODE_EVENT, &msg("fc00::3", event::CONGESTION, 1, port, Some(1000 + port))), Reaction::Applied { .. }));
            assert!(matches!(p.on_notification(CODE_EVENT, &msg("fc00::3", event::LINK_FAILURE, 0, 1 << 20 | port, Some(1000 + port))), Reaction::Applied { .. }));
        }
        assert_eq!(p.on_notification(CODE_EVENT, &msg("fc00::3", event::CONGESTION, 1, 1 << 30, Some(7))), Reaction::Full);
        assert_eq!(p.on_notification(CODE_EVENT, &msg("fc00::3", event::LINK_FAILURE, 0, 1 << 31, Some(7))), Reaction::Full);
        assert_eq!(p.stats.state_full, 2);
        // An element already known is still updated, and recoveries work.
        assert!(matches!(p.on_notification(CODE_EVENT, &msg("fc00::3", event::CONGESTION, 3, 1 << 29, Some(1000))), Reaction::Applied { .. }));
        p.on_notification(CODE_RECOVERY, &msg("fc00::3", RECOVERY, event::CONGESTION, 1 << 29, Some(1000)));
        assert!(matches!(p.on_notification(CODE_EVENT, &msg("fc00::3", event::CONGESTION, 1, 1 << 30, Some(7))), Reaction::Applied { .. }), "refused before, taken once there is room (not a duplicate)");
    }

    /// The detector reports congestion, queue buildup and microbursts of
    /// one port separately: a microburst (and its recovery) must not end a
    /// severe congestion the node still reports.
    #[test]
    fn events_of_other_types_do_not_replace_a_congestion() {
        let mut p = pe();
        p.on_notification(CODE_EVENT, &msg("fc00::2", event::CONGESTION, 3, 1, Some(4)));
        assert_eq!(p.state(1).unwrap().weights, vec![12, 100], "severe: 1/8");
        p.on_notification(CODE_EVENT, &msg("fc00::2", event::MICROBURST, 0, 2, Some(4)));
        assert_eq!(p.state(1).unwrap().weights, vec![12, 100], "the microburst's 1/2 does not lift the 1/8");
        p.on_notification(CODE_EVENT, &msg("fc00::2", event::QUEUE_BUILDUP, 0, 3, Some(4)));
        p.on_notification(CODE_RECOVERY, &msg("fc00::2", RECOVERY, event::MICROBURST, 2, Some(4)));
        assert_eq!(p.state(1).unwrap().weights, vec![12, 100], "the microburst's recovery does not end the congestion");
        p.on_notification(CODE_RECOVERY, &msg("fc00::2", RECOVERY, event::CONGESTION, 1, Some(4)));
        assert_eq!(p.state(1).unwrap().weights, vec![50, 100], "the queue buildup stands: 1/2");
        p.on_notification(CODE_RECOVERY, &msg("fc00::2", RECOVERY, event::QUEUE_BUILDUP, 3, Some(4)));
        assert_eq!(p.state(1).unwrap().weights, vec![100, 100]);
    }
}

#[cfg(test)]
mod pe_tests {
    use super::*;
    use crate::srv6::EncapMode;
    use crate::wire::lhcnp::MetricType;
    use ipnet::IpNet;

    fn a(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    fn cnp(level: u8, action: Action, qp: u32) -> CnpInfo {
        CnpInfo { congestion_level: level, action, parameter: 0, source_qp: qp, metric_type: MetricType::QueueDepthKb, metric_value: 300 }
    }

    fn path(seg: &str, node: &str, w: u32) -> PathSpec {
        PathSpec { segments: vec![a(seg), a("fc00:e::d6")], weight: w, elements: vec![Element { node: a(node), port: None }] }
    }

    /// Policy 0: primary via R1 with a backup via R3; policy 1: ECMP over
    /// R1 and R3 (no backup).
    fn control(controller: Option<Ipv6Addr>) -> PeControl {
        control_with(controller, 1000, 2)
    }

    fn control_with(controller: Option<Ipv6Addr>, copy_max_pps: u32, copy_burst: u32) -> PeControl {
        let mut t = SidTable::new(&Params::DEFAULT);
        let src = a("fc00:a::");
        t.add_policy("2001:db8:d2::/64".parse::<IpNet>().unwrap(), SrPolicy::new(src, EncapMode::Encaps, vec![(vec![a("fc00:1::"), a("fc00:e::d6")], 1)]).unwrap());
        t.add_policy("2001:db8:d3::/64".parse::<IpNet>().unwrap(), SrPolicy::new(src, EncapMode::Encaps, vec![(vec![a("fc00:1::"), a("fc00:e::d6")], 1), (vec![a("fc00:3::"), a("fc00:e::d6")], 1)]).unwrap());
        let cfg = PeConfig {
            policies: vec![
                (0, PolicySpec { name: "fail".into(), primary: vec![path("fc00:1::", "fc00::1", 1)], backup: Some(vec![path("fc00:3::", "fc00::3", 1)]) }),
                (1, PolicySpec { name: "ecmp".into(), primary: vec![path("fc00:1::", "fc00::1", 1), path("fc00:3::", "fc00::3", 1)], backup: None }),
            ],
            known_nodes: vec![a("fc00::1"), a("fc00::3")],
            interfaces: None,
            controller,
            source: a("fc00::a"),
            source_v4: None,
            hop_limit: 9,
            copy_max_pps,
            copy_burst,
            node_max_pps: 1000,
            node_burst: 100,
            notify_senders: true,
            failover: Failover::default(),
        };
        PeControl::new(t, cfg).unwrap()
    }

    /// The SID table the workers get carries the rate share, and the
    /// counters say when it began and ended.
    #[test]
    fn rate_reduction_reaches_the_workers_table() {
        let mut c = control(None);
        let counters = WorkerCounters::default();
        // R1 and R3 both congested: "ecmp" has no healthy path; "fail"
        // moved to its backup on R1's congestion, and R3's leaves it no
        // healthy path either.
        for (node, sub, id) in [("fc00::1", 2, 1), ("fc00::3", 1, 2)] {
            c.on_note(&PeNote::Fann { code: CODE_EVENT, msg: fann(node, event::CONGESTION, sub, id) }, &counters);
        }
        let t = c.table();
        assert_eq!(t.policy(0).unwrap().rate_permille, Some(750), "fail: on its backup since R1's congestion, now mildly congested at R3");
        assert_eq!(t.policy(1).unwrap().rate_permille, Some(750), "ecmp: the mildest, R3");
        let snap = crate::counters::Snapshot::sum([&counters]);
        assert_eq!(snap.local_count(Local::PeRateReduced), 2);
        c.on_note(&PeNote::Fann { code: CODE_RECOVERY, msg: fann("fc00::3", RECOVERY, event::CONGESTION, 2) }, &counters);
        let t = c.table();
        assert_eq!(t.policy(1).unwrap().rate_permille, None, "ecmp: R3 healthy again");
        assert_eq!(t.policy(0).unwrap().rate_permille, None, "fail: moved to its healthy backup");
        let snap = crate::counters::Snapshot::sum([&counters]);
        assert_eq!(snap.local_count(Local::PeRateRestored), 2);
    }

    fn fann(node: &str, ty: u8, sub: u8, id: u32) -> MessageRepr {
        MessageRepr { hop_limit: 64, event_type: ty, event_subtype: sub, event_id: id, timestamp: 5, originating_node: a(node), metadata: Metadata { egress_port_id: Some(2), ..Default::default() } }
    }

    /// The copies to the controller are ICMPv6 messages this node
    /// originates: rate-limited (RFC 4443 s.2.4 (f), FANN draft s.6), the
    /// notifications themselves still acted on.
    #[test]
    fn controller_copies_are_rate_limited() {
        let ctl = a("2001:db8:c::1");
        let mut c = control_with(Some(ctl), 1, 2);
        let counters = WorkerCounters::default();
        let mut copies = 0;
        for i in 0..6u32 {
            let level = if i % 2 == 0 { 200 } else { 90 };
            let action = if i % 2 == 0 { Action::Pause } else { Action::Resume };
            let out = c.on_note(&PeNote::Cnp { from: a("fc00::1"), info: cnp(level, action, 7) }, &counters);
            assert!(matches!(out.reaction, Reaction::Applied { .. }), "{i}: {:?}", out.reaction);
            copies += usize::from(out.copy.is_some());
        }
        assert_eq!(copies, 2, "the burst, then one a second");
        assert_eq!(counters.local[Local::PeNotification as usize].get(), 6);
        assert_eq!(counters.local[Local::PeControllerCopy as usize].get(), 2);
        assert_eq!(counters.local[Local::PeControllerCopyRateLimited as usize].get(), 4);
    }

    /// s.4.2: "Ingress PE should ... send notification to sender": an
    /// event naming a flow goes to the flow's source as well, and the
    /// recovery that ends it goes to every sender told of it or of the
    /// events it replaced; no Flow ID, an IPv4 flow, or the option off:
    /// nothing to the sender.
    /// A congestion event of fc00::1 naming the RoCEv2 flow from `src`.
    fn named(sub: u8, id: u32, src: Ipv6Addr) -> MessageRepr {
        let mut m = fann("fc00::1", event::CONGESTION, sub, id);
        m.metadata.flow_id = Some(roce_flow_id(std::net::IpAddr::V6(src), "2001:db8:3::7".parse().unwrap(), 49152));
        m
    }

    #[test]
    fn the_sender_of_the_named_flow_is_told_and_then_told_the_recovery() {
        let counters = WorkerCounters::default();
        let (s_a, s_b) = (a("2001:db8:1::2"), a("2001:db8:1::3"));
        let parse = |pkt: &[u8], to: Ipv6Addr| PacketRepr::parse(&Packet::new_checked(&pkt[40..]).unwrap(), &a("fc00::a"), &to, Params::DEFAULT.icmpv6_fann_type).unwrap();
        // A burst of 10 (the rate limit is the controller copies').
        let mut c = control_with(None, 1000, 10);
        let out = c.on_note(&PeNote::Fann { code: CODE_EVENT, msg: named(2, 11, s_a) }, &counters);
        assert_eq!(out.senders.len(), 1, "to the sender");
        let pkt = &out.senders[0];
        assert_eq!(&pkt[8..24], &a("fc00::a").octets(), "from the PE's source address");
        assert_eq!(&pkt[24..40], &s_a.octets());
        let r = parse(pkt, s_a);
        assert_eq!((r.code, r.message.event_type, r.message.event_subtype, r.message.event_id), (CODE_EVENT, event::CONGESTION, 2, 11));
        assert_eq!(r.message.originating_node, a("fc00::1"));
        // The congestion gets worse and now names B's flow: B is told.
        let out = c.on_note(&PeNote::Fann { code: CODE_EVENT, msg: named(3, 12, s_b) }, &counters);
        assert_eq!(out.senders.len(), 1);
        assert_eq!(&out.senders[0][24..40], &s_b.octets());
        // Its recovery (which names no flow) goes to both, once each, with
        // the identifier of the event each was told of.
        let out = c.on_note(&PeNote::Fann { code: CODE_RECOVERY, msg: fann("fc00::1", RECOVERY, event::CONGESTION, 12) }, &counters);
        let mut got: Vec<([u8; 16], u32, u8)> = out
            .senders
            .iter()
            .map(|p| {
                let to = <[u8; 16]>::try_from(&p[24..40]).unwrap();
                let r = parse(p, Ipv6Addr::from(to));
                (to, r.message.event_id, r.code)
            })
            .collect();
        got.sort();
        assert_eq!(got, vec![(s_a.octets(), 11, CODE_RECOVERY), (s_b.octets(), 12, CODE_RECOVERY)]);
        assert_eq!(counters.local[Local::PeSenderCopy as usize].get(), 4);
        // Nothing is left to recover.
        let again = c.on_note(&PeNote::Fann { code: CODE_EVENT, msg: named(1, 20, s_a) }, &counters);
        assert_eq!(again.senders.len(), 1);
        // A recovery the PE matches by element and type only (an
        // identifier it does not know) still reaches the sender.
        let out = c.on_note(&PeNote::Fann { code: CODE_RECOVERY, msg: fann("fc00::1", RECOVERY, event::CONGESTION, 99) }, &counters);
        assert_eq!(out.senders.len(), 1);
        // No Flow ID; an IPv4 (IPv4-mapped) sender while the PE has no
        // IPv4 source: nothing (counted).
        assert!(c.on_note(&PeNote::Fann { code: CODE_EVENT, msg: fann("fc00::1", event::CONGESTION, 3, 21) }, &counters).senders.is_empty());
        assert!(c.on_note(&PeNote::Fann { code: CODE_EVENT, msg: named(2, 22, "::ffff:10.0.1.2".parse().unwrap()) }, &counters).senders.is_empty());
        assert_eq!(counters.local[Local::PeSenderNoIpv4Source as usize].get(), 1);
        // Off by configuration.
        let mut off = control(None);
        off.cfg.notify_senders = false;
        assert!(off.on_note(&PeNote::Fann { code: CODE_EVENT, msg: named(2, 23, s_a) }, &counters).senders.is_empty());
    }

    /// An IPv4 sender (its Flow ID IPv4-mapped) is told over UDP (s.5.2)
    /// from the PE's IPv4 address, the event and then its recovery; a
    /// recovery in the form Code 1 with the cleared condition's own Event
    /// Type goes as Event Type 0x07 (UDP has no Code).
    #[test]
    fn an_ipv4_sender_is_told_over_udp() {
        use crate::wire::checksum;
        let counters = WorkerCounters::default();
        let mut c = control_with(None, 1000, 10);
        c.cfg.source_v4 = Some("10.0.2.1".parse().unwrap());
        let s4 = a("::ffff:10.0.1.2");
        let check = |pkt: &[u8]| -> MessageRepr {
            assert_eq!((pkt[0], pkt[1], pkt[8], pkt[9]), (0x45, 0xc0, 64, 17), "IPv4, CS6, TTL 64, UDP");
            assert_eq!(usize::from(u16::from_be_bytes([pkt[2], pkt[3]])), pkt.len());
            assert_eq!((&pkt[12..16], &pkt[16..20]), (&[10, 0, 2, 1][..], &[10, 0, 1, 2][..]));
            assert_eq!(checksum::fold(checksum::sum(&pkt[..20])), 0xffff, "header checksum");
            let u = &pkt[20..];
            assert_eq!((u16::from_be_bytes([u[0], u[1]]), u16::from_be_bytes([u[2], u[3]])), (Params::DEFAULT.fann_udp_port, Params::DEFAULT.fann_udp_port));
            assert_eq!(usize::from(u16::from_be_bytes([u[4], u[5]])), u.len());
            let s = checksum::combine(checksum::pseudo_v4(&[10, 0, 2, 1], &[10, 0, 1, 2], 17, u.len() as u16), checksum::sum(u));
            assert_eq!(checksum::fold(s), 0xffff, "UDP checksum");
            MessageRepr::parse(&Message::new_checked(&u[8..]).unwrap()).unwrap()
        };
        let out = c.on_note(&PeNote::Fann { code: CODE_EVENT, msg: named(2, 31, s4) }, &counters);
        assert_eq!(out.senders.len(), 1);
        let m = check(&out.senders[0]);
        assert_eq!((m.event_type, m.event_subtype, m.event_id, m.originating_node), (event::CONGESTION, 2, 31, a("fc00::1")));
        let out = c.on_note(&PeNote::Fann { code: CODE_RECOVERY, msg: fann("fc00::1", event::CONGESTION, 0, 31) }, &counters);
        assert_eq!(out.senders.len(), 1);
        let m = check(&out.senders[0]);
        assert_eq!((m.event_type, m.event_subtype, m.event_id), (event::RECOVERY, event::CONGESTION, 31), "a recovery by its Event Type");
        assert_eq!(counters.local[Local::PeSenderNoIpv4Source as usize].get(), 0);
    }

    /// s.6: every ICMPv6 FANN message is rate-limited (RFC 4443 s.2.4):
    /// recoveries to senders too. They wait for tokens instead of being
    /// dropped (a sender never told of a recovery would stay throttled),
    /// oldest first, and ahead of newer events.
    #[test]
    fn recoveries_to_senders_wait_for_the_rate_limit() {
        let counters = WorkerCounters::default();
        let (s_a, s_b) = (a("2001:db8:1::2"), a("2001:db8:1::3"));
        // 1 per second, a burst of 2: both events are told at once.
        let mut c = control_with(None, 1, 2);
        assert_eq!(c.on_note(&PeNote::Fann { code: CODE_EVENT, msg: named(2, 11, s_a) }, &counters).senders.len(), 1);
        assert_eq!(c.on_note(&PeNote::Fann { code: CODE_EVENT, msg: named(3, 12, s_b) }, &counters).senders.len(), 1);
        // The recovery finds the bucket empty: both wait.
        let out = c.on_note(&PeNote::Fann { code: CODE_RECOVERY, msg: fann("fc00::1", RECOVERY, event::CONGESTION, 12) }, &counters);
        assert!(out.senders.is_empty());
        assert_eq!(c.recoveries_waiting(), 2);
        // A new event meanwhile goes after them: refused, counted.
        assert!(c.on_note(&PeNote::Fann { code: CODE_EVENT, msg: named(1, 13, s_a) }, &counters).senders.is_empty());
        assert_eq!(counters.local[Local::PeSenderCopyRateLimited as usize].get(), 1);
        // One token a second: one recovery, then the other.
        let first = c.poll_senders_at(1_500_000_000, &counters);
        assert_eq!(first.len(), 1);
        assert_eq!(c.poll_senders_at(1_600_000_000, &counters).len(), 0);
        let second = c.poll_senders_at(3_000_000_000, &counters);
        assert_eq!(second.len(), 1);
        assert_eq!(c.recoveries_waiting(), 0);
        let parse = |pkt: &[u8]| {
            let to = Ipv6Addr::from(<[u8; 16]>::try_from(&pkt[24..40]).unwrap());
            let r = PacketRepr::parse(&Packet::new_checked(&pkt[40..]).unwrap(), &a("fc00::a"), &to, Params::DEFAULT.icmpv6_fann_type).unwrap();
            (to, r.code, r.message.event_id)
        };
        let mut got = vec![parse(&first[0]), parse(&second[0])];
        got.sort();
        assert_eq!(got, vec![(s_a, CODE_RECOVERY, 11), (s_b, CODE_RECOVERY, 12)]);
        assert_eq!(counters.local[Local::PeSenderCopy as usize].get(), 4, "two events and two recoveries sent");
    }

    #[test]
    fn cnp_levels_scale_and_resume_restores() {
        let mut c = control(None);
        let r = c.pe.on_cnp(a("fc00::1"), &cnp(200, Action::Pause, 7));
        assert_eq!(r, Reaction::Applied { changed: vec![0, 1] });
        assert!(c.pe.state(0).unwrap().on_backup, "a CNP is congestion of its sender: the only primary list is congested, the backup is not (s.4.2)");
        assert_eq!(c.pe.state(1).unwrap().weights, vec![8, 64], "level >= 192: 1/8");
        assert_eq!(c.pe.on_cnp(a("fc00::1"), &cnp(220, Action::RateReduce, 8)), Reaction::Duplicate, "same divisor again");
        c.pe.on_cnp(a("fc00::1"), &cnp(150, Action::Notify, 7));
        assert_eq!(c.pe.state(1).unwrap().weights, vec![16, 64], "128..191: 1/4");
        c.pe.on_cnp(a("fc00::1"), &cnp(1, Action::Notify, 7));
        assert_eq!(c.pe.state(1).unwrap().weights, vec![32, 64], "below 128: 1/2");
        c.pe.on_cnp(a("fc00::1"), &cnp(90, Action::Resume, 7));
        assert_eq!(c.pe.state(1).unwrap().weights, vec![64, 64]);
        // Resume: back to the primary after the hold-down, when the control
        // thread's poll finds it ran out (a new snapshot, counted).
        let counters = WorkerCounters::default();
        assert!(c.pe.state(0).unwrap().on_backup);
        assert!(c.poll_failover_at(999_999_999, &counters).is_none());
        let t = c.poll_failover_at(1_000_000_000, &counters).expect("a new SID table");
        assert!(!c.pe.state(0).unwrap().on_backup);
        assert_eq!(t.policy(0).unwrap().lists().len(), 1);
        assert_eq!(counters.local[Local::PeRestored as usize].get(), 1);
        assert_eq!(c.pe.on_cnp(a("fc00::1"), &cnp(0, Action::Notify, 7)), Reaction::Duplicate, "level 0 when not congested");
        assert_eq!(c.pe.on_cnp(a("fc00::99"), &cnp(200, Action::Pause, 7)), Reaction::Dropped);
        assert_eq!((c.pe.stats.duplicates, c.pe.stats.unknown_source), (2, 1));
    }

    #[test]
    fn cnp_and_fann_congestion_combine_by_the_larger_divisor() {
        let mut c = control(None);
        c.pe.on_notification(CODE_EVENT, &fann("fc00::1", event::CONGESTION, 1, 3));
        assert_eq!(c.pe.state(1).unwrap().weights, vec![32, 64]);
        c.pe.on_cnp(a("fc00::1"), &cnp(255, Action::Notify, 1));
        assert_eq!(c.pe.state(1).unwrap().weights, vec![8, 64]);
        c.pe.on_cnp(a("fc00::1"), &cnp(0, Action::Resume, 1));
        assert_eq!(c.pe.state(1).unwrap().weights, vec![32, 64], "the FANN event still holds");
    }

    #[test]
    fn failure_rebuilds_the_policy_with_the_backup_list_and_copies_to_the_controller() {
        let ctl = a("fc00::c");
        let mut c = control(Some(ctl));
        let counters = WorkerCounters::default();
        let note = PeNote::Fann { code: CODE_EVENT, msg: fann("fc00::1", event::LINK_FAILURE, 0, 42) };
        let out = c.on_note(&note, &counters);
        let t = out.table.expect("a new snapshot");
        let p0 = t.policy(0).unwrap();
        assert_eq!(p0.lists().len(), 1);
        assert_eq!(p0.lists()[0].sids, vec![a("fc00:3::"), a("fc00:e::d6")], "the backup list is active");
        assert_eq!(p0.source, a("fc00:a::"), "source and mode kept");
        let p1 = t.policy(1).unwrap();
        assert_eq!(p1.lists().len(), 1, "the failed ECMP member (weight 0) is left out");
        assert_eq!(p1.lists()[0].sids[0], a("fc00:3::"));
        assert_eq!(t.pe_known.as_deref(), Some(&[a("fc00::1"), a("fc00::3")][..]));
        // The controller copy: IPv6 from the PE to the controller, ICMPv6
        // FANN with the same Code and fields, and the PE's own Hop Limit
        // (the copy is re-originated here).
        let ip = out.copy.expect("controller copy");
        assert_eq!(ip[6], 58);
        assert_eq!(&ip[8..24], &a("fc00::a").octets());
        assert_eq!(&ip[24..40], &ctl.octets());
        let r = PacketRepr::parse(&Packet::new_checked(&ip[40..]).unwrap(), &a("fc00::a"), &ctl, Params::DEFAULT.icmpv6_fann_type).unwrap();
        assert_eq!(r.code, CODE_EVENT);
        assert_eq!(r.message, MessageRepr { hop_limit: 9, ..fann("fc00::1", event::LINK_FAILURE, 0, 42) });
        assert_eq!(counters.local[Local::PeNotification as usize].get(), 1);
        assert_eq!(counters.local[Local::PeSwitchedToBackup as usize].get(), 1);
        assert_eq!(counters.local[Local::PeReweighted as usize].get(), 1, "the ECMP policy");
        assert_eq!(counters.local[Local::PeControllerCopy as usize].get(), 1);
        // Duplicate: counted, no snapshot, no copy.
        let dup = c.on_note(&note, &counters);
        assert!(dup.table.is_none() && dup.copy.is_none());
        assert_eq!(counters.drops[Drop::FannDuplicate as usize].get(), 1);
        // Recovery: primary again.
        let rec = PeNote::Fann { code: CODE_RECOVERY, msg: fann("fc00::1", RECOVERY, event::LINK_FAILURE, 42) };
        let t = c.on_note(&rec, &counters).table.unwrap();
        assert_eq!(t.policy(0).unwrap().lists()[0].sids[0], a("fc00:1::"));
        assert_eq!(t.policy(1).unwrap().lists().len(), 2);
        assert_eq!(counters.local[Local::PeRestored as usize].get(), 1);
    }

    #[test]
    fn every_path_failed_without_backup_keeps_the_configured_lists() {
        let mut c = control(None);
        let counters = WorkerCounters::default();
        c.on_note(&PeNote::Fann { code: CODE_EVENT, msg: fann("fc00::1", event::LINK_FAILURE, 0, 1) }, &counters);
        let t = c.on_note(&PeNote::Fann { code: CODE_EVENT, msg: fann("fc00::3", event::LINK_FAILURE, 0, 2) }, &counters).table.unwrap();
        let p1 = t.policy(1).unwrap();
        assert_eq!(p1.lists().len(), 2);
        assert_eq!(p1.lists().iter().map(|l| l.weight).collect::<Vec<_>>(), vec![64, 64]);
    }

    #[test]
    fn unknown_source_is_counted_by_the_control_side_too() {
        let mut c = control(None);
        let counters = WorkerCounters::default();
        let out = c.on_note(&PeNote::Fann { code: CODE_EVENT, msg: fann("fc00::7", event::LINK_FAILURE, 0, 1) }, &counters);
        assert_eq!(out.reaction, Reaction::Dropped);
        assert_eq!(counters.drops[Drop::FannUnknownSource as usize].get(), 1);
    }

    #[test]
    fn cnp_is_re_originated_as_fann_congestion() {
        let n = PeNote::Cnp { from: a("fc00::1"), info: cnp(200, Action::Pause, 0x1234) };
        let (code, m) = n.as_fann(9, 7, 0xabcd);
        assert_eq!((code, m.event_type, m.event_subtype, m.event_id, m.hop_limit), (CODE_EVENT, event::CONGESTION, event::CONGESTION_SEVERE, 0xabcd, 9), "the PE's number, not the Source QP");
        assert_eq!(m.originating_node, a("fc00::1"));
        assert_eq!(m.timestamp, 7, "a CNP's copy is stamped with the PE's time of receipt");
        assert_eq!(m.metadata.queue_occupancy, Some(300_000));
        let (code, m) = PeNote::Cnp { from: a("fc00::1"), info: cnp(10, Action::Resume, 0x1234) }.as_fann(9, 7, 1);
        assert_eq!((code, m.event_type, m.event_subtype), (CODE_RECOVERY, RECOVERY, event::CONGESTION));
        let (_, m) = PeNote::Cnp { from: a("fc00::1"), info: cnp(130, Action::Notify, 1) }.as_fann(9, 7, 1);
        assert_eq!(m.event_subtype, event::CONGESTION_MODERATE);
    }

    /// The copies of a node's CNPs number its congestion: a new
    /// identifier when it begins and each time its severity changes, the
    /// ended event's identifier on Resume, and a new one when it comes
    /// back. A receiver that deduplicates by (node, Code, identifier), as
    /// this PE does with FANN, takes every copy and clears what it holds.
    #[test]
    fn cnp_copies_number_the_congestion_not_the_queue_pair() {
        let ctl = a("fc00::c");
        let mut c = control_with(Some(ctl), 1000, 16);
        let counters = WorkerCounters::default();
        let mut receiver = IngressPe::new(vec![PolicySpec { name: "via-n1".into(), primary: vec![path("fc00:1::", "fc00::1", 8)], backup: None }], vec![a("fc00::1")]);
        let copy = |c: &mut PeControl, level: u8, action: Action, qp: u32| -> Option<(u8, MessageRepr)> {
            let out = c.on_note(&PeNote::Cnp { from: a("fc00::1"), info: cnp(level, action, qp) }, &counters);
            out.copy.map(|ip| {
                let r = PacketRepr::parse(&Packet::new_checked(&ip[40..]).unwrap(), &a("fc00::a"), &ctl, Params::DEFAULT.icmpv6_fann_type).unwrap();
                (r.code, r.message)
            })
        };
        let (code, e1) = copy(&mut c, 200, Action::Pause, 5).expect("congestion begins");
        assert_eq!((code, e1.event_subtype, e1.event_id), (CODE_EVENT, event::CONGESTION_SEVERE, c.pe.last_cnp_event()));
        assert_eq!(copy(&mut c, 200, Action::Pause, 7), None, "same severity for another QP: the same event, no copy");
        let (_, e2) = copy(&mut c, 100, Action::RateReduce, 7).expect("milder");
        assert_eq!((e2.event_subtype, e2.event_id), (event::CONGESTION_MILD, e1.event_id.wrapping_add(1)), "a change of severity is a new event");
        let (code, r) = copy(&mut c, 0, Action::Resume, 5).expect("resume");
        assert_eq!((code, r.event_type, r.event_subtype, r.event_id), (CODE_RECOVERY, RECOVERY, event::CONGESTION, e2.event_id), "Resume ends the event in force, whatever QP it names");
        let (_, e3) = copy(&mut c, 200, Action::Pause, 5).expect("congested again");
        assert_eq!(e3.event_id, e1.event_id.wrapping_add(2), "the same QP congested again is a new event");
        for (code, m) in [(CODE_EVENT, e1), (CODE_EVENT, e2), (CODE_RECOVERY, r), (CODE_EVENT, e3)] {
            assert!(matches!(receiver.on_notification(code, &m), Reaction::Applied { .. }), "a deduplicating receiver takes {m:?}");
        }
        assert_eq!(receiver.state(0).unwrap().weights, vec![1], "e3 (severe) in force: 8 / 8");
        let (code, r3) = copy(&mut c, 0, Action::Resume, 9).expect("resume");
        assert_eq!((code, r3.event_id), (CODE_RECOVERY, e3.event_id));
        assert!(matches!(receiver.on_notification(code, &r3), Reaction::Applied { .. }));
        assert_eq!(receiver.state(0).unwrap().weights, vec![8], "every event ended");
    }

    #[test]
    fn notes_parse_from_icmpv6_and_udp_and_refuse_malformed() {
        let p = Params::DEFAULT;
        let (src, dst) = (a("fc00::1"), a("fc00::a"));
        let m = fann("fc00::1", event::LINK_FAILURE, 0, 5);
        let ip = notification_packet(CODE_RECOVERY, &m, &src, &dst, &p, false);
        let h = crate::wire::ipv6::Ipv6Packet::new_checked(&ip[..]).unwrap();
        assert_eq!((h.traffic_class(), h.flow_label(), h.hop_limit()), (0xc0, 0, 64), "CS6, network control");
        assert_eq!(&ip[..2], &[0x6c, 0x00]);
        // Code 1 with the link failure's own Event Type: its recovery, in
        // this node's form (Event Type 0x07, the cleared type as sub-type).
        assert_eq!(PeNote::from_icmpv6(&ip[40..], src, &p), Some(PeNote::Fann { code: CODE_RECOVERY, msg: MessageRepr { event_type: RECOVERY, event_subtype: event::LINK_FAILURE, ..m } }));
        let mut bad_code = ip[40..].to_vec();
        bad_code[1] = 2;
        assert_eq!(PeNote::from_icmpv6(&bad_code, src, &p), None, "Code must be 0 or 1");
        // A recovery in a peer's other forms reads as this node's: Code 1
        // with the cleared condition's own Event Type (here congestion,
        // sub-type 1, which must not read as a link failure), and Event
        // Type 0x07 with Code 0.
        let cong = MessageRepr { event_type: event::CONGESTION, event_subtype: 1, ..m };
        let ip = notification_packet(CODE_RECOVERY, &cong, &src, &dst, &p, false);
        assert_eq!(PeNote::from_icmpv6(&ip[40..], src, &p), Some(PeNote::Fann { code: CODE_RECOVERY, msg: MessageRepr { event_type: RECOVERY, event_subtype: event::CONGESTION, ..m } }));
        let rec0 = MessageRepr { event_type: RECOVERY, event_subtype: event::CONGESTION, ..m };
        let ip = notification_packet(CODE_EVENT, &rec0, &src, &dst, &p, false);
        assert_eq!(PeNote::from_icmpv6(&ip[40..], src, &p), Some(PeNote::Fann { code: CODE_RECOVERY, msg: rec0 }));
        assert_eq!(PeNote::from_icmpv6(&ip[40..ip.len() - 1], src, &p), None, "truncated stack");
        let udp = notification_packet(CODE_EVENT, &m, &src, &dst, &p, true);
        assert_eq!(PeNote::from_udp_payload(&udp[48..], src), Some(PeNote::Fann { code: CODE_EVENT, msg: m }));
        let rec = MessageRepr { event_type: RECOVERY, event_subtype: event::LINK_FAILURE, ..m };
        let udp = notification_packet(CODE_RECOVERY, &rec, &src, &dst, &p, true);
        assert_eq!(PeNote::from_udp_payload(&udp[48..], src), Some(PeNote::Fann { code: CODE_RECOVERY, msg: rec }), "UDP: Recovery event type means Code 1");
        let mut v2 = udp[48..].to_vec();
        v2[0] = 2;
        assert_eq!(PeNote::from_udp_payload(&v2, src), None, "version 2");
        // Long-haul CNP (ICMPv6, s.6.1).
        let mut lh = vec![p.icmpv6_lhcnp_type, 0, 0, 0];
        lh.extend_from_slice(&[0u8; 12]);
        let info = cnp(200, Action::Pause, 9);
        info.emit(&mut crate::wire::lhcnp::Body::new_checked(&mut lh[4..]).unwrap()).unwrap();
        assert_eq!(PeNote::from_icmpv6(&lh, src, &p), Some(PeNote::Cnp { from: src, info }));
        assert_eq!(PeNote::from_icmpv6(&lh[..10], src, &p), None);
        assert_eq!(PeNote::from_icmpv6(&[128, 0, 0, 0], src, &p), None, "echo is neither");
        // Only Code 0 (flow-level) is defined (s.6.1, s.10.2).
        for code in [1u8, 254] {
            let mut other = lh.clone();
            other[1] = code;
            assert_eq!(PeNote::from_icmpv6(&other, src, &p), None, "Code {code}");
        }
    }

    #[test]
    fn bad_pe_config_names_the_policy() {
        let t = SidTable::new(&Params::DEFAULT);
        let cfg = PeConfig { policies: vec![(3, PolicySpec { name: "x".into(), primary: vec![], backup: None })], known_nodes: vec![], interfaces: None, controller: None, source: a("fc00::a"), source_v4: None, hop_limit: 1, copy_max_pps: 1, copy_burst: 1, node_max_pps: 1, node_burst: 1, notify_senders: false, failover: Failover::default() };
        assert!(PeControl::new(t, cfg).err().unwrap().contains("\"x\": no SR policy 3"));
    }
}
