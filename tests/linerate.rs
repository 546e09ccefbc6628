//! The line-rate benchmark kit for bare metal (bench/linerate/): the
//! Pktgen-DPDK script's search, run on a model of pktgen and of a device
//! under test (`tests/oracle/pktgen_model.lua`, Lua 5.4), and the router
//! configuration `dcir-benchgen --linerate` writes, checked by the router and
//! run on real DPDK with the NIC ports swapped for net_pcap.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// A result row of linerate.lua: (case, frame, offered, forwarded, zero-loss %, zero-loss Mpps).
#[derive(Debug)]
struct Row {
    case: String,
    frame: f64,
    offered: f64,
    forwarded: f64,
    zero_loss_pct: Option<f64>,
    zero_loss_mpps: Option<f64>,
}

fn parse_row(l: &str) -> Row {
    let c: Vec<&str> = l.trim().trim_matches('|').split('|').map(str::trim).collect();
    assert_eq!(c.len(), 6, "six columns: {l}");
    let num = |s: &str| s.parse::<f64>().unwrap_or_else(|_| panic!("{s:?} in {l}"));
    Row {
        case: c[0].to_string(),
        frame: num(c[1]),
        offered: num(c[2]),
        forwarded: num(c[3]),
        zero_loss_pct: (c[4] != "(none)").then(|| num(c[4])),
        zero_loss_mpps: (c[5] != "-").then(|| num(c[5])),
    }
}

/// Run linerate.lua on the model: line rate and device capacity in packets
/// per second, `lost` packets lost per trial whatever the rate. Returns the
/// row appended to the results file and the model's summary line.
fn model(name: &str, line_pps: u64, cap_pps: u64, lost: u64, env: &[(&str, &str)]) -> (Row, String) {
    let dir = workdir(name);
    let out = dir.join("rows.md");
    let mut c = Command::new("lua5.4");
    c.arg(format!("{ROOT}/tests/oracle/pktgen_model.lua"))
        .arg(format!("{ROOT}/bench/linerate/linerate.lua"))
        .args([line_pps.to_string(), cap_pps.to_string(), "142".into(), lost.to_string()])
        .env("LINERATE_OUT", &out)
        .env("LINERATE_SECONDS", "2");
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().expect("lua5.4 is required (apt-get install lua5.4; `make deps` installs it)");
    let so = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(o.status.success(), "{so}\n{}", String::from_utf8_lossy(&o.stderr));
    eprintln!("{so}");
    let rows = std::fs::read_to_string(&out).unwrap();
    let lines: Vec<&str> = rows.lines().collect();
    assert_eq!(lines.len(), 1, "one row per run: {rows}");
    let summary = so.lines().find(|l| l.starts_with("model: ")).expect("model summary").to_string();
    (parse_row(lines[0]), summary)
}

#[test]
fn pktgen_script_finds_the_zero_loss_rate() {
    // 100G at 142-byte frames (+ 24 bytes of preamble, FCS and gap) offers
    // 75.3 Mpps; a router that forwards 50 Mpps passes 66.4 % at most.
    let line = 100_000_000_000u64 / (8 * (142 + 24));
    let (r, m) = model("lr-search", line, 50_000_000, 0, &[("LINERATE_CASE", "roce6-64")]);
    assert_eq!(r.case, "roce6-64");
    assert_eq!(r.frame, 142.0);
    assert!((r.offered - line as f64 / 1e6).abs() < 0.01, "{r:?}");
    assert!((r.forwarded - 50.0).abs() < 0.01, "forwarded at full load = the capacity: {r:?}");
    let limit = 100.0 * 50e6 / line as f64;
    let pct = r.zero_loss_pct.expect("a zero-loss rate");
    // Eight halvings from 100 %: within 100 / 2^8 % below the limit, and
    // never above it (the confirmation trial passed).
    assert!(pct <= limit && pct > limit - 100.0 / 256.0, "{pct} % vs limit {limit} %: {r:?}");
    let mpps = r.zero_loss_mpps.unwrap();
    assert!((mpps - pct / 100.0 * line as f64 / 1e6).abs() < 0.02, "{r:?}");
    // 1 trial at 100 %, 8 search steps, 1 confirmation; 2 s each plus the
    // settling before and after; the sender stopped, pktgen told to quit,
    // the pcap replay on before the first start.
    assert_eq!(m, "model: trials 10, virtual seconds 30.0, quit true, starts without pcap 0, running false");
}

