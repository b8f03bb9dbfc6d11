//! The results document of one run: [`RunResults`] (schema `vecswitch.results/2`), its
//! [`Provenance`], the generator's calibrated limits ([`GeneratorInfo`]) and one [`TestRecord`] per
//! test with the procedure's full result ([`Outcome`]) — every trial included.
//!
//! Benchmark results are data with provenance (STYLE.md habit 11, cloud-hypervisor's
//! performance-metrics): git revision, command and config, kernel, CPU and date travel with the
//! raw trials, so any figure in a report can be traced to how it was produced.
//!
//! [`TestRecord::rows`] flattens a test into rows of VSPERF-named metrics ([`COLUMNS`]) that the
//! Markdown, CSV and HTML renderers and `compare` share.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::procedures::back_to_back::BackToBackResult;
use crate::procedures::failover::FailoverResult;
use crate::procedures::latency::LatencyPoint;
use crate::procedures::linear::SweepPoint;
use crate::procedures::mlrsearch::MlrResult;
use crate::procedures::rfc2889::AddressResult;
use crate::procedures::soak::SoakResult;
use crate::procedures::throughput::ThroughputResult;
use crate::{LabError, LatencyStats, LineRate, TrialResult};

/// The schema identifier every results document carries. Version 2 added each trial's frame
/// accounting (`accounting`), limit label (`limit`, `limit_reasons`) and latency histogram
/// (`latency.histogram`); version-1 documents still load (those fields absent).
pub const SCHEMA: &str = "vecswitch.results/2";
/// Schemas [`RunResults::from_json`] reads.
pub const SUPPORTED_SCHEMAS: &[&str] = &["vecswitch.results/1", SCHEMA];

/// One run: everything needed to render a report or compare with another run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResults {
    pub schema: String,
    pub provenance: Provenance,
    pub generator: Option<GeneratorInfo>,
    pub tests: Vec<TestRecord>,
    /// Set when the run ended early (Ctrl-C, an error): why, and that `tests` holds what was
    /// measured until then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// Devices/frame sizes that could not be measured (a DUT that failed to start), with the
    /// error; the run carried on with the others.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<String>,
    /// Device cost at equal offered loads (`[device_cost]` of a suite), one row per device,
    /// frame size and load.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub device_cost: Vec<crate::device_cost::DeviceCostRow>,
}

impl RunResults {
    pub fn new(provenance: Provenance) -> RunResults {
        RunResults {
            schema: SCHEMA.to_string(),
            provenance,
            generator: None,
            tests: Vec::new(),
            stopped: None,
            failures: Vec::new(),
            device_cost: Vec::new(),
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("results serialise: no non-string map keys")
    }

    /// Parses a results document and checks its schema.
    pub fn from_json(text: &str, path: &Path) -> Result<RunResults, LabError> {
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| LabError::BadResults {
                path: path.into(),
                reason: format!("invalid JSON: {e}"),
            })?;
        match v.get("schema").and_then(|s| s.as_str()) {
            Some(s) if SUPPORTED_SCHEMAS.contains(&s) => {}
            Some(other) => {
                return Err(LabError::BadResults {
                    path: path.into(),
                    reason: format!("schema {other:?} is not supported (expected {SCHEMA:?})"),
                })
            }
            None => {
                return Err(LabError::BadResults {
                    path: path.into(),
                    reason: format!("no \"schema\" field (expected {SCHEMA:?})"),
                })
            }
        }
        serde_json::from_value(v).map_err(|e| LabError::BadResults {
            path: path.into(),
            reason: e.to_string(),
        })
    }

    pub fn load(path: &Path) -> Result<RunResults, LabError> {
        let text = std::fs::read_to_string(path).map_err(|source| LabError::Io {
            path: path.into(),
            source,
        })?;
        RunResults::from_json(&text, path)
    }

    pub fn save(&self, path: &Path) -> Result<(), LabError> {
        std::fs::write(path, self.to_json()).map_err(|source| LabError::Io {
            path: path.into(),
            source,
        })
    }
}

/// Where and how a run was produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// `git rev-parse HEAD`, when run inside a git checkout.
    pub git_revision: Option<String>,
    /// Uncommitted changes in the checkout (`git status --porcelain` not empty).
    pub git_dirty: Option<bool>,
    /// The command line that produced the run.
    pub command: Vec<String>,
    /// The suite/config the run used, as given.
    pub config: Option<serde_json::Value>,
    pub hostname: Option<String>,
    /// Kernel release (`uname -r`).
    pub kernel: Option<String>,
    pub cpu_model: Option<String>,
    pub cores: Option<u32>,
    /// UTC, RFC 3339.
    pub date: String,
    pub tool_version: String,
}

