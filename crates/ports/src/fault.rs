//! Fault injection: [`Faulty`] wraps any [`Port`] and damages the traffic through it, seeded so
//! that a run can be repeated exactly.
//!
//! - [`FaultConfig`] holds the seed and one [`FaultRates`] per direction (rx, tx): probabilities of
//!   **drop**, **corrupt** (one byte at a random offset is inverted), **duplicate** (the frame is
//!   emitted twice in a row) and **reorder** (the frame is held back and emitted right after the
//!   next frame that passes). [`FaultConfig::validate`] rejects probabilities outside 0..=1, naming
//!   the field.
//! - [`FaultStats`] counts what was done, per direction ([`Faulty::fault_stats`]).
//!
//! Each direction has its own ChaCha8 stream (seeded from the config's seed), and every frame draws
//! the same five numbers whatever the probabilities are, so the fate of frame *n* in a direction
//! depends only on the seed and *n*: the same seed and the same traffic give the same outcome.
//!
//! Frames are decided in this order: drop (nothing else happens to a dropped frame), corrupt,
//! duplicate, reorder. A held frame (with its duplicate) stays inside the wrapper across bursts
//! until another frame passes; [`Faulty::release`] hands held and pending frames back to the pool.
//!
//! On RX the wrapper works on the received buffers in place. On TX the caller keeps its handles, so
//! a corrupted frame is a corrupted *copy*, a held frame is a copy that the wrapper frees after
//! sending it, and a duplicate is the same handle passed twice. `tx_burst` returns the caller's
//! frame count when the inner port took everything (frames dropped on purpose count as sent, as on
//! a lossy link); when the inner port refused part of the burst (its own `tx_dropped`), the return
//! value is an estimate: frames the inner port took plus frames dropped on purpose, at most the
//! burst size.

use std::collections::VecDeque;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use thiserror::Error;
use vecswitch_buffer::{flags, Pool, NO_BUFFER};

use crate::{LinkState, Port, PortStats};

/// Probabilities (0..=1) of each fault, for one direction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FaultRates {
    pub drop: f64,
    pub corrupt: f64,
    pub duplicate: f64,
    pub reorder: f64,
}

/// Configuration of a [`Faulty`] wrapper.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FaultConfig {
    /// Seed of the random streams.
    pub seed: u64,
    /// Faults applied to received frames.
    pub rx: FaultRates,
    /// Faults applied to sent frames.
    pub tx: FaultRates,
}

/// A fault configuration value outside what is accepted.
#[derive(Debug, Error, PartialEq)]
#[error("fault config: {field} = {value} is not accepted; expected a probability from 0.0 to 1.0")]
pub struct FaultError {
    pub field: &'static str,
    pub value: f64,
}

impl FaultConfig {
    /// Checks that every probability is a number from 0 to 1.
    pub fn validate(&self) -> Result<(), FaultError> {
        let fields = [
            ("rx.drop", self.rx.drop),
            ("rx.corrupt", self.rx.corrupt),
            ("rx.duplicate", self.rx.duplicate),
            ("rx.reorder", self.rx.reorder),
            ("tx.drop", self.tx.drop),
            ("tx.corrupt", self.tx.corrupt),
            ("tx.duplicate", self.tx.duplicate),
            ("tx.reorder", self.tx.reorder),
        ];
        for (field, value) in fields {
            if !(0.0..=1.0).contains(&value) {
                return Err(FaultError { field, value });
            }
        }
        Ok(())
    }
}

/// What the injector did in one direction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct FaultStats {
    /// Frames that entered the injector.
    pub frames: u64,
    pub dropped: u64,
    pub corrupted: u64,
    pub duplicated: u64,
    /// Frames held back and emitted after a later one.
    pub reordered: u64,
}

/// Fault counters of both directions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct FaultCounters {
    pub rx: FaultStats,
    pub tx: FaultStats,
}

/// The fate of one frame, drawn from a direction's stream.
#[derive(Debug, Clone, Copy)]
struct Fate {
    drop: bool,
    corrupt: Option<u64>,
    duplicate: bool,
    reorder: bool,
}

/// One direction's random stream and counters.
#[derive(Debug)]
struct Direction {
    rng: ChaCha8Rng,
    rates: FaultRates,
    stats: FaultStats,
}

impl Direction {
    fn new(seed: u64, stream: u64, rates: FaultRates) -> Direction {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(stream);
        Direction {
            rng,
            rates,
            stats: FaultStats::default(),
        }
    }

