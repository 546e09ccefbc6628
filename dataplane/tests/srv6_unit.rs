//! SRv6 data plane (issue 5): End, End.X, End.DT4/DT6 (RFC 6040 ECN),
//! End.C/End.E classification, every SRH violation counter, End.MT edge and
//! tree-interior replication, H.Encaps / H.Encaps.Red; on byte buffers with a
//! virtual clock. The scapy oracle (tests/oracle/srv6_endmt.py) checks the
//! End.MT replicas independently.

mod support;
use support::{conn, iface, ipv6, udp6};
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;

use dataplane::counters::{Drop, Local, WorkerCounters};
use dataplane::packet::VecPacket;
use dataplane::pipeline::{Pipeline, PipelineConfig, Verdict};
use dataplane::srv6::{rfc6040_decap, Behaviour, EncapMode, SidTable, SrPolicy, SrhExtras};
use dataplane::tables::{Fib, MacAddr, NeighSource, Neighbours, NextHop, Topology};
use dataplane::wire::checksum;
use dataplane::wire::ipv4::Ipv4Packet;
use dataplane::wire::ipv6::Ipv6Packet;
use dataplane::wire::params::Params;
use dataplane::wire::roce;
use dataplane::wire::srh::{EndMtReceiver, EndMtRepr, HmacKey, HmacKeyTable, HmacTlvRepr, Srh, SrhRepr, TlvRepr};

const R0: MacAddr = [0x02, 0, 0, 0, 0, 0x10];
const R1: MacAddr = [0x02, 0, 0, 0, 0, 0x11];
const R2: MacAddr = [0x02, 0, 0, 0, 0, 0x12];
const H0: MacAddr = [0x00, 0x11, 0x22, 0, 0, 0x02];
const GW1: MacAddr = [0x00, 0x11, 0x22, 0x01, 0, 0xfe];
const GW2: MacAddr = [0x00, 0x11, 0x22, 0x02, 0, 0xfe];
const RX_A: MacAddr = [0x00, 0x11, 0x22, 0x02, 0, 0x10];
const RX_B: MacAddr = [0x00, 0x11, 0x22, 0x02, 0, 0x11];
const T0: u64 = 5_000_000_000;
const MT: u8 = Params::DEFAULT.srh_tlv_end_mt;

/// Heap allocations made by the current thread (the per-packet path must
/// make none: DESIGN.md invariant 2).
mod alloc_count {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;
    thread_local! {
        static COUNT: Cell<u64> = const { Cell::new(0) };
    }
    pub struct Counting;
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, l: Layout) -> *mut u8 {
            COUNT.with(|c| c.set(c.get() + 1));
            unsafe { System.alloc(l) }
        }
        unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
            unsafe { System.dealloc(p, l) }
        }
        unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
            COUNT.with(|c| c.set(c.get() + 1));
            unsafe { System.realloc(p, l, n) }
        }
    }
    /// Allocations by this thread so far.
    pub fn count() -> u64 {
        COUNT.with(|c| c.get())
    }
}
#[global_allocator]
static ALLOC: alloc_count::Counting = alloc_count::Counting;

fn a6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

// Local SIDs (locator fc00:0:1::/48).
fn sid_end() -> Ipv6Addr {
    a6("fc00:0:1::1")
}
fn sid_endx() -> Ipv6Addr {
    a6("fc00:0:1::2")
}
fn sid_dt4() -> Ipv6Addr {
    a6("fc00:0:1::4")
}
fn sid_dt6() -> Ipv6Addr {
    a6("fc00:0:1::6")
}
fn sid_mt() -> Ipv6Addr {
    a6("fc00:0:1::10")
}
fn sid_mt_hmac() -> Ipv6Addr {
    a6("fc00:0:1::11")
}
fn sid_mt_tree() -> Ipv6Addr {
    a6("fc00:0:1::12")
}
fn sid_mt_prov() -> Ipv6Addr {
    a6("fc00:0:1::13")
}
fn node_addr() -> Ipv6Addr {
    a6("fc00:0:1::")
}
/// Remote SIDs (routed via p1).
fn remote(n: u16) -> Ipv6Addr {
    Ipv6Addr::new(0xfc00, 0, n, 0, 0, 0, 0, 1)
}
fn s1() -> Ipv6Addr {
    a6("2001:db8:5::1")
}
fn proxy() -> Ipv6Addr {
    a6("2001:db8:ff::1")
}
const DESIGNATED_QPN: u32 = 0x000001;

fn topology() -> Topology {
    let p0 = iface("p0", 0, None, R0, 1500, &["10.0.0.1/24", "2001:db8::1/64"]);
    let p1 = iface("p1", 1, None, R1, 1500, &["10.1.0.1/24", "2001:db8:1::1/64"]);
    let p2 = iface("p2", 2, None, R2, 1500, &["2001:db8:2::1/64"]);
    Topology::new(vec![p0, p1, p2])
}

fn fib() -> Fib {
    let mut f = Fib::default();
    f.insert4("10.0.0.0/24".parse().unwrap(), conn(0));
    f.insert4("10.1.0.0/24".parse().unwrap(), conn(1));
    f.insert6("2001:db8::/64".parse().unwrap(), conn(0));
    f.insert6("2001:db8:1::/64".parse().unwrap(), conn(1));
    f.insert6("2001:db8:2::/64".parse().unwrap(), conn(2));
    f.insert6("fc00::/16".parse().unwrap(), NextHop { iface: 1, gateway: Some("2001:db8:1::fe".parse().unwrap()) });
    f.insert6("2001:db8:3::/64".parse().unwrap(), NextHop { iface: 1, gateway: Some("2001:db8:1::fe".parse().unwrap()) });
    f.insert4("198.51.100.0/24".parse().unwrap(), NextHop { iface: 1, gateway: Some("10.1.0.254".parse().unwrap()) });
    f.insert6("2001:db8:99::/48".parse().unwrap(), NextHop { iface: 1, gateway: Some("2001:db8:1::fe".parse().unwrap()) });
    f
}

fn neighbours() -> Neighbours {
    let mut n = Neighbours::default();
    let mut add = |i: u16, ip: &str, mac: MacAddr| {
        n.learn(i, ip.parse().unwrap(), mac, NeighSource::Static);
    };
    add(0, "2001:db8::2", H0);
    add(0, "10.0.0.2", H0);
    add(1, "2001:db8:1::fe", GW1);
    add(1, "10.1.0.254", GW1);
    add(1, "10.1.0.2", GW1);
    add(2, "2001:db8:2::fe", GW2);
    add(2, "2001:db8:2::10", RX_A);
    add(2, "2001:db8:2::11", RX_B);
    n
}

fn hmac_key() -> HmacKey {
    HmacKey::new(7, b"end-mt secret", 32).unwrap()
}

fn sid_table() -> SidTable {
    let mut t = SidTable::new(&Params::DEFAULT);
    t.insert(sid_end(), Behaviour::End);
    t.insert(sid_endx(), Behaviour::EndX { iface: 2, nexthop: "2001:db8:2::fe".parse().unwrap() });
    t.insert(sid_dt4(), Behaviour::EndDT4);
    t.insert(sid_dt6(), Behaviour::EndDT6);
    t.insert(sid_mt(), Behaviour::end_mt());
    t.insert(sid_mt_hmac(), Behaviour::EndMT { receivers_extra: vec![], hmac_required: true, downstream: vec![] });
    t.insert(sid_mt_tree(), Behaviour::EndMT { receivers_extra: vec![], hmac_required: false, downstream: vec![remote(2), remote(3)] });
    t.insert(
        sid_mt_prov(),
        Behaviour::EndMT { receivers_extra: vec![(a6("2001:db8:3::7"), 0x777)], hmac_required: false, downstream: vec![] },
    );
    t.insert(a6("fc00:0:1::c"), Behaviour::EndC);
    t.insert(a6("fc00:0:1::e"), Behaviour::EndE);
    t.set_node_address(Some(node_addr()));
    t.set_hmac_keys([hmac_key()].into_iter().collect::<HmacKeyTable>()).unwrap();
    t
}

fn pipeline() -> Pipeline {
    pipeline_with(PipelineConfig::default())
}

fn pipeline_with(cfg: PipelineConfig) -> Pipeline {
    let mut pl = Pipeline::new(Arc::new(topology()), Arc::new(fib()), Arc::new(neighbours()), Arc::new(WorkerCounters::default()), cfg);
    pl.set_sids(Arc::new(sid_table()));
    pl
}

fn run(pl: &mut Pipeline, p: &mut VecPacket) -> Verdict {
    let v = pl.process(p, 0, T0);
    if let Verdict::Drop(r) = v {
        pl.counters.dropped(r);
    }
    v
}

fn drops(pl: &Pipeline, r: Drop) -> u64 {
    pl.counters.drops[r as usize].get()
}

fn expect_drop(pl: &mut Pipeline, frame: Vec<u8>, r: Drop) {
    let before = drops(pl, r);
    let mut p = VecPacket::from_bytes(&frame);
    let v = run(pl, &mut p);
    assert_eq!(v, Verdict::Drop(r), "expected {}", r.name());
    assert_eq!(drops(pl, r), before + 1, "counter {}", r.name());
}

// ------------------------------------------------------------ builders

fn eth(et: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&R0);
    f.extend_from_slice(&H0);
    f.extend_from_slice(&et.to_be_bytes());
    f.extend_from_slice(payload);
    f
}


/// An IPv6 packet as the next hop receives it after a router forwarded
/// it (H.Encaps included): the hop limit one less, nothing else changed.
fn routed6(ip: &[u8]) -> Vec<u8> {
    let mut v = ip.to_vec();
    v[7] -= 1;
    v
}

fn ipv4(src: Ipv4Addr, dst: Ipv4Addr, proto: u8, ttl: u8, tos: u8, payload: &[u8]) -> Vec<u8> {
    let mut h = vec![0u8; 20];
    h[0] = 0x45;
    h[1] = tos;
    h[2..4].copy_from_slice(&((20 + payload.len()) as u16).to_be_bytes());
    h[8] = ttl;
    h[9] = proto;
    h[12..16].copy_from_slice(&src.octets());
    h[16..20].copy_from_slice(&dst.octets());
    let c = checksum::checksum(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h.extend_from_slice(payload);
    h
}


/// A plain UDP/IPv6 packet (not RoCE).
fn plain6(src: Ipv6Addr, dst: Ipv6Addr, tc: u8) -> Vec<u8> {
    ipv6(src, dst, 17, 64, tc, &udp6(src, dst, 1000, 2000, b"hello world!"))
}

/// A RoCEv2 RC SEND ONLY to the Proxy Address / Designated QPN with a valid
/// ICRC and UDP checksum.
fn roce6(tc: u8, payload_len: usize) -> Vec<u8> {
    let mut bth = vec![0u8; 12];
    bth[0] = 0x04; // RC SEND ONLY
    bth[2..4].copy_from_slice(&0xffffu16.to_be_bytes());
    bth[5..8].copy_from_slice(&DESIGNATED_QPN.to_be_bytes()[1..]);
    bth[8] = 0x80;
    bth[9..12].copy_from_slice(&[0, 0, 5]);
    let mut data = bth;
    data.extend((0..payload_len).map(|i| (i * 7 + 3) as u8));
    data.extend_from_slice(&[0; 4]); // ICRC
    let mut d = ipv6(s1(), proxy(), 17, 64, tc, &udp6(s1(), proxy(), 0xc123, 4791, &data));
    roce::icrc_fill(&mut d).unwrap();
    // The UDP checksum covers the ICRC: recompute.
    let u = d[40..].to_vec();
    let mut u2 = u.clone();
    u2[6..8].fill(0);
    let s = checksum::combine(checksum::pseudo_v6(&s1().octets(), &proxy().octets(), 17, u.len() as u32), checksum::sum(&u2));
    let mut c = !checksum::fold(s);
    if c == 0 {
        c = 0xffff;
    }
    d[46..48].copy_from_slice(&c.to_be_bytes());
    roce::icrc_check(&d).unwrap();
    d
}

/// SRH bytes for `path` (first segment first) with `tlvs`, Segments Left `sl`.
fn srh(nh: u8, path: &[Ipv6Addr], sl: u8, tlvs: Vec<TlvRepr>) -> Vec<u8> {
    let mut r = SrhRepr::for_path(nh, path, tlvs);
    r.segments_left = sl;
    let mut b = vec![0u8; r.buffer_len()];
    r.emit(&mut Srh::new_unchecked(&mut b[..])).unwrap();
    b
}

/// Outer IPv6 + SRH around `inner`.
fn srv6_frame(outer_src: Ipv6Addr, da: Ipv6Addr, hop: u8, tc: u8, srh_bytes: &[u8], inner: &[u8]) -> Vec<u8> {
    let mut pl = srh_bytes.to_vec();
    pl.extend_from_slice(inner);
    eth(0x86dd, &ipv6(outer_src, da, 43, hop, tc, &pl))
}

fn mt_tlv(edge: Ipv6Addr, rs: &[(Ipv6Addr, u32)]) -> TlvRepr {
    TlvRepr::EndMt(EndMtRepr {
        tlv_type: MT,
        edge_node_address: edge,
        receivers: rs.iter().map(|(a, q)| EndMtReceiver { address: *a, qpn: *q }).collect(),
    })
}

fn l3(out: &[u8]) -> &[u8] {
    &out[14..]
}

// ------------------------------------------------------------ End / End.X

#[test]
fn end_decrements_sl_and_forwards_by_fib() {
    let mut pl = pipeline();
    let s = srh(41, &[sid_end(), remote(2), remote(3)], 2, vec![]);
    let f = srv6_frame(s1(), sid_end(), 64, 0, &s, &plain6(s1(), a6("2001:db8:2::10"), 0));
    let mut p = VecPacket::from_bytes(&f);
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(1));
    let o = p.to_vec();
    assert_eq!(&o[0..6], &GW1);
    assert_eq!(&o[6..12], &R1);
    let ip = Ipv6Packet::new_checked(l3(&o)).unwrap();
    assert_eq!(ip.dst_addr(), remote(2));
    assert_eq!(ip.hop_limit(), 63);
    let sr = Srh::new_checked(&l3(&o)[40..]).unwrap();
    assert_eq!(sr.segments_left(), 1);
    assert_eq!(sr.active_segment(), Some(remote(2)));
    // Everything else unchanged.
    assert_eq!(&l3(&o)[40 + 4..], &f[14 + 40 + 4..]);
}

#[test]
fn end_to_another_local_sid_runs_it() {
    // End then End.DT6 on the same node: resubmission to the IPv6 path.
    let mut pl = pipeline();
    let inner = plain6(s1(), a6("2001:db8:2::10"), 0);
    let s = srh(41, &[sid_end(), sid_dt6()], 1, vec![]);
    let mut p = VecPacket::from_bytes(&srv6_frame(s1(), sid_end(), 64, 0, &s, &inner));
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(2));
    let o = p.to_vec();
    assert_eq!(&o[0..6], &RX_A);
    assert_eq!(l3(&o)[7], 63);
    assert_eq!(&l3(&o)[8..], &inner[8..]);
}

#[test]
fn end_x_forces_the_next_hop() {
    let mut pl = pipeline();
    // The next SID is routed via p1 by the FIB; End.X sends it to p2's gateway.
    let s = srh(41, &[sid_endx(), remote(2)], 1, vec![]);
    let mut p = VecPacket::from_bytes(&srv6_frame(s1(), sid_endx(), 10, 0, &s, &plain6(s1(), a6("2001:db8:3::1"), 0)));
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(2));
    let o = p.to_vec();
    assert_eq!(&o[0..6], &GW2);
    assert_eq!(&o[6..12], &R2);
    let ip = Ipv6Packet::new_checked(l3(&o)).unwrap();
    assert_eq!(ip.dst_addr(), remote(2));
    assert_eq!(ip.hop_limit(), 9);
    assert_eq!(Srh::new_checked(&l3(&o)[40..]).unwrap().segments_left(), 0);
    // Its neighbour is marked used (reachability detection), and is one
    // that detection keeps while unused.
    let mut used = Vec::new();
    pl.used().take(|b| used.push(b));
    let nh: std::net::IpAddr = "2001:db8:2::fe".parse().unwrap();
    assert!(used.contains(&dataplane::nud::UsedBits::bit(2, nh)), "{used:?}");
    let mut t = sid_table();
    assert_eq!(t.end_x_next_hops(), vec![(2, nh)]);
    t.insert(a6("fc00:0:1::22"), Behaviour::EndX { iface: 1, nexthop: "10.1.0.254".parse().unwrap() });
    t.insert(a6("fc00:0:1::23"), Behaviour::EndX { iface: 2, nexthop: nh });
    assert_eq!(t.end_x_next_hops(), vec![(1, "10.1.0.254".parse().unwrap()), (2, nh)]);
}

#[test]
fn end_sl_zero_and_no_srh() {
    let mut pl = pipeline();
    let s = srh(41, &[remote(2), sid_end()], 0, vec![]);
    // SL = 0 with a non-ICMPv6 upper layer.
    // RFC 8986 s.4.1.1: Parameter Problem, code 4 (SR Upper-layer Header
    // Error), pointing at the upper-layer header (after the 40-octet SRH).
    let f = srv6_frame(s1(), sid_end(), 64, 0, &srh(17, &[remote(2), sid_end()], 0, vec![]), &udp6(s1(), sid_end(), 1, 2, b"x"));
    expect_param_problem(&mut pl, f, 4, 80);
    let f = srv6_frame(s1(), sid_end(), 64, 0, &s, &plain6(s1(), a6("2001:db8:2::10"), 0));
    expect_param_problem(&mut pl, f, 4, 80);
    // No SRH at all: the upper layer follows the IPv6 header.
    expect_param_problem(&mut pl, eth(0x86dd, &plain6(s1(), sid_end(), 0)), 4, 40);
    expect_param_problem(&mut pl, eth(0x86dd, &plain6(s1(), sid_endx(), 0)), 4, 40);
    // With the ICMP error limit spent, the drops are counted by name.
    let mut pl = pipeline_with(PipelineConfig { icmp_error_rate_pps: 0, icmp_error_burst: 0, ..PipelineConfig::default() });
    let f = srv6_frame(s1(), sid_end(), 64, 0, &s, &plain6(s1(), a6("2001:db8:2::10"), 0));
    expect_drop(&mut pl, f, Drop::SrhSlZero);
    expect_drop(&mut pl, eth(0x86dd, &plain6(s1(), sid_end(), 0)), Drop::Srv6NoSrh);
}

/// An ICMPv6 Parameter Problem back to the source s1() from the router's
/// address on the input interface, quoting the invoking packet.
fn expect_param_problem(pl: &mut Pipeline, frame: Vec<u8>, code: u8, pointer: u32) {
    let before = pl.counters.local[Local::ParamProblem6 as usize].get();
    let mut p = VecPacket::from_bytes(&frame);
    assert_eq!(run(pl, &mut p), Verdict::Tx(0), "answered on the input port");
    let o = p.to_vec();
    let ip = l3(&o);
    assert_eq!(ip[6], 58);
    assert_eq!(&ip[24..40], &s1().octets(), "to the source");
    assert_eq!((ip[40], ip[41]), (4, code), "Parameter Problem, code {code}");
    assert_eq!(u32::from_be_bytes([ip[44], ip[45], ip[46], ip[47]]), pointer);
    assert_eq!(&ip[48..48 + 40], &l3(&frame)[..40], "quotes the invoking packet");
    let s = checksum::combine(checksum::pseudo_v6(&ip[8..24].try_into().unwrap(), &ip[24..40].try_into().unwrap(), 58, (ip.len() - 40) as u32), checksum::sum(&ip[40..]));
    assert_eq!(checksum::fold(s), 0xffff, "ICMPv6 checksum");
    assert_eq!(pl.counters.local[Local::ParamProblem6 as usize].get(), before + 1);
}

#[test]
fn echo_to_a_sid_is_answered() {
    let mut pl = pipeline();
    let src = a6("2001:db8::2");
    let mut m = vec![128u8, 0, 0, 0, 0, 1, 0, 1, 0xaa, 0xbb];
    let s = checksum::combine(checksum::pseudo_v6(&src.octets(), &sid_end().octets(), 58, m.len() as u32), checksum::sum(&m));
    let c = !checksum::fold(s);
    m[2..4].copy_from_slice(&c.to_be_bytes());
    let mut p = VecPacket::from_bytes(&eth(0x86dd, &ipv6(src, sid_end(), 58, 64, 0, &m)));
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(0));
    let o = p.to_vec();
    let ip = Ipv6Packet::new_checked(l3(&o)).unwrap();
    assert_eq!(ip.src_addr(), sid_end());
    assert_eq!(l3(&o)[40], 129);
}

