//! Copy-mode cost of the memif data path, in one process: our client sends a burst of 32 frames
//! into the shared ring (`tx_burst`: copy out of the Pool, descriptors, head store) and our server
//! receives them (`rx_burst`: descriptor checks, Pool allocation, copy in, tail store), at 60, 1500
//! and 9000 bytes (the last chained over 5 descriptors and 5 Pool buffers).
//!
//! `cargo bench -p vecswitch-ports --bench memif`; throughput is reported in frames/s. Both ends
//! run on the same core here, so a two-process figure (testpmd peer) is a different measurement.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::time::{Duration, Instant};
use vecswitch_buffer::{Pool, DATA_SIZE};
use vecswitch_ports::memif::{MemifConfig, MemifPort, Role};
use vecswitch_ports::{LinkState, Port};

const BURST: usize = 32;

fn pair(tag: &str) -> (MemifPort, MemifPort) {
    let sock = format!("@vecswitch-bench-{}-{tag}", std::process::id());
    let mut srv = MemifPort::new(MemifConfig::new("srv", &sock, 0, Role::Server)).unwrap();
    let mut cli = MemifPort::new(MemifConfig::new("cli", &sock, 0, Role::Client)).unwrap();
    let t0 = Instant::now();
    while srv.link() != LinkState::Up || cli.link() != LinkState::Up {
        srv.poll_control();
        cli.poll_control();
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "memif pair did not connect"
        );
        std::thread::sleep(Duration::from_micros(100));
    }
    (srv, cli)
}

fn packet(pool: &mut Pool, len: usize) -> u32 {
    let bytes = vec![0x5au8; len];
    let h = pool.alloc().unwrap();
    pool.write_packet(h, &bytes[..len.min(DATA_SIZE)]);
    for chunk in bytes[len.min(DATA_SIZE)..].chunks(DATA_SIZE) {
        pool.append_segment(h, chunk);
    }
    h
}

fn client_to_server(c: &mut Criterion) {
    let mut g = c.benchmark_group("memif-copy");
    g.throughput(Throughput::Elements(BURST as u64));
    for len in [60usize, 1500, 9000] {
        let (mut srv, mut cli) = pair(&len.to_string());
        let mut pool = Pool::new(4096);
        let pkts: Vec<u32> = (0..BURST).map(|_| packet(&mut pool, len)).collect();
        let mut out = Vec::with_capacity(256);
        g.bench_function(format!("{len}B-burst{BURST}"), |b| {
            b.iter(|| {
                let sent = cli.tx_burst(&mut pool, &pkts);
                out.clear();
                let got = srv.rx_burst(&mut pool, &mut out, 256);
                pool.free_bulk(&out);
                assert_eq!((sent, got), (BURST, BURST));
            })
        });
        pool.free_bulk(&pkts);
    }
    g.finish();
}

criterion_group!(benches, client_to_server);
criterion_main!(benches);
