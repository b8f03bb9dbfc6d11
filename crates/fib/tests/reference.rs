//! Differential test against a naive longest-prefix match (a linear scan of the route list):
//! random overlapping prefixes including /0 and the full length, random adds, replaces and
//! removes interleaved with lookups (single and batched), on the incrementally updated FIB and on
//! fresh full builds. Seeded (proptest's deterministic ChaCha RNG); at least 100,000 lookups
//! per family, 0 disagreements.

use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use vecswitch_fib::{Family, Fib, NextHop, Rib, V4, V6};

/// One step of a scenario, in left-aligned `u128` form (both families).
#[derive(Debug, Clone)]
enum Op {
    Add {
        bits: u128,
        len: u8,
        nhs: Vec<NextHop>,
    },
    /// Remove the route at this index (modulo the number of routes), if any.
    Remove(usize),
    /// Look these (destination, flow hash) pairs up; `near` ones are offsets from routes.
    Check(Vec<(u128, bool, u32)>),
}

fn mask(len: u8) -> u128 {
    if len == 0 {
        0
    } else {
        u128::MAX << (128 - len as u32)
    }
}

/// Prefixes cluster around 4 bases so that they overlap; lengths favour the interesting ones.
fn op_strategy(width: u8) -> impl Strategy<Value = Op> {
    let bases = [
        0x0a00_0000_u128 << 96,
        0xc0a8_0100 << 96,
        0xffff_ffff << 96,
        0x2001_0db8 << 96,
    ];
    let len = prop_oneof![
        1 => Just(0u8),
        2 => Just(width),
        2 => width - 8..=width,
        4 => 0..=width,
        2 => (14u8..=26).prop_map(move |l| l.min(width)),
    ];
    let add = (
        0usize..4,
        any::<u128>(),
        len,
        prop::collection::vec(0u32..1000, 1..=8),
    )
        .prop_map(move |(b, noise, len, nhs)| {
            // Keep the base's first bits most of the time by shifting the noise right.
            let bits = (bases[b] ^ (noise >> (noise as u32 % 40))) & mask(len) & mask(width);
            Op::Add { bits, len, nhs }
        });
    let check = prop::collection::vec((any::<u128>(), any::<bool>(), any::<u32>()), 1..40)
        .prop_map(Op::Check);
    prop_oneof![6 => add, 2 => any::<usize>().prop_map(Op::Remove), 4 => check]
}

fn naive(routes: &[(u128, u8, Vec<NextHop>)], dst: u128, hash: u32) -> Option<NextHop> {
    let best = routes
        .iter()
        .filter(|r| dst & mask(r.1) == r.0)
        .max_by_key(|r| r.1)?;
    Some(best.2[(hash % best.2.len() as u32) as usize])
}

fn run<F: Family>(cases: u32, lookups: &AtomicUsize) {
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    let width = F::BITS;
    let strategy = prop::collection::vec(op_strategy(width), 1..120);
    runner
        .run(&strategy, |ops| {
            let mut rib = Rib::<F>::new();
            let mut fib: Fib<F> = rib.build();
            let mut model: Vec<(u128, u8, Vec<NextHop>)> = Vec::new();
            for op in ops {
                match op {
                    Op::Add { bits, len, nhs } => {
                        rib.add(F::bits_addr(bits), len, &nhs).unwrap();
                        fib.add(F::bits_addr(bits), len, &nhs).unwrap();
                        model.retain(|r| (r.0, r.1) != (bits, len));
                        model.push((bits, len, nhs));
                    }
                    Op::Remove(i) => {
                        if !model.is_empty() {
                            let (bits, len, _) = model.remove(i % model.len());
                            rib.remove(F::bits_addr(bits), len).unwrap();
                            fib.remove(F::bits_addr(bits), len).unwrap();
                        }
                    }
                    Op::Check(v) => {
                        prop_assert_eq!(fib.routes(), model.len());
                        let dsts: Vec<u128> = v
                            .iter()
                            .enumerate()
                            .map(|(i, &(a, near, _))| {
                                let d = if near && !model.is_empty() {
                                    // Just inside or just outside a route's range.
                                    let r = &model[i % model.len()];
                                    let span = !mask(r.1);
                                    match a % 4 {
                                        0 => r.0,
                                        1 => r.0 | span,
                                        2 => r.0.wrapping_sub(1 << (128 - width as u32)),
                                        _ => (r.0 | span).wrapping_add(1 << (128 - width as u32)),
                                    }
                                } else {
                                    a
                                };
                                d & mask(width)
                            })
                            .collect();
                        let keys: Vec<F::Key> = dsts.iter().map(|&d| F::bits_key(d)).collect();
                        let hashes: Vec<u32> = v.iter().map(|x| x.2).collect();
                        let mut batch = vec![None; keys.len()];
                        fib.lookup_batch(&keys, &hashes, &mut batch);
                        let fresh = rib.build();
                        for i in 0..keys.len() {
                            let want = naive(&model, dsts[i], hashes[i]);
                            prop_assert_eq!(
                                fib.lookup(keys[i], hashes[i]),
                                want,
                                "dst {:x}",
                                dsts[i]
                            );
                            prop_assert_eq!(batch[i], want, "batch, dst {:x}", dsts[i]);
                            prop_assert_eq!(
                                fresh.lookup(keys[i], hashes[i]),
                                want,
                                "fresh build, dst {:x}",
                                dsts[i]
                            );
                        }
                        lookups.fetch_add(keys.len(), Ordering::Relaxed);
                    }
                }
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn ipv4_matches_naive_lpm() {
    let lookups = AtomicUsize::new(0);
    run::<V4>(300, &lookups);
    let n = lookups.load(Ordering::Relaxed);
    eprintln!("IPv4: {n} lookups (x3: incremental single, batched, fresh build), 0 disagreements");
    assert!(n >= 100_000, "only {n} lookups");
}

#[test]
fn ipv6_matches_naive_lpm() {
    let lookups = AtomicUsize::new(0);
    run::<V6>(300, &lookups);
    let n = lookups.load(Ordering::Relaxed);
    eprintln!("IPv6: {n} lookups (x3: incremental single, batched, fresh build), 0 disagreements");
    assert!(n >= 100_000, "only {n} lookups");
}
