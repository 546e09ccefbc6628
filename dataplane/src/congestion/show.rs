//! What an operator sees of a congestion-aware port while it runs: a copy
//! of its state (thresholds in effect, QD / EMR / QGR of the last interval,
//! trigger and CNP counters, flow-table use) that the owner worker
//! publishes, and its flows, the ones with the most bytes queued first,
//! found by a scan of the flow table in bounded steps so that a `show`
//! never stalls the worker's poll loop for long.

use std::net::IpAddr;

use super::port::CongestionPort;
use super::{CongestionStats, PortParams, ReactionSummary};
use crate::egress::EgressStats;

/// The most flows one `show flows` lists.
pub const MAX_SHOW_FLOWS: usize = 256;

/// Flow-table entries a scan step reads (one per worker loop): about
/// 512 random reads, a few microseconds with the table out of cache.
pub const SCAN_STEP: usize = 512;

/// A congestion-aware port as its owner worker last published it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CongestionView {
    /// Counters; `k_min` / `k_max` are the thresholds in effect, `qd` the
    /// depth at the last observation, `emr` / `qgr_kb_per_ms` those of the
    /// last closed monitoring interval.
    pub stats: CongestionStats,
    /// The parameters in effect (R_port, RTT_est, V_ecn, V_growth, ...).
    pub params: PortParams,
    /// K_min as configured (`stats.k_min` differs under the adaptive
    /// policy of s.5.8).
    pub k_min_configured: u64,
    /// Learned flows now, the table's size, flows with bytes queued, flows
    /// throttled (a Rate Reduce / Pause not yet followed by Resume).
    pub flows_live: u64,
    pub flow_capacity: u64,
    pub flows_queued: u64,
    pub flows_throttled: u64,
    /// Source prefixes with a configured CNP format.
    pub source_formats: u64,
    /// CNP reaction times: from the packet that took QD above K_max to
    /// the first CNP after it (worker clock).
    pub reaction: ReactionSummary,
    /// The egress queue: its limit and counters.
    pub queue_limit_bytes: u64,
    pub queue: EgressStats,
    /// The worker clock when this was published (ns).
    pub at_ns: u64,
    /// RTT_est from the receivers' ACKs (None: `rtt_acks` off).
    pub ack_rtt: Option<super::AckRttStats>,
}

/// One learned flow as `show flows` lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowView {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub dest_qp: u32,
    /// Learned from responses or configured; None: unknown (CNPs then
    /// carry the Flow ID object instead).
    pub src_qp: Option<u32>,
    pub src_qp_configured: bool,
    /// A UD flow: `src_qp` is its DETH's, part of its key.
    pub ud: bool,
    pub queued_bytes: u64,
    pub last_psn: u32,
    /// Time since its last packet, and since the last CNP sent to it.
    pub idle_ns: u64,
    pub last_cnp_ago_ns: Option<u64>,
    pub throttled: bool,
    /// Deferring to an upstream node (s.5.7).
    pub deferring: bool,
    /// The UDP source port of the packet that created the entry.
    pub sport: u16,
    /// The tunnel its packets last came in ([`CnpRequest::via`](super::CnpRequest::via)).
    pub via: u16,
}

/// A scan of a port's flow table for its top flows, in steps.
pub struct TopScan {
    cursor: usize,
    want: usize,
    active: bool,
    /// Best first: (bytes queued, last seen, slot).
    top: Vec<(u64, u64, u32)>,
}

impl Default for TopScan {
    fn default() -> Self {
        TopScan { cursor: 0, want: 0, active: false, top: Vec::with_capacity(MAX_SHOW_FLOWS + 1) }
    }
}

impl TopScan {
    /// A scan that is never started (no room kept).
    pub fn empty() -> Self {
        TopScan { cursor: 0, want: 0, active: false, top: Vec::new() }
    }

    /// Start a scan for the top `n` flows (at most [`MAX_SHOW_FLOWS`]).
    pub fn start(&mut self, n: usize) {
        self.cursor = 0;
        self.want = n.min(MAX_SHOW_FLOWS);
        self.active = true;
        self.top.clear();
    }

    pub fn active(&self) -> bool {
        self.active
    }

