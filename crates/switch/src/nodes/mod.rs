//! The switch's graph nodes, one per file, each a `graph::Node<SwitchState>`:
//!
//! ```text
//!                  ┌─► l2-xconnect ──────────────────────────┐
//! ethernet-input ──┼─► l2-learn ──► l2-fwd ──────────────────┼─► interface-output ─► tx_burst
//!                  └──────────────► l2-fwd ──► l2-flood ─────┘
//!                                   (bridge without learning)  (replicas on SwitchState::tx_extra)
//! ```
//!
//! Each node declares its next edges and drop reasons as enums (declared with the crate-private `named_enum!` macro) whose names are
//! what `show runtime` / `show errors` print, describes a traced packet, and writes its per-packet
//! logic once in a function called from its loop.

pub mod ethernet_input;
pub mod interface_output;
pub mod l2_flood;
pub mod l2_fwd;
pub mod l2_learn;
pub mod l2_xconnect;

pub use ethernet_input::EthernetInput;
pub use interface_output::InterfaceOutput;
pub use l2_flood::L2Flood;
pub use l2_fwd::L2Fwd;
pub use l2_learn::L2Learn;
pub use l2_xconnect::L2Xconnect;

use vecswitch_buffer::Pool;
use vecswitch_graph::{Graph, GraphError, NodeId};

use crate::state::SwitchState;

/// Declares a `#[repr(u16)]` enum of next edges or drop reasons with their user-visible names.
/// `NAMES[i]` is the name of variant `i`; `next()` turns a variant into a `graph::Next` through the
/// given constructor (`edge` or `drop`).
macro_rules! named_enum {
    ($(#[$m:meta])* $vis:vis enum $name:ident as $ctor:ident {
        $($(#[$vm:meta])* $var:ident = $s:literal),* $(,)?
    }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[repr(u16)]
        $vis enum $name { $($(#[$vm])* $var),* }
        impl $name {
            /// User-visible names, by variant index.
            pub const NAMES: &'static [&'static str] = &[$($s),*];
            /// The graph decision for this variant.
            #[inline]
            pub const fn next(self) -> vecswitch_graph::Next {
                vecswitch_graph::Next::$ctor(self as u16)
            }
            /// The user-visible name.
            pub const fn name(self) -> &'static str {
                Self::NAMES[self as usize]
            }
        }
    };
}
pub(crate) use named_enum;

/// Ids of the switch's nodes in its graph.
#[derive(Debug, Clone, Copy)]
pub struct NodeIds {
    pub ethernet_input: NodeId,
    pub l2_xconnect: NodeId,
    pub l2_learn: NodeId,
    pub l2_fwd: NodeId,
    pub l2_flood: NodeId,
    pub interface_output: NodeId,
}

/// Registers every L2 node in `graph` (in dispatch order) and resolves the edges.
pub fn register(graph: &mut Graph<SwitchState>) -> Result<NodeIds, GraphError> {
    let ids = NodeIds {
        ethernet_input: graph.add(Box::new(EthernetInput)),
        l2_xconnect: graph.add(Box::new(L2Xconnect)),
        l2_learn: graph.add(Box::new(L2Learn)),
        l2_fwd: graph.add(Box::new(L2Fwd)),
        l2_flood: graph.add(Box::new(L2Flood)),
        interface_output: graph.add(Box::new(InterfaceOutput::default())),
    };
    graph.finalize()?;
    Ok(ids)
}

/// Destination and source MAC of a packet. `None` only for a packet shorter than 12 bytes, which
/// `ethernet-input` never lets through (it drops runts); nodes still check rather than index.
#[inline]
pub(crate) fn macs(pool: &Pool, h: u32) -> Option<([u8; 6], [u8; 6])> {
    let d = pool.data(h).get(..12)?;
    let mut dst = [0u8; 6];
    let mut src = [0u8; 6];
    dst.copy_from_slice(&d[..6]);
    src.copy_from_slice(&d[6..12]);
    Some((dst, src))
}
