//! The ingress-PE side of FANN (draft-hzh-fantel-wan-tunnel-03), from a
//! review: each test names the draft text or the operator expectation it
//! checks and what the code did before its fix ("Was"), on which it
//! failed. Virtual time only (`on_note_at`).

use dataplane::counters::WorkerCounters;
use dataplane::fann::{Element, Failover, PathSpec, PeConfig, PeControl, PeNote, PolicySpec, Reaction, RECOVERY};
use dataplane::srv6::{EncapMode, SidTable, SrPolicy};
use dataplane::wire::fann::{event, Metadata, MessageRepr, CODE_EVENT, CODE_RECOVERY};
use dataplane::wire::params::Params;
use std::net::Ipv6Addr;

const SEC: u64 = 1_000_000_000;
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
fn control() -> PeControl {
    let mut t = SidTable::new(&Params::DEFAULT);
    let src = a("fc00:a::");
    t.add_policy("2001:db8:d2::/64".parse().unwrap(), SrPolicy::new(src, EncapMode::Encaps, vec![(vec![a("fc00:1::"), a("fc00:e::d6")], 1)]).unwrap());
    t.add_policy("2001:db8:d3::/64".parse().unwrap(), SrPolicy::new(src, EncapMode::Encaps, vec![(vec![a("fc00:1::"), a("fc00:e::d6")], 1), (vec![a("fc00:3::"), a("fc00:e::d6")], 1)]).unwrap());
    let cfg = PeConfig {
        policies: vec![
            (0, PolicySpec { name: "fail".into(), primary: vec![path("fc00:1::", "fc00::1")], backup: Some(vec![path("fc00:3::", "fc00::3")]) }),
            (1, PolicySpec { name: "ecmp".into(), primary: vec![path("fc00:1::", "fc00::1"), path("fc00:3::", "fc00::3")], backup: None }),
        ],
        known_nodes: vec![a("fc00::1"), a("fc00::3")],
        interfaces: None,
        controller: None,
        source: a("fc00::a"),
        source_v4: None,
        hop_limit: 64,
        copy_max_pps: 1000,
        copy_burst: 10,
        node_max_pps: 1000,
        node_burst: 100,
        notify_senders: false,
        failover: Failover::default(),
    };
    PeControl::new(t, cfg).unwrap()
}

/// A FANN message from `node` about its port 2, detected at `ts_us`.
fn msg(node: &str, ty: u8, sub: u8, id: u32, ts_us: u64) -> MessageRepr {
    let link_down = (ty == event::LINK_FAILURE).then_some(true);
    MessageRepr { hop_limit: 64, event_type: ty, event_subtype: sub, event_id: id, timestamp: ts_us, originating_node: a(node), metadata: Metadata { egress_port_id: Some(2), link_down, ..Default::default() } }
}

fn ev(node: &str, ty: u8, sub: u8, id: u32, ts_us: u64) -> PeNote {
    PeNote::Fann { code: CODE_EVENT, msg: msg(node, ty, sub, id, ts_us) }
}

fn rec(node: &str, cleared: u8, id: u32, ts_us: u64) -> PeNote {
    PeNote::Fann { code: CODE_RECOVERY, msg: msg(node, RECOVERY, cleared, id, ts_us) }
}

/// s.5.1.2 "Event Identifier ... used for deduplication and correlation
/// between multiple notifications"; "Code: ... 1 for recovery
/// notification". A recovery for event X that the PE has already taken
/// (the recovery overtook its event on the way, e.g. a link that went
/// down and up within a few microseconds) means event X is over: when the
/// event arrives afterwards it must not be installed as standing.
/// Was: the recovery matches nothing (no-op), then the late event
/// X is installed and the policy moves to its backup for good: the
/// recovery that would clear it is now a duplicate, and there is no
/// expiry. The PE has the (node, Code 1, X) entry in its dedup memory.
#[test]
fn an_event_arriving_after_its_own_recovery_does_not_stand() {
    let mut c = control();
    let k = WorkerCounters::default();
    // Recovery of event 40 first (delivered out of order), then event 40.
    c.on_note_at(&rec("fc00::1", event::LINK_FAILURE, 40, EPOCH_US + 20), SEC, &k);
    c.on_note_at(&ev("fc00::1", event::LINK_FAILURE, 0, 40, EPOCH_US + 10), SEC + 1000, &k);
    // The same recovery repeated (the node cannot know) is a duplicate.
    let again = c.on_note_at(&rec("fc00::1", event::LINK_FAILURE, 40, EPOCH_US + 20), SEC + 2000, &k);
    assert_eq!(again.reaction, Reaction::Duplicate);
    for t in [2 * SEC, 3600 * SEC] {
        c.poll_failover_at(t, &k);
        assert!(!c.pe.state(0).unwrap().on_backup, "at {t} ns: policy 0 pinned to its backup by an event whose recovery was already received");
        assert_eq!(c.table().policy(0).unwrap().lists()[0].sids[0], a("fc00:1::"), "the workers still encapsulate toward the backup");
    }
}

