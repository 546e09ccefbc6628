//! The burst fast path (`Pipeline::fast_burst`) against the full pipeline
//! (`Pipeline::process`), on plain byte buffers.
//!
//! The rule: a packet the fast path forwards must come out byte for byte as
//! the full pipeline forwards it, on the same port; a packet it leaves to
//! the slow path must be untouched. Checked on hand-picked cases (each
//! reason to leave a packet alone) and on random frames (proptest) built
//! from valid transit packets with fields mutated. The output bytes of the
//! common case are also checked directly (MACs, TTL / Hop Limit, IPv4
//! checksum recomputed over the header).
//!
//! At the end, the paths where fragmentation (`crate::frag`) meets local
//! replies and SRv6 policies, from a review of the fast path and the
//! fragmentation code (which found no disagreement between fast path and
//! pipeline, nor fault in the fragments themselves).

mod support;
use support::{conn, iface, via};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use dataplane::counters::{Drop, WorkerCounters};
use dataplane::fastpath::SLOW;
use dataplane::nud::UsedBits;
use dataplane::packet::{PacketBuffer, VecPacket};
use dataplane::pipeline::{Pipeline, PipelineConfig, Verdict};
use dataplane::srv6::{Behaviour, EncapMode, SidTable, SrPolicy};
use dataplane::tables::{Fib, MacAddr, NeighSource, Neighbours, Route, Topology, Urpf};
use dataplane::wire::checksum;
use dataplane::wire::params::Params;
use proptest::prelude::*;

const R0: MacAddr = [0x02, 0, 0, 0, 0, 0x10];
const R1: MacAddr = [0x02, 0, 0, 0, 0, 0x11];
const R2: MacAddr = [0x02, 0, 0, 0, 0, 0x12];
const R3: MacAddr = [0x02, 0, 0, 0, 0, 0x13];
const GW1: MacAddr = [0x00, 0x11, 0x22, 0x01, 0x00, 0xfe];
const GW2: MacAddr = [0x00, 0x11, 0x22, 0x02, 0x00, 0xfe];
const GW3: MacAddr = [0x00, 0x11, 0x22, 0x03, 0x00, 0xfe];
const HOST: MacAddr = [0x00, 0x11, 0x22, 0x00, 0x00, 0x02];
const T0: u64 = 5_000_000_000;

fn topology() -> Topology {
    let p0 = iface("p0", 0, None, R0, 1500, &["10.0.0.1/24", "2001:db8::1/64"]);
    let p1 = iface("p1", 1, None, R1, 1500, &["10.1.0.1/24", "2001:db8:1::1/64"]);
    let p2 = iface("p2.100", 2, Some(100), R2, 1500, &["10.2.0.1/24", "2001:db8:2::1/64"]);
    let p3 = iface("p3", 3, None, R3, 600, &["10.3.0.1/24", "2001:db8:3::1/64"]);
    Topology::new(vec![p0, p1, p2, p3])
}

fn fib() -> Fib {
    let mut f = Fib::default();
    for (i, p) in ["10.0.0.0/24", "10.1.0.0/24", "10.2.0.0/24", "10.3.0.0/24"].iter().enumerate() {
        f.insert4(p.parse().unwrap(), conn(i as u16));
    }
    for (i, p) in ["2001:db8::/64", "2001:db8:1::/64", "2001:db8:2::/64", "2001:db8:3::/64"].iter().enumerate() {
        f.insert6(p.parse().unwrap(), conn(i as u16));
    }
    f.insert4("0.0.0.0/0".parse().unwrap(), via(1, "10.1.0.254"));
    f.insert4("192.0.2.0/24".parse().unwrap(), via(1, "10.1.0.254"));
    f.insert4("192.0.2.128/25".parse().unwrap(), via(2, "10.2.0.254"));
    f.insert4("198.51.100.0/24".parse().unwrap(), via(3, "10.3.0.254"));
    f.insert4("203.0.113.0/24".parse().unwrap(), via(1, "10.1.0.99")); // unresolved
    f.insert6("::/0".parse().unwrap(), via(1, "2001:db8:1::fe"));
    f.insert6("2001:db8:100::/48".parse().unwrap(), via(1, "2001:db8:1::fe"));
    f.insert6("2001:db8:100:1::/64".parse().unwrap(), via(2, "2001:db8:2::fe"));
    f.insert6("2001:db8:100:1:8000::/65".parse().unwrap(), via(3, "2001:db8:3::fe"));
    f.insert6("2001:db8:200::/48".parse().unwrap(), via(1, "2001:db8:1::99")); // unresolved
    // ECMP: p1 (weight 1), p3 (weight 2, MTU 600), back out of p0 and an
    // unresolved gateway; and one over two resolved gateways, 1:2.
    let mix4 = [(via(1, "10.1.0.254"), 1), (via(3, "10.3.0.254"), 2), (via(0, "10.0.0.2"), 1), (via(1, "10.1.0.99"), 1)];
    let mix6 = [(via(1, "2001:db8:1::fe"), 1), (via(3, "2001:db8:3::fe"), 2), (via(0, "2001:db8::2"), 1), (via(1, "2001:db8:1::99"), 1)];
    f.insert("100.64.0.0/16".parse().unwrap(), Route::multipath(mix4.to_vec()).unwrap());
    f.insert("2001:db8:300::/48".parse().unwrap(), Route::multipath(mix6.to_vec()).unwrap());
    f.insert("100.65.0.0/16".parse().unwrap(), Route::multipath(vec![(via(1, "10.1.0.254"), 1), (via(3, "10.3.0.254"), 2)]).unwrap());
    f.insert("2001:db8:301::/48".parse().unwrap(), Route::multipath(vec![(via(1, "2001:db8:1::fe"), 1), (via(3, "2001:db8:3::fe"), 2)]).unwrap());
    f.set_seed(0x0dc1_7e57_5eed);
    f
}

fn neighbours() -> Neighbours {
    let mut n = Neighbours::default();
    for (i, ip, mac) in [
        (0, "10.0.0.2", HOST),
        (0, "2001:db8::2", HOST),
        (1, "10.1.0.254", GW1),
        (1, "2001:db8:1::fe", GW1),
        (2, "10.2.0.254", GW2),
        (2, "2001:db8:2::fe", GW2),
        (3, "10.3.0.254", GW3),
        (3, "2001:db8:3::fe", GW3),
    ] {
        n.learn(i, ip.parse().unwrap(), mac, NeighSource::Static);
    }
    n
}

const SID_END: &str = "fc00:0:1::1";

