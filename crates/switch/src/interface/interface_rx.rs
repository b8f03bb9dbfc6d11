//! `interface-rx`: the first node of every received frame (VPP's `*-input` device nodes). The poll
//! loop hands it what one `rx_burst` returned, with the port it came from on
//! [`SwitchState::rx_runs`]; this node stamps each packet's `rx_port` (its main interface) and
//! receive time, counts it on the interface (`rx_packets`, `rx_bytes`) and sends it along the
//! `device-input` arc (input features enabled on the interface, then `ethernet-input`).
//!
//! Next: the [`super::INPUT_ARC`] arc. Drops: none (a port deleted while its frames wait is
//! caught by `ethernet-input` as `no-service`). Trace: `rx-port N len L`.

use vecswitch_buffer::Pool;
use vecswitch_graph::{Cx, Next, Node, NodeInfo};

use super::INPUT_ARC;
use crate::state::SwitchState;

/// The `interface-rx` node.
#[derive(Debug, Default)]
pub struct InterfaceRx;

impl Node<SwitchState> for InterfaceRx {
    fn info(&self) -> NodeInfo {
        NodeInfo {
            name: "interface-rx",
            next_nodes: &[],
            drop_reasons: &[],
            counters: &[],
        }
    }

    fn process(&mut self, cx: &mut Cx<'_, SwitchState>, pkts: &[u32], nexts: &mut [Next]) {
        let st = &mut *cx.state;
        let now = st.rx_ns;
        let mut rest = pkts;
        while !rest.is_empty() {
            // Runs are queued in the order their packets were enqueued; a run longer than this
            // vector continues in the next call.
            let Some(run) = st.rx_runs.front_mut() else {
                break; // packets enqueued without a run: stamped by whoever enqueued them
            };
            let n = (run.count as usize).min(rest.len());
            let port = run.port;
            run.count -= n as u32;
            if run.count == 0 {
                st.rx_runs.pop_front();
            }
            let (these, tail) = rest.split_at(n);
            rest = tail;
            let mut bytes = 0u64;
            for &h in these {
                let hdr = cx.pool.header_mut(h);
                hdr.rx_port = port;
                hdr.rx_ns = now;
                bytes += hdr.total_len as u64;
            }
            if let Some(i) = st
                .interfaces
                .get_mut(port as usize)
                .and_then(Option::as_mut)
            {
                i.counters.rx_packets += n as u64;
                i.counters.rx_bytes += bytes;
            }
        }
        nexts.fill(Next::arc(INPUT_ARC));
    }

    fn trace(&self, pool: &Pool, pkt: u32) -> String {
        let h = pool.header(pkt);
        format!("rx-port {} len {}", h.rx_port, h.total_len)
    }
}
