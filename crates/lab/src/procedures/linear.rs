//! Linear loss sweep: offered load from `start_pct` to `end_pct` of line rate in `step_pct`
//! steps, the frame loss rate of each step (RFC 2544 §26.3).
//!
//! RFC 2544 §26.3 steps down from 100 % in 10 % steps until two trials show no loss; EANTC's
//! "linear loss rate test" (seed 000) goes up from 1 % to 100 % in 1 % steps, which also exposes a
//! DUT that loses at 12 % but not at 13–15 %. [`linear_sweep`] does the latter by default and runs
//! every step (no early stop), so non-monotonic loss is visible.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::measurer::{Measurer, TrialResult};
use crate::{LabError, LineRate, Load};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinearSweepConfig {
    pub line: LineRate,
    pub start_pct: f64,
    pub end_pct: f64,
    pub step_pct: f64,
    pub trial_duration: Duration,
}

impl LinearSweepConfig {
    /// 1 % to 100 % in 1 % steps.
    pub fn new(line: LineRate, trial_duration: Duration) -> Self {
        LinearSweepConfig {
            line,
            start_pct: 1.0,
            end_pct: 100.0,
            step_pct: 1.0,
            trial_duration,
        }
    }

    /// The percentages the sweep visits (computed by index, so no floating-point drift).
    pub fn percents(&self) -> Vec<f64> {
        let n = ((self.end_pct - self.start_pct) / self.step_pct + 1e-9).floor() as usize;
        (0..=n)
            .map(|i| self.start_pct + i as f64 * self.step_pct)
            .collect()
    }
}

/// One step of the sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    pub percent: f64,
    pub load_fps: f64,
    /// RFC 2544 §26.3 frame loss rate as a ratio (lost / offered); meaningless if tester-limited.
    pub loss_ratio: f64,
    pub tester_limited: bool,
    pub trial: TrialResult,
}

pub fn linear_sweep<M: Measurer + ?Sized>(
    m: &mut M,
    cfg: &LinearSweepConfig,
) -> Result<Vec<SweepPoint>, LabError> {
    if cfg.step_pct.is_nan() || cfg.step_pct <= 0.0 {
        return Err(LabError::invalid(
            "step_pct",
            cfg.step_pct,
            "a positive percentage",
        ));
    }
    if !(cfg.start_pct > 0.0 && cfg.start_pct <= cfg.end_pct) {
        return Err(LabError::invalid(
            "start_pct",
            cfg.start_pct,
            "above 0 and not above end_pct",
        ));
    }
    const MAX_STEPS: f64 = 10_000.0;
    if (cfg.end_pct - cfg.start_pct) / cfg.step_pct > MAX_STEPS {
        return Err(LabError::invalid(
            "step_pct",
            cfg.step_pct,
            "a step giving at most 10000 steps between start_pct and end_pct",
        ));
    }
    if cfg.trial_duration.is_zero() {
        return Err(LabError::invalid(
            "trial_duration",
            "0 s",
            "a positive duration",
        ));
    }
    let mut out = Vec::new();
    for pct in cfg.percents() {
        let load = Load::percent_of(pct, &cfg.line);
        let t = m.trial(load, cfg.trial_duration)?;
        out.push(SweepPoint {
            percent: pct,
            load_fps: load.fps,
            loss_ratio: t.loss_ratio(),
            tester_limited: t.tester_limited,
            trial: t,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::{SimDut, SimModel};

    #[test]
    fn sweep_shows_loss_above_capacity_only() {
        let line = LineRate::ten_gig(64);
        let cap = line.max_fps() * 0.425; // 42.5 % of line rate
        let mut dut = SimDut::new(SimModel::Fixed { capacity_fps: cap }, 1);
        let pts = linear_sweep(
            &mut dut,
            &LinearSweepConfig::new(line, Duration::from_secs(1)),
        )
        .unwrap();
        assert_eq!(pts.len(), 100);
        assert_eq!(pts[0].percent, 1.0);
        assert_eq!(pts[99].percent, 100.0);
        for p in &pts {
            if p.percent <= 42.0 {
                assert_eq!(p.loss_ratio, 0.0, "{}", p.percent);
            } else {
                // Fixed capacity: loss = 1 − cap/load.
                let expect = 1.0 - 42.5 / p.percent;
                assert!(
                    (p.loss_ratio - expect).abs() < 1e-6,
                    "{} {}",
                    p.percent,
                    p.loss_ratio
                );
            }
        }
    }

    #[test]
    fn custom_range_and_bad_step() {
        let mut cfg = LinearSweepConfig::new(LineRate::ten_gig(1518), Duration::from_secs(1));
        cfg.start_pct = 10.0;
        cfg.end_pct = 30.0;
        cfg.step_pct = 10.0;
        assert_eq!(cfg.percents(), vec![10.0, 20.0, 30.0]);
        cfg.step_pct = 0.0;
        let mut dut = SimDut::new(SimModel::Fixed { capacity_fps: 1.0 }, 1);
        assert!(linear_sweep(&mut dut, &cfg)
            .unwrap_err()
            .to_string()
            .contains("step_pct"));
        cfg.step_pct = 1e-9;
        assert!(linear_sweep(&mut dut, &cfg)
            .unwrap_err()
            .to_string()
            .contains("10000 steps"));
        assert_eq!(dut.trials(), 0);
    }
}
