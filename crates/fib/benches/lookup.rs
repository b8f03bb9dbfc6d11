//! Per-lookup cost of the FIB with 1, 2k, 20k, 200k and 1M routes, IPv4 and IPv6, destinations
//! spread over the table (`routes.rs`). One iteration is one `lookup_batch` of a vector of 256
//! destinations (the next 256 of the shuffled destination list each time); criterion reports
//! time per lookup through `Throughput::Elements`. `single` is the same with `lookup` per packet.
//!
//! `cargo bench -p vecswitch-fib --bench lookup`

use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use vecswitch_fib::{Family, Fib, Ip4Rib, Ip6Rib, NextHop};

mod routes;

const SIZES: [usize; 5] = [1, 2_000, 20_000, 200_000, 1_000_000];

struct Cursor<'a, K> {
    dsts: &'a [K],
    at: usize,
}

impl<K> Cursor<'_, K> {
    fn next(&mut self) -> &[K] {
        if self.at + 256 > self.dsts.len() {
            self.at = 0;
        }
        self.at += 256;
        &self.dsts[self.at - 256..self.at]
    }
}

fn bench_family<F: Family>(
    c: &mut Criterion,
    name: &str,
    tables: impl Fn(usize) -> (Fib<F>, Vec<F::Key>),
) {
    let mut g = c.benchmark_group(name);
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    g.throughput(Throughput::Elements(256));
    let hashes: Vec<u32> = (0..256u32).map(|i| i.wrapping_mul(0x9e37_79b9)).collect();
    for n in SIZES {
        let (fib, dsts) = tables(n);
        let mut out: Vec<Option<NextHop>> = vec![None; 256];
        let mut cur = Cursor { dsts: &dsts, at: 0 };
        g.bench_with_input(BenchmarkId::new("batch", n), &n, |b, _| {
            b.iter(|| {
                fib.lookup_batch(cur.next(), &hashes, &mut out);
                out[255]
            })
        });
        let mut cur = Cursor { dsts: &dsts, at: 0 };
        g.bench_with_input(BenchmarkId::new("single", n), &n, |b, _| {
            b.iter(|| {
                let d = cur.next();
                let mut x = 0u32;
                for (k, &h) in d.iter().zip(&hashes) {
                    x = x.wrapping_add(fib.lookup(*k, h).unwrap_or(0));
                }
                x
            })
        });
        // Every destination lies inside a route.
        fib.lookup_batch(&dsts[..256], &hashes, &mut out);
        assert!(
            out.iter().all(Option::is_some),
            "{name}/{n}: a destination without a route"
        );
    }
    g.finish();
}

fn fib(c: &mut Criterion) {
    bench_family(c, "fib4", |n| {
        let routes = routes::v4_routes(n);
        let mut rib = Ip4Rib::new();
        for (i, &(a, len)) in routes.iter().enumerate() {
            rib.add(Ipv4Addr::from(a), len, &routes::next_hops(i))
                .unwrap();
        }
        (rib.build(), routes::v4_dsts(&routes))
    });
    bench_family(c, "fib6", |n| {
        let routes = routes::v6_routes(n);
        let mut rib = Ip6Rib::new();
        for (i, &(a, len)) in routes.iter().enumerate() {
            rib.add(Ipv6Addr::from(a), len, &routes::next_hops(i))
                .unwrap();
        }
        (rib.build(), routes::v6_dsts(&routes))
    });
}

criterion_group!(benches, fib);
criterion_main!(benches);
