//! The run fast paths of the VLAN feature (`ethernet-input` classifying and rewriting the rest of
//! a run of frames with the same tag bytes as its first, the egress — `vlan-output` or its inline
//! form in `interface-output` — doing the same for the inverse rewrite and the egress filter) against the full per-frame path: the same frames sent
//! as one vector (runs of alike frames, so the fast paths take most of them) and one frame per
//! poll (every frame alone, so none of them takes a fast path) must give the same bytes out of
//! every port in the same order, the same drops under the same reasons and the same interface
//! counters. The frames vary within runs in what the fast paths must notice: the priority bits
//! (ignored by classification), the VID, the type after the tags (an 802.3 length is decided
//! frame by frame), a group or zero source MAC (input hygiene), and cuts that leave a frame
//! shorter than its tags or than the 20 bytes the tag comparison reads.
//!
//! The egress runs inline in `interface-output` here (nothing else on the output arcs); the same
//! frames with `mtu-check` on the parent p0, which puts the node `vlan-output` on every
//! sub-interface's arc, must give the same outcome too (the two egress paths agree).

mod common;

use common::*;
use proptest::prelude::*;
use vecswitch_buffer::Pool;
use vecswitch_ports::loopback::LoopbackPort;
use vecswitch_switch::vlan::SubInterfaceConfig;
use vecswitch_switch::{Switch, SwitchConfig};

const Q: u16 = 0x8100;
const AD: u16 = 0x88a8;

/// Ports p0 (the parent of every sub-interface) to p5.
const PORTS: usize = 6;

/// Sub-interfaces of p0: (id, encap, rewrite, cross-connected to port) — every rewrite kind.
const SUBS: [(u32, &str, &str, usize); 10] = [
    (1, "dot1q 1", "pop 1", 1),
    (2, "dot1ad 2 inner-dot1q 3", "translate 2-2 dot1ad 4 5", 2),
    (3, "dot1q 6", "push dot1ad 7", 3),
    (4, "dot1q 8 inner-dot1q any", "translate 1-2 dot1q 9 10", 1),
    (5, "default", "push dot1ad 11 12", 2),
    (6, "untagged", "disable", 3),
    (7, "dot1ad 20 inner-dot1q 21", "pop 2", 1),
    (8, "dot1q 30", "translate 1-1 dot1ad 31", 3),
    (9, "dot1ad 40 inner-dot1q 41", "translate 2-1 dot1q 42", 2),
    (10, "dot1q 50 exact-match", "disable", 1),
];

/// Which sub-interface each of p1..p5 sends to (egress: the inverse rewrite and the filter).
const BACK: [(usize, u32); 5] = [(1, 1), (2, 2), (3, 3), (4, 10), (5, 7)];

/// Tag stacks that hit each sub-interface, the main interface, `default` and the drops.
const STACKS: [&[(u16, u16)]; 16] = [
    &[],
    &[(Q, 1)],
    &[(Q, 1), (Q, 2)],
    &[(AD, 2), (Q, 3)],
    &[(AD, 4), (Q, 5)],
    &[(Q, 6)],
    &[(AD, 7), (Q, 6)],
    &[(Q, 8), (Q, 99)],
    &[(Q, 77)],
    &[(AD, 20), (Q, 21)],
    &[(Q, 30)],
    &[(AD, 40), (Q, 41)],
    &[(Q, 50)],
    &[(Q, 50), (Q, 1)],
    &[(0x9100, 1)],
    &[(Q, 1), (Q, 2), (Q, 3)],
];

/// The switch; with `node`, `mtu-check` on p0 (nothing is over its MTU) so that the egress runs
/// on the `vlan-output` node instead of inline.
fn switch(node: bool) -> (Switch, Vec<LoopbackPort>) {
    let mut sw = Switch::new(SwitchConfig {
        buffers: 4096,
        mac_table_entries: 1024,
        ..Default::default()
    });
    let peers = (0..PORTS)
        .map(|i| {
            let (port, peer) = wire(&format!("p{i}"));
            sw.add_port(&format!("p{i}"), port).unwrap();
            peer
        })
        .collect();
    for (id, encap, rewrite, to) in SUBS {
        sw.add_subinterface(&SubInterfaceConfig {
            parent: "p0".into(),
            id,
            encap: encap.parse().unwrap(),
            tag_rewrite: rewrite.parse().unwrap(),
        })
        .unwrap();
        sw.add_xconnect(&format!("p0.{id}"), &format!("p{to}"))
            .unwrap();
    }
    for (from, id) in BACK {
        sw.add_xconnect(&format!("p{from}"), &format!("p0.{id}"))
            .unwrap();
    }
    if node {
        sw.set_mtu_check("p0", true).unwrap();
    }
    let on_arc = sw
        .show_interfaces()
        .into_iter()
        .filter(|i| i.output_features.iter().any(|f| f == "vlan-output"))
        .count();
    assert_eq!(on_arc, if node { SUBS.len() } else { 0 });
    (sw, peers)
}

/// What a switch did: the frames out of each port in order, the drops, the sub-interfaces'
/// counters.
type Outcome = (Vec<Vec<Vec<u8>>>, Vec<(String, String, u64)>, Vec<[u64; 4]>);

