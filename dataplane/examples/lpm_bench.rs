//! The FIB lookup of the packet path against DPDK's own, on `make bench`'s
//! routes and destinations (issue 2: "DPDK's rte_fib/rte_lpm or a well-kept
//! crate: measure").
//!
//! `cargo run --release -p dataplane --features dpdk --example lpm_bench`
//! (`make bench` runs it; `BENCH_LPM=0` skips it).
//!
//! One thread, bursts of 32 destinations, 1024 distinct destinations
//! (those of `dcir-benchgen`: IPv4 in 10.10.0.0/16, IPv6 in 2001:db8:a::/48)
//! looked up round robin, the FIB of `dcir-benchgen` (overlapping prefixes
//! from /0 to /64, plus the two connected subnets):
//!
//! * dcirouter: `Lpm::lookup_batch`, the compiled multibit trie (16-bit
//!   root, 8-bit strides) the burst fast path walks level by level across
//!   the burst;
//! * DPDK `rte_fib6` (trie: 24-bit first level, 8-bit strides) and
//!   `rte_fib` (DIR-24-8), `rte_fib*_lookup_bulk`, with the scalar lookup
//!   and with the AVX-512 one when the CPU has it (EAL
//!   `--force-max-simd-bitwidth=512`, as DPDK requires to select it).
//!
//! Every destination's result is first checked to be the same in all of them
//! (DPDK's FIB as an oracle of ours). Then interleaved rounds, best of
//! `ROUNDS` per lookup, thread CPU time. Output: a markdown table on
//! stdout, also written to `bench/lpm-results.md` (or `$LPM_BENCH_OUT`).

use dataplane::benchdata::{self, dst4, dst6};
use dataplane::hostinfo::{cpu_model, loadavg, thread_cpu_ns, utc_date};
use dataplane::lpm::Lpm;
use std::ffi::CString;
use std::fmt::Write as _;
use std::hint::black_box;
use std::net::{Ipv4Addr, Ipv6Addr};

const ROUNDS: usize = 5;
const BURST: usize = 32;
const DESTS: u32 = 1024;
/// Lookups per measurement.
const LOOKUPS: usize = 8 << 20;

/// dcir-benchgen's routes and the two connected subnets (prefix, length);
/// next hop = index + 1.
fn routes4() -> Vec<(Ipv4Addr, u8)> {
    benchdata::ROUTES4.iter().map(|(p, l, _)| (*p, *l)).chain(benchdata::CONNECTED4.iter().copied()).map(|(p, l)| (p.parse().unwrap(), l)).collect()
}

fn routes6() -> Vec<(Ipv6Addr, u8)> {
    benchdata::ROUTES6.iter().map(|(p, l, _)| (*p, *l)).chain(benchdata::CONNECTED6.iter().copied()).map(|(p, l)| (p.parse().unwrap(), l)).collect()
}

struct Fib4(*mut dpdk_sys::rte_fib);
struct Fib6(*mut dpdk_sys::rte_fib6);

impl Fib4 {
    /// A DIR-24-8 FIB with the routes and lookup type `t`.
    fn new(socket: i32, name: &str, t: dpdk_sys::rte_fib_lookup_type) -> Fib4 {
        let mut conf: dpdk_sys::rte_fib_conf = unsafe { std::mem::zeroed() };
        conf.type_ = dpdk_sys::RTE_FIB_DIR24_8;
        conf.default_nh = 0;
        conf.max_routes = 1024;
        conf.__bindgen_anon_1.dir24_8 = dpdk_sys::rte_fib_conf__bindgen_ty_1__bindgen_ty_1 { nh_sz: dpdk_sys::RTE_FIB_DIR24_8_4B, num_tbl8: 256 };
        let cname = CString::new(name).unwrap();
        // SAFETY: valid name and configuration; the EAL is up.
        let f = unsafe { dpdk_sys::rte_fib_create(cname.as_ptr(), socket, &mut conf) };
        assert!(!f.is_null(), "rte_fib_create failed");
        for (i, (a, len)) in routes4().into_iter().enumerate() {
            // SAFETY: f is a live FIB.
            let r = unsafe { dpdk_sys::rte_fib_add(f, u32::from(a), len, i as u64 + 1) };
            assert_eq!(r, 0, "rte_fib_add {a}/{len}");
        }
        // SAFETY: live FIB.
        assert_eq!(unsafe { dpdk_sys::rte_fib_select_lookup(f, t) }, 0, "rte_fib_select_lookup {name}");
        Fib4(f)
    }

    #[inline]
    fn lookup(&self, ips: &mut [u32], nh: &mut [u64]) {
        // SAFETY: both slices hold n entries.
        unsafe { dpdk_sys::rte_fib_lookup_bulk(self.0, ips.as_mut_ptr(), nh.as_mut_ptr(), ips.len().min(nh.len()) as i32) };
    }
}

