//! The reference traffic source of s.5.6, for tests and the simulation
//! harness (not a packet-path component: it may allocate).
//!
//! * Validation: the CNP's IP source must be a configured congestion-aware
//!   node (s.9), its Source QP Number an active local QP (s.5.6 step 1), and
//!   the instruction consistent (s.9: [`CnpInfo::validate`]). With AH keys
//!   ([`SourceModel::add_ah_key`], the inbound side of `[[cnp_auth]]`), an
//!   ICMPv6-format CNP must also carry an AH that verifies under one of them
//!   and a sequence number its anti-replay window has not seen (s.9, RFC
//!   4302 s.3.4.3).
//! * Notify: the default response, a cut of `notify_cut_pct` percent.
//!   Rate Reduce p: rate *= 1 - p/100. Pause us: no transmission until
//!   now + us. Resume p: restore p percent of the last reduction (0: all of
//!   it), at most `resume_cap_frac * normal rate` per Resume (s.9), and end
//!   any Pause.
//! * Recovery timer (s.5.6): once no Long-haul CNP arrived for the QP for
//!   `recovery_factor * RTT_est` (2 by default), the rate grows by
//!   `ai_step_bps` then and every RTT_est after (additive increase) up to
//!   the normal rate.

use std::net::IpAddr;

use crate::wire::ah::{self, AhKey, ReplayWindow};
use crate::wire::ipv4::Ipv4Packet;
use crate::wire::ipv6::Ipv6Packet;
use crate::wire::udp::UdpPacket;
use crate::wire::lhcnp::{Action, CnpInfo, Icmpv6LhCnp, Icmpv6LhCnpRepr, RoceLhCnpRepr};
use crate::wire::params::{Params, ROCEV2_UDP_PORT};
use crate::wire::roce::{icrc_check, Bth};

/// Parameters of the model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SourceParams {
    pub rtt_est_ns: u64,
    /// The normal (line) rate of each QP, bit/s.
    pub normal_rate_bps: f64,
    /// Recovery interval in RTT_est (s.5.6 recommends 2).
    pub recovery_factor: u64,
    /// Additive increase per RTT_est, bit/s.
    pub ai_step_bps: f64,
    /// Default response to Notify, percent.
    pub notify_cut_pct: f64,
    /// Largest increase of a single Resume, fraction of the normal rate.
    pub resume_cap_frac: f64,
}

impl Default for SourceParams {
    fn default() -> Self {
        SourceParams {
            rtt_est_ns: 10_000_000,
            normal_rate_bps: 100e9,
            recovery_factor: 2,
            ai_step_bps: 5e9,
            notify_cut_pct: 25.0,
            resume_cap_frac: 0.5,
        }
    }
}

/// Why a CNP was not applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceReject {
    /// Not from a known congestion-aware node (s.9).
    UnknownNode,
    /// Source QP Number is not an active QP (s.5.6).
    UnknownQp,
    /// Inconsistent instruction (s.9).
    Inconsistent,
    /// Not a well-formed Long-haul CNP (format, checksum, ICRC).
    Malformed,
    /// ICMPv6 format without an AH that verifies, while AH keys are
    /// configured (s.9).
    Unauthenticated,
    /// An authenticated CNP whose sequence number was seen before or is
    /// older than the anti-replay window.
    Replayed,
}

#[derive(Debug, Clone, Copy)]
struct Qp {
    qp: u32,
    /// Rate right after the last event (CNP), bit/s.
    rate_at_event: f64,
    last_event: Option<u64>,
    paused_until: u64,
    /// Rate before the last congestion action and the reduction it made.
    last_reduction: f64,
}

/// A source with some active QPs.
#[derive(Debug, Clone)]
pub struct SourceModel {
    pub p: SourceParams,
    nodes: Vec<IpAddr>,
    qps: Vec<Qp>,
    /// Inbound AH SAs (by SPI) and their anti-replay windows.
    ah_keys: Vec<(AhKey, ReplayWindow)>,
    pub applied: u64,
    pub rejected: u64,
}

