//! `control::fann_agent`, `control::isis` and the control thread's use of
//! `dataplane::rttprobe` (`control::router::RttProbeSlot`), from a review:
//! each test failed on the code before its fix (its "Was").

use control::fann_agent::{FannAgent, FannPlan};
use dataplane::fann::DetectorConfig;
use dataplane::wire::fann::{Packet, PacketRepr, CODE_RECOVERY};
use dataplane::wire::isis::{LocatorSubTlv, LocatorTlv, LocatorTlvRepr};
use dataplane::wire::params::Params;
use std::net::Ipv6Addr;

const MS: u64 = 1_000_000;

// ------------------------------------------------------------------ isis

fn locator_sids(cfg_text: &str) -> (ipnet::Ipv6Net, Vec<(u16, Ipv6Addr, Option<dataplane::wire::isis::SidStructure>)>) {
    let cfg = control::config::load_str(cfg_text).unwrap();
    let t = control::isis::tlvs(&cfg).unwrap();
    let loc = LocatorTlvRepr::parse(&LocatorTlv::new_checked(&t[1].1[..]).unwrap()).unwrap();
    let e = &loc.entries[0];
    let net = ipnet::Ipv6Net::new(e.locator, e.loc_size).unwrap();
    let sids = e
        .sub_tlvs
        .iter()
        .filter_map(|s| match s {
            LocatorSubTlv::EndSid(x) => Some((
                x.behavior,
                x.sid,
                x.sub_tlvs.iter().find_map(|t| match t {
                    dataplane::wire::isis::EndSidSubTlv::Structure(s) => Some(*s),
                    _ => None,
                }),
            )),
            _ => None,
        })
        .collect();
    (net, sids)
}

/// Rule (RFC 9352 s.7.2: an End SID advertised under a locator falls
/// within it; receivers ignore one that does not): a SID outside the
/// locator is left out and said so. configs/endmt-edge.toml's shape: the
/// End.MT SID is the tree's multicast group (config.rs allows an End.MT SID
/// outside the locator when it is a routable multicast group).
/// Was: advertised as an End SID sub-TLV of fc00:0:5::/48.
#[test]
fn isis_leaves_a_sid_outside_its_locator_out_of_it() {
    let text = "[[port]]\nname = \"p\"\ndevice = \"net_null0\"\naddresses = [\"2001:db8::1/64\"]\n[srv6]\nlocator = \"fc00:0:5::/48\"\nsource = \"fc00:0:5::1\"\n[[srv6.sid]]\nsid = \"ff3e::10\"\nbehaviour = \"end.mt\"\n[[srv6.sid]]\nsid = \"fc00:0:5::1\"\nbehaviour = \"end\"\n";
    let (net, sids) = locator_sids(text);
    let outside: Vec<_> = sids.iter().filter(|(_, s, _)| !net.contains(s)).collect();
    assert!(outside.is_empty(), "End SID sub-TLVs outside locator {net}: {outside:?}");
    assert_eq!(sids.len(), 1, "the End SID inside it is advertised: {sids:?}");
    let t = control::isis::tlvs(&control::config::load_str(text).unwrap()).unwrap();
    assert!(t[1].2.contains("(ff3e::10 END.MT: outside the locator, not advertised in it (RFC 9352 s.7.2); a multicast group, reached by multicast routing)"), "{}", t[1].2);
}

/// Rule (RFC 8986 s.3.1: "When L+F+A is less than 128, then the remaining
/// bits of the SID MUST be zero"): the SID structure covers the whole SID,
/// the function taking what the locator leaves. Was: function_len = 128 -
/// loc_bits.clamp(48, 128), so for fc00::/32 LB 32 + LN 0 + F 80 = 112 and
/// the function value of fc00::c lay in no field.
#[test]
fn isis_sid_structure_covers_the_sid_for_locators_shorter_than_48() {
    let text = "[[port]]\nname = \"p\"\ndevice = \"net_null0\"\naddresses = [\"2001:db8::1/64\"]\n[srv6]\nlocator = \"fc00::/32\"\n[[srv6.sid]]\nsid = \"fc00::c\"\nbehaviour = \"end\"\n";
    let (_, sids) = locator_sids(text);
    let (_, sid, st) = sids[0];
    let st = st.expect("a SID Structure sub-sub-TLV");
    let covered = st.total_bits();
    let tail_bits = if covered >= 128 { 0 } else { u128::from(sid) & ((1u128 << (128 - covered)) - 1) };
    assert_eq!(tail_bits, 0, "SID {sid} has non-zero bits beyond LB {} + LN {} + F {} + A {} = {covered}", st.locator_block_len, st.locator_node_len, st.function_len, st.argument_len);
    assert_eq!((st.locator_block_len, st.locator_node_len, st.function_len, st.argument_len), (32, 0, 96, 0));
}

// ------------------------------------------------------------------ FANN agent

