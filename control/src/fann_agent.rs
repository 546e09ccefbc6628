//! The control thread's FANN agent (draft-hzh-fantel-wan-tunnel): watches
//! every port (link status, transmitted bytes, egress queue depth) through
//! the same counters the status line reads, runs a [`Detector`] per port and
//! turns its notifications into IPv6 packets (ICMPv6 or UDP) from the node's
//! loopback address to every configured ingress PE. The packets are injected
//! into a worker, which routes and sends them ahead of queued data.

use dataplane::fann::{random_event_id, Detector, DetectorConfig, Notification};
use std::sync::atomic::AtomicU32;
use std::sync::Arc;
use dataplane::pipeline::TokenBucket;
use dataplane::wire::params::Params;
use std::net::Ipv6Addr;

#[derive(Debug, Clone, PartialEq)]
pub struct FannPlan {
    pub node: Ipv6Addr,
    pub ingress_pes: Vec<Ipv6Addr>,
    /// (ingress PE, its END.C / END.E SID): notifications for that PE are
    /// encapsulated in an outer IPv6 header from `node` to the SID
    /// (draft-hu-acn-rocev2 s.4; `[[wan_notify]]`).
    pub encap: Vec<(Ipv6Addr, Ipv6Addr)>,
    /// (port name, Path ID) from `[fann] path_ids`.
    pub path_ids: Vec<(String, [u8; 16])>,
    pub udp: bool,
    pub detector: DetectorConfig,
}

/// How long the last top flow of a port stands for its traffic when the
/// A counter not read yet.
const NO_READING: u64 = u64::MAX;

/// queue is empty at a link failure.
const LAST_TOP_FLOW_NS: u64 = 1_000_000_000;

pub struct FannAgent {
    plan: FannPlan,
    params: Params,
    /// (DPDK port id, detector, last tx bytes, last microburst count)
    ports: Vec<(u16, Detector, u64, u64)>,
    /// Per port (same order): the NIC's error and receive-loss counters
    /// at the last [`FannAgent::poll_errors`] (None: not read yet).
    last_errors: Vec<Option<(u64, u64)>>,
    /// Per port (same order): the last top flow seen and when, for a link
    /// failure that finds the queue empty.
    last_top: Vec<Option<(dataplane::wire::fann::FlowId, u64)>>,
    pub sent: u64,
    /// Notifications the rate limits held back (each is sent later, or
    /// replaced by a newer state of its event type): the port's own
    /// limit, or the node's limit on what it originates (RFC 4443 s.2.4
    /// (f), FANN draft s.6: `rate_pps` / `burst` over every packet, all
    /// ports and ingress PEs together), which the detectors share.
    pub rate_limited: u64,
}

impl FannAgent {
    pub fn new(plan: FannPlan, params: Params, ports: &[(u16, u64 /*link bps*/)]) -> Self {
        Self::with_first_event_id(plan, params, ports, random_event_id())
    }

    /// [`FannAgent::new`] numbering the node's events from `first` (one
    /// sequence for all ports: unique per node, s.5.1.2).
    pub fn with_first_event_id(plan: FannPlan, params: Params, ports: &[(u16, u64 /*link bps*/)], first: u32) -> Self {
        let ids = Arc::new(AtomicU32::new(first));
        let bucket = Arc::new(parking_lot::Mutex::new(TokenBucket::new(plan.detector.rate_pps, plan.detector.burst)));
        // All PEs at once (the configuration makes the burst hold them;
        // never more than the burst, which could never be taken).
        let per_note = u32::try_from(plan.ingress_pes.len()).unwrap_or(u32::MAX).min(plan.detector.burst.max(1));
        let ports: Vec<(u16, Detector, u64, u64)> = ports
            .iter()
            .map(|(id, bps)| {
                // Microbursts come from the port owner's watch (counted per
                // port), not from this thread's ~1 ms samples.
                let cfg = DetectorConfig { link_bps: if *bps > 0 { *bps } else { plan.detector.link_bps }, microburst_external: true, ..plan.detector.clone() };
                let mut d = Detector::with_ids(cfg, u32::from(*id), ids.clone());
                d.set_gate(bucket.clone(), per_note);
                // Every port observed first, then sent oldest first
                // (`flush`).
                d.set_batched(true);
                // No reading yet: the first is the baseline (what went
                // before the first poll is no interval's traffic).
                (*id, d, NO_READING, NO_READING)
            })
            .collect();
        let last_errors = vec![None; ports.len()];
        let last_top = vec![None; ports.len()];
        FannAgent { plan, params, ports, last_errors, last_top, sent: 0, rate_limited: 0 }
    }

