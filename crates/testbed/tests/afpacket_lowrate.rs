//! Regression (issue 8): vecswitch cross-connect over veth (AF_PACKET ports), driven by the real
//! generator at a low rate for a few seconds, loses nothing and accounts for every frame; the DUT's
//! kernel receive work (RPS on its veth ends) is steered off its busy-polling worker's CPU and
//! recorded in the placement; and, at 20 kfps each way for 5 s, no receive ring is ever full at a
//! poll and the worker's longest poll gap stays below the ring's capacity in time (issue 24's
//! guard for kernel ports). Root: namespaces and veth pairs are created by the test and removed
//! by the testbed's guards, also when an assert fails. (Own test binary: it runs alone.)

mod common;

use std::time::Duration;

use common::{phy2phy_veth_with, vecswitch_bin};
use vecswitch_lab::{Load, Measurer};
use vecswitch_testbed::placement::KernelRx;
use vecswitch_testbed::{default_streams, generator_placement, DutKind, GenMeasurer};

#[test]
fn vecswitch_afpacket_over_veth_at_low_rate_loses_nothing_and_accounts_every_frame() {
    let (tb, ports) = phy2phy_veth_with(DutKind::VecswitchXconnect {
        bin: vecswitch_bin(),
    });
    let cores = tb.wiring().cores;
    let placement = tb.placement(generator_placement());
    let dut_side: Vec<&String> = placement
        .kernel_rx
        .iter()
        .filter(|l| l.contains("(dut side)"))
        .collect();
    assert_eq!(dut_side.len(), 2, "{:?}", placement.kernel_rx);
    // An AF_PACKET end has no NAPI to thread: its backlog work stays off the worker's CPU
    // (CorePlan::dut_kernel_rx, `backlog_cpu`).
    let backlog_cpu = match cores.dut_kernel_rx(true) {
        KernelRx::ThreadedNapi { backlog_cpu, .. } => backlog_cpu,
        KernelRx::Rps { cpu } => cpu,
    };
    let want = format!("rps_cpus {:x}", 1u64 << backlog_cpu);
    for line in dut_side {
        assert!(line.ends_with(&want), "{line}: expected {want}");
    }

    let mut m = GenMeasurer::for_testbed(&tb, ports, default_streams(64, true))
        .unwrap()
        .warmup(Duration::from_millis(500))
        .drain(Duration::from_millis(500));
    // 2,000 frames/s each way for 3 s: far below anything this path can carry.
    let r = m.trial(Load::fps(4_000.0), Duration::from_secs(3)).unwrap();
    let rep = m.reports().last().unwrap().clone();
    assert!(r.offered_frames >= 11_000, "{r:?}");
    assert_eq!(r.received_frames, r.offered_frames, "frames lost: {r:?}");
    common::assert_streams_lossless(&rep);

    // Issue 24's regression guard for kernel ports (counted, not timed): 20,000 frames/s each
    // way for 5 s loses nothing, no poll finds a receive ring full, and the worker's longest gap
    // between two polls stays below what its ring holds at that rate. The ring is the port's
    // default (frame mode, 128 blocks of 64 KiB in slots sized to the MTU: 5,248 at 1,500, `show
    // ports`), so at least 4,096 slots, 205 ms of one direction at 20 kfps; the kernel drops what arrives once it is full (`tp_drops`), so a longer stall is a
    // loss, which this bounds before the loss assert would see it.
    const RING_SLOTS: u64 = 4096;
    const EACH_WAY_FPS: u64 = 20_000;
    let r = m
        .trial(Load::fps(2.0 * EACH_WAY_FPS as f64), Duration::from_secs(5))
        .unwrap();
    let rep = m.reports().last().unwrap().clone();
    let w = r
        .device_worker
        .expect("vecswitch reports its worker per trial (show runtime)");
    let why = format!("{r:?}");
    assert!(r.offered_frames >= 2 * 5 * EACH_WAY_FPS * 95 / 100, "{why}");
    assert_eq!(r.received_frames, r.offered_frames, "frames lost: {why}");
    common::assert_streams_lossless(&rep);
    assert_eq!(
        w.ring_full_polls,
        Some(0),
        "a receive ring was full at a poll: {why}"
    );
    let ring_ns = RING_SLOTS * 1_000_000_000 / EACH_WAY_FPS;
    assert!(
        w.longest_gap_ns < ring_ns,
        "longest poll gap {} ns ≥ the ring's {ring_ns} ns: {why}",
        w.longest_gap_ns
    );
    tb.check_alive().unwrap();
}
