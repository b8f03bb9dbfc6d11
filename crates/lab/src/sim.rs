//! Simulated devices under test: [`SimDut`] implements [`Measurer`] with a known, seeded behaviour
//! ([`SimModel`]) so every search can be tested against a known answer without sending a packet.
//!
//! Models (all deterministic for a given seed):
//! - [`SimModel::Fixed`]: forwards up to `capacity_fps`, drops the excess.
//! - [`SimModel::Noisy`]: capacity drawn per trial uniformly in `capacity_fps × (1 ± spread)`.
//! - [`SimModel::Sporadic`]: like `Fixed`, but any trial, even far below capacity, loses a few
//!   frames with some probability — the OVS-DPDK behaviour EANTC reports in seed 000 ("10 packets
//!   out of a 1 million", loss at 12 % but not at 13–15 %).
//! - [`SimModel::LinearLoss`]: no loss up to `knee_fps`, then a loss ratio growing linearly with
//!   the load, `slope × (load − knee) / knee`, capped at 1.
//!
//! Any model can be given a buffer of `B` frames (`with_buffer`): excess frames fill it before they
//! are dropped, and it drains at the model's capacity — the RFC 9004 back-to-back model, where a
//! burst at line rate `R` into a DUT draining at `C` is lossless up to `B / (1 − C/R)` frames.
//! A tester limit (`with_tester_limit`) caps what the simulated generator can offer, so trials
//! above it come back tester-limited, and bursts leave at that rate instead of the line rate
//! (their [`BurstResult::achieved_fps`] says so).
//!
//! A soak stream ([`Measurer::soak`]) is one continuous stream read per interval; a test can place
//! [`SoakEvent`]s on its timeline (an outage, a glitch of a few frames at a known second), so the
//! loss of every interval is known before the soak runs.
//!
//! The simulator counts the trial-seconds it has "spent" ([`SimDut::trial_seconds`]) so procedures
//! can be compared on cost, as the MLRsearch draft compares search duration.

use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::measurer::{BurstResult, LatencyStats, Measurer, TrialResult};
use crate::{LabError, Load};

/// The forwarding behaviour of a [`SimDut`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SimModel {
    Fixed {
        capacity_fps: f64,
    },
    Noisy {
        capacity_fps: f64,
        spread: f64,
    },
    Sporadic {
        capacity_fps: f64,
        probability: f64,
        max_lost: u64,
    },
    LinearLoss {
        knee_fps: f64,
        slope: f64,
    },
}

impl SimModel {
    fn nominal_capacity(&self) -> f64 {
        match *self {
            SimModel::Fixed { capacity_fps }
            | SimModel::Noisy { capacity_fps, .. }
            | SimModel::Sporadic { capacity_fps, .. } => capacity_fps,
            SimModel::LinearLoss { knee_fps, .. } => knee_fps,
        }
    }
}

/// Something that happens to a simulated device at a known time of a soak stream (times from the
/// start of the stream), on top of its model's behaviour.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SoakEvent {
    /// The device drops every frame sent in `[from, to)`.
    Outage { from: Duration, to: Duration },
    /// The device drops `frames` frames sent at `at` (a glitch).
    Loss { at: Duration, frames: u64 },
}

/// A simulated DUT plus simulated generator.
#[derive(Debug, Clone)]
pub struct SimDut {
    model: SimModel,
    events: Vec<SoakEvent>,
    buffer_frames: u64,
    line_rate_fps: f64,
    tester_limit_fps: Option<f64>,
    hiccup_every: Option<u64>,
    base_latency_ns: f64,
    rng: ChaCha8Rng,
    trial_seconds: f64,
    trials: u64,
    bursts: u64,
    soaks: u64,
}

impl SimDut {
    /// A DUT with `model`, no buffer, a 10GE/64-byte line rate for bursts, no tester limit, and a
    /// 10 µs base latency.
    pub fn new(model: SimModel, seed: u64) -> SimDut {
        SimDut {
            model,
            events: Vec::new(),
            buffer_frames: 0,
            line_rate_fps: crate::LineRate::ten_gig(64).max_fps(),
            tester_limit_fps: None,
            hiccup_every: None,
            base_latency_ns: 10_000.0,
            rng: ChaCha8Rng::seed_from_u64(seed),
            trial_seconds: 0.0,
            trials: 0,
            bursts: 0,
            soaks: 0,
        }
    }

