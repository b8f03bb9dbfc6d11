//! The fault-injection port in front of the switch (issue 14 item 3, last point): a receive port
//! that drops, corrupts, duplicates and reorders frames (`ports::fault::Faulty`, seeded) feeds a
//! cross-connect. Nothing crashes, and every frame is accounted for exactly: what the peer sent,
//! less what the injector dropped, plus what it duplicated, is what left by the other port plus
//! what the graph dropped by a named reason (corrupted headers: `ethernet-input`'s hygiene and
//! parse reasons) plus the frames the injector still holds back for reordering.

mod common;

use common::*;
use vecswitch_buffer::Pool;
use vecswitch_ports::fault::{FaultConfig, FaultRates, Faulty};
use vecswitch_ports::loopback::pair;
use vecswitch_switch::{Switch, SwitchConfig};

/// Frame `seq`: unicast, from a fixed station, the sequence number in the first payload bytes.
fn numbered(seq: u32) -> Vec<u8> {
    let mut f = frame(mac(2), mac(1), 64 + (seq % 200) as usize);
    f[14..18].copy_from_slice(&seq.to_be_bytes());
    f
}

#[test]
fn loss_corruption_duplication_and_reordering_are_counted_not_crashing() {
    let mut sw = Switch::new(SwitchConfig {
        buffers: 4096,
        ..Default::default()
    });
    let (a, mut pa) = pair("p0", "p0-peer");
    let rates = FaultRates {
        drop: 0.05,
        corrupt: 0.3,
        duplicate: 0.05,
        reorder: 0.1,
    };
    let faulty = Faulty::new(
        a,
        FaultConfig {
            seed: 14,
            rx: rates,
            tx: FaultRates::default(),
        },
    )
    .unwrap();
    sw.add_port("p0", Box::new(faulty)).unwrap();
    let (b, mut pb) = wire("p1");
    sw.add_port("p1", b).unwrap();
    sw.add_xconnect("p0", "p1").unwrap();

    let mut tp = Pool::new(4096);
    let n = 3000u32;
    let sent: Vec<Vec<u8>> = (0..n).map(numbered).collect();
    let mut out = Vec::new();
    // Bursts cycle through BURSTS (every loop path).
    let (mut at, mut k) = (0, 0);
    while at < sent.len() {
        let end = (at + BURSTS[k % BURSTS.len()]).min(sent.len());
        send(&mut pa, &mut tp, &sent[at..end]);
        while sw.poll_once() > 0 {}
        out.extend(drain(&mut pb, &mut tp));
        (at, k) = (end, k + 1);
    }

    let count = |node: &str, reason: &str| {
        sw.show_errors()
            .iter()
            .find(|e| e.node == node && e.reason == reason)
            .map_or(0, |e| e.count)
    };
    let dropped = count("port p0", "fault-rx-dropped");
    let corrupted = count("port p0", "fault-rx-corrupted");
    let duplicated = count("port p0", "fault-rx-duplicated");
    let reordered = count("port p0", "fault-rx-reordered");
    assert!(dropped > 0 && corrupted > 0 && duplicated > 0 && reordered > 0);
    // Drops in the graph, all named (any node, any reason that is not a port's own counter).
    let graph_drops: u64 = sw
        .show_errors()
        .iter()
        .filter(|e| !e.node.starts_with("port "))
        .map(|e| e.count)
        .sum();
    let held = sw.show_buffers().in_use as u64;
    assert_eq!(
        out.len() as u64 + graph_drops + held,
        n as u64 - dropped + duplicated,
        "out {} graph drops {graph_drops} held {held}; injector: dropped {dropped} duplicated {duplicated}; {:?}",
        out.len(),
        sw.show_errors()
    );
    assert!(
        held <= 2,
        "at most one frame (and its duplicate) held back: {held}"
    );
    // Reordering is visible at the output: some frame comes after a higher-numbered one.
    let seqs: Vec<u32> = out
        .iter()
        .map(|f| u32::from_be_bytes([f[14], f[15], f[16], f[17]]))
        .collect();
    assert!(seqs.windows(2).any(|w| w[1] < w[0]), "no reordering seen");
    // A corrupted frame that still looked valid was forwarded as it came (the switch does not
    // check payloads): never more of them than the injector corrupted, counting a corrupted
    // frame's duplicate (corruption is decided before duplication) twice.
    let damaged = out
        .iter()
        .filter(|f| {
            let seq = u32::from_be_bytes([f[14], f[15], f[16], f[17]]);
            sent.get(seq as usize).is_none_or(|orig| *orig != **f)
        })
        .count() as u64;
    assert!(
        damaged <= corrupted + duplicated,
        "{damaged} damaged > {corrupted} corrupted + {duplicated} duplicated"
    );
    assert!(damaged > 0, "some corrupted frames got through");
    assert_eq!(tp.in_use(), 0);
}
