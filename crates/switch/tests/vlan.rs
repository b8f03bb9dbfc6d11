//! VLAN sub-interfaces through a whole `Switch` with loopback ports: each classification rule and
//! each tag operation with frames built from byte arrays in and exact bytes out (tag stacks at the
//! limits, frames too short for the tags they claim), the egress filter, config errors that change
//! nothing, and a model-based property test against a small reference model of VPP's matching.

mod common;

use common::*;
use proptest::prelude::*;
use vecswitch_buffer::Pool;
use vecswitch_ports::loopback::LoopbackPort;
use vecswitch_switch::bond::{BondMode, BondSettings};
use vecswitch_switch::vlan::{Encap, SubInterfaceConfig, TagRewrite};
use vecswitch_switch::{Switch, SwitchConfig, SwitchError};

const Q: u16 = 0x8100;
const AD: u16 = 0x88a8;

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

/// A switch with ports p0..pn; returns the test's ends.
fn with_ports(n: usize) -> (Switch, Vec<LoopbackPort>) {
    let mut sw = switch();
    let peers = (0..n)
        .map(|i| {
            let (port, peer) = wire(&format!("p{i}"));
            sw.add_port(&format!("p{i}"), port).unwrap();
            peer
        })
        .collect();
    (sw, peers)
}

fn sub(parent: &str, id: u32, encap: &str, rewrite: &str) -> SubInterfaceConfig {
    SubInterfaceConfig {
        parent: parent.to_string(),
        id,
        encap: encap.parse().unwrap(),
        tag_rewrite: rewrite.parse().unwrap(),
    }
}

fn run(sw: &mut Switch) {
    while sw.poll_once() > 0 {}
}

fn error_count(sw: &Switch, node: &str, reason: &str) -> u64 {
    sw.show_errors()
        .into_iter()
        .find(|e| e.node == node && e.reason == reason)
        .map_or(0, |e| e.count)
}

/// A frame dst mac(1), src mac(2), `tags`, IPv4 EtherType, 46 bytes of 0x5a.
fn f(tags: &[(u16, u16)]) -> Vec<u8> {
    tagged(mac(1), mac(2), tags)
}

/// Sends `frame` into `from` and returns what each peer received.
fn through(
    sw: &mut Switch,
    peers: &mut [LoopbackPort],
    from: usize,
    frame: &[u8],
) -> Vec<Vec<Vec<u8>>> {
    let mut pool = tpool();
    send(&mut peers[from], &mut pool, &[frame.to_vec()]);
    run(sw);
    let out = peers.iter_mut().map(|p| drain(p, &mut pool)).collect();
    assert_eq!(sw.show_buffers().in_use, 0, "every buffer back in the pool");
    out
}

/// The single port a frame came out of, with its bytes; panics if it came out of several.
fn only_out(out: &[Vec<Vec<u8>>]) -> Option<(usize, Vec<u8>)> {
    let hits: Vec<(usize, Vec<u8>)> = out
        .iter()
        .enumerate()
        .flat_map(|(i, fs)| fs.iter().map(move |f| (i, f.clone())))
        .collect();
    assert!(hits.len() <= 1, "one frame in, at most one out: {hits:?}");
    hits.into_iter().next()
}

