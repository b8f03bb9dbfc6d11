//! [`GenMeasurer`]: the lab's [`Measurer`] backed by the real traffic generator on a topology's
//! generator ports.
//!
//! Each [`Measurer::trial`] becomes one [`Generator::run_trial`]: the procedure's [`Load`] is the
//! total over all streams, so each transmitting port gets `load / transmitting ports` (the
//! generator's [`Rate`] is per port). The [`TrialReport`] maps onto the lab's [`TrialResult`]:
//!
//! | TrialResult | from the TrialReport (and the device's counters) |
//! |---|---|
//! | `accounting.intended` | the lab's `load × duration` |
//! | `accounting.sent` | `tx` (frames the generator's ports took in the measured phase) |
//! | `accounting.refused_at_send` | `tx_refused` when the refusal is the device's: on memif always (the generator's transmit ring is the device's receive ring: a NIC would drop them), on veth when the generator was `back_pressured` (refused while it had CPU to spare); otherwise 0 and the refusals are `not_sent` (the tester's own limit). In a back-pressured trial, + the late slots dropped behind a throttled send (`lateness.slots_dropped_blocked`): the device's flow control held the sender |
//! | `accounting.not_sent` | intended − sent − `refused_at_send` (late slots dropped, stall, the tester's refusals) |
//! | `accounting.refused_by_device` | `refused_at_send` + device `rx_dropped` + Σ generator ports' `kernel_tx_dropped` (frames the generator's veth end dropped after the generator sent them because the device's end had a full receive queue: the device's ingress, as a NIC's missed frames; AF_XDP generator ports) |
//! | `accounting.lost_in_device` | device `internal_dropped`, + device `tx_dropped` on veth (its transmit failed inside it) |
//! | `accounting.dropped_at_tester_rx` | Σ generator ports' `rx_dropped` (AF_PACKET `tp_drops`: its receive ring was full), + device `tx_dropped` on memif (the device's transmit ring *is* the generator's receive ring) |
//! | `accounting.received`, `received_frames` | Σ streams' `rx_unique` (duplicates do not hide loss) |
//! | `offered_frames` | `sent + refused_at_send` |
//! | `lateness` | the report's `lateness` (worst lateness, time behind, slots dropped, largest gap) |
//! | `limit` | first that applies: `TesterRx` when the tester's receive side explains some of the loss; `TesterLate` when the late slots dropped while the generator was descheduled (`slots_dropped − slots_dropped_blocked`) > tolerance × intended (before back-pressure: a descheduled generator leaves a backlog in its AF_PACKET ring, which the kernel only moves when the generator kicks it, so the refusals that follow are not the device's); `BackPressure` on a kernel port (not memif) when the generator was back-pressured with refusals + late slots behind throttled sends > tolerance × intended, or when the receive window outlasted the send phase by more than max(tolerance × send phase, 2 ms) with more than max(tolerance × intended, 32) frames received after the send phase while the generator had CPU to spare (≥ 10 % idle; the tester's ring held what the device did not take; achieved rate = received ÷ receive window); `TesterCpu` when the generator says tester-limited otherwise or offered < intended × (1 − tolerance); else `None` |
//! | `rx_window` | `rx_last_seconds − rx_first_seconds` (first to last frame received): [`TrialResult::received_fps`] divides by it when it is longer than the trial |
//! | `tester_limited` | `limit` is a tester-side limit (never for back-pressure) or offered < intended × (1 − tolerance) |
//! | `latency` | the streams' latency combined with [`LatencyStats::combine`] (merged histograms) |
//! | `actual_duration` | `tx_seconds + drain_seconds` |
//!
//! Before every trial the streams pass through the DUT's [`crate::Dut::shape_streams`] (a
//! router's ingress MAC; destinations spread over the table of a scale point).
//!
//! The device counters are the difference of two readings of [`crate::Dut::counters`] taken right
//! before and right after the trial ([`DeviceCounters::delta`]); `None` fields stay `None` (the loss
//! they would explain stays unexplained). Loss is counted against offered frames (RFC 2544 §26.3,
//! RFC 1242 §3.6) and a tester-limited trial is never DUT loss (DESIGN.md). No frame is ever
//! re-offered within a trial (the generator's module doc). Every raw report is kept
//! ([`GenMeasurer::reports`]) with the device counter deltas ([`GenMeasurer::device_counters`])
//! for the results' provenance. Between trials the measurer checks that the DUT and VNF processes
//! still run and that no stop (Ctrl-C) was requested.

use std::collections::BTreeSet;
use std::time::Duration;

use vecswitch_gen::{
    Generator, Latency, LatencyHistogram, Rate, StreamSpec, TrialLength, TrialReport, TrialSpec,
};
use vecswitch_lab::{
    BurstResult, FrameAccounting, LabError, LatencyStats, Load, Measurer, TrialLimit, TrialResult,
};

use crate::dut::counters::DeviceCounters;
use vecswitch_ports::Port;

use crate::error::{Error, Result};
use crate::placement::PlacedProcess;
use crate::topology::Testbed;

/// The real generator as a [`Measurer`].
pub struct GenMeasurer<'a> {
    gen: Generator,
    streams: Vec<StreamSpec>,
    warmup: Duration,
    drain: Duration,
    /// The generator's late threshold (`None`: its default, see [`TrialSpec::late_threshold`]).
    late_threshold: Option<Duration>,
    testbed: Option<&'a Testbed>,
    reports: Vec<TrialReport>,
    /// The device's counter deltas over each trial of `reports` (None: not read).
    counters: Vec<Option<DeviceCounters>>,
    judging: Judging,
}

impl std::fmt::Debug for GenMeasurer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GenMeasurer")
            .field("gen", &self.gen)
            .field("streams", &self.streams.len())
            .field("reports", &self.reports.len())
            .finish()
    }
}

/// The default streams: IPv4/UDP frames of `frame_size` bytes (FCS included) from port 0 to 1,
/// and back from 1 to 0 when `bidirectional` (VSPERF's default traffic).
pub fn default_streams(frame_size: u16, bidirectional: bool) -> Vec<StreamSpec> {
    let mut s = StreamSpec::ipv4(0, 1);
    s.size = vecswitch_gen::SizeSpec::Fixed(frame_size);
    let mut v = vec![s.clone()];
    if bidirectional {
        v.push(s.reversed());
    }
    v
}