/// s.5.1.2: recoveries correlate with their event by Event Identifier;
/// the Timestamp is "Time when the event was detected". README: a
/// recovery whose identifier the PE does not know "clears that type of
/// event of its element" (meant for a node that restarted). But a
/// recovery for an event the PE knows it has *replaced* (a newer event of
/// the same element and type, detected later) is stale and must not end
/// the newer one. Here the link went down (40), up (recovery of 40,
/// delayed on the way) and down again (41): the late recovery of 40
/// clears 41 and the policy goes back onto the failed primary.
/// Was: the fallback in IngressPe::on_notification clears every
/// failure of the element, so the standing failure 41 is lost.
#[test]
fn a_stale_recovery_of_a_replaced_event_does_not_end_the_newer_one() {
    let mut c = control();
    let k = WorkerCounters::default();
    c.on_note_at(&ev("fc00::1", event::LINK_FAILURE, 0, 40, EPOCH_US + 10), SEC, &k);
    c.on_note_at(&ev("fc00::1", event::LINK_FAILURE, 0, 41, EPOCH_US + 30), SEC + 1000, &k);
    assert!(c.pe.state(0).unwrap().on_backup);
    // Recovery of 40 (detected at +20, before 41) arrives last.
    c.on_note_at(&rec("fc00::1", event::LINK_FAILURE, 40, EPOCH_US + 20), SEC + 2000, &k);
    assert!(c.pe.state(0).unwrap().on_backup, "the link is down again (event 41 stands): the recovery of 40 must not restore the primary");
    // Only 41's own recovery restores it.
    c.on_note_at(&rec("fc00::1", event::LINK_FAILURE, 41, EPOCH_US + 40), SEC + 3000, &k);
    assert!(!c.pe.state(0).unwrap().on_backup);
}

/// s.5.1.2 Event Identifier "Unique identifier for this event instance,
/// used for deduplication"; Timestamp "Time when the event was detected".
/// A duplicate is the same message again (same identifier *and* same
/// detection time). A WAN node that restarted and numbers its events from
/// the start again (the draft does not require identifiers to survive a
/// restart; this PE even expects restarted nodes, README "sent by a node
/// that restarted") reports a new link failure, detected an hour later,
/// with an identifier the PE saw long ago: the operator expects the
/// policy to move. Was: dedup by (node, Code, identifier) only,
/// with no time bound (the 1024-entry ring only turns over with traffic),
/// so the new failure is dropped as `fann-duplicate` and the traffic
/// stays on the failed link.
#[test]
fn a_reused_event_identifier_with_a_new_timestamp_is_not_a_duplicate() {
    let mut c = control();
    let k = WorkerCounters::default();
    c.on_note_at(&ev("fc00::1", event::LINK_FAILURE, 0, 1, EPOCH_US), SEC, &k);
    c.on_note_at(&rec("fc00::1", event::LINK_FAILURE, 1, EPOCH_US + 5 * 1_000_000), 6 * SEC, &k);
    assert!(!c.pe.state(0).unwrap().on_backup);
    // An hour later, after a restart of fc00::1: a new failure, id 1 again.
    let out = c.on_note_at(&ev("fc00::1", event::LINK_FAILURE, 0, 1, EPOCH_US + 3600 * 1_000_000), 3600 * SEC, &k);
    assert!(matches!(out.reaction, Reaction::Applied { .. }), "a new event (new detection time) dropped as {:?}", out.reaction);
    assert!(c.pe.state(0).unwrap().on_backup, "the new failure must move the policy to its backup");
}


/// Operator need: nothing ends a failure whose node never sends its
/// recovery (it restarted after the link came back: its new detector has
/// no event to recover). `show fann` lists what stands, and `fann clear`
/// ends one node's events as a recovery would.
#[test]
fn the_operator_sees_and_clears_what_a_node_reported() {
    let mut c = control();
    let k = WorkerCounters::default();
    c.on_note_at(&ev("fc00::1", event::LINK_FAILURE, 0, 40, EPOCH_US), SEC, &k);
    c.on_note_at(&ev("fc00::3", event::CONGESTION, event::CONGESTION_MODERATE, 41, EPOCH_US), SEC, &k);
    assert!(c.pe.state(0).unwrap().on_backup);
    let s = c.pe.standing();
    assert_eq!(s, ["fc00::1 port 2 link-failure event 0x00000028", "fc00::3 port 2 congestion divisor 4 event 0x00000029"], "{s:?}");
    // Another node's clear leaves fc00::1's failure.
    let (n, _) = c.clear_at(Some(a("fc00::3")), 2 * SEC, &k);
    assert_eq!(n, 1);
    assert!(c.pe.state(0).unwrap().on_backup);
    let (n, table) = c.clear_at(Some(a("fc00::1")), 3 * SEC, &k);
    assert_eq!(n, 1);
    assert!(!c.pe.state(0).unwrap().on_backup, "back on the primary");
    assert_eq!(table.expect("a new snapshot for the workers").policy(0).unwrap().lists()[0].sids[0], a("fc00:1::"));
    assert!(c.pe.standing().is_empty());
    assert_eq!(c.clear_at(None, 4 * SEC, &k).0, 0);
}

