//! In-process ports for tests and benchmarks: no kernel, no sockets, only memcpy.
//!
//! - [`pair`] returns two connected [`LoopbackPort`]s: what one sends, the other receives. Each
//!   direction is a bounded in-process queue ([`DEFAULT_QUEUE_FRAMES`] frames unless
//!   [`pair_with_capacity`] says otherwise); a frame sent into a full queue is counted as
//!   `tx_dropped` by the sender, like a NIC whose TX ring is full. The two ends may live on
//!   different threads (one lock per burst, never per packet).
//! - [`Replay`] hands out copies of a fixed list of template frames on every `rx_burst` (cycling
//!   through them, optionally up to a total count) and counts and discards everything it is given
//!   to send: a traffic source and sink whose only cost is one memcpy per packet, for criterion
//!   benchmarks of the graph.
//!
//! Both build packets with [`packet_from_bytes`], which chains frames longer than one pool buffer
//! (jumbo frames up to any length the pool can hold).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use thiserror::Error;
use vecswitch_buffer::{Pool, DATA_SIZE};

use crate::{LinkState, Port, PortStats};

/// Frames one direction of a [`pair`] holds before the sender starts dropping.
pub const DEFAULT_QUEUE_FRAMES: usize = 1024;

/// Errors building a loopback port; each names the field, the value and what is accepted.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum LoopbackError {
    #[error("loopback queue capacity {value} is not accepted: capacity must be at least 1 frame")]
    Capacity { value: usize },
    #[error("replay port {port:?}: templates is empty; give at least one template frame")]
    NoTemplates { port: String },
    #[error("replay port {port:?}: template {index} is empty (0 bytes); every template needs at least 1 byte")]
    EmptyTemplate { port: String, index: usize },
}

/// Copies `bytes` into a new packet from `pool` (chaining buffers when `bytes` is longer than one
/// buffer's [`DATA_SIZE`]). `None`, with nothing allocated, if the pool runs out.
pub fn packet_from_bytes(pool: &mut Pool, bytes: &[u8]) -> Option<u32> {
    let h = pool.alloc()?;
    let first = bytes.len().min(DATA_SIZE);
    pool.write_packet(h, &bytes[..first]);
    for seg in bytes[first..].chunks(DATA_SIZE) {
        if !pool.append_segment(h, seg) {
            pool.free(h);
            return None;
        }
    }
    Some(h)
}

/// One direction of a pair: frames in flight plus spare byte vectors reused to avoid allocating.
#[derive(Debug)]
struct Queue {
    frames: VecDeque<Vec<u8>>,
    spare: Vec<Vec<u8>>,
    capacity: usize,
}

impl Queue {
    fn new(capacity: usize) -> Arc<Mutex<Queue>> {
        Arc::new(Mutex::new(Queue {
            frames: VecDeque::with_capacity(capacity),
            spare: Vec::new(),
            capacity,
        }))
    }
}

fn lock(q: &Mutex<Queue>) -> MutexGuard<'_, Queue> {
    // A peer that panicked while holding the lock left the queue in a consistent state (every
    // mutation is a single push/pop), so keep using it.
    q.lock().unwrap_or_else(|e| e.into_inner())
}

/// One end of an in-process port pair made by [`pair`].
#[derive(Debug)]
pub struct LoopbackPort {
    name: String,
    /// Frames this end sends (the peer's receive queue).
    tx: Arc<Mutex<Queue>>,
    /// Frames this end receives.
    rx: Arc<Mutex<Queue>>,
    stats: PortStats,
}

/// Two connected ports named `a` and `b` with queues of [`DEFAULT_QUEUE_FRAMES`] frames.
pub fn pair(a: &str, b: &str) -> (LoopbackPort, LoopbackPort) {
    pair_with_capacity(a, b, DEFAULT_QUEUE_FRAMES).expect("default capacity is valid")
}

/// Two connected ports whose queues (one per direction) hold `capacity` frames each.
pub fn pair_with_capacity(
    a: &str,
    b: &str,
    capacity: usize,
) -> Result<(LoopbackPort, LoopbackPort), LoopbackError> {
    if capacity == 0 {
        return Err(LoopbackError::Capacity { value: capacity });
    }
    let ab = Queue::new(capacity);
    let ba = Queue::new(capacity);
    let pa = LoopbackPort {
        name: a.to_string(),
        tx: ab.clone(),
        rx: ba.clone(),
        stats: PortStats::default(),
    };
    let pb = LoopbackPort {
        name: b.to_string(),
        tx: ba,
        rx: ab,
        stats: PortStats::default(),
    };
    Ok((pa, pb))
}

