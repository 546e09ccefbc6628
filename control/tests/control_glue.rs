//! The control thread's glue (`control::router`), the management socket
//! (`control::ctl`) and the command line, from a review: each test failed
//! on the code before its fix, for the reason in its "Was". The unit-level ones
//! use `control::ctl::CtlServer` directly; the end-to-end ones run the
//! real `dcirouter` binary on net_pcap, with the helpers of the top-level
//! integration tests (`tests/common`).

#[path = "../../tests/common/mod.rs"]
mod common;

use common::*;
use control::ctl::CtlServer;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A fresh directory for a unit test (short: socket paths have 108 bytes).
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("dcir-gr-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Rule: `--ctl-socket PATH` naming an existing file that is not a socket
/// (a typo: the configuration file, a log) is refused with the path and
/// the reason, and the file is left as it was; only a socket may be
/// replaced. Was: `CtlServer::bind` removes whatever is at the path
/// (`remove_socket` is `std::fs::remove_file`) and binds there, so the
/// file is deleted.
#[test]
fn bind_leaves_a_file_that_is_not_a_socket_alone() {
    let dir = scratch("file");
    let path = dir.join("router.toml");
    std::fs::write(&path, "precious configuration\n").unwrap();
    let p = path.to_str().unwrap();
    let r = CtlServer::bind(p);
    let kept = std::fs::read_to_string(&path).ok();
    let refused = match &r {
        Err(e) => Some(e.clone()),
        Ok(_) => None,
    };
    drop(r);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(kept.as_deref(), Some("precious configuration\n"), "the regular file at --ctl-socket was deleted");
    let e = refused.expect("bind over a regular file must be refused");
    assert!(e.contains(p), "the error names the path: {e}");
}

/// Rule: a socket another running router listens on is not taken over: a
/// second `bind` at that path is refused (naming the path), so the first
/// router stays reachable by `dcirouter ctl`; a stale socket that nobody
/// listens on any more (a router killed with SIGKILL) is still replaced.
/// Was: `bind` removes the live socket and binds a new one; the first
/// router keeps running but can no longer be managed (and the second one,
/// at its exit, removes the path in any case).
#[test]
fn bind_does_not_take_over_a_socket_another_server_listens_on() {
    let dir = scratch("live");
    let path = dir.join("ctl.sock");
    let p = path.to_str().unwrap();
    // A stale socket (bound, listener gone) is replaced.
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    assert!(path.exists());
    let first = CtlServer::bind(p).expect("a stale socket is replaced");
    // A live one is not.
    let second = CtlServer::bind(p);
    let refused = match &second {
        Err(e) => Some(e.clone()),
        Ok(_) => None,
    };
    drop(second);
    drop(first);
    let _ = std::fs::remove_dir_all(&dir);
    let e = refused.expect("a second bind at a live socket must be refused");
    assert!(e.contains(p), "the error names the path: {e}");
}

/// Empty pcaps for `dc` and `wan` in `dir` and a configuration without
/// traffic (status line off); its path.
fn idle_config(dir: &Path, extra: &str) -> PathBuf {
    control::demo::write_pcap(&dir.join("dc-in.pcap"), &[]).unwrap();
    control::demo::write_pcap(&dir.join("empty.pcap"), &[]).unwrap();
    let text = format!(
        r#"
[dataplane]
status_interval_ms = 0
[mempool]
mbufs_per_socket = 2047
cache_size = 64
data_room = 2048
[[port]]
name = "dc"
device = "net_pcap0,rx_pcap={d}/dc-in.pcap,tx_pcap={d}/dc-out.pcap"
mac = "02:dc:00:00:00:01"
addresses = ["10.0.1.1/24", "2001:db8:1::1/64"]
[[port]]
name = "wan"
device = "net_pcap1,rx_pcap={d}/empty.pcap,tx_pcap={d}/wan-out.pcap"
mac = "02:dc:00:00:00:02"
addresses = ["10.0.2.1/24", "2001:db8:2::1/64"]
{extra}"#,
        d = dir.display()
    );
    let cfg = dir.join("r.toml");
    std::fs::write(&cfg, text).unwrap();
    cfg
}

/// Send raw `bytes` to the management socket and read the reply to its
/// end (at most 10 s).
fn raw_request(sock: &Path, bytes: &[u8]) -> String {
    let mut s = UnixStream::connect(sock).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(bytes).unwrap();
    let mut out = Vec::new();
    let t0 = Instant::now();
    let mut b = [0u8; 4096];
    while t0.elapsed() < Duration::from_secs(10) {
        match s.read(&mut b) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&b[..n]),
            Err(e) => panic!("reading the reply: {e} (after {} bytes)", out.len()),
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Rule: every command line gets a reply that starts with `ERR` or ends
/// with `OK` (README "Management socket"); a line that is not UTF-8 text
/// is refused with `ERR` saying so, like any other bad command. Was: the
/// connection is closed without a word (`Command::None` in
/// `Client::step`), so a client sees an empty reply and `ctl::request`
/// reports "the reply was cut short after 0 bytes" instead of what was
/// wrong.
#[test]
fn a_command_line_that_is_not_utf8_gets_an_err_reply() {
    let name = "grutf8";
    let dir = workdir(name);
    let cfg = idle_config(&dir, "");
    let sock = dir.join("ctl.sock");
    let (mut child, out) = start_with_ctl(name, &cfg, &dir, &sock, &["--duration", "60"]);
    let reply = raw_request(&sock, b"show \xff\xfe counters\n");
    // The router still serves afterwards (it does today too).
    let workers = control::ctl::request(sock.to_str().unwrap(), "show workers");
    let st = stop_deadline(&mut child, RUN_DEADLINE);
    let stdout = std::fs::read_to_string(&out).unwrap_or_default();
    assert!(st.success(), "router exit {st}:\n{stdout}");
    assert!(workers.as_deref().is_ok_and(|w| w.starts_with("worker 0:")), "{workers:?}");
    assert!(reply.starts_with("ERR"), "a non-UTF-8 command line got {reply:?}, not an ERR reply");
}

/// Rule: the management socket appears only while the router listens on
/// it (README: "the socket appears at `path` only once it listens"); a
/// start-up that fails after binding it (here `[metrics] listen` on an
/// address in use) removes it again, so a supervisor or script waiting
/// for the file does not find a socket nobody will ever answer. Was:
/// `run` returns the error with the socket file left behind (only the
/// normal exit path calls `ctl::remove_socket`).
#[test]
fn a_failed_start_up_leaves_no_management_socket_behind() {
    let name = "grstale";
    let dir = workdir(name);
    // An address in use for the metrics endpoint, held for the whole run.
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = busy.local_addr().unwrap();
    let cfg = idle_config(&dir, &format!("[metrics]\nlisten = \"{addr}\"\n"));
    let sock = dir.join("ctl.sock");
    let child = command(name, &cfg, &["--ctl-socket", sock.to_str().unwrap(), "--duration", "30"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn dcirouter");
    let o = wait_output(child, RUN_DEADLINE);
    drop(busy);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "start-up must fail on the busy metrics address:\n{err}");
    assert!(err.contains("metrics.listen") && err.contains(&addr.to_string()), "{err}");
    assert!(!sock.exists(), "the management socket {} is left behind after the failed start-up", sock.display());
}

/// Rule: a bad command-line value is reported with the option and the
/// value, as a bad configuration value is, and the process exits with an
/// error code; `--duration S` takes a finite, non-negative number of
/// seconds. Was: `main` converts it with `Duration::from_secs_f64`, which
/// panics on `nan`, `inf`, a negative value or one too large
/// ("cannot convert float seconds to Duration ..."), exit status 101,
/// without naming the option.
#[test]
fn a_bad_duration_is_refused_with_its_option_not_a_panic() {
    let name = "grdur";
    let dir = workdir(name);
    let cfg = idle_config(&dir, "");
    for bad in ["nan", "inf", "1e30", "-1"] {
        let arg = format!("--duration={bad}");
        let child = command(name, &cfg, &[&arg]).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().expect("spawn dcirouter");
        let o = wait_output(child, RUN_DEADLINE);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!err.contains("panicked"), "{arg}: the router panicked:\n{err}");
        assert!(!o.status.success() && o.status.code() != Some(101), "{arg}: exit {}:\n{err}", o.status);
        assert!(err.contains("duration") && err.contains(bad), "{arg}: the error names the option and the value:\n{err}");
    }
}
