//! The benchmark lab: procedures, simulated DUTs, results and reports.
//!
//! - [`Measurer`] ([`measurer`]) is the one interface between procedures and traffic: a trial at a
//!   [`Load`] for a duration, or a back-to-back burst. The generator-backed measurer lives with the
//!   DUT drivers; [`sim::SimDut`] is a seeded simulated DUT with known answers for tests.
//! - [`procedures`] holds the searches and sweeps (RFC 2544 throughput and BestN/WorstN, latency,
//!   linear loss sweep, RFC 9004 back-to-back, MLRsearch, soak, scale sweep, RFC 2889 address
//!   tests, LAG failover).
//! - [`results`] is the schema-versioned JSON document of a run (`vecswitch.results/1`) with its
//!   provenance; [`report`] renders it as VSPERF-style Markdown and CSV or a self-contained HTML
//!   report, and compares two runs.
//! - [`suite`] is the TOML suite format of `vecswitch bench` and [`suite::run_test`], which runs one
//!   suite test on any measurer (the testbed crate supplies topologies, DUT drivers and the
//!   generator-backed measurer).
//! - [`progress`] prints what a long run is doing (block, procedure, trial, load, time left).
//! - [`cpu_check`] tells whether other processes used the measuring CPUs before a test.
//! - [`demo`] runs every procedure against simulated DUTs to produce a complete example run.
//!
//! Units: loads in frames/s ([`Load`]); frame sizes include the FCS; line rate counts 20 bytes of
//! preamble and inter-frame gap per frame ([`load`]).
#![forbid(unsafe_code)]

pub mod cpu_check;
pub mod demo;
pub mod device_cost;
pub mod error;
pub mod load;
pub mod measurer;
pub mod procedures;
pub mod progress;
pub mod report;
pub mod results;
pub mod sim;
pub mod suite;

pub use error::LabError;
pub use load::{LineRate, Load};
pub use measurer::{
    BurstResult, DeviceWorker, FrameAccounting, LatencyStats, Measurer, TrialLimit, TrialResult,
};
