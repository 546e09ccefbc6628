//! RTT_est from receiver reporting (draft-tian-ccwg-long-haul-cnp
//! s.5.3.1: RTT_est "MAY be obtained through control plane configuration,
//! active probing, or receiver reporting").
//!
//! The receivers of RC flows report what arrived: every RoCEv2 data packet
//! with the AckReq bit (BTH A) set is answered by an ACK (AETH syndrome
//! ACK) whose PSN covers it. The owner of a congestion-aware port times one
//! such packet at a time: from the moment it leaves the port's queue (so
//! the time it waited in our own queue does not count) to the ACK of its
//! flow that covers its PSN, which reaches the owner through the reverse
//! path that also teaches source QPs ([`super::CongestionPort::on_reverse`]).
//! That is the round trip from this port to the receiver and back, the
//! path the port's queue drains into.
//!
//! Like the RTT probes ([`crate::rttprobe`]), the estimate is the smallest
//! round trip seen within a window (kept as [`BUCKETS`] sub-windows), so
//! queueing further on, a receiver's late ACK or a busy host raise it only
//! when every sample of the window is raised.
//!
//! A sample is only taken when it means a round trip (Karn's rule, RFC
//! 6298 s.3): the timing is abandoned when the flow's receiver answers with
//! a NAK or RNR NAK, when the sender sends the timed PSN or an earlier one
//! again (a retransmission), when the flow's entry is reused, and when no
//! ACK came within the timeout of the packet leaving the queue (a UC flow,
//! a lost ACK). Nor is a
//! retransmission ever timed: once a timing of a flow is abandoned, that
//! flow's packets up to the highest PSN it had sent by then (what a
//! go-back-N sender sends again) are not timed, and the same when any flow
//! sends a PSN that does not advance its own (the sender went back to it):
//! its packets up to the PSN it had reached are not timed. The first packet
//! beyond is. Such a fence lasts the timeout (an ACK later than that counts
//! as lost); [`FENCES`] flows can be fenced at once, and when more go back
//! within a timeout, no packet is timed until the fence that had to give
//! way would have lapsed.

/// Sub-windows of the minimum filter.
pub const BUCKETS: usize = 8;
/// Flows fenced at once (retransmitting, not to be timed).
pub const FENCES: usize = 16;
const NO_FLOW: u32 = u32::MAX;
/// A timed packet still in the queue after this many timeouts is given up
/// (its queue was cleared without its dequeue).
const QUEUED_TIMEOUTS: u64 = 64;
/// The BTH AckReq bit, carried in bit 31 of the PSN the packet path reads
/// ([`crate::congestion::RoceInfo::psn`]).
pub const ACK_REQ: u32 = 1 << 31;
const PSN_MASK: u32 = 0x00ff_ffff;

/// `[port.congestion.rtt_acks]` as the worker uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AckRttParams {
    /// The estimate is the smallest sample within this long.
    pub window_ns: u64,
    /// A timed packet not acknowledged within this long is given up.
    pub timeout_ns: u64,
}

impl Default for AckRttParams {
    fn default() -> Self {
        AckRttParams { window_ns: 10_000_000_000, timeout_ns: 1_000_000_000 }
    }
}

/// What the port measured (published with the port's state).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AckRttStats {
    /// Packets timed (AckReq set, leaving the queue).
    pub timed: u64,
    /// Round trips measured.
    pub samples: u64,
    /// Timings given up: no ACK within the timeout.
    pub timeouts: u64,
    /// Timings abandoned: NAK, RNR NAK, retransmission, entry reused.
    pub discarded: u64,
    /// Packets with AckReq not timed because they may be retransmissions
    /// (at or below the highest PSN their flow had sent when it went back,
    /// or when a timing of it was abandoned), or because more flows went
    /// back at once than [`FENCES`].
    pub retransmissions_skipped: u64,
    /// The last round trip (ns; 0: none yet).
    pub last_ns: u64,
    /// The smallest round trip of the window (ns; 0: none in the window).
    pub estimate_ns: u64,
    /// Mean deviation of one round trip from the next, gain 1/16 (RFC
    /// 3550 s.6.4.1's interarrival jitter, over round trips), ns.
    pub jitter_ns: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Timing {
    Idle,
    /// The timed packet (flow slot, PSN) is still in the queue behind
    /// `left` bytes of its flow (its own included); `since`: enqueued.
    Queued { flow: u32, psn: u32, left: u64, since: u64 },
    /// It left the queue at `since`.
    InFlight { flow: u32, psn: u32, since: u64 },
}

