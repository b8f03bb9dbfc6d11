//! `vlan-output`: the egress side of a sub-interface — the inverse tag rewrite and the egress
//! filter (VPP's `l2-output` VTR step, `src/vnet/l2/l2_vtr.h`, and `l2-efp-filter`,
//! `src/vnet/l2/l2_efp_filter.c`), then hands the frame to the parent interface. A feature on the
//! `interface-output` arc of a sub-interface that has another output feature on it or on its
//! parent; for the others `interface-output` runs the same code inline (`inline`), as VPP's
//! `l2-output` does its VTR (`l2output_vtr`), and sends here only the frames it drops.
//!
//! Per frame sent on a sub-interface: apply the exact inverse of its ingress rewrite (pop what the
//! ingress pushed, push back the tags the ingress popped, with the encap's values); then check
//! that the frame, as it will leave, would be classified to this same sub-interface if it came
//! back in on the parent — if not (an untagged frame bridged onto a `dot1q 10` sub-interface
//! without a rewrite, say), drop it. Count it on the sub-interface (`tx_packets`, `tx_bytes`:
//! frames handed to the parent), make the parent its transmit interface and continue along the
//! arc, so that the parent's own output features and `interface-output` see it. The inverse
//! rewrite's outcome and the filter's answer depend on the frame's tags alone, so they are decided
//! once per run of frames for one sub-interface with the same tag bytes (`super::TagBytes`), before
//! the frame is changed (`decide`); the frames after the first that passed are only compared,
//! rewritten by fixed-size writes (`super::shift_tags`) and counted per run.
//!
//! Next: the `interface-output` arc (on the parent). Drops: `egress-vlan-mismatch` (the filter),
//! `egress-too-few-tags` (the frame lacks the tags the inverse rewrite pops), `no-headroom`,
//! `no-parent` (the parent port was deleted under the sub-interface),
//! `not-a-sub-interface` (enabled on an interface that is not one; a bug guard). Trace:
//! `tx-interface P vlan V/I len L` (on the parent, after the rewrite).

use vecswitch_buffer::Pool;
use vecswitch_graph::{named_enum, Cx, Next, Node, NodeInfo};
use vecswitch_wire::EtherType;

use super::{
    move_tags, read_tags, CounterRun, ParentTable, RewriteError, SubIf, TagBytes, TagKey, VlanState,
};
use crate::interface::subif::SubIfTables;
use crate::interface::{Interface, SwIfIdx, OUTPUT_ARC};
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
        NoParent = "no-parent",
    }
}

/// The `vlan-output` node.
#[derive(Debug, Default)]
pub struct VlanOutput;

/// What the sub-interface does to a frame with given tags (a function of the tags alone, so it is
/// decided once per run of frames with the same tags).
#[derive(Clone, Copy)]
enum Egress {
    /// Rewrite (if any), then send with tags `after` if `pass` (the egress filter's answer).
    Send {
        after: TagKey,
        pass: bool,
    },
    /// The rewrite pops tags and leaves the frame's next tag outermost, whose TPID the key does
    /// not hold: filtered frame by frame, with that TPID read from the frame.
    PerFrame,
    Drop(DropReason),
}

/// What one run of packets for the same sub-interface shares: its settings, its parent's table
/// and L2 mode, and the last frame's tags with what they get (the tags a frame comes with are
/// usually the same for the whole run, so the rewrite's arithmetic and the egress filter's table
/// search run once).
#[derive(Clone, Copy)]
struct Run<'a> {
    tx: SwIfIdx,
    sub: Option<(&'a SubIf, Option<&'a ParentTable>, bool)>,
    last: Option<(TagKey, Egress)>,
    /// When the last frame was sent: its tag bytes and the tags it left with — every frame with
    /// the same tag bytes gets the same rewrite and passes the filter ([`stretch`]).
    fast: Option<(TagBytes, TagKey)>,
}

