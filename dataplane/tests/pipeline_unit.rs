//! Unit tests of the forwarding pipeline on plain byte buffers with a virtual
//! clock (no DPDK, no EAL, no sleeping).
//!
//! Inputs are written by hand here (with `wire::checksum` for the checksums);
//! outputs are checked at raw byte offsets and, where handy, with the wire
//! parsers. Every checksum of an output is recomputed independently: the IPv4
//! header sum over the header bytes, ICMP over the message, ICMPv6 over the
//! RFC 8200 s.8.1 pseudo-header.
//!
//! The pipeline itself leaves drop counting to the worker (the worker calls
//! `counters.dropped(reason)` for `Verdict::Drop`); [`run`] does the same so
//! the tests can assert counters by name exactly as the CLI shows them.

mod support;
use support::{conn, eth, iface, icmpv6, ns_body, solicited_node_of, via};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use dataplane::counters::{Drop, Local, WorkerCounters};
use dataplane::packet::{PacketBuffer, VecPacket};
use dataplane::pipeline::{Event, Pipeline, PipelineConfig, Solicit, Verdict};
use dataplane::tables::{Fib, MacAddr, NeighSource, Neighbours, Topology};
use dataplane::wire::arp::{ArpOperation, ArpPacket, ArpRepr};
use dataplane::wire::checksum;
use dataplane::wire::icmpv4::{Icmpv4Message, Icmpv4Packet};
use dataplane::wire::icmpv6::{Icmpv6Message, Icmpv6Packet};
use dataplane::wire::ipv4::Ipv4Packet;
use dataplane::wire::ipv6::Ipv6Packet;

// ------------------------------------------------------------------ fixture

/// Router MACs, one per interface.
const R0: MacAddr = [0x02, 0x00, 0x00, 0x00, 0x00, 0x10];
const R1: MacAddr = [0x02, 0x00, 0x00, 0x00, 0x00, 0x11];
const R2: MacAddr = [0x02, 0x00, 0x00, 0x00, 0x00, 0x12];
const R3: MacAddr = [0x02, 0x00, 0x00, 0x00, 0x00, 0x13];
const R4: MacAddr = [0x02, 0x00, 0x00, 0x00, 0x00, 0x14];

/// Hosts / gateways (static neighbours).
const H0: MacAddr = [0x00, 0x11, 0x22, 0x00, 0x00, 0x02]; // 10.0.0.2 / 2001:db8::2 on p0
const H1: MacAddr = [0x00, 0x11, 0x22, 0x01, 0x00, 0x02]; // 10.1.0.2 / 2001:db8:1::2 on p1
const H2: MacAddr = [0x00, 0x11, 0x22, 0x02, 0x00, 0x02]; // 10.2.0.2 on p2.100
const H3: MacAddr = [0x00, 0x11, 0x22, 0x03, 0x00, 0x02]; // 10.3.0.2 on p2.200
const H4: MacAddr = [0x00, 0x11, 0x22, 0x04, 0x00, 0x05]; // 10.4.0.5 / 2001:db8:4::5 on p3
const GW1: MacAddr = [0x00, 0x11, 0x22, 0x01, 0x00, 0xfe]; // 10.1.0.254 / 2001:db8:1::fe
const GW2: MacAddr = [0x00, 0x11, 0x22, 0x02, 0x00, 0xfe]; // 10.2.0.254 / 2001:db8:2::fe
/// Hosts the router does not know yet.
const NEW: MacAddr = [0x00, 0x55, 0x66, 0x77, 0x88, 0x99];
const NEW2: MacAddr = [0x00, 0x55, 0x66, 0x77, 0x88, 0xaa];

const T0: u64 = 5_000_000_000; // virtual time
const SEC: u64 = 1_000_000_000;

fn v4(s: &str) -> Ipv4Addr {
    s.parse().unwrap()
}
fn v6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

fn topology() -> Topology {
    let p0 = iface("p0", 0, None, R0, 1500, &["10.0.0.1/24", "2001:db8::1/64"]);
    let p1 = iface("p1", 1, None, R1, 1500, &["10.1.0.1/24", "2001:db8:1::1/64"]);
    let p2a = iface("p2.100", 2, Some(100), R2, 1500, &["10.2.0.1/24", "2001:db8:2::1/64"]);
    let p2b = iface("p2.200", 2, Some(200), R3, 1500, &["10.3.0.1/24", "2001:db8:3::1/64"]);
    // A small-MTU link for the MTU tests.
    let p3 = iface("p3", 3, None, R4, 600, &["10.4.0.1/24", "2001:db8:4::1/64"]);
    Topology::new(vec![p0, p1, p2a, p2b, p3])
}

fn fib() -> Fib {
    let mut f = Fib::default();
    for (i, p) in ["10.0.0.0/24", "10.1.0.0/24", "10.2.0.0/24", "10.3.0.0/24", "10.4.0.0/24"].iter().enumerate() {
        f.insert4(p.parse().unwrap(), conn(i as u16));
    }
    for (i, p) in ["2001:db8::/64", "2001:db8:1::/64", "2001:db8:2::/64", "2001:db8:3::/64", "2001:db8:4::/64"].iter().enumerate() {
        f.insert6(p.parse().unwrap(), conn(i as u16));
    }
    // LPM pair: the /25 inside the /24 goes elsewhere.
    f.insert4("192.0.2.0/24".parse().unwrap(), via(1, "10.1.0.254"));
    f.insert4("192.0.2.128/25".parse().unwrap(), via(2, "10.2.0.254"));
    f.insert6("2001:db8:100::/48".parse().unwrap(), via(1, "2001:db8:1::fe"));
    f.insert6("2001:db8:100:1::/64".parse().unwrap(), via(2, "2001:db8:2::fe"));
    // A gateway nobody has resolved.
    f.insert4("198.51.100.0/24".parse().unwrap(), via(1, "10.1.0.99"));
    f.insert6("2001:db8:200::/48".parse().unwrap(), via(1, "2001:db8:1::99"));
    f
}

fn neighbours() -> Neighbours {
    let mut n = Neighbours::default();
    let mut add = |i: u16, ip: &str, mac: MacAddr| {
        n.learn(i, ip.parse().unwrap(), mac, NeighSource::Static);
    };
    add(0, "10.0.0.2", H0);
    add(0, "2001:db8::2", H0);
    add(0, "fe80::211:22ff:fe00:2", H0);
    add(1, "10.1.0.2", H1);
    add(1, "2001:db8:1::2", H1);
    add(1, "10.1.0.254", GW1);
    add(1, "2001:db8:1::fe", GW1);
    add(2, "10.2.0.2", H2);
    add(2, "2001:db8:2::2", H2);
    add(2, "10.2.0.254", GW2);
    add(2, "2001:db8:2::fe", GW2);
    add(3, "10.3.0.2", H3);
    add(4, "10.4.0.5", H4);
    add(4, "2001:db8:4::5", H4);
    n
}

fn pipeline_with(cfg: PipelineConfig) -> Pipeline {
    Pipeline::new(
        Arc::new(topology()),
        Arc::new(fib()),
        Arc::new(neighbours()),
        Arc::new(WorkerCounters::default()),
        cfg,
    )
}

fn pipeline() -> Pipeline {
    pipeline_with(PipelineConfig::default())
}

/// Process one frame as the worker does (drops are counted by reason).
fn run(pl: &mut Pipeline, p: &mut VecPacket, port: u16, now: u64) -> Verdict {
    let v = pl.process(p, port, now);
    if let Verdict::Drop(r) = v {
        pl.counters.dropped(r);
    }
    v
}

fn local(pl: &Pipeline, l: Local) -> u64 {
    pl.counters.local[l as usize].get()
}
fn drops(pl: &Pipeline, d: Drop) -> u64 {
    pl.counters.drops[d as usize].get()
}
fn total_drops(pl: &Pipeline) -> u64 {
    pl.counters.drops.iter().map(|c| c.get()).sum()
}
fn total_local(pl: &Pipeline) -> u64 {
    pl.counters.local.iter().map(|c| c.get()).sum()
}

/// Assert that `frame` on `port` is dropped under `reason` (by name too),
/// with exactly one drop counted, no local behaviour run and the frame's
/// bytes not rewritten.
fn assert_drop(pl: &mut Pipeline, frame: &[u8], port: u16, reason: Drop, name: &str) {
    let before_drops = total_drops(pl);
    let before_local = total_local(pl);
    let before_r = drops(pl, reason);
    let mut p = VecPacket::from_bytes(frame);
    let v = run(pl, &mut p, port, T0);
    assert_eq!(v, Verdict::Drop(reason), "expected drop {name}");
    assert_eq!(reason.name(), name);
    assert_eq!(drops(pl, reason), before_r + 1);
    assert_eq!(total_drops(pl), before_drops + 1);
    assert_eq!(total_local(pl), before_local, "a dropped packet ran a local behaviour");
}

// --------------------------------------------------------- frame builders


/// An IPv4 header (no options) with TOS 0xb8, ID 0x4242, DF, and `payload`.
fn ipv4(src: Ipv4Addr, dst: Ipv4Addr, ttl: u8, proto: u8, payload: &[u8]) -> Vec<u8> {
    let total = (20 + payload.len()) as u16;
    let mut h = vec![0x45, 0xb8];
    h.extend_from_slice(&total.to_be_bytes());
    h.extend_from_slice(&[0x42, 0x42, 0x40, 0x00, ttl, proto, 0, 0]);
    h.extend_from_slice(&src.octets());
    h.extend_from_slice(&dst.octets());
    let c = checksum::checksum(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h.extend_from_slice(payload);
    h
}

/// An IPv6 header with traffic class 0xb8 and flow label 0x12345.
fn ipv6(src: Ipv6Addr, dst: Ipv6Addr, hop: u8, nh: u8, payload: &[u8]) -> Vec<u8> {
    let mut h = vec![0x6b, 0x81, 0x23, 0x45];
    h.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    h.push(nh);
    h.push(hop);
    h.extend_from_slice(&src.octets());
    h.extend_from_slice(&dst.octets());
    h.extend_from_slice(payload);
    h
}

/// A UDP datagram with a recognisable payload (the checksum is left 0: the
/// router never looks at it).
fn udp(len: usize) -> Vec<u8> {
    let mut u = vec![0x30, 0x39, 0x00, 0x35];
    u.extend_from_slice(&((8 + len) as u16).to_be_bytes());
    u.extend_from_slice(&[0, 0]);
    u.extend((0..len).map(|i| (i * 7 + 3) as u8));
    u
}

fn icmpv4_echo(ty: u8, id: u16, seq: u16, data: &[u8]) -> Vec<u8> {
    let mut m = vec![ty, 0, 0, 0];
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&seq.to_be_bytes());
    m.extend_from_slice(data);
    let c = checksum::checksum(&m);
    m[2..4].copy_from_slice(&c.to_be_bytes());
    m
}


fn arp(op: u16, sha: MacAddr, spa: Ipv4Addr, tha: MacAddr, tpa: Ipv4Addr) -> Vec<u8> {
    let mut a = vec![0, 1, 0x08, 0x00, 6, 4];
    a.extend_from_slice(&op.to_be_bytes());
    a.extend_from_slice(&sha);
    a.extend_from_slice(&spa.octets());
    a.extend_from_slice(&tha);
    a.extend_from_slice(&tpa.octets());
    a
}

/// An Ethernet IPv4 frame to router interface `rmac`.
fn frame4(rmac: MacAddr, smac: MacAddr, tag: Option<(u8, u16)>, ip: &[u8]) -> Vec<u8> {
    eth(rmac, smac, tag, 0x0800, ip)
}
fn frame6(rmac: MacAddr, smac: MacAddr, tag: Option<(u8, u16)>, ip: &[u8]) -> Vec<u8> {
    eth(rmac, smac, tag, 0x86dd, ip)
}

// ---------------------------------------------------------- output checks

fn ipv4_header_ok(h: &[u8]) {
    let ihl = usize::from(h[0] & 0x0f) * 4;
    let hdr = &h[..ihl];
    assert_eq!(checksum::fold(checksum::sum(hdr)), 0xffff, "IPv4 header checksum does not verify");
    let mut z = hdr.to_vec();
    z[10] = 0;
    z[11] = 0;
    assert_eq!(u16::from_be_bytes([h[10], h[11]]), checksum::checksum(&z), "IPv4 checksum != full recomputation");
    assert!(Ipv4Packet::new_checked(h).unwrap().verify_checksum());
}

fn icmpv4_ok(m: &[u8]) {
    assert_eq!(checksum::fold(checksum::sum(m)), 0xffff, "ICMP checksum does not verify");
    assert!(Icmpv4Packet::new_checked(m).unwrap().verify_checksum());
}

/// `pkt` is an IPv6 header directly followed by an ICMPv6 message.
fn icmpv6_ok(pkt: &[u8]) {
    assert_eq!(pkt[6], 58, "next header is not ICMPv6");
    let plen = usize::from(u16::from_be_bytes([pkt[4], pkt[5]]));
    assert_eq!(pkt.len(), 40 + plen, "payload length does not match the packet");
    let src: [u8; 16] = pkt[8..24].try_into().unwrap();
    let dst: [u8; 16] = pkt[24..40].try_into().unwrap();
    let m = &pkt[40..];
    let s = checksum::combine(checksum::pseudo_v6(&src, &dst, 58, m.len() as u32), checksum::sum(m));
    assert_eq!(checksum::fold(s), 0xffff, "ICMPv6 checksum does not verify");
}

fn mac_at(d: &[u8], off: usize) -> MacAddr {
    d[off..off + 6].try_into().unwrap()
}

fn assert_eth(d: &[u8], dst: MacAddr, src: MacAddr, et: u16) {
    assert_eq!(mac_at(d, 0), dst, "dst MAC");
    assert_eq!(mac_at(d, 6), src, "src MAC");
    assert_eq!(u16::from_be_bytes([d[12], d[13]]), et, "ethertype");
}

// ================================================================== IPv4

#[test]
fn ipv4_forward_rewrites_ttl_checksum_and_macs() {
    let mut pl = pipeline();
    let ip = ipv4(v4("10.0.0.2"), v4("10.1.0.2"), 64, 17, &udp(64));
    let input = frame4(R0, H0, None, &ip);
    let mut p = VecPacket::from_bytes(&input);
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(1));
    let out = p.to_vec();
    assert_eq!(out.len(), input.len());
    assert_eth(&out, H1, R1, 0x0800);
    let (i, o) = (&input[14..], &out[14..]);
    assert_eq!(o[8], 63, "TTL decremented by exactly one");
    ipv4_header_ok(o);
    // Everything but TTL and checksum is as received.
    for k in 0..20 {
        if k != 8 && k != 10 && k != 11 {
            assert_eq!(o[k], i[k], "IPv4 header byte {k} changed");
        }
    }
    assert_eq!(&o[20..], &i[20..], "payload changed");
    // The incremental update equals a full recomputation (checked in
    // ipv4_header_ok) and also differs from the input's.
    assert_ne!(&o[10..12], &i[10..12]);
    let pk = Ipv4Packet::new_checked(o).unwrap();
    assert_eq!(pk.ttl(), 63);
    assert_eq!(pk.dst_addr(), v4("10.1.0.2"));
    assert_eq!(total_drops(&pl), 0);
    assert_eq!(total_local(&pl), 0);
    assert!(pl.events.is_empty() && pl.solicits.is_empty());
}

#[test]
fn ipv4_forward_checksum_across_ttl_values() {
    // Incremental update with carries: many TTLs and header contents.
    let mut pl = pipeline();
    for ttl in [2u8, 3, 16, 64, 128, 255] {
        for id in [0u16, 0x00ff, 0xfeff, 0xffff] {
            let mut ip = ipv4(v4("10.0.0.2"), v4("10.1.0.2"), ttl, 17, &udp(10));
            ip[4..6].copy_from_slice(&id.to_be_bytes());
            ip[10] = 0;
            ip[11] = 0;
            let c = checksum::checksum(&ip[..20]);
            ip[10..12].copy_from_slice(&c.to_be_bytes());
            let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &ip));
            assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(1));
            let o = &p.data()[14..];
            assert_eq!(o[8], ttl - 1);
            ipv4_header_ok(o);
        }
    }
}

#[test]
fn ipv4_forward_with_options_keeps_them() {
    let mut pl = pipeline();
    let mut ip = vec![0x46, 0, 0, 0, 0, 1, 0, 0, 9, 17, 0, 0];
    ip.extend_from_slice(&[10, 0, 0, 2, 10, 1, 0, 2]);
    ip.extend_from_slice(&[1, 1, 1, 0]); // NOP NOP NOP EOL
    ip.extend_from_slice(&udp(12));
    let tl = ip.len() as u16;
    ip[2..4].copy_from_slice(&tl.to_be_bytes());
    let c = checksum::checksum(&ip[..24]);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &ip));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(1));
    let o = &p.data()[14..];
    assert_eq!(o[8], 8);
    ipv4_header_ok(o);
    assert_eq!(&o[20..], &ip[20..]);
}

#[test]
fn ipv4_lpm_most_specific_route_and_gateway_mac() {
    let mut pl = pipeline();
    // 192.0.2.5 matches only the /24 -> gateway 10.1.0.254 on p1.
    let ip = ipv4(v4("10.0.0.2"), v4("192.0.2.5"), 64, 17, &udp(20));
    let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &ip));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(1));
    assert_eth(p.data(), GW1, R1, 0x0800);
    // 192.0.2.200 matches the /25 too -> gateway 10.2.0.254 on p2 VLAN 100.
    let ip = ipv4(v4("10.0.0.2"), v4("192.0.2.200"), 64, 17, &udp(20));
    let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &ip));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(2));
    let d = p.data();
    assert_eq!(mac_at(d, 0), GW2);
    assert_eq!(mac_at(d, 6), R2);
    assert_eq!(&d[12..14], &[0x81, 0x00]);
    assert_eq!(u16::from_be_bytes([d[14], d[15]]) & 0x0fff, 100);
    // Boundary: .127 is still the /24, .128 the /25.
    for (dst, port, mac) in [("192.0.2.127", 1, GW1), ("192.0.2.128", 2, GW2), ("192.0.2.255", 2, GW2)] {
        let ip = ipv4(v4("10.0.0.2"), v4(dst), 64, 17, &udp(20));
        let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &ip));
        assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(port), "{dst}");
        assert_eq!(mac_at(p.data(), 0), mac);
    }
}

#[test]
fn ipv4_connected_route_uses_destination_neighbour() {
    let mut pl = pipeline();
    let ip = ipv4(v4("10.1.0.2"), v4("10.4.0.5"), 30, 6, &udp(20));
    let mut p = VecPacket::from_bytes(&frame4(R1, H1, None, &ip));
    assert_eq!(run(&mut pl, &mut p, 1, T0), Verdict::Tx(3));
    assert_eth(p.data(), H4, R4, 0x0800);
    assert_eq!(p.data()[14 + 8], 29);
}

// ================================================================== IPv6

#[test]
fn ipv6_forward_decrements_hop_limit_and_rewrites_macs() {
    let mut pl = pipeline();
    let ip = ipv6(v6("2001:db8::2"), v6("2001:db8:1::2"), 64, 17, &udp(80));
    let input = frame6(R0, H0, None, &ip);
    let mut p = VecPacket::from_bytes(&input);
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(1));
    let out = p.to_vec();
    assert_eq!(out.len(), input.len());
    assert_eth(&out, H1, R1, 0x86dd);
    let (i, o) = (&input[14..], &out[14..]);
    assert_eq!(o[7], 63);
    assert_eq!(&o[..7], &i[..7], "version/TC/flow/length/next header changed");
    assert_eq!(&o[8..], &i[8..], "addresses or payload changed");
    let pk = Ipv6Packet::new_checked(o).unwrap();
    assert_eq!(pk.hop_limit(), 63);
    assert_eq!(pk.traffic_class(), 0xb8);
    assert_eq!(pk.flow_label(), 0x12345);
    assert_eq!(total_drops(&pl) + total_local(&pl), 0);
}

