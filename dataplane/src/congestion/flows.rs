//! The flow table (s.5.2): a fixed-capacity slab of flow entries whose
//! indices are stable (a [`super::FlowId`] handed out on enqueue stays valid
//! while the packet is queued), plus two indices:
//!
//! * by (src IP, dst IP, DestQP), the flow key: a bucketed hash index, one
//!   64-byte bucket = 7 (hash tag, slot) pairs and an overflow counter, so a
//!   lookup reads one bucket line and then the entry whose tag matches
//!   (a false tag match costs one more entry read, 1 in 2^31); a full bucket
//!   spills into the next one and counts it in its overflow counter, which
//!   lookups use to stop and removals decrement (no tombstones);
//! * by (src IP, dst IP): open addressing with linear probing and
//!   backward-shift deletion, the head of an intrusive list of the flows
//!   between the two hosts, used to learn the source QP from reverse traffic
//!   (whose BTH names only the forward source QP, not the forward DestQP).
//!
//! Keys are packed (both addresses as four 64-bit words, the DestQP and the
//! address families in one 32-bit word) and hashed with a folded multiply.
//! An entry is 128 bytes (two cache lines): everything the
//! packet path reads or writes is in it, except the bytes queued, which live
//! in the dense `nz` array of the flows with bytes in the queue (what the
//! top-contributor selection scans, sequentially). A flow whose bytes drain
//! to zero stays in `nz` (with 0) until a compaction, amortized over the
//! insertions, so a flow that keeps sending does not leave and re-enter the
//! array with every packet.
//!
//! Everything is allocated in [`FlowTable::new`]; lookups, inserts and
//! removals never allocate.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::wire::lhcnp::Action;

pub(crate) const NONE: u32 = u32::MAX;

const SRC_V4: u32 = 1 << 31;
const DST_V4: u32 = 1 << 30;
/// A UD flow: its source QP (from the DETH) is part of the key.
const UD: u32 = 1 << 29;
const QP_MASK: u32 = 0x00ff_ffff;

/// A flow key, packed: (src IP, dst IP, DestQP), and for a UD datagram
/// also its source QP, which its DETH carries (IBA 9.8.2; draft-tian
/// s.5.2 keys a flow by both QPs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PackedKey {
    /// Source address words 0-1, destination words 2-3 (an IPv4 address
    /// in the low half of word 0 / 2, the rest zero).
    pub(crate) w: [u64; 4],
    /// DestQP (24 bits) | SRC_V4 | DST_V4 | UD.
    pub(crate) qpf: u32,
    /// The DETH's source QP when `qpf` has UD, else 0.
    pub(crate) sqp: u32,
}

fn pack_addr(a: IpAddr) -> (u64, u64, bool) {
    match a {
        IpAddr::V4(a) => (u64::from(u32::from_ne_bytes(a.octets())), 0, true),
        IpAddr::V6(a) => {
            let o = a.octets();
            let (x, y) = o.split_at(8);
            (u64::from_ne_bytes(x.try_into().unwrap_or([0; 8])), u64::from_ne_bytes(y.try_into().unwrap_or([0; 8])), false)
        }
    }
}

fn unpack_addr(a: u64, b: u64, v4: bool) -> IpAddr {
    if v4 {
        IpAddr::V4(Ipv4Addr::from((a as u32).to_ne_bytes()))
    } else {
        let mut o = [0u8; 16];
        o[..8].copy_from_slice(&a.to_ne_bytes());
        o[8..].copy_from_slice(&b.to_ne_bytes());
        IpAddr::V6(Ipv6Addr::from(o))
    }
}

#[inline(always)]
fn fold(a: u64, b: u64) -> u64 {
    let r = u128::from(a).wrapping_mul(u128::from(b));
    (r as u64) ^ ((r >> 64) as u64)
}

/// The secret that keys the flow table's hashes. Flow keys come from the
/// traffic (a source address and a DestQP are anybody's to choose), so with
/// a hash known in advance a sender could pick keys that all land in one
/// bucket and make every lookup walk a chain as long as the table: each
/// table draws its own key at random from the operating system
/// ([`HashKey::random`]). Only where keys land depends on it, not what the
/// table does (slots, lists and scans keep insertion order), so runs stay
/// deterministic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HashKey([u64; 6]);

impl HashKey {
    /// Digits of pi, for tests that need a key known in advance.
    #[cfg(test)]
    pub(crate) const FIXED: HashKey = HashKey([
        0x243f_6a88_85a3_08d3,
        0x1319_8a2e_0370_7344,
        0xa409_3822_299f_31d0,
        0x082e_fa98_ec4e_6c89,
        0x4528_21e6_38d0_1377,
        0xbe54_66cf_34e9_0c6c,
    ]);

    /// A fresh random key: std's `RandomState` draws its keys from the
    /// operating system's random source (getrandom) and gives each
    /// instance different ones; six words of its SipHash output. Zero or
    /// tiny words would make a multiply weak, so the top bit is set.
    pub(crate) fn random() -> HashKey {
        use std::hash::{BuildHasher, Hasher};
        let rs = std::collections::hash_map::RandomState::new();
        let mut k = [0u64; 6];
        for (i, w) in k.iter_mut().enumerate() {
            let mut h = rs.build_hasher();
            h.write_usize(i);
            *w = h.finish() | (1 << 63);
        }
        HashKey(k)
    }
}

impl PackedKey {
    pub fn new(src: IpAddr, dst: IpAddr, dest_qp: u32) -> PackedKey {
        let (a, b, s4) = pack_addr(src);
        let (c, d, d4) = pack_addr(dst);
        PackedKey {
            w: [a, b, c, d],
            qpf: (dest_qp & QP_MASK) | if s4 { SRC_V4 } else { 0 } | if d4 { DST_V4 } else { 0 },
            sqp: 0,
        }
    }

    /// The key of a UD flow: also keyed by the source QP its DETH carries.
    #[inline(always)]
    pub fn with_ud_source(self, src_qp: u32) -> PackedKey {
        PackedKey { qpf: self.qpf | UD, sqp: src_qp & QP_MASK, ..self }
    }

