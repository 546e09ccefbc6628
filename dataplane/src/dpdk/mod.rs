//! The safe DPDK layer: EAL, mempools, mbufs, ports. Everything unsafe about
//! DPDK lives in this module.

pub mod eal;
pub mod mbuf;
pub mod mempool;
pub mod port;

pub use eal::Eal;
pub use mbuf::Mbuf;
pub use mempool::Mempool;
pub use port::{Port, PortConfig};

use std::ffi::CStr;

/// The last DPDK error of this thread, as text.
pub fn last_error() -> String {
    // SAFETY: plain FFI calls; rte_strerror returns a static or thread-local string.
    unsafe {
        let e = dpdk_sys::dcir_errno();
        let s = dpdk_sys::rte_strerror(e);
        if s.is_null() {
            format!("errno {e}")
        } else {
            format!("{} (errno {e})", CStr::from_ptr(s).to_string_lossy())
        }
    }
}

/// Text for a negative return value from a DPDK call.
pub fn strerror(ret: i32) -> String {
    // SAFETY: rte_strerror takes any int.
    unsafe {
        let s = dpdk_sys::rte_strerror(-ret);
        if s.is_null() {
            format!("error {ret}")
        } else {
            format!("{} ({ret})", CStr::from_ptr(s).to_string_lossy())
        }
    }
}

/// TSC frequency in Hz.
pub fn tsc_hz() -> u64 {
    // SAFETY: valid after EAL init; returns a value.
    unsafe { dpdk_sys::rte_get_tsc_hz() }
}

/// The TSC.
#[inline(always)]
pub fn rdtsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: rdtsc has no preconditions on x86_64.
    unsafe {
        core::arch::x86_64::_rdtsc()
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: plain FFI call.
    unsafe {
        dpdk_sys::rte_rdtsc()
    }
}

/// Register the calling (non-EAL) thread with DPDK so it gets an lcore id and
/// mempool caches work. Returns the lcore id.
pub fn register_thread() -> Result<u32, String> {
    // SAFETY: plain FFI call, once per thread.
    let r = unsafe { dpdk_sys::rte_thread_register() };
    if r != 0 {
        return Err(format!("rte_thread_register: {}", last_error()));
    }
    // SAFETY: plain FFI call.
    Ok(unsafe { dpdk_sys::dcir_lcore_id() })
}

pub fn unregister_thread() {
    // SAFETY: plain FFI call on a registered thread.
    unsafe { dpdk_sys::rte_thread_unregister() }
}
