//! Processes exactly K packets through the IPv6 routing graph and prints K, for counting
//! instructions per packet with callgrind, as `ip4_packets` does for IPv4:
//!
//! ```text
//! cargo build --release -p vecswitch-switch --example ip6_packets
//! valgrind --tool=callgrind --toggle-collect='*run_packets*' \
//!     target/release/examples/ip6_packets 1 102400
//! # instructions/packet = "Collected" Ir total / K
//! ```
//!
//! Arguments: `ROUTES` (/48 routes, destinations spread over them; default 1), `K` (packets,
//! default 100000). Only `run_packets` is collected, so building the switch and the FIB (and one
//! warm-up vector) are left out. See `vecswitch_switch::ip::testing::router6_switch` for the
//! setup (78-byte frames, RFC 5180 §5.1).

use std::process::ExitCode;

use vecswitch_switch::ip::testing::router6_switch;
use vecswitch_switch::Switch;

/// Polls until the source has handed out all its packets; returns how many were received.
#[inline(never)]
fn run_packets(sw: &mut Switch) -> u64 {
    let mut total = 0u64;
    loop {
        let n = sw.poll_once();
        if n == 0 {
            return total;
        }
        total += n as u64;
    }
}

fn usage(msg: &str) -> ExitCode {
    eprintln!("{msg}\nusage: ip6_packets [ROUTES] [K]");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let routes: u32 = match args.first().map(|s| s.parse()) {
        None => 1,
        Some(Ok(v)) if v > 0 => v,
        _ => {
            return usage(&format!(
                "invalid ROUTES {:?}: accepted a whole number above 0",
                args[0]
            ))
        }
    };
    let k: u64 = match args.get(1).map(|s| s.parse()) {
        None => 100_000,
        Some(Ok(v)) if v > 0 => v,
        _ => {
            return usage(&format!(
                "invalid K {:?}: accepted a whole number above 0",
                args[1]
            ))
        }
    };
    // One vector first, outside the collected function: the first allocations after building a
    // large table make glibc consolidate the chunks the build freed (tens of millions of
    // instructions once), which is setup, not per-packet cost.
    const WARM: u64 = 256;
    let mut sw = router6_switch(routes, Some(k + WARM));
    let warm = sw.poll_once() as u64;
    let t0 = std::time::Instant::now();
    let got = run_packets(&mut sw);
    let ns = t0.elapsed().as_nanos() as f64 / got.max(1) as f64;
    let sent: u64 = sw
        .show_ports()
        .iter()
        .map(|p| p.stats.tx_packets)
        .sum::<u64>()
        - warm;
    // Wall-clock time is only indicative (other processes share the CPU); count instructions.
    println!("routes={routes} packets={got} sent={sent} wall_ns_per_packet={ns:.1}");
    if warm != WARM || got != k || sent != k || sw.show_buffers().in_use != 0 {
        eprintln!(
            "expected {k} packets received and sent and no buffer in use; errors: {:?}",
            sw.show_errors()
        );
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
