//! The bond feature's control API: methods on [`Switch`] to create and delete bonds, add and remove
//! members, run the bond timers ([`Switch::bond_tick`]) and read `show bond` / `show lacp`.
//!
//! Every mutating call checks everything first and changes nothing when it returns an error.

use serde::{Deserialize, Serialize};
use vecswitch_ports::LinkState;

use super::lacp::{self, LacpCounters, MuxState, RxState};
use super::{
    bond_input, bond_mac, bond_output, Bond, BondIdx, BondMode, BondSettings, HashPolicy, LacpPort,
    LacpRate, Member, MAX_MEMBERS, TICK_NS,
};
use crate::error::{list, SwitchError};
use crate::interface::{
    Interface, InterfaceCounters, InterfaceKind, Service, SwIfIdx, DEFAULT_MTU, INPUT_ARC, NO_PORT,
    OUTPUT_ARC,
};
use crate::runtime::Switch;
use crate::state::PortIdx;

/// A bond's kind in `show interfaces` (`{"type":"bond"}`).
pub const KIND: &str = "bond";

/// One member in `show bond`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BondMemberInfo {
    pub name: String,
    /// Link up and administratively up.
    pub usable: bool,
    /// Carries the bond's traffic now.
    pub active: bool,
    /// The LACP mux state (lacp mode).
    pub lacp_mux: Option<MuxState>,
    /// Frames received on the member and dropped because it does not collect.
    pub rx_not_collecting: u64,
}

/// One bond in `show bond`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BondInfo {
    pub name: String,
    /// The bond's interface index.
    pub index: SwIfIdx,
    pub mode: BondMode,
    pub hash: HashPolicy,
    pub lacp_rate: LacpRate,
    pub mac: String,
    pub members: Vec<BondMemberInfo>,
    /// Names of the members carrying traffic, in member order.
    pub active: Vec<String>,
    /// Times the set of active members changed.
    pub active_changes: u64,
    /// The bond interface's counters (received on any member and collected; handed to a member).
    pub counters: InterfaceCounters,
}

/// Actor or partner information in `show lacp`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LacpSideInfo {
    pub system_priority: u16,
    pub system: String,
    pub key: u16,
    pub port_priority: u16,
    pub port: u16,
    /// The state octet (IEEE 802.1AX-2014 §6.4.2.3).
    pub state: u8,
    /// The state flags by name.
    pub flags: Vec<String>,
}

impl From<&super::lacpdu::LacpInfo> for LacpSideInfo {
    fn from(i: &super::lacpdu::LacpInfo) -> Self {
        LacpSideInfo {
            system_priority: i.system_priority,
            system: i.system.to_string(),
            key: i.key,
            port_priority: i.port_priority,
            port: i.port,
            state: i.state.0,
            flags: i.state.names().into_iter().map(String::from).collect(),
        }
    }
}

/// One member port in `show lacp`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LacpMemberInfo {
    pub bond: String,
    pub member: String,
    pub actor: LacpSideInfo,
    pub partner: LacpSideInfo,
    pub rx_state: RxState,
    pub mux_state: MuxState,
    pub selected: bool,
    pub counters: LacpCounters,
}

impl Switch {
    fn bond_idx(&self, name: &str) -> Result<BondIdx, SwitchError> {
        self.state
            .bonds
            .bonds
            .iter()
            .position(|b| b.as_ref().is_some_and(|b| b.name == name))
            .map(|i| i as BondIdx)
            .ok_or_else(|| SwitchError::InvalidValue {
                field: "bond",
                value: format!("{name:?}"),
                accepted: "the name of an existing bond (see `show bond`)",
            })
    }

    fn bond_mut(&mut self, b: BondIdx) -> &mut Bond {
        self.state.bonds.bonds[b as usize]
            .as_mut()
            .expect("resolved bond index")
    }

    /// Creates bond `name` (a new interface, up, no members, no service) with `settings`. Returns
    /// its interface index.
    pub fn create_bond(
        &mut self,
        name: &str,
        settings: BondSettings,
    ) -> Result<SwIfIdx, SwitchError> {
        Self::check_name("bond", name)?;
        if self.state.interface_index(name).is_some() || self.state.port_index(name).is_some() {
            return Err(SwitchError::InvalidValue {
                field: "bond name",
                value: format!("{name:?}"),
                accepted: "a name no port, interface or bond has yet",
            });
        }
        let idx = self.state.free_interface()?;
        // `bond-output` sets a member as `tx_port` first; a frame that skipped it goes to no port.
        let iface = Interface::new(
            name,
            InterfaceKind::feature(KIND, None, None),
            NO_PORT,
            bond_mac(idx),
            DEFAULT_MTU,
        );
        let st = &mut self.state;
        st.put_interface(idx, iface);
        let bond = Bond {
            name: name.to_string(),
            iface: idx,
            settings,
            members: Vec::new(),
            active: Vec::new(),
            active_changes: 0,
        };
        let bonds = &mut st.bonds.bonds;
        match bonds.iter().position(Option::is_none) {
            Some(b) => bonds[b] = Some(bond),
            None => bonds.push(Some(bond)),
        }
        st.bonds.reindex();
        self.set_interface_feature(name, OUTPUT_ARC, bond_output::NAME, true)?;
        Ok(idx)
    }

