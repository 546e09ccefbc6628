//! IPv6 multicast forwarding (static mroutes / MLD listeners) against its
//! RFCs, from a review. Every test failed on the code before its fix; each
//! names the RFC text it checks and what the code did ("Was").

mod support;
use support::{conn, iface, via};
use std::net::Ipv6Addr;
use std::sync::Arc;

use dataplane::counters::WorkerCounters;
use dataplane::packet::VecPacket;
use dataplane::pipeline::{Pipeline, PipelineConfig, Verdict};
use dataplane::tables::{Fib, MacAddr, Mroute, NeighSource, Neighbours, Topology};
use dataplane::wire::checksum;
use dataplane::wire::ipv6::Ipv6Packet;

const R0: MacAddr = [0x02, 0, 0, 0, 0, 0x10];
const R1: MacAddr = [0x02, 0, 0, 0, 0, 0x11];
const R2: MacAddr = [0x02, 0, 0, 0, 0, 0x12];
/// A host on p0's link that the router has no neighbour entry for.
const HX: MacAddr = [0x00, 0x11, 0x22, 0x00, 0x00, 0x09];
const H0: MacAddr = [0x00, 0x11, 0x22, 0x00, 0x00, 0x02];
const GW1: MacAddr = [0x00, 0x11, 0x22, 0x01, 0x00, 0xfe];
const T0: u64 = 5_000_000_000;

fn a6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

fn topology(mtu2: u16) -> Topology {
    let p0 = iface("p0", 0, None, R0, 1500, &["2001:db8::1/64"]);
    let p1 = iface("p1", 1, None, R1, 1500, &["2001:db8:1::1/64"]);
    let p2 = iface("p2", 2, None, R2, mtu2, &["2001:db8:2::1/64"]);
    Topology::new(vec![p0, p1, p2])
}

fn fib() -> Fib {
    let mut f = Fib::default();
    f.insert6("2001:db8::/64".parse().unwrap(), conn(0));
    f.insert6("2001:db8:1::/64".parse().unwrap(), conn(1));
    f.insert6("2001:db8:2::/64".parse().unwrap(), conn(2));
    f.insert6("2001:db8:5::/48".parse().unwrap(), via(1, "2001:db8:1::fe"));
    f
}

fn neighbours() -> Neighbours {
    let mut n = Neighbours::default();
    n.learn(0, a6("2001:db8::2").into(), H0, NeighSource::Static);
    n.learn(1, a6("2001:db8:1::fe").into(), GW1, NeighSource::Static);
    n
}

fn mc_pipeline(mtu2: u16, mroutes: Vec<Mroute>) -> Pipeline {
    let mut t = topology(mtu2);
    t.mroutes = mroutes;
    Pipeline::new(Arc::new(t), Arc::new(fib()), Arc::new(neighbours()), Arc::new(WorkerCounters::default()), PipelineConfig::default())
}

/// A UDP/IPv6 datagram of `data` octets from `src` to `dst`, Hop Limit 64.
fn udp6(src: Ipv6Addr, dst: Ipv6Addr, data: usize) -> Vec<u8> {
    let len = 8 + data;
    let mut u = vec![0u8; len];
    u[0..2].copy_from_slice(&1000u16.to_be_bytes());
    u[2..4].copy_from_slice(&2000u16.to_be_bytes());
    u[4..6].copy_from_slice(&(len as u16).to_be_bytes());
    let s = checksum::combine(checksum::pseudo_v6(&src.octets(), &dst.octets(), 17, len as u32), checksum::sum(&u));
    let c = !checksum::fold(s);
    u[6..8].copy_from_slice(&if c == 0 { 0xffff } else { c }.to_be_bytes());
    let mut h = vec![0u8; 40];
    h[0] = 0x60;
    h[4..6].copy_from_slice(&(len as u16).to_be_bytes());
    h[6] = 17;
    h[7] = 64;
    h[8..24].copy_from_slice(&src.octets());
    h[24..40].copy_from_slice(&dst.octets());
    h.extend_from_slice(&u);
    h
}

/// An Ethernet frame from `from` carrying `ip` to group `g`'s MAC (RFC 2464 s.7).
fn mc_frame(from: MacAddr, g: Ipv6Addr, ip: &[u8]) -> Vec<u8> {
    let o = g.octets();
    let mut f = vec![0x33, 0x33, o[12], o[13], o[14], o[15]];
    f.extend_from_slice(&from);
    f.extend_from_slice(&[0x86, 0xdd]);
    f.extend_from_slice(ip);
    f
}