/// Like [`default_streams`] for any size specification, e.g. a mix (`SizeSpec::imix()`).
pub fn streams_for(size: &vecswitch_gen::SizeSpec, bidirectional: bool) -> Vec<StreamSpec> {
    let mut s = StreamSpec::ipv4(0, 1);
    s.size = size.clone();
    let mut v = vec![s.clone()];
    if bidirectional {
        v.push(s.reversed());
    }
    v
}

fn map_latency(l: &Latency, h: Option<&LatencyHistogram>) -> LatencyStats {
    LatencyStats {
        min_ns: l.min_ns as f64,
        avg_ns: l.avg_ns,
        max_ns: l.max_ns as f64,
        p50_ns: l.p50_ns as f64,
        p90_ns: l.p90_ns as f64,
        p99_ns: l.p99_ns as f64,
        p99_9_ns: l.p99_9_ns as f64,
        p99_99_ns: l.p99_99_ns as f64,
        jitter_mean_ns: l.jitter_avg_ns,
        jitter_max_ns: l.jitter_max_ns as f64,
        samples: l.samples,
        histogram: h.cloned(),
    }
}

/// How a trial report's shortfalls are judged ([`trial_result_with`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Judging {
    /// Relative shortfall of offered frames tolerated before a trial is tester-limited
    /// (0.001 = the lab's 99.9 % rule).
    pub tolerance: f64,
    /// The generator's transmit ring is the DUT's receive ring (memif): frames the DUT refused
    /// (ring full) are the DUT's ingress loss, as a NIC would drop them, not the tester's limit;
    /// and the DUT's transmit ring is the generator's receive ring (its `tx_dropped` is the
    /// tester's receive side).
    pub backpressure_is_dut: bool,
}

impl Default for Judging {
    fn default() -> Judging {
        Judging {
            tolerance: 1.0 - vecswitch_lab::measurer::TESTER_LIMIT_TOLERANCE,
            backpressure_is_dut: false,
        }
    }
}

/// Maps a generator report onto the lab's trial result (see the module doc's table).
pub fn trial_result(load: Load, duration: Duration, r: &TrialReport) -> TrialResult {
    trial_result_with(load, duration, r, Judging::default())
}

/// [`trial_result`] with explicit [`Judging`] and no device counters.
pub fn trial_result_with(
    load: Load,
    duration: Duration,
    r: &TrialReport,
    j: Judging,
) -> TrialResult {
    trial_result_counted(load, duration, r, j, None)
}

