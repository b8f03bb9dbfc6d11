//! The [`Measurer`] trait — one trial at a load for a duration, one back-to-back burst, or one
//! continuous soak stream read per interval — and what it returns: [`TrialResult`] (with its
//! [`FrameAccounting`] and [`TrialLimit`]), [`BurstResult`], [`LatencyStats`].
//!
//! Every procedure in [`crate::procedures`] talks only to a `Measurer`, so the same search runs
//! against the real generator and DUT or against a [`crate::sim::SimDut`] with a known answer.
//!
//! Frame accounting follows RFC 2544 §26.3 / RFC 1242 §3.6: loss is counted against the frames the
//! tester actually **offered**, not the frames it intended to send. When the tester could not offer
//! the intended load the trial is **tester-limited**: the procedures treat it as inconclusive for
//! that load and never report it as loss of the DUT.
//!
//! **Where every frame went** ([`FrameAccounting`], METHODOLOGY.md): every intended frame is
//! either *not sent* (the tester did not send it: late schedule slots dropped, stall, its own CPU),
//! or *offered*. An offered frame is received, or lost at one of four places:
//!
//! | loss | where | counts as |
//! |---|---|---|
//! | `refused_by_device` | the device's receive side refused it (ring full as the tester sent it, or the device's own receive drops) — as a NIC drops it | device loss |
//! | `lost_in_device` | dropped inside the device (its own counters) | device loss |
//! | `dropped_at_tester_rx` | the tester's receive side dropped what the device sent (socket ring full, the device's transmit toward the tester refused) | **tester-limited** ([`TrialLimit::TesterRx`]), not device loss |
//! | `unexplained` | nobody counted it | device loss (counted against the device, as RFC 2544 §26.3 does, but labelled) |
//!
//! `offered − received = refused_by_device + lost_in_device + dropped_at_tester_rx + unexplained`.
//! A trial's [`TrialLimit`] says what limited it; `tester_limited` is true for every tester-side
//! limit and **false for [`TrialLimit::BackPressure`]**: when the path throttled a sender that had
//! CPU to spare, the refused frames were offered and count as the device's loss, so the procedures
//! see the load fail (the achieved rate is the device's flow-controlled rate).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::procedures::failover::LinkFailover;
use crate::procedures::rfc2889::AddressDevice;
use crate::{LabError, Load};
pub use vecswitch_gen::{LatencyHistogram, Lateness};

/// A trial is tester-limited when it offered fewer than this fraction of the intended frames.
pub const TESTER_LIMIT_TOLERANCE: f64 = 0.999;

/// After a tester-limited trial, searches retry this fraction below the rate the tester achieved:
/// a software generator's achievable rate jitters by several percent from trial to trial (measured
/// on the lab's memif topology), so retrying just below it would chase the ceiling down step by step.
pub const TESTER_CEILING_MARGIN: f64 = 0.05;

/// A tester-limited trial that still offered at least this fraction of its intended frames was
/// spoiled by a *hiccup* of the tester (descheduled for a few milliseconds, its receive side
/// behind), not stopped by its capacity: the searches repeat it ([`trial_past_hiccups`]).
pub const TESTER_HICCUP_FRACTION: f64 = 0.90;

/// How many times a search repeats a trial that a tester hiccup spoiled before it takes the load
/// as beyond the tester's reach (METHODOLOGY.md, "When the tester is late").
pub const TESTER_HICCUP_RETRIES: usize = 2;

/// One trial of a search at `load`, repeated while a tester hiccup spoiled it
/// ([`TrialResult::tester_hiccup`]), at most [`TESTER_HICCUP_RETRIES`] more times. Returns every
/// attempt in order; the last one decides, the earlier ones are tester-limited and so say nothing
/// about the device (the searches' classifications skip them, the results keep them).
///
/// Without the repeat every hiccup lowered a search's ceiling to what the tester achieved less
/// [`TESTER_CEILING_MARGIN`], and a search whose trials were late one time in two walked down to
/// wherever the tester happened to keep time: in `make demo` (2026-11-24, idle host) vecswitch
/// over veth at 1518 B went 565 → 215 → 201 → 187 → 176 → 165 → 155 kfps, every trial lossless
/// and every one but the last `tester late` by 1–4 ms, and OVS's search ended at 15 kfps.
pub fn trial_past_hiccups<M: Measurer + ?Sized>(
    m: &mut M,
    load: Load,
    duration: Duration,
) -> Result<Vec<TrialResult>, LabError> {
    let mut attempts = vec![m.trial(load, duration)?];
    while attempts.len() <= TESTER_HICCUP_RETRIES
        && attempts.last().is_some_and(TrialResult::tester_hiccup)
    {
        attempts.push(m.trial(load, duration)?);
    }
    Ok(attempts)
}

/// Drives traffic through a DUT and counts what comes back.
pub trait Measurer {
    /// Offers `load` for `duration` and reports what was intended, offered and received.
    fn trial(&mut self, load: Load, duration: Duration) -> Result<TrialResult, LabError>;

    /// Sends `frames` frames back-to-back (minimum inter-frame gap, i.e. at line rate) and reports
    /// how many came back and how fast they actually left (RFC 2544 §26.4, RFC 9004 §5.3).
    fn burst(&mut self, frames: u64) -> Result<BurstResult, LabError>;

