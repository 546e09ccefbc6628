//! `dcirouter demo` (what `make demo` runs) checked against its own pcaps,
//! counted independently with tshark (and the demo's Lua dissectors), and
//! the README's description of the demo checked against what it prints.
//! The demo runs once (a scratch directory under target/) for every test.
//! From a review: each test failed on the code before its fix ("Was").

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

struct Demo {
    dir: PathBuf,
    stdout: String,
}

/// One run of `dcirouter demo --out <scratch>`, bounded by RUN_DEADLINE.
fn demo() -> &'static Demo {
    static DEMO: OnceLock<Demo> = OnceLock::new();
    DEMO.get_or_init(|| {
        let dir = workdir("demo-oracle");
        let child = Command::new(bin())
            .arg("demo")
            .arg("--out")
            .arg(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn dcirouter demo");
        let out = wait_output(child, RUN_DEADLINE);
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(out.status.success(), "demo exited with {:?}:\n{stdout}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
        assert!(stdout.contains("== in short"), "no summary in:\n{stdout}");
        Demo { dir, stdout }
    })
}

/// Frames of `pcap` that tshark (with the demo's dissectors) shows under
/// display filter `filter`.
fn tshark_count(dir: &Path, pcap: &str, filter: &str) -> usize {
    let o = Command::new("tshark")
        .arg("-X")
        .arg(format!("lua_script:{}", dir.join("dcirouter.lua").display()))
        .arg("-n")
        .arg("-r")
        .arg(dir.join(pcap))
        .args(["-Y", filter, "-T", "fields", "-e", "frame.number"])
        .stdin(Stdio::null())
        .output()
        .expect("tshark is required (apt-get install tshark)");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "tshark -r {pcap} -Y '{filter}' failed: {err}");
    assert!(!err.to_lowercase().contains("lua"), "tshark reports a Lua problem: {err}");
    String::from_utf8_lossy(&o.stdout).lines().filter(|l| !l.trim().is_empty()).count()
}

/// The summary line (under "== in short") that starts with `prefix`.
fn summary_line<'a>(stdout: &'a str, prefix: &str) -> &'a str {
    stdout
        .split("== in short")
        .nth(1)
        .and_then(|s| s.lines().map(str::trim_start).find(|l| l.starts_with(prefix)))
        .unwrap_or_else(|| panic!("no summary line starting with {prefix:?} in:\n{stdout}"))
}