#[test]
fn srh_violations_have_their_own_counters() {
    let mut pl = pipeline();
    let inner = plain6(s1(), a6("2001:db8:2::10"), 0);
    // Routing type 3 (not an SRH) with SL > 0.
    let mut s = srh(41, &[sid_end(), remote(2)], 1, vec![]);
    s[2] = 3;
    // RFC 8200 s.4.4: Parameter Problem code 0 at the Routing Type.
    expect_param_problem(&mut pl, srv6_frame(s1(), sid_end(), 64, 0, &s, &inner), 0, 40 + 2);
    let mut limited = pipeline_with(PipelineConfig { icmp_error_rate_pps: 0, icmp_error_burst: 0, ..PipelineConfig::default() });
    expect_drop(&mut limited, srv6_frame(s1(), sid_end(), 64, 0, &s, &inner), Drop::SrhRoutingType);
    // Segments Left > Last Entry + 1: RFC 8754 s.4.3.1.1, Parameter
    // Problem code 0 at the Segments Left.
    let mut s = srh(41, &[sid_end(), remote(2)], 1, vec![]);
    s[3] = 3;
    expect_param_problem(&mut pl, srv6_frame(s1(), sid_end(), 64, 0, &s, &inner), 0, 40 + 3);
    expect_drop(&mut limited, srv6_frame(s1(), sid_end(), 64, 0, &s, &inner), Drop::SrhSlExceeds);
    // Hdr Ext Len too short for Last Entry + 1 segments (RFC 8754
    // s.4.3.1.1 S06-S08: Parameter Problem code 0 at the Segments Left).
    let mut s = srh(41, &[sid_end(), remote(2), remote(3)], 1, vec![]);
    s[1] = 4; // 40 octets: room for 2 segments, Last Entry says 3
    let cut = (usize::from(s[1]) + 1) * 8;
    let mut body = s[..cut].to_vec();
    body.extend_from_slice(&inner);
    expect_param_problem(&mut pl, eth(0x86dd, &ipv6(s1(), sid_end(), 43, 64, 0, &body)), 0, 40 + 3);
    // A TLV running past the end of the header.
    let mut s = srh(41, &[sid_end(), remote(2)], 1, vec![TlvRepr::PadN(4)]);
    let at = 8 + 32;
    s[at + 1] = 40;
    expect_drop(&mut pl, srv6_frame(s1(), sid_end(), 64, 0, &s, &inner), Drop::SrhMalformed);
    // Hop limit 1: ICMPv6 Time Exceeded from the SID node.
    let s = srh(41, &[sid_end(), remote(2)], 1, vec![]);
    let mut p = VecPacket::from_bytes(&srv6_frame(a6("2001:db8::2"), sid_end(), 1, 0, &s, &inner));
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(0));
    assert_eq!(pl.counters.local[Local::TimeExceeded6 as usize].get(), 1);
    assert_eq!(l3(&p.to_vec())[40], 3);
    // Too many local SIDs in a row (End -> End -> ...).
    let path = [sid_end(), sid_end(), sid_end(), sid_end(), sid_end(), remote(2)];
    let s = srh(41, &path, 5, vec![]);
    expect_drop(&mut pl, srv6_frame(s1(), sid_end(), 64, 0, &s, &inner), Drop::Srv6ChainTooLong);
}

fn lhcnp6(action: dataplane::wire::lhcnp::Action, parameter: u16) -> Vec<u8> {
    lhcnp6_code(action, parameter, 0)
}

fn lhcnp6_code(action: dataplane::wire::lhcnp::Action, parameter: u16, code: u8) -> Vec<u8> {
    lhcnp6_full(action, parameter, code, 100)
}

fn lhcnp6_full(action: dataplane::wire::lhcnp::Action, parameter: u16, code: u8, source_qp: u32) -> Vec<u8> {
    use dataplane::wire::lhcnp::{emit_icmpv6_packet, CnpInfo, Icmpv6LhCnpRepr, MetricType, Objects};
    let repr = Icmpv6LhCnpRepr {
        code,
        info: CnpInfo { congestion_level: 180, action, parameter, source_qp, metric_type: MetricType::QueueDepthKb, metric_value: 130000 },
        objects: Objects::NONE,
    };
    let mut buf = vec![0u8; 256];
    let n = emit_icmpv6_packet(&a6("fc00:0:9::1").octets(), &a6("2001:db8:3::5").octets(), 64, &repr, &Params::DEFAULT, &mut buf).unwrap();
    buf.truncate(n);
    buf
}

/// END.C keeps a pause per cause: one WAN node's CNPs for two flows (two
/// source QPs of one sender) pause priority 3; the first flow's Resume
/// leaves it paused (`pfc-resume-held`, no frame), the second's sends the
/// RESUME.
#[test]
fn end_c_resumes_when_the_last_flow_paused_resumes() {
    use dataplane::endc::EndCConfig;
    use dataplane::wire::lhcnp::Action;
    let mut pl = pipeline();
    let mut t = sid_table();
    t.endc = vec![(0, EndCConfig::default())];
    pl.set_sids(Arc::new(t));
    let s = srh(41, &[a6("fc00:0:1::c")], 0, vec![]);
    let send = |pl: &mut Pipeline, cnp: Vec<u8>| {
        let mut p = VecPacket::from_bytes(&srv6_frame(s1(), a6("fc00:0:1::c"), 64, 0, &s, &cnp));
        let v = run(pl, &mut p);
        (v, (v == Verdict::Tx(0)).then(|| u16::from_be_bytes([p.to_vec()[18 + 6], p.to_vec()[18 + 7]])))
    };
    assert_eq!(send(&mut pl, lhcnp6_full(Action::Pause, 5000, 0, 100)).1.map(|q| q > 0), Some(true), "PAUSE for flow A");
    // Flow B's pause is covered by the frame in force: coalesced.
    assert_eq!(send(&mut pl, lhcnp6_full(Action::Pause, 5000, 0, 200)), (Verdict::Consumed, None));
    assert_eq!(send(&mut pl, lhcnp6_full(Action::Resume, 0, 0, 100)), (Verdict::Consumed, None), "flow B still paused");
    assert_eq!(pl.counters.local[Local::PfcResumeHeld as usize].get(), 1);
    assert_eq!(send(&mut pl, lhcnp6_full(Action::Resume, 0, 0, 200)), (Verdict::Tx(0), Some(0)), "RESUME");
    assert_eq!(pl.counters.local[Local::PfcResume as usize].get(), 1);
}

#[test]
fn end_e_decapsulates_and_routes_the_notification() {
    let mut pl = pipeline();
    let inner = lhcnp6(dataplane::wire::lhcnp::Action::RateReduce, 30);
    let s = srh(41, &[a6("fc00:0:1::e")], 0, vec![]);
    let mut p = VecPacket::from_bytes(&srv6_frame(s1(), a6("fc00:0:1::e"), 64, 0, &s, &inner));
    let v = run(&mut pl, &mut p);
    assert_eq!(v, Verdict::Tx(1), "toward the sender via its route");
    let f = p.to_vec();
    assert_eq!(&f[12..14], &[0x86, 0xdd]);
    assert_eq!(f.len(), 14 + inner.len(), "outer IPv6 + SRH removed");
    assert_eq!(&f[14 + 24..14 + 40], &a6("2001:db8:3::5").octets());
    assert_eq!(f[14 + 7], 63, "inner hop limit decremented");
    assert_eq!(&f[14 + 40..], &inner[40..], "notification unchanged");
    assert_eq!(pl.counters.local[Local::EndEForwarded as usize].get(), 1);
}

/// END.E passes notifications only (draft-hu-acn-rocev2 s.4.2: it
/// decapsulates the CNP for the sender): any other inner packet, or a
/// notification whose checksum or ICRC does not verify, is dropped, so the
/// SID cannot tunnel traffic into the DC. Standard RoCEv2 CNPs and FANN
/// messages (ICMPv6 and UDP) pass.
#[test]
fn end_e_passes_only_notifications() {
    use dataplane::wire::fann::MessageRepr;
    use dataplane::wire::fann::{event, CODE_EVENT};
    use dataplane::wire::lhcnp::Action;
    let mut pl = pipeline();
    let s = srh(41, &[a6("fc00:0:1::e")], 0, vec![]);
    let frame = |inner: &[u8]| srv6_frame(s1(), a6("fc00:0:1::e"), 64, 0, &s, inner);
    // An ICMPv6 echo request with a valid checksum.
    let mut echo = lhcnp6(Action::Notify, 0);
    echo[40] = 128;
    echo[42..44].copy_from_slice(&[0, 0]);
    let sum = checksum::combine(checksum::pseudo_v6(&echo[8..24].try_into().unwrap(), &echo[24..40].try_into().unwrap(), 58, (echo.len() - 40) as u32), checksum::sum(&echo[40..]));
    let c = !checksum::fold(sum);
    echo[42..44].copy_from_slice(&c.to_be_bytes());
    let mut lh_bad = lhcnp6(Action::Pause, 100);
    lh_bad[40 + 2] ^= 0xff; // ICMPv6 checksum
    for inner in [plain6(s1(), a6("2001:db8:3::5"), 0), echo, lh_bad] {
        expect_drop(&mut pl, frame(&inner), Drop::EndENotNotification);
    }
    assert_eq!(pl.counters.drops[Drop::EndENotNotification as usize].get(), 3);
    assert_eq!(pl.counters.local[Local::EndEForwarded as usize].get(), 0);
    let m = MessageRepr { hop_limit: 8, event_type: event::LINK_FAILURE, event_subtype: 0, event_id: 1, timestamp: 0, originating_node: a6("fc00:0:9::1"), metadata: Default::default() };
    let icmp = dataplane::fann::notification_packet(CODE_EVENT, &m, &a6("fc00:0:9::1"), &a6("2001:db8:3::5"), &Params::DEFAULT, false);
    let udp = dataplane::fann::notification_packet(CODE_EVENT, &m, &a6("fc00:0:9::1"), &a6("2001:db8:3::5"), &Params::DEFAULT, true);
    for (what, inner) in [("lhcnp", lhcnp6(Action::RateReduce, 30)), ("fann icmpv6", icmp), ("fann udp", udp)] {
        let mut p = VecPacket::from_bytes(&frame(&inner));
        assert_eq!(run(&mut pl, &mut p), Verdict::Tx(1), "{what}");
        let f = p.to_vec();
        assert_eq!(f.len(), 14 + inner.len(), "{what}");
        if what == "lhcnp" {
            assert_eq!(&f[14 + 40..], &inner[40..], "unchanged");
        }
        if what == "fann icmpv6" {
            // Routed on: its FANN Hop Limit decremented like any forwarded
            // FANN message (s.5.1.2).
            assert_eq!((inner[40 + 6], f[14 + 40 + 6]), (8, 7));
        }
    }
    assert_eq!(pl.counters.local[Local::EndEForwarded as usize].get(), 3);
}

/// With `notification_sources`, END.E and END.C take notifications only
/// from those prefixes: a forged one to END.C would pause the DC.
#[test]
fn end_c_and_end_e_take_notifications_only_from_the_configured_sources() {
    use dataplane::endc::EndCConfig;
    use dataplane::wire::lhcnp::Action;
    let mut pl = pipeline();
    let mut t = sid_table();
    t.endc = vec![(0, EndCConfig::default())];
    t.notification_sources = Some(vec!["fc00:0:9::/48".parse().unwrap()]);
    pl.set_sids(Arc::new(t));
    for sid in ["fc00:0:1::e", "fc00:0:1::c"] {
        let s = srh(41, &[a6(sid)], 0, vec![]);
        // From s1() (outside the prefix): refused.
        expect_drop(&mut pl, srv6_frame(s1(), a6(sid), 64, 0, &s, &lhcnp6(Action::Pause, 100)), Drop::NotificationSourceRefused);
        // From a node inside it: taken.
        let mut p = VecPacket::from_bytes(&srv6_frame(a6("fc00:0:9::1"), a6(sid), 64, 0, &s, &lhcnp6(Action::Pause, 100)));
        assert!(matches!(run(&mut pl, &mut p), Verdict::Tx(_)), "{sid}");
    }
    assert_eq!(pl.counters.local[Local::EndEForwarded as usize].get(), 1);
    assert_eq!(pl.counters.local[Local::PfcPause as usize].get(), 1);
}

/// END.C and END.E hand what they decapsulate to this node's ingress PE
/// too (FANN draft s.4.1, s.4.2: the PE reroutes on it), as if it had been
/// received directly: a Long-haul CNP from a known node (its source is the
/// congested node), and at END.C a FANN message to this node, also one
/// with no PFC meaning (a link failure), which END.C used to drop. The
/// packet's own fate does not change; unknown nodes are refused and
/// counted.
#[test]
fn end_c_and_end_e_hand_their_notifications_to_the_ingress_pe() {
    use dataplane::endc::EndCConfig;
    use dataplane::fann::PeNote;
    use dataplane::pipeline::Event;
    use dataplane::wire::fann::{event, MessageRepr, CODE_EVENT};
    use dataplane::wire::lhcnp::Action;
    let node = a6("fc00:0:9::1");
    let mut pl = pipeline();
    let mut t = sid_table();
    t.endc = vec![(0, EndCConfig::default())];
    t.pe_known = Some(vec![node]);
    pl.set_sids(Arc::new(t));
    let frame = |sid: &str, inner: &[u8]| srv6_frame(node, a6(sid), 64, 0, &srh(41, &[a6(sid)], 0, vec![]), inner);
    let notes = |pl: &mut Pipeline| -> Vec<PeNote> {
        pl.events.drain(..).filter_map(|e| if let Event::PeNotification(n) = e { Some(n) } else { None }).collect()
    };
    let cnp_from = |n: &PeNote| if let PeNote::Cnp { from, info } = n { Some((*from, info.action, info.source_qp)) } else { None };
    // END.E: the CNP goes on to the sender, and to the PE.
    let mut p = VecPacket::from_bytes(&frame("fc00:0:1::e", &lhcnp6(Action::RateReduce, 30)));
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(1));
    assert_eq!(notes(&mut pl).iter().map(cnp_from).collect::<Vec<_>>(), vec![Some((node, Action::RateReduce, 100))]);
    // END.C: the PAUSE, and the PE.
    let mut p = VecPacket::from_bytes(&frame("fc00:0:1::c", &lhcnp6(Action::Pause, 100)));
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(0));
    assert_eq!(&p.to_vec()[12..14], &[0x88, 0x08]);
    assert_eq!(notes(&mut pl).iter().map(cnp_from).collect::<Vec<_>>(), vec![Some((node, Action::Pause, 100))]);
    // END.C: a FANN link failure to this node (2001:db8:1::1): no PFC, but
    // the PE's; to another address it is nobody's here.
    let m = MessageRepr { hop_limit: 8, event_type: event::LINK_FAILURE, event_subtype: 0, event_id: 3, timestamp: 0, originating_node: node, metadata: Default::default() };
    for udp in [false, true] {
        let to_me = dataplane::fann::notification_packet(CODE_EVENT, &m, &node, &a6("2001:db8:1::1"), &Params::DEFAULT, udp);
        let mut p = VecPacket::from_bytes(&frame("fc00:0:1::c", &to_me));
        assert_eq!(run(&mut pl, &mut p), Verdict::Consumed, "udp {udp}");
        assert_eq!(notes(&mut pl), vec![PeNote::Fann { code: CODE_EVENT, msg: m }], "udp {udp}");
    }
    let elsewhere = dataplane::fann::notification_packet(CODE_EVENT, &m, &node, &a6("2001:db8:3::5"), &Params::DEFAULT, false);
    expect_drop(&mut pl, frame("fc00:0:1::c", &elsewhere), Drop::EndCNotNotification);
    assert_eq!(pl.counters.local[Local::PfcPause as usize].get(), 1, "only the CNP's");
    assert_eq!(pl.counters.local[Local::PeViaSid as usize].get(), 4);
    // A CNP from a node the PE does not know: forwarded by END.E all the
    // same, not the PE's.
    let mut other = lhcnp6(Action::RateReduce, 30);
    other[8..24].copy_from_slice(&a6("fc00:0:8::1").octets());
    let sum = checksum::combine(checksum::pseudo_v6(&other[8..24].try_into().unwrap(), &other[24..40].try_into().unwrap(), 58, (other.len() - 40) as u32), checksum::sum(&{ let mut m = other[40..].to_vec(); m[2..4].copy_from_slice(&[0, 0]); m }));
    other[42..44].copy_from_slice(&(!checksum::fold(sum)).to_be_bytes());
    let mut p = VecPacket::from_bytes(&frame("fc00:0:1::e", &other));
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(1));
    assert!(notes(&mut pl).is_empty());
    assert_eq!(pl.counters.local[Local::PeViaSidRefused as usize].get(), 1);
    assert_eq!(pl.counters.local[Local::EndEForwarded as usize].get(), 2);
}

/// END.C reached through another local SID (End, then END.C) on a worker
/// that does not hold the node's END.C state: handed to the owner as it
/// is now (DA = the END.C SID), where it becomes the PAUSE.
#[test]
fn end_c_behind_end_on_another_worker_goes_to_the_owner() {
    use dataplane::endc::EndCConfig;
    use dataplane::wire::lhcnp::Action;
    let mut t = sid_table();
    t.endc = vec![(0, EndCConfig::default())];
    let t = Arc::new(t);
    let (mut other, mut owner) = (pipeline(), pipeline());
    other.set_sids(t.clone());
    owner.set_sids(t);
    other.state_owner = false;
    let s = srh(41, &[sid_end(), a6("fc00:0:1::c")], 1, vec![]);
    let mut p = VecPacket::from_bytes(&srv6_frame(s1(), sid_end(), 64, 0, &s, &lhcnp6(Action::Pause, 100)));
    assert_eq!(run(&mut other, &mut p), Verdict::ToOwner);
    assert_eq!(other.counters.local[Local::PfcPause as usize].get(), 0, "no pause state here");
    assert_eq!(&p.to_vec()[14 + 24..14 + 40], &a6("fc00:0:1::c").octets(), "End was done");
    assert!(matches!(run(&mut owner, &mut p), Verdict::Tx(0)));
    assert_eq!(owner.counters.local[Local::PfcPause as usize].get(), 1);
    assert_eq!(&p.to_vec()[12..14], &[0x88, 0x08], "the PAUSE frame");
}

#[test]
fn end_c_turns_notifications_into_pfc() {
    use dataplane::endc::EndCConfig;
    use dataplane::wire::lhcnp::Action;
    let mut pl = pipeline();
    // Not configured: counted.
    let s = srh(41, &[a6("fc00:0:1::c")], 0, vec![]);
    expect_drop(&mut pl, srv6_frame(s1(), a6("fc00:0:1::c"), 64, 0, &s, &lhcnp6(Action::Pause, 100)), Drop::EndCUnconfigured);
    let mut t = sid_table();
    t.endc = vec![(0, EndCConfig::default())];
    pl.set_sids(Arc::new(t));
    // A plain packet is not a notification.
    expect_drop(&mut pl, srv6_frame(s1(), a6("fc00:0:1::c"), 64, 0, &s, &plain6(s1(), a6("2001:db8:2::10"), 0)), Drop::EndCNotNotification);
    // Nor a Long-haul CNP of a Code other than 0, flow-level (s.6.1: the
    // others are unassigned or experimental).
    for code in [1u8, 254] {
        expect_drop(&mut pl, srv6_frame(s1(), a6("fc00:0:1::c"), 64, 0, &s, &lhcnp6_code(Action::Pause, 100, code)), Drop::EndCNotNotification);
    }
    // Pause 100 us -> PFC PAUSE on priority 3 out of p0, 19532 quanta at 100 Gb/s.
    let mut p = VecPacket::from_bytes(&srv6_frame(s1(), a6("fc00:0:1::c"), 64, 0, &s, &lhcnp6(Action::Pause, 100)));
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(0));
    let f = p.to_vec();
    assert_eq!(f.len(), 60);
    assert_eq!(&f[0..6], &[0x01, 0x80, 0xc2, 0, 0, 1]);
    assert_eq!(&f[6..12], &R0);
    assert_eq!(&f[12..16], &[0x88, 0x08, 0x01, 0x01]);
    assert_eq!(&f[16..18], &[0, 0x08]);
    assert_eq!(u16::from_be_bytes([f[18 + 6], f[18 + 7]]), 19532);
    assert!(pl.reply, "PFC leaves ahead of queued data");
    // Resume -> zero quanta.
    let mut p = VecPacket::from_bytes(&srv6_frame(s1(), a6("fc00:0:1::c"), 64, 0, &s, &lhcnp6(Action::Resume, 50)));
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(0));
    assert_eq!(u16::from_be_bytes([p.to_vec()[18 + 6], p.to_vec()[18 + 7]]), 0);
    assert_eq!(pl.counters.local[Local::PfcPause as usize].get(), 1);
    assert_eq!(pl.counters.local[Local::PfcResume as usize].get(), 1);
    // A long pause is refreshed by the timers, then resumed.
    let mut p = VecPacket::from_bytes(&srv6_frame(s1(), a6("fc00:0:1::c"), 64, 0, &s, &lhcnp6(Action::Pause, 1000)));
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(0));
    let mut t = T0;
    let mut frames = Vec::new();
    while t < T0 + 2_000_000 {
        t += 10_000;
        pl.poll_endc(t);
        for (iface, a) in pl.pfc_pending.drain(..) {
            frames.push((iface, a));
        }
    }
    assert!(frames.len() >= 3, "refreshes then a resume: {frames:?}");
    assert_eq!(frames.last().unwrap().1.quanta(), 0, "ends with RESUME");
    let mut out = VecPacket::from_bytes(&[]);
    assert_eq!(pl.build_pfc(frames[0].0, &frames[0].1, &mut out), Some(0));
    assert_eq!(out.to_vec().len(), 60);
}

