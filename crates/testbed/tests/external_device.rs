//! The `external` topology and driver on a known-answer device (root): a Linux bridge that this
//! test builds in its own namespaces, with a `tc tbf` shaper of 6 Mbit/s on the egress veth
//! toward the generator's receive port — 12 500 frames/s of 60-byte frames (tbf counts the
//! frame without FCS: 6e6 / (60 × 8)). The rate is well below what the generator reaches on
//! this path in an unoptimised test build on a busy 2-core machine (about 60 000 frames/s
//! measured without the shaper at load average 7, about 25 000 at load average 11-14), so the
//! shaper, not the generator, is the limit. The lab starts nothing; it opens the two interfaces the
//! "suite" names (`afp:IF@NETNS`) and reads the device's counters with a counter command.
//! Through that path the lab must see the shaper's rate (below: what is asserted).
//!
//! Measured while writing this test (kernel 6.18, unoptimised test build): above the shaper's
//! rate this device *drops* (tbf's queue overflows; with a 25 000 frames/s shaper and a 400 ms
//! queue, asked 50 000 frames/s for 3 s, the generator offered all 150 000 and 85 507 came
//! through) rather than back-pressuring the
//! AF_PACKET sender — the frames are orphaned from the sender's socket when they cross the veth
//! into the device's namespace. The queue is kept short (`latency 50ms`: 625 frames plus a
//! 273-frame burst: 1.4 % of a 5 s trial at the shaper's rate).
//!
//! What the test asserts: the forwarding rate at overload (what came through while the generator
//! offered ≥ 1.2 × the shaper's rate) within 2 % of the shaper's rate, and an RFC 2544 zero-loss
//! throughput never above it (+3 %: burst, queue and the rate's window, at the assert). The zero-loss throughput can come out lower: the unoptimised
//! generator on a loaded 2-core machine stalls and then catches up in bursts that overflow the
//! shaper's queue (issue 7 item 2). Measured 2026-11-23 at load average 12-14, three runs:
//! forwarding rate at overload 12 688, 12 643, 12 569 frames/s (median +1.1 %: the 16 KB burst
//! and the queue drained after the trial); zero-loss throughput 12 524, 12 467, 12 567 frames/s
//! (median +0.2 %). With a 12 Mbit/s shaper the generator could not always offer 1.2 × its
//! rate on the loaded machine, and a 20 ms queue let catch-up bursts lose frames below the rate.
//! (Own test binary: it runs alone, not beside the other forwarding tests.)

mod common;

use std::time::Duration;

use vecswitch_lab::procedures::throughput::{throughput, ThroughputConfig};
use vecswitch_lab::{Load, Measurer};
use vecswitch_testbed::{default_streams, DutKind, GenMeasurer, Netns, Testbed, Topology};

/// The shaper's rate, Mbit/s, and the frames per second it lets through (60-byte frames).
const RATE_MBIT: f64 = 6.0;
const SHAPED_FPS: f64 = RATE_MBIT * 1e6 / (60.0 * 8.0);

/// The device: namespace `dev` with bridge `br0` over `ed0`/`ed1`, whose peers `eg0`/`eg1` sit
/// in namespace `gen` (the generator's side). Dropped in reverse: namespaces and all in them go.
struct KnownAnswerDevice {
    gen: Netns,
    dev: Netns,
}

fn build_device() -> KnownAnswerDevice {
    let pid = std::process::id();
    let (gen, dev) =
        common::bridge_in_namespaces(&format!("vsext{pid}-gen"), &format!("vsext{pid}-dev"));
    // The shaper on the bridge's egress toward the generator's receive port.
    dev.exec(
        "tc",
        &[
            "qdisc",
            "add",
            "dev",
            "ed1",
            "root",
            "tbf",
            "rate",
            &format!("{RATE_MBIT}mbit"),
            // At least rate / HZ bytes, else tbf cannot reach its rate; the first burst passes
            // unshaped (16 KB: 273 frames, 0.4 % of a 5 s trial).
            "burst",
            "16kb",
            // A short queue: 50 ms at the shaper's rate (625 frames), so that a trial above
            // the rate loses frames instead of queueing them all.
            "latency",
            "50ms",
        ],
    )
    .unwrap();
    for i in 0..2 {
        let (g, d) = (format!("eg{i}"), format!("ed{i}"));
        vecswitch_testbed::wait_for(&format!("{g}/{d} carrier"), Duration::from_secs(5), || {
            gen.oper_up(&g) && dev.oper_up(&d)
        })
        .unwrap();
    }
    KnownAnswerDevice { gen, dev }
}

