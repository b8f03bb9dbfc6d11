//! Pipeline tests: a whole `Switch` with loopback ports, driven by `poll_once`, checked by what
//! comes out of the ports, by `show_*` and by the buffer pool returning to zero in use.

mod common;

use std::time::Duration;

use common::*;
use vecswitch_buffer::Pool;
use vecswitch_graph::ErrorCount;
use vecswitch_ports::loopback::LoopbackPort;
use vecswitch_switch::{BridgeSettings, ServiceInfo, Switch, SwitchConfig, SwitchError};

/// The test's own pool for building and draining frames (the switch has its own).
fn tpool() -> Pool {
    Pool::new(4096)
}

fn switch() -> Switch {
    Switch::new(SwitchConfig {
        buffers: 4096,
        mac_table_entries: 4096,
        ..Default::default()
    })
}

/// A switch with ports p0..pn (loopback pairs); returns the test's ends.
fn with_ports(sw: &mut Switch, n: usize) -> Vec<LoopbackPort> {
    (0..n)
        .map(|i| {
            let (port, peer) = wire(&format!("p{i}"));
            sw.add_port(&format!("p{i}"), port).unwrap();
            peer
        })
        .collect()
}

/// Polls until the switch has nothing more to receive.
/// A switch with `n` loopback ports `p0..` that are all members of bridge `name`.
fn bridged(name: &str, n: usize, settings: BridgeSettings) -> (Switch, Vec<LoopbackPort>) {
    let mut sw = switch();
    let peers = with_ports(&mut sw, n);
    sw.add_bridge(name, settings).unwrap();
    for i in 0..n {
        sw.add_bridge_member(name, &format!("p{i}")).unwrap();
    }
    (sw, peers)
}

fn run(sw: &mut Switch) {
    while sw.poll_once() > 0 {}
}

fn errors(sw: &Switch) -> Vec<(String, String, u64)> {
    sw.show_errors()
        .into_iter()
        .map(
            |ErrorCount {
                 node,
                 reason,
                 count,
             }| (node, reason, count),
        )
        .collect()
}

fn error_count(sw: &Switch, node: &str, reason: &str) -> u64 {
    sw.show_errors()
        .iter()
        .find(|e| e.node == node && e.reason == reason)
        .map_or(0, |e| e.count)
}

#[test]
fn xconnect_both_directions_exact_counts() {
    let mut sw = switch();
    let mut peers = with_ports(&mut sw, 2);
    sw.add_xconnect("p0", "p1").unwrap();
    sw.add_xconnect("p1", "p0").unwrap();
    let mut tp = tpool();
    for burst in BURSTS {
        let ab: Vec<Vec<u8>> = (0..burst)
            .map(|i| frame(mac(1), mac(i as u32), 60 + i % 64))
            .collect();
        let ba: Vec<Vec<u8>> = (0..burst + 7)
            .map(|i| frame(mac(2), mac(i as u32), 1514 - i % 64))
            .collect();
        send(&mut peers[0], &mut tp, &ab);
        send(&mut peers[1], &mut tp, &ba);
        run(&mut sw);
        assert_eq!(drain(&mut peers[1], &mut tp), ab, "burst {burst}");
        assert_eq!(drain(&mut peers[0], &mut tp), ba, "burst {burst}");
        assert_eq!(sw.show_buffers().in_use, 0);
    }
    let total: u64 = BURSTS.iter().map(|&b| b as u64).sum();
    let ports = sw.show_ports();
    assert_eq!(
        (ports[0].stats.rx_packets, ports[0].stats.tx_packets),
        (total, total + 7 * BURSTS.len() as u64)
    );
    assert_eq!(
        (ports[1].stats.rx_packets, ports[1].stats.tx_packets),
        (total + 7 * BURSTS.len() as u64, total)
    );
    assert_eq!(ports[0].service, ServiceInfo::Xconnect { to: "p1".into() });
    assert!(sw.show_errors().is_empty(), "{:?}", sw.show_errors());
    let rt = sw.show_runtime();
    let node = |n: &str| rt.nodes.iter().find(|x| x.name == n).unwrap().packets;
    assert_eq!(node("l2-xconnect"), 2 * total + 7 * BURSTS.len() as u64);
    assert_eq!(node("l2-fwd"), 0);
    assert_eq!(
        rt.loop_stats.rx_packets,
        2 * total + 7 * BURSTS.len() as u64
    );
    assert_eq!(tp.in_use(), 0);
}

