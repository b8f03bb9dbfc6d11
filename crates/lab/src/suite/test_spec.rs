//! The `[[test]]` tables of a suite: one [`TestSpec`] per procedure, with its keys, their
//! defaults and the configurations the procedures take.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use vecswitch_gen::flow::MAX_FLOWS;

use super::{secs, FlowMode, FrameSize, Policy, ScaleKind, SearchMax};
use crate::procedures::failover::FailoverConfig;
use crate::procedures::mlrsearch::SearchGoal;
use crate::procedures::rfc2889::{CachingConfig, LearningRateConfig};
use crate::{LabError, LineRate, Load};

/// One test of the suite, run for every DUT and frame size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "procedure", rename_all = "kebab-case", deny_unknown_fields)]
pub enum TestSpec {
    /// RFC 2544 §26.1 (and BestN/WorstN).
    Throughput {
        #[serde(default)]
        id: Option<String>,
        #[serde(default = "d10")]
        trial_duration_s: f64,
        #[serde(default)]
        loss_tolerance_percent: f64,
        /// Stop width as a percentage of the search's maximum load (`search_max`).
        #[serde(default = "d01")]
        resolution_percent: f64,
        /// Highest load searched: `line-rate` (default, RFC 2544) or `generator-limit` (the
        /// generator's calibrated limit when the bench run measured one, else line rate: a load
        /// the generator cannot offer is tester-limited anyway).
        #[serde(default)]
        search_max: SearchMax,
        /// `single`, `best-of-N`, `worst-of-N`.
        #[serde(default)]
        policy: Policy,
        #[serde(default = "yes")]
        verify: bool,
        /// Learning trial before the search (RFC 2544 §23): seconds at `learning_percent` of line
        /// rate (0 = none). A scale sweep runs it at every point, so a table is filled before the
        /// point's first trial.
        #[serde(default)]
        learning_s: f64,
        /// Load of the learning trial, percent of line rate (default 10): low enough that the
        /// device takes every learning frame.
        #[serde(default = "ten")]
        learning_percent: f64,
        /// `cycle` (default: frame n is flow n mod flows) or `unique`: no frame repeats a 5-tuple,
        /// within a trial or across the trials of the search, so every frame opens a new session
        /// at a stateful device and the throughput found is the **new-session rate** (sessions per
        /// second; [`Measurer::set_unique_flows`], METHODOLOGY.md "New-session rate").
        #[serde(default)]
        flow_mode: FlowMode,
        /// Run once per table size / flow count (scale sweep); the bench command reconfigures the
        /// DUT before each point.
        #[serde(default)]
        scale: Option<ScaleSpec>,
        /// Run only at these of the suite's frame sizes (default: all).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        frame_sizes: Option<Vec<FrameSize>>,
        /// Run only on these of the suite's drivers (`[[dut]] name`; default: all).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duts: Option<Vec<String>>,
    },
    /// RFC 2544 §26.2 at fractions of the measured throughput.
    Latency {
        #[serde(default)]
        id: Option<String>,
        #[serde(default = "fractions")]
        fractions_percent: Vec<f64>,
        #[serde(default = "d120")]
        trial_duration_s: f64,
        #[serde(default = "reps20")]
        repetitions: u32,
    },
    /// Linear loss sweep (seed 000), RFC 2544 §26.3 loss per step.
    Linear {
        #[serde(default)]
        id: Option<String>,
        #[serde(default = "one")]
        start_percent: f64,
        #[serde(default = "hundred")]
        end_percent: f64,
        #[serde(default = "one")]
        step_percent: f64,
        #[serde(default = "d10")]
        trial_duration_s: f64,
    },
    /// RFC 9004 back-to-back frames.
    Back2back {
        #[serde(default)]
        id: Option<String>,
        #[serde(default = "reps50")]
        repetitions: u32,
        /// Longest burst tried, in seconds at line rate (RFC 2544 §26.4: 2 s).
        #[serde(default = "two")]
        max_burst_s: f64,
        #[serde(default = "one_u64")]
        resolution_frames: u64,
    },
    /// draft-ietf-bmwg-mlrsearch.
    Mlrsearch {
        #[serde(default)]
        id: Option<String>,
        /// Defaults to NDR and PDR (0.5 %).
        #[serde(default)]
        goals: Vec<GoalSpec>,
        #[serde(default = "one")]
        min_percent: f64,
        /// Max Load: `line-rate` (default) or `generator-limit`, as for `throughput`.
        #[serde(default)]
        search_max: SearchMax,
        /// Independent searches (each from scratch); more than one reports the median search and
        /// the [min, max] interval of each goal's lower bound over them.
        #[serde(default = "one_u32")]
        searches: u32,
        /// Run only at these of the suite's frame sizes (default: all): a suite can repeat the
        /// search where time allows and search once elsewhere (two `mlrsearch` tests).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        frame_sizes: Option<Vec<FrameSize>>,
    },
    /// Fixed load for a long time.
    Soak {
        #[serde(default)]
        id: Option<String>,
        /// Load as a percentage of the measured throughput.
        #[serde(default = "ninety")]
        percent_of_throughput: f64,
        duration_s: f64,
        #[serde(default = "d10")]
        interval_s: f64,
    },
    /// RFC 2889 §5.7 address caching capacity of a learning bridge ([`crate::procedures::rfc2889`]);
    /// needs a measurer that drives an address device ([`Measurer::address_device`]).
    Rfc2889Caching {
        #[serde(default)]
        id: Option<String>,
        #[serde(default = "one_u32")]
        min_addresses: u32,
        max_addresses: u32,
        #[serde(default = "one_u32")]
        resolution: u32,
        /// Learning rate, frames/s: below the device's learning rate (§5.7.2).
        #[serde(default = "learn_fps")]
        learn_rate_fps: f64,
        /// Run only on these of the suite's drivers (`[[dut]] name`; default: all).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duts: Option<Vec<String>>,
    },
    /// Failover of a link aggregation group ([`crate::procedures::failover`]): one trial at a
    /// fixed load, a member link taken down in its middle (and optionally up again); needs a
    /// measurer that can do it ([`Measurer::link_failover`]: topology `phy2phy-lag`).
    Failover {
        #[serde(default)]
        id: Option<String>,
        /// The load, frames/s (all directions together); or `load_percent`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        load_fps: Option<f64>,
        /// The load as a percentage of line rate; or `load_fps`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        load_percent: Option<f64>,
        #[serde(default = "d6")]
        trial_duration_s: f64,
        /// When the member goes down, seconds from the start of the trial.
        #[serde(default = "two")]
        down_at_s: f64,
        /// When it comes back up (default: after the trial).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        up_at_s: Option<f64>,
        /// Which member link: its index in the measurer's list (phy2phy-lag: 0 = the tester's
        /// `pm0` ↔ the device's `dut0`, group A).
        #[serde(default)]
        member: usize,
        /// A learning trial at the same load first (seconds, 0 = none).
        #[serde(default)]
        learning_s: f64,
        /// The bound the member's outage is compared with (e.g. one fast LACP timeout, 3000).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outage_bound_ms: Option<f64>,
        /// Run only on these of the suite's drivers (`[[dut]] name`; default: all).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duts: Option<Vec<String>>,
    },
    /// RFC 2889 §5.8 address learning rate at `addresses` (at most the caching capacity).
    Rfc2889Learning {
        #[serde(default)]
        id: Option<String>,
        addresses: u32,
        #[serde(default = "hundred")]
        min_fps: f64,
        max_fps: f64,
        #[serde(default = "thousand")]
        resolution_fps: f64,
        /// Run only on these of the suite's drivers (`[[dut]] name`; default: all).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duts: Option<Vec<String>>,
    },
}

