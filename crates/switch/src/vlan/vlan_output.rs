//! `vlan-output`: the egress side of a sub-interface — the inverse tag rewrite and the egress
//! filter (VPP's `l2-output` VTR step, `src/vnet/l2/l2_vtr.h`, and `l2-efp-filter`,
//! `src/vnet/l2/l2_efp_filter.c`), then hands the frame to the parent interface. A feature on the
//! `interface-output` arc, enabled on every sub-interface.
//!
//! Per frame sent on a sub-interface: apply the exact inverse of its ingress rewrite (pop what the
//! ingress pushed, push back the tags the ingress popped, with the encap's values); then check
//! that the frame, as it will leave, would be classified to this same sub-interface if it came
//! back in on the parent — if not (an untagged frame bridged onto a `dot1q 10` sub-interface
//! without a rewrite, say), drop it. Count it on the sub-interface (`tx_packets`, `tx_bytes`:
//! frames handed to the parent), make the parent its transmit interface and continue along the
//! arc, so that the parent's own output features and `interface-output` see it.
//!
//! Next: the `interface-output` arc (on the parent). Drops: `egress-vlan-mismatch` (the filter),
//! `egress-too-few-tags` (the frame lacks the tags the inverse rewrite pops), `no-headroom`,
//! `not-a-sub-interface` (enabled on an interface that is not one; a bug guard). Trace:
//! `tx-interface S -> parent P vlan V/I`.

use vecswitch_buffer::Pool;
use vecswitch_graph::{named_enum, Cx, Next, Node, NodeInfo};
use vecswitch_wire::vlan::RetagError;
use vecswitch_wire::L2Header;

use super::vlan_input::apply;
use super::TagKey;
use crate::interface::{Service, OUTPUT_ARC};
use crate::state::SwitchState;

/// The node's name.
pub const NAME: &str = "vlan-output";

named_enum! {
    /// Drop reasons of `vlan-output`.
    pub enum DropReason as drop {
        EgressVlanMismatch = "egress-vlan-mismatch",
        EgressTooFewTags = "egress-too-few-tags",
        NoHeadroom = "no-headroom",
        NotASubInterface = "not-a-sub-interface",
    }
}

/// The `vlan-output` node.
#[derive(Debug, Default)]
pub struct VlanOutput;

#[inline]
fn one(cx: &mut Cx<'_, SwitchState>, h: u32) -> Next {
    let st = &mut *cx.state;
    let tx = cx.pool.header(h).tx_port;
    let Some(sub) = st.vlan.sub(tx).copied() else {
        return DropReason::NotASubInterface.next();
    };
    if !sub.egress.is_none() {
        match apply(cx.pool, h, &sub.egress) {
            Ok(_) => {}
            Err(RetagError::NoHeadroom { .. }) => return DropReason::NoHeadroom.next(),
            Err(_) => return DropReason::EgressTooFewTags.next(),
        }
    }
    // The egress filter: would this frame come back in on this sub-interface?
    let Ok(l2) = L2Header::parse(cx.pool.data(h)) else {
        return DropReason::EgressVlanMismatch.next();
    };
    let main_l2 = st
        .interface(sub.parent)
        .is_some_and(|m| m.service != Service::None);
    let back = st
        .vlan
        .parent(sub.parent)
        .and_then(|t| t.classify(TagKey::of(&l2), sub.parent, main_l2));
    if back != Some(tx) {
        return DropReason::EgressVlanMismatch.next();
    }
    let hdr = cx.pool.header_mut(h);
    // At most 22 (two tags).
    hdr.l3_offset = l2.l3_offset as u16;
    hdr.vlan = l2.outer_vid().unwrap_or(0);
    hdr.inner_vlan = l2.inner.map_or(0, |t| t.vid);
    hdr.tx_port = sub.parent;
    let len = hdr.total_len as u64;
    if let Some(i) = st.interface_mut(tx) {
        i.counters.tx_packets += 1;
        i.counters.tx_bytes += len;
    }
    Next::arc(OUTPUT_ARC)
}

impl Node<SwitchState> for VlanOutput {
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
            *n = one(cx, h);
        }
    }

    fn trace(&self, pool: &Pool, pkt: u32) -> String {
        let h = pool.header(pkt);
        format!(
            "tx-interface {} vlan {}/{} len {}",
            h.tx_port, h.vlan, h.inner_vlan, h.total_len
        )
    }
}
