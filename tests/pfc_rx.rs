//! Received PAUSE / PFC frames (802.3 Annex 31B, 802.1Qbb) on the real
//! dcirouter binary over net_pcap: the MAC Control frames and the data are
//! built by scapy (`tests/oracle/pfc_frames.py`, scapy.contrib.mac_control),
//! the output pcaps are read back with their transmit timestamps and
//! checked byte by byte, and the counters, `show pfc` (management socket
//! and exit report) and the mempool are checked after each run.
//!
//! Ordering between the two input pcaps: the worker polls every RX queue
//! once per loop, a burst (32 frames) from each, so frames that lead one
//! pcap are received loops before frames deep in the other. The data pcaps
//! start with 256 filler frames (to a MAC that is not the router's, dropped
//! as `l2-not-for-us`): the pause frame at the head of the WAN's pcap is in
//! force 8 loops before the first data packet arrives.

mod common;
use common::*;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const R_WAN: [u8; 6] = [0x02, 0xdc, 0, 0, 0, 2];
const GW: [u8; 6] = [0x02, 0, 0, 0, 2, 2];
const GW200: [u8; 6] = [0x02, 0, 0, 0, 2, 0x20];
/// Filler frames ahead of the data (8 RX bursts of 32).
const FILLER: u64 = 256;

/// dcirouter with `dc` (untagged and VLAN 100) toward the hosts and `wan`
/// (untagged and VLAN 200) toward the neighbour that sends the pause
/// frames; `wan_extra` goes into the wan port (e.g. its `[port.pfc]`),
/// `more` at the end (further ports, ...). Each port reads `NAME-in.pcap`
/// and writes `NAME-out.pcap`.
fn config(dir: &Path, wan_extra: &str, more: &str) -> String {
    format!(
        r#"
[dataplane]
status_interval_ms = 0
[mempool]
mbufs_per_socket = 2047
cache_size = 64
[[port]]
name = "dc"
device = "net_pcap0,rx_pcap={d}/dc-in.pcap,tx_pcap={d}/dc-out.pcap"
mac = "02:dc:00:00:00:01"
addresses = ["10.0.1.1/24", "2001:db8:1::1/64"]
[[port.vlan]]
id = 100
addresses = ["10.0.100.1/24"]
[[port]]
name = "wan"
device = "net_pcap1,rx_pcap={d}/wan-in.pcap,tx_pcap={d}/wan-out.pcap"
mac = "02:dc:00:00:00:02"
addresses = ["10.0.2.1/24", "2001:db8:2::1/64"]
{wan_extra}
[[port.vlan]]
id = 200
addresses = ["10.0.200.1/24"]
{more}
[[route]]
prefix = "10.0.3.0/24"
via = "10.0.2.2"
[[route]]
prefix = "10.0.4.0/24"
via = "10.0.200.2"
[[route]]
prefix = "2001:db8:3::/48"
via = "2001:db8:2::2"
[[neighbour]]
ip = "10.0.2.2"
mac = "02:00:00:00:02:02"
interface = "wan"
[[neighbour]]
ip = "2001:db8:2::2"
mac = "02:00:00:00:02:02"
interface = "wan"
[[neighbour]]
ip = "10.0.200.2"
mac = "02:00:00:00:02:20"
interface = "wan.200"
"#,
        d = dir.display()
    )
}

/// `[port.pfc]` honouring priority 3 (DSCP 26; DSCP 40 is priority 5, not
/// honoured), quanta counted at `link_mbps`.
fn pfc_section(link_mbps: u64) -> String {
    format!("[port.pfc]\npriorities = [3]\npause = false\ndscp_priority = {{ 26 = 3, 40 = 5 }}\ndefault_priority = 0\nlink_mbps = {link_mbps}")
}

/// `tests/oracle/pfc_frames.py` (scapy) writing one input pcap.
fn scapy_pcap(args: &[&str]) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/oracle/pfc_frames.py");
    let o = Command::new("python3").arg(script).args(args).output().expect("python3");
    assert!(o.status.success(), "pfc_frames.py {args:?}: {}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
}

/// The data input of `dc`: the filler, then `n` rounds of `kinds`.
fn data_pcap(dir: &Path, n: u32, kinds: &str) {
    let p = dir.join("dc-in.pcap");
    scapy_pcap(&["data", p.to_str().unwrap(), &FILLER.to_string(), &n.to_string(), kinds]);
}

