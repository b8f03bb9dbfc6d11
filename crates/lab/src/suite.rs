//! Benchmark suites: the TOML file `vecswitch bench SUITE.toml` runs ([`Suite`]), and
//! [`run_test`], which runs one [`TestSpec`] on any [`Measurer`] and returns its [`Outcome`].
//!
//! A suite names the devices under test ([`DutSpec`]: a driver name and a topology name, as the
//! testbed crate's `DutKind::parse` and `Topology::from_str` accept them — the lab does not depend
//! on the testbed, the bench command joins the two), the frame sizes and line rate, and the tests
//! in order. A test that needs the throughput (latency, back-to-back, soak) uses the one measured
//! by an earlier `throughput` or `mlrsearch` test of the same device and frame size.
//!
//! ```toml
//! name = "phy2phy baseline"
//! frame_sizes = [64, 512, 1518, "imix"]
//! line_rate_gbps = 10
//! bidirectional = false
//!
//! [[dut]]
//! name = "vecswitch-xconnect"
//! topology = "phy2phy-memif"
//!
//! [[test]]
//! procedure = "throughput"
//! trial_duration_s = 10
//! loss_tolerance_percent = 0.001
//! policy = "best-of-5"
//! frame_sizes = [64]              # only these sizes (and `duts = [...]`: only these drivers)
//!
//! [[test]]
//! procedure = "back2back"
//! repetitions = 50
//! ```
//!
//! Frame sizes are numbers (bytes with FCS) or named mixes the generator knows ([`FrameSize`]:
//! `imix`, `imix-trex`, `imix-spirent-tcpv4`); a mix's line rate uses its mean frame size.
//! [`run_for_dut_observed`] runs one device and frame size, tells a [`SuiteObserver`] which test
//! starts, and keeps the records measured before an error (a stop on Ctrl-C loses nothing).
//!
//! A throughput test with `scale = { kind, points }` runs once per table size ([`ScaleSpec`]: MAC
//! entries, routes or rules); the bench fills the device's table before each point and spreads
//! the traffic over it, and each record's `flows` says over how many destinations.
//!
//! `docs/METHODOLOGY.md` documents every key. Unknown keys are errors (a typo must not silently
//! fall back to a default).

use std::time::Duration;

use serde::{Deserialize, Serialize};
use vecswitch_gen::flow::MAX_FLOWS;
use vecswitch_gen::SizeSpec;

use crate::measurer::Measurer;
use crate::procedures::back_to_back::{back_to_back, BackToBackConfig};
use crate::procedures::failover::{failover, FailoverConfig};
use crate::procedures::latency::{latency_at, LatencyConfig};
use crate::procedures::linear::{linear_sweep, LinearSweepConfig};
use crate::procedures::mlrsearch::{mlrsearch, mlrsearch_repeated, MlrConfig, SearchGoal};
use crate::procedures::rfc2889::{
    address_caching_capacity, address_learning_rate, AddressDevice, CachingConfig,
    LearningRateConfig,
};
use crate::procedures::soak::{soak, SoakConfig};
use crate::procedures::throughput::{throughput, ThroughputConfig, TrialPolicy};
use crate::results::{Outcome, TestRecord};
use crate::sim::SimModel;
use crate::{LabError, LineRate, Load};

/// A benchmark suite file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Suite {
    pub name: String,
    #[serde(default = "default_sizes")]
    pub frame_sizes: Vec<FrameSize>,
    #[serde(default = "default_gbps")]
    pub line_rate_gbps: f64,
    #[serde(default)]
    pub bidirectional: bool,
    /// Flows per direction the generator sends (VSPERF's "1 flow", "4096 flows").
    #[serde(default)]
    pub flows: Option<u64>,
    /// Shortfall of offered frames (percent of intended) before a trial is tester-limited;
    /// default 0.1 (the lab's 99.9 % rule). Loss is counted against offered frames either way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tester_tolerance_percent: Option<f64>,
    #[serde(rename = "dut")]
    pub duts: Vec<DutSpec>,
    #[serde(rename = "test", default)]
    pub tests: Vec<TestSpec>,
    /// Device cost at equal offered loads, measured for every device and frame size after its
    /// tests ([`DeviceCostSpec`]); results in `device_cost` of the results document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_cost: Option<DeviceCostSpec>,
}

/// `[device_cost]`: trials at fixed loads around which the testbed reads each device's busy time
/// (docs/TESTBED.md, "Device cost"). The same loads for every device make the costs comparable:
/// the report shows under "Device cost at equal offered loads" only the loads at which every
/// device of a topology and frame size was measured, the others under "Device cost at other
/// loads" ([`crate::device_cost::split_by_common_load`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceCostSpec {
    /// Fixed offered loads, frames/s (per direction when bidirectional).
    #[serde(default)]
    pub loads_fps: Vec<f64>,
    /// A load chosen per group (the devices of one topology and frame size): this percent of
    /// the lower of the generator's calibrated limit and the group's lowest throughput (NDR),
    /// rounded down to the 1-2-5 series, the same for every device of the group
    /// ([`crate::device_cost::GroupLoads`], [`crate::device_cost::group_load`]). A device costed
    /// before its group's other NDRs are known gets the lowest so far; once every device of the
    /// group has an NDR the load is settled and kept for the group's later rounds. (The older
    /// per-cell choice, [`crate::device_cost::cell_load`], used the cell's own NDR: two devices
    /// of one topology got different loads.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_percent: Option<f64>,
    #[serde(default = "d5")]
    pub trial_duration_s: f64,
    /// Trials per load; the table shows their medians.
    #[serde(default = "three")]
    pub repetitions: u32,
}

impl DeviceCostSpec {
    pub fn trial_duration(&self) -> Result<Duration, LabError> {
        secs("device_cost.trial_duration_s", self.trial_duration_s)
    }

    fn validate(&self) -> Result<(), LabError> {
        if self.loads_fps.is_empty() && self.load_percent.is_none() {
            return Err(LabError::invalid(
                "device_cost.loads_fps",
                "[]",
                "at least one load in frames/s, or load_percent",
            ));
        }
        if let Some(p) = self
            .load_percent
            .filter(|p| !(p.is_finite() && *p > 0.0 && *p <= 100.0))
        {
            return Err(LabError::invalid(
                "device_cost.load_percent",
                p,
                "a percent in (0, 100] of the lower of the generator's limit and the throughput",
            ));
        }
        for &l in &self.loads_fps {
            if !(l.is_finite() && l > 0.0) {
                return Err(LabError::invalid(
                    "device_cost.loads_fps",
                    l,
                    "positive loads in frames/s",
                ));
            }
        }
        if self.repetitions == 0 {
            return Err(LabError::invalid(
                "device_cost.repetitions",
                0,
                "at least 1",
            ));
        }
        self.trial_duration().map(|_| ())
    }
}

fn d5() -> f64 {
    5.0
}

fn three() -> u32 {
    3
}

fn default_sizes() -> Vec<FrameSize> {
    crate::load::RFC2544_FRAME_SIZES
        .iter()
        .map(|&b| FrameSize::Bytes(b))
        .collect()
}

/// A frame size of a suite: bytes with FCS (`64`), or a mix the generator knows (`"imix"`,
/// `"imix-trex"`, `"imix-spirent-tcpv4"`, or its custom `"64:7,570:4,1518:1"`, see
/// `vecswitch_gen::SizeSpec::parse`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(untagged)]
pub enum FrameSize {
    Bytes(u32),
    Mix(String),
}

impl FrameSize {
    /// The generator's size specification (a fixed size or the named mix).
    pub fn spec(&self) -> Result<SizeSpec, LabError> {
        match self {
            FrameSize::Bytes(b) => {
                let b16 = u16::try_from(*b).map_err(|_| LabError::invalid("frame_sizes", b, "64..=16384 bytes including FCS, or a mix name"))?;
                Ok(SizeSpec::Fixed(b16))
            }
            FrameSize::Mix(name) => match SizeSpec::parse(name) {
                Ok(spec @ SizeSpec::Mix { .. }) if spec.name() == *name => Ok(spec),
                _ => Err(LabError::invalid("frame_sizes", name, "a frame size in bytes (64..=16384) or a mix: imix, imix-trex, imix-spirent-tcpv4, or size:weight,size:weight,...")),
            },
        }
    }

    /// The mix's name, or None for a fixed size.
    pub fn mix(&self) -> Option<&str> {
        match self {
            FrameSize::Bytes(_) => None,
            FrameSize::Mix(n) => Some(n),
        }
    }

    /// `64 B` or `imix`.
    pub fn label(&self) -> String {
        match self {
            FrameSize::Bytes(b) => format!("{b} B"),
            FrameSize::Mix(n) => n.clone(),
        }
    }