    /// Keep `c` if it is among the best `want` so far. Entries are unique
    /// by slot: a flow met twice (the table changed under the scan) keeps
    /// its later figures.
    fn offer(&mut self, c: (u64, u64, u32)) {
        if let Some(i) = self.top.iter().position(|x| x.2 == c.2) {
            self.top.remove(i);
        }
        if self.want == 0 {
            return;
        }
        if self.top.len() == self.want && self.top.last().is_some_and(|l| (l.0, l.1) >= (c.0, c.1)) {
            return;
        }
        let at = self.top.partition_point(|x| (x.0, x.1) >= (c.0, c.1));
        self.top.insert(at, c);
        self.top.truncate(self.want);
    }
}

impl CongestionPort {
    /// What `show congestion` prints of this port (`queue`: the egress
    /// queue's limit and counters).
    pub fn view(&self, queue_limit_bytes: u64, queue: EgressStats, now: u64) -> CongestionView {
        let t = self.flow_table();
        CongestionView {
            stats: *self.stats(),
            params: *self.params(),
            k_min_configured: self.k_min_configured(),
            flows_live: t.len() as u64,
            flow_capacity: t.capacity() as u64,
            flows_queued: t.queued_flows() as u64,
            flows_throttled: self.throttled_flows() as u64,
            source_formats: self.source_formats().len() as u64,
            reaction: self.reaction(),
            queue_limit_bytes,
            queue,
            at_ns: now,
            ack_rtt: self.ack_rtt(),
        }
    }

    /// One step of `scan`: up to `budget` more learned flows. True when
    /// the scan is complete (then [`CongestionPort::top_flows`] has the
    /// answer). Flows learned or aged during the scan may be missed; the
    /// figures are re-read at the end.
    pub fn scan_top(&self, scan: &mut TopScan, budget: usize) -> bool {
        if !scan.active {
            return true;
        }
        let t = self.flow_table();
        let end = scan.cursor.saturating_add(budget.max(1)).min(t.live.len());
        for i in scan.cursor..end {
            let s = t.live[i];
            if let Some(f) = t.get(s) {
                scan.offer((t.queued(s), f.last_seen, s));
            }
        }
        scan.cursor = end;
        if scan.cursor >= t.live.len() {
            scan.active = false;
        }
        !scan.active
    }

    /// The flows a completed `scan` found, with their figures now, the
    /// most bytes queued first (then the most recently seen), into `out`
    /// (cleared first; no allocation while it has room for
    /// [`MAX_SHOW_FLOWS`]).
    pub fn top_flows(&self, scan: &TopScan, now: u64, out: &mut Vec<FlowView>) {
        out.clear();
        let t = self.flow_table();
        for &(_, _, s) in &scan.top {
            let Some(f) = t.get(s) else { continue };
            let k = f.key();
            out.push(FlowView {
                src: k.src(),
                dst: k.dst(),
                dest_qp: k.dest_qp(),
                src_qp: f.src_qp(),
                src_qp_configured: f.src_qp_configured(),
                ud: f.is_ud(),
                queued_bytes: t.queued(s),
                last_psn: f.last_psn,
                idle_ns: now.saturating_sub(f.last_seen),
                last_cnp_ago_ns: f.last_cnp().map(|c| now.saturating_sub(c)),
                throttled: f.throttled(),
                // Only a deferral still in force (the flag stays until
                // the flow is evaluated again).
                deferring: f.deferred().is_some_and(|(since, _)| !Self::deferral_over(self.params(), since, now)),
                sport: f.sport,
                via: f.via,
            });
        }
        // Unstable: in place, no allocation.
        out.sort_unstable_by_key(|v| std::cmp::Reverse((v.queued_bytes, std::cmp::Reverse(v.idle_ns))));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::congestion::RoceInfo;
    use crate::egress::EgressStats;

    fn info(i: u32) -> RoceInfo {
        RoceInfo {
            src: IpAddr::V6(std::net::Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 2)),
            dst: IpAddr::V6(std::net::Ipv6Addr::new(0x2001, 0xdb8, 3, 0, 0, 0, (i >> 16) as u16, i as u16)),
            dest_qp: 0x100 + i,
            opcode: crate::wire::roce::opcode::SEND_ONLY,
            psn: i,
            sport: 49152,
            ext: false,
            syndrome: 0,
            ud_src_qp: None,
        }
    }

