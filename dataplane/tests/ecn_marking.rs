//! ECN, from a review of first-level CE marking at the congestion-aware
//! egress (draft-tian-ccwg-long-haul-cnp-00 s.5.4), RFC 6040 at the SRv6
//! tunnel ends, and the EMR counter (s.5.3.1). Each test here failed on
//! the code before its fix; its doc comment names the rule and what the
//! code did.

mod support;
use support::{conn, iface, ipv6, udp6, via};
use std::net::Ipv6Addr;
use std::sync::Arc;

use dataplane::classify;
use dataplane::congestion::{CnpRequest, PortParams};
use dataplane::counters::{Local, WorkerCounters};
use dataplane::egress::EgressConfig;
use dataplane::node::{CongestionSpec, EgressPort};
use dataplane::packet::VecPacket;
use dataplane::pipeline::{Pipeline, PipelineConfig, Verdict};
use dataplane::srv6::{Behaviour, EncapMode, SidTable, SrPolicy};
use dataplane::tables::{Fib, MacAddr, NeighSource, Neighbours, Topology};
use dataplane::wire::params::Params;

const R0: MacAddr = [0x02, 0, 0, 0, 0, 0x10];
const R1: MacAddr = [0x02, 0, 0, 0, 0, 0x11];
const H0: MacAddr = [0x00, 0x11, 0x22, 0, 0, 0x02];
const GW1: MacAddr = [0x00, 0x11, 0x22, 0x01, 0, 0xfe];
const T0: u64 = 5_000_000_000;

const NOT_ECT: u8 = 0;
const ECT1: u8 = 1;
const ECT0: u8 = 2;
const CE: u8 = 3;

fn a6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

