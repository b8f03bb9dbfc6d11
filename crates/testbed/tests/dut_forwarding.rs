//! DUTs forward frames end to end on the topologies the testbed builds (root; namespaces, veth and
//! memif created by each test and removed by the guards even when an assert fails).

mod common;

use std::time::Duration;

use common::{exchange, vecswitch_bin, wait_forwarding};
use vecswitch_buffer::Pool;
use vecswitch_ports::Port;
use vecswitch_testbed::dut::linux_bridge::LinuxBridgeDut;
use vecswitch_testbed::dut::ovs::OvsDut;
use vecswitch_testbed::dut::testpmd::TestpmdDut;
use vecswitch_testbed::{
    generator_placement, open_generator_ports, wait_links_up, Dut, DutKind, Link, Scale, Testbed,
    Topology,
};

const A: [u8; 6] = [0x02, 0, 0, 0, 0, 0xa1];
const B: [u8; 6] = [0x02, 0, 0, 0, 0, 0xb2];

/// Builds `topo`, opens the generator ports (memif servers must listen before the DUT starts),
/// starts `dut`.
fn start(topo: Topology, dut: Box<dyn Dut>) -> (Testbed, Vec<Box<dyn Port>>) {
    let mut tb = Testbed::build(topo).unwrap();
    let ports = tb.open_generator_ports().unwrap();
    tb.start(dut).unwrap();
    (tb, ports)
}

/// Sends `n` frames 0→1 and `n` frames 1→0 and checks every one arrived once, unchanged.
fn both_ways(ports: &mut [Box<dyn Port>], n: u32) {
    wait_links_up(ports, Duration::from_secs(20)).unwrap();
    let mut pool = Pool::new(4096);
    let (p0, p1) = ports.split_at_mut(1);
    let t = Duration::from_secs(20);
    wait_forwarding(&mut pool, &mut p0[0], &mut p1[0], B, A, t);
    wait_forwarding(&mut pool, &mut p1[0], &mut p0[0], A, B, t);
    let fwd = exchange(
        &mut pool,
        &mut p0[0],
        &mut p1[0],
        B,
        A,
        0xf00d,
        n,
        Duration::from_secs(20),
    );
    assert_eq!(fwd.sent, n);
    assert_eq!(
        fwd.received.len() as u32,
        n,
        "0->1 lost {} of {n}",
        n - fwd.received.len() as u32
    );
    assert_eq!(fwd.duplicates, 0);
    assert_eq!(
        fwd.first.as_deref(),
        Some(&common::frame(B, A, 0xf00d, 0)[..])
    );
    let back = exchange(
        &mut pool,
        &mut p1[0],
        &mut p0[0],
        A,
        B,
        0xbeef,
        n,
        Duration::from_secs(20),
    );
    assert_eq!(
        back.received.len() as u32,
        n,
        "1->0 lost {} of {n}",
        n - back.received.len() as u32
    );
    assert_eq!(back.duplicates, 0);
}

#[test]
fn linux_bridge_phy2phy_veth_forwards_frames_both_ways() {
    let (tb, mut ports) = start(
        Topology::Phy2Phy { link: Link::Veth },
        Box::new(LinuxBridgeDut::new()),
    );
    both_ways(&mut ports, 500);
    let pl = tb.placement(generator_placement());
    assert!(pl
        .processes
        .iter()
        .any(|p| p.role == "dut" && p.name == "kernel-bridge"));
    // Scale: static FDB entries land in the bridge.
    tb.configure_scale(Scale::MacEntries(100)).unwrap();
    let fdb = tb
        .dut_netns()
        .exec("bridge", &["fdb", "show", "br", "br0"])
        .unwrap();
    assert_eq!(
        fdb.lines()
            .filter(|l| l.starts_with("02:5c:") && l.contains("static"))
            .count(),
        100
    );
    assert!(tb.configure_scale(Scale::Flows(10)).is_err());
}

#[test]
fn linux_bridge_refuses_memif() {
    let mut tb = Testbed::build(Topology::Phy2Phy { link: Link::Memif }).unwrap();
    let _ports = tb.open_generator_ports().unwrap();
    let e = tb
        .start(Box::new(LinuxBridgeDut::new()))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("linux-bridge") && e.contains("phy2phy-memif"),
        "{e}"
    );
}

#[test]
fn ovs_phy2phy_veth_forwards_frames_both_ways() {
    let (mut tb, mut ports) = start(
        Topology::Phy2Phy { link: Link::Veth },
        Box::new(OvsDut::new()),
    );
    let desc = tb.describe_dut().unwrap();
    eprintln!("ovs: {desc}");
    assert!(
        desc.contains("Open vSwitch") && desc.contains("dut0:"),
        "{desc}"
    );
    both_ways(&mut ports, 300);
    tb.configure_scale(Scale::Flows(50)).unwrap();
    both_ways(&mut ports, 100);
    let pl = tb.placement(generator_placement());
    let vswitchd = pl
        .processes
        .iter()
        .find(|p| p.name == "dut-ovs-vswitchd")
        .unwrap();
    let dut_cpu = tb.wiring().cores.dut.to_string();
    assert_eq!(vswitchd.cpus, vec![dut_cpu], "{pl:?}");
    // Clean shutdown leaves no daemon behind.
    let pids: Vec<u32> = pl
        .processes
        .iter()
        .filter(|p| p.role == "dut")
        .map(|p| p.pid)
        .collect();
    tb.stop().unwrap();
    for pid in pids {
        // Reaped by the guards, so the pid is gone (pid reuse within the test is not expected).
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "ovs process {pid} still there"
        );
    }
}

