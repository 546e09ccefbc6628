//! END.C's PFC side (draft-hu-acn-rocev2 s.4.1): turn congestion
//! notifications that arrived over the WAN into IEEE 802.1Qbb PAUSE / RESUME
//! frames toward the DC gateway, per priority.
//!
//! Rules:
//! * Priority mapping ([`EndC::priority_for`]), first rule that applies:
//!   1. the DSCP the notification carries (the traffic class of the
//!      decapsulated notification's IP header, which a notifying node sets to
//!      the affected flow's class) when the configured DSCP table has an
//!      entry for it (`dscp_mapped`); unmapped DSCPs (e.g. the CS6 that a
//!      notification sent as network control uses) fall through;
//!   2. the notification is about a RoCEv2 flow (a Long-haul CNP in either
//!      format or a standard RoCEv2 CNP — they name a QP — or a FANN message
//!      whose Flow ID is UDP to port 4791) and `rocev2_priority` is set;
//!   3. the configured default priority.
//!
//!   Neither the Long-haul CNP body nor the FANN Flow ID carry a DSCP
//!   (draft-tian s.6, draft-hzh s.5.1.3), so rule 1 reads the IP header.
//! * Pause duration: a Long-haul CNP Pause carries microseconds; Rate Reduce,
//!   Notify, a FANN congestion event or a standard CNP use the configured
//!   default. A Resume (Long-haul CNP Resume, FANN recovery) sends RESUME
//!   (zero quanta) at once, unless another cause still has a pause in force
//!   on that priority: then the pause goes on for the others
//!   (`resume_held`), and RESUME follows when the last of them resumes or
//!   its pause ends. A cause is a notifying node (by the outer source
//!   address) and what it notifies about: the flow a CNP names (its sender
//!   and QP; [`flow_cause`]) or the event a FANN message reports (its Event
//!   Identifier, which the recovery repeats; [`event_cause`]). A node's
//!   Resume ends that cause's pause; one that pairs with none of the node's
//!   causes (a recovery from a node that restarted and lost its
//!   identifiers) ends all of that node's causes of its kind (flows or
//!   events), as a node-wide Resume would. A Resume acts on the priorities
//!   its cause (or, unpaired, its node's causes of its kind) paused, not on
//!   the one it maps to: a FANN recovery carries no Flow ID
//!   ([`EndC::on_resume`]).
//! * One PAUSE frame lasts at most 65535 quanta (about 335 us at 100 Gb/s),
//!   so while the requested pause lasts the controller re-sends PAUSE every
//!   `refresh_ns` (default: 80 % of what one frame covers).
//! * Watchdog: no priority stays paused longer than `max_pause_ns` after the
//!   last notification that asked for it; then RESUME is sent. A priority
//!   whose pause simply ran out also gets an explicit RESUME.
//!
//! Pure logic on injected time; the worker turns [`PfcAction`]s into frames
//! with [`build_frame`].

use crate::wire::pfc::{nanos_from_quanta, quanta_from_micros, FrameRepr, PfcRepr};
use crate::wire::Result;

#[derive(Debug, Clone, PartialEq)]
pub struct EndCConfig {
    /// Link speed of the port toward the DC gateway (for quanta).
    pub link_bps: u64,
    /// DSCP (0..63) -> PFC priority (0..7).
    pub dscp_to_priority: [u8; 64],
    /// Bit d set: `dscp_to_priority[d]` is a configured entry that rule 1
    /// of [`EndC::priority_for`] applies.
    pub dscp_mapped: u64,
    /// Priority of notifications about a RoCEv2 flow (rule 2).
    pub rocev2_priority: Option<u8>,
    /// Priority when the notification tells nothing about the class.
    pub default_priority: u8,
    /// Pause asked for by notifications without a duration, microseconds.
    pub default_pause_us: u32,
    /// Re-send PAUSE this often while a pause lasts (0: 80 % of one frame).
    pub refresh_ns: u64,
    /// Watchdog: longest pause without a new notification.
    pub max_pause_ns: u64,
}

impl Default for EndCConfig {
    fn default() -> Self {
        // No DSCP mapped: every notification pauses `default_priority`
        // (3, where RoCEv2 commonly runs) unless configured otherwise.
        EndCConfig {
            link_bps: 100_000_000_000,
            dscp_to_priority: [0; 64],
            dscp_mapped: 0,
            rocev2_priority: None,
            default_priority: 3,
            default_pause_us: 200,
            refresh_ns: 0,
            max_pause_ns: 10_000_000,
        }
    }
}

