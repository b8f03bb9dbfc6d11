//! The L2 feature's config: the serde types *are* the config (`[[xconnect]]`, `[[bridge]]`,
//! `[[bridge.static_mac]]` in the TOML file, the same keys in control requests), their
//! whole-config validation, and the [`ConfigObject`]s they expand into for the control plane's
//! generic diff/apply:
//!
//! | object | key | rank | depends on | in place |
//! |---|---|---|---|---|
//! | [`BridgeObj`] | name | 1 | — | settings ([`Switch::set_bridge_settings`]) |
//! | [`MemberObj`] | `bridge port` | 2 | bridge, port | — |
//! | [`StaticMacObj`] | `bridge mac` | 3 | the member | — |
//! | [`XconnectObj`] | receive port | 4 | both ports | — |
//!
//! (Ports, rank 0, are the control plane's own objects: they need a backend opened.)

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use vecswitch_wire::EthernetAddress;

use super::{BridgeSettings, DEFAULT_MAC_AGE_S, DEFAULT_MAC_LIMIT};
use crate::error::SwitchError;
use crate::interface::KIND_PORT;
use crate::object::{
    check_name, mac_text, q, same_as, ApplyCx, ConfigObject, Obj, ObjectKey, Validation,
};
use crate::runtime::Switch;

/// Accepted `mac_limit` values.
pub const MAC_LIMIT_RANGE: std::ops::RangeInclusive<u32> = 1..=16_777_216;

fn default_true() -> bool {
    true
}
fn is_true(b: &bool) -> bool {
    *b
}
fn default_mac_age() -> u32 {
    DEFAULT_MAC_AGE_S
}
fn default_mac_limit() -> u32 {
    DEFAULT_MAC_LIMIT
}

/// Where a cross-connect's frames are forwarded (`offload` in `[[xconnect]]`, docs/CONTROL.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum XconnectOffload {
    /// By the switch's graph (every feature, capture and counter of the switch applies).
    #[default]
    None,
    /// In the kernel: each port's XDP program redirects what its interface receives to the other
    /// port's interface (two `af_xdp` ports in native mode, whole ports; the frames skip the
    /// graph: no capture, no features, counted by the program and the kernel).
    Xdp,
}

impl XconnectOffload {
    fn is_none(&self) -> bool {
        *self == XconnectOffload::None
    }
}

impl std::fmt::Display for XconnectOffload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            XconnectOffload::None => "none",
            XconnectOffload::Xdp => "xdp",
        })
    }
}

/// `[[xconnect]]`: an E-Line. Either `ports = [A, B]` (A→B, and B→A unless `bidirectional = false`)
/// or `from = A` / `to = B` for one direction; `offload = "xdp"` forwards it in the kernel.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct XconnectConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ports: Option<Vec<String>>,
    #[serde(default = "default_true", skip_serializing_if = "is_true")]
    pub bidirectional: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// `"none"` (default) or `"xdp"` ([`XconnectOffload`]).
    #[serde(default, skip_serializing_if = "XconnectOffload::is_none")]
    pub offload: XconnectOffload,
}

impl XconnectConfig {
    /// A one-direction cross-connect `from` → `to`.
    pub fn one_way(from: &str, to: &str) -> XconnectConfig {
        XconnectConfig {
            ports: None,
            bidirectional: true,
            from: Some(from.to_string()),
            to: Some(to.to_string()),
            offload: XconnectOffload::None,
        }
    }

    /// Both directions between `a` and `b` (`ports = [a, b]`).
    pub fn both(a: &str, b: &str) -> XconnectConfig {
        XconnectConfig {
            ports: Some(vec![a.to_string(), b.to_string()]),
            bidirectional: true,
            from: None,
            to: None,
            offload: XconnectOffload::None,
        }
    }

