//! Text output: the status line, the counter table, `show` commands.

use dataplane::congestion::{CongestionView, FlowView};
use dataplane::counters::{Drop, Local, Snapshot};
use dataplane::dpdk::port::PortStats;
use dataplane::tables::{Fib, Neighbours, NextHop, Route, Topology};
use dataplane::wire::ethernet::Mac;
use std::fmt::Write;
use std::time::Duration;

pub fn status_line(prev: &Snapshot, now: &Snapshot, dt: Duration) -> String {
    let s = dt.as_secs_f64().max(1e-9);
    let rx = (now.total_rx() - prev.total_rx()) as f64 / s;
    let tx = (now.total_tx() - prev.total_tx()) as f64 / s;
    let dr = now.total_drops() - prev.total_drops();
    let mut top = String::new();
    let mut d: Vec<(u64, Drop)> = Drop::ALL.iter().map(|r| (now.drop_count(*r) - prev.drop_count(*r), *r)).filter(|(n, _)| *n > 0).collect();
    d.sort_by_key(|e| std::cmp::Reverse(e.0));
    for (n, r) in d.iter().take(3) {
        let _ = write!(top, " {}={}", r.name(), n);
    }
    format!("status: rx {:.0} pps, tx {:.0} pps, drops {} in {:.1}s{}", rx, tx, dr, s, if top.is_empty() { String::new() } else { format!(" [{}]", top.trim()) })
}

pub fn counter_table(s: &Snapshot, names: &[(u16, String)], stats: &[(u16, PortStats)]) -> String {
    let mut o = String::new();
    // Each column as wide as its header and its widest value (a long port
    // name, a day of 100G in bytes), at least the usual widths.
    let head = ["port", "id", "rx-packets", "rx-bytes", "tx-packets", "tx-bytes", "nic-missed", "nic-errors"];
    let rows: Vec<[String; 8]> = names
        .iter()
        .map(|(id, name)| {
            let i = usize::from(*id);
            let st = stats.iter().find(|(p, _)| p == id).map(|(_, s)| *s).unwrap_or_default();
            [name.clone(), id.to_string(), s.rx_pkts[i].to_string(), s.rx_bytes[i].to_string(), s.tx_pkts[i].to_string(), s.tx_bytes[i].to_string(), (st.imissed + st.rx_nombuf).to_string(), (st.ierrors + st.oerrors).to_string()]
        })
        .collect();
    let min = [10, 5, 12, 14, 12, 14, 10, 10];
    let w: [usize; 8] = std::array::from_fn(|c| rows.iter().map(|r| r[c].len()).chain([head[c].len(), min[c]]).max().unwrap_or(min[c]));
    let line = |o: &mut String, r: [&str; 8]| {
        let _ = write!(o, "{:<w0$}", r[0], w0 = w[0]);
        for c in 1..8 {
            let _ = write!(o, " {:>wc$}", r[c], wc = w[c]);
        }
        o.push('\n');
    };
    line(&mut o, head);
    for r in &rows {
        line(&mut o, std::array::from_fn(|c| r[c].as_str()));
    }
    // One value column for every counter: as wide as the longest name.
    let w = Drop::ALL.iter().map(|r| r.name().len()).chain(Local::ALL.iter().map(|l| l.name().len())).max().unwrap_or(28);
    let _ = writeln!(o, "drops (total {}):", s.total_drops());
    for r in Drop::ALL {
        let n = s.drop_count(*r);
        if n > 0 {
            let _ = writeln!(o, "  {:<w$} {:>12}", r.name(), n);
        }
    }
    let _ = writeln!(o, "local:");
    for l in Local::ALL {
        let n = s.local_count(*l);
        if n > 0 {
            let _ = writeln!(o, "  {:<w$} {:>12}", l.name(), n);
        }
    }
    o.trim_end().to_string()
}

/// ` linkdown` / ` unreachable` after a next hop, as `show routes` and
/// `route get` print it.
pub fn marks(f: &Fib, nh: &NextHop) -> String {
    let mut m = String::new();
    if f.is_down(nh.iface) {
        m.push_str(" linkdown");
    }
    if nh.gateway.is_some_and(|g| f.is_unreachable(nh.iface, g)) {
        m.push_str(" unreachable");
    }
    m
}

