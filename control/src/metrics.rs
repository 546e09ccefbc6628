//! The router's counters for Prometheus: `[metrics] listen = "ADDR:PORT"`
//! serves `GET /metrics` in the text exposition format (version 0.0.4).
//! The values are the ones `show counters`, `show congestion` and the exit
//! table print (the workers' counters summed with the control thread's),
//! read when a scrape arrives.
//!
//! The control thread serves the socket between its other work, as it
//! serves the management socket: non-blocking, at most
//! [`MAX_CLIENTS`] connections, a request must arrive within
//! [`crate::ctl::READ_DEADLINE`] and be at most [`MAX_REQUEST`] bytes, the
//! reply is taken within [`crate::ctl::WRITE_DEADLINE`]; one request per
//! connection (`Connection: close`).

use crate::router::Control;
use dataplane::counters::{Drop, Local, MAX_PORTS};
use dataplane::dpdk::Port;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Instant;

pub const MAX_CLIENTS: usize = 16;
/// Request line and headers, at most.
pub const MAX_REQUEST: usize = 8192;

pub struct MetricsServer {
    listener: TcpListener,
    clients: Vec<Client>,
}

impl MetricsServer {
    pub fn bind(addr: SocketAddr) -> Result<MetricsServer, String> {
        let listener = TcpListener::bind(addr).map_err(|e| format!("metrics.listen = {addr}: {e}"))?;
        listener.set_nonblocking(true).map_err(|e| format!("metrics.listen = {addr}: {e}"))?;
        Ok(MetricsServer { listener, clients: Vec::new() })
    }

    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.listener.local_addr().ok()
    }

    /// Accept, read and answer as far as the sockets allow now; `render`
    /// makes the page for each complete `GET /metrics`.
    pub fn poll(&mut self, render: &mut dyn FnMut() -> String) {
        while self.clients.len() < MAX_CLIENTS {
            match self.listener.accept() {
                Ok((s, _)) => {
                    if s.set_nonblocking(true).is_ok() {
                        let now = Instant::now();
                        self.clients.push(Client { s, buf: Vec::new(), out: None, deadline: now + crate::ctl::READ_DEADLINE, progress: now });
                    }
                }
                Err(_) => break,
            }
        }
        self.clients.retain_mut(|c| c.step(render));
    }
}

struct Client {
    s: TcpStream,
    buf: Vec<u8>,
    /// The reply and how much of it went.
    out: Option<(Vec<u8>, usize)>,
    deadline: Instant,
    progress: Instant,
}