/// An MLRsearch goal in a suite; omitted keys take the NDR defaults of [`SearchGoal::ndr`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GoalSpec {
    pub name: String,
    #[serde(default)]
    pub loss_percent: f64,
    #[serde(default = "half")]
    pub exceed_ratio: f64,
    #[serde(default = "width")]
    pub relative_width: f64,
    #[serde(default = "one")]
    pub initial_trial_duration_s: f64,
    #[serde(default = "one")]
    pub final_trial_duration_s: f64,
    #[serde(default = "d21")]
    pub duration_sum_s: f64,
}

impl GoalSpec {
    pub fn goal(&self) -> Result<SearchGoal, LabError> {
        Ok(SearchGoal {
            name: self.name.clone(),
            loss_ratio: self.loss_percent / 100.0,
            exceed_ratio: self.exceed_ratio,
            relative_width: self.relative_width,
            initial_trial_duration: secs(
                "goal.initial_trial_duration_s",
                self.initial_trial_duration_s,
            )?,
            final_trial_duration: secs("goal.final_trial_duration_s", self.final_trial_duration_s)?,
            duration_sum: secs("goal.duration_sum_s", self.duration_sum_s)?,
        })
    }
}

fn half() -> f64 {
    0.5
}
fn width() -> f64 {
    0.005
}
fn d21() -> f64 {
    21.0
}