/// The packets from the start of `pkts` for `tx` (sub-interface `sub`) by the fast path, up to
/// the first that must take the full one; returns how many it took. Their tag bytes are `tags`,
/// those of a frame sent before, so they leave with tags `after` and pass the filter; the work per
/// frame is the comparison, the inverse rewrite's fixed-size writes and the header fields, in one
/// fixed-size window of the buffer ([`window`]). Counted once on the sub-interface.
#[inline(always)]
fn stretch(
    pool: &mut Pool,
    sub: &SubIf,
    fast: (TagBytes, TagKey),
    tx: SwIfIdx,
    pkts: &[u32],
    nexts: &mut [Next],
) -> (usize, u64) {
    // The rewrite's shape as constants, so that every offset in the window is one.
    let w = match (sub.egress.pop, sub.egress.n) {
        (0, 0) => window::<0, 0>,
        (0, 1) => window::<0, 1>,
        (0, 2) => window::<0, 2>,
        (1, 0) => window::<1, 0>,
        (1, 1) => window::<1, 1>,
        (1, 2) => window::<1, 2>,
        (2, 0) => window::<2, 0>,
        (2, 1) => window::<2, 1>,
        (2, 2) => window::<2, 2>,
        // No rewrite pops or pushes more than two tags: the full path decides (a bug guard).
        _ => return (0, 0),
    };
    w(pool, sub, fast, tx, pkts, nexts)
}

/// The bytes of a frame's first buffer the fast path works in, from its lower start (before or
/// after the rewrite: at most 8 bytes of tags pushed) to past the type after two tags (byte 22).
const WINDOW: usize = 32;

/// [`stretch`] for a rewrite that pops `POP` tags and pushes `N`: per frame one window of
/// [`WINDOW`] bytes taken from the buffer (one bounds check), the tag comparison
/// ([`TagBytes::matches_window`]) and the rewrite at constant offsets in it — the 12 address
/// bytes moved by `4 × (N − POP)` and the `N` tags written from [`super::Vtr::bytes`], as
/// [`super::shift_tags`] does with offsets known per frame.
#[inline(always)]
fn window<const POP: usize, const N: usize>(
    pool: &mut Pool,
    sub: &SubIf,
    (tags, after): (TagBytes, TagKey),
    tx: SwIfIdx,
    pkts: &[u32],
    nexts: &mut [Next],
) -> (usize, u64) {
    // In the window: where the frame starts before the rewrite (`f`) and after it (`s`).
    let f = 4 * N.saturating_sub(POP);
    let s = 4 * POP.saturating_sub(N);
    let push = sub.egress.bytes;
    let grow = 4 * N as u32;
    let shrink = 4 * POP as u32;
    let (l3, outer, inner) = (14 + 4 * after.count as u16, after.outer, after.inner);
    let need = tags.min_len();
    let (mut done, mut bytes) = (0, 0u64);
    for (&h, n) in pkts.iter().zip(nexts.iter_mut()) {
        let hdr = pool.header(h);
        if hdr.tx_port != tx {
            break;
        }
        let (start, len) = (hdr.data_offset as usize, hdr.len as usize);
        // No headroom for the tags pushed, or too short: the full path says why.
        let Some(lo) = start.checked_sub(f) else {
            break;
        };
        if len < need {
            break;
        }
        let Some(w) = pool
            .raw_mut(h)
            .get_mut(lo..)
            .and_then(|r| r.first_chunk_mut::<WINDOW>())
        else {
            break;
        };
        if !tags.matches_window(w, f) {
            break;
        }
        if f != s {
            let mut addr = [0u8; 12];
            addr.copy_from_slice(&w[f..f + 12]);
            w[s..s + 12].copy_from_slice(&addr);
        }
        w[s + 12..s + 12 + 4 * N].copy_from_slice(&push[..4 * N]);
        let hdr = pool.header_mut(h);
        if f != s {
            hdr.data_offset = (lo + s) as u16;
            hdr.len = (hdr.len as u32 + grow - shrink) as u16;
            hdr.total_len = hdr.total_len + grow - shrink;
        }
        hdr.l3_offset = l3;
        hdr.vlan = outer;
        hdr.inner_vlan = inner;
        hdr.tx_port = sub.parent;
        bytes += hdr.total_len as u64;
        *n = Next::arc(OUTPUT_ARC);
        done += 1;
    }
    (done, bytes)
}

/// The egress filter: would a frame with tags `key` come back in on `tx` (over `sub.parent`)?
#[inline]
fn passes(sub: &SubIf, table: &ParentTable, main_l2: bool, tx: SwIfIdx, key: TagKey) -> bool {
    table.classify(key, sub.parent, main_l2) == Some(tx)
}

