//! `l2-flood`: sends a frame to every member of its bridge domain except the interface it came in on
//! (IEEE 802.1Q-2018 §8.6.1) and except members that are administratively down. The original buffer
//! goes to the first such member; each other member gets a copy made with `Pool::clone_packet`
//! (VPP's `vlib_buffer_clone` in `l2_flood.c`), emitted into the graph with `tx_port` set. Original
//! and copies all leave along the `interface-output` arc, so output features see every copy.
//!
//! Next: the `interface-output` arc, for the original and each copy. Drops: `no-bridge`,
//! `no-other-members` (nothing to flood to). Counters (in `show errors`): `no-buffers` (a copy could
//! not be made: that member misses the frame). Trace: `bd B rx-port N original to tx-port M` (a copy:
//! `clone: …` with its own tx port).

use vecswitch_buffer::Pool;
use vecswitch_graph::{named_enum, Cx, Next, Node, NodeInfo};

use crate::interface::TO_OUTPUT;
use crate::state::SwitchState;

named_enum! {
    /// Drop reasons of `l2-flood`.
    pub enum DropReason as drop { NoBridge = "no-bridge", NoOtherMembers = "no-other-members" }
}
named_enum! {
    /// Counters of `l2-flood`.
    pub enum Counter as counter { NoBuffers = "no-buffers" }
}

/// The `l2-flood` node.
#[derive(Debug, Default)]
pub struct L2Flood;

#[inline]
fn one(cx: &mut Cx<'_, SwitchState>, h: u32) -> Next {
    let (bd, rx) = {
        let hdr = cx.pool.header(h);
        (hdr.bd, hdr.rx_port)
    };
    let st = &*cx.state;
    let Some(bridge) = st.bridges.get(bd as usize).and_then(Option::as_ref) else {
        return DropReason::NoBridge.next();
    };
    let mut first = None;
    for &m in &bridge.members {
        if m == rx || !st.interface(m).is_some_and(|i| i.admin_up) {
            continue;
        }
        if first.is_none() {
            first = Some(m);
            continue;
        }
        match cx.pool.clone_packet(h) {
            Some(c) => {
                cx.pool.header_mut(c).tx_port = m;
                cx.emit.push(c, TO_OUTPUT);
            }
            None => cx.counters.add(Counter::NoBuffers.index(), 1),
        }
    }
    match first {
        Some(m) => {
            cx.pool.header_mut(h).tx_port = m;
            TO_OUTPUT
        }
        None => DropReason::NoOtherMembers.next(),
    }
}

impl Node<SwitchState> for L2Flood {
    fn info(&self) -> NodeInfo {
        NodeInfo {
            name: "l2-flood",
            next_nodes: &[],
            drop_reasons: DropReason::NAMES,
            counters: Counter::NAMES,
        }
    }

    fn process(&mut self, cx: &mut Cx<'_, SwitchState>, pkts: &[u32], nexts: &mut [Next]) {
        for (&h, n) in pkts.iter().zip(nexts.iter_mut()) {
            *n = one(cx, h);
        }
    }

    fn trace(&self, pool: &Pool, pkt: u32) -> String {
        let h = pool.header(pkt);
        format!(
            "bd {} rx-port {} original to tx-port {}",
            h.bd, h.rx_port, h.tx_port
        )
    }
}
