//! Congestion-aware node (draft-tian-ccwg-long-haul-cnp-00), pure Rust: no
//! DPDK, no I/O, time injected as `u64` nanoseconds.
//!
//! One [`CongestionPort`] per egress port, owned by the worker that owns the
//! port's queue (single writer). The egress stage calls:
//!
//! * [`CongestionPort::on_enqueue`] for every packet entering the queue:
//!   flow learning (s.5.2), per-flow queue contribution and arrival rate,
//!   first-level ECN marking (s.5.4: CE only for ECT packets and only when
//!   QD > K_min);
//! * [`CongestionPort::on_dequeue`] for every packet that `on_enqueue` saw
//!   and that leaves the queue, **whether transmitted or dropped** (the
//!   per-flow byte counters saturate at zero and are reset when the queue is
//!   seen empty, so a missed call cannot wedge them, but it skews them);
//! * [`CongestionPort::on_reverse`] for RoCEv2 packets of the reverse
//!   direction (ACKs, read responses, atomic ACKs, standard CNPs:
//!   [`RoceInfo::teaches_source_qp`]) of flows this port carries — i.e. on
//!   the port through which the *forward* packets leave, typically the one
//!   the reverse packet arrived on — to learn the source QP (unknown flows:
//!   `reverse_unmatched`, no state is created);
//!   [`CongestionPort::set_source_qp`] for configured ones (control plane,
//!   between bursts: it may allocate);
//! * [`CongestionPort::poll`] once per burst: monitoring interval, triggers,
//!   Long-haul CNP decisions; then [`build_cnp`] for each request.
//!
//! No allocation, lock, syscall, log or panic on `on_enqueue`, `on_dequeue`,
//! `on_reverse` and `poll` (the flow table is preallocated by `new`; `poll`
//! only pushes within the capacity the caller reserved in `out`, counting
//! `out_full` otherwise).
//!
//! # Thresholds (s.5.3.2)
//!
//! `K_max = max(K_base, alpha * R_port * RTT_est / 8)` (bytes; R_port in
//! bit/s, RTT_est in s), `K_min = k_min_bytes` or `K_max / 2`; K_min < K_max
//! is enforced by [`PortParams::validate`]. [`CongestionPort::set_params`]
//! recomputes both (RTT_est or rate changes). With [`AdaptivePolicy`] the
//! effective K_min moves (see below); [`CongestionPort::thresholds`] returns
//! the effective pair.
//!
//! # Monitoring (s.5.3.1)
//!
//! Every `interval_ns` (checked by `poll`) the port closes a monitoring
//! interval: EMR = CE-marked packets / packets enqueued in the interval
//! (0..1); QGR = (QD now - QD at the start) / interval, in KB/ms (1 KB =
//! 1000 B, the unit of s.10.4; negative while draining). The three
//! second-level triggers are evaluated at that moment, with the QD passed to
//! that `poll`: (a) QD > K_max, (b) EMR > V_ecn, (c) QGR > V_growth. So a
//! Long-haul CNP leaves at most one monitoring interval after the queue
//! crosses K_max (choose `interval_ns` much smaller than RTT_est, e.g.
//! RTT_est / 100). The Resume condition is checked on every `poll`.
//!
//! Marking is deterministic (every ECT packet while QD > K_min), so EMR is
//! the share of the interval's packets that arrived above K_min, and EMR >
//! V_ecn means the queue sat above K_min for most of the interval. The
//! draft's section 7 (70 MB: marking, no CNP) therefore implies a V_ecn the
//! example does not exceed; its test uses V_ecn = 1 (the EMR trigger off).
//!
//! # Severity policy (s.5.5.1), see [`Policy`]
//!
//! `B` = `policy.buffer_bytes` (0: `2 * K_max`), the size of the queue.
//!
//! * Congestion Level = `round(255 * min(QD, B) / B)`: 0 = empty, 255 = full.
//! * QD >= `pause_at * B` (buffer nearly full): **Pause**, Parameter = the
//!   time to drain QD down to K_min at R_port, in microseconds,
//!   `(QD - K_min) * 8 / R_port`, within `1..=max_pause_us`.
//! * else QD > K_max: **Rate Reduce**, Parameter = `round(level *
//!   rate_reduce_pct_per_level)` within `[rate_reduce_min_pct,
//!   rate_reduce_max_pct]`; the default 1/6 per level asks 30 % at level 180
//!   and 42 % just below Pause: the reduction grows with the overshoot.
//! * else (only the EMR or QGR trigger fired, QD <= K_max): **Notify**
//!   (Parameter 0): the source applies its default response.
//! * **Resume** (Parameter `resume_pct`, Congestion Level of the current
//!   QD) to every *throttled* flow (one that was sent a Notify, Rate Reduce
//!   or Pause and no Resume since) once QD has stayed below K_min
//!   continuously for at least RTT_est (every `on_enqueue`, `on_dequeue`
//!   and `poll` observation counts; one at or above K_min restarts the
//!   clock).
//! * Metric (s.10.4): QD trigger, Pause, Resume: Metric Type 1, QD in KB;
//!   else QGR trigger: type 2, QGR in KB/ms (0 when negative); else EMR:
//!   type 3, percent. All values saturate at 24 bits. `zero_metrics`
//!   (s.9, information disclosure) sets both type and value to 0.
//!
//! Section 7 with these defaults and a 184 MB buffer (the draft does not say
//! how big N1's buffer is; 184 MB is the size at which 130 MB is level 180):
//! 100 Gbit/s, RTT_est 10 ms -> K_max 125 MB, K_min 62.5 MB; 70 MB -> CE
//! marking only; 130 MB -> Rate Reduce 30, Congestion Level 180, Metric Type
//! 1, value 130000; QD below K_min for 10 ms -> Resume 50 (Metric value
//! 30000 at 30 MB; the Congestion Level is 42 there, where the draft's
//! example says 20: the draft's two levels are not on one linear scale).
//!
//! # Which flows (s.5.5)
//!
//! The `policy.top_flows` flows with the most bytes in the queue (ties: the
//! lower slot). A selected flow that got a Long-haul CNP less than RTT_est
//! ago is skipped (`rate_limited`), not replaced by the next one. Every CNP
//! (Resume included) also takes a token from the port's global bucket
//! (`cnp_port_max_pps`, `cnp_port_burst`; s.9); none left: `port_capped`.
//!
//! # Collaborative suppression and escalation (s.5.7, `suppression`)
//!
//! Each flow's arrival rate is measured per observation window
//! (`policy.observation_window_ns`, default RTT_est as s.5.7 recommends;
//! bytes in the last completed window vs the one before). A selected flow
//! whose rate fell by at least `policy.rate_drop_frac` is *deferred*
//! (`suppressed`): an upstream node has presumably acted. A fall caused by
//! our own CNP does not count (no deferral within 2 windows + RTT_est of our last
//! CNP to the flow: the two windows compared plus the feedback delay). When
//! the flow is selected again between one and two windows after the
//! deferral: if QD is higher than when it deferred (congestion kept
//! worsening), the node sends a stricter instruction (Notify -> Rate
//! Reduce -> Pause) with Congestion Level raised by `escalation_step`
//! (`escalated`); otherwise it re-evaluates normally (and may defer again).
//! A deferral older than two windows is forgotten: it belonged to an
//! earlier episode, whose queue depth says nothing about this one.
//!
//! # Adaptive parameters (s.5.8, `adaptive`, off by default)
//!
//! [`AdaptivePolicy`]: an EWMA of the per-interval mean QD. When it stays
//! above the effective K_min (a standing queue: ECN marking starts too
//! late) K_min is lowered by `step_frac * K_max` per interval, not below
//! `k_min_floor_frac * K_max`; when it is below `low_frac * K_min` it is
//! raised back by the same step up to the configured K_min.
//!
//! # Flows and source QPs (s.5.2)
//!
//! Keyed by (src IP, dst IP, DestQP) (the BTH names only the destination
//! QP); fixed capacity (`flow_capacity`), full: `flow_table_full`, the
//! packet is still queued and marked. ACK, atomic ACK and CNP opcodes do not
//! create flows. Idle flows (no packet for `flow_idle_timeout_ns`, nothing
//! queued) are removed by an incremental sweep in `poll` (`flows_aged`).
//! The source QP comes from configuration ([`CongestionPort::set_source_qp`],
//! which wins: reverse traffic never overwrites it) or from reverse
//! traffic: a packet from the flow's destination to its source carries the
//! forward source QP as DestQP. Two kinds of reverse packets are used:
//!
//! * RC/RD responses (ACK, read response, atomic ACK; `reverse_learned`):
//!   the flow of the two hosts whose last PSN is closest to the
//!   response's, at most [`RESPONSE_PSN_WINDOW`] at or after it (ACKs
//!   acknowledge forward PSNs) or, for an RDMA READ response, before it
//!   (the responses of a READ carry the PSNs after the request's) takes
//!   it; a tie, or a guess among several flows that would replace a QP
//!   one of them learned already, is `reverse_ambiguous`; a response no
//!   flow's PSN admits is `reverse_unmatched`, even for a pair's only flow
//!   (the response of another QP of the two hosts, leaving by another
//!   port).
//! * Standard RoCEv2 CNPs (BTH opcode 0x81, E bit clear), which the
//!   destination's NIC sends to the source for CE-marked packets (DCQCN):
//!   they come back precisely while a queue marks, and they are the only
//!   reverse packets of UC flows (`reverse_learned_from_cnp`). Their PSN
//!   means nothing, so a CNP teaches only when the flow is unambiguous: the
//!   pair has one flow, or exactly one of the pair's flows has no source QP
//!   yet (neither learned nor configured) and none already has the CNP's
//!   QP; two or more without one is `reverse_ambiguous`. Long-haul CNPs (E
//!   set, [`crate::wire::lhcnp::is_roce_lhcnp`]) come from congestion
//!   points, not from the destination, and are not used.
//!
//! A response that passes the PSN test replaces the learned QP of a pair's
//! only flow (the QP was created anew); a CNP never replaces one. A reverse packet examines at most
//! [`MAX_REVERSE_WALK`] (64) of the pair's flows (its first, then the
//! newest); when the pair has more it learns nothing
//! (`reverse_walk_limited`): configure the source QPs of host pairs with
//! that many QPs.
//!
//! Both of the table's indices hash with a random key drawn per table
//! (`HashKey::random`): flow keys are the senders' to choose, and a hash
//! known in advance would let one sender pile its flows into one bucket
//! chain that every lookup then walks.
//!
//! # Packets ([`build_cnp`])
//!
//! The format is the one configured for the source
//! ([`CongestionPort::set_source_formats`]: the longest prefix containing
//! the source address), else the port's `default_format`. IPv4 sources can
//! only take the RoCEv2 format (s.4), and the RoCEv2 format goes only to
//! endpoints configured to accept it (s.10.5: "MUST NOT send Long-haul CNP
//! packets in RoCEv2 format to endpoints that have not been explicitly
//! configured"): an IPv4 source gets a CNP only when a `roce` prefix covers
//! it or the port's default is `roce`; otherwise none is sent
//! (`format_unconfigured`; the flow is still CE-marked, and the other flows
//! selected in the same evaluation, `top_flows`, are still served). The RoCEv2 BTH DestQP (s.6.2.3: "the destination QP
//! number at the source to be controlled") and the Source QP Number are the
//! learned source QP; the draft's section 7 shows DestQP = SourceQP = 100.
//! When the source QP is unknown (`source_qp_unknown`) both are 0 — QP 0 is
//! never a RoCEv2 data QP, so a legacy RNIC cannot throttle the wrong QP
//! (the flow's own DestQP would name a QP of the *destination*, and
//! possibly an unrelated QP at the source) — and the packet carries what is
//! known instead: an extension object of the Long-haul CNP class with the
//! experimental C-Type [`CTYPE_FLOW_ID`] (254, s.10.3), 20 octets: the flow's
//! destination address (IPv6, or IPv4-mapped) and its DestQP, from which a
//! source can find its QP (a remote address and QPN identify an RC QP).
//! The object is in both formats; but a RoCE NIC acts on the BTH DestQP,
//! 0 here, so [`Policy::unknown_source_qp`] can hold such CNPs back: all
//! of them, or only the RoCEv2-format ones (`source_qp_unknown_skipped`;
//! the flow is then not throttled).

