//! Progress of a long benchmark run on stderr: which block (device, topology, frame size), which
//! procedure, which trial at which load, and an estimate of the time left.
//!
//! [`Progress`] is shared (cheap clones) between the bench loop, which calls
//! [`Progress::start_block`] / [`Progress::finish_block`], the suite runner, which reports each
//! test through [`crate::suite::SuiteObserver`], and [`ProgressMeasurer`], which wraps the real
//! measurer and prints one line per trial or burst before it runs.
//!
//! The time left is the a-priori estimate of the blocks not yet done ([`estimate_block_secs`]:
//! trials a search needs at its resolution × trial duration, plus a fixed set-up cost per block),
//! scaled by how long the finished blocks really took against their estimate.

use std::cell::RefCell;
use std::io::Write;
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::measurer::{BurstResult, Measurer, TrialResult};
use crate::procedures::throughput::TrialPolicy;
use crate::suite::{FrameSize, SuiteObserver, TestSpec};
use crate::{LabError, Load};

/// Seconds a trial costs besides its duration (warm-up, drain, bookkeeping), for estimates.
pub const TRIAL_OVERHEAD_S: f64 = 0.3;

/// Trial-seconds an MLRsearch search spends per second of its goals' duration sums, measured
/// on a noisy 2-core machine (see [`estimate_block_secs`]).
pub const MLR_TRIAL_S_PER_SUM_S: f64 = 4.5;

/// A-priori estimate, in seconds, of running `tests` (those applying to `dut` at `size`) plus
/// `setup_s` of topology and DUT start-up.
pub fn estimate_block_secs(tests: &[TestSpec], dut: &str, size: &FrameSize, setup_s: f64) -> f64 {
    let mut total = setup_s;
    for t in tests.iter().filter(|t| t.applies_to(dut, size)) {
        total += match t {
            TestSpec::Throughput {
                trial_duration_s,
                resolution_percent,
                policy,
                verify,
                learning_s,
                scale,
                ..
            } => {
                // Bisection from 100 % down to the resolution, plus the first trial at 100 %.
                let steps = (100.0 / resolution_percent.max(1e-6))
                    .log2()
                    .ceil()
                    .max(1.0)
                    + 1.0
                    + f64::from(u8::from(*verify));
                // Best-of-N stops at the first pass, worst-of-N at the first failure: about half of
                // the steps take all N trials.
                let n = match policy.0 {
                    TrialPolicy::BestOf(n) | TrialPolicy::WorstOf(n) => (f64::from(n) + 1.0) / 2.0,
                    TrialPolicy::Single => 1.0,
                };
                let points = scale.as_ref().map_or(1, |s| s.points.len()) as f64;
                points * (learning_s + steps * n * (trial_duration_s + TRIAL_OVERHEAD_S))
            }
            TestSpec::Latency {
                fractions_percent,
                trial_duration_s,
                repetitions,
                ..
            } => {
                fractions_percent.len() as f64
                    * f64::from(*repetitions)
                    * (trial_duration_s + TRIAL_OVERHEAD_S)
            }
            TestSpec::Linear {
                start_percent,
                end_percent,
                step_percent,
                trial_duration_s,
                ..
            } => {
                (((end_percent - start_percent) / step_percent.max(1e-6)).floor() + 1.0)
                    * (trial_duration_s + TRIAL_OVERHEAD_S)
            }
            TestSpec::Back2back { repetitions, .. } => {
                f64::from(*repetitions) * 20.0 * TRIAL_OVERHEAD_S
            }
            TestSpec::Mlrsearch {
                goals, searches, ..
            } => {
                let sums: f64 = if goals.is_empty() {
                    42.0
                } else {
                    goals.iter().map(|g| g.duration_sum_s).sum()
                };
                // Measured: a search costs ~4.5 trial-seconds per second of its goals' duration
                // sums on this 2-core machine's noise (the demo of 2026-11-23: 153.5 trial-s
                // for three searches of two 5 s goals, 166 trials), plus each trial's overhead
                // (about one trial per trial-second).
                let trial_s = sums * MLR_TRIAL_S_PER_SUM_S * f64::from(*searches);
                trial_s * (1.0 + TRIAL_OVERHEAD_S)
            }
            TestSpec::Soak { duration_s, .. } => *duration_s,
            // One trial (and its learning trial), then the group's LACP converging again.
            TestSpec::Failover {
                trial_duration_s,
                learning_s,
                ..
            } => learning_s + trial_duration_s + 2.0 * TRIAL_OVERHEAD_S + 5.0,
            // Each address trial sends N learning and N test frames at the learning rate, plus
            // about a second of flush and drain.
            TestSpec::Rfc2889Caching { .. } | TestSpec::Rfc2889Learning { .. } => {
                // Bisection steps plus the two bounds; each trial sends N learning and N test
                // frames at about the learning rate, plus about a second of flush and drain.
                let (span, resolution, n, fps) = match (t.caching_config(), t.learning_config()) {
                    (Some(c), _) => (
                        f64::from(c.max_addresses.saturating_sub(c.min_addresses)),
                        f64::from(c.resolution.max(1)),
                        f64::from(c.max_addresses),
                        c.learn_rate_fps,
                    ),
                    (_, Some(c)) => (
                        c.max_fps - c.min_fps,
                        c.resolution_fps.max(1e-6),
                        f64::from(c.addresses),
                        c.min_fps,
                    ),
                    (None, None) => (1.0, 1.0, 0.0, 1.0),
                };
                let steps = (span / resolution).max(1.0).log2().ceil() + 2.0;
                steps * (2.0 * n / fps.max(1.0) + 1.0)
            }
        };
    }
    total
}

