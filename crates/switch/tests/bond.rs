//! Bonds in whole switches: two vecswitch switches joined by two "cables" (loopback pairs whose
//! link the test can cut), each with a bond over its two cable ports cross-connected to a host
//! port the test holds. Driven with the switch clock moved by hand (`advance_clock`), so LACP's
//! seconds pass in milliseconds and the results do not depend on the machine's load.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use vecswitch_buffer::Pool;
use vecswitch_ports::loopback::{pair, LoopbackPort};
use vecswitch_ports::{LinkState, Port, PortStats};
use vecswitch_switch::bond::lacp::MuxState;
use vecswitch_switch::bond::{BondMode, BondSettings, HashPolicy, LacpRate};
use vecswitch_switch::{BridgeSettings, Switch, SwitchConfig, SwitchError};

/// A loopback port whose link the test can cut: when cut, it reports link down, sends nothing
/// (`tx_burst` takes nothing, so `interface-output` counts `tx-failed`) and receives nothing (what
/// arrives is discarded and counted in `lost`).
struct Cable {
    inner: LoopbackPort,
    up: Arc<AtomicBool>,
    lost: Arc<std::sync::atomic::AtomicU64>,
}

impl Port for Cable {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn rx_burst(&mut self, pool: &mut Pool, out: &mut Vec<u32>, max: usize) -> usize {
        if self.up.load(Ordering::Relaxed) {
            return self.inner.rx_burst(pool, out, max);
        }
        let mut v = Vec::new();
        let n = self.inner.rx_burst(pool, &mut v, max);
        self.lost.fetch_add(n as u64, Ordering::Relaxed);
        pool.free_bulk(&v);
        0
    }
    fn tx_burst(&mut self, pool: &mut Pool, pkts: &[u32]) -> usize {
        if self.up.load(Ordering::Relaxed) {
            self.inner.tx_burst(pool, pkts)
        } else {
            0
        }
    }
    fn stats(&self) -> PortStats {
        self.inner.stats()
    }
    fn clear_stats(&mut self) {
        self.inner.clear_stats()
    }
    fn link(&self) -> LinkState {
        if self.up.load(Ordering::Relaxed) {
            LinkState::Up
        } else {
            LinkState::Down
        }
    }
    fn describe(&self) -> String {
        "test cable".into()
    }
}

struct Lab {
    a: Switch,
    b: Switch,
    host_a: LoopbackPort,
    host_b: LoopbackPort,
    /// Link flag of cable i (both ends share it).
    cables: Vec<Arc<AtomicBool>>,
    pool: Pool,
}

fn switch() -> Switch {
    Switch::new(SwitchConfig {
        buffers: 4096,
        mac_table_entries: 4096,
        ..Default::default()
    })
}

impl Lab {
    fn new(settings: BondSettings) -> Lab {
        let (mut a, mut b) = (switch(), switch());
        let mut cables = Vec::new();
        for i in 0..2 {
            let (x, y) = pair(&format!("m{i}"), &format!("m{i}"));
            let up = Arc::new(AtomicBool::new(true));
            let lost = Arc::new(Default::default());
            for (sw, end) in [(&mut a, x), (&mut b, y)] {
                let cable = Cable {
                    inner: end,
                    up: up.clone(),
                    lost: Arc::clone(&lost),
                };
                sw.add_port(&format!("m{i}"), Box::new(cable)).unwrap();
            }
            cables.push(up);
        }
        let mut hosts = Vec::new();
        for sw in [&mut a, &mut b] {
            let (port, peer) = wire("host");
            sw.add_port("host", port).unwrap();
            hosts.push(peer);
            sw.create_bond("bond0", settings).unwrap();
            sw.add_bond_member("bond0", "m0").unwrap();
            sw.add_bond_member("bond0", "m1").unwrap();
            sw.add_xconnect("host", "bond0").unwrap();
            sw.add_xconnect("bond0", "host").unwrap();
        }
        let host_b = hosts.pop().unwrap();
        let host_a = hosts.pop().unwrap();
        Lab {
            a,
            b,
            host_a,
            host_b,
            cables,
            pool: Pool::new(4096),
        }
    }

    /// Moves both switch clocks on by `ms` milliseconds in 10 ms steps, polling and running the
    /// bond timers at each step.
    fn run(&mut self, ms: u64) {
        for _ in 0..ms / 10 {
            for sw in [&mut self.a, &mut self.b] {
                sw.advance_clock(Duration::from_millis(10));
                while sw.poll_once() > 0 {}
                sw.run_timers();
            }
        }
    }

