//! Cost of one generator timestamp: `MonoClock` (std `Instant`, CLOCK_MONOTONIC via the vDSO)
//! against `TscClock` (the TSC through quanta, crates/gen/src/clock.rs), called through
//! `Box<dyn Clock>` as the generator's engine calls it. Interleaved rounds; prints the median and
//! range of CPU ns per call (this thread's on-CPU time, so a loaded host's preemption is not
//! counted) and the median wall-clock ns. The loop is this example's (debug build, opt-level 0):
//! its overhead is in both figures alike.
//!
//! ```sh
//! taskset -c 0 cargo run -p vecswitch-gen --example clock_cost -- 7 5000000
//! ```

use std::time::Instant;

use vecswitch_gen::clock::TscClock;
use vecswitch_gen::{Clock, MonoClock};

/// This thread's time on a CPU, ns (`/proc/thread-self/schedstat`, first field): on a shared
/// host, time spent descheduled is not charged to the clock under test.
fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn per_call(clock: &dyn Clock, n: u64) -> (f64, f64) {
    let (t, c) = (Instant::now(), cpu_ns());
    let mut acc = 0u64;
    for _ in 0..n {
        acc = acc.wrapping_add(std::hint::black_box(clock.now_ns()));
    }
    std::hint::black_box(acc);
    let wall = t.elapsed().as_nanos() as f64 / n as f64;
    ((cpu_ns() - c) as f64 / n as f64, wall)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(7);
    let n: u64 = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(5_000_000);
    let clocks: [(&str, Box<dyn Clock>); 2] = [
        ("MonoClock (CLOCK_MONOTONIC)", Box::new(MonoClock::new())),
        ("TscClock (quanta)", Box::new(TscClock::new())),
    ];
    let mut cpu = vec![Vec::new(); clocks.len()];
    let mut wall = vec![Vec::new(); clocks.len()];
    for _ in 0..rounds {
        for (i, (_, c)) in clocks.iter().enumerate() {
            let (c, w) = per_call(c.as_ref(), n);
            cpu[i].push(c);
            wall[i].push(w);
        }
    }
    for (i, (name, _)) in clocks.iter().enumerate() {
        let r = &mut cpu[i];
        let (lo, hi) = (
            r.iter().copied().fold(f64::MAX, f64::min),
            r.iter().copied().fold(0.0, f64::max),
        );
        println!(
            "{name}: median {:.1} CPU ns/call (min {lo:.1}, max {hi:.1}), wall {:.1} ns/call; {rounds} rounds of {n} calls",
            median(r),
            median(&mut wall[i])
        );
    }
}
