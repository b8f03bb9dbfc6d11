//! Helpers shared by the memif integration tests: a temp directory that removes itself (from
//! crates/testsupport), driving ports until they connect, frames that carry their own sequence
//! number, and exact-count transfer.
#![allow(dead_code)]

use std::time::{Duration, Instant};
use vecswitch_buffer::{Pool, DATA_SIZE, HEADROOM};
use vecswitch_ports::memif::MemifPort;
use vecswitch_ports::{LinkState, Port};

pub use vecswitch_testsupport::TempDir;

/// Polls the control side of `ports` until all are up; panics with their descriptions after 10 s
/// (a hang guard, not a performance assertion).
pub fn connect_all(ports: &mut [&mut MemifPort]) {
    let t0 = Instant::now();
    while ports.iter().any(|p| p.link() != LinkState::Up) {
        for p in ports.iter_mut() {
            p.poll_control();
        }
        if t0.elapsed() > Duration::from_secs(10) {
            let d: Vec<String> = ports.iter().map(|p| p.describe()).collect();
            panic!("memif ports did not connect: {d:#?}");
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Builds a frame of `len` bytes: bytes 0..8 the sequence number, then a pattern derived from it.
pub fn frame_bytes(seq: u64, len: usize) -> Vec<u8> {
    let mut v: Vec<u8> = (0..len)
        .map(|i| (i as u64).wrapping_mul(7).wrapping_add(seq) as u8)
        .collect();
    let n = len.min(8);
    v[..n].copy_from_slice(&seq.to_le_bytes()[..n]);
    v
}

/// Allocates a (chained if needed) Pool packet holding `bytes`.
pub fn make_packet(pool: &mut Pool, bytes: &[u8]) -> u32 {
    let h = pool.alloc().expect("pool has room");
    let first = bytes.len().min(DATA_SIZE);
    assert!(pool.write_packet(h, &bytes[..first]));
    for chunk in bytes[first..].chunks(DATA_SIZE) {
        assert!(pool.append_segment(h, chunk), "pool has room for segments");
    }
    h
}

/// Frame length for sequence number `i`: cycles through edge cases around buffer boundaries and up
/// to 9000 bytes (jumbo, chained).
pub fn size_for(i: u64) -> usize {
    const SIZES: [usize; 14] = [
        60, 64, 127, 1500, 2047, 2048, 2049, 4095, 4096, 4097, 6000, 8999, 9000, 61,
    ];
    SIZES[(i % SIZES.len() as u64) as usize]
}

/// Sends `n` frames from `a` to `b`, receiving as it goes, and checks every frame arrives once, in
/// order and intact. Returns the bytes moved. Fails (not hangs) if progress stops for 10 s.
pub fn transfer(a: &mut MemifPort, b: &mut MemifPort, pool: &mut Pool, n: u64) -> u64 {
    let mut next_tx = 0u64;
    let mut next_rx = 0u64;
    let mut bytes = 0u64;
    let mut rx = Vec::new();
    let mut got = Vec::new();
    let mut last_progress = Instant::now();
    while next_rx < n {
        let mut burst = Vec::new();
        while next_tx + (burst.len() as u64) < n && burst.len() < 32 {
            let seq = next_tx + burst.len() as u64;
            burst.push(make_packet(pool, &frame_bytes(seq, size_for(seq))));
        }
        let sent = a.tx_burst(pool, &burst);
        next_tx += sent as u64;
        pool.free_bulk(&burst);
        rx.clear();
        let r = b.rx_burst(pool, &mut rx, 256);
        for &h in &rx {
            pool.copy_out(h, &mut got);
            let want = frame_bytes(next_rx, size_for(next_rx));
            assert_eq!(got.len(), want.len(), "frame {next_rx} length");
            assert!(got == want, "frame {next_rx} content differs");
            assert_eq!(pool.header(h).data_offset as usize, HEADROOM);
            bytes += got.len() as u64;
            next_rx += 1;
        }
        pool.free_bulk(&rx);
        if sent > 0 || r > 0 {
            last_progress = Instant::now();
        } else {
            assert!(
                last_progress.elapsed() < Duration::from_secs(10),
                "transfer stalled at {next_rx}/{n}"
            );
            a.poll_control();
            b.poll_control();
        }
    }
    assert_eq!(next_tx, n);
    bytes
}
