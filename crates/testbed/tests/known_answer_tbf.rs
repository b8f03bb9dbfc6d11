//! The known-answer device of issue 7 item 3: a Linux bridge in the DUT namespace with a token
//! bucket shaper on its egress veth toward the generator's receive port
//! (`tc qdisc add dev VETH root tbf rate 12mbit burst 32kbit latency 400ms`). The shaper throttles the
//! sender instead of dropping (DESIGN.md's facts table, measured there at 48 Mbit/s; 12 Mbit/s here so
//! that the generator holds its schedule at 1.5× the shaper's rate): 12 Mbit/s of 60-byte frames
//! (64 B with FCS) is 25,000 frames/s. The lab must find that rate within 2 %, label the
//! trials above it back-pressured — never "tester-limited, the device may forward more", never
//! "no loss at 1.5× its rate". Root; namespaces and veths are created by the testbed and removed by its
//! guards even when an assert fails.

use std::time::Duration;

use vecswitch_lab::procedures::throughput::{throughput, ThroughputConfig};
use vecswitch_lab::{Load, Measurer, TrialLimit};
use vecswitch_testbed::dut::linux_bridge::LinuxBridgeDut;
use vecswitch_testbed::{default_streams, GenMeasurer, Link, PortEnd, Testbed, Topology};

/// The shaper's rate in frames/s: 12 Mbit/s ÷ (60 B × 8).
const SHAPED_FPS: f64 = 12e6 / (60.0 * 8.0);

fn shaped_bridge() -> (Testbed, Vec<Box<dyn vecswitch_ports::Port>>, String) {
    let mut tb = Testbed::build(Topology::Phy2Phy { link: Link::Veth }).unwrap();
    let ports = tb.open_generator_ports().unwrap();
    tb.start(Box::new(LinuxBridgeDut::new())).unwrap();
    // The DUT's port toward the generator's receive port (gen port 1).
    let PortEnd::Veth { ifname, .. } = &tb.wiring().dut_ports[1] else {
        panic!(
            "phy2phy-veth has veth DUT ports: {:?}",
            tb.wiring().dut_ports
        );
    };
    let ifname = ifname.clone();
    tb.dut_netns()
        .exec(
            "tc",
            &[
                "qdisc", "add", "dev", &ifname, "root", "tbf", "rate", "12mbit", "burst", "32kbit",
                "latency", "400ms",
            ],
        )
        .unwrap_or_else(|e| panic!("tc tbf on {ifname} (needs root and iproute2's tc): {e}"));
    (tb, ports, ifname)
}

/// The shaper's own counter: frames tbf dropped on `ifname` so far (`tc -s qdisc`'s "dropped
/// N"). Back-pressure means it stays 0: a frame the shaper cannot queue is refused at the
/// sender's socket, not dropped in the device (METHODOLOGY.md, "Back-pressure").
fn qdisc_drops(tb: &Testbed, ifname: &str) -> u64 {
    let out = tb
        .dut_netns()
        .exec("tc", &["-s", "qdisc", "show", "dev", ifname])
        .unwrap_or_else(|e| panic!("tc -s qdisc show dev {ifname}: {e}"));
    out.split("dropped ")
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no \"dropped N\" in tc -s qdisc output: {out}"))
}

/// Explains a trial the tester could not judge: on a machine too busy to hold the schedule, the
/// test cannot measure the device and says so (it fails: it never passes without measuring).
fn busy_machine(what: &str, t: &vecswitch_lab::TrialResult) -> String {
    format!(
        "{what}: the generator could not hold its schedule ({}; {:?}). The machine is too busy \
         to measure this device; run the test on an idle machine",
        t.limit, t.limit_reasons
    )
}