    /// Deletes bond `name`: its members are released (back to plain ports with no service). Fails
    /// if the bond still has a service or another interface cross-connects to it.
    pub fn delete_bond(&mut self, name: &str) -> Result<(), SwitchError> {
        let b = self.bond_idx(name)?;
        let iface = self.bond_mut(b).iface;
        let mut users: Vec<String> = self
            .state
            .interfaces
            .iter()
            .flatten()
            .filter(|f| f.service == Service::Xconnect { to: iface })
            .map(|f| format!("the xconnect of `{}`", f.name))
            .collect();
        let own = self.iface(iface).service;
        if own != Service::None {
            users.push(format!("its own service ({})", self.describe_service(own)));
        }
        if !users.is_empty() {
            return Err(SwitchError::PortInUse {
                port: name.to_string(),
                users: users.join(", "),
            });
        }
        let members: Vec<SwIfIdx> = self.bond_mut(b).members.iter().map(|m| m.iface).collect();
        for m in members {
            // Members may be gone (deleted ports): ignore what is not there.
            let _ = self
                .graph
                .set_feature(INPUT_ARC, m, bond_input::NAME, false);
        }
        self.graph.clear_features(iface);
        self.state.interfaces[iface as usize] = None;
        self.state.bonds.bonds[b as usize] = None;
        self.state.bonds.reindex();
        Ok(())
    }

    /// Makes port `port` (its main interface, which must have no service and be in no bond) a
    /// member of bond `bond`.
    pub fn add_bond_member(&mut self, bond: &str, port: &str) -> Result<(), SwitchError> {
        let b = self.bond_idx(bond)?;
        let iface = self.iface_idx(port)?;
        let Some(p) = self.iface(iface).kind.main_port() else {
            return Err(SwitchError::InvalidValue {
                field: "bond member",
                value: format!("{port:?}"),
                accepted: "a port (its main interface), not a bond or sub-interface",
            });
        };
        if let Some((other, _)) = self.state.bonds.member(iface) {
            if other.name == bond {
                return Ok(());
            }
            return Err(SwitchError::PortHasService {
                port: port.to_string(),
                service: format!("member of bond `{}`", other.name),
            });
        }
        let s = self.iface(iface).service;
        if s != Service::None {
            return Err(SwitchError::PortHasService {
                port: port.to_string(),
                service: self.describe_service(s),
            });
        }
        if self.bond_mut(b).members.len() >= MAX_MEMBERS {
            return Err(SwitchError::TooMany {
                what: "bond members",
                max: MAX_MEMBERS,
            });
        }
        self.set_interface_feature(port, INPUT_ARC, bond_input::NAME, true)?;
        let now = self.now_ns();
        let bond = self.bond_mut(b);
        let lacp = (bond.settings.mode == BondMode::Lacp).then(|| {
            LacpPort::new(
                bond_mac(bond.iface),
                bond.key(),
                p.wrapping_add(1).max(1),
                bond.settings.lacp_rate,
            )
        });
        bond.members.push(Member {
            iface,
            port: p,
            usable: false,
            lacp,
            rx_not_collecting: 0,
        });
        self.state.bonds.reindex();
        self.bond_tick_at(now);
        Ok(())
    }

    /// Removes port `port` from bond `bond`.
    pub fn remove_bond_member(&mut self, bond: &str, port: &str) -> Result<(), SwitchError> {
        let b = self.bond_idx(bond)?;
        let iface = self.iface_idx(port)?;
        let Some(pos) = self
            .bond_mut(b)
            .members
            .iter()
            .position(|m| m.iface == iface)
        else {
            let members = self.bond_member_names(b);
            return Err(SwitchError::NotMember {
                port: port.to_string(),
                bridge: format!("bond {bond}"),
                members: list(&members),
            });
        };
        self.set_interface_feature(port, INPUT_ARC, bond_input::NAME, false)?;
        let bond = self.bond_mut(b);
        bond.members.remove(pos);
        bond.update_active();
        self.state.bonds.reindex();
        Ok(())
    }

