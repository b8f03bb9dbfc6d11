//! Processes exactly K packets through the IPv4 routing graph and prints K, for counting
//! instructions per packet with callgrind, as `l2_packets` does for L2:
//!
//! ```text
//! cargo build --release -p vecswitch-switch --example ip4_packets
//! valgrind --tool=callgrind --toggle-collect='*run_packets*' \
//!     target/release/examples/ip4_packets 1 102400
//! # instructions/packet = "Collected" Ir total / K
//! ```
//!
//! Arguments: `ROUTES` (/24 routes, destinations spread over them; default 1), `K` (packets,
//! default 100000). Only `run_packets` is collected, so building the switch and the FIB (and one
//! warm-up vector) are left out. See `vecswitch_switch::ip::testing::router_switch` for the setup
//! and `packets_main` for the driver `ip6_packets` shares.
//!
//! `interleave [ROUNDS]` (default 100) measures wall clock instead: the routers of 1, 2,000,
//! 20,000, 200,000 and 1,000,000 routes are built in one process, then each round times one
//! sample (64 vectors of 256 packets) of every case in turn, so that a loaded host slows all
//! alike; it prints per case the minimum and median ns/packet and the rate relative to 1 route
//! (median of the per-round ratios).

use std::process::ExitCode;

use vecswitch_switch::ip::testing::{packets_main, router_switch};

fn main() -> ExitCode {
    packets_main("ip4_packets", router_switch)
}
