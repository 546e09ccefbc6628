//! RTT_est by active probing (draft-tian-ccwg-long-haul-cnp s.5.3.1: the
//! node "SHOULD also maintain an estimate of the link round-trip time
//! (RTT_est) for each egress port, which MAY be obtained through control
//! plane configuration, active probing, or receiver reporting").
//!
//! The control thread owns one [`RttProbe`] per congestion-aware port that
//! has `[port.congestion.rtt_probe]`: it sends an ICMP / ICMPv6 Echo
//! Request to the configured target every interval (traffic class CS6,
//! ahead of the port's queued data), and the worker that receives the
//! Echo Reply hands it back with its arrival time ([`crate::pipeline::Event::EchoReply`]).
//! Both clocks are the TSC in nanoseconds, so the difference is the round
//! trip.
//!
//! The estimate is the smallest round trip among the last `window` probes
//! (lost probes count as gaps), as BBR's min_rtt filter does: a round trip
//! that includes queueing (ours or the peer's) would otherwise raise
//! RTT_est and with it K_max, and so delay the very response the queue
//! needs. A probe nobody answered within `timeout` is lost; when every
//! probe of the window is lost there is no estimate and RTT_est stays as
//! it is. RTT_est changes only when the estimate moves by more than 1/16
//! of it and at least [`DEADBAND_NS`], so jitter does not churn the
//! thresholds.
//!
//! A probe sent while its next hop was not resolved may wait in the
//! router for ARP / ND (up to seconds), so its round trip says nothing
//! about the link: its reply is counted as `held` and left out.
//!
//! An Echo Reply is only believed when it carries this probe's identifier,
//! a sequence number it sent and still waits for, and a tag over (port,
//! sequence, send time) keyed with a secret of this run: an off-path host
//! cannot forge a short round trip to shrink K_max.

use crate::wire::checksum;
use std::collections::hash_map::RandomState;
use std::collections::VecDeque;
use std::hash::BuildHasher;
use std::net::IpAddr;

/// Bytes of the Echo Request's data: send time (8), port (2), zero (6),
/// tag (8).
pub const PROBE_DATA: usize = 24;
/// Probes waiting for their reply at most (older ones count as lost).
pub const MAX_OUTSTANDING: usize = 64;
/// The longest window of probes the estimate looks at.
pub const MAX_WINDOW: usize = 64;
/// RTT_est bounds (the configuration's: 1 us ..= 10 s).
pub const MIN_RTT_NS: u64 = 1_000;
pub const MAX_RTT_NS: u64 = 10_000_000_000;
/// Changes of the estimate smaller than this never move RTT_est (the
/// scheduling jitter of software hosts; 625 KB of K_max at 100 Gb/s).
pub const DEADBAND_NS: u64 = 50_000;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProbeConfig {
    pub target: IpAddr,
    /// Our address the probes come from (same family as `target`).
    pub source: IpAddr,
    pub interval_ns: u64,
    /// A reply later than this is late and the probe lost.
    pub timeout_ns: u64,
    /// RTT_est is the smallest round trip of this many last probes.
    pub window: usize,
    /// A round trip at or above this makes the port's FANN Performance
    /// degradation event ([`crate::fann::Detector::on_latency`]); 0: none.
    pub degraded_ns: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProbeStats {
    pub sent: u64,
    pub answered: u64,
    pub lost: u64,
    /// Replies for a probe already answered or given up (duplicates, or
    /// later than `timeout`).
    pub late: u64,
    /// Replies whose tag does not verify (forged or corrupted).
    pub forged: u64,
    /// Replies to probes sent before their next hop was resolved (not
    /// samples).
    pub held: u64,
    /// Replies dated at or before their probe's send time: the worker's
    /// clock and the control thread's disagree (TSCs not in step), so no
    /// round trip can be read; the probe counts as lost, not as a 1 us
    /// sample that would set RTT_est (the window's minimum) and with it
    /// K_max to nothing.
    pub clock_skew: u64,
    /// Times the estimate moved RTT_est.
    pub changes: u64,
}

/// What a reply was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// A round trip of this many ns.
    Sample(u64),
    Late,
    Forged,
    /// The probe went before its next hop was resolved.
    Held,
    /// Dated at or before its probe's send time ([`ProbeStats::clock_skew`]).
    ClockSkew,
}

