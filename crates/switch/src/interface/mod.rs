//! The interface layer: software interfaces over ports, the receive and transmit nodes and the two
//! feature arcs every packet crosses.
//!
//! - [`Interface`]: a software interface with admin state, MAC, MTU, counters and the [`Service`]
//!   its received frames are for. Services (xconnect, bridge membership) attach to interfaces, not
//!   to ports. Every port has one *main* interface ([`InterfaceKind::Main`]) at the port's own
//!   index, so a buffer header's `rx_port`/`tx_port` is also its interface index. Other interfaces
//!   are made by features ([`InterfaceKind::Feature`]: a kind name the feature chooses, the parent
//!   interface if any, an id) at further indices ([`SwitchState::free_interface`],
//!   [`SwitchState::put_interface`]); the layer knows none of them by name. What it needs of such
//!   an interface is data: [`Interface::tx`], the port its frames leave by when no output feature
//!   of its feature moved them first, and [`Interface::inline_egress`], the feature's egress step
//!   that `interface-output` does inline when it is the interface's only output feature.
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
pub mod hygiene;
pub mod interface_output;
pub mod interface_rx;
pub mod subif;

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use vecswitch_buffer::Pool;
use vecswitch_graph::{ArcId, ArcKey, Graph, GraphError, Next};
use vecswitch_wire::EthernetAddress;

use crate::error::SwitchError;
use crate::feature::{Feature, Stage};
use crate::state::{BdIdx, PortIdx, SwitchState};

pub use ethernet_input::{EthernetInput, EthertypeInput, ServiceInput};
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
/// `ethernet-input` as `over-mtu` ([`hygiene`]); on transmit it is checked where
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

impl Service {
    /// The service's kind, `None` for [`Service::None`] (the frames are for an L3 feature, by
    /// their ethertype: [`EthertypeInput`]).
    #[inline]
    pub fn kind(&self) -> Option<ServiceKind> {
        match self {
            Service::None => None,
            Service::Xconnect { .. } => Some(ServiceKind::Xconnect),
            Service::Bridge { .. } => Some(ServiceKind::Bridge),
        }
    }
}

/// The kinds of [`Service`] a feature can take the frames of ([`ServiceInput`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServiceKind {
    /// [`Service::Xconnect`].
    Xconnect,
    /// [`Service::Bridge`].
    Bridge,
}

impl ServiceKind {
    /// Every kind, in the order of [`ServiceKind::index`].
    pub const ALL: [ServiceKind; 2] = [ServiceKind::Xconnect, ServiceKind::Bridge];

    /// The kind's position in [`ServiceKind::ALL`].
    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }
}

/// What an interface is made of (`show interfaces`' "type" and the fields after it).
///
/// Serialized flat, `{"type":"main","port":0}` or `{"type":KIND,"parent":P,"id":N}` (absent fields
/// left out), and read back from that form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "KindFields", try_from = "KindFields")]
pub enum InterfaceKind {
    /// A port's main interface: every frame of the port that no interface made over it takes
    /// first.
    Main { port: PortIdx },
    /// An interface a feature made: `kind` names its type (the feature's word for it), `parent`
    /// is the interface it is made over (if it is over one) and `id` its number there.
    Feature {
        kind: Cow<'static, str>,
        parent: Option<SwIfIdx>,
        id: Option<u32>,
    },
}

impl InterfaceKind {
    /// The kind of an interface made by a feature (`kind` is the feature's constant name).
    pub const fn feature(
        kind: &'static str,
        parent: Option<SwIfIdx>,
        id: Option<u32>,
    ) -> InterfaceKind {
        InterfaceKind::Feature {
            kind: Cow::Borrowed(kind),
            parent,
            id,
        }
    }

    /// The type's name: `main` or the feature's kind.
    pub fn name(&self) -> &str {
        match self {
            InterfaceKind::Main { .. } => "main",
            InterfaceKind::Feature { kind, .. } => kind,
        }
    }

    /// The port whose main interface this is.
    pub fn main_port(&self) -> Option<PortIdx> {
        match self {
            InterfaceKind::Main { port } => Some(*port),
            InterfaceKind::Feature { .. } => None,
        }
    }
}

/// [`InterfaceKind`]'s serde form: the type's name and the fields it has.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct KindFields {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    port: Option<PortIdx>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    parent: Option<SwIfIdx>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id: Option<u32>,
}

impl From<InterfaceKind> for KindFields {
    fn from(k: InterfaceKind) -> KindFields {
        match k {
            InterfaceKind::Main { port } => KindFields {
                kind: "main".into(),
                port: Some(port),
                parent: None,
                id: None,
            },
            InterfaceKind::Feature { kind, parent, id } => KindFields {
                kind: kind.into_owned(),
                port: None,
                parent,
                id,
            },
        }
    }
}

