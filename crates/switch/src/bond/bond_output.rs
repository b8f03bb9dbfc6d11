//! `bond-output`: the last feature of the `interface-output` arc on every bond interface (VPP's
//! `bond-output`). Picks the member a frame leaves by — `active-backup`: the active member;
//! `xor` and `lacp`: the active member at the frame's hash ([`hash`], by the bond's
//! [`HashPolicy`]) modulo their number, so a flow stays on one member while the set does not
//! change; `broadcast`: every active member (copies emitted into the graph) — sets `tx_port` to
//! the member's interface, counts the frame on the bond, and sends it on along the arc (the
//! member's output features after this one, then `interface-output`).
//!
//! Next: the `interface-output` arc. Drops: `no-active-member` (every member down or, in LACP,
//! none distributing: the loss is counted here), `not-a-bond` (a bug guard). Counter:
//! `no-buffers` (broadcast copies that found no buffer). Trace: `bond B to tx-port M`.

use vecswitch_buffer::Pool;
use vecswitch_graph::{named_enum, Cx, Next, Node, NodeInfo};

use super::{BondMode, HashPolicy};
use crate::interface::TO_OUTPUT;
use crate::state::SwitchState;

/// The node's name.
pub const NAME: &str = "bond-output";

named_enum! {
    /// Drop reasons of `bond-output`.
    pub enum DropReason as drop {
        NoActiveMember = "no-active-member",
        NotABond = "not-a-bond",
    }
}
named_enum! {
    /// Counters of `bond-output`.
    pub enum Counter as counter { NoBuffers = "no-buffers" }
}

/// The `bond-output` node.
#[derive(Debug, Default)]
pub struct BondOutput;

#[inline]
fn fold(b: &[u8]) -> u64 {
    b.iter().fold(0u64, |h, &x| h.rotate_left(8) ^ x as u64)
}

/// The hash of a frame under `policy`: source and destination are XORed before mixing, so both
/// directions of a flow hash alike. `l3_offset` and `ethertype` as `ethernet-input` recorded them.
/// Fields a frame is too short for are left out (the frame still goes somewhere, consistently).
pub fn hash(policy: HashPolicy, data: &[u8], l3_offset: usize, ethertype: u16) -> u64 {
    let mut h = if data.len() >= 12 {
        fold(&data[0..6]) ^ fold(&data[6..12])
    } else {
        0
    };
    if policy != HashPolicy::L2 {
        let l3 = data.get(l3_offset..).unwrap_or(&[]);
        // (address offset, address length, protocol offset, header length, fragment?)
        let ip = match ethertype {
            0x0800 if l3.len() >= 20 => {
                let ihl = (l3[0] & 0x0f) as usize * 4;
                let frag = u16::from_be_bytes([l3[6], l3[7]]) & 0x1fff != 0;
                Some((12, 4, l3[9], ihl, frag))
            }
            0x86dd if l3.len() >= 40 => Some((8, 16, l3[6], 40, false)),
            _ => None,
        };
        if let Some((a, n, proto, hl, frag)) = ip {
            h = h.rotate_left(17) ^ fold(&l3[a..a + n]) ^ fold(&l3[a + n..a + 2 * n]);
            let l4 = l3.get(hl..).unwrap_or(&[]);
            if policy == HashPolicy::L34 && !frag && matches!(proto, 6 | 17) && l4.len() >= 4 {
                h = h.rotate_left(29) ^ fold(&l4[0..2]) ^ fold(&l4[2..4]);
            }
        }
    }
    // Mix (Fibonacci hashing) so that low bits depend on every input bit.
    h.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32
}

#[inline]
fn one(cx: &mut Cx<'_, SwitchState>, h: u32) -> Next {
    let tx = cx.pool.header(h).tx_port;
    let st = &mut *cx.state;
    let Some(bond) = st.bonds.bond_by_iface(tx) else {
        return DropReason::NotABond.next();
    };
    let n = bond.active.len();
    if n == 0 {
        return DropReason::NoActiveMember.next();
    }
    let member = match bond.settings.mode {
        BondMode::ActiveBackup => bond.active[0],
        BondMode::Broadcast => {
            for &m in &bond.active[1..] {
                match cx.pool.clone_packet(h) {
                    Some(c) => {
                        cx.pool.header_mut(c).tx_port = m;
                        cx.emit.push(c, TO_OUTPUT);
                    }
                    None => cx.counters.add(Counter::NoBuffers.index(), 1),
                }
            }
            bond.active[0]
        }
        BondMode::Xor | BondMode::Lacp => {
            let hdr = cx.pool.header(h);
            let (l3, et) = (hdr.l3_offset as usize, hdr.ethertype);
            let k = hash(bond.settings.hash, cx.pool.data(h), l3, et);
            bond.active[(k % n as u64) as usize]
        }
    };
    let bond_iface = bond.iface;
    let hdr = cx.pool.header_mut(h);
    hdr.tx_port = member;
    let len = hdr.total_len as u64;
    st.count_tx((bond_iface, 1, len));
    TO_OUTPUT
}

impl Node<SwitchState> for BondOutput {
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
        format!("to tx-port {}", pool.header(pkt).tx_port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn udp4(src_mac: u8, dst_mac: u8, sip: u8, dip: u8, sp: u16, dp: u16) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 20 + 8];
        f[0..6].copy_from_slice(&[2, 0, 0, 0, 0, dst_mac]);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, src_mac]);
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f[23] = 17;
        f[26..30].copy_from_slice(&[10, 0, 0, sip]);
        f[30..34].copy_from_slice(&[10, 0, 0, dip]);
        f[34..36].copy_from_slice(&sp.to_be_bytes());
        f[36..38].copy_from_slice(&dp.to_be_bytes());
        f
    }

    #[test]
    fn hashes_are_symmetric_and_use_the_fields_of_their_policy() {
        let h = |p, f: &[u8]| hash(p, f, 14, 0x0800);
        let ab = udp4(1, 2, 1, 2, 1000, 2000);
        let ba = udp4(2, 1, 2, 1, 2000, 1000);
        for p in [HashPolicy::L2, HashPolicy::L23, HashPolicy::L34] {
            assert_eq!(h(p, &ab), h(p, &ba), "{p:?} is symmetric");
        }
        let other_port = udp4(1, 2, 1, 2, 1001, 2000);
        let other_ip = udp4(1, 2, 3, 2, 1000, 2000);
        assert_eq!(h(HashPolicy::L2, &ab), h(HashPolicy::L2, &other_ip));
        assert_eq!(h(HashPolicy::L23, &ab), h(HashPolicy::L23, &other_port));
        assert_ne!(h(HashPolicy::L23, &ab), h(HashPolicy::L23, &other_ip));
        assert_ne!(h(HashPolicy::L34, &ab), h(HashPolicy::L34, &other_port));
        // Truncated frames hash without panicking.
        for n in 0..ab.len() {
            let _ = h(HashPolicy::L34, &ab[..n]);
        }
        // Many flows spread over two members.
        let ones: u64 = (0..1000u16)
            .map(|p| h(HashPolicy::L34, &udp4(1, 2, 1, 2, p, 80)) % 2)
            .sum();
        assert!((400..=600).contains(&ones), "{ones} of 1000 on member 1");
    }
}
