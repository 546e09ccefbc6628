//! The ingress PE's decisions (draft-hzh-fantel-wan-tunnel-03 s.4.1-4.3,
//! s.5; draft-tian-ccwg-long-haul-cnp-00 for Long-haul CNPs) and the
//! per-policy rate meter of the data path (s.4.2 "reduce the transmission
//! rate"), from a review. Each test names the rule it checks and what the
//! code did ("Was"); each failed on the code before its fix.
//! Virtual time only (`on_note_at`, the meter's `now`).

use dataplane::counters::{Drop, Local, Snapshot, WorkerCounters};
use dataplane::fann::{Element, Failover, PathSpec, PeConfig, PeControl, PeNote, PolicySpec, Reaction, RECOVERY};
use dataplane::srv6::{EncapMode, PolicyMeter, SidTable, SrPolicy};
use dataplane::wire::fann::{event, Metadata, MessageRepr, CODE_EVENT, CODE_RECOVERY};
use dataplane::wire::lhcnp::{Action, CnpInfo, MetricType};
use dataplane::wire::params::Params;
use std::net::Ipv6Addr;

const SEC: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;
const US: u64 = 1_000;
/// 2026-01-01 in microseconds since the Unix epoch (FANN Timestamp).
const EPOCH_US: u64 = 1_767_225_600_000_000;

