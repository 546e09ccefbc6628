//! The whole packet path as one target: a frame through a worker's
//! [`Pipeline`] configured with most features (two untagged ports and a
//! VLAN, uRPF, routes and static neighbours, local SIDs End / End.DT6 /
//! End.MT / END.C / END.E, an SR policy, two End.MT reverse-path groups,
//! one of them hop by hop) and into the congestion-aware egress port of
//! the WAN (shaped, small thresholds and a small flow table, so that
//! marking, the second-level triggers, Long-haul CNPs, the table-full path
//! and aging all happen; CNPs for sources in 2001:db8:1::/64 go
//! SRv6-encapsulated toward an END.C SID). The first input byte picks the
//! arrival port (bit 0), whether the frame goes through the burst fast
//! path first (bit 1) and how many times it arrives back to back (1 + the
//! high nibble: bursts that build the queue); the rest is the frame. What the worker does after `process` is done here too:
//! RoCEv2 responses teach the egress port source QPs, replicas and
//! fragments are built and queued, the egress port is drained by its
//! shaper and polled and its CNPs built, the multicast windows and END.C
//! timers polled and their packets built, events and solicits drained. Any
//! panic (index out of range, arithmetic overflow: the fuzz profile has
//! overflow checks) is a finding.
//!
//! One pipeline serves every input (building one per input would dominate
//! the run): state carries over from input to input as it does in the
//! router, and the virtual clock advances 1 µs per input. A finding may
//! therefore depend on the inputs before it. After a panic the state is
//! built afresh (a half-done update is not carried into the next input).
//! Not covered here: End.X, End.DT4, the SRH HMAC, zero-copy replicas.

use std::cell::RefCell;
use std::net::Ipv6Addr;
use std::sync::Arc;

use dataplane::congestion::{CnpRequest, PortParams};
use dataplane::counters::WorkerCounters;
use dataplane::egress::EgressConfig;
use dataplane::node::{CongestionSpec, EgressPort};
use dataplane::multicast::{build_upstream, upstream_len, GroupConfig, GroupId, Receiver, Upstream};
use dataplane::packet::VecPacket;
use dataplane::pfcrx::{PfcRxConfig, PortPause};
use dataplane::pipeline::{Pipeline, PipelineConfig, Verdict};
use dataplane::srv6::{Behaviour, EncapMode, SidTable, SrPolicy};
use dataplane::tables::{Fib, Interface, MacAddr, NeighSource, Neighbours, NextHop, Route, Topology, Urpf};
use dataplane::wire::params::Params;
use dataplane::wire::roce;

const R0: MacAddr = [0x02, 0, 0, 0, 0, 0x10];
const R1: MacAddr = [0x02, 0, 0, 0, 0, 0x11];
const HOST: MacAddr = [0x02, 0, 0, 0, 1, 0x02];
const PROXY: &str = "2001:db8:ff::1";
const PROXY2: &str = "2001:db8:fe::1";
const DQPN: u32 = 1;

fn a6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

fn iface(name: &str, port: u16, vlan: Option<u16>, mac: MacAddr, addrs: &[&str], urpf: Urpf) -> Interface {
    let mut i = Interface::new(name, port, vlan, mac, 1500);
    for a in addrs {
        if a.contains(':') {
            i.v6.push(a.parse().unwrap());
        } else {
            i.v4.push(a.parse().unwrap());
        }
    }
    i.urpf = urpf;
    i
}

