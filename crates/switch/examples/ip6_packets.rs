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
//! setup (78-byte frames, RFC 5180 §5.1) and `packets_main` for the driver.
//!
//! `interleave [ROUNDS]` (default 100) measures wall clock instead: the routers of 1, 2,000,
//! 20,000, 200,000 and 1,000,000 routes are built in one process, then each round times one
//! sample (64 vectors of 256 packets) of every case in turn, so that a loaded host slows all
//! alike; it prints per case the minimum and median ns/packet and the rate relative to 1 route
//! (median of the per-round ratios).

use std::process::ExitCode;

use vecswitch_switch::ip::testing::{packets_main, router6_switch};

fn main() -> ExitCode {
    packets_main("ip6_packets", router6_switch)
}