/// The number right after `key` in `text` (digits only).
fn number_after(text: &str, key: &str) -> Option<u64> {
    let at = text.find(key)? + key.len();
    let digits: String = text[at..].chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

/// The table of a port's congestion counters at exit (`congestion 'wan': ...`
/// up to the next port's).
fn congestion_block(stdout: &str, port: &str) -> String {
    let head = format!("congestion '{port}':");
    let mut lines = stdout.lines().skip_while(|l| !l.starts_with(&head));
    let first = lines.next().unwrap_or_else(|| panic!("no {head} table in:\n{stdout}"));
    std::iter::once(first).chain(lines.take_while(|l| l.starts_with(' '))).collect::<Vec<_>>().join("\n")
}

/// Rule: the summary's congestion line for 'wan' ("Long-haul CNPs sent:
/// rate-reduce R, pause P, notify N, resume S (not sent for want of a
/// format ... F, without a known source QP Q)") counts under "not sent"
/// only CNPs the router held back; for a missing source QP that is its
/// cnp-source-qp-unknown-skipped counter (dataplane/src/congestion/mod.rs:
/// `source_qp_unknown` is "CNPs sent without a known source QP",
/// `source_qp_unknown_skipped` "CNPs not sent because the flow's source QP
/// is unknown"), and what was sent is in dc-out.pcap. Was: Q is
/// cnp-source-qp-unknown (230): dc-out.pcap holds exactly those 230
/// Long-haul CNPs, sent with Source QP 0 (the RoCEv2-format ones to
/// 10.0.1.2 and the P-node ones to 2001:db8:8::2), counted inside R + P +
/// N + S, while cnp-source-qp-unknown-skipped is 0.
#[test]
fn summary_does_not_call_cnps_sent_without_a_source_qp_not_sent() {
    let d = demo();
    let line = summary_line(&d.stdout, "congestion on 'wan' (");
    let sent: u64 = ["rate-reduce ", "pause ", "notify ", "resume "]
        .iter()
        .map(|k| number_after(line.split("Long-haul CNPs sent: ").nth(1).unwrap_or(""), k).unwrap_or_else(|| panic!("no {k:?} count in: {line}")))
        .sum();
    // What the router itself sent (its own addresses as the source; the
    // CNP END.E decapsulated and forwarded from fc00:0:9::1 is not one).
    let ours = "lhcnp && (ip.src == 10.0.1.1 || ipv6.src == 2001:db8:1::1)";
    let in_pcap = tshark_count(&d.dir, "dc-out.pcap", ours) as u64;
    let qp0_in_pcap = tshark_count(&d.dir, "dc-out.pcap", &format!("{ours} && lhcnp.source_qp == 0")) as u64;
    assert_eq!(in_pcap, sent, "the Long-haul CNPs in dc-out.pcap are the ones the summary counts as sent: {line}");
    assert!(qp0_in_pcap > 0, "the demo sends Long-haul CNPs whose source QP it does not know (Source QP 0)");
    let skipped = value(&congestion_block(&d.stdout, "wan"), "cnp-source-qp-unknown-skipped");
    // The parenthesis that counts what was not sent, and its source-QP figure.
    let not_sent = line.split("(not sent").nth(1).map(|s| s.split(')').next().unwrap_or(s)).unwrap_or("");
    let claimed = number_after(not_sent, "source QP ");
    assert!(
        claimed.is_none_or(|q| q == skipped),
        "the summary says {} Long-haul CNPs were not sent for want of a known source QP, but the router held back {skipped} for that reason, and dc-out.pcap holds {qp0_in_pcap} CNPs it sent with Source QP 0 (of the {in_pcap} it sent): {line}",
        claimed.unwrap_or_default()
    );
}

/// Rule: README.md, "RTT_est by receiver reporting", describes the demo
/// as it is: the demo has a port with [port.congestion.rtt_acks] ('wan2',
/// its RC SENDs with AckReq in wan2-out.pcap, the ACKs to DestQP 0xb01 in
/// dc-out.pcap), whose summary line "RTT_est from the receivers' ACKs" the
/// README's own Quick start describes. Was: that section says "The demo is
/// a replay, whose ACKs would come in before the data leaves the queue, so
/// it has no such port".
#[test]
fn readme_receiver_reporting_section_knows_the_demo_has_an_rtt_acks_port() {
    let d = demo();
    let line = summary_line(&d.stdout, "RTT_est from the receivers' ACKs");
    assert!(line.contains("[port.congestion.rtt_acks] on 'wan2'"), "the demo's summary line: {line}");
    let ackreq = tshark_count(&d.dir, "wan2-out.pcap", "infiniband.bth.a == 1");
    let acks = tshark_count(&d.dir, "dc-out.pcap", "infiniband.bth.destqp == 0xb01 && infiniband.aeth");
    assert!(ackreq > 0 && acks > 0, "the demo times RC SENDs with AckReq ({ackreq} in wan2-out.pcap) to their ACKs ({acks} in dc-out.pcap)");
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).expect("README.md");
    let flat = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    let section = flat
        .split("### RTT_est by receiver reporting")
        .nth(1)
        .map(|s| s.split(" ##").next().unwrap_or(s))
        .expect("README.md has a section \"RTT_est by receiver reporting\"");
    assert!(
        !section.contains("it has no such port"),
        "README.md \"RTT_est by receiver reporting\" says the demo has no [port.congestion.rtt_acks] port, but the demo runs one on 'wan2' ({ackreq} SENDs with AckReq timed to {acks} ACKs) and prints: {line}"
    );
}

/// Rule: the summary line "MLD on 'dc'" gives the number of the DC host's
/// MLD Reports as dc-in.pcap has them (MLDv2 Report, type 143, RFC 9777
/// s.5.2; MLDv1 Report, type 131, RFC 2710 s.3; a Done, type 132, is not a
/// Report, and the line names the Done on its own: "after its MLDv1
/// Done"). Was: "the DC host's 3 reports" for 2 Reports and 1 Done in
/// dc-in.pcap (mld-report-received counts the Done too).
#[test]
fn summary_counts_the_dc_hosts_mld_reports_as_dc_in_has_them() {
    let d = demo();
    let line = summary_line(&d.stdout, "MLD on 'dc'");
    let reports = tshark_count(&d.dir, "dc-in.pcap", "icmpv6.type == 143 || icmpv6.type == 131") as u64;
    let dones = tshark_count(&d.dir, "dc-in.pcap", "icmpv6.type == 132") as u64;
    assert_eq!((reports, dones), (2, 1), "dc-in.pcap: the DC host's MLDv2 Report, MLDv1 Report and MLDv1 Done");
    // The first "<n> report(s)" of the line.
    let words: Vec<&str> = line.split_whitespace().collect();
    let said = words
        .windows(2)
        .find(|w| w[1].trim_end_matches([';', ',', ')']).starts_with("report") && w[0].parse::<u64>().is_ok())
        .map(|w| w[0].parse::<u64>().unwrap_or_default())
        .unwrap_or_else(|| panic!("no \"<n> reports\" in: {line}"));
    assert_eq!(said, reports, "the summary counts {said} MLD reports from the DC host, dc-in.pcap has {reports} Reports and {dones} Done: {line}");
}
