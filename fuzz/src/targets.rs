//! The fuzz targets: every view's `new_checked` and accessors, every
//! `Repr::parse`, and round trips where a `Repr` can be emitted again;
//! and the whole packet path ([`crate::pipeline`]).
//!
//! Adding a target: write `fn run_xxx(data: &[u8])` (and seeds), and add a
//! `Target` line to [`TARGETS`].

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use dataplane::wire::arp::{ArpOperation, ArpPacket, ArpRepr};
use dataplane::wire::ethernet::{EtherType, EthernetFrame, EthernetRepr, VlanTag};
use dataplane::wire::icmpv4::{Icmpv4Packet, Icmpv4Repr};
use dataplane::wire::icmpv6::{Icmpv6Packet, Icmpv6Repr};
use dataplane::wire::ipv4::{IpProtocol, Ipv4Packet, Ipv4Repr};
use dataplane::wire::ipv6::{
    walk_ext_chain, Ipv6AuthHeader, Ipv6AuthRepr, Ipv6ExtHeader, Ipv6FragmentHeader,
    Ipv6FragmentRepr, Ipv6OptionsRepr, Ipv6Packet, Ipv6Repr, Ipv6RoutingHeader, Ipv6RoutingRepr,
};
use dataplane::wire::udp::{UdpPacket, UdpRepr};
use dataplane::wire::{ah, fann, isis, lhcnp, params::Params, pfc, roce, srh};

use crate::Target;

/// Every target, by group.
pub const TARGETS: &[Target] = &[
    Target {
        name: "pipeline",
        group: "pipeline",
        seeds: crate::pipeline::seeds_pipeline,
        fixup: None,
        run: crate::pipeline::run_pipeline,
    },
    Target {
        name: "ethernet",
        group: "l2l3",
        seeds: seeds_ethernet,
        fixup: None,
        run: run_ethernet,
    },
    Target {
        name: "arp",
        group: "l2l3",
        seeds: seeds_arp,
        fixup: None,
        run: run_arp,
    },
    Target {
        name: "ipv4",
        group: "l2l3",
        seeds: seeds_ipv4,
        fixup: Some(fix_ipv4),
        run: run_ipv4,
    },
    Target {
        name: "ipv6",
        group: "l2l3",
        seeds: seeds_ipv6,
        fixup: None,
        run: run_ipv6,
    },
    Target {
        name: "ipv6_ext_chain",
        group: "l2l3",
        seeds: seeds_ext_chain,
        fixup: None,
        run: run_ext_chain,
    },
    Target {
        name: "udp",
        group: "l2l3",
        seeds: seeds_udp,
        fixup: Some(fix_udp),
        run: run_udp,
    },
    Target {
        name: "icmpv4",
        group: "l2l3",
        seeds: seeds_icmpv4,
        fixup: Some(fix_icmpv4),
        run: run_icmpv4,
    },
    Target {
        name: "icmpv6",
        group: "l2l3",
        seeds: seeds_icmpv6,
        fixup: Some(fix_icmpv6),
        run: run_icmpv6,
    },
    Target {
        name: "frame",
        group: "l2l3",
        seeds: seeds_frame,
        fixup: Some(fix_frame),
        run: run_frame,
    },
    Target {
        name: "roce_bth",
        group: "roce",
        seeds: seeds_bth,
        fixup: None,
        run: run_bth,
    },
    Target {
        name: "roce_icrc",
        group: "roce",
        seeds: seeds_roce_datagram,
        fixup: Some(fix_icrc),
        run: run_icrc,
    },
    Target {
        name: "srh",
        group: "srv6",
        seeds: seeds_srh,
        fixup: None,
        run: run_srh,
    },
    Target {
        name: "lhcnp_ah",
        group: "notify",
        seeds: seeds_lhcnp_ah,
        fixup: None,
        run: run_lhcnp_ah,
    },
    Target {
        name: "lhcnp_icmpv6",
        group: "notify",
        seeds: seeds_lhcnp,
        fixup: Some(fix_icmpv6),
        run: run_lhcnp,
    },
    Target {
        name: "lhcnp_objects",
        group: "notify",
        seeds: seeds_objects,
        fixup: None,
        run: run_objects,
    },
    Target {
        name: "fann",
        group: "notify",
        seeds: seeds_fann,
        fixup: Some(fix_icmpv6),
        run: run_fann,
    },
    Target {
        name: "pfc",
        group: "notify",
        seeds: seeds_pfc,
        fixup: None,
        run: run_pfc,
    },
    Target {
        name: "isis",
        group: "isis",
        seeds: seeds_isis,
        fixup: None,
        run: run_isis,
    },
    Target {
        name: "mld",
        group: "l2l3",
        seeds: seeds_mld,
        fixup: None,
        run: run_mld,
    },
];

const S6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);
const D6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 1, 0, 0, 0, 2);
const S4: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
const D4: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 7);

// ---------------------------------------------------------------------------
// Emitting seeds with our own Reprs.

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap_or(0))
        .collect()
}

fn eth_repr(ty: EtherType, tags: usize) -> EthernetRepr {
    let tag = |tpid, vid| VlanTag {
        tpid,
        pcp: 3,
        dei: false,
        vid,
    };
    EthernetRepr {
        dst_addr: [2, 0, 0, 0, 0, 2],
        src_addr: [2, 0, 0, 0, 0, 1],
        outer_vlan: if tags > 0 {
            Some(tag(
                if tags > 1 {
                    EtherType::QINQ
                } else {
                    EtherType::VLAN
                },
                100,
            ))
        } else {
            None
        },
        inner_vlan: if tags > 1 {
            Some(tag(EtherType::VLAN, 200))
        } else {
            None
        },
        ethertype: ty,
    }
}