    /// Gives the DUT a buffer of `frames` frames draining at the model's capacity.
    pub fn with_buffer(mut self, frames: u64) -> SimDut {
        self.buffer_frames = frames;
        self
    }

    /// The rate at which back-to-back bursts arrive (the line rate).
    pub fn with_line_rate(mut self, fps: f64) -> SimDut {
        self.line_rate_fps = fps;
        self
    }

    /// Places `event` on the timeline of every soak stream ([`Measurer::soak`]).
    pub fn with_event(mut self, event: SoakEvent) -> SimDut {
        self.events.push(event);
        self
    }

    /// The simulated generator cannot offer more than `fps`.
    pub fn with_tester_limit(mut self, fps: f64) -> SimDut {
        self.tester_limit_fps = Some(fps);
        self
    }

    /// Every `n`-th trial (the 1st, the (n+1)-th, …) the simulated generator has a hiccup: it
    /// falls behind and drops 3 % of its schedule, so the trial is tester-limited although the
    /// generator could offer the load ([`TrialResult::tester_hiccup`]).
    pub fn with_tester_hiccups(mut self, n: u64) -> SimDut {
        self.hiccup_every = Some(n.max(1));
        self
    }

    /// Replaces the model (e.g. from a scale-sweep callback that "reconfigures the DUT").
    pub fn set_model(&mut self, model: SimModel) {
        self.model = model;
    }

    pub fn model(&self) -> SimModel {
        self.model
    }

    /// Simulated seconds of traffic sent so far (trials and bursts).
    pub fn trial_seconds(&self) -> f64 {
        self.trial_seconds
    }

    /// Number of trials run so far.
    pub fn trials(&self) -> u64 {
        self.trials
    }

    /// Number of bursts run so far.
    pub fn bursts(&self) -> u64 {
        self.bursts
    }

    /// Number of soak streams run so far.
    pub fn soaks(&self) -> u64 {
        self.soaks
    }

    /// This trial's capacity (noise applied).
    fn capacity(&mut self) -> f64 {
        match self.model {
            SimModel::Noisy {
                capacity_fps,
                spread,
            } => {
                let u: f64 = self.rng.gen_range(-1.0..=1.0);
                capacity_fps * (1.0 + spread * u)
            }
            m => m.nominal_capacity(),
        }
    }

    /// Frames lost when `offered` frames arrive at `rate` fps over `secs` seconds.
    fn lost(&mut self, offered: u64, rate: f64, secs: f64) -> u64 {
        let capacity = self.capacity();
        let mut lost = match self.model {
            SimModel::LinearLoss { knee_fps, slope } => {
                if rate > knee_fps {
                    let ratio = (slope * (rate - knee_fps) / knee_fps).min(1.0);
                    (offered as f64 * ratio).round() as u64
                } else {
                    0
                }
            }
            _ => {
                // A partial frame of excess is a frame that did not fit: round up (with a little
                // slack for floating-point noise on exact fits).
                let excess = offered as f64 - capacity * secs - self.buffer_frames as f64;
                (excess - 1e-6).max(0.0).ceil() as u64
            }
        };
        if let SimModel::Sporadic {
            probability,
            max_lost,
            ..
        } = self.model
        {
            if lost == 0 && max_lost > 0 && self.rng.gen_bool(probability.clamp(0.0, 1.0)) {
                lost = self.rng.gen_range(1..=max_lost);
            }
        }
        lost.min(offered)
    }

    fn latency(&mut self, rate: f64, received: u64) -> LatencyStats {
        // Queueing-like growth towards capacity: base × (1 + ρ/(1−ρ)), ρ capped at 0.99.
        let rho = (rate / self.model.nominal_capacity()).clamp(0.0, 0.99);
        let avg = self.base_latency_ns * (1.0 + rho / (1.0 - rho));
        let wobble: f64 = self.rng.gen_range(0.95..=1.05);
        let avg = avg * wobble;
        LatencyStats {
            min_ns: self.base_latency_ns * 0.8,
            avg_ns: avg,
            max_ns: avg * 6.0,
            p50_ns: avg * 0.95,
            p90_ns: avg * 1.4,
            p99_ns: avg * 2.0,
            p99_9_ns: avg * 3.0,
            p99_99_ns: avg * 4.5,
            jitter_mean_ns: avg * 0.1,
            jitter_max_ns: avg * 2.0,
            samples: received,
            histogram: None,
        }
    }
}

