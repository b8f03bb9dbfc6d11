//! Tables on huge pages: [`HugeSlice`] (a fixed-length `Box<[T]>`-like owner) and [`HugeVec`] (a
//! growable one) whose memory, when it is at least one [`HUGE_PAGE`], is its own anonymous
//! `mmap`, aligned to 2 MiB and advised `madvise(MADV_HUGEPAGE)` *before* it is first touched, so
//! that the kernel's transparent huge pages (THP) back it with 2 MiB pages.
//!
//! Why (issue 10 item 5, issue 11 "1M sessions ≥ 0.8× of 1k"): the MAC table at 1M entries is
//! 32 MiB, the NAT44 session slab and indexes at 1M sessions ~130 MiB. On 4 KiB pages every
//! lookup of such a table misses the data TLB as well as the caches (a 64-entry L1 dTLB and a
//! 2,048-entry L2 TLB cover 8 MiB of 4 KiB pages), and a page walk is a chain of dependent loads
//! that a software prefetch does not hide. With 2 MiB pages, 32 MiB is 16 TLB entries. On this
//! project's hosts THP is `madvise` (`/sys/kernel/mm/transparent_hugepage/enabled`): the kernel
//! gives 2 MiB pages only to regions that ask for them, which `std`'s allocator never does.
//! DPDK and VPP use hugetlbfs pages for the same reason; THP needs no reservation and no mount.
//!
//! Fallbacks, silent except in [`HugeSlice::memory`]: smaller than [`HUGE_PAGE`] (or zero-sized
//! `T`) → the global allocator (a huge page would waste most of itself); THP `never` → the
//! mapping is not advised (`huge pages: no (THP never)`); `mmap` failing → the global allocator;
//! the environment variable `VECSWITCH_HUGE_PAGES=off` ([`ENV_OFF`]) → the same mapping, not
//! advised (for A/B measurements in one build).
//! Whether the kernel *did* back a region with huge pages (it may not: fragmented memory, defrag
//! off) is read from `/proc/self/smaps` ([`HugeSlice::anon_huge_bytes`]).
//!
//! Only `T: Copy` (no destructor to run, any bit pattern a value of `T` was written with can be
//! copied): every element is written before it can be read, so no "zeroable" promise is needed.
//!
//! `unsafe` here (the buffer crate is where the project allows it, docs/ARCHITECTURE.md
//! "Safety"): the `mmap`/`munmap`/`madvise` calls, the global allocator calls, and the slices
//! made from the pointer; each block says why it is sound.

use std::alloc::Layout;
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::OnceLock;

/// Size (and alignment) of an x86_64 transparent huge page: 2 MiB.
pub const HUGE_PAGE: usize = 2 << 20;

/// The kernel's THP mode (`/sys/kernel/mm/transparent_hugepage/enabled`, the bracketed word).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Thp {
    /// Every large enough anonymous region may get huge pages.
    Always,
    /// Only regions advised `MADV_HUGEPAGE` (this project's hosts).
    Madvise,
    /// No transparent huge pages.
    Never,
    /// The file is missing or unreadable (not Linux, or THP not built in).
    Unknown,
}

/// Environment variable that turns the huge-page advice off for the whole process when set to
/// `off` (the same mappings, not advised: for A/B measurements and for hosts where THP
/// compaction stalls hurt more than TLB misses).
pub const ENV_OFF: &str = "VECSWITCH_HUGE_PAGES";

/// Whether [`ENV_OFF`] is `off` in this process (read once).
fn turned_off() -> bool {
    static OFF: OnceLock<bool> = OnceLock::new();
    *OFF.get_or_init(|| std::env::var(ENV_OFF).is_ok_and(|v| v == "off"))
}

/// The THP mode, read once per process.
pub fn thp_mode() -> Thp {
    static MODE: OnceLock<Thp> = OnceLock::new();
    *MODE.get_or_init(|| {
        match std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled") {
            Ok(s) if s.contains("[always]") => Thp::Always,
            Ok(s) if s.contains("[madvise]") => Thp::Madvise,
            Ok(s) if s.contains("[never]") => Thp::Never,
            _ => Thp::Unknown,
        }
    })
}