    /// One observation of the NICs' error counters: `counters(port)` gives
    /// (link errors: receive and transmit errors; receive losses: packets
    /// missed or without a buffer), cumulative. Signal degradation and
    /// Performance degradation events when their rates are reached
    /// ([`Detector::on_errors`]). Returns IPv6 packets to send.
    pub fn poll_errors(&mut self, now: u64, counters: impl Fn(u16) -> Option<(u64, u64)>) -> Vec<Vec<u8>> {
        let mut notes: Vec<Notification> = Vec::new();
        for ((id, d, _, _), last) in self.ports.iter_mut().zip(self.last_errors.iter_mut()) {
            // A reading the driver could not take is skipped (not taken
            // as zeros, which would make the next one look like a burst).
            let Some((e, l)) = counters(*id) else { continue };
            // The first reading is the baseline (errors from before start).
            let (de, dl) = last.map_or((0, 0), |(le, ll)| (e.saturating_sub(le), l.saturating_sub(ll)));
            *last = Some((e, l));
            d.on_errors(de, dl, now, &mut notes);
        }
        self.flush(now, &mut notes);
        self.packets(&notes)
    }

    /// One observation of the ports' round trips: `rtt(port)` gives the
    /// RTT measurement's estimate (None: no answer lately) and jitter, for
    /// the ports that measure one (None: not measured, or no longer: a
    /// latency event it started ends). Performance degradation events when a round trip
    /// reaches the port's threshold ([`Detector::on_latency`]). Returns
    /// IPv6 packets to send.
    pub fn poll_latency(&mut self, now: u64, rtt: impl Fn(u16) -> Option<(Option<u64>, u64)>) -> Vec<Vec<u8>> {
        let mut notes: Vec<Notification> = Vec::new();
        for (id, d, _, _) in self.ports.iter_mut() {
            match rtt(*id) {
                Some((est, jitter)) => d.on_latency(est, jitter, now, &mut notes),
                None => d.latency_unmeasured(now, &mut notes),
            }
        }
        self.flush(now, &mut notes);
        self.packets(&notes)
    }

    /// Port `port`'s link runs at `bps` now (utilisation of an unshaped
    /// port is measured against it; 0: not known).
    pub fn set_link_bps(&mut self, port: u16, bps: u64, now: u64) {
        for (p, d, _, _) in self.ports.iter_mut() {
            if *p == port {
                d.set_link_bps(bps, now);
            }
        }
    }

    /// The round trip at or above which port `port` has a Performance
    /// degradation event (0: never).
    pub fn set_latency_degraded(&mut self, port: u16, ns: u64) {
        for (p, d, _, _) in self.ports.iter_mut() {
            if *p == port {
                d.set_latency_degraded(ns);
            }
        }
    }

    /// The packets for `notes`: each to every ingress PE (the detectors
    /// took the tokens of the node-wide limit: one per PE for each).
    fn packets(&mut self, notes: &[Notification]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for n in notes {
            for pe in &self.plan.ingress_pes {
                out.push(self.packet(n, pe));
            }
        }
        self.sent += out.len() as u64;
        self.rate_limited = self.ports.iter().map(|(_, d, _, _)| d.stats.rate_limited).sum();
        out
    }

