//! What neighbour unreachability detection costs the control thread:
//! `Nud::tick` (run every 50 ms) over tables of 1k, 100k and 1M learned
//! neighbours, with the default timers (reachable 30 s, delay 5 s, probes
//! 1 s apart, 3 probes, unused STALE entries deleted after 60 s), on
//! virtual time, 90 s each: every neighbour in
//! use (the workers mark it every tick) or one in ten, and every neighbour
//! in use answering its first probe (a healthy network) or none answering
//! (each deleted after its third probe, as the control thread does).
//!
//! `cargo run --release -p dataplane --example nud_bench`
//!
//! Prints, and writes to `bench/nud-results.md` (or `$NUD_BENCH_OUT`), per
//! case: the mean and worst tick (wall time) and the probes per second the
//! ticks emitted.
//!
//! Then what publishing a neighbour snapshot for the workers costs after a
//! few changes: a copy of the table (what every change cost before) against
//! replaying the changes into the spare snapshot
//! (`dataplane::neighpub`).

use dataplane::neighpub::NeighbourMaster;
use dataplane::nud::{Gateways, Nud, NudConfig, UsedBits};
use dataplane::tables::{NeighSource, Neighbours};
use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Instant;

const TICK_NS: u64 = 50_000_000;
const SECONDS: u64 = 90;

fn main() {
    let mut md = format!("# Neighbour unreachability detection: control-thread cost\n\n`cargo run --release -p dataplane --example nud_bench` (`make bench`, BENCH_NUD): `Nud::tick`, the control thread's step every 50 ms, over {SECONDS} s of virtual time with the default timers (reachable 30 s x 0.5..1.5, then STALE; one in use is probed after a 5 s delay, 3 probes 1 s apart); wall time per step, which includes taking the workers' use marks. **in use**: the neighbours the workers mark as forwarded to, every tick (the others go STALE, unprobed, and are deleted 60 s later, at most 8192 a step). **answer** all: every probed neighbour answers its first probe; none: none answers, each is deleted after its third probe. **deleted**: by unanswered probes and by expiry.\n\n");
    md += "| learned neighbours | in use | answer | ticks | mean tick us | worst tick us | probes / s | deleted |\n|---:|---:|---|---:|---:|---:|---:|---:|\n";
    for n in [1_000u32, 100_000, 1_000_000] {
        for (every, answer) in [(1u32, true), (10, true), (1, false)] {
            let mut t = Neighbours::default();
            for k in 0..n {
                t.learn(0, IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + k)), [2, 0, 0, 0, 0, 1], NeighSource::Learned);
            }
            let bits: Vec<u32> = (0..n).step_by(every as usize).map(|k| UsedBits::bit(0, IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + k)))).collect();
            let used = Arc::new(UsedBits::default());
            let mut d = Nud::new(NudConfig::default(), 1, used.clone());
            // Start: every entry reachable from now.
            d.tick(0, &t, Gateways::default());
            let ticks = SECONDS * 1_000_000_000 / TICK_NS;
            let (mut sum, mut worst, mut probes, mut deleted) = (0u128, 0u128, 0usize, 0usize);
            for i in 1..=ticks {
                let now = i * TICK_NS;
                for &b in &bits {
                    used.mark(b);
                }
                let t0 = Instant::now();
                let out = d.tick(now, &t, Gateways::default());
                let ns = t0.elapsed().as_nanos();
                sum += ns;
                worst = worst.max(ns);
                probes += out.probes.len();
                if answer {
                    for p in &out.probes {
                        d.confirm(p.iface, p.target, now);
                    }
                }
                for (i, ip) in out.delete.iter().chain(&out.expire) {
                    t.remove(*i, *ip);
                }
                deleted += out.delete.len() + out.expire.len();
            }
            let _ = writeln!(
                md,
                "| {n} | {} | {} | {ticks} | {:.1} | {:.1} | {:.0} | {deleted} |",
                if every == 1 { "all".to_string() } else { format!("1 in {every}") },
                if answer { "all" } else { "none" },
                sum as f64 / ticks as f64 / 1e3,
                worst as f64 / 1e3,
                probes as f64 / SECONDS as f64
            );
        }
    }
    publish_cost(&mut md);
    print!("{md}");
    let path = std::env::var("NUD_BENCH_OUT").unwrap_or_else(|_| format!("{}/../bench/nud-results.md", env!("CARGO_MANIFEST_DIR")));
    if let Err(e) = std::fs::write(&path, &md) {
        eprintln!("nud_bench: {path}: {e}");
        std::process::exit(1);
    }
}

/// Publishing a snapshot after `changes` changes (new MACs for random
/// entries) of a table of `n`: a copy against a replay into the spare,
/// which the workers have let go of (they take an update within a poll
/// loop, microseconds; the control thread publishes at most once a step).
fn publish_cost(md: &mut String) {
    md.push_str("\n## Publishing a snapshot for the workers\n\nAfter `changes` changes to a table of `learned` neighbours: **copy** = cloning the table (what every learning, deletion or `neighbour add` cost before), **publish** = `NeighbourMaster::publish`, which replays the changes since the spare snapshot into it when there are at most one per 64 entries, and copies otherwise (`dataplane/src/neighpub.rs`); means over 20 publications, wall time.\n\n| learned | changes | copy ms | publish ms | by | copy / publish |\n|---:|---:|---:|---:|---|---:|\n");
    const ROUNDS: u32 = 20;
    for n in [1_000u32, 100_000, 1_000_000] {
        let mut t = Neighbours::default();
        for k in 0..n {
            t.learn(0, IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + k)), [2, 0, 0, 0, 0, 1], NeighSource::Learned);
        }
        let mut m = NeighbourMaster::new(t);
        drop((m.publish(), m.publish()));
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for changes in [1u32, 100, 10_000] {
            if changes > n / 4 {
                continue;
            }
            let (mut copy, mut replay) = (0u128, 0u128);
            let before = m.stats;
            for r in 0..ROUNDS {
                for _ in 0..changes {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let k = (x % u64::from(n)) as u32;
                    m.learn(0, IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + k)), [2, 0, 0, 0, (r % 250) as u8 + 2, 1], NeighSource::Learned);
                }
                let t0 = Instant::now();
                let c = std::hint::black_box((*m).clone());
                copy += t0.elapsed().as_nanos();
                drop(c);
                let t0 = Instant::now();
                let p = m.publish();
                replay += t0.elapsed().as_nanos();
                assert_eq!(p.len(), m.len());
                drop(p);
            }
            let by = match (m.stats.replays - before.replays, m.stats.copies - before.copies) {
                (r, 0) if r == u64::from(ROUNDS) => "replay",
                (0, c) if c == u64::from(ROUNDS) => "copy",
                _ => "both",
            };
            let (c, r) = (copy as f64 / f64::from(ROUNDS) / 1e6, replay as f64 / f64::from(ROUNDS) / 1e6);
            let _ = writeln!(md, "| {n} | {changes} | {c:.3} | {r:.3} | {by} | {:.1} |", c / r.max(1e-6));
        }
    }
}