#[test]
fn ipv6_lpm_and_gateways() {
    let mut pl = pipeline();
    for (dst, port, mac) in [
        ("2001:db8:100:5::1", 1, GW1),
        ("2001:db8:100:1::1", 2, GW2),
        ("2001:db8:100:1:ffff::1", 2, GW2),
        ("2001:db8:4::5", 3, H4),
    ] {
        let ip = ipv6(v6("2001:db8::2"), v6(dst), 9, 17, &udp(8));
        let mut p = VecPacket::from_bytes(&frame6(R0, H0, None, &ip));
        assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(port), "{dst}");
        let d = p.data();
        assert_eq!(mac_at(d, 0), mac, "{dst}");
        let l3 = if port == 2 { 18 } else { 14 };
        assert_eq!(d[l3 + 7], 8);
    }
}

// ================================================================== VLAN

#[test]
fn vlan_tagged_to_untagged_removes_tag() {
    let mut pl = pipeline();
    let ip = ipv4(v4("10.2.0.2"), v4("10.1.0.2"), 64, 17, &udp(30));
    let input = frame4(R2, H2, Some((5, 100)), &ip);
    let mut p = VecPacket::from_bytes(&input);
    assert_eq!(run(&mut pl, &mut p, 2, T0), Verdict::Tx(1));
    let out = p.to_vec();
    assert_eq!(out.len(), input.len() - 4);
    assert_eth(&out, H1, R1, 0x0800);
    assert_eq!(out[14 + 8], 63);
    ipv4_header_ok(&out[14..]);
    assert_eq!(&out[14 + 20..], &input[18 + 20..]);
}

#[test]
fn vlan_untagged_to_tagged_inserts_tag() {
    let mut pl = pipeline();
    let ip = ipv4(v4("10.0.0.2"), v4("10.2.0.2"), 64, 17, &udp(30));
    let input = frame4(R0, H0, None, &ip);
    let mut p = VecPacket::from_bytes(&input);
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(2));
    let out = p.to_vec();
    assert_eq!(out.len(), input.len() + 4);
    assert_eq!(mac_at(&out, 0), H2);
    assert_eq!(mac_at(&out, 6), R2);
    assert_eq!(&out[12..14], &[0x81, 0x00], "TPID");
    assert_eq!(u16::from_be_bytes([out[14], out[15]]), 100, "TCI: PCP 0, DEI 0, VID 100");
    assert_eq!(&out[16..18], &[0x08, 0x00]);
    assert_eq!(out[18 + 8], 63);
    ipv4_header_ok(&out[18..]);
    assert_eq!(&out[18 + 20..], &input[14 + 20..]);

    // Same for IPv6.
    let ip = ipv6(v6("2001:db8::2"), v6("2001:db8:2::2"), 64, 17, &udp(30));
    let input = frame6(R0, H0, None, &ip);
    let mut p = VecPacket::from_bytes(&input);
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(2));
    let out = p.to_vec();
    assert_eq!(out.len(), input.len() + 4);
    assert_eq!(&out[12..18], &[0x81, 0x00, 0x00, 100, 0x86, 0xdd]);
    assert_eq!(out[18 + 7], 63);
}

#[test]
fn vlan_tagged_to_tagged_preserves_pcp_and_rewrites_vid() {
    let mut pl = pipeline();
    let ip = ipv4(v4("10.3.0.2"), v4("10.2.0.2"), 64, 17, &udp(30));
    let input = frame4(R3, H3, Some((5, 200)), &ip);
    let mut p = VecPacket::from_bytes(&input);
    assert_eq!(run(&mut pl, &mut p, 2, T0), Verdict::Tx(2));
    let out = p.to_vec();
    assert_eq!(out.len(), input.len());
    assert_eq!(mac_at(&out, 0), H2);
    assert_eq!(mac_at(&out, 6), R2);
    assert_eq!(&out[12..14], &[0x81, 0x00]);
    let tci = u16::from_be_bytes([out[14], out[15]]);
    assert_eq!(tci >> 13, 5, "PCP preserved");
    assert_eq!(tci & 0x0fff, 100, "VID of the egress interface");
    assert_eq!(&out[16..18], &[0x08, 0x00]);
    ipv4_header_ok(&out[18..]);
}

#[test]
fn vlan_unknown_is_dropped() {
    let mut pl = pipeline();
    let ip = ipv4(v4("10.2.0.2"), v4("10.1.0.2"), 64, 17, &udp(30));
    // VID 300 on port 2: no such interface.
    assert_drop(&mut pl, &frame4(R2, H2, Some((0, 300)), &ip), 2, Drop::VlanUnknown, "vlan-unknown");
    // Tagged on an untagged-only port.
    assert_drop(&mut pl, &frame4(R0, H0, Some((0, 100)), &ip), 0, Drop::VlanUnknown, "vlan-unknown");
    // Untagged on a port that only has VLAN interfaces.
    assert_drop(&mut pl, &frame4(R2, H2, None, &ip), 2, Drop::VlanUnknown, "vlan-unknown");
    // A port without interfaces.
    assert_drop(&mut pl, &frame4(R0, H0, None, &ip), 9, Drop::VlanUnknown, "vlan-unknown");
    // Double tagged (QinQ) is not terminated.
    let mut f = eth(R2, H2, Some((0, 100)), 0x8100, &[]);
    f.extend_from_slice(&[0x00, 0x05, 0x08, 0x00]);
    f.extend_from_slice(&ip);
    assert_drop(&mut pl, &f, 2, Drop::VlanUnknown, "vlan-unknown");
}

#[test]
fn vlan_insert_without_headroom_is_no_headroom() {
    let mut pl = pipeline();
    let ip = ipv4(v4("10.0.0.2"), v4("10.2.0.2"), 64, 17, &udp(30));
    let mut p = VecPacket::with_headroom(&frame4(R0, H0, None, &ip), 0);
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Drop(Drop::NoHeadroom));
}

// ================================================================= drops

#[test]
fn drop_no_route_when_icmp_rate_limit_exhausted() {
    let cfg = PipelineConfig { icmp_error_burst: 0, ..Default::default() };
    let mut pl = pipeline_with(cfg);
    let ip = ipv4(v4("10.0.0.2"), v4("100.64.0.1"), 64, 17, &udp(8));
    assert_drop(&mut pl, &frame4(R0, H0, None, &ip), 0, Drop::NoRoute, "no-route");
    let ip = ipv6(v6("2001:db8::2"), v6("2001:db9::1"), 64, 17, &udp(8));
    assert_drop(&mut pl, &frame6(R0, H0, None, &ip), 0, Drop::NoRoute, "no-route");
}

#[test]
fn drop_ttl_expired_when_icmp_rate_limit_exhausted() {
    let cfg = PipelineConfig { icmp_error_burst: 0, ..Default::default() };
    let mut pl = pipeline_with(cfg);
    for ttl in [0u8, 1] {
        let ip = ipv4(v4("10.0.0.2"), v4("10.1.0.2"), ttl, 17, &udp(8));
        assert_drop(&mut pl, &frame4(R0, H0, None, &ip), 0, Drop::TtlExpired, "ttl-expired");
        let ip = ipv6(v6("2001:db8::2"), v6("2001:db8:1::2"), ttl, 17, &udp(8));
        assert_drop(&mut pl, &frame6(R0, H0, None, &ip), 0, Drop::TtlExpired, "ttl-expired");
    }
    assert_eq!(drops(&pl, Drop::TtlExpired), 4);
}

#[test]
fn drop_ipv4_bad_checksum() {
    let mut pl = pipeline();
    let mut ip = ipv4(v4("10.0.0.2"), v4("10.1.0.2"), 64, 17, &udp(8));
    ip[11] ^= 0x01;
    assert_drop(&mut pl, &frame4(R0, H0, None, &ip), 0, Drop::Ipv4Checksum, "ipv4-bad-checksum");
    // A changed field with the old checksum.
    let mut ip = ipv4(v4("10.0.0.2"), v4("10.1.0.2"), 64, 17, &udp(8));
    ip[8] = 65;
    assert_drop(&mut pl, &frame4(R0, H0, None, &ip), 0, Drop::Ipv4Checksum, "ipv4-bad-checksum");
}

#[test]
fn drop_malformed_ipv4() {
    let mut pl = pipeline();
    // Total length larger than what arrived.
    let ip = ipv4(v4("10.0.0.2"), v4("10.1.0.2"), 64, 17, &udp(40));
    let f = frame4(R0, H0, None, &ip);
    assert_drop(&mut pl, &f[..f.len() - 10], 0, Drop::MalformedIpv4, "malformed-ipv4");
    // Shorter than a header.
    assert_drop(&mut pl, &f[..14 + 19], 0, Drop::MalformedIpv4, "malformed-ipv4");
    // IHL < 5 (checksum fixed up so only the length is wrong).
    let mut bad = ip.clone();
    bad[0] = 0x44;
    bad[10] = 0;
    bad[11] = 0;
    let c = checksum::checksum(&bad[..20]);
    bad[10..12].copy_from_slice(&c.to_be_bytes());
    assert_drop(&mut pl, &frame4(R0, H0, None, &bad), 0, Drop::MalformedIpv4, "malformed-ipv4");
    // Version 6 under EtherType IPv4.
    let mut bad = ip.clone();
    bad[0] = 0x65;
    bad[10] = 0;
    bad[11] = 0;
    let c = checksum::checksum(&bad[..20]);
    bad[10..12].copy_from_slice(&c.to_be_bytes());
    assert_drop(&mut pl, &frame4(R0, H0, None, &bad), 0, Drop::MalformedIpv4, "malformed-ipv4");
    // Total length smaller than the header.
    let mut bad = ip;
    bad[2..4].copy_from_slice(&19u16.to_be_bytes());
    bad[10] = 0;
    bad[11] = 0;
    let c = checksum::checksum(&bad[..20]);
    bad[10..12].copy_from_slice(&c.to_be_bytes());
    assert_drop(&mut pl, &frame4(R0, H0, None, &bad), 0, Drop::MalformedIpv4, "malformed-ipv4");
}

#[test]
fn drop_malformed_ipv6() {
    let mut pl = pipeline();
    let ip = ipv6(v6("2001:db8::2"), v6("2001:db8:1::2"), 64, 17, &udp(40));
    let f = frame6(R0, H0, None, &ip);
    assert_drop(&mut pl, &f[..f.len() - 1], 0, Drop::MalformedIpv6, "malformed-ipv6");
    assert_drop(&mut pl, &f[..14 + 39], 0, Drop::MalformedIpv6, "malformed-ipv6");
    let mut bad = f.clone();
    bad[14] = 0x4b;
    assert_drop(&mut pl, &bad, 0, Drop::MalformedIpv6, "malformed-ipv6");
}

#[test]
fn drop_runt() {
    let mut pl = pipeline();
    assert_drop(&mut pl, &[], 0, Drop::Runt, "runt");
    let f = frame4(R0, H0, None, &ipv4(v4("10.0.0.2"), v4("10.1.0.2"), 64, 17, &udp(8)));
    assert_drop(&mut pl, &f[..13], 0, Drop::Runt, "runt");
    // A tag announced but cut off.
    let t = frame4(R2, H2, Some((0, 100)), &[]);
    assert_drop(&mut pl, &t[..16], 2, Drop::Runt, "runt");
}

#[test]
fn drop_unknown_ethertype() {
    let mut pl = pipeline();
    assert_drop(&mut pl, &eth(R0, H0, None, 0x88cc, &[0u8; 46]), 0, Drop::UnknownEthertype, "unknown-ethertype");
    assert_drop(&mut pl, &eth(R2, H2, Some((3, 100)), 0x8847, &[0u8; 46]), 2, Drop::UnknownEthertype, "unknown-ethertype");
}

#[test]
fn drop_l2_not_for_us() {
    let mut pl = pipeline();
    let ip = ipv4(v4("10.0.0.2"), v4("10.1.0.2"), 64, 17, &udp(8));
    assert_drop(&mut pl, &frame4([0x02, 0, 0, 0, 0x99, 0x99], H0, None, &ip), 0, Drop::NotForUs, "l2-not-for-us");
    // Our MAC, but of another interface.
    assert_drop(&mut pl, &frame4(R1, H0, None, &ip), 0, Drop::NotForUs, "l2-not-for-us");
}

#[test]
fn drop_ipv4_martians() {
    let mut pl = pipeline();
    for src in ["127.0.0.1", "0.0.0.0", "224.0.0.5", "255.255.255.255"] {
        let ip = ipv4(v4(src), v4("10.1.0.2"), 64, 17, &udp(8));
        assert_drop(&mut pl, &frame4(R0, H0, None, &ip), 0, Drop::Ipv4Martian, "ipv4-martian");
    }
    for dst in ["127.0.0.1", "0.0.0.0"] {
        let ip = ipv4(v4("10.0.0.2"), v4(dst), 64, 17, &udp(8));
        assert_drop(&mut pl, &frame4(R0, H0, None, &ip), 0, Drop::Ipv4Martian, "ipv4-martian");
    }
}

#[test]
fn drop_ipv6_martians() {
    let mut pl = pipeline();
    for src in ["ff02::1", "::1", "fe80::1"] {
        let ip = ipv6(v6(src), v6("2001:db8:1::2"), 64, 17, &udp(8));
        assert_drop(&mut pl, &frame6(R0, H0, None, &ip), 0, Drop::Ipv6Martian, "ipv6-martian");
    }
    for dst in ["::1", "::"] {
        let ip = ipv6(v6("2001:db8::2"), v6(dst), 64, 17, &udp(8));
        assert_drop(&mut pl, &frame6(R0, H0, None, &ip), 0, Drop::Ipv6Martian, "ipv6-martian");
    }
}

#[test]
fn ipv6_unspecified_source_is_never_forwarded() {
    // RFC 4291 s.2.5.2: "An IPv6 packet with a source address of unspecified
    // must never be forwarded by an IPv6 router."
    let mut pl = pipeline();
    let ip = ipv6(Ipv6Addr::UNSPECIFIED, v6("2001:db8:1::2"), 64, 17, &udp(8));
    assert_drop(&mut pl, &frame6(R0, H0, None, &ip), 0, Drop::Ipv6Martian, "ipv6-martian");
}

#[test]
fn ipv6_link_local_destination_not_forwarded() {
    let mut pl = pipeline();
    // A link-local address that is not ours (a host on another link).
    let ip = ipv6(v6("2001:db8::2"), v6("fe80::211:22ff:fe01:2"), 64, 17, &udp(8));
    assert_drop(&mut pl, &frame6(R0, H0, None, &ip), 0, Drop::Ipv6Martian, "ipv6-martian");
    let ip = ipv6(v6("fe80::211:22ff:fe00:2"), v6("fe80::211:22ff:fe01:2"), 64, 17, &udp(8));
    assert_drop(&mut pl, &frame6(R0, H0, None, &ip), 0, Drop::Ipv6Martian, "ipv6-martian");
}

#[test]
fn drop_multicast_and_broadcast_destinations() {
    let mut pl = pipeline();
    let mc = [0x01, 0x00, 0x5e, 0x01, 0x01, 0x01];
    let ip = ipv4(v4("10.0.0.2"), v4("224.1.1.1"), 64, 17, &udp(8));
    assert_drop(&mut pl, &frame4(mc, H0, None, &ip), 0, Drop::MulticastNotRouted, "multicast-not-routed");
    let ip = ipv4(v4("10.0.0.2"), v4("239.255.255.250"), 64, 17, &udp(8));
    assert_drop(&mut pl, &frame4(R0, H0, None, &ip), 0, Drop::MulticastNotRouted, "multicast-not-routed");
    let ip = ipv4(v4("10.0.0.2"), v4("255.255.255.255"), 64, 17, &udp(8));
    assert_drop(&mut pl, &frame4([0xff; 6], H0, None, &ip), 0, Drop::MulticastNotRouted, "multicast-not-routed");
    // The ingress subnet's broadcast address.
    let ip = ipv4(v4("10.0.0.2"), v4("10.0.0.255"), 64, 17, &udp(8));
    assert_drop(&mut pl, &frame4([0xff; 6], H0, None, &ip), 0, Drop::MulticastNotRouted, "multicast-not-routed");
    // IPv6 multicast beyond link scope.
    let ip = ipv6(v6("2001:db8::2"), v6("ff0e::1:2"), 64, 17, &udp(8));
    assert_drop(&mut pl, &frame6([0x33, 0x33, 0, 1, 0, 2], H0, None, &ip), 0, Drop::MulticastNotRouted, "multicast-not-routed");
    // A link-local group we do not listen to.
    let ip = ipv6(v6("fe80::211:22ff:fe00:2"), v6("ff02::fb"), 255, 17, &udp(8));
    assert_drop(&mut pl, &frame6([0x33, 0x33, 0, 0, 0, 0xfb], H0, None, &ip), 0, Drop::MulticastNotRouted, "multicast-not-routed");
}

#[test]
fn unicast_ip_in_link_layer_broadcast_is_not_forwarded() {
    // RFC 1812 s.5.3.4: "A router MUST NOT forward any packet that the router
    // received as a link-layer broadcast, unless it is directed to an IP
    // Multicast address." (and no ICMP error for it, s.4.3.2.7).
    let mut pl = pipeline();
    let ip = ipv4(v4("10.0.0.2"), v4("10.1.0.2"), 64, 17, &udp(8));
    let mut p = VecPacket::from_bytes(&frame4([0xff; 6], H0, None, &ip));
    let v = run(&mut pl, &mut p, 0, T0);
    assert!(matches!(v, Verdict::Drop(_)), "forwarded a link-layer broadcast: {v:?}");
    let ip = ipv4(v4("10.0.0.2"), v4("10.1.0.2"), 1, 17, &udp(8));
    let mut p = VecPacket::from_bytes(&frame4([0xff; 6], H0, None, &ip));
    let v = run(&mut pl, &mut p, 0, T0);
    assert!(matches!(v, Verdict::Drop(_)), "ICMP error for a link-layer broadcast: {v:?}");
    let ip = ipv6(v6("2001:db8::2"), v6("2001:db8:1::2"), 64, 17, &udp(8));
    let mut p = VecPacket::from_bytes(&frame6([0x33, 0x33, 0, 0, 0, 1], H0, None, &ip));
    let v = run(&mut pl, &mut p, 0, T0);
    assert!(matches!(v, Verdict::Drop(_)), "forwarded a link-layer multicast: {v:?}");
    assert_eq!(total_local(&pl), 0);
}

#[test]
fn mtu_boundary_and_drop_without_icmp() {
    let mut pl = pipeline();
    // Egress p3 has MTU 600: a 600-byte packet goes, 601 does not.
    let ip = ipv4(v4("10.0.0.2"), v4("10.4.0.5"), 64, 17, &udp(600 - 28));
    assert_eq!(ip.len(), 600);
    let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &ip));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(3));
    // Without DF: two fragments (see the fragmentation tests below).
    let ip = ipv4_frag(v4("10.4.0.5"), 0, &[], &udp(601 - 28));
    let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &ip));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Replicate(2));
    let ip = ipv6(v6("2001:db8::2"), v6("2001:db8:4::5"), 64, 17, &udp(600 - 48));
    assert_eq!(ip.len(), 600);
    let mut p = VecPacket::from_bytes(&frame6(R0, H0, None, &ip));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(3));
    // With the ICMP error budget spent: dropped under mtu-exceeded.
    let mut pl = pipeline_with(PipelineConfig { icmp_error_burst: 0, ..Default::default() });
    let ip = ipv4(v4("10.0.0.2"), v4("10.4.0.5"), 64, 17, &udp(601 - 28));
    assert_drop(&mut pl, &frame4(R0, H0, None, &ip), 0, Drop::MtuExceeded, "mtu-exceeded");
    let ip = ipv6(v6("2001:db8::2"), v6("2001:db8:4::5"), 64, 17, &udp(601 - 48));
    assert_drop(&mut pl, &frame6(R0, H0, None, &ip), 0, Drop::MtuExceeded, "mtu-exceeded");
}