/// Maps a generator report and the device's counter delta over the trial (`dev`) onto the lab's
/// trial result: the frame accounting and the limit label of the module doc's table.
pub fn trial_result_counted(
    load: Load,
    duration: Duration,
    r: &TrialReport,
    j: Judging,
    dev: Option<&DeviceCounters>,
) -> TrialResult {
    let received: u64 = r.streams.iter().map(|s| s.rx.rx_unique).sum();
    let actual = Duration::from_secs_f64((r.tx_seconds + r.drain_seconds).max(0.0));
    let intended = load.frames_in(duration.as_secs_f64());
    let memif = j.backpressure_is_dut;
    let refusal_is_device = memif || r.back_pressured;
    let tol = intended as f64 * j.tolerance;
    // Late slots dropped behind a throttled send (the path refused the previous
    // call) are the device's back-pressure, not the generator being descheduled.
    let late_blocked = r
        .lateness
        .slots_dropped_blocked
        .min(r.lateness.slots_dropped);
    let late_descheduled = r.lateness.slots_dropped - late_blocked;
    let late = late_descheduled as f64 > tol;
    // The receive window (first to last frame received) and the send phase: on a kernel port the
    // generator's transmit ring and socket hold what a flow-controlling path did not take yet;
    // those frames cross after the send phase and stretch the window. A stretch beyond the
    // tolerance (at least 2 ms) carried by more than the tolerance's share of the frames is
    // back-pressure even when nothing was refused (a steady latency shifts both ends of the
    // window and stretches nothing; a generator descheduled in the drain stretches it with
    // the few frames in flight only).
    let window = (r.rx_last_seconds - r.rx_first_seconds).max(0.0);
    let stretch = window - r.tx_seconds;
    // The generator must have had CPU to spare: a generator that could not keep up receives late
    // (its own receive ring lags and the drain catches up), which stretches the window too and
    // is never the device's.
    let stretched = !memif
        && r.idle_fraction() >= vecswitch_gen::engine::BACKPRESSURE_IDLE_MIN
        && r.tx_seconds > 0.0
        && stretch > (r.tx_seconds * j.tolerance).max(0.002)
        && r.rx_after_send as f64 > tol.max(32.0);
    let back_pressure =
        !memif && ((r.back_pressured && (r.tx_refused + late_blocked) as f64 > tol) || stretched);
    // The late slots behind throttled sends are the device's even when the generator was also
    // late for its own reasons: the trial is then `tester late` (inconclusive), but it offered
    // them — counting them not sent made a throttled trial at 1 Mfps read "offered 328 kfps",
    // not a hiccup to repeat but a tester ceiling to search below (issue 25).
    let refused_at_send = if refusal_is_device { r.tx_refused } else { 0 }
        + if back_pressure { late_blocked } else { 0 };
    let not_sent = intended.saturating_sub(r.tx + refused_at_send);
    let dev_tx_dropped = dev.and_then(|d| d.tx_dropped);
    let gen_rx_dropped: u64 = r.ports.iter().map(|p| p.port_stats.rx_dropped).sum();
    let dropped_at_tester_rx = Some(
        gen_rx_dropped
            + if memif {
                dev_tx_dropped.unwrap_or(0)
            } else {
                0
            },
    );
    let lost_in_device = dev.and_then(|d| match (d.internal_dropped, memif) {
        (Some(i), true) => Some(i),
        (i, false) if i.is_some() || dev_tx_dropped.is_some() => {
            Some(i.unwrap_or(0) + dev_tx_dropped.unwrap_or(0))
        }
        _ => None,
    });
    // Frames the generator's kernel interface dropped after sending them: the device's end of
    // the veth had no room (its receive queue, a NAPI ring the device's CPU had not emptied).
    let gen_if_dropped: u64 = r.ports.iter().map(|p| p.kernel_tx_dropped).sum();
    let device_rx_dropped = match (dev.and_then(|d| d.rx_dropped), gen_if_dropped) {
        (Some(d), g) => Some(d + g),
        (None, 0) => None,
        (None, g) => Some(g),
    };
    let acc = FrameAccounting::split(
        intended,
        not_sent,
        r.tx,
        refused_at_send,
        device_rx_dropped,
        lost_in_device,
        dropped_at_tester_rx,
        received,
    );
    let short = (acc.offered() as f64) < intended as f64 * (1.0 - j.tolerance);
    let mut reasons = r.tester_limited_reasons.clone();
    // Lateness beyond the tolerance decides before back-pressure: on veth the kernel moves the
    // AF_PACKET ring's frames toward the device only when the generator kicks it, so a
    // descheduled generator leaves a backlog in its ring (refusals follow) and the device idles
    // meanwhile — neither the refusals nor the rate that came through are the device's then.
    // Only the late slots dropped while the generator was descheduled count here.
    let limit = if acc.dropped_at_tester_rx.unwrap_or(0) > 0 {
        let dropped = acc.dropped_at_tester_rx.unwrap_or(0);
        reasons.push(format!(
            "tester rx: {dropped} of the lost frames were dropped at the tester's receive side"
        ));
        TrialLimit::TesterRx { dropped }
    } else if late {
        TrialLimit::TesterLate {
            behind_ms: r.lateness.max_behind_ns as f64 / 1e6,
            slots_dropped: late_descheduled,
        }
    } else if back_pressure {
        // The device's rate: what came back over the receive window (or the trial, if longer).
        let l = TrialLimit::BackPressure {
            achieved_fps: received as f64 / window.max(duration.as_secs_f64()).max(1e-9),
            refused: r.tx_refused + late_blocked,
        };
        reasons.push(format!(
            "{l} while the generator was {:.0} % idle; {late_blocked} of the refused were \
             schedule slots that fell due while a send was throttled; the frames crossed over \
             {:.1} ms, {:.1} ms beyond the send phase ({} after it)",
            r.idle_fraction() * 100.0,
            window * 1e3,
            stretch * 1e3,
            r.rx_after_send
        ));
        l
    } else if r.tester_limited || short {
        if short && !r.tester_limited {
            reasons.push(format!(
                "offered {} of {} intended frames (more than {:.3} % short)",
                acc.offered(),
                intended,
                j.tolerance * 100.0
            ));
        }
        TrialLimit::TesterCpu {
            not_sent: acc.not_sent,
            idle_percent: r.idle_fraction() * 100.0,
        }
    } else {
        TrialLimit::None
    };
    let mut t = TrialResult::accounted(load, duration, acc, limit, j.tolerance, actual);
    t.limit_reasons = reasons;
    t.lateness = Some(r.lateness);
    if window > 0.0 {
        t.rx_window = Some(Duration::from_secs_f64(window));
    }
    let lat: Vec<LatencyStats> = r
        .streams
        .iter()
        .filter(|s| s.rx.latency.samples > 0)
        .map(|s| map_latency(&s.rx.latency, s.rx.latency_histogram.as_ref()))
        .collect();
    t.latency = LatencyStats::combine(&lat);
    t.device_worker = dev.and_then(|d| {
        d.worker.map(|mut w| {
            w.ring_full_polls = d.rx_ring_full_polls;
            w
        })
    });
    t
}

