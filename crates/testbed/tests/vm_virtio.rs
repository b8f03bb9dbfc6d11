//! `pvp-virtio`: PVP whose VNF is DPDK testpmd (macswap) on two `net_virtio_user` ports — the
//! vhost-user frontend without a VM — attached to the switch's vhost-user ports; vecswitch and
//! testpmd io (DPDK's vhost PMD, `net_vhost`) as the switch. This is the topology of issue 13's
//! speed figure (docs/BENCHMARKS.md §8); here it only has to forward every frame, both ways.
//!
//! Needs root and DPDK testpmd with its virtio-user and vhost PMDs (`make setup`).

mod common;

use std::time::Duration;

use common::{exchange, frame};
use vecswitch_buffer::Pool;
use vecswitch_testbed::dut::testpmd::TestpmdDut;
use vecswitch_testbed::{wait_links_up, Dut, DutKind, Testbed, Topology, VnfKind};

const A: [u8; 6] = [0x02, 0, 0, 0, 0, 0xa1];
const B: [u8; 6] = [0x02, 0, 0, 0, 0, 0xb2];
const N: u32 = 500;

fn pvp_virtio(dut: Box<dyn Dut>) {
    let topo: Topology = "pvp-virtio".parse().unwrap();
    assert!(matches!(
        topo,
        Topology::Pvp {
            vnf: VnfKind::TestpmdVirtio,
            ..
        }
    ));
    let mut tb = Testbed::build(topo).unwrap();
    let mut ports = tb.open_generator_ports().unwrap();
    tb.start(dut).unwrap_or_else(|e| panic!("start: {e}"));
    wait_links_up(&mut ports, Duration::from_secs(30)).unwrap();
    let mut pool = Pool::new(4096);
    let (p0, p1) = ports.split_at_mut(1);
    // Port 0 → port 1, then back.
    for (forward, dst, src, tag) in [(true, B, A, 0x9191u32), (false, A, B, 0x9292)] {
        let (t, r) = if forward {
            (&mut p0[0], &mut p1[0])
        } else {
            (&mut p1[0], &mut p0[0])
        };
        let ex = exchange(&mut pool, t, r, dst, src, tag, N, Duration::from_secs(30));
        assert_eq!(ex.sent, N);
        assert_eq!(
            ex.received.len() as u32,
            N,
            "lost {}",
            N - ex.received.len() as u32
        );
        assert_eq!(ex.duplicates, 0);
        // testpmd macswap swapped the MACs: the frame went through the VNF.
        assert_eq!(ex.first.as_deref(), Some(&frame(src, dst, tag, 0)[..]));
    }
    assert_eq!(pool.in_use(), 0);
    tb.check_alive().unwrap();
    tb.stop().unwrap();
}

#[test]
fn pvp_virtio_with_vecswitch_as_the_switch() {
    let bin = common::vecswitch_bin();
    assert!(
        bin.is_file(),
        "build the binary first: cargo build -p vecswitch-cli ({})",
        bin.display()
    );
    pvp_virtio(DutKind::VecswitchXconnect { bin }.build());
}

#[test]
fn pvp_virtio_with_testpmd_io_as_the_switch() {
    pvp_virtio(Box::new(TestpmdDut::new()));
}