/// Where a table's memory is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backing {
    /// The global allocator: smaller than [`HUGE_PAGE`], zero-sized, or `mmap` failed.
    Heap,
    /// Its own 2 MiB-aligned mapping, advised `MADV_HUGEPAGE`.
    Huge,
    /// Its own 2 MiB-aligned mapping, not advised (THP `never` or unknown, or `madvise` refused).
    Mapped,
}

/// What a table's memory is, for `show` output and log lines ([`fmt::Display`]: "huge pages:
/// yes, 32.0 MiB").
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Memory {
    /// Bytes held (a mapping's whole length, 2 MiB multiples).
    pub bytes: u64,
    /// Advised for huge pages (whether the kernel gave them: [`HugeSlice::anon_huge_bytes`]).
    pub huge_pages: bool,
    /// Why not, when not: "smaller than 2 MiB", "THP never", "THP unknown", "mmap failed",
    /// "VECSWITCH_HUGE_PAGES=off".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why_not: Option<String>,
}

impl Memory {
    /// The sum of two tables' memory (huge only if both are).
    pub fn plus(&self, o: &Memory) -> Memory {
        Memory {
            bytes: self.bytes + o.bytes,
            huge_pages: self.huge_pages && o.huge_pages,
            why_not: self.why_not.clone().or_else(|| o.why_not.clone()),
        }
    }
}

impl fmt::Display for Memory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mib = self.bytes as f64 / (1 << 20) as f64;
        match (&self.why_not, self.huge_pages) {
            (_, true) => write!(f, "huge pages: yes, {mib:.1} MiB"),
            (Some(w), false) => write!(f, "huge pages: no ({w}), {mib:.1} MiB"),
            (None, false) => write!(f, "huge pages: no, {mib:.1} MiB"),
        }
    }
}

/// Memory for up to `cap` elements of `T`, uninitialised; freed on drop. The common part of
/// [`HugeSlice`] and [`HugeVec`].
struct RawBuf<T> {
    ptr: NonNull<T>,
    cap: usize,
    /// Length of the own mapping (0: [`Backing::Heap`]).
    mapped: usize,
    backing: Backing,
    /// Why the memory is not advised for huge pages (for [`Memory::why_not`]).
    why_not: Option<&'static str>,
    _owns: PhantomData<T>,
}

#[allow(unsafe_code)]
// SAFETY: a `RawBuf<T>` owns its memory exclusively (no other pointer to it is kept), like a
// `Box<[T]>`; sending it to another thread or sharing `&` to it is as safe as for `T` itself.
unsafe impl<T: Send> Send for RawBuf<T> {}
#[allow(unsafe_code)]
// SAFETY: as above; `&RawBuf` gives only `&T` access.
unsafe impl<T: Sync> Sync for RawBuf<T> {}

impl<T> RawBuf<T> {
    const fn empty() -> RawBuf<T> {
        RawBuf {
            ptr: NonNull::dangling(),
            cap: 0,
            mapped: 0,
            backing: Backing::Heap,
            why_not: Some("empty"),
            _owns: PhantomData,
        }
    }

