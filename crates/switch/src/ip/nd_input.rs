//! `ip6-nd`: Neighbor Discovery (RFC 4861) on routed interfaces, for the switch's own addresses
//! (global and link-local); duplicate address detection is answered but not performed.
//!
//! - A **neighbor solicitation** for one of the receive interface's addresses is answered in place
//!   with a neighbor advertisement (RFC 4861 §7.2.4: router, solicited and override flags, the
//!   target link-layer address option), unicast to the soliciting host, or to all-nodes with the
//!   solicited flag clear when the solicitation came from the unspecified address (a host's DAD).
//!   Its source link-layer address is learned (§7.2.3) when the source is on-link (link-local, or
//!   in one of the interface's subnets).
//! - A **neighbor advertisement** updates an entry that exists (§7.2.5: none is created), and
//!   when it resolves an incomplete one the packets waiting for it are rewritten and sent on the
//!   output arc. A resolved entry changes its MAC only when the override flag is set.
//!
//! Every message is validated first (§7.1.1, §7.1.2): hop limit 255 (it was not forwarded), the
//! ICMPv6 checksum, code 0, length and options, a target that is not multicast, and for a
//! solicitation from the unspecified address a solicited-node destination and no source
//! link-layer address option. Static entries are never changed.
//!
//! Next: the `interface-output` arc (advertisements), or consumed (an advertisement is freed here
//! after it was used, counted below). Drops: `malformed`, `bad-hop-limit`, `bad-checksum`,
//! `bad-target` (multicast), `bad-source` (a DAD solicitation breaking §7.1.1), `bad-solicited-flag`
//! (a multicast advertisement with the solicited flag), `not-for-us` (a solicitation for another
//! address — hosts' own DAD probes end here), `address-conflict` (another station claims one of
//! our addresses), `no-link-layer-address` (an advertisement without the option, §7.2.5),
//! `unknown-message`. Counters: `solicitations-answered`, `dad-answered`,
//! `advertisements-received`, `learned`, `updated`, `neighbor-limit`, `pending-sent`,
//! `pending-no-room`. Trace: the message as `wire` prints it.

use std::net::Ipv6Addr;

use vecswitch_buffer::Pool;
use vecswitch_graph::{named_enum, Cx, Next, Node, NodeInfo};
use vecswitch_wire::{EthernetAddress, Icmpv6Packet, Icmpv6Repr, IpProtocol, Ipv6Packet, Ipv6Repr};

use super::icmp6::fill_icmp6_checksum;
use super::ip6::{is_link_local, multicast_mac, solicited_node, ALL_NODES};
use super::resolve::{self, MergeCounters};
use super::V6;
use crate::interface::{SwIfIdx, TO_OUTPUT};
use crate::state::SwitchState;

/// The node's name.
pub const NAME: &str = "ip6-nd";

named_enum! {
    /// Drop reasons of `ip6-nd`.
    pub enum DropReason as drop {
        Malformed = "malformed",
        BadHopLimit = "bad-hop-limit",
        BadChecksum = "bad-checksum",
        BadTarget = "bad-target",
        BadSource = "bad-source",
        BadSolicitedFlag = "bad-solicited-flag",
        NotForUs = "not-for-us",
        AddressConflict = "address-conflict",
        NoLinkLayerAddress = "no-link-layer-address",
        UnknownMessage = "unknown-message",
    }
}
named_enum! {
    /// Counters of `ip6-nd`.
    pub enum Counter as counter {
        SolicitationsAnswered = "solicitations-answered",
        DadAnswered = "dad-answered",
        AdvertisementsReceived = "advertisements-received",
        Learned = "learned",
        Updated = "updated",
        NeighborLimit = "neighbor-limit",
        PendingSent = "pending-sent",
        PendingNoRoom = "pending-no-room",
    }
}

/// The `ip6-nd` node.
#[derive(Debug, Default)]
pub struct NdInput;

