//! Helpers shared by the integration tests that drive ports over veth (this crate's
//! `tests/afxdp_*.rs`, `afpacket_veth.rs`, `kernel_if_drops.rs`, and vecswitch-cli's
//! `control_afxdp.rs` / `control_xdp_offload.rs`), so that each test says only what it checks.
//! Not used by the ports themselves.

use std::time::{Duration, Instant};

use vecswitch_buffer::Pool;

use crate::loopback::packet_from_bytes;
use crate::{LinkState, Port};

/// IEEE 802 "local experimental" EtherType: no kernel protocol answers or forwards it.
pub const TEST_ETHERTYPE: u16 = 0x88b5;

/// Waits up to 5 s for `p`'s link to come up; panics naming the port otherwise.
pub fn wait_up(p: &dyn Port) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while p.link() != LinkState::Up {
        assert!(Instant::now() < deadline, "{} never came up", p.name());
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A frame of direction `dir` (destination `02:00:00:00:00:10+dir`, source `…:20+dir`,
/// [`TEST_ETHERTYPE`]), `magic` and `dir` after the EtherType, then `seq`, then a pattern of
/// `seq` over the rest: a frame changed on the way does not compare equal to its rebuilt self.
pub fn marked_frame(magic: u32, dir: u8, seq: u32, len: usize) -> Vec<u8> {
    let mut f = vec![0u8; len];
    f[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x10 + dir]);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x20 + dir]);
    f[12..14].copy_from_slice(&TEST_ETHERTYPE.to_be_bytes());
    f[14..18].copy_from_slice(&magic.to_be_bytes());
    f[18] = dir;
    f[19..23].copy_from_slice(&seq.to_be_bytes());
    for (i, b) in f.iter_mut().enumerate().skip(23) {
        *b = (i as u32).wrapping_mul(31).wrapping_add(seq) as u8;
    }
    f
}

/// The sequence number of a [`marked_frame`] with `magic` and direction `dir`, if `f` is one.
pub fn marked_seq(f: &[u8], magic: u32, dir: u8) -> Option<u32> {
    (f.len() >= 23 && f[12..14] == TEST_ETHERTYPE.to_be_bytes())
        .then_some(())
        .filter(|()| f[14..18] == magic.to_be_bytes() && f[18] == dir)
        .map(|()| u32::from_be_bytes(f[19..23].try_into().expect("4 bytes")))
}

/// Sends `count` [`marked_frame`]s of `len` bytes from `tx` (bursts of 16, 200 µs apart, refused
/// ones offered again) and collects the frames of `magic`/`dir` that `rx` receives, in arrival
/// order, until `count` arrived or `wait` passed after the last was sent (20 s at most in all).
#[allow(clippy::too_many_arguments)] // a test helper: each argument is one knob the tests turn
pub fn send_and_collect(
    tx: &mut dyn Port,
    rx: &mut dyn Port,
    pool: &mut Pool,
    magic: u32,
    dir: u8,
    len: usize,
    count: u32,
    wait: Duration,
) -> Vec<Vec<u8>> {
    let mut next = 0;
    let mut got = Vec::new();
    let mut out = Vec::new();
    let mut deadline = Instant::now() + Duration::from_secs(20);
    while (got.len() as u32) < count && Instant::now() < deadline {
        if next < count {
            let n = (count - next).min(16);
            let hs: Vec<u32> = (0..n)
                .map(|k| packet_from_bytes(pool, &marked_frame(magic, dir, next + k, len)).unwrap())
                .collect();
            next += tx.tx_burst(pool, &hs) as u32;
            pool.free_bulk(&hs);
            if next == count {
                deadline = deadline.min(Instant::now() + wait);
            }
            std::thread::sleep(Duration::from_micros(200));
        } else {
            tx.poll_control();
            std::thread::sleep(Duration::from_millis(1));
        }
        out.clear();
        rx.rx_burst(pool, &mut out, 256);
        for &h in &out {
            let mut f = Vec::new();
            pool.copy_out(h, &mut f);
            if marked_seq(&f, magic, dir).is_some() {
                got.push(f);
            }
        }
        pool.free_bulk(&out);
    }
    got
}

/// [`send_and_collect`], each frame received checked equal to what was sent; returns the
/// sequence numbers in arrival order.
#[allow(clippy::too_many_arguments)] // as send_and_collect
pub fn send_and_count(
    tx: &mut dyn Port,
    rx: &mut dyn Port,
    pool: &mut Pool,
    magic: u32,
    dir: u8,
    len: usize,
    count: u32,
    wait: Duration,
) -> Vec<u32> {
    send_and_collect(tx, rx, pool, magic, dir, len, count, wait)
        .into_iter()
        .map(|f| {
            let seq = marked_seq(&f, magic, dir).expect("collected: ours");
            assert_eq!(
                f,
                marked_frame(magic, dir, seq, len),
                "frame {seq} changed on the way"
            );
            seq
        })
        .collect()
}
