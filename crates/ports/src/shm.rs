//! [`ShmRegion`]: memory shared with another party — the kernel's packet socket rings (AF_PACKET),
//! a memif peer's regions (rings and packet buffers, memif/ring.rs), an AF_XDP UMEM — with every
//! access in one place.
//!
//! Memory that someone else can write at any time is never a `&[u8]` here (rust-vmm's
//! `vm-memory` rule): the region hands out no references, only copies. Every accessor checks the
//! offset and length against the region (and the alignment of word accesses) and returns `None` /
//! `false` instead of touching anything outside it; single words are read and written with
//! volatile accesses, status words with acquire/release atomics (the hand-over protocol of a
//! ring), and byte ranges are copied with `ptr::copy_nonoverlapping` — only over ranges the ring
//! protocol says the peer does not write meanwhile (a block or slot that is ours).
//!
//! A region is either mapped from a file descriptor ([`ShmRegion::map`], unmapped on drop) or
//! anonymous ([`ShmRegion::anonymous`]: tests and simulated peers write it through the same
//! accessors). Rings keep an `Arc<ShmRegion>` and their own offset into it, so a ring can never
//! outlive its mapping.

use std::io;
use std::os::fd::RawFd;
use std::ptr;
use std::sync::atomic::{AtomicU16, AtomicU32, Ordering};

/// A shared memory region; see the module doc.
#[derive(Debug)]
pub struct ShmRegion {
    base: *mut u8,
    len: usize,
}

// SAFETY: the region is plain memory reached only through the accessors below, which are volatile
// or atomic word accesses and bounded copies: the same accesses the other party makes
// concurrently. Sharing or moving the handle between threads adds no access the region does not
// already tolerate from the peer.
unsafe impl Send for ShmRegion {}
// SAFETY: as for Send.
unsafe impl Sync for ShmRegion {}

impl ShmRegion {
    /// Maps `len` bytes of `fd` from offset 0, shared and writable (a packet socket's rings, a
    /// memfd). The region holds the mapping until dropped. The whole mapping is faulted in now
    /// (`MAP_POPULATE`): a ring's first lap would otherwise take a page fault every 4 KiB on the
    /// data path — on the lab's virtual machines several microseconds each, enough to fill a
    /// 4,096-slot memif ring during a trial's first thousands of frames (docs/BENCHMARKS.md §14).
    pub fn map(fd: RawFd, len: usize) -> io::Result<ShmRegion> {
        Self::mmap(fd, len, libc::MAP_SHARED | libc::MAP_POPULATE)
    }

    /// Maps `len` bytes of `fd`, a file this process has just created (all zero), and faults its
    /// pages in one at a time by writing a zero to each: the same pages as [`ShmRegion::map`]
    /// resident, without `MAP_POPULATE`'s hold of the address space's lock for the whole region,
    /// during which another thread's `mmap`, `munmap` or `brk` (a `malloc` growing its arena)
    /// would wait: the memif setup thread builds regions while the worker runs. A fault here
    /// takes the lock per page (per area, on kernels with per-VMA locks).
    pub fn map_fresh(fd: RawFd, len: usize) -> io::Result<ShmRegion> {
        let r = Self::mmap(fd, len, libc::MAP_SHARED)?;
        let page = 4096;
        for at in (0..len).step_by(page) {
            r.write_from(at, &[0]);
        }
        Ok(r)
    }

    /// `len` bytes of fresh zeroed anonymous memory, for tests and simulated peers.
    pub fn anonymous(len: usize) -> io::Result<ShmRegion> {
        Self::mmap(-1, len, libc::MAP_SHARED | libc::MAP_ANONYMOUS)
    }