// Ignored until it has passed on an idle machine (issue 7, item 3). The ~1,800 "unexplained"
// frames per trial seen on 2026-11-23 at 20:40 were frames the generator had placed in its
// AF_XDP transmit ring (counted as sent) that the back-pressured kernel had not taken when the
// send phase ended: the drain did not kick the ring, so they were never transmitted. The drain
// now kicks it (crates/gen/src/engine.rs, `Generator::drain`); A/B on the same shaped bridge at a
// tenth of the rate (4.8 Mbit/s, 15 kfps offered, 2026-11-23 22:40, load average 12): without the
// kick one trial of four left 1,428 frames unexplained with tbf dropping none; with it 0 in every
// trial, including a back-pressured one (5,500 refused, tbf dropped 0). On this loaded machine the
// generator is 12-50 ms behind its schedule at 37.5 kfps, so the test fails with "too busy"
// (it never passes without measuring). Run it with
// `cargo test -p vecswitch-testbed --test known_answer_tbf -- --ignored`.
#[test]
#[ignore = "needs an idle machine: the generator must hold 37.5 kfps (issue 7 item 3)"]
fn tbf_shaped_bridge_is_found_back_pressured_within_2_percent() {
    let (tb, ports, shaper_if) = shaped_bridge();
    let mut m = GenMeasurer::for_testbed(&tb, ports, default_streams(64, false))
        .unwrap()
        // Even on an idle machine the generator's thread is away for ~4 ms once or twice in a
        // 4 s trial (measured 2026-11-23): ~130 slots of 110,000 dropped as late, 0.12 %. Late
        // slots are never offered, so they cannot be charged to the device; 1 % of them is
        // tolerated before a trial is judged "tester late".
        .tolerance(0.01)
        .warmup(Duration::from_millis(100))
        .drain(Duration::from_millis(500));

    // 1. At 37.5 kpps the device takes 25 kpps: back-pressured, the refused frames are its loss —
    //    never "no loss at 37.5 kpps", never "tester-limited, the device may forward more".
    let drops_before = qdisc_drops(&tb, &shaper_if);
    let t = m
        .trial(Load::fps(37_500.0), Duration::from_secs(3))
        .unwrap();
    let shaper_dropped = qdisc_drops(&tb, &shaper_if) - drops_before;
    assert!(
        !matches!(t.limit, TrialLimit::TesterLate { .. }),
        "{}",
        busy_machine("37.5 kpps", &t)
    );
    assert!(
        t.back_pressured(),
        "37.5 kpps: {} {:?} {:?}",
        t.limit,
        t.limit_reasons,
        t.accounting
    );
    assert!(!t.tester_limited, "{t:?}");
    assert!(
        t.lost_frames() > 0 && !t.within(0.0),
        "no loss at 37.5 kpps: {t:?}"
    );
    let acc = t.accounting.clone().unwrap();
    // Every frame accounted for: the refusals are the device's flow control, the shaper dropped
    // none, and none is unexplained — the drain kicks the generator's transmit ring, which
    // still holds up to a ring's worth of frames when the send phase ends (before that fix,
    // ~1,800 frames per trial stayed there, "sent" and never transmitted).
    assert!(acc.refused_by_device > 0, "{acc:?}");
    assert_eq!(shaper_dropped, 0, "tbf dropped frames: {acc:?}");
    assert_eq!(acc.unexplained, 0, "{acc:?}");
    let rx = t.received_fps();
    let late = m.reports().last().unwrap().lateness;
    assert!(
        (rx - SHAPED_FPS).abs() <= SHAPED_FPS * 0.02,
        "received {rx:.0} fps at 37.5 kpps, the shaper passes {SHAPED_FPS:.0}. {}",
        if late.slots_dropped > 0 {
            // A generator descheduled for longer than the shaper's queue lasts (its socket
            // buffer, ≈ 11 ms at 25 kpps) lets the shaper idle: the device is not measured.
            format!(
                "The generator was descheduled ({} slots dropped, {:.1} ms behind at worst): \
                 the machine is too busy to measure this device; run it on an idle machine",
                late.slots_dropped,
                late.max_behind_ns as f64 / 1e6
            )
        } else {
            String::new()
        }
    );

    // 2. The RFC 2544 throughput search through the same measurer finds the shaper's rate
    //    within 2 %. Each trial lasts 4 s: the generator's transmit ring and socket buffer fill
    //    at (load − 25 kpps) above the shaper, so refusals start within the trial.
    let mut cfg = ThroughputConfig::new(15_000.0, 40_000.0, Duration::from_secs(4));
    cfg.resolution_fps = 250.0;
    cfg.max_trials = 30;
    let res = throughput(&mut m, &cfg).unwrap();
    for tr in &res.trials {
        assert!(
            !matches!(tr.limit, TrialLimit::TesterLate { .. }),
            "{}",
            busy_machine(&format!("{:.0} fps", tr.intended_load.fps), tr)
        );
    }
    let found = res.throughput_fps.expect("a throughput");
    assert!(
        (found - SHAPED_FPS).abs() <= SHAPED_FPS * 0.02,
        "throughput {found:.0} fps, shaper {SHAPED_FPS:.0}: {:?}",
        res.trials
            .iter()
            .map(|t| (t.intended_load.fps, t.limit.label(), t.lost_frames()))
            .collect::<Vec<_>>()
    );
    assert!(
        !res.tester_limited,
        "back-pressure is the device's limit, not the tester's"
    );
    // Every failed load above the result was back-pressured.
    let above: Vec<_> = res
        .trials
        .iter()
        .filter(|t| t.intended_load.fps > found * 1.02)
        .collect();
    assert!(!above.is_empty());
    assert!(
        above.iter().all(|t| t.back_pressured() && !t.within(0.0)),
        "{above:?}"
    );
}
