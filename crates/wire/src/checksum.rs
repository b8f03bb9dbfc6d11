//! The Internet checksum (RFC 1071): sums over byte slices, pseudo-header sums for UDP/TCP/ICMPv6
//! over IPv4 (RFC 768, RFC 9293 §3.1) and IPv6 (RFC 8200 §8.1), and incremental update after a field
//! changes (RFC 1624 eqn. 3).
//!
//! Vocabulary: a *sum* is the folded 16-bit one's-complement sum of some words (not complemented);
//! a *checksum* is the complement of the sum of everything it covers. A region is valid when the
//! sum over it, checksum field included, is `0xffff` ([`verify`]).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Fold a wide accumulator of 16-bit words into a 16-bit one's-complement sum (end-around carry).
#[inline]
pub const fn fold(mut acc: u64) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// One's-complement sum of `data` taken as big-endian 16-bit words; an odd final byte is padded
/// with a zero byte (RFC 1071 §4.1).
#[inline]
pub fn sum(data: &[u8]) -> u16 {
    // Adding 64-bit big-endian words into a wide accumulator and folding at the end gives the same
    // result as adding 16-bit words: folding is arithmetic modulo 0xffff, and 2^16 ≡ 1 (RFC 1071
    // §2(B), "parallel summation"). A u128 accumulator cannot overflow for any slice length.
    let mut acc: u128 = 0;
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        acc += u128::from(u64::from_be_bytes([
            c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7],
        ]));
    }
    let rest = chunks.remainder();
    let mut tail = [0u8; 8];
    tail[..rest.len()].copy_from_slice(rest);
    acc += u128::from(u64::from_be_bytes(tail));
    // 2^64 ≡ 1 (mod 0xffff): add the high half to the low half with an end-around carry. When the
    // add carries, the wrapped sum is at most 2^64 − 2, so adding the carry cannot overflow again.
    let (x, carry) = (acc as u64).overflowing_add((acc >> 64) as u64);
    let x = x + u64::from(carry);
    fold((x & 0xffff_ffff) + (x >> 32))
}

/// One's-complement addition of two sums.
#[inline]
pub const fn add(a: u16, b: u16) -> u16 {
    fold(a as u64 + b as u64)
}

/// One's-complement sum of several sums.
#[inline]
pub fn combine(sums: &[u16]) -> u16 {
    fold(sums.iter().map(|&s| u64::from(s)).sum())
}

/// The checksum of `data`: the complement of its sum (RFC 1071). Write this into a zeroed checksum
/// field.
#[inline]
pub fn checksum(data: &[u8]) -> u16 {
    !sum(data)
}

/// True when the sum over `data` (its checksum field included) is `0xffff`, i.e. the checksum verifies.
#[inline]
pub fn verify(data: &[u8]) -> bool {
    sum(data) == 0xffff
}

/// Sum of the IPv4 pseudo header: source, destination, zero + protocol, upper-layer length
/// (RFC 768, RFC 9293 §3.1).
#[inline]
pub fn pseudo_header_v4(src: &Ipv4Addr, dst: &Ipv4Addr, protocol: u8, length: u32) -> u16 {
    let s = src.octets();
    let d = dst.octets();
    fold(
        u64::from(u32::from_be_bytes(s))
            + u64::from(u32::from_be_bytes(d))
            + u64::from(protocol)
            + u64::from(length),
    )
}

/// Sum of the IPv6 pseudo header: source, destination, 32-bit upper-layer length, zeros + next
/// header (RFC 8200 §8.1).
#[inline]
pub fn pseudo_header_v6(src: &Ipv6Addr, dst: &Ipv6Addr, next_header: u8, length: u32) -> u16 {
    let s = u128::from_be_bytes(src.octets());
    let d = u128::from_be_bytes(dst.octets());
    let words = |x: u128| {
        u64::from(x as u32)
            + u64::from((x >> 32) as u32)
            + u64::from((x >> 64) as u32)
            + u64::from((x >> 96) as u32)
    };
    fold(words(s) + words(d) + u64::from(next_header) + u64::from(length))
}

