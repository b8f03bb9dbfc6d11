//! Continuous soak: a fixed load for a long time as **one stream**, reported per interval.
//!
//! Long-duration stability is what EANTC's overnight runs and VSPERF's "soak" tests look for: a
//! switch that is lossless for 60 s can still drop frames once an hour. [`soak`] asks the
//! [`Measurer`] for one continuous stream ([`Measurer::soak`]: no gap, warm-up or drain at the
//! interval boundaries, so the device never gets a rest a real network would not give it) read
//! per interval — frames offered, frames received of those, latency of those, each interval's
//! frames charged to the interval they were sent in — and returns every interval and a summary:
//! total loss, the intervals with loss and when they started, the worst interval.
//!
//! Tester-limited intervals (the tester could not keep the load up) are kept and counted, and left
//! out of the loss figures: they say nothing about the device at that load (DESIGN.md).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::measurer::{Measurer, TrialResult};
use crate::{LabError, Load};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SoakConfig {
    pub load: Load,
    pub total: Duration,
    pub interval: Duration,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SoakResult {
    /// One entry per interval of the stream, in order.
    pub intervals: Vec<TrialResult>,
    /// Length of each interval.
    #[serde(default)]
    pub interval: Duration,
    pub offered_frames: u64,
    pub lost_frames: u64,
    pub loss_ratio: f64,
    /// Intervals with any loss (tester-limited ones excluded).
    pub lossy_intervals: u32,
    /// When each lossy interval started, seconds from the start of the stream.
    #[serde(default)]
    pub lossy_interval_starts_s: Vec<f64>,
    pub worst_interval_loss_ratio: f64,
    pub tester_limited_intervals: u32,
}

pub fn soak<M: Measurer + ?Sized>(m: &mut M, cfg: &SoakConfig) -> Result<SoakResult, LabError> {
    if cfg.interval.is_zero() || cfg.interval > cfg.total {
        return Err(LabError::invalid(
            "interval",
            format!("{:?}", cfg.interval),
            "positive and not longer than total",
        ));
    }
    let ratio = cfg.total.as_secs_f64() / cfg.interval.as_secs_f64();
    let n = ratio.round();
    if n > f64::from(u32::MAX) {
        return Err(LabError::invalid(
            "interval",
            format!("{:?}", cfg.interval),
            "at most 2^32 − 1 intervals in total",
        ));
    }
    let n = n as u32;
    let intervals = m.soak(cfg.load, cfg.interval, n)?;
    if intervals.len() != n as usize {
        return Err(LabError::Trial {
            load_fps: cfg.load.fps,
            reason: format!(
                "the measurer returned {} soak intervals, {n} were asked for",
                intervals.len()
            ),
        });
    }
    let counted = || intervals.iter().filter(|t| !t.tester_limited);
    let offered_frames: u64 = counted().map(|t| t.offered_frames).sum();
    let lost_frames: u64 = counted().map(|t| t.lost_frames()).sum();
    let iv = cfg.interval.as_secs_f64();
    let lossy_interval_starts_s: Vec<f64> = intervals
        .iter()
        .enumerate()
        .filter(|(_, t)| !t.tester_limited && t.lost_frames() > 0)
        .map(|(i, _)| i as f64 * iv)
        .collect();
    Ok(SoakResult {
        interval: cfg.interval,
        offered_frames,
        lost_frames,
        loss_ratio: if offered_frames == 0 {
            0.0
        } else {
            lost_frames as f64 / offered_frames as f64
        },
        lossy_intervals: lossy_interval_starts_s.len() as u32,
        lossy_interval_starts_s,
        worst_interval_loss_ratio: counted().map(|t| t.loss_ratio()).fold(0.0, f64::max),
        tester_limited_intervals: intervals.iter().filter(|t| t.tester_limited).count() as u32,
        intervals,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::{SimDut, SimModel, SoakEvent};

    const fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn losses_placed_at_known_times_land_in_their_intervals() {
        // 100 kfps into a device that forwards 1 Mfps, six 10 s intervals of one stream
        // (1 000 000 frames each). Placed on the timeline:
        // - an outage 12.0–12.5 s: 50 000 frames, all in interval 1 (10–20 s);
        // - a glitch of 7 frames at 35 s: interval 3;
        // - an outage 49.9–50.2 s across a boundary: 10 000 frames in interval 4, 20 000 in 5.
        let mut dut = SimDut::new(SimModel::Fixed { capacity_fps: 1e6 }, 1)
            .with_event(SoakEvent::Outage {
                from: ms(12_000),
                to: ms(12_500),
            })
            .with_event(SoakEvent::Loss {
                at: ms(35_000),
                frames: 7,
            })
            .with_event(SoakEvent::Outage {
                from: ms(49_900),
                to: ms(50_200),
            });
        let cfg = SoakConfig {
            load: Load::fps(1e5),
            total: Duration::from_secs(60),
            interval: Duration::from_secs(10),
        };
        let r = soak(&mut dut, &cfg).unwrap();
        let lost: Vec<u64> = r.intervals.iter().map(|t| t.lost_frames()).collect();
        assert_eq!(lost, vec![0, 50_000, 0, 7, 10_000, 20_000]);
        assert!(r.intervals.iter().all(|t| t.offered_frames == 1_000_000));
        assert!(r.intervals.iter().all(|t| t
            .latency
            .as_ref()
            .is_some_and(|l| l.samples == t.received_frames)));
        assert_eq!(r.offered_frames, 6_000_000);
        assert_eq!(r.lost_frames, 80_007);
        assert_eq!(r.lossy_intervals, 4);
        assert_eq!(r.lossy_interval_starts_s, vec![10.0, 30.0, 40.0, 50.0]);
        assert_eq!(r.worst_interval_loss_ratio, 0.05);
        assert_eq!(r.tester_limited_intervals, 0);
        assert_eq!(r.interval, Duration::from_secs(10));
        // One stream of 60 s: no separate trials, no gaps.
        assert_eq!((dut.soaks(), dut.trials()), (1, 0));
        assert_eq!(dut.trial_seconds(), 60.0);
    }

    #[test]
    fn tester_limited_intervals_are_counted_not_charged() {
        // The tester reaches 50 kfps of the 100 kfps asked: every interval is tester-limited, and
        // the outage inside one of them is not the device's loss in the summary.
        let mut dut = SimDut::new(SimModel::Fixed { capacity_fps: 1e6 }, 1)
            .with_tester_limit(5e4)
            .with_event(SoakEvent::Outage {
                from: ms(1_000),
                to: ms(2_000),
            });
        let cfg = SoakConfig {
            load: Load::fps(1e5),
            total: Duration::from_secs(4),
            interval: Duration::from_secs(2),
        };
        let r = soak(&mut dut, &cfg).unwrap();
        assert_eq!(r.tester_limited_intervals, 2);
        assert_eq!(r.intervals[0].offered_frames, 100_000);
        assert_eq!(r.intervals[0].lost_frames(), 50_000);
        assert_eq!(
            (r.offered_frames, r.lost_frames, r.lossy_intervals),
            (0, 0, 0)
        );
    }

    #[test]
    fn a_measurer_without_continuous_soak_is_an_error_not_a_fallback() {
        struct TrialsOnly(SimDut);
        impl Measurer for TrialsOnly {
            fn trial(&mut self, load: Load, d: Duration) -> Result<TrialResult, LabError> {
                self.0.trial(load, d)
            }
            fn burst(&mut self, frames: u64) -> Result<crate::BurstResult, LabError> {
                self.0.burst(frames)
            }
        }
        let cfg = SoakConfig {
            load: Load::fps(1.0),
            total: Duration::from_secs(2),
            interval: Duration::from_secs(1),
        };
        let mut m = TrialsOnly(SimDut::new(SimModel::Fixed { capacity_fps: 1.0 }, 1));
        let e = soak(&mut m, &cfg).unwrap_err().to_string();
        assert!(e.contains("continuous soak"), "{e}");
        assert_eq!(m.0.trials(), 0);
    }

    #[test]
    fn bad_interval_is_rejected() {
        let mut dut = SimDut::new(SimModel::Fixed { capacity_fps: 1.0 }, 1);
        let cfg = SoakConfig {
            load: Load::fps(1.0),
            total: Duration::from_secs(1),
            interval: Duration::from_secs(2),
        };
        assert!(soak(&mut dut, &cfg)
            .unwrap_err()
            .to_string()
            .contains("interval"));
    }
}