mod ackrtt;
mod auth;
mod build;
mod flows;
mod port;
mod show;
mod source;
#[cfg(test)]
mod tests;

use std::net::IpAddr;

use crate::wire::lhcnp::{Action, CnpInfo};

pub use ackrtt::{AckRttParams, AckRttStats, ACK_REQ};
pub use auth::{CnpAuth, CnpSa, MAX_CNP_SAS};
pub use build::{build_cnp, CTYPE_FLOW_ID, FLOW_ID_LEN};
pub use flows::PackedKey;
pub use port::{CongestionPort, ReactionSummary, MAX_PENDING, MAX_REVERSE_WALK, RESPONSE_PSN_WINDOW};
pub use show::{CongestionView, FlowView, TopScan, MAX_SHOW_FLOWS, SCAN_STEP};
pub use source::{parse_cnp, SourceModel, SourceParams, SourceReject};

/// Long-haul CNP encapsulation (s.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CnpFormat {
    /// ICMPv6 message (s.6.1), IPv6 only.
    Icmpv6,
    /// RoCEv2 CNP with E=1 (s.6.2), IPv4 or IPv6.
    Roce,
}

/// Severity policy (module documentation, "Severity policy").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Policy {
    /// Queue size B in bytes (the 255 of the Congestion Level scale and the
    /// base of the Pause threshold); 0 = `2 * K_max`. Must exceed K_max.
    pub buffer_bytes: u64,
    /// Pause when QD >= `pause_at * B` (0 < pause_at <= 1).
    pub pause_at: f64,
    /// Longest Pause asked for, microseconds (>= 1).
    pub max_pause_us: u16,
    /// Rate Reduce percentage per Congestion Level point.
    pub rate_reduce_pct_per_level: f64,
    pub rate_reduce_min_pct: u8,
    pub rate_reduce_max_pct: u8,
    /// Resume Parameter: percent of the last reduction the source may
    /// restore (0 = all).
    pub resume_pct: u8,
    /// Flows to notify per evaluation (1..=[`MAX_TOP_FLOWS`]).
    pub top_flows: u8,
    /// Suppression: a fall of the arrival rate by at least this fraction
    /// (0 < f < 1) between observation windows means upstream acted.
    pub rate_drop_frac: f64,
    /// Escalation: Congestion Level increase.
    pub escalation_step: u8,
    /// The observation window of the arrival-rate estimate that deferral
    /// compares (s.5.7: "a configurable observation window (RECOMMENDED:
    /// 1 * RTT_est)"), ns; 0 = RTT_est.
    pub observation_window_ns: u64,
    /// What to do for a flow whose source QP is unknown.
    pub unknown_source_qp: UnknownSourceQp,
}

