//! The reverse path wired into the [`Pipeline`]: receivers' responses to a
//! group's (Proxy Address, Designated QPN) are aggregated and the upstream
//! response goes upstream (to the source, or to the next aggregation node
//! through the Proxy Address) through the FIB; the group's data packets
//! (source -> Proxy Address, plain or inside End.MT) feed
//! [`Group::on_data`](super::Group::on_data).
//!
//! * A packet whose IPv6 destination is an installed group's Proxy Address,
//!   UDP to 4791, with a BTH whose DestQP is that group's Designated QPN:
//!   - RC Acknowledge (0x11) or CNP (0x81): parsed ([`parse_response`], ICRC
//!     verified) and fed to the [`GroupTable`]. An upstream response is
//!     written *into the received buffer* (it is never longer: 68 octets for
//!     ACK/NAK, 80 for CNP, as the received ones) and routed upstream
//!     (`Verdict::Tx`, a locally generated reply); absorbed responses are
//!     `Verdict::Consumed`; refused ones `Verdict::Drop(mc-...)`.
//!   - any other opcode is the group's data: its PSN is recorded, then the
//!     packet is forwarded as ordinary traffic.
//! * Anything else to a Proxy Address (another QPN, not RoCEv2) is ordinary
//!   traffic.
//! * The CNP window (`T`) is closed by [`Pipeline::poll_multicast`], which
//!   the worker (and the simulator) call on every loop; the window CNPs are
//!   queued in [`Pipeline::mc_pending`] and built into fresh buffers with
//!   [`Pipeline::build_mc_upstream`].
//!
//! Counters: every [`Counter`] of a group is mirrored into the worker's
//! counters (drops under `mc-*` drop reasons, events as `mc-*` local
//! counters), so the CLI / exit table shows them. No allocation: the
//! per-group counters are a fixed array copied on the stack.

use std::net::{IpAddr, Ipv6Addr};

use super::group::{Counter, Counters, GroupConfig, NakKind, Receiver, SetupError, TlvReceivers, Upstream};
use super::table::{GroupTable, Lookup, Verdict as McVerdict};
use super::upstream::{build_upstream, parse_response, upstream_len, ResponseKey};
use crate::counters::{Drop, Local};
use crate::packet::PacketBuffer;
use crate::pipeline::{write_l2, Pipeline, Verdict, L2};
use crate::srv6::Behaviour;
use crate::wire::ethernet::EtherType;
use crate::wire::params::ROCEV2_UDP_PORT;
use crate::wire::roce::opcode;

/// Where a group counter lands in the worker's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    Drop(Drop),
    Local(Local),
}

/// The worker counter of a group counter.
pub const fn slot(c: Counter) -> Slot {
    match c {
        Counter::AckIn => Slot::Local(Local::McAckIn),
        Counter::NakIn => Slot::Local(Local::McNakIn),
        Counter::RnrIn => Slot::Local(Local::McRnrIn),
        Counter::FatalNakIn => Slot::Local(Local::McFatalNakIn),
        Counter::CnpIn => Slot::Local(Local::McCnpIn),
        Counter::AckUp => Slot::Local(Local::McAckUp),
        Counter::NakUp => Slot::Local(Local::McNakUp),
        Counter::RnrUp => Slot::Local(Local::McRnrUp),
        Counter::FatalNakUp => Slot::Local(Local::McFatalNakUp),
        Counter::CnpUp => Slot::Local(Local::McCnpUp),
        Counter::AckRepeated => Slot::Local(Local::McAckRepeated),
        Counter::AckCreditUpdate => Slot::Local(Local::McAckCreditUpdate),
        Counter::NakSuppressed => Slot::Local(Local::McNakSuppressed),
        Counter::PassedUp => Slot::Local(Local::McPassedUp),
        Counter::RttSample => Slot::Local(Local::McRttSample),
        Counter::UnknownReceiver => Slot::Drop(Drop::McUnknownReceiver),
        Counter::StalePsn => Slot::Drop(Drop::McStalePsn),
        Counter::PsnOutOfWindow => Slot::Drop(Drop::McPsnOutOfWindow),
        Counter::PsnBeyondSent => Slot::Drop(Drop::McPsnBeyondSent),
        Counter::CnpRateLimited => Slot::Drop(Drop::McCnpRateLimited),
        Counter::UnsupportedOpcode => Slot::Drop(Drop::McUnsupportedOpcode),
        Counter::BadIcrc => Slot::Drop(Drop::McBadIcrc),
        Counter::Malformed => Slot::Drop(Drop::McMalformed),
    }
}

