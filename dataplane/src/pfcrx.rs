//! Received PAUSE and PFC frames (802.3 Annex 31B, 802.1Qbb): the port's
//! neighbour asks the router to stop sending it traffic of some priorities
//! for a while. On a port configured to honour them (`[port.pfc]`), the
//! data of a paused priority waits in the port's egress queue
//! ([`crate::egress`]) until the pause runs out or a zero-time frame (XON)
//! lifts it, while the other priorities keep leaving; notifications and
//! ARP / ND (the priority queue) are never held. Held packets still count
//! in the queue depth, so a long pause shows up to the congestion-aware
//! node as congestion (draft-tian s.5.3) and its CNPs slow the sources:
//! the DC's hop-by-hop PFC turns into end-to-end rate control across the
//! WAN, which is what keeps the path lossless when the router is a DC
//! gateway behind a PE that sends END.C PAUSE frames (draft-hu-acn-rocev2
//! s.4.1: "When gateway receives the PAUSE or RESUME frame, it suspend or
//! resume traffic transmission for the corresponding link priority").
//!
//! A frame may arrive on any worker that polls one of the port's RX queues;
//! the port's egress queue belongs to one worker. [`PortPause`] is shared
//! between them: the receiving worker stores each priority's deadline in
//! an atomic (the newest frame wins, as 802.1Qbb wants: a frame replaces
//! the time in force), the owner reads the deadlines when it dequeues. Both
//! use the workers' common TSC clock in nanoseconds.

use crate::wire::pfc::{nanos_from_quanta, MacControlRepr};
use std::sync::atomic::{AtomicU64, Ordering};

/// What a port does with received PAUSE / PFC frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PfcRxConfig {
    /// Priorities (bit n = priority n) whose PFC pause is honoured; a PFC
    /// frame's times for other priorities are ignored (counted).
    pub priorities: u8,
    /// Honour 802.3x PAUSE frames (they stop every priority).
    pub pause: bool,
    /// Priority of an untagged data packet by its DSCP (the egress VLAN
    /// tag's PCP decides for a tagged one).
    pub dscp_priority: [u8; 64],
    /// Link speed in bit/s, the unit of pause quanta (512 bit times); 0:
    /// not known (100 Gb/s is assumed until the NIC reports one).
    pub link_bps: u64,
    /// PFC watchdog (storm / deadlock protection): a priority paused
    /// without a break for this long stops being honoured for
    /// `restore_ns` (its held data leaves, its frames are ignored); 0: off.
    pub watchdog_ns: u64,
    pub restore_ns: u64,
}

impl PfcRxConfig {
    /// Every DSCP on priority `p`.
    pub fn with_default_priority(priorities: u8, pause: bool, p: u8) -> Self {
        PfcRxConfig { priorities, pause, dscp_priority: [p & 7; 64], link_bps: 0, watchdog_ns: 0, restore_ns: 0 }
    }

    /// The 802.1p priority of a frame as it leaves: the PCP of its VLAN
    /// tag, else by the DSCP of its IPv4 / IPv6 header (the outer one of a
    /// tunnel); a frame of another kind is priority of DSCP 0.
    #[inline]
    pub fn priority_of(&self, frame: &[u8]) -> u8 {
        if frame.len() < 15 {
            return self.dscp_priority[0];
        }
        let et = u16::from_be_bytes([frame[12], frame[13]]);
        if et == 0x8100 {
            return frame[14] >> 5;
        }
        let dscp = match et {
            0x0800 if frame.len() >= 16 => frame[15] >> 2,
            0x86dd if frame.len() >= 16 => ((frame[14] & 0x0f) << 2) | (frame[15] >> 6),
            _ => 0,
        };
        self.dscp_priority[usize::from(dscp)]
    }
}

/// What became of a received MAC Control frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Received {
    /// A PFC frame with at least one honoured priority.
    Pfc,
    /// An 802.3x PAUSE, honoured.
    Pause,
    /// Nothing in it for a priority this port honours (a PFC frame for
    /// other priorities, or PAUSE with `pause = false`).
    Ignored,
}