/// A CNP for a flow whose source QP is not known (neither configured nor
/// learned from reverse traffic): DestQP and Source QP Number are then 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnknownSourceQp {
    /// Send it anyway (the "send what is known"): both formats
    /// carry the Flow ID object from which a source can find its QP, but a
    /// RoCE NIC reads only the RoCEv2 format's BTH DestQP, 0 here.
    #[default]
    Send,
    /// Send only the ICMPv6 format: a RoCEv2-format CNP that names no QP
    /// cannot be acted on by a RoCE NIC, so it is not sent.
    Icmpv6Only,
    /// Send none.
    Skip,
}

/// Most flows a single evaluation may notify.
pub const MAX_TOP_FLOWS: usize = 8;

impl Default for Policy {
    fn default() -> Self {
        Policy {
            buffer_bytes: 0,
            pause_at: 0.9,
            max_pause_us: u16::MAX,
            rate_reduce_pct_per_level: 1.0 / 6.0,
            rate_reduce_min_pct: 10,
            rate_reduce_max_pct: 50,
            resume_pct: 50,
            top_flows: 1,
            rate_drop_frac: 0.1,
            escalation_step: 32,
            observation_window_ns: 0,
            unknown_source_qp: UnknownSourceQp::Send,
        }
    }
}

/// Dynamic K_min adjustment (s.5.8); see the module documentation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdaptivePolicy {
    /// EWMA weight of each interval's mean QD (0 < w <= 1).
    pub ewma_weight: f64,
    /// Step of one adjustment, fraction of K_max (0 < s < 1).
    pub step_frac: f64,
    /// Lowest effective K_min, fraction of K_max (0 < f, below K_min).
    pub k_min_floor_frac: f64,
    /// Raise K_min back when the average QD is below this fraction of it.
    pub low_frac: f64,
}