#[test]
fn bridge_floods_unknown_then_forwards_learned() {
    let (mut sw, mut peers) = bridged("br0", 3, BridgeSettings::default());
    let mut tp = tpool();
    // A (on p0) → B: B unknown, flooded to p1 and p2.
    let a_to_b = frame(mac(0xb), mac(0xa), 60);
    send(&mut peers[0], &mut tp, std::slice::from_ref(&a_to_b));
    run(&mut sw);
    assert_eq!(drain(&mut peers[1], &mut tp), vec![a_to_b.clone()]);
    assert_eq!(drain(&mut peers[2], &mut tp), vec![a_to_b.clone()]);
    assert!(
        drain(&mut peers[0], &mut tp).is_empty(),
        "never back out of the rx port"
    );
    // B (on p1) → A: A is known on p0, so only p0 gets it.
    let b_to_a = frame(mac(0xa), mac(0xb), 60);
    send(&mut peers[1], &mut tp, std::slice::from_ref(&b_to_a));
    run(&mut sw);
    assert_eq!(drain(&mut peers[0], &mut tp), vec![b_to_a.clone()]);
    assert!(drain(&mut peers[2], &mut tp).is_empty());
    // A → B again: now known on p1 only. A burst of 257 to hit every loop path.
    let many: Vec<Vec<u8>> = (0..257)
        .map(|i| frame(mac(0xb), mac(0xa), 60 + i % 3))
        .collect();
    send(&mut peers[0], &mut tp, &many);
    run(&mut sw);
    assert_eq!(drain(&mut peers[1], &mut tp), many);
    assert!(drain(&mut peers[2], &mut tp).is_empty());
    // Broadcast from p2 goes to p0 and p1.
    let bc = frame(BCAST, mac(0xc), 60);
    send(&mut peers[2], &mut tp, std::slice::from_ref(&bc));
    run(&mut sw);
    assert_eq!(drain(&mut peers[0], &mut tp), vec![bc.clone()]);
    assert_eq!(drain(&mut peers[1], &mut tp), vec![bc]);
    let macs = sw.show_mac(Some("br0")).unwrap();
    let view: Vec<(String, String, bool)> = macs
        .iter()
        .map(|m| (m.mac.clone(), m.port.clone(), m.is_static))
        .collect();
    assert_eq!(
        view,
        vec![
            ("02:00:00:00:00:0a".into(), "p0".into(), false),
            ("02:00:00:00:00:0b".into(), "p1".into(), false),
            ("02:00:00:00:00:0c".into(), "p2".into(), false),
        ]
    );
    assert_eq!(error_count(&sw, "l2-learn", "learned"), 3);
    assert_eq!(sw.show_bridges()[0].learned, 3);
    assert_eq!(sw.show_buffers().in_use, 0);
}

#[test]
fn frame_back_to_its_own_port_is_dropped_as_same_port() {
    let (mut sw, mut peers) = bridged("br", 2, BridgeSettings::default());
    let mut tp = tpool();
    // A and B both behind p0 (a hub): A → B must not come back out of p0 nor go to p1.
    send(&mut peers[0], &mut tp, &[frame(BCAST, mac(0xb), 60)]);
    run(&mut sw);
    drain(&mut peers[1], &mut tp);
    send(&mut peers[0], &mut tp, &[frame(mac(0xb), mac(0xa), 60)]);
    run(&mut sw);
    assert!(drain(&mut peers[0], &mut tp).is_empty());
    assert!(drain(&mut peers[1], &mut tp).is_empty());
    assert_eq!(error_count(&sw, "l2-fwd", "same-port"), 1);
    assert_eq!(sw.show_buffers().in_use, 0);
}