fn pipeline() -> Pipeline {
    let mut p = Pipeline::new(
        Arc::new(topology()),
        Arc::new(fib()),
        Arc::new(neighbours()),
        Arc::new(WorkerCounters::default()),
        PipelineConfig::default(),
    );
    let mut t = SidTable::new(&Params::DEFAULT);
    t.insert(SID_END.parse().unwrap(), Behaviour::End);
    p.set_sids(Arc::new(t));
    p
}

fn frame6(dst_mac: MacAddr, src: Ipv6Addr, dst: Ipv6Addr, nh: u8, hop: u8, payload: usize) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&dst_mac);
    f.extend_from_slice(&HOST);
    f.extend_from_slice(&[0x86, 0xdd]);
    f.extend_from_slice(&[0x60, 0x00, 0x00, 0x00]);
    f.extend_from_slice(&(payload as u16).to_be_bytes());
    f.extend_from_slice(&[nh, hop]);
    f.extend_from_slice(&src.octets());
    f.extend_from_slice(&dst.octets());
    f.extend((0..payload).map(|i| i as u8));
    f
}

fn frame4(dst_mac: MacAddr, src: Ipv4Addr, dst: Ipv4Addr, ttl: u8, payload: usize) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&dst_mac);
    f.extend_from_slice(&HOST);
    f.extend_from_slice(&[0x08, 0x00]);
    let mut h = [0u8; 20];
    h[0] = 0x45;
    h[1] = 0x02; // ECT(0)
    h[2..4].copy_from_slice(&((20 + payload) as u16).to_be_bytes());
    h[4..6].copy_from_slice(&[0x12, 0x34]);
    h[6] = 0x40;
    h[8] = ttl;
    h[9] = 17;
    h[12..16].copy_from_slice(&src.octets());
    h[16..20].copy_from_slice(&dst.octets());
    let c = checksum::checksum(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&h);
    f.extend((0..payload).map(|i| (i * 7) as u8));
    f
}

/// Run a burst through the fast path and each packet through the full
/// pipeline on a fresh copy; assert the rule. Returns the fast path's
/// output ports.
fn check_burst(frames: &[Vec<u8>], port: u16) -> Vec<u16> {
    check_burst_urpf(frames, port, Urpf::Off)
}

/// A pipeline whose port p0 (untagged) checks sources with `mode`.
fn pipeline_urpf(mode: Urpf) -> Pipeline {
    let mut pl = pipeline();
    let mut t = (*pl.topo).clone();
    t.interfaces[0].urpf = mode;
    pl.topo = Arc::new(t);
    pl
}

/// [`check_burst`] with uRPF `mode` on p0. A packet the fast path leaves
/// alone is not checked against the full pipeline's verdict (the rule only
/// binds what the fast path forwards).
fn check_burst_urpf(frames: &[Vec<u8>], port: u16, mode: Urpf) -> Vec<u16> {
    let mut fast = pipeline_urpf(mode);
    let mut slow = pipeline_urpf(mode);
    let mut bufs: Vec<Vec<u8>> = frames.to_vec();
    let mut out = vec![0u16; frames.len()];
    {
        let mut views: Vec<&mut [u8]> = bufs.iter_mut().map(|b| b.as_mut_slice()).collect();
        let n = fast.fast_burst(port, &mut views, &mut out);
        assert_eq!(n, out.iter().filter(|&&o| o != SLOW).count());
    }
    for (i, f) in frames.iter().enumerate() {
        if out[i] == SLOW {
            assert_eq!(&bufs[i], f, "packet {i}: left to the slow path but changed");
            continue;
        }
        let mut p = VecPacket::from_bytes(f);
        let v = slow.process(&mut p, port, T0);
        assert_eq!(v, Verdict::Tx(out[i]), "packet {i}: the full pipeline decides otherwise");
        assert_eq!(p.data(), &bufs[i][..], "packet {i}: bytes differ from the full pipeline's");
    }
    out
}

fn v6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}
fn v4(s: &str) -> Ipv4Addr {
    s.parse().unwrap()
}

#[test]
fn transit_packets_take_the_fast_path_with_the_right_bytes() {
    let src6 = v6("2001:db8::2");
    let src4 = v4("10.0.0.2");
    let frames = vec![
        frame6(R0, src6, v6("2001:db8:100::5"), 17, 64, 64),       // /48 -> p1
        frame6(R0, src6, v6("2001:db8:100:1::5"), 17, 64, 64),     // /64 -> VLAN egress: slow
        frame6(R0, src6, v6("2001:db8:100:1:8000::5"), 6, 2, 200), // /65 -> p3
        frame6(R0, src6, v6("2001:db8:7777::1"), 17, 64, 64),      // default -> p1
        frame4(R0, src4, v4("192.0.2.7"), 64, 100),                // /24 -> p1
        frame4(R0, src4, v4("192.0.2.200"), 64, 100),              // /25 -> VLAN: slow
        frame4(R0, src4, v4("198.51.100.9"), 2, 40),               // -> p3
        frame4(R0, src4, v4("8.8.8.8"), 255, 0),                   // default -> p1
    ];
    let out = check_burst(&frames, 0);
    assert_eq!(out, vec![1, SLOW, 3, 1, 1, SLOW, 3, 1]);
    // The bytes directly: next-hop MAC, our MAC, Hop Limit / TTL - 1, a
    // correct IPv4 header checksum.
    let mut pl = pipeline();
    let mut bufs = frames.clone();
    let mut o = vec![0u16; bufs.len()];
    let mut views: Vec<&mut [u8]> = bufs.iter_mut().map(|b| b.as_mut_slice()).collect();
    pl.fast_burst(0, &mut views, &mut o);
    assert_eq!(&bufs[0][0..6], &GW1);
    assert_eq!(&bufs[0][6..12], &R1);
    assert_eq!(bufs[0][14 + 7], 63);
    assert_eq!(&bufs[0][14 + 8..], &frames[0][14 + 8..]);
    assert_eq!(&bufs[2][0..12], &[GW3, R3].concat()[..]);
    assert_eq!(bufs[2][14 + 7], 1);
    assert_eq!(&bufs[6][0..12], &[GW3, R3].concat()[..]);
    assert_eq!(bufs[6][14 + 8], 1);
    for i in [4, 6, 7] {
        let h = &bufs[i][14..34];
        assert_eq!(checksum::checksum(h), 0, "packet {i}: IPv4 header checksum");
        assert_eq!(h[8], frames[i][14 + 8] - 1);
        assert_eq!(&bufs[i][34..], &frames[i][34..]);
    }
}