#[test]
fn testpmd_io_phy2phy_memif_forwards_frames_both_ways() {
    let (tb, mut ports) = start(
        Topology::Phy2Phy { link: Link::Memif },
        Box::new(TestpmdDut::new()),
    );
    both_ways(&mut ports, 1000);
    let pl = tb.placement(generator_placement());
    let dut = pl.processes.iter().find(|p| p.role == "dut").unwrap();
    assert_eq!(dut.cpus, vec![tb.wiring().cores.dut.to_string()], "{pl:?}");
}

#[test]
fn testpmd_io_counts_what_it_forwarded() {
    let tb = Testbed::build(Topology::Phy2Phy { link: Link::Memif }).unwrap();
    let mut ports = open_generator_ports(tb.wiring()).unwrap();
    let mut dut = TestpmdDut::new();
    dut.setup(tb.wiring()).unwrap();
    {
        wait_links_up(&mut ports, Duration::from_secs(20)).unwrap();
        let mut pool = Pool::new(4096);
        let (p0, p1) = ports.split_at_mut(1);
        let ex = exchange(
            &mut pool,
            &mut p0[0],
            &mut p1[0],
            B,
            A,
            7,
            777,
            Duration::from_secs(20),
        );
        assert_eq!(ex.received.len(), 777);
        // Read testpmd's counters while the memif peers are still connected (they reset on
        // disconnect): stopping testpmd prints them.
        dut.teardown().unwrap();
    }
    let stats = dut.port_stats();
    assert_eq!(stats.len(), 2, "{stats:?}");
    assert_eq!(stats[0].1.rx_packets, 777);
    assert_eq!(stats[1].1.tx_packets, 777);
    drop(tb);
}

#[test]
fn ovs_dpdk_refuses_with_reason() {
    let mut tb = Testbed::build(Topology::Phy2Phy { link: Link::Memif }).unwrap();
    let _ports = tb.open_generator_ports().unwrap();
    let e = tb.start(DutKind::OvsDpdk.build()).unwrap_err().to_string();
    assert!(
        e.contains("ovs-dpdk") && e.contains("memif") && e.contains("TESTBED.md"),
        "{e}"
    );
}

#[test]
fn vecswitch_xconnect_phy2phy_memif_forwards_frames_both_ways() {
    let bin = vecswitch_bin();
    assert!(
        bin.is_file(),
        "build the binary first: cargo build -p vecswitch-cli ({})",
        bin.display()
    );
    let (_tb, mut ports) = start(
        Topology::Phy2Phy { link: Link::Memif },
        DutKind::VecswitchXconnect { bin }.build(),
    );
    both_ways(&mut ports, 1000);
}

#[test]
fn vecswitch_xconnect_phy2phy_veth_forwards_frames_both_ways() {
    let bin = vecswitch_bin();
    assert!(
        bin.is_file(),
        "build the binary first: cargo build -p vecswitch-cli ({})",
        bin.display()
    );
    let (_tb, mut ports) = start(
        Topology::Phy2Phy { link: Link::Veth },
        DutKind::VecswitchXconnect { bin }.build(),
    );
    both_ways(&mut ports, 300);
}

#[test]
fn memif_start_before_generator_ports_is_refused_with_the_fix() {
    let mut tb = Testbed::build(Topology::Phy2Phy { link: Link::Memif }).unwrap();
    let e = tb
        .start(Box::new(TestpmdDut::new()))
        .unwrap_err()
        .to_string();
    assert!(e.contains("open_generator_ports"), "{e}");
}