/// The pause state of one port, shared by the workers that receive its
/// frames and the one that owns its egress queue (and read by the control
/// thread for `show pfc`).
#[derive(Debug)]
pub struct PortPause {
    cfg: PfcRxConfig,
    link_bps: AtomicU64,
    /// Per priority: paused until this time (ns on the workers' clock).
    until: [AtomicU64; 8],
    /// Per priority: when the pause in force began (0: none), without a
    /// break since (the watchdog's base).
    since: [AtomicU64; 8],
    /// Per priority: the watchdog ignores its pauses until then.
    restore_until: [AtomicU64; 8],
    /// Per priority: times the watchdog fired.
    watchdog_fired: [AtomicU64; 8],
    /// Per priority: pause frames (time > 0) and XON frames (time 0)
    /// honoured.
    pauses: [AtomicU64; 8],
    resumes: [AtomicU64; 8],
    /// Frames received: PFC, PAUSE, and those with nothing honoured.
    pub pfc_frames: AtomicU64,
    pub pause_frames: AtomicU64,
    pub ignored_frames: AtomicU64,
    /// Frames honoured for some priorities whose times for others were
    /// ignored (a PFC frame enabling a priority not configured, or one the
    /// watchdog is restoring); counted in `pfc_frames` / `pause_frames`
    /// too.
    pub partly_ignored_frames: AtomicU64,
    /// Written by the egress queue's owner: data packets a pause set aside
    /// so far, and those held now.
    pub held_packets: AtomicU64,
    pub held_now: AtomicU64,
}

/// A snapshot of one priority for `show pfc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PriorityState {
    pub honoured: bool,
    /// Nanoseconds the pause in force still lasts (0: not paused).
    pub remaining_ns: u64,
    pub pauses: u64,
    pub resumes: u64,
    /// Times the watchdog fired, and how long its restoration still lasts.
    pub watchdog_fired: u64,
    pub restoring_ns: u64,
}

impl PortPause {
    pub fn new(cfg: PfcRxConfig) -> Self {
        PortPause {
            cfg,
            link_bps: AtomicU64::new(cfg.link_bps),
            until: Default::default(),
            since: Default::default(),
            restore_until: Default::default(),
            watchdog_fired: Default::default(),
            pauses: Default::default(),
            resumes: Default::default(),
            pfc_frames: AtomicU64::new(0),
            pause_frames: AtomicU64::new(0),
            ignored_frames: AtomicU64::new(0),
            partly_ignored_frames: AtomicU64::new(0),
            held_packets: AtomicU64::new(0),
            held_now: AtomicU64::new(0),
        }
    }

    pub fn config(&self) -> &PfcRxConfig {
        &self.cfg
    }

    /// The link speed quanta are counted in (bit/s).
    pub fn link_bps(&self) -> u64 {
        match self.link_bps.load(Ordering::Relaxed) {
            0 => 100_000_000_000,
            b => b,
        }
    }

    /// The NIC reported a (new) link speed: used unless `link_bps` was
    /// configured.
    pub fn set_link_speed(&self, bps: u64) {
        if self.cfg.link_bps == 0 && bps > 0 {
            self.link_bps.store(bps, Ordering::Relaxed);
        }
    }