impl<'a> GenMeasurer<'a> {
    /// A measurer on `ports` sending `streams`.
    pub fn new(ports: Vec<Box<dyn Port>>, streams: Vec<StreamSpec>) -> Result<GenMeasurer<'a>> {
        let gen = Generator::new(ports).map_err(|e| Error::Invalid {
            field: "generator ports",
            value: e.to_string(),
            expected: "1 or 2 ports".into(),
        })?;
        Ok(GenMeasurer {
            gen,
            streams,
            warmup: Duration::ZERO,
            drain: Duration::from_millis(100),
            late_threshold: None,
            testbed: None,
            reports: Vec::new(),
            counters: Vec::new(),
            judging: Judging::default(),
        })
    }

    /// A measurer on `ports` (from [`Testbed::open_generator_ports`], opened before the DUT
    /// started) that pins the calling thread (which runs the trials) to the generator CPU and
    /// checks the testbed's processes before every trial.
    pub fn for_testbed(
        tb: &'a Testbed,
        ports: Vec<Box<dyn Port>>,
        streams: Vec<StreamSpec>,
    ) -> Result<GenMeasurer<'a>> {
        pin_current_thread(tb.wiring().cores.generator)?;
        let mut m = GenMeasurer::new(ports, streams)?;
        m.testbed = Some(tb);
        m.judging.backpressure_is_dut = tb.wiring().topology.link() == crate::topology::Link::Memif;
        Ok(m)
    }

    /// Relative shortfall of offered frames tolerated before a trial is tester-limited (default
    /// 0.001). A shared machine that stalls the generator for a few milliseconds per second needs
    /// more; the offered frames are what loss is counted against either way.
    pub fn tolerance(mut self, t: f64) -> Self {
        self.judging.tolerance = t;
        self
    }

    /// Whether frames refused by the ports are the DUT's loss (memif; see [`trial_result_with`]).
    /// [`GenMeasurer::for_testbed`] sets it from the topology.
    pub fn backpressure_is_dut(mut self, yes: bool) -> Self {
        self.judging.backpressure_is_dut = yes;
        self
    }

    /// How shortfalls are judged (see [`trial_result_with`]).
    pub fn judging(&self) -> Judging {
        self.judging
    }

    /// Traffic sent before each measured phase (MAC learning, caches); not counted.
    pub fn warmup(mut self, d: Duration) -> Self {
        self.warmup = d;
        self
    }

    /// Receive-only time after the last frame before loss is counted.
    pub fn drain(mut self, d: Duration) -> Self {
        self.drain = d;
        self
    }

    /// Schedule slots due longer ago than `d` are dropped as late (METHODOLOGY.md, "When the
    /// tester is late"); the default is the generator's (200 µs). A long threshold lets a
    /// descheduled generator send its backlog in bursts: only for tests whose device takes bursts
    /// far above the load (their answer does not depend on the spacing).
    pub fn late_threshold(mut self, d: Duration) -> Self {
        self.late_threshold = Some(d);
        self
    }

    /// Every raw generator report so far, in order.
    pub fn reports(&self) -> &[TrialReport] {
        &self.reports
    }

    /// The device's counter deltas over each trial of [`GenMeasurer::reports`], in order (`None`:
    /// no testbed, or the device has no counters the lab reads).
    pub fn device_counters(&self) -> &[Option<DeviceCounters>] {
        &self.counters
    }

    /// A reading of the device's counters (None without a testbed, before it started, or when
    /// the driver has none or reading failed).
    fn read_counters(&self) -> Option<DeviceCounters> {
        self.testbed?
            .with_dut(|d| d.counters())
            .and_then(|r| r.ok().flatten())
    }

    /// The testbed, if the measurer was made with [`GenMeasurer::for_testbed`].
    pub fn testbed(&self) -> Option<&Testbed> {
        self.testbed
    }

    /// The streams of the next trial: the measurer's, as the DUT needs them now
    /// ([`crate::Dut::shape_streams`]: a router's ingress MAC, destinations spread over the
    /// table of a scale point).
    fn shaped_streams(&self, load_fps: f64) -> Result<Vec<StreamSpec>, LabError> {
        let mut s = self.streams.clone();
        if let Some(r) = self
            .testbed
            .and_then(|tb| tb.with_dut(|d| d.shape_streams(&mut s)))
        {
            r.map_err(|e| LabError::Trial {
                load_fps,
                reason: e.to_string(),
            })?;
        }
        Ok(s)
    }

    /// The streams each trial sends (the address trials take their frame size).
    pub(crate) fn streams(&self) -> &[StreamSpec] {
        &self.streams
    }

    fn tx_ports(&self) -> usize {
        self.streams
            .iter()
            .map(|s| s.tx_port)
            .collect::<BTreeSet<_>>()
            .len()
            .max(1)
    }

    pub(crate) fn before_trial(&mut self, load_fps: f64) -> Result<(), LabError> {
        if crate::signal::stop_requested() {
            return Err(LabError::Trial {
                load_fps,
                reason: "stop requested (signal)".into(),
            });
        }
        if let Some(tb) = self.testbed {
            tb.check_alive().map_err(|e| LabError::Trial {
                load_fps,
                reason: e.to_string(),
            })?;
        }
        Ok(())
    }

    /// Runs one trial between two readings of the device's counters; returns the report and the
    /// counters' delta.
    pub(crate) fn run(
        &mut self,
        spec: &TrialSpec,
        load_fps: f64,
    ) -> Result<(TrialReport, Option<DeviceCounters>), LabError> {
        let before = self.read_counters();
        let r = self.gen.run_trial(spec).map_err(|e| LabError::Trial {
            load_fps,
            reason: e.to_string(),
        })?;
        let delta = match (before, self.read_counters()) {
            (Some(b), Some(a)) => Some(a.delta(&b)),
            _ => None,
        };
        self.reports.push(r.clone());
        self.counters.push(delta.clone());
        Ok((r, delta))
    }
}