/// An event type the draft does not define (s.5.1.2 lists 0x01..=0x06;
/// a newer node may send more) is ignored, counted by name, and neither
/// remembered nor copied: it changes no policy, and a defined event with
/// the same identifier afterwards is applied. Was: accepted as a
/// notification (`pe-notification`), put in the dedup memory, with no
/// counter to tell the operator what arrived.
#[test]
fn an_event_of_an_unknown_type_is_counted_and_ignored() {
    use dataplane::counters::{Drop, Local, Snapshot};
    let mut c = control();
    let k = WorkerCounters::default();
    let out = c.on_note_at(&ev("fc00::1", 0x42, 0, 50, EPOCH_US + 10), SEC, &k);
    assert_eq!(out.reaction, Reaction::UnknownEvent);
    assert!(out.table.is_none() && out.copy.is_none() && out.senders.is_empty());
    let s = Snapshot::sum([&k]);
    assert_eq!((s.drop_count(Drop::FannUnknownEvent), s.local_count(Local::PeNotification)), (1, 0));
    assert_eq!(c.pe.stats.unknown_event, 1);
    assert!(!c.pe.state(0).unwrap().on_backup);
    let out = c.on_note_at(&ev("fc00::1", event::LINK_FAILURE, 0, 50, EPOCH_US + 10), SEC + 1000, &k);
    assert!(matches!(out.reaction, Reaction::Applied { .. }), "{:?}", out.reaction);
    assert!(c.pe.state(0).unwrap().on_backup);
}

/// FANN draft s.6 (a node's notifications must not be turned into a
/// denial of service; every ICMPv6 FANN message is rate-limited, RFC 4443
/// s.2.4 (f)) and the operator's expectation that one node, misbehaving or
/// with its address forged, cannot keep the PE rebuilding and pushing its
/// policies: a known node's events beyond `node_max_pps` (burst
/// `node_burst`, here 100) are dropped by name, while its recoveries always
/// pass (dropping one would leave its event standing). Was: every event
/// from a known node was taken, as fast as they came.
#[test]
fn a_known_node_flooding_events_is_held_to_its_rate() {
    use dataplane::counters::{Drop, Snapshot};
    let mut c = control();
    let k = WorkerCounters::default();
    // 300 distinct congestion events from R3 within 1 ms.
    let mut applied = 0;
    for i in 0..300u32 {
        let out = c.on_note_at(&ev("fc00::3", event::CONGESTION, 1 + (i % 3) as u8, 1000 + i, EPOCH_US + u64::from(i)), SEC + u64::from(i) * 3000, &k);
        match out.reaction {
            Reaction::Applied { .. } => applied += 1,
            Reaction::RateLimited => assert!(out.table.is_none() && out.copy.is_none()),
            r => panic!("event {i}: {r:?}"),
        }
    }
    // The burst of 100 plus 1000 per second over the 0.9 ms.
    assert_eq!(applied, 100, "the burst and no more");
    assert_eq!(Snapshot::sum([&k]).drop_count(Drop::FannRxRateLimited), 200);
    assert_eq!(c.pe.stats.rate_limited, 200);
    // R1, another node, has its own budget.
    let out = c.on_note_at(&ev("fc00::1", event::LINK_FAILURE, 0, 7, EPOCH_US + 500), SEC + 900_000, &k);
    assert!(matches!(out.reaction, Reaction::Applied { .. }), "{:?}", out.reaction);
    // R3's recovery of its last accepted event passes with no token left.
    let out = c.on_note_at(&rec("fc00::3", event::CONGESTION, 1099, EPOCH_US + 600), SEC + 900_001, &k);
    assert!(matches!(out.reaction, Reaction::Applied { .. }), "{:?}", out.reaction);
    // A second later the node has tokens again.
    let out = c.on_note_at(&ev("fc00::3", event::CONGESTION, 2, 5000, EPOCH_US + 1_000_000), 2 * SEC + 900_000, &k);
    assert!(matches!(out.reaction, Reaction::Applied { .. }), "{:?}", out.reaction);
}
