//! End.MT forward path (draft-li-spring-rdma-multicast-over-srv6-00 s.5.2,
//! s.6.2), from a review: how an RC data packet reaching an End.MT SID is
//! replicated. Each test failed on the code before its fix; each names the
//! rule it checks and what the code did ("Was").

mod support;
use support::{conn, iface, via};
use std::net::Ipv6Addr;
use std::sync::Arc;

use dataplane::counters::{Drop, Local, WorkerCounters};
use dataplane::packet::VecPacket;
use dataplane::pipeline::{Pipeline, PipelineConfig, Verdict};
use dataplane::srv6::{Behaviour, SidTable};
use dataplane::tables::{Fib, MacAddr, Mroute, NeighSource, Neighbours, Topology};
use dataplane::wire::checksum;
use dataplane::wire::ipv6::Ipv6Packet;
use dataplane::wire::params::Params;
use dataplane::wire::roce;
use dataplane::wire::srh::{EndMtReceiver, EndMtRepr, Srh, SrhRepr, TlvRepr};

const R0: MacAddr = [0x02, 0, 0, 0, 0, 0x10];
const R1: MacAddr = [0x02, 0, 0, 0, 0, 0x11];
const R2: MacAddr = [0x02, 0, 0, 0, 0, 0x12];
const H0: MacAddr = [0x00, 0x11, 0x22, 0, 0, 0x02];
const GW1: MacAddr = [0x00, 0x11, 0x22, 0x01, 0, 0xfe];
const RX_B: MacAddr = [0x00, 0x11, 0x22, 0x02, 0, 0x11];
const T0: u64 = 5_000_000_000;
const MT: u8 = Params::DEFAULT.srh_tlv_end_mt;
const DESIGNATED_QPN: u32 = 0x000001;

fn a6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}
fn sid_mt() -> Ipv6Addr {
    a6("fc00:0:1::10")
}
fn sid_mt_tree() -> Ipv6Addr {
    a6("fc00:0:1::12")
}
fn node_addr() -> Ipv6Addr {
    a6("fc00:0:1::")
}
fn remote(n: u16) -> Ipv6Addr {
    Ipv6Addr::new(0xfc00, 0, n, 0, 0, 0, 0, 1)
}
/// The source, on p0's link (a resolved neighbour), so that errors reach it.
fn s1() -> Ipv6Addr {
    a6("2001:db8::2")
}
fn proxy() -> Ipv6Addr {
    a6("2001:db8:ff::1")
}
fn group() -> Ipv6Addr {
    a6("ff3e::10")
}

fn topology(mtu1: u16, mtu2: u16) -> Topology {
    let p0 = iface("p0", 0, None, R0, 1500, &["2001:db8::1/64"]);
    let p1 = iface("p1", 1, None, R1, mtu1, &["2001:db8:1::1/64"]);
    let p2 = iface("p2", 2, None, R2, mtu2, &["2001:db8:2::1/64"]);
    Topology::new(vec![p0, p1, p2])
}

fn fib() -> Fib {
    let mut f = Fib::default();
    f.insert6("2001:db8::/64".parse().unwrap(), conn(0));
    f.insert6("2001:db8:1::/64".parse().unwrap(), conn(1));
    f.insert6("2001:db8:2::/64".parse().unwrap(), conn(2));
    f.insert6("fc00::/16".parse().unwrap(), via(1, "2001:db8:1::fe"));
    // A default route (toward the core).
    f.insert6("::/0".parse().unwrap(), via(1, "2001:db8:1::fe"));
    f
}

fn neighbours() -> Neighbours {
    let mut n = Neighbours::default();
    n.learn(0, a6("2001:db8::2").into(), H0, NeighSource::Static);
    n.learn(1, a6("2001:db8:1::fe").into(), GW1, NeighSource::Static);
    n.learn(2, a6("2001:db8:2::11").into(), RX_B, NeighSource::Static);
    n
}

fn sid_table() -> SidTable {
    let mut t = SidTable::new(&Params::DEFAULT);
    t.insert(sid_mt(), Behaviour::end_mt());
    t.insert(group(), Behaviour::end_mt());
    t.insert(sid_mt_tree(), Behaviour::EndMT { receivers_extra: vec![], hmac_required: false, downstream: vec![remote(2), remote(3)] });
    t.set_node_address(Some(node_addr()));
    t
}

