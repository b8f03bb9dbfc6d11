//! [`SwitchState`]: everything the nodes read and write — ports, the software interfaces over them
//! (admin state, service, counters), bridge domains, the MAC table, the switch clock and the
//! receive/transmit bookkeeping of the poll loop. Owned by the worker thread; nodes reach it through
//! `graph::Cx::state`, the control side through [`crate::Switch`].

use std::collections::VecDeque;

use vecswitch_ports::Port;
use vecswitch_wire::EthernetAddress;

use crate::capture::PortCapture;
use crate::l2::mac_table::MacTable;

pub use crate::interface::{Interface, Service, SwIfIdx};
pub use crate::l2::Bridge;

/// Port index (a port's main interface has the same index).
pub type PortIdx = u16;
/// Bridge domain index as stored in buffer headers (`bd`).
pub type BdIdx = u16;

/// One port of the switch: the backend and its capture. What the port is used for lives on its
/// interface(s) (`SwitchState::interfaces`).
pub struct PortSlot {
    pub name: String,
    pub port: Box<dyn Port>,
    /// Packet capture in progress on this port, if any.
    pub capture: Option<PortCapture>,
}

impl PortSlot {
    /// A port with no capture.
    pub fn new(name: &str, port: Box<dyn Port>) -> PortSlot {
        PortSlot {
            name: name.to_string(),
            port,
            capture: None,
        }
    }
}

impl std::fmt::Debug for PortSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PortSlot")
            .field("name", &self.name)
            .field("capture", &self.capture.as_ref().map(|c| c.info()))
            .finish()
    }
}

/// `count` packets received from `port`, waiting in `interface-rx`'s vector (in enqueue order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RxRun {
    pub port: PortIdx,
    pub count: u32,
}

/// The state every node of the switch works on.
#[derive(Debug)]
pub struct SwitchState {
    /// Ports by index; `None` is a deleted port whose index may be reused.
    pub ports: Vec<Option<PortSlot>>,
    /// Software interfaces by index; a port's main interface has the port's index.
    pub interfaces: Vec<Option<Interface>>,
    /// Bridge domains by index; `None` is a deleted bridge whose index may be reused.
    pub bridges: Vec<Option<Bridge>>,
    pub macs: MacTable,
    /// Bonds and their members (`crate::bond`).
    pub bonds: crate::bond::BondTable,
    /// Addresses, routes, FIB, adjacencies, neighbours (the `ip` feature).
    pub ip: crate::ip::IpState,
    /// The switch clock in seconds (MAC last-seen times), set by the worker before each dispatch.
    pub now_s: u32,
    /// Learned entries removed by aging (`l2-age aged-out` in `show errors`).
    pub aged_out: u64,
    /// Which port the packets queued for `interface-rx` came from, in order.
    pub rx_runs: VecDeque<RxRun>,
    /// Receive time stamped by `interface-rx` (the switch clock of this poll), nanoseconds.
    pub rx_ns: u64,
    /// Packets `interface-output` has sent, freed by the worker after the dispatch (so that the
    /// trace can still read them).
    pub tx_done: Vec<u32>,
    /// The interface layer's sub-interface tables (`interface::subif`): per parent its
    /// classification table, per sub-interface its ingress rewrite; filled by `vlan`.
    pub subifs: crate::interface::subif::SubIfTables,
    /// VLAN sub-interfaces' settings.
    pub vlan: crate::vlan::VlanState,
    /// NAT44 interface roles and sessions (`crate::nat44`).
    pub nat44: crate::nat44::Nat44State,
    /// Firewall ACLs and conntrack (`crate::firewall`).
    pub firewall: crate::firewall::FirewallState,
}

impl SwitchState {
    /// An empty state whose MAC table holds up to `mac_table_entries` entries.
    pub fn new(mac_table_entries: usize) -> SwitchState {
        SwitchState {
            ports: Vec::new(),
            interfaces: Vec::new(),
            bridges: Vec::new(),
            macs: MacTable::new(mac_table_entries),
            bonds: Default::default(),
            ip: crate::ip::IpState::default(),
            now_s: 0,
            aged_out: 0,
            rx_runs: VecDeque::with_capacity(64),
            rx_ns: 0,
            tx_done: Vec::with_capacity(1024),
            subifs: Default::default(),
            vlan: Default::default(),
            nat44: Default::default(),
            firewall: Default::default(),
        }
    }