impl LoopbackPort {
    /// Frames waiting in this end's receive queue.
    pub fn rx_pending(&self) -> usize {
        lock(&self.rx).frames.len()
    }

    fn peer_alive(&self) -> bool {
        // Each queue is shared by exactly the two ends; a count of 1 means the peer is gone.
        Arc::strong_count(&self.tx) > 1
    }
}

impl Port for LoopbackPort {
    fn name(&self) -> &str {
        &self.name
    }

    fn rx_burst(&mut self, pool: &mut Pool, out: &mut Vec<u32>, max: usize) -> usize {
        let mut q = lock(&self.rx);
        let mut got = 0;
        while got < max {
            let Some(bytes) = q.frames.front() else { break };
            // Out of buffers: leave the frame queued (the sender already counted it as sent and it is
            // not lost yet); the next burst retries.
            let Some(h) = packet_from_bytes(pool, bytes) else {
                break;
            };
            let len = bytes.len() as u64;
            let v = q.frames.pop_front().expect("front exists");
            q.spare.push(v);
            out.push(h);
            self.stats.rx_packets += 1;
            self.stats.rx_bytes += len;
            got += 1;
        }
        got
    }

    fn tx_burst(&mut self, pool: &mut Pool, pkts: &[u32]) -> usize {
        if !self.peer_alive() {
            self.stats.tx_dropped += pkts.len() as u64;
            return 0;
        }
        let mut q = lock(&self.tx);
        let mut sent = 0;
        for &h in pkts {
            if q.frames.len() >= q.capacity {
                break;
            }
            let mut v = q.spare.pop().unwrap_or_default();
            pool.copy_out(h, &mut v);
            self.stats.tx_bytes += v.len() as u64;
            q.frames.push_back(v);
            sent += 1;
        }
        self.stats.tx_packets += sent as u64;
        self.stats.tx_dropped += (pkts.len() - sent) as u64;
        sent
    }

    fn stats(&self) -> PortStats {
        self.stats
    }

    fn clear_stats(&mut self) {
        self.stats = PortStats::default();
    }

    fn link(&self) -> LinkState {
        if self.peer_alive() {
            LinkState::Up
        } else {
            LinkState::Down
        }
    }

    fn describe(&self) -> String {
        let cap = lock(&self.rx).capacity;
        format!(
            "loopback queue {} frames, {} pending rx",
            cap,
            self.rx_pending()
        )
    }
}

/// A port that replays template frames on receive and discards what it is asked to send.
///
/// `rx_burst` hands out copies of the templates in order, cycling back to the first, until the
/// optional total `limit` is reached; after that it returns 0 until [`Replay::rewind`]. `tx_burst`
/// counts (`tx_packets`, `tx_bytes`) and accepts everything.
///
/// When the pool runs dry a burst ends early and `rx_dropped` counts one (a sign of pool pressure
/// in a benchmark); nothing is skipped, the next burst continues with the same template.
#[derive(Debug, Clone)]
pub struct Replay {
    name: String,
    templates: Vec<Vec<u8>>,
    next: usize,
    limit: Option<u64>,
    produced: u64,
    stats: PortStats,
}

impl Replay {
    /// A replay port cycling through `templates` forever.
    pub fn new(name: &str, templates: Vec<Vec<u8>>) -> Result<Replay, LoopbackError> {
        if templates.is_empty() {
            return Err(LoopbackError::NoTemplates {
                port: name.to_string(),
            });
        }
        if let Some(index) = templates.iter().position(|t| t.is_empty()) {
            return Err(LoopbackError::EmptyTemplate {
                port: name.to_string(),
                index,
            });
        }
        Ok(Replay {
            name: name.to_string(),
            templates,
            next: 0,
            limit: None,
            produced: 0,
            stats: PortStats::default(),
        })
    }

    /// Stops handing out frames after `total` of them (counted since creation or [`Replay::rewind`]).
    pub fn with_limit(mut self, total: u64) -> Replay {
        self.limit = Some(total);
        self
    }

    /// Frames handed out since creation or the last rewind.
    pub fn produced(&self) -> u64 {
        self.produced
    }