pub struct RttProbe {
    pub cfg: ProbeConfig,
    /// The DPDK port whose RTT_est this measures.
    pub port: u16,
    ident: u16,
    key: RandomState,
    next_seq: u16,
    next_due: u64,
    /// (sequence, send time, next hop resolved when sent) of the probes
    /// waiting for a reply, oldest first.
    outstanding: VecDeque<(u16, u64, bool)>,
    /// The outcome of the last `window` probes (None: lost), oldest first.
    samples: VecDeque<Option<u64>>,
    pub last_rtt_ns: Option<u64>,
    /// The round trips' variation: the mean deviation of one from the
    /// next, smoothed with gain 1/16 (RFC 3550 s.6.4.1's interarrival
    /// jitter, over round trips).
    pub jitter_ns: u64,
    pub stats: ProbeStats,
}

impl RttProbe {
    /// `ident`: the ICMP identifier of every probe of this router (the
    /// workers hand over replies that carry it); the first probe goes at
    /// `now`.
    pub fn new(cfg: ProbeConfig, port: u16, ident: u16, now: u64) -> Self {
        let window = cfg.window.clamp(1, MAX_WINDOW);
        RttProbe {
            cfg: ProbeConfig { window, ..cfg },
            port,
            ident,
            key: RandomState::new(),
            next_seq: 0,
            next_due: now,
            outstanding: VecDeque::with_capacity(MAX_OUTSTANDING),
            samples: VecDeque::with_capacity(window),
            last_rtt_ns: None,
            jitter_ns: 0,
            stats: ProbeStats::default(),
        }
    }

    /// Probing switched back on at `now` (`ctl congestion PORT rtt_probe
    /// on`): what was measured before it was off, however long ago, is
    /// forgotten (the window, the last round trip, the jitter, the probes
    /// still waiting, counted lost), so RTT_est follows only new probes;
    /// the next one goes at once. The counters go on.
    pub fn restart(&mut self, now: u64) {
        self.stats.lost += self.outstanding.len() as u64;
        self.outstanding.clear();
        self.samples.clear();
        self.last_rtt_ns = None;
        self.jitter_ns = 0;
        self.next_due = now;
    }

    fn tag(&self, seq: u16, sent: u64) -> u64 {
        self.key.hash_one((self.port, seq, sent))
    }

    fn record(&mut self, s: Option<u64>) {
        if self.samples.len() == self.cfg.window {
            self.samples.pop_front();
        }
        self.samples.push_back(s);
    }

    fn give_up(&mut self) {
        if let Some((_, _, resolved)) = self.outstanding.pop_front() {
            self.stats.lost += 1;
            if resolved {
                self.record(None);
            }
        }
    }

    /// Give up on probes older than the timeout; the next probe's packet
    /// (an IP packet, checksums filled) when one is due. `resolved`: the
    /// target's next hop is resolved, so the probe leaves at once.
    pub fn poll(&mut self, now: u64, resolved: bool) -> Option<Vec<u8>> {
        while let Some(&(_, sent, _)) = self.outstanding.front() {
            if now.saturating_sub(sent) < self.cfg.timeout_ns {
                break;
            }
            self.give_up();
        }
        if now < self.next_due {
            return None;
        }
        // Not a burst of catch-up probes after a stall: the next one an
        // interval from now.
        self.next_due = now.saturating_add(self.cfg.interval_ns.max(1));
        if self.outstanding.len() == MAX_OUTSTANDING {
            self.give_up();
        }
        let seq = self.next_seq;
        self.next_seq = seq.wrapping_add(1);
        self.outstanding.push_back((seq, now, resolved));
        self.stats.sent += 1;
        let mut data = [0u8; PROBE_DATA];
        data[0..8].copy_from_slice(&now.to_be_bytes());
        data[8..10].copy_from_slice(&self.port.to_be_bytes());
        data[16..24].copy_from_slice(&self.tag(seq, now).to_be_bytes());
        Some(echo_request(self.cfg.source, self.cfg.target, self.ident, seq, &data))
    }