impl Measurer for GenMeasurer<'_> {
    /// RFC 2889 address trials on the same ports ([`crate::dut::l2_address`]).
    fn address_device(
        &mut self,
    ) -> Option<&mut dyn vecswitch_lab::procedures::rfc2889::AddressDevice> {
        Some(self)
    }

    /// `phy2phy-lag`: the tester's member links taken down and up mid-trial ([`crate::lag`]).
    fn link_failover(
        &mut self,
    ) -> Option<&mut dyn vecswitch_lab::procedures::failover::LinkFailover> {
        let lag = self.testbed.is_some_and(|tb| {
            matches!(
                tb.wiring().topology,
                crate::topology::Topology::Phy2PhyLag { .. }
            )
        });
        if lag {
            Some(self)
        } else {
            None
        }
    }

    /// Sets every stream's flow order ([`vecswitch_gen::FlowOrder::Unique`]: the generator
    /// never repeats a tuple; the DUT's `shape_streams` sees the order and shapes for it).
    fn set_unique_flows(&mut self, unique: bool) -> Result<(), LabError> {
        for s in &mut self.streams {
            s.order = if unique {
                vecswitch_gen::FlowOrder::Unique
            } else {
                vecswitch_gen::FlowOrder::Cycle
            };
        }
        Ok(())
    }

    fn trial(&mut self, load: Load, duration: Duration) -> Result<TrialResult, LabError> {
        self.before_trial(load.fps)?;
        if load.fps <= 0.0 || !load.fps.is_finite() || duration.is_zero() {
            // Nothing to offer: an empty trial, not an error of the DUT.
            return Ok(TrialResult::new(load, duration, 0, 0, Duration::ZERO));
        }
        let per_port = load.fps / self.tx_ports() as f64;
        let mut spec = TrialSpec::new(
            self.shaped_streams(load.fps)?,
            Rate::Pps(per_port),
            TrialLength::Duration(duration),
        );
        spec.warmup = self.warmup;
        spec.drain = self.drain;
        spec.tolerance = self.judging.tolerance;
        if let Some(t) = self.late_threshold {
            spec.late_threshold = t;
        }
        let (r, dev) = self.run(&spec, load.fps)?;
        Ok(trial_result_counted(
            load,
            duration,
            &r,
            self.judging,
            dev.as_ref(),
        ))
    }

    /// One continuous stream of `intervals × interval` at `load`, with per-interval statistics
    /// from the generator ([`TrialSpec::interval`]): no gap, warm-up or drain between intervals,
    /// one drain after the last. Each interval is judged as a trial (limit label, frame split) on
    /// its own frames; the device's counters are read around the whole soak only, so an
    /// interval's loss the device would explain stays unexplained there (the raw report and the
    /// soak's counter delta are kept: [`GenMeasurer::reports`], [`GenMeasurer::device_counters`]).
    /// Frames the generator's own receive side dropped cannot be placed in an interval: when
    /// there are any, every interval is labelled `tester rx` with the soak's count.
    fn soak(
        &mut self,
        load: Load,
        interval: Duration,
        intervals: u32,
    ) -> Result<Vec<TrialResult>, LabError> {
        self.before_trial(load.fps)?;
        if interval.is_zero() || intervals == 0 {
            return Err(LabError::invalid(
                "soak interval",
                format!("{interval:?} × {intervals}"),
                "a positive interval and at least one interval",
            ));
        }
        if !(load.fps > 0.0 && load.fps.is_finite()) {
            return Err(LabError::invalid("load_fps", load.fps, "a finite rate > 0"));
        }
        let per_port = load.fps / self.tx_ports() as f64;
        let mut spec = TrialSpec::new(
            self.shaped_streams(load.fps)?,
            Rate::Pps(per_port),
            TrialLength::Duration(interval * intervals),
        );
        spec.warmup = self.warmup;
        spec.drain = self.drain;
        spec.tolerance = self.judging.tolerance;
        spec.interval = Some(interval);
        if let Some(t) = self.late_threshold {
            spec.late_threshold = t;
        }
        let (r, _) = self.run(&spec, load.fps)?;
        if r.intervals.len() != intervals as usize {
            return Err(LabError::Trial {
                load_fps: load.fps,
                reason: format!(
                    "the generator reported {} intervals of the {intervals} asked for \
                     (the send phase ended early: {})",
                    r.intervals.len(),
                    r.tester_limited_reasons.join("; ")
                ),
            });
        }
        let gen_rx_dropped: u64 = r.ports.iter().map(|p| p.port_stats.rx_dropped).sum();
        Ok((0..r.intervals.len())
            .map(|i| {
                let last = i + 1 == r.intervals.len();
                let x = interval_report(&r, i, interval, last);
                let mut t = trial_result_counted(load, interval, &x, self.judging, None);
                if gen_rx_dropped > 0 {
                    t.limit = TrialLimit::TesterRx {
                        dropped: gen_rx_dropped,
                    };
                    t.tester_limited = true;
                    t.limit_reasons.push(format!(
                        "tester rx: the generator's receive side dropped {gen_rx_dropped} frames \
                         during the soak (not attributable to an interval)"
                    ));
                }
                t
            })
            .collect())
    }

    /// Sends `frames` split evenly over the transmitting ports (rounded down to a multiple of
    /// their count, at least one per port) at the generator's maximum rate (RFC 9004 §5.3).
    fn burst(&mut self, frames: u64) -> Result<BurstResult, LabError> {
        // A burst has no intended rate (line rate); errors report it as load 0 and say "burst".
        self.before_trial(0.0).map_err(|e| burst_error(frames, e))?;
        let n = self.tx_ports() as u64;
        let per_port = (frames / n).max(1);
        let mut spec = TrialSpec::new(
            self.shaped_streams(0.0)
                .map_err(|e| burst_error(frames, e))?,
            Rate::Max,
            TrialLength::Count(per_port),
        );
        spec.warmup = self.warmup;
        spec.drain = self.drain;
        let (r, _) = self.run(&spec, 0.0).map_err(|e| burst_error(frames, e))?;
        let intended = per_port * n;
        let received: u64 = r.streams.iter().map(|s| s.rx.rx_unique).sum();
        // No frame is re-offered: on memif the frames the device's ring refused are offered and
        // lost (a NIC drops them at line rate); elsewhere a refusal is the tester's shortfall.
        let offered = if self.judging.backpressure_is_dut {
            r.tx + r.tx_refused
        } else {
            r.tx
        };
        // The burst's send time is the measured phase's (first frame to last frame placed):
        // RFC 9004's procedure compares the rate it gives with the line rate it assumes.
        let mut b = BurstResult::new(
            intended,
            offered,
            received,
            Duration::from_secs_f64(r.tx_seconds.max(0.0)),
        );
        b.tester_limited |= r.tester_limited;
        Ok(b)
    }
}

/// The report of interval `i` of a soak trial `r` as if it were a trial of its own, for
/// [`trial_result_counted`]: the interval's frames sent, refused and received (charged to the
/// interval they were sent in) and its late slots; the trial's back-pressure verdict and idle
/// share. The generator's own receive drops cannot be placed in an interval: they are left out
/// here and the soak marks every interval with them instead ([`GenMeasurer::soak`]).
fn interval_report(r: &TrialReport, i: usize, interval: Duration, last: bool) -> TrialReport {
    let iv = &r.intervals[i];
    let mut x = r.clone();
    x.intervals = Vec::new();
    for (s, is) in x.streams.iter_mut().zip(&iv.streams) {
        s.tx = is.tx;
        s.tx_refused = is.tx_refused;
        s.rx = is.rx.clone();
        s.lost = is.tx.saturating_sub(is.rx.rx_unique);
    }
    x.tx = iv.streams.iter().map(|s| s.tx).sum();
    x.rx = iv.streams.iter().map(|s| s.rx.rx_unique).sum();
    x.tx_refused = iv.streams.iter().map(|s| s.tx_refused).sum();
    x.lost = x.tx.saturating_sub(x.rx);
    x.lateness.slots_dropped = iv.slots_dropped;
    // Which of an interval's late slots fell behind a throttled send is not recorded per
    // interval: all of them count as the generator's own lateness (inconclusive, never the
    // device's loss). The receive window is the trial's, not the interval's: none.
    x.lateness.slots_dropped_blocked = 0;
    x.rx_first_seconds = 0.0;
    x.rx_last_seconds = 0.0;
    x.rx_after_send = 0;
    x.tx_seconds = interval.as_secs_f64();
    if !last {
        x.drain_seconds = 0.0;
    }
    for p in x.ports.iter_mut() {
        p.port_stats.rx_dropped = 0;
    }
    x.tester_limited = false;
    x.tester_limited_reasons.clear();
    x
}