impl Fib6 {
    /// A trie FIB with the routes and lookup type `t`.
    fn new(socket: i32, name: &str, t: dpdk_sys::rte_fib6_lookup_type) -> Fib6 {
        let mut conf: dpdk_sys::rte_fib6_conf = unsafe { std::mem::zeroed() };
        conf.type_ = dpdk_sys::RTE_FIB6_TRIE;
        conf.default_nh = 0;
        conf.max_routes = 1024;
        conf.__bindgen_anon_1.trie = dpdk_sys::rte_fib6_conf__bindgen_ty_1__bindgen_ty_1 { nh_sz: dpdk_sys::RTE_FIB6_TRIE_4B, num_tbl8: 1024 };
        let cname = CString::new(name).unwrap();
        // SAFETY: valid name and configuration; the EAL is up.
        let f = unsafe { dpdk_sys::rte_fib6_create(cname.as_ptr(), socket, &mut conf) };
        assert!(!f.is_null(), "rte_fib6_create failed");
        for (i, (a, len)) in routes6().into_iter().enumerate() {
            // SAFETY: f is a live FIB; the address is 16 bytes.
            let r = unsafe { dpdk_sys::rte_fib6_add(f, a.octets().as_ptr(), len, i as u64 + 1) };
            assert_eq!(r, 0, "rte_fib6_add {a}/{len}");
        }
        // SAFETY: live FIB.
        assert_eq!(unsafe { dpdk_sys::rte_fib6_select_lookup(f, t) }, 0, "rte_fib6_select_lookup {name}");
        Fib6(f)
    }

    #[inline]
    fn lookup(&self, ips: &mut [[u8; 16]], nh: &mut [u64]) {
        // SAFETY: both slices hold n entries.
        unsafe { dpdk_sys::rte_fib6_lookup_bulk(self.0, ips.as_mut_ptr(), nh.as_mut_ptr(), ips.len().min(nh.len()) as i32) };
    }
}

impl Drop for Fib4 {
    fn drop(&mut self) {
        // SAFETY: created by rte_fib_create, freed once.
        unsafe { dpdk_sys::rte_fib_free(self.0) };
    }
}

impl Drop for Fib6 {
    fn drop(&mut self) {
        // SAFETY: created by rte_fib6_create, freed once.
        unsafe { dpdk_sys::rte_fib6_free(self.0) };
    }
}

/// ns per lookup of `f(burst index)` over LOOKUPS lookups.
fn time(mut f: impl FnMut(usize)) -> f64 {
    let bursts = LOOKUPS / BURST;
    let n = DESTS as usize / BURST;
    let t0 = thread_cpu_ns();
    for b in 0..bursts {
        f(b % n);
    }
    (thread_cpu_ns() - t0) as f64 / LOOKUPS as f64
}

struct Case {
    name: String,
    run: Box<dyn FnMut(usize)>,
    best: f64,
}

