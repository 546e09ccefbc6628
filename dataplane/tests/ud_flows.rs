//! UD flows (draft-tian-ccwg-long-haul-cnp s.5.2: a flow is (source IP,
//! destination IP, source QP, destination QP)). A UD send carries its
//! source QP in every packet, in the DETH after the BTH (IBA Vol. 1
//! 9.8.2: Q_Key 4 octets, reserved 1, SrcQP 3), so a UD flow is keyed by
//! it and needs no learning. Was: UD datagrams were keyed like RC by
//! (source, destination, DestQP) and the DETH was not read, so two UD QPs
//! of one host sending to one UD QP shared an entry, and its source QP
//! stayed unknown unless configured (Long-haul CNPs to it went without
//! one, or, held back by policy, not at all).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use dataplane::classify::{roce_fast, roce_meta};
use dataplane::congestion::{CongestionPort, PackedKey, PortParams, RoceInfo};
use dataplane::wire::roce::opcode;

const MB: u64 = 1_000_000;
const IV: u64 = 100_000;
const UD_SEND: u8 = opcode::UD | opcode::SEND_ONLY;

fn ip6(x: u16) -> IpAddr {
    IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, x))
}

/// UDP to 4791, BTH, and for a UD send its DETH (Q_Key 0x80010000,
/// `src_qp`), `payload` octets, ICRC (not checked here).
fn udp_roce(op: u8, dest_qp: u32, psn: u32, src_qp: Option<u32>, payload: usize) -> Vec<u8> {
    let mut b = vec![op, 0, 0xff, 0xff, 0];
    b.extend_from_slice(&dest_qp.to_be_bytes()[1..]);
    b.push(0);
    b.extend_from_slice(&psn.to_be_bytes()[1..]);
    if let Some(q) = src_qp {
        b.extend_from_slice(&[0x80, 0x01, 0x00, 0x00, 0]);
        b.extend_from_slice(&q.to_be_bytes()[1..]);
    }
    b.extend(std::iter::repeat_n(0xa5u8, payload));
    b.extend_from_slice(&[0; 4]);
    let mut u = vec![0xc1, 0x23, 0x12, 0xb7];
    u.extend_from_slice(&((8 + b.len()) as u16).to_be_bytes());
    u.extend_from_slice(&[0, 0]);
    u.extend_from_slice(&b);
    u
}

fn eth(et: u16) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2];
    f.extend_from_slice(&et.to_be_bytes());
    f
}

fn frame4(src: [u8; 4], dst: [u8; 4], l4: &[u8]) -> Vec<u8> {
    let mut f = eth(0x0800);
    let mut h = vec![0x45, 0x02, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0];
    h[2..4].copy_from_slice(&((20 + l4.len()) as u16).to_be_bytes());
    h.extend_from_slice(&src);
    h.extend_from_slice(&dst);
    f.extend_from_slice(&h);
    f.extend_from_slice(l4);
    f
}

fn ip6hdr(nh: u8, src: Ipv6Addr, dst: Ipv6Addr, plen: usize) -> Vec<u8> {
    let mut h = vec![0x60, 0x20, 0, 0];
    h.extend_from_slice(&(plen as u16).to_be_bytes());
    h.extend_from_slice(&[nh, 64]);
    h.extend_from_slice(&src.octets());
    h.extend_from_slice(&dst.octets());
    h
}

fn frame6(src: Ipv6Addr, dst: Ipv6Addr, l4: &[u8]) -> Vec<u8> {
    let mut f = eth(0x86dd);
    f.extend_from_slice(&ip6hdr(17, src, dst, l4.len()));
    f.extend_from_slice(l4);
    f
}

fn v6(x: u16) -> Ipv6Addr {
    Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, x)
}

