//! `interface-output`: hands packets to their ports — the end of the `interface-output` arc, so
//! every packet a forwarding node sends (flood copies included, which `l2-flood` emits into the
//! graph like any packet) crosses the output features enabled on its transmit interface first.
//! Packets are grouped by transmit interface's port, and each port's `tx_burst` is called once per
//! call of this node with all of its packets. Sent packets are answered [`Next::CONSUMED`], counted
//! on their interface (`tx_packets`, `tx_bytes`) and put on [`SwitchState::tx_done`]; the worker
//! frees them after the dispatch (after the trace has read them).
//!
//! Next edges: none. Drops: `no-port` (tx interface deleted), `tx-admin-down` (tx interface
//! administratively down), `tx-failed` (the port could not take the packet: ring full, link down —
//! `tx_burst` sends a prefix of what it is given, the rest is dropped here). Trace:
//! `tx-port N len L`.

use vecswitch_buffer::Pool;
use vecswitch_graph::{named_enum, Cx, Next, Node, NodeInfo};

use crate::state::SwitchState;

/// Next edges of `interface-output`: none, it consumes every packet.
pub const EDGES: &[&str] = &[];
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
    /// Queues `h` for its tx interface's port, or says why it cannot go.
    #[inline]
    fn queue_one(
        &mut self,
        st: &SwitchState,
        pool: &Pool,
        h: u32,
        origin: u16,
    ) -> Result<(), DropReason> {
        let tx = pool.header(h).tx_port;
        let Some(iface) = st.interface(tx) else {
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
        self.queues[i].push(h);
        self.origins[i].push(origin);
        Ok(())
    }
}

impl Node<SwitchState> for InterfaceOutput {
    fn info(&self) -> NodeInfo {
        NodeInfo {
            name: "interface-output",
            next_nodes: EDGES,
            drop_reasons: DropReason::NAMES,
            counters: &[],
        }
    }

    fn process(&mut self, cx: &mut Cx<'_, SwitchState>, pkts: &[u32], nexts: &mut [Next]) {
        for (k, (&h, n)) in pkts.iter().zip(nexts.iter_mut()).enumerate() {
            *n = match self.queue_one(cx.state, cx.pool, h, k as u16) {
                Ok(()) => Next::CONSUMED,
                Err(r) => r.next(),
            };
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
