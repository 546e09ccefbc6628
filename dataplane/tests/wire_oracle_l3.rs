//! Independent oracles for the L2/L3/L4 codecs (Ethernet + VLAN, ARP, IPv4,
//! IPv6 and its extension headers, UDP, ICMPv4, ICMPv6 with ND):
//!
//! * scapy builds frames from given field values; our parsers must read
//!   exactly those values and find every checksum valid;
//! * scapy dissects frames we emit (fixed ones and a deterministic random
//!   set), re-computes each checksum after deleting it, and must read the
//!   fields we wrote;
//! * tshark dissects a pcap of our frames: no malformed packet, no bad
//!   checksum, no expert warning or error.
//!
//! The oracle script is `tests/oracle/scapy_l3.py`. Missing tools make the
//! tests fail with a message naming what to install.

use std::collections::BTreeMap;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use dataplane::wire::arp::{ArpOperation, ArpPacket, ArpRepr};
use dataplane::wire::ethernet::{EtherType, EthernetFrame, EthernetRepr, Mac, VlanTag};
use dataplane::wire::icmpv4::{Icmpv4Message, Icmpv4Packet, Icmpv4Repr};
use dataplane::wire::icmpv6::{na_flags, Icmpv6Message, Icmpv6Packet, Icmpv6Repr};
use dataplane::wire::ipv4::{IpProtocol, Ipv4Packet, Ipv4Repr};
use dataplane::wire::ipv6::{
    Ipv6AuthHeader, Ipv6AuthRepr, Ipv6ExtHeader, Ipv6FragmentHeader, Ipv6FragmentRepr,
    Ipv6OptionsRepr, Ipv6Packet, Ipv6Repr, Ipv6RoutingHeader, Ipv6RoutingRepr,
};
use dataplane::wire::udp::{UdpPacket, UdpRepr};

mod oracle_common;
use oracle_common::{hex, tshark, unhex};

fn script() -> PathBuf {
    oracle_common::oracle_script("scapy_l3.py")
}

fn python() -> Command {
    oracle_common::python("scapy.all, scapy.layers.inet6, scapy.layers.ipsec")
}

/// xorshift64*: deterministic test data without a dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn bool(&mut self) -> bool {
        self.next() & 1 == 1
    }
    fn bytes<const N: usize>(&mut self) -> [u8; N] {
        let mut a = [0u8; N];
        for x in a.iter_mut() {
            *x = self.next() as u8;
        }
        a
    }
    fn vec(&mut self, max: u64) -> Vec<u8> {
        let n = self.below(max + 1) as usize;
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// One parsed record of the oracle: name, optional frame, fields.
struct Record {
    name: String,
    frame: Option<Vec<u8>>,
    fields: BTreeMap<String, String>,
}

fn parse_records(out: &str) -> Vec<Record> {
    out.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let mut it = l.split_whitespace();
            let name = it.next().unwrap().to_string();
            let h = it.next().unwrap_or("-");
            let frame = if h == "-" { None } else { Some(unhex(h)) };
            let fields = it
                .map(|kv| {
                    let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                    (k.to_string(), v.to_string())
                })
                .collect();
            Record {
                name,
                frame,
                fields,
            }
        })
        .collect()
}

// ---------------------------------------------------------------------------
// Our dissector, reporting the same keys as the script's `fields()`.

fn dissect(frame: &[u8]) -> BTreeMap<String, String> {
    let mut f = BTreeMap::new();
    let mut put = |k: &str, v: String| {
        f.insert(k.to_string(), v);
    };
    if let Err(e) = dissect_into(frame, &mut put) {
        put("error", format!("{e:?}"));
    }
    f
}