impl Default for AdaptivePolicy {
    fn default() -> Self {
        AdaptivePolicy {
            ewma_weight: 0.125,
            step_frac: 0.05,
            k_min_floor_frac: 0.25,
            low_frac: 0.25,
        }
    }
}

/// Configuration of one egress port's congestion function.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PortParams {
    /// R_port, bit/s.
    pub rate_bps: u64,
    /// RTT_est, ns.
    pub rtt_est_ns: u64,
    pub k_base_bytes: u64,
    pub alpha: f64,
    /// K_min; None = K_max / 2. Must be < K_max.
    pub k_min_bytes: Option<u64>,
    /// V_ecn: EMR threshold, fraction of packets CE-marked in the interval.
    pub v_ecn: f64,
    /// V_growth: QGR threshold, KB/ms.
    pub v_growth_kb_per_ms: f64,
    /// Monitoring interval, ns.
    pub interval_ns: u64,
    /// Global Long-haul CNP cap of the port (s.9), packets per second.
    pub cnp_port_max_pps: u32,
    pub cnp_port_burst: u32,
    /// Flow table size (fixed at `CongestionPort::new`).
    pub flow_capacity: usize,
    pub flow_idle_timeout_ns: u64,
    /// s.9: Metric Type and Value zero in every CNP.
    pub zero_metrics: bool,
    /// s.5.7 downstream deferral and escalation.
    pub suppression: bool,
    /// The QD trigger (QD > K_max) at the first poll (every loop of the
    /// owner worker) that sees it, instead of at the end of the monitoring
    /// interval (s.5.3.1: QD is instantaneous and monitored continuously;
    /// EMR and QGR stay rates over the interval). Off: QD is sampled when
    /// an interval closes, as in the draft's section 7 example, where the
    /// CNP reports the 130 MB the queue has grown to.
    pub qd_immediate: bool,
    /// s.5.8; None = off.
    pub adaptive: Option<AdaptivePolicy>,
    /// Format for sources no configured prefix covers
    /// ([`CongestionPort::set_source_formats`]); `Icmpv6` leaves those of
    /// them that are IPv4 without CNPs (s.4, s.10.5).
    pub default_format: CnpFormat,
    pub policy: Policy,
    /// RTT_est from receiver reporting: the port times its RC flows'
    /// packets to their ACKs ([`ackrtt`]); the control thread follows
    /// the estimate. None = off.
    pub ack_rtt: Option<AckRttParams>,
}

