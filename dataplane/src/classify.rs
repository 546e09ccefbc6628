//! Egress-side packet inspection for the congestion stage: find the RoCEv2
//! BTH of a frame, directly over IPv4/IPv6 or inside an SRv6 tunnel (outer
//! IPv6, optional SRH, inner IPv6 or IPv4), and read or set the ECN field of
//! the outer IP header (RFC 3168; the inner header is left to the
//! decapsulating node, RFC 6040).

use crate::congestion::{PackedKey, RoceInfo, RoceKey};
use crate::wire::checksum;
use crate::wire::ipv4::IpProtocol;
use crate::wire::ipv6::walk_ext_chain;
use crate::wire::params::ROCEV2_UDP_PORT;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// What the congestion stage needs from a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoceMeta {
    pub info: RoceInfo,
    /// ECN codepoint of the outer IP header.
    pub ecn: u8,
    /// True when the RoCEv2 packet travels inside a tunnel.
    pub tunnelled: bool,
}

/// Offset of the IP header in an Ethernet frame (one optional 802.1Q tag).
#[inline]
pub fn l3_offset(frame: &[u8]) -> Option<(usize, u16)> {
    let et = u16::from_be_bytes([*frame.get(12)?, *frame.get(13)?]);
    if et == 0x8100 || et == 0x88a8 {
        Some((18, u16::from_be_bytes([*frame.get(16)?, *frame.get(17)?])))
    } else {
        Some((14, et))
    }
}

/// The ECN codepoint of the frame's IP header, if it is IP.
#[inline]
pub fn ecn(frame: &[u8]) -> Option<u8> {
    let (l3, et) = l3_offset(frame)?;
    match et {
        0x0800 => Some(frame.get(l3 + 1)? & 3),
        0x86dd => Some((frame.get(l3 + 1)? >> 4) & 3),
        _ => None,
    }
}

/// Set CE in the outer IP header of an ECN-capable packet (IPv4 with an
/// RFC 1624 checksum update, IPv6 traffic class). Not-ECT packets are never
/// changed; returns whether the packet now carries CE.
#[inline]
pub fn set_ce(frame: &mut [u8]) -> bool {
    let Some((l3, et)) = l3_offset(frame) else { return false };
    match et {
        0x0800 => set_ce_ip(&mut frame[l3..], false),
        0x86dd => set_ce_ip(&mut frame[l3..], true),
        _ => false,
    }
}

/// [`set_ce`] on an IP packet (`ip` starts at its header): false when it
/// is too short or not ECN-capable (Not-ECT is never marked).
pub fn set_ce_ip(ip: &mut [u8], v6: bool) -> bool {
    if !v6 && ip.len() >= 20 {
        let tos = ip[1];
        if tos & 3 == 0 {
            return false;
        }
        if tos & 3 == 3 {
            return true;
        }
        let old = u16::from_be_bytes([ip[0], tos]);
        ip[1] = tos | 3;
        let new = u16::from_be_bytes([ip[0], tos | 3]);
        let c = u16::from_be_bytes([ip[10], ip[11]]);
        let c = checksum::update16(c, old, new);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        true
    } else if v6 && ip.len() >= 40 {
        if (ip[1] >> 4) & 3 == 0 {
            return false;
        }
        ip[1] |= 0x30;
        true
    } else {
        false
    }
}

/// Whether a packet of BTH opcode `op` carries a DETH after its BTH: the
/// UD sends (IBA 9.8.2; the other UD opcodes are reserved).
#[inline(always)]
fn has_deth(op: u8) -> bool {
    use crate::wire::roce::opcode;
    op == opcode::UD | opcode::SEND_ONLY || op == opcode::UD | opcode::SEND_ONLY_WITH_IMMEDIATE
}

/// The DETH's source QP of the UD send whose BTH is at `bth` (Q_Key 4,
/// reserved 1, SrcQP 3 octets); None when the datagram ends before it.
#[cold]
fn deth_src_qp(d: &[u8], bth: usize) -> Option<u32> {
    let x = d.get(bth + 12..bth + 20)?;
    Some(u32::from_be_bytes([0, x[5], x[6], x[7]]))
}

