//! Back-to-back frames, RFC 2544 §26.4 as updated by RFC 9004.
//!
//! The benchmark is the longest burst of frames at minimum inter-frame gap (line rate) that the
//! DUT forwards without loss; it estimates the DUT's buffer. [`back_to_back`]:
//!
//! - requires the measured throughput first (RFC 9004 §5.1: the test is only meaningful when the
//!   throughput is below the Max Theoretical Frame Rate; at line-rate throughput the buffer never
//!   fills, and the result says [`BackToBackResult::applicable`] = false without sending);
//! - per repetition, binary-searches the burst length between 1 frame and `max_burst` (default:
//!   2 s worth of frames at line rate, RFC 2544 §26.4 "trial length ... at least 2 seconds"); a
//!   burst passes only with zero loss (RFC 9004 §5.3), resolution `resolution_frames`;
//! - repeats `repetitions` times (RFC 2544 §26.4: "at least 50 times", kept by RFC 9004 §5.3) and
//!   reports average, minimum, maximum and standard deviation of the longest lossless burst
//!   (RFC 9004 §5.4 / §6);
//! - measures the rate the bursts actually left the tester at, [`BackToBackResult::burst_rate_fps`]
//!   (all bursts' frames over all their send time, so the long bursts that decide the result
//!   weigh most), and flags the result [`BackToBackResult::below_assumed_rate`] (and
//!   tester-limited) when it is more than [`BURST_RATE_TOLERANCE`] below the Max Theoretical
//!   Frame Rate the RFC's arithmetic assumes: RFC 9004 §5.3 sends bursts "at the maximum
//!   theoretical frame rate", which a software tester often cannot;
//! - computes, RFC 9004 §5.4, with `R` the rate the bursts arrived at — the Max Theoretical Frame
//!   Rate when the tester reached it, else the achieved burst rate (the formulas are the RFC's
//!   with that one substitution; with a tester at line rate they are the RFC's exactly):
//!   - Implied DUT Buffer Time = average B2B frames / R;
//!   - Corrected DUT Buffer Time = Implied − Implied × (Measured Throughput / R), i.e.
//!     Implied × (1 − throughput/R): while the burst arrives at `R` the DUT keeps forwarding at
//!     its throughput, so only the difference accumulates in the buffer. (Seed 003 checks the
//!     arithmetic: 26 700 frames at 64 B with ≈78.6 % throughput give a corrected buffer of
//!     5 713 frames = 0.384 ms.) A tester slower than line rate makes the DUT drain a larger
//!     share of each burst: computing with the line rate would overstate the buffer;
//!   - when the bursts arrived no faster than the throughput
//!     ([`BackToBackResult::burst_rate_at_or_below_throughput`]) the buffer never filled: the
//!     corrected buffer is 0 and the result says the bursts could not measure it.
//!
//! A burst not sent in full is kept and counted; the result is flagged
//! [`BackToBackResult::tester_limited`].

use serde::{Deserialize, Serialize};

use crate::measurer::{BurstResult, Measurer};
use crate::LabError;

/// Bursts that arrived more than this fraction below the assumed rate flag the result: 1 %, the
/// precision of a software tester's send timestamps over a burst of a few thousand frames.
pub const BURST_RATE_TOLERANCE: f64 = 0.01;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BackToBackConfig {
    /// Max Theoretical Frame Rate of the link and frame size (RFC 9004 §3).
    pub max_theoretical_fps: f64,
    /// Throughput measured for the same frame size (RFC 9004 §5.1 prerequisite).
    pub throughput_fps: f64,
    /// Longest burst tried.
    pub max_burst: u64,
    /// Stop when the bracket is at most this many frames wide.
    pub resolution_frames: u64,
    /// RFC 2544 §26.4: at least 50.
    pub repetitions: u32,
}

impl BackToBackConfig {
    /// 50 repetitions, 1-frame resolution, bursts up to 2 s at line rate.
    pub fn new(max_theoretical_fps: f64, throughput_fps: f64) -> Self {
        BackToBackConfig {
            max_theoretical_fps,
            throughput_fps,
            max_burst: (max_theoretical_fps * 2.0).ceil() as u64,
            resolution_frames: 1,
            repetitions: 50,
        }
    }

