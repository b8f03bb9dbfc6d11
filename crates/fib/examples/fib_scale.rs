//! Build time, memory, update cost and a lookup loop for callgrind, for one table size.
//!
//! ```sh
//! cargo run --release -p vecswitch-fib --example fib_scale -- v4 1000000 [LOOKUPS]
//! valgrind --tool=callgrind --cache-sim=yes --toggle-collect='*run_lookups*' \
//!     target/release/examples/fib_scale v4 1000000 102400
//! ```
//!
//! Prints one `key=value` line (route set and destinations: `benches/routes.rs`). Without
//! LOOKUPS it times the build and the updates only; with it, it runs LOOKUPS lookups in vectors
//! of 256 through `lookup_batch` inside `run_lookups` (the only function callgrind collects).

use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::Instant;

use vecswitch_fib::{Family, Fib, Ip4Rib, Ip6Rib};

#[path = "../benches/routes.rs"]
mod routes;

#[inline(never)]
fn run_lookups<F: Family>(fib: &Fib<F>, dsts: &[F::Key], n: usize) -> u64 {
    let hashes = [0x9e37_79b9u32; 256];
    let mut out = [None; 256];
    let mut sum = 0u64;
    let mut done = 0;
    let mut at = 0;
    while done < n {
        if at + 256 > dsts.len() {
            at = 0;
        }
        fib.lookup_batch(&dsts[at..at + 256], &hashes, &mut out);
        sum += out
            .iter()
            .map(|o| o.map_or(1_000_000, u64::from))
            .sum::<u64>();
        at += 256;
        done += 256;
    }
    sum
}

fn median_us(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[v.len() - 1])
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: fib_scale v4|v6 ROUTES [LOOKUPS]";
    let family = args.get(1).expect(usage).as_str();
    let n: usize = args.get(2).expect(usage).parse().expect("ROUTES: a number");
    let lookups: Option<usize> = args.get(3).map(|s| s.parse().expect("LOOKUPS: a number"));
    match family {
        "v4" => {
            let routes = routes::v4_routes(n);
            let dsts = routes::v4_dsts(&routes);
            let t = Instant::now();
            let mut rib = Ip4Rib::new();
            for (i, &(a, len)) in routes.iter().enumerate() {
                rib.add(Ipv4Addr::from(a), len, &routes::next_hops(i))
                    .unwrap();
            }
            let rib_s = t.elapsed().as_secs_f64();
            let t = Instant::now();
            let mut fib = rib.build();
            let build_s = t.elapsed().as_secs_f64();
            report(family, &fib, rib_s, build_s);
            match lookups {
                Some(k) => println!("checksum={}", run_lookups(&fib, &dsts, k)),
                None => {
                    // Single-route updates in place: 1000 /24s added then removed.
                    let extra: Vec<(u32, u8)> = (0..1000u32)
                        .map(|i| (0xe000_0000 - (i + 1) * 256 * 7, 24))
                        .collect();
                    updates(&mut fib, &extra, |f, (a, l), add| {
                        if add {
                            f.add(Ipv4Addr::from(a), l, &[7]).unwrap()
                        } else {
                            f.remove(Ipv4Addr::from(a), l).unwrap()
                        }
                    });
                    short_updates(
                        &mut fib,
                        Ipv4Addr::new(0xdf, 0, 0, 0),
                        Ipv4Addr::UNSPECIFIED,
                    );
                }
            }
        }
        "v6" => {
            let routes = routes::v6_routes(n);
            let dsts = routes::v6_dsts(&routes);
            let t = Instant::now();
            let mut rib = Ip6Rib::new();
            for (i, &(a, len)) in routes.iter().enumerate() {
                rib.add(Ipv6Addr::from(a), len, &routes::next_hops(i))
                    .unwrap();
            }
            let rib_s = t.elapsed().as_secs_f64();
            let t = Instant::now();
            let mut fib = rib.build();
            let build_s = t.elapsed().as_secs_f64();
            report(family, &fib, rib_s, build_s);
            match lookups {
                Some(k) => println!("checksum={}", run_lookups(&fib, &dsts, k)),
                None => {
                    let extra: Vec<(u128, u8)> = (0..1000u128)
                        .map(|i| ((0x3fff_fff0u128 << 96) | (i << 80), 48))
                        .collect();
                    updates(&mut fib, &extra, |f, (a, l), add| {
                        if add {
                            f.add(Ipv6Addr::from(a), l, &[7]).unwrap()
                        } else {
                            f.remove(Ipv6Addr::from(a), l).unwrap()
                        }
                    });
                    short_updates(&mut fib, "3f00::".parse().unwrap(), Ipv6Addr::UNSPECIFIED);
                }
            }
        }
        _ => panic!("{usage}"),
    }
}

fn report<F: Family>(family: &str, fib: &Fib<F>, rib_s: f64, build_s: f64) {
    let s = fib.stats();
    println!(
        "family={family} routes={} rib_add_s={rib_s:.3} build_s={build_s:.3} nodes={} leaves={} \
         trie_bytes={} trie_bytes_per_route={:.1} route_set_bytes={} total_bytes_per_route={:.1}",
        s.routes,
        s.trie_nodes,
        s.trie_leaves,
        s.trie_bytes,
        s.trie_bytes as f64 / s.routes as f64,
        s.route_set_bytes,
        fib.memory_bytes() as f64 / s.routes as f64
    );
}

fn updates<F: Family, K: Copy>(
    fib: &mut Fib<F>,
    extra: &[K],
    apply: impl Fn(&mut Fib<F>, K, bool),
) {
    let mut add = Vec::new();
    let mut del = Vec::new();
    for &r in extra {
        let t = Instant::now();
        apply(fib, r, true);
        add.push(t.elapsed().as_secs_f64() * 1e6);
    }
    for &r in extra {
        let t = Instant::now();
        apply(fib, r, false);
        del.push(t.elapsed().as_secs_f64() * 1e6);
    }
    let (am, ax) = median_us(add);
    let (dm, dx) = median_us(del);
    println!("update_long_add_us_median={am:.1} max={ax:.1} remove_us_median={dm:.1} max={dx:.1}");
}

/// One /8 (/16 for IPv6) and one default route added and removed.
fn short_updates<F: Family>(fib: &mut Fib<F>, eight: F::Addr, zero: F::Addr) {
    let l8 = if F::BITS == 32 { 8 } else { 16 };
    for (a, l) in [(eight, l8), (zero, 0)] {
        let t = Instant::now();
        let had = fib.add(a, l, &[9]);
        let add_us = t.elapsed().as_secs_f64() * 1e6;
        let t = Instant::now();
        fib.remove(a, l).unwrap();
        let del_us = t.elapsed().as_secs_f64() * 1e6;
        had.unwrap();
        println!("update_/{l}_add_us={add_us:.0} remove_us={del_us:.0}");
    }
}
