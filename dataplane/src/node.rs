//! The egress side of one port as one unit: the deep-buffer queue with its
//! shaper ([`crate::egress`]) and, when configured, the congestion-aware node
//! ([`crate::congestion`]). The DPDK worker drives it with mbufs; the
//! simulation harness drives the same code with byte buffers.

use crate::classify;
use crate::congestion::{build_cnp, CnpFormat, CnpRequest, CongestionPort, FlowId, PortParams, RoceKey};
use crate::counters::{Drop, Local, WorkerCounters};
use crate::egress::{EgressConfig, EgressQueue, Queued};
use crate::packet::PacketBuffer;
use crate::pipeline::Pipeline;
use crate::wire::ipv4::IpProtocol;
use crate::wire::ipv6::{Ipv6Packet, Ipv6Repr};
use crate::wire::lhcnp::Action;
use crate::wire::params::Params;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Configuration of a port's congestion-aware node.
#[derive(Debug, Clone)]
pub struct CongestionSpec {
    pub params: PortParams,
    /// CNP source addresses (draft-tian s.9: only the router's configured
    /// address); None: the address of the interface toward the source.
    pub source_v4: Option<Ipv4Addr>,
    pub source_v6: Option<Ipv6Addr>,
    /// As a WAN P node inside SRv6 tunnels: the ingress PE's END.E SID.
    /// CNPs are then encapsulated in an outer IPv6 header to this SID
    /// (draft-hu-acn-rocev2 s.4.2), which decapsulates them and routes them
    /// to the sender in the DC. None: CNPs go to the source directly.
    pub end_e_sid: Option<Ipv6Addr>,
    /// Per ingress PE (`[[wan_notify]]`): the senders behind it and its
    /// END.C / END.E SID. The longest prefix containing the flow's source
    /// wins; `end_e_sid` applies to the other sources.
    pub notify_sids: Vec<(ipnet::IpNet, Ipv6Addr)>,
    /// Per ingress PE (`[[wan_notify]] tunnel_sources`): the outer IPv6
    /// source addresses of its SRv6 tunnels and its END.C / END.E SID. A
    /// flow whose packets arrive in a tunnel from one of them has its CNPs
    /// sent to that PE's SID: the PE it came through (draft-hu-acn-rocev2
    /// s.4.1, s.4.2: "send it back to the ingress PE"), before any
    /// `notify_sids` rule. The longest prefix containing the tunnel's
    /// source wins.
    pub tunnel_pes: Vec<(ipnet::Ipv6Net, Ipv6Addr)>,
    /// Configured source QPs: (source, destination, DestQP, source QP).
    pub source_qps: Vec<(IpAddr, IpAddr, u32, u32)>,
    /// CNP formats by source prefix (the longest containing a flow's source
    /// wins; `params.default_format` for the others).
    pub source_formats: Vec<(ipnet::IpNet, CnpFormat)>,
    /// The node's AH SAs (`[[cnp_auth]]`, draft-tian s.9), shared by every
    /// port: ICMPv6 CNPs to the sources they cover carry an AH.
    pub auth: std::sync::Arc<crate::congestion::CnpAuth>,
}

impl CongestionSpec {
    /// The SID a CNP to `to` is encapsulated toward, if any, for a flow
    /// whose tunnel tag is `via` ([`CongestionSpec::tunnel_tag`]).
    pub fn notify_sid(&self, to: IpAddr, via: u16) -> Option<Ipv6Addr> {
        if let Some(&(_, sid)) = usize::from(via).checked_sub(1).and_then(|i| self.tunnel_pes.get(i)) {
            return Some(sid);
        }
        self.notify_sids.iter().filter(|(p, _)| p.contains(&to)).max_by_key(|(p, _)| p.prefix_len()).map(|(_, s)| *s).or(self.end_e_sid)
    }

    /// The tunnel tag of a packet that came in a tunnel from `outer_src`:
    /// 1 + the index in `tunnel_pes` of the longest prefix containing it,
    /// or [`TUNNEL_FROM_UNKNOWN`].
    pub fn tunnel_tag(&self, outer_src: Ipv6Addr) -> u16 {
        self.tunnel_pes
            .iter()
            .enumerate()
            .filter(|(_, (p, _))| p.contains(&outer_src))
            .max_by_key(|(_, (p, _))| p.prefix_len())
            .map_or(TUNNEL_FROM_UNKNOWN, |(i, _)| i as u16 + 1)
    }
}

/// The tunnel tag of a flow last seen in a tunnel from a source that no
/// `tunnel_pes` entry covers: its CNPs follow the `notify_sids` rules.
pub const TUNNEL_FROM_UNKNOWN: u16 = u16::MAX;
/// At most this many `tunnel_pes` (the tags are 16 bits, one reserved).
pub const MAX_TUNNEL_PES: usize = u16::MAX as usize - 1;

pub struct EgressPort<P> {
    pub queue: EgressQueue<P, FlowId>,
    pub cong: Option<CongestionPort>,
    pub spec: Option<CongestionSpec>,
    /// The last tunnel source tagged, and its tag (a port's tunnelled
    /// packets come from a few PEs, in runs).
    last_tunnel: ([u8; 16], u16),
}

impl<P: PacketBuffer> EgressPort<P> {
    pub fn new(cfg: EgressConfig, spec: Option<CongestionSpec>) -> Self {
        let cong = spec.as_ref().map(|s| {
            let mut c = CongestionPort::new(s.params);
            // Room for the configured ones and as many added at run time.
            c.reserve_source_qps(2 * s.source_qps.len() + 1024);
            for &(src, dst, dqp, sqp) in &s.source_qps {
                c.set_source_qp(src, dst, dqp, sqp);
            }
            c.set_source_formats(&s.source_formats);
            c
        });
        EgressPort { queue: EgressQueue::new(cfg), cong, spec, last_tunnel: ([0; 16], 0) }
    }

    /// Honour the received PAUSE / PFC frames `port` records
    /// ([`crate::pfcrx`]).
    pub fn with_pfc(mut self, port: std::sync::Arc<crate::pfcrx::PortPause>) -> Self {
        self.queue = self.queue.with_pfc(port);
        self
    }

    /// The worker's clock for the congestion stage
    /// ([`CongestionPort::set_clock`]).
    pub fn with_clock(mut self, clock: crate::ReadClock) -> Self {
        if let Some(c) = self.cong.as_mut() {
            c.set_clock(clock);
        }
        self
    }

    /// Configure (Some) or forget (None) the source QP of a flow at run
    /// time.
    pub fn set_source_qp(&mut self, src: IpAddr, dst: IpAddr, dest_qp: u32, src_qp: Option<u32>) {
        self.flush();
        if let Some(c) = self.cong.as_mut() {
            match src_qp {
                Some(q) => c.set_source_qp(src, dst, dest_qp, q),
                None => c.clear_source_qp(src, dst, dest_qp),
            }
        }
    }

    /// Replace the CNP formats by source prefix at run time.
    pub fn set_source_formats(&mut self, f: &[(ipnet::IpNet, CnpFormat)]) {
        self.flush();
        if let Some(c) = self.cong.as_mut() {
            c.set_source_formats(f);
        }
        if let Some(s) = self.spec.as_mut() {
            s.source_formats = f.to_vec();
        }
    }

    /// New thresholds / RTT_est / policy at runtime.
    pub fn set_params(&mut self, p: PortParams) {
        self.flush();
        if let Some(c) = self.cong.as_mut() {
            c.set_params(p);
        }
        if let Some(s) = self.spec.as_mut() {
            s.params = p;
        }
    }

