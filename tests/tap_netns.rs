//! The Linux kernel as a real peer: dcirouter on two net_tap ports, each tap
//! moved into its own network namespace with a host configured by `ip`.
//! The hosts ping and exchange UDP through the router over IPv4 and IPv6;
//! ARP and ND are resolved by the router (no static neighbours anywhere).
//! A route added at runtime over the management socket takes effect without
//! a restart and without losing a packet of the flows already running.

mod common;
use common::netns::*;
use common::*;
use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn linux_hosts_talk_through_the_router_and_runtime_route_add_loses_nothing() {
    if let Err(why) = can_run() {
        skip("tap_netns", &why);
        return;
    }
    python_ok().expect("python3 is required for the UDP peers");
    let lab = TapLab::new("dc");
    // Port b smaller than the hosts' 1500: path MTU discovery through the router.
    let ports = lab.ports("", "mtu = 1400\n");
    let TapLab { n1, n2, t1, t2, dir, sock, cfg } = lab;
    std::fs::write(
        &cfg,
        format!(
            r#"
[dataplane]
status_interval_ms = 1000
neighbour_solicit_interval_ms = 200
[mempool]
mbufs_per_socket = 4095
cache_size = 64
{ports}[srv6]
locator = "fc00:0:1::/48"
[[srv6.sid]]
sid = "fc00:0:1::e"
behaviour = "end.e"
# H.Encaps toward host 2's kernel End.DT6 SID.
[[srv6.policy]]
prefix = "2001:db8:99::/64"
segments = [["fc00:0:2::d6"]]
[[route]]
prefix = "fc00:0:2::/48"
via = "2001:db8:b::2"
# The kernel headend in host 2 sends into these two SIDs.
[[srv6.sid]]
sid = "fc00:0:1::1"
behaviour = "end"
[[srv6.sid]]
sid = "fc00:0:1::d6"
behaviour = "end.dt6"
[[route]]
prefix = "2001:db8:77::/64"
via = "2001:db8:a::2"
[[route]]
prefix = "fc00:0:a::/48"
via = "2001:db8:a::2"
"#
        ),
    )
    .unwrap();
    let _ns = Netns::create(&[&n1, &n2]);

    let mut router = Router::start("tap", &cfg, &dir, &sock);

    // Move the taps into the namespaces and configure the hosts.
    host(&n1, &t1, "10.1.0.2/24", "2001:db8:a::2/64", "10.1.0.1", "2001:db8:a::1");
    host(&n2, &t2, "10.2.0.2/24", "2001:db8:b::2/64", "10.2.0.1", "2001:db8:b::1");
    // A prefix the router does not know yet, behind host 2.
    assert!(in_ns(&n2, &["ip", "addr", "add", "10.9.9.9/32", "dev", "lo"]).status.success());

    // Ping both ways, IPv4 and IPv6. The first packets resolve the router
    // (kernel ARP/ND) and the far host (router ARP/ND): warm up, then demand
    // every reply.
    for (ns, dst) in [(&n1, "10.2.0.2"), (&n1, "2001:db8:b::2"), (&n2, "10.1.0.2"), (&n1, "10.1.0.1"), (&n1, "2001:db8:a::1")] {
        assert!(ping_until_reply(ns, dst, 10), "{ns}: no reply from {dst} after 10 tries\n{}", diagnose(&[&n1, &n2], &sock));
        let o = in_ns(ns, &["ping", "-c", "5", "-i", "0.2", "-W", "2", dst]);
        let txt = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success() && txt.contains(" 0% packet loss"), "{ns} ping {dst}:\n{txt}");
    }
    // Frames the router sent before the hosts brought their taps up were
    // refused by the tap (counted as tx-full); from here on none may be.
    let tx_full_before = counter(&control::ctl::request(sock.to_str().unwrap(), "show counters").unwrap(), "tx-full");
    // traceroute-style: TTL 1 toward host 2 is answered by the router.
    let o = in_ns(&n1, &["ping", "-c", "1", "-W", "2", "-t", "1", "10.2.0.2"]);
    let txt = String::from_utf8_lossy(&o.stdout);
    assert!(txt.contains("10.1.0.1") && txt.to_lowercase().contains("time to live exceeded"), "TTL 1 ping:\n{txt}");

    // UDP with sequence numbers: 10.2.0.2 and 2001:db8:b::2 are routed from
    // the start, 10.9.9.9 only after `route add` halfway through.
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/oracle/udp_seq.py");
    let recv = Command::new("ip")
        .args(["netns", "exec", &n2, "python3", script, "recv", "5555", "--seconds", "40"])
        // A file, not a pipe: a full pipe would stall the receiver and make
        // its socket drop datagrams.
        .stdout(std::fs::File::create(dir.join("recv.txt")).unwrap())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let count = 1500;
    let send = Command::new("ip")
        .args(["netns", "exec", &n1, "python3", script, "send", "10.2.0.2:5555", "[2001:db8:b::2]:5555", "10.9.9.9:5555", "--count", &count.to_string(), "--rate", "300"])
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    let r = control::ctl::request(sock.to_str().unwrap(), "route add 10.9.9.0/24 via 10.2.0.2").unwrap();
    assert!(r.trim_end().ends_with("OK"), "route add: {r}");
    let added_at = Instant::now();
    let st = send.wait_with_output().unwrap();
    assert!(st.status.success());
    eprintln!("sender done {:?} after route add", added_at.elapsed());
    let mut recv = recv;
    assert!(recv.wait().unwrap().success());
    let lines = std::fs::read_to_string(dir.join("recv.txt")).unwrap();
    let seqs = |dst: &str| -> Vec<u32> {
        lines.lines().filter(|l| l.ends_with(&format!(" {dst}"))).filter_map(|l| l.split_whitespace().nth(1)?.parse().ok()).collect()
    };
    // END.E with the kernel's SRv6 as the WAN-side headend: host 2 sends a
    // Long-haul CNP (ICMPv6 type 200, the draft's s.7 body) to host 1; the
    // kernel encapsulates it (seg6 encap) toward the router's END.E SID; the
    // router decapsulates it and routes it to host 1, which receives it.
    let o = in_ns(&n2, &["ip", "-6", "route", "add", "2001:db8:a::2/128", "encap", "seg6", "mode", "encap", "segs", "fc00:0:1::e", "via", "2001:db8:b::1", "dev", &t2]);
    assert!(o.status.success(), "seg6 encap route: {}", String::from_utf8_lossy(&o.stderr));
    let rx_script = r#"
import socket, time
s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
s.settimeout(0.5)
end = time.monotonic() + 10
while time.monotonic() < end:
    try:
        data, addr = s.recvfrom(2048)
    except socket.timeout:
        continue
    if data[0] == 200:
        print(addr[0], data.hex())
        break
else:
    print("timeout")
"#;
    let rx = Command::new("ip").args(["netns", "exec", &n1, "python3", "-c", rx_script]).stdout(std::process::Stdio::piped()).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let tx_script = r#"
import socket, time
s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
body = bytes([200, 0, 0, 0]) + bytes.fromhex("b480001e0000006401 01fbd0".replace(" ", ""))
for _ in range(3):
    s.sendto(body, ("2001:db8:a::2", 0))
    time.sleep(0.2)
