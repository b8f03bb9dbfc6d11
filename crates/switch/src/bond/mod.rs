//! Link aggregation (issue 9 item 5): a bond is a software interface whose members are ports' main
//! interfaces; services (bridge membership, xconnect) attach to the bond like to any interface.
//!
//! - Modes ([`BondMode`]): `active-backup`, `xor` (balance by [`HashPolicy`] `l2`, `l23`, `l34`),
//!   `broadcast` and `lacp` (IEEE 802.1AX-2014, balance by hash over the members LACP lets
//!   distribute; machines in [`lacp`], the LACPDU's bytes in [`lacpdu`] — the protocol's frame
//!   belongs to the feature, as VPP's `src/plugins/lacp` keeps its PDU).
//! - Nodes: `bond-input` ([`bond_input`]) on the `device-input` arc of every member: consumes and
//!   counts LACPDUs, hands the other frames on *as received on the bond* (or drops them, counted,
//!   if the member does not collect); `bond-output` ([`bond_output`]) on the `interface-output` arc
//!   of the bond: picks the member by the hash (a flow stays on one member) and sends on along
//!   the member's arc.
//! - Table: [`BondTable`] in `SwitchState::bonds`; the members that may carry traffic now are each
//!   bond's [`Bond::active`], recomputed by [`crate::Switch::bond_tick`] (which also runs LACP) and
//!   after every control change. A member whose port's link is down, or whose interface is
//!   administratively down, leaves `active` at the next tick.
//! - Config: [`config::BondConfig`] (the serde type is the config), applied whole by
//!   `Switch::add_bond`.
//! - Control: [`control`] (`create_bond`, `add_bond_member`, `show_bond`, `show_lacp`, …).
//!
//! Time: LACP runs on the worker's clock in [`crate::Switch::bond_tick`], the feature's
//! `Feature::timers`, which the worker runs after each poll (no thread per bond); it does nothing
//! more often than every [`TICK_NS`].

pub mod bond_input;
pub mod bond_output;
pub mod config;
pub mod control;
pub mod ctl;
pub mod lacp;
pub mod lacpdu;

use serde::{Deserialize, Serialize};
use vecswitch_graph::{Graph, GraphError};
use vecswitch_wire::EthernetAddress;

use crate::feature::{Feature, Stage};
use crate::interface::{SwIfIdx, INPUT_ARC, OUTPUT_ARC};
use crate::state::{PortIdx, SwitchState};

pub use bond_input::BondInput;
pub use bond_output::BondOutput;
pub use lacp::{LacpPort, LacpRate};

/// Bond index (in [`BondTable::bonds`]).
pub type BondIdx = u16;
/// Position of `bond-input` on the input arc: first, before any other input feature.
pub const INPUT_ORDER: u16 = 10;
/// Position of `bond-output` on the output arc: last, after the bond's other output features
/// (e.g. `mtu-check` at 100), so that they see the bond, and the member's features after it.
pub const OUTPUT_ORDER: u16 = 900;
/// Least time between two runs of the bond timers (LACP, member link state).
pub const TICK_NS: u64 = 10_000_000;
/// Most members of one bond.
pub const MAX_MEMBERS: usize = 16;

/// How a bond uses its members (Linux's `mode`, VPP's `create bond mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BondMode {
    /// One member carries everything; the next usable one takes over when it fails. Frames
    /// received on the others are dropped (`not-collecting`).
    ActiveBackup,
    /// Every usable member; a frame goes out of the member its hash picks.
    Xor,
    /// Every frame out of every usable member.
    Broadcast,
    /// IEEE 802.1AX LACP: the members LACP has brought to collecting/distributing, by hash.
    Lacp,
}

/// Which headers choose the member in `xor` and `lacp` modes (Linux's `xmit_hash_policy`,
/// VPP's `load-balance`). Every policy folds source and destination together with XOR before
/// mixing, so both directions of a flow hash alike (symmetric, as VPP's l2 and l23 are).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HashPolicy {
    /// Source and destination MAC.
    #[default]
    L2,
    /// MACs and IPv4/IPv6 source and destination address.
    L23,
    /// IP addresses and TCP/UDP ports (first fragments and unfragmented packets; others by IP).
    L34,
}

/// A bond's configuration (the serde type is the config).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BondSettings {
    pub mode: BondMode,
    #[serde(default)]
    pub hash: HashPolicy,
    /// What LACP asks of the partner (lacp mode only).
    #[serde(default)]
    pub lacp_rate: LacpRate,
}

impl Default for BondSettings {
    fn default() -> Self {
        BondSettings {
            mode: BondMode::Lacp,
            hash: HashPolicy::L2,
            lacp_rate: LacpRate::Fast,
        }
    }
}

/// One member of a bond.
#[derive(Debug, Clone)]
pub struct Member {
    /// The member port's main interface.
    pub iface: SwIfIdx,
    pub port: PortIdx,
    /// Link up and interface administratively up, at the last tick.
    pub usable: bool,
    /// LACP state (lacp mode only).
    pub lacp: Option<LacpPort>,
    /// Frames received on the member dropped because it does not collect.
    pub rx_not_collecting: u64,
}

/// One bond.
#[derive(Debug, Clone)]
pub struct Bond {
    pub name: String,
    /// The bond's own interface (what services attach to).
    pub iface: SwIfIdx,
    pub settings: BondSettings,
    pub members: Vec<Member>,
    /// Member interfaces that carry traffic now, in member order (what `bond-output` hashes over).
    pub active: Vec<SwIfIdx>,
    /// Times `active` changed.
    pub active_changes: u64,
}