    /// The directed (from, to) pairs this entry asks for. Meaningful after validation; entries
    /// that are malformed yield what can be read from them.
    pub fn directions(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        if let Some(p) = &self.ports {
            if p.len() == 2 {
                out.push((p[0].clone(), p[1].clone()));
                if self.bidirectional {
                    out.push((p[1].clone(), p[0].clone()));
                }
            }
        } else if let (Some(f), Some(t)) = (&self.from, &self.to) {
            out.push((f.clone(), t.clone()));
        }
        out
    }
}

/// `[[bridge]]`: an E-LAN bridge-domain with MAC learning.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BridgeConfig {
    pub name: String,
    /// Member ports.
    #[serde(default)]
    pub ports: Vec<String>,
    /// Learn source MACs.
    #[serde(default = "default_true")]
    pub learn: bool,
    /// Forward known unicast by the MAC table; when false every frame is dropped after learning.
    #[serde(default = "default_true")]
    pub forward: bool,
    /// Flood broadcast and multicast frames to all members.
    #[serde(default = "default_true")]
    pub flood: bool,
    /// Flood frames whose destination MAC is unknown (unknown-unicast flooding).
    #[serde(default = "default_true")]
    pub uu_flood: bool,
    /// Seconds after which a learned MAC not seen again is removed; 0 = never.
    #[serde(default = "default_mac_age")]
    pub mac_age: u32,
    /// Most learned MAC entries the bridge-domain holds (static entries do not count).
    #[serde(default = "default_mac_limit")]
    pub mac_limit: u32,
    /// Static MAC entries (`[[bridge.static_mac]]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub static_mac: Vec<StaticMacConfig>,
}

impl BridgeConfig {
    /// A bridge-domain with default settings and no members.
    pub fn new(name: &str) -> BridgeConfig {
        BridgeConfig {
            name: name.to_string(),
            ports: Vec::new(),
            learn: true,
            forward: true,
            flood: true,
            uu_flood: true,
            mac_age: DEFAULT_MAC_AGE_S,
            mac_limit: DEFAULT_MAC_LIMIT,
            static_mac: Vec::new(),
        }
    }

    /// The bridge-domain's own settings (not members, not static MACs) as the switch holds them.
    pub fn settings(&self) -> BridgeSettings {
        BridgeSettings {
            learn: self.learn,
            forward: self.forward,
            flood: self.flood,
            uu_flood: self.uu_flood,
            mac_age_s: self.mac_age,
            mac_limit: self.mac_limit,
        }
    }
}

/// `[[bridge.static_mac]]`: a MAC address pinned to a member port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StaticMacConfig {
    #[serde(with = "mac_text")]
    pub mac: EthernetAddress,
    pub port: String,
}