fn pipeline_on(t: Topology) -> Pipeline {
    let mut pl = Pipeline::new(Arc::new(t), Arc::new(fib()), Arc::new(neighbours()), Arc::new(WorkerCounters::default()), PipelineConfig::default());
    pl.set_sids(Arc::new(sid_table()));
    pl
}

fn pipeline() -> Pipeline {
    pipeline_on(topology(1500, 1500))
}

fn eth(dst: MacAddr, payload: &[u8]) -> Vec<u8> {
    support::eth(dst, H0, None, 0x86dd, payload)
}

/// A RoCEv2 RC SEND ONLY from S1 to the Proxy Address / Designated QPN,
/// `payload_len` octets of payload, valid ICRC and UDP checksum.
fn roce6(tc: u8, hop: u8, payload_len: usize) -> Vec<u8> {
    let mut bth = vec![0u8; 12];
    bth[0] = 0x04;
    bth[2..4].copy_from_slice(&0xffffu16.to_be_bytes());
    bth[5..8].copy_from_slice(&DESIGNATED_QPN.to_be_bytes()[1..]);
    bth[8] = 0x80;
    bth[9..12].copy_from_slice(&[0, 0, 5]);
    let mut data = bth;
    data.extend((0..payload_len).map(|i| (i * 7 + 3) as u8));
    data.extend_from_slice(&[0; 4]);
    let mut d = support::ipv6(s1(), proxy(), 17, hop, tc, &support::udp6(s1(), proxy(), 0xc123, 4791, &data));
    roce::icrc_fill(&mut d).unwrap();
    fix_udp(&mut d);
    roce::icrc_check(&d).unwrap();
    d
}

fn fix_udp(d: &mut [u8]) {
    d[46..48].fill(0);
    let s = checksum::combine(checksum::pseudo_v6(&d[8..24].try_into().unwrap(), &d[24..40].try_into().unwrap(), 17, (d.len() - 40) as u32), checksum::sum(&d[40..]));
    let mut c = !checksum::fold(s);
    if c == 0 {
        c = 0xffff;
    }
    d[46..48].copy_from_slice(&c.to_be_bytes());
}

fn srh(nh: u8, path: &[Ipv6Addr], sl: u8, tlvs: Vec<TlvRepr>) -> Vec<u8> {
    let mut r = SrhRepr::for_path(nh, path, tlvs);
    r.segments_left = sl;
    let mut b = vec![0u8; r.buffer_len()];
    r.emit(&mut Srh::new_unchecked(&mut b[..])).unwrap();
    b
}

fn mt_tlv(edge: Ipv6Addr, rs: &[(Ipv6Addr, u32)]) -> TlvRepr {
    TlvRepr::EndMt(EndMtRepr { tlv_type: MT, edge_node_address: edge, receivers: rs.iter().map(|(a, q)| EndMtReceiver { address: *a, qpn: *q }).collect() })
}

/// Outer IPv6 (S1 -> `da`, hop limit 64) + SRH [da, proxy] SL 1 with the
/// End.MT TLV of `edge` + `inner`.
fn mt_packet(da: Ipv6Addr, edge: Ipv6Addr, rs: &[(Ipv6Addr, u32)], inner: &[u8]) -> Vec<u8> {
    let mut pl = srh(41, &[da, proxy()], 1, vec![mt_tlv(edge, rs)]);
    pl.extend_from_slice(inner);
    support::ipv6(s1(), da, 43, 64, 0, &pl)
}

fn process(pl: &mut Pipeline, frame: &[u8], port: u16) -> (Verdict, VecPacket) {
    let mut p = VecPacket::from_bytes(frame);
    let v = pl.process(&mut p, port, T0);
    if let Verdict::Drop(r) = v {
        pl.counters.dropped(r);
    }
    (v, p)
}

fn build(pl: &mut Pipeline, orig: &VecPacket, i: usize) -> Result<(u16, Vec<u8>), Drop> {
    let mut c = VecPacket::from_bytes(&[]);
    pl.build_replica(i, orig, &mut c, T0).map(|port| (port, c.to_vec()))
}

fn local(pl: &Pipeline, l: Local) -> u64 {
    pl.counters.local[l as usize].get()
}

