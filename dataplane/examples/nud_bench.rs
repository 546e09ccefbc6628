//! What neighbour unreachability detection costs the control thread:
//! `Nud::tick` (run every 50 ms) over tables of 1k, 100k and 1M learned
//! neighbours, with the default timers (reachable 30 s, probes 1 s apart,
//! 3 probes), on virtual time, 40 s each: every neighbour answering its
//! first probe (a healthy network), or none answering (each deleted after
//! its third probe, as the control thread does).
//!
//! `cargo run --release -p dataplane --example nud_bench`
//!
//! Prints, and writes to `bench/nud-results.md` (or `$NUD_BENCH_OUT`), per
//! table size: the mean and worst tick (wall time) and the probes per
//! second the ticks emitted.

use dataplane::nud::{Nud, NudConfig};
use dataplane::tables::{NeighSource, Neighbours};
use std::net::{IpAddr, Ipv4Addr};
use std::fmt::Write as _;
use std::time::Instant;

const TICK_NS: u64 = 50_000_000;

fn main() {
    let mut md = String::from("# Neighbour unreachability detection: control-thread cost\n\n`cargo run --release -p dataplane --example nud_bench` (`make bench`, BENCH_NUD): `Nud::tick`, the control thread's step every 50 ms, over 40 s of virtual time with the default timers (reachable 30 s x 0.5..1.5, 3 probes 1 s apart); wall time per step. **all**: every neighbour answers its first probe; **none**: none answers, each is deleted after its third probe.\n\n");
    md += "| learned neighbours | neighbours answer | ticks | mean tick us | worst tick us | probes / s | deleted |\n|---:|---|---:|---:|---:|---:|---:|\n";
    for n in [1_000u32, 100_000, 1_000_000] {
        for answer in [true, false] {
            let mut t = Neighbours::default();
            for k in 0..n {
                t.learn(0, IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + k)), [2, 0, 0, 0, 0, 1], NeighSource::Learned);
            }
            let mut d = Nud::new(NudConfig::default(), 1);
            // Start: every entry reachable from now.
            d.tick(0, &t, &[]);
            // 40 s of ticks: past the first probes (15..45 s) of most entries.
            let ticks = 40_000_000_000 / TICK_NS;
            let (mut sum, mut worst, mut probes, mut deleted) = (0u128, 0u128, 0usize, 0usize);
            for i in 1..=ticks {
                let now = i * TICK_NS;
                let t0 = Instant::now();
                let out = d.tick(now, &t, &[]);
                let ns = t0.elapsed().as_nanos();
                sum += ns;
                worst = worst.max(ns);
                probes += out.probes.len();
                if answer {
                    for p in &out.probes {
                        d.confirm(p.iface, p.target, now);
                    }
                }
                for (i, ip) in &out.delete {
                    t.remove(*i, *ip);
                }
                deleted += out.delete.len();
            }
            let _ = writeln!(
                md,
                "| {n} | {} | {ticks} | {:.1} | {:.1} | {:.0} | {deleted} |",
                if answer { "all" } else { "none" },
                sum as f64 / ticks as f64 / 1e3,
                worst as f64 / 1e3,
                probes as f64 / 40.0
            );
        }
    }
    print!("{md}");
    let path = std::env::var("NUD_BENCH_OUT").unwrap_or_else(|_| format!("{}/../bench/nud-results.md", env!("CARGO_MANIFEST_DIR")));
    if let Err(e) = std::fs::write(&path, &md) {
        eprintln!("nud_bench: {path}: {e}");
        std::process::exit(1);
    }
}