struct State {
    start: Instant,
    blocks: Vec<(String, f64)>,
    current: Option<usize>,
    block_start: Instant,
    done_est: f64,
    done_actual: f64,
    test: String,
    trial: u32,
    out: Box<dyn Write>,
}

/// Shared progress state; clone it to hand it to the suite runner and the measurer wrapper.
#[derive(Clone)]
pub struct Progress(Rc<RefCell<State>>);

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.0.borrow();
        f.debug_struct("Progress")
            .field("blocks", &s.blocks.len())
            .field("current", &s.current)
            .finish()
    }
}

fn hms(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    format!("{}:{:02}", s / 60, s % 60)
}

impl Progress {
    /// Progress over `blocks` (label, estimated seconds), printed to stderr.
    pub fn new(blocks: Vec<(String, f64)>) -> Progress {
        Progress::with_output(blocks, Box::new(std::io::stderr()))
    }

    /// The same, printing to `out` (tests).
    pub fn with_output(blocks: Vec<(String, f64)>, out: Box<dyn Write>) -> Progress {
        let now = Instant::now();
        Progress(Rc::new(RefCell::new(State {
            start: now,
            blocks,
            current: None,
            block_start: now,
            done_est: 0.0,
            done_actual: 0.0,
            test: String::new(),
            trial: 0,
            out,
        })))
    }

    /// Block `index` (device × frame size) starts.
    pub fn start_block(&self, index: usize) {
        let mut s = self.0.borrow_mut();
        s.current = Some(index);
        s.block_start = Instant::now();
        s.test.clear();
        s.trial = 0;
        let line = match s.blocks.get(index) {
            Some((label, _)) => format!(
                "bench [{}/{}] {label}: setting up",
                index + 1,
                s.blocks.len()
            ),
            None => format!("bench [{}] setting up", index + 1),
        };
        let left = Self::left_locked(&s);
        let elapsed = s.start.elapsed().as_secs_f64();
        let _ = writeln!(
            s.out,
            "{line} | elapsed {}, ~{} left",
            hms(elapsed),
            hms(left)
        );
    }

    /// The current block is done (or was skipped: its estimate counts as done either way).
    pub fn finish_block(&self) {
        let mut s = self.0.borrow_mut();
        if let Some(i) = s.current.take() {
            let est = s.blocks.get(i).map_or(0.0, |b| b.1);
            s.done_est += est;
            s.done_actual += s.block_start.elapsed().as_secs_f64();
        }
    }

