//! The benchmark procedures. Each talks only to a [`crate::Measurer`] and returns a serde result
//! that keeps every trial:
//!
//! - [`throughput`]: RFC 2544 §26.1 binary search, with BestN/WorstN step policies (seed 000);
//! - [`latency`]: RFC 2544 §26.2 latency at and below the throughput, with percentiles/jitter;
//! - [`linear`]: linear loss sweep, RFC 2544 §26.3 frame loss rate per step;
//! - [`back_to_back`]: RFC 9004 back-to-back frames with implied and corrected buffer time;
//! - [`mlrsearch`]: draft-ietf-bmwg-mlrsearch, NDR/PDR and conditional throughput;
//! - [`soak`]: long run at a fixed load, per-interval statistics;
//! - [`scale`]: any procedure repeated per table size or flow count;
//! - [`rfc2889`]: RFC 2889 §5.7 address caching capacity and §5.8 address learning rate;
//! - [`failover`]: a member link of a link aggregation group taken down mid-trial, the loss read
//!   as an outage (RFC 6201 §4's frame-loss method).

pub mod back_to_back;
pub mod failover;
pub mod latency;
pub mod linear;
pub mod mlrsearch;
pub mod rfc2889;
pub mod scale;
pub mod soak;
pub mod throughput;
