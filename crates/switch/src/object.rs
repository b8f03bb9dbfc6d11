//! Config objects: the generic unit the control plane diffs and applies (issue 9 phase 2).
//!
//! A feature's config section (its serde type, e.g. [`crate::l2::config::BridgeConfig`]) expands
//! into [`ConfigObject`]s — one per thing the switch can add or remove on its own: a port, a
//! bridge-domain, one bridge member, one static MAC, one cross-connect direction. Each object has a
//! kind and a key (unique within the kind), a dependency rank and the keys of the objects it
//! depends on, and knows how to add itself to the switch, remove itself and (where the switch can)
//! change itself in place. The control plane (`crates/control`, `diff` and `apply`) works only on
//! this trait: it never matches on a feature.
//!
//! Rules the generic diff relies on:
//! - an object of rank `r` depends only on objects of a lower rank, so adding in rising rank order
//!   and removing in falling rank order is always legal;
//! - removing an object whose dependencies stay must leave them as they were (a bridge member's
//!   removal leaves the bridge and the port);
//! - [`ConfigObject::modify`] is called only when [`ConfigObject::modifiable_from`] said yes; the
//!   undo of `modify(old → new)` is `modify(new → old)`, of `add` is `remove`, of `remove` is `add`.
//!
//! Whole-config validation ([`Validation`]) is shared by the sections: every problem is collected
//! with the field path, the value and what would be accepted.

use std::any::Any;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

use vecswitch_ports::Port;

use crate::error::SwitchError;
use crate::runtime::Switch;

/// An object's identity: its kind (`port`, `bridge`, `bridge-member`, …) and its key within it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    pub kind: &'static str,
    pub key: String,
}

impl ObjectKey {
    pub fn new(kind: &'static str, key: impl Into<String>) -> ObjectKey {
        ObjectKey {
            kind,
            key: key.into(),
        }
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.kind, self.key)
    }
}

/// What an apply carries between steps: port objects opened before their turn, and ports a
/// removal took out of the switch (so that the undo puts back the same object, with its counters
/// and connection).
#[derive(Default)]
pub struct ApplyCx {
    /// Opened port backends by port name, waiting to be added.
    pub ports: HashMap<String, Box<dyn Port>>,
}

impl fmt::Debug for ApplyCx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApplyCx")
            .field("ports", &self.ports.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// A shared config object (changes hold them; they are immutable).
pub type Obj = Arc<dyn ConfigObject>;

/// One thing of the config the switch can add, remove and maybe change in place. See the module
/// doc for the rules.
pub trait ConfigObject: fmt::Debug + Send + Sync + Any {
    /// Its identity.
    fn key(&self) -> ObjectKey;
    /// Dependency rank: 0 for objects that depend on nothing (ports, bridge-domains have 1 so
    /// that ports come first), higher for objects that refer to lower ones.
    fn rank(&self) -> u8;
    /// The objects it refers to (they must exist while it does).
    fn depends_on(&self) -> Vec<ObjectKey>;
    /// Whether `self` can replace `old` (same key) in place with [`ConfigObject::modify`];
    /// otherwise the diff removes `old` and everything depending on it and adds them back.
    fn modifiable_from(&self, _old: &dyn ConfigObject) -> bool {
        false
    }
    /// Whether it equals `other` (same type and value).
    fn same(&self, other: &dyn ConfigObject) -> bool;
    /// For people: `add port v0 to bridge br0`, `delete bridge br0`, …
    fn describe_add(&self) -> String;
    fn describe_remove(&self) -> String;
    fn describe_modify(&self, _old: &dyn ConfigObject) -> String {
        format!("change {}", self.key())
    }
    fn add(&self, sw: &mut Switch, cx: &mut ApplyCx) -> Result<(), SwitchError>;
    fn remove(&self, sw: &mut Switch, cx: &mut ApplyCx) -> Result<(), SwitchError>;
    /// Changes `old` into `self` in place (only called when [`ConfigObject::modifiable_from`]).
    fn modify(
        &self,
        _old: &dyn ConfigObject,
        _sw: &mut Switch,
        _cx: &mut ApplyCx,
    ) -> Result<(), SwitchError> {
        Err(SwitchError::Feature {
            reason: format!("{} cannot be changed in place", self.key()),
        })
    }
    /// Itself as `Any`, for [`ConfigObject::same`] and for code that needs the concrete type.
    fn as_any(&self) -> &dyn Any;
}

/// [`ConfigObject::same`] for a type with `PartialEq`.
pub fn same_as<T: PartialEq + 'static>(me: &T, other: &dyn ConfigObject) -> bool {
    other.as_any().downcast_ref::<T>() == Some(me)
}

/// One problem in a config: where, the value as written, what would be accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationError {
    /// Where: `port[2].ring_size`, `bridge[0].static_mac[1].mac`, ...
    pub path: String,
    /// The offending value as written (strings quoted).
    pub value: String,
    /// What is wrong and what would be accepted.
    pub expected: String,
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} = {}: {}", self.path, self.value, self.expected)
    }
}

