//! The poll loop's busy time (`show runtime` `loop.busy_ns`, the lab's device-cost input): only
//! iterations that received something count, port I/O included, and never more than the time
//! that passed.

mod common;

use std::time::Instant;

use common::*;
use vecswitch_buffer::Pool;
use vecswitch_switch::{Switch, SwitchConfig};

#[test]
fn busy_time_counts_only_polls_that_received() {
    let mut sw = Switch::new(SwitchConfig {
        buffers: 2048,
        mac_table_entries: 1024,
        ..Default::default()
    });
    let (p0, mut peer0) = wire("p0");
    let (p1, _peer1) = wire("p1");
    sw.add_port("p0", p0).unwrap();
    sw.add_port("p1", p1).unwrap();
    for _ in 0..100 {
        assert_eq!(sw.poll_once(), 0);
    }
    let idle = sw.show_runtime().loop_stats;
    assert_eq!(idle.busy_ns, 0, "{idle:?}");
    assert_eq!(idle.idle_polls, 100);

    let mut tp = Pool::new(1024);
    let frames: Vec<Vec<u8>> = (0..200).map(|i| frame(BCAST, mac(i), 60)).collect();
    send(&mut peer0, &mut tp, &frames);
    let t0 = Instant::now();
    let mut got = 0;
    while got < frames.len() {
        let n = sw.poll_once();
        assert!(n > 0, "frames queued on p0 but the poll received none");
        got += n;
    }
    let wall = t0.elapsed().as_nanos() as u64;
    let busy = sw.show_runtime().loop_stats;
    assert!(busy.busy_ns > 0, "{busy:?}");
    assert!(
        busy.busy_ns <= wall,
        "busy {} ns > wall {wall} ns",
        busy.busy_ns
    );
    assert_eq!(busy.idle_polls, 100);
}