/// The drop reason of a group drop counter (events map to `mc-malformed`,
/// which never happens: only drop counters are passed).
pub const fn drop_of(c: Counter) -> Drop {
    match slot(c) {
        Slot::Drop(d) => d,
        Slot::Local(_) => Drop::McMalformed,
    }
}

/// The fields of a RoCEv2 datagram this module looks at before parsing.
struct Peek {
    opcode: u8,
    dest_qp: u32,
    psn: u32,
}

/// IPv6 header directly followed by UDP to 4791 and a BTH (no extension
/// headers: RoCEv2 puts none there).
#[inline]
fn peek_rocev2(ip: &[u8]) -> Option<Peek> {
    let h = ip.get(..40 + 8 + 12)?;
    if h[0] >> 4 != 6 || h[6] != 17 || u16::from_be_bytes([h[42], h[43]]) != ROCEV2_UDP_PORT {
        return None;
    }
    let b = &h[48..60];
    Some(Peek {
        opcode: b[0],
        dest_qp: u32::from_be_bytes([0, b[5], b[6], b[7]]),
        psn: u32::from_be_bytes([0, b[9], b[10], b[11]]),
    })
}

/// (Proxy Address, DestQP) of a group data packet (`ip`: its IPv6 header
/// on).
fn group_data_key(ip: &[u8]) -> Option<(Ipv6Addr, u32)> {
    let pk = peek_rocev2(ip)?;
    let proxy = <[u8; 16]>::try_from(ip.get(24..40)?).ok()?;
    Some((Ipv6Addr::from(proxy), pk.dest_qp))
}

/// 802.1p priority for an upstream response: the top three DSCP bits.
#[inline]
fn pcp_of(up: &Upstream, c: &GroupConfig) -> u8 {
    match up {
        Upstream::Cnp { .. } => c.cnp_traffic_class >> 5,
        _ => c.traffic_class >> 5,
    }
}

impl Pipeline {
    /// The multicast groups of this pipeline (read only).
    pub fn groups(&self) -> &GroupTable {
        &self.mc
    }

    /// Install exactly these groups (control-plane update, between bursts;
    /// allocates). Unchanged groups keep their state.
    pub fn set_groups(&mut self, cfgs: &[GroupConfig], now_ns: u64) -> Result<(), (usize, SetupError)> {
        let r = self.mc.replace_all(cfgs, now_ns);
        self.mc_pending.clear();
        r
    }

    /// Copy the change of a group's counters into the worker's counters;
    /// `skip` is a drop the caller reports through its verdict.
    fn mc_mirror(&self, before: &Counters, after: &Counters, skip: Option<Counter>) {
        for (c, v) in after.iter() {
            let mut n = v.wrapping_sub(before.get(c));
            if Some(c) == skip && n > 0 {
                n -= 1;
            }
            if n == 0 {
                continue;
            }
            match slot(c) {
                Slot::Drop(d) => self.counters.drop_n(d, n),
                Slot::Local(l) => {
                    let k = &self.counters.local[l as usize];
                    k.add(n);
                }
            }
        }
    }

