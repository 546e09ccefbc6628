//! Several RX queues per port, spread over several workers, with the Linux
//! kernel as the peer: dcirouter on two multi-queue net_tap ports (two RX
//! queues each) and two worker cores, so each worker polls one queue of
//! each port (a core serving several queues). The kernel spreads the flows
//! a host sends over the tap's queues by flow hash, as a NIC's RSS would.
//! 64 UDP flows per address family must all arrive, each flow in order
//! (one flow stays on one queue and one worker), both queues of the
//! sending port must have carried traffic, and every mbuf must be back
//! after SIGTERM. Its own test binary: two polling workers take both cores
//! of the CI machine, which must not slow the other net_tap test's
//! zero-loss checks.

mod common;
use common::netns::*;
use common::*;
use std::process::Command;
use std::time::Duration;

/// Packets received on (port, queue) from a `show workers` / exit table:
/// `worker 0: core 0 rx a/0 12, b/0 3 polls ...`.
fn queue_rx(table: &str, port: &str, queue: u16) -> Option<u64> {
    let key = format!("{port}/{queue}");
    table.lines().filter_map(|l| l.split_once(" rx ")).find_map(|(_, rest)| {
        let list = rest.split(" polls ").next()?;
        list.split(", ").find_map(|e| {
            let (k, n) = e.split_once(' ')?;
            (k == key).then(|| n.parse().ok()).flatten()
        })
    })
}

#[test]
fn queue_rx_reads_the_workers_table() {
    let t = "worker 0: core 0 rx a/0 12, b/0 3 polls 100 busy 7\nworker 1: core 1 rx a/1 9, b/1 0 polls 80 busy 5 cpu 0.100 s\n";
    assert_eq!(queue_rx(t, "a", 0), Some(12));
    assert_eq!(queue_rx(t, "a", 1), Some(9));
    assert_eq!(queue_rx(t, "b", 1), Some(0));
    assert_eq!(queue_rx(t, "c", 0), None);
}