fn bth_at(d: &[u8], udp: usize, src: IpAddr, dst: IpAddr) -> Option<RoceInfo> {
    let u = d.get(udp..udp + 8 + 12)?;
    if u16::from_be_bytes([u[2], u[3]]) != ROCEV2_UDP_PORT {
        return None;
    }
    let b = &u[8..];
    // A UD send without its DETH is not a flow's packet.
    let ud_src_qp = if has_deth(b[0]) { Some(deth_src_qp(d, udp + 8)?) } else { None };
    Some(RoceInfo {
        src,
        dst,
        opcode: b[0],
        dest_qp: u32::from_be_bytes([0, b[5], b[6], b[7]]),
        // With the AckReq bit in bit 31 (congestion::ACK_REQ).
        psn: u32::from_be_bytes([b[8] & 0x80, b[9], b[10], b[11]]),
        sport: u16::from_be_bytes([u[0], u[1]]),
        // The E bit (wire::roce::Bth::ext).
        ext: b[4] & 0x20 != 0,
        // An ACK's AETH follows the BTH.
        syndrome: if b[0] == crate::wire::roce::opcode::RC_ACKNOWLEDGE { d.get(udp + 20).copied().unwrap_or(0) } else { 0 },
        ud_src_qp,
    })
}

fn v4(d: &[u8], l3: usize) -> Option<RoceInfo> {
    let h = d.get(l3..l3 + 20)?;
    if h[0] >> 4 != 4 || h[9] != 17 {
        return None;
    }
    let ihl = usize::from(h[0] & 0xf) * 4;
    if ihl < 20 || u16::from_be_bytes([h[6], h[7]]) & 0x1fff != 0 {
        return None;
    }
    let src = Ipv4Addr::new(h[12], h[13], h[14], h[15]);
    let dst = Ipv4Addr::new(h[16], h[17], h[18], h[19]);
    // The datagram only: no BTH read from link-layer padding.
    let d = d.get(..l3 + usize::from(u16::from_be_bytes([h[2], h[3]])))?;
    bth_at(d, l3 + ihl, src.into(), dst.into())
}

fn v6(d: &[u8], l3: usize, depth: u8) -> Option<(RoceInfo, bool)> {
    let h = d.get(l3..l3 + 40)?;
    if h[0] >> 4 != 6 {
        return None;
    }
    let end = (l3 + 40 + usize::from(u16::from_be_bytes([h[4], h[5]]))).min(d.len());
    // The datagram only: no BTH read from link-layer padding.
    let d = &d[..end];
    let pkt = &d[l3..end];
    let chain = walk_ext_chain(IpProtocol(h[6]), pkt, 40).ok()?;
    if chain.is_later_fragment() {
        return None;
    }
    let off = l3 + chain.upper_offset;
    match chain.upper_protocol {
        IpProtocol::UDP => {
            let src = Ipv6Addr::from(<[u8; 16]>::try_from(&h[8..24]).ok()?);
            let dst = Ipv6Addr::from(<[u8; 16]>::try_from(&h[24..40]).ok()?);
            bth_at(d, off, src.into(), dst.into()).map(|i| (i, depth > 0))
        }
        // SRv6 / IPv6-in-IPv6 encapsulation: look at the inner packet.
        IpProtocol::IPV6 if depth == 0 => v6(d, off, 1).map(|(i, _)| (i, true)),
        IpProtocol::IPV4 if depth == 0 => v4(d, off).map(|i| (i, true)),
        _ => None,
    }
}

/// The packet path's view of a RoCEv2 frame ([`roce_fast`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoceFast {
    pub roce: RoceKey,
    /// ECN codepoint of the outer IP header.
    pub ecn: u8,
    /// Inside an SRv6 / IPv6 tunnel: the outer IPv6 source is the tunnel's
    /// (the ingress PE's) address.
    pub tunnelled: bool,
}

