//! `l2-fwd`: forwards by destination MAC in the bridge domain's MAC table (IEEE 802.1Q-2018 §8.8
//! "Forwarding Process"). A known unicast destination leaves by its port — never back out of the port
//! it came in on (`same-port`, §8.6.1: a frame is not sent back to its reception port), along the
//! `interface-output` arc. Broadcast and
//! multicast go to `l2-flood` if the bridge floods, unknown unicast if it floods unknown unicast.
//!
//! Next: the `interface-output` arc; edge `l2-flood`. Drops: `no-bridge`, `forwarding-disabled`,
//! `same-port`, `flood-disabled`, `unknown-unicast-disabled`. Trace: `bd B dst MAC -> tx-port N` or
//! `-> flood`.
//!
//! Staged ([`super::staged`]): the destination addresses of a group of packets are hashed and
//! their table slots prefetched before any is looked up.

use vecswitch_buffer::Pool;
use vecswitch_graph::{named_enum, Cx, Next, Node, NodeInfo};

use super::{format_mac, is_group, macs, Addr, Staged};
use crate::interface::TO_OUTPUT;
use crate::state::SwitchState;

named_enum! {
    /// Next edges of `l2-fwd` (known unicast leaves along the output arc, [`TO_OUTPUT`]).
    pub enum Edge as edge { L2Flood = "l2-flood" }
}
named_enum! {
    /// Drop reasons of `l2-fwd`.
    pub enum DropReason as drop {
        NoBridge = "no-bridge",
        ForwardingDisabled = "forwarding-disabled",
        SamePort = "same-port",
        FloodDisabled = "flood-disabled",
        UnknownUnicastDisabled = "unknown-unicast-disabled",
    }
}

/// The `l2-fwd` node.
#[derive(Debug, Default)]
pub struct L2Fwd;

/// The per-packet body (stage 2 of [`super::staged`]).
#[inline(always)]
fn one(cx: &mut Cx<'_, SwitchState>, h: u32, p: Staged) -> Next {
    let Some(bridge) = cx.state.bridge(p.bd) else {
        return DropReason::NoBridge.next();
    };
    let s = bridge.settings;
    if !s.forward {
        return DropReason::ForwardingDisabled.next();
    }
    let Some(dst) = p.mac else {
        return DropReason::NoBridge.next(); // unreachable: ethernet-input drops runts
    };
    if is_group(&dst.mac()) {
        return if s.flood {
            Edge::L2Flood.next()
        } else {
            DropReason::FloodDisabled.next()
        };
    }
    match cx.state.macs.lookup_hashed(dst) {
        Some(port) if port == p.rx => DropReason::SamePort.next(),
        Some(port) => {
            cx.pool.header_mut(h).tx_port = port;
            TO_OUTPUT
        }
        None if s.uu_flood => Edge::L2Flood.next(),
        None => DropReason::UnknownUnicastDisabled.next(),
    }
}

impl Node<SwitchState> for L2Fwd {
    fn info(&self) -> NodeInfo {
        NodeInfo {
            name: "l2-fwd",
            next_nodes: Edge::NAMES,
            drop_reasons: DropReason::NAMES,
            counters: &[],
        }
    }

    fn process(&mut self, cx: &mut Cx<'_, SwitchState>, pkts: &[u32], nexts: &mut [Next]) {
        super::staged(cx, pkts, nexts, Addr::Dst, one);
    }

    fn trace(&self, pool: &Pool, pkt: u32) -> String {
        let h = pool.header(pkt);
        let dst = macs(pool, pkt).map_or_else(|| "?".to_string(), |(d, _)| format_mac(&d));
        format!(
            "bd {} dst {} rx-port {} tx-port {}",
            h.bd, dst, h.rx_port, h.tx_port
        )
    }
}
