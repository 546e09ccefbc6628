//! END.C (draft-hu-acn-rocev2 s.4.1) on FANN notifications as dcirouter's
//! own WAN node detector sends them (draft-hzh-fantel-wan-tunnel): which
//! notifications pause and resume which priority. Each test names the text
//! it checks; each failed on the code before the fix that came with it.

mod support;
use support::{conn, iface};
use std::net::{IpAddr, Ipv6Addr};
use std::sync::Arc;

use dataplane::counters::{Drop, WorkerCounters};
use dataplane::endc::{flow_cause, EndC, EndCConfig, PfcAction, Request};
use dataplane::fann::{notification_packet, roce_flow_id, Detector, DetectorConfig, Notification};
use dataplane::packet::VecPacket;
use dataplane::pipeline::{Pipeline, PipelineConfig, Verdict};
use dataplane::srv6::{Behaviour, SidTable};
use dataplane::tables::{Fib, MacAddr, NeighSource, Neighbours, NextHop, Topology};
use dataplane::wire::fann::{event, CODE_EVENT, CODE_RECOVERY};
use dataplane::wire::params::Params;
use dataplane::wire::pfc::quanta_from_micros;
use dataplane::wire::srh::{Srh, SrhRepr};

const R0: MacAddr = [0x02, 0, 0, 0, 0, 0x10];
const R1: MacAddr = [0x02, 0, 0, 0, 0, 0x11];
const R2: MacAddr = [0x02, 0, 0, 0, 0, 0x12];
const H0: MacAddr = [0x00, 0x11, 0x22, 0, 0, 0x02];
const GW1: MacAddr = [0x00, 0x11, 0x22, 0x01, 0, 0xfe];
const T0: u64 = 5_000_000_000;
const MS: u64 = 1_000_000;

fn a6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

fn endc_sid() -> Ipv6Addr {
    a6("fc00:0:1::c")
}
/// The WAN node that detects the events (its loopback, FANN s.6).
fn wan_node() -> Ipv6Addr {
    a6("fc00:0:9::1")
}
/// The RoCEv2 sender in the DC.
fn dc_sender() -> Ipv6Addr {
    a6("2001:db8::2")
}

fn topology() -> Topology {
    let p0 = iface("p0", 0, None, R0, 1500, &["10.0.0.1/24", "2001:db8::1/64"]);
    let p1 = iface("p1", 1, None, R1, 1500, &["10.1.0.1/24", "2001:db8:1::1/64"]);
    let p2 = iface("p2", 2, None, R2, 1500, &["2001:db8:2::1/64"]);
    Topology::new(vec![p0, p1, p2])
}

fn fib() -> Fib {
    let mut f = Fib::default();
    f.insert6("2001:db8::/64".parse().unwrap(), conn(0));
    f.insert6("2001:db8:1::/64".parse().unwrap(), conn(1));
    f.insert6("2001:db8:2::/64".parse().unwrap(), conn(2));
    f.insert6("fc00::/16".parse().unwrap(), NextHop { iface: 1, gateway: Some("2001:db8:1::fe".parse().unwrap()) });
    f
}

fn neighbours() -> Neighbours {
    let mut n = Neighbours::default();
    n.learn(0, "2001:db8::2".parse().unwrap(), H0, NeighSource::Static);
    n.learn(1, "2001:db8:1::fe".parse().unwrap(), GW1, NeighSource::Static);
    n
}

/// A pipeline whose END.C SID sends PFC out of p0 (toward the DC gateway).
fn endc_pipeline(c: EndCConfig) -> Pipeline {
    let mut pl = Pipeline::new(Arc::new(topology()), Arc::new(fib()), Arc::new(neighbours()), Arc::new(WorkerCounters::default()), PipelineConfig::default());
    let mut t = SidTable::new(&Params::DEFAULT);
    t.insert(endc_sid(), Behaviour::EndC);
    t.set_node_address(Some(a6("fc00:0:1::")));
    t.endc = vec![(0, c)];
    pl.set_sids(Arc::new(t));
    pl
}