#[derive(Debug, Clone)]
pub(crate) struct AckRtt {
    p: AckRttParams,
    timing: Timing,
    /// The highest PSN the timed flow has sent since its timing began.
    hi: u32,
    /// Flows that went back or whose timing was abandoned: (flow, the
    /// highest PSN it had sent, since when); its packets up to that PSN
    /// are not timed (Karn's rule). Flow NO_FLOW: a free entry.
    fences: [(u32, u32, u64); FENCES],
    /// No timing starts before this (a fence had to give way).
    blind_until: u64,
    /// Per sub-window (its number, time / sub-window length): the smallest
    /// sample in it (u64::MAX: none).
    buckets: [(u64, u64); BUCKETS],
    pub(crate) stats: AckRttStats,
}

/// `a` is `b` or after it in 24-bit PSN space.
fn psn_ge(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) & PSN_MASK) < (1 << 23)
}

impl AckRtt {
    pub(crate) fn new(p: AckRttParams) -> Self {
        AckRtt { p, timing: Timing::Idle, hi: 0, fences: [(NO_FLOW, 0, 0); FENCES], blind_until: 0, buckets: [(u64::MAX, u64::MAX); BUCKETS], stats: AckRttStats::default() }
    }

    pub(crate) fn set_params(&mut self, p: AckRttParams) {
        if p.window_ns != self.p.window_ns {
            self.buckets = [(u64::MAX, u64::MAX); BUCKETS];
        }
        self.p = p;
    }

    fn sub_window(&self) -> u64 {
        (self.p.window_ns / BUCKETS as u64).max(1)
    }

    /// Abandon the timing of `flow` (counted under `discarded` or not);
    /// its packets up to the highest PSN it has sent are not timed.
    fn abandon(&mut self, flow: u32, now: u64) {
        self.timing = Timing::Idle;
        self.fence(flow, self.hi, now);
    }

    fn discard(&mut self, flow: u32, now: u64) {
        self.abandon(flow, now);
        self.stats.discarded += 1;
    }

    /// `flow`'s packets up to PSN `hi` (or a higher one it is already
    /// fenced to) are not timed from `now` for the timeout. When every
    /// entry holds a live fence, the oldest gives way and nothing is timed
    /// until it would have lapsed.
    fn fence(&mut self, flow: u32, hi: u32, now: u64) {
        let t = self.p.timeout_ns;
        if let Some(e) = self.fences.iter_mut().find(|e| e.0 == flow) {
            if now.saturating_sub(e.2) >= t || !psn_ge(e.1, hi) {
                e.1 = hi;
            }
            e.2 = now;
            return;
        }
        let i = match self.fences.iter().position(|e| e.0 == NO_FLOW || now.saturating_sub(e.2) >= t) {
            Some(i) => i,
            None => {
                let (i, since) = self.fences.iter().enumerate().map(|(i, e)| (i, e.2)).min_by_key(|&(_, since)| since).unwrap_or((0, now));
                self.blind_until = self.blind_until.max(since.saturating_add(t));
                i
            }
        };
        self.fences[i] = (flow, hi, now);
    }

    /// Whether `flow`'s packet `p` at `now` may be a retransmission: not
    /// to be timed. A fence the flow has passed, or that lapsed, is lifted.
    fn fenced(&mut self, flow: u32, p: u32, now: u64) -> bool {
        if now < self.blind_until {
            return true;
        }
        let t = self.p.timeout_ns;
        let Some(e) = self.fences.iter_mut().find(|e| e.0 == flow) else { return false };
        if now.saturating_sub(e.2) < t && psn_ge(e.1, p) {
            return true;
        }
        e.0 = NO_FLOW;
        false
    }

