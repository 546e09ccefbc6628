//! `dcirouter-fuzz`: run the fuzz targets for a bounded time or number of
//! runs. See `fuzz/run.sh` and the crate docs in `lib.rs`.
//!
//! ```text
//! dcirouter-fuzz [--seconds N] [--iters N] [--seed N] [--group G]... [--target T]...
//!                [--corpus] [--require-coverage] [--list]
//! dcirouter-fuzz --repro TARGET FILE
//! ```
//! `--seconds` is the budget of each group (shared by its targets);
//! `--iters` bounds each target's runs instead (deterministic).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use dcirouter_fuzz::{cov, fuzz, install_panic_hook, run_one, targets::TARGETS, Dirs, Target};

fn usage() -> ExitCode {
    eprintln!("usage: dcirouter-fuzz [--seconds N] [--iters N] [--seed N] [--group G]... [--target T]... [--corpus] [--require-coverage] [--list]");
    eprintln!("       dcirouter-fuzz --repro TARGET FILE");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let mut seconds = 30.0f64;
    let mut iters = None;
    let mut seed = 0x5eed_0f_d1c1_u64;
    let mut groups: Vec<String> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    let mut corpus = false;
    let mut require_cov = false;
    let mut args = std::env::args().skip(1);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    while let Some(a) = args.next() {
        let mut val = || args.next();
        match a.as_str() {
            "--seconds" => match val().and_then(|v| v.parse().ok()) {
                Some(v) => seconds = v,
                None => return usage(),
            },
            "--iters" => match val().and_then(|v| v.parse().ok()) {
                Some(v) => iters = Some(v),
                None => return usage(),
            },
            "--seed" => match val().and_then(|v| v.parse().ok()) {
                Some(v) => seed = v,
                None => return usage(),
            },
            "--group" => match val() {
                Some(v) => groups.push(v),
                None => return usage(),
            },
            "--target" => match val() {
                Some(v) => names.push(v),
                None => return usage(),
            },
            "--corpus" => corpus = true,
            "--require-coverage" => require_cov = true,
            "--list" => {
                for t in TARGETS {
                    println!("{}\t{}", t.group, t.name);
                }
                return ExitCode::SUCCESS;
            }
            "--repro" => {
                let (Some(name), Some(file)) = (val(), val()) else {
                    return usage();
                };
                let Some(t) = TARGETS.iter().find(|t| t.name == name) else {
                    eprintln!("no target {name}");
                    return ExitCode::from(2);
                };
                let data = std::fs::read(&file).expect("read input");
                // No hook, no catch: the panic and its backtrace show.
                (t.run)(&data);
                println!("{name}: no panic on {file}");
                return ExitCode::SUCCESS;
            }
            _ => return usage(),
        }
    }
    let selected: Vec<&Target> = TARGETS
        .iter()
        .filter(|t| groups.is_empty() || groups.iter().any(|g| g == t.group))
        .filter(|t| names.is_empty() || names.iter().any(|n| n == t.name))
        .collect();
    if selected.is_empty() {
        eprintln!("no target selected (see --list)");
        return ExitCode::from(2);
    }
    if require_cov && !cov::available() {
        eprintln!("coverage counters are missing: build with fuzz/run.sh (RUSTFLAGS --cfg fuzz_cov -C passes=sancov-module ...)");
        return ExitCode::from(2);
    }
    println!(
        "fuzzing {} targets, {} per group, seed {seed:#x}, coverage: {}",
        selected.len(),
        match iters {
            Some(n) => format!("{n} runs per target"),
            None => format!("{seconds}s"),
        },
        if cov::available() {
            format!("{} counters", cov::counters())
        } else {
            "off".into()
        }
    );
    install_panic_hook();
    let dirs = Dirs {
        artifacts: root.join("artifacts"),
        corpus: corpus.then(|| root.join("corpus")),
    };
    let mut findings = Vec::new();
    let mut group_names: Vec<&str> = selected.iter().map(|t| t.group).collect();
    group_names.dedup();
    let mut total = 0u64;
    for g in group_names {
        let ts: Vec<&&Target> = selected.iter().filter(|t| t.group == g).collect();
        let per = Duration::from_secs_f64(seconds / ts.len() as f64);
        for t in ts {
            let start = Instant::now();
            let r = fuzz(t, start + per, iters, seed, &dirs);
            total += r.execs;
            println!(
                "  {:<8} {:<16} {:>9} runs {:>7.0}/s  corpus {:>5}  features {:>6}  findings {}",
                g,
                t.name,
                r.execs,
                r.execs as f64 / start.elapsed().as_secs_f64().max(1e-9),
                r.corpus,
                r.features,
                r.findings.len()
            );
            findings.extend(r.findings);
        }
    }
    // A finding must reproduce (guards against flaky state in a target).
    for f in &findings {
        let t = TARGETS.iter().find(|t| t.name == f.target).unwrap();
        let again = run_one(t, &f.input).is_some();
        println!("FINDING in {}: {}", f.target, f.message);
        println!(
            "  input ({} bytes): {}",
            f.input.len(),
            f.input
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        );
        if let Some(p) = &f.saved {
            println!(
                "  saved: {}   (reproduce: dcirouter-fuzz --repro {} {})",
                p.display(),
                f.target,
                p.display()
            );
        }
        if !again {
            println!("  (did not reproduce on a second run)");
        }
    }
    println!("{} runs, {} findings", total, findings.len());
    if findings.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