    /// The source QP of a UD flow's key (from its DETH).
    pub fn ud_source(&self) -> Option<u32> {
        (self.qpf & UD != 0).then_some(self.sqp)
    }

    /// From header fields: IPv4 addresses as read (network order bytes).
    #[inline(always)]
    pub(crate) fn v4(src: [u8; 4], dst: [u8; 4], dest_qp: u32) -> PackedKey {
        PackedKey {
            w: [u64::from(u32::from_ne_bytes(src)), 0, u64::from(u32::from_ne_bytes(dst)), 0],
            qpf: (dest_qp & QP_MASK) | SRC_V4 | DST_V4,
            sqp: 0,
        }
    }

    /// From header fields: the 32 bytes of an IPv6 header's addresses.
    #[inline(always)]
    pub(crate) fn v6(addrs: &[u8; 32], dest_qp: u32) -> PackedKey {
        let w = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&addrs[i * 8..i * 8 + 8]);
            u64::from_ne_bytes(b)
        };
        PackedKey { w: [w(0), w(1), w(2), w(3)], qpf: dest_qp & QP_MASK, sqp: 0 }
    }

    pub fn src(&self) -> IpAddr {
        unpack_addr(self.w[0], self.w[1], self.qpf & SRC_V4 != 0)
    }

    pub fn dst(&self) -> IpAddr {
        unpack_addr(self.w[2], self.w[3], self.qpf & DST_V4 != 0)
    }

    pub fn dest_qp(&self) -> u32 {
        self.qpf & QP_MASK
    }

    #[inline(always)]
    fn pair_part(&self, k: &HashKey) -> u64 {
        let s = &k.0;
        fold(self.w[0] ^ s[0], self.w[1] ^ s[1]) ^ fold(self.w[2] ^ s[2], self.w[3] ^ s[3])
    }

    /// Hash of the whole key, keyed by `k`.
    #[inline(always)]
    pub(crate) fn hash(&self, k: &HashKey) -> u64 {
        fold(self.pair_part(k) ^ (u64::from(self.qpf) | u64::from(self.sqp) << 32), k.0[4])
    }

    /// Hash of (src, dst), keyed by `k`.
    #[inline(always)]
    fn pair_hash(&self, k: &HashKey) -> u64 {
        fold(self.pair_part(k) ^ u64::from(self.qpf & (SRC_V4 | DST_V4)), k.0[5])
    }

    #[inline(always)]
    fn same_pair(&self, o: &PackedKey) -> bool {
        self.w == o.w && (self.qpf ^ o.qpf) & (SRC_V4 | DST_V4) == 0
    }
}

// Flow flags, in bits 24-28 of `qpf` (not part of the key).
const LIVE: u32 = 1 << 24;
const HAS_SRC_QP: u32 = 1 << 25;
const CONFIGURED: u32 = 1 << 26;
const THROTTLED: u32 = 1 << 27;
const HAS_CNP: u32 = 1 << 28;
const KEY_BITS: u32 = QP_MASK | SRC_V4 | DST_V4 | UD;
/// In `src_qp` above the QP's 24 bits: deferring (s.5.7).
const DEFERRED: u32 = 1 << 31;

/// One learned RoCEv2 flow: two cache lines. The first holds all that a
/// packet reads or writes (key, flags, last PSN, position in `nz`, last
/// seen, the observation window and its byte count up to 4 GB), the others
/// the rest of the rate estimate, the pair list and the Long-haul CNP state.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(64))]
pub(crate) struct Flow {
    w: [u64; 4],
    /// Key bits (DestQP, families) and flags.
    qpf: u32,
    pub last_psn: u32,
    /// Position in `FlowTable::nz` (NONE: nothing queued).
    nz_pos: u32,
    /// Bytes in the current observation window: `win_lo + win_hi`
    /// (`win_hi` takes what does not fit in 32 bits).
    win_lo: u32,
    pub last_seen: u64,
    /// Arrival-rate estimate: the current observation window started here.
    pub win_start: u64,
    // ---- second line
    win_hi: u64,
    /// The two completed windows before the current one: their bytes in
    /// 16-byte units, rounded up (64 GiB a window).
    prev16: u32,
    prev2_16: u32,
    /// The last Long-haul CNP that throttled the flow (Notify, Rate
    /// Reduce, Pause; not a Resume): what a fall of its arrival rate may
    /// be the effect of (s.5.7).
    last_throttle: u64,
    /// Intrusive list of the flows with the same (src, dst).
    pair_next: u32,
    pair_prev: u32,
    /// Position in the live list.
    live_pos: u32,
    /// The source QP (24 bits; a UD flow's is its key's) and the
    /// DEFERRED flag.
    src_qp: u32,
    last_cnp: u64,
    /// Deferring (s.5.7): since when, and the queue depth then in 16-byte
    /// units, rounded up (a queue of 64 GiB fits).
    def_since: u64,
    def_qd16: u32,
    /// The RoCEv2 UDP source port (the flow's entropy) of the packet that
    /// created the entry: what a FANN Flow ID names (draft-hzh s.5.1.3).
    pub sport: u16,
    /// The SRv6 tunnel the flow's packets last arrived in, as the egress
    /// port's owner tags it (0: none seen; [`crate::node`] maps the tag to
    /// the ingress PE whose END.C / END.E SID its CNPs go to).
    pub via: u16,
}

const _: () = assert!(core::mem::size_of::<Flow>() == 128);
const _: () = assert!(core::mem::offset_of!(Flow, win_hi) == 64);

/// A new entry's last PSN until its first packet sets it (outside the
/// 24-bit PSN space).
pub(crate) const NO_PSN: u32 = 1 << 24;

impl Flow {
    const EMPTY: Flow = Flow {
        w: [0; 4],
        qpf: 0,
        last_psn: NO_PSN,
        nz_pos: NONE,
        win_lo: 0,
        last_seen: 0,
        win_start: 0,
        win_hi: 0,
        prev16: 0,
        prev2_16: 0,
        last_throttle: 0,
        pair_next: NONE,
        pair_prev: NONE,
        live_pos: NONE,
        src_qp: 0,
        last_cnp: 0,
        def_since: 0,
        def_qd16: 0,
        sport: 0,
        via: 0,
    };