    /// The port an Echo Reply's data names (None: not probe data).
    pub fn port_of(data: &[u8]) -> Option<u16> {
        (data.len() >= PROBE_DATA).then(|| u16::from_be_bytes([data[8], data[9]]))
    }

    /// An Echo Reply from `from` with sequence `seq` and `data`, received
    /// at `at` (the workers' clock).
    pub fn on_reply(&mut self, from: IpAddr, seq: u16, data: &[u8], at: u64) -> Reply {
        if from != self.cfg.target || data.len() < PROBE_DATA {
            self.stats.forged += 1;
            return Reply::Forged;
        }
        let sent = u64::from_be_bytes(data[0..8].try_into().unwrap_or_default());
        let tag = u64::from_be_bytes(data[16..24].try_into().unwrap_or_default());
        if Self::port_of(data) != Some(self.port) || tag != self.tag(seq, sent) {
            self.stats.forged += 1;
            return Reply::Forged;
        }
        let Some(i) = self.outstanding.iter().position(|&(s, t, _)| s == seq && t == sent) else {
            self.stats.late += 1;
            return Reply::Late;
        };
        let resolved = self.outstanding.remove(i).is_some_and(|(_, _, r)| r);
        // Later than the timeout: late and the probe lost, whether or not
        // the control thread's poll has given it up yet (it handles the
        // workers' events first).
        if at.saturating_sub(sent) >= self.cfg.timeout_ns {
            self.stats.late += 1;
            self.stats.lost += 1;
            if resolved {
                self.record(None);
            }
            return Reply::Late;
        }
        if !resolved {
            self.stats.held += 1;
            return Reply::Held;
        }
        if at <= sent {
            self.stats.clock_skew += 1;
            self.stats.lost += 1;
            self.record(None);
            return Reply::ClockSkew;
        }
        let rtt = (at - sent).clamp(MIN_RTT_NS, MAX_RTT_NS);
        self.stats.answered += 1;
        if let Some(prev) = self.last_rtt_ns {
            let d = rtt.abs_diff(prev);
            self.jitter_ns = (self.jitter_ns * 15 + d) / 16;
        }
        self.last_rtt_ns = Some(rtt);
        self.record(Some(rtt));
        Reply::Sample(rtt)
    }

    /// The smallest round trip among the last `window` probes (None: none
    /// of them answered).
    pub fn estimate(&self) -> Option<u64> {
        self.samples.iter().flatten().min().copied()
    }

    /// The RTT_est to move to from `current`, if the estimate differs from
    /// it by more than 1/16 of it and [`DEADBAND_NS`].
    pub fn proposal(&self, current: u64) -> Option<u64> {
        proposal(self.estimate()?, current)
    }

    /// Probes of the window so far, and how many of them were lost.
    pub fn window_fill(&self) -> (usize, usize) {
        (self.samples.len(), self.samples.iter().filter(|s| s.is_none()).count())
    }
}

/// The RTT_est to move to from `current` for the estimate `e` of a
/// measurement (these probes, or the receivers' ACKs): `e` if it differs
/// from `current` by more than 1/16 of it and [`DEADBAND_NS`].
pub fn proposal(e: u64, current: u64) -> Option<u64> {
    let d = e.abs_diff(current);
    (d.saturating_mul(16) > current && d > DEADBAND_NS).then_some(e)
}

/// An ICMP (IPv4) or ICMPv6 Echo Request from `src` to `dst` (CS6, TTL /
/// Hop Limit 64), checksums filled. `src` and `dst` must be of one family.
pub fn echo_request(src: IpAddr, dst: IpAddr, ident: u16, seq: u16, data: &[u8]) -> Vec<u8> {
    echo(src, dst, ident, seq, data, false)
}

/// The Echo Reply a target sends back (as [`echo_request`], the other
/// type): for tests and fuzzing.
pub fn echo_reply(src: IpAddr, dst: IpAddr, ident: u16, seq: u16, data: &[u8]) -> Vec<u8> {
    echo(src, dst, ident, seq, data, true)
}