#[test]
fn every_reason_to_leave_a_packet_to_the_slow_path() {
    let src6 = v6("2001:db8::2");
    let src4 = v4("10.0.0.2");
    let mut bad_sum = frame4(R0, src4, v4("192.0.2.7"), 64, 10);
    bad_sum[24] ^= 1;
    let mut options = frame4(R0, src4, v4("192.0.2.7"), 64, 10);
    options[14] = 0x46;
    let mut short6 = frame6(R0, src6, v6("2001:db8:100::5"), 17, 64, 64);
    short6.truncate(14 + 40 + 10); // payload length says 64
    let mut vlan = frame6(R0, src6, v6("2001:db8:100::5"), 17, 64, 16);
    vlan.splice(12..12, [0x81, 0x00, 0x00, 0x64]);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("hop limit 1", frame6(R0, src6, v6("2001:db8:100::5"), 17, 1, 16)),
        ("ttl 1", frame4(R0, src4, v4("192.0.2.7"), 1, 16)),
        ("ttl 0", frame4(R0, src4, v4("192.0.2.7"), 0, 16)),
        ("other MAC", frame6([2, 0, 0, 0, 0, 0x99], src6, v6("2001:db8:100::5"), 17, 64, 16)),
        ("broadcast MAC", frame4([0xff; 6], src4, v4("192.0.2.7"), 64, 16)),
        ("VLAN tag", vlan),
        ("ICMPv6", frame6(R0, src6, v6("2001:db8:100::5"), 58, 64, 16)),
        ("FANN over UDP (its own Hop Limit)", {
            let mut f = frame6(R0, src6, v6("2001:db8:100::5"), 17, 64, 16);
            f[14 + 42..14 + 44].copy_from_slice(&dataplane::wire::params::Params::DEFAULT.fann_udp_port.to_be_bytes());
            f
        }),
        ("our address", frame6(R0, src6, v6("2001:db8:1::1"), 17, 64, 16)),
        ("our link-local", frame6(R0, src6, v6("fe80::1"), 17, 64, 16)),
        ("SID", frame6(R0, src6, v6(SID_END), 17, 64, 16)),
        ("multicast dst", frame6(R0, src6, v6("ff0e::1"), 17, 64, 16)),
        ("loopback dst", frame6(R0, src6, v6("::1"), 17, 64, 16)),
        ("link-local src", frame6(R0, v6("fe80::2"), v6("2001:db8:100::5"), 17, 64, 16)),
        ("unspecified src", frame6(R0, v6("::"), v6("2001:db8:100::5"), 17, 64, 16)),
        ("unresolved gateway 6", frame6(R0, src6, v6("2001:db8:200::5"), 17, 64, 16)),
        ("connected 6", frame6(R0, src6, v6("2001:db8:1::2"), 17, 64, 16)),
        ("truncated 6", short6),
        ("bad IPv4 checksum", bad_sum),
        ("IPv4 options", options),
        ("our IPv4 address", frame4(R0, src4, v4("10.1.0.1"), 64, 16)),
        ("subnet broadcast", frame4(R0, src4, v4("10.1.0.255"), 64, 16)),
        ("limited broadcast", frame4(R0, src4, v4("255.255.255.255"), 64, 16)),
        ("multicast 4", frame4(R0, src4, v4("239.1.1.1"), 64, 16)),
        ("loopback src 4", frame4(R0, v4("127.0.0.1"), v4("192.0.2.7"), 64, 16)),
        ("zero src 4", frame4(R0, v4("0.0.0.0"), v4("192.0.2.7"), 64, 16)),
        ("unresolved gateway 4", frame4(R0, src4, v4("203.0.113.1"), 64, 16)),
        ("connected 4", frame4(R0, src4, v4("10.1.0.2"), 64, 16)),
        ("over the egress MTU 4", frame4(R0, src4, v4("198.51.100.9"), 64, 700)),
        ("over the egress MTU 6", frame6(R0, src6, v6("2001:db8:100:1:8000::5"), 17, 64, 700)),
        ("ARP", {
            let mut f = frame4([0xff; 6], src4, v4("10.0.0.1"), 64, 16);
            f[12..14].copy_from_slice(&[0x08, 0x06]);
            f
        }),
        ("runt", vec![0u8; 20]),
    ];
    let frames: Vec<Vec<u8>> = cases.iter().map(|(_, f)| f.clone()).collect();
    let out = check_burst(&frames, 0);
    for ((name, _), o) in cases.iter().zip(&out) {
        assert_eq!(*o, SLOW, "{name}: should be left to the slow path");
    }
    // A packet received on a port without an untagged interface.
    let f = frame6(R2, src6, v6("2001:db8:100::5"), 17, 64, 16);
    assert_eq!(check_burst(&[f], 2), vec![SLOW]);
}

