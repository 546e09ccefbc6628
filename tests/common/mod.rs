//! Helpers for integration tests that run the real `dcirouter` binary on DPDK
//! virtual devices.
#![allow(dead_code)]

pub mod netns;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_dcirouter")
}

/// A fresh directory under target/ for one test.
pub fn workdir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("it-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// EAL arguments for tests: no hugepages, no PCI, no shared config.
pub fn eal(prefix: &str) -> Vec<String> {
    ["--no-huge", "--no-pci", "--no-shconf", "-l", "0", "-m", "256", "--log-level", "lib.eal:error", "--file-prefix"]
        .iter()
        .map(|s| s.to_string())
        .chain(std::iter::once(format!("dcir-{prefix}-{}", std::process::id())))
        .collect()
}

pub fn command(prefix: &str, config: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new(bin());
    c.args(eal(prefix)).arg("--").arg("run").arg("--config").arg(config).args(extra);
    c.stdin(Stdio::null());
    c
}

/// Start the router with its management socket at `sock` and `extra`
/// arguments, stdout to `dir`/router.out and stderr to router.err; return
/// once the socket exists (at most 20 s).
pub fn start_with_ctl(prefix: &str, config: &Path, dir: &Path, sock: &Path, extra: &[&str]) -> (Child, PathBuf) {
    let out = dir.join("router.out");
    let mut args = vec!["--ctl-socket", sock.to_str().unwrap()];
    args.extend_from_slice(extra);
    let mut child = command(prefix, config, &args)
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(out.with_extension("err")).unwrap())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while !sock.exists() {
        if let Ok(Some(st)) = child.try_wait() {
            panic!("router exited ({st}) before its socket came up:\n{}", std::fs::read_to_string(out.with_extension("err")).unwrap_or_default());
        }
        assert!(t0.elapsed() < std::time::Duration::from_secs(20), "router did not come up");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    (child, out)
}

/// Run the router to completion (its `--duration` or its input's end) and
/// collect its output; a router still running after [`RUN_DEADLINE`] is
/// killed and the test fails (a hang at shutdown is a defect to catch).
pub fn run(prefix: &str, config: &Path, extra: &[&str]) -> Output {
    let child = command(prefix, config, extra).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn dcirouter");
    let out = wait_output(child, RUN_DEADLINE);
    eprintln!("--- dcirouter stdout\n{}\n--- stderr\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    out
}

/// A named counter from the exit table (`  no-route   3`), 0 when absent
/// (the table leaves zero counters out). The name must be one of the
/// router's drop or local counters, so that a renamed counter fails the
/// test instead of reading as 0.
pub fn counter(stdout: &str, name: &str) -> u64 {
    assert!(
        dataplane::counters::Drop::from_name(name).is_some() || dataplane::counters::Local::from_name(name).is_some(),
        "{name} is not a drop or local counter of the router"
    );
    stdout
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            (w.next() == Some(name)).then(|| w.next().and_then(|n| n.parse().ok())).flatten()
        })
        .next()
        .unwrap_or(0)
}

/// A named value of a table (`  trigger-qd-above-k-max   12`); panics
/// when the table has no such line.
pub fn value(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|l| {
            let mut w = l.split_whitespace();
            (w.next() == Some(name)).then(|| w.next().and_then(|n| n.parse().ok())).flatten()
        })
        .unwrap_or_else(|| panic!("no {name} in:\n{text}"))
}

/// A port's row of the exit table: rx packets, rx bytes, tx packets, tx
/// bytes.
fn port_row(stdout: &str, port: &str) -> [u64; 4] {
    for l in stdout.lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        if w.len() >= 6 && w[0] == port {
            return [2, 3, 4, 5].map(|i| w[i].parse().unwrap());
        }
    }
    panic!("port {port} not in counter table:\n{stdout}");
}

/// (rx, tx) packets of a port from the exit table.
pub fn port_packets(stdout: &str, port: &str) -> (u64, u64) {
    let r = port_row(stdout, port);
    (r[0], r[2])
}

/// (rx, tx) bytes of a port from the exit table.
pub fn port_bytes(stdout: &str, port: &str) -> (u64, u64) {
    let r = port_row(stdout, port);
    (r[1], r[3])
}

