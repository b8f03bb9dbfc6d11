//! End-to-end runs of the generator over in-process loopback ports: what it sends comes back, and
//! a deterministic "mangling" DUT (drop, duplicate, swap, inject foreign frames) is counted exactly.

use std::time::Duration;

use vecswitch_buffer::Pool;
use vecswitch_gen::{
    Field, FieldMode, FieldRange, Generator, Rate, SizeSpec, StreamSpec, TrialLength, TrialSpec,
    VlanSpec,
};
use vecswitch_ports::loopback::{self, packet_from_bytes, LoopbackPort};
use vecswitch_ports::{LinkState, Port, PortStats};

fn boxed(p: LoopbackPort) -> Box<dyn Port> {
    Box::new(p)
}

#[test]
fn unidirectional_count_trial_receives_everything() {
    let (a, b) = loopback::pair("a", "b");
    let mut g = Generator::new(vec![boxed(a), boxed(b)]).unwrap();
    let mut s = StreamSpec::ipv4(0, 1);
    s.size = SizeSpec::imix();
    s.flows = 100;
    s.ranges = vec![FieldRange {
        field: Field::SrcIp,
        count: 100,
        mode: FieldMode::Increment,
    }];
    let mut spec = TrialSpec::new(vec![s], Rate::Pps(200_000.0), TrialLength::Count(6_000));
    // Counts and content, not timing: a loaded machine may deschedule the sender for milliseconds,
    // and the default late threshold would drop those slots (tested on simulated clocks below).
    spec.late_threshold = Duration::from_secs(60);
    let r = g.run_trial(&spec).unwrap();
    assert_eq!(r.tx, 6_000);
    assert_eq!(r.rx, 6_000);
    assert_eq!((r.lost, r.duplicated, r.reordered, r.foreign), (0, 0, 0, 0));
    let st = &r.streams[0];
    assert_eq!(st.rx.rx, 6_000);
    assert_eq!(st.rx.latency.samples, 6_000);
    assert!(
        st.rx.latency.min_ns <= st.rx.latency.p50_ns
            && st.rx.latency.p50_ns <= st.rx.latency.max_ns
    );
    // Bytes as RFC 2544 counts them (with FCS): 500 IMIX periods of 7×64 + 4×570 + 1518.
    assert_eq!(st.tx_bytes, 500 * (7 * 64 + 4 * 570 + 1518));
    assert_eq!(st.rx.rx_bytes, st.tx_bytes);
    // The port saw the same frames on the link, without FCS.
    assert_eq!(r.ports[0].port_stats.tx_packets, 6_000);
    assert_eq!(r.ports[0].port_stats.tx_bytes, st.tx_bytes - 6_000 * 4);
    assert_eq!(r.ports[1].rx_ours, 6_000);
    let json = serde_json::to_string(&r).unwrap();
    assert!(json.contains("\"tester_limited\""));
    assert!(json.contains("\"p99_99_ns\""));
}

#[test]
fn bidirectional_duration_trial_with_warmup_and_qinq() {
    let (a, b) = loopback::pair("a", "b");
    let mut g = Generator::new(vec![boxed(a), boxed(b)]).unwrap();
    let mut s = StreamSpec::ipv4(0, 1);
    s.vlans = vec![VlanSpec::dot1ad(10), VlanSpec::dot1q(20)];
    let rev = s.reversed();
    let mut spec = TrialSpec::new(
        vec![s, rev],
        Rate::Pps(20_000.0),
        TrialLength::Duration(Duration::from_millis(200)),
    );
    spec.warmup = Duration::from_millis(50);
    let r = g.run_trial(&spec).unwrap();
    assert_eq!(r.streams.len(), 2);
    for st in &r.streams {
        // rate × duration frames were intended per port; whatever was sent arrived.
        assert!(st.tx > 0 && st.tx <= 4_000, "{}", st.tx);
        assert_eq!(st.rx.rx_unique, st.tx);
        assert_eq!(st.lost, 0);
    }
    assert_eq!(r.streams[0].tx_port, 0);
    assert_eq!(r.streams[1].tx_port, 1);
    // Warm-up frames came back but were counted apart, not as ours or foreign.
    assert!(r.ports.iter().all(|p| p.rx_warmup > 0));
    assert_eq!(r.foreign, 0);
}

