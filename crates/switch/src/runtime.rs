//! [`Switch`]: one worker's whole dataplane — the buffer [`Pool`], the [`Graph`] of L2 nodes and the
//! [`SwitchState`] they work on — with [`Switch::poll_once`] (one iteration of the poll loop) and the
//! control API used by the control crate (ports, bridges, xconnects, static MACs, counters, trace and
//! the `show` commands, whose results derive `Serialize`).
//!
//! The switch is driven either directly (tests, benchmarks: call `poll_once`) or on its own thread by
//! [`crate::worker::spawn`], which runs control calls between iterations.
//!
//! Every mutating call checks everything first and changes nothing when it returns an error.

use std::path::Path;
use std::time::Duration;

use serde::Serialize;
use vecswitch_buffer::{Pool, PoolStats, FRAME_SIZE};
use vecswitch_graph::{ErrorCount, Graph, NodeRuntime, TraceStep};
use vecswitch_ports::{LinkState, Port, PortStats};

use crate::capture::{CaptureInfo, PortCapture};
use crate::error::{list, SwitchError};
use crate::l2::{format_mac, is_group, BridgeSettings};
use crate::nodes::{self, NodeIds};
use crate::state::{BdIdx, Bridge, PortIdx, PortSlot, Service, SwitchState};

/// How a switch is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SwitchConfig {
    /// Packet buffers in the pool.
    pub buffers: u32,
    /// Most MAC table entries over all bridges (the table is preallocated for this many).
    pub mac_table_entries: usize,
    /// Most packets taken from one port per poll (≤ 256, one frame).
    pub rx_burst: usize,
}

impl Default for SwitchConfig {
    fn default() -> Self {
        SwitchConfig {
            buffers: 16_384,
            mac_table_entries: 1 << 20,
            rx_burst: FRAME_SIZE,
        }
    }
}

/// Ports' `poll_control` is called once every this many poll iterations, and on every idle one:
/// that is the worker's idle flush (an AF_PACKET port hands the kernel any TX frame still waiting
/// in its ring, so no frame waits there because traffic stopped).
pub const CONTROL_EVERY_POLLS: u64 = 1024;
const _: () = assert!(CONTROL_EVERY_POLLS.is_power_of_two());
/// MAC table slots examined per aging step.
pub const AGE_SLOTS_PER_STEP: usize = 512;
/// Least time between two aging steps. At 1,000 steps/s × 512 slots, a table for 1M entries
/// (2M slots) is swept in about 4 s — far below any sensible MAC age — for a cost of about 0.5 ms of
/// CPU per second.
pub const AGE_STEP_INTERVAL_NS: u64 = 1_000_000;

const MAX_PORTS: usize = u16::MAX as usize;
const MAX_BRIDGES: usize = u16::MAX as usize - 1;

/// Counters of the poll loop, in `show runtime`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct LoopStats {
    /// Poll iterations.
    pub polls: u64,
    /// Iterations that received nothing.
    pub idle_polls: u64,
    /// Times the worker thread slept because it was idle (see `worker`).
    pub idle_sleeps: u64,
    /// Packets received from all ports.
    pub rx_packets: u64,
    /// Received packets per second over the last full second.
    pub packets_per_s: f64,
    /// Longest time between the starts of two poll iterations, ns: how long the worker was away
    /// from its ports at worst — descheduled by the host, a long control call, or an idle sleep
    /// (at most 100 µs, see `worker`). A port's RX ring must hold this much traffic.
    pub max_poll_gap_ns: u64,
}

/// `show runtime`: per-node counters and the poll loop's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RuntimeInfo {
    pub nodes: Vec<NodeRuntime>,
    #[serde(rename = "loop")]
    pub loop_stats: LoopStats,
    /// Clock rate used for clocks/packet, Hz.
    pub clock_hz: f64,
}

/// A port's service as `show ports` prints it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum ServiceInfo {
    None,
    Xconnect { to: String },
    Bridge { bridge: String },
}

