//! Processes exactly K packets through the L2 graph and prints K, for counting instructions per
//! packet with callgrind (criterion's wall-clock figures vary with the host; instruction counts do
//! not):
//!
//! ```text
//! cargo build --release -p vecswitch-switch --example l2_packets
//! valgrind --tool=callgrind --toggle-collect='*run_packets*' \
//!     target/release/examples/l2_packets bridge 1000000 100000
//! # instructions/packet = "Collected" Ir total / K (printed by the example)
//! ```
//!
//! Arguments: `MODE` (`xconnect`, `xconnect-mtu` — the same with the `mtu-check` output feature
//! enabled — or `bridge`), `ENTRIES` (MAC table entries for `bridge`; ignored
//! for `xconnect`), `K` (packets, a multiple of 256 is exact; default 100000). Only `run_packets` is
//! collected with `--toggle-collect`, so building the switch and filling the table are left out.
//!
//! `l2_packets interleave [ROUNDS]` (default 200) measures wall clock instead, *interleaved*: the
//! cross-connect and bridges of 2, 20,000 and 1,000,000 MACs are built in one process, then each
//! round times one sample of every case in turn (a sample = 64 vectors of 256 packets), so a
//! loaded host slows all cases alike. It prints, per case, the minimum and median ns/packet over
//! the rounds and the rate relative to the bridge with 2 MACs (median of the per-round ratios).
//! `bridge/2-spread` is a control: the bridge of 2 MACs fed by as many template frames (16,384,
//! all between the same two stations) as the 1M case, so the replay source walks the same 1.3 MiB
//! of templates and only the MAC table differs from `bridge/1000000` (docs/BENCHMARKS.md §3.3).
//!
//! Both modes say what memory the MAC table got ("huge pages: yes, 64.0 MiB": from 2 MiB the
//! table is advised for 2 MiB pages, `vecswitch_buffer::huge`); `VECSWITCH_HUGE_PAGES=off` in the
//! environment turns the advice off, for an A/B of huge pages in one build.

use std::process::ExitCode;

use vecswitch_switch::testing::{
    self, bridge_switch, bridge_switch_replaying, frame64, station, xconnect_mtu_switch,
    xconnect_switch, BRIDGE_TEMPLATES,
};
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
        "{msg}\nusage: l2_packets xconnect|xconnect-mtu|bridge ENTRIES [K]\n       \
         l2_packets interleave [ROUNDS]"
    );
    ExitCode::from(2)
}

/// The control case `bridge/2-spread` (module doc): [`bridge_switch`]'s bridge of 2 stations
/// (0 and 1 learned on ports 0 and 1), its source replaying [`BRIDGE_TEMPLATES`] copies of the
/// frame from station 0 to station 1.
fn bridge2_spread() -> Switch {
    let t = vec![frame64(station(1), station(0)); BRIDGE_TEMPLATES as usize];
    bridge_switch_replaying(2, t, None)
}

/// The interleaved wall-clock comparison (see the module doc).
fn interleave(rounds: usize) -> ExitCode {
    let mut cases: Vec<(String, Switch)> = vec![("xconnect".into(), xconnect_switch(None))];
    for entries in [2u32, 20_000, 1_000_000] {
        let sw = bridge_switch(entries, None);
        eprintln!("bridge/{entries}: MAC table {}", sw.mac_table_memory());
        cases.push((format!("bridge/{entries}"), sw));
    }
    cases.push(("bridge/2-spread".into(), bridge2_spread()));
    match testing::interleave(&mut cases, rounds, 1) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(mode) = args.first() else {
        return usage("missing MODE");
    };
    if mode == "interleave" {
        return match args.get(1).map(|s| s.parse::<usize>()) {
            None => interleave(200),
            Some(Ok(r)) if r > 0 => interleave(r),
            _ => usage(&format!(
                "invalid ROUNDS {:?}: accepted a whole number above 0",
                args[1]
            )),
        };
    }
    let entries: u32 = match args.get(1).map(|s| s.parse()) {
        None => 2,
        Some(Ok(v)) => v,
        Some(Err(_)) => {
            return usage(&format!(
                "invalid ENTRIES {:?}: accepted a whole number",
                args[1]
            ))
        }
    };
    let k: u64 = match args.get(2).map(|s| s.parse()) {
        None => 100_000,
        Some(Ok(v)) if v > 0 => v,
        _ => {
            return usage(&format!(
                "invalid K {:?}: accepted a whole number above 0",
                args[2]
            ))
        }
    };
    let mut sw = match mode.as_str() {
        "xconnect" => xconnect_switch(Some(k)),
        "xconnect-mtu" => xconnect_mtu_switch(Some(k)),
        "bridge" => bridge_switch(entries, Some(k)),
        m => {
            return usage(&format!(
                "invalid MODE {m:?}: accepted xconnect, xconnect-mtu or bridge"
            ))
        }
    };
    let t0 = std::time::Instant::now();
    let got = run_packets(&mut sw);
    let ns = t0.elapsed().as_nanos() as f64 / got.max(1) as f64;
    let sent: u64 = sw.show_ports().iter().map(|p| p.stats.tx_packets).sum();
    // Wall-clock time is only indicative (other processes share the CPU); count instructions.
    println!(
        "mode={mode} entries={entries} packets={got} sent={sent} wall_ns_per_packet={ns:.1} mac_table=\"{}\"",
        sw.mac_table_memory()
    );
    if got != k || sent != k || sw.show_buffers().in_use != 0 {
        eprintln!("expected {k} packets received and sent and no buffer in use");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