/// An IPv4 packet from 10.0.0.2 to `dst` with TTL 64, ID 0x4242, TOS
/// 0xb8, the flags / offset word `flags_off` (DF clear unless given) and
/// the `opts` options (a multiple of 4 octets).
fn ipv4_frag(dst: Ipv4Addr, flags_off: u16, opts: &[u8], payload: &[u8]) -> Vec<u8> {
    assert_eq!(opts.len() % 4, 0);
    let hl = 20 + opts.len();
    let total = (hl + payload.len()) as u16;
    let mut h = vec![0x40 | (hl / 4) as u8, 0xb8];
    h.extend_from_slice(&total.to_be_bytes());
    h.extend_from_slice(&[0x42, 0x42]);
    h.extend_from_slice(&flags_off.to_be_bytes());
    h.extend_from_slice(&[64, 17, 0, 0]);
    h.extend_from_slice(&[10, 0, 0, 2]);
    h.extend_from_slice(&dst.octets());
    h.extend_from_slice(opts);
    let c = checksum::checksum(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h.extend_from_slice(payload);
    h
}

/// Process `frame` from p0, expect `n` fragments, build them as the worker
/// does and return them (each sent out of `port`).
fn fragments(pl: &mut Pipeline, frame: &[u8], n: u16, port: u16) -> Vec<Vec<u8>> {
    let mut p = VecPacket::from_bytes(frame);
    assert_eq!(run(pl, &mut p, 0, T0), Verdict::Replicate(n));
    (0..usize::from(n))
        .map(|i| {
            let mut c = VecPacket::from_bytes(&[]);
            assert_eq!(pl.build_replica(i, &p, &mut c, T0), Ok(port), "fragment {i}");
            c.to_vec()
        })
        .collect()
}

/// The fields of an IPv4 fragment: (header length, total length, MF,
/// offset in octets), after checking its header checksum and what every
/// fragment keeps from the original.
fn frag_fields(ip: &[u8]) -> (usize, usize, bool, usize) {
    ipv4_header_ok(ip);
    assert_eq!(&ip[4..6], &[0x42, 0x42], "identification kept");
    assert_eq!(ip[1], 0xb8, "TOS kept");
    assert_eq!(ip[8], 63, "TTL decremented once");
    assert_eq!(ip[9], 17);
    assert_eq!(&ip[12..20], &[10, 0, 0, 2, 10, 4, 0, 5]);
    let fo = u16::from_be_bytes([ip[6], ip[7]]);
    assert_eq!(fo & 0x4000, 0, "DF stays clear");
    assert_eq!(ip.len(), usize::from(u16::from_be_bytes([ip[2], ip[3]])));
    (usize::from(ip[0] & 0x0f) * 4, ip.len(), fo & 0x2000 != 0, usize::from(fo & 0x1fff) * 8)
}

#[test]
fn ipv4_without_df_over_mtu_is_fragmented() {
    // RFC 791 s.3.2 / RFC 1812 s.5.2.6: p3 has MTU 600, so 576 payload
    // octets per fragment (the largest multiple of 8 that fits after 20).
    let mut pl = pipeline();
    let payload = udp(1500 - 28);
    let ip = ipv4_frag(v4("10.4.0.5"), 0, &[], &payload);
    let frags = fragments(&mut pl, &frame4(R0, H0, None, &ip), 3, 3);
    let mut joined = Vec::new();
    let want = [(20, 596, true, 0), (20, 596, true, 576), (20, 348, false, 1152)];
    for (f, w) in frags.iter().zip(want) {
        assert_eth(f, H4, R4, 0x0800);
        let ipf = &f[14..];
        assert!(ipf.len() <= 600);
        assert_eq!(frag_fields(ipf), w);
        joined.extend_from_slice(&ipf[20..]);
    }
    assert_eq!(joined, payload, "the fragments' payloads are the original's, in order");
    assert_eq!(local(&pl, Local::Fragmented4), 1);
    assert_eq!(local(&pl, Local::Fragment4), 3);
    assert_eq!(Local::Fragmented4.name(), "ipv4-fragmented");
    assert_eq!(Local::Fragment4.name(), "ipv4-fragments-created");
    assert_eq!(total_drops(&pl), 0);
    // 581 payload octets: 576 in the first fragment, 5 in the second.
    let ip = ipv4_frag(v4("10.4.0.5"), 0, &[], &udp(581 - 8));
    let frags = fragments(&mut pl, &frame4(R0, H0, None, &ip), 2, 3);
    assert_eq!(frag_fields(&frags[1][14..]), (20, 25, false, 576));
}

#[test]
fn fragments_keep_copied_options_and_continue_a_fragment() {
    // Options: Record Route (not copied) + NOP + Router Alert (copied).
    let opts = [0x07, 7, 4, 0, 0, 0, 0, 0x01, 0x94, 4, 0, 0];
    // The original is itself a fragment: offset 1000, MF set.
    let payload: Vec<u8> = (0..1200u32).map(|i| (i * 13 + 1) as u8).collect();
    let ip = ipv4_frag(v4("10.4.0.5"), 0x2000 | (1000 / 8), &opts, &payload);
    let mut pl = pipeline();
    let frags = fragments(&mut pl, &frame4(R0, H0, None, &ip), 3, 3);
    // 600 - 32 = 568 = 71 * 8 payload octets per fragment.
    let (f0, f1, f2) = (&frags[0][14..], &frags[1][14..], &frags[2][14..]);
    assert_eq!(frag_fields(f0), (32, 600, true, 1000));
    assert_eq!(&f0[20..32], &opts, "the first fragment keeps every option");
    assert_eq!(frag_fields(f1), (24, 24 + 568, true, 1568));
    assert_eq!(&f1[20..24], &[0x94, 4, 0, 0], "later fragments keep only the copied ones");
    assert_eq!(frag_fields(f2), (24, 24 + 64, true, 2136), "the last keeps the original's MF");
    let joined: Vec<u8> = [&f0[32..], &f1[24..], &f2[24..]].concat();
    assert_eq!(joined, payload);
}

#[test]
fn fragmentation_limits_and_malformed_options() {
    let mut pl = pipeline();
    // 64 fragments of 576 octets is the most: one more is dropped.
    let ip = ipv4_frag(v4("10.4.0.5"), 0, &[], &vec![0x5a; 64 * 576]);
    let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &ip));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Replicate(64));
    let ip = ipv4_frag(v4("10.4.0.5"), 0, &[], &vec![0x5a; 64 * 576 + 1]);
    assert_drop(&mut pl, &frame4(R0, H0, None, &ip), 0, Drop::TooManyFragments, "too-many-fragments");
    // An option whose length runs past the header cannot be split.
    let ip = ipv4_frag(v4("10.4.0.5"), 0, &[0x94, 9, 0, 0], &udp(700));
    assert_drop(&mut pl, &frame4(R0, H0, None, &ip), 0, Drop::Ipv4Options, "ipv4-options");
    // Offsets past the 13-bit field.
    let ip = ipv4_frag(v4("10.4.0.5"), 0x1fff, &[], &udp(700));
    assert_drop(&mut pl, &frame4(R0, H0, None, &ip), 0, Drop::MalformedIpv4, "malformed-ipv4");
    // A packet that fits is never fragmented, and DF still wins.
    let ip = ipv4_frag(v4("10.4.0.5"), 0, &[], &udp(600 - 28));
    let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &ip));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(3));
    let ip = ipv4_frag(v4("10.4.0.5"), 0x4000, &[], &udp(700));
    let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &ip));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(0), "Fragmentation Needed back to the source");
    assert_eq!(local(&pl, Local::FragNeeded4), 1);
}

#[test]
fn ipv4_no_route_sends_net_unreachable() {
    // RFC 1812 s.5.2.7.1: Destination Unreachable, code 0.
    let mut pl = pipeline();
    let orig = ipv4(v4("10.0.0.2"), v4("100.64.0.1"), 64, 17, &udp(40));
    let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &orig));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(0));
    let d = p.to_vec();
    assert_eth(&d, H0, R0, 0x0800);
    let ip = &d[14..];
    ipv4_header_ok(ip);
    assert_eq!(ip[9], 1);
    assert_eq!(&ip[12..16], &[10, 0, 0, 1], "from our interface address");
    assert_eq!(&ip[16..20], &[10, 0, 0, 2], "to the source");
    let m = &ip[20..];
    assert_eq!(&m[0..2], &[3, 0], "destination unreachable, net unreachable");
    assert_eq!(&m[4..8], &[0; 4]);
    assert_eq!(&m[8..], &orig[..], "the original, as received");
    icmpv4_ok(m);
    assert_eq!(local(&pl, Local::Unreachable4), 1);
    assert_eq!(total_drops(&pl), 0);
}

#[test]
fn ipv6_no_route_sends_destination_unreachable() {
    // RFC 4443 s.3.1: code 0, no route to destination.
    let mut pl = pipeline();
    let src = v6("2001:db8::2");
    let orig = ipv6(src, v6("2001:db9::1"), 64, 17, &udp(40));
    let mut p = VecPacket::from_bytes(&frame6(R0, H0, None, &orig));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(0));
    let d = p.to_vec();
    assert_eth(&d, H0, R0, 0x86dd);
    let ip = &d[14..];
    assert_eq!(ip[6], 58);
    assert_eq!(&ip[8..24], &v6("2001:db8::1").octets());
    assert_eq!(&ip[24..40], &src.octets());
    let m = &ip[40..];
    assert_eq!(&m[0..2], &[1, 0]);
    assert_eq!(&m[4..8], &[0; 4]);
    assert_eq!(&m[8..], &orig[..]);
    icmpv6_ok(ip);
    assert_eq!(local(&pl, Local::Unreachable6), 1);
    assert_eq!(total_drops(&pl), 0);
}

#[test]
fn ipv4_df_over_mtu_sends_fragmentation_needed_with_the_mtu() {
    // RFC 1191 s.4: code 4 with the next-hop MTU in the low 16 bits.
    let mut pl = pipeline();
    let orig = ipv4(v4("10.0.0.2"), v4("10.4.0.5"), 64, 17, &udp(601 - 28));
    assert_eq!(orig[6] & 0x40, 0x40, "DF");
    let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &orig));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(0));
    let ip = &p.data()[14..];
    ipv4_header_ok(ip);
    assert_eq!(&ip[16..20], &[10, 0, 0, 2]);
    let m = &ip[20..];
    assert_eq!(&m[0..2], &[3, 4], "fragmentation needed and DF set");
    assert_eq!(&m[4..8], &[0, 0, 0x02, 0x58], "next-hop MTU 600");
    icmpv4_ok(m);
    assert!(ip.len() <= 576);
    assert_eq!(&m[8..], &orig[..548], "as much of the original as fits in 576 bytes");
    assert_eq!(local(&pl, Local::FragNeeded4), 1);
    assert_eq!(total_drops(&pl), 0);
}

#[test]
fn ipv6_over_mtu_sends_packet_too_big_with_the_mtu() {
    // RFC 4443 s.3.2.
    let mut pl = pipeline();
    let src = v6("2001:db8::2");
    let orig = ipv6(src, v6("2001:db8:4::5"), 64, 17, &udp(601 - 48));
    let mut p = VecPacket::from_bytes(&frame6(R0, H0, None, &orig));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(0));
    let ip = &p.data()[14..];
    assert_eq!(&ip[24..40], &src.octets());
    let m = &ip[40..];
    assert_eq!(&m[0..2], &[2, 0], "packet too big");
    assert_eq!(&m[4..8], &600u32.to_be_bytes(), "MTU of the next-hop link");
    assert_eq!(&m[8..], &orig[..], "601 bytes fit within 1280");
    icmpv6_ok(ip);
    assert_eq!(local(&pl, Local::TooBig6), 1);
    assert_eq!(total_drops(&pl), 0);
}

#[test]
fn drop_local_unsupported_and_bad_icmp() {
    let mut pl = pipeline();
    // UDP to us.
    let ip = ipv4(v4("10.0.0.2"), v4("10.0.0.1"), 64, 17, &udp(8));
    assert_drop(&mut pl, &frame4(R0, H0, None, &ip), 0, Drop::LocalUnsupported, "local-unsupported");
    // Echo with a bad ICMP checksum.
    let mut m = icmpv4_echo(8, 1, 1, b"abcdefgh");
    m[2] ^= 0xff;
    let ip = ipv4(v4("10.0.0.2"), v4("10.0.0.1"), 64, 1, &m);
    assert_drop(&mut pl, &frame4(R0, H0, None, &ip), 0, Drop::MalformedIcmp, "malformed-icmp");
    // ICMPv6 echo with a bad checksum.
    let mut m = icmpv6(v6("2001:db8::2"), v6("2001:db8::1"), 128, 0, &[0, 1, 0, 1, 9, 9]);
    m[3] ^= 0x10;
    let ip = ipv6(v6("2001:db8::2"), v6("2001:db8::1"), 64, 58, &m);
    assert_drop(&mut pl, &frame6(R0, H0, None, &ip), 0, Drop::MalformedIcmp, "malformed-icmp");
}

// ==================================================== neighbour resolution

#[test]
fn neighbour_miss_queues_one_arp_solicit_per_interval() {
    let mut pl = pipeline();
    let ip = ipv4(v4("10.0.0.2"), v4("198.51.100.7"), 64, 17, &udp(8));
    let f = frame4(R0, H0, None, &ip);
    let want = Solicit { iface: 1, target: IpAddr::V4(v4("10.1.0.99")), unicast: None };

    assert_drop(&mut pl, &f, 0, Drop::NeighbourMiss, "neighbour-miss");
    assert_eq!(pl.solicits, vec![want]);
    // Within the interval: no new solicit (also for another destination
    // behind the same gateway).
    let mut p = VecPacket::from_bytes(&f);
    assert_eq!(run(&mut pl, &mut p, 0, T0 + SEC / 2), Verdict::Drop(Drop::NeighbourMiss));
    let ip2 = ipv4(v4("10.0.0.2"), v4("198.51.100.8"), 64, 17, &udp(8));
    let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &ip2));
    assert_eq!(run(&mut pl, &mut p, 0, T0 + SEC - 1), Verdict::Drop(Drop::NeighbourMiss));
    assert_eq!(pl.solicits.len(), 1);
    // The worker drains; after the interval there is another one.
    pl.solicits.clear();
    let mut p = VecPacket::from_bytes(&f);
    assert_eq!(run(&mut pl, &mut p, 0, T0 + SEC), Verdict::Drop(Drop::NeighbourMiss));
    assert_eq!(pl.solicits, vec![want]);
    assert_eq!(drops(&pl, Drop::NeighbourMiss), 4);

    // A connected destination is resolved itself.
    pl.solicits.clear();
    let ip = ipv4(v4("10.0.0.2"), v4("10.1.0.77"), 64, 17, &udp(8));
    let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &ip));
    assert_eq!(run(&mut pl, &mut p, 0, T0 + 3 * SEC), Verdict::Drop(Drop::NeighbourMiss));
    assert_eq!(pl.solicits, vec![Solicit { iface: 1, target: IpAddr::V4(v4("10.1.0.77")), unicast: None }]);
}

/// With holding on (the worker's default, `dataplane::unres`), a packet to
/// an unresolved neighbour is built in full (TTL, checksum, source MAC, VLAN
/// tag) with the all-zero destination MAC, naming the neighbour it waits
/// for, and a solicitation is queued; nothing is dropped. A reply the
/// router sends back to a known source meanwhile carries that source's MAC.
#[test]
fn neighbour_miss_builds_the_frame_to_hold_when_holding_is_on() {
    use dataplane::unres::HOLD_MAC;
    let mut pl = pipeline();
    pl.set_hold(true);
    // Through a gateway nobody has resolved.
    let ip = ipv4(v4("10.0.0.2"), v4("198.51.100.7"), 64, 17, &udp(8));
    let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &ip));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(1));
    assert_eq!(pl.held(), Some((1, IpAddr::V4(v4("10.1.0.99")))));
    let d = p.data();
    assert_eq!(&d[0..6], &HOLD_MAC);
    assert_eq!(&d[6..12], &R1);
    assert_eq!(&d[12..14], &[0x08, 0x00]);
    assert_eq!(d[14 + 8], 63, "TTL decremented");
    assert_eq!(checksum::checksum(&d[14..34]), 0, "header checksum valid");
    assert_eq!(&d[34..], &ip[20..]);
    assert_eq!(pl.solicits, vec![Solicit { iface: 1, target: IpAddr::V4(v4("10.1.0.99")), unicast: None }]);
    assert_eq!(total_drops(&pl), 0);

    // A connected IPv6 host on a VLAN interface (p2.100): tagged, hop limit
    // decremented, waiting for the host itself.
    let ip6 = ipv6(v6("2001:db8::2"), v6("2001:db8:2::77"), 64, 17, &udp(8));
    let mut p = VecPacket::from_bytes(&frame6(R0, H0, None, &ip6));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(2));
    assert_eq!(pl.held(), Some((2, IpAddr::V6(v6("2001:db8:2::77")))));
    let d = p.data();
    assert_eq!(&d[0..6], &HOLD_MAC);
    assert_eq!(&d[6..12], &R2);
    assert_eq!(&d[12..16], &[0x81, 0x00, 0x00, 100]);
    assert_eq!(&d[16..18], &[0x86, 0xdd]);
    assert_eq!(d[18 + 7], 63, "hop limit decremented");
    assert_eq!(&d[18 + 40..], &ip6[40..]);

    // The next packet, to a known host, is not marked.
    let ip = ipv4(v4("10.0.0.2"), v4("10.1.0.2"), 64, 17, &udp(8));
    let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &ip));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(1));
    assert_eq!(pl.held(), None);
    assert_eq!(&p.data()[0..6], &H1);

    // Too big for p3 (MTU 600) with DF, to an unresolved host there: the
    // Fragmentation Needed error goes back to the known source with its MAC.
    let big = ipv4(v4("10.0.0.2"), v4("10.4.0.77"), 64, 17, &udp(900));
    let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &big));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(0));
    let d = p.data();
    assert_eq!(&d[0..6], &H0, "the error is sent, not held");
    assert_eq!((d[14 + 9], d[34], d[35]), (1, 3, 4), "ICMP Destination Unreachable, Fragmentation Needed");
    assert_eq!(total_drops(&pl), 0);
    assert_eq!(local(&pl, Local::FragNeeded4), 1);
}

/// A held frame whose neighbour never answered becomes ICMP Destination
/// Unreachable to its source: host unreachable (IPv4), address unreachable
/// (IPv6, RFC 4861 s.7.2.2), quoting the packet as forwarded; none about
/// an ICMP error.
#[test]
fn a_frame_that_waited_in_vain_becomes_destination_unreachable() {
    let mut pl = pipeline();
    pl.set_hold(true);
    let ip = ipv4(v4("10.0.0.2"), v4("10.1.0.77"), 64, 17, &udp(8));
    let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &ip));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(1));
    assert_eq!(pl.unreachable_for_held(&mut p, T0 + 3 * SEC), Ok(0));
    let d = p.data();
    assert_eq!((&d[0..6], &d[6..12]), (&H0[..], &R0[..]), "back to the source's MAC");
    assert_eq!((&d[26..30], &d[30..34]), (&[10, 0, 0, 1][..], &[10, 0, 0, 2][..]));
    assert_eq!((d[23], d[34], d[35]), (1, 3, 1), "ICMP Destination Unreachable, host unreachable");
    assert_eq!(checksum::checksum(&d[14..34]), 0);
    assert_eq!(checksum::checksum(&d[34..]), 0);
    assert_eq!(&d[42 + 16..42 + 20], &[10, 1, 0, 77]);
    assert_eq!(d[42 + 8], 63, "quoted as forwarded");
    assert_eq!(local(&pl, Local::HostUnreachable4), 1);

    let ip6 = ipv6(v6("2001:db8::2"), v6("2001:db8:2::77"), 64, 17, &udp(8));
    let mut p = VecPacket::from_bytes(&frame6(R0, H0, None, &ip6));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(2));
    assert_eq!(pl.unreachable_for_held(&mut p, T0 + 3 * SEC), Ok(0));
    let d = p.data();
    assert_eq!(&d[0..6], &H0);
    assert_eq!(&d[12..14], &[0x86, 0xdd], "untagged toward the source");
    assert_eq!(&d[14 + 8..14 + 24], &v6("2001:db8::1").octets());
    assert_eq!((d[20], d[54], d[55]), (58, 1, 3), "ICMPv6 Destination Unreachable, address unreachable");
    let icmp = &d[54..];
    let sum = checksum::combine(checksum::pseudo_v6(&d[22..38].try_into().unwrap(), &d[38..54].try_into().unwrap(), 58, icmp.len() as u32), checksum::sum(icmp));
    assert_eq!(checksum::fold(sum), 0xffff, "ICMPv6 checksum");
    assert_eq!(local(&pl, Local::AddrUnreachable6), 1);

    // An ICMP error that waited is not answered with another.
    let err = ipv4(v4("10.0.0.2"), v4("10.1.0.78"), 64, 1, &[3, 1, 0xfc, 0xfe, 0, 0, 0, 0]);
    let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &err));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(1));
    assert_eq!(pl.unreachable_for_held(&mut p, T0 + 3 * SEC), Err(Drop::NeighbourTimeout));
    assert_eq!(local(&pl, Local::HostUnreachable4), 1);
}

