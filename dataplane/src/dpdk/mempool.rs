//! Packet mbuf pools, one per NUMA socket in use.

use super::Mbuf;
use std::ffi::CString;
use std::ptr::NonNull;

pub struct Mempool {
    ptr: NonNull<dpdk_sys::rte_mempool>,
    name: String,
    size: u32,
}

// SAFETY: rte_mempool is MT-safe for get/put; the pointer is stable.
unsafe impl Send for Mempool {}
unsafe impl Sync for Mempool {}

impl Mempool {
    /// `rte_pktmbuf_pool_create`: `n` mbufs with a per-lcore cache of `cache`
    /// and `data_room` bytes each (headroom included), on `socket`.
    pub fn new(name: &str, n: u32, cache: u32, data_room: u16, socket: i32) -> Result<Mempool, String> {
        let cname = CString::new(name).map_err(|_| "pool name contains NUL".to_string())?;
        // SAFETY: plain FFI call with a valid C string.
        let p = unsafe { dpdk_sys::rte_pktmbuf_pool_create(cname.as_ptr(), n, cache, 0, data_room, socket) };
        match NonNull::new(p) {
            Some(ptr) => Ok(Mempool { ptr, name: name.to_owned(), size: n }),
            None => Err(format!(
                "mempool {name}: rte_pktmbuf_pool_create(n={n}, cache={cache}, data_room={data_room}, socket={socket}) failed: {}",
                super::last_error()
            )),
        }
    }

    pub fn as_ptr(&self) -> *mut dpdk_sys::rte_mempool {
        self.ptr.as_ptr()
    }
    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn size(&self) -> u32 {
        self.size
    }
    /// Mbufs currently allocated (per-lcore caches count as free).
    pub fn in_use(&self) -> u32 {
        // SAFETY: valid pool.
        unsafe { dpdk_sys::rte_mempool_in_use_count(self.ptr.as_ptr()) }
    }
    pub fn available(&self) -> u32 {
        // SAFETY: valid pool.
        unsafe { dpdk_sys::rte_mempool_avail_count(self.ptr.as_ptr()) }
    }

    /// One mbuf, or None when the pool is empty.
    #[inline]
    pub fn alloc(&self) -> Option<Mbuf> {
        // SAFETY: valid pool; a non-null result is a fresh mbuf we own.
        unsafe { Mbuf::from_raw(dpdk_sys::rte_pktmbuf_alloc(self.ptr.as_ptr())) }
    }

    /// Fill `out` with fresh mbufs, all or nothing.
    #[inline]
    pub fn alloc_bulk(&self, out: &mut [*mut dpdk_sys::rte_mbuf]) -> bool {
        // SAFETY: out has room for out.len() pointers.
        unsafe { dpdk_sys::rte_pktmbuf_alloc_bulk(self.ptr.as_ptr(), out.as_mut_ptr(), out.len() as u32) == 0 }
    }
}

impl Drop for Mempool {
    fn drop(&mut self) {
        // SAFETY: the pool is not used after this (ports that used it are
        // closed first by their owner).
        unsafe { dpdk_sys::rte_mempool_free(self.ptr.as_ptr()) }
    }
}

/// Free raw mbufs in bulk (`rte_pktmbuf_free_bulk`).
#[inline]
pub fn free_bulk(m: &mut [*mut dpdk_sys::rte_mbuf]) {
    if !m.is_empty() {
        // SAFETY: the caller owns these mbufs and does not use them again.
        unsafe { dpdk_sys::rte_pktmbuf_free_bulk(m.as_mut_ptr(), m.len() as u32) }
    }
}
