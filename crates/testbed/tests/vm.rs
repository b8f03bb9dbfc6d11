//! Real QEMU guests on the switch's vhost-user ports (issue 13, "Interop with a VM").
//!
//! PVP with a VM: generator (memif) → vecswitch `phy0` → `vnf0` (vhost-user) → QEMU guest whose
//! kernel bridges its two virtio NICs → `vnf1` (vhost-user) → `phy1` → generator, both ways,
//! with the switch's vhost-user ports as servers (QEMU connects) and once as clients (QEMU
//! listens). V2V: two guests through the switch, the generator's own vhost-user ports on the
//! guests' outer NICs. Every frame is counted: exactly what was sent comes back, intact, on the
//! switch's ports and the guest's NICs alike, and afterwards no pool buffer is held (the
//! generator's, and the switch's `show buffers`).
//!
//! Needs root (namespaces), QEMU (`qemu-system-x86`) and the guest image
//! (`scripts/guest/build.sh`; `make setup` does both); a missing piece fails the test naming it.
//! Under TCG a guest boots in 10–40 s on the loaded 2-core machine: each test takes well under a
//! minute there. On failure the guests' consoles are printed.

mod common;

use std::time::Duration;

use common::{exchange, frame, Exchange};
use serde_json::Value;
use vecswitch_buffer::Pool;
use vecswitch_testbed::vm::{GuestImage, EMULATED_NOTE};
use vecswitch_testbed::{
    generator_placement, wait_links_up, DutKind, Link, MemifRole, Testbed, Topology, VnfKind,
};

const A: [u8; 6] = [0x02, 0, 0, 0, 0, 0xa1];
const B: [u8; 6] = [0x02, 0, 0, 0, 0, 0xb2];
/// Frames each way; the guest's bridge and its 256-entry rings take the exchange's window of 128.
const N: u32 = 400;

fn preconditions() -> std::path::PathBuf {
    vecswitch_testbed::vm::require_qemu().unwrap_or_else(|e| panic!("{e}"));
    GuestImage::locate().unwrap_or_else(|e| panic!("{e}"));
    let bin = common::vecswitch_bin();
    assert!(
        bin.is_file(),
        "build the binary first: cargo build -p vecswitch-cli ({})",
        bin.display()
    );
    bin
}