pub fn routes(f: &Fib, t: &Topology) -> String {
    let mut o = String::new();
    let name = |i: u16| t.iface(i).map(|x| x.name.clone()).unwrap_or_else(|| format!("#{i}"));
    // `linkdown`: the interface's link is down; `unreachable`: the gateway
    // did not answer neighbour unreachability detection. An ECMP route
    // leaves such next hops out while it has others.
    let hop = |nh: &NextHop| format!("{} dev {}{}", nh.gateway.map(|g| format!("via {g}")).unwrap_or("connected".into()), name(nh.iface), marks(f, nh));
    // One line per single-path route; an ECMP route as `ip route` shows
    // it, a `nexthop` line per next hop with its weight.
    let mut line = |p: String, r: &Route| {
        if r.is_multipath() {
            let _ = writeln!(o, "{p}");
            for (nh, w) in r.paths() {
                let _ = writeln!(o, "\tnexthop {} weight {w}", hop(nh));
            }
        } else {
            let _ = writeln!(o, "{p} {}", hop(r.first()));
        }
    };
    for (p, r) in f.routes4() {
        line(p.to_string(), r);
    }
    for (p, r) in f.routes6() {
        line(p.to_string(), r);
    }
    o
}

/// `show neighbours`: the table, with the reachability state of learned
/// entries (REACHABLE, STALE, DELAY, PROBE), then the ECMP gateways without an entry
/// (INCOMPLETE, FAILED), as `ip neigh` shows them, then the addresses the
/// workers resolve with packets waiting (`waiting`: interface, address,
/// packets summed over the workers).
pub fn neighbours(n: &Neighbours, t: &Topology, nud: Option<&dataplane::nud::Nud>, waiting: &[(u16, std::net::IpAddr, u32)]) -> String {
    let name = |i: u16| t.iface(i).map(|x| x.name.as_str()).unwrap_or("?");
    let state = |i: u16, ip: std::net::IpAddr| nud.and_then(|d| d.state(i, ip)).map(|s| format!(" {}", s.name())).unwrap_or_default();
    let mut v: Vec<String> = n.iter().map(|((i, ip), e)| format!("{ip} lladdr {} dev {} {:?}{}\n", Mac(e.mac), name(*i), e.source, state(*i, *ip))).collect();
    v.sort();
    let mut w: Vec<String> = nud.map(|d| d.unresolved().map(|((i, ip), s)| format!("{ip} dev {} {}\n", name(i), s.name())).collect()).unwrap_or_default();
    w.sort();
    let mut q: Vec<String> = waiting
        .iter()
        .filter(|(i, ip, _)| n.get(*i, *ip).is_none() && !nud.is_some_and(|d| d.unresolved().any(|(k, _)| k == (*i, *ip))))
        .map(|(i, ip, k)| format!("{ip} dev {} INCOMPLETE ({k} packets waiting)\n", name(*i)))
        .collect();
    q.sort();
    v.concat() + &w.concat() + &q.concat()
}

/// `show interfaces`: one line each; `link(port)` is the port's link
/// state ("up", "down", or "unknown" for a net_tap port whose tap is in
/// another network namespace).
pub fn interfaces(t: &Topology, link: impl Fn(u16) -> &'static str) -> String {
    let mut o = String::new();
    for i in &t.interfaces {
        let _ = write!(o, "{} port {} link {} mac {} mtu {}", i.name, i.port, link(i.port), Mac(i.mac), i.mtu);
        for a in &i.v4 {
            let _ = write!(o, " {a}");
        }
        for a in &i.v6 {
            let _ = write!(o, " {a}");
        }
        let _ = writeln!(o, " {}/64", i.link_local);
    }
    o
}

/// `show sids`: the local SIDs, the SR policies and the HMAC key IDs.
pub fn sids(t: &dataplane::srv6::SidTable, topo: &Topology) -> String {
    use dataplane::srv6::Behaviour;
    use std::fmt::Write;
    let name = |i: u16| topo.iface(i).map(|x| x.name.clone()).unwrap_or_else(|| format!("#{i}"));
    let mut v: Vec<_> = t.iter().collect();
    v.sort_by_key(|(a, _)| *a);
    let mut out = String::new();
    for (sid, b) in v {
        let what = match b {
            Behaviour::End => "End".to_string(),
            Behaviour::EndX { iface, nexthop } => format!("End.X interface {} via {nexthop}", name(*iface)),
            Behaviour::EndDT4 => "End.DT4".to_string(),
            Behaviour::EndDT6 => "End.DT6".to_string(),
            Behaviour::EndMT { receivers_extra, hmac_required, downstream } => {
                let mut s = "End.MT".to_string();
                if *hmac_required {
                    s += " hmac-required";
                }
                for (a, q) in receivers_extra {
                    let _ = write!(s, " receiver {a} {q:#x}");
                }
                for d in downstream {
                    let _ = write!(s, " downstream {d}");
                }
                s
            }
            Behaviour::EndC => "END.C".to_string(),
            Behaviour::EndE => "END.E".to_string(),
        };
        let _ = writeln!(out, "{sid:<40} {what}");
    }
    let keys = t.hmac_keys();
    if !keys.is_empty() {
        let ids: Vec<String> = keys.ids().map(|k| k.to_string()).collect();
        let _ = writeln!(out, "HMAC key IDs: {}", ids.join(" "));
    }
    out
}