impl Provenance {
    /// Collects provenance from this machine; anything unavailable is `None`, never an error.
    pub fn collect(command: Vec<String>, config: Option<serde_json::Value>) -> Provenance {
        let git = |args: &[&str]| {
            std::process::Command::new("git")
                .args(args)
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        };
        let read = |p: &str| {
            std::fs::read_to_string(p)
                .ok()
                .map(|s| s.trim().to_string())
        };
        let cpu_model = read("/proc/cpuinfo").and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        });
        Provenance {
            git_revision: git(&["rev-parse", "HEAD"]),
            git_dirty: git(&["status", "--porcelain", "--untracked-files=no"])
                .map(|s| !s.is_empty()),
            command,
            config,
            hostname: read("/proc/sys/kernel/hostname"),
            kernel: read("/proc/sys/kernel/osrelease"),
            cpu_model,
            cores: std::thread::available_parallelism()
                .ok()
                .map(|n| n.get() as u32),
            date: rfc3339_utc(SystemTime::now()),
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
        }
    }
}

/// Formats a time as `YYYY-MM-DDTHH:MM:SSZ` (UTC).
pub fn rfc3339_utc(t: SystemTime) -> String {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's days_from_civil inverse).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The traffic generator used, and what it was measured to sustain on its own (loopback).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GeneratorInfo {
    pub name: String,
    /// Calibrated maximum rate per frame size: results at or near it are the tester's, not the DUT's.
    pub calibrated_limits: Vec<CalibratedLimit>,
}

/// The generator's ceiling for one frame size (and topology, when calibrated per topology).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CalibratedLimit {
    /// Frame size with FCS; for a mix, its mean rounded.
    pub frame_size: u32,
    /// Frames/s the generator sent and received back through a loop without DUT.
    pub max_fps: f64,
    /// Name of the frame-size mix (`imix`), when not a fixed size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mix: Option<String>,
    /// Topology whose generator ports were looped (`phy2phy-memif`: a memif pair in one process;
    /// `phy2phy-veth`: a veth pair straight through).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<String>,
    /// How the limit was measured (loop, duration), for the report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// The latency the generator adds on its own through the same loop at a low rate: the floor
    /// under every latency it measures (shown beside latency results, never subtracted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_floor: Option<LatencyFloor>,
}

/// The generator's own latency through a loop without device (calibration).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyFloor {
    /// The low rate it was measured at (frames/s).
    pub rate_fps: f64,
    pub min_ns: f64,
    pub p50_ns: f64,
    pub p99_ns: f64,
    pub samples: u64,
}

impl LatencyFloor {
    /// From the statistics of the calibration's low-rate trial.
    pub fn from_stats(rate_fps: f64, l: &LatencyStats) -> LatencyFloor {
        LatencyFloor {
            rate_fps,
            min_ns: l.min_ns,
            p50_ns: l.p50_ns,
            p99_ns: l.p99_ns,
            samples: l.samples,
        }
    }
}

impl std::fmt::Display for LatencyFloor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "generator latency floor (no device, {:.0} kfps): min {:.1} µs, p50 {:.1} µs, p99 {:.1} µs",
            self.rate_fps / 1e3,
            self.min_ns / 1e3,
            self.p50_ns / 1e3,
            self.p99_ns / 1e3
        )
    }
}

impl CalibratedLimit {
    /// `64 B` or `imix`.
    pub fn size_label(&self) -> String {
        size_label(self.frame_size, self.mix.as_deref())
    }
}

/// `64 B` for a fixed size, the mix's name (`imix`) otherwise.
pub fn size_label(frame_size: u32, mix: Option<&str>) -> String {
    match mix {
        Some(m) => m.to_string(),
        None => format!("{frame_size} B"),
    }
}

impl GeneratorInfo {
    pub fn limit_for(&self, frame_size: u32) -> Option<f64> {
        self.calibrated_limits
            .iter()
            .find(|c| c.frame_size == frame_size)
            .map(|c| c.max_fps)
    }

    /// The limit calibrated for a test's topology and frame size (or mix); falls back to one
    /// recorded for the size without a topology.
    pub fn limit_for_test(&self, t: &TestRecord) -> Option<f64> {
        let size_matches =
            |c: &&CalibratedLimit| c.frame_size == t.frame_size && c.mix == t.frame_mix;
        self.calibrated_limits
            .iter()
            .filter(size_matches)
            .find(|c| c.topology.is_some() && c.topology == t.topology)
            .or_else(|| {
                self.calibrated_limits
                    .iter()
                    .filter(size_matches)
                    .find(|c| c.topology.is_none())
            })
            .map(|c| c.max_fps)
    }
}

