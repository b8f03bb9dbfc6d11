//! The VLAN feature's control API: methods of [`Switch`] that add and delete sub-interfaces, set
//! their tag rewrite and list them. Every call checks everything first and changes nothing when it
//! returns an error.

use serde::{Deserialize, Serialize};

use super::{vlan_output, Duplicate, Encap, SubIf, SubInterfaceConfig, TagRewrite, Vtr};
use crate::error::SwitchError;
use crate::interface::{InlineEgress, Interface, InterfaceKind, Service, SwIfIdx, OUTPUT_ARC};
use crate::runtime::Switch;

/// A sub-interface's kind in `show interfaces` (`{"type":"sub","parent":0,"id":7}`).
pub const KIND: &str = "sub";

/// What a pop beyond the encap's tags is told (VPP: `VNET_API_ERROR_INVALID_VLAN_TAG_COUNT`).
const POP_ACCEPTED: &str = "a rewrite that pops at most the tags the encap gives values for: `pop 1` and `translate 1-N` need `dot1q|dot1ad N` (with or without an inner tag), `pop 2` and `translate 2-N` need `dot1q|dot1ad N inner-dot1q M`; `default`, `untagged` and `inner-dot1q any` inner tags cannot be popped";

/// One line of `show subinterfaces`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubInterfaceInfo {
    pub index: SwIfIdx,
    pub name: String,
    pub parent: String,
    pub id: u32,
    pub encap: String,
    pub tag_rewrite: String,
    pub admin_up: bool,
    /// `none`, `xconnect to X`, `member of bridge B`.
    pub service: String,
    /// Frames classified to it (counted by `ethernet-input`, before the rewrite).
    pub rx_packets: u64,
    pub rx_bytes: u64,
    /// Frames it handed to its parent (counted by `vlan-output`, or inline by `interface-output`,
    /// after the rewrite).
    pub tx_packets: u64,
    pub tx_bytes: u64,
}

/// Checks that `rewrite` pops no more tags than `encap` has values for.
pub fn check_rewrite(encap: &Encap, rewrite: &TagRewrite) -> Result<(), SwitchError> {
    if rewrite.pops() > encap.exact_tags() {
        return Err(SwitchError::InvalidValue {
            field: "tag-rewrite",
            value: format!("`{rewrite}` on a sub-interface with encap `{encap}`"),
            accepted: POP_ACCEPTED,
        });
    }
    Ok(())
}

impl Switch {
    /// Adds sub-interface `<parent>.<id>` (administratively up, no service, the parent's MAC and
    /// MTU). Refused, changing nothing: an unknown parent, a parent that is itself a
    /// sub-interface, a name already taken, an encap another sub-interface of the parent already
    /// matches, a rewrite that pops beyond the encap. Returns its interface index.
    pub fn add_subinterface(&mut self, cfg: &SubInterfaceConfig) -> Result<SwIfIdx, SwitchError> {
        let parent = self.iface_idx(&cfg.parent)?;
        if self.iface(parent).kind.name() == KIND {
            return Err(SwitchError::InvalidValue {
                field: "parent",
                value: cfg.parent.clone(),
                accepted: "a port (or bond), not a sub-interface",
            });
        }
        let name = cfg.name();
        Self::check_name("sub-interface", &name)?;
        if self.state.interface_index(&name).is_some() {
            return Err(SwitchError::PortExists { name });
        }
        check_rewrite(&cfg.encap, &cfg.tag_rewrite)?;
        let mut table = self
            .state
            .subifs
            .parent(parent)
            .cloned()
            .unwrap_or_default();
        let idx = self.state.free_interface()?;
        if let Err(Duplicate { existing }) = table.insert(idx, cfg.encap.matching()) {
            return Err(SwitchError::InvalidValue {
                field: "encap",
                value: format!(
                    "`{}` on `{}` (sub-interface `{}` already matches it)",
                    cfg.encap,
                    cfg.parent,
                    self.iface_name(existing)
                ),
                accepted: "one sub-interface per match on a parent",
            });
        }

        // Checked: now change.
        let p = self.iface(parent);
        // The egress (`vlan-output` on the arc, or inline in `interface-output`) moves a
        // sub-interface's frames to its parent; a frame that skipped it would leave by the parent
        // (a main parent's index is its port's).
        let iface = Interface::new(
            &name,
            InterfaceKind::feature(KIND, Some(parent), Some(cfg.id)),
            parent,
            p.mac,
            p.mtu,
        );
        let st = &mut self.state;
        st.put_interface(idx, iface);
        let idx = idx as usize;
        if st.vlan.subs.len() <= idx {
            st.vlan.subs.resize_with(idx + 1, || None);
        }
        st.vlan.subs[idx] = Some(SubIf {
            parent,
            id: cfg.id,
            encap: cfg.encap,
            rewrite: cfg.tag_rewrite,
            ingress: Vtr::ingress(&cfg.tag_rewrite),
            egress: Vtr::egress(&cfg.encap, &cfg.tag_rewrite),
        });
        st.subifs
            .set_ingress(idx as SwIfIdx, Vtr::ingress(&cfg.tag_rewrite));
        // `ethernet-input` classifies the parent's frames by this table from now on.
        super::rebuild(st, parent, &cfg.parent);
        self.place_vlan_output(idx as SwIfIdx)?;
        Ok(idx as SwIfIdx)
    }

