//! `interface-output`: hands packets to their ports — the end of the `interface-output` arc, so
//! every packet a forwarding node sends (flood copies included, which `l2-flood` emits into the
//! graph like any packet) crosses the output features enabled on its transmit interface first.
//! Packets are grouped by transmit interface's port, and each port's `tx_burst` is called once per
//! call of this node with all of its packets. Sent packets are answered [`Next::CONSUMED`], counted
//! on their interface (`tx_packets`, `tx_bytes`) and put on [`SwitchState::tx_done`]; the worker
//! frees them after the dispatch (after the trace has read them).
//!
//! An interface whose feature does its egress step inline ([`super::InlineEgress`], set in
//! [`super::Interface::inline_egress`] by the feature that made it, when that step would be the only
//! output feature the frame meets) has it done here, as VPP's `l2-output` does its tag rewrite
//! inline (`l2output_vtr`): the run of frames for such an interface is handed to the feature's
//! function, which rewrites them and hands them to another interface (a VLAN sub-interface's:
//! its parent), and they are queued on that interface's port like its own frames; a frame the
//! step refuses goes, unchanged, to the feature's node (an edge of this node, [`edges`]), which
//! drops it under its own named reason. This saves a node call and two arc crossings per vector;
//! every other frame pays one test (is an inline egress set on its interface).
//!
//! Next edges: the node of every feature with an inline egress ([`edges`]: the frames its step
//! refuses). Drops: `no-port` (tx interface deleted), `tx-admin-down` (tx interface
//! administratively down), `tx-failed` (the port could not take the packet: ring full, link down —
//! `tx_burst` sends a prefix of what it is given, the rest is dropped here). Trace:
//! `tx-port N len L`.

use std::sync::OnceLock;

use vecswitch_buffer::Pool;
use vecswitch_graph::{named_enum, Cx, Next, Node, NodeInfo};

use super::{InlineEgress, Interface, TO_OUTPUT};
use crate::feature::FEATURES;
use crate::state::SwitchState;

/// Next edges of `interface-output`: the node of every feature that does an inline egress
/// ([`crate::feature::Feature::inline_egress_node`]), in [`FEATURES`] order.
pub fn edges() -> &'static [&'static str] {
    static EDGES: OnceLock<Vec<&'static str>> = OnceLock::new();
    EDGES.get_or_init(|| {
        FEATURES
            .iter()
            .filter_map(|f| f.inline_egress_node())
            .collect()
    })
}

/// The edge of `interface-output` to node `node`, if it is one ([`edges`]).
pub fn edge_to(node: &str) -> Option<Next> {
    edges()
        .iter()
        .position(|&e| e == node)
        .map(|i| Next::edge(i as u16))
}

named_enum! {
    /// Drop reasons of `interface-output`.
    pub enum DropReason as drop {
        NoPort = "no-port",
        TxAdminDown = "tx-admin-down",
        TxFailed = "tx-failed",
    }
}

/// The `interface-output` node, with its per-port queues (scratch, reused between calls).
#[derive(Debug, Default)]
pub struct InterfaceOutput {
    /// Handles queued per port index.
    queues: Vec<Vec<u32>>,
    /// For each queued handle, its index in `pkts`.
    origins: Vec<Vec<u16>>,
    /// Port indices with a non-empty queue, in order of first use.
    touched: Vec<u16>,
}

impl InterfaceOutput {
    /// Queues `h` for the port of its tx interface `iface`, or says why it cannot go.
    #[inline(always)]
    fn queue(&mut self, iface: Option<&Interface>, h: u32, origin: u16) -> Next {
        match self.slot(iface) {
            Ok(i) => {
                self.queues[i].push(h);
                self.origins[i].push(origin);
                Next::CONSUMED
            }
            Err(r) => r.next(),
        }
    }