#[inline(always)]
/// (DestQP, opcode, PSN, UDP source port) of the RoCEv2 packet whose UDP
/// header is at `udp`.
fn bth_fields(d: &[u8], udp: usize) -> Option<(u32, u8, u32, u16)> {
    let u = d.get(udp..udp + 8 + 12)?;
    if u16::from_be_bytes([u[2], u[3]]) != ROCEV2_UDP_PORT {
        return None;
    }
    let b = &u[8..];
    // The PSN with the AckReq bit in bit 31 (congestion::ACK_REQ).
    Some((u32::from_be_bytes([0, b[5], b[6], b[7]]), b[0], u32::from_be_bytes([b[8] & 0x80, b[9], b[10], b[11]]), u16::from_be_bytes([u[0], u[1]])))
}

/// `key`, for a UD send also keyed by its DETH's source QP; None when
/// the DETH is cut off.
#[inline(always)]
fn with_deth(key: PackedKey, op: u8, d: &[u8], udp: usize) -> Option<PackedKey> {
    if has_deth(op) {
        Some(key.with_ud_source(deth_src_qp(d, udp + 8)?))
    } else {
        Some(key)
    }
}

/// Whether `frame` may be a RoCEv2 response (ACK, NAK, read response,
/// atomic ACK) or standard CNP (opcode 0x81, E clear), the packets reverse
/// source-QP learning reads ([`RoceInfo::teaches_source_qp`]): false only
/// when the frame is plainly something else (not IP, not UDP to 4791, a
/// BTH opcode that is neither, or a Long-haul CNP); IPv6 with extension
/// headers or tunnels answers true and is left to [`roce_meta`].
#[inline]
pub fn maybe_response(frame: &[u8]) -> bool {
    let Some((l3, et)) = l3_offset(frame) else { return false };
    // The datagram only (not link-layer padding), and where its UDP header is.
    let (frame, udp) = match et {
        0x0800 => match frame.get(l3..l3 + 20) {
            Some(h) if h[9] == 17 => (frame.get(..l3 + usize::from(u16::from_be_bytes([h[2], h[3]]))).unwrap_or(&[]), l3 + usize::from(h[0] & 0xf) * 4),
            _ => return false,
        },
        0x86dd => match frame.get(l3..l3 + 40) {
            Some(h) if h[6] == 17 => (&frame[..(l3 + 40 + usize::from(u16::from_be_bytes([h[4], h[5]]))).min(frame.len())], l3 + 40),
            Some(_) => return true,
            None => return false,
        },
        _ => return false,
    };
    use crate::wire::roce::opcode;
    match bth_fields(frame, udp) {
        // bth_fields saw the whole BTH: its E bit is there.
        Some((_, op, _, _)) => opcode::is_response(op) || (op == opcode::CNP && frame[udp + 8 + 4] & 0x20 == 0),
        None => false,
    }
}