    /// Polls both switches until nothing moves (no clock change).
    fn settle(&mut self) {
        for _ in 0..4 {
            while self.a.poll_once() + self.b.poll_once() > 0 {}
        }
    }

    fn members(sw: &Switch) -> Vec<(String, bool)> {
        sw.show_bond()[0]
            .members
            .iter()
            .map(|m| (m.name.clone(), m.active))
            .collect()
    }
}

/// `n` frames of `n` different flows (source MACs) from host A's side.
fn flows(n: u32, from: u32) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| frame(mac(1000), mac(from + i), 64))
        .collect()
}

fn error(sw: &Switch, node: &str, reason: &str) -> u64 {
    sw.show_errors()
        .iter()
        .filter(|e| e.node == node && e.reason == reason)
        .map(|e| e.count)
        .sum()
}

fn lacp_settings() -> BondSettings {
    BondSettings {
        mode: BondMode::Lacp,
        hash: HashPolicy::L2,
        lacp_rate: LacpRate::Fast,
    }
}

#[test]
fn two_lacp_bonds_aggregate_both_members_and_carry_traffic_both_ways() {
    let mut lab = Lab::new(lacp_settings());
    lab.run(1_000);
    assert!(
        lab.a.show_bond()[0].active.is_empty(),
        "nothing distributes before Aggregate_Wait_Time (2 s)"
    );
    lab.run(3_000);
    for (sw, other) in [(&lab.a, &lab.b), (&lab.b, &lab.a)] {
        let lacp = sw.show_lacp();
        assert_eq!(lacp.len(), 2);
        for m in &lacp {
            assert_eq!(m.mux_state, MuxState::CollectingDistributing, "{m:?}");
            assert_eq!(m.partner.system, other.show_bond()[0].mac);
            assert_eq!(m.actor.system, sw.show_bond()[0].mac);
            assert!(m.counters.rx_lacpdus >= 3, "{m:?}");
        }
        assert_eq!(sw.show_bond()[0].active, vec!["m0", "m1"]);
        // Every LACPDU received was consumed by bond-input and counted there.
        let received: u64 = lacp.iter().map(|m| m.counters.rx_lacpdus).sum();
        assert_eq!(error(sw, "bond-input", "lacpdus"), received);
    }

    // 200 flows each way: every frame arrives, both members carry some, nothing is lost.
    let a_to_b = flows(200, 1);
    send(&mut lab.host_a, &mut lab.pool, &a_to_b);
    lab.settle();
    let got = drain(&mut lab.host_b, &mut lab.pool);
    assert_eq!(got.len(), 200);
    let mut sorted = got.clone();
    sorted.sort();
    let mut want = a_to_b.clone();
    want.sort();
    assert_eq!(sorted, want, "the frames arrive unchanged");
    let b_to_a = flows(200, 5000);
    send(&mut lab.host_b, &mut lab.pool, &b_to_a);
    lab.settle();
    assert_eq!(drain(&mut lab.host_a, &mut lab.pool).len(), 200);
    let per_member: Vec<u64> = ["m0", "m1"]
        .iter()
        .map(|m| {
            lab.a
                .show_interfaces()
                .iter()
                .find(|i| i.name == *m)
                .unwrap()
                .counters
                .rx_packets
        })
        .collect();
    assert!(
        per_member.iter().all(|&n| n > 20),
        "frames received per member on A (LACPDUs included): {per_member:?}"
    );
    let bond = &lab.a.show_bond()[0];
    assert_eq!(bond.counters.tx_packets, 200);
    assert_eq!(bond.counters.rx_packets, 200);
}

#[test]
fn a_flow_stays_on_one_member() {
    let mut lab = Lab::new(lacp_settings());
    lab.run(4_000);
    let before: Vec<u64> = ["m0", "m1"]
        .iter()
        .map(|m| lab.a.port_stats(m).unwrap().tx_packets)
        .collect();
    let one_flow: Vec<Vec<u8>> = (0..50).map(|_| frame(mac(9), mac(7), 64)).collect();
    send(&mut lab.host_a, &mut lab.pool, &one_flow);
    lab.settle();
    let after: Vec<u64> = ["m0", "m1"]
        .iter()
        .map(|m| lab.a.port_stats(m).unwrap().tx_packets)
        .collect();
    let moved: Vec<u64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
    assert!(moved == [50, 0] || moved == [0, 50], "{moved:?}");
    assert_eq!(drain(&mut lab.host_b, &mut lab.pool).len(), 50);
}