impl TryFrom<KindFields> for InterfaceKind {
    type Error = String;
    fn try_from(f: KindFields) -> Result<InterfaceKind, String> {
        match (f.kind.as_str(), f.port) {
            ("main", Some(port)) => Ok(InterfaceKind::Main { port }),
            ("main", None) => Err("interface kind `main` without its `port`".into()),
            (_, Some(port)) => Err(format!(
                "interface kind `{}` with `port` {port}: only `main` has a port",
                f.kind
            )),
            (_, None) => Ok(InterfaceKind::Feature {
                kind: Cow::Owned(f.kind),
                parent: f.parent,
                id: f.id,
            }),
        }
    }
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
    /// The port frames sent on this interface leave by ([`Interface::tx_port`]): a main
    /// interface's port; for an interface a feature made, whatever its feature says — the parent's
    /// port when frames fall through to it, [`NO_PORT`] when an output feature must pick the port
    /// first (a frame that skipped it is counted `tx-failed` by `interface-output`).
    pub tx: PortIdx,
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
    /// The egress work of the feature that made the interface, done inline by `interface-output`
    /// ([`InlineEgress`]) when that feature has set it; `None` for a main interface.
    pub inline_egress: Option<InlineEgress>,
}

/// What `interface-output` calls for a run of frames sent on an interface whose feature does its
/// egress inline ([`InlineEgress::run`]): `(pool, state, pkts, nexts, refused)`, the packets from
/// the first of the run on, one `Next` each; returns the run's length.
pub type InlineEgressFn = fn(&mut Pool, &mut SwitchState, &[u32], &mut [Next], Next) -> usize;

/// A feature's egress step for one interface, done inline by `interface-output` instead of by a
/// node on the output arc — as VPP's `l2-output` does its tag rewrite inline (`l2output_vtr`,
/// `src/vnet/l2/l2_output.h`): no node call and no arc crossing per vector. The feature that made
/// the interface sets it ([`Interface::inline_egress`]) only while its own node would be the only
/// output feature the frame meets (nothing on the interface's output arc, nor on the arc of the
/// interface it hands the frame to), and clears it, putting its node on the arc, otherwise
/// ([`Feature::arc_changed`] tells it when an arc changed). The interface layer names no feature:
/// it calls the function and follows the answers.
#[derive(Debug, Clone, Copy)]
pub struct InlineEgress {
    /// Does the egress for the run of packets at the start of `pkts` whose transmit interface is
    /// the first's (this interface) and returns the run's length (at least 1). A packet sent on
    /// gets [`TO_OUTPUT`] and the interface it is handed to as `tx_port` (one without an inline
    /// egress of its own): `interface-output` queues it on that interface's port, checking its
    /// admin state. A packet the step refuses gets `refused` ([`InlineEgress::refused`]),
    /// unchanged.
    pub run: InlineEgressFn,
    /// Where refused packets go: the edge of `interface-output` to the feature's node
    /// ([`Feature::inline_egress_node`]), which does the same step and drops them under its own
    /// reasons, so `show errors` counts them by name as when the node is on the arc.
    pub refused: Next,
}

impl InlineEgress {
    /// The inline egress `run`, whose refused packets go to node `node` (a feature's
    /// [`Feature::inline_egress_node`], an edge of `interface-output`).
    pub fn new(run: InlineEgressFn, node: &str) -> Result<InlineEgress, SwitchError> {
        let refused = interface_output::edge_to(node).ok_or_else(|| SwitchError::Feature {
            reason: format!(
                "`{node}` is not an edge of `interface-output` (its edges: {}): a feature with \
                 an inline egress names its node in `Feature::inline_egress_node`",
                interface_output::edges().join(", ")
            ),
        })?;
        Ok(InlineEgress { run, refused })
    }
}

impl Interface {
    /// An interface called `name` of kind `kind` sending by port `tx`: up, with no service and
    /// zeroed counters.
    pub fn new(
        name: &str,
        kind: InterfaceKind,
        tx: PortIdx,
        mac: EthernetAddress,
        mtu: u16,
    ) -> Interface {
        Interface {
            name: name.to_string(),
            kind,
            tx,
            admin_up: true,
            mac,
            mtu,
            service: Service::None,
            counters: InterfaceCounters::default(),
            inline_egress: None,
        }
    }