/// One line of `show ports`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PortInfo {
    pub index: u16,
    pub name: String,
    pub admin_up: bool,
    pub link: LinkState,
    pub service: ServiceInfo,
    pub stats: PortStats,
    /// The backend's own description.
    pub describe: String,
    /// Packet capture on this port, if one was started.
    pub capture: Option<CaptureInfo>,
}

/// One bridge of `show bridges`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BridgeInfo {
    pub index: u16,
    pub name: String,
    pub settings: BridgeSettings,
    pub members: Vec<String>,
    /// Learned entries in the MAC table.
    pub learned: u32,
    /// Static entries in the MAC table.
    pub statics: u32,
}

/// One line of `show mac`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MacEntry {
    pub bridge: String,
    pub mac: String,
    pub port: String,
    #[serde(rename = "static")]
    pub is_static: bool,
    /// Seconds since the station was last seen (since it was added, for a static entry).
    pub age_s: u32,
}

/// One worker's dataplane. See the module doc.
#[derive(Debug)]
pub struct Switch {
    pool: Pool,
    graph: Graph<SwitchState>,
    state: SwitchState,
    ids: NodeIds,
    config: SwitchConfig,
    rx_scratch: Vec<u32>,
    age_scratch: Vec<u32>,
    clock_offset_ns: u64,
    last_age_ns: u64,
    stats: LoopStats,
    rate_mark: (u64, u64),
    /// Monotonic time of the last poll iteration's start (0: none since the counters were cleared).
    last_poll_ns: u64,
}

impl Default for Switch {
    fn default() -> Self {
        Switch::new(SwitchConfig::default())
    }
}

impl Switch {
    /// A switch with no ports and no bridges.
    pub fn new(config: SwitchConfig) -> Switch {
        let mut graph = Graph::new();
        // The node set is fixed and its edges are checked by the node tests: a failure here is a bug
        // in this crate, not something a user can cause.
        let ids = nodes::register(&mut graph).expect("the L2 node set resolves");
        Switch {
            pool: Pool::new(config.buffers),
            graph,
            state: SwitchState::new(config.mac_table_entries),
            ids,
            config: SwitchConfig {
                rx_burst: config.rx_burst.clamp(1, FRAME_SIZE),
                ..config
            },
            rx_scratch: Vec::with_capacity(FRAME_SIZE),
            age_scratch: Vec::new(),
            clock_offset_ns: 0,
            last_age_ns: 0,
            stats: LoopStats::default(),
            rate_mark: (0, 0),
            last_poll_ns: 0,
        }
    }

    /// The configuration the switch was built with.
    pub fn config(&self) -> SwitchConfig {
        self.config
    }

    // ----- fast path ---------------------------------------------------------------------------

    /// The switch clock, nanoseconds: the graph's monotonic clock plus what [`Switch::advance_clock`]
    /// added.
    pub fn now_ns(&self) -> u64 {
        self.graph.now_ns() + self.clock_offset_ns
    }

    /// Moves the switch clock forward (for tests and simulations of MAC aging); aging runs on the
    /// next poll.
    pub fn advance_clock(&mut self, by: Duration) {
        self.clock_offset_ns += by.as_nanos() as u64;
        self.last_age_ns = 0;
    }

