//! Forwarding rules of RFC 1812, RFC 894 and IEEE 802.1Q that the pipeline
//! (and the burst fast path) must keep, reassembly of datagrams to the
//! router (RFC 791, RFC 8200 s.4.5, RFC 7112) and frames held for address
//! resolution (RFC 4861 s.7.2.2). Each test failed on the code before the
//! fix that came with it.

mod support;
use support::{conn, eth, iface, via};
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

fn pipeline() -> Pipeline {
    pipeline_mtu(1500)
}

/// p0 (port 0, MTU 1500) and p1 (port 1, MTU `mtu1`); default routes of
/// both families via gateways on p1.
fn pipeline_mtu(mtu1: u16) -> Pipeline {
    build(mtu1, PipelineConfig::default(), true)
}

fn build(mtu1: u16, cfg: PipelineConfig, defaults: bool) -> Pipeline {
    let p0 = iface("p0", 0, None, R0, 1500, &["10.0.0.1/24", "2001:db8::1/64"]);
    let p1 = iface("p1", 1, None, R1, mtu1, &["10.1.0.1/24", "2001:db8:1::1/64"]);
    let mut f = Fib::default();
    f.insert4("10.0.0.0/24".parse().unwrap(), conn(0));
    f.insert4("10.1.0.0/24".parse().unwrap(), conn(1));
    f.insert6("2001:db8::/64".parse().unwrap(), conn(0));
    f.insert6("2001:db8:1::/64".parse().unwrap(), conn(1));
    if defaults {
        f.insert4("0.0.0.0/0".parse().unwrap(), via(1, "10.1.0.254"));
        f.insert6("::/0".parse().unwrap(), via(1, "2001:db8:1::fe"));
    }
    let mut n = Neighbours::default();
    n.learn(0, "10.0.0.2".parse().unwrap(), H0, NeighSource::Static);
    n.learn(0, "2001:db8::2".parse().unwrap(), H0, NeighSource::Static);
    n.learn(1, "10.1.0.2".parse().unwrap(), H1, NeighSource::Static);
    n.learn(1, "10.1.0.254".parse().unwrap(), GW1, NeighSource::Static);
    n.learn(1, "2001:db8:1::fe".parse().unwrap(), GW1, NeighSource::Static);
    Pipeline::new(Arc::new(Topology::new(vec![p0, p1])), Arc::new(f), Arc::new(n), Arc::new(WorkerCounters::default()), cfg)
}