    /// The queue of tx interface `iface`'s port (touched from now on: a packet is pushed next),
    /// or why nothing can go to it.
    #[inline(always)]
    fn slot(&mut self, iface: Option<&Interface>) -> Result<usize, DropReason> {
        let Some(iface) = iface else {
            return Err(DropReason::NoPort);
        };
        if !iface.admin_up {
            return Err(DropReason::TxAdminDown);
        }
        let port = iface.tx_port();
        let i = port as usize;
        if self.queues.len() <= i {
            self.queues.resize_with(i + 1, Vec::new);
            self.origins.resize_with(i + 1, Vec::new);
        }
        if self.queues[i].is_empty() {
            self.touched.push(port);
        }
        Ok(i)
    }
}

impl InterfaceOutput {
    /// The run of frames from `pkts[k]` on for one interface with an inline egress `egress`: the
    /// step done on them ([`InlineEgress::run`]), then those it sent on queued on the port of the
    /// interface it handed them to (its admin state checked, as after an output feature); the
    /// others keep the step's answer (the edge to its node). Returns the run's length (at least
    /// 1). Out of line, so that the loop for the other interfaces stays as tight as it was.
    #[inline(never)]
    fn inline_run(
        &mut self,
        cx: &mut Cx<'_, SwitchState>,
        egress: InlineEgress,
        pkts: &[u32],
        nexts: &mut [Next],
        k: usize,
    ) -> usize {
        let (pkts, nexts) = (&pkts[k..], &mut nexts[k..]);
        let n = (egress.run)(cx.pool, cx.state, pkts, nexts, egress.refused).clamp(1, pkts.len());
        // The frames handed on usually all went to one interface: its queue is looked up once.
        let mut to: Option<(u16, Result<usize, DropReason>)> = None;
        for (j, (&p, next)) in (k..).zip(pkts[..n].iter().zip(&mut nexts[..n])) {
            if *next != TO_OUTPUT {
                continue;
            }
            let tx = cx.pool.header(p).tx_port;
            let slot = match to {
                Some((t, s)) if t == tx => s,
                _ => {
                    let s = self.slot(cx.state.interface(tx));
                    to = Some((tx, s));
                    s
                }
            };
            *next = match slot {
                Ok(i) => {
                    self.queues[i].push(p);
                    self.origins[i].push(j as u16);
                    Next::CONSUMED
                }
                Err(r) => r.next(),
            };
        }
        n
    }
}

impl Node<SwitchState> for InterfaceOutput {
    fn info(&self) -> NodeInfo {
        NodeInfo {
            name: "interface-output",
            next_nodes: edges(),
            drop_reasons: DropReason::NAMES,
            counters: &[],
        }
    }

    fn process(&mut self, cx: &mut Cx<'_, SwitchState>, pkts: &[u32], nexts: &mut [Next]) {
        let pkts = &pkts[..pkts.len().min(nexts.len())];
        let mut k = 0;
        while k < pkts.len() {
            // The frames of interfaces without an inline egress, up to the first with one ...
            let mut inline = None;
            for (&h, next) in pkts[k..].iter().zip(&mut nexts[k..]) {
                let iface = cx.state.interface(cx.pool.header(h).tx_port);
                if let Some(e) = iface.and_then(|i| i.inline_egress) {
                    inline = Some(e);
                    break;
                }
                *next = self.queue(iface, h, k as u16);
                k += 1;
            }
            // ... then the run of frames for that one.
            if let Some(e) = inline {
                k += self.inline_run(cx, e, pkts, nexts, k);
            }
        }

        let mut touched = std::mem::take(&mut self.touched);
        for &t in &touched {
            let i = t as usize;
            let queue = &self.queues[i];
            let sent = match cx.state.ports.get_mut(i).and_then(Option::as_mut) {
                Some(p) => {
                    if let Some(c) = p.capture.as_mut() {
                        c.record(cx.pool, queue);
                    }
                    p.port.tx_burst(cx.pool, queue).min(queue.len())
                }
                None => 0,
            };
            // Count per run of packets for the same interface (one lookup per run).
            let mut run: Option<(u16, u64, u64)> = None;
            for &h in &queue[..sent] {
                let hdr = cx.pool.header(h);
                let (tx, len) = (hdr.tx_port, hdr.total_len as u64);
                match run.as_mut() {
                    Some((t, n, b)) if *t == tx => {
                        *n += 1;
                        *b += len;
                    }
                    _ => {
                        if let Some(r) = run.replace((tx, 1, len)) {
                            cx.state.count_tx(r);
                        }
                    }
                }
            }
            if let Some(r) = run {
                cx.state.count_tx(r);
            }
            cx.state.tx_done.extend_from_slice(&queue[..sent]);
            for &o in &self.origins[i][sent..] {
                nexts[o as usize] = DropReason::TxFailed.next();
            }
            self.queues[i].clear();
            self.origins[i].clear();
        }
        touched.clear();
        self.touched = touched;
    }

