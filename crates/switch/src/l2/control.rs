//! The L2 feature's control API: methods of [`Switch`] on the L2 tables — bridge domains and their
//! members, cross-connects, static MAC entries, `show bridges` and `show mac`. Services attach to
//! interfaces (a port's main interface is named as the port). Every mutating call checks everything
//! first and changes nothing when it returns an error.

use serde::{Deserialize, Serialize};

use super::{format_mac, is_group, Bridge, BridgeSettings};
use crate::error::{list, SwitchError};
use crate::interface::{Service, SwIfIdx};
use crate::runtime::Switch;
use crate::state::BdIdx;

/// Most bridge domains (indices are `u16`; one value is kept free).
const MAX_BRIDGES: usize = u16::MAX as usize - 1;

/// One bridge of `show bridges`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MacEntry {
    pub bridge: String,
    pub mac: String,
    pub port: String,
    #[serde(rename = "static")]
    pub is_static: bool,
    /// Seconds since the station was last seen (since it was added, for a static entry).
    pub age_s: u32,
}

impl Switch {
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
            self.iface_mut(m).service = Service::None;
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
        let idx = self.iface_idx(port)?;
        match self.iface(idx).service {
            Service::None => {}
            Service::Bridge { bd: b } if b == bd => return Ok(()),
            s => {
                return Err(SwitchError::PortHasService {
                    port: port.to_string(),
                    service: self.describe_service(s),
                })
            }
        }
        self.iface_mut(idx).service = Service::Bridge { bd };
        if let Some(b) = self.state.bridges[bd as usize].as_mut() {
            b.members.push(idx);
        }
        Ok(())
    }

    /// Removes `port` from `bridge`, flushing the bridge's MAC entries on it (static ones too).
    pub fn remove_bridge_member(&mut self, bridge: &str, port: &str) -> Result<(), SwitchError> {
        let bd = self.bridge_idx(bridge)?;
        let idx = self.iface_idx(port)?;
        if self.iface(idx).service != (Service::Bridge { bd }) {
            return Err(self.not_member(bd, port, bridge));
        }
        self.detach_member(bd, idx);
        Ok(())
    }

    /// [`Switch::remove_bridge_member`] for a configuration change: the learned entries it flushes
    /// are held until the end of the current control call, so that the change's undo
    /// ([`Switch::add_bridge_member_restoring`]) can put them back — a failed reload leaves the MAC
    /// table as it was (issue 14 item 3). Static entries are config objects of their own and come
    /// back by their own undo.
    pub fn remove_bridge_member_held(
        &mut self,
        bridge: &str,
        port: &str,
    ) -> Result<(), SwitchError> {
        let bd = self.bridge_idx(bridge)?;
        let idx = self.iface_idx(port)?;
        let polls = self.show_runtime().loop_stats.polls;
        let keep: Vec<_> = self
            .state
            .macs
            .entries(Some(bd))
            .into_iter()
            .filter(|e| e.port == idx && !e.is_static)
            .map(|e| (bridge.to_string(), port.to_string(), e.mac, e.last_seen_s))
            .collect();
        self.remove_bridge_member(bridge, port)?;
        let held = &mut self.state.macs.held;
        if held.polls != polls {
            held.entries.clear();
            held.polls = polls;
        }
        held.entries.extend(keep);
        Ok(())
    }

    /// [`Switch::add_bridge_member`], then the learned entries
    /// [`Switch::remove_bridge_member_held`] flushed for this bridge and interface in the same
    /// control call are learned again with their last-seen times (within the bridge's MAC limit).
    pub fn add_bridge_member_restoring(
        &mut self,
        bridge: &str,
        port: &str,
    ) -> Result<(), SwitchError> {
        self.add_bridge_member(bridge, port)?;
        let polls = self.show_runtime().loop_stats.polls;
        let bd = self.bridge_idx(bridge)?;
        let idx = self.iface_idx(port)?;
        let limit = self.state.bridge(bd).map_or(0, |b| b.settings.mac_limit);
        let macs = &mut self.state.macs;
        if macs.held.polls != polls {
            macs.held.entries.clear();
            return Ok(());
        }
        let mut back = Vec::new();
        macs.held.entries.retain(|(b, p, mac, seen)| {
            let mine = b == bridge && p == port;
            if mine {
                back.push((*mac, *seen));
            }
            !mine
        });
        for (mac, seen) in back {
            macs.learn(bd, &mac, idx, seen, limit);
        }
        Ok(())
    }

    pub(crate) fn not_member(&self, bd: BdIdx, port: &str, bridge: &str) -> SwitchError {
        let members: Vec<String> = self
            .state
            .bridge(bd)
            .map(|b| b.members.iter().map(|&m| self.iface_name(m)).collect())
            .unwrap_or_default();
        SwitchError::NotMember {
            port: port.to_string(),
            bridge: bridge.to_string(),
            members: list(&members),
        }
    }

    pub(crate) fn detach_member(&mut self, bd: BdIdx, idx: SwIfIdx) {
        if let Some(b) = self.state.bridges[bd as usize].as_mut() {
            b.members.retain(|&m| m != idx);
        }
        self.state.macs.flush(bd, Some(idx), true);
        self.iface_mut(idx).service = Service::None;
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
                members: b.members.iter().map(|&m| self.iface_name(m)).collect(),
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
        let a = self.iface_idx(port_a)?;
        let b = self.iface_idx(port_b)?;
        if a == b {
            return Err(SwitchError::XconnectToSelf {
                port: port_a.to_string(),
            });
        }
        match self.iface(a).service {
            Service::None | Service::Xconnect { .. } => {}
            s => {
                return Err(SwitchError::PortHasService {
                    port: port_a.to_string(),
                    service: self.describe_service(s),
                })
            }
        }
        self.iface_mut(a).service = Service::Xconnect { to: b };
        Ok(())
    }

    /// Removes the xconnect of `port`.
    pub fn delete_xconnect(&mut self, port: &str) -> Result<(), SwitchError> {
        let a = self.iface_idx(port)?;
        match self.iface(a).service {
            Service::Xconnect { .. } => {
                self.iface_mut(a).service = Service::None;
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
        let idx = self.iface_idx(port)?;
        if self.iface(idx).service != (Service::Bridge { bd }) {
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
        let idx = port.map(|p| self.iface_idx(p)).transpose()?;
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
                port: self.iface_name(e.port),
                is_static: e.is_static,
                age_s: now_s.saturating_sub(e.last_seen_s),
            })
            .collect();
        out.sort_by(|a, b| (&a.bridge, &a.mac).cmp(&(&b.bridge, &b.mac)));
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use crate::{BridgeSettings, Switch, SwitchConfig};
    use vecswitch_buffer::Pool;
    use vecswitch_ports::loopback::{packet_from_bytes, pair};
    use vecswitch_ports::Port;

    fn frame(src: u8) -> Vec<u8> {
        let mut f = vec![0u8; 60];
        f[..6].copy_from_slice(&[0xff; 6]);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, src]);
        f[12..14].copy_from_slice(&[0x08, 0]);
        f
    }

    fn macs(sw: &Switch) -> Vec<(String, String, bool)> {
        let mut v: Vec<_> = sw
            .show_mac(None)
            .unwrap()
            .into_iter()
            .map(|m| (m.mac, m.port, m.is_static))
            .collect();
        v.sort();
        v
    }

    /// Learned entries flushed by a member's removal come back when the same control call (poll
    /// iteration) adds the member again (an undo), and never in a later one.
    #[test]
    fn a_members_learned_entries_come_back_only_within_the_same_call() {
        let mut sw = Switch::new(SwitchConfig {
            buffers: 256,
            mac_table_entries: 1024,
            ..Default::default()
        });
        let mut peers = Vec::new();
        for name in ["p0", "p1"] {
            let (a, b) = pair(name, "peer");
            sw.add_port(name, Box::new(a)).unwrap();
            peers.push(b);
        }
        sw.add_bridge("br0", BridgeSettings::default()).unwrap();
        sw.add_bridge_member("br0", "p0").unwrap();
        sw.add_bridge_member("br0", "p1").unwrap();
        sw.add_static_mac("br0", [2, 0, 0, 0, 0, 0x50], "p1")
            .unwrap();
        let mut tp = Pool::new(64);
        for (i, src) in [(0, 1u8), (0, 2), (1, 3)] {
            let h = packet_from_bytes(&mut tp, &frame(src)).unwrap();
            assert_eq!(peers[i].tx_burst(&mut tp, &[h]), 1);
            tp.free(h);
        }
        while sw.poll_once() > 0 {}
        let before = macs(&sw);
        assert_eq!(before.len(), 4, "{before:?}");

        sw.remove_bridge_member_held("br0", "p0").unwrap();
        assert_eq!(macs(&sw).len(), 2, "p0's two learned entries flushed");
        sw.add_bridge_member_restoring("br0", "p0").unwrap();
        assert_eq!(macs(&sw), before, "restored in the same call");

        sw.remove_bridge_member_held("br0", "p0").unwrap();
        sw.poll_once();
        sw.add_bridge_member_restoring("br0", "p0").unwrap();
        assert_eq!(macs(&sw).len(), 2, "a later re-add learns afresh");
    }
}