    /// Offers `load` as **one continuous stream** for `intervals` consecutive intervals of
    /// `interval` each, and reports every interval as a [`TrialResult`] (in order, exactly
    /// `intervals` of them). The contract:
    ///
    /// - the stream is not stopped, restarted or re-paced at interval boundaries: no gap, no
    ///   warm-up, no drain between intervals (one drain after the last);
    /// - interval `i`'s `offered_frames` are the frames sent during `[i × interval, (i + 1) ×
    ///   interval)` of the stream, its `received_frames` those of them that came back, whenever
    ///   they arrived (a frame is charged to the interval it was sent in), its latency the
    ///   latency of those frames;
    /// - `intended_load` is `load` and `intended_duration` is `interval` for every interval, so
    ///   an interval the tester could not fill is tester-limited as a trial would be.
    ///
    /// The default says the measurer cannot: separate trials with gaps between them are not a
    /// soak (the device gets a rest at every boundary), so no fallback is offered.
    fn soak(
        &mut self,
        load: Load,
        interval: Duration,
        intervals: u32,
    ) -> Result<Vec<TrialResult>, LabError> {
        let _ = (interval, intervals);
        Err(LabError::Trial {
            load_fps: load.fps,
            reason: "this measurer cannot run a continuous soak stream (Measurer::soak)".into(),
        })
    }

    /// The same ports and device driven by per-address learning and test frames, for the RFC 2889
    /// address tests ([`crate::procedures::rfc2889`]); `None` (the default) when it cannot.
    fn address_device(&mut self) -> Option<&mut dyn AddressDevice> {
        None
    }

    /// The same ports and device with a link aggregation group whose member links the measurer
    /// can take down and up mid-trial, for the failover procedure
    /// ([`crate::procedures::failover`]); `None` (the default) when it cannot.
    fn link_failover(&mut self) -> Option<&mut dyn LinkFailover> {
        None
    }

    /// Switches the traffic's flows to **unique** (`true`: no frame repeats a 5-tuple, within a
    /// trial or across trials, so every frame opens a new session at a stateful device — the
    /// new-session rate, `flow_mode = "unique"`; [`vecswitch_gen::FlowOrder::Unique`]) or back
    /// to repeating flows (`false`). The default says the measurer cannot: a repeated flow would
    /// hit a session already made, and no fallback would measure new sessions.
    fn set_unique_flows(&mut self, unique: bool) -> Result<(), LabError> {
        if !unique {
            return Ok(());
        }
        Err(LabError::invalid(
            "flow_mode",
            "unique",
            "a measurer whose generator can send unique flows (the testbed's; not this one)",
        ))
    }
}

impl<M: Measurer + ?Sized> Measurer for &mut M {
    fn trial(&mut self, load: Load, duration: Duration) -> Result<TrialResult, LabError> {
        (**self).trial(load, duration)
    }
    fn burst(&mut self, frames: u64) -> Result<BurstResult, LabError> {
        (**self).burst(frames)
    }
    fn soak(
        &mut self,
        load: Load,
        interval: Duration,
        intervals: u32,
    ) -> Result<Vec<TrialResult>, LabError> {
        (**self).soak(load, interval, intervals)
    }
    fn address_device(&mut self) -> Option<&mut dyn AddressDevice> {
        (**self).address_device()
    }
    fn link_failover(&mut self) -> Option<&mut dyn LinkFailover> {
        (**self).link_failover()
    }
    fn set_unique_flows(&mut self, unique: bool) -> Result<(), LabError> {
        (**self).set_unique_flows(unique)
    }
}

/// Latency and delay-variation statistics of one trial, in nanoseconds.
///
/// Timestamp points (METHODOLOGY.md, "Latency timestamp points"): transmit time read right before
/// the port's transmit call, receive time right after its receive call returns; the generator's own
/// latency floor (calibration, no device) is reported beside, never silently subtracted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyStats {
    pub min_ns: f64,
    pub avg_ns: f64,
    pub max_ns: f64,
    pub p50_ns: f64,
    pub p90_ns: f64,
    pub p99_ns: f64,
    pub p99_9_ns: f64,
    pub p99_99_ns: f64,
    /// Mean of |delay(i) − delay(i−1)| over consecutive received frames of a stream
    /// (RFC 4689 §3.2.5 "Jitter").
    pub jitter_mean_ns: f64,
    /// Largest such difference.
    pub jitter_max_ns: f64,
    /// Frames the statistics were computed from.
    pub samples: u64,
    /// Every delay, as a histogram (the generator keeps it; simulated devices do not). With it,
    /// [`LatencyStats::combine`] reads percentiles from the merged histogram.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histogram: Option<LatencyHistogram>,
}