"#;
    let o = in_ns(&n2, &["python3", "-c", tx_script]);
    assert!(o.status.success(), "send: {}", String::from_utf8_lossy(&o.stderr));
    let got = String::from_utf8_lossy(&rx.wait_with_output().unwrap().stdout).to_string();
    assert!(got.starts_with("2001:db8:b::2 c800") && got.trim_end().ends_with("b480001e000000640101fbd0"), "host 1 did not get the CNP through END.E: {got}");
    // END.E passes notifications only: a ping the kernel encapsulates
    // toward it the same way is dropped, not tunnelled into the DC.
    let o = in_ns(&n2, &["ping", "-c", "2", "-i", "0.2", "-W", "1", "2001:db8:a::2"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("100% packet loss"), "a ping through END.E: {}", String::from_utf8_lossy(&o.stdout));
    let o = in_ns(&n2, &["ip", "-6", "route", "del", "2001:db8:a::2/128"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    // H.Encaps with the kernel as the decapsulating peer: packets from host 1
    // to 2001:db8:99::/64 are encapsulated by the router toward fc00:0:2::d6,
    // a kernel seg6local End.DT6 SID in host 2's namespace, which
    // decapsulates and delivers them to its loopback address; replies come
    // back plain.
    for c in [
        vec!["ip", "-6", "addr", "add", "2001:db8:99::1/128", "dev", "lo"],
        // Table 255 (local): the decapsulated packet is for an address of
        // this namespace, whose route lives in the local table.
        vec!["ip", "-6", "route", "add", "fc00:0:2::d6/128", "encap", "seg6local", "action", "End.DT6", "table", "255", "dev", t2.as_str()],
    ] {
        let o = in_ns(&n2, &c);
        assert!(o.status.success(), "{c:?}: {}", String::from_utf8_lossy(&o.stderr));
    }
    let mut ok = false;
    for _ in 0..5 {
        if in_ns(&n1, &["ping", "-c", "1", "-W", "1", "2001:db8:99::1"]).status.success() {
            ok = true;
            break;
        }
    }
    assert!(ok, "no reply through H.Encaps + kernel End.DT6");
    let o = in_ns(&n1, &["ping", "-c", "3", "-i", "0.2", "-W", "2", "2001:db8:99::1"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains(" 0% packet loss"), "{}", String::from_utf8_lossy(&o.stdout));

    // Fragmentation with the kernel as the judge: a 2028-byte echo without
    // DF leaves host 1 as two fragments (1500 + 548, its link MTU); the
    // router cuts the first again for port b's MTU of 1400 (fragments of a
    // fragment), host 2 reassembles three and replies. Before the DF test
    // below, so the kernel has no cached path MTU yet.
    let o = in_ns(&n1, &["ping", "-c", "2", "-i", "0.2", "-W", "2", "-M", "dont", "-s", "2000", "10.2.0.2"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains(" 0% packet loss"), "fragmented ping:\n{}", String::from_utf8_lossy(&o.stdout));
    let c = control::ctl::request(sock.to_str().unwrap(), "show counters").unwrap();
    assert_eq!(counter(&c, "ipv4-fragmented"), 2, "the router fragmented each request's first fragment:\n{c}");
    assert_eq!(counter(&c, "ipv4-fragments-created"), 4, "{c}");
    // 3000-byte pings to the router itself: the kernel fragments them for
    // its 1500-byte link, the router reassembles them, answers, and
    // fragments its replies (IPv4, and IPv6 with a Fragment header); the
    // kernel reassembles those.
    for dst in ["10.1.0.1", "2001:db8:a::1"] {
        let o = in_ns(&n1, &["ping", "-c", "2", "-i", "0.2", "-W", "2", "-s", "3000", dst]);
        assert!(String::from_utf8_lossy(&o.stdout).contains(" 0% packet loss"), "big ping to {dst}:\n{}", String::from_utf8_lossy(&o.stdout));
    }
    let c = control::ctl::request(sock.to_str().unwrap(), "show counters").unwrap();
    assert_eq!(counter(&c, "reassembled"), 4, "{c}");
    assert_eq!(counter(&c, "ipv6-fragments-created"), 6, "two replies of 3 fragments: {c}");
    assert_eq!(counter(&c, "ipv4-fragments-created"), 4 + 6, "{c}");

    // Path MTU discovery with the kernel as the judge: port b has MTU 1400.
    // A 1428-byte IPv4 echo with DF gets Fragmentation Needed (mtu 1400)
    // from the router, which the kernel accepts (checksum, quoted header)
    // and caches; a 1400-byte one then passes.
    let big4 = in_ns(&n1, &["ping", "-c", "1", "-W", "2", "-M", "do", "-s", "1400", "10.2.0.2"]);
    let txt = String::from_utf8_lossy(&big4.stdout).to_string() + &String::from_utf8_lossy(&big4.stderr);
    assert!(txt.contains("10.1.0.1") && txt.contains("Frag needed") && txt.contains("mtu = 1400"), "DF ping over the MTU:\n{txt}");
    let r = String::from_utf8_lossy(&in_ns(&n1, &["ip", "route", "get", "10.2.0.2"]).stdout).to_string();
    assert!(r.contains("mtu 1400"), "the kernel cached the path MTU: {r}");
    let o = in_ns(&n1, &["ping", "-c", "2", "-i", "0.2", "-W", "2", "-M", "do", "-s", "1372", "10.2.0.2"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains(" 0% packet loss"), "{}", String::from_utf8_lossy(&o.stdout));
    // IPv6 into the SRv6 tunnel (H.Encaps toward 2001:db8:99::/64 adds
    // outer headers on port b): Packet Too Big with the tunnel MTU, which
    // the kernel caches; a ping of exactly that size then gets through.
    let big6 = in_ns(&n1, &["ping", "-c", "1", "-W", "2", "-M", "do", "-s", "1400", "2001:db8:99::1"]);
    let txt = String::from_utf8_lossy(&big6.stdout).to_string() + &String::from_utf8_lossy(&big6.stderr);
    let mtu: usize = txt
        .split("Packet too big: mtu=")
        .nth(1)
        .and_then(|t| t.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok())
        .unwrap_or_else(|| panic!("no Packet Too Big from the router:\n{txt}"));
    assert!(txt.contains("2001:db8:a::1"), "from the router's address:\n{txt}");
    assert!((1280..1400 - 40 + 1).contains(&mtu), "tunnel MTU {mtu}: port MTU 1400 less at least the outer IPv6 header");
    let r = String::from_utf8_lossy(&in_ns(&n1, &["ip", "-6", "route", "get", "2001:db8:99::1"]).stdout).to_string();
    assert!(r.contains(&format!("mtu {mtu}")), "the kernel cached the path MTU: {r}");
    let fit = (mtu - 48).to_string();
    let o = in_ns(&n1, &["ping", "-c", "2", "-i", "0.2", "-W", "2", "-M", "do", "-s", &fit, "2001:db8:99::1"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains(" 0% packet loss"), "{}", String::from_utf8_lossy(&o.stdout));

    // The kernel as the headend into the router's SIDs (host 2 encapsulates):
    // (a) End.DT6: ping 2001:db8:77::1 (host 1's loopback) with the echo
    //     requests encapsulated toward the router's End.DT6 SID, which
    //     decapsulates and routes them to host 1;
    // (b) End: ping 2001:db8:78::1 with segs [router End SID, host 1's kernel
    //     End.DT6 SID]: the router's End advances the SRH and forwards to
    //     host 1, whose kernel decapsulates. Replies come back plain.
    for c in [
        vec!["ip", "-6", "addr", "add", "2001:db8:77::1/128", "dev", "lo"],
        vec!["ip", "-6", "addr", "add", "2001:db8:78::1/128", "dev", "lo"],
        vec!["ip", "-6", "route", "add", "fc00:0:a::d6/128", "encap", "seg6local", "action", "End.DT6", "table", "255", "dev", t1.as_str()],
    ] {
        let o = in_ns(&n1, &c);
        assert!(o.status.success(), "{c:?}: {}", String::from_utf8_lossy(&o.stderr));
    }
    for c in [
        vec!["ip", "-6", "route", "add", "2001:db8:77::1/128", "encap", "seg6", "mode", "encap", "segs", "fc00:0:1::d6", "via", "2001:db8:b::1", "dev", t2.as_str()],
        vec!["ip", "-6", "route", "add", "2001:db8:78::1/128", "encap", "seg6", "mode", "encap", "segs", "fc00:0:1::1,fc00:0:a::d6", "via", "2001:db8:b::1", "dev", t2.as_str()],
    ] {
        let o = in_ns(&n2, &c);
        assert!(o.status.success(), "{c:?}: {}", String::from_utf8_lossy(&o.stderr));
    }
    for dst in ["2001:db8:77::1", "2001:db8:78::1"] {
        let mut ok = false;
        for _ in 0..5 {
            if in_ns(&n2, &["ping", "-c", "1", "-W", "1", dst]).status.success() {
                ok = true;
                break;
            }
        }
        assert!(ok, "no reply from {dst} through the kernel headend and the router's SIDs");
        let o = in_ns(&n2, &["ping", "-c", "3", "-i", "0.2", "-W", "2", dst]);
        assert!(String::from_utf8_lossy(&o.stdout).contains(" 0% packet loss"), "{dst}: {}", String::from_utf8_lossy(&o.stdout));
    }

    // Runtime SID changes over the management socket: an End.DT6 SID that
    // does not exist yet, then added, then removed, while host 2's kernel
    // keeps encapsulating toward it.
    let ctl = |cmd: &str| control::ctl::request(sock.to_str().unwrap(), cmd).unwrap();
    assert!(in_ns(&n1, &["ip", "-6", "addr", "add", "2001:db8:79::1/128", "dev", "lo"]).status.success());
    let r = ctl("route add 2001:db8:79::/64 via 2001:db8:a::2");
    assert!(r.trim_end().ends_with("OK"), "{r}");
    let o = in_ns(&n2, &["ip", "-6", "route", "add", "2001:db8:79::1/128", "encap", "seg6", "mode", "encap", "segs", "fc00:0:1::d7", "via", "2001:db8:b::1", "dev", &t2]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ping79 = |n: &str| in_ns(&n2, &["ping", "-c", n, "-i", "0.2", "-W", "1", "2001:db8:79::1"]);
    assert!(!ping79("2").status.success(), "answered before the SID exists");
    let r = ctl("sid add fc00:0:1::d7 end.dt6");
    assert!(r.trim_end().ends_with("OK"), "{r}");
    let mut ok = false;
    for _ in 0..5 {
        if ping79("1").status.success() {
            ok = true;
            break;
        }
    }
    assert!(ok, "no reply once the End.DT6 SID was added at runtime");
    let o = ping79("3");
    assert!(String::from_utf8_lossy(&o.stdout).contains(" 0% packet loss"), "{}", String::from_utf8_lossy(&o.stdout));
    let t = ctl("show sids");
    assert!(t.lines().any(|l| l.starts_with("fc00:0:1::d7") && l.contains("End.DT6")), "{t}");
    assert!(t.lines().any(|l| l.starts_with("fc00:0:1::1 ") && l.contains("End")), "{t}");
    let r = ctl("sid del fc00:0:1::d7");
    assert!(r.trim_end().ends_with("OK"), "{r}");
    assert!(String::from_utf8_lossy(&ping79("2").stdout).contains("100% packet loss"), "still answered after sid del");
    let r = ctl("sid add fc00:0:2::1 end");
    assert!(r.starts_with("ERR") && r.contains("outside the locator"), "{r}");
    let r = ctl("sid add fc00:0:1::d8 end.mt hmac-required");
    assert!(r.starts_with("ERR") && r.contains("no HMAC key"), "{r}");
    let r = ctl("hmac-key add 9 00112233445566778899aabbccddeeff 16");
    assert!(r.trim_end().ends_with("OK"), "{r}");
    let r = ctl("sid add fc00:0:1::d8 end.mt hmac-required receiver 2001:db8:a::2 0x10");
    assert!(r.trim_end().ends_with("OK"), "{r}");
    let t = ctl("show sids");
    assert!(t.contains("fc00:0:1::d8") && t.contains("End.MT hmac-required receiver 2001:db8:a::2 0x10") && t.contains("HMAC key IDs: 9"), "{t}");
    assert!(!t.contains("00112233"), "secrets are never shown: {t}");

    let routes = control::ctl::request(sock.to_str().unwrap(), "show routes").unwrap();
    assert!(routes.contains("10.9.9.0/24 via 10.2.0.2"), "{routes}");
    let neigh = control::ctl::request(sock.to_str().unwrap(), "show neighbours").unwrap();
    assert!(neigh.contains("10.1.0.2") && neigh.contains("2001:db8:b::2") && neigh.contains("Learned"), "{neigh}");

    let so = router.stop();
    for dst in ["10.2.0.2", "2001:db8:b::2"] {
        let s = seqs(dst);
        let missing: Vec<usize> = (0..count).filter(|i| !s.contains(&(*i as u32))).collect();
        eprintln!("{dst}: {} received, missing {:?}", s.len(), &missing[..missing.len().min(50)]);
        assert_eq!(s.len(), count, "{dst}: received {} of {count} (loss across the runtime route add)", s.len());
        assert!(s.windows(2).all(|w| w[1] == w[0] + 1), "{dst}: out of order or gap");
    }
    let s = seqs("10.9.9.9");
    assert!(!s.is_empty(), "no packet reached 10.9.9.9 after the route was added");
    let first = s[0] as usize;
    assert!(first > 300 && first < count - 300, "10.9.9.9 traffic started at seq {first}");
    assert_eq!(s.len(), count - first, "10.9.9.9: once routed, every packet arrives");

    assert!(counter(&so, "arp-reply-sent") >= 1);
    assert!(counter(&so, "nd-advert-sent") >= 1);
    assert!(counter(&so, "arp-request-sent") >= 1);
    assert!(counter(&so, "nd-solicit-sent") >= 1);
    assert_eq!(counter(&so, "end-e-forwarded"), 3, "the kernel's three seg6-encapsulated CNPs went through END.E");
    assert!(counter(&so, "end-e-not-a-notification") >= 2, "the pings through END.E were dropped");
    assert!(counter(&so, "srv6-h-encaps") >= 3, "pings to 2001:db8:99::1 were encapsulated");
    assert!(counter(&so, "srv6-decap") >= 3, "the kernel's packets to the End.DT6 SID were decapsulated");
    assert!(counter(&so, "srv6-end") >= 3, "the kernel's packets to the End SID were advanced");
    assert!(
        (counter(&so, "no-route") + counter(&so, "icmp-net-unreachable-sent")) as usize >= first,
        "10.9.9.9 packets before the route: no-route, or answered with net unreachable"
    );
    assert!(counter(&so, "icmp-net-unreachable-sent") >= 1, "the sender was told there is no route");
    assert_eq!(counter(&so, "icmp-frag-needed-sent"), 1, "one DF ping over the MTU, then the kernel uses the cached path MTU");
    assert_eq!(counter(&so, "icmpv6-packet-too-big-sent"), 1, "one ping over the tunnel MTU, then the kernel uses the cached path MTU");
    assert_eq!(counter(&so, "tx-full"), tx_full_before, "no frame refused by a full tx queue once the hosts were up");
    assert_eq!(mempool_in_use(&so), 0, "every mbuf back in its pool after SIGTERM");
}

/// ECMP and link state on net_tap: a route over a gateway behind each
/// port. When the kernel takes tap 2 down (`ip link set ... down`), the
/// tap port's link goes down: the router leaves that next hop out of the
/// ECMP route (`show routes` marks it `linkdown`, `link-state-change`
/// counts it), and takes it back when the link comes up. A single-path
/// route keeps its next hop (there is no other). The taps stay in this
/// namespace: net_tap reads the link state of its tap by name, which it
/// cannot see once the tap is moved into another namespace (the router
/// then takes the link as up: the next test checks that too).
#[test]
fn ecmp_leaves_out_a_next_hop_whose_link_is_down() {
    if let Err(why) = can_run() {
        skip("tap_netns ecmp", &why);
        return;
    }
    let lab = TapLab::new("el");
    let ports = lab.ports("", "");
    let TapLab { t2, dir, sock, cfg, .. } = lab;
    std::fs::write(
        &cfg,
        format!(
            r#"
[dataplane]
status_interval_ms = 0
[mempool]
mbufs_per_socket = 4095
cache_size = 64
{ports}[[route]]
prefix = "10.9.0.0/16"
nexthop = [{{ via = "10.1.0.2" }}, {{ via = "10.2.0.2" }}]
[[route]]
prefix = "2001:db8:99::/48"
nexthop = [{{ via = "2001:db8:a::2" }}, {{ via = "2001:db8:b::2" }}]
[[route]]
prefix = "10.8.0.0/16"
via = "10.2.0.2"
# No hosts behind the taps: static gateways (reachability detection would
# find them silent and mark them unreachable, see the test below).
[[neighbour]]
ip = "10.1.0.2"
mac = "02:00:00:00:01:02"
interface = "a"
[[neighbour]]
ip = "10.2.0.2"
mac = "02:00:00:00:02:02"
interface = "b"
[[neighbour]]
ip = "2001:db8:a::2"
mac = "02:00:00:00:01:02"
interface = "a"
[[neighbour]]
ip = "2001:db8:b::2"
mac = "02:00:00:00:02:02"
interface = "b"
"#
        ),
    )
    .unwrap();
    let mut router = Router::start("tapecmp", &cfg, &dir, &sock);
    let wait = |want: &dyn Fn(&str) -> bool, what: &str| wait_ctl(&sock, "show routes", 5, want, what, &[]);
    let up = wait(&|r| !r.contains("linkdown"), "both links up");
    assert!(up.contains("10.9.0.0/16\n\tnexthop via 10.1.0.2 dev a weight 1\n\tnexthop via 10.2.0.2 dev b weight 1\n"), "{up}");
    sh(&["ip", "link", "set", &t2, "down"]);
    let down = wait(&|r| r.contains("nexthop via 10.2.0.2 dev b linkdown"), "b's next hop left out");
    assert!(down.contains("\tnexthop via 2001:db8:b::2 dev b linkdown weight 1\n") && down.contains("\tnexthop via 10.1.0.2 dev a weight 1\n"), "{down}");
    assert!(down.contains("10.8.0.0/16 via 10.2.0.2 dev b linkdown\n"), "{down}");
    sh(&["ip", "link", "set", &t2, "up"]);
    wait(&|r| !r.contains("linkdown"), "b back");
    let so = router.stop();
    assert!(counter(&so, "link-state-change") >= 2, "{so}");
    assert_eq!(mempool_in_use(&so), 0);
}

/// UDP datagrams of 1000 bytes from 10.1.0.2 to 10.8.0.1, as Ethernet
/// frames to the router's port a, written to the kernel side of a tap
/// (argv: tap, count, first id).
const UDP_FRAMES: &str = r#"
import socket, struct, sys
tap, n, first = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def csum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((tap, 0))
for i in range(first, first + n):
    udp = struct.pack("!HHHH", 4000, 5000, 1008, 0) + bytes(1000)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), i & 0xffff, 0, 64, 17, 0, socket.inet_aton("10.1.0.2"), socket.inet_aton("10.8.0.1"))
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    s.send(bytes.fromhex("02dc00000a01020000000102") + b"\x08\x00" + ip + udp)
"#;

/// A shaped port whose link goes down drops what it holds: port b is
/// shaped to 1 Mb/s, so 200 datagrams of 1042 bytes (1.7 s of the link)
/// queue up behind it; when the kernel takes tap 2 down, the router drops
/// its queue and what still comes for the port (`link-down`) instead of
/// sending seconds-old data once the link is back (Linux, too, resets an
/// interface's queue when its carrier goes). With the link back, new
/// datagrams leave again. Every
/// datagram is either sent or dropped for the link, and every mbuf is back
/// in its pool.
#[test]
fn a_shaped_port_whose_link_goes_down_drops_its_queue() {
    if let Err(why) = can_run() {
        skip("tap_netns link down", &why);
        return;
    }
    python_ok().expect("python3 is required to write the frames");
    let lab = TapLab::new("ld");
    let ports = lab.ports("", "rate_mbps = 1\n");
    let TapLab { t1, t2, dir, sock, cfg, .. } = lab;
    std::fs::write(
        &cfg,
        format!("[dataplane]\nstatus_interval_ms = 0\n[mempool]\nmbufs_per_socket = 4095\ncache_size = 64\n{ports}[[route]]\nprefix = \"10.8.0.0/16\"\nvia = \"10.2.0.2\"\n[[neighbour]]\nip = \"10.2.0.2\"\nmac = \"02:00:00:00:02:02\"\ninterface = \"b\"\n"),
    )
    .unwrap();
    let mut router = Router::start("taplinkdown", &cfg, &dir, &sock);
    let ctl = |c: &str| control::ctl::request(sock.to_str().unwrap(), c).unwrap();
    let send = |n: usize, first: usize| {
        let o = Command::new("python3").args(["-c", UDP_FRAMES, &t1, &n.to_string(), &first.to_string()]).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    // Datagrams counted by where they went: out of b, or dropped.
    let udp_out = |t: &str| port_packets(t, "b").1;
    send(200, 0);
    let t = wait_ctl(&sock, "show counters", 5, &|t| port_packets(t, "a").0 >= 200, "port a received the 200 datagrams", &[]);
    let sent_before = udp_out(&t);
    assert!(sent_before < 150, "1 Mb/s sends about 120 datagrams a second: {sent_before} left already\n{t}");
    assert_eq!(counter(&t, "link-down"), 0);
    sh(&["ip", "link", "set", &t2, "down"]);
    let t = wait_ctl(&sock, "show counters", 5, &|t| counter(t, "link-down") > 0, "the queue dropped for the link", &[]);
    // Nothing leaves after the drop; the queue is empty.
    std::thread::sleep(Duration::from_millis(300));
    let t2_ = ctl("show counters");
    assert_eq!(udp_out(&t2_), udp_out(&t), "nothing left port b once its link was down");
    let dropped = counter(&t2_, "link-down");
    let sent = udp_out(&t2_);
    assert!(sent + dropped >= 200 && sent < 200 && dropped >= 200 - sent, "200 datagrams: {sent} sent, {dropped} dropped for the link\n{t2_}");
    // More for the port while its link is down: dropped too.
    send(10, 1000);
    let t = wait_ctl(&sock, "show counters", 5, &|t| counter(t, "link-down") >= dropped + 10, "datagrams for a down port dropped", &[]);
    assert_eq!(udp_out(&t), sent);
    // The link back: new datagrams leave.
    sh(&["ip", "link", "set", &t2, "up"]);
    wait_ctl(&sock, "show routes", 5, &|r| !r.contains("linkdown"), "b back", &[]);
    let down_total = counter(&ctl("show counters"), "link-down");
    send(5, 2000);
    let t = wait_ctl(&sock, "show counters", 5, &|t| udp_out(t) >= sent + 5, "5 datagrams out of b after the link came back", &[]);
    assert_eq!(counter(&t, "link-down"), down_total, "none of them dropped");
    let so = router.stop();
    assert_eq!(mempool_in_use(&so), 0, "every mbuf back in its pool: {so}");
}

/// Neighbour unreachability detection with the Linux kernel as the
/// neighbour. Host 1 holds two ECMP gateways per family (10.1.0.2 / .3,
/// 2001:db8:a::2 / ::3) and a plain host address (10.1.0.10).
/// - The router resolves the ECMP gateways itself, without traffic (they
///   may fail first while the host is being configured, and come back).
/// - 10.1.0.10 pings the router: learned from its ARP request (not an
///   answer), STALE; the echo replies use it, so it is probed (unicast)
///   after the delay and the kernel's answer makes it REACHABLE. Unused
///   after the pings, it goes STALE and is deleted unprobed after
///   neighbour_stale_ms (`neighbour-expired`, not `neighbour-unreachable`).
/// - The ECMP gateways are probed every ~0.5 s though unused
///   (neighbour_reachable_ms = 500); the kernel's replies confirm them and
///   nothing is deleted.
/// - When the host drops 10.1.0.3 and 2001:db8:a::3, their probes go
///   unanswered: the entries are deleted, the two gateways are
///   marked unreachable (`show routes`, `show neighbours` FAILED) and every
///   flow of the ECMP routes takes the other gateway (`route get`).
/// - When the addresses come back, the gateways answer the router's
///   retries (their gap doubling from 100 ms up to 800 ms) and flows
///   spread over both again.
/// - The tap sits in another namespace, where net_tap cannot read its
///   link: no next hop is marked `linkdown`.
#[test]
fn neighbour_unreachability_detection_deletes_silent_neighbours_and_steers_ecmp() {
    if let Err(why) = can_run() {
        skip("tap_netns nud", &why);
        return;
    }
    let lab = TapLab::new("nu");
    let ports = lab.ports("", "");
    let TapLab { n1, t1, dir, sock, cfg, .. } = lab;
    std::fs::write(
        &cfg,
        format!(
            r#"
[dataplane]
status_interval_ms = 0
neighbour_reachable_ms = 500
neighbour_solicit_interval_ms = 100
neighbour_probes = 3
neighbour_stale_ms = 1500
neighbour_retry_max_ms = 800
[mempool]
mbufs_per_socket = 4095
cache_size = 64
{ports}[[route]]
prefix = "10.9.0.0/16"
nexthop = [{{ via = "10.1.0.2" }}, {{ via = "10.1.0.3" }}]
[[route]]
prefix = "2001:db8:99::/48"
nexthop = [{{ via = "2001:db8:a::2" }}, {{ via = "2001:db8:a::3" }}]
"#
        ),
    )
    .unwrap();
    let _ns = Netns::create(&[&n1]);
    let mut router = Router::start("tapnud", &cfg, &dir, &sock);
    host(&n1, &t1, "10.1.0.2/24", "2001:db8:a::2/64", "10.1.0.1", "2001:db8:a::1");
    let addrs = [vec!["ip", "addr", "add", "10.1.0.3/24", "dev", &t1], vec!["ip", "addr", "add", "10.1.0.10/24", "dev", &t1], vec!["ip", "-6", "addr", "add", "2001:db8:a::3/64", "dev", &t1, "nodad"]];
    for c in &addrs {
        let o = in_ns(&n1, c);
        assert!(o.status.success(), "{c:?}: {}", String::from_utf8_lossy(&o.stderr));
    }
    let s = sock.to_str().unwrap();
    let ctl = |c: &str| control::ctl::request(s, c).unwrap();
    let wait = |cmd: &str, want: &dyn Fn(&str) -> bool, what: &str| wait_ctl(&sock, cmd, 10, want, what, &[&n1]);
    let gws = ["10.1.0.2", "10.1.0.3", "2001:db8:a::2", "2001:db8:a::3"];
    let learned = |r: &str, ip: &str| r.lines().any(|l| l.starts_with(&format!("{ip} lladdr ")) && l.contains(" dev a Learned"));
    wait("show neighbours", &|r| gws.iter().all(|g| learned(r, g)), "the router resolves the ECMP gateways by itself");
    let routes = wait("show routes", &|r| !r.contains("unreachable"), "every gateway reachable");
    assert!(!routes.contains("linkdown"), "net_tap in another namespace: link state unknown, taken as up\n{routes}");
    let ifs = ctl("show interfaces");
    assert!(ifs.lines().any(|l| l.starts_with("a port 0 link unknown ")) && ifs.lines().any(|l| l.starts_with("b port 1 link up ")), "tap a moved, tap b here:\n{ifs}");
    // Spread of 64 flows per family over the gateways, as `route get` says.
    let spread = || {
        let mut on = std::collections::BTreeMap::new();
        for k in 0..64 {
            for (src, dst) in [("10.1.0.2", "10.9.1.1"), ("2001:db8:a::2", "2001:db8:99::1")] {
                let r = ctl(&format!("route get {dst} from {src} proto 17 sport {} dport 4791", 49152 + k));
                let via = r.split_whitespace().nth(2).unwrap_or("?").to_string();
                *on.entry(via).or_insert(0) += 1;
            }
        }
        on
    };
    let on = spread();
    assert!(gws.iter().all(|g| on.get(*g).copied().unwrap_or(0) >= 8), "flows over all four gateways: {on:?}");
    // Host 1 talks to the router: 10.1.0.10 learned from its ARP request
    // (the kernel forgets the router first, so that it asks again).
    // The flush and the ping in one shell: a NUD probe of the router in
    // between teaches the kernel 10.1.0.1 again (it then asks nothing),
    // and in this lab the tap shares the router's MAC, so the router
    // cannot answer the frame's sender either; such a try is repeated.
    let flush_and_ping = format!("ip neigh flush dev {t1} && ping -c 2 -i 0.2 -W 2 -I 10.1.0.10 10.1.0.1");
    let mut o = in_ns(&n1, &["sh", "-c", &flush_and_ping]);
    for _ in 0..4 {
        if o.status.success() {
            break;
        }
        o = in_ns(&n1, &["sh", "-c", &flush_and_ping]);
    }
    assert!(o.status.success(), "ping from 10.1.0.10: {}\n{}", String::from_utf8_lossy(&o.stdout), diagnose(&[&n1], &sock));
    wait("show neighbours", &|r| learned(r, "10.1.0.10"), "10.1.0.10 learned");
    // Learned from its ARP request, not from an answer: STALE; the
    // router's echo replies use it, so it is probed after the delay (half
    // the reachable time), and the kernel's reply makes it REACHABLE.
    wait("show neighbours", &|r| r.lines().any(|l| l.starts_with("10.1.0.10 lladdr ") && l.ends_with(" Learned REACHABLE")), "10.1.0.10 confirmed by its answer to a probe");
    // Unused since the pings: STALE after the reachable time, then, not
    // probed (an answer would make it REACHABLE again), deleted after
    // neighbour_stale_ms.
    wait("show neighbours", &|r| r.lines().any(|l| l.starts_with("10.1.0.10 lladdr ") && l.ends_with(" Learned STALE")), "10.1.0.10 stale once unused");
    wait("show neighbours", &|r| !learned(r, "10.1.0.10"), "10.1.0.10 deleted unused");
    let c = ctl("show counters");
    assert_eq!((counter(&c, "neighbour-expired"), counter(&c, "neighbour-unreachable")), (1, 0), "{c}");
    // The ECMP gateways are probed though unused; answered: confirmed,
    // nothing deleted, for 2 s (about 4 rounds).
    let before = (counter(&c, "neighbour-probe-sent"), counter(&c, "neighbour-confirmed"));
    std::thread::sleep(Duration::from_secs(2));
    let c = ctl("show counters");
    assert!(counter(&c, "neighbour-probe-sent") >= before.0 + 5 && counter(&c, "neighbour-confirmed") >= before.1 + 5, "{c}");
    assert_eq!((counter(&c, "neighbour-expired"), counter(&c, "neighbour-unreachable")), (1, 0), "{c}");
    let n = ctl("show neighbours");
    assert!(gws.iter().all(|g| learned(&n, g)), "{n}");
    // The host drops 10.1.0.3, 2001:db8:a::3 and 10.1.0.10.
    for c in [vec!["ip", "addr", "del", "10.1.0.3/24", "dev", &t1], vec!["ip", "addr", "del", "10.1.0.10/24", "dev", &t1], vec!["ip", "-6", "addr", "del", "2001:db8:a::3/64", "dev", &t1]] {
        let o = in_ns(&n1, &c);
        assert!(o.status.success(), "{c:?}: {}", String::from_utf8_lossy(&o.stderr));
    }
    let routes = wait("show routes", &|r| r.contains("nexthop via 10.1.0.3 dev a unreachable") && r.contains("nexthop via 2001:db8:a::3 dev a unreachable"), "the silent gateways marked");
    assert!(routes.contains("\tnexthop via 10.1.0.2 dev a weight 1\n") && routes.contains("\tnexthop via 2001:db8:a::2 dev a weight 1\n"), "{routes}");
    let n = ctl("show neighbours");
    assert!(n.contains("10.1.0.3 dev a FAILED\n") && n.contains("2001:db8:a::3 dev a FAILED\n"), "{n}");
    assert!(learned(&n, "10.1.0.2") && learned(&n, "2001:db8:a::2"), "{n}");
    let on = spread();
    assert_eq!(on.len(), 2, "every flow on the answering gateways: {on:?}");
    assert_eq!((on.get("10.1.0.2"), on.get("2001:db8:a::2")), (Some(&64), Some(&64)), "{on:?}");
    // They come back.
    for c in &addrs {
        let o = in_ns(&n1, c);
        assert!(o.status.success(), "{c:?}: {}", String::from_utf8_lossy(&o.stderr));
    }
    wait("show routes", &|r| !r.contains("unreachable"), "the gateways answer again");
    let on = spread();
    assert!(gws.iter().all(|g| on.get(*g).copied().unwrap_or(0) >= 8), "flows over all four gateways again: {on:?}");
    let so = router.stop();
    assert!(counter(&so, "neighbour-unreachable") >= 2, "{so}");
    assert!(counter(&so, "ecmp-gateway-failed") >= 2 && counter(&so, "ecmp-gateway-recovered") >= 2, "{so}");
    assert_eq!(mempool_in_use(&so), 0);
}

/// The first packet to a host the router has not resolved yet is not lost:
/// it waits while the router asks (ARP / ND) and leaves when the kernel
/// answers, so the very first ping of each family is answered (dropping it
/// would leave only a retry to get through; with `neighbour_queue_packets
/// = 0` this test fails on the first ping). A ping to an address nobody
/// has gets the router's Destination Unreachable (host / address
/// unreachable) once it has waited `neighbour_queue_ms`, as ping shows it;
/// meanwhile `show neighbours` lists it INCOMPLETE with the packet waiting.
#[test]
fn first_packet_to_an_unresolved_host_is_not_lost() {
    if let Err(why) = can_run() {
        skip("tap_netns unresolved", &why);
        return;
    }
    let lab = TapLab::new("ur");
    let ports = lab.ports("", "");
    let TapLab { n1, n2, t1, t2, dir, sock, cfg } = lab;
    std::fs::write(&cfg, format!("[dataplane]\nstatus_interval_ms = 0\nneighbour_queue_ms = 500\n[mempool]\nmbufs_per_socket = 4095\ncache_size = 64\n{ports}")).unwrap();
    let _ns = Netns::create(&[&n1, &n2]);
    let mut router = Router::start("tapur", &cfg, &dir, &sock);
    host(&n1, &t1, "10.1.0.2/24", "2001:db8:a::2/64", "10.1.0.1", "2001:db8:a::1");
    host(&n2, &t2, "10.2.0.2/24", "2001:db8:b::2/64", "10.2.0.1", "2001:db8:b::1");
    let before = control::ctl::request(sock.to_str().unwrap(), "show neighbours").unwrap();
    assert!(!before.contains("10.2.0.2") && !before.contains("2001:db8:b::2"), "host 2 unknown to the router at first:\n{before}");
    for dst in ["10.2.0.2", "2001:db8:b::2"] {
        let o = in_ns(&n1, &["ping", "-c", "1", "-W", "3", dst]);
        assert!(o.status.success(), "the first ping to {dst} got no reply:\n{}\n{}", String::from_utf8_lossy(&o.stdout), diagnose(&[&n1, &n2], &sock));
    }
    let released = control::ctl::request(sock.to_str().unwrap(), "show counters").unwrap();
    for (dst, want) in [("10.2.0.99", "From 10.1.0.1 icmp_seq=1 Destination Host Unreachable"), ("2001:db8:b::99", "From 2001:db8:a::1 icmp_seq=1 Destination unreachable: Address unreachable")] {
        let ping = Command::new("ip").args(["netns", "exec", &n1, "ping", "-c", "1", "-W", "3", dst]).stdout(std::process::Stdio::piped()).spawn().unwrap();
        // While it waits, `show neighbours` lists the address.
        let line = format!("{dst} dev b INCOMPLETE (1 packets waiting)");
        wait_ctl(&sock, "show neighbours", 3, &|r| r.lines().any(|l| l == line), &format!("{line:?} while the echo request waits"), &[&n1, &n2]);
        let o = ping.wait_with_output().unwrap();
        let txt = String::from_utf8_lossy(&o.stdout);
        assert!(!o.status.success() && txt.contains(want), "ping {dst}: want {want:?}:\n{txt}");
        wait_ctl(&sock, "show neighbours", 3, &|r| !r.contains(dst), &format!("{dst} gone once its packet timed out"), &[&n1, &n2]);
    }
    let so = router.stop();
    let held = counter(&so, "neighbour-held");
    assert!(held >= 4, "each family's first echo request waited for host 2, and the pings to nobody: {so}");
    assert_eq!(counter(&so, "neighbour-released"), value(&released, "neighbour-released"), "{so}");
    assert_eq!(counter(&so, "neighbour-released") + 2, held, "{so}");
    assert_eq!(counter(&so, "neighbour-timeout"), 2, "{so}");
    assert_eq!((counter(&so, "icmp-host-unreachable-sent"), counter(&so, "icmpv6-address-unreachable-sent")), (1, 1), "{so}");
    assert_eq!(counter(&so, "neighbour-miss") + counter(&so, "neighbour-queue-full"), 0, "{so}");
    assert_eq!(mempool_in_use(&so), 0, "{so}");
}

/// A receiver (python) joined to group argv[3] on tap argv[1]: prints
/// "joined", then each datagram's payload, source and Hop Limit, for at
/// most argv[2] seconds or 5 datagrams.
const MC_RECV: &str = r#"
import socket, struct, sys, time
tap, wait, group = sys.argv[1], float(sys.argv[2]), sys.argv[3]
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_RECVHOPLIMIT, 1)
s.bind(("::", 5000))
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_JOIN_GROUP, socket.inet_pton(socket.AF_INET6, group) + struct.pack("@I", socket.if_nametoindex(tap)))
print("joined", flush=True)
end = time.time() + wait
got = 0
while got < 5 and time.time() < end:
    s.settimeout(max(0.1, end - time.time()))
    try:
        data, anc, _, src = s.recvmsg(2048, socket.CMSG_SPACE(4))
    except socket.timeout:
        break
    hl = [struct.unpack("@i", d)[0] for (lvl, ty, d) in anc if ty == socket.IPV6_HOPLIMIT]
    print(data.decode(), src[0], hl[0] if hl else -1, flush=True)
    got += 1
"#;

/// A sender (python): 5 datagrams "argv[2]-i" to group argv[3] port 5000
/// out of tap argv[1], Hop Limit 8, 50 ms apart.
const MC_SEND: &str = r#"
import socket, sys, time
tap, tag, group = sys.argv[1], sys.argv[2], sys.argv[3]
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF, socket.if_nametoindex(tap))
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, 8)
for i in range(5):
    s.sendto(("%s-%d" % (tag, i)).encode(), (group, 5000, 0, socket.if_nametoindex(tap)))
    time.sleep(0.05)
"#;

/// A receiver (MC_RECV) of `group` in namespace `ns` on `tap` for at most
/// `wait` seconds, started and joined before this returns: the process
/// and its output.
fn join_group(ns: &str, tap: &str, wait: &str, group: &str) -> (std::process::Child, std::process::ChildStdout) {
    let mut c = Command::new("ip").args(["netns", "exec", ns, "python3", "-c", MC_RECV, tap, wait, group]).stdout(std::process::Stdio::piped()).spawn().unwrap();
    let mut out = c.stdout.take().unwrap();
    let mut first = [0u8; 7];
    std::io::Read::read_exact(&mut out, &mut first).unwrap();
    assert_eq!(&first, b"joined\n");
    (c, out)
}

/// The two hosts of an MLD test. net_tap gives the kernel side of each tap
/// the port's MAC, so the hosts' link-local addresses would be the
/// router's and fail DAD; MLD needs them (a report from :: is of no use to
/// a router): each tap gets a MAC of its own first.
fn mld_hosts(n1: &str, t1: &str, n2: &str, t2: &str) {
    sh(&["ip", "link", "set", t1, "address", "02:00:00:00:0a:02"]);
    sh(&["ip", "link", "set", t2, "address", "02:00:00:00:0b:02"]);
    host(n1, t1, "10.1.0.2/24", "2001:db8:a::2/64", "10.1.0.1", "2001:db8:a::1");
    host(n2, t2, "10.2.0.2/24", "2001:db8:b::2/64", "10.2.0.1", "2001:db8:b::1");
}

/// The End.MT tree's multicast underlay with the kernel as both peers: a
/// host in namespace 1 sends UDP to the any-source group ff1e::1234 out of its link
/// to the router; the router's static multicast route (RPF interface `a`)
/// copies it onto port `b`, where a socket in namespace 2 that joined the
/// group (so its kernel accepts 33:33:00:00:12:34) receives every datagram,
/// its Hop Limit one lower. Sent the other way, the group's packets fail
/// RPF and reach nobody.
#[test]
fn linux_hosts_receive_a_multicast_group_through_the_router() {
    if let Err(why) = can_run() {
        skip("tap_netns multicast", &why);
        return;
    }
    python_ok().expect("python3 is required for the multicast peers");
    let lab = TapLab::new("mc");
    let ports = lab.ports("", "");
    let TapLab { n1, n2, t1, t2, dir, sock, cfg } = lab;
    std::fs::write(&cfg, format!("[dataplane]\nstatus_interval_ms = 0\n[mempool]\nmbufs_per_socket = 4095\ncache_size = 64\n{ports}[[multicast.route]]\ngroup = \"ff1e::1234\"\niif = \"a\"\noifs = [\"b\"]\n")).unwrap();
    let _ns = Netns::create(&[&n1, &n2]);
    let mut router = Router::start("tapmc", &cfg, &dir, &sock);
    host(&n1, &t1, "10.1.0.2/24", "2001:db8:a::2/64", "10.1.0.1", "2001:db8:a::1");
    host(&n2, &t2, "10.2.0.2/24", "2001:db8:b::2/64", "10.2.0.1", "2001:db8:b::1");
    // Joined before anything is sent.
    let recv = |ns: &str, tap: &str, wait: &str| join_group(ns, tap, wait, "ff1e::1234");
    let (mut rx, mut out) = recv(&n2, &t2, "8");
    let o = in_ns(&n1, &["python3", "-c", MC_SEND, &t1, "mc", "ff1e::1234"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut txt = String::new();
    std::io::Read::read_to_string(&mut out, &mut txt).unwrap();
    assert!(rx.wait().unwrap().success());
    eprintln!("namespace 2 received:\n{txt}");
    let lines: Vec<&str> = txt.lines().collect();
    assert_eq!(lines.len(), 5, "every datagram to the group arrived:\n{txt}\n{}", diagnose(&[&n1, &n2], &sock));
    for (i, l) in lines.iter().enumerate() {
        assert_eq!(*l, format!("mc-{i} 2001:db8:a::2 7"), "payload, source, Hop Limit 8 - 1");
    }
    // The other way: namespace 2 sends to the group, namespace 1 listens;
    // port b is not the route's RPF interface.
    let (mut rx, mut out) = recv(&n1, &t1, "2");
    let o = in_ns(&n2, &["python3", "-c", MC_SEND, &t2, "back", "ff1e::1234"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut txt = String::new();
    std::io::Read::read_to_string(&mut out, &mut txt).unwrap();
    assert!(rx.wait().unwrap().success());
    assert_eq!(txt, "", "nothing crossed against the RPF interface");
    let ctl = |c: &str| control::ctl::request(sock.to_str().unwrap(), c).unwrap();
    // 5 datagrams of 40 + 8 + 4 octets; the 5 sent the other way failed RPF.
    assert_eq!(ctl("show mroutes"), "(*, ff1e::1234) iif a oifs [b] packets 5 bytes 260 rpf-failed 5\nmroute-replica-sent 5\nOK\n");
    // At run time: the route deleted, the group reaches nobody; added back
    // (from host 1's address only), it flows again.
    let through = |wait: &str, tag: &str| {
        let (mut rx, mut out) = recv(&n2, &t2, wait);
        let o = in_ns(&n1, &["python3", "-c", MC_SEND, &t1, tag, "ff1e::1234"]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let mut txt = String::new();
        std::io::Read::read_to_string(&mut out, &mut txt).unwrap();
        assert!(rx.wait().unwrap().success());
        txt.lines().count()
    };
    assert_eq!(ctl("mroute del ff1e::1234"), "OK\n");
    assert!(ctl("mroute del ff1e::1234").starts_with("ERR no static multicast route for ff1e::1234"));
    assert_eq!(through("2", "gone"), 0, "no route, no copies");
    assert!(ctl("mroute add ff1e::1234 iif a oif a").starts_with("ERR oifs[0] = \"a\": the route's iif"));
    let r = ctl("mroute add ff3e::1234 iif a oif b");
    assert!(r.starts_with("ERR group = ff3e::1234: an SSM group (ff3x::/32) is forwarded only from the source a receiver asked for"), "{r}");
    assert_eq!(ctl("mroute add ff1e::1234 source 2001:db8:a::2 iif a oif b"), "OK\n");
    assert_eq!(ctl("show mroutes"), "(2001:db8:a::2, ff1e::1234) iif a oifs [b] packets 0 bytes 0 rpf-failed 0\nmroute-replica-sent 5\nOK\n");
    assert_eq!(through("8", "again"), 5, "the route added at run time carries the group again");
    let so = router.stop();
    assert_eq!(counter(&so, "mroute-replica-sent"), 10, "{so}");
    assert_eq!(counter(&so, "mroute-rpf-failed"), 5, "{so}");
    assert_eq!(mempool_in_use(&so), 0, "{so}");
}

/// MLD with the Linux kernel as the listener (RFC 9777): a socket in
/// namespace 2 joins ff0e::4242 (any source); its kernel reports it to the
/// router (unsolicited, and in answer to the router's General Queries),
/// and the router, with no static multicast route at all, replicates the
/// group's datagrams from namespace 1 onto port b. When the socket closes,
/// the kernel reports the leave, the router queries the address twice,
/// nobody answers, and the group is forgotten: its datagrams reach nobody.
#[test]
fn linux_listeners_join_and_leave_a_group_with_mld() {
    if let Err(why) = can_run() {
        skip("tap_netns mld", &why);
        return;
    }
    python_ok().expect("python3 is required for the multicast peers");
    let lab = TapLab::new("mld");
    let ports = lab.ports("", "");
    let TapLab { n1, n2, t1, t2, dir, sock, cfg } = lab;
    std::fs::write(&cfg, format!("[dataplane]\nstatus_interval_ms = 0\n[mempool]\nmbufs_per_socket = 4095\ncache_size = 64\n{ports}[multicast.mld]\ninterfaces = [\"b\"]\nquery_interval_s = 4\nquery_response_interval_ms = 1000\nlast_listener_query_interval_ms = 200\n")).unwrap();
    let _ns = Netns::create(&[&n1, &n2]);
    let mut router = Router::start("tapmld", &cfg, &dir, &sock);
    mld_hosts(&n1, &t1, &n2, &t2);
    let send = |tag: &str| {
        let o = in_ns(&n1, &["python3", "-c", MC_SEND, &t1, tag, "ff0e::4242"]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    let ctl = |c: &str| control::ctl::request(sock.to_str().unwrap(), c).unwrap();
    let copies = || counter(&ctl("show counters"), "mroute-replica-sent");
    // Nobody listens yet: the group is not routed.
    send("before");
    assert!(!ctl("show mroutes").contains("ff0e::4242"));
    assert_eq!(copies(), 0);
    // The listener joins; its kernel's report (or its answer to the
    // router's next General Query, every 4 s) makes the route.
    let (mut rx, mut out) = join_group(&n2, &t2, "20", "ff0e::4242");
    let r = wait_ctl(&sock, "show mroutes", 15, &|r| r.starts_with("(*, ff0e::4242) iif any oifs [b] packets 0 bytes 0 rpf-failed 0 mld\n"), "the kernel's MLD report makes a route to b", &[&n1, &n2]);
    eprintln!("{r}");
    let m = ctl("show mld");
    eprintln!("{m}");
    assert!(m.contains("b: querier fe80::dc:ff:fe00:b01 (this router") && m.contains("  ff0e::4242 EXCLUDE filter"), "{m}");
    send("joined");
    let mut txt = String::new();
    std::io::Read::read_to_string(&mut out, &mut txt).unwrap();
    assert!(rx.wait().unwrap().success());
    eprintln!("namespace 2 received:\n{txt}");
    let lines: Vec<&str> = txt.lines().collect();
    assert_eq!(lines, (0..5).map(|i| format!("joined-{i} 2001:db8:a::2 7")).collect::<Vec<_>>(), "every datagram, Hop Limit 8 - 1");
    assert_eq!(copies(), 5);
    // The socket closed: the kernel reports the leave, the router's two
    // Multicast Address Specific Queries go unanswered, the route goes.
    let r = wait_ctl(&sock, "show mroutes", 10, &|r| !r.contains("ff0e::4242"), "the leave removes the route", &[&n1, &n2]);
    eprintln!("{r}");
    send("after");
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(copies(), 5, "nothing replicated after the leave");
    let so = router.stop();
    assert_eq!(counter(&so, "mroute-replica-sent"), 5, "{so}");
    assert!(counter(&so, "multicast-not-routed") >= 10, "before and after: {so}");
    assert!(counter(&so, "mld-report-received") >= 2, "join and leave: {so}");
    assert!(counter(&so, "mld-query-sent") >= 3, "a General Query and two specific ones: {so}");
    assert!(counter(&so, "mld-not-enabled") >= 1, "namespace 1's reports on port a: {so}");
    assert_eq!(mempool_in_use(&so), 0, "{so}");
}

/// The source of an End.MT group (python, scapy for the ICRC): argv[1]
/// RC SEND packets from 2001:db8:a::2 (QPN 0x100) to the Proxy Address
/// 2001:db8:ff::1 / Designated QPN 1 through a plain UDP socket (its
/// kernel's seg6 route takes them to the router's End.MT SID). Each waits
/// for the upstream ACK of its PSN (at most 5 s); then it listens argv[2]
/// seconds for the group's upstream CNPs. Prints "ACK <psn> <ms>" per ACK
/// (the time since the packet was sent) and "CNP" per CNP.
const MT_SOURCE: &str = r#"
import socket, sys, time
from scapy.all import IPv6, UDP, Raw, raw
from scapy.contrib.roce import BTH
S, P = "2001:db8:a::2", "2001:db8:ff::1"
n, listen = int(sys.argv[1]), float(sys.argv[2])
tx = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
tx.bind((S, 0xc100))
rx = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
rx.bind((S, 4791))
def up(deadline):
    rx.settimeout(max(0.01, deadline - time.time()))
    try:
        b = rx.recv(256)
    except socket.timeout:
        return None
    qpn = int.from_bytes(b[5:8], "big")
    assert qpn == 0x100, "upstream DestQP %#x" % qpn
    return b[0], int.from_bytes(b[9:12], "big")
for psn in range(1, n + 1):
    d = raw(IPv6(src=S, dst=P) / UDP(sport=0xc100, dport=4791) / BTH(opcode=0x04, dqpn=1, psn=psn, ackreq=1) / Raw(bytes(range(64))))
    t0 = time.time()
    tx.sendto(d[48:], (P, 4791))
    r = up(t0 + 5)
    assert r == (0x11, psn), "upstream for PSN %d: %r" % (psn, r)
    print("ACK %d %d" % (psn, (time.time() - t0) * 1000), flush=True)
end = time.time() + listen
while time.time() < end:
    r = up(end)
    if r is not None:
        assert r[0] == 0x81, r
        print("CNP", flush=True)
"#;

/// A receiver of the group (python, scapy for the ICRC) at 2001:db8:b::2:
/// for each of argv[1] copies on UDP port 4791 (printed "DATA <psn>
/// <dest QPN>"), an RC ACK of its PSN to the Proxy Address argv[2] seconds
/// later; then argv[3] CNPs, 5 ms apart.
const MT_RECEIVER: &str = r#"
import socket, sys, time
from scapy.all import IPv6, UDP, Raw, raw
from scapy.contrib.roce import BTH, AETH
R, P = "2001:db8:b::2", "2001:db8:ff::1"
n, delay, cnps = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
rx = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
rx.bind((R, 4791))
rx.settimeout(10)
tx = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
tx.bind((R, 0xc001))
def send(l4):
    d = raw(IPv6(src=R, dst=P) / UDP(sport=0xc001, dport=4791) / l4)
    tx.sendto(d[48:], (P, 4791))
print("ready", flush=True)
for _ in range(n):
    b = rx.recv(2048)
    psn, qpn = int.from_bytes(b[9:12], "big"), int.from_bytes(b[5:8], "big")
    print("DATA %d %#x" % (psn, qpn), flush=True)
    time.sleep(delay)
    send(BTH(opcode=0x11, dqpn=1, psn=psn) / AETH(syndrome=0x1f, msn=psn))
for _ in range(cnps):
    send(BTH(opcode=0x81, dqpn=1, becn=1) / Raw(bytes(16)))
    time.sleep(0.005)
"#;

/// draft-li s.5.3.3: "The time window T MAY be adjusted dynamically based
/// on observed network conditions." With `cnp_window = "rtt"` the node
/// times the round trip below it: from a new data PSN passing down to the
/// group having acknowledged it. The kernel hosts are the group's source
/// (namespace 1: RC SENDs through its kernel's seg6 encapsulation to the
/// router's End.MT SID) and its receiver (namespace 2: the End.MT copy on
/// a UDP socket, acknowledged 300 ms later). After three round trips the
/// window is ~300 ms instead of its 1 ms floor, so the receiver's 30 CNPs
/// over 150 ms reach the source as one or two (a fixed 1 ms window would
/// pass about 30).
#[test]
fn end_mt_cnp_window_follows_the_round_trip_of_linux_hosts() {
    if let Err(why) = can_run() {
        skip("tap_netns End.MT adaptive window", &why);
        return;
    }
    python_ok().expect("python3 with scapy is required for the RoCEv2 peers");
    let lab = TapLab::new("mtw");
    let ports = lab.ports("", "");
    let TapLab { n1, n2, t1, t2, dir, sock, cfg } = lab;
    std::fs::write(
        &cfg,
        format!(
            "[dataplane]\nstatus_interval_ms = 0\n[mempool]\nmbufs_per_socket = 4095\ncache_size = 64\n{ports}\
[srv6]\nlocator = \"fc00:0:1::/48\"\n[[srv6.sid]]\nsid = \"fc00:0:1::a\"\nbehaviour = \"end.mt\"\n\
[[multicast.group]]\nname = \"g\"\nproxy = \"2001:db8:ff::1\"\ndesignated_qpn = 1\nsource = \"2001:db8:a::2\"\nsource_qpn = 0x100\n\
cnp_window_us = 1000\ncnp_window = \"rtt\"\ncnp_window_max_us = 2000000\nend_mt_sid = \"fc00:0:1::a\"\n\
receivers = [ {{ address = \"2001:db8:b::2\", qpn = 0x500 }} ]\n"
        ),
    )
    .unwrap();
    let _ns = Netns::create(&[&n1, &n2]);
    let mut router = Router::start("tapmtw", &cfg, &dir, &sock);
    host(&n1, &t1, "10.1.0.2/24", "2001:db8:a::2/64", "10.1.0.1", "2001:db8:a::1");
    host(&n2, &t2, "10.2.0.2/24", "2001:db8:b::2/64", "10.2.0.1", "2001:db8:b::1");
    let o = in_ns(&n1, &["ip", "-6", "route", "add", "2001:db8:ff::1/128", "encap", "seg6", "mode", "encap", "segs", "fc00:0:1::a,2001:db8:ff::1", "via", "2001:db8:a::1", "dev", &t1]);
    assert!(o.status.success(), "seg6 encap route: {}", String::from_utf8_lossy(&o.stderr));
    let ctl = |c: &str| control::ctl::request(sock.to_str().unwrap(), c).unwrap();
    let r = ctl("show multicast");
    assert!(r.contains("cnp-window rtt 1000..2000000 us") && r.contains("window-us 1000.0 srtt-us -"), "the floor until a round trip is measured: {r}");
    let (mut rx, mut out) = spawn_ready(&n2, MT_RECEIVER, &["3", "0.3", "30"]);
    let src = in_ns(&n1, &["python3", "-c", MT_SOURCE, "3", "2"]);
    let txt = String::from_utf8_lossy(&src.stdout).to_string();
    let mut got = String::new();
    std::io::Read::read_to_string(&mut out, &mut got).unwrap();
    assert!(rx.wait().unwrap().success());
    eprintln!("source:\n{txt}{}\nreceiver:\n{got}", String::from_utf8_lossy(&src.stderr));
    assert!(src.status.success(), "{}\n{}", String::from_utf8_lossy(&src.stderr), diagnose(&[&n1, &n2], &sock));
    assert_eq!(got, "DATA 1 0x500\nDATA 2 0x500\nDATA 3 0x500\n", "each End.MT copy with the receiver's QPN");
    let acks: Vec<u64> = txt.lines().filter_map(|l| l.strip_prefix("ACK ")).map(|l| l.split(' ').nth(1).unwrap().parse().unwrap()).collect();
    assert_eq!(acks.len(), 3, "{txt}");
    assert!(acks.iter().all(|&ms| (300..1000).contains(&ms)), "each PSN acknowledged upstream after the receiver's 300 ms: {acks:?}");
    let cnps = txt.lines().filter(|l| *l == "CNP").count();
    assert!((1..=2).contains(&cnps), "30 CNPs over 150 ms in windows of ~300 ms: {cnps} upstream\n{txt}");
    let r = ctl("show multicast");
    eprintln!("{r}");
    let field = |k: &str| -> f64 { r.split_whitespace().skip_while(|w| *w != k).nth(1).unwrap_or_else(|| panic!("{k} in {r}")).parse().unwrap() };
    let (srtt, window) = (field("srtt-us"), field("window-us"));
    assert!((300_000.0..1_000_000.0).contains(&srtt), "the round trip below the router, the receiver's 300 ms: {r}");
    assert_eq!(window, srtt, "T is the smoothed round trip within 1 ms ..= 2 s: {r}");
    assert!(r.contains("upstream-psn 3 upstream-nak - highest-sent 3") && r.contains("receiver 2001:db8:b::2 qpn 0x500 acked 3 epsn - ccount 0"), "{r}");
    let so = router.stop();
    assert_eq!(counter(&so, "mc-rtt-sample"), 3, "{so}");
    assert_eq!((counter(&so, "mc-ack-in"), counter(&so, "mc-ack-up")), (3, 3), "{so}");
    assert_eq!(counter(&so, "mc-cnp-in"), 30, "{so}");
    assert_eq!(counter(&so, "mc-cnp-up"), cnps as u64, "{so}");
    assert_eq!(counter(&so, "mc-bad-icrc"), 0, "{so}");
    assert_eq!(mempool_in_use(&so), 0, "{so}");
}

/// MLDv1 compatibility mode (RFC 9777 s.8.3.1) with the Linux kernel as
/// the listener: port b runs MLD in MLDv1 mode. The router's 24-octet
/// MLDv1 queries put the host's kernel into MLDv1 compatibility (s.8.2.1),
/// so the socket's join reaches the router as an MLDv1 Report (any MLDv2
/// Report the kernel sent before it heard a query is ignored, as an MLDv1
/// router would) and its close as an MLDv1 Done, which the router answers
/// with MLDv1 Multicast Address Specific Queries before forgetting the
/// group.
#[test]
fn linux_listeners_answer_an_mldv1_router_in_mldv1() {
    if let Err(why) = can_run() {
        skip("tap_netns mldv1", &why);
        return;
    }
    python_ok().expect("python3 is required for the multicast peers");
    let lab = TapLab::new("mld1");
    let ports = lab.ports("", "");
    let TapLab { n1, n2, t1, t2, dir, sock, cfg } = lab;
    std::fs::write(&cfg, format!("[dataplane]\nstatus_interval_ms = 0\n[mempool]\nmbufs_per_socket = 4095\ncache_size = 64\n{ports}[multicast.mld]\ninterfaces = [\"b\"]\nv1_interfaces = [\"b\"]\nquery_interval_s = 4\nquery_response_interval_ms = 1000\nlast_listener_query_interval_ms = 200\n")).unwrap();
    let _ns = Netns::create(&[&n1, &n2]);
    let mut router = Router::start("tapmld1", &cfg, &dir, &sock);
    mld_hosts(&n1, &t1, &n2, &t2);
    let ctl = |c: &str| control::ctl::request(sock.to_str().unwrap(), c).unwrap();
    assert!(ctl("show mld").starts_with("b: MLDv1 mode, querier fe80::dc:ff:fe00:b01 (this router"), "{}", ctl("show mld"));
    let (mut rx, mut out) = join_group(&n2, &t2, "20", "ff0e::4242");
    let r = wait_ctl(&sock, "show mroutes", 15, &|r| r.starts_with("(*, ff0e::4242) iif any oifs [b] packets 0 bytes 0 rpf-failed 0 mld\n"), "the kernel's MLDv1 report makes a route to b", &[&n1, &n2]);
    eprintln!("{r}");
    let m = ctl("show mld");
    eprintln!("{m}");
    assert!(m.contains("  ff0e::4242 EXCLUDE filter") && m.contains(" mldv1-host "), "an MLDv1 host listens: {m}");
    let o = in_ns(&n1, &["python3", "-c", MC_SEND, &t1, "v1", "ff0e::4242"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut txt = String::new();
    std::io::Read::read_to_string(&mut out, &mut txt).unwrap();
    assert!(rx.wait().unwrap().success());
    let lines: Vec<&str> = txt.lines().collect();
    assert_eq!(lines, (0..5).map(|i| format!("v1-{i} 2001:db8:a::2 7")).collect::<Vec<_>>(), "every datagram, Hop Limit 8 - 1");
    // The socket closed: an MLDv1 Done, two MLDv1 specific queries, gone.
    let r = wait_ctl(&sock, "show mroutes", 10, &|r| !r.contains("ff0e::4242"), "the Done removes the route", &[&n1, &n2]);
    eprintln!("{r}");
    assert!(counter(&ctl("show counters"), "mld-query-sent") >= 3, "General Queries and the two specific ones");
    let so = router.stop();
    assert!(counter(&so, "mld-report-received") >= 2, "MLDv1 Report and Done: {so}");
    assert_eq!(counter(&so, "mld-v2-query-heard") + counter(&so, "mld-v1-query-heard"), 0, "no other router: {so}");
    assert_eq!(counter(&so, "mroute-replica-sent"), 5, "{so}");
    assert_eq!(mempool_in_use(&so), 0, "{so}");
}

/// The Linux kernel verifies the router's SRH HMAC (RFC 8754 s.2.1.2.1):
/// the router's SR policy to 2001:db8:99::/64 (a loopback address in
/// namespace 2) pushes an SRH with an End.MT TLV and an HMAC TLV under key
/// 7 toward a kernel seg6local End.DT6 SID; namespace 2 requires the HMAC
/// on its link (`seg6_require_hmac = 1`) with the same key (`ip sr hmac
/// set`), so its kernel decapsulates only packets whose HMAC it recomputes
/// equal. Pings from namespace 1 are answered; with another secret in the
/// kernel they are not. Linux looks for the HMAC TLV only when the SRH
/// carries the pre-RFC 8754 H flag: the policy sets `hmac_h_flag` (without
/// it, every packet was refused).
#[test]
fn the_kernel_verifies_the_hmac_of_the_routers_headend_srh() {
    if let Err(why) = can_run() {
        skip("tap_netns SRH HMAC", &why);
        return;
    }
    let lab = TapLab::new("hmac");
    let ports = lab.ports("", "");
    let TapLab { n1, n2, t1, t2, dir, sock, cfg } = lab;
    let secret = "an srv6 headend secret";
    std::fs::write(
        &cfg,
        format!(
            "[dataplane]\nstatus_interval_ms = 0\n[mempool]\nmbufs_per_socket = 4095\ncache_size = 64\n{ports}\
[srv6]\nlocator = \"fc00:0:1::/48\"\nsource = \"fc00:0:1::100\"\n[[srv6.hmac_key]]\nkey_id = 7\nsecret = \"{secret}\"\nlength = 32\n\
[[srv6.policy]]\nprefix = \"2001:db8:99::/64\"\nsegments = [[\"fc00:0:2::d6\"]]\nhmac_key_id = 7\nhmac_h_flag = true\n\
[[srv6.policy.end_mt]]\nedge = \"fc00:0:2::d6\"\nreceivers = [ {{ address = \"2001:db8:b::2\", qpn = 0x500 }} ]\n\
[[route]]\nprefix = \"fc00:0:2::/48\"\nvia = \"2001:db8:b::2\"\n"
        ),
    )
    .unwrap();
    let _ns = Netns::create(&[&n1, &n2]);
    let mut router = Router::start("taphmac", &cfg, &dir, &sock);
    host(&n1, &t1, "10.1.0.2/24", "2001:db8:a::2/64", "10.1.0.1", "2001:db8:a::1");
    host(&n2, &t2, "10.2.0.2/24", "2001:db8:b::2/64", "10.2.0.1", "2001:db8:b::1");
    let hmac_set = |secret: &str| {
        let mut c = Command::new("ip").args(["netns", "exec", &n2, "ip", "sr", "hmac", "set", "7", "sha256"]).stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
        std::io::Write::write_all(c.stdin.as_mut().unwrap(), format!("{secret}\n").as_bytes()).unwrap();
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "ip sr hmac set: {}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    };
    for c in [
        vec!["ip", "-6", "addr", "add", "2001:db8:99::1/128", "dev", "lo"],
        vec!["ip", "-6", "route", "add", "fc00:0:2::d6/128", "encap", "seg6local", "action", "End.DT6", "table", "255", "dev", t2.as_str()],
        vec!["sysctl", "-qw", &format!("net.ipv6.conf.{t2}.seg6_enabled=1")],
        vec!["sysctl", "-qw", &format!("net.ipv6.conf.{t2}.seg6_require_hmac=1")],
    ] {
        let o = in_ns(&n2, &c);
        assert!(o.status.success(), "{c:?}: {}", String::from_utf8_lossy(&o.stderr));
    }
    hmac_set(secret);
    let ping = |n: &str| in_ns(&n1, &["ping", "-c", n, "-i", "0.2", "-W", "1", "2001:db8:99::1"]);
    let mut ok = false;
    for _ in 0..5 {
        if ping("1").status.success() {
            ok = true;
            break;
        }
    }
    assert!(ok, "no reply through the router's HMAC'd SRH and the kernel's End.DT6:\n{}", diagnose(&[&n1, &n2], &sock));
    let o = ping("3");
    assert!(String::from_utf8_lossy(&o.stdout).contains(" 0% packet loss"), "{}", String::from_utf8_lossy(&o.stdout));
    // Another secret in the kernel: its HMAC differs, every packet refused.
    hmac_set("not the router's secret");
    let o = ping("3");
    assert!(String::from_utf8_lossy(&o.stdout).contains("100% packet loss"), "the kernel took an HMAC it cannot have computed equal: {}", String::from_utf8_lossy(&o.stdout));
    let so = router.stop();
    assert!(counter(&so, "srv6-h-encaps") >= 7, "{so}");
    assert_eq!(mempool_in_use(&so), 0, "{so}");
}

/// An ICMPv6 echo responder for the RTT probe test (the kernel's own echo
/// replies are off in its namespace): it answers the first `argv[2]`
/// Echo Requests `argv[1]` seconds late and the rest at once, `argv[3]` in
/// all (at most 60 s), printing each request as `REQ ident seq data_len`.
/// Right after the first request it sends one forged reply: the request's
/// data with its send time changed, which would claim a round trip far
/// shorter than the real one.
const ECHO_RESPONDER: &str = r#"
import socket, struct, sys, time
delay, n_late, total = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
print("ready", flush=True)
pending, answered, queued, forged = [], 0, 0, False
end = time.time() + 60
while answered < total and time.time() < end:
    now = time.time()
    for p in [p for p in pending if p[0] <= now]:
        s.sendto(p[1], p[2])
        pending.remove(p)
        answered += 1
        print("HOLD %d" % int((time.time() - p[3]) * 1e6), flush=True)
    wait = min([p[0] for p in pending], default=now + 0.2) - now
    s.settimeout(max(wait, 0.001))
    try:
        data, addr = s.recvfrom(2048)
    except socket.timeout:
        continue
    if data[0] != 128 or queued >= total:
        continue
    ident, seq = struct.unpack("!HH", data[4:8])
    print("REQ %d %d %d" % (ident, seq, len(data) - 8), flush=True)
    reply = bytes([129, 0, 0, 0]) + data[4:]
    if not forged:
        forged = True
        fake = bytearray(reply)
        fake[8 + 5] ^= 0x40
        s.sendto(bytes(fake), addr)
    pending.append((time.time() + (delay if queued < n_late else 0), reply, addr, time.time()))
    queued += 1
print("answered %d" % answered, flush=True)
"#;

/// `python3 -c script args...` in namespace `ns`, once it has printed
/// "ready": the process and the rest of its output.
fn spawn_ready(ns: &str, script: &str, args: &[&str]) -> (std::process::Child, std::process::ChildStdout) {
    let mut c = Command::new("ip").args(["netns", "exec", ns, "python3", "-c", script]).args(args).stdout(std::process::Stdio::piped()).spawn().unwrap();
    let mut out = c.stdout.take().unwrap();
    let mut first = [0u8; 6];
    std::io::Read::read_exact(&mut out, &mut first).unwrap();
    assert_eq!(&first, b"ready\n");
    (c, out)
}

/// The FANN messages [`FANN_CAPTURE`] printed, read by the scapy oracle.
fn captured_fann(printed: &str) -> Vec<FannOracle> {
    let pkts: Vec<Vec<u8>> = printed.lines().filter_map(|l| l.strip_prefix("FANN ")).map(|h| (0..h.len()).step_by(2).map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap()).collect()).collect();
    let refs: Vec<&[u8]> = pkts.iter().map(|p| p.as_slice()).collect();
    fann_oracle(&refs)
}

/// The ingress PE's side of FANN for the RTT probe test: every IPv6 frame
/// on tap `argv[1]` carrying an ICMPv6 message of type `argv[2]`, printed
/// as `FANN <hex of the IPv6 packet>`, for `argv[3]` seconds at most or
/// until the frames of `argv[4]` messages were seen.
const FANN_CAPTURE: &str = r#"
import socket, sys, time
tap, ty, secs, want = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x86dd))
s.bind((tap, 0))
s.settimeout(0.2)
print("ready", flush=True)
end, n = time.time() + secs, 0
while time.time() < end and n < want:
    try:
        f = s.recv(4096)
    except socket.timeout:
        continue
    ip = f[14:]
    if len(ip) > 40 and ip[6] == 58 and ip[40] == ty:
        print("FANN " + ip.hex(), flush=True)
        n += 1
"#;

/// An RC sender for the ACK round-trip test: `argv[2]` RoCEv2 SEND Only
/// packets (DestQP 200, PSN 0, 1, ...; AckReq on every odd PSN) from UDP
/// port 4791 to `[argv[1]]:4791`, one every `argv[3]` seconds.
const RC_SENDER: &str = r#"
import socket, struct, sys, time
dst, n, gap = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s.bind(("::", 4791))
print("ready", flush=True)
for psn in range(n):
    bth = struct.pack("!BBHB3sB3s", 0x04, 0, 0xffff, 0, (200).to_bytes(3, "big"), 0x80 if psn % 2 else 0, psn.to_bytes(3, "big"))
    s.sendto(bth + bytes(64) + bytes(4), (dst, 4791))
    time.sleep(gap)
"#;

/// The receiver's RNIC for that test: every packet with AckReq is
/// answered with an RC ACK (opcode 0x11, DestQP 77, the packet's PSN,
/// AETH syndrome 0x1f) `argv[1]` seconds later, except the second, which
/// gets a NAK (syndrome 0x60) at once; prints `ACK psn syndrome` for
/// each, until `argv[2]` were answered or 60 s.
const RC_RESPONDER: &str = r#"
import socket, struct, sys, time
delay, total = float(sys.argv[1]), int(sys.argv[2])
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s.bind(("::", 4791))
print("ready", flush=True)
pending, n, end = [], 0, time.time() + 60
while (n < total or pending) and time.time() < end:
    now = time.time()
    for p in [p for p in pending if p[0] <= now]:
        s.sendto(p[1], p[2])
        pending.remove(p)
    wait = min([p[0] for p in pending], default=now + 0.2) - now
    s.settimeout(max(wait, 0.001))
    try:
        data, addr = s.recvfrom(2048)
    except socket.timeout:
        continue
    if n >= total or len(data) < 12 or data[0] != 0x04 or not data[8] & 0x80:
        continue
    psn = data[9:12]
    syn = 0x60 if n == 1 else 0x1f
    bth = struct.pack("!BBHB3sB3s", 0x11, 0, 0xffff, 0, (77).to_bytes(3, "big"), 0, psn)
    pending.append((time.time() + (0 if syn == 0x60 else delay), bth + bytes([syn]) + psn + bytes(4), addr))
    print("ACK %d %d" % (int.from_bytes(psn, "big"), syn), flush=True)
    n += 1
"#;

/// RTT_est by receiver reporting (draft-tian s.5.3.1) against Linux hosts:
/// a sender behind port a sends RC packets through port b, whose
/// `[port.congestion.rtt_acks]` times those that ask for an ACK from
/// leaving its queue to the ACK the receiver behind port b sends 30 ms
/// later. RTT_est of port b moves from the configured 100 us to the
/// measured round trip, with K_max; the receiver's NAK abandons the
/// timing it ends. Over `degraded_us` the round trip is a FANN
/// Performance degradation event to the ingress PE (port a's host; Latency
/// item read by the scapy oracle), and switching the measurement off
/// with ctl ends it with a recovery, because nothing watches the round
/// trip any more.
#[test]
fn rtt_est_follows_the_receivers_acks() {
    if let Err(why) = can_run() {
        skip("tap_netns RTT from ACKs", &why);
        return;
    }
    python_ok().expect("python3 is required for the RC sender and receiver");
    let lab = TapLab::new("ack");
    let ports = lab.ports("", "rate_mbps = 1000\n[port.congestion]\nrtt_est_us = 100\n[port.congestion.rtt_acks]\nwindow_ms = 2000\ntimeout_ms = 500\ndegraded_us = 20000\n");
    let TapLab { n1, n2, t1, t2, dir, sock, cfg } = lab;
    // The measurement for Prometheus too (a free port, taken and let go).
    let addr = format!("127.0.0.1:{}", std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port());
    std::fs::write(&cfg, format!("[dataplane]\nstatus_interval_ms = 0\n[mempool]\nmbufs_per_socket = 4095\ncache_size = 64\n{ports}[fann]\nnode = \"2001:db8:ff::7\"\ningress_pes = [\"2001:db8:a::2\"]\n[metrics]\nlisten = \"{addr}\"\n")).unwrap();
    let _ns = Netns::create(&[&n1, &n2]);
    let mut router = Router::start("tapack", &cfg, &dir, &sock);
    host(&n1, &t1, "10.1.0.2/24", "2001:db8:a::2/64", "10.1.0.1", "2001:db8:a::1");
    host(&n2, &t2, "10.2.0.2/24", "2001:db8:b::2/64", "10.2.0.1", "2001:db8:b::1");
    // The PE's capture, read as it goes: the link events of the start
    // come too, and the test waits for the latency event and its recovery.
    let (mut pe, pe_out) = spawn_ready(&n1, FANN_CAPTURE, &[&t1, "201", "40", "1000"]);
    let captured = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let reader = {
        let c = captured.clone();
        std::thread::spawn(move || {
            for l in std::io::BufRead::lines(std::io::BufReader::new(pe_out)).map_while(Result::ok) {
                let mut c = c.lock().unwrap();
                c.push_str(&l);
                c.push('\n');
            }
        })
    };
    // A captured FANN message with this Code, Event Type and Sub-Type
    // (ICMPv6 octets 1, 7 and 8), within 10 s.
    let wait_fann = |code: u8, event_type: u8, subtype: u8, what: &str| {
        let t0 = Instant::now();
        let octet = |h: &str, i: usize| h.get(80 + 2 * i..82 + 2 * i).and_then(|x| u8::from_str_radix(x, 16).ok());
        let seen = |c: &str| c.lines().filter_map(|l| l.strip_prefix("FANN ")).any(|h| (octet(h, 1), octet(h, 7), octet(h, 8)) == (Some(code), Some(event_type), Some(subtype)));
        while !seen(&captured.lock().unwrap()) {
            assert!(t0.elapsed() < Duration::from_secs(10), "{what} not captured: {}", captured.lock().unwrap());
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let (mut receiver, mut rx_out) = spawn_ready(&n2, RC_RESPONDER, &["0.030", "1000"]);
    let (mut sender, _) = spawn_ready(&n1, RC_SENDER, &["2001:db8:b::2", "3000", "0.01"]);
    let diag = [n1.as_str(), n2.as_str()];

    // The estimate is the smallest round trip of the window: at least the
    // receiver's 30 ms at once, and within 15 ms of it once one ACK came
    // without much delay of the responder's own (a Python timer on this
    // shared 2-core machine can add ~20 ms to a single sample).
    let r = wait_ctl(&sock, "show congestion", 20, &|r| (30_000.0..45_000.0).contains(&rtt_and_k_max(r, "b").0), "RTT_est of port b at the receiver's 30 ms", &diag);
    eprintln!("{r}");
    let (rtt, kmax) = rtt_and_k_max(&r, "b");
    assert!(rtt < 45_000.0, "the smallest round trip, about the receiver's 30 ms: {r}");
    assert!(kmax.abs_diff((1e9 * rtt * 1e3 / 8e9) as u64) <= 1, "K_max = R_port x RTT_est / 8 for the measured RTT_est: {r}");
    let line = r.lines().find(|l| l.contains("RTT from ACKs:")).unwrap_or_else(|| panic!("{r}"));
    assert!(line.contains("(window 2000 ms, timeout 500 ms)") && line.contains("the smallest round trip of the window"), "{line}");
    let num = |k: &str| line.split(k).nth(1).and_then(|x| x.split([',', ' ']).find(|w| !w.is_empty())).and_then(|x| x.parse::<u64>().ok()).unwrap_or_else(|| panic!("{k} in {line}"));
    assert!(num("measured ") >= 1 && num("abandoned (NAK, retransmission) ") >= 1, "the NAK abandoned a timing: {line}");
    assert!(num("RTT_est moved ") >= 1, "{line}");
    let page = http(&addr, "GET /metrics HTTP/1.1\r\nHost: router\r\n\r\n");
    let m = prometheus_oracle(page.split_once("\r\n\r\n").unwrap().1);
    let get = |k: &str| *m.get(k).unwrap_or_else(|| panic!("{k} not on the page:\n{page}"));
    assert!((0.030..0.045).contains(&get("dcirouter_rtt_acks_estimate_seconds{port=b}")), "{page}");
    assert!(get("dcirouter_rtt_acks_timed_total{outcome=measured,port=b}") >= 1.0 && get("dcirouter_rtt_acks_timed_total{outcome=abandoned,port=b}") >= 1.0, "{page}");
    assert!(!m.keys().any(|k| k.starts_with("dcirouter_rtt_acks") && k.contains("port=a")), "port a measures nothing: {page}");

    let ctl = |c: &str| control::ctl::request(sock.to_str().unwrap(), c).unwrap();
    let e = ctl("congestion b rtt_est_us 20000");
    assert!(e.starts_with("ERR") && e.contains("rtt_acks off"), "{e}");
    // The latency event is out before the measurement is switched off.
    wait_fann(0, 3, 0, "the Performance degradation event");
    let r = ctl("congestion b rtt_acks off");
    assert!(r.contains("off: RTT_est stays as it is"), "{r}");
    let r = ctl("congestion b rtt_est_us 20000");
    assert!(r.contains("K_max 2500000"), "{r}");
    // The owner worker publishes what it took within about a ms.
    let r = wait_ctl(&sock, "show congestion", 5, &|r| rtt_and_k_max(r, "b").0 == 20_000.0, "RTT_est of port b as set", &diag);
    assert_eq!(rtt_and_k_max(&r, "b"), (20_000.0, 2_500_000), "{r}");
    assert!(r.contains("off (ctl congestion PORT rtt_acks off): RTT_est stays as set; measured "), "{r}");

    // (Recovery, Event Type 7, of Sub-Type 3: Performance degradation.)
    wait_fann(1, 7, 3, "the recovery");
    let _ = pe.kill();
    let _ = pe.wait();
    let _ = reader.join();
    let fann = captured.lock().unwrap().clone();
    let _ = sender.kill();
    let _ = sender.wait();
    let _ = receiver.kill();
    let _ = receiver.wait();
    let mut acks = String::new();
    std::io::Read::read_to_string(&mut rx_out, &mut acks).unwrap();
    let so = router.stop();
    assert!(acks.lines().filter(|l| l.starts_with("ACK ") && l.ends_with(" 31")).count() >= 2 && acks.lines().any(|l| l.starts_with("ACK ") && l.ends_with(" 96")), "ACKs and the one NAK: {acks}");
    let seen = captured_fann(&fann);
    let perf: Vec<&FannOracle> = seen.iter().filter(|f| f.event_type == 3 && f.code == 0).collect();
    assert_eq!(perf.len(), 1, "one Performance degradation event: {seen:?}");
    let ev = perf[0];
    let item = |f: &FannOracle, bit: u32| f.items.iter().find(|(b, _)| *b == bit).map(|(_, h)| u32::from_str_radix(h, 16).unwrap());
    assert!(ev.checksum_ok && ev.well_formed && ev.origin == "2001:db8:ff::7".parse::<std::net::Ipv6Addr>().unwrap(), "{ev:?}");
    assert_eq!(item(ev, 1), Some(1), "Egress Port ID: port b: {ev:?}");
    assert!(item(ev, 6).is_some_and(|l| (30_000..45_000).contains(&l)), "Latency: the 30 ms round trip in us: {ev:?}");
    let rec: Vec<&FannOracle> = seen.iter().filter(|f| f.code == 1 && f.event_type == 7 && f.event_subtype == 3).collect();
    assert_eq!(rec.len(), 1, "its recovery once the measurement was switched off: {seen:?}");
    assert!(rec[0].checksum_ok && rec[0].event_id == ev.event_id, "{:?}", rec[0]);
    assert!(counter(&so, "rtt-est-changed") >= 1, "{so}");
    assert_eq!(mempool_in_use(&so), 0, "{so}");
}

/// Port `port`'s RTT_est (us) and K_max (bytes) in `show congestion`.
fn rtt_and_k_max(show: &str, port: &str) -> (f64, u64) {
    let line = show.lines().find(|l| l.starts_with(&format!("congestion '{port}'"))).unwrap_or_else(|| panic!("port {port} in {show}"));
    let after = |k: &str| line.split(k).nth(1).and_then(|r| r.split(' ').next()).unwrap_or_else(|| panic!("{k} in {line}"));
    (after("RTT_est ").parse().unwrap(), after("K_max ").parse().unwrap())
}

/// draft-tian s.5.3.1, RTT_est "obtained through ... active probing": the
/// router sends Echo Requests out of each congestion-aware port to the
/// Linux host behind it and follows the smallest round trip of the last
/// four with RTT_est, K_max (alpha x R_port x RTT_est / 8) and K_min with
/// it. Port b's host answers 30 ms late at first (a long-haul link; 3 s), then
/// at once; port a's kernel answers over IPv4. A forged reply is refused,
/// and the operator can take RTT_est back. Port b's round trip above its
/// `degraded_us` (20 ms) is a FANN Performance degradation event to the
/// ingress PE (port a's host) with the Latency and Jitter items (draft-hzh
/// s.5.1.3 bits 6, 7), read by the scapy oracle, and its end a recovery.
#[test]
fn rtt_est_follows_echo_probes_to_the_linux_host_behind_the_port() {
    if let Err(why) = can_run() {
        skip("tap_netns RTT probes", &why);
        return;
    }
    python_ok().expect("python3 is required for the delayed echo responder");
    let lab = TapLab::new("rtt");
    let probe = |target: &str| format!("rate_mbps = 1000\n[port.congestion]\nrtt_est_us = 50000\n[port.congestion.rtt_probe]\ntarget = \"{target}\"\ninterval_ms = 50\ntimeout_ms = 500\nwindow = 4\n");
    let ports = lab.ports(&probe("10.1.0.2"), &format!("{}degraded_us = 20000\n", probe("2001:db8:b::2").replace("rtt_est_us = 50000", "rtt_est_us = 100")));
    let TapLab { n1, n2, t1, t2, dir, sock, cfg } = lab;
    std::fs::write(&cfg, format!("[dataplane]\nstatus_interval_ms = 0\n[mempool]\nmbufs_per_socket = 4095\ncache_size = 64\n{ports}[fann]\nnode = \"2001:db8:ff::7\"\ningress_pes = [\"2001:db8:a::2\"]\n")).unwrap();
    let _ns = Netns::create(&[&n1, &n2]);
    let mut router = Router::start("taprtt", &cfg, &dir, &sock);
    host(&n1, &t1, "10.1.0.2/24", "2001:db8:a::2/64", "10.1.0.1", "2001:db8:a::1");
    host(&n2, &t2, "10.2.0.2/24", "2001:db8:b::2/64", "10.2.0.1", "2001:db8:b::1");
    let o = in_ns(&n2, &["sysctl", "-w", "net.ipv6.icmp.echo_ignore_all=1"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Port a's host plays the ingress PE: it records the FANN messages.
    let (mut pe, mut pe_out) = spawn_ready(&n1, FANN_CAPTURE, &[&t1, "201", "30", "200"]);
    let (mut responder, mut out) = spawn_ready(&n2, ECHO_RESPONDER, &["0.030", "60", "400"]);
    let diag = [n1.as_str(), n2.as_str()];
    let k_max = |rtt_us: f64| (1e9 * rtt_us * 1e3 / 8e9) as u64;

    // Port b: from the configured 100 us to the host's 30 ms.
    // The smallest round trip of the window: at least the host's 30 ms,
    // and within 15 ms of it once one answer was not much later.
    let r = wait_ctl(&sock, "show congestion", 20, &|r| (30_000.0..45_000.0).contains(&rtt_and_k_max(r, "b").0), "RTT_est of port b at the 30 ms round trip", &diag);
    let (rtt, kmax) = rtt_and_k_max(&r, "b");
    eprintln!("{r}");
    assert!(rtt < 45_000.0, "the smallest round trip, about the host's 30 ms: {r}");
    assert!(kmax.abs_diff(k_max(rtt)) <= 1, "K_max = R_port x RTT_est / 8 for the measured RTT_est: {r}");
    assert!(r.contains("RTT probe: Echo Requests from 2001:db8:b::1 to 2001:db8:b::2 every 50 ms (timeout 500 ms, window 4)"), "{r}");
    // Then the host answers at once: RTT_est follows down once the 30 ms
    // answers have left the window of four.
    let r = wait_ctl(&sock, "show congestion", 20, &|r| rtt_and_k_max(r, "b").0 < 5_000.0, "RTT_est of port b down to the prompt answers", &diag);
    let (rtt, kmax) = rtt_and_k_max(&r, "b");
    assert!(kmax == 65536 || kmax.abs_diff(k_max(rtt)) <= 1, "K_max = max(K_base, R_port x RTT_est / 8): {r}");
    // Port a: IPv4, the kernel answers: from the configured 50 ms down.
    let (rtt_a, _) = rtt_and_k_max(&r, "a");
    assert!(rtt_a < 5_000.0, "port a follows its IPv4 host's round trip: {r}");
    assert!(r.contains("RTT probe: Echo Requests from 10.1.0.1 to 10.1.0.2 every 50 ms"), "{r}");

    // The operator takes RTT_est back: first the probes off.
    let ctl = |c: &str| control::ctl::request(sock.to_str().unwrap(), c).unwrap();
    let e = ctl("congestion b rtt_est_us 20000");
    assert!(e.starts_with("ERR") && e.contains("rtt_probe off"), "{e}");
    let r = ctl("congestion b rtt_probe off");
    assert!(r.contains("off: RTT_est stays"), "{r}");
    let r = ctl("congestion b rtt_est_us 20000");
    assert!(r.contains("K_max 2500000"), "{r}");
    // The owner worker publishes what it took within about a ms.
    let r = wait_ctl(&sock, "show congestion", 5, &|r| rtt_and_k_max(r, "b").0 == 20_000.0, "RTT_est of port b as set", &diag);
    assert_eq!(rtt_and_k_max(&r, "b"), (20_000.0, 2_500_000), "{r}");
    assert!(r.contains("off (ctl congestion PORT rtt_probe off): RTT_est stays as set"), "{r}");

    let mut got = String::new();
    let _ = responder.kill();
    let _ = responder.wait();
    std::io::Read::read_to_string(&mut out, &mut got).unwrap();
    let so = router.stop();
    let _ = pe.kill();
    let _ = pe.wait();
    let mut fann = String::new();
    std::io::Read::read_to_string(&mut pe_out, &mut fann).unwrap();
    // The FANN messages about port b's round trip (Egress Port ID 1): the
    // event with Latency >= 30 ms and a Jitter item, then its recovery.
    let seen = captured_fann(&fann);
    let item = |f: &FannOracle, bit: u32| f.items.iter().find(|(b, _)| *b == bit).map(|(_, h)| u32::from_str_radix(h, 16).unwrap());
    let perf: Vec<&FannOracle> = seen.iter().filter(|f| f.event_type == 3 && f.code == 0).collect();
    assert_eq!(perf.len(), 1, "one Performance degradation event: {seen:?}");
    let ev = perf[0];
    assert!(ev.checksum_ok && ev.well_formed && ev.version == 1 && ev.origin == "2001:db8:ff::7".parse::<std::net::Ipv6Addr>().unwrap(), "{ev:?}");
    assert_eq!(item(ev, 1), Some(1), "Egress Port ID: port b: {ev:?}");
    let lat = item(ev, 6).expect("a Latency item");
    // At least the 30 ms the responder holds each answer; at most the
    // longest it held one (its timer runs late on a loaded machine) and
    // 10 ms for the way through the router and kernels.
    let longest = got.lines().filter_map(|l| l.strip_prefix("HOLD ")).map(|x| x.parse::<u32>().unwrap()).max().unwrap_or(0);
    assert!(lat >= 30_000 && lat <= longest + 10_000, "Latency: the 30 ms round trip in us (longest hold {longest} us): {ev:?}");
    assert!(item(ev, 7).is_some() && item(ev, 5).is_none(), "Jitter, no Packet Loss: {ev:?}");
    let rec: Vec<&FannOracle> = seen.iter().filter(|f| f.code == 1 && f.event_type == 7 && f.event_subtype == 3).collect();
    assert_eq!(rec.len(), 1, "its recovery once the round trip came down: {seen:?}");
    assert!(rec[0].checksum_ok && rec[0].event_id == ev.event_id, "{:?}", rec[0]);
    let reqs: Vec<Vec<u32>> = got.lines().filter_map(|l| l.strip_prefix("REQ ")).map(|l| l.split(' ').map(|x| x.parse().unwrap()).collect()).collect();
    assert!(reqs.len() > 60, "the 60 answered late and more: {got}");
    assert!(reqs.iter().all(|r| r[0] == reqs[0][0] && r[2] == 24), "one identifier, 24 bytes of probe data: {got}");
    assert!(reqs.windows(2).all(|w| w[1][1] == (w[0][1] + 1) % 65536), "sequence numbers one by one: {got}");
    assert_eq!(counter(&so, "rtt-probe-forged"), 1, "the forged reply: {so}");
    assert!(counter(&so, "rtt-probe-answered") > 60, "{so}");
    assert!(counter(&so, "rtt-est-changed") >= 3, "b up and down, a down: {so}");
    assert_eq!(counter(&so, "echo-reply-unexpected"), 0, "{so}");
    assert_eq!(mempool_in_use(&so), 0, "{so}");
}
