//! [`ControlError`]: why a request or a change was refused.

use crate::apply::ApplyError;
use crate::config::ParseError;
use crate::ports::PortOpenError;
use crate::validate::ValidationErrors;
use vecswitch_switch::ctl::ShowError;
use vecswitch_switch::{SwitchError, WorkerGone};

/// Why a request or a change was refused. Each names the field, the value and what is accepted.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    #[error(transparent)]
    Parse(#[from] ParseError),
    #[error(transparent)]
    Invalid(#[from] ValidationErrors),
    #[error("cannot open port: {0} (nothing was changed)")]
    PortOpen(#[source] Box<PortOpenError>),
    #[error(transparent)]
    Apply(#[from] ApplyError),
    /// The switch refused a call that is not a config change (show, flush, capture).
    #[error(transparent)]
    Switch(#[from] SwitchError),
    #[error(transparent)]
    Worker(#[from] WorkerGone),
    #[error("the switch worker did not answer")]
    NoAnswer,
    /// The worker did not answer by its deadline ([`WorkerDeadline`]); the request stays queued.
    #[error("the switch did not answer within {waited_s:.1} s: {why}; {what} stays queued and {outcome}; `show version` shows it until then")]
    Late {
        waited_s: f64,
        why: &'static str,
        what: String,
        outcome: &'static str,
    },
    /// A request that needs the worker (or the running config) while one the worker has not run
    /// is queued.
    #[error("switch busy: the worker has not yet run {what}, queued {ago_s} s ago (that request timed out); requests that need the worker or change the config are refused until it has (`show version` and `show config` still answer); try again later")]
    Behind { what: String, ago_s: u64 },
    #[error("cannot encode answer: {0}")]
    Encode(#[source] serde_json::Error),
    /// A registered show refused (its arguments, the switch's answer).
    #[error(transparent)]
    Show(#[from] ShowError),
    #[error("what = {what:?}: one of {known}")]
    NoShow { what: String, known: String },
    #[error("show {what}: {given:?}: takes no argument")]
    ShowArgs { what: String, given: Vec<String> },
    #[error("reload: no path given and the switch was not started from a file")]
    NoReloadPath,
    #[error("path = {value:?}: {reason}; accepted: no path (the running file) or a regular file in {dir}, the directory of the file the switch was started with")]
    ReloadPath {
        value: String,
        dir: String,
        reason: String,
    },
    #[error("port = {name:?}: the name of an interface (a port, a bond, a sub-interface); interfaces are: {known}")]
    NoPort { name: String, known: String },
    #[error("file = \"\": a path for the pcap file")]
    EmptyCaptureFile,
    /// `ctl capture FILE` outside the capture directory, or not creatable there.
    #[error("file = {value:?}: {reason}; accepted: a new file name (or relative path without `..`) inside the capture directory {dir} ([switch] capture_dir), or an absolute path inside it")]
    CapturePath {
        value: String,
        dir: String,
        reason: String,
    },
    #[error("save: no path given and the switch was not started from a file")]
    NoSavePath,
    /// `save PATH` where the switch may not write.
    #[error("path = {value:?}: {reason}; accepted: no path (the file the switch runs from) or a new or regular file (not a symlink) in {dir}, the directory of the file the switch was started with")]
    SavePath {
        value: String,
        dir: String,
        reason: String,
    },
    #[error("cannot save the running config to {path}: {source}")]
    Save {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("verb = {verb:?}: one of {known}")]
    NoVerb { verb: String, known: String },
    #[error("action = {action:?}: one of {known}")]
    NoAction { action: String, known: String },
    /// A registered verb's words that were refused (by the verb: the running config has no such
    /// thing; the whole-config validation after it is [`ControlError::Invalid`]).
    #[error(transparent)]
    Verb(#[from] vecswitch_switch::ctl::VerbError),
}