#[test]
fn pktgen_script_full_rate_loss_tolerance_and_no_pass() {
    // A router faster than the link: one trial, 100 %.
    let (r, m) = model("lr-full", 1_000_000, 2_000_000, 0, &[]);
    assert_eq!((r.zero_loss_pct, r.zero_loss_mpps), (Some(100.0), Some(1.0)), "{r:?}");
    assert!(m.starts_with("model: trials 1,"), "{m}");
    // Three packets lost in every trial: no rate passes at zero loss...
    let (r, m) = model("lr-lossy", 1_000_000, 2_000_000, 3, &[]);
    assert_eq!((r.zero_loss_pct, r.zero_loss_mpps), (None, None), "{r:?}");
    assert_eq!(r.forwarded, 1.0, "2 000 000 - 3 packets in 2 s, rounded: {r:?}");
    assert!(m.starts_with("model: trials 9,"), "100 % and 8 steps, nothing to confirm: {m}");
    // ...and all pass with a tolerance of 1e-6 (3 in 2 000 000 is 1.5e-6: not
    // enough) and of 1e-5.
    let (r, _) = model("lr-tol6", 1_000_000, 2_000_000, 3, &[("LINERATE_LOSS", "0.000001")]);
    assert_eq!(r.zero_loss_pct, None, "{r:?}");
    let (r, _) = model("lr-tol5", 1_000_000, 2_000_000, 3, &[("LINERATE_LOSS", "0.00001")]);
    assert_eq!(r.zero_loss_pct, Some(100.0), "{r:?}");
}

fn benchgen(dir: &Path, env: &[(&str, &str)]) -> std::process::Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_dcir-benchgen"));
    c.arg("--linerate").arg(dir).arg("256");
    for k in ["LINERATE_IN_PCI", "LINERATE_OUT_PCI", "LINERATE_GEN_MAC", "LINERATE_CORES"] {
        c.env_remove(k);
    }
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

const GEN_MAC: &str = "3c:fd:fe:00:00:01";

#[test]
fn linerate_router_configuration_forwards_to_the_generator() {
    let dir = workdir("lr-config");
    let env = [("LINERATE_IN_PCI", "0000:5e:00.0"), ("LINERATE_OUT_PCI", "0000:5e:00.1"), ("LINERATE_GEN_MAC", GEN_MAC), ("LINERATE_CORES", "1")];
    // Bad settings stop it with the variable and the value.
    for (k, v, why) in [
        ("LINERATE_IN_PCI", "eth0", "LINERATE_IN_PCI = \"eth0\": not a PCI address"),
        ("LINERATE_OUT_PCI", "0000:5e:00.0", "LINERATE_OUT_PCI = \"0000:5e:00.0\": the same port as LINERATE_IN_PCI"),
        ("LINERATE_GEN_MAC", "3c:fd:fe:00:01", "LINERATE_GEN_MAC = \"3c:fd:fe:00:01\": not a MAC address"),
        ("LINERATE_CORES", "0,1", "LINERATE_CORES = \"0,1\": at least one core, and not core 0"),
        ("LINERATE_CORES", "a", "LINERATE_CORES = \"a\": a comma-separated list"),
    ] {
        let mut e = env.to_vec();
        e.retain(|(x, _)| *x != k);
        e.push((k, v));
        let o = benchgen(&dir, &e);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{k}={v}: {err}");
        assert!(err.contains(why), "{k}={v}: {err}");
    }
    let o = benchgen(&dir, &env[..2]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("LINERATE_GEN_MAC is not set"));

    let o = benchgen(&dir, &env);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for v in ["fwd", "queue", "cong"] {
        let cfg = dir.join(format!("linerate-router-{v}.toml"));
        let text = std::fs::read_to_string(&cfg).unwrap();
        // The router accepts it as written for the NICs.
        let c = Command::new(bin()).arg("check-config").arg(&cfg).output().unwrap();
        let so = String::from_utf8_lossy(&c.stdout);
        assert!(c.status.success(), "{v}: {so}{}", String::from_utf8_lossy(&c.stderr));
        assert!(so.contains("OK (2 ports, 2 interfaces, 20 routes, 4 static neighbours)"), "{so}");
        assert_eq!(text.matches(&format!("mac = \"{GEN_MAC}\"")).count(), 4, "every gateway is the generator's port: {text}");
        assert!(text.contains("device = \"0000:5e:00.0\"\nmac = \"02:dc:00:00:00:01\"\nrx_queues = 1\n"), "{text}");
        assert!(text.contains("worker_cores = [1]"), "{text}");
        assert_eq!(text.contains("rate_mbps = 400000"), v != "fwd", "{v}: {text}");
        assert_eq!(text.contains("[port.congestion]"), v == "cong", "{v}: {text}");
        if v != "queue" {
            pcap_run(&dir, v, &text);
        }
    }
}

