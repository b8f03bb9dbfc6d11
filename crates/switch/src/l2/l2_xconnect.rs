//! `l2-xconnect`: cross-connect (E-Line, one direction): every frame received on a port whose
//! service is `Xconnect { to }` leaves by interface `to`, untouched,
//! along the `interface-output` arc.
//!
//! Next: the `interface-output` arc. Drops: `no-xconnect` (the port's service changed while the packet
//! was in flight — cannot happen between dispatches, kept so that a bug is a counter, not a panic).
//! Trace: `rx-port N -> tx-port M`.

use vecswitch_buffer::Pool;
use vecswitch_graph::{named_enum, Cx, Next, Node, NodeInfo};

use crate::interface::{Service, TO_OUTPUT};
use crate::state::SwitchState;

named_enum! {
    /// Drop reasons of `l2-xconnect`.
    pub enum DropReason as drop { NoXconnect = "no-xconnect" }
}

/// The `l2-xconnect` node.
#[derive(Debug, Default)]
pub struct L2Xconnect;

#[inline]
fn one(cx: &mut Cx<'_, SwitchState>, h: u32) -> Next {
    let hdr = cx.pool.header_mut(h);
    match cx.state.interface(hdr.rx_port).map(|i| i.service) {
        Some(Service::Xconnect { to }) => {
            hdr.tx_port = to;
            TO_OUTPUT
        }
        _ => DropReason::NoXconnect.next(),
    }
}

impl Node<SwitchState> for L2Xconnect {
    fn info(&self) -> NodeInfo {
        NodeInfo {
            name: "l2-xconnect",
            next_nodes: &[],
            drop_reasons: DropReason::NAMES,
            counters: &[],
        }
    }

    fn process(&mut self, cx: &mut Cx<'_, SwitchState>, pkts: &[u32], nexts: &mut [Next]) {
        for (&h, n) in pkts.iter().zip(nexts.iter_mut()) {
            *n = one(cx, h);
        }
    }

    fn trace(&self, pool: &Pool, pkt: u32) -> String {
        let h = pool.header(pkt);
        format!("rx-port {} -> tx-port {}", h.rx_port, h.tx_port)
    }
}