fn process_on(pl: &mut Pipeline, frame: &[u8], port: u16) -> (Verdict, VecPacket) {
    let mut p = VecPacket::from_bytes(frame);
    let v = pl.process(&mut p, port, T0);
    (v, p)
}

// ------------------------------------------------------- IPv6 multicast

/// RFC 4291 s.2.7: "Nodes should not originate a packet to a multicast
/// address whose scop field contains the reserved value F; if such a
/// packet is sent or received, it must be treated the same as packets
/// destined to a global (scop E) multicast address."
///
/// Was: `tables::routable_multicast6` accepts scopes 3..=E only,
/// so a scope-F group can be neither configured (`mroute_plan`) nor
/// learned by MLD (`Mld::record`), and a packet to it is dropped as
/// `multicast-not-routed` even when the topology holds a route for it,
/// where the same route on the scope-E group replicates.
#[test]
fn scope_f_multicast_is_forwarded_like_global_scope() {
    let g_e = a6("ff1e::1234");
    let g_f = a6("ff1f::1234");
    let src = a6("2001:db8::2");
    for g in [g_e, g_f] {
        let mut pl = mc_pipeline(1500, vec![Mroute::new(g, None, Some(0), vec![1, 2])]);
        let (v, _) = process_on(&mut pl, &mc_frame(H0, g, &udp6(src, g, 32)), 0);
        assert_eq!(v, Verdict::Replicate(2), "{g}: replicated out of p1 and p2");
    }
    // What the configuration (`mroute_plan`) and MLD (`Mld::record`) ask.
    assert!(dataplane::tables::routable_multicast6(&g_e));
    assert!(dataplane::tables::routable_multicast6(&g_f), "scope F must be treated as global scope (RFC 4291 s.2.7)");
}

/// RFC 4443 s.2.4 (e.3) / s.3.2: a Packet Too Big MUST be sent in
/// response to a packet that a router cannot forward because it is
/// larger than the MTU of the outgoing link, and it is the one error
/// allowed for a packet to a multicast address; the README promises
/// "the packet's source gets one ICMPv6 Packet Too Big". For unicast the
/// router answers a source it has no neighbour entry for by the frame's
/// sender ("Replies never wait for resolution: they fall back to the
/// frame's sender on the arrival interface", `reply_path4/6`).
///
/// Was: `mroute_too_big` (srv6.rs) builds the error in the fresh
/// replica buffer `copy`, whose Ethernet header was never written, and
/// `icmp_error6` -> `reply_path6` -> `back_to_sender(copy, ..)` takes the
/// destination MAC from `copy[6..12]`: an all-zero buffer gives
/// `neighbour-miss` (no Packet Too Big), a recycled mbuf sends the Packet
/// Too Big to whatever stale bytes were there.
#[test]
fn multicast_packet_too_big_reaches_an_on_link_source_without_a_neighbour_entry() {
    let g = a6("ff1e::1234");
    let src = a6("2001:db8::9"); // on p0, not in the neighbour table
    let f = mc_frame(HX, g, &udp6(src, g, 200));
    // p2's MTU (100) is smaller than the 248-octet packet.
    let mut pl = mc_pipeline(100, vec![Mroute::new(g, None, Some(0), vec![2])]);
    let (v, p) = process_on(&mut pl, &f, 0);
    assert_eq!(v, Verdict::Replicate(1));
    // A fresh buffer.
    let mut c = VecPacket::from_bytes(&[]);
    let r = pl.build_replica(0, &p, &mut c, T0);
    assert_eq!(r, Ok(0), "the Packet Too Big goes back out of p0");
    let out = c.to_vec();
    assert_eq!(&out[..6], &HX, "to the frame's sender");
    let ip = Ipv6Packet::new_checked(&out[14..]).unwrap();
    assert_eq!((ip.dst_addr(), out[54]), (src, 2), "an ICMPv6 Packet Too Big to the source");
    // A recycled buffer (as a DPDK mbuf from the pool is): its stale bytes
    // must not become the destination MAC.
    let (_, p) = process_on(&mut pl, &f, 0);
    let mut c = VecPacket::from_bytes(&[0xab; 64]);
    c.clear();
    let r = pl.build_replica(0, &p, &mut c, T0 + 1_000_000_000);
    assert_eq!(r, Ok(0));
    assert_eq!(&c.to_vec()[..6], &HX, "not the buffer's stale bytes");
}