/// Independent ICRC (IBA A17.8): CRC-32 over 8 octets of 0xFF, the IPv6
/// header with traffic class, flow label and hop limit set to ones, the UDP
/// header with its checksum set to ones, the BTH with its resv8a/FECN/BECN
/// octet set to ones, and the payload up to the ICRC.
fn naive_icrc(d: &[u8]) -> [u8; 4] {
    let n = 40 + usize::from(u16::from_be_bytes([d[4], d[5]]));
    let mut v = vec![0xffu8; 8];
    v.extend_from_slice(&d[..n - 4]);
    let m = &mut v[8..];
    m[0] |= 0x0f;
    m[1] = 0xff;
    m[2] = 0xff;
    m[3] = 0xff;
    m[7] = 0xff;
    m[46] = 0xff;
    m[47] = 0xff;
    m[48 + 4] = 0xff;
    let mut h = crc32fast::Hasher::new();
    h.update(&v);
    h.finalize().to_le_bytes()
}

fn udp_ok(d: &[u8]) -> bool {
    let s = checksum::combine(checksum::pseudo_v6(&d[8..24].try_into().unwrap(), &d[24..40].try_into().unwrap(), 17, (d.len() - 40) as u32), checksum::sum(&d[40..]));
    checksum::fold(s) == 0xffff
}

fn to_group(ip: &[u8]) -> Vec<u8> {
    let g = group().octets();
    eth([0x33, 0x33, g[12], g[13], g[14], g[15]], ip)
}

/// Rule: draft-li s.5.2 step 3.f: "Forward each modified copy toward its
/// destination" (the replicas are the source's RC data), and
/// `Pipeline::reply`'s contract: set "when its `Tx` verdict is a locally
/// generated reply (ARP, ND, echo, ICMP error), which leaves ahead of
/// queued data"; `build_mroute_copy` clears it for the same reason ("Data,
/// not a reply (a Packet Too Big built for an earlier copy of this packet
/// is one)"). Was: `build_replica` (srv6.rs) never clears `reply` for an
/// End.MT receiver copy, so the copy built after a multicast route copy
/// that became an ICMPv6 Packet Too Big (RFC 4443 s.3.2) is flagged as a
/// reply, and the worker (`process_verdict`: `let reply =
/// self.pipeline.reply`) puts the RC data packet in the port's priority
/// queue, ahead of the queued data.
#[test]
fn end_mt_replica_after_a_route_packet_too_big_is_data_not_a_reply() {
    // p1, the group's outgoing interface, is too small for the outer
    // packet; the receiver's replica (the inner packet) fits p2.
    let mut t = topology(1280, 1500);
    t.interfaces[0].mtu = 9000;
    t.mroutes = vec![Mroute::new(group(), None, Some(0), vec![1])];
    let mut pl = pipeline_on(t);
    let rs = [(a6("2001:db8:2::11"), 0x000777)];
    let inner = roce6(0x02, 64, 1300);
    let f = to_group(&mt_packet(group(), node_addr(), &rs, &inner));
    let (v, p) = process(&mut pl, &f, 0);
    assert_eq!(v, Verdict::Replicate(2));
    let (port, ptb) = build(&mut pl, &p, 0).unwrap();
    assert_eq!(port, 0, "the route's copy became a Packet Too Big to S1");
    assert_eq!((ptb[14 + 6], ptb[14 + 40]), (58, 2));
    assert!(pl.reply, "the Packet Too Big is a reply");
    let (port, c) = build(&mut pl, &p, 1).unwrap();
    assert_eq!(port, 2);
    let d = &c[14..];
    assert_eq!(Ipv6Packet::new_checked(d).unwrap().dst_addr(), rs[0].0);
    assert_eq!(roce::Bth::new_checked(&d[48..]).unwrap().dest_qp(), rs[0].1);
    assert_eq!(d[d.len() - 4..], naive_icrc(d), "ICRC of the replica");
    assert!(udp_ok(d), "UDP checksum of the replica");
    assert!(!pl.reply, "the End.MT replica is RC data, not a locally generated reply");
}