/// Validates `[[xconnect]]` (after the ports: references are checked against
/// [`Validation::interfaces`]).
pub fn validate_xconnects(xs: &[XconnectConfig], v: &mut Validation) {
    for (i, x) in xs.iter().enumerate() {
        let svc = format!("xconnect[{i}]");
        let pairs: Vec<(String, String, String)> = match (&x.ports, &x.from, &x.to) {
            (Some(p), None, None) => {
                if p.len() != 2 {
                    v.push(
                        format!("{svc}.ports"),
                        format!("{p:?}"),
                        "exactly two port names",
                    );
                    continue;
                }
                let mut pairs = vec![(format!("{svc}.ports[0]"), p[0].clone(), p[1].clone())];
                if x.bidirectional {
                    pairs.push((format!("{svc}.ports[1]"), p[1].clone(), p[0].clone()));
                }
                let ok0 =
                    v.check_interface_use(format!("{svc}.ports[0]"), &p[0], "cross-connected");
                let ok1 =
                    v.check_interface_use(format!("{svc}.ports[1]"), &p[1], "cross-connected");
                if !(ok0 && ok1) {
                    continue;
                }
                pairs
            }
            (None, Some(f), Some(t)) => {
                if !x.bidirectional {
                    v.push(
                        format!("{svc}.bidirectional"),
                        "false",
                        "only with `ports = [A, B]`; from/to is one direction already",
                    );
                }
                let okf = v.check_interface_use(format!("{svc}.from"), f, "cross-connected");
                let okt = v.check_interface_use(format!("{svc}.to"), t, "cross-connected");
                if !(okf && okt) {
                    continue;
                }
                vec![(format!("{svc}.from"), f.clone(), t.clone())]
            }
            _ => {
                v.push(
                    svc.clone(),
                    format!(
                        "{{ports: {:?}, from: {:?}, to: {:?}}}",
                        x.ports.as_deref().unwrap_or(&[]),
                        x.from.as_deref().unwrap_or(""),
                        x.to.as_deref().unwrap_or("")
                    ),
                    "either `ports = [A, B]` or both `from` and `to`",
                );
                continue;
            }
        };
        let mut checked = HashSet::new();
        for (path, from, to) in pairs {
            if from == to {
                v.push(
                    path.clone(),
                    q(&from),
                    "two different ports (a port cannot be cross-connected to itself)",
                );
                continue;
            }
            if x.offload == XconnectOffload::Xdp {
                for port in [&from, &to] {
                    if !checked.insert(port.clone()) {
                        continue;
                    }
                    let why = match v.kernel_redirect.get(port.as_str()) {
                        Some(None) => continue,
                        Some(Some(why)) => format!("`{port}`: {why}"),
                        None => format!(
                            "`{port}` is not a whole port (a sub-interface's VLAN matching and \
                             tag rewrite need the switch's graph)"
                        ),
                    };
                    v.push(
                        format!("{svc}.offload"),
                        q("xdp"),
                        format!(
                            "\"xdp\" only between two whole, admin-up af_xdp ports in native XDP mode; {why}; \
                             accepted: \"none\" or \"xdp\""
                        ),
                    );
                }
            }
            v.claim(path, &from, &svc);
        }
    }
}

/// Validates `[[bridge]]` with members and static MACs.
pub fn validate_bridges(bs: &[BridgeConfig], v: &mut Validation) {
    let mut names: HashMap<&str, usize> = HashMap::new();
    for (i, b) in bs.iter().enumerate() {
        let svc = format!("bridge[{i}]");
        if let Err(why) = check_name(&b.name) {
            v.push(format!("{svc}.name"), q(&b.name), why);
        } else if let Some(first) = names.insert(b.name.as_str(), i) {
            v.push(
                format!("{svc}.name"),
                q(&b.name),
                format!("a unique name (bridge[{first}] has it already)"),
            );
        }
        if !MAC_LIMIT_RANGE.contains(&b.mac_limit) {
            v.push(
                format!("{svc}.mac_limit"),
                b.mac_limit,
                format!("a limit in {MAC_LIMIT_RANGE:?}"),
            );
        }
        let mut members = HashSet::new();
        for (j, p) in b.ports.iter().enumerate() {
            let path = format!("{svc}.ports[{j}]");
            if !v.check_interface_use(
                path.clone(),
                p,
                format_args!("a member of bridge {:?}", b.name),
            ) {
                continue;
            }
            if !members.insert(p.as_str()) {
                v.push(path, q(p), "each member listed once");
                continue;
            }
            v.claim(path, p, &svc);
        }
        let mut macs: HashMap<EthernetAddress, usize> = HashMap::new();
        for (j, s) in b.static_mac.iter().enumerate() {
            let path = format!("{svc}.static_mac[{j}]");
            if s.mac.is_multicast() {
                v.push(
                    format!("{path}.mac"),
                    q(&s.mac.to_string()),
                    "a unicast MAC (a static entry cannot be broadcast or multicast)",
                );
            } else if let Some(first) = macs.insert(s.mac, j) {
                v.push(
                    format!("{path}.mac"),
                    q(&s.mac.to_string()),
                    format!(
                        "a MAC not already static in this bridge ({svc}.static_mac[{first}] has it)"
                    ),
                );
            }
            if !members.contains(s.port.as_str()) {
                v.push(
                    format!("{path}.port"),
                    q(&s.port),
                    format!("a member port of bridge {:?}", b.name),
                );
            }
        }
    }
}