#[test]
fn unknown_unicast_flood_can_be_disabled() {
    let (mut sw, mut peers) = bridged(
        "br",
        3,
        BridgeSettings {
            uu_flood: false,
            ..Default::default()
        },
    );
    let mut tp = tpool();
    send(
        &mut peers[0],
        &mut tp,
        &[frame(mac(0xb), mac(0xa), 60), frame(BCAST, mac(0xa), 60)],
    );
    run(&mut sw);
    assert_eq!(drain(&mut peers[1], &mut tp).len(), 1, "only the broadcast");
    assert_eq!(error_count(&sw, "l2-fwd", "unknown-unicast-disabled"), 1);
    sw.set_bridge_settings(
        "br",
        BridgeSettings {
            flood: false,
            uu_flood: false,
            ..Default::default()
        },
    )
    .unwrap();
    send(&mut peers[0], &mut tp, &[frame(BCAST, mac(0xa), 60)]);
    run(&mut sw);
    assert!(drain(&mut peers[1], &mut tp).is_empty());
    assert_eq!(error_count(&sw, "l2-fwd", "flood-disabled"), 1);
    assert_eq!(sw.show_buffers().in_use, 0);
}

#[test]
fn learned_entries_age_out_static_ones_stay() {
    let (mut sw, mut peers) = bridged(
        "br",
        2,
        BridgeSettings {
            mac_age_s: 10,
            ..Default::default()
        },
    );
    sw.add_static_mac("br", mac(0x5), "p1").unwrap();
    let mut tp = tpool();
    send(&mut peers[0], &mut tp, &[frame(BCAST, mac(0xa), 60)]);
    run(&mut sw);
    drain(&mut peers[1], &mut tp);
    assert_eq!(sw.show_mac(None).unwrap().len(), 2);
    // 5 s later A is refreshed; 9 s after that it is still there (age counts from the refresh).
    sw.advance_clock(Duration::from_secs(5));
    send(&mut peers[0], &mut tp, &[frame(BCAST, mac(0xa), 60)]);
    run(&mut sw);
    sw.advance_clock(Duration::from_secs(9));
    sw.age_all();
    assert_eq!(sw.show_mac(None).unwrap().len(), 2);
    sw.advance_clock(Duration::from_secs(2));
    // Aging runs incrementally from poll_once: the table has 8192 slots, 512 per step.
    for _ in 0..40 {
        sw.advance_clock(Duration::from_millis(2));
        sw.poll_once();
    }
    let left = sw.show_mac(None).unwrap();
    assert_eq!(left.len(), 1);
    assert!(left[0].is_static && left[0].mac == "02:00:00:00:00:05" && left[0].port == "p1");
    assert_eq!(error_count(&sw, "l2-age", "aged-out"), 1);
    // Age 0: never ages.
    sw.set_bridge_settings(
        "br",
        BridgeSettings {
            mac_age_s: 0,
            ..Default::default()
        },
    )
    .unwrap();
    send(&mut peers[0], &mut tp, &[frame(BCAST, mac(0xa), 60)]);
    run(&mut sw);
    sw.advance_clock(Duration::from_secs(100_000));
    sw.age_all();
    assert_eq!(sw.show_mac(None).unwrap().len(), 2);
    drain(&mut peers[1], &mut tp);
    assert_eq!(sw.show_buffers().in_use, 0);
}

