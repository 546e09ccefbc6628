//! END.E (draft-hu-acn-rocev2 s.4.2), from a review: the SID that
//! decapsulates a notification and routes it to the sender, and the WAN P
//! node that encapsulates its notification toward it. Each test failed on
//! the code before its fix, for the reason its doc comment gives ("Was").

mod support;
use support::{conn, iface, udp6, via};
use std::net::{IpAddr, Ipv6Addr};
use std::sync::Arc;

use dataplane::congestion::{build_cnp, CnpFormat, CnpRequest, PortParams};
use dataplane::counters::{Drop, Local, WorkerCounters};
use dataplane::egress::EgressConfig;
use dataplane::node::{CongestionSpec, EgressPort};
use dataplane::packet::VecPacket;
use dataplane::pipeline::{Event, Pipeline, PipelineConfig, Verdict};
use dataplane::srv6::{Behaviour, SidTable};
use dataplane::tables::{Fib, MacAddr, NeighSource, Neighbours, Topology};
use dataplane::wire::lhcnp::{emit_icmpv6_packet, Action, CnpInfo, Icmpv6LhCnpRepr, MetricType, Objects};
use dataplane::wire::params::Params;
use dataplane::wire::srh::{Srh, SrhRepr};

const R0: MacAddr = [0x02, 0, 0, 0, 0, 0x10];
const R1: MacAddr = [0x02, 0, 0, 0, 0, 0x11];
const H0: MacAddr = [0x00, 0x11, 0x22, 0, 0, 0x02];
const GW1: MacAddr = [0x00, 0x11, 0x22, 0x01, 0, 0xfe];
const T0: u64 = 5_000_000_000;

fn a6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

/// The ingress PE: p0 toward the DC (the senders in 2001:db8:3::/64 are
/// behind a DC gateway on p0), p1 toward the WAN (fc00::/16).
fn sid_e() -> Ipv6Addr {
    a6("fc00:0:1::e")
}
/// A congested WAN node, the source of the notifications.
fn wan_node() -> Ipv6Addr {
    a6("fc00:0:9::1")
}
/// The RDMA sender in the DC.
fn sender() -> Ipv6Addr {
    a6("2001:db8:3::5")
}
/// The PE's own address (on p1).
fn pe_addr() -> Ipv6Addr {
    a6("2001:db8:1::1")
}

fn pipeline(pe_known: Option<Vec<Ipv6Addr>>) -> Pipeline {
    let p0 = iface("p0", 0, None, R0, 1500, &["10.0.0.1/24", "2001:db8::1/64"]);
    let p1 = iface("p1", 1, None, R1, 1500, &["10.1.0.1/24", "2001:db8:1::1/64"]);
    let topo = Topology::new(vec![p0, p1]);
    let mut f = Fib::default();
    f.insert6("2001:db8::/64".parse().unwrap(), conn(0));
    f.insert6("2001:db8:1::/64".parse().unwrap(), conn(1));
    f.insert6("2001:db8:3::/64".parse().unwrap(), via(0, "2001:db8::fe"));
    f.insert6("fc00::/16".parse().unwrap(), via(1, "2001:db8:1::fe"));
    let mut n = Neighbours::default();
    n.learn(0, "2001:db8::fe".parse().unwrap(), H0, NeighSource::Static);
    n.learn(1, "2001:db8:1::fe".parse().unwrap(), GW1, NeighSource::Static);
    let mut pl = Pipeline::new(Arc::new(topo), Arc::new(f), Arc::new(n), Arc::new(WorkerCounters::default()), PipelineConfig::default());
    let mut t = SidTable::new(&Params::DEFAULT);
    t.insert(sid_e(), Behaviour::EndE);
    t.pe_known = pe_known;
    pl.set_sids(Arc::new(t));
    pl
}

fn run(pl: &mut Pipeline, frame: &[u8]) -> (Verdict, Vec<u8>) {
    let mut p = VecPacket::from_bytes(frame);
    let v = pl.process(&mut p, 1, T0);
    if let Verdict::Drop(r) = v {
        pl.counters.dropped(r);
    }
    (v, p.to_vec())
}