impl Default for PortParams {
    /// 100 Gbit/s, RTT_est 10 ms (the draft's section 7), K_base 64 KB.
    fn default() -> Self {
        PortParams {
            rate_bps: 100_000_000_000,
            rtt_est_ns: 10_000_000,
            k_base_bytes: 64_000,
            alpha: 1.0,
            k_min_bytes: None,
            v_ecn: 0.9,
            v_growth_kb_per_ms: 10_000.0,
            interval_ns: 100_000,
            cnp_port_max_pps: 10_000,
            cnp_port_burst: 64,
            flow_capacity: 4096,
            flow_idle_timeout_ns: 1_000_000_000,
            zero_metrics: false,
            suppression: true,
            qd_immediate: false,
            adaptive: None,
            default_format: CnpFormat::Icmpv6,
            policy: Policy::default(),
            ack_rtt: None,
        }
    }
}

/// The smallest K_base anywhere: s.5.3.2 wants at least one
/// maximum-sized RoCEv2 frame; the configuration also checks it against
/// the port's MTU (`k_base_holds_a_frame` in the control crate).
pub const MIN_K_BASE_BYTES: u64 = 1024;
/// Largest flow table.
pub const MAX_FLOW_CAPACITY: usize = 1 << 22;
/// The fastest port (1.6 Tb/s).
pub const MAX_RATE_BPS: u64 = 1_600_000_000_000;
/// The longest RTT_est (10 s).
pub const MAX_RTT_EST_NS: u64 = 10_000_000_000;
/// The largest K_base / K_min (64 GiB, the largest egress queue).
pub const MAX_THRESHOLD_BYTES: u64 = 64 << 30;

impl PortParams {
    /// `max(K_base, alpha * R_port * RTT_est / 8)`, bytes.
    pub fn k_max(&self) -> u64 {
        let bdp = self.alpha * self.rate_bps as f64 * self.rtt_est_ns as f64 / 8e9;
        // `as` saturates (NaN -> 0).
        self.k_base_bytes.max(bdp.round() as u64)
    }

    /// Configured K_min, else K_max / 2.
    pub fn k_min(&self) -> u64 {
        self.k_min_bytes.unwrap_or(self.k_max() / 2)
    }

    /// The observation window in effect: the configured one, else RTT_est.
    pub fn observation_window_ns(&self) -> u64 {
        match self.policy.observation_window_ns {
            0 => self.rtt_est_ns,
            w => w,
        }
    }

    /// The queue size of the severity policy.
    pub fn buffer_bytes(&self) -> u64 {
        if self.policy.buffer_bytes == 0 {
            self.k_max().saturating_mul(2)
        } else {
            self.policy.buffer_bytes
        }
    }