/// Rule: RFC 4291 s.2.5.3: "An IPv6 packet with a destination address of
/// loopback must never be sent outside of a single node and must never be
/// forwarded by an IPv6 router"; s.2.5.2: "The unspecified address must
/// not be used as the destination address of IPv6 packets". draft-li
/// s.7.2: Receiver i Address is "the IPv6 unicast address of the i-th
/// receiver". Was: `build_replica` (srv6.rs) writes the TLV's address as
/// the copy's DA and `route_copy` sends it by FIB lookup with no check
/// (the ordinary IPv6 path drops the same destinations as `ipv6-martian`):
/// with a default route, copies to ::1 and :: leave toward the gateway.
#[test]
fn end_mt_never_sends_a_copy_to_loopback_or_unspecified() {
    let mut pl = pipeline();
    let rs = [(a6("::1"), 0x10), (a6("::"), 0x11), (a6("2001:db8:2::11"), 0x12)];
    let f = eth(R0, &mt_packet(sid_mt(), sid_mt(), &rs, &roce6(0x02, 64, 64)));
    let (v, p) = process(&mut pl, &f, 0);
    assert_eq!(v, Verdict::Replicate(3));
    for (i, (to, _)) in rs.iter().enumerate().take(2) {
        let r = build(&mut pl, &p, i);
        assert_eq!(r.map(|(port, c)| (port, c[..6].to_vec())), Err(Drop::Ipv6Martian), "copy to {to}");
    }
    let (port, c) = build(&mut pl, &p, 2).unwrap();
    assert_eq!(port, 2, "the unicast receiver gets its copy");
    assert_eq!(c[14 + c.len() - 14 - 4..], naive_icrc(&c[14..]));
}

/// Rule: RFC 4443 s.3.3: "If a router receives a packet with a Hop Limit
/// of zero, or if a router decrements a packet's Hop Limit to zero, it
/// MUST discard the packet and originate an ICMPv6 Time Exceeded message
/// with Code 0 to the source of the packet." End.MT decrements the inner
/// packet's hop limit as a routed hop (srv6.rs module doc), as End.DT6
/// does through the IPv6 path, which sends the Time Exceeded. Was:
/// `build_replica` returns `ttl-expired` for an inner hop limit of 1 and
/// S1 is never told.
#[test]
fn end_mt_inner_hop_limit_expiring_sends_time_exceeded() {
    let mut pl = pipeline();
    let rs = [(a6("2001:db8:2::11"), 0x12)];
    let f = eth(R0, &mt_packet(sid_mt(), sid_mt(), &rs, &roce6(0x02, 1, 64)));
    let (v, p) = process(&mut pl, &f, 0);
    assert_eq!(v, Verdict::Replicate(1));
    let r = build(&mut pl, &p, 0);
    assert!(local(&pl, Local::TimeExceeded6) >= 1, "no Time Exceeded to S1; copy: {:?}", r.map(|x| x.0));
}

/// An independent ones' complement sum over an ICMPv6 message and its
/// pseudo-header: 0xffff when the checksum is right.
fn icmp6_sum_ok(ip: &[u8]) -> bool {
    let len = ip.len() - 40;
    let mut s: u32 = ip[8..40].chunks(2).map(|w| u32::from(u16::from_be_bytes([w[0], w[1]]))).sum::<u32>() + 58 + len as u32;
    s += ip[40..].chunks(2).map(|w| u32::from(u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)]))).sum::<u32>();
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s == 0xffff
}