/// A whole Ethernet + IPv6 + ICMPv6 frame (hop limit 255, RFC 4861 §7.1) carrying `msg`.
fn nd_frame(
    src_mac: EthernetAddress,
    dst_mac: EthernetAddress,
    src: Ipv6Addr,
    dst: Ipv6Addr,
    msg: Icmpv6Repr,
) -> Vec<u8> {
    let ip = Ipv6Repr {
        hop_limit: 255,
        ..Ipv6Repr::new(src, dst, IpProtocol::ICMPV6, msg.buffer_len())
    };
    let mut f = vec![0u8; 14 + 40 + msg.buffer_len()];
    f[..6].copy_from_slice(&dst_mac.0);
    f[6..12].copy_from_slice(&src_mac.0);
    f[12..14].copy_from_slice(&0x86ddu16.to_be_bytes());
    ip.emit(&mut Ipv6Packet::new_unchecked(&mut f[14..54]));
    msg.emit(&mut Icmpv6Packet::new_unchecked(&mut f[54..]));
    fill_icmp6_checksum(&mut f[14..]);
    f
}

/// A neighbor solicitation for `target` from `src` (RFC 4861 §4.3, §7.2.2): to the target's
/// solicited-node address, with the source link-layer address option.
pub fn solicitation_frame(mac: EthernetAddress, src: Ipv6Addr, target: Ipv6Addr) -> Vec<u8> {
    let dst = solicited_node(target);
    let msg = Icmpv6Repr::NeighborSolicit {
        target_addr: target,
        source_lladdr: Some(mac),
    };
    nd_frame(mac, multicast_mac(dst), src, dst, msg)
}

/// A router's neighbor advertisement for our `target` (RFC 4861 §4.4, §7.2.4: router and
/// override flags, the target link-layer address option) to `dst` at `dst_mac`.
pub fn advertisement_frame(
    mac: EthernetAddress,
    target: Ipv6Addr,
    dst_mac: EthernetAddress,
    dst: Ipv6Addr,
    solicited: bool,
) -> Vec<u8> {
    let msg = Icmpv6Repr::NeighborAdvert {
        router: true,
        solicited,
        override_flag: true,
        target_addr: target,
        target_lladdr: Some(mac),
    };
    nd_frame(mac, dst_mac, target, dst, msg)
}

/// Sends a neighbor solicitation for `target` out of `iface` (from the interface's address best
/// suited to the target) as a new packet on the output arc. False without a buffer or address.
pub(crate) fn send_solicitation(
    cx: &mut Cx<'_, SwitchState>,
    iface: SwIfIdx,
    target: Ipv6Addr,
) -> bool {
    let Some(mac) = cx.state.interface(iface).map(|i| i.mac) else {
        return false;
    };
    let Some(src) = cx
        .state
        .ip
        .v6
        .iface(iface)
        .and_then(|f| f.source_for(target))
    else {
        return false;
    };
    let Some(p) = cx.pool.alloc() else {
        return false;
    };
    cx.pool
        .write_packet(p, &solicitation_frame(mac, src, target));
    let hdr = cx.pool.header_mut(p);
    hdr.l3_offset = 14;
    hdr.ethertype = 0x86dd;
    hdr.tx_port = iface;
    hdr.rx_port = iface;
    cx.emit.push(p, TO_OUTPUT);
    true
}

/// The counters the shared merge adds to (a MAC learned for an incomplete entry is not an
/// update: only the change of a known one, RFC 4861 §7.2.5).
const MERGE: MergeCounters = MergeCounters {
    resolve_is_update: false,
    learned: Counter::Learned.index(),
    updated: Counter::Updated.index(),
    neighbor_limit: Counter::NeighborLimit.index(),
    pending_sent: Counter::PendingSent.index(),
    pending_no_room: Counter::PendingNoRoom.index(),
};

