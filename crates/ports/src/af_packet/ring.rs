//! The memory shared with the kernel: the [`Mapping`] of both rings and the status words through
//! which the kernel and we hand blocks and slots to each other.

use std::sync::atomic::{AtomicU32, Ordering};

/// A memory-mapped region shared with the kernel.
#[derive(Debug)]
pub(super) struct Mapping {
    pub(super) base: *mut u8,
    pub(super) len: usize,
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` are exactly what a successful mmap returned, unmapped once here; no
        // pointer into the mapping outlives the port that owns it.
        unsafe {
            libc::munmap(self.base.cast(), self.len);
        }
    }
}

/// Loads a status word (acquire: the data the kernel wrote before handing over is then visible).
///
/// # Safety
///
/// `p` must point at a 4-byte aligned `u32` inside a live ring, a word that is only ever accessed
/// atomically (block and slot status words are: the kernel and we hand ownership over through them).
#[inline]
pub(super) unsafe fn load_status(p: *mut u8) -> u32 {
    // SAFETY: guaranteed by the caller (see above).
    unsafe { AtomicU32::from_ptr(p.cast()) }.load(Ordering::Acquire)
}

/// Stores a status word (release: our writes to the block or slot happen before the hand-over).
///
/// # Safety
///
/// As for [`load_status`].
#[inline]
pub(super) unsafe fn store_status(p: *mut u8, v: u32) {
    // SAFETY: guaranteed by the caller (see above).
    unsafe { AtomicU32::from_ptr(p.cast()) }.store(v, Ordering::Release)
}