    /// Admit a data packet: the congestion stage decides on CE marking (QD >
    /// K_min, ECN-capable packets only, outer header) and learns its flow;
    /// a full queue tail-drops.
    ///
    /// The flow lookups are batched: they happen at the next `dequeue`,
    /// `sent`, `requeue`, `poll`, `observe_roce`, `set_params`, `drain` or
    /// [`EgressPort::flush`] (or when [`crate::congestion::MAX_PENDING`]
    /// packets wait), in arrival order and with the time of each `admit`,
    /// so the flow state is the same as with a lookup per `admit` by then
    /// (CE marking and the monitoring counters are immediate).
    #[inline]
    pub fn admit(&mut self, mut m: P, now: u64, counters: &WorkerCounters) -> Result<(), (P, Drop)> {
        let len = m.pkt_len() as u32;
        if !self.queue.has_room(len) {
            self.queue.stats.tail_drops += 1;
            self.queue.stats.tail_drop_bytes += u64::from(len);
            if let Some(c) = self.cong.as_mut() {
                // The flow still sent it (its arrival rate counts it).
                if let Some(r) = classify::roce_fast(m.data()) {
                    c.on_tail_drop(&r.roce, len, now);
                }
            }
            return Err((m, Drop::QueueTailDrop));
        }
        if let Some(c) = self.cong.as_mut() {
            if c.pending_full() {
                Self::sync(c, &mut self.queue);
            }
            let r = classify::roce_fast(m.data());
            let ecn_capable = match &r {
                Some(x) => x.ecn != 0,
                None => classify::ecn(m.data()).map(|e| e != 0).unwrap_or(false),
            };
            let pos = self.queue.data_len() as u32;
            let mark = c.on_enqueue_deferred(r.as_ref().map(|x| &x.roce), len, ecn_capable, self.queue.depth_bytes() + u64::from(len), now, pos);
            // Only tunnelled packets pay for the tag (plain ones, one test).
            if let Some(x) = r.as_ref().filter(|x| x.tunnelled) {
                let via = Self::tunnel_tag(&mut self.last_tunnel, self.spec.as_ref(), m.data());
                c.tag_last(&x.roce, via);
            }
            if mark && classify::set_ce(m.data_mut()) {
                counters.local(Local::CeMarked);
            }
        }
        // Without PFC the packet is not read again (`data()` is not free).
        let class = if self.queue.has_pfc() { self.queue.class_of(m.data()) } else { 0 };
        // `has_room` held above.
        self.queue.enqueue_admitted(Queued { pkt: m, len, flow: None, class });
        Ok(())
    }

    /// The tunnel tag of a RoCEv2 packet in an IPv6 tunnel
    /// ([`classify::RoceFast::tunnelled`]): by its outer source address; 0
    /// when the port tags no tunnels.
    #[inline(never)]
    fn tunnel_tag(last: &mut ([u8; 16], u16), spec: Option<&CongestionSpec>, frame: &[u8]) -> u16 {
        let Some(spec) = spec.filter(|s| !s.tunnel_pes.is_empty()) else { return 0 };
        let Some(src) = classify::l3_offset(frame).and_then(|(l3, _)| frame.get(l3 + 8..l3 + 24)).and_then(|a| <[u8; 16]>::try_from(a).ok()) else {
            return TUNNEL_FROM_UNKNOWN;
        };
        if last.1 == 0 || last.0 != src {
            *last = (src, spec.tunnel_tag(Ipv6Addr::from(src)));
        }
        last.1
    }

    /// Finish the batched flow lookups of admitted packets (`admit`): the
    /// congestion stage's flow state and the queued packets' flow slots are
    /// up to date afterwards.
    #[inline]
    pub fn flush(&mut self) {
        if let Some(c) = self.cong.as_mut() {
            if c.has_pending() {
                Self::sync(c, &mut self.queue);
            }
        }
    }

    #[inline]
    fn sync(c: &mut CongestionPort, q: &mut EgressQueue<P, FlowId>) {
        c.take_resolved(|pos, flow| q.set_flow(pos as usize, flow));
    }

    /// A packet for this port that another worker dropped because the
    /// hand-off ring into this port's queue was full: a RoCEv2 data packet
    /// counts for its flow's arrival rate as a tail drop does.
    pub fn handoff_dropped(&mut self, roce: &RoceKey, len: u32, now: u64) {
        if let Some(c) = self.cong.as_mut() {
            c.on_tail_drop(roce, len, now);
        }
    }

    /// Admit a reply or notification ahead of the data queue.
    #[inline]
    pub fn admit_priority(&mut self, m: P) -> Result<(), (P, Drop)> {
        let len = m.pkt_len() as u32;
        let class = if self.queue.has_pfc() { self.queue.control_class_of(m.data()) } else { crate::egress::NEVER_HELD };
        self.queue.enqueue_priority_as(m, len, class).map_err(|m| (m, Drop::PriorityQueueFull))
    }

    /// What the shaper lets go now: `out(pkt, len, flow, priority)`. Call
    /// [`EgressPort::sent`] for each packet the NIC took and
    /// [`EgressPort::requeue`] for each it refused.
    #[inline]
    pub fn dequeue(&mut self, now: u64, max: usize, mut out: impl FnMut(P, u32, Option<FlowId>, bool)) -> usize {
        self.flush();
        match self.cong.as_ref() {
            None => self.queue.dequeue_ready(now, max, out),
            Some(c) => self.queue.dequeue_ready(now, max, |p, len, flow, prio| {
                // `sent` will update the flow's entry.
                if let Some(f) = flow {
                    c.prefetch_flow(f);
                }
                out(p, len, flow, prio)
            }),
        }
    }

    /// A data packet left the port: its bytes no longer count for its flow.
    #[inline(always)]
    pub fn sent(&mut self, flow: Option<FlowId>, len: u32, now: u64) {
        self.flush();
        if let Some(c) = self.cong.as_mut() {
            c.on_dequeue(flow, len, self.queue.depth_bytes(), now);
        }
    }

    /// Put back what the NIC refused (call in reverse order to keep order).
    #[inline]
    pub fn requeue(&mut self, p: P, len: u32, flow: Option<FlowId>, priority: bool) {
        self.flush();
        if priority {
            let class = if self.queue.has_pfc() { self.queue.control_class_of(p.data()) } else { crate::egress::NEVER_HELD };
            self.queue.requeue_priority_front(p, len, class);
        } else {
            let class = if self.queue.has_pfc() { self.queue.class_of(p.data()) } else { 0 };
            self.queue.requeue_front(Queued { pkt: p, len, flow, class });
        }
    }

    /// A received RoCEv2 packet (parsed once for all ports with
    /// [`classify::roce_meta`]): responses and standard CNPs
    /// ([`RoceInfo::teaches_source_qp`](crate::congestion::RoceInfo::teaches_source_qp))
    /// teach the congestion stage the source QPs of forward flows.
    #[inline]
    pub fn observe_roce(&mut self, meta: &classify::RoceMeta, now: u64) {
        self.observe_response(&meta.info, now);
    }

    /// [`observe_roce`](Self::observe_roce) for a response or CNP another
    /// worker saw and handed over.
    pub fn observe_response(&mut self, info: &crate::congestion::RoceInfo, now: u64) {
        if self.cong.is_some() && info.teaches_source_qp() {
            self.flush();
            if let Some(c) = self.cong.as_mut() {
                c.on_reverse(info, now);
            }
        }
    }

    /// Second-level triggers: the Long-haul CNPs due now.
    #[inline]
    pub fn poll(&mut self, now: u64, out: &mut Vec<CnpRequest>) {
        self.flush();
        if let Some(c) = self.cong.as_mut() {
            c.poll(self.queue.depth_bytes(), now, out);
        }
    }