#[test]
fn a_member_link_down_moves_traffic_at_the_next_tick_and_the_loss_is_counted() {
    let mut lab = Lab::new(lacp_settings());
    lab.run(4_000);
    lab.cables[0].store(false, Ordering::Relaxed);
    // Before the bonds notice (no tick yet): frames hashed to m0 are refused by the port and
    // counted by interface-output as tx-failed.
    let burst = flows(100, 1);
    send(&mut lab.host_a, &mut lab.pool, &burst);
    lab.settle();
    let arrived = drain(&mut lab.host_b, &mut lab.pool).len() as u64;
    let failed = error(&lab.a, "interface-output", "tx-failed");
    assert!(failed > 0, "some flows hashed to m0");
    assert_eq!(arrived + failed, 100, "every frame arrived or was counted");
    // One tick later m0 is out of distribution on both sides.
    lab.run(10);
    for sw in [&lab.a, &lab.b] {
        assert_eq!(sw.show_bond()[0].active, vec!["m1"]);
        assert_eq!(Lab::members(sw)[0], ("m0".to_string(), false));
    }
    send(&mut lab.host_a, &mut lab.pool, &burst);
    lab.settle();
    assert_eq!(drain(&mut lab.host_b, &mut lab.pool).len(), 100);
    assert_eq!(error(&lab.a, "interface-output", "tx-failed"), failed);
    // The link comes back: both members again after the wait time.
    lab.cables[0].store(true, Ordering::Relaxed);
    lab.run(4_000);
    assert_eq!(lab.a.show_bond()[0].active, vec!["m0", "m1"]);
}

/// A member set administratively down leaves distribution at once (the control verb runs the
/// bond's tick), not at the next tick: the very next burst goes out of m1 whole, with nothing
/// dropped on m0 (`tx-admin-down`), and B, which stops hearing m0's LACPDUs, keeps collecting on
/// m1.
#[test]
fn a_member_set_down_leaves_distribution_before_the_next_frame() {
    let mut lab = Lab::new(lacp_settings());
    lab.run(4_000);
    assert_eq!(lab.a.show_bond()[0].active, vec!["m0", "m1"]);
    lab.a.set_port_admin("m0", false).unwrap();
    assert_eq!(lab.a.show_bond()[0].active, vec!["m1"]);
    let m1_before = lab.a.port_stats("m1").unwrap().tx_packets;
    send(&mut lab.host_a, &mut lab.pool, &flows(100, 1));
    lab.settle();
    assert_eq!(drain(&mut lab.host_b, &mut lab.pool).len(), 100);
    assert_eq!(error(&lab.a, "interface-output", "tx-admin-down"), 0);
    assert_eq!(lab.a.port_stats("m1").unwrap().tx_packets - m1_before, 100);
    // Up again: back in distribution once LACP has re-aggregated it.
    lab.a.set_port_admin("m0", true).unwrap();
    lab.run(4_000);
    assert_eq!(lab.a.show_bond()[0].active, vec!["m0", "m1"]);
}

/// A partner that stops sending LACPDUs while A's link stays up (B's end of cable 0 is deleted:
/// A's cable still reports link up, but nothing arrives and what A sends is refused) stops being
/// distributed to within one short timeout (3 s), not at once; the frames lost meanwhile are
/// counted (`tx-failed`), and afterwards everything goes by m1.
#[test]
fn a_silent_partner_is_taken_out_within_one_fast_timeout() {
    let mut lab = Lab::new(lacp_settings());
    lab.run(4_000);
    drop(lab.b.delete_port("m0").unwrap());
    let mut waited = 0;
    let mut sent = 0u64;
    let mut arrived = 0u64;
    while lab.a.show_bond()[0].active.contains(&"m0".to_string()) {
        if waited % 500 == 0 {
            send(&mut lab.host_a, &mut lab.pool, &flows(20, 1));
            sent += 20;
            lab.settle();
            arrived += drain(&mut lab.host_b, &mut lab.pool).len() as u64;
        }
        lab.run(10);
        waited += 10;
        assert!(waited <= 3_020, "m0 still distributing after {waited} ms");
    }
    assert!(
        waited >= 1_990,
        "taken out after {waited} ms: by the timeout, not the link"
    );
    let lacp = lab.a.show_lacp();
    assert_eq!(lacp[0].counters.timeouts, 1, "{:?}", lacp[0]);
    let failed = error(&lab.a, "interface-output", "tx-failed");
    assert!(failed > 0);
    assert_eq!(arrived + failed, sent, "every frame arrived or was counted");
    assert_eq!(lab.a.show_bond()[0].active, vec!["m1"]);
    let burst = flows(100, 1);
    send(&mut lab.host_a, &mut lab.pool, &burst);
    lab.settle();
    assert_eq!(drain(&mut lab.host_b, &mut lab.pool).len(), 100);
}

