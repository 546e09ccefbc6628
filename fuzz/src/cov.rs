//! SanitizerCoverage inline 8-bit counters, read without libFuzzer.
//!
//! With `-C passes=sancov-module -C llvm-args=-sanitizer-coverage-level=3
//! -C llvm-args=-sanitizer-coverage-inline-8bit-counters`, LLVM gives every
//! instrumented module an array of one-byte edge counters and, from a module
//! constructor, calls `__sanitizer_cov_8bit_counters_init(start, stop)`.
//! We keep those ranges, zero them before each run and fold them into a
//! map of (counter, hit-count bucket) features after it.

#[cfg(fuzz_cov)]
mod imp {
    use core::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

    const MAX_REGIONS: usize = 4096;
    static STARTS: [AtomicPtr<u8>; MAX_REGIONS] =
        [const { AtomicPtr::new(core::ptr::null_mut()) }; MAX_REGIONS];
    static LENS: [AtomicUsize; MAX_REGIONS] = [const { AtomicUsize::new(0) }; MAX_REGIONS];
    static COUNT: AtomicUsize = AtomicUsize::new(0);

    /// Called by the instrumented code's module constructors, before main.
    ///
    /// # Safety
    /// `start..stop` must be the counter array LLVM allocated; it lives for
    /// the whole program.
    #[no_mangle]
    pub unsafe extern "C" fn __sanitizer_cov_8bit_counters_init(start: *mut u8, stop: *mut u8) {
        let i = COUNT.fetch_add(1, Ordering::SeqCst);
        if i < MAX_REGIONS && !start.is_null() && stop > start {
            STARTS[i].store(start, Ordering::SeqCst);
            LENS[i].store(stop as usize - start as usize, Ordering::SeqCst);
        }
    }

    pub fn regions() -> impl Iterator<Item = (*mut u8, usize)> {
        let n = COUNT.load(Ordering::SeqCst).min(MAX_REGIONS);
        (0..n).map(|i| {
            (
                STARTS[i].load(Ordering::SeqCst),
                LENS[i].load(Ordering::SeqCst),
            )
        })
    }
}

/// True if the binary was built with coverage counters and they registered.
pub fn available() -> bool {
    counters() > 0
}

/// The number of counters registered.
pub fn counters() -> usize {
    #[cfg(fuzz_cov)]
    {
        imp::regions().map(|(_, l)| l).sum()
    }
    #[cfg(not(fuzz_cov))]
    {
        0
    }
}

/// Zero every counter.
pub fn reset() {
    #[cfg(fuzz_cov)]
    for (p, l) in imp::regions() {
        if !p.is_null() {
            // SAFETY: a counter array registered by LLVM, alive for the
            // program; only this (single) fuzzing thread touches it now.
            unsafe { core::ptr::write_bytes(p, 0, l) };
        }
    }
}

#[cfg_attr(not(fuzz_cov), allow(dead_code))]
#[inline]
fn bucket(c: u8) -> u8 {
    match c {
        0 => 0,
        1 => 1,
        2 => 2,
        3 => 4,
        4..=7 => 8,
        8..=15 => 16,
        16..=31 => 32,
        32..=127 => 64,
        _ => 128,
    }
}

/// The features seen so far: per counter, the hit-count buckets reached.
pub struct Seen {
    #[cfg_attr(not(fuzz_cov), allow(dead_code))]
    map: Vec<u8>,
    count: usize,
}

impl Default for Seen {
    fn default() -> Self {
        Self::new()
    }
}

impl Seen {
    pub fn new() -> Seen {
        Seen {
            map: vec![0; counters()],
            count: 0,
        }
    }

    /// The number of (counter, bucket) features seen.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Fold the counters of the last run in; true if it lit a new feature.
    pub fn update(&mut self) -> bool {
        #[cfg(not(fuzz_cov))]
        {
            false
        }
        #[cfg(fuzz_cov)]
        {
            let mut new = false;
            let mut base = 0;
            for (p, l) in imp::regions() {
                if p.is_null() || base + l > self.map.len() {
                    base += l;
                    continue;
                }
                // SAFETY: as in `reset`.
                let c = unsafe { core::slice::from_raw_parts(p as *const u8, l) };
                let mut i = 0;
                while i < l {
                    // Skip zero words quickly.
                    if i + 8 <= l
                        && u64::from_ne_bytes([
                            c[i],
                            c[i + 1],
                            c[i + 2],
                            c[i + 3],
                            c[i + 4],
                            c[i + 5],
                            c[i + 6],
                            c[i + 7],
                        ]) == 0
                    {
                        i += 8;
                        continue;
                    }
                    let b = bucket(c[i]);
                    let s = &mut self.map[base + i];
                    if b != 0 && *s & b == 0 {
                        *s |= b;
                        self.count += 1;
                        new = true;
                    }
                    i += 1;
                }
                base += l;
            }
            new
        }
    }
}