impl LatencyStats {
    /// Combines the statistics of several trials (or streams) as RFC 2544 §26.2 reports latency
    /// over repeated trials: averages are averaged (weighted by samples), min is the minimum, max
    /// the maximum, jitter max the maximum. Percentiles are read from the **merged histogram** when
    /// every input carries one (the result then carries the merged histogram too); otherwise
    /// (simulated devices) they are sample-weighted means of the per-trial percentiles, an
    /// approximation, and the result has no histogram.
    pub fn combine(all: &[LatencyStats]) -> Option<LatencyStats> {
        if all.is_empty() {
            return None;
        }
        let merged = if all.iter().all(|s| s.histogram.is_some()) {
            LatencyHistogram::merge(all.iter().filter_map(|s| s.histogram.as_ref()))
        } else {
            None
        };
        let total: f64 = all.iter().map(|s| s.samples.max(1) as f64).sum();
        let wmean = |f: fn(&LatencyStats) -> f64| {
            all.iter()
                .map(|s| f(s) * s.samples.max(1) as f64)
                .sum::<f64>()
                / total
        };
        let min_ns = all.iter().map(|s| s.min_ns).fold(f64::INFINITY, f64::min);
        let max_ns = all.iter().map(|s| s.max_ns).fold(0.0, f64::max);
        // A percentile of the merged histogram, kept within the exact extremes (the histogram's
        // buckets are 0.1 % wide).
        let pct = |q: f64, fallback: f64| match &merged {
            Some(h) => (h.value_at_quantile(q) as f64).clamp(min_ns, max_ns.max(min_ns)),
            None => fallback,
        };
        Some(LatencyStats {
            min_ns,
            avg_ns: wmean(|s| s.avg_ns),
            max_ns,
            p50_ns: pct(0.5, wmean(|s| s.p50_ns)),
            p90_ns: pct(0.9, wmean(|s| s.p90_ns)),
            p99_ns: pct(0.99, wmean(|s| s.p99_ns)),
            p99_9_ns: pct(0.999, wmean(|s| s.p99_9_ns)),
            p99_99_ns: pct(0.9999, wmean(|s| s.p99_99_ns)),
            jitter_mean_ns: wmean(|s| s.jitter_mean_ns),
            jitter_max_ns: all.iter().map(|s| s.jitter_max_ns).fold(0.0, f64::max),
            samples: all.iter().map(|s| s.samples).sum(),
            histogram: merged.as_ref().map(LatencyHistogram::encode),
        })
    }
}

/// Where every frame of a trial went (module doc). Counts over the measured phase.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrameAccounting {
    /// Frames the intended load would send in the intended duration.
    pub intended: u64,
    /// Intended frames the tester did not send (late slots dropped, stall, refused by its own
    /// saturated transmit path): not offered.
    pub not_sent: u64,
    /// Frames the tester's port took.
    pub sent: u64,
    /// Frames the tester's transmit call offered and the path refused (never re-offered), when the
    /// refusal is the device's (memif receive ring full, back-pressure); part of `refused_by_device`.
    pub refused_at_send: u64,
    /// Device ingress loss: `refused_at_send` + the device's own receive-side drops.
    pub refused_by_device: u64,
    /// Dropped inside the device, from its own counters (`None`: the device has none the lab reads).
    pub lost_in_device: Option<u64>,
    /// Dropped at the tester's receive side (its socket ring, the device's transmit toward it
    /// refused); `None` when unknown.
    pub dropped_at_tester_rx: Option<u64>,
    /// Frames received back (unique, in the expected stream).
    pub received: u64,
    /// Offered, not received and not counted by anybody.
    pub unexplained: u64,
}

impl FrameAccounting {
    /// Splits the loss: `offered − received` is attributed, in this order, to the device's
    /// ingress (`refused_at_send + device_rx_dropped`), the device's inside, the tester's receive
    /// side, and the rest is unexplained. Counters that claim more than the loss left (a device
    /// counts other traffic too) are capped, so the parts always add up to the loss.
    #[allow(clippy::too_many_arguments)]
    pub fn split(
        intended: u64,
        not_sent: u64,
        sent: u64,
        refused_at_send: u64,
        device_rx_dropped: Option<u64>,
        lost_in_device: Option<u64>,
        dropped_at_tester_rx: Option<u64>,
        received: u64,
    ) -> FrameAccounting {
        let offered = sent + refused_at_send;
        let mut left = offered.saturating_sub(received);
        let mut take = |n: u64| {
            let t = n.min(left);
            left -= t;
            t
        };
        let refused_by_device = take(refused_at_send + device_rx_dropped.unwrap_or(0));
        let lost_in_device = lost_in_device.map(&mut take);
        let dropped_at_tester_rx = dropped_at_tester_rx.map(&mut take);
        FrameAccounting {
            intended,
            not_sent,
            sent,
            refused_at_send,
            refused_by_device,
            lost_in_device,
            dropped_at_tester_rx,
            received,
            unexplained: left,
        }
    }

    /// Frames the tester attempted to put on the device: `sent + refused_at_send`.
    pub fn offered(&self) -> u64 {
        self.sent + self.refused_at_send
    }

    /// Loss charged to the device: ingress refusals, inside, and unexplained.
    pub fn device_loss(&self) -> u64 {
        self.refused_by_device + self.lost_in_device.unwrap_or(0) + self.unexplained
    }

    /// Whether any intended frame was not received.
    pub fn has_loss(&self) -> bool {
        self.received < self.intended
    }
}

