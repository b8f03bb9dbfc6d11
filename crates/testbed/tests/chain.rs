//! Chains of mixed VNFs (issue 12): generator → vecswitch → testpmd macswap (memif) → vecswitch
//! → vecswitch cross-connect VNF (memif) → vecswitch → kernel bridge in its own namespace (veth)
//! → vecswitch → generator, exact counts both ways.

mod common;

use std::time::Duration;

use common::{exchange, frame, vecswitch_bin, wait_forwarding};
use vecswitch_buffer::Pool;
use vecswitch_testbed::{
    generator_placement, wait_links_up, DutKind, Link, Testbed, Topology, VnfKind,
};

const A: [u8; 6] = [0x02, 0, 0, 0, 0, 0xa1];
const B: [u8; 6] = [0x02, 0, 0, 0, 0, 0xb2];

#[test]
fn chain_of_three_mixed_vnfs_forwards_exact_counts_both_ways() {
    let bin = vecswitch_bin();
    assert!(
        bin.is_file(),
        "build the binary first: cargo build -p vecswitch-cli ({})",
        bin.display()
    );
    let topo = Topology::new_chain(
        Link::Memif,
        vec![
            VnfKind::TestpmdMacswap,
            VnfKind::VecswitchXconnect { bin: bin.clone() },
            VnfKind::KernelBridge,
        ],
    )
    .unwrap();
    assert_eq!(
        topo.to_string(),
        "chain-memif:testpmd-macswap+vecswitch-xconnect+kernel-bridge"
    );
    let mut tb = Testbed::build(topo).unwrap();
    // Three VNFs: six DUT ports toward them, the kernel one's two are veth in its namespace.
    let w = tb.wiring().clone();
    assert_eq!(w.dut_ports.len(), 8, "{w:?}");
    assert_eq!(w.pairs, vec![(0, 2), (3, 4), (5, 6), (7, 1)]);
    assert_eq!(tb.vnf_netns().len(), 1);
    let mut ports = tb.open_generator_ports().unwrap();
    tb.start(DutKind::VecswitchXconnect { bin }.build())
        .unwrap();
    wait_links_up(&mut ports, Duration::from_secs(20)).unwrap();
    let mut pool = Pool::new(4096);
    {
        let (p0, p1) = ports.split_at_mut(1);
        let t = Duration::from_secs(30);
        wait_forwarding(&mut pool, &mut p0[0], &mut p1[0], B, A, t);
        wait_forwarding(&mut pool, &mut p1[0], &mut p0[0], A, B, t);
    }
    for (from, dst, src, tag) in [(0usize, B, A, 0x1111u32), (1, A, B, 0x2222)] {
        let (p0, p1) = ports.split_at_mut(1);
        let (tx, rx) = if from == 0 {
            (&mut p0[0], &mut p1[0])
        } else {
            (&mut p1[0], &mut p0[0])
        };
        let ex = exchange(
            &mut pool,
            tx,
            rx,
            dst,
            src,
            tag,
            500,
            Duration::from_secs(30),
        );
        assert_eq!(ex.sent, 500);
        assert_eq!(
            ex.received.len(),
            500,
            "tag {tag:#x}: lost {}",
            500 - ex.received.len()
        );
        assert_eq!(ex.duplicates, 0, "tag {tag:#x}");
        // One macswap in the chain: the frame went through the testpmd VNF (and through the
        // kernel bridge: the only path from vnf4 to vnf5).
        assert_eq!(ex.first.as_deref(), Some(&frame(src, dst, tag, 0)[..]));
    }
    tb.check_alive().unwrap();
    // The kernel bridge's own counters saw the frames: 1000 in on its two ends together.
    let ns = &tb.vnf_netns()[0];
    let rx: u64 = ["v4", "v5"]
        .iter()
        .map(|i| {
            ns.exec(
                "cat",
                &[&format!("/sys/class/net/{i}/statistics/rx_packets")],
            )
            .unwrap()
            .trim()
            .parse::<u64>()
            .unwrap()
        })
        .sum();
    assert!(
        rx >= 1000,
        "kernel bridge VNF received {rx} frames, want >= 1000"
    );

    // Every VNF is in the placement record; the kernel one has no process.
    let pl = tb.placement(generator_placement());
    for name in ["vnf-testpmd", "vnf-vecswitch-2", "kernel-bridge"] {
        assert!(
            pl.processes
                .iter()
                .any(|p| p.role == "vnf" && p.name == name),
            "{name} missing: {pl:?}"
        );
    }
    let k = pl
        .processes
        .iter()
        .find(|p| p.name == "kernel-bridge")
        .unwrap();
    assert_eq!(k.pid, 0);
    assert!(k.note.contains("rps_cpus"), "{k:?}");
    let vnf_cpu = w.cores.vnf;
    if w.cores.dut == vnf_cpu {
        assert!(
            pl.shared_cpus
                .iter()
                .any(|s| s.starts_with(&format!("cpu {vnf_cpu} shared by"))
                    && s.contains("vnf (vnf-testpmd)")),
            "{pl:?}"
        );
    }
}