#[test]
fn static_entry_forwards_and_does_not_move() {
    let (mut sw, mut peers) = bridged("br", 3, BridgeSettings::default());
    sw.add_static_mac("br", mac(0x5), "p2").unwrap();
    let mut tp = tpool();
    // Unicast to the static MAC goes only to p2, without flooding.
    send(&mut peers[0], &mut tp, &[frame(mac(0x5), mac(0xa), 60)]);
    run(&mut sw);
    assert_eq!(drain(&mut peers[2], &mut tp).len(), 1);
    assert!(drain(&mut peers[1], &mut tp).is_empty());
    // The static MAC shows up as a source on p1: the entry stays on p2.
    send(&mut peers[1], &mut tp, &[frame(BCAST, mac(0x5), 60)]);
    run(&mut sw);
    let e = sw
        .show_mac(Some("br"))
        .unwrap()
        .into_iter()
        .find(|m| m.mac == "02:00:00:00:00:05")
        .unwrap();
    assert_eq!((e.port.as_str(), e.is_static), ("p2", true));
    assert_eq!(error_count(&sw, "l2-learn", "static-mac-seen-elsewhere"), 1);
    // Deleting it: a second delete names what is missing.
    sw.delete_static_mac("br", mac(0x5)).unwrap();
    let err = sw.delete_static_mac("br", mac(0x5)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "bridge `br` has no static entry for 02:00:00:00:00:05"
    );
    for p in &mut peers {
        drain(p, &mut tp);
    }
    assert_eq!(sw.show_buffers().in_use, 0);
}

#[test]
fn station_move_is_counted_and_followed() {
    let (mut sw, mut peers) = bridged("br", 3, BridgeSettings::default());
    let mut tp = tpool();
    send(&mut peers[0], &mut tp, &[frame(BCAST, mac(0xa), 60)]);
    run(&mut sw);
    send(&mut peers[1], &mut tp, &[frame(BCAST, mac(0xa), 60)]);
    run(&mut sw);
    for p in &mut peers {
        drain(p, &mut tp);
    }
    assert_eq!(error_count(&sw, "l2-learn", "station-moves"), 1);
    send(&mut peers[2], &mut tp, &[frame(mac(0xa), mac(0xc), 60)]);
    run(&mut sw);
    assert_eq!(drain(&mut peers[1], &mut tp).len(), 1);
    assert!(drain(&mut peers[0], &mut tp).is_empty());
    assert_eq!(sw.show_buffers().in_use, 0);
}

#[test]
fn mac_limit_stops_learning_but_not_forwarding() {
    let (mut sw, mut peers) = bridged(
        "br",
        2,
        BridgeSettings {
            mac_limit: 10,
            ..Default::default()
        },
    );
    let mut tp = tpool();
    let frames: Vec<Vec<u8>> = (0..25).map(|i| frame(BCAST, mac(i), 60)).collect();
    send(&mut peers[0], &mut tp, &frames);
    run(&mut sw);
    assert_eq!(drain(&mut peers[1], &mut tp).len(), 25);
    assert_eq!(sw.show_bridges()[0].learned, 10);
    assert_eq!(error_count(&sw, "l2-learn", "mac-limit-reached"), 15);
    // Learning switched off: nothing more is learned even below the limit.
    sw.flush_mac("br", None).unwrap();
    sw.set_bridge_settings(
        "br",
        BridgeSettings {
            learn: false,
            ..Default::default()
        },
    )
    .unwrap();
    send(&mut peers[0], &mut tp, &frames[..3]);
    run(&mut sw);
    assert_eq!(sw.show_bridges()[0].learned, 0);
    assert_eq!(drain(&mut peers[1], &mut tp).len(), 3);
    assert_eq!(sw.show_buffers().in_use, 0);
}

