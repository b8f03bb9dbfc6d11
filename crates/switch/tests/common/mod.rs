//! Frame builders and port helpers shared by the switch's integration tests.
#![allow(dead_code)]

use vecswitch_buffer::Pool;
use vecswitch_ports::loopback::{pair, LoopbackPort};
use vecswitch_ports::Port;

/// Burst sizes that hit every loop path (and a frame boundary).
pub const BURSTS: [usize; 7] = [1, 3, 4, 5, 255, 256, 257];

pub const BCAST: [u8; 6] = [0xff; 6];

/// A locally administered unicast MAC numbered `i`.
pub fn mac(i: u32) -> [u8; 6] {
    let b = i.to_be_bytes();
    [0x02, 0x00, b[0], b[1], b[2], b[3]]
}

/// An untagged Ethernet II frame of `len` bytes (≥ 14) carrying IPv4's EtherType.
pub fn frame(dst: [u8; 6], src: [u8; 6], len: usize) -> Vec<u8> {
    let mut f = vec![0u8; len.max(14)];
    f[0..6].copy_from_slice(&dst);
    f[6..12].copy_from_slice(&src);
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    for (i, b) in f[14..].iter_mut().enumerate() {
        *b = i as u8;
    }
    f
}

/// A frame with the given tags (TPID, VID) in order, then IPv4's EtherType, 46 payload bytes.
pub fn tagged(dst: [u8; 6], src: [u8; 6], tags: &[(u16, u16)]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    for &(tpid, vid) in tags {
        f.extend_from_slice(&tpid.to_be_bytes());
        f.extend_from_slice(&vid.to_be_bytes());
    }
    f.extend_from_slice(&0x0800u16.to_be_bytes());
    f.extend_from_slice(&[0x5a; 46]);
    f
}

/// Every malformed kind `ethernet-input` must drop, with the reason it must give.
pub fn malformed() -> Vec<(&'static str, Vec<u8>)> {
    let good = frame(mac(1), mac(2), 60);
    // IEEE 802.3 length field claiming 100 bytes with 46 following.
    let mut lying = good.clone();
    lying[12..14].copy_from_slice(&100u16.to_be_bytes());
    // Length field above 1500 but below 0x0600.
    let mut too_long = vec![0u8; 1600];
    too_long[..12].copy_from_slice(&good[..12]);
    too_long[12..14].copy_from_slice(&1501u16.to_be_bytes());
    // A TPID with only 2 of its 4 tag bytes.
    let mut trunc = good[..12].to_vec();
    trunc.extend_from_slice(&[0x81, 0x00, 0x00, 0x05]);
    vec![
        ("runt", good[..13].to_vec()),
        ("runt", vec![]),
        ("runt", vec![0xff; 1]),
        ("truncated-vlan-tag", trunc),
        (
            "too-many-vlan-tags",
            tagged(mac(1), mac(2), &[(0x88a8, 10), (0x8100, 20), (0x8100, 30)]),
        ),
        ("bad-length-field", lying),
        ("bad-length-field", too_long),
    ]
}

/// Allocates a packet holding `bytes` (chained over several buffers if it is long).
pub fn packet(pool: &mut Pool, bytes: &[u8]) -> u32 {
    vecswitch_ports::loopback::packet_from_bytes(pool, bytes).expect("test pool has room")
}

/// Receives everything waiting on `port` and returns the frames' bytes, freeing the buffers.
pub fn drain(port: &mut LoopbackPort, pool: &mut Pool) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut hs = Vec::new();
    loop {
        hs.clear();
        if port.rx_burst(pool, &mut hs, 256) == 0 {
            return out;
        }
        for &h in &hs {
            let mut v = Vec::new();
            pool.copy_out(h, &mut v);
            out.push(v);
        }
        pool.free_bulk(&hs);
    }
}

/// Sends frames into `port` (from the test's side of a loopback pair), `burst` at a time.
pub fn send(port: &mut LoopbackPort, pool: &mut Pool, frames: &[Vec<u8>]) {
    for chunk in frames.chunks(256) {
        let hs: Vec<u32> = chunk.iter().map(|f| packet(pool, f)).collect();
        assert_eq!(
            port.tx_burst(pool, &hs),
            hs.len(),
            "loopback queue has room"
        );
        pool.free_bulk(&hs);
    }
}

/// A loopback pair: the first end goes into the switch, the second stays with the test.
pub fn wire(name: &str) -> (Box<dyn Port>, LoopbackPort) {
    let (sw, tester) = pair(name, &format!("{name}-peer"));
    (Box::new(sw), tester)
}