#[test]
fn jumbo_frames_cross_chained_buffers() {
    let (a, b) = loopback::pair("a", "b");
    let mut g = Generator::new(vec![boxed(a), boxed(b)]).unwrap();
    let mut s = StreamSpec::ipv4(0, 1);
    s.size = SizeSpec::parse("9000:1,64:1").unwrap();
    let r = g
        .run_trial(&TrialSpec::new(vec![s], Rate::Max, TrialLength::Count(500)))
        .unwrap();
    assert_eq!((r.tx, r.rx, r.lost, r.foreign), (500, 500, 0, 0));
    assert_eq!(r.streams[0].rx.rx_bytes, 250 * 9000 + 250 * 64);
}

/// What a [`LoopDut`] does with the frames it is given to send: it sends through the loopback
/// port what it likes and returns how many of the given frames it took.
type Tx = Box<dyn FnMut(&mut LoopbackPort, &mut Pool, &[u32]) -> usize + Send>;

/// A DUT between the generator's two ports over a loopback port `inner`: it receives what `inner`
/// receives and sends as its `tx` says (the DUTs below differ only in that).
struct LoopDut {
    name: &'static str,
    inner: LoopbackPort,
    tx: Tx,
}

impl Port for LoopDut {
    fn name(&self) -> &str {
        self.name
    }
    fn rx_burst(&mut self, pool: &mut Pool, out: &mut Vec<u32>, max: usize) -> usize {
        self.inner.rx_burst(pool, out, max)
    }
    fn tx_burst(&mut self, pool: &mut Pool, pkts: &[u32]) -> usize {
        (self.tx)(&mut self.inner, pool, pkts)
    }
    fn stats(&self) -> PortStats {
        self.inner.stats()
    }
    fn clear_stats(&mut self) {
        self.inner.clear_stats()
    }
    fn link(&self) -> LinkState {
        self.inner.link()
    }
}

/// Sends `bytes` as one frame through `inner`, which must take it.
fn push(inner: &mut LoopbackPort, pool: &mut Pool, bytes: &[u8]) {
    let h = packet_from_bytes(pool, bytes).unwrap();
    assert_eq!(inner.tx_burst(pool, &[h]), 1);
    pool.free(h);
}

/// A DUT with deterministic misbehaviour, by position of the frame in what it is given to send:
/// drops every 10th, duplicates every 7th, swaps each 25th with the next one, and sends a foreign
/// (non-IP) frame after every 100th.
fn mangler(inner: LoopbackPort) -> LoopDut {
    let mut count = 0u64;
    let mut held: Option<Vec<u8>> = None;
    let mut scratch: Vec<u8> = Vec::new();
    let tx = move |inner: &mut LoopbackPort, pool: &mut Pool, pkts: &[u32]| {
        for &h in pkts {
            count += 1;
            let i = count;
            let mut bytes = std::mem::take(&mut scratch);
            pool.copy_out(h, &mut bytes);
            if i.is_multiple_of(10) {
                // dropped
            } else if i % 25 == 1 && i > 1 {
                // hold frame i (i ≡ 1 mod 25) and send it after the next one
                held = Some(bytes.clone());
            } else {
                push(inner, pool, &bytes);
                if let Some(held) = held.take() {
                    push(inner, pool, &held);
                }
                if i.is_multiple_of(7) {
                    push(inner, pool, &bytes);
                }
            }
            if i.is_multiple_of(100) {
                let mut foreign = vec![0xffu8; 60];
                foreign[12] = 0x08;
                foreign[13] = 0x06; // ARP
                push(inner, pool, &foreign);
            }
            scratch = bytes;
        }
        pkts.len()
    };
    LoopDut {
        name: "mangler",
        inner,
        tx: Box::new(tx),
    }
}

