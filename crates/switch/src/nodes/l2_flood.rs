//! `l2-flood`: sends a frame to every member of its bridge domain except the port it came in on
//! (IEEE 802.1Q-2018 §8.6.1) and except members that are administratively down. The original buffer
//! goes to the first such member; each other member gets a copy made with `Pool::clone_packet`.
//!
//! The graph gives a node one decision per packet it was handed, so the copies cannot leave by an
//! edge: they are put, with `tx_port` set, on [`SwitchState::tx_extra`], which `interface-output`
//! drains. The original always goes to `interface-output` in the same dispatch, so that node runs
//! after the copies are made.
//!
//! Next edges: `interface-output`. Drops: `no-bridge`, `no-other-members` (nothing to flood to).
//! Counters (in `show errors`): `no-buffers` (a copy could not be made: that member misses the frame).
//! Trace: `bd B flooded to N ports`.

use vecswitch_buffer::Pool;
use vecswitch_graph::{Cx, Next, Node, NodeInfo};

use super::named_enum;
use crate::state::SwitchState;

named_enum! {
    /// Next edges of `l2-flood`.
    pub enum Edge as edge { InterfaceOutput = "interface-output" }
}
named_enum! {
    /// Drop reasons of `l2-flood`.
    pub enum DropReason as drop { NoBridge = "no-bridge", NoOtherMembers = "no-other-members" }
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
    let st = &mut *cx.state;
    let Some(bridge) = st.bridges.get(bd as usize).and_then(Option::as_ref) else {
        return DropReason::NoBridge.next();
    };
    let mut first = None;
    for &m in &bridge.members {
        if m == rx
            || !st
                .ports
                .get(m as usize)
                .and_then(Option::as_ref)
                .is_some_and(|p| p.admin_up)
        {
            continue;
        }
        if first.is_none() {
            first = Some(m);
            continue;
        }
        match cx.pool.clone_packet(h) {
            Some(c) => {
                cx.pool.header_mut(c).tx_port = m;
                st.tx_extra.push(c);
            }
            None => st.events.flood_no_buffers += 1,
        }
    }
    match first {
        Some(m) => {
            cx.pool.header_mut(h).tx_port = m;
            Edge::InterfaceOutput.next()
        }
        None => DropReason::NoOtherMembers.next(),
    }
}

impl Node<SwitchState> for L2Flood {
    fn info(&self) -> NodeInfo {
        NodeInfo {
            name: "l2-flood",
            next_nodes: Edge::NAMES,
            drop_reasons: DropReason::NAMES,
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