    /// One iteration of the poll loop: receive up to `rx_burst` packets from every port, run them
    /// through the graph, free what was sent, run an aging step when one is due and the ports'
    /// housekeeping at a low rate. Returns the number of packets received.
    pub fn poll_once(&mut self) -> usize {
        let mono = self.graph.now_ns();
        if self.last_poll_ns != 0 {
            let gap = mono.saturating_sub(self.last_poll_ns);
            self.stats.max_poll_gap_ns = self.stats.max_poll_gap_ns.max(gap);
        }
        self.last_poll_ns = mono;
        let now = mono + self.clock_offset_ns;
        self.state.now_s = (now / 1_000_000_000) as u32;
        let mut received = 0;
        for i in 0..self.state.ports.len() {
            let Some(slot) = self.state.ports[i].as_mut() else {
                continue;
            };
            self.rx_scratch.clear();
            let n = slot
                .port
                .rx_burst(&mut self.pool, &mut self.rx_scratch, self.config.rx_burst);
            if n == 0 {
                continue;
            }
            if let Some(c) = slot.capture.as_mut() {
                c.record(&self.pool, &self.rx_scratch);
            }
            for &h in &self.rx_scratch {
                let hdr = self.pool.header_mut(h);
                hdr.rx_port = i as PortIdx;
                hdr.rx_ns = now;
            }
            self.graph
                .enqueue(&mut self.pool, self.ids.ethernet_input, &self.rx_scratch);
            received += n;
        }
        if received > 0 {
            self.dispatch();
        }
        self.stats.polls += 1;
        self.stats.rx_packets += received as u64;
        if received == 0 {
            self.stats.idle_polls += 1;
        }
        if received == 0 || self.stats.polls & (CONTROL_EVERY_POLLS - 1) == 0 {
            for p in self.state.ports.iter_mut().flatten() {
                p.port.poll_control();
            }
        }
        if now.saturating_sub(self.last_age_ns) >= AGE_STEP_INTERVAL_NS {
            self.last_age_ns = now;
            self.age_step(AGE_SLOTS_PER_STEP);
        }
        let (t0, p0) = self.rate_mark;
        if now.saturating_sub(t0) >= 1_000_000_000 {
            if t0 != 0 {
                let dt = (now - t0) as f64 / 1e9;
                self.stats.packets_per_s = (self.stats.rx_packets - p0) as f64 / dt;
            }
            self.rate_mark = (now, self.stats.rx_packets);
        }
        received
    }

    /// Runs the graph on what is queued and frees what was sent.
    fn dispatch(&mut self) {
        self.graph.dispatch(&mut self.pool, &mut self.state);
        self.pool.free_bulk(&self.state.tx_done);
        self.state.tx_done.clear();
        // interface-output drains tx_extra; anything left is a bug, freed rather than leaked.
        debug_assert!(self.state.tx_extra.is_empty());
        self.pool.free_bulk(&self.state.tx_extra);
        self.state.tx_extra.clear();
    }

    /// Runs one aging step over `slots` MAC table slots now; returns the entries removed.
    pub fn age_step(&mut self, slots: usize) -> usize {
        self.state.now_s = (self.now_ns() / 1_000_000_000) as u32;
        self.state.mac_ages(&mut self.age_scratch);
        if self.age_scratch.iter().all(|&a| a == 0) || self.state.macs.is_empty() {
            return 0; // nothing can age: skip the scan
        }
        let n = self
            .state
            .macs
            .age_step(self.state.now_s, slots, &self.age_scratch);
        self.state.events.aged_out += n as u64;
        n
    }

    /// Runs a whole aging sweep now (every slot once); returns the entries removed.
    pub fn age_all(&mut self) -> usize {
        let slots = self.state.macs.slot_count();
        self.age_step(slots)
    }

    /// Injects packets as if port `rx_port` had received them (for tests, benchmarks and fuzzing:
    /// bypasses the port's `rx_burst`) and runs the graph. The switch owns the handles afterwards.
    pub fn inject(&mut self, rx_port: PortIdx, pkts: &[u32]) {
        let now = self.now_ns();
        self.state.now_s = (now / 1_000_000_000) as u32;
        for &h in pkts {
            let hdr = self.pool.header_mut(h);
            hdr.rx_port = rx_port;
            hdr.rx_ns = now;
        }
        self.graph
            .enqueue(&mut self.pool, self.ids.ethernet_input, pkts);
        self.dispatch();
    }

    /// The buffer pool (tests, benchmarks and ports built outside the switch).
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// The buffer pool, writable (to build packets for [`Switch::inject`]).
    pub fn pool_mut(&mut self) -> &mut Pool {
        &mut self.pool
    }

