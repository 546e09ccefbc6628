//! RTT_est from receiver reporting (`rtt_acks`, draft-tian-ccwg-long-haul-cnp
//! s.5.3.1), from a review (the adaptive policy of s.5.8 and the reference
//! source of s.5.6 were found right): each test failed on the code before
//! its fix, for the reason its doc comment gives ("Was").

use std::net::{IpAddr, Ipv6Addr};

use dataplane::congestion::{AckRttParams, CongestionPort, PortParams, RoceInfo, RoceKey, ACK_REQ};
use dataplane::wire::roce::opcode;

const MS: u64 = 1_000_000;
const US: u64 = 1_000;

fn ip6(x: u16) -> IpAddr {
    IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, x))
}

fn data(src: IpAddr, dst: IpAddr, dest_qp: u32, psn: u32) -> RoceInfo {
    RoceInfo { src, dst, dest_qp, opcode: opcode::RC | opcode::SEND_ONLY, psn, sport: 0xc000, ext: false, syndrome: 0, ud_src_qp: None }
}

fn ack(src: IpAddr, dst: IpAddr, dest_qp: u32, psn: u32) -> RoceInfo {
    RoceInfo { opcode: opcode::RC_ACKNOWLEDGE, ..data(src, dst, dest_qp, psn) }
}

/// The draft's section 7 port (100 Gbit/s, RTT_est 10 ms) with RTT_est
/// from the receivers' ACKs; no CNP trigger reachable by the queue depths
/// used here.
fn port(timeout_ns: u64) -> CongestionPort {
    let p = PortParams {
        v_ecn: 1.0,
        v_growth_kb_per_ms: 1e9,
        suppression: false,
        ack_rtt: Some(AckRttParams { window_ns: 10_000 * MS, timeout_ns }),
        ..PortParams::default()
    };
    p.validate().unwrap();
    CongestionPort::new(p)
}

/// Rule: Karn's rule (RFC 6298 s.3), as `ackrtt`'s module documentation
/// states it: "Nor is a retransmission ever timed: ... when any flow sends
/// a PSN that does not advance its own (the sender went back to it): its
/// packets up to the PSN it had reached are not timed."
/// Was: `CongestionPort::on_tail_drop` (port.rs, via `touch`) moves the
/// flow's last PSN to the dropped packet's without telling `AckRtt`. When
/// the first packet of a go-back-N (PSN 15 after 20) is tail-dropped -- the
/// likely case, the queue being full -- the next retransmission (16, with
/// AckReq) looks like it advances the flow (prev = 15), is not fenced and
/// is timed; the delayed ACK of the *original* 16 then ends the timing and
/// a 100 us "round trip" enters the windowed minimum (the path's is 10 ms).
#[test]
fn a_go_back_whose_first_packet_is_tail_dropped_is_not_timed() {
    let mut c = port(1_000 * MS);
    let (a, b) = (ip6(1), ip6(2));
    // PSN 1..=20 sent through the queue.
    for psn in 1..=20u32 {
        c.on_enqueue(Some(&data(a, b, 200, psn)), 1000, true, 1000, 0);
        c.on_dequeue(c.flow_id(a, b, 200), 1000, 0, 0);
    }
    // The sender goes back to 15 (go-back-N): 15 is tail-dropped by the
    // full queue, 16 (asking for an ACK) is queued and leaves.
    c.on_tail_drop(&RoceKey::from_info(&data(a, b, 200, 15)), 1000, 10 * MS);
    c.on_enqueue(Some(&data(a, b, 200, 16 | ACK_REQ)), 1000, true, 1000, 10 * MS);
    c.on_dequeue(c.flow_id(a, b, 200), 1000, 0, 10 * MS);
    // The ACK of the first transmission of 16 (delayed) arrives 100 us later.
    c.on_reverse(&ack(b, a, 77, 16), 10 * MS + 100 * US);
    let m = c.ack_rtt().unwrap();
    assert_eq!(
        (m.timed, m.samples),
        (0, 0),
        "a retransmission was timed and measured a {} ns round trip (estimate {} ns): {m:?}",
        m.last_ns,
        m.estimate_ns
    );
}

