//! Text output: the status line, the counter table, `show` commands.

use dataplane::counters::{Drop, Local, Snapshot};
use dataplane::dpdk::port::PortStats;
use dataplane::tables::{Fib, Neighbours, Topology};
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
    let _ = writeln!(o, "{:<10} {:>5} {:>12} {:>14} {:>12} {:>14} {:>10} {:>10}", "port", "id", "rx-packets", "rx-bytes", "tx-packets", "tx-bytes", "nic-missed", "nic-errors");
    for (id, name) in names {
        let i = usize::from(*id);
        let st = stats.iter().find(|(p, _)| p == id).map(|(_, s)| *s).unwrap_or_default();
        let _ = writeln!(
            o,
            "{:<10} {:>5} {:>12} {:>14} {:>12} {:>14} {:>10} {:>10}",
            name, id, s.rx_pkts[i], s.rx_bytes[i], s.tx_pkts[i], s.tx_bytes[i], st.imissed + st.rx_nombuf, st.ierrors + st.oerrors
        );
    }
    let _ = writeln!(o, "drops (total {}):", s.total_drops());
    for r in Drop::ALL {
        let n = s.drop_count(*r);
        if n > 0 {
            let _ = writeln!(o, "  {:<28} {:>12}", r.name(), n);
        }
    }
    let _ = writeln!(o, "local:");
    for l in Local::ALL {
        let n = s.local_count(*l);
        if n > 0 {
            let _ = writeln!(o, "  {:<28} {:>12}", l.name(), n);
        }
    }
    o.trim_end().to_string()
}

pub fn routes(f: &Fib, t: &Topology) -> String {
    let mut o = String::new();
    let name = |i: u16| t.iface(i).map(|x| x.name.clone()).unwrap_or_else(|| format!("#{i}"));
    for (p, nh) in f.routes4() {
        let _ = writeln!(o, "{p} {} dev {}", nh.gateway.map(|g| format!("via {g}")).unwrap_or("connected".into()), name(nh.iface));
    }
    for (p, nh) in f.routes6() {
        let _ = writeln!(o, "{p} {} dev {}", nh.gateway.map(|g| format!("via {g}")).unwrap_or("connected".into()), name(nh.iface));
    }
    o
}

pub fn neighbours(n: &Neighbours, t: &Topology) -> String {
    let mut v: Vec<String> = n
        .iter()
        .map(|((i, ip), e)| format!("{ip} lladdr {} dev {} {:?}\n", Mac(e.mac), t.iface(*i).map(|x| x.name.as_str()).unwrap_or("?"), e.source))
        .collect();
    v.sort();
    v.concat()
}

pub fn interfaces(t: &Topology) -> String {
    let mut o = String::new();
    for i in &t.interfaces {
        let _ = write!(o, "{} port {} mac {} mtu {}", i.name, i.port, Mac(i.mac), i.mtu);
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
pub fn sids(t: &dataplane::srv6::SidTable) -> String {
    use dataplane::srv6::Behaviour;
    use std::fmt::Write;
    let mut v: Vec<_> = t.iter().collect();
    v.sort_by_key(|(a, _)| *a);
    let mut out = String::new();
    for (sid, b) in v {
        let what = match b {
            Behaviour::End => "End".to_string(),
            Behaviour::EndX { iface, nexthop } => format!("End.X interface {iface} via {nexthop}"),
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
