//! The traffic generator: streams of test frames sent at a paced rate on one or two ports, and the
//! analysis of what comes back.
//!
//! - [`size`]: frame sizes and IMIX mixes ([`SizeSpec`], [`SizeSequence`]).
//! - [`rate`]: offered load ([`Rate`], [`LinkSpeed`]) and the [`Pacer`] that schedules frames.
//! - [`flow`]: which header fields vary per flow and how ([`FieldRange`]).
//! - [`signature`]: the stream id / sequence / timestamp every frame carries after its UDP header.
//! - [`stream`]: a stream's headers and ranges ([`StreamSpec`]) compiled into a [`StreamBuilder`] that
//!   writes frame `n` from per-size templates with incremental checksum updates.
//! - [`rx`]: finding the signature in a received frame (anything else is counted as foreign).
//! - [`analyze`]: per-stream receive analysis (loss, duplicates, reordering, latency, jitter).
//! - [`engine`]: the [`Generator`] that runs a [`TrialSpec`] on its ports and returns a
//!   [`TrialReport`]; [`Progress`] lets another thread print live counters.
//! - [`mod@calibrate`]: the generator's own maximum rate and latency floor on its ports, without a DUT.
#![forbid(unsafe_code)]

pub mod analyze;
pub mod calibrate;
pub mod clock;
pub mod engine;
pub mod flow;
pub mod rate;
pub mod rx;
pub mod signature;
pub mod size;
pub mod stream;
pub mod waits;

pub use analyze::{Latency, LatencyHistogram, StreamAnalyzer, StreamRx};
pub use calibrate::{calibrate, CalibrationPoint, CalibrationReport};
pub use engine::{
    Generator, IntervalReport, IntervalStream, PortReport, Progress, StreamReport, TrialLength,
    TrialReport, TrialSpec,
};
pub use flow::{Field, FieldMode, FieldRange, FlowOrder};
pub use rate::{Clock, Lateness, LinkSpeed, MonoClock, Pacer, Rate};
pub use size::{SizeSequence, SizeSpec};
pub use stream::{StreamBuilder, StreamSpec, VlanSpec};

/// Errors of the generator. Configuration errors name the field, the value and what is accepted.
#[derive(Debug, thiserror::Error)]
pub enum GenError {
    #[error("invalid {field} {value:?}: accepted {accepted}")]
    Config {
        field: String,
        value: String,
        accepted: String,
    },
    #[error("port {port} did not come up within {waited:?}")]
    LinkDown {
        port: String,
        waited: std::time::Duration,
    },
}