#[test]
fn analyzer_counts_loss_duplicates_reordering_and_foreign_exactly() {
    let (a, b) = loopback::pair("a", "b");
    let mut g = Generator::new(vec![Box::new(mangler(a)), boxed(b)]).unwrap();
    let n = 1_000u64;
    let r = g
        .run_trial(&TrialSpec::new(
            vec![StreamSpec::ipv4(0, 1)],
            Rate::Max,
            TrialLength::Count(n),
        ))
        .unwrap();
    // Frame positions 1..=n; sequence number = position − 1.
    let dropped = (1..=n).filter(|i| i % 10 == 0).count() as u64;
    let held = (1..=n)
        .filter(|i| i % 10 != 0 && i % 25 == 1 && *i > 1)
        .count() as u64;
    let dups = (1..=n)
        .filter(|i| i % 10 != 0 && !(i % 25 == 1 && *i > 1) && i % 7 == 0)
        .count() as u64;
    // A held frame is sent after its successor, unless the successor is dropped (then after the next
    // one sent). Either way it arrives after a higher sequence number: one reordered frame each.
    let st = &r.streams[0];
    assert_eq!(st.tx, n);
    assert_eq!(st.lost, dropped);
    assert_eq!(st.rx.rx_unique, n - dropped);
    assert_eq!(st.rx.duplicated, dups);
    assert_eq!(st.rx.reordered, held);
    assert_eq!(r.foreign, n / 100);
    assert_eq!(
        r.ports[1].foreign_reasons,
        vec![("not-ip".to_string(), n / 100)]
    );
}

#[test]
fn refused_frames_are_never_resent_and_count_as_back_pressure() {
    // A 64-frame queue towards port b, which nobody reads: the queue fills, then the port refuses
    // every frame. On a simulated clock (100 ns per read) the generator is mostly idle at 100 kfps,
    // so the refusals are the path throttling it (back-pressure), not its own limit.
    let (a, b) = loopback::pair_with_capacity("a", "b", 64).unwrap();
    let mut g = Generator::new(vec![boxed(a)])
        .unwrap()
        .with_clock(stepping(100));
    let mut spec = TrialSpec::new(
        vec![StreamSpec::ipv4(0, 0)],
        Rate::Pps(100_000.0),
        TrialLength::Count(1_000),
    );
    spec.stall_timeout = Duration::from_millis(100);
    spec.drain = Duration::from_millis(10);
    let r = g.run_trial(&spec).unwrap();
    assert_eq!(r.tx, 64, "exactly the queue's capacity was accepted");
    // Every other slot was offered once and refused: no retry, nothing left unsent.
    assert_eq!(
        (r.tx_refused, r.not_sent, r.intended),
        (936, 0, Some(1_000))
    );
    assert_eq!(r.streams[0].tx_refused, 936);
    assert_eq!(r.ports[0].tx_refused, 936);
    assert!(r.back_pressured, "idle {:.3}", r.idle_fraction());
    assert!(r.idle_fraction() >= vecswitch_gen::engine::BACKPRESSURE_IDLE_MIN);
    assert!(!r.tester_limited, "{:?}", r.tester_limited_reasons);
    assert_eq!(b.rx_pending(), 64);
    // A refused frame consumes no sequence number: b holds 0..64 exactly, and the stream's
    // receive analysis would see no gap in what entered the device.
    let mut pool = Pool::new(128);
    let mut out = Vec::new();
    let mut b = b;
    assert_eq!(b.rx_burst(&mut pool, &mut out, 128), 64);
    for (i, &h) in out.iter().enumerate() {
        let sig = vecswitch_gen::rx::find_signature(pool.data(h)).unwrap();
        assert_eq!(sig.seq as usize, i);
    }
}

