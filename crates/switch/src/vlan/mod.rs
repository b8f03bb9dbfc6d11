//! VLAN sub-interfaces (IEEE 802.1Q C-tags, 802.1ad S-tags, Q-in-Q) with VPP's semantics: a
//! sub-interface over a *parent* interface (a port's main interface today, a bond later — the
//! tables are keyed by the parent's interface index and never look at ports) matches frames by
//! their tags, and joins bridge domains and cross-connects like any interface.
//!
//! - Config: [`SubInterfaceConfig`] (the serde type: `parent`, `id`, `encap`, `tag-rewrite`), with
//!   [`Encap`] and [`TagRewrite`] written as VPP's CLI writes them ([`encap`]).
//! - Tables: [`VlanState`] — each sub-interface's settings ([`SubIf`]). The classification
//!   tables are the interface layer's (`crate::interface::subif`, `SwitchState::subifs`): per
//!   parent a [`ParentTable`] that [`ParentTable::classify`] searches in VPP's order
//!   (`src/vnet/ethernet/ethernet.h`, `eth_identify_subint`): exact Q-in-Q, outer tag with any
//!   inner, single tag, `default`, `untagged` (or the main interface), and per sub-interface its
//!   ingress rewrite. This feature fills them (`rebuild`, [`Encap::matching`]).
//! - Ingress: no node of its own. `ethernet-input` (crates/switch/src/interface), which has parsed
//!   the tags already, looks the receive interface's [`ParentTable`] up, makes the frame the
//!   sub-interface's and applies its ingress [`rewrite`] — as VPP classifies in `ethernet-input`
//!   (`eth_identify_subint`). A frame nothing takes is `ethernet-input unknown-vlan`.
//! - Egress: the inverse rewrite, the egress filter, then on to the parent ([`vlan_output`]). Done
//!   inline by `interface-output` (as VPP's `l2-output` does its VTR inline) for a sub-interface
//!   with no other output feature on it or on its parent — through the interface layer's generic
//!   hook, the sub-interface's `Interface::inline_egress` (`vlan_output::inline`; the frames it
//!   refuses reach `vlan-output` by the edge `Feature::inline_egress_node` gives
//!   `interface-output`, and are dropped there by name); else by the node `vlan-output` on the
//!   sub-interface's `interface-output` arc, first, so that the features after it (the parent's
//!   `bond-output`, `mtu-check`, NAT) see the frame as it leaves
//!   (`Switch::place_vlan_output`, decided again whenever an output feature is switched on or off
//!   on the sub-interface or its parent: `Feature::arc_changed`).
//! - Control: [`control`] — `Switch::add_subinterface`, `delete_subinterface`,
//!   `set_tag_rewrite`, `show_subinterfaces`; [`ctl`] — the `[[subinterface]]` section, the
//!   `subinterface add|del` verbs and `show subinterfaces`, registered from here.
//!
//! What the main interface receives once its parent has sub-interfaces (VPP: the main interface
//! holds the `untagged` slot; in L2 mode it matches any tag count, `ethernet_sw_interface_set_l2_mode`):
//! untagged frames when there is no `untagged` sub-interface, and — when the main interface has a
//! service (xconnect or bridge, i.e. it is in L2 mode) — also tagged frames no sub-interface
//! takes. A tagged frame that nothing takes is dropped (`unknown-vlan`).
//!
//! A parent administratively down takes its sub-interfaces' frames with it (`ethernet-input
//! admin-down`, checked before classification), as in VPP, where a sub-interface is up only when
//! its hardware interface is; a sub-interface down drops only its own.
//!
//! Frames with more than two tags never reach a sub-interface: the L2 parser drops them
//! (`too-many-vlan-tags`), so `exact-match` only changes what a single-tag sub-interface takes.
//! A single priority tag (VID 0) matches no VLAN: such a frame goes to `default` if there is one,
//! else to the untagged slot (VPP clears the one-tag match flag for VID 0).

pub mod config;
pub mod control;
pub mod ctl;
pub mod encap;
pub mod testing;
pub mod vlan_output;

use serde::{Deserialize, Serialize};
use vecswitch_graph::{ArcId, Graph, GraphError};

use crate::feature::{Feature, Stage};
use crate::interface::{SwIfIdx, OUTPUT_ARC};
use crate::state::SwitchState;

