//! The Prometheus page and the FANN agent (`control::fann_agent`), from
//! a review: each test failed on the code before its fix, for the reason
//! in its "Was". The end-to-end one runs the real `dcirouter` binary on
//! net_pcap with the helpers of the top-level integration tests
//! (`tests/common`). The HTTP handling's tests are in metrics_http.rs.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

/// The metric families of a Prometheus text page as the independent
/// `prometheus_client` parser (PyPI) reads it: one `TYPE NAME` line per
/// family, in page order.
fn prometheus_families(page: &str) -> Vec<String> {
    use std::process::{Command, Stdio};
    let script = "import sys\nfrom prometheus_client.parser import text_string_to_metric_families\nfor f in text_string_to_metric_families(sys.stdin.read()):\n    print(f.type, f.name)\n";
    let mut c = Command::new("python3").args(["-c", script]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("python3");
    c.stdin.take().unwrap().write_all(page.as_bytes()).unwrap();
    let o = common::wait_output(c, Duration::from_secs(60));
    assert!(o.status.success(), "prometheus_client rejects the page: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).lines().map(|l| l.to_string()).collect()
}

/// Rule: a metric family's name is unique on a page (Prometheus text
/// format: "Only one TYPE line may exist for a given metric name";
/// OpenMetrics 1.0 s."MetricFamily": "MetricFamily names MUST be unique",
/// where a counter `x` exposes its samples as `x_total`). The independent
/// `prometheus_client` parser reads the counter `x_total` as family `x`,
/// and its OpenMetrics parser refuses such a page ("Clashing name"), as
/// its registry refuses to hold both. Was: metrics.rs:248-249 export the
/// gauge `dcirouter_pfc_held_packets` and the counter
/// `dcirouter_pfc_held_packets_total` for every `[port.pfc]` port: two
/// families named `dcirouter_pfc_held_packets`, a gauge and a counter.
#[test]
fn no_two_metric_families_share_a_name() {
    use common::*;
    let name = "mr-families";
    let dir = workdir(name);
    for f in ["dc-in.pcap", "wan-in.pcap"] {
        control::demo::write_pcap(&dir.join(f), &[]).unwrap();
    }
    // A free port for the endpoint (taken and let go again).
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let addr = format!("127.0.0.1:{port}");
    let d = dir.display();
    let text = format!(
        "[dataplane]\nstatus_interval_ms = 0\n[mempool]\nmbufs_per_socket = 2047\ncache_size = 64\n\
         [[port]]\nname = \"dc\"\ndevice = \"net_pcap0,rx_pcap={d}/dc-in.pcap,tx_pcap={d}/dc-out.pcap\"\nmac = \"02:dc:00:00:00:01\"\naddresses = [\"2001:db8:1::1/64\"]\n\
         [[port]]\nname = \"wan\"\ndevice = \"net_pcap1,rx_pcap={d}/wan-in.pcap,tx_pcap={d}/wan-out.pcap\"\nmac = \"02:dc:00:00:00:02\"\naddresses = [\"2001:db8:2::1/64\"]\nrate_mbps = 50\nqueue_bytes = 600000\n\
         [port.congestion]\nrtt_est_us = 2000\n\
         [port.pfc]\npriorities = [3]\npause = false\nlink_mbps = 1\n\
         [metrics]\nlisten = \"{addr}\"\n"
    );
    let cfg = dir.join("r.toml");
    std::fs::write(&cfg, text).unwrap();
    let sock = dir.join("ctl.sock");
    let (mut child, out) = start_with_ctl(name, &cfg, &dir, &sock, &["--duration", "60"]);
    // The endpoint is bound just after the socket: connect within 5 s
    // (bounded: 100 x 50 ms), then one scrape.
    let mut up = false;
    for _ in 0..100 {
        if TcpStream::connect(&addr).is_ok() {
            up = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let r = if up { http(&addr, "GET /metrics HTTP/1.1\r\nHost: router\r\n\r\n") } else { String::new() };
    let st = stop_deadline(&mut child, RUN_DEADLINE);
    eprintln!("--- stderr\n{}", std::fs::read_to_string(out.with_extension("err")).unwrap_or_default());
    assert!(st.success(), "{st:?}");
    let (head, page) = r.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no HTTP reply: {r:?}"));
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(page.contains("dcirouter_pfc_held_packets") && page.contains("dcirouter_congestion_rate_bps"), "the PFC and congestion series are on the page:\n{page}");
    let fams = prometheus_families(page);
    let mut seen: std::collections::BTreeMap<String, Vec<String>> = std::collections::BTreeMap::new();
    for l in &fams {
        let (kind, fam) = l.split_once(' ').unwrap();
        seen.entry(fam.to_string()).or_default().push(kind.to_string());
    }
    let clashes: Vec<_> = seen.iter().filter(|(_, k)| k.len() > 1).collect();
    assert!(clashes.is_empty(), "families exported more than once (name: types): {clashes:?}");
}

// ------------------------------------------------------------- FANN agent

/// Rule: README "Notifications across domains" (`[fann]`): "A
/// notification the limits refuse is delayed, not lost: each port keeps,
/// per event type, what the PEs were told and sends the latest state once
/// there are tokens (an event that cleared meanwhile is never sent ...)";
/// `Detector::retry` is to run "after this call's changes: a state that
/// cleared is not sent" (dataplane/src/fann.rs). Was:
/// `FannAgent::poll_with_flows` retries what the longest-held port holds
/// before it hands that port this poll's observations (fann_agent.rs:195-197),
/// and then hands them over one at a time, link first
/// (`on_link_with_flow`, which retries all held slots at its end) and the
/// queue depth after (`on_tx`, fann_agent.rs:207-211); so a queue buildup
/// held back by the node's limit and over by the time tokens are back is
/// sent anyway, to every PE (which divides the path's weight for a queue
/// that has drained), and its recovery waits for another refill.
#[test]
fn a_held_event_that_cleared_before_the_tokens_came_back_is_never_sent() {
    use control::fann_agent::{FannAgent, FannPlan};
    use dataplane::fann::DetectorConfig;
    use dataplane::wire::fann::{event, Packet, PacketRepr, CODE_EVENT};
    use dataplane::wire::params::Params;
    let node: std::net::Ipv6Addr = "fc00::1".parse().unwrap();
    let pes: Vec<std::net::Ipv6Addr> = vec!["fc00::a".parse().unwrap(), "fc00::b".parse().unwrap()];
    // One notification (to both PEs) per second, two tokens at most.
    let plan = FannPlan { node, ingress_pes: pes.clone(), encap: Vec::new(), path_ids: Vec::new(), udp: false, detector: DetectorConfig { node, rate_pps: 1, burst: 2, ..Default::default() } };
    let mut a = FannAgent::with_first_event_id(plan, Params::DEFAULT, &[(0, 100_000_000_000)], 100);
    let parse = |ip: &[u8]| {
        let to = std::net::Ipv6Addr::from(<[u8; 16]>::try_from(&ip[24..40]).unwrap());
        PacketRepr::parse(&Packet::new_checked(&ip[40..]).unwrap(), &node, &to, Params::DEFAULT.icmpv6_fann_type).unwrap()
    };
    const MB17: u64 = 17 << 20;
    assert!(a.poll(1_000_000, |_| 0, |_| 0, |_| 0, |_| true).is_empty(), "baseline");
    // The link fails: its event takes the node's two tokens.
    let p = a.poll(2_000_000, |_| 0, |_| 0, |_| 0, |_| false);
    assert_eq!(p.len(), 2, "the link failure to both PEs");
    assert_eq!(parse(&p[0]).message.event_type, event::LINK_FAILURE);
    // A queue builds up (17 MB, over the 16 MB threshold): held back.
    assert!(a.poll(3_000_000, |_| 0, |_| MB17, |_| 0, |_| false).is_empty(), "no tokens: held");
    assert_eq!(a.rate_limited, 1);
    // Two seconds on, tokens are back, and the queue is empty again: the
    // buildup is over before it could be told.
    let p = a.poll(2_003_000_000, |_| 0, |_| 0, |_| 0, |_| false);
    let told: Vec<(u8, u8, u8)> = p.iter().map(|ip| {
        let r = parse(ip);
        (r.code, r.message.event_type, r.message.event_subtype)
    }).collect();
    assert!(!told.contains(&(CODE_EVENT, event::QUEUE_BUILDUP, 0)), "a queue buildup that had cleared was sent to the PEs: {told:?}");
}