fn build() -> Pipeline {
    let mut topo = Topology::new(vec![
        iface("dc", 0, None, R0, &["10.0.1.1/24", "2001:db8:1::1/64"], Urpf::Off),
        iface("wan", 1, None, R1, &["10.0.2.1/24", "2001:db8:2::1/64"], Urpf::Strict),
        iface("wan.200", 1, Some(200), R1, &["10.0.200.1/24"], Urpf::Loose),
    ]);
    // RTT probes: Echo Replies with this identifier go to the control thread.
    topo.echo_probe_id = Some(ECHO_ID);
    let mut fib = Fib::default();
    let conn = |i: u16| NextHop { iface: i, gateway: None };
    let via = |i: u16, g: &str| NextHop { iface: i, gateway: Some(g.parse().unwrap()) };
    fib.insert4("10.0.1.0/24".parse().unwrap(), conn(0));
    fib.insert4("10.0.2.0/24".parse().unwrap(), conn(1));
    fib.insert4("10.0.200.0/24".parse().unwrap(), conn(2));
    fib.insert6("2001:db8:1::/64".parse().unwrap(), conn(0));
    fib.insert6("2001:db8:2::/64".parse().unwrap(), conn(1));
    fib.insert4("0.0.0.0/0".parse().unwrap(), via(1, "10.0.2.2"));
    fib.insert4("10.0.4.0/24".parse().unwrap(), via(2, "10.0.200.2"));
    fib.insert6("::/0".parse().unwrap(), via(1, "2001:db8:2::2"));
    fib.insert6("2001:db8:3::/48".parse().unwrap(), via(1, "2001:db8:2::3")); // unresolved
    // ECMP: tagged and untagged next hops (fast and full path), weighted;
    // one next hop unresolved; the SR policy's first SID over two.
    fib.insert("10.0.5.0/24".parse().unwrap(), Route::multipath(vec![(via(1, "10.0.2.2"), 1), (via(2, "10.0.200.2"), 2), (via(1, "10.0.2.9"), 1)]).unwrap());
    fib.insert("2001:db8:5::/48".parse().unwrap(), Route::multipath(vec![(via(1, "2001:db8:2::2"), 3), (via(1, "2001:db8:2::3"), 1)]).unwrap());
    fib.insert("fc00:0:9::/48".parse().unwrap(), Route::multipath(vec![(via(1, "2001:db8:2::2"), 1), (via(0, "2001:db8:1::2"), 1)]).unwrap());
    fib.set_seed(0x5eed);
    let mut n = Neighbours::default();
    for (i, ip, mac) in [(0, "10.0.1.2", HOST), (0, "2001:db8:1::2", HOST), (0, "2001:db8:1::10", HOST), (0, "2001:db8:1::11", HOST), (1, "10.0.2.2", HOST), (1, "2001:db8:2::2", HOST), (2, "10.0.200.2", HOST)] {
        n.learn(i, ip.parse().unwrap(), mac, NeighSource::Static);
    }
    let mut pl = Pipeline::new(Arc::new(topo), Arc::new(fib), Arc::new(n), Arc::new(WorkerCounters::default()), PipelineConfig::default());
    let mut t = SidTable::new(&Params::DEFAULT);
    t.insert(a6("fc00:0:1::1"), Behaviour::End);
    t.insert(a6("fc00:0:1::6"), Behaviour::EndDT6);
    t.insert(
        a6("fc00:0:1::a"),
        Behaviour::EndMT { receivers_extra: vec![(a6("2001:db8:1::10"), 0x500)], hmac_required: false, downstream: vec![a6("fc00:0:9::a")] },
    );
    t.insert(a6("fc00:0:1::c"), Behaviour::EndC);
    t.insert(a6("fc00:0:1::e"), Behaviour::EndE);
    t.endc = vec![(0, dataplane::endc::EndCConfig::default())];
    t.add_policy(
        "2001:db8:77::/48".parse().unwrap(),
        SrPolicy::new(a6("2001:db8:2::1"), EncapMode::Encaps, vec![(vec![a6("fc00:0:9::1"), a6("fc00:0:9::2")], 1)]).unwrap(),
    );
    pl.set_sids(Arc::new(t));
    let id = GroupId { source: a6("2001:db8:3::5"), source_qpn: 0x100 };
    let top = GroupConfig::new(id, a6(PROXY), DQPN, vec![Receiver { addr: a6("2001:db8:1::10"), qpn: 0x500 }, Receiver { addr: a6("2001:db8:1::11"), qpn: 0x501 }]);
    let mut below = GroupConfig::new(GroupId { source_qpn: 0x101, ..id }, a6(PROXY2), DQPN, vec![Receiver { addr: a6("2001:db8:1::10"), qpn: 0x510 }]);
    below.children = vec![a6("2001:db8:1::20")];
    below.node_address = Some(a6("2001:db8:2::1"));
    pl.set_groups(&[top, below], 0).unwrap();
    pl
}