    /// `n` data packets of flow `flow` (a train ending in PSN `psn`, with
    /// its AckReq bit) entered the queue at `now`; `prev`: the PSN of the
    /// flow's packet before them (None: the flow's first); `queued` is what
    /// the flow now has queued, these packets included.
    #[inline]
    pub(crate) fn on_data(&mut self, flow: u32, psn: u32, n: u32, prev: Option<u32>, queued: u64, now: u64) {
        self.observe(flow, psn, n, prev, Some(queued), now);
    }

    /// A data packet of flow `flow` (PSN `psn`, the flow's before it
    /// `prev`) that the full queue dropped at `now`: never timed, but what
    /// it says about the flow counts as for a queued one. A PSN that does
    /// not advance the flow's is a go-back whose packets are not to be
    /// timed, even when its first packet is the one dropped; and the
    /// sender will send the dropped PSN again.
    #[cold]
    pub(crate) fn on_drop(&mut self, flow: u32, psn: u32, prev: Option<u32>, now: u64) {
        self.observe(flow, psn, 1, prev, None, now);
    }

    /// [`Self::on_data`] (`queued`: Some) and [`Self::on_drop`] (None).
    #[inline(always)]
    fn observe(&mut self, flow: u32, psn: u32, n: u32, prev: Option<u32>, queued: Option<u64>, now: u64) {
        let p = psn & PSN_MASK;
        // A PSN that does not advance the flow's, by the train's length
        // (its packets in order would end at prev + n): the sender went
        // back (go-back-N), so what it sends up to the highest PSN it had
        // reached is sent again. In a train that went back, that PSN is at
        // most prev + n - 1.
        if let Some(l) = prev {
            let top = l.wrapping_add(n.max(1) - 1) & PSN_MASK;
            if psn_ge(top, p) {
                self.fence(flow, top, now);
            }
        }
        match self.timing {
            Timing::Idle if psn & ACK_REQ != 0 => {
                let Some(queued) = queued else { return };
                if self.fenced(flow, p, now) {
                    self.stats.retransmissions_skipped += 1;
                } else {
                    self.timing = Timing::Queued { flow, psn: p, left: queued, since: now };
                    self.hi = p;
                }
            }
            // The timed PSN or an earlier one again: a retransmission.
            Timing::Queued { flow: f, psn: t, .. } | Timing::InFlight { flow: f, psn: t, .. } if f == flow => {
                if psn_ge(t, p) {
                    self.discard(flow, now);
                } else if psn_ge(p, self.hi) {
                    self.hi = p;
                }
            }
            _ => {}
        }
    }

    /// `len` bytes of flow `flow` left the queue at `now`.
    #[inline]
    pub(crate) fn on_dequeue(&mut self, flow: u32, len: u32, now: u64) {
        if let Timing::Queued { flow: f, psn, left, .. } = &mut self.timing {
            if *f == flow {
                *left = left.saturating_sub(u64::from(len));
                if *left == 0 {
                    self.timing = Timing::InFlight { flow, psn: *psn, since: now };
                    self.stats.timed += 1;
                }
            }
        }
    }

    /// A response of flow `flow`'s receiver (opcode, PSN, AETH syndrome)
    /// reached the owner at `now`.
    #[cfg(test)]
    pub(crate) fn on_response(&mut self, flow: u32, op: u8, psn: u32, syndrome: u8, now: u64) {
        self.on_response_at(flow, op, psn, syndrome, now, || now);
    }

    /// [`Self::on_response`] where `now` is the time of the worker's poll
    /// loop, taken before the response was received, and `clock` reads the
    /// time now. The round trip ends at the later of the two: an ACK is
    /// never dated before it arrived (a worker descheduled between its
    /// loop's clock reading and `rx_burst`, or an ACK handed over by
    /// another worker, would shorten the round trip, and the estimate is
    /// the smallest of the window). The clock is read only for the ACK that
    /// ends a timing, about once per round trip.
    pub(crate) fn on_response_at(&mut self, flow: u32, op: u8, psn: u32, syndrome: u8, now: u64, clock: impl FnOnce() -> u64) {
        use crate::wire::roce::opcode;
        let (f, t, since) = match self.timing {
            Timing::Idle => return,
            Timing::Queued { flow, psn, .. } => (flow, psn, None),
            Timing::InFlight { flow, psn, since } => (flow, psn, Some(since)),
        };
        if f != flow || op != opcode::RC_ACKNOWLEDGE {
            return;
        }
        // AETH syndrome bits 7-5: 000 ACK, 001 RNR NAK, 011 NAK.
        if syndrome >> 5 != 0 {
            return self.discard(f, now);
        }
        let (Some(since), true) = (since, psn_ge(psn & PSN_MASK, t)) else { return };
        self.timing = Timing::Idle;
        let at = clock().max(now);
        self.sample(at.saturating_sub(since).max(1), at);
    }