    fn trace(&self, pool: &Pool, pkt: u32) -> String {
        let h = pool.header(pkt);
        format!("tx-port {} len {}", h.tx_port, h.total_len)
    }
}

#[cfg(test)]
mod tests {
    use vecswitch_graph::testing::run_node;
    use vecswitch_ports::loopback::{packet_from_bytes, pair};
    use vecswitch_ports::Port;

    use super::*;
    use crate::interface::InterfaceKind;
    use crate::state::PortSlot;

    /// A test feature's inline egress: the run of frames for the first's interface; a frame whose
    /// first byte is even is handed to interface 0 with its first byte set to 0xee, an odd one is
    /// refused, unchanged.
    fn step(
        pool: &mut Pool,
        _: &mut SwitchState,
        pkts: &[u32],
        nexts: &mut [Next],
        r: Next,
    ) -> usize {
        let tx = pool.header(pkts[0]).tx_port;
        let mut n = 0;
        for (&h, next) in pkts.iter().zip(nexts.iter_mut()) {
            if pool.header(h).tx_port != tx {
                break;
            }
            let start = pool.header(h).data_offset as usize;
            let first = &mut pool.raw_mut(h)[start];
            *next = if first.is_multiple_of(2) {
                *first = 0xee;
                pool.header_mut(h).tx_port = 0;
                TO_OUTPUT
            } else {
                r
            };
            n += 1;
        }
        n
    }

    /// The generic hook: frames on an interface with an inline egress get the step (in runs),
    /// those it hands on are queued on the other interface's port in order among that port's own
    /// frames and counted there, and those it refuses keep its answer (an edge); a frame on an
    /// interface without one is queued as before.
    #[test]
    fn inline_egress_runs_the_step_and_queues_what_it_hands_on() {
        let mut pool = Pool::new(64);
        let mut st = SwitchState::new(16);
        let (a, mut peer) = pair("a", "peer-a");
        st.insert_port(0, PortSlot::new("a", Box::new(a)));
        let mut t = Interface::new(
            "t",
            InterfaceKind::feature("test", Some(0), None),
            0,
            st.interface(0).unwrap().mac,
            1500,
        );
        let refused = Next::edge(0);
        t.inline_egress = Some(InlineEgress { run: step, refused });
        st.put_interface(1, t);
        // (first byte, tx interface)
        let frames = [(2u8, 0u16), (4, 1), (5, 1), (6, 1), (8, 0), (10, 1)];
        let pkts: Vec<u32> = frames
            .iter()
            .map(|&(b, tx)| {
                let h = packet_from_bytes(&mut pool, &[b; 60]).unwrap();
                pool.header_mut(h).tx_port = tx;
                h
            })
            .collect();
        let nexts = run_node(&mut InterfaceOutput::default(), &mut pool, &mut st, &pkts);
        let c = Next::CONSUMED;
        assert_eq!(nexts, [c, c, refused, c, c, c]);
        let mut got = Vec::new();
        let mut hs = Vec::new();
        peer.rx_burst(&mut pool, &mut hs, 64);
        for &h in &hs {
            got.push(pool.data(h)[0]);
        }
        assert_eq!(got, [2, 0xee, 0xee, 8, 0xee]);
        let tx = |i: u16| st.interface(i).unwrap().counters.tx_packets;
        assert_eq!(
            (tx(0), tx(1)),
            (5, 0),
            "counted on the interface they left by"
        );
        assert_eq!(pool.data(pkts[2])[0], 5, "the refused frame is unchanged");
        pool.free_bulk(&hs);
        pool.free_bulk(&st.tx_done);
        pool.free(pkts[2]);
        assert_eq!(pool.in_use(), 0);
    }
}