impl SourceModel {
    pub fn new(p: SourceParams) -> Self {
        SourceModel {
            p,
            nodes: Vec::new(),
            qps: Vec::new(),
            ah_keys: Vec::new(),
            applied: 0,
            rejected: 0,
        }
    }

    /// Accept CNPs from this congestion-aware node.
    pub fn add_known_node(&mut self, a: IpAddr) {
        self.nodes.push(a);
    }

    /// Accept ICMPv6-format CNPs only with a valid AH: under this key (by
    /// its SPI) or another one added.
    pub fn add_ah_key(&mut self, key: AhKey) {
        self.ah_keys.push((key, ReplayWindow::default()));
    }

    /// Activate a QP at the normal rate.
    pub fn add_qp(&mut self, qp: u32) {
        self.qps.push(Qp {
            qp,
            rate_at_event: self.p.normal_rate_bps,
            last_event: None,
            paused_until: 0,
            last_reduction: 0.0,
        });
    }

    fn find(&self, qp: u32) -> Option<usize> {
        self.qps.iter().position(|q| q.qp == qp)
    }

    /// The QP's sending rate at `now` (0 while paused; None: unknown QP).
    pub fn rate(&self, qp: u32, now: u64) -> Option<f64> {
        let q = self.qps[self.find(qp)?];
        if now < q.paused_until {
            return Some(0.0);
        }
        Some(self.recovered(&q, now))
    }

    /// Rate with the additive recovery applied (ignoring Pause).
    fn recovered(&self, q: &Qp, now: u64) -> f64 {
        let Some(t) = q.last_event else {
            return q.rate_at_event;
        };
        let rtt = self.p.rtt_est_ns.max(1);
        let start = t.saturating_add(self.p.recovery_factor.saturating_mul(rtt));
        if now < start {
            return q.rate_at_event;
        }
        let steps = ((now - start) / rtt + 1) as f64;
        (q.rate_at_event + steps * self.p.ai_step_bps).min(self.p.normal_rate_bps.max(q.rate_at_event))
    }

    /// Validate and apply a CNP received from `from` at `now`.
    pub fn receive(&mut self, from: IpAddr, info: &CnpInfo, now: u64) -> Result<(), SourceReject> {
        let r = self.receive_inner(from, info, now);
        match r {
            Ok(()) => self.applied += 1,
            Err(_) => self.rejected += 1,
        }
        r
    }

    fn receive_inner(&mut self, from: IpAddr, info: &CnpInfo, now: u64) -> Result<(), SourceReject> {
        if !self.nodes.contains(&from) {
            return Err(SourceReject::UnknownNode);
        }
        let i = self.find(info.source_qp).ok_or(SourceReject::UnknownQp)?;
        info.validate().map_err(|_| SourceReject::Inconsistent)?;
        let q = self.qps[i];
        let cur = self.recovered(&q, now);
        let p = self.p;
        let mut n = q;
        match info.action {
            Action::Notify | Action::RateReduce => {
                let pct = if info.action == Action::Notify {
                    p.notify_cut_pct
                } else {
                    f64::from(info.parameter)
                };
                let new = cur * (1.0 - pct.clamp(0.0, 100.0) / 100.0);
                n.rate_at_event = new;
                n.last_reduction = cur - new;
            }
            Action::Pause => {
                n.rate_at_event = cur;
                n.paused_until = now.saturating_add(u64::from(info.parameter) * 1000);
            }
            Action::Resume => {
                let want = if info.parameter == 0 {
                    // s.5.5: 0 is "unconditional resume to the original
                    // rate" (within the cap per Resume, s.9).
                    p.normal_rate_bps - cur
                } else {
                    q.last_reduction * f64::from(info.parameter) / 100.0
                };
                let inc = want.min(p.resume_cap_frac * p.normal_rate_bps).max(0.0);
                n.rate_at_event = (cur + inc).min(p.normal_rate_bps.max(cur));
                n.last_reduction = (q.last_reduction - inc).max(0.0);
                n.paused_until = 0;
            }
        }
        n.last_event = Some(now);
        self.qps[i] = n;
        Ok(())
    }