/// An authenticated Long-haul CNP (IPsec AH between its IPv6 header and the
/// ICMPv6 message, draft-tian s.9): END.C reads the instruction through the
/// AH, and END.E passes the packet on unchanged, AH and all, so that the
/// sender can still verify it.
#[test]
fn end_c_and_end_e_read_through_an_ah() {
    use dataplane::endc::EndCConfig;
    use dataplane::wire::ah::{self, AhKey, Algorithm};
    use dataplane::wire::lhcnp::Action;
    let key = AhKey::new(0x999, Algorithm::HmacSha256_128, &[3; 32]).unwrap();
    let protect = |action, param| {
        let mut b = lhcnp6(action, param);
        let n = b.len();
        b.resize(n + 32, 0);
        assert_eq!(ah::protect_ipv6(&mut b, n, &key, 1), Ok(n + 32));
        b
    };
    let mut pl = pipeline();
    let mut t = sid_table();
    t.endc = vec![(0, EndCConfig::default())];
    pl.set_sids(Arc::new(t));
    let s = srh(41, &[a6("fc00:0:1::c")], 0, vec![]);
    let mut p = VecPacket::from_bytes(&srv6_frame(s1(), a6("fc00:0:1::c"), 64, 0, &s, &protect(Action::Pause, 100)));
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(0));
    assert_eq!(u16::from_be_bytes([p.to_vec()[18 + 6], p.to_vec()[18 + 7]]), 19532, "the Pause of 100 us behind the AH");
    let mut p = VecPacket::from_bytes(&srv6_frame(s1(), a6("fc00:0:1::c"), 64, 0, &s, &protect(Action::Resume, 0)));
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(0));
    assert_eq!(u16::from_be_bytes([p.to_vec()[18 + 6], p.to_vec()[18 + 7]]), 0, "and the Resume");
    // An AH whose length overruns the packet is no notification.
    let mut bad = protect(Action::Pause, 100);
    bad[41] = 60;
    expect_drop(&mut pl, srv6_frame(s1(), a6("fc00:0:1::c"), 64, 0, &s, &bad), Drop::EndCNotNotification);
    // END.E: decapsulated and routed; the sender's check still passes.
    let inner = protect(Action::RateReduce, 30);
    let s = srh(41, &[a6("fc00:0:1::e")], 0, vec![]);
    let mut p = VecPacket::from_bytes(&srv6_frame(s1(), a6("fc00:0:1::e"), 64, 0, &s, &inner));
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(1));
    let f = p.to_vec();
    assert_eq!(f[14 + 7], 63, "hop limit, which the ICV does not cover");
    assert_eq!(&f[14 + 8..], &inner[8..]);
    assert_eq!(ah::verify_ipv6(&f[14..], |_| Some(&key)).map(|v| v.seq), Ok(1));
}

/// A PE with several DC gateways (draft-hu s.4.1: PAUSE "to upstream
/// device"): END.C on p0 and p2 pauses the link its notification's sender
/// is routed over. A sender routed elsewhere, or a FANN message without a
/// Flow ID, pauses every END.C link. Each link keeps its own pause state,
/// timers and link speed; a configuration push restarts only the links
/// whose settings changed.
#[test]
fn end_c_with_several_gateways_pauses_the_link_toward_the_sender() {
    use dataplane::endc::EndCConfig;
    use dataplane::wire::fann::{event, MessageRepr, CODE_EVENT};
    use dataplane::wire::lhcnp::{emit_icmpv6_packet, Action, CnpInfo, Icmpv6LhCnpRepr, MetricType, Objects};
    let cnp_to = |to: &str, action: Action, parameter: u16| {
        let repr = Icmpv6LhCnpRepr { code: 0, info: CnpInfo { congestion_level: 180, action, parameter, source_qp: 100, metric_type: MetricType::QueueDepthKb, metric_value: 1 }, objects: Objects::NONE };
        let mut buf = vec![0u8; 256];
        let n = emit_icmpv6_packet(&a6("fc00:0:9::1").octets(), &a6(to).octets(), 64, &repr, &Params::DEFAULT, &mut buf).unwrap();
        buf.truncate(n);
        buf
    };
    let table = |bps2: u64| {
        let mut t = sid_table();
        t.endc = vec![(0, EndCConfig::default()), (2, EndCConfig { link_bps: bps2, ..EndCConfig::default() })];
        Arc::new(t)
    };
    let mut pl = pipeline();
    pl.set_sids(table(100_000_000_000));
    let s = srh(41, &[a6("fc00:0:1::c")], 0, vec![]);
    let send = |pl: &mut Pipeline, inner: &[u8]| {
        let mut p = VecPacket::from_bytes(&srv6_frame(s1(), a6("fc00:0:1::c"), 64, 0, &s, inner));
        let v = run(pl, &mut p);
        let f = p.to_vec();
        (v, if f.len() == 60 { u16::from_be_bytes([f[18 + 6], f[18 + 7]]) } else { u16::MAX })
    };
    let paused = |pl: &Pipeline| (pl.endc[0].1.is_paused(3), pl.endc[1].1.is_paused(3));
    let every = |pl: &Pipeline| pl.counters.local[Local::PfcEveryInterface as usize].get();
    // A sender behind p2 (2001:db8:2::/64): p2 alone is paused.
    assert_eq!(send(&mut pl, &cnp_to("2001:db8:2::7", Action::Pause, 100)), (Verdict::Tx(2), 19532));
    assert_eq!(paused(&pl), (false, true));
    assert!(pl.pfc_pending.is_empty());
    // Its Resume resumes p2.
    assert_eq!(send(&mut pl, &cnp_to("2001:db8:2::7", Action::Resume, 0)), (Verdict::Tx(2), 0));
    assert_eq!(paused(&pl), (false, false));
    // A sender behind p0.
    assert_eq!(send(&mut pl, &cnp_to("2001:db8::5", Action::Pause, 100)), (Verdict::Tx(0), 19532));
    assert_eq!(paused(&pl), (true, false));
    assert_eq!(every(&pl), 0);
    // A sender routed over p1, no END.C link: every END.C link. p0 is
    // paused already (coalesced); p2's PAUSE goes out from the next poll.
    let coalesced = pl.counters.local[Local::PfcCoalesced as usize].get();
    assert_eq!(send(&mut pl, &cnp_to("2001:db8:3::5", Action::Pause, 100)), (Verdict::Tx(2), 19532));
    assert_eq!(pl.counters.local[Local::PfcCoalesced as usize].get(), coalesced + 1);
    assert_eq!(every(&pl), 1);
    assert_eq!(paused(&pl), (true, true));
    // A FANN event naming a flow of the p0 sender: p0 only (already
    // paused there); one without a Flow ID: both.
    let m = |flow: Option<&str>| {
        let md = dataplane::wire::fann::Metadata { flow_id: flow.map(|f| dataplane::fann::roce_flow_id(f.parse().unwrap(), "2001:db8:9::1".parse().unwrap(), 0xc123)), ..Default::default() };
        let m = MessageRepr { hop_limit: 8, event_type: event::CONGESTION, event_subtype: 2, event_id: 1, timestamp: 0, originating_node: a6("fc00:0:9::2"), metadata: md };
        dataplane::fann::notification_packet(CODE_EVENT, &m, &a6("fc00:0:9::2"), &a6("fc00:0:1::1"), &Params::DEFAULT, false)
    };
    let mut pl2 = pipeline();
    pl2.set_sids(table(100_000_000_000));
    assert_eq!(send(&mut pl2, &m(Some("2001:db8::5"))), (Verdict::Tx(0), 39063), "the default 200 us on p0");
    assert_eq!(paused(&pl2), (true, false));
    assert_eq!(send(&mut pl2, &m(Some("10.0.0.9"))).0, Verdict::Consumed, "an IPv4 sender on p0 (IPv4-mapped Flow ID), paused already");
    assert_eq!(every(&pl2), 0);
    let mut pl3 = pipeline();
    pl3.set_sids(table(100_000_000_000));
    assert_eq!(send(&mut pl3, &m(None)), (Verdict::Tx(0), 39063));
    assert_eq!(paused(&pl3), (true, true));
    assert_eq!(pl3.pfc_pending.len(), 1);
    assert_eq!((pl3.pfc_pending[0].0, pl3.pfc_pending[0].1.quanta()), (2, 39063));
    assert_eq!(every(&pl3), 1);
    // Each link's timers: refreshes, then a RESUME, on each.
    pl3.pfc_pending.clear();
    let mut frames = Vec::new();
    let mut t = T0;
    while t < T0 + 20_000_000 {
        t += 50_000;
        pl3.poll_endc(t);
        frames.append(&mut pl3.pfc_pending);
    }
    for iface in [0u16, 2] {
        let mine: Vec<u16> = frames.iter().filter(|(i, _)| *i == iface).map(|(_, a)| a.quanta()).collect();
        assert_eq!(mine.last(), Some(&0), "p{iface} ends with RESUME: {mine:?}");
    }
    let mut out = VecPacket::from_bytes(&[]);
    assert_eq!(pl3.build_pfc(2, &frames.iter().find(|(i, _)| *i == 2).unwrap().1, &mut out), Some(2), "out of port 2");
    // A new link speed on p2 keeps both links' pauses (it changes p2's
    // quanta, not its state: a_link_speed_change_does_not_lift_the_end_c_pause_in_force
    // in endc_fann.rs); p2's pause goes again at the next timer run, p0's
    // does not.
    assert_eq!(paused(&pl), (true, true));
    pl.pfc_pending.clear();
    pl.set_sids(table(25_000_000_000));
    assert_eq!(paused(&pl), (true, true));
    assert!(pl.pfc_pending.is_empty(), "{:?}", pl.pfc_pending);
    assert_eq!(pl.endc[1].1.config().link_bps, 25_000_000_000);
    pl.poll_endc(T0 + 1);
    assert_eq!(pl.pfc_pending.iter().map(|(i, a)| (*i, a.quanta() != 0)).collect::<Vec<_>>(), vec![(2, true)]);
}

/// END.C acts only on a notification that validates completely (FANN
/// draft s.6: lengths that do not add up are discarded, a FANN message
/// comes from its originating node's address; checksums and the ICRC
/// verified); FANN over UDP (s.5.2) is a notification too.
#[test]
fn end_c_refuses_malformed_notifications_and_takes_fann_over_udp() {
    use dataplane::endc::EndCConfig;
    use dataplane::wire::fann::{event, MessageRepr, CODE_EVENT};
    use dataplane::wire::lhcnp::Action;
    let mut pl = pipeline();
    let mut t = sid_table();
    t.endc = vec![(0, EndCConfig::default())];
    pl.set_sids(Arc::new(t));
    let s = srh(41, &[a6("fc00:0:1::c")], 0, vec![]);
    let frame = |inner: &[u8]| srv6_frame(s1(), a6("fc00:0:1::c"), 64, 0, &s, inner);
    let m = MessageRepr { hop_limit: 8, event_type: event::CONGESTION, event_subtype: 2, event_id: 1, timestamp: 0, originating_node: a6("fc00:0:9::1"), metadata: Default::default() };
    let icmp = dataplane::fann::notification_packet(CODE_EVENT, &m, &a6("fc00:0:9::1"), &a6("2001:db8:3::5"), &Params::DEFAULT, false);
    let udp = dataplane::fann::notification_packet(CODE_EVENT, &m, &a6("fc00:0:9::1"), &a6("2001:db8:3::5"), &Params::DEFAULT, true);
    // Malformed, each dropped without a PFC frame.
    let mut bad_sum = icmp.clone();
    bad_sum[40 + 20] ^= 1;
    let mut short = icmp.clone();
    short.truncate(short.len() - 1);
    short[5] -= 1; // IPv6 payload length follows: the FANN message is one octet short
    let mut long = icmp.clone();
    long.push(0);
    long[5] += 1; // one octet more than the bitmap says
    let mut version = icmp.clone();
    version[44] = 2;
    let mut lh_bad = lhcnp6(Action::Pause, 100);
    lh_bad[40 + 2] ^= 0xff; // ICMPv6 checksum
    let mut udp_bad = udp.clone();
    udp_bad[40 + 8 + 10] ^= 1;
    let mut udp_zero_sum = udp.clone();
    udp_zero_sum[40 + 6..40 + 8].copy_from_slice(&[0, 0]);
    // s.6: FANN is sent from the originating node's own address; one from
    // another address is not taken (a device that can reach the SID cannot
    // pause the DC in a WAN node's name).
    let forged = dataplane::fann::notification_packet(CODE_EVENT, &m, &a6("fc00:0:9::7"), &a6("2001:db8:3::5"), &Params::DEFAULT, false);
    let forged_udp = dataplane::fann::notification_packet(CODE_EVENT, &m, &a6("fc00:0:9::7"), &a6("2001:db8:3::5"), &Params::DEFAULT, true);
    for (what, inner) in [("checksum", &bad_sum), ("short", &short), ("long", &long), ("version", &version), ("lhcnp checksum", &lh_bad), ("udp checksum", &udp_bad), ("udp zero checksum", &udp_zero_sum), ("not from the originating node", &forged), ("udp, not from the originating node", &forged_udp)] {
        let mut p = VecPacket::from_bytes(&frame(inner));
        assert_eq!(run(&mut pl, &mut p), Verdict::Drop(Drop::EndCNotNotification), "{what}");
    }
    // An inner packet shorter than its own IPv6 payload length.
    let mut cut = icmp.clone();
    cut.truncate(60);
    let mut p = VecPacket::from_bytes(&frame(&cut));
    assert_eq!(run(&mut pl, &mut p), Verdict::Drop(Drop::MalformedIpv6));
    assert_eq!(pl.counters.local[Local::PfcPause as usize].get(), 0);
    // The well-formed ones: ICMPv6 and UDP FANN congestion events pause.
    let mut p = VecPacket::from_bytes(&frame(&icmp));
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(0));
    assert_eq!(&p.to_vec()[12..16], &[0x88, 0x08, 0x01, 0x01]);
    let resume = MessageRepr { event_type: event::RECOVERY, event_subtype: event::CONGESTION, ..m };
    let udp_resume = dataplane::fann::notification_packet(CODE_EVENT, &resume, &a6("fc00:0:9::1"), &a6("2001:db8:3::5"), &Params::DEFAULT, true);
    let mut p = VecPacket::from_bytes(&frame(&udp_resume));
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(0), "UDP FANN recovery: RESUME");
    assert_eq!(u16::from_be_bytes([p.to_vec()[18 + 6], p.to_vec()[18 + 7]]), 0);
    let mut p = VecPacket::from_bytes(&frame(&udp));
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(0), "UDP FANN congestion: PAUSE");
    assert_eq!(pl.counters.local[Local::PfcPause as usize].get(), 2);
    assert_eq!(pl.counters.local[Local::PfcResume as usize].get(), 1);
}

/// END.C priority mapping on the packet path: the decapsulated
/// notification's DSCP picks the priority when the table has an entry; a
/// Long-haul CNP otherwise takes rocev2_priority.
#[test]
fn end_c_maps_the_notification_to_a_pfc_priority() {
    use dataplane::endc::EndCConfig;
    use dataplane::wire::lhcnp::Action;
    let mut pl = pipeline();
    let mut t = sid_table();
    let mut c = EndCConfig { default_priority: 1, rocev2_priority: Some(4), ..EndCConfig::default() };
    c.dscp_to_priority[26] = 6;
    c.dscp_mapped = 1 << 26;
    t.endc = vec![(0, c)];
    pl.set_sids(Arc::new(t));
    let s = srh(41, &[a6("fc00:0:1::c")], 0, vec![]);
    let prio_bits = |f: &[u8]| u16::from_be_bytes([f[16], f[17]]);
    // Inner traffic class DSCP 26 (AF31): the table entry, priority 6.
    let mut inner = lhcnp6(Action::Pause, 100);
    inner[0] = 0x60 | (26 << 2 >> 4);
    inner[1] = ((26u8 << 2) << 4) | (inner[1] & 0x0f);
    let mut p = VecPacket::from_bytes(&srv6_frame(s1(), a6("fc00:0:1::c"), 64, 0, &s, &inner));
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(0));
    assert_eq!(prio_bits(&p.to_vec()), 1 << 6);
    // DSCP 0 (no entry): a Long-haul CNP names a QP, so rocev2_priority 4.
    let mut p = VecPacket::from_bytes(&srv6_frame(s1(), a6("fc00:0:1::c"), 64, 0, &s, &lhcnp6(Action::Pause, 100)));
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(0));
    assert_eq!(prio_bits(&p.to_vec()), 1 << 4);
    // A FANN congestion event without a Flow ID: the default priority 1.
    let m = dataplane::wire::fann::MessageRepr { hop_limit: 8, event_type: dataplane::wire::fann::event::CONGESTION, event_subtype: 2, event_id: 1, timestamp: 0, originating_node: a6("fc00:0:9::1"), metadata: Default::default() };
    let fann = dataplane::fann::notification_packet(0, &m, &a6("fc00:0:9::1"), &a6("2001:db8:3::5"), &Params::DEFAULT, false);
    let mut fann0 = fann.clone();
    fann0[0] = 0x60;
    fann0[1] &= 0x0f;
    let mut p = VecPacket::from_bytes(&srv6_frame(s1(), a6("fc00:0:1::c"), 64, 0, &s, &fann0));
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(0));
    assert_eq!(prio_bits(&p.to_vec()), 1 << 1);
    // The same with a Flow ID of a RoCEv2 flow (UDP to 4791): priority 4.
    let m = dataplane::wire::fann::MessageRepr {
        metadata: dataplane::wire::fann::Metadata { flow_id: Some(dataplane::wire::fann::FlowId { src: a6("2001:db8:3::5"), dst: a6("2001:db8:9::1"), src_port: 49152, dst_port: 4791, protocol: 17 }), ..Default::default() },
        event_id: 2,
        ..m
    };
    let mut fann1 = dataplane::fann::notification_packet(0, &m, &a6("fc00:0:9::1"), &a6("2001:db8:3::5"), &Params::DEFAULT, false);
    fann1[0] = 0x60;
    fann1[1] &= 0x0f;
    // Priority 4 is paused already (the second Long-haul CNP): the pause in
    // force covers this request, so no frame (coalesced, counted).
    let mut p = VecPacket::from_bytes(&srv6_frame(s1(), a6("fc00:0:1::c"), 64, 0, &s, &fann1));
    assert_eq!(run(&mut pl, &mut p), Verdict::Consumed);
    assert_eq!(pl.counters.local[Local::PfcCoalesced as usize].get(), 1);
    // The CNP's Resume ends the flow's pause on both priorities it paused
    // (6 by its first CNP's DSCP, 4 by its second): RESUME on 6, while
    // FANN event 2 still holds priority 4.
    let mut p = VecPacket::from_bytes(&srv6_frame(s1(), a6("fc00:0:1::c"), 64, 0, &s, &lhcnp6(Action::Resume, 50)));
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(0));
    let f = p.to_vec();
    assert_eq!((prio_bits(&f), u16::from_be_bytes([f[18 + 2 * 6], f[19 + 2 * 6]])), (1 << 6, 0), "RESUME on priority 6 only");
    assert!(pl.endc[0].1.is_paused(4) && !pl.endc[0].1.is_paused(6));
    assert_eq!(pl.counters.local[Local::PfcResumeHeld as usize].get(), 1);
    // The event's recovery (Code 1, the same identifier) ends it: RESUME
    // on priority 4; after it the same FANN event pauses priority 4 again.
    let rec = dataplane::wire::fann::MessageRepr { event_type: dataplane::wire::fann::event::RECOVERY, event_subtype: dataplane::wire::fann::event::CONGESTION, ..m };
    let mut rec = dataplane::fann::notification_packet(dataplane::wire::fann::CODE_RECOVERY, &rec, &a6("fc00:0:9::1"), &a6("2001:db8:3::5"), &Params::DEFAULT, false);
    rec[0] = 0x60;
    rec[1] &= 0x0f;
    let mut p = VecPacket::from_bytes(&srv6_frame(s1(), a6("fc00:0:1::c"), 64, 0, &s, &rec));
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(0));
    let f = p.to_vec();
    assert_eq!((prio_bits(&f), u16::from_be_bytes([f[18 + 2 * 4], f[19 + 2 * 4]])), (1 << 4, 0), "RESUME on priority 4");
    let mut p = VecPacket::from_bytes(&srv6_frame(s1(), a6("fc00:0:1::c"), 64, 0, &s, &fann1));
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(0));
    assert_eq!(prio_bits(&p.to_vec()), 1 << 4);
}

