//! Traffic generation for the demo and the benchmarks: Ethernet frames of
//! UDP, RoCEv2 (BTH + valid ICRC), ARP, ICMP echo and Neighbor Solicitation.

use dataplane::tables::{solicited_node, MacAddr};
use dataplane::wire::checksum;
use dataplane::wire::ethernet::ipv6_multicast_mac;
use dataplane::wire::roce;
use std::net::{Ipv4Addr, Ipv6Addr};

pub struct L2 {
    pub src: MacAddr,
    pub dst: MacAddr,
}

fn eth(l2: &L2, et: u16, out: &mut Vec<u8>) {
    out.extend_from_slice(&l2.dst);
    out.extend_from_slice(&l2.src);
    out.extend_from_slice(&et.to_be_bytes());
}

fn ipv4_hdr(src: Ipv4Addr, dst: Ipv4Addr, proto: u8, payload: usize, ttl: u8, tos: u8) -> [u8; 20] {
    let mut h = [0u8; 20];
    h[0] = 0x45;
    h[1] = tos;
    h[2..4].copy_from_slice(&((20 + payload) as u16).to_be_bytes());
    h[6] = 0x40;
    h[8] = ttl;
    h[9] = proto;
    h[12..16].copy_from_slice(&src.octets());
    h[16..20].copy_from_slice(&dst.octets());
    let c = checksum::checksum(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h
}

fn ipv6_hdr(src: Ipv6Addr, dst: Ipv6Addr, nh: u8, payload: usize, hop: u8, tc: u8) -> [u8; 40] {
    let mut h = [0u8; 40];
    h[0] = 0x60 | (tc >> 4);
    h[1] = tc << 4;
    h[4..6].copy_from_slice(&(payload as u16).to_be_bytes());
    h[6] = nh;
    h[7] = hop;
    h[8..24].copy_from_slice(&src.octets());
    h[24..40].copy_from_slice(&dst.octets());
    h
}

fn udp_seg(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut u = Vec::with_capacity(8 + payload.len());
    u.extend_from_slice(&sport.to_be_bytes());
    u.extend_from_slice(&dport.to_be_bytes());
    u.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    u.extend_from_slice(&[0, 0]);
    u.extend_from_slice(payload);
    u
}

pub fn udp4(l2: &L2, src: Ipv4Addr, dst: Ipv4Addr, sport: u16, dport: u16, payload: &[u8], ttl: u8) -> Vec<u8> {
    let mut u = udp_seg(sport, dport, payload);
    let s = checksum::combine(checksum::pseudo_v4(&src.octets(), &dst.octets(), 17, u.len() as u16), checksum::sum(&u));
    let c = !checksum::fold(s);
    u[6..8].copy_from_slice(&(if c == 0 { 0xffff } else { c }).to_be_bytes());
    let mut out = Vec::new();
    eth(l2, 0x0800, &mut out);
    out.extend_from_slice(&ipv4_hdr(src, dst, 17, u.len(), ttl, 0));
    out.extend_from_slice(&u);
    out
}

pub fn udp6(l2: &L2, src: Ipv6Addr, dst: Ipv6Addr, sport: u16, dport: u16, payload: &[u8], hop: u8) -> Vec<u8> {
    let mut u = udp_seg(sport, dport, payload);
    let s = checksum::combine(checksum::pseudo_v6(&src.octets(), &dst.octets(), 17, u.len() as u32), checksum::sum(&u));
    let c = !checksum::fold(s);
    u[6..8].copy_from_slice(&(if c == 0 { 0xffff } else { c }).to_be_bytes());
    let mut out = Vec::new();
    eth(l2, 0x86dd, &mut out);
    out.extend_from_slice(&ipv6_hdr(src, dst, 17, u.len(), hop, 0));
    out.extend_from_slice(&u);
    out
}

/// BTH for an RC SEND-only packet to `dest_qp` with `psn`.
fn bth(opcode: u8, dest_qp: u32, psn: u32) -> [u8; 12] {
    let mut b = [0u8; 12];
    b[0] = opcode;
    b[1] = 0x40; // SE=0, MigReq=1, PadCnt=0, TVer=0
    b[2..4].copy_from_slice(&0xffffu16.to_be_bytes());
    b[5..8].copy_from_slice(&dest_qp.to_be_bytes()[1..]);
    b[8] = 0x80; // AckReq
    b[9..12].copy_from_slice(&psn.to_be_bytes()[1..]);
    b
}

/// A RoCEv2 RC SEND-only packet (ECT(0), UDP checksum 0 as RoCEv2 allows
/// over IPv4) with `payload_len` bytes and a valid ICRC.
// Every argument is a header field of the packet.
#[allow(clippy::too_many_arguments)]
pub fn roce4(l2: &L2, src: Ipv4Addr, dst: Ipv4Addr, sport: u16, dest_qp: u32, psn: u32, payload_len: usize, ttl: u8) -> Vec<u8> {
    let mut body = bth(0x04, dest_qp, psn).to_vec();
    body.extend((0..payload_len).map(|i| (i as u8).wrapping_mul(7)));
    body.extend_from_slice(&[0; 4]);
    let udp = udp_seg(sport, 4791, &body);
    let mut ip = ipv4_hdr(src, dst, 17, udp.len(), ttl, 0x02).to_vec();
    ip.extend_from_slice(&udp);
    roce::icrc_fill(&mut ip).expect("icrc layout");
    let mut out = Vec::new();
    eth(l2, 0x0800, &mut out);
    out.extend_from_slice(&ip);
    out
}

/// A RoCEv2 RC SEND-only packet over IPv6 (ECT(0)) with a valid UDP
/// checksum and ICRC.
#[allow(clippy::too_many_arguments)]
pub fn roce6(l2: &L2, src: Ipv6Addr, dst: Ipv6Addr, sport: u16, dest_qp: u32, psn: u32, payload_len: usize, hop: u8) -> Vec<u8> {
    roce6_op(l2, src, dst, sport, 0x04, dest_qp, psn, payload_len, hop)
}

/// [`roce6`] with another BTH opcode (e.g. 0x11, an RC ACK, with 4 bytes
/// of payload standing for the AETH).
#[allow(clippy::too_many_arguments)]
pub fn roce6_op(l2: &L2, src: Ipv6Addr, dst: Ipv6Addr, sport: u16, opcode: u8, dest_qp: u32, psn: u32, payload_len: usize, hop: u8) -> Vec<u8> {
    let mut body = bth(opcode, dest_qp, psn).to_vec();
    body.extend((0..payload_len).map(|i| (i as u8).wrapping_mul(7)));
    roce6_packet(l2, src, dst, sport, body, hop)
}

/// An RC ACKNOWLEDGE over IPv6 as a responder sends it: BTH with AckReq
/// clear, and an AETH with `syndrome` (0x1f: ACK without credits; 0x60:
/// NAK, PSN sequence error) and `msn`.
#[allow(clippy::too_many_arguments)]
pub fn roce6_ack(l2: &L2, src: Ipv6Addr, dst: Ipv6Addr, sport: u16, dest_qp: u32, psn: u32, syndrome: u8, msn: u32, hop: u8) -> Vec<u8> {
    let mut body = bth(roce::opcode::RC_ACKNOWLEDGE, dest_qp, psn).to_vec();
    body[8] = 0;
    body.push(syndrome);
    body.extend_from_slice(&msn.to_be_bytes()[1..]);
    roce6_packet(l2, src, dst, sport, body, hop)
}

/// `body` (BTH and what follows it) as a RoCEv2 packet over IPv6 (ECT(0))
/// with its ICRC and UDP checksum.
fn roce6_packet(l2: &L2, src: Ipv6Addr, dst: Ipv6Addr, sport: u16, mut body: Vec<u8>, hop: u8) -> Vec<u8> {
    body.extend_from_slice(&[0; 4]);
    let udp = udp_seg(sport, 4791, &body);
    let mut ip = ipv6_hdr(src, dst, 17, udp.len(), hop, 0x02).to_vec();
    ip.extend_from_slice(&udp);
    roce::icrc_fill(&mut ip).expect("icrc layout");
    // UDP checksum is mandatory over IPv6; compute it over the final bytes.
    let s = checksum::combine(checksum::pseudo_v6(&src.octets(), &dst.octets(), 17, udp.len() as u32), checksum::sum(&ip[40..]));
    let c = !checksum::fold(s);
    ip[46..48].copy_from_slice(&(if c == 0 { 0xffff } else { c }).to_be_bytes());
    let mut out = Vec::new();
    eth(l2, 0x86dd, &mut out);
    out.extend_from_slice(&ip);
    out
}

pub fn arp_request(src_mac: MacAddr, src: Ipv4Addr, target: Ipv4Addr) -> Vec<u8> {
    let mut out = Vec::new();
    eth(&L2 { src: src_mac, dst: [0xff; 6] }, 0x0806, &mut out);
    out.extend_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
    out.extend_from_slice(&src_mac);
    out.extend_from_slice(&src.octets());
    out.extend_from_slice(&[0; 6]);
    out.extend_from_slice(&target.octets());
    out
}

pub fn echo4(l2: &L2, src: Ipv4Addr, dst: Ipv4Addr, id: u16, seq: u16) -> Vec<u8> {
    echo4_data(l2, src, dst, id, seq, b"dcirouter-demo-ping")
}

/// An ICMP echo request carrying `data`.
pub fn echo4_data(l2: &L2, src: Ipv4Addr, dst: Ipv4Addr, id: u16, seq: u16, data: &[u8]) -> Vec<u8> {
    let mut m = vec![8, 0, 0, 0];
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&seq.to_be_bytes());
    m.extend_from_slice(data);
    let c = checksum::checksum(&m);
    m[2..4].copy_from_slice(&c.to_be_bytes());
    let mut out = Vec::new();
    eth(l2, 0x0800, &mut out);
    out.extend_from_slice(&ipv4_hdr(src, dst, 1, m.len(), 64, 0));
    out.extend_from_slice(&m);
    out
}

