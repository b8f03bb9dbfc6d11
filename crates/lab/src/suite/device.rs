//! The `[[dut]]` and `[device_cost]` tables of a suite: which devices, how a simulated one
//! behaves, and the device-cost trials.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::secs;
use crate::sim::SimModel;
use crate::LabError;

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

    pub(super) fn validate(&self) -> Result<(), LabError> {
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
    pub(super) fn validate(&self) -> Result<(), LabError> {
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