pub use crate::interface::subif::{
    move_tags, read_tags, rewrite, set_shifted, shift_tags, CounterRun, Duplicate, ParentTable,
    RewriteError, TagBytes, TagError, TagKey,
};
pub use encap::{Encap, Inner, TagRewrite, Tpid, Vtr};
pub use vlan_output::VlanOutput;

/// Position of `vlan-output` on the `interface-output` arc: first, so that the features after it
/// see the frame with the tags it leaves with, on the parent.
pub const OUTPUT_ORDER: u16 = 10;

/// One sub-interface in the config (`[[subinterface]]`): named `<parent>.<id>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct SubInterfaceConfig {
    /// The interface it is over (a port's name).
    pub parent: String,
    /// Its number under the parent (VPP's sub-interface id), any `u32`.
    pub id: u32,
    /// What it matches, e.g. `dot1ad 100 inner-dot1q 20`.
    #[serde(with = "as_string")]
    pub encap: Encap,
    /// What is done to the tags of the frames it receives (the inverse on those it sends);
    /// `disable` when absent.
    #[serde(default, with = "as_string")]
    pub tag_rewrite: TagRewrite,
}

impl SubInterfaceConfig {
    /// The sub-interface's name: `<parent>.<id>`, as VPP names it.
    pub fn name(&self) -> String {
        format!("{}.{}", self.parent, self.id)
    }
}

/// Serde of a value through its `Display` / `FromStr` (the CLI form).
mod as_string {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::fmt::Display;
    use std::str::FromStr;

    pub fn serialize<T: Display, S: Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(v)
    }

    pub fn deserialize<'de, T, D>(d: D) -> Result<T, D::Error>
    where
        T: FromStr,
        T::Err: Display,
        D: Deserializer<'de>,
    {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// One sub-interface's settings, as the nodes use them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubIf {
    pub parent: SwIfIdx,
    pub id: u32,
    pub encap: Encap,
    pub rewrite: TagRewrite,
    /// The rewrite of received frames.
    pub ingress: Vtr,
    /// Its inverse, on frames sent.
    pub egress: Vtr,
}

/// The VLAN tables of the switch: one field of [`SwitchState`]. The classification tables the
/// sub-interfaces fill are the interface layer's ([`crate::interface::subif::SubIfTables`],
/// `SwitchState::subifs`).
#[derive(Debug, Clone, Default)]
pub struct VlanState {
    /// By interface index: the sub-interface's settings.
    pub subs: Vec<Option<SubIf>>,
}

impl VlanState {
    /// Sub-interface `sw`'s settings.
    #[inline]
    pub fn sub(&self, sw: SwIfIdx) -> Option<&SubIf> {
        self.subs.get(sw as usize).and_then(Option::as_ref)
    }
}

/// Rebuilds parent `p`'s classification table (parent called `name`) in the interface layer from
/// the sub-interfaces over it (none when it has none).
pub(crate) fn rebuild(st: &mut SwitchState, p: SwIfIdx, name: &str) {
    let mut t = ParentTable::new(name);
    let mut any = false;
    for (i, s) in st.vlan.subs.iter().enumerate() {
        if let Some(s) = s.as_ref().filter(|s| s.parent == p) {
            // Duplicates were refused when the sub-interface was added.
            let _ = t.insert(i as SwIfIdx, s.encap.matching());
            any = true;
        }
    }
    st.subifs.set_parent(p, any.then_some(t));
}

/// The VLAN feature as registered in the graph.
#[derive(Debug, Clone, Copy)]
pub struct VlanFeature;

impl Feature for VlanFeature {
    fn name(&self) -> &'static str {
        "vlan"
    }

    fn shows(&self) -> &'static [crate::ctl::Show] {
        ctl::SHOWS
    }

    fn register(&self, graph: &mut Graph<SwitchState>, stage: Stage) -> Result<(), GraphError> {
        if stage == Stage::Output {
            graph.add(Box::new(VlanOutput));
            graph.add_feature(OUTPUT_ARC, vlan_output::NAME, OUTPUT_ORDER)?;
        }
        Ok(())
    }

    fn arc_changed(
        &self,
        switch: &mut crate::runtime::Switch,
        arc: ArcId,
        iface: SwIfIdx,
    ) -> Result<(), crate::error::SwitchError> {
        if arc == OUTPUT_ARC {
            switch.vlan_output_arc_changed(iface)?;
        }
        Ok(())
    }

    fn inline_egress_node(&self) -> Option<&'static str> {
        Some(vlan_output::NAME)
    }
}