#[test]
fn build_solicit_arp_request() {
    let pl = pipeline();
    let s = Solicit { iface: 1, target: IpAddr::V4(v4("10.1.0.99")), unicast: None };
    let mut p = VecPacket::from_bytes(&[]);
    assert_eq!(pl.build_solicit(&mut p, &s, T0), Some(1));
    let d = p.data();
    assert_eq!(d.len(), 14 + 28);
    assert_eth(d, [0xff; 6], R1, 0x0806);
    let a = &d[14..];
    assert_eq!(&a[0..8], &[0, 1, 0x08, 0x00, 6, 4, 0, 1], "htype/ptype/hlen/plen/op=request");
    assert_eq!(mac_at(a, 8), R1, "sender MAC");
    assert_eq!(&a[14..18], &[10, 1, 0, 1], "sender = our address on that subnet");
    assert_eq!(&a[18..24], &[0; 6], "target MAC unknown");
    assert_eq!(&a[24..28], &[10, 1, 0, 99]);
    let r = ArpRepr::parse(&ArpPacket::new_checked(a).unwrap()).unwrap();
    assert_eq!(r.operation, ArpOperation::REQUEST);
    assert_eq!(local(&pl, Local::ArpRequestSent), 1);

    // On a VLAN interface: tagged, sender from that subnet.
    let s = Solicit { iface: 2, target: IpAddr::V4(v4("10.2.0.50")), unicast: None };
    let mut p = VecPacket::from_bytes(&[]);
    assert_eq!(pl.build_solicit(&mut p, &s, T0), Some(2));
    let d = p.data();
    assert_eq!(d.len(), 18 + 28);
    assert_eq!(&d[12..18], &[0x81, 0x00, 0x00, 100, 0x08, 0x06]);
    assert_eq!(mac_at(d, 6), R2);
    assert_eq!(&d[18 + 14..18 + 18], &[10, 2, 0, 1]);
    assert_eq!(&d[18 + 24..18 + 28], &[10, 2, 0, 50]);
}

#[test]
fn neighbour_miss_v6_and_ns() {
    let mut pl = pipeline();
    let ip = ipv6(v6("2001:db8::2"), v6("2001:db8:1::77"), 64, 17, &udp(8));
    let f = frame6(R0, H0, None, &ip);
    assert_drop(&mut pl, &f, 0, Drop::NeighbourMiss, "neighbour-miss");
    let s = Solicit { iface: 1, target: IpAddr::V6(v6("2001:db8:1::77")), unicast: None };
    assert_eq!(pl.solicits, vec![s]);
    let mut p = VecPacket::from_bytes(&f);
    assert_eq!(run(&mut pl, &mut p, 0, T0 + 1), Verdict::Drop(Drop::NeighbourMiss));
    assert_eq!(pl.solicits.len(), 1);
    // Via a gateway: the gateway is solicited.
    pl.solicits.clear();
    let ip = ipv6(v6("2001:db8::2"), v6("2001:db8:200::1"), 64, 17, &udp(8));
    let mut p = VecPacket::from_bytes(&frame6(R0, H0, None, &ip));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Drop(Drop::NeighbourMiss));
    assert_eq!(pl.solicits, vec![Solicit { iface: 1, target: IpAddr::V6(v6("2001:db8:1::99")), unicast: None }]);

    // The NS itself.
    let target = v6("2001:db8:1::abcd:ef77");
    let s = Solicit { iface: 1, target: IpAddr::V6(target), unicast: None };
    let mut p = VecPacket::from_bytes(&[]);
    assert_eq!(pl.build_solicit(&mut p, &s, T0), Some(1));
    let d = p.data();
    assert_eq!(d.len(), 14 + 40 + 32);
    assert_eth(d, [0x33, 0x33, 0xff, 0xcd, 0xef, 0x77], R1, 0x86dd);
    let ip = &d[14..];
    assert_eq!(ip[0] >> 4, 6);
    assert_eq!(u16::from_be_bytes([ip[4], ip[5]]), 32);
    assert_eq!(ip[6], 58);
    assert_eq!(ip[7], 255, "hop limit 255");
    assert_eq!(Ipv6Addr::from(<[u8; 16]>::try_from(&ip[8..24]).unwrap()), v6("2001:db8:1::1"));
    let group = Ipv6Addr::from(<[u8; 16]>::try_from(&ip[24..40]).unwrap());
    assert_eq!(group, v6("ff02::1:ffcd:ef77"));
    assert_eq!(group, solicited_node_of(target));
    let m = &ip[40..];
    assert_eq!(&m[0..2], &[135, 0]);
    assert_eq!(&m[4..8], &[0; 4]);
    assert_eq!(&m[8..24], &target.octets());
    assert_eq!(&m[24..26], &[1, 1], "SLLAO");
    assert_eq!(mac_at(m, 26), R1);
    icmpv6_ok(ip);
    let icmp = Icmpv6Packet::new_checked(m).unwrap();
    assert_eq!(icmp.msg_type(), Icmpv6Message::NEIGHBOR_SOLICIT);
    assert_eq!(icmp.target_addr(), Some(target));
    assert_eq!(local(&pl, Local::NsSent), 1);

    // For a link-local target the source is our link-local address.
    let s = Solicit { iface: 0, target: IpAddr::V6(v6("fe80::1234")), unicast: None };
    let mut p = VecPacket::from_bytes(&[]);
    assert_eq!(pl.build_solicit(&mut p, &s, T0), Some(0));
    let ip = &p.data()[14..];
    assert_eq!(Ipv6Addr::from(<[u8; 16]>::try_from(&ip[8..24]).unwrap()), pl.topo.interfaces[0].link_local);
    icmpv6_ok(ip);
}

// =================================================================== ARP

#[test]
fn arp_request_for_us_is_answered_in_place() {
    let mut pl = pipeline();
    let mut req = arp(1, NEW, v4("10.0.0.50"), [0; 6], v4("10.0.0.1"));
    req.resize(46, 0); // padded to the 60-byte minimum
    let input = eth([0xff; 6], NEW, None, 0x0806, &req);
    let mut p = VecPacket::from_bytes(&input);
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(0));
    let d = p.to_vec();
    assert_eq!(d.len(), input.len());
    assert_eth(&d, NEW, R0, 0x0806);
    let a = &d[14..];
    assert_eq!(&a[0..6], &[0, 1, 0x08, 0x00, 6, 4]);
    assert_eq!(&a[6..8], &[0, 2], "op = reply");
    assert_eq!(mac_at(a, 8), R0);
    assert_eq!(&a[14..18], &[10, 0, 0, 1]);
    assert_eq!(mac_at(a, 18), NEW);
    assert_eq!(&a[24..28], &[10, 0, 0, 50]);
    assert_eq!(local(&pl, Local::ArpReply), 1);
    assert_eq!(local(&pl, Local::ArpLearned), 1);
    assert_eq!(pl.events, vec![Event::NeighbourLearned { iface: 0, ip: IpAddr::V4(v4("10.0.0.50")), mac: NEW, answer: false }]);
    assert_eq!(total_drops(&pl), 0);

    // A repeat does not queue the event again.
    let mut p = VecPacket::from_bytes(&input);
    assert_eq!(run(&mut pl, &mut p, 0, T0 + 1), Verdict::Tx(0));
    assert_eq!(pl.events.len(), 1);
    assert_eq!(local(&pl, Local::ArpReply), 2);
    assert_eq!(local(&pl, Local::ArpLearned), 1);
}

#[test]
fn arp_request_on_vlan_keeps_tag() {
    let mut pl = pipeline();
    let input = eth([0xff; 6], NEW, Some((6, 100)), 0x0806, &arp(1, NEW, v4("10.2.0.60"), [0; 6], v4("10.2.0.1")));
    let mut p = VecPacket::from_bytes(&input);
    assert_eq!(run(&mut pl, &mut p, 2, T0), Verdict::Tx(2));
    let d = p.data();
    assert_eq!(mac_at(d, 0), NEW);
    assert_eq!(mac_at(d, 6), R2);
    assert_eq!(&d[12..18], &[0x81, 0x00, 0xc0, 100, 0x08, 0x06]);
    assert_eq!(&d[18 + 6..18 + 8], &[0, 2]);
    assert_eq!(mac_at(d, 18 + 8), R2);
    assert_eq!(&d[18 + 14..18 + 18], &[10, 2, 0, 1]);
}

#[test]
fn arp_not_for_us_and_malformed() {
    let mut pl = pipeline();
    let req = arp(1, NEW, v4("10.0.0.51"), [0; 6], v4("10.0.0.77"));
    assert_drop(&mut pl, &eth([0xff; 6], NEW, None, 0x0806, &req), 0, Drop::ArpNotForUs, "arp-not-for-us");
    assert!(pl.events.is_empty());
    // Our address, but of another interface: not answered on this one.
    let req = arp(1, NEW, v4("10.0.0.51"), [0; 6], v4("10.1.0.1"));
    assert_drop(&mut pl, &eth([0xff; 6], NEW, None, 0x0806, &req), 0, Drop::ArpNotForUs, "arp-not-for-us");
    // Truncated and unsupported hardware type.
    let req = arp(1, NEW, v4("10.0.0.51"), [0; 6], v4("10.0.0.1"));
    assert_drop(&mut pl, &eth([0xff; 6], NEW, None, 0x0806, &req[..27]), 0, Drop::MalformedArp, "malformed-arp");
    let mut bad = req.clone();
    bad[1] = 6;
    assert_drop(&mut pl, &eth([0xff; 6], NEW, None, 0x0806, &bad), 0, Drop::MalformedArp, "malformed-arp");
    assert!(pl.events.is_empty());
    // From a known host, for someone else: consumed (refreshes, no reply).
    let req = arp(1, H0, v4("10.0.0.2"), [0; 6], v4("10.0.0.77"));
    let mut p = VecPacket::from_bytes(&eth([0xff; 6], H0, None, 0x0806, &req));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Consumed);
    assert_eq!(local(&pl, Local::ArpReply), 0);
}

#[test]
fn arp_reply_is_learned_and_used_at_once() {
    let mut pl = pipeline();
    // First the miss, which queues the request.
    let ip = ipv4(v4("10.0.0.2"), v4("198.51.100.7"), 64, 17, &udp(16));
    let f = frame4(R0, H0, None, &ip);
    let mut p = VecPacket::from_bytes(&f);
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Drop(Drop::NeighbourMiss));
    // The gateway answers.
    let gw: MacAddr = [0x00, 0x11, 0x22, 0x01, 0x00, 0x99];
    let rep = arp(2, gw, v4("10.1.0.99"), R1, v4("10.1.0.1"));
    let mut p = VecPacket::from_bytes(&eth(R1, gw, None, 0x0806, &rep));
    assert_eq!(run(&mut pl, &mut p, 1, T0 + 10), Verdict::Consumed);
    assert_eq!(pl.events, vec![Event::NeighbourLearned { iface: 1, ip: IpAddr::V4(v4("10.1.0.99")), mac: gw, answer: true }]);
    assert_eq!(local(&pl, Local::ArpLearned), 1, "one reply, one arp-learned");
    assert_eq!(local(&pl, Local::ArpReply), 0);
    // Forwarding works now, without a new snapshot.
    let mut p = VecPacket::from_bytes(&f);
    assert_eq!(run(&mut pl, &mut p, 0, T0 + 20), Verdict::Tx(1));
    assert_eth(p.data(), gw, R1, 0x0800);
    assert_eq!(p.data()[14 + 8], 63);
    // A snapshot that has it keeps it working; so does one that lacks it.
    let mut n = neighbours();
    n.learn(1, IpAddr::V4(v4("10.1.0.99")), gw, NeighSource::Learned);
    pl.set_neighbours(Arc::new(n));
    let mut p = VecPacket::from_bytes(&f);
    assert_eq!(run(&mut pl, &mut p, 0, T0 + 30), Verdict::Tx(1));
    assert_eq!(mac_at(p.data(), 0), gw);
    assert_eq!(drops(&pl, Drop::NeighbourMiss), 1);
}

#[test]
fn learned_overlay_survives_a_snapshot_without_the_entry() {
    let mut pl = pipeline();
    let rep = arp(2, NEW, v4("10.1.0.99"), R1, v4("10.1.0.1"));
    let mut p = VecPacket::from_bytes(&eth(R1, NEW, None, 0x0806, &rep));
    assert_eq!(run(&mut pl, &mut p, 1, T0), Verdict::Consumed);
    pl.set_neighbours(Arc::new(neighbours()));
    let ip = ipv4(v4("10.0.0.2"), v4("198.51.100.7"), 64, 17, &udp(16));
    let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &ip));
    assert_eq!(run(&mut pl, &mut p, 0, T0 + 1), Verdict::Tx(1));
    assert_eq!(mac_at(p.data(), 0), NEW);
}

// ==================================================================== ND

#[test]
fn ns_for_our_address_gets_na_in_place() {
    let mut pl = pipeline();
    let src = v6("2001:db8::50");
    let ours = v6("2001:db8::1");
    let group = solicited_node_of(ours);
    let m = icmpv6(src, group, 135, 0, &ns_body(ours, Some(NEW)));
    let ip = ipv6(src, group, 255, 58, &m);
    let input = frame6([0x33, 0x33, 0xff, 0, 0, 1], NEW, None, &ip);
    let mut p = VecPacket::from_bytes(&input);
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(0));
    let d = p.to_vec();
    assert_eq!(d.len(), 14 + 40 + 32);
    assert_eth(&d, NEW, R0, 0x86dd);
    let ip = &d[14..];
    assert_eq!(ip[7], 255, "hop limit 255");
    assert_eq!(&ip[8..24], &ours.octets(), "from the target address");
    assert_eq!(&ip[24..40], &src.octets(), "to the NS source");
    let m = &ip[40..];
    assert_eq!(&m[0..2], &[136, 0]);
    assert_eq!(m[4], 0xe0, "R|S|O");
    assert_eq!(&m[5..8], &[0; 3]);
    assert_eq!(&m[8..24], &ours.octets());
    assert_eq!(&m[24..26], &[2, 1], "TLLAO");
    assert_eq!(mac_at(m, 26), R0);
    icmpv6_ok(ip);
    let na = Icmpv6Packet::new_checked(m).unwrap();
    assert_eq!(na.msg_type(), Icmpv6Message::NEIGHBOR_ADVERT);
    assert_eq!(na.target_addr(), Some(ours));
    assert_eq!(local(&pl, Local::NdAdvert), 1);
    assert_eq!(local(&pl, Local::NdLearned), 1);
    assert_eq!(pl.events, vec![Event::NeighbourLearned { iface: 0, ip: IpAddr::V6(src), mac: NEW, answer: false }]);
    // The learned neighbour is used at once.
    let ip = ipv6(v6("2001:db8:1::2"), src, 64, 17, &udp(8));
    let mut p = VecPacket::from_bytes(&frame6(R1, H1, None, &ip));
    assert_eq!(run(&mut pl, &mut p, 1, T0 + 1), Verdict::Tx(0));
    assert_eq!(mac_at(p.data(), 0), NEW);
}

#[test]
fn ns_for_link_local_unicast_and_on_vlan() {
    let mut pl = pipeline();
    let ll = pl.topo.interfaces[2].link_local;
    let src = v6("fe80::5");
    // Unicast NS (NUD) to our link-local on VLAN 100, with SLLAO.
    let m = icmpv6(src, ll, 135, 0, &ns_body(ll, Some(NEW2)));
    let ip = ipv6(src, ll, 255, 58, &m);
    let mut p = VecPacket::from_bytes(&frame6(R2, NEW2, Some((2, 100)), &ip));
    assert_eq!(run(&mut pl, &mut p, 2, T0), Verdict::Tx(2));
    let d = p.data();
    assert_eq!(d.len(), 18 + 72);
    assert_eq!(mac_at(d, 0), NEW2);
    assert_eq!(mac_at(d, 6), R2);
    assert_eq!(&d[12..14], &[0x81, 0x00]);
    assert_eq!(u16::from_be_bytes([d[14], d[15]]), (2 << 13) | 100);
    assert_eq!(&d[16..18], &[0x86, 0xdd]);
    let ip = &d[18..];
    assert_eq!(&ip[8..24], &ll.octets());
    assert_eq!(&ip[24..40], &src.octets());
    assert_eq!(ip[40 + 4], 0xe0);
    icmpv6_ok(ip);
    // Without SLLAO, the NA goes to the frame's source MAC.
    let m = icmpv6(src, ll, 135, 0, &ns_body(ll, None));
    let ip = ipv6(src, ll, 255, 58, &m);
    let mut p = VecPacket::from_bytes(&frame6(R2, NEW, Some((0, 100)), &ip));
    assert_eq!(run(&mut pl, &mut p, 2, T0), Verdict::Tx(2));
    assert_eq!(mac_at(p.data(), 0), NEW);
}

#[test]
fn dad_ns_gets_na_to_all_nodes_without_s() {
    let mut pl = pipeline();
    let ours = v6("2001:db8::1");
    let group = solicited_node_of(ours);
    let m = icmpv6(Ipv6Addr::UNSPECIFIED, group, 135, 0, &ns_body(ours, None));
    let ip = ipv6(Ipv6Addr::UNSPECIFIED, group, 255, 58, &m);
    let mut p = VecPacket::from_bytes(&frame6([0x33, 0x33, 0xff, 0, 0, 1], NEW, None, &ip));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(0));
    let d = p.data();
    assert_eth(d, [0x33, 0x33, 0, 0, 0, 1], R0, 0x86dd);
    let ip = &d[14..];
    assert_eq!(ip[7], 255);
    assert_eq!(&ip[8..24], &ours.octets());
    assert_eq!(&ip[24..40], &v6("ff02::1").octets());
    let m = &ip[40..];
    assert_eq!(m[0], 136);
    assert_eq!(m[4] & 0x40, 0, "S clear");
    assert_eq!(m[4], 0xa0, "R|O");
    assert_eq!(mac_at(m, 26), R0);
    icmpv6_ok(ip);
    assert!(pl.events.is_empty(), "nothing learned from ::");
    assert_eq!(local(&pl, Local::NdAdvert), 1);
    // DAD NS with an SLLAO is invalid (RFC 4861 s.7.1.1).
    let m = icmpv6(Ipv6Addr::UNSPECIFIED, group, 135, 0, &ns_body(ours, Some(NEW)));
    let ip = ipv6(Ipv6Addr::UNSPECIFIED, group, 255, 58, &m);
    assert_drop(&mut pl, &frame6([0x33, 0x33, 0xff, 0, 0, 1], NEW, None, &ip), 0, Drop::MalformedNd, "malformed-nd");
}

