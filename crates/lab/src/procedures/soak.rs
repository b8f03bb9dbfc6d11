//! Continuous soak: a fixed load for a long time, reported per interval.
//!
//! Long-duration stability is what EANTC's overnight runs and VSPERF's "soak" tests look for: a
//! switch that is lossless for 60 s can still drop frames once an hour. The [`Measurer`] runs one
//! trial per interval back to back (the real generator keeps streaming and reads its counters at
//! each interval boundary); [`soak`] returns every interval and a summary.

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
    pub intervals: Vec<TrialResult>,
    pub offered_frames: u64,
    pub lost_frames: u64,
    pub loss_ratio: f64,
    /// Intervals with any loss (tester-limited ones excluded).
    pub lossy_intervals: u32,
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
    let n = (cfg.total.as_secs_f64() / cfg.interval.as_secs_f64()).round() as u64;
    let mut intervals = Vec::new();
    for _ in 0..n {
        intervals.push(m.trial(cfg.load, cfg.interval)?);
    }
    let counted = || intervals.iter().filter(|t| !t.tester_limited);
    let offered_frames: u64 = counted().map(|t| t.offered_frames).sum();
    let lost_frames: u64 = counted().map(|t| t.lost_frames()).sum();
    Ok(SoakResult {
        offered_frames,
        lost_frames,
        loss_ratio: if offered_frames == 0 {
            0.0
        } else {
            lost_frames as f64 / offered_frames as f64
        },
        lossy_intervals: counted().filter(|t| t.lost_frames() > 0).count() as u32,
        worst_interval_loss_ratio: counted().map(|t| t.loss_ratio()).fold(0.0, f64::max),
        tester_limited_intervals: intervals.iter().filter(|t| t.tester_limited).count() as u32,
        intervals,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::{SimDut, SimModel};

    #[test]
    fn soak_counts_sporadic_loss_per_interval() {
        let model = SimModel::Sporadic {
            capacity_fps: 1e6,
            probability: 0.2,
            max_lost: 5,
        };
        let mut dut = SimDut::new(model, 9);
        let cfg = SoakConfig {
            load: Load::fps(5e5),
            total: Duration::from_secs(600),
            interval: Duration::from_secs(10),
        };
        let r = soak(&mut dut, &cfg).unwrap();
        assert_eq!(r.intervals.len(), 60);
        assert_eq!(dut.trial_seconds(), 600.0);
        let lossy = r.intervals.iter().filter(|t| t.lost_frames() > 0).count() as u32;
        assert_eq!(r.lossy_intervals, lossy);
        assert!(lossy > 0 && lossy < 60);
        assert_eq!(
            r.lost_frames,
            r.intervals.iter().map(|t| t.lost_frames()).sum::<u64>()
        );
        assert_eq!(r.offered_frames, 60 * 5_000_000);
        assert!(r.worst_interval_loss_ratio <= 5.0 / 5e6);
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