    /// Apply a received frame at `now` (ns): each honoured priority is
    /// paused for the frame's time from now, or resumed by a zero time.
    pub fn receive(&self, c: &MacControlRepr, now: u64) -> Received {
        let bps = self.link_bps();
        let (asked, mut mask, times, kind) = match c {
            MacControlRepr::Pfc(p) => (p.class_enable, p.class_enable & self.cfg.priorities, p.times, Received::Pfc),
            MacControlRepr::Pause { quanta } => (0xff, if self.cfg.pause { 0xff } else { 0 }, [*quanta; 8], Received::Pause),
        };
        if self.cfg.watchdog_ns != 0 {
            // Priorities the watchdog is restoring take no pause.
            for (prio, r) in self.restore_until.iter().enumerate() {
                if r.load(Ordering::Relaxed) > now {
                    mask &= !(1 << prio);
                }
            }
        }
        if mask == 0 {
            self.ignored_frames.fetch_add(1, Ordering::Relaxed);
            return Received::Ignored;
        }
        if asked & !mask != 0 {
            self.partly_ignored_frames.fetch_add(1, Ordering::Relaxed);
        }
        for (prio, &t) in times.iter().enumerate() {
            if mask & (1 << prio) == 0 {
                continue;
            }
            if t == 0 {
                self.until[prio].store(0, Ordering::Relaxed);
                self.since[prio].store(0, Ordering::Relaxed);
                self.resumes[prio].fetch_add(1, Ordering::Relaxed);
            } else {
                // A new pause (none in force) starts the watchdog's clock;
                // one that extends a pause in force does not.
                if self.until[prio].load(Ordering::Relaxed) <= now {
                    self.since[prio].store(now.max(1), Ordering::Relaxed);
                }
                self.until[prio].store(now.saturating_add(nanos_from_quanta(t, bps).max(1)), Ordering::Relaxed);
                self.pauses[prio].fetch_add(1, Ordering::Relaxed);
            }
        }
        match kind {
            Received::Pfc => self.pfc_frames.fetch_add(1, Ordering::Relaxed),
            _ => self.pause_frames.fetch_add(1, Ordering::Relaxed),
        };
        kind
    }

    /// The priorities paused at `now` (bit n = priority n).
    #[inline]
    pub fn paused(&self, now: u64) -> u8 {
        let mut m = 0u8;
        for (prio, u) in self.until.iter().enumerate() {
            if u.load(Ordering::Relaxed) > now {
                m |= 1 << prio;
            }
        }
        m
    }

    /// Is the PFC watchdog on?
    #[inline]
    pub fn has_watchdog(&self) -> bool {
        self.cfg.watchdog_ns != 0
    }

    /// The watchdog, run by the owner of the port's egress queue when it
    /// sees the priorities in `paused` paused at `now`: a priority paused
    /// without a break for `watchdog_ns` (a PFC storm, or a deadlock
    /// upstream) is released and its pauses ignored for `restore_ns`.
    /// Returns the priorities still paused.
    pub fn watchdog(&self, now: u64, paused: u8) -> u8 {
        if self.cfg.watchdog_ns == 0 {
            return paused;
        }
        let mut still = paused;
        for prio in 0..8 {
            if paused & (1 << prio) == 0 {
                continue;
            }
            let since = self.since[prio].load(Ordering::Relaxed);
            if since != 0 && now.saturating_sub(since) >= self.cfg.watchdog_ns {
                self.restore_until[prio].store(now.saturating_add(self.cfg.restore_ns), Ordering::Relaxed);
                self.until[prio].store(0, Ordering::Relaxed);
                self.since[prio].store(0, Ordering::Relaxed);
                self.watchdog_fired[prio].fetch_add(1, Ordering::Relaxed);
                still &= !(1 << prio);
            }
        }
        still
    }

    /// Times the watchdog fired, all priorities.
    pub fn watchdog_fired(&self) -> u64 {
        self.watchdog_fired.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }

    /// The earliest end of a pause in force for one of `prios`, if any.
    pub fn next_end(&self, prios: u8, now: u64) -> Option<u64> {
        (0..8).filter(|p| prios & (1 << p) != 0).map(|p| self.until[p].load(Ordering::Relaxed)).filter(|&u| u > now).min()
    }