#[test]
fn nd_validation_drops() {
    let mut pl = pipeline();
    let src = v6("2001:db8::50");
    let ours = v6("2001:db8::1");
    let group = solicited_node_of(ours);
    let dmac = [0x33, 0x33, 0xff, 0, 0, 1];
    // Hop limit != 255.
    for hop in [254u8, 64, 1] {
        let m = icmpv6(src, group, 135, 0, &ns_body(ours, Some(NEW)));
        let ip = ipv6(src, group, hop, 58, &m);
        assert_drop(&mut pl, &frame6(dmac, NEW, None, &ip), 0, Drop::MalformedNd, "malformed-nd");
    }
    // Code != 0.
    let m = icmpv6(src, group, 135, 1, &ns_body(ours, Some(NEW)));
    assert_drop(&mut pl, &frame6(dmac, NEW, None, &ipv6(src, group, 255, 58, &m)), 0, Drop::MalformedNd, "malformed-nd");
    // Too short (no target).
    let m = icmpv6(src, group, 135, 0, &[0; 12]);
    assert_drop(&mut pl, &frame6(dmac, NEW, None, &ipv6(src, group, 255, 58, &m)), 0, Drop::MalformedNd, "malformed-nd");
    // Option length 0.
    let mut body = ns_body(ours, None);
    body.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0]);
    let m = icmpv6(src, group, 135, 0, &body);
    assert_drop(&mut pl, &frame6(dmac, NEW, None, &ipv6(src, group, 255, 58, &m)), 0, Drop::MalformedNd, "malformed-nd");
    // Multicast target.
    let m = icmpv6(src, group, 135, 0, &ns_body(v6("ff02::1"), None));
    assert_drop(&mut pl, &frame6(dmac, NEW, None, &ipv6(src, group, 255, 58, &m)), 0, Drop::MalformedNd, "malformed-nd");
    // NA with hop limit != 255.
    let m = icmpv6(src, ours, 136, 0, &ns_body(src, None));
    assert_drop(&mut pl, &frame6(R0, NEW, None, &ipv6(src, ours, 64, 58, &m)), 0, Drop::MalformedNd, "malformed-nd");
    // NS for an address that is not ours, to a group we do not listen to.
    let other = v6("2001:db8::99");
    let g = solicited_node_of(other);
    let m = icmpv6(src, g, 135, 0, &ns_body(other, Some(NEW)));
    assert_drop(
        &mut pl,
        &frame6([0x33, 0x33, 0xff, 0, 0, 0x99], NEW, None, &ipv6(src, g, 255, 58, &m)),
        0,
        Drop::MulticastNotRouted,
        "multicast-not-routed",
    );
    // ... and to a group we do listen to (2001:db8:5::1 shares ours'
    // solicited-node group): not answered.
    let other = v6("2001:db8:5::1");
    assert_eq!(solicited_node_of(other), group);
    let m = icmpv6(src, group, 135, 0, &ns_body(other, Some(NEW)));
    assert_drop(&mut pl, &frame6(dmac, NEW, None, &ipv6(src, group, 255, 58, &m)), 0, Drop::LocalUnsupported, "local-unsupported");
    assert!(pl.events.is_empty());
}

#[test]
fn na_is_learned_and_consumed() {
    let mut pl = pipeline();
    let src = v6("2001:db8:1::77");
    let ours = v6("2001:db8:1::1");
    let mut body = vec![0x60, 0, 0, 0]; // S|O
    body.extend_from_slice(&src.octets());
    body.extend_from_slice(&[2, 1]);
    body.extend_from_slice(&NEW);
    let m = icmpv6(src, ours, 136, 0, &body);
    let ip = ipv6(src, ours, 255, 58, &m);
    // The answer to a solicitation of ours (RFC 4861 s.7.2.5).
    let s = dataplane::pipeline::Solicit { iface: 1, target: IpAddr::V6(src), unicast: None };
    assert_eq!(pl.build_solicit(&mut VecPacket::from_bytes(&[]), &s, T0), Some(1));
    let mut p = VecPacket::from_bytes(&frame6(R1, NEW2, None, &ip));
    assert_eq!(run(&mut pl, &mut p, 1, T0), Verdict::Consumed);
    assert_eq!(pl.events, vec![Event::NeighbourLearned { iface: 1, ip: IpAddr::V6(src), mac: NEW, answer: true }]);
    assert_eq!(local(&pl, Local::NdLearned), 1);
    assert_eq!(total_drops(&pl), 0);
    // And forwarding to it works at once.
    let ip = ipv6(v6("2001:db8::2"), src, 64, 17, &udp(8));
    let mut p = VecPacket::from_bytes(&frame6(R0, H0, None, &ip));
    assert_eq!(run(&mut pl, &mut p, 0, T0 + 1), Verdict::Tx(1));
    assert_eth(p.data(), NEW, R1, 0x86dd);
}

/// BCP 38 / RFC 3704 source checks on the arrival interface: strict
/// (the route to the source leaves by it), loose (a route exists), off.
/// Link-local sources (ND) are never checked.
#[test]
fn urpf_strict_and_loose() {
    use dataplane::tables::Urpf;
    let with = |mode: Urpf| {
        let mut pl = pipeline();
        let mut t = (*pl.topo).clone();
        t.interfaces[0].urpf = mode;
        pl.topo = Arc::new(t);
        pl
    };
    let send4 = |pl: &mut Pipeline, src: &str| {
        let ip = ipv4(v4(src), v4("10.1.0.2"), 64, 17, &udp(4));
        let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &ip));
        run(pl, &mut p, 0, T0)
    };
    let send6 = |pl: &mut Pipeline, src: &str| {
        let ip = ipv6(v6(src), v6("2001:db8:1::2"), 64, 17, &udp(4));
        let mut p = VecPacket::from_bytes(&frame6(R0, H0, None, &ip));
        run(pl, &mut p, 0, T0)
    };
    let mut strict = with(Urpf::Strict);
    assert_eq!(send4(&mut strict, "10.0.0.2"), Verdict::Tx(1), "on p0's own subnet");
    assert_eq!(send4(&mut strict, "10.1.0.77"), Verdict::Drop(Drop::UrpfFailed), "routed out of p1");
    assert_eq!(send4(&mut strict, "192.0.2.9"), Verdict::Drop(Drop::UrpfFailed), "routed via p1's gateway");
    assert_eq!(send4(&mut strict, "203.0.113.5"), Verdict::Drop(Drop::UrpfFailed), "no route");
    assert_eq!(send6(&mut strict, "2001:db8::9"), Verdict::Tx(1));
    assert_eq!(send6(&mut strict, "2001:db8:100::9"), Verdict::Drop(Drop::UrpfFailed));
    assert_eq!(drops(&strict, Drop::UrpfFailed), 4);
    // The router's own services on a strict port: ND from a link-local
    // source is answered.
    let ours = v6("2001:db8::1");
    let group = solicited_node_of(ours);
    let m = icmpv6(v6("fe80::42"), group, 135, 0, &ns_body(ours, Some(NEW)));
    let mut p = VecPacket::from_bytes(&frame6([0x33, 0x33, 0xff, 0, 0, 1], NEW, None, &ipv6(v6("fe80::42"), group, 255, 58, &m)));
    assert_eq!(run(&mut strict, &mut p, 0, T0), Verdict::Tx(0));
    let mut loose = with(Urpf::Loose);
    assert_eq!(send4(&mut loose, "10.1.0.77"), Verdict::Tx(1), "a route exists");
    assert_eq!(send4(&mut loose, "192.0.2.9"), Verdict::Tx(1));
    assert_eq!(send4(&mut loose, "203.0.113.5"), Verdict::Drop(Drop::UrpfFailed), "no route at all");
    assert_eq!(send6(&mut loose, "2001:db8:100::9"), Verdict::Tx(1));
    assert_eq!(send6(&mut loose, "2001:db9::9"), Verdict::Drop(Drop::UrpfFailed));
    let mut off = with(Urpf::Off);
    assert_eq!(send4(&mut off, "203.0.113.5"), Verdict::Tx(1), "off: not checked");
    // The burst fast path checks sources too: a spoofed source is left to
    // the full pipeline (which drops it), a good one is forwarded.
    for (strict_port, src, want) in [(true, "10.0.0.2", 1), (true, "10.1.0.77", dataplane::fastpath::SLOW), (false, "10.1.0.77", 1)] {
        let pl = if strict_port { &mut strict } else { &mut off };
        let mut buf = frame4(R0, H0, None, &ipv4(v4(src), v4("192.0.2.7"), 64, 17, &udp(4)));
        let mut views: Vec<&mut [u8]> = vec![buf.as_mut_slice()];
        let mut out = [0u16; 1];
        pl.fast_burst(0, &mut views, &mut out);
        assert_eq!(out[0], want, "{src}");
    }
}

/// FANN over UDP in transit (draft-hzh-fantel-wan-tunnel s.5.2: processed
/// as the ICMPv6 variant): its own Hop Limit decremented with the UDP
/// checksum patched, the message discarded when it reaches zero.
#[test]
fn udp_fann_in_transit_has_its_hop_limit_decremented() {
    use dataplane::wire::fann::{event, MessageRepr, CODE_EVENT};
    use dataplane::wire::params::Params;
    let mut pl = pipeline();
    let (src, dst) = (v6("2001:db8::2"), v6("2001:db8:1::2"));
    let m = |hop: u8| MessageRepr { hop_limit: hop, event_type: event::CONGESTION, event_subtype: 2, event_id: 9, timestamp: 1, originating_node: src, metadata: Default::default() };
    let ip = dataplane::fann::notification_packet(CODE_EVENT, &m(5), &src, &dst, &Params::DEFAULT, true);
    let mut p = VecPacket::from_bytes(&frame6(R0, H0, None, &ip));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(1));
    let out = p.to_vec();
    let o = &out[14..];
    assert_eq!(o[7], 63, "IPv6 hop limit");
    assert_eq!(o[50], 4, "FANN Hop Limit");
    let u = &o[40..];
    let s = checksum::combine(checksum::pseudo_v6(&src.octets(), &dst.octets(), 17, u.len() as u32), checksum::sum(u));
    assert_eq!(checksum::fold(s), 0xffff, "UDP checksum after the decrement");
    let mut want = ip.clone();
    want[7] = 63;
    want[50] = 4;
    want[46..48].copy_from_slice(&o[46..48]);
    assert_eq!(o, &want[..], "nothing else changed");
    // Hop Limit 1: discarded here.
    let ip = dataplane::fann::notification_packet(CODE_EVENT, &m(1), &src, &dst, &Params::DEFAULT, true);
    assert_drop(&mut pl, &frame6(R0, H0, None, &ip), 0, Drop::FannHopLimit, "fann-hop-limit-expired");
}

/// Only on-link addresses are learned, and an unsolicited NA only updates
/// an address already known (RFC 4861 s.7.2.3, s.7.2.5): a sender on the
/// link cannot fill the table with made-up off-link addresses.
#[test]
fn nd_learns_only_on_link_and_unsolicited_na_only_for_known() {
    let mut pl = pipeline();
    let ours = v6("2001:db8::1");
    let group = solicited_node_of(ours);
    let dmac = [0x33, 0x33, 0xff, 0, 0, 1];
    // NS from an off-link source (not in 2001:db8::/64 of interface 0):
    // answered, not learned.
    let off = v6("2001:db8:77::5");
    let m = icmpv6(off, group, 135, 0, &ns_body(ours, Some(NEW)));
    let mut p = VecPacket::from_bytes(&frame6(dmac, NEW, None, &ipv6(off, group, 255, 58, &m)));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(0));
    assert_eq!(&p.data()[14 + 24..14 + 40], &off.octets(), "the NA goes back to it");
    assert!(pl.events.is_empty());
    assert_eq!(local(&pl, Local::NdSourceOffLink), 1);
    assert_eq!(local(&pl, Local::NdLearned), 0);
    // From a link-local source: learned.
    let ll = v6("fe80::42");
    let m = icmpv6(ll, group, 135, 0, &ns_body(ours, Some(NEW2)));
    let mut p = VecPacket::from_bytes(&frame6(dmac, NEW2, None, &ipv6(ll, group, 255, 58, &m)));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(0));
    assert_eq!(pl.events, vec![Event::NeighbourLearned { iface: 0, ip: IpAddr::V6(ll), mac: NEW2, answer: false }]);

    let na = |target: Ipv6Addr, flags: u8, mac: MacAddr| {
        let mut body = vec![flags, 0, 0, 0];
        body.extend_from_slice(&target.octets());
        body.extend_from_slice(&[2, 1]);
        body.extend_from_slice(&mac);
        let src = v6("2001:db8:1::77");
        let dst = v6("2001:db8:1::1");
        frame6(R1, NEW, None, &ipv6(src, dst, 255, 58, &icmpv6(src, dst, 136, 0, &body)))
    };
    pl.events.clear();
    // Solicited NA for an off-link target.
    assert_drop(&mut pl, &na(v6("2001:db8:99::7"), 0x60, NEW), 1, Drop::NdAdvertOffLink, "nd-advert-off-link");
    // Unsolicited (S clear) NA for an on-link address nobody knows.
    let t = v6("2001:db8:1::78");
    assert_drop(&mut pl, &na(t, 0x20, NEW), 1, Drop::NdAdvertUnsolicited, "nd-advert-unsolicited-unknown");
    assert!(pl.events.is_empty());
    // Solicited, answering our solicitation: learned; then an unsolicited
    // one (the host's new MAC) updates it.
    let s = dataplane::pipeline::Solicit { iface: 1, target: IpAddr::V6(t), unicast: None };
    assert_eq!(pl.build_solicit(&mut VecPacket::from_bytes(&[]), &s, T0), Some(1));
    let mut p = VecPacket::from_bytes(&na(t, 0x60, NEW));
    assert_eq!(run(&mut pl, &mut p, 1, T0), Verdict::Consumed);
    let mut p = VecPacket::from_bytes(&na(t, 0x20, NEW2));
    assert_eq!(run(&mut pl, &mut p, 1, T0), Verdict::Consumed);
    assert_eq!(
        pl.events,
        vec![Event::NeighbourLearned { iface: 1, ip: IpAddr::V6(t), mac: NEW, answer: true }, Event::NeighbourLearned { iface: 1, ip: IpAddr::V6(t), mac: NEW2, answer: false }]
    );
    // An unsolicited NA for a configured (static) neighbour is accepted
    // as known (learning never replaces a static entry in the tables).
    let st = v6("2001:db8:1::fe");
    let mut p = VecPacket::from_bytes(&na(st, 0x20, NEW));
    assert_eq!(run(&mut pl, &mut p, 1, T0), Verdict::Consumed);
}

// ================================================================== echo

#[test]
fn icmp_echo_request_gets_reply() {
    let mut pl = pipeline();
    let data: Vec<u8> = (0..56u8).collect();
    let m = icmpv4_echo(8, 0x1234, 7, &data);
    let ip = ipv4(v4("10.0.0.2"), v4("10.0.0.1"), 17, 1, &m);
    let input = frame4(R0, H0, None, &ip);
    let mut p = VecPacket::from_bytes(&input);
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(0));
    let d = p.to_vec();
    assert_eq!(d.len(), input.len());
    assert_eth(&d, H0, R0, 0x0800);
    let ip = &d[14..];
    assert_eq!(&ip[12..16], &[10, 0, 0, 1], "src = our address");
    assert_eq!(&ip[16..20], &[10, 0, 0, 2], "dst = requester");
    assert_eq!(ip[9], 1);
    assert!(ip[8] > 1);
    ipv4_header_ok(ip);
    let m = &ip[20..];
    assert_eq!(&m[0..2], &[0, 0], "echo reply");
    assert_eq!(&m[4..6], &[0x12, 0x34]);
    assert_eq!(&m[6..8], &[0, 7]);
    assert_eq!(&m[8..], &data[..]);
    icmpv4_ok(m);
    let e = Icmpv4Packet::new_checked(m).unwrap();
    assert_eq!(e.msg_type(), Icmpv4Message::ECHO_REPLY);
    assert_eq!(local(&pl, Local::EchoReply4), 1);
    assert_eq!(total_drops(&pl), 0);

    // To the address of another interface: answered from that address,
    // sent back the way the requester is reached.
    let m = icmpv4_echo(8, 1, 2, b"xyz");
    let ip = ipv4(v4("10.0.0.2"), v4("10.1.0.1"), 64, 1, &m);
    let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &ip));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(0));
    let ip = &p.data()[14..];
    assert_eq!(&ip[12..16], &[10, 1, 0, 1]);
    ipv4_header_ok(ip);
    icmpv4_ok(&ip[20..]);

    // Tagged request: tagged reply on the same VLAN.
    let m = icmpv4_echo(8, 9, 9, b"vlan");
    let ip = ipv4(v4("10.2.0.2"), v4("10.2.0.1"), 64, 1, &m);
    let mut p = VecPacket::from_bytes(&frame4(R2, H2, Some((4, 100)), &ip));
    assert_eq!(run(&mut pl, &mut p, 2, T0), Verdict::Tx(2));
    let d = p.data();
    assert_eq!(mac_at(d, 0), H2);
    assert_eq!(&d[12..14], &[0x81, 0x00]);
    assert_eq!(u16::from_be_bytes([d[14], d[15]]) & 0x0fff, 100);
    icmpv4_ok(&d[18 + 20..]);
}

#[test]
fn icmpv6_echo_request_gets_reply() {
    let mut pl = pipeline();
    let src = v6("2001:db8::2");
    let ours = v6("2001:db8::1");
    let mut rest = vec![0xab, 0xcd, 0x00, 0x05];
    let data: Vec<u8> = (0..40u8).map(|i| i ^ 0x5a).collect();
    rest.extend_from_slice(&data);
    let m = icmpv6(src, ours, 128, 0, &rest);
    let ip = ipv6(src, ours, 64, 58, &m);
    let input = frame6(R0, H0, None, &ip);
    let mut p = VecPacket::from_bytes(&input);
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(0));
    let d = p.to_vec();
    assert_eq!(d.len(), input.len());
    assert_eth(&d, H0, R0, 0x86dd);
    let ip = &d[14..];
    assert_eq!(&ip[8..24], &ours.octets());
    assert_eq!(&ip[24..40], &src.octets());
    assert!(ip[7] > 1);
    let m = &ip[40..];
    assert_eq!(&m[0..2], &[129, 0]);
    assert_eq!(&m[4..8], &[0xab, 0xcd, 0x00, 0x05]);
    assert_eq!(&m[8..], &data[..]);
    icmpv6_ok(ip);
    let e = Icmpv6Packet::new_checked(m).unwrap();
    assert_eq!(e.msg_type(), Icmpv6Message::ECHO_REPLY);
    assert_eq!(e.echo_ident(), 0xabcd);
    assert_eq!(e.echo_seq_no(), 5);
    assert_eq!(local(&pl, Local::EchoReply6), 1);

    // To our link-local from a link-local source.
    let ll = pl.topo.interfaces[0].link_local;
    let hs = v6("fe80::211:22ff:fe00:2");
    let m = icmpv6(hs, ll, 128, 0, &[0, 1, 0, 1]);
    let ip = ipv6(hs, ll, 64, 58, &m);
    let mut p = VecPacket::from_bytes(&frame6(R0, H0, None, &ip));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(0));
    let d = p.data();
    assert_eq!(mac_at(d, 0), H0);
    assert_eq!(&d[14 + 8..14 + 24], &ll.octets());
    icmpv6_ok(&d[14..]);
}

// ========================================================= time exceeded