/// The WAN's congestion-aware egress port: 100 Mb/s (12.5 B per µs of the
/// clock, so forwarded traffic queues), RTT_est 20 µs (K_max
/// = K_base 4 KiB, K_min 2 KiB), triggers evaluated every 10 µs, 16 flows,
/// flows idle for 200 µs aged out, round trips timed to the receivers'
/// ACKs.
fn egress() -> EgressPort<VecPacket> {
    let params = PortParams {
        rate_bps: 100_000_000,
        rtt_est_ns: 20_000,
        k_base_bytes: 4096,
        k_min_bytes: Some(2048),
        interval_ns: 10_000,
        flow_capacity: 16,
        flow_idle_timeout_ns: 200_000,
        // RTT_est from the receivers' ACKs: fuzzed responses end timings.
        ack_rtt: Some(dataplane::congestion::AckRttParams { window_ns: 1_000_000, timeout_ns: 100_000 }),
        ..PortParams::default()
    };
    let notify_sids = vec![("2001:db8:1::/64".parse().unwrap(), a6("fc00:0:9::c"))];
    // Flows in tunnels from 2001:db8:1::99 are tagged with that PE.
    let tunnel_pes = vec![("2001:db8:1::99/128".parse().unwrap(), a6("fc00:0:99::e"))];
    let spec = CongestionSpec { params, source_v4: None, source_v6: None, end_e_sid: None, notify_sids, tunnel_pes, source_qps: Vec::new(), source_formats: Vec::new(), auth: Default::default() };
    let cfg = EgressConfig { rate_bps: 100_000_000, queue_bytes: 64 * 1024, burst_bytes: 2048, max_packets: 256, priority_packets: 32, frame_overhead: dataplane::egress::ETHERNET_FRAME_OVERHEAD, priority_percent: dataplane::egress::DEFAULT_PRIORITY_PERCENT };
    EgressPort::new(cfg, Some(spec))
}

struct State {
    /// Set while an input is being processed: still set on entry means the
    /// previous input panicked.
    busy: bool,
    pl: Pipeline,
    wan: EgressPort<VecPacket>,
    counters: WorkerCounters,
    reqs: Vec<CnpRequest>,
    now: u64,
}

thread_local! {
    static PL: RefCell<State> = RefCell::new(fresh());
}

/// The WAN port honours received PFC for priorities 3 and 5 (DSCP 26 is
/// 3) and 802.3x PAUSE, quanta at 100 Mb/s (5.12 µs each, a few inputs of
/// the clock), so pauses start, overlap and end while data queues.
fn pfc_rx() -> Arc<PortPause> {
    let mut c = PfcRxConfig::with_default_priority(1 << 3 | 1 << 5, true, 0);
    c.dscp_priority[26] = 3;
    c.link_bps = 100_000_000;
    Arc::new(PortPause::new(c))
}

fn fresh() -> State {
    let pp = pfc_rx();
    let mut pl = build();
    pl.pfc_rx = vec![None, Some(pp.clone())];
    State { busy: false, pl, wan: egress().with_pfc(pp), counters: WorkerCounters::default(), reqs: Vec::with_capacity(64), now: 1_000_000_000 }
}

/// Out on `port`: into the WAN's egress queue (the priority queue for the
/// router's own replies and notifications, as the worker does), or gone.
fn out(st: &mut State, port: u16, p: VecPacket, priority: bool) {
    if port == 1 {
        let _ = if priority { st.wan.admit_priority(p) } else { st.wan.admit(p, st.now, &st.counters) };
    }
}

pub fn run_pipeline(data: &[u8]) {
    let Some((&sel, frame)) = data.split_first() else { return };
    let port = u16::from(sel & 1);
    PL.with(|cell| {
        let st = &mut *cell.borrow_mut();
        if st.busy {
            *st = fresh();
        }
        st.busy = true;
        st.now += 1_000;
        let now = st.now;
        if let Some(meta) = dataplane::classify::roce_meta(frame) {
            st.wan.observe_roce(&meta, now);
        }
        // A burst: the frame 1 + (sel >> 4) times (queues build up).
        for _ in 0..=(sel >> 4) {
            one(st, port, sel, frame, now);
        }
        // The worker's loop after a burst: the WAN's shaper, then its
        // second-level triggers and their CNPs.
        worker_loop(st, now);
        st.busy = false;
    });
}