    /// Every priority's state at `now`.
    pub fn snapshot(&self, now: u64) -> [PriorityState; 8] {
        std::array::from_fn(|p| PriorityState {
            honoured: self.cfg.priorities & (1 << p) != 0 || self.cfg.pause,
            remaining_ns: self.until[p].load(Ordering::Relaxed).saturating_sub(now),
            pauses: self.pauses[p].load(Ordering::Relaxed),
            resumes: self.resumes[p].load(Ordering::Relaxed),
            watchdog_fired: self.watchdog_fired[p].load(Ordering::Relaxed),
            restoring_ns: self.restore_until[p].load(Ordering::Relaxed).saturating_sub(now),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::pfc::PfcRepr;

    fn port(prios: u8, pause: bool) -> PortPause {
        PortPause::new(PfcRxConfig { link_bps: 1_000_000_000, ..PfcRxConfig::with_default_priority(prios, pause, 0) })
    }

    #[test]
    fn a_pfc_frame_pauses_only_the_honoured_priorities_for_its_quanta() {
        let p = port(1 << 3 | 1 << 4, false);
        // 1000 quanta at 1 Gb/s = 512 us; priority 5 is not honoured.
        let f = MacControlRepr::Pfc(PfcRepr::pause(1 << 3 | 1 << 5, 1000));
        assert_eq!(p.receive(&f, 1_000), Received::Pfc);
        assert_eq!(p.paused(1_000), 1 << 3);
        assert_eq!(p.paused(1_000 + 511_999), 1 << 3);
        assert_eq!(p.paused(1_000 + 512_000), 0, "the pause ends after 1000 x 512 bit times");
        assert_eq!(p.next_end(0xff, 1_000), Some(513_000));
        let s = p.snapshot(1_000);
        assert_eq!((s[3].pauses, s[5].pauses, s[3].remaining_ns), (1, 0, 512_000));
        assert!(s[4].honoured && !s[5].honoured);
        // Priority 5's time was ignored: the frame counts as partly ignored
        // (and as a PFC frame), not as an ignored one.
        let n = |c: &AtomicU64| c.load(Ordering::Relaxed);
        assert_eq!((n(&p.pfc_frames), n(&p.partly_ignored_frames), n(&p.ignored_frames)), (1, 1, 0));
        p.receive(&MacControlRepr::Pfc(PfcRepr::pause(1 << 3 | 1 << 4, 1000)), 2_000);
        assert_eq!((n(&p.pfc_frames), n(&p.partly_ignored_frames)), (2, 1), "a frame asking only for honoured priorities is whole");
    }

    #[test]
    fn a_zero_time_resumes_and_a_newer_frame_replaces_the_time_in_force() {
        let p = port(1 << 3, false);
        p.receive(&MacControlRepr::Pfc(PfcRepr::pause(1 << 3, 0xffff)), 0);
        assert_eq!(p.paused(10_000_000), 1 << 3, "65535 quanta at 1 Gb/s = 33.5 ms");
        p.receive(&MacControlRepr::Pfc(PfcRepr::pause(1 << 3, 10)), 1_000);
        assert_eq!(p.paused(1_000 + 5_120), 0, "a shorter frame replaces the longer time");
        p.receive(&MacControlRepr::Pfc(PfcRepr::pause(1 << 3, 0xffff)), 2_000);
        p.receive(&MacControlRepr::Pfc(PfcRepr::resume(1 << 3)), 3_000);
        assert_eq!(p.paused(3_000), 0);
        assert_eq!(p.snapshot(3_000)[3].resumes, 1);
    }

    #[test]
    fn pause_stops_every_priority_only_when_configured() {
        let off = port(1 << 3, false);
        assert_eq!(off.receive(&MacControlRepr::Pause { quanta: 100 }, 0), Received::Ignored);
        assert_eq!((off.paused(0), off.ignored_frames.load(Ordering::Relaxed)), (0, 1));
        let on = port(0, true);
        assert_eq!(on.receive(&MacControlRepr::Pause { quanta: 100 }, 0), Received::Pause);
        assert_eq!(on.paused(1), 0xff);
        assert_eq!(on.receive(&MacControlRepr::Pfc(PfcRepr::pause(1 << 3, 100)), 0), Received::Ignored, "no PFC priority honoured");
    }

    #[test]
    fn the_link_speed_sets_the_quantum_unless_configured() {
        let p = PortPause::new(PfcRxConfig::with_default_priority(1, false, 0));
        assert_eq!(p.link_bps(), 100_000_000_000, "100 Gb/s until the NIC says");
        p.set_link_speed(25_000_000_000);
        p.receive(&MacControlRepr::Pfc(PfcRepr::pause(1, 1000)), 0);
        assert_eq!(p.next_end(1, 0), Some(20_480), "1000 x 512 bits at 25 Gb/s");
        let fixed = port(1, false);
        fixed.set_link_speed(25_000_000_000);
        assert_eq!(fixed.link_bps(), 1_000_000_000);
    }

    #[test]
    fn the_watchdog_releases_a_priority_paused_without_a_break_and_ignores_it_for_a_while() {
        // Watchdog 10 ms, restoration 5 ms; one quantum at 1 Gb/s = 512 ns.
        let p = PortPause::new(PfcRxConfig { link_bps: 1_000_000_000, watchdog_ns: 10_000_000, restore_ns: 5_000_000, ..PfcRxConfig::with_default_priority(1 << 3 | 1 << 4, false, 0) });
        let storm = MacControlRepr::Pfc(PfcRepr::pause(1 << 3, 0xffff));
        // A pause that ran out and a new one: the clock starts again.
        p.receive(&MacControlRepr::Pfc(PfcRepr::pause(1 << 3, 10)), 1_000);
        p.receive(&storm, 1_000_000);
        // Priority 3 refreshed every 1 ms (a storm), 4 paused once briefly.
        p.receive(&MacControlRepr::Pfc(PfcRepr::pause(1 << 4, 100)), 2_000_000);
        let mut t = 1_000_000;
        while t < 11_000_000 {
            p.receive(&storm, t);
            assert_eq!(p.watchdog(t, p.paused(t)) & (1 << 3), 1 << 3, "paused {} ms: not yet", (t - 1_000_000) / 1_000_000);
            t += 1_000_000;
        }
        assert_eq!(p.watchdog(11_000_000, p.paused(11_000_000)), 0, "10 ms without a break: released");
        assert_eq!(p.paused(11_000_001), 0);
        let s = p.snapshot(11_000_000);
        assert_eq!((s[3].watchdog_fired, s[3].restoring_ns, s[4].watchdog_fired), (1, 5_000_000, 0));
        // Restoring: its frames are ignored, other priorities are not.
        assert_eq!(p.receive(&storm, 12_000_000), Received::Ignored);
        assert_eq!(p.paused(12_000_000), 0);
        let partly = p.partly_ignored_frames.load(Ordering::Relaxed);
        p.receive(&MacControlRepr::Pfc(PfcRepr::pause(1 << 3 | 1 << 4, 100)), 13_000_000);
        assert_eq!(p.paused(13_000_000), 1 << 4);
        assert_eq!(p.partly_ignored_frames.load(Ordering::Relaxed), partly + 1, "priority 3's time, ignored while restoring, is counted");
        // After the restoration it is honoured again, with a fresh clock.
        p.receive(&storm, 16_000_000);
        assert_eq!(p.watchdog(16_000_001, p.paused(16_000_001)), 1 << 3);
        assert_eq!(p.watchdog_fired(), 1);
        // Off: never fires.
        let off = port(1 << 3, false);
        off.receive(&storm, 1);
        assert_eq!(off.watchdog(30_000_000, off.paused(30_000_000)), 1 << 3);
    }

    #[test]
    fn the_priority_of_a_frame_is_its_pcp_or_its_dscp() {
        let mut c = PfcRxConfig::with_default_priority(1 << 3, false, 1);
        c.dscp_priority[26] = 3;
        let mut v4 = vec![0u8; 34];
        v4[12..14].copy_from_slice(&[0x08, 0x00]);
        v4[15] = 26 << 2 | 2;
        assert_eq!(c.priority_of(&v4), 3);
        v4[15] = 10 << 2;
        assert_eq!(c.priority_of(&v4), 1);
        let mut v6 = vec![0u8; 54];
        v6[12..14].copy_from_slice(&[0x86, 0xdd]);
        // Version 6, traffic class 26 << 2 | ECT(0).
        let tc: u8 = 26 << 2 | 2;
        v6[14] = 0x60 | (tc >> 4);
        v6[15] = tc << 4;
        assert_eq!(c.priority_of(&v6), 3);
        let mut tagged = vec![0u8; 38];
        tagged[12..14].copy_from_slice(&[0x81, 0x00]);
        tagged[14] = 5 << 5;
        assert_eq!(c.priority_of(&tagged), 5);
        assert_eq!(c.priority_of(&[0u8; 10]), 1);
        // Cut off in the IP header's first octet: DSCP 0, no panic (the
        // IPv4 branch read octet 15 of a 15-octet frame).
        assert_eq!(c.priority_of(&v4[..15]), 1);
        assert_eq!(c.priority_of(&v6[..15]), 1);
    }
}