impl Client {
    /// False when the connection is done and is to be closed.
    fn step(&mut self, render: &mut dyn FnMut() -> String) -> bool {
        let now = Instant::now();
        if self.out.is_none() {
            let mut chunk = [0u8; 2048];
            // The client's end of writing ends its request, not the
            // connection: a complete head still gets its reply.
            let mut ended = false;
            loop {
                match self.s.read(&mut chunk) {
                    Ok(0) => {
                        ended = true;
                        break;
                    }
                    Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(_) => return false,
                }
                if self.buf.len() > MAX_REQUEST {
                    break;
                }
            }
            // The head's end within the limit (a body after it does not
            // count toward the head's size).
            let head_end = find(&self.buf[..self.buf.len().min(MAX_REQUEST + 4)], b"\r\n\r\n").filter(|&e| e <= MAX_REQUEST);
            let reply = if let Some(end) = head_end {
                answer(&self.buf[..end], render)
            } else if self.buf.len() > MAX_REQUEST {
                response("431 Request Header Fields Too Large", "text/plain", &format!("request head longer than {MAX_REQUEST} bytes\n"), true)
            } else if ended && self.buf.iter().any(|&b| !b.is_ascii_whitespace()) {
                // The head ended by the client's end of writing.
                answer(&self.buf, render)
            } else if ended {
                return false;
            } else {
                // Not all here yet: wait, up to the deadline.
                return now < self.deadline;
            };
            self.out = Some((reply, 0));
            self.deadline = now + crate::ctl::WRITE_DEADLINE;
            self.progress = now;
        }
        let Some((bytes, at)) = self.out.as_mut() else { return false };
        while *at < bytes.len() {
            match self.s.write(&bytes[*at..]) {
                Ok(0) => return false,
                Ok(n) => {
                    *at += n;
                    self.progress = now;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(_) => return false,
            }
        }
        if *at == bytes.len() {
            let _ = self.s.shutdown(std::net::Shutdown::Write);
            return false;
        }
        now < self.deadline && now.duration_since(self.progress) < crate::ctl::WRITE_STALL
    }
}

fn find(h: &[u8], n: &[u8]) -> Option<usize> {
    h.windows(n.len()).position(|w| w == n)
}

/// The reply to a request whose head (request line and headers) is `head`.
fn answer(head: &[u8], render: &mut dyn FnMut() -> String) -> Vec<u8> {
    let line = head.split(|&b| b == b'\r').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut w = line.split(' ');
    let (method, target, version) = (w.next().unwrap_or(""), w.next().unwrap_or(""), w.next().unwrap_or(""));
    // RFC 9112 s.3.2: 400 to an HTTP/1.1 request without a Host header
    // field, and to any request with more than one.
    let hosts = head
        .split(|&b| b == b'\n')
        .skip(1)
        .filter(|l| l.len() >= 5 && l[..5].eq_ignore_ascii_case(b"host:"))
        .count();
    if hosts > 1 || (hosts == 0 && version.trim_end() == "HTTP/1.1") {
        return response("400 Bad Request", "text/plain", "an HTTP/1.1 request needs one Host header field (RFC 9112 s.3.2)\n", true);
    }
    // The absolute form (RFC 9112 s.3.2.2: a server MUST accept it): the
    // path after the scheme and authority.
    let target = match target.strip_prefix("http://").or_else(|| target.strip_prefix("https://")) {
        Some(rest) => rest.find('/').map_or("/", |i| &rest[i..]),
        None => target,
    };
    let path = target.split('?').next().unwrap_or("");
    match (method, path) {
        ("GET" | "HEAD", "/metrics") => response("200 OK", "text/plain; version=0.0.4; charset=utf-8", &render(), method == "GET"),
        ("GET" | "HEAD", _) => response("404 Not Found", "text/plain", "only /metrics is served here\n", method == "GET"),
        _ => response("405 Method Not Allowed", "text/plain", "GET /metrics\n", true),
    }
}

fn response(status: &str, ctype: &str, body: &str, with_body: bool) -> Vec<u8> {
    let allow = if status.starts_with("405") { "Allow: GET, HEAD\r\n" } else { "" };
    let mut v = format!("HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n{allow}Connection: close\r\n\r\n", body.len()).into_bytes();
    if with_body {
        v.extend_from_slice(body.as_bytes());
    }
    v
}

/// A label value in the exposition format: `\`, `"` and newlines escaped.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// One metric family: HELP and TYPE, then its samples (labels, value).
fn family(o: &mut String, name: &str, kind: &str, help: &str, samples: impl IntoIterator<Item = (String, String)>) {
    let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} {kind}");
    for (labels, v) in samples {
        if labels.is_empty() {
            let _ = writeln!(o, "{name} {v}");
        } else {
            let _ = writeln!(o, "{name}{{{labels}}} {v}");
        }
    }
}