#[test]
fn policies_and_table_changes_are_seen_at_once() {
    let src6 = v6("2001:db8::2");
    let f = frame6(R0, src6, v6("2001:db8:100::5"), 17, 64, 16);
    let mut pl = pipeline();
    let run = |pl: &mut Pipeline| {
        let mut b = f.clone();
        let mut o = [0u16; 1];
        pl.fast_burst(0, &mut [b.as_mut_slice()], &mut o);
        o[0]
    };
    assert_eq!(run(&mut pl), 1);
    // A new SID equal to the destination: slow path from the next burst.
    let mut t = SidTable::new(&Params::DEFAULT);
    t.insert(v6("2001:db8:100::5"), Behaviour::End);
    pl.set_sids(Arc::new(t));
    assert_eq!(run(&mut pl), SLOW);
    // SR policies (H.Encaps steering): what they steer goes to the slow
    // path (which encapsulates it), the rest stays fast; both agree with
    // the full pipeline.
    let policies = || {
        let mut t = SidTable::new(&Params::DEFAULT);
        t.add_policy(
            "2001:db8:300::/48".parse().unwrap(),
            SrPolicy::new(v6("2001:db8:1::1"), EncapMode::Encaps, vec![(vec![v6("fc00:0:9::1")], 1)]).unwrap(),
        );
        t.add_policy(
            "198.51.100.0/24".parse().unwrap(),
            SrPolicy::new(v6("2001:db8:1::1"), EncapMode::Encaps, vec![(vec![v6("fc00:0:9::1")], 1)]).unwrap(),
        );
        Arc::new(t)
    };
    pl.set_sids(policies());
    assert_eq!(run(&mut pl), 1);
    let steered = [
        frame6(R0, src6, v6("2001:db8:300::5"), 17, 64, 16),
        frame4(R0, v4("10.0.0.2"), v4("198.51.100.9"), 64, 16),
    ];
    let plain = [frame6(R0, src6, v6("2001:db8:100::5"), 17, 64, 16), frame4(R0, v4("10.0.0.2"), v4("192.0.2.7"), 64, 16)];
    let mut bufs: Vec<Vec<u8>> = steered.iter().chain(&plain).cloned().collect();
    let mut o = [0u16; 4];
    {
        let mut views: Vec<&mut [u8]> = bufs.iter_mut().map(|b| b.as_mut_slice()).collect();
        pl.fast_burst(0, &mut views, &mut o);
    }
    assert_eq!(o, [SLOW, SLOW, 1, 1]);
    assert_eq!(&bufs[..2], &steered[..], "steered packets left untouched");
    let mut full = pipeline();
    full.set_sids(policies());
    for (i, f) in steered.iter().chain(&plain).enumerate() {
        let mut p = VecPacket::from_bytes(f);
        let v = full.process(&mut p, 0, T0);
        if i < 2 {
            assert_eq!(v, Verdict::Tx(1), "the full pipeline encapsulates it");
            assert_eq!(p.data()[12..14], [0x86, 0xdd]);
            assert_eq!(p.data()[14 + 6], 43, "outer IPv6 + SRH");
        } else {
            assert_eq!(v, Verdict::Tx(o[i]));
            assert_eq!(p.data(), &bufs[i][..]);
        }
    }
    pl.set_sids(Arc::new(SidTable::new(&Params::DEFAULT)));
    assert_eq!(run(&mut pl), 1);
    // A table at the address of the one the fast path was built for (a
    // freed snapshot's memory reused by the next): still a new table. Here
    // the same allocation comes back with a SID added.
    let mut old = pl.set_sids(Arc::new(SidTable::new(&Params::DEFAULT)));
    let at = Arc::as_ptr(&old);
    Arc::get_mut(&mut old).expect("the only reference").insert(v6("2001:db8:100::5"), Behaviour::End);
    pl.set_sids(old);
    assert_eq!(Arc::as_ptr(&pl.sids), at);
    assert_eq!(run(&mut pl), SLOW, "the new SID is seen although the table's address is the old one");
    pl.set_sids(Arc::new(SidTable::new(&Params::DEFAULT)));
    assert_eq!(run(&mut pl), 1);
    // A new FIB moves the prefix.
    let mut f2 = fib();
    f2.insert6("2001:db8:100::/48".parse().unwrap(), via(3, "2001:db8:3::fe"));
    pl.set_fib(Arc::new(f2));
    assert_eq!(run(&mut pl), 3);
    // The gateway's neighbour entry goes away: slow path (which resolves).
    let mut n = neighbours();
    n.remove(3, "2001:db8:3::fe".parse().unwrap());
    pl.set_neighbours(Arc::new(n));
    assert_eq!(run(&mut pl), SLOW);
}

/// uRPF on the arrival port (BCP 38): the fast path forwards what passes
/// the check, leaves what fails it to the slow path, which drops it as
/// urpf-failed; loose and strict differ where the route to the source
/// leaves by another port.
#[test]
fn urpf_ports_keep_the_fast_path_for_good_sources() {
    // Sources: p0's subnet (strict and loose pass), routed out of p1
    // (loose only: the /48 and the default route), no route at all is
    // impossible here for IPv6 / IPv4 (default routes), so a FIB without
    // them is used for that case below.
    let dst6 = v6("2001:db8:100::5");
    let dst4 = v4("192.0.2.7");
    let frames = vec![
        frame6(R0, v6("2001:db8::2"), dst6, 17, 64, 64),
        frame6(R0, v6("2001:db8:100::9"), dst6, 17, 64, 64),
        frame6(R0, v6("2001:db8:1::9"), dst6, 17, 64, 64),
        frame4(R0, v4("10.0.0.2"), dst4, 64, 40),
        frame4(R0, v4("192.0.2.9"), dst4, 64, 40),
        frame4(R0, v4("10.3.0.7"), dst4, 64, 40),
    ];
    assert_eq!(check_burst_urpf(&frames, 0, Urpf::Strict), vec![1, SLOW, SLOW, 1, SLOW, SLOW]);
    assert_eq!(check_burst_urpf(&frames, 0, Urpf::Loose), vec![1; 6]);
    assert_eq!(check_burst_urpf(&frames, 0, Urpf::Off), vec![1; 6]);
    // What strict left alone, the full pipeline drops by name (the worker
    // counts the verdict as urpf-failed).
    let mut pl = pipeline_urpf(Urpf::Strict);
    for i in [1, 2, 4, 5] {
        let mut p = VecPacket::from_bytes(&frames[i]);
        assert_eq!(pl.process(&mut p, 0, T0), Verdict::Drop(dataplane::counters::Drop::UrpfFailed), "packet {i}");
    }
    // Loose without default routes: a source with no route stays slow.
    let mut f = fib();
    f.remove6(&"::/0".parse().unwrap());
    f.remove4(&"0.0.0.0/0".parse().unwrap());
    let mut pl = pipeline_urpf(Urpf::Loose);
    pl.set_fib(Arc::new(f));
    let burst = [frame6(R0, v6("2001:db9::1"), dst6, 17, 64, 16), frame6(R0, v6("2001:db8:100::9"), dst6, 17, 64, 16), frame4(R0, v4("8.8.8.8"), dst4, 64, 16), frame4(R0, v4("192.0.2.9"), dst4, 64, 16)];
    let mut bufs: Vec<Vec<u8>> = burst.to_vec();
    let mut o = [0u16; 4];
    {
        let mut views: Vec<&mut [u8]> = bufs.iter_mut().map(|b| b.as_mut_slice()).collect();
        pl.fast_burst(0, &mut views, &mut o);
    }
    assert_eq!(o, [SLOW, 1, SLOW, 1]);
    assert_eq!(&bufs[0], &burst[0], "left untouched");
    assert_eq!(&bufs[2], &burst[2], "left untouched");
    for i in [0, 2] {
        let mut p = VecPacket::from_bytes(&burst[i]);
        assert_eq!(pl.process(&mut p, 0, T0), Verdict::Drop(dataplane::counters::Drop::UrpfFailed), "packet {i}: no route to its source");
    }
    // A FIB change moves a source's route to p0: strict lets it through
    // from the next burst.
    let mut pl = pipeline_urpf(Urpf::Strict);
    let run = |pl: &mut Pipeline| {
        let mut b = frames[1].clone();
        let mut o = [0u16; 1];
        pl.fast_burst(0, &mut [b.as_mut_slice()], &mut o);
        o[0]
    };
    assert_eq!(run(&mut pl), SLOW);
    let mut f = fib();
    f.insert6("2001:db8:100::/48".parse().unwrap(), via(0, "2001:db8::2"));
    f.insert6("2001:db8:100:1::/64".parse().unwrap(), via(0, "2001:db8::2"));
    f.insert6("2001:db8:100:1:8000::/65".parse().unwrap(), via(0, "2001:db8::2"));
    pl.set_fib(Arc::new(f));
    // The destination moved to p0 as well: the packet goes back out of
    // p0, by the fast path, to the gateway HOST.
    assert_eq!(run(&mut pl), 0);
}