/// A scale sweep's points and what they mean.
///
/// | kind | the device holds | the generator's traffic |
/// |---|---|---|
/// | `mac-entries` | N static MAC entries on the egress port | destination MACs spread over the N entries |
/// | `routes` | N IPv4 /32 routes toward the egress side | destination addresses spread over the N routes |
/// | `flows` | N rules the traffic does not match | one flow |
///
/// "Spread" is one destination per entry, each in turn, up to the generator's
/// [`MAX_FLOWS`] distinct destinations ([`ScaleSpec::destinations`]; a bigger table gets traffic
/// to its first `MAX_FLOWS` entries). The record of each point says how many it sent to (`flows`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScaleSpec {
    /// What the points count: `mac-entries`, `routes`, `flows`, `sessions` or `rules`.
    pub kind: ScaleKind,
    pub points: Vec<u64>,
}

/// The scale kinds a suite may name.
/// (`sessions`: NAT44 sessions, distinct UDP flows from the inside, testbed `dut::nat`;
/// `rules`: firewall rules with the permit last, `dut::firewall`.)
pub const SCALE_KINDS: &[&str] = ScaleKind::NAMES;

impl ScaleSpec {
    /// Distinct destinations the generator sends to at `point`: one per MAC entry or route, at
    /// most [`MAX_FLOWS`]; `None` for `flows` (the rules are not in the traffic's path).
    pub fn destinations(&self, point: u64) -> Option<u64> {
        self.kind
            .spreads_traffic()
            .then(|| point.clamp(1, u64::from(MAX_FLOWS)))
    }

    pub(super) fn validate(&self) -> Result<(), LabError> {
        if self.points.is_empty() {
            return Err(LabError::invalid(
                "test.scale.points",
                "[]",
                "at least one point",
            ));
        }
        for &p in &self.points {
            if p > u64::from(u32::MAX) || (self.kind.needs_one() && p == 0) {
                return Err(LabError::invalid(
                    "test.scale.points",
                    p,
                    "1..=4294967295 (routes, sessions, rules), 0..=4294967295 (mac-entries, flows)",
                ));
            }
        }
        Ok(())
    }
}

fn d6() -> f64 {
    6.0
}
fn d10() -> f64 {
    10.0
}
fn ten() -> f64 {
    10.0
}
fn d01() -> f64 {
    0.1
}
fn d120() -> f64 {
    120.0
}
fn yes() -> bool {
    true
}
fn fractions() -> Vec<f64> {
    vec![100.0, 90.0, 50.0, 10.0]
}
fn reps20() -> u32 {
    20
}
fn reps50() -> u32 {
    50
}
fn one() -> f64 {
    1.0
}
fn one_u32() -> u32 {
    1
}
fn one_u64() -> u64 {
    1
}
fn hundred() -> f64 {
    100.0
}
fn two() -> f64 {
    2.0
}
fn ninety() -> f64 {
    90.0
}
fn learn_fps() -> f64 {
    1_000.0
}
fn thousand() -> f64 {
    1_000.0
}