    #[inline(always)]
    fn key_is(&self, k: &PackedKey) -> bool {
        self.w == k.w && (self.qpf ^ k.qpf) & KEY_BITS == 0 && (k.qpf & UD == 0 || self.src_qp & QP_MASK == k.sqp)
    }

    pub fn key(&self) -> PackedKey {
        let qpf = self.qpf & KEY_BITS;
        PackedKey { w: self.w, qpf, sqp: if qpf & UD != 0 { self.src_qp & QP_MASK } else { 0 } }
    }

    /// A UD flow: its source QP is its DETH's, part of its key.
    pub fn is_ud(&self) -> bool {
        self.qpf & UD != 0
    }

    #[inline(always)]
    pub fn live(&self) -> bool {
        self.qpf & LIVE != 0
    }

    fn set_flag(&mut self, f: u32, on: bool) {
        if on {
            self.qpf |= f;
        } else {
            self.qpf &= !f;
        }
    }

    pub fn src_qp(&self) -> Option<u32> {
        (self.qpf & HAS_SRC_QP != 0).then_some(self.src_qp & QP_MASK)
    }

    /// Set the source QP, learned or `configured`. A UD flow's is its
    /// key's and stays.
    pub fn set_src_qp(&mut self, qp: u32, configured: bool) {
        if self.is_ud() {
            return;
        }
        self.src_qp = (qp & QP_MASK) | (self.src_qp & DEFERRED);
        self.qpf |= HAS_SRC_QP;
        if configured {
            self.qpf |= CONFIGURED;
        }
    }

    /// Forget the source QP (learned or configured; not a UD flow's).
    pub fn clear_src_qp(&mut self) {
        if !self.is_ud() {
            self.qpf &= !(HAS_SRC_QP | CONFIGURED);
        }
    }

    /// `src_qp` came from configuration: reverse learning does not touch it.
    pub fn src_qp_configured(&self) -> bool {
        self.qpf & CONFIGURED != 0
    }

    /// Reverse learning may not change `src_qp`: configured, or a UD
    /// flow's own.
    pub fn src_qp_fixed(&self) -> bool {
        self.qpf & (CONFIGURED | UD) != 0
    }

    /// A Notify / Rate Reduce / Pause was sent and no Resume since.
    pub fn throttled(&self) -> bool {
        self.qpf & THROTTLED != 0
    }

    /// No Resume can reach the flow (its source takes no CNP format, or its
    /// source QP is unknown and the policy holds such CNPs back): it stops
    /// being throttled without one.
    pub fn clear_throttled(&mut self) {
        self.set_flag(THROTTLED, false);
    }

    pub fn last_cnp(&self) -> Option<u64> {
        (self.qpf & HAS_CNP != 0).then_some(self.last_cnp)
    }

    /// When the last Long-haul CNP that throttled the flow was sent (a
    /// Resume follows one, so there is one whenever a CNP was sent).
    pub fn last_throttle(&self) -> Option<u64> {
        (self.qpf & HAS_CNP != 0).then_some(self.last_throttle)
    }

    pub fn deferred(&self) -> Option<(u64, u64)> {
        (self.src_qp & DEFERRED != 0).then_some((self.def_since, u64::from(self.def_qd16) * 16))
    }

    pub fn set_deferred(&mut self, d: Option<(u64, u64)>) {
        if d.is_some() {
            self.src_qp |= DEFERRED;
        } else {
            self.src_qp &= !DEFERRED;
        }
        if let Some((a, b)) = d {
            self.def_since = a;
            // Rounded up: a queue that did not grow never looks worse.
            self.def_qd16 = u32::try_from(b.div_ceil(16)).unwrap_or(u32::MAX);
        }
    }

    /// Record a Long-haul CNP sent now (what matters later: when, and
    /// whether it throttled the flow).
    pub fn record_cnp(&mut self, now: u64, action: Action) {
        self.last_cnp = now;
        if action != Action::Resume {
            self.last_throttle = now;
        }
        self.qpf |= HAS_CNP;
        self.set_flag(THROTTLED, action != Action::Resume);
        self.set_deferred(None);
    }

    /// Bytes in the current observation window.
    pub fn win_bytes(&self) -> u64 {
        self.win_hi.saturating_add(u64::from(self.win_lo))
    }

    /// `win_bytes += len` (saturating).
    #[inline(always)]
    pub fn add_win_bytes(&mut self, len: u32) {
        match self.win_lo.checked_add(len) {
            Some(x) => self.win_lo = x,
            None => self.spill(len),
        }
    }

    #[cold]
    fn spill(&mut self, len: u32) {
        self.win_hi = self.win_hi.saturating_add(u64::from(self.win_lo) + u64::from(len));
        self.win_lo = 0;
    }

    /// Close the observation windows that have ended by `now` (window
    /// length `win` ns).
    #[inline(always)]
    pub fn roll(&mut self, now: u64, win: u64) {
        if win == 0 {
            return;
        }
        let el = now.saturating_sub(self.win_start);
        if el < win {
            return;
        }
        self.roll_slow(el, win);
    }

    #[cold]
    fn roll_slow(&mut self, el: u64, win: u64) {
        // el >= win; n = el / win, without a division when small.
        let n = if el < win.saturating_mul(2) {
            1
        } else if el < win.saturating_mul(3) {
            2
        } else {
            el / win
        };
        let wb = u32::try_from(self.win_bytes().div_ceil(16)).unwrap_or(u32::MAX);
        match n {
            1 => {
                self.prev2_16 = self.prev16;
                self.prev16 = wb;
            }
            2 => {
                self.prev2_16 = wb;
                self.prev16 = 0;
            }
            _ => {
                self.prev2_16 = 0;
                self.prev16 = 0;
            }
        }
        self.win_lo = 0;
        self.win_hi = 0;
        self.win_start = self.win_start.saturating_add(n.saturating_mul(win));
    }