    /// Always five draws per frame, whatever the rates, so that outcomes depend only on the seed
    /// and the frame's position.
    fn fate(&mut self) -> Fate {
        let d: f64 = self.rng.gen();
        let c: f64 = self.rng.gen();
        let pos: u64 = self.rng.gen();
        let u: f64 = self.rng.gen();
        let r: f64 = self.rng.gen();
        self.stats.frames += 1;
        Fate {
            drop: d < self.rates.drop,
            corrupt: (c < self.rates.corrupt).then_some(pos),
            duplicate: u < self.rates.duplicate,
            reorder: r < self.rates.reorder,
        }
    }
}

/// Inverts the byte at `pos % total_len` of packet `h` (walking its chain). False for an empty packet.
fn corrupt_byte(pool: &mut Pool, h: u32, pos: u64) -> bool {
    let total = pool.header(h).total_len as u64;
    if total == 0 {
        return false;
    }
    let mut at = (pos % total) as usize;
    let mut b = h;
    while b != NO_BUFFER {
        let hdr = *pool.header(b);
        if at < hdr.len as usize {
            let d = pool.data_mut(b);
            d[at] = !d[at];
            return true;
        }
        at -= hdr.len as usize;
        b = if hdr.flags & flags::CHAINED != 0 {
            hdr.next
        } else {
            NO_BUFFER
        };
    }
    false
}

/// A port wrapper that injects faults (see the module doc).
#[derive(Debug)]
pub struct Faulty<P: Port> {
    inner: P,
    rx: Direction,
    tx: Direction,
    /// RX frames decided and ready to hand out (beyond the last burst's `max`).
    rx_ready: VecDeque<u32>,
    /// RX frames held back for reordering.
    rx_held: Vec<u32>,
    /// A TX copy held back for reordering (owned by the wrapper), and how many times to send it
    /// (2 when it was also duplicated).
    tx_held: Option<(u32, u8)>,
    scratch: Vec<u32>,
}

/// Stream numbers of the two directions' generators.
const RX_STREAM: u64 = 1;
const TX_STREAM: u64 = 2;
/// Inner `rx_burst` calls one `rx_burst` may make while faults eat what they return.
const RX_INNER_READS: usize = 4;

impl<P: Port> Faulty<P> {
    /// Wraps `inner` with the faults of `config`.
    pub fn new(inner: P, config: FaultConfig) -> Result<Faulty<P>, FaultError> {
        config.validate()?;
        Ok(Faulty {
            inner,
            rx: Direction::new(config.seed, RX_STREAM, config.rx),
            tx: Direction::new(config.seed, TX_STREAM, config.tx),
            rx_ready: VecDeque::new(),
            rx_held: Vec::new(),
            tx_held: None,
            scratch: Vec::new(),
        })
    }

    /// What the injector did so far.
    pub fn fault_stats(&self) -> FaultCounters {
        FaultCounters {
            rx: self.rx.stats,
            tx: self.tx.stats,
        }
    }

    /// The wrapped port.
    pub fn inner(&self) -> &P {
        &self.inner
    }

    /// The wrapped port, mutable.
    pub fn inner_mut(&mut self) -> &mut P {
        &mut self.inner
    }

    /// Frames the wrapper holds (RX ready or held, TX held).
    pub fn held(&self) -> usize {
        self.rx_ready.len() + self.rx_held.len() + usize::from(self.tx_held.map_or(0, |(_, n)| n))
    }

    /// Frees every frame the wrapper holds. Call before dropping it to return them to the pool.
    pub fn release(&mut self, pool: &mut Pool) {
        for h in self.rx_ready.drain(..).chain(self.rx_held.drain(..)) {
            pool.free(h);
        }
        if let Some((h, _)) = self.tx_held.take() {
            pool.free(h);
        }
    }
}