#[test]
fn vecswitch_bridge_phy2phy_memif_forwards_frames_both_ways() {
    let bin = vecswitch_bin();
    assert!(
        bin.is_file(),
        "build the binary first: cargo build -p vecswitch-cli ({})",
        bin.display()
    );
    let (tb, mut ports) = start(
        Topology::Phy2Phy { link: Link::Memif },
        DutKind::VecswitchBridge { bin: bin.clone() }.build(),
    );
    both_ways(&mut ports, 500);
    // Scale: static MAC entries applied by reload; the bridge still forwards.
    tb.configure_scale(Scale::MacEntries(200)).unwrap();
    let ctl = tb.run_dir().file("dut.ctl").display().to_string();
    let out = std::process::Command::new(&bin)
        .args(["ctl", "--socket", &ctl, "show", "mac", "br0"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        text.lines().filter(|l| l.contains("02:5c:")).count(),
        200,
        "{text}"
    );
    both_ways(&mut ports, 200);
    assert!(tb.configure_scale(Scale::Flows(5)).is_err());
}

#[test]
fn ovs_with_system_ports_forwards_frames_both_ways() {
    let (tb, mut ports) = start(
        Topology::Phy2Phy { link: Link::Veth },
        Box::new(OvsDut::new().system_ports_only()),
    );
    let desc = tb.describe_dut().unwrap();
    assert!(
        desc.contains("dut0:system") && desc.contains("dut1:system"),
        "{desc}"
    );
    both_ways(&mut ports, 100);
}

/// Sends `n` frames 0→1 between two readings of the DUT's own counters and returns their
/// difference (after checking that every frame arrived).
fn counted(tb: &Testbed, ports: &mut [Box<dyn Port>], n: u32) -> vecswitch_testbed::DeviceCounters {
    wait_links_up(ports, Duration::from_secs(20)).unwrap();
    let read = || {
        tb.with_dut(|d| d.counters())
            .expect("DUT started")
            .unwrap()
            .expect("this driver reads counters")
    };
    let before = read();
    let mut pool = Pool::new(4096);
    let (p0, p1) = ports.split_at_mut(1);
    let ex = exchange(
        &mut pool,
        &mut p0[0],
        &mut p1[0],
        B,
        A,
        0xc0de,
        n,
        Duration::from_secs(20),
    );
    assert_eq!(
        ex.received.len() as u32,
        n,
        "lost {}",
        n - ex.received.len() as u32
    );
    let after = read();
    let d = after.delta(&before);
    eprintln!(
        "{}: before {before:?}\nafter {after:?}\ndelta {d:?}",
        tb.describe_dut().unwrap()
    );
    d
}

/// The frames of one exchange in a counter delta: at least `n`, and at most a few more (the
/// kernel's own frames on veth, e.g. IPv6 router solicitations, pass the DUT too).
fn moved_by(field: Option<u64>, n: u32, what: &str) {
    let v = field.unwrap_or_else(|| panic!("{what}: no counter"));
    assert!(
        v >= u64::from(n) && v <= u64::from(n) + 20,
        "{what}: moved by {v}, sent {n}"
    );
}

#[test]
fn vecswitch_counters_move_by_the_frames_sent() {
    let bin = vecswitch_bin();
    assert!(
        bin.is_file(),
        "build the binary first: cargo build -p vecswitch-cli ({})",
        bin.display()
    );
    let (tb, mut ports) = start(
        Topology::Phy2Phy { link: Link::Memif },
        DutKind::VecswitchXconnect { bin }.build(),
    );
    let d = counted(&tb, &mut ports, 3000);
    moved_by(d.rx_frames, 3000, "rx_frames");
    moved_by(d.tx_frames, 3000, "tx_frames");
    assert_eq!(d.tx_dropped, Some(0));
    assert_eq!(d.rx_dropped, Some(0));
    assert_eq!(d.internal_dropped, Some(0));
    assert!(d.busy_clocks.is_some_and(|c| c > 0), "{d:?}");
    assert!(d.total_polls.is_some_and(|p| p > 0), "{d:?}");
}

#[test]
fn testpmd_counters_move_by_the_frames_sent() {
    let (tb, mut ports) = start(
        Topology::Phy2Phy { link: Link::Memif },
        Box::new(TestpmdDut::new()),
    );
    let d = counted(&tb, &mut ports, 3000);
    moved_by(d.rx_frames, 3000, "rx_frames");
    moved_by(d.tx_frames, 3000, "tx_frames");
    assert_eq!(d.tx_dropped, Some(0));
    assert!(d.busy_clocks.is_some_and(|c| c > 0), "{d:?}");
    // Still forwards after the readings (the prompt round trips did not stop it).
    both_ways(&mut ports, 100);
}

#[test]
fn linux_bridge_counters_move_by_the_frames_sent() {
    let (tb, mut ports) = start(
        Topology::Phy2Phy { link: Link::Veth },
        Box::new(LinuxBridgeDut::new()),
    );
    let d = counted(&tb, &mut ports, 1000);
    moved_by(d.rx_frames, 1000, "rx_frames");
    moved_by(d.tx_frames, 1000, "tx_frames");
    assert_eq!(
        d.internal_dropped, None,
        "the kernel bridge has no drop counter"
    );
}

#[test]
fn ovs_counters_move_by_the_frames_sent() {
    let (tb, mut ports) = start(
        Topology::Phy2Phy { link: Link::Veth },
        Box::new(OvsDut::new()),
    );
    let d = counted(&tb, &mut ports, 1000);
    moved_by(d.rx_frames, 1000, "rx_frames");
    moved_by(d.tx_frames, 1000, "tx_frames");
    assert!(d.internal_dropped.is_some(), "{d:?}");
    assert!(d.busy_clocks.is_some_and(|c| c > 0), "{d:?}");
}