/// The objects of `[[xconnect]]`: one per direction.
pub fn xconnect_objects(xs: &[XconnectConfig], out: &mut Vec<Obj>) {
    for x in xs {
        for (from, to) in x.directions() {
            out.push(Arc::new(XconnectObj {
                from,
                to,
                offload: x.offload,
            }));
        }
    }
}

/// The objects of `[[bridge]]`: the bridge, its members, its static MACs.
pub fn bridge_objects(bs: &[BridgeConfig], out: &mut Vec<Obj>) {
    for b in bs {
        out.push(Arc::new(BridgeObj {
            name: b.name.clone(),
            settings: b.settings(),
        }));
        for p in &b.ports {
            out.push(Arc::new(MemberObj {
                bridge: b.name.clone(),
                port: p.clone(),
            }));
        }
        for s in &b.static_mac {
            out.push(Arc::new(StaticMacObj {
                bridge: b.name.clone(),
                mac: s.mac,
                port: s.port.clone(),
            }));
        }
    }
}

/// Object kinds of this feature.
pub const KIND_BRIDGE: &str = "bridge";
pub const KIND_MEMBER: &str = "bridge-member";
pub const KIND_STATIC_MAC: &str = "static-mac";
pub const KIND_XCONNECT: &str = "xconnect";

/// A bridge-domain and its settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BridgeObj {
    pub name: String,
    pub settings: BridgeSettings,
}