/// A line-rate configuration on net_pcap instead of the two NICs: every
/// packet of the IPv6 RoCEv2 input goes out of "out" to the generator,
/// checked by scapy; with the congestion stage, every flow is learned and
/// the CE marks in the output are the router's count.
fn pcap_run(dir: &Path, v: &str, text: &str) {
    let d = dir.display();
    control::demo::write_pcap(&dir.join("empty.pcap"), &[]).unwrap();
    let text = text
        .replace("device = \"0000:5e:00.0\"", &format!("device = \"net_pcap0,rx_pcap={d}/roce6-64.pcap,tx_pcap={d}/in-out-{v}.pcap\""))
        .replace("device = \"0000:5e:00.1\"", &format!("device = \"net_pcap1,rx_pcap={d}/empty.pcap,tx_pcap={d}/out-{v}.pcap\""))
        .replace("mbufs_per_socket = 262143", "mbufs_per_socket = 8191")
        .replace("rx_desc = 4096\ntx_desc = 4096\n", "");
    let cfg = dir.join(format!("pcap-{v}.toml"));
    std::fs::write(&cfg, text).unwrap();
    let out = run(&format!("lr-{v}"), &cfg, &["--exit-when-idle", "400", "--duration", "20"]);
    let so = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{so}");
    assert_eq!(port_packets(&so, "in"), (256, 0), "{so}");
    assert_eq!(port_packets(&so, "out"), (0, 256), "{so}");
    assert_eq!(mempool_in_use(&so), 0, "{so}");
    let check = python(
        r#"
import sys
from scapy.all import rdpcap, Ether, IPv6, UDP
inp, out = rdpcap(sys.argv[1]), rdpcap(sys.argv[2])
assert len(out) == len(inp) == 256, (len(inp), len(out))
# Equal but for the hop limit and ECN: the traffic class with CE cleared.
key = lambda p, dh: (bytes(p[IPv6].payload), p[IPv6].dst, p[IPv6].hlim + dh, p[IPv6].tc & 0xfc)
assert {key(p, -1) for p in inp} == {key(p, 0) for p in out}, "same UDP/BTH bytes and destinations, hop limit - 1"
assert all(p[IPv6].tc & 3 == 2 for p in inp), "ECT(0) input"
assert all(p[IPv6].tc & 3 in (2, 3) for p in out)
assert {p[Ether].dst for p in out} == {sys.argv[3]}, {p[Ether].dst for p in out}
assert {p[Ether].src for p in out} == {"02:dc:00:00:00:02"}
assert all(p[UDP].dport == 4791 for p in out)
print("ok", len(out), sum(p[IPv6].tc & 3 == 3 for p in out))
"#,
        &[&format!("{d}/roce6-64.pcap"), &format!("{d}/out-{v}.pcap"), GEN_MAC],
    );
    let ce = counter(&so, "ecn-ce-marked");
    assert_eq!(check.trim(), format!("ok 256 {ce}"), "{so}");
    if v == "cong" {
        assert_eq!(value(&so, "flows-learned"), 256, "{so}");
    } else {
        assert_eq!(ce, 0, "{so}");
    }
}

