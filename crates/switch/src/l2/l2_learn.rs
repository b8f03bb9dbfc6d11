//! `l2-learn`: learns the source MAC of each frame in its bridge domain's MAC table (IEEE
//! 802.1Q-2018 §8.7 "Learning Process"): a new station is added, a known one refreshed, a station
//! seen on another port moved (counted as `station-moves`) unless its entry is static. A bridge at
//! its MAC limit learns nothing more (`mac-limit-reached`); the frame is forwarded all the same.
//! Group (multicast) and all-zero source addresses never get here: `ethernet-input` drops them
//! (`src-mac-multicast`, `src-mac-zero`; [`crate::interface::hygiene`]); the group check below stays as a
//! guard.
//!
//! Next edges: `l2-fwd`. Drops: `no-bridge` (bridge deleted while in flight; a bug guard).
//! Counters (declared by the node, in `show errors`): `learned`, `station-moves`, `mac-limit-reached`, `mac-table-full`,
//! `static-mac-seen-elsewhere`. Trace: `bd B src MAC rx-port N`.
//!
//! Staged ([`super::staged`]): the source addresses of a group of packets are hashed and their
//! table slots prefetched before any is learned.

use vecswitch_buffer::Pool;
use vecswitch_graph::{named_enum, Cx, Next, Node, NodeInfo};

use super::mac_table::LearnOutcome;
use super::{format_mac, is_group, macs, Addr, Staged};
use crate::state::SwitchState;

named_enum! {
    /// Next edges of `l2-learn`.
    pub enum Edge as edge { L2Fwd = "l2-fwd" }
}
named_enum! {
    /// Drop reasons of `l2-learn`.
    pub enum DropReason as drop { NoBridge = "no-bridge" }
}
named_enum! {
    /// Counters of `l2-learn`.
    pub enum Counter as counter {
        Learned = "learned",
        StationMoves = "station-moves",
        MacLimitReached = "mac-limit-reached",
        MacTableFull = "mac-table-full",
        StaticMacSeenElsewhere = "static-mac-seen-elsewhere",
    }
}

/// The `l2-learn` node.
#[derive(Debug, Default)]
pub struct L2Learn;

/// The per-packet body (stage 2 of [`super::staged`]).
#[inline(always)]
fn one(cx: &mut Cx<'_, SwitchState>, p: Staged) -> Next {
    let st = &mut *cx.state;
    let Some(bridge) = st.bridges.get(p.bd as usize).and_then(Option::as_ref) else {
        return DropReason::NoBridge.next();
    };
    let s = bridge.settings;
    if let (true, Some(k)) = (s.learn, p.mac) {
        if !is_group(&k.mac()) {
            let counter = match st.macs.learn_hashed(k, p.rx, st.now_s, s.mac_limit) {
                LearnOutcome::Refreshed => return Edge::L2Fwd.next(),
                LearnOutcome::Learned => Counter::Learned,
                LearnOutcome::Moved { .. } => Counter::StationMoves,
                LearnOutcome::StaticKept => Counter::StaticMacSeenElsewhere,
                LearnOutcome::LimitReached => Counter::MacLimitReached,
                LearnOutcome::TableFull => Counter::MacTableFull,
            };
            cx.counters.add(counter.index(), 1);
        }
    }
    Edge::L2Fwd.next()
}

impl Node<SwitchState> for L2Learn {
    fn info(&self) -> NodeInfo {
        NodeInfo {
            name: "l2-learn",
            next_nodes: Edge::NAMES,
            drop_reasons: DropReason::NAMES,
            counters: Counter::NAMES,
        }
    }

    fn process(&mut self, cx: &mut Cx<'_, SwitchState>, pkts: &[u32], nexts: &mut [Next]) {
        super::staged(cx, pkts, nexts, Addr::Src, |cx, _, p| one(cx, p));
    }

    fn trace(&self, pool: &Pool, pkt: u32) -> String {
        let h = pool.header(pkt);
        let src = macs(pool, pkt).map_or_else(|| "?".to_string(), |(_, s)| format_mac(&s));
        format!("bd {} src {} rx-port {}", h.bd, src, h.rx_port)
    }
}
