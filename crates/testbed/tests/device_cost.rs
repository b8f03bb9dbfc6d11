//! Device cost end to end (root): trials at fixed loads through a real device, its busy time
//! read around each (vecswitch's own busy clocks over memif; the kernel bridge's kernel time of
//! the DUT CPU over veth). Asserts mechanisms and orders of magnitude, not speed: the machine is
//! shared. (Own test binary: it runs alone, not beside the other forwarding tests.)

mod common;

use std::time::Duration;

use common::vecswitch_bin;
use vecswitch_testbed::devcost::measure_device_cost;
use vecswitch_testbed::dut::linux_bridge::LinuxBridgeDut;
use vecswitch_testbed::{default_streams, DutKind, GenMeasurer, Link, Testbed, Topology};

#[test]
fn vecswitch_cost_comes_from_its_own_busy_clocks() {
    let bin = vecswitch_bin();
    assert!(
        bin.is_file(),
        "build the binary first: cargo build -p vecswitch-cli ({})",
        bin.display()
    );
    let mut tb = Testbed::build(Topology::Phy2Phy { link: Link::Memif }).unwrap();
    let ports = tb.open_generator_ports().unwrap();
    tb.start(DutKind::VecswitchXconnect { bin }.build())
        .unwrap();
    let mut m = GenMeasurer::for_testbed(&tb, ports, default_streams(64, false))
        .unwrap()
        .drain(Duration::from_millis(200));
    let loads = [10_000.0, 40_000.0];
    let rows = measure_device_cost(
        &tb,
        &mut m,
        "phy2phy-memif",
        "64",
        &loads,
        Duration::from_secs(1),
        2,
    )
    .unwrap();
    eprintln!("{}", vecswitch_lab::device_cost::markdown(&rows));
    assert_eq!(rows.len(), 2);
    for (r, load) in rows.iter().zip(loads) {
        assert_eq!(r.device, "vecswitch-xconnect");
        assert_eq!(r.intended_fps, load);
        assert!(r.method.contains("own busy clocks"), "{r:?}");
        // The device counted what it received: no more than the generator sent, no less than
        // came back.
        let rx = r.device_rx_fps.expect("vecswitch counts received frames");
        assert!(
            rx <= r.offered_fps * 1.001 && rx >= r.received_fps * 0.999 && rx > 0.0,
            "{r:?}"
        );
        let busy = r.busy_fraction.expect("busy fraction");
        assert!(busy > 0.0 && busy < 1.0, "{r:?}");
        let cpp = r.cycles_per_packet.expect("cycles per packet");
        assert!(cpp > 10.0 && cpp < 10_000_000.0, "{r:?}");
        let cap = r
            .estimated_capacity_fps
            .expect("an estimate below saturation");
        assert!(cap > rx, "{r:?}");
        let idle = r.idle_poll_fraction.expect("idle polls counted");
        assert!((0.0..=1.0).contains(&idle), "{r:?}");
    }
    // Four times the load, about four times the busy time (the cost per packet is roughly
    // constant): at least twice as busy.
    assert!(
        rows[1].busy_fraction.unwrap() > 1.5 * rows[0].busy_fraction.unwrap(),
        "{rows:?}"
    );
}

#[test]
fn kernel_bridge_cost_comes_from_the_dut_cpu_kernel_time() {
    let mut tb = Testbed::build(Topology::Phy2Phy { link: Link::Veth }).unwrap();
    let ports = tb.open_generator_ports().unwrap();
    tb.start(Box::new(LinuxBridgeDut::new())).unwrap();
    let mut m = GenMeasurer::for_testbed(&tb, ports, default_streams(64, false))
        .unwrap()
        .drain(Duration::from_millis(200));
    let rows = measure_device_cost(
        &tb,
        &mut m,
        "phy2phy-veth",
        "64",
        &[50_000.0],
        Duration::from_secs(2),
        1,
    )
    .unwrap();
    eprintln!("{}", vecswitch_lab::device_cost::markdown(&rows));
    let r = &rows[0];
    assert!(r.method.contains("softirq"), "{r:?}");
    let rx = r.device_rx_fps.expect("veth counters");
    assert!(rx > 0.9 * r.offered_fps, "{r:?}");
    // 100 000 frames through the bridge cost some kernel time on its CPU (10 ms ticks: at
    // least one tick in 2 s).
    let busy = r.busy_fraction.expect("busy fraction");
    assert!(busy > 0.0, "{r:?}");
    assert!(r.cycles_per_packet.is_some_and(|c| c > 0.0), "{r:?}");
    assert_eq!(r.idle_poll_fraction, None);
}