    /// Every rule, first failure as "field = value: reason".
    pub fn validate(&self) -> Result<(), String> {
        fn err(field: &str, v: impl core::fmt::Display, why: &str) -> Result<(), String> {
            Err(format!("{field} = {v}: {why}"))
        }
        let frac = |x: f64| x.is_finite() && x > 0.0 && x < 1.0;
        if self.rate_bps == 0 {
            return err("rate_bps", self.rate_bps, "must be positive");
        }
        // Upper bounds keep every product of these (K_max, 3 * RTT_est,
        // recovery timers) far from overflow, whoever sets them (the
        // configuration or the management socket at run time).
        if self.rate_bps > MAX_RATE_BPS {
            return err("rate_bps", self.rate_bps, "must be at most 1.6 Tb/s");
        }
        if self.rtt_est_ns == 0 || self.rtt_est_ns > MAX_RTT_EST_NS {
            return err("rtt_est_ns", self.rtt_est_ns, "must be positive and at most 10 s");
        }
        if self.k_base_bytes < MIN_K_BASE_BYTES || self.k_base_bytes > MAX_THRESHOLD_BYTES {
            return err("k_base_bytes", self.k_base_bytes, "must be at least 1024 bytes (s.5.3.2: at least one maximum-sized RoCEv2 frame) and at most 64 GiB");
        }
        if !(self.alpha.is_finite() && self.alpha > 0.0 && self.alpha <= 100.0) {
            return err("alpha", self.alpha, "must be a positive number, at most 100");
        }
        let kmax = self.k_max();
        // The thresholds and the queue are kept in 32-bit counts of 16
        // octets where a flow remembers them (a deferral's QD).
        if kmax > MAX_THRESHOLD_BYTES {
            return err("rtt_est_ns", self.rtt_est_ns, &format!("K_max = alpha * R_port * RTT_est / 8 = {kmax} bytes must be at most 64 GiB"));
        }
        if let Some(k) = self.k_min_bytes {
            if k == 0 || k > MAX_THRESHOLD_BYTES {
                return err("k_min_bytes", k, "must be positive and at most 64 GiB");
            }
            if k >= kmax {
                return err("k_min_bytes", k, &format!("must be less than K_max = {kmax}"));
            }
        }
        if !(self.v_ecn.is_finite() && (0.0..=1.0).contains(&self.v_ecn)) {
            return err("v_ecn", self.v_ecn, "must be a fraction in 0..1");
        }
        if !(self.v_growth_kb_per_ms.is_finite() && self.v_growth_kb_per_ms >= 0.0) {
            return err("v_growth_kb_per_ms", self.v_growth_kb_per_ms, "must be a non-negative number");
        }
        if self.interval_ns == 0 {
            return err("interval_ns", self.interval_ns, "must be positive");
        }
        if self.cnp_port_max_pps == 0 {
            return err("cnp_port_max_pps", self.cnp_port_max_pps, "must be positive (s.9 requires a cap, not a ban)");
        }
        if self.cnp_port_burst == 0 {
            return err("cnp_port_burst", self.cnp_port_burst, "must be at least 1");
        }
        if self.flow_capacity == 0 || self.flow_capacity > MAX_FLOW_CAPACITY {
            return err("flow_capacity", self.flow_capacity, &format!("must be in 1..={MAX_FLOW_CAPACITY}"));
        }
        if self.flow_idle_timeout_ns == 0 {
            return err("flow_idle_timeout_ns", self.flow_idle_timeout_ns, "must be positive");
        }
        let p = &self.policy;
        if p.buffer_bytes != 0 && p.buffer_bytes <= kmax {
            return err("policy.buffer_bytes", p.buffer_bytes, &format!("must exceed K_max = {kmax} (or be 0)"));
        }
        if self.buffer_bytes() > MAX_THRESHOLD_BYTES {
            return err("policy.buffer_bytes", self.buffer_bytes(), "the queue B (0: 2 * K_max) must be at most 64 GiB");
        }
        if !(p.pause_at.is_finite() && p.pause_at > 0.0 && p.pause_at <= 1.0) {
            return err("policy.pause_at", p.pause_at, "must be in (0, 1]");
        }
        if (p.pause_at * self.buffer_bytes() as f64) <= kmax as f64 {
            return err("policy.pause_at", p.pause_at, "the Pause threshold must lie above K_max");
        }
        if p.max_pause_us == 0 {
            return err("policy.max_pause_us", p.max_pause_us, "must be positive");
        }
        if !(p.rate_reduce_pct_per_level.is_finite() && p.rate_reduce_pct_per_level >= 0.0) {
            return err("policy.rate_reduce_pct_per_level", p.rate_reduce_pct_per_level, "must be a non-negative number");
        }
        if p.rate_reduce_max_pct > 100 || p.rate_reduce_max_pct == 0 {
            return err("policy.rate_reduce_max_pct", p.rate_reduce_max_pct, "must be in 1..=100");
        }
        if p.rate_reduce_min_pct > p.rate_reduce_max_pct {
            return err("policy.rate_reduce_min_pct", p.rate_reduce_min_pct, "must not exceed rate_reduce_max_pct");
        }
        if p.resume_pct > 100 {
            return err("policy.resume_pct", p.resume_pct, "must be a percentage (0-100)");
        }
        if p.top_flows == 0 || usize::from(p.top_flows) > MAX_TOP_FLOWS {
            return err("policy.top_flows", p.top_flows, &format!("must be in 1..={MAX_TOP_FLOWS}"));
        }
        if !frac(p.rate_drop_frac) {
            return err("policy.rate_drop_frac", p.rate_drop_frac, "must be in (0, 1)");
        }
        if p.observation_window_ns > MAX_RTT_EST_NS {
            return err("policy.observation_window_ns", p.observation_window_ns, "must be at most 10 s (0: RTT_est)");
        }
        if let Some(a) = &self.ack_rtt {
            if a.window_ns == 0 || a.window_ns > 3600 * 1_000_000_000 {
                return err("ack_rtt.window_ns", a.window_ns, "must be positive and at most an hour");
            }
            if a.timeout_ns == 0 || a.timeout_ns > MAX_RTT_EST_NS {
                return err("ack_rtt.timeout_ns", a.timeout_ns, "must be positive and at most 10 s");
            }
        }
        if let Some(a) = &self.adaptive {
            if !(a.ewma_weight.is_finite() && a.ewma_weight > 0.0 && a.ewma_weight <= 1.0) {
                return err("adaptive.ewma_weight", a.ewma_weight, "must be in (0, 1]");
            }
            if !frac(a.step_frac) {
                return err("adaptive.step_frac", a.step_frac, "must be in (0, 1)");
            }
            if !frac(a.k_min_floor_frac) || (a.k_min_floor_frac * kmax as f64) >= self.k_min() as f64 {
                return err("adaptive.k_min_floor_frac", a.k_min_floor_frac, "must be in (0, 1) and below K_min / K_max");
            }
            if !frac(a.low_frac) {
                return err("adaptive.low_frac", a.low_frac, "must be in (0, 1)");
            }
        }
        Ok(())
    }
}