// ------------------------------------------------------------ End.DT6 / DT4

#[test]
fn rfc6040_table() {
    // (outer, inner) -> result
    let cases = [
        (0, 0, Some(0)),
        (2, 0, Some(0)),
        (1, 0, Some(0)),
        (3, 0, None),
        (0, 2, Some(2)),
        (2, 2, Some(2)),
        (1, 2, Some(1)),
        (3, 2, Some(3)),
        (0, 1, Some(1)),
        (2, 1, Some(1)),
        (1, 1, Some(1)),
        (3, 1, Some(3)),
        (0, 3, Some(3)),
        (2, 3, Some(3)),
        (3, 3, Some(3)),
    ];
    for (o, i, r) in cases {
        assert_eq!(rfc6040_decap(o, i), r, "outer {o} inner {i}");
    }
}

fn dt6_out(pl: &mut Pipeline, outer_tc: u8, inner_tc: u8) -> Result<Vec<u8>, Drop> {
    let inner = plain6(s1(), a6("2001:db8:2::10"), inner_tc);
    let s = srh(41, &[sid_dt6()], 0, vec![]);
    let mut p = VecPacket::from_bytes(&srv6_frame(s1(), sid_dt6(), 64, outer_tc, &s, &inner));
    match run(pl, &mut p) {
        Verdict::Tx(2) => Ok(p.to_vec()),
        Verdict::Drop(r) => Err(r),
        v => panic!("{v:?}"),
    }
}

#[test]
fn end_dt6_decapsulates_and_routes_the_inner_packet() {
    let mut pl = pipeline();
    let inner = plain6(s1(), a6("2001:db8:2::10"), 0x28);
    let s = srh(41, &[sid_dt6()], 0, vec![]);
    let mut p = VecPacket::from_bytes(&srv6_frame(s1(), sid_dt6(), 64, 0, &s, &inner));
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(2));
    let o = p.to_vec();
    assert_eq!(&o[0..6], &RX_A);
    assert_eq!(&o[12..14], &[0x86, 0xdd]);
    assert_eq!(o.len(), 14 + inner.len());
    let mut want = inner.clone();
    want[7] -= 1;
    assert_eq!(l3(&o), &want[..]);
    assert_eq!(pl.counters.local[Local::Srv6Decap as usize].get(), 1);
    // Without an SRH (next header IPv6 straight away).
    let mut p = VecPacket::from_bytes(&eth(0x86dd, &ipv6(s1(), sid_dt6(), 41, 64, 0, &inner)));
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(2));
    assert_eq!(l3(&p.to_vec()), &want[..]);
    // Octets after the outer packet (padding, trailer) are not carried
    // into the decapsulated one.
    let mut f = srv6_frame(s1(), sid_dt6(), 64, 0, &s, &inner);
    f.extend_from_slice(&[0xee; 10]);
    let mut p = VecPacket::from_bytes(&f);
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(2));
    let o = p.to_vec();
    assert_eq!(o.len(), 14 + inner.len());
    assert_eq!(l3(&o), &want[..]);
}

#[test]
fn end_dt6_ecn_propagation() {
    let mut pl = pipeline();
    // Outer CE, inner ECT(0): inner becomes CE.
    let o = dt6_out(&mut pl, 0x03, 0x02).unwrap();
    assert_eq!(Ipv6Packet::new_checked(l3(&o)).unwrap().ecn(), 3);
    // Outer CE, inner ECT(1): CE.
    let o = dt6_out(&mut pl, 0xa3, 0x01).unwrap();
    assert_eq!(Ipv6Packet::new_checked(l3(&o)).unwrap().ecn(), 3);
    // DSCP of the inner kept.
    assert_eq!(Ipv6Packet::new_checked(l3(&o)).unwrap().dscp(), 0);
    // Outer ECT(1), inner ECT(0): ECT(1).
    let o = dt6_out(&mut pl, 0x01, 0x02).unwrap();
    assert_eq!(Ipv6Packet::new_checked(l3(&o)).unwrap().ecn(), 1);
    // Outer Not-ECT, inner CE: CE kept.
    let o = dt6_out(&mut pl, 0x00, 0x03).unwrap();
    assert_eq!(Ipv6Packet::new_checked(l3(&o)).unwrap().ecn(), 3);
    // Outer ECT(0), inner Not-ECT: Not-ECT.
    let o = dt6_out(&mut pl, 0x02, 0x00).unwrap();
    assert_eq!(Ipv6Packet::new_checked(l3(&o)).unwrap().ecn(), 0);
    // Outer CE, inner Not-ECT: dropped and counted.
    assert_eq!(dt6_out(&mut pl, 0x03, 0x00), Err(Drop::DecapCeNotEct));
    assert_eq!(drops(&pl, Drop::DecapCeNotEct), 1);
}

#[test]
fn end_dt_violations() {
    let inner = plain6(s1(), a6("2001:db8:2::10"), 0);
    let in4 = ipv4(Ipv4Addr::new(10, 0, 0, 2), Ipv4Addr::new(10, 1, 0, 2), 17, 64, 0, &[0; 12]);
    // SL > 0 at a decapsulating SID: RFC 8986 s.4.6 / s.4.8 (S01-S06 of
    // End.DX6), Parameter Problem code 0 at the Segments Left (octet 3 of
    // the SRH after the 40-octet IPv6 header).
    let sl1 = srh(41, &[remote(9), sid_dt6()], 1, vec![]);
    let sl1_4 = srh(4, &[remote(9), sid_dt4()], 1, vec![]);
    // IPv4 inside an End.DT6 SID / IPv6 inside End.DT4 / UDP: s.4.1.1,
    // Parameter Problem code 4 at the upper-layer header (after the
    // 24-octet SRH of one segment).
    let v4_in_dt6 = srv6_frame(s1(), sid_dt6(), 64, 0, &srh(4, &[sid_dt6()], 0, vec![]), &in4);
    let v6_in_dt4 = srv6_frame(s1(), sid_dt4(), 64, 0, &srh(41, &[sid_dt4()], 0, vec![]), &inner);
    let udp_in_dt6 = srv6_frame(s1(), sid_dt6(), 64, 0, &srh(17, &[sid_dt6()], 0, vec![]), &udp6(s1(), sid_dt6(), 1, 2, b"x"));
    let mut pl = pipeline();
    expect_param_problem(&mut pl, srv6_frame(s1(), sid_dt6(), 64, 0, &sl1, &inner), 0, 43);
    expect_param_problem(&mut pl, srv6_frame(s1(), sid_dt4(), 64, 0, &sl1_4, &in4), 0, 43);
    expect_param_problem(&mut pl, v4_in_dt6.clone(), 4, 64);
    expect_param_problem(&mut pl, v6_in_dt4.clone(), 4, 64);
    expect_param_problem(&mut pl, udp_in_dt6.clone(), 4, 64);
    // With the ICMP error limit spent, the drops are counted by name.
    let mut pl = pipeline_with(PipelineConfig { icmp_error_rate_pps: 0, icmp_error_burst: 0, ..PipelineConfig::default() });
    expect_drop(&mut pl, srv6_frame(s1(), sid_dt6(), 64, 0, &sl1, &inner), Drop::DecapSlNonZero);
    expect_drop(&mut pl, v4_in_dt6, Drop::DecapNextHeader);
    expect_drop(&mut pl, v6_in_dt4, Drop::DecapNextHeader);
    expect_drop(&mut pl, udp_in_dt6, Drop::DecapNextHeader);
}

/// RFC 8986 s.4.1.1 at an End.DT6 SID: an ICMPv6 message in place of the
/// inner packet is processed locally, so the SID answers a ping.
#[test]
fn end_dt6_answers_a_ping_to_the_sid() {
    let mut pl = pipeline();
    let mut m = vec![128u8, 0, 0, 0, 0, 7, 0, 1, 0xaa, 0xbb];
    let sum = checksum::combine(checksum::pseudo_v6(&s1().octets(), &sid_dt6().octets(), 58, m.len() as u32), checksum::sum(&m));
    m[2..4].copy_from_slice(&(!checksum::fold(sum)).to_be_bytes());
    let mut p = VecPacket::from_bytes(&eth(0x86dd, &ipv6(s1(), sid_dt6(), 58, 64, 0, &m)));
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(0));
    let o = p.to_vec();
    let ip = l3(&o);
    assert_eq!((ip[6], ip[40]), (58, 129), "an Echo Reply");
    assert_eq!((&ip[8..24], &ip[24..40]), (&sid_dt6().octets()[..], &s1().octets()[..]));
    assert_eq!(&ip[44..50], &m[4..10], "identifier, sequence and data echoed");
}

#[test]
fn end_dt4_decapsulates_with_ecn_and_ttl() {
    let mut pl = pipeline();
    let in4 = ipv4(Ipv4Addr::new(10, 0, 0, 2), Ipv4Addr::new(10, 1, 0, 2), 17, 64, 0x02, &[0; 12]);
    let s = srh(4, &[sid_dt4()], 0, vec![]);
    let mut p = VecPacket::from_bytes(&srv6_frame(s1(), sid_dt4(), 64, 0x03, &s, &in4));
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(1));
    let o = p.to_vec();
    assert_eq!(&o[12..14], &[0x08, 0x00]);
    let ip = Ipv4Packet::new_checked(l3(&o)).unwrap();
    assert!(ip.verify_checksum());
    assert_eq!(ip.ecn(), 3);
    assert_eq!(ip.ttl(), 63);
    assert_eq!(ip.dst_addr(), Ipv4Addr::new(10, 1, 0, 2));
    // Octets after the outer packet are not carried into the inner one.
    let mut f = srv6_frame(s1(), sid_dt4(), 64, 0x03, &s, &in4);
    f.extend_from_slice(&[0xee; 10]);
    let mut p = VecPacket::from_bytes(&f);
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(1));
    let o = p.to_vec();
    assert_eq!(o.len(), 14 + in4.len());
    assert_eq!(Ipv4Packet::new_checked(l3(&o)).unwrap().ttl(), 63);
}

// ------------------------------------------------------------ End.MT

fn receivers_a() -> Vec<(Ipv6Addr, u32)> {
    vec![(a6("2001:db8:2::10"), 0x00abcd), (a6("2001:db8:2::11"), 0x123456), (a6("2001:db8:3::5"), 0xfffffe)]
}

/// An End.MT packet: SRH [sid, proxy-side segment], SL 1, with End.MT TLVs
/// for another edge first and then for us.
fn mt_frame(da: Ipv6Addr, edge: Ipv6Addr, rs: &[(Ipv6Addr, u32)], outer_tc: u8, inner_tc: u8) -> Vec<u8> {
    let tlvs = vec![mt_tlv(a6("fc00:0:7::10"), &[(a6("2001:db8:7::1"), 0x42)]), mt_tlv(edge, rs), mt_tlv(a6("fc00:0:8::10"), &[])];
    let s = srh(41, &[da, proxy()], 1, tlvs);
    srv6_frame(s1(), da, 64, outer_tc, &s, &roce6(inner_tc, 200))
}

/// Build every replica; return (port, frame) or the drop per copy.
fn replicas(pl: &mut Pipeline, orig: &VecPacket, n: u16) -> Vec<Result<(u16, Vec<u8>), Drop>> {
    (0..usize::from(n))
        .map(|i| {
            let mut c = VecPacket::from_bytes(&[]);
            pl.build_replica(i, orig, &mut c, T0).map(|port| (port, c.to_vec()))
        })
        .collect()
}

fn check_replica(frame: &[u8], addr: Ipv6Addr, qpn: u32, orig_inner: &[u8]) {
    let d = l3(frame);
    roce::icrc_check(d).unwrap_or_else(|e| panic!("ICRC of replica to {addr}: {e:?}"));
    let ip = Ipv6Packet::new_checked(d).unwrap();
    assert_eq!(ip.dst_addr(), addr);
    assert_eq!(ip.src_addr(), s1());
    assert_eq!(ip.hop_limit(), orig_inner[7] - 1, "a routed hop");
    let bth = roce::Bth::new_checked(&d[48..]).unwrap();
    assert_eq!(bth.dest_qp(), qpn);
    assert_eq!(bth.psn(), 5);
    // UDP checksum still verifies.
    let u = &d[40..];
    let s = checksum::combine(checksum::pseudo_v6(&ip.src_addr().octets(), &addr.octets(), 17, u.len() as u32), checksum::sum(u));
    assert_eq!(checksum::fold(s), 0xffff, "UDP checksum of replica to {addr}");
    // Payload untouched.
    assert_eq!(&d[60..d.len() - 4], &orig_inner[60..orig_inner.len() - 4]);
    assert_eq!(d.len(), orig_inner.len());
}

#[test]
fn end_mt_replicates_to_each_receiver_of_its_tlv() {
    let mut pl = pipeline();
    let f = mt_frame(sid_mt(), sid_mt(), &receivers_a(), 0, 0x02);
    let mut p = VecPacket::from_bytes(&f);
    assert_eq!(run(&mut pl, &mut p), Verdict::Replicate(3));
    // The original is not modified.
    assert_eq!(p.to_vec(), f);
    let inner = roce6(0x02, 200);
    let out = replicas(&mut pl, &p, 3);
    let ports = [2u16, 2, 1];
    let macs = [RX_A, RX_B, GW1];
    for (i, ((addr, qpn), r)) in receivers_a().into_iter().zip(out).enumerate() {
        let (port, frame) = r.unwrap();
        assert_eq!(port, ports[i]);
        assert_eq!(&frame[0..6], &macs[i]);
        assert_eq!(&frame[12..14], &[0x86, 0xdd]);
        check_replica(&frame, addr, qpn, &inner);
        assert_eq!(Ipv6Packet::new_checked(l3(&frame)).unwrap().ecn(), 2);
    }
    assert_eq!(pl.counters.local[Local::EndMtReplica as usize].get(), 3);
    // Out-of-range index.
    let mut c = VecPacket::from_bytes(&[]);
    assert_eq!(pl.build_replica(3, &p, &mut c, T0), Err(Drop::ReplicaInvalid));
}

/// Zero-copy replicas: the private header, the original's payload range
/// and the returned ICRC are byte for byte the full copy; a tree-interior
/// copy asks for a full copy.
#[test]
fn end_mt_zero_copy_head_equals_the_full_copy() {
    let mut pl = pipeline();
    let f = mt_frame(sid_mt(), sid_mt(), &receivers_a(), 0, 0x02);
    let mut p = VecPacket::from_bytes(&f);
    assert_eq!(run(&mut pl, &mut p), Verdict::Replicate(3));
    let full = replicas(&mut pl, &p, 3);
    for (i, want) in full.into_iter().enumerate() {
        let (want_port, want) = want.unwrap();
        let mut h = VecPacket::from_bytes(&[]);
        let rh = pl.build_replica_head(i, &p.to_vec(), &mut h, T0).unwrap().expect("a zero-copy head");
        assert_eq!(rh.port, want_port);
        assert_eq!(h.to_vec().len(), 14 + dataplane::srv6::REPLICA_HEAD);
        let mut got = h.to_vec();
        got.extend_from_slice(&f[rh.payload_off..rh.payload_off + rh.payload_len]);
        got.extend_from_slice(&rh.icrc);
        assert_eq!(got, want, "replica {i}");
    }
    assert_eq!(pl.counters.local[Local::EndMtReplica as usize].get(), 6);
    let mut h = VecPacket::from_bytes(&[]);
    assert_eq!(pl.build_replica_head(3, &p.to_vec(), &mut h, T0), Err(Drop::ReplicaInvalid));

    let mut pl = pipeline();
    let f = mt_frame(sid_mt_tree(), a6("fc00:0:2::1"), &receivers_a(), 0, 0);
    let mut p = VecPacket::from_bytes(&f);
    assert_eq!(run(&mut pl, &mut p), Verdict::Replicate(2));
    assert_eq!(pl.build_replica_head(0, &p.to_vec(), &mut h, T0), Ok(None), "downstream copies are full copies");
}

#[test]
fn end_mt_matches_the_tlv_by_node_address_and_propagates_ce() {
    let mut pl = pipeline();
    // No TLV names the SID; one names the configured node address.
    let rs = vec![(a6("2001:db8:2::11"), 0x000777)];
    let f = mt_frame(sid_mt(), node_addr(), &rs, 0x03, 0x01);
    let mut p = VecPacket::from_bytes(&f);
    assert_eq!(run(&mut pl, &mut p), Verdict::Replicate(1));
    let (port, frame) = replicas(&mut pl, &p, 1).remove(0).unwrap();
    assert_eq!(port, 2);
    check_replica(&frame, rs[0].0, rs[0].1, &roce6(0x01, 200));
    assert_eq!(Ipv6Packet::new_checked(l3(&frame)).unwrap().ecn(), 3, "outer CE onto an ECT inner");
    // Outer CE onto a Not-ECT inner: dropped.
    expect_drop(&mut pl, mt_frame(sid_mt(), sid_mt(), &rs, 0x03, 0x00), Drop::DecapCeNotEct);
    // s.6.1: the Edge Node Address is "the IPv6 unicast address of the
    // edge node": a TLV naming one of its interface addresses (p1's
    // 2001:db8:1::1) is this node's too.
    let f = mt_frame(sid_mt(), a6("2001:db8:1::1"), &rs, 0, 0x01);
    let mut p = VecPacket::from_bytes(&f);
    assert_eq!(run(&mut pl, &mut p), Verdict::Replicate(1));
    let (port, frame) = replicas(&mut pl, &p, 1).remove(0).unwrap();
    assert_eq!(port, 2);
    check_replica(&frame, rs[0].0, rs[0].1, &roce6(0x01, 200));
}

#[test]
fn end_mt_invalid_packets() {
    let mut pl = pipeline();
    // SL == 0.
    let s = srh(41, &[sid_mt()], 0, vec![mt_tlv(sid_mt(), &receivers_a())]);
    expect_drop(&mut pl, srv6_frame(s1(), sid_mt(), 64, 0, &s, &roce6(0, 64)), Drop::EndMtSlZero);
    // No SRH.
    expect_drop(&mut pl, eth(0x86dd, &ipv6(s1(), sid_mt(), 41, 64, 0, &roce6(0, 64))), Drop::EndMtNoSrh);
    // No TLV for us (only another edge's).
    let f = mt_frame(sid_mt(), a6("fc00:0:9::10"), &receivers_a(), 0, 0);
    expect_drop(&mut pl, f, Drop::EndMtNoTlv);
    // Truncated End.MT TLV: Length says 2 receivers, Num Receivers 3.
    let mut s = srh(41, &[sid_mt(), proxy()], 1, vec![mt_tlv(sid_mt(), &receivers_a()[..2]), TlvRepr::PadN(18)]);
    let tlv_at = 8 + 32;
    assert_eq!(s[tlv_at], MT);
    s[tlv_at + 20] = 3; // Num Receivers
    expect_drop(&mut pl, srv6_frame(s1(), sid_mt(), 64, 0, &s, &roce6(0, 64)), Drop::EndMtTlvMalformed);
    // Inner packet not RoCEv2.
    let s = srh(41, &[sid_mt(), proxy()], 1, vec![mt_tlv(sid_mt(), &receivers_a())]);
    expect_drop(&mut pl, srv6_frame(s1(), sid_mt(), 64, 0, &s, &plain6(s1(), proxy(), 0)), Drop::EndMtNotRoce);
    // Outer hop limit 1: ICMPv6 Time Exceeded to the source, as End does
    // (the draft's Ref1: RFC 8754 s.4.3.1.1).
    let s = srh(41, &[sid_mt(), proxy()], 1, vec![mt_tlv(sid_mt(), &receivers_a())]);
    let before = pl.counters.local[Local::TimeExceeded6 as usize].get();
    let mut p = VecPacket::from_bytes(&srv6_frame(s1(), sid_mt(), 1, 0, &s, &roce6(0, 64)));
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(0));
    assert_eq!(pl.counters.local[Local::TimeExceeded6 as usize].get(), before + 1);
    let f = p.to_vec();
    let o = l3(&f);
    assert_eq!((o[6], o[40], o[41]), (58, 3, 0), "ICMPv6 Time Exceeded, hop limit exceeded in transit");
    assert_eq!(&o[24..40], &s1().octets());
}