    /// Room for `cap` elements (see the module doc for where it comes from).
    fn with_capacity(cap: usize) -> RawBuf<T> {
        let bytes = std::mem::size_of::<T>()
            .checked_mul(cap)
            .expect("capacity overflow");
        if bytes == 0 {
            return RawBuf {
                cap,
                ..RawBuf::empty()
            };
        }
        let why_not = if bytes < HUGE_PAGE || std::mem::align_of::<T>() > HUGE_PAGE {
            "smaller than 2 MiB"
        } else {
            match map(bytes) {
                Some((p, mapped, backing, why_not)) => {
                    return RawBuf {
                        ptr: p.cast(),
                        cap,
                        mapped,
                        backing,
                        why_not,
                        _owns: PhantomData,
                    }
                }
                None => "mmap failed",
            }
        };
        let layout = Layout::array::<T>(cap).expect("capacity overflow");
        #[allow(unsafe_code)]
        // SAFETY: `layout` has a non-zero size (`bytes > 0` above).
        let p = unsafe { std::alloc::alloc(layout) };
        let Some(p) = NonNull::new(p) else {
            std::alloc::handle_alloc_error(layout)
        };
        RawBuf {
            ptr: p.cast(),
            cap,
            mapped: 0,
            backing: Backing::Heap,
            why_not: Some(why_not),
            _owns: PhantomData,
        }
    }

    fn memory(&self) -> Memory {
        let bytes = if self.mapped != 0 {
            self.mapped
        } else {
            self.cap * std::mem::size_of::<T>()
        };
        Memory {
            bytes: bytes as u64,
            huge_pages: self.backing == Backing::Huge,
            why_not: self.why_not.map(str::to_string),
        }
    }

    /// Bytes of this memory's mappings that the kernel backs with huge pages (`AnonHugePages`
    /// of the `/proc/self/smaps` entries that overlap it; a neighbouring mapping the kernel
    /// merged with it counts too). `None` where smaps cannot be read.
    fn anon_huge_bytes(&self) -> Option<usize> {
        let bytes = self.cap * std::mem::size_of::<T>();
        if bytes == 0 {
            return Some(0);
        }
        let (lo, hi) = (
            self.ptr.as_ptr() as usize,
            self.ptr.as_ptr() as usize + bytes,
        );
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let mut inside = false;
        let mut total = 0usize;
        for line in smaps.lines() {
            let first = line.split_whitespace().next().unwrap_or("");
            if let Some((a, b)) = first.split_once('-') {
                if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
                {
                    inside = a < hi && lo < b;
                    continue;
                }
            }
            if inside {
                if let Some(kb) = line.strip_prefix("AnonHugePages:") {
                    let kb = kb.trim().trim_end_matches("kB").trim();
                    total += kb.parse::<usize>().ok()? * 1024;
                }
            }
        }
        Some(total)
    }
}

/// An anonymous mapping of at least `bytes`, 2 MiB aligned, advised for huge pages where THP
/// may give them: (start, length, backing, why not huge). `None` if `mmap` fails.
#[allow(unsafe_code)]
fn map(bytes: usize) -> Option<(NonNull<u8>, usize, Backing, Option<&'static str>)> {
    let len = bytes.checked_next_multiple_of(HUGE_PAGE)?;
    let total = len.checked_add(HUGE_PAGE)?;
    // SAFETY: a new private anonymous mapping at an address of the kernel's choosing (null
    // hint, no MAP_FIXED): it cannot overlap or alter any memory Rust knows of.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            total,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return None;
    }
    // Over-allocated by one huge page: trim the head up to the first 2 MiB boundary and the
    // tail after `len`.
    let base = p as usize;
    let start = base.next_multiple_of(HUGE_PAGE);
    let head = start - base;
    let tail = total - head - len;
    // SAFETY: both ranges lie inside the mapping just made (head + len + tail = total), are
    // page-aligned (mmap returns page-aligned memory and HUGE_PAGE is a multiple of the page
    // size), and nothing points into them yet.
    unsafe {
        if head > 0 {
            libc::munmap(p, head);
        }
        if tail > 0 {
            libc::munmap((start + len) as *mut libc::c_void, tail);
        }
    }
    let (backing, why_not) = match thp_mode() {
        _ if turned_off() => (Backing::Mapped, Some("VECSWITCH_HUGE_PAGES=off")),
        Thp::Always | Thp::Madvise => {
            // SAFETY: `start..start + len` is exactly the mapping kept above, owned by the
            // caller-to-be; MADV_HUGEPAGE changes only how the kernel backs it (no content).
            let r = unsafe { libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE) };
            if r == 0 {
                (Backing::Huge, None)
            } else {
                (Backing::Mapped, Some("madvise refused"))
            }
        }
        Thp::Never => (Backing::Mapped, Some("THP never")),
        Thp::Unknown => (Backing::Mapped, Some("THP unknown")),
    };
    Some((NonNull::new(start as *mut u8)?, len, backing, why_not))
}

