//! Source-QP learning of the congestion-aware node from reverse traffic
//! (draft-tian-ccwg-long-haul-cnp s.5.2, s.5.5), from a review of the flow
//! table and packet classification: each test failed on the code before
//! its fix, for the reason its doc comment gives ("Was").

use std::net::{IpAddr, Ipv6Addr};

use dataplane::congestion::{CongestionPort, PortParams, RoceInfo};
use dataplane::wire::roce::opcode;

const MB: u64 = 1_000_000;
const IV: u64 = 100_000;

fn ip6(x: u16) -> IpAddr {
    IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, x))
}

fn pkt(src: IpAddr, dst: IpAddr, op: u8, dest_qp: u32, psn: u32) -> RoceInfo {
    RoceInfo { src, dst, dest_qp, opcode: op, psn, sport: 0xc000, ext: false, syndrome: 0, ud_src_qp: None }
}

/// The draft's section 7 port (100 Gbit/s, RTT_est 10 ms, K_max 125 MB);
/// only the QD trigger, no suppression.
fn sec7() -> CongestionPort {
    let p = PortParams { v_ecn: 1.0, v_growth_kb_per_ms: 1e9, suppression: false, ..PortParams::default() };
    p.validate().unwrap();
    CongestionPort::new(p)
}

/// Rule: s.5.2 / README "The congestion-aware node": a flow's source QP is
/// learned from the responses that come back for it (an RC response names
/// the forward source QP as its DestQP); module documentation: "ACKs
/// acknowledge forward PSNs", so a response is the flow's only if it
/// acknowledges a PSN the flow sent. A proven source QP must not be
/// replaced by a response that cannot be the flow's: every worker hands
/// every received response to every congestion-aware port, and the other
/// QPs of the same two hosts take other paths (weighted ECMP "keeps each
/// RoCEv2 flow on one path", so the siblings of a flow leave by the other
/// WAN port while all their ACKs still reach this port's stage).
/// Was: `CongestionPort::on_reverse` (port.rs, `(1, _) => only`) gives the
/// QP of any response to the pair's only flow here, whatever its PSN: the
/// ACK of a sibling QP on the other path, for PSN 7000000 that this flow
/// (at PSN 1000) never sent, replaced the flow's learned QP 0xa1 by the
/// sibling's 0xa2, and the next Long-haul CNP told the source to slow down
/// QP 0xa2, which does not cross the congested port.
#[test]
fn a_response_for_a_psn_the_flow_never_sent_does_not_replace_its_source_qp() {
    let mut c = sec7();
    let (a, b) = (ip6(1), ip6(2));
    let send = opcode::RC | opcode::SEND_ONLY;
    // The flow a -> b QP 0x100 leaves by this port, up to PSN 1000; its
    // ACK names a's QP 0xa1: learned.
    c.on_enqueue(Some(&pkt(a, b, send, 0x100, 1000)), 1000, true, 130 * MB, 0);
    c.on_reverse(&pkt(b, a, opcode::RC_ACKNOWLEDGE, 0xa1, 1000), 1);
    assert_eq!(c.flow_source_qp(a, b, 0x100), Some(0xa1));
    // The ACK of a's other QP 0xa2 (to b's QP 0x101, on the other WAN
    // port; its PSNs are near 7000000), which this port's stage sees too.
    c.on_reverse(&pkt(b, a, opcode::RC_ACKNOWLEDGE, 0xa2, 7_000_000), 2);
    assert_eq!(c.flow_source_qp(a, b, 0x100), Some(0xa1), "an ACK of PSN 7000000 is not this flow's (it is at 1000)");
    // The Long-haul CNP of the congested port names the flow's own QP.
    let mut o = Vec::with_capacity(4);
    c.poll(130 * MB, 2, &mut o);
    c.poll(130 * MB, 2 + IV, &mut o);
    assert_eq!(o.iter().map(|r| (r.dest_qp, r.src_qp)).collect::<Vec<_>>(), vec![(0x100, Some(0xa1))]);
}

/// Rule: s.5.2 / README: "source QPs from the responses flowing back";
/// RoceInfo::teaches_source_qp counts RDMA READ responses among them, and
/// the module documentation picks, among several flows of a host pair,
/// "the one whose last PSN is closest at or after the response's PSN".
/// An RDMA READ request whose data takes n response packets uses up the n
/// PSNs from its own (IBA Vol. 1 ch. 9.7: the requester's next request
/// takes PSN + n, the responses carry PSN .. PSN + n - 1): READ Response
/// Middle / Last carry PSNs *after* the request's, the last PSN the
/// requester's flow sent. A response must not go to a flow it cannot
/// belong to, least of all over a source QP that flow's own ACK proved.
/// Was: `CongestionPort::on_reverse` (port.rs, the PSN distance test
/// `d < 1 << 23` for responses) leaves out the flow that sent the READ
/// (its last PSN, the request's, is *before* the response's: distance
/// wraps) and gives the response's QP to another flow of the pair whose
/// PSN happens to be within 2^23 ahead (half of all PSNs): the flow to
/// b's QP 0x101, whose source QP 0xb0 its own ACK had taught, took a's
/// READ QP 0xa0, and its Long-haul CNPs then throttled the wrong QP.
#[test]
fn an_rdma_read_response_does_not_teach_another_flow_of_the_pair() {
    let mut c = sec7();
    let (a, b) = (ip6(1), ip6(2));
    // Flow a -> b QP 0x101 (WRITEs) at PSN 5000000; its ACK teaches 0xb0.
    c.on_enqueue(Some(&pkt(a, b, opcode::RC | opcode::RDMA_WRITE_ONLY, 0x101, 5_000_000)), 4000, true, 0, 0);
    c.on_reverse(&pkt(b, a, opcode::RC_ACKNOWLEDGE, 0xb0, 5_000_000), 1);
    assert_eq!(c.flow_source_qp(a, b, 0x101), Some(0xb0));
    // Flow a -> b QP 0x100: an RDMA READ request at PSN 1000 for 16 KB
    // (4 response packets: PSNs 1000..=1003).
    c.on_enqueue(Some(&pkt(a, b, opcode::RC | opcode::RDMA_READ_REQUEST, 0x100, 1000)), 100, true, 0, 2);
    // b's READ Response Middle (PSN 1001) to a's QP 0xa0.
    let middle = pkt(b, a, opcode::RC | opcode::RDMA_READ_RESPONSE_MIDDLE, 0xa0, 1001);
    assert!(middle.teaches_source_qp());
    c.on_reverse(&middle, 3);
    assert_eq!(c.flow_source_qp(a, b, 0x101), Some(0xb0), "the WRITE flow's QP, proven by its ACK, is not the READ's");
}