    /// Whether a frame must be processed by the worker that owns the
    /// multicast groups (see the worker's steering): an IPv6 packet to a
    /// Proxy Address or to a local End.MT SID, or one that a multicast
    /// route replicates (the group's data at a tree-interior node, see
    /// `multicast6`). Cheap; reads only.
    pub fn mc_steer(&self, frame: &[u8]) -> bool {
        if self.mc.is_empty() {
            return false;
        }
        let Some(dst) = frame_dst6(frame) else { return false };
        self.mc.is_proxy(&dst) || matches!(self.sids.get(&dst), Some(Behaviour::EndMT { .. })) || crate::tables::routable_multicast6(&dst)
    }

    /// Whether the node has an END.C SID.
    pub fn has_endc(&self) -> bool {
        !self.sids.endc.is_empty()
    }

    /// Whether `frame` is an IPv6 packet to the END.C SID (its state, the
    /// priorities it paused, lives in one worker).
    pub fn endc_steer(&self, frame: &[u8]) -> bool {
        frame_dst6(frame).is_some_and(|dst| matches!(self.sids.get(&dst), Some(Behaviour::EndC)))
    }

    /// A packet to a Proxy Address (`ipv6` calls this only when `dst` is
    /// one). `Ok(None)`: not the group's response, forward as usual.
    pub(crate) fn mc_rx<P: PacketBuffer>(&mut self, p: &mut P, l2: L2, dst: Ipv6Addr, total: usize, now_ns: u64) -> Result<Option<Verdict>, Drop> {
        let d = p.data().get(l2.l3..l2.l3 + total).ok_or(Drop::MalformedIpv6)?;
        let Some(pk) = peek_rocev2(d) else { return Ok(None) };
        let Some(g) = self.mc.group_of_data(&dst, pk.dest_qp) else { return Ok(None) };
        if pk.opcode != opcode::RC_ACKNOWLEDGE && pk.opcode != opcode::CNP {
            // A request of the group's source: its PSN is "sent". Other
            // packets to the Proxy Address (read responses or atomic ACKs
            // from receivers, anything from another address) are forwarded
            // as usual and teach nothing.
            let src: [u8; 16] = d[8..24].try_into().map_err(|_| Drop::MalformedIpv6)?;
            if !opcode::is_response(pk.opcode) && self.mc.on_data(&dst, pk.dest_qp, pk.psn, &Ipv6Addr::from(src), now_ns).is_some() {
                self.counters.local(Local::McDataSeen);
            }
            return Ok(None);
        }
        let Some(before) = self.mc.get(g).map(|x| x.counters().clone()) else { return Ok(None) };
        let v = match parse_response(d) {
            Err(c) => {
                if let Some(grp) = self.mc.get_mut(g) {
                    grp.count(c);
                }
                McVerdict::Dropped { group: g, reason: c }
            }
            Ok((key, resp)) => self.mc.on_response(&key, resp, now_ns),
        };
        // The reason the verdict itself reports is counted by the caller;
        // a rate-limited CNP that closed a window leaves as the window's
        // CNP (transmitted), so it is no drop either (the group keeps its
        // count for `show multicast`).
        let skip = match v {
            McVerdict::Dropped { reason, .. } => Some(reason),
            McVerdict::Upstream { up: Upstream::Cnp { .. }, .. } => Some(Counter::CnpRateLimited),
            _ => None,
        };
        if let Some(grp) = self.mc.get(g) {
            self.mc_mirror(&before, grp.counters(), skip);
        }
        match v {
            McVerdict::NotMulticast => Ok(None),
            McVerdict::Absorbed { .. } => Ok(Some(Verdict::Consumed)),
            McVerdict::Dropped { reason, .. } => Err(drop_of(reason)),
            McVerdict::Upstream { group, up } => {
                // The upstream response replaces the received one in place.
                let (up_dst, pcp) = {
                    let cfg = self.mc.get(group).ok_or(Drop::McMalformed)?.config();
                    let n = upstream_len(&up);
                    if !p.set_len(l2.l3 + n) {
                        return Err(Drop::NoHeadroom);
                    }
                    build_upstream(&up, cfg, &mut p.data_mut()[l2.l3..l2.l3 + n]).map_err(|_| Drop::NoHeadroom)?;
                    (cfg.upstream_dst(), pcp_of(&up, cfg))
                };
                let hop = self.fib.route_ip(IpAddr::V6(up_dst), crate::pipeline::ip_at(p.data(), l2.l3)).ok_or(Drop::NoRoute)?;
                let (ifc, mac) = self.resolve_hop(hop, IpAddr::V6(up_dst), now_ns)?;
                let (port, out_mac, vlan) = (ifc.port, ifc.mac, ifc.vlan);
                write_l2(p, L2 { pcp, ..l2 }, mac, out_mac, vlan, EtherType::IPV6)?;
                self.reply = true;
                Ok(Some(Verdict::Tx(port)))
            }
        }
    }