#[test]
fn every_malformed_frame_is_dropped_with_its_reason() {
    let mut sw = switch();
    let mut peers = with_ports(&mut sw, 3);
    sw.add_bridge("br", BridgeSettings::default()).unwrap();
    sw.add_bridge_member("br", "p0").unwrap();
    sw.add_bridge_member("br", "p1").unwrap();
    let mut tp = tpool();
    let bad = malformed();
    let frames: Vec<Vec<u8>> = bad.iter().map(|(_, f)| f.clone()).collect();
    send(&mut peers[0], &mut tp, &frames);
    run(&mut sw);
    assert!(drain(&mut peers[1], &mut tp).is_empty());
    let mut want: Vec<(String, String, u64)> = Vec::new();
    for (reason, _) in &bad {
        match want.iter_mut().find(|w| w.1 == *reason) {
            Some(w) => w.2 += 1,
            None => want.push(("ethernet-input".into(), reason.to_string(), 1)),
        }
    }
    let mut got = errors(&sw);
    got.sort();
    want.sort();
    assert_eq!(got, want);
    // Port without service, and an admin-down port.
    send(&mut peers[2], &mut tp, &[frame(BCAST, mac(1), 60)]);
    sw.set_port_admin("p1", false).unwrap();
    send(&mut peers[1], &mut tp, &[frame(BCAST, mac(1), 60)]);
    run(&mut sw);
    assert_eq!(error_count(&sw, "ethernet-input", "no-service"), 1);
    assert_eq!(error_count(&sw, "ethernet-input", "admin-down"), 1);
    assert!(drain(&mut peers[0], &mut tp).is_empty());
    // A broadcast from p0 is not flooded to the admin-down p1: nothing to flood to.
    send(&mut peers[0], &mut tp, &[frame(BCAST, mac(1), 60)]);
    run(&mut sw);
    assert_eq!(error_count(&sw, "l2-flood", "no-other-members"), 1);
    assert!(drain(&mut peers[1], &mut tp).is_empty());
    sw.clear_counters();
    assert!(sw.show_errors().is_empty());
    assert_eq!(sw.show_buffers().in_use, 0);
}

#[test]
fn tx_to_a_full_port_counts_tx_failed() {
    let mut sw = switch();
    let (p0, mut peer0) = wire("p0");
    let (p1, _peer1) = {
        let (a, b) = vecswitch_ports::loopback::pair_with_capacity("p1", "p1-peer", 4).unwrap();
        (Box::new(a), b)
    };
    sw.add_port("p0", p0).unwrap();
    sw.add_port("p1", p1).unwrap();
    sw.add_xconnect("p0", "p1").unwrap();
    let mut tp = tpool();
    send(
        &mut peer0,
        &mut tp,
        &(0..10)
            .map(|i| frame(mac(1), mac(i), 60))
            .collect::<Vec<_>>(),
    );
    run(&mut sw);
    assert_eq!(error_count(&sw, "interface-output", "tx-failed"), 6);
    assert_eq!(sw.port_stats("p1").unwrap().tx_dropped, 6);
    assert_eq!(sw.show_buffers().in_use, 0);
}

#[test]
fn trace_follows_packets_through_the_nodes() {
    let (mut sw, mut peers) = bridged("br", 3, BridgeSettings::default());
    sw.trace_add(1);
    let mut tp = tpool();
    send(
        &mut peers[0],
        &mut tp,
        &[frame(BCAST, mac(0xa), 60), frame(BCAST, mac(0xb), 60)],
    );
    run(&mut sw);
    let t = sw.show_trace();
    let path: Vec<(u32, &str, &str)> = t
        .iter()
        .map(|s| (s.packet, s.node.as_str(), s.next.as_str()))
        .collect();
    assert_eq!(
        path,
        vec![
            (1, "interface-rx", "ethernet-input"),
            (1, "ethernet-input", "l2-learn"),
            (1, "l2-learn", "l2-fwd"),
            (1, "l2-fwd", "l2-flood"),
            (1, "l2-flood", "interface-output"),
            // The copy for the second other member goes through the graph, traced as a clone.
            (1, "l2-flood", "interface-output"),
            (1, "interface-output", "consumed"),
            (1, "interface-output", "consumed"),
        ]
    );
    assert!(
        t[0].detail.starts_with("rx-port 0 len 60"),
        "{}",
        t[0].detail
    );
    assert!(t[2].detail.contains("02:00:00:00:00:0a"), "{}", t[2].detail);
    assert!(t[5].detail.starts_with("clone: "), "{}", t[5].detail);
    assert_ne!(
        t[6].detail, t[7].detail,
        "original and copy leave by two ports"
    );
    sw.trace_clear();
    assert!(sw.show_trace().is_empty());
    for p in &mut peers {
        drain(p, &mut tp);
    }
    assert_eq!(sw.show_buffers().in_use, 0);
}

