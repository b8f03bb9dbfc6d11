//! Per-packet cost of IPv4 forwarding in the graph alone (`ip4-input` → `ip4-lookup` →
//! `ip4-rewrite` → `interface-output`), with `loopback::Replay` ports as `benches/l2.rs`, beside
//! the L2 cross-connect measured in the same run: 1 route, and 2k, 20k, 200k, 1M /24 routes with
//! the destinations spread over them.
//!
//! One iteration is one `Switch::poll_once` receiving a full vector of 256 packets; criterion
//! reports time per packet through `Throughput::Elements`.
//!
//! `cargo bench -p vecswitch-switch --bench ip4`

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::time::Duration;
use vecswitch_switch::ip::testing::router_switch;
use vecswitch_switch::testing::xconnect_switch;
use vecswitch_switch::Switch;

fn poll(sw: &mut Switch) -> usize {
    let n = sw.poll_once();
    assert_eq!(n, 256, "the replay source fills every vector");
    n
}

fn ip4(c: &mut Criterion) {
    let mut g = c.benchmark_group("ip4");
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    g.throughput(Throughput::Elements(256));

    let mut sw = xconnect_switch(None);
    g.bench_function("l2-xconnect", |b| b.iter(|| poll(&mut sw)));
    drop(sw);

    for routes in [1u32, 2_000, 20_000, 200_000, 1_000_000] {
        let mut sw = router_switch(routes, None);
        g.bench_with_input(BenchmarkId::new("forward", routes), &routes, |b, _| {
            b.iter(|| poll(&mut sw))
        });
        // Every frame was routed: nothing dropped, nothing held.
        let e = sw.show_errors();
        assert!(e.is_empty(), "every frame forwarded: {e:?}");
        assert_eq!(sw.show_buffers().in_use, 0);
    }
    g.finish();
}

criterion_group!(benches, ip4);
criterion_main!(benches);