impl EndCConfig {
    pub fn validate(&self) -> core::result::Result<(), String> {
        if self.link_bps == 0 {
            return Err("link_bps = 0: must be the port's speed in bit/s".into());
        }
        if self.default_priority > 7 {
            return Err(format!("default_priority = {}: must be 0..=7", self.default_priority));
        }
        if let Some((d, p)) = self.dscp_to_priority.iter().enumerate().find(|(_, p)| **p > 7) {
            return Err(format!("dscp_to_priority[{d}] = {p}: must be 0..=7"));
        }
        if let Some(p) = self.rocev2_priority.filter(|p| *p > 7) {
            return Err(format!("rocev2_priority = {p}: must be 0..=7"));
        }
        if self.max_pause_ns == 0 {
            return Err("max_pause_ns = 0: the watchdog needs a limit".into());
        }
        Ok(())
    }

    /// How long one PAUSE frame of 65535 quanta holds at this link speed.
    pub fn frame_span_ns(&self) -> u64 {
        crate::wire::pfc::nanos_from_quanta(u16::MAX, self.link_bps)
    }

    fn refresh(&self) -> u64 {
        if self.refresh_ns != 0 {
            self.refresh_ns
        } else {
            (self.frame_span_ns() * 4 / 5).max(1)
        }
    }
}

/// What END.C learns from a notification about the traffic it concerns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Affected {
    /// DSCP of the notification's IP header (after decapsulation).
    pub dscp: Option<u8>,
    /// The notification names a RoCEv2 flow / QP.
    pub rocev2: bool,
}

/// What a notification asks of END.C.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// Pause for this long (None: the configured default).
    Pause { micros: Option<u32> },
    /// The congestion is over.
    Resume,
}

/// A frame to send: on each priority n in `prios`, pause for `times[n]`
/// quanta (0 = resume). An 802.1Qbb frame carries a time per priority, and
/// a newer frame replaces the time in force of each priority it enables,
/// so priorities refreshed together keep their own times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PfcAction {
    pub prios: u8,
    pub times: [u16; 8],
}

impl PfcAction {
    /// Pause the priorities in `prios` for `quanta` each.
    pub fn pause(prios: u8, quanta: u16) -> Self {
        PfcAction { prios, times: PfcRepr::pause(prios, quanta).times }
    }

    /// Resume the priorities in `prios`.
    pub fn resume(prios: u8) -> Self {
        PfcAction { prios, times: [0; 8] }
    }

    /// Every priority it names is resumed (a RESUME frame).
    pub fn is_resume(&self) -> bool {
        self.quanta() == 0
    }

    /// The longest time it gives a priority (0: a RESUME).
    pub fn quanta(&self) -> u16 {
        (0..8).filter(|i| self.prios & (1 << i) != 0).map(|i| self.times[i]).max().unwrap_or(0)
    }
}

/// Most interfaces one END.C SID sends PFC on (one per DC gateway).
pub const MAX_ENDC_IFACES: usize = 8;

/// Causes tracked per priority; beyond, the one whose pause ends first is
/// forgotten.
const MAX_ASKERS: usize = 32;

/// The kinds of cause (the top octet of a cause).
const CAUSE_FLOW: u64 = 1 << 56;
const CAUSE_EVENT: u64 = 2 << 56;
const CAUSE_KIND: u64 = 0xff << 56;

/// The cause of a CNP's pause: the flow whose sender (`sender`, the CNP's
/// destination, 4 or 16 octets) and QP (the flow's source QP, which the
/// CNP names) it is about.
pub fn flow_cause(sender: &[u8], qp: u32) -> u64 {
    // FNV-1a over the address and QP, in 56 bits.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in sender.iter().chain(qp.to_be_bytes().iter()) {
        h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
    }
    CAUSE_FLOW | (h & !CAUSE_KIND)
}

