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

// Ignored until it has passed three times in a row (issue 7, item 1). History:
// - 2026-11-23 20:40: ~1,800 "unexplained" frames per trial were frames the generator had placed
//   in its AF_XDP transmit ring that the back-pressured kernel had not taken when the send phase
//   ended; the drain now kicks the ring (crates/gen/src/engine.rs, `Generator::drain`).
// - 2026-11-23 23:58, idle machine: part 1 read 25,548 fps (+2.2 %): the frames drained from the
//   ring after the send phase were divided by the send phase. The rate is now taken over the
//   receive window (`TrialResult::received_fps`, `rx_window`), and late slots that fell due
//   behind a throttled send are back-pressure (`Lateness::slots_dropped_blocked`), not "tester
//   late" (unit tests on synthetic timelines: crates/gen/src/engine.rs, crates/testbed/src/
//   measurer.rs, crates/lab/src/measurer.rs).
// - 2026-11-24 01:10-01:17, load average 15-17 (eight engineers building on the two cores), four
//   runs: never conclusive. With the default late threshold half of the slots were dropped (44 ms
//   behind); with the 40 ms threshold below the generator was still 64-124 ms behind in some
//   pause (tester late, the test says so and fails); at nice -20 (tried, removed) it held its
//   schedule — the trial was labelled back-pressured, 604 of its 670 late slots behind
//   throttled sends (by the first rule, which also counted sends slower than the threshold; now
//   only refused ones count), the frames crossing over 3,076.8 ms for a 3,003.8 ms send phase — but the
//   shaper then passed only 22,057 fps: the bridge's and tbf's softirq work shares the
//   generator's CPU and was starved. A fifth run with the final code (02:13, load average 12,
//   nice 0): generator on schedule (25 ms behind at worst, no slot dropped), trial labelled
//   back-pressured, frames crossing over 3,081.8 ms for a 3,007.9 ms send phase, and the shaper
//   passed 23,850 fps (-4.6 %): tbf's bucket is 32 kbit (~66 frames, 2.6 ms at 25 kfps), so a
//   softirq delayed by the load loses tokens — the loaded kernel really forwarded less, the
//   device itself changes under load. So the test cannot be robust on a machine this loaded; it
//   has not yet run on an idle one since the fix. On an idle machine (2026-11-24 03:07–03:16 UTC,
//   load average 0.02–0.96) it then passed three times in a row (45.8 s each), so it runs in CI
//   (root tests serially on an otherwise idle two-core machine); on a loaded one it fails and says
//   why (tester late, or the loaded kernel's tbf forwarding less).
#[test]
fn tbf_shaped_bridge_is_found_back_pressured_within_2_percent() {
    let (tb, ports, shaper_if) = shaped_bridge();
    let mut m = GenMeasurer::for_testbed(&tb, ports, default_streams(64, false))
        .unwrap()
        // Even on an idle machine the generator's thread is away for ~4 ms once or twice in a
        // 4 s trial (measured 2026-11-23): ~130 slots of 110,000 dropped as late, 0.12 %. Late
        // slots are never offered, so they cannot be charged to the device; 1 % of them is
        // tolerated before a trial is judged "tester late".
        .tolerance(0.01)
        // The device's queue is the generator's socket budget (the AF_XDP transmit ring, 2,048
        // frames: 55 ms at 37.5 kfps, 82 ms at the shaper's 25 kfps; METHODOLOGY.md,
        // "Back-pressure"). A backlog of up to 40 ms after the generator was descheduled fits in
        // it, so sending it does not change what the shaper passes (its answer does not depend
        // on the spacing within 40 ms): slots later than that are dropped and counted as usual.
        // On a loaded machine (load average 14-17 on the two cores, 2026-11-24) the generator
        // was up to 44 ms behind and the default 0.85 ms threshold dropped half of the slots.
        .late_threshold(Duration::from_millis(40))
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
    // The forwarding rate is taken over the receive window (first to last frame received): the
    // frames the generator's ring still held when the send phase ended cross after it, and
    // dividing them by the send phase read +2.2 % on an idle machine (2026-11-23).
    let rx = t.received_fps();
    let late = m.reports().last().unwrap().lateness;
    let r = m.reports().last().unwrap();
    assert!(
        (rx - SHAPED_FPS).abs() <= SHAPED_FPS * 0.02,
        "received {rx:.0} fps at 37.5 kpps over a {:.1} ms window (send phase {:.1} ms), the \
         shaper passes {SHAPED_FPS:.0}. Late slots: {} behind throttled sends (back-pressure), \
         {} while the generator was descheduled ({:.1} ms behind at worst). {}",
        r.rx_last_seconds * 1e3 - r.rx_first_seconds * 1e3,
        r.tx_seconds * 1e3,
        late.slots_dropped_blocked,
        late.slots_dropped_descheduled(),
        late.max_behind_ns as f64 / 1e6,
        if late.slots_dropped_descheduled() > 0 && rx < SHAPED_FPS {
            // A generator descheduled for longer than the shaper's queue lasts (its socket
            // budget, ≈ 80 ms at 25 kpps) lets the shaper idle: the device is not measured.
            "The generator was descheduled: the machine may be too busy to measure this device"
        } else {
            ""
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
