//! The scale suites' devices at a tiny scale (docs/suites/fib-scale.toml, mac-scale.toml): every
//! `[[dut]]` of the suite on its topology, two scale points with a small table, one 1 s trial at
//! a low rate per point through the lab's measurer — the traffic spread over the table as the
//! bench sends it ([`Dut::shape_streams`]) — and each device must forward it: counts, not speed.
//! Root: namespaces, veth pairs and memif sockets are made by the testbed and removed by its
//! guards, also when an assert fails. The two suites run one after the other (a lock), each
//! device alone on the DUT CPU.

mod common;

use std::sync::Mutex;
use std::time::Duration;

use common::vecswitch_bin;
use vecswitch_lab::suite::Suite;
use vecswitch_lab::{Load, Measurer};
use vecswitch_testbed::{streams_for, DutKind, GenMeasurer, Scale, Testbed, Topology};

/// One suite at a time: both use the generator and DUT CPUs.
static SERIAL: Mutex<()> = Mutex::new(());

/// Frames per second of each trial: far below every device's rate, even on a loaded host.
/// (300 destinations get 10 frames each in a 1 s trial.)
const RATE_FPS: f64 = 3_000.0;

fn suite(file: &str) -> Suite {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/suites")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Suite::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// What one device did at one point.
#[derive(Debug)]
struct PointRun {
    dut: String,
    topology: String,
    point: u64,
    destinations: u32,
    offered: u64,
    received: u64,
    per_stream_lost: Vec<u64>,
}

/// Runs every distinct `[[dut]]` of `s` at `points` of its scale kind: one trial per point.
/// `check(testbed, dut name, point)` runs after each trial for device-specific counts.
fn run_suite(
    s: &Suite,
    points: [u64; 2],
    mut check: impl FnMut(&Testbed, &str, u64),
) -> Vec<PointRun> {
    let kind = s
        .tests
        .iter()
        .find_map(|t| t.scale())
        .expect("a scale test in the suite")
        .kind;
    let size = s.frame_sizes[0].spec().unwrap();
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for d in &s.duts {
        if seen.contains(&(&d.name, &d.topology)) {
            continue;
        }
        seen.push((&d.name, &d.topology));
        let topo: Topology = d.topology.parse().unwrap();
        let mut tb = Testbed::build(topo).unwrap();
        let ports = tb.open_generator_ports().unwrap();
        let dut = DutKind::parse(&d.name, vecswitch_bin()).unwrap().build();
        tb.start(dut)
            .unwrap_or_else(|e| panic!("{} on {}: {e}", d.name, d.topology));
        let mut m = GenMeasurer::for_testbed(&tb, ports, streams_for(&size, s.bidirectional))
            .unwrap()
            .warmup(Duration::from_millis(300))
            .drain(Duration::from_millis(500));
        for p in points {
            let scale = Scale::of(kind, p).unwrap();
            tb.configure_scale(scale)
                .unwrap_or_else(|e| panic!("{} at {kind} {p}: {e}", d.name));
            // The bench's traffic at this point: one destination per entry.
            let mut shaped = streams_for(&size, s.bidirectional);
            tb.with_dut(|x| x.shape_streams(&mut shaped))
                .unwrap()
                .unwrap();
            let destinations = scale.destinations().unwrap();
            assert_eq!(shaped[0].flows, destinations, "{}: {shaped:?}", d.name);
            let r = m
                .trial(Load::fps(RATE_FPS), Duration::from_secs(1))
                .unwrap_or_else(|e| panic!("{} at {kind} {p}: {e}", d.name));
            let rep = m.reports().last().unwrap();
            for st in &rep.streams {
                assert_eq!(
                    (st.rx.duplicated, st.rx_wrong_port),
                    (0, 0),
                    "{}: {st:?}",
                    d.name
                );
            }
            check(&tb, &d.name, p);
            let run = PointRun {
                dut: d.name.clone(),
                topology: d.topology.clone(),
                point: p,
                destinations,
                offered: r.offered_frames,
                received: r.received_frames,
                per_stream_lost: rep.streams.iter().map(|s| s.lost).collect(),
            };
            eprintln!("{run:?}");
            out.push(run);
        }
        tb.check_alive().unwrap();
        drop(m);
        tb.stop().unwrap();
    }
    out
}

/// Asserts every run forwarded what was offered — all of it for vecswitch and the kernel, at
/// least 90 % for OVS (its PMD thread runs at ordinary priority and its afxdp ports do not count
/// drops: on a loaded host it loses frames the lab cannot place; see veth_kernel_duts.rs) — and
/// that the generator offered at least two frames per destination (on a loaded host it may fall
/// behind its 3 kfps; what it sent is what is judged).
fn assert_forwarded(runs: &[PointRun]) {
    for r in runs {
        let what = format!("{} on {} at {}", r.dut, r.topology, r.point);
        assert!(
            r.offered >= 2 * u64::from(r.destinations),
            "{what}: the generator offered too little to reach every destination: {r:?}"
        );
        if r.dut.starts_with("ovs") {
            assert!(r.received * 10 >= r.offered * 9, "{what}: {r:?}");
        } else {
            assert_eq!(r.received, r.offered, "{what}: frames lost: {r:?}");
            assert!(r.per_stream_lost.iter().all(|&l| l == 0), "{what}: {r:?}");
        }
    }
}

/// OVS: `point` rules whose match contains `pattern` in the first bridge, each of which matched
/// frames — the traffic was spread over all of them. (`ovs-ofctl` reaches the bridge through its
/// management socket in the driver's run directory. OVS moves the datapath's statistics to the
/// OpenFlow rules in its revalidator rounds, every 500 ms or so: polled for up to 5 s.)
fn assert_every_rule_hit(tb: &Testbed, pattern: &str, point: u64) {
    let mgmt = tb.wiring().run_dir.join("ovs/br0.mgmt");
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let out = std::process::Command::new("ovs-ofctl")
            .args(["dump-flows", &format!("unix:{}", mgmt.display())])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(out.status.success(), "ovs-ofctl dump-flows: {out:?}");
        let rules: Vec<&str> = text.lines().filter(|l| l.contains(pattern)).collect();
        assert_eq!(rules.len() as u64, point, "{text}");
        let idle: Vec<&&str> = rules
            .iter()
            .filter(|l| l.contains("n_packets=0,"))
            .collect();
        if idle.is_empty() {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "rules no frame matched: {idle:?}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// OVS: the placement note of vswitchd records the bundle load that left `point` rules of kind
/// `what` in the bridge (the driver checked `dump-aggregate` before writing it).
fn assert_load_noted(tb: &Testbed, what: &str, point: u64) {
    let note = tb
        .placement(vecswitch_testbed::generator_placement())
        .processes
        .iter()
        .find(|p| p.name == "dut-ovs-vswitchd")
        .map(|p| p.note.clone())
        .expect("vswitchd in the placement record");
    assert!(
        note.contains("ovs-ofctl --bundle add-flows")
            && note.contains(&format!(" {point} {what} rules (")),
        "{note}"
    );
}

/// vecswitch: no frame took `l2-flood` — every destination was a known entry. (In a two-port
/// bridge an unknown destination is flooded to the other port and arrives anyway, so arriving
/// frames alone do not show that the table was used.)
fn assert_nothing_flooded(tb: &Testbed) {
    let ctl = tb.wiring().run_dir.join("dut.ctl");
    let out = std::process::Command::new(vecswitch_bin())
        .args(["ctl", "--socket"])
        .arg(&ctl)
        .args(["--json", "show", "runtime"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("show runtime: {e}: {out:?}"));
    let nodes = v["data"]["nodes"].as_array().expect("runtime nodes");
    let flooded = nodes
        .iter()
        .find(|n| n["name"] == "l2-flood")
        .and_then(|n| n["packets"].as_u64())
        .unwrap_or(0);
    let forwarded = nodes
        .iter()
        .find(|n| n["name"] == "l2-fwd")
        .and_then(|n| n["packets"].as_u64())
        .unwrap_or(0);
    assert_eq!(flooded, 0, "frames flooded: {nodes:?}");
    assert!(forwarded > 0, "no frame took l2-fwd: {nodes:?}");
}

fn require(program: &str, package: &str) {
    assert!(
        std::process::Command::new(program)
            .arg("--version")
            .output()
            .is_ok(),
        "{program} not found: install {package} (scripts/setup.sh)"
    );
}

fn vecswitch_built() {
    let bin = vecswitch_bin();
    assert!(
        bin.is_file(),
        "build the binary first: cargo build -p vecswitch-cli ({})",
        bin.display()
    );
}

#[test]
fn fib_scale_suite_devices_route_traffic_spread_over_their_routes() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    vecswitch_built();
    require("ovs-vswitchd", "openvswitch-switch");
    let s = suite("fib-scale.toml");
    let names: Vec<&str> = s.duts.iter().map(|d| d.name.as_str()).collect();
    for n in ["vecswitch-router", "linux-router", "ovs-router"] {
        assert!(names.contains(&n), "{names:?}");
    }
    let runs = run_suite(&s, [1, 300], |tb, name, point| match name {
        "linux-router" => {
            let routes = tb
                .dut_netns()
                .exec("ip", &["-4", "route", "show", "proto", "200"])
                .unwrap();
            assert_eq!(routes.lines().count() as u64, point, "{routes}");
        }
        "ovs-router" => {
            assert_every_rule_hit(tb, "nw_dst=16.", point);
            assert_load_noted(tb, "route", point);
        }
        _ => {}
    });
    assert_eq!(runs.len(), 4 * 2, "{runs:?}");
    assert!(runs.iter().any(|r| r.destinations == 300));
    assert_forwarded(&runs);
}

#[test]
fn mac_scale_suite_devices_switch_traffic_spread_over_their_tables() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    vecswitch_built();
    require("ovs-vswitchd", "openvswitch-switch");
    let s = suite("mac-scale.toml");
    let names: Vec<&str> = s.duts.iter().map(|d| d.name.as_str()).collect();
    for n in ["vecswitch-bridge", "linux-bridge", "ovs"] {
        assert!(names.contains(&n), "{names:?}");
    }
    let runs = run_suite(&s, [2, 300], |tb, name, point| {
        if name == "ovs" {
            assert_every_rule_hit(tb, "dl_dst=02:5c:", point);
            assert_load_noted(tb, "dl_dst", point);
        }
        if name == "vecswitch-bridge" {
            assert_nothing_flooded(tb);
        }
        if name == "linux-bridge" {
            let fdb = tb
                .dut_netns()
                .exec("bridge", &["fdb", "show", "br", "br0"])
                .unwrap();
            let n = fdb
                .lines()
                .filter(|l| l.starts_with("02:5c:") && l.contains("static"))
                .count();
            assert_eq!(n as u64, point, "{fdb}");
        }
    });
    assert_eq!(runs.len(), 4 * 2, "{runs:?}");
    assert_forwarded(&runs);
}

/// The full tables of the suites load (docs/BENCHMARKS.md §11 "Route loads"): each router takes
/// 200,000 and then 1,000,000 routes (each driver verifies the count: `show ip fib`, the kernel's
/// `ip -batch` status, OVS's `flow_count`), and forwards a short trial spread over the first
/// million destinations. Minutes and gigabytes (OVS), so not in `make test`:
/// `cargo test -p vecswitch-testbed --test scale_suites -- --ignored --nocapture`
/// (`SCALE_DUTS=linux-router,ovs-router`: only those devices of the suite).
#[test]
#[ignore = "loads 1M routes three ways: minutes, ~2 GB"]
fn fib_scale_full_tables_load() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    vecswitch_built();
    let mut s = suite("fib-scale.toml");
    if let Ok(only) = std::env::var("SCALE_DUTS") {
        s.duts.retain(|d| only.split(',').any(|n| n == d.name));
        assert!(
            !s.duts.is_empty(),
            "SCALE_DUTS={only}: no such device in the suite"
        );
    }
    let runs = run_suite(&s, [200_000, 1_000_000], |tb, name, _| {
        let note = tb
            .placement(vecswitch_testbed::generator_placement())
            .processes
            .iter()
            .filter(|p| p.role == "dut")
            .map(|p| p.note.clone())
            .collect::<Vec<_>>()
            .join("; ");
        eprintln!("{name}: {note}");
    });
    for r in &runs {
        assert!(r.received > 0, "{r:?}");
    }
}