#[test]
fn output_arc_feature_sees_flood_copies_on_the_interfaces_it_is_enabled_on() {
    let (mut sw, mut peers) = bridged("br", 4, BridgeSettings::default());
    let mut tp = tpool();
    sw.set_interface_mtu("p2", 100).unwrap();
    sw.set_mtu_check("p2", true).unwrap();
    let ifs = sw.show_interfaces();
    assert_eq!(ifs[2].output_features, vec!["mtu-check"]);
    assert!(ifs[1].output_features.is_empty());
    // From p0: the original goes to p1, copies to p2 and p3 (flooding order). The copy for p2 is
    // too big for its MTU (186 bytes of L3 > 100): only the feature on p2's output arc sees it.
    let big = frame(BCAST, mac(1), 200);
    let small = frame(BCAST, mac(2), 114); // 100 bytes of L3: fits
    send(&mut peers[0], &mut tp, &[big.clone(), small.clone()]);
    run(&mut sw);
    assert_eq!(error_count(&sw, "mtu-check", "too-big"), 1);
    let got: Vec<Vec<Vec<u8>>> = peers.iter_mut().map(|p| drain(p, &mut tp)).collect();
    assert_eq!(got[1], vec![big.clone(), small.clone()]);
    assert_eq!(got[2], vec![small.clone()]);
    assert_eq!(got[3], vec![big.clone(), small]);
    let rt = sw.show_runtime();
    let mtu = rt.nodes.iter().find(|n| n.name == "mtu-check").unwrap();
    assert_eq!(mtu.packets, 2, "only frames for p2 cross the feature");
    // Off again: the big frame reaches p2.
    sw.set_mtu_check("p2", false).unwrap();
    send(&mut peers[0], &mut tp, std::slice::from_ref(&big));
    run(&mut sw);
    assert_eq!(drain(&mut peers[2], &mut tp), vec![big]);
    assert_eq!(error_count(&sw, "mtu-check", "too-big"), 1);
    // Bad values name the field and what is accepted; nothing changes.
    let e = sw.set_interface_mtu("p2", 10).unwrap_err().to_string();
    assert!(e.contains("mtu") && e.contains("68"), "{e}");
    assert!(sw.set_mtu_check("nope", true).is_err());
    assert!(sw
        .set_interface_feature("p1", 1, "l2-fwd", true)
        .unwrap_err()
        .to_string()
        .contains("not a feature"));
    // A deleted interface takes its features with it: a new port at the same index starts clean.
    sw.set_mtu_check("p3", true).unwrap();
    sw.remove_bridge_member("br", "p3").unwrap();
    sw.delete_port("p3").unwrap();
    let (p, _peer) = wire("p3-new");
    assert_eq!(sw.add_port("p3-new", p).unwrap(), 3);
    assert!(sw.show_interfaces()[3].output_features.is_empty());
    for p in &mut peers {
        drain(p, &mut tp);
    }
    assert_eq!(sw.show_buffers().in_use, 0);
}

#[test]
fn interfaces_count_what_they_receive_and_send() {
    let mut sw = switch();
    let mut peers = with_ports(&mut sw, 2);
    sw.add_xconnect("p0", "p1").unwrap();
    let mut tp = tpool();
    let frames: Vec<Vec<u8>> = (0..300)
        .map(|i| frame(mac(1), mac(i), 60 + i as usize % 4))
        .collect();
    let bytes: usize = frames.iter().map(Vec::len).sum();
    send(&mut peers[0], &mut tp, &frames);
    run(&mut sw);
    assert_eq!(drain(&mut peers[1], &mut tp), frames);
    let ifs = sw.show_interfaces();
    assert_eq!((ifs[0].name.as_str(), ifs[1].name.as_str()), ("p0", "p1"));
    let (c0, c1) = (ifs[0].counters, ifs[1].counters);
    assert_eq!((c0.rx_packets, c0.rx_bytes), (300, bytes as u64));
    assert_eq!((c1.tx_packets, c1.tx_bytes), (300, bytes as u64));
    assert_eq!((c0.tx_packets, c1.rx_packets), (0, 0));
    sw.clear_counters();
    assert_eq!(sw.show_interfaces()[0].counters.rx_packets, 0);
}

