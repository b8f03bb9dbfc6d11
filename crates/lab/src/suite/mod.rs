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

mod device;
mod names;
mod run;
mod test_spec;
#[cfg(test)]
mod tests;

use std::time::Duration;

use serde::{Deserialize, Serialize};
use vecswitch_gen::SizeSpec;

pub use device::{DeviceCostSpec, DutSpec, SimSpec};
pub use names::{parse_policy, FlowMode, Policy, ScaleKind, SearchMax};
pub use run::{
    found_throughput, run_for_dut, run_for_dut_observed, run_test, run_test_with_limit, DutRun,
    Reconfigure, SuiteObserver,
};
pub use test_spec::{GoalSpec, ScaleSpec, TestSpec, SCALE_KINDS};

use crate::{LabError, LineRate};

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

impl Suite {
    /// Parses and validates a suite; errors name the key, the value and what is accepted.
    pub fn parse(text: &str) -> Result<Suite, LabError> {
        let suite: Suite = serde_path_to_error::deserialize(toml::Deserializer::new(text))
            .map_err(|e| LabError::Suite {
                at: match e.path().to_string() {
                    p if p == "." => "(top level)".to_string(),
                    p => p,
                },
                message: e.into_inner().message().to_string(),
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
                goals, searches, ..
            } = t
            {
                for g in goals {
                    g.goal()?.validate()?;
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
                scale,
                frame_sizes,
                duts,
                learning_percent,
                ..
            } = t
            {
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

/// Seconds as a [`Duration`]; `field` names the key when they are not positive and finite.
fn secs(field: &'static str, s: f64) -> Result<Duration, LabError> {
    if s.is_finite() && s > 0.0 && s < 1e7 {
        Ok(Duration::from_secs_f64(s))
    } else {
        Err(LabError::invalid(field, s, "a positive number of seconds"))
    }
}