fn dissect_into(frame: &[u8], put: &mut dyn FnMut(&str, String)) -> dataplane::wire::Result<()> {
    let eth = EthernetFrame::new_checked(frame)?;
    let er = EthernetRepr::parse(&eth)?;
    put("eth.dst", Mac(er.dst_addr).to_string());
    put("eth.src", Mac(er.src_addr).to_string());
    for (i, t) in [er.outer_vlan, er.inner_vlan].iter().flatten().enumerate() {
        put(&format!("vlan{i}.tpid"), t.tpid.0.to_string());
        put(&format!("vlan{i}.pcp"), t.pcp.to_string());
        put(&format!("vlan{i}.dei"), u8::from(t.dei).to_string());
        put(&format!("vlan{i}.vid"), t.vid.to_string());
    }
    put("eth.vlans", er.vlan_count().to_string());
    put("eth.type", er.ethertype.0.to_string());
    let payload = eth.payload();
    match er.ethertype {
        EtherType::ARP => {
            let p = ArpPacket::new_checked(payload)?;
            let r = ArpRepr::parse(&p)?;
            put("arp.op", r.operation.0.to_string());
            put("arp.sha", Mac(r.source_hardware_addr).to_string());
            put("arp.spa", r.source_protocol_addr.to_string());
            put("arp.tha", Mac(r.target_hardware_addr).to_string());
            put("arp.tpa", r.target_protocol_addr.to_string());
        }
        EtherType::IPV4 => {
            let p = Ipv4Packet::new_checked(payload)?;
            let r = Ipv4Repr::parse(&p)?;
            put("ip.src", r.src_addr.to_string());
            put("ip.dst", r.dst_addr.to_string());
            put("ip.ttl", r.ttl.to_string());
            put("ip.proto", r.protocol.0.to_string());
            put("ip.dscp", r.dscp.to_string());
            put("ip.ecn", r.ecn.to_string());
            put("ip.id", r.ident.to_string());
            put("ip.df", u8::from(r.dont_frag).to_string());
            put("ip.mf", u8::from(r.more_frags).to_string());
            put("ip.frag", r.frag_offset.to_string());
            put("ip.len", p.total_len().to_string());
            put("ip.hlen", p.header_len().to_string());
            put("ip.chksum", p.checksum().to_string());
            let (s, d) = (IpAddr::V4(r.src_addr), IpAddr::V4(r.dst_addr));
            if r.frag_offset == 0 {
                upper(r.protocol, p.payload(), &s, &d, put)?;
            }
        }
        EtherType::IPV6 => {
            let p = Ipv6Packet::new_checked(payload)?;
            let r = Ipv6Repr::parse(&p)?;
            put("ip6.src", r.src_addr.to_string());
            put("ip6.dst", r.dst_addr.to_string());
            put("ip6.tc", r.traffic_class.to_string());
            put("ip6.fl", r.flow_label.to_string());
            put("ip6.hlim", r.hop_limit.to_string());
            put("ip6.nh", r.next_header.0.to_string());
            put("ip6.plen", r.payload_len.to_string());
            let c = p.ext_chain()?;
            put("ext.count", c.count.to_string());
            put("ext.upper", c.upper_protocol.0.to_string());
            put("ext.offset", c.upper_offset.to_string());
            let pkt = p.packet();
            if let Some(rh) = c.routing {
                let h = Ipv6RoutingHeader::new_checked(&pkt[rh.offset..])?;
                let rr = Ipv6RoutingRepr::parse(&h)?;
                put("rh.type", rr.routing_type.to_string());
                put("rh.segleft", rr.segments_left.to_string());
            }
            if let Some(fr) = c.fragment {
                let h = Ipv6FragmentHeader::new_checked(&pkt[fr.offset..])?;
                let fr = Ipv6FragmentRepr::parse(&h)?;
                put("frag.offset", fr.frag_offset.to_string());
                put("frag.m", u8::from(fr.more_frags).to_string());
                put("frag.id", fr.ident.to_string());
            }
            if let Some(ah) = c.auth {
                let h = Ipv6AuthHeader::new_checked(&pkt[ah..])?;
                let ar = Ipv6AuthRepr::parse(&h)?;
                put("ah.spi", ar.spi.to_string());
                put("ah.seq", ar.seq_no.to_string());
            }
            if let Some(o) = c.hop_by_hop {
                Ipv6OptionsRepr::parse(&Ipv6ExtHeader::new_checked(&pkt[o..])?)?;
            }
            if let Some(o) = c.dst_opts {
                Ipv6OptionsRepr::parse(&Ipv6ExtHeader::new_checked(&pkt[o..])?)?;
            }
            if !c.is_later_fragment() {
                let (s, d) = (IpAddr::V6(r.src_addr), IpAddr::V6(p.pseudo_dst_addr(&c)));
                upper(c.upper_protocol, &pkt[c.upper_offset..], &s, &d, put)?;
            }
        }
        _ => {}
    }
    Ok(())
}

