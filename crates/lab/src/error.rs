//! [`LabError`]: every way a procedure, a measurer, a results file or a report can fail.

use std::path::PathBuf;

/// Errors of the lab library. Messages name the field, the value and what is accepted.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// A procedure or simulated-DUT parameter is out of range.
    #[error("invalid {field} = {value}: expected {expected}")]
    InvalidConfig {
        field: &'static str,
        value: String,
        expected: &'static str,
    },

    /// A suite file that does not read: `at` is the key's path (`test[1].procedure`, `dut[0]`),
    /// the message what was wrong there (an unknown name with the accepted ones, a missing key).
    #[error("suite {at}: {message} (docs/METHODOLOGY.md lists every key)")]
    Suite { at: String, message: String },

    /// The measurer (generator + DUT) could not run a trial.
    #[error("trial at {load_fps:.1} frames/s failed: {reason}")]
    Trial { load_fps: f64, reason: String },

    /// The device under test (or its driver) failed: setup, reconfiguration, a process exited.
    #[error("device under test: {0}")]
    Dut(String),

    /// A search ran out of its trial budget before reaching its stop condition.
    #[error("{procedure} did not converge within {max_trials} trials")]
    NoConvergence {
        procedure: &'static str,
        max_trials: usize,
    },

    /// Reading or writing a results/report file.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// A results document that does not parse or has the wrong schema.
    #[error("{path}: not a results document: {reason}")]
    BadResults { path: PathBuf, reason: String },
}

impl LabError {
    /// Shorthand for [`LabError::InvalidConfig`].
    pub fn invalid(
        field: &'static str,
        value: impl std::fmt::Display,
        expected: &'static str,
    ) -> Self {
        LabError::InvalidConfig {
            field,
            value: value.to_string(),
            expected,
        }
    }
}