/// What limited a trial (module doc). Every variant but [`TrialLimit::None`] and
/// [`TrialLimit::BackPressure`] is a tester-side limit: the trial is `tester_limited`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum TrialLimit {
    /// Nothing: the tester offered the intended load and received what came back.
    #[default]
    None,
    /// The tester fell behind its schedule: `slots_dropped` late slots not sent, `behind_ms` at
    /// worst.
    TesterLate { behind_ms: f64, slots_dropped: u64 },
    /// The tester's own CPU was the limit (refusals while it had no idle time, or frames it could
    /// not attempt).
    TesterCpu { not_sent: u64, idle_percent: f64 },
    /// The tester's receive side dropped frames the device sent.
    TesterRx { dropped: u64 },
    /// The path throttled a tester that had CPU to spare: `achieved_fps` is the device's
    /// flow-controlled rate. Not tester-limited; the refused frames are the device's loss.
    BackPressure { achieved_fps: f64, refused: u64 },
}

impl TrialLimit {
    /// Whether the limit is on the tester's side (the trial says nothing about the device).
    pub fn is_tester_side(&self) -> bool {
        !matches!(self, TrialLimit::None | TrialLimit::BackPressure { .. })
    }

    /// A short label for tables: `-`, `tester late`, `tester CPU`, `tester rx`, `back-pressure`.
    pub fn label(&self) -> &'static str {
        match self {
            TrialLimit::None => "-",
            TrialLimit::TesterLate { .. } => "tester late",
            TrialLimit::TesterCpu { .. } => "tester CPU",
            TrialLimit::TesterRx { .. } => "tester rx",
            TrialLimit::BackPressure { .. } => "back-pressure",
        }
    }
}

impl std::fmt::Display for TrialLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TrialLimit::None => write!(f, "not limited"),
            TrialLimit::TesterLate {
                behind_ms,
                slots_dropped,
            } => write!(
                f,
                "tester late: {behind_ms:.3} ms behind, {slots_dropped} slots dropped"
            ),
            TrialLimit::TesterCpu {
                not_sent,
                idle_percent,
            } => write!(
                f,
                "tester CPU: {not_sent} frames not sent, {idle_percent:.1} % idle"
            ),
            TrialLimit::TesterRx { dropped } => {
                write!(
                    f,
                    "tester rx: {dropped} frames dropped at the tester's receive side"
                )
            }
            TrialLimit::BackPressure {
                achieved_fps,
                refused,
            } => write!(
                f,
                "back-pressure: the device flow-controlled the tester to {achieved_fps:.0} fps \
                 ({refused} frames refused)"
            ),
        }
    }
}

/// What one trial measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialResult {
    /// The load the procedure asked for.
    pub intended_load: Load,
    /// The duration the procedure asked for.
    pub intended_duration: Duration,
    /// Frames the intended load would send in the intended duration.
    pub intended_frames: u64,
    /// Frames the tester actually put on the wire.
    pub offered_frames: u64,
    /// Frames the tester received back (correct, in the expected stream).
    pub received_frames: u64,
    /// The tester could not offer the intended load (offered < intended × [`TESTER_LIMIT_TOLERANCE`]).
    /// Such a trial says nothing about the DUT at the intended load.
    pub tester_limited: bool,
    /// Latency statistics when the tester measured them.
    pub latency: Option<LatencyStats>,
    /// Wall time the trial took (for simulated DUTs: simulated time).
    pub actual_duration: Duration,
    /// Where every frame went, when the measurer knows (the generator-backed one does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accounting: Option<FrameAccounting>,
    /// What limited the trial.
    #[serde(default)]
    pub limit: TrialLimit,
    /// The measurer's reasons for `tester_limited` / `limit`, in words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limit_reasons: Vec<String>,
    /// How late the tester was against its pacing schedule (METHODOLOGY.md, "When the tester is
    /// late"), when the measurer knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lateness: Option<Lateness>,
    /// The receive window: first to last frame received, when the measurer knows it. A device
    /// that back-pressured the tester returns the frames the tester's ring held over a window
    /// longer than the trial; the forwarding rate is taken over it ([`received_fps`]
    /// (Self::received_fps); METHODOLOGY.md, "Back-pressure").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_window: Option<Duration>,
    /// The device's forwarding thread during the trial (its warm-up and drain included), where
    /// the device reports it: how long it stayed away from its ports at worst, and why. A
    /// refusal by the device's receive ring is explained by a gap longer than the ring holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_worker: Option<DeviceWorker>,
}

/// What the device's poll-mode worker says about one trial: its long gaps between two polls
/// (vecswitch: ≥ 500 µs, `show runtime`'s `long_gaps`), the longest of them and what accounts
/// for it (METHODOLOGY.md, "When the device stalls").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceWorker {
    /// Long gaps between two polls during the trial.
    pub long_gaps: u64,
    /// The longest of them, ns (0 without any).
    pub longest_gap_ns: u64,
    /// Of the longest gap: sleep the worker chose, its own work, and the rest (descheduled or
    /// held in the kernel), ns.
    pub longest_slept_ns: u64,
    pub longest_work_ns: u64,
    pub longest_off_cpu_ns: u64,
    /// The fullest receive ring right after the longest gap: entries waiting, of the ring's size
    /// (0/0: not visible). Waiting = size: the tester's frames were refused meanwhile.
    pub ring_waiting: u32,
    pub ring_size: u32,
    /// Polls during the trial that found a receive ring of the tester's links full, where the
    /// device shows its rings. Refusals with none were not the ring's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ring_full_polls: Option<u64>,
}

