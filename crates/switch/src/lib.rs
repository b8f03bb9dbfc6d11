//! The switch: L2 graph nodes, the MAC table and the worker runtime.
//!
//! - [`Switch`] ([`runtime`]) owns one worker's buffer pool, graph and [`SwitchState`] and offers the
//!   control API (ports, bridges, xconnects, static MACs, counters, trace, `show …`). Its
//!   [`Switch::poll_once`] is one iteration of the poll loop.
//! - [`worker::spawn`] runs a switch on its own thread; [`worker::SwitchHandle::call`] runs control
//!   closures on it between iterations (no lock per packet).
//! - [`nodes`]: `ethernet-input`, `l2-xconnect`, `l2-learn`, `l2-fwd`, `l2-flood`,
//!   `interface-output`, one per file, each a `graph::Node<SwitchState>`.
//! - [`l2`]: the [`l2::mac_table::MacTable`] (preallocated open addressing, incremental aging) and
//!   [`l2::BridgeSettings`].
//! - [`state`]: [`SwitchState`] — ports with admin state and service, bridges, MAC table, counters.
//! - [`capture`]: pcap capture of what a port receives and is sent ([`Switch::capture`]).
//! - [`error`]: [`SwitchError`], one variant per way a control call fails.
//! - [`testing`]: setups for benchmarks, the instruction-count example and the fuzz target.
#![forbid(unsafe_code)]

pub mod capture;
pub mod error;
pub mod l2;
pub mod nodes;
pub mod runtime;
pub mod state;
pub mod testing;
pub mod worker;

pub use capture::CaptureInfo;
pub use error::SwitchError;
pub use l2::BridgeSettings;
pub use runtime::{
    BridgeInfo, LoopStats, MacEntry, PortInfo, RuntimeInfo, ServiceInfo, Switch, SwitchConfig,
};
pub use state::{Service, SwitchState};
pub use worker::{spawn, SwitchHandle, WorkerGone};