fn with_eth(ty: EtherType, tags: usize, body: &[u8]) -> Vec<u8> {
    let e = eth_repr(ty, tags);
    let mut b = vec![0u8; e.buffer_len() + body.len()];
    e.emit(&mut EthernetFrame::new_unchecked(&mut b[..]));
    b[e.buffer_len()..].copy_from_slice(body);
    b
}

fn udp_bytes(payload: &[u8], s: &IpAddr, d: &IpAddr) -> Vec<u8> {
    let r = UdpRepr {
        src_port: 49152,
        dst_port: 4791,
        payload_len: payload.len(),
    };
    let mut b = vec![0u8; r.buffer_len()];
    b[8..].copy_from_slice(payload);
    r.emit(&mut UdpPacket::new_unchecked(&mut b[..]), s, d);
    b
}

fn icmpv4_bytes(r: &Icmpv4Repr) -> Vec<u8> {
    let mut b = vec![0u8; r.buffer_len()];
    r.emit(&mut Icmpv4Packet::new_unchecked(&mut b[..]));
    b
}

fn icmpv6_bytes(r: &Icmpv6Repr) -> Vec<u8> {
    let mut b = vec![0u8; r.buffer_len()];
    r.emit(&mut Icmpv6Packet::new_unchecked(&mut b[..]), &S6, &D6);
    b
}

fn ipv4_bytes(proto: IpProtocol, body: &[u8]) -> Vec<u8> {
    let r = Ipv4Repr {
        src_addr: S4,
        dst_addr: D4,
        protocol: proto,
        payload_len: body.len(),
        ttl: 64,
        dscp: 10,
        ecn: 2,
        ident: 7,
        dont_frag: true,
        more_frags: false,
        frag_offset: 0,
    };
    let mut b = vec![0u8; r.buffer_len()];
    r.emit(&mut Ipv4Packet::new_unchecked(&mut b[..]));
    b[20..].copy_from_slice(body);
    b
}

fn ipv6_bytes(first: IpProtocol, payload: &[u8]) -> Vec<u8> {
    let r = Ipv6Repr {
        src_addr: S6,
        dst_addr: D6,
        next_header: first,
        payload_len: payload.len(),
        hop_limit: 64,
        traffic_class: 0xb9,
        flow_label: 0x12345,
    };
    let mut b = vec![0u8; r.buffer_len()];
    r.emit(&mut Ipv6Packet::new_unchecked(&mut b[..]));
    b[40..].copy_from_slice(payload);
    b
}

/// HBH(PadN) -> SRH(1 segment, SL 1) -> Fragment(0, M) -> DstOpts -> AH -> `last`.
fn ext_chain_bytes(last: IpProtocol) -> Vec<u8> {
    let mut v = vec![43, 0, 1, 4, 0, 0, 0, 0];
    v.extend_from_slice(&[44, 2, 4, 1, 0, 0, 0, 0]);
    v.extend_from_slice(&D6.octets());
    v.extend_from_slice(&[60, 0, 0, 1, 0, 0, 0, 9]);
    v.extend_from_slice(&[51, 0, 1, 4, 0, 0, 0, 0]);
    v.extend_from_slice(&[
        last.0, 2, 0, 0, 0, 0, 1, 0, 0, 0, 0, 5, 0xaa, 0xaa, 0xaa, 0xaa,
    ]);
    v
}

fn seeds_ethernet() -> Vec<Vec<u8>> {
    vec![
        with_eth(EtherType::IPV4, 0, &[0x45, 0]),
        with_eth(EtherType::IPV6, 1, &[0x60]),
        with_eth(EtherType::ARP, 2, &[]),
        with_eth(EtherType::MAC_CONTROL, 0, &[0, 1]),
    ]
}

fn seeds_arp() -> Vec<Vec<u8>> {
    let r = ArpRepr {
        operation: ArpOperation::REQUEST,
        source_hardware_addr: [2, 0, 0, 0, 0, 1],
        source_protocol_addr: Ipv4Addr::new(10, 0, 0, 1),
        target_hardware_addr: [0; 6],
        target_protocol_addr: Ipv4Addr::new(10, 0, 0, 2),
    };
    let mut b = vec![0u8; 28];
    r.emit(&mut ArpPacket::new_unchecked(&mut b[..]));
    let mut reply = b.clone();
    reply[7] = 2;
    vec![b, reply]
}

fn seeds_ipv4() -> Vec<Vec<u8>> {
    let (s, d) = (IpAddr::V4(S4), IpAddr::V4(D4));
    let mut opts = ipv4_bytes(IpProtocol::UDP, &[0; 12]);
    opts[0] = 0x46;
    opts[20..24].copy_from_slice(&[1, 1, 1, 0]);
    fix_ipv4(&mut opts);
    vec![
        ipv4_bytes(IpProtocol::UDP, &udp_bytes(b"hello", &s, &d)),
        ipv4_bytes(IpProtocol::ICMP, &[8, 0, 0, 0]),
        opts,
    ]
}

fn seeds_ipv6() -> Vec<Vec<u8>> {
    let (s, d) = (IpAddr::V6(S6), IpAddr::V6(D6));
    let mut chain = ext_chain_bytes(IpProtocol::UDP);
    chain.extend_from_slice(&udp_bytes(b"x", &s, &d));
    vec![
        ipv6_bytes(IpProtocol::UDP, &udp_bytes(b"roce", &s, &d)),
        ipv6_bytes(IpProtocol::HOP_BY_HOP, &chain),
    ]
}

