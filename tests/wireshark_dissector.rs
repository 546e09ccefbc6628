//! The Wireshark dissectors of the drafts' messages
//! (`tools/wireshark/dcirouter.lua`), run by tshark:
//! - on frames that scapy builds from the drafts' figures
//!   (`tests/oracle/dissector_cases.py`), field by field;
//! - on the demo's pcaps, against the router's counters and the demo's own
//!   summary.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use common::*;

const LUA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tools/wireshark/dcirouter.lua");

/// tshark with the dissectors over `pcap`: per frame, each requested field's
/// occurrences (empty when absent).
fn tshark_fields(pcap: &Path, filter: Option<&str>, fields: &[&str]) -> Vec<Vec<Vec<String>>> {
    let mut c = Command::new("tshark");
    c.arg("-X").arg(format!("lua_script:{LUA}")).arg("-n").arg("-r").arg(pcap).args(["-T", "fields", "-E", "occurrence=a", "-E", "aggregator=|"]);
    if let Some(f) = filter {
        c.args(["-Y", f]);
    }
    for f in fields {
        c.args(["-e", f]);
    }
    let o = c.output().expect("tshark is required (apt-get install tshark)");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "tshark failed: {err}");
    assert!(!err.to_lowercase().contains("lua"), "tshark reports a Lua problem: {err}");
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| l.split('\t').map(|v| if v.is_empty() { Vec::new() } else { v.split('|').map(str::to_string).collect() }).collect())
        .collect()
}