    fn mmap(fd: RawFd, len: usize, flags: libc::c_int) -> io::Result<ShmRegion> {
        if len == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "shared memory region of 0 bytes",
            ));
        }
        // SAFETY: a new mapping chosen by the kernel (no fixed address), so no existing memory is
        // affected; the result is checked before use and unmapped once, in Drop.
        let base = unsafe {
            libc::mmap(
                ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                fd,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(ShmRegion {
            base: base.cast(),
            len,
        })
    }

    /// Bytes in the region.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the region is empty (never: a region has at least one byte).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Address of `off` if `size` bytes from there lie inside the region and `off` is a multiple
    /// of `align` (a power of two; the region is page-aligned, so offsets and addresses agree).
    #[inline]
    fn at(&self, off: usize, size: usize, align: usize) -> Option<*mut u8> {
        let end = off.checked_add(size)?;
        (end <= self.len && off & (align - 1) == 0).then(|| self.base.wrapping_add(off))
    }

    /// The byte at `off`.
    #[inline]
    pub fn read_u8(&self, off: usize) -> Option<u8> {
        let p = self.at(off, 1, 1)?;
        // SAFETY: inside the region (checked by `at`); volatile because the peer may write it.
        Some(unsafe { ptr::read_volatile(p) })
    }

    /// The native-endian `u16` at `off` (2-aligned).
    #[inline]
    pub fn read_u16(&self, off: usize) -> Option<u16> {
        let p = self.at(off, 2, 2)?;
        // SAFETY: 2 bytes inside the region, 2-aligned (checked by `at`); volatile as above.
        Some(unsafe { ptr::read_volatile(p.cast::<u16>()) })
    }

    /// The native-endian `u32` at `off` (4-aligned).
    #[inline]
    pub fn read_u32(&self, off: usize) -> Option<u32> {
        let p = self.at(off, 4, 4)?;
        // SAFETY: 4 bytes inside the region, 4-aligned (checked by `at`); volatile as above.
        Some(unsafe { ptr::read_volatile(p.cast::<u32>()) })
    }

    /// Writes the native-endian `u32` `v` at `off` (4-aligned); false (nothing written) if outside.
    #[inline]
    pub fn write_u32(&self, off: usize, v: u32) -> bool {
        let Some(p) = self.at(off, 4, 4) else {
            return false;
        };
        // SAFETY: 4 bytes inside the region, 4-aligned (checked by `at`); volatile because the
        // peer reads it.
        unsafe { ptr::write_volatile(p.cast::<u32>(), v) };
        true
    }

    /// Writes the native-endian `u16` `v` at `off` (2-aligned); false (nothing written) if outside.
    #[inline]
    pub fn write_u16(&self, off: usize, v: u16) -> bool {
        let Some(p) = self.at(off, 2, 2) else {
            return false;
        };
        // SAFETY: 2 bytes inside the region, 2-aligned (checked by `at`); volatile because the
        // peer reads it.
        unsafe { ptr::write_volatile(p.cast::<u16>(), v) };
        true
    }

    /// Loads the ring index at `off` atomically with `order` (memif's `head`/`tail`: acquire
    /// before reading what the peer published, relaxed for our own index). `None` if outside or
    /// unaligned.
    #[inline]
    pub fn load_u16(&self, off: usize, order: Ordering) -> Option<u16> {
        let p = self.at(off, 2, 2)?;
        // SAFETY: an aligned u16 inside the live mapping (checked by `at`); ring indexes are only
        // ever accessed atomically, by the peer and by us.
        Some(unsafe { AtomicU16::from_ptr(p.cast()) }.load(order))
    }

    /// Stores the ring index `v` at `off` atomically with `order` (release to publish descriptors
    /// written before it). False (nothing written) if outside or unaligned.
    #[inline]
    pub fn store_u16(&self, off: usize, v: u16, order: Ordering) -> bool {
        let Some(p) = self.at(off, 2, 2) else {
            return false;
        };
        // SAFETY: as in `load_u16`.
        unsafe { AtomicU16::from_ptr(p.cast()) }.store(v, order);
        true
    }

    /// Loads the status word at `off` with acquire ordering: what the peer wrote before handing
    /// a block or slot over is visible after it. `None` if outside or unaligned.
    #[inline]
    pub fn load_acquire_u32(&self, off: usize) -> Option<u32> {
        let p = self.at(off, 4, 4)?;
        // SAFETY: an aligned u32 inside the live mapping (checked by `at`); status words are only
        // ever accessed atomically, by the peer and by us.
        Some(unsafe { AtomicU32::from_ptr(p.cast()) }.load(Ordering::Acquire))
    }

    /// Stores the status word `v` at `off` with release ordering: our writes to the block or slot
    /// happen before the hand-over. False (nothing written) if outside or unaligned.
    #[inline]
    pub fn store_release_u32(&self, off: usize, v: u32) -> bool {
        let Some(p) = self.at(off, 4, 4) else {
            return false;
        };
        // SAFETY: as in `load_acquire_u32`.
        unsafe { AtomicU32::from_ptr(p.cast()) }.store(v, Ordering::Release);
        true
    }

    /// Copies `dst.len()` bytes from `off` into `dst`; false (nothing copied) if they are not all
    /// inside the region. Use it on a range the peer does not write meanwhile (ring protocol).
    #[inline]
    pub fn read_into(&self, off: usize, dst: &mut [u8]) -> bool {
        let Some(p) = self.at(off, dst.len(), 1) else {
            return false;
        };
        // SAFETY: `dst.len()` bytes inside the region (checked by `at`); `dst` is process-private
        // memory, so the ranges do not overlap.
        unsafe { ptr::copy_nonoverlapping(p, dst.as_mut_ptr(), dst.len()) };
        true
    }

    /// Copies `src` to `off`; false (nothing copied) if the range is not all inside the region.
    #[inline]
    pub fn write_from(&self, off: usize, src: &[u8]) -> bool {
        let Some(p) = self.at(off, src.len(), 1) else {
            return false;
        };
        // SAFETY: `src.len()` bytes inside the region (checked by `at`); `src` is process-private
        // memory, so the ranges do not overlap.
        unsafe { ptr::copy_nonoverlapping(src.as_ptr(), p, src.len()) };
        true
    }
}

