//! The exit of an SRv6 tunnel reassembles a tunnel packet its headend
//! fragmented (RFC 2473 s.7.1 (b): "the tunnel exit-point node ...
//! reassembles"; RFC 8200 s.4.5, the Fragment header after the SRH).
//! dcirouter's own headend fragments an IPv6 packet of at most 1280
//! octets whose tunnel MTU is below 1280 (`headend_mtu.rs`); before this,
//! its own End.DT4 / End.DT6 / END.C / END.E SIDs dropped every such
//! fragment (`decap-next-header`), so nothing crossed such a tunnel.
//!
//! The fragments come from the router's headend and, independently, from
//! scapy's `fragment6` (tests/oracle is not needed: the script is inline).

mod oracle_common;
mod support;

use oracle_common::{hex, python, unhex};
use support::{conn, iface, ipv6, udp6, via};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use dataplane::classify;
use dataplane::congestion::PortParams;
use dataplane::counters::{Drop, Local, WorkerCounters};
use dataplane::egress::EgressConfig;
use dataplane::node::{CongestionSpec, EgressPort};
use dataplane::packet::VecPacket;
use dataplane::pipeline::{Pipeline, PipelineConfig, Verdict};
use dataplane::srv6::{Behaviour, EncapMode, SidTable, SrPolicy};
use dataplane::tables::{Fib, MacAddr, NeighSource, Neighbours, Topology};
use dataplane::wire::checksum;
use dataplane::wire::ipv6::Ipv6Packet;
use dataplane::wire::params::Params;

const R0: MacAddr = [0x02, 0, 0, 0, 0, 0x10];
const R1: MacAddr = [0x02, 0, 0, 0, 0, 0x11];
const H0: MacAddr = [0x00, 0x11, 0x22, 0, 0, 0x02];
const GW1: MacAddr = [0x00, 0x11, 0x22, 0x01, 0, 0xfe];
const T0: u64 = 5_000_000_000;

fn a6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}
/// The exit node's SIDs: End (the tunnel's first segment), End.DT6,
/// End.DT4.
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
/// Behind the exit node's DC port.
fn far() -> Ipv6Addr {
    a6("2001:db8:ff::1")
}

/// The headend: p0 (DC, 9000) with the source host, p1 (WAN, 1300)
/// toward the exit; the policy's SID list [End, End.DT6] of the exit makes
/// 80 octets of outer headers: a tunnel MTU of 1220, below 1280.
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

/// The exit: p0 (WAN) toward the headend, p1 (DC) toward `far()` and
/// 198.51.100.0/24 through GW1.
fn exit() -> Pipeline {
    let p0 = iface("p0", 0, None, R0, 1500, &["2001:db8:1::fe/64"]);
    let p1 = iface("p1", 1, None, R1, 1500, &["2001:db8:2::1/64", "10.2.0.1/24"]);
    let mut f = Fib::default();
    f.insert6("2001:db8:1::/64".parse().unwrap(), conn(0));
    f.insert6("fc00:0:1::/48".parse().unwrap(), via(0, "2001:db8:1::1"));
    f.insert6("2001:db8::/64".parse().unwrap(), via(0, "2001:db8:1::1"));
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

/// A UDP/IPv6 packet of `len` octets from the host to `far()`.
fn inner(len: usize) -> Vec<u8> {
    let p = ipv6(host(), far(), 17, 64, 0, &udp6(host(), far(), 0xc123, 4791, &(0..len - 48).map(|i| i as u8).collect::<Vec<_>>()));
    assert_eq!(p.len(), len);
    p
}

/// The tunnel fragments the headend sends for `packet` (IPv6 frames).
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
            // Through the headend's gateway: at the exit, to its MAC.
            assert_eq!(&f[..6], &GW1);
            f[..6].copy_from_slice(&R0);
            f
        })
        .collect()
}

fn local(pl: &Pipeline, c: Local) -> u64 {
    pl.counters.local[c as usize].get()
}

/// Feed `frames` (Ethernet, to R0) to the exit; the verdicts.
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

