//! `ethernet-input`: the first L2 node of every received frame (after `interface-rx` and the input arc). It validates the L2 header once with
//! `wire::L2Header::parse` (addresses, up to two VLAN tags — IEEE 802.1Q-2018 §9.6 — and the final
//! type/length, IEEE 802.3 §3.2.6), records what later nodes need in the buffer header (`l3_offset`,
//! `vlan`, `inner_vlan`, `ethertype`, and `bd` for bridge members), and classifies the frame by its
//! receive interface's service.
//!
//! Next edges: `l2-xconnect`, `l2-learn` (bridge that learns), `l2-fwd` (bridge that does not),
//! `ip4-input` / `arp-input` (untagged IPv4 / ARP on a routed interface: one with an IPv4 address
//! and no L2 service; unicast frames to another MAC are dropped as `l3-mac-mismatch`).
//! Drops: `admin-down` (receive interface administratively down), `no-service` (interface has no
//! service, or is gone),
//! `no-bridge` (bridge gone; a bug guard), and the wire errors by name: `runt`, `truncated-vlan-tag`,
//! `too-many-vlan-tags`, `bad-length-field`, and `malformed` for any other parse error; the input
//! hygiene of `crate::l2::hygiene`: `src-mac-multicast`, `src-mac-zero`, `over-mtu` (receive
//! interface's MTU); 14–59-byte frames are forwarded (the runt policy there).
//! Trace: `ethertype 0x0800 vlan V/I l3-offset N rx-port P`.

use vecswitch_buffer::Pool;
use vecswitch_graph::{Cx, Next, Node, NodeInfo};
use vecswitch_wire::{Error as WireError, L2Header};

use vecswitch_graph::named_enum;

use super::Service;
use crate::ip::L3Input;
use crate::l2::hygiene;
use crate::state::SwitchState;

named_enum! {
    /// Next edges of `ethernet-input`.
    pub enum Edge as edge {
        L2Xconnect = "l2-xconnect",
        L2Learn = "l2-learn",
        L2Fwd = "l2-fwd",
        Ip4Input = "ip4-input",
        ArpInput = "arp-input",
    }
}
named_enum! {
    /// Drop reasons of `ethernet-input`.
    pub enum DropReason as drop {
        AdminDown = "admin-down",
        NoService = "no-service",
        NoBridge = "no-bridge",
        Runt = "runt",
        TruncatedVlanTag = "truncated-vlan-tag",
        TooManyVlanTags = "too-many-vlan-tags",
        BadLengthField = "bad-length-field",
        Malformed = "malformed",
        L3MacMismatch = "l3-mac-mismatch",
        SrcMacMulticast = "src-mac-multicast",
        SrcMacZero = "src-mac-zero",
        OverMtu = "over-mtu",
    }
}

impl DropReason {
    /// The drop reason for a wire parse error (named as `wire::Error::reason` names it).
    pub fn from_wire(e: &WireError) -> DropReason {
        match e {
            WireError::Runt { .. } => DropReason::Runt,
            WireError::TruncatedVlanTag { .. } => DropReason::TruncatedVlanTag,
            WireError::TooManyVlanTags { .. } => DropReason::TooManyVlanTags,
            WireError::BadLengthField { .. } => DropReason::BadLengthField,
            _ => DropReason::Malformed,
        }
    }
}

/// The `ethernet-input` node.
#[derive(Debug, Default)]
pub struct EthernetInput;

#[inline]
fn one(cx: &mut Cx<'_, SwitchState>, h: u32) -> Next {
    let rx = cx.pool.header(h).rx_port;
    let Some(iface) = cx.state.interface(rx) else {
        return DropReason::NoService.next();
    };
    if !iface.admin_up {
        return DropReason::AdminDown.next();
    }
    let (service, mac) = (iface.service, iface.mac);
    let l2 = match L2Header::parse(cx.pool.data(h)) {
        Ok(l2) => l2,
        Err(e) => return DropReason::from_wire(&e).next(),
    };
    let hdr = cx.pool.header_mut(h);
    match hygiene::check(&l2.src_addr, hdr.total_len, l2.l3_offset, iface.mtu) {
        Ok(()) => {}
        Err(hygiene::Bad::SrcMacMulticast) => return DropReason::SrcMacMulticast.next(),
        Err(hygiene::Bad::SrcMacZero) => return DropReason::SrcMacZero.next(),
        Err(hygiene::Bad::OverMtu) => return DropReason::OverMtu.next(),
    }
    // l3_offset is at most 22 (two tags), so it fits.
    hdr.l3_offset = l2.l3_offset as u16;
    hdr.vlan = l2.outer.map_or(0, |t| t.vid);
    hdr.inner_vlan = l2.inner.map_or(0, |t| t.vid);
    hdr.ethertype = l2.ethertype.0;
    match service {
        // An interface with no L2 service may be routed (the `ip` feature).
        Service::None => {
            match crate::ip::classify(&cx.state.ip, rx, mac, l2.dst_addr, hdr.ethertype, hdr.vlan) {
                Some(L3Input::Ip4) => Edge::Ip4Input.next(),
                Some(L3Input::Arp) => Edge::ArpInput.next(),
                Some(L3Input::MacMismatch) => DropReason::L3MacMismatch.next(),
                Some(L3Input::Other) | None => DropReason::NoService.next(),
            }
        }
        Service::Xconnect { .. } => Edge::L2Xconnect.next(),
        Service::Bridge { bd } => {
            hdr.bd = bd;
            match cx.state.bridge(bd) {
                Some(b) if b.settings.learn => Edge::L2Learn.next(),
                Some(_) => Edge::L2Fwd.next(),
                None => DropReason::NoBridge.next(),
            }
        }
    }
}

impl Node<SwitchState> for EthernetInput {
    fn info(&self) -> NodeInfo {
        NodeInfo {
            name: "ethernet-input",
            next_nodes: Edge::NAMES,
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
            "ethertype {:#06x} vlan {}/{} l3-offset {} rx-port {} len {}",
            h.ethertype, h.vlan, h.inner_vlan, h.l3_offset, h.rx_port, h.total_len
        )
    }
}