/// The SR policies: prefix, mode, SID lists with their weights in force
/// (the ingress PE reweights them), and the rate share the ingress PE
/// holds the traffic to (FANN draft s.4.2).
pub fn policies(t: &dataplane::srv6::SidTable) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    for (prefix, i) in t.policy_prefixes() {
        let Some(p) = t.policy(i) else { continue };
        let lists: Vec<String> = p.lists().iter().map(|l| format!("[{}] weight {}", l.sids.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", "), l.weight)).collect();
        let limit = p.rate_permille.map(|pm| format!(" rate held to {}.{}%", pm / 10, pm % 10)).unwrap_or_default();
        let _ = writeln!(out, "{prefix} policy {i} {:?} from {}: {}{limit}", p.mode, p.source, lists.join("; "));
        let x = p.extras();
        for t in &x.end_mt {
            let rs: Vec<String> = t.receivers.iter().map(|r| format!("{} {:#x}", r.address, r.qpn)).collect();
            let _ = writeln!(out, "  end.mt tlv edge {}: {}", t.edge_node_address, rs.join(", "));
        }
        if let Some(k) = &x.hmac {
            let _ = writeln!(out, "  hmac key {} ({} octets)", k.key_id(), k.len());
        }
    }
    out
}

/// One port's RTT probe, for `show congestion`.
pub fn rtt_probe(slot: &crate::router::RttProbeSlot) -> String {
    let p = &slot.probe;
    let c = &p.cfg;
    let st = &p.stats;
    let us = |ns: u64| format!("{:.1} us", ns as f64 / 1e3);
    let (filled, lost) = p.window_fill();
    let est = match p.estimate() {
        _ if !slot.on => "off (ctl congestion PORT rtt_probe off): RTT_est stays as set".to_string(),
        Some(e) => format!("the smallest round trip of the last {filled} probe(s): {} (last answer {}, jitter {})", us(e), p.last_rtt_ns.map_or_else(|| "-".into(), us), us(p.jitter_ns)),
        None if filled == 0 => "no probe answered or lost yet: RTT_est as configured".to_string(),
        None => format!("none of the last {filled} probes answered ({lost} lost): RTT_est stays"),
    };
    format!(
        "RTT probe: Echo Requests from {} to {} every {} ms (timeout {} ms, window {}); {est}; sent {}, answered {}, lost {}, late {}, forged {}, answers to probes sent unresolved {}, dated before their probe {}, RTT_est moved {} time(s)",
        c.source,
        c.target,
        c.interval_ns / 1_000_000,
        c.timeout_ns / 1_000_000,
        c.window,
        st.sent,
        st.answered,
        st.lost,
        st.late,
        st.forged,
        st.held,
        st.clock_skew,
        st.changes
    )
}

/// One port's RTT_est from its receivers' ACKs, for `show congestion`.
pub fn rtt_acks(a: &dataplane::congestion::AckRttStats, p: &dataplane::congestion::AckRttParams, slot: Option<&crate::router::AckRttSlot>) -> String {
    let us = |ns: u64| format!("{:.1} us", ns as f64 / 1e3);
    let est = match (a.estimate_ns, slot.is_some_and(|s| s.on)) {
        (e, false) if e > 0 => format!("off (ctl congestion PORT rtt_acks off): RTT_est stays as set; measured {}", us(e)),
        (_, false) => "off (ctl congestion PORT rtt_acks off): RTT_est stays as set".to_string(),
        (0, true) => "no round trip in the window: RTT_est stays".to_string(),
        (e, true) => format!("the smallest round trip of the window: {} (last {}, jitter {})", us(e), us(a.last_ns), us(a.jitter_ns)),
    };
    format!(
        "RTT from ACKs: data packets with AckReq timed from leaving the queue to their ACK (window {} ms, timeout {} ms); {est}; timed {}, measured {}, no ACK in time {}, abandoned (NAK, retransmission) {}, not timed as maybe retransmitted {}, RTT_est moved {} time(s)",
        p.window_ns / 1_000_000,
        p.timeout_ns / 1_000_000,
        a.timed,
        a.samples,
        a.timeouts,
        a.discarded,
        a.retransmissions_skipped,
        slot.map_or(0, |s| s.changes)
    )
}