impl Bond {
    /// LACP key: the bond's interface index + 1 (never 0).
    pub fn key(&self) -> u16 {
        self.iface.wrapping_add(1).max(1)
    }

    /// Recomputes [`Bond::active`] from the members' state; returns whether it changed.
    pub fn update_active(&mut self) -> bool {
        let usable = self.members.iter().filter(|m| m.usable);
        let new: Vec<SwIfIdx> = match self.settings.mode {
            BondMode::Xor | BondMode::Broadcast => usable.map(|m| m.iface).collect(),
            BondMode::Lacp => usable
                .filter(|m| m.lacp.as_ref().is_some_and(LacpPort::distributing))
                .map(|m| m.iface)
                .collect(),
            BondMode::ActiveBackup => {
                // Sticky: the current active member stays while it is usable.
                let cur = self.active.first().copied();
                let keep = cur.filter(|c| self.members.iter().any(|m| m.iface == *c && m.usable));
                keep.or_else(|| self.members.iter().find(|m| m.usable).map(|m| m.iface))
                    .into_iter()
                    .collect()
            }
        };
        if new != self.active {
            self.active = new;
            self.active_changes += 1;
            true
        } else {
            false
        }
    }

    /// Whether frames received on member `iface` are taken (collecting).
    #[inline]
    pub fn collects(&self, m: &Member) -> bool {
        match self.settings.mode {
            BondMode::Xor | BondMode::Broadcast => m.usable,
            BondMode::ActiveBackup => self.active.first() == Some(&m.iface),
            BondMode::Lacp => m.usable && m.lacp.as_ref().is_some_and(LacpPort::distributing),
        }
    }
}

/// Every bond, and which bond each member interface belongs to.
#[derive(Debug, Clone, Default)]
pub struct BondTable {
    /// Bonds by index; `None` is a deleted bond.
    pub bonds: Vec<Option<Bond>>,
    /// For each interface index: `(bond, member position)` if it is a bond member.
    pub member_of: Vec<Option<(BondIdx, u16)>>,
    /// The bond of each bond interface (by interface index).
    pub bond_of: Vec<Option<BondIdx>>,
    /// Switch clock of the last tick, ns.
    pub last_tick_ns: u64,
}

impl BondTable {
    /// The bond and member that interface `iface` is, if it is a member.
    #[inline]
    pub fn member(&self, iface: SwIfIdx) -> Option<(&Bond, &Member)> {
        let (b, m) = (*self.member_of.get(iface as usize)?)?;
        let bond = self.bonds.get(b as usize)?.as_ref()?;
        Some((bond, bond.members.get(m as usize)?))
    }

    /// The bond whose interface is `iface`.
    #[inline]
    pub fn bond_by_iface(&self, iface: SwIfIdx) -> Option<&Bond> {
        let b = (*self.bond_of.get(iface as usize)?)?;
        self.bonds.get(b as usize)?.as_ref()
    }

    /// Rebuilds `member_of` and `bond_of` from the bonds.
    pub fn reindex(&mut self) {
        self.member_of.clear();
        self.bond_of.clear();
        for (bi, b) in self.bonds.iter().enumerate() {
            let Some(b) = b else { continue };
            set_at(&mut self.bond_of, b.iface, bi as BondIdx);
            for (mi, m) in b.members.iter().enumerate() {
                set_at(&mut self.member_of, m.iface, (bi as BondIdx, mi as u16));
            }
        }
    }
}

fn set_at<T: Copy>(v: &mut Vec<Option<T>>, i: SwIfIdx, x: T) {
    let i = i as usize;
    if v.len() <= i {
        v.resize(i + 1, None);
    }
    v[i] = Some(x);
}

/// The MAC of a bond interface: locally administered, made from its interface index
/// (`02:fe:b0:00:HH:LL`), the LACP system identifier of the bond.
pub fn bond_mac(iface: SwIfIdx) -> EthernetAddress {
    let [hi, lo] = iface.to_be_bytes();
    EthernetAddress([0x02, 0xfe, 0xb0, 0, hi, lo])
}

/// The bond feature as registered in the graph.
#[derive(Debug, Clone, Copy)]
pub struct BondFeature;

impl Feature for BondFeature {
    fn name(&self) -> &'static str {
        "bond"
    }

    fn register(&self, graph: &mut Graph<SwitchState>, stage: Stage) -> Result<(), GraphError> {
        match stage {
            Stage::Input => {
                graph.add(Box::new(BondInput));
                graph.add_feature(INPUT_ARC, bond_input::NAME, INPUT_ORDER)?;
            }
            Stage::Output => {
                graph.add(Box::new(BondOutput));
                graph.add_feature(OUTPUT_ARC, bond_output::NAME, OUTPUT_ORDER)?;
            }
            _ => {}
        }
        Ok(())
    }

    fn timers(&self, switch: &mut crate::Switch) {
        switch.bond_tick();
    }

    /// A member set down leaves distribution now, not at the next tick: until then frames
    /// hashed onto it would be dropped by `interface-output` (`tx-admin-down`).
    fn admin_changed(&self, switch: &mut crate::Switch, iface: SwIfIdx) {
        if switch.state.bonds.member(iface).is_some() {
            let now = switch.now_ns();
            switch.bond_tick_at(now);
        }
    }

    fn shows(&self) -> &'static [crate::ctl::Show] {
        ctl::SHOWS
    }
}