fn seeds_ext_chain() -> Vec<Vec<u8>> {
    let mut a = vec![0u8];
    a.extend_from_slice(&ext_chain_bytes(IpProtocol::UDP));
    let mut b = vec![44u8];
    b.extend_from_slice(&[17, 0, 0x05, 0xc8, 0, 0, 0, 1, 0xde, 0xad]);
    vec![a, b]
}

fn seeds_udp() -> Vec<Vec<u8>> {
    let (s, d) = (IpAddr::V6(S6), IpAddr::V6(D6));
    vec![udp_bytes(b"", &s, &d), udp_bytes(b"payload!", &s, &d)]
}

fn seeds_icmpv4() -> Vec<Vec<u8>> {
    let quoted = ipv4_bytes(IpProtocol::UDP, &[0; 8]);
    vec![
        icmpv4_bytes(&Icmpv4Repr::EchoRequest {
            ident: 1,
            seq_no: 2,
            data: b"ping",
        }),
        icmpv4_bytes(&Icmpv4Repr::TimeExceeded {
            code: 0,
            data: &quoted,
        }),
        icmpv4_bytes(&Icmpv4Repr::DstUnreachable {
            code: 4,
            next_hop_mtu: 1400,
            data: &quoted,
        }),
        // Past findings (echo reply checksum 0x0000 vs 0xffff).
        unhex("0800f7ff00000000"),
        unhex("0800f7ff000000661d0000fb04810000850be40000410000891b000097000000"),
    ]
}

fn seeds_icmpv6() -> Vec<Vec<u8>> {
    let quoted = ipv6_bytes(IpProtocol::UDP, &[0; 8]);
    let t: Ipv6Addr = "2001:db8::2".parse().unwrap();
    vec![
        icmpv6_bytes(&Icmpv6Repr::EchoRequest {
            ident: 1,
            seq_no: 2,
            data: b"ping",
        }),
        icmpv6_bytes(&Icmpv6Repr::TimeExceeded {
            code: 0,
            data: &quoted,
        }),
        icmpv6_bytes(&Icmpv6Repr::PacketTooBig {
            mtu: 1280,
            data: &quoted,
        }),
        icmpv6_bytes(&Icmpv6Repr::NeighborSolicit {
            target_addr: t,
            source_lladdr: Some([2, 0, 0, 0, 0, 1]),
        }),
        icmpv6_bytes(&Icmpv6Repr::NeighborAdvert {
            flags: 0xe0,
            target_addr: t,
            target_lladdr: Some([2, 0, 0, 0, 0, 2]),
        }),
        icmpv6_bytes(&Icmpv6Repr::RouterSolicit {
            source_lladdr: Some([2, 0, 0, 0, 0, 1]),
        }),
    ]
}

fn seeds_frame() -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    for (i, ip) in seeds_ipv4().into_iter().enumerate() {
        v.push(with_eth(EtherType::IPV4, i % 3, &ip));
    }
    for (i, ip) in seeds_ipv6().into_iter().enumerate() {
        v.push(with_eth(EtherType::IPV6, i % 3, &ip));
    }
    for m in seeds_icmpv6() {
        v.push(with_eth(
            EtherType::IPV6,
            0,
            &ipv6_bytes(IpProtocol::ICMPV6, &m),
        ));
    }
    for m in seeds_icmpv4() {
        v.push(with_eth(
            EtherType::IPV4,
            1,
            &ipv4_bytes(IpProtocol::ICMP, &m),
        ));
    }
    for a in seeds_arp() {
        v.push(with_eth(EtherType::ARP, 0, &a));
    }
    v
}

// ---------------------------------------------------------------------------
// Fixups: make checksums valid so mutants get past verification.

fn fix_ipv4(d: &mut [u8]) {
    if let Ok(mut p) = Ipv4Packet::new_checked(&mut d[..]) {
        p.fill_checksum();
    }
}

fn fix_udp(d: &mut [u8]) {
    if let Ok(mut p) = UdpPacket::new_checked(&mut d[..]) {
        p.fill_checksum(&IpAddr::V6(S6), &IpAddr::V6(D6));
    }
}

fn fix_icmpv4(d: &mut [u8]) {
    if let Ok(mut p) = Icmpv4Packet::new_checked(&mut d[..]) {
        p.fill_checksum();
    }
}

fn fix_icmpv6(d: &mut [u8]) {
    if let Ok(mut p) = Icmpv6Packet::new_checked(&mut d[..]) {
        p.fill_checksum(&S6, &D6);
    }
}