fn burst_error(frames: u64, e: LabError) -> LabError {
    match e {
        LabError::Trial { load_fps, reason } => LabError::Trial {
            load_fps,
            reason: format!("burst of {frames} frames: {reason}"),
        },
        other => other,
    }
}

/// Pins the calling thread to `cpu` (the generator runs on the thread that calls the trials).
pub fn pin_current_thread(cpu: usize) -> Result<()> {
    let mut set = nix::sched::CpuSet::new();
    set.set(cpu).map_err(|source| Error::Sys {
        what: format!("CPU {cpu} for the generator"),
        source,
    })?;
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set).map_err(|source| {
        Error::Sys {
            what: format!("pinning the generator thread to CPU {cpu}"),
            source,
        }
    })
}

/// The placement record of the generator: this process, with the CPUs the calling thread may use.
pub fn generator_placement() -> PlacedProcess {
    let cpus = std::fs::read_to_string("/proc/thread-self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .map(|l| l.trim().to_string())
        })
        .into_iter()
        .collect();
    PlacedProcess {
        role: "generator".into(),
        name: std::env::current_exe()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "generator".into()),
        pid: std::process::id(),
        cpus,
        note: "generator thread of this process".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vecswitch_ports::loopback;

    /// A real report of 1,000 frames over a loopback pair (10 kfps, 100 ms), to edit into cases.
    fn report_1000() -> (Load, Duration, TrialReport) {
        let (a, b) = loopback::pair("a", "b");
        let mut m =
            GenMeasurer::new(vec![Box::new(a), Box::new(b)], default_streams(64, false)).unwrap();
        let (load, d) = (Load::fps(10_000.0), Duration::from_millis(100));
        m.trial(load, d).unwrap();
        let mut r = m.reports()[0].clone();
        // The schedule as intended, whatever the machine's load did to this run.
        r.tx = 1_000;
        r.streams[0].rx.rx_unique = 1_000;
        r.lateness = Default::default();
        r.tester_limited = false;
        r.tester_limited_reasons.clear();
        r.back_pressured = false;
        for p in r.ports.iter_mut() {
            p.port_stats.rx_dropped = 0;
        }
        (load, d, r)
    }

    fn memif() -> Judging {
        Judging {
            backpressure_is_dut: true,
            ..Judging::default()
        }
    }

    #[test]
    fn refused_frames_are_device_ingress_loss_on_memif() {
        // 900 sent, 100 refused by the device's ring, 880 came back.
        let (load, d, mut r) = report_1000();
        (r.tx, r.tx_refused, r.streams[0].rx.rx_unique) = (900, 100, 880);
        let t = trial_result_with(load, d, &r, memif());
        let a = t.accounting.clone().unwrap();
        assert_eq!(
            (a.intended, a.sent, a.refused_at_send, a.not_sent),
            (1_000, 900, 100, 0)
        );
        assert_eq!((a.refused_by_device, a.unexplained), (100, 20));
        assert_eq!((t.offered_frames, t.received_frames), (1_000, 880));
        assert!(!t.tester_limited && t.limit == TrialLimit::None, "{t:?}");
        assert_eq!(t.lost_frames(), 120);
        // The same report judged as a veth link with a busy generator: the refusals are the
        // tester's own limit (not sent), the trial is tester-limited, no loss is charged.
        r.tester_limited = true;
        let v = trial_result(load, d, &r);
        assert!(v.tester_limited);
        assert!(
            matches!(v.limit, TrialLimit::TesterCpu { not_sent: 100, .. }),
            "{:?}",
            v.limit
        );
        assert_eq!(v.offered_frames, 900);
    }

    #[test]
    fn refusals_of_an_idle_generator_on_veth_are_back_pressure() {
        let (load, d, mut r) = report_1000();
        (r.tx, r.tx_refused, r.streams[0].rx.rx_unique) = (700, 300, 700);
        r.back_pressured = true;
        let t = trial_result(load, d, &r);
        assert!(t.back_pressured() && !t.tester_limited, "{t:?}");
        assert_eq!((t.offered_frames, t.received_frames), (1_000, 700));
        assert!(
            !t.within(0.0),
            "a back-pressured trial does not pass the intended load"
        );
        match t.limit {
            TrialLimit::BackPressure {
                achieved_fps,
                refused,
            } => assert_eq!((achieved_fps.round(), refused), (7_000.0, 300)),
            ref l => panic!("{l:?}"),
        }
        assert!(t.limit_reasons.iter().any(|m| m.contains("back-pressure")));
    }

    #[test]
    fn lateness_beyond_tolerance_decides_before_back_pressure() {
        // 700 sent, 200 refused, 100 slots dropped as late: the generator was descheduled, its
        // ring's backlog caused the refusals: inconclusive, not the device's limit.
        let (load, d, mut r) = report_1000();
        (r.tx, r.tx_refused, r.not_sent, r.streams[0].rx.rx_unique) = (700, 200, 100, 700);
        r.lateness.slots_dropped = 100;
        r.back_pressured = true;
        r.tester_limited = true;
        let t = trial_result(load, d, &r);
        assert!(
            matches!(t.limit, TrialLimit::TesterLate { .. }) && t.tester_limited,
            "{t:?}"
        );
        // Late slots behind throttled sends were offered even then: a back-pressured trial the
        // generator was also late in offered what its schedule asked less its own lateness,
        // so a search repeats it as a hiccup instead of taking the device's rate as the
        // tester's ceiling (issue 25).
        r.lateness.slots_dropped = 5_100;
        r.lateness.slots_dropped_blocked = 5_000;
        (r.tx, r.tx_refused, r.not_sent) = (700, 200, 5_100);
        let t = trial_result(Load::fps(60_000.0), d, &r);
        assert!(matches!(t.limit, TrialLimit::TesterLate { .. }), "{t:?}");
        assert_eq!(t.offered_frames, 5_900, "{t:?}");
        assert!(t.tester_hiccup(), "{t:?}");
        r.lateness.slots_dropped_blocked = 0;
        // Within the tolerance, the same refusals are back-pressure: the load fails.
        r.lateness.slots_dropped = 1;
        (r.tx, r.not_sent) = (799, 1);
        r.tester_limited = false;
        let t = trial_result(load, d, &r);
        assert!(t.back_pressured() && !t.tester_limited, "{t:?}");
        assert!(!t.within(0.0));
    }

    /// The known-answer timeline scaled to 0.1 s (issue 7 item 1): 3,750 intended (37.5 kfps)
    /// through a 25 kfps shaper on veth; the generator's ring held 164 frames at the end of the
    /// send phase, which crossed over the next 6.56 ms.
    fn shaped_report() -> (Load, Duration, TrialReport) {
        let (_, d, mut r) = report_1000();
        let load = Load::fps(37_500.0);
        (r.tx, r.tx_refused, r.not_sent) = (2_664, 1_036, 50);
        r.streams[0].rx.rx_unique = 2_664;
        r.back_pressured = true;
        r.tx_seconds = 0.1;
        (r.rx_first_seconds, r.rx_last_seconds, r.rx_after_send) = (0.000_05, 0.106_61, 164);
        r.lateness.slots_dropped = 50;
        r.lateness.slots_dropped_blocked = 50;
        (load, d, r)
    }

    #[test]
    fn a_back_pressured_trial_is_rated_over_its_receive_window() {
        let (load, d, r) = shaped_report();
        let t = trial_result(load, d, &r);
        assert!(t.back_pressured() && !t.tester_limited, "{t:?}");
        // Over the send phase the shaper would read 26,640 fps (+6.6 %); over the window 25,000.
        assert!(
            (t.received_fps() - 25_000.0).abs() < 25.0,
            "{}",
            t.received_fps()
        );
        match t.limit {
            TrialLimit::BackPressure {
                achieved_fps,
                refused,
            } => {
                assert!((achieved_fps - 25_000.0).abs() < 25.0, "{achieved_fps}");
                assert_eq!(refused, 1_086);
            }
            ref l => panic!("{l:?}"),
        }
        // The 50 late slots fell due while the sends were throttled: refused by the device's
        // flow control, not "tester late", not "not sent".
        let a = t.accounting.clone().unwrap();
        assert_eq!(
            (a.refused_at_send, a.not_sent, a.unexplained),
            (1_086, 0, 0)
        );
        assert!(!t.within(0.0));
        assert!(
            t.limit_reasons.iter().any(|m| m.contains("throttled")),
            "{:?}",
            t.limit_reasons
        );
    }

    #[test]
    fn late_slots_of_a_descheduled_generator_stay_tester_late() {
        // The same trial, but the 50 late slots came after sends the path took in full: the
        // generator was descheduled, its backlog caused the refusals — inconclusive.
        let (load, d, mut r) = shaped_report();
        r.lateness.slots_dropped_blocked = 0;
        r.lateness.max_behind_ns = 4_000_000;
        let t = trial_result(load, d, &r);
        assert_eq!(
            t.limit,
            TrialLimit::TesterLate {
                behind_ms: 4.0,
                slots_dropped: 50
            }
        );
        assert!(t.tester_limited);
        assert_eq!(t.accounting.unwrap().not_sent, 50);
    }

    #[test]
    fn a_stretched_receive_window_without_refusals_is_back_pressure() {
        // 10,160 intended at 10.16 kfps for 1 s; nothing refused, nothing lost, but 160 frames
        // crossed after the send phase (the tester's ring held them) and the window is 1.016 s:
        // the device forwarded 10,000 fps. The load fails by its rate shortfall.
        let (_, _, mut r) = report_1000();
        let (load, d) = (Load::fps(10_160.0), Duration::from_secs(1));
        (r.tx, r.tx_refused, r.streams[0].rx.rx_unique) = (10_160, 0, 10_160);
        r.tx_seconds = 1.0;
        (r.busy_seconds, r.idle_seconds) = (0.5, 0.5);
        (r.rx_first_seconds, r.rx_last_seconds, r.rx_after_send) = (0.000_1, 1.016_1, 160);
        let t = trial_result(load, d, &r);
        assert!(t.back_pressured() && !t.tester_limited, "{t:?}");
        assert_eq!(t.lost_frames(), 0);
        assert!(
            (t.received_fps() - 10_000.0).abs() < 1.0,
            "{}",
            t.received_fps()
        );
        assert!(!t.within(0.0) && !t.within(0.01) && t.within(0.02));
        // A generator with no CPU to spare receives late itself (its receive ring lags, the
        // drain catches up): the same window is not the device's back-pressure.
        (r.busy_seconds, r.idle_seconds) = (0.98, 0.02);
        let t = trial_result(load, d, &r);
        assert_eq!(t.limit, TrialLimit::None, "{t:?}");
        (r.busy_seconds, r.idle_seconds) = (0.5, 0.5);
        // A generator descheduled for 10 ms in the drain stretches the window with the few
        // frames in flight only: not back-pressure, the load passes.
        (r.rx_last_seconds, r.rx_after_send) = (1.010, 3);
        let t = trial_result(load, d, &r);
        assert_eq!(t.limit, TrialLimit::None, "{t:?}");
        assert!(t.within(0.0));
        // On memif the generator's ring is the device's receive ring: frames it takes late are
        // the device's latency (a NIC's deep ring), never the tester's back-pressure.
        (r.rx_last_seconds, r.rx_after_send) = (1.016_1, 160);
        let t = trial_result_with(load, d, &r, memif());
        assert_eq!(t.limit, TrialLimit::None, "{t:?}");
        assert!(t.within(0.0));
    }

    #[test]
    fn device_counters_split_the_loss() {
        // memif: 1,000 sent, 980 received. The device counted 3 receive drops, 5 inside, and 2
        // transmit failures toward the generator (its ring): the tester's receive side.
        let (load, d, mut r) = report_1000();
        r.streams[0].rx.rx_unique = 980;
        let dev = DeviceCounters {
            rx_dropped: Some(3),
            internal_dropped: Some(5),
            tx_dropped: Some(2),
            ..Default::default()
        };
        let t = trial_result_counted(load, d, &r, memif(), Some(&dev));
        let a = t.accounting.clone().unwrap();
        assert_eq!(a.refused_by_device, 3);
        assert_eq!(
            (a.lost_in_device, a.dropped_at_tester_rx),
            (Some(5), Some(2))
        );
        assert_eq!(a.unexplained, 10);
        // Loss at the tester's receive side makes the trial tester-limited.
        assert_eq!(t.limit, TrialLimit::TesterRx { dropped: 2 });
        assert!(t.tester_limited);
        // On veth the device's transmit failures are inside the device; no device counters: all
        // of the loss is unexplained, none is guessed.
        let t = trial_result_counted(load, d, &r, Judging::default(), Some(&dev));
        let a = t.accounting.clone().unwrap();
        assert_eq!(
            (a.lost_in_device, a.dropped_at_tester_rx),
            (Some(7), Some(0))
        );
        assert!(!t.tester_limited && t.limit == TrialLimit::None);
        let a = trial_result(load, d, &r).accounting.unwrap();
        assert_eq!((a.lost_in_device, a.unexplained), (None, 20));
        // The generator's own receive ring drops (AF_PACKET tp_drops) are the tester's too.
        r.ports[1].port_stats.rx_dropped = 4;
        let t = trial_result(load, d, &r);
        assert_eq!(t.limit, TrialLimit::TesterRx { dropped: 4 });
    }

    #[test]
    fn frames_the_generators_veth_dropped_are_the_devices_ingress() {
        // veth, AF_XDP generator: 1,000 sent, 970 received; the generator's end of the veth
        // dropped 25 after sending them (the device's end had a full receive queue), the
        // device's own counters explain 2 more. 3 stay unexplained.
        let (load, d, mut r) = report_1000();
        r.streams[0].rx.rx_unique = 970;
        r.ports[0].kernel_tx_dropped = 25;
        let dev = DeviceCounters {
            rx_dropped: Some(2),
            ..Default::default()
        };
        let t = trial_result_counted(load, d, &r, Judging::default(), Some(&dev));
        let a = t.accounting.clone().unwrap();
        assert_eq!((a.refused_by_device, a.unexplained), (27, 3));
        assert!(!t.tester_limited, "{t:?}");
        // Without device counters the generator's side still places its 25.
        let a = trial_result(load, d, &r).accounting.unwrap();
        assert_eq!((a.refused_by_device, a.unexplained), (25, 5));
    }

    #[test]
    fn late_slots_make_the_trial_tester_late() {
        let (load, d, mut r) = report_1000();
        r.tx = 990;
        r.streams[0].rx.rx_unique = 990;
        r.not_sent = 10;
        r.lateness.slots_dropped = 10;
        r.lateness.max_behind_ns = 3_500_000;
        let t = trial_result(load, d, &r);
        assert_eq!(
            t.limit,
            TrialLimit::TesterLate {
                behind_ms: 3.5,
                slots_dropped: 10
            }
        );
        assert!(t.tester_limited);
        assert_eq!(t.lateness.map(|l| l.slots_dropped), Some(10));
        let a = t.accounting.clone().unwrap();
        assert_eq!(
            (a.not_sent, a.sent, a.received, a.unexplained),
            (10, 990, 990, 0)
        );
        assert_eq!(
            t.lost_frames(),
            0,
            "frames never sent are never the device's loss"
        );
    }

    #[test]
    fn soak_is_one_stream_whose_intervals_add_up_to_the_totals() {
        let (a, b) = loopback::pair("a", "b");
        let mut m = GenMeasurer::new(vec![Box::new(a), Box::new(b)], default_streams(64, false))
            .unwrap()
            .tolerance(0.5);
        let ivs = m
            .soak(Load::fps(10_000.0), Duration::from_millis(100), 4)
            .unwrap();
        assert_eq!(ivs.len(), 4);
        assert_eq!(m.reports().len(), 1, "one stream, one generator trial");
        let r = &m.reports()[0];
        assert_eq!(r.intervals.len(), 4);
        let offered: u64 = ivs.iter().map(|t| t.offered_frames).sum();
        let received: u64 = ivs.iter().map(|t| t.received_frames).sum();
        assert_eq!(offered, r.tx + r.tx_refused);
        assert_eq!(received, r.streams[0].rx.rx_unique);
        // Sequence numbers run on across the boundaries: each interval starts where the last
        // ended.
        let s: Vec<_> = r.intervals.iter().map(|i| &i.streams[0]).collect();
        for w in s.windows(2) {
            assert_eq!(w[0].first_seq + w[0].tx, w[1].first_seq);
        }
        for t in &ivs {
            assert_eq!(t.intended_frames, 1_000);
            assert_eq!(t.intended_duration, Duration::from_millis(100));
        }
        // Bad input is an error naming the field.
        let e = m
            .soak(Load::fps(10_000.0), Duration::ZERO, 4)
            .unwrap_err()
            .to_string();
        assert!(e.contains("soak interval"), "{e}");
    }

    #[test]
    fn tolerance_decides_a_small_shortfall() {
        let (a, b) = loopback::pair("a", "b");
        let mut m =
            GenMeasurer::new(vec![Box::new(a), Box::new(b)], default_streams(64, false)).unwrap();
        let (load, d) = (Load::fps(10_000.0), Duration::from_millis(100));
        m.trial(load, d).unwrap();
        let mut r = m.reports()[0].clone();
        // Pretend 0.5 % of the intended frames were not sent, and the generator did not object.
        let intended = load.frames_in(d.as_secs_f64());
        r.tx = intended - intended / 200;
        r.tester_limited = false;
        let strict = Judging::default();
        let loose = Judging {
            tolerance: 0.01,
            backpressure_is_dut: false,
        };
        r.lateness = Default::default();
        r.back_pressured = false;
        r.tx_refused = 0;
        for p in r.ports.iter_mut() {
            p.port_stats.rx_dropped = 0;
        }
        r.streams[0].rx.rx_unique = r.tx;
        assert!(trial_result_with(load, d, &r, strict).tester_limited);
        assert!(!trial_result_with(load, d, &r, loose).tester_limited);
    }
}