    /// The nodes' state (read-only: change it through the control API).
    pub fn state(&self) -> &SwitchState {
        &self.state
    }

    /// The graph (read-only).
    pub fn graph(&self) -> &Graph<SwitchState> {
        &self.graph
    }

    /// Ids of the nodes in the graph.
    pub fn node_ids(&self) -> NodeIds {
        self.ids
    }

    // ----- lookups -------------------------------------------------------------------------------

    fn port_idx(&self, name: &str) -> Result<PortIdx, SwitchError> {
        self.state
            .port_index(name)
            .ok_or_else(|| SwitchError::NoPort {
                name: name.to_string(),
                known: list(&self.state.port_names()),
            })
    }

    fn bridge_idx(&self, name: &str) -> Result<BdIdx, SwitchError> {
        self.state
            .bridge_index(name)
            .ok_or_else(|| SwitchError::NoBridge {
                name: name.to_string(),
                known: list(&self.state.bridge_names()),
            })
    }

    fn slot(&self, idx: PortIdx) -> &PortSlot {
        // Only called with indices just resolved from a name.
        self.state.ports[idx as usize]
            .as_ref()
            .expect("resolved port index")
    }

    fn slot_mut(&mut self, idx: PortIdx) -> &mut PortSlot {
        self.state.ports[idx as usize]
            .as_mut()
            .expect("resolved port index")
    }

    fn port_name(&self, idx: PortIdx) -> String {
        self.state
            .port(idx)
            .map_or_else(|| format!("#{idx}"), |p| p.name.clone())
    }

    fn bridge_name(&self, idx: BdIdx) -> String {
        self.state
            .bridge(idx)
            .map_or_else(|| format!("#{idx}"), |b| b.name.clone())
    }

    fn describe_service(&self, s: Service) -> String {
        match s {
            Service::None => "none".to_string(),
            Service::Xconnect { to } => format!("xconnect to `{}`", self.port_name(to)),
            Service::Bridge { bd } => format!("member of bridge `{}`", self.bridge_name(bd)),
        }
    }

    fn service_info(&self, s: Service) -> ServiceInfo {
        match s {
            Service::None => ServiceInfo::None,
            Service::Xconnect { to } => ServiceInfo::Xconnect {
                to: self.port_name(to),
            },
            Service::Bridge { bd } => ServiceInfo::Bridge {
                bridge: self.bridge_name(bd),
            },
        }
    }

    fn check_name(what: &'static str, name: &str) -> Result<(), SwitchError> {
        let ok = !name.is_empty()
            && name.chars().count() <= 64
            && !name.chars().any(|c| c.is_whitespace() || c.is_control());
        if ok {
            Ok(())
        } else {
            Err(SwitchError::InvalidName {
                what,
                name: name.to_string(),
            })
        }
    }

    // ----- ports ---------------------------------------------------------------------------------

    /// Adds a port (administratively up, no service). Returns its index.
    pub fn add_port(&mut self, name: &str, port: Box<dyn Port>) -> Result<PortIdx, SwitchError> {
        Self::check_name("port", name)?;
        if self.state.port_index(name).is_some() {
            return Err(SwitchError::PortExists {
                name: name.to_string(),
            });
        }
        let slot = PortSlot {
            name: name.to_string(),
            port,
            admin_up: true,
            service: Service::None,
            capture: None,
        };
        if let Some(i) = self.state.ports.iter().position(Option::is_none) {
            self.state.ports[i] = Some(slot);
            return Ok(i as PortIdx);
        }
        if self.state.ports.len() >= MAX_PORTS {
            return Err(SwitchError::TooMany {
                what: "ports",
                max: MAX_PORTS,
            });
        }
        self.state.ports.push(Some(slot));
        Ok((self.state.ports.len() - 1) as PortIdx)
    }