/// Write UDP source and destination ports from `x` at frame offset `at`
/// (when the frame is long enough).
fn ports(f: &mut [u8], at: usize, x: u64) {
    if let Some(p) = f.get_mut(at..at + 4) {
        p.copy_from_slice(&(x as u32).to_be_bytes());
    }
}

/// ECMP: every flow keeps one next hop, the flows spread over the next
/// hops in proportion to their weights (1:2), and the fast path picks the
/// same next hop as the full pipeline (check_burst), for IPv4 and IPv6.
#[test]
fn ecmp_routes_spread_flows_by_weight_and_keep_each_flow_on_one_next_hop() {
    let mut count = std::collections::HashMap::<(bool, [u8; 6]), usize>::new();
    let mut seen = std::collections::HashMap::<(bool, u32), [u8; 6]>::new();
    for round in 0..2 {
        for b in 0..64u32 {
            let frames: Vec<Vec<u8>> = (0..32u32)
                .map(|k| {
                    let flow = b * 32 + k;
                    // RoCEv2: UDP source port = entropy, destination 4791.
                    let pp = (u64::from(49152 + flow % 16384) << 16) | 4791;
                    // The second round changes what is not the flow: Hop
                    // Limit / TTL, length, payload.
                    let (hop, len) = if round == 0 { (64, 64) } else { (9, 200) };
                    if k % 2 == 0 {
                        let mut f = frame6(R0, v6("2001:db8::2"), v6("2001:db8:301::5"), 17, hop, len);
                        ports(&mut f, 54, pp);
                        f
                    } else {
                        let mut f = frame4(R0, v4("10.0.0.2"), v4("100.65.0.5"), hop, len);
                        ports(&mut f, 34, pp);
                        f
                    }
                })
                .collect();
            let out = check_burst(&frames, 0);
            let mut bufs = frames.clone();
            let mut o = vec![0u16; 32];
            let mut pl = pipeline();
            let mut views: Vec<&mut [u8]> = bufs.iter_mut().map(|b| b.as_mut_slice()).collect();
            pl.fast_burst(0, &mut views, &mut o);
            assert_eq!(o, out);
            for (k, f) in bufs.iter().enumerate() {
                let is6 = k % 2 == 0;
                assert_ne!(o[k], SLOW, "flow {k}: resolved ECMP next hops take the fast path");
                let mac: [u8; 6] = f[0..6].try_into().unwrap();
                let (port, ours) = if mac == GW1 { (1, R1) } else { (3, R3) };
                assert!(mac == GW1 || mac == GW3, "flow {k}: next hop {mac:02x?}");
                assert_eq!(o[k], port);
                assert_eq!(&f[6..12], &ours);
                let flow = b * 32 + k as u32;
                if round == 0 {
                    *count.entry((is6, mac)).or_default() += 1;
                    seen.insert((is6, flow), mac);
                } else {
                    assert_eq!(seen[&(is6, flow)], mac, "flow {flow}: moved to another next hop");
                }
            }
        }
    }
    for is6 in [false, true] {
        let (a, b) = (count[&(is6, GW1)], count[&(is6, GW3)]);
        // 1024 flows, weights 1:2: expect 341 / 683; binomial sd ~15.
        assert!((280..=400).contains(&a) && a + b == 1024, "IPv6 {is6}: {a} flows on weight 1, {b} on weight 2");
    }
    // Another seed (another router) splits the same flows differently.
    let mut pl = pipeline();
    let mut f = fib();
    f.set_seed(0x1234_5678_9abc_def0);
    pl.set_fib(Arc::new(f));
    let mut moved = 0;
    for flow in 0..256u32 {
        let mut fr = frame6(R0, v6("2001:db8::2"), v6("2001:db8:301::5"), 17, 64, 64);
        ports(&mut fr, 54, (u64::from(49152 + flow) << 16) | 4791);
        let mut o = [0u16; 1];
        pl.fast_burst(0, &mut [fr.as_mut_slice()], &mut o);
        assert_ne!(o[0], SLOW, "flow {flow}");
        // The IPv6 flows of the rounds above are the even ones.
        if seen.get(&(true, flow)).is_some_and(|m| m[..] != fr[0..6]) {
            moved += 1;
        }
    }
    // Independent splits at 1:2 differ for 4/9 of the flows (~57 of 128).
    assert!(moved > 30, "only {moved} of 128 flows moved with another seed");
}

/// A source that is one of the router's own addresses (spoofed, or a
/// loop) is a martian: the fast path leaves it, the full pipeline drops
/// it by name and does not forward it.
#[test]
fn sources_that_are_the_routers_own_addresses_are_martians() {
    let frames = vec![
        frame6(R0, v6("2001:db8::1"), v6("2001:db8:100::5"), 17, 64, 64),
        frame6(R0, v6("2001:db8:1::1"), v6("2001:db8:100::5"), 17, 64, 64),
        frame4(R0, v4("10.0.0.1"), v4("192.0.2.7"), 64, 40),
        frame4(R0, v4("10.3.0.1"), v4("192.0.2.7"), 64, 40),
        frame6(R0, v6("2001:db8::3"), v6("2001:db8:100::5"), 17, 64, 64),
    ];
    assert_eq!(check_burst(&frames, 0), vec![SLOW, SLOW, SLOW, SLOW, 1]);
    let mut pl = pipeline();
    for (i, want) in [(0, Drop::Ipv6Martian), (1, Drop::Ipv6Martian), (2, Drop::Ipv4Martian), (3, Drop::Ipv4Martian)] {
        let mut p = VecPacket::from_bytes(&frames[i]);
        assert_eq!(pl.process(&mut p, 0, T0), Verdict::Drop(want), "packet {i}");
    }
}