/// Sends `frames` into port `from`, as one vector or one frame per poll, with the egress inline
/// or on the `vlan-output` node (`node`).
fn outcome(from: usize, frames: &[Vec<u8>], one_by_one: bool, node: bool) -> Outcome {
    let (mut sw, mut peers) = switch(node);
    let mut pool = Pool::new(4096);
    let mut out = vec![Vec::new(); PORTS];
    let batches: Vec<&[Vec<u8>]> = if one_by_one {
        frames.chunks(1).collect()
    } else {
        vec![frames]
    };
    for batch in batches {
        send(&mut peers[from], &mut pool, batch);
        while sw.poll_once() > 0 {}
        for (o, p) in out.iter_mut().zip(peers.iter_mut()) {
            o.extend(drain(p, &mut pool));
        }
    }
    assert_eq!(sw.show_buffers().in_use, 0, "every buffer back in the pool");
    let mut errors: Vec<(String, String, u64)> = sw
        .show_errors()
        .into_iter()
        .map(|e| (e.node.to_string(), e.reason.to_string(), e.count))
        .collect();
    errors.sort();
    let counters = sw
        .show_subinterfaces()
        .iter()
        .map(|s| [s.rx_packets, s.rx_bytes, s.tx_packets, s.tx_bytes])
        .collect();
    (out, errors, counters)
}

/// One frame: a stack, then what is changed in it (0 nothing, 1 priority bits, 2 a group
/// source, 3 a zero source, 4 an 802.3 length after the tags, 5 cut to the tags and type, 6 cut
/// inside the tags or to 19 bytes).
fn build(stack: usize, change: u8, pcp: u8) -> Vec<u8> {
    let tags = STACKS[stack];
    let mut f = tagged(mac(1), mac(2), tags);
    let after = 12 + 4 * tags.len();
    match change {
        1 if !tags.is_empty() => f[14] |= pcp << 5 | 0x10,
        2 => f[6] |= 1,
        3 => f[6..12].fill(0),
        4 => f[after..after + 2].copy_from_slice(&40u16.to_be_bytes()),
        5 => f.truncate(after + 2),
        6 => f.truncate(after.min(19)),
        _ => {}
    }
    f
}

/// Runs of alike frames: (stack, change, priority, run length).
fn arb_runs() -> impl Strategy<Value = Vec<(usize, u8, u8, usize)>> {
    prop::collection::vec(
        (
            0..STACKS.len(),
            prop_oneof![4 => Just(0u8), 3 => 1u8..=6],
            0u8..8,
            1usize..12,
        ),
        1..12,
    )
}

fn frames_of(runs: &[(usize, u8, u8, usize)]) -> Vec<Vec<u8>> {
    let mut frames = Vec::new();
    for &(stack, change, pcp, n) in runs {
        for i in 0..n {
            // Within a run, every third frame changes (as drawn), the others are the plain stack.
            let c = if i % 3 == 2 { change } else { 0 };
            frames.push(build(stack, c, pcp));
        }
    }
    frames.truncate(256);
    frames
}

/// A run of 64 alike frames through every sub-interface, both ways: exact bytes, and the fast
/// path gives what one frame alone gets.
#[test]
fn runs_of_alike_frames_get_exactly_what_a_lone_frame_gets() {
    for (stack, tags) in STACKS.iter().enumerate() {
        for from in 0..PORTS {
            let frames: Vec<Vec<u8>> = (0..64).map(|_| build(stack, 0, 0)).collect();
            let run = outcome(from, &frames, false, false);
            let alone = outcome(from, &frames, true, false);
            assert_eq!(run, alone, "stack {tags:?} from p{from}");
            let on_node = outcome(from, &frames, false, true);
            assert_eq!(
                run, on_node,
                "stack {tags:?} from p{from}, vlan-output node"
            );
            // Every frame alike has the same fate: all out of one port, or all dropped.
            let outs: Vec<usize> = run.0.iter().map(Vec::len).collect();
            let dropped: u64 = run.1.iter().map(|e| e.2).sum();
            assert!(
                outs.iter().all(|&n| n == 0 || n == 64)
                    && (dropped == 0 || dropped == 64)
                    && outs.iter().sum::<usize>() + dropped as usize == 64,
                "stack {tags:?} from p{from}: out {outs:?}, dropped {dropped}"
            );
            for o in run.0.iter().filter(|o| !o.is_empty()) {
                assert!(o.iter().all(|f| f == &o[0]), "alike frames, alike bytes");
            }
        }
    }
}

/// Byte-exact on the tag stacks at the limits, both ways, in a run: pop 2 of a two-tag frame cut
/// to its tags and type (22 bytes in, 14 out), and the push of two tags back onto a 14-byte frame.
#[test]
fn runs_of_the_smallest_frames_are_rewritten_exactly() {
    let bare = |tags: &[(u16, u16)]| {
        let f = tagged(mac(1), mac(2), tags);
        f[..12 + 4 * tags.len() + 2].to_vec()
    };
    let two = bare(&[(AD, 20), (Q, 21)]);
    let none = bare(&[]);
    for node in [false, true] {
        let (out, errors, _) = outcome(0, &vec![two.clone(); 8], false, node);
        assert_eq!(out[1], vec![none.clone(); 8], "p0.7 pops both tags");
        assert!(errors.is_empty(), "{errors:?}");
        let (out, errors, counters) = outcome(5, &vec![none.clone(); 8], false, node);
        assert_eq!(
            out[0],
            vec![two.clone(); 8],
            "p0.7 pushes both back (node: {node})"
        );
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(counters[6], [0, 0, 8, 8 * 22]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Mixed runs from any port: one vector gives what one frame per poll gives, and the
    /// inline egress what the `vlan-output` node gives.
    #[test]
    fn a_vector_gives_what_one_frame_per_poll_gives(runs in arb_runs(), from in 0..PORTS) {
        let frames = frames_of(&runs);
        let run = outcome(from, &frames, false, false);
        let alone = outcome(from, &frames, true, false);
        prop_assert_eq!(&run, &alone);
        let on_node = outcome(from, &frames, false, true);
        prop_assert_eq!(run, on_node);
    }
}