    /// A data packet of a group seen inside End.MT (`inner` starts at the
    /// inner IPv6 header): record its PSN.
    #[inline]
    pub(crate) fn mc_observe_inner(&mut self, inner: &[u8], now_ns: u64) {
        if self.mc.is_empty() {
            return;
        }
        let Some(pk) = peek_rocev2(inner) else { return };
        if pk.opcode == opcode::CNP || opcode::is_response(pk.opcode) {
            return;
        }
        let (Some(s), Some(a)) = (inner.get(8..24), inner.get(24..40)) else { return };
        let (Ok(s), Ok(a)) = (<[u8; 16]>::try_from(s), <[u8; 16]>::try_from(a)) else { return };
        if self.mc.on_data(&Ipv6Addr::from(a), pk.dest_qp, pk.psn, &Ipv6Addr::from(s), now_ns).is_some() {
            self.counters.local(Local::McDataSeen);
        }
    }

    /// End.MT at a node that holds the group of the inner packet, whose
    /// End.MT TLV names `n` receivers (`receiver(r)`: address and QPN).
    ///
    /// * A group that learns its receivers ([`TlvReceivers::Learn`]) takes
    ///   the TLV's set when it differs from its own (`mc-tlv-learned`;
    ///   `mc-tlv-learn-refused` when the set is not a valid one: an address
    ///   twice, a multicast address, the Proxy Address, the source, a child
    ///   node's or this node's address). Telling whether it differs
    ///   costs one comparison per TLV receiver; a change is made in room
    ///   the group keeps for it, without allocating.
    /// * Otherwise the receivers that are no branch of the group are
    ///   counted (`mc-tlv-receiver-unknown`). They get the data, but their
    ///   acknowledgements would be dropped as unknown receivers and the
    ///   source told of PSNs they never confirmed (s.5.3.1): the group's
    ///   `receivers` must match what the source puts in the TLV.
    ///
    /// Returns whether the group takes copies only for its own branches
    /// ([`TlvReceivers::Strict`]); one lookup of the group serves both.
    pub(crate) fn mc_tlv_receivers(&mut self, inner: &[u8], n: usize, receiver: impl Fn(usize) -> Option<(Ipv6Addr, u32)>) -> bool {
        if self.mc.is_empty() {
            return false;
        }
        let Some((proxy, dest_qp)) = group_data_key(inner) else { return false };
        let Some((g, group)) = self.mc.group_of_data(&proxy, dest_qp).and_then(|g| self.mc.get(g).map(|x| (g, x))) else { return false };
        match group.config().tlv_receivers {
            TlvReceivers::Learn => {
                // The learned receivers are kept in TLV order: the same TLV
                // compares equal entry by entry (a TLV that names a
                // receiver twice never does, and is refused below).
                let rs = &group.config().receivers;
                let same = rs.len() == n && (0..n).all(|r| receiver(r).is_some_and(|(addr, qpn)| rs[r] == Receiver { addr, qpn }));
                if !same {
                    match self.mc.learn_receivers(g, n, |r| receiver(r).map(|(addr, qpn)| Receiver { addr, qpn })) {
                        Ok(()) => self.counters.local(Local::McTlvLearned),
                        Err(_) => self.counters.local(Local::McTlvLearnRefused),
                    }
                }
                false
            }
            strict => {
                let unknown = (0..n).filter(|&r| receiver(r).is_some_and(|(a, _)| !matches!(self.mc.lookup(&ResponseKey { receiver: a, proxy, dest_qp }), Lookup::Branch { .. }))).count();
                if unknown > 0 {
                    self.counters.local[Local::McTlvReceiverUnknown as usize].add(unknown as u64);
                }
                strict == TlvReceivers::Strict
            }
        }
    }

