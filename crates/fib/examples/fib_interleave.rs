//! Wall-clock ns per lookup for every table size, measured *interleaved* (round r measures
//! every case once, in turn) so that a loaded machine slows all cases alike; the minimum over
//! the rounds is the least-disturbed figure, the median the typical one.
//!
//! ```sh
//! cargo run --release -p vecswitch-fib --example fib_interleave -- [ROUNDS]
//! ```
//!
//! One sample = 64 vectors of 256 destinations through `lookup_batch` (16,384 lookups), the
//! destinations spread over the table (`benches/routes.rs`, as the criterion bench).

use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::Instant;

use vecswitch_fib::{Family, Fib, Ip4Rib, Ip6Rib};

#[path = "../benches/routes.rs"]
mod routes;

const SIZES: [usize; 5] = [1, 2_000, 20_000, 200_000, 1_000_000];

struct Case {
    name: String,
    run: Box<dyn FnMut() -> f64>,
    samples: Vec<f64>,
}

/// A closure that times one sample and returns ns per lookup.
fn sampler<F: Family>(fib: Fib<F>, dsts: Vec<F::Key>) -> Box<dyn FnMut() -> f64> {
    let hashes: Vec<u32> = (0..256u32).map(|i| i.wrapping_mul(0x9e37_79b9)).collect();
    let mut out = vec![None; 256];
    let mut at = 0;
    let mut sink = 0u64;
    Box::new(move || {
        let t = Instant::now();
        for _ in 0..64 {
            if at + 256 > dsts.len() {
                at = 0;
            }
            fib.lookup_batch(&dsts[at..at + 256], &hashes, &mut out);
            sink = sink.wrapping_add(u64::from(out[at % 256].unwrap_or(1)));
            at += 256;
        }
        let ns = t.elapsed().as_nanos() as f64 / (64.0 * 256.0);
        std::hint::black_box(sink);
        ns
    })
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .map_or(30, |s| s.parse().expect("ROUNDS: a number"));
    let mut cases = Vec::new();
    for n in SIZES {
        let r = routes::v4_routes(n);
        let mut rib = Ip4Rib::new();
        for (i, &(a, len)) in r.iter().enumerate() {
            rib.add(Ipv4Addr::from(a), len, &routes::next_hops(i))
                .unwrap();
        }
        let run = sampler(rib.build(), routes::v4_dsts(&r));
        cases.push(Case {
            name: format!("ipv4/{n}"),
            run,
            samples: Vec::new(),
        });
    }
    for n in SIZES {
        let r = routes::v6_routes(n);
        let mut rib = Ip6Rib::new();
        for (i, &(a, len)) in r.iter().enumerate() {
            rib.add(Ipv6Addr::from(a), len, &routes::next_hops(i))
                .unwrap();
        }
        let run = sampler(rib.build(), routes::v6_dsts(&r));
        cases.push(Case {
            name: format!("ipv6/{n}"),
            run,
            samples: Vec::new(),
        });
    }
    for c in &mut cases {
        (c.run)(); // warm up
    }
    for _ in 0..rounds {
        for c in &mut cases {
            let ns = (c.run)();
            c.samples.push(ns);
        }
    }
    println!("| case | min ns/lookup | median | max | × 1 route (min) | × 1 route (median) |");
    println!("|---|---|---|---|---|---|");
    let mut base = (0.0, 0.0);
    for c in &mut cases {
        c.samples.sort_by(f64::total_cmp);
        let (min, med, max) = (
            c.samples[0],
            c.samples[c.samples.len() / 2],
            c.samples[c.samples.len() - 1],
        );
        if c.name.ends_with("/1") {
            base = (min, med);
        }
        println!(
            "| {} | {min:.1} | {med:.1} | {max:.1} | {:.2} | {:.2} |",
            c.name,
            base.0 / min,
            base.1 / med
        );
    }
}
