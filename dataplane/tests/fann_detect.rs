//! How a WAN node detects the FANN events it notifies
//! (draft-hzh-fantel-wan-tunnel-03 s.4, s.5.1.2, s.5.1.3;
//! `dataplane/src/fann.rs` `Detector`, `dataplane/src/egress.rs`
//! `MicroburstWatch`), from a review: each test failed on the code before
//! its fix ("Was"); virtual time throughout (ns).

use dataplane::egress::{MicroburstConfig, MicroburstWatch};
use dataplane::fann::{Detector, DetectorConfig, Notification};
use dataplane::wire::fann::{event, CODE_EVENT};
use std::net::Ipv6Addr;

const MS: u64 = 1_000_000;

fn node() -> Ipv6Addr {
    "fc00::1".parse().unwrap()
}

fn congestion(out: &[Notification]) -> Vec<(u8, u8, Option<u32>)> {
    out.iter().filter(|n| n.code == CODE_EVENT && n.message.event_type == event::CONGESTION).map(|n| (n.code, n.message.event_subtype, n.message.metadata.egress_tx_utilization)).collect()
}

/// Rule: draft s.5.1.2, Event Sub-Type "for Congestion (Event Type = 0x02):
/// 0x01 for mild ( > 50% utilization), 0x02 for moderate ( > 70%), 0x03 for
/// severe ( > 90%)"; s.5.1.3 bit 4 "Real-time bandwidth utilization of the
/// egress interface". Utilisation is relative to the link (or R_port).
/// Was: `FannAgent` hands the detector `link_bps = 0` for an unshaped port
/// whose link reported no speed when the router started (link still down;
/// `[fann]` plans carry `link_bps: 0`), and `Detector::on_tx` turns 0 into
/// 1 b/s (`link_bps.max(1)`): 8 Mb/s of traffic is 100 % and a severe
/// Congestion event stands for as long as any traffic flows.
#[test]
fn an_unknown_link_speed_is_not_one_bit_per_second() {
    let mut d = Detector::new(DetectorConfig { node: node(), link_bps: 0, ..DetectorConfig::default() }, 1, 10);
    let mut out = Vec::new();
    d.on_tx(0, 0, None, 0, &mut out);
    // 1 KB per ms: 8 Mb/s, a trickle on any WAN link.
    for i in 1..=5u64 {
        d.on_tx(1_000, 0, None, i * MS, &mut out);
    }
    assert_eq!(congestion(&out), vec![], "8 Mb/s reported as congestion of a link of unknown speed");
}

/// Rule: draft s.5.1.2, "0x03 for severe ( > 90%)" (and mild above 50 %,
/// moderate above 70 %); the module doc: "sub-type 1 / 2 / 3 above 50 /
/// 70 / 90 %". Was: `on_tx` truncates the utilisation to a whole percent before
/// comparing (`u > 90` on the floor), so 90.9 % is only moderate (and
/// 50.9 % no congestion at all).
#[test]
fn utilisation_just_above_ninety_percent_is_severe() {
    // 8 Gb/s: 1 ms carries 1 MB at 100 %.
    let mut d = Detector::new(DetectorConfig { node: node(), link_bps: 8_000_000_000, ..DetectorConfig::default() }, 1, 10);
    let mut out = Vec::new();
    d.on_tx(0, 0, None, 0, &mut out);
    d.on_tx(909_000, 0, None, MS, &mut out); // 90.9 %
    let got: Vec<u8> = congestion(&out).iter().map(|c| c.1).collect();
    assert_eq!(got, vec![event::CONGESTION_SEVERE], "90.9 % utilisation is > 90 %");
}

/// Rule: the `DetectorConfig::interval_ns` doc ("Utilisation measurement
/// interval") gives no lower bound and `Detector` is public; a panic on a
/// configuration value is a crash of the control thread. (The `[fann]`
/// config refuses `interval_us = 0`, so the router itself cannot reach it.)
/// Was: with `interval_ns = 0`, `on_tx` at the window's start time divides
/// by `dt * link_bps = 0` and panics.
#[test]
fn a_zero_interval_does_not_divide_by_zero() {
    let mut d = Detector::new(DetectorConfig { node: node(), interval_ns: 0, ..DetectorConfig::default() }, 1, 10);
    let mut out = Vec::new();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        d.on_tx(1_500, 0, None, 0, &mut out);
    }));
    assert!(r.is_ok(), "on_tx panicked with interval_ns = 0");
}

/// Rule: draft s.5.1.3, "Bit 0: Ingress Port ID (4 bytes) Interface
/// identifier where the event was observed on the ingress side" / "Bit 1:
/// Egress Port ID ... where the event was observed on the egress side"
/// (and bits 2 / 3, the Ingress / Egress Timestamp). Receive losses (the
/// NIC missed the packets or had no buffer: `Detector::on_errors`' `lost`)
/// are observed on the ingress side of the port.
/// Was: the Performance degradation event for receive losses carries only
/// the Egress Port ID (and Egress Timestamp) (`base_md`), so the PE is told
/// the port's egress side degraded, and no Ingress Port ID.
#[test]
fn receive_losses_are_located_on_the_ingress_side() {
    let mut d = Detector::new(DetectorConfig { node: node(), ..DetectorConfig::default() }, 7, 10);
    let mut out = Vec::new();
    // 50 packets lost on receive in 100 ms: 500/s >= 100/s.
    d.on_errors(0, 50, 100 * MS, &mut out);
    assert_eq!(out.len(), 1);
    let m = &out[0].message;
    assert_eq!((m.event_type, m.metadata.packet_loss), (event::PERFORMANCE_DEGRADATION, Some(50)));
    assert_eq!(m.metadata.ingress_port_id, Some(7), "receive losses observed on port 7's ingress side: {:?}", m.metadata);
}

/// Rule: `dataplane/src/egress.rs` `MicroburstWatch` doc: "any growth by
/// more than `bytes` that happens within half a window is caught, and
/// growth is never measured over more than a full window" (draft s.4 /
/// module doc: "queue growth of more than `microburst_bytes` within
/// `microburst_window_ns`").
/// Was: a bucket closes at the first sample `half` or more after it
/// opened, so the previous bucket's minimum can be up to one sample gap
/// older than a window: sampled every 45 us, a queue growing 90 KB per
/// 100 us (never 100 KB within any window) is counted a 100 KB microburst,
/// its growth measured over 135 us.
#[test]
fn microburst_growth_is_not_measured_over_more_than_a_window() {
    let mut w = MicroburstWatch::new(MicroburstConfig { bytes: 100_000, window_ns: 100_000 });
    // 900 B per us: 90 KB per 100 us window.
    let mut fired = Vec::new();
    for i in 0..=20u64 {
        let t_us = 45 * i;
        if w.observe(t_us * 1000, 900 * t_us) {
            fired.push(t_us);
        }
    }
    assert_eq!(fired, Vec::<u64>::new(), "growth of 90 KB per 100 us counted a microburst of > 100 KB within 100 us");
}