    /// Whether the arrival rate fell by at least `frac` from the window
    /// before the last completed one to the last completed one.
    pub fn rate_fell(&self, frac: f64) -> bool {
        self.prev2_16 > 0 && f64::from(self.prev16) <= f64::from(self.prev2_16) * (1.0 - frac)
    }
}

#[inline(always)]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; it never faults, whatever the address.
    unsafe {
        core::arch::x86_64::_mm_prefetch(p as *const i8, core::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

const WAYS: usize = 7;

/// One bucket of the key index: 7 (tag, slot) pairs and the number of
/// entries whose probe passed this bucket because it was full.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Bucket {
    tags: [u32; WAYS],
    ovf: u32,
    slots: [u32; WAYS],
    _pad: u32,
}

const EMPTY_BUCKET: Bucket = Bucket { tags: [0; WAYS], ovf: 0, slots: [NONE; WAYS], _pad: 0 };

#[inline(always)]
fn tag_of(h: u64) -> u32 {
    ((h >> 32) as u32) | 1
}

/// Bit j set: `tags[j] == tag`.
#[inline(always)]
fn match_mask(bk: &Bucket, tag: u32) -> u32 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE2 is part of x86_64; `tags` and `ovf` are the first 32
    // bytes of a 64-byte aligned bucket.
    unsafe {
        use core::arch::x86_64::*;
        let t = _mm_set1_epi32(tag as i32);
        let p = bk.tags.as_ptr() as *const __m128i;
        let a = _mm_cmpeq_epi32(_mm_load_si128(p), t);
        let b = _mm_cmpeq_epi32(_mm_load_si128(p.add(1)), t);
        let m = _mm_movemask_ps(_mm_castsi128_ps(a)) as u32 | ((_mm_movemask_ps(_mm_castsi128_ps(b)) as u32) << 4);
        m & ((1 << WAYS) - 1)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let mut m = 0;
        for j in 0..WAYS {
            m |= u32::from(bk.tags[j] == tag) << j;
        }
        m
    }
}

/// `n` copies of `v`, in memory the kernel is asked to back with huge
/// pages when the vector is large (fewer TLB misses on random access).
fn big_vec<T: Copy>(n: usize, v: T) -> Vec<T> {
    let mut x: Vec<T> = Vec::with_capacity(n);
    #[cfg(target_os = "linux")]
    {
        extern "C" {
            fn madvise(addr: *mut core::ffi::c_void, len: usize, advice: i32) -> i32;
        }
        const MADV_HUGEPAGE: i32 = 14;
        let bytes = n.saturating_mul(core::mem::size_of::<T>());
        if bytes >= 4 << 20 {
            let p = x.as_mut_ptr() as usize;
            let start = (p + 4095) & !4095;
            let len = (bytes - (start - p)) & !4095;
            // SAFETY: advice only, on pages inside our own allocation;
            // a failure changes nothing.
            unsafe {
                madvise(start as *mut core::ffi::c_void, len, MADV_HUGEPAGE);
            }
        }
    }
    x.resize(n, v);
    x
}

struct KeyIndex {
    b: Vec<Bucket>,
    mask: usize,
}

impl KeyIndex {
    fn new(capacity: usize) -> KeyIndex {
        // At most 5/7 full when the table is.
        let n = capacity.max(1).div_ceil(5).next_power_of_two();
        KeyIndex { b: big_vec(n, EMPTY_BUCKET), mask: n - 1 }
    }

    #[inline(always)]
    fn home(&self, h: u64) -> usize {
        (h as usize) & self.mask
    }

    #[inline(always)]
    fn prefetch(&self, h: u64) {
        prefetch(&self.b[self.home(h)]);
    }

    /// The slot for which `is(slot)` holds among those tagged like `h`.
    #[inline(always)]
    fn find(&self, h: u64, mut is: impl FnMut(u32) -> bool) -> Option<u32> {
        let tag = tag_of(h);
        let mut i = self.home(h);
        for _ in 0..=self.mask {
            let bk = &self.b[i];
            let mut m = match_mask(bk, tag);
            while m != 0 {
                let s = bk.slots[m.trailing_zeros() as usize];
                if is(s) {
                    return Some(s);
                }
                m &= m - 1;
            }
            if bk.ovf == 0 {
                return None;
            }
            i = (i + 1) & self.mask;
        }
        None
    }

    /// Prefetch the entries of the home bucket whose tag matches.
    #[inline(always)]
    fn prefetch_candidates(&self, h: u64, mut f: impl FnMut(u32)) {
        let tag = tag_of(h);
        let bk = &self.b[self.home(h)];
        let mut m = match_mask(bk, tag);
        while m != 0 {
            f(bk.slots[m.trailing_zeros() as usize]);
            m &= m - 1;
        }
    }

    fn insert(&mut self, h: u64, v: u32) {
        let tag = tag_of(h);
        let mut i = self.home(h);
        for _ in 0..=self.mask {
            let bk = &mut self.b[i];
            if let Some(j) = bk.tags.iter().position(|&t| t == 0) {
                bk.tags[j] = tag;
                bk.slots[j] = v;
                return;
            }
            bk.ovf += 1;
            i = (i + 1) & self.mask;
        }
    }

    fn remove(&mut self, h: u64, v: u32) {
        let tag = tag_of(h);
        let home = self.home(h);
        let mut i = home;
        for _ in 0..=self.mask {
            let bk = &mut self.b[i];
            if let Some(j) = (0..WAYS).find(|&j| bk.tags[j] == tag && bk.slots[j] == v) {
                bk.tags[j] = 0;
                bk.slots[j] = NONE;
                // Undo the overflow counts of the buckets passed.
                let mut k = home;
                while k != i {
                    self.b[k].ovf -= 1;
                    k = (k + 1) & self.mask;
                }
                return;
            }
            if bk.ovf == 0 {
                return;
            }
            i = (i + 1) & self.mask;
        }
    }
}

/// Open-addressing index of slab positions (the pair index).
struct Index {
    slots: Vec<u32>,
    mask: usize,
}

impl Index {
    fn new(capacity: usize) -> Index {
        let n = (capacity.max(1) * 2).next_power_of_two();
        Index {
            slots: vec![NONE; n],
            mask: n - 1,
        }
    }