fn main() {
    let eal_args: Vec<String> = ["lpm_bench", "--no-huge", "--no-pci", "--no-shconf", "-m", "512", "-l", "0", "--log-level", "lib.eal:error", "--force-max-simd-bitwidth=512"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let eal = dataplane::dpdk::eal::Eal::init(&eal_args).expect("EAL");
    let socket = eal.socket_id().max(0);
    let avx512 = std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512dq") && std::arch::is_x86_feature_detected!("avx512bw");

    // The destinations as each lookup takes them.
    let keys4: Vec<[u8; 16]> = (0..DESTS).map(|i| { let mut k = [0u8; 16]; k[..4].copy_from_slice(&dst4(i).octets()); k }).collect();
    let keys6: Vec<[u8; 16]> = (0..DESTS).map(|i| dst6(i).octets()).collect();
    let host4: Vec<u32> = (0..DESTS).map(|i| u32::from(dst4(i))).collect();

    let ours4 = Lpm::build(32, &mut routes4().into_iter().enumerate().map(|(i, (a, l))| (u128::from(u32::from(a)) << 96, l, i as u32 + 1)).collect::<Vec<_>>());
    let ours6 = Lpm::build(128, &mut routes6().into_iter().enumerate().map(|(i, (a, l))| (u128::from(a), l, i as u32 + 1)).collect::<Vec<_>>());

    let mut lookups4 = vec![("scalar", dpdk_sys::RTE_FIB_LOOKUP_DIR24_8_SCALAR_MACRO)];
    let mut lookups6 = vec![("scalar", dpdk_sys::RTE_FIB6_LOOKUP_TRIE_SCALAR)];
    if avx512 {
        lookups4.push(("AVX-512", dpdk_sys::RTE_FIB_LOOKUP_DIR24_8_VECTOR_AVX512));
        lookups6.push(("AVX-512", dpdk_sys::RTE_FIB6_LOOKUP_TRIE_VECTOR_AVX512));
    }
    let fibs4: Vec<(&str, Fib4)> = lookups4.iter().map(|&(w, t)| (w, Fib4::new(socket, &format!("lpmbench4-{w}"), t))).collect();
    let fibs6: Vec<(&str, Fib6)> = lookups6.iter().map(|&(w, t)| (w, Fib6::new(socket, &format!("lpmbench6-{w}"), t))).collect();

    // Oracle: every destination resolves to the same route in all of them
    // (ours returns value + 1 = route index + 2; DPDK the next hop = index + 1).
    let mut ours = vec![0u32; DESTS as usize];
    let mut nh = vec![0u64; DESTS as usize];
    ours4.lookup_batch(&keys4, &mut ours);
    for (what, f) in &fibs4 {
        f.lookup(&mut host4.clone(), &mut nh);
        for i in 0..DESTS as usize {
            assert_eq!(u64::from(ours[i]), nh[i] + 1, "IPv4 {} ({what})", dst4(i as u32));
        }
    }
    ours6.lookup_batch(&keys6, &mut ours);
    for (what, f) in &fibs6 {
        f.lookup(&mut keys6.clone(), &mut nh);
        for i in 0..DESTS as usize {
            assert_eq!(u64::from(ours[i]), nh[i] + 1, "IPv6 {} ({what})", dst6(i as u32));
        }
    }
    let routes_hit6: std::collections::BTreeSet<u32> = ours.iter().copied().collect();

    // The timed cases.
    let mut cases: Vec<Case> = Vec::new();
    {
        let (l, k) = (ours4.clone(), keys4.clone());
        let mut out = [0u32; BURST];
        cases.push(Case { name: "IPv4 dcirouter Lpm::lookup_batch".into(), run: Box::new(move |b| { l.lookup_batch(&k[b * BURST..(b + 1) * BURST], &mut out); black_box(&out); }), best: f64::INFINITY });
    }
    for (what, f) in fibs4 {
        let mut ips = host4.clone();
        let mut out = [0u64; BURST];
        cases.push(Case { name: format!("IPv4 DPDK rte_fib DIR-24-8, {what}"), run: Box::new(move |b| { f.lookup(&mut ips[b * BURST..(b + 1) * BURST], &mut out); black_box(&out); }), best: f64::INFINITY });
    }
    {
        let (l, k) = (ours6.clone(), keys6.clone());
        let mut out = [0u32; BURST];
        cases.push(Case { name: "IPv6 dcirouter Lpm::lookup_batch".into(), run: Box::new(move |b| { l.lookup_batch(&k[b * BURST..(b + 1) * BURST], &mut out); black_box(&out); }), best: f64::INFINITY });
    }
    for (what, f) in fibs6 {
        let mut ips = keys6.clone();
        let mut out = [0u64; BURST];
        cases.push(Case { name: format!("IPv6 DPDK rte_fib6 trie, {what}"), run: Box::new(move |b| { f.lookup(&mut ips[b * BURST..(b + 1) * BURST], &mut out); black_box(&out); }), best: f64::INFINITY });
    }
    for round in 0..ROUNDS {
        let n = cases.len();
        for j in 0..n {
            // Alternate the order from round to round.
            let c = &mut cases[if round % 2 == 0 { j } else { n - 1 - j }];
            let ns = time(&mut c.run);
            c.best = c.best.min(ns);
        }
    }

    let mut md = String::new();
    let _ = writeln!(md, "# FIB lookup: dcirouter's trie vs DPDK's rte_fib / rte_fib6\n");
    let _ = writeln!(md, "- {} UTC, {}, load {}", utc_date(), cpu_model(), loadavg());
    let _ = writeln!(md, "- `cargo run --release -p dataplane --features dpdk --example lpm_bench`: bursts of {BURST}, {DESTS} distinct destinations of `dcir-benchgen` round robin, its FIB ({} IPv4 / {} IPv6 prefixes, /0 to /64; the IPv6 destinations hit {} of them), best of {ROUNDS} interleaved rounds of {} lookups, thread CPU time; one DPDK FIB per lookup type; every destination's route checked equal in all of them first", routes4().len(), routes6().len(), routes_hit6.len(), LOOKUPS);
    let _ = writeln!(md, "- AVX-512 lookups: {}\n", if avx512 { "measured (EAL --force-max-simd-bitwidth=512)" } else { "not measured: this CPU has no AVX-512F/DQ/BW" });
    let _ = writeln!(md, "| lookup | ns per destination | vs dcirouter |");
    let _ = writeln!(md, "|---|---:|---:|");
    for fam in ["IPv4", "IPv6"] {
        let base = cases.iter().find(|c| c.name.starts_with(fam) && c.name.contains("dcirouter")).map(|c| c.best).unwrap_or(f64::NAN);
        for c in cases.iter().filter(|c| c.name.starts_with(fam)) {
            let _ = writeln!(md, "| {} | {:.2} | {:.2} |", c.name, c.best, c.best / base);
        }
    }
    print!("{md}");
    let path = std::env::var("LPM_BENCH_OUT").unwrap_or_else(|_| format!("{}/../bench/lpm-results.md", env!("CARGO_MANIFEST_DIR")));
    if let Err(e) = std::fs::write(&path, &md) {
        eprintln!("lpm_bench: {path}: {e}");
    }
}