/// One test: what was measured, on what, and the procedure's full result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestRecord {
    /// VSPERF-style test id: `phy2phy_tput`, `pvp_back2back`, …
    pub id: String,
    pub description: String,
    /// `phy2phy`, `pvp`, `pvvp`, …
    pub deployment: String,
    /// The device under test: `vecswitch`, `ovs`, `linux-bridge`, `testpmd`, …
    pub vswitch: String,
    /// `udp`, `ethernet`, `ipv4`, …
    pub traffic_type: String,
    pub frame_size: u32,
    pub line: LineRate,
    pub bidirectional: bool,
    pub flows: Option<u64>,
    /// Table size of a scale sweep point (MAC entries, routes).
    pub scale: Option<u64>,
    /// How the test ran: DUT versions, topology, CPU placement (which processes shared a core).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<serde_json::Value>,
    /// Name of the frame-size mix (`imix`) when the traffic was a mix; `frame_size` is then its
    /// mean, rounded, and `line` carries the exact mean.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame_mix: Option<String>,
    /// Topology name (`phy2phy-memif`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<String>,
    /// The generator's calibrated limit for this topology and frame size (frames/s), shown beside
    /// every result of the test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator_limit_fps: Option<f64>,
    pub outcome: Outcome,
}

/// A procedure's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "procedure", content = "result", rename_all = "kebab-case")]
pub enum Outcome {
    Throughput(ThroughputResult),
    Latency(Vec<LatencyPoint>),
    LinearSweep(Vec<SweepPoint>),
    BackToBack(BackToBackResult),
    Mlrsearch(MlrResult),
    Soak(SoakResult),
    /// RFC 2889 §5.7: `value` is the largest address count without flooding.
    #[serde(rename = "rfc2889-caching")]
    AddressCaching(AddressResult),
    /// RFC 2889 §5.8: `value` is the highest learning rate (frames/s) without flooding.
    #[serde(rename = "rfc2889-learning")]
    AddressLearning(AddressResult),
    /// A member link of a link aggregation group taken down mid-trial.
    Failover(Box<FailoverResult>),
}

impl Outcome {
    pub fn name(&self) -> &'static str {
        match self {
            Outcome::Throughput(_) => "throughput",
            Outcome::Latency(_) => "latency",
            Outcome::LinearSweep(_) => "linear-sweep",
            Outcome::BackToBack(_) => "back-to-back",
            Outcome::Mlrsearch(_) => "mlrsearch",
            Outcome::Soak(_) => "soak",
            Outcome::AddressCaching(_) => "rfc2889-caching",
            Outcome::AddressLearning(_) => "rfc2889-learning",
            Outcome::Failover(_) => "failover",
        }
    }
}

/// Column names of the flat tables, VSPERF's names first.
pub const COLUMNS: &[&str] = &[
    "id",
    "deployment",
    "vswitch",
    "traffic_type",
    "packet_size",
    "procedure",
    "goal",
    "scale",
    "flows",
    "throughput_rx_fps",
    "throughput_rx_mbps",
    "throughput_rx_percent",
    "tx_rate_fps",
    "tx_rate_mbps",
    "tx_rate_percent",
    "frame_loss_percent",
    "min_latency_ns",
    "avg_latency_ns",
    "max_latency_ns",
    "p50_latency_ns",
    "p99_latency_ns",
    "p99_9_latency_ns",
    "p99_99_latency_ns",
    "jitter_mean_ns",
    "jitter_max_ns",
    "lower_bound_fps",
    "upper_bound_fps",
    "b2b_frames",
    "b2b_frames_min",
    "b2b_frames_max",
    "b2b_frames_stdev",
    "b2b_frame_loss_percent",
    "implied_buffer_time_us",
    "corrected_buffer_time_us",
    "trials",
    "tester_limited",
    "limit",
    "not_sent_frames",
    "refused_by_device_frames",
    "lost_in_device_frames",
    "dropped_at_tester_rx_frames",
    "unexplained_lost_frames",
    "generator_limit_fps",
    "address_capacity",
    "learn_rate_fps",
    "flooded_frames",
    "outage_ms",
    "member_outage_ms",
    "note",
];

/// A value in a flat row.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Num(f64),
    Text(String),
    Flag(bool),
}

impl Cell {
    pub fn num(&self) -> Option<f64> {
        match self {
            Cell::Num(x) => Some(*x),
            _ => None,
        }
    }
}

impl std::fmt::Display for Cell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cell::Num(x) if x.fract() == 0.0 && x.abs() < 1e15 => write!(f, "{x:.0}"),
            Cell::Num(x) if x.abs() >= 1.0 => write!(f, "{x:.3}"),
            // Small values (loss percentages) keep 4 significant digits: 0.000 would hide loss.
            Cell::Num(x) => {
                let prec = (3 - x.abs().log10().floor() as i32).clamp(3, 12) as usize;
                write!(f, "{x:.prec$}")
            }
            Cell::Text(s) => f.write_str(s),
            Cell::Flag(b) => f.write_str(if *b { "True" } else { "False" }),
        }
    }
}

/// One flat row: column name → value (columns absent for this kind of test are left out).
pub type Row = BTreeMap<&'static str, Cell>;

