//! Network namespaces, tap hosts and a router process for the net_tap tests.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// Network namespaces a test created; deleted when dropped.
pub struct Netns(pub Vec<String>);

impl Netns {
    /// Create the namespaces (each must succeed).
    pub fn create(names: &[&str]) -> Netns {
        let mut guard = Netns(Vec::new());
        for n in names {
            sh(&["ip", "netns", "add", n]);
            guard.0.push(n.to_string());
        }
        guard
    }
}

/// Names and files of a two-host net_tap test, unique to this process:
/// namespaces `{tag}n1-ID` / `{tag}n2-ID`, taps `{tag}t1-ID` / `{tag}t2-ID`,
/// a fresh work directory, the configuration and management socket paths.
pub struct TapLab {
    pub n1: String,
    pub n2: String,
    pub t1: String,
    pub t2: String,
    pub dir: PathBuf,
    pub sock: PathBuf,
    pub cfg: PathBuf,
}

impl TapLab {
    /// The router's two net_tap ports: `a` on tap 1 (10.1.0.1/24,
    /// 2001:db8:a::1/64) and `b` on tap 2 (10.2.0.1/24, 2001:db8:b::1/64),
    /// each followed by its `extra` lines.
    pub fn ports(&self, a_extra: &str, b_extra: &str) -> String {
        [("a", 0, &self.t1, a_extra), ("b", 1, &self.t2, b_extra)]
            .iter()
            .map(|(name, i, tap, extra)| {
                format!(
                    "[[port]]\nname = \"{name}\"\ndevice = \"net_tap{i},iface={tap}\"\nmac = \"02:dc:00:00:0{name}:01\"\naddresses = [\"10.{n}.0.1/24\", \"2001:db8:{name}::1/64\"]\n{extra}",
                    n = i + 1
                )
            })
            .collect()
    }

    pub fn new(tag: &str) -> TapLab {
        let id = std::process::id() % 10000;
        let dir = super::workdir(&format!("tap{tag}"));
        TapLab {
            n1: format!("{tag}n1-{id}"),
            n2: format!("{tag}n2-{id}"),
            t1: format!("{tag}t1-{id}"),
            t2: format!("{tag}t2-{id}"),
            sock: dir.join("ctl.sock"),
            cfg: dir.join("r.toml"),
            dir,
        }
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        for n in &self.0 {
            let _ = Command::new("ip").args(["netns", "del", n]).status();
        }
    }
}

/// Run a command; it must succeed.
pub fn sh(args: &[&str]) {
    let o = Command::new(args[0]).args(&args[1..]).output().unwrap();
    assert!(o.status.success(), "{:?}: {}", args, String::from_utf8_lossy(&o.stderr));
}

/// Run a command inside a network namespace.
pub fn in_ns(ns: &str, args: &[&str]) -> std::process::Output {
    Command::new("ip").args(["netns", "exec", ns]).args(args).output().unwrap()
}

/// Why net_tap tests cannot run here, if they cannot.
pub fn can_run() -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc_geteuid() } != 0 {
        return Err("needs root (network namespaces, tap devices)".into());
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Err("needs /dev/net/tun".into());
    }
    Ok(())
}

extern "C" {
    #[link_name = "geteuid"]
    fn libc_geteuid() -> u32;
}

/// A running router whose stdout goes to `out` (stderr to `out`.err).
pub struct Router {
    pub child: Child,
    pub out: std::path::PathBuf,
}

impl Router {
    /// Start the router on `cfg` with its management socket at `sock`,
    /// output in `dir`/router.out (.err); wait until the socket exists.
    pub fn start(prefix: &str, cfg: &Path, dir: &Path, sock: &Path) -> Router {
        let (child, out) = super::start_with_ctl(prefix, cfg, dir, sock, &[]);
        Router { child, out }
    }

    /// SIGTERM; it must exit 0 within 20 s. Returns its stdout.
    pub fn stop(&mut self) -> String {
        // SIGTERM: the router stops its workers, drains and prints counters.
        // SAFETY: kill(2) on our own child.
        unsafe { libc_kill(self.child.id() as i32, 15) };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                let so = std::fs::read_to_string(&self.out).unwrap_or_default();
                let se = std::fs::read_to_string(self.out.with_extension("err")).unwrap_or_default();
                eprintln!("--- router stdout\n{so}\n--- stderr\n{se}");
                assert!(st.success(), "router exit status {st:?}");
                return so;
            }
            assert!(Instant::now() < deadline, "router did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Router {
    fn drop(&mut self) {
        // A failed assertion must not leave the router running.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}


/// Move `tap` into namespace `ns` and configure a host there: its IPv4 and
/// IPv6 addresses (with prefix length) and default routes via the router.
pub fn host(ns: &str, tap: &str, v4: &str, v6: &str, gw4: &str, gw6: &str) {
    sh(&["ip", "link", "set", tap, "netns", ns]);
    for c in [
        vec!["ip", "link", "set", "lo", "up"],
        vec!["ip", "addr", "add", v4, "dev", tap],
        vec!["ip", "-6", "addr", "add", v6, "dev", tap, "nodad"],
        vec!["ip", "link", "set", tap, "up"],
        vec!["ip", "route", "add", "default", "via", gw4],
        vec!["ip", "-6", "route", "add", "default", "via", gw6],
    ] {
        let o = in_ns(ns, &c);
        assert!(o.status.success(), "{c:?}: {}", String::from_utf8_lossy(&o.stderr));
    }
}

/// What a failed reachability check needs to be understood: the
/// neighbour tables of the namespaces and of the router, and the router's
/// counters (through its management socket `sock`).
pub fn diagnose(namespaces: &[&str], sock: &Path) -> String {
    let mut o = String::new();
    for ns in namespaces {
        let r = in_ns(ns, &["ip", "-6", "addr", "show"]);
        o += &format!("--- {ns}: ip -6 addr\n{}", String::from_utf8_lossy(&r.stdout));
        for fam in ["-4", "-6"] {
            let r = in_ns(ns, &["ip", fam, "neigh", "show"]);
            o += &format!("--- {ns}: ip {fam} neigh\n{}", String::from_utf8_lossy(&r.stdout));
        }
    }
    for cmd in ["show neighbours", "show counters", "show workers"] {
        let r = sock.to_str().map(|s| control::ctl::request(s, cmd).unwrap_or_else(|e| e.to_string())).unwrap_or_default();
        o += &format!("--- router: {cmd}\n{r}");
    }
    o
}

/// Ping until one reply (at most `tries` one-second attempts): the first
/// packets resolve the neighbours.
pub fn ping_until_reply(ns: &str, dst: &str, tries: usize) -> bool {
    (0..tries).any(|_| in_ns(ns, &["ping", "-c", "1", "-W", "1", dst]).status.success())
}

/// Ask the router's management socket `sock` for `cmd` every 50 ms until
/// the answer satisfies `want` (at most `secs` s, else fail with `what`,
/// the answer and a diagnosis of the namespaces `diag`); returns it.
pub fn wait_ctl(sock: &Path, cmd: &str, secs: u64, want: &dyn Fn(&str) -> bool, what: &str, diag: &[&str]) -> String {
    let t0 = Instant::now();
    loop {
        let r = control::ctl::request(sock.to_str().unwrap(), cmd).unwrap();
        if want(&r) {
            return r;
        }
        assert!(t0.elapsed() < Duration::from_secs(secs), "{what}:\n{r}\n{}", diagnose(diag, sock));
        std::thread::sleep(Duration::from_millis(50));
    }
}