/// Both classifiers (the packet path's and the general walk) read the
/// DETH's source QP into the key of a UD send, over IPv4, IPv6 and inside
/// an IPv6 tunnel; an RC send between the same hosts is keyed without one.
#[test]
fn a_ud_sends_key_holds_its_deth_source_qp() {
    let a4 = frame4([10, 0, 0, 1], [10, 0, 0, 2], &udp_roce(UD_SEND, 0x100, 7, Some(0x11), 64));
    let b4 = frame4([10, 0, 0, 1], [10, 0, 0, 2], &udp_roce(UD_SEND, 0x100, 8, Some(0x12), 64));
    let (fa, fb) = (roce_fast(&a4).unwrap(), roce_fast(&b4).unwrap());
    assert_eq!(fa.roce.key.ud_source(), Some(0x11));
    assert_eq!(fb.roce.key.ud_source(), Some(0x12));
    assert_ne!(fa.roce.key, fb.roce.key, "two UD QPs of one host to one QP are two flows");
    let (src, dst) = (IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)), IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)));
    assert_eq!(fa.roce.key, PackedKey::new(src, dst, 0x100).with_ud_source(0x11));
    let m = roce_meta(&a4).unwrap();
    assert_eq!((m.info.ud_src_qp, m.info.key()), (Some(0x11), fa.roce.key));

    // With immediate: the same DETH.
    let imm6 = frame6(v6(1), v6(2), &udp_roce(opcode::UD | opcode::SEND_ONLY_WITH_IMMEDIATE, 0x200, 1, Some(0xabcdef), 64));
    let f6 = roce_fast(&imm6).unwrap();
    assert_eq!(f6.roce.key, PackedKey::new(ip6(1), ip6(2), 0x200).with_ud_source(0xabcdef));
    assert_eq!(roce_meta(&imm6).unwrap().info.key(), f6.roce.key);

    // Inside an IPv6-in-IPv6 tunnel (the general walk).
    let inner = frame6(v6(1), v6(2), &udp_roce(UD_SEND, 0x200, 1, Some(0x33), 64));
    let mut t = eth(0x86dd);
    t.extend_from_slice(&ip6hdr(41, v6(0x99), v6(0x98), inner.len() - 14));
    t.extend_from_slice(&inner[14..]);
    let ft = roce_fast(&t).unwrap();
    assert!(ft.tunnelled);
    assert_eq!(ft.roce.key, PackedKey::new(ip6(1), ip6(2), 0x200).with_ud_source(0x33));

    // RC between the same hosts: no DETH read, no source QP in the key.
    let rc = frame4([10, 0, 0, 1], [10, 0, 0, 2], &udp_roce(opcode::RC | opcode::SEND_ONLY, 0x100, 7, None, 64));
    assert_eq!(roce_fast(&rc).unwrap().roce.key, PackedKey::new(src, dst, 0x100));
    assert_eq!(roce_meta(&rc).unwrap().info.ud_src_qp, None);
}

/// A UD send cut off before the end of its DETH is not taken for a flow's
/// packet (its key would lack the source QP): neither classifier returns
/// it. The same frame with the whole DETH is.
#[test]
fn a_ud_send_without_its_whole_deth_is_not_a_flows_packet() {
    let whole = udp_roce(UD_SEND, 0x100, 7, Some(0x11), 0);
    // UDP 8 + BTH 12 + 7 of the DETH's 8 octets.
    let cut = &whole[..8 + 12 + 7];
    let mut cut = cut.to_vec();
    let n = cut.len() as u16;
    cut[4..6].copy_from_slice(&n.to_be_bytes());
    for f in [frame4([10, 0, 0, 1], [10, 0, 0, 2], &cut), frame6(v6(1), v6(2), &cut)] {
        assert_eq!(roce_fast(&f), None);
        assert_eq!(roce_meta(&f), None);
    }
    // The IPv4 datagram's length decides, not the frame's: a DETH in the
    // link-layer padding after a short datagram is not read.
    let mut padded = frame4([10, 0, 0, 1], [10, 0, 0, 2], &cut);
    padded.push(0x11);
    assert_eq!(roce_fast(&padded), None);
    let ok = frame4([10, 0, 0, 1], [10, 0, 0, 2], &whole);
    assert!(roce_fast(&ok).is_some() && roce_meta(&ok).is_some());
}

fn ud(src: IpAddr, dst: IpAddr, dest_qp: u32, src_qp: u32, psn: u32) -> RoceInfo {
    RoceInfo { src, dst, dest_qp, opcode: UD_SEND, psn, sport: 0xc000, ext: false, syndrome: 0, ud_src_qp: Some(src_qp) }
}

