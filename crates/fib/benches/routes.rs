//! Route sets and destinations for the FIB benchmarks (shared by `benches/lookup.rs` and
//! `examples/fib_scale.rs`). Seeded, so every run measures the same table.
//!
//! - IPv4: N distinct prefixes in 1.0.0.0–223.255.255.255 with a BGP-like length mix (about
//!   55 % /24, 25 % /19–/23, 10 % /8–/18, 10 % /25–/32). N = 1 is the default route alone.
//! - IPv6: N distinct prefixes under 20,000 random /32 "allocations" in 2000::/3, lengths about
//!   5 % /32, 20 % /33–/47, 50 % /48, 15 % /49–/64, 10 % /65–/128. N = 1 is ::/0 alone.
//! - Destinations: max(N, 65,536) of them, each inside a random route of the set (uniform over
//!   all addresses for N = 1), shuffled — "traffic spread over the table".

#![allow(dead_code)]

use std::collections::HashSet;

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn mask4(len: u8) -> u32 {
    if len == 0 {
        0
    } else {
        u32::MAX << (32 - len)
    }
}

fn mask6(len: u8) -> u128 {
    if len == 0 {
        0
    } else {
        u128::MAX << (128 - len as u32)
    }
}

/// `n` distinct IPv4 routes `(addr, len)`.
pub fn v4_routes(n: usize) -> Vec<(u32, u8)> {
    if n == 1 {
        return vec![(0, 0)];
    }
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let mut seen = HashSet::with_capacity(n);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let len = match rng.gen_range(0..100) {
            0..=54 => 24,
            55..=79 => rng.gen_range(19..=23),
            80..=89 => rng.gen_range(8..=18),
            _ => rng.gen_range(25..=32),
        };
        let a = rng.gen_range(0x0100_0000u32..0xe000_0000) & mask4(len);
        if seen.insert((a, len)) {
            out.push((a, len));
        }
    }
    out
}

/// `n` distinct IPv6 routes `(addr, len)`.
pub fn v6_routes(n: usize) -> Vec<(u128, u8)> {
    if n == 1 {
        return vec![(0, 0)];
    }
    let mut rng = ChaCha8Rng::seed_from_u64(6);
    let allocations: Vec<u128> = (0..20_000)
        .map(|_| (0x2000_0000u128 | rng.gen_range(0..0x2000_0000u128)) << 96)
        .collect();
    let mut seen = HashSet::with_capacity(n);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let len = match rng.gen_range(0..100) {
            0..=4 => 32,
            5..=24 => rng.gen_range(33..=47),
            25..=74 => 48,
            75..=89 => rng.gen_range(49..=64),
            _ => rng.gen_range(65..=128),
        };
        let alloc = allocations[rng.gen_range(0..allocations.len())];
        let a = (alloc | (rng.gen::<u128>() >> 32)) & mask6(len);
        if seen.insert((a, len)) {
            out.push((a, len));
        }
    }
    out
}

/// Destinations spread over the IPv4 routes.
pub fn v4_dsts(routes: &[(u32, u8)]) -> Vec<u32> {
    let mut rng = ChaCha8Rng::seed_from_u64(44);
    let mut d: Vec<u32> = (0..routes.len().max(65_536))
        .map(|i| {
            let (a, len) = routes[if i < routes.len() {
                i
            } else {
                rng.gen_range(0..routes.len())
            }];
            a | (rng.gen::<u32>() & !mask4(len))
        })
        .collect();
    d.shuffle(&mut rng);
    d
}

/// Destinations spread over the IPv6 routes.
pub fn v6_dsts(routes: &[(u128, u8)]) -> Vec<u128> {
    let mut rng = ChaCha8Rng::seed_from_u64(66);
    let mut d: Vec<u128> = (0..routes.len().max(65_536))
        .map(|i| {
            let (a, len) = routes[if i < routes.len() {
                i
            } else {
                rng.gen_range(0..routes.len())
            }];
            a | (rng.gen::<u128>() & !mask6(len))
        })
        .collect();
    d.shuffle(&mut rng);
    d
}

/// Next hop of route number `i`: 64 adjacencies, every 16th route ECMP over 4.
pub fn next_hops(i: usize) -> Vec<u32> {
    let nh = (i % 64) as u32;
    if i.is_multiple_of(16) {
        vec![nh, nh + 64, nh + 128, nh + 192]
    } else {
        vec![nh]
    }
}