fn echo(src: IpAddr, dst: IpAddr, ident: u16, seq: u16, data: &[u8], reply: bool) -> Vec<u8> {
    let mut icmp = Vec::with_capacity(8 + data.len());
    icmp.extend_from_slice(&[0, 0, 0, 0]);
    icmp.extend_from_slice(&ident.to_be_bytes());
    icmp.extend_from_slice(&seq.to_be_bytes());
    icmp.extend_from_slice(data);
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            icmp[0] = if reply { 0 } else { 8 };
            let c = checksum::checksum(&icmp);
            icmp[2..4].copy_from_slice(&c.to_be_bytes());
            let mut v = Vec::with_capacity(20 + icmp.len());
            v.extend_from_slice(&[0x45, 0xc0]);
            v.extend_from_slice(&((20 + icmp.len()) as u16).to_be_bytes());
            v.extend_from_slice(&[0, 0, 0x40, 0, 64, 1, 0, 0]);
            v.extend_from_slice(&s.octets());
            v.extend_from_slice(&d.octets());
            let c = !checksum::fold(checksum::sum(&v[..20]));
            v[10..12].copy_from_slice(&c.to_be_bytes());
            v.extend_from_slice(&icmp);
            v
        }
        (s, d) => {
            let (s, d) = (to_v6(s), to_v6(d));
            icmp[0] = if reply { 129 } else { 128 };
            let sum = checksum::combine(checksum::pseudo_v6(&s.octets(), &d.octets(), 58, icmp.len() as u32), checksum::sum(&icmp));
            icmp[2..4].copy_from_slice(&(!checksum::fold(sum)).to_be_bytes());
            let mut v = Vec::with_capacity(40 + icmp.len());
            v.extend_from_slice(&[0x6c, 0, 0, 0]);
            v.extend_from_slice(&(icmp.len() as u16).to_be_bytes());
            v.extend_from_slice(&[58, 64]);
            v.extend_from_slice(&s.octets());
            v.extend_from_slice(&d.octets());
            v.extend_from_slice(&icmp);
            v
        }
    }
}

