//! A large table in the debug profile: 100,000 IPv4 and IPv6 routes (the benchmarks' route sets,
//! `benches/routes.rs`) build, every destination of the spread agrees with a per-length hash
//! reference, the memory per route stays within its bound, and in-place removal of 2,000 routes
//! gives the same answers as a fresh build. Build time is printed, not asserted (the machine is
//! shared); the 1M-route figures come from `examples/fib_scale.rs` in release (BENCHMARKS.md).

use std::collections::HashMap;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::Instant;

use vecswitch_fib::{Ip4Rib, Ip6Rib};

#[path = "../benches/routes.rs"]
mod routes;

const N: usize = 100_000;

#[test]
fn ipv4_100k_routes() {
    let routes = routes::v4_routes(N);
    let t = Instant::now();
    let mut rib = Ip4Rib::new();
    for (i, &(a, len)) in routes.iter().enumerate() {
        rib.add(Ipv4Addr::from(a), len, &routes::next_hops(i))
            .unwrap();
    }
    let mut fib = rib.build();
    let s = fib.stats();
    eprintln!(
        "{N} IPv4 routes: add + build {:.2} s (debug), {s:?}",
        t.elapsed().as_secs_f64()
    );
    assert_eq!(s.routes, N);
    // 1 MiB top level + 24 B nodes + 4 B leaves; for this spread < 2 nodes per route.
    assert!(
        s.trie_bytes < 1_048_576 + N * 60,
        "{} trie bytes for {N} routes",
        s.trie_bytes
    );

    let reference: HashMap<(u32, u8), usize> =
        routes.iter().enumerate().map(|(i, &r)| (r, i)).collect();
    let lpm = |reference: &HashMap<(u32, u8), usize>, d: u32, h: u32| {
        (0..=32u8).rev().find_map(|len| {
            let m = if len == 0 { 0 } else { u32::MAX << (32 - len) };
            reference.get(&(d & m, len)).map(|&i| {
                let nhs = routes::next_hops(i);
                nhs[(h % nhs.len() as u32) as usize]
            })
        })
    };
    let dsts = routes::v4_dsts(&routes);
    let hashes: Vec<u32> = (0..dsts.len() as u32)
        .map(|i| i.wrapping_mul(0x9e37_79b9))
        .collect();
    let mut out = vec![None; dsts.len()];
    fib.lookup_batch(&dsts, &hashes, &mut out);
    for i in 0..dsts.len() {
        assert_eq!(
            out[i],
            lpm(&reference, dsts[i], hashes[i]),
            "dst {}",
            Ipv4Addr::from(dsts[i])
        );
    }

    let mut reference = reference;
    for &(a, len) in routes.iter().step_by(50) {
        fib.remove(Ipv4Addr::from(a), len).unwrap();
        rib.remove(Ipv4Addr::from(a), len).unwrap();
        reference.remove(&(a, len));
    }
    let fresh = rib.build();
    let mut out2 = vec![None; dsts.len()];
    fresh.lookup_batch(&dsts, &hashes, &mut out2);
    fib.lookup_batch(&dsts, &hashes, &mut out);
    assert_eq!(out, out2, "in place and fresh build differ");
    for i in (0..dsts.len()).step_by(7) {
        assert_eq!(
            out[i],
            lpm(&reference, dsts[i], hashes[i]),
            "dst {}",
            Ipv4Addr::from(dsts[i])
        );
    }
}

#[test]
fn ipv6_100k_routes() {
    let routes = routes::v6_routes(N);
    let t = Instant::now();
    let mut rib = Ip6Rib::new();
    for (i, &(a, len)) in routes.iter().enumerate() {
        rib.add(Ipv6Addr::from(a), len, &routes::next_hops(i))
            .unwrap();
    }
    let fib = rib.build();
    let s = fib.stats();
    eprintln!(
        "{N} IPv6 routes: add + build {:.2} s (debug), {s:?}",
        t.elapsed().as_secs_f64()
    );
    assert!(
        s.trie_bytes < 1_048_576 + N * 400,
        "{} trie bytes for {N} routes",
        s.trie_bytes
    );
    let reference: HashMap<(u128, u8), usize> =
        routes.iter().enumerate().map(|(i, &r)| (r, i)).collect();
    let dsts = routes::v6_dsts(&routes);
    let mut out = vec![None; dsts.len()];
    fib.lookup_batch(&dsts, &vec![0; dsts.len()], &mut out);
    for (i, &d) in dsts.iter().enumerate().step_by(3) {
        let want = (0..=128u8).rev().find_map(|len| {
            let m = if len == 0 {
                0
            } else {
                u128::MAX << (128 - len as u32)
            };
            reference
                .get(&(d & m, len))
                .map(|&i| routes::next_hops(i)[0])
        });
        assert_eq!(out[i], want, "dst {}", Ipv6Addr::from(d));
    }
}
