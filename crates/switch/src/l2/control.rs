//! The L2 feature's control API: methods of [`Switch`] on the L2 tables — bridge domains and their
//! members, cross-connects, static MAC entries, `show bridges` and `show mac` (paged: the counts
//! and one page of entries, never a million lines — issue 10). Services attach to interfaces (a
//! port's main interface is named as the port). Every mutating call checks everything first and
//! changes nothing when it returns an error.

use serde::{Deserialize, Serialize};

use super::{format_mac, is_group, Bridge, BridgeSettings};
use crate::error::{list, SwitchError};
use crate::interface::{InterfaceKind, Service, SwIfIdx};
use crate::runtime::Switch;
use crate::state::BdIdx;

/// Most bridge domains (indices are `u16`; one value is kept free).
const MAX_BRIDGES: usize = u16::MAX as usize - 1;

/// Entries in a page of `show mac` when no limit is given (as `show nat44 sessions`).
pub const MAC_DEFAULT_LIMIT: usize = 1000;
/// Most entries in one page of `show mac` (as `show ip fib`).
pub const MAC_MAX_PAGE: usize = 10_000;

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

/// `show mac [BRIDGE] [OFFSET] [LIMIT]`: how many entries there are, and one page of them in
/// (bridge, MAC) order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MacTableInfo {
    /// The bridge shown; none: every bridge.
    pub bridge: Option<String>,
    /// Entries in the MAC table, every bridge.
    pub total: usize,
    /// Entries of the bridge shown (every bridge: `total`), learned and static.
    pub matched: usize,
    pub learned: usize,
    pub statics: usize,
    /// Index among the matched entries of the first entry shown.
    pub offset: usize,
    pub entries: Vec<MacEntry>,
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

    /// Hands the xconnect of `port` to the kernel (`on`) or takes it back: `port`'s backend sends
    /// what its interface receives straight out of the interface of the xconnect's target
    /// (the backend's [`vecswitch_ports::KernelRedirect`], `Port::kernel_redirect`; an `af_xdp` port in native mode). Both
    /// ends must be ports' main interfaces. On error nothing changed.
    pub fn set_xconnect_offload(&mut self, port: &str, on: bool) -> Result<(), SwitchError> {
        let a = self.iface_idx(port)?;
        let to = match self.iface(a).service {
            Service::Xconnect { to } => to,
            s => {
                return Err(SwitchError::NotXconnect {
                    port: port.to_string(),
                    service: self.describe_service(s),
                })
            }
        };
        let err = |reason: String| SwitchError::Offload {
            port: port.to_string(),
            reason,
        };
        let main_port = |i: SwIfIdx| match self.iface(i).kind {
            InterfaceKind::Main { port } => Some(port),
            _ => None,
        };
        let (Some(pa), Some(pb)) = (main_port(a), main_port(to)) else {
            return Err(err(
                "both ends must be whole ports, not sub-interfaces".into()
            ));
        };
        let target = if on {
            let slot = self.state.ports[pb as usize]
                .as_mut()
                .expect("a main interface has its port");
            let target = slot
                .port
                .kernel_redirect()
                .and_then(|k| k.redirect_target());
            Some(target.ok_or_else(|| {
                err(format!(
                    "port `{}` cannot receive frames redirected in the kernel (an af_xdp port in native XDP mode can)",
                    slot.name
                ))
            })?)
        } else {
            None
        };
        let slot = self.state.ports[pa as usize]
            .as_mut()
            .expect("a main interface has its port");
        match (slot.port.kernel_redirect(), target) {
            (Some(k), _) => k.set_redirect(target).map_err(|e| err(e.to_string())),
            (None, None) => Ok(()),
            (None, Some(_)) => Err(err(
                "this port type cannot forward in the kernel (only af_xdp)".into(),
            )),
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

    /// The MAC table's memory: its size and whether it is on huge pages (`l2::mac_table`).
    pub fn mac_table_memory(&self) -> vecswitch_buffer::huge::Memory {
        self.state.macs.memory()
    }

    /// Every entry of one bridge, or of all, in (bridge, MAC) order (tests, small tables; `show
    /// mac` pages: [`Switch::show_mac_page`]).
    pub fn show_mac(&self, bridge: Option<&str>) -> Result<Vec<MacEntry>, SwitchError> {
        let bd = bridge.map(|b| self.bridge_idx(b)).transpose()?;
        Ok(self.mac_page(bd, 0, usize::MAX))
    }

    /// `show mac [BRIDGE] [OFFSET] [LIMIT]`: the counts, then `limit` (≤ [`MAC_MAX_PAGE`])
    /// entries from `offset` in (bridge, MAC) order.
    pub fn show_mac_page(
        &self,
        bridge: Option<&str>,
        offset: usize,
        limit: usize,
    ) -> Result<MacTableInfo, SwitchError> {
        if limit > MAC_MAX_PAGE {
            return Err(SwitchError::InvalidValue {
                field: "LIMIT",
                value: limit.to_string(),
                accepted: "at most 10000 entries per page",
            });
        }
        let bd = bridge.map(|b| self.bridge_idx(b)).transpose()?;
        let macs = &self.state.macs;
        let bds: Vec<BdIdx> = match bd {
            Some(b) => vec![b],
            None => (0..self.state.bridges.len() as BdIdx).collect(),
        };
        let learned: usize = bds.iter().map(|&b| macs.learned_count(b) as usize).sum();
        let statics: usize = bds.iter().map(|&b| macs.static_count(b) as usize).sum();
        Ok(MacTableInfo {
            bridge: bridge.map(str::to_string),
            total: macs.len(),
            matched: learned + statics,
            learned,
            statics,
            offset,
            entries: self.mac_page(bd, offset, limit),
        })
    }

    /// Entries `offset..offset + limit` of bridge `bd` (every bridge: `None`) in (bridge name,
    /// MAC) order, without building or sorting a million of them: one u64 key per entry (the
    /// bridge's rank by name above the 48-bit MAC), the first `offset + limit` keys selected in
    /// O(n) and only those sorted; the page's entries are then looked up.
    fn mac_page(&self, bd: Option<BdIdx>, offset: usize, limit: usize) -> Vec<MacEntry> {
        let mut by_name: Vec<(&str, usize)> = self
            .state
            .bridges
            .iter()
            .enumerate()
            .filter_map(|(i, b)| b.as_ref().map(|b| (b.name.as_str(), i)))
            .collect();
        by_name.sort_unstable();
        let mut rank = vec![0u64; self.state.bridges.len()];
        for (r, &(_, i)) in by_name.iter().enumerate() {
            rank[i] = r as u64;
        }
        let key = |bd: BdIdx, mac: &[u8; 6]| {
            let m = u64::from_be_bytes([0, 0, mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]]);
            (rank[bd as usize] << 48) | m
        };
        // Every entry's bridge exists (deleting a bridge flushes its entries).
        let mut keys: Vec<u64> = self
            .state
            .macs
            .iter(bd)
            .filter(|e| (e.bd as usize) < rank.len())
            .map(|e| key(e.bd, &e.mac))
            .collect();
        let end = offset.saturating_add(limit).min(keys.len());
        if offset >= end {
            return Vec::new();
        }
        if end < keys.len() {
            keys.select_nth_unstable(end - 1);
            keys.truncate(end);
        }
        keys.sort_unstable();
        let now_s = (self.now_ns() / 1_000_000_000) as u32;
        keys[offset..]
            .iter()
            .filter_map(|&k| {
                let b = k.to_be_bytes();
                let mac = [b[2], b[3], b[4], b[5], b[6], b[7]];
                let bd = by_name[(k >> 48) as usize].1 as BdIdx;
                let e = self.state.macs.get(bd, &mac)?;
                Some(MacEntry {
                    bridge: self.bridge_name(e.bd),
                    mac: format_mac(&e.mac),
                    port: self.iface_name(e.port),
                    is_static: e.is_static,
                    age_s: now_s.saturating_sub(e.last_seen_s),
                })
            })
            .collect()
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

    /// `show mac` at scale (issue 10): 120,000 static MACs in two bridges; the answer holds the
    /// counts and one page, in (bridge name, MAC) order, at any offset.
    #[test]
    fn show_mac_pages_a_large_table_with_its_counts() {
        const N: u32 = 120_000;
        let mut sw = Switch::new(SwitchConfig {
            buffers: 256,
            mac_table_entries: 2 * N as usize,
            ..Default::default()
        });
        let mut peers = Vec::new();
        for name in ["p0", "p1"] {
            let (a, b) = pair(name, "peer");
            sw.add_port(name, Box::new(a)).unwrap();
            peers.push(b);
        }
        // "zz" gets index 0, "10" index 1: name order puts "10" first.
        sw.add_bridge("zz", BridgeSettings::default()).unwrap();
        sw.add_bridge("10", BridgeSettings::default()).unwrap();
        sw.add_bridge_member("zz", "p0").unwrap();
        sw.add_bridge_member("10", "p1").unwrap();
        let mac = |i: u32| {
            let b = i.to_be_bytes();
            [2, 0x5c, b[0], b[1], b[2], b[3]]
        };
        // Added in a scrambled order; "10" gets the odd ones, "zz" the even ones.
        for k in 0..N {
            // A permutation of 0..N (the multiplier is prime to N).
            let i = (u64::from(k) * 2_654_435_761 % u64::from(N)) as u32;
            let (bridge, port) = if i % 2 == 1 {
                ("10", "p1")
            } else {
                ("zz", "p0")
            };
            sw.add_static_mac(bridge, mac(i), port).unwrap();
        }
        let name = |i: u32| crate::l2::format_mac(&mac(i));
        let all = sw.show_mac_page(None, 0, 1000).unwrap();
        assert_eq!(
            (all.total, all.matched, all.statics, all.learned),
            (N as usize, N as usize, N as usize, 0)
        );
        assert_eq!(all.entries.len(), 1000);
        assert!(all.entries.iter().all(|e| e.bridge == "10" && e.is_static));
        let want: Vec<String> = (0..1000).map(|k| name(2 * k + 1)).collect();
        let got: Vec<String> = all.entries.iter().map(|e| e.mac.clone()).collect();
        assert_eq!(got, want);
        // Across the bridge boundary: the last 3 of "10", then the first 2 of "zz".
        let half = (N / 2) as usize;
        let mid = sw.show_mac_page(None, half - 3, 5).unwrap();
        let got: Vec<(String, String)> = mid
            .entries
            .iter()
            .map(|e| (e.bridge.clone(), e.mac.clone()))
            .collect();
        let want = vec![
            ("10".to_string(), name(N - 5)),
            ("10".to_string(), name(N - 3)),
            ("10".to_string(), name(N - 1)),
            ("zz".to_string(), name(0)),
            ("zz".to_string(), name(2)),
        ];
        assert_eq!(got, want);
        // One bridge, a page at its end, a page past it.
        let zz = sw.show_mac_page(Some("zz"), half - 10, 1000).unwrap();
        assert_eq!(
            (zz.matched, zz.total, zz.entries.len()),
            (half, N as usize, 10)
        );
        assert_eq!(zz.entries.last().unwrap().mac, name(N - 2));
        assert!(sw
            .show_mac_page(Some("zz"), half, 10)
            .unwrap()
            .entries
            .is_empty());
        // A page is at most 10,000 entries, and `show mac` by its words: a bridge named by
        // digits is the bridge, a number that is not a bridge is the offset.
        let e = sw.show_mac_page(None, 0, 10_001).unwrap_err().to_string();
        assert!(e.contains("LIMIT") && e.contains("10001"), "{e}");
        let show = crate::ctl::find_show("mac").unwrap();
        let words = |w: &[&str]| -> Vec<String> { w.iter().map(|s| s.to_string()).collect() };
        let v = show.answer(&sw, &words(&["10", "5", "20"])).unwrap();
        let page: super::MacTableInfo = serde_json::from_value(v).unwrap();
        assert_eq!((page.bridge.as_deref(), page.matched), (Some("10"), half));
        assert_eq!((page.offset, page.entries.len()), (5, 20));
        let v = show.answer(&sw, &words(&["7"])).unwrap();
        let page: super::MacTableInfo = serde_json::from_value(v).unwrap();
        assert_eq!((page.bridge.as_deref(), page.offset), (None, 7));
        assert_eq!(page.entries.len(), super::MAC_DEFAULT_LIMIT);
        let text = (show.render)(&serde_json::to_value(&page).unwrap()).unwrap();
        assert_eq!(
            text.lines().next().unwrap(),
            format!(
                "{N} MACs in every bridge (0 learned, {N} static; {N} in the table), showing 1000 from 7"
            )
        );
        assert_eq!(text.lines().count(), 2 + super::MAC_DEFAULT_LIMIT);
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
