//! The SR policy headend (H.Encaps / H.Encaps.Red, RFC 8986 s.5.1 /
//! s.5.2), from a review (the rest of the headend found right): MTU
//! handling of an IPv6 inner packet when the outer headers leave a tunnel
//! MTU below the IPv6 minimum link MTU. Each test failed on the code before
//! its fix ("Was").
//!
//! The policy is the draft-li s.5.2 headend of the README ("The
//! headend"): SID list [End.MT SID, Proxy Address], one End.MT TLV with
//! eleven receivers (the most one TLV holds) and a 32-octet HMAC TLV. Its
//! SRH is 328 octets, so the outer headers take 368 of the 1500-octet
//! egress MTU: the tunnel MTU is 1132.

mod support;
use support::{conn, iface, ipv6, udp6};
use std::net::Ipv6Addr;
use std::sync::Arc;

use dataplane::counters::{Local, WorkerCounters};
use dataplane::packet::VecPacket;
use dataplane::pipeline::{Pipeline, PipelineConfig, Verdict};
use dataplane::srv6::{EncapMode, SidTable, SrPolicy, SrhExtras};
use dataplane::tables::{Fib, MacAddr, NeighSource, Neighbours, NextHop, Topology};
use dataplane::wire::checksum;
use dataplane::wire::ipv6::Ipv6Packet;
use dataplane::wire::params::Params;
use dataplane::wire::srh::{EndMtReceiver, EndMtRepr, HmacKey};

const R0: MacAddr = [0x02, 0, 0, 0, 0, 0x10];
const R1: MacAddr = [0x02, 0, 0, 0, 0, 0x11];
const H0: MacAddr = [0x00, 0x11, 0x22, 0, 0, 0x02];
const GW1: MacAddr = [0x00, 0x11, 0x22, 0x01, 0, 0xfe];
const T0: u64 = 5_000_000_000;
const EGRESS_MTU: u16 = 1500;

fn a6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}
fn end_mt_sid() -> Ipv6Addr {
    a6("fc00:0:2::a")
}
fn proxy() -> Ipv6Addr {
    a6("2001:db8:ff::1")
}
fn host() -> Ipv6Addr {
    a6("2001:db8::2")
}

/// p0 (DC side, 9000) with the source host, p1 (WAN, 1500) toward the
/// End.MT SID; the headend policy steers the Proxy Address.
fn headend() -> Pipeline {
    let p0 = iface("p0", 0, None, R0, 9000, &["2001:db8::1/64"]);
    let p1 = iface("p1", 1, None, R1, EGRESS_MTU, &["2001:db8:1::1/64"]);
    let mut f = Fib::default();
    f.insert6("2001:db8::/64".parse().unwrap(), conn(0));
    f.insert6("2001:db8:1::/64".parse().unwrap(), conn(1));
    f.insert6("fc00::/16".parse().unwrap(), NextHop { iface: 1, gateway: Some("2001:db8:1::fe".parse().unwrap()) });
    let mut n = Neighbours::default();
    n.learn(0, host().into(), H0, NeighSource::Static);
    n.learn(1, "2001:db8:1::fe".parse().unwrap(), GW1, NeighSource::Static);
    let receivers: Vec<EndMtReceiver> = (0..11u16).map(|i| EndMtReceiver { address: Ipv6Addr::new(0x2001, 0xdb8, 7, 0, 0, 0, 0, i + 1), qpn: 0x100 + u32::from(i) }).collect();
    let tlv = EndMtRepr { tlv_type: Params::DEFAULT.srh_tlv_end_mt, edge_node_address: end_mt_sid(), receivers };
    let key = HmacKey::new(7, b"end-mt secret", 32).unwrap();
    let pol = SrPolicy::new(a6("fc00:0:1::100"), EncapMode::Encaps, vec![(vec![end_mt_sid(), proxy()], 1)])
        .unwrap()
        .with_extras(SrhExtras { end_mt: vec![tlv], hmac: Some(key), h_flag: false })
        .unwrap();
    assert_eq!(pol.lists()[0].srh_template().len(), 328, "fixture: SRH size");
    let mut t = SidTable::new(&Params::DEFAULT);
    t.add_policy("2001:db8:ff::/48".parse().unwrap(), pol);
    let mut pl = Pipeline::new(Arc::new(Topology::new(vec![p0, p1])), Arc::new(f), Arc::new(n), Arc::new(WorkerCounters::default()), PipelineConfig::default());
    pl.set_sids(Arc::new(t));
    pl
}