/// The draft's section 7 port (100 Gbit/s, RTT_est 10 ms, K_max 125 MB);
/// only the QD trigger, no suppression.
fn sec7() -> CongestionPort {
    let p = PortParams { v_ecn: 1.0, v_growth_kb_per_ms: 1e9, suppression: false, ..PortParams::default() };
    p.validate().unwrap();
    CongestionPort::new(p)
}

/// Two UD QPs of host a send to one UD QP of b: two flows, each with its
/// own bytes and its DETH's source QP, and the Long-haul CNP at K_max goes
/// to the QP that filled the queue, with its source QP known.
#[test]
fn two_ud_qps_to_one_qp_are_two_flows_and_the_cnp_names_the_right_one() {
    let mut c = sec7();
    let (a, b) = (ip6(1), ip6(2));
    for i in 0..10u32 {
        c.on_enqueue(Some(&ud(a, b, 0x100, 0x11, i)), 1000, true, MB, u64::from(i));
    }
    for i in 0..30u32 {
        c.on_enqueue(Some(&ud(a, b, 0x100, 0x12, i)), 1000, true, 130 * MB, 10 + u64::from(i));
    }
    let f11 = c.flow_id_of(&PackedKey::new(a, b, 0x100).with_ud_source(0x11)).expect("flow of QP 0x11");
    let f12 = c.flow_id_of(&PackedKey::new(a, b, 0x100).with_ud_source(0x12)).expect("flow of QP 0x12");
    assert_ne!(f11, f12);
    assert_eq!((c.flow_src_qp(f11), c.flow_src_qp(f12)), (Some(0x11), Some(0x12)));
    assert_eq!((c.flow_queued(f11), c.flow_queued(f12)), (Some(10_000), Some(30_000)));
    // No RC-style entry for (a, b, 0x100).
    assert_eq!(c.flow_id(a, b, 0x100), None);
    let mut o = Vec::with_capacity(4);
    c.poll(130 * MB, 40, &mut o);
    c.poll(130 * MB, 40 + IV, &mut o);
    assert_eq!(o.iter().map(|r| (r.dest_qp, r.src_qp, r.info.source_qp)).collect::<Vec<_>>(), vec![(0x100, Some(0x12), 0x12)]);
    assert_eq!(c.stats().source_qp_unknown, 0);
}

/// A UD flow's source QP is its DETH's: neither a configured source QP
/// for its (source, destination, DestQP), nor a standard CNP or a response
/// coming back naming another QP, replaces it.
#[test]
fn nothing_replaces_a_ud_flows_own_source_qp() {
    let mut c = sec7();
    let (a, b) = (ip6(1), ip6(2));
    c.set_source_qp(a, b, 0x100, 0x77);
    c.on_enqueue(Some(&ud(a, b, 0x100, 0x11, 5)), 1000, true, MB, 0);
    let f = c.flow_id_of(&PackedKey::new(a, b, 0x100).with_ud_source(0x11)).unwrap();
    assert_eq!(c.flow_src_qp(f), Some(0x11), "configured 0x77 is for an RC flow (a, b, 0x100)");
    c.set_source_qp(a, b, 0x100, 0x78);
    assert_eq!(c.flow_src_qp(f), Some(0x11));
    c.clear_source_qp(a, b, 0x100);
    assert_eq!(c.flow_src_qp(f), Some(0x11));
    // Back from b: a standard CNP naming QP 0x55, an ACK for PSN 5.
    let back = |op: u8, qp: u32, psn: u32| RoceInfo { src: b, dst: a, dest_qp: qp, opcode: op, psn, sport: 0xc000, ext: false, syndrome: 0, ud_src_qp: None };
    c.on_reverse(&back(opcode::CNP, 0x55, 0), 1);
    c.on_reverse(&back(opcode::RC_ACKNOWLEDGE, 0x56, 5), 2);
    assert_eq!(c.flow_src_qp(f), Some(0x11));
    let s = c.stats();
    assert_eq!((s.reverse_learned, s.reverse_learned_from_cnp), (0, 0));
}
