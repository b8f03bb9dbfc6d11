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

use std::process::ExitCode;

use vecswitch_switch::ip::testing::{packets_main, router_switch};

fn main() -> ExitCode {
    packets_main("ip4_packets", router_switch)
}