impl TrialResult {
    /// Builds a result and derives `intended_frames` and `tester_limited` from the inputs.
    pub fn new(
        intended_load: Load,
        intended_duration: Duration,
        offered_frames: u64,
        received_frames: u64,
        actual_duration: Duration,
    ) -> TrialResult {
        let intended_frames = intended_load.frames_in(intended_duration.as_secs_f64());
        let tester_limited =
            (offered_frames as f64) < intended_frames as f64 * TESTER_LIMIT_TOLERANCE;
        TrialResult {
            intended_load,
            intended_duration,
            intended_frames,
            offered_frames,
            received_frames,
            tester_limited,
            latency: None,
            actual_duration,
            accounting: None,
            limit: TrialLimit::None,
            limit_reasons: Vec::new(),
            lateness: None,
            rx_window: None,
            device_worker: None,
        }
    }

    /// A result from a full [`FrameAccounting`] and the measurer's [`TrialLimit`]: offered =
    /// `acc.offered()`, received = `acc.received`; tester-limited when the limit is on the
    /// tester's side or (unless back-pressured) the tester offered fewer than `1 − tolerance` of
    /// the intended frames — never for back-pressure (module doc).
    pub fn accounted(
        intended_load: Load,
        intended_duration: Duration,
        acc: FrameAccounting,
        limit: TrialLimit,
        tolerance: f64,
        actual_duration: Duration,
    ) -> TrialResult {
        let mut t = TrialResult::new(
            intended_load,
            intended_duration,
            acc.offered(),
            acc.received,
            actual_duration,
        );
        // A back-pressured trial is never tester-limited, even if the tester also fell short: the
        // device refused frames offered at or below the intended schedule.
        let short = (acc.offered() as f64) < t.intended_frames as f64 * (1.0 - tolerance);
        t.tester_limited =
            limit.is_tester_side() || (short && !matches!(limit, TrialLimit::BackPressure { .. }));
        t.accounting = Some(acc);
        t.limit = limit;
        t
    }

    /// Whether the path throttled the tester (the achieved rate is the device's flow-controlled
    /// rate; the trial fails the intended load through the refused frames it counts as lost).
    pub fn back_pressured(&self) -> bool {
        matches!(self.limit, TrialLimit::BackPressure { .. })
    }

    /// The share of the intended load a back-pressured device did not forward at that load:
    /// `1 − received_fps / intended fps` (0 when not back-pressured). A device that flow-controls
    /// its sender may lose no frame at all — the tester's ring holds the excess, which crosses
    /// after the send phase — yet it did not forward the load; a hardware tester's flow-controlled
    /// port would not have sent it either.
    pub fn throttle_ratio(&self) -> f64 {
        if !self.back_pressured() || self.intended_load.fps <= 0.0 {
            return 0.0;
        }
        (1.0 - self.received_fps() / self.intended_load.fps).max(0.0)
    }

    /// What the procedures judge a trial by: the larger of its loss ratio and its
    /// [`throttle_ratio`](Self::throttle_ratio).
    pub fn shortfall_ratio(&self) -> f64 {
        self.loss_ratio().max(self.throttle_ratio())
    }

    /// Frames offered but not received (duplicates beyond offered count as zero loss).
    pub fn lost_frames(&self) -> u64 {
        self.offered_frames.saturating_sub(self.received_frames)
    }

    /// Tester-limited, yet it offered at least [`TESTER_HICCUP_FRACTION`] of the intended
    /// frames: a hiccup of the tester, which a repeat may not have ([`trial_past_hiccups`]).
    pub fn tester_hiccup(&self) -> bool {
        self.tester_limited
            && self.offered_frames as f64 >= self.intended_frames as f64 * TESTER_HICCUP_FRACTION
    }

    /// Lost / offered, 0 when nothing was offered.
    pub fn loss_ratio(&self) -> f64 {
        if self.offered_frames == 0 {
            0.0
        } else {
            self.lost_frames() as f64 / self.offered_frames as f64
        }
    }

    /// RFC 2544 §26.3 frame loss rate: ((input − output) × 100) / input.
    pub fn loss_percent(&self) -> f64 {
        self.loss_ratio() * 100.0
    }

    /// The rate the tester actually offered, frames/s over the intended duration.
    pub fn offered_fps(&self) -> f64 {
        rate(self.offered_frames, self.intended_duration)
    }

    /// The rate the DUT forwarded back: frames/s over the intended duration, or over the
    /// receive window when that was longer (frames a back-pressuring device let through after
    /// the send phase are not divided by the send phase: issue 7, the known-answer test read
    /// +2.2 % that way). A window shorter than the trial (a device that stopped forwarding) never
    /// raises the rate.
    pub fn received_fps(&self) -> f64 {
        let d = self
            .rx_window
            .map_or(self.intended_duration, |w| w.max(self.intended_duration));
        rate(self.received_frames, d)
    }

    /// Passes a loss tolerance given as a ratio (0.00001 = 0.001 %): the
    /// [`shortfall_ratio`](Self::shortfall_ratio) — loss, or a back-pressured device's rate
    /// shortfall — is at most the tolerance. A tester-limited trial never passes or fails:
    /// callers must check [`tester_limited`](Self::tester_limited) first.
    pub fn within(&self, loss_tolerance_ratio: f64) -> bool {
        self.shortfall_ratio() <= loss_tolerance_ratio
    }
}

fn rate(frames: u64, d: Duration) -> f64 {
    let s = d.as_secs_f64();
    if s > 0.0 {
        frames as f64 / s
    } else {
        0.0
    }
}

