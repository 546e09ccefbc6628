//! A small coverage-guided mutation fuzzer for the wire parsers, on stable
//! Rust with no C toolchain and nothing but the `dataplane` crate.
//!
//! * Coverage: built by `fuzz/run.sh` with `-C passes=sancov-module` and
//!   LLVM's inline 8-bit counters (stable `-C` options); LLVM registers the
//!   counter arrays through `__sanitizer_cov_8bit_counters_init`, which
//!   [`cov`] implements. An input that lights a new (counter, hit-count
//!   bucket) pair joins the corpus, as in libFuzzer/AFL. Built without
//!   `--cfg fuzz_cov` the harness still works, as a plain mutation fuzzer.
//! * Inputs: each target starts from valid seeds (emitted with the crate's
//!   own `Repr`s), mutates them (bit flips, interesting values, length-field
//!   edits, insert/delete/truncate/splice) and may apply a `fixup` that
//!   recomputes checksums so mutants reach past checksum verification.
//! * Oracle: any panic (the profile keeps overflow checks and debug
//!   assertions) is a finding; targets also assert round trips
//!   (`parse(emit(parse(x))) == parse(x)`) and incremental-checksum laws.
//!   A finding is saved under `fuzz/artifacts/<target>/` and makes the run
//!   exit non-zero.
//!
//! Deterministic: a fixed seed and, with `--iters`, a fixed number of runs.

use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

pub mod cov;
pub mod pipeline;
pub mod targets;

/// One fuzz target.
pub struct Target {
    pub name: &'static str,
    /// Targets of a group share the time budget of the group.
    pub group: &'static str,
    /// Valid inputs to start from.
    pub seeds: fn() -> Vec<Vec<u8>>,
    /// Repairs checksums (or similar) after mutation; applied to half of
    /// the mutants.
    pub fixup: Option<fn(&mut [u8])>,
    /// The code under test. Panics are findings.
    pub run: fn(&[u8]),
}

/// xorshift64*.
#[derive(Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
    pub fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
}

/// Largest input the mutator produces.
pub const MAX_LEN: usize = 2048;

const INTERESTING8: [u8; 10] = [0, 1, 2, 4, 8, 0x10, 0x40, 0x7f, 0x80, 0xff];
const INTERESTING16: [u16; 12] = [
    0, 1, 2, 7, 8, 0x28, 0x7f, 0x80, 0xff, 0x7fff, 0x8000, 0xffff,
];

fn mutate_once(d: &mut Vec<u8>, rng: &mut Rng, corpus: &[Vec<u8>]) {
    let len = d.len();
    match rng.below(13) {
        0 if len > 0 => {
            let i = rng.below(len);
            d[i] ^= 1 << rng.below(8);
        }
        1 if len > 0 => {
            let i = rng.below(len);
            d[i] = rng.next() as u8;
        }
        2 if len > 0 => {
            let i = rng.below(len);
            d[i] = INTERESTING8[rng.below(INTERESTING8.len())];
        }
        3 if len > 1 => {
            // A big-endian 16-bit field: an interesting value, the length
            // of the input (give or take), or the old value +- a little.
            let i = rng.below(len - 1);
            let old = u16::from_be_bytes([d[i], d[i + 1]]);
            let v = match rng.below(3) {
                0 => INTERESTING16[rng.below(INTERESTING16.len())],
                1 => (len as u16)
                    .wrapping_sub(i as u16)
                    .wrapping_add(rng.below(17) as u16)
                    .wrapping_sub(8),
                _ => old.wrapping_add(rng.below(33) as u16).wrapping_sub(16),
            };
            d[i..i + 2].copy_from_slice(&v.to_be_bytes());
        }
        4 if len > 0 => {
            let i = rng.below(len);
            let delta = 1 + rng.below(16) as u8;
            d[i] = if rng.chance(2) {
                d[i].wrapping_add(delta)
            } else {
                d[i].wrapping_sub(delta)
            };
        }
        5 if len < MAX_LEN => {
            let at = rng.below(len + 1);
            let n = 1 + rng.below(16);
            let fill: Vec<u8> = (0..n)
                .map(|_| if rng.chance(2) { 0 } else { rng.next() as u8 })
                .collect();
            d.splice(at..at, fill);
        }
        6 if len > 0 => {
            let at = rng.below(len);
            let n = 1 + rng.below((len - at).min(16));
            d.drain(at..at + n);
        }
        7 if len > 0 => {
            let n = rng.below(len);
            d.truncate(n);
        }
        8 if len > 1 => {
            let from = rng.below(len);
            let to = rng.below(len);
            let n = 1 + rng.below((len - from.max(to)).min(32));
            d.copy_within(from..from + n, to);
        }
        9 if !corpus.is_empty() => {
            let other = &corpus[rng.below(corpus.len())];
            if !other.is_empty() {
                let cut = rng.below(len + 1);
                let from = rng.below(other.len());
                d.truncate(cut);
                d.extend_from_slice(&other[from..]);
            }
        }
        10 if len < MAX_LEN => {
            let n = 1 + rng.below(32);
            for _ in 0..n {
                d.push(rng.next() as u8);
            }
        }
        11 if len > 3 => {
            let i = rng.below(len - 3);
            let v: u32 = match rng.below(4) {
                0 => 0,
                1 => u32::MAX,
                2 => 0x8000_0000,
                _ => rng.next() as u32,
            };
            d[i..i + 4].copy_from_slice(&v.to_be_bytes());
        }
        _ if len > 0 => {
            // Repeat a byte over a short run.
            let i = rng.below(len);
            let n = 1 + rng.below((len - i).min(8));
            let b = INTERESTING8[rng.below(INTERESTING8.len())];
            d[i..i + n].fill(b);
        }
        _ => d.push(rng.next() as u8),
    }
    d.truncate(MAX_LEN);
}