    fn sample(&mut self, rtt: u64, now: u64) {
        self.stats.samples += 1;
        if self.stats.last_ns != 0 {
            let d = rtt.abs_diff(self.stats.last_ns);
            self.stats.jitter_ns = (self.stats.jitter_ns * 15 + d) / 16;
        }
        self.stats.last_ns = rtt;
        let n = now / self.sub_window();
        let b = &mut self.buckets[(n % BUCKETS as u64) as usize];
        if b.0 != n {
            *b = (n, rtt);
        } else {
            b.1 = b.1.min(rtt);
        }
        self.stats.estimate_ns = self.estimate(now).unwrap_or(0);
    }

    /// The flow in slot `flow` is gone (aged): its timing, if any, with it.
    pub(crate) fn on_removed(&mut self, flow: u32) {
        if let Timing::Queued { flow: f, .. } | Timing::InFlight { flow: f, .. } = self.timing {
            if f == flow {
                self.timing = Timing::Idle;
                self.stats.discarded += 1;
            }
        }
        // The slot's next flow is another one.
        for e in self.fences.iter_mut().filter(|e| e.0 == flow) {
            e.0 = NO_FLOW;
        }
    }

    /// Every poll: a timing whose packet left longer than the timeout ago
    /// is given up (the time it waits in our own queue does not count: a
    /// standing queue longer than the timeout would leave no sample); the
    /// published estimate follows the window.
    pub(crate) fn poll(&mut self, now: u64) {
        match self.timing {
            Timing::InFlight { flow, since, .. } if now.saturating_sub(since) >= self.p.timeout_ns => {
                // Lost, or its ACK was: the sender will send it again.
                self.abandon(flow, now);
                self.stats.timeouts += 1;
            }
            // Still queued after QUEUED_TIMEOUTS timeouts: a queue cleared
            // without its dequeue; no round trip to wait for.
            Timing::Queued { flow, since, .. } if now.saturating_sub(since) >= self.p.timeout_ns.saturating_mul(QUEUED_TIMEOUTS) => self.discard(flow, now),
            _ => {}
        }
        self.stats.estimate_ns = self.estimate(now).unwrap_or(0);
    }

