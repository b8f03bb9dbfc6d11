//! The interface layer: software interfaces over ports, the receive and transmit nodes and the two
//! feature arcs every packet crosses.
//!
//! - [`Interface`]: a software interface with admin state, MAC, MTU, counters and the [`Service`]
//!   its received frames are for. Services (xconnect, bridge membership) attach to interfaces, not
//!   to ports. Today every port has one *main* interface ([`InterfaceKind::Main`]) at the port's own
//!   index, so a buffer header's `rx_port`/`tx_port` is also its interface index; VLAN
//!   sub-interfaces and bonds (issue 9 items 2 and 5) are new [`InterfaceKind`]s at further indices,
//!   and reach their port(s) through [`Interface::kind`].
//! - Nodes (one per file): `interface-rx` ([`interface_rx`], VPP's `*-input`: stamps what the poll
//!   loop received, counts it per interface), `ethernet-input` ([`ethernet_input`]: validates L2
//!   once, picks the interface's service) and `interface-output` ([`interface_output`]: one
//!   `tx_burst` per port and vector).
//! - Arcs: [`INPUT_ARC`] (`device-input`, from `interface-rx` to `ethernet-input`, per receive
//!   interface) and [`OUTPUT_ARC`] (`interface-output`, from any forwarding node to
//!   `interface-output`, per transmit interface). A feature (tag rewrite, ACL, a per-interface
//!   counter) registers a node on an arc and enables it per interface; the nodes before and after
//!   it do not change (VPP's l2-input/l2-output feature bitmaps, `src/vnet/l2/feat_bitmap.h`).

pub mod ethernet_input;
pub mod interface_output;
pub mod interface_rx;

use serde::{Deserialize, Serialize};
use vecswitch_graph::{ArcId, ArcKey, Graph, GraphError, Next};
use vecswitch_wire::EthernetAddress;

use crate::feature::{Feature, Stage};
use crate::state::{BdIdx, PortIdx, SwitchState};

pub use ethernet_input::EthernetInput;
pub use interface_output::InterfaceOutput;
pub use interface_rx::InterfaceRx;

/// Software interface index, as stored in buffer headers (`rx_port`, `tx_port`).
pub type SwIfIdx = u16;

/// The `device-input` arc: features on received frames, before `ethernet-input` (per receive
/// interface). Registered first by [`InterfaceFeature`], so its id is fixed.
pub const INPUT_ARC: ArcId = 0;
/// The `interface-output` arc: features on frames to send, before `interface-output` (per transmit
/// interface). Forwarding nodes send with [`TO_OUTPUT`].
pub const OUTPUT_ARC: ArcId = 1;
/// The decision of a forwarding node that has set `tx_port`: along the output arc.
pub const TO_OUTPUT: Next = Next::arc(OUTPUT_ARC);
/// Default MTU of a main interface (bytes of L3 payload). Frames received with more are dropped by
/// `ethernet-input` as `over-mtu` (`crate::l2::hygiene`); on transmit it is checked where
/// `mtu-check` is on.
pub const DEFAULT_MTU: u16 = 9000;

/// What an interface's received frames are for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Service {
    /// Nothing configured: frames are dropped (`no-service`).
    None,
    /// Cross-connect: every frame goes out of interface `to` (one direction of an E-Line).
    Xconnect { to: SwIfIdx },
    /// Member of bridge domain `bd` (E-LAN).
    Bridge { bd: BdIdx },
}

/// What an interface is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum InterfaceKind {
    /// A port's main interface: every frame of the port (sub-interfaces, when they come, take the
    /// frames whose tags they match first).
    Main { port: PortIdx },
    /// A bond (`crate::bond`): frames leave by the member `bond-output` picks.
    Bond { iface: SwIfIdx },
    /// A VLAN sub-interface `id` over interface `parent` (`crate::vlan`): the frames of the parent
    /// whose tags it matches.
    Sub { parent: SwIfIdx, id: u32 },
}

/// Counters of one interface.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterfaceCounters {
    /// Frames received on the interface (counted by `interface-rx`).
    pub rx_packets: u64,
    pub rx_bytes: u64,
    /// Frames the interface's port accepted for sending (counted by `interface-output`).
    pub tx_packets: u64,
    pub tx_bytes: u64,
}

/// One software interface.
#[derive(Debug, Clone)]
pub struct Interface {
    pub name: String,
    pub kind: InterfaceKind,
    /// Administratively up: when down, received frames are dropped (`admin-down`) and nothing is
    /// sent (`tx-admin-down`).
    pub admin_up: bool,
    /// The interface's MAC address: for a main interface the one its port's config gives
    /// ([`vecswitch_ports::Port::configured_mac`], memif's `mac`), else a locally administered
    /// address made from its index (`02:fe:00:00:HH:LL`).
    pub mac: EthernetAddress,
    pub mtu: u16,
    pub service: Service,
    pub counters: InterfaceCounters,
}

impl Interface {
    /// The main interface of port `port`, named as the port, up, with no service.
    pub fn main(name: &str, port: PortIdx) -> Interface {
        let [hi, lo] = port.to_be_bytes();
        Interface {
            name: name.to_string(),
            kind: InterfaceKind::Main { port },
            admin_up: true,
            mac: EthernetAddress([0x02, 0xfe, 0, 0, hi, lo]),
            mtu: DEFAULT_MTU,
            service: Service::None,
            counters: InterfaceCounters::default(),
        }
    }

    /// The port frames sent on this interface leave by.
    #[inline]
    pub fn tx_port(&self) -> PortIdx {
        match self.kind {
            InterfaceKind::Main { port } => port,
            // `bond-output` sets a member as `tx_port` first; a frame that skipped it goes to
            // no port (`interface-output` counts it `tx-failed`).
            InterfaceKind::Bond { .. } => PortIdx::MAX,
            // `vlan-output` moves a sub-interface's frames to its parent before
            // `interface-output`; a main parent's index is its port's.
            InterfaceKind::Sub { parent, .. } => parent,
        }
    }
}

/// `show interfaces`: one line per interface.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterfaceInfo {
    pub index: SwIfIdx,
    pub name: String,
    pub kind: InterfaceKind,
    pub admin_up: bool,
    pub mac: String,
    pub mtu: u16,
    pub counters: InterfaceCounters,
    /// Features enabled on the interface's input and output arcs, in arc order.
    pub input_features: Vec<String>,
    pub output_features: Vec<String>,
}

/// The interface layer as a [`Feature`]: its three nodes and the two arcs.
#[derive(Debug, Clone, Copy)]
pub struct InterfaceFeature;

impl Feature for InterfaceFeature {
    fn name(&self) -> &'static str {
        "interface"
    }

    fn register(&self, graph: &mut Graph<SwitchState>, stage: Stage) -> Result<(), GraphError> {
        match stage {
            Stage::Arcs => {
                let i = graph.add_arc("device-input", "ethernet-input", ArcKey::Rx);
                let o = graph.add_arc("interface-output", "interface-output", ArcKey::Tx);
                if (i, o) != (INPUT_ARC, OUTPUT_ARC) {
                    return Err(GraphError::UnknownArc(
                        "device-input/interface-output must be the first two arcs".into(),
                    ));
                }
            }
            Stage::Input => {
                graph.add(Box::new(InterfaceRx));
                graph.add(Box::new(EthernetInput));
            }
            Stage::Forward | Stage::Output => {}
            Stage::Send => {
                graph.add(Box::new(InterfaceOutput::default()));
            }
        }
        Ok(())
    }
}