fn eth(payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&R0);
    f.extend_from_slice(&H0);
    f.extend_from_slice(&0x86ddu16.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// A UDP/IPv6 packet of `len` octets from the host to the Proxy Address.
fn inner(len: usize) -> Vec<u8> {
    let p = ipv6(host(), proxy(), 17, 64, 0, &udp6(host(), proxy(), 0xc123, 4791, &vec![0x5a; len - 48]));
    assert_eq!(p.len(), len);
    p
}

/// Rule: RFC 2473 s.7.1 (the section srv6_encap cites for its tunnel MTU):
/// "if the original IPv6 packet is larger than the IPv6 minimum link MTU,
/// the entry-point node discards the packet and sends an ICMPv6 "Packet
/// Too Big" message to the source address of the original packet with the
/// recommended MTU size field set to the tunnel MTU or the IPv6 minimum
/// link MTU, whichever is larger, i.e. max (tunnel MTU, IPv6 minimum link
/// MTU)"; also RFC 4443 s.3.2: a Packet Too Big "MUST be sent by a router
/// in response to a packet that it cannot forward because the packet is
/// larger than the MTU of the outgoing link".
/// Was: with a tunnel MTU of 1132 (egress 1500 less 368 octets of outer
/// IPv6 + SRH), a 1400-octet IPv6 packet is dropped as `mtu-exceeded`
/// without any ICMPv6 message (srv6.rs, srv6_encap: `if tunnel_mtu >=
/// 1280 { ... TooBig }` else `Err(Drop::MtuExceeded)`), so the source never
/// learns to send smaller packets: a silent black hole.
#[test]
fn packet_too_big_says_1280_when_the_tunnel_mtu_is_below_the_ipv6_minimum() {
    let mut pl = headend();
    let big = inner(1400);
    let mut p = VecPacket::from_bytes(&eth(&big));
    let v = pl.process(&mut p, 0, T0);
    assert_eq!(v, Verdict::Tx(0), "a Packet Too Big back to the source, not {v:?}");
    let o = p.to_vec();
    let d = &o[14..];
    let ip = Ipv6Packet::new_checked(d).unwrap();
    assert_eq!((ip.dst_addr(), ip.next_header().0), (host(), 58));
    assert_eq!(&d[40..42], &[2, 0], "ICMPv6 Packet Too Big");
    assert_eq!(&d[44..48], &1280u32.to_be_bytes(), "MTU = max(tunnel MTU 1132, 1280)");
    let sum = checksum::combine(checksum::pseudo_v6(&d[8..24].try_into().unwrap(), &d[24..40].try_into().unwrap(), 58, (d.len() - 40) as u32), checksum::sum(&d[40..]));
    assert_eq!(checksum::fold(sum), 0xffff, "ICMPv6 checksum");
}

/// Rule: RFC 2473 s.7.1: "if the original IPv6 packet is equal or smaller
/// than the IPv6 minimum link MTU, the tunnel entry-point node
/// encapsulates the original packet, and subsequently fragments the
/// resulting IPv6 tunnel packet into IPv6 fragments that do not exceed the
/// Path MTU to the tunnel exit-point" (RFC 8200 s.5: a link that cannot
/// convey a 1280-octet packet in one piece must provide fragmentation
/// below IPv6).
/// Was: a 1280-octet IPv6 packet, which every IPv6 path must carry and
/// which its source cannot make smaller, is dropped as `mtu-exceeded`
/// (srv6.rs, srv6_encap: tunnel MTU 1132 < 1280, `Err(Drop::MtuExceeded)`):
/// nothing of the flow ever crosses the tunnel.
#[test]
fn a_1280_octet_packet_crosses_a_tunnel_whose_mtu_is_below_1280() {
    let mut pl = headend();
    let min = inner(1280);
    let mut p = VecPacket::from_bytes(&eth(&min));
    let v = pl.process(&mut p, 0, T0);
    let Verdict::Replicate(n) = v else {
        panic!("expected the tunnel packet as IPv6 fragments (Verdict::Replicate), got {v:?}");
    };
    assert!(n >= 2, "{n} fragment(s)");
    // Each fragment: the outer header and the SRH (unfragmentable, RFC
    // 8200 s.4.5), whose Next Header names the Fragment header; the data
    // put back together is the inner packet, one hop on.
    let mut data = Vec::new();
    let mut ident = None;
    for i in 0..n {
        let mut c = VecPacket::from_bytes(&[]);
        assert_eq!(pl.build_replica(usize::from(i), &p, &mut c, T0), Ok(1), "fragment {i} toward the End.MT SID");
        let o = c.to_vec();
        let d = &o[14..];
        assert!(d.len() <= usize::from(EGRESS_MTU), "fragment {i}: {} octets", d.len());
        let ip = Ipv6Packet::new_checked(d).unwrap();
        assert_eq!((ip.src_addr(), ip.dst_addr()), (a6("fc00:0:1::100"), end_mt_sid()));
        assert_eq!((d[6], usize::from(u16::from_be_bytes([d[4], d[5]]))), (43, d.len() - 40), "fragment {i}: an SRH first, the payload length");
        let srh_len = 8 + 8 * usize::from(d[41]);
        assert_eq!(d[40], 44, "fragment {i}: the SRH's Next Header is the Fragment header");
        let f = &d[40 + srh_len..48 + srh_len];
        assert_eq!(f[0], 41, "fragment {i}: IPv6 inside");
        let (off, more) = (usize::from(u16::from_be_bytes([f[2], f[3]]) & !7), f[3] & 1 == 1);
        assert_eq!((off, more), (data.len(), i + 1 < n), "fragment {i}: offset and M");
        let id = u32::from_be_bytes([f[4], f[5], f[6], f[7]]);
        assert_eq!(*ident.get_or_insert(id), id, "fragment {i}: one Identification");
        data.extend_from_slice(&d[48 + srh_len..]);
    }
    let mut want = min.clone();
    want[7] -= 1;
    assert_eq!(data, want, "the fragments carry the inner packet, its hop limit decremented");
    assert_eq!(pl.counters.local[Local::Srv6EncapFragmented as usize].get(), 1);
}