/// One frame through the fast path (when `sel` says so) and the full one,
/// out to the WAN's queue.
fn one(st: &mut State, port: u16, sel: u8, frame: &[u8], now: u64) {
    let mut slow = true;
    if sel & 2 != 0 {
        let mut f = frame.to_vec();
        let mut o = [0u16; 1];
        st.pl.fast_burst(port, &mut [f.as_mut_slice()], &mut o);
        slow = o[0] == dataplane::fastpath::SLOW;
        if slow {
            assert_eq!(f, frame, "a frame left to the slow path is untouched");
        } else {
            out(st, o[0], VecPacket::from_bytes(&f), false);
        }
    }
    if slow {
        let mut p = VecPacket::from_bytes(frame);
        let v = st.pl.process(&mut p, port, now);
        let reply = st.pl.reply;
        match v {
            Verdict::Replicate(k) => {
                for i in 0..usize::from(k) {
                    let mut c = VecPacket::from_bytes(&[]);
                    if let Ok(o) = st.pl.build_replica(i, &p, &mut c, now) {
                        out(st, o, c, reply);
                    }
                }
            }
            Verdict::Tx(o) => out(st, o, p, reply),
            _ => {}
        }
    }
}

/// What the worker does after a burst.
fn worker_loop(st: &mut State, now: u64) {
    let mut sent = Vec::new();
    st.wan.dequeue(now, 64, |_, len, flow, prio| {
        if !prio {
            sent.push((flow, len));
        }
    });
    for (flow, len) in sent {
        st.wan.sent(flow, len, now);
    }
    let mut reqs = std::mem::take(&mut st.reqs);
    st.wan.poll(now, &mut reqs);
    for r in &reqs {
        let mut m = VecPacket::from_bytes(&[]);
        if let Ok(o) = st.wan.build_cnp_packet(&mut st.pl, &Params::DEFAULT, r, &mut m, now) {
            out(st, o, m, true);
        }
    }
    reqs.clear();
    st.reqs = reqs;
    st.pl.poll_multicast(now);
    let pending = std::mem::take(&mut st.pl.mc_pending);
    for (g, up) in &pending {
        let mut c = VecPacket::from_bytes(&[]);
        if let Ok(o) = st.pl.build_mc_upstream(*g, up, &mut c, now) {
            out(st, o, c, true);
        }
    }
    st.pl.mc_pending = pending;
    st.pl.mc_pending.clear();
    st.pl.poll_endc(now);
    while let Some((iface, a)) = st.pl.pfc_pending.pop() {
        let mut c = VecPacket::from_bytes(&[]);
        if let Some(o) = st.pl.build_pfc(iface, &a, &mut c) {
            out(st, o, c, true);
        }
    }
    let solicits = std::mem::take(&mut st.pl.solicits);
    for so in &solicits {
        let mut c = VecPacket::from_bytes(&[]);
        if let Some(o) = st.pl.build_solicit(&mut c, so, st.now) {
            out(st, o, c, true);
        }
    }
    st.pl.solicits = solicits;
    st.pl.solicits.clear();
    st.pl.events.clear();
}