/// `vecswitch ctl --json show WHAT` on the DUT of `tb` → the answer's `data`.
fn dut_show(tb: &Testbed, what: &str) -> Value {
    let ctl = tb.wiring().run_dir.join("dut.ctl");
    let out = std::process::Command::new(common::vecswitch_bin())
        .args(["ctl", "--socket"])
        .arg(&ctl)
        .args(["--json", "show", what])
        .output()
        .expect("run vecswitch ctl");
    assert!(out.status.success(), "ctl show {what}: {out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).expect("ctl answers JSON");
    v["data"].clone()
}

fn port_stats(tb: &Testbed, name: &str) -> (u64, u64, u64, u64) {
    let ports = dut_show(tb, "ports");
    let p = ports
        .as_array()
        .and_then(|l| l.iter().find(|p| p["name"] == name))
        .unwrap_or_else(|| panic!("no port {name} in {ports}"));
    let s = &p["stats"];
    let n = |k: &str| s[k].as_u64().unwrap_or(u64::MAX);
    (
        n("rx_packets"),
        n("tx_packets"),
        n("rx_dropped"),
        n("tx_dropped"),
    )
}

/// Checks one direction's exchange: every frame back once, intact, nothing foreign.
fn check(ex: &Exchange, expect_first: &[u8], what: &str, tb: &Testbed) {
    let ctx = || format!("{what}\n{}", tb.vm_consoles());
    assert_eq!(ex.sent, N, "{what}: sent {} of {N}\n{}", ex.sent, ctx());
    assert_eq!(
        ex.received.len() as u32,
        N,
        "{what}: lost {}\n{}",
        N - ex.received.len() as u32,
        ctx()
    );
    assert_eq!(ex.duplicates, 0, "{}", ctx());
    assert_eq!(
        ex.foreign,
        0,
        "frames the generator did not send: {}",
        ctx()
    );
    assert_eq!(ex.first.as_deref(), Some(expect_first), "{}", ctx());
}

/// PVP through one guest; `role` is the switch's vhost-user role.
fn pvp_vm(role: MemifRole) {
    chain_vm(
        Topology::Pvp {
            link: Link::Memif,
            vnf: VnfKind::Vm { role },
        },
        &["vnf0", "vnf1"],
    );
}

/// Traffic both ways through the guests of `topo`; `vnf_ports` are the switch's vhost-user
/// ports, each of which must carry every frame once each way.
fn chain_vm(topo: Topology, vnf_ports: &[&str]) {
    let _wd = common::watchdog("chain_vm", Duration::from_secs(300));
    let bin = preconditions();
    let mut tb = Testbed::build(topo).unwrap();
    let mut ports = tb.open_generator_ports().unwrap();
    tb.start(DutKind::VecswitchXconnect { bin }.build())
        .unwrap_or_else(|e| panic!("start: {e}"));
    wait_links_up(&mut ports, Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("{e}\n{}", tb.vm_consoles()));
    let mut pool = Pool::new(4096);
    let (p0, p1) = ports.split_at_mut(1);
    // The guest's bridge forwards frames unchanged (it learns A and B on its two NICs).
    let fwd = exchange(
        &mut pool,
        &mut p0[0],
        &mut p1[0],
        B,
        A,
        0x5151,
        N,
        Duration::from_secs(40),
    );
    check(&fwd, &frame(B, A, 0x5151, 0), "phy0 → guest → phy1", &tb);
    let back = exchange(
        &mut pool,
        &mut p1[0],
        &mut p0[0],
        A,
        B,
        0x6262,
        N,
        Duration::from_secs(40),
    );
    check(&back, &frame(A, B, 0x6262, 0), "phy1 → guest → phy0", &tb);
    assert_eq!(pool.in_use(), 0, "generator buffers held");

    // The switch counted every frame on its vhost-user ports, both ways, and dropped none.
    let n = u64::from(N);
    for p in vnf_ports {
        assert_eq!(port_stats(&tb, p), (n, n, 0, 0), "{p} rx/tx/drops");
    }
    let buffers = dut_show(&tb, "buffers");
    assert_eq!(buffers["in_use"], 0, "switch buffers held: {buffers}");
    assert_eq!(buffers["double_frees"], 0, "{buffers}");

    // The results say the guest was emulated, and where it ran.
    let placement = tb.placement(generator_placement());
    let vms: Vec<_> = placement
        .processes
        .iter()
        .filter(|p| p.role == "vnf")
        .collect();
    assert_eq!(vms.len(), vnf_ports.len() / 2, "{placement:?}");
    for (i, vm) in vms.iter().enumerate() {
        assert_eq!(vm.name, format!("vm{i}"));
        assert_eq!(vm.note, EMULATED_NOTE);
        assert!(!vm.cpus.is_empty(), "{vm:?}");
    }
    tb.check_alive().unwrap();
    tb.stop().unwrap();
}

#[test]
fn pvp_vm_guest_bridges_vecswitch_vhost_user_server_ports() {
    pvp_vm(MemifRole::Server);
}

#[test]
fn pvp_vm_guest_bridges_vecswitch_vhost_user_client_ports() {
    pvp_vm(MemifRole::Client);
}

/// PVVP: two guests in a chain through the switch (phy0–vnf0, vnf1–vnf2, vnf3–phy1).
#[test]
fn pvvp_vm_two_guests_in_a_chain() {
    chain_vm(
        "pvvp-vm".parse().unwrap(),
        &["vnf0", "vnf1", "vnf2", "vnf3"],
    );
}

/// VM to VM through the switch: gen0 → guest 0 → vm0 ⇄ vm1 → guest 1 → gen1, and back. The
/// generator's own vhost-user ports are the guests' outer NICs.
#[test]
fn v2v_two_guests_through_vecswitch_with_the_generator_on_vhost_user() {
    let _wd = common::watchdog(
        "v2v_two_guests_through_vecswitch_with_the_generator_on_vhost_user",
        Duration::from_secs(240),
    );
    let bin = preconditions();
    let mut tb = Testbed::build(Topology::V2v).unwrap();
    let mut ports = tb.open_generator_ports().unwrap();
    assert!(ports[0].describe().starts_with("vhost-user server"));
    tb.start_with_generator(DutKind::VecswitchXconnect { bin }.build(), &mut ports)
        .unwrap_or_else(|e| panic!("start: {e}"));
    wait_links_up(&mut ports, Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("{e}\n{}", tb.vm_consoles()));
    let mut pool = Pool::new(4096);
    let (p0, p1) = ports.split_at_mut(1);
    let fwd = exchange(
        &mut pool,
        &mut p0[0],
        &mut p1[0],
        B,
        A,
        0x7171,
        N,
        Duration::from_secs(40),
    );
    check(
        &fwd,
        &frame(B, A, 0x7171, 0),
        "gen0 → vm A → switch → vm B → gen1",
        &tb,
    );
    let back = exchange(
        &mut pool,
        &mut p1[0],
        &mut p0[0],
        A,
        B,
        0x7272,
        N,
        Duration::from_secs(40),
    );
    check(
        &back,
        &frame(A, B, 0x7272, 0),
        "gen1 → vm B → switch → vm A → gen0",
        &tb,
    );
    assert_eq!(pool.in_use(), 0, "generator buffers held");
    let n = u64::from(N);
    assert_eq!(port_stats(&tb, "vm0"), (n, n, 0, 0), "vm0 rx/tx/drops");
    assert_eq!(port_stats(&tb, "vm1"), (n, n, 0, 0), "vm1 rx/tx/drops");
    assert_eq!(dut_show(&tb, "buffers")["in_use"], 0);
    let placement = tb.placement(generator_placement());
    let vms: Vec<_> = placement
        .processes
        .iter()
        .filter(|p| p.note == EMULATED_NOTE)
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(vms, ["vm0", "vm1"]);
    tb.check_alive().unwrap();
    tb.stop().unwrap();
}

/// PVVP's wiring chains two VNFs through the DUT: phy0–vnf0, vnf1–vnf2, vnf3–phy1; with VMs the
/// DUT's VNF ports are vhost-user and each guest gets two of them. (No guest is started.)
#[test]
fn pvvp_vm_wiring_chains_two_guests() {
    let tb = Testbed::build("pvvp-vm".parse().unwrap()).unwrap();
    let w = tb.wiring();
    assert_eq!(w.pairs, vec![(0, 2), (3, 4), (5, 1)]);
    let names: Vec<&str> = w.dut_ports.iter().map(|p| p.name()).collect();
    assert_eq!(names, ["phy0", "phy1", "vnf0", "vnf1", "vnf2", "vnf3"]);
    assert!(w.dut_ports[2..].iter().all(|p| matches!(
        p,
        vecswitch_testbed::PortEnd::VhostUser {
            role: MemifRole::Server,
            ..
        }
    )));
    assert_eq!(w.vnf_ports.len(), 4);
    assert!(w.vnf_ports.iter().all(|p| matches!(
        p,
        vecswitch_testbed::PortEnd::VhostUser {
            role: MemifRole::Client,
            ..
        }
    )));
    let tb = Testbed::build("pvvp-memif".parse().unwrap()).unwrap();
    assert_eq!(tb.wiring().pairs, vec![(0, 2), (3, 4), (5, 1)]);
    assert!(tb.wiring().all_dut_ports_memif());
}

/// The lab's measurer (the generator engine, not a test helper) on `v2v-vm`: its own vhost-user
/// ports are the guests' outer NICs. A trial at 500 frames/s per direction completes — no stall
/// of the generator on vhost-user — and, at a load a TCG guest forwards with room to spare, every
/// frame the generator offered comes back.
#[test]
fn v2v_generator_trials_over_vhost_user_lose_nothing_at_low_load() {
    use vecswitch_lab::{Load, Measurer};
    use vecswitch_testbed::{default_streams, GenMeasurer};
    let _wd = common::watchdog("v2v_generator_trials", Duration::from_secs(300));
    let bin = preconditions();
    let mut tb = Testbed::build(Topology::V2v).unwrap();
    let mut ports = tb.open_generator_ports().unwrap();
    tb.start_with_generator(DutKind::VecswitchXconnect { bin }.build(), &mut ports)
        .unwrap_or_else(|e| panic!("start: {e}"));
    wait_links_up(&mut ports, Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("{e}\n{}", tb.vm_consoles()));
    let consoles;
    {
        // The same settings as the device-cost and gen_measurer tests on this loaded machine:
        // a late generator sends its backlog rather than dropping slots (500 fps is far below
        // what the path takes in bursts), and a 20 % shortfall is tester-limited, not loss.
        let mut m = GenMeasurer::for_testbed(&tb, ports, default_streams(64, true))
            .unwrap()
            .tolerance(0.2)
            .late_threshold(Duration::from_millis(500))
            .drain(Duration::from_millis(500));
        for round in 0..3 {
            let r = m.trial(Load::fps(1_000.0), Duration::from_secs(1)).unwrap();
            let rep = m.reports().last().unwrap().clone();
            assert_eq!(r.intended_frames, 1_000, "round {round}: {r:?}");
            assert!(
                r.offered_frames >= 800,
                "round {round}: the generator stalled on vhost-user: offered {} of 1000; {:?}",
                r.offered_frames,
                rep.tester_limited_reasons
            );
            assert_eq!(
                r.received_frames,
                r.offered_frames,
                "round {round}: lost {} of {}; ports {:?}\n{}",
                r.offered_frames - r.received_frames,
                r.offered_frames,
                rep.ports,
                tb.vm_consoles()
            );
        }
        consoles = tb.vm_consoles();
    }
    assert!(consoles.contains("ready mode=bridge"), "{consoles}");
    tb.stop().unwrap();
}

/// docs/suites/vm.toml and pvp-virtio.toml parse, and every topology they name is one the
/// testbed builds.
#[test]
fn vm_suite_parses_and_names_known_topologies() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/suites/pvp-virtio.toml"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let suite = vecswitch_lab::suite::Suite::parse(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    for d in &suite.duts {
        d.topology
            .parse::<Topology>()
            .unwrap_or_else(|e| panic!("{path}: {}: {e}", d.topology));
    }
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/suites/vm.toml");
    let text = std::fs::read_to_string(path).unwrap();
    let suite = vecswitch_lab::suite::Suite::parse(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    let topos: Vec<Topology> = suite
        .duts
        .iter()
        .map(|d| {
            d.topology
                .parse()
                .unwrap_or_else(|e| panic!("{}: {e}", d.topology))
        })
        .collect();
    assert!(topos.iter().filter(|t| t.has_vms()).count() >= 3);
    assert!(topos.contains(&Topology::V2v));
    assert!(topos.iter().any(|t| matches!(
        t,
        Topology::Pvvp {
            vnf: VnfKind::TestpmdMacswap,
            ..
        }
    )));
}