fn a(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

fn path(seg: &str, node: &str) -> PathSpec {
    PathSpec { segments: vec![a(seg), a("fc00:e::d6")], weight: 1, elements: vec![Element { node: a(node), port: None }] }
}

/// Policy 0 ("fail"): primary via R1 (fc00::1), backup via R3 (fc00::3).
/// Policy 1 ("ecmp"): two lists, via R1 and via R3, no backup.
/// Known nodes R1, R3 and fc00::9 (a WAN node on none of the paths).
/// Weights are scaled by 64 inside the PE (1 -> 64).
fn control_with(node_max_pps: u32, node_burst: u32) -> PeControl {
    let mut t = SidTable::new(&Params::DEFAULT);
    let src = a("fc00:a::");
    t.add_policy("2001:db8:d2::/64".parse().unwrap(), SrPolicy::new(src, EncapMode::Encaps, vec![(vec![a("fc00:1::"), a("fc00:e::d6")], 1)]).unwrap());
    t.add_policy("2001:db8:d3::/64".parse().unwrap(), SrPolicy::new(src, EncapMode::Encaps, vec![(vec![a("fc00:1::"), a("fc00:e::d6")], 1), (vec![a("fc00:3::"), a("fc00:e::d6")], 1)]).unwrap());
    let cfg = PeConfig {
        policies: vec![
            (0, PolicySpec { name: "fail".into(), primary: vec![path("fc00:1::", "fc00::1")], backup: Some(vec![path("fc00:3::", "fc00::3")]) }),
            (1, PolicySpec { name: "ecmp".into(), primary: vec![path("fc00:1::", "fc00::1"), path("fc00:3::", "fc00::3")], backup: None }),
        ],
        known_nodes: vec![a("fc00::1"), a("fc00::3"), a("fc00::9")],
        interfaces: None,
        controller: None,
        source: a("fc00::a"),
        source_v4: None,
        hop_limit: 64,
        copy_max_pps: 1000,
        copy_burst: 10,
        node_max_pps,
        node_burst,
        notify_senders: false,
        failover: Failover::default(),
    };
    PeControl::new(t, cfg).unwrap()
}

/// With the `[ingress_pe]` defaults: 1000 events per second and node,
/// bursts of 100.
fn control() -> PeControl {
    control_with(1000, 100)
}

/// A FANN message from `node` about its port `port`, detected at `ts_us`.
fn msg_at(node: &str, ty: u8, sub: u8, id: u32, ts_us: u64, port: u32) -> MessageRepr {
    let link_down = (ty == event::LINK_FAILURE).then_some(true);
    MessageRepr { hop_limit: 64, event_type: ty, event_subtype: sub, event_id: id, timestamp: ts_us, originating_node: a(node), metadata: Metadata { egress_port_id: Some(port), link_down, ..Default::default() } }
}

fn ev(node: &str, ty: u8, sub: u8, id: u32, ts_us: u64) -> PeNote {
    PeNote::Fann { code: CODE_EVENT, msg: msg_at(node, ty, sub, id, ts_us, 2) }
}

fn rec(node: &str, cleared: u8, id: u32, ts_us: u64) -> PeNote {
    PeNote::Fann { code: CODE_RECOVERY, msg: msg_at(node, RECOVERY, cleared, id, ts_us, 2) }
}

fn cnp(node: &str, level: u8, action: Action) -> PeNote {
    PeNote::Cnp { from: a(node), info: CnpInfo { congestion_level: level, action, parameter: 0, source_qp: 0x100, metric_type: MetricType::QueueDepthKb, metric_value: 300 } }
}

fn first_sid(c: &PeControl, policy: u32) -> Ipv6Addr {
    c.table().policy(policy).unwrap().lists()[0].sids[0]
}

/// Rule: s.5.1.2 Timestamp is the "Time when the event was detected"; the
/// Event Identifier correlates an event with its recovery. A link that
/// fails (event 40, detected at +10 us), comes back (recovery of 40, +20)
/// and fails again (event 41, +30) is down. When the network delivers 41
/// first and the older 40 after it, 40 is stale: it must not replace the
/// newer failure of the same element, and the recovery of 40 must leave
/// the link failed (s.4.1: traffic is steered away from the faulty link;
/// the brief's "no flapping when notifications are reordered").
/// Was: `IngressPe::on_notification` replaces the element's failure by
/// whichever event arrives last, without comparing detection times, so 40
/// replaces 41; the recovery of 40 then ends the only failure standing and
/// both policies go back onto the failed link, with nothing left to end
/// (41's recovery will find no event).
#[test]
fn an_older_failure_arriving_late_does_not_replace_the_newer_one() {
    let mut c = control();
    let k = WorkerCounters::default();
    c.on_note_at(&ev("fc00::1", event::LINK_FAILURE, 0, 41, EPOCH_US + 30), SEC, &k);
    assert!(c.pe.state(0).unwrap().on_backup);
    c.on_note_at(&ev("fc00::1", event::LINK_FAILURE, 0, 40, EPOCH_US + 10), SEC + 1000, &k);
    c.on_note_at(&rec("fc00::1", event::LINK_FAILURE, 40, EPOCH_US + 20), SEC + 2000, &k);
    assert!(c.pe.state(0).unwrap().on_backup, "the link is down (event 41, the newest, stands): policy 0 must stay on its backup");
    assert_eq!(first_sid(&c, 0), a("fc00:3::"), "the workers must keep encapsulating toward the backup");
    assert_eq!(c.pe.state(1).unwrap().weights, vec![0, 64], "ecmp: the list through the failed link gets nothing");
    assert_eq!(c.pe.standing(), ["fc00::1 port 2 link-failure event 0x00000029"]);
    // 41's own recovery restores both.
    c.on_note_at(&rec("fc00::1", event::LINK_FAILURE, 41, EPOCH_US + 40), SEC + 3000, &k);
    assert!(!c.pe.state(0).unwrap().on_backup);
    assert_eq!(c.pe.state(1).unwrap().weights, vec![64, 64]);
}

/// Rule: s.5.1.2 (Timestamp: detection time; Event Identifier: correlation)
/// and the README: "a newer event of the same type replaces the older";
/// congestion "restores [the weight] when congestion ends". R3's congestion
/// goes from severe (event 10, +100 us) to mild (event 11, +200 us) and
/// ends (recovery of 11, +300 us). Delivered 11, then 10, then the
/// recovery: the older severe event must not replace the newer mild one,
/// and when the recovery of 11 arrives nothing of R3 stands.
/// Was: the late event 10 replaces 11 (divisor 8 instead of 2), and the
/// recovery of 11 finds nothing to end (11 was replaced; known, so the
/// fallback by element is skipped): R3's list stays at 1/8 of its weight
/// for good, with no recovery that can ever end event 10.
#[test]
fn an_older_congestion_arriving_late_does_not_outlive_its_successor() {
    let mut c = control();
    let k = WorkerCounters::default();
    c.on_note_at(&ev("fc00::3", event::CONGESTION, event::CONGESTION_MILD, 11, EPOCH_US + 200), SEC, &k);
    assert_eq!(c.pe.state(1).unwrap().weights, vec![64, 32], "mild: 1/2");
    c.on_note_at(&ev("fc00::3", event::CONGESTION, event::CONGESTION_SEVERE, 10, EPOCH_US + 100), SEC + 1000, &k);
    assert_eq!(c.pe.state(1).unwrap().weights, vec![64, 32], "the older, severe event detected before the mild one must not replace it");
    c.on_note_at(&rec("fc00::3", event::CONGESTION, 11, EPOCH_US + 300), SEC + 2000, &k);
    assert_eq!(c.pe.state(1).unwrap().weights, vec![64, 64], "the congestion has ended");
    assert!(c.pe.standing().is_empty(), "still standing: {:?}", c.pe.standing());
    // An hour later nothing changed by itself either (README: nothing
    // stands for a time only, so this would be for good).
    c.poll_failover_at(3600 * SEC, &k);
    assert_eq!(c.pe.state(1).unwrap().weights, vec![64, 64]);
}

/// Rule: draft-tian s.6.1 "Congestion Level ... 0 indicates no
/// congestion", which the PE reads as the end of the node's congestion
/// (`IngressPe::on_cnp`: "Resume or level 0 clear it"); README
/// `node_max_pps`: "Recoveries and CNP Resumes always pass (dropping one
/// would leave its event standing)". A congested WAN node sends CNPs per
/// flow (one per RTT each, s.5.4), so it easily spends its PE budget;
/// the CNP that says the congestion is over must still be taken.
/// Was: `PeControl::on_note_at` exempts only `Action::Resume` from the
/// node's rate limit; a level-0 Notify / Rate Reduce takes a token, is
/// dropped as `fann-rx-rate-limited`, and R3's list stays at 1/8.
#[test]
fn a_level_zero_cnp_ends_the_congestion_even_over_the_rate_limit() {
    let mut c = control_with(1000, 3);
    let k = WorkerCounters::default();
    let out = c.on_note_at(&cnp("fc00::3", 200, Action::RateReduce), SEC, &k);
    assert_eq!(out.reaction, Reaction::Applied { changed: vec![1] });
    assert_eq!(c.pe.state(1).unwrap().weights, vec![64, 8], "level 200: 1/8");
    // The node's CNPs for other flows, same level: nothing new, but they
    // spend its budget (burst 3).
    for i in 1..3 {
        assert_eq!(c.on_note_at(&cnp("fc00::3", 200, Action::RateReduce), SEC + i, &k).reaction, Reaction::Duplicate);
    }
    let out = c.on_note_at(&cnp("fc00::3", 0, Action::Notify), SEC + 3, &k);
    assert_eq!(out.reaction, Reaction::Applied { changed: vec![1] }, "the end of the congestion must pass the rate limit");
    assert_eq!(c.pe.state(1).unwrap().weights, vec![64, 64]);
    assert_eq!(Snapshot::sum([&k]).drop_count(Drop::FannRxRateLimited), 0);
}

/// Rule: s.4.1 "Upon network failure, the ingress PE should immediately
/// adapt its forwarding policy to steer traffic away from faulty links";
/// README `node_max_pps`: the per-node limit exists "so that one node,
/// misbehaving or its address forged, cannot" disturb the PE, and "The PE
/// keeps at most 4096 failures". One known node that reports failures of
/// 4096 of its ports (none on any configured path: they can change no
/// policy), within its default rate (1000/s, 4.1 s), must not leave the PE
/// unable to act on another node's failure of a path it uses.
/// Was: every failure of a known node is kept, on a path or not, in one
/// table shared by all nodes; once it holds 4096, R1's failure of the
/// primary of policy 0 is refused as `fann-state-full` and the traffic
/// stays on the failed link.
#[test]
fn one_nodes_failures_off_every_path_do_not_lock_out_a_path_failure() {
    let mut c = control();
    let k = WorkerCounters::default();
    for port in 0..4096u32 {
        let n = PeNote::Fann { code: CODE_EVENT, msg: msg_at("fc00::9", event::LINK_FAILURE, 0, 1000 + port, EPOCH_US + u64::from(port), 100 + port) };
        let out = c.on_note_at(&n, SEC + u64::from(port) * MS, &k);
        // On no path: changes nothing (kept or refused, as a fix chooses),
        // and within the node's rate.
        assert!(matches!(out.reaction, Reaction::Applied { ref changed } if changed.is_empty()) || out.reaction == Reaction::Full, "port {port}: {:?}", out.reaction);
    }
    let out = c.on_note_at(&ev("fc00::1", event::LINK_FAILURE, 0, 7, EPOCH_US + 5_000_000), 6 * SEC, &k);
    assert_eq!(out.reaction, Reaction::Applied { changed: vec![0, 1] }, "R1's failure of a path in use must be acted on");
    assert!(c.pe.state(0).unwrap().on_backup);
    assert_eq!(c.pe.state(1).unwrap().weights, vec![0, 64]);
    assert_eq!(Snapshot::sum([&k]).drop_count(Drop::FannStateFull), 0);
    // The table held 4096: R1's failure took the place of one off every
    // path, and that is counted (it was not, before).
    assert_eq!((c.pe.stats.evicted_off_path, Snapshot::sum([&k]).local_count(Local::PeEventEvicted)), (1, 1));
}

/// Rule: README `congestion_rate_window_us`: each worker measures each
/// policy's rate over windows of that length, "an average with weight
/// 1/8"; the limit holds the traffic to a share of "the rate it had". One
/// second of silence is 1000 windows of 1 ms at 0 b/s: the average after it
/// is 8 Gb/s x (7/8)^1000, nothing. A policy that sent 8 Gb/s long ago and
/// now sends 1 Gb/s, held to 25 % two windows after it resumed, had at most
/// 1 Gb/s: of its 2500 packets over the next 20 ms, at most 25 % of that
/// (625, plus the one-window burst of ~31) may pass unmarked.
/// Was: `PolicyMeter::over` counts an idle spell of any length as one
/// window ("counts as one at its length"), so the average only loses 1/8:
/// 7.0 Gb/s after a second of silence (5.6 Gb/s two windows into the
/// 1 Gb/s), the share (1.4 Gb/s) is above what the policy sends, and no
/// packet is marked: the s.4.2 reduction does nothing.
#[test]
fn the_policy_rate_meter_forgets_the_rate_of_an_idle_spell() {
    let win = 1_000_000; // the default 1 ms
    let t0 = 5 * SEC;
    let mut m = PolicyMeter::default();
    // 20 ms at 8 Gb/s: 1000 octets every microsecond.
    let mut now = t0;
    for _ in 0..20_000 {
        assert!(!m.over(None, 1000, now, win));
        now += US;
    }
    assert_eq!(m.rate_bps(), 8_000_000_000);
    // A second of silence, then 1 Gb/s (1000 octets every 8 us).
    now += SEC;
    assert!(!m.over(None, 1000, now, win));
    let after_idle = m.rate_bps();
    for _ in 0..250 {
        now += 8 * US;
        m.over(None, 1000, now, win);
    }
    let at_limit = m.rate_bps();
    // Held to 25 % for 20 ms.
    let mut over = 0;
    for _ in 0..2500 {
        now += 8 * US;
        if m.over(Some(250), 1000, now, win) {
            over += 1;
        }
    }
    let seen = format!("rate after the idle second {after_idle} b/s, when the limit began {at_limit} b/s, packets over the share {over} of 2500");
    assert!(after_idle < 80_000_000, "1000 idle windows must take the average to ~0 (under 1 % of 8 Gb/s): {seen}");
    assert!(over >= 1800, "held to a quarter of at most 1 Gb/s: {seen}");
}

/// Rule: the brief's "no division by zero at window 0"; `Failover` and
/// `SidTable::pe_rate_window_ns` are public and `PeControl::new` passes
/// `rate_window_ns` to the workers' table unchecked (only the TOML loader
/// refuses 0, control/src/config.rs). A worker must not panic on it.
/// Was: with a window of 0 every packet closes a window, and a second
/// packet at the same nanosecond divides by an elapsed time of 0: the
/// worker thread panics ("attempt to divide by zero"). Low severity:
/// unreachable from the configuration file.
#[test]
fn the_policy_rate_meter_survives_a_zero_window() {
    let mut m = PolicyMeter::default();
    let t = 5 * SEC;
    assert!(!m.over(None, 1000, t, 0));
    let r = std::panic::catch_unwind(move || {
        m.over(None, 1000, t, 0);
        m.over(Some(500), 1000, t + 1, 0);
    });
    assert!(r.is_ok(), "the meter panicked on a window of 0");
}

/// Rule: s.5.1.2: a recovery is Code 1 / Event Type 0x07 "Recovery
/// (condition cleared)", naming the condition it clears (the README reads
/// it in every form "so it never clears the wrong kind of event"); the
/// Event Identifier is "unique ... for this event instance", with no scope
/// given (a node may number each event type, or each port, on its own).
/// The brief: a recovery moves traffic back "only when the failure it
/// recorded is the one recovering (not another event's)". R1 reports its
/// port 2 down (event 7) and congestion on its port 5 numbered 7 as well;
/// the congestion's recovery (cleared type Congestion, port 5) must leave
/// the link failure of port 2 standing.
/// Was: `IngressPe::on_notification` ends every failure and congestion of
/// the node with that identifier, whatever type and element the recovery
/// names: policy 0 goes back onto R1's failed port and ecmp's R1 list gets
/// its full weight again.
#[test]
fn a_recovery_ends_only_the_kind_of_event_it_names() {
    let mut c = control();
    let k = WorkerCounters::default();
    c.on_note_at(&ev("fc00::1", event::LINK_FAILURE, 0, 7, EPOCH_US + 10), SEC, &k);
    let cong = PeNote::Fann { code: CODE_EVENT, msg: msg_at("fc00::1", event::CONGESTION, event::CONGESTION_MILD, 7, EPOCH_US + 20, 5) };
    assert!(matches!(c.on_note_at(&cong, SEC + 1000, &k).reaction, Reaction::Applied { .. }));
    assert!(c.pe.state(0).unwrap().on_backup);
    let cong_rec = PeNote::Fann { code: CODE_RECOVERY, msg: msg_at("fc00::1", RECOVERY, event::CONGESTION, 7, EPOCH_US + 30, 5) };
    c.on_note_at(&cong_rec, SEC + 2000, &k);
    assert!(c.pe.state(0).unwrap().on_backup, "R1's port 2 is still down: the congestion's recovery must not restore the primary");
    assert_eq!(first_sid(&c, 0), a("fc00:3::"));
    assert_eq!(c.pe.state(1).unwrap().weights, vec![0, 64]);
    assert_eq!(c.pe.standing(), ["fc00::1 port 2 link-failure event 0x00000007"]);
}