fn ipv6(src: Ipv6Addr, dst: Ipv6Addr, nh: u8, hop: u8, payload: &[u8]) -> Vec<u8> {
    support::ipv6(src, dst, nh, hop, 0, payload)
}

/// The WAN node's notification wrapped toward END.C (outer IPv6 + SRH with
/// Segments Left 0), as `[[wan_notify]]` sends it.
fn to_endc(inner: &[u8]) -> Vec<u8> {
    let mut r = SrhRepr::for_path(41, &[endc_sid()], vec![]);
    r.segments_left = 0;
    let mut srh = vec![0u8; r.buffer_len()];
    r.emit(&mut Srh::new_unchecked(&mut srh[..])).unwrap();
    srh.extend_from_slice(inner);
    let mut f = Vec::new();
    f.extend_from_slice(&R0);
    f.extend_from_slice(&H0);
    f.extend_from_slice(&0x86ddu16.to_be_bytes());
    f.extend_from_slice(&ipv6(wan_node(), endc_sid(), 43, 64, &srh));
    f
}

/// The FANN notification as the WAN node sends it (ICMPv6, from its own
/// address to the DC sender).
fn fann_packet(n: &Notification) -> Vec<u8> {
    notification_packet(n.code, &n.message, &wan_node(), &dc_sender(), &Params::DEFAULT, false)
}

/// Run a frame through END.C: the verdict and, for a PFC frame sent, its
/// class-enable vector and the eight times.
fn endc(pl: &mut Pipeline, inner: &[u8], now: u64) -> (Verdict, Option<(u8, [u16; 8])>) {
    let mut p = VecPacket::from_bytes(&to_endc(inner));
    let v = pl.process(&mut p, 0, now);
    if let Verdict::Drop(r) = v {
        pl.counters.dropped(r);
    }
    let f = p.to_vec();
    let pfc = (matches!(v, Verdict::Tx(_)) && f.len() >= 34 && f[12..16] == [0x88, 0x08, 0x01, 0x01]).then(|| {
        let times = std::array::from_fn(|i| u16::from_be_bytes([f[18 + 2 * i], f[19 + 2 * i]]));
        (f[17], times)
    });
    (v, pfc)
}

fn detector(port: u32, ids: &Arc<std::sync::atomic::AtomicU32>) -> Detector {
    Detector::with_ids(DetectorConfig { node: wan_node(), link_bps: 8_000_000_000, ..DetectorConfig::default() }, port, ids.clone())
}

/// A FANN congestion event about a RoCEv2 flow (its Flow ID is UDP to
/// 4791) pauses `rocev2_priority`. Its recovery, as dcirouter's own WAN
/// node (`fann::Detector`) sends it, repeats the Event Identifier but
/// carries no Flow ID (recoveries carry only the port metadata), so it
/// maps to the default priority: END.C must resume the priority the
/// event paused (it resumed the default one, which nobody paused, and
/// left the event's pause on `rocev2_priority` to run out).
///
/// README ("Notifications across domains"): "RESUME for Resume and FANN
/// recovery, once no other cause still has a pause in force on the
/// priority. A cause is ... the event a FANN message reports (its Event
/// Identifier, which the recovery repeats)."
#[test]
fn a_fann_recovery_resumes_the_priority_its_event_paused() {
    let ids = Arc::new(std::sync::atomic::AtomicU32::new(1000));
    let mut d = detector(8, &ids);
    let mut out = Vec::new();
    // 8 Gb/s, 1 ms interval: 950 kB in 1 ms = 95 %, severe congestion,
    // naming the RoCEv2 flow from the DC sender.
    let flow = roce_flow_id(IpAddr::V6(dc_sender()), IpAddr::V6(a6("2001:db8:9::1")), 49152);
    d.on_tx(0, 0, None, 0, &mut out);
    d.on_tx(950_000, 500_000, Some(flow), MS, &mut out);
    d.on_tx(100_000, 0, None, 2 * MS, &mut out);
    assert_eq!(out.len(), 2);
    assert_eq!((out[0].code, out[0].message.event_type), (CODE_EVENT, event::CONGESTION));
    assert!(out[0].message.metadata.flow_id.is_some());
    assert_eq!((out[1].code, out[1].message.event_id), (CODE_RECOVERY, out[0].message.event_id));

    let mut pl = endc_pipeline(EndCConfig { default_priority: 3, rocev2_priority: Some(4), default_pause_us: 5000, ..EndCConfig::default() });
    let (v, pfc) = endc(&mut pl, &fann_packet(&out[0]), T0);
    assert_eq!(v, Verdict::Tx(0));
    let (cev, times) = pfc.expect("a PFC frame");
    assert_eq!(cev, 1 << 4, "the RoCEv2 flow's event pauses rocev2_priority");
    assert!(times[4] > 0);
    assert!(pl.endc[0].1.is_paused(4));

    // 100 us later the node reports the congestion over.
    let (v, pfc) = endc(&mut pl, &fann_packet(&out[1]), T0 + 100_000);
    assert_eq!(v, Verdict::Tx(0));
    let (cev, times) = pfc.expect("a PFC frame");
    assert!(!pl.endc[0].1.is_paused(4), "the recovery of the event must end the pause that event holds on priority 4 (frame sent: class-enable {cev:#04x}, times {times:?})");
    assert_eq!((cev, times[4]), (1 << 4, 0), "RESUME on priority 4, the priority the event paused");
}