/// The RFC 1071 checksum, written here independently of the crate.
fn inet_checksum(b: &[u8]) -> u16 {
    let mut s: u32 = 0;
    for c in b.chunks(2) {
        let w = if c.len() == 2 { u16::from_be_bytes([c[0], c[1]]) } else { u16::from(c[0]) << 8 };
        s += u32::from(w);
    }
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// An IPv4 header (no options) with a correct checksum, then `payload`.
fn ipv4(tos: u8, ttl: u8, id: u16, src: [u8; 4], dst: [u8; 4], proto: u8, payload: &[u8]) -> Vec<u8> {
    let mut h = vec![0u8; 20];
    h[0] = 0x45;
    h[1] = tos;
    h[2..4].copy_from_slice(&((20 + payload.len()) as u16).to_be_bytes());
    h[4..6].copy_from_slice(&id.to_be_bytes());
    h[6] = 0x40; // DF
    h[8] = ttl;
    h[9] = proto;
    h[12..16].copy_from_slice(&src);
    h[16..20].copy_from_slice(&dst);
    let c = inet_checksum(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h.extend_from_slice(payload);
    h
}

/// Traffic class of the IPv6 header at `ip`.
fn tc6(ip: &[u8]) -> u8 {
    (ip[0] << 4) | (ip[1] >> 4)
}

// ------------------------------------------------------------ SRv6 tunnel

fn sid_end() -> Ipv6Addr {
    a6("fc00:0:2::1")
}
fn sid_dt6() -> Ipv6Addr {
    a6("fc00:0:2::6")
}
fn sid_dt4() -> Ipv6Addr {
    a6("fc00:0:2::4")
}
fn headend_src() -> Ipv6Addr {
    a6("fc00:0:1::100")
}
fn host() -> Ipv6Addr {
    a6("2001:db8::2")
}
fn far() -> Ipv6Addr {
    a6("2001:db8:ff::1")
}

/// The ingress PE: p0 (DC, 9000) with the host, p1 (WAN, 1300); policy
/// [End, End.DT6] of the exit for 2001:db8:ff::/48 (tunnel MTU 1220, so a
/// 1280-octet inner packet is encapsulated and the tunnel packet
/// fragmented, RFC 2473 s.7.1).
fn headend() -> Pipeline {
    let p0 = iface("p0", 0, None, R0, 9000, &["2001:db8::1/64"]);
    let p1 = iface("p1", 1, None, R1, 1300, &["2001:db8:1::1/64"]);
    let mut f = Fib::default();
    f.insert6("2001:db8::/64".parse().unwrap(), conn(0));
    f.insert6("2001:db8:1::/64".parse().unwrap(), conn(1));
    f.insert6("fc00::/16".parse().unwrap(), via(1, "2001:db8:1::fe"));
    let mut n = Neighbours::default();
    n.learn(0, host().into(), H0, NeighSource::Static);
    n.learn(1, "2001:db8:1::fe".parse().unwrap(), GW1, NeighSource::Static);
    let pol = SrPolicy::new(headend_src(), EncapMode::Encaps, vec![(vec![sid_end(), sid_dt6()], 1)]).unwrap();
    let mut t = SidTable::new(&Params::DEFAULT);
    t.add_policy("2001:db8:ff::/48".parse().unwrap(), pol);
    let mut pl = Pipeline::new(Arc::new(Topology::new(vec![p0, p1])), Arc::new(f), Arc::new(n), Arc::new(WorkerCounters::default()), PipelineConfig::default());
    pl.set_sids(Arc::new(t));
    pl
}

/// The egress PE: p0 (WAN), p1 (DC) toward `far()` and 198.51.100.0/24.
fn exit() -> Pipeline {
    let p0 = iface("p0", 0, None, R0, 1500, &["2001:db8:1::fe/64"]);
    let p1 = iface("p1", 1, None, R1, 1500, &["2001:db8:2::1/64", "10.2.0.1/24"]);
    let mut f = Fib::default();
    f.insert6("2001:db8:1::/64".parse().unwrap(), conn(0));
    f.insert6("fc00:0:1::/48".parse().unwrap(), via(0, "2001:db8:1::1"));
    f.insert6("2001:db8:2::/64".parse().unwrap(), conn(1));
    f.insert6("2001:db8:ff::/48".parse().unwrap(), via(1, "2001:db8:2::fe"));
    f.insert4("10.2.0.0/24".parse().unwrap(), conn(1));
    f.insert4("198.51.100.0/24".parse().unwrap(), via(1, "10.2.0.254"));
    let mut n = Neighbours::default();
    n.learn(0, "2001:db8:1::1".parse().unwrap(), H0, NeighSource::Static);
    n.learn(1, "2001:db8:2::fe".parse().unwrap(), GW1, NeighSource::Static);
    n.learn(1, "10.2.0.254".parse().unwrap(), GW1, NeighSource::Static);
    let mut t = SidTable::new(&Params::DEFAULT);
    t.insert(sid_end(), Behaviour::End);
    t.insert(sid_dt6(), Behaviour::EndDT6);
    t.insert(sid_dt4(), Behaviour::EndDT4);
    let mut pl = Pipeline::new(Arc::new(Topology::new(vec![p0, p1])), Arc::new(f), Arc::new(n), Arc::new(WorkerCounters::default()), PipelineConfig::default());
    pl.set_sids(Arc::new(t));
    pl
}

fn eth(dst: MacAddr, et: u16, payload: &[u8]) -> Vec<u8> {
    support::eth(dst, H0, None, et, payload)
}

/// The tunnel fragments the headend sends for `packet` (frames addressed
/// to the next node's R0).
fn headend_fragments(packet: &[u8]) -> Vec<Vec<u8>> {
    let mut h = headend();
    let mut p = VecPacket::from_bytes(&eth(R0, 0x86dd, packet));
    let Verdict::Replicate(n) = h.process(&mut p, 0, T0) else { panic!("the headend fragments the tunnel packet") };
    assert!(n >= 2);
    (0..n)
        .map(|i| {
            let mut c = VecPacket::from_bytes(&[]);
            assert_eq!(h.build_replica(usize::from(i), &p, &mut c, T0), Ok(1));
            let mut f = c.to_vec();
            f[..6].copy_from_slice(&R0);
            f
        })
        .collect()
}

fn feed(pl: &mut Pipeline, frames: &[Vec<u8>]) -> Vec<(Verdict, Vec<u8>)> {
    frames
        .iter()
        .map(|f| {
            let mut p = VecPacket::from_bytes(f);
            let v = pl.process(&mut p, 0, T0);
            (v, p.to_vec())
        })
        .collect()
}

fn spec(params: PortParams) -> CongestionSpec {
    CongestionSpec { params, source_v4: None, source_v6: None, end_e_sid: None, notify_sids: Vec::new(), tunnel_pes: Vec::new(), source_qps: Vec::new(), source_formats: Vec::new(), auth: Default::default() }
}

/// Rule: RFC 3168 s.5.3: "Reassembly of a fragmented packet MUST NOT lose
/// indications of congestion": if any fragment carries CE, the reassembled
/// packet is CE (or dropped). The README promises that fragments are
/// marked like other packets at a congested egress (outer header) and that
/// the tunnel exit reassembles what the headend fragmented, then applies
/// RFC 6040 s.4.2 (outer CE over an ECT inner gives CE).
/// Here: the ingress PE fragments a 1280-octet ECT(0) tunnel packet, a
/// congested P node (the real `EgressPort`, K_min 1400 octets) CE-marks the
/// second fragment's outer header, the egress PE's End.DT6 reassembles and
/// decapsulates.
/// Was: the reassembled outer header is the first fragment's alone
/// (`reasm.rs` keeps only the first fragment's unfragmentable part), so the
/// CE of the second fragment is lost and the inner packet leaves ECT(0).
#[test]
fn a_ce_mark_on_a_later_tunnel_fragment_survives_reassembly_at_end_dt6() {
    // DSCP 26, ECT(0).
    let tc = (26 << 2) | ECT0;
    let data: Vec<u8> = (0..1280 - 48).map(|i| i as u8).collect();
    let inner = ipv6(host(), far(), 17, 64, tc, &udp6(host(), far(), 0xc123, 4791, &data));
    assert_eq!(inner.len(), 1280);
    let frags = headend_fragments(&inner);
    assert_eq!(frags.len(), 2);
    assert_eq!(frags[0].len(), 1310);
    for f in &frags {
        assert_eq!(tc6(&f[14..]), tc, "the outer copies the inner's traffic class (RFC 6040 normal mode)");
    }

    // A congestion-aware P node in between: K_min 1400 octets, nothing
    // leaves until both are queued.
    let counters = WorkerCounters::default();
    let params = PortParams { k_min_bytes: Some(1400), ..PortParams::default() };
    let mut e: EgressPort<VecPacket> = EgressPort::new(EgressConfig::default(), Some(spec(params)));
    for f in &frags {
        e.admit(VecPacket::from_bytes(f), T0, &counters).map_err(|(_, d)| d).unwrap();
    }
    let mut out = Vec::new();
    e.dequeue(T0, 64, |p, len, flow, _| out.push((p.to_vec(), len, flow)));
    for (_, len, flow) in &out {
        e.sent(*flow, *len, T0);
    }
    let marked: Vec<Vec<u8>> = out.into_iter().map(|(f, _, _)| f).collect();
    assert_eq!(marked.len(), 2);
    assert_eq!(tc6(&marked[0][14..]) & 3, ECT0, "QD 1310 <= K_min: the first fragment is not marked");
    assert_eq!(tc6(&marked[1][14..]), (26 << 2) | CE, "QD 1484 > K_min: the second fragment's outer header is CE");
    assert_eq!(counters.local[Local::CeMarked as usize].get(), 1);

    let mut pl = exit();
    let res = feed(&mut pl, &marked);
    assert_eq!(res[0].0, Verdict::Consumed, "held for reassembly");
    let (v, o) = &res[1];
    assert_eq!(*v, Verdict::Tx(1), "reassembled, decapsulated, routed");
    assert_eq!(pl.counters.local[Local::Srv6Reassembled as usize].get(), 1);
    let ip = &o[14..];
    assert_eq!(&ip[24..40], &far().octets());
    assert_eq!(tc6(ip) >> 2, 26, "DSCP untouched");
    assert_eq!(tc6(ip) & 3, CE, "the congestion indication of the second fragment reaches the inner packet");
}

/// Rule: as above (RFC 3168 s.5.3, then RFC 6040 s.4.2 at End.DT4), for an
/// IPv4 inner packet: the CE that a congested node set on the outer
/// header of one (not the first) fragment of an IPv6 tunnel packet must
/// become CE in the decapsulated IPv4 header, DSCP kept, with a correct
/// header checksum (computed here independently).
/// Was: the inner IPv4 packet leaves ECT(1): the reassembled tunnel packet
/// carries the first fragment's ECN only.
#[test]
fn a_ce_mark_on_a_later_tunnel_fragment_survives_reassembly_at_end_dt4() {
    // DSCP 26, ECT(1).
    let tos = (26 << 2) | ECT1;
    let udp: Vec<u8> = {
        let mut u = vec![0x04, 0xd2, 0x12, 0xb7, 0, 0, 0, 0];
        let body: Vec<u8> = (0..972).map(|i| (i * 3) as u8).collect();
        u[4..6].copy_from_slice(&((8 + body.len()) as u16).to_be_bytes());
        u.extend_from_slice(&body);
        u
    };
    let inner = ipv4(tos, 33, 0x4242, [192, 0, 2, 7], [198, 51, 100, 9], 17, &udp);
    assert_eq!(inner.len(), 1000);
    // H.Encaps (RFC 6040 normal mode: the outer copies the inner's ECN),
    // no SRH, straight to the exit's End.DT4 SID; fragmented in three.
    let tunnel = eth(R0, 0x86dd, &ipv6(headend_src(), sid_dt4(), 4, 60, tos, &inner));
    let mut frags = dataplane::frag::tunnel_fragments(&tunnel, 400, 0x1234_abcd);
    assert_eq!(frags.len(), 3);
    // A congested node marks the middle fragment, as the egress stage
    // does (outer header).
    assert!(classify::set_ce(&mut frags[1]));
    assert_eq!(frags[1][15] >> 4 & 3, CE);
    assert_eq!(frags[0][15] >> 4 & 3, ECT1);

    let mut pl = exit();
    let res = feed(&mut pl, &frags);
    let (v, o) = res.last().unwrap();
    assert_eq!(*v, Verdict::Tx(1), "{:?}", res.iter().map(|(v, _)| v).collect::<Vec<_>>());
    assert_eq!(&o[12..14], &[0x08, 0x00]);
    let ip = &o[14..34];
    let mut want = inner[..20].to_vec();
    want[1] = (26 << 2) | CE;
    want[8] = 32; // a routed hop
    want[10..12].fill(0);
    let c = inet_checksum(&want);
    want[10..12].copy_from_slice(&c.to_be_bytes());
    assert_eq!(ip[1] & 3, CE, "inner ECN after reassembly and RFC 6040 decapsulation");
    assert_eq!(ip, &want[..], "the whole inner header: TOS, TTL and checksum");
    assert_eq!(&o[34..], &inner[20..], "payload untouched");
}

// ------------------------------------------------------------ EMR

/// Ethernet + IPv6 (ECN `ecn`) + UDP to 4791 + BTH (opcode `op`) + AETH /
/// payload + ICRC, `src` to `dst`, DestQP `qp`.
fn roce_frame(src: &str, dst: &str, op: u8, qp: u32, ecn: u8, body: usize) -> Vec<u8> {
    let mut bth = vec![op, 0, 0xff, 0xff, 0];
    bth.extend_from_slice(&qp.to_be_bytes()[1..]);
    bth.extend_from_slice(&[0, 0, 0, 1]);
    bth.extend(std::iter::repeat_n(0u8, body + 4));
    let (s, d) = (a6(src), a6(dst));
    let ip = ipv6(s, d, 17, 64, ecn, &udp6(s, d, 0xc001, 4791, &bth));
    eth(R0, 0x86dd, &ip)
}

/// The EMR of the interval in which `frames` enter a congestion-aware port
/// whose queue is above K_min (1000 octets) for all of them: a 1500-octet
/// Not-ECT UDP packet first (data, not marked), then `frames`.
fn emr_of(frames: &[Vec<u8>]) -> (f64, u64) {
    let counters = WorkerCounters::default();
    let params = PortParams { k_min_bytes: Some(1000), v_ecn: 0.5, interval_ns: 100_000, ..PortParams::default() };
    let mut e: EgressPort<VecPacket> = EgressPort::new(EgressConfig::default(), Some(spec(params)));
    let mut reqs: Vec<CnpRequest> = Vec::with_capacity(64);
    e.poll(T0, &mut reqs);
    let filler = eth(R0, 0x86dd, &ipv6(host(), far(), 17, 64, 0, &udp6(host(), far(), 1, 2, &[0u8; 1500 - 14 - 48])));
    e.admit(VecPacket::from_bytes(&filler), T0 + 1, &counters).map_err(|(_, d)| d).unwrap();
    for (i, f) in frames.iter().enumerate() {
        e.admit(VecPacket::from_bytes(f), T0 + 2 + i as u64, &counters).map_err(|(_, d)| d).unwrap();
    }
    e.poll(T0 + 200_000, &mut reqs);
    let s = e.cong.as_ref().unwrap().stats();
    (s.emr, s.trigger_emr)
}

/// Rule: EMR is "the fraction of data packets marked" (draft-tian s.5.3.1);
/// the README (`v_ecn`): "the fraction of data packets, not RoCEv2 ACKs or
/// CNPs, CE-marked in an interval". An XRC Acknowledge (opcode 0xB1,
/// IBTA transport XRC 101b, operation Acknowledge; sent by every XRC
/// target, e.g. Linux rxe `IB_OPCODE_XRC_ACKNOWLEDGE`) and an XRC Atomic
/// Acknowledge (0xB2) are RoCEv2 ACKs exactly as RC ACKs (0x11) are.
/// Here: 10 Not-ECT RC SENDs (data, not marked) and 20 ECT(0) ACKs above
/// K_min: EMR = 0 of 11 data packets, with RC ACKs and with XRC ACKs alike,
/// and no EMR trigger (V_ecn 0.5).
/// Was: `congestion::port::is_data` excludes only RC / RD ACKs and CNPs, so
/// XRC ACKs count as data and as marked: EMR 20/31 and an EMR trigger (a
/// Long-haul CNP) for congestion only acknowledgements "showed".
#[test]
fn xrc_acks_are_not_data_packets_in_the_emr() {
    let (a, b) = ("2001:db8:1::2", "2001:db8:3::2");
    let data: Vec<Vec<u8>> = (0..10).map(|_| roce_frame(a, b, 0x04, 0x100, NOT_ECT, 64)).collect();
    for (name, ack) in [("RC ACK", 0x11u8), ("XRC ACK", 0xb1), ("XRC Atomic ACK", 0xb2)] {
        let mut frames = data.clone();
        frames.extend((0..20).map(|_| roce_frame(b, a, ack, 0x200, ECT0, 4)));
        let (emr, trig) = emr_of(&frames);
        assert_eq!((emr, trig), (0.0, 0), "{name} (0x{ack:02x}): EMR counts data packets only");
    }
}

