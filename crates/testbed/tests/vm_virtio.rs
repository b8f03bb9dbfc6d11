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

/// The generator-over-vhost-user stall of the session before (TESTBED.md, "vhost-user"): a
/// frontend that outlives its backend — DPDK virtio-user with `server=1`, testpmd io forwarding
/// port 0 ↔ port 1 — answers a *new* backend's connection with SET_VRING_BASE 0 while its rings
/// have moved on, and every frame was refused. Three backends in a row, one after the other,
/// each carries every frame.
#[test]
fn backends_reconnecting_to_a_persistent_virtio_user_frontend_carry_every_frame() {
    use vecswitch_ports::vhost_user::{Role, VhostUserConfig, VhostUserPort};
    use vecswitch_ports::Port;
    use vecswitch_testbed::{ChildGuard, ProcessSpec, RunDir};
    let dir = RunDir::create().unwrap();
    let socks: Vec<String> = (0..2)
        .map(|i| dir.file(&format!("fe{i}.sock")).display().to_string())
        .collect();
    let tp = vecswitch_testbed::dut::testpmd::TESTPMD;
    assert!(
        vecswitch_testbed::cmd::have(tp),
        "{tp} not found: install dpdk-dev and librte-net-virtio23 (make setup)"
    );
    let mut args =
        vecswitch_testbed::dut::testpmd::eal_args(&format!("{}-fe", dir.id().as_str()), 0);
    args.push("--single-file-segments".into());
    for (i, s) in socks.iter().enumerate() {
        args.push(format!(
            "--vdev=net_virtio_user{i},path={s},queues=1,server=1"
        ));
    }
    args.extend(vecswitch_testbed::dut::testpmd::app_args("io"));
    args.push("--no-flush-rx".into());
    let spec = ProcessSpec::new("frontend-testpmd", "stdbuf")
        .args(["-oL", tp])
        .args(args)
        .stdin_pipe(true);
    // With `server=1` testpmd waits in its port set-up until a backend connects: the first
    // round's ports connect (retrying every 250 ms), then forwarding starts.
    let mut fe = ChildGuard::spawn(&spec, dir.path()).unwrap();
    let mut pool = Pool::new(4096);
    for round in 0..3u32 {
        let mut ports: Vec<Box<dyn Port>> = socks
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let cfg = VhostUserConfig::new(&format!("be{i}"), s, Role::Client);
                Box::new(VhostUserPort::new(cfg).unwrap()) as Box<dyn Port>
            })
            .collect();
        wait_links_up(&mut ports, Duration::from_secs(20))
            .unwrap_or_else(|e| panic!("round {round}: {e}\n{}", fe.log()));
        fe.wait_for_log("Press enter to exit", Duration::from_secs(30))
            .unwrap_or_else(|e| panic!("round {round}: {e}\n{}", fe.log()));
        let (p0, p1) = ports.split_at_mut(1);
        let tag = 0xa0a0 + round;
        let ex = exchange(
            &mut pool,
            &mut p0[0],
            &mut p1[0],
            B,
            A,
            tag,
            N,
            Duration::from_secs(20),
        );
        assert_eq!(
            (ex.sent, ex.received.len() as u32, ex.duplicates),
            (N, N, 0),
            "round {round}: sent, received, duplicates\n{}",
            fe.log()
        );
        assert_eq!(ex.first.as_deref(), Some(&frame(B, A, tag, 0)[..]));
        drop(ports);
        assert_eq!(pool.in_use(), 0, "round {round}");
    }
    fe.stop(Duration::from_secs(2));
}