    /// Deletes sub-interface `name`, which must have no service (leave its bridge or remove its
    /// cross-connect first) and be no cross-connect's destination.
    pub fn delete_subinterface(&mut self, name: &str) -> Result<(), SwitchError> {
        let idx = self.sub_idx(name)?;
        let service = self.iface(idx).service;
        let mut users: Vec<String> = self
            .state
            .interfaces
            .iter()
            .flatten()
            .filter(|i| i.service == Service::Xconnect { to: idx })
            .map(|i| format!("xconnect from `{}`", i.name))
            .collect();
        if service != Service::None {
            users.insert(
                0,
                format!("its own service ({})", self.describe_service(service)),
            );
        }
        if !users.is_empty() {
            return Err(SwitchError::PortInUse {
                port: name.to_string(),
                users: users.join(", "),
            });
        }
        let parent = self.state.vlan.subs[idx as usize]
            .as_ref()
            .map(|s| s.parent)
            .expect("a sub-interface has settings");
        self.graph
            .set_feature(OUTPUT_ARC, idx, vlan_output::NAME, false)
            .map_err(|e| SwitchError::Feature {
                reason: e.to_string(),
            })?;
        // The parent as the table knows it (it may have been deleted since).
        let pname = self
            .state
            .subifs
            .parent(parent)
            .map(|t| t.parent_name.clone())
            .unwrap_or_default();
        let st = &mut self.state;
        st.interfaces[idx as usize] = None;
        st.vlan.subs[idx as usize] = None;
        st.subifs.set_ingress(idx, Vtr::NONE);
        super::rebuild(st, parent, &pname);
        Ok(())
    }

    /// Sets sub-interface `name`'s tag rewrite (its egress inverse follows). Refused, changing
    /// nothing, when it pops beyond the encap.
    pub fn set_tag_rewrite(&mut self, name: &str, rewrite: TagRewrite) -> Result<(), SwitchError> {
        let idx = self.sub_idx(name)?;
        let sub = self.state.vlan.subs[idx as usize]
            .as_mut()
            .expect("a sub-interface has settings");
        check_rewrite(&sub.encap, &rewrite)?;
        sub.rewrite = rewrite;
        sub.ingress = Vtr::ingress(&rewrite);
        sub.egress = Vtr::egress(&sub.encap, &rewrite);
        let ingress = sub.ingress;
        self.state.subifs.set_ingress(idx, ingress);
        Ok(())
    }