    fn home(&self, h: u64) -> usize {
        (h as usize) & self.mask
    }

    /// Position of the entry for which `is(slab index)` holds.
    fn find(&self, h: u64, mut is: impl FnMut(u32) -> bool) -> Option<usize> {
        let mut i = self.home(h);
        for _ in 0..=self.mask {
            let s = self.slots[i];
            if s == NONE {
                return None;
            }
            if is(s) {
                return Some(i);
            }
            i = (i + 1) & self.mask;
        }
        None
    }

    fn insert(&mut self, h: u64, v: u32) {
        let mut i = self.home(h);
        for _ in 0..=self.mask {
            if self.slots[i] == NONE {
                self.slots[i] = v;
                return;
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Remove position `i`; `home_of(v)` gives an entry's home position.
    fn remove_at(&mut self, mut i: usize, home_of: impl Fn(u32) -> usize) {
        let mut j = i;
        loop {
            j = (j + 1) & self.mask;
            let v = self.slots[j];
            if v == NONE || j == i {
                self.slots[i] = NONE;
                return;
            }
            let k = home_of(v);
            // Can the entry at j move to the hole at i? Not if its home k
            // lies cyclically in (i, j].
            let stays = if i <= j { i < k && k <= j } else { i < k || k <= j };
            if !stays {
                self.slots[i] = v;
                i = j;
            }
        }
    }
}

/// A flow with bytes in the queue.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Nz {
    pub queued: u64,
    pub slot: u32,
}

pub(crate) struct FlowTable {
    /// Keys both indices' hashes.
    hk: HashKey,
    pub entries: Vec<Flow>,
    by_key: KeyIndex,
    by_pair: Index,
    free: Vec<u32>,
    /// Slab indices of the live flows (for scans).
    pub live: Vec<u32>,
    /// The flows with bytes queued, plus flows whose bytes reached zero
    /// since the last compaction (queued 0: left in place, so a flow that
    /// keeps sending does not leave and re-enter with every packet).
    pub nz: Vec<Nz>,
    /// Entries of `nz` with bytes queued.
    nz_live: usize,
}

/// `nz` is compacted when it holds more than twice its live entries plus
/// this many.
const NZ_SLACK: usize = 1024;

impl FlowTable {
    /// A table of `capacity` flows whose hashes are keyed by a random
    /// secret of its own.
    pub fn new(capacity: usize) -> FlowTable {
        FlowTable::with_hash_key(capacity, HashKey::random())
    }

    pub(crate) fn with_hash_key(capacity: usize, hk: HashKey) -> FlowTable {
        let capacity = capacity.max(1);
        FlowTable {
            hk,
            entries: big_vec(capacity, Flow::EMPTY),
            by_key: KeyIndex::new(capacity),
            by_pair: Index::new(capacity),
            free: (0..capacity as u32).rev().collect(),
            live: Vec::with_capacity(capacity),
            nz: Vec::with_capacity(capacity),
            nz_live: 0,
        }
    }

    pub fn capacity(&self) -> usize {
        self.entries.len()
    }

    /// The key index's hash of `key`, what [`FlowTable::prefetch_bucket`],
    /// [`FlowTable::prefetch_entry_of`] and [`FlowTable::lookup_hint`] take.
    #[inline(always)]
    pub fn hash(&self, key: &PackedKey) -> u64 {
        key.hash(&self.hk)
    }

    pub fn len(&self) -> usize {
        self.live.len()
    }

    /// Start fetching what a lookup of a key hashing to `h` reads first.
    #[inline(always)]
    pub fn prefetch_bucket(&self, h: u64) {
        self.by_key.prefetch(h);
    }

    /// Start fetching the entry (its first line) a lookup of `h` will read
    /// (the bucket should be in cache by now). Returns the first slot whose
    /// tag matches (NONE if none), a hint for [`FlowTable::lookup_hint`].
    #[inline(always)]
    pub fn prefetch_entry_of(&self, h: u64) -> u32 {
        let e = &self.entries;
        let mut first = NONE;
        self.by_key.prefetch_candidates(h, |s| {
            if let Some(f) = e.get(s as usize) {
                if first == NONE {
                    first = s;
                }
                // Both lines: the second when an observation window
                // closes.
                let p = f as *const Flow as *const u8;
                prefetch(p);
                prefetch(p.wrapping_add(64));
            }
        });
        first
    }

    /// [`FlowTable::lookup_h`] trying the slot `hint` (from
    /// [`FlowTable::prefetch_entry_of`]) first: a live entry with the key
    /// is the flow, whatever changed since (keys are unique).
    #[inline(always)]
    pub fn lookup_hint(&self, key: &PackedKey, h: u64, hint: u32) -> Option<u32> {
        if let Some(f) = self.entries.get(hint as usize) {
            if f.key_is(key) && f.live() {
                return Some(hint);
            }
        }
        self.lookup_h(key, h)
    }

    /// Start fetching an entry's first line (by slot).
    #[inline(always)]
    pub fn prefetch_slot(&self, s: u32) {
        if let Some(f) = self.entries.get(s as usize) {
            prefetch(f);
        }
    }

    #[inline(always)]
    pub fn lookup_h(&self, key: &PackedKey, h: u64) -> Option<u32> {
        let e = &self.entries;
        self.by_key.find(h, |s| e[s as usize].key_is(key))
    }

    pub fn lookup(&self, key: &PackedKey) -> Option<u32> {
        self.lookup_h(key, key.hash(&self.hk))
    }

    /// Insert a new flow (the caller checked it is absent); None when full.
    pub fn insert_h(&mut self, key: PackedKey, h: u64, now: u64) -> Option<u32> {
        let s = self.free.pop()?;
        let ph = key.pair_hash(&self.hk);
        let head = {
            let e = &self.entries;
            self.by_pair.find(ph, |x| e[x as usize].key().same_pair(&key))
        };
        let mut f = Flow::EMPTY;
        f.w = key.w;
        f.qpf = (key.qpf & KEY_BITS) | LIVE;
        if key.qpf & UD != 0 {
            f.src_qp = key.sqp & QP_MASK;
            f.qpf |= HAS_SRC_QP;
        }
        f.live_pos = self.live.len() as u32;
        f.last_seen = now;
        f.win_start = now;
        match head {
            Some(pos) => {
                // Insert after the head: the index keeps pointing at it.
                let hd = self.by_pair.slots[pos];
                let nx = self.entries[hd as usize].pair_next;
                f.pair_prev = hd;
                f.pair_next = nx;
                self.entries[hd as usize].pair_next = s;
                if nx != NONE {
                    self.entries[nx as usize].pair_prev = s;
                }
            }
            None => self.by_pair.insert(ph, s),
        }
        self.entries[s as usize] = f;
        self.by_key.insert(h, s);
        self.live.push(s);
        Some(s)
    }

    #[cfg(test)]
    pub fn insert(&mut self, key: PackedKey, now: u64) -> Option<u32> {
        self.insert_h(key, key.hash(&self.hk), now)
    }

    /// Remove a live flow (its queued bytes are forgotten).
    pub fn remove(&mut self, s: u32) {
        let Some(f) = self.entries.get(s as usize).copied() else {
            return;
        };
        if !f.live() {
            return;
        }
        self.set_queued_zero(s);
        let key = f.key();
        self.by_key.remove(key.hash(&self.hk), s);
        // Pair list and index.
        if f.pair_prev != NONE {
            self.entries[f.pair_prev as usize].pair_next = f.pair_next;
            if f.pair_next != NONE {
                self.entries[f.pair_next as usize].pair_prev = f.pair_prev;
            }
        } else {
            let ph = key.pair_hash(&self.hk);
            let pos = self.by_pair.find(ph, |x| x == s);
            if let Some(pos) = pos {
                if f.pair_next != NONE {
                    self.by_pair.slots[pos] = f.pair_next;
                    self.entries[f.pair_next as usize].pair_prev = NONE;
                } else {
                    let e = &self.entries;
                    let mask = self.by_pair.mask;
                    let hk = &self.hk;
                    self.by_pair
                        .remove_at(pos, |v| (e[v as usize].key().pair_hash(hk) as usize) & mask);
                }
            }
        }
        // Live list (swap remove).
        let lp = f.live_pos as usize;
        if lp < self.live.len() {
            self.live.swap_remove(lp);
            if let Some(&moved) = self.live.get(lp) {
                self.entries[moved as usize].live_pos = lp as u32;
            }
        }
        self.entries[s as usize] = Flow::EMPTY;
        self.free.push(s);
    }

    /// Position of a live flow in `live`.
    pub fn live_pos(&self, s: u32) -> u32 {
        self.entries.get(s as usize).map_or(NONE, |f| f.live_pos)
    }

    /// Bytes of flow `s` in the queue.
    #[inline]
    pub fn queued(&self, s: u32) -> u64 {
        match self.entries.get(s as usize) {
            Some(f) if f.nz_pos != NONE => self.nz[f.nz_pos as usize].queued,
            _ => 0,
        }
    }

    /// Flows with bytes queued.
    pub fn queued_flows(&self) -> usize {
        self.nz_live
    }

    /// `queued += len`.
    #[inline(always)]
    pub fn add_queued(&mut self, s: u32, len: u64) {
        if len == 0 {
            return;
        }
        let Some(f) = self.entries.get(s as usize) else { return };
        if f.nz_pos != NONE {
            let n = &mut self.nz[f.nz_pos as usize];
            self.nz_live += usize::from(n.queued == 0);
            n.queued = n.queued.saturating_add(len);
            return;
        }
        if self.nz.len() > 2 * self.nz_live + NZ_SLACK {
            self.compact_nz();
        }
        let p = self.nz.len() as u32;
        self.nz.push(Nz { queued: len, slot: s });
        self.entries[s as usize].nz_pos = p;
        self.nz_live += 1;
    }

    /// `queued -= len` (saturating at zero).
    #[inline(always)]
    pub fn sub_queued(&mut self, s: u32, len: u64) {
        let Some(f) = self.entries.get(s as usize) else { return };
        let p = f.nz_pos;
        if p == NONE {
            return;
        }
        let n = &mut self.nz[p as usize];
        if n.queued == 0 {
            return;
        }
        n.queued = n.queued.saturating_sub(len);
        self.nz_live -= usize::from(n.queued == 0);
    }

    /// Drop the entries of `nz` with nothing queued (amortized: at most one
    /// per `add_queued` that inserts).
    #[cold]
    fn compact_nz(&mut self) {
        let mut j = 0;
        for i in 0..self.nz.len() {
            let n = self.nz[i];
            if n.queued == 0 {
                self.entries[n.slot as usize].nz_pos = NONE;
            } else {
                self.nz[j] = n;
                self.entries[n.slot as usize].nz_pos = j as u32;
                j += 1;
            }
        }
        self.nz.truncate(j);
    }

    fn set_queued_zero(&mut self, s: u32) {
        if let Some(p) = self.entries.get(s as usize).map(|f| f.nz_pos).filter(|&p| p != NONE) {
            self.nz_remove(p);
        }
    }

    fn nz_remove(&mut self, p: u32) {
        let gone = self.nz.swap_remove(p as usize);
        self.nz_live -= usize::from(gone.queued != 0);
        self.entries[gone.slot as usize].nz_pos = NONE;
        if let Some(m) = self.nz.get(p as usize) {
            self.entries[m.slot as usize].nz_pos = p;
        }
    }

    /// Every flow's queued bytes to zero.
    pub fn clear_queued(&mut self) {
        for n in self.nz.drain(..) {
            self.entries[n.slot as usize].nz_pos = NONE;
        }
        self.nz_live = 0;
    }

    /// Nothing of flow `s` is queued.
    #[inline]
    pub fn idle_in_queue(&self, s: u32) -> bool {
        self.queued(s) == 0
    }

    /// First flow of the list of flows from `src` to `dst`.
    pub fn pair_head(&self, src: IpAddr, dst: IpAddr) -> u32 {
        let k = PackedKey::new(src, dst, 0);
        let e = &self.entries;
        self.by_pair
            .find(k.pair_hash(&self.hk), |x| e[x as usize].key().same_pair(&k))
            .map_or(NONE, |i| self.by_pair.slots[i])
    }

    pub fn pair_next(&self, s: u32) -> u32 {
        self.entries.get(s as usize).map_or(NONE, |f| f.pair_next)
    }

    #[inline(always)]
    pub fn get_mut(&mut self, s: u32) -> Option<&mut Flow> {
        self.entries.get_mut(s as usize).filter(|f| f.live())
    }

    #[inline(always)]
    pub fn get(&self, s: u32) -> Option<&Flow> {
        self.entries.get(s as usize).filter(|f| f.live())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(a: u8, b: u8, qp: u32) -> PackedKey {
        PackedKey::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, a)), IpAddr::V4(Ipv4Addr::new(10, 0, 1, b)), qp)
    }

