//! `bond-input`: the first feature of the `device-input` arc on every bond member (VPP's
//! `bond-input`). A LACPDU (Slow Protocols, subtype 1, IEEE 802.1AX-2014 §6.4.2.3) is handed to
//! the member's LACP receive machine and consumed (counted `lacpdus`); any other frame, if the
//! member collects (see [`super::Bond::collects`]), continues *as received on the bond*: its
//! `rx_port` becomes the bond's interface, it is counted there, and the rest of the arc (the
//! bond's input features, then `ethernet-input` with the bond's service) sees the bond.
//!
//! Next: the `device-input` arc. Drops: `not-collecting` (member down, not the active member of an
//! active-backup bond, or not distributing in LACP), `bad-lacpdu` (malformed: see
//! `lacpdu::LacpError`), `lacp-off` (a LACPDU on a bond that does not run LACP: Linux drops
//! them too), `slow-protocol` (other Slow Protocols subtypes, e.g. the marker protocol, which this
//! switch does not answer), `not-member` (a bug guard). Counter: `lacpdus`.
//! Trace: `member M bond B`.

use super::lacpdu::{Lacpdu, SLOW_PROTOCOLS_ETHERTYPE};
use vecswitch_buffer::Pool;
use vecswitch_graph::{named_enum, Cx, Next, Node, NodeInfo};

use crate::interface::INPUT_ARC;
use crate::state::SwitchState;

/// The node's name.
pub const NAME: &str = "bond-input";

named_enum! {
    /// Drop reasons of `bond-input`.
    pub enum DropReason as drop {
        NotCollecting = "not-collecting",
        BadLacpdu = "bad-lacpdu",
        LacpOff = "lacp-off",
        SlowProtocol = "slow-protocol",
        NotMember = "not-member",
    }
}
named_enum! {
    /// Counters of `bond-input`.
    pub enum Counter as counter { Lacpdus = "lacpdus" }
}

/// The `bond-input` node.
#[derive(Debug, Default)]
pub struct BondInput;

#[inline]
fn one(cx: &mut Cx<'_, SwitchState>, h: u32) -> Next {
    let rx = cx.pool.header(h).rx_port;
    let st = &mut *cx.state;
    let Some((b, m)) = st.bonds.member_of.get(rx as usize).copied().flatten() else {
        return DropReason::NotMember.next();
    };
    let Some(bond) = st.bonds.bonds.get_mut(b as usize).and_then(Option::as_mut) else {
        return DropReason::NotMember.next();
    };
    let data = cx.pool.data(h);
    if data.len() >= 14 && data[12..14] == SLOW_PROTOCOLS_ETHERTYPE.0.to_be_bytes() {
        if !Lacpdu::is_lacp_frame(data) {
            return DropReason::SlowProtocol.next();
        }
        let Some(lacp) = bond
            .members
            .get_mut(m as usize)
            .and_then(|m| m.lacp.as_mut())
        else {
            return DropReason::LacpOff.next();
        };
        return match Lacpdu::parse(&data[14..]) {
            Ok(pdu) => {
                lacp.receive(&pdu, st.rx_ns);
                cx.counters.add(Counter::Lacpdus.index(), 1);
                // Freed by the worker after the dispatch, like sent packets (the trace may still
                // read it).
                st.tx_done.push(h);
                Next::CONSUMED
            }
            Err(_) => DropReason::BadLacpdu.next(),
        };
    }
    let Some(member) = bond.members.get(m as usize) else {
        return DropReason::NotMember.next();
    };
    if !bond.collects(member) {
        bond.members[m as usize].rx_not_collecting += 1;
        return DropReason::NotCollecting.next();
    }
    let bond_iface = bond.iface;
    let hdr = cx.pool.header_mut(h);
    hdr.rx_port = bond_iface;
    let len = hdr.total_len as u64;
    if let Some(i) = st.interface_mut(bond_iface) {
        i.counters.rx_packets += 1;
        i.counters.rx_bytes += len;
    }
    Next::arc(INPUT_ARC)
}

impl Node<SwitchState> for BondInput {
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
        let h = pool.header(pkt);
        format!("rx-port {} len {}", h.rx_port, h.total_len)
    }
}