/// Whole-config validation state shared by the sections, in registration order: the errors found
/// so far, the interfaces defined (ports add theirs) and which service owns each interface's
/// receive side (`xconnect[0]`, `bridge[1]`).
#[derive(Debug, Default)]
pub struct Validation {
    pub errors: Vec<ValidationError>,
    /// Names of the valid, unique interfaces services may refer to.
    pub interfaces: HashSet<String>,
    /// Interface → the service that has it (`xconnect[0]`).
    pub owner: HashMap<String, String>,
    /// Port → whether its frames can be forwarded in the kernel (an offloaded `[[xconnect]]`):
    /// `None` if so, else why not (the port's type or mode, a sub-interface on it).
    pub kernel_redirect: HashMap<String, Option<String>>,
    /// Interface → what refers to it, for people (`a member of bridge "br0" (bridge[0].ports[0])`,
    /// `mtu[0].interface`), in config order: a `ctl` command that deletes an interface is refused
    /// while something uses it.
    pub users: HashMap<String, Vec<String>>,
}

impl Validation {
    /// Records a problem.
    pub fn push(&mut self, path: String, value: impl fmt::Display, expected: impl Into<String>) {
        self.errors.push(ValidationError {
            path,
            value: value.to_string(),
            expected: expected.into(),
        });
    }

    /// Checks that `name` (at `path`) names an interface; records the error if not (naming the
    /// interfaces there are), and the use ([`Validation::users`]) if so.
    pub fn check_interface_ref(&mut self, path: String, name: &str) -> bool {
        self.check_interface_use(path.clone(), name, path)
    }

    /// [`Validation::check_interface_ref`], recording the use as `what (path)` (`a member of
    /// bridge "br0" (bridge[0].ports[1])`).
    pub fn check_interface_use(
        &mut self,
        path: String,
        name: &str,
        what: impl fmt::Display,
    ) -> bool {
        if self.interfaces.contains(name) {
            let what = what.to_string();
            let used = if what == path {
                path
            } else {
                format!("{what} ({path})")
            };
            self.users.entry(name.to_string()).or_default().push(used);
            true
        } else {
            let known = self.interface_names();
            self.push(
                path,
                q(name),
                format!(
                    "the name of an interface (a port, a bond, a sub-interface); interfaces are: {known}"
                ),
            );
            false
        }
    }

    /// The interfaces defined so far, sorted, for messages (`lag0, p0, p1`; the first
    /// [`MAX_NAMES_LISTED`] and how many there are in all; `(none)`).
    pub fn interface_names(&self) -> String {
        let mut names: Vec<&str> = self.interfaces.iter().map(String::as_str).collect();
        names.sort_unstable();
        list_names(&names)
    }

    /// Gives `iface`'s receive side to `service`; records an error (at `path`) if another
    /// service has it.
    pub fn claim(&mut self, path: String, iface: &str, service: &str) {
        if let Some(other) = self.owner.get(iface) {
            let msg = format!("a port in no other service ({other} has it already)");
            self.push(path, q(iface), msg);
        } else {
            self.owner.insert(iface.to_string(), service.to_string());
        }
    }
}

/// A `ctl` edit command (a feature's words, e.g. `mtu p0 1500 check`) that could not be read: the
/// field, the value given and what is accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field} = {value:?}: {accepted}")]
pub struct EditError {
    pub field: &'static str,
    pub value: String,
    pub accepted: &'static str,
}

/// Serde for a MAC address as `aa:bb:cc:dd:ee:ff` text (crates/wire has no serde).
pub mod mac_text {
    use serde::{de, Deserialize, Deserializer, Serializer};
    use vecswitch_wire::EthernetAddress;

    pub fn serialize<S: Serializer>(m: &EthernetAddress, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(m)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<EthernetAddress, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(de::Error::custom)
    }
}

/// Most names a message lists ([`list_names`]).
pub const MAX_NAMES_LISTED: usize = 32;

/// Names for messages: `a, b`, at most [`MAX_NAMES_LISTED`] of them (`a, b, ... (40 in all)`), or
/// `(none)`.
pub fn list_names<S: AsRef<str>>(names: &[S]) -> String {
    if names.is_empty() {
        return "(none)".into();
    }
    let shown: Vec<&str> = names
        .iter()
        .take(MAX_NAMES_LISTED)
        .map(AsRef::as_ref)
        .collect();
    let mut s = shown.join(", ");
    if names.len() > MAX_NAMES_LISTED {
        s.push_str(&format!(", ... ({} in all)", names.len()));
    }
    s
}

/// A string as written in a config (quoted).
pub fn q(s: &str) -> String {
    format!("{s:?}")
}

/// Longest port or bridge-domain name.
pub const MAX_NAME_LEN: usize = 64;

/// Checks a name: 1..=64 characters from `A-Z a-z 0-9 - _ . / :`; the error is what is accepted.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > MAX_NAME_LEN {
        return Err(format!("a name of 1..={MAX_NAME_LEN} characters"));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_./:".contains(c))
    {
        return Err("letters, digits and - _ . / : only".to_string());
    }
    Ok(())
}