impl TestRecord {
    /// `64 B`, or the mix's name (`imix`).
    pub fn size_label(&self) -> String {
        size_label(self.frame_size, self.frame_mix.as_deref())
    }

    /// The rows this test contributes to the tables: one for throughput, back-to-back and soak;
    /// one per goal (MLRsearch), per load fraction (latency), per step (linear sweep).
    pub fn rows(&self) -> Vec<Row> {
        let base = |procedure: &str| {
            let mut r = Row::new();
            r.insert("id", Cell::Text(self.id.clone()));
            r.insert("deployment", Cell::Text(self.deployment.clone()));
            r.insert("vswitch", Cell::Text(self.vswitch.clone()));
            r.insert("traffic_type", Cell::Text(self.traffic_type.clone()));
            match &self.frame_mix {
                Some(mix) => r.insert("packet_size", Cell::Text(mix.clone())),
                None => r.insert("packet_size", Cell::Num(f64::from(self.frame_size))),
            };
            r.insert("procedure", Cell::Text(procedure.to_string()));
            if let Some(g) = self.generator_limit_fps {
                r.insert("generator_limit_fps", Cell::Num(g.round()));
            }
            if let Some(s) = self.scale {
                r.insert("scale", Cell::Num(s as f64));
            }
            if let Some(f) = self.flows {
                r.insert("flows", Cell::Num(f as f64));
            }
            r
        };
        let line = &self.line;
        let rates = |r: &mut Row, rx_fps: f64, tx_fps: f64| {
            r.insert("throughput_rx_fps", Cell::Num(rx_fps));
            r.insert("throughput_rx_mbps", Cell::Num(line.mbps(rx_fps)));
            r.insert("throughput_rx_percent", Cell::Num(line.percent(rx_fps)));
            r.insert("tx_rate_fps", Cell::Num(tx_fps));
            r.insert("tx_rate_mbps", Cell::Num(line.mbps(tx_fps)));
            r.insert("tx_rate_percent", Cell::Num(line.percent(tx_fps)));
        };
        let name = self.outcome.name();
        match &self.outcome {
            Outcome::Throughput(t) => {
                let mut r = base(name);
                match t.throughput_fps {
                    Some(x) => {
                        // The last non-learning trial at the result carries the measured rates.
                        let at = t
                            .trials
                            .iter()
                            .rev()
                            .find(|tr| tr.intended_load.fps == x && !tr.tester_limited);
                        let (rx, tx, loss) = at.map_or((x, x, 0.0), |tr| {
                            (tr.received_fps(), tr.offered_fps(), tr.loss_percent())
                        });
                        rates(&mut r, rx, tx);
                        r.insert("frame_loss_percent", Cell::Num(loss));
                        if let Some(l) = at.and_then(|tr| tr.latency.as_ref()) {
                            insert_latency(&mut r, l);
                        }
                        insert_split(&mut r, at);
                        if !t.verified {
                            r.insert("note", Cell::Text("not verified".into()));
                        }
                    }
                    None => {
                        r.insert("note", Cell::Text("no load passed".into()));
                    }
                }
                r.insert("trials", Cell::Num(t.trials.len() as f64));
                // A result within the tester's margin of the generator's calibrated limit says
                // nothing about the DUT above it: flag it like a tester-limited search.
                let at_limit = match (t.throughput_fps, self.generator_limit_fps) {
                    (Some(x), Some(g)) => x >= g * (1.0 - crate::measurer::TESTER_CEILING_MARGIN),
                    _ => false,
                };
                if at_limit && !t.tester_limited {
                    r.insert(
                        "note",
                        Cell::Text(
                            "at the generator's calibrated limit: the DUT may forward more".into(),
                        ),
                    );
                }
                r.insert("tester_limited", Cell::Flag(t.tester_limited || at_limit));
                label_back_pressure(&mut r, &t.trials);
                vec![r]
            }
            Outcome::Mlrsearch(m) => m
                .goals
                .iter()
                .map(|g| {
                    let mut r = base(name);
                    r.insert("goal", Cell::Text(g.goal.name.clone()));
                    if let Some(ct) = g.conditional_throughput_fps {
                        let tx = g.relevant_lower_bound_fps.unwrap_or(ct);
                        rates(&mut r, ct, tx);
                    }
                    if let Some(l) = g.relevant_lower_bound_fps {
                        r.insert("lower_bound_fps", Cell::Num(l));
                    }
                    if let Some(u) = g.relevant_upper_bound_fps {
                        r.insert("upper_bound_fps", Cell::Num(u));
                    }
                    r.insert("frame_loss_percent", Cell::Num(g.goal.loss_ratio * 100.0));
                    r.insert("trials", Cell::Num(m.trials.len() as f64));
                    r.insert("tester_limited", Cell::Flag(g.tester_limited));
                    let spread = m
                        .repeated
                        .as_ref()
                        .and_then(|rep| rep.goals.iter().find(|s| s.name == g.goal.name).map(|s| (rep.searches, s)))
                        .and_then(|(n, s)| Some((n, s.min_fps?, s.max_fps?)))
                        .map(|(n, lo, hi)| {
                            format!(
                                "; lower bound over {n} searches: median shown, [{:.3}, {:.3}] Mfps",
                                lo / 1e6,
                                hi / 1e6
                            )
                        })
                        .unwrap_or_default();
                    r.insert(
                        "note",
                        Cell::Text(format!(
                            "{:.0} trial-seconds; loss column = goal loss ratio{spread}",
                            m.trial_seconds
                        )),
                    );
                    label_back_pressure(&mut r, &m.trials);
                    r
                })
                .collect(),
            Outcome::Latency(points) => points
                .iter()
                .map(|p| {
                    let mut r = base(name);
                    r.insert(
                        "goal",
                        Cell::Text(format!("{:.0}% of throughput", p.fraction * 100.0)),
                    );
                    let rx: f64 = mean(
                        p.trials
                            .iter()
                            .filter(|t| !t.tester_limited)
                            .map(|t| t.received_fps()),
                    );
                    rates(&mut r, rx, p.load_fps);
                    r.insert("frame_loss_percent", Cell::Num(p.max_loss_ratio * 100.0));
                    if let Some(s) = &p.stats {
                        insert_latency(&mut r, s);
                    }
                    for t in &p.trials {
                        insert_split(&mut r, Some(t));
                    }
                    r.insert("trials", Cell::Num(p.trials.len() as f64));
                    r.insert("tester_limited", Cell::Flag(p.tester_limited_trials > 0));
                    r
                })
                .collect(),
            Outcome::LinearSweep(points) => points
                .iter()
                .map(|p| {
                    let mut r = base(name);
                    rates(&mut r, p.trial.received_fps(), p.trial.offered_fps());
                    r.insert("frame_loss_percent", Cell::Num(p.loss_ratio * 100.0));
                    insert_split(&mut r, Some(&p.trial));
                    r.insert("trials", Cell::Num(1.0));
                    r.insert("tester_limited", Cell::Flag(p.tester_limited));
                    r
                })
                .collect(),
            Outcome::BackToBack(b) => {
                let mut r = base(name);
                if b.applicable {
                    r.insert("b2b_frames", Cell::Num(b.average_frames));
                    r.insert("b2b_frames_min", Cell::Num(b.min_frames as f64));
                    r.insert("b2b_frames_max", Cell::Num(b.max_frames as f64));
                    r.insert("b2b_frames_stdev", Cell::Num(b.stdev_frames));
                    r.insert("b2b_frame_loss_percent", Cell::Num(0.0));
                    r.insert(
                        "implied_buffer_time_us",
                        Cell::Num(b.implied_buffer_time_s * 1e6),
                    );
                    r.insert(
                        "corrected_buffer_time_us",
                        Cell::Num(b.corrected_buffer_time_s * 1e6),
                    );
                    let mut notes = Vec::new();
                    if b.max_burst_lossless {
                        notes.push("longest burst tried was lossless: buffer may be larger".into());
                    }
                    if let (true, Some(a)) = (b.below_assumed_rate, b.burst_rate_fps) {
                        notes.push(format!(
                            "bursts sent at {:.3} Mfps, below the {:.3} Mfps line rate: buffer \
                             times use the achieved rate (RFC 9004 §5.4){}",
                            a / 1e6,
                            b.assumed_burst_fps / 1e6,
                            if b.burst_rate_at_or_below_throughput {
                                "; no faster than the throughput, so the buffer never filled"
                            } else {
                                ""
                            }
                        ));
                    }
                    if !notes.is_empty() {
                        r.insert("note", Cell::Text(notes.join("; ")));
                    }
                } else {
                    r.insert(
                        "note",
                        Cell::Text(
                            "not applicable: throughput at line rate (RFC 9004 §5.1)".into(),
                        ),
                    );
                }
                r.insert("trials", Cell::Num(b.bursts.len() as f64));
                r.insert("tester_limited", Cell::Flag(b.tester_limited));
                vec![r]
            }
            Outcome::Soak(s) => {
                let mut r = base(name);
                let counted: Vec<_> = s.intervals.iter().filter(|t| !t.tester_limited).collect();
                let rx = mean(counted.iter().map(|t| t.received_fps()));
                let tx = mean(counted.iter().map(|t| t.offered_fps()));
                rates(&mut r, rx, tx);
                r.insert("frame_loss_percent", Cell::Num(s.loss_ratio * 100.0));
                let lat: Vec<LatencyStats> =
                    counted.iter().filter_map(|t| t.latency.clone()).collect();
                if let Some(l) = LatencyStats::combine(&lat) {
                    insert_latency(&mut r, &l);
                }
                for t in &s.intervals {
                    insert_split(&mut r, Some(t));
                }
                r.insert("trials", Cell::Num(s.intervals.len() as f64));
                r.insert("tester_limited", Cell::Flag(s.tester_limited_intervals > 0));
                r.insert(
                    "note",
                    Cell::Text(format!(
                        "{} of {} intervals lossy",
                        s.lossy_intervals,
                        s.intervals.len()
                    )),
                );
                vec![r]
            }
            Outcome::Failover(f) => {
                let mut r = base(name);
                rates(&mut r, f.trial.received_fps(), f.trial.offered_fps());
                r.insert("frame_loss_percent", Cell::Num(f.trial.loss_percent()));
                r.insert("outage_ms", Cell::Num(f.outage_ms));
                if let Some(m) = f.member_outage_ms {
                    r.insert("member_outage_ms", Cell::Num(m));
                }
                insert_split(&mut r, Some(&f.trial));
                r.insert(
                    "trials",
                    Cell::Num(1.0 + f64::from(u8::from(f.learning.is_some()))),
                );
                r.insert("tester_limited", Cell::Flag(f.tester_limited));
                r.insert("note", Cell::Text(f.describe()));
                vec![r]
            }
            Outcome::AddressCaching(a) | Outcome::AddressLearning(a) => {
                let caching = matches!(self.outcome, Outcome::AddressCaching(_));
                let mut r = base(name);
                let last_pass = a.trials.iter().rev().find(|t| t.passed);
                match (caching, a.value) {
                    (true, Some(v)) => {
                        r.insert("address_capacity", Cell::Num(v));
                        if let Some(t) = last_pass {
                            r.insert("learn_rate_fps", Cell::Num(t.learn_rate_fps));
                        }
                    }
                    (false, Some(v)) => {
                        r.insert("learn_rate_fps", Cell::Num(v));
                        if let Some(t) = last_pass {
                            r.insert("address_capacity", Cell::Num(f64::from(t.addresses)));
                        }
                    }
                    (_, None) => {
                        r.insert("note", Cell::Text("no trial passed".into()));
                    }
                }
                // The flooding of the first failing trial above the result: how far off it was.
                if let Some(f) = a.trials.iter().find(|t| !t.passed) {
                    r.insert("flooded_frames", Cell::Num(f.counts.flooded as f64));
                }
                r.insert("trials", Cell::Num(a.trials.len() as f64));
                append_note(&mut r, a.method.describe());
                vec![r]
            }
        }
    }
}