/// The cause of a FANN event's pause: its Event Identifier (the recovery
/// carries the same).
pub fn event_cause(event_id: u32) -> u64 {
    CAUSE_EVENT | u64::from(event_id)
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Asker {
    /// The notifying node (outer source address).
    from: u128,
    /// What it notified about ([`flow_cause`], [`event_cause`]).
    cause: u64,
    /// Its pause ends here.
    until_ns: u64,
    /// Its last notification asking for a pause.
    asked_ns: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct PrioState {
    paused: bool,
    /// The nodes whose pause is in force (`n` of them).
    askers: [Asker; MAX_ASKERS],
    n: usize,
    /// The requested pause ends here.
    until_ns: u64,
    /// Last PAUSE frame sent.
    sent_ns: u64,
    /// Last notification asking for a pause (watchdog base).
    asked_ns: u64,
    /// The last PAUSE frame holds the priority until here.
    covered_ns: u64,
    /// A cause was forgotten (more than [`MAX_ASKERS`] at once): a Resume
    /// that pairs with none of those tracked may be that cause's, and
    /// ends nothing else.
    overflowed: bool,
    /// Send the pause again at the next timer run (the link speed changed).
    resend: bool,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EndCStats {
    pub pauses: u64,
    /// Pause requests already covered by the frame in flight (no frame).
    pub coalesced: u64,
    pub refreshes: u64,
    pub resumes: u64,
    pub watchdog_resumes: u64,
    /// Resumes that did not end the pause: another node's is in force.
    pub resume_held: u64,
    /// Resumes of a priority not paused within a refresh interval of the
    /// last RESUME: no frame.
    pub resumes_coalesced: u64,
}

pub struct EndC {
    cfg: EndCConfig,
    prio: [PrioState; 8],
    /// When each priority's last RESUME was sent (0: never): one for a
    /// priority that is not paused goes at most once per refresh interval.
    resumed_ns: [u64; 8],
    pub stats: EndCStats,
}

impl EndC {
    pub fn new(cfg: EndCConfig) -> Self {
        EndC { cfg, prio: [PrioState::default(); 8], resumed_ns: [0; 8], stats: EndCStats::default() }
    }

    pub fn config(&self) -> &EndCConfig {
        &self.cfg
    }

    /// The link toward the DC gateway runs at `bps` now (the NIC reported
    /// another speed): the pauses in force stay, and are sent again at
    /// once in quanta of the new speed (802.3 Annex 31B: 512 bit times at
    /// the link's rate), since the frame in force is counted by the
    /// gateway at the speed the link has now.
    pub fn set_link_bps(&mut self, bps: u64) {
        if bps == self.cfg.link_bps || bps == 0 {
            return;
        }
        self.cfg.link_bps = bps;
        for p in self.prio.iter_mut().filter(|p| p.paused) {
            p.resend = true;
        }
    }

    /// The PFC priority to pause / resume for a notification (the rules in
    /// the module documentation).
    pub fn priority_for(&self, a: &Affected) -> u8 {
        if let Some(d) = a.dscp.map(|d| d & 63) {
            if self.cfg.dscp_mapped & (1u64 << d) != 0 {
                return self.cfg.dscp_to_priority[usize::from(d)];
            }
        }
        match self.cfg.rocev2_priority {
            Some(p) if a.rocev2 => p,
            _ => self.cfg.default_priority,
        }
    }

    pub fn is_paused(&self, prio: u8) -> bool {
        self.prio.get(usize::from(prio)).map(|p| p.paused).unwrap_or(false)
    }

    /// [`EndC::on_notification_about`] for a node's one and only cause.
    #[cfg(test)]
    pub fn on_notification(&mut self, from: u128, prio: u8, req: Request, now: u64) -> Option<PfcAction> {
        self.on_notification_about(from, 0, prio, req, now)
    }

    /// A notification from node `from` about `cause` for priority `prio`
    /// at `now`: the frame to send now, or None when a PAUSE is already in
    /// force for at least half of what this request's frame would cover
    /// (the deadline still moves; the refresh timer extends the pause), or
    /// when a Resume leaves another cause's pause in force. A flood of
    /// notifications thus costs at most about two frames per pause
    /// duration per priority, not one frame each.
    pub fn on_notification_about(&mut self, from: u128, cause: u64, prio: u8, req: Request, now: u64) -> Option<PfcAction> {
        let max_pause = self.cfg.max_pause_ns;
        let p = &mut self.prio[usize::from(prio & 7)];
        let bit = 1u8 << (prio & 7);
        match req {
            Request::Pause { micros } => {
                let us = micros.unwrap_or(self.cfg.default_pause_us).max(1);
                let until = now + u64::from(us) * 1000;
                p.until_ns = p.until_ns.max(until);
                p.asked_ns = now;
                let n = p.n;
                match p.askers[..n].iter().position(|a| a.from == from && a.cause == cause) {
                    Some(i) => {
                        let a = &mut p.askers[i];
                        a.until_ns = a.until_ns.max(until);
                        a.asked_ns = now;
                    }
                    None if n < MAX_ASKERS => {
                        p.askers[n] = Asker { from, cause, until_ns: until, asked_ns: now };
                        p.n += 1;
                    }
                    None => {
                        // Full: forget the pause that ends first (this one,
                        // when it ends before all the others). Its Resume
                        // will pair with nothing then.
                        p.overflowed = true;
                        if let Some(a) = p.askers.iter_mut().min_by_key(|a| a.until_ns).filter(|a| a.until_ns < until) {
                            *a = Asker { from, cause, until_ns: until, asked_ns: now };
                        }
                    }
                }
                // One frame covers min(requested, 65535 quanta); refreshes
                // cover the rest.
                let q = quanta_from_micros(u64::from(us), self.cfg.link_bps).max(1);
                let cover = nanos_from_quanta(q, self.cfg.link_bps).max(1);
                if p.paused && p.covered_ns >= now + cover / 2 {
                    self.stats.coalesced += 1;
                    return None;
                }
                p.paused = true;
                p.sent_ns = now;
                p.covered_ns = now + cover;
                self.stats.pauses += 1;
                Some(PfcAction::pause(bit, q))
            }
            Request::Resume => {
                // This cause's pause ends (or, when the node has no such
                // cause, all of the node's causes of this kind); the others
                // that are still in force (not run out, not past the
                // watchdog) go on.
                // An unpaired Resume after a cause was forgotten may be
                // that cause's: it ends nothing else.
                let n = p.n;
                let paired = p.askers[..n].iter().any(|a| a.from == from && a.cause == cause);
                let widen = !paired && !p.overflowed;
                let ends = |a: &Asker| a.from == from && if widen { a.cause & CAUSE_KIND == cause & CAUSE_KIND } else { a.cause == cause };
                let mut keep = [Asker::default(); MAX_ASKERS];
                let mut k = 0;
                for a in &p.askers[..n] {
                    if !ends(a) && now < a.until_ns && now.saturating_sub(a.asked_ns) < max_pause {
                        keep[k] = *a;
                        k += 1;
                    }
                }
                if p.paused && k > 0 {
                    p.askers = keep;
                    p.n = k;
                    p.until_ns = keep[..k].iter().map(|a| a.until_ns).max().unwrap_or(now);
                    p.asked_ns = keep[..k].iter().map(|a| a.asked_ns).max().unwrap_or(now);
                    self.stats.resume_held += 1;
                    return None;
                }
                // RESUME even if we think it is not paused (safe: a pause
                // we lost track of ends), but for a priority not paused at
                // most once per refresh interval: a flood of Resumes is
                // not a flood of frames.
                let last = &mut self.resumed_ns[usize::from(prio & 7)];
                if !p.paused && *last != 0 && now.saturating_sub(*last) < self.cfg.refresh() {
                    self.stats.resumes_coalesced += 1;
                    return None;
                }
                *last = now.max(1);
                *p = PrioState::default();
                self.stats.resumes += 1;
                Some(PfcAction::resume(bit))
            }
        }
    }

    /// The priorities (bit n = priority n) on which a cause of node `from`
    /// that `matches` holds a pause.
    fn held(&self, from: u128, matches: impl Fn(u64) -> bool) -> u8 {
        let mut m = 0u8;
        for (i, p) in self.prio.iter().enumerate() {
            if p.paused && p.askers[..p.n].iter().any(|a| a.from == from && matches(a.cause)) {
                m |= 1 << i;
            }
        }
        m
    }

    /// A Resume from node `from` about `cause`, which maps to priority
    /// `prio`: it ends the pause that cause holds, on whichever priorities
    /// it holds one (its event or flow may have paused another priority
    /// than the Resume maps to: a FANN recovery carries no Flow ID). A
    /// Resume that pairs with none of the node's causes ends the node's
    /// causes of its kind wherever they hold a pause; when there are none,
    /// it resumes `prio`. The RESUME frame for the priorities it frees
    /// (None when other causes hold all of them), and whether other causes
    /// hold some of them.
    pub fn on_resume(&mut self, from: u128, cause: u64, prio: u8, now: u64) -> (Option<PfcAction>, bool) {
        let mut prios = self.held(from, |c| c == cause);
        if prios == 0 {
            prios = self.held(from, |c| c & CAUSE_KIND == cause & CAUSE_KIND);
        }
        if prios == 0 {
            prios = 1 << (prio & 7);
        }
        let mut freed = 0u8;
        for i in 0..8u8 {
            if prios & (1 << i) != 0 {
                if let Some(a) = self.on_notification_about(from, cause, i, Request::Resume, now) {
                    freed |= a.prios;
                }
            }
        }
        ((freed != 0).then(|| PfcAction::resume(freed)), freed != prios)
    }

    /// Timers: refresh running pauses, resume expired ones, and enforce the
    /// watchdog. Returns at most one frame covering every priority due
    /// (a PFC frame carries all eight classes): pauses first, then resumes.
    pub fn poll(&mut self, now: u64) -> Option<(PfcAction, Option<PfcAction>)> {
        let refresh = self.cfg.refresh();
        let (mut pause_bits, mut times, mut resume_bits) = (0u8, [0u16; 8], 0u8);
        for (i, p) in self.prio.iter_mut().enumerate() {
            if !p.paused {
                continue;
            }
            let bit = 1u8 << i;
            if now.saturating_sub(p.asked_ns) >= self.cfg.max_pause_ns {
                *p = PrioState::default();
                resume_bits |= bit;
                self.resumed_ns[i] = now.max(1);
                self.stats.watchdog_resumes += 1;
                continue;
            }
            if now >= p.until_ns {
                *p = PrioState::default();
                resume_bits |= bit;
                self.resumed_ns[i] = now.max(1);
                self.stats.resumes += 1;
                continue;
            }
            // Refresh on schedule, or when the frame in force is about to
            // lapse (its last fifth) while the pause goes on.
            let lapsing = p.until_ns > p.covered_ns && now + (p.covered_ns.saturating_sub(p.sent_ns)) / 5 >= p.covered_ns;
            if p.resend || now.saturating_sub(p.sent_ns) >= refresh || lapsing {
                p.resend = false;
                let left_us = (p.until_ns - now).div_ceil(1000);
                // Each priority its own time: a frame replaces the time in
                // force of every priority it enables.
                let q = quanta_from_micros(left_us, self.cfg.link_bps).max(1);
                pause_bits |= bit;
                times[i] = q;
                p.sent_ns = now;
                p.covered_ns = now + nanos_from_quanta(q, self.cfg.link_bps);
                self.stats.refreshes += 1;
            }
        }
        let pause = (pause_bits != 0).then_some(PfcAction { prios: pause_bits, times });
        let resume = (resume_bits != 0).then_some(PfcAction::resume(resume_bits));
        match (pause, resume) {
            (Some(p), r) => Some((p, r)),
            (None, Some(r)) => Some((r, None)),
            (None, None) => None,
        }
    }
}

/// The 802.1Qbb frame for an action, from `src` (the port's MAC).
pub fn build_frame(a: &PfcAction, src: [u8; 6], buf: &mut [u8]) -> Result<usize> {
    let mut repr = PfcRepr::resume(a.prios);
    for (i, t) in repr.times.iter_mut().enumerate() {
        if a.prios & (1 << i) != 0 {
            *t = a.times[i];
        }
    }
    FrameRepr::pfc(src, repr).emit(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const US: u64 = 1_000;

    fn endc() -> EndC {
        EndC::new(EndCConfig::default())
    }

    #[test]
    fn mapping_by_dscp_and_default() {
        // Nothing configured: the default priority, whatever the class.
        let e = endc();
        for dscp in [None, Some(0), Some(26), Some(46), Some(48)] {
            assert_eq!(e.priority_for(&Affected { dscp, rocev2: dscp == Some(26) }), 3, "{dscp:?}");
        }
        let mut bad = EndCConfig::default();
        bad.dscp_to_priority[7] = 9;
        assert!(bad.validate().unwrap_err().contains("dscp_to_priority[7] = 9"));
    }

    fn mapped() -> EndC {
        let mut c = EndCConfig { default_priority: 2, rocev2_priority: Some(4), ..EndCConfig::default() };
        c.dscp_to_priority[26] = 3;
        c.dscp_to_priority[46] = 5;
        // A table value without a configured entry: never used.
        c.dscp_to_priority[48] = 6;
        c.dscp_mapped = (1 << 26) | (1 << 46);
        EndC::new(c)
    }

    #[test]
    fn rule1_configured_dscp_wins() {
        let e = mapped();
        assert_eq!(e.priority_for(&Affected { dscp: Some(26), rocev2: true }), 3, "DSCP entry before the RoCEv2 rule");
        assert_eq!(e.priority_for(&Affected { dscp: Some(46), rocev2: false }), 5);
        // Only the low six bits are a DSCP.
        assert_eq!(e.priority_for(&Affected { dscp: Some(64 + 26), rocev2: false }), 3);
    }

    #[test]
    fn rule2_unmapped_dscp_falls_through_to_rocev2() {
        let e = mapped();
        // CS6 (48) has a table value (6) but no configured entry.
        assert_eq!(e.config().dscp_to_priority[48], 6);
        assert_eq!(e.priority_for(&Affected { dscp: Some(48), rocev2: true }), 4);
        assert_eq!(e.priority_for(&Affected { dscp: None, rocev2: true }), 4);
    }

    #[test]
    fn rule3_default_priority() {
        let e = mapped();
        assert_eq!(e.priority_for(&Affected { dscp: Some(48), rocev2: false }), 2);
        assert_eq!(e.priority_for(&Affected::default()), 2);
        // Without rocev2_priority a RoCEv2 notification takes the default too.
        let e = EndC::new(EndCConfig { default_priority: 1, ..EndCConfig::default() });
        assert_eq!(e.priority_for(&Affected { dscp: Some(26), rocev2: true }), 1, "no configured DSCP entries by default");
        let bad = EndCConfig { rocev2_priority: Some(8), ..EndCConfig::default() };
        assert!(bad.validate().unwrap_err().contains("rocev2_priority = 8"));
    }

    #[test]
    fn pause_quanta_from_micros_at_link_speed() {
        let mut e = endc();
        // 100 us at 100 Gb/s = 1e7 bits = 19532 quanta (512 bit times, rounded up).
        let a = e.on_notification(0, 3, Request::Pause { micros: Some(100) }, 0).unwrap();
        assert_eq!(a, PfcAction::pause(1 << 3, 19532));
        assert!(e.is_paused(3));
        // No duration: the default (200 us).
        let a = e.on_notification(0, 5, Request::Pause { micros: None }, 0).unwrap();
        assert_eq!(a.quanta(), 39063);
    }

    /// Two priorities refreshed by the same poll share one frame, each
    /// with its own time: a frame replaces the time in force of every
    /// priority it enables (802.1Qbb), so a single time for both (as
    /// before: the smaller) cut priority 3's long pause down to what
    /// priority 5 still needed, and the gateway could send priority 3
    /// until the next poll.
    #[test]
    fn a_shared_refresh_keeps_each_prioritys_time() {
        let span = |q: u16| nanos_from_quanta(q, 100_000_000_000);
        let mut e = endc();
        // (sent, quanta) of every frame that names priority 3.
        let a = e.on_notification_about(1, 1, 3, Request::Pause { micros: Some(1000) }, 0).unwrap();
        let mut frames3 = vec![(0, a.times[3])];
        let mut shared = 0;
        let mut t = 10 * US;
        while t < 1200 * US {
            if t == 250 * US {
                // Priority 5: 20 us, then 5 us later 20 us more (coalesced:
                // the frame in force covers half of it; the deadline moves).
                assert!(e.on_notification_about(1, 2, 5, Request::Pause { micros: Some(20) }, 250 * US).is_some());
                assert!(e.on_notification_about(1, 2, 5, Request::Pause { micros: Some(20) }, 255 * US).is_none());
            }
            if let Some((x, y)) = e.poll(t) {
                for f in [Some(x), y].into_iter().flatten() {
                    if f.prios & (1 << 3) != 0 {
                        frames3.push((t, f.times[3]));
                        if f.prios & (1 << 5) != 0 && f.times[5] != 0 {
                            shared += 1;
                            assert!(f.times[3] > f.times[5], "priority 3 keeps its longer time: {f:?}");
                        }
                    }
                }
            }
            t = match t {
                t if t == 250 * US => 255 * US,
                t if t == 255 * US => 260 * US,
                t => t + 10 * US,
            };
        }
        assert!(shared > 0, "the two priorities were refreshed together: {frames3:?}");
        // Each frame for priority 3 comes before the one in force ends,
        // until the pause (1000 us) is over; then a RESUME.
        for w in frames3.windows(2) {
            let ((s0, q0), (s1, _)) = (w[0], w[1]);
            if q0 != 0 && s1 < 1000 * US {
                assert!(s1 <= s0 + span(q0), "priority 3 unpaused from {} ns to {s1} ns: {frames3:?}", s0 + span(q0));
            }
        }
        assert_eq!(frames3.last().map(|f| f.1), Some(0), "{frames3:?}");
    }

    /// A Resume ends its cause's pause on the priority that cause paused,
    /// whatever priority the Resume itself maps to (a FANN recovery has no
    /// Flow ID); one that pairs with no cause ends the node's causes of its
    /// kind wherever they are, and other nodes' pauses go on.
    #[test]
    fn a_resume_finds_the_priority_its_cause_paused() {
        let (r1, r2) = (0xa1u128, 0xa2u128);
        let (ev, other) = (event_cause(7), event_cause(8));
        let mut e = endc();
        assert!(e.on_notification_about(r1, ev, 4, Request::Pause { micros: Some(5000) }, 0).is_some());
        assert!(e.on_notification_about(r2, other, 3, Request::Pause { micros: Some(5000) }, 0).is_some());
        // r1's recovery maps to 3, where r2's pause stands: it frees 4.
        assert_eq!(e.on_resume(r1, ev, 3, 100 * US), (Some(PfcAction::resume(1 << 4)), false));
        assert!(!e.is_paused(4) && e.is_paused(3));
        // Unpaired (r2 restarted and lost its identifiers): all its events.
        assert!(e.on_notification_about(r2, other, 6, Request::Pause { micros: Some(5000) }, 200 * US).is_some());
        assert_eq!(e.on_resume(r2, event_cause(99), 0, 300 * US), (Some(PfcAction::resume(1 << 3 | 1 << 6)), false));
        assert!(!e.is_paused(3) && !e.is_paused(6));
        // Nothing held anywhere: RESUME on the mapped priority.
        assert_eq!(e.on_resume(r1, ev, 2, 400 * US), (Some(PfcAction::resume(1 << 2)), false));
        // A flow's Resume does not end the node's events.
        assert!(e.on_notification_about(r1, ev, 4, Request::Pause { micros: Some(5000) }, 500 * US).is_some());
        assert_eq!(e.on_resume(r1, flow_cause(&[10, 0, 0, 1], 5), 4, 600 * US), (None, true));
        assert!(e.is_paused(4));
    }

    #[test]
    fn long_pause_is_refreshed_then_resumed() {
        let mut e = endc();
        let span = e.config().frame_span_ns(); // ~335 us at 100G
        assert!((335 * US..336 * US).contains(&span), "{span}");
        e.on_notification(0, 3, Request::Pause { micros: Some(1000) }, 0).unwrap();
        // Nothing before 80 % of a frame's span.
        assert_eq!(e.poll(span * 4 / 5 - 1), None);
        let (p, r) = e.poll(span * 4 / 5).unwrap();
        assert_eq!(p.prios, 1 << 3);
        assert!(p.quanta() > 0);
        assert_eq!(r, None);
        // Refreshes keep coming while the pause lasts, then one RESUME.
        let mut refreshes = 1;
        let mut resumed_at = None;
        let mut t = span * 4 / 5;
        while t < 2 * MS {
            t += 10 * US;
            if let Some((a, _)) = e.poll(t) {
                if a.quanta() == 0 {
                    resumed_at = Some(t);
                    break;
                }
                refreshes += 1;
            }
        }
        assert_eq!(refreshes, 3, "1000 us at one refresh per ~268 us");
        let at = resumed_at.expect("resume after the pause ends");
        assert!((1000 * US..1010 * US + 1).contains(&at), "{at}");
        assert!(!e.is_paused(3));
    }

    #[test]
    fn a_flood_of_pause_notifications_is_coalesced_but_never_leaves_a_gap() {
        let mut e = endc();
        // A Rate Reduce (default pause, 200 us) every microsecond for 2 ms.
        let mut frames: Vec<(u64, u64)> = Vec::new(); // (sent, covered until)
        let span = |q: u16| crate::wire::pfc::nanos_from_quanta(q, 100_000_000_000);
        let mut t = 0;
        while t < 2 * MS {
            if let Some(a) = e.on_notification(0, 3, Request::Pause { micros: None }, t) {
                frames.push((t, t + span(a.quanta())));
            }
            if let Some((a, r)) = e.poll(t) {
                assert!(a.quanta() > 0 && r.is_none(), "no resume while notifications keep coming");
                frames.push((t, t + span(a.quanta())));
            }
            t += US;
        }
        assert!(frames.len() <= 25, "about two frames per 200 us, not 2000: {}", frames.len());
        assert_eq!(e.stats.coalesced + e.stats.pauses, 2000);
        // Every instant from the first notification on is covered by a frame.
        let mut covered = 0;
        for (sent, until) in &frames {
            assert!(*sent <= covered, "gap from {covered} to {sent}");
            covered = covered.max(*until);
        }
        assert!(covered >= 2 * MS);
        // The flood stops: the pause ends ~200 us after the last request.
        let mut resumed = None;
        while t < 3 * MS {
            if let Some((a, r)) = e.poll(t) {
                if a.quanta() == 0 || r.is_some() {
                    resumed = Some(t);
                    break;
                }
            }
            t += US;
        }
        let at = resumed.expect("RESUME after the last notification's pause");
        assert!((2 * MS + 190 * US..2 * MS + 210 * US).contains(&at), "{at}");
    }

    #[test]
    fn resume_notification_resumes_at_once() {
        let mut e = endc();
        e.on_notification(0, 3, Request::Pause { micros: Some(5000) }, 0);
        let a = e.on_notification(0, 3, Request::Resume, 100 * US).unwrap();
        assert_eq!(a, PfcAction::resume(1 << 3));
        assert!(!e.is_paused(3));
        assert_eq!(e.poll(10 * MS), None, "nothing left to refresh");
    }

    /// Two WAN nodes pause the same priority: the first one's Resume does
    /// not lift the pause the second still asks for; the second's does. A
    /// node whose pause ran out no longer holds it.
    #[test]
    fn a_resume_lifts_the_pause_only_when_no_other_node_asks_for_it() {
        let (r1, r2, r3) = (1u128, 2u128, 3u128);
        let mut e = endc();
        assert!(e.on_notification(r1, 3, Request::Pause { micros: Some(5000) }, 0).is_some());
        e.on_notification(r2, 3, Request::Pause { micros: Some(5000) }, 10 * US);
        assert_eq!(e.on_notification(r1, 3, Request::Resume, 100 * US), None, "R2 still asks");
        assert!(e.is_paused(3));
        assert_eq!(e.stats.resume_held, 1);
        // The pause goes on for R2: refreshed, not resumed.
        let (a, _) = e.poll(100 * US + e.config().frame_span_ns()).expect("refresh");
        assert_ne!(a.quanta(), 0);
        let a = e.on_notification(r2, 3, Request::Resume, 2 * MS).unwrap();
        assert_eq!(a, PfcAction::resume(1 << 3));
        assert!(!e.is_paused(3));
        // R3's pause has run out when R1 resumes: RESUME at once.
        e.on_notification(r3, 3, Request::Pause { micros: Some(100) }, 3 * MS);
        e.on_notification(r1, 3, Request::Pause { micros: Some(5000) }, 3 * MS);
        assert_eq!(e.on_notification(r1, 3, Request::Resume, 3 * MS + 200 * US), Some(PfcAction::resume(1 << 3)));
        // Other priorities are their own.
        e.on_notification(r1, 3, Request::Pause { micros: Some(5000) }, 4 * MS);
        assert_eq!(e.on_notification(r2, 5, Request::Resume, 4 * MS), Some(PfcAction::resume(1 << 5)));
        assert!(e.is_paused(3));
    }

    /// One WAN node pauses a priority for two flows (two QPs of one
    /// sender): the Resume of the first leaves the second's pause in force;
    /// the second's lifts it. A FANN recovery ends the event with its
    /// identifier; one that pairs with no event of the node (a node that
    /// restarted) ends all of its events, but not its flows' pauses.
    #[test]
    fn a_resume_lifts_the_pause_only_when_no_other_cause_holds_it() {
        let r1 = 1u128;
        let sender = [0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];
        let (qa, qb) = (flow_cause(&sender, 0x100), flow_cause(&sender, 0x101));
        assert_ne!(qa, qb);
        assert_ne!(flow_cause(&[10, 0, 1, 2], 7), flow_cause(&[10, 0, 1, 3], 7));
        let pause = Request::Pause { micros: Some(5000) };
        let mut e = endc();
        assert!(e.on_notification_about(r1, qa, 3, pause, 0).is_some());
        e.on_notification_about(r1, qb, 3, pause, 10 * US);
        assert_eq!(e.on_notification_about(r1, qa, 3, Request::Resume, 100 * US), None, "flow B still paused");
        assert!(e.is_paused(3));
        assert_eq!(e.stats.resume_held, 1);
        assert_eq!(e.on_notification_about(r1, qb, 3, Request::Resume, 200 * US), Some(PfcAction::resume(1 << 3)));
        // Events: the recovery of event 7 leaves event 8; a recovery with
        // an identifier the node never used ends its events (8) but not
        // the flow it paused.
        e.on_notification_about(r1, event_cause(7), 3, pause, MS);
        e.on_notification_about(r1, event_cause(8), 3, pause, MS);
        e.on_notification_about(r1, qa, 3, pause, MS);
        assert_eq!(e.on_notification_about(r1, event_cause(7), 3, Request::Resume, MS + 10 * US), None);
        assert_eq!(e.on_notification_about(r1, event_cause(99), 3, Request::Resume, MS + 20 * US), None, "flow A still paused");
        assert_eq!(e.stats.resume_held, 3);
        assert_eq!(e.on_notification_about(r1, qa, 3, Request::Resume, MS + 30 * US), Some(PfcAction::resume(1 << 3)), "nothing left");
        // Another node's Resume for the same flow does not end this node's pause.
        e.on_notification_about(r1, qa, 3, pause, 2 * MS);
        assert_eq!(e.on_notification_about(2, qa, 3, Request::Resume, 2 * MS + 10 * US), None);
        assert!(e.is_paused(3));
    }

    #[test]
    fn watchdog_never_leaves_a_priority_paused() {
        let mut e = EndC::new(EndCConfig { max_pause_ns: 2 * MS, ..EndCConfig::default() });
        // Notifications keep extending the pause ... then stop at t = 1 ms.
        e.on_notification(0, 3, Request::Pause { micros: Some(60_000) }, 0);
        e.on_notification(0, 3, Request::Pause { micros: Some(60_000) }, MS);
        let mut t = MS;
        let mut resumed = None;
        while t < 10 * MS {
            t += 50 * US;
            if let Some((a, r)) = e.poll(t) {
                if a.quanta() == 0 || r.is_some() {
                    resumed = Some(t);
                    break;
                }
            }
        }
        let at = resumed.unwrap();
        assert!((3 * MS..3 * MS + 50 * US + 1).contains(&at), "watchdog at {at}");
        assert_eq!(e.stats.watchdog_resumes, 1);
        assert!(!e.is_paused(3));
    }

    #[test]
    fn frames_are_802_1qbb() {
        let mut buf = [0u8; 64];
        let n = build_frame(&PfcAction::pause(0b0000_1000, 0xffff), [2, 0, 0, 0, 0, 1], &mut buf).unwrap();
        assert_eq!(n, 60);
        assert_eq!(&buf[0..6], &[0x01, 0x80, 0xc2, 0, 0, 1]);
        assert_eq!(&buf[12..16], &[0x88, 0x08, 0x01, 0x01]);
        assert_eq!(&buf[16..18], &[0x00, 0x08], "class-enable vector");
        assert_eq!(&buf[18 + 6..18 + 8], &[0xff, 0xff], "time[3]");
        let n = build_frame(&PfcAction::resume(0b0000_1000), [2, 0, 0, 0, 0, 1], &mut buf).unwrap();
        assert_eq!(n, 60);
        assert_eq!(&buf[18 + 6..18 + 8], &[0, 0], "resume = zero quanta");
    }
}