fn local(pl: &Pipeline, l: Local) -> u64 {
    pl.counters.local[l as usize].get()
}

fn ipv6(src: Ipv6Addr, dst: Ipv6Addr, nh: u8, hop: u8, payload: &[u8]) -> Vec<u8> {
    support::ipv6(src, dst, nh, hop, 0, payload)
}


/// The frame a WAN node sends to END.E: Ethernet, outer IPv6 from the WAN
/// node to the SID with an SRH of one segment (SL 0), the notification.
fn to_end_e(inner: &[u8]) -> Vec<u8> {
    let mut r = SrhRepr::for_path(41, &[sid_e()], Vec::new());
    r.segments_left = 0;
    let mut s = vec![0u8; r.buffer_len()];
    r.emit(&mut Srh::new_unchecked(&mut s[..])).unwrap();
    s.extend_from_slice(inner);
    let mut f = Vec::new();
    f.extend_from_slice(&R1);
    f.extend_from_slice(&GW1);
    f.extend_from_slice(&[0x86, 0xdd]);
    f.extend_from_slice(&ipv6(wan_node(), sid_e(), 43, 64, &s));
    f
}

fn info(action: Action) -> CnpInfo {
    CnpInfo { congestion_level: 180, action, parameter: 30, source_qp: 100, metric_type: MetricType::QueueDepthKb, metric_value: 1000 }
}

/// An ICMPv6 Long-haul CNP (draft-tian s.6.1) from the WAN node to `to`,
/// with inner hop limit `hop`.
fn lhcnp6(to: Ipv6Addr, hop: u8) -> Vec<u8> {
    let repr = Icmpv6LhCnpRepr { code: 0, info: info(Action::RateReduce), objects: Objects::NONE };
    let mut buf = vec![0u8; 256];
    let n = emit_icmpv6_packet(&wan_node().octets(), &to.octets(), hop, &repr, &Params::DEFAULT, &mut buf).unwrap();
    buf.truncate(n);
    buf
}

/// An ICMPv6 message of type `ty` (valid checksum) from the WAN node to
/// the sender.
fn icmp6(ty: u8, code: u8, rest: &[u8]) -> Vec<u8> {
    let m = support::icmpv6(wan_node(), sender(), ty, code, rest);
    ipv6(wan_node(), sender(), 58, 64, &m)
}

fn pe_notes(pl: &mut Pipeline) -> usize {
    pl.events.drain(..).filter(|e| matches!(e, Event::PeNotification(_))).count()
}

/// Rule: draft-hu-acn-rocev2 s.4.2, END.E's action is "to decapsulate the
/// packet and then look up the routing table for traffic forwarding"; the
/// counter `end-e-forwarded` (README: "END.E forwarded") counts the
/// notifications END.E sent on toward the sender. A notification the
/// routing step drops (inner hop limit expiring, RFC 8200 s.3 / RFC 4443
/// s.3.3 Time Exceeded; a FANN message that s.6 of
/// draft-hzh-fantel-wan-tunnel says MUST be silently discarded) was not
/// forwarded.
/// Was: srv6.rs counts `Local::EndEForwarded` before it calls `ipv6()`, so
/// a notification dropped there is counted both as forwarded and under its
/// drop reason.
#[test]
fn end_e_counts_as_forwarded_only_what_it_forwards() {
    let mut pl = pipeline(None);
    // Inner hop limit 1: Time Exceeded back to the WAN node, not forwarded.
    let (v, out) = run(&mut pl, &to_end_e(&lhcnp6(sender(), 1)));
    assert_eq!(v, Verdict::Tx(1), "the Time Exceeded goes back toward the WAN node");
    assert_eq!(out[14 + 40], 3, "ICMPv6 Time Exceeded");
    assert_eq!(local(&pl, Local::TimeExceeded6), 1);
    // A FANN message over UDP that says Version 1 but is shorter than its
    // fixed header: s.6 discards it (fann-malformed) on the way.
    let mut bad = vec![1u8, 0, 8, 2];
    bad.resize(12, 0);
    let (v, _) = run(&mut pl, &to_end_e(&ipv6(wan_node(), sender(), 17, 64, &udp6(wan_node(), sender(), 40000, Params::DEFAULT.fann_udp_port, &bad))));
    assert!(matches!(v, Verdict::Drop(_)), "{v:?}");
    assert_eq!(local(&pl, Local::EndEForwarded), 0, "neither notification was forwarded");
}