/// Fix the IPv4 header checksum and the UDP / ICMP / ICMPv6 checksum of a
/// frame, as far as the frame parses.
fn fix_frame(d: &mut [u8]) {
    let Ok(f) = EthernetFrame::new_checked(&d[..]) else {
        return;
    };
    let (h, ty) = (f.header_len(), f.payload_ethertype());
    let l3 = &mut d[h..];
    match ty {
        EtherType::IPV4 => {
            let Ok(mut p) = Ipv4Packet::new_checked(&mut l3[..]) else {
                return;
            };
            p.fill_checksum();
            let (s, dst, proto) = (p.src_addr(), p.dst_addr(), p.protocol());
            let (hl, tl) = (p.header_len(), usize::from(p.total_len()));
            let l4 = &mut l3[hl..tl];
            match proto {
                IpProtocol::UDP => {
                    if let Ok(mut u) = UdpPacket::new_checked(l4) {
                        u.fill_checksum(&IpAddr::V4(s), &IpAddr::V4(dst));
                    }
                }
                IpProtocol::ICMP => fix_icmpv4(l4),
                _ => {}
            }
        }
        EtherType::IPV6 => {
            let Ok(p) = Ipv6Packet::new_checked(&l3[..]) else {
                return;
            };
            let Ok(c) = p.ext_chain() else { return };
            let (s, dst) = (p.src_addr(), p.pseudo_dst_addr(&c));
            let end = 40 + usize::from(p.payload_len());
            let l4 = &mut l3[c.upper_offset..end];
            match c.upper_protocol {
                IpProtocol::UDP => {
                    if let Ok(mut u) = UdpPacket::new_checked(l4) {
                        u.fill_checksum(&IpAddr::V6(s), &IpAddr::V6(dst));
                    }
                }
                IpProtocol::ICMPV6 => {
                    if let Ok(mut m) = Icmpv6Packet::new_checked(l4) {
                        m.fill_checksum(&s, &dst);
                    }
                }
                _ => {}
            }
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------
// L2/L3/L4 targets.

fn run_ethernet(data: &[u8]) {
    let Ok(f) = EthernetFrame::new_checked(data) else {
        return;
    };
    let _ = (
        f.dst_addr(),
        f.src_addr(),
        f.ethertype(),
        f.vlan_tag(0),
        f.vlan_tag(1),
        f.vlan_tag(2),
    );
    assert!(f.header_len() <= data.len());
    assert_eq!(f.payload().len(), data.len() - f.header_len());
    if let Ok(r) = EthernetRepr::parse(&f) {
        assert_eq!(r.header_len(), f.header_len());
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut EthernetFrame::new_unchecked(&mut b[..]));
        assert_eq!(&b[..], &data[..r.header_len()]);
    }
    let mut copy = data.to_vec();
    let mut m = EthernetFrame::new_unchecked(&mut copy[..]);
    m.swap_addrs();
    m.set_payload_ethertype(EtherType::IPV6);
    let _ = m.set_vlan_tci(
        1,
        &VlanTag {
            tpid: EtherType::VLAN,
            pcp: 7,
            dei: true,
            vid: 4095,
        },
    );
}

fn run_arp(data: &[u8]) {
    let Ok(p) = ArpPacket::new_checked(data) else {
        return;
    };
    let _ = (
        p.source_hardware_addr(),
        p.source_protocol_addr(),
        p.target_hardware_addr(),
        p.target_protocol_addr(),
    );
    if let Ok(r) = ArpRepr::parse(&p) {
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut ArpPacket::new_unchecked(&mut b[..]));
        assert_eq!(&b[..], &data[..28]);
        let _ = r.reply([2, 0, 0, 0, 0, 9]);
    }
}

fn run_ipv4(data: &[u8]) {
    let Ok(p) = Ipv4Packet::new_checked(data) else {
        return;
    };
    let _ = (
        p.options(),
        p.payload(),
        p.src_addr(),
        p.dst_addr(),
        p.frag_offset(),
        p.is_fragment(),
    );
    let verified = p.verify_checksum();
    assert_eq!(
        Ipv4Repr::parse(&p).is_ok(),
        verified && Ipv4Repr::parse_unverified(&p).is_ok()
    );
    if let Ok(r) = Ipv4Repr::parse_unverified(&p) {
        assert_eq!(r.payload_len, p.payload().len());
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut Ipv4Packet::new_unchecked(&mut b[..]));
        let q = Ipv4Packet::new_checked(&b[..]).expect("emitted IPv4 checks");
        assert_eq!(Ipv4Repr::parse(&q), Ok(r));
    }
    // The per-packet mutators keep a valid checksum valid.
    let mut copy = data.to_vec();
    let mut m = Ipv4Packet::new_unchecked(&mut copy[..]);
    m.decrement_ttl_incremental();
    m.set_ecn_incremental(3);
    m.set_dscp_incremental(46);
    m.set_dst_addr_incremental(Ipv4Addr::new(10, 9, 8, 7));
    assert_eq!(m.verify_checksum(), verified);
}

fn run_ipv6(data: &[u8]) {
    let Ok(p) = Ipv6Packet::new_checked(data) else {
        return;
    };
    let _ = (
        p.payload(),
        p.traffic_class(),
        p.flow_label(),
        p.src_addr(),
        p.dst_addr(),
    );
    if let Ok(r) = Ipv6Repr::parse(&p) {
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut Ipv6Packet::new_unchecked(&mut b[..]));
        assert_eq!(&b[..40], &data[..40]);
    }
    if let Ok(c) = p.ext_chain() {
        let pkt = p.packet();
        assert!(c.upper_offset <= pkt.len());
        let _ = p.pseudo_dst_addr(&c);
        if let Some(rh) = c.routing {
            let h =
                Ipv6RoutingHeader::new_checked(&pkt[rh.offset..]).expect("walked routing header");
            let r = Ipv6RoutingRepr::parse(&h).expect("routing repr");
            assert_eq!(r.header_len(), rh.len);
            let _ = srh::Srh::new_checked(&pkt[rh.offset..rh.offset + rh.len]);
        }
        if let Some(fr) = c.fragment {
            let h =
                Ipv6FragmentHeader::new_checked(&pkt[fr.offset..]).expect("walked fragment header");
            assert_eq!(
                Ipv6FragmentRepr::parse(&h).unwrap().frag_offset,
                fr.frag_offset
            );
        }
        if let Some(o) = c.hop_by_hop {
            Ipv6OptionsRepr::parse(&Ipv6ExtHeader::new_checked(&pkt[o..]).unwrap())
                .expect("walked options");
        }
        if let Some(a) = c.auth {
            Ipv6AuthRepr::parse(&Ipv6AuthHeader::new_checked(&pkt[a..]).unwrap())
                .expect("walked AH");
        }
    }
    let mut copy = data.to_vec();
    let mut m = Ipv6Packet::new_unchecked(&mut copy[..]);
    m.decrement_hop_limit();
    m.set_ecn(3);
    m.set_dscp(46);
    assert_eq!(m.payload_len(), p.payload_len());
    assert_eq!(m.flow_label(), p.flow_label());
}

