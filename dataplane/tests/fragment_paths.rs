//! The paths where fragmentation (`crate::frag`) meets local replies and
//! SRv6 policies, from a review of the fast path and the fragmentation
//! code: each test failed on the code before its fix ("Was"). (The
//! review's differential proptests of fast path against pipeline and an
//! RFC 791 property test of the fragments found no disagreement; the fast
//! path's own proptest is tests/fastpath.rs.)

mod support;
use support::{conn, iface, via};
use std::sync::Arc;

use dataplane::counters::WorkerCounters;
use dataplane::packet::{PacketBuffer, VecPacket};
use dataplane::pipeline::{Pipeline, PipelineConfig, Verdict};
use dataplane::srv6::{Behaviour, SidTable};
use dataplane::tables::{Fib, MacAddr, NeighSource, Neighbours, Route, Topology, Urpf};
use dataplane::wire::checksum;
use dataplane::wire::params::Params;

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
    f.insert4("198.51.100.0/24".parse().unwrap(), via(3, "10.3.0.254"));
    f.insert6("::/0".parse().unwrap(), via(1, "2001:db8:1::fe"));
    f.insert6("2001:db8:100:1:8000::/65".parse().unwrap(), via(3, "2001:db8:3::fe"));
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

fn pipeline(mode: Urpf) -> Pipeline {
    let mut t = topology();
    t.interfaces[0].urpf = mode;
    let mut p = Pipeline::new(Arc::new(t), Arc::new(fib()), Arc::new(neighbours()), Arc::new(WorkerCounters::default()), PipelineConfig::default());
    let mut s = SidTable::new(&Params::DEFAULT);
    s.insert("fc00:0:1::1".parse().unwrap(), Behaviour::End);
    p.set_sids(Arc::new(s));
    p
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
    let mut pl = pipeline(Urpf::Off);
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
        let mut pl = pipeline(Urpf::Off);
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