#[test]
fn classification_follows_vpps_order() {
    // p0 is the parent; each sub-interface and the main interface are cross-connected to a port
    // of their own, so the port a frame leaves by names the interface that took it.
    let (mut sw, mut peers) = with_ports(8);
    let encaps = [
        (1, "dot1ad 100 inner-dot1q 20"),
        (2, "dot1ad 100 inner-dot1q any"),
        (3, "dot1ad 100"),
        (4, "dot1q 10 exact-match"),
        (5, "dot1q 11"),
        (6, "default"),
    ];
    for (id, e) in encaps {
        sw.add_subinterface(&sub("p0", id, e, "disable")).unwrap();
        sw.add_xconnect(&format!("p0.{id}"), &format!("p{id}"))
            .unwrap();
    }
    sw.add_xconnect("p0", "p7").unwrap();
    let cases: &[(&[(u16, u16)], usize)] = &[
        (&[(AD, 100), (Q, 20)], 1), // exact Q-in-Q
        (&[(AD, 100), (Q, 21)], 2), // outer + any inner
        (&[(AD, 100)], 3),          // single tag
        (&[(Q, 10)], 4),            // single tag, exact-match
        (&[(Q, 10), (Q, 5)], 6),    // exact-match refuses two tags: default
        (&[(Q, 11), (Q, 5)], 5),    // a single-tag sub-interface takes two tags
        (&[(Q, 100), (Q, 20)], 6),  // dot1q 100 is not dot1ad 100
        (&[(Q, 12)], 6),            // no such VLAN: default
        (&[(0x9100, 11)], 5),       // legacy TPID in the dot1q table (as VPP)
        (&[(Q, 0)], 6),             // priority tag: default first
        (&[(AD, 4094), (Q, 4094)], 6),
        (&[], 7), // untagged: the main interface
    ];
    for (tags, port) in cases {
        let frame = f(tags);
        let out = through(&mut sw, &mut peers, 0, &frame);
        assert_eq!(
            only_out(&out),
            Some((*port, frame.clone())),
            "tags {tags:x?}: by p{port}, unchanged"
        );
    }
    let subs = sw.show_subinterfaces();
    assert_eq!(subs.len(), 6);
    let rx: Vec<u64> = subs.iter().map(|s| s.rx_packets).collect();
    assert_eq!(rx, [1, 1, 1, 1, 2, 5]);
    let tx: Vec<u64> = subs.iter().map(|s| s.tx_packets).collect();
    assert_eq!(tx, [0; 6], "nothing was sent on them");

    // Without `default`, tagged frames nobody matches go to the main interface, which is in L2
    // mode (it has a service) ...
    sw.delete_xconnect("p0.6").unwrap();
    sw.delete_subinterface("p0.6").unwrap();
    let frame = f(&[(Q, 12)]);
    assert_eq!(
        only_out(&through(&mut sw, &mut peers, 0, &frame)),
        Some((7, frame.clone()))
    );
    // ... a priority-tagged frame too (the untagged slot) ...
    let prio = f(&[(Q, 0)]);
    assert_eq!(
        only_out(&through(&mut sw, &mut peers, 0, &prio)),
        Some((7, prio.clone()))
    );
    // ... and are dropped as `unknown-vlan` once it has no service; untagged frames still reach
    // it (and are dropped there for want of a service).
    sw.delete_xconnect("p0").unwrap();
    assert_eq!(only_out(&through(&mut sw, &mut peers, 0, &frame)), None);
    assert_eq!(error_count(&sw, "ethernet-input", "unknown-vlan"), 1);
    assert_eq!(only_out(&through(&mut sw, &mut peers, 0, &f(&[]))), None);
    assert_eq!(error_count(&sw, "ethernet-input", "no-service"), 1);
    assert_eq!(only_out(&through(&mut sw, &mut peers, 0, &prio)), None);
    assert_eq!(error_count(&sw, "ethernet-input", "no-service"), 2);

    // An `untagged` sub-interface takes the untagged slot from the main interface, whatever its
    // service: tagged leftovers are then `unknown-vlan` even with the main interface in L2.
    sw.add_subinterface(&sub("p0", 6, "untagged", "disable"))
        .unwrap();
    sw.add_xconnect("p0.6", "p6").unwrap();
    sw.add_xconnect("p0", "p7").unwrap();
    let plain = f(&[]);
    assert_eq!(
        only_out(&through(&mut sw, &mut peers, 0, &plain)),
        Some((6, plain.clone()))
    );
    assert_eq!(only_out(&through(&mut sw, &mut peers, 0, &frame)), None);
    assert_eq!(error_count(&sw, "ethernet-input", "unknown-vlan"), 2);
}

/// A sub-interface `p0.1` with `encap` and `rewrite`, cross-connected both ways with port p1:
/// Packets the node `vlan-output` processed (0 while every sub-interface's egress runs inline in
/// `interface-output`).
fn vlan_output_packets(sw: &Switch) -> u64 {
    sw.show_runtime()
        .nodes
        .iter()
        .find(|n| n.name == "vlan-output")
        .map_or(0, |n| n.packets)
}

/// `in_tags` into p0 come out of p1 with `out_tags`, and `out_tags` into p1 come back out of p0
/// with `in_tags` (the egress inverse) — both with the egress inline in `interface-output`
/// (nothing else on the output arcs: the node `vlan-output` never runs) and on the node
/// `vlan-output` (`mtu-check` on the parent puts it on the sub-interface's arc).
fn rewrite_case(encap: &str, rewrite: &str, in_tags: &[(u16, u16)], out_tags: &[(u16, u16)]) {
    for node in [false, true] {
        let (mut sw, mut peers) = with_ports(2);
        sw.add_subinterface(&sub("p0", 1, encap, rewrite)).unwrap();
        sw.add_xconnect("p0.1", "p1").unwrap();
        sw.add_xconnect("p1", "p0.1").unwrap();
        if node {
            sw.set_mtu_check("p0", true).unwrap();
        }
        let (a, b) = (f(in_tags), f(out_tags));
        let what = format!("{encap} / {rewrite} (vlan-output node: {node})");
        assert_eq!(
            only_out(&through(&mut sw, &mut peers, 0, &a)),
            Some((1, b.clone())),
            "{what}: ingress"
        );
        assert_eq!(
            only_out(&through(&mut sw, &mut peers, 1, &b)),
            Some((0, a.clone())),
            "{what}: egress inverse"
        );
        assert_eq!(
            vlan_output_packets(&sw),
            u64::from(node),
            "{what}: the path"
        );
        let s = &sw.show_subinterfaces()[0];
        assert_eq!((s.rx_packets, s.tx_packets), (1, 1), "{what}");
        assert_eq!(
            (s.rx_bytes, s.tx_bytes),
            (a.len() as u64, a.len() as u64),
            "{what}: bytes as received and as sent (the sub-interface's own tags)"
        );
        assert!(
            sw.show_errors().is_empty(),
            "{what}: {:?}",
            sw.show_errors()
        );
    }
}