/// Sum of the pseudo header for either family. The IPv4 and IPv6 layouts have the same
/// one's-complement sum for the same fields (the extra zero bytes add nothing), so a mixed pair is
/// summed the same way — it is meaningless but does not panic.
#[inline]
pub fn pseudo_header(src: &IpAddr, dst: &IpAddr, protocol: u8, length: u32) -> u16 {
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => pseudo_header_v4(s, d, protocol, length),
        (IpAddr::V6(s), IpAddr::V6(d)) => pseudo_header_v6(s, d, protocol, length),
        _ => {
            let a = match src {
                IpAddr::V4(a) => sum(&a.octets()),
                IpAddr::V6(a) => sum(&a.octets()),
            };
            let b = match dst {
                IpAddr::V4(a) => sum(&a.octets()),
                IpAddr::V6(a) => sum(&a.octets()),
            };
            fold(u64::from(a) + u64::from(b) + u64::from(protocol) + u64::from(length))
        }
    }
}

/// Incrementally update checksum `hc` after a 16-bit word changed from `old` to `new`
/// (RFC 1624 eqn. 3: `HC' = ~(~HC + ~m + m')`).
///
/// The result equals a full recomputation, except when the covered data becomes all zeros: then a
/// full recomputation gives `0xffff` and this gives `0x0000`, the other representation of zero (RFC
/// 1624 §3). Real headers (IPv4 has version 4, UDP/TCP have the protocol in the pseudo header) never
/// sum to zero.
#[inline]
pub const fn update16(hc: u16, old: u16, new: u16) -> u16 {
    !fold(!hc as u64 + !old as u64 + new as u64)
}

/// Incrementally update checksum `hc` after a 32-bit field (e.g. an IPv4 address) aligned on a
/// 16-bit boundary changed from `old` to `new` (RFC 1624 eqn. 3 applied to both halves at once).
#[inline]
pub const fn update32(hc: u16, old: u32, new: u32) -> u16 {
    let m = !old;
    !fold(
        !hc as u64
            + (m >> 16) as u64
            + (m & 0xffff) as u64
            + (new >> 16) as u64
            + (new & 0xffff) as u64,
    )
}