#[test]
fn ipv4_time_exceeded() {
    let mut pl = pipeline();
    let orig = ipv4(v4("10.0.0.2"), v4("192.0.2.5"), 1, 17, &udp(100));
    let input = frame4(R0, H0, None, &orig);
    let mut p = VecPacket::from_bytes(&input);
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(0));
    let d = p.to_vec();
    assert_eth(&d, H0, R0, 0x0800);
    let ip = &d[14..];
    ipv4_header_ok(ip);
    assert_eq!(ip[0], 0x45);
    assert_eq!(ip[9], 1, "ICMP");
    assert_eq!(&ip[12..16], &[10, 0, 0, 1], "from our interface address");
    assert_eq!(&ip[16..20], &[10, 0, 0, 2], "to the source");
    let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    assert_eq!(total, ip.len());
    assert!(total <= 576);
    let m = &ip[20..];
    assert_eq!(&m[0..2], &[11, 0], "time exceeded, TTL exceeded in transit");
    assert_eq!(&m[4..8], &[0; 4], "unused");
    icmpv4_ok(m);
    // The quote: the original header and at least 8 bytes of its data,
    // exactly as received (here all of it fits).
    let q = &m[8..];
    assert!(q.len() >= 20 + 8);
    assert_eq!(q, &orig[..q.len()]);
    assert_eq!(q.len(), orig.len());
    assert_eq!(local(&pl, Local::TimeExceeded4), 1);
    assert_eq!(total_drops(&pl), 0);

    // A big original is cut to keep the error within 576 bytes.
    let orig = ipv4(v4("10.0.0.2"), v4("192.0.2.5"), 1, 17, &udp(1000));
    let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &orig));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(0));
    let ip = &p.data()[14..];
    assert_eq!(ip.len(), 576);
    assert_eq!(u16::from_be_bytes([ip[2], ip[3]]), 576);
    ipv4_header_ok(ip);
    icmpv4_ok(&ip[20..]);
    assert_eq!(&ip[28..], &orig[..548]);

    // TTL 0 too, and from a tagged ingress: the error goes out tagged.
    let orig = ipv4(v4("10.2.0.2"), v4("10.1.0.2"), 0, 6, &udp(4));
    let mut p = VecPacket::from_bytes(&frame4(R2, H2, Some((0, 100)), &orig));
    assert_eq!(run(&mut pl, &mut p, 2, T0), Verdict::Tx(2));
    let d = p.data();
    assert_eq!(mac_at(d, 0), H2);
    assert_eq!(&d[12..14], &[0x81, 0x00]);
    let ip = &d[18..];
    assert_eq!(&ip[12..16], &[10, 2, 0, 1]);
    ipv4_header_ok(ip);
    icmpv4_ok(&ip[20..]);
    assert_eq!(&ip[28..], &orig[..]);
    assert_eq!(local(&pl, Local::TimeExceeded4), 3);
}

/// RFC 1812 s.4.3.2.7 on the forwarding path: the TTL-1 datagram of
/// `ipv4_time_exceeded` in a broadcast or multicast frame is not routed
/// (`multicast-not-routed`) and gets no Time Exceeded. (The check where the
/// error is built is tested in `pipeline::icmp4_tests`.)
#[test]
fn ipv4_no_icmp_error_about_a_link_layer_broadcast() {
    let mut pl = pipeline();
    let orig = ipv4(v4("10.0.0.2"), v4("192.0.2.5"), 1, 17, &udp(100));
    for dst in [[0xff; 6], [0x01, 0x00, 0x5e, 0, 0, 1]] {
        let mut p = VecPacket::from_bytes(&frame4(dst, H0, None, &orig));
        assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Drop(Drop::MulticastNotRouted), "{dst:02x?}");
    }
    assert_eq!(local(&pl, Local::TimeExceeded4), 0);
    let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &orig));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(0), "in a unicast frame: answered");
    assert_eq!(local(&pl, Local::TimeExceeded4), 1);
}

#[test]
fn ipv4_time_exceeded_ignores_ethernet_padding() {
    let mut pl = pipeline();
    let orig = ipv4(v4("10.0.0.2"), v4("192.0.2.5"), 1, 17, &udp(0));
    let mut f = frame4(R0, H0, None, &orig);
    f.resize(60, 0xee);
    let mut p = VecPacket::from_bytes(&f);
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(0));
    let ip = &p.data()[14..];
    assert_eq!(ip.len(), 28 + 28);
    assert_eq!(&ip[28..], &orig[..]);
    icmpv4_ok(&ip[20..]);
}

#[test]
fn no_icmp_error_about_an_icmp_error() {
    // RFC 1812 s.4.3.2.7 / RFC 1122 s.3.2.2: no ICMP error in response to an
    // ICMP error; RFC 4443 s.2.4(e) likewise for ICMPv6.
    let mut pl = pipeline();
    let mut unreach = vec![3, 1, 0, 0, 0, 0, 0, 0];
    unreach.extend_from_slice(&ipv4(v4("192.0.2.5"), v4("10.0.0.2"), 60, 17, &udp(8)));
    let c = checksum::checksum(&unreach);
    unreach[2..4].copy_from_slice(&c.to_be_bytes());
    let ip = ipv4(v4("10.0.0.2"), v4("192.0.2.5"), 1, 1, &unreach);
    assert_drop(&mut pl, &frame4(R0, H0, None, &ip), 0, Drop::TtlExpired, "ttl-expired");
    // An echo request expiring still gets one (traceroute -I).
    let ip = ipv4(v4("10.0.0.2"), v4("192.0.2.5"), 1, 1, &icmpv4_echo(8, 1, 1, b"trace"));
    let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &ip));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(0));

    let (s, d) = (v6("2001:db8::2"), v6("2001:db8:100::5"));
    let m = icmpv6(s, d, 1, 3, &[0; 52]);
    let ip = ipv6(s, d, 1, 58, &m);
    assert_drop(&mut pl, &frame6(R0, H0, None, &ip), 0, Drop::TtlExpired, "ttl-expired");
    let m = icmpv6(s, d, 128, 0, &[0, 1, 0, 1]);
    let ip = ipv6(s, d, 1, 58, &m);
    let mut p = VecPacket::from_bytes(&frame6(R0, H0, None, &ip));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(0));
}

#[test]
fn no_icmp_error_about_a_non_initial_fragment() {
    // RFC 1812 s.4.3.2.7: not for "a datagram which is not the first fragment".
    let mut pl = pipeline();
    let mut ip = ipv4(v4("10.0.0.2"), v4("192.0.2.5"), 1, 17, &udp(16));
    ip[6..8].copy_from_slice(&0x0010u16.to_be_bytes()); // offset 128 bytes
    ip[10] = 0;
    ip[11] = 0;
    let c = checksum::checksum(&ip[..20]);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    assert_drop(&mut pl, &frame4(R0, H0, None, &ip), 0, Drop::TtlExpired, "ttl-expired");
    // The first fragment (MF set, offset 0) does get one.
    let mut ip = ipv4(v4("10.0.0.2"), v4("192.0.2.5"), 1, 17, &udp(16));
    ip[6..8].copy_from_slice(&0x2000u16.to_be_bytes());
    ip[10] = 0;
    ip[11] = 0;
    let c = checksum::checksum(&ip[..20]);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &ip));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(0));
}

#[test]
fn ipv6_time_exceeded() {
    let mut pl = pipeline();
    let src = v6("2001:db8::2");
    let orig = ipv6(src, v6("2001:db8:100::5"), 1, 17, &udp(100));
    let mut p = VecPacket::from_bytes(&frame6(R0, H0, None, &orig));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(0));
    let d = p.to_vec();
    assert_eth(&d, H0, R0, 0x86dd);
    let ip = &d[14..];
    assert_eq!(ip[0] >> 4, 6);
    assert_eq!(ip[6], 58);
    assert!(ip[7] > 1);
    assert_eq!(&ip[8..24], &v6("2001:db8::1").octets(), "from our interface address");
    assert_eq!(&ip[24..40], &src.octets());
    assert!(ip.len() <= 1280);
    let m = &ip[40..];
    assert_eq!(&m[0..2], &[3, 0], "time exceeded, hop limit exceeded in transit");
    assert_eq!(&m[4..8], &[0; 4]);
    assert_eq!(&m[8..], &orig[..], "the whole original fits");
    icmpv6_ok(ip);
    assert_eq!(local(&pl, Local::TimeExceeded6), 1);

    // A big original is cut at 1280 bytes in all.
    let orig = ipv6(src, v6("2001:db8:100::5"), 1, 17, &udp(1400));
    let mut p = VecPacket::from_bytes(&frame6(R0, H0, None, &orig));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(0));
    let ip = &p.data()[14..];
    assert_eq!(ip.len(), 1280);
    assert_eq!(u16::from_be_bytes([ip[4], ip[5]]), 1240);
    assert_eq!(&ip[48..], &orig[..1232]);
    icmpv6_ok(ip);

    // Hop limit 0, link-local requester: answered from our link-local.
    let hs = v6("fe80::211:22ff:fe00:2");
    let orig = ipv6(hs, v6("2001:db8:100::5"), 0, 17, &udp(8));
    let mut p = VecPacket::from_bytes(&frame6(R0, H0, None, &orig));
    let v = run(&mut pl, &mut p, 0, T0);
    // A link-local source cannot be forwarded, so it is a martian before the
    // hop limit is looked at.
    assert_eq!(v, Verdict::Drop(Drop::Ipv6Martian));
}

#[test]
fn icmp_error_rate_limit_with_virtual_clock() {
    let cfg = PipelineConfig { icmp_error_burst: 2, icmp_error_rate_pps: 100, ..Default::default() };
    let mut pl = pipeline_with(cfg);
    let orig = ipv4(v4("10.0.0.2"), v4("192.0.2.5"), 1, 17, &udp(8));
    let f = frame4(R0, H0, None, &orig);
    let t = 7 * SEC;
    for i in 0..2 {
        let mut p = VecPacket::from_bytes(&f);
        assert_eq!(run(&mut pl, &mut p, 0, t), Verdict::Tx(0), "error {i} within the burst");
    }
    let mut p = VecPacket::from_bytes(&f);
    assert_eq!(run(&mut pl, &mut p, 0, t), Verdict::Drop(Drop::TtlExpired));
    assert_eq!(p.data(), &f[..], "a rate-limited packet is not rewritten");
    // IPv6 shares the bucket.
    let o6 = ipv6(v6("2001:db8::2"), v6("2001:db8:100::5"), 1, 17, &udp(8));
    let f6 = frame6(R0, H0, None, &o6);
    let mut p = VecPacket::from_bytes(&f6);
    assert_eq!(run(&mut pl, &mut p, 0, t), Verdict::Drop(Drop::TtlExpired));
    assert_eq!(local(&pl, Local::TimeExceeded4), 2);
    assert_eq!(drops(&pl, Drop::TtlExpired), 2);
    // One second later the bucket is full again (burst 2, not more).
    let t2 = t + SEC;
    for _ in 0..2 {
        let mut p = VecPacket::from_bytes(&f);
        assert_eq!(run(&mut pl, &mut p, 0, t2), Verdict::Tx(0));
    }
    let mut p = VecPacket::from_bytes(&f6);
    assert_eq!(run(&mut pl, &mut p, 0, t2), Verdict::Drop(Drop::TtlExpired));
    // 10 ms at 100/s is exactly one token.
    let mut p = VecPacket::from_bytes(&f6);
    assert_eq!(run(&mut pl, &mut p, 0, t2 + 10_000_000), Verdict::Tx(0));
    let mut p = VecPacket::from_bytes(&f6);
    assert_eq!(run(&mut pl, &mut p, 0, t2 + 10_000_000), Verdict::Drop(Drop::TtlExpired));
    assert_eq!(local(&pl, Local::TimeExceeded4), 4);
    assert_eq!(local(&pl, Local::TimeExceeded6), 1);
    assert_eq!(drops(&pl, Drop::TtlExpired), 4);
    // A clock that goes backwards adds nothing.
    let mut p = VecPacket::from_bytes(&f);
    assert_eq!(run(&mut pl, &mut p, 0, t), Verdict::Drop(Drop::TtlExpired));
}

#[test]
fn icmp_rate_limit_survives_a_long_uptime() {
    // The first error after a long time (TSC-derived clocks start at boot):
    // the refill must saturate, not overflow.
    let cfg = PipelineConfig { icmp_error_burst: 3, icmp_error_rate_pps: 10_000, ..Default::default() };
    let mut pl = pipeline_with(cfg);
    let orig = ipv4(v4("10.0.0.2"), v4("192.0.2.5"), 1, 17, &udp(8));
    let f = frame4(R0, H0, None, &orig);
    let t = 30 * 24 * 3600 * SEC; // 30 days
    for _ in 0..3 {
        let mut p = VecPacket::from_bytes(&f);
        assert_eq!(run(&mut pl, &mut p, 0, t), Verdict::Tx(0));
    }
    let mut p = VecPacket::from_bytes(&f);
    assert_eq!(run(&mut pl, &mut p, 0, t), Verdict::Drop(Drop::TtlExpired));
    for now in [u64::MAX / 2, u64::MAX - 1, u64::MAX] {
        let mut p = VecPacket::from_bytes(&f);
        assert_eq!(run(&mut pl, &mut p, 0, now), Verdict::Tx(0));
    }
}

#[test]
fn arp_reply_from_a_known_neighbour_counts_nothing_new() {
    let mut pl = pipeline();
    let rep = arp(2, GW1, v4("10.1.0.254"), R1, v4("10.1.0.1"));
    let mut p = VecPacket::from_bytes(&eth(R1, GW1, None, 0x0806, &rep));
    assert_eq!(run(&mut pl, &mut p, 1, T0), Verdict::Consumed);
    assert!(pl.events.is_empty());
    assert_eq!(total_local(&pl), 0);
    // A changed MAC for a known neighbour is news.
    let rep = arp(2, NEW, v4("10.1.0.254"), R1, v4("10.1.0.1"));
    let mut p = VecPacket::from_bytes(&eth(R1, NEW, None, 0x0806, &rep));
    assert_eq!(run(&mut pl, &mut p, 1, T0), Verdict::Consumed);
    assert_eq!(pl.events, vec![Event::NeighbourLearned { iface: 1, ip: IpAddr::V4(v4("10.1.0.254")), mac: NEW, answer: true }]);
    assert_eq!(local(&pl, Local::ArpLearned), 1);
}

#[test]
fn echo_is_answered_even_when_the_icmp_error_bucket_is_empty() {
    let cfg = PipelineConfig { icmp_error_burst: 0, ..Default::default() };
    let mut pl = pipeline_with(cfg);
    let ip = ipv4(v4("10.0.0.2"), v4("10.0.0.1"), 1, 1, &icmpv4_echo(8, 1, 1, b"a"));
    let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &ip));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(0), "TTL 1 to us is delivered, not expired");
}

// ================================================================ fuzzing

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    /// A set of valid frames exercising every branch.
    fn corpus() -> Vec<(Vec<u8>, u16)> {
        let ours = v6("2001:db8::1");
        let g = solicited_node_of(ours);
        let src = v6("2001:db8::50");
        let ns = icmpv6(src, g, 135, 0, &ns_body(ours, Some(NEW)));
        let dad = icmpv6(Ipv6Addr::UNSPECIFIED, g, 135, 0, &ns_body(ours, None));
        let mut na_body = vec![0x60, 0, 0, 0];
        na_body.extend_from_slice(&src.octets());
        na_body.extend_from_slice(&[2, 1]);
        na_body.extend_from_slice(&NEW);
        let na = icmpv6(src, ours, 136, 0, &na_body);
        let e6 = icmpv6(v6("2001:db8::2"), ours, 128, 0, &[0, 1, 0, 2, 1, 2, 3, 4]);
        let e6b = icmpv6(v6("2001:db8:2::2"), v6("2001:db8:2::1"), 128, 0, &[0, 1, 0, 2, 1, 2, 3, 4]);
        vec![
            (frame4(R0, H0, None, &ipv4(v4("10.0.0.2"), v4("10.1.0.2"), 64, 17, &udp(32))), 0),
            (frame4(R0, H0, None, &ipv4(v4("10.0.0.2"), v4("10.2.0.2"), 64, 17, &udp(32))), 0),
            (frame4(R2, H2, Some((5, 100)), &ipv4(v4("10.2.0.2"), v4("10.1.0.2"), 64, 17, &udp(32))), 2),
            (frame4(R0, H0, None, &ipv4(v4("10.0.0.2"), v4("192.0.2.5"), 1, 17, &udp(64))), 0),
            (frame4(R2, H2, Some((1, 100)), &ipv4(v4("10.2.0.2"), v4("192.0.2.5"), 1, 17, &udp(64))), 2),
            (frame4(R0, H0, None, &ipv4(v4("10.0.0.2"), v4("10.0.0.1"), 64, 1, &icmpv4_echo(8, 1, 1, b"hello"))), 0),
            (frame4(R0, H0, None, &ipv4(v4("10.0.0.2"), v4("198.51.100.1"), 64, 17, &udp(8))), 0),
            (eth([0xff; 6], NEW, None, 0x0806, &arp(1, NEW, v4("10.0.0.50"), [0; 6], v4("10.0.0.1"))), 0),
            (eth(R1, NEW, None, 0x0806, &arp(2, NEW, v4("10.1.0.99"), R1, v4("10.1.0.1"))), 1),
            (frame6(R0, H0, None, &ipv6(v6("2001:db8::2"), v6("2001:db8:1::2"), 64, 17, &udp(32))), 0),
            (frame6(R0, H0, None, &ipv6(v6("2001:db8::2"), v6("2001:db8:100::5"), 1, 17, &udp(64))), 0),
            (frame6([0x33, 0x33, 0xff, 0, 0, 1], NEW, None, &ipv6(src, g, 255, 58, &ns)), 0),
            (frame6([0x33, 0x33, 0xff, 0, 0, 1], NEW, None, &ipv6(Ipv6Addr::UNSPECIFIED, g, 255, 58, &dad)), 0),
            (frame6(R0, NEW, None, &ipv6(src, ours, 255, 58, &na)), 0),
            (frame6(R0, H0, None, &ipv6(v6("2001:db8::2"), ours, 64, 58, &e6)), 0),
            (frame6(R2, H2, Some((3, 100)), &ipv6(v6("2001:db8:2::2"), v6("2001:db8:2::1"), 64, 58, &e6b)), 2),
            // Fragmented (no DF, over p3's MTU), with options to split.
            (frame4(R0, H0, None, &ipv4_frag(v4("10.4.0.5"), 0, &[0x07, 7, 4, 0, 0, 0, 0, 0x01, 0x94, 4, 0, 0], &udp(1300))), 0),
            // Fragments to the router (reassembly).
            (frame4(R0, H0, None, &cut4(&ipv4(v4("10.0.0.2"), v4("10.0.0.1"), 64, 1, &icmpv4_echo(8, 1, 1, &[9; 600])), &[304])[0]), 0),
            (frame6(R0, H0, None, &cut6(&ipv6(v6("2001:db8::2"), ours, 64, 58, &e6), &[8], 7)[0]), 0),
        ]
    }

    fn check(pl: &mut Pipeline, bytes: &[u8], port: u16, headroom: usize, now: u64) {
        let mut p = VecPacket::with_headroom(bytes, headroom);
        match pl.process(&mut p, port, now) {
            Verdict::Tx(out) => {
                assert!(out <= 3, "Tx on a port we do not have: {out}");
                assert!(p.len() >= 14);
            }
            Verdict::Replicate(k) => {
                // Build every copy / fragment as the worker does.
                for i in 0..usize::from(k) {
                    let mut c = VecPacket::with_headroom(&[], 128);
                    if let Ok(out) = pl.build_replica(i, &p, &mut c, now) {
                        assert!(out <= 3, "Tx on a port we do not have: {out}");
                        assert!(c.len() >= 14 + 20);
                    }
                }
            }
            Verdict::Drop(_) | Verdict::Consumed | Verdict::ToOwner => {}
        }
        // The worker drains between bursts.
        pl.events.clear();
        pl.solicits.clear();
    }

    proptest! {
        // PROPTEST_CASES=N for a longer run.
        #![proptest_config(ProptestConfig {
            cases: std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(2000),
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300), port in 0u16..5, headroom in 0usize..24, now in 1u64..u64::MAX) {
            let mut pl = pipeline();
            check(&mut pl, &bytes, port, headroom, now);
        }

        #[test]
        fn random_bytes_behind_a_valid_l2_header_never_panic(
            et in prop_oneof![Just(0x0800u16), Just(0x86dd), Just(0x0806), any::<u16>()],
            tag in proptest::option::of((0u8..8, prop_oneof![Just(100u16), Just(200), 0u16..4096])),
            dst in prop_oneof![Just(R0), Just(R2), Just(R3), Just([0xffu8; 6]), Just([0x33, 0x33, 0xff, 0, 0, 1])],
            body in proptest::collection::vec(any::<u8>(), 0..200),
            now in 1u64..u64::MAX,
        ) {
            let mut pl = pipeline();
            let port = if tag.is_some() { 2 } else { 0 };
            check(&mut pl, &eth(dst, NEW, tag, et, &body), port, 128, now);
        }

        #[test]
        fn truncated_valid_frames_never_panic(idx in 0usize..64, cut in 0usize..2000, headroom in 0usize..24, now in 1u64..u64::MAX) {
            let c = corpus();
            let (f, port) = &c[idx % c.len()];
            let n = cut % (f.len() + 1);
            let mut pl = pipeline();
            check(&mut pl, &f[..n], *port, headroom, now);
        }

        #[test]
        fn mutated_fragment_sequences_never_panic(
            six in any::<bool>(),
            len in 0usize..4000,
            cut in 1usize..200,
            order in proptest::collection::vec(0usize..64, 1..12),
            edits in proptest::collection::vec((any::<usize>(), any::<usize>(), any::<u8>()), 0..4),
        ) {
            // A fragmented echo request to the router, its fragments
            // mutated and delivered in any order, repeated or missing.
            let data = vec![0x42u8; len];
            let frags: Vec<Vec<u8>> = if six {
                let (h, r) = (v6("2001:db8::2"), v6("2001:db8::1"));
                let mut body = vec![0, 1, 0, 1];
                body.extend_from_slice(&data);
                cut6(&ipv6(h, r, 64, 58, &icmpv6(h, r, 128, 0, &body)), &[cut * 8; 64], 5).into_iter().map(|f| frame6(R0, H0, None, &f)).collect()
            } else {
                cut4(&ipv4(v4("10.0.0.2"), v4("10.0.0.1"), 64, 1, &icmpv4_echo(8, 1, 1, &data)), &[cut * 8; 64]).into_iter().map(|f| frame4(R0, H0, None, &f)).collect()
            };
            let mut frags = frags;
            for (k, pos, val) in edits {
                let n = frags.len();
                let f = &mut frags[k % n];
                let i = 14 + pos % (f.len() - 14);
                f[i] = val;
            }
            let mut pl = pipeline();
            for (t, k) in order.iter().enumerate() {
                check(&mut pl, &frags[k % frags.len()], 0, 128, T0 + t as u64);
            }
            for f in &frags {
                check(&mut pl, f, 0, 128, T0 + 100);
            }
        }

        #[test]
        fn mutated_valid_frames_never_panic(
            idx in 0usize..64,
            edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6),
            extra in proptest::collection::vec(any::<u8>(), 0..8),
            headroom in 0usize..24,
        ) {
            let c = corpus();
            let (f, port) = &c[idx % c.len()];
            let mut f = f.clone();
            for (pos, val) in edits {
                let i = pos % f.len();
                f[i] = val;
            }
            f.extend_from_slice(&extra);
            let mut pl = pipeline();
            check(&mut pl, &f, *port, headroom, T0);
        }
    }

    #[test]
    fn corpus_frames_all_succeed() {
        // The fuzz corpus is meaningful: every frame is handled, none dropped.
        let mut pl = pipeline();
        for (i, (f, port)) in corpus().iter().enumerate() {
            let mut p = VecPacket::from_bytes(f);
            let v = pl.process(&mut p, *port, T0);
            if i == 6 {
                assert_eq!(v, Verdict::Drop(Drop::NeighbourMiss), "frame {i}");
            } else {
                assert!(!matches!(v, Verdict::Drop(_)), "frame {i}: {v:?}");
            }
        }
    }
}

