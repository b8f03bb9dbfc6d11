//! The benchmark and example setups do what they claim, and arbitrary bytes through the switch
//! (the fuzz target's harness) never panic and never leak a buffer.

use proptest::prelude::*;
use vecswitch_switch::testing::{bridge_switch, fuzz_frames, xconnect_mtu_switch, xconnect_switch};
use vecswitch_switch::Switch;

fn run(sw: &mut Switch) -> u64 {
    let mut total = 0;
    loop {
        let n = sw.poll_once() as u64;
        if n == 0 {
            return total;
        }
        total += n;
    }
}

#[test]
fn bridge_setup_prepopulates_and_every_frame_hits() {
    for entries in [2u32, 2_000] {
        let mut sw = bridge_switch(entries, Some(1_000));
        assert_eq!(sw.show_bridges()[0].learned, entries);
        assert_eq!(run(&mut sw), 1_000);
        let sink = sw
            .show_ports()
            .into_iter()
            .find(|p| p.name == "sink")
            .unwrap();
        assert_eq!(sink.stats.tx_packets, 1_000);
        // No flooding, no drops, nothing new learned.
        assert!(sw.show_errors().is_empty(), "{:?}", sw.show_errors());
        assert_eq!(sw.show_buffers().in_use, 0);
    }
}

#[test]
fn xconnect_setup_forwards_exactly_k() {
    let mut sw = xconnect_switch(Some(300));
    assert_eq!(run(&mut sw), 300);
    assert_eq!(sw.port_stats("sink").unwrap().tx_packets, 300);
    assert_eq!(sw.show_buffers().in_use, 0);
}

#[test]
fn xconnect_mtu_setup_crosses_the_feature_and_forwards_exactly_k() {
    let mut sw = xconnect_mtu_switch(Some(300));
    assert_eq!(run(&mut sw), 300);
    assert_eq!(sw.port_stats("sink").unwrap().tx_packets, 300);
    let rt = sw.show_runtime();
    let mtu = rt.nodes.iter().find(|n| n.name == "mtu-check").unwrap();
    assert_eq!(mtu.packets, 300);
    assert!(sw.show_errors().is_empty(), "{:?}", sw.show_errors());
    assert_eq!(sw.show_buffers().in_use, 0);
}

#[test]
fn fuzz_harness_handles_edge_inputs() {
    fuzz_frames(&[]);
    fuzz_frames(&[0]);
    fuzz_frames(&[255; 300]);
    // A jumbo length (0x8f: +15 × 256) with fewer bytes than announced.
    fuzz_frames(&[200, 0x8f, 1, 2, 3]);
    // Many broadcast frames: flooding clones with a small pool.
    let mut v = Vec::new();
    for i in 0..600u32 {
        v.push(60);
        let mut f = vec![0xffu8; 6];
        f.extend_from_slice(&[0x02, 0, 0, 0, (i >> 8) as u8, i as u8]);
        f.extend_from_slice(&[0x08, 0x00]);
        f.resize(60, 0);
        v.extend_from_slice(&f);
    }
    fuzz_frames(&v);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]
    #[test]
    fn arbitrary_bytes_never_panic_or_leak(data in proptest::collection::vec(any::<u8>(), 0..4096)) {
        fuzz_frames(&data);
    }
}