    #[test]
    fn lookup_hint_is_only_a_shortcut() {
        let mut t = FlowTable::new(8);
        let (a, b, c) = (key(1, 1, 1), key(2, 2, 2), key(3, 3, 3));
        let sa = t.insert(a, 0).unwrap();
        let sb = t.insert(b, 0).unwrap();
        // The prefetch's hint is the flow's slot.
        assert_eq!(t.prefetch_entry_of(t.hash(&a)), sa);
        assert_eq!(t.prefetch_entry_of(t.hash(&c)), NONE);
        assert_eq!(t.lookup_hint(&a, t.hash(&a), sa), Some(sa));
        // A wrong, stale or absent hint falls back to the lookup.
        assert_eq!(t.lookup_hint(&a, t.hash(&a), sb), Some(sa));
        assert_eq!(t.lookup_hint(&a, t.hash(&a), NONE), Some(sa));
        assert_eq!(t.lookup_hint(&a, t.hash(&a), 1 << 30), Some(sa));
        t.remove(sa);
        assert_eq!(t.lookup_hint(&a, t.hash(&a), sa), None, "removed: the slot's stale key must not match");
        let sc = t.insert(c, 0).unwrap();
        assert_eq!(sc, sa, "the freed slot is reused");
        assert_eq!(t.lookup_hint(&a, t.hash(&a), sa), None);
        assert_eq!(t.lookup_hint(&c, t.hash(&c), sa), Some(sc));
        assert_eq!(t.lookup_hint(&b, t.hash(&b), sc), Some(sb));
    }