    /// Adds port `slot` and its main interface at index `idx` (the caller checked it is free).
    pub fn insert_port(&mut self, idx: PortIdx, slot: PortSlot) {
        let i = idx as usize;
        let mut iface = Interface::main(&slot.name, idx);
        if let Some(mac) = slot.port.configured_mac() {
            iface.mac = EthernetAddress(mac);
        }
        if self.ports.len() <= i {
            self.ports.resize_with(i + 1, || None);
        }
        if self.interfaces.len() <= i {
            self.interfaces.resize_with(i + 1, || None);
        }
        self.ports[i] = Some(slot);
        self.interfaces[i] = Some(iface);
    }

    /// The port at `idx`, if it exists.
    #[inline]
    pub fn port(&self, idx: PortIdx) -> Option<&PortSlot> {
        self.ports.get(idx as usize).and_then(Option::as_ref)
    }

    /// The interface at `idx`, if it exists.
    #[inline]
    pub fn interface(&self, idx: SwIfIdx) -> Option<&Interface> {
        self.interfaces.get(idx as usize).and_then(Option::as_ref)
    }

    /// The interface at `idx`, writable.
    #[inline]
    pub fn interface_mut(&mut self, idx: SwIfIdx) -> Option<&mut Interface> {
        self.interfaces
            .get_mut(idx as usize)
            .and_then(Option::as_mut)
    }

    /// Adds `(interface, packets, bytes)` to an interface's transmit counters.
    #[inline]
    pub fn count_tx(&mut self, (idx, packets, bytes): (SwIfIdx, u64, u64)) {
        if let Some(i) = self.interface_mut(idx) {
            i.counters.tx_packets += packets;
            i.counters.tx_bytes += bytes;
        }
    }

    /// The bridge at `idx`, if it exists.
    #[inline]
    pub fn bridge(&self, idx: BdIdx) -> Option<&Bridge> {
        self.bridges.get(idx as usize).and_then(Option::as_ref)
    }

    /// Index of the port called `name`.
    pub fn port_index(&self, name: &str) -> Option<PortIdx> {
        self.ports
            .iter()
            .position(|p| p.as_ref().is_some_and(|p| p.name == name))
            .map(|i| i as PortIdx)
    }

    /// Index of the interface called `name`.
    pub fn interface_index(&self, name: &str) -> Option<SwIfIdx> {
        self.interfaces
            .iter()
            .position(|i| i.as_ref().is_some_and(|i| i.name == name))
            .map(|i| i as SwIfIdx)
    }

    /// Index of the bridge called `name`.
    pub fn bridge_index(&self, name: &str) -> Option<BdIdx> {
        self.bridges
            .iter()
            .position(|b| b.as_ref().is_some_and(|b| b.name == name))
            .map(|i| i as BdIdx)
    }

    /// Names of all ports, in index order.
    pub fn port_names(&self) -> Vec<String> {
        self.ports
            .iter()
            .flatten()
            .map(|p| p.name.clone())
            .collect()
    }

    /// Names of all interfaces, in index order.
    pub fn interface_names(&self) -> Vec<String> {
        self.interfaces
            .iter()
            .flatten()
            .map(|i| i.name.clone())
            .collect()
    }

    /// Names of all bridges, in index order.
    pub fn bridge_names(&self) -> Vec<String> {
        self.bridges
            .iter()
            .flatten()
            .map(|b| b.name.clone())
            .collect()
    }

    /// The MAC age of every bridge by index (0 for deleted bridges), for `MacTable::age_step`.
    pub fn mac_ages(&self, out: &mut Vec<u32>) {
        out.clear();
        out.extend(
            self.bridges
                .iter()
                .map(|b| b.as_ref().map_or(0, |b| b.settings.mac_age_s)),
        );
    }
}