    /// The smallest sample of the sub-windows within the window (None:
    /// none).
    pub(crate) fn estimate(&self, now: u64) -> Option<u64> {
        let n = now / self.sub_window();
        self.buckets.iter().filter(|b| b.0 != u64::MAX && b.0 + BUCKETS as u64 > n).map(|b| b.1).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::roce::opcode;

    const MS: u64 = 1_000_000;
    const ACK: u8 = opcode::RC_ACKNOWLEDGE;

    fn rtt() -> AckRtt {
        AckRtt::new(AckRttParams { window_ns: 800 * MS, timeout_ns: 100 * MS })
    }

    /// The timeout runs from the departure; a packet that never leaves
    /// (its queue cleared without its dequeue) is given up after
    /// QUEUED_TIMEOUTS timeouts, and the next one is timed.
    #[test]
    fn a_timed_packet_that_never_leaves_the_queue_is_given_up_at_last() {
        let mut a = rtt();
        a.on_data(3, 10 | ACK_REQ, 1, None, 1000, 0);
        a.poll(99 * 100 * MS / 2);
        assert!(matches!(a.timing, Timing::Queued { .. }), "waiting in the queue is no timeout");
        a.poll(QUEUED_TIMEOUTS * 100 * MS);
        assert_eq!((a.timing, a.stats.discarded, a.stats.timeouts), (Timing::Idle, 1, 0));
        // Its flow is fenced to PSN 10; PSN 11 is timed.
        a.on_data(3, 11 | ACK_REQ, 1, Some(10), 1000, QUEUED_TIMEOUTS * 100 * MS + 1);
        assert!(matches!(a.timing, Timing::Queued { psn: 11, .. }));
    }

    #[test]
    fn the_round_trip_runs_from_leaving_the_queue_to_the_ack_that_covers_it() {
        let mut a = rtt();
        // Flow 3: 3000 bytes queued ahead, then the timed packet (PSN 10).
        a.on_data(3, 10 | ACK_REQ, 1, None, 4000, 0);
        a.on_dequeue(3, 1000, 2 * MS);
        a.on_dequeue(7, 1000, 2 * MS); // another flow
        a.on_dequeue(3, 2000, 3 * MS);
        assert_eq!(a.stats.timed, 0, "still queued");
        a.on_dequeue(3, 1000, 5 * MS); // the timed packet leaves
        assert_eq!(a.stats.timed, 1);
        // An ACK of an earlier PSN, another flow's ACK, a read response.
        a.on_response(3, ACK, 9, 0, 20 * MS);
        a.on_response(4, ACK, 10, 0, 20 * MS);
        a.on_response(3, opcode::RC | opcode::RDMA_READ_RESPONSE_ONLY, 10, 0, 20 * MS);
        assert_eq!(a.stats.samples, 0);
        a.on_response(3, ACK, 12, 0x1f, 25 * MS);
        assert_eq!((a.stats.samples, a.stats.last_ns, a.stats.estimate_ns), (1, 20 * MS, 20 * MS));
        assert_eq!(a.estimate(25 * MS), Some(20 * MS));
    }

    #[test]
    fn only_packets_that_ask_for_an_ack_are_timed_and_one_at_a_time() {
        let mut a = rtt();
        a.on_data(1, 5, 1, None, 100, 0);
        a.on_dequeue(1, 100, 0);
        assert_eq!(a.stats.timed, 0);
        a.on_data(1, 6 | ACK_REQ, 1, None, 100, 0);
        a.on_data(2, 1 | ACK_REQ, 1, None, 100, 0); // another flow while timing
        a.on_dequeue(2, 100, MS);
        a.on_dequeue(1, 100, MS);
        assert_eq!(a.stats.timed, 1);
        a.on_response(2, ACK, 1, 0, 9 * MS);
        assert_eq!(a.stats.samples, 0, "flow 2 was not timed");
        a.on_response(1, ACK, 6, 0, 9 * MS);
        assert_eq!(a.stats.last_ns, 8 * MS);
    }

    #[test]
    fn naks_retransmissions_reuse_and_silence_abandon_the_timing() {
        let mut a = rtt();
        // NAK (syndrome 011xxxxx) and RNR NAK (001xxxxx).
        for (psn, syn) in [(50, 0x60), (51, 0x20)] {
            a.on_data(1, psn | ACK_REQ, 1, None, 100, 0);
            a.on_dequeue(1, 100, 0);
            a.on_response(1, ACK, psn, syn, MS);
            a.on_response(1, ACK, psn, 0, 2 * MS);
        }
        assert_eq!((a.stats.discarded, a.stats.samples), (2, 0));
        // The sender sends PSN 45 again while 52 is timed (go-back-N).
        a.on_data(1, 52 | ACK_REQ, 1, None, 100, 0);
        a.on_data(1, 45, 1, None, 200, 0);
        assert_eq!(a.stats.discarded, 3);
        // A later PSN does not abandon it.
        a.on_data(1, 53, 1, None, 100, 0);
        a.on_data(1, 60 | ACK_REQ, 1, None, 100, 0);
        a.on_data(1, 61, 1, None, 200, 0);
        assert_eq!(a.stats.discarded, 3);
        a.on_removed(1);
        assert_eq!(a.stats.discarded, 4);
        // No ACK within the timeout.
        a.on_data(1, 70 | ACK_REQ, 1, None, 100, 0);
        a.on_dequeue(1, 100, 0);
        a.poll(100 * MS - 1);
        a.on_response(1, ACK, 70, 0, 150 * MS - 1);
        assert_eq!(a.stats.samples, 1, "just within the timeout");
        a.on_data(1, 71 | ACK_REQ, 1, None, 100, 200 * MS);
        a.on_dequeue(1, 100, 200 * MS);
        a.poll(300 * MS);
        a.on_response(1, ACK, 71, 0, 300 * MS);
        assert_eq!((a.stats.timeouts, a.stats.samples), (1, 1));
    }

    /// Karn's rule after the abandoned timing: what the sender sends again
    /// is not timed, since its ACK may answer the first transmission.
    #[test]
    fn retransmissions_are_not_timed_after_an_abandoned_timing() {
        let mut a = rtt();
        // PSN 10 timed, 11..=13 sent behind it, then a NAK for 10.
        a.on_data(1, 10 | ACK_REQ, 1, None, 100, 0);
        a.on_dequeue(1, 100, 0);
        for psn in 11..=13 {
            a.on_data(1, psn, 1, None, 100, 0);
        }
        a.on_response(1, ACK, 10, 0x60, MS);
        assert_eq!(a.stats.discarded, 1);
        // Go-back-N: 10..=13 again, each asking for an ACK. None is timed,
        // nor is the fence lifted by another flow's packets.
        for psn in 10..=13 {
            a.on_data(1, psn | ACK_REQ, 1, None, 100, 2 * MS);
            a.on_data(2, psn, 1, None, 100, 2 * MS);
            a.on_dequeue(1, 100, 2 * MS);
        }
        a.on_response(1, ACK, 13, 0, 3 * MS);
        assert_eq!((a.stats.retransmissions_skipped, a.stats.timed, a.stats.samples), (4, 1, 0));
        // Another flow is timed meanwhile.
        a.on_data(2, 20 | ACK_REQ, 1, None, 100, 4 * MS);
        a.on_dequeue(2, 100, 4 * MS);
        a.on_response(2, ACK, 20, 0, 6 * MS);
        assert_eq!((a.stats.samples, a.stats.last_ns), (1, 2 * MS));
        // PSN 14 is new data: timed again.
        a.on_data(1, 14 | ACK_REQ, 1, None, 100, 10 * MS);
        a.on_dequeue(1, 100, 10 * MS);
        a.on_response(1, ACK, 14, 0, 15 * MS);
        assert_eq!((a.stats.samples, a.stats.last_ns), (2, 5 * MS));
        // A timeout fences as well (the packet or its ACK was lost).
        a.on_data(1, 15 | ACK_REQ, 1, None, 100, 20 * MS);
        a.on_dequeue(1, 100, 20 * MS);
        a.poll(200 * MS);
        a.on_data(1, 15 | ACK_REQ, 1, None, 100, 200 * MS);
        assert_eq!((a.stats.timeouts, a.stats.retransmissions_skipped), (1, 5));
        // A reused slot is another flow: no fence.
        a.on_removed(1);
        a.on_data(1, 15 | ACK_REQ, 1, None, 100, 300 * MS);
        a.on_dequeue(1, 100, 300 * MS);
        assert_eq!((a.stats.retransmissions_skipped, a.stats.timed), (5, 5));
    }

    /// A flow that was not being timed goes back N: its packets up to the
    /// last PSN before the go-back are not timed, the first beyond it is.
    #[test]
    fn a_psn_that_does_not_advance_starts_a_retransmission() {
        let mut a = rtt();
        let mut prev = None;
        let mut send = |a: &mut AckRtt, psn: u32, now: u64| {
            a.on_data(1, psn, 1, prev, 100, now);
            prev = Some(psn);
            a.on_dequeue(1, 100, now);
        };
        for psn in 1..=20 {
            send(&mut a, psn, 0);
        }
        // Back to 15, AckReq on every packet: 15..=20 are not timed.
        for psn in 15..=20 {
            send(&mut a, psn | ACK_REQ, MS);
        }
        assert_eq!((a.stats.retransmissions_skipped, a.stats.timed), (6, 0));
        send(&mut a, 21 | ACK_REQ, 2 * MS);
        a.on_response(1, ACK, 21, 0, 7 * MS);
        assert_eq!((a.stats.timed, a.stats.samples, a.stats.last_ns), (1, 1, 5 * MS));
        // While 30 is timed, the sender goes back from 33 to 31: the
        // timing of 30 stands (30 is not sent again) ...
        for psn in 22..=29 {
            send(&mut a, psn, 10 * MS);
        }
        for psn in [30 | ACK_REQ, 31, 32, 33, 31 | ACK_REQ] {
            send(&mut a, psn, 10 * MS);
        }
        assert_eq!((a.stats.discarded, a.stats.timed), (0, 2));
        a.on_response(1, ACK, 30, 0, 14 * MS);
        assert_eq!((a.stats.samples, a.stats.last_ns), (2, 4 * MS));
        // ... and 32, 33 sent again after it are not timed; 34 is.
        send(&mut a, 32 | ACK_REQ, 15 * MS);
        send(&mut a, 33 | ACK_REQ, 15 * MS);
        assert_eq!((a.stats.timed, a.stats.retransmissions_skipped), (2, 8));
        send(&mut a, 34 | ACK_REQ, 15 * MS);
        assert_eq!(a.stats.timed, 3);
        // Going back to the timed PSN or before it abandons the timing.
        send(&mut a, 34, 16 * MS);
        assert_eq!((a.stats.discarded, a.stats.retransmissions_skipped), (1, 8));
    }

    /// A train whose packets went back inside it: its last PSN is below
    /// where it would end in order, and everything up to that end is
    /// fenced. An in-order train is not.
    #[test]
    fn a_train_that_went_back_is_fenced_to_where_it_could_have_reached() {
        let mut a = rtt();
        // 11..=14 in order: not a go-back; its AckReq times it.
        a.on_data(1, 14 | ACK_REQ, 4, Some(10), 400, 0);
        a.on_dequeue(1, 400, 0);
        a.on_response(1, ACK, 14, 0, 3 * MS);
        assert_eq!((a.stats.samples, a.stats.retransmissions_skipped), (1, 0));
        // 15, 16, 17, then back to 12, 13: ends at 13, below 14 + 5.
        a.on_data(1, 13 | ACK_REQ, 5, Some(14), 500, 4 * MS);
        a.on_dequeue(1, 500, 4 * MS);
        assert_eq!((a.stats.timed, a.stats.retransmissions_skipped), (1, 1));
        // 14..=18 again (as far as the train could have reached): not timed.
        a.on_data(1, 18 | ACK_REQ, 5, Some(13), 500, 5 * MS);
        assert_eq!(a.stats.retransmissions_skipped, 2);
        a.on_data(1, 19 | ACK_REQ, 1, Some(18), 100, 5 * MS);
        a.on_dequeue(1, 600, 5 * MS);
        assert_eq!(a.stats.timed, 2);
    }

    /// More flows going back at once than there are fences: nothing is
    /// timed until the fence that gave way would have lapsed.
    #[test]
    fn more_retransmitting_flows_than_fences_stop_the_timing() {
        let mut a = rtt(); // timeout 100 ms
        for f in 0..=FENCES as u32 {
            a.on_data(f, 50, 1, Some(60), 100, f as u64 * MS);
        }
        // Flow 0's fence gave way at 16 ms: blind until 100 ms after it was set.
        a.on_data(0, 55 | ACK_REQ, 1, Some(54), 100, 50 * MS);
        a.on_data(100, 1 | ACK_REQ, 1, None, 100, 99 * MS);
        assert_eq!((a.stats.retransmissions_skipped, a.timing), (2, Timing::Idle));
        a.on_data(100, 2 | ACK_REQ, 1, Some(1), 100, 100 * MS);
        assert_ne!(a.timing, Timing::Idle, "a new flow is timed once the blind spell is over");
        // Flow 5's fence (set at 5 ms) lapses at 105 ms.
        a.on_removed(100);
        a.on_data(5, 56 | ACK_REQ, 1, Some(55), 100, 104 * MS);
        assert_eq!(a.timing, Timing::Idle);
        a.on_data(5, 57 | ACK_REQ, 1, Some(56), 100, 105 * MS);
        assert_ne!(a.timing, Timing::Idle);
    }

    proptest::proptest! {
        /// Karn's rule, whatever the senders do: RC flows sending in order
        /// and going back N at random (after a NAK or their own timeout),
        /// AckReq at random, each packet acknowledged or NAKed by the
        /// receiver after the path's round trip plus a random delay (ACKs
        /// delayed, reordered against later ones, lost). A measured round
        /// trip is never shorter than the path's: the ACK of an earlier
        /// transmission never ends the timing of a later one.
        #[test]
        fn no_round_trip_is_shorter_than_the_path(
            ops in proptest::collection::vec((0u32..3, 0u8..10, 0u64..50_000, 0u8..20), 1..400)
        ) {
            const RTT: u64 = 100_000;
            let mut a = AckRtt::new(AckRttParams { window_ns: 10 * MS, timeout_ns: 5 * MS });
            // Per flow: next PSN, last PSN sent.
            let mut next = [0u32; 3];
            let mut last: [Option<u32>; 3] = [None; 3];
            // Responses in flight: (arrival, flow, PSN, syndrome).
            let mut acks: Vec<(u64, u32, u32, u8)> = Vec::new();
            let mut shortest = u64::MAX;
            let mut deliver = |a: &mut AckRtt, acks: &mut Vec<(u64, u32, u32, u8)>, until: u64| {
                acks.sort_by_key(|x| x.0);
                while acks.first().is_some_and(|x| x.0 <= until) {
                    let (at, f, psn, syn) = acks.remove(0);
                    let n = a.stats.samples;
                    a.on_response(f, ACK, psn, syn, at);
                    if a.stats.samples > n {
                        shortest = shortest.min(a.stats.last_ns);
                    }
                }
            };
            let mut now = 0u64;
            for (flow, what, delay, lost) in ops {
                now += 7_000;
                deliver(&mut a, &mut acks, now);
                a.poll(now);
                let f = flow as usize;
                // Go back 1..=5 now and then.
                if what == 0 && next[f] > 0 {
                    next[f] = next[f].saturating_sub(1 + u32::from(lost % 5));
                }
                let psn = next[f];
                next[f] += 1;
                let req = if what < 5 { ACK_REQ } else { 0 };
                a.on_data(flow, psn | req, 1, last[f], 100, now);
                last[f] = Some(psn);
                a.on_dequeue(flow, 100, now);
                // The receiver answers (a NAK now and then) or the answer
                // is lost.
                if req != 0 && lost > 1 {
                    acks.push((now + RTT + delay, flow, psn, if lost == 2 { 0x60 } else { 0x1f }));
                }
            }
            deliver(&mut a, &mut acks, u64::MAX);
            proptest::prop_assert!(shortest >= RTT, "a round trip of {} ns", shortest);
        }
    }

    #[test]
    fn psns_wrap() {
        let mut a = rtt();
        a.on_data(1, 0xff_fffe | ACK_REQ, 1, None, 100, 0);
        a.on_dequeue(1, 100, 0);
        a.on_response(1, ACK, 1, 0, 3 * MS);
        assert_eq!(a.stats.last_ns, 3 * MS);
    }

    #[test]
    fn the_estimate_is_the_smallest_sample_of_the_window() {
        let mut a = rtt(); // 800 ms window: 8 sub-windows of 100 ms
        let mut t = 0;
        let mut est = vec![];
        for (i, r) in [30u64, 20, 25, 40, 40, 40, 40, 40, 40, 40, 40].iter().enumerate() {
            a.on_data(1, (i as u32) | ACK_REQ, 1, None, 100, t);
            a.on_dequeue(1, 100, t);
            a.on_response(1, ACK, i as u32, 0, t + r * MS);
            est.push(a.stats.estimate_ns / MS);
            t += 100 * MS;
        }
        // The 20 ms sample (sub-window 1) counts through sub-window 8.
        assert_eq!(est, vec![30, 20, 20, 20, 20, 20, 20, 20, 20, 25, 40]);
        a.poll(t + 2000 * MS);
        assert_eq!((a.estimate(t + 2000 * MS), a.stats.estimate_ns), (None, 0), "nothing in the window");
        // Deviations 10, 5, 15, 0...: jitter follows with gain 1/16.
        let j = [10u64, 5, 15, 0, 0, 0, 0, 0, 0, 0].iter().fold(0u64, |j, d| (j * 15 + d * MS) / 16);
        assert_eq!(a.stats.jitter_ns, j);
    }
}