    /// Estimated seconds left for the whole run.
    pub fn left_secs(&self) -> f64 {
        Self::left_locked(&self.0.borrow())
    }

    fn left_locked(s: &State) -> f64 {
        let total: f64 = s.blocks.iter().map(|b| b.1).sum();
        let current_est = s.current.and_then(|i| s.blocks.get(i)).map_or(0.0, |b| b.1);
        let in_block = s.block_start.elapsed().as_secs_f64();
        let ratio = if s.done_est > 0.0 && s.done_actual > 0.0 {
            s.done_actual / s.done_est
        } else {
            1.0
        };
        let remaining_est = (total - s.done_est - current_est).max(0.0);
        let current_left = if s.current.is_some() {
            (current_est * ratio - in_block).max(0.0)
        } else {
            0.0
        };
        remaining_est * ratio + current_left
    }

    fn trial_line(&self, what: String) {
        let mut s = self.0.borrow_mut();
        s.trial += 1;
        let block = match s
            .current
            .and_then(|i| s.blocks.get(i).map(|b| (i, b.0.clone())))
        {
            Some((i, label)) => format!("[{}/{}] {label}", i + 1, s.blocks.len()),
            None => String::new(),
        };
        let left = Self::left_locked(&s);
        let elapsed = s.start.elapsed().as_secs_f64();
        let line = format!(
            "bench {block} {}: trial {} {what} | elapsed {}, ~{} left",
            s.test,
            s.trial,
            hms(elapsed),
            hms(left)
        );
        let _ = writeln!(s.out, "{line}");
    }

    /// Wraps `m` so each trial prints a progress line before it runs.
    pub fn measurer<'a>(&self, m: &'a mut dyn Measurer, line_max_fps: f64) -> ProgressMeasurer<'a> {
        ProgressMeasurer {
            inner: m,
            progress: self.clone(),
            line_max_fps,
        }
    }
}

impl SuiteObserver for Progress {
    fn test_started(&mut self, _index: usize, spec: &TestSpec, scale_point: Option<u64>) {
        let mut s = self.0.borrow_mut();
        s.test = match (spec, scale_point) {
            (TestSpec::Throughput { policy, .. }, None) if policy.0 != TrialPolicy::Single => {
                format!("throughput {policy}")
            }
            (_, Some(p)) => format!("{} at scale {p}", spec.procedure()),
            _ => spec.procedure().to_string(),
        };
        s.trial = 0;
    }
}

/// A [`Measurer`] that reports each trial to a [`Progress`] and then runs it on the inner one.
#[allow(missing_debug_implementations)] // holds a `dyn Measurer`, which need not be Debug
pub struct ProgressMeasurer<'a> {
    inner: &'a mut dyn Measurer,
    progress: Progress,
    line_max_fps: f64,
}