#[test]
fn refusals_that_never_end_stop_the_trial_as_a_stall() {
    // The same unread queue, 1 s of 1,000 fps and a 100 ms stall timeout: after 64 frames every
    // frame is refused, so the generator stops; the slots it never reached are not sent.
    let (a, _b) = loopback::pair_with_capacity("a", "b", 64).unwrap();
    let mut g = Generator::new(vec![boxed(a)])
        .unwrap()
        .with_clock(stepping(1_000));
    let mut spec = TrialSpec::new(
        vec![StreamSpec::ipv4(0, 0)],
        Rate::Pps(1_000.0),
        TrialLength::Count(1_000),
    );
    spec.stall_timeout = Duration::from_millis(100);
    spec.drain = Duration::from_millis(1);
    let r = g.run_trial(&spec).unwrap();
    assert_eq!(r.tx, 64);
    assert!(r.tx_refused > 0 && r.not_sent > 0, "{r:?}");
    assert_eq!(r.tx + r.tx_refused + r.not_sent, 1_000);
    assert!(r.tester_limited);
    assert!(
        r.tester_limited_reasons
            .iter()
            .any(|m| m.contains("refused every frame")),
        "{:?}",
        r.tester_limited_reasons
    );
}

#[test]
fn link_down_is_an_error_naming_the_port() {
    let (a, b) = loopback::pair("a", "b");
    drop(b);
    let mut g = Generator::new(vec![boxed(a)]).unwrap();
    let mut spec = TrialSpec::new(
        vec![StreamSpec::ipv4(0, 0)],
        Rate::Max,
        TrialLength::Count(10),
    );
    spec.link_timeout = Duration::from_millis(20);
    let e = g.run_trial(&spec).unwrap_err().to_string();
    assert!(e.contains("port a"), "{e}");
}

#[test]
fn config_errors_name_the_field() {
    let (a, b) = loopback::pair("a", "b");
    let mut g = Generator::new(vec![boxed(a), boxed(b)]).unwrap();
    let spec = TrialSpec::new(
        vec![StreamSpec::ipv4(0, 2)],
        Rate::Max,
        TrialLength::Count(10),
    );
    let e = g.run_trial(&spec).unwrap_err().to_string();
    assert!(e.contains("rx_port") && e.contains("0..2"), "{e}");
    assert!(Generator::new(vec![]).is_err());
}

#[test]
fn calibration_over_a_loopback_pair_reports_each_size() {
    let (a, b) = loopback::pair("a", "b");
    let mut g = Generator::new(vec![boxed(a), boxed(b)]).unwrap();
    let rep = vecswitch_gen::calibrate(
        &mut g,
        &StreamSpec::ipv4(0, 1),
        &[64, 1518],
        Duration::from_millis(50),
        Rate::Pps(10_000.0),
    )
    .unwrap();
    assert_eq!(rep.points.len(), 2);
    assert_eq!((rep.tx_port.as_str(), rep.rx_port.as_str()), ("a", "b"));
    for p in &rep.points {
        assert!(p.max_tx_fps > 0.0 && p.max_rx_fps > 0.0);
        assert!(p.floor_latency.samples > 0);
        assert!(p.floor_latency.min_ns <= p.floor_latency.p50_ns);
        assert!(p.floor_latency.p50_ns <= p.floor_latency.max_ns);
    }
    assert_eq!(rep.points[1].size, 1518);
}

/// A DUT that always keeps the last frame of each burst and sends it with the next burst: at the
/// end of a trial one frame stays inside, and it comes out in the next trial.
fn hold_last(inner: LoopbackPort) -> LoopDut {
    let mut held: Option<Vec<u8>> = None;
    let tx = move |inner: &mut LoopbackPort, pool: &mut Pool, pkts: &[u32]| {
        let mut frames: Vec<Vec<u8>> = held.take().into_iter().collect();
        for &h in pkts {
            let mut v = Vec::new();
            pool.copy_out(h, &mut v);
            frames.push(v);
        }
        held = frames.pop();
        for f in frames {
            push(inner, pool, &f);
        }
        pkts.len()
    };
    LoopDut {
        name: "hold-last",
        inner,
        tx: Box::new(tx),
    }
}