/// Adds a trial's loss split to a row (summed with what the row already holds) when the trial has
/// one and lost or did not send anything, and its limit label when it has one; a row of several
/// trials lists each distinct label once.
fn insert_split(r: &mut Row, t: Option<&TrialResult>) {
    let Some(t) = t else { return };
    if t.limit != crate::TrialLimit::None {
        let label = t.limit.label();
        match r.get_mut("limit") {
            Some(Cell::Text(s)) if !s.split(", ").any(|x| x == label) => {
                s.push_str(", ");
                s.push_str(label);
            }
            Some(_) => {}
            None => {
                r.insert("limit", Cell::Text(label.into()));
            }
        }
    }
    let Some(a) = &t.accounting else { return };
    if a.received >= a.intended && a.not_sent == 0 {
        return;
    }
    let mut add = |col: &'static str, v: Option<u64>| {
        if let Some(v) = v {
            let old = r.get(col).and_then(Cell::num).unwrap_or(0.0);
            r.insert(col, Cell::Num(old + v as f64));
        }
    };
    add("not_sent_frames", Some(a.not_sent));
    add("refused_by_device_frames", Some(a.refused_by_device));
    add("lost_in_device_frames", a.lost_in_device);
    add("dropped_at_tester_rx_frames", a.dropped_at_tester_rx);
    add("unexplained_lost_frames", Some(a.unexplained));
}