fn rate(bps: u64) -> String {
    match bps {
        0 => "line rate".to_string(),
        b if b % 1_000_000_000 == 0 => format!("{} Gb/s", b / 1_000_000_000),
        b if b >= 1_000_000 => format!("{} Mb/s", b as f64 / 1e6),
        b => format!("{b} b/s"),
    }
}

/// The name of DPDK port `id` (its number if it has none).
pub fn port_name(names: &[(u16, String)], id: u16) -> String {
    names.iter().find(|(p, _)| *p == id).map_or_else(|| id.to_string(), |(_, n)| n.clone())
}

/// `show congestion` and the exit table: per congestion-aware port, the
/// parameters and thresholds in effect, then one counter or value a line.
pub fn congestion(views: &[(u16, CongestionView)], names: &[(u16, String)], probes: &[crate::router::RttProbeSlot], acks: &[crate::router::AckRttSlot]) -> String {
    let mut o = String::new();
    for (id, v) in views {
        let p = &v.params;
        let s = &v.stats;
        let _ = writeln!(
            o,
            "congestion '{}': R_port {}, RTT_est {} us, K_min {} bytes (configured {}), K_max {} bytes, V_ecn {}, V_growth {} KB/ms, interval {} us, CNP cap {}/s burst {}",
            port_name(names, *id),
            rate(p.rate_bps),
            p.rtt_est_ns as f64 / 1e3,
            s.k_min,
            v.k_min_configured,
            s.k_max,
            p.v_ecn,
            p.v_growth_kb_per_ms,
            p.interval_ns as f64 / 1e3,
            p.cnp_port_max_pps,
            p.cnp_port_burst
        );
        let on = |b: bool| if b { "on" } else { "off" };
        let _ = writeln!(
            o,
            "  policy: top {} flow(s) per evaluation, CNP format {} for sources without a configured one ({} source prefix(es) configured), suppression {} (observation window {} us), adaptive K_min {}, zero metrics {}, flows idle after {} ms",
            p.policy.top_flows,
            match p.default_format {
                dataplane::congestion::CnpFormat::Icmpv6 => "ICMPv6 (IPv4 sources: none)",
                dataplane::congestion::CnpFormat::Roce => "RoCEv2",
            },
            v.source_formats,
            on(p.suppression),
            p.observation_window_ns() as f64 / 1e3,
            on(p.adaptive.is_some()),
            on(p.zero_metrics),
            p.flow_idle_timeout_ns / 1_000_000
        );
        let _ = writeln!(
            o,
            "  QD trigger: {}",
            if p.qd_immediate { "immediate (the first poll that sees QD above K_max)" } else { "interval (QD sampled when a monitoring interval closes)" }
        );
        if let Some(slot) = probes.iter().find(|s| s.probe.port == *id) {
            let _ = writeln!(o, "  {}", rtt_probe(slot));
        }
        if let (Some(a), Some(ap)) = (v.ack_rtt, p.ack_rtt) {
            let _ = writeln!(o, "  {}", rtt_acks(&a, &ap, acks.iter().find(|s| s.port == *id)));
        }
        let r = &v.reaction;
        let us = |ns: u64| format!("{:.1}", ns as f64 / 1e3);
        let rows = [
            ("queue-depth-bytes", s.qd.to_string()),
            ("queue-limit-bytes", v.queue_limit_bytes.to_string()),
            ("queue-peak-bytes", v.queue.max_depth_bytes.to_string()),
            ("queue-enqueued", v.queue.enqueued.to_string()),
            ("queue-tail-drops", v.queue.tail_drops.to_string()),
            ("emr-last-interval", format!("{:.3}", s.emr)),
            ("qgr-last-interval-kb-per-ms", format!("{:.1}", s.qgr_kb_per_ms)),
            ("trigger-qd-above-k-max", s.trigger_qd.to_string()),
            ("trigger-emr-above-v-ecn", s.trigger_emr.to_string()),
            ("trigger-qgr-above-v-growth", s.trigger_qgr.to_string()),
            ("trigger-without-queued-flow", s.no_flow.to_string()),
            ("ce-marked", s.marked.to_string()),
            ("cnp-rate-reduce", s.cnp_rate_reduce.to_string()),
            ("cnp-pause", s.cnp_pause.to_string()),
            ("cnp-notify", s.cnp_notify.to_string()),
            ("cnp-resume", s.cnp_resume.to_string()),
            ("cnp-escalated", s.escalated.to_string()),
            ("cnp-escalation-saturated", s.escalation_saturated.to_string()),
            ("cnp-deferred", s.suppressed.to_string()),
            ("cnp-flow-rate-limited", s.rate_limited.to_string()),
            ("cnp-port-capped", s.port_capped.to_string()),
            ("cnp-output-full", s.out_full.to_string()),
            ("cnp-not-built", s.cnp_not_built.to_string()),
            ("cnp-format-unconfigured", s.format_unconfigured.to_string()),
            ("cnp-source-qp-unknown", s.source_qp_unknown.to_string()),
            ("cnp-source-qp-unknown-skipped", s.source_qp_unknown_skipped.to_string()),
            ("cnp-reactions", r.count.to_string()),
            ("cnp-reaction-p50-us", us(r.p50_ns)),
            ("cnp-reaction-p90-us", us(r.p90_ns)),
            ("cnp-reaction-p99-us", us(r.p99_ns)),
            ("cnp-reaction-max-us", us(r.max_ns)),
            ("flows-learned", v.flows_live.to_string()),
            ("flow-table-size", v.flow_capacity.to_string()),
            ("flows-with-bytes-queued", v.flows_queued.to_string()),
            ("flows-throttled", v.flows_throttled.to_string()),
            ("flows-aged", s.flows_aged.to_string()),
            ("flow-table-full", s.flow_table_full.to_string()),
            ("drops-counted-for-flows", s.drops_counted.to_string()),
            ("source-qps-from-responses", s.reverse_learned.to_string()),
            ("source-qps-unmatched", s.reverse_unmatched.to_string()),
            ("source-qps-ambiguous", s.reverse_ambiguous.to_string()),
            ("source-qps-walk-limited", s.reverse_walk_limited.to_string()),
            ("source-qps-from-cnps", s.reverse_learned_from_cnp.to_string()),
        ];
        let w = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(28);
        for (k, val) in rows {
            let _ = writeln!(o, "  {k:<w$} {val:>12}");
        }
    }
    o
}

