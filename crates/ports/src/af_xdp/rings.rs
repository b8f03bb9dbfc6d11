//! Memory shared with the kernel: the UMEM (packet chunks) and the four single-producer,
//! single-consumer rings of an AF_XDP socket (Documentation/networking/af_xdp.rst).
//!
//! Every access to that memory is in this file, through volatile copies or atomics, bounds-checked
//! or masked into a region whose size was checked when it was mapped; nothing here hands out a
//! `&[u8]` or `&T` into memory the kernel writes.
//!
//! - [`Mapping`]: one `mmap` (anonymous for the UMEM, of the socket for a ring), unmapped on drop.
//! - [`Umem`]: `chunks` chunks of `chunk_size` bytes; [`Umem::read`] and [`Umem::write`] copy
//!   between a chunk and process memory after checking the range.
//! - [`Ring`]: a ring of [`RingEntry`] values (`u64` chunk addresses for the fill and completion
//!   rings, [`XdpDesc`] for RX and TX). The producer publishes entries with a release store of its
//!   index, the consumer takes them after an acquire load of it, and gives them back with a
//!   release store of its own index: the protocol of the kernel's `xsk_queue.h`.

use std::io;
use std::os::fd::RawFd;
use std::ptr;
use std::sync::atomic::{AtomicU32, Ordering};

use super::sys::{self, XdpDesc, XdpRingOffset};

/// A memory mapping, unmapped when dropped.
#[derive(Debug)]
pub struct Mapping {
    base: *mut u8,
    len: usize,
}

