//! Input hygiene at L2 (issue 14 item 2), byte by byte through a whole `Switch` with loopback ports:
//! group and all-zero source MACs dropped by name and never learned, frames over the receive
//! interface's MTU dropped at input (not `tx-failed`), and the runt policy (14–59-byte frames
//! forwarded unchanged, not an error; under 14 bytes `runt`). See
//! `vecswitch_switch::interface::hygiene` for the rules and their sources.

mod common;

use common::*;
use vecswitch_buffer::Pool;
use vecswitch_ports::loopback::LoopbackPort;
use vecswitch_switch::{BridgeSettings, Switch, SwitchConfig};

fn tpool() -> Pool {
    Pool::new(4096)
}

/// A switch with loopback ports p0..pn in bridge `br0` (learning on).
fn bridged(n: usize) -> (Switch, Vec<LoopbackPort>) {
    let mut sw = Switch::new(SwitchConfig {
        buffers: 4096,
        mac_table_entries: 4096,
        ..Default::default()
    });
    sw.add_bridge("br0", BridgeSettings::default()).unwrap();
    let peers = (0..n)
        .map(|i| {
            let name = format!("p{i}");
            let (port, peer) = wire(&name);
            sw.add_port(&name, port).unwrap();
            sw.add_bridge_member("br0", &name).unwrap();
            peer
        })
        .collect();
    (sw, peers)
}

fn run(sw: &mut Switch) {
    while sw.poll_once() > 0 {}
}

fn count(sw: &Switch, node: &str, reason: &str) -> u64 {
    sw.show_errors()
        .iter()
        .find(|e| e.node == node && e.reason == reason)
        .map_or(0, |e| e.count)
}

/// Every `(node, reason, count)` the switch shows, for exact comparisons.
fn all_errors(sw: &Switch) -> Vec<(String, String, u64)> {
    let mut v: Vec<_> = sw
        .show_errors()
        .into_iter()
        .filter(|e| e.count > 0)
        .map(|e| (e.node, e.reason, e.count))
        .collect();
    v.sort();
    v
}

fn e(node: &str, reason: &str, n: u64) -> (String, String, u64) {
    (node.to_string(), reason.to_string(), n)
}

#[test]
fn group_and_zero_source_macs_are_dropped_by_name_and_never_learned() {
    let (mut sw, mut peers) = bridged(3);
    let mut tp = tpool();
    let bad_sources: [[u8; 6]; 5] = [
        [0xff; 6],                            // broadcast
        [0x01, 0x00, 0x5e, 0x00, 0x00, 0x01], // IPv4 multicast
        [0x33, 0x33, 0x00, 0x00, 0x00, 0x01], // IPv6 multicast
        [0x03, 0x00, 0x00, 0x00, 0x00, 0x07], // locally administered group
        [0x00; 6],                            // all zero
    ];
    for burst in BURSTS {
        let frames: Vec<Vec<u8>> = (0..burst)
            .map(|i| {
                // To a unicast, a broadcast and a multicast destination in turn.
                let dst = [mac(9), BCAST, [0x01, 0x80, 0xc2, 0, 0, 0x0e]][i % 3];
                frame(dst, bad_sources[i % bad_sources.len()], 60 + i % 40)
            })
            .collect();
        send(&mut peers[0], &mut tp, &frames);
        run(&mut sw);
        for (i, p) in peers.iter_mut().enumerate() {
            assert!(
                drain(p, &mut tp).is_empty(),
                "burst {burst}: p{i} got a frame"
            );
        }
        assert_eq!(sw.show_buffers().in_use, 0, "burst {burst}");
    }
    let total: usize = BURSTS.iter().sum();
    let zero = BURSTS
        .iter()
        .map(|&b| (0..b).filter(|i| i % 5 == 4).count())
        .sum::<usize>() as u64;
    assert_eq!(
        all_errors(&sw),
        vec![
            e("ethernet-input", "src-mac-multicast", total as u64 - zero),
            e("ethernet-input", "src-mac-zero", zero),
        ]
    );
    assert!(
        sw.show_mac(Some("br0")).unwrap().is_empty(),
        "nothing learned"
    );
    assert_eq!(count(&sw, "l2-learn", "learned"), 0);

    // A good source on the same port is still learned and forwarded: only the bad frames went.
    let good = frame(BCAST, mac(1), 60);
    send(&mut peers[0], &mut tp, std::slice::from_ref(&good));
    run(&mut sw);
    assert_eq!(drain(&mut peers[1], &mut tp), vec![good.clone()]);
    assert_eq!(drain(&mut peers[2], &mut tp), vec![good]);
    let macs = sw.show_mac(Some("br0")).unwrap();
    assert_eq!(macs.len(), 1, "{macs:?}");
    assert_eq!(tp.in_use(), 0);
}