    /// `show subinterfaces`: every sub-interface with its parent, encap, rewrite, state, service
    /// and counters.
    pub fn show_subinterfaces(&self) -> Vec<SubInterfaceInfo> {
        self.state
            .vlan
            .subs
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                Some((
                    i as SwIfIdx,
                    s.as_ref()?,
                    self.state.interface(i as SwIfIdx)?,
                ))
            })
            .map(|(i, s, f)| SubInterfaceInfo {
                index: i,
                name: f.name.clone(),
                parent: self.iface_name(s.parent),
                id: s.id,
                encap: s.encap.to_string(),
                tag_rewrite: s.rewrite.to_string(),
                admin_up: f.admin_up,
                service: self.describe_service(f.service),
                rx_packets: f.counters.rx_packets,
                rx_bytes: f.counters.rx_bytes,
                tx_packets: f.counters.tx_packets,
                tx_bytes: f.counters.tx_bytes,
            })
            .collect()
    }

    /// Sets sub-interface `name` administratively up or down (down: what it receives is dropped
    /// by `ethernet-input` as `admin-down`, nothing is sent on it).
    pub fn set_subinterface_admin(&mut self, name: &str, up: bool) -> Result<(), SwitchError> {
        let idx = self.sub_idx(name)?;
        self.iface_mut(idx).admin_up = up;
        Ok(())
    }

    /// Puts `vlan-output` on sub-interface `sub`'s output arc, or takes it off, by what else is
    /// on the arc: it is there when another output feature is on the sub-interface or on its
    /// parent, so that the frame meets them in arc order (the rewrite first, then the parent's
    /// features: `bond-output` for a sub-interface over a bond, `mtu-check`, NAT); otherwise
    /// `interface-output` does the same work inline, without the node and its two arc crossings:
    /// the sub-interface's [`InlineEgress`] is `vlan_output::inline`, whose refused frames go to
    /// `vlan-output` ([`super::VlanFeature`]'s `inline_egress_node`) to be dropped by name.
    /// Exactly one of the two is set.
    pub(crate) fn place_vlan_output(&mut self, sub: SwIfIdx) -> Result<(), SwitchError> {
        let Some(s) = self.state.vlan.sub(sub) else {
            return Ok(());
        };
        let others = self
            .graph
            .enabled_features(OUTPUT_ARC, sub)
            .iter()
            .any(|&f| f != vlan_output::NAME)
            || !self.graph.enabled_features(OUTPUT_ARC, s.parent).is_empty();
        let inline = if others {
            None
        } else {
            Some(InlineEgress::new(vlan_output::inline, vlan_output::NAME)?)
        };
        self.graph
            .set_feature(OUTPUT_ARC, sub, vlan_output::NAME, others)
            .map_err(|e| SwitchError::Feature {
                reason: e.to_string(),
            })?;
        self.iface_mut(sub).inline_egress = inline;
        Ok(())
    }

    /// After a change of interface `iface`'s output arc: places `vlan-output` again on `iface`
    /// if it is a sub-interface, or on the sub-interfaces over it.
    pub(crate) fn vlan_output_arc_changed(&mut self, iface: SwIfIdx) -> Result<(), SwitchError> {
        if self.state.vlan.sub(iface).is_some() {
            return self.place_vlan_output(iface);
        }
        let subs: Vec<SwIfIdx> = (0..self.state.vlan.subs.len() as SwIfIdx)
            .filter(|&i| self.state.vlan.sub(i).is_some_and(|s| s.parent == iface))
            .collect();
        for s in subs {
            self.place_vlan_output(s)?;
        }
        Ok(())
    }

    /// The sub-interface called `name`.
    fn sub_idx(&self, name: &str) -> Result<SwIfIdx, SwitchError> {
        let known = || {
            let names: Vec<String> = self
                .show_subinterfaces()
                .into_iter()
                .map(|s| s.name)
                .collect();
            crate::error::list(&names)
        };
        match self.state.interface_index(name) {
            Some(i) if self.state.vlan.sub(i).is_some() => Ok(i),
            _ => Err(SwitchError::InvalidValue {
                field: "sub-interface",
                value: format!("`{name}` (sub-interfaces are: {})", known()),
                accepted: "the name of a sub-interface, `<parent>.<id>`",
            }),
        }
    }
}
