//! Per-packet cost of the L2 graph alone, with `loopback::Replay` ports (one memcpy per received
//! packet, nothing per sent one): cross-connect, and a bridge whose MAC table holds 2, 2k, 20k,
//! 200k and 1M entries, with traffic between stations spread over the whole table.
//!
//! One iteration is one `Switch::poll_once` receiving a full vector of 256 packets; criterion
//! reports time per packet through `Throughput::Elements`.
//!
//! Group `vlan`: the untagged cross-connect beside tagged ones (dot1q pop 1, dot1q push 1, dot1ad
//! translate 2-2; `vlan::testing`).
//!
//! `cargo bench -p vecswitch-switch --bench l2` (`-- vlan` for that group alone)

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::time::Duration;
use vecswitch_switch::testing::{bridge_switch, xconnect_switch};
use vecswitch_switch::vlan::testing::{vlan_switch, Case};
use vecswitch_switch::Switch;

fn poll(sw: &mut Switch) -> usize {
    let n = sw.poll_once();
    assert_eq!(n, 256, "the replay source fills every vector");
    n
}

fn l2(c: &mut Criterion) {
    let mut g = c.benchmark_group("l2");
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    g.throughput(Throughput::Elements(256));

    let mut sw = xconnect_switch(None);
    g.bench_function("xconnect", |b| b.iter(|| poll(&mut sw)));
    assert_eq!(sw.show_buffers().in_use, 0);
    drop(sw);

    for entries in [2u32, 2_000, 20_000, 200_000, 1_000_000] {
        let mut sw = bridge_switch(entries, None);
        assert_eq!(sw.show_bridges()[0].learned, entries, "table pre-populated");
        g.bench_with_input(BenchmarkId::new("bridge", entries), &entries, |b, _| {
            b.iter(|| poll(&mut sw))
        });
        // Every frame was a known-unicast hit: nothing flooded, nothing dropped.
        let e = sw.show_errors();
        assert!(e.is_empty(), "every frame a known-unicast hit: {e:?}");
    }
    g.finish();
}

/// Tagged cross-connects (VLAN sub-interfaces, tag rewrite) beside the untagged one, same shape.
fn vlan(c: &mut Criterion) {
    let mut g = c.benchmark_group("vlan");
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    g.throughput(Throughput::Elements(256));
    let mut sw = xconnect_switch(None);
    g.bench_function("untagged-xconnect", |b| b.iter(|| poll(&mut sw)));
    for (case, name) in Case::ALL {
        let mut sw = vlan_switch(case, None);
        g.bench_function(name, |b| b.iter(|| poll(&mut sw)));
        let e = sw.show_errors();
        assert!(e.is_empty(), "{name}: every frame forwarded: {e:?}");
    }
    g.finish();
}

criterion_group!(benches, l2, vlan);
criterion_main!(benches);
