//! [`prefetch_read`]: a software prefetch of the cache line holding a value, for the staged
//! table lookups (issue 10 item 5: the MAC table's buckets, the FIB's top level and nodes), as
//! VPP's `clib_prefetch_load` / `CLIB_PREFETCH` do.
//!
//! Why here, with `unsafe`: on x86_64 the instruction is `core::arch::x86_64::_mm_prefetch`, a
//! safe function marked `#[target_feature(enable = "sse")]`. rustc 1.95 lets safe code call such a
//! function only from a function that is itself `#[target_feature(enable = "sse")]` — "the sse
//! target feature being enabled in the build configuration does not remove the requirement"
//! (E0133, checked with `-C target-cpu=x86-64-v2`), and the callers here are trait methods
//! (`Node::process`) and generic code that cannot carry the attribute. `std::hint::prefetch_read`
//! is nightly-only (`hint_prefetch`). So one `unsafe` block is needed, and the project allows
//! `unsafe` in the buffer pool's crate (DESIGN.md; docs/ARCHITECTURE.md "Safety"), behind a safe
//! function that takes a *reference*: the callers stay `#![forbid(unsafe_code)]`.
//!
//! A plain load kept alive by `black_box` (what the staged lookups did before) also starts the
//! miss, but it holds a reorder-buffer entry until its line arrives; a prefetch retires at once,
//! so a whole stage's misses can be in flight together.

/// Asks the CPU to bring the cache line holding `*r` into all cache levels (`_MM_HINT_T0`) for a
/// read soon. A hint: it changes no value and no result, only timing. A no-op on targets other
/// than x86_64.
#[inline(always)]
pub fn prefetch_read<T: ?Sized>(r: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: the only obligation `_mm_prefetch` carries is its `#[target_feature(enable =
        // "sse")]`: the CPU must have SSE. SSE (and SSE2) is part of the x86_64 baseline — every
        // x86_64 target enables it, `cfg!(target_feature = "sse")` is always true there — so the
        // instruction exists. PREFETCHT0 does not access memory architecturally: it never faults
        // (Intel SDM vol. 2, PREFETCHh: "does not affect program behavior"; AMD APM vol. 3, same),
        // never writes, and here the address comes from a live reference `r`, so it points into an
        // allocation the caller may read anyway.
        unsafe { _mm_prefetch::<_MM_HINT_T0>((r as *const T).cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A prefetch changes nothing: every element of a slice (first, last, an odd-sized type
    /// straddling lines) keeps its value, and the code path runs on every target.
    #[test]
    fn prefetch_changes_no_value() {
        let v: Vec<[u8; 13]> = (0..1000u32).map(|i| [i as u8; 13]).collect();
        for x in &v {
            prefetch_read(x);
        }
        prefetch_read(&v[..]);
        assert!(v.iter().enumerate().all(|(i, x)| *x == [i as u8; 13]));
        let zst = ();
        prefetch_read(&zst);
    }
}
