//! The egress side of one port as one unit: the deep-buffer queue with its
//! shaper ([`crate::egress`]) and, when configured, the congestion-aware node
//! ([`crate::congestion`]). The DPDK worker drives it with mbufs; the
//! simulation harness drives the same code with byte buffers.

use crate::classify;
use crate::congestion::{build_cnp, CnpRequest, CongestionPort, FlowId, PortParams};
use crate::counters::{Drop, Local, WorkerCounters};
use crate::egress::{EgressConfig, EgressQueue, Queued};
use crate::packet::PacketBuffer;
use crate::pipeline::Pipeline;
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
}

pub struct EgressPort<P> {
    pub queue: EgressQueue<P, FlowId>,
    pub cong: Option<CongestionPort>,
    pub spec: Option<CongestionSpec>,
}

impl<P: PacketBuffer> EgressPort<P> {
    pub fn new(cfg: EgressConfig, spec: Option<CongestionSpec>) -> Self {
        EgressPort { queue: EgressQueue::new(cfg), cong: spec.as_ref().map(|s| CongestionPort::new(s.params.clone())), spec }
    }

    /// New thresholds / RTT_est / policy at runtime.
    pub fn set_params(&mut self, p: PortParams) {
        if let Some(c) = self.cong.as_mut() {
            c.set_params(p.clone());
        }
        if let Some(s) = self.spec.as_mut() {
            s.params = p;
        }
    }

    /// Admit a data packet: the congestion stage learns its flow and decides
    /// on CE marking (QD > K_min, ECN-capable packets only, outer header);
    /// a full queue tail-drops.
    #[inline]
    pub fn admit(&mut self, mut m: P, now: u64, counters: &WorkerCounters) -> Result<(), (P, Drop)> {
        let len = m.len() as u32;
        if !self.queue.has_room(len) {
            self.queue.stats.tail_drops += 1;
            self.queue.stats.tail_drop_bytes += u64::from(len);
            return Err((m, Drop::QueueTailDrop));
        }
        let flow = match self.cong.as_mut() {
            None => None,
            Some(c) => {
                let meta = classify::roce_meta(m.data());
                let ecn_capable = match &meta {
                    Some(x) => x.ecn != 0,
                    None => classify::ecn(m.data()).map(|e| e != 0).unwrap_or(false),
                };
                let (mark, flow) = c.on_enqueue(meta.as_ref().map(|x| &x.info), len, ecn_capable, self.queue.depth_bytes() + u64::from(len), now);
                if mark && classify::set_ce(m.data_mut()) {
                    counters.local(Local::CeMarked);
                }
                flow
            }
        };
        self.queue.enqueue(Queued { pkt: m, len, flow }).map_err(|q| (q.pkt, Drop::QueueTailDrop))
    }

    /// Admit a reply or notification ahead of the data queue.
    #[inline]
    pub fn admit_priority(&mut self, m: P) -> Result<(), (P, Drop)> {
        let len = m.len() as u32;
        self.queue.enqueue_priority(m, len).map_err(|m| (m, Drop::PriorityQueueFull))
    }

    /// What the shaper lets go now: `out(pkt, len, flow, priority)`. Call
    /// [`EgressPort::sent`] for each packet the NIC took and
    /// [`EgressPort::requeue`] for each it refused.
    #[inline]
    pub fn dequeue(&mut self, now: u64, max: usize, out: impl FnMut(P, u32, Option<FlowId>, bool)) -> usize {
        self.queue.dequeue_ready(now, max, out)
    }

    /// A data packet left the port: its bytes no longer count for its flow.
    #[inline]
    pub fn sent(&mut self, flow: Option<FlowId>, len: u32, now: u64) {
        if let Some(c) = self.cong.as_mut() {
            c.on_dequeue(flow, len, self.queue.depth_bytes(), now);
        }
    }

    /// Put back what the NIC refused (call in reverse order to keep order).
    #[inline]
    pub fn requeue(&mut self, p: P, len: u32, flow: Option<FlowId>, priority: bool) {
        if priority {
            self.queue.requeue_priority_front(p, len);
        } else {
            self.queue.requeue_front(Queued { pkt: p, len, flow });
        }
    }

    /// A received frame: RoCEv2 responses teach the congestion stage the
    /// source QPs of forward flows.
    #[inline]
    pub fn observe_rx(&mut self, frame: &[u8], now: u64) {
        if let Some(c) = self.cong.as_mut() {
            if let Some(meta) = classify::roce_meta(frame) {
                if crate::wire::roce::opcode::is_response(meta.info.opcode) {
                    c.on_reverse(&meta.info, now);
                }
            }
        }
    }

    /// Second-level triggers: the Long-haul CNPs due now.
    #[inline]
    pub fn poll(&mut self, now: u64, out: &mut Vec<CnpRequest>) {
        if let Some(c) = self.cong.as_mut() {
            c.poll(self.queue.depth_bytes(), now, out);
        }
    }

    /// Build the CNP for `r` into the empty buffer `m` and route it toward
    /// the flow's source (FIB, neighbour, Ethernet/VLAN header). Returns the
    /// port to send it on; counts it by action.
    pub fn build_cnp_packet(&self, pipeline: &mut Pipeline, wire: &Params, r: &CnpRequest, m: &mut P, now: u64) -> Result<u16, Drop> {
        let spec = self.spec.as_ref().ok_or(Drop::CnpBuildFailed)?;
        let src: IpAddr = match r.to {
            IpAddr::V4(a) => spec.source_v4.or_else(|| pipeline.egress_iface(r.to).and_then(|i| i.v4_for(a))).map(IpAddr::V4).ok_or(Drop::NoRoute)?,
            IpAddr::V6(a) => spec.source_v6.or_else(|| pipeline.egress_iface(r.to).map(|i| i.v6_for(a))).map(IpAddr::V6).ok_or(Drop::NoRoute)?,
        };
        if !m.set_len(14 + 512) {
            return Err(Drop::NoHeadroom);
        }
        let n = build_cnp(r, src, wire, spec.params.zero_metrics, &mut m.data_mut()[14..]).map_err(|_| Drop::CnpBuildFailed)?;
        m.set_len(14 + n);
        // PCP 6: notifications travel in a high-priority class.
        let port = pipeline.emit_ip(m, r.to, 6, now)?;
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
        self.queue.drain(f);
    }
}