impl<T> Drop for RawBuf<T> {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        if self.mapped != 0 {
            // SAFETY: `ptr..ptr + mapped` is the mapping `map` made for this buffer and kept;
            // the elements are `Copy` (no destructor) and no reference outlives `self`.
            unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.mapped) };
        } else if self.cap != 0 && std::mem::size_of::<T>() != 0 {
            let layout = Layout::array::<T>(self.cap).expect("valid at allocation");
            // SAFETY: allocated by `std::alloc::alloc` with this same layout in `with_capacity`
            // (heap backing, non-zero size) and not freed before.
            unsafe { std::alloc::dealloc(self.ptr.as_ptr().cast(), layout) };
        }
    }
}

/// A fixed-length slice of `T` on huge pages where it is large enough (module doc): a
/// [`HugeVec`] filled once. Derefs to `[T]`.
pub struct HugeSlice<T: Copy> {
    v: HugeVec<T>,
}

impl<T: Copy> HugeSlice<T> {
    /// `len` copies of `fill`. The memory is advised for huge pages before this first write.
    pub fn new(len: usize, fill: T) -> HugeSlice<T> {
        let mut v = HugeVec::with_capacity(len);
        for _ in 0..len {
            v.push(fill);
        }
        HugeSlice { v }
    }

    /// A copy of `s`.
    pub fn from_slice(s: &[T]) -> HugeSlice<T> {
        HugeSlice {
            v: HugeVec::from_slice(s),
        }
    }

    /// Where the memory is.
    pub fn backing(&self) -> Backing {
        self.v.raw.backing
    }

    /// What the memory is (for `show` and log lines).
    pub fn memory(&self) -> Memory {
        self.v.memory()
    }

    /// Bytes of it the kernel backs with huge pages, from `/proc/self/smaps` (module doc).
    pub fn anon_huge_bytes(&self) -> Option<usize> {
        self.v.anon_huge_bytes()
    }
}

impl<T: Copy> Deref for HugeSlice<T> {
    type Target = [T];
    #[inline(always)]
    fn deref(&self) -> &[T] {
        &self.v
    }
}

impl<T: Copy> DerefMut for HugeSlice<T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.v
    }
}

impl<T: Copy> Clone for HugeSlice<T> {
    fn clone(&self) -> Self {
        HugeSlice::from_slice(self)
    }
}

impl<T: Copy> Default for HugeSlice<T> {
    /// Empty (no memory).
    fn default() -> Self {
        HugeSlice { v: HugeVec::new() }
    }
}

impl<T: Copy> fmt::Debug for HugeSlice<T> {
    /// The length and the memory, not a million elements.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HugeSlice {{ len: {}, {} }}", self.len(), self.memory())
    }
}

/// A growable vector of `T` on huge pages once it is large enough (module doc): grows by
/// doubling into a new allocation (advised before it is touched) and copying. Derefs to `[T]`.
pub struct HugeVec<T: Copy> {
    raw: RawBuf<T>,
    len: usize,
}

impl<T: Copy> HugeVec<T> {
    /// Empty (no memory until the first push).
    pub const fn new() -> HugeVec<T> {
        HugeVec {
            raw: RawBuf::empty(),
            len: 0,
        }
    }

    /// Empty, with room for `cap` elements (advised for huge pages from 2 MiB).
    pub fn with_capacity(cap: usize) -> HugeVec<T> {
        HugeVec {
            raw: RawBuf::with_capacity(cap),
            len: 0,
        }
    }

