//! Wire side of the reverse path: a receiver's response datagram in, the
//! aggregated RC response out (to the source, or to the next node up).

use std::net::Ipv6Addr;

use super::group::{Counter, GroupConfig, Response, Upstream};
use crate::wire::params::ROCEV2_UDP_PORT;
use crate::wire::roce::{
    self, opcode, Aeth, AethRepr, Bth, BthRepr, CnpRepr, IcrcLayout, IpHeader, IpUdpRepr, Syndrome,
    AETH_LEN, BTH_LEN, CNP_RESERVED_LEN, ICRC_LEN,
};
use crate::wire::Result;

/// What identifies a receiver's response on the reverse path: IPv6 SA (the
/// receiver), DA (the Proxy Address) and BTH DestQP (the Designated QPN).
/// See the module documentation for why the receiver's own QPN is not part
/// of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ResponseKey {
    pub receiver: Ipv6Addr,
    pub proxy: Ipv6Addr,
    pub dest_qp: u32,
}

/// Parse a receiver's response: an IPv6 datagram (IPv6 header through
/// ICRC, no extension headers) carrying UDP to port 4791 and an RC
/// Acknowledge packet (opcode 0x11, AETH) or a standard CNP (0x81). The
/// ICRC is verified. Errors name the drop counter.
pub fn parse_response(datagram: &[u8]) -> core::result::Result<(ResponseKey, Response), Counter> {
    let l = IcrcLayout::of(datagram).map_err(|_| Counter::Malformed)?;
    if l.ip_version != 6 {
        // The draft applies to RoCEv2 over IPv6 only (s.3).
        return Err(Counter::UnsupportedOpcode);
    }
    let uo = l.udp_offset();
    if u16::from_be_bytes([datagram[uo + 2], datagram[uo + 3]]) != ROCEV2_UDP_PORT {
        return Err(Counter::UnsupportedOpcode);
    }
    let bth = Bth::new_checked(&datagram[l.bth_offset()..l.datagram_len]).map_err(|_| Counter::Malformed)?;
    let op = bth.opcode();
    if op != opcode::RC_ACKNOWLEDGE && op != opcode::CNP {
        return Err(Counter::UnsupportedOpcode);
    }
    if roce::icrc_check(datagram).is_err() {
        return Err(Counter::BadIcrc);
    }
    let mut src = [0u8; 16];
    let mut dst = [0u8; 16];
    src.copy_from_slice(&datagram[8..24]);
    dst.copy_from_slice(&datagram[24..40]);
    let resp = if op == opcode::CNP {
        // Long-haul CNPs (E bit) are not receivers' responses.
        CnpRepr::parse(&bth).map_err(|e| match e {
            crate::wire::Error::Unrecognized => Counter::UnsupportedOpcode,
            _ => Counter::Malformed,
        })?;
        Response::Cnp
    } else {
        let b = BthRepr::parse(&bth).map_err(|_| Counter::Malformed)?;
        let aeth = Aeth::new_checked(bth.payload()).map_err(|_| Counter::Malformed)?;
        let a = AethRepr::parse(&aeth).map_err(|_| Counter::Malformed)?;
        Response::from_aeth(b.psn, a.syndrome, a.msn)
    };
    let key = ResponseKey {
        receiver: Ipv6Addr::from(src),
        proxy: Ipv6Addr::from(dst),
        dest_qp: bth.dest_qp(),
    };
    Ok((key, resp))
}

/// Length of the datagram [`build_upstream`] writes for `up` (IPv6 header
/// through ICRC): 68 octets for ACK/NAK, 80 for CNP.
pub const fn upstream_len(up: &Upstream) -> usize {
    40 + 8
        + match up {
            Upstream::Cnp { .. } => BTH_LEN + CNP_RESERVED_LEN + ICRC_LEN,
            _ => BTH_LEN + AETH_LEN + ICRC_LEN,
        }
}

/// Write the response this node sends upstream for `up`: an IPv6 datagram
/// (header through ICRC; the caller adds L2), UDP to 4791 with a checksum,
/// and
///
/// * ACK / NAK: BTH opcode RC Acknowledge (0x11), PSN = the aggregated
///   PSN, AETH (ACK with credit code, RNR NAK with timer, or NAK with code)
///   and the MSN;
/// * CNP: BTH opcode 0x81 with BECN, PSN 0, 16 zero octets.
///
/// The node adjacent to the source (no `node_address`) sends it from the
/// Proxy Address to the source with DestQP = the source's QPN; a node
/// below it (hop-by-hop aggregation) from its `node_address` to the Proxy
/// Address with DestQP = the Designated QPN, i.e. as a receiver's response,
/// which the next node up aggregates as one of its branches.
///
/// The ICRC is computed. Returns the datagram length.
pub fn build_upstream(up: &Upstream, group: &GroupConfig, buf: &mut [u8]) -> Result<usize> {
    let tc = match up {
        Upstream::Cnp { .. } => group.cnp_traffic_class,
        _ => group.traffic_class,
    };
    let (src, qpn) = match group.node_address {
        Some(a) => (a, group.designated_qpn),
        None => (group.proxy, group.id.source_qpn),
    };
    let ipudp = IpUdpRepr {
        ip: IpHeader::V6 {
            src: src.octets(),
            dst: group.upstream_dst().octets(),
            traffic_class: tc,
            flow_label: 0,
            hop_limit: group.hop_limit,
        },
        src_port: group.udp_src_port,
        dst_port: ROCEV2_UDP_PORT,
        udp_checksum: true,
    };
    let (psn, aeth) = match *up {
        Upstream::Cnp { .. } => {
            let cnp = CnpRepr { pkey: group.pkey, dest_qp: qpn, fecn: false };
            return roce::emit_cnp_datagram(&ipudp, &cnp, buf);
        }
        Upstream::Ack { psn, msn, credits } => {
            (psn, AethRepr { syndrome: Syndrome::Ack { credits: credits & 0x1f }, msn })
        }
        Upstream::Nak { psn, msn, kind } => (psn, AethRepr { syndrome: kind.syndrome(), msn }),
    };
    let hl = ipudp.header_len();
    let plen = BTH_LEN + AETH_LEN + ICRC_LEN;
    let n = hl + plen;
    ipudp.emit_headers(buf, plen)?;
    let mut bth = BthRepr::new(opcode::RC_ACKNOWLEDGE, qpn, psn);
    bth.pkey = group.pkey;
    bth.emit(&mut Bth::new_unchecked(&mut buf[hl..n]));
    let a = hl + BTH_LEN;
    AethRepr { msn: aeth.msn & 0x00ff_ffff, ..aeth }.emit(&mut Aeth::new_unchecked(&mut buf[a..a + AETH_LEN]));
    ipudp.finish(&mut buf[..n])?;
    Ok(n)
}