fn hmac_frame(key: Option<&HmacKey>, corrupt: bool) -> Vec<u8> {
    let da = sid_mt_hmac();
    let mut tlvs = vec![mt_tlv(da, &receivers_a()[..2])];
    if let Some(k) = key {
        tlvs.push(TlvRepr::Hmac(HmacTlvRepr::placeholder(k, false)));
    }
    let mut s = srh(41, &[da, proxy()], 1, tlvs);
    if let Some(key) = key {
        let keys: HmacKeyTable = [key.clone()].into_iter().collect();
        Srh::new_checked(&mut s[..]).unwrap().fill_hmac(&s1(), &keys).unwrap();
    }
    if corrupt {
        let n = s.len();
        s[n - 1] ^= 1;
    }
    srv6_frame(s1(), da, 64, 0, &s, &roce6(0, 64))
}

#[test]
fn end_mt_hmac() {
    let mut pl = pipeline();
    let mut p = VecPacket::from_bytes(&hmac_frame(Some(&hmac_key()), false));
    assert_eq!(run(&mut pl, &mut p), Verdict::Replicate(2));
    for (r, (a, q)) in replicas(&mut pl, &p, 2).into_iter().zip(receivers_a()) {
        check_replica(&r.unwrap().1, a, q, &roce6(0, 64));
    }
    expect_drop(&mut pl, hmac_frame(Some(&hmac_key()), true), Drop::SrhHmacBad);
    expect_drop(&mut pl, hmac_frame(None, false), Drop::SrhHmacMissing);
    let other = HmacKey::new(99, b"x", 32).unwrap();
    expect_drop(&mut pl, hmac_frame(Some(&other), false), Drop::SrhHmacKeyUnknown);
    // The same packets to a SID without hmac_required are replicated.
    let f = hmac_frame(None, false);
    let mut f2 = f.clone();
    // Rewrite the DA and the TLV's edge to the plain End.MT SID.
    f2[14 + 24..14 + 40].copy_from_slice(&sid_mt().octets());
    f2[14 + 40 + 8 + 16..14 + 40 + 8 + 32].copy_from_slice(&sid_mt().octets());
    f2[14 + 40 + 8 + 32 + 4..14 + 40 + 8 + 32 + 20].copy_from_slice(&sid_mt().octets());
    let mut p = VecPacket::from_bytes(&f2);
    assert_eq!(run(&mut pl, &mut p), Verdict::Replicate(2));
}

#[test]
fn end_mt_provisioned_receivers_are_added() {
    let mut pl = pipeline();
    let rs = vec![(a6("2001:db8:2::10"), 0x10)];
    let mut p = VecPacket::from_bytes(&mt_frame(sid_mt_prov(), sid_mt_prov(), &rs, 0, 0));
    assert_eq!(run(&mut pl, &mut p), Verdict::Replicate(2));
    let out = replicas(&mut pl, &p, 2);
    let inner = roce6(0, 200);
    check_replica(&out[0].as_ref().unwrap().1, rs[0].0, 0x10, &inner);
    assert_eq!(out[1].as_ref().unwrap().0, 1);
    check_replica(&out[1].as_ref().unwrap().1, a6("2001:db8:3::7"), 0x777, &inner);
    // Without any TLV for us: only the provisioned one.
    let mut p = VecPacket::from_bytes(&mt_frame(sid_mt_prov(), a6("fc00:0:9::"), &rs, 0, 0));
    assert_eq!(run(&mut pl, &mut p), Verdict::Replicate(1));
    check_replica(&replicas(&mut pl, &p, 1)[0].as_ref().unwrap().1, a6("2001:db8:3::7"), 0x777, &inner);
}

/// A receiver QP provisioned for the SID that the packet's TLV lists too
/// gets the TLV's copy only; the second copy is not made and is counted.
/// Another QPN at the same address is another QP: its own copy.
#[test]
fn end_mt_receiver_in_the_tlv_and_provisioned_gets_one_copy() {
    let mut pl = pipeline();
    let inner = roce6(0, 200);
    let rs = vec![(a6("2001:db8:2::10"), 0x10), (a6("2001:db8:3::7"), 0x777)];
    let mut p = VecPacket::from_bytes(&mt_frame(sid_mt_prov(), sid_mt_prov(), &rs, 0, 0));
    assert_eq!(run(&mut pl, &mut p), Verdict::Replicate(3));
    let out = replicas(&mut pl, &p, 3);
    check_replica(&out[0].as_ref().unwrap().1, rs[0].0, 0x10, &inner);
    check_replica(&out[1].as_ref().unwrap().1, a6("2001:db8:3::7"), 0x777, &inner);
    assert_eq!(out[2], Err(Drop::EndMtReceiverInTlv), "the provisioned 2001:db8:3::7 QPN 0x777 is in the TLV already");
    let rs = vec![(a6("2001:db8:3::7"), 0x99)];
    let mut p = VecPacket::from_bytes(&mt_frame(sid_mt_prov(), sid_mt_prov(), &rs, 0, 0));
    assert_eq!(run(&mut pl, &mut p), Verdict::Replicate(2));
    let out = replicas(&mut pl, &p, 2);
    check_replica(&out[0].as_ref().unwrap().1, a6("2001:db8:3::7"), 0x99, &inner);
    check_replica(&out[1].as_ref().unwrap().1, a6("2001:db8:3::7"), 0x777, &inner);
}

/// A fragment of an End.MT packet is dropped, never parsed as the inner
/// packet (RFC 8754 nodes do not reassemble).
#[test]
fn end_mt_fragment_is_dropped() {
    let mut pl = pipeline();
    let tlvs = vec![mt_tlv(sid_mt(), &receivers_a())];
    let s = srh(41, &[sid_mt(), proxy()], 1, tlvs);
    let mut payload = vec![43, 0, 0, 1, 0, 0, 0, 7]; // Fragment header: SRH next, offset 0, M = 1
    payload.extend_from_slice(&s);
    payload.extend_from_slice(&roce6(0, 200));
    let f = eth(0x86dd, &ipv6(s1(), sid_mt(), 44, 64, 0, &payload));
    let mut p = VecPacket::from_bytes(&f);
    assert_eq!(run(&mut pl, &mut p), Verdict::Drop(Drop::EndMtFragment));
}

#[test]
fn end_mt_tree_interior_replicates_the_outer_packet() {
    let mut pl = pipeline();
    // An interior node: no TLV for it, two downstream edge SIDs.
    let f = mt_frame(sid_mt_tree(), a6("fc00:0:2::1"), &receivers_a(), 0, 0);
    let mut p = VecPacket::from_bytes(&f);
    assert_eq!(run(&mut pl, &mut p), Verdict::Replicate(2));
    for (i, r) in replicas(&mut pl, &p, 2).into_iter().enumerate() {
        let (port, frame) = r.unwrap();
        assert_eq!(port, 1);
        assert_eq!(&frame[0..6], &GW1);
        let d = l3(&frame);
        let ip = Ipv6Packet::new_checked(d).unwrap();
        assert_eq!(ip.dst_addr(), remote(2 + i as u16));
        assert_eq!(ip.hop_limit(), 63);
        // SRH and inner packet unchanged (SL still 1).
        assert_eq!(&d[40..], &f[14 + 40..]);
        assert_eq!(Srh::new_checked(&d[40..]).unwrap().segments_left(), 1);
    }
    // The replicas, received by the edge node, are End.MT packets: run one
    // through an edge pipeline whose SID is the downstream SID.
    let mut edge = pipeline();
    let mut t = sid_table();
    t.insert(remote(2), Behaviour::end_mt());
    edge.set_sids(Arc::new(t));
    let f = mt_frame(sid_mt_tree(), remote(2), &receivers_a(), 0, 0);
    let mut p = VecPacket::from_bytes(&f);
    assert_eq!(run(&mut pl, &mut p), Verdict::Replicate(2));
    let (_, down) = replicas(&mut pl, &p, 1).remove(0).unwrap();
    let mut down = down;
    down[0..6].copy_from_slice(&R0);
    let mut q = VecPacket::from_bytes(&down);
    assert_eq!(run(&mut edge, &mut q), Verdict::Replicate(3));
    for (r, (a, qp)) in replicas(&mut edge, &q, 3).into_iter().zip(receivers_a()) {
        let (_, fr) = r.unwrap();
        let d = l3(&fr);
        roce::icrc_check(d).unwrap();
        assert_eq!(Ipv6Packet::new_checked(d).unwrap().dst_addr(), a);
        assert_eq!(roce::Bth::new_checked(&d[48..]).unwrap().dest_qp(), qp);
    }
}

// ------------------------------------------------------------ H.Encaps

fn with_policies(pl: &mut Pipeline) {
    let mut t = sid_table();
    let src = a6("fc00:0:1::100");
    t.add_policy("2001:db8:99::/48".parse().unwrap(), SrPolicy::new(src, EncapMode::Encaps, vec![(vec![remote(2), remote(3), remote(4)], 1)]).unwrap());
    t.add_policy("2001:db8:99:1::/64".parse().unwrap(), SrPolicy::new(src, EncapMode::EncapsRed, vec![(vec![remote(2), remote(3), remote(4)], 1)]).unwrap());
    t.add_policy("2001:db8:99:2::/64".parse().unwrap(), SrPolicy::new(src, EncapMode::EncapsRed, vec![(vec![remote(5)], 1)]).unwrap());
    t.add_policy("198.51.100.0/24".parse().unwrap(), SrPolicy::new(src, EncapMode::Encaps, vec![(vec![remote(6)], 1), (vec![remote(7), remote(8)], 3)]).unwrap());
    pl.set_sids(Arc::new(t));
}

#[test]
fn h_encaps_ipv6() {
    let mut pl = pipeline();
    with_policies(&mut pl);
    let inner = plain6(a6("2001:db8::2"), a6("2001:db8:99::5"), 0xb9);
    let mut p = VecPacket::from_bytes(&eth(0x86dd, &inner));
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(1));
    let o = p.to_vec();
    assert_eq!(&o[0..6], &GW1);
    let d = l3(&o);
    let ip = Ipv6Packet::new_checked(d).unwrap();
    assert_eq!(ip.src_addr(), a6("fc00:0:1::100"));
    assert_eq!(ip.dst_addr(), remote(2));
    assert_eq!(ip.hop_limit(), 64);
    assert_eq!(ip.traffic_class(), 0xb9);
    assert_ne!(ip.flow_label(), 0);
    assert_eq!(usize::from(ip.payload_len()), d.len() - 40);
    assert_eq!(ip.next_header().0, 43);
    let sr = Srh::new_checked(&d[40..]).unwrap();
    let r = SrhRepr::parse(&sr, MT).unwrap();
    assert_eq!(r.next_header, 41);
    assert_eq!(r.segments, vec![remote(4), remote(3), remote(2)]);
    assert_eq!(r.segments_left, 2);
    assert_eq!(&d[40 + sr.header_len()..], &routed6(&inner)[..], "inner packet unchanged but for its hop limit");
    assert_eq!(pl.counters.local[Local::Srv6Encap as usize].get(), 1);
    // Same flow, same flow label.
    let mut p2 = VecPacket::from_bytes(&eth(0x86dd, &inner));
    run(&mut pl, &mut p2);
    assert_eq!(Ipv6Packet::new_checked(l3(&p2.to_vec())).unwrap().flow_label(), ip.flow_label());
}

#[test]
fn h_encaps_red() {
    let mut pl = pipeline();
    with_policies(&mut pl);
    let inner = plain6(a6("2001:db8::2"), a6("2001:db8:99:1::5"), 0);
    let mut p = VecPacket::from_bytes(&eth(0x86dd, &inner));
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(1));
    let o = p.to_vec();
    let d = l3(&o);
    assert_eq!(Ipv6Packet::new_checked(d).unwrap().dst_addr(), remote(2));
    let sr = Srh::new_checked(&d[40..]).unwrap();
    assert_eq!(sr.last_entry(), 1);
    assert_eq!(sr.segments_left(), 2);
    assert_eq!(sr.segments().collect::<Vec<_>>(), vec![remote(4), remote(3)]);
    assert_eq!(&d[40 + sr.header_len()..], &routed6(&inner)[..]);
    // The next End node handles SL = Last Entry + 1.
    let mut mid = pipeline();
    let mut t = sid_table();
    t.insert(remote(2), Behaviour::End);
    mid.set_sids(Arc::new(t));
    let mut f = o.clone();
    f[0..6].copy_from_slice(&R0);
    let mut q = VecPacket::from_bytes(&f);
    assert_eq!(run(&mut mid, &mut q), Verdict::Tx(1));
    assert_eq!(Ipv6Packet::new_checked(l3(&q.to_vec())).unwrap().dst_addr(), remote(3));
    // One SID: no SRH at all.
    let inner = plain6(a6("2001:db8::2"), a6("2001:db8:99:2::5"), 0);
    let mut p = VecPacket::from_bytes(&eth(0x86dd, &inner));
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(1));
    let o = p.to_vec();
    let ip = Ipv6Packet::new_checked(l3(&o)).unwrap();
    assert_eq!(ip.next_header().0, 41);
    assert_eq!(ip.dst_addr(), remote(5));
    assert_eq!(&l3(&o)[40..], &routed6(&inner)[..]);
}

#[test]
fn h_encaps_ipv4_with_weighted_lists() {
    let mut pl = pipeline();
    with_policies(&mut pl);
    let mut seen = std::collections::HashMap::new();
    for port in 0..200u16 {
        let mut udp = vec![0u8; 12];
        udp[0..2].copy_from_slice(&(1000 + port).to_be_bytes());
        udp[2..4].copy_from_slice(&53u16.to_be_bytes());
        let inner = ipv4(Ipv4Addr::new(10, 0, 0, 2), Ipv4Addr::new(198, 51, 100, 9), 17, 64, 0x03, &udp);
        let mut p = VecPacket::from_bytes(&eth(0x0800, &inner));
        assert_eq!(run(&mut pl, &mut p), Verdict::Tx(1));
        let o = p.to_vec();
        assert_eq!(&o[12..14], &[0x86, 0xdd]);
        let d = l3(&o);
        let ip = Ipv6Packet::new_checked(d).unwrap();
        assert_eq!(ip.ecn(), 3, "ECN copied (RFC 6040 normal mode)");
        let sr = Srh::new_checked(&d[40..]).unwrap();
        assert_eq!(sr.next_header(), 4);
        // A routed hop: TTL 63, the header checksum computed anew.
        let expect = ipv4(Ipv4Addr::new(10, 0, 0, 2), Ipv4Addr::new(198, 51, 100, 9), 17, 63, 0x03, &udp);
        assert_eq!(&d[40 + sr.header_len()..], &expect[..], "inner IPv4 unchanged but for its TTL");
        *seen.entry(ip.dst_addr()).or_insert(0) += 1;
    }
    let a = seen[&remote(6)];
    let b = seen[&remote(7)];
    assert_eq!(a + b, 200);
    assert!(b > a && a > 20, "weights 1:3 -> {a}:{b}");
}

/// FANN draft s.4.2 on the data path: the ingress PE holds policy
/// 2001:db8:99::/48 to half its rate. Its meter measured ~490 Mb/s (one
/// 61-octet packet per microsecond); what goes over half of that is marked
/// CE, inner and outer (the outer copies the inner's ECN, RFC 6040), none
/// is dropped, Not-ECT packets go unmarked and are counted; when the limit
/// ends nothing is marked.
#[test]
fn h_encaps_marks_what_exceeds_the_policys_rate_share() {
    let table = |rate: Option<u16>, rate4: Option<u16>| {
        let mut t = sid_table();
        let src = a6("fc00:0:1::100");
        let mut p = SrPolicy::new(src, EncapMode::Encaps, vec![(vec![remote(2), remote(3)], 1)]).unwrap();
        p.rate_permille = rate;
        t.add_policy("2001:db8:99::/48".parse().unwrap(), p);
        let mut p = SrPolicy::new(src, EncapMode::Encaps, vec![(vec![remote(6)], 1)]).unwrap();
        p.rate_permille = rate4;
        t.add_policy("198.51.100.0/24".parse().unwrap(), p);
        Arc::new(t)
    };
    let mut pl = pipeline();
    pl.set_sids(table(None, None));
    let us = 1_000u64;
    let mut now = T0;
    // (inner ECN, outer ECN, tc of the inner) of what left, per packet.
    let send = |pl: &mut Pipeline, now: u64, tc: u8| {
        let inner = plain6(a6("2001:db8::2"), a6("2001:db8:99::5"), tc);
        let mut p = VecPacket::from_bytes(&eth(0x86dd, &inner));
        assert_eq!(pl.process(&mut p, 0, now), Verdict::Tx(1), "never dropped");
        let o = p.to_vec();
        let d = l3(&o);
        let outer = Ipv6Packet::new_checked(d).unwrap().ecn();
        let sr = Srh::new_checked(&d[40..]).unwrap();
        let inner = Ipv6Packet::new_checked(&d[40 + sr.header_len()..]).unwrap();
        (inner.ecn(), outer, inner.traffic_class())
    };
    for _ in 0..10_000 {
        assert_eq!(send(&mut pl, now, 0x02), (2, 2, 0x02), "no limit: untouched");
        now += us;
    }
    assert_eq!(pl.counters.local[Local::PeRateCeMarked as usize].get(), 0);
    // The PE holds it to 50 %.
    pl.set_sids(table(Some(500), None));
    let (mut ect, mut marked, mut not_ect) = (0u32, 0u32, 0u32);
    for i in 0..20_000u32 {
        // Every seventh Not-ECT (an odd period: the meter lets every other
        // packet through, so an even one would alias).
        let tc = if i % 7 == 3 { 0x00 } else { 0x02 };
        let (ie, oe, itc) = send(&mut pl, now, tc);
        if tc == 0 {
            assert_eq!((ie, oe), (0, 0), "Not-ECT is never marked");
            not_ect += 1;
        } else {
            ect += 1;
            assert_eq!(ie, oe, "the outer header copies the inner's ECN");
            assert_eq!(itc >> 2, 0, "only the ECN bits change");
            if ie == 3 {
                marked += 1;
            }
        }
        now += us;
    }
    let over_not_ect = pl.counters.local[Local::PeRateOverNotEct as usize].get();
    assert_eq!(u64::from(marked), pl.counters.local[Local::PeRateCeMarked as usize].get());
    // Half the bits are over the share, less the 1 ms burst the limit
    // starts with (500 packets): 47.5 % of the packets, ECT or not.
    let frac = f64::from(marked) / f64::from(ect);
    assert!((0.45..=0.50).contains(&frac), "{marked} of {ect} ECT packets marked");
    let frac = over_not_ect as f64 / f64::from(not_ect);
    assert!((0.45..=0.50).contains(&frac), "{over_not_ect} of {not_ect} Not-ECT packets over");
    // IPv4: CE with the header checksum updated.
    pl.set_sids(table(Some(500), Some(250)));
    let mut v4_marked = 0;
    for _ in 0..4000 {
        let inner = ipv4(Ipv4Addr::new(10, 0, 0, 2), Ipv4Addr::new(198, 51, 100, 9), 17, 64, 0x01, &[0u8; 12]);
        let mut p = VecPacket::from_bytes(&eth(0x0800, &inner));
        assert_eq!(pl.process(&mut p, 0, now), Verdict::Tx(1));
        let o = p.to_vec();
        let d = l3(&o);
        let sr = Srh::new_checked(&d[40..]).unwrap();
        let i4 = &d[40 + sr.header_len()..];
        assert_eq!(dataplane::wire::checksum::checksum(&i4[..20]), 0, "IPv4 header checksum");
        if i4[1] & 3 == 3 {
            v4_marked += 1;
            assert_eq!(Ipv6Packet::new_checked(d).unwrap().ecn(), 3);
        }
        now += us;
    }
    // This policy's meter had measured nothing when its limit came: the
    // first 1 ms window measures (~256 Mb/s of 32-octet packets), then the
    // limit starts with its burst (two 9 KB frames: 576 such packets) and
    // lets one packet in four through: 3000 - 576 - 750 over.
    assert!((1600..=1750).contains(&v4_marked), "held to a quarter: {v4_marked} of 4000 over");
    // The limit ends: nothing marked.
    pl.set_sids(table(None, None));
    let before = pl.counters.local[Local::PeRateCeMarked as usize].get();
    for _ in 0..2000 {
        assert_eq!(send(&mut pl, now, 0x01).0, 1);
        now += us;
    }
    assert_eq!(pl.counters.local[Local::PeRateCeMarked as usize].get(), before);
}

