//! Reassembly of datagrams to the router (`reasm.rs`) and frames held for
//! address resolution (`unres.rs`), from a review against the RFCs: each
//! test failed on the code before its fix, for the reason its doc comment
//! gives ("Was").

mod support;
use support::{conn, eth, via};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use dataplane::counters::{Drop, WorkerCounters};
use dataplane::packet::{PacketBuffer, VecPacket};
use dataplane::pipeline::{Pipeline, PipelineConfig, Verdict};
use dataplane::tables::{Fib, MacAddr, NeighSource, Neighbours, Topology};
use dataplane::unres::{HeldFrames, HoldConfig, Outcome};
use dataplane::wire::checksum;

const R0: MacAddr = [0x02, 0, 0, 0, 0, 0x10];
const R1: MacAddr = [0x02, 0, 0, 0, 0, 0x11];
const H0: MacAddr = [0x00, 0x11, 0x22, 0x00, 0x00, 0x02];
const H1: MacAddr = [0x00, 0x11, 0x22, 0x01, 0x00, 0x02];
const GW1: MacAddr = [0x00, 0x11, 0x22, 0x01, 0x00, 0xfe];
const T0: u64 = 5_000_000_000;
const SEC: u64 = 1_000_000_000;

fn v4(s: &str) -> Ipv4Addr {
    s.parse().unwrap()
}

fn v6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

/// p0 (port 0) and p1 (port 1), MTU 1500, each with its own MAC; default
/// routes of both families via gateways on p1. Only 10.0.0.2 /
/// 2001:db8::2 are known on p0.
fn pipeline() -> Pipeline {
    let p0 = support::iface("p0", 0, None, R0, 1500, &["10.0.0.1/24", "2001:db8::1/64"]);
    let p1 = support::iface("p1", 1, None, R1, 1500, &["10.1.0.1/24", "2001:db8:1::1/64"]);
    let mut f = Fib::default();
    f.insert4("10.0.0.0/24".parse().unwrap(), conn(0));
    f.insert4("10.1.0.0/24".parse().unwrap(), conn(1));
    f.insert6("2001:db8::/64".parse().unwrap(), conn(0));
    f.insert6("2001:db8:1::/64".parse().unwrap(), conn(1));
    f.insert4("0.0.0.0/0".parse().unwrap(), via(1, "10.1.0.254"));
    f.insert6("::/0".parse().unwrap(), via(1, "2001:db8:1::fe"));
    let mut n = Neighbours::default();
    n.learn(0, "10.0.0.2".parse().unwrap(), H0, NeighSource::Static);
    n.learn(0, "2001:db8::2".parse().unwrap(), H0, NeighSource::Static);
    n.learn(1, "10.1.0.2".parse().unwrap(), H1, NeighSource::Static);
    n.learn(1, "10.1.0.254".parse().unwrap(), GW1, NeighSource::Static);
    n.learn(1, "2001:db8:1::fe".parse().unwrap(), GW1, NeighSource::Static);
    Pipeline::new(Arc::new(Topology::new(vec![p0, p1])), Arc::new(f), Arc::new(n), Arc::new(WorkerCounters::default()), PipelineConfig::default())
}

