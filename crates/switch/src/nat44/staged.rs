//! The staged loop of the NAT44 nodes (issue 11: 1M sessions in wall-clock time), as VPP's
//! nat44-ed nodes do with their bihash (`clib_bihash_hash` → `clib_bihash_prefetch_bucket` →
//! `clib_bihash_search_inline_with_hash`, then the session's prefetch). For each group of up to
//! [`GROUP`] packets of a vector:
//!
//! 1. `first` reads each packet (headers and ports, [`super::translate::parse`]) and either
//!    decides it at once (not for NAT, or dropped) or names the index key to look up, hashed
//!    ([`super::index::Index::hashed`]);
//! 2. the home bucket of every such key is loaded ([`super::index::Index::prefetch`]);
//! 3. every key is looked up (its bucket now in the cache) and the slot of the session found
//!    is loaded ([`SessionTable::prefetch`](super::session::SessionTable::prefetch));
//! 4. `body` — the node's per-packet logic, written once — runs on each packet in order, with
//!    the slot found in 3 as a candidate that it confirms
//!    ([`SessionTable::confirm`](super::session::SessionTable::confirm)): a packet before it in
//!    the group may have made or removed sessions.
//!
//! The loads of pass 2, and those of pass 3, do not depend on each other, so the cache misses of
//! a table larger than the caches are in flight together instead of one after another. Nothing
//! in passes 1–3 changes a table, so the result is that of running `body` alone on each packet.

use vecswitch_graph::{Cx, Next};

use super::index::Hashed;
use super::session::Dir;
use crate::state::SwitchState;

/// Packets per group: 64 buckets and 64 slots (8 KiB) stay in L1 until the body reads them.
pub(crate) const GROUP: usize = 64;

/// What pass 1 made of a packet.
#[derive(Debug, Clone, Copy)]
pub(crate) enum First<F> {
    /// Decided: this next edge.
    Done(Next),
    /// Look `h` up in index `dir`, then run the body with `f` (what pass 1 read of the packet).
    Lookup { dir: Dir, h: Hashed, f: F },
}

/// Runs a NAT44 node over a vector in stages (module doc). `body(cx, packet, dir, h, f,
/// candidate)`.
#[inline(always)]
pub(crate) fn run<F: Copy>(
    cx: &mut Cx<'_, SwitchState>,
    pkts: &[u32],
    nexts: &mut [Next],
    mut first: impl FnMut(&mut Cx<'_, SwitchState>, u32) -> First<F>,
    mut body: impl FnMut(&mut Cx<'_, SwitchState>, u32, Dir, Hashed, F, Option<u32>) -> Next,
) {
    let mut stage = [First::Done(Next::CONSUMED); GROUP];
    let mut cand: [Option<u32>; GROUP] = [None; GROUP];
    for (pkts, nexts) in pkts.chunks(GROUP).zip(nexts.chunks_mut(GROUP)) {
        let stage = &mut stage[..pkts.len()];
        for (&p, st) in pkts.iter().zip(stage.iter_mut()) {
            *st = first(cx, p);
        }
        let sessions = &cx.state.nat44.sessions;
        for st in stage.iter() {
            if let First::Lookup { dir, h, .. } = *st {
                sessions.index_for(dir).prefetch(h);
            }
        }
        for (st, c) in stage.iter().zip(cand.iter_mut()) {
            *c = match *st {
                First::Lookup { dir, h, .. } => {
                    let i = sessions.index_for(dir).get(h);
                    if let Some(i) = i {
                        sessions.prefetch(i);
                    }
                    i
                }
                First::Done(_) => None,
            };
        }
        for (((&p, n), st), &c) in pkts.iter().zip(nexts).zip(stage.iter()).zip(&cand) {
            *n = match *st {
                First::Done(next) => next,
                First::Lookup { dir, h, f } => body(cx, p, dir, h, f, c),
            };
        }
    }
}