fn to_v6(a: IpAddr) -> std::net::Ipv6Addr {
    match a {
        IpAddr::V4(a) => a.to_ipv6_mapped(),
        IpAddr::V6(a) => a,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn cfg(target: &str, source: &str) -> ProbeConfig {
        ProbeConfig { target: target.parse().unwrap(), source: source.parse().unwrap(), interval_ns: 100 * MS, timeout_ns: 500 * MS, window: 4, degraded_ns: 0 }
    }

    /// The reply a peer would send to `req` (an IP packet from `poll`):
    /// (its sequence number, its data).
    fn answer(req: &[u8]) -> (u16, Vec<u8>) {
        let off = if req[0] >> 4 == 4 { 20 } else { 40 };
        (u16::from_be_bytes([req[off + 6], req[off + 7]]), req[off + 8..].to_vec())
    }

    #[test]
    fn the_estimate_is_the_smallest_round_trip_of_the_window() {
        let mut p = RttProbe::new(cfg("2001:db8::2", "2001:db8::1"), 1, 0x4242, 0);
        let from: IpAddr = "2001:db8::2".parse().unwrap();
        let mut now = 0;
        let mut estimates = vec![];
        // Round trips of 20, 25, 21, 40 (queueing), 30, 30, 30, 30 ms.
        for rtt in [20, 25, 21, 40, 30, 30, 30, 30] {
            let req = p.poll(now, true).expect("a probe is due");
            let (seq, data) = answer(&req);
            assert_eq!(p.on_reply(from, seq, &data, now + rtt * MS), Reply::Sample(rtt * MS));
            estimates.push(p.estimate().unwrap() / MS);
            now += 100 * MS;
            assert!(p.poll(now - 1, true).is_none(), "one probe an interval");
        }
        // Window of 4: the 20 ms sample leaves after the fourth probe after it.
        assert_eq!(estimates, vec![20, 20, 20, 20, 21, 21, 30, 30]);
        assert_eq!(p.stats, ProbeStats { sent: 8, answered: 8, ..Default::default() });
        assert_eq!(p.last_rtt_ns, Some(30 * MS));
        // Deviations 5, 4, 19, 10, 0, 0, 0 ms, each taking 1/16 of the way.
        let j = [5u64, 4, 19, 10, 0, 0, 0].iter().fold(0u64, |j, d| (j * 15 + d * MS) / 16);
        assert_eq!(p.jitter_ns, j);
        assert!((1_800_000..1_850_000).contains(&j), "about 1.83 ms: {j}");
    }

    #[test]
    fn lost_probes_are_gaps_and_a_window_of_losses_has_no_estimate() {
        let mut p = RttProbe::new(cfg("10.0.0.2", "10.0.0.1"), 3, 7, 0);
        let from: IpAddr = "10.0.0.2".parse().unwrap();
        let req = p.poll(0, true).unwrap();
        let (seq, data) = answer(&req);
        assert_eq!(p.on_reply(from, seq, &data, 12 * MS), Reply::Sample(12 * MS));
        // Four probes nobody answers: each lost 500 ms after it went.
        let mut now = 100 * MS;
        for _ in 0..4 {
            assert!(p.poll(now, true).is_some());
            now += 100 * MS;
        }
        assert_eq!(p.estimate(), Some(12 * MS), "the answered probe is still in the window");
        for _ in 0..6 {
            p.poll(now, true);
            now += 100 * MS;
        }
        assert!(p.stats.lost >= 4);
        assert_eq!(p.window_fill(), (4, 4));
        assert_eq!(p.estimate(), None, "every probe of the window lost");
        assert_eq!(p.proposal(10 * MS), None, "RTT_est stays as it is");
    }

    #[test]
    fn replies_that_are_late_duplicated_or_forged_are_not_samples() {
        let mut p = RttProbe::new(cfg("2001:db8::2", "2001:db8::1"), 1, 9, 0);
        let from: IpAddr = "2001:db8::2".parse().unwrap();
        let req = p.poll(0, true).unwrap();
        let (seq, data) = answer(&req);
        // From another host, a changed send time, another port, a changed tag.
        assert_eq!(p.on_reply("2001:db8::3".parse().unwrap(), seq, &data, MS), Reply::Forged);
        let mut d = data.clone();
        d[7] ^= 1;
        assert_eq!(p.on_reply(from, seq, &d, MS), Reply::Forged, "a shorter round trip cannot be forged");
        let mut d = data.clone();
        d[9] ^= 1;
        assert_eq!(p.on_reply(from, seq, &d, MS), Reply::Forged);
        assert_eq!(p.on_reply(from, seq.wrapping_add(1), &data, MS), Reply::Forged, "the tag covers the sequence number");
        assert_eq!(p.on_reply(from, seq, &data[..PROBE_DATA - 1], MS), Reply::Forged);
        assert_eq!(p.stats.forged, 5);
        assert_eq!(p.on_reply(from, seq, &data, 3 * MS), Reply::Sample(3 * MS));
        assert_eq!(p.on_reply(from, seq, &data, 4 * MS), Reply::Late, "a duplicate");
        // A reply after the timeout: the probe was given up.
        let req = p.poll(100 * MS, true).unwrap();
        let (seq, data) = answer(&req);
        p.poll(700 * MS, true);
        assert_eq!(p.on_reply(from, seq, &data, 700 * MS), Reply::Late);
        assert_eq!((p.stats.late, p.stats.lost, p.stats.answered), (2, 1, 1));
        // Another run's secret: its probes' replies do not verify here.
        let other = RttProbe::new(cfg("2001:db8::2", "2001:db8::1"), 1, 9, 0);
        assert_ne!(other.tag(seq, 100 * MS), p.tag(seq, 100 * MS));
    }

    #[test]
    fn rtt_est_moves_only_past_a_sixteenth_and_the_deadband() {
        let mut p = RttProbe::new(cfg("2001:db8::2", "2001:db8::1"), 1, 9, 0);
        assert_eq!(p.proposal(10 * MS), None, "no sample yet");
        let from: IpAddr = "2001:db8::2".parse().unwrap();
        let req = p.poll(0, true).unwrap();
        let (seq, data) = answer(&req);
        p.on_reply(from, seq, &data, 10_600_000);
        assert_eq!(p.proposal(10 * MS), None, "6 % off: within 1/16");
        assert_eq!(p.proposal(9_900_000), Some(10_600_000), "7 % off");
        assert_eq!(p.proposal(11_400_000), Some(10_600_000));
        // Sub-millisecond: 40 us is far over 1/16 of 200 us but within the
        // deadband.
        let req = p.poll(100 * MS, true).unwrap();
        let (seq, data) = answer(&req);
        p.on_reply(from, seq, &data, 100 * MS + 160_000);
        assert_eq!(p.proposal(200_000), None);
        assert_eq!(p.proposal(211_000), Some(160_000));
    }

    #[test]
    fn a_probe_that_waited_for_address_resolution_is_no_sample() {
        let mut p = RttProbe::new(cfg("2001:db8::2", "2001:db8::1"), 1, 9, 0);
        let from: IpAddr = "2001:db8::2".parse().unwrap();
        // Sent unresolved, held in the router for 400 ms, answered.
        let req = p.poll(0, false).unwrap();
        let (seq, data) = answer(&req);
        assert_eq!(p.on_reply(from, seq, &data, 400 * MS), Reply::Held);
        assert_eq!(p.estimate(), None);
        // One that was never answered leaves no gap in the window either.
        p.poll(100 * MS, false).unwrap();
        let req = p.poll(200 * MS, true).unwrap();
        let (seq, data) = answer(&req);
        assert_eq!(p.on_reply(from, seq, &data, 210 * MS), Reply::Sample(10 * MS));
        p.poll(700 * MS, true);
        assert_eq!((p.stats.held, p.stats.lost, p.stats.answered), (1, 1, 1));
        assert_eq!(p.window_fill(), (1, 0), "the sample only: the unresolved probe given up leaves no gap");
    }

    #[test]
    fn probes_are_well_formed_echo_requests() {
        use crate::wire::icmpv4::{Icmpv4Message, Icmpv4Packet};
        use crate::wire::icmpv6::{Icmpv6Message, Icmpv6Packet};
        let data = [0xabu8; PROBE_DATA];
        let v6 = echo_request("2001:db8::1".parse().unwrap(), "2001:db8::2".parse().unwrap(), 0x1234, 5, &data);
        assert_eq!(v6.len(), 40 + 8 + PROBE_DATA);
        assert_eq!((v6[0], v6[1] >> 4, v6[6], v6[7]), (0x6c, 0, 58, 64), "version 6, traffic class CS6, ICMPv6, hop limit 64");
        let m = Icmpv6Packet::new_checked(&v6[40..]).unwrap();
        assert_eq!((m.msg_type(), m.msg_code(), m.echo_ident(), m.echo_seq_no()), (Icmpv6Message::ECHO_REQUEST, 0, 0x1234, 5));
        assert!(m.verify_checksum(&"2001:db8::1".parse().unwrap(), &"2001:db8::2".parse().unwrap()));
        assert_eq!(&v6[48..], &data);
        let v4 = echo_request("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap(), 0x1234, 5, &data);
        assert_eq!(v4.len(), 20 + 8 + PROBE_DATA);
        assert!(checksum::ipv4_header20_ok(v4[..20].try_into().unwrap()));
        assert_eq!((v4[1], v4[8], v4[9]), (0xc0, 64, 1), "CS6, TTL 64, ICMP");
        let m = Icmpv4Packet::new_checked(&v4[20..]).unwrap();
        assert!(m.verify_checksum());
        assert_eq!((m.msg_type(), m.msg_code(), m.echo_ident(), m.echo_seq_no()), (Icmpv4Message::ECHO_REQUEST, 0, 0x1234, 5));
        // The replies a target sends.
        let r6 = echo_reply("2001:db8::2".parse().unwrap(), "2001:db8::1".parse().unwrap(), 0x1234, 5, &data);
        let m = Icmpv6Packet::new_checked(&r6[40..]).unwrap();
        assert_eq!((m.msg_type(), m.echo_ident(), m.echo_seq_no()), (Icmpv6Message::ECHO_REPLY, 0x1234, 5));
        assert!(m.verify_checksum(&"2001:db8::2".parse().unwrap(), &"2001:db8::1".parse().unwrap()));
        let r4 = echo_reply("10.0.0.2".parse().unwrap(), "10.0.0.1".parse().unwrap(), 0x1234, 5, &data);
        let m = Icmpv4Packet::new_checked(&r4[20..]).unwrap();
        assert!(m.verify_checksum() && m.msg_type() == Icmpv4Message::ECHO_REPLY);
    }
}