// ============================================================ more cases

#[test]
fn neighbour_miss_at_virtual_time_zero_still_solicits() {
    // A simulation clock starts at 0; the first packet must trigger
    // resolution like any other.
    let mut pl = pipeline();
    let ip = ipv4(v4("10.0.0.2"), v4("198.51.100.7"), 64, 17, &udp(8));
    let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &ip));
    assert_eq!(run(&mut pl, &mut p, 0, 0), Verdict::Drop(Drop::NeighbourMiss));
    assert_eq!(pl.solicits, vec![Solicit { iface: 1, target: IpAddr::V4(v4("10.1.0.99")), unicast: None }]);
    // And pacing works from there.
    let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &ip));
    assert_eq!(run(&mut pl, &mut p, 0, SEC - 1), Verdict::Drop(Drop::NeighbourMiss));
    assert_eq!(pl.solicits.len(), 1);
}

#[test]
fn local_reply_counters_only_count_what_is_sent() {
    // Invariant 4: one packet, one outcome. A reply that cannot be sent is
    // a drop, not also an "...-sent".
    let mut pl = pipeline();
    // Time Exceeded for a source we have no route back to.
    let ip = ipv4(v4("100.64.0.9"), v4("192.0.2.5"), 1, 17, &udp(8));
    let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &ip));
    let v = run(&mut pl, &mut p, 0, T0);
    if let Verdict::Drop(_) = v {
        assert_eq!(local(&pl, Local::TimeExceeded4), 0, "{v:?} but counted as sent");
    } else {
        assert_eq!(v, Verdict::Tx(0));
        assert_eq!(local(&pl, Local::TimeExceeded4), 1);
    }
    // Echo from such a source.
    let ip = ipv4(v4("100.64.0.9"), v4("10.0.0.1"), 64, 1, &icmpv4_echo(8, 1, 1, b"x"));
    let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &ip));
    let v = run(&mut pl, &mut p, 0, T0);
    if let Verdict::Drop(_) = v {
        assert_eq!(local(&pl, Local::EchoReply4), 0, "{v:?} but counted as sent");
    } else {
        assert_eq!(local(&pl, Local::EchoReply4), 1);
    }
    // A reply that needs a tag with no headroom to insert it.
    let ip = ipv4(v4("10.0.0.2"), v4("10.0.0.1"), 64, 1, &icmpv4_echo(8, 1, 1, b"x"));
    let mut n = neighbours();
    n.learn(2, IpAddr::V4(v4("10.0.0.2")), H0, NeighSource::Static);
    let mut f = fib();
    f.insert4("10.0.0.2/32".parse().unwrap(), conn(2));
    pl.set_fib(Arc::new(f));
    pl.set_neighbours(Arc::new(n));
    let before = local(&pl, Local::EchoReply4);
    let mut p = VecPacket::with_headroom(&frame4(R0, H0, None, &ip), 0);
    let v = run(&mut pl, &mut p, 0, T0);
    assert_eq!(v, Verdict::Drop(Drop::NoHeadroom));
    assert_eq!(local(&pl, Local::EchoReply4), before, "NoHeadroom but counted as sent");
}

#[test]
fn icmpv6_echo_to_all_nodes_and_with_extension_header() {
    let mut pl = pipeline();
    let src = v6("2001:db8::2");
    // To ff02::1: answered from our address on the requester's subnet.
    let all = v6("ff02::1");
    let m = icmpv6(src, all, 128, 0, &[0, 7, 0, 8, 1, 2, 3]);
    let ip = ipv6(src, all, 64, 58, &m);
    let mut p = VecPacket::from_bytes(&frame6([0x33, 0x33, 0, 0, 0, 1], H0, None, &ip));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(0));
    let ip = &p.data()[14..];
    assert_eq!(&ip[8..24], &v6("2001:db8::1").octets());
    assert_eq!(&ip[24..40], &src.octets());
    assert_eq!(&ip[40..42], &[129, 0]);
    assert_eq!(&ip[44..], &[0, 7, 0, 8, 1, 2, 3]);
    icmpv6_ok(ip);
    // With a hop-by-hop header (PadN): the reply is plain IPv6 + ICMPv6.
    let ours = v6("2001:db8::1");
    let m = icmpv6(src, ours, 128, 0, &[0, 9, 0, 1, 0xaa, 0xbb]);
    let mut payload = vec![58, 0, 1, 4, 0, 0, 0, 0];
    payload.extend_from_slice(&m);
    let ip = ipv6(src, ours, 64, 0, &payload);
    let mut p = VecPacket::from_bytes(&frame6(R0, H0, None, &ip));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(0));
    let d = p.data();
    assert_eq!(d.len(), 14 + 40 + m.len());
    let ip = &d[14..];
    assert_eq!(ip[6], 58);
    assert_eq!(&ip[40..42], &[129, 0]);
    assert_eq!(&ip[44..], &[0, 9, 0, 1, 0xaa, 0xbb]);
    icmpv6_ok(ip);
    assert_eq!(local(&pl, Local::EchoReply6), 2);
}

#[test]
fn ethernet_padding_is_forwarded_untouched() {
    let mut pl = pipeline();
    let ip = ipv4(v4("10.0.0.2"), v4("10.1.0.2"), 64, 17, &udp(4));
    let mut f = frame4(R0, H0, None, &ip);
    f.resize(60, 0xee);
    let mut p = VecPacket::from_bytes(&f);
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(1));
    let d = p.data();
    assert_eq!(d.len(), 60);
    ipv4_header_ok(&d[14..]);
    assert_eq!(&d[14 + 20..], &f[14 + 20..]);
}

#[test]
fn event_and_solicit_queues_are_bounded() {
    let mut pl = pipeline();
    // 300 new neighbours ask for us in one burst: 256 events, the rest
    // counted as event-queue-full; every request is still answered.
    for i in 0..300u32 {
        let mac = [0x00, 0x77, 0, 0, (i >> 8) as u8, i as u8];
        let host = Ipv4Addr::from(u32::from(v4("10.0.0.0")) + 2 + i % 250);
        let host = if i < 250 { host } else { Ipv4Addr::new(10, 0, 0, (i - 250 + 2) as u8) };
        let req = arp(1, mac, host, [0; 6], v4("10.0.0.1"));
        let mut p = VecPacket::from_bytes(&eth([0xff; 6], mac, None, 0x0806, &req));
        assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(0));
    }
    assert_eq!(pl.events.len(), 256);
    assert_eq!(drops(&pl, Drop::EventQueueFull), 300 - 256);
    assert_eq!(local(&pl, Local::ArpReply), 300);
    // 300 misses to distinct hosts: at most 256 solicits per burst.
    for i in 0..300u32 {
        let dst = Ipv4Addr::from(u32::from(v4("10.1.0.0")) + 3 + (i % 250));
        let dst = if i < 250 { dst } else { Ipv4Addr::new(10, 3, 0, (i - 250 + 3) as u8) };
        let ip = ipv4(v4("10.0.0.2"), dst, 64, 17, &udp(4));
        let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &ip));
        assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Drop(Drop::NeighbourMiss));
    }
    assert_eq!(pl.solicits.len(), 256);
    // The ones that did not fit are asked for in the next burst.
    pl.solicits.clear();
    let ip = ipv4(v4("10.0.0.2"), v4("10.3.0.40"), 64, 17, &udp(4));
    let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &ip));
    assert_eq!(run(&mut pl, &mut p, 0, T0 + 1), Verdict::Drop(Drop::NeighbourMiss));
    assert_eq!(pl.solicits, vec![Solicit { iface: 3, target: IpAddr::V4(v4("10.3.0.40")), unicast: None }]);
}

/// A sender walking a connected /64 (RFC 6583): the addresses being
/// resolved are bounded (4096 per worker, one solicit interval each); more
/// wait, counted, until entries expire.
#[test]
fn addresses_in_resolution_are_bounded() {
    let mut pl = pipeline();
    let sec = 1_000_000_000u64;
    let mut solicited = 0usize;
    let send = |pl: &mut Pipeline, i: u32, now: u64| {
        let dst = Ipv6Addr::from(u128::from(v6("2001:db8:1::")) | 0x1_0000 | u128::from(i));
        let mut p = VecPacket::from_bytes(&frame6(R0, H0, None, &ipv6(v6("2001:db8::2"), dst, 64, 17, &udp(4))));
        assert_eq!(run(pl, &mut p, 0, now), Verdict::Drop(Drop::NeighbourMiss));
        let n = pl.solicits.len();
        pl.solicits.clear();
        n
    };
    for i in 0..4096 + 100 {
        solicited += send(&mut pl, i, T0 + u64::from(i));
    }
    assert_eq!(solicited, 4096);
    assert_eq!(local(&pl, Local::SolicitStateFull), 100);
    assert_eq!(drops(&pl, Drop::NeighbourMiss), 4196);
    // Half an interval later nothing has expired: still full.
    assert_eq!(send(&mut pl, 9000, T0 + sec / 2), 0);
    assert_eq!(local(&pl, Local::SolicitStateFull), 101);
    // Once the first entries are an interval old, new addresses are
    // resolved again.
    assert_eq!(send(&mut pl, 9001, T0 + sec + 4096), 1);
    // The one refused before is asked for now.
    assert_eq!(send(&mut pl, 9000, T0 + sec + 4097), 1);
    assert_eq!(local(&pl, Local::SolicitStateFull), 101);
}

#[test]
fn set_neighbours_swaps_snapshot() {
    let mut pl = pipeline();
    let ip = ipv4(v4("10.0.0.2"), v4("10.1.0.2"), 64, 17, &udp(4));
    let f = frame4(R0, H0, None, &ip);
    // A snapshot with a new MAC for 10.1.0.2 is used from the next packet.
    let mut n = neighbours();
    n.learn(1, IpAddr::V4(v4("10.1.0.2")), NEW2, NeighSource::Static);
    let old = pl.set_neighbours(Arc::new(n));
    assert!(old.get(1, IpAddr::V4(v4("10.1.0.2"))).is_some());
    let mut p = VecPacket::from_bytes(&f);
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(1));
    assert_eq!(mac_at(p.data(), 0), NEW2);
    // One without it: a miss.
    pl.set_neighbours(Arc::new(Neighbours::default()));
    let mut p = VecPacket::from_bytes(&f);
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Drop(Drop::NeighbourMiss));
}

#[test]
fn no_icmpv6_error_about_an_icmpv6_error_behind_extension_headers() {
    let mut pl = pipeline();
    let (s6, d6) = (v6("2001:db8::2"), v6("2001:db8:100::5"));
    // Hop-by-hop (PadN) then an ICMPv6 Packet Too Big.
    let m = icmpv6(s6, d6, 2, 0, &[0, 0, 5, 0xdc, 1, 2, 3, 4]);
    let mut payload = vec![58, 0, 1, 4, 0, 0, 0, 0];
    payload.extend_from_slice(&m);
    let ip = ipv6(s6, d6, 1, 0, &payload);
    assert_drop(&mut pl, &frame6(R0, H0, None, &ip), 0, Drop::TtlExpired, "ttl-expired");
    // The same with an echo request is answered, quoting the extension header.
    let m = icmpv6(s6, d6, 128, 0, &[0, 1, 0, 1]);
    let mut payload = vec![58, 0, 1, 4, 0, 0, 0, 0];
    payload.extend_from_slice(&m);
    let ip = ipv6(s6, d6, 1, 0, &payload);
    let mut p = VecPacket::from_bytes(&frame6(R0, H0, None, &ip));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(0));
    let out = &p.data()[14..];
    assert_eq!(&out[40..42], &[3, 0]);
    assert_eq!(&out[48..], &ip[..]);
    icmpv6_ok(out);
    // An IPv4 timestamp request (a query) is answered; a redirect is not.
    let mut ts = vec![13, 0, 0, 0, 0, 1, 0, 1];
    ts.extend_from_slice(&[0; 12]);
    let c = checksum::checksum(&ts);
    ts[2..4].copy_from_slice(&c.to_be_bytes());
    let ip = ipv4(v4("10.0.0.2"), v4("192.0.2.5"), 1, 1, &ts);
    let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &ip));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(0));
    let mut rd = vec![5, 1, 0, 0, 10, 0, 0, 9];
    rd.extend_from_slice(&ipv4(v4("10.0.0.2"), v4("192.0.2.5"), 60, 17, &udp(8))[..28]);
    let c = checksum::checksum(&rd);
    rd[2..4].copy_from_slice(&c.to_be_bytes());
    let ip = ipv4(v4("10.0.0.2"), v4("192.0.2.5"), 1, 1, &rd);
    assert_drop(&mut pl, &frame4(R0, H0, None, &ip), 0, Drop::TtlExpired, "ttl-expired");
}

// ================================================= reassembly (local)

/// Cut an IPv4 packet (20-byte header) into fragments carrying `sizes`
/// payload octets each (the last takes the rest), by hand.
fn cut4(ip: &[u8], sizes: &[usize]) -> Vec<Vec<u8>> {
    let payload = &ip[20..];
    let mut out = Vec::new();
    let mut at = 0;
    for (k, &s) in sizes.iter().chain(std::iter::once(&usize::MAX)).enumerate() {
        if at >= payload.len() {
            break;
        }
        let n = s.min(payload.len() - at);
        let last = at + n == payload.len();
        let mut h = ip[..20].to_vec();
        h[2..4].copy_from_slice(&((20 + n) as u16).to_be_bytes());
        let fo = (at / 8) as u16 | if last { 0 } else { 0x2000 };
        h[6..8].copy_from_slice(&fo.to_be_bytes());
        h[10..12].fill(0);
        let c = checksum::checksum(&h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        h.extend_from_slice(&payload[at..at + n]);
        out.push(h);
        at += n;
        assert!(k < 100);
    }
    out
}

/// Cut an IPv6 packet (no extension headers) into fragments with a
/// Fragment header, `sizes` octets each (the last takes the rest).
fn cut6(ip: &[u8], sizes: &[usize], ident: u32) -> Vec<Vec<u8>> {
    let payload = &ip[40..];
    let mut out = Vec::new();
    let mut at = 0;
    for &s in sizes.iter().chain(std::iter::once(&usize::MAX)) {
        if at >= payload.len() {
            break;
        }
        let n = s.min(payload.len() - at);
        let last = at + n == payload.len();
        let mut h = ip[..40].to_vec();
        h[4..6].copy_from_slice(&((8 + n) as u16).to_be_bytes());
        h[6] = 44;
        h.extend_from_slice(&[ip[6], 0]);
        h.extend_from_slice(&((at as u16) | u16::from(!last)).to_be_bytes());
        h.extend_from_slice(&ident.to_be_bytes());
        h.extend_from_slice(&payload[at..at + n]);
        out.push(h);
        at += n;
    }
    out
}

/// Reassemble IPv4 fragments (by hand) into the payload, checking that
/// they are in order and contiguous and each fits `mtu`.
fn join4(frames: &[Vec<u8>], mtu: usize) -> (Vec<u8>, Vec<u8>) {
    let mut payload = Vec::new();
    for (k, f) in frames.iter().enumerate() {
        let ip = &f[14..];
        ipv4_header_ok(ip);
        assert!(ip.len() <= mtu, "fragment {k} is {} octets", ip.len());
        let fo = u16::from_be_bytes([ip[6], ip[7]]);
        assert_eq!(fo & 0x4000, 0, "DF clear on fragments");
        assert_eq!(fo & 0x2000 != 0, k + 1 < frames.len(), "MF");
        assert_eq!(usize::from(fo & 0x1fff) * 8, payload.len(), "offset");
        payload.extend_from_slice(&ip[20..]);
    }
    (frames[0][14..34].to_vec(), payload)
}

#[test]
fn fragmented_echo_to_the_router_is_reassembled_and_the_reply_fragmented() {
    // RFC 1812 s.4.2.2.7 / RFC 1122 s.3.3.2: a 3000-byte ping to the
    // router behind a 1500-byte link arrives in three fragments (here out
    // of order); the 3028-byte reply leaves in three as well.
    let mut pl = pipeline();
    let data: Vec<u8> = (0..3000u32).map(|i| (i * 7 + 1) as u8).collect();
    let mut req = ipv4(v4("10.0.0.2"), v4("10.0.0.1"), 64, 1, &icmpv4_echo(8, 0x77, 9, &data));
    req[6] = 0; // no DF, as ping -M dont
    req[10..12].fill(0);
    let c = checksum::checksum(&req[..20]);
    req[10..12].copy_from_slice(&c.to_be_bytes());
    let frags = cut4(&req, &[1480, 1480]);
    assert_eq!(frags.len(), 3);
    for k in [1, 2] {
        let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &frags[k]));
        assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Consumed, "fragment {k} held");
    }
    let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &frags[0]));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Replicate(3));
    let out: Vec<Vec<u8>> = (0..3)
        .map(|i| {
            let mut c = VecPacket::with_headroom(&[], 128);
            assert_eq!(pl.build_replica(i, &p, &mut c, T0), Ok(0));
            // The reply's fragments leave ahead of queued data, as the
            // reply would (the worker reads the flag per fragment).
            assert!(pl.reply, "fragment {i} of the router's reply is a reply");
            c.to_vec()
        })
        .collect();
    for f in &out {
        assert_eth(f, H0, R0, 0x0800);
    }
    let (hdr, payload) = join4(&out, 1500);
    assert_eq!(&hdr[12..16], &[10, 0, 0, 1]);
    assert_eq!(&hdr[16..20], &[10, 0, 0, 2]);
    assert_eq!(hdr[9], 1);
    assert_eq!(&hdr[4..6], &out[2][14 + 4..14 + 6], "one Identification");
    assert_eq!(payload.len(), 8 + 3000);
    assert_eq!(&payload[..2], &[0, 0], "echo reply");
    assert_eq!(&payload[4..8], &[0, 0x77, 0, 9]);
    assert_eq!(&payload[8..], &data[..]);
    icmpv4_ok(&payload);
    assert_eq!(local(&pl, Local::ReasmFragment), 3);
    assert_eq!(local(&pl, Local::Reassembled), 1);
    assert_eq!(local(&pl, Local::EchoReply4), 1);
    assert_eq!(local(&pl, Local::Fragment4), 3);
    assert_eq!(total_drops(&pl), 0);

    // A reassembled request whose reply fits goes back in one packet.
    let small = ipv4(v4("10.0.0.2"), v4("10.0.0.1"), 64, 1, &icmpv4_echo(8, 0x78, 1, &data[..1000]));
    let frags = cut4(&small, &[512]);
    let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &frags[0]));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Consumed);
    let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &frags[1]));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(0));
    let d = p.to_vec();
    assert_eth(&d, H0, R0, 0x0800);
    ipv4_header_ok(&d[14..]);
    assert_eq!(d.len(), 14 + 20 + 8 + 1000);
    assert_eq!(u16::from_be_bytes([d[14 + 6], d[14 + 7]]) & 0x3fff, 0, "not a fragment");
    icmpv4_ok(&d[34..]);
    assert_eq!(&d[42..], &data[..1000]);
}