/// MAC Control frames (and filler) from the WAN neighbour into `file`.
fn control_pcap(dir: &Path, file: &str, items: &[&str]) {
    let p = dir.join(file);
    let mut a = vec!["control", p.to_str().unwrap()];
    a.extend_from_slice(items);
    scapy_pcap(&a);
}

/// The frames of an output pcap with the time net_pcap wrote each one.
fn read_timed(p: &Path) -> Vec<(Duration, Vec<u8>)> {
    let f = std::fs::File::open(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let mut r = pcap_file::pcap::PcapReader::new(f).unwrap();
    let mut v = Vec::new();
    while let Some(pkt) = r.next_packet() {
        let pkt = pkt.unwrap();
        v.push((pkt.timestamp, pkt.data.to_vec()));
    }
    v
}

/// The marker `KIND-NNN` the data carries: (kind, round).
fn tag(f: &[u8]) -> Option<(String, u32)> {
    for k in ["H4", "N0", "H6", "N5", "HV", "NV"] {
        let pat = format!("{k}-");
        let hit = f.windows(6).find(|w| w.starts_with(pat.as_bytes()) && w[3..].iter().all(u8::is_ascii_digit));
        if let Some(w) = hit {
            return Some((k.to_string(), std::str::from_utf8(&w[3..]).unwrap().parse().unwrap()));
        }
    }
    None
}

/// Held kinds: priority 3 on the wire (DSCP 26 untagged, PCP 3 tagged).
fn held_kind(k: &str) -> bool {
    k.starts_with('H')
}

fn ipv4_checksum_ok(h: &[u8]) -> bool {
    let hl = usize::from(h[0] & 0xf) * 4;
    dataplane::wire::checksum::checksum(&h[..hl]) == 0
}

/// The `show pfc` block of one port: its `pfc 'NAME': ...` line and its
/// priority lines.
fn pfc_block(text: &str, port: &str) -> (String, Vec<String>) {
    let head = format!("pfc '{port}': ");
    let mut lines = text.lines().skip_while(|l| !l.starts_with(&head));
    let first = lines.next().unwrap_or_else(|| panic!("no {head} in:\n{text}")).to_string();
    let prios = lines.take_while(|l| l.starts_with("  priority ")).map(str::to_string).collect();
    (first, prios)
}

/// The drop total of the exit table.
fn drop_total(so: &str) -> u64 {
    so.lines().find_map(|l| l.strip_prefix("drops (total ")?.split(')').next()?.parse().ok()).unwrap_or_else(|| panic!("no drop total in:\n{so}"))
}

/// Run python with scapy or say why this test cannot run.
fn scapy_here(test: &str) -> bool {
    match python_ok() {
        Ok(()) => true,
        Err(e) => {
            skip(test, &e);
            false
        }
    }
}

/// A PFC frame on `wan` pauses priority 3 for 65535 quanta at 100 Mb/s
/// (335.5 ms). The data from `dc` to `wan` that is priority 3 there (IPv4
/// and IPv6 with DSCP 26, and frames leaving on wan.200 with PCP 3) waits
/// that long in wan's egress queue, in its own order, while priority 0 (DSCP
/// 0; DSCP 26 on wan.200, whose tag has PCP 0) and priority 5 (DSCP 40,
/// paused by the same frame but not honoured) overtake it at once.
#[test]
fn a_pfc_pause_holds_only_its_priority() {
    let name = "a_pfc_pause_holds_only_its_priority";
    if !scapy_here(name) {
        return;
    }
    let dir = workdir("pfc-hold");
    const N: u32 = 16;
    data_pcap(&dir, N, "H4,N0,H6,N5,HV,NV");
    control_pcap(&dir, "wan-in.pcap", &["pfc:3=65535/5=65535"]);
    let cfg = dir.join("r.toml");
    std::fs::write(&cfg, config(&dir, &pfc_section(100), "")).unwrap();
    let out = run("pfc-hold", &cfg, &["--exit-when-idle", "1500", "--duration", "30"]);
    assert!(out.status.success(), "dcirouter exited with {:?}", out.status);
    let so = String::from_utf8_lossy(&out.stdout).to_string();
    let se = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(se.contains("port wan: honours received PFC for priorities [3]; pause quanta at 100 Mb/s"), "{se}");
    // net_pcap has no flow control to turn off: it delivers every frame.
    assert!(se.contains("port wan: the driver cannot change its flow control (not supported); PAUSE / PFC frames are honoured as it delivers them"), "{se}");

    let wan = read_timed(&dir.join("wan-out.pcap"));
    let tags: Vec<(String, u32)> = wan.iter().map(|(_, f)| tag(f).unwrap_or_else(|| panic!("an unexpected frame left on wan: {f:02x?}"))).collect();
    assert_eq!(wan.len() as u32, 6 * N, "every data packet left, none twice: {tags:?}");
    for k in ["H4", "N0", "H6", "N5", "HV", "NV"] {
        let rounds: Vec<u32> = tags.iter().filter(|(t, _)| t == k).map(|(_, i)| *i).collect();
        assert_eq!(rounds, (0..N).collect::<Vec<_>>(), "{k}: each packet once, in order");
    }
    // Every packet of the paused priority left after every other one.
    let last_free = tags.iter().rposition(|(k, _)| !held_kind(k)).unwrap();
    let first_held = tags.iter().position(|(k, _)| held_kind(k)).unwrap();
    assert!(last_free < first_held, "priorities 0 and 5 overtake the paused priority 3: {tags:?}");
    // And 335 ms later: the first frame out (priority 0) left after the
    // pause started (the pause frame was received loops before the data),
    // so its time is a lower bound for the start of the pause.
    let t0 = wan[0].0;
    let held_after = wan[first_held].0.saturating_sub(t0);
    let free_span = wan[last_free].0.saturating_sub(t0);
    eprintln!("priority 0 / 5 left within {free_span:?}; priority 3 from {held_after:?} after the first frame");
    assert!(held_after >= Duration::from_millis(250), "65535 quanta at 100 Mb/s = 335 ms: priority 3 left {held_after:?} after the first frame");
    assert!(free_span < held_after, "the others left before the pause ended");

    // The frames, byte by byte.
    let frame = |k: &str| &wan[tags.iter().position(|(t, i)| t == k && *i == 5).unwrap()].1;
    for k in ["H4", "N0", "N5"] {
        let f = frame(k);
        assert_eq!((&f[0..6], &f[6..12], &f[12..14]), (&GW[..], &R_WAN[..], &[0x08, 0x00][..]), "{k}");
        assert_eq!(f[14 + 1] >> 2, [("H4", 26), ("N0", 0), ("N5", 40)].iter().find(|(x, _)| *x == k).unwrap().1, "{k}: DSCP kept");
        assert_eq!(f[14 + 8], 63, "{k}: TTL");
        assert!(ipv4_checksum_ok(&f[14..]), "{k}: IPv4 header checksum");
    }
    let f = frame("H6");
    assert_eq!((&f[0..6], &f[12..14]), (&GW[..], &[0x86, 0xdd][..]));
    assert_eq!(((f[14] & 0x0f) << 4) | (f[15] >> 4), 26 << 2 | 2, "traffic class: DSCP 26, ECT(0)");
    assert_eq!(f[14 + 7], 63, "hop limit");
    for (k, pcp, dscp) in [("HV", 3, 0), ("NV", 0, 26)] {
        let f = frame(k);
        assert_eq!((&f[0..6], &f[6..12], &f[12..14]), (&GW200[..], &R_WAN[..], &[0x81, 0x00][..]), "{k}: tagged for wan.200");
        let tci = u16::from_be_bytes([f[14], f[15]]);
        assert_eq!((tci >> 13, tci & 0xfff), (pcp, 200), "{k}: PCP and VID");
        assert_eq!(&f[16..18], &[0x08, 0x00]);
        assert_eq!(f[18 + 1] >> 2, dscp, "{k}: DSCP");
        assert_eq!(f[18 + 8], 63, "{k}: TTL");
        assert!(ipv4_checksum_ok(&f[18..]), "{k}");
    }
    // scapy recomputes every checksum of what left.
    let chk = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/oracle/check_output.py");
    let o = Command::new("python3").arg(chk).arg(dir.join("wan-out.pcap")).output().unwrap();
    let txt = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(o.status.success(), "scapy: {txt}{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(scapy_verdicts(&txt, "UDP-ok"), 6 * N as usize, "{txt}");

    // Counters and the exit report.
    assert_eq!(counter(&so, "pfc-received"), 1, "{so}");
    assert_eq!(counter(&so, "pfc-received-ignored"), 0);
    assert_eq!(counter(&so, "l2-not-for-us"), FILLER);
    assert_eq!(drop_total(&so), FILLER, "nothing but the filler dropped: {so}");
    assert_eq!(port_packets(&so, "dc"), (FILLER + 6 * u64::from(N), 0));
    assert_eq!(port_packets(&so, "wan"), (1, 6 * u64::from(N)), "the pause frame is consumed, never answered or forwarded");
    let (head, prios) = pfc_block(&so, "wan");
    assert_eq!(
        head,
        format!("pfc 'wan': priorities [3], 802.3x pause ignored, quanta at 100 Mb/s; received pfc 1 pause 0 ignored 0 (partly 1); data held now 0, held so far {}", 3 * N),
        "{so}"
    );
    assert_eq!(prios, vec!["  priority 3: sending; pauses 1, resumes 0".to_string()], "only the honoured priority: {so}");
    assert!(!so.contains("pfc 'dc'"), "dc has no [port.pfc]: {so}");
    assert_eq!(mempool_in_use(&so), 0, "every mbuf back in its pool");
}

/// A PFC frame with time 0 for priority 3 (XON) lifts a 33.5 s pause (65535
/// quanta at 1 Mb/s) at once: the held packets leave in order as soon as
/// it arrives, long before the pause would have run out (the router stops
/// 1.5 s after its input ends; a packet still held then would be counted
/// `shutdown-discard`, not sent).
#[test]
fn a_zero_time_pfc_resumes_at_once() {
    let name = "a_zero_time_pfc_resumes_at_once";
    if !scapy_here(name) {
        return;
    }
    let dir = workdir("pfc-xon");
    const N: u32 = 16;
    // dc: 8 bursts of filler, then the data (burst 9). wan: the pause,
    // 1024 filler frames, the XON (burst 33): the data is held first.
    data_pcap(&dir, N, "H4,N0");
    control_pcap(&dir, "wan-in.pcap", &["pfc:3=65535", "filler:1024", "pfc:3=0"]);
    let cfg = dir.join("r.toml");
    std::fs::write(&cfg, config(&dir, &pfc_section(1), "")).unwrap();
    let out = run("pfc-xon", &cfg, &["--exit-when-idle", "1500", "--duration", "30"]);
    assert!(out.status.success(), "dcirouter exited with {:?}", out.status);
    let so = String::from_utf8_lossy(&out.stdout).to_string();

    assert_eq!(counter(&so, "shutdown-discard"), 0, "nothing still held at the end: {so}");
    assert_eq!(counter(&so, "pfc-received"), 2, "the pause and the XON");
    assert_eq!(counter(&so, "l2-not-for-us"), FILLER + 1024);
    assert_eq!(drop_total(&so), FILLER + 1024, "{so}");
    let (head, prios) = pfc_block(&so, "wan");
    assert_eq!(head, format!("pfc 'wan': priorities [3], 802.3x pause ignored, quanta at 1 Mb/s; received pfc 2 pause 0 ignored 0 (partly 0); data held now 0, held so far {N}"), "{so}");
    assert_eq!(prios, vec!["  priority 3: sending; pauses 1, resumes 1".to_string()], "{so}");

    let wan = read_timed(&dir.join("wan-out.pcap"));
    let tags: Vec<(String, u32)> = wan.iter().map(|(_, f)| tag(f).expect("only data leaves on wan")).collect();
    assert_eq!(wan.len() as u32, 2 * N, "{tags:?}");
    let want: Vec<(String, u32)> = (0..N).map(|i| ("N0".to_string(), i)).chain((0..N).map(|i| ("H4".to_string(), i))).collect();
    assert_eq!(tags, want, "priority 0 at once, then priority 3 in order once resumed");
    let span = wan.last().unwrap().0.saturating_sub(wan[0].0);
    assert!(span < Duration::from_secs(10), "resumed by the XON, not by the end of the 33.5 s pause: {span:?}");
    for (_, f) in &wan {
        assert_eq!((&f[0..6], &f[6..12]), (&GW[..], &R_WAN[..]));
        assert_eq!(f[14 + 8], 63);
        assert!(ipv4_checksum_ok(&f[14..]));
    }
    assert_eq!(port_packets(&so, "wan"), (1026, 2 * u64::from(N)));
    assert_eq!(mempool_in_use(&so), 0);
}

/// The PFC watchdog (`watchdog_ms = 200`): a 33.5 s pause (65535 quanta at
/// 1 Mb/s) that never breaks is a storm; 200 ms into it the held packets go
/// on, in order, after the priority-0 ones, and the router says so on
/// stderr, in `show pfc` and in the exit table; nothing is discarded.
#[test]
fn the_pfc_watchdog_releases_a_pause_that_does_not_end() {
    let name = "the_pfc_watchdog_releases_a_pause_that_does_not_end";
    if !scapy_here(name) {
        return;
    }
    let dir = workdir("pfc-watchdog");
    const N: u32 = 16;
    data_pcap(&dir, N, "H4,N0");
    control_pcap(&dir, "wan-in.pcap", &["pfc:3=65535"]);
    let cfg = dir.join("r.toml");
    std::fs::write(&cfg, config(&dir, &format!("{}\nwatchdog_ms = 200\nrestore_ms = 1000", pfc_section(1)), "")).unwrap();
    let out = run("pfc-watchdog", &cfg, &["--exit-when-idle", "1500", "--duration", "30"]);
    assert!(out.status.success(), "dcirouter exited with {:?}", out.status);
    let so = String::from_utf8_lossy(&out.stdout).to_string();
    let se = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(se.contains("port wan: PFC watchdog: a priority stayed paused for 200 ms without a break (a PFC storm or deadlock downstream); its held data goes on and its pauses are ignored for 1000 ms (1 time(s) so far)"), "{se}");
    assert_eq!(counter(&so, "shutdown-discard"), 0, "{so}");
    let (head, prios) = pfc_block(&so, "wan");
    assert_eq!(head, format!("pfc 'wan': priorities [3], 802.3x pause ignored, quanta at 1 Mb/s, watchdog 200 ms (restore 1000 ms); received pfc 1 pause 0 ignored 0 (partly 0); data held now 0, held so far {N}"), "{so}");
    assert!(prios.len() == 1 && prios[0].starts_with("  priority 3: sending; pauses 1, resumes 0, watchdog fired 1"), "{prios:?}");
    let wan = read_timed(&dir.join("wan-out.pcap"));
    let tags: Vec<(String, u32)> = wan.iter().map(|(_, f)| tag(f).expect("only data leaves on wan")).collect();
    let want: Vec<(String, u32)> = (0..N).map(|i| ("N0".to_string(), i)).chain((0..N).map(|i| ("H4".to_string(), i))).collect();
    assert_eq!(tags, want, "priority 0 at once, then priority 3 in order once the watchdog let it go");
    let gap = wan[N as usize].0.saturating_sub(wan[0].0);
    // Held (above: held so far 16, and they left last) until the watchdog,
    // at most 200 ms after the pause began, not until the pause's end.
    assert!(gap < Duration::from_secs(10), "released by the watchdog, not by the end of the 33.5 s pause: {gap:?}");
    assert_eq!(mempool_in_use(&so), 0);
}

/// Each kind of received MAC Control frame lands under its own counter, is
/// never forwarded or answered, and its mbuf comes back:
/// on a port without `[port.pfc]` PFC and PAUSE are `pfc-not-enabled`; on
/// `wan` (802.3x PAUSE honoured) PAUSE to 01:80:c2:00:00:01 or to the
/// port's own MAC is `pause-received` and PFC `pfc-received-ignored`; PFC
/// to the broadcast or the LLDP address, tagged with the port's VLAN 200,
/// or cut to 10 octets is `malformed-mac-control`; opcode 0x0002 (GATE) is
/// `mac-control-unsupported`; on `edge` (PFC priority 3 honoured) PFC for
/// priority 3 (pause, XON, pause) is `pfc-received`, PFC for priority 5
/// only and PAUSE `pfc-received-ignored`, the last pause (which names
/// priority 5 as well) is partly ignored in `show pfc`, and its quanta follow the link
/// speed net_pcap reports (10 Gb/s) since no link_mbps is given.
#[test]
fn pause_frames_are_counted_by_kind() {
    let name = "pause_frames_are_counted_by_kind";
    if !scapy_here(name) {
        return;
    }
    let dir = workdir("pfc-kinds");
    control_pcap(&dir, "dc-in.pcap", &["pfc:3=100", "pause:100"]);
    control_pcap(
        &dir,
        "wan-in.pcap",
        &["pfc:3=10", "pause:100", "pause-to:02:dc:00:00:00:02:100", "pfc-bcast:3=100", "pfc-lldp:3=100", "pfc-vlan:200:3=100", "pfc-short", "gate"],
    );
    control_pcap(&dir, "edge-in.pcap", &["pause:100", "pfc:3=10", "pfc:3=0", "pfc:5=100", "pfc:3=1/5=100"]);
    let cfg = dir.join("r.toml");
    let d = dir.display();
    let edge = format!(
        "[[port]]\nname = \"edge\"\ndevice = \"net_pcap2,rx_pcap={d}/edge-in.pcap,tx_pcap={d}/edge-out.pcap\"\nmac = \"02:dc:00:00:00:03\"\naddresses = [\"10.0.5.1/24\"]\n[port.pfc]\npriorities = [3]\n"
    );
    // wan honours PAUSE, edge PFC: one or the other per port (802.3
    // Annex 31D); each ignores the other kind.
    let text = config(&dir, "[port.pfc]\npause = true\nlink_mbps = 1000", &edge);
    std::fs::write(&cfg, text).unwrap();
    let out = run("pfc-kinds", &cfg, &["--exit-when-idle", "400", "--duration", "20"]);
    assert!(out.status.success(), "dcirouter exited with {:?}", out.status);
    let so = String::from_utf8_lossy(&out.stdout).to_string();
    let se = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(se.contains("port wan: honours received 802.3x PAUSE (every priority); pause quanta at 1000 Mb/s"), "{se}");
    assert!(se.contains("port edge: honours received PFC for priorities [3]; pause quanta at 10000 Mb/s (the link speed, followed)"), "{se}");

    let got: Vec<(&str, u64)> =
        ["pfc-received", "pause-received", "pfc-received-ignored", "pfc-not-enabled", "malformed-mac-control", "mac-control-unsupported"].iter().map(|c| (*c, counter(&so, c))).collect();
    assert_eq!(
        got,
        vec![("pfc-received", 3), ("pause-received", 2), ("pfc-received-ignored", 3), ("pfc-not-enabled", 2), ("malformed-mac-control", 4), ("mac-control-unsupported", 1)],
        "{so}"
    );
    assert_eq!(drop_total(&so), 2 + 4 + 1, "no other drop: {so}");
    assert_eq!(port_packets(&so, "dc"), (2, 0));
    assert_eq!(port_packets(&so, "wan"), (8, 0), "nothing answered");
    assert_eq!(port_packets(&so, "edge"), (5, 0));
    for p in ["dc-out.pcap", "wan-out.pcap", "edge-out.pcap"] {
        assert!(control::demo::read_pcap(&dir.join(p)).unwrap().is_empty(), "{p}: nothing sent");
    }

    let (head, prios) = pfc_block(&so, "wan");
    assert_eq!(head, "pfc 'wan': priorities [], 802.3x pause honoured, quanta at 1000 Mb/s; received pfc 0 pause 2 ignored 1 (partly 0); data held now 0, held so far 0", "{so}");
    // PAUSE stops every priority: all eight are honoured, each paused by
    // the two PAUSE frames; the PFC frame changed nothing. Every pause (at
    // most 100 x 512 bits at 1 Gb/s) is over.
    let want: Vec<String> = (0..8).map(|p| format!("  priority {p}: sending; pauses 2, resumes 0")).collect();
    assert_eq!(prios, want, "{so}");
    let (head, prios) = pfc_block(&so, "edge");
    // Priority 3 paused, resumed by the XON, paused again by a frame whose
    // time for priority 5 is ignored; the PAUSE and the PFC frame for
    // priority 5 only ignored.
    assert_eq!(head, "pfc 'edge': priorities [3], 802.3x pause ignored, quanta at 10000 Mb/s; received pfc 3 pause 0 ignored 2 (partly 1); data held now 0, held so far 0", "{so}");
    assert_eq!(prios, vec!["  priority 3: sending; pauses 2, resumes 1".to_string()], "{so}");
    assert!(!so.contains("pfc 'dc'"), "{so}");
    assert_eq!(mempool_in_use(&so), 0, "every mbuf back in its pool");
}

/// `show pfc` on the management socket while a 33.5 s pause (65535 quanta
/// at 1 Mb/s) is in force: priority 3 is paused with the time left, and the
/// priority-3 data is held (priority 0 left). Two workers: the pause frame
/// comes in on wan's RX queue 1, polled by worker 0, while wan's egress
/// queue belongs to worker 1. Stopped by SIGTERM, the router frees the held
/// packets and counts them (`shutdown-discard`); every mbuf comes back.
#[test]
fn show_pfc_while_paused_and_held_data_freed_at_shutdown() {
    let name = "show_pfc_while_paused_and_held_data_freed_at_shutdown";
    if !scapy_here(name) {
        return;
    }
    let dir = workdir("pfc-ctl");
    const N: u32 = 16;
    data_pcap(&dir, N, "H4,N0");
    control::demo::write_pcap(&dir.join("wan-in.pcap"), &[]).unwrap();
    control_pcap(&dir, "wan-in1.pcap", &["pfc:3=65535"]);
    let d = dir.display();
    let text = config(&dir, &pfc_section(1), "")
        .replace("[dataplane]\n", "[dataplane]\nworker_cores = [0, 1]\n")
        .replace(&format!("tx_pcap={d}/dc-out.pcap"), &format!("tx_pcap={d}/dc-out.pcap,tx_pcap={d}/dc-out1.pcap"))
        .replace(&format!("rx_pcap={d}/wan-in.pcap,tx_pcap={d}/wan-out.pcap"), &format!("rx_pcap={d}/wan-in.pcap,rx_pcap={d}/wan-in1.pcap,tx_pcap={d}/wan-out.pcap,tx_pcap={d}/wan-out1.pcap"))
        .replace("name = \"wan\"\n", "name = \"wan\"\nrx_queues = 2\n");
    assert!(text.contains("wan-in1.pcap") && text.contains("rx_queues = 2") && text.contains("worker_cores = [0, 1]"));
    // The pause state for Prometheus too (a free port, taken and let go).
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let addr = format!("127.0.0.1:{port}");
    let text = text + &format!("[metrics]\nlisten = \"{addr}\"\n");
    let cfg = dir.join("r.toml");
    std::fs::write(&cfg, text).unwrap();
    let sock = dir.join("ctl.sock");
    let (mut child, out) = start_with_ctl("pfc-ctl", &cfg, &dir, &sock, &["--duration", "60"]);
    let s = sock.to_str().unwrap().to_string();
    let ok = |c: &str| {
        let r = control::ctl::request(&s, c).unwrap();
        assert!(r.ends_with("OK\n"), "{c}: {r}");
        r
    };
    // Until all the priority-3 data is held (bounded: 200 x 50 ms).
    let want_held = format!("data held now {N}, held so far {N}");
    let mut show = String::new();
    for _ in 0..200 {
        show = ok("show pfc");
        if show.contains(&want_held) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!("{show}");
    let r = http(&addr, "GET /metrics HTTP/1.1\r\nHost: router\r\n\r\n");
    let m = prometheus_oracle(r.split_once("\r\n\r\n").unwrap().1);
    let get = |k: &str| *m.get(k).unwrap_or_else(|| panic!("{k} not on the page:\n{r}"));
    assert_eq!(get("dcirouter_pfc_paused{port=wan,priority=3}"), 1.0, "priority 3 paused");
    assert!(!m.contains_key("dcirouter_pfc_paused{port=wan,priority=0}"), "only honoured priorities");
    assert_eq!((get("dcirouter_pfc_held_now_packets{port=wan}"), get("dcirouter_pfc_held_packets_total{port=wan}")), (f64::from(N), f64::from(N)));
    assert_eq!((get("dcirouter_pfc_frames_received_total{kind=pfc,port=wan}"), get("dcirouter_pfc_frames_received_total{kind=ignored,port=wan}")), (1.0, 0.0));
    let workers = ok("show workers");
    let counters = ok("show counters");
    let st = stop_deadline(&mut child, RUN_DEADLINE);
    let so = std::fs::read_to_string(&out).unwrap();
    let se = std::fs::read_to_string(out.with_extension("err")).unwrap();
    eprintln!("--- dcirouter stdout\n{so}\n--- stderr\n{se}\n--- show workers\n{workers}");
    assert!(st.success(), "{st:?}");

    let (head, prios) = pfc_block(&show, "wan");
    assert_eq!(head, format!("pfc 'wan': priorities [3], 802.3x pause ignored, quanta at 1 Mb/s; received pfc 1 pause 0 ignored 0 (partly 0); {want_held}"), "{show}");
    assert_eq!(prios.len(), 1, "{show}");
    let left: f64 = prios[0]
        .strip_prefix("  priority 3: paused, ")
        .and_then(|r| r.strip_suffix(" us left; pauses 1, resumes 0"))
        .unwrap_or_else(|| panic!("priority 3 paused: {show}"))
        .parse()
        .unwrap();
    // 65535 x 512 bits at 1 Mb/s = 33553920 us, asked within seconds.
    assert!(left > 1e6 && left <= 33_553_920.0, "time left {left} us");
    assert_eq!(value(&counters, "pfc-received"), 1, "{counters}");
    // The pause came in on worker 0, the queue is worker 1's.
    assert!(se.contains("port wan: egress not shaped (drained as fast as the NIC takes packets)") && se.contains("owned by worker 1"), "{se}");
    let w0 = workers.lines().find(|l| l.starts_with("worker 0:")).expect("worker 0");
    assert!(w0.contains("wan/1 1"), "worker 0 received the pause frame: {workers}");

    // At exit: the held packets freed and counted, nothing else lost.
    assert_eq!(counter(&so, "shutdown-discard"), u64::from(N), "{so}");
    assert_eq!(drop_total(&so), FILLER + u64::from(N), "{so}");
    assert_eq!(port_packets(&so, "wan"), (1, u64::from(N)));
    let (head, prios) = pfc_block(&so, "wan");
    assert_eq!(head, format!("pfc 'wan': priorities [3], 802.3x pause ignored, quanta at 1 Mb/s; received pfc 1 pause 0 ignored 0 (partly 0); data held now 0, held so far {N}"), "{so}");
    assert!(prios.len() == 1 && prios[0].starts_with("  priority 3: paused, "), "still paused at exit: {so}");
    let sent: Vec<(String, u32)> = ["wan-out.pcap", "wan-out1.pcap"].iter().flat_map(|p| read_timed(&dir.join(p))).map(|(_, f)| tag(&f).expect("only data")).collect();
    assert_eq!(sent, (0..N).map(|i| ("N0".to_string(), i)).collect::<Vec<_>>(), "only priority 0 left, in order");
    assert_eq!(mempool_in_use(&so), 0, "the held mbufs came back");
}

/// Rule: README "Metrics": `dcirouter_pfc_paused` has a series "per port
/// with `[port.pfc]` and honoured priority", as `show pfc` lists them; an
/// 802.3x PAUSE port (`pause = true`) honours all eight. Was: the series
/// were taken from the PFC priority list alone, empty on such a port: the
/// family had no sample while `show pfc` said every priority was paused.
#[test]
fn a_pause_port_has_its_eight_paused_series() {
    let name = "a_pause_port_has_its_eight_paused_series";
    if !scapy_here(name) {
        return;
    }
    let dir = workdir("pfc-pause-metrics");
    control::demo::write_pcap(&dir.join("dc-in.pcap"), &[]).unwrap();
    // 65535 quanta at 1 Mb/s: paused for the whole run.
    control_pcap(&dir, "wan-in.pcap", &["pause:65535"]);
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let addr = format!("127.0.0.1:{port}");
    let text = config(&dir, "[port.pfc]\npause = true\nlink_mbps = 1", "") + &format!("[metrics]\nlisten = \"{addr}\"\n");
    let cfg = dir.join("r.toml");
    std::fs::write(&cfg, text).unwrap();
    let sock = dir.join("ctl.sock");
    let (mut child, _out) = start_with_ctl("pfc-pause-metrics", &cfg, &dir, &sock, &["--duration", "60"]);
    let s = sock.to_str().unwrap().to_string();
    // Until the PAUSE was received (bounded: 200 x 50 ms).
    let mut show = String::new();
    for _ in 0..200 {
        show = control::ctl::request(&s, "show pfc").unwrap();
        if show.contains("pause 1 ignored") {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let r = http(&addr, "GET /metrics HTTP/1.1\r\nHost: router\r\n\r\n");
    let st = stop_deadline(&mut child, RUN_DEADLINE);
    assert!(st.success(), "{st:?}");
    let (_, prios) = pfc_block(&show, "wan");
    assert_eq!(prios.len(), 8, "show pfc lists the eight priorities: {show}");
    assert!(prios.iter().all(|l| l.contains(": paused, ")), "{show}");
    let m = prometheus_oracle(r.split_once("\r\n\r\n").unwrap().1);
    for p in 0..8 {
        assert_eq!(m.get(&format!("dcirouter_pfc_paused{{port=wan,priority={p}}}")).copied(), Some(1.0), "priority {p} on the page:\n{r}");
    }
}
