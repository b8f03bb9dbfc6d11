//! PVP: generator → DUT → VNF (testpmd macswap over memif) → DUT → generator.

mod common;

use std::time::Duration;

use common::{exchange, frame, wait_forwarding};
use vecswitch_buffer::Pool;
use vecswitch_testbed::dut::testpmd::TestpmdDut;
use vecswitch_testbed::{
    generator_placement, wait_links_up, Dut, DutKind, Link, Testbed, Topology, VnfKind,
};

const A: [u8; 6] = [0x02, 0, 0, 0, 0, 0xa1];
const B: [u8; 6] = [0x02, 0, 0, 0, 0, 0xb2];

#[test]
fn pvp_memif_testpmd_io_with_macswap_vnf_forwards_both_ways() {
    pvp_forwards_both_ways(Box::new(TestpmdDut::new()));
}

#[test]
fn pvp_memif_vecswitch_xconnect_with_macswap_vnf_forwards_both_ways() {
    let bin = common::vecswitch_bin();
    assert!(
        bin.is_file(),
        "build the binary first: cargo build -p vecswitch-cli ({})",
        bin.display()
    );
    pvp_forwards_both_ways(DutKind::VecswitchXconnect { bin }.build());
}

#[test]
fn pvp_memif_testpmd_io_with_vecswitch_vnf_forwards_both_ways() {
    let bin = common::vecswitch_bin();
    assert!(
        bin.is_file(),
        "build the binary first: cargo build -p vecswitch-cli ({})",
        bin.display()
    );
    pvp_with(
        Box::new(TestpmdDut::new()),
        VnfKind::VecswitchXconnect { bin },
        "vnf-vecswitch",
        false,
    );
}

#[test]
fn pvp_veth_vecswitch_xconnect_with_macswap_vnf_forwards_both_ways() {
    let bin = common::vecswitch_bin();
    assert!(
        bin.is_file(),
        "build the binary first: cargo build -p vecswitch-cli ({})",
        bin.display()
    );
    pvp_on(
        Link::Veth,
        DutKind::VecswitchXconnect { bin }.build(),
        VnfKind::TestpmdMacswap,
        "vnf-testpmd",
        true,
    );
}

fn pvp_forwards_both_ways(dut: Box<dyn Dut>) {
    pvp_with(dut, VnfKind::TestpmdMacswap, "vnf-testpmd", true);
}

fn pvp_with(dut: Box<dyn Dut>, vnf: VnfKind, vnf_name: &str, swaps: bool) {
    pvp_on(Link::Memif, dut, vnf, vnf_name, swaps);
}

/// PVP on `link` through `vnf`; `swaps` when the VNF swaps MAC addresses (testpmd macswap) — a
/// cross-connect VNF forwards the frame unchanged.
fn pvp_on(link: Link, dut: Box<dyn Dut>, vnf: VnfKind, vnf_name: &str, swaps: bool) {
    let topo = Topology::Pvp { link, vnf };
    let mut tb = Testbed::build(topo).unwrap();
    let mut ports = tb.open_generator_ports().unwrap();
    tb.start(dut).unwrap();
    wait_links_up(&mut ports, Duration::from_secs(20)).unwrap();
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
        0x1111,
        500,
        Duration::from_secs(20),
    );
    assert_eq!(fwd.received.len(), 500, "lost {}", 500 - fwd.received.len());
    assert_eq!(fwd.duplicates, 0);
    // The VNF swapped the MAC addresses: the frame went through it, not around it.
    let expect = if swaps {
        frame(A, B, 0x1111, 0)
    } else {
        frame(B, A, 0x1111, 0)
    };
    assert_eq!(fwd.first.as_deref(), Some(&expect[..]));
    let back = exchange(
        &mut pool,
        &mut p1[0],
        &mut p0[0],
        A,
        B,
        0x2222,
        500,
        Duration::from_secs(20),
    );
    assert_eq!(
        back.received.len(),
        500,
        "lost {}",
        500 - back.received.len()
    );
    let expect = if swaps {
        frame(B, A, 0x2222, 0)
    } else {
        frame(A, B, 0x2222, 0)
    };
    assert_eq!(back.first.as_deref(), Some(&expect[..]));

    // Three roles on two CPUs: the record says the DUT and the VNF share one.
    let pl = tb.placement(generator_placement());
    assert!(
        pl.processes
            .iter()
            .any(|p| p.role == "vnf" && p.name == vnf_name),
        "{pl:?}"
    );
    if tb.wiring().cores.dut == tb.wiring().cores.vnf {
        let cpu = tb.wiring().cores.dut;
        assert!(
            pl.shared_cpus
                .iter()
                .any(|s| s.starts_with(&format!("cpu {cpu} shared by"))
                    && s.contains(&format!("vnf ({vnf_name})"))),
            "{pl:?}"
        );
    }
}
