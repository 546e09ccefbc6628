//! README "Configuration reference" against `control::config::load_str`,
//! from a review: each test failed on the code before its fix; its "Rule"
//! quotes the README, its "Was" says what the code does. No DPDK is
//! needed: `load_str` only parses and validates.

use control::config::load_str;

#[path = "support/config_ports.rs"]
mod config_ports;
use config_ports::PORTS;

/// An SR policy (appended to `PORTS`), the least an `[ingress_pe]` needs.
const SRV6: &str = r#"
[srv6]
locator = "fc00:0:1::/48"

[[srv6.sid]]
sid = "fc00:0:1::1"
behaviour = "end"

[[srv6.policy]]
prefix = "10.9.0.0/16"
segments = [["fc00:0:2::1"]]
"#;

/// `base` is accepted, and `text` (`base` with one key more) must be
/// refused with every one of `needles` in the message.
fn refused(base: &str, text: &str, needles: &[&str]) {
    if let Err(e) = load_str(base) {
        panic!("test bug: the base configuration is refused: {e}");
    }
    match load_str(text) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => {
            for n in needles {
                assert!(e.contains(n), "refused, but the message does not name {n:?}: {e}");
            }
        }
    }
}

/// Rule: README "Configuration reference": "`neighbour_queue_ms` | 3000 |
/// how long a packet waits ...; looked at every 50 ms; 50..=60000", and
/// "Unknown keys are errors, and so is a key that would have no effect
/// where it stands". Was: with `neighbour_queue_packets = 0` (no packet
/// waits) the range is not checked at all (config.rs `validate`, the
/// `if d.neighbour_queue_packets > 0` block): `neighbour_queue_ms = 1` is
/// accepted, though it is out of range and has no effect.
#[test]
fn neighbour_queue_ms_out_of_range_is_refused_with_the_queue_off() {
    let base = format!("[dataplane]\nneighbour_queue_packets = 0\n{PORTS}");
    let text = format!("[dataplane]\nneighbour_queue_packets = 0\nneighbour_queue_ms = 1\n{PORTS}");
    refused(&base, &text, &["dataplane.neighbour_queue_ms", "1"]);
}

/// Rule: README "Configuration reference": "`neighbour_queue_total` | ... |
/// most mbufs waiting per worker ...; when set, at least
/// `neighbour_queue_packets` and all workers' together at most a quarter
/// of the pool", and "so is a key that would have no effect where it
/// stands". Was: with `neighbour_queue_packets = 0` it is not checked
/// (same block as above): `neighbour_queue_total = 1000000000` on a pool
/// of 16383 mbufs is accepted.
#[test]
fn neighbour_queue_total_beyond_the_pool_is_refused_with_the_queue_off() {
    let base = format!("[dataplane]\nneighbour_queue_packets = 0\n{PORTS}");
    let text = format!("[dataplane]\nneighbour_queue_packets = 0\nneighbour_queue_total = 1000000000\n{PORTS}");
    refused(&base, &text, &["dataplane.neighbour_queue_total", "1000000000"]);
}

/// Rule: README "Configuration reference": "Unknown keys are errors, and so
/// is a key that would have no effect where it stands", with
/// "`[ingress_pe]` ... `source_v4` | absent | the PE's IPv4 address ..., the
/// source of the notifications to IPv4 senders" and "`notify_senders` |
/// false | ... re-originated to that flow's source ... from `source_v4` to
/// an IPv4 sender". Was: `source_v4` without `notify_senders = true` is
/// accepted (config.rs `ingress_pe_plan` checks only that it is an
/// interface's address), though only the sender notifications use it
/// (dataplane/src/fann.rs, `sender_packet`).
#[test]
fn ingress_pe_source_v4_without_notify_senders_is_refused() {
    let base = format!("{PORTS}{SRV6}[ingress_pe]\nknown_nodes = [\"2001:db8:ff::7\"]\n");
    let text = format!("{base}source_v4 = \"10.0.1.1\"\n");
    refused(&base, &text, &["ingress_pe.source_v4"]);
}
