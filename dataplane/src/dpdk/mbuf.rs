//! `Mbuf`: an owned DPDK packet buffer that frees itself on `Drop`, and the
//! [`PacketBuffer`] implementation the behaviours run on in production.

use crate::packet::PacketBuffer;
use dpdk_sys::rte_mbuf;
use std::ptr::NonNull;

/// An owned mbuf (single segment for the packet path).
pub struct Mbuf(NonNull<rte_mbuf>);

// SAFETY: an mbuf is owned by exactly one Mbuf value; it may move threads.
unsafe impl Send for Mbuf {}

impl Mbuf {
    /// Take ownership of a raw mbuf.
    ///
    /// # Safety
    /// `p` is null or a valid mbuf that nobody else will free.
    #[inline(always)]
    pub unsafe fn from_raw(p: *mut rte_mbuf) -> Option<Mbuf> {
        NonNull::new(p).map(Mbuf)
    }
    /// Give up ownership without freeing.
    #[inline(always)]
    pub fn into_raw(self) -> *mut rte_mbuf {
        let p = self.0.as_ptr();
        std::mem::forget(self);
        p
    }
    #[inline(always)]
    pub fn as_ptr(&self) -> *mut rte_mbuf {
        self.0.as_ptr()
    }
    #[inline(always)]
    fn m(&self) -> &rte_mbuf {
        // SAFETY: we own a valid mbuf.
        unsafe { self.0.as_ref() }
    }
    #[inline(always)]
    fn m_mut(&mut self) -> &mut rte_mbuf {
        // SAFETY: we own a valid mbuf.
        unsafe { self.0.as_mut() }
    }
    /// Input port as DPDK recorded it.
    #[inline(always)]
    pub fn port(&self) -> u16 {
        self.m().port
    }
    #[inline(always)]
    pub fn nb_segs(&self) -> u16 {
        self.m().nb_segs
    }
    #[inline(always)]
    pub fn headroom(&self) -> usize {
        usize::from(self.m().data_off)
    }
    #[inline(always)]
    pub fn tailroom(&self) -> usize {
        let m = self.m();
        usize::from(m.buf_len) - usize::from(m.data_off) - usize::from(m.data_len)
    }
    /// Reset a fresh mbuf to an empty packet of `len` bytes.
    #[inline]
    pub fn reset_len(&mut self, len: usize) -> bool {
        let room = self.headroom() + self.tailroom() + usize::from(self.m().data_len);
        if self.headroom() + len > room {
            return false;
        }
        let m = self.m_mut();
        m.data_len = len as u16;
        m.pkt_len = len as u32;
        true
    }
    /// A new indirect mbuf from `pool` that references `len` octets of
    /// `orig`'s data starting at `off` (no copy; `orig`'s buffer stays alive
    /// until every reference is freed). None when `pool` is empty or the
    /// range is outside `orig`'s first segment.
    pub fn attach_range(pool: &super::Mempool, orig: &Mbuf, off: usize, len: usize) -> Option<Mbuf> {
        if off.checked_add(len)? > usize::from(orig.m().data_len) {
            return None;
        }
        let mut mi = pool.alloc()?;
        // SAFETY: `mi` is a fresh direct mbuf with refcnt 1 that we own;
        // `orig` is a valid mbuf. rte_pktmbuf_attach takes a reference on
        // orig's (direct) buffer.
        unsafe { dpdk_sys::rte_pktmbuf_attach(mi.as_ptr(), orig.as_ptr()) };
        let m = mi.m_mut();
        m.data_off += off as u16;
        m.data_len = len as u16;
        m.pkt_len = len as u32;
        Some(mi)
    }
    /// Append `tail` (and its segments) to this packet. Gives `tail` back
    /// when the segment count would overflow.
    pub fn chain(&mut self, tail: Mbuf) -> Result<(), Mbuf> {
        // SAFETY: both are valid mbufs we own; on success `tail` belongs to
        // this chain (freed with it), so ownership moves.
        let r = unsafe { dpdk_sys::rte_pktmbuf_chain(self.as_ptr(), tail.as_ptr()) };
        if r == 0 {
            std::mem::forget(tail);
            Ok(())
        } else {
            Err(tail)
        }
    }
    /// The first segment's bytes of a raw mbuf, writable, for as long as
    /// the caller chooses.
    ///
    /// # Safety
    /// `p` is a valid mbuf the caller owns exclusively (not shared by
    /// reference count) and keeps alive, unmoved between owners, while the
    /// slice is in use; no other reference to its data exists meanwhile.
    #[inline(always)]
    pub unsafe fn raw_data_mut<'a>(p: *mut rte_mbuf) -> &'a mut [u8] {
        // SAFETY: by the caller's contract.
        unsafe {
            let m = &*p;
            std::slice::from_raw_parts_mut((m.buf_addr as *mut u8).add(usize::from(m.data_off)), usize::from(m.data_len))
        }
    }

    /// Prefetch the first cache line of packet data.
    #[inline(always)]
    pub fn prefetch(&self) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: prefetch of any address is harmless.
        unsafe {
            let p = (self.m().buf_addr as *const u8).add(self.headroom());
            core::arch::x86_64::_mm_prefetch(p as *const i8, core::arch::x86_64::_MM_HINT_T0);
        }
    }
}

impl Drop for Mbuf {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: we own the mbuf (and any chained segments).
        unsafe { dpdk_sys::rte_pktmbuf_free(self.0.as_ptr()) }
    }
}

impl PacketBuffer for Mbuf {
    /// Total packet length over all segments.
    #[inline(always)]
    fn pkt_len(&self) -> usize {
        self.m().pkt_len as usize
    }
    #[inline(always)]
    fn data(&self) -> &[u8] {
        let m = self.m();
        // SAFETY: buf_addr + data_off .. + data_len lies inside the buffer.
        unsafe {
            std::slice::from_raw_parts((m.buf_addr as *const u8).add(usize::from(m.data_off)), usize::from(m.data_len))
        }
    }
    #[inline(always)]
    fn data_mut(&mut self) -> &mut [u8] {
        let m = self.m();
        // SAFETY: as above, and we own the mbuf exclusively. A refcounted
        // (shared) mbuf is never handed to a PacketBuffer user for writing.
        unsafe {
            std::slice::from_raw_parts_mut((m.buf_addr as *mut u8).add(usize::from(m.data_off)), usize::from(m.data_len))
        }
    }
    #[inline]
    fn prepend(&mut self, n: usize) -> bool {
        if n > self.headroom() {
            return false;
        }
        let m = self.m_mut();
        m.data_off -= n as u16;
        m.data_len += n as u16;
        m.pkt_len += n as u32;
        true
    }
    #[inline]
    fn headroom(&self) -> usize {
        Mbuf::headroom(self)
    }
    #[inline]
    fn adj(&mut self, n: usize) -> bool {
        let m = self.m_mut();
        if n > usize::from(m.data_len) {
            return false;
        }
        m.data_off += n as u16;
        m.data_len -= n as u16;
        m.pkt_len -= n as u32;
        true
    }
    #[inline]
    fn append(&mut self, n: usize) -> bool {
        if n > self.tailroom() || self.nb_segs() != 1 {
            return false;
        }
        let m = self.m_mut();
        m.data_len += n as u16;
        m.pkt_len += n as u32;
        true
    }
    #[inline]
    fn trim(&mut self, n: usize) -> bool {
        let m = self.m_mut();
        if n > usize::from(m.data_len) || m.nb_segs != 1 {
            return false;
        }
        m.data_len -= n as u16;
        m.pkt_len -= n as u32;
        true
    }
}