/// Rule: RFC 4443 s.3.2: "A Packet Too Big MUST be sent by a router in
/// response to a packet that it cannot forward because the packet is
/// larger than the MTU of the outgoing link"; the MTU field is "the
/// Maximum Transmission Unit of the next-hop link". An End.MT receiver
/// copy is the inner packet routed to the receiver (draft-li s.5.2 step
/// 3.f): the error goes to its source, S1, quoting it as received. One
/// per received packet: the next copy that does not fit is dropped as
/// `mtu-exceeded`, without asking for its neighbour; a copy that fits
/// still leaves. Was: `route_copy` dropped every such copy as
/// `mtu-exceeded` and S1 was never told.
#[test]
fn an_end_mt_receiver_copy_too_big_for_its_link_sends_one_packet_too_big() {
    let mut t = topology(1500, 1280);
    t.interfaces[0].mtu = 9000;
    let mut pl = pipeline_on(t);
    // Two receivers behind p2 (MTU 1280; the second not resolved), one on p1.
    let rs = [(a6("2001:db8:2::11"), 0x21), (a6("2001:db8:2::12"), 0x22), (a6("2001:db8:1::fe"), 0x23)];
    let inner = roce6(0x02, 64, 1300);
    let f = eth(R0, &mt_packet(sid_mt(), sid_mt(), &rs, &inner));
    let (v, p) = process(&mut pl, &f, 0);
    assert_eq!(v, Verdict::Replicate(3));
    let (port, c) = build(&mut pl, &p, 0).unwrap();
    assert_eq!(port, 0, "back toward S1");
    assert_eq!(&c[..12], &[&H0[..], &R0[..]].concat()[..], "to S1's MAC from p0");
    let ip = &c[14..];
    assert_eq!((ip[6], ip[7]), (58, 64), "ICMPv6, hop limit 64");
    assert_eq!(ip[8..24], a6("2001:db8::1").octets(), "from p0's address");
    assert_eq!(ip[24..40], s1().octets(), "to the inner packet's source");
    assert_eq!((ip[40], ip[41], &ip[44..48]), (2, 0, &[0, 0, 0x05, 0x00][..]), "Packet Too Big, MTU 1280");
    assert!(icmp6_sum_ok(ip), "ICMPv6 checksum");
    let quoted = &ip[48..];
    assert_eq!(quoted.len(), 1280 - 48, "as much of the packet as fits in 1280");
    assert_eq!(quoted, &inner[..1280 - 48], "the inner packet as received (DA, DestQP, hop limit unchanged)");
    assert!(pl.reply, "an error: ahead of queued data");
    assert_eq!(local(&pl, Local::TooBig6), 1);
    let solicits = pl.solicits.len();
    assert_eq!(build(&mut pl, &p, 1).map(|x| x.0), Err(Drop::MtuExceeded), "one Packet Too Big per packet");
    assert_eq!(pl.solicits.len(), solicits, "no neighbour asked for a copy that cannot leave");
    let (port, c) = build(&mut pl, &p, 2).unwrap();
    assert_eq!(port, 1, "the copy that fits leaves");
    assert_eq!(Ipv6Packet::new_checked(&c[14..]).unwrap().dst_addr(), rs[2].0);
    assert!(!pl.reply);
    assert_eq!(local(&pl, Local::TooBig6), 1);
    // The next packet is told again.
    let (_, p) = process(&mut pl, &f, 0);
    assert_eq!(build(&mut pl, &p, 0).map(|x| x.0), Ok(0));
    assert_eq!(local(&pl, Local::TooBig6), 2);
    // Zero-copy replicas leave an oversized copy to the full copy's place.
    let (_, p) = process(&mut pl, &f, 0);
    let mut head = VecPacket::from_bytes(&[]);
    assert_eq!(pl.build_replica_head(0, &p.to_vec(), &mut head, T0), Ok(None));
}

/// Rule: as above, for a copy to a downstream End.MT SID (draft-li s.5.2
/// step 3.e): the packet forwarded is the whole outer packet, so its
/// source (the node that encapsulated it) is told, quoting the outer
/// packet as received. Was: dropped as `mtu-exceeded`, no error.
#[test]
fn an_end_mt_downstream_copy_too_big_for_its_link_sends_a_packet_too_big() {
    let mut t = topology(1400, 1500);
    t.interfaces[0].mtu = 9000;
    let mut pl = pipeline_on(t);
    let outer = mt_packet(sid_mt_tree(), sid_mt_tree(), &[], &roce6(0x02, 64, 1300));
    assert!(outer.len() > 1400);
    let (v, p) = process(&mut pl, &eth(R0, &outer), 0);
    assert_eq!(v, Verdict::Replicate(2));
    let (port, c) = build(&mut pl, &p, 0).unwrap();
    assert_eq!(port, 0);
    let ip = &c[14..];
    assert_eq!(ip[24..40], s1().octets(), "to the outer packet's source");
    assert_eq!((ip[40], ip[41], &ip[44..48]), (2, 0, &[0, 0, 0x05, 0x78][..]), "Packet Too Big, MTU 1400");
    assert!(icmp6_sum_ok(ip));
    assert_eq!(&ip[48..], &outer[..1280 - 48], "the outer packet as received (DA the End.MT SID, SRH)");
    assert_eq!(build(&mut pl, &p, 1).map(|x| x.0), Err(Drop::MtuExceeded), "one per packet");
    assert_eq!(local(&pl, Local::TooBig6), 1);
}