/// What the parser extracted from a RoCEv2 packet (inner packet when inside
/// SRv6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RoceInfo {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub dest_qp: u32,
    pub opcode: u8,
    /// The PSN, with the BTH AckReq bit in bit 31 ([`ACK_REQ`]).
    pub psn: u32,
    /// The UDP source port (RoCEv2's entropy, set by the sender per QP).
    pub sport: u16,
    /// The BTH E (Extension Present) bit (draft s.6.2.1): set on
    /// RoCEv2-format Long-haul CNPs, clear on standard RoCEv2 CNPs and
    /// every other packet.
    pub ext: bool,
    /// An RC ACK's AETH syndrome (0: an ACK, and every other packet).
    pub syndrome: u8,
    /// A UD datagram's source QP, from its DETH (IBA 9.8.2): part of the
    /// flow key. None for every other packet.
    pub ud_src_qp: Option<u32>,
}

impl RoceInfo {
    /// Whether this packet, travelling from a flow's destination to its
    /// source, names the flow's source QP as its DestQP: an RC/RD response
    /// (ACK, read response, atomic ACK) or a standard RoCEv2 CNP (opcode
    /// 0x81, E clear) that the destination's NIC sends to the source for
    /// CE-marked packets. A Long-haul CNP (E set) does not: it is a
    /// congestion point's, not the destination's.
    /// The key of the flow this packet belongs to, as a data packet.
    #[inline]
    pub fn key(&self) -> PackedKey {
        let k = PackedKey::new(self.src, self.dst, self.dest_qp);
        match self.ud_src_qp {
            Some(q) => k.with_ud_source(q),
            None => k,
        }
    }

    #[inline]
    pub fn teaches_source_qp(&self) -> bool {
        use crate::wire::roce::opcode;
        opcode::is_response(self.opcode) || (self.opcode == opcode::CNP && !self.ext)
    }
}

/// What the packet path reads from a RoCEv2 packet: the flow key, packed
/// as the flow table stores it, the opcode and the PSN
/// ([`crate::classify::roce_fast`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoceKey {
    pub key: PackedKey,
    pub opcode: u8,
    pub psn: u32,
    /// The UDP source port, kept in a new flow's entry.
    pub sport: u16,
}

impl RoceKey {
    pub fn from_info(i: &RoceInfo) -> RoceKey {
        RoceKey { key: i.key(), opcode: i.opcode, psn: i.psn, sport: i.sport }
    }
}