fn run_ext_chain(data: &[u8]) {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    if let Ok(c) = walk_ext_chain(IpProtocol(first), rest, 0) {
        assert!(c.upper_offset <= rest.len());
        let _ = c.final_destination(rest);
    }
    if let Ok(h) = Ipv6ExtHeader::new_checked(rest) {
        if let Ok(r) = Ipv6OptionsRepr::parse(&h) {
            let mut b = vec![0u8; r.buffer_len()];
            r.emit(&mut Ipv6ExtHeader::new_unchecked(&mut b[..]));
            assert_eq!(&b[..], &rest[..h.header_len()]);
        }
    }
    if let Ok(h) = Ipv6RoutingHeader::new_checked(rest) {
        let r = Ipv6RoutingRepr::parse(&h).unwrap();
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut Ipv6RoutingHeader::new_unchecked(&mut b[..]));
        assert_eq!(&b[..], &rest[..h.header_len()]);
    }
    if let Ok(h) = Ipv6FragmentHeader::new_checked(rest) {
        let r = Ipv6FragmentRepr::parse(&h).unwrap();
        let mut b = [0u8; 8];
        r.emit(&mut Ipv6FragmentHeader::new_unchecked(&mut b[..]));
        assert_eq!(
            Ipv6FragmentRepr::parse(&Ipv6FragmentHeader::new_checked(&b[..]).unwrap()),
            Ok(r)
        );
    }
    if let Ok(h) = Ipv6AuthHeader::new_checked(rest) {
        let r = Ipv6AuthRepr::parse(&h).unwrap();
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut Ipv6AuthHeader::new_unchecked(&mut b[..]));
        assert_eq!(
            Ipv6AuthRepr::parse(&Ipv6AuthHeader::new_checked(&b[..]).unwrap()),
            Ok(r)
        );
    }
}

fn run_udp(data: &[u8]) {
    let Ok(p) = UdpPacket::new_checked(data) else {
        return;
    };
    let (s, d) = (IpAddr::V6(S6), IpAddr::V6(D6));
    let _ = (
        p.payload(),
        p.verify_checksum(&IpAddr::V4(S4), &IpAddr::V4(D4)),
        p.verify_checksum(&s, &IpAddr::V4(D4)),
    );
    let ok = UdpRepr::parse(&p, &s, &d);
    if let Ok(r) = UdpRepr::parse_unverified(&p) {
        let mut b = p.datagram().to_vec();
        r.emit(&mut UdpPacket::new_unchecked(&mut b[..]), &s, &d);
        let q = UdpPacket::new_checked(&b[..]).expect("emitted UDP checks");
        assert_eq!(UdpRepr::parse(&q, &s, &d), Ok(r));
        if ok.is_ok() {
            assert_eq!(b, p.datagram());
            // Incremental adjust for a destination rewrite equals a refill.
            let nd = Ipv6Addr::new(0xfc00, 1, 2, 3, 0, 0, 0, 0x77);
            let mut m = UdpPacket::new_unchecked(&mut b[..]);
            m.adjust_checksum(&D6.octets(), &nd.octets());
            assert!(m.verify_checksum(&s, &IpAddr::V6(nd)));
        }
    }
}

fn run_icmpv4(data: &[u8]) {
    let Ok(p) = Icmpv4Packet::new_checked(data) else {
        return;
    };
    let _ = (p.body(), p.data(), p.rest_of_header(), p.next_hop_mtu());
    let verified = p.verify_checksum();
    if let Ok(r) = Icmpv4Repr::parse_unverified(&p) {
        assert_eq!(r.buffer_len(), data.len());
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut Icmpv4Packet::new_unchecked(&mut b[..]));
        let q = Icmpv4Packet::new_checked(&b[..]).unwrap();
        assert_eq!(Icmpv4Repr::parse(&q), Ok(r));
    }
    let mut copy = data.to_vec();
    let mut m = Icmpv4Packet::new_unchecked(&mut copy[..]);
    if m.echo_request_to_reply() {
        assert_eq!(m.verify_checksum(), verified);
    }
}

fn run_icmpv6(data: &[u8]) {
    let Ok(p) = Icmpv6Packet::new_checked(data) else {
        return;
    };
    let _ = (p.body(), p.data(), p.target_addr(), p.na_flags(), p.mtu());
    for o in p.nd_options() {
        let _ = o.map(|o| o.lladdr());
    }
    let verified = p.verify_checksum(&S6, &D6);
    for src in [S6, Ipv6Addr::UNSPECIFIED] {
        if let Ok(r) = Icmpv6Repr::parse_unverified(&p, &src, &D6) {
            let mut b = vec![0u8; r.buffer_len()];
            r.emit(&mut Icmpv6Packet::new_unchecked(&mut b[..]), &src, &D6);
            let q = Icmpv6Packet::new_checked(&b[..]).unwrap();
            assert_eq!(Icmpv6Repr::parse(&q, &src, &D6), Ok(r));
        }
    }
    let mut copy = data.to_vec();
    let mut m = Icmpv6Packet::new_unchecked(&mut copy[..]);
    if m.echo_request_to_reply() {
        assert_eq!(m.verify_checksum(&D6, &S6), verified);
    }
}

