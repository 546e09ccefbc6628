//! What the router tells the operator (`control::display`, the demo's
//! pcap readers), from a review: each test failed on the code before its
//! fix ("Was").

use control::gen::{self, L2};
use dataplane::congestion::CongestionView;
use dataplane::counters::{Drop, Local, Snapshot};
use std::net::{Ipv4Addr, Ipv6Addr};

/// The column (in chars) where each indented `name value` line's value
/// ends, for the lines `pick` selects.
fn value_ends(text: &str, pick: impl Fn(&str) -> bool) -> Vec<(usize, &str)> {
    text.lines().filter(|l| pick(l)).map(|l| (l.trim_end().chars().count(), l)).collect()
}

/// Rule: `show counters` / the exit table right-align every drop and
/// local counter's value in one column, as wide as the longest name needs.
/// Was: a 28-character name column, which five names overran.
#[test]
fn counter_table_values_line_up_for_every_counter_name() {
    let s = Snapshot { drops: vec![7; Drop::ALL.len()], local: vec![7; Local::ALL.len()], ..Default::default() };
    let t = control::display::counter_table(&s, &[(0, "dc".to_string())], &[]);
    let rows = value_ends(&t, |l| l.starts_with("  ") && l.trim_end().ends_with(" 7"));
    assert!(rows.len() > 100, "{t}");
    let longest = Drop::ALL.iter().map(|r| r.name().len()).chain(Local::ALL.iter().map(|l| l.name().len())).max().unwrap();
    let want = 2 + longest + 1 + 12;
    let off: Vec<&str> = rows.iter().filter(|(end, _)| *end != want).map(|(_, l)| *l).collect();
    assert!(off.is_empty(), "counter lines whose value is not in the column ending at {want}:\n{}", off.join("\n"));
}

/// Rule: `show congestion`'s per-port rows keep one value column. Was: the
/// key `cnp-source-qp-unknown-skipped` (29 characters) overran a
/// 28-character column and `source-qps-from-responses` carried three more
/// counts in its value (now rows of their own).
#[test]
fn show_congestion_rows_line_up() {
    let v = CongestionView::default();
    let t = control::display::congestion(&[(1, v)], &[(1, "wan".to_string())], &[], &[]);
    let rows = value_ends(&t, |l| l.starts_with("  ") && !l.starts_with("   ") && !l.contains(':'));
    assert!(rows.len() > 30, "{t}");
    let want = rows[0].0;
    let off: Vec<&str> = rows.iter().filter(|(end, _)| *end != want).map(|(_, l)| *l).collect();
    assert!(off.is_empty(), "rows whose value is not in the column ending at {want}:\n{}", off.join("\n"));
    for k in ["source-qps-from-responses", "source-qps-unmatched", "source-qps-ambiguous", "source-qps-walk-limited", "cnp-source-qp-unknown-skipped"] {
        assert!(t.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == [k, "0"]), "{k}: {t}");
    }
}

/// Rule: the demo's pcap readers never panic on short frames. Was:
/// `demo::describe` on a well-formed IPv4 UDP datagram to port 4791
/// shorter than a BTH checked `p.len() >= hl + 8` and read hl + 13..16.
#[test]
fn describe_does_not_panic_on_a_short_udp_4791_datagram() {
    let l2 = L2 { src: [2, 0, 0, 0, 0, 1], dst: [2, 0, 0, 0, 0, 2] };
    let f = gen::udp4(&l2, Ipv4Addr::new(10, 0, 1, 2), Ipv4Addr::new(10, 0, 3, 2), 49152, 4791, b"abc", 64);
    let d = std::panic::catch_unwind(|| control::demo::describe(&f));
    assert!(d.is_ok(), "describe panicked on a 45-byte IPv4/UDP frame to port 4791");
}

/// Was: `demo::unresolved_outcome` indexed `f[..6]` before its length
/// check.
#[test]
fn unresolved_outcome_does_not_panic_on_a_runt_frame() {
    let r = std::panic::catch_unwind(|| control::demo::unresolved_outcome(&[vec![0x02, 0x00, 0x00]]));
    assert!(r.is_ok(), "unresolved_outcome panicked on a 3-byte frame");
}

/// Was: `demo::mld_outcome` checked `len >= 14 + 48` and read f[14 + 48]
/// (63 bytes) of an IPv6 frame with a Hop-by-Hop header.
#[test]
fn mld_outcome_does_not_panic_on_a_62_byte_hop_by_hop_frame() {
    let mut f = vec![0x33, 0x33, 0, 0, 0, 1, 2, 0, 0, 0, 0, 1, 0x86, 0xdd];
    let mut ip = vec![0u8; 48];
    ip[0] = 0x60;
    ip[5] = 8;
    ip[6] = 0; // Hop-by-Hop
    ip[7] = 1;
    ip[8..24].copy_from_slice(&"fe80::1".parse::<Ipv6Addr>().unwrap().octets());
    ip[24..40].copy_from_slice(&"ff02::1".parse::<Ipv6Addr>().unwrap().octets());
    ip[40] = 58;
    f.extend_from_slice(&ip);
    assert_eq!(f.len(), 62);
    let r = std::panic::catch_unwind(|| control::demo::mld_outcome(&[f]));
    assert!(r.is_ok(), "mld_outcome panicked on a 62-byte IPv6 + HBH frame");
}
