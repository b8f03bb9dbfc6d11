//! The switch: the worker runtime over a graph built from one folder per feature.
//!
//! - [`Switch`] ([`runtime`]) owns one worker's buffer pool, graph and [`SwitchState`] and offers the
//!   control API (ports, interfaces, counters, trace, `show …`; each feature adds its own methods in
//!   its folder). Its [`Switch::poll_once`] is one iteration of the poll loop.
//! - [`worker::spawn`] runs a switch on its own thread; [`worker::SwitchHandle::call`] runs control
//!   closures on it between iterations (no lock per packet).
//! - [`feature`]: the registration point — the [`feature::Feature`] trait and the list
//!   [`feature::FEATURES`] the graph is built from.
//! - Features, one folder each, owning their nodes (one per file), tables and control methods:
//!   - [`interface`]: software interfaces over ports ([`interface::Interface`]: admin state, MAC,
//!     MTU, counters, service), the nodes `interface-rx`, `ethernet-input`, `interface-output` and
//!     the input/output feature arcs;
//!   - [`l2`]: `l2-xconnect`, `l2-learn`, `l2-fwd`, `l2-flood`, the MAC table, bridge domains and
//!     their control methods ([`l2::control`]);
//!   - [`mtu`]: `mtu-check`, an output-arc feature enabled per interface (the worked example of
//!     adding a feature).
//!   - [`bond`]: link aggregation — bonds over ports, `bond-input`, `bond-output`, LACP.
//!   - [`vlan`]: VLAN sub-interfaces (classified in `ethernet-input`, `vlan-output`, tag rewrite, VPP's matching).
//!   - [`nat44`]: NAT44 endpoint-dependent masquerade (`nat44-in2out`, `nat44-out2in`, sessions).
//!   - [`firewall`]: a stateful IPv4 firewall (`firewall-input`: ACLs per interface, conntrack).
//! - [`ctl`]: what a feature registers for the control plane — its `show`s, its config section
//!   and the `ctl` verbs that edit it — and the switch's own shows.
//! - [`state`]: [`SwitchState`] — ports, interfaces, bridges, MAC table, receive/transmit
//!   bookkeeping.
//! - [`capture`]: pcap capture of what a port receives and is sent ([`Switch::capture`]).
//! - [`error`]: [`SwitchError`], one variant per way a control call fails.
//! - [`hash`]: the hasher the features' flow tables share ([`hash::MixHasher`]).
//! - [`testing`]: setups for benchmarks, the instruction-count example and the fuzz target.
#![forbid(unsafe_code)]

pub mod bond;
pub mod capture;
pub mod ctl;
pub mod error;
pub mod feature;
pub mod firewall;
pub mod hash;
pub mod interface;
pub mod ip;
pub mod l2;
pub mod mtu;
pub mod nat44;
pub mod object;
pub mod runtime;
pub mod state;
pub mod testing;
pub mod vlan;
pub mod worker;

pub use capture::CaptureInfo;
pub use error::SwitchError;
pub use interface::{Interface, InterfaceInfo, Service};
pub use l2::control::{BridgeInfo, MacEntry, MacTableInfo};
pub use l2::BridgeSettings;
pub use runtime::{LoopStats, PortInfo, RuntimeInfo, ServiceInfo, Switch, SwitchConfig};
pub use state::SwitchState;
pub use worker::{spawn, SwitchHandle, WorkerGone};
