//! The registration list of config sections: each `[[section]]` of the config names its
//! validation and the [`ConfigObject`](vecswitch_switch::object::ConfigObject)s it expands into.
//! [`crate::validate::validate`] runs every section's validation in this order (ports first: the
//! services refer to them); [`crate::diff::diff`] diffs the objects of all sections together. A
//! feature adds its section with one entry here and one field in [`Config`].

use crate::config::Config;
use crate::ports;
use vecswitch_switch::l2::config as l2;
use vecswitch_switch::object::{Obj, Validation};
use vecswitch_switch::vlan::config as vlan;

/// One config section.
#[derive(Debug, Clone, Copy)]
pub struct Section {
    /// The TOML key (`[[port]]`).
    pub key: &'static str,
    /// Whole-config validation of the section (errors into the [`Validation`]).
    pub validate: fn(&Config, &mut Validation),
    /// The section's config objects.
    pub objects: fn(&Config, &mut Vec<Obj>),
}

/// Every section, in validation order.
pub const SECTIONS: &[Section] = &[
    Section {
        key: "port",
        validate: |c, v| ports::validate_ports(&c.ports, v),
        objects: |c, o| ports::port_objects(&c.ports, o),
    },
    Section {
        key: "subinterface",
        validate: |c, v| vlan::validate_subinterfaces(&c.subinterfaces, v),
        objects: |c, o| vlan::subinterface_objects(&c.subinterfaces, o),
    },
    Section {
        key: "xconnect",
        validate: |c, v| l2::validate_xconnects(&c.xconnects, v),
        objects: |c, o| l2::xconnect_objects(&c.xconnects, o),
    },
    Section {
        key: "bridge",
        validate: |c, v| l2::validate_bridges(&c.bridges, v),
        objects: |c, o| l2::bridge_objects(&c.bridges, o),
    },
];

/// Every config object of `c`, section by section, in config order.
pub fn objects(c: &Config) -> Vec<Obj> {
    let mut out = Vec::new();
    for s in SECTIONS {
        (s.objects)(c, &mut out);
    }
    out
}
