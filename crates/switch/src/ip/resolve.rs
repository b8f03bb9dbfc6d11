//! Neighbour resolution as `ip4-rewrite` and `ip6-rewrite`, `arp-input` and `ip6-nd` share it,
//! written once over the family ([`Resolve`]): the next hop's MAC from the neighbour table (the
//! adjacency's slot hint first, then the hash), the *glean* of a miss (an incomplete entry, the
//! packet held on its bounded pending queue, one request — ARP or neighbor solicitation — sent),
//! the aging step with its retries, and the merge of an answer (learn, refresh or update, then
//! send the packets that waited). What differs by family is behind [`Resolve`]: how the request is
//! made (ARP, RFC 826; neighbor solicitation, RFC 4861 §7.2.2) and how a packet is rewritten (TTL
//! with the RFC 1624 checksum update, or the hop limit).
//!
//! The nodes keep their own names, drop reasons and counters: the shared code answers the drop
//! reasons the node names in [`HoldDrops`] and adds to the counters it names in [`HoldCounters`] /
//! [`MergeCounters`].

use vecswitch_buffer::Pool;
use vecswitch_graph::{Cx, Next};
use vecswitch_wire::EthernetAddress;

use super::family::{IpFamily, V4, V6};
use super::ip4_rewrite::write_l2;
use super::neighbor::Neighbor;
use super::AdjIdx;
use crate::interface::{SwIfIdx, TO_OUTPUT};
use crate::state::SwitchState;

/// Neighbour slots looked at per aging step (one step a second at most).
pub const AGE_SLOTS_PER_STEP: usize = 1024;

/// A family's rewrite of a forwarded packet (`ip4_rewrite::rewrite`, `ip6_rewrite::rewrite`):
/// `(pool, packet, destination MAC, source MAC, transmit interface, decrement the TTL / hop
/// limit)`, false if the buffer has no room (never for a packet `ethernet-input` accepted).
pub type RewriteFn = fn(&mut Pool, u32, EthernetAddress, EthernetAddress, SwIfIdx, bool) -> bool;