    /// Deletes a port and gives it back. Its own service goes with it (it leaves its bridge, whose
    /// MAC entries on it are flushed; its xconnect is removed). Fails if another port cross-connects
    /// to it.
    pub fn delete_port(&mut self, name: &str) -> Result<Box<dyn Port>, SwitchError> {
        let idx = self.port_idx(name)?;
        let users: Vec<String> = self
            .state
            .ports
            .iter()
            .enumerate()
            .filter_map(|(i, p)| {
                p.as_ref()
                    .filter(|p| i != idx as usize && p.service == Service::Xconnect { to: idx })
            })
            .map(|p| format!("the xconnect of `{}`", p.name))
            .collect();
        if !users.is_empty() {
            return Err(SwitchError::PortInUse {
                port: name.to_string(),
                users: users.join(", "),
            });
        }
        if let Service::Bridge { bd } = self.slot(idx).service {
            self.detach_member(bd, idx);
        }
        let slot = self.state.ports[idx as usize]
            .take()
            .expect("resolved port index");
        Ok(slot.port)
    }

    /// Sets a port administratively up or down.
    pub fn set_port_admin(&mut self, name: &str, up: bool) -> Result<(), SwitchError> {
        let idx = self.port_idx(name)?;
        self.slot_mut(idx).admin_up = up;
        Ok(())
    }

