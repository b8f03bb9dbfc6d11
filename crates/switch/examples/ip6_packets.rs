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

use std::process::ExitCode;

use vecswitch_switch::ip::testing::{packets_main, router6_switch};

fn main() -> ExitCode {
    packets_main("ip6_packets", router6_switch)
}