    /// `64` or `imix` (as the generator and file names spell it).
    pub fn name(&self) -> String {
        match self {
            FrameSize::Bytes(b) => b.to_string(),
            FrameSize::Mix(n) => n.clone(),
        }
    }
}

impl From<u32> for FrameSize {
    fn from(b: u32) -> FrameSize {
        FrameSize::Bytes(b)
    }
}

fn default_gbps() -> f64 {
    10.0
}

/// A device under test and where it runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DutSpec {
    /// Driver name: vecswitch-xconnect, vecswitch-bridge, linux-bridge, ovs, testpmd-io, …
    pub name: String,
    /// Topology name: phy2phy-memif, phy2phy-veth, pvp-memif, pvp-veth, external.
    pub topology: String,
    /// Model used instead of the real device by `vecswitch bench --simulate`.
    #[serde(default)]
    pub sim: Option<SimSpec>,
    /// `external` topology only: the generator's two ports on a device the lab does not start
    /// (`afp:IF[@NETNS]`, `memif:SOCKET[@client|@server]`; docs/TESTBED.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ports: Option<Vec<String>>,
    /// `external` driver only: a shell command printing the device's counters (`key=value`
    /// lines or a JSON object; docs/TESTBED.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters_command: Option<String>,
}

impl DutSpec {
    /// The external-device keys go together: topology `external` needs two `ports`, and
    /// `ports` / `counters_command` belong to it alone.
    fn validate(&self) -> Result<(), LabError> {
        let external = self.topology == "external";
        match (&self.ports, external) {
            (Some(p), true) if p.len() == 2 => {}
            (Some(p), true) => {
                return Err(LabError::invalid(
                    "dut.ports",
                    format!("{} port(s)", p.len()),
                    "exactly two generator ports, e.g. [\"afp:veth0@ns\", \"afp:veth1@ns\"]",
                ))
            }
            (None, true) => {
                return Err(LabError::invalid(
                    "dut.ports",
                    "missing",
                    "the generator's two ports on the external device, e.g. [\"afp:veth0@ns\", \"afp:veth1@ns\"]",
                ))
            }
            (Some(_), false) => {
                return Err(LabError::invalid(
                    "dut.ports",
                    &self.topology,
                    "ports only with topology = \"external\" (the lab builds the others)",
                ))
            }
            (None, false) => {}
        }
        if self.counters_command.is_some() && self.name != "external" {
            return Err(LabError::invalid(
                "dut.counters_command",
                &self.name,
                "a counters_command only with name = \"external\" (the other drivers read their own counters)",
            ));
        }
        Ok(())
    }

    /// `phy2phy` / `pvp` / … : the topology name up to its first `-`, VSPERF's "deployment".
    pub fn deployment(&self) -> &str {
        self.topology.split('-').next().unwrap_or(&self.topology)
    }
}

/// A simulated device for `--simulate` runs (see [`crate::sim`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "model", rename_all = "kebab-case", deny_unknown_fields)]
pub enum SimSpec {
    Fixed {
        capacity_mfps: f64,
        #[serde(default)]
        buffer_frames: u64,
    },
    Noisy {
        capacity_mfps: f64,
        spread: f64,
        #[serde(default)]
        buffer_frames: u64,
    },
    Sporadic {
        capacity_mfps: f64,
        probability: f64,
        max_lost: u64,
        #[serde(default)]
        buffer_frames: u64,
    },
    LinearLoss {
        knee_mfps: f64,
        slope: f64,
    },
}

impl SimSpec {
    pub fn model(&self) -> SimModel {
        match *self {
            SimSpec::Fixed { capacity_mfps, .. } => SimModel::Fixed {
                capacity_fps: capacity_mfps * 1e6,
            },
            SimSpec::Noisy {
                capacity_mfps,
                spread,
                ..
            } => SimModel::Noisy {
                capacity_fps: capacity_mfps * 1e6,
                spread,
            },
            SimSpec::Sporadic {
                capacity_mfps,
                probability,
                max_lost,
                ..
            } => SimModel::Sporadic {
                capacity_fps: capacity_mfps * 1e6,
                probability,
                max_lost,
            },
            SimSpec::LinearLoss { knee_mfps, slope } => SimModel::LinearLoss {
                knee_fps: knee_mfps * 1e6,
                slope,
            },
        }
    }

    pub fn buffer_frames(&self) -> u64 {
        match *self {
            SimSpec::Fixed { buffer_frames, .. }
            | SimSpec::Noisy { buffer_frames, .. }
            | SimSpec::Sporadic { buffer_frames, .. } => buffer_frames,
            SimSpec::LinearLoss { .. } => 0,
        }
    }
}

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
        #[serde(default = "line_rate_max")]
        search_max: String,
        /// `single`, `best-of-N`, `worst-of-N`.
        #[serde(default = "single")]
        policy: String,
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
        #[serde(default = "cycle")]
        flow_mode: String,
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
        #[serde(default = "line_rate_max")]
        search_max: String,
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
    /// `mac-entries`, `routes` or `flows`.
    pub kind: String,
    pub points: Vec<u64>,
}

/// The scale kinds a suite may name.
/// (`sessions`: NAT44 sessions, distinct UDP flows from the inside, testbed `dut::nat`;
/// `rules`: firewall rules with the permit last, `dut::firewall`.)
pub const SCALE_KINDS: &[&str] = &["mac-entries", "routes", "flows", "sessions", "rules"];

impl ScaleSpec {
    /// Distinct destinations the generator sends to at `point`: one per MAC entry or route, at
    /// most [`MAX_FLOWS`]; `None` for `flows` (the rules are not in the traffic's path).
    pub fn destinations(&self, point: u64) -> Option<u64> {
        match self.kind.as_str() {
            "mac-entries" | "routes" | "sessions" => Some(point.clamp(1, u64::from(MAX_FLOWS))),
            _ => None,
        }
    }