    #[test]
    fn insert_lookup_remove_keeps_other_slots() {
        let mut t = FlowTable::new(64);
        let mut slots = Vec::new();
        for i in 0..64u32 {
            let k = key((i % 7) as u8, (i % 3) as u8, i);
            slots.push(t.insert(k, 0).unwrap());
        }
        assert!(t.insert(key(99, 99, 99), 0).is_none(), "full");
        // Remove every other one; the rest keep their slot and are found.
        for i in (0..64u32).step_by(2) {
            t.remove(slots[i as usize]);
        }
        for i in 0..64u32 {
            let k = key((i % 7) as u8, (i % 3) as u8, i);
            if i % 2 == 0 {
                assert_eq!(t.lookup(&k), None);
            } else {
                assert_eq!(t.lookup(&k), Some(slots[i as usize]));
            }
        }
        assert_eq!(t.len(), 32);
        // Pair lists hold exactly the live flows of each pair.
        for a in 0..7u8 {
            for b in 0..3u8 {
                let mut n = 0;
                let mut s = t.pair_head(key(a, b, 0).src(), key(a, b, 0).dst());
                while s != NONE {
                    let f = t.get(s).unwrap();
                    assert!(f.key().same_pair(&key(a, b, 0)));
                    assert_eq!(f.key().dest_qp() % 2, 1);
                    n += 1;
                    s = t.pair_next(s);
                }
                let want = (0..64u32).filter(|i| i % 2 == 1 && i % 7 == a as u32 && i % 3 == b as u32).count();
                assert_eq!(n, want);
            }
        }
    }

    #[test]
    fn packed_keys_round_trip_and_differ_by_family() {
        let a: IpAddr = "2001:db8::1".parse().unwrap();
        let b: IpAddr = "10.1.2.3".parse().unwrap();
        let k = PackedKey::new(a, b, 0x1234_5678);
        assert_eq!((k.src(), k.dst(), k.dest_qp()), (a, b, 0x34_5678));
        let m: IpAddr = "::a01:203".parse().unwrap();
        assert_ne!(PackedKey::new(a, m, 1), PackedKey::new(a, b, 1));
        let mut o = [0u8; 32];
        o[..16].copy_from_slice(&"2001:db8::1".parse::<Ipv6Addr>().unwrap().octets());
        o[16..].copy_from_slice(&"2001:db8::2".parse::<Ipv6Addr>().unwrap().octets());
        assert_eq!(PackedKey::v6(&o, 7), PackedKey::new(a, "2001:db8::2".parse().unwrap(), 7));
        assert_eq!(PackedKey::v4([10, 1, 2, 3], [10, 0, 0, 1], 7), PackedKey::new(b, "10.0.0.1".parse().unwrap(), 7));
    }

    /// Buckets a lookup of `k` reads.
    fn probes(t: &FlowTable, k: &PackedKey) -> usize {
        let h = t.hash(k);
        let mut i = t.by_key.home(h);
        let mut n = 1;
        while t.by_key.b[i].ovf != 0 && !t.by_key.b[i].slots.iter().any(|&s| s != NONE && t.entries[s as usize].key_is(k)) {
            i = (i + 1) & t.by_key.mask;
            n += 1;
        }
        n
    }

    #[test]
    fn every_table_draws_its_own_hash_key() {
        let (a, b) = (FlowTable::new(8), FlowTable::new(8));
        assert_ne!(a.hk, b.hk);
        assert_ne!(a.hk, HashKey::FIXED);
        let k = key(1, 2, 3);
        assert_ne!(a.hash(&k), b.hash(&k));
        assert!(a.hk.0.iter().all(|w| w >> 63 == 1));
    }