    /// Frames still to hand out before the limit (`None` = unlimited).
    pub fn remaining(&self) -> Option<u64> {
        self.limit.map(|l| l.saturating_sub(self.produced))
    }

    /// Starts again from the first template with the full limit.
    pub fn rewind(&mut self) {
        self.next = 0;
        self.produced = 0;
    }

    /// The templates, in replay order.
    pub fn templates(&self) -> &[Vec<u8>] {
        &self.templates
    }
}

impl Port for Replay {
    fn name(&self) -> &str {
        &self.name
    }

    fn rx_burst(&mut self, pool: &mut Pool, out: &mut Vec<u32>, max: usize) -> usize {
        let allowed = match self.remaining() {
            Some(r) => max.min(usize::try_from(r).unwrap_or(usize::MAX)),
            None => max,
        };
        let mut got = 0;
        while got < allowed {
            let t = &self.templates[self.next];
            let Some(h) = packet_from_bytes(pool, t) else {
                self.stats.rx_dropped += 1;
                break;
            };
            out.push(h);
            self.stats.rx_packets += 1;
            self.stats.rx_bytes += t.len() as u64;
            self.next = (self.next + 1) % self.templates.len();
            got += 1;
        }
        self.produced += got as u64;
        got
    }

    fn tx_burst(&mut self, pool: &mut Pool, pkts: &[u32]) -> usize {
        for &h in pkts {
            self.stats.tx_bytes += u64::from(pool.header(h).total_len);
        }
        self.stats.tx_packets += pkts.len() as u64;
        pkts.len()
    }

    fn stats(&self) -> PortStats {
        self.stats
    }

    fn clear_stats(&mut self) {
        self.stats = PortStats::default();
    }

    fn link(&self) -> LinkState {
        LinkState::Up
    }