/// Mbufs in use after shutdown, summed over the `mempool ...: N of M mbufs
/// in use` lines (one per NUMA socket in use).
pub fn mempool_in_use(stdout: &str) -> u64 {
    let lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with("mempool ") && l.contains("in use after shutdown")).collect();
    assert!(!lines.is_empty(), "no mempool line in:\n{stdout}");
    lines.iter().map(|l| l.split(": ").nth(1).unwrap().split_whitespace().next().unwrap().parse::<u64>().unwrap()).sum()
}

/// How long a router run by a test may take before it counts as hung.
pub const RUN_DEADLINE: Duration = Duration::from_secs(120);

/// Wait for `child` at most `limit`; past it, kill it and fail the test.
pub fn wait_deadline(child: &mut Child, limit: Duration) -> ExitStatus {
    let t0 = Instant::now();
    loop {
        if let Some(st) = child.try_wait().expect("wait for child") {
            return st;
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("process {} still running after {limit:?}: killed", child.id());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Stop a router started with a long `--duration` once the test has asked
/// it what it needed (SIGTERM, as an operator would), then
/// [`wait_deadline`]: a fixed short duration can run out before a slow
/// start on a loaded machine has answered.
pub fn stop_deadline(child: &mut Child, limit: Duration) -> ExitStatus {
    let ok = std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status().expect("run kill").success();
    assert!(ok, "SIGTERM to process {}", child.id());
    wait_deadline(child, limit)
}

/// [`wait_deadline`] for a child with piped stdout and stderr, read on
/// threads so a full pipe cannot stall it.
pub fn wait_output(mut child: Child, limit: Duration) -> Output {
    use std::io::Read;
    let mut so = child.stdout.take();
    let mut se = child.stderr.take();
    let t_out = std::thread::spawn(move || {
        let mut v = Vec::new();
        if let Some(s) = so.as_mut() {
            let _ = s.read_to_end(&mut v);
        }
        v
    });
    let t_err = std::thread::spawn(move || {
        let mut v = Vec::new();
        if let Some(s) = se.as_mut() {
            let _ = s.read_to_end(&mut v);
        }
        v
    });
    let status = wait_deadline(&mut child, limit);
    Output { status, stdout: t_out.join().unwrap(), stderr: t_err.join().unwrap() }
}

/// A test that cannot run here. Under `make test` (which sets
/// `DCIROUTER_REQUIRE_ALL=1`) that is a failure; otherwise the reason is
/// written straight to the terminal's stderr (not through the test
/// harness's capture, which hides a passing test's output) and the caller
/// returns.
pub fn skip(test: &str, why: &str) {
    if std::env::var_os("DCIROUTER_REQUIRE_ALL").is_some_and(|v| v == "1") {
        panic!("{test} cannot run here ({why}) and DCIROUTER_REQUIRE_ALL=1 requires every test to run");
    }
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {why}");
}

pub fn python_ok() -> Result<(), String> {
    let o = Command::new("python3").args(["-c", "import scapy; print(scapy.VERSION)"]).output().map_err(|e| format!("python3 missing ({e}): apt-get install python3"))?;
    if !o.status.success() {
        return Err("scapy missing: pip install 'scapy>=2.6'".into());
    }
    Ok(())
}

/// Run a python snippet (with scapy) and return stdout; panics with stderr on failure.
pub fn python(script: &str, args: &[&str]) -> String {
    python_ok().unwrap();
    let o = Command::new("python3").arg("-c").arg(script).args(args).output().unwrap();
    assert!(o.status.success(), "python failed:\n{}\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// How many packets `tests/oracle/check_output.py` printed with the verdict
/// `label` (e.g. `ICRC-ok`, `ICMPv6-type201-ok`) among its notes.
pub fn scapy_verdicts(txt: &str, label: &str) -> usize {
    txt.lines()
        .filter_map(|l| l.rsplit_once(" [").map(|(_, n)| n.trim_end_matches(']')))
        .filter(|notes| notes.split(' ').any(|n| n == label))
        .count()
}

/// A FANN message as the independent scapy oracle
/// (`tests/oracle/scapy_srv6.py fann-check`) reads it: the ICMPv6 checksum
/// scapy computes over the IPv6 packet, and the fields decoded there from
/// the draft's layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FannOracle {
    /// The ICMPv6 or UDP checksum.
    pub checksum_ok: bool,
    /// The IPv4 header checksum (true for IPv6, which has none).
    pub ip_checksum_ok: bool,
    /// ICMPv6 code: 0 event, 1 recovery.
    pub code: u8,
    pub version: u8,
    pub hop_limit: u8,
    pub event_type: u8,
    pub event_subtype: u8,
    pub event_id: u32,
    pub origin: std::net::Ipv6Addr,
    /// (bit, item bytes as hex) in bitmap order.
    pub items: Vec<(u32, String)>,
    pub well_formed: bool,
}

/// Run the scapy FANN oracle on IPv6 packets (from the IPv6 header on).
pub fn fann_oracle(packets: &[&[u8]]) -> Vec<FannOracle> {
    use std::io::Write;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/oracle/scapy_srv6.py");
    let mut c = Command::new("python3").arg(script).arg("fann-check").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("python3");
    let input: String = packets.iter().map(|p| p.iter().map(|b| format!("{b:02x}")).collect::<String>() + "\n").collect();
    c.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let o = wait_output(c, Duration::from_secs(60));
    let txt = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(o.status.success(), "scapy_srv6.py fann-check: {txt}{}", String::from_utf8_lossy(&o.stderr));
    let mut out = Vec::new();
    let mut cur: Option<FannOracle> = None;
    for l in txt.lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        match w.first().copied() {
            Some("case") => {
                cur = Some(FannOracle { checksum_ok: false, ip_checksum_ok: true, code: 255, version: 0, hop_limit: 0, event_type: 0, event_subtype: 0, event_id: 0, origin: std::net::Ipv6Addr::UNSPECIFIED, items: vec![], well_formed: true })
            }
            Some("proto") if w.get(1) == Some(&"icmpv6") => cur.as_mut().unwrap().code = w[3].parse().unwrap(),
            Some("ipcksum") => cur.as_mut().unwrap().ip_checksum_ok = w[1] == "ok",
            Some("cksum") => cur.as_mut().unwrap().checksum_ok = w[1] == "ok",
            Some("fann") => {
                let f = cur.as_mut().unwrap();
                f.version = w[1].parse().unwrap();
                f.hop_limit = w[2].parse().unwrap();
                f.event_type = w[3].parse().unwrap();
                f.event_subtype = w[4].parse().unwrap();
                f.event_id = w[5].parse().unwrap();
                f.origin = w[7].parse().unwrap();
            }
            Some("item") => cur.as_mut().unwrap().items.push((w[1].parse().unwrap(), w[2].to_string())),
            Some("fann-bad") => cur.as_mut().unwrap().well_formed = false,
            Some("end") => out.push(cur.take().unwrap()),
            _ => {}
        }
    }
    assert_eq!(out.len(), packets.len(), "one oracle verdict per packet: {txt}");
    out
}

/// Parse a Prometheus text page with the independent `prometheus_client`
/// parser (PyPI): one `name{labels} value` line per sample, labels sorted.
pub fn prometheus_oracle(page: &str) -> std::collections::BTreeMap<String, f64> {
    use std::io::Write;
    let script = "import sys\nfrom prometheus_client.parser import text_string_to_metric_families\nfor f in text_string_to_metric_families(sys.stdin.read()):\n    for s in f.samples:\n        print(f.type, s.name + '{' + ','.join('%s=%s' % kv for kv in sorted(s.labels.items())) + '}', repr(float(s.value)))\n";
    let mut c = Command::new("python3").args(["-c", script]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    c.stdin.take().unwrap().write_all(page.as_bytes()).unwrap();
    let o = wait_output(c, Duration::from_secs(60));
    assert!(o.status.success(), "prometheus_client rejects the page: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).lines().map(|l| {
        let w: Vec<&str> = l.split(' ').collect();
        (w[1].to_string(), w[2].parse().unwrap())
    }).collect()
}

/// One HTTP request to `addr`; the whole reply.
pub fn http(addr: &str, request: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut r = String::new();
    s.read_to_string(&mut r).unwrap();
    r
}
