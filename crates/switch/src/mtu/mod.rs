//! The MTU feature: an output-arc feature that drops frames too big for their transmit interface.
//!
//! Off by default (the switch forwards every frame its ports deliver); enabled per interface with
//! [`Switch::set_mtu_check`]. It is also the worked example of a feature in docs/ARCHITECTURE.md:
//! this folder, one `pub mod` line in `lib.rs` and one line in `feature::FEATURES` are all it took.
//!
//! - Node: [`mtu_check`] (`mtu-check`), on the `interface-output` arc.
//! - Table: none of its own; it reads the interface's `mtu` (set with
//!   [`Switch::set_interface_mtu`]).

pub mod mtu_check;

use vecswitch_graph::{Graph, GraphError};

use crate::error::SwitchError;
use crate::feature::{Feature, Stage};
use crate::interface::OUTPUT_ARC;
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