/// `show flows PORT [N]`: the flows with the most bytes queued first.
/// `tunnel_pes`: the ingress PE of each tunnel tag (tag 1 first).
pub fn flows(port: &str, v: &CongestionView, flows: &[FlowView], tunnel_pes: &[std::net::Ipv6Addr]) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "flows of '{port}': {} learned, {} with bytes queued, {} throttled; the {} with the most bytes queued (then the most recent):",
        v.flows_live,
        v.flows_queued,
        v.flows_throttled,
        flows.len()
    );
    let _ = writeln!(o, "{:<40} {:<40} {:>8} {:>19} {:>12} {:>10} {:>10} {:>12} {:>9}  state", "source", "destination", "dest-qp", "src-qp", "queued-bytes", "last-psn", "idle-us", "last-cnp-us", "udp-sport");
    for f in flows {
        let src_qp = match (f.src_qp, f.src_qp_configured) {
            (Some(q), _) if f.ud => format!("{q:#08x} ud-deth"),
            (Some(q), true) => format!("{q:#08x} configured"),
            (Some(q), false) => format!("{q:#08x} learned"),
            (None, _) => "unknown".to_string(),
        };
        let mut state = Vec::new();
        if f.throttled {
            state.push("throttled".to_string());
        }
        if f.deferring {
            state.push("deferring".to_string());
        }
        // The ingress PE whose SRv6 tunnel the flow comes in (its CNPs go
        // to that PE's SID).
        match f.via {
            0 => {}
            dataplane::node::TUNNEL_FROM_UNKNOWN => state.push("tunnel-from-unlisted-pe".to_string()),
            t => state.push(format!("via-pe={}", tunnel_pes.get(usize::from(t) - 1).map_or_else(|| "?".to_string(), |a| a.to_string()))),
        }
        let _ = writeln!(
            o,
            "{:<40} {:<40} {:>#8x} {:>19} {:>12} {:>10} {:>10} {:>12} {:>9}  {}",
            f.src.to_string(),
            f.dst.to_string(),
            f.dest_qp,
            src_qp,
            f.queued_bytes,
            f.last_psn,
            f.idle_ns / 1000,
            f.last_cnp_ago_ns.map_or_else(|| "-".to_string(), |n| (n / 1000).to_string()),
            f.sport,
            if state.is_empty() { "-".to_string() } else { state.join(",") }
        );
    }
    o
}