fn ipv4(src: Ipv4Addr, dst: Ipv4Addr, ttl: u8, proto: u8, payload: &[u8]) -> Vec<u8> {
    let total = (20 + payload.len()) as u16;
    let mut h = vec![0x45, 0];
    h.extend_from_slice(&total.to_be_bytes());
    h.extend_from_slice(&[0x42, 0x42, 0x40, 0x00, ttl, proto, 0, 0]);
    h.extend_from_slice(&src.octets());
    h.extend_from_slice(&dst.octets());
    let c = checksum::checksum(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
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



fn run(pl: &mut Pipeline, frame: &[u8], port: u16) -> (Verdict, Vec<u8>) {
    run_at(pl, frame, port, T0)
}

fn run_at(pl: &mut Pipeline, frame: &[u8], port: u16, now: u64) -> (Verdict, Vec<u8>) {
    let mut p = VecPacket::from_bytes(frame);
    let v = pl.process(&mut p, port, now);
    (v, p.data().to_vec())
}

fn ipv6(src: Ipv6Addr, dst: Ipv6Addr, hop: u8, nh: u8, payload: &[u8]) -> Vec<u8> {
    support::ipv6(src, dst, nh, hop, 0, payload)
}

// ---------------------------------------------------------------------------
// RFC 1812 s.4.3.2.7: "An ICMP error message MUST NOT be sent as the result
// of receiving: ... o A datagram destined to an IP broadcast or IP multicast
// address". 10.1.0.255 is the broadcast address of the router's own attached
// subnet 10.1.0.0/24 (interface p1); the datagram arrives on p0.
#[test]
fn no_time_exceeded_about_a_directed_broadcast_to_another_attached_subnet() {
    let mut pl = pipeline();
    let ip = ipv4(v4("10.0.0.2"), v4("10.1.0.255"), 1, 17, &udp(8));
    let (v, out) = run(&mut pl, &eth(R0, H0, None, 0x0800, &ip), 0);
    assert!(matches!(v, Verdict::Drop(_)), "ICMP error sent about a datagram to a broadcast address: {v:?}, ICMP type {}", out.get(14 + 20).copied().unwrap_or(0));
}

// RFC 1812 s.5.3.7: "A router SHOULD NOT forward any packet that has an
// invalid IP source address or a source address on network 0." ... "An IP
// destination address is invalid if it is among those defined as illegal
// destinations in 4.2.3.1, or is a Class E address (except
// 255.255.255.255)." ... "A router SHOULD NOT forward any packet that has an
// invalid IP destination address or a destination address on network 0."
// The pipeline drops only 0.0.0.0 exactly and never Class E, though its own
// ICMP code (`not_one_host`) treats 0/8 and 240/4 as not a host's.
#[test]
fn ipv4_network_0_and_class_e_addresses_are_not_forwarded() {
    let mut pl = pipeline();
    for (src, dst) in [("0.1.2.3", "10.1.0.2"), ("10.0.0.2", "0.1.2.3"), ("240.0.0.1", "10.1.0.2"), ("10.0.0.2", "240.0.0.1")] {
        let ip = ipv4(v4(src), v4(dst), 64, 17, &udp(8));
        let (v, _) = run(&mut pl, &eth(R0, H0, None, 0x0800, &ip), 0);
        assert_eq!(v, Verdict::Drop(Drop::Ipv4Martian), "{src} -> {dst} forwarded");
    }
}

// IEEE 802.1Q s.9.6: VID 0 is the null VLAN ID: "the tag header contains
// only priority information; no VLAN identifier is present in the frame."
// A priority-tagged frame (common from RoCE/PFC hosts that mark PCP on an
// untagged port) belongs to the port's untagged interface.
#[test]
fn priority_tagged_frame_is_handled_as_untagged() {
    let mut pl = pipeline();
    let ip = ipv4(v4("10.0.0.2"), v4("10.1.0.2"), 64, 17, &udp(8));
    let (v, _) = run(&mut pl, &eth(R0, H0, Some((3, 0)), 0x0800, &ip), 0);
    assert_eq!(v, Verdict::Tx(1), "priority-tagged (VID 0) frame on an untagged port");
}



// The MTU check uses the IP total length, but the frame is transmitted with
// every octet the sender put after the datagram: a 100-octet datagram in a
// 1114-octet frame leaves a 600-octet-MTU link as 1100 octets of L3
// payload. RFC 894: the IP datagram is the Ethernet data field (with padding
// only up to the 46-octet minimum); RFC 791 s.3.2 / RFC 1812 s.5.2.6: a
// datagram larger than the link MTU is fragmented (or refused with DF),
// never sent as is. Both the full pipeline and the burst fast path.
#[test]
fn trailing_octets_past_the_datagram_are_not_sent_over_the_egress_mtu() {
    let mut pl = pipeline_mtu(600);
    let ip = ipv4(v4("10.0.0.2"), v4("192.0.2.5"), 64, 17, &udp(72));
    assert_eq!(ip.len(), 100);
    let mut f = eth(R0, H0, None, 0x0800, &ip);
    f.resize(14 + 1100, 0xee);
    let mut bad = Vec::new();
    // The full pipeline.
    let (v, out) = run(&mut pl, &f, 0);
    assert_eq!(v, Verdict::Tx(1));
    if out.len() - 14 > 600 {
        bad.push(format!("pipeline sent {} octets of L3 payload on a 600-MTU link", out.len() - 14));
    }
    // The burst fast path (a fresh pipeline).
    let mut pl = pipeline_mtu(600);
    let mut g = f.clone();
    let mut outp = [0u16; 1];
    {
        let mut views: Vec<&mut [u8]> = vec![&mut g[..]];
        pl.fast_burst(0, &mut views, &mut outp);
    }
    // The fast path cannot shorten the frame in place: it leaves it to the
    // full pipeline, which does (it forwarded it whole on the 600 link).
    assert_eq!(outp[0], dataplane::fastpath::SLOW, "fast path leaves it to the pipeline");
    assert!(bad.is_empty(), "{bad:?}");
    assert_eq!(out.len(), 14 + 100, "the datagram alone");
    // A minimum frame keeps its padding (and takes the fast path).
    let small = ipv4(v4("10.0.0.2"), v4("192.0.2.5"), 64, 17, &udp(8));
    let mut f = eth(R0, H0, None, 0x0800, &small);
    f.resize(60, 0);
    let (v, out) = run(&mut pipeline_mtu(600), &f, 0);
    assert_eq!((v, out.len()), (Verdict::Tx(1), 60));
    let mut g = f.clone();
    {
        let mut views: Vec<&mut [u8]> = vec![&mut g[..]];
        pipeline_mtu(600).fast_burst(0, &mut views, &mut outp);
    }
    assert_eq!(outp[0], 1, "fast path forwards a padded minimum frame");
}

// classify.rs reads the BTH from the frame, not from the datagram: the
// Ethernet padding of a short UDP datagram to port 4791 (IPv4 total length
// 28: a UDP header and nothing else, padded to the 60-octet minimum frame)
// is taken as a RoCEv2 BTH and the frame becomes a RoCE flow for the
// congestion stage.
#[test]
fn classify_does_not_read_a_bth_from_ethernet_padding() {
    let mut u = vec![0xc0, 0x00, 0x12, 0xb7, 0, 8, 0, 0]; // UDP to 4791, length 8
    u.truncate(8);
    let ip = ipv4(v4("10.0.0.2"), v4("10.1.0.2"), 64, 17, &u);
    let mut f = eth(R1, H0, None, 0x0800, &ip);
    f.resize(60, 0);
    f[14 + 28] = 0x11; // padding octets (RC ACKNOWLEDGE if read as a BTH opcode)
    assert!(dataplane::classify::roce_meta(&f).is_none(), "roce_meta found a BTH in the padding: {:?}", dataplane::classify::roce_meta(&f));
    assert!(dataplane::classify::roce_fast(&f).is_none(), "roce_fast found a BTH in the padding");
    assert!(!dataplane::classify::maybe_response(&f), "maybe_response took the padding as an ACK");
}

// RFC 1812 s.4.3.2.7: no ICMP error about "A datagram whose source address
// does not define a single host -- e.g., a zero address, a loopback address,
// a broadcast address, a multicast address, or a Class E address." The
// source 10.0.0.255 is the broadcast address of the very subnet the datagram
// arrived from (and 10.1.0.255 that of another attached subnet); the router
// answers it with Time Exceeded all the same (sent back to the frame's
// sender MAC, as the "host" 10.x.0.255 has no neighbour entry).
#[test]
fn no_icmp_error_to_a_subnet_broadcast_source() {
    let mut pl = pipeline();
    for src in ["10.0.0.255", "10.1.0.255"] {
        let ip = ipv4(v4(src), v4("192.0.2.5"), 1, 17, &udp(8));
        let (v, out) = run(&mut pl, &eth(R0, H0, None, 0x0800, &ip), 0);
        assert!(matches!(v, Verdict::Drop(_)), "ICMP error sent to broadcast source {src}: {v:?}, ICMP type {}, to {:?}", out.get(14 + 20).copied().unwrap_or(0), &out.get(14 + 16..14 + 20));
    }
}

fn v6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

/// An ICMPv6 Echo Request (16 octets) with its checksum.
fn echo6(src: Ipv6Addr, dst: Ipv6Addr) -> Vec<u8> {
    let mut m = vec![128, 0, 0, 0, 0x12, 0x34, 0, 1, 1, 2, 3, 4, 5, 6, 7, 8];
    let s = checksum::combine(checksum::pseudo_v6(&src.octets(), &dst.octets(), 58, m.len() as u32), checksum::sum(&m));
    let c = !checksum::fold(s);
    m[2..4].copy_from_slice(&c.to_be_bytes());
    m
}

/// An IPv6 packet whose only extension header is a Fragment header.
fn frag6(src: Ipv6Addr, dst: Ipv6Addr, nh: u8, offset: u16, more: bool, ident: u32, data: &[u8]) -> Vec<u8> {
    let mut h = vec![0x60, 0, 0, 0];
    h.extend_from_slice(&((8 + data.len()) as u16).to_be_bytes());
    h.push(44);
    h.push(64);
    h.extend_from_slice(&src.octets());
    h.extend_from_slice(&dst.octets());
    h.extend_from_slice(&[nh, 0]);
    h.extend_from_slice(&(offset | u16::from(more)).to_be_bytes());
    h.extend_from_slice(&ident.to_be_bytes());
    h.extend_from_slice(data);
    h
}

// RFC 8200 s.4.5: "The Next Header values in the Fragment headers of
// different fragments of the same original packet may differ. Only the
// value from the Offset zero fragment packet is used for reassembly."
// The reassembly key includes each fragment's Next Header, so such a
// datagram never completes.
#[test]
fn ipv6_reassembly_ignores_next_header_of_non_first_fragments() {
    let mut pl = pipeline();
    let (src, ours) = (v6("2001:db8::2"), v6("2001:db8::1"));
    let m = echo6(src, ours);
    let a = frag6(src, ours, 58, 0, true, 9, &m[..8]);
    let b = frag6(src, ours, 17, 8, false, 9, &m[8..]);
    assert_eq!(run(&mut pl, &eth(R0, H0, None, 0x86dd, &a), 0).0, Verdict::Consumed);
    let (v, out) = run(&mut pl, &eth(R0, H0, None, 0x86dd, &b), 0);
    assert_eq!(v, Verdict::Tx(0), "datagram not reassembled");
    assert_eq!(out[14 + 40], 129, "echo reply");
}

// RFC 8200 s.4.5: "If the fragment is a whole datagram (that is, both the
// Fragment Offset field and the M flag are zero), then it does not need any
// further reassembly and should be processed as a fully reassembled packet
// ... Any other fragments that match this packet (i.e., the same IPv6 Source
// Address, IPv6 Destination Address, and Fragment Identification) should be
// processed independently." (RFC 6946 s.4 makes it a MUST.)
#[test]
fn ipv6_atomic_fragment_is_processed_in_isolation() {
    let mut pl = pipeline();
    let (src, ours) = (v6("2001:db8::2"), v6("2001:db8::1"));
    // A stray fragment with the same identification is pending.
    let stray = frag6(src, ours, 58, 8, true, 7, &[0u8; 8]);
    let (v, _) = run(&mut pl, &eth(R0, H0, None, 0x86dd, &stray), 0);
    assert_eq!(v, Verdict::Consumed);
    // An atomic fragment carrying a whole Echo Request.
    let atomic = frag6(src, ours, 58, 0, false, 7, &echo6(src, ours));
    let (v, out) = run(&mut pl, &eth(R0, H0, None, 0x86dd, &atomic), 0);
    assert_eq!(v, Verdict::Tx(0), "atomic fragment not answered");
    assert_eq!(out[14 + 40], 129, "echo reply");
}

// RFC 4291 s.2.6.1: "Routers are required to support the Subnet-Router
// anycast addresses for the subnets to which they have interfaces." An Echo
// Request to 2001:db8:: (the Subnet-Router anycast address of p0's
// 2001:db8::/64) is taken as a transit packet to a host 2001:db8:: and the
// router solicits that "neighbour" instead of answering (RFC 4443 s.4.2:
// the reply to an anycast request comes from a unicast address of the
// receiving interface).
#[test]
fn subnet_router_anycast_address_is_the_routers_own() {
    let mut pl = pipeline();
    let (src, anycast) = (v6("2001:db8::2"), v6("2001:db8::"));
    let mut ip = vec![0x60, 0, 0, 0, 0, 16, 58, 64];
    ip.extend_from_slice(&src.octets());
    ip.extend_from_slice(&anycast.octets());
    ip.extend_from_slice(&echo6(src, anycast));
    let (v, out) = run(&mut pl, &eth(R0, H0, None, 0x86dd, &ip), 0);
    let ns_for_anycast = pl.solicits.iter().any(|s| s.target == IpAddr::V6(anycast));
    assert!(!ns_for_anycast, "Neighbor Solicitation queued for our own Subnet-Router anycast address (verdict {v:?})");
    assert_eq!(v, Verdict::Tx(0), "echo request to the Subnet-Router anycast address not answered");
    assert_eq!(out[14 + 40], 129);
    assert_eq!(&out[14 + 8..14 + 24], &v6("2001:db8::1").octets(), "from the interface's unicast address");
    // The fast path leaves a datagram to it to the pipeline (UDP, which the
    // fast path would otherwise forward toward a "host" 2001:db8::).
    let u = udp(8);
    let mut udp6 = vec![0x60, 0, 0, 0, 0, u.len() as u8, 17, 64];
    udp6.extend_from_slice(&src.octets());
    udp6.extend_from_slice(&anycast.octets());
    udp6.extend_from_slice(&u);
    let mut g = eth(R0, H0, None, 0x86dd, &udp6);
    let mut outp = [0u16; 1];
    {
        let mut views: Vec<&mut [u8]> = vec![&mut g[..]];
        pipeline().fast_burst(0, &mut views, &mut outp);
    }
    assert_eq!(outp[0], dataplane::fastpath::SLOW);
}

// RFC 1812 s.4.3.2.4: "the IP source address in an ICMP message originated
// by the router MUST be one of the IP addresses associated with the physical
// interface over which the ICMP message is transmitted." Routing here is
// asymmetric: 192.0.2.7 is reached by the default route out of p1, but its
// datagram arrives on p0. Was: the Time Exceeded left by p1 from p0's
// address 10.0.0.1.
#[test]
fn icmp_error_is_sourced_from_the_egress_interface() {
    let mut pl = pipeline();
    let ip = ipv4(v4("192.0.2.7"), v4("10.1.0.2"), 1, 17, &udp(8));
    let (v, out) = run(&mut pl, &eth(R0, H0, None, 0x0800, &ip), 0);
    assert_eq!(v, Verdict::Tx(1), "Time Exceeded routed toward 192.0.2.7");
    assert_eq!(&out[0..6], &GW1, "to the default gateway");
    assert_eq!(&out[6..12], &R1, "from p1's MAC");
    assert_eq!(out[14 + 20], 11, "Time Exceeded");
    assert_eq!(&out[14 + 12..14 + 16], &v4("10.1.0.1").octets(), "source: p1's address, the interface the error leaves by");
    assert_eq!(&out[14 + 16..14 + 20], &v4("192.0.2.7").octets());
    assert_eq!(checksum::checksum(&out[14..34]), 0, "IPv4 header checksum");

    // IPv6 (RFC 4443 s.2.2 (c): the source as for any packet to that
    // destination, RFC 6724 rule 5: the outgoing interface's).
    let (src, dst) = (v6("2001:db8:99::7"), v6("2001:db8:1::2"));
    let mut ip = vec![0x60, 0, 0, 0, 0, 16, 17, 1];
    ip.extend_from_slice(&src.octets());
    ip.extend_from_slice(&dst.octets());
    ip.extend_from_slice(&udp(8));
    let (v, out) = run(&mut pl, &eth(R0, H0, None, 0x86dd, &ip), 0);
    assert_eq!(v, Verdict::Tx(1), "Time Exceeded routed toward {src}");
    assert_eq!(&out[0..6], &GW1);
    assert_eq!(out[14 + 40], 3, "Time Exceeded");
    assert_eq!(&out[14 + 8..14 + 24], &v6("2001:db8:1::1").octets(), "source: p1's address");
}

// RFC 1812 s.4.3.2.8 limits the rate of ICMP errors sent; an error that is
// never sent must not use up the allowance. Here the first error has no
// route back to its source (no default route) and the second, one packet
// later, is due. Was: the token was taken before the route lookup, and the
// second error was withheld as rate-limited.
#[test]
fn an_icmp_error_that_cannot_be_sent_spends_no_rate_token() {
    let cfg = PipelineConfig { icmp_error_rate_pps: 1, icmp_error_burst: 1, ..PipelineConfig::default() };
    let mut pl = build(1500, cfg, false);
    let lost = ipv4(v4("198.51.100.9"), v4("10.1.0.2"), 1, 17, &udp(8));
    let (v, _) = run(&mut pl, &eth(R0, H0, None, 0x0800, &lost), 0);
    assert_eq!(v, Verdict::Drop(Drop::NoRoute), "no route back to 198.51.100.9");
    let due = ipv4(v4("10.0.0.2"), v4("10.1.0.2"), 1, 17, &udp(8));
    let (v, out) = run(&mut pl, &eth(R0, H0, None, 0x0800, &due), 0);
    assert_eq!(v, Verdict::Tx(0), "Time Exceeded to 10.0.0.2 withheld");
    assert_eq!(out[14 + 20], 11);
    // And the allowance is one: a third error in the same instant is not sent.
    let (v, _) = run(&mut pl, &eth(R0, H0, None, 0x0800, &due), 0);
    assert_eq!(v, Verdict::Drop(Drop::TtlExpired), "rate limit");
}

/// An IPv4 fragment (IHL 5) with Identification `id`.
fn frag4(src: Ipv4Addr, dst: Ipv4Addr, id: u16, offset: u16, more: bool, proto: u8, data: &[u8]) -> Vec<u8> {
    let mut ip = ipv4(src, dst, 64, proto, data);
    ip[4..6].copy_from_slice(&id.to_be_bytes());
    ip[6..8].copy_from_slice(&((offset / 8) | if more { 0x2000 } else { 0 }).to_be_bytes());
    ip[10..12].fill(0);
    let c = checksum::checksum(&ip[..20]);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    ip
}

const REASM_OVER: u64 = T0 + 31_000_000_000;

// RFC 8200 s.4.5: "If insufficient fragments are received to complete
// reassembly of a packet within 60 seconds of the reception of the
// first-arriving fragment of that packet, reassembly of that packet must be
// abandoned ... If the first fragment (i.e., the one with a Fragment Offset
// of zero) has been received, an ICMP Time Exceeded -- Fragment Reassembly
// Time Exceeded message should be sent to the source of that fragment."
// Was: the datagram was discarded (reassembly-timeout) and nothing sent.
#[test]
fn ipv6_reassembly_timeout_sends_time_exceeded_code_1() {
    let mut pl = pipeline();
    let (src, ours) = (v6("2001:db8::2"), v6("2001:db8::1"));
    let m = echo6(src, ours);
    let first = frag6(src, ours, 58, 0, true, 0x0a0b0c0d, &m[..8]);
    assert_eq!(run(&mut pl, &eth(R0, H0, None, 0x86dd, &first), 0).0, Verdict::Consumed);
    assert!(!pl.reassembly_due(T0 + 1_000_000_000), "due long before the timeout");
    let mut p = VecPacket::with_capacity(VecPacket::CAPACITY);
    assert!(pl.reassembly_timeout(&mut p, T0 + 1_000_000_000).is_none());
    assert!(pl.reassembly_due(REASM_OVER));
    assert_eq!(pl.reassembly_timeout(&mut p, REASM_OVER), Some(Ok(0)), "Time Exceeded out of p0");
    let out = p.data();
    assert_eq!(&out[0..6], &H0, "to the source's MAC");
    assert_eq!(&out[6..12], &R0);
    assert_eq!(&out[12..14], &[0x86, 0xdd]);
    let ip = &out[14..];
    assert_eq!(ip[6], 58);
    assert_eq!(&ip[8..24], &ours.octets(), "from p0's address");
    assert_eq!(&ip[24..40], &src.octets());
    assert_eq!(&ip[40..42], &[3, 1], "Time Exceeded, fragment reassembly time exceeded");
    assert_eq!(&ip[44..48], &[0; 4], "unused");
    // The invoking packet: the first fragment as it was received.
    assert_eq!(&ip[48..], &first[..], "quote of the first fragment");
    assert_eq!(usize::from(u16::from_be_bytes([ip[4], ip[5]])), ip.len() - 40);
    let s = checksum::combine(checksum::pseudo_v6(&ours.octets(), &src.octets(), 58, (ip.len() - 40) as u32), checksum::sum(&ip[40..]));
    assert_eq!(checksum::fold(s), 0xffff, "ICMPv6 checksum");
    assert_eq!(pl.counters.drops[Drop::ReasmTimeout as usize].get(), 1);
    assert!(!pl.reassembly_due(REASM_OVER), "datagram still in reassembly");

    // Without its first fragment nothing is owed to the source.
    let later = frag6(src, ours, 58, 8, false, 0x0a0b0c0e, &m[8..]);
    assert_eq!(run(&mut pl, &eth(R0, H0, None, 0x86dd, &later), 0).0, Verdict::Consumed);
    let mut p = VecPacket::with_capacity(VecPacket::CAPACITY);
    assert_eq!(pl.reassembly_timeout(&mut p, REASM_OVER), Some(Err(Drop::ReasmTimeout)));
    assert_eq!(pl.counters.drops[Drop::ReasmTimeout as usize].get(), 2);

    // With no buffer for the error (the worker's pool is empty) the
    // datagram still leaves reassembly, once: the worker does not find it
    // due again at every poll (and count a no-mbuf each time, as it did).
    let first = frag6(src, ours, 58, 0, true, 0x0a0b0c0f, &m[..8]);
    assert_eq!(run(&mut pl, &eth(R0, H0, None, 0x86dd, &first), 0).0, Verdict::Consumed);
    assert!(pl.reassembly_due(REASM_OVER));
    assert!(pl.reassembly_discard(REASM_OVER));
    assert!(!pl.reassembly_due(REASM_OVER));
    assert!(!pl.reassembly_discard(REASM_OVER), "nothing more was due");
    assert_eq!(pl.counters.drops[Drop::ReasmTimeout as usize].get(), 3);
}

// RFC 1122 s.3.3.2: "If the reassembly timeout expires, ... if fragment zero
// has been received, the host SHOULD send an ICMP Time Exceeded message with
// code 1 (fragment reassembly time exceeded)" (RFC 792); RFC 1812 s.4.2.2.7
// has a router reassemble what is addressed to it as a host does. Was:
// nothing sent.
#[test]
fn ipv4_reassembly_timeout_sends_time_exceeded_code_1() {
    let mut pl = pipeline();
    let (src, ours) = (v4("10.0.0.2"), v4("10.0.0.1"));
    let first = frag4(src, ours, 0x4711, 0, true, 17, &udp(24));
    assert_eq!(run(&mut pl, &eth(R0, H0, None, 0x0800, &first), 0).0, Verdict::Consumed);
    let mut p = VecPacket::with_capacity(VecPacket::CAPACITY);
    assert_eq!(pl.reassembly_timeout(&mut p, REASM_OVER), Some(Ok(0)));
    let out = p.data();
    assert_eq!(&out[0..6], &H0);
    let ip = &out[14..];
    assert_eq!(ip[9], 1, "ICMP");
    assert_eq!(&ip[12..16], &ours.octets());
    assert_eq!(&ip[16..20], &src.octets());
    assert_eq!(checksum::checksum(&ip[..20]), 0, "IPv4 header checksum");
    assert_eq!(&ip[20..22], &[11, 1], "Time Exceeded, fragment reassembly time exceeded");
    assert_eq!(checksum::checksum(&ip[20..]), 0, "ICMP checksum");
    assert_eq!(&ip[28..], &first[..], "quote of the first fragment, MF set, as received");
    assert_eq!(pl.counters.drops[Drop::ReasmTimeout as usize].get(), 1);
}

// RFC 6890 s.2.2.3, table "IPv4-mapped Address" (::ffff:0:0/96): Source
// False, Destination False, Forwardable False (RFC 4291 s.2.5.5.2: these
// addresses stand for IPv4 nodes inside a dual-stack host's API, never on
// the wire). Was: both forwarded (the destination by the default route).
#[test]
fn ipv4_mapped_ipv6_addresses_are_not_forwarded() {
    let mut pl = pipeline();
    for (src, dst) in [("::ffff:10.0.0.2", "2001:db8:1::2"), ("2001:db8::2", "::ffff:192.0.2.1")] {
        let mut ip = vec![0x60, 0, 0, 0, 0, 16, 17, 64];
        ip.extend_from_slice(&v6(src).octets());
        ip.extend_from_slice(&v6(dst).octets());
        ip.extend_from_slice(&udp(8));
        let (v, _) = run(&mut pl, &eth(R0, H0, None, 0x86dd, &ip), 0);
        assert_eq!(v, Verdict::Drop(Drop::Ipv6Martian), "{src} -> {dst}");
    }
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
/// own p1 MAC: no station on p0 receives it. (Now such an error waits for
/// the source's address instead, as a forwarded packet does.)
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
            // (Since a_timed_out_packets_error_waits_for_its_unresolved_source:
            // the source is asked for and the error built to be held, RFC
            // 4861 s.7.2.2 "for each packet queued"; it was dropped as
            // neighbour-miss before.)
            let at: std::net::IpAddr = src.parse().unwrap();
            assert_eq!(r, Ok(0), "{src}: the error is built toward the source's interface");
            assert_eq!(&p.data()[0..6], &dataplane::unres::HOLD_MAC[..], "{src}: held for the source's address, not sent to {:02x?}", &p.data()[..6]);
            assert_eq!(pl.held(), Some((0, at)), "{src}: waits for the source on p0");
            assert!(pl.solicits.iter().any(|s| s.iface == 0 && s.target == at), "{src}: the source is asked for");
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
    assert_eq!(run_at(&mut pl, &eth(R0, H0, None, 0x0800, &first), 0, T0).0, Verdict::Consumed);
    // 31 s later, in the burst of the poll loop where the datagram becomes
    // due, another datagram's fragment arrives.
    let now = T0 + 31 * SEC;
    let other = frag4(src, ours, 0x2222, 0, true, 17, &udp(24));
    assert_eq!(run_at(&mut pl, &eth(R0, H0, None, 0x0800, &other), 0, now).0, Verdict::Consumed);
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
    let m = support::icmpv6(src, ours, 128, 0, &[0, 1, 0, 1, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9]);
    let f = frag6(src, ours, 58, 0, true, 0x5151, &m[..12]);
    let (v, out) = run_at(&mut pl, &eth(R0, H0, None, 0x86dd, &f), 0, T0);
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
    let (v, out) = run_at(&mut pl, &eth(R0, H0, None, 0x86dd, &f), 0, T0);
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
    let echo = support::icmpv6(src, ours, 128, 0, &[0, 7, 0, 1, 1, 2, 3, 4]);
    let first = frag6(src, ours, 60, 0, true, 0x5353, &dopt);
    let second = frag6(src, ours, 60, 8, false, 0x5353, &echo);
    let (v, out) = run_at(&mut pl, &eth(R0, H0, None, 0x86dd, &first), 0, T0);
    assert_eq!(v, Verdict::Tx(0), "Parameter Problem to the source");
    assert_eq!((out[14 + 40], out[14 + 41]), (4, 3), "Parameter Problem, code 3");
    assert_eq!(&out[14 + 44..14 + 48], &[0; 4], "pointer 0");
    let (v, out) = run_at(&mut pl, &eth(R0, H0, None, 0x86dd, &second), 0, T0);
    assert!(!(v == Verdict::Tx(0) && out.get(14 + 48) == Some(&129)), "the datagram was reassembled and answered");
    // A first fragment whose chain is cut inside the Destination Options
    // header: the same.
    let cut = frag6(src, ours, 60, 0, true, 0x5355, &dopt[..4]);
    let (v, out) = run_at(&mut pl, &eth(R0, H0, None, 0x86dd, &cut), 0, T0);
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
    let err = support::icmpv6(src, ours, 1, 3, &[0u8; 68]);
    let first = frag6(src, ours, 58, 0, true, 0x5454, &err[..48]);
    assert_eq!(run_at(&mut pl, &eth(R0, H0, None, 0x86dd, &first), 0, T0).0, Verdict::Consumed);
    let mut p = VecPacket::with_capacity(VecPacket::CAPACITY);
    let r = pl.reassembly_timeout(&mut p, T0 + 61 * SEC);
    assert!(matches!(r, Some(Err(_))), "ICMPv6 error sent about an ICMPv6 error: {r:?}, type {:?}", p.data().get(14 + 40..14 + 42));
}