#[test]
fn fragmented_echo6_to_the_router_is_reassembled_and_the_reply_fragmented() {
    // RFC 8200 s.4.5 both ways: the reply carries a Fragment header.
    let mut pl = pipeline();
    let (h, r) = (v6("2001:db8::2"), v6("2001:db8::1"));
    let data: Vec<u8> = (0..3000u32).map(|i| (i * 11 + 5) as u8).collect();
    let mut body = vec![0x12, 0x34, 0, 7];
    body.extend_from_slice(&data);
    let req = ipv6(h, r, 64, 58, &icmpv6(h, r, 128, 0, &body));
    let frags = cut6(&req, &[1448, 1448], 0xabcd_0001);
    assert_eq!(frags.len(), 3);
    for k in [2, 0] {
        let mut p = VecPacket::from_bytes(&frame6(R0, H0, None, &frags[k]));
        assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Consumed);
    }
    let mut p = VecPacket::from_bytes(&frame6(R0, H0, None, &frags[1]));
    let Verdict::Replicate(n) = run(&mut pl, &mut p, 0, T0) else { panic!("no fragmented reply") };
    assert_eq!(n, 3, "3048 octets of ICMPv6 at 1448 per fragment");
    let mut joined = Vec::new();
    let mut ident = None;
    for i in 0..usize::from(n) {
        let mut c = VecPacket::with_headroom(&[], 128);
        assert_eq!(pl.build_replica(i, &p, &mut c, T0), Ok(0));
        let f = c.to_vec();
        assert_eth(&f, H0, R0, 0x86dd);
        let ip = &f[14..];
        assert!(ip.len() <= 1500);
        assert_eq!(ip[6], 44, "Fragment header");
        assert_eq!(usize::from(u16::from_be_bytes([ip[4], ip[5]])), ip.len() - 40);
        assert_eq!(&ip[8..24], &r.octets());
        assert_eq!(&ip[24..40], &h.octets());
        assert_eq!(ip[40], 58);
        let fo = u16::from_be_bytes([ip[42], ip[43]]);
        assert_eq!(usize::from(fo & 0xfff8), joined.len(), "offset");
        assert_eq!(fo & 1 != 0, i + 1 < usize::from(n), "M flag");
        let id = u32::from_be_bytes(ip[44..48].try_into().unwrap());
        assert_eq!(*ident.get_or_insert(id), id, "one Identification");
        if i + 1 < usize::from(n) {
            assert_eq!((ip.len() - 48) % 8, 0);
        }
        joined.extend_from_slice(&ip[48..]);
    }
    let mut whole = ipv6(r, h, 64, 58, &joined);
    whole[0..4].copy_from_slice(&[0x60, 0, 0, 0]);
    icmpv6_ok(&whole);
    assert_eq!(joined[0], 129, "echo reply");
    assert_eq!(&joined[4..8], &[0x12, 0x34, 0, 7]);
    assert_eq!(&joined[8..], &data[..]);
    assert_eq!(local(&pl, Local::Reassembled), 1);
    assert_eq!(local(&pl, Local::EchoReply6), 1);
    assert_eq!(local(&pl, Local::Fragment6), 3);
    assert_eq!(Local::Fragment6.name(), "ipv6-fragments-created");
    assert_eq!(total_drops(&pl), 0);
}

/// A Fragment header whose Next Header is another Fragment header (a
/// fragment of a fragment) is dropped as malformed, every fragment of it:
/// reassembled, it would start a second reassembly from inside the first.
#[test]
fn nested_ipv6_fragments_are_malformed() {
    let mut pl = pipeline();
    let (h, r) = (v6("2001:db8::2"), v6("2001:db8::1"));
    let body = vec![0x5au8; 64];
    let echo = ipv6(h, r, 64, 58, &icmpv6(h, r, 128, 0, &body));
    // The inner datagram: an atomic fragment (offset 0, M = 0) of the echo;
    // the outer fragments cut that, so their Fragment header's Next Header
    // is 44.
    let inner = cut6(&echo, &[], 0xabcd_0001).remove(0);
    assert_eq!((inner[6], inner[40], inner[42..44].to_vec()), (44, 58, vec![0, 0]), "atomic fragment");
    let frags = cut6(&inner, &[48], 0xabcd_0002);
    assert_eq!(frags.len(), 2);
    for f in &frags {
        assert_eq!((f[6], f[40]), (44, 44), "a fragment of a fragment");
    }
    // The first fragment's chain has two Fragment headers (RFC 8200 s.4.1:
    // at most one); a later one's chain ends at its Fragment header, and
    // the Next Header 44 there is refused before it takes a slot.
    assert_drop(&mut pl, &frame6(R0, H0, None, &frags[0]), 0, Drop::MalformedIpv6, "malformed-ipv6");
    assert_drop(&mut pl, &frame6(R0, H0, None, &frags[1]), 0, Drop::ReasmMalformed, "reassembly-malformed");
    assert_eq!(local(&pl, Local::Reassembled), 0);
    // The atomic fragment alone is a datagram like any other.
    let mut p = VecPacket::from_bytes(&frame6(R0, H0, None, &inner));
    assert!(matches!(run(&mut pl, &mut p, 0, T0), Verdict::Tx(_)), "echo reply to the atomic fragment");
    assert_eq!(local(&pl, Local::Reassembled), 1);
}

#[test]
fn reassembly_drops_overlaps_malformed_and_stale_datagrams() {
    let mut pl = pipeline();
    let data = vec![0x33u8; 2000];
    let mut req = ipv4(v4("10.0.0.2"), v4("10.0.0.1"), 64, 1, &icmpv4_echo(8, 1, 1, &data));
    let frag = |req: &[u8], sizes: &[usize]| cut4(req, sizes);
    // Overlap (RFC 5722 / RFC 8900): the second fragment starts inside the
    // first; the datagram is discarded, and its last fragment alone does
    // not complete anything.
    let a = frag(&req, &[1000]);
    let mut b = frag(&req, &[992]);
    assert_eq!(a.len(), 2);
    let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &a[0]));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Consumed);
    assert_drop(&mut pl, &frame4(R0, H0, None, &b[1]), 0, Drop::ReasmOverlap, "reassembly-overlap");
    let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &a[1]));
    assert_eq!(run(&mut pl, &mut p, 0, T0), Verdict::Consumed, "a new datagram, incomplete");
    // A non-last fragment that is not a multiple of 8 octets.
    req[4..6].copy_from_slice(&[0x50, 0x50]);
    b = frag(&req, &[1001]);
    assert_drop(&mut pl, &frame4(R0, H0, None, &b[0]), 0, Drop::ReasmMalformed, "reassembly-malformed");
    // Four slots: a fifth datagram evicts the oldest.
    let before = drops(&pl, Drop::ReasmEvicted);
    for id in 0..5u16 {
        req[4..6].copy_from_slice(&(0x6000 + id).to_be_bytes());
        let f = frag(&req, &[1000]);
        let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &f[0]));
        assert_eq!(run(&mut pl, &mut p, 0, T0 + u64::from(id)), Verdict::Consumed);
    }
    // Slots: the overlap test's new datagram, then 0x6000..0x6002; 0x6003
    // evicts that first one (oldest), 0x6004 evicts 0x6000.
    assert_eq!(drops(&pl, Drop::ReasmEvicted), before + 2, "the oldest datagrams were evicted");
    // 30 s later every one of them has timed out. A new datagram's
    // fragment finds the four slots busy and takes the oldest's, which
    // goes as timed out; the worker's timeout step (after the burst) takes
    // the other three, each owed its Time Exceeded (its first fragment
    // came).
    req[4..6].copy_from_slice(&[0x70, 0x00]);
    let f = frag(&req, &[1000]);
    let mut p = VecPacket::from_bytes(&frame4(R0, H0, None, &f[0]));
    assert_eq!(run(&mut pl, &mut p, 0, T0 + 31 * SEC), Verdict::Consumed);
    assert_eq!(drops(&pl, Drop::ReasmTimeout), 1, "the slot taken");
    let mut sent = Vec::new();
    for _ in 0..8 {
        let mut q = VecPacket::with_capacity(VecPacket::CAPACITY);
        let Some(r) = pl.reassembly_timeout(&mut q, T0 + 31 * SEC) else { break };
        sent.push(r.map(|port| (port, q.data()[14 + 20], q.data()[14 + 21])));
    }
    assert_eq!(sent, vec![Ok((0, 11, 1)); 3], "Time Exceeded, code 1, to each source");
    assert_eq!(drops(&pl, Drop::ReasmTimeout), 4, "four datagrams expired");
    assert_eq!(Drop::ReasmTimeout.name(), "reassembly-timeout");
    assert_eq!(Drop::ReasmEvicted.name(), "reassembly-evicted");
    // An evicted datagram's missing fragment completes nothing.
    assert_eq!(local(&pl, Local::Reassembled), 0);
}

// ========================================== neighbour unreachability detection

/// A pipeline whose table has 10.1.0.77 and 2001:db8:1::77 learned (NEW).
fn pipeline_with_learned() -> Pipeline {
    let mut pl = pipeline();
    let mut n = neighbours();
    n.learn(1, IpAddr::V4(v4("10.1.0.77")), NEW, NeighSource::Learned);
    n.learn(1, IpAddr::V6(v6("2001:db8:1::77")), NEW, NeighSource::Learned);
    pl.set_neighbours(Arc::new(n));
    pl
}

/// An ARP reply to us, or a solicited Neighbor Advertisement, from a
/// learned neighbour with the MAC the table has confirms it (RFC 4861
/// s.7.3.1); an ARP request, an unsolicited NA, or a static neighbour's
/// reply do not.
#[test]
fn answers_from_a_learned_neighbour_confirm_it() {
    let mut pl = pipeline_with_learned();
    let confirmed4 = Event::NeighbourConfirmed { iface: 1, ip: IpAddr::V4(v4("10.1.0.77")) };
    let confirmed6 = Event::NeighbourConfirmed { iface: 1, ip: IpAddr::V6(v6("2001:db8:1::77")) };
    let rep = arp(2, NEW, v4("10.1.0.77"), R1, v4("10.1.0.1"));
    let mut p = VecPacket::from_bytes(&eth(R1, NEW, None, 0x0806, &rep));
    assert_eq!(run(&mut pl, &mut p, 1, T0), Verdict::Consumed);
    assert_eq!(pl.events, vec![confirmed4.clone()]);
    // The same reply twice in one burst: one event.
    let mut p = VecPacket::from_bytes(&eth(R1, NEW, None, 0x0806, &rep));
    assert_eq!(run(&mut pl, &mut p, 1, T0), Verdict::Consumed);
    assert_eq!(pl.events, vec![confirmed4.clone()]);
    assert_eq!(local(&pl, Local::NeighbourConfirmed), 1);
    pl.events.clear();
    // A request from it (answered) is not an answer to ours.
    let req = arp(1, NEW, v4("10.1.0.77"), [0; 6], v4("10.1.0.1"));
    let mut p = VecPacket::from_bytes(&eth([0xff; 6], NEW, None, 0x0806, &req));
    assert_eq!(run(&mut pl, &mut p, 1, T0), Verdict::Tx(1));
    assert!(pl.events.is_empty(), "{:?}", pl.events);
    // A static neighbour's reply: nothing to confirm.
    let rep = arp(2, GW1, v4("10.1.0.254"), R1, v4("10.1.0.1"));
    let mut p = VecPacket::from_bytes(&eth(R1, GW1, None, 0x0806, &rep));
    assert_eq!(run(&mut pl, &mut p, 1, T0), Verdict::Consumed);
    assert!(pl.events.is_empty());
    // NA: solicited confirms, unsolicited (O only) does not.
    let src = v6("2001:db8:1::77");
    let ours = v6("2001:db8:1::1");
    let na = |flags: u8| {
        let mut body = vec![flags, 0, 0, 0];
        body.extend_from_slice(&src.octets());
        body.extend_from_slice(&[2, 1]);
        body.extend_from_slice(&NEW);
        frame6(R1, NEW, None, &ipv6(src, ours, 255, 58, &icmpv6(src, ours, 136, 0, &body)))
    };
    let mut p = VecPacket::from_bytes(&na(0x20));
    assert_eq!(run(&mut pl, &mut p, 1, T0), Verdict::Consumed);
    assert!(pl.events.is_empty(), "{:?}", pl.events);
    let mut p = VecPacket::from_bytes(&na(0x60));
    assert_eq!(run(&mut pl, &mut p, 1, T0), Verdict::Consumed);
    assert_eq!(pl.events, vec![confirmed6.clone()]);
    assert_eq!(local(&pl, Local::NeighbourConfirmed), 2);
    // A changed MAC in an answer is news, not a confirmation.
    pl.events.clear();
    let rep = arp(2, NEW2, v4("10.1.0.77"), R1, v4("10.1.0.1"));
    let mut p = VecPacket::from_bytes(&eth(R1, NEW2, None, 0x0806, &rep));
    assert_eq!(run(&mut pl, &mut p, 1, T0), Verdict::Consumed);
    assert_eq!(pl.events, vec![Event::NeighbourLearned { iface: 1, ip: IpAddr::V4(v4("10.1.0.77")), mac: NEW2, answer: true }]);
    assert_eq!(total_drops(&pl), 0);
}

/// Reachability probes (RFC 4861 s.7.3.3): an ARP request to the MAC the
/// table has (a broadcast one otherwise), and an NS to the address itself
/// (not its solicited-node group) with our link-layer address.
#[test]
fn build_solicit_unicast_probes() {
    let pl = pipeline_with_learned();
    let s = Solicit { iface: 1, target: IpAddr::V4(v4("10.1.0.77")), unicast: Some(NEW) };
    let mut p = VecPacket::from_bytes(&[]);
    assert_eq!(pl.build_solicit(&mut p, &s, T0), Some(1));
    let d = p.data();
    assert_eq!(d.len(), 14 + 28);
    assert_eth(d, NEW, R1, 0x0806);
    let a = &d[14..];
    assert_eq!(&a[0..8], &[0, 1, 0x08, 0x00, 6, 4, 0, 1], "ARP request");
    assert_eq!(mac_at(a, 8), R1);
    assert_eq!(&a[14..18], &[10, 1, 0, 1]);
    assert_eq!(&a[18..24], &[0; 6]);
    assert_eq!(&a[24..28], &[10, 1, 0, 77]);
    let target = v6("2001:db8:1::77");
    let s = Solicit { iface: 1, target: IpAddr::V6(target), unicast: Some(NEW) };
    let mut p = VecPacket::from_bytes(&[]);
    assert_eq!(pl.build_solicit(&mut p, &s, T0), Some(1));
    let d = p.data();
    assert_eq!(d.len(), 14 + 40 + 32);
    assert_eth(d, NEW, R1, 0x86dd);
    let ip = &d[14..];
    assert_eq!(ip[7], 255, "hop limit 255");
    assert_eq!(Ipv6Addr::from(<[u8; 16]>::try_from(&ip[8..24]).unwrap()), v6("2001:db8:1::1"));
    assert_eq!(Ipv6Addr::from(<[u8; 16]>::try_from(&ip[24..40]).unwrap()), target, "to the address itself");
    let m = &ip[40..];
    assert_eq!(&m[0..2], &[135, 0]);
    assert_eq!(&m[8..24], &target.octets());
    assert_eq!(&m[24..26], &[1, 1], "SLLAO");
    assert_eq!(mac_at(m, 26), R1);
    icmpv6_ok(ip);
    assert_eq!((local(&pl, Local::ArpRequestSent), local(&pl, Local::NsSent)), (1, 1));
}

/// A neighbour the worker learned but the control thread never took up
/// (refused at its learn limit, or its event lost) is dropped after a few
/// snapshots without it, so it cannot escape reachability detection.
#[test]
fn learned_overlay_is_dropped_when_never_taken_up() {
    let mut pl = pipeline();
    let rep = arp(2, NEW, v4("10.1.0.99"), R1, v4("10.1.0.1"));
    let mut p = VecPacket::from_bytes(&eth(R1, NEW, None, 0x0806, &rep));
    assert_eq!(run(&mut pl, &mut p, 1, T0), Verdict::Consumed);
    let ip = ipv4(v4("10.0.0.2"), v4("198.51.100.7"), 64, 17, &udp(16));
    let f = frame4(R0, H0, None, &ip);
    for k in 0..4 {
        pl.set_neighbours(Arc::new(neighbours()));
        let mut p = VecPacket::from_bytes(&f);
        assert_eq!(run(&mut pl, &mut p, 0, T0 + k), Verdict::Tx(1), "snapshot {k}");
    }
    pl.set_neighbours(Arc::new(neighbours()));
    let mut p = VecPacket::from_bytes(&f);
    assert_eq!(run(&mut pl, &mut p, 0, T0 + 10 * SEC), Verdict::Drop(Drop::NeighbourMiss), "resolved anew");
}