fn parsed(ip: &[u8]) -> (Ipv6Addr, PacketRepr) {
    let src = Ipv6Addr::from(<[u8; 16]>::try_from(&ip[8..24]).unwrap());
    let dst = Ipv6Addr::from(<[u8; 16]>::try_from(&ip[24..40]).unwrap());
    (dst, PacketRepr::parse(&Packet::new_checked(&ip[40..]).unwrap(), &src, &dst, Params::DEFAULT.icmpv6_fann_type).unwrap())
}

/// Rule (fann.rs: "a refused notification (a recovery above all) is
/// delayed, never lost"): the node-wide limit, which the ports' detectors
/// share, serves the port that has waited longest first. Was: the ports
/// were served in a fixed order (port 0 first), so a port whose state kept
/// changing took every refill and another port's held recovery was never
/// sent: the PEs kept steering traffic off a link up for 30 s.
#[test]
fn a_flapping_port_does_not_starve_another_ports_held_recovery() {
    let pes: Vec<Ipv6Addr> = vec!["fc00::a".parse().unwrap(), "fc00::b".parse().unwrap()];
    let plan = FannPlan {
        node: "fc00::1".parse().unwrap(),
        ingress_pes: pes,
        encap: Vec::new(),
        path_ids: Vec::new(),
        udp: false,
        detector: DetectorConfig { node: "fc00::1".parse().unwrap(), rate_pps: 1, burst: 4, ..Default::default() },
    };
    let mut a = FannAgent::with_first_event_id(plan, Params::DEFAULT, &[(0, 100_000_000_000), (1, 100_000_000_000)], 1);
    assert!(a.poll(MS, |_| 0, |_| 0, |_| 0, |_| true).is_empty());
    // Both links fail: both failures go out (4 tokens for 2 x 2 PEs).
    let pkts = a.poll(2 * MS, |_| 0, |_| 0, |_| 0, |_| false);
    assert_eq!(pkts.len(), 4);
    // Port 1 comes back at 3 ms and stays up; port 0 flaps every ms.
    let mut port1_recovered_at = None;
    let mut port0_sent = 0;
    let mut t = 3 * MS;
    while t <= 30_000 * MS {
        let port0_up = (t / MS) % 2 == 1;
        for p in a.poll(t, |_| 0, |_| 0, |_| 0, move |port| port == 1 || port0_up) {
            let (_, r) = parsed(&p);
            match r.message.metadata.egress_port_id {
                Some(1) if r.code == CODE_RECOVERY => port1_recovered_at = port1_recovered_at.or(Some(t)),
                Some(0) => port0_sent += 1,
                _ => {}
            }
        }
        t += MS;
    }
    assert!(port1_recovered_at.is_some(), "port 1's link recovery was never sent in 30 s (node rate 1 notification / 2 s); port 0's flapping got {port0_sent} packets out");
}

// ------------------------------------------------------------------ RTT probe slot

/// Rule: `ctl congestion PORT rtt_probe off` then `on` starts a new window
/// (`RttProbeSlot::set_on`, which ctl calls). Here the path's RTT went
/// from 5 ms to 50 ms while probing was off (the operator set rtt_est_us =
/// 50000): the first new 50 ms reply keeps RTT_est at 50 ms. Was: the
/// window still held the round trips from before, however old, and that
/// reply moved RTT_est back to the stale 5 ms.
#[test]
fn rtt_probe_switched_back_on_follows_only_new_round_trips() {
    use control::router::RttProbeSlot;
    use dataplane::rttprobe::{ProbeConfig, RttProbe};
    let target: std::net::IpAddr = "2001:db8::2".parse().unwrap();
    let cfg = ProbeConfig { target, source: "2001:db8::1".parse().unwrap(), interval_ns: 100 * MS, timeout_ns: 500 * MS, window: 8, degraded_ns: 0 };
    let mut slot = RttProbeSlot::new(0, RttProbe::new(cfg, 1, 7, 0));
    let answer = |req: &[u8]| (u16::from_be_bytes([req[46], req[47]]), req[48..].to_vec());
    let mut now = 0;
    for _ in 0..3 {
        let (seq, data) = answer(&slot.probe.poll(now, true).unwrap());
        slot.probe.on_reply(target, seq, &data, now + 5 * MS);
        now += 100 * MS;
    }
    // Off for an hour (poll_rtt_probes skips slots that are off); RTT_est
    // set by hand to the new path's 50 ms.
    assert_eq!(slot.set_on(false, now), 0);
    now += 3_600_000 * MS;
    assert_eq!(slot.set_on(true, now), 0, "no probe was waiting");
    let params = dataplane::congestion::PortParams { rtt_est_ns: 50 * MS, ..Default::default() };
    let (seq, data) = answer(&slot.probe.poll(now, true).unwrap());
    slot.probe.on_reply(target, seq, &data, now + 50 * MS);
    let r = slot.follow(&params, "wan", 1 << 30);
    assert!(r.is_none(), "after the first reply since switching on (50 ms), RTT_est would move to {:?} ns (samples an hour old)", r.map(|x| x.map(|p| p.rtt_est_ns)));
}