impl Measurer for ProgressMeasurer<'_> {
    fn trial(&mut self, load: Load, duration: Duration) -> Result<TrialResult, LabError> {
        let pct = if self.line_max_fps > 0.0 {
            100.0 * load.fps / self.line_max_fps
        } else {
            0.0
        };
        self.progress.trial_line(format!(
            "at {:.3} Mfps ({pct:.1} % of line) for {:.1} s",
            load.fps / 1e6,
            duration.as_secs_f64()
        ));
        self.inner.trial(load, duration)
    }

    fn burst(&mut self, frames: u64) -> Result<BurstResult, LabError> {
        self.progress
            .trial_line(format!("burst of {frames} frames"));
        self.inner.burst(frames)
    }

    fn soak(
        &mut self,
        load: Load,
        interval: Duration,
        intervals: u32,
    ) -> Result<Vec<TrialResult>, LabError> {
        self.progress.trial_line(format!(
            "soak at {:.3} Mfps, {intervals} × {:.1} s, one stream",
            load.fps / 1e6,
            interval.as_secs_f64()
        ));
        self.inner.soak(load, interval, intervals)
    }

    fn set_unique_flows(&mut self, unique: bool) -> Result<(), LabError> {
        self.inner.set_unique_flows(unique)
    }

    /// The inner device (its address trials print no progress line of their own).
    fn address_device(&mut self) -> Option<&mut dyn crate::procedures::rfc2889::AddressDevice> {
        self.inner.address_device()
    }

    /// The inner measurer's failover hook (its one trial prints no progress line of its own).
    fn link_failover(&mut self) -> Option<&mut dyn crate::procedures::failover::LinkFailover> {
        self.inner.link_failover()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::{SimDut, SimModel};
    use crate::suite::{run_for_dut_observed, Suite};

    /// A `Write` whose bytes the test can read after the progress printed into it.
    #[derive(Clone, Default)]
    struct Buf(Rc<RefCell<Vec<u8>>>);
    impl Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    const SUITE: &str = r#"
name = "p"
frame_sizes = [64, "imix"]
[[dut]]
name = "a"
topology = "phy2phy-memif"
[[test]]
procedure = "throughput"
trial_duration_s = 1
resolution_percent = 1
[[test]]
procedure = "latency"
fractions_percent = [100]
trial_duration_s = 2
repetitions = 1
[[test]]
procedure = "throughput"
id = "best"
policy = "best-of-3"
trial_duration_s = 1
resolution_percent = 1
frame_sizes = [64]
"#;

    #[test]
    fn estimate_counts_search_steps_policy_and_filters() {
        let s = Suite::parse(SUITE).unwrap();
        // Throughput: ceil(log2(100 / 1)) = 7 bisection steps + the 100 % trial + verification = 9.
        let single = 9.0 * (1.0 + TRIAL_OVERHEAD_S);
        let latency = 2.0 + TRIAL_OVERHEAD_S;
        let at_imix = estimate_block_secs(&s.tests, "a", &FrameSize::Mix("imix".into()), 5.0);
        assert!(
            (at_imix - (5.0 + single + latency)).abs() < 1e-9,
            "{at_imix}"
        );
        // At 64 B the best-of-3 test applies too: (3 + 1) / 2 trials per step on average.
        let at_64 = estimate_block_secs(&s.tests, "a", &FrameSize::Bytes(64), 5.0);
        assert!((at_64 - at_imix - 2.0 * single).abs() < 1e-9, "{at_64}");
    }

    #[test]
    fn prints_block_procedure_trial_and_time_left() {
        let s = Suite::parse(SUITE).unwrap();
        let buf = Buf::default();
        let sizes = [FrameSize::Bytes(64), FrameSize::Mix("imix".into())];
        let blocks = sizes
            .iter()
            .map(|f| {
                (
                    format!("a {}", f.label()),
                    estimate_block_secs(&s.tests, "a", f, 1.0),
                )
            })
            .collect();
        let p = Progress::with_output(blocks, Box::new(buf.clone()));
        let total_before = p.left_secs();
        assert!(total_before > 0.0);
        for (i, size) in sizes.iter().enumerate() {
            p.start_block(i);
            let line = s.line(size).unwrap();
            let mut sim = SimDut::new(
                SimModel::Fixed {
                    capacity_fps: 0.3 * line.max_fps(),
                },
                1,
            )
            .with_line_rate(line.max_fps());
            let mut m = p.measurer(&mut sim, line.max_fps());
            let mut obs = p.clone();
            let r = run_for_dut_observed(
                &s,
                &s.duts[0],
                size,
                None,
                &mut m,
                &mut |_, _, _| Ok(()),
                &mut obs,
            )
            .unwrap();
            assert!(r.error.is_none());
            p.finish_block();
        }
        let text = String::from_utf8(buf.0.borrow().clone()).unwrap();
        assert!(text.contains("[1/2] a 64 B: setting up"), "{text}");
        assert!(text.contains("[2/2] a imix"), "{text}");
        assert!(
            text.contains("throughput: trial 1 at 14.881 Mfps (100.0 % of line)"),
            "{text}"
        );
        assert!(text.contains("latency: trial 1 at"), "{text}");
        assert!(text.contains("throughput best-of-3: trial"), "{text}");
        assert!(text.lines().all(|l| l.contains("left")), "{text}");
        // Every block finished: nothing is left.
        assert_eq!(p.left_secs(), 0.0);
    }
}