#[test]
fn frames_over_the_receive_mtu_are_dropped_at_input_not_at_transmit() {
    let (mut sw, mut peers) = bridged(2);
    sw.set_interface_mtu("p0", 1500).unwrap();
    let mut tp = tpool();
    // Teach the bridge where mac(2) is, so that frames to it are known unicast to p1.
    send(&mut peers[1], &mut tp, &[frame(BCAST, mac(2), 60)]);
    run(&mut sw);
    drain(&mut peers[0], &mut tp);
    let fits = frame(mac(2), mac(1), 1514); // 1500 bytes of L3
    let over = frame(mac(2), mac(1), 1515); // 1501
    let mut tagged_fits = frame(mac(2), mac(1), 1518); // 802.1Q tag + 1500 bytes of L3
    tagged_fits.splice(12..12, [0x81, 0x00, 0x00, 0x05]);
    tagged_fits.truncate(1518);
    let mut tagged_over = tagged_fits.clone();
    tagged_over.push(0);
    send(
        &mut peers[0],
        &mut tp,
        &[fits.clone(), over.clone(), tagged_over, tagged_fits.clone()],
    );
    run(&mut sw);
    assert_eq!(drain(&mut peers[1], &mut tp), vec![fits, tagged_fits]);
    assert_eq!(count(&sw, "ethernet-input", "over-mtu"), 2);
    assert_eq!(count(&sw, "interface-output", "tx-failed"), 0);
    // p1 kept the default MTU (9000): a 9014-byte frame (chained buffers) goes, 9015 does not.
    send(&mut peers[0], &mut tp, &[frame(BCAST, mac(2), 9014)]);
    send(
        &mut peers[1],
        &mut tp,
        &[frame(mac(1), mac(2), 9014), frame(mac(1), mac(2), 9015)],
    );
    run(&mut sw);
    assert_eq!(
        count(&sw, "ethernet-input", "over-mtu"),
        4,
        "{:?}",
        all_errors(&sw)
    );
    let got = drain(&mut peers[0], &mut tp);
    assert_eq!(got.iter().map(Vec::len).collect::<Vec<_>>(), vec![9014]);
    assert_eq!(sw.show_buffers().in_use, 0);
    assert_eq!(tp.in_use(), 0);
}

#[test]
fn runt_policy_forwards_14_to_59_bytes_unchanged_and_drops_under_14() {
    let mut sw = Switch::new(SwitchConfig {
        buffers: 4096,
        ..Default::default()
    });
    let (a, mut pa) = wire("p0");
    let (b, mut pb) = wire("p1");
    sw.add_port("p0", a).unwrap();
    sw.add_port("p1", b).unwrap();
    sw.add_xconnect("p0", "p1").unwrap();
    let mut tp = tpool();
    // An ARP request as a kernel sends it on a veth: 42 bytes, unpadded.
    let mut arp = vec![0xff; 6];
    arp.extend_from_slice(&mac(1));
    arp.extend_from_slice(&[0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 1]);
    arp.extend_from_slice(&mac(1));
    arp.extend_from_slice(&[10, 0, 0, 1, 0, 0, 0, 0, 0, 0, 10, 0, 0, 2]);
    assert_eq!(arp.len(), 42);
    let short: Vec<Vec<u8>> = vec![
        frame(mac(2), mac(1), 14),
        arp,
        frame(mac(2), mac(1), 59),
        frame(mac(2), mac(1), 60),
    ];
    send(&mut pa, &mut tp, &short);
    send(
        &mut pa,
        &mut tp,
        &[frame(mac(2), mac(1), 60)[..13].to_vec()],
    );
    run(&mut sw);
    assert_eq!(
        drain(&mut pb, &mut tp),
        short,
        "forwarded byte for byte, not padded"
    );
    assert_eq!(all_errors(&sw), vec![e("ethernet-input", "runt", 1)]);
    assert_eq!(sw.show_buffers().in_use, 0);
    assert_eq!(tp.in_use(), 0);
}