fn upper(
    proto: IpProtocol,
    data: &[u8],
    s: &IpAddr,
    d: &IpAddr,
    put: &mut dyn FnMut(&str, String),
) -> dataplane::wire::Result<()> {
    match proto {
        IpProtocol::UDP => {
            let p = UdpPacket::new_checked(data)?;
            let r = UdpRepr::parse(&p, s, d)?;
            put("udp.sport", r.src_port.to_string());
            put("udp.dport", r.dst_port.to_string());
            put("udp.len", p.len().to_string());
            put("udp.chksum", p.checksum().to_string());
        }
        IpProtocol::ICMP => {
            let p = Icmpv4Packet::new_checked(data)?;
            let r = Icmpv4Repr::parse(&p)?;
            put("icmp.type", p.msg_type().0.to_string());
            put("icmp.code", p.msg_code().to_string());
            put("icmp.chksum", p.checksum().to_string());
            match r {
                Icmpv4Repr::EchoRequest { ident, seq_no, .. }
                | Icmpv4Repr::EchoReply { ident, seq_no, .. } => {
                    put("icmp.id", ident.to_string());
                    put("icmp.seq", seq_no.to_string());
                }
                Icmpv4Repr::DstUnreachable {
                    code,
                    next_hop_mtu,
                    data,
                } => {
                    if code == 4 {
                        put("icmp.mtu", next_hop_mtu.to_string());
                    }
                    put("icmp.quoted", data.len().to_string());
                }
                Icmpv4Repr::TimeExceeded { data, .. } => put("icmp.quoted", data.len().to_string()),
                Icmpv4Repr::Other { .. } => {}
            }
        }
        IpProtocol::ICMPV6 => {
            let (IpAddr::V6(s), IpAddr::V6(d)) = (s, d) else {
                unreachable!()
            };
            let p = Icmpv6Packet::new_checked(data)?;
            let r = Icmpv6Repr::parse(&p, s, d)?;
            put("icmp6.type", p.msg_type().0.to_string());
            put("icmp6.code", p.msg_code().to_string());
            put("icmp6.chksum", p.checksum().to_string());
            match r {
                Icmpv6Repr::EchoRequest {
                    ident,
                    seq_no,
                    data,
                }
                | Icmpv6Repr::EchoReply {
                    ident,
                    seq_no,
                    data,
                } => {
                    put("icmp6.id", ident.to_string());
                    put("icmp6.seq", seq_no.to_string());
                    put("icmp6.datalen", data.len().to_string());
                }
                Icmpv6Repr::PacketTooBig { mtu, data } => {
                    put("icmp6.mtu", mtu.to_string());
                    put("icmp6.quoted", data.len().to_string());
                }
                Icmpv6Repr::ParamProblem { pointer, data, .. } => {
                    put("icmp6.ptr", pointer.to_string());
                    put("icmp6.quoted", data.len().to_string());
                }
                Icmpv6Repr::TimeExceeded { data, .. } | Icmpv6Repr::DstUnreachable { data, .. } => {
                    put("icmp6.quoted", data.len().to_string())
                }
                Icmpv6Repr::NeighborSolicit {
                    target_addr,
                    source_lladdr,
                } => {
                    put("nd.target", target_addr.to_string());
                    if let Some(m) = source_lladdr {
                        put("nd.sll", Mac(m).to_string());
                    }
                }
                Icmpv6Repr::NeighborAdvert {
                    flags,
                    target_addr,
                    target_lladdr,
                } => {
                    put("nd.target", target_addr.to_string());
                    put("nd.flags", flags.to_string());
                    if let Some(m) = target_lladdr {
                        put("nd.tll", Mac(m).to_string());
                    }
                }
                Icmpv6Repr::RouterSolicit { source_lladdr } => {
                    if let Some(m) = source_lladdr {
                        put("nd.sll", Mac(m).to_string());
                    }
                }
                Icmpv6Repr::Other { .. } => {}
            }
        }
        _ => {}
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Our emitter.

enum L4<'a> {
    Udp(UdpRepr, &'a [u8]),
    Icmp4(Icmpv4Repr<'a>),
    Icmp6(Icmpv6Repr<'a>),
    Raw(IpProtocol, &'a [u8]),
}

enum Ext<'a> {
    HopByHop(&'a [u8]),
    DstOpts(&'a [u8]),
    Routing {
        routing_type: u8,
        segments_left: u8,
        data: &'a [u8],
    },
    Fragment {
        offset: u16,
        more: bool,
        ident: u32,
    },
    Auth {
        spi: u32,
        seq: u32,
        icv: &'a [u8],
    },
}

impl Ext<'_> {
    fn proto(&self) -> IpProtocol {
        match self {
            Ext::HopByHop(_) => IpProtocol::HOP_BY_HOP,
            Ext::DstOpts(_) => IpProtocol::IPV6_OPTS,
            Ext::Routing { .. } => IpProtocol::IPV6_ROUTE,
            Ext::Fragment { .. } => IpProtocol::IPV6_FRAG,
            Ext::Auth { .. } => IpProtocol::AH,
        }
    }

    fn emit(&self, next: IpProtocol, out: &mut Vec<u8>) {
        let start = out.len();
        match *self {
            Ext::HopByHop(o) | Ext::DstOpts(o) => {
                let r = Ipv6OptionsRepr {
                    next_header: next,
                    options: o,
                };
                out.resize(start + r.buffer_len(), 0);
                r.emit(&mut Ipv6ExtHeader::new_unchecked(&mut out[start..]));
            }
            Ext::Routing {
                routing_type,
                segments_left,
                data,
            } => {
                let r = Ipv6RoutingRepr {
                    next_header: next,
                    routing_type,
                    segments_left,
                    data,
                };
                out.resize(start + r.buffer_len(), 0);
                r.emit(&mut Ipv6RoutingHeader::new_unchecked(&mut out[start..]));
            }
            Ext::Fragment {
                offset,
                more,
                ident,
            } => {
                let r = Ipv6FragmentRepr {
                    next_header: next,
                    frag_offset: offset,
                    more_frags: more,
                    ident,
                };
                out.resize(start + r.buffer_len(), 0);
                r.emit(&mut Ipv6FragmentHeader::new_unchecked(&mut out[start..]));
            }
            Ext::Auth { spi, seq, icv } => {
                let r = Ipv6AuthRepr {
                    next_header: next,
                    spi,
                    seq_no: seq,
                    icv,
                };
                out.resize(start + r.buffer_len(), 0);
                r.emit(&mut Ipv6AuthHeader::new_unchecked(&mut out[start..]));
            }
        }
    }
}

fn emit_l4(l4: &L4, s: &IpAddr, d: &IpAddr) -> (IpProtocol, Vec<u8>) {
    match l4 {
        L4::Udp(r, payload) => {
            let mut b = vec![0u8; r.buffer_len()];
            b[8..].copy_from_slice(payload);
            r.emit(&mut UdpPacket::new_unchecked(&mut b[..]), s, d);
            (IpProtocol::UDP, b)
        }
        L4::Icmp4(r) => {
            let mut b = vec![0u8; r.buffer_len()];
            r.emit(&mut Icmpv4Packet::new_unchecked(&mut b[..]));
            (IpProtocol::ICMP, b)
        }
        L4::Icmp6(r) => {
            let (IpAddr::V6(s), IpAddr::V6(d)) = (s, d) else {
                unreachable!()
            };
            let mut b = vec![0u8; r.buffer_len()];
            r.emit(&mut Icmpv6Packet::new_unchecked(&mut b[..]), s, d);
            (IpProtocol::ICMPV6, b)
        }
        L4::Raw(p, b) => (*p, b.to_vec()),
    }
}

fn eth(
    src: u8,
    dst: u8,
    outer: Option<VlanTag>,
    inner: Option<VlanTag>,
    ty: EtherType,
) -> EthernetRepr {
    EthernetRepr {
        dst_addr: [0x02, 0, 0, 0, 0, dst],
        src_addr: [0x02, 0, 0, 0, 0, src],
        outer_vlan: outer,
        inner_vlan: inner,
        ethertype: ty,
    }
}

fn frame(e: &EthernetRepr, body: &[u8]) -> Vec<u8> {
    let mut b = vec![0u8; e.buffer_len() + body.len()];
    e.emit(&mut EthernetFrame::new_unchecked(&mut b[..]));
    b[e.buffer_len()..].copy_from_slice(body);
    b
}

fn v4_frame(e: EthernetRepr, mut ip: Ipv4Repr, l4: &L4) -> Vec<u8> {
    let (proto, body) = emit_l4(l4, &IpAddr::V4(ip.src_addr), &IpAddr::V4(ip.dst_addr));
    ip.protocol = proto;
    ip.payload_len = body.len();
    let mut b = vec![0u8; ip.buffer_len()];
    ip.emit(&mut Ipv4Packet::new_unchecked(&mut b[..]));
    b[20..].copy_from_slice(&body);
    frame(
        &EthernetRepr {
            ethertype: EtherType::IPV4,
            ..e
        },
        &b,
    )
}

fn v6_frame(e: EthernetRepr, mut ip: Ipv6Repr, exts: &[Ext], l4: &L4) -> Vec<u8> {
    let (proto, body) = emit_l4(l4, &IpAddr::V6(ip.src_addr), &IpAddr::V6(ip.dst_addr));
    let mut payload = Vec::new();
    for (i, x) in exts.iter().enumerate() {
        let next = exts.get(i + 1).map(|n| n.proto()).unwrap_or(proto);
        x.emit(next, &mut payload);
    }
    payload.extend_from_slice(&body);
    ip.next_header = exts.first().map(|x| x.proto()).unwrap_or(proto);
    ip.payload_len = payload.len();
    let mut b = vec![0u8; ip.buffer_len()];
    ip.emit(&mut Ipv6Packet::new_unchecked(&mut b[..]));
    b[40..].copy_from_slice(&payload);
    // With a routing header, the checksum uses the final destination.
    let p = Ipv6Packet::new_checked(&b[..]).unwrap();
    let c = p.ext_chain().unwrap();
    let fd = p.pseudo_dst_addr(&c);
    if fd != ip.dst_addr && !c.is_later_fragment() {
        let (s, d) = (ip.src_addr, fd);
        match c.upper_protocol {
            IpProtocol::UDP => UdpPacket::new_unchecked(&mut b[c.upper_offset..])
                .fill_checksum(&IpAddr::V6(s), &IpAddr::V6(d)),
            IpProtocol::ICMPV6 => {
                Icmpv6Packet::new_unchecked(&mut b[c.upper_offset..]).fill_checksum(&s, &d)
            }
            _ => {}
        }
    }
    frame(
        &EthernetRepr {
            ethertype: EtherType::IPV6,
            ..e
        },
        &b,
    )
}

fn v4(src: [u8; 4], dst: [u8; 4]) -> Ipv4Repr {
    Ipv4Repr {
        src_addr: src.into(),
        dst_addr: dst.into(),
        protocol: IpProtocol::UDP,
        payload_len: 0,
        ttl: 64,
        dscp: 0,
        ecn: 0,
        ident: 0,
        dont_frag: true,
        more_frags: false,
        frag_offset: 0,
    }
}

fn v6(src: &str, dst: &str) -> Ipv6Repr {
    Ipv6Repr {
        src_addr: src.parse().unwrap(),
        dst_addr: dst.parse().unwrap(),
        next_header: IpProtocol::UDP,
        payload_len: 0,
        hop_limit: 64,
        traffic_class: 0,
        flow_label: 0,
    }
}

/// A fixed set of frames covering every format and the per-packet mutators.
fn our_fixed_frames() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let tag = |tpid: EtherType, pcp: u8, dei: bool, vid: u16| {
        Some(VlanTag {
            tpid,
            pcp,
            dei,
            vid,
        })
    };
    let plain = eth(1, 2, None, None, EtherType::IPV4);
    let quoted4 = {
        let mut q = v4([10, 0, 0, 1], [10, 0, 0, 2]);
        q.ttl = 1;
        v4_frame(
            plain,
            q,
            &L4::Udp(
                UdpRepr {
                    src_port: 5000,
                    dst_port: 49999,
                    payload_len: 8,
                },
                b"quoted!!",
            ),
        )[14..]
            .to_vec()
    };

    out.push((
        "udp4".into(),
        v4_frame(
            plain,
            Ipv4Repr {
                dscp: 46,
                ecn: 2,
                ident: 0x1234,
                ..v4([192, 0, 2, 1], [198, 51, 100, 7])
            },
            &L4::Udp(
                UdpRepr {
                    src_port: 49152,
                    dst_port: 49999,
                    payload_len: 12,
                },
                b"hello, world",
            ),
        ),
    ));
    out.push((
        "udp4_vlan_odd".into(),
        v4_frame(
            eth(
                1,
                2,
                tag(EtherType::VLAN, 5, true, 100),
                None,
                EtherType::IPV4,
            ),
            Ipv4Repr {
                ttl: 3,
                ecn: 3,
                dont_frag: false,
                ..v4([192, 0, 2, 1], [198, 51, 100, 7])
            },
            &L4::Udp(
                UdpRepr {
                    src_port: 1,
                    dst_port: 2,
                    payload_len: 3,
                },
                b"odd",
            ),
        ),
    ));
    out.push((
        "udp6_qinq".into(),
        v6_frame(
            eth(
                1,
                2,
                tag(EtherType::QINQ, 3, false, 10),
                tag(EtherType::VLAN, 7, false, 4094),
                EtherType::IPV6,
            ),
            Ipv6Repr {
                traffic_class: (0x2e << 2) | 1,
                flow_label: 0xabcde,
                hop_limit: 200,
                ..v6("2001:db8::1", "2001:db8:0:1::2")
            },
            &[],
            &L4::Udp(
                UdpRepr {
                    src_port: 7,
                    dst_port: 49999,
                    payload_len: 33,
                },
                &(0..33).collect::<Vec<u8>>(),
            ),
        ),
    ));
    out.push((
        "icmp4_echo".into(),
        v4_frame(
            plain,
            v4([192, 0, 2, 1], [198, 51, 100, 7]),
            &L4::Icmp4(Icmpv4Repr::EchoRequest {
                ident: 0x4242,
                seq_no: 9,
                data: b"ping-data",
            }),
        ),
    ));
    out.push((
        "icmp4_time_exceeded".into(),
        v4_frame(
            plain,
            v4([192, 0, 2, 1], [10, 0, 0, 1]),
            &L4::Icmp4(Icmpv4Repr::TimeExceeded {
                code: 0,
                data: &quoted4,
            }),
        ),
    ));
    out.push((
        "icmp4_frag_needed".into(),
        v4_frame(
            plain,
            v4([192, 0, 2, 1], [10, 0, 0, 1]),
            &L4::Icmp4(Icmpv4Repr::DstUnreachable {
                code: 4,
                next_hop_mtu: 1400,
                data: &quoted4,
            }),
        ),
    ));
    out.push((
        "icmp4_port_unreach".into(),
        v4_frame(
            plain,
            v4([192, 0, 2, 1], [10, 0, 0, 1]),
            &L4::Icmp4(Icmpv4Repr::DstUnreachable {
                code: 3,
                next_hop_mtu: 0,
                data: &quoted4,
            }),
        ),
    ));
    for (name, op, tha) in [
        ("arp_request", ArpOperation::REQUEST, [0u8; 6]),
        ("arp_reply", ArpOperation::REPLY, [2, 0, 0, 0, 0, 1]),
    ] {
        let r = ArpRepr {
            operation: op,
            source_hardware_addr: [2, 0, 0, 0, 0, 2],
            source_protocol_addr: Ipv4Addr::new(10, 0, 0, 2),
            target_hardware_addr: tha,
            target_protocol_addr: Ipv4Addr::new(10, 0, 0, 1),
        };
        let mut b = [0u8; 28];
        r.emit(&mut ArpPacket::new_unchecked(&mut b[..]));
        out.push((
            name.into(),
            frame(
                &eth(
                    2,
                    1,
                    tag(EtherType::VLAN, 0, false, 33),
                    None,
                    EtherType::ARP,
                ),
                &b,
            ),
        ));
    }
    let seg: Vec<u8> = {
        let mut v = vec![0u8; 4];
        v.extend_from_slice(&"2001:db8::99".parse::<Ipv6Addr>().unwrap().octets());
        v
    };
    let srh: Vec<u8> = {
        // SRH type-specific part: last entry, flags, tag, then 3 segments.
        let mut v = vec![2u8, 0, 0, 0];
        for s in ["fc00:0:3::1", "fc00:0:2::1", "fc00:0:1::1"] {
            v.extend_from_slice(&s.parse::<Ipv6Addr>().unwrap().octets());
        }
        v
    };
    let e6 = eth(1, 2, None, None, EtherType::IPV6);
    out.push((
        "udp6_ext_chain".into(),
        v6_frame(
            e6,
            v6("2001:db8::1", "2001:db8:0:1::2"),
            &[
                Ext::HopByHop(&[1, 4, 0, 0, 0, 0]),
                Ext::Routing {
                    routing_type: 0,
                    segments_left: 1,
                    data: &seg,
                },
                Ext::Fragment {
                    offset: 0,
                    more: true,
                    ident: 0xdeadbeef,
                },
                Ext::DstOpts(&[0, 0, 1, 2, 0, 0]),
            ],
            &L4::Udp(
                UdpRepr {
                    src_port: 1234,
                    dst_port: 49999,
                    payload_len: 20,
                },
                &[b'x'; 20],
            ),
        ),
    ));
    out.push((
        "udp6_srh".into(),
        v6_frame(
            e6,
            v6("2001:db8::1", "fc00:0:1::1"),
            &[Ext::Routing {
                routing_type: 4,
                segments_left: 2,
                data: &srh,
            }],
            &L4::Udp(
                UdpRepr {
                    src_port: 4000,
                    dst_port: 49999,
                    payload_len: 4,
                },
                b"roce",
            ),
        ),
    ));
    out.push((
        "udp6_ah".into(),
        v6_frame(
            e6,
            v6("2001:db8::1", "2001:db8:0:1::2"),
            &[Ext::Auth {
                spi: 0x1000,
                seq: 5,
                icv: &[0xaa; 12],
            }],
            &L4::Udp(
                UdpRepr {
                    src_port: 9,
                    dst_port: 9,
                    payload_len: 2,
                },
                b"ah",
            ),
        ),
    ));
    out.push((
        "udp6_later_fragment".into(),
        v6_frame(
            e6,
            v6("2001:db8::1", "2001:db8:0:1::2"),
            &[Ext::Fragment {
                offset: 1480,
                more: false,
                ident: 7,
            }],
            &L4::Raw(IpProtocol::UDP, b"fragment-payload"),
        ),
    ));
    out.push((
        "icmp6_echo".into(),
        v6_frame(
            e6,
            v6("2001:db8::1", "2001:db8:0:1::2"),
            &[],
            &L4::Icmp6(Icmpv6Repr::EchoRequest {
                ident: 0x1111,
                seq_no: 2,
                data: b"abcdefg",
            }),
        ),
    ));
    out.push((
        "icmp6_echo_reply_hbh".into(),
        v6_frame(
            e6,
            v6("2001:db8:0:1::2", "2001:db8::1"),
            &[Ext::HopByHop(&[1, 4, 0, 0, 0, 0])],
            &L4::Icmp6(Icmpv6Repr::EchoReply {
                ident: 3,
                seq_no: 4,
                data: b"",
            }),
        ),
    ));
    let hl255 = |s: &str, d: &str| Ipv6Repr {
        hop_limit: 255,
        ..v6(s, d)
    };
    out.push((
        "icmp6_ns".into(),
        v6_frame(
            e6,
            hl255("fe80::1", "ff02::1:ff00:2"),
            &[],
            &L4::Icmp6(Icmpv6Repr::NeighborSolicit {
                target_addr: "2001:db8::2".parse().unwrap(),
                source_lladdr: Some([2, 0, 0, 0, 0, 1]),
            }),
        ),
    ));
    out.push((
        "icmp6_ns_dad".into(),
        v6_frame(
            e6,
            hl255("::", "ff02::1:ff00:2"),
            &[],
            &L4::Icmp6(Icmpv6Repr::NeighborSolicit {
                target_addr: "2001:db8::2".parse().unwrap(),
                source_lladdr: None,
            }),
        ),
    ));
    out.push((
        "icmp6_na".into(),
        v6_frame(
            e6,
            hl255("fe80::2", "fe80::1"),
            &[],
            &L4::Icmp6(Icmpv6Repr::NeighborAdvert {
                flags: na_flags::ROUTER | na_flags::SOLICITED | na_flags::OVERRIDE,
                target_addr: "2001:db8::2".parse().unwrap(),
                target_lladdr: Some([2, 0, 0, 0, 0, 2]),
            }),
        ),
    ));
    out.push((
        "icmp6_rs".into(),
        v6_frame(
            e6,
            hl255("fe80::1", "ff02::2"),
            &[],
            &L4::Icmp6(Icmpv6Repr::RouterSolicit {
                source_lladdr: Some([2, 0, 0, 0, 0, 1]),
            }),
        ),
    ));
    let quoted6 = v6_frame(
        e6,
        Ipv6Repr {
            hop_limit: 1,
            ..v6("2001:db8::1", "2001:db8:0:1::2")
        },
        &[],
        &L4::Udp(
            UdpRepr {
                src_port: 5000,
                dst_port: 49999,
                payload_len: 8,
            },
            b"quoted!!",
        ),
    )[14..]
        .to_vec();
    let err6 = |r: Icmpv6Repr| v6_frame(e6, v6("2001:db8::fe", "2001:db8::1"), &[], &L4::Icmp6(r));
    out.push((
        "icmp6_time_exceeded".into(),
        err6(Icmpv6Repr::TimeExceeded {
            code: 0,
            data: &quoted6,
        }),
    ));
    out.push((
        "icmp6_dest_unreach".into(),
        err6(Icmpv6Repr::DstUnreachable {
            code: 3,
            data: &quoted6,
        }),
    ));
    out.push((
        "icmp6_packet_too_big".into(),
        err6(Icmpv6Repr::PacketTooBig {
            mtu: 1280,
            data: &quoted6,
        }),
    ));
    out.push((
        "icmp6_param_problem".into(),
        err6(Icmpv6Repr::ParamProblem {
            code: 1,
            pointer: 40,
            data: &quoted6,
        }),
    ));

    // The per-packet mutators: their incremental checksum updates must give
    // frames scapy and tshark accept.
    let mut f = out[0].1.clone();
    {
        let mut p = Ipv4Packet::new_unchecked(&mut f[14..]);
        p.decrement_ttl_incremental();
        p.set_ecn_incremental(dataplane::wire::ipv4::ecn::CE);
        p.set_dscp_incremental(10);
        p.set_dst_addr_incremental(Ipv4Addr::new(203, 0, 113, 9));
    }
    {
        // The UDP checksum covers the pseudo-header: adjust it for the new DA.
        let mut u = UdpPacket::new_unchecked(&mut f[34..]);
        u.adjust_checksum(&[198, 51, 100, 7], &[203, 0, 113, 9]);
    }
    out.push(("udp4_mutated".into(), f));
    let mut f = out[2].1.clone();
    {
        let mut p = Ipv6Packet::new_unchecked(&mut f[22..]);
        p.decrement_hop_limit();
        p.set_ecn(dataplane::wire::ipv4::ecn::CE);
        let old = p.dst_addr();
        let new: Ipv6Addr = "fc00:1:2:3::77".parse().unwrap();
        p.set_dst_addr(new);
        let mut u = UdpPacket::new_unchecked(&mut f[62..]);
        u.adjust_checksum(&old.octets(), &new.octets());
    }
    out.push(("udp6_mutated".into(), f));
    let mut f = out[3].1.clone();
    Icmpv4Packet::new_unchecked(&mut f[34..]).echo_request_to_reply();
    out.push(("icmp4_echo_to_reply".into(), f));
    let echo6 = out
        .iter()
        .find(|(n, _)| n == "icmp6_echo")
        .unwrap()
        .1
        .clone();
    let mut f = echo6;
    {
        // Swap addresses and turn the request around in place.
        let (s, d) = {
            let p = Ipv6Packet::new_unchecked(&f[14..]);
            (p.src_addr(), p.dst_addr())
        };
        let mut p = Ipv6Packet::new_unchecked(&mut f[14..]);
        p.set_src_addr(d);
        p.set_dst_addr(s);
        Icmpv6Packet::new_unchecked(&mut f[54..]).echo_request_to_reply();
    }
    out.push(("icmp6_echo_to_reply".into(), f));
    out
}

/// A deterministic random set of frames.
fn our_random_frames(n: usize) -> Vec<(String, Vec<u8>)> {
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let mut out = Vec::new();
    for i in 0..n {
        let outer = if rng.bool() {
            Some(VlanTag {
                tpid: if rng.bool() {
                    EtherType::VLAN
                } else {
                    EtherType::QINQ
                },
                pcp: rng.below(8) as u8,
                dei: rng.bool(),
                vid: 1 + rng.below(4094) as u16,
            })
        } else {
            None
        };
        let inner = if outer.is_some() && rng.bool() {
            Some(VlanTag {
                tpid: EtherType::VLAN,
                pcp: rng.below(8) as u8,
                dei: rng.bool(),
                vid: 1 + rng.below(4094) as u16,
            })
        } else {
            None
        };
        let e = EthernetRepr {
            dst_addr: {
                let mut m: [u8; 6] = rng.bytes();
                m[0] &= 0xfe;
                m
            },
            src_addr: {
                let mut m: [u8; 6] = rng.bytes();
                m[0] &= 0xfe;
                m
            },
            outer_vlan: outer,
            inner_vlan: inner,
            ethertype: EtherType::IPV4,
        };
        let data = rng.vec(80);
        let ident = rng.next() as u16;
        let seq = rng.next() as u16;
        // Dynamic ports only: tshark has no dissector there to misread random payloads.
        let ports = (
            49152 + rng.below(16384) as u16,
            49152 + rng.below(16384) as u16,
        );
        let f = if rng.bool() {
            // IPv4: global unicast-ish addresses.
            let ip = Ipv4Repr {
                src_addr: Ipv4Addr::new(
                    11 + rng.below(100) as u8,
                    rng.next() as u8,
                    rng.next() as u8,
                    1 + rng.below(250) as u8,
                ),
                dst_addr: Ipv4Addr::new(
                    11 + rng.below(100) as u8,
                    rng.next() as u8,
                    rng.next() as u8,
                    1 + rng.below(250) as u8,
                ),
                protocol: IpProtocol::UDP,
                payload_len: 0,
                ttl: 1 + rng.below(255) as u8,
                dscp: rng.below(64) as u8,
                ecn: rng.below(4) as u8,
                ident: rng.next() as u16,
                dont_frag: rng.bool(),
                more_frags: false,
                frag_offset: 0,
            };
            let l4 = match rng.below(3) {
                0 => L4::Icmp4(Icmpv4Repr::EchoRequest {
                    ident,
                    seq_no: seq,
                    data: &data,
                }),
                1 => L4::Icmp4(Icmpv4Repr::EchoReply {
                    ident,
                    seq_no: seq,
                    data: &data,
                }),
                _ => L4::Udp(
                    UdpRepr {
                        src_port: ports.0,
                        dst_port: ports.1,
                        payload_len: data.len(),
                    },
                    &data,
                ),
            };
            v4_frame(e, ip, &l4)
        } else {
            let mut a: [u8; 16] = rng.bytes();
            a[0] = 0x20;
            a[1] = 0x01;
            let mut b: [u8; 16] = rng.bytes();
            b[0] = 0x20;
            b[1] = 0x01;
            let ip = Ipv6Repr {
                src_addr: a.into(),
                dst_addr: b.into(),
                next_header: IpProtocol::UDP,
                payload_len: 0,
                hop_limit: 1 + rng.below(255) as u8,
                traffic_class: rng.next() as u8,
                flow_label: rng.below(1 << 20) as u32,
            };
            let mut exts = Vec::new();
            let opts = [1u8, 4, 0, 0, 0, 0];
            if rng.below(4) == 0 {
                exts.push(Ext::HopByHop(&opts));
            }
            if rng.below(4) == 0 {
                exts.push(Ext::DstOpts(&opts));
            }
            if rng.below(4) == 0 {
                exts.push(Ext::Fragment {
                    offset: 0,
                    more: true,
                    ident: rng.next() as u32,
                });
            }
            let target: Ipv6Addr = {
                let mut t: [u8; 16] = rng.bytes();
                t[0] = 0x20;
                t[1] = 0x01;
                t.into()
            };
            let mac = {
                let mut m: [u8; 6] = rng.bytes();
                m[0] &= 0xfe;
                m
            };
            let l4 = match rng.below(6) {
                0 => L4::Icmp6(Icmpv6Repr::EchoRequest {
                    ident,
                    seq_no: seq,
                    data: &data,
                }),
                1 => L4::Icmp6(Icmpv6Repr::EchoReply {
                    ident,
                    seq_no: seq,
                    data: &data,
                }),
                2 => {
                    exts.clear();
                    L4::Icmp6(Icmpv6Repr::NeighborSolicit {
                        target_addr: target,
                        source_lladdr: if rng.bool() { Some(mac) } else { None },
                    })
                }
                3 => {
                    exts.clear();
                    L4::Icmp6(Icmpv6Repr::NeighborAdvert {
                        flags: (rng.next() as u8) & 0xe0,
                        target_addr: target,
                        target_lladdr: if rng.bool() { Some(mac) } else { None },
                    })
                }
                _ => L4::Udp(
                    UdpRepr {
                        src_port: ports.0,
                        dst_port: ports.1,
                        payload_len: data.len(),
                    },
                    &data,
                ),
            };
            let ip = if matches!(
                l4,
                L4::Icmp6(Icmpv6Repr::NeighborSolicit { .. } | Icmpv6Repr::NeighborAdvert { .. })
            ) {
                Ipv6Repr {
                    hop_limit: 255,
                    ..ip
                }
            } else {
                ip
            };
            v6_frame(e, ip, &exts, &l4)
        };
        out.push((format!("random{i}"), f));
    }
    out
}

// ---------------------------------------------------------------------------
// The tests.

#[test]
fn scapy_built_frames_parse_to_the_given_fields() {
    let out = python()
        .arg(script())
        .arg("build")
        .output()
        .expect("run scapy_l3.py");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "scapy_l3.py build failed: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let recs = parse_records(&text);
    assert!(recs.len() >= 20, "too few scapy frames: {text}");
    let mut problems = Vec::new();
    for r in &recs {
        let ours = dissect(r.frame.as_ref().unwrap());
        if let Some(e) = ours.get("error") {
            problems.push(format!("{}: our parser refused scapy's frame: {e}", r.name));
            continue;
        }
        for (k, v) in &r.fields {
            match ours.get(k) {
                Some(o) if o == v => {}
                o => problems.push(format!("{}: {k}: scapy {v}, ours {o:?}", r.name)),
            }
        }
    }
    assert!(problems.is_empty(), "mismatches:\n{}", problems.join("\n"));
}

fn scapy_check(frames: &[(String, Vec<u8>)]) {
    let mut child = python()
        .arg(script())
        .arg("check")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run scapy_l3.py");
    {
        let mut stdin = child.stdin.take().unwrap();
        for (n, f) in frames {
            writeln!(stdin, "{n} {}", hex(f)).unwrap();
        }
    }
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "scapy_l3.py check failed: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let recs = parse_records(&text);
    assert_eq!(recs.len(), frames.len(), "{text}");
    let mut problems = Vec::new();
    for (r, (name, f)) in recs.iter().zip(frames) {
        assert_eq!(&r.name, name);
        let ours = dissect(f);
        if let Some(e) = ours.get("error") {
            problems.push(format!("{name}: our parser refused our own frame: {e}"));
        }
        if r.fields.get("chk").map(String::as_str) != Some("ok") {
            problems.push(format!("{name}: checksum: {:?}", r.fields.get("chk")));
        }
        if r.fields.contains_key("rebuild") {
            problems.push(format!("{name}: scapy re-serialises it differently"));
        }
        let mut seen = 0;
        for (k, v) in &r.fields {
            if k == "chk" {
                continue;
            }
            match ours.get(k) {
                Some(o) if o == v => seen += 1,
                o => problems.push(format!("{name}: {k}: scapy {v}, ours {o:?}")),
            }
        }
        // scapy must have seen (nearly) everything we report.
        for k in ours.keys() {
            if !r.fields.contains_key(k) {
                problems.push(format!("{name}: scapy did not report {k}"));
            }
        }
        assert!(seen > 4, "{name}: scapy saw too little: {:?}", r.fields);
    }
    assert!(
        problems.is_empty(),
        "scapy disagrees:\n{}",
        problems.join("\n")
    );
}

#[test]
fn scapy_accepts_our_fixed_frames() {
    scapy_check(&our_fixed_frames());
}

#[test]
fn scapy_accepts_our_random_frames() {
    scapy_check(&our_random_frames(300));
}

#[test]
fn our_emitter_is_exercised_by_the_oracle() {
    // Guard against an oracle that silently sees nothing: every message kind
    // must be in the fixed set and parse with our own code.
    let frames = our_fixed_frames();
    let kinds: Vec<String> = frames
        .iter()
        .map(|(_, f)| {
            let d = dissect(f);
            assert!(!d.contains_key("error"), "{d:?}");
            format!(
                "{}/{}/{}",
                d.get("eth.type").cloned().unwrap_or_default(),
                d.get("icmp.type")
                    .or(d.get("icmp6.type"))
                    .cloned()
                    .unwrap_or_default(),
                d.contains_key("udp.dport")
            )
        })
        .collect();
    for want in [
        "2054//false",
        "2048//true",
        "34525//true",
        "2048/8/false",
        "2048/11/false",
        "2048/3/false",
        "34525/128/false",
        "34525/129/false",
        "34525/135/false",
        "34525/136/false",
        "34525/133/false",
        "34525/1/false",
        "34525/2/false",
        "34525/3/false",
        "34525/4/false",
        "2048/0/false",
    ] {
        assert!(
            kinds.iter().any(|k| k == want),
            "missing {want} in {kinds:?}"
        );
    }
    // And a corrupted frame is caught by our checksum verification.
    let mut f = frames[0].1.clone();
    f[40] ^= 0x01;
    assert!(dissect(&f).contains_key("error"));
    let _ = Icmpv4Message::ECHO_REQUEST;
    let _ = Icmpv6Message::ECHO_REQUEST;
}

#[test]
fn tshark_finds_no_malformed_frame_or_bad_checksum() {
    let mut frames = our_fixed_frames();
    frames.extend(our_random_frames(100));
    let dir = std::env::temp_dir().join(format!("wire_oracle_l3_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("l3.pcap");
    {
        let file = std::fs::File::create(&path).unwrap();
        let mut w = pcap_file::pcap::PcapWriter::new(file).unwrap();
        for (i, (_, f)) in frames.iter().enumerate() {
            let ts = std::time::Duration::from_millis(i as u64);
            w.write_packet(&pcap_file::pcap::PcapPacket::new(ts, f.len() as u32, f))
                .unwrap();
        }
    }
    let fields = [
        "frame.number",
        "_ws.malformed",
        "_ws.expert.severity",
        "_ws.expert.message",
        "ip.checksum.status",
        "udp.checksum.status",
        "icmp.checksum.status",
        "icmpv6.checksum.status",
        "ip.ttl",
        "ipv6.hlim",
        "udp.dstport",
        "icmp.type",
        "icmpv6.type",
        "arp.opcode",
    ];
    let mut cmd = tshark();
    cmd.arg("-r").arg(&path).args([
        "-o",
        "ip.check_checksum:TRUE",
        "-o",
        "udp.check_checksum:TRUE",
        // Dissect the first fragment's upper layer instead of waiting for a
        // reassembly that never comes.
        "-o",
        "ipv6.defragment:FALSE",
        "-T",
        "fields",
        "-E",
        "separator=\t",
        "-E",
        "occurrence=a",
        "-E",
        "aggregator=,",
    ]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "tshark: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split('\t').collect()).collect();
    assert_eq!(rows.len(), frames.len(), "{text}");
    let col = |name: &str| fields.iter().position(|f| *f == name).unwrap();
    let mut problems = Vec::new();
    let mut verified = 0;
    for ((name, f), row) in frames.iter().zip(&rows) {
        let get = |k: &str| row.get(col(k)).copied().unwrap_or("");
        if !get("_ws.malformed").is_empty() {
            problems.push(format!("{name}: malformed"));
        }
        let sev: Vec<&str> = get("_ws.expert.severity")
            .split(',')
            .filter(|s| !s.is_empty())
            .collect();
        let msgs: Vec<&str> = get("_ws.expert.message").split(',').collect();
        for (i, s) in sev.iter().enumerate() {
            let v = s
                .strip_prefix("0x")
                .map(|h| u64::from_str_radix(h, 16).unwrap())
                .unwrap_or_else(|| s.parse().unwrap_or(u64::MAX));
            // Note 0x400000, warning 0x600000, error 0x800000.
            if v >= 0x60_0000 {
                problems.push(format!(
                    "{name}: expert {s}: {}",
                    msgs.get(i).unwrap_or(&"")
                ));
            }
        }
        // Checksum status: 0 bad, 1 good, 2 unverified. Every checksum must
        // be good; the quoted headers inside ICMP errors count too.
        for k in [
            "ip.checksum.status",
            "udp.checksum.status",
            "icmp.checksum.status",
            "icmpv6.checksum.status",
        ] {
            for s in get(k).split(',').filter(|s| !s.is_empty()) {
                if s == "0" {
                    problems.push(format!("{name}: {k} bad"));
                } else if s == "1" {
                    verified += 1;
                }
            }
        }
        // tshark must read the fields we wrote.
        let d = dissect(f);
        for (ours, theirs) in [
            ("ip.ttl", "ip.ttl"),
            ("ip6.hlim", "ipv6.hlim"),
            ("udp.dport", "udp.dstport"),
            ("icmp.type", "icmp.type"),
            ("icmp6.type", "icmpv6.type"),
            ("arp.op", "arp.opcode"),
        ] {
            if let Some(v) = d.get(ours) {
                let t = get(theirs).split(',').next().unwrap_or("");
                if t != v {
                    problems.push(format!("{name}: {theirs}: tshark {t:?}, ours {v}"));
                }
            }
        }
    }
    assert!(
        verified > frames.len(),
        "tshark verified too few checksums ({verified})"
    );
    let out = tshark()
        .arg("-r")
        .arg(&path)
        .args([
            "-o",
            "ip.check_checksum:TRUE",
            "-o",
            "udp.check_checksum:TRUE",
            "-q",
            "-z",
            "expert",
        ])
        .output()
        .unwrap();
    let summary = String::from_utf8_lossy(&out.stdout);
    if summary.contains("Errors (") || summary.contains("Warns (") {
        problems.push(format!("expert summary:\n{summary}"));
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        problems.is_empty(),
        "tshark problems:\n{}",
        problems.join("\n")
    );
}