    /// Build the CNP for `r` into the empty buffer `m` and route it toward
    /// the flow's source (FIB, neighbour, Ethernet/VLAN header). Returns the
    /// port to send it on; counts it by action.
    pub fn build_cnp_packet(&self, pipeline: &mut Pipeline, wire: &Params, r: &CnpRequest, m: &mut P, now: u64) -> Result<u16, Drop> {
        let spec = self.spec.as_ref().ok_or(Drop::CnpBuildFailed)?;
        let sid = spec.notify_sid(r.to, r.via);
        // The CNP's source: the configured one, else an address of the
        // interface toward the sender, else (a P node inside the SRv6 WAN,
        // whose CNP goes in a tunnel to the ingress PE's END.E SID and
        // which needs no route to the DC, draft-hu s.4.2) of the interface
        // toward the SID.
        let toward = |a: IpAddr| pipeline.egress_iface(a).or_else(|| sid.and_then(|sid| pipeline.egress_iface(IpAddr::V6(sid))));
        let src: IpAddr = match r.to {
            IpAddr::V4(a) => spec.source_v4.or_else(|| toward(r.to).and_then(|i| i.v4_for(a))).map(IpAddr::V4).ok_or(Drop::NoRoute)?,
            IpAddr::V6(a) => spec.source_v6.or_else(|| toward(r.to).map(|i| i.v6_for(a))).map(IpAddr::V6).ok_or(Drop::NoRoute)?,
        };
        if !m.set_len(14 + 512) {
            return Err(Drop::NoHeadroom);
        }
        let mut n = build_cnp(r, src, wire, spec.params.zero_metrics, &mut m.data_mut()[14..]).map_err(|_| Drop::CnpBuildFailed)?;
        if let (IpAddr::V6(to), false) = (r.to, spec.auth.is_empty()) {
            if let Some(sa) = spec.auth.for_destination(to) {
                if r.format == CnpFormat::Icmpv6 {
                    // Never sent unauthenticated once the numbers run out.
                    let seq = sa.take_seq().ok_or(Drop::CnpAhSeqExhausted)?;
                    n = crate::wire::ah::protect_ipv6(&mut m.data_mut()[14..], n, &sa.key, seq).map_err(|_| Drop::CnpBuildFailed)?;
                    pipeline.counters.local(Local::CnpAhProtected);
                } else {
                    pipeline.counters.local(Local::CnpRoceUnauthenticated);
                }
            }
        }
        m.set_len(14 + n);
        let to = match sid {
            None => r.to,
            Some(sid) => {
                // Outer IPv6 (next header 41 for an IPv6 CNP, 4 for IPv4),
                // from our address toward the ingress PE's END.E SID.
                let outer_src = spec.source_v6.or_else(|| pipeline.egress_iface(IpAddr::V6(sid)).map(|i| i.v6_for(sid))).ok_or(Drop::NoRoute)?;
                if n + 40 > usize::from(u16::MAX) || !m.prepend(40) {
                    return Err(Drop::NoHeadroom);
                }
                let d = m.data_mut();
                d.copy_within(40..54, 0);
                // The inner packet's traffic class, as every tunnel
                // notification gets (the CNP's DSCP keeps its class on the
                // WAN; ECN: a CNP is Not-ECT, RFC 6040 s.4.1).
                let inner_tc = if r.to.is_ipv4() { d[54 + 1] } else { (d[54] & 0x0f) << 4 | d[55] >> 4 };
                let outer = Ipv6Repr {
                    src_addr: outer_src,
                    dst_addr: sid,
                    next_header: if r.to.is_ipv4() { IpProtocol::IPV4 } else { IpProtocol::IPV6 },
                    payload_len: n,
                    hop_limit: 64,
                    traffic_class: inner_tc,
                    flow_label: 0,
                };
                outer.emit(&mut Ipv6Packet::new_unchecked(&mut d[14..54]));
                IpAddr::V6(sid)
            }
        };
        // PCP 6: notifications travel in a high-priority class.
        let port = pipeline.emit_ip(m, to, 6, now)?;
        pipeline.counters.local(match r.info.action {
            Action::Notify => Local::CnpNotify,
            Action::RateReduce => Local::CnpRateReduce,
            Action::Pause => Local::CnpPause,
            Action::Resume => Local::CnpResume,
        });
        Ok(port)
    }

    /// Empty the queue (shutdown).
    pub fn drain(&mut self, f: impl FnMut(P)) {
        self.flush();
        self.queue.drain(f);
    }

    /// Empty the queue (shutdown): `f(pkt, len, priority)`, the priority
    /// queue's frames first.
    pub fn drain_split(&mut self, mut f: impl FnMut(P, u32, bool)) {
        self.flush();
        self.queue.drain_with(|p, len, _, prio| f(p, len, prio));
    }