impl Measurer for SimDut {
    fn trial(&mut self, load: Load, duration: Duration) -> Result<TrialResult, LabError> {
        if !(load.fps.is_finite() && load.fps >= 0.0) {
            return Err(LabError::invalid(
                "load_fps",
                load.fps,
                "a finite rate >= 0",
            ));
        }
        let secs = duration.as_secs_f64();
        let intended = load.frames_in(secs);
        let mut offered = match self.tester_limit_fps {
            Some(limit) => intended.min((limit * secs).floor() as u64),
            None => intended,
        };
        if self
            .hiccup_every
            .is_some_and(|n| self.trials.is_multiple_of(n))
        {
            offered -= offered.div_ceil(33);
        }
        let rate = if secs > 0.0 {
            offered as f64 / secs
        } else {
            0.0
        };
        let lost = self.lost(offered, rate, secs);
        let received = offered - lost;
        self.trial_seconds += secs;
        self.trials += 1;
        let mut r = TrialResult::new(load, duration, offered, received, duration);
        r.latency = Some(self.latency(rate, received));
        Ok(r)
    }

    /// One stream at `load` (capped by the tester limit) from time 0: the frames sent by stream
    /// time `t` are ⌊rate × t⌋, so intervals add up to the whole stream exactly. Each interval
    /// loses what the model loses at that rate plus what the [`SoakEvent`]s inside it drop.
    fn soak(
        &mut self,
        load: Load,
        interval: Duration,
        intervals: u32,
    ) -> Result<Vec<TrialResult>, LabError> {
        if !(load.fps.is_finite() && load.fps >= 0.0) {
            return Err(LabError::invalid(
                "load_fps",
                load.fps,
                "a finite rate >= 0",
            ));
        }
        if interval.is_zero() {
            return Err(LabError::invalid("interval", "0 s", "a positive duration"));
        }
        let rate = match self.tester_limit_fps {
            Some(limit) => load.fps.min(limit),
            None => load.fps,
        };
        // 1e-6 frame of slack: 49.9 s × 1e5 fps is 4 990 000 frames, not 4 989 999.
        let sent_by = |t: f64| (rate * t + 1e-6).floor() as u64;
        let iv = interval.as_secs_f64();
        let mut out = Vec::with_capacity(intervals as usize);
        for i in 0..intervals {
            let (t0, t1) = (f64::from(i) * iv, f64::from(i + 1) * iv);
            let offered = sent_by(t1) - sent_by(t0);
            let mut lost = self.lost(offered, rate, iv);
            for e in &self.events {
                match *e {
                    SoakEvent::Outage { from, to } => {
                        let a = from.as_secs_f64().max(t0);
                        let b = to.as_secs_f64().min(t1);
                        if b > a {
                            lost += sent_by(b) - sent_by(a);
                        }
                    }
                    SoakEvent::Loss { at, frames } => {
                        if (t0..t1).contains(&at.as_secs_f64()) {
                            lost += frames;
                        }
                    }
                }
            }
            let received = offered - lost.min(offered);
            let mut r = TrialResult::new(load, interval, offered, received, interval);
            r.latency = Some(self.latency(rate, received));
            out.push(r);
        }
        self.trial_seconds += iv * f64::from(intervals);
        self.soaks += 1;
        Ok(out)
    }