#[test]
fn every_tag_operation_and_its_inverse_byte_exact() {
    rewrite_case("dot1q 10", "disable", &[(Q, 10)], &[(Q, 10)]);
    rewrite_case("dot1q 10", "pop 1", &[(Q, 10)], &[]);
    rewrite_case("dot1q 4094", "pop 1", &[(Q, 4094)], &[]);
    rewrite_case(
        "dot1ad 100 inner-dot1q 20",
        "pop 1",
        &[(AD, 100), (Q, 20)],
        &[(Q, 20)],
    );
    rewrite_case(
        "dot1ad 100 inner-dot1q 20",
        "pop 2",
        &[(AD, 100), (Q, 20)],
        &[],
    );
    rewrite_case(
        "dot1q 10 inner-dot1q any",
        "pop 1",
        &[(Q, 10), (Q, 77)],
        &[(Q, 77)],
    );
    rewrite_case("untagged", "push dot1q 5", &[], &[(Q, 5)]);
    rewrite_case(
        "untagged",
        "push dot1ad 300 400",
        &[],
        &[(AD, 300), (Q, 400)],
    );
    rewrite_case(
        "dot1q 10 exact-match",
        "push dot1ad 300",
        &[(Q, 10)],
        &[(AD, 300), (Q, 10)],
    );
    rewrite_case("default", "push dot1q 5", &[(Q, 99)], &[(Q, 5), (Q, 99)]);
    rewrite_case(
        "dot1q 10",
        "translate 1-1 dot1ad 11",
        &[(Q, 10)],
        &[(AD, 11)],
    );
    // S-VLAN translation at an ENNI: the C-tag inside rides along.
    rewrite_case(
        "dot1ad 300",
        "translate 1-1 dot1ad 400",
        &[(AD, 300), (Q, 10)],
        &[(AD, 400), (Q, 10)],
    );
    rewrite_case(
        "dot1q 10",
        "translate 1-2 dot1ad 300 10",
        &[(Q, 10)],
        &[(AD, 300), (Q, 10)],
    );
    rewrite_case(
        "dot1ad 100 inner-dot1q 20",
        "translate 2-1 dot1q 42",
        &[(AD, 100), (Q, 20)],
        &[(Q, 42)],
    );
    rewrite_case(
        "dot1ad 100 inner-dot1q 20",
        "translate 2-2 dot1ad 4094 1",
        &[(AD, 100), (Q, 20)],
        &[(AD, 4094), (Q, 1)],
    );
    rewrite_case(
        "dot1ad 1 inner-dot1q 4094",
        "translate 2-2 dot1q 2 3",
        &[(AD, 1), (Q, 4094)],
        &[(Q, 2), (Q, 3)],
    );
}

#[test]
fn pushed_tags_carry_no_priority_and_popped_tags_are_rebuilt_from_the_encap() {
    // VPP pushes the configured TCI whole (PCP 0, DEI 0); the egress push of a popped tag writes
    // the encap's VID, not what the frame had.
    let (mut sw, mut peers) = with_ports(2);
    sw.add_subinterface(&sub("p0", 1, "dot1q 10", "translate 1-1 dot1ad 11"))
        .unwrap();
    sw.add_xconnect("p0.1", "p1").unwrap();
    let mut a = f(&[(Q, 10)]);
    a[14] |= 0xb0; // PCP 5, DEI
    let out = only_out(&through(&mut sw, &mut peers, 0, &a)).unwrap();
    assert_eq!(out, (1, f(&[(AD, 11)])));
}

#[test]
fn smallest_frames_with_their_tags_are_rewritten_exactly() {
    // Addresses, tags and the type field, nothing after it.
    let bare = |tags: &[(u16, u16)]| f(tags)[..12 + 4 * tags.len() + 2].to_vec();
    let (mut sw, mut peers) = with_ports(2);
    sw.add_subinterface(&sub("p0", 1, "dot1ad 7 inner-dot1q 8", "pop 2"))
        .unwrap();
    sw.add_xconnect("p0.1", "p1").unwrap();
    sw.add_xconnect("p1", "p0.1").unwrap();
    let a = bare(&[(AD, 7), (Q, 8)]);
    assert_eq!(a.len(), 22);
    assert_eq!(
        only_out(&through(&mut sw, &mut peers, 0, &a)),
        Some((1, bare(&[])))
    );
    assert_eq!(
        only_out(&through(&mut sw, &mut peers, 1, &bare(&[]))),
        Some((0, a))
    );
}

#[test]
fn frames_too_short_for_their_tags_are_dropped_with_a_reason() {
    let (mut sw, mut peers) = with_ports(2);
    sw.add_subinterface(&sub("p0", 1, "dot1q 10", "pop 1"))
        .unwrap();
    sw.add_xconnect("p0.1", "p1").unwrap();
    sw.add_xconnect("p0", "p1").unwrap();
    let full = f(&[(AD, 10), (Q, 20)]);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("runt", full[..13].to_vec()),
        ("truncated-vlan-tag", full[..15].to_vec()), // outer TPID, half a TCI
        ("truncated-vlan-tag", full[..17].to_vec()), // outer tag, no type after it
        ("truncated-vlan-tag", full[..19].to_vec()), // inner TPID, half its TCI
        ("too-many-vlan-tags", f(&[(AD, 10), (Q, 20), (Q, 30)])),
    ];
    for (reason, frame) in &cases {
        let before = error_count(&sw, "ethernet-input", reason);
        assert_eq!(
            only_out(&through(&mut sw, &mut peers, 0, frame)),
            None,
            "{reason}"
        );
        assert_eq!(
            error_count(&sw, "ethernet-input", reason),
            before + 1,
            "{reason}"
        );
    }
    // The other malformed kinds too, each under its own name, by `ethernet-input` (which
    // validates the whole L2 header before it classifies).
    for (reason, frame) in malformed() {
        let before = error_count(&sw, "ethernet-input", reason);
        through(&mut sw, &mut peers, 0, &frame);
        assert_eq!(
            error_count(&sw, "ethernet-input", reason),
            before + 1,
            "{reason}"
        );
    }
    assert_eq!(error_count(&sw, "ethernet-input", "bad-length-field"), 2);
}