/// Appends `text` to the row's note (`; `-separated).
/// Loads above the result that the device flow-controlled (METHODOLOGY.md, "Back-pressure"):
/// the result is the device's flow-controlled rate, not a tester ceiling. The `limit` column
/// says `back-pressure` and the note gives the rate the device let through.
fn label_back_pressure(r: &mut Row, trials: &[TrialResult]) {
    if let Some(bp) = trials
        .iter()
        .filter(|tr| tr.back_pressured())
        .map(|tr| tr.received_fps())
        .reduce(f64::max)
    {
        r.insert("limit", Cell::Text("back-pressure".into()));
        append_note(
            r,
            &format!(
                "the device back-pressured the tester above the result \
                 (flow-controlled to {bp:.0} fps at most)"
            ),
        );
    }
}

fn append_note(r: &mut Row, text: &str) {
    match r.get_mut("note") {
        Some(Cell::Text(s)) => {
            s.push_str("; ");
            s.push_str(text);
        }
        _ => {
            r.insert("note", Cell::Text(text.into()));
        }
    }
}

fn insert_latency(r: &mut Row, l: &LatencyStats) {
    r.insert("min_latency_ns", Cell::Num(l.min_ns));
    r.insert("avg_latency_ns", Cell::Num(l.avg_ns));
    r.insert("max_latency_ns", Cell::Num(l.max_ns));
    r.insert("p50_latency_ns", Cell::Num(l.p50_ns));
    r.insert("p99_latency_ns", Cell::Num(l.p99_ns));
    r.insert("p99_9_latency_ns", Cell::Num(l.p99_9_ns));
    r.insert("p99_99_latency_ns", Cell::Num(l.p99_99_ns));
    r.insert("jitter_mean_ns", Cell::Num(l.jitter_mean_ns));
    r.insert("jitter_max_ns", Cell::Num(l.jitter_max_ns));
}