    /// The main interface of port `port`, named as the port, up, with no service.
    pub fn main(name: &str, port: PortIdx) -> Interface {
        let [hi, lo] = port.to_be_bytes();
        Interface::new(
            name,
            InterfaceKind::Main { port },
            port,
            EthernetAddress([0x02, 0xfe, 0, 0, hi, lo]),
            DEFAULT_MTU,
        )
    }

    /// The port frames sent on this interface leave by ([`Interface::tx`]).
    #[inline]
    pub fn tx_port(&self) -> PortIdx {
        self.tx
    }
}

/// [`Interface::tx`] of an interface whose frames reach no port unless an output feature sets
/// one.
pub const NO_PORT: PortIdx = PortIdx::MAX;

/// Most interfaces (indices are `u16`; one value is kept free).
pub const MAX_INTERFACES: usize = u16::MAX as usize - 1;

/// The config-object kind of an interface (a port, a bond, a sub-interface: one namespace, so an
/// object that refers to an interface depends on `ObjectKey::new(KIND_PORT, name)` whatever made
/// it; [`crate::object`]).
pub const KIND_PORT: &str = "port";

impl SwitchState {
    /// The first index free both as an interface and as a port, for an interface a feature makes:
    /// a port added later (whose main interface takes its port's index) never lands on it.
    pub fn free_interface(&self) -> Result<SwIfIdx, SwitchError> {
        (0..MAX_INTERFACES)
            .find(|&i| {
                self.interfaces.get(i).is_none_or(Option::is_none)
                    && self.ports.get(i).is_none_or(Option::is_none)
            })
            .map(|i| i as SwIfIdx)
            .ok_or(SwitchError::TooMany {
                what: "interfaces",
                max: MAX_INTERFACES,
            })
    }

    /// Puts `iface` at index `idx` (from [`SwitchState::free_interface`]); the ports table is
    /// extended over it so that the index stays taken for ports too.
    pub fn put_interface(&mut self, idx: SwIfIdx, iface: Interface) {
        let i = idx as usize;
        if self.ports.len() <= i {
            self.ports.resize_with(i + 1, || None);
        }
        if self.interfaces.len() <= i {
            self.interfaces.resize_with(i + 1, || None);
        }
        self.interfaces[i] = Some(iface);
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
                // Its next edges are the features' registrations ([`ethernet_input::edges`]).
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The kind's JSON is flat (what `show interfaces` prints from) and reads back equal; a kind
    /// that mixes a port with a feature's type, or `main` without its port, is refused.
    #[test]
    fn interface_kind_json_is_flat_and_reads_back() {
        let main = InterfaceKind::Main { port: 3 };
        let sub = InterfaceKind::feature("sub", Some(0), Some(7));
        let made = InterfaceKind::feature("bond", None, None);
        for (k, json) in [
            (&main, r#"{"type":"main","port":3}"#),
            (&sub, r#"{"type":"sub","parent":0,"id":7}"#),
            (&made, r#"{"type":"bond"}"#),
        ] {
            assert_eq!(serde_json::to_string(k).unwrap(), json);
            assert_eq!(&serde_json::from_str::<InterfaceKind>(json).unwrap(), k);
        }
        assert_eq!((main.name(), main.main_port()), ("main", Some(3)));
        assert_eq!((sub.name(), sub.main_port()), ("sub", None));
        for (bad, says) in [
            (r#"{"type":"main"}"#, "without its `port`"),
            (r#"{"type":"sub","port":1}"#, "only `main` has a port"),
            (r#"{"type":"sub","vlan":1}"#, "vlan"),
        ] {
            let e = serde_json::from_str::<InterfaceKind>(bad).unwrap_err();
            assert!(e.to_string().contains(says), "{bad}: {e}");
        }
    }

    /// An interface a feature makes takes an index free as an interface and as a port, and
    /// `tx_port` is what its maker set.
    #[test]
    fn feature_interfaces_take_an_index_free_for_ports_too() {
        let mut st = SwitchState::new(16);
        st.put_interface(0, Interface::main("p0", 0));
        st.ports.resize_with(2, || None); // index 1: a deleted port, free
        let i = st.free_interface().unwrap();
        assert_eq!(i, 1);
        let kind = InterfaceKind::feature("test", Some(0), None);
        st.put_interface(
            i,
            Interface::new(
                "t",
                kind,
                NO_PORT,
                st.interfaces[0].as_ref().unwrap().mac,
                1500,
            ),
        );
        assert_eq!(st.free_interface().unwrap(), 2);
        assert_eq!(st.interface(1).unwrap().tx_port(), NO_PORT);
        assert_eq!(st.interface(0).unwrap().tx_port(), 0);
        assert_eq!(st.ports.len(), 2);
    }
}
