//! `vlan-input`: sub-interface classification and the ingress tag rewrite (VPP's
//! `ethernet-input` sub-interface lookup, `src/vnet/ethernet/node.c`, and `l2-input-vtr`,
//! `src/vnet/l2/l2_vtr.h`). A feature on the `device-input` arc, enabled on every interface that
//! has sub-interfaces (a port's main interface; a bond later).
//!
//! Per frame: read its tags (IEEE 802.1Q-2018 §9.6; up to two), find the interface they belong to
//! with [`super::ParentTable::classify`]; for a sub-interface, make it the frame's receive
//! interface (`rx_port`), count the frame on it and apply its ingress tag rewrite (pop, push or
//! translate, moving only the address bytes). The frame then continues along the arc — on the
//! sub-interface — to `ethernet-input`, which validates it again and hands it to the
//! sub-interface's service. Frames that stay on the main interface go on unchanged.
//!
//! Next: the `device-input` arc. Drops: `unknown-vlan` (tags no sub-interface matches and the main
//! interface does not take), the L2 parser's reasons for frames too short for what they claim
//! (`runt`, `truncated-vlan-tag`, `too-many-vlan-tags`, `bad-length-field`, `malformed`), and
//! `no-headroom` (no room in the buffer for pushed tags). Trace: `rx-port P -> sub S vlan V/I
//! pop N push M`.

use vecswitch_buffer::Pool;
use vecswitch_graph::{named_enum, Cx, Next, Node, NodeInfo};
use vecswitch_wire::vlan::{retag, RetagError};
use vecswitch_wire::{Error as WireError, L2Header};

use super::TagKey;
use crate::interface::{Service, INPUT_ARC};
use crate::state::SwitchState;

/// The node's name.
pub const NAME: &str = "vlan-input";

named_enum! {
    /// Drop reasons of `vlan-input`.
    pub enum DropReason as drop {
        UnknownVlan = "unknown-vlan",
        Runt = "runt",
        TruncatedVlanTag = "truncated-vlan-tag",
        TooManyVlanTags = "too-many-vlan-tags",
        BadLengthField = "bad-length-field",
        Malformed = "malformed",
        NoHeadroom = "no-headroom",
    }
}

impl DropReason {
    fn from_wire(e: &WireError) -> DropReason {
        match e {
            WireError::Runt { .. } => DropReason::Runt,
            WireError::TruncatedVlanTag { .. } => DropReason::TruncatedVlanTag,
            WireError::TooManyVlanTags { .. } => DropReason::TooManyVlanTags,
            WireError::BadLengthField { .. } => DropReason::BadLengthField,
            _ => DropReason::Malformed,
        }
    }

    pub(crate) fn from_retag(e: &RetagError) -> DropReason {
        match e {
            RetagError::NoHeadroom { .. } => DropReason::NoHeadroom,
            // Classification checked the tags; only a bug gets here.
            RetagError::Truncated { .. } | RetagError::TooFewTags { .. } => {
                DropReason::TruncatedVlanTag
            }
        }
    }
}

/// The `vlan-input` node.
#[derive(Debug, Default)]
pub struct VlanInput;

/// Applies `pop` then `push` to packet `h`'s first buffer; the packet's start moves with it.
#[inline]
pub(crate) fn apply(pool: &mut Pool, h: u32, vtr: &super::Vtr) -> Result<isize, RetagError> {
    let hdr = *pool.header(h);
    let start = hdr.data_offset as usize;
    let end = start + hdr.len as usize;
    let raw = pool.raw_mut(h);
    let new = retag(
        &mut raw[..end],
        start,
        vtr.pop as usize,
        &vtr.push[..vtr.n as usize],
    )?;
    // Returns the growth of the packet in bytes (pushed - popped).
    if new < start {
        pool.push_front(h, start - new);
    } else {
        pool.pull_front(h, new - start);
    }
    Ok(start as isize - new as isize)
}

#[inline]
fn one(cx: &mut Cx<'_, SwitchState>, h: u32) -> Next {
    let st = &mut *cx.state;
    let rx = cx.pool.header(h).rx_port;
    let (Some(table), Some(main)) = (st.vlan.parent(rx), st.interface(rx)) else {
        return Next::arc(INPUT_ARC); // no sub-interfaces (any more): the main interface's
    };
    let l2 = match L2Header::parse(cx.pool.data(h)) {
        Ok(l2) => l2,
        Err(e) => return DropReason::from_wire(&e).next(),
    };
    let main_l2 = main.service != Service::None;
    let Some(sw) = table.classify(TagKey::of(&l2), rx, main_l2) else {
        return DropReason::UnknownVlan.next();
    };
    if sw == rx {
        return Next::arc(INPUT_ARC);
    }
    let len = cx.pool.header(h).total_len as u64;
    if let Some(i) = st.interface_mut(sw) {
        i.counters.rx_packets += 1;
        i.counters.rx_bytes += len;
    }
    cx.pool.header_mut(h).rx_port = sw;
    let vtr = match st.vlan.sub(sw) {
        Some(s) => s.ingress,
        None => return Next::arc(INPUT_ARC),
    };
    if !vtr.is_none() {
        if let Err(e) = apply(cx.pool, h, &vtr) {
            return DropReason::from_retag(&e).next();
        }
    }
    Next::arc(INPUT_ARC)
}

impl Node<SwitchState> for VlanInput {
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
        let tags = L2Header::parse(pool.data(pkt))
            .map(|l| {
                format!(
                    "vlan {}/{}",
                    l.outer_vid().unwrap_or(0),
                    l.inner.map_or(0, |t| t.vid)
                )
            })
            .unwrap_or_else(|e| e.to_string());
        format!("rx-interface {} {tags} len {}", h.rx_port, h.total_len)
    }
}