fn mean(it: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = it.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    if n == 0 {
        0.0
    } else {
        s / n as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procedures::throughput::{throughput, ThroughputConfig};
    use crate::sim::{SimDut, SimModel};
    use std::time::Duration;

    pub(crate) fn sample_throughput_record() -> TestRecord {
        let line = LineRate::ten_gig(64);
        let mut dut = SimDut::new(
            SimModel::Fixed {
                capacity_fps: 0.5 * line.max_fps(),
            },
            1,
        );
        let t = throughput(
            &mut dut,
            &ThroughputConfig::new(0.0, line.max_fps(), Duration::from_secs(1)),
        )
        .unwrap();
        TestRecord {
            id: "phy2phy_tput".into(),
            description: "LTD.Throughput.RFC2544.PacketLossRatio".into(),
            deployment: "phy2phy".into(),
            vswitch: "sim".into(),
            traffic_type: "udp".into(),
            frame_size: 64,
            line,
            bidirectional: false,
            flows: Some(1),
            scale: None,
            setup: None,
            frame_mix: None,
            topology: None,
            generator_limit_fps: None,
            outcome: Outcome::Throughput(t),
        }
    }

    #[test]
    fn mlrsearch_rows_say_back_pressure_with_the_rate() {
        use crate::procedures::mlrsearch::{mlrsearch, MlrConfig};
        use crate::TrialLimit;
        let mut rec = sample_throughput_record();
        let mut dut = SimDut::new(SimModel::Fixed { capacity_fps: 1e5 }, 1);
        let mut m = mlrsearch(&mut dut, &MlrConfig::ndr_pdr(1e4, 1e6)).unwrap();
        // Without a back-pressured trial: no label.
        rec.outcome = Outcome::Mlrsearch(m.clone());
        assert!(rec.rows().iter().all(|r| !r.contains_key("limit")));
        // A trial above the result that the device flow-controlled to 100,560 fps (the issue's
        // shaped bridge): every goal's row says so.
        let t = m
            .trials
            .iter_mut()
            .find(|t| t.intended_load.fps > 2e5)
            .unwrap();
        t.limit = TrialLimit::BackPressure {
            achieved_fps: 100_560.0,
            refused: 1,
        };
        t.received_frames = (100_560.0 * t.intended_duration.as_secs_f64()) as u64;
        rec.outcome = Outcome::Mlrsearch(m);
        for r in rec.rows() {
            assert_eq!(r["limit"], Cell::Text("back-pressure".into()));
            assert_eq!(r["tester_limited"], Cell::Flag(false));
            let Cell::Text(note) = &r["note"] else {
                panic!()
            };
            assert!(note.contains("flow-controlled to 100560 fps"), "{note}");
        }
    }

    #[test]
    fn json_round_trip_keeps_every_trial_and_the_schema() {
        let mut run = RunResults::new(Provenance::collect(vec!["test".into()], None));
        run.tests.push(sample_throughput_record());
        let text = run.to_json();
        assert!(text.contains("\"schema\": \"vecswitch.results/2\""));
        assert!(text.contains("\"procedure\": \"throughput\""));
        let back = RunResults::from_json(&text, Path::new("x.json")).unwrap();
        assert_eq!(back, run);
        let Outcome::Throughput(t) = &back.tests[0].outcome else {
            panic!()
        };
        assert!(t.trials.len() > 5);
    }

    #[test]
    fn rows_show_the_loss_split_and_the_back_pressure_label() {
        use crate::{FrameAccounting, TrialLimit};
        let mut rec = sample_throughput_record();
        let Outcome::Throughput(t) = &mut rec.outcome else {
            panic!()
        };
        let x = t.throughput_fps.unwrap();
        // A trial above the result that the device flow-controlled (300 refused at its ingress,
        // 2 lost inside, 1 unexplained), and the trial at the result with 5 slots not sent.
        let mut above = t
            .trials
            .iter()
            .find(|tr| tr.intended_load.fps > x)
            .unwrap()
            .clone();
        let i = above.intended_frames;
        above.accounting = Some(FrameAccounting::split(
            i,
            0,
            i - 300,
            300,
            None,
            Some(2),
            Some(0),
            i - 303,
        ));
        above.limit = TrialLimit::BackPressure {
            achieved_fps: 1.0,
            refused: 300,
        };
        t.trials.push(above);
        let at = t
            .trials
            .iter_mut()
            .rev()
            .find(|tr| tr.intended_load.fps == x && !tr.tester_limited)
            .unwrap();
        let i = at.intended_frames;
        at.accounting = Some(FrameAccounting::split(
            i,
            5,
            i - 5,
            0,
            None,
            None,
            Some(0),
            i - 5,
        ));
        let r = &rec.rows()[0];
        assert_eq!(r["not_sent_frames"], Cell::Num(5.0));
        assert_eq!(r["unexplained_lost_frames"], Cell::Num(0.0));
        assert!(
            !r.contains_key("lost_in_device_frames"),
            "unknown stays unknown"
        );
        assert_eq!(r["limit"], Cell::Text("back-pressure".into()));
        let Cell::Text(note) = &r["note"] else {
            panic!()
        };
        assert!(note.contains("back-pressured"), "{note}");
        // A linear-sweep-like row of the back-pressured trial shows every part of its loss.
        let Outcome::Throughput(t) = &rec.outcome else {
            panic!()
        };
        let mut row = Row::new();
        insert_split(&mut row, t.trials.last());
        assert_eq!(row["refused_by_device_frames"], Cell::Num(300.0));
        assert_eq!(row["lost_in_device_frames"], Cell::Num(2.0));
        assert_eq!(row["unexplained_lost_frames"], Cell::Num(1.0));
        assert_eq!(row["limit"], Cell::Text("back-pressure".into()));
        // The CSV header carries the new columns; schema 1 documents still load.
        assert!(COLUMNS.contains(&"dropped_at_tester_rx_frames"));
        let mut run = RunResults::new(Provenance::collect(vec!["t".into()], None));
        run.schema = "vecswitch.results/1".into();
        let back = RunResults::from_json(&run.to_json(), Path::new("old.json")).unwrap();
        assert_eq!(back.schema, "vecswitch.results/1");
    }

    #[test]
    fn wrong_or_missing_schema_is_rejected_with_the_path() {
        let e = RunResults::from_json(r#"{"schema":"other/9"}"#, Path::new("a.json"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("a.json") && e.contains("other/9") && e.contains(SCHEMA),
            "{e}"
        );
        let e = RunResults::from_json("{}", Path::new("b.json"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no \"schema\""), "{e}");
        assert!(RunResults::from_json("not json", Path::new("c.json")).is_err());
    }

    #[test]
    fn provenance_has_date_cores_and_kernel() {
        let p = Provenance::collect(vec!["vecswitch".into(), "bench".into()], None);
        assert_eq!(p.date.len(), 20);
        assert!(p.date.ends_with('Z'));
        assert!(p.cores.unwrap() >= 1);
        assert!(p.kernel.is_some());
    }

    #[test]
    fn rfc3339_known_dates() {
        assert_eq!(rfc3339_utc(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        assert_eq!(
            rfc3339_utc(UNIX_EPOCH + Duration::from_secs(951_782_400)),
            "2000-02-29T00:00:00Z"
        );
        assert_eq!(
            rfc3339_utc(UNIX_EPOCH + Duration::from_secs(1_700_000_000)),
            "2023-11-14T22:13:20Z"
        );
    }

    #[test]
    fn small_numbers_keep_significant_digits() {
        assert_eq!(Cell::Num(0.00012346).to_string(), "0.0001235");
        assert_eq!(Cell::Num(0.5).to_string(), "0.5000");
        assert_eq!(Cell::Num(12.25).to_string(), "12.250");
        assert_eq!(Cell::Num(42.0).to_string(), "42");
    }

    #[test]
    fn throughput_row_uses_vsperf_fields() {
        let rec = sample_throughput_record();
        let rows = rec.rows();
        assert_eq!(rows.len(), 1);
        let r = &rows[0];
        let pct = r["throughput_rx_percent"].num().unwrap();
        assert!(pct <= 50.0 && pct > 49.9, "{pct}");
        let fps = r["throughput_rx_fps"].num().unwrap();
        assert!((r["throughput_rx_mbps"].num().unwrap() - fps * 64.0 * 8.0 / 1e6).abs() < 1e-6);
        assert_eq!(r["frame_loss_percent"].num(), Some(0.0));
        assert!(r.contains_key("avg_latency_ns"));
        assert_eq!(r["tester_limited"], Cell::Flag(false));
        assert!(r.keys().all(|k| COLUMNS.contains(k)));
    }
}