/// `show pfc`: per port that honours received PAUSE / PFC frames, what it
/// honours, the frames received, the data held back now and so far, and
/// each honoured priority's pause (what is left of it at `now`, ns on the
/// workers' clock).
pub fn pfc(ports: &[(u16, std::sync::Arc<dataplane::pfcrx::PortPause>)], names: &[(u16, String)], now: u64) -> String {
    use std::sync::atomic::Ordering::Relaxed;
    let mut o = String::new();
    for (id, pp) in ports {
        let name = names.iter().find(|(i, _)| i == id).map_or("?", |(_, n)| n.as_str());
        let c = pp.config();
        let prios: Vec<String> = (0..8).filter(|b| c.priorities & (1 << b) != 0).map(|b| b.to_string()).collect();
        let _ = writeln!(
            o,
            "pfc '{name}': priorities [{}], 802.3x pause {}, quanta at {} Mb/s{}; received pfc {} pause {} ignored {} (partly {}); data held now {}, held so far {}",
            prios.join(", "),
            if c.pause { "honoured" } else { "ignored" },
            pp.link_bps() / 1_000_000,
            if c.watchdog_ns == 0 { String::new() } else { format!(", watchdog {} ms (restore {} ms)", c.watchdog_ns / 1_000_000, c.restore_ns / 1_000_000) },
            pp.pfc_frames.load(Relaxed),
            pp.pause_frames.load(Relaxed),
            pp.ignored_frames.load(Relaxed),
            pp.partly_ignored_frames.load(Relaxed),
            pp.held_now.load(Relaxed),
            pp.held_packets.load(Relaxed),
        );
        for (prio, st) in pp.snapshot(now).iter().enumerate().filter(|(_, st)| st.honoured) {
            let state = if st.remaining_ns > 0 { format!("paused, {:.1} us left", st.remaining_ns as f64 / 1e3) } else { "sending".to_string() };
            let wd = match (st.watchdog_fired, st.restoring_ns) {
                (0, _) => String::new(),
                (n, 0) => format!(", watchdog fired {n}"),
                (n, r) => format!(", watchdog fired {n} (pauses ignored {:.1} ms more)", r as f64 / 1e6),
            };
            let _ = writeln!(o, "  priority {prio}: {state}; pauses {}, resumes {}{wd}", st.pauses, st.resumes);
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use dataplane::congestion::{CongestionView, FlowView};

    /// `show flows` names the ingress PE whose tunnel a flow comes in (the
    /// PE its CNPs go to), or says the tunnel's source is unlisted.
    #[test]
    fn show_flows_names_the_pe_of_the_flows_tunnel() {
        let f = FlowView {
            src: "2001:db8:7::2".parse().unwrap(),
            dst: "2001:db8:3::7".parse().unwrap(),
            dest_qp: 0x100,
            src_qp: None,
            src_qp_configured: false,
            ud: false,
            queued_bytes: 5000,
            last_psn: 9,
            idle_ns: 0,
            last_cnp_ago_ns: None,
            throttled: true,
            deferring: false,
            sport: 0xc5a1,
            via: 0,
        };
        let pes = ["2001:db8:1::99".parse().unwrap(), "2001:db8:1::98".parse().unwrap()];
        let rows = [f, FlowView { via: 2, ..f }, FlowView { via: dataplane::node::TUNNEL_FROM_UNKNOWN, ..f }];
        let t = super::flows("wan", &CongestionView::default(), &rows, &pes);
        let states: Vec<&str> = t.lines().skip(2).map(|l| l.rsplit("  ").next().unwrap()).collect();
        assert_eq!(states, ["throttled", "throttled,via-pe=2001:db8:1::98", "throttled,tunnel-from-unlisted-pe"], "{t}");
    }
}