#[test]
fn late_frames_of_an_earlier_trial_are_stale_not_received() {
    let (a, b) = loopback::pair("a", "b");
    let mut g = Generator::new(vec![Box::new(hold_last(a)), boxed(b)]).unwrap();
    let mut spec = TrialSpec::new(
        vec![StreamSpec::ipv4(0, 1)],
        Rate::Max,
        TrialLength::Count(1_000),
    );
    spec.drain = Duration::from_millis(20);
    let first = g.run_trial(&spec).unwrap();
    assert_eq!(
        (first.tx, first.lost, first.ports[1].rx_stale),
        (1_000, 1, 0)
    );
    // The frame held from trial 1 (sequence 999) arrives during trial 2, where sequence 999 is sent
    // (and held) again: without the stale check it would hide trial 2's loss.
    let second = g.run_trial(&spec).unwrap();
    assert_eq!(second.ports[1].rx_stale, 1);
    assert_eq!((second.tx, second.rx, second.lost), (1_000, 999, 1));
    assert_eq!(second.streams[0].rx.duplicated, 0);
}

#[test]
fn slow_rates_are_not_mistaken_for_a_stall() {
    // 20 frames/s: 50 ms between frames, far longer than the 5 ms stall timeout, yet nothing is
    // refused, so all frames go out and the trial is not tester-limited by a stall.
    let (a, b) = loopback::pair("a", "b");
    let mut g = Generator::new(vec![boxed(a), boxed(b)]).unwrap();
    let mut spec = TrialSpec::new(
        vec![StreamSpec::ipv4(0, 1)],
        Rate::Pps(20.0),
        TrialLength::Count(4),
    );
    spec.stall_timeout = Duration::from_millis(5);
    spec.drain = Duration::from_millis(20);
    let r = g.run_trial(&spec).unwrap();
    assert_eq!((r.tx, r.rx), (4, 4), "{:?}", r.tester_limited_reasons);
    assert!(
        !r.tester_limited_reasons
            .iter()
            .any(|m| m.contains("refused every frame")),
        "{:?}",
        r.tester_limited_reasons
    );
}

/// A simulated clock that advances a fixed step every time it is read: the engine's schedule,
/// accounting and tester-limited decision become deterministic.
struct SteppingClock {
    t: std::sync::atomic::AtomicU64,
    step: u64,
}

impl vecswitch_gen::Clock for SteppingClock {
    fn now_ns(&self) -> u64 {
        self.t
            .fetch_add(self.step, std::sync::atomic::Ordering::Relaxed)
    }
}

fn stepping(step: u64) -> Box<SteppingClock> {
    Box::new(SteppingClock {
        t: std::sync::atomic::AtomicU64::new(0),
        step,
    })
}

#[test]
fn engine_offers_exactly_the_intended_load_on_a_simulated_clock() {
    // 1 Mfps for 20 ms of simulated time, the clock moving 100 ns per read: the generator is
    // faster than the schedule, so it must offer exactly 20,000 frames at 1 Mfps.
    let (a, b) = loopback::pair("a", "b");
    let mut g = Generator::new(vec![boxed(a), boxed(b)])
        .unwrap()
        .with_clock(stepping(100));
    let mut s = StreamSpec::ipv4(0, 1);
    s.size = SizeSpec::imix();
    let spec = TrialSpec::new(
        vec![s],
        Rate::Pps(1e6),
        TrialLength::Duration(Duration::from_millis(20)),
    );
    let r = g.run_trial(&spec).unwrap();
    assert_eq!(r.tx, 20_000);
    assert_eq!(r.rx, 20_000);
    let p = &r.ports[0];
    assert_eq!(p.intended_fps, Some(1e6));
    assert!(
        (p.offered_fps - 1e6).abs() / 1e6 < 0.001,
        "{}",
        p.offered_fps
    );
    assert!(!r.tester_limited, "{:?}", r.tester_limited_reasons);
    // Percent of line rate on the same clock: 1 % of 10G at 64 B = 148,809.5 fps → 2,976 frames.
    let (a, b) = loopback::pair("a", "b");
    let mut g = Generator::new(vec![boxed(a), boxed(b)])
        .unwrap()
        .with_clock(stepping(100));
    let spec = TrialSpec::new(
        vec![StreamSpec::ipv4(0, 1)],
        Rate::parse("1%@10G").unwrap(),
        TrialLength::Duration(Duration::from_millis(20)),
    );
    let r = g.run_trial(&spec).unwrap();
    assert_eq!(r.tx, 2_976);
    assert!(!r.tester_limited, "{:?}", r.tester_limited_reasons);
}