    /// The Path ID a port's notifications carry.
    pub fn set_path_id(&mut self, port: u16, id: Option<[u8; 16]>) {
        for (p, d, _, _) in self.ports.iter_mut() {
            if *p == port {
                d.set_path_id(id);
            }
        }
    }

    /// The microburst watch the port owners run (None: FANN is off).
    pub fn microburst_config(&self) -> dataplane::egress::MicroburstConfig {
        dataplane::egress::MicroburstConfig { bytes: self.plan.detector.microburst_bytes, window_ns: self.plan.detector.microburst_window_ns }
    }

    /// One observation round. `tx_bytes(port)`, `queue_depth(port)`,
    /// `microbursts(port)` (cumulative, from the owner's watch),
    /// `link_up(port)` read the counters / NIC. Returns IPv6 packets to send.
    pub fn poll(&mut self, now: u64, tx_bytes: impl Fn(u16) -> u64, queue_depth: impl Fn(u16) -> u64, microbursts: impl Fn(u16) -> u64, link_up: impl Fn(u16) -> bool) -> Vec<Vec<u8>> {
        self.poll_with_flows(now, tx_bytes, queue_depth, microbursts, link_up, |_| None)
    }

    /// [`FannAgent::poll`] with `top_flow(port)`: the flow contributing most
    /// to the port's queue (the Flow ID of queue-buildup events).
    pub fn poll_with_flows(
        &mut self,
        now: u64,
        tx_bytes: impl Fn(u16) -> u64,
        queue_depth: impl Fn(u16) -> u64,
        microbursts: impl Fn(u16) -> u64,
        link_up: impl Fn(u16) -> bool,
        top_flow: impl Fn(u16) -> Option<dataplane::wire::fann::FlowId>,
    ) -> Vec<Vec<u8>> {
        let mut notes: Vec<Notification> = Vec::new();
        for ((id, d, last, last_mb), seen) in self.ports.iter_mut().zip(self.last_top.iter_mut()) {
            // s.4.1: a link failure names the affected traffic: the flow
            // with the most bytes queued now, else the last one seen in
            // the second before.
            let top = top_flow(*id);
            if let Some(f) = top {
                *seen = Some((f, now));
            }
            let affected = top.or(seen.filter(|(_, t)| now.saturating_sub(*t) <= LAST_TOP_FLOW_NS).map(|(f, _)| f));
            d.on_link_with_flow(link_up(*id), affected, now, &mut notes);
            let since = |v: u64, last: u64| if last == NO_READING { 0 } else { v.saturating_sub(last) };
            let tx = tx_bytes(*id);
            let qd = queue_depth(*id);
            d.on_tx(since(tx, *last), qd, top_flow(*id), now, &mut notes);
            *last = tx;
            let mb = microbursts(*id);
            d.on_microbursts(since(mb, *last_mb), qd, now, &mut notes);
            *last_mb = mb;
        }
        self.flush(now, &mut notes);
        // The detectors took the tokens of the node-wide limit: one per
        // PE for each notification.
        self.packets(&notes)
    }

    /// Send what the ports' detectors queued, once every port has seen
    /// this round's observations (an event that cleared meanwhile is
    /// never sent: the detector forgot it), the port whose notification
    /// waited longest first. In port order alone, a port whose state
    /// keeps changing would take every refill of the node-wide limit and
    /// another port's held recovery would never go.
    fn flush(&mut self, now: u64, notes: &mut Vec<Notification>) {
        let mut order: Vec<(u64, usize)> = self.ports.iter().enumerate().filter_map(|(k, p)| p.1.waiting_since().map(|t| (t, k))).collect();
        order.sort_unstable();
        for (_, k) in order {
            self.ports[k].1.flush(now, notes);
        }
    }