/// The family-specific half of neighbour resolution (constants, so that each use is a direct
/// call in the monomorphised code).
pub trait Resolve: IpFamily {
    /// Sends a request for a target's MAC out of an interface as a new packet on the output arc
    /// (ARP request, neighbor solicitation). False without a buffer or a source address.
    const SOLICIT: fn(&mut Cx<'_, SwitchState>, SwIfIdx, Self::Ip) -> bool;
    /// The rewrite of a forwarded packet: MACs, tags removed, `tx_port`, TTL / hop limit.
    const REWRITE: RewriteFn;
    /// The TTL / hop limit decrement alone (a packet held for resolution: its MACs are written
    /// when it leaves).
    const DECREMENT_TTL: fn(&mut Pool, u32);
}

impl Resolve for V4 {
    const SOLICIT: fn(&mut Cx<'_, SwitchState>, SwIfIdx, Self::Ip) -> bool =
        super::ip4_rewrite::send_arp_request;
    const REWRITE: RewriteFn = super::ip4_rewrite::rewrite;
    const DECREMENT_TTL: fn(&mut Pool, u32) = super::ip4_rewrite::decrement_ttl;
}

impl Resolve for V6 {
    const SOLICIT: fn(&mut Cx<'_, SwitchState>, SwIfIdx, Self::Ip) -> bool =
        super::nd_input::send_solicitation;
    const REWRITE: RewriteFn = super::ip6_rewrite::rewrite;
    const DECREMENT_TTL: fn(&mut Pool, u32) = super::ip6_rewrite::decrement_hop_limit;
}

/// What a rewrite node makes of the outcomes of [`forward`] that are not "sent" or "held": its
/// own drop reasons.
#[derive(Debug, Clone, Copy)]
pub struct HoldDrops {
    /// The pending queue is full (`arp_pending`): `pending-full`.
    pub pending_full: Next,
    /// No entry could be made (`neighbor_limit`): `neighbor-limit`.
    pub neighbor_limit: Next,
    /// The rewrite found no room (never for a packet `ethernet-input` accepted).
    pub no_room: Next,
    /// The neighbour slot vanished under us (a bug guard).
    pub bad_slot: Next,
}

/// The counters (indices into the rewrite node's counters) the resolution adds to.
#[derive(Debug, Clone, Copy)]
pub struct HoldCounters {
    /// A packet held for resolution (`held-for-arp`, `held-for-nd`).
    pub held: u16,
    /// A request sent (`arp-requests-sent`, `solicitations-sent`).
    pub asked: u16,
    /// A request not sent for want of a buffer (`arp-no-buffer`, `nd-no-buffer`).
    pub no_buffer: u16,
    /// Held packets freed when their neighbour was given up (`pending-timed-out`).
    pub timed_out: u16,
    /// Entries removed by aging (`neighbors-aged-out`).
    pub aged_out: u16,
}

/// Sends packet `h` (adjacency `adj`) to next hop `nh` on `iface` whose MAC is `src_mac`: rewritten
/// at once when the neighbour is resolved (the output arc), else held while a request asks for it
/// (glean: consumed), or dropped with the node's reason `d`. `local`: made by the switch (no TTL
/// decrement).
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn forward<F: Resolve>(
    cx: &mut Cx<'_, SwitchState>,
    h: u32,
    adj: AdjIdx,
    iface: SwIfIdx,
    nh: F::Ip,
    src_mac: EthernetAddress,
    local: bool,
    (c, d): (HoldCounters, HoldDrops),
) -> Next {
    let sent = |ok: bool| if ok { TO_OUTPUT } else { d.no_room };
    let ip = &mut cx.state.ip;
    let t = F::tables_mut(ip);
    let hint = t.adjs.nbr_hint(adj);
    // Fast path: the adjacency's remembered neighbour slot still holds the next hop, resolved.
    if let Some(n) = t.neighbors.get(hint) {
        if let (true, Some(mac)) = (n.iface == iface && n.ip == nh, n.mac) {
            return sent((F::REWRITE)(cx.pool, h, mac, src_mac, iface, !local));
        }
    }
    let slot = match t.neighbors.find_hinted(hint, iface, nh) {
        Some(i) => {
            if i != hint {
                t.adjs.set_nbr_hint(adj, i);
            }
            i
        }
        None => {
            let n = Neighbor::new(iface, nh, None, false, cx.state.now_s);
            let limit = cx.state.ip.settings.neighbor_limit;
            let t = F::tables_mut(&mut cx.state.ip);
            match t.neighbors.insert(n, limit) {
                Ok(i) => i,
                Err(_) => return d.neighbor_limit,
            }
        }
    };
    let pending_max = cx.state.ip.settings.arp_pending as usize;
    let Some(n) = F::tables_mut(&mut cx.state.ip).neighbors.get_mut(slot) else {
        return d.bad_slot;
    };
    if let Some(mac) = n.mac {
        return sent((F::REWRITE)(cx.pool, h, mac, src_mac, iface, !local));
    }
    // Glean: hold the packet, ask for the MAC if nobody asked yet.
    if n.pending.len() >= pending_max {
        return d.pending_full;
    }
    if !local {
        (F::DECREMENT_TTL)(cx.pool, h);
    }
    n.pending.push(h);
    cx.pool.header_mut(h).tx_port = iface;
    let ask = n.requests == 0;
    if ask {
        n.requests = 1;
        n.last_request_s = cx.state.now_s;
    }
    cx.counters.add(c.held, 1);
    if ask {
        ask_for::<F>(cx, iface, nh, c);
    }
    Next::CONSUMED
}

/// Sends a request for `target` out of `iface`, counted.
fn ask_for<F: Resolve>(
    cx: &mut Cx<'_, SwitchState>,
    iface: SwIfIdx,
    target: F::Ip,
    c: HoldCounters,
) {
    let i = if (F::SOLICIT)(cx, iface, target) {
        c.asked
    } else {
        c.no_buffer
    };
    cx.counters.add(i, 1);
}

/// One aging step of the family's neighbour table, at most once per switch second: removes what
/// aged out (freeing and counting pending packets) and asks again for incomplete entries.
pub fn age_step<F: Resolve>(cx: &mut Cx<'_, SwitchState>, c: HoldCounters) {
    let now = cx.state.now_s;
    let s = cx.state.ip.settings;
    let t = F::tables_mut(&mut cx.state.ip);
    if now == t.last_age_s {
        return;
    }
    t.last_age_s = now;
    let mut retry = Vec::new();
    let gone = t.neighbors.age(
        now,
        s.neighbor_age_s,
        s.arp_max_requests,
        AGE_SLOTS_PER_STEP,
        &mut retry,
    );
    for n in gone {
        cx.counters.add(c.aged_out, 1);
        cx.counters.add(c.timed_out, n.pending.len() as u64);
        for p in n.pending {
            cx.pool.free(p);
        }
    }
    for i in retry {
        let t = F::tables(&cx.state.ip);
        let Some((iface, ip)) = t.neighbors.get(i).map(|n| (n.iface, n.ip)) else {
            continue;
        };
        ask_for::<F>(cx, iface, ip, c);
        if let Some(n) = F::tables_mut(&mut cx.state.ip).neighbors.get_mut(i) {
            n.requests += 1;
            n.last_request_s = now;
        }
    }
}

/// The counters (indices into `arp-input`'s or `ip6-nd`'s counters) a merge adds to.
#[derive(Debug, Clone, Copy)]
pub struct MergeCounters {
    /// Whether resolving an incomplete entry counts as `updated` too (`arp-input` counts every
    /// change of the MAC, `ip6-nd` only the change of a known one).
    pub resolve_is_update: bool,
    pub learned: u16,
    pub updated: u16,
    pub neighbor_limit: u16,
    pub pending_sent: u16,
    pub pending_no_room: u16,
}

/// Learns (`create`), refreshes or updates neighbour `(iface, ip)` at `mac` from an answer (RFC
/// 826's merge; RFC 4861 §7.2.5): a resolved entry changes its MAC only with `override_flag`
/// (always for ARP); static entries never change. Sends the packets that waited for it.
pub fn merge<F: Resolve>(
    cx: &mut Cx<'_, SwitchState>,
    iface: SwIfIdx,
    ip: F::Ip,
    mac: EthernetAddress,
    create: bool,
    override_flag: bool,
    c: MergeCounters,
) {
    let now = cx.state.now_s;
    let limit = cx.state.ip.settings.neighbor_limit;
    let t = &mut F::tables_mut(&mut cx.state.ip).neighbors;
    let pending = match t.find(iface, ip) {
        Some(i) => {
            let Some(n) = t.get_mut(i) else { return };
            if n.is_static {
                return;
            }
            let changed = n.mac != Some(mac);
            match n.mac {
                Some(_) if changed && !override_flag => return,
                Some(_) if changed => cx.counters.add(c.updated, 1),
                None if c.resolve_is_update => cx.counters.add(c.updated, 1),
                None | Some(_) => {}
            }
            n.mac = Some(mac);
            n.updated_s = now;
            std::mem::take(&mut n.pending)
        }
        None if create => {
            let i = match t.insert(Neighbor::new(iface, ip, Some(mac), false, now), limit) {
                Ok(_) => c.learned,
                Err(_) => c.neighbor_limit,
            };
            cx.counters.add(i, 1);
            return;
        }
        None => return,
    };
    let Some(src) = cx.state.interface(iface).map(|i| i.mac) else {
        for p in pending {
            cx.pool.free(p);
        }
        return;
    };
    for p in pending {
        if write_l2(cx.pool, p, mac, src, iface, F::ETHERTYPE) {
            cx.counters.add(c.pending_sent, 1);
            cx.emit.push(p, TO_OUTPUT);
        } else {
            cx.counters.add(c.pending_no_room, 1);
            cx.pool.free(p);
        }
    }
}
