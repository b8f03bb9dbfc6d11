//! `mtu-check`: drops a frame whose L3 payload (frame length minus the L2 header `ethernet-input`
//! measured, tags included) is larger than its transmit interface's MTU — the check VPP's
//! `interface-output` makes (RFC 791 §3.2 for IPv4; a bridge does not fragment, IEEE 802.1Q-2018
//! §8.5.1 discards frames too big for the transmitting port). A feature on the `interface-output`
//! arc, enabled per transmit interface.
//!
//! Next: the `interface-output` arc. Drops: `too-big`, `no-interface` (interface gone; a bug
//! guard). Trace: `tx-port N l3-len L`.

use vecswitch_buffer::Pool;
use vecswitch_graph::{named_enum, Cx, Next, Node, NodeInfo};

use crate::interface::TO_OUTPUT;
use crate::state::SwitchState;

/// The node's name.
pub const NAME: &str = "mtu-check";

named_enum! {
    /// Drop reasons of `mtu-check`.
    pub enum DropReason as drop { TooBig = "too-big", NoInterface = "no-interface" }
}

/// The `mtu-check` node.
#[derive(Debug, Default)]
pub struct MtuCheck;

/// L3 length of a packet: bytes after the L2 header.
#[inline]
fn l3_len(pool: &Pool, h: u32) -> u32 {
    let hdr = pool.header(h);
    hdr.total_len.saturating_sub(hdr.l3_offset as u32)
}

impl Node<SwitchState> for MtuCheck {
    fn info(&self) -> NodeInfo {
        NodeInfo {
            name: NAME,
            next_nodes: &[],
            drop_reasons: DropReason::NAMES,
            counters: &[],
        }
    }

    fn process(&mut self, cx: &mut Cx<'_, SwitchState>, pkts: &[u32], nexts: &mut [Next]) {
        for (&h, n) in pkts.iter().zip(nexts.iter_mut()) {
            let hdr = cx.pool.header(h);
            let l3 = hdr.total_len.saturating_sub(hdr.l3_offset as u32);
            *n = match cx.state.interface(hdr.tx_port) {
                None => DropReason::NoInterface.next(),
                Some(i) if l3 > i.mtu as u32 => DropReason::TooBig.next(),
                Some(_) => TO_OUTPUT,
            };
        }
    }

    fn trace(&self, pool: &Pool, pkt: u32) -> String {
        format!(
            "tx-port {} l3-len {}",
            pool.header(pkt).tx_port,
            l3_len(pool, pkt)
        )
    }
}
