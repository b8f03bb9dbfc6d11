//! Runs one trial over an in-process loopback pair and prints intended vs offered rate, to check
//! the pacer on this machine (not a test: timing depends on the host).
//!
//! `cargo run --release -p vecswitch-gen --example loopback_rate -- [FPS] [SECONDS] [SIZE]`

use std::time::Duration;

use vecswitch_gen::{Generator, Rate, SizeSpec, StreamSpec, TrialLength, TrialSpec};
use vecswitch_ports::loopback;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let fps: f64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1e6);
    let secs: f64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(2.0);
    let size = args
        .get(3)
        .map(|s| SizeSpec::parse(s).expect("size"))
        .unwrap_or(SizeSpec::Fixed(64));
    let (a, b) = loopback::pair("a", "b");
    let mut g = Generator::new(vec![Box::new(a), Box::new(b)]).expect("generator");
    let mut s = StreamSpec::ipv4(0, 1);
    s.size = size;
    let rate = if fps > 0.0 { Rate::Pps(fps) } else { Rate::Max };
    let spec = TrialSpec::new(
        vec![s],
        rate,
        TrialLength::Duration(Duration::from_secs_f64(secs)),
    );
    let r = g.run_trial(&spec).expect("trial");
    let p = &r.ports[0];
    println!(
        "intended {:?} fps, offered {:.0} fps ({:+.4} %), tx {}, rx {}, lost {}, tester_limited {} {:?}",
        p.intended_fps,
        p.offered_fps,
        p.intended_fps.map(|i| (p.offered_fps / i - 1.0) * 100.0).unwrap_or(0.0),
        r.tx,
        r.rx,
        r.lost,
        r.tester_limited,
        r.tester_limited_reasons
    );
    let l = &r.streams[0].rx.latency;
    println!(
        "latency min {} p50 {} p99 {} max {} ns",
        l.min_ns, l.p50_ns, l.p99_ns, l.max_ns
    );
}