/// bench/linerate/gen.sh with a stand-in for pktgen that checks the
/// arguments pktgen would get (EAL arguments, the port map, the pcap of the
/// case on the TX port, the script) and runs the script on the model.
#[test]
fn generator_script_runs_pktgen_per_case() {
    let dir = workdir("lr-gen");
    let o = benchgen(&dir, &[("LINERATE_IN_PCI", "0000:5e:00.0"), ("LINERATE_OUT_PCI", "0000:5e:00.1"), ("LINERATE_GEN_MAC", GEN_MAC)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let fake = dir.join("pktgen");
    std::fs::write(
        &fake,
        format!(
            r#"#!/bin/bash
set -eu
[ "$1 $2 $3" = "-l 0-8 -n" ] || {{ echo "EAL arguments: $*" >&2; exit 3; }}
while [ "$1" != "--" ]; do shift; done
shift
[ "$1 $2 $3" = "-P -m [1-2:3-6].0, [7:8].1" ] || {{ echo "pktgen arguments: $*" >&2; exit 3; }}
[ "$4" = "-s" ] && [ "$5" = "0:{d}/$LINERATE_CASE.pcap" ] && [ -f "{d}/$LINERATE_CASE.pcap" ] || {{ echo "pcap: $*" >&2; exit 3; }}
[ "$6" = "-f" ] || {{ echo "script: $*" >&2; exit 3; }}
echo "$LINERATE_CASE" >> {d}/cases
exec lua5.4 {root}/tests/oracle/pktgen_model.lua "$7" 1000000 600000 122
"#,
            d = dir.display(),
            root = ROOT
        ),
    )
    .unwrap();
    Command::new("chmod").arg("+x").arg(&fake).status().unwrap();
    let results = dir.join("results.md");
    let o = Command::new("bash")
        .arg(format!("{ROOT}/bench/linerate/gen.sh"))
        .env("PKTGEN", &fake)
        .env("PKTGEN_EAL", "-l 0-8 -n 4 -a 0000:af:00.0 -a 0000:af:00.1")
        .env("LINERATE_DIR", &dir)
        .env("LINERATE_CASES", "roce4-64 udp6-64")
        .env("LINERATE_LABEL", "cong")
        .env("LINERATE_RESULTS", &results)
        .env("LINERATE_SECONDS", "1")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read_to_string(dir.join("cases")).unwrap(), "roce4-64\nudp6-64\n");
    let table = std::fs::read_to_string(&results).unwrap();
    assert!(table.starts_with("# dcirouter line rate (Pktgen-DPDK, RFC 2544 throughput): linerate-router-cong.toml\n"), "{table}");
    let rows: Vec<Row> = table.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| case")).map(parse_row).collect();
    assert_eq!(rows.iter().map(|r| r.case.as_str()).collect::<Vec<_>>(), ["roce4-64", "udp6-64"], "{table}");
    for r in &rows {
        assert_eq!((r.offered, r.forwarded), (1.0, 0.6), "{table}");
        let pct = r.zero_loss_pct.unwrap();
        assert!(pct <= 60.0 && pct > 60.0 - 100.0 / 256.0, "{table}");
    }
    // Without the generator's EAL arguments it stops before running anything.
    let o = Command::new("bash").arg(format!("{ROOT}/bench/linerate/gen.sh")).env_remove("PKTGEN_EAL").env("PKTGEN", &fake).output().unwrap();
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("PKTGEN_EAL is not set"));
}