/// The message of packet `h` with its addresses and the frame's source MAC, validated.
fn parse(
    pool: &Pool,
    h: u32,
) -> Result<(Ipv6Addr, Ipv6Addr, EthernetAddress, Icmpv6Repr), DropReason> {
    let data = pool.data(h);
    let off = pool.header(h).l3_offset as usize;
    let smac = data
        .get(6..12)
        .and_then(EthernetAddress::from_slice)
        .ok_or(DropReason::Malformed)?;
    let ip = data
        .get(off..)
        .and_then(|d| Ipv6Packet::new_checked(d).ok())
        .ok_or(DropReason::Malformed)?;
    if ip.next_header() != IpProtocol::ICMPV6 {
        return Err(DropReason::Malformed);
    }
    if ip.hop_limit() != 255 {
        return Err(DropReason::BadHopLimit);
    }
    let (src, dst) = (ip.src_addr(), ip.dst_addr());
    let msg = Icmpv6Packet::new_checked(ip.payload()).map_err(|_| DropReason::Malformed)?;
    let repr = Icmpv6Repr::parse(&msg, &src, &dst).map_err(|e| match e {
        vecswitch_wire::Error::BadChecksum { .. } => DropReason::BadChecksum,
        _ => DropReason::Malformed,
    })?;
    Ok((src, dst, smac, repr))
}

#[inline]
fn one(cx: &mut Cx<'_, SwitchState>, h: u32) -> Next {
    let rx = cx.pool.header(h).rx_port;
    let (src, dst, smac, repr) = match parse(cx.pool, h) {
        Ok(x) => x,
        Err(r) => return r.next(),
    };
    let Some(me) = cx.state.ip.v6.iface(rx) else {
        return DropReason::NotForUs.next();
    };
    let on_link = is_link_local(src) || me.addr_for(src).is_some();
    match repr {
        Icmpv6Repr::NeighborSolicit {
            target_addr,
            source_lladdr,
        } => {
            let dad = src.is_unspecified();
            if target_addr.is_multicast() {
                return DropReason::BadTarget.next();
            }
            if dad && (!me.solicited_for(dst) || source_lladdr.is_some()) {
                return DropReason::BadSource.next();
            }
            if !me.has_addr(target_addr) {
                return DropReason::NotForUs.next();
            }
            if me.has_addr(src) {
                return DropReason::AddressConflict.next();
            }
            let Some(mac) = cx.state.interface(rx).map(|i| i.mac) else {
                return DropReason::NotForUs.next();
            };
            if let (Some(l), false, true) = (source_lladdr, dad, on_link) {
                resolve::merge::<V6>(cx, rx, src, l, true, true, MERGE);
            }
            let reply = if dad {
                advertisement_frame(mac, target_addr, multicast_mac(ALL_NODES), ALL_NODES, false)
            } else {
                advertisement_frame(mac, target_addr, source_lladdr.unwrap_or(smac), src, true)
            };
            // Replace the solicitation by the advertisement (its tags go: untagged reply).
            cx.pool.write_packet(h, &reply);
            let hdr = cx.pool.header_mut(h);
            hdr.l3_offset = 14;
            hdr.vlan = 0;
            hdr.inner_vlan = 0;
            hdr.ethertype = 0x86dd;
            hdr.tx_port = rx;
            let c = if dad {
                Counter::DadAnswered
            } else {
                Counter::SolicitationsAnswered
            };
            cx.counters.add(c.index(), 1);
            TO_OUTPUT
        }
        Icmpv6Repr::NeighborAdvert {
            solicited,
            override_flag,
            target_addr,
            target_lladdr,
            ..
        } => {
            if target_addr.is_multicast() {
                return DropReason::BadTarget.next();
            }
            if dst.is_multicast() && solicited {
                return DropReason::BadSolicitedFlag.next();
            }
            if me.has_addr(target_addr) {
                return DropReason::AddressConflict.next();
            }
            let Some(l) = target_lladdr else {
                return DropReason::NoLinkLayerAddress.next();
            };
            cx.counters.add(Counter::AdvertisementsReceived.index(), 1);
            resolve::merge::<V6>(cx, rx, target_addr, l, false, override_flag, MERGE);
            cx.pool.free(h);
            Next::CONSUMED
        }
        _ => DropReason::UnknownMessage.next(),
    }
}

impl Node<SwitchState> for NdInput {
    fn info(&self) -> NodeInfo {
        NodeInfo {
            name: NAME,
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
        match parse(pool, pkt) {
            Ok((src, dst, _, m)) => format!("{src} > {dst} {m}"),
            Err(r) => format!("not neighbor discovery ({})", r.name()),
        }
    }
}