#[test]
fn h_encaps_does_not_touch_other_traffic_and_needs_room() {
    let mut pl = pipeline();
    with_policies(&mut pl);
    let inner = plain6(a6("2001:db8::2"), a6("2001:db8:2::10"), 0);
    let mut p = VecPacket::from_bytes(&eth(0x86dd, &inner));
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(2));
    assert_eq!(l3(&p.to_vec()).len(), inner.len());
    // Too little headroom for the outer headers: the packet is moved back
    // into its tailroom, and leaves as it would have.
    let inner = plain6(a6("2001:db8::2"), a6("2001:db8:99::5"), 0);
    let mut roomy = VecPacket::from_bytes(&eth(0x86dd, &inner));
    assert_eq!(run(&mut pl, &mut roomy), Verdict::Tx(1));
    let mut p = VecPacket::with_headroom(&eth(0x86dd, &inner), 16);
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(1));
    assert_eq!(p.to_vec(), roomy.to_vec());
    // (Neither room in front nor at the back, NoHeadroom: in the
    // PacketBuffer tests; a packet that short of room is over the MTU.)
}

#[test]
fn h_encaps_over_the_tunnel_mtu_tells_the_inner_source() {
    // RFC 2473 s.7.1: the tunnel MTU is the egress MTU (1500 on p1) less
    // the outer headers; the inner packet's source learns it.
    let mut pl = pipeline();
    with_policies(&mut pl);
    let (s6, d6) = (a6("2001:db8::2"), a6("2001:db8:99::5"));
    // Three SIDs, H.Encaps: outer IPv6 40 + SRH 8 + 3 * 16 = 96 bytes.
    let fits = ipv6(s6, d6, 17, 64, 0, &udp6(s6, d6, 1000, 2000, &vec![7; 1404 - 48]));
    assert_eq!(fits.len(), 1404);
    let mut p = VecPacket::from_bytes(&eth(0x86dd, &fits));
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(1));
    assert_eq!(l3(&p.to_vec()).len(), 1500);
    let big = ipv6(s6, d6, 17, 64, 0, &udp6(s6, d6, 1000, 2000, &vec![7; 1405 - 48]));
    let mut p = VecPacket::from_bytes(&eth(0x86dd, &big));
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(0), "back toward the source");
    let o = p.to_vec();
    assert_eq!(&o[0..6], &H0);
    let d = l3(&o);
    let ip = Ipv6Packet::new_checked(d).unwrap();
    assert_eq!(ip.dst_addr(), s6);
    assert_eq!(ip.next_header().0, 58);
    assert_eq!(&d[40..42], &[2, 0], "Packet Too Big");
    assert_eq!(&d[44..48], &1404u32.to_be_bytes(), "the tunnel MTU");
    assert_eq!(&d[48..], &big[..1280 - 48], "the inner packet as received, cut at 1280 in all");
    let sum = checksum::combine(checksum::pseudo_v6(&d[8..24].try_into().unwrap(), &d[24..40].try_into().unwrap(), 58, (d.len() - 40) as u32), checksum::sum(&d[40..]));
    assert_eq!(checksum::fold(sum), 0xffff, "ICMPv6 checksum");
    assert_eq!(pl.counters.local[Local::TooBig6 as usize].get(), 1);

    // IPv4 with DF: Fragmentation Needed with the MTU of the list chosen
    // (one SID: 40 + 24 = 64 bytes; two: 40 + 40 = 80).
    let (s4, d4) = (Ipv4Addr::new(10, 0, 0, 2), Ipv4Addr::new(198, 51, 100, 9));
    let mut inner = ipv4(s4, d4, 17, 64, 0, &vec![9; 1480]);
    inner[6] = 0x40;
    inner[10..12].fill(0);
    let c = checksum::checksum(&inner[..20]);
    inner[10..12].copy_from_slice(&c.to_be_bytes());
    let mut p = VecPacket::from_bytes(&eth(0x0800, &inner));
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(0));
    let o = p.to_vec();
    let d = l3(&o);
    assert_eq!(checksum::checksum(&d[..20]), 0, "IPv4 header checksum");
    assert_eq!(&d[16..20], &s4.octets());
    assert_eq!(&d[20..22], &[3, 4], "fragmentation needed and DF set");
    let mtu = u16::from_be_bytes([d[26], d[27]]);
    assert!(mtu == 1500 - 64 || mtu == 1500 - 80, "tunnel MTU {mtu}");
    assert_eq!(checksum::checksum(&d[20..]), 0, "ICMP checksum");
    assert_eq!(pl.counters.local[Local::FragNeeded4 as usize].get(), 1);
    // Without DF: the inner packet is fragmented to the tunnel MTU and
    // each fragment encapsulated on its own (RFC 4459 s.3.4).
    let payload: Vec<u8> = (0..1480u32).map(|i| (i * 31 + 7) as u8).collect();
    let inner = ipv4(s4, d4, 17, 64, 0, &payload);
    let mut p = VecPacket::from_bytes(&eth(0x0800, &inner));
    assert_eq!(run(&mut pl, &mut p), Verdict::Replicate(2));
    let (mut joined, mut das) = (Vec::new(), Vec::new());
    for i in 0..2 {
        let mut c = VecPacket::from_bytes(&[]);
        assert_eq!(pl.build_replica(i, &p, &mut c, 1), Ok(1), "fragment {i} into the tunnel");
        let o = c.to_vec();
        let d = l3(&o);
        assert!(d.len() <= 1500, "fits the egress MTU");
        assert_eq!(usize::from(u16::from_be_bytes([d[4], d[5]])), d.len() - 40, "outer payload length");
        assert_eq!(d[6], 43, "SRH");
        let srh = (usize::from(d[41]) + 1) * 8;
        assert_eq!(d[40], 4, "IPv4 inside");
        das.push(d[24..40].to_vec());
        let f = &d[40 + srh..];
        assert_eq!(checksum::checksum(&f[..20]), 0, "inner header checksum");
        assert_eq!(usize::from(u16::from_be_bytes([f[2], f[3]])), f.len());
        let fo = u16::from_be_bytes([f[6], f[7]]);
        assert_eq!(fo & 0x2000 != 0, i == 0, "MF on all but the last");
        assert_eq!(usize::from(fo & 0x1fff) * 8, joined.len(), "offset continues");
        assert_eq!(&f[12..20], &inner[12..20]);
        joined.extend_from_slice(&f[20..]);
    }
    assert_eq!(das[0], das[1], "both fragments take the same segment list");
    assert_eq!(joined, payload);
    assert_eq!(pl.counters.local[Local::Fragment4 as usize].get(), 2);
    assert_eq!(pl.counters.local[Local::Srv6Encap as usize].get(), 3, "the fitting IPv6 packet and two fragments");
}

// ------------------------------------------------------------ scapy oracle

fn oracle() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/oracle/srv6_endmt.py")
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