/// Rule: RFC 2473 s.7.1 (b) / RFC 8200 s.4.5: the tunnel exit reassembles
/// the tunnel packet; End.DT6 then decapsulates it and routes the inner
/// packet (RFC 8986 s.4.6). The fragments reach the exit's End SID first
/// (SL 1, the Fragment header after the SRH: End updates the DA only),
/// then its End.DT6 SID at SL 0.
/// Was: End.DT6 dropped every fragment as `decap-next-header`.
#[test]
fn end_dt6_reassembles_what_the_headend_fragmented() {
    let pkt = inner(1280);
    let frags = headend_fragments(&pkt);
    let mut pl = exit();
    let out = feed(&mut pl, &frags);
    let last = out.len() - 1;
    for (i, (v, _)) in out.iter().enumerate().take(last) {
        assert_eq!(*v, Verdict::Consumed, "fragment {i} is held for reassembly");
    }
    let (v, o) = &out[last];
    assert_eq!(*v, Verdict::Tx(1), "the inner packet toward the DC");
    assert_eq!(&o[..6], &GW1, "to the DC gateway");
    assert_eq!(&o[12..14], &[0x86, 0xdd]);
    let mut want = pkt.clone();
    want[7] -= 2; // the headend and the exit are routed hops
    assert_eq!(&o[14..], &want[..], "the inner packet, whole");
    assert_eq!(local(&pl, Local::Srv6Reassembled), 1);
    assert_eq!(local(&pl, Local::Srv6Decap), 1);
    assert_eq!(pl.counters.drops[Drop::DecapNextHeader as usize].get(), 0);
}

/// Rule: RFC 8200 s.4.5: fragments may arrive in any order; the first
/// fragment's unfragmentable part is the datagram's.
#[test]
fn end_dt6_reassembles_fragments_in_reverse_order() {
    let pkt = inner(1250);
    let mut frags = headend_fragments(&inner(1280));
    // Two datagrams interleaved: the second (1250 octets) from a second
    // headend (another Identification space: the same here, so its
    // Identification is made distinct), in reverse order.
    let mut second = headend_fragments(&pkt);
    for f in &mut second {
        let at = 14 + 40 + 8 + 32; // the Fragment header after the SRH
        assert_eq!(f[14 + 40], 44);
        f[at + 4..at + 8].copy_from_slice(&0x5555_0001u32.to_be_bytes());
    }
    second.reverse();
    let mut all = Vec::new();
    for (a, b) in frags.drain(..).zip(second.iter().cloned()) {
        all.push(b);
        all.push(a);
    }
    let mut pl = exit();
    let out = feed(&mut pl, &all);
    let sent: Vec<&Vec<u8>> = out.iter().filter(|(v, _)| *v == Verdict::Tx(1)).map(|(_, o)| o).collect();
    assert_eq!(sent.len(), 2, "both datagrams: {:?}", out.iter().map(|(v, _)| v).collect::<Vec<_>>());
    let mut want = pkt.clone();
    want[7] -= 2;
    assert!(sent.iter().any(|o| o[14..] == want[..]), "the 1250-octet datagram, reassembled from reversed fragments");
    assert_eq!(local(&pl, Local::Srv6Reassembled), 2);
}