/// A WAN node has a congestion on one port (a pause in force) and a link
/// that fails and comes back on another. A link failure has no PFC
/// meaning at END.C (no PAUSE), nor has its recovery: taken as a Resume,
/// it paired with none of the node's causes, so END.C ended all of the
/// node's FANN events and sent RESUME while the congestion event still
/// stood (its recovery not sent, its pause not run out).
///
/// README: "RESUME for Resume and FANN recovery, once no other cause still
/// has a pause in force on the priority"; the node-wide reading of an
/// unpaired Resume is for "a recovery from a node that restarted and lost
/// its Event Identifiers", not for the recovery of an event END.C never
/// pauses for: that recovery, like its event, means nothing to PFC.
#[test]
fn a_link_failure_recovery_does_not_lift_a_standing_congestion_pause() {
    let ids = Arc::new(std::sync::atomic::AtomicU32::new(1000));
    let mut port1 = detector(1, &ids);
    let mut port2 = detector(2, &ids);
    let mut out = Vec::new();
    port1.on_tx(0, 0, None, 0, &mut out);
    port1.on_tx(950_000, 500_000, None, MS, &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].message.event_type, event::CONGESTION);
    port2.on_link(false, MS, &mut out);
    port2.on_link(true, MS + 10_000, &mut out);
    assert_eq!(out.len(), 3);
    assert_eq!((out[1].code, out[1].message.event_type), (CODE_EVENT, event::LINK_FAILURE));
    assert_eq!((out[2].code, out[2].message.event_type, out[2].message.event_subtype), (CODE_RECOVERY, event::RECOVERY, event::LINK_FAILURE));

    let mut pl = endc_pipeline(EndCConfig { default_pause_us: 5000, ..EndCConfig::default() });
    // The congestion pauses priority 3 for 5 ms.
    let (v, pfc) = endc(&mut pl, &fann_packet(&out[0]), T0);
    assert_eq!(v, Verdict::Tx(0));
    assert_eq!(pfc.map(|p| p.0), Some(1 << 3));
    // The link failure: nothing for PFC.
    let (v, _) = endc(&mut pl, &fann_packet(&out[1]), T0 + 10_000);
    assert_eq!(v, Verdict::Drop(Drop::EndCNotNotification));
    // The link's recovery, 20 us later: the congestion still stands.
    let (v, pfc) = endc(&mut pl, &fann_packet(&out[2]), T0 + 20_000);
    assert!(pl.endc[0].1.is_paused(3), "the congestion event's pause is still in force (got {v:?}, frame {pfc:?})");
    assert_ne!(pfc.map(|p| (p.0 & (1 << 3), p.1[3])), Some((1 << 3, 0)), "no RESUME on priority 3 while the congestion stands");
}