/// The counter command a user of an external device would write: key=value lines.
fn counters_command(dev: &Netns) -> String {
    format!(
        "ip netns exec {} sh -c 'echo rx_frames=$(cat /sys/class/net/ed0/statistics/rx_packets); echo tx_frames=$(cat /sys/class/net/ed1/statistics/tx_packets)'",
        dev.name()
    )
}

#[test]
fn shaped_bridge_through_the_external_path_forwards_at_the_shaper_rate() {
    let d = build_device();
    let ports = [
        format!("afp:eg0@{}", d.gen.name()),
        format!("afp:eg1@{}", d.gen.name()),
    ];
    let mut tb = Testbed::build(Topology::external(&ports).unwrap()).unwrap();
    let gen_ports = tb.open_generator_ports().unwrap();
    tb.start(
        DutKind::External {
            counters_command: Some(counters_command(&d.dev)),
        }
        .build(),
    )
    .unwrap();
    let desc = tb.describe_dut().unwrap();
    assert!(desc.contains("not started by the lab"), "{desc}");
    let mut m = GenMeasurer::for_testbed(&tb, gen_ports, default_streams(64, false))
        .unwrap()
        .drain(Duration::from_millis(300))
        // A shared 2-core machine stalls the unoptimised generator now and then (at load average
        // 11, 50 ms per 5 s trial were seen); a 2 % shortfall is not a tester limit here (loss
        // is counted against offered frames anyway).
        .tolerance(0.02);
    // Learning: the bridge floods until it knows where the generator's addresses are.
    m.trial(Load::fps(1_000.0), Duration::from_millis(500))
        .unwrap();

    // The counter command's readings move by what one trial below the shaper's rate sent.
    let read = || {
        tb.with_dut(|d| d.counters())
            .unwrap()
            .unwrap()
            .expect("the counter command gives counters")
    };
    let before = read();
    let r = m
        .trial(Load::fps(0.5 * SHAPED_FPS), Duration::from_secs(1))
        .unwrap();
    let dc = read().delta(&before);
    eprintln!("below the shaper: {r:?}\ndevice {dc:?}");
    assert_eq!(r.received_frames, r.offered_frames, "{r:?}");
    let rx = dc.rx_frames.unwrap();
    assert!(
        rx >= r.offered_frames && rx <= r.offered_frames + 20,
        "device rx {rx}, offered {}",
        r.offered_frames
    );
    assert!(dc.tx_frames.unwrap() >= r.received_frames, "{dc:?}");

    // RFC 2544 §26.1 throughput through the external path (see the module doc).
    let mut cfg =
        ThroughputConfig::new(0.25 * SHAPED_FPS, 2.0 * SHAPED_FPS, Duration::from_secs(5));
    cfg.resolution_fps = 0.005 * SHAPED_FPS;
    cfg.max_trials = 30;
    let res = throughput(&mut m, &cfg).unwrap();
    for t in &res.trials {
        eprintln!(
            "trial at {:.0} fps: offered {} received {} tester_limited {}",
            t.intended_load.fps, t.offered_frames, t.received_frames, t.tester_limited
        );
    }
    // The forwarding rate at overload (RFC 2889 §5.2's maximum forwarding rate): what came
    // through in the trials where the generator offered at least 1.2 × the shaper's rate (on a
    // loaded machine it may fall short of the 2 × asked).
    let secs = |t: &vecswitch_lab::TrialResult| t.intended_duration.as_secs_f64();
    let over: Vec<f64> = res
        .trials
        .iter()
        .filter(|t| t.offered_frames as f64 / secs(t) >= 1.2 * SHAPED_FPS)
        .map(|t| t.received_frames as f64 / secs(t))
        .collect();
    eprintln!("forwarding rates at overload: {over:?}");
    assert!(
        !over.is_empty(),
        "the generator never offered 1.2 × {SHAPED_FPS:.0} frames/s (machine too busy?): {res:?}"
    );
    for f in &over {
        assert!(
            (f - SHAPED_FPS).abs() <= 0.02 * SHAPED_FPS,
            "{f:.0} frames/s came through at overload, the shaper passes {SHAPED_FPS:.0}"
        );
    }
    let found = res.throughput_fps.expect("a throughput");
    eprintln!("throughput {found:.0} fps, shaper {SHAPED_FPS:.0} fps");
    // Never more than the device passes: a zero-loss result above the shaper's rate would be
    // the lab's error (frames counted that did not go through, or a load not offered).
    // Bound: the burst and the queue (273 + 625 frames) can pass without loss on top of the
    // rate, +1.4 % of a 5 s trial, plus up to 1.5 % from the window the rate is read over (a
    // back-pressured trial is judged at the rate that came through: CI, fresh clone, found
    // 12,752 = +2.0 %).
    assert!(
        found <= 1.03 * SHAPED_FPS,
        "found {found:.0} frames/s, the shaper passes {SHAPED_FPS:.0}"
    );
    // The device was the limit, not the generator: whatever the generator fell short of, it
    // offered more than the device passed.
    if let Some(c) = res.tester_ceiling_fps {
        assert!(c > found, "{res:?}");
    }
    drop(m);
    tb.stop().unwrap();
    drop(d);
}

