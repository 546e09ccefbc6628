//! Long-haul CNP packets for [`CnpRequest`]s.

use std::net::IpAddr;

use super::{CnpFormat, CnpRequest};
use crate::wire::lhcnp::{
    self, CnpInfo, ExtObject, Icmpv6LhCnpRepr, MetricType, ObjectData, Objects, RoceLhCnpRepr,
};
use crate::wire::params::{Params, ROCEV2_UDP_PORT};
use crate::wire::roce::{IpHeader, IpUdpRepr, DEFAULT_PKEY};
use crate::wire::{Error, Result};

/// Experimental C-Type (s.10.3: 254-255) of the Long-haul CNP class: the
/// flow a CNP is about when the source QP is unknown: the flow's
/// destination address (16 octets, IPv4-mapped for IPv4) and its DestQP
/// (4 octets, big endian).
pub const CTYPE_FLOW_ID: u8 = 254;
pub const FLOW_ID_LEN: usize = 20;

/// Hop limit / TTL of originated CNPs.
pub const CNP_HOP_LIMIT: u8 = 64;
/// DSCP of RoCEv2-format CNPs (CS6-like high priority, the usual CNP
/// class), ECN Not-ECT.
pub const CNP_DSCP: u8 = 48;

fn v6(a: IpAddr) -> [u8; 16] {
    match a {
        IpAddr::V6(a) => a.octets(),
        IpAddr::V4(a) => a.to_ipv6_mapped().octets(),
    }
}

/// Write the packet for `req` into `buf` (an IP packet, no Ethernet):
/// ICMPv6 Long-haul CNP (IPv6 only) or RoCEv2 Long-haul CNP (IPv4 or IPv6:
/// BTH opcode 0x81, BECN=1, E=1, P_Key 0xFFFF, PSN 0, DestQP = the source
/// QP or 0 when unknown, valid ICRC; UDP checksum on IPv6, 0 on IPv4).
/// `our_addr` (the router's address, the only CNP source the sources
/// accept, s.9) must have the family of `req.to`, and the ICMPv6 format
/// needs IPv6 (s.4): else `Malformed`. `zero_metrics` forces Metric Type
/// and Value to 0 (s.9). Returns the length.
pub fn build_cnp(
    req: &CnpRequest,
    our_addr: IpAddr,
    params: &Params,
    zero_metrics: bool,
    buf: &mut [u8],
) -> Result<usize> {
    let mut info: CnpInfo = req.info;
    if zero_metrics {
        info.metric_type = MetricType::Unspecified;
        info.metric_value = 0;
    }
    let src_qp = req.src_qp.map(|q| q & 0x00ff_ffff);
    info.source_qp = src_qp.unwrap_or(0);
    let mut fid = [0u8; FLOW_ID_LEN];
    fid[..16].copy_from_slice(&v6(req.flow_dst));
    fid[16..].copy_from_slice(&req.dest_qp.to_be_bytes());
    let obj = [ExtObject {
        class_num: params.lhcnp_ext_class_num,
        data: ObjectData::Raw {
            c_type: CTYPE_FLOW_ID,
            data: &fid,
        },
    }];
    let objects = if src_qp.is_some() {
        Objects::NONE
    } else {
        Objects::List(&obj)
    };
    match (req.format, our_addr, req.to) {
        (CnpFormat::Icmpv6, IpAddr::V6(ours), IpAddr::V6(to)) => {
            let repr = Icmpv6LhCnpRepr {
                code: lhcnp::CODE_FLOW_LEVEL,
                info,
                objects,
            };
            lhcnp::emit_icmpv6_packet(&ours.octets(), &to.octets(), CNP_HOP_LIMIT, &repr, params, buf)
        }
        (CnpFormat::Roce, ours, to) => {
            let ip = match (ours, to) {
                (IpAddr::V4(s), IpAddr::V4(d)) => IpHeader::V4 {
                    src: s.octets(),
                    dst: d.octets(),
                    tos: CNP_DSCP << 2,
                    ttl: CNP_HOP_LIMIT,
                    ident: 0,
                },
                (IpAddr::V6(s), IpAddr::V6(d)) => IpHeader::V6 {
                    src: s.octets(),
                    dst: d.octets(),
                    traffic_class: CNP_DSCP << 2,
                    flow_label: 0,
                    hop_limit: CNP_HOP_LIMIT,
                },
                _ => return Err(Error::Malformed),
            };
            let ipudp = IpUdpRepr {
                ip,
                // RoCEv2 uses the UDP source port for entropy: derive it
                // from the QP so that one QP's CNPs stay on one path.
                src_port: 0xc000 | (info.source_qp as u16 & 0x3fff),
                dst_port: ROCEV2_UDP_PORT,
                udp_checksum: matches!(ip, IpHeader::V6 { .. }),
            };
            let repr = RoceLhCnpRepr {
                pkey: DEFAULT_PKEY,
                dest_qp: info.source_qp,
                info,
                objects,
            };
            lhcnp::emit_roce_datagram(&ipudp, &repr, buf)
        }
        _ => Err(Error::Malformed),
    }
}