    #[test]
    fn keys_chosen_to_collide_under_a_known_hash_key_do_not_under_a_random_one() {
        // A sender who knows the hash picks 140 flow keys (IPv6 sources it
        // makes up) that share one home bucket: every lookup in that
        // region then walks a chain of 20 buckets.
        const N: usize = 140;
        let cap = 4096;
        let known = FlowTable::with_hash_key(cap, HashKey::FIXED);
        let target = 5;
        let dst: IpAddr = "2001:db8:99::1".parse().unwrap();
        let mut picked = Vec::new();
        let mut i = 0u64;
        while picked.len() < N {
            let src = IpAddr::V6(Ipv6Addr::from(0x2001_0db8_0000_0000_0000_0000_0000_0000u128 | u128::from(i)));
            let k = PackedKey::new(src, dst, 7);
            if known.by_key.home(known.hash(&k)) == target {
                picked.push(k);
            }
            i += 1;
            assert!(i < 50_000_000, "search bounded");
        }
        let fill = |mut t: FlowTable| {
            for k in &picked {
                t.insert(*k, 0).unwrap();
            }
            for k in &picked {
                assert!(t.lookup(k).is_some());
            }
            let worst = picked.iter().map(|k| probes(&t, k)).max().unwrap();
            (t, worst)
        };
        let (_, worst_known) = fill(known);
        assert!(worst_known >= N / WAYS, "the chosen keys collide under the known key: {worst_known} buckets");
        // The router's tables: each its own random key.
        for _ in 0..5 {
            let (t, worst) = fill(FlowTable::new(cap));
            assert!(worst <= 2, "random key {:x?}: a lookup reads {worst} buckets", t.hk);
        }
    }

    #[test]
    fn overflowing_buckets_still_find_and_remove() {
        // A tiny index (1 bucket per 5 entries): most buckets overflow.
        let mut t = FlowTable::new(200);
        let mut slots = Vec::new();
        for i in 0..200u32 {
            slots.push(t.insert(key((i % 11) as u8, (i % 13) as u8, i), 0).unwrap());
        }
        for round in 0..3u32 {
            for i in (round..200).step_by(3) {
                let k = key((i % 11) as u8, (i % 13) as u8, i);
                assert_eq!(t.lookup(&k), Some(slots[i as usize]));
                t.remove(slots[i as usize]);
                assert_eq!(t.lookup(&k), None);
                slots[i as usize] = t.insert(k, 0).unwrap();
                assert_eq!(t.lookup(&k), Some(slots[i as usize]));
            }
        }
        for i in 0..200u32 {
            t.remove(slots[i as usize]);
        }
        assert_eq!(t.len(), 0);
        assert!(t.by_key.b.iter().all(|b| b.ovf == 0 && b.tags == [0; WAYS]));
    }

    #[test]
    fn queued_bytes_in_the_dense_set() {
        let mut t = FlowTable::new(8);
        let a = t.insert(key(1, 1, 1), 0).unwrap();
        let b = t.insert(key(2, 2, 2), 0).unwrap();
        t.add_queued(a, 100);
        t.add_queued(b, 50);
        t.add_queued(a, 10);
        assert_eq!((t.queued(a), t.queued(b), t.nz.len(), t.queued_flows()), (110, 50, 2, 2));
        t.sub_queued(a, 200);
        // a stays in the dense set with nothing queued until a compaction.
        assert_eq!((t.queued(a), t.queued(b), t.nz.len(), t.queued_flows()), (0, 50, 2, 1));
        assert!(t.idle_in_queue(a) && !t.idle_in_queue(b));
        t.sub_queued(a, 1);
        assert_eq!(t.queued_flows(), 1, "no underflow of the live count");
        t.add_queued(a, 7);
        assert_eq!((t.queued(a), t.nz.len(), t.queued_flows()), (7, 2, 2));
        t.remove(b);
        assert_eq!((t.nz.len(), t.queued_flows()), (1, 1));
        t.sub_queued(a, 7);
        t.remove(a);
        assert!(t.nz.is_empty());
        assert_eq!(t.queued_flows(), 0);
        let a = t.insert(key(1, 1, 1), 0).unwrap();
        t.add_queued(a, 1);
        t.clear_queued();
        assert_eq!((t.queued(a), t.queued_flows()), (0, 0));
    }

    #[test]
    fn the_dense_set_is_compacted() {
        let n = 3 * NZ_SLACK;
        let mut t = FlowTable::new(n);
        let slots: Vec<u32> = (0..n as u32).map(|i| t.insert(key((i % 250) as u8, (i / 250) as u8, i), 0).unwrap()).collect();
        // Each flow one packet in and out: the set keeps them, idle...
        for &s in &slots[..NZ_SLACK + 1] {
            t.add_queued(s, 100);
            t.sub_queued(s, 100);
        }
        assert_eq!((t.nz.len(), t.queued_flows()), (NZ_SLACK + 1, 0));
        // ...until one more insertion finds it over 2 * live + slack.
        t.add_queued(slots[n - 1], 5);
        assert_eq!((t.nz.len(), t.queued_flows()), (1, 1));
        assert_eq!(t.queued(slots[n - 1]), 5);
        for &s in &slots[..NZ_SLACK + 1] {
            assert!(t.idle_in_queue(s));
            assert_eq!(t.entries[s as usize].nz_pos, NONE);
        }
        // Positions stay consistent through compaction and removal.
        for (k, &s) in slots.iter().enumerate().take(200) {
            t.add_queued(s, k as u64 + 1);
        }
        for &s in slots.iter().take(200).step_by(3) {
            t.remove(s);
        }
        for (i, nz) in t.nz.iter().enumerate() {
            assert_eq!(t.entries[nz.slot as usize].nz_pos, i as u32);
        }
        for (k, &s) in slots.iter().enumerate().take(200) {
            let want = if k % 3 == 0 { 0 } else { k as u64 + 1 };
            assert_eq!(t.queued(s), want);
        }
        assert_eq!(t.queued_flows(), t.nz.iter().filter(|n| n.queued > 0).count());
    }
}
