//! [`SwitchState`]: everything the nodes read and write — ports with their admin state and service,
//! bridge domains, the MAC table, the switch clock and event counters. Owned by the worker thread;
//! nodes reach it through `graph::Cx::state`, the control side through [`crate::Switch`].

use vecswitch_ports::Port;

use crate::capture::PortCapture;
use crate::l2::mac_table::MacTable;
use crate::l2::BridgeSettings;

/// Port index as stored in buffer headers (`rx_port`, `tx_port`).
pub type PortIdx = u16;
/// Bridge domain index as stored in buffer headers (`bd`).
pub type BdIdx = u16;

/// What a port's received frames are for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Service {
    /// Nothing configured: frames are dropped (`no-service`).
    None,
    /// Cross-connect: every frame goes out of port `to` (one direction of an E-Line).
    Xconnect { to: PortIdx },
    /// Member of bridge domain `bd` (E-LAN).
    Bridge { bd: BdIdx },
}

/// One port of the switch.
pub struct PortSlot {
    pub name: String,
    pub port: Box<dyn Port>,
    /// Administratively up: when down, received frames are dropped (`admin-down`) and nothing is sent.
    pub admin_up: bool,
    pub service: Service,
    /// Packet capture in progress on this port, if any.
    pub capture: Option<PortCapture>,
}

impl std::fmt::Debug for PortSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PortSlot")
            .field("name", &self.name)
            .field("admin_up", &self.admin_up)
            .field("service", &self.service)
            .field("capture", &self.capture.as_ref().map(|c| c.info()))
            .finish()
    }
}

/// One bridge domain.
#[derive(Debug, Clone)]
pub struct Bridge {
    pub name: String,
    pub settings: BridgeSettings,
    /// Member ports, in the order they were added (flooding order).
    pub members: Vec<PortIdx>,
}

/// Counters of events that are not drops of the packet at hand (a station not learned, a flood
/// replica that could not be made or sent). `show errors` lists them beside the graph's drop counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EventCounters {
    /// `l2-learn`: new stations learned.
    pub learned: u64,
    /// `l2-learn`: stations seen on another port than the table said (station moves).
    pub station_moves: u64,
    /// `l2-learn`: stations not learned because the bridge holds its limit.
    pub mac_limit_reached: u64,
    /// `l2-learn`: stations not learned because the whole table is full.
    pub mac_table_full: u64,
    /// `l2-learn`: a static entry's address seen on another port (the entry stays).
    pub static_mac_seen_elsewhere: u64,
    /// `l2-flood`: replicas that could not be made because the buffer pool was empty.
    pub flood_no_buffers: u64,
    /// `interface-output`: flood replicas a port could not take.
    pub tx_failed_replicas: u64,
    /// Learned entries removed by aging.
    pub aged_out: u64,
}

impl EventCounters {
    /// `(node, reason, count)` for each counter, as `show errors` prints them.
    pub fn list(&self) -> [(&'static str, &'static str, u64); 8] {
        [
            ("l2-learn", "learned", self.learned),
            ("l2-learn", "station-moves", self.station_moves),
            ("l2-learn", "mac-limit-reached", self.mac_limit_reached),
            ("l2-learn", "mac-table-full", self.mac_table_full),
            (
                "l2-learn",
                "static-mac-seen-elsewhere",
                self.static_mac_seen_elsewhere,
            ),
            ("l2-flood", "no-buffers", self.flood_no_buffers),
            ("interface-output", "tx-failed", self.tx_failed_replicas),
            ("l2-age", "aged-out", self.aged_out),
        ]
    }
}

/// The state every node of the switch works on.
#[derive(Debug)]
pub struct SwitchState {
    /// Ports by index; `None` is a deleted port whose index may be reused.
    pub ports: Vec<Option<PortSlot>>,
    /// Bridge domains by index; `None` is a deleted bridge whose index may be reused.
    pub bridges: Vec<Option<Bridge>>,
    pub macs: MacTable,
    /// The switch clock in seconds (MAC last-seen times), set by the worker before each dispatch.
    pub now_s: u32,
    pub events: EventCounters,
    /// Packets made by nodes (flood replicas) with `tx_port` set, waiting for `interface-output`,
    /// which drains this list on each call. `l2-flood` sends the original packet to
    /// `interface-output` too, so that node always runs after the replicas are made.
    pub tx_extra: Vec<u32>,
    /// Packets `interface-output` has sent, freed by the worker after the dispatch (so that the
    /// trace can still read them).
    pub tx_done: Vec<u32>,
}

impl SwitchState {
    /// An empty state whose MAC table holds up to `mac_table_entries` entries.
    pub fn new(mac_table_entries: usize) -> SwitchState {
        SwitchState {
            ports: Vec::new(),
            bridges: Vec::new(),
            macs: MacTable::new(mac_table_entries),
            now_s: 0,
            events: EventCounters::default(),
            tx_extra: Vec::with_capacity(1024),
            tx_done: Vec::with_capacity(1024),
        }
    }

    /// The port at `idx`, if it exists.
    #[inline]
    pub fn port(&self, idx: PortIdx) -> Option<&PortSlot> {
        self.ports.get(idx as usize).and_then(Option::as_ref)
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
