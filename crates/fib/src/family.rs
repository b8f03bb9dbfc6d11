//! The two address families as types, so that one implementation serves both.
//!
//! Inside the crate every prefix is a `u128` *left-aligned* (an IPv4 address is shifted into the
//! top 32 bits), so the build code is written once; the lookup works on the family's own key
//! type (`u32` or `u128`) so that IPv4 pays no 128-bit arithmetic per packet.

use std::fmt::Debug;
use std::hash::Hash;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::trie::TOP_BITS;

mod sealed {
    pub trait Sealed {}
}

/// An address family: [`V4`] or [`V6`]. Sealed.
pub trait Family: sealed::Sealed + Debug + Clone + Copy + Send + Sync + 'static {
    /// The address type of the control API (`Ipv4Addr`, `Ipv6Addr`).
    type Addr: Copy + Debug + Into<IpAddr>;
    /// The key type of the data-plane lookup (`u32`, `u128`), host byte order.
    type Key: Copy + Debug + Eq + Hash + Send + Sync;
    /// Address width in bits.
    const BITS: u8;
    /// "IPv4" or "IPv6", for error messages.
    const NAME: &'static str;
    /// The address, left-aligned in a `u128`.
    fn addr_bits(a: Self::Addr) -> u128;
    /// Back from the left-aligned form.
    fn bits_addr(b: u128) -> Self::Addr;
    /// The key, left-aligned in a `u128`.
    fn key_bits(k: Self::Key) -> u128;
    /// Back from the left-aligned form (the host bits beyond the width are dropped).
    fn bits_key(b: u128) -> Self::Key;
    /// The first [`TOP_BITS`](crate::trie::TOP_BITS) (18) bits of the key (index into the
    /// direct-pointing top level).
    fn top(k: Self::Key) -> usize;
    /// The 6 bits of the key starting at bit `off` (from the most significant bit), padded with
    /// zeros past the end of the address. Requires `off < BITS`.
    fn chunk(k: Self::Key, off: u32) -> u32;
}

/// IPv4: `Addr = Ipv4Addr`, `Key = u32` (host order, `u32::from(addr)`).
#[derive(Debug, Clone, Copy)]
pub struct V4;
/// IPv6: `Addr = Ipv6Addr`, `Key = u128` (host order, `u128::from(addr)`).
#[derive(Debug, Clone, Copy)]
pub struct V6;

impl sealed::Sealed for V4 {}
impl sealed::Sealed for V6 {}

impl Family for V4 {
    type Addr = Ipv4Addr;
    type Key = u32;
    const BITS: u8 = 32;
    const NAME: &'static str = "IPv4";
    fn addr_bits(a: Ipv4Addr) -> u128 {
        (u32::from(a) as u128) << 96
    }
    fn bits_addr(b: u128) -> Ipv4Addr {
        Ipv4Addr::from((b >> 96) as u32)
    }
    fn key_bits(k: u32) -> u128 {
        (k as u128) << 96
    }
    fn bits_key(b: u128) -> u32 {
        (b >> 96) as u32
    }
    #[inline(always)]
    fn top(k: u32) -> usize {
        (k >> (32 - TOP_BITS)) as usize
    }
    #[inline(always)]
    fn chunk(k: u32, off: u32) -> u32 {
        (k << off) >> 26
    }
}

impl Family for V6 {
    type Addr = Ipv6Addr;
    type Key = u128;
    const BITS: u8 = 128;
    const NAME: &'static str = "IPv6";
    fn addr_bits(a: Ipv6Addr) -> u128 {
        u128::from(a)
    }
    fn bits_addr(b: u128) -> Ipv6Addr {
        Ipv6Addr::from(b)
    }
    fn key_bits(k: u128) -> u128 {
        k
    }
    fn bits_key(b: u128) -> u128 {
        b
    }
    #[inline(always)]
    fn top(k: u128) -> usize {
        (k >> (128 - TOP_BITS)) as usize
    }
    /// From 64-bit halves (cheaper than 128-bit shifts). With an 18-bit top and 6-bit strides
    /// the chunks start at 18 + 6i: the one at bit 60 straddles the halves and takes its last two
    /// bits from the low half (`lo >> 1 >> (63 - off)`, zero unless the chunk straddles).
    #[inline(always)]
    fn chunk(k: u128, off: u32) -> u32 {
        if off < 64 {
            let (hi, lo) = ((k >> 64) as u64, k as u64);
            (((hi << off) | (lo >> 1 >> (63 - off))) >> 58) as u32
        } else {
            ((k as u64) << (off - 64) >> 58) as u32
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trie::STRIDE;

    /// The 64-bit-half `chunk` of every level the trie walks equals the plain 128-bit shift,
    /// including the level that straddles bit 64.
    #[test]
    fn chunks_match_128_bit_shifts() {
        let mut k: u128 = 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210;
        for _ in 0..1000 {
            // xorshift128 step: seeded, deterministic.
            k ^= k << 13;
            k ^= k >> 7;
            k ^= k << 17;
            let mut off = TOP_BITS;
            while off < 128 {
                assert_eq!(
                    V6::chunk(k, off),
                    ((k << off) >> 122) as u32,
                    "{k:#x} at {off}"
                );
                off += STRIDE;
            }
            let k4 = (k >> 64) as u32;
            let mut off = TOP_BITS;
            while off < 32 {
                let expect = ((u64::from(k4) << (32 + off)) >> 58) as u32;
                assert_eq!(V4::chunk(k4, off), expect, "{k4:#x} at {off}");
                off += STRIDE;
            }
            assert_eq!(V6::top(k), (k >> 110) as usize);
            assert_eq!(V4::top(k4), (k4 >> 14) as usize);
        }
    }
}