    /// `show ports`.
    pub fn show_ports(&self) -> Vec<PortInfo> {
        self.state
            .ports
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.as_ref().map(|p| (i, p)))
            .map(|(i, p)| PortInfo {
                index: i as u16,
                name: p.name.clone(),
                admin_up: p.admin_up,
                link: p.port.link(),
                service: self.service_info(p.service),
                stats: p.port.stats(),
                describe: p.port.describe(),
                capture: p.capture.as_ref().map(|c| c.info()),
            })
            .collect()
    }

    // ----- bridges -------------------------------------------------------------------------------

    /// Adds a bridge domain with no members. Returns its index.
    pub fn add_bridge(
        &mut self,
        name: &str,
        settings: BridgeSettings,
    ) -> Result<BdIdx, SwitchError> {
        Self::check_name("bridge", name)?;
        if self.state.bridge_index(name).is_some() {
            return Err(SwitchError::BridgeExists {
                name: name.to_string(),
            });
        }
        let b = Bridge {
            name: name.to_string(),
            settings,
            members: Vec::new(),
        };
        if let Some(i) = self.state.bridges.iter().position(Option::is_none) {
            self.state.bridges[i] = Some(b);
            return Ok(i as BdIdx);
        }
        if self.state.bridges.len() >= MAX_BRIDGES {
            return Err(SwitchError::TooMany {
                what: "bridges",
                max: MAX_BRIDGES,
            });
        }
        self.state.bridges.push(Some(b));
        Ok((self.state.bridges.len() - 1) as BdIdx)
    }

    /// Deletes a bridge domain: its members are left without a service and its MAC entries (static
    /// ones too) are flushed.
    pub fn delete_bridge(&mut self, name: &str) -> Result<(), SwitchError> {
        let bd = self.bridge_idx(name)?;
        let members = self.state.bridges[bd as usize]
            .as_ref()
            .map(|b| b.members.clone())
            .unwrap_or_default();
        for m in members {
            self.slot_mut(m).service = Service::None;
        }
        self.state.macs.flush(bd, None, true);
        self.state.bridges[bd as usize] = None;
        Ok(())
    }

    /// Replaces a bridge's settings. Entries already learned stay (also above a lowered limit).
    pub fn set_bridge_settings(
        &mut self,
        name: &str,
        settings: BridgeSettings,
    ) -> Result<(), SwitchError> {
        let bd = self.bridge_idx(name)?;
        if let Some(b) = self.state.bridges[bd as usize].as_mut() {
            b.settings = settings;
        }
        Ok(())
    }

    /// Makes `port` (which must have no service, or already be a member of this bridge) a member of
    /// `bridge`.
    pub fn add_bridge_member(&mut self, bridge: &str, port: &str) -> Result<(), SwitchError> {
        let bd = self.bridge_idx(bridge)?;
        let idx = self.port_idx(port)?;
        match self.slot(idx).service {
            Service::None => {}
            Service::Bridge { bd: b } if b == bd => return Ok(()),
            s => {
                return Err(SwitchError::PortHasService {
                    port: port.to_string(),
                    service: self.describe_service(s),
                })
            }
        }
        self.slot_mut(idx).service = Service::Bridge { bd };
        if let Some(b) = self.state.bridges[bd as usize].as_mut() {
            b.members.push(idx);
        }
        Ok(())
    }

    /// Removes `port` from `bridge`, flushing the bridge's MAC entries on it (static ones too).
    pub fn remove_bridge_member(&mut self, bridge: &str, port: &str) -> Result<(), SwitchError> {
        let bd = self.bridge_idx(bridge)?;
        let idx = self.port_idx(port)?;
        if self.slot(idx).service != (Service::Bridge { bd }) {
            return Err(self.not_member(bd, port, bridge));
        }
        self.detach_member(bd, idx);
        Ok(())
    }

    fn not_member(&self, bd: BdIdx, port: &str, bridge: &str) -> SwitchError {
        let members: Vec<String> = self
            .state
            .bridge(bd)
            .map(|b| b.members.iter().map(|&m| self.port_name(m)).collect())
            .unwrap_or_default();
        SwitchError::NotMember {
            port: port.to_string(),
            bridge: bridge.to_string(),
            members: list(&members),
        }
    }

    fn detach_member(&mut self, bd: BdIdx, idx: PortIdx) {
        if let Some(b) = self.state.bridges[bd as usize].as_mut() {
            b.members.retain(|&m| m != idx);
        }
        self.state.macs.flush(bd, Some(idx), true);
        self.slot_mut(idx).service = Service::None;
    }

    /// `show bridges`.
    pub fn show_bridges(&self) -> Vec<BridgeInfo> {
        self.state
            .bridges
            .iter()
            .enumerate()
            .filter_map(|(i, b)| b.as_ref().map(|b| (i as BdIdx, b)))
            .map(|(i, b)| BridgeInfo {
                index: i,
                name: b.name.clone(),
                settings: b.settings,
                members: b.members.iter().map(|&m| self.port_name(m)).collect(),
                learned: self.state.macs.learned_count(i),
                statics: self.state.macs.static_count(i),
            })
            .collect()
    }

    // ----- xconnect ------------------------------------------------------------------------------

    /// Cross-connects `port_a` to `port_b`: everything received on `a` is sent out of `b` (one
    /// direction; an E-Line is both directions). `a` must have no service or an xconnect (which is
    /// replaced).
    pub fn add_xconnect(&mut self, port_a: &str, port_b: &str) -> Result<(), SwitchError> {
        let a = self.port_idx(port_a)?;
        let b = self.port_idx(port_b)?;
        if a == b {
            return Err(SwitchError::XconnectToSelf {
                port: port_a.to_string(),
            });
        }
        match self.slot(a).service {
            Service::None | Service::Xconnect { .. } => {}
            s => {
                return Err(SwitchError::PortHasService {
                    port: port_a.to_string(),
                    service: self.describe_service(s),
                })
            }
        }
        self.slot_mut(a).service = Service::Xconnect { to: b };
        Ok(())
    }

    /// Removes the xconnect of `port`.
    pub fn delete_xconnect(&mut self, port: &str) -> Result<(), SwitchError> {
        let a = self.port_idx(port)?;
        match self.slot(a).service {
            Service::Xconnect { .. } => {
                self.slot_mut(a).service = Service::None;
                Ok(())
            }
            s => Err(SwitchError::NotXconnect {
                port: port.to_string(),
                service: self.describe_service(s),
            }),
        }
    }

    // ----- MAC table -----------------------------------------------------------------------------

    /// Adds (or replaces) a static MAC entry: `mac` is behind `port`, a member of `bridge`. Static
    /// entries never age and are never moved by learning.
    pub fn add_static_mac(
        &mut self,
        bridge: &str,
        mac: [u8; 6],
        port: &str,
    ) -> Result<(), SwitchError> {
        let bd = self.bridge_idx(bridge)?;
        let idx = self.port_idx(port)?;
        if self.slot(idx).service != (Service::Bridge { bd }) {
            return Err(self.not_member(bd, port, bridge));
        }
        if is_group(&mac) {
            return Err(SwitchError::GroupMac {
                mac: format_mac(&mac),
            });
        }
        let now_s = (self.now_ns() / 1_000_000_000) as u32;
        self.state
            .macs
            .add_static(bd, &mac, idx, now_s)
            .map_err(|e| SwitchError::MacTableFull {
                max_entries: e.max_entries,
            })
    }

    /// Deletes a static MAC entry.
    pub fn delete_static_mac(&mut self, bridge: &str, mac: [u8; 6]) -> Result<(), SwitchError> {
        let bd = self.bridge_idx(bridge)?;
        match self.state.macs.get(bd, &mac) {
            Some(e) if e.is_static => {
                self.state.macs.remove(bd, &mac);
                Ok(())
            }
            _ => Err(SwitchError::NoStaticMac {
                bridge: bridge.to_string(),
                mac: format_mac(&mac),
            }),
        }
    }

    /// Flushes the learned entries of `bridge` (of one port, if given). Returns how many went.
    pub fn flush_mac(&mut self, bridge: &str, port: Option<&str>) -> Result<usize, SwitchError> {
        let bd = self.bridge_idx(bridge)?;
        let idx = port.map(|p| self.port_idx(p)).transpose()?;
        Ok(self.state.macs.flush(bd, idx, false))
    }

    /// `show mac`: the entries of one bridge, or of all.
    pub fn show_mac(&self, bridge: Option<&str>) -> Result<Vec<MacEntry>, SwitchError> {
        let bd = bridge.map(|b| self.bridge_idx(b)).transpose()?;
        let now_s = (self.now_ns() / 1_000_000_000) as u32;
        let mut out: Vec<MacEntry> = self
            .state
            .macs
            .entries(bd)
            .into_iter()
            .map(|e| MacEntry {
                bridge: self.bridge_name(e.bd),
                mac: format_mac(&e.mac),
                port: self.port_name(e.port),
                is_static: e.is_static,
                age_s: now_s.saturating_sub(e.last_seen_s),
            })
            .collect();
        out.sort_by(|a, b| (&a.bridge, &a.mac).cmp(&(&b.bridge, &b.mac)));
        Ok(out)
    }

    // ----- capture -------------------------------------------------------------------------------

    /// Starts writing what `port` receives and is sent to a pcap file at `path` (created or
    /// truncated), at most `count` frames (`None`: until [`Switch::stop_capture`]). A capture already
    /// running on the port is finished and replaced.
    pub fn capture(
        &mut self,
        port: &str,
        path: impl AsRef<Path>,
        count: Option<u64>,
    ) -> Result<(), SwitchError> {
        let idx = self.port_idx(port)?;
        if count == Some(0) {
            return Err(SwitchError::InvalidValue {
                field: "count",
                value: "0".into(),
                accepted: "at least 1 frame, or no count to capture until stopped",
            });
        }
        let c = PortCapture::create(path.as_ref(), count).map_err(|e| SwitchError::Capture {
            port: port.to_string(),
            reason: e.to_string(),
        })?;
        if let Some(mut old) = self.slot_mut(idx).capture.replace(c) {
            // The old file is complete up to its last write; a flush error there cannot be undone.
            let _ = old.finish();
        }
        Ok(())
    }

    /// Stops the capture on `port`, flushes the file and says what was captured.
    pub fn stop_capture(&mut self, port: &str) -> Result<CaptureInfo, SwitchError> {
        let idx = self.port_idx(port)?;
        let Some(mut c) = self.slot_mut(idx).capture.take() else {
            return Err(SwitchError::NoCapture {
                port: port.to_string(),
            });
        };
        let flushed = c.finish();
        let info = c.info();
        flushed.map_err(|e| SwitchError::Capture {
            port: port.to_string(),
            reason: e.to_string(),
        })?;
        Ok(info)
    }

    // ----- counters, trace -----------------------------------------------------------------------

    /// Zeroes node, drop, event, loop and port counters.
    pub fn clear_counters(&mut self) {
        self.graph.clear_counters();
        self.state.events = Default::default();
        self.stats = LoopStats::default();
        self.rate_mark = (0, 0);
        self.last_poll_ns = 0;
        for p in self.state.ports.iter_mut().flatten() {
            p.port.clear_stats();
        }
    }

    /// Traces the next `n` received packets.
    pub fn trace_add(&mut self, n: u32) {
        self.graph.trace_add(n);
    }

    /// Forgets the trace and disarms it.
    pub fn trace_clear(&mut self) {
        self.graph.trace_clear();
    }

    /// `show trace`.
    pub fn show_trace(&self) -> Vec<TraceStep> {
        self.graph.trace().to_vec()
    }

    /// `show runtime`.
    pub fn show_runtime(&self) -> RuntimeInfo {
        RuntimeInfo {
            nodes: self.graph.runtime(),
            loop_stats: self.stats,
            clock_hz: self.graph.clock_hz(),
        }
    }

    /// `show errors`: the graph's non-zero drop counters (in node order), then the nodes' non-zero
    /// event counters (`l2-learn` stations learned/moved/not learned, `l2-flood` replicas without
    /// buffers, `interface-output` replicas not sent, `l2-age` entries aged out), then each port's
    /// non-zero backend counters ([`Port::error_counters`]: for AF_PACKET the kernel's ring-full
    /// drops and queue freezes, TX ring full, …) under the node name `port NAME`, so that frames
    /// lost before the graph saw them or after it sent them show here too.
    pub fn show_errors(&self) -> Vec<ErrorCount> {
        let mut out = self.graph.errors();
        for (node, reason, count) in self.state.events.list() {
            if count == 0 {
                continue;
            }
            match out
                .iter_mut()
                .find(|e| e.node == node && e.reason == reason)
            {
                Some(e) => e.count += count,
                None => out.push(ErrorCount {
                    node: node.to_string(),
                    reason: reason.to_string(),
                    count,
                }),
            }
        }
        for p in self.state.ports.iter().flatten() {
            for (reason, count) in p.port.error_counters() {
                if count > 0 {
                    out.push(ErrorCount {
                        node: format!("port {}", p.name),
                        reason: reason.to_string(),
                        count,
                    });
                }
            }
        }
        out
    }

    /// `show buffers`.
    pub fn show_buffers(&self) -> PoolStats {
        self.pool.stats()
    }

    /// Adds to the worker's idle-sleep counter (called by the worker thread).
    pub(crate) fn note_idle_sleep(&mut self) {
        self.stats.idle_sleeps += 1;
    }

    /// One port's counters.
    pub fn port_stats(&self, name: &str) -> Result<PortStats, SwitchError> {
        let idx = self.port_idx(name)?;
        Ok(self.slot(idx).port.stats())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 8: a worker kept from its ports (descheduled, or here: not polled for 20 ms) shows it
    /// in `show runtime` as the longest gap between polls; clearing the counters forgets it.
    #[test]
    fn the_longest_gap_between_polls_is_counted() {
        let mut sw = Switch::default();
        sw.poll_once();
        std::thread::sleep(Duration::from_millis(20));
        sw.poll_once();
        let gap = sw.show_runtime().loop_stats.max_poll_gap_ns;
        assert!(gap >= 20_000_000, "gap {gap} ns");
        sw.clear_counters();
        assert_eq!(sw.show_runtime().loop_stats.max_poll_gap_ns, 0);
        sw.poll_once();
        assert_eq!(sw.show_runtime().loop_stats.max_poll_gap_ns, 0);
    }
}