#[test]
fn control_errors_name_the_problem_and_change_nothing() {
    let mut sw = switch();
    let _peers = with_ports(&mut sw, 3);
    sw.add_bridge("br", BridgeSettings::default()).unwrap();
    sw.add_bridge_member("br", "p0").unwrap();
    sw.add_xconnect("p1", "p2").unwrap();
    let before = (
        sw.show_ports(),
        sw.show_bridges(),
        sw.show_mac(None).unwrap(),
    );

    let e = sw.add_xconnect("nope", "p1").unwrap_err();
    assert_eq!(e.to_string(), "no port named `nope`; ports are: p0, p1, p2");
    let e = sw.add_bridge_member("bx", "p1").unwrap_err();
    assert_eq!(e.to_string(), "no bridge named `bx`; bridges are: br");
    assert!(matches!(
        sw.add_bridge_member("br", "p1"),
        Err(SwitchError::PortHasService { .. })
    ));
    assert_eq!(
        sw.add_bridge_member("br", "p1").unwrap_err().to_string(),
        "port `p1` already has a service (xconnect to `p2`); remove it first"
    );
    assert!(matches!(
        sw.add_xconnect("p0", "p1"),
        Err(SwitchError::PortHasService { .. })
    ));
    assert!(matches!(
        sw.add_xconnect("p2", "p2"),
        Err(SwitchError::XconnectToSelf { .. })
    ));
    assert!(matches!(
        sw.delete_xconnect("p0"),
        Err(SwitchError::NotXconnect { .. })
    ));
    assert!(matches!(
        sw.delete_port("p2"),
        Err(SwitchError::PortInUse { .. })
    ));
    assert_eq!(
        sw.delete_port("p2").err().unwrap().to_string(),
        "port `p2` is still used by the xconnect of `p1`; remove those first"
    );
    assert!(matches!(
        sw.add_port("p0", wire("x").0),
        Err(SwitchError::PortExists { .. })
    ));
    assert!(matches!(
        sw.add_port("has space", wire("x").0),
        Err(SwitchError::InvalidName { .. })
    ));
    assert!(matches!(
        sw.add_port("", wire("x").0),
        Err(SwitchError::InvalidName { .. })
    ));
    assert!(matches!(
        sw.add_bridge("br", BridgeSettings::default()),
        Err(SwitchError::BridgeExists { .. })
    ));
    assert!(matches!(
        sw.add_static_mac("br", mac(1), "p1"),
        Err(SwitchError::NotMember { .. })
    ));
    assert_eq!(
        sw.add_static_mac("br", mac(1), "p1")
            .unwrap_err()
            .to_string(),
        "port `p1` is not a member of bridge `br`; its members are: p0"
    );
    assert!(matches!(
        sw.add_static_mac("br", BCAST, "p0"),
        Err(SwitchError::GroupMac { .. })
    ));
    assert!(matches!(
        sw.remove_bridge_member("br", "p2"),
        Err(SwitchError::NotMember { .. })
    ));
    assert!(matches!(
        sw.show_mac(Some("zz")),
        Err(SwitchError::NoBridge { .. })
    ));
    assert!(matches!(
        sw.set_port_admin("zz", false),
        Err(SwitchError::NoPort { .. })
    ));

    let after = (
        sw.show_ports(),
        sw.show_bridges(),
        sw.show_mac(None).unwrap(),
    );
    assert_eq!(before, after);
}

