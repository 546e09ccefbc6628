//! Bindgen over the system DPDK, found with pkg-config.
//!
//! * Regular functions and types: `bindgen` with the `libdpdk` cflags
//!   (including `-include rte_config.h -march=...`).
//! * The static-inline fast-path API (rx/tx burst, mbuf alloc/free, rings, ...)
//!   is exposed through bindgen's `wrap_static_fns`: bindgen writes a C file of
//!   non-inline wrappers (`<name>__extern`), which we compile with `cc`.
//! * `shim.c` covers what bindgen cannot see: macros and thread-locals
//!   (`rte_errno`, `RTE_ETH_RSS_*`).
use std::env;
use std::path::PathBuf;

const HEADERS: &[&str] = &[
    "rte_config.h",
    "rte_eal.h",
    "rte_errno.h",
    "rte_lcore.h",
    "rte_launch.h",
    "rte_cycles.h",
    "rte_prefetch.h",
    "rte_memory.h",
    "rte_malloc.h",
    "rte_mempool.h",
    "rte_mbuf.h",
    "rte_ring.h",
    "rte_ethdev.h",
    "rte_ether.h",
    "rte_dev.h",
    "rte_bus_vdev.h",
    "rte_fib.h",
    "rte_fib6.h",
    "rte_lpm.h",
    "rte_lpm6.h",
    "rte_thread.h",
];

// Functions (regular and static inline) we use. Everything they reference
// comes along.
const FUNCTIONS: &[&str] = &[
    "rte_eal_init",
    "rte_eal_cleanup",
    "rte_eal_remote_launch",
    "rte_eal_wait_lcore",
    "rte_eal_mp_wait_lcore",
    "rte_eal_process_type",
    "rte_lcore_.*",
    "rte_get_main_lcore",
    "rte_get_next_lcore",
    "rte_socket_.*",
    "rte_thread_register",
    "rte_thread_unregister",
    "rte_strerror",
    "rte_exit",
    "rte_get_tsc_hz",
    "rte_get_tsc_cycles",
    "rte_rdtsc",
    "rte_rdtsc_precise",
    "rte_delay_us_block",
    "rte_pause",
    "rte_prefetch0",
    "rte_prefetch1",
    "rte_prefetch_non_temporal",
    "rte_mempool_.*",
    "rte_pktmbuf_.*",
    "rte_mbuf_.*",
    "rte_ring_.*",
    "rte_eth_.*",
    "rte_dev_.*",
    "rte_vdev_init",
    "rte_vdev_uninit",
    "rte_fib_.*",
    "rte_fib6_.*",
    "rte_lpm_create",
    "rte_lpm_free",
    "rte_lpm_add",
    "rte_lpm_delete",
    "rte_lpm_lookup",
    "rte_lpm_lookup_bulk_func",
    "rte_lpm6_.*",
    "rte_malloc",
    "rte_zmalloc",
    "rte_free",
];

fn main() {
    let lib = pkg_config::Config::new()
        .atleast_version("22.11")
        .probe("libdpdk")
        .expect("DPDK >= 22.11 not found by pkg-config (install libdpdk-dev)");

    // Full cflags, including -include rte_config.h and -march.
    let cflags = pkg_config::get_variable("libdpdk", "cflags").ok();
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let cflags_out = std::process::Command::new("pkg-config")
        .args(["--cflags", "libdpdk"])
        .output()
        .expect("pkg-config");
    let cflags_str = String::from_utf8_lossy(&cflags_out.stdout).to_string();
    let _ = cflags;
    let clang_args: Vec<String> = cflags_str.split_whitespace().map(str::to_owned).collect();

    let wrapper = out.join("dpdk_wrapper.h");
    let mut w = String::new();
    for h in HEADERS {
        w.push_str(&format!("#include <{h}>\n"));
    }
    w.push_str(&format!("#include \"{}/shim.h\"\n", env::var("CARGO_MANIFEST_DIR").unwrap()));
    std::fs::write(&wrapper, &w).unwrap();

    let static_c = out.join("static_fns");
    let mut b = bindgen::Builder::default()
        .header(wrapper.to_str().unwrap())
        .clang_args(&clang_args)
        .allowlist_function("dcir_.*")
        .allowlist_var("DCIR_.*")
        .allowlist_var("RTE_.*")
        .allowlist_type("rte_.*")
        .wrap_static_fns(true)
        .wrap_static_fns_path(&static_c)
        .derive_default(true)
        .layout_tests(false)
        .generate_comments(false)
        .prepend_enum_name(false)
        .default_enum_style(bindgen::EnumVariation::Consts)
        .opaque_type("rte_arp_ipv4")
        .opaque_type("rte_arp_hdr")
        .opaque_type("rte_l2tpv2_combined_msg_hdr")
        .opaque_type("rte_gtp_psc_.*")
        .blocklist_function("rte_eth_.*_dump")
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()));
    for f in FUNCTIONS {
        b = b.allowlist_function(f);
    }
    let bindings = b.generate().expect("bindgen over DPDK headers failed");
    bindings.write_to_file(out.join("bindings.rs")).unwrap();

    // Compile bindgen's wrappers for static inline functions, and the shim.
    let mut cc = cc::Build::new();
    cc.file(static_c.with_extension("c"))
        .file("shim.c")
        .include(env::var("CARGO_MANIFEST_DIR").unwrap())
        .include(&out)
        .opt_level(3)
        .warnings(false)
        .flag("-Wno-deprecated-declarations");
    for a in &clang_args {
        cc.flag(a);
    }
    // bindgen's generated C includes the wrapper header by absolute path.
    cc.compile("dpdk_static_fns");

    for p in &lib.link_paths {
        println!("cargo:rustc-link-search=native={}", p.display());
    }
    println!("cargo:rerun-if-changed=shim.c");
    println!("cargo:rerun-if-changed=shim.h");
    println!("cargo:rerun-if-changed=build.rs");
}