    fn port_with(flows: u32, queued: impl Fn(u32) -> u32) -> (CongestionPort, Vec<crate::congestion::FlowId>) {
        let mut c = CongestionPort::new(PortParams { flow_capacity: 4 * flows as usize, ..PortParams::default() });
        let mut ids = Vec::new();
        let mut qd = 0;
        for i in 0..flows {
            for _ in 0..queued(i) {
                qd += 100;
                let (_, f) = c.on_enqueue(Some(&info(i)), 100, true, qd, u64::from(i) + 1);
                ids.extend(f);
            }
        }
        (c, ids)
    }

    #[test]
    fn top_flows_in_steps_match_a_full_sort() {
        // 5000 flows, 0..7 packets of 100 bytes each: ties in bytes are
        // broken by the most recent packet.
        let q = |i: u32| (i * 7919) % 8;
        let (c, _) = port_with(5000, q);
        let mut scan = TopScan::default();
        scan.start(40);
        let mut steps = 0;
        while !c.scan_top(&mut scan, 97) {
            steps += 1;
            assert!(steps < 1000);
        }
        // Flows without packets (i % 8 == 0) were never learned.
        let learned = (0..5000).filter(|&i| q(i) > 0).count();
        assert_eq!(c.view(0, EgressStats::default(), 0).flows_live, learned as u64);
        assert_eq!(steps + 1, learned.div_ceil(97), "{learned} flows in steps of 97");
        let mut out = Vec::with_capacity(MAX_SHOW_FLOWS);
        c.top_flows(&scan, 10_000, &mut out);
        let mut all: Vec<(u64, u32)> = (0..5000).map(|i| (u64::from(q(i)) * 100, i)).collect();
        // Most bytes first, then the flow seen last (time = its index + 1).
        all.sort_by(|a, b| b.cmp(a));
        assert_eq!(out.len(), 40);
        for (v, (bytes, i)) in out.iter().zip(&all) {
            assert_eq!(v.queued_bytes, *bytes);
            assert_eq!(v.dest_qp, 0x100 + i, "flow {i}");
            assert_eq!(v.dst, info(*i).dst);
            assert_eq!(v.idle_ns, 10_000 - u64::from(*i) - 1);
            assert_eq!(v.src_qp, None);
            assert!(!v.throttled);
        }
    }

    #[test]
    fn top_flows_reread_figures_and_skip_flows_gone() {
        let (mut c, ids) = port_with(3, |i| i + 1);
        let mut scan = TopScan::default();
        scan.start(10);
        assert!(c.scan_top(&mut scan, SCAN_STEP));
        // After the scan, flow 2 sends its 3 packets: the answer shows now.
        let mut qd = 600;
        let third: Vec<_> = ids.iter().copied().filter(|f| c.flow_queued(*f) == Some(300)).collect();
        assert_eq!(third.len(), 3);
        for f in third {
            qd -= 100;
            c.on_dequeue(Some(f), 100, qd, 50);
        }
        let mut out = Vec::new();
        c.top_flows(&scan, 60, &mut out);
        let bytes: Vec<u64> = out.iter().map(|v| v.queued_bytes).collect();
        assert_eq!(bytes, vec![200, 100, 0]);
        assert_eq!(out[2].dest_qp, 0x102);
        // A scan for 0 flows lists none. Three flows in steps of 1 and 2.
        scan.start(0);
        assert!(!c.scan_top(&mut scan, 1));
        assert!(c.scan_top(&mut scan, 2));
        assert!(!scan.active() && c.scan_top(&mut scan, 1), "a finished scan stays finished");
        c.top_flows(&scan, 60, &mut out);
        assert!(out.is_empty());
        let v = c.view(1000, EgressStats { tail_drops: 7, ..EgressStats::default() }, 99);
        assert_eq!((v.flows_live, v.flows_queued, v.flow_capacity, v.queue.tail_drops, v.at_ns), (3, 2, 12, 7, 99));
        assert_eq!(v.stats.k_max, PortParams::default().k_max());
        assert_eq!(v.k_min_configured, PortParams::default().k_max() / 2);
    }
}