/// Rule: RFC 8200 s.4.5: a datagram not complete within 60 s (ours: 30)
/// is discarded and, its first fragment having arrived, an ICMPv6 Time
/// Exceeded code 1 goes to the source of the fragments: the headend.
#[test]
fn an_incomplete_tunnel_packet_times_out_with_time_exceeded_to_the_headend() {
    let frags = headend_fragments(&inner(1280));
    let mut pl = exit();
    let out = feed(&mut pl, &frags[..frags.len() - 1]);
    assert!(out.iter().all(|(v, _)| *v == Verdict::Consumed));
    let later = T0 + 31_000_000_000;
    assert!(pl.reassembly_due(later));
    let mut p = VecPacket::from_bytes(&[]);
    assert_eq!(pl.reassembly_timeout(&mut p, later), Some(Ok(0)), "Time Exceeded back toward the headend");
    let o = p.to_vec();
    let d = &o[14..];
    let ip = Ipv6Packet::new_checked(d).unwrap();
    assert_eq!((ip.dst_addr(), ip.next_header().0), (headend_src(), 58));
    assert_eq!(&d[40..42], &[3, 1], "Time Exceeded, fragment reassembly time exceeded");
    // The quote: the first fragment as it reached End.DT6 (the exit's End
    // SID had made the DA its next segment, SL 0), SRH and Fragment
    // header.
    let mut want = frags[0][14..14 + 40 + 40 + 8].to_vec();
    want[24..40].copy_from_slice(&sid_dt6().octets());
    want[40 + 3] = 0;
    assert_eq!(&d[48..48 + 40 + 40 + 8], &want[..], "quotes the first fragment's headers");
    assert_eq!(d[48 + 40 + 40], 41, "the Fragment header names IPv6");
}