/// What a host sends for an untagged IPv4 frame larger than its link:
/// fragments of at most `mtu` octets (DF cleared, Identification `id`).
pub fn fragment4(frame: &[u8], mtu: usize, id: u16) -> Vec<Vec<u8>> {
    let payload = &frame[14 + 20..];
    let chunk = (mtu - 20) & !7;
    let mut out = Vec::new();
    for (k, part) in payload.chunks(chunk).enumerate() {
        let mut f = frame[..14 + 20].to_vec();
        let h = &mut f[14..];
        h[2..4].copy_from_slice(&((20 + part.len()) as u16).to_be_bytes());
        h[4..6].copy_from_slice(&id.to_be_bytes());
        let more = (k + 1) * chunk < payload.len();
        h[6..8].copy_from_slice(&(((k * chunk / 8) as u16) | if more { 0x2000 } else { 0 }).to_be_bytes());
        h[10..12].fill(0);
        let c = checksum::checksum(h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        f.extend_from_slice(part);
        out.push(f);
    }
    out
}

/// An ICMPv6 echo request carrying `data`.
pub fn echo6_data(l2: &L2, src: Ipv6Addr, dst: Ipv6Addr, id: u16, seq: u16, data: &[u8]) -> Vec<u8> {
    let mut m = vec![128, 0, 0, 0];
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&seq.to_be_bytes());
    m.extend_from_slice(data);
    icmp6(l2, src, dst, m, 64)
}