/// What `sub` does to frames with tags `key` (see [`Egress`]).
fn egress(sub: &SubIf, table: &ParentTable, main_l2: bool, tx: SwIfIdx, key: TagKey) -> Egress {
    match sub.egress.key_after(key) {
        Ok(after) if after.count > 0 && after.outer_tpid == EtherType(0) => Egress::PerFrame,
        Ok(after) => Egress::Send {
            after,
            pass: passes(sub, table, main_l2, tx, after),
        },
        Err(RewriteError::TooFewTags) => Egress::Drop(DropReason::EgressTooFewTags),
        // It would leave with three tags: no sub-interface takes that back.
        Err(RewriteError::TooManyTags) => Egress::Drop(DropReason::EgressVlanMismatch),
        Err(RewriteError::NoHeadroom) => Egress::Drop(DropReason::NoHeadroom),
    }
}

/// What happens to frame `h` of run `run`, decided without changing it: sent with tags `after`
/// (after the inverse rewrite, if the sub-interface has one), or dropped with a reason. The
/// reasons in the order VPP's `l2-output` names them (`l2output_vtr`): the rewrite's (no room for
/// the tags pushed) before the filter's.
#[inline]
fn decide<'a>(pool: &Pool, run: &mut Run<'a>, h: u32) -> Result<(&'a SubIf, TagKey), DropReason> {
    let Some((sub, table, main_l2)) = run.sub else {
        return Err(DropReason::NotASubInterface);
    };
    let Some(table) = table else {
        return Err(DropReason::NoParent);
    };
    let frame = pool.data(h);
    let Ok(key) = read_tags(frame) else {
        return Err(DropReason::EgressVlanMismatch);
    };
    let verdict = match run.last {
        Some((k, v)) if k == key => v,
        _ => {
            let v = egress(sub, table, main_l2, run.tx, key);
            run.last = Some((key, v));
            v
        }
    };
    let (after, pass) = match verdict {
        Egress::Drop(r) => return Err(r),
        Egress::Send { after, pass } => {
            // The frames after this one with its tag bytes take the fast path (the verdict
            // depends on the tags alone, so this holds for the rest of the run whatever comes in
            // between).
            if pass {
                if let Some(t) = TagBytes::of(frame, key.count) {
                    run.fast = Some((t, after));
                }
            }
            (after, pass)
        }
        Egress::PerFrame => {
            // The rewrite pops tags and pushes none: the tag left outermost is in the frame
            // already, `4 × pop` bytes after the first TPID.
            let Ok(mut after) = sub.egress.key_after(key) else {
                return Err(DropReason::EgressTooFewTags); // decided `Ok` by `egress`: a bug guard
            };
            let at = 12 + 4 * sub.egress.pop as usize;
            let Some(t) = frame.get(at..at + 2) else {
                return Err(DropReason::EgressTooFewTags);
            };
            after.outer_tpid = EtherType(u16::from_be_bytes([t[0], t[1]]));
            (after, passes(sub, table, main_l2, run.tx, after))
        }
    };
    if !pass {
        let vtr = &sub.egress;
        let start = pool.header(h).data_offset as usize;
        if start + 4 * (vtr.pop as usize) < 4 * vtr.n as usize {
            return Err(DropReason::NoHeadroom);
        }
        return Err(DropReason::EgressVlanMismatch);
    }
    Ok((sub, after))
}

/// One frame by the full path: decided ([`decide`]), rewritten, handed to the parent. A frame it
/// does not send gets its drop — or `hand_over` when given (the inline egress of
/// `interface-output`, [`inline`]), unchanged, so that this node drops it by name.
#[inline]
fn one(
    pool: &mut Pool,
    run: &mut Run<'_>,
    counters: &mut CounterRun,
    ifaces: &mut [Option<Interface>],
    h: u32,
    hand_over: Option<Next>,
) -> Next {
    let fail = |r: DropReason| hand_over.unwrap_or(r.next());
    let (sub, key) = match decide(pool, run, h) {
        Ok(d) => d,
        Err(r) => return fail(r),
    };
    if !sub.egress.is_none() {
        // Nothing changes when it fails.
        match move_tags(pool, h, &sub.egress) {
            Ok(()) => {}
            Err(RewriteError::NoHeadroom) => return fail(DropReason::NoHeadroom),
            // `read_tags` found the tags popped in the first buffer: a bug guard.
            Err(_) => return fail(DropReason::EgressTooFewTags),
        }
    }
    let hdr = pool.header_mut(h);
    hdr.l3_offset = 14 + 4 * key.count as u16;
    hdr.vlan = key.outer;
    hdr.inner_vlan = key.inner;
    hdr.tx_port = sub.parent;
    counters.add(ifaces, run.tx, hdr.total_len as u64, true);
    Next::arc(OUTPUT_ARC)
}

