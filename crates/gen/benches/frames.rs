//! Per-frame cost of the generator's hot paths: building a frame (template copy, flow fields,
//! signature, incremental checksums) and receiving one (signature parse + analysis).
//!
//! `cargo bench -p vecswitch-gen --bench frames`; throughput is reported in frames/s.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use vecswitch_gen::rx::find_signature;
use vecswitch_gen::{
    Field, FieldMode, FieldRange, SizeSpec, StreamAnalyzer, StreamBuilder, StreamSpec,
};

const BATCH: u64 = 256;

fn stream(size: SizeSpec, flows: u32) -> StreamBuilder {
    let mut s = StreamSpec::ipv4(0, 1);
    s.size = size;
    s.flows = flows;
    if flows > 1 {
        s.ranges = vec![
            FieldRange {
                field: Field::SrcIp,
                count: flows,
                mode: FieldMode::Random { seed: 1 },
            },
            FieldRange {
                field: Field::DstIp,
                count: flows,
                mode: FieldMode::Increment,
            },
        ];
    }
    StreamBuilder::new(0, &s).unwrap()
}

fn build(c: &mut Criterion) {
    let mut g = c.benchmark_group("build");
    g.throughput(Throughput::Elements(BATCH));
    for (name, b) in [
        ("64B-1flow", stream(SizeSpec::Fixed(64), 1)),
        ("64B-1Mflows", stream(SizeSpec::Fixed(64), 1_000_000)),
        ("imix-1flow", stream(SizeSpec::imix(), 1)),
        ("imix-1Mflows", stream(SizeSpec::imix(), 1_000_000)),
    ] {
        let mut buf = vec![0u8; 9000];
        let mut n = 0u64;
        g.bench_function(name, |bench| {
            bench.iter(|| {
                for _ in 0..BATCH {
                    let len = b.wire_len(n);
                    b.build(n, n * 67, false, &mut buf[..len]);
                    n += 1;
                }
                black_box(&buf);
            })
        });
    }
    g.finish();
}

fn receive(c: &mut Criterion) {
    let b = stream(SizeSpec::Fixed(64), 1);
    let frames: Vec<Vec<u8>> = (0..BATCH)
        .map(|n| {
            let mut v = vec![0u8; b.wire_len(n)];
            b.build(n, 1000 + n, false, &mut v);
            v
        })
        .collect();
    let mut g = c.benchmark_group("receive");
    g.throughput(Throughput::Elements(BATCH));
    let mut an = StreamAnalyzer::new();
    let mut base = 0u64;
    g.bench_function("64B-parse+analyze", |bench| {
        bench.iter(|| {
            for (i, f) in frames.iter().enumerate() {
                let sig = find_signature(f).unwrap();
                an.record(
                    base + i as u64,
                    sig.tx_ns,
                    sig.tx_ns + 5000,
                    f.len(),
                    u64::MAX,
                );
            }
            base += BATCH;
        })
    });
    g.finish();
}

criterion_group!(benches, build, receive);
criterion_main!(benches);