#[test]
fn deleting_things_cleans_up_their_state() {
    let (mut sw, mut peers) = bridged("br", 3, BridgeSettings::default());
    sw.add_static_mac("br", mac(0x55), "p1").unwrap();
    let mut tp = tpool();
    send(&mut peers[0], &mut tp, &[frame(BCAST, mac(0xa), 60)]);
    send(&mut peers[1], &mut tp, &[frame(BCAST, mac(0xb), 60)]);
    run(&mut sw);
    for p in &mut peers {
        drain(p, &mut tp);
    }
    assert_eq!(sw.show_mac(None).unwrap().len(), 3);
    // Removing p1 from the bridge flushes its entries (static too).
    sw.remove_bridge_member("br", "p1").unwrap();
    let macs = sw.show_mac(None).unwrap();
    assert_eq!(macs.len(), 1);
    assert_eq!(macs[0].port, "p0");
    assert_eq!(sw.show_bridges()[0].members, vec!["p0", "p2"]);
    // Deleting p0 takes its membership and entries with it; its index is reused by the next port.
    let p0 = sw.delete_port("p0").unwrap();
    assert_eq!(p0.name(), "p0");
    assert!(sw.show_mac(None).unwrap().is_empty());
    let idx = sw.add_port("p9", wire("p9").0).unwrap();
    assert_eq!(idx, 0);
    // Deleting the bridge frees its members.
    sw.delete_bridge("br").unwrap();
    assert!(sw.show_bridges().is_empty());
    assert!(sw
        .show_ports()
        .iter()
        .all(|p| p.service == ServiceInfo::None));
    sw.add_xconnect("p2", "p1").unwrap();
    sw.delete_xconnect("p2").unwrap();
    assert_eq!(sw.show_buffers().in_use, 0);
}

#[test]
fn show_results_serialize_to_json() {
    let mut sw = switch();
    let _peers = with_ports(&mut sw, 2);
    sw.add_bridge("br", BridgeSettings::default()).unwrap();
    sw.add_bridge_member("br", "p0").unwrap();
    sw.add_static_mac("br", mac(7), "p0").unwrap();
    let ports = serde_json::to_value(sw.show_ports()).unwrap();
    assert_eq!(
        ports[0]["service"],
        serde_json::json!({"type": "bridge", "bridge": "br"})
    );
    assert_eq!(ports[1]["service"], serde_json::json!({"type": "none"}));
    let macs = serde_json::to_value(sw.show_mac(None).unwrap()).unwrap();
    assert_eq!(macs[0]["static"], true);
    assert_eq!(macs[0]["mac"], "02:00:00:00:00:07");
    let rt = serde_json::to_value(sw.show_runtime()).unwrap();
    assert!(rt["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n["name"] == "l2-flood"));
    assert!(rt["loop"]["polls"].is_u64());
    let b = serde_json::to_value(sw.show_bridges()).unwrap();
    assert_eq!(b[0]["settings"]["mac_age_s"], 300);
    assert!(serde_json::to_value(sw.show_buffers()).unwrap()["total"].is_u64());
}

#[test]
fn jumbo_and_tagged_frames_are_flooded_and_forwarded_byte_exact() {
    let (mut sw, mut peers) = bridged("br", 3, BridgeSettings::default());
    let mut tp = tpool();
    // A 9000-byte frame spans several buffers: flooding copies every segment.
    let jumbo = frame(BCAST, mac(0xa), 9000);
    let qinq = tagged(mac(0xb), mac(0xa), &[(0x88a8, 100), (0x8100, 200)]);
    send(&mut peers[0], &mut tp, &[jumbo.clone(), qinq.clone()]);
    run(&mut sw);
    assert_eq!(
        drain(&mut peers[1], &mut tp),
        vec![jumbo.clone(), qinq.clone()]
    );
    assert_eq!(drain(&mut peers[2], &mut tp), vec![jumbo, qinq]);
    assert_eq!(sw.show_buffers().in_use, 0);
    assert_eq!(tp.in_use(), 0);
}
