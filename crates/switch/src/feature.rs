//! The registration point of the switch's features.
//!
//! A feature is a folder under `src/` (`interface/`, `l2/`, …) that owns its nodes (one per file),
//! its tables and its control methods, and a value implementing [`Feature`] that registers its nodes
//! and its places on the feature arcs. [`FEATURES`] lists them; [`build_graph`] builds the switch's
//! graph from that list, stage by stage, so that the dispatch order follows the packet's path
//! whatever the order of the list: every feature's arcs, then input nodes, then forwarding nodes,
//! then output features, then the nodes that send.
//!
//! Adding a feature is: a new folder, one line in `lib.rs` (`pub mod`), one line in [`FEATURES`],
//! and — if it keeps state the nodes read — one field in [`crate::state::SwitchState`]. A feature
//! with timers (LACP) implements [`Feature::timers`], which the worker runs after every poll; one
//! with `show` commands returns them from [`Feature::shows`] (they reach `vecswitch ctl` with no
//! change in `crates/control`). A config section and its `ctl` verbs are a [`crate::ctl::Section`]
//! in the folder, bound to the config with one line in `crates/control/src/sections.rs` (which
//! declares the `Config` field too). A feature that takes frames from `ethernet-input` registers
//! the ethertypes ([`Feature::ethertypes`]: IP's IPv4, ARP and IPv6) or the interface services
//! ([`Feature::services`]: L2's cross-connect and bridge) it takes; `ethernet-input` dispatches by
//! these tables and names no feature. A feature that makes interfaces (sub-interfaces, bonds) gives
//! them an [`crate::interface::InterfaceKind::Feature`] of its own naming: the interface layer
//! needs no change.
//! See docs/ARCHITECTURE.md for a worked example.

use vecswitch_graph::{ArcId, Graph, GraphError};

use crate::ctl::Show;
use crate::error::SwitchError;
use crate::interface::{EthertypeInput, ServiceInput, SwIfIdx};
use crate::runtime::Switch;
use crate::state::SwitchState;

/// When a feature's [`Feature::register`] is called; nodes are dispatched in registration order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Declare feature arcs (`Graph::add_arc`).
    Arcs,
    /// Nodes that receive and classify (`interface-rx`, `ethernet-input`, input-arc features).
    Input,
    /// Nodes that decide where a packet goes (`l2-xconnect`, `l2-learn`, `l2-fwd`, `l2-flood`).
    Forward,
    /// Output-arc features (`mtu-check`).
    Output,
    /// The nodes that send (`interface-output`, the end of the output arc), dispatched last.
    Send,
}

impl Stage {
    /// Every stage, in registration order.
    pub const ALL: [Stage; 5] = [
        Stage::Arcs,
        Stage::Input,
        Stage::Forward,
        Stage::Output,
        Stage::Send,
    ];
}

/// A feature of the switch: registers its nodes, arcs and arc features in the graph.
pub trait Feature: Sync {
    /// The feature's name (its folder), for errors and docs.
    fn name(&self) -> &'static str;
    /// Registers what belongs to `stage`: arcs (`Graph::add_arc`) in [`Stage::Arcs`], nodes
    /// (`Graph::add`) and their places on arcs (`Graph::add_feature`) in the other stages.
    fn register(&self, graph: &mut Graph<SwitchState>, stage: Stage) -> Result<(), GraphError>;
    /// The feature's timers (protocol state machines, periodic transmissions), run by the worker
    /// after every poll iteration ([`Switch::run_timers`]) on the worker's thread and clock
    /// (`Switch::now_ns`). A feature with timers keeps its own next-due time and returns at once
    /// when nothing is due; the default has none.
    fn timers(&self, _switch: &mut Switch) {}
    /// Called by [`Switch::set_port_admin`] after port interface `iface` changed its
    /// administrative state, for a feature whose state follows it at once rather than at its
    /// next timer (a bond takes a member out of distribution before the next frame is hashed
    /// onto it). The default does nothing.
    fn admin_changed(&self, _switch: &mut Switch, _iface: SwIfIdx) {}
    /// The feature's `show` commands (`show bond`), each with its renderer; see [`crate::ctl`].
    fn shows(&self) -> &'static [Show] {
        &[]
    }
    /// Its `ctl` actions (`mac flush`): commands that act on the running switch without changing
    /// its config.
    fn actions(&self) -> &'static [crate::ctl::Action] {
        &[]
    }
    /// Called by [`Switch::set_interface_feature`] after a feature was switched on or off on
    /// interface `iface`'s `arc`, for a feature whose own place on an arc depends on what else is
    /// there: one with an inline egress ([`Feature::inline_egress_node`]) puts its node on the
    /// output arc of an interface it made, and clears the interface's
    /// [`crate::interface::Interface::inline_egress`], when another output feature is on that
    /// interface or on the one it hands frames to — and the other way round. The default does
    /// nothing.
    fn arc_changed(
        &self,
        _switch: &mut Switch,
        _arc: ArcId,
        _iface: SwIfIdx,
    ) -> Result<(), SwitchError> {
        Ok(())
    }
    /// The ethertypes whose frames the feature takes from `ethernet-input` on an interface with
    /// no L2 service, each with its node and whether an interface takes them (VPP's
    /// `next_by_ethertype`, filled by L3 with `ethernet_register_input_type`). The default: none.
    fn ethertypes(&self) -> &'static [EthertypeInput] {
        &[]
    }
    /// The interface services ([`crate::interface::ServiceKind`]) whose frames the feature takes
    /// from `ethernet-input`, each with its nodes and which one a frame goes to. The default:
    /// none.
    fn services(&self) -> &'static [ServiceInput] {
        &[]
    }
    /// For a feature that does its egress step inline in `interface-output` on interfaces it
    /// made ([`crate::interface::InlineEgress`]): the node the step's refused frames go to (the
    /// step's node form, which drops them under its named reasons). It becomes an edge of
    /// `interface-output`. The default: none.
    fn inline_egress_node(&self) -> Option<&'static str> {
        None
    }
}

impl Switch {
    /// Runs every feature's [`Feature::timers`] (called by the worker after each poll; tests that
    /// drive `poll_once` themselves call it too).
    pub fn run_timers(&mut self) {
        let t0 = self.now_ns();
        for f in FEATURES {
            f.timers(self);
        }
        let t = self.now_ns().saturating_sub(t0);
        self.note_timers(t);
    }
}

/// Every feature of the switch. The interface layer comes first (it declares the arcs the others
/// use).
pub static FEATURES: &[&dyn Feature] = &[
    &crate::interface::InterfaceFeature, // interfaces, interface-rx/-output, the arcs
    &crate::l2::L2Feature,               // xconnect, bridge domains, MAC learning
    &crate::ip::IpFeature,               // IPv4 routing, ARP
    &crate::mtu::MtuFeature,             // mtu-check on the output arc
    &crate::bond::BondFeature,           // bonds: bond-input, bond-output, LACP
    &crate::vlan::VlanFeature,           // sub-interfaces: vlan-output (ingress in ethernet-input)
    &crate::nat44::Nat44Feature,         // NAT44 masquerade: nat44-in2out, nat44-out2in
    &crate::firewall::FirewallFeature,   // stateful firewall: firewall-input, conntrack
];

/// Builds a graph from `features`, stage by stage, and resolves it.
pub fn build_graph(features: &[&dyn Feature]) -> Result<Graph<SwitchState>, GraphError> {
    let mut graph = Graph::new();
    for stage in Stage::ALL {
        for f in features {
            f.register(&mut graph, stage)?;
        }
    }
    graph.finalize()?;
    Ok(graph)
}