    fn validate(&self) -> Result<(), LabError> {
        if !SCALE_KINDS.contains(&self.kind.as_str()) {
            return Err(LabError::invalid(
                "test.scale.kind",
                &self.kind,
                "mac-entries, routes, flows, sessions or rules",
            ));
        }
        if self.points.is_empty() {
            return Err(LabError::invalid(
                "test.scale.points",
                "[]",
                "at least one point",
            ));
        }
        for &p in &self.points {
            if p > u64::from(u32::MAX)
                || (matches!(self.kind.as_str(), "routes" | "sessions" | "rules") && p == 0)
            {
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
fn cycle() -> String {
    "cycle".into()
}
fn d01() -> f64 {
    0.1
}
fn d120() -> f64 {
    120.0
}
fn single() -> String {
    "single".into()
}
fn line_rate_max() -> String {
    "line-rate".into()
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

/// Parses `best-of-5`, `worst-of-3`, `single`.
pub fn parse_policy(s: &str) -> Result<TrialPolicy, LabError> {
    const EXPECTED: &str = "single, best-of-N or worst-of-N with N >= 1";
    let n = |rest: &str| {
        rest.parse::<u32>()
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| LabError::invalid("policy", s, EXPECTED))
    };
    if s == "single" {
        Ok(TrialPolicy::Single)
    } else if let Some(rest) = s.strip_prefix("best-of-") {
        Ok(TrialPolicy::BestOf(n(rest)?))
    } else if let Some(rest) = s.strip_prefix("worst-of-") {
        Ok(TrialPolicy::WorstOf(n(rest)?))
    } else {
        Err(LabError::invalid("policy", s, EXPECTED))
    }
}

fn secs(field: &'static str, s: f64) -> Result<Duration, LabError> {
    if s.is_finite() && s > 0.0 && s < 1e7 {
        Ok(Duration::from_secs_f64(s))
    } else {
        Err(LabError::invalid(field, s, "a positive number of seconds"))
    }
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

impl Suite {
    /// Parses and validates a suite; errors name the key, the value and what is accepted.
    pub fn parse(text: &str) -> Result<Suite, LabError> {
        let suite: Suite = toml::from_str(text).map_err(|e| {
            LabError::invalid(
                "suite",
                e.message().to_string(),
                "a suite as documented in docs/METHODOLOGY.md",
            )
        })?;
        suite.validate()?;
        Ok(suite)
    }

    pub fn validate(&self) -> Result<(), LabError> {
        if self.duts.is_empty() {
            return Err(LabError::invalid(
                "dut",
                "none",
                "at least one [[dut]] table",
            ));
        }
        if self.tests.is_empty() && self.device_cost.is_none() {
            return Err(LabError::invalid(
                "test",
                "none",
                "at least one [[test]] table (or a [device_cost] table)",
            ));
        }
        if let Some(d) = &self.device_cost {
            d.validate()?;
        }
        for d in &self.duts {
            d.validate()?;
        }
        if let Some(t) = self.tester_tolerance_percent {
            if !(t.is_finite() && (0.0..=10.0).contains(&t)) {
                return Err(LabError::invalid(
                    "tester_tolerance_percent",
                    t,
                    "a percentage in 0..=10",
                ));
            }
        }
        if self.frame_sizes.is_empty() {
            return Err(LabError::invalid(
                "frame_sizes",
                "[]",
                "at least one frame size",
            ));
        }
        for f in &self.frame_sizes {
            self.line(f)?;
        }
        let mut have_throughput = false;
        let mut searched_sizes: Vec<FrameSize> = Vec::new();
        for t in &self.tests {
            if t.needs_throughput() && !have_throughput {
                return Err(LabError::invalid(
                    "test.procedure",
                    t.procedure(),
                    "after a throughput or mlrsearch test (it runs at the measured throughput)",
                ));
            }
            if let TestSpec::Mlrsearch {
                goals,
                searches,
                search_max,
                ..
            } = t
            {
                for g in goals {
                    g.goal()?.validate()?;
                }
                if search_max != "line-rate" && search_max != "generator-limit" {
                    return Err(LabError::invalid(
                        "test.search_max",
                        search_max,
                        "line-rate or generator-limit",
                    ));
                }
                if *searches == 0 {
                    return Err(LabError::invalid(
                        "test.searches",
                        0,
                        "at least 1 search (3 gives an interval)",
                    ));
                }
            }
            // A throughput test limited to some sizes or devices does not feed the tests after it
            // everywhere, so it does not count as "measured before".
            // Searches limited to some sizes count once, together, they cover every size.
            if let TestSpec::Mlrsearch {
                frame_sizes: Some(fs),
                ..
            } = t
            {
                for f in fs {
                    if !self.frame_sizes.contains(f) {
                        return Err(LabError::invalid(
                            "test.frame_sizes",
                            f.label(),
                            "one of the suite's frame_sizes",
                        ));
                    }
                }
                searched_sizes.extend(fs.iter().cloned());
            }
            have_throughput |= matches!(
                t,
                TestSpec::Throughput {
                    scale: None,
                    frame_sizes: None,
                    duts: None,
                    ..
                } | TestSpec::Mlrsearch {
                    frame_sizes: None,
                    ..
                }
            ) || self.frame_sizes.iter().all(|f| searched_sizes.contains(f));
            validate_address_test(t, &self.duts)?;
            if let Some(f) = self.frame_sizes.first() {
                if let Some(c) = t.failover_config(&self.line(f)?)? {
                    c.validate()?;
                }
            }
            if let TestSpec::Failover {
                duts: Some(duts), ..
            } = t
            {
                for d in duts {
                    if !self.duts.iter().any(|x| &x.name == d) {
                        return Err(LabError::invalid(
                            "test.duts",
                            d,
                            "the name of one of the suite's [[dut]] tables",
                        ));
                    }
                }
            }
            if let TestSpec::Throughput {
                policy,
                scale,
                frame_sizes,
                duts,
                search_max,
                flow_mode,
                learning_percent,
                ..
            } = t
            {
                parse_policy(policy)?;
                if flow_mode != "cycle" && flow_mode != "unique" {
                    return Err(LabError::invalid(
                        "test.flow_mode",
                        flow_mode,
                        "cycle (flows repeat) or unique (every frame a new 5-tuple)",
                    ));
                }
                if !(learning_percent.is_finite()
                    && *learning_percent > 0.0
                    && *learning_percent <= 100.0)
                {
                    return Err(LabError::invalid(
                        "test.learning_percent",
                        learning_percent,
                        "a percentage of line rate in (0, 100]",
                    ));
                }
                if search_max != "line-rate" && search_max != "generator-limit" {
                    return Err(LabError::invalid(
                        "test.search_max",
                        search_max,
                        "line-rate or generator-limit",
                    ));
                }
                for f in frame_sizes.iter().flatten() {
                    if !self.frame_sizes.contains(f) {
                        return Err(LabError::invalid(
                            "test.frame_sizes",
                            f.name(),
                            "sizes listed in the suite's frame_sizes",
                        ));
                    }
                }
                for d in duts.iter().flatten() {
                    if !self.duts.iter().any(|x| &x.name == d) {
                        return Err(LabError::invalid(
                            "test.duts",
                            d,
                            "the name of one of the suite's [[dut]] tables",
                        ));
                    }
                }
                if let Some(s) = scale {
                    s.validate()?;
                }
            }
        }
        Ok(())
    }

    /// Rounds of `dut` at `size`: the most `searches` an MLRsearch test asks of it (1 without
    /// one). A real run measures each round on a freshly started device, interleaved with the
    /// other devices ([`Suite::blocks`]; docs/METHODOLOGY.md, "Repeats that sample what varies").
    pub fn rounds(&self, dut: &str, size: &FrameSize) -> u32 {
        self.tests
            .iter()
            .filter(|t| t.applies_to(dut, size))
            .filter_map(|t| match t {
                TestSpec::Mlrsearch { searches, .. } => Some(*searches),
                _ => None,
            })
            .max()
            .unwrap_or(1)
            .max(1)
    }

    /// What round `round` (0-based) of a real run measures: round 0 every test, later rounds only
    /// the MLRsearch tests that asked for more searches than `round`; each search once (the
    /// rounds are the repeats; the report merges them).
    pub fn round(&self, round: u32) -> Suite {
        let mut s = self.clone();
        s.tests.retain(|t| {
            round == 0 || matches!(t, TestSpec::Mlrsearch { searches, .. } if *searches > round)
        });
        for t in &mut s.tests {
            if let TestSpec::Mlrsearch { searches, .. } = t {
                *searches = 1;
            }
        }
        s
    }

    /// The blocks of a real run in order, `(round, index of the [[dut]], frame size)`: round by
    /// round, every device and size of a round before the next round, so that each device's
    /// repeats are interleaved with the others' (A B C A B C) and each starts the device afresh.
    pub fn blocks(&self) -> Vec<(u32, usize, FrameSize)> {
        let last = self
            .duts
            .iter()
            .flat_map(|d| self.frame_sizes.iter().map(|f| self.rounds(&d.name, f)))
            .max()
            .unwrap_or(1);
        (0..last)
            .flat_map(|r| {
                self.duts.iter().enumerate().flat_map(move |(i, d)| {
                    self.frame_sizes
                        .iter()
                        .filter(move |f| r < self.rounds(&d.name, f))
                        .map(move |f| (r, i, f.clone()))
                })
            })
            .collect()
    }

    /// The line rate for one frame size (2 ports when bidirectional); a mix uses its mean size.
    pub fn line(&self, frame_size: &FrameSize) -> Result<LineRate, LabError> {
        let ports = if self.bidirectional { 2 } else { 1 };
        match frame_size {
            FrameSize::Bytes(b) => LineRate::new(self.line_rate_gbps * 1e9, *b, ports),
            FrameSize::Mix(_) => LineRate::for_mix(
                self.line_rate_gbps * 1e9,
                frame_size.spec()?.mean_size(),
                ports,
            ),
        }
    }
}

/// Checks an RFC 2889 test's keys (the procedures check them again, naming `rfc2889.*`): a bad
/// range must fail before anything starts.
fn validate_address_test(t: &TestSpec, suite_duts: &[DutSpec]) -> Result<(), LabError> {
    let duts = match t {
        TestSpec::Rfc2889Caching {
            min_addresses,
            max_addresses,
            learn_rate_fps,
            duts,
            ..
        } => {
            if *min_addresses == 0 || min_addresses > max_addresses {
                return Err(LabError::invalid(
                    "test.min_addresses",
                    format!("{min_addresses} (max_addresses {max_addresses})"),
                    "1 <= min_addresses <= max_addresses",
                ));
            }
            if !(learn_rate_fps.is_finite() && *learn_rate_fps > 0.0) {
                return Err(LabError::invalid(
                    "test.learn_rate_fps",
                    learn_rate_fps,
                    "a positive rate in frames/s",
                ));
            }
            duts
        }
        TestSpec::Rfc2889Learning {
            addresses,
            min_fps,
            max_fps,
            duts,
            ..
        } => {
            if *addresses == 0 {
                return Err(LabError::invalid(
                    "test.addresses",
                    0,
                    "at least 1 (and at most the caching capacity)",
                ));
            }
            if !(*min_fps > 0.0 && min_fps <= max_fps && max_fps.is_finite()) {
                return Err(LabError::invalid(
                    "test.min_fps",
                    format!("{min_fps} (max_fps {max_fps})"),
                    "0 < min_fps <= max_fps, finite",
                ));
            }
            duts
        }
        _ => return Ok(()),
    };
    for d in duts.iter().flatten() {
        if !suite_duts.iter().any(|x| &x.name == d) {
            return Err(LabError::invalid(
                "test.duts",
                d,
                "the name of one of the suite's [[dut]] tables",
            ));
        }
    }
    Ok(())
}

/// Runs one test on `m`. `throughput_fps` is the throughput measured earlier for the same DUT and
/// frame size (required by latency, back-to-back and soak). Scale sweeps are the caller's loop
/// (it must reconfigure the DUT); this runs one point.
pub fn run_test<M: Measurer + ?Sized>(
    m: &mut M,
    spec: &TestSpec,
    line: &LineRate,
    throughput_fps: Option<f64>,
) -> Result<Outcome, LabError> {
    run_test_with_limit(m, spec, line, throughput_fps, None)
}

/// [`run_test`] knowing the generator's calibrated limit (frames/s) for this topology and size,
/// which a throughput test with `search_max = "generator-limit"` searches up to.
pub fn run_test_with_limit<M: Measurer + ?Sized>(
    m: &mut M,
    spec: &TestSpec,
    line: &LineRate,
    throughput_fps: Option<f64>,
    generator_limit_fps: Option<f64>,
) -> Result<Outcome, LabError> {
    let max = line.max_fps();
    let need = || {
        throughput_fps.filter(|x| *x > 0.0).ok_or_else(|| {
            LabError::invalid(
                "throughput",
                "not measured",
                "a throughput or mlrsearch test earlier in the suite that found a rate",
            )
        })
    };
    Ok(match spec {
        TestSpec::Throughput {
            trial_duration_s,
            loss_tolerance_percent,
            resolution_percent,
            policy,
            verify,
            learning_s,
            learning_percent,
            search_max,
            flow_mode,
            ..
        } => {
            let top = match (search_max.as_str(), generator_limit_fps) {
                ("generator-limit", Some(g)) if g > 0.0 && g.is_finite() => g.min(max),
                _ => max,
            };
            // The lowest load searched is one resolution step: a device that fails there has no
            // throughput at this resolution ("no load passed"), rather than a trivial 0 frames/s.
            let res = top * resolution_percent / 100.0;
            let mut c = ThroughputConfig::new(
                res.min(top / 2.0),
                top,
                secs("trial_duration_s", *trial_duration_s)?,
            );
            c.loss_tolerance = loss_tolerance_percent / 100.0;
            c.resolution_fps = res;
            c.policy = parse_policy(policy)?;
            c.verify = *verify;
            if *learning_s > 0.0 {
                c.learning = Some((
                    Load::percent_of(*learning_percent, line),
                    secs("learning_s", *learning_s)?,
                ));
            }
            if flow_mode == "unique" {
                // The new-session rate: every frame of every trial a new 5-tuple; back to
                // repeating flows afterwards, also when the search failed.
                m.set_unique_flows(true)?;
                let r = throughput(m, &c);
                m.set_unique_flows(false)?;
                Outcome::Throughput(r?)
            } else {
                Outcome::Throughput(throughput(m, &c)?)
            }
        }
        TestSpec::Latency {
            fractions_percent,
            trial_duration_s,
            repetitions,
            ..
        } => {
            let c = LatencyConfig {
                fractions: fractions_percent.iter().map(|p| p / 100.0).collect(),
                trial_duration: secs("trial_duration_s", *trial_duration_s)?,
                repetitions: *repetitions,
            };
            Outcome::Latency(latency_at(m, need()?, &c)?)
        }
        TestSpec::Linear {
            start_percent,
            end_percent,
            step_percent,
            trial_duration_s,
            ..
        } => {
            let c = LinearSweepConfig {
                line: *line,
                start_pct: *start_percent,
                end_pct: *end_percent,
                step_pct: *step_percent,
                trial_duration: secs("trial_duration_s", *trial_duration_s)?,
            };
            Outcome::LinearSweep(linear_sweep(m, &c)?)
        }
        TestSpec::Back2back {
            repetitions,
            max_burst_s,
            resolution_frames,
            ..
        } => {
            let mut c = BackToBackConfig::new(max, need()?);
            c.repetitions = *repetitions;
            c.max_burst = (max * max_burst_s).ceil() as u64;
            c.resolution_frames = *resolution_frames;
            Outcome::BackToBack(back_to_back(m, &c)?)
        }
        TestSpec::Mlrsearch {
            goals,
            min_percent,
            search_max,
            searches,
            ..
        } => {
            let top = match (search_max.as_str(), generator_limit_fps) {
                ("generator-limit", Some(g)) if g > 0.0 && g.is_finite() => g.min(max),
                _ => max,
            };
            let mut c = MlrConfig::ndr_pdr((max * min_percent / 100.0).min(top / 2.0), top);
            if !goals.is_empty() {
                c.goals = goals.iter().map(GoalSpec::goal).collect::<Result<_, _>>()?;
            }
            Outcome::Mlrsearch(if *searches == 1 {
                mlrsearch(m, &c)?
            } else {
                mlrsearch_repeated(m, &c, *searches)?
            })
        }
        TestSpec::Soak {
            percent_of_throughput,
            duration_s,
            interval_s,
            ..
        } => {
            let c = SoakConfig {
                load: Load::fps(need()? * percent_of_throughput / 100.0),
                total: secs("duration_s", *duration_s)?,
                interval: secs("interval_s", *interval_s)?,
            };
            Outcome::Soak(soak(m, &c)?)
        }
        TestSpec::Failover { .. } => match spec.failover_config(line)? {
            Some(c) => Outcome::Failover(Box::new(failover(m, &c)?)),
            None => unreachable!("a failover test has a failover config"),
        },
        TestSpec::Rfc2889Caching { .. } | TestSpec::Rfc2889Learning { .. } => {
            match (spec.caching_config(), spec.learning_config()) {
                (Some(c), _) => {
                    Outcome::AddressCaching(address_caching_capacity(address_device(m)?, &c)?)
                }
                (_, Some(c)) => {
                    Outcome::AddressLearning(address_learning_rate(address_device(m)?, &c)?)
                }
                (None, None) => unreachable!("an RFC 2889 test has one of the two configs"),
            }
        }
    })
}

/// The measurer's address device, or an error saying the RFC 2889 tests need one.
fn address_device<M: Measurer + ?Sized>(m: &mut M) -> Result<&mut dyn AddressDevice, LabError> {
    m.address_device().ok_or_else(|| {
        LabError::invalid(
            "test.procedure",
            "rfc2889-caching / rfc2889-learning",
            "a device the measurer can drive with per-address learning and test frames (a real \
             bridge DUT on a two-port topology; simulated devices have none)",
        )
    })
}

/// Called before each scale point: `(measurer, the test's scale spec, the point)`.
pub type Reconfigure<'a> =
    dyn FnMut(&mut dyn Measurer, &ScaleSpec, u64) -> Result<(), LabError> + 'a;

/// Runs every test of `suite` for one DUT and frame size on `m` and returns the records.
///
/// The caller owns the topology: it builds it for `dut`, makes the measurer, calls this, and tears
/// down. `reconfigure(m, scale, point)` is called before each point of a scale sweep (the testbed
/// maps it to `Dut::configure_scale`). The throughput found by the first throughput or mlrsearch
/// test feeds the latency, back-to-back and soak tests that follow.
pub fn run_for_dut(
    suite: &Suite,
    dut: &DutSpec,
    line: &LineRate,
    m: &mut dyn Measurer,
    reconfigure: &mut Reconfigure<'_>,
) -> Result<Vec<TestRecord>, LabError> {
    let size = FrameSize::Bytes(line.frame_size);
    let r = run_for_dut_observed(suite, dut, &size, None, m, reconfigure, &mut ())?;
    match r.error {
        Some(e) => Err(e),
        None => Ok(r.records),
    }
}

/// Told when each test of a suite starts (progress display); every method has a no-op default.
pub trait SuiteObserver {
    /// Test `index` of the suite starts (`scale_point` for each point of a scale sweep).
    fn test_started(&mut self, _index: usize, _spec: &TestSpec, _scale_point: Option<u64>) {}
}

impl SuiteObserver for () {}

/// What [`run_for_dut_observed`] measured: the records of every test that finished, and the
/// error that ended the run early, if any (their records are still valid results).
#[derive(Debug)]
pub struct DutRun {
    pub records: Vec<TestRecord>,
    pub error: Option<LabError>,
}

/// Runs the tests of `suite` that apply to `dut` at `size` ([`TestSpec::applies_to`]) on `m`.
///
/// Like [`run_for_dut`], but for frame-size mixes too, telling `observer` as each test starts,
/// and keeping the records of the tests finished before an error (a stop requested by Ctrl-C
/// surfaces as the measurer's error: what was measured until then is returned in
/// [`DutRun::records`]). Errors before any test ran (an invalid size) are returned as `Err`.
pub fn run_for_dut_observed(
    suite: &Suite,
    dut: &DutSpec,
    size: &FrameSize,
    generator_limit_fps: Option<f64>,
    m: &mut dyn Measurer,
    reconfigure: &mut Reconfigure<'_>,
    observer: &mut dyn SuiteObserver,
) -> Result<DutRun, LabError> {
    let line = suite.line(size)?;
    let mut records = Vec::new();
    let mut thr = None;
    // A scale point's traffic goes to as many destinations as the table has entries (capped).
    let record = |spec: &TestSpec, outcome: Outcome, scale: Option<u64>| TestRecord {
        id: spec.id(dut.deployment()),
        description: format!("{} ({})", spec.procedure(), dut.topology),
        deployment: dut.deployment().to_string(),
        vswitch: dut.name.clone(),
        traffic_type: "udp".into(),
        frame_size: line.frame_size,
        line,
        bidirectional: suite.bidirectional,
        flows: spec
            .scale()
            .zip(scale)
            .and_then(|(sc, p)| sc.destinations(p))
            .or(suite.flows),
        scale,
        setup: None,
        frame_mix: size.mix().map(str::to_string),
        topology: Some(dut.topology.clone()),
        generator_limit_fps,
        outcome,
    };
    for (index, spec) in suite.tests.iter().enumerate() {
        if !spec.applies_to(&dut.name, size) {
            continue;
        }
        // No throughput found (no load passed): nothing to measure latency, bursts or soak at;
        // the throughput record already says so.
        if spec.needs_throughput() && thr.is_none_or(|x| x <= 0.0) {
            continue;
        }
        let step = match spec.scale() {
            Some(sc) => sc.points.iter().try_for_each(|&point| {
                observer.test_started(index, spec, Some(point));
                reconfigure(m, sc, point)?;
                let o = run_test_with_limit(m, spec, &line, thr, generator_limit_fps)?;
                records.push(record(spec, o, Some(point)));
                Ok(())
            }),
            None => {
                observer.test_started(index, spec, None);
                run_test_with_limit(m, spec, &line, thr, generator_limit_fps).map(|o| {
                    thr = thr.or(found_throughput(&o));
                    records.push(record(spec, o, None));
                })
            }
        };
        if let Err(e) = step {
            return Ok(DutRun {
                records,
                error: Some(e),
            });
        }
    }
    Ok(DutRun {
        records,
        error: None,
    })
}

/// The throughput an outcome found, for the tests that follow it.
pub fn found_throughput(o: &Outcome) -> Option<f64> {
    match o {
        Outcome::Throughput(t) => t.throughput_fps,
        // The first goal (NDR by default) decides.
        Outcome::Mlrsearch(m) => m.goals.first().and_then(|g| g.relevant_lower_bound_fps),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SimDut;

    const EXAMPLE: &str = r#"
name = "phy2phy baseline"
frame_sizes = [64, 1518]
line_rate_gbps = 10

[[dut]]
name = "vecswitch-xconnect"
topology = "phy2phy-memif"
sim = { model = "fixed", capacity_mfps = 5.0, buffer_frames = 2048 }

[[dut]]
name = "ovs"
topology = "phy2phy-veth"
sim = { model = "sporadic", capacity_mfps = 0.8, probability = 0.2, max_lost = 10 }

[[test]]
procedure = "throughput"
trial_duration_s = 1
loss_tolerance_percent = 0.001
policy = "best-of-3"

[[test]]
procedure = "latency"
trial_duration_s = 1
repetitions = 2

[[test]]
procedure = "back2back"
repetitions = 3

[[test]]
procedure = "mlrsearch"
goals = [{ name = "NDR" }, { name = "PDR", loss_percent = 0.5, duration_sum_s = 11 }]

[[test]]
procedure = "throughput"
id = "phy2phy_mac_scale"
trial_duration_s = 1
scale = { kind = "mac-entries", points = [2, 2000, 20000] }
"#;

    #[test]
    fn example_suite_parses_with_defaults() {
        let s = Suite::parse(EXAMPLE).unwrap();
        assert_eq!(
            s.frame_sizes,
            vec![FrameSize::Bytes(64), FrameSize::Bytes(1518)]
        );
        assert_eq!(s.duts.len(), 2);
        assert_eq!(s.duts[1].deployment(), "phy2phy");
        assert_eq!(s.tests.len(), 5);
        assert_eq!(s.tests[0].id("phy2phy"), "phy2phy_tput");
        assert_eq!(s.tests[4].id("phy2phy"), "phy2phy_mac_scale");
        assert_eq!(s.tests[4].scale().unwrap().points, vec![2, 2000, 20000]);
        let TestSpec::Latency {
            fractions_percent, ..
        } = &s.tests[1]
        else {
            panic!()
        };
        assert_eq!(fractions_percent, &vec![100.0, 90.0, 50.0, 10.0]);
    }

    #[test]
    fn suite_runs_on_simulated_duts() {
        let s = Suite::parse(EXAMPLE).unwrap();
        let line = s.line(&64.into()).unwrap();
        let dut = &s.duts[0];
        let sim = dut.sim.as_ref().unwrap();
        let mut m = SimDut::new(sim.model(), 1)
            .with_buffer(sim.buffer_frames())
            .with_line_rate(line.max_fps());
        let mut thr = None;
        for t in s.tests.iter().filter(|t| t.scale().is_none()) {
            let o = run_test(&mut m, t, &line, thr).unwrap();
            thr = thr.or(found_throughput(&o));
        }
        let x = thr.unwrap();
        assert!(x <= 5e6 && 5e6 - x <= line.max_fps() * 0.001, "{x}");
    }

    #[test]
    fn errors_name_the_key() {
        let bad = EXAMPLE.replace("policy = \"best-of-3\"", "policy = \"best-of-zero\"");
        let e = Suite::parse(&bad).unwrap_err().to_string();
        assert!(e.contains("policy") && e.contains("best-of-zero"), "{e}");
        let bad = EXAMPLE.replace("trial_duration_s = 1\nloss", "trial_duraton_s = 1\nloss");
        let e = Suite::parse(&bad).unwrap_err().to_string();
        assert!(e.contains("trial_duraton_s"), "{e}");
        let bad = EXAMPLE.replace("frame_sizes = [64, 1518]", "frame_sizes = [32]");
        assert!(Suite::parse(&bad)
            .unwrap_err()
            .to_string()
            .contains("frame_size"));
        // Latency before any throughput test.
        let bad = "name = \"x\"\n[[dut]]\nname = \"ovs\"\ntopology = \"phy2phy-veth\"\n[[test]]\nprocedure = \"latency\"\n";
        let e = Suite::parse(bad).unwrap_err().to_string();
        assert!(e.contains("latency") && e.contains("throughput"), "{e}");
        let bad = EXAMPLE.replace("kind = \"mac-entries\"", "kind = \"vlans\"");
        assert!(Suite::parse(&bad)
            .unwrap_err()
            .to_string()
            .contains("test.scale.kind"));
        let routes = EXAMPLE.replace("kind = \"mac-entries\"", "kind = \"routes\"");
        assert!(Suite::parse(&routes).is_ok());
        let bad = routes.replace("points = [2, 2000, 20000]", "points = [0, 2000]");
        let e = Suite::parse(&bad).unwrap_err().to_string();
        assert!(e.contains("test.scale.points") && e.contains("1..="), "{e}");
        let bad = EXAMPLE.replace("points = [2, 2000, 20000]", "points = [5000000000]");
        assert!(Suite::parse(&bad)
            .unwrap_err()
            .to_string()
            .contains("5000000000"));
    }

    #[test]
    fn run_for_dut_records_every_test_and_scale_point() {
        let s = Suite::parse(EXAMPLE).unwrap();
        let line = s.line(&1518.into()).unwrap();
        let sim = s.duts[1].sim.as_ref().unwrap();
        let mut m = SimDut::new(sim.model(), 3).with_line_rate(line.max_fps());
        let mut seen = Vec::new();
        let recs = run_for_dut(&s, &s.duts[1], &line, &mut m, &mut |_, sc, p| {
            seen.push((sc.kind.clone(), p));
            Ok(())
        })
        .unwrap();
        // 4 plain tests + 3 scale points.
        assert_eq!(recs.len(), 7);
        assert_eq!(
            seen,
            vec![
                ("mac-entries".to_string(), 2),
                ("mac-entries".to_string(), 2000),
                ("mac-entries".to_string(), 20000)
            ]
        );
        assert!(recs
            .iter()
            .all(|r| r.vswitch == "ovs" && r.frame_size == 1518 && r.deployment == "phy2phy"));
        assert_eq!(recs.iter().filter(|r| r.scale.is_some()).count(), 3);
        assert_eq!(recs[2].outcome.name(), "back-to-back");
        // Each scale point's traffic went to one destination per entry.
        let flows: Vec<_> = recs
            .iter()
            .filter(|r| r.scale.is_some())
            .map(|r| r.flows)
            .collect();
        assert_eq!(flows, vec![Some(2), Some(2000), Some(20000)]);
    }

    #[test]
    fn scale_destinations_are_capped_at_the_generators_flows() {
        let sc = |kind: &str| ScaleSpec {
            kind: kind.into(),
            points: vec![],
        };
        assert_eq!(sc("routes").destinations(1), Some(1));
        assert_eq!(sc("routes").destinations(1_000_000), Some(1_000_000));
        assert_eq!(
            sc("routes").destinations(2_000_000),
            Some(u64::from(MAX_FLOWS))
        );
        assert_eq!(sc("mac-entries").destinations(0), Some(1));
        assert_eq!(sc("flows").destinations(100), None);
    }

    #[test]
    fn frame_sizes_accept_named_mixes() {
        let text = EXAMPLE.replace(
            "frame_sizes = [64, 1518]",
            "frame_sizes = [64, \"imix\", \"imix-trex\", \"imix-spirent-tcpv4\"]",
        );
        let s = Suite::parse(&text).unwrap();
        assert_eq!(s.frame_sizes[1], FrameSize::Mix("imix".into()));
        assert_eq!(s.frame_sizes[1].label(), "imix");
        // IMIX 64:7, 570:4, 1518:1: mean 353.83 B, so 10GE carries 10e9 / ((353.83 + 20) × 8) frames/s.
        let line = s.line(&s.frame_sizes[1]).unwrap();
        let mean = (64.0 * 7.0 + 570.0 * 4.0 + 1518.0) / 12.0;
        assert_eq!(line.mean_frame_bytes, Some(mean));
        assert!((line.max_fps() - 10e9 / ((mean + 20.0) * 8.0)).abs() < 1e-6);
        assert_eq!(s.frame_sizes[0].spec().unwrap().name(), "64");
        // Round trip through JSON (the results' provenance keeps the suite): numbers stay numbers.
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(
            v["frame_sizes"],
            serde_json::json!([64, "imix", "imix-trex", "imix-spirent-tcpv4"])
        );
        // An unknown mix names the key, the value and the accepted names.
        let bad = EXAMPLE.replace("frame_sizes = [64, 1518]", "frame_sizes = [64, \"imax\"]");
        let e = Suite::parse(&bad).unwrap_err().to_string();
        assert!(
            e.contains("frame_sizes") && e.contains("imax") && e.contains("imix-trex"),
            "{e}"
        );
        // The generator's custom size:weight syntax works too.
        let custom = EXAMPLE.replace(
            "frame_sizes = [64, 1518]",
            "frame_sizes = [\"64:1,1518:1\"]",
        );
        let s = Suite::parse(&custom).unwrap();
        assert_eq!(
            s.line(&s.frame_sizes[0]).unwrap().mean_frame_bytes,
            Some(791.0)
        );
    }

    #[test]
    fn mix_results_say_the_mix_name() {
        let text = EXAMPLE.replace("frame_sizes = [64, 1518]", "frame_sizes = [\"imix\"]");
        let s = Suite::parse(&text).unwrap();
        let size = FrameSize::Mix("imix".into());
        let line = s.line(&size).unwrap();
        let mut m =
            SimDut::new(SimModel::Fixed { capacity_fps: 1e6 }, 1).with_line_rate(line.max_fps());
        let r = run_for_dut_observed(
            &s,
            &s.duts[0],
            &size,
            None,
            &mut m,
            &mut |_, _, _| Ok(()),
            &mut (),
        )
        .unwrap();
        assert!(r.error.is_none());
        let rec = &r.records[0];
        assert_eq!(rec.frame_mix.as_deref(), Some("imix"));
        assert_eq!(rec.frame_size, 354);
        assert_eq!(rec.topology.as_deref(), Some("phy2phy-memif"));
        let row = &rec.rows()[0];
        assert_eq!(
            row["packet_size"],
            crate::results::Cell::Text("imix".into())
        );
        // Mb/s of frame data use the mean size.
        let fps = row["throughput_rx_fps"].num().unwrap();
        assert!(
            (row["throughput_rx_mbps"].num().unwrap() - fps * line.frame_bytes() * 8.0 / 1e6).abs()
                < 1e-6
        );
    }

    #[test]
    fn per_test_size_and_dut_filters() {
        let text = format!(
            "{EXAMPLE}\n[[test]]\nprocedure = \"throughput\"\nid = \"worst\"\npolicy = \"worst-of-2\"\ntrial_duration_s = 1\nframe_sizes = [64]\nduts = [\"ovs\"]\n"
        );
        let s = Suite::parse(&text).unwrap();
        let worst = s.tests.last().unwrap();
        assert!(worst.applies_to("ovs", &FrameSize::Bytes(64)));
        assert!(!worst.applies_to("ovs", &FrameSize::Bytes(1518)));
        assert!(!worst.applies_to("vecswitch-xconnect", &FrameSize::Bytes(64)));
        let run = |dut: usize, size: u32| {
            let line = s.line(&size.into()).unwrap();
            let mut m = SimDut::new(
                SimModel::Fixed {
                    capacity_fps: 0.5e6,
                },
                1,
            )
            .with_line_rate(line.max_fps());
            let r = run_for_dut_observed(
                &s,
                &s.duts[dut],
                &size.into(),
                None,
                &mut m,
                &mut |_, _, _| Ok(()),
                &mut (),
            )
            .unwrap();
            r.records.iter().filter(|r| r.id == "worst").count()
        };
        assert_eq!(run(1, 64), 1);
        assert_eq!(run(1, 1518), 0);
        assert_eq!(run(0, 64), 0);
        // Filters must name sizes and devices of the suite.
        let bad = text.replace("frame_sizes = [64]\nduts", "frame_sizes = [512]\nduts");
        let e = Suite::parse(&bad).unwrap_err().to_string();
        assert!(e.contains("test.frame_sizes") && e.contains("512"), "{e}");
        let bad = text.replace("duts = [\"ovs\"]", "duts = [\"ovs-dpdk\"]");
        let e = Suite::parse(&bad).unwrap_err().to_string();
        assert!(e.contains("test.duts") && e.contains("ovs-dpdk"), "{e}");
    }

    /// A measurer that fails (as a Ctrl-C stop does) after `ok` trials.
    struct StopAfter {
        inner: SimDut,
        ok: usize,
    }
    impl Measurer for StopAfter {
        fn trial(&mut self, load: Load, d: Duration) -> Result<crate::TrialResult, LabError> {
            if self.ok == 0 {
                return Err(LabError::Trial {
                    load_fps: load.fps,
                    reason: "stop requested (signal)".into(),
                });
            }
            self.ok -= 1;
            self.inner.trial(load, d)
        }
        fn burst(&mut self, frames: u64) -> Result<crate::BurstResult, LabError> {
            self.inner.burst(frames)
        }
    }

    /// A measurer that records its flow-mode switches and the loads of its trials.
    struct UniqueProbe {
        inner: SimDut,
        switches: Vec<bool>,
        unique_trials: Vec<f64>,
        unique: bool,
    }
    impl Measurer for UniqueProbe {
        fn trial(&mut self, load: Load, d: Duration) -> Result<crate::TrialResult, LabError> {
            if self.unique {
                self.unique_trials.push(load.fps);
            }
            self.inner.trial(load, d)
        }
        fn burst(&mut self, frames: u64) -> Result<crate::BurstResult, LabError> {
            self.inner.burst(frames)
        }
        fn set_unique_flows(&mut self, unique: bool) -> Result<(), LabError> {
            self.switches.push(unique);
            self.unique = unique;
            Ok(())
        }
    }

    /// `flow_mode = "unique"`: the search runs with unique flows (learning trial included), and
    /// the measurer is switched back afterwards; a measurer that cannot is an error naming the
    /// key; a bad mode or learning load is refused.
    #[test]
    fn unique_flow_mode_switches_the_measurer_for_the_search() {
        let base = "name = \"x\"\n[[dut]]\nname = \"ovs\"\ntopology = \"phy2phy-veth\"\n[[test]]\nprocedure = \"throughput\"\ntrial_duration_s = 1\n";
        let s = Suite::parse(&format!(
            "{base}flow_mode = \"unique\"\nlearning_s = 1\nlearning_percent = 1\n"
        ))
        .unwrap();
        let line = s.line(&64.into()).unwrap();
        let sim =
            || SimDut::new(SimModel::Fixed { capacity_fps: 2e6 }, 1).with_line_rate(line.max_fps());
        let mut m = UniqueProbe {
            inner: sim(),
            switches: Vec::new(),
            unique_trials: Vec::new(),
            unique: false,
        };
        let o = run_test(&mut m, &s.tests[0], &line, None).unwrap();
        assert_eq!(m.switches, vec![true, false]);
        let Outcome::Throughput(r) = o else {
            panic!("{o:?}")
        };
        assert_eq!(m.unique_trials.len(), r.trials.len());
        // The learning trial ran at 1 % of line rate.
        assert!((m.unique_trials[0] - line.max_fps() / 100.0).abs() < 1.0);
        let e = run_test(&mut sim(), &s.tests[0], &line, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("flow_mode") && e.contains("unique"), "{e}");
        for (bad, key) in [
            ("flow_mode = \"random\"\n", "test.flow_mode"),
            ("learning_percent = 0\n", "test.learning_percent"),
        ] {
            let e = Suite::parse(&format!("{base}{bad}"))
                .unwrap_err()
                .to_string();
            assert!(e.contains(key), "{e}");
        }
    }

    #[test]
    fn a_stop_keeps_the_tests_finished_before_it() {
        let s = Suite::parse(EXAMPLE).unwrap();
        let line = s.line(&64.into()).unwrap();
        // Count the trials of the first test (throughput) alone, then stop two trials into the next.
        let mut probe =
            SimDut::new(SimModel::Fixed { capacity_fps: 5e6 }, 1).with_line_rate(line.max_fps());
        let first = run_test(&mut probe, &s.tests[0], &line, None).unwrap();
        let Outcome::Throughput(t) = &first else {
            panic!()
        };
        let n = t.trials.len();
        let mut m = StopAfter {
            inner: SimDut::new(SimModel::Fixed { capacity_fps: 5e6 }, 1)
                .with_line_rate(line.max_fps()),
            ok: n + 1,
        };
        let r = run_for_dut_observed(
            &s,
            &s.duts[0],
            &64.into(),
            None,
            &mut m,
            &mut |_, _, _| Ok(()),
            &mut (),
        )
        .unwrap();
        assert_eq!(r.records.len(), 1, "the throughput test is kept");
        assert_eq!(r.records[0].outcome, first);
        assert!(r.error.unwrap().to_string().contains("stop requested"));
        // run_for_dut (no partial results) reports the same stop as an error.
        let mut m = StopAfter {
            inner: SimDut::new(SimModel::Fixed { capacity_fps: 5e6 }, 1)
                .with_line_rate(line.max_fps()),
            ok: n + 1,
        };
        assert!(run_for_dut(&s, &s.duts[0], &line, &mut m, &mut |_, _, _| Ok(())).is_err());
    }

    #[test]
    fn search_up_to_the_generator_limit() {
        let text = EXAMPLE.replace(
            "policy = \"best-of-3\"",
            "policy = \"single\"\nsearch_max = \"generator-limit\"\nresolution_percent = 1",
        );
        let s = Suite::parse(&text).unwrap();
        let line = s.line(&64.into()).unwrap();
        let limit = 2e6;
        let mut m = SimDut::new(SimModel::Fixed { capacity_fps: 1e6 }, 1)
            .with_line_rate(line.max_fps())
            .with_tester_limit(limit);
        let r = run_for_dut_observed(
            &s,
            &s.duts[0],
            &64.into(),
            Some(limit),
            &mut m,
            &mut |_, _, _| Ok(()),
            &mut (),
        )
        .unwrap();
        let rec = &r.records[0];
        assert_eq!(rec.generator_limit_fps, Some(limit));
        let Outcome::Throughput(t) = &rec.outcome else {
            panic!()
        };
        // The first trial asks for the generator's limit, not line rate; the resolution is 1 % of it.
        assert_eq!(t.trials[0].intended_load.fps, limit);
        let x = t.throughput_fps.unwrap();
        assert!(x <= 1e6 && 1e6 - x <= 0.01 * limit, "{x}");
        // Without a measured limit it searches from line rate, as RFC 2544 does.
        let mut m =
            SimDut::new(SimModel::Fixed { capacity_fps: 1e6 }, 1).with_line_rate(line.max_fps());
        let r = run_for_dut_observed(
            &s,
            &s.duts[0],
            &64.into(),
            None,
            &mut m,
            &mut |_, _, _| Ok(()),
            &mut (),
        )
        .unwrap();
        let Outcome::Throughput(t) = &r.records[0].outcome else {
            panic!()
        };
        assert_eq!(t.trials[0].intended_load.fps, line.max_fps());
        let bad = text.replace("search_max = \"generator-limit\"", "search_max = \"gen\"");
        assert!(Suite::parse(&bad)
            .unwrap_err()
            .to_string()
            .contains("test.search_max"));
    }

    #[test]
    fn documented_device_suites_parse() {
        for f in ["device-cost.toml", "external-device.toml"] {
            let path = format!("{}/../../docs/suites/{f}", env!("CARGO_MANIFEST_DIR"));
            let text = std::fs::read_to_string(&path).unwrap();
            Suite::parse(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
        }
    }

    #[test]
    fn external_device_keys_go_together() {
        let dut = |extra: &str| {
            Suite::parse(&format!(
                "name = \"x\"\n[[dut]]\n{extra}\n[[test]]\nprocedure = \"throughput\"\n"
            ))
        };
        let s = dut("name = \"external\"\ntopology = \"external\"\nports = [\"afp:a@ns\", \"afp:b@ns\"]\ncounters_command = \"cat /tmp/c\"").unwrap();
        assert_eq!(s.duts[0].ports.as_ref().unwrap().len(), 2);
        assert_eq!(s.duts[0].counters_command.as_deref(), Some("cat /tmp/c"));
        assert_eq!(s.duts[0].deployment(), "external");
        for (extra, names) in [
            ("name = \"external\"\ntopology = \"external\"", "dut.ports"),
            (
                "name = \"external\"\ntopology = \"external\"\nports = [\"afp:a\"]",
                "1 port(s)",
            ),
            (
                "name = \"ovs\"\ntopology = \"phy2phy-veth\"\nports = [\"afp:a\", \"afp:b\"]",
                "dut.ports",
            ),
            (
                "name = \"ovs\"\ntopology = \"phy2phy-veth\"\ncounters_command = \"x\"",
                "dut.counters_command",
            ),
        ] {
            let e = dut(extra).unwrap_err().to_string();
            assert!(e.contains(names), "{extra}: {e}");
        }
    }

    #[test]
    fn device_cost_table_parses_and_checks_its_keys() {
        let base =
            "name = \"cost\"\n[[dut]]\nname = \"linux-bridge\"\ntopology = \"phy2phy-veth\"\n";
        let s = Suite::parse(&format!(
            "{base}[device_cost]\nloads_fps = [50000, 100000]\n"
        ))
        .unwrap();
        assert!(s.tests.is_empty());
        let d = s.device_cost.unwrap();
        assert_eq!(d.loads_fps, vec![50_000.0, 100_000.0]);
        assert_eq!((d.trial_duration_s, d.repetitions), (5.0, 3));
        let e = Suite::parse(&format!("{base}[device_cost]\nloads_fps = []\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("device_cost.loads_fps"), "{e}");
        let e = Suite::parse(&format!("{base}[device_cost]\nloads_fps = [-1]\n"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("device_cost.loads_fps") && e.contains("-1"),
            "{e}"
        );
        let e = Suite::parse(&format!(
            "{base}[device_cost]\nloads_fps = [1]\nrepetitions = 0\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("device_cost.repetitions"), "{e}");
        let e = Suite::parse(&format!("{base}[device_cost]\nloads = [1]\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("loads"), "{e}");
        // Neither tests nor a device-cost table: nothing to run.
        let e = Suite::parse(base).unwrap_err().to_string();
        assert!(e.contains("[[test]]") && e.contains("[device_cost]"), "{e}");
    }

    #[test]
    fn the_lag_suite_has_a_failover_test_that_checks_its_keys_and_needs_the_hook() {
        let path = format!("{}/../../docs/suites/lag.toml", env!("CARGO_MANIFEST_DIR"));
        let s = Suite::parse(&std::fs::read_to_string(&path).unwrap())
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        let t = s
            .tests
            .iter()
            .find(|t| t.procedure() == "failover")
            .expect("a failover test in lag.toml");
        assert_eq!(t.id("phy2phy"), "lag_failover");
        let line = s.line(&s.frame_sizes[0]).unwrap();
        let c = t.failover_config(&line).unwrap().unwrap();
        assert_eq!(
            c.bound,
            Some(Duration::from_secs(3)),
            "one fast LACP timeout"
        );
        assert!(c.down_at < c.duration && c.up_at.is_none_or(|u| u > c.down_at));
        for d in ["vecswitch-lag", "ovs-lag"] {
            assert!(t.applies_to(d, &s.frame_sizes[0]));
        }
        // Bad keys name the key.
        let base = "name = \"x\"\n[[dut]]\nname = \"vecswitch-lag\"\ntopology = \"phy2phy-lag\"\n[[test]]\nprocedure = \"failover\"\n";
        for (extra, key) in [
            ("", "test.load_fps / test.load_percent"),
            (
                "load_fps = 1000\nload_percent = 1",
                "test.load_fps / test.load_percent",
            ),
            ("load_percent = 101", "test.load_fps / test.load_percent"),
            ("load_fps = 1000\ndown_at_s = 6", "failover.down_at_s"),
            ("load_fps = 1000\nup_at_s = 1", "failover.up_at_s"),
            (
                "load_fps = 1000\noutage_bound_ms = -3",
                "test.outage_bound_ms",
            ),
            ("load_fps = 1000\nduts = [\"ovs\"]", "test.duts"),
        ] {
            let e = Suite::parse(&format!("{base}{extra}\n"))
                .unwrap_err()
                .to_string();
            assert!(e.contains(key), "{extra:?}: {e}");
        }
        // Defaults: 6 s, down at 2 s, member 0, no learning, no bound.
        let s = Suite::parse(&format!("{base}load_percent = 1\n")).unwrap();
        let c = s.tests[0]
            .failover_config(&s.line(&s.frame_sizes[0]).unwrap())
            .unwrap()
            .unwrap();
        assert_eq!(
            (c.duration, c.down_at, c.up_at, c.member, c.learning, c.bound),
            (
                Duration::from_secs(6),
                Duration::from_secs(2),
                None,
                0,
                Duration::ZERO,
                None
            )
        );
        // A simulated device cannot take a link down: an error, not a plain trial.
        let mut sim = SimDut::new(SimModel::Fixed { capacity_fps: 1e6 }, 1);
        let e = run_test(
            &mut sim,
            &s.tests[0],
            &s.line(&s.frame_sizes[0]).unwrap(),
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("failover"), "{e}");
        assert_eq!(sim.trials(), 0);
    }

    #[test]
    fn rfc2889_tests_parse_check_their_keys_and_need_an_address_device() {
        let path = format!(
            "{}/../../docs/suites/l2-services.toml",
            env!("CARGO_MANIFEST_DIR")
        );
        let s = Suite::parse(&std::fs::read_to_string(&path).unwrap())
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        let TestSpec::Rfc2889Caching {
            max_addresses,
            learn_rate_fps,
            ..
        } = &s.tests[0]
        else {
            panic!("{:?}", s.tests[0])
        };
        assert_eq!((*max_addresses, *learn_rate_fps), (16384, 4000.0));
        assert_eq!(s.tests[0].procedure(), "rfc2889-caching");
        assert_eq!(s.tests[1].procedure(), "rfc2889-learning");
        assert_eq!(s.tests[0].id("phy2phy"), "phy2phy_rfc2889_caching");
        assert_eq!(s.tests[1].id("phy2phy"), "phy2phy_rfc2889_learning");
        // Defaults.
        let base = "name = \"x\"\n[[dut]]\nname = \"linux-bridge\"\ntopology = \"phy2phy-veth\"\n[[test]]\n";
        let s = Suite::parse(&format!(
            "{base}procedure = \"rfc2889-caching\"\nmax_addresses = 10\n"
        ))
        .unwrap();
        assert_eq!(
            s.tests[0],
            TestSpec::Rfc2889Caching {
                id: None,
                min_addresses: 1,
                max_addresses: 10,
                resolution: 1,
                learn_rate_fps: 1_000.0,
                duts: None,
            }
        );
        // Bad ranges and unknown devices name the key.
        for (extra, key) in [
            (
                "procedure = \"rfc2889-caching\"\nmax_addresses = 0",
                "test.min_addresses",
            ),
            (
                "procedure = \"rfc2889-caching\"\nmax_addresses = 9\nlearn_rate_fps = -1",
                "test.learn_rate_fps",
            ),
            (
                "procedure = \"rfc2889-caching\"\nmax_addresses = 9\nduts = [\"ovs\"]",
                "test.duts",
            ),
            (
                "procedure = \"rfc2889-learning\"\naddresses = 0\nmax_fps = 10",
                "test.addresses",
            ),
            (
                "procedure = \"rfc2889-learning\"\naddresses = 5\nmin_fps = 100\nmax_fps = 10",
                "test.min_fps",
            ),
            ("procedure = \"rfc2889-learning\"\naddresses = 5", "max_fps"),
        ] {
            let e = Suite::parse(&format!("{base}{extra}\n"))
                .unwrap_err()
                .to_string();
            assert!(e.contains(key), "{extra}: {e}");
        }
        // The duts filter applies.
        let s = Suite::parse(&format!(
            "{base}procedure = \"rfc2889-caching\"\nmax_addresses = 9\nduts = [\"linux-bridge\"]\n"
        ))
        .unwrap();
        assert!(s.tests[0].applies_to("linux-bridge", &FrameSize::Bytes(64)));
        assert!(!s.tests[0].applies_to("ovs", &FrameSize::Bytes(64)));
        // A simulated device has no address device: the test says what it needs.
        let mut m = SimDut::new(SimModel::Fixed { capacity_fps: 1e6 }, 1);
        let e = run_test(&mut m, &s.tests[0], &LineRate::ten_gig(64), None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("rfc2889-caching") && e.contains("bridge DUT"),
            "{e}"
        );
    }

    /// A measurer whose address device is a simulated bridge of 700 entries.
    struct SimAddresses(crate::procedures::rfc2889::SimBridge);
    impl Measurer for SimAddresses {
        fn trial(&mut self, _: Load, _: Duration) -> Result<crate::TrialResult, LabError> {
            unreachable!("address tests run no RFC 2544 trial")
        }
        fn burst(&mut self, _: u64) -> Result<crate::BurstResult, LabError> {
            unreachable!("address tests run no burst")
        }
        fn address_device(&mut self) -> Option<&mut dyn AddressDevice> {
            Some(&mut self.0)
        }
    }

    #[test]
    fn rfc2889_tests_run_on_the_measurers_address_device_and_make_rows() {
        let text = "name = \"x\"\nframe_sizes = [64]\n[[dut]]\nname = \"vecswitch-bridge\"\ntopology = \"phy2phy-veth\"\n\
            [[test]]\nprocedure = \"rfc2889-caching\"\nmax_addresses = 4096\n\
            [[test]]\nprocedure = \"rfc2889-learning\"\naddresses = 500\nmin_fps = 100\nmax_fps = 100000\nresolution_fps = 100\n";
        let s = Suite::parse(text).unwrap();
        let mut m = SimAddresses(crate::procedures::rfc2889::SimBridge {
            capacity: 700,
            max_learn_fps: 30_000.0,
        });
        let mut pm = crate::progress::Progress::new(vec![]).measurer(&mut m, 1e6);
        let r = run_for_dut_observed(
            &s,
            &s.duts[0],
            &64.into(),
            None,
            &mut pm,
            &mut |_, _, _| Ok(()),
            &mut (),
        )
        .unwrap();
        assert!(r.error.is_none(), "{:?}", r.error);
        assert_eq!(r.records.len(), 2);
        let Outcome::AddressCaching(c) = &r.records[0].outcome else {
            panic!("{:?}", r.records[0].outcome)
        };
        assert_eq!(c.value, Some(700.0));
        let row = &r.records[0].rows()[0];
        assert_eq!(
            row["procedure"],
            crate::results::Cell::Text("rfc2889-caching".into())
        );
        assert_eq!(row["address_capacity"].num(), Some(700.0));
        assert!(row["flooded_frames"].num().unwrap() > 0.0);
        assert!(r.records[0].rows()[0]
            .keys()
            .all(|k| crate::results::COLUMNS.contains(k)));
        let row = &r.records[1].rows()[0];
        let rate = row["learn_rate_fps"].num().unwrap();
        assert!((29_900.0..=30_000.0).contains(&rate), "{rate}");
        assert_eq!(row["address_capacity"].num(), Some(500.0));
        // Results keep the outcome under its procedure name and read it back.
        let v = serde_json::to_value(&r.records[1].outcome).unwrap();
        assert_eq!(v["procedure"], "rfc2889-learning");
        let back: Outcome = serde_json::from_value(v).unwrap();
        assert_eq!(back, r.records[1].outcome);
    }

    #[test]
    fn policies() {
        assert_eq!(parse_policy("single").unwrap(), TrialPolicy::Single);
        assert_eq!(parse_policy("best-of-5").unwrap(), TrialPolicy::BestOf(5));
        assert_eq!(parse_policy("worst-of-2").unwrap(), TrialPolicy::WorstOf(2));
        assert!(parse_policy("worst-of-0").is_err());
        assert!(parse_policy("median").is_err());
    }

    #[test]
    fn tests_needing_throughput_fail_without_it() {
        let mut m = SimDut::new(SimModel::Fixed { capacity_fps: 1e6 }, 1);
        let spec = TestSpec::Back2back {
            id: None,
            repetitions: 1,
            max_burst_s: 2.0,
            resolution_frames: 1,
        };
        let e = run_test(&mut m, &spec, &LineRate::ten_gig(64), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("throughput"), "{e}");
    }
}