    /// Empty the queue, the port's link being down (a router drops what
    /// it cannot send rather than send it seconds late once the link is
    /// back, as Linux resets an interface's queue on carrier loss): every
    /// packet goes to `f`; the data leave their flows as sent ones do, so
    /// the congestion stage sees the queue empty. Returns how many.
    pub fn discard(&mut self, now: u64, mut f: impl FnMut(P)) -> u64 {
        self.flush();
        let mut depth = self.queue.depth_bytes();
        let mut n = 0;
        let cong = &mut self.cong;
        self.queue.drain_with(|p, len, flow, prio| {
            n += 1;
            if !prio {
                depth = depth.saturating_sub(u64::from(len));
                if let Some(c) = cong.as_mut() {
                    c.on_dequeue(flow, len, depth, now);
                }
            }
            f(p);
        });
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::congestion::CnpFormat;
    use crate::counters::WorkerCounters;
    use crate::packet::VecPacket;
    use crate::pipeline::PipelineConfig;
    use crate::tables::{Fib, Interface, NeighSource, Neighbours, NextHop, Topology};
    use crate::wire::lhcnp::{CnpInfo, MetricType};
    use std::sync::Arc;

    fn pipeline() -> Pipeline {
        let mut wan = Interface::new("wan", 0, None, [2, 0, 0, 0, 0, 1], 1500);
        wan.v6.push("fc00:1::1/64".parse().unwrap());
        let topo = Arc::new(Topology::new(vec![wan]));
        let mut fib = Fib::default();
        fib.insert6("::/0".parse().unwrap(), NextHop { iface: 0, gateway: Some("fc00:1::2".parse().unwrap()) });
        let mut n = Neighbours::default();
        n.learn(0, "fc00:1::2".parse().unwrap(), [2, 0, 0, 0, 0, 2], NeighSource::Static);
        Pipeline::new(topo, Arc::new(fib), Arc::new(n), Arc::new(WorkerCounters::default()), PipelineConfig::default())
    }

    fn req() -> CnpRequest {
        CnpRequest {
            to: "2001:db8:1::2".parse().unwrap(),
            flow_dst: "2001:db8:3::2".parse().unwrap(),
            dest_qp: 0x100,
            src_qp: Some(0x55),
            info: CnpInfo { congestion_level: 180, action: Action::RateReduce, parameter: 30, source_qp: 0x55, metric_type: MetricType::QueueDepthKb, metric_value: 130000 },
            format: CnpFormat::Icmpv6,
            via: 0,
        }
    }

    #[test]
    fn icmpv6_cnps_to_covered_sources_carry_an_ah_that_verifies() {
        use crate::congestion::{CnpAuth, CnpSa};
        use crate::counters::Snapshot;
        use crate::wire::ah::{self, AhKey, Algorithm};
        let mut pl = pipeline();
        let key = AhKey::new(0x4242, Algorithm::HmacSha256_128, &[7; 32]).unwrap();
        let other = AhKey::new(0x4343, Algorithm::HmacSha512_256, &[8; 64]).unwrap();
        let auth = Arc::new(CnpAuth::new(vec![CnpSa::new("2001:db8:1::/48".parse().unwrap(), key.clone()), CnpSa::new("2001:db8:2::/48".parse().unwrap(), other)]));
        let spec = |end_e: Option<Ipv6Addr>| CongestionSpec { params: PortParams::default(), source_v4: None, source_v6: None, end_e_sid: end_e, notify_sids: Vec::new(), tunnel_pes: Vec::new(), source_qps: Vec::new(), source_formats: Vec::new(), auth: auth.clone() };
        let e: EgressPort<VecPacket> = EgressPort::new(EgressConfig::default(), Some(spec(None)));
        let lookup = |s: u32| (s == 0x4242).then_some(&key);
        for seq in 1..=3u32 {
            let mut m = VecPacket::from_bytes(&[]);
            e.build_cnp_packet(&mut pl, &Params::DEFAULT, &req(), &mut m, 1).unwrap();
            let ip = &m.data()[14..];
            let v = ah::verify_ipv6(ip, lookup).expect("the ICV verifies");
            assert_eq!((v.spi, v.seq, v.next_header, v.payload_at), (0x4242, seq, 58, 72), "numbers count up per SA");
            // The same packet without its AH is the CNP, checksum intact.
            let mut plain = [&ip[..40], &ip[72..]].concat();
            plain[4..6].copy_from_slice(&((ip.len() - 72) as u16).to_be_bytes());
            plain[6] = 58;
            let (_, info) = crate::congestion::parse_cnp(&plain, &Params::DEFAULT).expect("the CNP behind the AH");
            assert_eq!(info, req().info);
        }
        let count = |pl: &Pipeline, l: Local| Snapshot::sum([&*pl.counters]).local_count(l);
        assert_eq!(count(&pl, Local::CnpAhProtected), 3);
        // Inside the tunnel to END.E the inner CNP keeps its AH.
        let e2: EgressPort<VecPacket> = EgressPort::new(EgressConfig::default(), Some(spec(Some("fc00:99::e".parse().unwrap()))));
        let mut m = VecPacket::from_bytes(&[]);
        e2.build_cnp_packet(&mut pl, &Params::DEFAULT, &req(), &mut m, 1).unwrap();
        assert_eq!(m.data()[14 + 6], 41);
        assert_eq!(ah::verify_ipv6(&m.data()[54..], lookup).map(|v| v.seq), Ok(4), "one counter for the SA, whichever port or tunnel");
        // Sources no SA covers, and the RoCEv2 format, go without.
        let mut m = VecPacket::from_bytes(&[]);
        e.build_cnp_packet(&mut pl, &Params::DEFAULT, &CnpRequest { to: "2001:db8:9::2".parse().unwrap(), ..req() }, &mut m, 1).unwrap();
        assert_eq!(m.data()[14 + 6], 58);
        let mut m = VecPacket::from_bytes(&[]);
        e.build_cnp_packet(&mut pl, &Params::DEFAULT, &CnpRequest { format: CnpFormat::Roce, ..req() }, &mut m, 1).unwrap();
        assert_eq!(m.data()[14 + 6], 17);
        assert_eq!(count(&pl, Local::CnpRoceUnauthenticated), 1);
        // An SA whose numbers are used up sends nothing rather than an
        // unauthenticated CNP.
        auth.sas()[0].set_next_seq(u64::from(u32::MAX) + 1);
        let mut m = VecPacket::from_bytes(&[]);
        assert_eq!(e.build_cnp_packet(&mut pl, &Params::DEFAULT, &req(), &mut m, 1), Err(Drop::CnpAhSeqExhausted));
        assert_eq!(count(&pl, Local::CnpAhProtected), 4);
    }

    #[test]
    fn p_node_encapsulates_cnp_toward_end_e_sid() {
        let mut pl = pipeline();
        let spec = CongestionSpec { params: PortParams::default(), source_v4: None, source_v6: None, end_e_sid: Some("fc00:99::e".parse().unwrap()), notify_sids: Vec::new(), tunnel_pes: Vec::new(), source_qps: Vec::new(), source_formats: Vec::new(), auth: Default::default() };
        let e: EgressPort<VecPacket> = EgressPort::new(EgressConfig::default(), Some(spec));
        let mut m = VecPacket::from_bytes(&[]);
        let port = e.build_cnp_packet(&mut pl, &Params::DEFAULT, &req(), &mut m, 1).unwrap();
        assert_eq!(port, 0);
        let d = m.data();
        assert_eq!(&d[0..6], &[2, 0, 0, 0, 0, 2], "to the gateway");
        assert_eq!(&d[12..14], &[0x86, 0xdd]);
        let outer = &d[14..54];
        assert_eq!(outer[6], 41, "IPv6 in IPv6");
        assert_eq!(&outer[8..24], &"fc00:1::1".parse::<Ipv6Addr>().unwrap().octets(), "from our address");
        assert_eq!(&outer[24..40], &"fc00:99::e".parse::<Ipv6Addr>().unwrap().octets(), "to END.E");
        let inner = &d[54..];
        assert_eq!(usize::from(u16::from_be_bytes([outer[4], outer[5]])), inner.len());
        assert_eq!(inner[0] >> 4, 6);
        assert_eq!(&inner[24..40], &"2001:db8:1::2".parse::<Ipv6Addr>().unwrap().octets(), "inner CNP to the RoCEv2 source");
        assert_eq!(inner[40], Params::DEFAULT.icmpv6_lhcnp_type);
        // ICMPv6 checksum of the inner CNP is valid.
        let m6 = &inner[40..];
        let s = crate::wire::checksum::combine(crate::wire::checksum::pseudo_v6(inner[8..24].try_into().unwrap(), inner[24..40].try_into().unwrap(), 58, m6.len() as u32), crate::wire::checksum::sum(m6));
        assert_eq!(crate::wire::checksum::fold(s), 0xffff);
        assert_eq!((outer[0] & 0x0f, outer[1] >> 4), (inner[0] & 0x0f, inner[1] >> 4), "traffic class copied");
        // A RoCEv2-format CNP keeps its DSCP in the outer header too.
        let r = CnpRequest { format: CnpFormat::Roce, ..req() };
        let mut m = VecPacket::from_bytes(&[]);
        e.build_cnp_packet(&mut pl, &Params::DEFAULT, &r, &mut m, 1).unwrap();
        let d = m.data();
        let (outer, inner) = (&d[14..54], &d[54..]);
        let inner_tc = (inner[0] & 0x0f) << 4 | inner[1] >> 4;
        assert_eq!(inner_tc >> 2, 48, "the CNP class (DSCP 48)");
        assert_eq!((outer[0] & 0x0f) << 4 | outer[1] >> 4, inner_tc, "outer traffic class");
    }

    #[test]
    fn per_ingress_pe_sid_by_the_sender_prefix() {
        let mut pl = pipeline();
        let spec = CongestionSpec {
            params: PortParams::default(),
            source_v4: None,
            source_v6: None,
            end_e_sid: Some("fc00:99::e".parse().unwrap()),
            notify_sids: vec![("2001:db8::/32".parse().unwrap(), "fc00:a::c".parse().unwrap()), ("2001:db8:1::/48".parse().unwrap(), "fc00:b::e".parse().unwrap()), ("10.0.0.0/8".parse().unwrap(), "fc00:c::e".parse().unwrap())],
            tunnel_pes: Vec::new(),
            source_qps: Vec::new(),
            source_formats: Vec::new(),
            auth: Default::default(),
        };
        // Longest prefix wins; other sources fall back to end_e_sid.
        assert_eq!(spec.notify_sid("2001:db8:1::2".parse().unwrap(), 0), Some("fc00:b::e".parse().unwrap()));
        assert_eq!(spec.notify_sid("2001:db8:7::2".parse().unwrap(), 0), Some("fc00:a::c".parse().unwrap()));
        assert_eq!(spec.notify_sid("10.1.2.3".parse().unwrap(), 0), Some("fc00:c::e".parse().unwrap()));
        assert_eq!(spec.notify_sid("2001:db9::1".parse().unwrap(), 0), Some("fc00:99::e".parse().unwrap()));
        let e: EgressPort<VecPacket> = EgressPort::new(EgressConfig::default(), Some(spec));
        let mut m = VecPacket::from_bytes(&[]);
        e.build_cnp_packet(&mut pl, &Params::DEFAULT, &req(), &mut m, 1).unwrap();
        let d = m.data();
        assert_eq!(d[14 + 6], 41);
        assert_eq!(&d[14 + 24..14 + 40], &"fc00:b::e".parse::<Ipv6Addr>().unwrap().octets(), "the SID of the PE behind which 2001:db8:1::2 sits");
        // Without a match and without end_e_sid: plain.
        let spec = CongestionSpec { params: PortParams::default(), source_v4: None, source_v6: None, end_e_sid: None, notify_sids: vec![("2001:db8:2::/48".parse().unwrap(), "fc00:a::c".parse().unwrap())], tunnel_pes: Vec::new(), source_qps: Vec::new(), source_formats: Vec::new(), auth: Default::default() };
        let e: EgressPort<VecPacket> = EgressPort::new(EgressConfig::default(), Some(spec));
        let mut m = VecPacket::from_bytes(&[]);
        e.build_cnp_packet(&mut pl, &Params::DEFAULT, &req(), &mut m, 1).unwrap();
        assert_eq!(m.data()[14 + 6], 58, "ICMPv6 straight to the source");
    }

    fn fann_frame(hop: u8) -> Vec<u8> {
        use crate::wire::fann::{Metadata, MessageRepr, PacketRepr};
        let src: Ipv6Addr = "fc00:9::1".parse().unwrap();
        let dst: Ipv6Addr = "2001:db8::5".parse().unwrap();
        let m = MessageRepr { hop_limit: hop, event_type: 2, event_subtype: 3, event_id: 7, timestamp: 1, originating_node: src, metadata: Metadata { egress_port_id: Some(1), ..Default::default() } };
        let body = PacketRepr { msg_type: Params::DEFAULT.icmpv6_fann_type, code: 0, message: m }.to_bytes(&src, &dst);
        let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 9, 0x86, 0xdd, 0x60, 0, 0, 0];
        f.extend_from_slice(&(body.len() as u16).to_be_bytes());
        f.extend_from_slice(&[58, 64]);
        f.extend_from_slice(&src.octets());
        f.extend_from_slice(&dst.octets());
        f.extend_from_slice(&body);
        f
    }