fn eth(dst: MacAddr, ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = dst.to_vec();
    f.extend_from_slice(&HOST);
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

fn ipv6(src: &str, dst: &str, nh: u8, hop: u8, payload: &[u8]) -> Vec<u8> {
    let mut h = vec![0x60, 0, 0, 0];
    h.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    h.extend_from_slice(&[nh, hop]);
    h.extend_from_slice(&a6(src).octets());
    h.extend_from_slice(&a6(dst).octets());
    h.extend_from_slice(payload);
    h
}

/// A receiver's response to a group's Proxy Address (valid ICRC).
fn response(from: &str, proxy: &str, up: Upstream) -> Vec<u8> {
    let mirror = GroupConfig::new(GroupId { source: a6(proxy), source_qpn: DQPN }, a6(from), 0, vec![Receiver { addr: a6(proxy), qpn: 0 }]);
    let mut b = vec![0u8; upstream_len(&up)];
    let n = build_upstream(&up, &mirror, &mut b).unwrap_or(0);
    b.truncate(n);
    b
}

/// A RoCEv2 SEND ONLY from the source to the proxy (valid ICRC).
fn data(psn: u32) -> Vec<u8> {
    let mut u = vec![0xc1, 0x00, 0x12, 0xb7, 0, 0, 0, 0];
    let mut bth = [0u8; 12];
    bth[0] = 0x04;
    bth[2..4].copy_from_slice(&[0xff, 0xff]);
    bth[5..8].copy_from_slice(&DQPN.to_be_bytes()[1..]);
    bth[9..12].copy_from_slice(&psn.to_be_bytes()[1..]);
    u.extend_from_slice(&bth);
    u.extend_from_slice(&[0x5a; 64]);
    u.extend_from_slice(&[0; 4]);
    let l = u.len() as u16;
    u[4..6].copy_from_slice(&l.to_be_bytes());
    let mut d = ipv6("2001:db8:3::5", PROXY, 17, 64, &u);
    let _ = roce::icrc_fill(&mut d);
    d
}

/// A MAC Control frame to 01:80:c2:00:00:01: `opcode`, then `rest`
/// (the PFC vector and times, or the PAUSE time), padded to 60 octets.
fn pfc_frame(opcode: u16, rest: &[u8]) -> Vec<u8> {
    let mut f = eth([0x01, 0x80, 0xc2, 0, 0, 0x01], 0x8808, &opcode.to_be_bytes());
    f.extend_from_slice(rest);
    f.resize(60, 0);
    f
}

/// [`roce_transit`] with the traffic class's DSCP set (the ICRC masks the
/// traffic class).
fn roce_transit_dscp(psn: u32, dscp: u8) -> Vec<u8> {
    let mut d = roce_transit(psn);
    let tc = dscp << 2 | 2;
    d[0] = 0x60 | tc >> 4;
    d[1] = (d[1] & 0x0f) | tc << 4;
    d
}

/// A RoCEv2 SEND ONLY from a DC host to the WAN (ECT(0), valid ICRC): a
/// flow of the congestion-aware port.
fn roce_transit(psn: u32) -> Vec<u8> {
    let mut d = data(psn);
    d[8..24].copy_from_slice(&a6("2001:db8:1::2").octets());
    d[24..40].copy_from_slice(&a6("2001:db8:9::9").octets());
    d[1] |= 0x20; // traffic class ECT(0)
    let _ = roce::icrc_fill(&mut d);
    d
}

/// [`roce_transit`] as a UD SEND ONLY (opcode 0x64) with its DETH
/// (Q_Key, source QP `src_qp`): a flow keyed by both QPs.
fn roce_ud(psn: u32, src_qp: u32) -> Vec<u8> {
    let mut d = roce_transit(psn);
    d[40 + 8] = 0x64;
    let mut deth = vec![0x80, 0x01, 0, 0, 0];
    deth.extend_from_slice(&src_qp.to_be_bytes()[1..]);
    d.splice(40 + 8 + 12..40 + 8 + 12, deth);
    let plen = (d.len() - 40) as u16;
    d[4..6].copy_from_slice(&plen.to_be_bytes());
    d[40 + 4..40 + 6].copy_from_slice(&plen.to_be_bytes());
    let _ = roce::icrc_fill(&mut d);
    d
}

/// The identifier of the RTT probes ([`build`]).
const ECHO_ID: u16 = 0x4242;

/// An Echo Reply from `src` to `dst` to an RTT probe (checksums filled).
fn echo_reply(src: &str, dst: &str) -> Vec<u8> {
    dataplane::rttprobe::echo_reply(src.parse().unwrap(), dst.parse().unwrap(), ECHO_ID, 1, &[7; dataplane::rttprobe::PROBE_DATA])
}

/// Fragment `i` (of 2, 32 octets of the inner packet in the first) of a
/// tunnel packet to the End.DT6 SID carrying `udp` to the DC host.
fn tunnel_fragment(udp: &[u8], i: usize) -> Vec<u8> {
    let inner = ipv6("2001:db8:3::5", "2001:db8:1::2", 17, 64, udp);
    let part = if i == 0 { &inner[..32] } else { &inner[32..] };
    let mut fh = vec![41, 0];
    fh.extend_from_slice(&(((i * 32) as u16) | u16::from(i == 0)).to_be_bytes());
    fh.extend_from_slice(&0xf00d_0001u32.to_be_bytes());
    fh.extend_from_slice(part);
    ipv6("2001:db8:3::5", "fc00:0:1::6", 44, 64, &fh)
}

pub fn seeds_pipeline() -> Vec<Vec<u8>> {
    let ack = Upstream::Ack { psn: 1, msn: 1, credits: 31 };
    let udp = [0x30, 0x39, 0x30, 0x39, 0, 12, 0, 0, 1, 2, 3, 4];
    let mut udp4 = vec![0x45, 0x02, 0, 32, 0, 1, 0x40, 0, 64, 17, 0, 0, 10, 0, 1, 2, 10, 0, 4, 9];
    let c = dataplane::wire::checksum::checksum(&udp4);
    udp4[10..12].copy_from_slice(&c.to_be_bytes());
    udp4.extend_from_slice(&udp);
    // To the ECMP route, without DF (fragmented on a small MTU).
    let mut ecmp4 = udp4.clone();
    ecmp4[6] = 0;
    ecmp4[18] = 5;
    ecmp4[10..12].fill(0);
    let c = dataplane::wire::checksum::checksum(&ecmp4[..20]);
    ecmp4[10..12].copy_from_slice(&c.to_be_bytes());
    let frames: Vec<(u8, Vec<u8>)> = vec![
        (2, eth(R0, 0x86dd, &ipv6("2001:db8:1::2", "2001:db8:77::1", 17, 64, &udp))),
        (2, eth(R0, 0x0800, &udp4)),
        (2, eth(R0, 0x0800, &ecmp4)),
        (2, eth(R0, 0x86dd, &ipv6("2001:db8:1::2", "2001:db8:5::7", 17, 64, &udp))),
        (0, eth(R0, 0x86dd, &response("2001:db8:1::10", PROXY, ack))),
        (0, eth(R0, 0x86dd, &response("2001:db8:1::11", PROXY, Upstream::Cnp { branch: 0, ccount: 0 }))),
        (0, eth(R0, 0x86dd, &response("2001:db8:1::20", PROXY2, ack))),
        (1, eth(R1, 0x86dd, &data(1))),
        (0xf2, eth(R0, 0x86dd, &roce_transit(7))),
        (0xf0, eth(R0, 0x86dd, &roce_transit(8))),
        // Two UD QPs of one host to one QP: two flows (DETH source QPs).
        (0xf2, eth(R0, 0x86dd, &roce_ud(1, 0x11))),
        (0xf2, eth(R0, 0x86dd, &roce_ud(1, 0x12))),
        (1, eth(R1, 0x86dd, &ipv6("2001:db8:3::5", "fc00:0:1::6", 41, 64, &ipv6("2001:db8:3::5", "2001:db8:1::2", 17, 64, &udp)))),
        (0, eth([0xff; 6], 0x0806, &[0, 1, 8, 0, 6, 4, 0, 1, 2, 0, 0, 0, 1, 2, 10, 0, 1, 2, 0, 0, 0, 0, 0, 0, 10, 0, 1, 1])),
        // The WAN neighbour's PFC (priority 3 for 40 quanta, priority 5
        // resumed), its 802.3x PAUSE, and data at DSCP 26 that the pause
        // holds.
        (1, pfc_frame(0x0101, &[0x00, 0x28, 0, 0, 0, 0, 0, 0, 0, 40, 0, 0, 0, 0, 0, 0, 0, 0])),
        (1, pfc_frame(0x0001, &[0, 20])),
        (0xf2, eth(R0, 0x86dd, &roce_transit_dscp(9, 26))),
        // RoCEv2 in a PE's IPv6 tunnel through the WAN port (tagged).
        (0xf2, eth(R0, 0x86dd, &ipv6("2001:db8:1::99", "2001:db8:9::9", 41, 64, &roce_transit(10)))),
        // RoCEv2 asking for an ACK (AckReq), and the receiver's ACK for
        // it: a round trip timed for RTT_est.
        (0xf2, eth(R0, 0x86dd, &{
            let mut d = roce_transit(11);
            d[40 + 8 + 8] |= 0x80;
            let _ = roce::icrc_fill(&mut d);
            d
        })),
        (1, eth(R1, 0x86dd, &response("2001:db8:9::9", "2001:db8:1::2", Upstream::Ack { psn: 11, msn: 1, credits: 31 }))),
        // Echo Replies to the RTT probes, over IPv6 and IPv4.
        (1, eth(R1, 0x86dd, &echo_reply("2001:db8:2::2", "2001:db8:2::1"))),
        (1, eth(R1, 0x0800, &echo_reply("10.0.2.2", "10.0.2.1"))),
        // A tunnel packet to End.DT6 that its headend fragmented (RFC 2473
        // s.7.1): its two fragments, reassembled at the SID.
        (1, eth(R1, 0x86dd, &tunnel_fragment(&udp, 0))),
        (1, eth(R1, 0x86dd, &tunnel_fragment(&udp, 1))),
    ];
    frames
        .into_iter()
        .map(|(sel, f)| {
            let mut v = vec![sel];
            v.extend_from_slice(&f);
            v
        })
        .collect()
}
