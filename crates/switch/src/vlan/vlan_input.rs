//! `vlan-input`: sub-interface classification and the ingress tag rewrite (VPP's
//! `ethernet-input` sub-interface lookup, `src/vnet/ethernet/node.c`, and `l2-input-vtr`,
//! `src/vnet/l2/l2_vtr.h`). A feature on the `device-input` arc, enabled on every interface that
//! has sub-interfaces (a port's main interface; a bond later).
//!
//! Per frame: read its tags (IEEE 802.1Q-2018 §9.6; up to two), find the interface they belong to
//! with [`super::ParentTable::classify`]; for a sub-interface, make it the frame's receive
//! interface (`rx_port`), count the frame on it and apply its ingress tag rewrite (pop, push or
//! translate, moving only the address bytes). The frame then continues along the arc — on the
//! sub-interface — to `ethernet-input`, which validates the whole L2 header and hands it to the
//! sub-interface's service. Frames that stay on the main interface go on unchanged.
//!
//! Next: the `device-input` arc. Drops: `unknown-vlan` (tags no sub-interface matches and the main
//! interface does not take), frames too short for the tags they claim by the L2 parser's names
//! (`runt`, `truncated-vlan-tag`, `too-many-vlan-tags`), and `no-headroom` (no room in the buffer
//! for pushed tags). Trace: `rx-interface S vlan V/I len L` (after the rewrite).

use vecswitch_buffer::Pool;
use vecswitch_graph::{named_enum, Cx, Next, Node, NodeInfo};
use vecswitch_wire::vlan::{retag, RetagError};

use super::{read_tags, CounterRun, ParentTable, TagError, VlanState, Vtr};
use crate::interface::{Interface, SwIfIdx, INPUT_ARC};
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
        NoHeadroom = "no-headroom",
    }
}

impl DropReason {
    fn from_tags(e: TagError) -> DropReason {
        match e {
            TagError::Runt => DropReason::Runt,
            TagError::TruncatedVlanTag => DropReason::TruncatedVlanTag,
            TagError::TooManyVlanTags => DropReason::TooManyVlanTags,
        }
    }
}

/// The `vlan-input` node.
#[derive(Debug, Default)]
pub struct VlanInput;

/// Applies `vtr` (pop, then push) to packet `h`'s first buffer; the packet's start moves with it.
#[inline(always)]
pub(crate) fn apply(pool: &mut Pool, h: u32, vtr: &Vtr) -> Result<(), RetagError> {
    let hdr = pool.header(h);
    let start = hdr.data_offset as usize;
    let end = start + hdr.len as usize;
    let raw = pool.raw_mut(h);
    let new = retag(
        &mut raw[..end],
        start,
        vtr.pop as usize,
        &vtr.push[..vtr.n as usize],
    )?;
    if new < start {
        pool.push_front(h, start - new);
    } else if new > start {
        pool.pull_front(h, new - start);
    }
    Ok(())
}

#[inline]
#[allow(clippy::too_many_arguments)]
fn one(
    pool: &mut Pool,
    vlan: &VlanState,
    table: Option<&ParentTable>,
    main_l2: bool,
    counters: &mut CounterRun,
    ifaces: &mut [Option<Interface>],
    h: u32,
    rx: SwIfIdx,
) -> Next {
    let Some(table) = table else {
        return Next::arc(INPUT_ARC); // no sub-interfaces (any more): the main interface's
    };
    let key = match read_tags(pool.data(h)) {
        Ok(k) => k,
        Err(e) => return DropReason::from_tags(e).next(),
    };
    let Some(sw) = table.classify(key, rx, main_l2) else {
        return DropReason::UnknownVlan.next();
    };
    if sw == rx {
        return Next::arc(INPUT_ARC);
    }
    let hdr = pool.header_mut(h);
    hdr.rx_port = sw;
    counters.add(ifaces, sw, hdr.total_len as u64, false);
    if let Some(s) = vlan.sub(sw) {
        if !s.ingress.is_none() {
            if let Err(e) = apply(pool, h, &s.ingress) {
                return match e {
                    RetagError::NoHeadroom { .. } => DropReason::NoHeadroom,
                    // Classification saw the tags; only a bug gets here.
                    _ => DropReason::TruncatedVlanTag,
                }
                .next();
            }
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
        let SwitchState {
            vlan, interfaces, ..
        } = &mut *cx.state;
        let pool = &mut *cx.pool;
        let mut counters = CounterRun::default();
        // The parent's table and L2 mode, looked up once per run of packets from one parent.
        let mut last: Option<(SwIfIdx, Option<&ParentTable>, bool)> = None;
        for (&h, n) in pkts.iter().zip(nexts.iter_mut()) {
            let rx = pool.header(h).rx_port;
            let (table, main_l2) = match last {
                Some((r, t, l)) if r == rx => (t, l),
                _ => {
                    let (t, l) = match vlan.live_parent(interfaces, rx) {
                        Some((t, l)) => (Some(t), l),
                        None => (None, false),
                    };
                    last = Some((rx, t, l));
                    (t, l)
                }
            };
            *n = one(pool, vlan, table, main_l2, &mut counters, interfaces, h, rx);
        }
        counters.flush(interfaces, false);
    }

    fn trace(&self, pool: &Pool, pkt: u32) -> String {
        let h = pool.header(pkt);
        let tags = match read_tags(pool.data(pkt)) {
            Ok(k) => format!("vlan {}/{}", k.outer, k.inner),
            Err(e) => format!("{e:?}"),
        };
        format!("rx-interface {} {tags} len {}", h.rx_port, h.total_len)
    }
}