/// What a host sends for an untagged IPv6 frame (no extension headers)
/// larger than its link: fragments of at most `mtu` octets with a
/// Fragment header (RFC 8200 s.4.5).
pub fn fragment6(frame: &[u8], mtu: usize, ident: u32) -> Vec<Vec<u8>> {
    let payload = &frame[14 + 40..];
    let chunk = (mtu - 48) & !7;
    let mut out = Vec::new();
    for (k, part) in payload.chunks(chunk).enumerate() {
        let mut f = frame[..14 + 40].to_vec();
        f[14 + 4..14 + 6].copy_from_slice(&((8 + part.len()) as u16).to_be_bytes());
        f[14 + 6] = 44;
        let more = (k + 1) * chunk < payload.len();
        f.extend_from_slice(&[frame[14 + 6], 0]);
        f.extend_from_slice(&(((k * chunk) as u16) | u16::from(more)).to_be_bytes());
        f.extend_from_slice(&ident.to_be_bytes());
        f.extend_from_slice(part);
        out.push(f);
    }
    out
}

fn icmp6(l2: &L2, src: Ipv6Addr, dst: Ipv6Addr, mut m: Vec<u8>, hop: u8) -> Vec<u8> {
    let s = checksum::combine(checksum::pseudo_v6(&src.octets(), &dst.octets(), 58, m.len() as u32), checksum::sum(&m));
    let c = !checksum::fold(s);
    m[2..4].copy_from_slice(&c.to_be_bytes());
    let mut out = Vec::new();
    eth(l2, 0x86dd, &mut out);
    out.extend_from_slice(&ipv6_hdr(src, dst, 58, m.len(), hop, 0));
    out.extend_from_slice(&m);
    out
}