fn ipv4(src: Ipv4Addr, dst: Ipv4Addr, ttl: u8, proto: u8, payload: &[u8]) -> Vec<u8> {
    let total = (20 + payload.len()) as u16;
    let mut h = vec![0x45, 0];
    h.extend_from_slice(&total.to_be_bytes());
    h.extend_from_slice(&[0x42, 0x42, 0x00, 0x00, ttl, proto, 0, 0]);
    h.extend_from_slice(&src.octets());
    h.extend_from_slice(&dst.octets());
    let c = checksum::checksum(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h.extend_from_slice(payload);
    h
}

fn ipv6(src: Ipv6Addr, dst: Ipv6Addr, hop: u8, nh: u8, payload: &[u8]) -> Vec<u8> {
    let mut h = vec![0x60, 0, 0, 0];
    h.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    h.push(nh);
    h.push(hop);
    h.extend_from_slice(&src.octets());
    h.extend_from_slice(&dst.octets());
    h.extend_from_slice(payload);
    h
}

fn udp(len: usize) -> Vec<u8> {
    let mut u = vec![0x30, 0x39, 0x00, 0x35];
    u.extend_from_slice(&((8 + len) as u16).to_be_bytes());
    u.extend_from_slice(&[0, 0]);
    u.extend((0..len).map(|i| i as u8));
    u
}

/// An IPv4 fragment (IHL 5) with Identification `id`, `offset` in octets.
fn frag4(src: Ipv4Addr, dst: Ipv4Addr, id: u16, offset: u16, more: bool, proto: u8, data: &[u8]) -> Vec<u8> {
    let mut ip = ipv4(src, dst, 64, proto, data);
    ip[4..6].copy_from_slice(&id.to_be_bytes());
    ip[6..8].copy_from_slice(&((offset / 8) | if more { 0x2000 } else { 0 }).to_be_bytes());
    ip[10..12].fill(0);
    let c = checksum::checksum(&ip[..20]);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    ip
}

/// An IPv6 packet whose only extension header is a Fragment header.
fn frag6(src: Ipv6Addr, dst: Ipv6Addr, nh: u8, offset: u16, more: bool, ident: u32, data: &[u8]) -> Vec<u8> {
    let mut body = vec![nh, 0];
    body.extend_from_slice(&(offset | u16::from(more)).to_be_bytes());
    body.extend_from_slice(&ident.to_be_bytes());
    body.extend_from_slice(data);
    ipv6(src, dst, 64, 44, &body)
}

/// An ICMPv6 message with its checksum for `src` -> `dst`.
fn icmp6(src: Ipv6Addr, dst: Ipv6Addr, ty: u8, code: u8, rest: &[u8]) -> Vec<u8> {
    support::icmpv6(src, dst, ty, code, rest)
}

fn run(pl: &mut Pipeline, frame: &[u8], port: u16, now: u64) -> (Verdict, Vec<u8>) {
    let mut p = VecPacket::from_bytes(frame);
    let v = pl.process(&mut p, port, now);
    (v, p.data().to_vec())
}

// ===================================================================== unres

/// Rule: an ICMP error goes to the source's link-layer address, found
/// through the neighbour table or, for an error about a received frame, the
/// frame's own Ethernet source (the sender); never to one of the router's
/// own MACs (RFC 1812 s.4.3.2 / RFC 4861 s.7.2.2: the Destination
/// Unreachable for a held packet goes "to the source" of that packet;
/// pipeline.rs `back_to_sender` itself refuses "our own (a frame the
/// router built itself)").
/// Was: `unreachable_for_held` hands the held frame, already rewritten for
/// the egress interface (Ethernet source = p1's MAC R1), to `icmp_error4` /
/// `icmp_error6`; when the packet's source (10.0.0.3, 2001:db8::3: a host
/// on p0 the router never resolved) has no neighbour entry, `back_to_sender`
/// compares that Ethernet source with p0's MAC only, accepts it, and the
/// Destination Unreachable leaves by port 0 addressed to R1, the router's
/// own p1 MAC: no station on p0 receives it.
#[test]
fn unreachable_for_a_held_frame_is_not_sent_to_the_routers_own_mac() {
    let mut pl = pipeline();
    pl.set_hold(true);
    let h3 = [0x00, 0x11, 0x22, 0x00, 0x00, 0x03];
    for (is6, src) in [(false, "10.0.0.3"), (true, "2001:db8::3"), (false, "10.0.0.2"), (true, "2001:db8::2")] {
        // From p0 to an unresolved neighbour on p1; 10.0.0.3 / 2001:db8::3
        // are not resolved either, 10.0.0.2 / 2001:db8::2 are (H0).
        let (ip, et) = if is6 {
            (ipv6(src.parse().unwrap(), v6("2001:db8:1::77"), 64, 17, &udp(8)), 0x86dd)
        } else {
            (ipv4(src.parse().unwrap(), v4("10.1.0.77"), 64, 17, &udp(8)), 0x0800)
        };
        let mut p = VecPacket::from_bytes(&eth(R0, if src.ends_with('3') { h3 } else { H0 }, None, et, &ip));
        assert_eq!(pl.process(&mut p, 0, T0), Verdict::Tx(1), "{src}: built to be held");
        assert_eq!(&p.data()[6..12], &R1, "{src}: the held frame carries the egress MAC as its source");
        let r = pl.unreachable_for_held(&mut p, T0 + 3 * SEC);
        if src.ends_with('3') {
            assert_eq!(r, Err(Drop::NeighbourMiss), "{src}: no address to send the error to: {:02x?}", &p.data()[..6]);
        } else {
            assert_eq!(r, Ok(0), "{src}: the error leaves toward the source");
            assert_eq!((&p.data()[0..6], &p.data()[6..12]), (&H0[..], &R0[..]), "{src}: to the source's MAC, from p0's");
        }
    }
}

/// Rule: RFC 4861 s.7.2.2: "When a queue overflows, the new arrival SHOULD
/// replace the oldest entry"; RFC 1122 s.2.3.2.2: the link layer "SHOULD
/// save ... at least one (the latest) packet" of those to an unresolved
/// address.
/// Was: `HeldFrames::hold` refuses the new arrival once a neighbour has
/// `per_neighbour` frames waiting (`neighbour-queue-full`) and keeps the
/// oldest ones, so what leaves on resolution is the stalest traffic and
/// the newest (e.g. a retransmission) is lost.
#[test]
fn a_full_neighbour_queue_keeps_the_newest_frames() {
    let key = (1u16, IpAddr::V4(v4("10.1.0.77")));
    let mut h: HeldFrames<u32> = HeldFrames::new(HoldConfig { per_neighbour: 2, total: 16, timeout_ns: 3 * SEC });
    let _ = h.hold(key, 1, false, T0, 1, 1);
    let _ = h.hold(key, 1, false, T0 + 1, 1, 2);
    let _ = h.hold(key, 1, false, T0 + 2, 1, 3);
    assert!(h.waiting(&key) <= 2, "per-neighbour bound");
    let mut released = Vec::new();
    h.walk(1, T0 + 10, |k| (k == key).then_some([0x00, 0x11, 0x22, 0x01, 0x00, 0x77]), |_| {}, |o| {
        if let Outcome::Release(x, _) = o {
            released.push(x.item)
        }
    });
    assert_eq!(released, vec![2, 3], "the newest arrival replaces the oldest");
}

// ===================================================================== reasm

/// Rule: RFC 1122 s.3.3.2 / RFC 792 (IPv4) and RFC 8200 s.4.5 / RFC 4443
/// s.3.3 (IPv6): when reassembly times out and the first fragment was
/// received, ICMP Time Exceeded code 1 is sent to its source (reasm.rs
/// `expire` / `Pipeline::reassembly_timeout` exist for that; the worker
/// calls them after each burst).
/// Was: `Reassembly::add` first sweeps every slot past `REASM_TIMEOUT_NS`
/// and discards it (`reassembly-timeout`) without the Time Exceeded. The
/// worker takes `now` before the burst and checks `reassembly_due` after
/// it, so any fragment to the router in the burst during which a datagram
/// becomes due silently swallows that datagram's error.
#[test]
fn a_fragment_arriving_when_a_datagram_times_out_does_not_cancel_its_time_exceeded() {
    let mut pl = pipeline();
    let (src, ours) = (v4("10.0.0.2"), v4("10.0.0.1"));
    let first = frag4(src, ours, 0x1111, 0, true, 17, &udp(24));
    assert_eq!(run(&mut pl, &eth(R0, H0, None, 0x0800, &first), 0, T0).0, Verdict::Consumed);
    // 31 s later, in the burst of the poll loop where the datagram becomes
    // due, another datagram's fragment arrives.
    let now = T0 + 31 * SEC;
    let other = frag4(src, ours, 0x2222, 0, true, 17, &udp(24));
    assert_eq!(run(&mut pl, &eth(R0, H0, None, 0x0800, &other), 0, now).0, Verdict::Consumed);
    // After the burst the worker looks for due datagrams.
    let mut p = VecPacket::with_capacity(VecPacket::CAPACITY);
    let r = pl.reassembly_timeout(&mut p, now);
    assert_eq!(r, Some(Ok(0)), "Time Exceeded for datagram 0x1111 (first fragment received); reassembly-timeout drops: {}", pl.counters.drops[Drop::ReasmTimeout as usize].get());
    assert_eq!(&p.data()[14 + 20..14 + 22], &[11, 1]);
}

/// Rule: RFC 8200 s.4.5: "If the length of a fragment, as derived from the
/// fragment packet's Payload Length field, is not a multiple of 8 octets
/// and the M flag of that fragment is 1, then that fragment must be
/// discarded and an ICMP Parameter Problem, Code 0, message should be sent
/// to the source of the fragment, pointing to the Payload Length field of
/// the fragment packet."
/// Was: dropped silently as `reassembly-malformed`, no Parameter Problem.
#[test]
fn ipv6_fragment_not_a_multiple_of_8_gets_parameter_problem_pointing_at_payload_length() {
    let mut pl = pipeline();
    let (src, ours) = (v6("2001:db8::2"), v6("2001:db8::1"));
    let m = icmp6(src, ours, 128, 0, &[0, 1, 0, 1, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9]);
    let f = frag6(src, ours, 58, 0, true, 0x5151, &m[..12]);
    let (v, out) = run(&mut pl, &eth(R0, H0, None, 0x86dd, &f), 0, T0);
    assert_eq!(v, Verdict::Tx(0), "Parameter Problem to the source");
    assert_eq!(&out[14 + 40..14 + 42], &[4, 0], "Parameter Problem, code 0");
    assert_eq!(&out[14 + 44..14 + 48], &4u32.to_be_bytes(), "pointer: Payload Length");
}

/// Rule: RFC 8200 s.4.5: "If the length and offset of a fragment are such
/// that the Payload Length of the packet reassembled from that fragment
/// would exceed 65,535 octets, then that fragment must be discarded and an
/// ICMP Parameter Problem, Code 0, message should be sent to the source of
/// the fragment, pointing to the Fragment Offset field of the fragment
/// packet."
/// Was: dropped silently as `reassembly-malformed`, no Parameter Problem.
#[test]
fn ipv6_fragment_beyond_65535_gets_parameter_problem_pointing_at_fragment_offset() {
    let mut pl = pipeline();
    let (src, ours) = (v6("2001:db8::2"), v6("2001:db8::1"));
    // Offset 65528 with 16 octets: the datagram would end at 65544.
    let f = frag6(src, ours, 58, 65528, false, 0x5252, &[0x42; 16]);
    let (v, out) = run(&mut pl, &eth(R0, H0, None, 0x86dd, &f), 0, T0);
    assert_eq!(v, Verdict::Tx(0), "Parameter Problem to the source");
    assert_eq!(&out[14 + 40..14 + 42], &[4, 0], "Parameter Problem, code 0");
    assert_eq!(&out[14 + 44..14 + 48], &42u32.to_be_bytes(), "pointer: Fragment Offset");
}

/// Rule: RFC 7112 s.5 / RFC 8200 s.4.5: "If the first fragment does not
/// include all headers through an Upper-Layer header, then that fragment
/// should be discarded and an ICMP Parameter Problem, Code 3, message
/// should be sent to the source of the fragment, with the Pointer field set
/// to zero."
/// Was: a first fragment whose chain (Fragment -> Destination Options)
/// stops right before the upper-layer header is taken into reassembly, and
/// the datagram completed by the next fragment is answered.
#[test]
fn ipv6_first_fragment_without_the_upper_layer_header_is_discarded() {
    let mut pl = pipeline();
    let (src, ours) = (v6("2001:db8::2"), v6("2001:db8::1"));
    // Destination Options (8 octets, PadN), then ICMPv6 Echo Request.
    let dopt = [58u8, 0, 1, 4, 0, 0, 0, 0];
    let echo = icmp6(src, ours, 128, 0, &[0, 7, 0, 1, 1, 2, 3, 4]);
    let first = frag6(src, ours, 60, 0, true, 0x5353, &dopt);
    let second = frag6(src, ours, 60, 8, false, 0x5353, &echo);
    let (v, out) = run(&mut pl, &eth(R0, H0, None, 0x86dd, &first), 0, T0);
    assert_eq!(v, Verdict::Tx(0), "Parameter Problem to the source");
    assert_eq!((out[14 + 40], out[14 + 41]), (4, 3), "Parameter Problem, code 3");
    assert_eq!(&out[14 + 44..14 + 48], &[0; 4], "pointer 0");
    let (v, out) = run(&mut pl, &eth(R0, H0, None, 0x86dd, &second), 0, T0);
    assert!(!(v == Verdict::Tx(0) && out.get(14 + 48) == Some(&129)), "the datagram was reassembled and answered");
    // A first fragment whose chain is cut inside the Destination Options
    // header: the same.
    let cut = frag6(src, ours, 60, 0, true, 0x5355, &dopt[..4]);
    let (v, out) = run(&mut pl, &eth(R0, H0, None, 0x86dd, &cut), 0, T0);
    assert_eq!((v, out[14 + 40], out[14 + 41]), (Verdict::Tx(0), 4, 3), "a cut chain: Parameter Problem, code 3");
    assert_eq!(Drop::ReasmChainIncomplete.name(), "reassembly-first-fragment-incomplete");
}

/// Rule: RFC 4443 s.2.4 (e.1): "An ICMPv6 error message MUST NOT be
/// originated as a result of receiving ... an ICMPv6 error message" (the
/// IPv4 path, `icmp4_error_allowed`, already applies RFC 1812 s.4.3.2.7 to
/// a first fragment by reading its ICMP type).
/// Was: the reassembly of a fragmented ICMPv6 Destination Unreachable to
/// the router times out, its first fragment (offset 0, ICMPv6 type 1
/// readable) was received, and a Time Exceeded is sent about it:
/// `icmp6_error_allowed` allows any packet with a Fragment header.
#[test]
fn no_time_exceeded_about_a_fragmented_icmpv6_error() {
    let mut pl = pipeline();
    let (src, ours) = (v6("2001:db8::2"), v6("2001:db8::1"));
    // Destination Unreachable (type 1, code 3) quoting 64 octets.
    let err = icmp6(src, ours, 1, 3, &[0u8; 68]);
    let first = frag6(src, ours, 58, 0, true, 0x5454, &err[..48]);
    assert_eq!(run(&mut pl, &eth(R0, H0, None, 0x86dd, &first), 0, T0).0, Verdict::Consumed);
    let mut p = VecPacket::with_capacity(VecPacket::CAPACITY);
    let r = pl.reassembly_timeout(&mut p, T0 + 61 * SEC);
    assert!(matches!(r, Some(Err(_))), "ICMPv6 error sent about an ICMPv6 error: {r:?}, type {:?}", p.data().get(14 + 40..14 + 42));
}
