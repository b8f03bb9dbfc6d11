//! The MTU feature: an output-arc feature that drops frames too big for their transmit interface.
//!
//! Off by default (the switch forwards every frame its ports deliver); enabled per interface with
//! [`Switch::set_mtu_check`]. It is also the worked example of a feature in docs/ARCHITECTURE.md:
//! this folder, one `pub mod` line in `lib.rs` and one line in `feature::FEATURES` are all it took.
//!
//! - Node: [`mtu_check`] (`mtu-check`), on the `interface-output` arc.
//! - Table: none of its own; it reads the interface's `mtu` (set with
//!   [`Switch::set_interface_mtu`]).
//! - Config: `[[mtu]]` ([`MtuConfig`]: interface, MTU, check on or off), its validation, its
//!   config object ([`MtuObj`]) and its `ctl` verb (`mtu IFACE BYTES [check|nocheck]`,
//!   [`edit`]), together the [`SECTION`]; bound to its `Config` field in
//!   `crates/control/src/sections.rs`.

pub mod mtu_check;

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use vecswitch_graph::{Graph, GraphError};

use crate::ctl::{Section, Verb};
use crate::error::SwitchError;
use crate::feature::{Feature, Stage};
use crate::interface::KIND_PORT;
use crate::interface::{DEFAULT_MTU, OUTPUT_ARC};
use crate::object::{q, same_as, ApplyCx, ConfigObject, EditError, Obj, ObjectKey, Validation};
use crate::runtime::Switch;
use crate::state::SwitchState;

pub use mtu_check::MtuCheck;

/// Position of `mtu-check` on the output arc (lower runs first).
pub const ORDER: u16 = 100;
/// Smallest MTU accepted (IPv4 requires 68 bytes, RFC 791 §3.2 "Fragmentation and reassembly").
pub const MIN_MTU: u16 = 68;

/// The MTU feature as registered in the graph.
#[derive(Debug, Clone, Copy)]
pub struct MtuFeature;

impl Feature for MtuFeature {
    fn name(&self) -> &'static str {
        "mtu"
    }

    fn register(&self, graph: &mut Graph<SwitchState>, stage: Stage) -> Result<(), GraphError> {
        if stage == Stage::Output {
            graph.add(Box::new(MtuCheck));
            graph.add_feature(OUTPUT_ARC, mtu_check::NAME, ORDER)?;
        }
        Ok(())
    }
}

impl Switch {
    /// Turns the MTU check on or off for frames sent on interface `iface`.
    pub fn set_mtu_check(&mut self, iface: &str, on: bool) -> Result<(), SwitchError> {
        self.set_interface_feature(iface, OUTPUT_ARC, mtu_check::NAME, on)
    }

    /// Sets interface `iface`'s MTU (largest L3 payload, bytes; checked only where the MTU check
    /// is on).
    pub fn set_interface_mtu(&mut self, iface: &str, mtu: u16) -> Result<(), SwitchError> {
        let idx = self.iface_idx(iface)?;
        if mtu < MIN_MTU {
            return Err(SwitchError::InvalidValue {
                field: "mtu",
                value: mtu.to_string(),
                accepted: "68 to 65535 bytes (68: the IPv4 minimum, RFC 791)",
            });
        }
        self.iface_mut(idx).mtu = mtu;
        Ok(())
    }
}

/// `[[mtu]]`: the MTU of one interface and whether `mtu-check` is on for it.
///
/// ```toml
/// [[mtu]]
/// interface = "p0"
/// mtu = 1500
/// check = true
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MtuConfig {
    /// The interface (a port's name).
    pub interface: String,
    /// Largest L3 payload, bytes, 68..=65535.
    #[serde(default = "default_mtu")]
    pub mtu: u16,
    /// Drop frames sent on the interface whose L3 payload exceeds `mtu` (`mtu-check`).
    #[serde(default)]
    pub check: bool,
}

fn default_mtu() -> u16 {
    DEFAULT_MTU
}

/// Validates `[[mtu]]`: a defined interface, listed once, an MTU the switch accepts.
pub fn validate(items: &[MtuConfig], v: &mut Validation) {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (i, m) in items.iter().enumerate() {
        let path = format!("mtu[{i}]");
        if v.check_interface_ref(format!("{path}.interface"), &m.interface) {
            if let Some(first) = seen.insert(m.interface.as_str(), i) {
                v.push(
                    format!("{path}.interface"),
                    q(&m.interface),
                    format!("an interface listed once (mtu[{first}] has it)"),
                );
            }
        }
        if m.mtu < MIN_MTU {
            v.push(
                format!("{path}.mtu"),
                m.mtu,
                "68 to 65535 bytes (68: the IPv4 minimum, RFC 791)",
            );
        }
    }
}