    /// A copy of `s`, with no spare room.
    pub fn from_slice(s: &[T]) -> HugeVec<T> {
        let raw = RawBuf::<T>::with_capacity(s.len());
        #[allow(unsafe_code)]
        // SAFETY: the buffer has room for `s.len()` elements and is a new allocation, so it
        // does not overlap `s`.
        unsafe {
            std::ptr::copy_nonoverlapping(s.as_ptr(), raw.ptr.as_ptr(), s.len())
        };
        HugeVec { raw, len: s.len() }
    }

    /// Elements it holds without growing.
    pub fn capacity(&self) -> usize {
        self.raw.cap
    }

    /// Appends `v`.
    #[inline]
    pub fn push(&mut self, v: T) {
        if self.len == self.raw.cap {
            self.grow();
        }
        #[allow(unsafe_code)]
        // SAFETY: `len < cap` after the growth: inside the buffer, aligned, not yet written.
        unsafe {
            self.raw.ptr.as_ptr().add(self.len).write(v)
        };
        self.len += 1;
    }

    #[cold]
    fn grow(&mut self) {
        let cap = (self.raw.cap * 2).max(16);
        let new = RawBuf::<T>::with_capacity(cap);
        #[allow(unsafe_code)]
        // SAFETY: the first `len` elements of the old buffer are written; the new one has room
        // for `cap > len` and is a separate allocation.
        unsafe {
            std::ptr::copy_nonoverlapping(self.raw.ptr.as_ptr(), new.ptr.as_ptr(), self.len)
        };
        self.raw = new;
    }

    /// What the memory is (the whole capacity).
    pub fn memory(&self) -> Memory {
        self.raw.memory()
    }

    /// Bytes of it the kernel backs with huge pages (module doc).
    pub fn anon_huge_bytes(&self) -> Option<usize> {
        self.raw.anon_huge_bytes()
    }
}

impl<T: Copy> Deref for HugeVec<T> {
    type Target = [T];
    #[inline(always)]
    #[allow(unsafe_code)]
    fn deref(&self) -> &[T] {
        // SAFETY: `ptr` is non-null, aligned and valid for `cap ≥ len` elements, the first
        // `len` written by `push` or `from_slice` (or copied by `grow`); `&self` borrows the
        // owner.
        unsafe { std::slice::from_raw_parts(self.raw.ptr.as_ptr(), self.len) }
    }
}