/// The page: the counters of `show counters` (every drop reason and local
/// event, also at 0, so each series exists from the start), the NICs'
/// counters, and per congestion-aware port its thresholds, queue and
/// Long-haul CNPs, and its RTT probe.
pub fn render(c: &Control, ports: &[Port], names: &[(u16, String)]) -> String {
    let s = c.snapshot();
    let mut o = String::new();
    let port_label = |id: u16| format!("port=\"{}\"", label(&crate::display::port_name(names, id)));
    family(&mut o, "dcirouter_up", "gauge", "1 while the router runs.", [(String::new(), "1".into())]);
    let per_port = |v: &[u64; MAX_PORTS]| names.iter().map(|(id, _)| (port_label(*id), v[usize::from(*id) % MAX_PORTS].to_string())).collect::<Vec<_>>();
    family(&mut o, "dcirouter_port_rx_packets_total", "counter", "Packets received on the port.", per_port(&s.rx_pkts));
    family(&mut o, "dcirouter_port_rx_bytes_total", "counter", "Bytes received on the port.", per_port(&s.rx_bytes));
    family(&mut o, "dcirouter_port_tx_packets_total", "counter", "Packets sent on the port.", per_port(&s.tx_pkts));
    family(&mut o, "dcirouter_port_tx_bytes_total", "counter", "Bytes sent on the port.", per_port(&s.tx_bytes));
    let stats: Vec<(u16, dataplane::dpdk::port::PortStats)> = ports.iter().map(|p| (p.id, p.stats())).collect();
    family(&mut o, "dcirouter_port_nic_missed_total", "counter", "Packets the NIC missed or had no buffer for (imissed + rx_nombuf).", stats.iter().map(|(id, st)| (port_label(*id), (st.imissed + st.rx_nombuf).to_string())));
    family(&mut o, "dcirouter_port_nic_errors_total", "counter", "The NIC's receive and transmit errors (ierrors + oerrors).", stats.iter().map(|(id, st)| (port_label(*id), (st.ierrors + st.oerrors).to_string())));
    family(&mut o, "dcirouter_port_link_up", "gauge", "1 when the port's link is up.", ports.iter().map(|p| (port_label(p.id), u8::from(p.link_up()).to_string())));
    family(&mut o, "dcirouter_drops_total", "counter", "Packets dropped, by reason (the names of show counters).", Drop::ALL.iter().map(|r| (format!("reason=\"{}\"", r.name()), s.drop_count(*r).to_string())));
    family(&mut o, "dcirouter_local_total", "counter", "What local behaviours did, by event (the names of show counters).", Local::ALL.iter().map(|l| (format!("event=\"{}\"", l.name()), s.local_count(*l).to_string())));
    let views = c.congestion_views();
    let cong = |f: &dyn Fn(&dataplane::congestion::CongestionView) -> String| views.iter().map(|(id, v)| (port_label(*id), f(v))).collect::<Vec<_>>();
    if !views.is_empty() {
        family(&mut o, "dcirouter_congestion_rate_bps", "gauge", "R_port, bit/s.", cong(&|v| v.params.rate_bps.to_string()));
        family(&mut o, "dcirouter_congestion_rtt_est_seconds", "gauge", "RTT_est in force.", cong(&|v| (v.params.rtt_est_ns as f64 / 1e9).to_string()));
        family(&mut o, "dcirouter_congestion_k_min_bytes", "gauge", "K_min in force.", cong(&|v| v.stats.k_min.to_string()));
        family(&mut o, "dcirouter_congestion_k_max_bytes", "gauge", "K_max in force.", cong(&|v| v.stats.k_max.to_string()));
        family(&mut o, "dcirouter_congestion_queue_depth_bytes", "gauge", "QD, the egress queue's depth.", cong(&|v| v.stats.qd.to_string()));
        family(&mut o, "dcirouter_congestion_queue_peak_bytes", "gauge", "The deepest the queue was.", cong(&|v| v.queue.max_depth_bytes.to_string()));
        family(&mut o, "dcirouter_congestion_queue_tail_drops_total", "counter", "Packets tail-dropped at the queue.", cong(&|v| v.queue.tail_drops.to_string()));
        family(&mut o, "dcirouter_congestion_ce_marked_total", "counter", "Packets CE-marked above K_min.", cong(&|v| v.stats.marked.to_string()));
        family(&mut o, "dcirouter_congestion_emr", "gauge", "EMR, the fraction of data packets CE-marked in the last monitoring interval.", cong(&|v| v.stats.emr.to_string()));
        family(&mut o, "dcirouter_congestion_qgr_kb_per_ms", "gauge", "QGR, the queue's growth over the last monitoring interval.", cong(&|v| v.stats.qgr_kb_per_ms.to_string()));
        let mut cnps = Vec::new();
        for (id, v) in &views {
            for (action, n) in [("rate-reduce", v.stats.cnp_rate_reduce), ("pause", v.stats.cnp_pause), ("notify", v.stats.cnp_notify), ("resume", v.stats.cnp_resume)] {
                cnps.push((format!("{},action=\"{action}\"", port_label(*id)), n.to_string()));
            }
        }
        family(&mut o, "dcirouter_congestion_cnp_sent_total", "counter", "Long-haul CNPs sent, by action.", cnps);
        family(&mut o, "dcirouter_congestion_flows", "gauge", "Flows in the flow table.", cong(&|v| v.flows_live.to_string()));
        family(&mut o, "dcirouter_congestion_cnp_reactions_total", "counter", "K_max crossings a Long-haul CNP answered.", cong(&|v| v.reaction.count.to_string()));
        let mut q = Vec::new();
        for (id, v) in &views {
            let r = &v.reaction;
            for (quantile, ns) in [("0.5", r.p50_ns), ("0.9", r.p90_ns), ("0.99", r.p99_ns), ("1", r.max_ns)] {
                q.push((format!("{},quantile=\"{quantile}\"", port_label(*id)), (ns as f64 / 1e9).to_string()));
            }
        }
        family(&mut o, "dcirouter_congestion_cnp_reaction_seconds", "gauge", "From the packet that took the queue above K_max to the CNP built, by quantile since start (1: the maximum).", q);
    }
    if !c.pfc_rx.is_empty() {
        use std::sync::atomic::Ordering::Relaxed;
        let now = c.clock.now();
        let mut paused = Vec::new();
        let mut frames = Vec::new();
        for (id, pp) in &c.pfc_rx {
            // 802.3x PAUSE stops every priority: all eight are honoured.
            let honoured = if pp.config().pause { 0xff } else { pp.config().priorities };
            let on = pp.paused(now);
            for prio in (0..8u8).filter(|p| honoured >> p & 1 == 1) {
                paused.push((format!("{},priority=\"{prio}\"", port_label(*id)), (on >> prio & 1).to_string()));
            }
            for (kind, n) in [("pfc", &pp.pfc_frames), ("pause", &pp.pause_frames), ("ignored", &pp.ignored_frames), ("partly-ignored", &pp.partly_ignored_frames)] {
                frames.push((format!("{},kind=\"{kind}\"", port_label(*id)), n.load(Relaxed).to_string()));
            }
        }
        family(&mut o, "dcirouter_pfc_paused", "gauge", "1 while a received PFC / PAUSE holds the honoured priority.", paused);
        family(&mut o, "dcirouter_pfc_frames_received_total", "counter", "PAUSE / PFC frames received, by kind (ignored: naming no honoured priority; partly-ignored: honoured, with times for other priorities ignored, also counted as pfc / pause).", frames);
        family(&mut o, "dcirouter_pfc_held_now_packets", "gauge", "Data packets a pause holds now.", c.pfc_rx.iter().map(|(id, pp)| (port_label(*id), pp.held_now.load(Relaxed).to_string())));
        family(&mut o, "dcirouter_pfc_held_packets_total", "counter", "Data packets a pause set aside so far.", c.pfc_rx.iter().map(|(id, pp)| (port_label(*id), pp.held_packets.load(Relaxed).to_string())));
    }
    let acks: Vec<(u16, dataplane::congestion::AckRttStats)> = c.congestion_views().into_iter().filter_map(|(id, v)| v.ack_rtt.map(|a| (id, a))).collect();
    if !acks.is_empty() {
        let secs = |ns: u64| (ns as f64 / 1e9).to_string();
        family(&mut o, "dcirouter_rtt_acks_estimate_seconds", "gauge", "The smallest round trip from the port to its receivers' ACKs in the window (absent: none).", acks.iter().filter(|(_, a)| a.estimate_ns > 0).map(|(id, a)| (port_label(*id), secs(a.estimate_ns))));
        family(&mut o, "dcirouter_rtt_acks_jitter_seconds", "gauge", "The ACK round trips' smoothed variation.", acks.iter().map(|(id, a)| (port_label(*id), secs(a.jitter_ns))));
        let mut outcome = Vec::new();
        for (id, a) in &acks {
            for (k, n) in [("measured", a.samples), ("timeout", a.timeouts), ("abandoned", a.discarded)] {
                outcome.push((format!("{},outcome=\"{k}\"", port_label(*id)), n.to_string()));
            }
        }
        family(&mut o, "dcirouter_rtt_acks_timed_total", "counter", "Data packets timed to their ACK, by outcome (abandoned: NAK, retransmission).", outcome);
        family(&mut o, "dcirouter_rtt_acks_retransmissions_skipped_total", "counter", "Data packets asking for an ACK not timed because they may be retransmissions (Karn's rule).", acks.iter().map(|(id, a)| (port_label(*id), a.retransmissions_skipped.to_string())));
    }
    if !c.rtt_probes.is_empty() {
        let probe = |f: &dyn Fn(&dataplane::rttprobe::RttProbe) -> Option<String>| c.rtt_probes.iter().filter_map(|s| f(&s.probe).map(|v| (port_label(s.probe.port), v))).collect::<Vec<_>>();
        family(&mut o, "dcirouter_rtt_probe_estimate_seconds", "gauge", "The smallest round trip of the RTT probe's window (absent: none answered).", probe(&|p| p.estimate().map(|e| (e as f64 / 1e9).to_string())));
        family(&mut o, "dcirouter_rtt_probe_jitter_seconds", "gauge", "The round trips' smoothed variation.", probe(&|p| Some((p.jitter_ns as f64 / 1e9).to_string())));
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_answered_by_path_and_method() {
        let page = || "dcirouter_up 1\n".to_string();
        let r = String::from_utf8(answer(b"GET /metrics HTTP/1.1\r\nHost: x", &mut { page })).unwrap();
        assert!(r.starts_with("HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: 15\r\nConnection: close\r\n\r\n") && r.ends_with("\r\n\r\ndcirouter_up 1\n"), "{r}");
        let r = String::from_utf8(answer(b"GET /metrics?x=1 HTTP/1.0", &mut { page })).unwrap();
        assert!(r.starts_with("HTTP/1.1 200 OK"), "{r}");
        let r = String::from_utf8(answer(b"HEAD /metrics HTTP/1.1\r\nhost: x", &mut { page })).unwrap();
        assert!(r.starts_with("HTTP/1.1 200 OK") && r.ends_with("Content-Length: 15\r\nConnection: close\r\n\r\n"), "HEAD: the length, no body: {r}");
        let r = String::from_utf8(answer(b"GET / HTTP/1.1\r\nhost: x", &mut { page })).unwrap();
        assert!(r.starts_with("HTTP/1.1 404 Not Found"), "{r}");
        let r = String::from_utf8(answer(b"POST /metrics HTTP/1.1\r\nhost: x", &mut { page })).unwrap();
        assert!(r.starts_with("HTTP/1.1 405 Method Not Allowed") && r.contains("Allow: GET, HEAD\r\n"), "{r}");
        let r = String::from_utf8(answer(b"\xff\xfe", &mut { page })).unwrap();
        assert!(r.starts_with("HTTP/1.1 405"), "{r}");
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        let mut o = String::new();
        family(&mut o, "x_total", "counter", "X.", [("port=\"p\"".to_string(), "3".to_string())]);
        assert_eq!(o, "# HELP x_total X.\n# TYPE x_total counter\nx_total{port=\"p\"} 3\n");
    }
}