/// The comparison chain without VMs: PVVP over memif with two testpmd macswap VNFs. Each VNF
/// swaps the MACs, so after two the frame is as sent — and it did cross both (exact counts on
/// the switch's four VNF ports).
#[test]
fn pvvp_memif_chains_two_testpmd_vnfs() {
    let _wd = common::watchdog(
        "pvvp_memif_chains_two_testpmd_vnfs",
        Duration::from_secs(240),
    );
    let bin = preconditions();
    let mut tb = Testbed::build("pvvp-memif".parse().unwrap()).unwrap();
    let mut ports = tb.open_generator_ports().unwrap();
    tb.start(DutKind::VecswitchXconnect { bin }.build())
        .unwrap_or_else(|e| panic!("start: {e}"));
    wait_links_up(&mut ports, Duration::from_secs(30)).unwrap();
    let mut pool = Pool::new(4096);
    let (p0, p1) = ports.split_at_mut(1);
    let fwd = exchange(
        &mut pool,
        &mut p0[0],
        &mut p1[0],
        B,
        A,
        0x8181,
        N,
        Duration::from_secs(30),
    );
    check(
        &fwd,
        &frame(B, A, 0x8181, 0),
        "phy0 → vnf A → vnf B → phy1",
        &tb,
    );
    assert_eq!(pool.in_use(), 0);
    let n = u64::from(N);
    for p in ["vnf0", "vnf1", "vnf2", "vnf3"] {
        let (rx, tx, rxd, txd) = port_stats(&tb, p);
        assert_eq!((rx + tx, rxd, txd), (n, 0, 0), "{p}: rx {rx} tx {tx}");
    }
    let placement = tb.placement(generator_placement());
    let vnfs: Vec<&str> = placement
        .processes
        .iter()
        .filter(|p| p.role == "vnf")
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(vnfs, ["vnf-testpmd", "vnf-testpmd-2"]);
    tb.stop().unwrap();
}