#[test]
fn flows_spread_over_rx_queues_and_workers_stay_in_order() {
    if let Err(why) = can_run() {
        skip("tap_multiqueue", &why);
        return;
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 2 {
        skip("tap_multiqueue", &format!("needs 2 CPUs for 2 worker cores, this process may use {cpus}"));
        return;
    }
    python_ok().expect("python3 is required for the UDP peers");
    let lab = TapLab::new("mq");
    let ports = lab.ports("rx_queues = 2\n", "rx_queues = 2\n");
    let TapLab { n1, n2, t1, t2, dir, sock, cfg } = lab;
    std::fs::write(&cfg, format!("[dataplane]\nstatus_interval_ms = 1000\nworker_cores = [0, 1]\n[mempool]\nmbufs_per_socket = 8191\ncache_size = 64\n{ports}")).unwrap();
    let _ns = Netns::create(&[&n1, &n2]);
    let mut router = Router::start("tapmq", &cfg, &dir, &sock);
    let ctl = |cmd: &str| control::ctl::request(sock.to_str().unwrap(), cmd).unwrap();
    // Two workers, each polling one queue of each port.
    let w = ctl("show workers");
    let lines: Vec<&str> = w.lines().filter(|l| l.starts_with("worker ")).collect();
    assert_eq!(lines.len(), 2, "two workers: {w}");
    assert!(lines[0].starts_with("worker 0: core 0 rx a/0 ") && lines[0].contains(", b/0 "), "{w}");
    assert!(lines[1].starts_with("worker 1: core 1 rx a/1 ") && lines[1].contains(", b/1 "), "{w}");

    host(&n1, &t1, "10.1.0.2/24", "2001:db8:a::2/64", "10.1.0.1", "2001:db8:a::1");
    host(&n2, &t2, "10.2.0.2/24", "2001:db8:b::2/64", "10.2.0.1", "2001:db8:b::1");
    for dst in ["10.2.0.2", "2001:db8:b::2"] {
        assert!(ping_until_reply(&n1, dst, 10), "no reply from {dst} through the router\n{}", diagnose(&[&n1, &n2], &sock));
    }
    let before = ctl("show workers");
    // The router's own first ND / MLD frames may meet a tap whose kernel
    // side is not up yet (the tap PMD's write fails and the frame counts as
    // tx-full); what must not happen is a forwarded datagram lost that way.
    let tx_full_before = counter(&ctl("show counters"), "tx-full");

    // 64 flows (source ports) per family, 40 datagrams each, paced.
    let flows = 64usize;
    let count = 40 * flows;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/oracle/udp_seq.py");
    let recv = Command::new("ip")
        .args(["netns", "exec", &n2, "python3", script, "recv", "5555", "--seconds", "60"])
        .stdout(std::fs::File::create(dir.join("recv.txt")).unwrap())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let send = Command::new("ip")
        .args(["netns", "exec", &n1, "python3", script, "send", "10.2.0.2:5555", "[2001:db8:b::2]:5555", "--count", &count.to_string(), "--rate", "400", "--flows", &flows.to_string()])
        .output()
        .unwrap();
    assert!(send.status.success(), "sender: {}", String::from_utf8_lossy(&send.stderr));
    let mut recv = recv;
    assert!(recv.wait().unwrap().success());
    let after = ctl("show workers");
    eprintln!("--- show workers before the UDP flows\n{before}--- after\n{after}");

    let lines = std::fs::read_to_string(dir.join("recv.txt")).unwrap();
    for dst in ["10.2.0.2", "2001:db8:b::2"] {
        let seqs: Vec<usize> = lines.lines().filter(|l| l.ends_with(&format!(" {dst}"))).filter_map(|l| l.split_whitespace().nth(1)?.parse().ok()).collect();
        let mut sorted = seqs.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!((seqs.len(), sorted.len()), (count, count), "{dst}: every datagram once");
        // Datagram i went out on flow i mod 64: within a flow, in order.
        for f in 0..flows {
            let of_flow: Vec<usize> = seqs.iter().copied().filter(|i| i % flows == f).collect();
            assert!(of_flow.windows(2).all(|w| w[0] < w[1]), "{dst} flow {f} reordered: {of_flow:?}");
        }
    }
    // Both of port a's queues carried the flows (the kernel hashes 128
    // flows over two queues: one queue with all of them has probability
    // 2^-127), and so both workers forwarded.
    let delta = |q: u16| queue_rx(&after, "a", q).unwrap() - queue_rx(&before, "a", q).unwrap();
    let (q0, q1) = (delta(0), delta(1));
    assert!(q0 + q1 >= 2 * count as u64, "port a received every datagram: {q0} + {q1}");
    assert!(q0 >= 2 * count as u64 / 10 && q1 >= 2 * count as u64 / 10, "both queues carry at least a tenth of the flows' datagrams: {q0} / {q1}");

    let so = router.stop();
    assert_eq!(counter(&so, "tx-full"), tx_full_before, "no frame refused by a full tx queue while the flows ran");
    assert_eq!(mempool_in_use(&so), 0, "every mbuf back in its pool after SIGTERM");
    // The exit table has the same per-queue lines, with CPU time.
    let wl: Vec<&str> = so.lines().filter(|l| l.starts_with("worker ")).collect();
    assert_eq!(wl.len(), 2, "{so}");
    assert!(wl.iter().all(|l| l.contains(" cpu ")), "{so}");
    assert!(queue_rx(&so, "a", 0).unwrap() >= queue_rx(&after, "a", 0).unwrap());
    let (rx_a, _) = port_packets(&so, "a");
    let per_queue: u64 = (0..2).map(|q| queue_rx(&so, "a", q).unwrap()).sum();
    assert_eq!(per_queue, rx_a, "the per-queue counts add up to the port's rx-packets");
}
