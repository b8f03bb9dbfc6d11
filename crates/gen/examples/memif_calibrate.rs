//! Calibrates the generator on a memif server/client pair connected to itself in this process
//! (no DUT): maximum rate and latency floor per frame size. Same as `vecswitch gen calibrate` with
//! two memif ports, without building the whole CLI.
//!
//! `cargo run --release -p vecswitch-gen --example memif_calibrate -- [SECONDS] [SIZES]`

use std::time::Duration;

use vecswitch_gen::{calibrate, Generator, Rate, StreamSpec};
use vecswitch_ports::memif::{MemifConfig, MemifPort, Role};
use vecswitch_ports::Port;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let secs: f64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(2.0);
    let sizes: Vec<u16> = args
        .get(2)
        .map(|s| s.split(',').map(|x| x.parse().expect("size")).collect())
        .unwrap_or_else(|| vec![64, 512, 1518]);
    let sock = std::env::temp_dir().join(format!("vsgen-cal-{}.sock", std::process::id()));
    let sock = sock.to_str().expect("utf-8 path").to_string();
    let server: Box<dyn Port> = Box::new(
        MemifPort::new(MemifConfig::new("m-server", &sock, 0, Role::Server)).expect("server"),
    );
    let client: Box<dyn Port> = Box::new(
        MemifPort::new(MemifConfig::new("m-client", &sock, 0, Role::Client)).expect("client"),
    );
    let mut g = Generator::new(vec![client, server]).expect("generator");
    let rep = calibrate(
        &mut g,
        &StreamSpec::ipv4(0, 1),
        &sizes,
        Duration::from_secs_f64(secs),
        Rate::Pps(10_000.0),
    )
    .expect("calibrate");
    drop(g);
    let _ = std::fs::remove_file(&sock);
    println!(
        "{:>6} {:>12} {:>12} {:>8} {:>10} {:>10} {:>10}",
        "size", "max tx fps", "max rx fps", "lost", "floor min", "floor p50", "floor p99"
    );
    for p in &rep.points {
        println!(
            "{:>6} {:>12.0} {:>12.0} {:>8} {:>10} {:>10} {:>10}",
            p.size,
            p.max_tx_fps,
            p.max_rx_fps,
            p.max_lost,
            p.floor_latency.min_ns,
            p.floor_latency.p50_ns,
            p.floor_latency.p99_ns
        );
    }
}