#[test]
fn engine_flags_a_generator_slower_than_the_schedule() {
    // The clock moves 20 µs per read: the generator cannot keep up with 10 Mfps (a batch of at most
    // 32 frames per ~3 reads), so it offers less than intended and says so.
    let (a, b) = loopback::pair("a", "b");
    let mut g = Generator::new(vec![boxed(a), boxed(b)])
        .unwrap()
        .with_clock(stepping(20_000));
    let spec = TrialSpec::new(
        vec![StreamSpec::ipv4(0, 1)],
        Rate::Pps(1e7),
        TrialLength::Duration(Duration::from_millis(10)),
    );
    let r = g.run_trial(&spec).unwrap();
    assert!(r.tx < 100_000 && r.tx > 0, "{}", r.tx);
    assert_eq!(r.rx, r.tx);
    assert!(r.tester_limited);
    // The backlog was never sent as catch-up: the late slots were dropped and counted.
    assert!(r.lateness.slots_dropped > 0, "{:?}", r.lateness);
    assert_eq!(r.tx + r.tx_refused + r.not_sent, 100_000);
    assert!(r.lateness.max_behind_ns > 200_000, "{:?}", r.lateness);
    assert!(r.idle_fraction() < 0.01, "{}", r.idle_fraction());
    assert!(
        r.tester_limited_reasons
            .iter()
            .any(|m| m.starts_with("tester late")),
        "{:?}",
        r.tester_limited_reasons
    );
    assert!(r.ports[0].offered_fps < 1e7 * 0.999);
    // Loss is zero: a tester-limited trial does not turn the shortfall into DUT loss.
    assert_eq!(r.lost, 0);
}

/// A simulated clock that advances `step` per read and jumps `pause` once at `at` (the generator
/// descheduled for `pause`).
struct PausingClock {
    t: std::sync::atomic::AtomicU64,
    step: u64,
    at: u64,
    pause: u64,
}

impl vecswitch_gen::Clock for PausingClock {
    fn now_ns(&self) -> u64 {
        use std::sync::atomic::Ordering::Relaxed;
        let t = self.t.fetch_add(self.step, Relaxed);
        if t < self.at && t + self.step >= self.at {
            self.t.fetch_add(self.pause, Relaxed);
        }
        t
    }
}

#[test]
fn a_10ms_pause_is_counted_as_late_never_sent_as_a_burst() {
    // 1 Mfps for 30 ms (30,000 slots) with a 10 ms pause at 10 ms; 100 ns per clock read keeps the
    // generator ahead of the schedule otherwise. The ~9,800 slots more than 200 µs late are
    // dropped (not sent, not offered); nothing is lost; the trial is tester-limited, saying why.
    let (a, b) = loopback::pair("a", "b");
    let clock = PausingClock {
        t: std::sync::atomic::AtomicU64::new(0),
        step: 100,
        at: 10_000_000,
        pause: 10_000_000,
    };
    let mut g = Generator::new(vec![boxed(a), boxed(b)])
        .unwrap()
        .with_clock(Box::new(clock));
    let mut spec = TrialSpec::new(
        vec![StreamSpec::ipv4(0, 1)],
        Rate::Pps(1e6),
        TrialLength::Duration(Duration::from_millis(30)),
    );
    spec.drain = Duration::from_millis(1);
    let r = g.run_trial(&spec).unwrap();
    let l = r.lateness;
    assert_eq!(l.late_events, 1, "{l:?}");
    // The pause is 10 ms; the slots within the 200 µs threshold before "now" are kept.
    assert!((9_700..=9_900).contains(&l.slots_dropped), "{l:?}");
    assert!(l.max_behind_ns >= 9_900_000, "{l:?}");
    assert!(l.max_gap_ns >= 10_000_000, "{l:?}");
    assert_eq!(r.tx + r.tx_refused + r.not_sent, 30_000);
    assert_eq!(r.not_sent, l.slots_dropped);
    assert_eq!((r.rx, r.lost), (r.tx, 0));
    assert!(r.tester_limited);
    assert!(
        r.tester_limited_reasons[0].starts_with("tester late")
            && r.tester_limited_reasons[0].contains("slots dropped"),
        "{:?}",
        r.tester_limited_reasons
    );
}