impl TestSpec {
    /// The procedure's name as results show it.
    pub fn procedure(&self) -> &'static str {
        match self {
            TestSpec::Throughput { .. } => "throughput",
            TestSpec::Latency { .. } => "latency",
            TestSpec::Linear { .. } => "linear",
            TestSpec::Back2back { .. } => "back2back",
            TestSpec::Mlrsearch { .. } => "mlrsearch",
            TestSpec::Soak { .. } => "soak",
            TestSpec::Rfc2889Caching { .. } => "rfc2889-caching",
            TestSpec::Rfc2889Learning { .. } => "rfc2889-learning",
            TestSpec::Failover { .. } => "failover",
        }
    }

    /// VSPERF-style id: the given one, or `<deployment>_<short procedure name>`.
    pub fn id(&self, deployment: &str) -> String {
        let (given, short) = match self {
            TestSpec::Throughput { id, .. } => (id, "tput"),
            TestSpec::Latency { id, .. } => (id, "latency"),
            TestSpec::Linear { id, .. } => (id, "linear_loss"),
            TestSpec::Back2back { id, .. } => (id, "back2back"),
            TestSpec::Mlrsearch { id, .. } => (id, "ndrpdr"),
            TestSpec::Soak { id, .. } => (id, "soak"),
            TestSpec::Rfc2889Caching { id, .. } => (id, "rfc2889_caching"),
            TestSpec::Rfc2889Learning { id, .. } => (id, "rfc2889_learning"),
            TestSpec::Failover { id, .. } => (id, "failover"),
        };
        given
            .clone()
            .unwrap_or_else(|| format!("{deployment}_{short}"))
    }

    /// Whether the test needs a throughput measured before it.
    pub fn needs_throughput(&self) -> bool {
        matches!(
            self,
            TestSpec::Latency { .. } | TestSpec::Back2back { .. } | TestSpec::Soak { .. }
        )
    }

    /// An `rfc2889-caching` test's search (RFC 2889 §5.7).
    pub fn caching_config(&self) -> Option<CachingConfig> {
        match *self {
            TestSpec::Rfc2889Caching {
                min_addresses,
                max_addresses,
                resolution,
                learn_rate_fps,
                ..
            } => Some(CachingConfig {
                min_addresses,
                max_addresses,
                resolution,
                learn_rate_fps,
            }),
            _ => None,
        }
    }

    /// An `rfc2889-learning` test's search (RFC 2889 §5.8).
    pub fn learning_config(&self) -> Option<LearningRateConfig> {
        match *self {
            TestSpec::Rfc2889Learning {
                addresses,
                min_fps,
                max_fps,
                resolution_fps,
                ..
            } => Some(LearningRateConfig {
                addresses,
                min_fps,
                max_fps,
                resolution_fps,
            }),
            _ => None,
        }
    }

    /// A `failover` test's configuration at `line` (for `load_percent`); `Ok(None)` for other
    /// tests. Errors name the key: exactly one of `load_fps` and `load_percent`, positive.
    pub fn failover_config(&self, line: &LineRate) -> Result<Option<FailoverConfig>, LabError> {
        let TestSpec::Failover {
            load_fps,
            load_percent,
            trial_duration_s,
            down_at_s,
            up_at_s,
            member,
            learning_s,
            outage_bound_ms,
            ..
        } = self
        else {
            return Ok(None);
        };
        let load = match (load_fps, load_percent) {
            (Some(f), None) if f.is_finite() && *f > 0.0 => Load::fps(*f),
            (None, Some(p)) if p.is_finite() && *p > 0.0 && *p <= 100.0 => {
                Load::percent_of(*p, line)
            }
            (f, p) => {
                return Err(LabError::invalid(
                    "test.load_fps / test.load_percent",
                    format!("{f:?} / {p:?}"),
                    "exactly one of them: load_fps > 0 (frames/s) or load_percent in (0, 100]",
                ))
            }
        };
        let up_at = up_at_s.map(|u| secs("test.up_at_s", u)).transpose()?;
        let bound = outage_bound_ms
            .map(|b| secs("test.outage_bound_ms", b / 1e3))
            .transpose()?;
        Ok(Some(FailoverConfig {
            load,
            duration: secs("test.trial_duration_s", *trial_duration_s)?,
            down_at: secs("test.down_at_s", *down_at_s)?,
            up_at,
            member: *member,
            learning: if *learning_s == 0.0 {
                Duration::ZERO
            } else {
                secs("test.learning_s", *learning_s)?
            },
            bound,
        }))
    }

    pub fn scale(&self) -> Option<&ScaleSpec> {
        match self {
            TestSpec::Throughput { scale, .. } => scale.as_ref(),
            _ => None,
        }
    }

    /// Whether the test runs for this driver and frame size (its `duts` / `frame_sizes` filters).
    pub fn applies_to(&self, dut: &str, size: &FrameSize) -> bool {
        match self {
            TestSpec::Throughput {
                frame_sizes, duts, ..
            } => {
                frame_sizes.as_ref().is_none_or(|f| f.contains(size))
                    && duts.as_ref().is_none_or(|d| d.iter().any(|n| n == dut))
            }
            TestSpec::Mlrsearch { frame_sizes, .. } => {
                frame_sizes.as_ref().is_none_or(|f| f.contains(size))
            }
            TestSpec::Rfc2889Caching { duts, .. }
            | TestSpec::Rfc2889Learning { duts, .. }
            | TestSpec::Failover { duts, .. } => {
                duts.as_ref().is_none_or(|d| d.iter().any(|n| n == dut))
            }
            _ => true,
        }
    }
}