/// What one back-to-back burst measured.
///
/// A burst is meant to leave the tester at the Max Theoretical Frame Rate (RFC 9004 §3); a software
/// tester is often slower, so the burst also records how long it took to send and the rate that
/// gives ([`achieved_fps`](Self::achieved_fps)). The back-to-back procedure compares that rate
/// with the one its buffer arithmetic assumes (RFC 9004 §5.4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BurstResult {
    /// Frames the burst was meant to contain.
    pub intended_frames: u64,
    /// Frames actually sent back-to-back.
    pub offered_frames: u64,
    pub received_frames: u64,
    /// Time from the first to the last frame of the burst leaving the tester; zero when the
    /// measurer cannot tell (then `achieved_fps` is `None`).
    #[serde(default)]
    pub send_duration: Duration,
    /// The rate the burst was actually sent at: `offered_frames / send_duration`.
    #[serde(default)]
    pub achieved_fps: Option<f64>,
    /// The tester could not send the burst in full (or its generator reported a shortfall).
    pub tester_limited: bool,
}

impl BurstResult {
    /// A burst of `offered` of `intended` frames, sent in `send_duration`, `received` back;
    /// tester-limited when not sent in full.
    pub fn new(
        intended_frames: u64,
        offered_frames: u64,
        received_frames: u64,
        send_duration: Duration,
    ) -> BurstResult {
        let secs = send_duration.as_secs_f64();
        BurstResult {
            intended_frames,
            offered_frames,
            received_frames,
            send_duration,
            achieved_fps: (secs > 0.0 && offered_frames > 0).then(|| offered_frames as f64 / secs),
            tester_limited: offered_frames < intended_frames,
        }
    }

    pub fn lost_frames(&self) -> u64 {
        self.offered_frames.saturating_sub(self.received_frames)
    }