/// [`roce_meta`] for the egress packet path: the same packets, the flow key
/// packed as the flow table wants it, without building addresses; plain
/// IPv4 and IPv6 (no extension header) directly, the rest through
/// [`roce_meta`].
#[inline]
pub fn roce_fast(frame: &[u8]) -> Option<RoceFast> {
    let (l3, et) = l3_offset(frame)?;
    match et {
        0x0800 => {
            let h: &[u8; 20] = frame.get(l3..l3 + 20)?.try_into().ok()?;
            if h[0] >> 4 != 4 || h[9] != 17 {
                return None;
            }
            let ihl = usize::from(h[0] & 0xf) * 4;
            if ihl < 20 || u16::from_be_bytes([h[6], h[7]]) & 0x1fff != 0 {
                return None;
            }
            // The datagram only: no BTH read from link-layer padding.
            let dgram = frame.get(..l3 + usize::from(u16::from_be_bytes([h[2], h[3]])))?;
            let (qp, opcode, psn, sport) = bth_fields(dgram, l3 + ihl)?;
            let key = with_deth(PackedKey::v4([h[12], h[13], h[14], h[15]], [h[16], h[17], h[18], h[19]], qp), opcode, dgram, l3 + ihl)?;
            Some(RoceFast { roce: RoceKey { key, opcode, psn, sport }, ecn: h[1] & 3, tunnelled: false })
        }
        0x86dd => {
            let h: &[u8; 40] = frame.get(l3..l3 + 40)?.try_into().ok()?;
            if h[0] >> 4 != 6 {
                return None;
            }
            let ecn = (h[1] >> 4) & 3;
            if h[6] != 17 {
                // Extension headers, tunnels: the general walk.
                let m = roce_meta(frame)?;
                return Some(RoceFast { roce: RoceKey::from_info(&m.info), ecn: m.ecn, tunnelled: m.tunnelled });
            }
            // As roce_meta: a frame cut short is read as far as it goes.
            let dgram = &frame[..(l3 + 40 + usize::from(u16::from_be_bytes([h[4], h[5]]))).min(frame.len())];
            let (qp, opcode, psn, sport) = bth_fields(dgram, l3 + 40)?;
            let addrs: &[u8; 32] = h[8..40].try_into().ok()?;
            let key = with_deth(PackedKey::v6(addrs, qp), opcode, dgram, l3 + 40)?;
            Some(RoceFast { roce: RoceKey { key, opcode, psn, sport }, ecn, tunnelled: false })
        }
        _ => None,
    }
}