/// uRPF strict on an ECMP route: a source passes when any of its route's
/// next hops leaves by the arrival interface (RFC 3704 s.2.2), on the
/// fast path and in the full pipeline alike.
#[test]
fn urpf_strict_accepts_any_next_hop_of_an_ecmp_route() {
    let dst6 = v6("2001:db8:100::5");
    let dst4 = v4("192.0.2.7");
    let frames = vec![
        frame6(R0, v6("2001:db8:300::9"), dst6, 17, 64, 64), // ECMP with a next hop via p0
        frame6(R0, v6("2001:db8:301::9"), dst6, 17, 64, 64), // ECMP via p1 and p3 only
        frame4(R0, v4("100.64.0.9"), dst4, 64, 40),
        frame4(R0, v4("100.65.0.9"), dst4, 64, 40),
    ];
    assert_eq!(check_burst_urpf(&frames, 0, Urpf::Strict), vec![1, SLOW, 1, SLOW]);
    let mut pl = pipeline_urpf(Urpf::Strict);
    for i in [1, 3] {
        let mut p = VecPacket::from_bytes(&frames[i]);
        assert_eq!(pl.process(&mut p, 0, T0), Verdict::Drop(dataplane::counters::Drop::UrpfFailed), "packet {i}");
    }
    // Arriving on p3 (MTU 600, a member of both), strict passes all four.
    let on3: Vec<Vec<u8>> = frames.iter().map(|f| [&R3[..], &f[6..]].concat()).collect();
    let mut pl = pipeline_urpf(Urpf::Strict);
    let mut t = (*pl.topo).clone();
    t.interfaces[3].urpf = Urpf::Strict;
    pl.topo = Arc::new(t);
    for (i, f) in on3.iter().enumerate() {
        let mut p = VecPacket::from_bytes(f);
        assert!(matches!(pl.process(&mut p, 3, T0), Verdict::Tx(_)), "packet {i} from p3");
    }
}

/// An IPv4 packet without DF over the egress MTU, on an ECMP route whose
/// next hops have different MTUs (p1 1500, p3 600): its fragments hash
/// without ports, so they may go elsewhere than the whole packet would;
/// they are cut to fit where they go, and all take one next hop.
#[test]
fn fragments_on_an_ecmp_route_fit_the_next_hop_they_take() {
    // A destination whose fragments take p3 (MTU 600) while some of its
    // flows' whole packets would take p1 (MTU 1500): the case where the
    // fragments must be cut to p3's MTU, not p1's.
    let fb = fib();
    let dst = (1..=250u8)
        .map(|x| v4(&format!("100.65.0.{x}")))
        .find(|d| {
            let fr = frame4(R0, v4("10.0.0.2"), *d, 64, 1600);
            let hop = fb.route4(*d, || dataplane::tables::fragments_hash(&fr[14..], fb.seed())).unwrap();
            fb.hop(hop).unwrap().iface == 3
        })
        .expect("a destination whose fragments take p3");
    let mut whole_on_p1 = 0;
    for flow in 0..64u64 {
        let mut f = frame4(R0, v4("10.0.0.2"), dst, 64, 1600);
        ports(&mut f, 34, (flow << 16) | 4791);
        whole_on_p1 += usize::from(fb.hop(fb.route_ip(dst.into(), &f[14..]).unwrap()).unwrap().iface == 1);
    }
    assert!(whole_on_p1 > 0, "no flow's whole packet takes p1");
    let mut ports_seen = std::collections::HashSet::new();
    for flow in 0..64u64 {
        let mut f = frame4(R0, v4("10.0.0.2"), dst, 64, 1600);
        ports(&mut f, 34, (flow << 16) | 4791);
        f[14 + 6] = 0; // no DF
        f[24..26].fill(0);
        let c = checksum::checksum(&f[14..34]);
        f[24..26].copy_from_slice(&c.to_be_bytes());
        let mut pl = pipeline();
        let mut p = VecPacket::from_bytes(&f);
        let Verdict::Replicate(n) = pl.process(&mut p, 0, T0) else { panic!("flow {flow}: not fragmented") };
        let mut out = std::collections::HashSet::new();
        for i in 0..usize::from(n) {
            let mut c = VecPacket::from_bytes(&[]);
            let port = pl.build_replica(i, &p, &mut c, T0).unwrap_or_else(|e| panic!("flow {flow} fragment {i}: {e:?}"));
            let mtu = if port == 3 { 600 } else { 1500 };
            assert!(c.data().len() - 14 <= mtu, "flow {flow} fragment {i}: {} bytes out of port {port}", c.data().len() - 14);
            out.insert(port);
        }
        assert_eq!(out.len(), 1, "flow {flow}: fragments over {out:?}");
        ports_seen.extend(out);
    }
    // The fragments' hash has no ports: every flow between these two
    // hosts takes p3.
    assert_eq!(ports_seen, [3].into_iter().collect());
}

fn mutated(base: Vec<u8>, muts: &[(usize, u8)], cut: usize) -> Vec<u8> {
    let mut f = base;
    for &(pos, val) in muts {
        let l = f.len();
        f[pos % l] = val;
    }
    let keep = f.len().saturating_sub(cut % 8);
    f.truncate(keep);
    f
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]
    /// Random bursts of valid and mutated frames: whatever the fast path
    /// does agrees with the full pipeline.
    #[test]
    fn fast_path_agrees_with_the_full_pipeline(
        pkts in prop::collection::vec(
            (any::<bool>(), any::<u64>(), any::<u8>(), 0usize..300, prop::collection::vec((0usize..64, any::<u8>()), 0..3), any::<u8>()),
            1..40),
        port in 0u16..4,
        mode in 0u8..3,
        srcs in prop::collection::vec(any::<u8>(), 40),
    ) {
        let frames: Vec<Vec<u8>> = pkts
            .iter()
            .map(|(is6, a, hop, len, muts, cut)| {
                // The UDP ports (the payload's first bytes) vary too: ECMP
                // hashes them.
                let base = if *is6 {
                    let dsts = ["2001:db8:100::5", "2001:db8:100:1:8000::5", "2001:db8:7777::1", "2001:db8:1::1", "2001:db8:200::5", "2001:db8:300::5"];
                    let mut d = v6(dsts[(*a % 6) as usize]).octets();
                    d[15] ^= (*a >> 8) as u8;
                    let mut f = frame6(R0, v6("2001:db8::2"), Ipv6Addr::from(d), if *a & 1 << 20 != 0 { 58 } else { 17 }, *hop, *len);
                    ports(&mut f, 54, *a >> 32);
                    f
                } else {
                    let dsts = ["192.0.2.7", "198.51.100.9", "8.8.8.8", "10.1.0.1", "203.0.113.1", "100.64.3.4"];
                    let mut d = v4(dsts[(*a % 6) as usize]).octets();
                    d[3] ^= (*a >> 8) as u8;
                    let mut f = frame4(R0, v4("10.0.0.2"), Ipv4Addr::from(d), *hop, *len);
                    ports(&mut f, 34, *a >> 32);
                    f
                };
                mutated(base, muts, usize::from(*cut))
            })
            .enumerate()
            .map(|(i, mut f)| {
                // A source from p0's, p1's or p3's subnet, a routed
                // prefix, or the default route, for the uRPF check.
                let s = srcs[i];
                if f.len() >= 14 + 40 && f[12..14] == [0x86, 0xdd] && s & 1 != 0 {
                    let c = ["2001:db8::7", "2001:db8:1::7", "2001:db8:3::7", "2001:db8:100::7", "2001:db9::7", "2001:db8:300::7", "2001:db8:301::7"];
                    f[22..38].copy_from_slice(&v6(c[usize::from(s >> 1) % 7]).octets());
                } else if f.len() >= 14 + 20 && f[12..14] == [0x08, 0x00] && s & 1 != 0 {
                    // The IPv4 checksum is left as it is: a wrong one is
                    // one more case for the slow path.
                    let c = ["10.0.0.7", "10.1.0.7", "10.3.0.7", "192.0.2.77", "8.8.4.4", "100.64.0.7", "100.65.0.7"];
                    f[26..30].copy_from_slice(&v4(c[usize::from(s >> 1) % 7]).octets());
                    let mut h: [u8; 20] = f[14..34].try_into().unwrap();
                    h[10] = 0;
                    h[11] = 0;
                    if s & 0x80 == 0 {
                        let c = checksum::checksum(&h);
                        f[24..26].copy_from_slice(&c.to_be_bytes());
                    }
                }
                f
            })
            .collect();
        check_burst_urpf(&frames, port, [Urpf::Off, Urpf::Loose, Urpf::Strict][usize::from(mode)]);
    }
}