/// Apply 1..=8 stacked mutations.
pub fn mutate(d: &mut Vec<u8>, rng: &mut Rng, corpus: &[Vec<u8>]) {
    let n = 1 + rng.below(8);
    for _ in 0..n {
        mutate_once(d, rng, corpus);
    }
}

/// A crashing input.
#[derive(Debug, Clone)]
pub struct Finding {
    pub target: &'static str,
    pub message: String,
    pub input: Vec<u8>,
    pub saved: Option<PathBuf>,
}

/// What a target's run produced.
#[derive(Debug, Default, Clone)]
pub struct Report {
    pub execs: u64,
    pub corpus: usize,
    pub features: usize,
    pub findings: Vec<Finding>,
}

static LAST_PANIC: Mutex<String> = Mutex::new(String::new());

/// Make panics quiet and remembered (the harness reports them itself).
pub fn install_panic_hook() {
    panic::set_hook(Box::new(|info| {
        let msg = info.to_string();
        if let Ok(mut m) = LAST_PANIC.lock() {
            *m = msg;
        }
    }));
}

fn fnv(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// Where findings and the on-disk corpus live.
#[derive(Debug, Clone)]
pub struct Dirs {
    pub artifacts: PathBuf,
    /// Load and extend an on-disk corpus (`fuzz/corpus/<target>/`).
    pub corpus: Option<PathBuf>,
}

fn save(dir: &Path, name: &str, data: &[u8]) -> Option<PathBuf> {
    std::fs::create_dir_all(dir).ok()?;
    let p = dir.join(name);
    std::fs::write(&p, data).ok()?;
    Some(p)
}

/// Run one input, returning the panic message if it panicked.
pub fn run_one(t: &Target, input: &[u8]) -> Option<String> {
    let r = panic::catch_unwind(AssertUnwindSafe(|| (t.run)(input)));
    match r {
        Ok(()) => None,
        Err(_) => Some(LAST_PANIC.lock().map(|m| m.clone()).unwrap_or_default()),
    }
}

/// Fuzz `t` until `deadline` or `max_iters` runs, whichever is first.
pub fn fuzz(
    t: &Target,
    deadline: Instant,
    max_iters: Option<u64>,
    seed: u64,
    dirs: &Dirs,
) -> Report {
    let mut rng = Rng::new(seed ^ fnv(t.name.as_bytes()));
    let mut report = Report::default();
    let mut seen = cov::Seen::new();
    let mut corpus: Vec<Vec<u8>> = (t.seeds)();
    if let Some(dir) = &dirs.corpus {
        if let Ok(rd) = std::fs::read_dir(dir.join(t.name)) {
            let mut files: Vec<_> = rd.filter_map(|e| e.ok()).map(|e| e.path()).collect();
            files.sort();
            for f in files {
                if let Ok(d) = std::fs::read(&f) {
                    corpus.push(d);
                }
            }
        }
    }
    if corpus.is_empty() {
        corpus.push(Vec::new());
    }
    let mut crash_sites: Vec<String> = Vec::new();
    let mut record = |input: &[u8], msg: String, report: &mut Report| {
        // One report per panic site ("file:line:col"), not per input.
        let site = msg.split(':').take(3).collect::<Vec<_>>().join(":");
        if crash_sites.contains(&site) {
            return;
        }
        crash_sites.push(site);
        let saved = save(
            &dirs.artifacts.join(t.name),
            &format!("crash-{:016x}", fnv(input)),
            input,
        );
        report.findings.push(Finding {
            target: t.name,
            message: msg,
            input: input.to_vec(),
            saved,
        });
    };
    // The seeds first.
    let mut kept = Vec::with_capacity(corpus.len());
    for s in corpus.drain(..) {
        cov::reset();
        if let Some(msg) = run_one(t, &s) {
            record(&s, msg, &mut report);
        }
        report.execs += 1;
        seen.update();
        kept.push(s);
    }
    let mut corpus = kept;
    let n_start = corpus.len();
    let mut buf = Vec::with_capacity(MAX_LEN);
    loop {
        if let Some(m) = max_iters {
            if report.execs >= m {
                break;
            }
        }
        if report.execs % 128 == 0 && Instant::now() >= deadline {
            break;
        }
        // Prefer recent, coverage-adding entries a little.
        let i = if rng.chance(3) && corpus.len() > n_start {
            n_start + rng.below(corpus.len() - n_start)
        } else {
            rng.below(corpus.len())
        };
        buf.clear();
        buf.extend_from_slice(&corpus[i]);
        mutate(&mut buf, &mut rng, &corpus);
        if let Some(f) = t.fixup {
            if rng.chance(2) {
                f(&mut buf);
            }
        }
        cov::reset();
        if let Some(msg) = run_one(t, &buf) {
            record(&buf, msg, &mut report);
        } else if seen.update() && corpus.len() < 50_000 {
            if let Some(dir) = &dirs.corpus {
                save(&dir.join(t.name), &format!("{:016x}", fnv(&buf)), &buf);
            }
            corpus.push(buf.clone());
        }
        report.execs += 1;
    }
    report.corpus = corpus.len();
    report.features = seen.count();
    report
}