/// The RoCEv2 packet in `frame`, if any.
#[inline]
pub fn roce_meta(frame: &[u8]) -> Option<RoceMeta> {
    let (l3, et) = l3_offset(frame)?;
    match et {
        0x0800 => v4(frame, l3).map(|info| RoceMeta { info, ecn: frame[l3 + 1] & 3, tunnelled: false }),
        0x86dd => v6(frame, l3, 0).map(|(info, tunnelled)| RoceMeta { info, ecn: (frame[l3 + 1] >> 4) & 3, tunnelled }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eth(et: u16) -> Vec<u8> {
        let mut f = vec![0u8; 12];
        f.extend_from_slice(&et.to_be_bytes());
        f
    }

    fn udp_bth(dport: u16, qp: u32, psn: u32) -> Vec<u8> {
        let mut u = vec![0xc0, 0x00];
        u.extend_from_slice(&dport.to_be_bytes());
        u.extend_from_slice(&[0, 32, 0, 0]);
        let mut b = [0u8; 12];
        b[0] = 0x04;
        b[5..8].copy_from_slice(&qp.to_be_bytes()[1..]);
        b[9..12].copy_from_slice(&psn.to_be_bytes()[1..]);
        u.extend_from_slice(&b);
        u.extend_from_slice(&[0; 4]);
        u
    }

    fn ip4(tos: u8, payload: &[u8]) -> Vec<u8> {
        let mut h = vec![0x45, tos, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2];
        let tl = (20 + payload.len()) as u16;
        h[2..4].copy_from_slice(&tl.to_be_bytes());
        let c = checksum::checksum(&h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        h.extend_from_slice(payload);
        h
    }

    fn ip6(tc: u8, nh: u8, src: &str, dst: &str, payload: &[u8]) -> Vec<u8> {
        let mut h = vec![0x60 | (tc >> 4), tc << 4, 0, 0, 0, 0, nh, 64];
        h[4..6].copy_from_slice(&(payload.len() as u16).to_be_bytes());
        h.extend_from_slice(&src.parse::<Ipv6Addr>().unwrap().octets());
        h.extend_from_slice(&dst.parse::<Ipv6Addr>().unwrap().octets());
        h.extend_from_slice(payload);
        h
    }

    #[test]
    fn finds_bth_over_ipv4_and_marks_ce_with_checksum() {
        let mut f = eth(0x0800);
        f.extend(ip4(0x02, &udp_bth(4791, 0x123456, 77)));
        let m = roce_meta(&f).unwrap();
        assert_eq!(m.info.dest_qp, 0x123456);
        assert_eq!(m.info.psn, 77);
        assert_eq!(m.info.src, "10.0.0.1".parse::<IpAddr>().unwrap());
        assert_eq!(m.ecn, 2);
        assert!(set_ce(&mut f));
        assert_eq!(ecn(&f), Some(3));
        assert_eq!(checksum::checksum(&f[14..34]), 0, "header checksum still valid");
        // Not-ECT is never marked.
        let mut g = eth(0x0800);
        g.extend(ip4(0x00, &udp_bth(4791, 1, 1)));
        assert!(!set_ce(&mut g));
        assert_eq!(ecn(&g), Some(0));
        // Not RoCEv2.
        let mut h = eth(0x0800);
        h.extend(ip4(0x02, &udp_bth(4790, 1, 1)));
        assert!(roce_meta(&h).is_none());
    }

    /// What RTT_est from ACKs reads: the AckReq bit beside the PSN (both
    /// parsers, both families) and an ACK's AETH syndrome.
    #[test]
    fn ack_request_bit_and_aeth_syndrome() {
        let mut u = udp_bth(4791, 9, 0xabcdef);
        u[8 + 8] = 0x80;
        for (v4, l3) in [(true, ip4(0x02, &u)), (false, ip6(0x02, 17, "2001:db8::1", "2001:db8::2", &u))] {
            let mut f = eth(if v4 { 0x0800 } else { 0x86dd });
            f.extend(l3);
            let m = roce_meta(&f).unwrap();
            assert_eq!((m.info.psn, m.info.syndrome), (crate::congestion::ACK_REQ | 0xabcdef, 0), "v4 {v4}");
            assert_eq!(roce_fast(&f).unwrap().roce.psn, crate::congestion::ACK_REQ | 0xabcdef, "v4 {v4}");
        }
        // An RC ACK: BTH opcode 0x11, then the AETH (a NAK, syndrome 0x60).
        let mut u = udp_bth(4791, 9, 5);
        u[8] = crate::wire::roce::opcode::RC_ACKNOWLEDGE;
        u.truncate(8 + 12);
        u.extend_from_slice(&[0x60, 0, 0, 5, 0, 0, 0, 0]);
        let mut f = eth(0x0800);
        f.extend(ip4(0, &u));
        let m = roce_meta(&f).unwrap();
        assert_eq!((m.info.opcode, m.info.psn, m.info.syndrome), (0x11, 5, 0x60));
        // The same bytes after another opcode are not an AETH.
        let n = f.len();
        f[n - 20] = 0x04;
        assert_eq!(roce_meta(&f).unwrap().info.syndrome, 0);
    }

    #[test]
    fn maybe_response_passes_responses_and_unknown_layouts_only() {
        let with_opcode = |op: u8, v6: bool| {
            let mut u = udp_bth(4791, 7, 9);
            u[8] = op;
            let mut f = eth(if v6 { 0x86dd } else { 0x0800 });
            if v6 {
                f.extend(ip6(0x02, 17, "2001:db8:1::2", "2001:db8:3::2", &u));
            } else {
                f.extend(ip4(0x02, &u));
            }
            f
        };
        for v6 in [false, true] {
            // RC SEND-only, RDMA WRITE-only: data, no.
            assert!(!maybe_response(&with_opcode(0x04, v6)));
            assert!(!maybe_response(&with_opcode(0x0a, v6)));
            // RC ACK, RDMA READ response only, atomic ACK: yes.
            assert!(maybe_response(&with_opcode(0x11, v6)));
            assert!(maybe_response(&with_opcode(0x10, v6)));
            assert!(maybe_response(&with_opcode(0x12, v6)));
            // And roce_meta agrees that these are RoCEv2.
            assert!(roce_meta(&with_opcode(0x11, v6)).is_some());
            // A standard CNP (E clear, BECN set): yes; a Long-haul CNP (E
            // set): no, and roce_meta says which is which.
            let mut cnp = with_opcode(0x81, v6);
            let e = cnp.len() - 4 - 12 + 4;
            cnp[e] = 0x40;
            assert!(maybe_response(&cnp));
            let m = roce_meta(&cnp).unwrap();
            assert!(!m.info.ext && m.info.teaches_source_qp());
            cnp[e] = 0x60;
            assert!(!maybe_response(&cnp));
            let m = roce_meta(&cnp).unwrap();
            assert!(m.info.ext && !m.info.teaches_source_qp());
        }
        // Not UDP 4791, not IP: no.
        let mut f = eth(0x0800);
        f.extend(ip4(0x02, &udp_bth(4790, 1, 1)));
        assert!(!maybe_response(&f));
        assert!(!maybe_response(&eth(0x0806)));
        assert!(!maybe_response(&[0u8; 10]));
        // Tunnels and extension headers: left to roce_meta.
        assert!(maybe_response(&srv6_roce()));
    }

    /// IPv6 (ECT(1)) + SRH (next header 41, hdr ext len 2 = one segment,
    /// type 4, SL 0) + inner IPv6 (ECT(0)) RoCEv2 to DestQP 0x42.
    fn srv6_roce() -> Vec<u8> {
        let inner = ip6(0x02, 17, "2001:db8:1::2", "2001:db8:3::2", &udp_bth(4791, 0x42, 9));
        let mut srh = vec![41, 2, 4, 0, 0, 0, 0, 0];
        srh.extend_from_slice(&"fc00::2".parse::<Ipv6Addr>().unwrap().octets());
        srh.extend(inner);
        let mut f = eth(0x86dd);
        f.extend(ip6(0x01, 43, "fc00::1", "fc00::2", &srh));
        f
    }

    #[test]
    fn finds_inner_bth_in_srv6_and_marks_outer() {
        let mut f = srv6_roce();
        let m = roce_meta(&f).unwrap();
        assert!(m.tunnelled);
        assert_eq!(m.info.dest_qp, 0x42);
        assert_eq!(m.info.dst, "2001:db8:3::2".parse::<IpAddr>().unwrap());
        assert_eq!(m.ecn, 1);
        assert!(set_ce(&mut f));
        assert_eq!(ecn(&f), Some(3));
        // The inner header is untouched.
        let inner_tc_byte = f[14 + 40 + 24 + 1];
        assert_eq!((inner_tc_byte >> 4) & 3, 2);
    }

    #[test]
    fn fast_parse_agrees_with_roce_meta() {
        let mut frames = Vec::new();
        let mut f = eth(0x0800);
        f.extend(ip4(0x02, &udp_bth(4791, 0x123456, 77)));
        frames.push(f);
        let mut f = eth(0x86dd);
        f.extend(ip6(0x01, 17, "2001:db8:1::2", "2001:db8:3::2", &udp_bth(4791, 0x42, 9)));
        frames.push(f);
        frames.push(srv6_roce());
        let mut f = eth(0x0800);
        f.extend(ip4(0x02, &udp_bth(4790, 1, 1)));
        frames.push(f);
        for f in &frames {
            for cut in 0..=f.len() {
                let g = &f[..cut];
                let want = roce_meta(g).map(|m| RoceFast { roce: RoceKey::from_info(&m.info), ecn: m.ecn, tunnelled: m.tunnelled });
                assert_eq!(roce_fast(g), want);
            }
        }
        assert!(roce_fast(&frames[0]).is_some() && roce_fast(&frames[3]).is_none());
    }

    #[test]
    fn vlan_tagged_and_truncated() {
        let mut f = vec![0u8; 12];
        f.extend_from_slice(&[0x81, 0x00, 0x00, 0x64, 0x08, 0x00]);
        f.extend(ip4(0x02, &udp_bth(4791, 5, 5)));
        assert_eq!(roce_meta(&f).unwrap().info.dest_qp, 5);
        for cut in 0..f.len() {
            let _ = roce_meta(&f[..cut]);
            let mut g = f[..cut].to_vec();
            let _ = set_ce(&mut g);
        }
    }
}