/// The run of packets at the start of `pkts` for the transmit interface of the first: each sent
/// on to the parent (`Next::arc(OUTPUT_ARC)`, counted in `counters`) or dropped (or, with
/// `hand_over`, given that, unchanged). Returns the run's length (at least 1 for a non-empty
/// `pkts`; `nexts` is as long as `pkts`).
#[inline(always)]
fn run_of(
    pool: &mut Pool,
    (vlan, subifs): (&VlanState, &SubIfTables),
    interfaces: &mut [Option<Interface>],
    counters: &mut CounterRun,
    pkts: &[u32],
    nexts: &mut [Next],
    hand_over: Option<Next>,
) -> usize {
    let Some(&first) = pkts.first() else {
        return 0;
    };
    let tx = pool.header(first).tx_port;
    let sub = vlan
        .sub(tx)
        .map(|s| match subifs.live_parent(interfaces, s.parent) {
            Some((t, l2)) => (s, Some(t), l2),
            None => (s, None, false),
        });
    let mut r = Run {
        tx,
        sub,
        last: None,
        fast: None,
    };
    let mut i = 0;
    loop {
        // The rest of a run of frames alike by the fast path, as far as it goes ...
        if let (Some((sub, _, _)), Some(f)) = (r.sub, r.fast) {
            let (done, bytes) = stretch(pool, sub, f, tx, &pkts[i..], &mut nexts[i..]);
            counters.add_run(interfaces, tx, done as u64, bytes, true);
            i += done;
        }
        // ... then one frame by the full one.
        match (pkts.get(i), nexts.get_mut(i)) {
            (Some(&h), Some(n)) if pool.header(h).tx_port == tx => {
                *n = one(pool, &mut r, counters, interfaces, h, hand_over);
                i += 1;
            }
            _ => return i,
        }
    }
}

/// The egress of a sub-interface done inline by `interface-output` (VPP's `l2-output` does its
/// VTR and EFP filter inline, `l2output_vtr`), for a sub-interface without `vlan-output` on its
/// arc (`Switch::place_vlan_output`: no other output feature on it or on its parent, so nothing
/// comes between). Takes the run of packets at the start of `pkts` for the first's transmit
/// interface, a sub-interface: those `vlan-output` would send are rewritten, handed to the parent
/// and answered `Next::arc(OUTPUT_ARC)` (the caller queues them on the parent's port); those it
/// would drop are answered `hand_over`, unchanged, and `vlan-output` drops them by name. Returns
/// the run's length. The sub-interface's `Interface::inline_egress` (a
/// [`crate::interface::InlineEgressFn`], called by `interface-output` through the pointer).
pub(crate) fn inline(
    pool: &mut Pool,
    state: &mut SwitchState,
    pkts: &[u32],
    nexts: &mut [Next],
    hand_over: Next,
) -> usize {
    let SwitchState {
        vlan,
        subifs,
        interfaces,
        ..
    } = state;
    let pkts = &pkts[..pkts.len().min(nexts.len())];
    let mut counters = CounterRun::default();
    let n = run_of(
        pool,
        (vlan, subifs),
        interfaces,
        &mut counters,
        pkts,
        nexts,
        Some(hand_over),
    );
    counters.flush(interfaces, true);
    n
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
        let SwitchState {
            vlan,
            subifs,
            interfaces,
            ..
        } = &mut *cx.state;
        let pool = &mut *cx.pool;
        // One next per packet (the graph hands over as many): each run takes at least one.
        let pkts = &pkts[..pkts.len().min(nexts.len())];
        let mut counters = CounterRun::default();
        let mut i = 0;
        // Run by run of packets for one transmit interface.
        while i < pkts.len() {
            i += run_of(
                pool,
                (vlan, subifs),
                interfaces,
                &mut counters,
                &pkts[i..],
                &mut nexts[i..],
                None,
            );
        }
        counters.flush(interfaces, true);
    }

    fn trace(&self, pool: &Pool, pkt: u32) -> String {
        let h = pool.header(pkt);
        format!(
            "tx-interface {} vlan {}/{} len {}",
            h.tx_port, h.vlan, h.inner_vlan, h.total_len
        )
    }
}
