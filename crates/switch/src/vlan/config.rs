//! `[[subinterface]]`: the config section of VLAN sub-interfaces — whole-config validation and the
//! config objects the control plane diffs and applies (`crate::object`).
//!
//! ```toml
//! [[subinterface]]
//! parent = "uni0"          # a port
//! id = 10                  # the sub-interface is `uni0.10`
//! encap = "dot1q 10 exact-match"
//! tag-rewrite = "push dot1ad 300"   # optional, `disable` by default
//! ```
//!
//! A sub-interface is an interface services refer to by name, so its object has the kind of ports
//! (`interface::KIND_PORT`): a bridge member or cross-connect on it depends on it, and re-creating
//! it (a new encap) detaches and re-attaches them. A changed `tag-rewrite` alone is changed in
//! place.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::control::check_rewrite;
use super::{Duplicate, ParentTable, SubInterfaceConfig};
use crate::error::SwitchError;
use crate::interface::KIND_PORT;
use crate::object::{q, same_as, ApplyCx, ConfigObject, Obj, ObjectKey, Validation};
use crate::runtime::Switch;

/// Checks every `[[subinterface]]` against the ports already validated (in `v.interfaces`) and
/// against each other; adds the valid ones to `v.interfaces` so that services may use them.
pub fn validate_subinterfaces(subs: &[SubInterfaceConfig], v: &mut Validation) {
    let ports: HashSet<String> = v.interfaces.clone();
    let mut names: HashMap<String, usize> = HashMap::new();
    let mut tables: HashMap<&str, ParentTable> = HashMap::new();
    for (i, s) in subs.iter().enumerate() {
        let path = |f: &str| format!("subinterface[{i}].{f}");
        let mut ok = true;
        if !ports.contains(&s.parent) {
            v.push(
                path("parent"),
                q(&s.parent),
                "the name of a port defined in [[port]] (a sub-interface is not a parent)",
            );
            ok = false;
        }
        let name = s.name();
        if let Some(&other) = names.get(&name) {
            v.push(
                path("id"),
                s.id,
                format!(
                    "an id no other sub-interface of {} has (subinterface[{other}] is `{name}`)",
                    q(&s.parent)
                ),
            );
            ok = false;
        }
        if let Err(SwitchError::InvalidValue { accepted, .. }) =
            check_rewrite(&s.encap, &s.tag_rewrite)
        {
            v.push(
                path("tag-rewrite"),
                q(&s.tag_rewrite.to_string()),
                format!("with encap `{}`: {accepted}", s.encap),
            );
            ok = false;
        }
        let table = tables.entry(s.parent.as_str()).or_default();
        if let Err(Duplicate { existing }) = table.insert(i as u16, s.encap.matching()) {
            v.push(
                path("encap"),
                q(&s.encap.to_string()),
                format!(
                    "a match no other sub-interface of {} has (subinterface[{existing}] has it)",
                    q(&s.parent)
                ),
            );
            ok = false;
        }
        if ok {
            // Frames of the parent's VLANs need the graph: its xconnect stays in the switch.
            if let Some(e @ None) = v.kernel_redirect.get_mut(&s.parent) {
                *e = Some(format!(
                    "it has sub-interface `{name}` (VLAN classification needs the switch's graph)"
                ));
            }
            names.insert(name.clone(), i);
            v.interfaces.insert(name);
        }
    }
}

/// The objects of `[[subinterface]]`: one per sub-interface.
pub fn subinterface_objects(subs: &[SubInterfaceConfig], out: &mut Vec<Obj>) {
    for s in subs {
        out.push(Arc::new(SubInterfaceObj(s.clone())));
    }
}

/// One sub-interface as a config object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubInterfaceObj(pub SubInterfaceConfig);

impl ConfigObject for SubInterfaceObj {
    fn key(&self) -> ObjectKey {
        ObjectKey::new(KIND_PORT, self.0.name())
    }
    fn rank(&self) -> u8 {
        1
    }
    fn depends_on(&self) -> Vec<ObjectKey> {
        vec![ObjectKey::new(KIND_PORT, &self.0.parent)]
    }
    fn modifiable_from(&self, old: &dyn ConfigObject) -> bool {
        old.as_any()
            .downcast_ref::<SubInterfaceObj>()
            .is_some_and(|o| {
                o.0.parent == self.0.parent && o.0.id == self.0.id && o.0.encap == self.0.encap
            })
    }
    fn same(&self, other: &dyn ConfigObject) -> bool {
        same_as(self, other)
    }
    fn describe_add(&self) -> String {
        format!(
            "add sub-interface {} ({}, tag-rewrite {})",
            self.0.name(),
            self.0.encap,
            self.0.tag_rewrite
        )
    }
    fn describe_remove(&self) -> String {
        format!("delete sub-interface {}", self.0.name())
    }
    fn describe_modify(&self, _old: &dyn ConfigObject) -> String {
        format!(
            "set tag-rewrite of {} to {}",
            self.0.name(),
            self.0.tag_rewrite
        )
    }
    fn add(&self, sw: &mut Switch, _cx: &mut ApplyCx) -> Result<(), SwitchError> {
        sw.add_subinterface(&self.0).map(|_| ())
    }
    fn remove(&self, sw: &mut Switch, _cx: &mut ApplyCx) -> Result<(), SwitchError> {
        sw.delete_subinterface(&self.0.name())
    }
    fn modify(
        &self,
        _old: &dyn ConfigObject,
        sw: &mut Switch,
        _cx: &mut ApplyCx,
    ) -> Result<(), SwitchError> {
        sw.set_tag_rewrite(&self.0.name(), self.0.tag_rewrite)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