/// The whole stack, as the pipeline parses a received frame.
fn run_frame(data: &[u8]) {
    let Ok(f) = EthernetFrame::new_checked(data) else {
        return;
    };
    let Ok(e) = EthernetRepr::parse(&f) else {
        return;
    };
    let l3 = f.payload();
    match e.ethertype {
        EtherType::ARP => run_arp(l3),
        EtherType::IPV4 => {
            let Ok(p) = Ipv4Packet::new_checked(l3) else {
                return;
            };
            let Ok(r) = Ipv4Repr::parse(&p) else { return };
            let (s, d) = (IpAddr::V4(r.src_addr), IpAddr::V4(r.dst_addr));
            match r.protocol {
                IpProtocol::UDP => {
                    if let Ok(u) = UdpPacket::new_checked(p.payload()) {
                        let _ = UdpRepr::parse(&u, &s, &d);
                    }
                }
                IpProtocol::ICMP => run_icmpv4(p.payload()),
                _ => {}
            }
        }
        EtherType::IPV6 => {
            let Ok(p) = Ipv6Packet::new_checked(l3) else {
                return;
            };
            if Ipv6Repr::parse(&p).is_err() {
                return;
            }
            let Ok(c) = p.ext_chain() else { return };
            if c.is_later_fragment() {
                return;
            }
            let (s, d) = (p.src_addr(), p.pseudo_dst_addr(&c));
            let l4 = &p.packet()[c.upper_offset..];
            match c.upper_protocol {
                IpProtocol::UDP => {
                    if let Ok(u) = UdpPacket::new_checked(l4) {
                        if UdpRepr::parse(&u, &IpAddr::V6(s), &IpAddr::V6(d)).is_ok()
                            && u.dst_port() == 4791
                        {
                            let _ = roce::Bth::new_checked(u.payload())
                                .map(|b| roce::BthRepr::parse(&b));
                        }
                    }
                }
                IpProtocol::ICMPV6 => {
                    if let Ok(m) = Icmpv6Packet::new_checked(l4) {
                        let _ = Icmpv6Repr::parse(&m, &s, &d);
                    }
                }
                _ => {}
            }
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------
// The other wire modules: view + Repr::parse, a few lines each.

fn seeds_bth() -> Vec<Vec<u8>> {
    // RC SEND ONLY (0x04), RC ACK (0x11) with AETH, CNP (0x81) with 16 pad.
    let mut send = vec![0x04, 0x40, 0xff, 0xff, 0, 0, 0, 0x11, 0x80, 0, 0, 1];
    send.extend_from_slice(&[0; 8]);
    let mut ack = vec![0x11, 0x00, 0xff, 0xff, 0, 0, 0, 0x11, 0, 0, 0, 1];
    ack.extend_from_slice(&[0x1f, 0, 0, 1]);
    let mut cnp = vec![0x81, 0x00, 0xff, 0xff, 0x40, 0, 0, 0x11, 0, 0, 0, 0];
    cnp.extend_from_slice(&[0; 16]);
    vec![send, ack, cnp]
}

fn run_bth(data: &[u8]) {
    let Ok(b) = roce::Bth::new_checked(data) else {
        return;
    };
    let _ = roce::BthRepr::parse(&b);
    let _ = roce::CnpRepr::parse(&b);
    let _ = lhcnp::RoceLhCnpRepr::parse(&b, &Params::DEFAULT);
    for off in [12usize, 16, 28] {
        if let Some(rest) = data.get(off..) {
            if let Ok(a) = roce::Aeth::new_checked(rest) {
                let _ = roce::AethRepr::parse(&a);
            }
            if let Ok(r) = roce::Reth::new_checked(rest) {
                let _ = roce::RethRepr::parse(&r);
            }
        }
    }
}

fn seeds_roce_datagram() -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    for bth in seeds_bth() {
        let mut body = udp_bytes(
            &[bth, vec![0; 4]].concat(),
            &IpAddr::V4(S4),
            &IpAddr::V4(D4),
        );
        body[6] = 0;
        body[7] = 0;
        let mut d4 = ipv4_bytes(IpProtocol::UDP, &body);
        let _ = roce::icrc_fill(&mut d4);
        v.push(d4);
        let mut d6 = ipv6_bytes(IpProtocol::UDP, &body);
        let _ = roce::icrc_fill(&mut d6);
        v.push(d6);
    }
    v
}

fn fix_icrc(d: &mut [u8]) {
    fix_ipv4(d);
    let _ = roce::icrc_fill(d);
}

fn run_icrc(data: &[u8]) {
    if let Ok(l) = roce::IcrcLayout::of(data) {
        assert!(l.datagram_len <= data.len());
        let _ = (
            roce::icrc_full(data),
            roce::icrc_stored(data),
            roce::icrc_check(data),
        );
        let mut copy = data.to_vec();
        if roce::icrc_fill(&mut copy).is_ok() {
            assert!(roce::icrc_check(&copy).is_ok());
        }
    } else {
        assert!(roce::icrc_check(data).is_err());
    }
}

fn seeds_srh() -> Vec<Vec<u8>> {
    // Next UDP, 2 segments, SL 1, last entry 1, then a PadN TLV.
    let mut v = vec![17, 5, 4, 1, 1, 0, 0, 0];
    v.extend_from_slice(&D6.octets());
    v.extend_from_slice(&S6.octets());
    v.extend_from_slice(&[4, 6, 0, 0, 0, 0, 0, 0]);
    let mut plain = vec![17, 2, 4, 0, 0, 0, 0, 0];
    plain.extend_from_slice(&D6.octets());
    vec![v, plain]
}

fn run_srh(data: &[u8]) {
    let p = Params::DEFAULT;
    let Ok(s) = srh::Srh::new_checked(data) else {
        return;
    };
    let _ = (
        s.active_segment(),
        s.segment(0),
        s.num_segments(),
        s.hmac_tlv().is_some(),
    );
    for seg in s.segments() {
        let _ = seg;
    }
    for t in s.tlvs(p.srh_tlv_end_mt) {
        let _ = t;
    }
    for t in s.end_mt_tlvs(p.srh_tlv_end_mt) {
        let _ = t;
    }
    let _ = srh::SrhRepr::parse(&s, p.srh_tlv_end_mt);
    let mut copy = data.to_vec();
    if let Ok(mut m) = srh::Srh::new_checked(&mut copy[..]) {
        let _ = m.decrement_segments_left();
    }
}

fn seeds_lhcnp() -> Vec<Vec<u8>> {
    let p = Params::DEFAULT;
    let mut m = vec![p.icmpv6_lhcnp_type, 0, 0, 0, 0, 0, 0, 0];
    m.extend_from_slice(&[0; 40]);
    fix_icmpv6(&mut m);
    vec![m]
}

/// The AH key of the `lhcnp_ah` target.
fn fuzz_ah_key() -> ah::AhKey {
    ah::AhKey::new(0x1000, ah::Algorithm::HmacSha256_128, &[0x42; 32]).expect("a valid key")
}

fn seeds_lhcnp_ah() -> Vec<Vec<u8>> {
    // An IPv6 Long-haul CNP with a valid AH, so mutations start from one
    // that verifies.
    let mut m = seeds_lhcnp().remove(0);
    let mut ip = vec![0x60, 0, 0, 0, 0, 0, 58, 64];
    ip[4..6].copy_from_slice(&(m.len() as u16).to_be_bytes());
    ip.extend_from_slice(&S6.octets());
    ip.extend_from_slice(&D6.octets());
    ip.append(&mut m);
    let n = ip.len();
    ip.resize(n + 32, 0);
    let _ = ah::protect_ipv6(&mut ip, n, &fuzz_ah_key(), 1);
    vec![ip]
}

/// The AH verifier, the extension-header walk that reads through it, and
/// protecting again what verifies: never a panic, and a protected packet
/// always verifies.
fn run_lhcnp_ah(data: &[u8]) {
    let key = fuzz_ah_key();
    let _ = dataplane::wire::ipv6::upper_layer(data);
    if let Ok(v) = ah::verify_ipv6(data, |s| (s == key.spi()).then_some(&key)) {
        assert!(v.payload_at <= data.len());
    }
    if data.len() >= 40 && data[0] >> 4 == 6 && usize::from(u16::from_be_bytes([data[4], data[5]])) + 40 == data.len() {
        let mut b = data.to_vec();
        b.resize(data.len() + 32, 0);
        if let Ok(n) = ah::protect_ipv6(&mut b, data.len(), &key, 7) {
            let v = ah::verify_ipv6(&b[..n], |_| Some(&key)).expect("what we protect verifies");
            assert_eq!((v.seq, v.next_header), (7, data[6]));
        }
    }
}

fn run_lhcnp(data: &[u8]) {
    let p = Params::DEFAULT;
    let Ok(m) = lhcnp::Icmpv6LhCnp::new_checked(data) else {
        return;
    };
    let _ = lhcnp::Icmpv6LhCnpRepr::parse(&m, &S6.octets(), &D6.octets(), &p);
}

fn seeds_objects() -> Vec<Vec<u8>> {
    // RFC 4884 extension header (version 2) and one object of class 247.
    vec![vec![0x20, 0, 0, 0, 0, 8, 247, 1, 0, 0, 0, 0]]
}

fn run_objects(data: &[u8]) {
    if let Ok(o) = lhcnp::Objects::parse(data, Params::DEFAULT.lhcnp_ext_class_num) {
        for x in o.iter() {
            let _ = x;
        }
    }
    if let Ok(e) = lhcnp::ExtStructure::new_checked(data) {
        let _ = e.verify_checksum();
    }
    if let Ok(b) = lhcnp::Body::new_checked(data) {
        let _ = lhcnp::CnpInfo::parse(&b);
    }
}

fn seeds_fann() -> Vec<Vec<u8>> {
    let p = Params::DEFAULT;
    let mut m = vec![p.icmpv6_fann_type, 0, 0, 0];
    m.extend_from_slice(&[0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    fix_icmpv6(&mut m);
    vec![m]
}

fn run_fann(data: &[u8]) {
    let p = Params::DEFAULT;
    if let Ok(m) = fann::Packet::new_checked(data) {
        let _ = fann::PacketRepr::parse(&m, &S6, &D6, p.icmpv6_fann_type);
    }
    if let Ok(m) = fann::Message::new_checked(data) {
        let _ = (m.flow_id(), m.metadata_bytes());
        for i in m.items() {
            let _ = i;
        }
        let _ = fann::MessageRepr::parse(&m);
    }
}

fn seeds_pfc() -> Vec<Vec<u8>> {
    let mut pfc = vec![
        0x01, 0x80, 0xc2, 0, 0, 0x01, 2, 0, 0, 0, 0, 1, 0x88, 0x08, 0x01, 0x01, 0x00, 0x08,
    ];
    pfc.extend_from_slice(&[0xff; 16]);
    pfc.resize(60, 0);
    let mut pause = vec![
        0x01, 0x80, 0xc2, 0, 0, 0x01, 2, 0, 0, 0, 0, 1, 0x88, 0x08, 0x00, 0x01, 0xff, 0xff,
    ];
    pause.resize(60, 0);
    vec![pfc, pause]
}

fn run_pfc(data: &[u8]) {
    let _ = pfc::FrameRepr::parse(data);
    if let Some(body) = data.get(14..) {
        if let Ok(m) = pfc::MacControl::new_checked(body) {
            let _ = pfc::MacControlRepr::parse(&m);
        }
    }
}

fn seeds_isis() -> Vec<Vec<u8>> {
    // Router capability TLV 242 with an SRv6 capabilities sub-TLV (25),
    // and a locator TLV 27 with one locator.
    let cap = vec![242, 9, 1, 2, 3, 4, 0, 25, 2, 0, 0];
    let loc = vec![
        27, 14, 0, 0, 0, 0, 0, 0, 0, 10, 0, 64, 0x20, 0x01, 0x0d, 0xb8, 0,
    ];
    vec![cap, loc]
}

fn run_isis(data: &[u8]) {
    for t in isis::RawTlvs::new(data) {
        let _ = t;
    }
    for off in [0usize, 2, 7] {
        let Some(d) = data.get(off..) else { continue };
        if let Ok(t) = isis::Srv6CapsTlv::new_checked(d) {
            let _ = isis::Srv6CapsRepr::parse(&t);
        }
        if let Ok(t) = isis::EndSidTlv::new_checked(d) {
            let _ = isis::EndSidRepr::parse(&t);
        }
        if let Ok(t) = isis::LocatorTlv::new_checked(d) {
            let _ = isis::LocatorTlvRepr::parse(&t);
        }
    }
}

// ---------------------------------------------------------------------------
// MLD: the parser, query round trips, and the router's listener state fed
// the message three times (bounded state, queries within the minimum MTU).

fn seeds_mld() -> Vec<Vec<u8>> {
    use dataplane::wire::mld::{self, RecordRepr, RecordType};
    let g: Ipv6Addr = "ff0e::100".parse().unwrap();
    let s1: Ipv6Addr = "2001:db8::1".parse().unwrap();
    vec![
        mld::report_v2_message(&[
            RecordRepr { kind: RecordType::ToExclude, group: g, sources: vec![] },
            RecordRepr { kind: RecordType::Allow, group: "ff3e::1".parse().unwrap(), sources: vec![s1] },
            RecordRepr { kind: RecordType::Block, group: g, sources: vec![s1] },
        ]),
        mld::v1_message(mld::REPORT_V1, g),
        mld::v1_message(mld::DONE_V1, g),
        mld::QueryRepr { group: g, max_resp_ms: 1000, suppress: false, qrv: 2, qqi_s: 125, sources: vec![s1] }.message(),
    ]
}

fn run_mld(data: &[u8]) {
    use dataplane::counters::WorkerCounters;
    use dataplane::mld::{merge_routes, Mld, MldConfig};
    use dataplane::wire::mld;
    let Ok(m) = mld::parse(data) else {
        return;
    };
    match m {
        mld::Message::Query { max_resp_ms, group, v2: Some(q) } => {
            let r = mld::QueryRepr { group, max_resp_ms, suppress: q.suppress, qrv: q.qrv, qqi_s: q.qqi_s, sources: q.sources.iter().collect() };
            let b = r.message();
            match mld::parse(&b) {
                Ok(mld::Message::Query { max_resp_ms: m2, group: g2, v2: Some(q2) }) => {
                    assert_eq!((m2, g2, q2.suppress, q2.qrv, q2.qqi_s), (max_resp_ms, group, q.suppress, q.qrv, q.qqi_s));
                    assert!(q2.sources.iter().eq(q.sources.iter()));
                }
                other => panic!("query did not round-trip: {other:?}"),
            }
        }
        mld::Message::ReportV2 { records } => {
            assert_eq!(records.iter().count(), records.len());
        }
        _ => {}
    }
    let c = WorkerCounters::default();
    let cfg = MldConfig { max_groups: 8, max_sources: 4, ..MldConfig::default() };
    let mut st = Mld::new(cfg, &[(1, "fe80::1".parse().unwrap())], 0);
    let mut out = Vec::new();
    for t in 0..3u64 {
        let _ = st.on_message(1, "fe80::10".parse().unwrap(), data, t * 1_000_000_000, &c);
        let _ = st.on_message(1, "fe80::0:1".parse().unwrap(), data, t * 1_000_000_000, &c);
        st.tick(t * 1_000_000_000 + 500_000_000, &mut out, &c);
    }
    st.tick(400_000_000_000, &mut out, &c);
    assert!(out.iter().all(|o| o.packet.len() <= 1280), "a query over the minimum MTU");
    let l = st.listeners();
    assert!(l.len() <= 8 && l.iter().all(|x| x.sources.len() <= 4), "state beyond its bounds");
    let _ = merge_routes(&[], &l);
}