#[test]
fn active_backup_uses_one_member_and_fails_over() {
    let mut lab = Lab::new(BondSettings {
        mode: BondMode::ActiveBackup,
        hash: HashPolicy::L2,
        lacp_rate: LacpRate::Fast,
    });
    lab.run(20);
    assert_eq!(lab.a.show_bond()[0].active, vec!["m0"]);
    send(&mut lab.host_a, &mut lab.pool, &flows(64, 1));
    lab.settle();
    assert_eq!(drain(&mut lab.host_b, &mut lab.pool).len(), 64);
    assert_eq!(lab.a.port_stats("m0").unwrap().tx_packets, 64);
    assert_eq!(lab.a.port_stats("m1").unwrap().tx_packets, 0);
    lab.cables[0].store(false, Ordering::Relaxed);
    lab.run(10);
    assert_eq!(lab.a.show_bond()[0].active, vec!["m1"]);
    assert_eq!(lab.b.show_bond()[0].active, vec!["m1"]);
    send(&mut lab.host_a, &mut lab.pool, &flows(64, 1));
    lab.settle();
    assert_eq!(drain(&mut lab.host_b, &mut lab.pool).len(), 64);
    // Back up: m1 stays active (sticky).
    lab.cables[0].store(true, Ordering::Relaxed);
    lab.run(10);
    assert_eq!(lab.a.show_bond()[0].active, vec!["m1"]);
}

#[test]
fn xor_spreads_flows_and_broadcast_copies_to_every_member() {
    let mut lab = Lab::new(BondSettings {
        mode: BondMode::Xor,
        hash: HashPolicy::L2,
        lacp_rate: LacpRate::Fast,
    });
    lab.run(20);
    send(&mut lab.host_a, &mut lab.pool, &flows(200, 1));
    lab.settle();
    assert_eq!(drain(&mut lab.host_b, &mut lab.pool).len(), 200);
    let m0 = lab.a.port_stats("m0").unwrap().tx_packets;
    let m1 = lab.a.port_stats("m1").unwrap().tx_packets;
    assert_eq!(m0 + m1, 200);
    assert!(m0 > 50 && m1 > 50, "{m0} / {m1}");

    let mut lab = Lab::new(BondSettings {
        mode: BondMode::Broadcast,
        hash: HashPolicy::L2,
        lacp_rate: LacpRate::Fast,
    });
    lab.run(20);
    send(&mut lab.host_a, &mut lab.pool, &flows(10, 1));
    lab.settle();
    assert_eq!(lab.a.port_stats("m0").unwrap().tx_packets, 10);
    assert_eq!(lab.a.port_stats("m1").unwrap().tx_packets, 10);
    // B's bond collects on both members: each frame arrives twice.
    assert_eq!(drain(&mut lab.host_b, &mut lab.pool).len(), 20);
}

#[test]
fn bad_bond_changes_are_rejected_and_change_nothing() {
    let mut sw = switch();
    let mut peers = Vec::new();
    for p in ["p0", "p1", "p2"] {
        let (port, peer) = wire(p);
        sw.add_port(p, port).unwrap();
        peers.push(peer);
    }
    sw.add_bridge("br", BridgeSettings::default()).unwrap();
    sw.add_bridge_member("br", "p2").unwrap();
    sw.create_bond("b0", lacp_settings()).unwrap();
    sw.create_bond("b1", lacp_settings()).unwrap();
    sw.add_bond_member("b0", "p0").unwrap();
    let before = (sw.show_bond(), sw.show_interfaces());

    // A member already in a bridge.
    let e = sw.add_bond_member("b1", "p2").unwrap_err();
    assert!(matches!(e, SwitchError::PortHasService { .. }), "{e}");
    assert!(e.to_string().contains("bridge `br`"), "{e}");
    // A member in two bonds.
    let e = sw.add_bond_member("b1", "p0").unwrap_err();
    assert!(e.to_string().contains("member of bond `b0`"), "{e}");
    // A bond as a member, an unknown bond, a taken name, an unknown port.
    let e = sw.add_bond_member("b0", "b1").unwrap_err();
    assert!(e.to_string().contains("a port (its main interface)"), "{e}");
    let e = sw.add_bond_member("nope", "p1").unwrap_err();
    assert!(e.to_string().contains("existing bond"), "{e}");
    assert!(sw.create_bond("p1", lacp_settings()).is_err());
    assert!(sw.create_bond("b0", lacp_settings()).is_err());
    assert!(sw.add_bond_member("b0", "p9").is_err());
    assert!(sw.remove_bond_member("b1", "p0").is_err());
    assert_eq!((sw.show_bond(), sw.show_interfaces()), before);

    // A bond with a service cannot be deleted; once the service is gone it can, and its member
    // is a plain port again.
    sw.add_xconnect("p1", "b0").unwrap();
    let e = sw.delete_bond("b0").unwrap_err();
    assert!(e.to_string().contains("xconnect of `p1`"), "{e}");
    sw.delete_xconnect("p1").unwrap();
    sw.delete_bond("b0").unwrap();
    sw.add_bond_member("b1", "p0").unwrap();
    // A port added later never lands on a bond's interface index.
    let (port, _peer) = wire("p3");
    let p3 = sw.add_port("p3", port).unwrap();
    let b1 = sw.show_bond()[0].index;
    assert_ne!(p3, b1);
    assert_eq!(sw.show_bond()[0].name, "b1");
}

