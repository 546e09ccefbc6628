//! Forwarding rules of RFC 1812, RFC 894 and IEEE 802.1Q that the pipeline
//! (and the burst fast path) must keep. Each test failed on the code before
//! the fix that came with it.

mod support;
use support::{conn, eth, iface, via};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use dataplane::counters::{Drop, WorkerCounters};
use dataplane::packet::{PacketBuffer, VecPacket};
use dataplane::pipeline::{Pipeline, PipelineConfig, Verdict};
use dataplane::tables::{Fib, MacAddr, NeighSource, Neighbours, Topology};
use dataplane::wire::checksum;

const R0: MacAddr = [0x02, 0, 0, 0, 0, 0x10];
const R1: MacAddr = [0x02, 0, 0, 0, 0, 0x11];
const H0: MacAddr = [0x00, 0x11, 0x22, 0x00, 0x00, 0x02];
const H1: MacAddr = [0x00, 0x11, 0x22, 0x01, 0x00, 0x02];
const GW1: MacAddr = [0x00, 0x11, 0x22, 0x01, 0x00, 0xfe];
const T0: u64 = 5_000_000_000;

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
    let mut p = VecPacket::from_bytes(frame);
    let v = pl.process(&mut p, port, T0);
    (v, p.data().to_vec())
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
