//! Processes exactly K packets through the IPv4 routing graph with NAT44 or the firewall on, and
//! prints K, for counting instructions per packet with callgrind, as `ip4_packets` does for plain
//! routing:
//!
//! ```text
//! cargo build --release -p vecswitch-switch --example nat44_packets
//! valgrind --tool=callgrind --toggle-collect='*run_packets*' \
//!     target/release/examples/nat44_packets MODE N FLOWS 102400
//! # instructions/packet = "Collected" Ir total / K
//! ```
//!
//! `MODE`: `route` (no NAT, no firewall: the baseline), `nat` (masquerade, one session per flow,
//! `nat44::testing::nat_switch`), `fw-permit` (an ACL of N rules whose last one permits: every
//! packet walks them all), `fw-reflect` (the same ACL, the last rule permit-reflect: packets after
//! each flow's first are established), `fw-ips` (`fw-reflect` with IPS mode on: every packet's
//! payload searched for 100 patterns, `firewall::testing::ips_patterns`). With `-flows` (`nat-flows`,
//! `fw-permit-flows`, `fw-reflect-flows`) the source sends FLOWS distinct UDP flows to one
//! destination instead (`nat44::testing::flows_switch`: any number of flows, spread evenly, so
//! that 1M sessions are 1M table entries visited in turn); `nat-new` makes every collected packet
//! a new session (K + 256 flows: the cost of creating one). `N`: rules (firewall modes; ignored
//! otherwise). Wall-clock time of the collected packets is printed too (`ns_per_packet`; on a
//! loaded host only a ratio of interleaved runs means anything). `FLOWS`:
//! destinations (sessions, connections). `K`: packets collected. The first packets of every flow
//! (which make the sessions) run before the collection starts.
//!
//! `nat_memory` is the session slab's and indexes' memory ("huge pages: yes, 128.0 MiB": from 2
//! MiB each is advised for 2 MiB pages, `vecswitch_buffer::huge`); `VECSWITCH_HUGE_PAGES=off` in
//! the environment turns the advice off (an A/B of huge pages in one build). The benchmark
//! switches' UDP timeout is a week (`nat44::testing::BENCH_UDP_S`), so a slow warm-up (callgrind)
//! expires no session.

use std::process::ExitCode;

use vecswitch_switch::firewall::testing::{
    firewall_flows_switch, firewall_ips_switch, firewall_switch,
};
use vecswitch_switch::firewall::Action;
use vecswitch_switch::ip::testing::router_switch;
use vecswitch_switch::nat44::testing::{nat_flows_switch, nat_switch};
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
    eprintln!(
        "{msg}\nusage: nat44_packets route|nat|nat-flows|nat-new|fw-permit|fw-reflect|fw-ips|fw-permit-flows|fw-reflect-flows N FLOWS K"
    );
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() != 4 {
        return usage("four arguments expected");
    }
    let num = |i: usize, what: &str| -> Result<u64, ExitCode> {
        match args[i].parse::<u64>() {
            Ok(v) if v > 0 => Ok(v),
            _ => Err(usage(&format!(
                "invalid {what} {:?}: accepted a whole number above 0",
                args[i]
            ))),
        }
    };
    let (n, flows, k) = match (num(1, "N"), num(2, "FLOWS"), num(3, "K")) {
        (Ok(n), Ok(f), Ok(k)) => (n as u32, f as u32, k),
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => return e,
    };
    // Whole vectors of warm-up covering every flow's first packet (`nat-new`: one vector, then
    // every packet is a flow's first).
    let new = args[0] == "nat-new";
    let warm = if new {
        256
    } else {
        (flows as u64).div_ceil(256).max(1) * 256
    };
    let flows = if new { (k + warm) as u32 } else { flows };
    let limit = Some(k + warm);
    let mut sw = match args[0].as_str() {
        "route" => router_switch(flows, limit),
        "nat" => nat_switch(flows, limit),
        "fw-permit" => firewall_switch(n, Action::Permit, flows, limit),
        "fw-reflect" => firewall_switch(n, Action::PermitReflect, flows, limit),
        "fw-ips" => firewall_ips_switch(n, flows, limit),
        "nat-flows" | "nat-new" => nat_flows_switch(flows, limit),
        "fw-permit-flows" => firewall_flows_switch(n, Action::Permit, flows, limit),
        "fw-reflect-flows" => firewall_flows_switch(n, Action::PermitReflect, flows, limit),
        m => {
            return usage(&format!(
                "invalid MODE {m:?}: accepted route, nat, nat-flows, nat-new, fw-permit, fw-reflect, fw-ips, fw-permit-flows, fw-reflect-flows"
            ))
        }
    };
    let mut warmed = 0u64;
    while warmed < warm {
        warmed += sw.poll_once() as u64;
    }
    let t0 = std::time::Instant::now();
    let got = run_packets(&mut sw);
    let ns = t0.elapsed().as_nanos() as f64 / got.max(1) as f64;
    let sent: u64 = sw
        .show_ports()
        .iter()
        .map(|p| p.stats.tx_packets)
        .sum::<u64>()
        - warmed;
    let nat = sw.show_nat44_summary();
    let fw = sw.show_firewall();
    println!(
        "mode={} n={n} flows={flows} packets={got} sent={sent} sessions={} connections={} ns_per_packet={ns:.1} nat_memory=\"{}\"",
        args[0], nat.sessions, fw.connections, nat.memory
    );
    let sessions_ok = !new || nat.sessions as u64 == k + warm;
    if warmed != warm || got != k || sent != k || sw.show_buffers().in_use != 0 || !sessions_ok {
        eprintln!(
            "expected {k} packets received and sent and no buffer in use; errors: {:?}",
            sw.show_errors()
        );
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