/// The random bursts above do exercise both paths: the same generator,
/// deterministic, with the share of packets each path took.
#[test]
fn random_bursts_exercise_both_paths() {
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let (mut fast, mut slow) = (0, 0);
    for _ in 0..200 {
        let frames: Vec<Vec<u8>> = (0..32)
            .map(|_| {
                let a = next();
                let base = if a & 1 == 0 {
                    let dsts = ["2001:db8:100::5", "2001:db8:100:1:8000::5", "2001:db8:7777::1", "2001:db8:1::1", "2001:db8:200::5"];
                    let mut d = v6(dsts[((a >> 1) % 5) as usize]).octets();
                    d[15] ^= (a >> 8) as u8;
                    frame6(R0, v6("2001:db8::2"), Ipv6Addr::from(d), if a & 1 << 20 != 0 { 58 } else { 17 }, (a >> 24) as u8, ((a >> 32) % 300) as usize)
                } else {
                    let dsts = ["192.0.2.7", "198.51.100.9", "8.8.8.8", "10.1.0.1", "203.0.113.1"];
                    let mut d = v4(dsts[((a >> 1) % 5) as usize]).octets();
                    d[3] ^= (a >> 8) as u8;
                    frame4(R0, v4("10.0.0.2"), Ipv4Addr::from(d), (a >> 24) as u8, ((a >> 32) % 300) as usize)
                };
                let m = next();
                let muts: Vec<(usize, u8)> = if m & 3 == 0 { vec![((m >> 8) as usize % 64, (m >> 16) as u8)] } else { vec![] };
                mutated(base, &muts, if m & 12 == 0 { (m >> 24) as usize } else { 0 })
            })
            .collect();
        for o in check_burst(&frames, 0) {
            if o == SLOW {
                slow += 1;
            } else {
                fast += 1;
            }
        }
    }
    println!("fast {fast} slow {slow}");
    assert!(fast > 6400 / 4, "fast path took only {fast} of 6400");
    assert!(slow > 6400 / 4, "slow path took only {slow} of 6400");
}

/// The neighbours a pipeline marked as forwarded to since the last call
/// (what the control thread's reachability detection takes).
fn marks(pl: &Pipeline) -> Vec<u32> {
    let mut v = Vec::new();
    pl.used().take(|b| v.push(b));
    v.sort_unstable();
    v
}

fn bits(keys: &[(u16, &str)]) -> Vec<u32> {
    let mut v: Vec<u32> = keys.iter().map(|(i, a)| UsedBits::bit(*i, a.parse().unwrap())).collect();
    v.sort_unstable();
    v.dedup();
    v
}

#[test]
fn forwarding_marks_the_neighbours_it_uses_on_both_paths() {
    let src6 = v6("2001:db8::2");
    let src4 = v4("10.0.0.2");
    let mut pl = pipeline();
    assert!(marks(&pl).is_empty());
    // Fast path: the gateways of the routes taken, once each however many
    // packets; the VLAN-egress packet is left alone and marks nothing.
    let mut bufs = [
        frame6(R0, src6, v6("2001:db8:100::5"), 17, 64, 64),
        frame6(R0, src6, v6("2001:db8:100::6"), 17, 64, 64),
        frame6(R0, src6, v6("2001:db8:100:1:8000::5"), 17, 64, 64),
        frame4(R0, src4, v4("192.0.2.7"), 64, 100),
        frame4(R0, src4, v4("192.0.2.200"), 64, 100),
    ];
    let mut o = vec![0u16; bufs.len()];
    let mut views: Vec<&mut [u8]> = bufs.iter_mut().map(|b| b.as_mut_slice()).collect();
    assert_eq!(pl.fast_burst(0, &mut views, &mut o), 4);
    assert_eq!(marks(&pl), bits(&[(1, "2001:db8:1::fe"), (3, "2001:db8:3::fe"), (1, "10.1.0.254")]));
    assert!(marks(&pl).is_empty(), "taken: cleared");
    // Full pipeline: a VLAN egress gateway, and a connected host (the
    // neighbour looked up by the destination itself).
    let mut p = VecPacket::from_bytes(&frame4(R0, src4, v4("192.0.2.200"), 64, 100));
    assert_eq!(pl.process(&mut p, 0, T0), Verdict::Tx(2));
    let mut p = VecPacket::from_bytes(&frame6(R1, v6("2001:db8:1::7"), v6("2001:db8::2"), 17, 64, 64));
    assert_eq!(pl.process(&mut p, 1, T0), Verdict::Tx(0));
    assert_eq!(marks(&pl), bits(&[(2, "10.2.0.254"), (0, "2001:db8::2")]));
    // A packet that cannot be sent (unresolved gateway) marks nothing.
    let mut p = VecPacket::from_bytes(&frame4(R0, src4, v4("203.0.113.1"), 64, 100));
    assert!(matches!(pl.process(&mut p, 0, T0), Verdict::Drop(_)));
    assert!(marks(&pl).is_empty());
}

