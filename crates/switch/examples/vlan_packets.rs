//! Processes exactly K packets through a VLAN case of the graph and prints K, for counting
//! instructions per packet with callgrind (the companion of `l2_packets`, whose `xconnect` mode is
//! the untagged baseline):
//!
//! ```text
//! cargo build --release -p vecswitch-switch --example vlan_packets
//! valgrind --tool=callgrind --toggle-collect='*run_packets*' \
//!     target/release/examples/vlan_packets dot1q-pop1 102400
//! # instructions/packet = "Collected" Ir total / K
//! ```
//!
//! Arguments: `CASE` (`dot1q-pop1`, `dot1q-push1`, `dot1ad-translate-2-2`: see
//! `vecswitch_switch::vlan::testing::Case`), `K` (packets; default 102400).
//!
//! `vlan_packets interleave [ROUNDS]` (default 200) measures wall clock instead, interleaved as
//! `l2_packets interleave` does (`vecswitch_switch::testing::interleave`): the untagged
//! cross-connect and the three tagged cases are built in one process, then each round times one
//! sample of every case in turn (64 vectors of 256 packets), so a loaded host slows all cases
//! alike. It prints, per case, the minimum and median ns/packet and the rate relative to the
//! untagged cross-connect (median of the per-round ratios; its inverse is the cost ratio).

use std::process::ExitCode;

use vecswitch_switch::testing::{self, xconnect_switch};
use vecswitch_switch::vlan::testing::{vlan_switch, Case};
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
        "{msg}\nusage: vlan_packets dot1q-pop1|dot1q-push1|dot1ad-translate-2-2 [K]\n       \
         vlan_packets interleave [ROUNDS]"
    );
    ExitCode::from(2)
}

/// The interleaved wall-clock comparison (see the module doc).
fn interleave(rounds: usize) -> ExitCode {
    let mut cases: Vec<(String, Switch)> =
        vec![("untagged-xconnect".into(), xconnect_switch(None))];
    for (case, name) in Case::ALL {
        cases.push((name.to_string(), vlan_switch(case, None)));
    }
    match testing::interleave(&mut cases, rounds, 0) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(name) = args.first() else {
        return usage("missing CASE");
    };
    if name == "interleave" {
        let rounds = args.get(1).map_or("200", String::as_str);
        return match rounds.parse::<usize>() {
            Ok(r) if r > 0 => interleave(r),
            _ => usage(&format!(
                "invalid ROUNDS {rounds:?}: accepted a whole number above 0"
            )),
        };
    }
    let Some(&(case, _)) = Case::ALL.iter().find(|(_, n)| n == name) else {
        return usage(&format!(
            "invalid CASE {name:?}: accepted dot1q-pop1, dot1q-push1 or dot1ad-translate-2-2"
        ));
    };
    let k: u64 = match args.get(1).map(|s| s.parse()) {
        None => 102_400,
        Some(Ok(v)) if v > 0 => v,
        _ => {
            return usage(&format!(
                "invalid K {:?}: accepted a whole number above 0",
                args[1]
            ))
        }
    };
    let mut sw = vlan_switch(case, Some(k));
    let t0 = std::time::Instant::now();
    let got = run_packets(&mut sw);
    let ns = t0.elapsed().as_nanos() as f64 / got.max(1) as f64;
    let sent: u64 = sw.show_ports().iter().map(|p| p.stats.tx_packets).sum();
    let errors = sw.show_errors();
    // Wall-clock time is only indicative (other processes share the CPU); count instructions.
    println!("case={name} packets={got} sent={sent} wall_ns_per_packet={ns:.1}");
    if sent != got || !errors.is_empty() {
        eprintln!("not every packet was sent: {errors:?}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