fn py(args: &[&str], stdin: &str) -> String {
    let mut c = Command::new("python3")
        .arg(oracle())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 with scapy >= 2.6 is needed (pip install scapy)");
    c.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let o = c.wait_with_output().unwrap();
    assert!(o.status.success(), "oracle failed: {}\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn oracle_scapy_end_mt() {
    // scapy builds the SRv6-encapsulated RoCEv2 packet with End.MT TLVs
    // (and computes its ICRC), we replicate, scapy checks every replica.
    let rs = receivers_a();
    let spec: Vec<String> = rs.iter().map(|(a, q)| format!("{a},{q}")).collect();
    let sid = sid_mt().to_string();
    let frame = unhex(py(&["build", &sid, &spec.join(";")], "").trim());
    let mut pl = pipeline();
    let mut p = VecPacket::from_bytes(&frame);
    assert_eq!(run(&mut pl, &mut p), Verdict::Replicate(rs.len() as u16));
    let mut lines = String::new();
    for (i, r) in replicas(&mut pl, &p, rs.len() as u16).into_iter().enumerate() {
        let (_, f) = r.unwrap();
        lines.push_str(&format!("{},{},{}\n", rs[i].0, rs[i].1, hex(&f)));
    }
    let out = py(&["check", &hex(&frame)], &lines);
    assert!(out.contains(&format!("OK {}", rs.len())), "{out}");
}

#[test]
fn srv6_counter_names() {
    for (r, n) in [
        (Drop::SrhSlZero, "srh-sl-zero"),
        (Drop::SrhMalformed, "srh-malformed"),
        (Drop::SrhHmacBad, "srh-hmac-bad"),
        (Drop::EndMtNoTlv, "endmt-no-tlv"),
        (Drop::EndMtNoSrh, "endmt-no-srh"),
    ] {
        assert_eq!(r.name(), n);
    }
    let _ = IpAddr::V6(sid_end());
}

// ------------------------------------------------ IPv6 multicast underlay

fn group() -> Ipv6Addr {
    a6("ff3e::100")
}

/// The pipeline with `mroutes` (and an End.MT SID on the group ff3e::10).
fn mc_pipeline(mroutes: Vec<dataplane::tables::Mroute>) -> Pipeline {
    let mut t = topology();
    t.mroutes = mroutes;
    let mut pl = Pipeline::new(Arc::new(t), Arc::new(fib()), Arc::new(neighbours()), Arc::new(WorkerCounters::default()), PipelineConfig::default());
    let mut s = sid_table();
    s.insert(a6("ff3e::10"), Behaviour::end_mt());
    pl.set_sids(Arc::new(s));
    pl
}

fn mroute(group: Ipv6Addr, source: Option<Ipv6Addr>, iif: Option<u16>, oifs: &[u16]) -> dataplane::tables::Mroute {
    dataplane::tables::Mroute::new(group, source, iif, oifs.to_vec())
}

/// `frame` with the group's Ethernet destination 33:33 + its low 32 bits
/// (RFC 2464 s.7), as a multicast packet arrives.
fn to_group_mac(mut frame: Vec<u8>, g: Ipv6Addr) -> Vec<u8> {
    let o = g.octets();
    frame[..6].copy_from_slice(&[0x33, 0x33, o[12], o[13], o[14], o[15]]);
    frame
}

fn process_on(pl: &mut Pipeline, frame: &[u8], port: u16) -> (Verdict, VecPacket) {
    let mut p = VecPacket::from_bytes(frame);
    let v = pl.process(&mut p, port, T0);
    if let Verdict::Drop(r) = v {
        pl.counters.dropped(r);
    }
    (v, p)
}

/// A static multicast route replicates a packet to its group out of each
/// outgoing interface: the whole packet, Hop Limit - 1, to 33:33:00:00:01:00
/// from the interface's MAC; it must arrive on the route's iif (RPF); the
/// (S,G) route wins over the (*,G) one; the arrival interface is skipped;
/// a Hop Limit of 1 or a group without a route is dropped, and no ICMPv6
/// error answers a packet to a multicast address (RFC 4443 s.2.4 (e)).
#[test]
fn multicast_routes_replicate_with_rpf() {
    let star = mroute(group(), None, Some(0), &[1, 2]);
    let mut pl = mc_pipeline(vec![star.clone(), mroute(group(), Some(a6("2001:db8::7")), Some(0), &[2])]);
    let f = to_group_mac(eth(0x86dd, &plain6(s1(), group(), 0x28)), group());
    let (v, p) = process_on(&mut pl, &f, 0);
    assert_eq!(v, Verdict::Replicate(2));
    assert_eq!(p.to_vec(), f, "the original is not modified");
    let out = replicas(&mut pl, &p, 2);
    for (r, (port, mac)) in out.into_iter().zip([(1u16, R1), (2, R2)]) {
        let (got_port, c) = r.unwrap();
        assert_eq!(got_port, port);
        assert_eq!(&c[..6], &[0x33, 0x33, 0, 0, 1, 0], "the group's MAC");
        assert_eq!(&c[6..12], &mac, "from the outgoing interface");
        assert_eq!(&c[12..14], &[0x86, 0xdd]);
        let ip = Ipv6Packet::new_checked(l3(&c)).unwrap();
        assert_eq!((ip.hop_limit(), ip.dst_addr(), ip.src_addr(), ip.traffic_class()), (63, group(), s1(), 0x28));
        assert_eq!(&c[14 + 8..], &f[14 + 8..], "the rest of the packet as received");
    }
    assert_eq!(pl.counters.local[Local::MrouteReplica as usize].get(), 2);
    // RPF: from the wrong interface.
    let (v, _) = process_on(&mut pl, &f, 1);
    assert_eq!(v, Verdict::Drop(Drop::MrouteRpfFailed));
    // (S,G): only out of p2.
    let fs = to_group_mac(eth(0x86dd, &plain6(a6("2001:db8::7"), group(), 0)), group());
    let (v, p) = process_on(&mut pl, &fs, 0);
    assert_eq!(v, Verdict::Replicate(1));
    assert_eq!(replicas(&mut pl, &p, 1)[0].as_ref().unwrap().0, 2);
    // Hop Limit 1: dropped, nothing sent back.
    let mut low = plain6(s1(), group(), 0);
    low[7] = 1;
    let (v, _) = process_on(&mut pl, &to_group_mac(eth(0x86dd, &low), group()), 0);
    assert_eq!(v, Verdict::Drop(Drop::TtlExpired));
    // Each route's counters: what it replicated (packets, IPv6 octets) and
    // what failed its RPF check; the Hop Limit 1 packet is neither.
    let stats = |i: usize| {
        let s = &pl.topo.mroutes[i].stats;
        use std::sync::atomic::Ordering::Relaxed;
        (s.packets.load(Relaxed), s.bytes.load(Relaxed), s.rpf_failed.load(Relaxed))
    };
    assert_eq!(stats(0), (1, 60, 1), "(*,G)");
    assert_eq!(stats(1), (1, 60, 0), "(S,G)");
    // From :: or a link-local source: never off its link (RFC 4291).
    for src in [a6("fe80::1"), a6("::")] {
        let fm = to_group_mac(eth(0x86dd, &plain6(src, group(), 0)), group());
        let (v, _) = process_on(&mut pl, &fm, 0);
        assert_eq!(v, Verdict::Drop(Drop::Ipv6Martian), "{src}");
    }
    // A group without a route (scope F is global scope, RFC 4291 s.2.7);
    // link-local scope is never routed.
    for g in [a6("ff3e::200"), a6("ff02::100"), a6("ff0f::100")] {
        let (v, _) = process_on(&mut pl, &to_group_mac(eth(0x86dd, &plain6(s1(), g, 0)), g), 0);
        assert_eq!(v, Verdict::Drop(Drop::MulticastNotRouted), "{g}");
    }
    // Without an iif, any interface; never back out of the arrival one.
    let mut pl = mc_pipeline(vec![mroute(group(), None, None, &[0, 1, 2])]);
    let (v, p) = process_on(&mut pl, &f, 1);
    assert_eq!(v, Verdict::Replicate(2));
    let ports: Vec<u16> = replicas(&mut pl, &p, 2).into_iter().map(|r| r.unwrap().0).collect();
    assert_eq!(ports, vec![0, 2]);
    // A copy larger than an outgoing interface's MTU is not sent; the
    // first such copy becomes one ICMPv6 Packet Too Big to the source with
    // the smallest of those MTUs (RFC 4443 s.2.4 (e) allows it for a
    // multicast destination), the others are dropped by name.
    let mut t = topology();
    t.interfaces[1].mtu = 59;
    t.interfaces[2].mtu = 58;
    t.mroutes = vec![mroute(group(), None, Some(0), &[1, 2])];
    let mut pl = Pipeline::new(Arc::new(t), Arc::new(fib()), Arc::new(neighbours()), Arc::new(WorkerCounters::default()), PipelineConfig::default());
    // From a host on p0's link (a resolved neighbour).
    let h = a6("2001:db8::2");
    let f = to_group_mac(eth(0x86dd, &plain6(h, group(), 0x28)), group());
    let (v, p) = process_on(&mut pl, &f, 0);
    assert_eq!(v, Verdict::Replicate(2));
    // One copy at a time, as the worker builds them: the Packet Too Big
    // leaves ahead of queued data, a copy after it does not.
    let mut out = Vec::new();
    let mut replies = Vec::new();
    for i in 0..2 {
        let mut c = VecPacket::from_bytes(&[]);
        out.push(pl.build_replica(i, &p, &mut c, T0).map(|port| (port, c.to_vec())));
        replies.push(pl.reply);
    }
    assert_eq!(replies, vec![true, false]);
    let (port, ptb) = out[0].as_ref().unwrap();
    assert_eq!(*port, 0, "back toward the source, out of the arrival interface");
    let d = l3(ptb);
    let ip = Ipv6Packet::new_checked(d).unwrap();
    assert_eq!(&ptb[..6], &H0, "to the host");
    assert_eq!((ip.dst_addr(), ip.next_header().0), (h, 58));
    assert_eq!((d[40], d[41]), (2, 0), "Packet Too Big");
    assert_eq!(u32::from_be_bytes([d[44], d[45], d[46], d[47]]), 58, "the smallest MTU the packet does not fit");
    assert_eq!(&d[48..], &f[14..], "the packet quoted");
    let sum = dataplane::wire::checksum::combine(dataplane::wire::checksum::pseudo_v6(&ip.src_addr().octets(), &h.octets(), 58, (d.len() - 40) as u32), dataplane::wire::checksum::sum(&d[40..]));
    assert_eq!(dataplane::wire::checksum::fold(sum), 0xffff, "ICMPv6 checksum");
    assert_eq!(out[1].as_ref().unwrap_err(), &Drop::MtuExceeded, "one Packet Too Big per packet");
    assert_eq!(pl.counters.local[Local::TooBig6 as usize].get(), 1);
    // Only one interface too small: the other copy still goes.
    let mut t = topology();
    t.interfaces[2].mtu = 59;
    t.mroutes = vec![mroute(group(), None, Some(0), &[1, 2])];
    let mut pl = Pipeline::new(Arc::new(t), Arc::new(fib()), Arc::new(neighbours()), Arc::new(WorkerCounters::default()), PipelineConfig::default());
    let (_, p) = process_on(&mut pl, &f, 0);
    let out = replicas(&mut pl, &p, 2);
    assert_eq!(out[0].as_ref().unwrap().0, 1, "the copy that fits");
    assert_eq!(out[1].as_ref().unwrap().0, 0, "the Packet Too Big for the one that does not");
}

/// An edge node "configured to receive IP multicast traffic addressed to"
/// the tree's group (draft-li s.5.1): its End.MT SID is the group. It
/// runs End.MT for its own receivers (the TLV of its node address) and,
/// with a multicast route for the group, also passes the packet on down
/// the tree: the route's copies come first, then the receivers' replicas.
#[test]
fn end_mt_on_a_multicast_group_edge_and_transit() {
    let g = a6("ff3e::10");
    let rs = vec![(a6("2001:db8:2::11"), 0x000777)];
    let f = to_group_mac(mt_frame(g, node_addr(), &rs, 0, 0x02), g);
    // Edge only.
    let mut pl = mc_pipeline(vec![]);
    let (v, p) = process_on(&mut pl, &f, 0);
    assert_eq!(v, Verdict::Replicate(1));
    let (port, frame) = replicas(&mut pl, &p, 1).remove(0).unwrap();
    assert_eq!((port, &frame[..6]), (2, &RX_B[..]));
    check_replica(&frame, rs[0].0, rs[0].1, &roce6(0x02, 200));
    // Edge and transit: one copy of the outer packet out of p1, then the
    // receiver's replica.
    let mut pl = mc_pipeline(vec![mroute(g, None, Some(0), &[1])]);
    let (v, p) = process_on(&mut pl, &f, 0);
    assert_eq!(v, Verdict::Replicate(2));
    let out = replicas(&mut pl, &p, 2);
    let (port, c) = out[0].as_ref().unwrap();
    assert_eq!((*port, &c[..6]), (1, &[0x33, 0x33, 0, 0, 0, 0x10][..]));
    assert_eq!(Ipv6Packet::new_checked(l3(c)).unwrap().hop_limit(), 63);
    assert_eq!(&c[14 + 8..], &f[14 + 8..], "the outer packet, SRH and TLVs as received");
    let (port, frame) = out[1].as_ref().unwrap();
    assert_eq!(*port, 2);
    check_replica(frame, rs[0].0, rs[0].1, &roce6(0x02, 200));
    // Zero copy: the route's copy is a full copy, the replica's head is
    // byte for byte the full replica.
    let mut h = VecPacket::from_bytes(&[]);
    assert_eq!(pl.build_replica_head(0, &p.to_vec(), &mut h, T0), Ok(None));
    let rh = pl.build_replica_head(1, &p.to_vec(), &mut h, T0).unwrap().expect("a zero-copy head");
    let mut got = h.to_vec();
    got.extend_from_slice(&f[rh.payload_off..rh.payload_off + rh.payload_len]);
    got.extend_from_slice(&rh.icrc);
    assert_eq!(&got, frame);
    // No TLV for this node: the route's copy still goes down the tree, the
    // End.MT failure is counted.
    let f2 = to_group_mac(mt_frame(g, a6("fc00:0:9::1"), &rs, 0, 0), g);
    let before = drops(&pl, Drop::EndMtNoTlv);
    let (v, p) = process_on(&mut pl, &f2, 0);
    assert_eq!(v, Verdict::Replicate(1));
    assert_eq!(replicas(&mut pl, &p, 1)[0].as_ref().unwrap().0, 1);
    assert_eq!(drops(&pl, Drop::EndMtNoTlv), before + 1);
}

/// RFC 4443 s.2.4 (e): no ICMPv6 error answers a packet to a multicast
/// address or one sent as a link-layer multicast (Packet Too Big and
/// Parameter Problem code 2 aside): an End.MT packet to its multicast group
/// whose Segments Left runs past the list, and a packet to a unicast End
/// SID in a link-layer multicast frame with Hop Limit 1, are dropped by
/// name without a Parameter Problem / Time Exceeded; the same unicast
/// packet in a unicast frame gets its Time Exceeded.
#[test]
fn no_icmpv6_error_for_a_multicast_destination() {
    let g = a6("ff3e::10");
    let mut pl = mc_pipeline(vec![]);
    let mut s = srh(41, &[g, proxy()], 1, vec![mt_tlv(node_addr(), &[(a6("2001:db8:2::11"), 7)])]);
    s[3] = 5;
    let f = to_group_mac(srv6_frame(s1(), g, 64, 0, &s, &roce6(0, 64)), g);
    let (v, _) = process_on(&mut pl, &f, 0);
    assert_eq!(v, Verdict::Drop(Drop::SrhSlExceeds));
    assert_eq!(pl.counters.local[Local::ParamProblem6 as usize].get(), 0);
    let s = srh(41, &[sid_end(), remote(2)], 1, vec![]);
    let uni = srv6_frame(s1(), sid_end(), 1, 0, &s, &plain6(s1(), remote(2), 0));
    let (v, _) = process_on(&mut pl, &to_group_mac(uni.clone(), a6("ff02::1")), 0);
    assert_eq!(v, Verdict::Drop(Drop::TtlExpired));
    assert_eq!(pl.counters.local[Local::TimeExceeded6 as usize].get(), 0);
    let (v, _) = process_on(&mut pl, &uni, 0);
    assert!(matches!(v, Verdict::Tx(_)), "{v:?}");
    assert_eq!(pl.counters.local[Local::TimeExceeded6 as usize].get(), 1);
}

/// A receiver's RC ACK of `psn` to the Proxy Address / Designated QPN, as
/// its RC stack sends it (built with the crate's response writer and a
/// mirrored group), in a frame to port 0.
fn receiver_ack(from: Ipv6Addr, psn: u32) -> Vec<u8> {
    use dataplane::multicast::{build_upstream, upstream_len, GroupConfig, GroupId, Receiver, Upstream};
    let r = Upstream::Ack { psn, msn: psn, credits: 31 };
    let mirror = GroupConfig::new(GroupId { source: proxy(), source_qpn: DESIGNATED_QPN }, from, 0, vec![Receiver { addr: s1(), qpn: 0 }]);
    let mut b = vec![0u8; upstream_len(&r)];
    let n = build_upstream(&r, &mirror, &mut b).unwrap();
    b.truncate(n);
    eth(0x86dd, &b)
}

/// A tree-interior node that replicates the group's data by a multicast
/// route (draft-li s.4.2: transit replication by "IP multicast
/// procedures") and holds the group (the node adjacent to the source):
/// the SRv6-encapsulated data it copies down the tree records its PSN as
/// sent (s.9: an ACK beyond it is refused) and, with an adaptive window,
/// starts a round trip the receivers' ACK ends.
#[test]
fn a_multicast_route_transit_node_observes_the_groups_data() {
    use dataplane::multicast::{GroupConfig, GroupId, Receiver};
    let g = a6("ff3e::20");
    let rx = a6("2001:db8:2::11");
    let mut pl = mc_pipeline(vec![mroute(g, None, Some(0), &[1])]);
    let mut cfg = GroupConfig::new(GroupId { source: s1(), source_qpn: 0x100 }, proxy(), DESIGNATED_QPN, vec![Receiver { addr: rx, qpn: 0x777 }]);
    cfg.cnp_window_max_ns = Some(1_000_000_000);
    pl.set_groups(&[cfg], T0).unwrap();
    let f = to_group_mac(mt_frame(g, node_addr(), &[(rx, 0x777)], 0, 0), g);
    let (v, p) = process_on(&mut pl, &f, 0);
    assert_eq!(v, Verdict::Replicate(1), "the route's copy, down the tree");
    assert_eq!(replicas(&mut pl, &p, 1)[0].as_ref().unwrap().0, 1);
    let grp = |pl: &Pipeline| pl.groups().iter().next().unwrap().1.clone();
    assert_eq!(grp(&pl).highest_sent(), Some(5), "the inner RC packet's PSN, seen through the SRH");
    assert_eq!(pl.counters.local[Local::McDataSeen as usize].get(), 1);
    // An ACK beyond what was sent is refused; the one for PSN 5, 3 ms after
    // the data passed, is a round trip (the upstream ACK itself finds no
    // route to the source here).
    let mut a = VecPacket::from_bytes(&receiver_ack(rx, 9));
    assert_eq!(pl.process(&mut a, 0, T0 + 1_000_000), Verdict::Drop(Drop::McPsnBeyondSent));
    let mut a = VecPacket::from_bytes(&receiver_ack(rx, 5));
    pl.process(&mut a, 0, T0 + 3_000_000);
    assert_eq!(grp(&pl).upstream_psn(), 5);
    assert_eq!(grp(&pl).srtt_ns(), Some(3_000_000));
    assert_eq!(grp(&pl).window_ns(), 3_000_000);
    // Without a group here, nothing is looked at: the copy goes as before.
    let mut plain = mc_pipeline(vec![mroute(g, None, Some(0), &[1])]);
    let (v, _) = process_on(&mut plain, &f, 0);
    assert_eq!(v, Verdict::Replicate(1));
    assert_eq!(plain.counters.local[Local::McDataSeen as usize].get(), 0);
}

/// Re-keying an HMAC key ID (`hmac-key add ID SECRET` over the management
/// socket, the same ID with a new secret, as every node of the domain
/// takes it) re-keys the SR policies that sign with that ID: the headend
/// signs with the new secret, which an edge holding it accepts and one
/// holding the old refuses. Was (a review): the policy kept the copy of
/// the key it was configured with, so after a re-key across the domain
/// every edge dropped the headend's packets (`srh-hmac-bad`).
#[test]
fn rekeying_an_hmac_key_id_rekeys_the_policies_that_sign_with_it() {
    use dataplane::srv6::SrhExtras;
    let rs = [(a6("2001:db8:2::10"), 0x000501)];
    let ours = EndMtRepr { tlv_type: MT, edge_node_address: node_addr(), receivers: rs.iter().map(|(a, q)| EndMtReceiver { address: *a, qpn: *q }).collect() };
    let pol = SrPolicy::new(a6("fc00:0:9::1"), EncapMode::Encaps, vec![(vec![sid_mt_hmac(), proxy()], 1)]).unwrap().with_extras(SrhExtras { end_mt: vec![ours], hmac: Some(hmac_key()), h_flag: false }).unwrap();
    let mut t = SidTable::new(&Params::DEFAULT);
    t.set_hmac_keys([hmac_key()].into_iter().collect::<HmacKeyTable>()).unwrap();
    t.add_policy("2001:db8:ff::1/128".parse().unwrap(), pol);
    assert_eq!(t.policies_signing_with(7), vec![0]);
    assert!(t.policies_signing_with(8).is_empty());
    let new = HmacKey::new(7, b"the secret after the re-key", 32).unwrap();
    t.set_hmac_keys([new.clone()].into_iter().collect::<HmacKeyTable>()).unwrap();
    let mut head = pipeline();
    head.set_sids(Arc::new(t));
    let mut p = VecPacket::from_bytes(&eth(0x86dd, &roce6(0, 200)));
    assert_eq!(run(&mut head, &mut p), Verdict::Tx(1));
    let mut f = p.to_vec();
    f[0..6].copy_from_slice(&R0);
    // An edge with the new key takes it; one with the old refuses it.
    let mut edge = pipeline();
    let mut keyed = sid_table();
    keyed.set_hmac_keys([new].into_iter().collect::<HmacKeyTable>()).unwrap();
    edge.set_sids(Arc::new(keyed));
    assert_eq!(run(&mut edge, &mut VecPacket::from_bytes(&f)), Verdict::Replicate(1), "signed with the new secret");
    expect_drop(&mut pipeline(), f, Drop::SrhHmacBad);
}

/// Rule: re-keying is all or nothing. When a policy's SRH cannot be built
/// with the new key (here 126 SIDs and an 8-octet HMAC, 2040 octets, where
/// a 32-octet HMAC passes the SRH's 2048), the table is left as it was
/// and the error names the policy: its SRH, its key and the key table are
/// unchanged. Was: that policy silently kept the old key while the table
/// took the new one, and `hmac-key add` said it signed with the new.
#[test]
fn a_rekey_a_policy_cannot_take_changes_nothing_and_names_the_policy() {
    let short = HmacKey::new(7, b"sixteen octets!!", 8).unwrap();
    let sids: Vec<Ipv6Addr> = (0..126u16).map(|i| Ipv6Addr::new(0xfc00, 0, 9, 0, 0, 0, 0, i + 1)).collect();
    let pol = SrPolicy::new(a6("fc00:0:9::1"), EncapMode::Encaps, vec![(sids, 1)]).unwrap().with_extras(SrhExtras { end_mt: vec![], hmac: Some(short.clone()), h_flag: false }).unwrap();
    let before = pol.lists()[0].srh_template().to_vec();
    assert_eq!(before.len(), 2040);
    let mut t = SidTable::new(&Params::DEFAULT);
    t.set_hmac_keys([short.clone()].into_iter().collect::<HmacKeyTable>()).unwrap();
    t.add_policy("2001:db8:ff::1/128".parse().unwrap(), pol);
    let long = HmacKey::new(7, b"the secret after the re-key", 32).unwrap();
    let err = t.set_hmac_keys([long].into_iter().collect::<HmacKeyTable>()).unwrap_err();
    assert_eq!(err.len(), 1);
    assert_eq!(err[0].0, 0, "{err:?}");
    assert!(err[0].1.contains("SID list 0: cannot build its SRH"), "{err:?}");
    assert_eq!(t.policy(0).unwrap().lists()[0].srh_template(), &before[..], "the SRH as it was");
    assert_eq!(t.hmac_keys().lookup(7).unwrap().len(), 8, "the key table as it was");
    // The same secret at the length the policy fits is taken.
    let fits = HmacKey::new(7, b"the secret after the re-key", 16).unwrap();
    t.set_hmac_keys([fits].into_iter().collect::<HmacKeyTable>()).unwrap();
    assert_eq!(t.policy(0).unwrap().lists()[0].srh_template().len(), 2048);
    assert_eq!(t.hmac_keys().lookup(7).unwrap().len(), 16);
}

/// The headend of an RDMA multicast tree for an unmodified RoCE source
/// (draft-li s.5.2 step 1: "S1 MUST encode ... End.MT TLVs"; s.9: "SHOULD
/// protect SRH integrity using the HMAC TLV"): an SR policy for the Proxy
/// Address pushes an SRH with one End.MT TLV per edge node and an HMAC
/// TLV, last. The edge node, whose End.MT SID requires the HMAC, takes
/// the packet and replicates it to the TLV's receivers; one flipped HMAC
/// bit and it refuses it.
#[test]
fn a_headend_policy_writes_end_mt_tlvs_and_the_hmac_the_edge_checks() {
    use dataplane::srv6::SrhExtras;
    let rs = [(a6("2001:db8:2::10"), 0x000501), (a6("2001:db8:2::11"), 0x000502)];
    let other = EndMtRepr { tlv_type: MT, edge_node_address: a6("fc00:0:7::"), receivers: vec![EndMtReceiver { address: a6("2001:db8:7::1"), qpn: 0x42 }] };
    let ours = EndMtRepr { tlv_type: MT, edge_node_address: node_addr(), receivers: rs.iter().map(|(a, q)| EndMtReceiver { address: *a, qpn: *q }).collect() };
    let src = a6("fc00:0:9::1");
    // The End.MT SID, then the Proxy Address (End.MT wants SL > 0, Ref4).
    let pol = SrPolicy::new(src, EncapMode::Encaps, vec![(vec![sid_mt_hmac(), proxy()], 1)]).unwrap().with_extras(SrhExtras { end_mt: vec![other.clone(), ours.clone()], hmac: Some(hmac_key()), h_flag: false }).unwrap();
    let mut t = SidTable::new(&Params::DEFAULT);
    t.add_policy("2001:db8:ff::1/128".parse().unwrap(), pol);
    let mut head = pipeline();
    head.set_sids(Arc::new(t));
    let inner = roce6(0, 200);
    let mut p = VecPacket::from_bytes(&eth(0x86dd, &inner));
    assert_eq!(run(&mut head, &mut p), Verdict::Tx(1), "toward the End.MT SID (fc00::/16 via p1)");
    let o = p.to_vec();
    let d = l3(&o);
    let ip = Ipv6Packet::new_checked(d).unwrap();
    assert_eq!((ip.src_addr(), ip.dst_addr(), ip.next_header().0), (src, sid_mt_hmac(), 43));
    let sr = Srh::new_checked(&d[40..]).unwrap();
    let r = SrhRepr::parse(&sr, MT).unwrap();
    assert_eq!((r.next_header, r.segments_left, r.segments.clone()), (41, 1, vec![proxy(), sid_mt_hmac()]));
    let tlvs: Vec<&TlvRepr> = r.tlvs.iter().filter(|t| !matches!(t, TlvRepr::Pad1 | TlvRepr::PadN(_))).collect();
    assert_eq!(tlvs.len(), 3);
    assert_eq!((tlvs[0], tlvs[1]), (&TlvRepr::EndMt(other), &TlvRepr::EndMt(ours)));
    assert!(matches!(r.tlvs.last(), Some(TlvRepr::Hmac(h)) if h.key_id == 7 && h.hmac.len() == 32), "the HMAC TLV last: {:?}", r.tlvs);
    assert_eq!(&d[40 + sr.header_len()..], &routed6(&inner)[..], "the source's packet, one hop on (the ICRC masks the hop limit)");
    // The edge node: End.MT with the HMAC required.
    let mut edge = pipeline();
    let mut f = o.clone();
    f[0..6].copy_from_slice(&R0);
    let mut q = VecPacket::from_bytes(&f);
    assert_eq!(run(&mut edge, &mut q), Verdict::Replicate(2));
    for (i, (port, frame)) in replicas(&mut edge, &q, 2).into_iter().map(Result::unwrap).enumerate() {
        assert_eq!(port, 2);
        // Two routed hops: the headend's and the edge's (62).
        check_replica(&frame, rs[i].0, rs[i].1, &routed6(&inner));
    }
    // The HMAC is the last octets of the SRH: flip one.
    let mut bad = f.clone();
    let hmac_end = 14 + 40 + sr.header_len();
    bad[hmac_end - 1] ^= 0x01;
    expect_drop(&mut edge, bad, Drop::SrhHmacBad);
    // H.Encaps.Red of one SID pushes no SRH: refused with the extras.
    let e = SrPolicy::new(src, EncapMode::EncapsRed, vec![(vec![sid_mt_hmac()], 1)]).unwrap().with_extras(SrhExtras { end_mt: vec![], hmac: Some(hmac_key()), h_flag: false }).unwrap_err();
    assert!(e.contains("H.Encaps.Red of one SID pushes no SRH"), "{e}");
}

/// draft-li s.9: "If End.MT TLV contents are modified in transit, packets
/// could be delivered to incorrect RDMA QPs." A group with `tlv_strict`
/// at this edge node: of the TLV's receivers, only its own branches,
/// address and QPN, get a copy (full or zero-copy); another QPN at a
/// branch's address, or an address that is no branch, is dropped as
/// `endmt-receiver-not-branch`. Without it every TLV receiver gets one.
#[test]
fn a_strict_group_gets_copies_only_for_its_own_receivers() {
    use dataplane::multicast::{GroupConfig, GroupId, Receiver, TlvReceivers};
    let rs = receivers_a();
    // The group knows receiver 0 as it is, receiver 1 with another QPN,
    // and not receiver 2.
    let branches = vec![Receiver { addr: rs[0].0, qpn: rs[0].1 }, Receiver { addr: rs[1].0, qpn: rs[1].1 ^ 1 }];
    let f = mt_frame(sid_mt(), sid_mt(), &rs, 0, 0x02);
    for strict in [false, true] {
        let mut pl = pipeline();
        let mut g = GroupConfig::new(GroupId { source: s1(), source_qpn: 0x100 }, proxy(), DESIGNATED_QPN, branches.clone());
        g.tlv_receivers = if strict { TlvReceivers::Strict } else { TlvReceivers::Any };
        pl.set_groups(&[g], T0).unwrap();
        let mut p = VecPacket::from_bytes(&f);
        assert_eq!(run(&mut pl, &mut p), Verdict::Replicate(3));
        let out = replicas(&mut pl, &p, 3);
        check_replica(&out[0].as_ref().unwrap().1, rs[0].0, rs[0].1, &roce6(0x02, 200));
        let mut h = VecPacket::from_bytes(&[]);
        if strict {
            assert_eq!((out[1].as_ref().err(), out[2].as_ref().err()), (Some(&Drop::EndMtReceiverNotBranch), Some(&Drop::EndMtReceiverNotBranch)));
            assert_eq!(pl.build_replica_head(1, &p.to_vec(), &mut h, T0), Err(Drop::EndMtReceiverNotBranch), "the zero-copy path too");
            assert!(pl.build_replica_head(0, &p.to_vec(), &mut h, T0).unwrap().is_some());
        } else {
            assert!(out.iter().all(|r| r.is_ok()), "{out:?}");
        }
    }
}

/// draft-li s.8: "Edge nodes additionally maintain the receiver
/// information (addresses and QPNs) learned from the End.MT TLV or from
/// control-plane provisioning." A group with `tlv_receivers = "learn"`
/// starts with no branch and takes the TLV's receivers as its branches:
/// their ACKs are aggregated from then on. A TLV with another set changes
/// the branches (the kept receiver keeps its state, the new one joins at
/// the PSN the source was told); an invalid set is refused and the group
/// stays as it was; a configuration pushed again keeps what was learned.
#[test]
fn a_learning_group_takes_its_receivers_from_the_end_mt_tlv() {
    use dataplane::multicast::{GroupConfig, GroupId, TlvReceivers};
    let rs = receivers_a();
    let mut pl = pipeline();
    let mut cfg = GroupConfig::new(GroupId { source: s1(), source_qpn: 0x100 }, proxy(), DESIGNATED_QPN, vec![]);
    cfg.tlv_receivers = TlvReceivers::Learn;
    pl.set_groups(&[cfg.clone()], T0).unwrap();
    let local = |pl: &Pipeline, l: Local| pl.counters.local[l as usize].get();
    let receivers = |pl: &Pipeline| pl.groups().iter().next().unwrap().1.branches().iter().map(|b| (b.receiver.addr, b.receiver.qpn, b.acked())).collect::<Vec<_>>();
    let ack = |pl: &mut Pipeline, from: Ipv6Addr, psn: u32| {
        let mut a = VecPacket::from_bytes(&receiver_ack(from, psn));
        pl.process(&mut a, 0, T0)
    };
    assert_eq!(ack(&mut pl, rs[0].0, 5), Verdict::Drop(Drop::McUnknownReceiver), "nothing learned yet");
    // The first data packet: two receivers in the TLV.
    let mut p = VecPacket::from_bytes(&mt_frame(sid_mt(), sid_mt(), &rs[..2], 0, 0));
    assert_eq!(run(&mut pl, &mut p), Verdict::Replicate(2));
    for (i, r) in replicas(&mut pl, &p, 2).into_iter().enumerate() {
        check_replica(&r.unwrap().1, rs[i].0, rs[i].1, &roce6(0, 200));
    }
    assert_eq!(local(&pl, Local::McTlvLearned), 1);
    assert_eq!(local(&pl, Local::McTlvReceiverUnknown), 0, "learned, not unknown");
    assert_eq!(receivers(&pl), vec![(rs[0].0, rs[0].1, 0), (rs[1].0, rs[1].1, 0)]);
    // The same TLV again: nothing to learn.
    let mut p = VecPacket::from_bytes(&mt_frame(sid_mt(), sid_mt(), &rs[..2], 0, 0));
    assert_eq!(run(&mut pl, &mut p), Verdict::Replicate(2));
    assert_eq!(local(&pl, Local::McTlvLearned), 1);
    // Their ACKs aggregate: the minimum goes up once both acked PSN 5.
    assert_eq!(ack(&mut pl, rs[0].0, 5), Verdict::Consumed);
    let grp = |pl: &Pipeline| pl.groups().iter().next().unwrap().1.upstream_psn();
    assert_eq!(grp(&pl), 0);
    ack(&mut pl, rs[1].0, 5);
    assert_eq!((grp(&pl), local(&pl, Local::McAckUp)), (5, 1));
    // Receiver 1 leaves, receiver 2 joins (the TLV is the source's list).
    let mut p = VecPacket::from_bytes(&mt_frame(sid_mt(), sid_mt(), &[rs[0], rs[2]], 0, 0));
    assert_eq!(run(&mut pl, &mut p), Verdict::Replicate(2));
    assert_eq!(local(&pl, Local::McTlvLearned), 2);
    assert_eq!(receivers(&pl), vec![(rs[0].0, rs[0].1, 5), (rs[2].0, rs[2].1, 5)], "the new receiver joins at the PSN the source was told");
    assert_eq!(grp(&pl), 5, "the group's upstream state goes on");
    assert_eq!(ack(&mut pl, rs[1].0, 5), Verdict::Drop(Drop::McUnknownReceiver), "no longer a branch");
    // Invalid sets are refused and the group keeps its receivers: one
    // address twice (its responses could not be told apart), the Proxy
    // Address as a receiver.
    for bad in [vec![rs[0], (rs[0].0, 0x99)], vec![rs[0], (proxy(), 0x99)]] {
        let mut p = VecPacket::from_bytes(&mt_frame(sid_mt(), sid_mt(), &bad, 0, 0));
        run(&mut pl, &mut p);
    }
    assert_eq!((local(&pl, Local::McTlvLearned), local(&pl, Local::McTlvLearnRefused)), (2, 2));
    assert_eq!(receivers(&pl).len(), 2);
    assert_eq!(receivers(&pl)[1].0, rs[2].0);
    // The control plane pushes the groups again (unchanged, then with
    // another window): the learned receivers and their state stay.
    pl.set_groups(&[cfg.clone()], T0).unwrap();
    assert_eq!(receivers(&pl), vec![(rs[0].0, rs[0].1, 5), (rs[2].0, rs[2].1, 5)]);
    cfg.cnp_window_ns = 80_000;
    pl.set_groups(&[cfg.clone()], T0).unwrap();
    assert_eq!(receivers(&pl), vec![(rs[0].0, rs[0].1, 5), (rs[2].0, rs[2].1, 5)]);
    assert_eq!(pl.groups().iter().next().unwrap().1.window_ns(), 80_000);
    // A configuration the learned receivers no longer fit (a learned
    // receiver's address becomes a child node): taken, without them; the
    // next TLV teaches the group again (here refused: the child's address).
    cfg.children = vec![rs[2].0];
    pl.set_groups(&[cfg], T0).unwrap();
    assert_eq!(receivers(&pl), vec![(rs[2].0, 0, 5)], "the child node only");
    let mut p = VecPacket::from_bytes(&mt_frame(sid_mt(), sid_mt(), &[rs[0]], 0, 0));
    run(&mut pl, &mut p);
    assert_eq!(receivers(&pl), vec![(rs[0].0, rs[0].1, 5), (rs[2].0, 0, 5)], "learned again, before the child");
}

/// Learning receivers happens on the packet path, so it must not allocate
/// (DESIGN.md invariant 2): a learning group fed End.MT packets whose TLV
/// changes the receiver set every time (growing to a full TLV of 11
/// receivers and back, refused sets in between) makes no heap allocation
/// inside `Pipeline::process`.
#[test]
fn learning_receivers_does_not_allocate_on_the_packet_path() {
    use dataplane::multicast::{GroupConfig, GroupId, TlvReceivers, MAX_TLV_RECEIVERS};
    let mut pl = pipeline();
    let mut cfg = GroupConfig::new(GroupId { source: s1(), source_qpn: 0x100 }, proxy(), DESIGNATED_QPN, vec![]);
    cfg.tlv_receivers = TlvReceivers::Learn;
    // Beside a group with 440 provisioned receivers, which fill the lookup
    // map the learned receivers share to just below where it would grow
    // (448 entries).
    let big = GroupConfig::new(
        GroupId { source: s1(), source_qpn: 0x101 },
        a6("2001:db8:ff::2"),
        DESIGNATED_QPN,
        (0..440u16).map(|i| dataplane::multicast::Receiver { addr: Ipv6Addr::new(0x2001, 0xdb8, 9, 0, 0, 0, 0, i + 1), qpn: 0x700 }).collect(),
    );
    pl.set_groups(&[big, cfg], T0).unwrap();
    let set = |n: usize, base: u16| -> Vec<(Ipv6Addr, u32)> { (0..n).map(|i| (Ipv6Addr::new(0x2001, 0xdb8, 2, 0, 0, 0, base, i as u16 + 1), 0x500 + i as u32)).collect() };
    let mut frames: Vec<Vec<u8>> = Vec::new();
    for (k, n) in [1, 3, MAX_TLV_RECEIVERS, 2, MAX_TLV_RECEIVERS, 0, 7].into_iter().enumerate() {
        frames.push(mt_frame(sid_mt(), sid_mt(), &set(n, k as u16 % 3), 0, 0));
        // A refused set in between: one address twice.
        frames.push(mt_frame(sid_mt(), sid_mt(), &[(a6("2001:db8:2::77"), 1), (a6("2001:db8:2::77"), 2)], 0, 0));
    }
    let mut bufs: Vec<VecPacket> = frames.iter().map(|f| VecPacket::from_bytes(f)).collect();
    // Warm up whatever is lazily set up once (not per packet).
    let mut w = VecPacket::from_bytes(&mt_frame(sid_mt(), sid_mt(), &set(1, 9), 0, 0));
    pl.process(&mut w, 0, T0);
    // Many rounds: removed receivers leave tombstones in the map, which
    // must be cleared without growing it.
    let before = alloc_count::count();
    for _ in 0..200 {
        for p in bufs.iter_mut() {
            pl.process(p, 0, T0);
        }
    }
    let made = alloc_count::count() - before;
    let local = |l: Local| pl.counters.local[l as usize].get();
    // Learned: every non-empty set (an empty TLV names nobody: End.MT has
    // no copy to make and drops the packet before learning).
    assert_eq!(local(Local::McTlvLearned), 1 + 200 * 6);
    assert_eq!(local(Local::McTlvLearnRefused), 200 * 7);
    assert_eq!(made, 0, "allocations on the packet path while learning");
}

// ---------------------------------------------------------------------------
// RFC 8754 / RFC 8986 conformance found in a review (End, End.X, End.DT6,
// H.Encaps.Red with HMAC, SRH processing at a local interface address).
// Each test failed on the code before its fix; each quotes the RFC text and
// says what the code did ("Was").

/// The router's own address on p0 (an interface address, not a SID).
fn r0_addr() -> Ipv6Addr {
    a6("2001:db8::1")
}

/// An SRH whose Hdr Ext Len is too small for its Last Entry: built for
/// `path` (3 SIDs: Last Entry 2, 56 octets), then Hdr Ext Len set to 4
/// (40 octets, room for 2 segments: max_LE = 4 / 2 - 1 = 1) and the header
/// cut there, so that the packet's own lengths stay consistent.
fn srh_le_over_max(path: &[Ipv6Addr], sl: u8) -> Vec<u8> {
    assert_eq!(path.len(), 3);
    let mut s = srh(41, path, sl, vec![]);
    s[1] = 4;
    s.truncate(40);
    s
}

/// RFC 8754 s.4.3.1.1 (SRH processing at an SR segment endpoint):
///
/// ```text
///   S08.    max_last_entry = ( Hdr Ext Len /  2 ) - 1
///   S09.    If ((Last Entry > max_last_entry) or
///   S10.        (Segments Left is greater than (Last Entry+1)) {
///   S11.       Send an ICMP Parameter Problem, Code 0, message to the
///   S12.       Source Address, pointing to the Segments Left field, and
///   S13.       discard the packet
/// ```
///
/// and RFC 8986 s.4.1 End, S06-S08, the same ("Send an ICMP Parameter
/// Problem to the Source Address with Code 0 (Erroneous header field
/// encountered) and Pointer set to the Segments Left field"). RFC 8986
/// s.4.6 End.DT6 S02-S03: an SRH with Segments Left != 0 is the same
/// Parameter Problem at the Segments Left, whatever else is in it.
///
/// Was: the code (`srh_of`, srv6.rs) sends the Parameter Problem only for
/// Segments Left > Last Entry + 1; a Last Entry larger than max_last_entry
/// comes out of `Srh::new_checked` as `BadLength` and is dropped silently
/// as `srh-malformed` (tests/srv6_unit.rs even asserts that drop). Found:
/// `Verdict::Drop(srh-malformed)`.
#[test]
fn last_entry_beyond_hdr_ext_len_is_a_parameter_problem_at_segments_left() {
    let mut pl = pipeline();
    let inner = plain6(s1(), a6("2001:db8:2::10"), 0);
    // End, SL 2 <= Last Entry + 1 = 3 (DA = Segment List[2], which the
    // cut header no longer holds), but Last Entry 2 > max_LE 1.
    let s = srh_le_over_max(&[sid_end(), remote(2), remote(3)], 2);
    expect_param_problem(&mut pl, srv6_frame(s1(), sid_end(), 64, 0, &s, &inner), 0, 40 + 3);
    // End.X alike.
    let s = srh_le_over_max(&[sid_endx(), remote(2), remote(3)], 2);
    expect_param_problem(&mut pl, srv6_frame(s1(), sid_endx(), 64, 0, &s, &inner), 0, 40 + 3);
    // End.DT6 with Segments Left != 0: Parameter Problem at the SL too.
    let s = srh_le_over_max(&[remote(2), sid_dt6(), remote(3)], 1);
    expect_param_problem(&mut pl, srv6_frame(s1(), sid_dt6(), 64, 0, &s, &inner), 0, 40 + 3);
}

// ------------------------------------------------------------------------
// 2. Segments Left = 0: the SRH's other fields are not processed.
// ------------------------------------------------------------------------

/// RFC 8754 s.4.3.1.1:
///
/// ```text
///   S01. if Segments Left is equal to zero {
///   S02.    Proceed to process the next header in the packet,
///           whose type is identified by the Next Header field in
///           the Routing header.
/// ```
///
/// The Last Entry check (S08-S13) is in the other branch: an SRH at its
/// last segment whose Last Entry is beyond max_last_entry is skipped, not
/// refused. Was: `srh_of` dropped it (`srh-sl-exceeds` from
/// `Srh::new_checked`), so End.DT6 lost the packet and End a ping.
#[test]
fn an_srh_at_segments_left_0_is_skipped_whatever_its_last_entry() {
    let mut pl = pipeline();
    let inner = plain6(s1(), a6("2001:db8:2::10"), 0);
    // End.DT6, SL 0, Last Entry 2 > max_LE 1: decapsulated and routed.
    let s = srh_le_over_max(&[sid_dt6(), remote(2), remote(3)], 0);
    let mut p = VecPacket::from_bytes(&srv6_frame(s1(), sid_dt6(), 64, 0, &s, &inner));
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(2), "End.DT6 processes the next header");
    let mut want = inner.clone();
    want[7] -= 1;
    assert_eq!(l3(&p.to_vec()), &want[..], "the inner packet, one hop on");
    // End, SL 0, the same SRH before an Echo Request: answered (RFC 8986
    // s.4.1.1, upper-layer header processing).
    let s = {
        let mut s = srh_le_over_max(&[sid_end(), remote(2), remote(3)], 0);
        s[0] = 58;
        s
    };
    let mut p = VecPacket::from_bytes(&echo_behind(&s, sid_end(), sid_end()));
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(0), "End answers the ping");
    assert_eq!(l3(&p.to_vec())[40], 129, "Echo Reply");
}