/// Records in `seen` the (source port, destination port) of every frame it sends on, for the
/// unique-flow test.
fn tuple_recorder(
    inner: LoopbackPort,
    seen: std::sync::Arc<std::sync::Mutex<Vec<(u16, u16)>>>,
) -> LoopDut {
    let mut scratch: Vec<u8> = Vec::new();
    let tx = move |inner: &mut LoopbackPort, pool: &mut Pool, pkts: &[u32]| {
        // Read the tuples before the loopback takes the buffers.
        let mut tuples = Vec::with_capacity(pkts.len());
        for &h in pkts {
            pool.copy_out(h, &mut scratch);
            let f = &scratch;
            tuples.push((
                u16::from_be_bytes([f[34], f[35]]),
                u16::from_be_bytes([f[36], f[37]]),
            ));
        }
        let n = inner.tx_burst(pool, pkts);
        seen.lock().unwrap().extend_from_slice(&tuples[..n]);
        n
    };
    LoopDut {
        name: "recorder",
        inner,
        tx: Box::new(tx),
    }
}

/// Unique flows: no tuple repeats within a trial, between its warm-up and measured phase, or
/// across trials; a trial that would run past the space is refused naming it.
#[test]
fn unique_flows_never_repeat_across_phases_and_trials() {
    let (a, b) = loopback::pair("a", "b");
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let rec = tuple_recorder(a, seen.clone());
    let mut g = Generator::new(vec![Box::new(rec) as Box<dyn Port>, boxed(b)]).unwrap();
    let mut s = StreamSpec::ipv4(0, 1);
    s.order = vecswitch_gen::FlowOrder::Unique;
    s.ranges = vec![
        FieldRange {
            field: Field::SrcPort,
            count: 1000,
            mode: FieldMode::Increment,
        },
        FieldRange {
            field: Field::DstPort,
            count: 10,
            mode: FieldMode::Increment,
        },
    ];
    let mut spec = TrialSpec::new(vec![s], Rate::Pps(50_000.0), TrialLength::Count(3_000));
    spec.late_threshold = Duration::from_secs(60);
    spec.warmup = Duration::from_millis(20);
    let mut sent = 0;
    for _ in 0..2 {
        let r = g.run_trial(&spec).unwrap();
        assert_eq!((r.tx, r.rx, r.lost), (3_000, 3_000, 0));
        sent += r.tx;
    }
    let seen = seen.lock().unwrap().clone();
    let distinct: std::collections::HashSet<_> = seen.iter().collect();
    // Warm-up frames too: everything the port took, each a new tuple.
    assert!(
        seen.len() as u64 > sent,
        "{} frames, {sent} measured",
        seen.len()
    );
    assert_eq!(distinct.len(), seen.len(), "a tuple repeated");
    assert_eq!(g.unique_tuples_used(), seen.len() as u64);
    // 10,000 tuples: a third trial of 3000 measured frames no longer fits.
    spec.warmup = Duration::ZERO;
    spec.length = TrialLength::Count(10_000 - seen.len() as u64 + 1);
    let e = g.run_trial(&spec).unwrap_err().to_string();
    assert!(e.contains("unique flows") && e.contains("10000"), "{e}");
}