#[test]
fn bond_members_in_show_interfaces_and_the_bond_kind() {
    let lab = Lab::new(lacp_settings());
    let ifs = lab.a.show_interfaces();
    let bond = ifs.iter().find(|i| i.name == "bond0").unwrap();
    assert_eq!(bond.output_features, vec!["bond-output"]);
    let m0 = ifs.iter().find(|i| i.name == "m0").unwrap();
    assert_eq!(m0.input_features, vec!["bond-input"]);
    let json = serde_json::to_string(&bond.kind).unwrap();
    assert!(json.contains("\"type\":\"bond\""), "{json}");
}

/// The LACPDUs vecswitch sends, captured on a member (`Switch::capture`) and decoded by an
/// independent decoder: tshark's LACP dissector reads the actor's system (the bond's MAC), key,
/// port and state, and the partner's system (the other bond's MAC). Without tshark the test
/// fails, saying to install it.
#[test]
fn lacpdus_decode_in_tshark_as_ieee_802_1ax() {
    let tshark = std::process::Command::new("tshark")
        .arg("--version")
        .output();
    assert!(
        tshark.is_ok_and(|o| o.status.success()),
        "tshark not found: install tshark: make setup (apt-get install tshark)"
    );
    let dir = std::env::temp_dir().join(format!("vecswitch-bond-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    struct Rm(std::path::PathBuf);
    impl Drop for Rm {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    let _rm = Rm(dir.clone());
    let path = dir.join("m0.pcap");
    let mut lab = Lab::new(lacp_settings());
    lab.a.capture("m0", &path, None).unwrap();
    lab.run(4_000);
    let info = lab.a.stop_capture("m0").unwrap();
    let (mac_a, mac_b) = (
        lab.a.show_bond()[0].mac.clone(),
        lab.b.show_bond()[0].mac.clone(),
    );
    let out = std::process::Command::new("tshark")
        .args([
            "-r",
            path.to_str().unwrap(),
            "-Y",
            "lacp",
            "-T",
            "fields",
            "-E",
            "separator=;",
        ])
        .args([
            "-e",
            "eth.dst",
            "-e",
            "lacp.actor.sysid",
            "-e",
            "lacp.actor.key",
        ])
        .args([
            "-e",
            "lacp.actor.port",
            "-e",
            "lacp.actor.state",
            "-e",
            "lacp.partner.sysid",
        ])
        .args(["-e", "lacp.partner.state"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split(';').collect()).collect();
    let sent: Vec<&Vec<&str>> = rows.iter().filter(|r| r[1] == mac_a).collect();
    let received: Vec<&Vec<&str>> = rows.iter().filter(|r| r[1] == mac_b).collect();
    assert!(
        sent.len() >= 4,
        "LACPDUs A sent on m0: {text}\n(capture {info:?})"
    );
    assert!(received.len() >= 4, "LACPDUs A received on m0: {text}");
    for r in &sent {
        assert_eq!(r[0], "01:80:c2:00:00:02");
    }
    // The last one A sent: key = bond interface index + 1, port = m0's index + 1, state
    // activity|short timeout|aggregation|sync|collecting|distributing (0x3f), partner B in sync.
    let last = sent.last().unwrap();
    let key = lab.a.show_bond()[0].index + 1;
    assert_eq!(last[2], key.to_string(), "{last:?}");
    assert_eq!(last[3], "1", "{last:?}");
    assert_eq!(last[4], "0x3f", "{last:?}");
    assert_eq!(last[5], mac_b, "{last:?}");
    assert_eq!(last[6], "0x3f", "{last:?}");
}
