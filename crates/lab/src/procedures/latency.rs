//! Latency at and below the throughput (RFC 2544 §26.2), extended with percentiles and jitter.
//!
//! RFC 2544 §26.2 measures latency at the throughput rate for each frame size, each trial at least
//! 120 s, repeated at least 20 times and averaged. Seed 003 (VSPERF) and seed 000 (EANTC) report
//! min/avg/max; we add p50…p99.99 and RFC 4689 §3.2.5 jitter, and measure at fractions of the
//! throughput too (default 100 %, 90 %, 50 %, 10 %), because latency right at the throughput is
//! dominated by queueing and says little about a lightly loaded switch.
//!
//! [`latency_at`] returns one [`LatencyPoint`] per fraction. Tester-limited trials are kept but
//! flagged; their latency is not combined into the point's statistics.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::measurer::{LatencyStats, Measurer, TrialResult};
use crate::{LabError, Load};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyConfig {
    /// Fractions of the throughput to measure at (1.0 = at the throughput).
    pub fractions: Vec<f64>,
    /// RFC 2544 §26.2: at least 120 s.
    pub trial_duration: Duration,
    /// RFC 2544 §26.2: at least 20.
    pub repetitions: u32,
}

impl Default for LatencyConfig {
    fn default() -> Self {
        LatencyConfig {
            fractions: vec![1.0, 0.9, 0.5, 0.1],
            trial_duration: Duration::from_secs(120),
            repetitions: 20,
        }
    }
}

/// Latency measured at one fraction of the throughput.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyPoint {
    pub fraction: f64,
    pub load_fps: f64,
    /// Combined statistics over the repetitions ([`LatencyStats::combine`]); `None` when the tester
    /// measured no latency or every trial was tester-limited.
    pub stats: Option<LatencyStats>,
    /// Worst loss ratio seen over the repetitions (latency under loss deserves a look).
    pub max_loss_ratio: f64,
    pub tester_limited_trials: u32,
    pub trials: Vec<TrialResult>,
}

/// Measures latency at each configured fraction of `throughput_fps`.
pub fn latency_at<M: Measurer + ?Sized>(
    m: &mut M,
    throughput_fps: f64,
    cfg: &LatencyConfig,
) -> Result<Vec<LatencyPoint>, LabError> {
    if !(throughput_fps.is_finite() && throughput_fps > 0.0) {
        return Err(LabError::invalid(
            "throughput_fps",
            throughput_fps,
            "a positive rate (run the throughput search first)",
        ));
    }
    if cfg.repetitions == 0 {
        return Err(LabError::invalid("repetitions", 0, "at least 1"));
    }
    if let Some(f) = cfg.fractions.iter().find(|f| !(**f > 0.0 && **f <= 1.0)) {
        return Err(LabError::invalid("fractions", f, "each in (0, 1]"));
    }
    let mut points = Vec::with_capacity(cfg.fractions.len());
    for &fraction in &cfg.fractions {
        let load = Load::fps(throughput_fps * fraction);
        let mut trials = Vec::new();
        for _ in 0..cfg.repetitions {
            trials.push(m.trial(load, cfg.trial_duration)?);
        }
        let usable: Vec<LatencyStats> = trials
            .iter()
            .filter(|t| !t.tester_limited)
            .filter_map(|t| t.latency.clone())
            .collect();
        points.push(LatencyPoint {
            fraction,
            load_fps: load.fps,
            stats: LatencyStats::combine(&usable),
            max_loss_ratio: trials
                .iter()
                .filter(|t| !t.tester_limited)
                .map(|t| t.loss_ratio())
                .fold(0.0, f64::max),
            tester_limited_trials: trials.iter().filter(|t| t.tester_limited).count() as u32,
            trials,
        });
    }
    Ok(points)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::{SimDut, SimModel};

    #[test]
    fn measures_each_fraction_with_repetitions() {
        let mut dut = SimDut::new(SimModel::Fixed { capacity_fps: 1e6 }, 1);
        let cfg = LatencyConfig {
            trial_duration: Duration::from_secs(1),
            repetitions: 3,
            ..Default::default()
        };
        let pts = latency_at(&mut dut, 1e6, &cfg).unwrap();
        assert_eq!(pts.len(), 4);
        assert_eq!(dut.trials(), 12);
        let loads: Vec<f64> = pts.iter().map(|p| p.load_fps).collect();
        assert_eq!(loads, vec![1e6, 9e5, 5e5, 1e5]);
        for p in &pts {
            let s = p.stats.as_ref().unwrap();
            assert!(
                s.min_ns <= s.p50_ns
                    && s.p50_ns <= s.p99_ns
                    && s.p99_ns <= s.p99_99_ns
                    && s.p99_99_ns <= s.max_ns
            );
            assert_eq!(p.trials.len(), 3);
            assert_eq!(p.max_loss_ratio, 0.0);
        }
        // The simulated DUT queues more near capacity.
        assert!(pts[0].stats.as_ref().unwrap().avg_ns > pts[3].stats.as_ref().unwrap().avg_ns);
    }

    #[test]
    fn tester_limited_latency_is_not_combined() {
        let mut dut = SimDut::new(SimModel::Fixed { capacity_fps: 1e6 }, 1).with_tester_limit(1e5);
        let cfg = LatencyConfig {
            fractions: vec![1.0, 0.05],
            trial_duration: Duration::from_secs(1),
            repetitions: 2,
        };
        let pts = latency_at(&mut dut, 1e6, &cfg).unwrap();
        assert_eq!(pts[0].tester_limited_trials, 2);
        assert!(pts[0].stats.is_none());
        assert_eq!(pts[1].tester_limited_trials, 0);
        assert!(pts[1].stats.is_some());
    }

    #[test]
    fn rejects_bad_parameters() {
        let mut dut = SimDut::new(SimModel::Fixed { capacity_fps: 1e6 }, 1);
        assert!(latency_at(&mut dut, 0.0, &LatencyConfig::default())
            .unwrap_err()
            .to_string()
            .contains("throughput_fps"));
        let cfg = LatencyConfig {
            fractions: vec![1.5],
            ..Default::default()
        };
        assert!(latency_at(&mut dut, 1.0, &cfg)
            .unwrap_err()
            .to_string()
            .contains("fractions"));
    }
}
