//! The traffic generator: streams of test frames sent at a paced rate on one or two ports, and the
//! analysis of what comes back.
//!
//! - [`size`]: frame sizes and IMIX mixes ([`SizeSpec`], [`SizeSequence`]).
//! - [`rate`]: offered load ([`Rate`], [`LinkSpeed`]) and the [`Pacer`] that schedules frames.
//! - [`flow`]: which header fields vary per flow and how ([`FieldRange`]).
//! - [`signature`]: the stream id / sequence / timestamp every frame carries after its UDP header.
//! - [`analyze`]: per-stream receive analysis (loss, duplicates, reordering, latency, jitter).
#![forbid(unsafe_code)]

pub mod analyze;
pub mod flow;
pub mod rate;
pub mod signature;
pub mod size;

pub use analyze::{Latency, StreamAnalyzer, StreamRx};
pub use flow::{Field, FieldMode, FieldRange};
pub use rate::{Clock, LinkSpeed, MonoClock, Pacer, Rate};
pub use size::{SizeSequence, SizeSpec};

/// Errors of the generator. Configuration errors name the field, the value and what is accepted.
#[derive(Debug, thiserror::Error)]
pub enum GenError {
    #[error("invalid {field} {value:?}: accepted {accepted}")]
    Config { field: String, value: String, accepted: String },
}