/// FANN s.5.1.2: "Code (1 byte): ... 0 for event notification, 1 for
/// recovery notification." README: END.C takes "a FANN message
/// well-formed ...; else `end-c-not-a-notification`", and "Only a
/// well-formed FANN message counts (Version 1, Code 0 or 1, ...)"; the
/// ingress PE (`PeNote::from_icmpv6`) and FANN scoping refuse other Codes,
/// as END.C refuses a Long-haul CNP of a Code other than 0. END.C paused
/// the DC on a FANN message of an undefined Code.
#[test]
fn end_c_refuses_a_fann_message_of_an_undefined_code() {
    let ids = Arc::new(std::sync::atomic::AtomicU32::new(1000));
    let mut d = detector(1, &ids);
    let mut out = Vec::new();
    d.on_tx(0, 0, None, 0, &mut out);
    d.on_tx(950_000, 500_000, None, MS, &mut out);
    let m = out[0].message;
    let mut pl = endc_pipeline(EndCConfig::default());
    for code in [2u8, 0x80, 0xff] {
        let inner = notification_packet(code, &m, &wan_node(), &dc_sender(), &Params::DEFAULT, false);
        // The PE side refuses it (not a FANN message).
        assert!(dataplane::fann::PeNote::from_icmpv6(&inner[40..], wan_node(), &Params::DEFAULT).is_none());
        let (v, pfc) = endc(&mut pl, &inner, T0);
        assert_eq!(v, Verdict::Drop(Drop::EndCNotNotification), "Code {code}: PFC frame {pfc:?}");
    }
}

const US: u64 = 1_000;

/// Rule: endc.rs `on_notification_about` ("A flood of notifications thus
/// costs at most about two frames per pause duration per priority, not one
/// frame each"): a RESUME for a priority that is not paused goes at most
/// once per refresh interval. Was (a review): every Resume notification
/// (Long-haul CNP Resume, FANN recovery) made a RESUME frame toward the DC
/// gateway, 1000 for 1000.
#[test]
fn a_flood_of_resume_notifications_is_not_one_frame_each() {
    let mut e = EndC::new(EndCConfig::default());
    let sender = [10, 0, 0, 1];
    let mut frames = 0;
    // 1000 Resumes in 1 ms, priority 3 never paused.
    for i in 0..1000u64 {
        let (a, _) = e.on_resume(0xa1, flow_cause(&sender, 7), 3, MS + i * US);
        frames += usize::from(a.is_some());
        if let Some((_, y)) = e.poll(MS + i * US) {
            frames += 1 + usize::from(y.is_some());
        }
    }
    assert!(frames <= 10, "{frames} RESUME frames for 1000 Resume notifications on a priority that was never paused");
}

/// Rule: a Resume ends its own cause's pause; the node-wide reading of an
/// unpaired Resume (for a node that restarted) does not apply once END.C
/// itself forgot a cause (more than 32 at once). Was (a review): one WAN
/// node paused priority 3 for 33 flows, the 33rd evicted the first, whose
/// Resume then paired with nothing, was taken node-wide and ended the 32
/// other flows' pauses: RESUME while 32 flows were still congested.
#[test]
fn an_evicted_causes_resume_does_not_lift_the_other_flows_pauses() {
    let node = 0xa1u128;
    let sender = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];
    let mut e = EndC::new(EndCConfig::default());
    let pause = Request::Pause { micros: Some(5000) };
    for qp in 0..33u32 {
        e.on_notification_about(node, flow_cause(&sender, 0x100 + qp), 3, pause, u64::from(qp) * US);
    }
    assert!(e.is_paused(3));
    let (a, held) = e.on_resume(node, flow_cause(&sender, 0x100), 3, 100 * US);
    assert_eq!(a, None, "RESUME sent although flows 0x101..0x120 of the same node still ask for the pause (held = {held})");
    assert!(e.is_paused(3));
}

