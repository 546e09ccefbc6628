//! ECN, from a review of first-level CE marking at the congestion-aware
//! egress (draft-tian-ccwg-long-haul-cnp-00 s.5.4), RFC 6040 at the SRv6
//! tunnel ends, and the EMR counter (s.5.3.1): the EMR's data packets. (The
//! review's tests of CE across tunnel reassembly are in
//! tunnel_reassembly.rs.) Each test here failed on the code before its
//! fix; its doc comment names the rule and what the code did.

mod support;
use support::{ipv6, udp6};
use std::net::Ipv6Addr;

use dataplane::congestion::{CnpRequest, PortParams};
use dataplane::counters::WorkerCounters;
use dataplane::egress::EgressConfig;
use dataplane::node::{CongestionSpec, EgressPort};
use dataplane::packet::VecPacket;
use dataplane::tables::MacAddr;

const R0: MacAddr = [0x02, 0, 0, 0, 0, 0x10];
const H0: MacAddr = [0x00, 0x11, 0x22, 0, 0, 0x02];
const T0: u64 = 5_000_000_000;

const NOT_ECT: u8 = 0;
const ECT0: u8 = 2;

fn a6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

fn eth(dst: MacAddr, et: u16, payload: &[u8]) -> Vec<u8> {
    support::eth(dst, H0, None, et, payload)
}

fn spec(params: PortParams) -> CongestionSpec {
    CongestionSpec { params, source_v4: None, source_v6: None, end_e_sid: None, notify_sids: Vec::new(), tunnel_pes: Vec::new(), source_qps: Vec::new(), source_formats: Vec::new(), auth: Default::default() }
}

/// Ethernet + IPv6 (ECN `ecn`) + UDP to 4791 + BTH (opcode `op`) + AETH /
/// payload + ICRC, `src` to `dst`, DestQP `qp`.
fn roce_frame(src: &str, dst: &str, op: u8, qp: u32, ecn: u8, body: usize) -> Vec<u8> {
    let mut bth = vec![op, 0, 0xff, 0xff, 0];
    bth.extend_from_slice(&qp.to_be_bytes()[1..]);
    bth.extend_from_slice(&[0, 0, 0, 1]);
    bth.extend(std::iter::repeat_n(0u8, body + 4));
    let (s, d) = (a6(src), a6(dst));
    let ip = ipv6(s, d, 17, 64, ecn, &udp6(s, d, 0xc001, 4791, &bth));
    eth(R0, 0x86dd, &ip)
}

/// The EMR of the interval in which `frames` enter a congestion-aware port
/// whose queue is above K_min (1000 octets) for all of them: a 1500-octet
/// Not-ECT UDP packet first (data, not marked), then `frames`.
fn emr_of(frames: &[Vec<u8>]) -> (f64, u64) {
    let counters = WorkerCounters::default();
    let params = PortParams { k_min_bytes: Some(1000), v_ecn: 0.5, interval_ns: 100_000, ..PortParams::default() };
    let mut e: EgressPort<VecPacket> = EgressPort::new(EgressConfig::default(), Some(spec(params)));
    let mut reqs: Vec<CnpRequest> = Vec::with_capacity(64);
    e.poll(T0, &mut reqs);
    let (host, far) = (a6("2001:db8::2"), a6("2001:db8:ff::1"));
    let filler = eth(R0, 0x86dd, &ipv6(host, far, 17, 64, 0, &udp6(host, far, 1, 2, &[0u8; 1500 - 14 - 48])));
    e.admit(VecPacket::from_bytes(&filler), T0 + 1, &counters).map_err(|(_, d)| d).unwrap();
    for (i, f) in frames.iter().enumerate() {
        e.admit(VecPacket::from_bytes(f), T0 + 2 + i as u64, &counters).map_err(|(_, d)| d).unwrap();
    }
    e.poll(T0 + 200_000, &mut reqs);
    let s = e.cong.as_ref().unwrap().stats();
    (s.emr, s.trigger_emr)
}

/// Rule: EMR is "the fraction of data packets marked" (draft-tian s.5.3.1);
/// the README (`v_ecn`): "the fraction of data packets, not RoCEv2 ACKs or
/// CNPs, CE-marked in an interval". An XRC Acknowledge (opcode 0xB1,
/// IBTA transport XRC 101b, operation Acknowledge; sent by every XRC
/// target, e.g. Linux rxe `IB_OPCODE_XRC_ACKNOWLEDGE`) and an XRC Atomic
/// Acknowledge (0xB2) are RoCEv2 ACKs exactly as RC ACKs (0x11) are.
/// Here: 10 Not-ECT RC SENDs (data, not marked) and 20 ECT(0) ACKs above
/// K_min: EMR = 0 of 11 data packets, with RC ACKs and with XRC ACKs alike,
/// and no EMR trigger (V_ecn 0.5).
/// Was: `congestion::port::is_data` excludes only RC / RD ACKs and CNPs, so
/// XRC ACKs count as data and as marked: EMR 20/31 and an EMR trigger (a
/// Long-haul CNP) for congestion only acknowledgements "showed".
#[test]
fn xrc_acks_are_not_data_packets_in_the_emr() {
    let (a, b) = ("2001:db8:1::2", "2001:db8:3::2");
    let data: Vec<Vec<u8>> = (0..10).map(|_| roce_frame(a, b, 0x04, 0x100, NOT_ECT, 64)).collect();
    for (name, ack) in [("RC ACK", 0x11u8), ("XRC ACK", 0xb1), ("XRC Atomic ACK", 0xb2)] {
        let mut frames = data.clone();
        frames.extend((0..20).map(|_| roce_frame(b, a, ack, 0x200, ECT0, 4)));
        let (emr, trig) = emr_of(&frames);
        assert_eq!((emr, trig), (0.0, 0), "{name} (0x{ack:02x}): EMR counts data packets only");
    }
}