/// Rule: `ackrtt`'s module documentation: the round trip is timed "from
/// the moment it leaves the port's queue (so the time it waited in our own
/// queue does not count)", and a timing is given up "when no ACK came
/// within the timeout (a UC flow, a lost ACK)"; `AckRttParams::timeout_ns`:
/// "A timed packet not acknowledged within this long is given up";
/// `AckRttStats::timeouts`: "no ACK within the timeout".
/// Was: `AckRtt::poll` (ackrtt.rs) measures the timeout of a `Queued`
/// timing from its enqueue time, so a packet that waits in this port's own
/// queue longer than `timeout_ns` is given up (counted as a timeout and its
/// flow fenced as retransmitting) before it is even sent, and its ACK,
/// 4 ms after it left, is not a sample. Under a standing queue deeper than
/// the timeout (e.g. 1 Gbit/s port, 128 MB queue, default 1 s timeout)
/// receiver reporting never produces a sample.
#[test]
fn the_ack_timeout_does_not_run_while_the_packet_waits_in_our_queue() {
    let mut c = port(100 * MS);
    let (a, b) = (ip6(1), ip6(2));
    let mut out = Vec::with_capacity(32);
    // The timed packet enters a queue of 150 ms at t = 0.
    c.on_enqueue(Some(&data(a, b, 200, 1 | ACK_REQ)), 1000, true, 1_000_000, 0);
    let f = c.flow_id(a, b, 200);
    // The worker polls every 10 ms while the queue drains.
    for t in (10..=150).step_by(10) {
        c.poll(1_000_000, t * MS, &mut out);
    }
    // It leaves at 150 ms; its ACK is back 4 ms later.
    c.on_dequeue(f, 1000, 0, 150 * MS);
    c.on_reverse(&ack(b, a, 77, 1), 154 * MS);
    c.poll(0, 154 * MS, &mut out);
    let m = c.ack_rtt().unwrap();
    assert_eq!(
        (m.timeouts, m.samples, m.last_ns),
        (0, 1, 4 * MS),
        "the packet was given up while still in our queue: {m:?}"
    );
}

/// Rule: `ackrtt`'s module documentation: a packet is timed "to the ACK of
/// its flow that covers its PSN" (a round trip of that flow's path). With
/// the windowed minimum, a single short sample sets RTT_est (which the
/// control thread follows, and K_max with it, s.5.3.2) for the window.
/// Was: `CongestionPort::on_reverse` (port.rs, the learning branch) passes
/// a response whose flow it only *guessed* (several flows of the host pair,
/// none knowing the response's QP: the one whose last PSN is closest at or
/// after the response's PSN) to `AckRtt::on_response_at`. PSN spaces of
/// different QPs are unrelated, so the ACK of flow A (QP 77, PSN 1000,
/// 1 ms after B's timed packet left) ends the timing of flow B (PSN 995)
/// and a 1 ms round trip is measured on a 10 ms path.
#[test]
fn an_ack_attributed_by_guess_does_not_end_another_flows_timing() {
    let mut c = port(1_000 * MS);
    let (a, b) = (ip6(1), ip6(2));
    // Flow A (DestQP 200): PSN 1000..=1100 sent, none asks for an ACK.
    for psn in 1000..=1100u32 {
        c.on_enqueue(Some(&data(a, b, 200, psn)), 1000, true, 1000, 0);
        c.on_dequeue(c.flow_id(a, b, 200), 1000, 0, 0);
    }
    // Flow B (DestQP 201): PSN 995 asks for an ACK and is timed; 996..=1001
    // follow.
    for psn in [995 | ACK_REQ, 996, 997, 998, 999, 1000, 1001] {
        c.on_enqueue(Some(&data(a, b, 201, psn)), 1000, true, 1000, 0);
        c.on_dequeue(c.flow_id(a, b, 201), 1000, 0, 0);
    }
    assert_eq!(c.ack_rtt().unwrap().timed, 1);
    // A's receiver (A's source QP 77) acknowledges A's PSN 1000, 1 ms later.
    c.on_reverse(&ack(b, a, 77, 1000), MS);
    let m = c.ack_rtt().unwrap();
    assert_eq!(
        m.samples, 0,
        "flow A's ACK ended flow B's timing: a {} ns round trip (estimate {} ns); B now has source QP {:?}: {m:?}",
        m.last_ns,
        m.estimate_ns,
        c.flow_source_qp(a, b, 201)
    );
}
