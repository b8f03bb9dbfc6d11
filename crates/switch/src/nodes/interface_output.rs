//! `interface-output`: hands packets to their ports. Packets (and the flood replicas waiting on
//! [`SwitchState::tx_extra`]) are grouped by `tx_port`, and each port's `tx_burst` is called once per
//! call of this node with all of its packets. Sent packets are answered [`Next::CONSUMED`] and put on
//! [`SwitchState::tx_done`]; the worker frees them after the dispatch (after the trace has read them).
//!
//! Next edges: none. Drops: `no-port` (tx port deleted), `tx-admin-down` (tx port administratively
//! down), `tx-failed` (the port could not take the packet: ring full, link down — `tx_burst` sends
//! a prefix of what it is given, the rest is dropped here). Replicas that fail are freed here and
//! counted under the same `tx-failed` name. Trace: `tx-port N len L`.

use vecswitch_buffer::Pool;
use vecswitch_graph::{Cx, Next, Node, NodeInfo};

use super::named_enum;
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

/// Marks a queued packet that is a replica (not one of the packets handed to `process`).
const REPLICA: u16 = u16::MAX;

/// The `interface-output` node, with its per-port queues (scratch, reused between calls).
#[derive(Debug, Default)]
pub struct InterfaceOutput {
    /// Handles queued per port index.
    queues: Vec<Vec<u32>>,
    /// For each queued handle, its index in `pkts`, or [`REPLICA`].
    origins: Vec<Vec<u16>>,
    /// Port indices with a non-empty queue, in order of first use.
    touched: Vec<u16>,
}

impl InterfaceOutput {
    /// Queues `h` for its tx port, or says why it cannot go.
    #[inline]
    fn queue_one(
        &mut self,
        st: &SwitchState,
        pool: &Pool,
        h: u32,
        origin: u16,
    ) -> Result<(), DropReason> {
        let tx = pool.header(h).tx_port;
        let Some(p) = st.port(tx) else {
            return Err(DropReason::NoPort);
        };
        if !p.admin_up {
            return Err(DropReason::TxAdminDown);
        }
        let i = tx as usize;
        if self.queues.len() <= i {
            self.queues.resize_with(i + 1, Vec::new);
            self.origins.resize_with(i + 1, Vec::new);
        }
        if self.queues[i].is_empty() {
            self.touched.push(tx);
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
        }
    }

    fn process(&mut self, cx: &mut Cx<'_, SwitchState>, pkts: &[u32], nexts: &mut [Next]) {
        for (k, (&h, n)) in pkts.iter().zip(nexts.iter_mut()).enumerate() {
            *n = match self.queue_one(cx.state, cx.pool, h, k as u16) {
                Ok(()) => Next::CONSUMED,
                Err(r) => r.next(),
            };
        }
        let mut extra = std::mem::take(&mut cx.state.tx_extra);
        for &h in &extra {
            if self.queue_one(cx.state, cx.pool, h, REPLICA).is_err() {
                cx.state.events.tx_failed_replicas += 1;
                cx.pool.free(h);
            }
        }
        extra.clear();
        cx.state.tx_extra = extra;

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
            cx.state.tx_done.extend_from_slice(&queue[..sent]);
            for (&h, &o) in queue[sent..].iter().zip(&self.origins[i][sent..]) {
                if o == REPLICA {
                    cx.state.events.tx_failed_replicas += 1;
                    cx.pool.free(h);
                } else {
                    nexts[o as usize] = DropReason::TxFailed.next();
                }
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
