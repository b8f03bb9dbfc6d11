//! `arp-input`: ARP on routed interfaces (RFC 826 "Packet Reception", with RFC 5227 §2.1's
//! conflict rule): a request for one of the interface's addresses is answered in place; the
//! sender of a request or reply for us is learned (or refreshed, or its MAC updated) if it is in
//! one of the interface's subnets; a gratuitous ARP (sender = target address) refreshes an entry
//! that exists and makes none. When an incomplete entry is resolved, the packets waiting for it
//! are rewritten and sent (emitted on the output arc). Static entries are never changed.
//!
//! Next: the `interface-output` arc (replies), or consumed (a reply or a gratuitous ARP is freed
//! here after it was used, counted below).
//! Drops: `malformed` (too short, or not Ethernet/IPv4 ARP), `bad-sender` (a group MAC or a
//! non-unicast sender address), `address-conflict` (another station claims one of our
//! addresses), `not-for-us` (a request for another address; its sender refreshed if known),
//! `unknown-operation`. Counters: `requests-answered`, `replies-received`, `gratuitous`,
//! `learned`, `updated`, `neighbor-limit`, `pending-sent`, `pending-no-room`.
//! Trace: the ARP message as tcpdump says it.

use std::net::Ipv4Addr;

use vecswitch_buffer::Pool;
use vecswitch_graph::{named_enum, Cx, Next, Node, NodeInfo};
use vecswitch_wire::{ArpOperation, ArpPacket, ArpRepr, EthernetAddress};

use super::resolve::{self, MergeCounters};
use super::V4;
use crate::interface::TO_OUTPUT;
use crate::state::SwitchState;

/// The node's name.
pub const NAME: &str = "arp-input";

named_enum! {
    /// Drop reasons of `arp-input`.
    pub enum DropReason as drop {
        Malformed = "malformed",
        BadSender = "bad-sender",
        AddressConflict = "address-conflict",
        NotForUs = "not-for-us",
        UnknownOperation = "unknown-operation",
    }
}
named_enum! {
    /// Counters of `arp-input`.
    pub enum Counter as counter {
        RequestsAnswered = "requests-answered",
        RepliesReceived = "replies-received",
        Gratuitous = "gratuitous",
        Learned = "learned",
        Updated = "updated",
        NeighborLimit = "neighbor-limit",
        PendingSent = "pending-sent",
        PendingNoRoom = "pending-no-room",
    }
}

/// The `arp-input` node.
#[derive(Debug, Default)]
pub struct ArpInput;

/// A whole Ethernet + ARP frame (42 bytes, no padding).
pub fn arp_frame(
    op: ArpOperation,
    src_mac: EthernetAddress,
    src_ip: Ipv4Addr,
    dst_mac: EthernetAddress,
    target_mac: EthernetAddress,
    target_ip: Ipv4Addr,
) -> [u8; 42] {
    let mut f = [0u8; 42];
    f[..6].copy_from_slice(&dst_mac.0);
    f[6..12].copy_from_slice(&src_mac.0);
    f[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
    ArpRepr {
        operation: op,
        source_hardware_addr: src_mac,
        source_protocol_addr: src_ip,
        target_hardware_addr: target_mac,
        target_protocol_addr: target_ip,
    }
    .emit(&mut ArpPacket::new_unchecked(&mut f[14..]));
    f
}

/// The counters the shared merge adds to (every change of the MAC is an update, RFC 826).
const MERGE: MergeCounters = MergeCounters {
    resolve_is_update: true,
    learned: Counter::Learned.index(),
    updated: Counter::Updated.index(),
    neighbor_limit: Counter::NeighborLimit.index(),
    pending_sent: Counter::PendingSent.index(),
    pending_no_room: Counter::PendingNoRoom.index(),
};

#[inline]
fn one(cx: &mut Cx<'_, SwitchState>, h: u32) -> Next {
    let hdr = cx.pool.header(h);
    let (rx, off) = (hdr.rx_port, hdr.l3_offset as usize);
    let Some(arp) = cx
        .pool
        .data(h)
        .get(off..)
        .and_then(|d| ArpRepr::parse(&ArpPacket::new_unchecked(d)).ok())
    else {
        return DropReason::Malformed.next();
    };
    let (sip, smac, tip) = (
        arp.source_protocol_addr,
        arp.source_hardware_addr,
        arp.target_protocol_addr,
    );
    if !smac.is_unicast() || sip.is_multicast() || sip.is_broadcast() || sip.is_loopback() {
        return DropReason::BadSender.next();
    }
    let Some(me) = cx.state.ip.iface(rx) else {
        return DropReason::NotForUs.next();
    };
    if me.has_addr(sip) {
        return DropReason::AddressConflict.next();
    }
    let for_us = me.has_addr(tip);
    let in_subnet = me.addr_for(sip).is_some();
    let gratuitous = sip == tip;
    if gratuitous {
        cx.counters.add(Counter::Gratuitous.index(), 1);
    }
    // RFC 826: an ARP probe (sender 0.0.0.0, RFC 5227 §2.1.1) teaches nothing.
    if in_subnet && !sip.is_unspecified() {
        // RFC 826's merge: the sender's MAC replaces what the entry held.
        resolve::merge::<V4>(cx, rx, sip, smac, for_us && !gratuitous, true, MERGE);
    }
    match arp.operation {
        ArpOperation::REQUEST if for_us => {
            let Some(mac) = cx.state.interface(rx).map(|i| i.mac) else {
                return DropReason::NotForUs.next();
            };
            let reply = arp_frame(ArpOperation::REPLY, mac, tip, smac, smac, sip);
            // Replace the request by the reply (the request's tags go: untagged reply).
            cx.pool.write_packet(h, &reply);
            let hdr = cx.pool.header_mut(h);
            hdr.l3_offset = 14;
            hdr.vlan = 0;
            hdr.inner_vlan = 0;
            hdr.tx_port = rx;
            cx.counters.add(Counter::RequestsAnswered.index(), 1);
            TO_OUTPUT
        }
        ArpOperation::REQUEST if gratuitous => {
            cx.pool.free(h);
            Next::CONSUMED
        }
        ArpOperation::REQUEST => DropReason::NotForUs.next(),
        ArpOperation::REPLY => {
            cx.counters.add(Counter::RepliesReceived.index(), 1);
            cx.pool.free(h);
            Next::CONSUMED
        }
        _ => DropReason::UnknownOperation.next(),
    }
}

impl Node<SwitchState> for ArpInput {
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
        let off = pool.header(pkt).l3_offset as usize;
        pool.data(pkt)
            .get(off..)
            .and_then(|d| ArpRepr::parse(&ArpPacket::new_unchecked(d)).ok())
            .map_or_else(|| "not arp".to_string(), |a| a.to_string())
    }
}