    /// The burst leaves at the line rate, or at the tester limit when that is lower: the burst
    /// records that rate ([`BurstResult::achieved_fps`]), and the DUT sees it arrive at that rate.
    fn burst(&mut self, frames: u64) -> Result<BurstResult, LabError> {
        let arrival = match self.tester_limit_fps {
            Some(limit) if limit < self.line_rate_fps => limit,
            _ => self.line_rate_fps,
        };
        let secs = frames as f64 / arrival;
        let lost = self.lost(frames, arrival, secs);
        self.trial_seconds += secs;
        self.bursts += 1;
        Ok(BurstResult::new(
            frames,
            frames,
            frames - lost,
            Duration::from_secs_f64(secs),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn fixed_capacity_drops_exactly_the_excess() {
        let mut d = SimDut::new(
            SimModel::Fixed {
                capacity_fps: 1000.0,
            },
            1,
        );
        assert_eq!(d.trial(Load::fps(900.0), S).unwrap().lost_frames(), 0);
        assert_eq!(d.trial(Load::fps(1000.0), S).unwrap().lost_frames(), 0);
        assert_eq!(d.trial(Load::fps(1200.0), S).unwrap().lost_frames(), 200);
        assert_eq!(d.trial_seconds(), 3.0);
        assert_eq!(d.trials(), 3);
    }

    #[test]
    fn tester_limit_caps_offered_and_flags_the_trial() {
        let mut d = SimDut::new(SimModel::Fixed { capacity_fps: 1e6 }, 1).with_tester_limit(500.0);
        let t = d.trial(Load::fps(800.0), S).unwrap();
        assert!(t.tester_limited);
        assert_eq!(t.offered_frames, 500);
        assert_eq!(t.lost_frames(), 0);
        let t = d.trial(Load::fps(400.0), S).unwrap();
        assert!(!t.tester_limited);
    }

    #[test]
    fn same_seed_same_results() {
        let model = SimModel::Sporadic {
            capacity_fps: 1e6,
            probability: 0.3,
            max_lost: 10,
        };
        let run = |seed| {
            let mut d = SimDut::new(model, seed);
            (0..50)
                .map(|_| d.trial(Load::fps(5e5), S).unwrap().lost_frames())
                .collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
        let losses = run(7);
        assert!(losses.iter().any(|&l| l > 0) && losses.contains(&0));
        assert!(losses.iter().all(|&l| l <= 10));
    }

    #[test]
    fn linear_loss_grows_above_the_knee() {
        let mut d = SimDut::new(
            SimModel::LinearLoss {
                knee_fps: 1000.0,
                slope: 0.5,
            },
            1,
        );
        assert_eq!(d.trial(Load::fps(1000.0), S).unwrap().lost_frames(), 0);
        // 1200: 0.5 × 0.2 = 10 % of 1200 = 120.
        assert_eq!(d.trial(Load::fps(1200.0), S).unwrap().lost_frames(), 120);
        assert_eq!(d.trial(Load::fps(1e6), S).unwrap().received_frames, 0);
    }

    #[test]
    fn buffered_dut_absorbs_bursts_up_to_the_rfc9004_length() {
        // B = 1000 frames, drain 0.5 × R: lossless up to B / (1 − 0.5) = 2000 frames.
        let mut d = SimDut::new(SimModel::Fixed { capacity_fps: 5e6 }, 1)
            .with_buffer(1000)
            .with_line_rate(1e7);
        assert!(d.burst(2000).unwrap().lossless());
        assert!(!d.burst(2002).unwrap().lossless());
        assert_eq!(d.bursts(), 2);
        assert!((d.trial_seconds() - 4002.0 / 1e7).abs() < 1e-12);
    }

    #[test]
    fn slow_tester_sends_bursts_at_its_own_rate() {
        // Line rate 1 Mfps but the tester manages 0.5 Mfps: a 1000-frame burst takes 2 ms and
        // records 0.5 Mfps; the DUT (B = 100, drains 0.25 Mfps) fills at 0.25 Mfps, so it is
        // lossless up to 100 / (1 − 0.25/0.5) = 200 frames, not 100 / (1 − 0.25) ≈ 133.
        let mut d = SimDut::new(
            SimModel::Fixed {
                capacity_fps: 2.5e5,
            },
            1,
        )
        .with_buffer(100)
        .with_line_rate(1e6)
        .with_tester_limit(5e5);
        let b = d.burst(1000).unwrap();
        assert_eq!(b.send_duration, Duration::from_millis(2));
        assert_eq!(b.achieved_fps, Some(5e5));
        assert!(!b.tester_limited); // sent in full; the rate is for the procedure to judge
        assert!(d.burst(200).unwrap().lossless());
        assert!(!d.burst(202).unwrap().lossless());
    }

    #[test]
    fn bad_load_is_an_error_not_a_panic() {
        let mut d = SimDut::new(SimModel::Fixed { capacity_fps: 1.0 }, 1);
        assert!(d.trial(Load::fps(f64::NAN), S).is_err());
        assert!(d.trial(Load::fps(-1.0), S).is_err());
    }
}