    /// RFC 9004 §5.3: a burst passes only with zero loss.
    pub fn lossless(&self) -> bool {
        self.lost_frames() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tester_hiccup_is_repeated_a_tester_ceiling_is_not() {
        use crate::sim::{SimDut, SimModel};
        let one_s = Duration::from_secs(1);
        let dut = || SimDut::new(SimModel::Fixed { capacity_fps: 1e6 }, 1);
        // A hiccup every other trial: the repeat is clean and decides.
        let a =
            trial_past_hiccups(&mut dut().with_tester_hiccups(2), Load::fps(5e5), one_s).unwrap();
        assert_eq!(a.len(), 2);
        assert!(a[0].tester_hiccup() && a[0].tester_limited);
        assert!(!a[1].tester_limited && a[1].lost_frames() == 0);
        // A hiccup every time: three attempts, then the load is the tester's to answer for.
        let a =
            trial_past_hiccups(&mut dut().with_tester_hiccups(1), Load::fps(5e5), one_s).unwrap();
        assert_eq!(a.len(), 1 + TESTER_HICCUP_RETRIES);
        assert!(a.iter().all(TrialResult::tester_hiccup));
        // A tester that cannot reach the load (half of it) is not repeated: that is its capacity.
        let a =
            trial_past_hiccups(&mut dut().with_tester_limit(2.5e5), Load::fps(5e5), one_s).unwrap();
        assert_eq!(a.len(), 1);
        assert!(a[0].tester_limited && !a[0].tester_hiccup());
        // A clean trial is run once.
        assert_eq!(
            trial_past_hiccups(&mut dut(), Load::fps(5e5), one_s)
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn loss_counts_against_offered_not_intended() {
        let t = TrialResult::new(
            Load::fps(1000.0),
            Duration::from_secs(10),
            5000,
            5000,
            Duration::from_secs(10),
        );
        assert_eq!(t.intended_frames, 10_000);
        assert!(t.tester_limited);
        assert_eq!(t.lost_frames(), 0);
        assert_eq!(t.loss_ratio(), 0.0);
        assert_eq!(t.offered_fps(), 500.0);
    }

    #[test]
    fn loss_ratio_and_tolerance() {
        let t = TrialResult::new(
            Load::fps(1e6),
            Duration::from_secs(1),
            1_000_000,
            999_990,
            Duration::from_secs(1),
        );
        assert!(!t.tester_limited);
        assert_eq!(t.lost_frames(), 10);
        assert!((t.loss_percent() - 0.001).abs() < 1e-12);
        assert!(t.within(0.00001));
        assert!(!t.within(0.0));
    }

    #[test]
    fn duplicates_do_not_make_negative_loss() {
        let t = TrialResult::new(
            Load::fps(10.0),
            Duration::from_secs(1),
            10,
            12,
            Duration::from_secs(1),
        );
        assert_eq!(t.lost_frames(), 0);
    }

    #[test]
    fn combine_latency_takes_extremes_and_weighted_means() {
        let a = LatencyStats {
            min_ns: 10.0,
            avg_ns: 20.0,
            max_ns: 30.0,
            p50_ns: 20.0,
            p90_ns: 25.0,
            p99_ns: 28.0,
            p99_9_ns: 29.0,
            p99_99_ns: 30.0,
            jitter_mean_ns: 1.0,
            jitter_max_ns: 5.0,
            samples: 100,
            histogram: None,
        };
        let b = LatencyStats {
            min_ns: 5.0,
            avg_ns: 40.0,
            max_ns: 90.0,
            jitter_max_ns: 9.0,
            samples: 300,
            ..a.clone()
        };
        let c = LatencyStats::combine(&[a, b]).unwrap();
        assert_eq!(c.min_ns, 5.0);
        assert_eq!(c.max_ns, 90.0);
        assert_eq!(c.avg_ns, 35.0);
        assert_eq!(c.jitter_max_ns, 9.0);
        assert_eq!(c.samples, 400);
        assert!(LatencyStats::combine(&[]).is_none());
    }

    fn hist_stats(delays: &[(u64, u64)]) -> LatencyStats {
        let mut h = hdr();
        for &(d, n) in delays {
            h.record_n(d, n).unwrap();
        }
        LatencyStats {
            min_ns: h.min() as f64,
            avg_ns: h.mean(),
            max_ns: h.max() as f64,
            p50_ns: h.value_at_quantile(0.5) as f64,
            p90_ns: h.value_at_quantile(0.9) as f64,
            p99_ns: h.value_at_quantile(0.99) as f64,
            p99_9_ns: h.value_at_quantile(0.999) as f64,
            p99_99_ns: h.value_at_quantile(0.9999) as f64,
            jitter_mean_ns: 0.0,
            jitter_max_ns: 0.0,
            samples: h.len(),
            histogram: Some(LatencyHistogram::encode(&h)),
        }
    }

    fn hdr() -> vecswitch_gen::analyze::DelayHistogram {
        vecswitch_gen::analyze::DelayHistogram::new_with_bounds(1, 3_600_000_000_000, 3).unwrap()
    }

    #[test]
    fn combined_percentiles_come_from_the_merged_histogram() {
        // Trial A: 9,000 frames at 10 µs, 1,000 at 1 ms (p99 = 1 ms). Trial B: 10,000 at 10 µs
        // (p99 = 10 µs). Over all 20,000 frames the 1 ms ones are 5 %: p99 is 1 ms, p90 is 10 µs.
        // Averaging the per-trial p99s would say 505 µs — a latency no frame had.
        let a = hist_stats(&[(10_000, 9_000), (1_000_000, 1_000)]);
        let b = hist_stats(&[(10_000, 10_000)]);
        // (HdrHistogram reads values to 3 significant digits: within 0.1 %.)
        let near = |v: f64, want: f64| (v - want).abs() <= want * 0.001;
        assert!(near(a.p99_ns, 1e6) && near(b.p99_ns, 1e4), "{a:?} {b:?}");
        let c = LatencyStats::combine(&[a.clone(), b.clone()]).unwrap();
        assert_eq!(c.samples, 20_000);
        assert!(near(c.p99_ns, 1e6), "{}", c.p99_ns);
        assert!(near(c.p90_ns, 1e4), "{}", c.p90_ns);
        assert!(near(c.p50_ns, 1e4), "{}", c.p50_ns);
        // The merged histogram travels on: combining again (A+B with B) stays exact.
        let h = c.histogram.clone().unwrap();
        assert_eq!(h.decode().unwrap().len(), 20_000);
        let again = LatencyStats::combine(&[c, b.clone()]).unwrap();
        assert_eq!(again.samples, 30_000);
        // Without histograms on every input: the old approximation, and no histogram.
        let mut plain = b;
        plain.histogram = None;
        let d = LatencyStats::combine(&[a, plain]).unwrap();
        assert!(d.histogram.is_none());
        assert!(near(d.p99_ns, 505_000.0), "{}", d.p99_ns);
    }

    #[test]
    fn accounting_splits_loss_and_adds_up() {
        // 1,000 intended; 10 not sent; 950 sent; 40 refused at send (device's ring full);
        // device counted 5 receive drops and 3 internal drops; the tester's socket dropped 2;
        // 900 received. Loss = 990 − 900 = 90 = 45 + 3 + 2 + 40 unexplained.
        let a = FrameAccounting::split(1_000, 10, 950, 40, Some(5), Some(3), Some(2), 900);
        assert_eq!(a.offered(), 990);
        assert_eq!(a.refused_by_device, 45);
        assert_eq!(
            (a.lost_in_device, a.dropped_at_tester_rx),
            (Some(3), Some(2))
        );
        assert_eq!(a.unexplained, 40);
        assert_eq!(
            a.refused_by_device
                + a.lost_in_device.unwrap()
                + a.dropped_at_tester_rx.unwrap()
                + a.unexplained,
            a.offered() - a.received
        );
        assert_eq!(a.device_loss(), 88);
        // Counters that claim more than the loss (other traffic) are capped: parts still add up.
        let b = FrameAccounting::split(100, 0, 100, 0, Some(50), Some(50), None, 95);
        assert_eq!(
            (b.refused_by_device, b.lost_in_device, b.unexplained),
            (5, Some(0), 0)
        );
        // Unknown device counters stay unknown, the loss stays unexplained.
        let c = FrameAccounting::split(100, 0, 100, 0, None, None, None, 97);
        assert_eq!((c.lost_in_device, c.unexplained), (None, 3));
    }

    #[test]
    fn back_pressure_fails_the_load_but_is_not_tester_limited() {
        // 150 k intended, the path took 100 k and refused 50 k while the tester idled.
        let acc = FrameAccounting::split(150_000, 0, 100_000, 50_000, None, None, Some(0), 100_000);
        let bp = TrialLimit::BackPressure {
            achieved_fps: 100_000.0,
            refused: 50_000,
        };
        let d = Duration::from_secs(1);
        let t = TrialResult::accounted(Load::fps(150_000.0), d, acc.clone(), bp, 0.001, d);
        assert!(!t.tester_limited && t.back_pressured());
        assert_eq!((t.offered_frames, t.received_frames), (150_000, 100_000));
        assert!(
            !t.within(0.0),
            "the load is not passed: the device could not take it"
        );
        assert!(t.limit.to_string().contains("100000 fps"), "{}", t.limit);
        // The same counts, limited by the tester's CPU instead: tester-limited (inconclusive).
        let cpu = TrialLimit::TesterCpu {
            not_sent: 50_000,
            idle_percent: 0.0,
        };
        let acc = FrameAccounting::split(150_000, 50_000, 100_000, 0, None, None, Some(0), 100_000);
        let t = TrialResult::accounted(Load::fps(150_000.0), d, acc, cpu, 0.001, d);
        assert!(t.tester_limited && !t.back_pressured());
        assert_eq!(t.lost_frames(), 0);
        // Loss at the tester's receive side is the tester's limit, not the device's loss.
        let acc = FrameAccounting::split(1_000, 0, 1_000, 0, None, Some(0), Some(10), 990);
        let rx = TrialLimit::TesterRx { dropped: 10 };
        let t = TrialResult::accounted(Load::fps(1_000.0), d, acc.clone(), rx, 0.001, d);
        assert!(t.tester_limited);
        assert_eq!(acc.device_loss(), 0);
        // Results from before the split still parse: no accounting, no limit.
        let mut v = serde_json::to_value(&t).unwrap();
        let o = v.as_object_mut().unwrap();
        o.remove("accounting");
        o.remove("limit");
        let back: TrialResult = serde_json::from_value(v).unwrap();
        assert_eq!((back.accounting, back.limit), (None, TrialLimit::None));
    }

    #[test]
    fn the_forwarding_rate_is_taken_over_the_receive_window() {
        // The known-answer timeline (issue 7 item 1): 3 s at 37.5 kfps through a 25 kfps
        // shaper; 76,640 frames came back, the last 1,640 of them drained from the tester's
        // transmit ring over the 65.6 ms after the send phase.
        let d = Duration::from_secs(3);
        let acc = FrameAccounting::split(112_500, 0, 76_640, 35_860, None, None, Some(0), 76_640);
        let bp = TrialLimit::BackPressure {
            achieved_fps: 25_000.0,
            refused: 35_860,
        };
        let mut t = TrialResult::accounted(Load::fps(37_500.0), d, acc, bp, 0.01, d);
        // Over the send phase: +2.2 %, the figure that failed the test.
        assert_eq!(t.received_fps().round(), 25_547.0);
        t.rx_window = Some(Duration::from_secs_f64(3.0656));
        assert!(
            (t.received_fps() - 25_000.0).abs() < 1.0,
            "{}",
            t.received_fps()
        );
        // A window shorter than the trial (a device that stopped forwarding half-way) does not
        // raise the rate: 1,000 frames in 1 s of which 0.5 s carried them is 1,000 fps.
        let mut u = TrialResult::new(Load::fps(2_000.0), Duration::from_secs(1), 2_000, 1_000, d);
        u.rx_window = Some(Duration::from_millis(500));
        assert_eq!(u.received_fps(), 1_000.0);
        // Results written before the window existed still parse.
        let mut v = serde_json::to_value(&t).unwrap();
        v.as_object_mut().unwrap().remove("rx_window");
        let back: TrialResult = serde_json::from_value(v).unwrap();
        assert_eq!(back.rx_window, None);
    }

    #[test]
    fn a_back_pressured_trial_without_loss_fails_by_its_rate_shortfall() {
        // 25,400 fps intended for 4 s through a 25 kfps flow-controlled path: the tester's ring
        // absorbed the 1,600-frame excess, nothing was lost, the frames took 4.064 s to cross.
        let d = Duration::from_secs(4);
        let acc = FrameAccounting::split(101_600, 0, 101_600, 0, None, None, Some(0), 101_600);
        let bp = TrialLimit::BackPressure {
            achieved_fps: 25_000.0,
            refused: 0,
        };
        let mut t = TrialResult::accounted(Load::fps(25_400.0), d, acc.clone(), bp, 0.001, d);
        t.rx_window = Some(Duration::from_secs_f64(4.064));
        assert_eq!(t.lost_frames(), 0);
        assert!(
            (t.throttle_ratio() - 0.4 / 25.4).abs() < 1e-6,
            "{}",
            t.throttle_ratio()
        );
        assert!(!t.within(0.0) && !t.within(0.01) && t.within(0.02));
        assert_eq!(t.shortfall_ratio(), t.throttle_ratio());
        // The same counts and window without back-pressure (a device whose frames took that
        // long for another reason) are judged by their loss alone.
        let mut n = TrialResult::accounted(Load::fps(25_400.0), d, acc, TrialLimit::None, 0.001, d);
        n.rx_window = t.rx_window;
        assert_eq!(n.throttle_ratio(), 0.0);
        assert!(n.within(0.0));
    }
}