fn eth(dst: MacAddr, et: [u8; 2], ip: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&dst);
    f.extend_from_slice(&HOST);
    f.extend_from_slice(&et);
    f.extend_from_slice(ip);
    f
}

/// An ICMP Echo Request (IPv4, `data` octets) from `src` to `dst`.
fn echo4(src: [u8; 4], dst: [u8; 4], data: usize, df: bool) -> Vec<u8> {
    let total = 20 + 8 + data;
    let mut h = [0u8; 20];
    h[0] = 0x45;
    h[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    h[4..6].copy_from_slice(&[0x42, 0x42]);
    h[6] = if df { 0x40 } else { 0 };
    h[8] = 64;
    h[9] = 1;
    h[12..16].copy_from_slice(&src);
    h[16..20].copy_from_slice(&dst);
    let c = checksum::checksum(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    let mut m = vec![8u8, 0, 0, 0, 0x12, 0x34, 0, 1];
    m.extend((0..data).map(|i| i as u8));
    let c = checksum::checksum(&m);
    m[2..4].copy_from_slice(&c.to_be_bytes());
    let mut ip = h.to_vec();
    ip.extend_from_slice(&m);
    ip
}

/// Rule: a local reply is fragmented only when the datagram exceeds the
/// egress MTU (RFC 791), and octets after the request's datagram (RFC
/// 894 padding or anything else) are no part of it. Was: an Echo Reply
/// that fit was "fragmented" (one fragment, DF cleared, ipv4-fragmented)
/// because `fit_reply` measured the frame, and `local4` sent the
/// requester's trailing octets back.
#[test]
fn an_echo_reply_that_fits_is_not_fragmented_because_of_trailing_octets() {
    let mut pl = pipeline_urpf(Urpf::Off);
    // From behind p3 (MTU 600) to p0's address; 100-octet datagram in a
    // frame with 600 octets after it.
    let mut ip = echo4([198, 51, 100, 9], [10, 0, 0, 1], 72, true);
    let plain = eth(R0, [8, 0], &ip);
    ip.extend(std::iter::repeat_n(0xee, 600));
    let padded = eth(R0, [8, 0], &ip);
    let mut p = VecPacket::from_bytes(&plain);
    assert_eq!(pl.process(&mut p, 0, T0), Verdict::Tx(3), "the same reply without the trailing octets");
    let mut p = VecPacket::from_bytes(&padded);
    let v = pl.process(&mut p, 0, T0);
    let frag = pl.counters.local[dataplane::counters::Local::Fragmented4 as usize].get();
    assert_eq!((v, frag), (Verdict::Tx(3), 0), "a 100-octet reply over a 600-octet MTU needs no fragmentation");
    let out = p.data();
    assert_eq!(out.len(), 14 + 100, "the reply without the requester's trailing octets");
    assert_eq!(&out[14 + 12..14 + 20], &[10, 0, 0, 1, 198, 51, 100, 9]);
    assert_eq!(out[14 + 20], 0, "Echo Reply");
    assert_eq!(checksum::checksum(&out[14..34]), 0, "IPv4 header checksum");
    assert_eq!(checksum::checksum(&out[34..]), 0, "ICMP checksum");
}

/// Rule: crate::frag's module doc (the SRv6 policy and encapsulation
/// happen "exactly once") and the ingress PE's rate meter (FANN draft
/// s.4.2): an IPv4 packet an SR policy steers and that is fragmented
/// before encapsulation (RFC 4459 s.3.4) is metered once, as its
/// fragments. Ten 1400-octet packets (14000 octets) at one instant are
/// inside the meter's minimum burst (2 x 9216 octets). Was: metered whole
/// in `srv6_encap` before `fragment4`, then each fragment again: counted
/// twice, the later ones went over the limit and were CE-marked.
#[test]
fn fragmented_steered_packets_are_metered_once() {
    use dataplane::counters::Local;
    use dataplane::srv6::{EncapMode, SrPolicy};
    let run = |df: bool| {
        let mut pl = pipeline_urpf(Urpf::Off);
        let mut f = fib();
        f.insert6("fc00:0:9::/48".parse().unwrap(), via(3, "2001:db8:3::fe"));
        pl.set_fib(Arc::new(f));
        // p3's MTU large enough for the whole packet when DF is set (the
        // control case), 600 when fragmenting.
        if df {
            let mut t = (*pl.topo).clone();
            t.interfaces[3].mtu = 1500;
            pl.set_topology(Arc::new(Topology::new(t.interfaces)));
        }
        let mut t = SidTable::new(&Params::DEFAULT);
        let mut pol = SrPolicy::new("2001:db8:1::1".parse().unwrap(), EncapMode::Encaps, vec![(vec!["fc00:0:9::1".parse().unwrap()], 1)]).unwrap();
        pol.rate_permille = Some(1000);
        t.add_policy("203.0.113.0/24".parse().unwrap(), pol);
        let w = t.pe_rate_window_ns;
        pl.set_sids(Arc::new(t));
        let mut pkt = |now: u64| {
            let mut ip = echo4([10, 0, 0, 2], [203, 0, 113, 7], 1372, df);
            ip[1] = 0x02; // ECT(0)
            ip[10] = 0;
            ip[11] = 0;
            let c = checksum::checksum(&ip[..20]);
            ip[10..12].copy_from_slice(&c.to_be_bytes());
            let f = eth(R0, [8, 0], &ip);
            let mut p = VecPacket::from_bytes(&f);
            match pl.process(&mut p, 0, now) {
                Verdict::Tx(_) => {}
                Verdict::Replicate(n) => {
                    for i in 0..usize::from(n) {
                        let mut c = VecPacket::from_bytes(&[]);
                        pl.build_replica(i, &p, &mut c, now).unwrap();
                    }
                }
                v => panic!("{v:?}"),
            }
        };
        // A first window measures the rate; then ten packets at once.
        pkt(T0);
        for _ in 0..10 {
            pkt(T0 + w);
        }
        let c = &pl.counters.local;
        (c[Local::PeRateCeMarked as usize].get() + c[Local::PeRateOverNotEct as usize].get(), c[Local::Fragmented4 as usize].get())
    };
    let (over_whole, frag_whole) = run(true);
    let (over_frag, frag_frag) = run(false);
    assert_eq!((over_whole, frag_whole), (0, 0), "control: unfragmented, the same octets are within the limit");
    assert_eq!(frag_frag, 11, "every packet fragmented");
    assert_eq!(over_frag, 0, "fragmented: the same octets metered twice went over the limit");
}