fn endc_table(c: EndCConfig) -> Arc<SidTable> {
    let mut t = SidTable::new(&Params::DEFAULT);
    t.insert(a6("fc00:0:1::c"), Behaviour::EndC);
    t.set_node_address(Some(a6("fc00:0:1::")));
    t.endc = vec![(0, c)];
    Arc::new(t)
}

/// Rule: 802.3 Annex 31B (pause quanta are 512 bit times at the link's
/// rate) and control/src/router.rs ("END.C's PAUSE quanta follow the speed
/// the link to the DC gateway came up at"): a new link speed changes the
/// quanta, not the pauses in force, which are sent again at once in
/// quanta of the new speed. Was (a review): the speed change was pushed as
/// a new END.C configuration, which threw the state away after queueing a
/// RESUME for every paused priority: the gateway resumed into a congested
/// WAN and nothing paused it again.
#[test]
fn a_link_speed_change_does_not_lift_the_end_c_pause_in_force() {
    const R0: MacAddr = [0x02, 0, 0, 0, 0, 0x10];
    let topo = Topology::new(vec![iface("p0", 0, None, R0, 1500, &["2001:db8::1/64"])]);
    let mut fib = Fib::default();
    fib.insert6("2001:db8::/64".parse().unwrap(), conn(0));
    let mut pl = Pipeline::new(Arc::new(topo), Arc::new(fib), Arc::new(Neighbours::default()), Arc::new(WorkerCounters::default()), PipelineConfig::default());
    let c = EndCConfig::default();
    pl.set_sids(endc_table(c.clone()));
    // A WAN node asks for a 5 ms pause of priority 3.
    let a = pl.endc[0].1.on_notification_about(0xa1, 1, 3, Request::Pause { micros: Some(5000) }, MS);
    assert!(a.is_some_and(|a| !a.is_resume()));
    // 100 us later the control thread sees the link run at 25 Gb/s and
    // pushes the table with link_bps updated, nothing else changed.
    pl.set_sids(endc_table(EndCConfig { link_bps: 25_000_000_000, ..c }));
    let resumes: Vec<&(u16, PfcAction)> = pl.pfc_pending.iter().filter(|(_, a)| a.is_resume()).collect();
    assert!(resumes.is_empty(), "RESUME queued by a link speed change while the 5 ms pause is in force: {resumes:?}");
    assert!(pl.endc[0].1.is_paused(3), "END.C forgot the pause in force");
    assert_eq!(pl.endc[0].1.config().link_bps, 25_000_000_000);
    // The next timer run sends the pause again, in 25 Gb/s quanta.
    pl.pfc_pending.clear();
    pl.poll_endc(MS + 100 * US);
    let again: Vec<PfcAction> = pl.pfc_pending.iter().map(|(_, a)| *a).collect();
    assert_eq!(again.len(), 1, "{again:?}");
    assert_eq!(again[0].prios, 1 << 3);
    assert_eq!(again[0].times[3], 65535, "4.9 ms is more than a frame covers at 25 Gb/s (2.68 ms)");
    // A short pause shows the quanta: 200 us asked, 150 us left at 25 Gb/s.
    let mut pl = Pipeline::new(pl.topo.clone(), pl.fib.clone(), Arc::new(Neighbours::default()), Arc::new(WorkerCounters::default()), PipelineConfig::default());
    pl.set_sids(endc_table(c.clone()));
    assert!(pl.endc[0].1.on_notification_about(0xa1, 1, 3, Request::Pause { micros: Some(200) }, MS).is_some());
    pl.set_sids(endc_table(EndCConfig { link_bps: 25_000_000_000, ..c }));
    pl.poll_endc(MS + 50 * US);
    let again: Vec<PfcAction> = pl.pfc_pending.iter().map(|(_, a)| *a).collect();
    assert_eq!(again.len(), 1, "{again:?}");
    assert_eq!(again[0].times[3], quanta_from_micros(150, 25_000_000_000), "{again:?}");
    assert_eq!(quanta_from_micros(150, 25_000_000_000), 7325);
}