    /// The IPv6 packet carrying `n` to `pe`; inside an outer IPv6 header
    /// (Next Header 41, same traffic class, Hop Limit 64) to the PE's END.C
    /// / END.E SID when one is configured.
    pub fn packet(&self, n: &Notification, pe: &Ipv6Addr) -> Vec<u8> {
        let inner = dataplane::fann::notification_packet(n.code, &n.message, &self.plan.node, pe, &self.params, self.plan.udp);
        match self.plan.encap.iter().find(|(p, _)| p == pe) {
            None => inner,
            Some((_, sid)) => encapsulate(&inner, &self.plan.node, sid),
        }
    }
}

/// `inner` (an IPv6 packet) behind an outer IPv6 header from `src` to `sid`.
pub fn encapsulate(inner: &[u8], src: &Ipv6Addr, sid: &Ipv6Addr) -> Vec<u8> {
    use dataplane::wire::ipv4::IpProtocol;
    use dataplane::wire::ipv6::{Ipv6Packet, Ipv6Repr};
    let mut p = vec![0u8; 40 + inner.len()];
    let outer = Ipv6Repr {
        src_addr: *src,
        dst_addr: *sid,
        next_header: IpProtocol::IPV6,
        payload_len: inner.len(),
        hop_limit: 64,
        // The inner traffic class; flow label 0.
        traffic_class: Ipv6Packet::new_unchecked(inner).traffic_class(),
        flow_label: 0,
    };
    outer.emit(&mut Ipv6Packet::new_unchecked(&mut p[..40]));
    p[40..].copy_from_slice(inner);
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use dataplane::wire::checksum;
    use dataplane::wire::fann::{Packet, PacketRepr, CODE_EVENT};

    /// The FANN packet `ip` (IPv6, from the node fc00::1) to `pe`, parsed
    /// and checksum-verified.
    fn parsed(ip: &[u8], pe: &str) -> PacketRepr {
        PacketRepr::parse(&Packet::new_checked(&ip[40..]).unwrap(), &"fc00::1".parse().unwrap(), &pe.parse().unwrap(), Params::DEFAULT.icmpv6_fann_type).unwrap()
    }

    fn plan(udp: bool) -> FannPlan {
        FannPlan { node: "fc00::1".parse().unwrap(), ingress_pes: vec!["fc00::a".parse().unwrap(), "fc00::b".parse().unwrap()], encap: Vec::new(), path_ids: Vec::new(), udp, detector: DetectorConfig { node: "fc00::1".parse().unwrap(), ..Default::default() } }
    }

    #[test]
    fn link_down_reaches_every_ingress_pe_as_icmpv6() {
        let mut a = FannAgent::new(plan(false), Params::DEFAULT, &[(0, 100_000_000_000)]);
        assert!(a.poll(1, |_| 0, |_| 0, |_| 0, |_| true).is_empty());
        let pkts = a.poll(2_000_000, |_| 0, |_| 0, |_| 0, |_| false);
        assert_eq!(pkts.len(), 2);
        for (p, pe) in pkts.iter().zip(["fc00::a", "fc00::b"]) {
            assert_eq!(p[6], 58);
            assert_eq!(&p[24..40], &pe.parse::<Ipv6Addr>().unwrap().octets());
            let src: Ipv6Addr = "fc00::1".parse().unwrap();
            let r = PacketRepr::parse(&Packet::new_checked(&p[40..]).unwrap(), &src, &pe.parse().unwrap(), Params::DEFAULT.icmpv6_fann_type).unwrap();
            assert_eq!(r.code, CODE_EVENT);
            assert_eq!(r.message.event_type, dataplane::wire::fann::event::LINK_FAILURE);
            assert_eq!(r.message.originating_node, src);
        }
    }

    /// RFC 4443 s.2.4 (f), FANN draft s.6: the node's limit covers every
    /// packet it originates, all ports and PEs together.
    #[test]
    fn the_node_wide_limit_covers_every_port_and_pe() {
        let mut p = plan(false);
        p.detector.rate_pps = 1;
        p.detector.burst = 3;
        // Two ports: each detector's own bucket (burst 3) lets its event
        // through, to two PEs each: 4 packets; the node has 3 tokens, so
        // port 1's event waits (a notification goes to every PE or waits).
        let mut a = FannAgent::with_first_event_id(p, Params::DEFAULT, &[(0, 100_000_000_000), (1, 100_000_000_000)], 40);
        assert!(a.poll(1, |_| 0, |_| 0, |_| 0, |_| true).is_empty());
        let pkts = a.poll(2_000_000, |_| 0, |_| 0, |_| 0, |_| false);
        assert_eq!((pkts.len(), a.sent, a.rate_limited), (2, 2, 1));
        // A second later the node has two tokens: port 1's failure goes out.
        let pkts = a.poll(1_002_000_000, |_| 0, |_| 0, |_| 0, |_| false);
        assert_eq!((pkts.len(), a.rate_limited), (2, 1));
        let r = parsed(&pkts[1], "fc00::b");
        assert_eq!((r.code, r.message.metadata.egress_port_id, r.message.event_id), (CODE_EVENT, Some(1), 41), "one identifier sequence for the node");
        // Both links come back; one recovery fits, the other waits and
        // leaves later: the PEs are never left believing a link is down.
        let pkts = a.poll(3_002_000_000, |_| 0, |_| 0, |_| 0, |_| true);
        assert_eq!((pkts.len(), a.rate_limited), (2, 2));
        let r = parsed(&pkts[0], "fc00::a");
        assert_eq!((r.code, r.message.event_id), (dataplane::wire::fann::CODE_RECOVERY, 40));
        assert!(a.poll(3_500_000_000, |_| 0, |_| 0, |_| 0, |_| true).is_empty());
        let pkts = a.poll(5_002_000_000, |_| 0, |_| 0, |_| 0, |_| true);
        assert_eq!(pkts.len(), 2);
        let r = parsed(&pkts[1], "fc00::b");
        assert_eq!((r.code, r.message.event_subtype, r.message.event_id), (dataplane::wire::fann::CODE_RECOVERY, dataplane::wire::fann::event::LINK_FAILURE, 41));
        assert_eq!((a.sent, a.rate_limited), (8, 2));
    }

    /// Event Identifiers start at a random value, so that a restarted node
    /// does not repeat those an ingress PE remembers (s.5.1.2).
    #[test]
    fn event_identifiers_differ_from_one_start_to_the_next() {
        let first = |_: u32| {
            let mut a = FannAgent::new(plan(false), Params::DEFAULT, &[(0, 100_000_000_000)]);
            let pkts = a.poll(1, |_| 0, |_| 0, |_| 0, |_| false);
            parsed(&pkts[0], "fc00::a").message.event_id
        };
        let ids: std::collections::HashSet<u32> = (0..8).map(first).collect();
        assert!(ids.len() >= 7, "8 starts gave only {} distinct first identifiers: {ids:?}", ids.len());
    }

    #[test]
    fn microbursts_counted_by_the_worker_become_an_event_and_a_recovery() {
        let mut a = FannAgent::new(plan(false), Params::DEFAULT, &[(3, 100_000_000_000)]);
        assert_eq!(a.microburst_config(), dataplane::egress::MicroburstConfig { bytes: 1 << 20, window_ns: 100_000 });
        assert!(a.poll(1_000_000, |_| 0, |_| 0, |_| 0, |_| true).is_empty());
        // The owner counted one microburst since: one event to each PE.
        let pkts = a.poll(2_000_000, |_| 0, |_| 2_000_000, |_| 1, |_| true);
        assert_eq!(pkts.len(), 2);
        let r = parsed(&pkts[0], "fc00::a");
        assert_eq!((r.code, r.message.event_type), (CODE_EVENT, dataplane::wire::fann::event::MICROBURST));
        assert_eq!(r.message.metadata.egress_port_id, Some(3));
        // The count did not move for a window: recovery (2 MB stays below
        // the 16 MB queue-buildup threshold, so nothing else fires).
        let pkts = a.poll(3_000_000, |_| 0, |_| 0, |_| 1, |_| true);
        assert_eq!(pkts.len(), 2);
        let r = parsed(&pkts[0], "fc00::a");
        assert_eq!((r.code, r.message.event_subtype), (dataplane::wire::fann::CODE_RECOVERY, dataplane::wire::fann::event::MICROBURST));
    }

    #[test]
    fn notifications_for_a_pe_with_a_sid_are_encapsulated_toward_it() {
        let mut p = plan(false);
        p.encap = vec![("fc00::b".parse().unwrap(), "fc00:0:b::c".parse().unwrap())];
        let mut a = FannAgent::new(p, Params::DEFAULT, &[(0, 0)]);
        let pkts = a.poll(1, |_| 0, |_| 0, |_| 0, |_| false);
        assert_eq!(pkts.len(), 2);
        // fc00::a: plain; fc00::b: outer IPv6 from the node to its END.C SID.
        assert_eq!((pkts[0][6], pkts[1][6]), (58, 41));
        let (o, inner) = pkts[1].split_at(40);
        assert_eq!(o[0] >> 4, 6);
        assert_eq!(u16::from_be_bytes([o[4], o[5]]) as usize, inner.len());
        assert_eq!(&o[8..24], &"fc00::1".parse::<Ipv6Addr>().unwrap().octets(), "from the node (loopback) address");
        assert_eq!(&o[24..40], &"fc00:0:b::c".parse::<Ipv6Addr>().unwrap().octets());
        assert_eq!(((o[0] & 0x0f) << 4) | (o[1] >> 4), ((inner[0] & 0x0f) << 4) | (inner[1] >> 4), "traffic class copied");
        assert_eq!(&inner[24..40], &"fc00::b".parse::<Ipv6Addr>().unwrap().octets(), "the inner packet still goes to the PE");
        let r = parsed(inner, "fc00::b");
        assert_eq!(r.message.event_type, dataplane::wire::fann::event::LINK_FAILURE);
    }

    #[test]
    fn queue_buildup_carries_the_top_flow_and_the_path_id() {
        let mut a = FannAgent::new(plan(false), Params::DEFAULT, &[(2, 100_000_000_000)]);
        a.set_path_id(2, Some([7; 16]));
        let flow = dataplane::fann::roce_flow_id("2001:db8:1::2".parse().unwrap(), "10.0.3.7".parse().unwrap(), 49152);
        assert!(a.poll_with_flows(1_000_000, |_| 0, |_| 0, |_| 0, |_| true, |_| Some(flow)).is_empty());
        let pkts = a.poll_with_flows(2_000_000, |_| 0, |_| 17 << 20, |_| 0, |_| true, |_| Some(flow));
        assert_eq!(pkts.len(), 2, "queue buildup to both PEs");
        let r = parsed(&pkts[0], "fc00::a");
        assert_eq!(r.message.event_type, dataplane::wire::fann::event::QUEUE_BUILDUP);
        let f = r.message.metadata.flow_id.expect("Flow ID");
        assert_eq!((f.src, f.dst, f.dst_port, f.protocol), ("2001:db8:1::2".parse().unwrap(), "::ffff:10.0.3.7".parse().unwrap(), 4791, 17));
        assert_eq!(r.message.metadata.path_id, Some([7; 16]));
    }

    /// s.4.1: a failure notification says which traffic it affects: the
    /// flow with the most bytes queued for the port, and its Path ID.
    #[test]
    fn link_failure_names_the_affected_flow() {
        let mut a = FannAgent::new(plan(false), Params::DEFAULT, &[(2, 100_000_000_000)]);
        a.set_path_id(2, Some([9; 16]));
        let flow = dataplane::fann::roce_flow_id("2001:db8:1::2".parse().unwrap(), "2001:db8:3::7".parse().unwrap(), 49152);
        assert!(a.poll_with_flows(1, |_| 0, |_| 0, |_| 0, |_| true, |_| Some(flow)).is_empty());
        let pkts = a.poll_with_flows(2, |_| 0, |_| 0, |_| 0, |_| false, |_| Some(flow));
        let r = parsed(&pkts[0], "fc00::a");
        assert_eq!((r.code, r.message.event_type), (CODE_EVENT, dataplane::wire::fann::event::LINK_FAILURE));
        assert_eq!(r.message.metadata.link_down, Some(true));
        assert_eq!(r.message.metadata.flow_id, Some(flow));
        assert_eq!(r.message.metadata.path_id, Some([9; 16]));
    }

    /// The NICs' error and loss counters: the first reading is the
    /// baseline (errors from before the start make no event); errors
    /// since then at the configured rate make a Signal degradation event
    /// to every PE, losses a Performance degradation event.
    #[test]
    fn nic_errors_and_losses_are_announced() {
        use dataplane::wire::fann::event;
        let mut a = FannAgent::new(plan(false), Params::DEFAULT, &[(2, 100_000_000_000)]);
        let w = dataplane::fann::RATE_WINDOW_NS;
        assert!(a.poll_errors(1, |_| Some((1_000_000, 1_000_000))).is_empty(), "baseline");
        assert!(a.poll_errors(w / 2, |_| None).is_empty(), "a failed read is skipped");
        assert!(a.poll_errors(w + 1, |_| Some((1_000_000, 1_000_000))).is_empty(), "no new errors");
        let pkts = a.poll_errors(2 * w + 1, |_| Some((1_000_003, 1_000_050)));
        assert_eq!(pkts.len(), 4, "two events to both PEs");
        let mut got: Vec<(u8, Option<u32>, Option<u32>)> = pkts
            .iter()
            .map(|p| {
                let to = Ipv6Addr::from(<[u8; 16]>::try_from(&p[24..40]).unwrap()).to_string();
                let r = parsed(p, &to);
                (r.message.event_type, r.message.metadata.signal_degradation, r.message.metadata.packet_loss)
            })
            .collect();
        got.sort();
        got.dedup();
        assert_eq!(got, vec![(event::PERFORMANCE_DEGRADATION, None, Some(50)), (event::SIGNAL_DEGRADATION, Some(3), None)]);
    }

    /// A link failure that finds the port's queue empty names the flow
    /// last seen there (within a second) as the affected traffic.
    #[test]
    fn link_failure_names_the_last_flow_seen_when_the_queue_is_empty() {
        let flow = dataplane::fann::roce_flow_id("2001:db8:1::2".parse().unwrap(), "2001:db8:3::7".parse().unwrap(), 49152);
        for (gap, named) in [(500_000_000u64, true), (2_000_000_000, false)] {
            let mut a = FannAgent::new(plan(false), Params::DEFAULT, &[(2, 100_000_000_000)]);
            assert!(a.poll_with_flows(1, |_| 0, |_| 0, |_| 0, |_| true, |_| Some(flow)).is_empty());
            let pkts = a.poll_with_flows(1 + gap, |_| 0, |_| 0, |_| 0, |_| false, |_| None);
            let r = parsed(&pkts[0], "fc00::a");
            assert_eq!(r.message.event_type, dataplane::wire::fann::event::LINK_FAILURE);
            assert_eq!(r.message.metadata.flow_id, named.then_some(flow), "{gap} ns after it was seen");
        }
    }

    #[test]
    fn udp_variant_has_a_valid_checksum() {
        let mut a = FannAgent::new(plan(true), Params::DEFAULT, &[(0, 0)]);
        let pkts = a.poll(1, |_| 0, |_| 0, |_| 0, |_| false);
        let p = &pkts[0];
        assert_eq!(p[6], 17);
        assert_eq!(u16::from_be_bytes([p[42], p[43]]), Params::DEFAULT.fann_udp_port);
        let s = checksum::combine(checksum::pseudo_v6(p[8..24].try_into().unwrap(), p[24..40].try_into().unwrap(), 17, (p.len() - 40) as u32), checksum::sum(&p[40..]));
        assert_eq!(checksum::fold(s), 0xffff);
    }
}
