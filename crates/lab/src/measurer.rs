//! The [`Measurer`] trait — one trial at a load for a duration, one back-to-back burst, or one
//! continuous soak stream read per interval — and what it returns: [`TrialResult`],
//! [`BurstResult`], [`LatencyStats`].
//!
//! Every procedure in [`crate::procedures`] talks only to a `Measurer`, so the same search runs
//! against the real generator and DUT or against a [`crate::sim::SimDut`] with a known answer.
//!
//! Frame accounting follows RFC 2544 §26.3 / RFC 1242 §3.6: loss is counted against the frames the
//! tester actually **offered**, not the frames it intended to send. When the tester could not offer
//! the intended load the trial is **tester-limited**: the procedures treat it as inconclusive for
//! that load and never report it as loss of the DUT.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::{LabError, Load};

/// A trial is tester-limited when it offered fewer than this fraction of the intended frames.
pub const TESTER_LIMIT_TOLERANCE: f64 = 0.999;

/// After a tester-limited trial, searches retry this fraction below the rate the tester achieved:
/// a software generator's achievable rate jitters by several percent from trial to trial (measured
/// on the lab's memif topology), so retrying just below it would chase the ceiling down step by step.
pub const TESTER_CEILING_MARGIN: f64 = 0.05;

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
}

/// Latency and delay-variation statistics of one trial, in nanoseconds.
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
}

impl LatencyStats {
    /// Combines the statistics of several trials as RFC 2544 §26.2 reports latency over repeated
    /// trials: averages are averaged (weighted by samples), min is the minimum, max the maximum;
    /// percentiles are sample-weighted means of the per-trial percentiles (an approximation: the
    /// raw histograms are not kept), jitter max is the maximum.
    pub fn combine(all: &[LatencyStats]) -> Option<LatencyStats> {
        if all.is_empty() {
            return None;
        }
        let total: f64 = all.iter().map(|s| s.samples.max(1) as f64).sum();
        let wmean = |f: fn(&LatencyStats) -> f64| {
            all.iter()
                .map(|s| f(s) * s.samples.max(1) as f64)
                .sum::<f64>()
                / total
        };
        Some(LatencyStats {
            min_ns: all.iter().map(|s| s.min_ns).fold(f64::INFINITY, f64::min),
            avg_ns: wmean(|s| s.avg_ns),
            max_ns: all.iter().map(|s| s.max_ns).fold(0.0, f64::max),
            p50_ns: wmean(|s| s.p50_ns),
            p90_ns: wmean(|s| s.p90_ns),
            p99_ns: wmean(|s| s.p99_ns),
            p99_9_ns: wmean(|s| s.p99_9_ns),
            p99_99_ns: wmean(|s| s.p99_99_ns),
            jitter_mean_ns: wmean(|s| s.jitter_mean_ns),
            jitter_max_ns: all.iter().map(|s| s.jitter_max_ns).fold(0.0, f64::max),
            samples: all.iter().map(|s| s.samples).sum(),
        })
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
        }
    }

    /// Frames offered but not received (duplicates beyond offered count as zero loss).
    pub fn lost_frames(&self) -> u64 {
        self.offered_frames.saturating_sub(self.received_frames)
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

    /// The rate the DUT forwarded back, frames/s over the intended duration.
    pub fn received_fps(&self) -> f64 {
        rate(self.received_frames, self.intended_duration)
    }

    /// Passes a loss tolerance given as a ratio (0.00001 = 0.001 %). A tester-limited trial
    /// never passes or fails: callers must check [`tester_limited`](Self::tester_limited) first.
    pub fn within(&self, loss_tolerance_ratio: f64) -> bool {
        self.loss_ratio() <= loss_tolerance_ratio
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
}