pub fn echo6(l2: &L2, src: Ipv6Addr, dst: Ipv6Addr, id: u16, seq: u16) -> Vec<u8> {
    let mut m = vec![128, 0, 0, 0];
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&seq.to_be_bytes());
    m.extend_from_slice(b"dcirouter-demo-ping6");
    icmp6(l2, src, dst, m, 64)
}

pub fn neighbour_solicit(src_mac: MacAddr, src: Ipv6Addr, target: Ipv6Addr) -> Vec<u8> {
    let group = solicited_node(&target);
    let mut m = vec![135, 0, 0, 0, 0, 0, 0, 0];
    m.extend_from_slice(&target.octets());
    m.extend_from_slice(&[1, 1]);
    m.extend_from_slice(&src_mac);
    icmp6(&L2 { src: src_mac, dst: ipv6_multicast_mac(&group) }, src, group, m, 255)
}

/// An ARP reply from `src_mac` / `src` to `dst_mac` / `dst`.
pub fn arp_reply(src_mac: MacAddr, src: Ipv4Addr, dst_mac: MacAddr, dst: Ipv4Addr) -> Vec<u8> {
    let mut out = Vec::new();
    eth(&L2 { src: src_mac, dst: dst_mac }, 0x0806, &mut out);
    out.extend_from_slice(&[0, 1, 8, 0, 6, 4, 0, 2]);
    out.extend_from_slice(&src_mac);
    out.extend_from_slice(&src.octets());
    out.extend_from_slice(&dst_mac);
    out.extend_from_slice(&dst.octets());
    out
}

/// A solicited Neighbor Advertisement (S and O set) for `target`, with its
/// Target Link-Layer Address option (the frame's source MAC), to `dst`.
pub fn neighbour_advert(l2: &L2, target: Ipv6Addr, dst: Ipv6Addr) -> Vec<u8> {
    let mut m = vec![136, 0, 0, 0, 0x60, 0, 0, 0];
    m.extend_from_slice(&target.octets());
    m.extend_from_slice(&[2, 1]);
    m.extend_from_slice(&l2.src);
    icmp6(l2, target, dst, m, 255)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roce_packets_carry_valid_icrc() {
        let l2 = L2 { src: [2, 0, 0, 0, 0, 1], dst: [2, 0, 0, 0, 0, 2] };
        let p = roce4(&l2, Ipv4Addr::new(10, 0, 1, 2), Ipv4Addr::new(10, 0, 3, 2), 49152, 0x12, 7, 64, 64);
        roce::icrc_check(&p[14..]).unwrap();
        let p = roce6(&l2, "2001:db8:1::2".parse().unwrap(), "2001:db8:3::2".parse().unwrap(), 49152, 0x12, 7, 1024, 64);
        roce::icrc_check(&p[14..]).unwrap();
        assert_eq!(p.len(), 14 + 40 + 8 + 12 + 1024 + 4);
    }
}