    /// Parse an IP packet (as `build_cnp` writes it) and apply it: ICMPv6
    /// Long-haul CNP (checksum verified) or RoCEv2 Long-haul CNP (ICRC
    /// verified) over IPv4 or IPv6.
    pub fn receive_packet(&mut self, pkt: &[u8], params: &Params, now: u64) -> Result<CnpInfo, SourceReject> {
        let plain = self.authenticate(pkt).inspect_err(|_| self.rejected += 1)?;
        let (from, info) = parse_cnp(plain.as_deref().unwrap_or(pkt), params).ok_or_else(|| {
            self.rejected += 1;
            SourceReject::Malformed
        })?;
        self.receive(from, &info, now).map(|_| info)
    }

    /// The AH check of [`receive_packet`](Self::receive_packet): for a
    /// packet with an AH, the packet without it (its ICV verified, its
    /// sequence number new); None for a packet without one that may go
    /// without.
    fn authenticate(&mut self, pkt: &[u8]) -> Result<Option<Vec<u8>>, SourceReject> {
        let v6 = pkt.first().is_some_and(|b| b >> 4 == 6);
        match pkt.get(6) {
            Some(&ah::NEXT_HEADER_AH) if v6 => {
                let v = ah::verify_ipv6(pkt, |spi| self.ah_keys.iter().find(|(k, _)| k.spi() == spi).map(|(k, _)| k)).map_err(|_| SourceReject::Unauthenticated)?;
                let w = self.ah_keys.iter_mut().find(|(k, _)| k.spi() == v.spi).map(|(_, w)| w).ok_or(SourceReject::Unauthenticated)?;
                if !w.accept(v.seq) {
                    return Err(SourceReject::Replayed);
                }
                let mut plain = [&pkt[..40], &pkt[v.payload_at..]].concat();
                plain[4..6].copy_from_slice(&((pkt.len() - v.payload_at) as u16).to_be_bytes());
                plain[6] = v.next_header;
                Ok(Some(plain))
            }
            Some(58) if v6 && !self.ah_keys.is_empty() => Err(SourceReject::Unauthenticated),
            _ => Ok(None),
        }
    }
}

/// Parse a Long-haul CNP IP packet: (IP source, instruction). Verifies
/// the IPv4 header checksum, the UDP checksum (IPv6; IPv4 when non-zero),
/// the ICMPv6 checksum and the ICRC.
pub fn parse_cnp(pkt: &[u8], params: &Params) -> Option<(IpAddr, CnpInfo)> {
    match pkt.first()? >> 4 {
        6 => {
            let ip = Ipv6Packet::new_checked(pkt).ok()?;
            let src: [u8; 16] = pkt[8..24].try_into().ok()?;
            let dst: [u8; 16] = pkt[24..40].try_into().ok()?;
            match ip.next_header().0 {
                58 => {
                    let m = Icmpv6LhCnp::new_checked(ip.payload()).ok()?;
                    let r = Icmpv6LhCnpRepr::parse(&m, &src, &dst, params).ok()?;
                    // Code 0, flow-level, is the only one defined (s.6.1).
                    (r.code == 0).then_some((IpAddr::from(src), r.info))
                }
                17 => roce(pkt, ip.payload(), IpAddr::from(src), IpAddr::from(dst), params),
                _ => None,
            }
        }
        4 => {
            let ip = Ipv4Packet::new_checked(pkt).ok()?;
            if !ip.verify_checksum() || ip.protocol().0 != 17 {
                return None;
            }
            let (s, d) = (IpAddr::V4(ip.src_addr()), IpAddr::V4(ip.dst_addr()));
            roce(pkt, ip.payload(), s, d, params)
        }
        _ => None,
    }
}

fn roce(pkt: &[u8], udp: &[u8], from: IpAddr, to: IpAddr, params: &Params) -> Option<(IpAddr, CnpInfo)> {
    let u = UdpPacket::new_checked(udp).ok()?;
    if u.dst_port() != ROCEV2_UDP_PORT || !u.verify_checksum(&from, &to) {
        return None;
    }
    icrc_check(pkt).ok()?;
    let bth = Bth::new_checked(u.payload()).ok()?;
    let r = RoceLhCnpRepr::parse(&bth, params).ok()?;
    Some((from, r.info))
}
