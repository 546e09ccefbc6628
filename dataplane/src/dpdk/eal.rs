//! EAL initialisation, once per process.

use std::ffi::CString;
use std::os::raw::c_char;
use std::sync::atomic::{AtomicBool, Ordering};

static INITIALISED: AtomicBool = AtomicBool::new(false);

/// Proof that the EAL is up. Dropping it runs `rte_eal_cleanup`.
pub struct Eal {
    _private: (),
}

impl Eal {
    /// `rte_eal_init` with `args` (args[0] is the program name). DPDK allows
    /// this once per process; a second call is an error here rather than
    /// undefined behaviour there.
    pub fn init(args: &[String]) -> Result<Eal, String> {
        if INITIALISED.swap(true, Ordering::SeqCst) {
            return Err("EAL already initialised in this process".into());
        }
        let cargs: Vec<CString> = args
            .iter()
            .map(|a| CString::new(a.as_str()).map_err(|_| format!("EAL argument contains NUL: {a:?}")))
            .collect::<Result<_, _>>()?;
        let mut argv: Vec<*mut c_char> = cargs.iter().map(|c| c.as_ptr() as *mut c_char).collect();
        argv.push(std::ptr::null_mut());
        // rte_eal_init may permute argv; the CStrings outlive the call. EAL
        // keeps pointers to some arguments, so leak them deliberately.
        // SAFETY: argv is a valid NULL-terminated array of C strings.
        let r = unsafe { dpdk_sys::rte_eal_init(cargs.len() as i32, argv.as_mut_ptr()) };
        std::mem::forget(cargs);
        std::mem::forget(argv);
        if r < 0 {
            return Err(format!("rte_eal_init failed: {}", super::last_error()));
        }
        Ok(Eal { _private: () })
    }

    /// NUMA socket of the calling thread's lcore.
    pub fn socket_id(&self) -> i32 {
        // SAFETY: plain FFI call.
        unsafe { dpdk_sys::rte_socket_id() as i32 }
    }
}

impl Drop for Eal {
    fn drop(&mut self) {
        // SAFETY: all DPDK objects are gone by now (owned by values that
        // borrow nothing from Eal but are dropped first by the caller).
        unsafe {
            dpdk_sys::rte_eal_cleanup();
        }
    }
}