impl Mapping {
    /// `len` bytes of anonymous, zeroed, private memory (the UMEM).
    pub fn anonymous(len: usize) -> io::Result<Mapping> {
        // SAFETY: a fresh anonymous mapping; the result is checked before use.
        let base = unsafe {
            libc::mmap(
                ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapping {
            base: base.cast(),
            len,
        })
    }

    /// The ring of socket `fd` at page offset `pgoff`, `len` bytes.
    fn socket(fd: RawFd, len: usize, pgoff: libc::off_t) -> io::Result<Mapping> {
        // SAFETY: maps a ring the kernel set up on `fd` (af_xdp.rst, "XDP_{RX,TX}_RING");
        // the result is checked before use.
        let base = unsafe {
            libc::mmap(
                ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd,
                pgoff,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapping {
            base: base.cast(),
            len,
        })
    }

    pub fn base(&self) -> *mut u8 {
        self.base
    }

    pub fn size(&self) -> usize {
        self.len
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` are what a successful mmap returned; unmapped once, here; no
        // pointer into the mapping outlives its owner.
        unsafe {
            libc::munmap(self.base.cast(), self.len);
        }
    }
}

/// The UMEM: packet memory registered with the socket, `chunks` chunks of `chunk_size` bytes.
#[derive(Debug)]
pub struct Umem {
    map: Mapping,
}

impl Umem {
    pub fn new(chunks: usize, chunk_size: usize) -> io::Result<Umem> {
        Ok(Umem {
            map: Mapping::anonymous(chunks * chunk_size)?,
        })
    }

    pub fn base(&self) -> *mut u8 {
        self.map.base()
    }

    pub fn size(&self) -> usize {
        self.map.size()
    }

    fn range_ok(&self, addr: u64, len: usize) -> bool {
        usize::try_from(addr)
            .ok()
            .and_then(|a| a.checked_add(len))
            .is_some_and(|end| end <= self.map.size())
    }

    /// Copies `dst.len()` bytes at UMEM offset `addr` into `dst`; false (nothing copied) if the
    /// range is not inside the UMEM. The caller owns the chunk (it came off the RX ring and is
    /// not on the fill ring), so the kernel does not write it meanwhile.
    pub fn read(&self, addr: u64, dst: &mut [u8]) -> bool {
        if !self.range_ok(addr, dst.len()) {
            return false;
        }
        // SAFETY: `addr..addr+len` lies inside the mapping (checked above); `dst` is
        // process-private memory that cannot overlap the UMEM mapping.
        unsafe {
            ptr::copy_nonoverlapping(
                self.map.base().add(addr as usize),
                dst.as_mut_ptr(),
                dst.len(),
            )
        };
        true
    }

    /// Copies `src` to UMEM offset `addr`; false (nothing copied) if it does not fit. The caller
    /// owns the chunk (a free TX chunk, not on the TX ring).
    pub fn write(&self, addr: u64, src: &[u8]) -> bool {
        if !self.range_ok(addr, src.len()) {
            return false;
        }
        // SAFETY: as in `read`, with the roles swapped.
        unsafe {
            ptr::copy_nonoverlapping(src.as_ptr(), self.map.base().add(addr as usize), src.len())
        };
        true
    }
}

/// A plain-old-data ring entry.
///
/// # Safety
///
/// Implementors are `repr(C)` (or primitive) types valid for every bit pattern, whose layout is
/// the kernel's entry layout for the rings they are used with.
pub unsafe trait RingEntry: Copy {}
// SAFETY: a u64 is valid for every bit pattern; it is the fill/completion ring entry.
unsafe impl RingEntry for u64 {}
// SAFETY: `repr(C)` of two integers and a u32, valid for every bit pattern; `struct xdp_desc`.
unsafe impl RingEntry for XdpDesc {}

/// One of the socket's rings (see the module doc).
#[derive(Debug)]
pub struct Ring<T: RingEntry> {
    map: Mapping,
    producer: usize,
    consumer: usize,
    flags: usize,
    desc: usize,
    size: u32,
    /// Our index: the producer's for fill/TX, the consumer's for RX/completion.
    local: u32,
    /// The other side's index as last read.
    cached: u32,
    _entry: core::marker::PhantomData<T>,
}

impl<T: RingEntry> Ring<T> {
    /// Maps the ring of `size` entries at page offset `pgoff` of socket `fd`, whose layout the
    /// kernel gave in `off` (`XDP_MMAP_OFFSETS`). Checks that every offset lies inside the
    /// mapping and is aligned, so that the accessors below stay in bounds.
    pub fn map(
        fd: RawFd,
        pgoff: libc::off_t,
        off: &XdpRingOffset,
        size: u32,
        producer_side: bool,
    ) -> io::Result<Ring<T>> {
        let bad = || io::Error::new(io::ErrorKind::InvalidData, "ring offsets out of range");
        let entry = core::mem::size_of::<T>();
        let len = usize::try_from(off.desc)
            .ok()
            .and_then(|d| d.checked_add(size as usize * entry))
            .ok_or_else(bad)?;
        for (o, n, align) in [
            (off.producer, 4, 4),
            (off.consumer, 4, 4),
            (off.flags, 4, 4),
            (off.desc, size as usize * entry, 8),
        ] {
            let o = usize::try_from(o).map_err(|_| bad())?;
            if o % align != 0 || o + n > len {
                return Err(bad());
            }
        }
        if !size.is_power_of_two() {
            return Err(bad());
        }
        let map = Mapping::socket(fd, len, pgoff)?;
        let mut ring = Ring {
            map,
            producer: off.producer as usize,
            consumer: off.consumer as usize,
            flags: off.flags as usize,
            desc: off.desc as usize,
            size,
            local: 0,
            cached: 0,
            _entry: core::marker::PhantomData,
        };
        if producer_side {
            ring.local = ring.index(ring.producer).load(Ordering::Relaxed);
            ring.cached = ring.index(ring.consumer).load(Ordering::Acquire);
        } else {
            ring.local = ring.index(ring.consumer).load(Ordering::Relaxed);
            ring.cached = ring.index(ring.producer).load(Ordering::Acquire);
        }
        Ok(ring)
    }

    fn index(&self, at: usize) -> &AtomicU32 {
        // SAFETY: `at` is the producer, consumer or flags offset, checked in `map` to be a 4-aligned
        // u32 inside the mapping, which lives as long as `self`; the kernel and we access these
        // words only atomically.
        unsafe { AtomicU32::from_ptr(self.map.base().add(at).cast()) }
    }

    fn slot(&self, i: u32) -> *mut T {
        let i = (i & (self.size - 1)) as usize;
        // `i < size` and `desc + size * size_of::<T>() <= len` (checked in `map`).
        self.map
            .base()
            .wrapping_add(self.desc + i * core::mem::size_of::<T>())
            .cast()
    }

    pub fn size(&self) -> u32 {
        self.size
    }

    /// Whether the kernel asked to be woken up (`XDP_RING_NEED_WAKEUP`) to process this ring.
    pub fn needs_wakeup(&self) -> bool {
        self.index(self.flags).load(Ordering::Relaxed) & sys::XDP_RING_NEED_WAKEUP != 0
    }

    // ---- producer side (fill, TX) ----

    /// How many entries can be produced now (refreshing the consumer index when short of `want`).
    pub fn free(&mut self, want: u32) -> u32 {
        let mut free = self.size - self.local.wrapping_sub(self.cached);
        if free < want {
            self.cached = self.index(self.consumer).load(Ordering::Acquire);
            free = self.size - self.local.wrapping_sub(self.cached);
        }
        free
    }

    /// Writes entry `i` after our producer index (not yet published); `i` < what `free` returned.
    pub fn write(&mut self, i: u32, value: T) {
        // SAFETY: `slot` is inside the ring (masked); the entry is ours: it lies in the free part
        // of the ring (the caller stays within `free`), which the kernel does not read until we
        // publish the producer index.
        unsafe { ptr::write_volatile(self.slot(self.local.wrapping_add(i)), value) }
    }

    /// Publishes `n` written entries to the kernel.
    pub fn submit(&mut self, n: u32) {
        self.local = self.local.wrapping_add(n);
        self.index(self.producer)
            .store(self.local, Ordering::Release);
    }

    /// Our published producer index.
    pub fn produced(&self) -> u32 {
        self.local
    }

    /// The kernel's consumer index now: entries before it have been taken.
    pub fn consumed(&self) -> u32 {
        self.index(self.consumer).load(Ordering::Acquire)
    }

    // ---- consumer side (RX, completion) ----

    /// How many entries, up to `max`, are ready to be read.
    pub fn ready(&mut self, max: u32) -> u32 {
        let mut n = self.cached.wrapping_sub(self.local);
        if n < max {
            self.cached = self.index(self.producer).load(Ordering::Acquire);
            n = self.cached.wrapping_sub(self.local);
        }
        n.min(max).min(self.size)
    }

    /// Reads ready entry `i` (< what `ready` returned).
    pub fn read(&self, i: u32) -> T {
        // SAFETY: `slot` is inside the ring (masked); the kernel published this entry (the
        // acquire load in `ready` orders its write before our read) and does not rewrite it until
        // we release it.
        unsafe { ptr::read_volatile(self.slot(self.local.wrapping_add(i))) }
    }

    /// Gives `n` read entries back to the kernel.
    pub fn release(&mut self, n: u32) {
        self.local = self.local.wrapping_add(n);
        self.index(self.consumer)
            .store(self.local, Ordering::Release);
    }
}

// SAFETY: a ring's raw pointers point into its own mapping, owned by the ring; moving the ring to
// another thread moves sole (process-side) access with it.
unsafe impl<T: RingEntry> Send for Ring<T> {}
// SAFETY: as for Ring: the UMEM mapping is owned by the Umem alone.
unsafe impl Send for Umem {}