// ------------------------------------------------------------------------
// 3. A routing header with Segments Left > 0 to a local interface address.
// ------------------------------------------------------------------------

/// An ICMPv6 Echo Request from s1() to `dst` behind a routing header
/// `rh`, its checksum over the final destination `final_dst` (RFC 8200
/// s.8.1: "If the IPv6 packet contains a Routing header, the Destination
/// Address used in the pseudo-header is that of the final destination").
fn echo_behind(rh: &[u8], dst: Ipv6Addr, final_dst: Ipv6Addr) -> Vec<u8> {
    let mut m = vec![128u8, 0, 0, 0, 0, 1, 0, 1, 0xaa, 0xbb, 0xcc, 0xdd];
    let s = checksum::combine(checksum::pseudo_v6(&s1().octets(), &final_dst.octets(), 58, m.len() as u32), checksum::sum(&m));
    let c = !checksum::fold(s);
    m[2..4].copy_from_slice(&c.to_be_bytes());
    let mut pl = rh.to_vec();
    pl.extend_from_slice(&m);
    eth(0x86dd, &ipv6(s1(), dst, 43, 64, 0, &pl))
}

/// RFC 8754 s.4.3.2 (FIB Entry Is a Local Interface): "If the FIB entry
/// represents a local interface and is not a locally instantiated SRv6
/// SID, the SRH is processed as follows: - If Segments Left is zero, the
/// node must ignore the Routing header and proceed to process the next
/// header in the packet. - Otherwise, if Segments Left is not zero, the
/// node must discard the packet and send an ICMP Parameter Problem message
/// to the Source Address with error code 0 (Erroneous header field
/// encountered) and the pointer set to the Segments Left field."
///
/// Was: the code hands a packet to one of the router's interface addresses to
/// `local6` (pipeline.rs), which walks past the routing header and
/// processes the upper layer whatever its Segments Left: no Parameter
/// Problem is ever sent (here the echo is dropped as `malformed-icmp`
/// because `local6` checks the checksum against the IPv6 DA instead of the
/// final destination; with a checksum over the DA the router answers the
/// echo as if the SRH were not there). Found: `Verdict::Drop(..)`, not the
/// Parameter Problem.
#[test]
fn srh_with_segments_left_to_a_local_interface_address_is_a_parameter_problem() {
    let mut pl = pipeline();
    // An echo with SL = 0 (the router is the final destination) is
    // answered: the SRH is ignored (this part holds already).
    let s = srh(58, &[remote(2), r0_addr()], 0, vec![]);
    let mut p = VecPacket::from_bytes(&echo_behind(&s, r0_addr(), r0_addr()));
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(0));
    assert_eq!(l3(&p.to_vec())[40], 129, "Echo Reply");
    // SL = 1: the router is not the final destination, and the address is
    // no SID.
    let s = srh(58, &[r0_addr(), remote(2)], 1, vec![]);
    expect_param_problem(&mut pl, echo_behind(&s, r0_addr(), remote(2)), 0, 40 + 3);
}

/// RFC 8200 s.4.4: "If, while processing a received packet, a node
/// encounters a Routing header with an unrecognized Routing Type value,
/// the required behavior of the node depends on the value of the Segments
/// Left field, as follows: ... If Segments Left is non-zero, the node must
/// discard the packet and send an ICMP Parameter Problem, Code 0, message
/// to the packet's Source Address, pointing to the unrecognized Routing
/// Type." (RFC 5095 s.3: a Type 0 routing header is treated the same.)
///
/// `srh_of` does this for a packet to a local SID, but a packet to a local
/// interface address goes to `local6` (pipeline.rs), which ignores the
/// routing header. Found: no Parameter Problem (the echo is processed).
#[test]
fn unknown_routing_type_with_segments_left_to_a_local_address_is_a_parameter_problem() {
    let mut pl = pipeline();
    let mut rh = srh(58, &[r0_addr(), remote(2)], 1, vec![]);
    rh[2] = 253; // RFC 4727 experimental, unrecognized here
    expect_param_problem(&mut pl, echo_behind(&rh, r0_addr(), r0_addr()), 0, 40 + 2);
    // Type 0 (deprecated, RFC 5095) alike.
    rh[2] = 0;
    expect_param_problem(&mut pl, echo_behind(&rh, r0_addr(), r0_addr()), 0, 40 + 2);
}

// ------------------------------------------------------------------------
// 4. H.Encaps.Red with an HMAC TLV: the D flag.
// ------------------------------------------------------------------------

/// RFC 8754 s.2.1.2 (HMAC TLV): "D: If set, the Destination Address
/// verification is disabled due to use of a reduced segment list (see
/// Section 4.1.1)." s.4.1.1: "A reduced SRH does not contain the first
/// segment of the related SR Policy (the first segment is the one already
/// in the DA of the IPv6 header), and the Last Entry field is set to n-2".
/// s.2.1.2.1: with D clear the verifying node checks the destination
/// address against Segment List[Segments Left], which a reduced SRH at its
/// first segment (Segments Left = Last Entry + 1) does not have.
///
/// Was: the code (`build_srh`, srv6.rs) always emits the HMAC TLV with D = 0,
/// also for H.Encaps.Red, so the HMAC of the packets of such a policy
/// fails verification at the first SID (this router's own
/// `Srh::verify_hmac` answers `Malformed`, and an End.MT SID with
/// `hmac_required` drops them as `srh-hmac-bad`). Found: D flag clear,
/// `verify_hmac` = Err(Malformed).
#[test]
fn h_encaps_red_with_hmac_sets_the_d_flag() {
    let src = a6("fc00:0:1::100");
    let pol = SrPolicy::new(src, EncapMode::EncapsRed, vec![(vec![remote(2), remote(3), remote(4)], 1)])
        .unwrap()
        .with_extras(SrhExtras { end_mt: vec![], hmac: Some(hmac_key()), h_flag: false })
        .unwrap();
    let mut t = sid_table();
    t.add_policy("2001:db8:99::/48".parse().unwrap(), pol);
    let mut pl = pipeline();
    pl.set_sids(Arc::new(t));
    let inner = plain6(a6("2001:db8::2"), a6("2001:db8:99::5"), 0);
    let mut p = VecPacket::from_bytes(&eth(0x86dd, &inner));
    assert_eq!(run(&mut pl, &mut p), Verdict::Tx(1));
    let o = p.to_vec();
    let d = l3(&o);
    let ip = Ipv6Packet::new_checked(d).unwrap();
    assert_eq!(ip.dst_addr(), remote(2));
    let sr = Srh::new_checked(&d[40..]).unwrap();
    assert_eq!((sr.last_entry(), sr.segments_left()), (1, 2), "reduced SRH");
    let tlv = sr.hmac_tlv().expect("HMAC TLV");
    assert!(tlv.d_flag(), "RFC 8754 s.2.1.2: D set for a reduced segment list");
    // What the first SID (DA remote(2), SL = Last Entry + 1) verifies.
    assert_eq!(sr.verify_hmac(&src, Some(&remote(2)), &[hmac_key()].into_iter().collect::<HmacKeyTable>()), Ok(()), "the HMAC verifies at the first SID");
}