#[test]
fn egress_filter_drops_frames_whose_tags_do_not_match_the_sub_interface() {
    // A bridge of p0.10 (dot1q 10, no rewrite) and p1: frames flooded from p1 leave by p0.10 only
    // if they carry VLAN 10.
    let (mut sw, mut peers) = with_ports(2);
    sw.add_subinterface(&sub("p0", 10, "dot1q 10", "disable"))
        .unwrap();
    sw.add_bridge("b", Default::default()).unwrap();
    sw.add_bridge_member("b", "p0.10").unwrap();
    sw.add_bridge_member("b", "p1").unwrap();
    let ok = f(&[(Q, 10)]);
    assert_eq!(
        only_out(&through(&mut sw, &mut peers, 1, &ok)),
        Some((0, ok))
    );
    for tags in [&[][..], &[(Q, 11)], &[(AD, 10)]] {
        assert_eq!(only_out(&through(&mut sw, &mut peers, 1, &f(tags))), None);
    }
    assert_eq!(error_count(&sw, "vlan-output", "egress-vlan-mismatch"), 3);

    // A push on ingress pops on egress: a frame without the tag to pop is dropped by name.
    let (mut sw, mut peers) = with_ports(2);
    sw.add_subinterface(&sub("p0", 1, "untagged", "push dot1q 5"))
        .unwrap();
    sw.add_xconnect("p1", "p0.1").unwrap();
    assert_eq!(only_out(&through(&mut sw, &mut peers, 1, &f(&[]))), None);
    assert_eq!(error_count(&sw, "vlan-output", "egress-too-few-tags"), 1);
}

#[test]
fn sub_interfaces_join_bridges_and_flood_with_their_own_tags() {
    // E-LAN: p0.10 (C-tag 10 popped), p0.20 (C-tag 20 popped) and p1 untagged in one bridge.
    // A broadcast from p1 leaves p0 twice, once per VLAN, each with its own tag pushed back.
    let (mut sw, mut peers) = with_ports(2);
    sw.add_subinterface(&sub("p0", 10, "dot1q 10", "pop 1"))
        .unwrap();
    sw.add_subinterface(&sub("p0", 20, "dot1q 20", "pop 1"))
        .unwrap();
    sw.add_bridge("b", Default::default()).unwrap();
    for m in ["p0.10", "p0.20", "p1"] {
        sw.add_bridge_member("b", m).unwrap();
    }
    let bc = tagged(BCAST, mac(2), &[]);
    let out = through(&mut sw, &mut peers, 1, &bc);
    let mut got = out[0].clone();
    got.sort();
    let mut want = vec![
        tagged(BCAST, mac(2), &[(Q, 10)]),
        tagged(BCAST, mac(2), &[(Q, 20)]),
    ];
    want.sort();
    assert_eq!(got, want);
    assert!(out[1].is_empty());
    // Back from VLAN 20 to the learned station on p1, untagged.
    let back = tagged(mac(2), mac(9), &[(Q, 20)]);
    let out = through(&mut sw, &mut peers, 0, &back);
    assert_eq!(out[1], vec![tagged(mac(2), mac(9), &[])]);
    assert!(out[0].is_empty());
}

fn invalid<T: std::fmt::Debug>(r: Result<T, SwitchError>) -> (&'static str, String, &'static str) {
    match r {
        Err(SwitchError::InvalidValue {
            field,
            value,
            accepted,
        }) => (field, value, accepted),
        other => panic!("expected InvalidValue, got {other:?}"),
    }
}

#[test]
fn bad_config_is_refused_with_field_value_and_accepted_and_changes_nothing() {
    let (mut sw, _peers) = with_ports(2);
    sw.add_subinterface(&sub("p0", 1, "dot1q 10", "pop 1"))
        .unwrap();
    sw.add_subinterface(&sub("p0", 2, "dot1ad 10 inner-dot1q any", "pop 1"))
        .unwrap();
    let before = (sw.show_subinterfaces(), sw.show_interfaces());
    // Pop beyond the match.
    for (encap, rw) in [
        ("dot1q 11", "pop 2"),
        ("dot1q 11", "translate 2-2 dot1q 1 2"),
        ("dot1q 11", "translate 2-1 dot1q 1"),
        ("dot1q 11 inner-dot1q any", "pop 2"),
        ("default", "pop 1"),
        ("untagged", "translate 1-1 dot1q 3"),
    ] {
        let (field, value, accepted) = invalid(sw.add_subinterface(&sub("p1", 9, encap, rw)));
        assert_eq!(field, "tag-rewrite");
        assert!(value.contains(rw) && value.contains(encap), "{value}");
        assert!(accepted.contains("pop 2"), "{accepted}");
    }
    let (field, _, _) = invalid(sw.set_tag_rewrite("p0.1", "pop 2".parse().unwrap()));
    assert_eq!(field, "tag-rewrite");
    // The same match twice on one parent (the same VID on the other TPID is another match).
    let (field, value, _) =
        invalid(sw.add_subinterface(&sub("p0", 3, "dot1q 10 exact-match", "disable")));
    assert_eq!(field, "encap");
    assert!(
        value.contains("p0.1"),
        "names the sub-interface that has it: {value}"
    );
    // A sub-interface of a sub-interface.
    let (field, _, _) = invalid(sw.add_subinterface(&sub("p0.1", 1, "dot1q 5", "disable")));
    assert_eq!(field, "parent");
    // Unknown parent, taken name.
    assert!(matches!(
        sw.add_subinterface(&sub("nope", 1, "dot1q 5", "disable")),
        Err(SwitchError::NoPort { .. })
    ));
    assert!(matches!(
        sw.add_subinterface(&sub("p0", 1, "dot1q 99", "disable")),
        Err(SwitchError::PortExists { .. })
    ));
    assert_eq!((sw.show_subinterfaces(), sw.show_interfaces()), before);

    // In use: not deleted.
    sw.add_xconnect("p1", "p0.1").unwrap();
    assert!(matches!(
        sw.delete_subinterface("p0.1"),
        Err(SwitchError::PortInUse { .. })
    ));
    // Ports added after sub-interfaces do not take their indices.
    let (port, _peer) = wire("p2");
    sw.add_port("p2", port).unwrap();
    assert_eq!(sw.show_subinterfaces().len(), 2);
    let names: Vec<String> = sw.show_interfaces().into_iter().map(|i| i.name).collect();
    assert_eq!(names.len(), 5, "{names:?}");
}

