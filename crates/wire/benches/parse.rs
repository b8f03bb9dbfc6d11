//! Per-packet cost of the wire primitives on the fast path: `L2Header::parse` (untagged, Q-in-Q),
//! IPv4 header check + checksum verify, the Internet checksum over 64/1500 bytes, and RFC 1624
//! incremental updates (TTL decrement, NAT address rewrite).
//!
//! `cargo bench -p vecswitch-wire --bench parse`; criterion reports time per packet.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use std::time::Duration;
use vecswitch_wire::*;

fn frame(tags: usize) -> Vec<u8> {
    let ip = Ipv4Repr::new(
        Ipv4Addr::new(10, 0, 0, 1),
        Ipv4Addr::new(10, 0, 0, 2),
        IpProtocol::UDP,
        26,
    );
    let tag = |vid| {
        Some(L2Tag {
            tpid: EtherType::VLAN,
            pcp: 0,
            dei: false,
            vid,
        })
    };
    let l2 = L2Header {
        dst_addr: EthernetAddress([2, 0, 0, 0, 0, 2]),
        src_addr: EthernetAddress([2, 0, 0, 0, 0, 1]),
        outer: if tags > 0 { tag(10) } else { None },
        inner: if tags > 1 { tag(20) } else { None },
        ethertype: EtherType::IPV4,
        l3_offset: 14 + 4 * tags,
    };
    let mut f = vec![0u8; l2.header_len() + ip.buffer_len()];
    l2.emit(&mut f).unwrap();
    ip.emit(&mut Ipv4Packet::new_unchecked(&mut f[l2.header_len()..]));
    f
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("wire");
    g.sample_size(30)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    g.throughput(Throughput::Elements(1));

    let untagged = frame(0);
    let qinq = frame(2);
    g.bench_function("l2-parse-untagged", |b| {
        b.iter(|| L2Header::parse(black_box(&untagged)).unwrap())
    });
    g.bench_function("l2-parse-qinq", |b| {
        b.iter(|| L2Header::parse(black_box(&qinq)).unwrap())
    });
    g.bench_function("ipv4-parse+verify", |b| {
        b.iter(|| {
            Ipv4Repr::parse(&Ipv4Packet::new_checked(black_box(&untagged[14..])).unwrap()).unwrap()
        })
    });

    let small = vec![0xa5u8; 64];
    let big = vec![0xa5u8; 1500];
    g.bench_function("checksum-64B", |b| {
        b.iter(|| checksum::checksum(black_box(&small)))
    });
    g.bench_function("checksum-1500B", |b| {
        b.iter(|| checksum::checksum(black_box(&big)))
    });

    let mut hdr = untagged[14..34].to_vec();
    g.bench_function("ipv4-ttl-decrement-incremental", |b| {
        b.iter(|| {
            let mut p = Ipv4Packet::new_unchecked(black_box(&mut hdr[..]));
            p.set_ttl(64);
            p.decrement_ttl()
        })
    });
    g.bench_function("ipv4-ttl-decrement-full", |b| {
        b.iter(|| {
            let mut p = Ipv4Packet::new_unchecked(black_box(&mut hdr[..]));
            p.set_ttl(63);
            p.fill_checksum();
        })
    });
    g.bench_function("ipv4-nat-src-incremental", |b| {
        b.iter(|| {
            let mut p = Ipv4Packet::new_unchecked(black_box(&mut hdr[..]));
            p.set_src_addr_incremental(Ipv4Addr::new(203, 0, 113, 1));
            p.set_src_addr_incremental(Ipv4Addr::new(10, 0, 0, 1))
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
