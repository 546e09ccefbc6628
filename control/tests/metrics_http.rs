//! The Prometheus endpoint (`control::metrics::MetricsServer`) and the
//! management socket's `show` output (`control::display`), from a review:
//! each test failed on the code before its fix, for the reason in its
//! "Was".

use control::metrics::MetricsServer;
use dataplane::counters::{Drop, Local, Snapshot, MAX_PORTS};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

const PAGE: &str = "# HELP dcirouter_up 1 while the router runs.\n# TYPE dcirouter_up gauge\ndcirouter_up 1\n";

fn server() -> MetricsServer {
    MetricsServer::bind("127.0.0.1:0".parse().unwrap()).unwrap()
}

/// Serve (as the control thread does, every millisecond) until the
/// client's side is closed or fails, or `limit` passes; what the client
/// read, and the read error that ended it, if any.
fn pump(srv: &mut MetricsServer, c: &mut TcpStream, limit: Duration) -> (Vec<u8>, Option<std::io::Error>) {
    c.set_nonblocking(true).unwrap();
    let t0 = Instant::now();
    let mut got = Vec::new();
    let mut b = [0u8; 4096];
    while t0.elapsed() < limit {
        srv.poll(&mut || PAGE.to_string());
        loop {
            match c.read(&mut b) {
                Ok(0) => return (got, None),
                Ok(n) => got.extend_from_slice(&b[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => return (got, Some(e)),
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    (got, None)
}

/// Rule: README "Management socket" / "Metrics (Prometheus)": the metrics
/// endpoint "is served like the management socket", whose command "ends
/// with a newline, or with the client's end of writing"; in TCP a
/// half-close (shutdown(SHUT_WR), `nc -N`, `printf ... | nc -q0`) ends the
/// request, not the connection, and RFC 9112 s.9.6 has the server answer
/// a complete request it received. Was: `Client::step` (metrics.rs:77)
/// returns false on the read of 0 that follows the complete request in
/// the same loop, so the connection is closed without a reply.
#[test]
fn a_complete_request_followed_by_the_clients_end_of_writing_is_answered() {
    let mut srv = server();
    let mut c = TcpStream::connect(srv.local_addr().unwrap()).unwrap();
    c.write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n").unwrap();
    c.shutdown(Shutdown::Write).unwrap();
    let (got, err) = pump(&mut srv, &mut c, Duration::from_secs(3));
    let r = String::from_utf8_lossy(&got);
    assert!(r.starts_with("HTTP/1.1 200 OK\r\n") && r.ends_with(PAGE), "a complete GET /metrics, then the client's FIN: got {:?} ({err:?})", r);
}

/// Rule: README "Metrics (Prometheus)": "a request head of at most 8 KiB
/// within 1 s (431 beyond) ... other methods 405"; RFC 6585 s.5: 431 is
/// for header fields that are too large, not for a message body. Was:
/// metrics.rs:87 checks the length of everything read (head and body)
/// before looking for the end of the head, so a POST whose head is 80
/// bytes and whose body brings the total past 8192 bytes gets 431 instead
/// of 405 (and a GET with such a body gets 431 instead of the page).
#[test]
fn a_short_head_with_a_body_is_not_refused_as_too_large() {
    let mut srv = server();
    let mut c = TcpStream::connect(srv.local_addr().unwrap()).unwrap();
    let body = vec![b'x'; 8200];
    let mut req = format!("POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
    req.extend_from_slice(&body);
    assert!(req.len() < 10_000, "all of it is read in one step (no reset from unread data)");
    c.write_all(&req).unwrap();
    let (got, err) = pump(&mut srv, &mut c, Duration::from_secs(3));
    let r = String::from_utf8_lossy(&got);
    assert!(r.starts_with("HTTP/1.1 405 Method Not Allowed\r\n"), "head of {} bytes, body of {}: got {:?} ({err:?})", req.len() - body.len(), body.len(), r.lines().next());
}

/// Rule: RFC 9112 s.3.2.2 (RFC 7230 s.5.3.2): "a server MUST accept the
/// absolute-form in requests". Was: metrics.rs:129-133 takes the
/// request-target as the path, so `GET http://HOST/metrics` is 404.
#[test]
fn an_absolute_form_request_target_is_the_metrics_page() {
    let mut srv = server();
    let a = srv.local_addr().unwrap();
    let mut c = TcpStream::connect(a).unwrap();
    c.write_all(format!("GET http://{a}/metrics HTTP/1.1\r\nHost: {a}\r\n\r\n").as_bytes()).unwrap();
    let (got, err) = pump(&mut srv, &mut c, Duration::from_secs(3));
    let r = String::from_utf8_lossy(&got);
    assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "GET http://{a}/metrics: got {:?} ({err:?})", r.lines().next());
}

// ------------------------------------------------------------------ show

/// Rule: README "Metrics (Prometheus)": the request head is "ended by its
/// blank line or by the client's end of writing" (as the management
/// socket's line ends "with a newline, or with the client's end of
/// writing"). Was: `Client::step` (metrics.rs:100-101) closes the
/// connection without a word when the client ends its writing after a
/// request line and headers without the blank line (`printf 'GET /metrics
/// HTTP/1.0\r\n' | nc -q0 ...`): the client gets neither the page nor an
/// error status.
#[test]
fn a_head_ended_by_the_clients_end_of_writing_is_answered() {
    let mut srv = server();
    let mut c = TcpStream::connect(srv.local_addr().unwrap()).unwrap();
    c.write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n").unwrap();
    c.shutdown(Shutdown::Write).unwrap();
    let (got, err) = pump(&mut srv, &mut c, Duration::from_secs(3));
    let r = String::from_utf8_lossy(&got);
    assert!(r.starts_with("HTTP/1.1 200 OK\r\n") && r.ends_with(PAGE), "request line and a header, then the client's FIN: got {r:?} ({err:?})");
}

/// Rule: RFC 9112 s.3.2: "A server MUST respond with a 400 (Bad Request)
/// status code to any HTTP/1.1 request message that lacks a Host header
/// field and to any request message that contains more than one Host
/// header field line". Was: `answer` (metrics.rs:136-152) reads only the
/// request line and serves the page (200) to both.
#[test]
fn an_http_1_1_request_without_one_host_is_a_bad_request() {
    for req in ["GET /metrics HTTP/1.1\r\n\r\n", "GET /metrics HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"] {
        let mut srv = server();
        let mut c = TcpStream::connect(srv.local_addr().unwrap()).unwrap();
        c.write_all(req.as_bytes()).unwrap();
        let (got, err) = pump(&mut srv, &mut c, Duration::from_secs(3));
        let r = String::from_utf8_lossy(&got);
        assert!(r.starts_with("HTTP/1.1 400 "), "{req:?}: got {:?} ({err:?})", r.lines().next());
    }
}

fn snapshot(pkts: u64, bytes: u64) -> Snapshot {
    Snapshot { rx_pkts: [pkts; MAX_PORTS], rx_bytes: [bytes; MAX_PORTS], tx_pkts: [pkts; MAX_PORTS], tx_bytes: [bytes; MAX_PORTS], drops: vec![0; Drop::ALL.len()], local: vec![0; Local::ALL.len()] }
}

/// The char column where each whitespace-separated field of `line` ends.
fn field_ends(line: &str) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut prev = ' ';
    for (i, ch) in line.chars().enumerate() {
        if ch == ' ' && prev != ' ' {
            ends.push(i);
        }
        prev = ch;
    }
    if prev != ' ' {
        ends.push(line.chars().count());
    }
    ends
}

/// Rule: `show counters`'s port rows are a table under its header line
/// ("port id rx-packets rx-bytes ..."), each value right-aligned under its
/// column's name (as the drop and local rows are since an earlier review;
/// README "Configuration reference": a port name has no length limit).
/// Was: display.rs:27/33 pad the name to 10 characters, so a port named
/// `uplink-east-1` moves every value of its row 3 columns right of its
/// header.
#[test]
fn show_counters_rows_line_up_with_the_header_for_a_long_port_name() {
    let t = control::display::counter_table(&snapshot(5, 5), &[(0, "dc".to_string()), (1, "uplink-east-1".to_string())], &[]);
    let lines: Vec<&str> = t.lines().take(3).collect();
    let head = field_ends(lines[0]);
    for l in &lines[1..] {
        // The name column is left-aligned: compare the value columns.
        assert_eq!(field_ends(l)[1..], head[1..], "columns of\n{}\n{}", lines[0], l);
    }
}

/// Rule: as above, the values stay under their header for the counts a
/// port reaches: a 100 Gb/s port carries 10^14 bytes (the 14-character
/// rx-bytes column) in 2.2 hours and 10^12 packets of 64 bytes (the
/// 12-character rx-packets column) in under 2 hours. Was: display.rs:27/33
/// give rx-bytes 14 and rx-packets 12 characters; a router up for a day
/// pushes each following value of its row right of its header.
#[test]
fn show_counters_rows_line_up_with_the_header_after_a_day_at_100g() {
    let day_bytes = 100_000_000_000u64 / 8 * 86_400; // 1.08e15
    let day_pkts = 148_809_523u64 * 86_400; // 64-byte frames: 1.29e13
    let t = control::display::counter_table(&snapshot(day_pkts, day_bytes), &[(0, "dc".to_string())], &[]);
    let lines: Vec<&str> = t.lines().take(2).collect();
    assert_eq!(field_ends(lines[1])[1..], field_ends(lines[0])[1..], "columns of\n{}\n{}", lines[0], lines[1]);
}

/// Rule: `sid add SID end.x interface IF via ADDR` (README "Management
/// socket") and `interface = "NAME"` in `[[srv6.sid]]` name the interface;
/// `show sids` prints an End.X SID the same way (`show routes`, `show
/// mroutes`, `route get` print interface names too). Was: display.rs:146
/// prints `Behaviour::EndX::iface`, the topology's index, so End.X on
/// "wan" shows as `End.X interface 1` - a name the router would refuse
/// (`interface "1": no such interface`), or another interface's if one is
/// named "1".
#[test]
fn show_sids_names_the_end_x_interface() {
    let text = "[[port]]\nname = \"dc\"\ndevice = \"net_null0\"\naddresses = [\"2001:db8:1::1/64\"]\n[[port]]\nname = \"wan\"\ndevice = \"net_null1\"\naddresses = [\"2001:db8:2::1/64\"]\n[srv6]\nlocator = \"fc00:0:1::/48\"\n[[srv6.sid]]\nsid = \"fc00:0:1::e1\"\nbehaviour = \"end.x\"\ninterface = \"wan\"\nvia = \"2001:db8:2::2\"\n";
    let cfg = control::config::load_str(text).unwrap();
    let wan = cfg.iface_index("wan").unwrap();
    let mut t = dataplane::srv6::SidTable::new(&dataplane::wire::params::Params::DEFAULT);
    t.insert("fc00:0:1::e1".parse().unwrap(), dataplane::srv6::Behaviour::EndX { iface: wan, nexthop: "2001:db8:2::2".parse().unwrap() });
    let o = control::display::sids(&t, &cfg.topology());
    assert!(o.contains("End.X interface wan via 2001:db8:2::2"), "{o}");
}