/// Incrementally update checksum `hc` after a 16-bit-aligned field changed from `old` to `new`
/// (any even length, e.g. an IPv6 address). Slices of different or odd lengths are summed with the
/// RFC 1071 zero padding, which is what a field of that length contributes.
#[inline]
pub fn update_bytes(hc: u16, old: &[u8], new: &[u8]) -> u16 {
    !fold(u64::from(!hc) + u64::from(!sum(old)) + u64::from(sum(new)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Straightforward RFC 1071 reference: 16-bit words, end-around carry after every add.
    fn reference_sum(data: &[u8]) -> u16 {
        let mut s: u32 = 0;
        for pair in data.chunks(2) {
            let w = u32::from(pair[0]) << 8 | u32::from(*pair.get(1).unwrap_or(&0));
            s += w;
            s = (s & 0xffff) + (s >> 16);
        }
        s as u16
    }

    #[test]
    fn rfc1071_example() {
        // RFC 1071 §3: bytes 00 01 f2 03 f4 f5 f6 f7 sum to 0xddf2.
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(sum(&data), 0xddf2);
        assert_eq!(checksum(&data), !0xddf2);
    }

    #[test]
    fn known_ipv4_header_checksum() {
        // A commonly cited IPv4 header with checksum 0xb861.
        let hdr = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(checksum(&hdr), 0xb861);
        let mut with = hdr;
        with[10..12].copy_from_slice(&0xb861u16.to_be_bytes());
        assert!(verify(&with));
        with[3] ^= 1;
        assert!(!verify(&with));
    }

    #[test]
    fn wide_accumulator_folds_correctly() {
        // All-ones words drive the 64-bit halves to their limits; the reference agrees.
        for n in [8usize, 16, 24, 1500, 9000, 65536] {
            let ff = vec![0xffu8; n];
            assert_eq!(sum(&ff), reference_sum(&ff), "{n} bytes of 0xff");
            let mut mixed = vec![0xffu8; n];
            mixed[n - 1] = 0xfe;
            assert_eq!(sum(&mixed), reference_sum(&mixed), "{n} bytes, last 0xfe");
        }
    }

    #[test]
    fn odd_length_pads_with_zero() {
        assert_eq!(sum(&[0x12]), 0x1200);
        assert_eq!(sum(&[0x12, 0x34, 0x56]), 0x1234 + 0x5600);
    }

    #[test]
    fn pseudo_header_matches_explicit_layouts() {
        let s4 = Ipv4Addr::new(10, 0, 0, 1);
        let d4 = Ipv4Addr::new(192, 168, 1, 200);
        let mut v4 = Vec::new();
        v4.extend_from_slice(&s4.octets());
        v4.extend_from_slice(&d4.octets());
        v4.extend_from_slice(&[0, 17]);
        v4.extend_from_slice(&1234u16.to_be_bytes());
        assert_eq!(pseudo_header_v4(&s4, &d4, 17, 1234), sum(&v4));
        assert_eq!(pseudo_header(&s4.into(), &d4.into(), 17, 1234), sum(&v4));

        let s6: Ipv6Addr = "2001:db8::1".parse().unwrap();
        let d6: Ipv6Addr = "fe80::abcd:ef01:2345:6789".parse().unwrap();
        let mut v6 = Vec::new();
        v6.extend_from_slice(&s6.octets());
        v6.extend_from_slice(&d6.octets());
        v6.extend_from_slice(&70000u32.to_be_bytes());
        v6.extend_from_slice(&[0, 0, 0, 58]);
        assert_eq!(pseudo_header_v6(&s6, &d6, 58, 70000), sum(&v6));
        assert_eq!(pseudo_header(&s6.into(), &d6.into(), 58, 70000), sum(&v6));
    }

    fn full(data: &[u8]) -> u16 {
        checksum(data)
    }

    /// Incremental and full results agree, allowing only the two representations of zero when
    /// the new data is all zeros (see `update16`).
    fn assert_same(incr: u16, new_data: &[u8]) {
        let f = full(new_data);
        if new_data.iter().all(|&b| b == 0) {
            assert!(incr == 0 || incr == 0xffff, "incr {incr:#x}");
        } else {
            assert_eq!(incr, f);
        }
    }

    proptest! {
        #[test]
        fn fast_sum_matches_reference(data in proptest::collection::vec(any::<u8>(), 0..2000)) {
            prop_assert_eq!(sum(&data), reference_sum(&data));
        }

        #[test]
        fn update16_matches_full_recomputation(
            mut data in proptest::collection::vec(any::<u8>(), 2..100),
            idx in any::<prop::sample::Index>(),
            new in any::<u16>(),
        ) {
            let words = data.len() / 2;
            let at = idx.index(words) * 2;
            let hc = full(&data);
            let old = u16::from_be_bytes([data[at], data[at + 1]]);
            data[at..at + 2].copy_from_slice(&new.to_be_bytes());
            assert_same(update16(hc, old, new), &data);
        }

        #[test]
        fn update32_matches_full_recomputation(
            mut data in proptest::collection::vec(any::<u8>(), 4..100),
            idx in any::<prop::sample::Index>(),
            new in any::<u32>(),
        ) {
            // Any 16-bit-aligned position, as IPv4 addresses sit at offsets 12 and 16.
            let at = idx.index((data.len() - 4) / 2 + 1) * 2;
            let hc = full(&data);
            let old = u32::from_be_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]]);
            data[at..at + 4].copy_from_slice(&new.to_be_bytes());
            assert_same(update32(hc, old, new), &data);
        }

        #[test]
        fn update_bytes_matches_full_recomputation(
            mut data in proptest::collection::vec(any::<u8>(), 16..120),
            idx in any::<prop::sample::Index>(),
            new in any::<[u8; 16]>(),
        ) {
            let at = idx.index((data.len() - 16) / 2 + 1) * 2;
            let hc = full(&data);
            let old: Vec<u8> = data[at..at + 16].to_vec();
            data[at..at + 16].copy_from_slice(&new);
            assert_same(update_bytes(hc, &old, &new), &data);
        }

        #[test]
        fn checksum_then_verify(mut data in proptest::collection::vec(any::<u8>(), 2..100)) {
            // Zero a checksum field at the start, fill it, verify.
            data[0] = 0;
            data[1] = 0;
            let c = checksum(&data);
            data[0..2].copy_from_slice(&c.to_be_bytes());
            prop_assert!(verify(&data));
        }
    }
}