impl<T: Copy> DerefMut for HugeVec<T> {
    #[inline(always)]
    #[allow(unsafe_code)]
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`; `&mut self` makes this the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.raw.ptr.as_ptr(), self.len) }
    }
}

impl<T: Copy> Default for HugeVec<T> {
    fn default() -> Self {
        HugeVec::new()
    }
}

impl<T: Copy> Clone for HugeVec<T> {
    fn clone(&self) -> Self {
        HugeVec::from_slice(self)
    }
}

impl<T: Copy> fmt::Debug for HugeVec<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HugeVec {{ len: {}, {} }}", self.len, self.memory())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Virtual memory of this process (VmSize), bytes.
    fn vm_size() -> usize {
        let s = std::fs::read_to_string("/proc/self/status").expect("Linux /proc");
        let line = s
            .lines()
            .find(|l| l.starts_with("VmSize:"))
            .expect("VmSize");
        let kb: usize = line[7..]
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .unwrap();
        kb * 1024
    }

    #[test]
    fn a_large_slice_is_filled_aligned_and_mapped() {
        let n = (4 << 20) / 8 + 3; // a little over 4 MiB of u64
        let mut s = HugeSlice::new(n, 0u64);
        assert_eq!(s.len(), n);
        assert!(s.iter().all(|&x| x == 0), "zeroed");
        assert_eq!(s.as_ptr() as usize % HUGE_PAGE, 0, "2 MiB aligned");
        assert_ne!(s.backing(), Backing::Heap);
        assert_eq!(s.memory().bytes, 6 << 20, "rounded up to whole huge pages");
        s[n - 1] = 7;
        let c = s.clone();
        assert_eq!(c[n - 1], 7);
        assert_eq!(c.iter().filter(|&&x| x == 0).count(), n - 1);
        // Another fill value and an odd-sized element type.
        let t = HugeSlice::new(HUGE_PAGE / 3 + 1, [9u8; 3]);
        assert!(t.iter().all(|x| *x == [9; 3]));
    }

    #[test]
    fn small_and_empty_slices_use_the_heap() {
        let s = HugeSlice::new(100, 5u32);
        assert_eq!(s.backing(), Backing::Heap);
        assert_eq!(&s[..3], &[5, 5, 5]);
        assert_eq!(
            s.memory().to_string(),
            "huge pages: no (smaller than 2 MiB), 0.0 MiB"
        );
        let e: HugeSlice<u64> = HugeSlice::default();
        assert!(e.is_empty());
        let z = HugeSlice::new(10, ());
        assert_eq!(z.len(), 10);
        assert_eq!(HugeSlice::<u8>::new(0, 1).len(), 0);
    }

    /// A hundred 16 MiB tables made and dropped leave the address space where it was (1.6 GiB
    /// if each leaked; other tests running beside this one take far less than the bound).
    #[test]
    fn drop_frees_the_mapping() {
        let before = vm_size();
        for i in 0..100u64 {
            let s = HugeSlice::new((16 << 20) / 8, i);
            assert_eq!(s[12345], i);
            let mut v = HugeVec::new();
            for j in 0..(3 << 20) / 8 {
                v.push(j as u64);
            }
            assert_eq!(v[1000], 1000);
        }
        let after = vm_size();
        assert!(
            after < before + (512 << 20),
            "VmSize grew from {before} to {after} bytes over 100 tables"
        );
    }

    #[test]
    fn a_vec_grows_keeps_its_elements_and_moves_to_huge_pages() {
        let mut v: HugeVec<[u64; 8]> = HugeVec::new();
        assert!(v.is_empty());
        for i in 0..100_000u64 {
            v.push([i; 8]);
        }
        assert_eq!(v.len(), 100_000);
        assert!(v.iter().enumerate().all(|(i, x)| *x == [i as u64; 8]));
        v[5] = [0; 8];
        assert_eq!(v.clone()[5], [0; 8]);
        assert!(v.capacity() >= 100_000);
        // 100,000 × 64 B: past 2 MiB, so the last growth made a mapping.
        assert_eq!(v.as_ptr() as usize % HUGE_PAGE, 0);
    }

    /// A 64 MiB table is backed by huge pages (`AnonHugePages` of its mapping in
    /// /proc/self/smaps) where THP is `madvise` or `always`, as on this project's hosts and CI.
    #[test]
    fn a_64_mib_table_gets_huge_pages() {
        let mode = thp_mode();
        if turned_off() {
            eprintln!("skipped: {ENV_OFF}=off in this test's environment turns huge pages off");
            return;
        }
        if mode == Thp::Never {
            eprintln!("skipped: THP is `never` on this kernel (/sys/kernel/mm/transparent_hugepage/enabled), huge pages cannot be had");
            return;
        }
        assert_ne!(
            mode,
            Thp::Unknown,
            "/sys/kernel/mm/transparent_hugepage/enabled unreadable: a Linux kernel with THP is needed"
        );
        let s = HugeSlice::new((64 << 20) / 8, 1u64);
        assert_eq!(s.backing(), Backing::Huge);
        assert!(s
            .memory()
            .to_string()
            .starts_with("huge pages: yes, 64.0 MiB"));
        let huge = s.anon_huge_bytes().expect("/proc/self/smaps readable");
        // The kernel may fail to find some 2 MiB blocks of free memory; most it must find.
        assert!(
            huge >= 32 << 20,
            "only {huge} bytes of the 64 MiB table on huge pages (THP {mode:?})"
        );
        assert_eq!(s.iter().filter(|&&x| x == 1).count(), s.len());
    }
}
