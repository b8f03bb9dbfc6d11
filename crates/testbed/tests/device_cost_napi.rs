//! Device cost of a DUT whose veth receive runs in threaded NAPI on the DUT CPU (issue 8; the
//! lab's placement, docs/TESTBED.md "Where the kernel's veth receive work runs"): the
//! `napi/<end>-<id>` kthreads' CPU time is part of the device's busy time
//! (`devcost::CostMethod::DeviceClocksAndNapi`), as the Linux bridge's softirq time is part of
//! its own. Root; phy2phy-veth with vecswitch AF_XDP ports, built and removed by the testbed's
//! guards. Asserts mechanisms (the method, the threads' time having grown, a busy time that
//! covers it), not speed: the machine is shared. (Own test binary.)

mod common;

use std::time::Duration;

use common::{phy2phy_veth_with, vecswitch_bin};
use vecswitch_testbed::devcost::{measure_device_cost, napi_cpu_ns};
use vecswitch_testbed::{default_streams, DutKind, GenMeasurer};

#[test]
fn afxdp_dut_cost_includes_its_napi_threads() {
    let (tb, ports) = phy2phy_veth_with(DutKind::VecswitchXconnectAfxdp {
        bin: vecswitch_bin(),
    });
    let napi = tb.napi_threads().to_vec();
    assert!(
        !napi.is_empty(),
        "the placement gave the DUT ends no NAPI threads"
    );
    let before = napi_cpu_ns(&napi).expect("the NAPI threads' schedstat");
    let mut m = GenMeasurer::for_testbed(&tb, ports, default_streams(64, false))
        .unwrap()
        .drain(Duration::from_millis(200));
    let secs = 2.0;
    let rows = measure_device_cost(
        &tb,
        &mut m,
        "phy2phy-veth",
        "64",
        &[10_000.0],
        Duration::from_secs_f64(secs),
        1,
    )
    .unwrap();
    let after = napi_cpu_ns(&napi).expect("the NAPI threads' schedstat");
    eprintln!("{}", vecswitch_lab::device_cost::markdown(&rows));
    let r = &rows[0];
    assert!(r.method.contains("NAPI threads"), "{r:?}");
    // The threads received every frame of the trial: they ran.
    let napi_s = (after - before) as f64 / 1e9;
    assert!(
        napi_s > 0.0,
        "NAPI threads' time did not grow: {before} -> {after}"
    );
    let rx = r.device_rx_fps.expect("vecswitch counts received frames");
    assert!(rx > 0.0, "{r:?}");
    // The busy fraction holds the threads' time of the trial; measured around the whole call
    // (warm-up, drain), theirs can only be larger than the trial's share. The worker's own
    // busy time adds to it, so the busy fraction is positive and the cost per packet finite.
    let busy = r.busy_fraction.expect("busy fraction");
    assert!(busy > 0.0, "{r:?}");
    assert!(
        r.cycles_per_packet
            .is_some_and(|c| c > 0.0 && c.is_finite()),
        "{r:?}"
    );
    tb.check_alive().unwrap();
}