/// A flow-table slot, valid while the flow has bytes queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FlowId(u32);

impl FlowId {
    pub const fn index(self) -> u32 {
        self.0
    }
}

/// A Long-haul CNP to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CnpRequest {
    /// The flow's source: the CNP's destination.
    pub to: IpAddr,
    pub flow_dst: IpAddr,
    /// The flow's DestQP (a QP at `flow_dst`).
    pub dest_qp: u32,
    /// The flow's source QP, when known.
    pub src_qp: Option<u32>,
    pub info: CnpInfo,
    pub format: CnpFormat,
    /// The flow's tunnel tag, from its last tunnelled packet
    /// ([`CongestionPort::tag_last`]; 0: none).
    pub via: u16,
}

/// Counters and current values of one port (read by the control thread via
/// the worker; `resumes()` is `cnp_resume`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CongestionStats {
    /// Packets CE-marked (first-level response).
    pub marked: u64,
    pub cnp_notify: u64,
    pub cnp_pause: u64,
    pub cnp_rate_reduce: u64,
    pub cnp_resume: u64,
    /// Selected flows skipped: a CNP went to them less than RTT_est ago.
    pub rate_limited: u64,
    /// CNPs not sent: the port's global bucket was empty.
    pub port_capped: u64,
    /// Deferrals (s.5.7).
    pub suppressed: u64,
    /// Escalated CNPs (s.5.7).
    pub escalated: u64,
    /// Of those, ones that could not be stricter than the plain decision
    /// in both level and action: level 255, or a pause already at
    /// `max_pause_us`.
    pub escalation_saturated: u64,
    pub flows_active: u64,
    /// RoCEv2 packets not learned: the table was full.
    pub flow_table_full: u64,
    /// CNPs sent without a known source QP.
    pub source_qp_unknown: u64,
    /// CNPs not sent because the flow's source QP is unknown
    /// ([`UnknownSourceQp`]).
    pub source_qp_unknown_skipped: u64,
    pub flows_aged: u64,
    /// Evaluations in which each trigger held.
    pub trigger_qd: u64,
    pub trigger_emr: u64,
    pub trigger_qgr: u64,
    /// A trigger held but no learned flow had bytes queued.
    pub no_flow: u64,
    /// CNPs dropped: `out` was at capacity.
    pub out_full: u64,
    /// CNPs decided but not built (no route to the source, no mbuf, the
    /// AH sequence numbers used up: the worker's drop counters say which),
    /// taken back out of the counts by action
    /// ([`CongestionPort::cnp_not_built`]).
    pub cnp_not_built: u64,
    /// CNPs not sent: the source is IPv4 and not configured to accept
    /// the RoCEv2 format (s.4, s.10.5).
    pub format_unconfigured: u64,
    /// Source QPs learned from responses (ACK, read response, atomic ACK).
    pub reverse_learned: u64,
    /// Source QPs learned from standard RoCEv2 CNPs.
    pub reverse_learned_from_cnp: u64,
    /// Reverse packets (responses and CNPs) whose host pair has no flow
    /// here, or that name a QP no flow of the pair can take.
    pub reverse_unmatched: u64,
    /// Reverse packets that could belong to several of the pair's flows:
    /// nothing learned.
    pub reverse_ambiguous: u64,
    /// Reverse packets whose host pair has more than
    /// [`MAX_REVERSE_WALK`] flows: nothing learned (configure those
    /// source QPs).
    pub reverse_walk_limited: u64,
    /// Data packets dropped before the queue (tail drops on this port and
    /// hand-off drops on the way to it from another worker) counted for
    /// their flow's arrival rate (s.5.7: a flow whose packets are dropped
    /// did not slow down).
    pub drops_counted: u64,
    /// Last closed interval: EMR (0..1), QGR (KB/ms).
    pub emr: f64,
    pub qgr_kb_per_ms: f64,
    /// QD at the last observation, bytes.
    pub qd: u64,
    /// Effective thresholds.
    pub k_min: u64,
    pub k_max: u64,
}

impl CongestionStats {
    pub fn resumes(&self) -> u64 {
        self.cnp_resume
    }

    /// CNPs sent for an action.
    pub fn cnp_sent(&self, a: Action) -> u64 {
        match a {
            Action::Notify => self.cnp_notify,
            Action::Pause => self.cnp_pause,
            Action::RateReduce => self.cnp_rate_reduce,
            Action::Resume => self.cnp_resume,
        }
    }
}