/// scapy's `fragment6` over IPv6 / SRH (SL 0, End.DT4) / Fragment / IPv4
/// / UDP: the fragments (hex, one a line), then the inner IPv4 packet as
/// scapy renders it with its TTL one lower (what leaves the exit).
fn scapy_fragments(sid: Ipv6Addr) -> (Vec<Vec<u8>>, Vec<u8>) {
    let script = format!(
        r#"
from scapy.all import IPv6, IPv6ExtHdrSegmentRouting, IPv6ExtHdrFragment, IP, UDP, Raw, fragment6
inner = IP(src="192.0.2.7", dst="198.51.100.9", ttl=33, id=0x4242, flags="DF")/UDP(sport=1234, dport=4791)/Raw(bytes(range(256))*5)
outer = IPv6(src="fc00:0:1::100", dst="{sid}", hlim=60)/IPv6ExtHdrSegmentRouting(addresses=["{sid}"], segleft=0, lastentry=0)/IPv6ExtHdrFragment(id=0x1234abcd)/inner
for f in fragment6(outer, 600):
    print(bytes(f).hex())
out = IP(bytes(inner))
out.ttl -= 1
del out.chksum
print("inner", bytes(out).hex())
"#
    );
    let o = python("scapy.all").args(["-c", &script]).output().expect("python3");
    assert!(o.status.success(), "scapy: {}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    let mut frags = Vec::new();
    let mut want = Vec::new();
    for line in text.lines() {
        match line.strip_prefix("inner ") {
            Some(h) => want = unhex(h),
            None => frags.push(eth(R0, 0x86dd, &unhex(line))),
        }
    }
    (frags, want)
}

/// Rule: as above, with an independent builder of the fragments: scapy's
/// `fragment6` puts the Fragment header after the SRH (at its last
/// segment) and splits an IPv4 packet; End.DT4 reassembles the tunnel
/// packet and forwards the inner IPv4 packet exactly as scapy renders it
/// one hop on (TTL - 1, checksum).
/// Was: every fragment dropped as `decap-next-header`.
#[test]
fn end_dt4_reassembles_scapy_fragments_into_the_inner_ipv4_packet() {
    let (frags, want) = scapy_fragments(sid_dt4());
    assert!(frags.len() >= 3, "scapy made {} fragments", frags.len());
    let mut pl = exit();
    // Out of order: the last first.
    let mut order = frags.clone();
    order.rotate_right(1);
    let out = feed(&mut pl, &order);
    let (v, o) = out.last().unwrap();
    assert_eq!(*v, Verdict::Tx(1), "{:?}", out.iter().map(|(v, _)| v).collect::<Vec<_>>());
    assert_eq!(&o[12..14], &[0x08, 0x00]);
    assert_eq!(hex(&o[14..]), hex(&want), "the inner IPv4 packet as scapy renders it one hop on");
    assert_eq!(Ipv4Addr::new(o[30], o[31], o[32], o[33]), Ipv4Addr::new(198, 51, 100, 9));
    assert_eq!(checksum::fold(checksum::sum(&o[14..34])), 0xffff);
    assert_eq!(local(&pl, Local::Srv6Reassembled), 1);
}

/// Rule: only the tunnel's exit reassembles (RFC 8200 s.4.5: fragments are
/// reassembled at the destination, the last segment): End.MT, which
/// replicates at a segment before the last (SL > 0), keeps dropping
/// fragments, and a Fragment header before the SRH's last segment at a
/// decapsulating SID is still the Parameter Problem of RFC 8986 s.4.6.
#[test]
fn a_fragment_before_the_last_segment_is_not_reassembled_at_end_dt6() {
    let (frags, _) = scapy_fragments(sid_dt4());
    let mut f = frags[0].clone();
    // SL 1 with the DT4 SID as DA: not the tunnel's exit yet.
    let srh = 14 + 40;
    f[srh + 1] = 4; // Hdr Ext Len: two segments
    let mut seg2 = vec![0u8; 16];
    seg2[..16].copy_from_slice(&a6("fc00:0:9::1").octets());
    f.splice(srh + 8..srh + 8, seg2);
    f[srh + 3] = 1; // Segments Left
    f[srh + 4] = 1; // Last Entry
    let pl_len = u16::from_be_bytes([f[18], f[19]]) + 16;
    f[18..20].copy_from_slice(&pl_len.to_be_bytes());
    let mut pl = exit();
    let out = feed(&mut pl, &[f]);
    let (v, o) = &out[0];
    assert_eq!(*v, Verdict::Tx(0), "a Parameter Problem back to the source, not {v:?}");
    assert_eq!(&o[14 + 40..14 + 42], &[4, 0], "Parameter Problem, code 0");
    assert_eq!(local(&pl, Local::Srv6Reassembled), 0);
    assert_eq!(local(&pl, Local::ReasmFragment), 0);
}

/// Rule: RFC 8200 s.4.5: the router reassembles what is sent to it
/// wherever the Fragment header sits in the unfragmentable part: an echo
/// request sent with an SRH at its last segment (the router's address)
/// and fragmented after it is answered (RFC 4443 s.4.2) like one sent
/// without the SRH, the reply fragmented to fit the link.
/// Was: dropped as `local-unsupported` (only a Fragment header right after
/// the IPv6 header was reassembled).
#[test]
fn an_echo_request_fragmented_after_an_srh_is_answered() {
    let script = r#"
from scapy.all import IPv6, IPv6ExtHdrSegmentRouting, IPv6ExtHdrFragment, ICMPv6EchoRequest, fragment6
p = IPv6(src="fc00:0:1::100", dst="2001:db8:1::fe", hlim=60)/IPv6ExtHdrSegmentRouting(addresses=["2001:db8:1::fe"], segleft=0, lastentry=0)/IPv6ExtHdrFragment(id=77)/ICMPv6EchoRequest(id=9, seq=3, data=bytes(range(200))*10)
for f in fragment6(p, 1000):
    print(bytes(f).hex())
"#;
    let o = python("scapy.all").args(["-c", script]).output().expect("python3");
    assert!(o.status.success(), "scapy: {}", String::from_utf8_lossy(&o.stderr));
    let frags: Vec<Vec<u8>> = String::from_utf8(o.stdout).unwrap().lines().map(|l| eth(R0, 0x86dd, &unhex(l))).collect();
    assert!(frags.len() >= 3);
    let mut pl = exit();
    let mut last = None;
    for f in &frags {
        let mut p = VecPacket::from_bytes(f);
        last = Some((pl.process(&mut p, 0, T0), p));
    }
    let (v, p) = last.unwrap();
    let Verdict::Replicate(n) = v else { panic!("the 2048-octet reply leaves as fragments, got {v:?}") };
    let mut data = Vec::new();
    for i in 0..n {
        let mut c = VecPacket::from_bytes(&[]);
        assert_eq!(pl.build_replica(usize::from(i), &p, &mut c, T0), Ok(0));
        let o = c.to_vec();
        let d = &o[14..];
        let ip = Ipv6Packet::new_checked(d).unwrap();
        assert_eq!((ip.src_addr(), ip.dst_addr(), d[6]), (a6("2001:db8:1::fe"), headend_src(), 44), "reply fragment {i}");
        data.extend_from_slice(&d[48..]);
    }
    assert_eq!(&data[..2], &[129, 0], "an Echo Reply");
    assert_eq!(&data[4..8], &[0, 9, 0, 3], "identifier and sequence");
    assert_eq!(&data[8..], &(0..2000).map(|i| (i % 200) as u8).collect::<Vec<_>>()[..], "the data echoed");
    let sum = checksum::combine(checksum::pseudo_v6(&a6("2001:db8:1::fe").octets(), &headend_src().octets(), 58, data.len() as u32), checksum::sum(&data));
    assert_eq!(checksum::fold(sum), 0xffff, "ICMPv6 checksum");
}

/// Rule: a bad or oversized input never crashes the router and is counted
/// under a named reason: a tunnel packet whose reassembly no packet buffer
/// can hold (here 14 + 40 + 3000 octets against a buffer of 2048 after
/// its headroom, as an mbuf of the default data room) is dropped as
/// `reassembly-too-large`, and the reassembly slot is free again.
#[test]
fn a_tunnel_packet_no_buffer_can_hold_is_dropped_as_too_large() {
    let mut big = vec![0u8; 14];
    big[12..14].copy_from_slice(&[0x86, 0xdd]);
    big.extend_from_slice(&ipv6(headend_src(), sid_dt6(), 41, 64, 0, &inner(3000)));
    big[..6].copy_from_slice(&R0);
    let frags = dataplane::frag::tunnel_fragments(&big, 1400, 0x7700_0001);
    assert_eq!(frags.len(), 3);
    let mut pl = exit();
    let out = feed(&mut pl, &frags);
    assert_eq!(out[0].0, Verdict::Consumed);
    assert_eq!(out[1].0, Verdict::Consumed);
    assert_eq!(out[2].0, Verdict::Drop(Drop::ReasmTooLarge));
    assert_eq!(local(&pl, Local::Srv6Reassembled), 0);
    // The slot is free: a whole tunnel packet of the right size after it
    // is reassembled from its fragments.
    let out = feed(&mut pl, &headend_fragments(&inner(1280)));
    assert_eq!(out.last().unwrap().0, Verdict::Tx(1));
    assert_eq!(local(&pl, Local::Srv6Reassembled), 1);
}

/// Rule: RFC 3168 s.5.3: reassembly "MUST NOT" lose a congestion
/// indication; a datagram one fragment of which was CE and another
/// Not-ECT cannot carry it and is dropped (as Linux's ip_frag_ecn_table),
/// counted as `reassembly-ecn-mixed`. (CE with ECT fragments: the
/// datagram is CE, `ecn_marking.rs`.)
#[test]
fn a_tunnel_packet_of_ce_and_not_ect_fragments_is_dropped() {
    let mut whole = vec![0u8; 14];
    whole[..6].copy_from_slice(&R0);
    whole[12..14].copy_from_slice(&[0x86, 0xdd]);
    whole.extend_from_slice(&ipv6(headend_src(), sid_dt6(), 41, 64, 0, &inner(1200)));
    let mut frags = dataplane::frag::tunnel_fragments(&whole, 600, 0x7700_0002);
    assert_eq!(frags.len(), 2);
    // The first Not-ECT (as sent), the second CE-marked on the way.
    frags[1][14 + 1] |= 0x30;
    let mut pl = exit();
    let out = feed(&mut pl, &frags);
    assert_eq!(out[0].0, Verdict::Consumed);
    assert_eq!(out[1].0, Verdict::Drop(Drop::ReasmEcnMixed));
    assert_eq!(local(&pl, Local::Srv6Reassembled), 0);
}

// ------------------------------------------------------------ ECN (RFC 3168 s.5.3)

const ECT1: u8 = 1;
const ECT0: u8 = 2;
const CE: u8 = 3;

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
