//! Helpers for integration tests that run the real `dcirouter` binary on DPDK
//! virtual devices.
#![allow(dead_code)]

pub mod netns;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

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
    let child = command(prefix, config, &args)
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(out.with_extension("err")).unwrap())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while !sock.exists() {
        assert!(t0.elapsed() < std::time::Duration::from_secs(20), "router did not come up");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    (child, out)
}

pub fn run(prefix: &str, config: &Path, extra: &[&str]) -> Output {
    let out = command(prefix, config, extra).output().expect("spawn dcirouter");
    eprintln!("--- dcirouter stdout\n{}\n--- stderr\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    out
}

/// A named counter from the exit table (`  no-route   3`), 0 when absent.
pub fn counter(stdout: &str, name: &str) -> u64 {
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