/// tshark prints integers in the field's base: decimal or 0x-hex.
fn number(s: &str) -> Option<u128> {
    match s.strip_prefix("0x") {
        Some(h) => u128::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

fn same(expected: &str, got: &str) -> bool {
    match (expected.parse::<u128>().ok(), number(got)) {
        (Some(a), Some(b)) => a == b,
        _ => expected == got,
    }
}

/// Frames scapy builds from the drafts' figures (Long-haul CNP in both
/// formats with extension objects, FANN over ICMPv6 and UDP with its
/// metadata stack, the End.MT TLV, and what must not be taken for them):
/// every field tshark shows through the dissectors is the one scapy wrote,
/// checksums are judged right, malformed cases are flagged by name, and
/// other ICMPv6 still reaches Wireshark's own dissector.
#[test]
fn dissectors_decode_frames_built_by_scapy() {
    python_ok().expect("the scapy oracle is required");
    let dir = workdir("dissector");
    let pcap = dir.join("cases.pcap");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/oracle/dissector_cases.py");
    let o = Command::new("python3").arg(script).arg(&pcap).output().unwrap();
    let cases = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(o.status.success(), "dissector_cases.py: {cases}{}", String::from_utf8_lossy(&o.stderr));
    // The fields any case names, and the expert messages.
    let mut names: Vec<String> = vec!["frame.number".into(), "_ws.expert.message".into()];
    for l in cases.lines() {
        for c in l.split('\t').skip(2) {
            let f = c.strip_prefix('-').map(str::to_string).or_else(|| c.split_once('=').map(|(f, _)| f.to_string()));
            if let Some(f) = f.filter(|f| !names.contains(f)) {
                names.push(f);
            }
        }
    }
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let rows = tshark_fields(&pcap, None, &refs);
    let by_frame: BTreeMap<String, &Vec<Vec<String>>> = rows.iter().map(|r| (r[0].first().cloned().unwrap_or_default(), r)).collect();
    let col = |f: &str| names.iter().position(|n| n == f).unwrap();
    let mut checked = 0;
    for l in cases.lines() {
        let mut it = l.split('\t');
        let (n, what) = (it.next().unwrap(), it.next().unwrap());
        let row = by_frame.get(n).unwrap_or_else(|| panic!("frame {n} ({what}) missing from tshark's output"));
        let experts = row[col("_ws.expert.message")].join(" | ");
        eprintln!("frame {n} ({what}): experts [{experts}]");
        assert!(!experts.contains("Lua Error"), "frame {n} ({what}): {experts}");
        for c in it {
            if let Some(f) = c.strip_prefix('-') {
                assert!(row[col(f)].is_empty(), "frame {n} ({what}): {f} should be absent, reads {:?}", row[col(f)]);
            } else if let Some(e) = c.strip_prefix('~') {
                assert!(experts.contains(e), "frame {n} ({what}): no expert message {e:?} in [{experts}]");
            } else {
                let (f, v) = c.split_once('=').unwrap();
                let want: Vec<&str> = v.split(',').collect();
                let got = &row[col(f)];
                assert!(
                    got.len() == want.len() && want.iter().zip(got).all(|(w, g)| same(w, g)),
                    "frame {n} ({what}): {f} reads {got:?}, scapy wrote {want:?}"
                );
            }
            checked += 1;
        }
        if !l.contains("\t~") {
            assert!(experts.is_empty(), "frame {n} ({what}): unexpected expert messages [{experts}]");
        }
    }
    assert_eq!(by_frame.len(), cases.lines().count(), "one tshark row per frame");
    assert!(checked >= 80, "only {checked} checks ran");
}

/// The demo's pcaps through the dissectors: every Long-haul CNP the router
/// sent decodes with a good checksum, as many per action as the router's
/// counters say (plus the one END.E decapsulated and forwarded); the same
/// ICMPv6 / RoCEv2 split as the demo's own summary; the FANN messages of
/// the summary; the End.MT TLV of the WAN input with its three receivers.
#[test]
fn dissectors_decode_the_demo() {
    let dir = workdir("dissector-demo");
    let out = Command::new(bin()).arg("demo").arg("--out").arg(&dir).stdin(std::process::Stdio::null()).output().unwrap();
    let so = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "demo: {so}{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read_to_string(dir.join("dcirouter.lua")).unwrap(), std::fs::read_to_string(LUA).unwrap(), "the demo leaves the dissectors next to its pcaps");
    let dc = dir.join("dc-out.pcap");
    let rows = tshark_fields(&dc, Some("lhcnp"), &["lhcnp.format", "lhcnp.action", "lhcnp.checksum.status", "lhcnp.ext.checksum.status", "ip.src", "ipv6.src"]);
    let mut by_action = [0u64; 4];
    let (mut icmp, mut roce) = (0u64, 0u64);
    let mut with_ext = 0u64;
    for r in &rows {
        let a: usize = r[1][0].parse().unwrap();
        by_action[a] += 1;
        if r[0][0].starts_with("ICMPv6") {
            icmp += 1;
            assert_eq!(r[2], ["1"], "ICMPv6 checksum of a Long-haul CNP: {r:?}");
        } else {
            roce += 1;
            assert!(r[0][0].starts_with("RoCEv2"), "{r:?}");
        }
        // dcirouter's flow object rides in an extension structure whose
        // checksum must verify.
        assert!(r[3].iter().all(|s| s == "1"), "extension checksum: {r:?}");
        if !r[3].is_empty() {
            with_ext += 1;
        }
    }
    // CNPs for flows whose source QP is unknown carry the Flow ID object
    // (the demo's `cnp-source-qp-unknown`); each of them must have been
    // dissected with its extension checksum.
    assert_eq!(with_ext, value(&so, "cnp-source-qp-unknown"), "CNPs with an extension structure");
    assert!(with_ext > 0, "the demo sends CNPs with the Flow ID object");
    // One ICMPv6 Rate Reduce from fc00:0:9::1 is END.E's: decapsulated and
    // forwarded, not originated here.
    let ende = rows.iter().filter(|r| r[5] == ["fc00:0:9::1"]).count() as u64;
    assert_eq!(ende, value(&so, "end-e-forwarded"));
    assert_eq!(by_action[2], value(&so, "lhcnp-rate-reduce-sent") + ende, "Rate Reduce");
    assert_eq!(by_action[1], value(&so, "lhcnp-pause-sent"), "Pause");
    assert_eq!(by_action[3], value(&so, "lhcnp-resume-sent"), "Resume");
    assert_eq!(by_action[0], value(&so, "cnp-notify"), "Notify");
    // The demo's summary ("N x what"), decoded by dcirouter's own parser.
    let summary = |what: &str| -> u64 {
        so.lines().filter(|l| l.contains(what)).filter_map(|l| l.trim().split(" x ").next()?.parse::<u64>().ok()).sum()
    };
    assert_eq!(icmp, summary(" Long-haul CNP (ICMPv6)"));
    assert_eq!(roce, summary(" Long-haul CNP (RoCEv2, E=1)"));
    assert!(icmp > 0 && roce > 0, "both formats: {icmp} / {roce}");
    // FANN: what the summary lists on the DC side, by code.
    let fann = tshark_fields(&dc, Some("fann"), &["fann.code", "fann.checksum.status", "fann.version", "fann.origin", "fann.timestamp"]);
    let (events, recoveries) = (summary(" FANN event ("), summary(" FANN recovery ("));
    assert_eq!(fann.iter().filter(|r| r[0] == ["0"]).count() as u64, events);
    assert_eq!(fann.iter().filter(|r| r[0] == ["1"]).count() as u64, recoveries);
    assert!(fann.iter().all(|r| r[1] == ["1"] && r[2] == ["1"]), "{fann:?}");
    assert!(events > 0 && recoveries > 0);
    // The router's own notifications (its FANN node 2001:db8:ff::1) carry
    // the time of detection in microseconds since the Unix epoch (s.5.1.2).
    let now_us = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_micros();
    let own: Vec<u128> = fann.iter().filter(|r| r[3] == ["2001:db8:ff::1"]).map(|r| number(&r[4][0]).unwrap()).collect();
    assert!(own.len() >= 3, "{fann:?}");
    for t in own {
        assert!(t <= now_us && now_us - t < 600_000_000, "FANN timestamp {t} us is not the time of the run ({now_us} us)");
    }
    // The End.MT TLVs of the two multicast data packets the WAN brings in
    // (the second one's receivers are those group rdma-mc-edge learns).
    let mt = tshark_fields(&dir.join("wan-in.pcap"), Some("srv6_endmt"), &["srv6_endmt.edge", "srv6_endmt.num", "srv6_endmt.receiver", "srv6_endmt.qpn"]);
    assert_eq!(mt.len(), 2, "{mt:?}");
    assert_eq!(mt[0][0], ["fc00:0:1::a"]);
    assert_eq!(mt[0][1], ["3"]);
    assert_eq!(mt[0][2], ["2001:db8:1::10", "2001:db8:1::11", "2001:db8:1::12"]);
    assert_eq!(mt[0][3].iter().map(|q| number(q).unwrap()).collect::<Vec<_>>(), [0x500, 0x501, 0x502]);
    assert_eq!((&mt[1][0], &mt[1][1]), (&vec!["fc00:0:1::b".to_string()], &vec!["2".to_string()]));
    assert_eq!(mt[1][2], ["2001:db8:1::10", "2001:db8:1::11"]);
    assert_eq!(mt[1][3].iter().map(|q| number(q).unwrap()).collect::<Vec<_>>(), [0x510, 0x511]);
}

/// Hostile input never breaks the dissectors: the scapy-built frames and
/// the demo's Long-haul CNPs, FANN messages and End.MT packets, mutated by
/// `tests/oracle/mutate_pcap.py` (flipped and extreme header bytes,
/// truncation down to an empty frame, trailing garbage, jumbo frames,
/// noise), dissected in full by tshark: no Lua error anywhere, while
/// Wireshark's own verdicts stay (malformed frames are still reported).
#[test]
fn dissectors_survive_hostile_frames() {
    python_ok().expect("the scapy oracle is required");
    let dir = workdir("dissector-hostile");
    let oracle = |f: &str| format!("{}/../tests/oracle/{f}", env!("CARGO_MANIFEST_DIR"));
    let py = |args: &[String]| {
        let o = Command::new("python3").args(args).output().unwrap();
        assert!(o.status.success(), "python3 {args:?}: {}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).to_string()
    };
    let cases = dir.join("cases.pcap").display().to_string();
    py(&[oracle("dissector_cases.py"), cases.clone()]);
    let demo = dir.join("demo");
    let o = Command::new(bin()).arg("demo").arg("--out").arg(&demo).stdin(std::process::Stdio::null()).output().unwrap();
    assert!(o.status.success(), "demo: {}", String::from_utf8_lossy(&o.stderr));
    let inputs = format!("{cases},{},{}", demo.join("dc-out.pcap").display(), demo.join("wan-in.pcap").display());
    let mut malformed = 0;
    for seed in 0..3u64 {
        let out = dir.join(format!("hostile{seed}.pcap"));
        let txt = py(&[oracle("mutate_pcap.py"), inputs.clone(), out.display().to_string(), seed.to_string(), "--variants".into(), "20".into()]);
        eprintln!("mutate_pcap: {txt}");
        let o = Command::new("tshark").arg("-X").arg(format!("lua_script:{LUA}")).arg("-n").arg("-V").arg("-r").arg(&out).output().unwrap();
        assert!(o.status.success(), "tshark failed: {}", String::from_utf8_lossy(&o.stderr));
        let v = String::from_utf8_lossy(&o.stdout);
        let errors: Vec<&str> = v.lines().filter(|l| l.contains("Lua Error")).collect();
        assert!(errors.is_empty(), "seed {seed}: {} Lua error line(s), first: {}", errors.len(), errors[0]);
        assert!(v.contains("Long-haul CNP (draft-tian-ccwg-long-haul-cnp)") && v.contains("FANN (draft-hzh-fantel-wan-tunnel)"), "seed {seed}: the mutants still include decodable messages");
        malformed += v.lines().filter(|l| l.starts_with("[Malformed Packet")).count();
    }
    assert!(malformed > 0, "Wireshark's malformed verdicts are kept");
}

/// `dcirouter isis` for a node with every kind of local SID: its hex output,
/// wrapped by scapy in an IS-IS LSP, is what Wireshark's own IS-IS
/// dissector reads back: the SRv6 Capabilities with the O- and C-flags
/// clear / set as configured, the locator, and one End SID sub-TLV per
/// SID but End.X with its codepoint (END.C, END.E, End 1, End.MT, End.DT6
/// 18, End.DT4 19).
#[test]
fn tshark_reads_the_isis_tlvs_dcirouter_prints() {
    let dir = workdir("isis");
    let cfg = dir.join("r.toml");
    std::fs::write(&cfg, control::isis::EVERY_SID_EXAMPLE).unwrap();
    let o = Command::new(bin()).arg("isis").arg("--config").arg(&cfg).output().unwrap();
    let so = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(o.status.success(), "{so}{}", String::from_utf8_lossy(&o.stderr));
    let hexes: Vec<Vec<u8>> = so
        .lines()
        .filter_map(|l| l.trim().strip_prefix("hex: "))
        .map(|h| h.split_whitespace().map(|b| u8::from_str_radix(b, 16).unwrap()).collect())
        .collect();
    assert_eq!(hexes.len(), 3, "{so}");
    // The Capabilities sub-TLV goes inside a Router Capability TLV (242:
    // Router ID 192.0.2.1, flags 0); the Locator TLV is top level.
    let mut cap = vec![242, 0, 192, 0, 2, 1, 0];
    cap.extend(&hexes[0]);
    cap[1] = (cap.len() - 2) as u8;
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let pcap = dir.join("isis.pcap");
    let mut py = Command::new("python3")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/oracle/scapy_srv6.py"))
        .arg("isis-lsp")
        .arg(&pcap)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write as _;
        let mut i = py.stdin.take().unwrap();
        writeln!(i, "{}\n{}\n{}", hex(&cap), hex(&hexes[1]), hex(&hexes[2])).unwrap();
    }
    let out = py.wait_with_output().unwrap();
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).starts_with("ok"), "{}", String::from_utf8_lossy(&out.stdout));
    let f = tshark_fields(&pcap, None, &["isis.lsp.srv6_cap.flags", "isis.lsp.srv6_locator.locator", "isis.lsp.srv6_end_sid.endpoint_function", "isis.lsp.srv6_end_sid.sid"]);
    assert_eq!(f.len(), 1, "{f:?}");
    let p = dataplane::wire::params::Params::DEFAULT;
    assert_eq!(number(&f[0][0][0]), Some(u128::from(p.isis_srv6_cap_c_flag)), "C-flag only: {f:?}");
    assert_eq!(f[0][1], ["fc00:0:1::"]);
    let behaviours: Vec<u128> = f[0][2].iter().map(|s| number(s).unwrap()).collect();
    assert_eq!(behaviours, [p.behaviour_end_c, p.behaviour_end_e, 1, p.behaviour_end_mt, 18, 19].map(u128::from));
    assert_eq!(f[0][3], ["fc00:0:1::c", "fc00:0:1::e", "fc00:0:1::1", "fc00:0:1::a", "fc00:0:1::d6", "fc00:0:1::d4"]);
    // The locator in an IPv6 Reachability TLV too (RFC 9352 s.7.1), for
    // routers without SRv6.
    let r = tshark_fields(&pcap, None, &["isis.lsp.ipv6_reachability.ipv6_prefix", "isis.lsp.ipv6_reachability.prefix_length", "isis.lsp.ipv6_reachability.metric", "_ws.malformed"]);
    assert_eq!((r[0][0].clone(), r[0][1].clone(), r[0][2].clone()), (vec!["fc00:0:1::".to_string()], vec!["48".to_string()], vec!["0".to_string()]), "{r:?}");
    assert!(r[0][3].is_empty(), "tshark: malformed: {r:?}");
}