impl ConfigObject for BridgeObj {
    fn key(&self) -> ObjectKey {
        ObjectKey::new(KIND_BRIDGE, &self.name)
    }
    fn rank(&self) -> u8 {
        1
    }
    fn depends_on(&self) -> Vec<ObjectKey> {
        Vec::new()
    }
    fn modifiable_from(&self, _old: &dyn ConfigObject) -> bool {
        true
    }
    fn same(&self, other: &dyn ConfigObject) -> bool {
        same_as(self, other)
    }
    fn describe_add(&self) -> String {
        format!("add bridge {}", self.name)
    }
    fn describe_remove(&self) -> String {
        format!("delete bridge {}", self.name)
    }
    fn describe_modify(&self, _old: &dyn ConfigObject) -> String {
        format!("change settings of bridge {}", self.name)
    }
    fn add(&self, sw: &mut Switch, _cx: &mut ApplyCx) -> Result<(), SwitchError> {
        sw.add_bridge(&self.name, self.settings).map(|_| ())
    }
    fn remove(&self, sw: &mut Switch, _cx: &mut ApplyCx) -> Result<(), SwitchError> {
        sw.delete_bridge(&self.name)
    }
    fn modify(
        &self,
        _old: &dyn ConfigObject,
        sw: &mut Switch,
        _cx: &mut ApplyCx,
    ) -> Result<(), SwitchError> {
        sw.set_bridge_settings(&self.name, self.settings)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// One member of a bridge-domain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberObj {
    pub bridge: String,
    pub port: String,
}

impl ConfigObject for MemberObj {
    fn key(&self) -> ObjectKey {
        ObjectKey::new(KIND_MEMBER, format!("{} {}", self.bridge, self.port))
    }
    fn rank(&self) -> u8 {
        2
    }
    fn depends_on(&self) -> Vec<ObjectKey> {
        vec![
            ObjectKey::new(KIND_BRIDGE, &self.bridge),
            ObjectKey::new(KIND_PORT, &self.port),
        ]
    }
    fn same(&self, other: &dyn ConfigObject) -> bool {
        same_as(self, other)
    }
    fn describe_add(&self) -> String {
        format!("add port {} to bridge {}", self.port, self.bridge)
    }
    fn describe_remove(&self) -> String {
        format!("remove port {} from bridge {}", self.port, self.bridge)
    }
    /// Adds the member; learned entries its removal flushed earlier in the same control call (an
    /// undo) come back.
    fn add(&self, sw: &mut Switch, _cx: &mut ApplyCx) -> Result<(), SwitchError> {
        sw.add_bridge_member_restoring(&self.bridge, &self.port)
    }
    /// Removes the member, holding its learned entries for an undo in the same control call.
    fn remove(&self, sw: &mut Switch, _cx: &mut ApplyCx) -> Result<(), SwitchError> {
        sw.remove_bridge_member_held(&self.bridge, &self.port)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// A static MAC entry of a bridge-domain, behind one of its members.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaticMacObj {
    pub bridge: String,
    pub mac: EthernetAddress,
    pub port: String,
}

impl ConfigObject for StaticMacObj {
    fn key(&self) -> ObjectKey {
        ObjectKey::new(KIND_STATIC_MAC, format!("{} {}", self.bridge, self.mac))
    }
    fn rank(&self) -> u8 {
        3
    }
    fn depends_on(&self) -> Vec<ObjectKey> {
        vec![ObjectKey::new(
            KIND_MEMBER,
            format!("{} {}", self.bridge, self.port),
        )]
    }
    fn same(&self, other: &dyn ConfigObject) -> bool {
        same_as(self, other)
    }
    fn describe_add(&self) -> String {
        format!(
            "add static mac {} -> {} in bridge {}",
            self.mac, self.port, self.bridge
        )
    }
    fn describe_remove(&self) -> String {
        format!("remove static mac {} from bridge {}", self.mac, self.bridge)
    }
    fn add(&self, sw: &mut Switch, _cx: &mut ApplyCx) -> Result<(), SwitchError> {
        sw.add_static_mac(&self.bridge, self.mac.0, &self.port)
    }
    fn remove(&self, sw: &mut Switch, _cx: &mut ApplyCx) -> Result<(), SwitchError> {
        sw.delete_static_mac(&self.bridge, self.mac.0)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// One direction of a cross-connect: what `from` receives is sent out of `to` (by the graph, or
/// by `from`'s XDP program with `offload = Xdp`). A change of `offload` re-creates the object:
/// removal turns the kernel's redirect off, the add turns it on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XconnectObj {
    pub from: String,
    pub to: String,
    pub offload: XconnectOffload,
}

impl ConfigObject for XconnectObj {
    fn key(&self) -> ObjectKey {
        ObjectKey::new(KIND_XCONNECT, &self.from)
    }
    fn rank(&self) -> u8 {
        4
    }
    fn depends_on(&self) -> Vec<ObjectKey> {
        vec![
            ObjectKey::new(KIND_PORT, &self.from),
            ObjectKey::new(KIND_PORT, &self.to),
        ]
    }
    fn same(&self, other: &dyn ConfigObject) -> bool {
        same_as(self, other)
    }
    fn describe_add(&self) -> String {
        format!(
            "add xconnect {} -> {}{}",
            self.from,
            self.to,
            if self.offload.is_none() {
                ""
            } else {
                " offload xdp"
            }
        )
    }
    fn describe_remove(&self) -> String {
        format!(
            "remove xconnect {} -> {}{}",
            self.from,
            self.to,
            if self.offload.is_none() {
                ""
            } else {
                " offload xdp"
            }
        )
    }
    fn add(&self, sw: &mut Switch, _cx: &mut ApplyCx) -> Result<(), SwitchError> {
        sw.add_xconnect(&self.from, &self.to)?;
        if self.offload == XconnectOffload::Xdp {
            if let Err(e) = sw.set_xconnect_offload(&self.from, true) {
                // All or nothing: the xconnect goes again.
                let _ = sw.delete_xconnect(&self.from);
                return Err(e);
            }
        }
        Ok(())
    }
    fn remove(&self, sw: &mut Switch, _cx: &mut ApplyCx) -> Result<(), SwitchError> {
        if self.offload == XconnectOffload::Xdp {
            sw.set_xconnect_offload(&self.from, false)?;
        }
        sw.delete_xconnect(&self.from)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