    fn validate(&self) -> Result<(), LabError> {
        if !(self.max_theoretical_fps.is_finite() && self.max_theoretical_fps > 0.0) {
            return Err(LabError::invalid(
                "max_theoretical_fps",
                self.max_theoretical_fps,
                "a positive rate",
            ));
        }
        if !(self.throughput_fps.is_finite() && self.throughput_fps >= 0.0) {
            return Err(LabError::invalid(
                "throughput_fps",
                self.throughput_fps,
                "a measured throughput >= 0",
            ));
        }
        if self.max_burst == 0 {
            return Err(LabError::invalid("max_burst", 0, "at least 1 frame"));
        }
        if self.resolution_frames == 0 {
            return Err(LabError::invalid(
                "resolution_frames",
                0,
                "at least 1 frame",
            ));
        }
        if self.repetitions == 0 {
            return Err(LabError::invalid(
                "repetitions",
                0,
                "at least 1 (RFC 2544 §26.4 asks for 50)",
            ));
        }
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BackToBackResult {
    /// False when the throughput is at the Max Theoretical Frame Rate (RFC 9004 §5.1): no bursts sent.
    pub applicable: bool,
    /// Longest lossless burst of each repetition.
    pub per_repetition: Vec<u64>,
    pub average_frames: f64,
    pub min_frames: u64,
    pub max_frames: u64,
    /// Sample standard deviation (n − 1).
    pub stdev_frames: f64,
    /// The longest burst tried was lossless in some repetition: the buffer is at least that big,
    /// raise `max_burst`.
    pub max_burst_lossless: bool,
    /// The rate the buffer arithmetic assumes bursts arrive at: the Max Theoretical Frame Rate.
    #[serde(default)]
    pub assumed_burst_fps: f64,
    /// The rate the bursts actually left the tester at (Σ frames / Σ send time over every burst
    /// whose send time the measurer knew); `None` when it knew none.
    #[serde(default)]
    pub burst_rate_fps: Option<f64>,
    /// The bursts left more than [`BURST_RATE_TOLERANCE`] below `assumed_burst_fps`: the buffer
    /// figures below use the achieved rate, and the result is tester-limited.
    #[serde(default)]
    pub below_assumed_rate: bool,
    /// The bursts arrived no faster than the DUT's throughput: they could not fill its buffer,
    /// and the corrected buffer is reported as 0.
    #[serde(default)]
    pub burst_rate_at_or_below_throughput: bool,
    /// RFC 9004 §5.4 at the rate the bursts arrived at (see the module doc).
    pub implied_buffer_time_s: f64,
    pub corrected_buffer_time_s: f64,
    /// Corrected buffer expressed in frames (corrected time × the arrival rate).
    pub corrected_buffer_frames: f64,
    /// A burst was not sent in full, or the bursts were sent below the assumed rate.
    pub tester_limited: bool,
    pub bursts: Vec<BurstResult>,
}

pub fn back_to_back<M: Measurer + ?Sized>(
    m: &mut M,
    cfg: &BackToBackConfig,
) -> Result<BackToBackResult, LabError> {
    cfg.validate()?;
    let mut r = BackToBackResult {
        applicable: cfg.throughput_fps < cfg.max_theoretical_fps,
        per_repetition: Vec::new(),
        average_frames: 0.0,
        min_frames: 0,
        max_frames: 0,
        stdev_frames: 0.0,
        max_burst_lossless: false,
        assumed_burst_fps: cfg.max_theoretical_fps,
        burst_rate_fps: None,
        below_assumed_rate: false,
        burst_rate_at_or_below_throughput: false,
        implied_buffer_time_s: 0.0,
        corrected_buffer_time_s: 0.0,
        corrected_buffer_frames: 0.0,
        tester_limited: false,
        bursts: Vec::new(),
    };
    if !r.applicable {
        return Ok(r);
    }
    for _ in 0..cfg.repetitions {
        let longest = longest_lossless(m, cfg, &mut r.bursts)?;
        r.max_burst_lossless |= longest == cfg.max_burst;
        r.per_repetition.push(longest);
    }
    r.burst_rate_fps = burst_rate(&r.bursts);
    r.below_assumed_rate = r
        .burst_rate_fps
        .is_some_and(|a| a < cfg.max_theoretical_fps * (1.0 - BURST_RATE_TOLERANCE));
    r.tester_limited = r.below_assumed_rate || r.bursts.iter().any(|b| b.tester_limited);
    let n = r.per_repetition.len() as f64;
    r.average_frames = r.per_repetition.iter().sum::<u64>() as f64 / n;
    r.min_frames = *r.per_repetition.iter().min().unwrap_or(&0);
    r.max_frames = *r.per_repetition.iter().max().unwrap_or(&0);
    r.stdev_frames = if r.per_repetition.len() > 1 {
        let var = r
            .per_repetition
            .iter()
            .map(|&x| (x as f64 - r.average_frames).powi(2))
            .sum::<f64>()
            / (n - 1.0);
        var.sqrt()
    } else {
        0.0
    };
    // RFC 9004 §5.4, at the rate the bursts arrived at.
    let arrival = match r.burst_rate_fps {
        Some(a) if r.below_assumed_rate => a,
        _ => cfg.max_theoretical_fps,
    };
    r.burst_rate_at_or_below_throughput = cfg.throughput_fps >= arrival;
    r.implied_buffer_time_s = r.average_frames / arrival;
    r.corrected_buffer_time_s = if r.burst_rate_at_or_below_throughput {
        0.0
    } else {
        r.implied_buffer_time_s - r.implied_buffer_time_s * (cfg.throughput_fps / arrival)
    };
    r.corrected_buffer_frames = r.corrected_buffer_time_s * arrival;
    Ok(r)
}

/// Σ frames / Σ send time over the bursts whose send time is known.
fn burst_rate(bursts: &[BurstResult]) -> Option<f64> {
    let timed = || bursts.iter().filter(|b| b.achieved_fps.is_some());
    let frames: u64 = timed().map(|b| b.offered_frames).sum();
    let secs: f64 = timed().map(|b| b.send_duration.as_secs_f64()).sum();
    (secs > 0.0).then(|| frames as f64 / secs)
}

/// One repetition: the longest lossless burst in `[0, max_burst]`.
fn longest_lossless<M: Measurer + ?Sized>(
    m: &mut M,
    cfg: &BackToBackConfig,
    log: &mut Vec<BurstResult>,
) -> Result<u64, LabError> {
    let mut send = |n: u64, log: &mut Vec<BurstResult>| -> Result<bool, LabError> {
        let b = m.burst(n)?;
        let ok = b.lossless();
        log.push(b);
        Ok(ok)
    };
    if send(cfg.max_burst, log)? {
        return Ok(cfg.max_burst);
    }
    // Invariant: `lo` is lossless (0 trivially), `hi` lost frames.
    let (mut lo, mut hi) = (0u64, cfg.max_burst);
    while hi - lo > cfg.resolution_frames {
        let mid = lo + (hi - lo) / 2;
        if send(mid, log)? {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(lo)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::{SimDut, SimModel};
    use crate::LineRate;

    #[test]
    fn finds_the_buffer_and_corrects_for_throughput() {
        // 64 B at 10GE, DUT drains at 78.6 % of line rate, buffer 5 713 frames (seed 003's numbers).
        let max = LineRate::ten_gig(64).max_fps();
        let thr = 0.786 * max;
        let buffer = 5_713u64;
        let mut dut = SimDut::new(SimModel::Fixed { capacity_fps: thr }, 1)
            .with_buffer(buffer)
            .with_line_rate(max);
        let mut cfg = BackToBackConfig::new(max, thr);
        cfg.repetitions = 5;
        let r = back_to_back(&mut dut, &cfg).unwrap();
        assert!(r.applicable && !r.tester_limited && !r.max_burst_lossless);
        // Lossless up to B / (1 − C/R) frames.
        let expect = buffer as f64 / (1.0 - 0.786);
        assert!(
            (r.average_frames - expect).abs() <= 2.0,
            "{} vs {expect}",
            r.average_frames
        );
        assert_eq!(r.per_repetition.len(), 5);
        assert_eq!(r.stdev_frames, 0.0); // deterministic DUT
        assert!(
            (r.corrected_buffer_frames - buffer as f64).abs() <= 2.0,
            "{}",
            r.corrected_buffer_frames
        );
        assert!(
            (r.corrected_buffer_time_s * 1e3 - 0.384).abs() < 0.001,
            "{}",
            r.corrected_buffer_time_s
        );
        assert!((r.implied_buffer_time_s - r.average_frames / max).abs() < 1e-15);
    }

    #[test]
    fn noisy_dut_gives_spread_statistics() {
        let max = 1e6;
        let mut dut = SimDut::new(
            SimModel::Noisy {
                capacity_fps: 5e5,
                spread: 0.2,
            },
            5,
        )
        .with_buffer(1000)
        .with_line_rate(max);
        let mut cfg = BackToBackConfig::new(max, 5e5);
        cfg.repetitions = 50;
        let r = back_to_back(&mut dut, &cfg).unwrap();
        assert_eq!(r.per_repetition.len(), 50);
        assert!(r.min_frames < r.max_frames);
        assert!(r.stdev_frames > 0.0);
        assert!(r.min_frames as f64 <= r.average_frames && r.average_frames <= r.max_frames as f64);
        // Capacity within 0.4..0.6 of line rate: lossless burst within B/0.6 .. B/0.4 (± a burst's
        // share of noise per probe).
        assert!(
            r.min_frames as f64 >= 1000.0 / 0.6 - 2.0 && r.max_frames as f64 <= 1000.0 / 0.4 + 2.0
        );
    }

    #[test]
    fn line_rate_throughput_is_not_applicable() {
        let mut dut = SimDut::new(SimModel::Fixed { capacity_fps: 1e6 }, 1);
        let r = back_to_back(&mut dut, &BackToBackConfig::new(1e6, 1e6)).unwrap();
        assert!(!r.applicable);
        assert_eq!(dut.bursts(), 0);
    }

    #[test]
    fn buffer_larger_than_max_burst_is_flagged() {
        let mut dut = SimDut::new(SimModel::Fixed { capacity_fps: 1e5 }, 1)
            .with_buffer(1_000_000)
            .with_line_rate(1e6);
        let mut cfg = BackToBackConfig::new(1e6, 1e5);
        cfg.max_burst = 1000;
        cfg.repetitions = 2;
        let r = back_to_back(&mut dut, &cfg).unwrap();
        assert!(r.max_burst_lossless);
        assert_eq!(r.per_repetition, vec![1000, 1000]);
    }

    #[test]
    fn slow_tester_is_flagged_and_the_buffer_uses_its_rate() {
        // Line rate 1 Mfps, but the tester sends bursts at 0.5 Mfps. The DUT forwards 0.1 Mfps and
        // buffers 1 000 frames: a burst at 0.5 Mfps fills it at 0.4 Mfps, so the longest lossless
        // burst is 1 000 / (1 − 0.1/0.5) = 1 250 frames, sent in 2.5 ms. RFC 9004 §5.4 at the
        // achieved rate: implied 1 250 / 0.5 M = 2.5 ms, corrected 2.5 × (1 − 0.2) = 2 ms = the
        // 1 000 frames of buffer. At the line rate it would say 1.25 ms × 0.9 = 1.125 ms
        // (1 125 frames): too big.
        let mut dut = SimDut::new(SimModel::Fixed { capacity_fps: 1e5 }, 1)
            .with_buffer(1000)
            .with_line_rate(1e6)
            .with_tester_limit(5e5);
        let mut cfg = BackToBackConfig::new(1e6, 1e5);
        cfg.repetitions = 2;
        let r = back_to_back(&mut dut, &cfg).unwrap();
        assert!(r.below_assumed_rate && r.tester_limited && !r.burst_rate_at_or_below_throughput);
        assert_eq!(r.assumed_burst_fps, 1e6);
        let rate = r.burst_rate_fps.unwrap();
        assert!((rate - 5e5).abs() < 1e-6, "{rate}");
        assert_eq!(r.per_repetition, vec![1250, 1250]);
        assert!((r.implied_buffer_time_s - 2.5e-3).abs() < 1e-12);
        assert!((r.corrected_buffer_time_s - 2e-3).abs() < 1e-12);
        assert!((r.corrected_buffer_frames - 1000.0).abs() < 1e-6);
    }

    #[test]
    fn tester_at_line_rate_is_not_flagged() {
        let mut dut = SimDut::new(SimModel::Fixed { capacity_fps: 1e5 }, 1)
            .with_buffer(1000)
            .with_line_rate(1e6);
        let mut cfg = BackToBackConfig::new(1e6, 1e5);
        cfg.repetitions = 1;
        let r = back_to_back(&mut dut, &cfg).unwrap();
        assert!(!r.below_assumed_rate && !r.tester_limited);
        assert!((r.burst_rate_fps.unwrap() - 1e6).abs() < 1e-3);
        // 1 000 / (1 − 0.1) = 1 111 frames; corrected back to the 1 000-frame buffer.
        assert_eq!(r.per_repetition, vec![1111]);
        assert!((r.corrected_buffer_frames - 999.9).abs() < 1e-6);
    }

    #[test]
    fn bursts_no_faster_than_the_throughput_cannot_measure_the_buffer() {
        // The tester sends bursts at 0.1 Mfps into a DUT that forwards 0.2 Mfps: nothing queues.
        let mut dut = SimDut::new(SimModel::Fixed { capacity_fps: 2e5 }, 1)
            .with_buffer(10)
            .with_line_rate(1e6)
            .with_tester_limit(1e5);
        let mut cfg = BackToBackConfig::new(1e6, 2e5);
        cfg.repetitions = 1;
        cfg.max_burst = 5000;
        let r = back_to_back(&mut dut, &cfg).unwrap();
        assert!(r.below_assumed_rate && r.burst_rate_at_or_below_throughput);
        assert!(r.max_burst_lossless);
        assert_eq!(r.corrected_buffer_time_s, 0.0);
        assert_eq!(r.corrected_buffer_frames, 0.0);
    }

    #[test]
    fn bursts_not_sent_in_full_flag_the_result() {
        struct Short(SimDut);
        impl Measurer for Short {
            fn trial(
                &mut self,
                load: crate::Load,
                d: std::time::Duration,
            ) -> Result<crate::TrialResult, LabError> {
                self.0.trial(load, d)
            }
            fn burst(&mut self, frames: u64) -> Result<BurstResult, LabError> {
                let b = self.0.burst(frames)?;
                Ok(BurstResult::new(
                    frames,
                    frames - 1,
                    b.received_frames.min(frames - 1),
                    b.send_duration,
                ))
            }
        }
        let dut = SimDut::new(SimModel::Fixed { capacity_fps: 1e5 }, 1)
            .with_buffer(100)
            .with_line_rate(1e6);
        let mut cfg = BackToBackConfig::new(1e6, 1e5);
        cfg.repetitions = 1;
        let r = back_to_back(&mut Short(dut), &cfg).unwrap();
        assert!(r.tester_limited && r.bursts.iter().all(|b| b.tester_limited));
    }

    #[test]
    fn rejects_zero_repetitions() {
        let mut dut = SimDut::new(SimModel::Fixed { capacity_fps: 1.0 }, 1);
        let mut cfg = BackToBackConfig::new(10.0, 1.0);
        cfg.repetitions = 0;
        assert!(back_to_back(&mut dut, &cfg)
            .unwrap_err()
            .to_string()
            .contains("repetitions"));
    }
}