    fn describe(&self) -> String {
        match self.limit {
            Some(l) => format!(
                "replay {} templates, {}/{} frames",
                self.templates.len(),
                self.produced,
                l
            ),
            None => format!(
                "replay {} templates, {} frames",
                self.templates.len(),
                self.produced
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BURSTS: [usize; 7] = [1, 3, 4, 5, 255, 256, 257];

    fn frame(seq: u32, len: usize) -> Vec<u8> {
        let mut v = vec![0u8; len];
        v[..4].copy_from_slice(&seq.to_be_bytes());
        for (i, b) in v.iter_mut().enumerate().skip(4) {
            *b = (i as u32 ^ seq) as u8;
        }
        v
    }

    fn seq_of(pool: &Pool, h: u32) -> u32 {
        u32::from_be_bytes(pool.data(h)[..4].try_into().unwrap())
    }

    #[test]
    fn pair_delivers_every_burst_size_in_order_both_ways() {
        let mut pool = Pool::new(4096);
        let (mut a, mut b) = pair("a", "b");
        let mut total = 0u64;
        for &n in &BURSTS {
            let mut pkts = Vec::new();
            for i in 0..n {
                pkts.push(packet_from_bytes(&mut pool, &frame(i as u32, 60 + i % 7)).unwrap());
            }
            assert_eq!(a.tx_burst(&mut pool, &pkts), n);
            pool.free_bulk(&pkts);
            let mut got = Vec::new();
            // Receive in bursts of 256 at most, like a worker.
            while b.rx_burst(&mut pool, &mut got, 256) > 0 {}
            assert_eq!(got.len(), n);
            for (i, &h) in got.iter().enumerate() {
                assert_eq!(seq_of(&pool, h), i as u32);
                assert_eq!(pool.data(h), frame(i as u32, 60 + i % 7).as_slice());
            }
            // And back from b to a.
            assert_eq!(b.tx_burst(&mut pool, &got), n);
            pool.free_bulk(&got);
            let mut back = Vec::new();
            while a.rx_burst(&mut pool, &mut back, 256) > 0 {}
            assert_eq!(back.len(), n);
            pool.free_bulk(&back);
            total += n as u64;
        }
        assert_eq!(a.stats().tx_packets, total);
        assert_eq!(b.stats().rx_packets, total);
        assert_eq!(b.stats().tx_packets, total);
        assert_eq!(a.stats().rx_packets, total);
        assert_eq!(a.stats().tx_dropped, 0);
        assert_eq!(pool.in_use(), 0);
    }

    #[test]
    fn rx_burst_never_returns_more_than_max() {
        let mut pool = Pool::new(1024);
        let (mut a, mut b) = pair("a", "b");
        let pkts: Vec<u32> = (0..300)
            .map(|i| packet_from_bytes(&mut pool, &frame(i, 64)).unwrap())
            .collect();
        assert_eq!(a.tx_burst(&mut pool, &pkts), 300);
        pool.free_bulk(&pkts);
        let mut got = Vec::new();
        assert_eq!(b.rx_burst(&mut pool, &mut got, 257), 257);
        assert_eq!(b.rx_burst(&mut pool, &mut got, 5), 5);
        assert_eq!(b.rx_burst(&mut pool, &mut got, 256), 38);
        assert_eq!(b.rx_burst(&mut pool, &mut got, 256), 0);
        assert_eq!(got.len(), 300);
        pool.free_bulk(&got);
    }

    #[test]
    fn full_queue_counts_tx_drops() {
        let mut pool = Pool::new(64);
        let (mut a, mut b) = pair_with_capacity("a", "b", 4).unwrap();
        let pkts: Vec<u32> = (0..7)
            .map(|i| packet_from_bytes(&mut pool, &frame(i, 64)).unwrap())
            .collect();
        assert_eq!(a.tx_burst(&mut pool, &pkts), 4);
        assert_eq!(a.stats().tx_dropped, 3);
        assert_eq!(a.stats().tx_packets, 4);
        assert_eq!(a.tx_burst(&mut pool, &pkts[..1]), 0);
        assert_eq!(a.stats().tx_dropped, 4);
        pool.free_bulk(&pkts);
        let mut got = Vec::new();
        assert_eq!(b.rx_burst(&mut pool, &mut got, 256), 4);
        let seqs: Vec<u32> = got.iter().map(|&h| seq_of(&pool, h)).collect();
        assert_eq!(seqs, vec![0, 1, 2, 3]);
        pool.free_bulk(&got);
    }

    #[test]
    fn zero_capacity_is_rejected_with_the_value() {
        let err = pair_with_capacity("a", "b", 0).unwrap_err();
        assert_eq!(err, LoopbackError::Capacity { value: 0 });
        assert!(err.to_string().contains("capacity 0"));
    }

    #[test]
    fn empty_pool_leaves_frames_queued() {
        let mut pool = Pool::new(4);
        let (mut a, mut b) = pair("a", "b");
        let pkts: Vec<u32> = (0..3)
            .map(|i| packet_from_bytes(&mut pool, &frame(i, 64)).unwrap())
            .collect();
        assert_eq!(a.tx_burst(&mut pool, &pkts), 3);
        pool.free_bulk(&pkts[1..]);
        // One buffer still in use by the test: hold 3 more so the pool is empty.
        let hold: Vec<u32> = (0..3).map(|_| pool.alloc().unwrap()).collect();
        let mut got = Vec::new();
        assert_eq!(b.rx_burst(&mut pool, &mut got, 256), 0);
        assert_eq!(b.rx_pending(), 3);
        pool.free_bulk(&hold);
        assert_eq!(b.rx_burst(&mut pool, &mut got, 256), 3);
        assert_eq!(b.stats().rx_dropped, 0);
        pool.free_bulk(&got);
        pool.free(pkts[0]);
        assert_eq!(pool.in_use(), 0);
    }

    #[test]
    fn jumbo_frames_are_chained_and_survive_the_trip() {
        let mut pool = Pool::new(64);
        let (mut a, mut b) = pair("a", "b");
        let big = frame(9, 9000);
        let h = packet_from_bytes(&mut pool, &big).unwrap();
        assert_eq!(pool.in_use(), 9000usize.div_ceil(DATA_SIZE) as u32);
        assert_eq!(a.tx_burst(&mut pool, &[h]), 1);
        pool.free(h);
        let mut got = Vec::new();
        assert_eq!(b.rx_burst(&mut pool, &mut got, 1), 1);
        let mut bytes = Vec::new();
        pool.copy_out(got[0], &mut bytes);
        assert_eq!(bytes, big);
        assert_eq!(b.stats().rx_bytes, 9000);
        pool.free(got[0]);
        assert_eq!(pool.in_use(), 0);
    }

    #[test]
    fn dropped_peer_takes_the_link_down() {
        let mut pool = Pool::new(8);
        let (mut a, b) = pair("a", "b");
        assert_eq!(a.link(), LinkState::Up);
        drop(b);
        assert_eq!(a.link(), LinkState::Down);
        let h = packet_from_bytes(&mut pool, &frame(1, 64)).unwrap();
        assert_eq!(a.tx_burst(&mut pool, &[h]), 0);
        assert_eq!(a.stats().tx_dropped, 1);
        pool.free(h);
    }

    #[test]
    fn pair_works_across_threads() {
        let (mut a, mut b) = pair("a", "b");
        let t = std::thread::spawn(move || {
            let mut pool = Pool::new(64);
            for i in 0..100u32 {
                let h = packet_from_bytes(&mut pool, &frame(i, 64)).unwrap();
                while a.tx_burst(&mut pool, &[h]) == 0 {
                    std::thread::yield_now();
                }
                pool.free(h);
            }
            a.stats().tx_packets
        });
        let mut pool = Pool::new(64);
        let mut seqs = Vec::new();
        while seqs.len() < 100 {
            let mut got = Vec::new();
            b.rx_burst(&mut pool, &mut got, 256);
            seqs.extend(got.iter().map(|&h| seq_of(&pool, h)));
            pool.free_bulk(&got);
            std::thread::yield_now();
        }
        assert_eq!(t.join().unwrap(), 100);
        assert_eq!(seqs, (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn replay_cycles_templates_for_every_burst_size() {
        let templates: Vec<Vec<u8>> = (0..3).map(|i| frame(i, 60 + 100 * i as usize)).collect();
        let mut r = Replay::new("gen", templates.clone()).unwrap();
        let mut pool = Pool::new(1024);
        let mut expected_next = 0usize;
        let mut total = 0u64;
        for &n in &BURSTS {
            let mut got = Vec::new();
            assert_eq!(r.rx_burst(&mut pool, &mut got, n), n);
            assert_eq!(got.len(), n);
            for &h in &got {
                assert_eq!(pool.data(h), templates[expected_next].as_slice());
                expected_next = (expected_next + 1) % 3;
            }
            assert_eq!(r.tx_burst(&mut pool, &got), n);
            pool.free_bulk(&got);
            total += n as u64;
        }
        let s = r.stats();
        assert_eq!(s.rx_packets, total);
        assert_eq!(s.tx_packets, total);
        assert_eq!(s.rx_bytes, s.tx_bytes);
        assert_eq!(r.produced(), total);
        assert_eq!(pool.in_use(), 0);
    }

    #[test]
    fn replay_stops_at_limit_and_rewinds() {
        let mut r = Replay::new("gen", vec![frame(0, 64), frame(1, 64)])
            .unwrap()
            .with_limit(600);
        let mut pool = Pool::new(1024);
        let mut got = Vec::new();
        assert_eq!(r.rx_burst(&mut pool, &mut got, 256), 256);
        assert_eq!(r.rx_burst(&mut pool, &mut got, 257), 257);
        assert_eq!(r.remaining(), Some(87));
        assert_eq!(r.rx_burst(&mut pool, &mut got, 256), 87);
        assert_eq!(r.rx_burst(&mut pool, &mut got, 256), 0);
        assert_eq!(got.len(), 600);
        // 600 is even, so the two templates alternate exactly.
        let zeros = got.iter().filter(|&&h| seq_of(&pool, h) == 0).count();
        assert_eq!(zeros, 300);
        pool.free_bulk(&got);
        got.clear();
        r.rewind();
        assert_eq!(r.rx_burst(&mut pool, &mut got, 3), 3);
        assert_eq!(seq_of(&pool, got[0]), 0);
        pool.free_bulk(&got);
    }

    #[test]
    fn replay_rejects_bad_templates_naming_them() {
        assert_eq!(
            Replay::new("g", vec![]).unwrap_err(),
            LoopbackError::NoTemplates { port: "g".into() }
        );
        let e = Replay::new("g", vec![vec![1], vec![]]).unwrap_err();
        assert_eq!(
            e,
            LoopbackError::EmptyTemplate {
                port: "g".into(),
                index: 1
            }
        );
        assert!(e.to_string().contains("template 1"));
    }

    #[test]
    fn replay_counts_pool_exhaustion() {
        let mut r = Replay::new("gen", vec![frame(0, 64)]).unwrap();
        let mut pool = Pool::new(5);
        let mut got = Vec::new();
        assert_eq!(r.rx_burst(&mut pool, &mut got, 8), 5);
        assert_eq!(r.stats().rx_dropped, 1);
        assert_eq!(r.produced(), 5);
        pool.free_bulk(&got);
    }
}