/// Rule: draft-hu-acn-rocev2 s.4.2 (END.E "decapsulates the Fast CNP and
/// pass it to the sender"), and the module's own promise (srv6.rs, END.E:
/// "Only a notification goes on to the DC: END.E is not a way to tunnel
/// other traffic into it"; README: "so the SID cannot tunnel other traffic
/// into the DC"). A UDP datagram to the FANN port whose payload is two
/// octets is no FANN message (draft-hzh s.5.2: the FANN fixed fields
/// follow the UDP header), and an ICMPv6 message of the Long-haul CNP type
/// without the 12-octet fixed body draft-tian s.6.1 requires is no
/// Long-haul CNP.
/// Was: `notification()` (srv6.rs) accepts anything whose UDP destination
/// port is the FANN port, or whose ICMPv6 type is the Long-haul CNP / FANN
/// type, once the checksum verifies; END.E routes it into the DC.
#[test]
fn end_e_refuses_what_is_only_a_notifications_header() {
    let mut pl = pipeline(None);
    let udp = ipv6(wan_node(), sender(), 17, 64, &udp6(wan_node(), sender(), 40000, Params::DEFAULT.fann_udp_port, b"hi"));
    let lh_empty = icmp6(Params::DEFAULT.icmpv6_lhcnp_type, 0, &[]);
    for (what, inner) in [("udp to the fann port", udp), ("lhcnp type, no body", lh_empty)] {
        let (v, _) = run(&mut pl, &to_end_e(&inner));
        assert_eq!(v, Verdict::Drop(Drop::EndENotNotification), "{what}");
    }
}

/// Rule: srv6.rs `sid_note_for_pe` doc: a notification END.E decapsulates
/// is handed to this node's ingress PE "as if received directly", and one
/// addressed to this node is not handed over by END.E since "END.E routes
/// those here, where they are taken as received directly" (README: the PE
/// takes a notification through END.C / END.E like those sent to its
/// address). One Long-haul CNP is one notification (draft-hzh s.4.2: the
/// PE reroutes on it once).
/// Was: for a Long-haul CNP addressed to the PE itself, `sid_note_for_pe`
/// hands it over (the `local()` guard covers FANN only) and `ipv6()` then
/// delivers it locally, where `local6` hands it over again: the PE gets
/// the same CNP twice (two `Event::PeNotification`, its per-node rate
/// limit charged twice).
#[test]
fn end_e_hands_a_cnp_to_this_node_to_the_pe_once() {
    let mut pl = pipeline(Some(vec![wan_node()]));
    let (v, _) = run(&mut pl, &to_end_e(&lhcnp6(pe_addr(), 64)));
    assert_eq!(v, Verdict::Consumed);
    assert_eq!(pe_notes(&mut pl), 1, "one CNP, one notification for the PE");
}