impl Drop for ShmRegion {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` are exactly what a successful mmap returned, unmapped once here; the
        // region hands out no pointers or references that could outlive it.
        unsafe {
            libc::munmap(self.base.cast(), self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accessors_stay_inside_the_region_and_round_trip() {
        let r = ShmRegion::anonymous(8192).unwrap();
        assert_eq!(r.len(), 8192);
        assert!(r.write_u32(8188, 0xdead_beef));
        assert_eq!(r.read_u32(8188), Some(0xdead_beef));
        let low = if cfg!(target_endian = "little") {
            0xbeef
        } else {
            0xdead
        };
        assert_eq!(r.read_u16(8188), Some(low));
        assert!(r.store_release_u32(16, 7));
        assert_eq!(r.load_acquire_u32(16), Some(7));
        assert!(r.write_from(100, b"hello"));
        let mut b = [0u8; 5];
        assert!(r.read_into(100, &mut b));
        assert_eq!(&b, b"hello");
        assert_eq!(r.read_u8(104), Some(b'o'));
        // Outside, straddling the end, overflowing, unaligned: refused, nothing touched.
        assert_eq!(r.read_u32(8192), None);
        assert_eq!(r.read_u32(8190), None);
        assert_eq!(r.read_u32(usize::MAX - 1), None);
        assert_eq!(r.read_u32(2), None);
        assert_eq!(r.read_u16(1), None);
        assert_eq!(r.read_u8(8192), None);
        assert!(!r.write_u32(8190, 1));
        assert!(!r.store_release_u32(8192, 1));
        assert_eq!(r.load_acquire_u32(3), None);
        assert!(!r.write_from(8190, b"abc"));
        assert!(!r.read_into(usize::MAX, &mut b));
        assert!(r.write_u16(8190, 0x1234));
        assert_eq!(r.read_u16(8190), Some(0x1234));
        assert!(r.store_u16(6, 9, Ordering::Release));
        assert_eq!(r.load_u16(6, Ordering::Acquire), Some(9));
        assert!(!r.write_u16(8191, 1));
        assert!(!r.store_u16(8192, 1, Ordering::Relaxed));
        assert_eq!(r.load_u16(5, Ordering::Relaxed), None);
        assert!(ShmRegion::anonymous(0).is_err());
    }
}