    #[test]
    fn forwarding_decrements_the_fann_hop_limit() {
        use crate::pipeline::Verdict;
        let mut pl = pipeline();
        let mut p = VecPacket::from_bytes(&fann_frame(3));
        assert_eq!(pl.process(&mut p, 0, 1), Verdict::Tx(0));
        let f = p.to_vec();
        assert_eq!(f[14 + 7], 63, "IPv6 hop limit");
        assert_eq!(f[14 + 40 + 6], 2, "FANN hop limit 3 -> 2");
        let src: Ipv6Addr = "fc00:9::1".parse().unwrap();
        let dst: Ipv6Addr = "2001:db8::5".parse().unwrap();
        let r = crate::wire::fann::PacketRepr::parse(&crate::wire::fann::Packet::new_checked(&f[54..]).unwrap(), &src, &dst, Params::DEFAULT.icmpv6_fann_type);
        assert!(r.is_ok(), "checksum still valid: {r:?}");
        // Hop limit 1: this node is the last in scope.
        let mut p = VecPacket::from_bytes(&fann_frame(1));
        assert_eq!(pl.process(&mut p, 0, 1), Verdict::Drop(Drop::FannHopLimit));
    }

    /// An IPv6 frame from fc00:9::1 to 2001:db8::5 with Next Header `nh`
    /// and payload `l4`.
    fn ip6_frame(nh: u8, l4: &[u8]) -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 9, 0x86, 0xdd, 0x60, 0, 0, 0];
        f.extend_from_slice(&(l4.len() as u16).to_be_bytes());
        f.extend_from_slice(&[nh, 64]);
        f.extend_from_slice(&"fc00:9::1".parse::<Ipv6Addr>().unwrap().octets());
        f.extend_from_slice(&"2001:db8::5".parse::<Ipv6Addr>().unwrap().octets());
        f.extend_from_slice(l4);
        f
    }

    #[test]
    fn traffic_that_only_looks_like_fann_is_forwarded_untouched() {
        use crate::pipeline::Verdict;
        let mut pl = pipeline();
        let msg = {
            let f = fann_frame(3);
            f[14 + 40 + 4..].to_vec()
        };
        let udp = |payload: &[u8], len_delta: i32| {
            let mut u = vec![0xd4, 0x31];
            u.extend_from_slice(&Params::DEFAULT.fann_udp_port.to_be_bytes());
            u.extend_from_slice(&((8 + payload.len() as i32 + len_delta) as u16).to_be_bytes());
            u.extend_from_slice(&[0x12, 0x34]);
            u.extend_from_slice(payload);
            u
        };
        let mut v2 = msg.clone();
        v2[0] = 2;
        let mut icmp_code_5 = fann_frame(3)[14 + 40..].to_vec();
        icmp_code_5[1] = 5;
        let cases: Vec<(&str, Vec<u8>)> = vec![
            // An application's datagram to the port, e.g. a reply to a
            // client that picked it as its ephemeral port.
            ("UDP, not FANN-sized", ip6_frame(17, &udp(b"an application's datagram to an ephemeral port", 0))),
            ("UDP, FANN Version 2", ip6_frame(17, &udp(&v2, 0))),
            ("UDP, Hop Limit 0 but Version 2", ip6_frame(17, &udp(&{ let mut m = v2.clone(); m[2] = 0; m }, 0))),
            ("UDP, Length not the datagram's", ip6_frame(17, &udp(&msg, -1))),
            ("ICMPv6 type 201, another version, not FANN-sized", ip6_frame(58, &[Params::DEFAULT.icmpv6_fann_type, 0, 0xab, 0xcd, 7, 2, 3, 4])),
            ("ICMPv6 type 201, Code 5", ip6_frame(58, &icmp_code_5)),
        ];
        for (what, frame) in cases {
            let mut p = VecPacket::from_bytes(&frame);
            assert_eq!(pl.process(&mut p, 0, 1), Verdict::Tx(0), "{what}");
            let out = p.to_vec();
            assert_eq!(out[14 + 7], 63, "{what}: IPv6 hop limit");
            assert_eq!(&out[14 + 40..], &frame[14 + 40..], "{what}: payload untouched");
        }
        // A FANN message over UDP is still scoped by its own Hop Limit.
        let mut p = VecPacket::from_bytes(&ip6_frame(17, &udp(&msg, 0)));
        assert_eq!(pl.process(&mut p, 0, 1), Verdict::Tx(0));
        assert_eq!(p.to_vec()[14 + 40 + 8 + 2], 2, "FANN hop limit 3 -> 2");
        // An ICMPv6 FANN message that says Version 1 but whose lengths
        // exceed the payload is discarded (s.6).
        let icmp = fann_frame(3)[14 + 40..].to_vec();
        let short = icmp[..icmp.len() - 4].to_vec();
        let tiny = vec![Params::DEFAULT.icmpv6_fann_type, 0, 0xab, 0xcd, 1, 2, 3, 4];
        for (what, l4) in [("short", short), ("tiny", tiny)] {
            let mut p = VecPacket::from_bytes(&ip6_frame(58, &l4));
            assert_eq!(pl.process(&mut p, 0, 1), Verdict::Drop(Drop::FannMalformed), "{what}");
        }
        // The UDP variant the same way (s.5.2: "processed identically"):
        // Version 1, a UDP Length that is the datagram's, a message shorter
        // than its bitmap says.
        for (what, m) in [("UDP, short stack", &msg[..msg.len() - 4]), ("UDP, header only", &msg[..8])] {
            let mut p = VecPacket::from_bytes(&ip6_frame(17, &udp(m, 0)));
            assert_eq!(pl.process(&mut p, 0, 1), Verdict::Drop(Drop::FannMalformed), "{what}");
        }
        // One padded after its stack (to 8-octet rows) is within the rule:
        // forwarded, its FANN Hop Limit decremented, the padding kept.
        let mut long = icmp.clone();
        long.extend_from_slice(&[0xa5; 4]);
        let mut f = ip6_frame(58, &long);
        let (src, dst): (Ipv6Addr, Ipv6Addr) = ("fc00:9::1".parse().unwrap(), "2001:db8::5".parse().unwrap());
        crate::wire::fann::Packet::new_unchecked(&mut f[14 + 40..]).fill_checksum(&src, &dst);
        let mut p = VecPacket::from_bytes(&f);
        assert_eq!(pl.process(&mut p, 0, 1), Verdict::Tx(0), "padded");
        let out = p.to_vec();
        let got = crate::wire::fann::Packet::new_checked(&out[14 + 40..]).unwrap();
        assert_eq!(got.message().hop_limit(), 2, "FANN hop limit 3 -> 2");
        assert!(got.verify_checksum(&src, &dst));
        assert_eq!(&out[out.len() - 4..], &[0xa5; 4]);
        // One with reserved bitmap bits (23 and 31) and their items, of a
        // size this node does not know, after the stack (s.5.1.3: "Reserved
        // for future use"): forwarded the same way, the items kept.
        let mut fut = icmp.clone();
        fut[4 + 36] |= 0x01; // the bitmap is octets 33..37 of the message: bit 31
        fut[4 + 35] |= 0x01; // bit 23
        fut.extend_from_slice(&[0xfe; 8]);
        let mut f = ip6_frame(58, &fut);
        crate::wire::fann::Packet::new_unchecked(&mut f[14 + 40..]).fill_checksum(&src, &dst);
        let mut p = VecPacket::from_bytes(&f);
        assert_eq!(pl.process(&mut p, 0, 1), Verdict::Tx(0), "reserved bit set");
        let out = p.to_vec();
        let got = crate::wire::fann::Packet::new_checked(&out[14 + 40..]).unwrap();
        assert_ne!(got.message().reserved_bits(), 0);
        assert_eq!(got.message().hop_limit(), 2, "FANN hop limit 3 -> 2");
        assert!(got.verify_checksum(&src, &dst));
        assert_eq!(&out[out.len() - 8..], &[0xfe; 8]);
    }

    /// A FANN message this node steers into an SR policy is forwarded by
    /// it all the same: its FANN Hop Limit is decremented (and it is
    /// dropped at zero) before the encapsulation.
    #[test]
    fn a_fann_message_steered_into_a_policy_is_scoped_too() {
        use crate::pipeline::Verdict;
        use crate::srv6::{EncapMode, SidTable, SrPolicy};
        let mut pl = pipeline();
        let mut t = SidTable::new(&Params::DEFAULT);
        let src: Ipv6Addr = "2001:db8:1::1".parse().unwrap();
        t.add_policy("2001:db8::/64".parse().unwrap(), SrPolicy::new(src, EncapMode::Encaps, vec![(vec!["2001:db8::77".parse().unwrap()], 1)]).unwrap());
        pl.set_sids(std::sync::Arc::new(t));
        let mut p = VecPacket::from_bytes(&fann_frame(3));
        assert_eq!(pl.process(&mut p, 0, 1), Verdict::Tx(0));
        let f = p.to_vec();
        assert_eq!((f[14 + 6], f[14 + 40]), (43, 41), "encapsulated: outer IPv6, SRH, inner IPv6");
        let inner = &f[14 + 40 + (usize::from(f[14 + 40 + 1]) + 1) * 8..];
        assert_eq!(inner[40 + 6], 2, "FANN hop limit 3 -> 2");
        let r = crate::wire::fann::PacketRepr::parse(&crate::wire::fann::Packet::new_checked(&inner[40..]).unwrap(), &"fc00:9::1".parse().unwrap(), &"2001:db8::5".parse().unwrap(), Params::DEFAULT.icmpv6_fann_type);
        assert!(r.is_ok(), "checksum still valid: {r:?}");
        let mut p = VecPacket::from_bytes(&fann_frame(1));
        assert_eq!(pl.process(&mut p, 0, 1), Verdict::Drop(Drop::FannHopLimit));
    }

    #[test]
    fn without_end_e_the_cnp_goes_to_the_source() {
        let mut pl = pipeline();
        let spec = CongestionSpec { params: PortParams::default(), source_v4: None, source_v6: None, end_e_sid: None, notify_sids: Vec::new(), tunnel_pes: Vec::new(), source_qps: Vec::new(), source_formats: Vec::new(), auth: Default::default() };
        let e: EgressPort<VecPacket> = EgressPort::new(EgressConfig::default(), Some(spec));
        let mut m = VecPacket::from_bytes(&[]);
        e.build_cnp_packet(&mut pl, &Params::DEFAULT, &req(), &mut m, 1).unwrap();
        let d = m.data();
        assert_eq!(d[14 + 6], 58);
        assert_eq!(&d[14 + 24..14 + 40], &"2001:db8:1::2".parse::<Ipv6Addr>().unwrap().octets());
    }

    /// A WAN P node tells each flow's ingress PE by the tunnel the flow's
    /// packets come in (`tunnel_pes`, the outer IPv6 source), whatever
    /// prefix its sender has; a flow from a tunnel no entry covers, or
    /// outside any tunnel, follows the sender-prefix rules.
    #[test]
    fn p_node_tells_the_pe_whose_tunnel_the_flow_came_in() {
        let counters = WorkerCounters::default();
        let mut pl = pipeline();
        // 1 Gb/s, RTT_est 100 us: K_max = K_base 64000.
        let params = PortParams { rate_bps: 1_000_000_000, rtt_est_ns: 100_000, interval_ns: 10_000, qd_immediate: true, ..PortParams::default() };
        let spec = CongestionSpec {
            params,
            source_v4: None,
            source_v6: None,
            end_e_sid: None,
            // The sender prefix says PE C for every sender below.
            notify_sids: vec![("2001:db8::/32".parse().unwrap(), "fc00:c::e".parse().unwrap())],
            tunnel_pes: vec![("fc00:a::/48".parse().unwrap(), "fc00:a::e".parse().unwrap()), ("fc00:b::1/128".parse().unwrap(), "fc00:b::e".parse().unwrap()), ("fc00:b::/48".parse().unwrap(), "fc00:bb::e".parse().unwrap())],
            source_qps: Vec::new(),
            source_formats: Vec::new(),
            auth: Default::default(),
        };
        assert_eq!(spec.tunnel_tag("fc00:b::1".parse().unwrap()), 2, "the longest prefix");
        assert_eq!(spec.tunnel_tag("fc00:b::2".parse().unwrap()), 3);
        assert_eq!(spec.tunnel_tag("fc00:d::1".parse().unwrap()), TUNNEL_FROM_UNKNOWN);
        // Outer IPv6 from `outer`, SRH with one segment, inner RoCEv2.
        let tunnelled = |outer: &str, inner: &[u8]| {
            let mut srh = vec![41, 2, 4, 0, 0, 0, 0, 0];
            srh.extend_from_slice(&"fc00:e::1".parse::<Ipv6Addr>().unwrap().octets());
            srh.extend_from_slice(&inner[14..]);
            let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 9, 0x86, 0xdd, 0x60, 0x20, 0, 0];
            f.extend_from_slice(&(srh.len() as u16).to_be_bytes());
            f.extend_from_slice(&[43, 64]);
            f.extend_from_slice(&outer.parse::<Ipv6Addr>().unwrap().octets());
            f.extend_from_slice(&"fc00:e::1".parse::<Ipv6Addr>().unwrap().octets());
            f.extend(srh);
            f
        };
        let frame = |src: &str, outer: Option<&str>| {
            let f = roce_frame(src, "2001:db8:99::2", 0x04, 0, 0x100, 2);
            let f = outer.map_or(f.clone(), |o| tunnelled(o, &f));
            assert_eq!(classify::roce_fast(&f).map(|m| m.tunnelled), Some(outer.is_some()));
            f
        };
        // One sender per case; each port's queue passes K_max with the
        // flow's packets (nothing leaves) and the flow gets its CNP.
        let cases = [
            ("2001:db8:1::2", Some("fc00:a::7"), 1, "fc00:a::e"),                   // PE A by its /48
            ("2001:db8:2::2", Some("fc00:b::1"), 2, "fc00:b::e"),                   // PE B's own address
            ("2001:db8:3::2", Some("fc00:b::9"), 3, "fc00:bb::e"),                  // the rest of B's /48
            ("2001:db8:4::2", Some("fc00:d::1"), TUNNEL_FROM_UNKNOWN, "fc00:c::e"), // a tunnel nobody listed
            ("2001:db8:5::2", None, 0, "fc00:c::e"),                                // no tunnel
        ];
        for (src, outer, tag, sid) in cases {
            let mut e: EgressPort<VecPacket> = EgressPort::new(EgressConfig::default(), Some(spec.clone()));
            let f = frame(src, outer);
            let mut now = 1;
            while e.admit(VecPacket::from_bytes(&f), now, &counters).is_ok() && e.queue.depth_bytes() < 100_000 {
                now += 10;
            }
            let mut reqs = Vec::with_capacity(8);
            e.poll(now, &mut reqs);
            assert_eq!(reqs.iter().map(|r| (r.to, r.via)).collect::<Vec<_>>(), vec![(src.parse::<IpAddr>().unwrap(), tag)], "{src}");
            let mut m = VecPacket::from_bytes(&[]);
            e.build_cnp_packet(&mut pl, &Params::DEFAULT, &reqs[0], &mut m, now).unwrap();
            let d = m.data();
            assert_eq!(d[14 + 6], 41, "encapsulated");
            assert_eq!(&d[14 + 24..14 + 40], &sid.parse::<Ipv6Addr>().unwrap().octets(), "{src}: to the SID of {sid}");
            assert_eq!(&d[54 + 24..54 + 40], &src.parse::<Ipv6Addr>().unwrap().octets(), "the inner CNP still goes to the sender");
            // The flow moves to PE A's tunnel: its next packet retags it;
            // a packet outside any tunnel tells nothing and leaves it.
            let flow_tag = |e: &mut EgressPort<VecPacket>| {
                e.flush();
                let c = e.cong.as_ref().unwrap();
                let f = c.flow_id(src.parse().unwrap(), "2001:db8:99::2".parse().unwrap(), 0x100).unwrap();
                c.flow_via(f)
            };
            e.queue.drain(|_| {});
            let _ = e.admit(VecPacket::from_bytes(&frame(src, Some("fc00:a::8"))), now, &counters);
            assert_eq!(flow_tag(&mut e), Some(1), "{src}");
            let _ = e.admit(VecPacket::from_bytes(&frame(src, None)), now, &counters);
            assert_eq!(flow_tag(&mut e), Some(1), "{src}");
        }
    }

    /// Ethernet + IPv6 (ECN `ecn`) + UDP to 4791 + BTH (opcode `op`, octet
    /// 4 `flags`: FECN, BECN, E; PSN 0) + 16 octets + ICRC, `src` to `dst`.
    fn roce_frame(src: &str, dst: &str, op: u8, flags: u8, dest_qp: u32, ecn: u8) -> Vec<u8> {
        let mut udp = vec![0xc0, 0x01, 0x12, 0xb7, 0, 8 + 12 + 16 + 4, 0, 0, op, 0, 0xff, 0xff, flags];
        udp.extend_from_slice(&dest_qp.to_be_bytes()[1..]);
        udp.extend_from_slice(&[0; 4 + 16 + 4]);
        let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 9, 0x86, 0xdd, 0x60, ecn << 4, 0, 0];
        f.extend_from_slice(&(udp.len() as u16).to_be_bytes());
        f.extend_from_slice(&[17, 64]);
        f.extend_from_slice(&src.parse::<Ipv6Addr>().unwrap().octets());
        f.extend_from_slice(&dst.parse::<Ipv6Addr>().unwrap().octets());
        f.extend(udp);
        f
    }

    /// A received PFC pause on a congestion-aware port (the router as the
    /// DC gateway a PE's END.C pauses, draft-hu s.4.1): the paused class
    /// stays in the queue depth, so the pause is congestion to the
    /// congestion stage: CE marks above K_min, a Long-haul CNP to the
    /// flow's source above K_max; once the XON lets the queue drain and it
    /// stays below K_min for RTT_est, the throttled flow gets its Resume.
    #[test]
    fn a_received_pause_turns_into_ce_marks_and_cnps_to_the_source() {
        use crate::pfcrx::{PfcRxConfig, PortPause};
        use crate::wire::pfc::{MacControlRepr, PfcRepr};
        let counters = WorkerCounters::default();
        // 1 Gb/s, RTT_est 100 us: K_max = K_base 64000, K_min 32000.
        let params = PortParams { rate_bps: 1_000_000_000, rtt_est_ns: 100_000, interval_ns: 10_000, qd_immediate: true, ..PortParams::default() };
        let spec = CongestionSpec { params, source_v4: None, source_v6: None, end_e_sid: None, notify_sids: Vec::new(), tunnel_pes: Vec::new(), source_qps: Vec::new(), source_formats: Vec::new(), auth: Default::default() };
        let mut pfc = PfcRxConfig::with_default_priority(1 << 3, false, 0);
        pfc.dscp_priority[26] = 3;
        pfc.link_bps = 1_000_000_000;
        let pp = Arc::new(PortPause::new(pfc));
        let mut e: EgressPort<VecPacket> = EgressPort::new(EgressConfig::default(), Some(spec)).with_pfc(pp.clone());
        let (a, b) = ("2001:db8:1::2", "2001:db8:3::2");
        // RC SEND-only at DSCP 26, ECT(0).
        let mut f = roce_frame(a, b, 0x04, 0, 0x100, 0);
        let tc: u8 = 26 << 2 | 2;
        f[14] = 0x60 | tc >> 4;
        f[15] = tc << 4;
        pp.receive(&MacControlRepr::Pfc(PfcRepr::pause(1 << 3, 0xffff)), 0);
        // `poll` fills only the room the worker's buffer has (no
        // allocation on the packet path).
        let (mut sent, mut reqs) = (0, Vec::with_capacity(4096));
        let step = |e: &mut EgressPort<VecPacket>, now: u64, reqs: &mut Vec<CnpRequest>| {
            let mut out = Vec::new();
            e.dequeue(now, 64, |p, len, flow, prio| out.push((p, len, flow, prio)));
            for (_, len, flow, _) in &out {
                e.sent(*flow, *len, now);
            }
            e.poll(now, reqs);
            out.len()
        };
        for i in 0..1000u64 {
            e.admit(VecPacket::from_bytes(&f), 1 + i * 100, &counters).map_err(|(_, d)| d).unwrap();
            sent += step(&mut e, 1 + i * 100, &mut reqs);
        }
        assert_eq!(sent, 0, "priority 3 is paused (33.5 ms)");
        assert!(e.queue.depth_bytes() > 64_000 && e.queue.held_len() > 600, "held, and in the queue depth: {}", e.queue.depth_bytes());
        assert!(counters.local[Local::CeMarked as usize].get() > 0, "CE marks above K_min");
        let cnp = reqs.iter().find(|r| r.info.action != Action::Resume).expect("a Long-haul CNP above K_max");
        assert_eq!((cnp.to, cnp.flow_dst, cnp.dest_qp), (a.parse::<IpAddr>().unwrap(), b.parse::<IpAddr>().unwrap(), 0x100));
        // XON: everything leaves; below K_min for RTT_est, the Resume.
        pp.receive(&MacControlRepr::Pfc(PfcRepr::resume(1 << 3)), 200_000);
        reqs.clear();
        let mut now = 200_000;
        while now < 600_000 {
            sent += step(&mut e, now, &mut reqs);
            now += 10_000;
        }
        assert_eq!((sent, e.queue.depth_bytes(), e.queue.held_len()), (1000, 0, 0));
        assert!(reqs.iter().any(|r| r.info.action == Action::Resume && r.dest_qp == 0x100), "{:?}", reqs.iter().map(|r| r.info.action).collect::<Vec<_>>());
    }

    /// A port whose link went down drops its queue (`Worker::service_egress`
    /// on `link-down`): every packet, priority ones too, goes to the
    /// caller to be freed, and the congestion stage sees each data packet
    /// leave, so no flow keeps bytes "queued" that will never leave (the
    /// top flow FANN names, the flows' queue shares).
    #[test]
    fn discard_empties_the_queue_and_the_flows_queued_bytes() {
        let counters = WorkerCounters::default();
        let spec = CongestionSpec { params: PortParams::default(), source_v4: None, source_v6: None, end_e_sid: None, notify_sids: Vec::new(), tunnel_pes: Vec::new(), source_qps: Vec::new(), source_formats: Vec::new(), auth: Default::default() };
        let mut e: EgressPort<VecPacket> = EgressPort::new(EgressConfig::default(), Some(spec));
        let (a, b) = ("2001:db8:1::2", "2001:db8:3::2");
        for qp in [0x100, 0x200] {
            for _ in 0..50 {
                e.admit(VecPacket::from_bytes(&roce_frame(a, b, 0x04, 0, qp, 2)), 1, &counters).unwrap();
            }
        }
        e.admit_priority(VecPacket::from_bytes(&[0u8; 60])).unwrap();
        e.flush();
        assert!(e.cong.as_ref().unwrap().top_flow().is_some());
        let depth = e.queue.depth_bytes();
        let mut freed = 0u64;
        assert_eq!(e.discard(2, |p| freed += p.pkt_len() as u64), 101);
        assert_eq!(freed, depth + 60, "every packet handed back");
        assert_eq!((e.queue.len(), e.queue.depth_bytes()), (0, 0));
        assert_eq!(e.cong.as_ref().unwrap().top_flow(), None, "no flow has bytes queued");
        // The port works on: the same flows queue again.
        e.admit(VecPacket::from_bytes(&roce_frame(a, b, 0x04, 0, 0x100, 2)), 3, &counters).unwrap();
        e.flush();
        assert_eq!(e.cong.as_ref().unwrap().top_flow().map(|f| f.2), Some(0x100));
    }

    /// What a worker does with a received frame (`Worker::handle_burst`):
    /// `maybe_response`, one `roce_meta`, `teaches_source_qp`, then
    /// `observe_roce` on its own ports and, through the ring, on another
    /// worker's (`observe_response`). Whether the frame got there.
    fn worker_rx(f: &[u8], own: &mut EgressPort<VecPacket>, other: &mut EgressPort<VecPacket>, now: u64) -> bool {
        if !classify::maybe_response(f) {
            return false;
        }
        let Some(meta) = classify::roce_meta(f) else { return false };
        if !meta.info.teaches_source_qp() {
            return false;
        }
        own.observe_roce(&meta, now);
        other.observe_response(&meta.info, now);
        true
    }

    /// A standard RoCEv2 CNP (opcode 0x81, BECN, E clear) from a flow's
    /// destination gets through the receive path's filters to the
    /// congestion stages, of this worker and of the others, and teaches a
    /// UC flow (no responses at all) its source QP; a Long-haul CNP (E
    /// set), plain or in a tunnel, is not used.
    #[test]
    fn standard_cnps_teach_source_qps_on_the_receive_path() {
        let counters = WorkerCounters::default();
        let spec = CongestionSpec { params: PortParams::default(), source_v4: None, source_v6: None, end_e_sid: None, notify_sids: Vec::new(), tunnel_pes: Vec::new(), source_qps: Vec::new(), source_formats: Vec::new(), auth: Default::default() };
        let mut own: EgressPort<VecPacket> = EgressPort::new(EgressConfig::default(), Some(spec.clone()));
        let mut other: EgressPort<VecPacket> = EgressPort::new(EgressConfig::default(), Some(spec));
        let (a, b) = ("2001:db8:1::2", "2001:db8:3::2");
        let (ia, ib): (IpAddr, IpAddr) = (a.parse().unwrap(), b.parse().unwrap());
        // UC SEND-only (0x24) from a to b's QP 0x100, ECT(0), through both
        // ports.
        for e in [&mut own, &mut other] {
            e.admit(VecPacket::from_bytes(&roce_frame(a, b, 0x24, 0, 0x100, 2)), 1, &counters).unwrap();
        }
        let qp = |e: &EgressPort<VecPacket>| e.cong.as_ref().unwrap().flow_source_qp(ia, ib, 0x100);
        let stats = |e: &EgressPort<VecPacket>| *e.cong.as_ref().unwrap().stats();
        // Data does not get there.
        assert!(!worker_rx(&roce_frame(b, a, 0x24, 0, 0x100, 2), &mut own, &mut other, 2));
        // A Long-haul CNP from b naming QP 0x66: stopped by maybe_response.
        let lh = roce_frame(b, a, 0x81, 0x60, 0x66, 0);
        assert!(!worker_rx(&lh, &mut own, &mut other, 3));
        // Inside an IPv6 tunnel maybe_response cannot tell, roce_meta's E
        // bit does; and the stage ignores it anyway (the simulation hands
        // every frame maybe_response passes to observe_roce).
        let mut tun = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 9, 0x86, 0xdd, 0x60, 0, 0, 0];
        tun.extend_from_slice(&((lh.len() - 14) as u16).to_be_bytes());
        tun.extend_from_slice(&[41, 64]);
        tun.extend_from_slice(&"fc00:9::1".parse::<Ipv6Addr>().unwrap().octets());
        tun.extend_from_slice(&"fc00:1::1".parse::<Ipv6Addr>().unwrap().octets());
        tun.extend_from_slice(&lh[14..]);
        assert!(classify::maybe_response(&tun));
        let m = classify::roce_meta(&tun).unwrap();
        assert!(m.tunnelled && m.info.ext && m.info.opcode == 0x81);
        assert!(!worker_rx(&tun, &mut own, &mut other, 4));
        own.observe_roce(&m, 5);
        other.observe_response(&m.info, 5);
        for e in [&own, &other] {
            assert_eq!(qp(e), None);
            let st = stats(e);
            assert_eq!((st.reverse_learned, st.reverse_learned_from_cnp, st.reverse_unmatched, st.reverse_ambiguous), (0, 0, 0, 0));
        }
        // The standard CNP from b naming a's QP 0x55 (BECN, E clear).
        assert!(worker_rx(&roce_frame(b, a, 0x81, 0x40, 0x55, 0), &mut own, &mut other, 6));
        for e in [&own, &other] {
            assert_eq!(qp(e), Some(0x55));
            assert_eq!((stats(e).reverse_learned_from_cnp, stats(e).reverse_learned), (1, 0));
        }
    }
}