/// Rule: draft-tian-ccwg-long-haul-cnp s.6 defines two formats of the
/// Long-haul CNP, ICMPv6 (s.6.1) and RoCEv2 with E = 1 (s.6.2, the same
/// Congestion Level / Action / Parameter / Source QP fields); srv6.rs
/// `sid_note_for_pe` doc and the README: END.C and END.E hand "a Long-haul
/// CNP, whose source is the congested node" to the ingress PE, which
/// reroutes on it (draft-hzh s.4.2).
/// Was: `sid_note_for_pe` matches `Notification::LhCnpIcmp` only; a
/// RoCEv2-format Long-haul CNP from a known WAN node goes through END.E to
/// the sender but never reaches the PE.
#[test]
fn end_e_hands_a_rocev2_long_haul_cnp_to_the_pe() {
    let mut pl = pipeline(Some(vec![wan_node()]));
    let req = CnpRequest { to: IpAddr::V6(sender()), flow_dst: "2001:db8:7::9".parse().unwrap(), dest_qp: 0x100, src_qp: Some(100), info: info(Action::Pause), format: CnpFormat::Roce, via: 0 };
    let mut buf = vec![0u8; 512];
    let n = build_cnp(&req, IpAddr::V6(wan_node()), &Params::DEFAULT, false, &mut buf).unwrap();
    buf.truncate(n);
    assert_eq!((buf[6], buf[40 + 8], buf[40 + 8 + 4] & 0x20), (17, 0x81, 0x20), "a RoCEv2 Long-haul CNP (E = 1)");
    let (v, _) = run(&mut pl, &to_end_e(&buf));
    assert_eq!(v, Verdict::Tx(0), "on to the sender");
    assert_eq!(local(&pl, Local::EndEForwarded), 1);
    assert_eq!(pe_notes(&mut pl), 1, "and to the PE, as the ICMPv6 format is");
}

/// Rule: draft-hu-acn-rocev2 s.4.2: "When transporting RoCEv2 packets
/// through SRv6 tunnels in WAN, intermediate devices are unable to send
/// Fast CNP back to the ingress PE based on the information in RoCEv2
/// packets", hence "they encapsulate an outer IP header (destination
/// address is set to END.E) outside the Fast CNP and send it back to the
/// ingress PE". A P node needs a route to the END.E SID, not to the
/// sender in the DC (configs/wan-p-node.toml has routes to the PEs'
/// locators only).
/// Was: `EgressPort::build_cnp_packet` (node.rs) picks the inner CNP's
/// source from the interface of the route toward the sender
/// (`egress_iface(r.to)`) before it looks at the SID; without a route to
/// the sender (and without `source_v6`) the CNP is refused as `NoRoute`
/// although it would leave toward the SID.
#[test]
fn p_node_sends_its_cnp_to_end_e_without_a_route_to_the_sender() {
    let wan = iface("wan", 0, None, [2, 0, 0, 0, 0, 1], 1500, &["2001:db8:a::2/64"]);
    let mut fib = Fib::default();
    fib.insert6("2001:db8:a::/64".parse().unwrap(), conn(0));
    fib.insert6("fc00:0:1::/48".parse().unwrap(), via(0, "2001:db8:a::1"));
    let mut n = Neighbours::default();
    n.learn(0, "2001:db8:a::1".parse().unwrap(), [2, 0, 0, 0, 0, 2], NeighSource::Static);
    let mut pl = Pipeline::new(Arc::new(Topology::new(vec![wan])), Arc::new(fib), Arc::new(n), Arc::new(WorkerCounters::default()), PipelineConfig::default());
    let spec = CongestionSpec { params: PortParams::default(), source_v4: None, source_v6: None, end_e_sid: Some(sid_e()), notify_sids: Vec::new(), tunnel_pes: Vec::new(), source_qps: Vec::new(), source_formats: Vec::new(), auth: Default::default() };
    let e: EgressPort<VecPacket> = EgressPort::new(EgressConfig::default(), Some(spec));
    let req = CnpRequest { to: IpAddr::V6(sender()), flow_dst: "2001:db8:7::9".parse().unwrap(), dest_qp: 0x100, src_qp: Some(100), info: info(Action::RateReduce), format: CnpFormat::Icmpv6, via: 0 };
    let mut m = VecPacket::from_bytes(&[]);
    assert_eq!(e.build_cnp_packet(&mut pl, &Params::DEFAULT, &req, &mut m, 1), Ok(0), "toward the SID, which is routed");
    let d = m.to_vec();
    assert_eq!((d[14 + 6], &d[14 + 24..14 + 40]), (41, &sid_e().octets()[..]), "IPv6 in IPv6 to END.E");
    assert_eq!(&d[54 + 24..54 + 40], &sender().octets(), "the CNP inside, to the sender");
}