/// The objects of `[[mtu]]`: one per interface.
pub fn objects(items: &[MtuConfig], out: &mut Vec<Obj>) {
    for m in items {
        out.push(Arc::new(MtuObj(m.clone())));
    }
}

/// `[[mtu]]` and its `ctl` verb `mtu IFACE BYTES [check|nocheck]` / `mtu IFACE default`,
/// bound to the config in `crates/control/src/sections.rs` (see [`crate::ctl`]).
pub const SECTION: Section<Vec<MtuConfig>> = Section {
    key: "mtu",
    validate: |m, v| validate(m, v),
    objects: |m, o| objects(m, o),
    verbs: &[Verb {
        names: &["mtu"],
        usage: "IFACE BYTES [check|nocheck] | mtu IFACE default",
        help: "sets an interface's MTU and turns mtu-check on or off on it (`default`: 9000, off)",
        apply: edit,
    }],
};

/// Applies the words of `ctl mtu ...` (after `mtu`) to the `[[mtu]]` section.
pub fn edit(items: &mut Vec<MtuConfig>, words: &[String]) -> Result<(), EditError> {
    let bad = |field: &'static str, value: &str, accepted: &'static str| EditError {
        field,
        value: value.to_string(),
        accepted,
    };
    let (iface, rest) = words
        .split_first()
        .ok_or_else(|| bad("IFACE", "", "an interface name, then BYTES or `default`"))?;
    if rest == ["default"] {
        items.retain(|m| m.interface != *iface);
        return Ok(());
    }
    let (bytes, rest) = rest
        .split_first()
        .ok_or_else(|| bad("BYTES", "", "the MTU in bytes, 68..=65535, or `default`"))?;
    let mtu: u16 = bytes
        .parse()
        .map_err(|_| bad("BYTES", bytes, "the MTU in bytes, 68..=65535, or `default`"))?;
    let check = match rest {
        [] => None,
        [w] if w == "check" => Some(true),
        [w] if w == "nocheck" => Some(false),
        [w, ..] => return Err(bad("check", w, "`check`, `nocheck` or nothing")),
    };
    match items.iter_mut().find(|m| m.interface == *iface) {
        Some(m) => {
            m.mtu = mtu;
            if let Some(c) = check {
                m.check = c;
            }
        }
        None => items.push(MtuConfig {
            interface: iface.clone(),
            mtu,
            check: check.unwrap_or(false),
        }),
    }
    Ok(())
}

/// One interface's MTU settings as a config object (rank 1: on its port; changed in place).
/// Removing it puts the interface back to the default MTU with the check off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MtuObj(pub MtuConfig);

impl MtuObj {
    fn set(sw: &mut Switch, iface: &str, mtu: u16, check: bool) -> Result<(), SwitchError> {
        sw.set_interface_mtu(iface, mtu)?;
        sw.set_mtu_check(iface, check)
    }
}

impl ConfigObject for MtuObj {
    fn key(&self) -> ObjectKey {
        ObjectKey::new("mtu", &self.0.interface)
    }
    fn rank(&self) -> u8 {
        1
    }
    fn depends_on(&self) -> Vec<ObjectKey> {
        vec![ObjectKey::new(KIND_PORT, &self.0.interface)]
    }
    fn modifiable_from(&self, _old: &dyn ConfigObject) -> bool {
        true
    }
    fn same(&self, other: &dyn ConfigObject) -> bool {
        same_as(self, other)
    }
    fn describe_add(&self) -> String {
        format!(
            "set mtu {} on {}{}",
            self.0.mtu,
            self.0.interface,
            if self.0.check { " (checked)" } else { "" }
        )
    }
    fn describe_remove(&self) -> String {
        format!("set mtu {DEFAULT_MTU} (default) on {}", self.0.interface)
    }
    fn describe_modify(&self, _old: &dyn ConfigObject) -> String {
        self.describe_add()
    }
    fn add(&self, sw: &mut Switch, _cx: &mut ApplyCx) -> Result<(), SwitchError> {
        Self::set(sw, &self.0.interface, self.0.mtu, self.0.check)
    }
    fn remove(&self, sw: &mut Switch, _cx: &mut ApplyCx) -> Result<(), SwitchError> {
        Self::set(sw, &self.0.interface, DEFAULT_MTU, false)
    }
    fn modify(
        &self,
        _old: &dyn ConfigObject,
        sw: &mut Switch,
        cx: &mut ApplyCx,
    ) -> Result<(), SwitchError> {
        self.add(sw, cx)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