impl<P: Port> Port for Faulty<P> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn rx_burst(&mut self, pool: &mut Pool, out: &mut Vec<u32>, max: usize) -> usize {
        // A burst whose frames were all dropped would look like an idle port: read the inner port
        // again, a bounded number of times so that a never-ending source cannot trap us.
        for _ in 0..RX_INNER_READS {
            let want = max.saturating_sub(self.rx_ready.len());
            if want == 0 {
                break;
            }
            self.scratch.clear();
            if self.inner.rx_burst(pool, &mut self.scratch, want) == 0 {
                break;
            }
            for i in 0..self.scratch.len() {
                let h = self.scratch[i];
                let fate = self.rx.fate();
                if fate.drop {
                    self.rx.stats.dropped += 1;
                    pool.free(h);
                    continue;
                }
                if let Some(pos) = fate.corrupt {
                    if corrupt_byte(pool, h, pos) {
                        self.rx.stats.corrupted += 1;
                    }
                }
                let mut unit = [h, NO_BUFFER];
                if fate.duplicate {
                    if let Some(c) = pool.clone_packet(h) {
                        unit[1] = c;
                        self.rx.stats.duplicated += 1;
                    }
                }
                let unit = unit.into_iter().filter(|&x| x != NO_BUFFER);
                if fate.reorder && self.rx_held.is_empty() {
                    self.rx_held.extend(unit);
                    self.rx.stats.reordered += 1;
                } else {
                    self.rx_ready.extend(unit);
                    self.rx_ready.extend(self.rx_held.drain(..));
                }
            }
        }
        let n = max.min(self.rx_ready.len());
        out.extend(self.rx_ready.drain(..n));
        n
    }

    fn tx_burst(&mut self, pool: &mut Pool, pkts: &[u32]) -> usize {
        let mut list: Vec<u32> = Vec::with_capacity(pkts.len() + 2);
        // Copies made here (corrupted frames, released held frames) are freed after sending.
        let mut owned: Vec<u32> = Vec::new();
        let mut dropped = 0;
        for &orig in pkts {
            let fate = self.tx.fate();
            if fate.drop {
                self.tx.stats.dropped += 1;
                dropped += 1;
                continue;
            }
            let mut h = orig;
            if let Some(pos) = fate.corrupt {
                if let Some(c) = pool.clone_packet(orig) {
                    if corrupt_byte(pool, c, pos) {
                        self.tx.stats.corrupted += 1;
                    }
                    owned.push(c);
                    h = c;
                }
            }
            let dup = fate.duplicate;
            if dup {
                self.tx.stats.duplicated += 1;
            }
            if fate.reorder && self.tx_held.is_none() {
                // The caller frees `orig` after this call: hold a copy we own.
                let held = if h == orig {
                    pool.clone_packet(orig)
                } else {
                    owned.pop()
                };
                if let Some(c) = held {
                    self.tx_held = Some((c, if dup { 2 } else { 1 }));
                    self.tx.stats.reordered += 1;
                    continue;
                }
            }
            list.push(h);
            if dup {
                list.push(h);
            }
            if let Some((held, copies)) = self.tx_held.take() {
                for _ in 0..copies {
                    list.push(held);
                }
                owned.push(held);
            }
        }
        let sent = self.inner.tx_burst(pool, &list);
        pool.free_bulk(&owned);
        if sent == list.len() {
            // Everything was taken (held frames will go with the next burst).
            pkts.len()
        } else {
            (sent + dropped).min(pkts.len())
        }
    }

    fn poll_control(&mut self) {
        self.inner.poll_control()
    }

    fn stats(&self) -> PortStats {
        self.inner.stats()
    }

    fn clear_stats(&mut self) {
        self.inner.clear_stats();
        self.rx.stats = FaultStats::default();
        self.tx.stats = FaultStats::default();
    }

    fn link(&self) -> LinkState {
        self.inner.link()
    }

    /// The inner port's counters, then the injector's own: frames it dropped on purpose
    /// (`fault-rx-dropped`, `fault-tx-dropped`, so that every frame lost here is counted in
    /// `show errors` too) and the events that did not lose a frame.
    fn error_counters(&self) -> Vec<(&'static str, u64)> {
        let mut v = self.inner.error_counters();
        v.extend([
            ("fault-rx-dropped", self.rx.stats.dropped),
            ("fault-tx-dropped", self.tx.stats.dropped),
            ("fault-rx-corrupted", self.rx.stats.corrupted),
            ("fault-tx-corrupted", self.tx.stats.corrupted),
            ("fault-rx-duplicated", self.rx.stats.duplicated),
            ("fault-tx-duplicated", self.tx.stats.duplicated),
            ("fault-rx-reordered", self.rx.stats.reordered),
            ("fault-tx-reordered", self.tx.stats.reordered),
        ]);
        v
    }

    fn rx_ring(&self) -> Option<crate::RingFill> {
        self.inner.rx_ring()
    }

    fn describe(&self) -> String {
        format!(
            "{} (fault injection rx {:?} tx {:?})",
            self.inner.describe(),
            self.rx.rates,
            self.tx.rates
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loopback::{packet_from_bytes, pair, LoopbackPort};

    const BURSTS: [usize; 7] = [1, 3, 4, 5, 255, 256, 257];

    /// 64 bytes: the sequence number repeated, so that one corrupted byte cannot hide it.
    fn frame(seq: u32) -> Vec<u8> {
        seq.to_be_bytes().repeat(16)
    }

    /// The frame's sequence number by majority over its 16 copies, and whether the frame is intact.
    fn decode(bytes: &[u8]) -> (u32, bool) {
        let words: Vec<u32> = bytes
            .chunks(4)
            .map(|c| u32::from_be_bytes(c.try_into().unwrap()))
            .collect();
        let seq = if words[0] == words[1] || words[0] == words[2] {
            words[0]
        } else {
            words[1]
        };
        (seq, bytes == frame(seq).as_slice())
    }

    fn rates(drop: f64, corrupt: f64, duplicate: f64, reorder: f64) -> FaultRates {
        FaultRates {
            drop,
            corrupt,
            duplicate,
            reorder,
        }
    }

    /// Sends `n` frames into `a` (unfaulted) and reads them through `f` in bursts of `burst`;
    /// returns (seq, intact) of each received frame, in order.
    fn through_rx(
        f: &mut Faulty<LoopbackPort>,
        a: &mut LoopbackPort,
        pool: &mut Pool,
        first: u32,
        n: u32,
        burst: usize,
    ) -> Vec<(u32, bool)> {
        let pkts: Vec<u32> = (first..first + n)
            .map(|s| packet_from_bytes(pool, &frame(s)).unwrap())
            .collect();
        assert_eq!(a.tx_burst(pool, &pkts), n as usize);
        pool.free_bulk(&pkts);
        let mut seen = Vec::new();
        let mut bytes = Vec::new();
        loop {
            let mut got = Vec::new();
            let k = f.rx_burst(pool, &mut got, burst);
            assert!(k <= burst && k == got.len());
            if k == 0 && f.inner().rx_pending() == 0 {
                break;
            }
            for &h in &got {
                pool.copy_out(h, &mut bytes);
                seen.push(decode(&bytes));
            }
            pool.free_bulk(&got);
        }
        seen
    }

    fn rx_setup(config: FaultConfig) -> (Faulty<LoopbackPort>, LoopbackPort, Pool) {
        let (a, b) = crate::loopback::pair_with_capacity("a", "b", 4096).unwrap();
        (Faulty::new(b, config).unwrap(), a, Pool::new(4096))
    }

    /// A port that only has error counters, to see them through the wrappers.
    struct Counted;
    impl Port for Counted {
        fn name(&self) -> &str {
            "counted"
        }
        fn rx_burst(&mut self, _: &mut Pool, _: &mut Vec<u32>, _: usize) -> usize {
            0
        }
        fn tx_burst(&mut self, _: &mut Pool, _: &[u32]) -> usize {
            0
        }
        fn stats(&self) -> crate::PortStats {
            crate::PortStats::default()
        }
        fn clear_stats(&mut self) {}
        fn link(&self) -> LinkState {
            LinkState::Up
        }
        fn error_counters(&self) -> Vec<(&'static str, u64)> {
            vec![("kernel-ring-drops", 7)]
        }
    }

    #[test]
    fn error_counters_go_through_pcap_and_fault_wrappers_with_the_injected_drops() {
        let dir = std::env::temp_dir().join(format!("fault-ec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cap = crate::pcap::Capture::create(Counted, dir.join("c.pcap")).unwrap();
        assert_eq!(cap.error_counters(), vec![("kernel-ring-drops", 7)]);
        let mut f = Faulty::new(
            cap,
            FaultConfig {
                seed: 1,
                tx: rates(1.0, 0.0, 0.0, 0.0),
                ..Default::default()
            },
        )
        .unwrap();
        let mut pool = Pool::new(64);
        let pkts: Vec<u32> = (0..5)
            .map(|s| packet_from_bytes(&mut pool, &frame(s)).unwrap())
            .collect();
        // Dropped by the injector: reported as taken, and counted as fault-tx-dropped.
        assert_eq!(f.tx_burst(&mut pool, &pkts), 5);
        pool.free_bulk(&pkts);
        let ec = f.error_counters();
        assert_eq!(ec[0], ("kernel-ring-drops", 7));
        assert!(ec.contains(&("fault-tx-dropped", 5)), "{ec:?}");
        assert!(ec.contains(&("fault-rx-dropped", 0)), "{ec:?}");
        assert_eq!(pool.in_use(), 0);
        drop(f);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn no_faults_is_the_identity_for_every_burst_size() {
        let (mut f, mut a, mut pool) = rx_setup(FaultConfig {
            seed: 1,
            ..Default::default()
        });
        let mut first = 0;
        for &burst in &BURSTS {
            let seen = through_rx(&mut f, &mut a, &mut pool, first, 600, burst);
            assert_eq!(
                seen,
                (first..first + 600).map(|s| (s, true)).collect::<Vec<_>>()
            );
            first += 600;
        }
        let s = f.fault_stats().rx;
        assert_eq!(
            s,
            FaultStats {
                frames: u64::from(first),
                ..Default::default()
            }
        );
        assert_eq!(pool.in_use(), 0);
    }

    #[test]
    fn drop_all_drops_all_and_frees_them() {
        let (mut f, mut a, mut pool) = rx_setup(FaultConfig {
            seed: 1,
            rx: rates(1.0, 0.0, 0.0, 0.0),
            ..Default::default()
        });
        assert!(through_rx(&mut f, &mut a, &mut pool, 0, 257, 256).is_empty());
        assert_eq!(f.fault_stats().rx.dropped, 257);
        assert_eq!(pool.in_use(), 0);
    }

    #[test]
    fn corrupt_all_inverts_exactly_one_byte_per_frame() {
        let (mut f, mut a, mut pool) = rx_setup(FaultConfig {
            seed: 3,
            rx: rates(0.0, 1.0, 0.0, 0.0),
            ..Default::default()
        });
        let pkts: Vec<u32> = (0..100)
            .map(|s| packet_from_bytes(&mut pool, &frame(s)).unwrap())
            .collect();
        a.tx_burst(&mut pool, &pkts);
        pool.free_bulk(&pkts);
        let mut got = Vec::new();
        assert_eq!(f.rx_burst(&mut pool, &mut got, 256), 100);
        let mut positions = std::collections::HashSet::new();
        for (s, &h) in got.iter().enumerate() {
            let orig = frame(s as u32);
            let d = pool.data(h);
            let diffs: Vec<usize> = (0..64).filter(|&i| d[i] != orig[i]).collect();
            assert_eq!(diffs.len(), 1, "frame {s}");
            assert_eq!(d[diffs[0]], !orig[diffs[0]]);
            positions.insert(diffs[0]);
        }
        // Offsets are spread over the frame, not one fixed byte.
        assert!(positions.len() > 20);
        assert_eq!(f.fault_stats().rx.corrupted, 100);
        pool.free_bulk(&got);
    }

    #[test]
    fn corrupting_a_chained_frame_changes_one_byte_somewhere_in_the_chain() {
        let mut pool = Pool::new(16);
        let big = vec![0x55u8; 9000];
        let h = packet_from_bytes(&mut pool, &big).unwrap();
        assert!(corrupt_byte(&mut pool, h, 8999));
        let mut out = Vec::new();
        pool.copy_out(h, &mut out);
        assert_eq!(out[8999], !0x55);
        assert_eq!(out.iter().filter(|&&b| b != 0x55).count(), 1);
        pool.free(h);
    }

    #[test]
    fn duplicate_all_doubles_each_frame_and_respects_max() {
        let (mut f, mut a, mut pool) = rx_setup(FaultConfig {
            seed: 1,
            rx: rates(0.0, 0.0, 1.0, 0.0),
            ..Default::default()
        });
        for &burst in &BURSTS {
            let seen = through_rx(&mut f, &mut a, &mut pool, 0, 300, burst);
            let expected: Vec<(u32, bool)> =
                (0..300).flat_map(|s| [(s, true), (s, true)]).collect();
            assert_eq!(seen, expected, "burst {burst}");
        }
        assert_eq!(f.fault_stats().rx.duplicated, 300 * BURSTS.len() as u64);
        assert_eq!(pool.in_use(), 0);
    }

    #[test]
    fn reorder_all_swaps_pairs_and_holds_the_odd_one() {
        let (mut f, mut a, mut pool) = rx_setup(FaultConfig {
            seed: 1,
            rx: rates(0.0, 0.0, 0.0, 1.0),
            ..Default::default()
        });
        let seen = through_rx(&mut f, &mut a, &mut pool, 0, 7, 3);
        let seqs: Vec<u32> = seen.iter().map(|s| s.0).collect();
        assert_eq!(seqs, vec![1, 0, 3, 2, 5, 4]);
        assert_eq!(f.held(), 1);
        assert_eq!(f.fault_stats().rx.reordered, 4);
        // The held frame comes out after the next frame, even in a later burst.
        let seen = through_rx(&mut f, &mut a, &mut pool, 7, 1, 256);
        assert_eq!(seen.iter().map(|s| s.0).collect::<Vec<_>>(), vec![7, 6]);
        f.release(&mut pool);
        assert_eq!(pool.in_use(), 0);
    }

    /// Runs 10,000 frames through mixed faults and checks every counter against what came out.
    fn mixed_run(seed: u64) -> (Vec<(u32, bool)>, FaultStats) {
        let (mut f, mut a, mut pool) = rx_setup(FaultConfig {
            seed,
            rx: rates(0.1, 0.1, 0.1, 0.1),
            ..Default::default()
        });
        let mut seen = Vec::new();
        for i in 0..40 {
            seen.extend(through_rx(
                &mut f,
                &mut a,
                &mut pool,
                i * 250,
                250,
                BURSTS[i as usize % 7],
            ));
        }
        let held_units = f.held();
        f.release(&mut pool);
        assert_eq!(pool.in_use(), 0);
        let st = f.fault_stats().rx;
        assert_eq!(st.frames, 10_000);
        // Every missing sequence number was dropped (or is the frame still held at the end).
        let distinct: std::collections::BTreeSet<u32> = seen.iter().map(|s| s.0).collect();
        let held_frames = if held_units > 0 { 1 } else { 0 };
        assert_eq!(10_000 - distinct.len() as u64, st.dropped + held_frames);
        // Every extra copy was a duplicate (a held duplicate pair counts once in held_frames).
        let held_dups = (held_units as u64).saturating_sub(1);
        assert_eq!(
            seen.len() as u64 - distinct.len() as u64,
            st.duplicated - held_dups
        );
        // Every damaged frame was corrupted (a corrupted frame's duplicate is damaged too).
        let mut collapsed: Vec<(u32, bool)> = seen.clone();
        collapsed.dedup_by_key(|s| s.0);
        let damaged = collapsed.iter().filter(|s| !s.1).count() as u64;
        assert!(
            damaged <= st.corrupted && st.corrupted - damaged <= 1,
            "{damaged} vs {}",
            st.corrupted
        );
        // Every descent in the order is one reordered frame released after the next one.
        let descents = collapsed.windows(2).filter(|w| w[1].0 < w[0].0).count() as u64;
        assert_eq!(descents + held_frames, st.reordered);
        (seen, st)
    }

    #[test]
    fn seeded_mixed_faults_match_their_counters_and_repeat_exactly() {
        let (seen1, st1) = mixed_run(42);
        let (seen2, st2) = mixed_run(42);
        assert_eq!(seen1, seen2);
        assert_eq!(st1, st2);
        // About 10 % of each (binomial, 10,000 trials: far inside 8..12 %).
        for (what, n) in [
            ("dropped", st1.dropped),
            ("duplicated", st1.duplicated),
            ("corrupted", st1.corrupted),
        ] {
            assert!((700..=1300).contains(&n), "{what} = {n}");
        }
        let (seen3, _) = mixed_run(43);
        assert_ne!(seen1, seen3);
    }

    #[test]
    fn tx_faults_leave_the_callers_buffers_alone() {
        let (a, mut b) = pair("a", "b");
        let cfg = FaultConfig {
            seed: 9,
            tx: rates(0.0, 1.0, 0.0, 1.0),
            ..Default::default()
        };
        let mut f = Faulty::new(a, cfg).unwrap();
        let mut pool = Pool::new(256);
        let pkts: Vec<u32> = (0..5)
            .map(|s| packet_from_bytes(&mut pool, &frame(s)).unwrap())
            .collect();
        assert_eq!(f.tx_burst(&mut pool, &pkts), 5);
        for (s, &h) in pkts.iter().enumerate() {
            assert_eq!(
                pool.data(h),
                frame(s as u32).as_slice(),
                "caller's frame {s} was modified"
            );
        }
        pool.free_bulk(&pkts);
        assert_eq!(f.held(), 1);
        let mut got = Vec::new();
        b.rx_burst(&mut pool, &mut got, 256);
        let mut bytes = Vec::new();
        let seen: Vec<(u32, bool)> = got
            .iter()
            .map(|&h| {
                pool.copy_out(h, &mut bytes);
                decode(&bytes)
            })
            .collect();
        assert_eq!(seen, vec![(1, false), (0, false), (3, false), (2, false)]);
        pool.free_bulk(&got);
        let st = f.fault_stats().tx;
        assert_eq!((st.corrupted, st.reordered), (5, 3));
        f.release(&mut pool);
        assert_eq!(pool.in_use(), 0);
    }

    #[test]
    fn tx_duplicate_and_reorder_together_free_each_copy_once() {
        let (a, mut b) = pair("a", "b");
        let cfg = FaultConfig {
            seed: 2,
            tx: rates(0.0, 0.0, 1.0, 1.0),
            ..Default::default()
        };
        let mut f = Faulty::new(a, cfg).unwrap();
        let mut pool = Pool::new(64);
        let pkts: Vec<u32> = (0..3)
            .map(|s| packet_from_bytes(&mut pool, &frame(s)).unwrap())
            .collect();
        assert_eq!(f.tx_burst(&mut pool, &pkts), 3);
        pool.free_bulk(&pkts);
        // 0 held (twice), 1 sent twice then 0 twice, 2 held (twice).
        assert_eq!(f.held(), 2);
        let mut got = Vec::new();
        b.rx_burst(&mut pool, &mut got, 256);
        let seqs: Vec<u32> = got.iter().map(|&h| decode(pool.data(h)).0).collect();
        assert_eq!(seqs, vec![1, 1, 0, 0]);
        pool.free_bulk(&got);
        f.release(&mut pool);
        assert_eq!(pool.in_use(), 0);
        assert_eq!(pool.stats().double_frees, 0);
    }

    #[test]
    fn tx_drop_and_duplicate_reach_the_peer_as_counted() {
        let (a, mut b) = pair("a", "b");
        let cfg = FaultConfig {
            seed: 5,
            tx: rates(0.3, 0.0, 0.3, 0.0),
            ..Default::default()
        };
        let mut f = Faulty::new(a, cfg).unwrap();
        let mut pool = Pool::new(2048);
        let mut peer_got = 0u64;
        for (i, &burst) in BURSTS.iter().enumerate() {
            let pkts: Vec<u32> = (0..burst)
                .map(|s| packet_from_bytes(&mut pool, &frame((i * 1000 + s) as u32)).unwrap())
                .collect();
            assert_eq!(f.tx_burst(&mut pool, &pkts), burst);
            pool.free_bulk(&pkts);
            let mut got = Vec::new();
            while b.rx_burst(&mut pool, &mut got, 256) > 0 {}
            peer_got += got.len() as u64;
            pool.free_bulk(&got);
        }
        let st = f.fault_stats().tx;
        assert_eq!(st.frames, BURSTS.iter().sum::<usize>() as u64);
        assert_eq!(peer_got, st.frames - st.dropped + st.duplicated);
        assert_eq!(f.inner().stats().tx_packets, peer_got);
        assert!(st.dropped > 0 && st.duplicated > 0);
        assert_eq!(pool.in_use(), 0);
    }

    #[test]
    fn probabilities_outside_0_1_are_rejected_by_name() {
        let cfg = FaultConfig {
            tx: rates(0.0, 0.0, 1.5, 0.0),
            ..Default::default()
        };
        assert_eq!(
            cfg.validate(),
            Err(FaultError {
                field: "tx.duplicate",
                value: 1.5
            })
        );
        assert!(cfg
            .validate()
            .unwrap_err()
            .to_string()
            .contains("tx.duplicate = 1.5"));
        let cfg = FaultConfig {
            rx: rates(f64::NAN, 0.0, 0.0, 0.0),
            ..Default::default()
        };
        assert_eq!(cfg.validate().unwrap_err().field, "rx.drop");
        let (a, _b) = pair("a", "b");
        assert!(Faulty::new(
            a,
            FaultConfig {
                rx: rates(-0.1, 0.0, 0.0, 0.0),
                ..Default::default()
            }
        )
        .is_err());
    }
}