    /// Whether (`addr`, `qpn`) is a receiver branch of the group of the
    /// End.MT packet `inner`: one hash probe.
    pub(crate) fn mc_is_receiver(&self, inner: &[u8], addr: Ipv6Addr, qpn: u32) -> bool {
        let Some((proxy, dest_qp)) = group_data_key(inner) else { return false };
        match self.mc.lookup(&ResponseKey { receiver: addr, proxy, dest_qp }) {
            Lookup::Branch { group, branch } => self.mc.get(group).and_then(|g| g.branches().get(branch)).is_some_and(|b| !b.node && b.receiver.qpn == qpn),
            _ => false,
        }
    }

    /// Close the CNP windows that ended by `now`: the window CNPs are queued
    /// in [`Pipeline::mc_pending`] (bounded by its preallocated capacity;
    /// the rest are counted as `cnp-build-failed`).
    pub fn poll_multicast(&mut self, now_ns: u64) {
        if self.mc.is_empty() {
            return;
        }
        let pending = &mut self.mc_pending;
        let counters = &self.counters;
        self.mc.poll(now_ns, |g, _, up| {
            counters.local(Local::McCnpUp);
            if pending.len() < pending.capacity() {
                pending.push((g, up));
            } else {
                counters.dropped(Drop::CnpBuildFailed);
            }
        });
    }

    /// Build a queued upstream response into `p` (a fresh, empty buffer)
    /// with its Ethernet header, routed to the group's source. Returns the
    /// egress port, or why it cannot be sent (the caller counts it).
    pub fn build_mc_upstream<P: PacketBuffer>(&mut self, group: usize, up: &Upstream, p: &mut P, now_ns: u64) -> Result<u16, Drop> {
        let (up_dst, pcp) = {
            let cfg = self.mc.get(group).ok_or(Drop::ReplicaInvalid)?.config();
            let n = upstream_len(up);
            if !p.set_len(14 + n) {
                return Err(Drop::NoHeadroom);
            }
            build_upstream(up, cfg, &mut p.data_mut()[14..14 + n]).map_err(|_| Drop::NoHeadroom)?;
            (cfg.upstream_dst(), pcp_of(up, cfg))
        };
        self.emit_ip(p, IpAddr::V6(up_dst), pcp, now_ns)
    }
}

/// The name of an upstream response's kind (summaries, logs).
pub fn upstream_kind(up: &Upstream) -> &'static str {
    match up {
        Upstream::Ack { .. } => "ACK",
        Upstream::Nak { kind: NakKind::PsnSequenceError, .. } => "NAK",
        Upstream::Nak { kind: NakKind::Rnr { .. }, .. } => "RNR-NAK",
        Upstream::Nak { .. } => "NAK(fatal)",
        Upstream::Cnp { .. } => "CNP",
    }
}

/// The IPv6 destination of an Ethernet frame (untagged or 802.1Q).
fn frame_dst6(frame: &[u8]) -> Option<Ipv6Addr> {
    let l3 = match frame.get(12..14) {
        Some([0x86, 0xdd]) => 14,
        Some([0x81, 0x00]) if frame.get(16..18) == Some(&[0x86, 0xdd]) => 18,
        _ => return None,
    };
    let d: [u8; 16] = frame.get(l3 + 24..l3 + 40)?.try_into().ok()?;
    Some(Ipv6Addr::from(d))
}