#[test]
fn show_interfaces_lists_sub_interfaces_with_their_features() {
    let (mut sw, _peers) = with_ports(1);
    sw.add_subinterface(&sub("p0", 7, "dot1q 7", "pop 1"))
        .unwrap();
    let i = sw.show_interfaces();
    let p0 = i.iter().find(|i| i.name == "p0").unwrap();
    // Classified by `ethernet-input`: no input feature on the parent.
    assert!(p0.input_features.is_empty(), "{:?}", p0.input_features);
    let s = i.iter().find(|i| i.name == "p0.7").unwrap();
    // Nothing else on its arc or its parent's: `interface-output` does its egress inline.
    assert!(s.output_features.is_empty(), "{:?}", s.output_features);
    let json = serde_json::to_string(&s.kind).unwrap();
    assert_eq!(json, r#"{"type":"sub","parent":0,"id":7}"#);
    let info = &sw.show_subinterfaces()[0];
    assert_eq!(
        (info.encap.as_str(), info.tag_rewrite.as_str()),
        ("dot1q 7", "pop 1")
    );
    // The last sub-interface gone, the parent's input feature goes too.
    sw.delete_subinterface("p0.7").unwrap();
    let i = sw.show_interfaces();
    assert_eq!(i.len(), 1);
    assert!(i[0].input_features.is_empty());
}

/// The output features of interface `name`.
fn output_features(sw: &Switch, name: &str) -> Vec<String> {
    sw.show_interfaces()
        .into_iter()
        .find(|i| i.name == name)
        .map(|i| i.output_features)
        .unwrap_or_default()
}

/// Where a sub-interface's egress runs: inline in `interface-output` while nothing else is on its
/// output arc or its parent's (no `vlan-output` listed), on the `vlan-output` node as soon as
/// something is (so that the parent's features see the rewritten frame, in arc order) — switched
/// by `mtu-check` going on and off on the parent and on the sub-interface, and from the start
/// over a bond (`bond-output` picks the member). The bytes out and the sub-interface's counters
/// are the same either way.
#[test]
fn vlan_output_is_on_the_arc_exactly_when_another_output_feature_is() {
    let (mut sw, mut peers) = with_ports(4);
    sw.add_subinterface(&sub("p0", 7, "dot1q 7", "pop 1"))
        .unwrap();
    sw.add_xconnect("p1", "p0.7").unwrap();
    let pushed = f(&[(Q, 7)]);
    let steps: [(&str, bool, &[&str], &[&str]); 5] = [
        ("p0", false, &[], &[]),
        ("p0", true, &["vlan-output"], &["mtu-check"]),
        ("p0", false, &[], &[]),
        ("p0.7", true, &["vlan-output", "mtu-check"], &[]),
        ("p0.7", false, &[], &[]),
    ];
    for (n, (on, mtu, sub_features, parent_features)) in steps.into_iter().enumerate() {
        sw.set_mtu_check(on, mtu).unwrap();
        assert_eq!(output_features(&sw, "p0.7"), sub_features, "step {n}");
        assert_eq!(output_features(&sw, "p0"), parent_features, "step {n}");
        let before = vlan_output_packets(&sw);
        assert_eq!(
            only_out(&through(&mut sw, &mut peers, 1, &f(&[]))),
            Some((0, pushed.clone())),
            "step {n}"
        );
        // The node runs exactly when it is on the arc; else `interface-output` did the push.
        let on_arc = sub_features.contains(&"vlan-output");
        assert_eq!(
            vlan_output_packets(&sw) - before,
            u64::from(on_arc),
            "step {n}"
        );
        let info = &sw.show_subinterfaces()[0];
        let k = n as u64 + 1;
        assert_eq!((info.tx_packets, info.tx_bytes), (k, k * 64), "step {n}");
    }
    // A frame the egress filter drops is dropped by `vlan-output`, by name, either way.
    sw.delete_xconnect("p1").unwrap();
    sw.add_bridge("b", Default::default()).unwrap();
    sw.add_subinterface(&sub("p0", 8, "dot1q 8", "disable"))
        .unwrap();
    sw.add_bridge_member("b", "p0.8").unwrap();
    sw.add_bridge_member("b", "p1").unwrap();
    for (n, mtu) in [false, true].into_iter().enumerate() {
        sw.set_mtu_check("p0", mtu).unwrap();
        assert_eq!(
            only_out(&through(&mut sw, &mut peers, 1, &f(&[(Q, 9)]))),
            None
        );
        let e = error_count(&sw, "vlan-output", "egress-vlan-mismatch");
        assert_eq!(e, n as u64 + 1, "mtu-check on p0: {mtu}");
    }
    sw.set_mtu_check("p0", false).unwrap();

    // Over a bond: `bond-output` is on the bond's arc, so `vlan-output` is on the sub-interface's.
    sw.create_bond(
        "b0",
        BondSettings {
            mode: BondMode::ActiveBackup,
            ..Default::default()
        },
    )
    .unwrap();
    sw.add_bond_member("b0", "p2").unwrap();
    sw.add_subinterface(&sub("b0", 5, "dot1q 5", "pop 1"))
        .unwrap();
    assert_eq!(output_features(&sw, "b0.5"), ["vlan-output"]);
    sw.add_xconnect("p3", "b0.5").unwrap();
    let before = vlan_output_packets(&sw);
    assert_eq!(
        only_out(&through(&mut sw, &mut peers, 3, &f(&[]))),
        Some((2, f(&[(Q, 5)])))
    );
    assert_eq!(
        vlan_output_packets(&sw) - before,
        1,
        "over a bond: the node"
    );
}

// ----- the model-based property test -----------------------------------------------------------

/// One of VPP's sub-interface slots: the flags it accepts if it applies to the frame.
type Slot<'a> = &'a dyn Fn(&Encap) -> Option<u8>;

/// VPP's match flags (`SUBINT_CONFIG_*`): valid, then 0, 1, 2 tags.
const VALID: u8 = 1;
const T0: u8 = 2;
const T1: u8 = 4;
const T2: u8 = 8;

/// A reference model of VPP's sub-interface matching, written from `eth_identify_subint` and
/// `ethernet_sw_interface_get_config` independently of the switch's tables: each slot has the
/// tag-count flags it accepts, a frame has the flags of its tag count, and the first slot in
/// VPP's order whose flags contain the frame's wins. Returns the sub-interface's position in
/// `encaps`, `Some(None)` for the main interface, `None` for `unknown-vlan`.
fn model(encaps: &[Encap], main_l2: bool, tags: &[(u16, u16)]) -> Option<Option<usize>> {
    let mut frame = VALID
        | match tags.len() {
            0 => T0,
            1 => T1,
            _ => T2,
        };
    if tags.len() == 1 && tags[0].1 == 0 {
        frame = VALID; // a priority tag: VPP clears MATCH_1_TAG
    }
    let (otpid, ovid) = tags.first().copied().unwrap_or((0, 0));
    let ivid = tags.get(1).map_or(0, |t| t.1);
    let dot1ad = otpid == AD;
    let find = |pred: &dyn Fn(&Encap) -> Option<u8>| {
        encaps
            .iter()
            .enumerate()
            .find_map(|(i, e)| pred(e).filter(|fl| fl & frame == frame).map(|_| i))
    };
    let table = |tpid: &vecswitch_switch::vlan::Tpid| {
        (*tpid == vecswitch_switch::vlan::Tpid::Dot1ad) == dot1ad && !tags.is_empty()
    };
    use vecswitch_switch::vlan::Inner;
    let order: [Slot<'_>; 4] = [
        &|e| match e {
            // Non-exact also takes 3 tags, which the parser drops before classification.
            Encap::Tagged {
                tpid,
                outer,
                inner: Inner::Vid(i),
                ..
            } if table(tpid) && *outer == ovid && *i == ivid => Some(VALID | T2),
            _ => None,
        },
        &|e| match e {
            Encap::Tagged {
                tpid,
                outer,
                inner: Inner::Any,
                ..
            } if table(tpid) && *outer == ovid => Some(VALID | T2),
            _ => None,
        },
        &|e| match e {
            Encap::Tagged {
                tpid,
                outer,
                inner: Inner::None,
                exact,
            } if table(tpid) && *outer == ovid => Some(VALID | T1 | if *exact { 0 } else { T2 }),
            _ => None,
        },
        &|e| matches!(e, Encap::Default).then_some(VALID | T1 | T2),
    ];
    for pred in order {
        if let Some(i) = find(pred) {
            return Some(Some(i));
        }
    }
    match find(&|e| matches!(e, Encap::Untagged).then_some(VALID | T0)) {
        Some(i) => return Some(Some(i)),
        None if encaps.iter().any(|e| matches!(e, Encap::Untagged)) => return None,
        None => {}
    }
    let main = VALID | T0 | if main_l2 { T1 | T2 } else { 0 };
    (main & frame == frame).then_some(None)
}

fn arb_encap() -> impl Strategy<Value = String> {
    let tpid = prop_oneof![Just("dot1q"), Just("dot1ad")];
    let inner = prop_oneof![
        Just(String::new()),
        Just(" inner-dot1q any".to_string()),
        (1u16..=2).prop_map(|v| format!(" inner-dot1q {v}")),
    ];
    prop_oneof![
        4 => (tpid, 1u16..=3, inner, any::<bool>()).prop_map(|(t, o, i, x)| {
            format!("{t} {o}{i}{}", if x { " exact-match" } else { "" })
        }),
        1 => Just("default".to_string()),
        1 => Just("untagged".to_string()),
    ]
}

fn arb_tags() -> impl Strategy<Value = Vec<(u16, u16)>> {
    let tag = (prop_oneof![Just(Q), Just(AD), Just(0x9100u16)], 0u16..=3);
    prop::collection::vec(tag, 0..=2)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn classification_agrees_with_the_reference_model(
        encaps in prop::collection::vec(arb_encap(), 0..8),
        main_l2 in any::<bool>(),
        frames in prop::collection::vec(arb_tags(), 1..24),
    ) {
        // p0 is the parent; sub-interface k is cross-connected to port p(k+1), the main
        // interface (when in L2) to the last port.
        let n = encaps.len();
        let (mut sw, mut peers) = with_ports(n + 2);
        let mut added: Vec<Encap> = Vec::new();
        let mut port_of: Vec<usize> = Vec::new();
        for (k, e) in encaps.iter().enumerate() {
            let cfg = sub("p0", k as u32 + 1, e, "disable");
            // Duplicates are refused; the model gets only what was added.
            if sw.add_subinterface(&cfg).is_ok() {
                sw.add_xconnect(&cfg.name(), &format!("p{}", k + 1)).unwrap();
                added.push(cfg.encap);
                port_of.push(k + 1);
            }
        }
        if main_l2 {
            sw.add_xconnect("p0", &format!("p{}", n + 1)).unwrap();
        }
        for tags in &frames {
            let frame = f(tags);
            let out = only_out(&through(&mut sw, &mut peers, 0, &frame));
            let want = match model(&added, main_l2, tags) {
                Some(Some(i)) => Some((port_of[i], frame.clone())),
                Some(None) if main_l2 => Some((n + 1, frame.clone())),
                _ => None, // unknown-vlan, or the main interface without a service
            };
            prop_assert_eq!(out, want, "tags {:x?} with sub-interfaces {:?}", tags, added);
        }
    }
}

#[test]
fn encap_and_rewrite_config_round_trip_through_toml_names() {
    let cfg: SubInterfaceConfig = serde_json::from_str(
        r#"{"parent":"uni0","id":100,"encap":"dot1ad 100 inner-dot1q any","tag-rewrite":"pop 1"}"#,
    )
    .unwrap();
    assert_eq!(cfg.name(), "uni0.100");
    assert_eq!(cfg.tag_rewrite, TagRewrite::Pop(1));
    let back = serde_json::to_string(&cfg).unwrap();
    assert!(back.contains(r#""tag-rewrite":"pop 1""#), "{back}");
    let bad = serde_json::from_str::<SubInterfaceConfig>(
        r#"{"parent":"uni0","id":1,"encap":"dot1q 5000"}"#,
    )
    .unwrap_err()
    .to_string();
    assert!(
        bad.contains("invalid encap \"dot1q 5000\": accepted"),
        "{bad}"
    );
}

/// Frame bytes biased toward tag stacks: addresses, then up to three (TPID, TCI) pairs drawn
/// from the TPIDs and a few VIDs, then a type and a short payload — cut anywhere.
fn arb_frame() -> impl Strategy<Value = Vec<u8>> {
    let tag = (prop_oneof![Just(Q), Just(AD), Just(0x9100u16)], 0u16..=4);
    (prop::collection::vec(tag, 0..=3), 0usize..40, any::<u16>()).prop_map(|(tags, cut, ty)| {
        let mut f = tagged(mac(1), mac(2), &tags);
        let n = 12 + 4 * tags.len();
        f[n..n + 2].copy_from_slice(&ty.max(0x0600).to_be_bytes());
        let keep = f.len().saturating_sub(cut);
        f.truncate(keep);
        f
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Whatever arrives, every frame is either sent or counted as a drop, and every buffer comes
    /// back: rewrites in both directions, a bridge with flooding and a cross-connect.
    #[test]
    fn every_frame_is_sent_or_counted_and_no_buffer_leaks(
        frames in prop::collection::vec(arb_frame(), 1..64),
        from_bridge_side in any::<bool>(),
    ) {
        let (mut sw, mut peers) = with_ports(3);
        sw.add_subinterface(&sub("p0", 1, "dot1q 1", "pop 1")).unwrap();
        sw.add_subinterface(&sub("p0", 2, "dot1ad 2 inner-dot1q 3", "translate 2-1 dot1q 4")).unwrap();
        sw.add_subinterface(&sub("p0", 3, "dot1ad 2 inner-dot1q any", "push dot1q 5")).unwrap();
        sw.add_subinterface(&sub("p0", 4, "default", "push dot1ad 6 7")).unwrap();
        sw.add_bridge("b", Default::default()).unwrap();
        for m in ["p0.1", "p0.2", "p1"] {
            sw.add_bridge_member("b", m).unwrap();
        }
        sw.add_xconnect("p0.3", "p2").unwrap();
        sw.add_xconnect("p2", "p0.4").unwrap();
        sw.add_xconnect("p0.4", "p2").unwrap();
        let mut pool = tpool();
        let from = if from_bridge_side { 1 } else { 0 };
        send(&mut peers[from], &mut pool, &frames);
        run(&mut sw);
        let out: usize = peers.iter_mut().map(|p| drain(p, &mut pool).len()).sum();
        let dropped: u64 = sw.show_errors().iter().filter(|e| e.node != "l2-learn").map(|e| e.count).sum();
        let rx = sw.show_ports()[from].stats.rx_packets;
        prop_assert_eq!(rx, frames.len() as u64);
        // Flooding makes copies: each copy is sent or dropped too, so out + dropped >= in.
        prop_assert!(out as u64 + dropped >= rx, "out {} + dropped {} < in {}", out, dropped, rx);
        prop_assert_eq!(sw.show_buffers().in_use, 0);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Without flooding the books balance exactly: frames in = frames out + frames dropped (each
    /// under a named reason).
    #[test]
    fn cross_connected_sub_interfaces_account_for_every_frame_exactly(
        frames in prop::collection::vec(arb_frame(), 1..64),
        main_l2 in any::<bool>(),
    ) {
        let (mut sw, mut peers) = with_ports(3);
        sw.add_subinterface(&sub("p0", 1, "dot1q 1 exact-match", "pop 1")).unwrap();
        sw.add_subinterface(&sub("p0", 2, "dot1ad 2 inner-dot1q 3", "translate 2-2 dot1q 4 5")).unwrap();
        sw.add_subinterface(&sub("p0", 3, "dot1q 2 inner-dot1q any", "translate 1-2 dot1ad 8 9")).unwrap();
        for s in ["p0.1", "p0.2", "p0.3"] {
            sw.add_xconnect(s, "p1").unwrap();
        }
        if main_l2 {
            sw.add_xconnect("p0", "p2").unwrap();
        }
        let mut pool = tpool();
        send(&mut peers[0], &mut pool, &frames);
        run(&mut sw);
        let out: u64 = peers.iter_mut().map(|p| drain(p, &mut pool).len() as u64).sum();
        let dropped: u64 = sw.show_errors().iter().map(|e| e.count).sum();
        prop_assert_eq!(out + dropped, frames.len() as u64, "errors: {:?}", sw.show_errors());
        prop_assert_eq!(sw.show_buffers().in_use, 0);
    }
}

#[test]
fn a_port_that_takes_a_deleted_parents_index_is_not_its_parent() {
    let (mut sw, mut peers) = with_ports(2);
    sw.add_subinterface(&sub("p0", 1, "dot1q 10", "pop 1"))
        .unwrap();
    sw.add_xconnect("p1", "p0.1").unwrap();
    // `delete_port` does not know sub-interfaces: p0 goes, p0.1 stays without a parent.
    drop(sw.delete_port("p0").unwrap());
    let (port, peer) = wire("p9");
    assert_eq!(sw.add_port("p9", port).unwrap(), 0, "p9 takes p0's index");
    peers[0] = peer;
    sw.add_xconnect("p9", "p1").unwrap();
    // p9's tagged frames are its own, untouched (no classification against p0's table) ...
    let tagged10 = f(&[(Q, 10)]);
    assert_eq!(
        only_out(&through(&mut sw, &mut peers, 0, &tagged10)),
        Some((1, tagged10))
    );
    // ... and what goes to the orphan is dropped by name, not sent out of p9.
    assert_eq!(only_out(&through(&mut sw, &mut peers, 1, &f(&[]))), None);
    assert_eq!(error_count(&sw, "vlan-output", "no-parent"), 1);
    sw.delete_xconnect("p1").unwrap();
    sw.delete_subinterface("p0.1").unwrap();
    assert!(sw.show_subinterfaces().is_empty());
}

/// Admin state: a sub-interface down drops its own frames; a parent down drops its
/// sub-interfaces' frames too (checked before classification, as VPP's hardware interface
/// state gates its sub-interfaces); both counted as `ethernet-input admin-down`.
#[test]
fn a_parent_down_takes_its_sub_interfaces_frames_with_it() {
    let (mut sw, mut peers) = with_ports(3);
    sw.add_subinterface(&sub("p0", 10, "dot1q 10", "pop 1"))
        .unwrap();
    sw.add_subinterface(&sub("p0", 20, "dot1q 20", "pop 1"))
        .unwrap();
    sw.add_xconnect("p0.10", "p1").unwrap();
    sw.add_xconnect("p0.20", "p2").unwrap();
    let (ten, twenty) = (f(&[(Q, 10)]), f(&[(Q, 20)]));
    assert_eq!(
        only_out(&through(&mut sw, &mut peers, 0, &ten)),
        Some((1, f(&[])))
    );
    sw.set_subinterface_admin("p0.10", false).unwrap();
    assert_eq!(only_out(&through(&mut sw, &mut peers, 0, &ten)), None);
    assert_eq!(error_count(&sw, "ethernet-input", "admin-down"), 1);
    assert_eq!(
        only_out(&through(&mut sw, &mut peers, 0, &twenty)),
        Some((2, f(&[])))
    );
    sw.set_port_admin("p0", false).unwrap();
    assert_eq!(only_out(&through(&mut sw, &mut peers, 0, &twenty)), None);
    assert_eq!(error_count(&sw, "ethernet-input", "admin-down"), 2);
    sw.set_port_admin("p0", true).unwrap();
    sw.set_subinterface_admin("p0.10", true).unwrap();
    assert_eq!(
        only_out(&through(&mut sw, &mut peers, 0, &ten)),
        Some((1, f(&[])))
    );
    assert_eq!(
        only_out(&through(&mut sw, &mut peers, 0, &twenty)),
        Some((2, f(&[])))
    );
}