    fn bond_member_names(&self, b: BondIdx) -> Vec<String> {
        self.state.bonds.bonds[b as usize]
            .as_ref()
            .map(|bond| {
                bond.members
                    .iter()
                    .map(|m| self.iface_name(m.iface))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The bond timers (the feature's `Feature::timers`, run by the worker after every poll): at
    /// most every [`TICK_NS`] of the switch clock, runs [`Switch::bond_tick_at`].
    pub fn bond_tick(&mut self) {
        if self.state.bonds.bonds.is_empty() {
            return;
        }
        let now = self.now_ns();
        if now >= self.state.bonds.last_tick_ns + TICK_NS {
            self.bond_tick_at(now);
        }
    }

    /// Runs the bond timers at switch time `now` (ns): forgets members whose port was deleted,
    /// reads each member's link and admin state, runs LACP (selection, timers, mux; sends the
    /// LACPDUs due straight to the member's port, counted on the member interface) and
    /// recomputes each bond's active members.
    pub fn bond_tick_at(&mut self, now: u64) {
        self.state.bonds.last_tick_ns = now;
        let mut frame_src = Vec::new();
        let mut reindex = false;
        for b in 0..self.state.bonds.bonds.len() {
            let Some(mut bond) = self.state.bonds.bonds[b].take() else {
                continue;
            };
            let before = bond.members.len();
            bond.members.retain(|m| {
                self.state
                    .interface(m.iface)
                    .is_some_and(|i| i.kind.main_port() == Some(m.port))
            });
            reindex |= bond.members.len() != before;
            for m in &mut bond.members {
                let up = self
                    .state
                    .port(m.port)
                    .is_some_and(|p| p.port.link() == LinkState::Up);
                let admin = self.state.interface(m.iface).is_some_and(|i| i.admin_up);
                m.usable = up && admin;
                if let Some(l) = m.lacp.as_mut() {
                    l.set_enabled(m.usable, now);
                }
            }
            if bond.settings.mode == BondMode::Lacp {
                let mut ports: Vec<&mut LacpPort> = bond
                    .members
                    .iter_mut()
                    .filter_map(|m| m.lacp.as_mut())
                    .collect();
                lacp::select(&mut ports);
                for m in &mut bond.members {
                    let Some(l) = m.lacp.as_mut() else { continue };
                    if l.step(now) {
                        let src = self.state.interface(m.iface).map(|i| i.mac);
                        frame_src.clear();
                        frame_src.extend_from_slice(
                            &l.lacpdu().build_frame(src.unwrap_or(bond_mac(bond.iface))),
                        );
                        let ok = self.send_raw(m.port, m.iface, &frame_src);
                        l.sent(now, ok);
                    }
                }
            }
            bond.update_active();
            self.state.bonds.bonds[b] = Some(bond);
        }
        if reindex {
            self.state.bonds.reindex();
        }
    }

    /// Sends `frame` out of port `port` directly (not through the graph), counted on interface
    /// `iface`; returns whether the port took it.
    fn send_raw(&mut self, port: PortIdx, iface: SwIfIdx, frame: &[u8]) -> bool {
        let Some(h) = self.pool.alloc() else {
            return false;
        };
        let sent = self.pool.write_packet(h, frame)
            && match self
                .state
                .ports
                .get_mut(port as usize)
                .and_then(Option::as_mut)
            {
                Some(slot) => {
                    if let Some(c) = slot.capture.as_mut() {
                        c.record(&self.pool, &[h]);
                    }
                    slot.port.tx_burst(&mut self.pool, &[h]) == 1
                }
                None => false,
            };
        // Ports copy what they send (as `interface-output` relies on): the buffer is ours again.
        self.pool.free(h);
        if sent {
            self.state.count_tx((iface, 1, frame.len() as u64));
        }
        sent
    }

    /// `show bond`.
    pub fn show_bond(&self) -> Vec<BondInfo> {
        self.state
            .bonds
            .bonds
            .iter()
            .flatten()
            .map(|b| BondInfo {
                name: b.name.clone(),
                index: b.iface,
                mode: b.settings.mode,
                hash: b.settings.hash,
                lacp_rate: b.settings.lacp_rate,
                mac: bond_mac(b.iface).to_string(),
                members: b
                    .members
                    .iter()
                    .map(|m| BondMemberInfo {
                        name: self.iface_name(m.iface),
                        usable: m.usable,
                        active: b.active.contains(&m.iface),
                        lacp_mux: m.lacp.as_ref().map(|l| l.mux),
                        rx_not_collecting: m.rx_not_collecting,
                    })
                    .collect(),
                active: b.active.iter().map(|&i| self.iface_name(i)).collect(),
                active_changes: b.active_changes,
                counters: self
                    .state
                    .interface(b.iface)
                    .map(|i| i.counters)
                    .unwrap_or_default(),
            })
            .collect()
    }

    /// `show lacp`: every member of every LACP bond.
    pub fn show_lacp(&self) -> Vec<LacpMemberInfo> {
        let mut out = Vec::new();
        for b in self.state.bonds.bonds.iter().flatten() {
            for m in &b.members {
                let Some(l) = m.lacp.as_ref() else { continue };
                out.push(LacpMemberInfo {
                    bond: b.name.clone(),
                    member: self.iface_name(m.iface),
                    actor: (&l.actor).into(),
                    partner: (&l.partner).into(),
                    rx_state: l.rx,
                    mux_state: l.mux,
                    selected: l.selected,
                    counters: l.counters,
                });
            }
        }
        out
    }
}