/// Kills and reaps a process the test started.
struct Reap(std::process::Child);

impl Drop for Reap {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Removes a directory the test made.
struct RmDir(std::path::PathBuf);

impl Drop for RmDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn memif_external_device_in_both_roles() {
    use vecswitch_testbed::topology::{MemifRole, PortEnd};
    let bin = common::vecswitch_bin();
    assert!(
        bin.is_file(),
        "build the binary first: cargo build -p vecswitch-cli ({})",
        bin.display()
    );
    let dir = RmDir(std::env::temp_dir().join(format!("vsextm{}", std::process::id())));
    std::fs::create_dir_all(&dir.0).unwrap();
    let (a, b) = (dir.0.join("a.sock"), dir.0.join("b.sock"));
    // The "external" device: a vecswitch cross-connect this test starts itself, memif client
    // on a.sock (the generator listens there) and memif server on b.sock (the generator
    // connects there).
    let dev_ports = [
        PortEnd::Memif {
            name: "p0".into(),
            socket: a.clone(),
            id: 0,
            role: MemifRole::Client,
        },
        PortEnd::Memif {
            name: "p1".into(),
            socket: b.clone(),
            id: 0,
            role: MemifRole::Server,
        },
    ];
    let ctl = dir.0.join("dev.ctl");
    let toml =
        vecswitch_testbed::dut::vecswitch::to_toml(&vecswitch_testbed::dut::vecswitch::config(
            &dev_ports,
            &[(0, 1)],
            vecswitch_testbed::dut::vecswitch::Mode::Xconnect,
            &ctl,
            None,
        ));
    let cfg = dir.0.join("dev.toml");
    std::fs::write(&cfg, toml).unwrap();
    let log = std::fs::File::create(dir.0.join("dev.log")).unwrap();
    let _dev = Reap(
        std::process::Command::new(&bin)
            .args(["run", "--config", &cfg.display().to_string()])
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap(),
    );
    vecswitch_testbed::wait_for(
        "device memif server socket",
        Duration::from_secs(20),
        || b.exists(),
    )
    .unwrap();

    let ports = [
        format!("memif:{}@server", a.display()),
        format!("memif:{}@client", b.display()),
    ];
    let mut tb = Testbed::build(Topology::external(&ports).unwrap()).unwrap();
    let gen_ports = tb.open_generator_ports().unwrap();
    tb.start(
        DutKind::External {
            counters_command: None,
        }
        .build(),
    )
    .unwrap();
    assert_eq!(tb.with_dut(|d| d.counters().unwrap()).unwrap(), None);
    let mut m = GenMeasurer::for_testbed(&tb, gen_ports, default_streams(64, true))
        .unwrap()
        .drain(Duration::from_millis(200))
        // The path is what this test is about, not the spacing: a generator descheduled by a
        // build sends its backlog late instead of dropping those slots as late (at load average
        // 14 it offered 3,852 of 4,000 with the default 200 µs threshold).
        .late_threshold(Duration::from_millis(500))
        .tolerance(0.02);
    // A first short trial while the device's own memif links settle.
    m.trial(Load::fps(1_000.0), Duration::from_millis(300))
        .unwrap();
    let r = m.trial(Load::fps(4_000.0), Duration::from_secs(1)).unwrap();
    eprintln!("{r:?}");
    // Both directions went through the device (2 000 frames/s each way): more than half of the
    // frames came back, so not only one direction. A few may be lost by a debug-build switch on
    // a loaded machine; the path is what this test is about.
    assert!(r.offered_frames >= 3_900, "{r:?}");
    assert!(
        r.received_frames as f64 >= 0.99 * r.offered_frames as f64,
        "{r:?}"
    );
    drop(m);
    tb.stop().unwrap();
}
